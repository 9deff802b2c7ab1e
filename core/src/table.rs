//! Fixed-capacity slot tables with generations and creation order.
//!
//! Each live entry is on a doubly linked list in creation order, so teardown walks newest first
//! in O(1) per object and removal anywhere is O(1). Free slots are reused from a first-in,
//! first-out free list, so that generations advance evenly over all slots (slots never handed
//! out are taken from a high-water mark, which keeps `new` a `const fn`).
//!
//! A handle is never accepted again once its object is released: a slot's generation only
//! grows, and a slot whose generation reaches `u32::MAX` is retired for good instead of wrapping.
//! Each slot so names at most 2^32 objects over the life of the process, and a table of `N`
//! slots `N`·2^32; past that, creation returns `OutOfResources`. Depends on `handle` and `error`.

use crate::error::{ErrorCode, Result, fail};
use crate::handle::{ObjectKind, RawHandle};

const NONE: u32 = u32::MAX;

struct Slot<T> {
    generation: u32,
    /// Older neighbour when live; next free slot when free.
    prev: u32,
    /// Newer neighbour when live.
    next: u32,
    value: Option<T>,
}

/// A fixed-capacity table of `T` named by generational handles of one kind.
pub(crate) struct Table<T, const N: usize> {
    kind: ObjectKind,
    slots: [Slot<T>; N],
    high_water: u32,
    free_head: u32,
    free_tail: u32,
    newest: u32,
    oldest: u32,
    len: u32,
}

impl<T, const N: usize> Table<T, N> {
    pub(crate) const fn new(kind: ObjectKind) -> Self {
        Self {
            kind,
            slots: [const { Slot { generation: 0, prev: NONE, next: NONE, value: None } }; N],
            high_water: 0,
            free_head: NONE,
            free_tail: NONE,
            newest: NONE,
            oldest: NONE,
            len: 0,
        }
    }

    pub(crate) const fn len(&self) -> usize {
        self.len as usize
    }

    /// No slot can take a new entry (every slot is live or retired).
    pub(crate) const fn is_full(&self) -> bool {
        self.free_head == NONE && self.high_water as usize >= N
    }

    fn handle_of(&self, index: u32) -> RawHandle {
        RawHandle::pack(self.kind, self.slots[index as usize].generation, index)
    }

    /// Inserts `value` as the newest entry; hands it back when the table is full.
    pub(crate) fn insert(&mut self, value: T) -> core::result::Result<RawHandle, T> {
        let index = if self.free_head != NONE {
            let i = self.free_head;
            self.free_head = self.slots[i as usize].prev;
            if self.free_head == NONE {
                self.free_tail = NONE;
            }
            i
        } else if (self.high_water as usize) < N {
            self.high_water += 1;
            self.high_water - 1
        } else {
            return Err(value);
        };
        let slot = &mut self.slots[index as usize];
        slot.value = Some(value);
        slot.prev = self.newest;
        slot.next = NONE;
        if self.newest != NONE {
            self.slots[self.newest as usize].next = index;
        } else {
            self.oldest = index;
        }
        self.newest = index;
        self.len += 1;
        Ok(self.handle_of(index))
    }

    /// The slot index of a live object named by `h`, or the specific error for a bad handle.
    pub(crate) fn resolve(&self, h: RawHandle) -> Result<u32> {
        h.expect_kind(self.kind)?;
        match self.slots.get(h.index()) {
            Some(slot) if slot.value.is_some() && slot.generation == h.generation() => Ok(h.index() as u32),
            Some(_) => fail(ErrorCode::InvalidHandle, "handle is stale (object released or from an earlier init)"),
            None => fail(ErrorCode::InvalidHandle, "handle is forged (slot out of range)"),
        }
    }

    pub(crate) fn get(&self, h: RawHandle) -> Result<&T> {
        let i = self.resolve(h)?;
        Ok(self.at(i))
    }

    /// The live entry in slot `index`. Callers pass indices from `resolve` or the order walk.
    pub(crate) fn at(&self, index: u32) -> &T {
        self.slots[index as usize].value.as_ref().expect("slot index names a live entry")
    }

    pub(crate) fn at_mut(&mut self, index: u32) -> &mut T {
        self.slots[index as usize].value.as_mut().expect("slot index names a live entry")
    }

