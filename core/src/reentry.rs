//! Code that runs user callbacks inside the runtime (host kernels, teardown observers) marks the
//! calling thread, so that a call from such a callback that would wait for the callback itself
//! (a lifecycle transition, a create/destroy call, the host backend's serialised work) fails
//! with `Busy` instead of deadlocking; and panics in backends and observers are contained where
//! the platform can catch them.
//!
//! Both need `std` (a thread-local, `catch_unwind`). Without it nothing is marked (a firmware
//! host's callbacks must not call back into the lifecycle: the README says so) and a panic
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

    /// Runs `f`; a panic inside it becomes `Err(())` (the panic message was already printed).
    pub(crate) fn contain<T>(f: impl FnOnce() -> T) -> Result<T, ()> {
        std::panic::catch_unwind(core::panic::AssertUnwindSafe(f)).map_err(|_| ())
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

    /// Runs `f` (without std a panic is not caught; the runtime's drop guards handle it).
    pub(crate) fn contain<T>(f: impl FnOnce() -> T) -> Result<T, ()> {
        Ok(f())
    }
}

pub(crate) use imp::{contain, in_callback, mark};
