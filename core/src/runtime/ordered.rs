//! Memory allocated and freed in a queue's order (`mem_alloc_on`, `mem_free_on`,
//! `mem_release_on`; kind `Ordered`): CUDA's stream-ordered pool, or the backend trait's default
//! (allocate at once, free after the queue). Such memory is an allocation like any other (`memory.rs`
//! frees it too, the teardown with the rest). On a device whose backend makes and frees it beside
//! other calls (`Backend::ordered_concurrent`: CUDA), it lives in a table of its own
//! (`Tables::ordered`, behind a lock), so that both calls need only shared access, as a launch
//! does, instead of waiting for every call in flight; elsewhere it is in the allocation table
//! and both calls are exclusive. This file also holds the lookups that see both tables.
//! Depends on the runtime's tables (`super`), `alloc_table`, `info` (lookups), `backend`,
//! `handle` and `error`.

use crate::alloc_table::{AllocEntry, NO_OWNER};
use crate::backend::MemKind;
use crate::capacity::MAX_ORDERED_ALLOCATIONS;
use crate::error::{ErrorCode, Result, fail};
use crate::handle::{Allocation, DevicePtr, Queue, RawHandle};
use crate::trace::traced;

use super::memory::{check_size, size_ok};
use super::{Ordered, OrderedTable, Runtime, Tables};

/// Where a live allocation is: its slot in the allocation table or in the ordered table.
#[derive(Clone, Copy, Debug)]
pub(super) enum Place {
    Main(u32),
    Ordered(u32),
}

const ORDERED_FULL: &str = "queue-ordered allocation table is full (ORDO_MAX_ORDERED_ALLOCATIONS)";

impl Tables {
    /// The live allocation whose base is `addr`, in either table (`AllocTable::find_base`'s
    /// errors: the ranges of the two tables never overlap, so a miss in the first settles the
    /// address for the second).
    pub(super) fn alloc_base(&self, addr: u64) -> Result<(Place, AllocEntry)> {
        match self.allocations.find_base(addr) {
            Ok(slot) => Ok((Place::Main(slot), *self.allocations.slots.at(slot))),
            Err(e) if e.code == ErrorCode::NotFound && self.ordered.any() => {
                let table = self.ordered.lock();
                let slot = table.find_base(addr)?;
                Ok((Place::Ordered(slot), *table.slots.at(slot)))
            }
            Err(e) => Err(e),
        }
    }

    /// The live allocation containing `[addr, addr + size)` (`size > 0`), in either table.
    #[inline]
    pub(super) fn alloc_range(&self, addr: u64, size: usize) -> Result<AllocEntry> {
        match self.allocations.find_range(addr, size) {
            Ok(slot) => Ok(*self.allocations.slots.at(slot)),
            Err(e) => self.ordered_range(addr, size, e),
        }
    }

    /// `alloc_range` after a miss in the allocation table (`missed`: its error).
    #[cold]
    #[inline(never)]
    fn ordered_range(&self, addr: u64, size: usize, missed: crate::error::Error) -> Result<AllocEntry> {
        if missed.code != ErrorCode::NotFound || !self.ordered.any() {
            return Err(missed);
        }
        self.ordered.find_range(addr, size)
    }

    /// The live allocation an allocation handle names, in whichever table its slot index points
    /// into.
    #[inline]
    pub(super) fn alloc_handle(&self, h: RawHandle) -> Result<(Place, AllocEntry)> {
        if Ordered::names(h) {
            let table = self.ordered.lock();
            let slot = table.slots.resolve(h)?;
            return Ok((Place::Ordered(slot), *table.slots.at(slot)));
        }
        let slot = self.allocations.slots.resolve(h)?;
        Ok((Place::Main(slot), *self.allocations.slots.at(slot)))
    }

    /// Removes a live allocation (exclusive access: nothing else looks meanwhile).
    pub(super) fn alloc_remove(&mut self, place: Place) -> AllocEntry {
        match place {
            Place::Main(slot) => self.allocations.remove_at(slot),
            Place::Ordered(slot) => {
                let mut table = self.ordered.lock();
                let m = table.remove_at(slot);
                self.ordered.publish(&table);
                m
            }
        }
    }