    /// The handle that currently names slot `index`.
    pub(crate) fn handle_at(&self, index: u32) -> RawHandle {
        self.handle_of(index)
    }

    /// Removes the entry in live slot `index`, advancing the slot's generation; a slot whose
    /// generation is exhausted is retired instead of freed.
    pub(crate) fn remove_at(&mut self, index: u32) -> T {
        let (prev, next) = {
            let slot = &self.slots[index as usize];
            (slot.prev, slot.next)
        };
        if prev != NONE {
            self.slots[prev as usize].next = next;
        } else {
            self.oldest = next;
        }
        if next != NONE {
            self.slots[next as usize].prev = prev;
        } else {
            self.newest = prev;
        }
        self.len -= 1;
        let slot = &mut self.slots[index as usize];
        slot.next = NONE;
        slot.prev = NONE;
        let value = slot.value.take().expect("slot index names a live entry");
        match slot.generation.checked_add(1) {
            Some(g) => {
                slot.generation = g;
                self.push_free(index);
            }
            // Every generation of this slot has named an object: retire it (it stays empty).
            None => log::warn!("ordo: a {} slot has used all its generations and is retired", self.kind),
        }
        value
    }

    /// Appends a free slot at the tail of the free list (reused last).
    fn push_free(&mut self, index: u32) {
        if self.free_tail != NONE {
            self.slots[self.free_tail as usize].prev = index;
        } else {
            self.free_head = index;
        }
        self.free_tail = index;
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
        let mut i = self.free_head;
        while i != NONE {
            let slot = &mut self.slots[i as usize];
            slot.generation = slot.generation.max(generation);
            i = slot.prev;
        }
    }

    pub(crate) fn remove(&mut self, h: RawHandle) -> Result<T> {
        let i = self.resolve(h)?;
        Ok(self.remove_at(i))
    }

    /// The newest live slot.
    pub(crate) fn newest(&self) -> Option<u32> {
        (self.newest != NONE).then_some(self.newest)
    }

    /// The oldest live slot.
    pub(crate) fn oldest(&self) -> Option<u32> {
        (self.oldest != NONE).then_some(self.oldest)
    }

    /// The next older live slot than `index`.
    pub(crate) fn older(&self, index: u32) -> Option<u32> {
        let p = self.slots[index as usize].prev;
        (p != NONE).then_some(p)
    }

    /// The next newer live slot than `index`.
    pub(crate) fn newer(&self, index: u32) -> Option<u32> {
        let n = self.slots[index as usize].next;
        (n != NONE).then_some(n)
    }

    /// Live slot indices, oldest first.
    pub(crate) fn iter_oldest_first(&self) -> impl Iterator<Item = u32> + '_ {
        core::iter::successors(self.oldest(), move |&i| self.newer(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_reuse_bumps_generation() {
        let mut t: Table<u32, 2> = Table::new(ObjectKind::Queue);
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
        assert_eq!(t.get(RawHandle::pack(ObjectKind::Queue, 0, 7)).unwrap_err().code, ErrorCode::InvalidHandle);
        assert_eq!(t.get(RawHandle::pack(ObjectKind::Event, 0, 1)).unwrap_err().code, ErrorCode::InvalidHandle);
    }

    #[test]
    fn free_slots_are_reused_oldest_freed_first() {
        let mut t: Table<u32, 3> = Table::new(ObjectKind::Queue);
        let hs: heapless::Vec<RawHandle, 3> = (0..3).map(|v| t.insert(v).unwrap()).collect();
        t.remove(hs[1]).unwrap();
        t.remove(hs[0]).unwrap();
        assert_eq!(t.insert(7).unwrap().index(), hs[1].index());
        assert_eq!(t.insert(8).unwrap().index(), hs[0].index());
        assert!(t.is_full());
    }

    #[test]
    fn a_slot_at_the_end_of_its_generations_is_retired_never_wrapped() {
        let mut t: Table<u32, 2> = Table::new(ObjectKind::Event);
        t.age_free_slots(u32::MAX - 1);
        let mut seen: heapless::Vec<RawHandle, 8> = heapless::Vec::new();
        // Two slots, two generations each (MAX-1 and MAX): four objects in all.
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
        let mut t: Table<u32, 8> = Table::new(ObjectKind::Event);
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
