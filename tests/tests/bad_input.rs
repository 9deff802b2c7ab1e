//! Every operation against every kind of bad input: each returns its specific error code, makes
//! no backend call, and leaves every live object as it was.

use std::ffi::c_void;

use ordo_core::{
    CopyKind, Device, DeviceInfo, DevicePtr, ErrorCode, Event, FillValue, Graph, Kernel, KernelArgs, LaunchDims,
    LiveObjects, MemKind, ObjectKind, Platform, Program, Queue, RawHandle, Result, Runtime, Shutdown,
};
use ordo_testing::scripted::{ScriptedBackend, ScriptedObject};
use ordo_tests::{device, host_runtime, scripted_runtime};

struct World {
    b: &'static ScriptedBackend,
    rt: &'static Runtime,
    d: Device,
    q: Queue,
    e: Event,
    p: Program,
    k: Kernel,
    m: DevicePtr,
    /// Handles of the same kinds from before a shutdown and re-init.
    old_q: Queue,
    old_e: Event,
    old_p: Program,
    old_k: Kernel,
    old_d: Device,
    old_m: DevicePtr,
    /// Released in this epoch.
    dead_q: Queue,
    dead_e: Event,
    dead_p: Program,
    dead_k: Kernel,
    dead_m: DevicePtr,
}

fn objects(rt: &Runtime, d: Device) -> (Queue, Event, Program, Kernel, DevicePtr) {
    let q = rt.queue_create(d).unwrap();
    let e = rt.event_create(d).unwrap();
    let p = rt.program_load(d, b"image").unwrap();
    let k = rt.kernel_get(p, "kernel").unwrap();
    let m = rt.mem_alloc(d, MemKind::Device, 1024).unwrap();
    (q, e, p, k, m)
}

fn world() -> World {
    let (b, rt) = scripted_runtime(2);
    rt.init().unwrap();
    let old_d = device(rt, 0).unwrap();
    let (old_q, old_e, old_p, old_k, old_m) = objects(rt, old_d);
    rt.shutdown().unwrap();
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    let (dead_q, dead_e, dead_p, dead_k, dead_m) = objects(rt, d);
    rt.queue_destroy(dead_q).unwrap();
    rt.event_destroy(dead_e).unwrap();
    rt.program_unload(dead_p).unwrap();
    rt.mem_free(dead_m).unwrap();
    let (q, e, p, k, m) = objects(rt, d);
    World { b, rt, d, q, e, p, k, m, old_q, old_e, old_p, old_k, old_d, old_m, dead_q, dead_e, dead_p, dead_k, dead_m }
}

#[derive(Debug, PartialEq)]
struct Snapshot {
    live: Option<LiveObjects>,
    backend_live: usize,
    backend_calls: u64,
}

fn snapshot(w: &World) -> Snapshot {
    Snapshot { live: w.rt.live_objects().ok(), backend_live: w.b.live_total(), backend_calls: w.b.calls() }
}

/// Runs `op`, expecting `want` and no change at all.
#[track_caller]
fn rejects<T: std::fmt::Debug>(w: &World, want: ErrorCode, op: impl FnOnce() -> Result<T>) {
    let before = snapshot(w);
    match op() {
        Ok(v) => panic!("expected {want:?}, got Ok({v:?})"),
        Err(e) => assert_eq!(e.code, want, "{e}"),
    }
    assert_eq!(snapshot(w), before, "a rejected call changed state or reached the backend");
}

/// Runs `op`, expecting success with no change at all and no backend call (a zero-byte no-op).
#[track_caller]
fn does_nothing(w: &World, op: impl FnOnce() -> Result<()>) {
    let before = snapshot(w);
    op().expect("a zero-byte operation succeeds");
    assert_eq!(snapshot(w), before, "a zero-byte operation changed state or reached the backend");
}

macro_rules! raw_conv {
    ($($t:ident),*) => {$(
        impl From<$t> for Wrap { fn from(h: $t) -> Wrap { Wrap(h.0) } }
    )*};
}
struct Wrap(RawHandle);
raw_conv!(Queue, Event, Program, Kernel, Device, Platform);

/// A handle of the right type whose bits name an object of another kind.
fn as_queue(h: impl Into<Wrap>) -> Queue {
    Queue(h.into().0)
}
fn as_event(h: impl Into<Wrap>) -> Event {
    Event(h.into().0)
}
fn as_program(h: impl Into<Wrap>) -> Program {
    Program(h.into().0)
}
fn as_kernel(h: impl Into<Wrap>) -> Kernel {
    Kernel(h.into().0)
}
fn as_device(h: impl Into<Wrap>) -> Device {
    Device(h.into().0)
}

const FORGED: u64 = u64::MAX >> 8;
/// Right kind tag, slot index far beyond any capacity.
fn forged_of_kind(tag: u64) -> u64 {
    (tag << 56) | 0x00ff_ffff
}

#[test]
fn queue_operations_reject_bad_handles() {
    let w = world();
    let rt = w.rt;
    let bad_queues = [
        (Queue::NULL, ErrorCode::NullHandle),
        (w.dead_q, ErrorCode::InvalidHandle),
        (w.old_q, ErrorCode::InvalidHandle),
        (as_queue(w.e), ErrorCode::InvalidHandle),
        (Queue::from_raw(FORGED), ErrorCode::InvalidHandle),
        (Queue::from_raw(forged_of_kind(3)), ErrorCode::InvalidHandle),
    ];
    for (q, want) in bad_queues {
        rejects(&w, want, || rt.queue_synchronize(q));
        rejects(&w, want, || rt.queue_query(q));
        rejects(&w, want, || rt.queue_native(q));
        rejects(&w, want, || rt.queue_wait_event(q, w.e));
        rejects(&w, want, || rt.event_record(w.e, q));
        rejects(&w, want, || rt.fill(w.m, FillValue::U8(0), 1, Some(q)));
        rejects(&w, want, || rt.copy_device(w.m, w.m.offset(512), 16, Some(q)));
        // SAFETY: rejected before any kernel could run.
        rejects(&w, want, || unsafe { rt.launch(q, w.k, &LaunchDims::linear(1, 1), &KernelArgs::EMPTY) });
        rejects(&w, want, || rt.queue_destroy(q));
    }
    rejects(&w, ErrorCode::InvalidHandle, || rt.queue_destroy(w.dead_q)); // double destroy
}

