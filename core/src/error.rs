//! Error codes and error values shared by every layer of ordo.
//!
//! `ErrorCode` is `#[repr(i32)]` and its values are part of the C ABI: never renumber a variant.
//! Depends on nothing else in the crate.

use core::fmt;

/// The status of an ordo operation, shared by Rust and C (`ordo_status_t`). `Success` is 0.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    /// The operation succeeded.
    Success = 0,
    /// An error that fits no other code.
    Unknown = 1,
    /// An argument is invalid in combination with the others (e.g. objects of two devices).
    InvalidArgument = 2,
    /// A numeric argument is out of its valid range (e.g. a zero grid dimension).
    InvalidValue = 3,
    /// A size is zero, too large, or runs past the end of an allocation.
    InvalidSize = 4,
    /// An enumeration value is not one of the defined values.
    InvalidEnumeration = 5,
    /// A required pointer is null.
    NullPointer = 6,
    /// A handle is null (zero).
    NullHandle = 7,
    /// A handle is stale (released or from an earlier init), forged, or of another kind.
    InvalidHandle = 8,
    /// A named thing (kernel, device address) does not exist.
    NotFound = 9,
    /// A fixed-capacity table, a reference count or the backend's memory is exhausted.
    OutOfResources = 10,
    /// A program image is not valid for the device.
    InvalidBinary = 11,
    /// The operation is not supported by this backend or device.
    Unsupported = 12,
    /// The backend reported a failure that has no more specific code.
    BackendFailure = 13,
    /// The runtime is not initialised (before `init`, or after the final `shutdown`).
    Uninitialized = 14,
    /// The device was lost or a kernel faulted; the device is unusable.
    DeviceLost = 15,
    /// The final shutdown completed, but some objects failed to release (see the report).
    TeardownFailed = 16,
    /// The backend's driver or devices are not present on this machine.
    NotPresent = 17,
    /// An internal error: a bug in ordo (e.g. a caught panic at the C boundary).
    Internal = 18,
    /// The call would wait for the calling thread itself (a lifecycle or create/destroy call, or
    /// a wait for host queues, from inside a host kernel, host function or teardown observer;
    /// any call from a callback while another thread's create/destroy call holds the runtime and
    /// a thread waits for host queues), an event's elapsed time before its record ran (host
    /// device), or a backend is already initialised by another runtime.
    Busy = 19,
    /// A wait ran out of time (a communicator's peer that never joined).
    Timeout = 20,
}

impl ErrorCode {
    /// Every code, in numeric order.
    pub const ALL: [ErrorCode; 21] = [
        Self::Success,
        Self::Unknown,
        Self::InvalidArgument,
        Self::InvalidValue,
        Self::InvalidSize,
        Self::InvalidEnumeration,
        Self::NullPointer,
        Self::NullHandle,
        Self::InvalidHandle,
        Self::NotFound,
        Self::OutOfResources,
        Self::InvalidBinary,
        Self::Unsupported,
        Self::BackendFailure,
        Self::Uninitialized,
        Self::DeviceLost,
        Self::TeardownFailed,
        Self::NotPresent,
        Self::Internal,
        Self::Busy,
        Self::Timeout,
    ];

    /// A short, static description of the code, NUL-terminated (what `ordo_status_string`
    /// returns to C; the one place these texts are written).
    pub const fn description_c(self) -> &'static core::ffi::CStr {
        match self {
            Self::Success => c"success",
            Self::Unknown => c"unknown error",
            Self::InvalidArgument => c"invalid argument",
            Self::InvalidValue => c"invalid value",
            Self::InvalidSize => c"invalid size",
            Self::InvalidEnumeration => c"invalid enumeration value",
            Self::NullPointer => c"null pointer",
            Self::NullHandle => c"null handle",
            Self::InvalidHandle => c"invalid handle",
            Self::NotFound => c"not found",
            Self::OutOfResources => c"out of resources",
            Self::InvalidBinary => c"invalid binary",
            Self::Unsupported => c"unsupported",
            Self::BackendFailure => c"backend failure",
            Self::Uninitialized => c"not initialized",
            Self::DeviceLost => c"device lost",
            Self::TeardownFailed => c"teardown failed",
            Self::NotPresent => c"not present",
            Self::Internal => c"internal error",
            Self::Busy => c"busy",
            Self::Timeout => c"timed out",
        }
    }

    /// A short, static description of the code (`description_c` without its NUL).
    pub const fn description(self) -> &'static str {
        match self.description_c().to_str() {
            Ok(text) => text,
            Err(_) => "",
        }
    }

    /// The code with this numeric value, if there is one.
    pub fn from_i32(value: i32) -> Option<Self> {
        Self::ALL.get(usize::try_from(value).ok()?).copied()
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// An error returned by the runtime: a code, the backend's own code where one exists, the
/// driver call that failed where there is one, and a static detail message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    /// What went wrong, as a stable code.
    pub code: ErrorCode,
    /// The backend's own code (e.g. a `CUresult`), or 0 when the error came from ordo itself.
    pub native: i64,
    /// A static detail message naming the argument or condition; for a driver's error, the
    /// driver's name for it (e.g. `CUDA_ERROR_DEVICES_UNAVAILABLE`).
    pub message: &'static str,
    /// The driver call that failed (e.g. `cuInit`), or empty.
    pub call: &'static str,
}

