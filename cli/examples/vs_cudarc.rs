//! The same kernel launched three ways in one process, on the first CUDA device: a raw
//! `cuLaunchKernel` loop, cudarc 0.19's launch builder (as a cudarc user writes it: a stream of
//! its own, which turns on its per-launch event tracking; and with that tracking turned off), and
//! ordo's typed launch (`Queue::launch` of a `TypedFunction`, four arguments checked). The kernel
//! is the built-in `vector_add_f32(a, b, c, n)` over 256 elements: three buffers and a count,
//! the arguments each side must marshal.
//!
//! A fifth side is the untyped core call (`Runtime::launch`) on the same objects, and a sixth
//! launches raw `cuLaunchKernel` on ordo's own stream, function and buffers (their
//! native handles): the baseline with everything but ordo's code the same, so that a difference
//! between the first side and ordo's that comes from the stream or the memory shows as such.
//!
//! Two measures, each side in turn within a round and the order reversed every other round
//! (ABBA): the host time to submit a batch of 32 launches into an idle stream (the CPU cost of a
//! launch; median of 50 batches per sample), and the throughput of 20,000 launches in a row plus
//! one synchronise. Prints a table of medians with the quartiles of the per-round ratios against
//! raw, and one `BENCH_JSON` line. Without a CUDA device it says so and exits 0.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::sys::{self, CUdeviceptr, CUfunction, CUmodule, CUresult, CUstream};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use ordo::{BackendKind, Context, DeviceBuffer, In, Module, Out};

const N: u32 = 256;

fn ok(r: CUresult) {
    assert_eq!(r, CUresult::CUDA_SUCCESS);
}

fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
    (q(0.5), q(0.25), q(0.75))
}

/// Host nanoseconds per launch to submit 32 launches into an idle stream: median of 50 batches.
fn submit(launch: &dyn Fn(), sync: &dyn Fn()) -> f64 {
    let mut v: Vec<f64> = (0..50)
        .map(|_| {
            sync();
            let t = Instant::now();
            for _ in 0..32 {
                launch();
            }
            let ns = t.elapsed().as_nanos() as f64 / 32.0;
            sync();
            ns
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[25]
}

/// Nanoseconds per launch over 20,000 launches in a row and one synchronise.
fn throughput(launch: &dyn Fn(), sync: &dyn Fn()) -> f64 {
    sync();
    let t = Instant::now();
    for _ in 0..20_000 {
        launch();
    }
    sync();
    t.elapsed().as_nanos() as f64 / 20_000.0
}

/// One side: a name, its launch and its synchronise.
struct Side<'a> {
    name: &'static str,
    launch: Box<dyn Fn() + 'a>,
    sync: Box<dyn Fn() + 'a>,
}

/// cudarc's side: a stream of its own, the module, and three buffers.
struct Cudarc {
    stream: Arc<CudaStream>,
    f: CudaFunction,
    a: CudaSlice<f32>,
    b: CudaSlice<f32>,
    c: RefCell<CudaSlice<f32>>,
}

impl Cudarc {
    fn new(ctx: &Arc<CudaContext>, ptx: &str) -> Self {
        let stream = ctx.new_stream().unwrap();
        let module = ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).unwrap();
        let f = module.load_function("vector_add_f32").unwrap();
        let zeros = || stream.alloc_zeros::<f32>(N as usize).unwrap();
        Self { a: zeros(), b: zeros(), c: RefCell::new(zeros()), f, stream }
    }

    fn launch(&self) {
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (N, 1, 1), shared_mem_bytes: 0 };
        let mut c = self.c.borrow_mut();
        let mut builder = self.stream.launch_builder(&self.f);
        builder.arg(&self.a).arg(&self.b).arg(&mut *c).arg(&N);
        // SAFETY: vector_add_f32 reads N elements of a and b and writes N of c, each N long.
        unsafe { builder.launch(cfg) }.unwrap();
    }
}