    /// Whether `[base, base + size)` overlaps a live allocation of either table.
    pub(super) fn alloc_overlaps(&self, base: u64, size: usize) -> bool {
        self.allocations.overlaps(base, size) || (self.ordered.any() && self.ordered.lock().overlaps(base, size))
    }

    /// Inserts an allocation into the allocation table (exclusive access), refusing a range
    /// that overlaps one of the ordered table (`BackendFailure`, as `AllocTable::insert` does
    /// within its own).
    pub(super) fn alloc_insert(&mut self, entry: AllocEntry) -> Result<RawHandle> {
        if self.ordered.any() && self.ordered.lock().overlaps(entry.base, entry.size) {
            return fail(ErrorCode::BackendFailure, "backend returned an address overlapping a live allocation");
        }
        self.allocations.insert(entry)
    }
}

impl Runtime {
    /// Allocates `size` bytes of device memory in the order of `queue` (kind `Ordered`): work
    /// submitted to the queue after this call may use it, other queues after waiting for an
    /// event recorded after it. CUDA takes it from the device's memory pool
    /// (`cuMemAllocAsync`; the pool keeps freed memory for reuse up to its release threshold,
    /// `ORDO_POOL_RELEASE_THRESHOLD` bytes, by default all of it) beside the runtime's other
    /// calls (it waits for none of them) and counts it against `ORDO_MAX_ORDERED_ALLOCATIONS`;
    /// backends without pools (the host device, AMDGPU) allocate at once, as `mem_alloc` does,
    /// against `ORDO_MAX_ALLOCATIONS`. It is an allocation like any other: named by its handle
    /// and address, used by copies, fills and kernels, freed by `mem_free_on` (in queue order),
    /// `mem_free`/`mem_release` (at once, after the device's work) or the teardown.
    /// Errors: `InvalidSize` (0 or above `isize::MAX`), the queue's handle errors,
    /// `InvalidArgument` for a queue that is capturing, `OutOfResources` when the table is
    /// full, and the driver's errors.
    #[inline(always)]
    pub fn mem_alloc_on(&self, queue: Queue, size: usize) -> Result<(Allocation, DevicePtr)> {
        traced!("mem_alloc_on", ["queue" = queue.0.0, "size" = size], { self.alloc_on_in(queue, size) })
    }

    /// `mem_alloc_on`'s body (`traced!` keeps the traced call out of line). The shared side
    /// checks everything at once (one branch), leaving the errors and the exclusive path (a
    /// device without pools) to out-of-line code.
    #[inline(always)]
    fn alloc_on_in(&self, queue: Queue, size: usize) -> Result<(Allocation, DevicePtr)> {
        let shared = self.with_shared_inline(
            #[inline(always)]
            |t| {
                let q = match t.queues.get(queue.0) {
                    Ok(q) if size_ok(size) => q,
                    _ => return Self::alloc_on_refused(t, queue, size),
                };
                let d = t.devices.at(q.device);
                if !(d.ordered_shared & !q.capturing() & (t.ordered.count() < MAX_ORDERED_ALLOCATIONS)) {
                    return Self::alloc_on_refused(t, queue, size);
                }
                let base = match Self::cache_take(t, q.device, q.raw, size) {
                    Some(base) => base,
                    // SAFETY: a live queue of the device, whose backend allows the call beside
                    // others (and so do the cached blocks' frees on their own queues).
                    None => unsafe { Self::driver_alloc_on(t, d, q.device, q.raw, size) }?,
                };
                Self::record_ordered(t, d, q.device, q.raw, base, size).map(Some)
            },
        )?;
        match shared {
            Some(made) => Ok(made),
            None => self.alloc_on_exclusive(queue, size),
        }
    }

    /// Why the shared side of `mem_alloc_on` did not allocate, in the documented order of its
    /// errors; `None` (go on exclusively) for a device without pools, or when nothing is wrong
    /// any more (another thread freed a slot meanwhile).
    #[cold]
    #[inline(never)]
    fn alloc_on_refused(t: &Tables, queue: Queue, size: usize) -> Result<Option<(Allocation, DevicePtr)>> {
        check_size(size)?;
        let q = t.queues.get(queue.0)?;
        if q.capturing() {
            return fail(ErrorCode::InvalidArgument, super::queue::CAPTURING);
        }
        if t.devices.at(q.device).ordered_shared && t.ordered.count() >= MAX_ORDERED_ALLOCATIONS {
            return fail(ErrorCode::OutOfResources, ORDERED_FULL);
        }
        Ok(None)
    }