impl Error {
    /// An error raised by ordo itself (no backend code).
    pub const fn new(code: ErrorCode, message: &'static str) -> Self {
        Self { code, native: 0, message, call: "" }
    }

    /// The error's detail as users read it: the driver call, the message (the driver's name for
    /// its error) and the driver's number, e.g. `cuInit: CUDA_ERROR_DEVICES_UNAVAILABLE (46)`;
    /// for an error of ordo's own, the message alone.
    pub const fn detail(&self) -> ErrorDetail {
        ErrorDetail { native: self.native, message: self.message, call: self.call }
    }

    /// `Busy`: the call would wait for the calling thread itself.
    pub const REENTRANT: Self = Self::new(
        ErrorCode::Busy,
        "called from inside a host kernel or teardown observer, where this call would wait for itself",
    );

    /// `Uninitialized`: the call arrived outside `Ready`.
    pub const UNINITIALIZED: Self =
        Self::new(ErrorCode::Uninitialized, "ordo is not initialized (call init first, or it was shut down)");
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.detail())
    }
}

/// The detail of an [`Error`] or a [`BackendError`] (`Error::detail`): `[call: ]message[ (native)]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorDetail {
    native: i64,
    message: &'static str,
    call: &'static str,
}

impl fmt::Display for ErrorDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.call.is_empty() {
            write!(f, "{}: ", self.call)?;
        }
        f.write_str(self.message)?;
        if self.native != 0 {
            write!(f, " ({})", self.native)?;
        }
        Ok(())
    }
}

impl core::error::Error for Error {}

/// An error reported by a backend: a code, the backend's own code, and whether it means that the
/// driver already released the object (e.g. `CUDA_ERROR_DEINITIALIZED` during process exit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackendError {
    /// The translated code.
    pub code: ErrorCode,
    /// The backend's own code.
    pub native: i64,
    /// The driver already released the object; during teardown this is counted, not reported.
    pub released_by_driver: bool,
    /// A static detail message (for a driver's error, the driver's name for it).
    pub message: &'static str,
    /// The driver call that failed (e.g. `cuInit`), or empty.
    pub call: &'static str,
}

impl BackendError {
    /// A backend error with a translated code and the backend's own code.
    pub const fn new(code: ErrorCode, native: i64, message: &'static str) -> Self {
        Self { code, native, released_by_driver: false, message, call: "" }
    }

    /// The same error, naming the driver call that returned it.
    pub const fn in_call(mut self, call: &'static str) -> Self {
        self.call = call;
        self
    }

    /// The error's detail as users read it (see `Error::detail`).
    pub const fn detail(&self) -> ErrorDetail {
        ErrorDetail { native: self.native, message: self.message, call: self.call }
    }

    /// The backend's driver or devices are absent: the platform is recorded as absent.
    pub const fn not_present(message: &'static str) -> Self {
        Self::new(ErrorCode::NotPresent, 0, message)
    }

    /// A backend error carrying an error of ordo's own (no backend code).
    pub const fn from_error(e: Error) -> Self {
        Self::new(e.code, e.native, e.message).in_call(e.call)
    }

    /// The driver already released the object (its context or the driver itself is gone).
    pub const fn released(native: i64, message: &'static str) -> Self {
        Self { code: ErrorCode::BackendFailure, native, released_by_driver: true, message, call: "" }
    }
}

impl From<BackendError> for Error {
    fn from(e: BackendError) -> Self {
        Self { code: e.code, native: e.native, message: e.message, call: e.call }
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Error::from(*self), f)?;
        if self.released_by_driver {
            f.write_str(" [already released by the driver]")?;
        }
        Ok(())
    }
}

impl core::error::Error for BackendError {}

/// The result type of ordo operations.
pub type Result<T> = core::result::Result<T, Error>;

/// Shorthand for an `Err` raised by ordo itself.
pub(crate) const fn fail<T>(code: ErrorCode, message: &'static str) -> Result<T> {
    Err(Error::new(code, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_dense_and_round_trip() {
        for (i, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(*code as i32, i as i32);
            assert_eq!(ErrorCode::from_i32(i as i32), Some(*code));
        }
        assert_eq!(ErrorCode::from_i32(-1), None);
        assert_eq!(ErrorCode::from_i32(ErrorCode::ALL.len() as i32), None);
    }

    #[test]
    fn backend_error_keeps_native_code() {
        let e: Error = BackendError::new(ErrorCode::DeviceLost, 719, "launch failed").into();
        assert_eq!(e.code, ErrorCode::DeviceLost);
        assert_eq!(e.native, 719);
    }
}
