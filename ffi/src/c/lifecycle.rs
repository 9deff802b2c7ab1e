//! `ordo_init`, `ordo_shutdown`, the last teardown report, and the opt-in at-exit shutdown.
//!
//! `ordo_shutdown_at_exit` registers the final shutdown with `atexit` *after* the backends are up
//! (at once if ordo is initialised, else at the end of the next successful `ordo_init`). Exit
//! handlers run in reverse order of registration, so it runs before the exit handlers the drivers
//! registered while initialising, while they are still alive. The request and the state are a
//! store-then-load handshake on both sides (`ordo_shutdown_at_exit` stores the request, then
//! reads the state; `ordo_init` changes the state, then reads the request), so both are `SeqCst`:
//! at least one side sees the other, and registration is idempotent.

#[cfg(feature = "std")]
use core::sync::atomic::{AtomicBool, Ordering};

use ordo_core::{Shutdown, State};

use crate::boundary::{copy_c_display, fail, guard, non_null, output, produce};
use crate::c::types::*;
use ordo::runtime;

#[cfg(feature = "std")]
static AT_EXIT_REQUESTED: AtomicBool = AtomicBool::new(false);

fn teardown_failed() -> ordo_status_t {
    fail(ordo_core::Error::new(
        ordo_core::ErrorCode::TeardownFailed,
        "teardown finished, but some objects failed to release (see ordo_last_teardown_report)",
    ))
}

fn finish_shutdown(outcome: ordo_core::Result<Shutdown>) -> ordo_status_t {
    match outcome {
        Ok(Shutdown::Released { .. }) => ORDO_SUCCESS,
        Ok(Shutdown::TornDown(summary)) if summary.is_clean() => ORDO_SUCCESS,
        Ok(Shutdown::TornDown(_)) => teardown_failed(),
        Err(e) => fail(e),
    }
}

#[cfg(feature = "std")]
mod at_exit {
    use std::time::{Duration, Instant};

    use super::*;

    /// How long the at-exit shutdown waits for calls in flight on other threads (e.g. a thread
    /// blocked in `ordo_queue_synchronize` on a kernel that never ends, or `exit` called from
    /// inside an ordo call). Past it, nothing is torn down and the process exits; the drivers
    /// release what they own.
    pub(crate) const DRAIN_LIMIT: Duration = Duration::from_secs(2);

    static AT_EXIT_REGISTERED: AtomicBool = AtomicBool::new(false);

    unsafe extern "C" {
        fn atexit(callback: extern "C" fn()) -> core::ffi::c_int;
    }

    extern "C" fn shut_down_at_exit() {
        // Drop every remaining reference; the last one tears down. Nothing may unwind out of here.
        let _ = std::panic::catch_unwind(|| {
            let deadline = Instant::now() + DRAIN_LIMIT;
            if let Err(e) = runtime().shutdown_all(&mut || Instant::now() < deadline) {
                log::warn!("ordo: the at-exit shutdown did not run: {e}");
            }
        });
    }

    pub(super) fn register() -> ordo_core::Result<()> {
        if AT_EXIT_REGISTERED.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        // SAFETY: registers a plain function that never unwinds.
        if unsafe { atexit(shut_down_at_exit) } != 0 {
            AT_EXIT_REGISTERED.store(false, Ordering::SeqCst);
            return Err(ordo_core::Error::new(ordo_core::ErrorCode::OutOfResources, "atexit refused the handler"));
        }
        Ok(())
    }
}

/// Takes an init reference. The first initialises every backend (an absent driver, or one that
/// fails to initialise, is not an error: its platform is listed as absent or unavailable). Nests:
/// each call needs one `ordo_shutdown`. On failure no reference is held.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_init() -> ordo_status_t {
    guard(|| {
        if let Err(e) = crate::boundary::init_default() {
            return fail(e);
        }
        #[cfg(feature = "std")]
        {
            if AT_EXIT_REQUESTED.load(Ordering::SeqCst) {
                if let Err(e) = at_exit::register() {
                    let _ = runtime().shutdown();
                    return fail(e);
                }
            }
        }
        ORDO_SUCCESS
    })
}

/// Drops an init reference. The last one waits for calls in flight, then releases every object
/// (every queue of every device synchronised first; then per device events, queues, programs,
/// memory, newest first, and the device; then the backends) and keeps the report for
/// `ordo_last_teardown_report`. Returns `ORDO_ERROR_UNINITIALIZED` without a reference to drop,
/// `ORDO_ERROR_TEARDOWN_FAILED` when the teardown completed with failures, and
/// `ORDO_ERROR_BUSY` (nothing done) when called from inside a host kernel for the last reference.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_shutdown() -> ordo_status_t {
    guard(|| finish_shutdown(runtime().shutdown()))
}

