//! The one C boundary, shared by the three ABIs (`ordo_*` in `c/`, `mgpu*` in `mlir/`, `ol*` in
//! `offload/`): the first call's init (with the fork handling), catching panics (with std) so
//! none crosses into C, the calling thread's detail text (truncated on a character boundary), C
//! string copies, handle casts, and for `ordo_*` the mapping of results to statuses and the
//! status strings (written once, in `ordo_core`'s `ErrorCode::description_c`). Depends on
//! `ordo_core` and `c::types`; the ABI folders depend on it, and it on none of them.

use core::ffi::c_char;
use core::fmt;

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

/// Writes `text` into `out` as one NUL-terminated C string, truncated on a character boundary
/// (nothing after the first piece that does not fit).
pub(crate) fn copy_c_display(out: &mut [u8], text: impl fmt::Display) {
    /// A `fmt::Write` into a C string buffer.
    struct CText<'a> {
        buf: &'a mut [u8],
        at: usize,
        full: bool,
    }
    impl fmt::Write for CText<'_> {
        fn write_str(&mut self, piece: &str) -> fmt::Result {
            if self.full {
                return Ok(());
            }
            let room = &mut self.buf[self.at..];
            copy_c_string(room, piece);
            let written = room.iter().position(|&b| b == 0).unwrap_or(0);
            self.full = written < piece.len();
            self.at += written;
            Ok(())
        }
    }
    if let Some(first) = out.first_mut() {
        *first = 0;
        let _ = fmt::Write::write_fmt(&mut CText { buf: out, at: 0, full: false }, format_args!("{text}"));
    }
}

/// Parts written one after another.
struct Parts<'a>(&'a [&'a str]);

impl fmt::Display for Parts<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|p| f.write_str(p))
    }
}

#[cfg(feature = "std")]
mod detail_store {
    use std::cell::RefCell;

    std::thread_local! {
        static DETAIL: RefCell<[u8; super::DETAIL_BYTES]> = const { RefCell::new([0; super::DETAIL_BYTES]) };
    }

    pub(crate) fn set(text: impl core::fmt::Display) {
        DETAIL.with(|d| super::copy_c_display(&mut d.borrow_mut()[..], text));
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

    pub(crate) fn set(text: impl core::fmt::Display) {
        super::copy_c_display(&mut DETAIL.lock()[..], text);
    }

    pub(crate) fn pointer() -> *const core::ffi::c_char {
        // The buffer is a static, so the pointer outlives the lock; its contents change with the
        // next failure of any thread, as the header documents for builds without std.
        DETAIL.lock().as_ptr().cast()
    }
}

/// Records `e` as the calling thread's detail (`[call: ]message[ (native)]`, e.g.
/// `cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)`) and returns its status.
pub(crate) fn fail(e: Error) -> ordo_status_t {
    detail_store::set(e.detail());
    e.code as ordo_status_t
}

#[cfg(feature = "std")]
/// As `fail`, with `more` after the message (a compiler's log), when there is any.
pub(crate) fn fail_with(e: Error, more: &str) -> ordo_status_t {
    if more.is_empty() {
        return fail(e);
    }
    detail_store::set(format_args!("{}: {more}", e.detail()));
    e.code as ordo_status_t
}

/// Records the calling thread's detail text: `parts` one after another, truncated on a
/// character boundary to the buffer (1,024 bytes with the NUL).
pub(crate) fn set_detail(parts: &[&str]) {
    detail_store::set(Parts(parts));
}

/// Records `e`'s detail (`[call: ]message[ (native)]`) as the calling thread's detail text.
#[cfg(feature = "offload")]
pub(crate) fn set_detail_of(e: Error) {
    detail_store::set(e.detail());
}

/// The calling thread's detail text, NUL-terminated (without std: the program's).
pub(crate) fn detail_pointer() -> *const c_char {
    detail_store::pointer()
}

/// Runs `body`; with std, a panic (a bug in ordo) gives `on_panic(its message)` instead of
/// unwinding into C. The only place a panic is caught.
#[inline]
pub(crate) fn catch<T>(body: impl FnOnce() -> T, on_panic: impl FnOnce(&str) -> T) -> T {
    #[cfg(feature = "std")]
    {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
            Ok(v) => v,
            Err(payload) => {
                let text = payload
                    .downcast_ref::<&str>()
                    .copied()
                    .or_else(|| payload.downcast_ref::<std::string::String>().map(|s| s.as_str()))
                    .unwrap_or("(no message)");
                on_panic(text)
            }
        }
    }
    #[cfg(not(feature = "std"))]
    {
        let _ = on_panic;
        body()
    }
}

