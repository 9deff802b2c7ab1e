//! Init references held apart from the lifecycle word: each thread's reference section, and the
//! fast paths of a nested init (`try_add_reference`) and a nested shutdown
//! (`try_drop_reference`). Part of the gate (`lifecycle/mod.rs`), whose handshake it uses.
//! Depends on `lifecycle/mod.rs` (the word and the gate) and `slots`; init and shutdown
//! (`lifecycle/mod.rs`) depend on it.

use super::*;

impl Gate {
    /// Enters the calling thread's reference section (`Some`, with the word it saw), or `None`
    /// when the gate is not `Ready` or a shutdown is counting references (nothing changed then).
    /// The slot's `refs` may be changed until `leave_refs`. The same handshake as a shared call,
    /// against the counting flag.
    #[cfg(any(feature = "std", loom))]
    #[inline(always)]
    pub(super) fn enter_refs(&self, slot: &Slot, asymmetric: bool) -> Option<Word> {
        slot.busy.store(1, Ordering::Relaxed);
        crate::slots::light(asymmetric);
        let w = self.load();
        if w.phase() == Phase::Ready && !w.counting() {
            return Some(w);
        }
        slot.busy.store(0, Ordering::Release);
        None
    }

    #[cfg(any(feature = "std", loom))]
    #[inline(always)]
    pub(super) fn leave_refs(slot: &Slot) {
        slot.busy.store(0, Ordering::Release);
    }

    /// Whether a thread is inside its reference section.
    #[cfg(any(feature = "std", loom))]
    pub(super) fn counting_in_flight(&self) -> bool {
        self.slots.iter().any(|s| s.busy.load(Ordering::SeqCst) != 0)
    }

    /// Takes another reference when already `Ready` (the nested-init fast path): in the calling
    /// thread's slot (no read-modify-write), or with one compare-and-swap on the word; `false`
    /// when the caller must take the general path (nothing changed).
    #[inline(always)]
    pub(crate) fn try_add_reference(&self) -> bool {
        #[cfg(any(feature = "std", loom))]
        if let Some(mine) = crate::slots::mine() {
            let (index, slot) = (mine.index, &self.slots[mine.index]);
            let Some(w) = self.enter_refs(slot, mine.asymmetric) else { return false };
            let r = slot.refs.load(Ordering::Relaxed);
            // Without adding the slots up: below these bounds the total stays within MAX_REFS
            // whatever the other slots hold; past them the general path counts exactly.
            let ok = r < LOCAL_REFS && w.refs() < MAX_REFS - SLOT_REFS_BOUND;
            if ok {
                if r == 0 {
                    self.mark_slot_referenced(index);
                }
                slot.refs.store(r + 1, Ordering::Relaxed);
            }
            Self::leave_refs(slot);
            return ok;
        }
        let w = self.load();
        w.phase() == Phase::Ready
            && !w.counting()
            && w.refs().saturating_add(self.slot_refs()) < MAX_REFS
            && self.cas(w, w.with(Phase::Ready, w.refs() + 1))
    }

    /// Sets slot `index`'s bit in the reference mask (before its first reference is stored).
    #[cfg(any(feature = "std", loom))]
    #[inline]
    pub(super) fn mark_slot_referenced(&self, index: usize) {
        let (word, bit) = (&self.ref_mask[index / 32], 1u32 << (index % 32));
        if word.load(Ordering::Relaxed) & bit == 0 {
            word.fetch_or(bit, Ordering::Release);
        }
    }

    /// Drops a reference that is certainly not the last one (the nested-shutdown fast path):
    /// from the calling thread's slot when it holds one there and another reference is known
    /// to stay (a second one in the slot, or one in the word, which drops to 0 only under the
    /// counting flag), or by compare-and-swap on a word holding two or more. Returns the count
    /// left (a snapshot while other threads change theirs); `None` when the caller must take
    /// the general path (nothing changed).
    #[inline(always)]
    pub(crate) fn try_drop_reference(&self) -> Option<u32> {
        #[cfg(any(feature = "std", loom))]
        if let Some(mine) = crate::slots::mine() {
            let slot = &self.slots[mine.index];
            // Only a counting shutdown changes another thread's slot, and only to move its
            // references to the word: re-read inside the section.
            if slot.refs.load(Ordering::Relaxed) > 0 {
                let w = self.enter_refs(slot, mine.asymmetric)?;
                let r = slot.refs.load(Ordering::Relaxed);
                let ok = r >= 2 || (r == 1 && w.refs() >= 1);
                let left = ok.then(|| {
                    slot.refs.store(r - 1, Ordering::Relaxed);
                    w.refs().saturating_add(self.slot_refs())
                });
                Self::leave_refs(slot);
                if left.is_some() || r > 0 {
                    return left;
                }
            }
        }
        let w = self.load();
        if w.phase() == Phase::Ready
            && !w.counting()
            && w.refs() >= 2
            && self.cas(w, w.with(Phase::Ready, w.refs() - 1))
        {
            return Some((w.refs() - 1).saturating_add(self.slot_refs()));
        }
        None
    }
}