/// Opt-in, idempotent: shut ordo down completely from an `atexit` handler registered after the
/// backends are up (now, or at the end of the next successful `ordo_init`), so that it runs before
/// the drivers' own exit handlers. The handler waits at most 2 seconds for calls still in flight
/// on other threads; past that it tears nothing down and lets the process exit.
/// `ORDO_ERROR_UNSUPPORTED` in builds without std.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_shutdown_at_exit() -> ordo_status_t {
    guard(|| {
        #[cfg(feature = "std")]
        {
            AT_EXIT_REQUESTED.store(true, Ordering::SeqCst);
            if runtime().is_ready() {
                return crate::boundary::status(at_exit::register());
            }
            ORDO_SUCCESS
        }
        #[cfg(not(feature = "std"))]
        fail(ordo_core::Error::new(ordo_core::ErrorCode::Unsupported, "ordo_shutdown_at_exit needs the std build"))
    })
}

/// Gives the host platform its arena: `len` bytes at `base`, which ordo zeroes and then uses
/// for host-platform memory for the rest of the program. Call it once, before the first
/// `ordo_init`. `ORDO_ERROR_NULL_POINTER` for a NULL `base`, `ORDO_ERROR_INVALID_SIZE` below 256
/// bytes, `ORDO_ERROR_BUSY` when an arena was given already. The arena is used from the next
/// `ordo_init` that initialises ordo on. Without std the host platform has no memory until this
/// is called (it is listed absent); with std, while none was given, the host platform allocates
/// from the process heap (one block per allocation, up to the machine's memory).
///
/// # Safety
/// `base` must be NULL or valid for reads and writes of `len` bytes for the rest of the program,
/// and used by nothing else.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_set_host_arena(base: *mut core::ffi::c_void, len: usize) -> ordo_status_t {
    // SAFETY: forwarded contract.
    guard(|| crate::boundary::status(unsafe { ordo::provide_host_arena(base.cast(), len) }))
}

/// Sets the step every wait inside ordo takes (a thread waiting for another's `ordo_init` or
/// final `ordo_shutdown`, a create/destroy call waiting for calls in flight): e.g. an RTOS
/// yield, so that on a single-core priority scheduler the waiting thread lets the one it waits
/// for run. NULL restores the default (spin without std, yield to the OS with std). Process-wide;
/// may be called at any time. The hook must not call into ordo.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_set_wait_hook(hook: Option<extern "C" fn()>) -> ordo_status_t {
    static HOOK: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
    fn call_hook() {
        let hook = HOOK.load(core::sync::atomic::Ordering::Acquire);
        if hook != 0 {
            // SAFETY: only addresses of `extern "C" fn()` are stored (below).
            unsafe { core::mem::transmute::<usize, extern "C" fn()>(hook)() };
        }
    }
    guard(|| {
        HOOK.store(hook.map_or(0, |h| h as usize), core::sync::atomic::Ordering::Release);
        ordo_core::set_wait_strategy(hook.map(|_| call_hook as fn()));
        ORDO_SUCCESS
    })
}

/// The lifecycle state: `*phase` 0 uninitialised, 1 initialising, 2 ready, 3 shutting down;
/// `*refs` the init references (ready only).
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_get_state(phase: *mut u32, refs: *mut u32) -> ordo_status_t {
    guard(|| {
        if let Err(e) = non_null(phase, "phase is NULL").and(non_null(refs, "refs is NULL")) {
            return fail(e);
        }
        let (p, n) = match runtime().state() {
            State::Uninit => (0, 0),
            State::Initializing => (1, 0),
            State::Ready(n) => (2, n),
            State::ShuttingDown => (3, 0),
        };
        // SAFETY: both checked non-NULL above.
        unsafe { refs.write(n) };
        output(phase, Ok(p))
    })
}

/// The report of the most recent final shutdown (including one run by the at-exit hook);
/// `ORDO_ERROR_NOT_FOUND` before the first.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_last_teardown_report(out: *mut ordo_teardown_report_t) -> ordo_status_t {
    produce(out, "out is NULL", || {
        let Some(report) = runtime().last_teardown_report() else {
            return Err(ordo_core::Error::new(ordo_core::ErrorCode::NotFound, "no final shutdown has happened yet"));
        };
        let empty = ordo_teardown_failure_t {
            platform: 0,
            device: 0,
            step: 0,
            status: 0,
            handle: 0,
            address: 0,
            native: 0,
            message: [0; 96],
        };
        let mut c = ordo_teardown_report_t {
            sequence: report.sequence,
            failure_count: 0,
            overflow: report.overflow,
            released: report.released,
            released_by_driver: report.released_by_driver,
            failures: [empty; ORDO_REPORT_FAILURES],
        };
        for (i, f) in report.failures.iter().enumerate() {
            let Some(slot) = c.failures.get_mut(i) else {
                c.overflow += 1;
                continue;
            };
            *slot = ordo_teardown_failure_t {
                platform: f.platform,
                device: f.device,
                step: f.step as u32,
                status: f.code as ordo_status_t,
                handle: f.handle.0,
                address: f.address,
                native: f.native,
                message: [0; 96],
            };
            copy_c_display(&mut slot.message, f.detail());
            c.failure_count += 1;
        }
        Ok(c)
    })
}
