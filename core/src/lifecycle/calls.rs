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
        if let Some(mine) = crate::slots::mine() {
            // The calling thread's own counter: a plain load and store (no other thread writes
            // it), then the reader's side of the asymmetric barrier.
            let count = &self.slots[mine.index].calls;
            let n = count.load(Ordering::Relaxed);
            count.store(n.wrapping_add(1), Ordering::Relaxed);
            crate::slots::light(mine.asymmetric);
            let w = self.load();
            if w.phase() == Phase::Ready && !w.writer() {
                return Ok(SharedGuard { count, owned: true });
            }
            crate::sync::cold_path();
            if n > 0 && w.phase() == Phase::Ready {
                // A call nested in one of this thread's calls in flight (a host kernel's, run by
                // that call): a writer waits for the outer call, so the inner one does not wait
                // for the writer; it changes nothing the writer does not already wait out.
                return Ok(SharedGuard { count, owned: true });
            }
            count.store(n, Ordering::Release);
            return self.enter_shared_owned_slow(count, mine.asymmetric, w).map_err(Refused::error);
        }
        crate::sync::cold_path();
        self.enter_shared_hashed().map_err(Refused::error)
    }

    /// Waits while a writer holds the gate. A user callback stops waiting with `Busy` once some
    /// thread waits for callbacks (`reentry::waiting_for_callbacks`): the writer may be waiting
    /// for that thread, which waits for this callback.
    fn wait_for_writer(&self) -> core::result::Result<(), Refused> {
        while self.load().writer() {
            if in_callback() && crate::reentry::callbacks_waited_for() {
                return Err(Refused::Busy);
            }
            relax();
        }
        Ok(())
    }

    /// The owned-counter entry after a first attempt found `w` (not `Ready`, or a writer). A
    /// guard or a one-byte refusal: two registers, so that the launch path's fast side keeps
    /// its guard out of memory.
    #[cfg(any(feature = "std", loom))]
    #[cold]
    #[inline(never)]
    pub(super) fn enter_shared_owned_slow<'a>(
        &'a self,
        count: &'a AtomicU32,
        asymmetric: bool,
        mut w: Word,
    ) -> core::result::Result<SharedGuard<'a>, Refused> {
        loop {
            if w.phase() != Phase::Ready {
                return Err(Refused::Uninitialized);
            }
            self.wait_for_writer()?;
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

    /// The shared entry through a hashed shard (a read-modify-write each way). A shard is
    /// shared between threads, so a nested call cannot be told apart here: a user callback that
    /// finds a writer gets `Busy` at once (the writer may be waiting for its outer call).
    #[inline(never)]
    pub(super) fn enter_shared_hashed(&self) -> core::result::Result<SharedGuard<'_>, Refused> {
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
                return Err(Refused::Uninitialized);
            }
            if in_callback() {
                return Err(Refused::Busy);
            }
            self.wait_for_writer()?;
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
        self.epoch.fetch_add(1, Ordering::Release);
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

/// Why a shared call could not enter (one byte, beside a guard in two registers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The runtime is not `Ready`.
    Uninitialized,
    /// A user callback found a writer that may be waiting for it.
    Busy,
}

impl Refused {
    #[cold]
    fn error(self) -> Error {
        match self {
            Refused::Uninitialized => Error::UNINITIALIZED,
            Refused::Busy => Error::REENTRANT,
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
