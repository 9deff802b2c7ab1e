//! Calls in flight: entering a shared or an exclusive call and the guards whose drop leaves it,
//! and the gate's side of a fork. Part of the gate (`lifecycle/mod.rs`), whose handshake it uses.
//! Depends on `lifecycle/mod.rs` (the word and the gate) only; the runtime's shared and
//! exclusive sections depend on it.

use super::*;

impl Gate {
    /// Enters a call that reads the tables. Waits while a writer holds the gate.
    #[inline(always)]
    pub(crate) fn enter_shared(&self) -> Result<SharedGuard<'_>> {
        #[cfg(any(feature = "std", loom))]
        if let Some(light) = self.enter_light() {
            return Ok(light.into_shared());
        }
        crate::sync::cold_path();
        self.enter_shared_other()
    }

    /// The straight path of `enter_shared`, in two branches: the calling thread's own counter,
    /// found through its home record with the light side allowed (`slots::mine_light`), and the
    /// word `Ready` without a writer. `None` (nothing held): the caller takes `enter_shared`.
    #[cfg(any(feature = "std", loom))]
    #[inline(always)]
    pub(crate) fn enter_light(&self) -> Option<LightGuard<'_>> {
        let count = &self.slots[crate::slots::mine_light()?].calls;
        // The thread's own counter: a plain load and store (no other thread writes it), then
        // the reader's side of the asymmetric barrier (under loom its fence form, which the
        // models check; `slots.rs` gives the argument).
        let n = count.load(Ordering::Relaxed);
        count.store(n.wrapping_add(1), Ordering::Relaxed);
        #[cfg(not(loom))]
        core::sync::atomic::compiler_fence(Ordering::SeqCst);
        #[cfg(loom)]
        crate::sync::fence(Ordering::SeqCst);
        if self.load().ready_without_writer() {
            return Some(LightGuard(count));
        }
        crate::sync::cold_path();
        count.store(n, Ordering::Release);
        None
    }

    /// `enter_shared` for every thread the light entry does not take (no home record, no
    /// membarrier, no slot left) and while the word is not `Ready` or a writer holds it.
    #[inline(never)]
    fn enter_shared_other(&self) -> Result<SharedGuard<'_>> {
        #[cfg(any(feature = "std", loom))]
        if let Some(mine) = crate::slots::mine() {
            let count = &self.slots[mine.index].calls;
            return self.enter_shared_owned_slow(count, mine.asymmetric, self.load());
        }
        self.enter_shared_hashed()
    }

    /// The owned-counter entry, from the word `w` loaded last (the path of threads that the
    /// light entry does not take, and of every thread while the word is not `Ready` or a
    /// writer holds it).
    #[cfg(any(feature = "std", loom))]
    #[inline(never)]
    pub(super) fn enter_shared_owned_slow<'a>(
        &'a self,
        count: &'a AtomicU32,
        asymmetric: bool,
        mut w: Word,
    ) -> Result<SharedGuard<'a>> {
        loop {
            if w.phase() != Phase::Ready {
                return Err(Error::UNINITIALIZED);
            }
            while self.load().writer() {
                relax();
            }
            let n = count.load(Ordering::Relaxed);
            count.store(n.wrapping_add(1), Ordering::Relaxed);
            crate::slots::light(asymmetric);
            w = self.load();
            if w.phase() == Phase::Ready && !w.writer() {
                return Ok(SharedGuard { count, owned: true });
            }
            count.store(n, Ordering::Release);
        }
    }

    /// The shared entry through a hashed shard (a read-modify-write each way).
    #[inline(never)]
    pub(super) fn enter_shared_hashed(&self) -> Result<SharedGuard<'_>> {
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
        #[cfg(any(feature = "std", loom))]
        for slot in &self.slots {
            slot.busy.store(0, Ordering::SeqCst);
        }
        self.clear_slot_refs();
    }
}

/// A call in flight entered by `Gate::enter_light`: one count of the calling thread's own
/// counter, given back with a plain store (no flag to test on the way out).
#[cfg(any(feature = "std", loom))]
pub(crate) struct LightGuard<'a>(&'a AtomicU32);

#[cfg(any(feature = "std", loom))]
impl<'a> LightGuard<'a> {
    /// The same count as a `SharedGuard`.
    #[inline(always)]
    fn into_shared(self) -> SharedGuard<'a> {
        let count = self.0;
        core::mem::forget(self);
        SharedGuard { count, owned: true }
    }
}

#[cfg(any(feature = "std", loom))]
impl Drop for LightGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        // Only this thread writes its slot: a plain store; `Release` hands the writer that
        // waits for it everything this call did.
        self.0.store(self.0.load(Ordering::Relaxed).wrapping_sub(1), Ordering::Release);
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
