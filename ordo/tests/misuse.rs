//! Bad input to the typed API and to handles: each gets its specific error and changes nothing.
//! Runs over `OwnedRuntime`s (a fresh runtime per test) with the scripted backend (two devices)
//! and the host backend.

use ordo::host::{HostArena, HostBackend, builtin};
use ordo::{Context, DeviceBuffer, Error, ErrorCode, LaunchDims, MemKind, Module, OwnedRuntime};
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
    let (qa, qb) = (ctx_a.devices().unwrap()[0].queue().unwrap(), ctx_b.devices().unwrap()[0].queue().unwrap());
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
    let dev = ctx.devices().unwrap()[0];
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
fn buffers_dropped_after_the_final_shutdown_or_a_reinit_are_no_ops() {
    let rt = OwnedRuntime::new(&[host_backend()]);
    let ctx = Context::with_runtime(&rt).unwrap();
    let dev = ctx.devices().unwrap()[0];
    let buf = DeviceBuffer::<u32>::zeroed(&dev, 64).unwrap();
    let queue = dev.queue().unwrap();
    // A raw-API caller takes the context's reference away: the final teardown frees everything.
    rt.shutdown().unwrap();
    rt.init().unwrap();
    let newer = rt.mem_alloc(rt.device(rt.platform(0).unwrap(), 0).unwrap(), MemKind::Device, 256).unwrap();
    assert_eq!(newer, buf.device_ptr(), "a newer allocation at the old buffer's address");
    drop(buf);
    drop(queue);
    assert!(rt.mem_info(newer).is_ok(), "dropping the stale buffer freed nothing");
    drop(ctx); // gives back the reference taken by `rt.init()` above
}

#[test]
fn launch_arguments_are_checked_against_the_kernels_layout() {
    let rt = OwnedRuntime::new(&[host_backend()]);
    let ctx = Context::with_runtime(&rt).unwrap();
    let dev = ctx.devices().unwrap()[0];
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
    let (host, other) = (devices[0], devices[1]);
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

/// A buffer from before a re-init names its memory by identity in every copy and fill: each is
/// `InvalidHandle`, and a newer allocation that got its address is never read or written (copies
/// went by address and reached it: `to_vec` returned its bytes, `copy_from` overwrote them).
#[test]
fn a_buffer_from_before_a_reinit_reaches_no_newer_allocation_at_its_address() {
    let rt = OwnedRuntime::new(&[host_backend()]);
    let ctx = Context::with_runtime(&rt).unwrap();
    let dev = ctx.devices().unwrap()[0];
    let mut old = DeviceBuffer::<u32>::from_slice(&dev, &[1; 64]).unwrap();
    // A raw-API caller takes the context's reference away and initialises again.
    rt.shutdown().unwrap();
    rt.init().unwrap();
    let newer = rt.mem_alloc(rt.device(rt.platform(0).unwrap(), 0).unwrap(), MemKind::Device, 256).unwrap();
    assert_eq!(newer, old.device_ptr(), "a newer allocation at the old buffer's address");
    rt.copy_to_device(newer, &[7u8; 256]).unwrap();
    let stale = |what: &str, r: Result<(), Error>| {
        assert_eq!(r.map_err(|e| e.code()), Err(ErrorCode::InvalidHandle), "{what}");
    };
    stale("to_vec", old.to_vec().map(drop));
    stale("copy_from", old.copy_from(&[2; 64]));
    let mut out = [0u32; 64];
    stale("copy_to", old.copy_to(&mut out));
    assert_eq!(out, [0; 64], "nothing read");
    stale("a slice's to_vec", old.slice(1..3).unwrap().to_vec().map(drop));
    stale("a slice's copy_from", old.slice_mut(..2).unwrap().copy_from(&[3, 3]));
    stale("fill", old.fill(5));
    stale("a slice's fill", old.slice_mut(1..).unwrap().fill(5));
    let ctx2 = Context::with_runtime(&rt).unwrap();
    let mut fresh = DeviceBuffer::<u32>::zeroed(&ctx2.devices().unwrap()[0], 64).unwrap();
    // A device-to-device copy from it: its device handle is stale, so not the fresh buffer's.
    let copied = fresh.as_mut_slice().copy_from_device(&old.as_slice()).map_err(|e| e.code());
    assert_eq!(copied, Err(ErrorCode::InvalidArgument), "a device mismatch");
    drop(fresh);
    drop(ctx2);
    let mut bytes = [0u8; 256];
    rt.copy_from_device(&mut bytes, newer).unwrap();
    assert_eq!(bytes, [7u8; 256], "the newer allocation is untouched");
    drop(old);
    assert!(rt.mem_info(newer).is_ok(), "and not freed");
    rt.mem_free(newer).unwrap();
    drop(ctx); // gives back the reference taken by `rt.init()` above
}
