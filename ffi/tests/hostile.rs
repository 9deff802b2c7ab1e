//! Regression tests for hostile callers of the foreign ABIs: each case once crashed, corrupted
//! memory, dangled or freed what it should not. The `ol*` cases run everywhere (ordo's host device); the
//! `mgpu*` cases need a CUDA device (without one they are skipped with a printed reason, and
//! `ORDO_REQUIRE_GPU=1` makes that a failure), because the first `mgpu*` call of a process
//! without one exits, as an MLIR program must.

mod common;

use common::{code, host_device};

use core::ffi::c_void;
use core::ptr::null_mut;

use ordo_core::DevicePtr;
use ordo_ffi::offload::*;

/// The tests share the process's one runtime and count init references: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn hostile_calls_are_refused_and_touch_nothing() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: every pointer passed is valid for what the header documents, or is the bad
    // argument under test (which must be refused before it is used).
    unsafe {
        assert!(olInit().is_null());
        // olMemcpy host to host with a size beyond isize::MAX: INVALID_SIZE, and neither buffer
        // is touched (it once ran past both and returned success).
        let host = host_device();
        let (mut dst, src) = ([1u8; 16], [2u8; 16]);
        let r = olMemcpy(null_mut(), dst.as_mut_ptr().cast(), host, src.as_ptr().cast(), host, isize::MAX as usize + 1);
        assert_eq!(code(r), OL_ERRC_INVALID_SIZE);
        assert_eq!(dst, [1u8; 16]);
        let r = olMemcpy(null_mut(), dst.as_mut_ptr().cast(), host, src.as_ptr().cast(), host, usize::MAX);
        assert_eq!(code(r), OL_ERRC_INVALID_SIZE);
        assert!(olMemcpy(null_mut(), dst.as_mut_ptr().cast(), host, src.as_ptr().cast(), host, 16).is_null());
        assert_eq!(dst, [2u8; 16], "a sane host copy still works");
        // olLaunchKernel with an argument size beyond isize::MAX: INVALID_SIZE before anything
        // reads the buffer (the runtime takes it as a slice).
        let dims = ol_kernel_launch_size_args_t {
            Dimensions: 1,
            NumGroups: ol_dimensions_t { x: 1, y: 1, z: 1 },
            GroupSize: ol_dimensions_t { x: 1, y: 1, z: 1 },
            DynSharedMemory: 0,
        };
        let any_kernel = 1usize as ol_symbol_handle_t;
        let r = olLaunchKernel(null_mut(), host, any_kernel, src.as_ptr().cast(), usize::MAX, &dims);
        assert_eq!(code(r), OL_ERRC_INVALID_SIZE);

        // olMemFree of registered host memory: NOT_FOUND, as any address olMemAlloc did not
        // return, and the registration stays until olMemUnregister (olMemFree once released it
        // and answered success: found by fuzz/fuzz_targets/offload_api.rs).
        let mut cpu: Option<ol_device_handle_t> = None;
        unsafe extern "C" fn first_ordo(device: ol_device_handle_t, data: *mut c_void) -> bool {
            // SAFETY: `data` is `cpu` below, alive for the iteration.
            let found = unsafe { &mut *data.cast::<Option<ol_device_handle_t>>() };
            if device != common::host_device() && found.is_none() {
                *found = Some(device);
            }
            true
        }
        assert!(olIterateDevices(Some(first_ordo), (&raw mut cpu).cast()).is_null());
        if let Some(cpu) = cpu {
            let mut region = vec![0u8; 4096];
            let mut pinned = null_mut();
            assert!(olMemRegister(cpu, region.as_mut_ptr().cast(), 4096, 0, &mut pinned).is_null());
            assert_eq!(code(olMemFree(region.as_mut_ptr().cast())), OL_ERRC_NOT_FOUND);
            assert!(olMemUnregister(cpu, region.as_mut_ptr().cast()).is_null(), "still registered");
            assert_eq!(code(olMemUnregister(cpu, region.as_mut_ptr().cast())), OL_ERRC_INVALID_ARGUMENT);
        }

        // An ol_result_t outlives the thread that got it (it pointed into that thread's
        // thread-local storage and dangled after the thread exited).
        let (host_at, dst_at) = (host as usize, dst.as_mut_ptr() as usize);
        let result = std::thread::spawn(move || {
            let host = host_at as ol_device_handle_t;
            let r = olMemcpy(null_mut(), dst_at as *mut c_void, host, dst_at as *const c_void, host, usize::MAX);
            r as usize
        })
        .join()
        .unwrap() as ol_result_t;
        assert_eq!(code(result), OL_ERRC_INVALID_SIZE);
        let details = core::ffi::CStr::from_ptr((*result).Details).to_str().unwrap();
        assert!(details.contains("isize::MAX"), "{details}");

        let rt = ordo::runtime();
        if common::cuda_device_for_mgpu() {
            use ordo_ffi::mlir::*;
            // mgpuMemHostUnregister of device memory frees nothing.
            let device = mgpuMemAlloc(256, null_mut(), 0);
            assert!(!device.is_null());
            mgpuMemHostUnregister(device);
            assert!(rt.mem_info(DevicePtr(device as u64)).is_ok(), "device memory survives a host unregister");
            // mgpuMemcpy with a null side, or with a freed device pointer (which looks like host
            // memory), copies nothing and does not crash.
            let mut back = [7u8; 256];
            mgpuMemcpy(null_mut(), device, 256, null_mut());
            mgpuMemcpy(back.as_mut_ptr().cast(), null_mut(), 256, null_mut());
            mgpuMemFree(device, null_mut());
            let other = [9u8; 256];
            mgpuMemcpy(back.as_mut_ptr().cast(), other.as_ptr().cast_mut().cast(), 256, null_mut());
            mgpuMemcpy(device, other.as_ptr().cast_mut().cast(), 256, null_mut());
            mgpuStreamSynchronize(null_mut());
            assert_eq!(back, [7u8; 256], "nothing was copied");
            // A freed device pointer on one side and a live one on the other: the freed one is
            // not readable host memory, so nothing reaches the driver (which faulted reading it
            // as host memory: found by fuzz/fuzz_targets/mgpu_api.rs on an H100).
            let live = mgpuMemAlloc(256, null_mut(), 0);
            let freed = mgpuMemAlloc(4096, null_mut(), 0);
            assert!(!live.is_null() && !freed.is_null());
            // `live` holds a known pattern (read back below: no copy may change it, and no
            // read of it is of memory nothing wrote).
            let pattern = [5u8; 256];
            mgpuMemcpy(live, pattern.as_ptr().cast_mut().cast(), 256, null_mut());
            mgpuMemFree(freed, null_mut());
            mgpuMemcpy(live, freed, 256, null_mut());
            mgpuMemcpy(freed, live, 256, null_mut());
            // A host side that ends in unreadable memory is refused too (its last byte).
            mgpuMemcpy(live, back.as_mut_ptr().cast(), i64::MAX, null_mut());
            mgpuStreamSynchronize(null_mut());
            mgpuMemcpy(back.as_mut_ptr().cast(), live, 256, null_mut());
            mgpuStreamSynchronize(null_mut());
            assert_eq!(back, pattern, "the live allocation's bytes are untouched");
            assert!(rt.mem_info(DevicePtr(live as u64)).is_ok(), "the live allocation is untouched");
            mgpuMemFree(live, null_mut());
            println!("mgpu*: host unregister of device memory and copies with unknown sides refused");

            // mgpuLaunchKernel with a paramsCount other than the kernel's: one line, nothing
            // launched (the driver read as many pointers as the kernel has, past a shorter
            // array). Here the array holds all four, so a launch would write `c`.
            let ptx = ordo::builtin_program_image(ordo_core::BackendKind::Cuda).unwrap().to_vec();
            let mut ptx = ptx;
            if ptx.last() != Some(&0) {
                ptx.push(0);
            }
            let module = mgpuModuleLoadJIT(ptx.as_ptr().cast(), 2);
            assert!(!module.is_null());
            let add = mgpuModuleGetFunction(module, c"vector_add_f32".as_ptr());
            assert!(!add.is_null());
            let (a, b, c) =
                (mgpuMemAlloc(16, null_mut(), 0), mgpuMemAlloc(16, null_mut(), 0), mgpuMemAlloc(16, null_mut(), 0));
            mgpuMemset32(a, 1.0f32.to_bits(), 4, null_mut());
            mgpuMemset32(b, 2.0f32.to_bits(), 4, null_mut());
            mgpuMemset32(c, 0, 4, null_mut());
            let n = 4u32;
            // Five pointers (the fifth for the count of 5: never a read past the array).
            let mut params = [
                (&raw const a).cast_mut().cast::<c_void>(),
                (&raw const b).cast_mut().cast(),
                (&raw const c).cast_mut().cast(),
                (&raw const n).cast_mut().cast(),
                (&raw const n).cast_mut().cast(),
            ];
            for count in [3i64, 5, 0] {
                mgpuLaunchKernel(add, 1, 1, 1, 4, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut(), count);
            }
            mgpuStreamSynchronize(null_mut());
            let mut out = [9.0f32; 4];
            mgpuMemcpy(out.as_mut_ptr().cast(), c, 16, null_mut());
            mgpuStreamSynchronize(null_mut());
            assert_eq!(out, [0.0; 4], "a launch with a wrong count ran");
            // The right count launches.
            mgpuLaunchKernel(add, 1, 1, 1, 4, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut(), 4);
            mgpuMemcpy(out.as_mut_ptr().cast(), c, 16, null_mut());
            mgpuStreamSynchronize(null_mut());
            assert_eq!(out, [3.0; 4]);
            for p in [a, b, c] {
                mgpuMemFree(p, null_mut());
            }
            mgpuModuleUnload(module);
            println!("mgpu*: launches with a wrong paramsCount refused");

            // A pooled stream destroyed twice with a create between: the second destroy names a
            // stale handle, so the stream is never handed to two owners (the pool once handed
            // the same stream to the next two creates). The same for events.
            let first = mgpuStreamCreate();
            mgpuStreamDestroy(first);
            let second = mgpuStreamCreate();
            assert_ne!(second, first, "a pooled stream comes back under a new handle");
            assert!(
                rt.queue_device(ordo_core::Queue::from_raw(first as u64)).is_err(),
                "the destroyed handle is stale"
            );
            mgpuStreamDestroy(first);
            let third = mgpuStreamCreate();
            assert_ne!(third, second, "the second owner's stream is not handed out again");
            assert!(rt.queue_synchronize(ordo_core::Queue::from_raw(second as u64)).is_ok());
            mgpuStreamDestroy(third);
            mgpuStreamDestroy(second);
            let e1 = mgpuEventCreate();
            mgpuEventDestroy(e1);
            let e2 = mgpuEventCreate();
            assert_ne!(e2, e1);
            mgpuEventDestroy(e1);
            let e3 = mgpuEventCreate();
            assert_ne!(e3, e2, "the second owner's event is not handed out again");
            mgpuEventDestroy(e3);
            mgpuEventDestroy(e2);
            println!("mgpu*: streams and events destroyed twice are never handed out twice");
        }
        assert!(olShutDown().is_null());
    }
}