#[test]
fn event_operations_reject_bad_handles() {
    let w = world();
    let rt = w.rt;
    let bad_events = [
        (Event::NULL, ErrorCode::NullHandle),
        (w.dead_e, ErrorCode::InvalidHandle),
        (w.old_e, ErrorCode::InvalidHandle),
        (as_event(w.q), ErrorCode::InvalidHandle),
        (Event::from_raw(FORGED), ErrorCode::InvalidHandle),
        (Event::from_raw(forged_of_kind(4)), ErrorCode::InvalidHandle),
    ];
    for (e, want) in bad_events {
        rejects(&w, want, || rt.event_record(e, w.q));
        rejects(&w, want, || rt.event_synchronize(e));
        rejects(&w, want, || rt.event_query(e));
        rejects(&w, want, || rt.event_elapsed_ms(e, w.e));
        rejects(&w, want, || rt.event_elapsed_ms(w.e, e));
        rejects(&w, want, || rt.queue_wait_event(w.q, e));
        rejects(&w, want, || rt.event_destroy(e));
    }
    rejects(&w, ErrorCode::InvalidHandle, || rt.event_destroy(w.dead_e)); // double destroy
}

#[test]
fn program_and_kernel_operations_reject_bad_handles() {
    let w = world();
    let rt = w.rt;
    let bad_programs = [
        (Program::NULL, ErrorCode::NullHandle),
        (w.dead_p, ErrorCode::InvalidHandle),
        (w.old_p, ErrorCode::InvalidHandle),
        (as_program(w.k), ErrorCode::InvalidHandle),
        (Program::from_raw(FORGED), ErrorCode::InvalidHandle),
    ];
    for (p, want) in bad_programs {
        rejects(&w, want, || rt.kernel_get(p, "kernel"));
        rejects(&w, want, || rt.program_unload(p));
    }
    rejects(&w, ErrorCode::InvalidHandle, || rt.program_unload(w.dead_p)); // double unload
    let bad_kernels = [
        (Kernel::NULL, ErrorCode::NullHandle),
        (w.dead_k, ErrorCode::InvalidHandle), // died with its program
        (w.old_k, ErrorCode::InvalidHandle),
        (as_kernel(w.p), ErrorCode::InvalidHandle),
        (Kernel::from_raw(FORGED), ErrorCode::InvalidHandle),
    ];
    for (k, want) in bad_kernels {
        rejects(&w, want, || rt.kernel_program(k));
        rejects(&w, want, || rt.kernel_native(k));
        // SAFETY: rejected before any kernel could run.
        rejects(&w, want, || unsafe { rt.launch(w.q, k, &LaunchDims::linear(1, 1), &KernelArgs::EMPTY) });
    }
    rejects(&w, ErrorCode::InvalidArgument, || rt.kernel_get(w.p, ""));
    rejects(&w, ErrorCode::InvalidArgument, || rt.kernel_get(w.p, "a\0b"));
    rejects(&w, ErrorCode::InvalidSize, || rt.program_load(w.d, b""));
}

#[test]
fn device_and_platform_operations_reject_bad_handles() {
    let w = world();
    let rt = w.rt;
    let bad_devices = [
        (Device::NULL, ErrorCode::NullHandle),
        (w.old_d, ErrorCode::InvalidHandle),
        (as_device(w.q), ErrorCode::InvalidHandle),
        (Device::from_raw(FORGED), ErrorCode::InvalidHandle),
        (Device::from_raw(forged_of_kind(2)), ErrorCode::InvalidHandle),
    ];
    for (d, want) in bad_devices {
        rejects(&w, want, || rt.device_info(d, DeviceInfo::Name));
        rejects(&w, want, || rt.device_platform(d));
        rejects(&w, want, || rt.mem_alloc(d, MemKind::Device, 16));
        rejects(&w, want, || rt.queue_create(d));
        rejects(&w, want, || rt.event_create(d));
        rejects(&w, want, || rt.program_load(d, b"image"));
    }
    rejects(&w, ErrorCode::NullHandle, || rt.platform_info(Platform::NULL));
    rejects(&w, ErrorCode::InvalidHandle, || rt.platform_info(Platform(w.d.0)));
    rejects(&w, ErrorCode::InvalidValue, || rt.platform(7));
    rejects(&w, ErrorCode::InvalidValue, || rt.device(rt.platform(0).unwrap(), 2));
}

#[test]
fn memory_operations_reject_bad_addresses_and_sizes() {
    let w = world();
    let rt = w.rt;
    // Sizes.
    rejects(&w, ErrorCode::InvalidSize, || rt.mem_alloc(w.d, MemKind::Device, 0));
    rejects(&w, ErrorCode::InvalidSize, || rt.mem_alloc(w.d, MemKind::Device, usize::MAX));
    rejects(&w, ErrorCode::InvalidSize, || rt.mem_alloc(w.d, MemKind::Host, isize::MAX as usize + 1));
    // Free: null, unknown, interior, double, earlier epoch.
    rejects(&w, ErrorCode::NullPointer, || rt.mem_free(DevicePtr::NULL));
    rejects(&w, ErrorCode::NotFound, || rt.mem_free(DevicePtr(0xdead_0000)));
    rejects(&w, ErrorCode::InvalidArgument, || rt.mem_free(w.m.offset(8)));
    rejects(&w, ErrorCode::NotFound, || rt.mem_free(w.dead_m));
    rejects(&w, ErrorCode::NotFound, || rt.mem_free(w.old_m));
    // Copies.
    let mut buf = [0u8; 2048];
    // Zero bytes: success, nothing done, whatever the addresses (a queue given is still checked).
    does_nothing(&w, || rt.copy_to_device(w.m, &[]));
    does_nothing(&w, || rt.copy_to_device(DevicePtr::NULL, &[]));
    does_nothing(&w, || rt.copy_device(w.dead_m, DevicePtr(0xdead_0000), 0, None));
    does_nothing(&w, || rt.copy_device(w.m, w.m, 0, Some(w.q)));
    rejects(&w, ErrorCode::InvalidHandle, || rt.copy_device(w.m, w.m, 0, Some(w.dead_q)));
    does_nothing(&w, || rt.fill(DevicePtr::NULL, FillValue::U32(1), 0, None));
    rejects(&w, ErrorCode::InvalidHandle, || rt.fill(w.m, FillValue::U32(1), 0, Some(w.old_q)));
    rejects(&w, ErrorCode::InvalidSize, || rt.copy_to_device(w.m, &buf[..1025]));
    rejects(&w, ErrorCode::InvalidSize, || rt.copy_to_device(w.m.offset(1000), &buf[..25]));
    rejects(&w, ErrorCode::NullPointer, || rt.copy_to_device(DevicePtr::NULL, &buf[..4]));
    rejects(&w, ErrorCode::NotFound, || rt.copy_to_device(w.dead_m, &buf[..4]));
    rejects(&w, ErrorCode::NotFound, || rt.copy_from_device(&mut buf[..4], w.old_m));
    rejects(&w, ErrorCode::InvalidSize, || rt.copy_from_device(&mut buf[..1025], w.m));
    rejects(&w, ErrorCode::InvalidSize, || rt.copy_device(w.m, w.m, usize::MAX, None));
    rejects(&w, ErrorCode::NotFound, || rt.copy_device(w.m, w.dead_m, 4, None));
    rejects(&w, ErrorCode::NotFound, || rt.copy_device(w.dead_m, w.m, 4, None));
    // SAFETY: rejected before any copy (null host pointer).
    rejects(&w, ErrorCode::NullPointer, || unsafe { rt.copy_to_device_async(w.q, w.m, std::ptr::null(), 4) });
    // SAFETY: rejected before any copy (null host pointer).
    rejects(&w, ErrorCode::NullPointer, || unsafe { rt.copy_from_device_async(w.q, std::ptr::null_mut(), w.m, 4) });
    // Fills.
    rejects(&w, ErrorCode::NullPointer, || rt.fill(DevicePtr::NULL, FillValue::U32(1), 1, None));
    rejects(&w, ErrorCode::InvalidSize, || rt.fill(w.m, FillValue::U32(1), 257, None));
    rejects(&w, ErrorCode::InvalidSize, || rt.fill(w.m, FillValue::U32(1), usize::MAX, None));
    rejects(&w, ErrorCode::InvalidArgument, || rt.fill(w.m.offset(2), FillValue::U32(1), 1, None));
    rejects(&w, ErrorCode::NotFound, || rt.fill(w.dead_m, FillValue::U8(1), 1, None));
    rejects(&w, ErrorCode::NullPointer, || rt.mem_info(DevicePtr::NULL));
}

