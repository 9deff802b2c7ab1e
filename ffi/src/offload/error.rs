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
        ErrorCode::BackendFailure | ErrorCode::DeviceLost | ErrorCode::TeardownFailed | ErrorCode::Timeout => {
            OL_ERRC_BACKEND_FAILURE
        }
        ErrorCode::Unknown | ErrorCode::Internal => OL_ERRC_UNKNOWN,
    }
}

/// Converts an ordo result, naming the argument its handle errors are about.
pub(super) fn on<T>(arg: Arg, r: ordo_core::Result<T>) -> OlResult<T> {
    r.map_err(|e| OlError::from_ordo(code_of(&e, arg), e))
}

/// The most distinct `(code, detail)` results kept (at most 4,096 structs and their texts, each
/// detail at most 1,023 bytes). Past it a failure gets its code's fixed result, whose detail says
/// that the text was not kept (the full text is still the thread's `ordo_last_error_detail`).
const KEPT_RESULTS: usize = 4096;

/// One kept result: an error struct pointing into its own detail text. Never freed, never
/// changed, and reachable from `RESULTS` for the life of the process.
struct KeptResult {
    error: ol_error_struct_t,
    _text: Box<[u8]>,
}

// SAFETY: immutable after construction; its pointer points into its own text.
unsafe impl Send for KeptResult {}

/// Every result handed out so far, by code and detail text (liboffload keeps its results in one
/// process-wide set the same way): valid and unchanged for the life of the process, after the
/// failing thread exits too, and bounded by the distinct results rather than the threads.
static RESULTS: Mutex<Option<KeptResults>> = Mutex::new(None);

/// The kept results by code and detail text (without its NUL).
type KeptResults = HashMap<(ol_errc_t, Box<[u8]>), Box<KeptResult>>;

/// The kept result for `code` and `detail` (NUL-free bytes), made the first time they occur.
fn kept_result(code: ol_errc_t, detail: &[u8]) -> ol_result_t {
    let mut results = RESULTS.lock().unwrap_or_else(|p| p.into_inner());
    let results = results.get_or_insert_with(HashMap::new);
    if let Some(kept) = results.get(&(code, Box::from(detail))) {
        return &kept.error;
    }
    let (key, text): (Box<[u8]>, Box<[u8]>) = if results.len() < KEPT_RESULTS {
        (Box::from(detail), [detail, &[0]].concat().into_boxed_slice())
    } else {
        // Full: one more entry per code at most, under an empty key.
        if let Some(kept) = results.get(&(code, Box::from(&[][..]))) {
            return &kept.error;
        }
        let note = b"ordo keeps the first 4,096 distinct ol* error details; this one is the calling thread's ordo_last_error_detail()\0";
        (Box::from(&[][..]), Box::from(&note[..]))
    };
    let error = ol_error_struct_t { Code: code, Details: text.as_ptr().cast() };
    let kept = Box::new(KeptResult { error, _text: text });
    let pointer: *const ol_error_struct_t = &kept.error;
    results.insert((code, key), kept);
    pointer
}

/// Records `e`'s detail as the calling thread's `ordo_last_error_detail` and returns the kept
/// result for its code and detail text.
pub(super) fn fail(e: OlError) -> ol_result_t {
    match e.detail {
        Detail::Text(text) => set_detail(&[text]),
        Detail::Ordo(error) => set_detail_of(error),
    }
    // SAFETY: the thread's NUL-terminated detail text, unchanged until its next ordo call.
    let detail = unsafe { core::ffi::CStr::from_ptr(detail_pointer()) }.to_bytes();
    kept_result(e.code, detail)
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
