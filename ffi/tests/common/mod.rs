//! What the foreign-ABI tests share (each test crate uses part of it).
#![allow(dead_code)]

use core::ffi::c_void;
use core::ptr::null_mut;

use ordo_core::BackendKind;
use ordo_ffi::offload::*;

pub mod fork;

/// The error code of an `ol_result_t` (`OL_ERRC_SUCCESS` for NULL).
pub fn code(r: ol_result_t) -> ol_errc_t {
    // SAFETY: a non-NULL result points to an error struct that lives for the process.
    if r.is_null() { OL_ERRC_SUCCESS } else { unsafe { (*r).Code } }
}

/// liboffload's host device: the last device `olIterateDevices` gives.
pub fn host_device() -> ol_device_handle_t {
    let mut found: ol_device_handle_t = null_mut();
    unsafe extern "C" fn last(device: ol_device_handle_t, data: *mut c_void) -> bool {
        // SAFETY: `data` is `found` below, alive for the iteration.
        unsafe { *data.cast::<ol_device_handle_t>() = device };
        true
    }
    // SAFETY: a valid callback and its data.
    assert_eq!(code(unsafe { olIterateDevices(Some(last), (&raw mut found).cast()) }), OL_ERRC_SUCCESS);
    found
}

/// Whether the initialised default runtime has a CUDA device, so that `mgpu*` calls may be made
/// (the first `mgpu*` call of a process without one exits). Without one, says so, and fails
/// when `ORDO_REQUIRE_GPU=1`.
pub fn cuda_device_for_mgpu() -> bool {
    let rt = ordo::runtime();
    let cuda = (0..rt.platform_count().unwrap())
        .filter_map(|i| rt.platform(i).ok())
        .any(|p| rt.platform_info(p).is_ok_and(|i| i.kind == BackendKind::Cuda && i.device_count > 0));
    if !cuda {
        assert_ne!(
            std::env::var("ORDO_REQUIRE_GPU").as_deref(),
            Ok("1"),
            "ORDO_REQUIRE_GPU=1 but there is no CUDA device"
        );
        println!("skipped the mgpu* part: no CUDA device");
    }
    cuda
}