#[test]
fn objects_of_different_devices_do_not_mix() {
    let w = world();
    let rt = w.rt;
    let d1 = device(rt, 1).unwrap();
    let q1 = rt.queue_create(d1).unwrap();
    let e1 = rt.event_create(d1).unwrap();
    rejects(&w, ErrorCode::InvalidArgument, || rt.event_record(e1, w.q));
    rejects(&w, ErrorCode::InvalidArgument, || rt.event_elapsed_ms(e1, w.e));
    rejects(&w, ErrorCode::InvalidArgument, || rt.fill(w.m, FillValue::U8(0), 1, Some(q1)));
    // SAFETY: rejected before any kernel could run.
    rejects(&w, ErrorCode::InvalidArgument, || unsafe {
        rt.launch(q1, w.k, &LaunchDims::linear(1, 1), &KernelArgs::EMPTY)
    });
}

#[test]
fn launch_rejects_bad_dimensions_and_arguments() {
    let w = world();
    let rt = w.rt;
    for dims in [
        LaunchDims::linear(0, 1),
        LaunchDims::linear(1, 0),
        LaunchDims { grid: [1, 0, 1], block: [1, 1, 1], shared_mem_bytes: 0 },
        LaunchDims { grid: [1, 1, 1], block: [1, 1, 0], shared_mem_bytes: 0 },
        // Products that wrap in 64 bits (2^64 threads per block) and grids beyond the limits.
        LaunchDims { grid: [1, 1, 1], block: [1 << 22, 1 << 21, 1 << 21], shared_mem_bytes: 0 },
        LaunchDims { grid: [1, 1, 1], block: [1025, 1, 1], shared_mem_bytes: 0 },
        LaunchDims { grid: [1, 1, 1], block: [32, 32, 2], shared_mem_bytes: 0 },
        LaunchDims { grid: [1, 1, 1], block: [1, 1, 65], shared_mem_bytes: 0 },
        LaunchDims { grid: [u32::MAX, u32::MAX, u32::MAX], block: [1, 1, 1], shared_mem_bytes: 0 },
        LaunchDims { grid: [1, 65536, 1], block: [1, 1, 1], shared_mem_bytes: 0 },
        LaunchDims { grid: [1 << 31, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 },
    ] {
        // SAFETY: rejected before any kernel could run.
        rejects(&w, ErrorCode::InvalidValue, || unsafe { rt.launch(w.q, w.k, &dims, &KernelArgs::EMPTY) });
    }
    let x = 5u32;
    let params = [&x as *const u32 as *mut c_void, std::ptr::null_mut()];
    assert_eq!(KernelArgs::new(&params, &[4, 4]).unwrap_err().code, ErrorCode::NullPointer);
    assert_eq!(KernelArgs::new(&params[..1], &[4, 4]).unwrap_err().code, ErrorCode::InvalidArgument);
    let args = KernelArgs::new(&params[..1], &[4]).unwrap();
    // SAFETY: argument 0 points at a u32.
    unsafe {
        assert_eq!(args.read::<u64>(0).unwrap_err().code, ErrorCode::InvalidSize);
        assert_eq!(args.read::<u32>(1).unwrap_err().code, ErrorCode::InvalidArgument);
        assert_eq!(args.read::<u32>(0).unwrap(), 5);
    }
}

#[test]
fn copies_between_platforms_and_devices_check_their_input_and_their_queue() {
    // Two platforms (two scripted backends) with two devices each.
    let a = ordo_tests::scripted(2);
    let b: &'static ScriptedBackend = Box::leak(Box::new(ScriptedBackend::with_address_base(2, 0x5000_0000_0000)));
    let rt = ordo_tests::runtime(vec![a, b]);
    rt.init().unwrap();
    let (pa, pb) = (rt.platform(0).unwrap(), rt.platform(1).unwrap());
    let (a0, a1, b0) = (rt.device(pa, 0).unwrap(), rt.device(pa, 1).unwrap(), rt.device(pb, 0).unwrap());
    let (ma0, ma1, mb0) = (
        rt.mem_alloc(a0, MemKind::Device, 64).unwrap(),
        rt.mem_alloc(a1, MemKind::Device, 64).unwrap(),
        rt.mem_alloc(b0, MemKind::Device, 64).unwrap(),
    );
    let (qa0, qb0) = (rt.queue_create(a0).unwrap(), rt.queue_create(b0).unwrap());
    let qa1 = rt.queue_create(a1).unwrap();
    let calls = || (a.calls(), b.calls());
    let before = calls();
    let code = |r: Result<()>| r.unwrap_err().code;
    // Between two GPU platforms (neither's memory is host memory), bad input is refused before
    // anything is staged: a range past its allocation, a queue of neither device.
    assert_eq!(code(rt.copy_device(ma0, mb0, 65, None)), ErrorCode::InvalidSize);
    assert_eq!(code(rt.copy_device(ma0, mb0, 64, Some(qa1))), ErrorCode::InvalidArgument);
    // A queue of another platform than the memory.
    assert_eq!(code(rt.copy_device(ma0, ma0, 64, Some(qb0))), ErrorCode::InvalidArgument);
    assert_eq!(code(rt.fill(mb0, FillValue::U8(0), 4, Some(qa0))), ErrorCode::InvalidArgument);
    // SAFETY: rejected before any copy (the host buffer is valid anyway).
    let host_to_other = unsafe { rt.copy_to_device_async(qa0, mb0, [0u8; 4].as_ptr(), 4) };
    assert_eq!(code(host_to_other), ErrorCode::InvalidArgument);
    // A queue of neither device of a copy between two devices.
    assert_eq!(code(rt.copy_device(ma1, ma0.offset(0), 64, Some(qb0))), ErrorCode::InvalidArgument);
    assert_eq!(calls(), before, "no backend was called");
    // Between two devices of one platform: the backend's peer copy, one call each.
    rt.copy_device(ma1, ma0, 64, None).unwrap();
    rt.copy_device(ma0, ma1, 64, Some(qa0)).unwrap();
    assert_eq!(calls(), (before.0 + 2, before.1));
    rt.copy_device(ma0, ma0.offset(32), 32, Some(qa0)).unwrap();
    // Between the two platforms: staged through page-locked memory of the source's platform
    // (allocated, copied to, freed: three calls) and copied on by the destination's (one); on a
    // queue, after the queue's earlier work (one more call to its platform).
    let before = calls();
    rt.copy_device(ma0, mb0, 64, None).unwrap();
    assert_eq!(calls(), (before.0 + 1, before.1 + 3));
    rt.copy_device(mb0, ma0, 64, Some(qb0)).unwrap();
    assert_eq!(calls(), (before.0 + 4, before.1 + 5));
    rt.shutdown().unwrap();
    assert_eq!((a.live_total(), b.live_total()), (0, 0));
}

#[test]
fn unknown_enum_values_are_invalid_enumeration() {
    assert_eq!(MemKind::try_from(6).unwrap_err().code, ErrorCode::InvalidEnumeration);
    assert_eq!(DeviceInfo::try_from(21).unwrap_err().code, ErrorCode::InvalidEnumeration);
    assert_eq!(CopyKind::try_from(99).unwrap_err().code, ErrorCode::InvalidEnumeration);
    assert_eq!(DeviceInfo::try_from(u32::MAX).unwrap_err().code, ErrorCode::InvalidEnumeration);
    for &k in MemKind::ALL {
        assert_eq!(MemKind::try_from(k as u32).unwrap(), k);
    }
    for &k in DeviceInfo::ALL {
        assert_eq!(DeviceInfo::try_from(k as u32).unwrap(), k);
    }
}

#[test]
fn every_call_before_init_and_after_shutdown_is_uninitialized() {
    let (_, rt) = scripted_runtime(1);
    let check = |rt: &Runtime| {
        let d = Device::from_raw(1 << 57);
        let u = ErrorCode::Uninitialized;
        let mut buf = [0u8; 4];
        assert_eq!(rt.platform_count().unwrap_err().code, u);
        assert_eq!(rt.platform(0).unwrap_err().code, u);
        assert_eq!(rt.device_info(d, DeviceInfo::Name).unwrap_err().code, u);
        assert_eq!(rt.mem_alloc(d, MemKind::Device, 4).unwrap_err().code, u);
        assert_eq!(rt.mem_free(DevicePtr(4096)).unwrap_err().code, u);
        assert_eq!(rt.copy_to_device(DevicePtr(4096), &buf).unwrap_err().code, u);
        assert_eq!(rt.copy_from_device(&mut buf, DevicePtr(4096)).unwrap_err().code, u);
        assert_eq!(rt.fill(DevicePtr(4096), FillValue::U8(0), 4, None).unwrap_err().code, u);
        assert_eq!(rt.queue_create(d).unwrap_err().code, u);
        assert_eq!(rt.queue_synchronize(Queue::NULL).unwrap_err().code, u);
        assert_eq!(rt.event_create(d).unwrap_err().code, u);
        assert_eq!(rt.event_elapsed_ms(Event::NULL, Event::NULL).unwrap_err().code, u);
        assert_eq!(rt.program_load(d, b"x").unwrap_err().code, u);
        assert_eq!(rt.kernel_get(Program::NULL, "k").unwrap_err().code, u);
        assert_eq!(rt.kernel_native(Kernel::NULL).unwrap_err().code, u);
        assert_eq!(rt.queue_native(Queue::NULL).unwrap_err().code, u);
        // SAFETY: rejected before any kernel could run.
        let launch = unsafe { rt.launch(Queue::NULL, Kernel::NULL, &LaunchDims::linear(1, 1), &KernelArgs::EMPTY) };
        assert_eq!(launch.unwrap_err().code, u);
        assert_eq!(rt.shutdown().unwrap_err().code, u);
    };
    check(rt);
    rt.init().unwrap();
    rt.shutdown().unwrap();
    check(rt);
}

#[test]
fn full_tables_return_out_of_resources_and_change_nothing() {
    let w = world();
    let rt = w.rt;
    let cap = ordo_core::capacity::MAX_QUEUES;
    while rt.live_objects().unwrap().queues < cap {
        rt.queue_create(w.d).unwrap();
    }
    rejects(&w, ErrorCode::OutOfResources, || rt.queue_create(w.d));
    rt.queue_destroy(w.q).unwrap();
    rt.queue_create(w.d).unwrap();
}

#[test]
fn host_backend_rejects_unknown_programs_kernels_and_exhaustion() {
    let (h, rt) = host_runtime();
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    assert_eq!(rt.program_load(d, b"no.such.program").unwrap_err().code, ErrorCode::InvalidBinary);
    let p = rt.program_load(d, b"ordo.builtin\0").unwrap();
    assert_eq!(rt.kernel_get(p, "no_such_kernel").unwrap_err().code, ErrorCode::NotFound);
    assert_eq!(rt.kernel_get(p, "vector_add_f32").unwrap(), rt.kernel_get(p, "vector_add_f32").unwrap());
    let free = h.free_bytes();
    assert_eq!(rt.mem_alloc(d, MemKind::Device, free + 1).unwrap_err().code, ErrorCode::OutOfResources);
    assert_eq!(h.free_bytes(), free);
    let all = rt.mem_alloc(d, MemKind::Device, free).unwrap();
    assert_eq!(rt.mem_alloc(d, MemKind::Device, 1).unwrap_err().code, ErrorCode::OutOfResources);
    rt.mem_free(all).unwrap();
    assert_eq!(h.free_bytes(), free);
    let q = rt.queue_create(d).unwrap();
    let k = rt.kernel_get(p, "vector_add_f32").unwrap();
    let too_big = LaunchDims { grid: [1, 1, 1], block: [1025, 1, 1], shared_mem_bytes: 0 };
    // Four argument pointers (the kernel's count), never read: every launch below is refused.
    let mut word = 0u64;
    let four = [(&raw mut word).cast::<core::ffi::c_void>(); 4];
    let launch = |dims: &LaunchDims, args: &KernelArgs<'_>| {
        // SAFETY: each launch here is rejected before the kernel reads an argument: by the
        // dimension checks, or by the runtime's argument-count check.
        unsafe { rt.launch(q, k, dims, args) }.map_err(|e| e.code)
    };
    let four = KernelArgs::unsized_params(&four).unwrap();
    assert_eq!(launch(&too_big, &KernelArgs::EMPTY), Err(ErrorCode::InvalidValue));
    let shared = LaunchDims { shared_mem_bytes: 48 * 1024 + 1, ..LaunchDims::linear(1, 1) };
    assert_eq!(launch(&shared, &four), Err(ErrorCode::InvalidValue), "more local memory than a block has");
    // A kernel given too few arguments fails cleanly instead of reading past them: the runtime
    // compares the count with the kernel's parameters before the backend is called.
    assert_eq!(launch(&LaunchDims::linear(1, 1), &KernelArgs::EMPTY), Err(ErrorCode::InvalidArgument));
    assert_eq!(launch(&shared, &KernelArgs::EMPTY), Err(ErrorCode::InvalidArgument), "the count comes first");
    let (e0, e1) = (rt.event_create(d).unwrap(), rt.event_create(d).unwrap());
    assert_eq!(rt.event_elapsed_ms(e0, e1).unwrap_err().code, ErrorCode::InvalidArgument, "never recorded");
    rt.event_record(e0, q).unwrap();
    rt.event_record(e1, q).unwrap();
    assert!(rt.event_elapsed_ms(e0, e1).unwrap() >= 0.0);
    let ordo_core::Shutdown::TornDown(_) = rt.shutdown().unwrap() else { panic!() };
    let report = rt.last_teardown_report().unwrap();
    assert!(report.is_clean());
}

