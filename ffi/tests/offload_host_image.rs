//! liboffload's API on ordo's CPU device with a host image: `host_image_kernels.c` built as a
//! shared object, checked by `olIsValidBinary`, loaded from memory by `olCreateProgram`, its
//! kernel found by `olGetSymbol` and launched by `olLaunchKernel` with a packed argument struct.

use core::ffi::c_void;
use core::ptr::null_mut;
use std::path::PathBuf;
use std::process::Command;

use ordo_ffi::offload::*;

mod common;

use common::{code, host_device};

/// `host_image_kernels.c` as a shared object for this machine (built once per process: the
/// tests run in parallel).
fn image() -> Vec<u8> {
    static IMAGE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    IMAGE
        .get_or_init(|| {
            let ffi = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
            let so = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("offload_host_image.so");
            let out = Command::new("cc")
                .args(["-std=c99", "-O1", "-shared", "-fPIC", "-I"])
                .arg(ffi.join("include"))
                .arg(ffi.join("tests/c/host_image_kernels.c"))
                .arg("-o")
                .arg(&so)
                .output()
                .expect("the C compiler runs");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            std::fs::read(&so).expect("the shared object")
        })
        .clone()
}

/// ordo's CPU device (`OL_DEVICE_TYPE_CPU`).
fn cpu_device() -> ol_device_handle_t {
    let mut found: ol_device_handle_t = null_mut();
    unsafe extern "C" fn cpu(device: ol_device_handle_t, data: *mut c_void) -> bool {
        let mut kind: ol_device_type_t = 0;
        // SAFETY: a device handle from the iteration; `kind` is writable for its size.
        let r = unsafe {
            olGetDeviceInfo(device, OL_DEVICE_INFO_TYPE, size_of::<ol_device_type_t>(), (&raw mut kind).cast())
        };
        if r.is_null() && kind == OL_DEVICE_TYPE_CPU {
            // SAFETY: `data` is `found` below, alive for the iteration.
            unsafe { *data.cast::<ol_device_handle_t>() = device };
            return false;
        }
        true
    }
    // SAFETY: a valid callback and its data.
    assert_eq!(code(unsafe { olIterateDevices(Some(cpu), (&raw mut found).cast()) }), OL_ERRC_SUCCESS);
    assert!(!found.is_null(), "ordo has a CPU device");
    found
}

#[test]
fn a_host_image_runs_through_liboffloads_api() {
    let image = image();
    // SAFETY: every pointer passed is valid for what the header documents.
    unsafe {
        assert!(olInit().is_null());
        let d = cpu_device();
        let mut valid = false;
        assert!(olIsValidBinary(d, image.as_ptr().cast(), image.len(), &mut valid).is_null());
        assert!(valid, "a shared object of this machine");
        let mut other = image.clone();
        other[18] ^= 0x55;
        assert!(olIsValidBinary(d, other.as_ptr().cast(), other.len(), &mut valid).is_null());
        assert!(!valid, "another machine's");
        let mut program: ol_program_handle_t = null_mut();
        assert_eq!(code(olCreateProgram(d, other.as_ptr().cast(), other.len(), &mut program)), OL_ERRC_INVALID_BINARY);
        assert!(olCreateProgram(d, image.as_ptr().cast(), image.len(), &mut program).is_null());
        let mut kernel: ol_symbol_handle_t = null_mut();
        assert!(olGetSymbol(program, c"add".as_ptr(), OL_SYMBOL_KIND_KERNEL, &mut kernel).is_null());

        const N: u32 = 100;
        let values: Vec<u32> = (0..N).map(|i| i * 2).collect();
        let bytes = (N as usize) * 4;
        let mut data: *mut c_void = null_mut();
        assert!(olMemAlloc(d, OL_ALLOC_TYPE_DEVICE, bytes, &mut data).is_null());
        // The packed struct of add(uint32_t *data, uint32_t step, uint32_t n).
        #[repr(C)]
        struct Args {
            data: *mut c_void,
            step: u32,
            n: u32,
        }
        let args = Args { data, step: 5, n: N };
        let dims = ol_kernel_launch_size_args_t {
            Dimensions: 1,
            NumGroups: ol_dimensions_t { x: 2, y: 1, z: 1 },
            GroupSize: ol_dimensions_t { x: 64, y: 1, z: 1 },
            DynSharedMemory: 0,
        };
        let host_device = host_device();
        let copy =
            |dst: *mut c_void, dst_d, src: *const c_void, src_d| olMemcpy(null_mut(), dst, dst_d, src, src_d, bytes);
        assert!(copy(data, d, values.as_ptr().cast(), host_device).is_null());
        let r = olLaunchKernel(null_mut(), d, kernel, (&raw const args).cast(), size_of::<Args>() - 1, &dims);
        assert_eq!(code(r), OL_ERRC_INVALID_SIZE, "a struct that ends inside the last parameter");
        let r = olLaunchKernel(null_mut(), d, kernel, (&raw const args).cast(), size_of::<Args>(), &dims);
        assert!(r.is_null());
        let mut out = vec![0u32; N as usize];
        assert!(copy(out.as_mut_ptr().cast(), host_device, data, d).is_null());
        assert_eq!(out, values.iter().map(|v| v + 5).collect::<Vec<_>>());
        assert!(olMemFree(data).is_null());
        assert!(olDestroyProgram(program).is_null());
        assert!(olShutDown().is_null());
    }
}

/// A child forked while other threads load host images (and register their tables) can init,
/// load an image and shut down: the registration's locks are free in the child (before the
/// fork handling they could be held by a parent thread that does not exist there).
#[test]
fn a_child_forked_during_host_image_loads_can_load_one() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static STOP: AtomicBool = AtomicBool::new(false);
    let image = image();
    // SAFETY: valid pointers throughout; handles cross threads as integers; the child only
    // makes ol* calls on its one thread and `_exit`s.
    unsafe {
        assert!(olInit().is_null());
        let d = cpu_device() as usize;
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let image = image.clone();
                std::thread::spawn(move || {
                    while !STOP.load(Ordering::Relaxed) {
                        let mut p: ol_program_handle_t = null_mut();
                        let r = olCreateProgram(d as ol_device_handle_t, image.as_ptr().cast(), image.len(), &mut p);
                        assert!(r.is_null());
                        assert!(olDestroyProgram(p).is_null());
                    }
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let failures = common::fork::fork_rounds(40, || {
            let mut p: ol_program_handle_t = null_mut();
            if !olInit().is_null() {
                1
            } else if !olCreateProgram(cpu_device(), image.as_ptr().cast(), image.len(), &mut p).is_null() {
                2
            } else if !olDestroyProgram(p).is_null() || !olShutDown().is_null() {
                3
            } else {
                0
            }
        });
        STOP.store(true, Ordering::Relaxed);
        for w in workers {
            w.join().unwrap();
        }
        assert!(failures.is_empty(), "{failures:#?}");
        assert!(olShutDown().is_null());
    }
}