    /// `mem_alloc_on` under exclusive access: a device without pools (its memory goes to the
    /// allocation table), or a shared attempt that found nothing wrong the second time.
    #[cold]
    #[inline(never)]
    fn alloc_on_exclusive(&self, queue: Queue, size: usize) -> Result<(Allocation, DevicePtr)> {
        self.with_exclusive(|t| {
            check_size(size)?;
            let (d, raw) = self.queue_not_capturing(t, queue)?;
            if t.devices.at(d.slot).ordered_shared {
                // A device with pools (changed between the two sections, a teardown and a new
                // init reissuing the queue's slot; or a table no longer full): the ordered table.
                if t.ordered.count() >= MAX_ORDERED_ALLOCATIONS {
                    return fail(ErrorCode::OutOfResources, ORDERED_FULL);
                }
                let entry = t.devices.at(d.slot);
                let base = match Self::cache_take(t, d.slot, raw, size) {
                    Some(base) => base,
                    // SAFETY: a live queue of the device (exclusive access: nothing else runs).
                    None => unsafe { Self::driver_alloc_on(t, entry, d.slot, raw, size) }?,
                };
                return Self::record_ordered(t, entry, d.slot, raw, base, size);
            }
            if t.allocations.slots.is_full() {
                return fail(ErrorCode::OutOfResources, "allocation table is full (ORDO_MAX_ALLOCATIONS)");
            }
            let base = match Self::cache_take(t, d.slot, raw, size) {
                Some(base) => base,
                // SAFETY: a live queue of the device.
                None => unsafe { Self::driver_alloc_on(t, t.devices.at(d.slot), d.slot, raw, size) }?,
            };
            let entry = AllocEntry { base, size, device: d.slot, kind: MemKind::Ordered, owner: NO_OWNER };
            match t.alloc_insert(entry) {
                Ok(h) => Ok((Allocation(h), DevicePtr(base))),
                Err(e) => {
                    // SAFETY: the allocation the backend just returned, freed in the queue's order.
                    let _ = unsafe { d.backend.mem_free_on(d.ordinal, raw, base, size) };
                    Err(e)
                }
            }
        })
    }

    /// `BlockCache::take`, told to the trace while it is on.
    #[inline(always)]
    fn cache_take(t: &Tables, device: u32, raw: u64, size: usize) -> Option<u64> {
        let taken = t.cache.take(device, raw, size);
        if crate::trace::enabled() && t.cache.is_on() {
            Self::trace_cache(t, device);
        }
        taken
    }

    /// `BlockCache::put`, told to the trace while it is on.
    #[inline(always)]
    fn cache_put(t: &Tables, block: super::cache::Block) -> bool {
        let kept = t.cache.put(block);
        if kept && crate::trace::enabled() {
            Self::trace_cache(t, block.device);
        }
        kept
    }

    /// Hands the trace the cache's statistics of the device in slot `device`.
    #[cold]
    #[inline(never)]
    fn trace_cache(t: &Tables, device: u32) {
        let d = t.devices.at(device);
        let number = Self::device_number(t, d.driver, d.ordinal, device);
        crate::trace::cache(d.driver.kind(), number, d.ordinal, &t.cache.stats(device));
    }

    /// The backend's `mem_alloc_on` for device `d` (slot `device`) on queue `raw`; when the
    /// driver is out of memory (`OutOfResources`) and the cache holds blocks of the device, they
    /// go back to the driver first and the allocation is tried once more.
    ///
    /// # Safety
    /// `raw` is a live queue of the device, and the caller may make the device's `mem_alloc_on`
    /// and `mem_free_on` (shared access on a device whose backend allows them beside other calls;
    /// otherwise exclusive access).
    #[inline(always)]
    unsafe fn driver_alloc_on(t: &Tables, d: &super::DeviceEntry, device: u32, raw: u64, size: usize) -> Result<u64> {
        // SAFETY: the caller's contract.
        match unsafe { d.driver.mem_alloc_on(d.ordinal, raw, size) } {
            Ok(base) => Ok(base),
            // SAFETY: forwarded.
            Err(e) if e.code == ErrorCode::OutOfResources => unsafe {
                Self::alloc_after_trim(t, d, device, raw, size, e)
            },
            Err(e) => Err(e.into()),
        }
    }

