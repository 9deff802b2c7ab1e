//! The lifecycle state machine, kept in one atomic word (as `spin::Once` keeps its states).
//!
//! The word holds the phase, the init reference count and a writer flag. Calls in flight are
//! counted apart from it: with `std`, in a counter per thread (`slots.rs`: each thread writes only
//! its own, with a plain store); otherwise, and for threads beyond the slots, in `SHARDS`
//! cache-line-sized counters picked by a hash of the caller's stack address.
//!
//! A call that only reads the tables enters *shared*: it increments its counter, then loads the
//! word, and goes on only if the phase is `Ready` with no writer (else it decrements and fails
//! or waits). A call that creates or destroys objects enters *exclusive*: it sets the writer flag,
//! then waits until every counter is zero. The final shutdown switches the phase to
//! `ShuttingDown`, then waits the same way. "Increment, then load the word" against "change the
//! word, then load the counters" is a Dekker handshake: either the call sees the new word and
//! backs off, or the writer sees the call's increment and waits for it. For the hashed shards it
//! holds because every access is `SeqCst` (one total order); for the per-thread counters the
//! reader's side is a compiler fence and the writer's a process-wide barrier (`membarrier`), or
//! `SeqCst` fences on both sides where that is missing (`slots.rs` gives the argument).
//!
//! Init references are counted in the word and, with `std`, in each thread's slot (see `Word`):
//! a nested `init` or `shutdown` changes only the calling thread's slot, inside a *reference
//! section* entered by the same handshake against a separate counting flag. A shutdown that cannot
//! tell whether it drops the last reference sets that flag, waits out the reference sections
//! (never a call), and counts everything; only it can take the word's count to zero. Depends on
//! `sync`, `slots`, `reentry` and `error`.
//!
//! Files: this one holds the word, the phases and the init/shutdown protocol; `refs.rs` the
//! references kept in threads' slots; `calls.rs` entering calls and the fork hooks.

use crate::error::{Error, ErrorCode, Result, fail};
use crate::reentry::in_callback;
use crate::sync::{AtomicU32, Ordering, relax};

mod calls;
mod refs;

/// Orders a write before the following read for loom. loom models `SeqCst` accesses as
/// `AcqRel`, under which "write one location, then read another" (both sides of the handshake
/// above) may see stale values; the C++ model's single total order of `SeqCst` operations rules
/// that out, and real builds rely on it. Under loom the same order is written with `SeqCst`
/// fences, the fence form of the same handshake, which loom models exactly. Miri's weak-memory
/// emulation (in the nightlies before its 2026-06 fix for `SeqCst` accesses, rust-lang/miri#5104)
/// also lets both sides read stale values there, which C++20 forbids; under Miri the fences are
/// there too, so that it checks the rest of the code against the handshake real builds have.
#[inline(always)]
fn handshake_fence() {
    #[cfg(loom)]
    loom::sync::atomic::fence(Ordering::SeqCst);
    #[cfg(all(miri, not(loom)))]
    core::sync::atomic::fence(Ordering::SeqCst);
}

/// Hashed counters of calls in flight; a power of two.
const SHARDS: usize = 16;

/// One shard of the in-flight count, alone on its cache line.
#[repr(align(64))]
struct Shard(AtomicU32);

/// One thread's counters (`slots::mine`), alone on a cache line that only that thread writes
/// (and a writer holding the gate, while the thread is kept out).
#[cfg(any(feature = "std", loom))]
#[repr(align(64))]
struct Slot {
    /// Calls in flight on this thread.
    calls: AtomicU32,
    /// 1 while this thread changes `refs` (its reference section).
    busy: AtomicU32,
    /// Init references counted here instead of in the word.
    refs: AtomicU32,
}

#[cfg(any(feature = "std", loom))]
const MASK_WORDS: usize = crate::slots::SLOTS.div_ceil(32);

/// References one slot holds before its thread's nested inits take the general path.
#[cfg(any(feature = "std", loom))]
const LOCAL_REFS: u32 = 1 << 20;
/// What all slots together can hold.
#[cfg(any(feature = "std", loom))]
const SLOT_REFS_BOUND: u32 = LOCAL_REFS * crate::slots::SLOTS as u32;

