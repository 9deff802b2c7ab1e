//! Fixed-capacity slot tables with generations and creation order.
//!
//! Each live entry is on a doubly linked list in creation order, so teardown walks newest first
//! in O(1) per object and removal anywhere is O(1). Every slot is handed out once (from a
//! high-water mark, which keeps `new` a `const fn`) before any is reused; freed slots are then
//! reused from a first-in, first-out free list, so generations advance evenly over all slots from
//! the first insert. A table with `REUSE_LAST_FREED` (the queue-ordered allocations',
//! whose allocate + free pair is a hot path between two driver calls) reuses the slot freed last
//! first instead, so that pair keeps touching one slot that stays in cache; its slots then age
//! one at a time, and retire one at a time.
//!
//! A handle is never accepted again once its object is released: a slot's generation only
//! grows, and a slot whose generation reaches `MAX_GENERATION` is retired for good instead of
//! wrapping. Each slot so names at most 2^32 objects over the life of its runtime, and a table of
//! `N` slots `N`·2^32; past that, creation returns `OutOfResources`. Handles carry the table's
//! owner (its runtime's identity), and a handle of another owner is rejected. A live entry can
//! also be renamed in place (`reissue`: its generation advances under shared access, so the old
//! handle is stale and the entry keeps its slot and its place in the creation order); the
//! generation is atomic for that alone. Depends on `handle` and `error`.

use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

use crate::error::{ErrorCode, Result, fail};
use crate::handle::{MAX_RUNTIME_ID, ObjectKind, RawHandle, RuntimeId};

/// A link to a slot: 0 is "none", `i + 1` names slot `i` (so an empty table is all zeros and a
/// `static` of one sits in `.bss`).
type Link = u32;
const NONE: Link = 0;

#[inline]
const fn link(index: u32) -> Link {
    index + 1
}

#[inline]
const fn target(l: Link) -> Option<u32> {
    if l == NONE { None } else { Some(l - 1) }
}

/// A slot alignment (`Table`'s `A`): a zero-length array of it aligns a slot without taking
/// space. A table whose lookups sit on the launch path aligns its slots so that the slot's
/// first 32 or 64 bytes (its generation, tag and the entry's hot fields) never straddle two
/// cache lines.
pub(crate) trait SlotAlign {}
/// No alignment beyond the entry's own.
#[derive(Clone, Copy)]
pub(crate) struct Natural;
/// 32-byte slots.
#[derive(Clone, Copy)]
#[repr(align(32))]
pub(crate) struct Align32;
/// 64-byte slots (a cache line on the hosts ordo runs on).
#[derive(Clone, Copy)]
#[repr(align(64))]
pub(crate) struct Align64;
impl SlotAlign for Natural {}
impl SlotAlign for Align32 {}
impl SlotAlign for Align64 {}

/// One slot, laid out so that what a lookup reads comes first: the generation and the tag, then
/// the value (whose own hot fields come first, see the entry types), then the links, which only
/// writers and the order walk read. A lookup so reads one cache line where the slot allows it,
/// instead of the slot's and the table header's (the owner).
#[repr(C)]
struct Slot<T, A> {
    _align: [A; 0],
    /// Written under exclusive access, except by `reissue` (shared access, compare-and-swap);
    /// the entry's value never depends on it, so relaxed ordering suffices.
    generation: AtomicU32,
    /// While live, the top 16 bits of its handles (`RawHandle::tag`: the table's kind, never 0,
    /// over the owner's identity, so one compare checks a handle's kind and owner and the
    /// slot's liveness together), never 0;
    /// 0 while free. Written under exclusive access only.
    tag: u16,
    /// Initialised exactly when live.
    value: MaybeUninit<T>,
    /// Older neighbour when live; next free slot when free.
    prev: Link,
    /// Newer neighbour when live.
    next: Link,
}

impl<T, A> Slot<T, A> {
    #[inline]
    const fn live(&self) -> bool {
        self.tag != 0
    }
}

