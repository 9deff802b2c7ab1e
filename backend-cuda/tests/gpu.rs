//! The CPU suite's semantics on a real GPU, real kernels on real data, teardown while kernels run,
//! and several devices when there are several.
//!
//! Without a CUDA driver these tests check that CUDA is reported absent with a reason, and skip
//! the rest with a printed reason; with `ORDO_REQUIRE_GPU=1` (the device runs) a missing GPU fails.
//! Run with `--test-threads=1`: the tests share the process's primary contexts.

use std::ffi::c_void;
use std::time::{Duration, Instant};

use ordo_core::{
    Backend, Device, DeviceInfo, ErrorCode, FillValue, InfoValue, KernelArgs, LaunchDims, MemKind, Runtime, Shutdown,
    TeardownStep,
};
use ordo_cuda::{BUILTIN_PTX, CudaBackend};

fn runtime() -> &'static Runtime {
    let cuda: &'static CudaBackend = Box::leak(Box::new(CudaBackend::new()));
    let backends: &'static [&'static dyn Backend] = Box::leak(Box::new([cuda as &dyn Backend]));
    let state: &'static ordo_core::RuntimeState = ordo_core::RuntimeState::new_in(Box::leak(Box::new_uninit()));
    // SAFETY: a fresh state, used by this runtime only.
    Box::leak(Box::new(unsafe { Runtime::with_state(backends, state) }))
}

/// An initialised runtime over CUDA, or `None` (with the reason printed) when there is no GPU.
fn cuda() -> Option<&'static Runtime> {
    let rt = runtime();
    rt.init().expect("init never fails for an absent platform");
    let info = rt.platform_info(rt.platform(0).unwrap()).unwrap();
    if let Some(reason) = info.absent {
        assert!(
            std::env::var("ORDO_REQUIRE_GPU").as_deref() != Ok("1"),
            "ORDO_REQUIRE_GPU=1 but CUDA is absent: {}",
            reason.message
        );
        println!("skipped: CUDA is absent: {}", reason.message);
        rt.shutdown().unwrap();
        return None;
    }
    Some(rt)
}

fn dev(rt: &Runtime, i: u32) -> Device {
    rt.device(rt.platform(0).unwrap(), i).unwrap()
}

/// The input checks on the GPU (a module of this test binary, not a test target of its own).
#[path = "gpu/checks.rs"]
mod checks;

fn arg<T>(v: &T) -> *mut c_void {
    v as *const T as *mut c_void
}

#[test]
fn absent_without_driver_present_with_one() {
    let rt = runtime();
    rt.init().unwrap();
    let info = rt.platform_info(rt.platform(0).unwrap()).unwrap();
    match info.absent {
        Some(reason) => {
            assert_eq!(reason.code, ErrorCode::NotPresent);
            assert!(!reason.message.is_empty());
            assert_eq!(info.device_count, 0);
            println!("CUDA absent: {}", reason.message);
        }
        None => {
            assert!(info.device_count >= 1);
            let name = rt.device_info(dev(rt, 0), DeviceInfo::Name).unwrap();
            let cc = rt.device_info(dev(rt, 0), DeviceInfo::ComputeCapability).unwrap();
            let mem = rt.device_info(dev(rt, 0), DeviceInfo::TotalMemory).unwrap().as_int().unwrap();
            assert!(mem > 1 << 30);
            assert!(matches!(cc, InfoValue::Version(major, _) if major >= 5));
            for &key in DeviceInfo::ALL {
                rt.device_info(dev(rt, 0), key).unwrap();
            }
            println!("CUDA present: {} device(s); device 0: {name}, sm {cc}, {mem} bytes", info.device_count);
        }
    }
    let Shutdown::TornDown(_) = rt.shutdown().unwrap() else { panic!() };
    let report = rt.last_teardown_report().unwrap();
    assert!(report.is_clean(), "{report}");
}