/// Host registration's argument checks come first (null, size, handle), then the backend: the
/// host backend registers (the range is its memory as it is): copies reach the caller's bytes,
/// an overlapping range is `InvalidArgument`, `mem_free` refuses the registration (`NotFound`,
/// nothing changed), `host_unregister` ends it once, and the bytes stay the caller's.
#[test]
fn host_register_checks_its_arguments_and_the_host_backend_registers() {
    let (_, rt) = ordo_tests::host_runtime();
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    let mut bytes = vec![0u8; 256];
    let p = bytes.as_mut_ptr();
    // SAFETY: `bytes` outlives every call and the registration (unregistered below).
    unsafe {
        assert_eq!(rt.host_register(d, std::ptr::null_mut(), 256).unwrap_err().code, ErrorCode::NullPointer);
        assert_eq!(rt.host_register(d, p, 0).unwrap_err().code, ErrorCode::InvalidSize);
        assert_eq!(rt.host_register(d, p, usize::MAX).unwrap_err().code, ErrorCode::InvalidSize);
        assert_eq!(rt.host_register(Device::from_raw(0), p, 256).unwrap_err().code, ErrorCode::NullHandle);
        assert_eq!(rt.host_register(d, p, 256).unwrap(), DevicePtr(p as u64));
        assert_eq!(rt.host_register(d, p.add(16), 16).unwrap_err().code, ErrorCode::InvalidArgument);
    }
    let (base, size, kind, dev) = rt.mem_info(DevicePtr(p as u64 + 10)).unwrap();
    assert_eq!((base, size, kind, dev), (DevicePtr(p as u64), 256, MemKind::Registered, d));
    rt.copy_to_device(DevicePtr(p as u64 + 8), &[7u8; 8]).unwrap();
    assert_eq!(rt.mem_free(DevicePtr(p as u64)).unwrap_err().code, ErrorCode::NotFound);
    assert_eq!(rt.mem_info(DevicePtr(p as u64)).unwrap().2, MemKind::Registered, "still registered");
    assert_eq!(rt.host_unregister(DevicePtr(p as u64 + 16)).unwrap_err().code, ErrorCode::InvalidArgument);
    assert_eq!(rt.host_unregister(DevicePtr(0)).unwrap_err().code, ErrorCode::NullPointer);
    let allocation = rt.mem_alloc(d, MemKind::Device, 64).unwrap();
    assert_eq!(rt.host_unregister(allocation).unwrap_err().code, ErrorCode::InvalidArgument, "an allocation");
    rt.mem_free(allocation).unwrap();
    rt.host_unregister(DevicePtr(p as u64)).unwrap();
    assert_eq!(rt.host_unregister(DevicePtr(p as u64)).unwrap_err().code, ErrorCode::NotFound);
    assert_eq!(rt.mem_free(DevicePtr(p as u64)).unwrap_err().code, ErrorCode::NotFound);
    assert_eq!(&bytes[..16], &[0, 0, 0, 0, 0, 0, 0, 0, 7, 7, 7, 7, 7, 7, 7, 7], "the caller's bytes, written");
    let p = bytes.as_mut_ptr();
    assert_eq!(rt.mem_alloc(d, MemKind::Registered, 256).unwrap_err().code, ErrorCode::InvalidEnumeration);
    assert_eq!(rt.live_objects().unwrap().allocations, 0);
    rt.shutdown().unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { rt.host_register(d, p, 256) }.unwrap_err().code, ErrorCode::Uninitialized);
}

