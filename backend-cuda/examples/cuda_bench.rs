//! Side-by-side benchmarks of ordo over CUDA against the bare driver calls, in one run:
//! - empty-kernel launches through `Runtime::launch` vs a raw `cuLaunchKernel` loop;
//! - teardown of 1,000 programs and 10,000 allocations vs the bare unload/free/release calls;
//! - host<->device copy bandwidth vs raw `cuMemcpyHtoD`/`cuMemcpyDtoH` on the same buffers.
//!
//! Each pair runs in ABBA rounds (bare, ordo, ordo, bare) where it is timed per round; the median
//! of each side is reported with the ratio, and the quartiles of the per-round ratios.
//! Prints a table, then one JSON line (`BENCH_JSON {...}`).

use std::ffi::c_void;
use std::time::Instant;

use cudarc::driver::sys::{self, CUcontext, CUfunction, CUmodule, CUresult, CUstream};
use ordo_core::{Backend, DevicePtr, KernelArgs, LaunchDims, MemKind, Shutdown};
use ordo_cuda::{BUILTIN_PTX, CudaBackend};

static CUDA: CudaBackend = CudaBackend::new();
static BACKENDS: [&dyn Backend; 1] = [&CUDA];
ordo_core::static_runtime!(static RUNTIME = &BACKENDS);

fn ok(r: CUresult) {
    assert_eq!(r, CUresult::CUDA_SUCCESS);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ptx_nul() -> Vec<u8> {
    [BUILTIN_PTX.as_bytes(), &[0]].concat()
}

struct Raw {
    ctx: CUcontext,
    module: CUmodule,
    empty: CUfunction,
    stream: CUstream,
}

/// The bare-driver side: the same primary context, its own module and stream.
fn raw_setup() -> Raw {
    let mut dev = 0;
    let mut ctx: CUcontext = std::ptr::null_mut();
    let mut module: CUmodule = std::ptr::null_mut();
    let mut empty: CUfunction = std::ptr::null_mut();
    let mut stream: CUstream = std::ptr::null_mut();
    let ptx = ptx_nul();
    // SAFETY: plain driver calls with valid out-pointers; the driver is initialised by ordo.
    unsafe {
        ok(sys::cuDeviceGet(&mut dev, 0));
        ok(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev));
        ok(sys::cuCtxSetCurrent(ctx));
        ok(sys::cuModuleLoadData(&mut module, ptx.as_ptr().cast()));
        ok(sys::cuModuleGetFunction(&mut empty, module, c"empty".as_ptr()));
        ok(sys::cuStreamCreate(&mut stream, 1));
    }
    Raw { ctx, module, empty, stream }
}

fn raw_teardown(raw: Raw) {
    let mut dev = 0;
    // SAFETY: releases what `raw_setup` created, once.
    unsafe {
        ok(sys::cuStreamDestroy_v2(raw.stream));
        ok(sys::cuModuleUnload(raw.module));
        ok(sys::cuDeviceGet(&mut dev, 0));
        ok(sys::cuDevicePrimaryCtxRelease_v2(dev));
    }
    let _ = raw.ctx;
}

/// Nanoseconds per launch over one loop of `n` launches followed by one sync (throughput: the
/// queue fills, so this is bounded by the GPU's launch rate).
fn time_throughput(n: usize, launch: impl Fn(), sync: impl Fn()) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        launch();
    }
    sync();
    t.elapsed().as_nanos() as f64 / n as f64
}

/// Nanoseconds per launch spent *submitting* one batch of `batch` launches into an idle queue
/// (the CPU cost of a launch; the sync after each batch is not timed).
fn time_submit(batch: usize, launch: &dyn Fn(), sync: &dyn Fn()) -> f64 {
    let t = Instant::now();
    for _ in 0..batch {
        launch();
    }
    let ns = t.elapsed().as_nanos() as f64 / batch as f64;
    sync();
    ns
}

struct Pair {
    name: &'static str,
    unit: &'static str,
    raw: f64,
    ordo: f64,
    /// Median, 25th and 75th percentile of the per-round ratios (ABBA rounds), where measured.
    ratios: Option<(f64, f64, f64)>,
}

/// Rounds of raw, ordo, ordo, raw (ABBA cancels linear drift); per-round ratio
/// (o1 + o2) / (r1 + r2). Returns the medians of each side and the ratio quartiles.
fn abba(rounds: usize, mut raw: impl FnMut() -> f64, mut ordo: impl FnMut() -> f64) -> (f64, f64, (f64, f64, f64)) {
    let (mut rs, mut os, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (r1, o1, o2, r2) = (raw(), ordo(), ordo(), raw());
        rs.extend([r1, r2]);
        os.extend([o1, o2]);
        ratios.push((o1 + o2) / (r1 + r2));
    }
    ratios.sort_by(f64::total_cmp);
    let q = |f: f64| ratios[((ratios.len() - 1) as f64 * f).round() as usize];
    (median(rs), median(os), (q(0.5), q(0.25), q(0.75)))
}