/// The shard of the calling thread: a hash of an address on its stack. Threads have distinct
/// stacks, so they mostly land on distinct shards; a collision only shares a counter.
#[inline]
fn shard_index() -> usize {
    let marker = 0u8;
    let addr = core::ptr::addr_of!(marker) as usize;
    ((addr >> 12).wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize) >> (usize::BITS - 4)) & (SHARDS - 1)
}

/// The phase of the lifecycle.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Not initialised: only `init` does anything.
    Uninit = 0,
    /// A thread is initialising the backends; other lifecycle calls wait.
    Initializing = 1,
    /// Initialised, with at least one init reference.
    Ready = 2,
    /// The final shutdown is draining calls and tearing down; other lifecycle calls wait.
    ShuttingDown = 3,
}

/// A snapshot of the lifecycle state as a user sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Not initialised.
    Uninit,
    /// Initialisation in progress.
    Initializing,
    /// Ready, with this many init references (at least 1).
    Ready(u32),
    /// The final shutdown is in progress.
    ShuttingDown,
}

const WRITER: u32 = 1;
const PHASE_SHIFT: u32 = 1;
const PHASE_MASK: u32 = 0b11 << PHASE_SHIFT;
/// A shutdown is counting the references (word and slots) to tell whether it drops the last.
const COUNTING: u32 = 1 << 3;
const REFS_SHIFT: u32 = 4;
const REFS_MASK: u32 = u32::MAX >> REFS_SHIFT;
/// The largest number of init references (2^28 − 1: the word's field has 28 bits, see `Word`).
pub const MAX_REFS: u32 = (1 << 28) - 1;

/// A decoded lifecycle word: bit 0 the writer flag, bits 1-2 the phase, bit 3 the counting flag,
/// bits 4-31 the init references it holds. 32 bits, so the core needs only 32-bit atomics (Cortex-M, RISC-V 32).
///
/// With per-thread slots (`std`), a thread's nested references are counted in its own slot
/// instead (`Slot::refs`): the references held are the word's plus every slot's. A slot changes
/// only inside its thread's reference section (`Slot::busy`, entered like a shared call but
/// against the counting flag instead of the writer flag), and the word only by compare-and-swap
/// (so it never holds a value that is taken back later). The word's count drops to 0 only under
/// the counting flag, after every reference section has left and every slot was read: the one
/// place that can tell the last reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Word(u32);

impl Word {
    #[inline]
    fn phase(self) -> Phase {
        match (self.0 & PHASE_MASK) >> PHASE_SHIFT {
            0 => Phase::Uninit,
            1 => Phase::Initializing,
            2 => Phase::Ready,
            _ => Phase::ShuttingDown,
        }
    }
    #[inline]
    fn refs(self) -> u32 {
        self.0 >> REFS_SHIFT
    }
    #[inline]
    fn writer(self) -> bool {
        self.0 & WRITER != 0
    }
    #[inline]
    fn counting(self) -> bool {
        self.0 & COUNTING != 0
    }
    /// The same flags with a new phase and reference count.
    #[inline]
    fn with(self, phase: Phase, refs: u32) -> Self {
        Self((self.0 & (WRITER | COUNTING)) | ((phase as u32) << PHASE_SHIFT) | ((refs & REFS_MASK) << REFS_SHIFT))
    }
}

/// What the caller of `Gate::begin_init` must do next.
pub(crate) enum InitStep {
    /// Another reference was taken; nothing else to do.
    Referenced,
    /// The caller moved the gate to `Initializing` and must call `finish_init`.
    MustInitialize,
}

/// What the caller of `Gate::begin_shutdown` must do next.
pub(crate) enum ShutdownStep {
    /// A reference was dropped; this many remain.
    Released(u32),
    /// The caller moved the gate to `ShuttingDown`, every call has drained, and it must tear
    /// down and then call `finish_shutdown`.
    MustTearDown,
}

