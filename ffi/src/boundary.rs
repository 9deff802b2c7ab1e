//! What every exported function shares: turning results into statuses, the calling thread's
//! error detail, C string copies, and (with std) catching panics so none crosses into C.

use core::ffi::c_char;

use ordo_core::{Error, ErrorCode};

use crate::c::types::*;

/// Copies `text` into `out` as a NUL-terminated C string, truncating at a character boundary.
pub(crate) fn copy_c_string(out: &mut [u8], text: &str) {
    let mut end = text.len().min(out.len().saturating_sub(1));
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out[..end].copy_from_slice(&text.as_bytes()[..end]);
    if let Some(nul) = out.get_mut(end) {
        *nul = 0;
    }
}

const DETAIL_BYTES: usize = 1024;

/// Writes `parts` one after another into `buf` as one NUL-terminated C string.
fn write_detail(buf: &mut [u8], parts: &[&str]) {
    let mut at = 0;
    for part in parts {
        let room = &mut buf[at..];
        copy_c_string(room, part);
        at += room.iter().position(|&b| b == 0).unwrap_or(0);
    }
}

#[cfg(feature = "std")]
mod detail_store {
    use std::cell::RefCell;

    std::thread_local! {
        static DETAIL: RefCell<[u8; super::DETAIL_BYTES]> = const { RefCell::new([0; super::DETAIL_BYTES]) };
    }

    pub(crate) fn set(parts: &[&str]) {
        DETAIL.with(|d| super::write_detail(&mut d.borrow_mut()[..], parts));
    }

    pub(crate) fn pointer() -> *const core::ffi::c_char {
        // The buffer lives as long as the thread; C reads it before its next ordo call.
        DETAIL.with(|d| d.as_ptr().cast())
    }
}

#[cfg(not(feature = "std"))]
mod detail_store {
    /// Without threads' storage, one buffer for the whole program (the last failure of any thread).
    static DETAIL: spin::Mutex<[u8; super::DETAIL_BYTES]> = spin::Mutex::new([0; super::DETAIL_BYTES]);

    pub(crate) fn set(parts: &[&str]) {
        super::write_detail(&mut DETAIL.lock()[..], parts);
    }

    pub(crate) fn pointer() -> *const core::ffi::c_char {
        // The buffer is a static, so the pointer outlives the lock; its contents change with the
        // next failure of any thread, as the header documents for builds without std.
        DETAIL.lock().as_ptr().cast()
    }
}

/// Records `e` as the calling thread's detail and returns its status. A CUDA program load that
/// failed left its JIT log behind: it is taken (so it is reported once, with its own failure).
pub(crate) fn fail(e: Error) -> ordo_status_t {
    #[cfg(feature = "cuda")]
    if e.code == ErrorCode::InvalidBinary {
        let log = ordo_cuda::CudaBackend::take_last_error_detail();
        if !log.is_empty() {
            detail_store::set(&[e.message, ": ", &log]);
            return e.code as ordo_status_t;
        }
    }
    detail_store::set(&[e.message]);
    e.code as ordo_status_t
}

/// `Uninitialized` unless the runtime is ready: the documented check order is NULL
/// out-parameters, then this, then every other argument (the runtime checks the lifecycle
/// again on entry, so a shutdown racing this check still gets `Uninitialized`).
pub(crate) fn ready() -> ordo_core::Result<()> {
    match crate::runtime().state() {
        ordo_core::State::Ready(_) => Ok(()),
        _ => Err(Error::UNINITIALIZED),
    }
}

/// The status of `r`, recording the detail on failure.
pub(crate) fn status(r: ordo_core::Result<()>) -> ordo_status_t {
    match r {
        Ok(()) => ORDO_SUCCESS,
        Err(e) => fail(e),
    }
}

/// Writes `value` to `out` on success; the status either way.
pub(crate) fn output<T>(out: *mut T, r: ordo_core::Result<T>) -> ordo_status_t {
    match r {
        Ok(v) => {
            // SAFETY: every caller checked `out` for NULL first; C guarantees it is writable.
            unsafe { out.write(v) };
            ORDO_SUCCESS
        }
        Err(e) => fail(e),
    }
}

