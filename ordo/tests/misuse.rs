//! Bad input to the typed API and to handles: each gets its specific error and changes nothing.
//! Runs over `OwnedRuntime`s (a fresh runtime per test) with the scripted backend (two devices)
//! and the host backend.

use ordo::host::{HostArena, HostBackend, builtin};
use ordo::{Context, DeviceBuffer, Error, ErrorCode, LaunchDims, Module, OwnedRuntime, raw::MemKind};
use ordo_testing::ScriptedBackend;

fn host_backend() -> &'static HostBackend {
    let arena: &'static HostArena<{ 1 << 14 }> = Box::leak(Box::new(HostArena::new()));
    Box::leak(Box::new(HostBackend::new(arena, builtin::PROGRAMS, None)))
}

#[test]
fn another_runtimes_handle_is_rejected_and_changes_nothing() {
    let (a, b) = (OwnedRuntime::new(&[host_backend()]), OwnedRuntime::new(&[host_backend()]));
    let (ctx_a, ctx_b) = (Context::with_runtime(&a).unwrap(), Context::with_runtime(&b).unwrap());
    assert_ne!(a.identity(), b.identity());
    let (qa, qb) = (ctx_a.device(0).unwrap().queue().unwrap(), ctx_b.device(0).unwrap().queue().unwrap());
    // Same kind, slot and generation: only the runtime differs.
    assert_eq!(qa.raw().to_raw() & 0xFFFF_FFFF_FFFF, qb.raw().to_raw() & 0xFFFF_FFFF_FFFF);
    let e = b.queue_destroy(qa.raw()).unwrap_err();
    assert_eq!((e.code, e.message), (ErrorCode::InvalidHandle, "handle belongs to another runtime"));
    assert_eq!(b.live_objects().unwrap().queues, 1, "b's own queue is still there");
    qb.synchronize().unwrap();
}

#[test]
fn a_stale_buffer_never_frees_a_newer_allocation_at_its_address() {
    let rt = OwnedRuntime::new(&[host_backend()]);
    let ctx = Context::with_runtime(&rt).unwrap();
    let dev = ctx.device(0).unwrap();
    let (old, addr) = rt.mem_allocate(dev.raw(), MemKind::Device, 256).unwrap();
    rt.mem_free(addr).unwrap();
    let (new, again) = rt.mem_allocate(dev.raw(), MemKind::Device, 256).unwrap();
    assert_eq!(addr, again, "the host arena hands the same address out again");
    assert_eq!(rt.mem_release(old).unwrap_err().code, ErrorCode::InvalidHandle);
    assert!(rt.mem_info(again).is_ok(), "the newer allocation is untouched");
    rt.mem_release(new).unwrap();
    assert_eq!(rt.mem_release(new).unwrap_err().code, ErrorCode::InvalidHandle, "double release");
}

#[test]
fn objects_dropped_after_the_final_shutdown_or_a_reinit_are_no_ops() {
    let rt = OwnedRuntime::new(&[host_backend()]);
    let ctx = Context::with_runtime(&rt).unwrap();
    let dev = ctx.device(0).unwrap();
    let buf = DeviceBuffer::<u32>::zeroed(&dev, 64).unwrap();
    let queue = dev.queue().unwrap();
    let module = Module::load_builtin(&dev).unwrap();
    let add = module.function("vector_add_f32").unwrap();
    // A raw-API caller takes every reference away (the objects' own too): the final teardown
    // frees everything, and a new init starts a new epoch.
    rt.shutdown_all(&mut || true).unwrap();
    rt.init().unwrap();
    let newer = rt.mem_alloc(rt.device(rt.platform(0).unwrap(), 0).unwrap(), MemKind::Device, 256).unwrap();
    assert_eq!(newer, buf.device_ptr(), "a newer allocation at the old buffer's address");
    assert!(!ctx.is_current() && !ctx.clone().is_current(), "stale, and a clone takes no reference");
    drop((buf, queue, add, module, dev, ctx));
    assert!(rt.mem_info(newer).is_ok(), "dropping the stale objects freed nothing");
    assert_eq!(rt.state(), ordo::State::Ready(1), "and gave back none of the newer epoch's references");
    rt.shutdown().unwrap();
}

