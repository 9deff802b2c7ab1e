//! `ordo_trace_start` / `ordo_trace_stop`: the timeline (`ordo_core::trace::chrome`) from C, as
//! `ORDO_TRACE=path.json` starts it from the environment.

use core::ffi::c_char;

#[cfg(not(feature = "std"))]
use ordo_core::{Error, ErrorCode};

#[cfg(feature = "std")]
use crate::boundary::{c_name, status};
use crate::boundary::{fail, guard};
use crate::c::types::*;

/// Starts writing a trace to the file at `path` (created or truncated), in the Chrome
/// trace-event format that Perfetto (ui.perfetto.dev) and `chrome://tracing` open: a track per
/// thread with every ordo call of every ABI (`ordo_*`, `ol*`, `mgpu*`, Rust), a track per queue
/// with the device work on it (device-timed kernels, copies, fills, host functions, graph
/// launches), and the lifecycle and teardown steps. What `ORDO_TRACE=path` does at the first
/// init. May be called before `ordo_init`. Events are written at least every 100 ms (also while
/// no call comes) and at the end of each final teardown, after which the file is valid JSON. `ORDO_ERROR_NULL_POINTER` for
/// a NULL `path`, `ORDO_ERROR_INVALID_ARGUMENT` for a path that is not UTF-8, whose directory
/// does not exist, that may not be written, or that is not a regular file (a directory, FIFO,
/// socket or device: refused at once, never waited on), `ORDO_ERROR_BUSY` while a trace is being
/// written, `ORDO_ERROR_OUT_OF_RESOURCES` when the file cannot be created for another reason,
/// `ORDO_ERROR_UNSUPPORTED` in builds without std. Events are flushed by a writer thread of the
/// trace's own every 100 ms; a forked child drops the trace it inherited without writing it.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_trace_start(path: *const c_char) -> ordo_status_t {
    guard(|| {
        #[cfg(feature = "std")]
        {
            // SAFETY: the caller's contract: NULL or NUL-terminated.
            let path = match unsafe { c_name(path, "path is NULL", "path is not UTF-8") } {
                Ok(p) => p,
                Err(e) => return fail(e),
            };
            status(ordo_core::trace::chrome::start(std::path::Path::new(path)))
        }
        #[cfg(not(feature = "std"))]
        {
            let _ = path;
            fail(Error::new(ErrorCode::Unsupported, "tracing needs the std build"))
        }
    })
}

/// Stops the trace `ordo_trace_start` (or `ORDO_TRACE`) began: device work still waiting for
/// its timing is resolved, the JSON array closed and the file written. `ORDO_ERROR_NOT_FOUND`
/// when no trace is being written, `ORDO_ERROR_UNSUPPORTED` in builds without std.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_trace_stop() -> ordo_status_t {
    guard(|| {
        #[cfg(feature = "std")]
        {
            match ordo_core::trace::chrome::stop() {
                Ok(_) => ORDO_SUCCESS,
                Err(e) => fail(e),
            }
        }
        #[cfg(not(feature = "std"))]
        fail(Error::new(ErrorCode::Unsupported, "tracing needs the std build"))
    })
}
