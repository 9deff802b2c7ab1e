//! Pure translation of `hsa_status_t` into ordo's error codes. No HSA calls (the names are
//! ordo's own table, so they work after the runtime has shut down).
//!
//! Release calls (destroy, free, shut down) map `HSA_STATUS_ERROR_NOT_INITIALIZED` to
//! released-by-driver: the runtime, and every object with it, is already gone.

use ordo_core::{BackendError, BackendResult, ErrorCode};

use crate::sys::*;

macro_rules! statuses {
    ($($status:ident => $code:ident,)*) => {
        /// The name of a status.
        pub(crate) fn name(s: hsa_status_t) -> &'static str {
            match s {
                $($status => stringify!($status),)*
                _ => "an HSA status this version of ordo has no name for",
            }
        }

        /// The ordo code for a status.
        pub(crate) fn code(s: hsa_status_t) -> ErrorCode {
            match s {
                $($status => ErrorCode::$code,)*
                _ => ErrorCode::BackendFailure,
            }
        }

        /// The message of a failed `hsa_init` (the absent platform's reason): the status's name,
        /// with what it means there when that is not obvious.
        pub(crate) fn init_failure(s: hsa_status_t) -> &'static str {
            if s == HSA_STATUS_ERROR_OUT_OF_RESOURCES {
                return concat!(
                    "HSA_STATUS_ERROR_OUT_OF_RESOURCES ",
                    "(what the HSA runtime reports without /dev/kfd: no AMD GPU driver here)");
            }
            name(s)
        }
    };
}

statuses! {
    HSA_STATUS_SUCCESS => Success,
    HSA_STATUS_INFO_BREAK => Success,
    HSA_STATUS_ERROR => BackendFailure,
    HSA_STATUS_ERROR_INVALID_ARGUMENT => InvalidArgument,
    HSA_STATUS_ERROR_INVALID_QUEUE_CREATION => InvalidValue,
    HSA_STATUS_ERROR_INVALID_ALLOCATION => OutOfResources,
    HSA_STATUS_ERROR_INVALID_AGENT => InvalidArgument,
    HSA_STATUS_ERROR_INVALID_SIGNAL => InvalidArgument,
    HSA_STATUS_ERROR_INVALID_QUEUE => InvalidArgument,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES => OutOfResources,
    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT => InvalidValue,
    HSA_STATUS_ERROR_NOT_INITIALIZED => Uninitialized,
    HSA_STATUS_ERROR_INVALID_ISA => InvalidBinary,
    HSA_STATUS_ERROR_INVALID_CODE_OBJECT => InvalidBinary,
    HSA_STATUS_ERROR_INVALID_EXECUTABLE => InvalidBinary,
    HSA_STATUS_ERROR_INVALID_SYMBOL_NAME => NotFound,
    HSA_STATUS_ERROR_EXCEPTION => DeviceLost,
    HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER => InvalidBinary,
    HSA_STATUS_ERROR_FATAL => DeviceLost,
}

/// `Ok` for success, else the translated error.
pub(crate) fn check(s: hsa_status_t) -> BackendResult<()> {
    if s == HSA_STATUS_SUCCESS { Ok(()) } else { Err(BackendError::new(code(s), i64::from(s), name(s))) }
}

/// As `check`, for release calls (naming the call): a runtime that is no longer initialised
/// released the object.
pub(crate) fn check_release(call: &'static str, s: hsa_status_t) -> BackendResult<()> {
    check(s).map_err(|e| e.in_call(call)).map_err(|mut e| {
        if s == HSA_STATUS_ERROR_NOT_INITIALIZED {
            e.released_by_driver = true;
        }
        e
    })
}

/// `.result_in(call)` on a status: `Ok` for success, else the translated error naming the HSA
/// call that returned it.
pub(crate) trait StatusExt {
    /// `Ok` for success, else the translated error, naming `call`.
    fn result_in(self, call: &'static str) -> BackendResult<()>;
}

impl StatusExt for hsa_status_t {
    fn result_in(self, call: &'static str) -> BackendResult<()> {
        check(self).map_err(|e| e.in_call(call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_translate() {
        assert!(check(HSA_STATUS_SUCCESS).is_ok());
        let e = check(HSA_STATUS_ERROR_INVALID_CODE_OBJECT).unwrap_err();
        assert_eq!(
            (e.code, e.native, e.message),
            (ErrorCode::InvalidBinary, 0x1010, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT")
        );
        assert_eq!(code(0x7777), ErrorCode::BackendFailure);
        assert!(init_failure(HSA_STATUS_ERROR_OUT_OF_RESOURCES).contains("/dev/kfd"));
        assert_eq!(init_failure(HSA_STATUS_ERROR), "HSA_STATUS_ERROR");
        let e = HSA_STATUS_ERROR_INVALID_AGENT.result_in("hsa_agent_get_info").unwrap_err();
        assert_eq!(e.detail().to_string(), "hsa_agent_get_info: HSA_STATUS_ERROR_INVALID_AGENT (4100)");
    }

    #[test]
    fn not_initialised_is_released_by_driver_only_for_releases() {
        assert!(check_release("hsa_test", HSA_STATUS_ERROR_NOT_INITIALIZED).unwrap_err().released_by_driver);
        assert!(!check(HSA_STATUS_ERROR_NOT_INITIALIZED).unwrap_err().released_by_driver);
        assert!(!check_release("hsa_test", HSA_STATUS_ERROR_INVALID_SIGNAL).unwrap_err().released_by_driver);
    }
}