#[test]
fn lifecycle_cycles_and_stale_handles_after_reinit() {
    let Some(rt) = cuda() else { return };
    let mut old = None;
    for cycle in 0..4 {
        if cycle > 0 {
            rt.init().unwrap();
        }
        let d = dev(rt, 0);
        let q = rt.queue_create(d).unwrap();
        let e = rt.event_create(d).unwrap();
        let p = rt.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
        let k = rt.kernel_get(p, "empty").unwrap();
        assert_eq!(rt.kernel_get(p, "empty").unwrap(), k, "same name, same handle");
        let m = rt.mem_alloc(d, MemKind::Device, 1 << 20).unwrap();
        // SAFETY: `empty` takes no arguments.
        unsafe { rt.launch(q, k, &LaunchDims::linear(1, 1), &KernelArgs::EMPTY) }.unwrap();
        rt.event_record(e, q).unwrap();
        rt.queue_synchronize(q).unwrap();
        if let Some((oq, oe, op, ok, om, od)) = old {
            assert_eq!(rt.queue_synchronize(oq).unwrap_err().code, ErrorCode::InvalidHandle);
            assert_eq!(rt.event_query(oe).unwrap_err().code, ErrorCode::InvalidHandle);
            assert_eq!(rt.program_unload(op).unwrap_err().code, ErrorCode::InvalidHandle);
            // SAFETY: rejected before launch.
            let stale = unsafe { rt.launch(q, ok, &LaunchDims::linear(1, 1), &KernelArgs::EMPTY) };
            assert_eq!(stale.unwrap_err().code, ErrorCode::InvalidHandle);
            assert_eq!(rt.queue_create(od).unwrap_err().code, ErrorCode::InvalidHandle);
            let _: ordo_core::DevicePtr = om; // the address may be reused by the driver: not checked
        }
        old = Some((q, e, p, k, m, d));
        rt.init().unwrap();
        assert_eq!(rt.shutdown().unwrap(), Shutdown::Released { remaining: 1 });
        let Shutdown::TornDown(_) = rt.shutdown().unwrap() else { panic!() };
        let report = rt.last_teardown_report().unwrap();
        assert!(report.is_clean(), "{report}");
        let devices = report.released_of(ordo_core::ObjectKind::Device);
        assert!(devices >= 1);
        assert_eq!(report.released, [1, devices, 1, 1, 1, 1, 1, 0, 0]);
        assert_eq!(rt.queue_query(q).unwrap_err().code, ErrorCode::Uninitialized);
    }
}

const N: usize = 1 << 20;

