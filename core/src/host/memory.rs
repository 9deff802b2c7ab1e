//! Where the host device's memory comes from while it runs: a block of its arena's free list,
//! or (heap mode, `HostBackend::with_heap`) one block of a system allocator per allocation; and
//! the copies between addresses. Depends on `state` (the free list) and `arena` (`HOST_ALIGN`).

use spin::MutexGuard;

use super::state::HostState;
use super::{HOST_ALIGN, HostBackend, err};
use crate::backend::BackendResult;
use crate::error::ErrorCode;

/// A system allocator for the host backend (`HostBackend::with_heap`); with feature `std`,
/// `STD_HOST_HEAP`.
#[derive(Clone, Copy)]
pub struct HostHeap {
    /// `size > 0` zeroed bytes aligned to `HOST_ALIGN`, or null when there are none.
    pub alloc: fn(usize) -> *mut u8,
    /// Gives back a block `alloc` returned.
    ///
    /// # Safety
    /// `ptr` came from `alloc(size)` and was not given back since.
    pub free: unsafe fn(*mut u8, usize),
}

/// The process heap (`std::alloc`), as the host backend's `HostHeap`.
#[cfg(feature = "std")]
pub const STD_HOST_HEAP: HostHeap = HostHeap {
    alloc: |size| match core::alloc::Layout::from_size_align(size, HOST_ALIGN) {
        // SAFETY: a non-zero size (the backend's contract).
        Ok(layout) => unsafe { std::alloc::alloc_zeroed(layout) },
        Err(_) => core::ptr::null_mut(),
    },
    free: |ptr, size| {
        if let Ok(layout) = core::alloc::Layout::from_size_align(size, HOST_ALIGN) {
            // SAFETY: the caller's contract: `ptr` is a live block of this layout.
            unsafe { std::alloc::dealloc(ptr, layout) }
        }
    },
};

/// Copies `size` bytes from address `src` to address `dst` (the ranges may overlap) through raw
/// pointers of exposed provenance: no reference over bytes other code may reach.
///
/// # Safety
/// Both ranges are valid for `size` bytes (reads at `src`, writes at `dst`).
pub(crate) unsafe fn copy_addresses(dst: u64, src: u64, size: usize) {
    debug_assert!(size == 0 || (dst != 0 && src != 0), "copy_addresses: a null side");
    debug_assert!(
        dst.checked_add(size as u64).is_some() && src.checked_add(size as u64).is_some(),
        "copy_addresses: a range past the address space"
    );
    // SAFETY: the caller's contract; `copy` allows overlap.
    unsafe {
        core::ptr::copy(
            core::ptr::with_exposed_provenance::<u8>(src as usize),
            core::ptr::with_exposed_provenance_mut::<u8>(dst as usize),
            size,
        )
    }
}

impl HostBackend {
    /// A block of `size` bytes: from the arena's free list, or in heap mode from the heap.
    pub(super) fn take_block(&self, s: &mut HostState, size: usize) -> BackendResult<u64> {
        if s.heap {
            return self.heap_alloc(s, size);
        }
        let exhausted = || err(ErrorCode::OutOfResources, "host arena exhausted");
        let need = u32::try_from(size.max(1).div_ceil(HOST_ALIGN)).map_err(|_| exhausted())?;
        let i = s.free.iter().position(|&(_, len)| len >= need).ok_or_else(exhausted)?;
        let (offset, len) = s.free[i];
        if len == need {
            s.free.remove(i);
        } else {
            s.free[i] = (offset + need, len - need);
        }
        // The address leaves as an integer; exposing the arena's provenance lets the copies,
        // fills and kernels that get it back turn it into a pointer again.
        Ok(s.base.wrapping_add(offset as usize * HOST_ALIGN).expose_provenance() as u64)
    }

    /// Gives a block back (to the free list, coalesced, or to the heap).
    ///
    /// # Safety
    /// `addr` is a live block `take_block` returned for `size` bytes.
    pub(super) unsafe fn give_block(&self, mut s: MutexGuard<'_, HostState>, addr: u64, size: usize) {
        debug_assert!(size > 0 && addr % HOST_ALIGN as u64 == 0, "give_block: not a block this backend made");
        if let (true, Some(heap)) = (s.heap, self.heap) {
            s.heap_used -= size as u64;
            drop(s);
            // SAFETY: the caller's contract: a live block `heap.alloc(size)` made.
            unsafe { (heap.free)(core::ptr::with_exposed_provenance_mut(addr as usize), size) };
            return;
        }
        // A live allocation of this arena (the contract): its block offset and length fit in u32.
        let offset = ((addr - s.base as u64) as usize / HOST_ALIGN) as u32;
        let len = size.div_ceil(HOST_ALIGN) as u32;
        let i = s.free.partition_point(|&(o, _)| o < offset);
        let joins_prev = i > 0 && s.free[i - 1].0 + s.free[i - 1].1 == offset;
        let joins_next = i < s.free.len() && offset + len == s.free[i].0;
        match (joins_prev, joins_next) {
            (true, true) => {
                let next = s.free.remove(i);
                s.free[i - 1].1 += len + next.1;
            }
            (true, false) => s.free[i - 1].1 += len,
            (false, true) => s.free[i] = (offset, len + s.free[i].1),
            (false, false) => {
                // Cannot overflow: free ranges never outnumber live allocations plus one.
                let _ = s.free.insert(i, (offset, len));
            }
        }
    }

    /// Heap mode's allocation: a block of the machine's memory, within its size where known.
    fn heap_alloc(&self, s: &mut HostState, size: usize) -> BackendResult<u64> {
        let exhausted = || err(ErrorCode::OutOfResources, "the machine's memory is exhausted");
        let heap = self.heap.ok_or_else(exhausted)?;
        let limit = match (self.info)().memory_bytes {
            0 => u64::MAX,
            bytes => bytes,
        };
        let size = size.max(1);
        if s.heap_used.checked_add(size as u64).is_none_or(|total| total > limit) || size > isize::MAX as usize {
            return Err(exhausted());
        }
        let block = (heap.alloc)(size);
        if block.is_null() {
            return Err(exhausted());
        }
        s.heap_used += size as u64;
        Ok(block.expose_provenance() as u64)
    }
}
