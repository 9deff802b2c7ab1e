//! 1,000 empty kernels as one graph: ordo's `graph_launch` of a graph captured through ordo
//! (`queue_begin_capture`, 1,000 `Runtime::launch`, `queue_end_capture`) against raw
//! `cuGraphLaunch` of the same work captured raw (`cuStreamBeginCapture`, 1,000 `cuLaunchKernel`
//! of ordo's own function, `cuStreamEndCapture`, `cuGraphInstantiate`), both on ordo's queue (its
//! native stream), and the 1,000-launch loop for scale. Two measures per kernel: submit (host
//! time of the launch call, into an idle stream) and completion (launch plus synchronise). ABBA
//! rounds (raw, ordo, ordo, raw); medians with the quartiles of the per-round ratios. Prints a
//! table and one `BENCH_JSON` line. Then the argument update before a relaunch: ordo's
//! `graph_set_args` of a one-kernel graph (`spin_cycles(n)`) against raw
//! `cuGraphExecKernelNodeSetParams` on the same kind of graph captured raw, 1,000 updates per
//! measure, ABBA rounds; and the raw update inside an uncontended lock against the raw update
//! (the floor that serialising calls on one graph puts under ordo's ratio). Needs a CUDA device
//! (exits 0 saying so otherwise).

use std::time::Instant;

use cudarc::driver::sys::{self, CUfunction, CUgraph, CUgraphExec, CUstream};
use ordo_core::{Backend, KernelArgs, LaunchDims};
use ordo_cuda::{BUILTIN_PTX, CudaBackend};

static CUDA: CudaBackend = CudaBackend::new();
static BACKENDS: [&dyn Backend; 1] = [&CUDA];
ordo_core::static_runtime!(static RUNTIME = &BACKENDS);

const KERNELS: usize = 1000;

mod common;
use common::{ok, quartiles};

/// (submit, completion) nanoseconds per kernel of one launch of `work`, with `sync` after.
fn measure(work: &dyn Fn(), sync: &dyn Fn()) -> (f64, f64) {
    sync();
    let t = Instant::now();
    work();
    let submit = t.elapsed().as_nanos() as f64;
    sync();
    let done = t.elapsed().as_nanos() as f64;
    (submit / KERNELS as f64, done / KERNELS as f64)
}

/// Nanoseconds per update of 1,000 calls of `update`.
fn per_update(update: &dyn Fn(u64)) -> f64 {
    let t = Instant::now();
    for i in 0..KERNELS as u64 {
        update(i);
    }
    t.elapsed().as_nanos() as f64 / KERNELS as f64
}

