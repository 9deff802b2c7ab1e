//! `fork` handling (std builds on Unix): a runtime registered with `Runtime::handle_fork` is
//! consistent in the child of a `fork`, whatever other threads of the parent were doing.
//!
//! The parent's other threads do not exist in the child, so a call they had in flight would be
//! counted for ever and the child's final shutdown (or its exit hook) would wait for it. With
//! `pthread_atfork` handlers: before the fork, each registered runtime waits until no
//! transition and no create/destroy call is in progress and holds its writer flag (calls in
//! flight that only use objects are not waited for: they do not change the tables, but for the
//! queue-ordered allocations of memory pools, whose lock the preparation holds across the fork); in the
//! parent afterwards the flag is dropped; in the child, the runtime forgets every object as if
//! the driver had released it (no backend call: the child's copies of driver objects are not to
//! be used), every backend forgets its state and the locks the parent's threads held, and the
//! lifecycle is `Uninit` with no call in flight. A fork from a host callback (a call in flight on
//! the forking thread, which the writer flag would wait for) holds neither the flag nor that
//! lock; the child's tables may then be caught half-way through another thread's shared change,
//! which the child's forgetting survives (`Table::forget_all` follows no link, looks at every
//! slot ever handed out). The parent's handles are stale in the child;
//! the child may `init` again (CUDA does not support use in a forked child and is then reported
//! unavailable with the driver's error).
//! Depends on the runtime (`super`), its gate and tables; nothing depends on it but the
//! runtime's `fork_*` hooks.

use super::Runtime;

#[cfg(all(feature = "std", unix, not(loom)))]
mod imp {
    use super::Runtime;
    use crate::error::{ErrorCode, Result, fail};
    use spin::mutex::SpinMutex;

    /// Registered runtimes (each at most once).
    const MAX_FORK_RUNTIMES: usize = 16;

    static REGISTERED: SpinMutex<heapless::Vec<&'static Runtime, MAX_FORK_RUNTIMES>> =
        SpinMutex::new(heapless::Vec::new());
    /// Whether `fork_prepare` took each runtime's writer flag (indexed like `REGISTERED`).
    static HELD: SpinMutex<[bool; MAX_FORK_RUNTIMES]> = SpinMutex::new([false; MAX_FORK_RUNTIMES]);

    use crate::os::pthread_atfork;

    unsafe extern "C" fn prepare() {
        // The registry stays locked across the fork (released by `parent` / `child`), so no
        // runtime is registered half-way through.
        let runtimes = REGISTERED.lock();
        let mut held = HELD.lock();
        for (i, rt) in runtimes.iter().enumerate() {
            held[i] = rt.state.gate.fork_prepare();
            if held[i] {
                // Shared calls change the queue-ordered allocations under their lock: the
                // child's copy must not be caught half-way through one.
                // SAFETY: the gate is held: no transition or exclusive call reaches the tables
                // meanwhile; this is a shared look, as a call in flight takes.
                unsafe { &*rt.state.tables.get() }.ordered.hold_for_fork();
            }
        }
        core::mem::forget(held);
        core::mem::forget(runtimes);
    }

    unsafe extern "C" fn parent() {
        // SAFETY: `prepare` locked both on this thread and forgot the guards.
        let (runtimes, held) = unsafe { (&*REGISTERED.as_mut_ptr(), &*HELD.as_mut_ptr()) };
        for (i, rt) in runtimes.iter().enumerate() {
            if held[i] {
                // SAFETY: as in `prepare`; the lock was taken there, its guard forgotten, and
                // no guard of it is alive on this thread.
                unsafe { (*rt.state.tables.get()).ordered.unlock_after_fork() };
            }
            rt.state.gate.fork_parent(held[i]);
        }
        // SAFETY: locked by `prepare` on this thread; the references above are not used again.
        unsafe {
            HELD.force_unlock();
            REGISTERED.force_unlock();
        }
    }

    unsafe extern "C" fn child() {
        // SAFETY: as in `parent`; the child has one thread.
        let runtimes = unsafe { &*REGISTERED.as_mut_ptr() };
        for rt in runtimes.iter() {
            rt.forget_after_fork();
        }
        // SAFETY: as in `parent`.
        unsafe {
            HELD.force_unlock();
            REGISTERED.force_unlock();
        }
    }

    pub(super) fn register(rt: &'static Runtime) -> Result<()> {
        static INSTALLED: spin::Once<core::ffi::c_int> = spin::Once::new();
        // SAFETY: the handlers are plain functions that never unwind.
        let rc = *INSTALLED.call_once(|| unsafe { pthread_atfork(Some(prepare), Some(parent), Some(child)) });
        if rc != 0 {
            return fail(ErrorCode::OutOfResources, "pthread_atfork refused the handlers");
        }
        let mut runtimes = REGISTERED.lock();
        if runtimes.iter().any(|r| core::ptr::eq(*r, rt)) {
            return Ok(());
        }
        runtimes.push(rt).or_else(|_| fail(ErrorCode::OutOfResources, "more than 16 runtimes handle fork"))
    }
}

impl Runtime {
    /// Makes this runtime consistent in the child of a `fork` (std builds on Unix; `Unsupported`
    /// elsewhere). Idempotent; at most 16 runtimes per process. In the child: state `Uninit`,
    /// every object forgotten as if released by the driver (no backend call), the parent's
    /// handles stale, and `init` works again. A `fork` waits while another thread is in the
    /// middle of `init`, the final teardown, or a create/destroy call (not for other calls).
    pub fn handle_fork(&'static self) -> crate::Result<()> {
        #[cfg(all(feature = "std", unix, not(loom)))]
        return imp::register(self);
        #[cfg(not(all(feature = "std", unix, not(loom))))]
        crate::error::fail(crate::ErrorCode::Unsupported, "fork handling needs std on Unix")
    }

    /// The child side of `fork` handling (one thread, right after the fork).
    #[cfg(all(feature = "std", unix, not(loom)))]
    fn forget_after_fork(&self) {
        self.state.gate.fork_child();
        // SAFETY: one thread exists and the gate was held by `fork_prepare` (no transition or
        // writer in progress), so the tables are consistent and nothing else reaches them.
        let tables = unsafe { &mut *self.state.tables.get() };
        let mut p = tables.platforms.oldest();
        while let Some(i) = p {
            let entry = tables.platforms.at(i);
            if entry.absent.is_none() {
                // SAFETY: the child has one thread; the objects are forgotten right after.
                unsafe { self.backends[usize::from(entry.backend)].forget_after_fork() };
            }
            p = tables.platforms.newer(i);
        }
        Self::forget_objects(tables);
        // SAFETY: one thread exists: the holder of either lock was `prepare` or a thread of the
        // parent.
        unsafe { tables.ordered.unlock_after_fork() };
        if tables.pinned.is_locked() {
            // SAFETY: as above (the list itself was emptied without its lock).
            unsafe { tables.pinned.force_unlock() };
        }
        if self.state.last_report.is_locked() {
            // SAFETY: one thread exists: the holder was a thread of the parent.
            unsafe { self.state.last_report.force_unlock() };
        }
    }
}
