//! The address-keyed allocation table.
//!
//! Device memory is named by its address, so this table keeps, besides the generational slot
//! table (creation order for teardown), an array of slot indices sorted by base address. Every
//! address given to free/copy/fill is resolved here: an unknown, freed or out-of-range address is
//! an error, never a double free. Depends on `table`, `backend` (for `MemKind`) and `error`.

use crate::backend::MemKind;
use crate::error::{ErrorCode, Result, fail};
use crate::handle::{ObjectKind, RawHandle};
use crate::sync::{AtomicU32, Mutex, MutexGuard, Ordering, const_fn_unless_loom};
use crate::table::Table;

/// One live allocation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AllocEntry {
    pub base: u64,
    pub size: usize,
    /// Slot index of the owning device in the device table.
    pub device: u32,
    pub kind: MemKind,
    /// Slot of the program that owns the range (`MemKind::Global`), else `NO_OWNER`.
    pub owner: u32,
}

/// `AllocEntry::owner` of memory no program owns.
pub(crate) const NO_OWNER: u32 = u32::MAX;

/// A live allocation found by its base: its slot and its place in the address order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    pos: usize,
    /// The allocation's slot.
    pub slot: u32,
}

/// Allocations by slot (handles from `BASE` on; freed slots reused last-freed first with
/// `REUSE_LAST_FREED`, as `Table`) and by address.
pub(crate) struct AllocTable<const N: usize, const BASE: u32 = 0, const REUSE_LAST_FREED: bool = false> {
    pub(crate) slots:
        Table<AllocEntry, N, { ObjectKind::Allocation as u8 }, crate::table::Natural, BASE, REUSE_LAST_FREED>,
    by_address: [u32; N],
}

impl<const N: usize, const BASE: u32, const REUSE_LAST_FREED: bool> AllocTable<N, BASE, REUSE_LAST_FREED> {
    pub(crate) const fn new() -> Self {
        Self { slots: Table::new(), by_address: [0; N] }
    }

    fn sorted(&self) -> &[u32] {
        &self.by_address[..self.slots.len()]
    }

    /// Position in `by_address` of the last allocation whose base is `<= addr`.
    #[inline(always)]
    fn floor(&self, addr: u64) -> Option<usize> {
        // `partition_point`, written out so that it inlines (the library's is an out-of-line
        // call on every lookup, even of an empty table).
        let sorted = self.sorted();
        let (mut lo, mut len) = (0, sorted.len());
        while len > 0 {
            let half = len / 2;
            if self.slots.at(sorted[lo + half]).base <= addr {
                lo += half + 1;
                len -= half + 1;
            } else {
                len = half;
            }
        }
        lo.checked_sub(1)
    }

    /// Where a range starting at `base` goes in the address order, and whether `[base, base +
    /// size)` overlaps a live range (or wraps around the address space).
    #[inline(always)]
    fn place(&self, base: u64, size: usize) -> (usize, bool) {
        let end = base.checked_add(size as u64);
        let pos = self.floor(base).map_or(0, |p| p + 1);
        let overlaps_prev = pos > 0 && {
            let prev = self.slots.at(self.by_address[pos - 1]);
            prev.base + prev.size as u64 > base
        };
        let overlaps_next =
            pos < self.slots.len() && end.is_none_or(|end| self.slots.at(self.by_address[pos]).base < end);
        (pos, end.is_none() || overlaps_prev || overlaps_next)
    }

    /// Whether `[base, base + size)` overlaps a live range (or wraps around).
    pub(crate) fn overlaps(&self, base: u64, size: usize) -> bool {
        self.place(base, size).1
    }

    /// Inserts a new allocation as the newest; returns its handle. Fails with `OutOfResources`
    /// when full, and with `BackendFailure` when the backend returned a range overlapping a live
    /// allocation.
    pub(crate) fn insert(&mut self, entry: AllocEntry) -> Result<RawHandle> {
        self.try_insert(entry).or_else(Self::refused)
    }

    /// `insert`'s error for `code` (the full table's or the overlap's).
    #[cold]
    #[inline(never)]
    fn refused<T>(code: ErrorCode) -> Result<T> {
        match code {
            ErrorCode::OutOfResources => fail(code, "allocation table is full (ORDO_MAX_ALLOCATIONS)"),
            _ => fail(ErrorCode::BackendFailure, "backend returned an address overlapping a live allocation"),
        }
    }

    /// `insert` with its error as a bare code (`OutOfResources` or `BackendFailure`), inlined:
    /// the queue-ordered allocation's path words its own errors.
    #[inline(always)]
    pub(crate) fn try_insert(&mut self, entry: AllocEntry) -> core::result::Result<RawHandle, ErrorCode> {
        if self.slots.is_full() {
            return Err(ErrorCode::OutOfResources);
        }
        let (pos, overlaps) = self.place(entry.base, entry.size);
        if overlaps {
            return Err(ErrorCode::BackendFailure);
        }
        let len = self.slots.len();
        let Ok(handle) = self.slots.insert(entry) else {
            return Err(ErrorCode::OutOfResources);
        };
        if pos < len {
            // (The newest address is often the highest: then nothing moves, and no call is made.)
            self.by_address.copy_within(pos..len, pos + 1);
        }
        self.by_address[pos] = (handle.index() as u32).wrapping_sub(BASE);
        Ok(handle)
    }

