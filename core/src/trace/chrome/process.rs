//! The trace writer's process-level parts: its writer thread (`flusher`) and its fork handlers
//! (`fork`). Depends on the writer in `chrome.rs`.

/// The writer thread: every 100 ms it writes out what the trace buffered, so that a run killed
/// (or merely quiet) a moment after its last call still has every event in its file. One per
/// process (a forked child that starts a trace starts its own); it takes the writer's lock only
/// briefly and never keeps the process alive.
pub(super) mod flusher {
    use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

    use super::super::{FLUSH_EVERY_NS, TRACE};

    /// The process whose flusher runs (0: none yet).
    static RUNNING_IN: AtomicU32 = AtomicU32::new(0);

    pub(in crate::trace::chrome) fn ensure_running() {
        let me = std::process::id();
        if RUNNING_IN.swap(me, Relaxed) == me {
            return;
        }
        let spawned = std::thread::Builder::new().name("ordo-trace-flush".into()).spawn(|| {
            loop {
                std::thread::sleep(core::time::Duration::from_nanos(FLUSH_EVERY_NS));
                TRACE.flush_if_due();
            }
        });
        if let Err(e) = spawned {
            // Without it, events still reach the file at the next call after 100 ms.
            log::warn!("ordo: trace: no writer thread ({e}): events are written as calls come");
            RUNNING_IN.store(0, Relaxed);
        }
    }
}

/// Fork safety (`pthread_atfork`): the writer's lock is held across `fork` so that the child's
/// copy is consistent, and the child drops the inherited writer without writing: its buffer is
/// discarded, the parent's file is left alone, and tracing is off in the child until it starts
/// a trace of its own.
pub(super) mod fork {
    use core::cell::UnsafeCell;
    use std::sync::MutexGuard;

    use super::super::{TRACE, Writer};

    /// The writer's guard from `prepare` until `parent` or `child` (one `fork` at a time holds
    /// it: the lock itself orders them).
    struct Held(UnsafeCell<Option<MutexGuard<'static, Option<Writer>>>>);
    // SAFETY: written by `prepare` and taken by `parent`/`child` of the same fork, which the
    // writer's lock (held in between) serialises against every other fork.
    unsafe impl Sync for Held {}
    static HELD: Held = Held(UnsafeCell::new(None));

    unsafe extern "C" fn prepare() {
        let guard = TRACE.writer.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: see `Held`: this fork holds the lock, so no other thread touches the slot.
        unsafe { *HELD.0.get() = Some(guard) };
    }

    unsafe extern "C" fn parent() {
        // SAFETY: see `Held`.
        drop(unsafe { (*HELD.0.get()).take() });
    }

    unsafe extern "C" fn child() {
        // SAFETY: see `Held`; the child has one thread.
        let Some(mut guard) = (unsafe { (*HELD.0.get()).take() }) else { return };
        if let Some(w) = guard.take() {
            crate::trace::child_after_fork();
            // The parent's buffered events and file are the parent's: dropped unwritten.
            let (_file, _discarded) = w.out.into_parts();
        }
    }

    pub(in crate::trace::chrome) fn register() {
        // SAFETY: three plain functions that take and give back the writer's lock.
        unsafe { crate::os::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    }
}