/// The argument update of a one-kernel graph, ordo's against the raw driver's.
fn update_bench(rt: &ordo_core::Runtime, q: ordo_core::Queue, program: ordo_core::Program, stream: CUstream) {
    let k = rt.kernel_get(program, "spin_cycles").unwrap();
    let function = rt.kernel_native(k).unwrap() as usize as CUfunction;
    let mut cycles = 0u64;
    let mut params = [(&raw mut cycles).cast::<std::ffi::c_void>()];
    let (mut graph, mut exec): (CUgraph, CUgraphExec) = (std::ptr::null_mut(), std::ptr::null_mut());
    let mut node: sys::CUgraphNode = std::ptr::null_mut();
    // SAFETY: `spin_cycles(uint64_t)` with its one argument; ordo's idle stream, captured and
    // ended here; valid out-pointers; the graph has one node.
    let node_params = unsafe {
        ok(sys::cuStreamBeginCapture_v2(stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED));
        let p = params.as_mut_ptr();
        ok(sys::cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, p, std::ptr::null_mut()));
        ok(sys::cuStreamEndCapture(stream, &mut graph));
        ok(sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0));
        let mut count = 1usize;
        ok(sys::cuGraphGetNodes(graph, &mut node, &mut count));
        let mut np: sys::CUDA_KERNEL_NODE_PARAMS = std::mem::zeroed();
        ok(sys::cuGraphKernelNodeGetParams_v2(node, &mut np));
        np
    };
    rt.queue_begin_capture(q).unwrap();
    let args = KernelArgs::new(&params, &[8]).unwrap();
    // SAFETY: one u64 argument; the kernel touches no memory.
    unsafe { rt.launch(q, k, &LaunchDims::linear(1, 1), &args) }.unwrap();
    let g = rt.queue_end_capture(q).unwrap();
    let raw_update = |n: u64| {
        let mut value = n;
        let mut p = [(&raw mut value).cast::<std::ffi::c_void>()];
        let update =
            sys::CUDA_KERNEL_NODE_PARAMS { kernelParams: p.as_mut_ptr(), extra: std::ptr::null_mut(), ..node_params };
        // SAFETY: a kernel node of the graph `exec` was instantiated from; one u64 argument.
        ok(unsafe { sys::cuGraphExecKernelNodeSetParams_v2(exec, node, &update) });
    };
    let ordo_update = |n: u64| {
        let value = n;
        let p = [(&raw const value).cast_mut().cast::<std::ffi::c_void>()];
        let a = KernelArgs::new(&p, &[8]).unwrap();
        // SAFETY: `spin_cycles` takes one u64 and touches no memory.
        unsafe { rt.graph_set_args(g, 0, k, &a) }.unwrap();
    };
    for _ in 0..3 {
        per_update(&raw_update);
        per_update(&ordo_update);
    }
    let (mut raw, mut ours, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..20 {
        let (r1, o1, o2, r2) =
            (per_update(&raw_update), per_update(&ordo_update), per_update(&ordo_update), per_update(&raw_update));
        ratios.push((o1 + o2) / (r1 + r2));
        raw.extend([r1, r2]);
        ours.extend([o1, o2]);
    }
    let (rm, om) = (quartiles(raw).0, quartiles(ours).0);
    let (m, lo, hi) = quartiles(ratios);
    println!(
        "| argument update (one-kernel graph) | raw cuGraphExecKernelNodeSetParams ns | ordo graph_set_args ns | ordo / raw: median [p25, p75] |"
    );
    println!("|---|---|---|---|");
    println!("| per update | {rm:.1} | {om:.1} | {m:.4} [{lo:.4}, {hi:.4}] |");
    println!(
        "BENCH_JSON [{{\"name\":\"graph argument update\",\"raw_ns\":{rm:.2},\"ordo_ns\":{om:.2},\"ratio\":{m:.4},\"q1\":{lo:.4},\"q3\":{hi:.4}}}]"
    );
    // The lock's floor: the raw update with an uncontended lock around the driver's call (what
    // serialising calls on one executable graph, which the driver requires, costs at the
    // least; ordo's CUDA backend holds such a lock per graph), against the raw update.
    let lock = std::sync::atomic::AtomicBool::new(false);
    let raw_locked_update = |n: u64| {
        use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
        while lock.compare_exchange_weak(false, true, Acquire, Relaxed).is_err() {}
        raw_update(n);
        lock.store(false, Release);
    };
    let mut lock_ratios = Vec::new();
    for _ in 0..20 {
        let (r1, l1, l2, r2) = (
            per_update(&raw_update),
            per_update(&raw_locked_update),
            per_update(&raw_locked_update),
            per_update(&raw_update),
        );
        lock_ratios.push((l1 + l2) / (r1 + r2));
    }
    common::ratio_row(
        "raw update inside an uncontended lock / raw update",
        "raw graph argument update inside a lock",
        lock_ratios,
    );
    // Both graphs still run: the updated argument (a short spin) is taken.
    // SAFETY: as above.
    unsafe { rt.graph_launch(g, q) }.unwrap();
    // SAFETY: the raw graph with its last arguments; then destroyed once.
    unsafe {
        ok(sys::cuGraphLaunch(exec, stream));
        ok(sys::cuStreamSynchronize(stream));
        ok(sys::cuGraphExecDestroy(exec));
        ok(sys::cuGraphDestroy(graph));
    }
    rt.queue_synchronize(q).unwrap();
    rt.graph_destroy(g).unwrap();
}

