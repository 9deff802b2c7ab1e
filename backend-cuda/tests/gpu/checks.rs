//! What ordo refuses on a real GPU, and where: bad sizes, images and names, launch dimensions
//! beyond the device's limits (the runtime's errors, in both argument forms), truncated binary
//! images (before the driver reads them), cluster shapes; stale and double releases.

use ordo_core::{DeviceInfo, ErrorCode, KernelArgs, LaunchDims, MemKind, Shutdown};
use ordo_cuda::{BUILTIN_PTX, CudaBackend};

use super::{cuda, dev};

#[test]
fn bad_inputs_on_the_gpu() {
    let Some(rt) = cuda() else { return };
    let d = dev(rt, 0);
    let q = rt.queue_create(d).unwrap();
    let e = rt.event_create(d).unwrap();
    // Sizes: zero and huge are rejected before the driver; too large for the device is the driver's.
    assert_eq!(rt.mem_alloc(d, MemKind::Device, 0).unwrap_err().code, ErrorCode::InvalidSize);
    assert_eq!(rt.mem_alloc(d, MemKind::Device, usize::MAX).unwrap_err().code, ErrorCode::InvalidSize);
    let oom = rt.mem_alloc(d, MemKind::Device, 1 << 50).unwrap_err();
    assert_eq!((oom.code, oom.message), (ErrorCode::OutOfResources, "CUDA_ERROR_OUT_OF_MEMORY"));
    // Bad images and names.
    let bad = rt.program_load(d, b".version 7.0\n.target sm_52\n.address_size 64\nthis is not ptx").unwrap_err();
    assert_eq!(bad.code, ErrorCode::InvalidBinary, "{bad}");
    let log = CudaBackend::take_last_error_detail();
    assert!(!log.is_empty(), "the JIT log is kept as the error detail");
    println!("JIT log of the bad image: {log}");
    assert_eq!(rt.program_load(d, b"\x7fELF garbage").unwrap_err().code, ErrorCode::InvalidBinary);
    let p = rt.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
    assert_eq!(rt.kernel_get(p, "no_such_kernel").unwrap_err().code, ErrorCode::NotFound);
    let k = rt.kernel_get(p, "empty").unwrap();
    // Launch limits come from the driver; dimensions beyond them are the runtime's error (which
    // limit), in both argument forms, before the backend's fast launch or its call.
    let beyond = [
        ([1, 1, 1], [2048, 1, 1], "a block dimension exceeds the device's limit"),
        ([1, 1, 1], [1, 1, 65], "a block dimension exceeds the device's limit"),
        ([1, 1, 1], [32, 32, 2], "more threads per block than the device allows"),
        ([0, 1, 1], [1, 1, 1], "grid and block dimensions must all be at least 1"),
        ([1, 65536, 1], [1, 1, 1], "a grid dimension exceeds the device's limit"),
        ([1, 1, 1], [1, 0, 1], "grid and block dimensions must all be at least 1"),
    ];
    for (grid, block, message) in beyond {
        let dims = LaunchDims { grid, block, shared_mem_bytes: 0 };
        // SAFETY: `empty` takes no arguments.
        let e = unsafe { rt.launch(q, k, &dims, &KernelArgs::EMPTY) }.unwrap_err();
        assert_eq!((e.code, e.message), (ErrorCode::InvalidValue, message), "{grid:?} {block:?}");
        // SAFETY: as above (no parameters: an empty buffer).
        let e = unsafe { rt.launch_packed_on(d, q, k, &dims, &[]) }.unwrap_err();
        assert_eq!((e.code, e.message), (ErrorCode::InvalidValue, message), "{grid:?} {block:?}, packed");
    }
    // Dynamic shared memory above 48 KiB works after the (cached) opt-in; above the device limit fails.
    let optin = rt.device_info(d, DeviceInfo::MaxSharedMemoryPerBlockOptin).unwrap().as_int().unwrap() as u32;
    let big = LaunchDims { shared_mem_bytes: 64 * 1024, ..LaunchDims::linear(1, 32) };
    for _ in 0..3 {
        // SAFETY: `empty` takes no arguments.
        unsafe { rt.launch(q, k, &big, &KernelArgs::EMPTY) }.unwrap();
    }
    let over = LaunchDims { shared_mem_bytes: optin + 1, ..LaunchDims::linear(1, 32) };
    // SAFETY: `empty` takes no arguments.
    assert!(unsafe { rt.launch(q, k, &over, &KernelArgs::EMPTY) }.is_err());
    rt.queue_synchronize(q).unwrap();
    // Elapsed time of events that were never recorded is the driver's error, and changes nothing.
    let e2 = rt.event_create(d).unwrap();
    assert!(rt.event_elapsed_ms(e, e2).is_err());
    // Stale and double releases never reach the driver.
    let m = rt.mem_alloc(d, MemKind::Device, 256).unwrap();
    rt.mem_free(m).unwrap();
    assert_eq!(rt.mem_free(m).unwrap_err().code, ErrorCode::NotFound);
    rt.queue_destroy(q).unwrap();
    assert_eq!(rt.queue_destroy(q).unwrap_err().code, ErrorCode::InvalidHandle);
    rt.program_unload(p).unwrap();
    assert_eq!(rt.program_unload(p).unwrap_err().code, ErrorCode::InvalidHandle);
    assert_eq!(rt.kernel_program(k).unwrap_err().code, ErrorCode::InvalidHandle);
    let Shutdown::TornDown(_) = rt.shutdown().unwrap() else { panic!() };
    let report = rt.last_teardown_report().unwrap();
    assert!(report.is_clean(), "{report}");
}

