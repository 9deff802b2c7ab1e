//! A runtime created and dropped at will (std builds): for tests that want a fresh runtime per
//! case, and for programs whose backends are not `static`.
//! Depends on the runtime (`super`) and `backend`; nothing in the core depends on it.

extern crate alloc;

use alloc::boxed::Box;
use core::mem::{ManuallyDrop, MaybeUninit};

use super::{Runtime, RuntimeState};
use crate::backend::Backend;

/// A runtime that owns its state on the heap (allocated zeroed, never built on the stack) and
/// borrows its backends for `'a`. Use it through `Deref` like any `Runtime`. Dropping it shuts it
/// down completely (every reference, every object, the backends deinitialised), so a test can
/// create one per case and the next starts from nothing:
///
/// ```
/// # use ordo_core::{Backend, OwnedRuntime, State};
/// # use ordo_core::host::{HostArena, HostBackend, builtin};
/// static ARENA: HostArena<4096> = HostArena::new();
/// static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
/// for _ in 0..3 {
///     let rt = OwnedRuntime::new(&[&HOST]);
///     rt.init().unwrap();
///     let d = rt.device(rt.platform(0).unwrap(), 0).unwrap();
///     rt.mem_alloc(d, ordo_core::MemKind::Device, 256).unwrap();
/// } // each dropped here: torn down, the host backend free for the next one
/// ```
///
/// It does not register `fork` handlers (`Runtime::handle_fork` needs a `'static` runtime).
pub struct OwnedRuntime<'a> {
    runtime: ManuallyDrop<Runtime>,
    /// The storage `runtime.state` points into.
    state: *mut MaybeUninit<RuntimeState>,
    /// The list `runtime.backends` points into.
    backends: *mut [&'a dyn Backend],
}

impl core::fmt::Debug for OwnedRuntime<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("OwnedRuntime").field(&*self.runtime).finish()
    }
}

// SAFETY: the runtime is `Sync` (its state is ruled by the gate) and the backends are `Sync`
// (`Backend: Sync`); the raw pointers are only the owned allocations, freed in `drop`.
unsafe impl Send for OwnedRuntime<'_> {}
// SAFETY: as above; shared access goes through `&Runtime`.
unsafe impl Sync for OwnedRuntime<'_> {}

impl<'a> OwnedRuntime<'a> {
    /// A fresh, uninitialised runtime over `backends`, in registration order.
    pub fn new(backends: &[&'a dyn Backend]) -> Self {
        let list: *mut [&'a dyn Backend] = Box::into_raw(backends.to_vec().into_boxed_slice());
        let state: *mut MaybeUninit<RuntimeState> = Box::into_raw(Box::new_uninit());
        // SAFETY: `state` is a live heap block only this runtime uses; `new_in` initialises it in
        // place. The `'static` lifetimes are this struct's promise, kept by `drop`: it tears the
        // runtime down (no backend or state is reached after that) before freeing the state and
        // the list, and the backends outlive `'a`, which outlives `self`. Nothing reached through
        // `Deref` can keep them: `Runtime` is not `Clone`, `backends()` lends them for `&self`
        // only, and `handle_fork` needs `&'static self`.
        let runtime = unsafe {
            let state: &'static RuntimeState = RuntimeState::new_in(&mut *state);
            let list: &'static [&'static dyn Backend] =
                core::mem::transmute::<&[&'a dyn Backend], &'static [&'static dyn Backend]>(&*list);
            Runtime::with_state(list, state)
        };
        Self { runtime: ManuallyDrop::new(runtime), state, backends: list }
    }
}

impl core::ops::Deref for OwnedRuntime<'_> {
    type Target = Runtime;
    fn deref(&self) -> &Runtime {
        &self.runtime
    }
}

impl Drop for OwnedRuntime<'_> {
    fn drop(&mut self) {
        // No other borrow of the runtime exists (`&mut self`), so no call is in flight and the
        // teardown waits for nothing. It fails only when dropped inside a callback of another
        // runtime (a final shutdown from a callback is `Busy`): then it is leaked whole, state
        // and list included, so that nothing it points to is freed under it.
        match self.runtime.shutdown_all(&mut || true) {
            Ok(_) => {
                // SAFETY: both came from `Box::into_raw` in `new`; the runtime over them is torn
                // down (`Uninit`) and dropped here, so nothing reaches them any more.
                unsafe {
                    ManuallyDrop::drop(&mut self.runtime);
                    drop(Box::from_raw(self.state));
                    drop(Box::from_raw(self.backends));
                }
            }
            Err(e) => log::error!("ordo: an OwnedRuntime dropped where it cannot shut down ({e}); leaked"),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;

    use super::*;
    use crate::host::{HostArena, HostBackend, builtin};
    use crate::{MemKind, State};

    /// Runtimes created and dropped in turn over one host backend: each starts `Uninit`, works,
    /// and its drop tears everything down (the backend is free for the next one, the arena whole
    /// again). Miri checks the heap state and the borrowed backend list.
    #[test]
    fn owned_runtimes_come_and_go_over_one_backend() {
        static ARENA: HostArena<4096> = HostArena::new();
        static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
        for round in 0..3 {
            let rt = OwnedRuntime::new(&[&HOST]);
            assert_eq!(rt.state(), State::Uninit);
            rt.init().unwrap();
            rt.init().unwrap();
            let d = rt.device(rt.platform(0).unwrap(), 0).unwrap();
            let m = rt.mem_alloc(d, MemKind::Device, 256).unwrap();
            rt.copy_to_device(m, &[round as u8; 16]).unwrap();
            std::thread::scope(|s| {
                s.spawn(|| {
                    let mut back = [0u8; 16];
                    rt.copy_from_device(&mut back, m).unwrap();
                    assert_eq!(back, [round as u8; 16]);
                });
            });
            assert_eq!(rt.backends().len(), 1);
            // Dropped with two references and live memory.
        }
        assert_eq!(HOST.free_bytes(), 0, "the backend was deinitialised by the last drop");
    }
}