    /// The slot of the allocation whose base is exactly `addr`.
    pub(crate) fn find_base(&self, addr: u64) -> Result<u32> {
        if addr == 0 {
            return fail(ErrorCode::NullPointer, "device address is null");
        }
        match self.floor(addr).map(|p| self.by_address[p]) {
            Some(slot) if self.slots.at(slot).base == addr => Ok(slot),
            Some(slot) if addr < self.slots.at(slot).base + self.slots.at(slot).size as u64 => {
                fail(ErrorCode::InvalidArgument, "address is inside an allocation, not its base")
            }
            _ => fail(ErrorCode::NotFound, "address is not a live allocation (never allocated or already freed)"),
        }
    }

    /// The slot of the allocation containing `[addr, addr + size)`, with `size > 0`.
    pub(crate) fn find_range(&self, addr: u64, size: usize) -> Result<u32> {
        if addr == 0 {
            return fail(ErrorCode::NullPointer, "device address is null");
        }
        let slot = match self.floor(addr).map(|p| self.by_address[p]) {
            Some(slot) if addr < self.slots.at(slot).base + self.slots.at(slot).size as u64 => slot,
            _ => return fail(ErrorCode::NotFound, "address is not in a live allocation"),
        };
        let e = self.slots.at(slot);
        match addr.checked_add(size as u64) {
            Some(end) if end <= e.base + e.size as u64 => Ok(slot),
            _ => fail(ErrorCode::InvalidSize, "range runs past the end of its allocation"),
        }
    }

    /// Removes the allocation in `slot` during a teardown, which empties the whole table: the
    /// address index is not maintained (an O(n) shift per removal), and no lookup happens until
    /// the table is empty, when the index is consistent again (it covers `slots.len()` entries).
    pub(crate) fn remove_at_for_teardown(&mut self, slot: u32) -> AllocEntry {
        self.slots.remove_at(slot)
    }

    /// Removes the allocation in `slot`.
    pub(crate) fn remove_at(&mut self, slot: u32) -> AllocEntry {
        let pos = self.floor(self.slots.at(slot).base).expect("live allocation is in the address index");
        self.remove_found(Found { pos, slot })
    }

    /// The allocation whose base is exactly `addr` (never 0), with its place in the address
    /// order: what `remove_found` takes, so that a free searches once. `None` for any other
    /// address (`find_base` tells which error).
    #[inline]
    pub(crate) fn find_exact(&self, addr: u64) -> Option<Found> {
        let pos = self.floor(addr)?;
        let slot = self.by_address[pos];
        (self.slots.at(slot).base == addr).then_some(Found { pos, slot })
    }

    /// Removes the allocation `find_exact` found (nothing changed the table since).
    #[inline]
    pub(crate) fn remove_found(&mut self, found: Found) -> AllocEntry {
        let len = self.slots.len();
        debug_assert_eq!(self.by_address[found.pos], found.slot);
        if found.pos + 1 < len {
            self.by_address.copy_within(found.pos + 1..len, found.pos);
        }
        self.slots.remove_at(found.slot)
    }
}

/// The queue-ordered allocations of devices whose backend lets them be made and freed beside
/// other calls (`Backend::ordered_concurrent`): a table of their own behind a lock, so that
/// `mem_alloc_on` and `mem_free_on` need only shared access to the runtime's tables, while
/// every other allocation changes only under exclusive access (and is read without a lock).
/// Its handles name slots from `BASE` on (past the main table's), so one handle names one
/// allocation in either table. A lookup that misses the main table looks here, and takes the
/// lock only while this table holds anything. Its freed slots are reused last-freed first: the
/// allocate + free pair, between two driver calls that evict much of the cache, keeps taking one
/// slot that stays cached (oldest-freed first walked all of them: on an H200's 16-core host the
/// pair read 1.2–1.6 points more of the raw pair's time, three runs in turn).
pub(crate) struct OrderedAllocs<const N: usize, const BASE: u32> {
    /// The table (spin's lock; loom's in the models, `core/tests/loom_ordered.rs`).
    table: Mutex<AllocTable<N, BASE, true>>,
    /// How many allocations `table` holds (changed under its lock).
    live: AtomicU32,
}

impl<const N: usize, const BASE: u32> OrderedAllocs<N, BASE> {
    const_fn_unless_loom! {
        pub(crate) fn new() -> Self {
            Self { table: Mutex::new(AllocTable::new()), live: AtomicU32::new(0) }
        }
    }

