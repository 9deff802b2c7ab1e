//! The graph rows of `ordo bench` (the host replay below; the no-op argument update at the end).
//! The host graph row: 1,000 launches of a one-thread built-in kernel replayed
//! as one graph (`graph_launch`, one piece of the queue's work) against the same 1,000 launches
//! submitted one by one (`Runtime::launch`), each followed by the queue's synchronise, on the
//! default runtime's host device (threaded queues). ABBA-interleaved rounds; the row is the
//! median per-round ratio with its quartiles.

use super::*;

const LAUNCHES: usize = 1000;

pub(super) fn host_graph_replay(rows: &mut Vec<Row>) {
    let rt = ordo::runtime();
    rt.init().expect("default runtime init");
    let device = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let queue = rt.queue_create(device).unwrap();
    let image = ordo::builtin_program_image(ordo_core::BackendKind::Host).unwrap();
    let program = rt.program_load(device, image).unwrap();
    let kernel = rt.kernel_get(program, "vector_add_f32").unwrap();
    let cells = rt.mem_alloc(device, MemKind::Device, 3 * 4).unwrap();
    rt.fill(cells, FillValue::U32(0), 3, None).unwrap();
    let (a, c, n) = (cells.0, cells.0 + 8, 1u32);
    let params = [
        (&raw const a).cast_mut().cast(),
        (&raw const a).cast_mut().cast(),
        (&raw const c).cast_mut().cast(),
        (&raw const n).cast_mut().cast(),
    ];
    let args = KernelArgs::new(&params, &[8, 8, 8, 4]).unwrap();
    let dims = LaunchDims::linear(1, 1);
    let submit_all = || {
        for _ in 0..LAUNCHES {
            // SAFETY: vector_add_f32 reads 1 element of `a` and writes 1 of `c`, both in `cells`.
            unsafe { rt.launch(queue, kernel, &dims, &args) }.unwrap();
        }
    };
    rt.queue_begin_capture(queue).unwrap();
    submit_all();
    let graph = rt.queue_end_capture(queue).unwrap();
    let time = |f: &dyn Fn()| {
        let t = Instant::now();
        f();
        rt.queue_synchronize(queue).unwrap();
        t.elapsed().as_nanos() as f64 / LAUNCHES as f64
    };
    // SAFETY: as for the launches captured.
    let replay = || unsafe { rt.graph_launch(graph, queue) }.unwrap();
    let (mut loops, mut graphs, mut ratios) = (vec![], vec![], vec![]);
    for round in 0..24 {
        let (l, g) = if round % 2 == 0 {
            let l = time(&submit_all);
            (l, time(&replay))
        } else {
            let g = time(&replay);
            (time(&submit_all), g)
        };
        loops.push(l);
        graphs.push(g);
        ratios.push(g / l);
    }
    let (loop_median, _, _) = quartiles(loops);
    let (graph_median, _, _) = quartiles(graphs);
    let (_, q1, q3) = quartiles(ratios);
    rows.push(Row {
        name: "host graph: 1,000 launches replayed as one graph (launch + synchronise, per launch)",
        unit: "ns/launch",
        ordo: graph_median,
        baseline: Some(("1,000 host launches one by one (ns/launch)", loop_median)),
        quartiles: Some((q1, q3)),
        target: "(informational)",
    });
    rt.graph_destroy(graph).unwrap();
    rt.shutdown().unwrap();
}