fn vector_add_and_reduce(rt: &Runtime, d: Device) {
    let q = rt.queue_create(d).unwrap();
    let p = rt.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
    let (add, reduce) = (rt.kernel_get(p, "vector_add_f32").unwrap(), rt.kernel_get(p, "reduce_sum_f32").unwrap());
    let bytes = N * 4;
    let a = rt.mem_alloc(d, MemKind::Device, bytes).unwrap();
    let b = rt.mem_alloc(d, MemKind::Managed, bytes).unwrap();
    let c = rt.mem_alloc(d, MemKind::Device, bytes).unwrap();
    let sum = rt.mem_alloc(d, MemKind::Host, 4).unwrap();
    let xa: Vec<f32> = (0..N).map(|i| (i % 13) as f32).collect();
    let xb: Vec<f32> = (0..N).map(|i| 0.5 * i as f32).collect();
    // Asynchronous copy of a's data through the queue, synchronous for b.
    // SAFETY: `xa` lives until the queue is synchronised below.
    unsafe { rt.copy_to_device_async(q, a, bytemuck::cast_slice::<f32, u8>(&xa).as_ptr(), bytes) }.unwrap();
    rt.copy_to_device(b, bytemuck::cast_slice::<f32, u8>(&xb)).unwrap();
    rt.fill(sum, FillValue::U32(0), 1, Some(q)).unwrap();
    let (pa, pb, pc, ps, n) = (a.0, b.0, c.0, sum.0, N as u32);
    let add_args = [arg(&pa), arg(&pb), arg(&pc), arg(&n)];
    let reduce_args = [arg(&pa), arg(&ps), arg(&n)];
    let dims = LaunchDims::linear((N as u32).div_ceil(256), 256);
    // SAFETY: argument types match the PTX kernels; buffers hold N floats (sum: 1, pinned host).
    unsafe {
        rt.launch(q, add, &dims, &KernelArgs::new(&add_args, &[8, 8, 8, 4]).unwrap()).unwrap();
        rt.launch(q, reduce, &dims, &KernelArgs::new(&reduce_args, &[8, 8, 4]).unwrap()).unwrap();
    }
    rt.queue_synchronize(q).unwrap();
    let mut out = vec![0f32; N];
    rt.copy_from_device(bytemuck::cast_slice_mut::<f32, u8>(&mut out), c).unwrap();
    for i in 0..N {
        assert_eq!(out[i].to_bits(), (xa[i] + xb[i]).to_bits(), "element {i}");
    }
    // The pinned host allocation is readable by the host directly.
    // SAFETY: `sum` is a live 4-byte pinned host allocation and the queue is synchronised.
    let total = unsafe { *sum.as_ptr::<f32>() };
    let expected: f64 = xa.iter().map(|&x| f64::from(x)).sum();
    assert_eq!(f64::from(total), expected, "reduction");
    // Device-to-device copy and fills, checked element by element.
    rt.copy_device(c, a, bytes, Some(q)).unwrap();
    rt.fill(a.offset(4), FillValue::U16(0x3f80), 2, None).unwrap();
    rt.fill(a.offset(8), FillValue::U8(0), 4, None).unwrap();
    rt.queue_synchronize(q).unwrap();
    rt.copy_from_device(bytemuck::cast_slice_mut::<f32, u8>(&mut out), c).unwrap();
    assert!(out.iter().zip(&xa).all(|(x, y)| x.to_bits() == y.to_bits()));
    let mut head = [0f32; 3];
    rt.copy_from_device(bytemuck::cast_slice_mut::<f32, u8>(&mut head), a).unwrap();
    // Two u16 0x3f80 fills make the bytes 80 3f 80 3f: the f32 0x3f803f80.
    assert_eq!(head, [xa[0], f32::from_bits(0x3f80_3f80), 0.0]);
}

#[test]
fn real_kernels_on_real_data() {
    let Some(rt) = cuda() else { return };
    vector_add_and_reduce(rt, dev(rt, 0));
    let Shutdown::TornDown(_) = rt.shutdown().unwrap() else { panic!() };
    let report = rt.last_teardown_report().unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.released_of(ordo_core::ObjectKind::Allocation), 4);
}

#[test]
fn events_time_and_order_queues() {
    let Some(rt) = cuda() else { return };
    let d = dev(rt, 0);
    let (q1, q2) = (rt.queue_create(d).unwrap(), rt.queue_create(d).unwrap());
    let p = rt.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
    let spin = rt.kernel_get(p, "spin_cycles").unwrap();
    let (start, end) = (rt.event_create(d).unwrap(), rt.event_create(d).unwrap());
    let cycles: u64 = 20_000_000;
    rt.event_record(start, q1).unwrap();
    // SAFETY: spin_cycles takes one u64.
    unsafe { rt.launch(q1, spin, &LaunchDims::linear(1, 1), &KernelArgs::new(&[arg(&cycles)], &[8]).unwrap()) }
        .unwrap();
    rt.event_record(end, q1).unwrap();
    rt.queue_wait_event(q2, end).unwrap();
    rt.queue_synchronize(q2).unwrap();
    assert!(rt.event_query(end).unwrap(), "q2 waited for the event");
    rt.event_synchronize(end).unwrap();
    let ms = rt.event_elapsed_ms(start, end).unwrap();
    assert!(ms > 1.0, "20M cycles take more than 1 ms, measured {ms} ms");
    println!("spin of {cycles} cycles: {ms:.3} ms by events");
    rt.shutdown().unwrap();
}