/// The lifecycle word and the in-flight shards, with typed operations only.
pub(crate) struct Gate {
    word: AtomicU32,
    shards: [Shard; SHARDS],
    /// One pair of counters per thread slot (`slots::mine`), written by its owner only.
    #[cfg(any(feature = "std", loom))]
    slots: [Slot; crate::slots::SLOTS],
    /// Slots whose `refs` may be non-zero (a bit is set before a slot's first reference and
    /// cleared only by a writer that zeroed it), so that a count reads only those.
    #[cfg(any(feature = "std", loom))]
    ref_mask: [AtomicU32; MASK_WORDS],
    /// Final teardowns (and forks) so far: the references taken in one epoch all end with it,
    /// so a holder that remembers the epoch it took its reference in can tell whether that
    /// reference still exists (`Runtime::epoch`).
    epoch: AtomicU32,
}

impl Gate {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
            shards: [const { Shard(AtomicU32::new(0)) }; SHARDS],
            #[cfg(feature = "std")]
            slots: [const { Slot { calls: AtomicU32::new(0), busy: AtomicU32::new(0), refs: AtomicU32::new(0) } };
                crate::slots::SLOTS],
            #[cfg(feature = "std")]
            ref_mask: [const { AtomicU32::new(0) }; MASK_WORDS],
            epoch: AtomicU32::new(0),
        }
    }
    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
            shards: core::array::from_fn(|_| Shard(AtomicU32::new(0))),
            slots: core::array::from_fn(|_| Slot {
                calls: AtomicU32::new(0),
                busy: AtomicU32::new(0),
                refs: AtomicU32::new(0),
            }),
            ref_mask: core::array::from_fn(|_| AtomicU32::new(0)),
            epoch: AtomicU32::new(0),
        }
    }

    #[inline]
    fn load(&self) -> Word {
        Word(self.word.load(Ordering::SeqCst))
    }

    #[inline]
    fn cas(&self, old: Word, new: Word) -> bool {
        self.word.compare_exchange(old.0, new.0, Ordering::SeqCst, Ordering::SeqCst).is_ok()
    }

    /// The counters of calls in flight: the hashed shards and the per-thread slots.
    fn counters(&self) -> impl Iterator<Item = &AtomicU32> {
        let shards = self.shards.iter().map(|s| &s.0);
        #[cfg(any(feature = "std", loom))]
        let shards = shards.chain(self.slots.iter().map(|s| &s.calls));
        shards
    }

    /// Whether any call is in flight. The first look after a change of the word must follow
    /// `writer_barrier()` (see the module docs); later looks only wait for counts to drop.
    fn calls_in_flight(&self) -> bool {
        self.counters().any(|c| c.load(Ordering::SeqCst) != 0)
    }

    /// The writer's side of the handshake, after it changed the word: with per-thread counters
    /// the asymmetric barrier (`slots::heavy`, which ends with a `SeqCst` fence); without them
    /// the hashed shards' `SeqCst` accesses need no more, except under loom (`handshake_fence`).
    fn writer_barrier(&self) {
        #[cfg(any(feature = "std", loom))]
        crate::slots::heavy();
        #[cfg(not(any(feature = "std", loom)))]
        handshake_fence();
    }

    /// The references counted in thread slots right now (0 without slots). Exact under the
    /// writer flag with no call in flight; otherwise a snapshot of counts other threads may be
    /// changing.
    #[inline]
    fn slot_refs(&self) -> u32 {
        #[cfg(any(feature = "std", loom))]
        {
            let mut sum = 0u32;
            for (w, bits) in self.ref_mask.iter().enumerate() {
                let mut bits = bits.load(Ordering::Acquire);
                while bits != 0 {
                    let index = w * 32 + bits.trailing_zeros() as usize;
                    sum = sum.saturating_add(self.slots[index].refs.load(Ordering::Relaxed));
                    bits &= bits - 1;
                }
            }
            sum
        }
        #[cfg(not(any(feature = "std", loom)))]
        0
    }

    /// Whether the gate is `Ready` (one load of the word: `state` also counts references).
    #[inline]
    pub(crate) fn is_ready(&self) -> bool {
        self.load().phase() == Phase::Ready
    }

    pub(crate) fn state(&self) -> State {
        let w = self.load();
        match w.phase() {
            Phase::Uninit => State::Uninit,
            Phase::Initializing => State::Initializing,
            // A writer moving references between the slots and the word may be seen half-way
            // (the word first, so the count is never too low); `Ready` holds at least one.
            Phase::Ready => State::Ready(w.refs().saturating_add(self.slot_refs()).max(1)),
            Phase::ShuttingDown => State::ShuttingDown,
        }
    }

    /// The number of final teardowns (and forks) so far (`Runtime::epoch`).
    #[inline]
    pub(crate) fn epoch(&self) -> u32 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Takes an init reference, or moves `Uninit` → `Initializing` for the caller to initialise
    /// (`only_if_ready`: `Uninitialized` instead). Waits while another thread initialises,
    /// shuts down or counts references. From inside a host kernel or teardown observer, a wait
    /// for a transition (which may be waiting for the callback) fails with `Busy` instead.
    pub(crate) fn begin_init(&self, only_if_ready: bool) -> Result<InitStep> {
        loop {
            let w = self.load();
            match w.phase() {
                // A writer in `Uninit` is a `fork` in progress (see `fork_prepare`).
                Phase::Uninit if w.writer() => relax(),
                Phase::Uninit if only_if_ready => return Err(Error::UNINITIALIZED),
                Phase::Uninit => {
                    if self.cas(w, w.with(Phase::Initializing, 0)) {
                        return Ok(InitStep::MustInitialize);
                    }
                }
                // Counting waits only for reference sections, which never wait: a short wait.
                Phase::Ready if w.counting() => relax(),
                Phase::Ready => {
                    if w.refs().saturating_add(self.slot_refs()) >= MAX_REFS {
                        return fail(ErrorCode::OutOfResources, "init reference count would overflow");
                    }
                    if self.cas(w, w.with(Phase::Ready, w.refs() + 1)) {
                        return Ok(InitStep::Referenced);
                    }
                }
                Phase::Initializing | Phase::ShuttingDown if in_callback() => return Err(Error::REENTRANT),
                Phase::Initializing | Phase::ShuttingDown => relax(),
            }
        }
    }

    /// Ends an initialisation begun by `begin_init`: `Ready(1)` on success, `Uninit` on failure.
    pub(crate) fn finish_init(&self, ok: bool) {
        if ok { self.set_phase(Phase::Ready, 1) } else { self.set_phase(Phase::Uninit, 0) }
    }

    /// Moves to `phase` with `refs` references in the word (the flags are kept).
    fn set_phase(&self, phase: Phase, refs: u32) {
        let mut w = self.load();
        while !self.cas(w, w.with(phase, refs)) {
            w = self.load();
        }
    }

    /// Drops an init reference (`all`: every one) in the general path: sets the counting flag,
    /// waits until no thread is inside its reference section, and counts the references, word
    /// and slots. Unless it is the last one (or `all`), it drops one, moving every slot's
    /// references into the word while they fit (so later shutdowns take the fast path). For the
    /// last one it moves to `ShuttingDown` and waits until no call is in flight and no writer
    /// holds the gate, for the caller to tear down. `Uninitialized` when there is no reference.
    ///
    /// While it waits for calls in flight it asks `patience` before each wait; when that says
    /// `false`, every reference is given back (`Ready` again, nothing torn down) and the result
    /// is `Busy`. From inside a host kernel or teardown observer, the final shutdown (which would
    /// wait for the callback's own call) and any wait for a transition fail with `Busy`.
    pub(crate) fn begin_shutdown(&self, patience: &mut dyn FnMut() -> bool, all: bool) -> Result<ShutdownStep> {
        loop {
            let w = self.load();
            match w.phase() {
                Phase::Uninit => return Err(Error::UNINITIALIZED),
                Phase::Ready if w.counting() => relax(),
                Phase::Ready => {
                    if !self.cas(w, Word(w.0 | COUNTING)) {
                        continue;
                    }
                    #[cfg(any(feature = "std", loom))]
                    {
                        self.writer_barrier();
                        while self.counting_in_flight() {
                            relax();
                        }
                    }
                    // Every count is still now, and only this thread changes the word.
                    let w = self.load();
                    let total = w.refs().saturating_add(self.slot_refs());
                    if !all && total > 1 {
                        return Ok(ShutdownStep::Released(self.drop_one_of_many(w, total)));
                    }
                    if in_callback() {
                        self.word.fetch_and(!COUNTING, Ordering::Release);
                        return Err(Error::REENTRANT);
                    }
                    self.clear_slot_refs();
                    self.set_phase_clearing_counting(Phase::ShuttingDown, 0);
                    self.writer_barrier();
                    while self.load().writer() || self.calls_in_flight() {
                        if !patience() {
                            // Every reference back, in the word.
                            self.set_phase(Phase::Ready, total.min(MAX_REFS));
                            return fail(
                                ErrorCode::Busy,
                                "calls in flight did not return in time; nothing was torn down",
                            );
                        }
                        relax();
                    }
                    return Ok(ShutdownStep::MustTearDown);
                }
                Phase::Initializing | Phase::ShuttingDown if in_callback() => return Err(Error::REENTRANT),
                Phase::Initializing | Phase::ShuttingDown => relax(),
            }
        }
    }

    /// Moves to `phase` with `refs` references and the counting flag cleared (the writer flag
    /// is kept: an exclusive call may hold it).
    fn set_phase_clearing_counting(&self, phase: Phase, refs: u32) {
        let mut w = self.load();
        while !self.cas(w, Word(w.with(phase, refs).0 & !COUNTING)) {
            w = self.load();
        }
    }

    /// Drops one of `total` (at least 2) references while counting (no reference section in
    /// flight; `w` is the word, which only this thread changes but for the writer flag), then
    /// clears the counting flag. Returns how many are left.
    fn drop_one_of_many(&self, w: Word, total: u32) -> u32 {
        let left = total - 1;
        if left <= MAX_REFS {
            // Every reference into the word (so that later shutdowns take a fast path), written
            // before the slots are cleared, so that a count seen half-way is never too low.
            self.set_phase(Phase::Ready, left);
            self.clear_slot_refs();
        } else if w.refs() > 0 {
            self.set_phase(Phase::Ready, w.refs() - 1);
        } else {
            // More than `MAX_REFS` references, all in slots (threads racing past the limit).
            #[cfg(any(feature = "std", loom))]
            if let Some(slot) = self.slots.iter().find(|s| s.refs.load(Ordering::Relaxed) > 0) {
                slot.refs.store(slot.refs.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
            }
        }
        self.word.fetch_and(!COUNTING, Ordering::Release);
        left
    }

    /// Zeroes every slot's references and the mask (while counting with no reference section
    /// in flight, or in a forked child).
    fn clear_slot_refs(&self) {
        #[cfg(any(feature = "std", loom))]
        {
            for slot in &self.slots {
                slot.refs.store(0, Ordering::Relaxed);
            }
            for bits in &self.ref_mask {
                bits.store(0, Ordering::Relaxed);
            }
        }
    }

    /// Ends a teardown begun by `begin_shutdown`: a new epoch, then `Uninit` (so a later init's
    /// references are seen in the new epoch).
    pub(crate) fn finish_shutdown(&self) {
        self.epoch.fetch_add(1, Ordering::Release);
        self.set_phase(Phase::Uninit, 0);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn word_fields_are_independent() {
        let w = Word(WRITER).with(Phase::Ready, MAX_REFS);
        assert_eq!((w.phase(), w.refs(), w.writer()), (Phase::Ready, MAX_REFS, true));
        let w = w.with(Phase::ShuttingDown, 0);
        assert_eq!((w.phase(), w.refs(), w.writer()), (Phase::ShuttingDown, 0, true));
    }

    #[test]
    fn calls_outside_ready_are_turned_away_and_leave_no_trace() {
        let g = Gate::new();
        assert_eq!(g.enter_shared().err(), Some(Error::UNINITIALIZED));
        assert_eq!(g.enter_exclusive().err().map(|e| e.code), Some(ErrorCode::Uninitialized));
        assert_eq!(g.load().0, 0);
        assert!(!g.calls_in_flight());
    }

    #[test]
    fn refcount_overflow_is_out_of_resources() {
        let g = Gate::new();
        g.word.store(Word(0).with(Phase::Ready, MAX_REFS).0, Ordering::Relaxed);
        assert_eq!(g.begin_init(false).err().map(|e| e.code), Some(ErrorCode::OutOfResources));
        assert_eq!(g.state(), State::Ready(MAX_REFS));
    }
}
