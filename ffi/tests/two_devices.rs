//! liboffload's `olMemcpy` between two GPUs, as liboffload takes it: two device handles, with a
//! queue of either device or none, and to and from the host device. Needs two CUDA devices
//! (skipped with a printed reason otherwise; a failure under `ORDO_REQUIRE_GPUS=2`, which the
//! two-GPU pass sets).

mod common;

use common::{code, host_device};

use core::ffi::c_void;
use core::ptr::null_mut;

use ordo_ffi::offload::*;

/// The devices whose platform's backend is CUDA, in `olIterateDevices` order.
fn cuda_devices() -> Vec<ol_device_handle_t> {
    let mut all: Vec<ol_device_handle_t> = Vec::new();
    unsafe extern "C" fn push(device: ol_device_handle_t, data: *mut c_void) -> bool {
        // SAFETY: `data` is `all` below, alive for the iteration.
        unsafe { (*data.cast::<Vec<ol_device_handle_t>>()).push(device) };
        true
    }
    // SAFETY: a valid callback and its data.
    assert_eq!(code(unsafe { olIterateDevices(Some(push), (&raw mut all).cast()) }), OL_ERRC_SUCCESS);
    all.into_iter()
        .filter(|&d| {
            let mut platform: ol_platform_handle_t = null_mut();
            let mut backend: ol_platform_backend_t = 0;
            // SAFETY: out-values of the sizes the properties have.
            unsafe {
                let size = size_of::<ol_platform_handle_t>();
                let r = olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, size, (&raw mut platform).cast());
                assert_eq!(code(r), OL_ERRC_SUCCESS);
                let size = size_of::<ol_platform_backend_t>();
                let r = olGetPlatformInfo(platform, OL_PLATFORM_INFO_BACKEND, size, (&raw mut backend).cast());
                assert_eq!(code(r), OL_ERRC_SUCCESS);
            }
            backend == OL_PLATFORM_BACKEND_CUDA
        })
        .collect()
}

#[test]
fn ol_memcpy_between_two_gpus() {
    // SAFETY: every pointer passed is valid for what the header documents.
    unsafe {
        assert!(olInit().is_null());
        let gpus = cuda_devices();
        if gpus.len() < 2 {
            assert_ne!(std::env::var("ORDO_REQUIRE_GPUS").as_deref(), Ok("2"), "two CUDA devices needed");
            println!("skipped: {} CUDA device(s), two needed", gpus.len());
            assert!(olShutDown().is_null());
            return;
        }
        let (g0, g1, host) = (gpus[0], gpus[1], host_device());
        let n = 16 << 20;
        let data: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
        let (mut a, mut b): (*mut c_void, *mut c_void) = (null_mut(), null_mut());
        assert!(olMemAlloc(g0, OL_ALLOC_TYPE_DEVICE, n, &mut a).is_null());
        assert!(olMemAlloc(g1, OL_ALLOC_TYPE_DEVICE, n, &mut b).is_null());
        let (mut q0, mut q1): (ol_queue_handle_t, ol_queue_handle_t) = (null_mut(), null_mut());
        assert!(olCreateQueue(g0, &mut q0).is_null());
        assert!(olCreateQueue(g1, &mut q1).is_null());
        let mut back = vec![0u8; n];
        assert!(olMemcpy(null_mut(), a, g0, data.as_ptr().cast(), host, n).is_null());
        for (queue, name) in [(null_mut(), "no queue"), (q1, "the destination's queue"), (q0, "the source's queue")] {
            back.fill(0);
            assert!(olMemcpy(null_mut(), b, g1, a, g0, 0).is_null(), "a zero-byte copy");
            assert!(olMemcpy(queue, b, g1, a, g0, n).is_null(), "{name}");
            if !queue.is_null() {
                assert!(olSyncQueue(queue).is_null());
            }
            assert!(olMemcpy(null_mut(), back.as_mut_ptr().cast(), host, b, g1, n).is_null());
            assert!(back == data, "GPU 0 -> GPU 1 on {name}");
        }
        // The other way, and a pointer named with the wrong device: refused as liboffload does.
        assert!(olMemcpy(q0, a, g0, b, g1, n).is_null());
        assert!(olSyncQueue(q0).is_null());
        let wrong = olMemcpy(null_mut(), a, g1, b, g1, n);
        assert_eq!(code(wrong), OL_ERRC_INVALID_ARGUMENT, "a pointer of GPU 0 named with GPU 1");
        assert!(olDestroyQueue(q0).is_null());
        assert!(olDestroyQueue(q1).is_null());
        assert!(olMemFree(a).is_null());
        assert!(olMemFree(b).is_null());
        assert!(olShutDown().is_null());
    }
}