    /// `driver_alloc_on` after the driver ran out of memory (`refused`): the device's cached
    /// blocks go back to the driver, then one more try (or `refused` when none was cached).
    ///
    /// # Safety
    /// As `driver_alloc_on`.
    #[cold]
    #[inline(never)]
    unsafe fn alloc_after_trim(
        t: &Tables,
        d: &super::DeviceEntry,
        device: u32,
        raw: u64,
        size: usize,
        refused: crate::error::BackendError,
    ) -> Result<u64> {
        let taken = t.cache.take_where(|b| b.device == device);
        if taken.is_empty() {
            return Err(refused.into());
        }
        // SAFETY: the caller's contract; each block's queue is live (a queue's blocks leave the
        // cache before it is destroyed).
        let _ = unsafe { Self::give_back(t, &taken) };
        // SAFETY: the caller's contract.
        Ok(unsafe { d.driver.mem_alloc_on(d.ordinal, raw, size) }?)
    }

    /// Gives cached blocks back to the driver, each freed in its queue's order; the first error
    /// (every block is given back either way: the driver's answer is final for it).
    ///
    /// # Safety
    /// Blocks taken from the cache (so never passed again), whose queues are live; the caller
    /// may make their devices' `mem_free_on` (as `driver_alloc_on`).
    pub(super) unsafe fn give_back(t: &Tables, taken: &super::cache::Taken) -> Result<()> {
        let mut first = Ok(());
        for b in taken {
            let d = t.devices.at(b.device);
            // SAFETY: the caller's contract: queue-ordered memory of this device, never freed.
            let freed = unsafe { d.driver.mem_free_on(d.ordinal, b.raw, b.base, b.size) };
            if let (Err(e), Ok(())) = (freed, &first) {
                first = Err(e.into());
            }
        }
        first
    }

    /// Records the queue-ordered memory `[base, base + size)` that the backend of device `d`
    /// (slot `device`, a device with pools) just allocated on queue `raw`: inserted into the
    /// ordered table under its lock, or freed again in the queue's order when it cannot be
    /// (a range overlapping a live allocation, a table filled meanwhile by other threads).
    #[inline(always)]
    fn record_ordered(
        t: &Tables,
        d: &super::DeviceEntry,
        device: u32,
        raw: u64,
        base: u64,
        size: usize,
    ) -> Result<(Allocation, DevicePtr)> {
        let entry = AllocEntry { base, size, device, kind: MemKind::Ordered, owner: NO_OWNER };
        let inserted = if t.allocations.overlaps(base, size) {
            Err(ErrorCode::BackendFailure)
        } else {
            let mut table = t.ordered.lock();
            let h = table.try_insert(entry);
            t.ordered.publish(&table);
            h
        };
        match inserted {
            Ok(h) => Ok((Allocation(h), DevicePtr(base))),
            Err(code) => Self::unrecorded(d, raw, base, size, code),
        }
    }

    /// `record_ordered`'s failure (`code`): the allocation the backend just returned, known to
    /// no table, freed in the queue's order.
    #[cold]
    #[inline(never)]
    fn unrecorded(
        d: &super::DeviceEntry,
        raw: u64,
        base: u64,
        size: usize,
        code: ErrorCode,
    ) -> Result<(Allocation, DevicePtr)> {
        // SAFETY: as above.
        let _ = unsafe { d.driver.mem_free_on(d.ordinal, raw, base, size) };
        match code {
            ErrorCode::OutOfResources => fail(code, ORDERED_FULL),
            _ => fail(ErrorCode::BackendFailure, "backend returned an address overlapping a live allocation"),
        }
    }