/// A fixed-capacity table of `T` named by generational handles of one kind (`KIND`, an
/// `ObjectKind` tag), with slots aligned as `A` says. Its handles name slot `i` by index `BASE +
/// i` (0 for every table but one of two that share a kind's handles: the queue-ordered
/// allocations'), and reuses freed slots oldest-freed first, or last-freed first with
/// `REUSE_LAST_FREED` (see the module docs). Its initial state is all zeros. Values are plain
/// data: they are never dropped (tables live in statics).
pub(crate) struct Table<
    T,
    const N: usize,
    const KIND: u8,
    A: SlotAlign = Natural,
    const BASE: u32 = 0,
    const REUSE_LAST_FREED: bool = false,
> {
    slots: [Slot<T, A>; N],
    high_water: u32,
    free_head: Link,
    free_tail: Link,
    newest: Link,
    oldest: Link,
    len: u32,
    /// The identity of the runtime that owns the table (0 until its first init).
    owner: RuntimeId,
}

impl<T, const N: usize, const KIND: u8, A: SlotAlign, const BASE: u32, const REUSE_LAST_FREED: bool>
    Table<T, N, KIND, A, BASE, REUSE_LAST_FREED>
{
    const KIND: ObjectKind = match ObjectKind::from_tag(KIND) {
        Some(k) => k,
        None => panic!("a table's KIND is an ObjectKind tag"),
    };

    pub(crate) const fn new() -> Self {
        Self {
            slots: [const {
                Slot {
                    _align: [],
                    generation: AtomicU32::new(0),
                    tag: 0,
                    value: MaybeUninit::uninit(),
                    prev: NONE,
                    next: NONE,
                }
            }; N],
            high_water: 0,
            free_head: NONE,
            free_tail: NONE,
            newest: NONE,
            oldest: NONE,
            len: 0,
            owner: 0,
        }
    }

    /// Sets the identity that the table's handles carry (once, at the runtime's first init).
    pub(crate) fn set_owner(&mut self, owner: RuntimeId) {
        self.owner = owner;
    }

    pub(crate) const fn len(&self) -> usize {
        self.len as usize
    }

    /// No slot can take a new entry (every slot is live or retired).
    pub(crate) const fn is_full(&self) -> bool {
        self.free_head == NONE && self.high_water as usize >= N
    }

    /// The handle of live slot `index` (from the slot alone: its tag holds the owner).
    #[inline]
    fn handle_of(&self, index: u32) -> RawHandle {
        let slot = &self.slots[index as usize];
        RawHandle::pack(Self::KIND, slot.tag & MAX_RUNTIME_ID, slot.generation.load(Relaxed), BASE + index)
    }

    /// Inserts `value` as the newest entry; hands it back when the table is full.
    #[inline]
    pub(crate) fn insert(&mut self, value: T) -> core::result::Result<RawHandle, T> {
        // A never-used slot first, then the head of the free list: every slot is handed out once
        // before any is reused. The list is first-in first-out (the oldest-freed slot), so all
        // slots age together from the first insert (reusing a freed slot first would put every
        // create/destroy cycle of a fresh table in slot 0), except with `REUSE_LAST_FREED`, whose
        // list is last-in first-out (`remove_at` pushes at the head).
        let index = if (self.high_water as usize) < N {
            self.high_water += 1;
            self.high_water - 1
        } else if let Some(i) = target(self.free_head) {
            self.free_head = self.slots[i as usize].prev;
            if self.free_head == NONE {
                self.free_tail = NONE;
            }
            i
        } else {
            return Err(value);
        };
        let newest = self.newest;
        let slot = &mut self.slots[index as usize];
        slot.value.write(value);
        slot.tag = RawHandle::pack(Self::KIND, self.owner, 0, 0).tag();
        slot.prev = newest;
        slot.next = NONE;
        match target(newest) {
            Some(n) => self.slots[n as usize].next = link(index),
            None => self.oldest = link(index),
        }
        self.newest = link(index);
        self.len += 1;
        Ok(self.handle_of(index))
    }

    /// The slot index of a live object named by `h`, or the specific error for a bad handle.
    /// A live slot's generation and tag are what `h` carries (the tag: its kind and owner).
    /// Every check is computed (the slot read is clamped into the table) and the result taken
    /// in one branch: the launch path runs after a driver call that has evicted the branch
    /// predictor's history, where each branch costs more than the compares.
    #[inline(always)]
    pub(crate) fn resolve(&self, h: RawHandle) -> Result<u32> {
        // A table whose handles start at `BASE` (0 for most): a lower index wraps to past `N`.
        let index = h.index().wrapping_sub(BASE as usize);
        let slot = &self.slots[index.min(N - 1)];
        // The differences OR-ed together (compilers keep this arithmetic; a chain of `&&`, or
        // even of `&` on booleans, becomes a branch per compare).
        // A free slot's tag is 0, and so is the tag of a forged handle with neither kind nor
        // owner: such a handle must not match a free slot of its generation.
        let tag = h.tag();
        let differences = u32::from(index >= N)
            | u32::from(tag == 0)
            | (slot.generation.load(Relaxed) ^ h.generation())
            | u32::from(slot.tag ^ tag);
        if differences == 0 { Ok(index as u32) } else { self.unresolved(h) }
    }

    /// `resolve`'s error for `h`: its kind's error first, then another runtime's, a stale or a
    /// forged handle.
    #[cold]
    #[inline(never)]
    fn unresolved(&self, h: RawHandle) -> Result<u32> {
        h.expect_kind(Self::KIND)?;
        if h.runtime() != self.owner {
            return fail(ErrorCode::InvalidHandle, "handle belongs to another runtime");
        }
        match self.slots.get(h.index().wrapping_sub(BASE as usize)) {
            Some(_) => fail(ErrorCode::InvalidHandle, "handle is stale (object released or from an earlier init)"),
            None => fail(ErrorCode::InvalidHandle, "handle is forged (slot out of range)"),
        }
    }

    #[inline(always)]
    pub(crate) fn get(&self, h: RawHandle) -> Result<&T> {
        let i = self.resolve(h)?;
        // SAFETY: `resolve` found `i` in range and slot `i` live (its tag is not 0),
        // so its value is initialised; no second look at the index or the tag.
        Ok(unsafe { self.slots.get_unchecked(i as usize).value.assume_init_ref() })
    }

    /// The live entry in slot `index`. Callers pass indices from `resolve` or the order walk.
    #[inline]
    pub(crate) fn at(&self, index: u32) -> &T {
        let slot = &self.slots[index as usize];
        assert!(slot.live(), "slot index names a live entry");
        // SAFETY: a live slot's value is initialised.
        unsafe { slot.value.assume_init_ref() }
    }

    pub(crate) fn at_mut(&mut self, index: u32) -> &mut T {
        let slot = &mut self.slots[index as usize];
        assert!(slot.live(), "slot index names a live entry");
        // SAFETY: a live slot's value is initialised.
        unsafe { slot.value.assume_init_mut() }
    }

    /// The handle that currently names slot `index`.
    #[inline]
    pub(crate) fn handle_at(&self, index: u32) -> RawHandle {
        self.handle_of(index)
    }

    /// Removes the entry in live slot `index`, advancing the slot's generation; a slot whose
    /// generation is exhausted is retired instead of freed.
    #[inline]
    pub(crate) fn remove_at(&mut self, index: u32) -> T {
        let (prev, next) = {
            let slot = &self.slots[index as usize];
            assert!(slot.live(), "slot index names a live entry");
            (slot.prev, slot.next)
        };
        match target(prev) {
            Some(p) => self.slots[p as usize].next = next,
            None => self.oldest = next,
        }
        match target(next) {
            Some(n) => self.slots[n as usize].prev = prev,
            None => self.newest = prev,
        }
        self.len -= 1;
        let slot = &mut self.slots[index as usize];
        slot.next = NONE;
        slot.prev = NONE;
        slot.tag = 0;
        // SAFETY: the slot was live (asserted above), so its value is initialised; it is marked
        // free first, so the value is read out exactly once.
        let value = unsafe { slot.value.assume_init_read() };
        match slot.generation.get_mut().checked_add(1) {
            Some(g) => {
                *slot.generation.get_mut() = g;
                if REUSE_LAST_FREED {
                    self.push_free_first(index);
                } else {
                    self.push_free(index);
                }
            }
            // Every generation of this slot (to MAX_GENERATION) has named an object: retire it.
            None => log::warn!("ordo: a {} slot has used all its generations and is retired", Self::KIND),
        }
        value
    }

    /// Appends a free slot at the tail of the free list (reused last).
    fn push_free(&mut self, index: u32) {
        match target(self.free_tail) {
            Some(t) => self.slots[t as usize].prev = link(index),
            None => self.free_head = link(index),
        }
        self.free_tail = link(index);
    }

    /// Puts a free slot at the head of the free list (reused next).
    fn push_free_first(&mut self, index: u32) {
        self.slots[index as usize].prev = self.free_head;
        if self.free_head == NONE {
            self.free_tail = link(index);
        }
        self.free_head = link(index);
    }

    /// Releases every live entry as `remove_at` does (generations advance), without looking at
    /// the entries: a forked child forgets the objects it inherited.
    pub(crate) fn forget_all(&mut self) {
        while let Some(i) = self.newest() {
            self.remove_at(i);
        }
    }

    /// Test hook: raises the generation of every slot that is not live to at least `generation`
    /// (slots never used are taken into use first), so a test can reach the end of a slot's
    /// generations without 2^32 create/destroy cycles. Generations never go down.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn age_free_slots(&mut self, generation: u32) {
        while (self.high_water as usize) < N {
            self.push_free(self.high_water);
            self.high_water += 1;
        }
        let mut i = target(self.free_head);
        while let Some(index) = i {
            let slot = &mut self.slots[index as usize];
            let g = slot.generation.get_mut();
            *g = (*g).max(generation);
            i = target(slot.prev);
        }
    }

    /// Renames the live entry `h` names: its slot's generation advances, so `h` is stale from
    /// now on (as if the entry had been released) and the returned handle names the entry, which
    /// keeps its slot, value and place in the creation order. Needs only shared access: of
    /// callers racing to reissue one handle, one wins and the others find it stale.
    /// `OutOfResources` when the slot is at `MAX_GENERATION` (nothing changes).
    pub(crate) fn reissue(&self, h: RawHandle) -> Result<RawHandle> {
        let index = self.resolve(h)?;
        let Some(next) = h.generation().checked_add(1) else {
            return fail(ErrorCode::OutOfResources, "the slot has used all its generations");
        };
        match self.slots[index as usize].generation.compare_exchange(h.generation(), next, Relaxed, Relaxed) {
            Ok(_) => Ok(RawHandle::pack(Self::KIND, h.runtime(), next, BASE + index)),
            // Another caller reissued it first: `h` is stale now.
            Err(_) => fail(ErrorCode::InvalidHandle, "handle is stale (object released or from an earlier init)"),
        }
    }

    pub(crate) fn remove(&mut self, h: RawHandle) -> Result<T> {
        let i = self.resolve(h)?;
        Ok(self.remove_at(i))
    }

    /// The newest live slot.
    pub(crate) fn newest(&self) -> Option<u32> {
        target(self.newest)
    }

    /// The oldest live slot.
    pub(crate) fn oldest(&self) -> Option<u32> {
        target(self.oldest)
    }

    /// The next older live slot than `index`.
    pub(crate) fn older(&self, index: u32) -> Option<u32> {
        target(self.slots[index as usize].prev)
    }

    /// The next newer live slot than `index`.
    pub(crate) fn newer(&self, index: u32) -> Option<u32> {
        target(self.slots[index as usize].next)
    }

    /// Live slot indices, oldest first.
    pub(crate) fn iter_oldest_first(&self) -> impl Iterator<Item = u32> + '_ {
        core::iter::successors(self.oldest(), move |&i| self.newer(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::MAX_GENERATION;

    const Q: u8 = ObjectKind::Queue as u8;
    const E: u8 = ObjectKind::Event as u8;

    /// A table whose handles start at `BASE` names its slots past it; a handle below `BASE`
    /// (another table's) or past its end is refused, never read as one of its slots.
    #[test]
    fn handles_of_a_table_with_a_base_name_slots_past_it() {
        let mut t: Table<u32, 2, Q, Natural, 100> = Table::new();
        t.set_owner(3);
        let a = t.insert(7).unwrap();
        let b = t.insert(8).unwrap();
        assert_eq!((a.index(), b.index()), (100, 101));
        assert_eq!(*t.get(a).unwrap(), 7);
        assert_eq!(t.resolve(b).unwrap(), 1);
        assert_eq!(t.handle_at(1), b);
        for index in [0, 1, 99, 102] {
            let forged = RawHandle::pack(ObjectKind::Queue, 3, 0, index);
            assert_eq!(t.resolve(forged).unwrap_err().code, ErrorCode::InvalidHandle, "index {index}");
        }
        let again = t.reissue(a).unwrap();
        assert_eq!(again.index(), 100);
        assert_eq!(t.resolve(a).unwrap_err().code, ErrorCode::InvalidHandle);
        assert_eq!(t.remove(again).unwrap(), 7);
    }

    #[test]
    fn insert_remove_reuse_bumps_generation() {
        let mut t: Table<u32, 2, Q> = Table::new();
        let a = t.insert(10).unwrap();
        let b = t.insert(20).unwrap();
        assert_eq!(t.insert(30), Err(30));
        assert_eq!(*t.get(a).unwrap(), 10);
        assert_eq!(t.remove(a).unwrap(), 10);
        assert_eq!(t.get(a).unwrap_err().code, ErrorCode::InvalidHandle);
        assert_eq!(t.remove(a).unwrap_err().code, ErrorCode::InvalidHandle);
        let c = t.insert(30).unwrap();
        assert_eq!(c.index(), a.index());
        assert_ne!(c, a);
        t.remove(c).unwrap();
        let d = t.insert(40).unwrap();
        assert_eq!(d.index(), a.index(), "the only free slot");
        assert!(t.get(a).is_err() && t.get(c).is_err());
        assert_eq!(*t.get(b).unwrap(), 20);
        assert_eq!(t.get(RawHandle::pack(ObjectKind::Queue, 0, 0, 7)).unwrap_err().code, ErrorCode::InvalidHandle);
        assert_eq!(t.get(RawHandle::pack(ObjectKind::Event, 0, 0, 1)).unwrap_err().code, ErrorCode::InvalidHandle);
    }

    #[test]
    fn a_handle_of_another_owner_is_rejected() {
        let mut a: Table<u32, 2, Q> = Table::new();
        let mut b: Table<u32, 2, Q> = Table::new();
        a.set_owner(1);
        b.set_owner(2);
        let ha = a.insert(1).unwrap();
        let hb = b.insert(2).unwrap();
        assert_eq!(ha.index(), hb.index());
        let e = b.get(ha).unwrap_err();
        assert_eq!((e.code, e.message), (ErrorCode::InvalidHandle, "handle belongs to another runtime"));
        assert_eq!(b.remove(ha).unwrap_err().code, ErrorCode::InvalidHandle);
        assert_eq!(*b.get(hb).unwrap(), 2, "nothing changed");
    }

    #[test]
    fn a_lookup_reads_the_slot_alone_laid_out_hot_first() {
        use core::mem::{align_of, offset_of, size_of};
        // The generation and the tag, then the value; the links last.
        assert_eq!(offset_of!(Slot<[u64; 2], Natural>, generation), 0);
        assert_eq!(offset_of!(Slot<[u64; 2], Natural>, tag), 4);
        assert_eq!(offset_of!(Slot<[u64; 2], Natural>, value), 8);
        assert_eq!(offset_of!(Slot<[u64; 2], Natural>, prev), 24);
        // Aligned slots: their size is a multiple of the alignment, so no slot's first 32 (64)
        // bytes straddle two lines.
        assert_eq!((size_of::<Slot<[u64; 2], Align32>>(), align_of::<Slot<[u64; 2], Align32>>()), (32, 32));
        assert_eq!((size_of::<Slot<[u64; 3], Align32>>(), align_of::<Slot<[u64; 3], Align32>>()), (64, 32));
        assert_eq!((size_of::<Slot<[u64; 9], Align64>>(), align_of::<Slot<[u64; 9], Align64>>()), (128, 64));
        // The slot holds its owner: a handle made from it (`handle_at`) carries the owner it
        // was issued with, and a freed slot's tag is 0.
        let mut t: Table<u32, 2, Q, Align32> = Table::new();
        t.set_owner(7);
        let h = t.insert(1).unwrap();
        assert_eq!(h.runtime(), 7);
        assert_eq!(t.handle_at(h.index() as u32), h);
        assert_eq!(t.slots[h.index()].tag, (ObjectKind::Queue as u16) << 12 | 7);
        t.remove(h).unwrap();
        assert_eq!(t.slots[h.index()].tag, 0);
        // A handle of this owner naming the free slot's current generation is still refused.
        let g = t.slots[h.index()].generation.load(Relaxed);
        let forged = RawHandle::pack(ObjectKind::Queue, 7, g, h.index() as u32);
        let e = t.get(forged).unwrap_err();
        assert_eq!(
            (e.code, e.message),
            (ErrorCode::InvalidHandle, "handle is stale (object released or from an earlier init)")
        );
        // Neither kind nor owner (a bare slot index, as a forged pointer-sized handle reads):
        // a slot never used (tag 0, generation 0) is not named by it.
        let mut fresh: Table<u32, 32, Q, Align32> = Table::new();
        fresh.set_owner(7);
        fresh.insert(1).unwrap();
        for bare in [RawHandle(0x10), RawHandle(0x1), RawHandle(0x0)] {
            let e = fresh.get(bare).unwrap_err();
            assert!(matches!(e.code, ErrorCode::InvalidHandle | ErrorCode::NullHandle), "{bare:?}: {e:?}");
        }
        let out_of_range = RawHandle::pack(ObjectKind::Queue, 7, 0, 2);
        assert_eq!(t.get(out_of_range).unwrap_err().message, "handle is forged (slot out of range)");
    }

    #[test]
    fn free_slots_are_reused_oldest_freed_first() {
        let mut t: Table<u32, 3, Q> = Table::new();
        let hs: heapless::Vec<RawHandle, 3> = (0..3).map(|v| t.insert(v).unwrap()).collect();
        t.remove(hs[1]).unwrap();
        t.remove(hs[0]).unwrap();
        assert_eq!(t.insert(7).unwrap().index(), hs[1].index());
        assert_eq!(t.insert(8).unwrap().index(), hs[0].index());
        assert!(t.is_full());
    }

    /// A table made to reuse the slot freed last does so (after handing out every slot once),
    /// and a handle of the slot's earlier object stays stale.
    #[test]
    fn a_table_reusing_the_last_freed_slot_keeps_one_slot_hot() {
        let mut t: Table<u32, 3, Q, Natural, 0, true> = Table::new();
        let hs: heapless::Vec<RawHandle, 3> = (0..3).map(|v| t.insert(v).unwrap()).collect();
        t.remove(hs[1]).unwrap();
        t.remove(hs[0]).unwrap();
        let a = t.insert(7).unwrap();
        assert_eq!(a.index(), hs[0].index());
        assert_eq!(t.get(hs[0]).unwrap_err().code, ErrorCode::InvalidHandle);
        // An allocate + free pair keeps taking the same slot, one generation further each time.
        for v in 0..4 {
            let h = t.insert(v).unwrap();
            assert_eq!((h.index(), h.generation()), (hs[1].index(), hs[1].generation() + 1 + v));
            t.remove(h).unwrap();
        }
        assert_eq!(t.insert(9).unwrap().index(), hs[1].index());
        assert!(t.is_full());
    }

    #[test]
    fn a_fresh_table_ages_every_slot_together() {
        let mut t: Table<u32, 4, Q> = Table::new();
        // Create/destroy cycles on a fresh table walk every slot before reusing one.
        let mut indices: heapless::Vec<usize, 12> = heapless::Vec::new();
        for v in 0..12 {
            let h = t.insert(v).unwrap();
            indices.push(h.index()).unwrap();
            t.remove(h).unwrap();
        }
        assert_eq!(indices, [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]);
        // Each slot has named exactly three objects: the generations are even.
        for i in 0..4 {
            assert_eq!(t.slots[i].generation.load(Relaxed), 3);
        }
    }

    #[test]
    fn reissue_renames_in_place_and_the_old_handle_is_stale() {
        let mut t: Table<u32, 3, Q> = Table::new();
        let a = t.insert(10).unwrap();
        let b = t.insert(20).unwrap();
        let a2 = t.reissue(a).unwrap();
        assert_ne!(a2, a);
        assert_eq!(a2.index(), a.index(), "same slot");
        assert_eq!(*t.get(a2).unwrap(), 10);
        assert_eq!(t.get(a).unwrap_err().code, ErrorCode::InvalidHandle);
        assert_eq!(t.reissue(a).unwrap_err().code, ErrorCode::InvalidHandle, "a second reissue of the old handle");
        assert_eq!(t.remove(a).unwrap_err().code, ErrorCode::InvalidHandle);
        assert_eq!(t.oldest(), Some(a.index() as u32), "its place in the creation order is kept");
        assert_eq!(t.len(), 2);
        assert_eq!(t.remove(a2).unwrap(), 10);
        assert!(t.get(b).is_ok());
        // At the last generation nothing changes.
        let c = t.insert(30).unwrap();
        t.slots[c.index()].generation.store(MAX_GENERATION, Relaxed);
        let c = t.handle_at(c.index() as u32);
        assert_eq!(t.reissue(c).unwrap_err().code, ErrorCode::OutOfResources);
        assert_eq!(*t.get(c).unwrap(), 30);
    }

    #[test]
    fn a_slot_at_the_end_of_its_generations_is_retired_never_wrapped() {
        let mut t: Table<u32, 2, E> = Table::new();
        t.age_free_slots(MAX_GENERATION - 1);
        let mut seen: heapless::Vec<RawHandle, 8> = heapless::Vec::new();
        // Two slots, two generations each (MAX_GENERATION - 1 and MAX_GENERATION): four objects.
        for v in 0..4 {
            let h = t.insert(v).unwrap();
            assert!(!seen.contains(&h));
            seen.push(h).unwrap();
            t.remove(h).unwrap();
        }
        assert!(t.is_full(), "both slots are retired");
        assert_eq!(t.insert(9), Err(9));
        for h in &seen {
            assert_eq!(t.get(*h).unwrap_err().code, ErrorCode::InvalidHandle);
        }
    }

    #[test]
    fn order_walk_is_newest_first_across_removals() {
        let mut t: Table<u32, 8, E> = Table::new();
        let hs: heapless::Vec<RawHandle, 8> = (0..6).map(|v| t.insert(v).unwrap()).collect();
        t.remove(hs[2]).unwrap();
        t.remove(hs[5]).unwrap();
        t.insert(99).unwrap(); // reuses slot 5, becomes newest
        let mut seen: heapless::Vec<u32, 8> = heapless::Vec::new();
        let mut cur = t.newest();
        while let Some(i) = cur {
            seen.push(*t.at(i)).unwrap();
            cur = t.older(i);
        }
        assert_eq!(&seen[..], &[99, 4, 3, 1, 0]);
        let oldest: heapless::Vec<u32, 8> = t.iter_oldest_first().map(|i| *t.at(i)).collect();
        assert_eq!(&oldest[..], &[0, 1, 3, 4, 99]);
    }
}
