//! What runs user code inside the host device and its queues uses: marking a callback (so that
//! calls from it that would wait for it answer `Busy`), marking a wait for callbacks run on other
//! threads, and turning a panic in user code into an error with its message. Thin wrappers over
//! `reentry`, for `ordo`'s `QueuedHost` and the host backend. Depends on `reentry` and `error`.

use super::err;
use crate::error::{BackendError, ErrorCode};
use crate::reentry;

/// Runs `f` as a user callback of the host device (a host function or kernel run by a queue
/// worker outside this backend): calls it makes into ordo that would wait for it fail with
/// `Busy` instead of deadlocking (std builds; without std it just runs `f`).
pub fn run_as_callback<T>(f: impl FnOnce() -> T) -> T {
    let _callback = reentry::mark();
    f()
}

/// Whether the calling thread is running a user callback of a runtime (a host kernel, a host
/// function, a teardown observer): a call that would wait for other work must then fail with
/// `Busy`. Always `false` without std.
pub fn in_callback() -> bool {
    reentry::in_callback()
}

/// Runs `f`, a wait of the calling thread for work that runs user callbacks on other threads
/// (a host queue's worker thread): a callback's call into ordo that finds a create/destroy call
/// holding the runtime meanwhile fails with `Busy` instead of waiting for it (that call may be
/// waiting for this wait, which waits for the callback). Std builds; without std it runs `f`.
pub fn waiting_for_callbacks<T>(f: impl FnOnce() -> T) -> T {
    reentry::waiting_for_callbacks(f)
}

/// Runs `f`, a user's code; with std a panic in it becomes `Err("prefix: its message")`, a
/// string kept for the life of the process (one copy per distinct text, at most 64 texts; later
/// ones read `prefix` alone), so that it can be a `BackendError`'s message. Without std a panic
/// is not caught.
pub fn catch_panic<T>(prefix: &'static str, f: impl FnOnce() -> T) -> Result<T, &'static str> {
    reentry::contain_message(prefix, f)
}

/// The error of work whose user code panicked (`catch_panic`'s message).
pub fn panicked(message: &'static str) -> BackendError {
    err(ErrorCode::BackendFailure, message)
}