    /// Frees queue-ordered memory (from `mem_alloc_on`; its base address) in the order of
    /// `queue`, a queue of its device: work submitted to the queue before this call may still
    /// use it; from this call on the address is unknown to ordo (a copy, fill or launch naming
    /// it is `NotFound`, a free `NotFound`). With the cache on (`set_cache_bytes`), the block is
    /// kept for `queue` and serves its next `mem_alloc_on` of the same size (`cache.rs`). Like the allocation, it waits for no other call on
    /// a device with memory pools (CUDA). Errors: `NullPointer`; `NotFound` for an address that
    /// is not the start of a live allocation (`InvalidArgument` inside one); then the queue's
    /// handle errors; `InvalidArgument` for memory that is not queue-ordered (`mem_free` frees
    /// it), for a queue of another device and for a queue that is capturing. Nothing changes
    /// on error.
    #[inline(always)]
    pub fn mem_free_on(&self, queue: Queue, ptr: DevicePtr) -> Result<()> {
        traced!("mem_free_on", ["queue" = queue.0.0, "ptr" = ptr.0], { self.free_on_in(queue, ptr) })
    }

    /// `mem_free_on`'s body (`traced!` keeps the traced call out of line). The shared side
    /// handles the base of a live allocation of the ordered table, with its queue's checks in
    /// one branch; any other address (memory of the allocation table, errors) goes to
    /// out-of-line code, which looks in both tables.
    #[inline(always)]
    fn free_on_in(&self, queue: Queue, ptr: DevicePtr) -> Result<()> {
        let freed = self.with_shared_inline(
            #[inline(always)]
            |t| {
                if !(t.ordered.any() & (ptr.0 != 0)) {
                    return Self::free_on_lookup(t, queue, ptr);
                }
                let table = t.ordered.lock();
                let Some(found) = table.find_exact(ptr.0) else {
                    drop(table);
                    return Self::free_on_lookup(t, queue, ptr);
                };
                let m = *table.slots.at(found.slot);
                Self::free_locked(t, queue, table, &m, |table| table.remove_found(found))
            },
        )?;
        if freed { Ok(()) } else { self.free_on_exclusive(queue, ptr) }
    }

    /// The shared side of `mem_free_on` and `mem_release_on` once the allocation `m` is found
    /// in the ordered table, which the caller holds locked from its lookup until the entry is
    /// removed (two racing frees of one allocation: one finds it, the other `NotFound` or
    /// `InvalidHandle`): the queue's checks in one branch (their error after unlocking, or
    /// `false` when they pass the second time: the caller goes on exclusively), then `remove`
    /// takes the entry out, and the driver's call is made after unlocking.
    #[inline(always)]
    fn free_locked(
        t: &Tables,
        queue: Queue,
        mut table: crate::sync::MutexGuard<'_, OrderedTable>,
        m: &AllocEntry,
        remove: impl FnOnce(&mut OrderedTable) -> AllocEntry,
    ) -> Result<bool> {
        let q = match t.queues.get(queue.0) {
            Ok(q) if (m.device == q.device) & !q.capturing() => q,
            _ => {
                drop(table);
                return Self::free_on_checks(t, queue, m).map(|_| false);
            }
        };
        remove(&mut table);
        t.ordered.publish(&table);
        // The driver's call outside the lock: other threads' lookups and frees go on.
        drop(table);
        let block = super::cache::Block { device: m.device, raw: q.raw, base: m.base, size: m.size };
        if Self::cache_put(t, block) {
            return Ok(true);
        }
        let d = t.devices.at(m.device);
        // SAFETY: a live queue-ordered allocation of this device (its backend frees beside other
        // calls), removed from its table first so it is never passed again; a live queue of the
        // device (queues change only under exclusive access).
        unsafe { d.driver.mem_free_on(d.ordinal, q.raw, m.base, m.size) }?;
        Ok(true)
    }