#[cfg(any(feature = "mlir", feature = "offload"))]
/// A handle's raw value as the opaque pointer an ABI hands out (never dereferenced).
#[inline]
pub(crate) fn handle_to_ptr<T>(raw: u64) -> *mut T {
    raw as usize as *mut T
}

#[cfg(any(feature = "mlir", feature = "offload"))]
/// The raw handle value an opaque pointer from `handle_to_ptr` carries.
#[inline]
pub(crate) fn ptr_to_handle<T>(p: *const T) -> u64 {
    p as usize as u64
}

/// What the first call of every ABI (`ordo_init`, `olInit`, MLIR's first `mgpu*` call) does:
/// takes an init reference of the default runtime and, with std, installs the fork handling (in
/// the child of a fork, ordo starts uninitialised with the parent's handles stale, and a fork
/// waits for a create/destroy call in flight instead of copying it half done).
pub(crate) fn init_default() -> ordo_core::Result<()> {
    ordo::runtime().init()?;
    #[cfg(feature = "std")]
    let _ = ordo::runtime().handle_fork();
    Ok(())
}

/// `Uninitialized` unless the runtime is ready: the documented check order is NULL
/// out-parameters, then this, then every other argument (the runtime checks the lifecycle
/// again on entry, so a shutdown racing this check still gets `Uninitialized`).
pub(crate) fn ready() -> ordo_core::Result<()> {
    if ordo::runtime().is_ready() { Ok(()) } else { Err(Error::UNINITIALIZED) }
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

/// A NUL-terminated, UTF-8 name from C.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
pub(crate) unsafe fn c_name<'a>(
    name: *const c_char,
    null: &'static str,
    not_utf8: &'static str,
) -> ordo_core::Result<&'a str> {
    non_null(name, null)?;
    // SAFETY: non-NULL and, by the C caller's contract, NUL-terminated.
    unsafe { core::ffi::CStr::from_ptr(name) }.to_str().map_err(|_| Error::new(ErrorCode::InvalidArgument, not_utf8))
}

/// Runs an exported function's body; with std, a panic becomes `ORDO_ERROR_INTERNAL`.
#[inline]
pub(crate) fn guard(body: impl FnOnce() -> ordo_status_t) -> ordo_status_t {
    catch(body, |text| {
        set_detail(&["internal error (a panic in ordo, caught at the C boundary): ", text]);
        ORDO_ERROR_INTERNAL
    })
}

/// A static, NUL-terminated description of a status ("unknown status" for values that are none).
#[unsafe(no_mangle)]
pub extern "C" fn ordo_status_string(status: ordo_status_t) -> *const c_char {
    match ErrorCode::from_i32(status) {
        Some(code) => code.description_c().as_ptr(),
        None => c"unknown status".as_ptr(),
    }
}

/// The detail of the calling thread's last failed ordo call (empty if none): which argument or
/// condition; for a driver's error, the failing call, the driver's name for its error and its
/// number (e.g. `cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)`); for a failed CUDA program load,
/// then the JIT log. Valid until the thread's next failing ordo call. Without std, one buffer is
/// shared by all threads.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_last_error_detail() -> *const c_char {
    detail_pointer()
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
    fn a_driver_error_reads_call_name_and_number_and_is_cut_on_a_character() {
        let e = Error::from(
            ordo_core::BackendError::new(ErrorCode::BackendFailure, 304, "CUDA_ERROR_OPERATING_SYSTEM")
                .in_call("cuInit"),
        );
        let mut buf = [0xffu8; 64];
        copy_c_display(&mut buf, e.detail());
        let text = core::ffi::CStr::from_bytes_until_nul(&buf).unwrap().to_str().unwrap();
        assert_eq!(text, "cuInit: CUDA_ERROR_OPERATING_SYSTEM (304)");
        // Cut inside "é": the text stops before it, and nothing of a later piece follows.
        let mut small = [0xffu8; 6];
        copy_c_display(&mut small, Parts(&["abcdé", "f"]));
        assert_eq!(&small[..5], b"abcd\0");
        assert_eq!(fail(e), ORDO_ERROR_BACKEND_FAILURE);
        // SAFETY: the detail is a NUL-terminated thread-local buffer.
        let detail = unsafe { core::ffi::CStr::from_ptr(ordo_last_error_detail()) }.to_str().unwrap();
        assert_eq!(detail, "cuInit: CUDA_ERROR_OPERATING_SYSTEM (304)");
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
