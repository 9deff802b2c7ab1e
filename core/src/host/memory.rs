//! Where the host device's memory comes from while it runs: a block of its arena's free list,
//! or (heap mode, `HostBackend::with_heap`) one block of a system allocator per allocation; and
//! the copies between addresses. Depends on `state` (the free list) and `arena` (`HOST_ALIGN`).

use crate::sync::SpinGuard as MutexGuard;

use super::state::HostState;
use super::{HOST_ALIGN, HostBackend, err};
use crate::backend::BackendResult;
use crate::error::ErrorCode;

/// A system allocator for the host backend (`HostBackend::with_heap`); with feature `std`,
/// `STD_HOST_HEAP`.
#[derive(Clone, Copy, Debug)]
pub struct HostHeap {
    /// `size > 0` zeroed bytes aligned to `HOST_ALIGN`, or null when there are none.
    pub alloc: fn(usize) -> *mut u8,
    /// Gives back a block `alloc` returned.
    ///
    /// # Safety
    /// `ptr` came from `alloc(size)` and was not given back since.
    pub free: unsafe fn(*mut u8, usize),
}

/// The process heap (`std::alloc`), as the host backend's `HostHeap`: zeroed blocks of the
/// global allocator asked for with a small alignment, so that they come from `calloc` (with the
/// system allocator), whose large blocks are fresh pages the kernel zeroes when first touched:
/// allocating does not touch them (one `posix_memalign` + `memset`, which a 256-byte alignment
/// would otherwise give, writes every page at once — a 2 GiB allocation then cost 2.6 s and
/// 2 GiB of resident memory, and one of the machine's whole memory got the process killed).
/// The block is over-allocated by `HOST_ALIGN` bytes and aligned inside; the start the heap
/// returned is kept in the word before the aligned start.
#[cfg(feature = "std")]
pub const STD_HOST_HEAP: HostHeap = HostHeap { alloc: std_heap_alloc, free: std_heap_free };

/// The layout `STD_HOST_HEAP` asks the global allocator for a block of `size` bytes.
#[cfg(feature = "std")]
fn std_heap_layout(size: usize) -> Option<core::alloc::Layout> {
    let total = size.checked_add(HOST_ALIGN)?;
    // The alignment of a pointer (at most the system allocator's minimum): `calloc`.
    core::alloc::Layout::from_size_align(total, core::mem::align_of::<*mut u8>()).ok()
}

#[cfg(feature = "std")]
fn std_heap_alloc(size: usize) -> *mut u8 {
    const STASH: usize = core::mem::size_of::<*mut u8>();
    let Some(layout) = std_heap_layout(size) else { return core::ptr::null_mut() };
    // SAFETY: a non-zero size (`HOST_ALIGN` at least).
    let raw = unsafe { std::alloc::alloc_zeroed(layout) };
    if raw.is_null() {
        return raw;
    }
    // `raw` is pointer-aligned, so the first `HOST_ALIGN`-aligned address at least one pointer
    // past it lies at most `HOST_ALIGN` bytes in: `size` bytes from there fit in the block.
    let offset = (raw.addr() + STASH).next_multiple_of(HOST_ALIGN) - raw.addr();
    // SAFETY: `offset <= HOST_ALIGN`, inside the block; the word before the aligned start is
    // inside it too (`offset >= STASH`) and pointer-aligned (both ends are).
    unsafe {
        let aligned = raw.add(offset);
        aligned.sub(STASH).cast::<*mut u8>().write(raw);
        aligned
    }
}

/// # Safety
/// `ptr` came from `std_heap_alloc(size)` and was not given back since.
#[cfg(feature = "std")]
unsafe fn std_heap_free(ptr: *mut u8, size: usize) {
    const STASH: usize = core::mem::size_of::<*mut u8>();
    let Some(layout) = std_heap_layout(size) else { return };
    // SAFETY: the caller's contract: `std_heap_alloc` stored the block's start before `ptr`.
    unsafe {
        let raw = ptr.sub(STASH).cast::<*mut u8>().read();
        std::alloc::dealloc(raw, layout);
    }
}

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