    /// `mem_free_on`'s shared side for an address that is not the base of an allocation of the
    /// ordered table (as it was found a moment ago): the lookup in both tables with their
    /// errors (`find_base`'s, the allocation table's first); `false` (free it exclusively)
    /// for memory of the allocation table.
    #[cold]
    #[inline(never)]
    fn free_on_lookup(t: &Tables, queue: Queue, ptr: DevicePtr) -> Result<bool> {
        match t.allocations.find_base(ptr.0) {
            Ok(_) => return Ok(false),
            Err(e) if e.code != ErrorCode::NotFound || !t.ordered.any() => return Err(e),
            Err(_) => {}
        }
        let table = t.ordered.lock();
        let slot = table.find_base(ptr.0)?;
        // Allocated meanwhile by another thread at this address.
        let m = *table.slots.at(slot);
        Self::free_locked(t, queue, table, &m, |table| table.remove_at(slot))
    }

    /// `mem_free_on` under exclusive access: memory of the allocation table.
    #[cold]
    #[inline(never)]
    fn free_on_exclusive(&self, queue: Queue, ptr: DevicePtr) -> Result<()> {
        self.with_exclusive(|t| {
            let (place, m) = t.alloc_base(ptr.0)?;
            Self::free_on(t, queue, place, m)
        })
    }

    /// `mem_free_on` by the allocation's handle (the Rust API's queue-ordered buffers): the
    /// handle's errors as `mem_release`, then as `mem_free_on`.
    #[inline(always)]
    pub fn mem_release_on(&self, queue: Queue, allocation: Allocation) -> Result<()> {
        traced!("mem_release_on", ["queue" = queue.0.0, "allocation" = allocation.0.0], {
            self.release_on_in(queue, allocation)
        })
    }

    /// `mem_release_on`'s body, in `mem_free_on`'s form: the shared side handles a live
    /// allocation of the ordered table with its queue's checks in one branch; a handle of the
    /// allocation table, and the queue's errors, go to out-of-line code.
    #[inline(always)]
    fn release_on_in(&self, queue: Queue, allocation: Allocation) -> Result<()> {
        if !Ordered::names(allocation.0) {
            return self.release_on_exclusive(queue, allocation);
        }
        let freed = self.with_shared_inline(
            #[inline(always)]
            |t| {
                let table = t.ordered.lock();
                let slot = table.slots.resolve(allocation.0)?;
                let m = *table.slots.at(slot);
                Self::free_locked(t, queue, table, &m, |table| table.remove_at(slot))
            },
        )?;
        if freed { Ok(()) } else { self.release_on_exclusive(queue, allocation) }
    }

    /// `mem_release_on` under exclusive access: a handle of the allocation table (or checks
    /// that the shared side found failing and that passed here).
    #[cold]
    #[inline(never)]
    fn release_on_exclusive(&self, queue: Queue, allocation: Allocation) -> Result<()> {
        self.with_exclusive(|t| {
            let (place, m) = t.alloc_handle(allocation.0)?;
            Self::free_on(t, queue, place, m)
        })
    }

    /// What `mem_free_on` checks of the queue and the memory `m`; the queue's raw value.
    fn free_on_checks(t: &Tables, queue: Queue, m: &AllocEntry) -> Result<u64> {
        let q = t.queues.get(queue.0)?;
        if m.kind != MemKind::Ordered {
            return fail(ErrorCode::InvalidArgument, "the memory is not queue-ordered (free it with mem_free)");
        }
        if m.device != q.device {
            return fail(ErrorCode::InvalidArgument, "the queue belongs to another device than the memory");
        }
        if q.capturing() {
            return fail(ErrorCode::InvalidArgument, super::queue::CAPTURING);
        }
        Ok(q.raw)
    }

    /// The body of `mem_free_on` and `mem_release_on` under exclusive access, for the
    /// allocation `m` at `place`.
    fn free_on(t: &mut Tables, queue: Queue, place: Place, m: AllocEntry) -> Result<()> {
        let raw = Self::free_on_checks(t, queue, &m)?;
        let dev = t.devices.at(m.device);
        let (backend, ordinal) = (dev.driver, dev.ordinal);
        t.alloc_remove(place);
        if Self::cache_put(t, super::cache::Block { device: m.device, raw, base: m.base, size: m.size }) {
            return Ok(());
        }
        // SAFETY: a live queue-ordered allocation of this device, removed from its table first
        // so it is never passed again; a live queue of the device.
        Ok(unsafe { backend.mem_free_on(ordinal, raw, m.base, m.size) }?)
    }
}