/// A collective call (one rank's all-reduce, NCCL's `ncclAllReduce` in front of the driver):
/// `Runtime::collective` on the no-op backend's library against the library's call made
/// directly with the same checked part.
pub(super) fn collective_call(rows: &mut Vec<Row>) {
    use ordo_core::{Collective, CollectiveCall, CollectiveKind, Collectives, DataType, ReduceOp};
    let rt = &NOOP_RUNTIME;
    rt.init().unwrap();
    let device = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let q = rt.queue_create(device).unwrap();
    let mut comm = [ordo_core::Communicator::NULL];
    rt.comm_create_all(&[device], &mut comm).unwrap();
    let buf = rt.mem_alloc(device, ordo_core::MemKind::Device, 1 << 20).unwrap();
    let part = Collective {
        comm: comm[0],
        queue: q,
        kind: CollectiveKind::AllReduce,
        dtype: DataType::F32,
        op: ReduceOp::Sum,
        count: 1 << 18,
        peer: 0,
        send: buf,
        recv: buf,
    };
    let call = CollectiveCall {
        device: 0,
        comm: rt.comm_native(comm[0]).unwrap(),
        queue: rt.queue_native(q).unwrap(),
        kind: part.kind,
        dtype: part.dtype,
        op: part.op,
        count: part.count,
        peer: 0,
        send: buf.0,
        recv: buf.0,
    };
    let library: &dyn Collectives = black_box(&NOOP);
    const N: u64 = 1_000_000;
    let direct = || {
        ns_per(1, N, || {
            // SAFETY: the no-op library takes any value and touches nothing.
            unsafe { library.collectives(black_box(std::slice::from_ref(&call))) }.unwrap();
        })
    };
    let ours = || ns_per(1, N, || rt.collective(black_box(std::slice::from_ref(&part))).unwrap());
    let (om, bm, q1, q3) = abba_medians(direct, ours);
    rows.push(Row {
        name: "collective call (one rank's all-reduce: Runtime::collective)",
        unit: "ns/call",
        ordo: om,
        baseline: Some(("direct library call (ns/call)", bm)),
        quartiles: Some((q1, q3)),
        target: "<= 30 ns over the direct call (ordo's part of a collective)",
    });
    rt.comm_destroy(comm[0]).unwrap();
    rt.mem_free(buf).unwrap();
    rt.queue_destroy(q).unwrap();
    rt.shutdown().unwrap();
}

/// The argument update of a captured graph's launch (CUDA's `cuGraphExecKernelNodeSetParams`
/// in front of the driver): `graph_set_args` on the no-op backend against the backend's call
/// made directly, the same four arguments built once.
pub(super) fn graph_update(rows: &mut Vec<Row>) {
    let rt = &NOOP_RUNTIME;
    rt.init().unwrap();
    let device = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let q = rt.queue_create(device).unwrap();
    let program = rt.program_load(device, b"noop").unwrap();
    let kernel = rt.kernel_get(program, "k").unwrap();
    let (a, n) = (DevicePtr(1 << 40), 1u32);
    let params = [
        (&raw const a).cast_mut().cast(),
        (&raw const a).cast_mut().cast(),
        (&raw const a).cast_mut().cast(),
        (&raw const n).cast_mut().cast(),
    ];
    let args = KernelArgs::new(&params, &NOOP_KERNEL_PARAMS).unwrap();
    rt.queue_begin_capture(q).unwrap();
    // SAFETY: the no-op backend runs nothing.
    unsafe { rt.launch(q, kernel, &LaunchDims::linear(1, 1), &args) }.unwrap();
    let graph = rt.queue_end_capture(q).unwrap();
    let (raw_graph, raw_kernel) = (NOOP.last_graph.load(Ordering::Relaxed), rt.kernel_native(kernel).unwrap());
    let backend: &dyn Backend = black_box(&NOOP);
    const N: u64 = 1_000_000;
    let direct = || {
        ns_per(1, N, || {
            // SAFETY: the no-op backend takes any value and reads no argument.
            unsafe { backend.graph_set_args(0, raw_graph, 0, raw_kernel, &args) }.unwrap();
        })
    };
    let ours = || {
        ns_per(1, N, || {
            // SAFETY: as above.
            unsafe { rt.graph_set_args(graph, 0, kernel, black_box(&args)) }.unwrap();
        })
    };
    let (om, bm, q1, q3) = abba_medians(direct, ours);
    rows.push(Row {
        name: "graph argument update (graph_set_args of a one-launch graph, four arguments)",
        unit: "ns/call",
        ordo: om,
        baseline: Some(("direct backend call (ns/call)", bm)),
        quartiles: Some((q1, q3)),
        target: "<= 15 ns over the direct call (ordo's part of the update)",
    });
    rt.graph_destroy(graph).unwrap();
    rt.queue_destroy(q).unwrap();
    rt.shutdown().unwrap();
}