#[test]
fn teardown_waits_for_running_kernels() {
    let Some(rt) = cuda() else { return };
    let d = dev(rt, 0);
    let p = rt.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
    let spin = rt.kernel_get(p, "spin_cycles").unwrap();
    let cycles: u64 = 500_000_000; // about 0.25-0.3 s at H100 clocks
    for _ in 0..2 {
        let q = rt.queue_create(d).unwrap();
        let m = rt.mem_alloc(d, MemKind::Device, 1 << 20).unwrap();
        rt.fill(m, FillValue::U8(1), 1 << 20, Some(q)).unwrap();
        // SAFETY: spin_cycles takes one u64.
        unsafe { rt.launch(q, spin, &LaunchDims::linear(1, 1), &KernelArgs::new(&[arg(&cycles)], &[8]).unwrap()) }
            .unwrap();
    }
    let started = Instant::now();
    let mut order = Vec::new();
    let observe = &mut |s: &ordo_core::TeardownEvent| {
        if s.device == 0 {
            order.push(s.step)
        }
    };
    let Shutdown::TornDown(_) = rt.shutdown_observed(observe).unwrap() else { panic!() };
    let report = rt.last_teardown_report().unwrap();
    let took = started.elapsed();
    assert!(report.is_clean(), "{report}");
    assert_eq!(&order[..2], &[TeardownStep::SynchronizeQueue, TeardownStep::SynchronizeQueue]);
    assert!(took > Duration::from_millis(100), "teardown synchronised the running kernels first ({took:?})");
    println!("teardown with two running kernels took {took:?}: {report}");
}

#[test]
fn every_device_used_and_torn_down_in_order() {
    let Some(rt) = cuda() else { return };
    let count = rt.platform_info(rt.platform(0).unwrap()).unwrap().device_count;
    if count < 2 {
        println!("skipped: {count} CUDA device(s); the multi-device part needs 2 (run it on nvidia-h200-x2)");
        rt.shutdown().unwrap();
        return;
    }
    for i in 0..count {
        vector_add_and_reduce(rt, dev(rt, i));
    }
    // Launches alternating between devices from one thread: each one switches contexts.
    let queues: Vec<_> = (0..count)
        .map(|i| {
            let d = dev(rt, i);
            let p = rt.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
            (rt.queue_create(d).unwrap(), rt.kernel_get(p, "empty").unwrap())
        })
        .collect();
    for _ in 0..200 {
        for &(q, k) in &queues {
            // SAFETY: `empty` takes no arguments.
            unsafe { rt.launch(q, k, &LaunchDims::linear(1, 1), &KernelArgs::EMPTY) }.unwrap();
        }
    }
    for &(q, _) in &queues {
        rt.queue_synchronize(q).unwrap();
    }
    let mut devices = Vec::new();
    let Shutdown::TornDown(_) = rt
        .shutdown_observed(&mut |s| {
            if s.step == TeardownStep::ReleaseDevice {
                devices.push(s.device)
            }
        })
        .unwrap()
    else {
        panic!()
    };
    let report = rt.last_teardown_report().unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(devices, (0..count).rev().collect::<Vec<_>>());
    println!("{count} devices used and released in order {devices:?}");
}

