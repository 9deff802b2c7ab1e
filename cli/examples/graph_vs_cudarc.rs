//! A graph of 1,000 empty kernels launched three ways in one process, on the first CUDA
//! device, each captured by its own API: ordo's typed capture (`Queue::capture` of 1,000
//! `Queue::launch`es, then `Graph::launch`), cudarc 0.19's (`CudaStream::begin_capture`, 1,000
//! launch-builder launches, `end_capture`, then `CudaGraph::launch`, on a stream of its own with
//! event tracking off, as a graph user runs it), and the launch loop of ordo's typed launch for
//! scale. Two measures per kernel: submit (the host time of the graph launch into an idle
//! stream) and completion (launch plus synchronise). ABBA rounds (cudarc, ordo, ordo, cudarc);
//! medians with the quartiles of the per-round ratios. Prints a table and one `BENCH_JSON` line;
//! without a CUDA device it says so and exits 0.

use std::time::Instant;

use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaContext, LaunchConfig};
use ordo::{BackendKind, Context, LaunchDims, Module};

const KERNELS: usize = 1000;

fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
    (q(0.5), q(0.25), q(0.75))
}

/// (submit, completion) nanoseconds per kernel of one graph launch.
fn measure(launch: &dyn Fn(), sync: &dyn Fn()) -> (f64, f64) {
    sync();
    let t = Instant::now();
    launch();
    let submit = t.elapsed().as_nanos() as f64;
    sync();
    let done = t.elapsed().as_nanos() as f64;
    (submit / KERNELS as f64, done / KERNELS as f64)
}

fn main() {
    let ctx = Context::new().unwrap();
    let Some(dev) = ctx.devices().unwrap().into_iter().find(|d| d.kind() == BackendKind::Cuda) else {
        println!("graph_vs_cudarc: no CUDA device, nothing to compare");
        return;
    };
    // ordo: the typed capture.
    let module = Module::load_builtin(&dev).unwrap();
    let empty = module.typed_function::<()>("empty").unwrap();
    let queue = dev.queue().unwrap();
    let dims = LaunchDims::linear(1, 1);
    let graph = queue
        .capture(|q| {
            for _ in 0..KERNELS {
                // SAFETY: `empty` takes no arguments and touches no memory.
                unsafe { q.launch(&empty, dims, ())? };
            }
            Ok(())
        })
        .unwrap();
    // cudarc: its own capture of the same kernel.
    let cctx = CudaContext::new(dev.ordinal() as usize).unwrap();
    // SAFETY: this side's graph touches no memory; nothing needs events between its launches.
    unsafe { cctx.disable_event_tracking() };
    let stream = cctx.new_stream().unwrap();
    let ptx = std::str::from_utf8(ordo::builtin_program_image(BackendKind::Cuda).unwrap()).unwrap();
    let cmodule = cctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).unwrap();
    let f = cmodule.load_function("empty").unwrap();
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED).unwrap();
    for _ in 0..KERNELS {
        // SAFETY: `empty` takes no arguments and touches no memory.
        unsafe { stream.launch_builder(&f).launch(cfg) }.unwrap();
    }
    let cgraph = stream.end_capture(CUgraphInstantiate_flags(0)).unwrap().expect("a captured graph");

    // SAFETY: the graph's kernels touch no memory; the module stays loaded.
    let ordo_launch = || unsafe { graph.launch(&queue) }.unwrap();
    let ordo_sync = || queue.synchronize().unwrap();
    let cudarc_launch = || cgraph.launch().unwrap();
    let cudarc_sync = || stream.synchronize().unwrap();
    let ordo_loop = || {
        for _ in 0..KERNELS {
            // SAFETY: as above.
            unsafe { queue.launch(&empty, dims, ()) }.unwrap();
        }
    };
    for _ in 0..3 {
        measure(&ordo_launch, &ordo_sync);
        measure(&cudarc_launch, &cudarc_sync);
        measure(&ordo_loop, &ordo_sync);
    }
    let (mut cs, mut os, mut ls, mut submit, mut done) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..20 {
        let c1 = measure(&cudarc_launch, &cudarc_sync);
        let (o1, o2) = (measure(&ordo_launch, &ordo_sync), measure(&ordo_launch, &ordo_sync));
        let c2 = measure(&cudarc_launch, &cudarc_sync);
        submit.push((o1.0 + o2.0) / (c1.0 + c2.0));
        done.push((o1.1 + o2.1) / (c1.1 + c2.1));
        cs.extend([c1, c2]);
        os.extend([o1, o2]);
        ls.push(measure(&ordo_loop, &ordo_sync));
    }
    let med = |v: &[(f64, f64)], i: usize| quartiles(v.iter().map(|x| if i == 0 { x.0 } else { x.1 }).collect()).0;
    let (csub, cdone, osub, odone, lsub, ldone) =
        (med(&cs, 0), med(&cs, 1), med(&os, 0), med(&os, 1), med(&ls, 0), med(&ls, 1));
    let ((sm, slo, shi), (dm, dlo, dhi)) = (quartiles(submit), quartiles(done));
    println!(
        "| per kernel (1,000 empty kernels) | cudarc CudaGraph::launch ns | ordo Graph::launch ns | ordo / cudarc: median [p25, p75] | ordo typed launch loop ns |"
    );
    println!("|---|---|---|---|---|");
    println!("| submit | {csub:.1} | {osub:.1} | {sm:.4} [{slo:.4}, {shi:.4}] | {lsub:.1} |");
    println!("| completion | {cdone:.1} | {odone:.1} | {dm:.4} [{dlo:.4}, {dhi:.4}] | {ldone:.1} |");
    println!(
        "BENCH_JSON [{{\"name\":\"graph vs cudarc: submit\",\"cudarc_ns\":{csub:.2},\"ordo_ns\":{osub:.2},\"ratio\":{sm:.4},\"q1\":{slo:.4},\"q3\":{shi:.4}}},{{\"name\":\"graph vs cudarc: completion\",\"cudarc_ns\":{cdone:.2},\"ordo_ns\":{odone:.2},\"ratio\":{dm:.4},\"q1\":{dlo:.4},\"q3\":{dhi:.4}}}]"
    );
}
