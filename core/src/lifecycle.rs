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
//! `SeqCst` fences on both sides where that is missing (`slots.rs` gives the argument). Depends on
//! `sync`, `slots`, `reentry` and `error`.

use crate::error::{Error, ErrorCode, Result, fail};
use crate::reentry::in_callback;
use crate::sync::{AtomicU32, Ordering, relax};

/// Orders a write before the following read for loom. loom models `SeqCst` accesses as
/// `AcqRel`, under which "write one location, then read another" (both sides of the handshake
/// above) may see stale values; the C++ model's single total order of `SeqCst` operations rules
/// that out, and real builds rely on it. Under loom the same order is written with `SeqCst`
/// fences, the fence form of the same handshake, which loom models exactly.
#[inline(always)]
fn handshake_fence() {
    #[cfg(loom)]
    loom::sync::atomic::fence(Ordering::SeqCst);
}

/// Hashed counters of calls in flight; a power of two.
const SHARDS: usize = 16;

/// One shard of the in-flight count, alone on its cache line.
#[repr(align(64))]
struct Shard(AtomicU32);

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
const REFS_SHIFT: u32 = 3;
const REFS_MASK: u32 = u32::MAX >> REFS_SHIFT;
/// One init reference, as an amount to add to the word.
const ONE_REF: u32 = 1 << REFS_SHIFT;
/// The largest number of init references (2^28 − 1; the field has 29 bits, see `Word`).
pub const MAX_REFS: u32 = (1 << 28) - 1;

/// A decoded lifecycle word: bit 0 the writer flag, bits 1-2 the phase, bits 3-31 the init
/// references. 32 bits, so the core needs only 32-bit atomics (Cortex-M, RISC-V 32).
///
/// The nested init and shutdown fast paths are one atomic add or subtract each: they change the
/// reference field first and take the change back when the old word shows it was not theirs to
/// make (not `Ready`, the last reference, the limit). So the field is the references held plus
/// the fast-path attempts not yet taken back, and every other change of the word adjusts the
/// field by a difference, never writing an absolute count. Attempts are taken back at once, so
/// a `Ready` field of 0 or above `MAX_REFS` (an attempt below zero, wrapped) is momentary: the
/// final-shutdown decision waits it out.
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
    /// The same writer flag with a new phase and reference count.
    #[inline]
    fn with(self, phase: Phase, refs: u32) -> Self {
        Self((self.0 & WRITER) | ((phase as u32) << PHASE_SHIFT) | ((refs & REFS_MASK) << REFS_SHIFT))
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
    /// One counter per thread slot (`slots::mine`), written by its owner only.
    #[cfg(any(feature = "std", loom))]
    slots: [Shard; crate::slots::SLOTS],
}