#[test]
fn launches_survive_other_code_switching_the_context() {
    let Some(rt) = cuda() else { return };
    let d = dev(rt, 0);
    let q = rt.queue_create(d).unwrap();
    let p = rt.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
    let k = rt.kernel_get(p, "empty").unwrap();
    for round in 0..3 {
        // SAFETY: `empty` takes no arguments.
        unsafe { rt.launch(q, k, &LaunchDims::linear(1, 1), &KernelArgs::EMPTY) }.unwrap();
        // Other code on this thread (another runtime, a library) unsets the current context.
        // SAFETY: a plain driver call; NULL unbinds the thread's context.
        let r = unsafe { cudarc::driver::sys::cuCtxSetCurrent(std::ptr::null_mut()) };
        assert_eq!(r, cudarc::driver::sys::CUresult::CUDA_SUCCESS, "round {round}");
    }
    // SAFETY: `empty` takes no arguments.
    unsafe { rt.launch(q, k, &LaunchDims::linear(1, 1), &KernelArgs::EMPTY) }.unwrap();
    rt.queue_synchronize(q).unwrap();
    let Shutdown::TornDown(_) = rt.shutdown().unwrap() else { panic!() };
    let report = rt.last_teardown_report().unwrap();
    assert!(report.is_clean(), "{report}");
}

/// A call without a queue starts after all work already on the device's queues and returns when
/// its own work is complete (DESIGN, "Calls and their ordering"). Before queues were blocking
/// streams, each of these reads could see data from before the queued work.
#[test]
fn calls_without_a_queue_wait_for_queued_work_and_for_themselves() {
    let Some(rt) = cuda() else { return };
    let d = dev(rt, 0);
    let q = rt.queue_create(d).unwrap();
    let p = rt.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
    let spin = rt.kernel_get(p, "spin_cycles").unwrap();
    let cycles: u64 = 200_000_000; // about 0.1 s
    let spin_args = [arg(&cycles)];
    let launch_spin = || {
        // SAFETY: spin_cycles takes one u64.
        unsafe { rt.launch(q, spin, &LaunchDims::linear(1, 1), &KernelArgs::new(&spin_args, &[8]).unwrap()) }.unwrap()
    };
    const BYTES: usize = 64 << 20;
    let c = rt.mem_alloc(d, MemKind::Device, BYTES).unwrap();
    let pinned = rt.mem_alloc(d, MemKind::Host, BYTES).unwrap();
    let pattern = vec![0x5au8; BYTES];
    let mut out = vec![0u8; BYTES];
    // 1. A synchronous read after a queued copy sees the copy.
    rt.fill(c, FillValue::U8(0), BYTES, None).unwrap();
    launch_spin();
    // SAFETY: `pattern` outlives the queue's work (the queue is synchronised below).
    unsafe { rt.copy_to_device_async(q, c, pattern.as_ptr(), BYTES) }.unwrap();
    rt.copy_from_device(&mut out, c).unwrap();
    assert!(out == pattern, "the read without a queue ran before the queued copy");
    // 2. A synchronous fill after a queued fill wins.
    launch_spin();
    rt.fill(c, FillValue::U32(1), BYTES / 4, Some(q)).unwrap();
    rt.fill(c, FillValue::U32(2), BYTES / 4, None).unwrap();
    rt.queue_synchronize(q).unwrap();
    rt.copy_from_device(&mut out, c).unwrap();
    assert!(out.chunks(4).all(|w| w == 2u32.to_ne_bytes()), "the queued fill ran after the synchronous one");
    // 3. A synchronous fill and a device-to-device copy into pinned host memory are complete when
    //    they return: the host reads the memory directly at once.
    launch_spin();
    rt.fill(pinned, FillValue::U32(0x1234_5678), BYTES / 4, None).unwrap();
    // SAFETY: `pinned` is a live, host-readable allocation of BYTES bytes; the fill returned.
    let host = unsafe { std::slice::from_raw_parts(pinned.as_ptr::<u32>(), BYTES / 4) };
    assert!(host.iter().all(|&v| v == 0x1234_5678), "the fill had not finished when it returned");
    rt.copy_device(pinned, c, BYTES, None).unwrap();
    assert!(host.iter().all(|&v| v == 2), "the copy had not finished when it returned");
    rt.shutdown().unwrap();
}

