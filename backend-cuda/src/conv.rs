//! Pure translation of `CUresult` into ordo's error codes. No driver calls.
//!
//! Release calls (destroy, unload, free, primary-context release) map "the driver or the context
//! is already gone" (`CUresult::CUDA_ERROR_DEINITIALIZED`, `CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED`,
//! `CUresult::CUDA_ERROR_INVALID_CONTEXT`) to released-by-driver: at process exit the driver may tear itself
//! down before ordo's teardown runs, and then the object is gone with it.

use cudarc::driver::sys::CUresult;
use ordo_core::{BackendError, BackendResult, ErrorCode};

/// The name of a `CUresult` as a static string (ordo's own table, by number, of every code the
/// CUDA 13.0 header names: it must work even after the driver has deinitialised, when
/// `cuGetErrorName` may not, and for codes the bindings' enum lacks).
pub(crate) fn name(r: CUresult) -> &'static str {
    name_of(r as i64)
}

/// The name of a CUDA driver error number.
pub(crate) fn name_of(native: i64) -> &'static str {
    match native {
        0 => "CUDA_SUCCESS",
        1 => "CUDA_ERROR_INVALID_VALUE",
        2 => "CUDA_ERROR_OUT_OF_MEMORY",
        3 => "CUDA_ERROR_NOT_INITIALIZED",
        4 => "CUDA_ERROR_DEINITIALIZED",
        5 => "CUDA_ERROR_PROFILER_DISABLED",
        6 => "CUDA_ERROR_PROFILER_NOT_INITIALIZED",
        7 => "CUDA_ERROR_PROFILER_ALREADY_STARTED",
        8 => "CUDA_ERROR_PROFILER_ALREADY_STOPPED",
        34 => "CUDA_ERROR_STUB_LIBRARY",
        36 => "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER",
        46 => "CUDA_ERROR_DEVICE_UNAVAILABLE",
        47 => "CUDA_ERROR_MULTICAST_RESOURCE_FULL",
        100 => "CUDA_ERROR_NO_DEVICE",
        101 => "CUDA_ERROR_INVALID_DEVICE",
        102 => "CUDA_ERROR_DEVICE_NOT_LICENSED",
        200 => "CUDA_ERROR_INVALID_IMAGE",
        201 => "CUDA_ERROR_INVALID_CONTEXT",
        202 => "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
        205 => "CUDA_ERROR_MAP_FAILED",
        206 => "CUDA_ERROR_UNMAP_FAILED",
        207 => "CUDA_ERROR_ARRAY_IS_MAPPED",
        208 => "CUDA_ERROR_ALREADY_MAPPED",
        209 => "CUDA_ERROR_NO_BINARY_FOR_GPU",
        210 => "CUDA_ERROR_ALREADY_ACQUIRED",
        211 => "CUDA_ERROR_NOT_MAPPED",
        212 => "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
        213 => "CUDA_ERROR_NOT_MAPPED_AS_POINTER",
        214 => "CUDA_ERROR_ECC_UNCORRECTABLE",
        215 => "CUDA_ERROR_UNSUPPORTED_LIMIT",
        216 => "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
        217 => "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
        218 => "CUDA_ERROR_INVALID_PTX",
        219 => "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
        220 => "CUDA_ERROR_NVLINK_UNCORRECTABLE",
        221 => "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
        222 => "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        223 => "CUDA_ERROR_JIT_COMPILATION_DISABLED",
        224 => "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
        225 => "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
        226 => "CUDA_ERROR_CONTAINED",
        227 => "CUDA_ERROR_INSUFFICIENT_LOADER_VERSION",
        300 => "CUDA_ERROR_INVALID_SOURCE",
        301 => "CUDA_ERROR_FILE_NOT_FOUND",
        302 => "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
        303 => "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
        304 => "CUDA_ERROR_OPERATING_SYSTEM",
        400 => "CUDA_ERROR_INVALID_HANDLE",
        401 => "CUDA_ERROR_ILLEGAL_STATE",
        402 => "CUDA_ERROR_LOSSY_QUERY",
        500 => "CUDA_ERROR_NOT_FOUND",
        600 => "CUDA_ERROR_NOT_READY",
        700 => "CUDA_ERROR_ILLEGAL_ADDRESS",
        701 => "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        702 => "CUDA_ERROR_LAUNCH_TIMEOUT",
        703 => "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
        704 => "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
        705 => "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
        708 => "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
        709 => "CUDA_ERROR_CONTEXT_IS_DESTROYED",
        710 => "CUDA_ERROR_ASSERT",
        711 => "CUDA_ERROR_TOO_MANY_PEERS",
        712 => "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
        713 => "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
        714 => "CUDA_ERROR_HARDWARE_STACK_ERROR",
        715 => "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        716 => "CUDA_ERROR_MISALIGNED_ADDRESS",
        717 => "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        718 => "CUDA_ERROR_INVALID_PC",
        719 => "CUDA_ERROR_LAUNCH_FAILED",
        720 => "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
        721 => "CUDA_ERROR_TENSOR_MEMORY_LEAK",
        800 => "CUDA_ERROR_NOT_PERMITTED",
        801 => "CUDA_ERROR_NOT_SUPPORTED",
        802 => "CUDA_ERROR_SYSTEM_NOT_READY",
        803 => "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
        804 => "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
        805 => "CUDA_ERROR_MPS_CONNECTION_FAILED",
        806 => "CUDA_ERROR_MPS_RPC_FAILURE",
        807 => "CUDA_ERROR_MPS_SERVER_NOT_READY",
        808 => "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
        809 => "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED",
        810 => "CUDA_ERROR_MPS_CLIENT_TERMINATED",
        811 => "CUDA_ERROR_CDP_NOT_SUPPORTED",
        812 => "CUDA_ERROR_CDP_VERSION_MISMATCH",
        900 => "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
        901 => "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
        902 => "CUDA_ERROR_STREAM_CAPTURE_MERGE",
        903 => "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
        904 => "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
        905 => "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
        906 => "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
        907 => "CUDA_ERROR_CAPTURED_EVENT",
        908 => "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
        909 => "CUDA_ERROR_TIMEOUT",
        910 => "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
        911 => "CUDA_ERROR_EXTERNAL_DEVICE",
        912 => "CUDA_ERROR_INVALID_CLUSTER_SIZE",
        913 => "CUDA_ERROR_FUNCTION_NOT_LOADED",
        914 => "CUDA_ERROR_INVALID_RESOURCE_TYPE",
        915 => "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION",
        916 => "CUDA_ERROR_KEY_ROTATION",
        917 => "CUDA_ERROR_STREAM_DETACHED",
        918 => "CUDA_ERROR_GRAPH_RECAPTURE_FAILURE",
        919 => "CUDA_ERROR_FABRIC_NOT_READY",
        999 => "CUDA_ERROR_UNKNOWN",
        _ => "a CUDA error this version of ordo has no name for",
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

/// `Ok` for success, the translated error otherwise, naming the driver call (`call`) that
/// returned `r`. The success test is inlined into every driver call's caller; the translation
/// (two tables) stays out of line, off the launch path.
#[inline(always)]
pub(crate) fn check(call: &'static str, r: CUresult) -> BackendResult<()> {
    if r == CUresult::CUDA_SUCCESS { Ok(()) } else { Err(error(call, r)) }
}

/// The `BackendError` of a failed driver call.
#[cold]
#[inline(never)]
pub(crate) fn error(call: &'static str, r: CUresult) -> BackendError {
    BackendError::new(code(r), r as i64, name(r)).in_call(call)
}

/// `check` for calls that release an object: "already gone" becomes released-by-driver.
pub(crate) fn check_release(call: &'static str, r: CUresult) -> BackendResult<()> {
    if released_by_driver(r) { Err(BackendError::released(r as i64, name(r)).in_call(call)) } else { check(call, r) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_errors_are_named_with_their_call_and_number() {
        assert_eq!(name_of(46), "CUDA_ERROR_DEVICE_UNAVAILABLE");
        assert_eq!(name_of(304), "CUDA_ERROR_OPERATING_SYSTEM");
        assert_eq!(name_of(999), "CUDA_ERROR_UNKNOWN");
        assert_eq!(name_of(123_456), "a CUDA error this version of ordo has no name for");
        let e = error("cuInit", CUresult::CUDA_ERROR_OPERATING_SYSTEM);
        assert_eq!(e.detail().to_string(), "cuInit: CUDA_ERROR_OPERATING_SYSTEM (304)");
        let e = ordo_core::Error::from(e);
        assert_eq!(e.to_string(), "backend failure: cuInit: CUDA_ERROR_OPERATING_SYSTEM (304)");
    }

    #[test]
    fn translation_table() {
        assert_eq!(check("cuTest", CUresult::CUDA_SUCCESS), Ok(()));
        let e = check("cuTest", CUresult::CUDA_ERROR_OUT_OF_MEMORY).unwrap_err();
        assert_eq!((e.code, e.native, e.message), (ErrorCode::OutOfResources, 2, "CUDA_ERROR_OUT_OF_MEMORY"));
        assert_eq!(code(CUresult::CUDA_ERROR_INVALID_PTX), ErrorCode::InvalidBinary);
        assert_eq!(code(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS), ErrorCode::DeviceLost);
        assert_eq!(code(CUresult::CUDA_ERROR_NO_DEVICE), ErrorCode::NotPresent);
        let gone = check_release("cuTest", CUresult::CUDA_ERROR_DEINITIALIZED).unwrap_err();
        assert!(gone.released_by_driver);
        assert_eq!(gone.native, 4);
        assert!(!check("cuTest", CUresult::CUDA_ERROR_DEINITIALIZED).unwrap_err().released_by_driver);
        assert!(check_release("cuTest", CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED).unwrap_err().released_by_driver);
        assert!(!check_release("cuTest", CUresult::CUDA_ERROR_INVALID_VALUE).unwrap_err().released_by_driver);
    }
}
