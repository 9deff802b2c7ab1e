//! Pure translation of `CUresult` into ordo's error codes. No driver calls.
//!
//! Release calls (destroy, unload, free, primary-context release) map "the driver or the context
//! is already gone" (`CUresult::CUDA_ERROR_DEINITIALIZED`, `CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED`,
//! `CUresult::CUDA_ERROR_INVALID_CONTEXT`) to released-by-driver: at process exit the driver may tear itself
//! down before ordo's teardown runs, and then the object is gone with it.

use cudarc::driver::sys::CUresult;
use ordo_core::{BackendError, BackendResult, ErrorCode};

/// The name of a `CUresult` as a static string (ordo's own table: it must work even after the
/// driver has deinitialised, when `cuGetErrorName` may not).
pub(crate) fn name(r: CUresult) -> &'static str {
    match r {
        CUresult::CUDA_SUCCESS => "CUDA_SUCCESS",
        CUresult::CUDA_ERROR_INVALID_VALUE => "CUDA_ERROR_INVALID_VALUE",
        CUresult::CUDA_ERROR_OUT_OF_MEMORY => "CUDA_ERROR_OUT_OF_MEMORY",
        CUresult::CUDA_ERROR_NOT_INITIALIZED => "CUDA_ERROR_NOT_INITIALIZED",
        CUresult::CUDA_ERROR_DEINITIALIZED => "CUDA_ERROR_DEINITIALIZED",
        CUresult::CUDA_ERROR_STUB_LIBRARY => "CUDA_ERROR_STUB_LIBRARY",
        CUresult::CUDA_ERROR_NO_DEVICE => "CUDA_ERROR_NO_DEVICE",
        CUresult::CUDA_ERROR_INVALID_DEVICE => "CUDA_ERROR_INVALID_DEVICE",
        CUresult::CUDA_ERROR_INVALID_IMAGE => "CUDA_ERROR_INVALID_IMAGE",
        CUresult::CUDA_ERROR_INVALID_CONTEXT => "CUDA_ERROR_INVALID_CONTEXT",
        CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU => "CUDA_ERROR_NO_BINARY_FOR_GPU",
        CUresult::CUDA_ERROR_INVALID_PTX => "CUDA_ERROR_INVALID_PTX",
        CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION => "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        CUresult::CUDA_ERROR_INVALID_SOURCE => "CUDA_ERROR_INVALID_SOURCE",
        CUresult::CUDA_ERROR_INVALID_HANDLE => "CUDA_ERROR_INVALID_HANDLE",
        CUresult::CUDA_ERROR_NOT_FOUND => "CUDA_ERROR_NOT_FOUND",
        CUresult::CUDA_ERROR_NOT_READY => "CUDA_ERROR_NOT_READY",
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS => "CUDA_ERROR_ILLEGAL_ADDRESS",
        CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        CUresult::CUDA_ERROR_LAUNCH_FAILED => "CUDA_ERROR_LAUNCH_FAILED",
        CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED => "CUDA_ERROR_CONTEXT_IS_DESTROYED",
        CUresult::CUDA_ERROR_NOT_SUPPORTED => "CUDA_ERROR_NOT_SUPPORTED",
        CUresult::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH => "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
        CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION => "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        CUresult::CUDA_ERROR_MISALIGNED_ADDRESS => "CUDA_ERROR_MISALIGNED_ADDRESS",
        CUresult::CUDA_ERROR_ASSERT => "CUDA_ERROR_ASSERT",
        CUresult::CUDA_ERROR_LAUNCH_TIMEOUT => "CUDA_ERROR_LAUNCH_TIMEOUT",
        CUresult::CUDA_ERROR_ECC_UNCORRECTABLE => "CUDA_ERROR_ECC_UNCORRECTABLE",
        CUresult::CUDA_ERROR_JIT_COMPILER_NOT_FOUND => "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
        CUresult::CUDA_ERROR_SHARED_OBJECT_INIT_FAILED => "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
        CUresult::CUDA_ERROR_UNKNOWN => "CUDA_ERROR_UNKNOWN",
        _ => "CUDA error (see the native code)",
    }
}