/// Every typed object holds its own runtime reference: the runtime stays up while any lives,
/// whatever order they are dropped in, and the last one tears it down.
#[test]
fn objects_keep_the_runtime_up_until_the_last_one_goes() {
    let rt = OwnedRuntime::new(&[host_backend()]);
    let ctx = Context::with_runtime(&rt).unwrap();
    let dev = ctx.device(0).unwrap();
    let buf = DeviceBuffer::from_slice(&dev, &[1u32, 2, 3]).unwrap();
    let add = Module::load_builtin(&dev).unwrap().function("vector_add_f32").unwrap();
    let (queue, event) = (dev.queue().unwrap(), dev.event().unwrap());
    drop((ctx, dev));
    assert!(matches!(rt.state(), ordo::State::Ready(_)));
    assert_eq!(buf.to_vec().unwrap(), [1, 2, 3], "the buffer still works without its context");
    assert_eq!(rt.live_objects().unwrap().programs, 1, "the function keeps its module loaded");
    queue.record(&event).unwrap();
    event.synchronize().unwrap();
    drop((queue, event, add));
    assert_eq!(rt.live_objects().unwrap().programs, 0, "the last holder of the module unloaded it");
    drop(buf);
    assert_eq!(rt.state(), ordo::State::Uninit, "the last object gave back the last reference");
}

#[test]
fn launch_arguments_are_checked_against_the_kernels_layout() {
    let rt = OwnedRuntime::new(&[host_backend()]);
    let ctx = Context::with_runtime(&rt).unwrap();
    let dev = ctx.device(0).unwrap();
    let (queue, module) = (dev.queue().unwrap(), Module::load_builtin(&dev).unwrap());
    let add = module.function("vector_add_f32").unwrap();
    let a = DeviceBuffer::from_slice(&dev, &[1.0f32; 4]).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&dev, 4).unwrap();
    let dims = LaunchDims::linear(1, 4);
    // SAFETY: refused before the kernel runs (five arguments for four parameters).
    let five = unsafe { queue.launch_builder(&add).arg(&a).arg(&a).arg(&c).arg(&4u32).arg(&4u32).launch(dims) };
    assert_eq!(five, Err(Error::ArgumentCount { expected: 4, actual: 5 }));
    // SAFETY: refused before the kernel runs (argument 3 is 8 bytes for a 4-byte parameter).
    let wide = unsafe { queue.launch_builder(&add).arg(&a).arg(&a).arg(&c).arg(&4u64).launch(dims) };
    assert_eq!(wide, Err(Error::ArgumentSize { index: 3, expected: 4, actual: 8 }));
    assert_eq!(
        wide.unwrap_err().to_string(),
        "invalid size: argument 3 is 8 bytes, the kernel's parameter 3 is 4 bytes"
    );
    assert_eq!(c.to_vec().unwrap(), [0.0; 4], "nothing ran");
    ordo::builtin::vector_add(&queue, &a, &a, &mut c).unwrap();
    assert_eq!(c.to_vec().unwrap(), [2.0; 4]);
    let short = DeviceBuffer::<f32>::zeroed(&dev, 3).unwrap();
    assert_eq!(
        ordo::builtin::vector_add(&queue, &a, &short, &mut c),
        Err(Error::LengthMismatch { expected: 4, actual: 3 })
    );
}

#[test]
fn a_buffer_of_another_device_and_an_out_of_range_slice_are_refused() {
    let scripted: &'static ScriptedBackend = Box::leak(Box::new(ScriptedBackend::new(2)));
    let rt = OwnedRuntime::new(&[host_backend(), scripted]);
    let ctx = Context::with_runtime(&rt).unwrap();
    let devices = ctx.devices().unwrap();
    let (host, other) = (devices[0].clone(), devices[1].clone());
    let (queue, module) = (host.queue().unwrap(), Module::load_builtin(&host).unwrap());
    let add = module.function("vector_add_f32").unwrap();
    let a = DeviceBuffer::from_slice(&host, &[1.0f32; 4]).unwrap();
    let elsewhere = DeviceBuffer::<f32>::zeroed(&other, 4).unwrap();
    // SAFETY: refused before the kernel runs.
    let r = unsafe {
        queue.launch_builder(&add).arg(&a).arg(&elsewhere).arg(&a).arg(&4u32).launch(LaunchDims::linear(1, 4))
    };
    assert_eq!(r, Err(Error::ArgumentDevice { index: 1 }));
    assert_eq!(a.slice(2..5).unwrap_err(), Error::OutOfRange { start: 2, end: 5, len: 4 });
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = a.slice(3..1).unwrap_err();
    assert_eq!(reversed.code(), ErrorCode::InvalidSize);
    let other_queue = other.queue().unwrap();
    let event = host.event().unwrap();
    assert_eq!(other_queue.record(&event), Err(Error::DeviceMismatch));
}