    /// The table, locked (a shared caller changes it only this way; an exclusive caller is alone
    /// anyway).
    pub(crate) fn lock(&self) -> MutexGuard<'_, AllocTable<N, BASE, true>> {
        self.table.lock()
    }

    /// Whether the table holds any allocation (without the lock: what a lookup that missed the
    /// main table asks first).
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.live.load(Ordering::Acquire) != 0
    }

    /// How many allocations the table holds (without the lock: it may change at once).
    #[inline]
    pub(crate) fn count(&self) -> usize {
        self.live.load(Ordering::Relaxed) as usize
    }

    /// Publishes the count of `table` after a change made under its lock.
    pub(crate) fn publish(&self, table: &AllocTable<N, BASE, true>) {
        self.live.store(table.slots.len() as u32, Ordering::Release);
    }

    /// Forgets every allocation (their handles go stale) without taking the lock: a forked
    /// child or a teardown that panicked, alone with the tables.
    pub(crate) fn forget_all(&mut self) {
        self.table.get_mut().slots.forget_all();
        self.live.store(0, Ordering::Relaxed);
    }

    /// After a `fork`: frees the lock that the preparation held across it (`hold_for_fork`),
    /// in the parent, or in the child (one thread), whoever held it there.
    ///
    /// # Safety
    /// No guard of the lock is alive: its holder was `hold_for_fork`, or a thread of the parent
    /// that the child does not have.
    #[cfg(all(feature = "std", unix, not(loom)))]
    pub(crate) unsafe fn unlock_after_fork(&self) {
        if self.table.is_locked() {
            // SAFETY: the caller's contract: the holder is gone.
            unsafe { self.table.force_unlock() };
        }
    }

    /// Before a `fork`: takes the lock and keeps it (no guard), so that the child's copy of
    /// the table is not caught half-way through another thread's change (nothing is held
    /// under the lock but the table's own work). `unlock_after_fork` frees it in both processes.
    #[cfg(all(feature = "std", unix, not(loom)))]
    pub(crate) fn hold_for_fork(&self) {
        core::mem::forget(self.table.lock());
    }

    /// Whether a handle's slot index is this table's (at or past `BASE`).
    #[inline]
    pub(crate) fn names(h: RawHandle) -> bool {
        h.index() >= BASE as usize
    }

    /// A copy of the allocation containing `[addr, addr + size)` (`find_range`'s errors).
    pub(crate) fn find_range(&self, addr: u64, size: usize) -> Result<AllocEntry> {
        let table = self.lock();
        table.find_range(addr, size).map(|slot| *table.slots.at(slot))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(base: u64, size: usize) -> AllocEntry {
        AllocEntry { base, size, device: 0, kind: MemKind::Device, owner: NO_OWNER }
    }

    #[test]
    fn lookup_by_base_and_range() {
        let mut t: AllocTable<4> = AllocTable::new();
        t.insert(entry(0x3000, 0x100)).unwrap();
        t.insert(entry(0x1000, 0x100)).unwrap();
        t.insert(entry(0x2000, 0x100)).unwrap();
        let s = t.find_base(0x2000).unwrap();
        assert_eq!(t.slots.at(s).base, 0x2000);
        assert_eq!(t.find_base(0x2010).unwrap_err().code, ErrorCode::InvalidArgument);
        assert_eq!(t.find_base(0x2100).unwrap_err().code, ErrorCode::NotFound);
        assert_eq!(t.find_base(0).unwrap_err().code, ErrorCode::NullPointer);
        assert!(t.find_range(0x1010, 0xf0).is_ok());
        assert_eq!(t.find_range(0x1010, 0xf1).unwrap_err().code, ErrorCode::InvalidSize);
        assert_eq!(t.find_range(0x10ff, usize::MAX).unwrap_err().code, ErrorCode::InvalidSize);
        assert_eq!(t.find_range(0x0fff, 1).unwrap_err().code, ErrorCode::NotFound);
        t.remove_at(s);
        assert_eq!(t.find_base(0x2000).unwrap_err().code, ErrorCode::NotFound);
        assert!(t.find_base(0x3000).is_ok() && t.find_base(0x1000).is_ok());
    }

    #[test]
    fn rejects_overlap_and_full() {
        let mut t: AllocTable<2> = AllocTable::new();
        t.insert(entry(0x1000, 0x100)).unwrap();
        assert_eq!(t.insert(entry(0x10ff, 1)).unwrap_err().code, ErrorCode::BackendFailure);
        assert_eq!(t.insert(entry(0x0f01, 0x100)).unwrap_err().code, ErrorCode::BackendFailure);
        assert_eq!(t.insert(entry(u64::MAX, 2)).unwrap_err().code, ErrorCode::BackendFailure);
        t.insert(entry(0x1100, 0x100)).unwrap();
        assert_eq!(t.insert(entry(0x5000, 1)).unwrap_err().code, ErrorCode::OutOfResources);
    }
}
