//! `table.rs`'s unit tests.

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

/// `forget_all` releases every live entry (their handles stale) and leaves a table that works:
/// every slot takes an entry again, the order walk sees only the new ones.
#[test]
fn forget_all_makes_every_handle_stale_and_every_slot_usable() {
    let mut t: Table<u32, 4, E> = Table::new();
    t.set_owner(1);
    let hs: heapless::Vec<RawHandle, 4> = (0..3).map(|v| t.insert(v).unwrap()).collect();
    t.remove(hs[1]).unwrap();
    t.forget_all();
    assert_eq!(t.len(), 0);
    assert_eq!(t.newest(), None);
    for h in &hs {
        assert_eq!(t.get(*h).unwrap_err().code, ErrorCode::InvalidHandle);
    }
    let again: heapless::Vec<RawHandle, 4> = (10..14).map(|v| t.insert(v).unwrap()).collect();
    assert!(t.is_full());
    assert!(again.iter().all(|h| !hs.contains(h)));
    let order: heapless::Vec<u32, 4> = t.iter_oldest_first().map(|i| *t.at(i)).collect();
    assert_eq!(&order[..], &[10, 11, 12, 13]);
}

/// A table caught half-way through a change (what a forked child may inherit from a thread of
/// the parent, or a teardown that panicked): an insert that set its slot's tag but did not link
/// it, a removal that unlinked its slot but did not clear the tag. `forget_all` follows no link:
/// both slots' handles go stale, and every slot is free again.
#[test]
fn forget_all_of_a_table_caught_half_way_through_a_change() {
    let mut t: Table<u32, 4, E> = Table::new();
    t.set_owner(1);
    let a = t.insert(1).unwrap();
    let b = t.insert(2).unwrap();
    let c = t.insert(3).unwrap();
    // `b` half removed: unlinked from its neighbours, counted out, still tagged live.
    let (ia, ic) = (t.resolve(a).unwrap(), t.resolve(c).unwrap());
    t.slots[ia as usize].next = link(ic);
    t.slots[ic as usize].prev = link(ia);
    t.len -= 1;
    // Slot 3 half inserted: its value and tag written, not linked, not counted.
    t.high_water = 4;
    t.slots[3].value.write(4);
    t.slots[3].tag = t.slots[ia as usize].tag;
    let d = t.handle_of(3);
    assert_eq!(*t.get(d).unwrap(), 4, "the half-inserted entry resolves before the reset");
    t.forget_all();
    assert_eq!(t.len(), 0);
    for h in [a, b, c, d] {
        assert_eq!(t.get(h).unwrap_err().code, ErrorCode::InvalidHandle);
    }
    for v in 0..4 {
        t.insert(v).unwrap();
    }
    assert!(t.is_full());
    assert_eq!(t.iter_oldest_first().count(), 4);
}

/// A free slot at its last generation cannot be told apart from a retired one without the free
/// list: `forget_all` retires it, so no generation is ever handed out twice.
#[test]
fn forget_all_retires_a_free_slot_at_its_last_generation() {
    let mut t: Table<u32, 2, E> = Table::new();
    t.age_free_slots(MAX_GENERATION);
    t.forget_all();
    assert!(t.is_full(), "both slots at MAX_GENERATION, free: retired");
    assert_eq!(t.insert(1), Err(1));
}