/// With another valid context current on the thread (the program's own), ordo's calls still run
/// on ordo's device, and afterwards the program's context is current again; a thread that had
/// no context current is left with ordo's primary context (docs/backends.md, "cuda").
#[test]
fn another_current_context_does_not_misdirect_ordo_and_is_put_back() {
    use cudarc::driver::sys::{self, CUcontext, CUresult};
    let Some(rt) = cuda() else { return };
    let d = dev(rt, 0);
    let q = rt.queue_create(d).unwrap();
    let p = rt.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
    let add = rt.kernel_get(p, "vector_add_f32").unwrap();
    const N: usize = 4096;
    let (a, c) = (rt.mem_alloc(d, MemKind::Device, N * 4).unwrap(), rt.mem_alloc(d, MemKind::Device, N * 4).unwrap());
    let xa: Vec<f32> = (0..N).map(|i| i as f32).collect();
    rt.copy_to_device(a, bytemuck::cast_slice::<f32, u8>(&xa)).unwrap();
    let (mut dev0, mut primary, mut own): (i32, CUcontext, CUcontext) = (0, std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: plain driver calls with valid out-pointers; the driver was initialised by ordo.
    unsafe {
        assert_eq!(sys::cuDeviceGet(&mut dev0, 0), CUresult::CUDA_SUCCESS);
        assert_eq!(sys::cuDevicePrimaryCtxRetain(&mut primary, dev0), CUresult::CUDA_SUCCESS);
        assert_eq!(sys::cuCtxCreate_v4(&mut own, std::ptr::null_mut(), 0, dev0), CUresult::CUDA_SUCCESS);
        assert_eq!(sys::cuCtxSetCurrent(own), CUresult::CUDA_SUCCESS);
    }
    assert_ne!(own, primary);
    let (pa, pc, n) = (a.0, c.0, N as u32);
    let params = [arg(&pa), arg(&pa), arg(&pc), arg(&n)];
    let launch_add = || {
        let dims = LaunchDims::linear((N as u32).div_ceil(256), 256);
        // SAFETY: (ptr, ptr, ptr, u32) over N floats.
        unsafe { rt.launch(q, add, &dims, &KernelArgs::new(&params, &[8, 8, 8, 4]).unwrap()) }.unwrap()
    };
    launch_add();
    let current_now = || {
        let mut current: CUcontext = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        unsafe { assert_eq!(sys::cuCtxGetCurrent(&mut current), CUresult::CUDA_SUCCESS) };
        current
    };
    assert_eq!(current_now(), own, "after a launch, the program's context is current again");
    // The same for calls that go through the checked path (synchronise, copy).
    rt.queue_synchronize(q).unwrap();
    let mut out = vec![0f32; N];
    rt.copy_from_device(bytemuck::cast_slice_mut::<f32, u8>(&mut out), c).unwrap();
    assert_eq!(current_now(), own, "after a copy, the program's context is current again");
    assert!(out.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f32), "the launch ran on ordo's device");
    // A second launch from the program's context (the thread's record no longer names ordo's).
    launch_add();
    rt.queue_synchronize(q).unwrap();
    assert_eq!(current_now(), own);
    // A thread with no current context keeps ordo's primary context after a call.
    // SAFETY: clears this thread's current context.
    unsafe { assert_eq!(sys::cuCtxSetCurrent(std::ptr::null_mut()), CUresult::CUDA_SUCCESS) };
    rt.queue_synchronize(q).unwrap();
    assert_eq!(current_now(), primary, "no context before: ordo's primary context after");
    // SAFETY: releases what this test created and retained, once.
    unsafe {
        assert_eq!(sys::cuCtxDestroy_v2(own), CUresult::CUDA_SUCCESS);
        assert_eq!(sys::cuDevicePrimaryCtxRelease_v2(dev0), CUresult::CUDA_SUCCESS);
    }
    rt.shutdown().unwrap();
}

