//! Code that runs user callbacks inside the runtime (host kernels, teardown observers) marks the
//! calling thread, so that a call from such a callback that would wait for the callback itself
//! (a lifecycle transition, a create/destroy call, the host backend's serialised work) fails
//! with `Busy` instead of deadlocking; and panics in backends and observers are contained where
//! the platform can catch them.
//!
//! Both need `std` (a thread-local, `catch_unwind`). Without it nothing is marked (a firmware
//! host's callbacks must not call back into the lifecycle: docs/lifecycle.md says so) and a panic
//! runs the drop guards of `runtime/mod.rs`, which leave the lifecycle in a defined state.
//! Depends on nothing else in the crate.

#[cfg(feature = "std")]
mod imp {
    use core::cell::Cell;

    std::thread_local! {
        /// How many callbacks of any runtime this thread is running right now.
        static DEPTH: Cell<u32> = const { Cell::new(0) };
    }

    pub(crate) fn in_callback() -> bool {
        DEPTH.with(|d| d.get() > 0)
    }

    pub(crate) struct CallbackMark(());

    pub(crate) fn mark() -> CallbackMark {
        DEPTH.with(|d| d.set(d.get() + 1));
        CallbackMark(())
    }

    impl Drop for CallbackMark {
        fn drop(&mut self) {
            DEPTH.with(|d| d.set(d.get() - 1));
        }
    }

    /// Threads waiting right now for work that runs user callbacks on other threads (a host
    /// queue's worker): while one does, a callback that finds a writer holding the gate cannot
    /// tell whether the writer waits for it, and gets `Busy` instead of waiting.
    static WAITING_FOR_CALLBACKS: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

    pub(crate) fn callbacks_waited_for() -> bool {
        WAITING_FOR_CALLBACKS.load(core::sync::atomic::Ordering::SeqCst) > 0
    }

    pub(crate) fn waiting_for_callbacks<T>(f: impl FnOnce() -> T) -> T {
        struct Waiting;
        impl Drop for Waiting {
            fn drop(&mut self) {
                WAITING_FOR_CALLBACKS.fetch_sub(1, core::sync::atomic::Ordering::SeqCst);
            }
        }
        WAITING_FOR_CALLBACKS.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
        let _waiting = Waiting;
        f()
    }

    /// Runs `f`; a panic inside it becomes `Err(())` (the panic message was already printed).
    pub(crate) fn contain<T>(f: impl FnOnce() -> T) -> Result<T, ()> {
        std::panic::catch_unwind(core::panic::AssertUnwindSafe(f)).map_err(|_| ())
    }

    /// Distinct panic messages kept for errors (`contain_message`), at most `KEPT_MESSAGES`.
    static MESSAGES: std::sync::Mutex<std::vec::Vec<&'static str>> = std::sync::Mutex::new(std::vec::Vec::new());
    const KEPT_MESSAGES: usize = 64;

    /// Runs `f`; a panic inside it becomes `Err(prefix + its message)`, a string kept for the
    /// life of the process (errors carry `&'static str`): one copy per distinct text, at most
    /// 64 texts (later ones read `prefix` and a note), so repeated panics do not grow memory.
    pub(crate) fn contain_message<T>(prefix: &str, f: impl FnOnce() -> T) -> Result<T, &'static str> {
        std::panic::catch_unwind(core::panic::AssertUnwindSafe(f)).map_err(|payload| {
            let message = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<std::string::String>().map(|s| s.as_str()))
                .unwrap_or("(a panic without a text message)");
            // The thread it ran on: a host queue's worker names its queue; unnamed, its id.
            let current = std::thread::current();
            let text = match current.name() {
                Some(name) => std::format!("{prefix} on thread '{name}': {message}"),
                None => std::format!("{prefix} on thread {:?}: {message}", current.id()),
            };
            let mut kept = MESSAGES.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(&same) = kept.iter().find(|&&k| k == text) {
                return same;
            }
            if kept.len() >= KEPT_MESSAGES {
                return "a host kernel or host function panicked (more distinct messages than ordo keeps)";
            }
            let text: &'static str = std::boxed::Box::leak(text.into_boxed_str());
            kept.push(text);
            text
        })
    }
}

#[cfg(not(feature = "std"))]
mod imp {
    pub(crate) fn in_callback() -> bool {
        false
    }

    pub(crate) struct CallbackMark(());

    pub(crate) fn mark() -> CallbackMark {
        CallbackMark(())
    }

    pub(crate) fn callbacks_waited_for() -> bool {
        false
    }

    pub(crate) fn waiting_for_callbacks<T>(f: impl FnOnce() -> T) -> T {
        f()
    }

    /// Runs `f` (without std a panic is not caught; the runtime's drop guards handle it).
    pub(crate) fn contain<T>(f: impl FnOnce() -> T) -> Result<T, ()> {
        Ok(f())
    }

    /// Runs `f` (without std a panic is not caught).
    pub(crate) fn contain_message<T>(_prefix: &str, f: impl FnOnce() -> T) -> Result<T, &'static str> {
        Ok(f())
    }
}

pub(crate) use imp::{callbacks_waited_for, contain, contain_message, in_callback, mark, waiting_for_callbacks};
