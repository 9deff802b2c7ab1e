//! `ol*` errors: liboffload's codes for ordo's errors (by argument kind), the calling thread's
//! error struct over the shared boundary (`crate::boundary`), and the first checks of every entry
//! point (initialisation, NULL handles and pointers).

use super::*;

/// An `ol*` failure: a liboffload code and a detail.
pub(super) struct OlError {
    pub(super) code: ol_errc_t,
    /// The detail: ordo's error (its call, message and the driver's number), or a text.
    pub(super) detail: Detail,
}

/// An `ol*` error's detail text.
pub(super) enum Detail {
    Text(&'static str),
    Ordo(Error),
}

impl OlError {
    /// The `ol*` error for ordo's error `e`, with liboffload's code `code`.
    pub(super) fn from_ordo(code: ol_errc_t, e: Error) -> Self {
        Self { code, detail: Detail::Ordo(e) }
    }
}

pub(super) type OlResult<T> = Result<T, OlError>;

pub(super) fn err(code: ol_errc_t, detail: &'static str) -> OlError {
    OlError { code, detail: Detail::Text(detail) }
}

/// Which kind of handle an ordo `InvalidHandle` is about, for its liboffload code.
#[derive(Clone, Copy)]
pub(super) enum Arg {
    Platform,
    Device,
    Queue,
    Event,
    Other,
}

/// liboffload's code for an ordo error about argument `arg`.
pub(super) fn code_of(e: &Error, arg: Arg) -> ol_errc_t {
    match e.code {
        ErrorCode::Success => OL_ERRC_SUCCESS,
        ErrorCode::InvalidHandle => match arg {
            Arg::Platform => OL_ERRC_INVALID_PLATFORM,
            Arg::Device => OL_ERRC_INVALID_DEVICE,
            Arg::Queue => OL_ERRC_INVALID_QUEUE,
            Arg::Event => OL_ERRC_INVALID_EVENT,
            Arg::Other => OL_ERRC_INVALID_ARGUMENT,
        },
        ErrorCode::InvalidArgument | ErrorCode::Busy => OL_ERRC_INVALID_ARGUMENT,
        ErrorCode::InvalidValue => OL_ERRC_INVALID_VALUE,
        ErrorCode::InvalidSize => OL_ERRC_INVALID_SIZE,
        ErrorCode::InvalidEnumeration => OL_ERRC_INVALID_ENUMERATION,
        ErrorCode::NullPointer => OL_ERRC_INVALID_NULL_POINTER,
        ErrorCode::NullHandle => OL_ERRC_INVALID_NULL_HANDLE,
        ErrorCode::NotFound => OL_ERRC_NOT_FOUND,
        ErrorCode::OutOfResources => OL_ERRC_OUT_OF_RESOURCES,
        ErrorCode::InvalidBinary => OL_ERRC_INVALID_BINARY,
        ErrorCode::Unsupported | ErrorCode::NotPresent => OL_ERRC_UNSUPPORTED,
        ErrorCode::Uninitialized => OL_ERRC_UNINITIALIZED,
        ErrorCode::BackendFailure | ErrorCode::DeviceLost | ErrorCode::TeardownFailed => OL_ERRC_BACKEND_FAILURE,
        ErrorCode::Unknown | ErrorCode::Internal => OL_ERRC_UNKNOWN,
    }
}

/// Converts an ordo result, naming the argument its handle errors are about.
pub(super) fn on<T>(arg: Arg, r: ordo_core::Result<T>) -> OlResult<T> {
    r.map_err(|e| OlError::from_ordo(code_of(&e, arg), e))
}

/// A thread's error struct and its detail text, allocated at the thread's first failing `ol*`
/// call and never freed, so that an `ol_result_t` stays valid for the life of the process, even
/// after its thread exited (one per thread that ever failed a call: 1 KiB each).
struct ErrorSlot {
    error: UnsafeCell<ol_error_struct_t>,
    text: UnsafeCell<[u8; 1024]>,
}

thread_local! {
    /// The calling thread's slot, once it has one.
    static SLOT: core::cell::Cell<Option<&'static ErrorSlot>> = const { core::cell::Cell::new(None) };
}

/// Stores `e` in the calling thread's error struct and returns a pointer to it. The detail is
/// also the thread's `ordo_last_error_detail`.
pub(super) fn fail(e: OlError) -> ol_result_t {
    match e.detail {
        Detail::Text(text) => set_detail(&[text]),
        Detail::Ordo(error) => set_detail_of(error),
    }
    let slot: &'static ErrorSlot = SLOT.with(|cell| {
        cell.get().unwrap_or_else(|| {
            let fresh: &'static ErrorSlot = Box::leak(Box::new(ErrorSlot {
                error: UnsafeCell::new(ol_error_struct_t { Code: OL_ERRC_SUCCESS, Details: core::ptr::null() }),
                text: UnsafeCell::new([0; 1024]),
            }));
            cell.set(Some(fresh));
            fresh
        })
    });
    // SAFETY: the slot is written by its own thread only, and no reference into it is held
    // (callers keep the raw pointer returned and read it between their calls); the detail
    // pointer is the thread's NUL-terminated detail text.
    unsafe {
        let detail = core::ffi::CStr::from_ptr(detail_pointer()).to_bytes();
        let text = &mut *slot.text.get();
        let n = detail.len().min(text.len() - 1);
        text[..n].copy_from_slice(&detail[..n]);
        text[n] = 0;
        *slot.error.get() = ol_error_struct_t { Code: e.code, Details: text.as_ptr().cast() };
        slot.error.get().cast_const()
    }
}

/// Runs an entry point's body; a panic becomes `OL_ERRC_UNKNOWN` (it never crosses into C).
#[inline]
pub(super) fn entry(body: impl FnOnce() -> OlResult<()>) -> ol_result_t {
    entry_result(|| result(body()))
}

/// `entry` for a body that makes its own `ol_result_t` (the launch path, which converts its
/// results where it has them); a panic becomes `OL_ERRC_UNKNOWN` all the same.
#[inline(always)]
pub(super) fn entry_result(body: impl FnOnce() -> ol_result_t) -> ol_result_t {
    catch(body, |_| fail(err(OL_ERRC_UNKNOWN, "internal error: a panic was caught at the C boundary")))
}

/// An entry point's answer: NULL for success, else the error's result (`fail`).
#[inline(always)]
pub(super) fn result(r: OlResult<()>) -> ol_result_t {
    match r {
        Ok(()) => core::ptr::null(),
        Err(e) => fail(e),
    }
}

/// `OL_ERRC_UNINITIALIZED` unless ordo is initialised (the first check of every entry point).
pub(super) fn ready() -> OlResult<()> {
    if runtime().is_ready() {
        Ok(())
    } else {
        Err(err(OL_ERRC_UNINITIALIZED, "ordo is not initialised: call olInit first"))
    }
}

pub(super) fn handle<T>(h: *mut T, what: &'static str) -> OlResult<u64> {
    if h.is_null() { Err(err(OL_ERRC_INVALID_NULL_HANDLE, what)) } else { Ok(ptr_to_handle(h)) }
}

pub(super) fn pointer<T>(p: *const T, what: &'static str) -> OlResult<()> {
    if p.is_null() { Err(err(OL_ERRC_INVALID_NULL_POINTER, what)) } else { Ok(()) }
}
