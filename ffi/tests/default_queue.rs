//! The per-device default queue exists once and is race-free across the foreign ABIs: threads
//! whose first queue-less `ol*` launches come at once leave exactly one new queue on ordo's host
//! device, and, on a machine with a CUDA device, threads whose first null-stream `mgpu*` calls
//! come at once leave exactly one new queue on it (without a CUDA device that part is skipped
//! with a printed reason; `ORDO_REQUIRE_GPU=1` makes it a failure). Both ABIs use the runtime's
//! `default_queue`, so the two parts check the same queue's creation from two callers.

mod common;

use core::ffi::c_void;
use core::ptr::null_mut;
use std::sync::Barrier;

use ordo_ffi::offload::*;

const THREADS: usize = 16;

fn live_queues() -> usize {
    ordo::runtime().live_objects().expect("ordo is initialised").queues
}

/// Runs `call` on `THREADS` threads released at once.
fn at_once(call: impl Fn() + Sync) {
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                barrier.wait();
                call();
            });
        }
    });
}

#[test]
fn racing_first_calls_of_ol_and_mgpu_make_one_default_queue_per_device() {
    // SAFETY: every pointer passed below is valid as liboffload's header requires.
    unsafe {
        assert!(olInit().is_null());
        let rt = ordo::runtime();
        let host = rt.device(rt.platform(0).unwrap(), 0).unwrap();
        let dev: ol_device_handle_t = host.to_raw() as usize as *mut c_void;
        let image = b"ordo.builtin";
        let mut program: ol_program_handle_t = null_mut();
        assert!(olCreateProgram(dev, image.as_ptr().cast(), image.len(), &mut program).is_null());
        let mut kernel: ol_symbol_handle_t = null_mut();
        assert!(olGetSymbol(program, c"vector_add_f32".as_ptr(), OL_SYMBOL_KIND_KERNEL, &mut kernel).is_null());
        let mut buf: *mut c_void = null_mut();
        assert!(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, 256, &mut buf).is_null());
        /// `vector_add_f32(a, b, c, n)` as liboffload packs it.
        #[repr(C)]
        struct Args {
            a: *mut c_void,
            b: *mut c_void,
            c: *mut c_void,
            n: u32,
        }
        let args = Args { a: buf, b: buf, c: buf, n: 4 };
        let one = ol_dimensions_t { x: 1, y: 1, z: 1 };
        let dims = ol_kernel_launch_size_args_t { Dimensions: 1, NumGroups: one, GroupSize: one, DynSharedMemory: 0 };
        // Addresses, so that the threads may share them.
        let (dev_at, kernel_at, args_at) = (dev as usize, kernel as usize, &args as *const Args as usize);
        let before = live_queues();
        at_once(|| {
            let r = olLaunchKernel(
                null_mut(),
                dev_at as *mut c_void,
                kernel_at as *mut c_void,
                args_at as *const c_void,
                size_of::<Args>(),
                &dims,
            );
            assert!(r.is_null(), "a queue-less launch succeeds");
        });
        assert_eq!(live_queues(), before + 1, "one default queue for the host device");

        // MLIR's null stream on the CUDA device (the first mgpu* call of a process without one
        // exits, as an MLIR program must, so it is made only where there is a device).
        if common::cuda_device_for_mgpu() {
            let before = live_queues();
            at_once(|| ordo_ffi::mlir::mgpuStreamSynchronize(null_mut()));
            assert_eq!(live_queues(), before + 1, "one default queue for the CUDA device");
            println!("mgpu*: {THREADS} racing first null-stream calls made one queue");
        }
        assert!(olMemFree(buf).is_null());
        assert!(olShutDown().is_null());
    }
}