/// Cluster launches check the cluster against the grid first (`InvalidValue`), then the host
/// runtime compares the argument count with the kernel's parameters (`InvalidArgument`), then
/// the host backend has no clusters and cannot count a kernel's parameters (`Unsupported`).
#[test]
fn cluster_launch_checks_and_the_host_backend_refuses_it() {
    let (_, rt) = ordo_tests::host_runtime();
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    let q = rt.queue_create(d).unwrap();
    let p = rt.program_load(d, ordo_core::host::builtin::PROGRAM_NAME.as_bytes()).unwrap();
    let k = rt.kernel_get(p, "vector_add_f32").unwrap();
    let dims = LaunchDims { grid: [4, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 };
    // SAFETY: every call is refused before the kernel runs.
    unsafe {
        assert_eq!(
            rt.launch_cluster(q, k, &dims, [0, 1, 1], &KernelArgs::EMPTY).unwrap_err().code,
            ErrorCode::InvalidValue
        );
        assert_eq!(
            rt.launch_cluster(q, k, &dims, [3, 1, 1], &KernelArgs::EMPTY).unwrap_err().code,
            ErrorCode::InvalidValue
        );
        assert_eq!(
            rt.launch_cluster(q, k, &dims, [2, 1, 1], &KernelArgs::EMPTY).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
        let mut word = 0u64;
        let four = [(&raw mut word).cast::<core::ffi::c_void>(); 4];
        assert_eq!(
            rt.launch_cluster(q, k, &dims, [2, 1, 1], &KernelArgs::unsized_params(&four).unwrap()).unwrap_err().code,
            ErrorCode::Unsupported
        );
    }
    assert_eq!(rt.kernel_param_count(k).unwrap_err().code, ErrorCode::Unsupported);
    // Backends without a separate kind give an ordinary queue for an independent one.
    let independent = rt.queue_create_independent(d).unwrap();
    assert_eq!(rt.queue_device(independent).unwrap(), d);
    assert_eq!(rt.queue_create_independent(Device::from_raw(0)).unwrap_err().code, ErrorCode::NullHandle);
    rt.shutdown().unwrap();
}

#[test]
fn native_values_are_the_backends_own_and_die_with_their_objects() {
    let w = world();
    let rt = w.rt;
    let q = rt.queue_create(w.d).unwrap();
    let p = rt.program_load(w.d, b"image").unwrap();
    let k = rt.kernel_get(p, "kernel").unwrap();
    let (queue_raw, kernel_raw) = (rt.queue_native(q).unwrap(), rt.kernel_native(k).unwrap());
    // The scripted backend names a kernel (program << 32) | FNV-1a(name).
    let fnv = b"kernel".iter().fold(0x811c_9dc5_u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    assert_eq!(kernel_raw as u32, fnv);
    rt.queue_destroy(q).unwrap();
    rt.program_unload(p).unwrap();
    let log = w.b.release_log();
    assert!(log.contains(&(ScriptedObject::Queue, queue_raw)), "{log:?}");
    assert!(log.contains(&(ScriptedObject::Program, kernel_raw >> 32)), "{log:?}");
    rejects(&w, ErrorCode::InvalidHandle, || rt.queue_native(q));
    rejects(&w, ErrorCode::InvalidHandle, || rt.kernel_native(k));
}

/// Tensor maps: a shape that does not fit its rank is `InvalidValue` before any backend call, an
/// unknown data type is the backend's `InvalidEnumeration`, a stale device `InvalidHandle`, and
/// the host backend has none (`Unsupported`); nothing is created either way.
#[test]
fn tensor_maps_refuse_bad_shapes_types_and_devices() {
    let map = |global_dim: &'static [u64], data_type| ordo_tests::tensor_map(0x1000, data_type, global_dim);
    let (b, rt) = scripted_runtime(1);
    rt.init().unwrap();
    let d = device(rt, 0).unwrap();
    let calls = b.calls();
    let code = |r: Result<ordo_core::TensorMap>| r.unwrap_err().code;
    assert_eq!(code(rt.tensor_map_encode_tiled(d, &map(&[], 0))), ErrorCode::InvalidValue);
    assert_eq!(code(rt.tensor_map_encode_tiled(d, &map(&[64, 64], 0))), ErrorCode::InvalidValue);
    assert_eq!(b.calls(), calls, "refused before the backend");
    assert_eq!(code(rt.tensor_map_encode_tiled(d, &map(&[64], 99))), ErrorCode::InvalidEnumeration);
    assert!(rt.tensor_map_encode_tiled(d, &map(&[64], 7)).is_ok());
    rt.shutdown().unwrap();
    rt.init().unwrap();
    assert_eq!(code(rt.tensor_map_encode_tiled(d, &map(&[64], 7))), ErrorCode::InvalidHandle);
    rt.shutdown().unwrap();
    let (_, host) = host_runtime();
    host.init().unwrap();
    let hd = device(host, 0).unwrap();
    assert_eq!(code(host.tensor_map_encode_tiled(hd, &map(&[64], 7))), ErrorCode::Unsupported);
    assert_eq!(host.live_objects().unwrap(), LiveObjects { platforms: 1, devices: 1, ..LiveObjects::default() });
    host.shutdown().unwrap();
}

/// Memory in queue order: bad input to `mem_alloc_on` / `mem_free_on` is an error that changes
/// nothing (sizes, null, stale and wrong-kind handles, memory that is not queue-ordered, a queue
/// of another device, a double free, an address inside the allocation); the good calls reach
/// the backend once each (the free when the cache gives the block back); after its free is
/// submitted the address is unknown to every call.
#[test]
fn queue_ordered_memory_refuses_bad_input_and_changes_nothing() {
    let w = world();
    let rt = w.rt;
    rejects(&w, ErrorCode::InvalidSize, || rt.mem_alloc_on(w.q, 0));
    rejects(&w, ErrorCode::InvalidSize, || rt.mem_alloc_on(w.q, usize::MAX));
    rejects(&w, ErrorCode::NullHandle, || rt.mem_alloc_on(Queue::from_raw(0), 64));
    rejects(&w, ErrorCode::InvalidHandle, || rt.mem_alloc_on(w.old_q, 64));
    rejects(&w, ErrorCode::InvalidHandle, || rt.mem_alloc_on(w.dead_q, 64));
    rejects(&w, ErrorCode::InvalidHandle, || rt.mem_alloc_on(Queue::from_raw(w.e.to_raw()), 64));
    rejects(&w, ErrorCode::InvalidEnumeration, || rt.mem_alloc(w.d, MemKind::Ordered, 64));
    let (handle, p) = rt.mem_alloc_on(w.q, 256).unwrap();
    assert_eq!(rt.mem_info(p).unwrap().2, MemKind::Ordered);
    rejects(&w, ErrorCode::InvalidArgument, || rt.mem_free_on(w.q, w.m));
    rejects(&w, ErrorCode::NullPointer, || rt.mem_free_on(w.q, DevicePtr(0)));
    rejects(&w, ErrorCode::InvalidArgument, || rt.mem_free_on(w.q, p.offset(8)));
    rejects(&w, ErrorCode::InvalidHandle, || rt.mem_free_on(w.dead_q, p));
    let d1 = device(rt, 1).unwrap();
    let q1 = rt.queue_create(d1).unwrap();
    rejects(&w, ErrorCode::InvalidArgument, || rt.mem_free_on(q1, p));
    rt.fill(p, FillValue::U8(1), 256, Some(w.q)).unwrap();
    let calls = w.b.calls();
    rt.mem_free_on(w.q, p).unwrap();
    // Kept for the queue by the cache (`cache.rs`): no backend call; the queue's trim gives it
    // back with one.
    assert_eq!(w.b.calls(), calls, "kept by the cache");
    assert_eq!(rt.queue_trim(w.q).unwrap(), 256);
    assert_eq!(w.b.calls(), calls + 1, "one backend call");
    rejects(&w, ErrorCode::NotFound, || rt.mem_free_on(w.q, p));
    rejects(&w, ErrorCode::NotFound, || rt.mem_free(p));
    rejects(&w, ErrorCode::NotFound, || rt.fill(p, FillValue::U8(0), 4, Some(w.q)));
    rejects(&w, ErrorCode::InvalidHandle, || rt.mem_release_on(w.q, handle));
    // Freed like any allocation, by `mem_free`; and by the teardown.
    let (_, p2) = rt.mem_alloc_on(w.q, 64).unwrap();
    rt.mem_free(p2).unwrap();
    rt.mem_alloc_on(q1, 64).unwrap();
    rt.shutdown().unwrap();
    assert_eq!(w.b.live_total(), 0);
    rejects(&w, ErrorCode::Uninitialized, || rt.mem_alloc_on(w.q, 64));
    rejects(&w, ErrorCode::Uninitialized, || rt.mem_free_on(w.q, p));
}

/// Graphs: capture, launch and destroy on the scripted backend; every misuse is an error that
/// changes nothing: nested capture, ending a capture that is not open, synchronising, querying
/// or destroying a capturing queue, calls without a queue on its device (copies, fills, frees),
/// queue-ordered memory on it, launching on another device's queue, stale, null and wrong-kind
/// handles, a second destroy. The teardown ends a capture left open and destroys the graphs.
#[test]
fn graphs_refuse_misuse_and_change_nothing() {
    let w = world();
    let rt = w.rt;
    let d1 = device(rt, 1).unwrap();
    let q1 = rt.queue_create(d1).unwrap();
    rejects(&w, ErrorCode::InvalidArgument, || rt.queue_end_capture(w.q));
    rejects(&w, ErrorCode::NullHandle, || rt.queue_begin_capture(Queue::from_raw(0)));
    rejects(&w, ErrorCode::InvalidHandle, || rt.queue_begin_capture(w.dead_q));
    rejects(&w, ErrorCode::InvalidHandle, || rt.queue_begin_capture(w.old_q));
    rt.queue_begin_capture(w.q).unwrap();
    assert!(rt.queue_is_capturing(w.q).unwrap());
    rejects(&w, ErrorCode::InvalidArgument, || rt.queue_begin_capture(w.q));
    rejects(&w, ErrorCode::InvalidArgument, || rt.queue_synchronize(w.q));
    rejects(&w, ErrorCode::InvalidArgument, || rt.queue_query(w.q));
    rejects(&w, ErrorCode::InvalidArgument, || rt.queue_destroy(w.q));
    rejects(&w, ErrorCode::InvalidArgument, || rt.copy_to_device(w.m, &[0u8; 16]));
    rejects(&w, ErrorCode::InvalidArgument, || rt.fill(w.m, FillValue::U8(0), 16, None));
    rejects(&w, ErrorCode::InvalidArgument, || rt.mem_free(w.m));
    rejects(&w, ErrorCode::InvalidArgument, || rt.mem_alloc_on(w.q, 64));
    // Work on the capturing queue is recorded; other devices are not affected.
    rt.fill(w.m, FillValue::U8(7), 16, Some(w.q)).unwrap();
    let m1 = rt.mem_alloc(d1, MemKind::Device, 64).unwrap();
    rt.fill(m1, FillValue::U8(1), 64, None).unwrap();
    let graph = rt.queue_end_capture(w.q).unwrap();
    assert!(!rt.queue_is_capturing(w.q).unwrap());
    assert_eq!(rt.graph_device(graph).unwrap(), w.d);
    // SAFETY: the scripted backend runs nothing (and bad handles are refused before it is called).
    let launch = |g, q| unsafe { rt.graph_launch(g, q) };
    // SAFETY: the scripted backend runs nothing.
    unsafe { rt.graph_launch(graph, w.q) }.unwrap();
    // SAFETY: the scripted backend runs nothing.
    unsafe { rt.graph_launch(graph, w.q) }.unwrap();
    rejects(&w, ErrorCode::InvalidArgument, || launch(graph, q1));
    rejects(&w, ErrorCode::NullHandle, || launch(Graph::from_raw(0), w.q));
    rejects(&w, ErrorCode::InvalidHandle, || launch(Graph::from_raw(w.q.to_raw()), w.q));
    rejects(&w, ErrorCode::InvalidHandle, || launch(graph, w.dead_q));
    rt.queue_synchronize(w.q).unwrap();
    rt.graph_destroy(graph).unwrap();
    rejects(&w, ErrorCode::InvalidHandle, || rt.graph_destroy(graph));
    rejects(&w, ErrorCode::InvalidHandle, || launch(graph, w.q));
    // Left for the teardown: a graph, and a capture still open.
    rt.queue_begin_capture(w.q).unwrap();
    rt.queue_end_capture(w.q).unwrap();
    rt.queue_begin_capture(q1).unwrap();
    assert_eq!(rt.live_objects().unwrap().graphs, 1);
    let Shutdown::TornDown(summary) = rt.shutdown().unwrap() else { panic!("not the last reference") };
    assert!(summary.is_clean(), "{summary:?}");
    assert_eq!(rt.last_teardown_report().unwrap().released_of(ObjectKind::Graph), 1);
    assert_eq!(w.b.live_total(), 0, "the open capture's graph and the live one were destroyed");
    rejects(&w, ErrorCode::Uninitialized, || rt.queue_begin_capture(w.q));
}

/// A graph's launches take new arguments without a new capture; updates that do not fit, graphs
/// whose kernels' program was unloaded, and waits that would join or merge captures are refused.
#[test]
fn graph_argument_updates_orphans_and_captured_events() {
    let w = world();
    let rt = w.rt;
    let d1 = device(rt, 1).unwrap();
    let other_k = rt.kernel_get(rt.program_load(d1, b"image").unwrap(), "kernel").unwrap();
    let p2 = rt.program_load(w.d, b"image2").unwrap();
    let k2 = rt.kernel_get(p2, "kernel").unwrap();
    let q2 = rt.queue_create(w.d).unwrap();
    let n = 7u32;
    let params = [&n as *const u32 as *mut c_void];
    let args = KernelArgs::new(&params, &[4]).unwrap();
    let dims = LaunchDims::linear(1, 1);
    rt.queue_begin_capture(w.q).unwrap();
    // SAFETY: the scripted backend runs nothing.
    unsafe { rt.launch(w.q, w.k, &dims, &args) }.unwrap();
    rt.event_record(w.e, w.q).unwrap();
    // The event has not run: no queue but the capturing one may wait for it, nothing may wait on it.
    rejects(&w, ErrorCode::InvalidArgument, || rt.queue_wait_event(q2, w.e));
    rejects(&w, ErrorCode::InvalidArgument, || rt.event_synchronize(w.e));
    rejects(&w, ErrorCode::InvalidArgument, || rt.event_query(w.e));
    rt.queue_begin_capture(q2).unwrap();
    rejects(&w, ErrorCode::InvalidArgument, || rt.queue_wait_event(q2, w.e));
    let empty = rt.queue_end_capture(q2).unwrap();
    rt.queue_wait_event(w.q, w.e).unwrap();
    // SAFETY: as above.
    unsafe { rt.launch(w.q, k2, &dims, &args) }.unwrap();
    let graph = rt.queue_end_capture(w.q).unwrap();
    // The event's record is part of the graph: refused until it is recorded again.
    rejects(&w, ErrorCode::InvalidArgument, || rt.event_synchronize(w.e));
    rejects(&w, ErrorCode::InvalidArgument, || rt.queue_wait_event(q2, w.e));
    rejects(&w, ErrorCode::InvalidArgument, || rt.queue_wait_event(w.q, w.e));
    rt.event_record(w.e, w.q).unwrap();
    rt.event_synchronize(w.e).unwrap();
    rt.queue_wait_event(q2, w.e).unwrap();
    assert_eq!(rt.graph_kernel_count(graph).unwrap(), 2);
    assert_eq!(rt.graph_kernel_count(empty).unwrap(), 0);
    // SAFETY: the scripted backend reads no argument (and misuse is refused before it).
    let set = |g, i, k, a: &KernelArgs<'_>| unsafe { rt.graph_set_args(g, i, k, a) };
    set(graph, 0, w.k, &args).unwrap();
    set(graph, 1, k2, &args).unwrap();
    rejects(&w, ErrorCode::InvalidArgument, || set(graph, 2, w.k, &args));
    rejects(&w, ErrorCode::InvalidArgument, || set(empty, 0, w.k, &args));
    rejects(&w, ErrorCode::InvalidArgument, || set(graph, 0, w.k, &KernelArgs::EMPTY));
    rejects(&w, ErrorCode::InvalidArgument, || set(graph, 0, other_k, &args));
    rejects(&w, ErrorCode::NullHandle, || set(Graph::from_raw(0), 0, w.k, &args));
    rejects(&w, ErrorCode::InvalidHandle, || set(Graph::from_raw(w.q.to_raw()), 0, w.k, &args));
    rejects(&w, ErrorCode::InvalidHandle, || set(graph, 0, w.dead_k, &args));
    rejects(&w, ErrorCode::InvalidHandle, || set(graph, 0, w.old_k, &args));
    // The backend tells which kernel each launch runs.
    assert_eq!(set(graph, 0, k2, &args).unwrap_err().code, ErrorCode::InvalidArgument);
    // A graph holds its programs: the unload of `w.k`'s program by its loader leaves it loaded
    // and the graph launchable. Unloaded once more (more unloads than references), the program
    // goes: the graph of both is orphaned, a graph of `k2` alone is not.
    rt.queue_begin_capture(w.q).unwrap();
    // SAFETY: as above.
    unsafe { rt.launch(w.q, k2, &dims, &args) }.unwrap();
    let only_k2 = rt.queue_end_capture(w.q).unwrap();
    // SAFETY: the scripted backend runs nothing (and an orphaned graph is refused before it).
    let launch = |g, q| unsafe { rt.graph_launch(g, q) };
    rt.program_unload(w.p).unwrap();
    assert!(rt.kernel_get(w.p, "kernel").is_ok(), "the graph keeps the program loaded");
    launch(graph, w.q).unwrap();
    rt.program_unload(w.p).unwrap();
    rejects(&w, ErrorCode::InvalidArgument, || launch(graph, w.q));
    rejects(&w, ErrorCode::InvalidArgument, || set(graph, 1, k2, &args));
    launch(only_k2, w.q).unwrap();
    launch(empty, w.q).unwrap();
    set(only_k2, 0, k2, &args).unwrap();
    rt.graph_destroy(graph).unwrap();
    let Shutdown::TornDown(summary) = rt.shutdown().unwrap() else { panic!("not the last reference") };
    assert!(summary.is_clean(), "{summary:?}");
    assert_eq!(w.b.live_total(), 0);
}

/// The bare host backend (queues that run work at submission) has no graphs: `Unsupported`, and
/// nothing changes (its queue wrappers, `QueuedHost` and `DeferredHost`, capture).
#[test]
fn the_host_device_has_no_graphs() {
    let (_, rt) = host_runtime();
    rt.init().unwrap();
    let q = rt.queue_create(device(rt, 0).unwrap()).unwrap();
    assert_eq!(rt.queue_begin_capture(q).unwrap_err().code, ErrorCode::Unsupported);
    assert!(!rt.queue_is_capturing(q).unwrap());
    rt.queue_synchronize(q).unwrap();
    rt.shutdown().unwrap();
}

/// A program unloaded while a queue of its device captures leaves the tables at once (its
/// handle and kernels stale) and the backend unloads it when the device's last capture ends;
/// the graph of that capture, which launched its kernel, is orphaned. (Before, the unload was
/// refused, and a module dropped on one thread while another captured stayed loaded until the
/// teardown: the soak filled the program table that way.) A graph destroyed during a capture
/// gives its program back the same way.
#[test]
fn unloads_during_a_capture_wait_for_it_to_end() {
    let w = world();
    let rt = w.rt;
    let n = 7u32;
    let params = [&n as *const u32 as *mut c_void];
    let args = KernelArgs::new(&params, &[4]).unwrap();
    let dims = LaunchDims::linear(1, 1);
    let p3 = rt.program_load(w.d, b"image3").unwrap();
    let k3 = rt.kernel_get(p3, "kernel").unwrap();
    let live_before = w.b.live_total();
    rt.queue_begin_capture(w.q).unwrap();
    // SAFETY: the scripted backend runs nothing.
    unsafe { rt.launch(w.q, k3, &dims, &args) }.unwrap();
    rt.program_unload(p3).unwrap();
    assert_eq!(rt.kernel_get(p3, "kernel").unwrap_err().code, ErrorCode::InvalidHandle, "the handle is stale");
    assert_eq!(w.b.live_total(), live_before, "the backend's unload waits for the capture");
    let graph = rt.queue_end_capture(w.q).unwrap();
    // SAFETY: refused before the backend (its kernel's program is gone).
    assert_eq!(unsafe { rt.graph_launch(graph, w.q) }.unwrap_err().code, ErrorCode::InvalidArgument);
    rt.graph_destroy(graph).unwrap();
    assert_eq!(w.b.live_total(), live_before - 1, "unloaded when the capture ended (the graph went too)");

    // A graph holding the only reference, destroyed while another queue captures.
    let p4 = rt.program_load(w.d, b"image4").unwrap();
    let k4 = rt.kernel_get(p4, "kernel").unwrap();
    rt.queue_begin_capture(w.q).unwrap();
    // SAFETY: as above.
    unsafe { rt.launch(w.q, k4, &dims, &args) }.unwrap();
    let g4 = rt.queue_end_capture(w.q).unwrap();
    rt.program_unload(p4).unwrap();
    assert!(rt.kernel_get(p4, "kernel").is_ok(), "the graph holds it");
    let q2 = rt.queue_create(w.d).unwrap();
    rt.queue_begin_capture(q2).unwrap();
    let live = w.b.live_total();
    rt.graph_destroy(g4).unwrap();
    assert_eq!(rt.kernel_get(p4, "kernel").unwrap_err().code, ErrorCode::InvalidHandle);
    assert_eq!(w.b.live_total(), live - 1, "the graph went; its program waits for the capture");
    let empty = rt.queue_end_capture(q2).unwrap();
    rt.graph_destroy(empty).unwrap();
    assert_eq!(w.b.live_total(), live - 2, "the program went when the capture ended");
    let Shutdown::TornDown(summary) = rt.shutdown().unwrap() else { panic!("not the last reference") };
    assert!(summary.is_clean(), "{summary:?}");
    assert_eq!(w.b.live_total(), 0);
}