fn bench_launch(rounds: usize) -> Vec<Pair> {
    let rt = &RUNTIME;
    rt.init().unwrap();
    let d = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let q = rt.queue_create(d).unwrap();
    let p = rt.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
    let k = rt.kernel_get(p, "empty").unwrap();
    let raw = raw_setup();
    let dims = LaunchDims::linear(1, 1);
    let raw_launch = || {
        // SAFETY: `empty` takes no arguments; stream and function are live.
        ok(unsafe {
            sys::cuLaunchKernel(raw.empty, 1, 1, 1, 1, 1, 1, 0, raw.stream, std::ptr::null_mut(), std::ptr::null_mut())
        })
    };
    // SAFETY: live stream.
    let raw_sync = || ok(unsafe { sys::cuStreamSynchronize(raw.stream) });
    // SAFETY: `empty` takes no arguments.
    let ordo_launch = || unsafe { rt.launch(q, k, &dims, &KernelArgs::EMPTY) }.unwrap();
    let ordo_sync = || rt.queue_synchronize(q).unwrap();
    let (r, o, q) = abba(
        rounds,
        || time_throughput(100_000, raw_launch, raw_sync),
        || time_throughput(100_000, ordo_launch, ordo_sync),
    );
    let mut out =
        vec![Pair { name: "launch throughput, 100k in a row", unit: "ns/launch", raw: r, ordo: o, ratios: Some(q) }];
    // Submission cost: 50 batches of 32 into an idle queue per sample.
    let batches = |launch: &dyn Fn(), sync: &dyn Fn()| {
        let mut v: Vec<f64> = (0..50).map(|_| time_submit(32, launch, sync)).collect();
        v.sort_by(f64::total_cmp);
        v[25]
    };
    let (r, o, q) = abba(rounds * 4, || batches(&raw_launch, &raw_sync), || batches(&ordo_launch, &ordo_sync));
    out.push(Pair { name: "launch submit cost, batches of 32", unit: "ns/launch", raw: r, ordo: o, ratios: Some(q) });
    raw_teardown(raw);
    let Shutdown::TornDown(_) = rt.shutdown().unwrap() else { panic!() };
    let report = rt.last_teardown_report().unwrap();
    assert!(report.is_clean());
    out
}

const PROGRAMS: usize = 1000;
const ALLOCATIONS: usize = 10_000;
const ALLOC_BYTES: usize = 64 * 1024;

/// Seconds to unload PROGRAMS modules, free ALLOCATIONS buffers and release the primary contexts
/// of every device (ordo holds one per device) with bare driver calls, newest first as ordo does.
fn bare_teardown() -> f64 {
    let mut count = 0;
    let mut ctx: CUcontext = std::ptr::null_mut();
    let ptx = ptx_nul();
    let mut modules = Vec::with_capacity(PROGRAMS);
    let mut buffers = Vec::with_capacity(ALLOCATIONS);
    // SAFETY: plain driver calls; everything created here is released below, once.
    unsafe {
        ok(sys::cuDeviceGetCount(&mut count));
        for d in (0..count).rev() {
            let mut dev = 0;
            ok(sys::cuDeviceGet(&mut dev, d));
            ok(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev));
        }
        // `ctx` is device 0's.
        ok(sys::cuCtxSetCurrent(ctx));
        for _ in 0..PROGRAMS {
            let mut m: CUmodule = std::ptr::null_mut();
            ok(sys::cuModuleLoadData(&mut m, ptx.as_ptr().cast()));
            modules.push(m);
        }
        for _ in 0..ALLOCATIONS {
            let mut p = 0;
            ok(sys::cuMemAlloc_v2(&mut p, ALLOC_BYTES));
            buffers.push(p);
        }
        let t = Instant::now();
        for &m in modules.iter().rev() {
            ok(sys::cuModuleUnload(m));
        }
        for &p in buffers.iter().rev() {
            ok(sys::cuMemFree_v2(p));
        }
        for d in (0..count).rev() {
            let mut dev = 0;
            ok(sys::cuDeviceGet(&mut dev, d));
            ok(sys::cuDevicePrimaryCtxRelease_v2(dev));
        }
        t.elapsed().as_secs_f64()
    }
}