fn main() {
    let rt = &RUNTIME;
    let Some(p) = common::cuda_platform(rt, 1, "graph_bench") else { return };
    let d = rt.device(p, 0).unwrap();
    let q = rt.queue_create(d).unwrap();
    let program = rt.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
    let k = rt.kernel_get(program, "empty").unwrap();
    let stream = rt.queue_native(q).unwrap() as usize as CUstream;
    let function = rt.kernel_native(k).unwrap() as usize as CUfunction;
    let (dev, _) = common::retain_primary(0);
    let dims = LaunchDims::linear(1, 1);
    let args = KernelArgs::new(&[], &[]).unwrap();
    let raw_launch = || {
        // SAFETY: `empty` takes no arguments; ordo's live function and stream, its context current.
        ok(unsafe {
            sys::cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, std::ptr::null_mut(), std::ptr::null_mut())
        });
    };
    // The raw graph.
    let mut graph: CUgraph = std::ptr::null_mut();
    let mut exec: CUgraphExec = std::ptr::null_mut();
    // SAFETY: ordo's idle stream, captured and ended here; valid out-pointers.
    unsafe {
        ok(sys::cuStreamBeginCapture_v2(stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED));
        for _ in 0..KERNELS {
            raw_launch();
        }
        ok(sys::cuStreamEndCapture(stream, &mut graph));
        ok(sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0));
    }
    // ordo's graph of the same work.
    rt.queue_begin_capture(q).unwrap();
    for _ in 0..KERNELS {
        // SAFETY: `empty` takes no arguments.
        unsafe { rt.launch(q, k, &dims, &args) }.unwrap();
    }
    let g = rt.queue_end_capture(q).unwrap();
    let sync = || rt.queue_synchronize(q).unwrap();
    // SAFETY: the instantiated graph and ordo's stream.
    let raw_graph = || ok(unsafe { sys::cuGraphLaunch(exec, stream) });
    // SAFETY: the graph launches `empty`, which touches no memory; its program stays loaded.
    let ordo_graph = || unsafe { rt.graph_launch(g, q) }.unwrap();
    let raw_loop = || {
        for _ in 0..KERNELS {
            raw_launch();
        }
    };
    for _ in 0..3 {
        measure(&raw_graph, &sync);
        measure(&ordo_graph, &sync);
        measure(&raw_loop, &sync);
    }
    let (mut rs, mut os, mut ls) = (Vec::new(), Vec::new(), Vec::new());
    let (mut submit_ratios, mut done_ratios) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        let (r1, o1, o2, r2) = (
            measure(&raw_graph, &sync),
            measure(&ordo_graph, &sync),
            measure(&ordo_graph, &sync),
            measure(&raw_graph, &sync),
        );
        submit_ratios.push((o1.0 + o2.0) / (r1.0 + r2.0));
        done_ratios.push((o1.1 + o2.1) / (r1.1 + r2.1));
        rs.extend([r1, r2]);
        os.extend([o1, o2]);
        ls.push(measure(&raw_loop, &sync));
    }
    let med = |v: &[(f64, f64)], i: usize| quartiles(v.iter().map(|x| if i == 0 { x.0 } else { x.1 }).collect()).0;
    let (rsub, rdone, osub, odone, lsub, ldone) =
        (med(&rs, 0), med(&rs, 1), med(&os, 0), med(&os, 1), med(&ls, 0), med(&ls, 1));
    let (sm, slo, shi) = quartiles(submit_ratios);
    let (dm, dlo, dhi) = quartiles(done_ratios);
    println!(
        "| per kernel (1,000 empty kernels) | raw cuGraphLaunch ns | ordo graph_launch ns | ordo / raw: median [p25, p75] | cuLaunchKernel loop ns | ordo graph / loop |"
    );
    println!("|---|---|---|---|---|---|");
    println!("| submit | {rsub:.1} | {osub:.1} | {sm:.4} [{slo:.4}, {shi:.4}] | {lsub:.1} | {:.4} |", osub / lsub);
    println!(
        "| completion | {rdone:.1} | {odone:.1} | {dm:.4} [{dlo:.4}, {dhi:.4}] | {ldone:.1} | {:.4} |",
        odone / ldone
    );
    println!(
        "BENCH_JSON [{{\"name\":\"graph of 1000 empty kernels: submit\",\"raw_ns\":{rsub:.2},\"ordo_ns\":{osub:.2},\"loop_ns\":{lsub:.2},\"ratio\":{sm:.4},\"q1\":{slo:.4},\"q3\":{shi:.4}}},{{\"name\":\"graph of 1000 empty kernels: completion\",\"raw_ns\":{rdone:.2},\"ordo_ns\":{odone:.2},\"loop_ns\":{ldone:.2},\"ratio\":{dm:.4},\"q1\":{dlo:.4},\"q3\":{dhi:.4}}}]"
    );
    // SAFETY: created above, destroyed once.
    unsafe {
        ok(sys::cuGraphExecDestroy(exec));
        ok(sys::cuGraphDestroy(graph));
    }
    update_bench(rt, q, program, stream);
    common::release_primary(dev);
    rt.graph_destroy(g).unwrap();
    rt.queue_destroy(q).unwrap();
    rt.shutdown().unwrap();
}
