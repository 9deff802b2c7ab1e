//! `ordo_init`, `ordo_shutdown`, the last teardown report, and the opt-in at-exit shutdown.
//!
//! `ordo_shutdown_at_exit` registers the final shutdown with `atexit` *after* the backends are up
//! (at once if ordo is initialised, else at the end of the next successful `ordo_init`). Exit
//! handlers run in reverse order of registration, so it runs before the exit handlers the drivers
//! registered while initialising, while they are still alive.

use core::sync::atomic::{AtomicBool, Ordering};

use ordo_core::{Shutdown, State, TeardownReport};

use crate::boundary::{copy_c_string, fail, guard, non_null, output, produce};
use crate::runtime;
use crate::types::*;

static LAST_REPORT: spin::Mutex<Option<TeardownReport>> = spin::Mutex::new(None);
static AT_EXIT_REQUESTED: AtomicBool = AtomicBool::new(false);

fn finish_shutdown(outcome: ordo_core::Result<Shutdown>) -> ordo_status_t {
    match outcome {
        Ok(Shutdown::Released { .. }) => ORDO_SUCCESS,
        Ok(Shutdown::TornDown(report)) => {
            let clean = report.is_clean();
            *LAST_REPORT.lock() = Some(report);
            if clean {
                ORDO_SUCCESS
            } else {
                fail(ordo_core::Error::new(
                    ordo_core::ErrorCode::TeardownFailed,
                    "teardown finished, but some objects failed to release (see ordo_last_teardown_report)",
                ))
            }
        }
        Err(e) => fail(e),
    }
}

#[cfg(feature = "std")]
mod at_exit {
    use super::*;

    static AT_EXIT_REGISTERED: AtomicBool = AtomicBool::new(false);

    unsafe extern "C" {
        fn atexit(callback: extern "C" fn()) -> core::ffi::c_int;
    }

    extern "C" fn shut_down_at_exit() {
        // Drop every remaining reference; the last one tears down. Nothing may unwind out of here.
        let _ = std::panic::catch_unwind(|| {
            loop {
                match runtime().shutdown() {
                    Ok(Shutdown::Released { .. }) => continue,
                    outcome @ Ok(Shutdown::TornDown(_)) => {
                        finish_shutdown(outcome);
                        break;
                    }
                    Err(_) => break, // already uninitialised: nothing to do
                }
            }
        });
    }

    pub(super) fn register() -> ordo_status_t {
        if AT_EXIT_REGISTERED.swap(true, Ordering::AcqRel) {
            return ORDO_SUCCESS;
        }
        // SAFETY: registers a plain function that never unwinds.
        if unsafe { atexit(shut_down_at_exit) } != 0 {
            AT_EXIT_REGISTERED.store(false, Ordering::Release);
            return fail(ordo_core::Error::new(ordo_core::ErrorCode::OutOfResources, "atexit refused the handler"));
        }
        ORDO_SUCCESS
    }
}

/// Takes an init reference. The first initialises every backend (an absent driver is not an
/// error: its platform is listed as absent). Nests: each call needs one `ordo_shutdown`.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_init() -> ordo_status_t {
    guard(|| {
        if let Err(e) = runtime().init() {
            return fail(e);
        }
        #[cfg(feature = "std")]
        if AT_EXIT_REQUESTED.load(Ordering::Acquire) {
            return at_exit::register();
        }
        ORDO_SUCCESS
    })
}

/// Drops an init reference. The last one waits for calls in flight, then releases every object
/// (queues synchronised first; then events, queues, programs, memory, newest first; then devices
/// and backends) and stores the report for `ordo_last_teardown_report`. Returns
/// `ORDO_ERROR_UNINITIALIZED` without a reference to drop, `ORDO_ERROR_TEARDOWN_FAILED` when the
/// teardown completed with failures.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_shutdown() -> ordo_status_t {
    guard(|| finish_shutdown(runtime().shutdown()))
}

/// Opt-in, idempotent: shut ordo down completely from an `atexit` handler registered after the
/// backends are up (now, or at the end of the next successful `ordo_init`), so that it runs before
/// the drivers' own exit handlers. `ORDO_ERROR_UNSUPPORTED` in builds without std.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_shutdown_at_exit() -> ordo_status_t {
    guard(|| {
        AT_EXIT_REQUESTED.store(true, Ordering::Release);
        #[cfg(feature = "std")]
        {
            if matches!(runtime().state(), State::Ready(_)) {
                return at_exit::register();
            }
            ORDO_SUCCESS
        }
        #[cfg(not(feature = "std"))]
        fail(ordo_core::Error::new(ordo_core::ErrorCode::Unsupported, "ordo_shutdown_at_exit needs the std build"))
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
        let Some(report) = LAST_REPORT.lock().clone() else {
            return Err(ordo_core::Error::new(ordo_core::ErrorCode::NotFound, "no final shutdown has happened yet"));
        };
        let empty = ordo_teardown_failure_t {
            platform: 0,
            device: 0,
            step: 0,
            status: 0,
            handle: 0,
            native: 0,
            message: [0; 96],
        };
        let mut c = ordo_teardown_report_t {
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
                native: f.native,
                message: [0; 96],
            };
            copy_c_string(&mut slot.message, f.message);
            c.failure_count += 1;
        }
        Ok(c)
    })
}