/// Seconds of ordo's final shutdown with PROGRAMS programs and ALLOCATIONS allocations live.
fn ordo_teardown() -> f64 {
    let rt = &RUNTIME;
    rt.init().unwrap();
    let d = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    for _ in 0..PROGRAMS {
        rt.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
    }
    for _ in 0..ALLOCATIONS {
        rt.mem_alloc(d, MemKind::Device, ALLOC_BYTES).unwrap();
    }
    let t = Instant::now();
    let Shutdown::TornDown(_) = rt.shutdown().unwrap() else { panic!() };
    let report = rt.last_teardown_report().unwrap();
    let s = t.elapsed().as_secs_f64();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.released_of(ordo_core::ObjectKind::Allocation), ALLOCATIONS as u32);
    s
}

fn bench_teardown(rounds: usize) -> Pair {
    // ABBA like the launch benchmarks: neither side always runs first.
    let (r, o, q) = abba(rounds, || bare_teardown() * 1e3, || ordo_teardown() * 1e3);
    Pair { name: "teardown, 1000 programs + 10000 allocations", unit: "ms", raw: r, ordo: o, ratios: Some(q) }
}

const COPY_BYTES: usize = 256 << 20;

fn bench_copies(rounds: usize) -> Vec<Pair> {
    let rt = &RUNTIME;
    rt.init().unwrap();
    let d = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let dst = rt.mem_alloc(d, MemKind::Device, COPY_BYTES).unwrap();
    let mut host: *mut c_void = std::ptr::null_mut();
    // SAFETY: pinned host allocation in the current (primary) context, freed below.
    ok(unsafe { sys::cuMemAllocHost_v2(&mut host, COPY_BYTES) });
    // SAFETY: `host` is valid for COPY_BYTES bytes until freed below.
    let slice = unsafe { std::slice::from_raw_parts_mut(host.cast::<u8>(), COPY_BYTES) };
    slice.fill(7);
    let gbps = |secs: f64| COPY_BYTES as f64 / secs / 1e9;
    let (mut rh, mut oh, mut rd, mut od) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        // SAFETY: valid device range and pinned host buffer.
        ok(unsafe { sys::cuMemcpyHtoD_v2(dst.0, host, COPY_BYTES) });
        rh.push(gbps(t.elapsed().as_secs_f64()));
        let t = Instant::now();
        rt.copy_to_device(dst, slice).unwrap();
        oh.push(gbps(t.elapsed().as_secs_f64()));
        let t = Instant::now();
        // SAFETY: as above.
        ok(unsafe { sys::cuMemcpyDtoH_v2(host, dst.0, COPY_BYTES) });
        rd.push(gbps(t.elapsed().as_secs_f64()));
        let t = Instant::now();
        rt.copy_from_device(slice, DevicePtr(dst.0)).unwrap();
        od.push(gbps(t.elapsed().as_secs_f64()));
    }
    // SAFETY: frees the pinned buffer allocated above, once.
    ok(unsafe { sys::cuMemFreeHost(host) });
    rt.shutdown().unwrap();
    vec![
        Pair {
            name: "copy host->device, 256 MiB pinned",
            unit: "GB/s",
            raw: median(rh),
            ordo: median(oh),
            ratios: None,
        },
        Pair {
            name: "copy device->host, 256 MiB pinned",
            unit: "GB/s",
            raw: median(rd),
            ordo: median(od),
            ratios: None,
        },
    ]
}

fn main() {
    RUNTIME.init().unwrap();
    let info = RUNTIME.platform_info(RUNTIME.platform(0).unwrap()).unwrap();
    if let Some(reason) = info.absent {
        eprintln!("CUDA is absent: {}", reason.message);
        std::process::exit(2);
    }
    let d = RUNTIME.device(RUNTIME.platform(0).unwrap(), 0).unwrap();
    let name = RUNTIME.device_info(d, ordo_core::DeviceInfo::Name).unwrap();
    RUNTIME.shutdown().unwrap();
    let mut pairs = bench_launch(9);
    pairs.push(bench_teardown(12));
    pairs.extend(bench_copies(5));
    println!("device: {name}");
    println!("| benchmark | unit | bare driver | ordo | ordo / bare | per-round ratio: median [p25, p75] |");
    println!("|---|---|---|---|---|---|");
    let mut json = Vec::new();
    for p in &pairs {
        let ratio = p.ordo / p.raw;
        let spread = p.ratios.map_or(String::new(), |(m, lo, hi)| format!("{m:.4} [{lo:.4}, {hi:.4}]"));
        println!("| {} | {} | {:.3} | {:.3} | {:.4} | {spread} |", p.name, p.unit, p.raw, p.ordo, ratio);
        json.push(format!(
            "{{\"name\":\"{}\",\"unit\":\"{}\",\"bare\":{:.4},\"ordo\":{:.4},\"ratio\":{:.4}}}",
            p.name, p.unit, p.raw, p.ordo, ratio
        ));
    }
    println!("BENCH_JSON [{}]", json.join(","));
}