/// `olGetEventInfo(QUEUE)` racing a final `olShutDown` and re-inits: a success always names the
/// event's queue (it once returned success with NULL when the teardown came between its checks),
/// and a shutdown never forgets the events of a later init.
#[test]
fn event_queue_reads_race_shutdown_and_never_answer_null() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    use std::sync::atomic::{AtomicBool, Ordering};
    static STOP: AtomicBool = AtomicBool::new(false);
    let host = ordo::runtime();
    // SAFETY: valid pointers throughout; handles cross threads as integers.
    unsafe {
        assert!(olInit().is_null());
        let device = host.device(host.platform(0).unwrap(), 0).unwrap().to_raw() as usize;
        assert!(olShutDown().is_null());
        let churn = std::thread::spawn(|| {
            for _ in 0..300 {
                assert!(olInit().is_null());
                let _ = olShutDown();
            }
            STOP.store(true, Ordering::SeqCst);
        });
        let mut answered = 0u32;
        while !STOP.load(Ordering::SeqCst) {
            if !olInit().is_null() {
                continue;
            }
            // The host device's handle changes with each init: find it again.
            let Ok(p) = host.platform(0) else {
                let _ = olShutDown();
                continue;
            };
            let dev = host.device(p, 0).map_or(device, |d| d.to_raw() as usize) as ol_device_handle_t;
            let (mut q, mut e): (ol_queue_handle_t, ol_event_handle_t) = (null_mut(), null_mut());
            if olCreateQueue(dev, &mut q).is_null() && olCreateEvent(q, &mut e).is_null() {
                let mut read: *mut c_void = null_mut();
                let r = olGetEventInfo(e, OL_EVENT_INFO_QUEUE, size_of::<*mut c_void>(), (&raw mut read).cast());
                assert_eq!(code(r), OL_ERRC_SUCCESS, "our own reference keeps the event live");
                assert_eq!(read, q, "the event's queue");
                answered += 1;
            }
            let _ = olShutDown();
        }
        churn.join().unwrap();
        assert!(answered > 0);
    }
}