/// Existing host memory registered with the device: overlapping and zero-size registrations
/// are refused, a fill on a queue writes into it through the mapping, `mem_info` reports it as
/// `Registered`, `mem_free` refuses it, `host_unregister` ends it, and the teardown unregisters
/// one left registered.
#[test]
fn host_memory_registered_with_the_device() {
    let Some(rt) = cuda() else { return };
    let d = dev(rt, 0);
    let mut host = vec![0u32; 1024];
    let base = host.as_mut_ptr().cast::<u8>();
    let bytes = host.len() * 4;
    // SAFETY: `host` outlives the registration (unregistered below, before it is dropped).
    let p = unsafe { rt.host_register(d, base, bytes) }.unwrap();
    assert_eq!(p.0, base as u64, "named by its host address");
    // SAFETY: as above (never reached: the overlap is refused first).
    let overlap = unsafe { rt.host_register(d, base.wrapping_add(64), 16) };
    assert_eq!(overlap.unwrap_err().code, ErrorCode::InvalidArgument);
    // SAFETY: as above.
    assert_eq!(unsafe { rt.host_register(d, base, 0) }.unwrap_err().code, ErrorCode::InvalidSize);
    assert_eq!(rt.mem_alloc(d, MemKind::Registered, 64).unwrap_err().code, ErrorCode::InvalidEnumeration);
    let (info_base, info_size, kind, info_device) = rt.mem_info(p.offset(100)).unwrap();
    assert_eq!((info_base, info_size, kind, info_device), (p, bytes, MemKind::Registered, d));
    let q = rt.queue_create(d).unwrap();
    rt.fill(p, FillValue::U32(0xC0FFEE), host.len(), Some(q)).unwrap();
    rt.queue_synchronize(q).unwrap();
    // SAFETY: the device's writes are complete (the queue was synchronised); read the memory
    // through a volatile read so the compiler does not assume it unchanged.
    let seen: Vec<u32> = (0..host.len()).map(|i| unsafe { std::ptr::read_volatile(host.as_ptr().add(i)) }).collect();
    assert!(seen.iter().all(|&v| v == 0xC0FFEE), "the fill reached host memory");
    assert_eq!(rt.mem_free(p).unwrap_err().code, ErrorCode::NotFound, "mem_free refuses a registration");
    rt.host_unregister(p).unwrap();
    assert_eq!(rt.mem_info(p).unwrap_err().code, ErrorCode::NotFound, "unregistered");
    // One left registered: the teardown unregisters it with the device's memory.
    let mut other = vec![0u8; 4096];
    // SAFETY: `other` outlives the runtime's teardown below.
    unsafe { rt.host_register(d, other.as_mut_ptr(), other.len()) }.unwrap();
    rt.queue_destroy(q).unwrap();
    let Ok(ordo_core::Shutdown::TornDown(summary)) = rt.shutdown() else { panic!("expected the final teardown") };
    assert!(summary.is_clean(), "{:?}", rt.last_teardown_report());
    drop(other);
}

/// A tiled tensor map over device memory encodes; one the driver refuses (a misaligned address)
/// gives the driver's error, not a panic.
#[test]
fn tensor_maps_encode_over_device_memory() {
    let Some(rt) = cuda() else { return };
    let d = dev(rt, 0);
    let m = rt.mem_alloc(d, MemKind::Device, 64 * 8 * 4).unwrap();
    let tensor = ordo_cuda::tensor_map::TiledTensor {
        data_type: 7,
        global_address: m.0,
        global_dim: &[8, 64],
        global_strides: &[32],
        box_dim: &[8, 8],
        element_strides: &[1, 1],
        interleave: 0,
        swizzle: 0,
        l2_promotion: 0,
        oob_fill: 0,
    };
    let map = ordo_cuda::tensor_map::encode_tiled(&tensor).unwrap();
    assert!(map.iter().any(|&w| w != 0), "an encoded map is not all zeros");
    let misaligned = ordo_cuda::tensor_map::TiledTensor { global_address: m.0 + 4, ..tensor };
    assert!(ordo_cuda::tensor_map::encode_tiled(&misaligned).is_err());
    assert!(matches!(rt.shutdown(), Ok(ordo_core::Shutdown::TornDown(s)) if s.is_clean()));
}