impl Gate {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
            shards: [const { Shard(AtomicU32::new(0)) }; SHARDS],
            #[cfg(feature = "std")]
            slots: [const { Shard(AtomicU32::new(0)) }; crate::slots::SLOTS],
        }
    }
    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
            shards: core::array::from_fn(|_| Shard(AtomicU32::new(0))),
            slots: core::array::from_fn(|_| Shard(AtomicU32::new(0))),
        }
    }

    #[inline]
    fn load(&self) -> Word {
        Word(self.word.load(Ordering::SeqCst))
    }

    #[inline]
    fn cas(&self, old: Word, new: Word) -> bool {
        self.word.compare_exchange_weak(old.0, new.0, Ordering::SeqCst, Ordering::SeqCst).is_ok()
    }

    /// The counters of calls in flight: the hashed shards and the per-thread slots.
    fn counters(&self) -> impl Iterator<Item = &AtomicU32> {
        let shards = self.shards.iter();
        #[cfg(any(feature = "std", loom))]
        let shards = shards.chain(self.slots.iter());
        shards.map(|s| &s.0)
    }

    /// Whether any call is in flight. The first look after a change of the word must follow
    /// `slots::heavy()` (see the module docs); later looks only wait for counts to drop.
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

    pub(crate) fn state(&self) -> State {
        loop {
            let w = self.load();
            return match w.phase() {
                Phase::Uninit => State::Uninit,
                Phase::Initializing => State::Initializing,
                // A fast-path attempt is being taken back (a few instructions): read again.
                Phase::Ready if w.refs() == 0 || w.refs() > MAX_REFS => {
                    core::hint::spin_loop();
                    continue;
                }
                Phase::Ready => State::Ready(w.refs()),
                Phase::ShuttingDown => State::ShuttingDown,
            };
        }
    }

    /// Takes another reference when already `Ready` (the nested-init fast path: one atomic add);
    /// `false` when the caller must take the general path (the add was taken back).
    #[inline]
    pub(crate) fn try_add_reference(&self) -> bool {
        let old = Word(self.word.fetch_add(ONE_REF, Ordering::SeqCst));
        if old.phase() == Phase::Ready && old.refs() != 0 && old.refs() < MAX_REFS {
            return true;
        }
        self.word.fetch_sub(ONE_REF, Ordering::SeqCst);
        false
    }

    /// Drops a reference that is not the last one (the nested-shutdown fast path: one atomic
    /// subtract); `None` when the caller must take the general path (the subtract was taken back).
    #[inline]
    pub(crate) fn try_drop_reference(&self) -> Option<u32> {
        let old = Word(self.word.fetch_sub(ONE_REF, Ordering::SeqCst));
        if old.phase() == Phase::Ready && old.refs() > 1 && old.refs() <= MAX_REFS {
            return Some(old.refs() - 1);
        }
        self.word.fetch_add(ONE_REF, Ordering::SeqCst);
        None
    }

    /// Takes an init reference, or moves `Uninit` → `Initializing` for the caller to initialise.
    /// Waits while another thread initialises or shuts down.
    /// From inside a host kernel or teardown observer, a wait (for the transition that runs the
    /// callback) fails with `Busy` instead.
    pub(crate) fn begin_init(&self) -> Result<InitStep> {
        loop {
            let w = self.load();
            match w.phase() {
                // A writer in `Uninit` is a `fork` in progress (see `fork_prepare`).
                Phase::Uninit if w.writer() => relax(),
                Phase::Uninit => {
                    if self.cas(w, w.with(Phase::Initializing, w.refs())) {
                        return Ok(InitStep::MustInitialize);
                    }
                }
                Phase::Ready => {
                    if w.refs() >= MAX_REFS {
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

    /// Moves to `phase`, adding `add_refs` references (the field keeps attempts in progress).
    fn set_phase(&self, phase: Phase, add_refs: u32) {
        let mut w = self.load();
        while !self.cas(w, w.with(phase, w.refs().wrapping_add(add_refs))) {
            w = self.load();
        }
    }

    /// Drops an init reference; for the last one, moves to `ShuttingDown` and waits until every
    /// call in flight has returned. `Uninitialized` when there is no reference to drop.
    ///
    /// While it waits for calls in flight it asks `patience` before each wait; when that says
    /// `false`, the reference is given back (`Ready(1)` again, nothing torn down) and the result
    /// is `Busy`. From inside a host kernel or teardown observer, the final shutdown (which would
    /// wait for the callback's own call) and any wait fail with `Busy`.
    pub(crate) fn begin_shutdown(&self, patience: &mut dyn FnMut() -> bool) -> Result<ShutdownStep> {
        loop {
            let w = self.load();
            match w.phase() {
                Phase::Uninit => return Err(Error::UNINITIALIZED),
                // Another thread's attempt is being taken back: only then is the count right.
                Phase::Ready if w.refs() == 0 || w.refs() > MAX_REFS => relax(),
                Phase::Ready if w.refs() > 1 => {
                    if self.cas(w, w.with(Phase::Ready, w.refs() - 1)) {
                        return Ok(ShutdownStep::Released(w.refs() - 1));
                    }
                }
                Phase::Ready if in_callback() => return Err(Error::REENTRANT),
                Phase::Ready => {
                    if self.cas(w, w.with(Phase::ShuttingDown, w.refs() - 1)) {
                        self.writer_barrier();
                        while self.load().writer() || self.calls_in_flight() {
                            if !patience() {
                                self.set_phase(Phase::Ready, 1);
                                return fail(
                                    ErrorCode::Busy,
                                    "calls in flight did not return in time; nothing was torn down",
                                );
                            }
                            relax();
                        }
                        return Ok(ShutdownStep::MustTearDown);
                    }
                }
                Phase::Initializing | Phase::ShuttingDown if in_callback() => return Err(Error::REENTRANT),
                Phase::Initializing | Phase::ShuttingDown => relax(),
            }
        }
    }

    /// Ends a teardown begun by `begin_shutdown`.
    pub(crate) fn finish_shutdown(&self) {
        self.set_phase(Phase::Uninit, 0);
    }

    /// Enters a call that reads the tables. Waits while a writer holds the gate.
    #[inline(always)]
    pub(crate) fn enter_shared(&self) -> Result<SharedGuard<'_>> {
        #[cfg(any(feature = "std", loom))]
        if let Some(index) = crate::slots::mine() {
            // The calling thread's own counter: a plain load and store (no other thread writes
            // it), then the reader's side of the asymmetric barrier.
            let count = &self.slots[index].0;
            let n = count.load(Ordering::Relaxed);
            count.store(n.wrapping_add(1), Ordering::Relaxed);
            crate::slots::light(crate::slots::asymmetric());
            let w = self.load();
            if w.phase() == Phase::Ready && !w.writer() {
                return Ok(SharedGuard { count, owned: true });
            }
            count.store(n, Ordering::Release);
            return self.enter_shared_owned_slow(count, w);
        }
        self.enter_shared_hashed()
    }

    /// The owned-counter entry after a first attempt found `w` (not `Ready`, or a writer).
    #[cfg(any(feature = "std", loom))]
    #[cold]
    #[inline(never)]
    fn enter_shared_owned_slow<'a>(&'a self, count: &'a AtomicU32, mut w: Word) -> Result<SharedGuard<'a>> {
        loop {
            if w.phase() != Phase::Ready {
                return Err(Error::UNINITIALIZED);
            }
            while self.load().writer() {
                relax();
            }
            let n = count.load(Ordering::Relaxed);
            count.store(n.wrapping_add(1), Ordering::Relaxed);
            crate::slots::light(crate::slots::asymmetric());
            w = self.load();
            if w.phase() == Phase::Ready && !w.writer() {
                return Ok(SharedGuard { count, owned: true });
            }
            count.store(n, Ordering::Release);
        }
    }

    /// The shared entry through a hashed shard (a read-modify-write each way).
    #[inline(never)]
    fn enter_shared_hashed(&self) -> Result<SharedGuard<'_>> {
        let shard = &self.shards[shard_index()].0;
        loop {
            shard.fetch_add(1, Ordering::SeqCst);
            handshake_fence();
            let w = self.load();
            if w.phase() == Phase::Ready && !w.writer() {
                return Ok(SharedGuard { count: shard, owned: false });
            }
            shard.fetch_sub(1, Ordering::SeqCst);
            if w.phase() != Phase::Ready {
                return Err(Error::UNINITIALIZED);
            }
            while self.load().writer() {
                relax();
            }
        }
    }

    /// Enters a call that changes the tables: waits for other writers and for calls in flight.
    /// From inside a host kernel (itself a call in flight) it fails with `Busy` instead.
    pub(crate) fn enter_exclusive(&self) -> Result<ExclusiveGuard<'_>> {
        loop {
            let w = self.load();
            if w.phase() != Phase::Ready {
                return Err(Error::UNINITIALIZED);
            }
            if in_callback() {
                return Err(Error::REENTRANT);
            }
            if w.writer() {
                relax();
                continue;
            }
            if self.cas(w, Word(w.0 | WRITER)) {
                self.writer_barrier();
                while self.calls_in_flight() {
                    relax();
                }
                return Ok(ExclusiveGuard(self));
            }
        }
    }

    /// Before a `fork`: waits until no transition and no exclusive call is in progress, then
    /// holds the writer flag, so the child inherits consistent tables (shared calls in flight do
    /// not change them and are not waited for). The forking thread, if it runs a callback, does
    /// not wait: the tables are consistent between the steps that call back.
    #[cfg(all(feature = "std", unix, not(loom)))]
    pub(crate) fn fork_prepare(&self) -> bool {
        if in_callback() {
            return false;
        }
        loop {
            let w = self.load();
            match w.phase() {
                Phase::Initializing | Phase::ShuttingDown => relax(),
                _ if w.writer() => relax(),
                _ => {
                    if self.cas(w, Word(w.0 | WRITER)) {
                        return true;
                    }
                }
            }
        }
    }

    /// After a `fork`, in the parent: gives the writer flag back if `fork_prepare` took it.
    #[cfg(all(feature = "std", unix, not(loom)))]
    pub(crate) fn fork_parent(&self, held: bool) {
        if held {
            self.word.fetch_and(!WRITER, Ordering::SeqCst);
        }
    }

    /// After a `fork`, in the child (one thread): `Uninit`, no writer, no call in flight (the
    /// parent's other threads do not exist here).
    #[cfg(all(feature = "std", unix, not(loom)))]
    pub(crate) fn fork_child(&self) {
        self.word.store(0, Ordering::SeqCst);
        for c in self.counters() {
            c.store(0, Ordering::SeqCst);
        }
    }
}

/// A call in flight with shared access to the tables (holds one count of its counter).
pub(crate) struct SharedGuard<'a> {
    count: &'a AtomicU32,
    /// The counter is the calling thread's own slot (written by this thread only).
    owned: bool,
}

impl Drop for SharedGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.owned {
            // Only this thread writes its slot: a plain store; `Release` hands the writer that
            // waits for it everything this call did.
            self.count.store(self.count.load(Ordering::Relaxed).wrapping_sub(1), Ordering::Release);
        } else {
            self.count.fetch_sub(1, Ordering::Release);
        }
    }
}

/// A call in flight with exclusive access to the tables.
pub(crate) struct ExclusiveGuard<'a>(&'a Gate);

impl Drop for ExclusiveGuard<'_> {
    fn drop(&mut self) {
        self.0.word.fetch_and(!WRITER, Ordering::Release);
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
        assert_eq!(g.begin_init().err().map(|e| e.code), Some(ErrorCode::OutOfResources));
        assert_eq!(g.state(), State::Ready(MAX_REFS));
    }
}