/// `fork` while other threads are inside `ol*` create/destroy calls: the child starts
/// uninitialised and can init and shut down (`olInit` installed no fork handling, and such a
/// child hung in `olShutDown`).
#[test]
fn a_child_forked_during_ol_calls_can_init_and_shut_down() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;
    static STOP: AtomicBool = AtomicBool::new(false);
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: valid pointers throughout; handles cross threads as integers; the child only
    // makes ol* calls on its one thread and `_exit`s.
    unsafe {
        assert!(olInit().is_null());
        let rt = ordo::runtime();
        let dev = rt.device(rt.platform(0).unwrap(), 0).unwrap().to_raw() as usize;
        let workers: Vec<_> = (0..3)
            .map(|_| {
                std::thread::spawn(move || {
                    while !STOP.load(Ordering::Relaxed) {
                        let mut q: ol_queue_handle_t = null_mut();
                        assert!(olCreateQueue(dev as ol_device_handle_t, &mut q).is_null());
                        assert!(olDestroyQueue(q).is_null());
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20));
        let failures = common::fork::fork_rounds(10, || {
            // The child ends ordo for good: its shutdowns go on until ordo says it is not
            // initialised (one with the fork handling: the child starts uninitialised).
            let mut status = if olInit().is_null() { 3 } else { 1 };
            for _ in 0..8 {
                match code(olShutDown()) {
                    OL_ERRC_SUCCESS => {}
                    OL_ERRC_UNINITIALIZED => {
                        status = if status == 3 { 0 } else { status };
                        break;
                    }
                    _ => {
                        status = 2;
                        break;
                    }
                }
            }
            status
        });
        STOP.store(true, Ordering::Relaxed);
        for w in workers {
            w.join().unwrap();
        }
        assert!(failures.is_empty(), "{failures:#?}");
        assert!(olShutDown().is_null());
    }
}

/// The child side of `a_first_mgpu_call_that_is_a_null_copy_prints_one_line`: runs only when
/// that test starts this binary with `ORDO_HOSTILE_CHILD` set.
#[test]
fn child_null_copy_as_the_first_mgpu_call() {
    if std::env::var_os("ORDO_HOSTILE_CHILD").is_none() {
        return;
    }
    let mut buf = [0u8; 16];
    // SAFETY: the null side is the bad argument under test; `buf` is 16 writable bytes.
    unsafe { ordo_ffi::mlir::mgpuMemcpy(null_mut(), buf.as_mut_ptr().cast(), 16, null_mut()) };
    assert_eq!(buf, [0u8; 16]);
}

/// `mgpuMemcpy` with a NULL side as a process's first `mgpu*` call prints one line, as it does
/// later (it printed nothing: ordo was not initialised yet, and the copy returned as it does
/// after the at-exit teardown). With a CUDA device the line names the copy; without one it is
/// the line every first `mgpu*` call prints there (exit status 1).
#[test]
fn a_first_mgpu_call_that_is_a_null_copy_prints_one_line() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_null_copy_as_the_first_mgpu_call", "--nocapture", "--test-threads=1"])
        .env("ORDO_HOSTILE_CHILD", "1")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    match out.status.code() {
        Some(0) => assert!(lines.len() == 1 && lines[0].contains("cuMemcpyAsync"), "{stderr}"),
        Some(1) => assert!(lines.len() == 1 && lines[0].contains("no CUDA device"), "{stderr}"),
        other => panic!("status {other:?}\n{stderr}"),
    }
}

/// The child side of `an_exit_handler_calling_mgpu_during_the_first_calls_exit_returns`: an exit
/// handler that makes an `mgpu*` call, registered before the process's first `mgpu*` call.
#[test]
fn child_exit_handler_calls_mgpu() {
    if std::env::var_os("ORDO_HOSTILE_EXIT_CHILD").is_none() {
        return;
    }
    extern "C" fn at_exit() {
        let stream = ordo_ffi::mlir::mgpuStreamCreate();
        if !stream.is_null() {
            ordo_ffi::mlir::mgpuStreamDestroy(stream);
        }
    }
    // SAFETY: a plain function.
    assert_eq!(unsafe { libc::atexit(at_exit) }, 0);
    let stream = ordo_ffi::mlir::mgpuStreamCreate();
    if !stream.is_null() {
        ordo_ffi::mlir::mgpuStreamDestroy(stream);
    }
}

/// Without a CUDA device the first `mgpu*` call prints one line and exits with status 1; an
/// exit handler that calls an `mgpu*` function during that exit gets an error and returns (the
/// one-time initialisation called `exit` inside itself, and the handler waited for it forever).
/// With a device the child exits 0, silent.
#[test]
fn an_exit_handler_calling_mgpu_during_the_first_calls_exit_returns() {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_exit_handler_calls_mgpu", "--nocapture", "--test-threads=1"])
        .env("ORDO_HOSTILE_EXIT_CHILD", "1")
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the child hangs at exit");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    match status.code() {
        Some(0) => assert!(lines.is_empty(), "{stderr}"),
        Some(1) => assert!(lines.len() == 1 && lines[0].contains("no CUDA device"), "{stderr}"),
        other => panic!("status {other:?}\n{stderr}"),
    }
}
