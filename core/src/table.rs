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

    /// Releases every live entry (generations advance, as `remove_at` does), without looking at
    /// the entries or following the links: a forked child forgets the objects it inherited, and
    /// a teardown that panicked forgets what is left. Either may find the table half-way
    /// through a change (another thread of the parent changing a table under its lock in a
    /// shared call, a fork from a host callback not waiting for that lock; a panic in the middle
    /// of a removal), so every slot ever handed out is looked at by its tag alone and the lists
    /// are built again. A free slot at `MAX_GENERATION` is retired with the live ones there (it
    /// cannot be told apart from a retired slot without the free list): its last generation is
    /// never handed out, and no handle is ever accepted twice.
    pub(crate) fn forget_all(&mut self) {
        let used = (self.high_water as usize).min(N) as u32;
        (self.free_head, self.free_tail, self.newest, self.oldest, self.len) = (NONE, NONE, NONE, NONE, 0);
        for index in 0..used {
            let slot = &mut self.slots[index as usize];
            let was_live = slot.live();
            (slot.tag, slot.prev, slot.next) = (0, NONE, NONE);
            let generation = slot.generation.get_mut();
            if was_live {
                match generation.checked_add(1) {
                    Some(g) => *generation = g,
                    None => continue,
                }
            } else if *generation == crate::handle::MAX_GENERATION {
                continue;
            }
            self.push_free(index);
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
#[path = "table_tests.rs"]
mod tests;