/// The ordo code for a `CUresult`.
pub(crate) fn code(r: CUresult) -> ErrorCode {
    match r {
        CUresult::CUDA_SUCCESS => ErrorCode::Success,
        CUresult::CUDA_ERROR_INVALID_VALUE => ErrorCode::InvalidValue,
        CUresult::CUDA_ERROR_OUT_OF_MEMORY | CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => ErrorCode::OutOfResources,
        CUresult::CUDA_ERROR_NO_DEVICE | CUresult::CUDA_ERROR_STUB_LIBRARY => ErrorCode::NotPresent,
        CUresult::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH => ErrorCode::NotPresent,
        CUresult::CUDA_ERROR_INVALID_DEVICE => ErrorCode::InvalidArgument,
        CUresult::CUDA_ERROR_INVALID_IMAGE
        | CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU
        | CUresult::CUDA_ERROR_INVALID_PTX
        | CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
        | CUresult::CUDA_ERROR_INVALID_SOURCE
        | CUresult::CUDA_ERROR_JIT_COMPILER_NOT_FOUND
        | CUresult::CUDA_ERROR_SHARED_OBJECT_INIT_FAILED => ErrorCode::InvalidBinary,
        CUresult::CUDA_ERROR_NOT_FOUND => ErrorCode::NotFound,
        CUresult::CUDA_ERROR_INVALID_HANDLE
        | CUresult::CUDA_ERROR_INVALID_CONTEXT
        | CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED => ErrorCode::InvalidHandle,
        CUresult::CUDA_ERROR_NOT_SUPPORTED => ErrorCode::Unsupported,
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
        | CUresult::CUDA_ERROR_LAUNCH_FAILED
        | CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
        | CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
        | CUresult::CUDA_ERROR_ASSERT
        | CUresult::CUDA_ERROR_LAUNCH_TIMEOUT
        | CUresult::CUDA_ERROR_ECC_UNCORRECTABLE => ErrorCode::DeviceLost,
        CUresult::CUDA_ERROR_NOT_INITIALIZED | CUresult::CUDA_ERROR_DEINITIALIZED => ErrorCode::BackendFailure,
        _ => ErrorCode::BackendFailure,
    }
}

/// Whether a release call's result means the driver already released the object.
pub(crate) fn released_by_driver(r: CUresult) -> bool {
    matches!(
        r,
        CUresult::CUDA_ERROR_DEINITIALIZED
            | CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED
            | CUresult::CUDA_ERROR_INVALID_CONTEXT
    )
}

/// Whether a launch failed because this thread's current context is not the object's.
pub(crate) fn is_wrong_context(native: i64) -> bool {
    [
        CUresult::CUDA_ERROR_INVALID_CONTEXT,
        CUresult::CUDA_ERROR_INVALID_HANDLE,
        CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED,
    ]
    .iter()
    .any(|&r| r as i64 == native)
}

/// `Ok` for success, the translated error otherwise. The success test is inlined into every
/// driver call's caller; the translation (two tables) stays out of line, off the launch path.
#[inline(always)]
pub(crate) fn check(r: CUresult) -> BackendResult<()> {
    if r == CUresult::CUDA_SUCCESS { Ok(()) } else { Err(error(r)) }
}

/// The `BackendError` of a failed driver call.
#[cold]
#[inline(never)]
fn error(r: CUresult) -> BackendError {
    BackendError::new(code(r), r as i64, name(r))
}

/// `check` for calls that release an object: "already gone" becomes released-by-driver.
pub(crate) fn check_release(r: CUresult) -> BackendResult<()> {
    if released_by_driver(r) { Err(BackendError::released(r as i64, name(r))) } else { check(r) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translation_table() {
        assert_eq!(check(CUresult::CUDA_SUCCESS), Ok(()));
        let e = check(CUresult::CUDA_ERROR_OUT_OF_MEMORY).unwrap_err();
        assert_eq!((e.code, e.native, e.message), (ErrorCode::OutOfResources, 2, "CUDA_ERROR_OUT_OF_MEMORY"));
        assert_eq!(code(CUresult::CUDA_ERROR_INVALID_PTX), ErrorCode::InvalidBinary);
        assert_eq!(code(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS), ErrorCode::DeviceLost);
        assert_eq!(code(CUresult::CUDA_ERROR_NO_DEVICE), ErrorCode::NotPresent);
        let gone = check_release(CUresult::CUDA_ERROR_DEINITIALIZED).unwrap_err();
        assert!(gone.released_by_driver);
        assert_eq!(gone.native, 4);
        assert!(!check(CUresult::CUDA_ERROR_DEINITIALIZED).unwrap_err().released_by_driver);
        assert!(check_release(CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED).unwrap_err().released_by_driver);
        assert!(!check_release(CUresult::CUDA_ERROR_INVALID_VALUE).unwrap_err().released_by_driver);
    }
}
