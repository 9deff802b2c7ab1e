//! Host graphs on `DeferredHost` (the `no_std` queues): capture records instead of running,
//! launches replay in order at the queue's execution point, argument updates apply to later
//! launches only, misuse is refused, and the teardown gives the graphs' memory back.

use crate::backend::{Backend, KernelArgs, LaunchDims};
use crate::error::{Error, ErrorCode};
use crate::host::{DeferredHost, HOST_ALIGN, HostArena, HostBackend, HostKernel, HostProgram, HostThread};
use crate::{DevicePtr, MemKind, Shutdown};

static ARENA: HostArena<{ 64 * HOST_ALIGN }> = HostArena::new();
static KERNELS: &[HostKernel] = &[HostKernel {
    name: "add_u32",
    run: add_u32,
    params: &[core::mem::size_of::<usize>(), 4],
    extents_required: false,
}];
static PROGRAMS: &[HostProgram] = &[HostProgram { name: "graph.test", kernels: KERNELS }];
static HOST: HostBackend = HostBackend::new(&ARENA, PROGRAMS, None);
static DEVICE: DeferredHost = DeferredHost::new(&HOST);
static BACKENDS: [&dyn Backend; 1] = [&DEVICE];
crate::static_runtime!(static RT = &BACKENDS);

/// `*(u32 *)p += v` (one thread).
unsafe fn add_u32(_: &HostThread, args: &KernelArgs<'_>) -> Result<(), Error> {
    // SAFETY: the test passes the address of a live `u32` of the arena and a `u32`.
    unsafe {
        let p = core::ptr::with_exposed_provenance_mut::<u32>(args.read::<usize>(0)?);
        *p += args.read::<u32>(1)?;
    }
    Ok(())
}

/// Reads the `u32` at `p` without an execution point.
fn peek(p: DevicePtr) -> u32 {
    // SAFETY: a live allocation of the arena; no work runs while the test reads (only at its
    // own execution points).
    unsafe { core::ptr::with_exposed_provenance::<u32>(p.0 as usize).read() }
}

#[test]
fn deferred_graphs_replay_in_order_and_take_new_arguments() {
    let rt = &RT;
    rt.init().unwrap();
    let d = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let (a, b) = (rt.mem_alloc(d, MemKind::Device, 4).unwrap(), rt.mem_alloc(d, MemKind::Device, 4).unwrap());
    rt.fill(a, crate::FillValue::U32(0), 1, None).unwrap();
    rt.fill(b, crate::FillValue::U32(0), 1, None).unwrap();
    let k = rt.kernel_get(rt.program_load(d, b"graph.test").unwrap(), "add_u32").unwrap();
    let q = rt.queue_create(d).unwrap();
    let e = rt.event_create(d).unwrap();
    let launch = |to: DevicePtr, v: u32| {
        let addr = to.0 as usize;
        let params = [(&raw const addr).cast_mut().cast(), (&raw const v).cast_mut().cast()];
        let args = KernelArgs::new(&params, &[core::mem::size_of::<usize>(), 4]).unwrap();
        // SAFETY: `add_u32` reads its two values and writes the live `u32` at `to`.
        unsafe { rt.launch(q, k, &LaunchDims::linear(1, 1), &args) }
    };
    let free = HOST.free_bytes();
    rt.queue_begin_capture(q).unwrap();
    launch(a, 1).unwrap();
    rt.fill(b, crate::FillValue::U32(5), 1, Some(q)).unwrap();
    launch(a, 10).unwrap();
    assert_eq!(rt.event_record(e, q).unwrap_err().code, ErrorCode::Unsupported, "no events in host graphs");
    let graph = rt.queue_end_capture(q).unwrap();
    assert_eq!(rt.graph_kernel_count(graph).unwrap(), 2);
    rt.queue_synchronize(q).unwrap();
    assert_eq!((peek(a), peek(b)), (0, 0), "nothing ran during the capture");
    // SAFETY: the graph's kernels write `a` and `b`, live until the end of the test.
    let replay = || unsafe { rt.graph_launch(graph, q) }.unwrap();
    replay();
    replay();
    assert_eq!(peek(a), 0, "deferred: the launches wait for the queue's execution point");
    rt.queue_synchronize(q).unwrap();
    assert_eq!((peek(a), peek(b)), (22, 5));
    replay();
    // The second launch now adds 100 to `b`; the replay submitted before keeps its arguments.
    let (addr, v) = (b.0 as usize, 100u32);
    let params = [(&raw const addr).cast_mut().cast(), (&raw const v).cast_mut().cast()];
    let args = KernelArgs::new(&params, &[core::mem::size_of::<usize>(), 4]).unwrap();
    // SAFETY: as for the launches above.
    unsafe { rt.graph_set_args(graph, 1, k, &args) }.unwrap();
    assert_eq!(peek(a), 33, "the update ran the replay submitted before it first");
    replay();
    rt.queue_synchronize(q).unwrap();
    assert_eq!((peek(a), peek(b)), (34, 105), "fill b = 5, then b += 100");
    // SAFETY: as above; refused before anything changes.
    let refused = unsafe { rt.graph_set_args(graph, 2, k, &args) }.unwrap_err();
    assert_eq!(refused.code, ErrorCode::InvalidArgument);
    let other = rt.queue_create(d).unwrap();
    rt.queue_begin_capture(other).unwrap();
    // SAFETY: refused before anything runs.
    let nested = unsafe { rt.graph_launch(graph, other) }.unwrap_err();
    assert_eq!(nested.code, ErrorCode::InvalidArgument, "no graph is launched into a capture");
    rt.graph_destroy(rt.queue_end_capture(other).unwrap()).unwrap();
    // SAFETY: as above.
    unsafe { rt.graph_launch(graph, other) }.unwrap();
    rt.queue_synchronize(other).unwrap();
    assert_eq!((peek(a), peek(b)), (35, 105), "fill b = 5, then b += 100, on another queue");
    // One graph destroyed, one left to the teardown, and a capture left open.
    rt.graph_destroy(graph).unwrap();
    assert_eq!(HOST.free_bytes(), free, "the graph's memory was given back");
    rt.queue_begin_capture(q).unwrap();
    launch(a, 1).unwrap();
    rt.queue_end_capture(q).unwrap();
    rt.queue_begin_capture(q).unwrap();
    launch(a, 1).unwrap();
    let Ok(Shutdown::TornDown(summary)) = rt.shutdown() else { panic!("the last reference") };
    assert!(summary.is_clean(), "{summary:?}");
    assert_eq!(peek(a), 35, "nothing of the graphs left ran");
}