/// The body of a function with one out-parameter: checks `out`, runs `value` (inside `guard`),
/// and writes the value only on success. The one place that writes through such a pointer.
pub(crate) fn produce<T>(
    out: *mut T,
    what: &'static str,
    value: impl FnOnce() -> ordo_core::Result<T>,
) -> ordo_status_t {
    guard(|| match non_null(out, what) {
        Ok(()) => output(out, value()),
        Err(e) => fail(e),
    })
}

/// `NullPointer` unless `p` is non-null.
pub(crate) fn non_null<T>(p: *const T, what: &'static str) -> ordo_core::Result<()> {
    if p.is_null() { Err(Error::new(ErrorCode::NullPointer, what)) } else { Ok(()) }
}

/// Runs an exported function's body; with std, a panic becomes `ORDO_ERROR_INTERNAL`.
#[inline]
pub(crate) fn guard(body: impl FnOnce() -> ordo_status_t) -> ordo_status_t {
    #[cfg(feature = "std")]
    {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
            Ok(s) => s,
            Err(payload) => {
                let text = payload
                    .downcast_ref::<&str>()
                    .copied()
                    .or_else(|| payload.downcast_ref::<std::string::String>().map(|s| s.as_str()))
                    .unwrap_or("(no message)");
                detail_store::set(&["internal error (a panic in ordo, caught at the C boundary): ", text]);
                ORDO_ERROR_INTERNAL
            }
        }
    }
    #[cfg(not(feature = "std"))]
    body()
}

/// A static, NUL-terminated description of a status ("unknown status" for values that are none).
#[unsafe(no_mangle)]
pub extern "C" fn ordo_status_string(status: ordo_status_t) -> *const c_char {
    let text: &'static core::ffi::CStr = match ErrorCode::from_i32(status) {
        Some(ErrorCode::Success) => c"success",
        Some(ErrorCode::Unknown) => c"unknown error",
        Some(ErrorCode::InvalidArgument) => c"invalid argument",
        Some(ErrorCode::InvalidValue) => c"invalid value",
        Some(ErrorCode::InvalidSize) => c"invalid size",
        Some(ErrorCode::InvalidEnumeration) => c"invalid enumeration value",
        Some(ErrorCode::NullPointer) => c"null pointer",
        Some(ErrorCode::NullHandle) => c"null handle",
        Some(ErrorCode::InvalidHandle) => c"invalid handle",
        Some(ErrorCode::NotFound) => c"not found",
        Some(ErrorCode::OutOfResources) => c"out of resources",
        Some(ErrorCode::InvalidBinary) => c"invalid binary",
        Some(ErrorCode::Unsupported) => c"unsupported",
        Some(ErrorCode::BackendFailure) => c"backend failure",
        Some(ErrorCode::Uninitialized) => c"not initialized",
        Some(ErrorCode::DeviceLost) => c"device lost",
        Some(ErrorCode::TeardownFailed) => c"teardown failed",
        Some(ErrorCode::NotPresent) => c"not present",
        Some(ErrorCode::Internal) => c"internal error",
        Some(ErrorCode::Busy) => c"busy",
        None => c"unknown status",
    };
    text.as_ptr()
}

/// The detail of the calling thread's last failed ordo call (empty if none): which argument or
/// condition, and for a failed CUDA program load the JIT log. Valid until the thread's next
/// failing ordo call. Without std, one buffer is shared by all threads.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_last_error_detail() -> *const c_char {
    detail_store::pointer()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_internal_error_with_a_detail() {
        let status = guard(|| panic!("planted failure"));
        assert_eq!(status, ORDO_ERROR_INTERNAL);
        // SAFETY: the detail is a NUL-terminated thread-local buffer.
        let detail = unsafe { core::ffi::CStr::from_ptr(ordo_last_error_detail()) }.to_str().unwrap();
        assert!(detail.contains("planted failure"), "{detail}");
        assert_eq!(guard(|| ORDO_SUCCESS), ORDO_SUCCESS);
    }

    #[test]
    fn c_strings_are_truncated_at_char_boundaries_and_terminated() {
        let mut buf = [0xffu8; 6];
        copy_c_string(&mut buf, "abcdéf");
        assert_eq!(&buf[..5], b"abcd\0");
        copy_c_string(&mut buf, "ab");
        assert_eq!(&buf[..3], b"ab\0");
    }
}