/// Truncated and inconsistent binary images are refused before the driver reads them; a real
/// cubin and fatbin (built with nvcc on the device, when `ORDO_CUBIN`/`ORDO_FATBIN` name them)
/// pass the checks and load.
#[test]
fn binary_images_are_checked_before_the_driver() {
    let Some(rt) = cuda() else { return };
    let d = dev(rt, 0);
    for (var, what) in [("ORDO_CUBIN", "cubin"), ("ORDO_FATBIN", "fatbin")] {
        let Ok(path) = std::env::var(var) else {
            println!("{what}: {var} not set, real image not tried");
            continue;
        };
        let image = std::fs::read(&path).unwrap();
        let p = rt.program_load(d, &image).unwrap_or_else(|e| panic!("{what} {path}: {e}"));
        rt.kernel_get(p, "empty").unwrap();
        for cut in [4, 16, 63, 64, image.len() / 2, image.len() - 1] {
            let e = rt.program_load(d, &image[..cut]).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidBinary, "{what} cut to {cut} bytes");
            assert_eq!(e.native, 0, "refused by ordo, not by the driver");
        }
        println!("{what}: {} bytes load; every truncation is refused before the driver", image.len());
    }
    let twelve = b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00";
    assert_eq!(rt.program_load(d, twelve).unwrap_err().native, 0);
    rt.shutdown().unwrap();
}

/// Kernel parameter counts come from the driver, and a cluster launch checks its cluster
/// against the grid before the driver (the cluster path itself runs in tests/mlir/cluster.mlir).
#[test]
fn kernel_parameters_and_cluster_checks() {
    let Some(rt) = cuda() else { return };
    let d = dev(rt, 0);
    let p = rt.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
    let add = rt.kernel_get(p, "vector_add_f32").unwrap();
    let empty = rt.kernel_get(p, "empty").unwrap();
    assert_eq!(rt.kernel_param_count(add).unwrap(), 4);
    assert_eq!(rt.kernel_param_count(empty).unwrap(), 0);
    let q = rt.queue_create(d).unwrap();
    let dims = LaunchDims { grid: [4, 1, 1], block: [32, 1, 1], shared_mem_bytes: 0 };
    for bad in [[0, 1, 1], [3, 1, 1], [1, 2, 1]] {
        // SAFETY: refused before any driver call.
        let r = unsafe { rt.launch_cluster(q, empty, &dims, bad, &KernelArgs::EMPTY) };
        assert_eq!(r.unwrap_err().code, ErrorCode::InvalidValue, "{bad:?}");
    }
    // SAFETY: `empty` takes no arguments.
    unsafe { rt.launch_cluster(q, empty, &dims, [2, 1, 1], &KernelArgs::EMPTY) }.unwrap();
    rt.queue_synchronize(q).unwrap();
    // An independent (non-blocking) queue runs work like any queue and is synchronised alike.
    let independent = rt.queue_create_independent(d).unwrap();
    // SAFETY: `empty` takes no arguments.
    unsafe { rt.launch(independent, empty, &dims, &KernelArgs::EMPTY) }.unwrap();
    rt.queue_synchronize(independent).unwrap();
    assert!(matches!(rt.shutdown(), Ok(Shutdown::TornDown(s)) if s.is_clean()));
}