/// Every typed object from before a re-init answers `InvalidHandle` from every method, and never
/// reaches an object of the newer epoch: a buffer's copies, fills, slices and launch arguments,
/// queues, events, modules, functions, devices and the context itself (copies and launches went
/// by address before: `to_vec` returned a newer buffer's bytes, `copy_from` overwrote them).
#[test]
fn objects_from_before_a_reinit_reach_nothing_of_the_newer_epoch() {
    use ordo::{In, Out};
    let rt = OwnedRuntime::new(&[host_backend()]);
    let ctx = Context::with_runtime(&rt).unwrap();
    let dev = ctx.device(0).unwrap();
    let mut old = DeviceBuffer::<f32>::from_slice(&dev, &[1.0; 64]).unwrap();
    let (queue, event, other) = (dev.queue().unwrap(), dev.event().unwrap(), dev.event().unwrap());
    let module = Module::load_builtin(&dev).unwrap();
    let add = module.function("vector_add_f32").unwrap();
    type Add = (In<'static, f32>, In<'static, f32>, Out<'static, f32>, u32);
    let typed = module.typed_function::<Add>("vector_add_f32").unwrap();
    // A raw-API caller takes every reference away and initialises again.
    rt.shutdown_all(&mut || true).unwrap();
    rt.init().unwrap();
    let raw_dev = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let newer = rt.mem_alloc(raw_dev, MemKind::Device, 256).unwrap();
    assert_eq!(newer, old.device_ptr(), "a newer allocation at the old buffer's address");
    rt.copy_to_device(newer, &[7u8; 256]).unwrap();
    let newer_queue = rt.queue_create(raw_dev).unwrap();
    let before = rt.live_objects().unwrap();
    let stale = |what: &str, r: Result<(), Error>| {
        assert_eq!(r.map_err(|e| e.code()), Err(ErrorCode::InvalidHandle), "{what}");
    };
    // Buffers and slices.
    stale("to_vec", old.to_vec().map(drop));
    stale("copy_from", old.copy_from(&[2.0; 64]));
    let mut out = [0f32; 64];
    stale("copy_to", old.copy_to(&mut out));
    assert_eq!(out, [0.0; 64], "nothing read");
    stale("a slice's to_vec", old.slice(1..3).unwrap().to_vec().map(drop));
    stale("a slice's copy_from", old.slice_mut(..2).unwrap().copy_from(&[3.0, 3.0]));
    stale("fill", old.fill(5.0));
    stale("a slice's fill", old.slice_mut(1..).unwrap().fill(5.0));
    // Queues, events, scopes.
    stale("queue synchronize", queue.synchronize());
    stale("queue is_idle", queue.is_idle().map(drop));
    stale("record", queue.record(&event));
    stale("wait", queue.wait(&event));
    stale("event synchronize", event.synchronize());
    stale("event is_complete", event.is_complete().map(drop));
    stale("elapsed_since", event.elapsed_since(&other).map(drop));
    stale("a scope's copy", queue.scope(|s| s.copy_from_device(&old.as_slice(), &mut out)));
    // Launches: the builder's, the typed one's, the built-in kernels'.
    // SAFETY: refused before anything runs.
    let built = unsafe {
        queue.launch_builder(&add).arg(&old).arg(&old).arg(&old).arg(&64u32).launch(LaunchDims::linear(1, 64))
    };
    stale("a builder launch", built);
    let mut out_buf = DeviceBuffer::<f32>::zeroed(&Context::with_runtime(&rt).unwrap().device(0).unwrap(), 64).unwrap();
    let fresh_queue = out_buf.device().queue().unwrap();
    // SAFETY: refused before anything runs (a stale buffer among the arguments).
    let typed_launch =
        unsafe { fresh_queue.launch(&typed, LaunchDims::linear(1, 64), (&old, &old, &mut out_buf, 64u32)) };
    stale("a typed launch with a stale buffer", typed_launch);
    stale("a built-in kernel", ordo::builtin::vector_add(&fresh_queue, &old, &old, &mut out_buf));
    // Modules, functions, devices, the context.
    stale("function lookup", module.function("vector_add_f32").map(drop));
    stale("dims_for", add.dims_for(64).map(drop));
    stale("a new queue", dev.queue().map(drop));
    stale("a new event", dev.event().map(drop));
    stale("a new buffer", DeviceBuffer::<u8>::zeroed(&dev, 4).map(drop));
    stale("a module load", Module::load_builtin(&dev).map(drop));
    stale("devices", ctx.devices().map(drop));
    assert_eq!(out_buf.to_vec().unwrap(), [0.0; 64], "the fresh buffer is untouched");
    drop((out_buf, fresh_queue));
    let mut bytes = [0u8; 256];
    rt.copy_from_device(&mut bytes, newer).unwrap();
    assert_eq!(bytes, [7u8; 256], "the newer allocation is untouched");
    drop((old, queue, event, other, typed, add, module, dev, ctx));
    assert_eq!(rt.live_objects().unwrap(), before, "the stale drops released nothing of the newer epoch");
    rt.queue_destroy(newer_queue).unwrap();
    rt.mem_free(newer).unwrap();
    rt.shutdown().unwrap(); // the reference `rt.init()` took above
}