type VectorAdd = (In<'static, f32>, In<'static, f32>, Out<'static, f32>, u32);

fn main() {
    let ctx = Context::new().unwrap();
    let Some(dev) = ctx.devices().unwrap().into_iter().find(|d| d.kind() == BackendKind::Cuda) else {
        println!("vs_cudarc: no CUDA device, nothing to compare");
        return;
    };
    let ptx = std::str::from_utf8(ordo::builtin_program_image(BackendKind::Cuda).unwrap()).unwrap();

    // ordo's typed launch.
    let module = Module::load_builtin(&dev).unwrap();
    let add = module.typed_function::<VectorAdd>("vector_add_f32").unwrap();
    let zeros = || DeviceBuffer::<f32>::zeroed(&dev, N as usize).unwrap();
    let (a, b, c) = (zeros(), zeros(), RefCell::new(zeros()));
    let queue = dev.queue().unwrap();
    let dims = ordo::LaunchDims::linear(1, N);

    // cudarc on the same device (its context objects over the same primary context).
    let cctx = CudaContext::new(dev.ordinal() as usize).unwrap();
    let tracked = Cudarc::new(&cctx, ptx);
    let untracked_ctx = CudaContext::new(dev.ordinal() as usize).unwrap();
    // SAFETY: every batch of this side is synchronised before its buffers are used again.
    unsafe { untracked_ctx.disable_event_tracking() };
    let untracked = Cudarc::new(&untracked_ctx, ptx);

    // The raw driver: its own module, stream and buffers in the current (primary) context.
    cctx.bind_to_thread().unwrap();
    let (mut module_raw, mut f_raw, mut stream_raw): (CUmodule, CUfunction, CUstream) =
        (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    let mut bufs: [CUdeviceptr; 3] = [0; 3];
    let ptx_nul = std::ffi::CString::new(ptx).unwrap();
    // SAFETY: plain driver calls with valid out-pointers, in a current context.
    unsafe {
        ok(sys::cuModuleLoadData(&mut module_raw, ptx_nul.as_ptr().cast()));
        ok(sys::cuModuleGetFunction(&mut f_raw, module_raw, c"vector_add_f32".as_ptr()));
        ok(sys::cuStreamCreate(&mut stream_raw, 1));
        for p in &mut bufs {
            ok(sys::cuMemAlloc_v2(p, N as usize * 4));
        }
    }
    let raw_launch = || {
        let n = N;
        let mut params = [
            (&bufs[0] as *const CUdeviceptr).cast_mut().cast(),
            (&bufs[1] as *const CUdeviceptr).cast_mut().cast(),
            (&bufs[2] as *const CUdeviceptr).cast_mut().cast(),
            (&n as *const u32).cast_mut().cast(),
        ];
        // SAFETY: the kernel's four parameters, buffers of N elements; live stream and function.
        ok(unsafe {
            sys::cuLaunchKernel(f_raw, 1, 1, 1, N, 1, 1, 0, stream_raw, params.as_mut_ptr(), std::ptr::null_mut())
        })
    };

    // The same launch on ordo's objects, through the driver directly.
    let rt = ctx.runtime();
    let ordo_stream = rt.queue_native(queue.raw()).unwrap() as usize as CUstream;
    let ordo_f = rt.kernel_native(add.function().raw()).unwrap() as usize as CUfunction;
    let ordo_bufs: [CUdeviceptr; 3] = [a.device_ptr().0, b.device_ptr().0, c.borrow().device_ptr().0];
    let raw_on_ordo = || {
        let n = N;
        let mut params = [
            (&ordo_bufs[0] as *const CUdeviceptr).cast_mut().cast(),
            (&ordo_bufs[1] as *const CUdeviceptr).cast_mut().cast(),
            (&ordo_bufs[2] as *const CUdeviceptr).cast_mut().cast(),
            (&n as *const u32).cast_mut().cast(),
        ];
        // SAFETY: as `raw_launch`, on ordo's live stream, function and buffers (N elements each).
        ok(unsafe {
            sys::cuLaunchKernel(ordo_f, 1, 1, 1, N, 1, 1, 0, ordo_stream, params.as_mut_ptr(), std::ptr::null_mut())
        })
    };

    let sides = [
        Side {
            name: "raw cuLaunchKernel",
            launch: Box::new(raw_launch),
            // SAFETY: a live stream.
            sync: Box::new(|| ok(unsafe { sys::cuStreamSynchronize(stream_raw) })),
        },
        Side {
            name: "cudarc launch_builder (own stream, event tracking: its default)",
            launch: Box::new(|| tracked.launch()),
            sync: Box::new(|| tracked.stream.synchronize().unwrap()),
        },
        Side {
            name: "cudarc launch_builder (event tracking off)",
            launch: Box::new(|| untracked.launch()),
            sync: Box::new(|| untracked.stream.synchronize().unwrap()),
        },
        Side {
            name: "ordo Queue::launch (TypedFunction, 4 arguments checked)",
            launch: Box::new(|| {
                let mut c = c.borrow_mut();
                // SAFETY: vector_add_f32 reads N elements of a and b and writes N of c, each N
                // long; every batch is synchronised before the buffers are used again.
                unsafe { queue.launch(&add, dims, (&a, &b, &mut *c, N)) }.unwrap()
            }),
            sync: Box::new(|| queue.synchronize().unwrap()),
        },
        Side {
            name: "ordo Runtime::launch (the untyped core call, same objects)",
            launch: Box::new(|| {
                let n = N;
                let params = [
                    (&ordo_bufs[0] as *const CUdeviceptr).cast_mut().cast(),
                    (&ordo_bufs[1] as *const CUdeviceptr).cast_mut().cast(),
                    (&ordo_bufs[2] as *const CUdeviceptr).cast_mut().cast(),
                    (&n as *const u32).cast_mut().cast(),
                ];
                let args = ordo::raw::KernelArgs::new(&params, &[8, 8, 8, 4]).unwrap();
                // SAFETY: as the typed side's launch, on the same objects.
                unsafe { rt.launch(queue.raw(), add.function().raw(), &dims, &args) }.unwrap()
            }),
            sync: Box::new(|| queue.synchronize().unwrap()),
        },
        Side {
            name: "raw cuLaunchKernel on ordo's stream, function and buffers",
            launch: Box::new(raw_on_ordo),
            sync: Box::new(|| queue.synchronize().unwrap()),
        },
    ];

    type Measure = fn(&dyn Fn(), &dyn Fn()) -> f64;
    let measures: [(&str, Measure); 2] =
        [("submit, batches of 32 (ns/launch)", submit), ("throughput, 20k in a row (ns/launch)", throughput)];
    let rounds = 20;
    let mut json = Vec::new();
    println!("{:<66} {:>10} {:>26}", "side", "median", "vs raw: ratio [p25, p75]");
    for (measure, run) in measures {
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
        let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
        let (mut ordo_vs_cudarc, mut ordo_vs_same) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let order: Vec<usize> =
                if round % 2 == 0 { (0..sides.len()).collect() } else { (0..sides.len()).rev().collect() };
            let mut t = vec![0.0; sides.len()];
            for &i in &order {
                t[i] = run(&*sides[i].launch, &*sides[i].sync);
            }
            for i in 0..sides.len() {
                samples[i].push(t[i]);
                ratios[i].push(t[i] / t[0]);
            }
            ordo_vs_cudarc.push(t[3] / t[1]);
            ordo_vs_same.push(t[3] / t[5]);
        }
        println!("{measure}");
        for (i, side) in sides.iter().enumerate() {
            let (m, _, _) = quartiles(samples[i].clone());
            let (r, q1, q3) = quartiles(ratios[i].clone());
            println!("  {:<64} {:>10.1} {:>10.3} [{:.3}, {:.3}]", side.name, m, r, q1, q3);
            json.push(serde_json::json!({"measure": measure, "side": side.name, "median_ns": m,
                "ratio_vs_raw": r, "ratio_q1": q1, "ratio_q3": q3}));
        }
        for (label, ratios) in
            [("ordo / cudarc (its default)", ordo_vs_cudarc), ("ordo / raw on ordo's objects", ordo_vs_same)]
        {
            let (r, q1, q3) = quartiles(ratios);
            println!("  {label}: {r:.3} [{q1:.3}, {q3:.3}]");
            json.push(
                serde_json::json!({"measure": measure, "side": label, "ratio": r, "ratio_q1": q1, "ratio_q3": q3}),
            );
        }
    }
    println!("BENCH_JSON {}", serde_json::Value::Array(json));
    drop(sides);
    // SAFETY: releases what was created above, once, after every launch finished.
    unsafe {
        ok(sys::cuStreamSynchronize(stream_raw));
        for p in bufs {
            ok(sys::cuMemFree_v2(p));
        }
        ok(sys::cuStreamDestroy_v2(stream_raw));
        ok(sys::cuModuleUnload(module_raw));
    }
}
