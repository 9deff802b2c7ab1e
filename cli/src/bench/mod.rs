//! `ordo bench [--json]`: the cost of ordo itself, each figure against a baseline measured in the
//! same run. A no-op backend (every call returns at once) isolates the runtime's own work:
//! - API call overhead: `Runtime::queue_query` / `Runtime::launch` / the C `ordo_launch` vs the
//!   same backend method called directly through `&dyn Backend`;
//! - the typed launches (`ordo::LaunchBuilder`, and `Queue::launch` of a `TypedFunction`,
//!   arguments checked) vs `Runtime::launch`;
//! - a nested init + shutdown pair while another reference is held, vs the same protocol on
//!   `std::sync::Mutex` (a counter under a mutex, as libomptarget does it);
//! - a host graph of 1,000 launches replayed vs the same launches one by one (default runtime);
//! - concurrent API calls at 1, 2 and N threads;
//! - the queue-ordered allocate + free pair and a graph's argument update, each vs the backend's
//!   calls made directly;
//! - allocation-table lookup with the table full vs with one allocation;
//! - teardown of 1,000 programs + 10,000 allocations vs a tenth of them (host backend);
//! - `size_of` the runtime state (`RuntimeState`), and heap allocations counted by a global allocator (must be 0).

use std::hint::black_box;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use ordo_core::{
    Backend, BackendError, BackendKind, BackendResult, Capabilities, CopyKind, DeviceInfo, DevicePtr, ErrorCode,
    FillValue, InfoValue, KernelArgs, LaunchDims, LaunchLimits, MemKind, Runtime,
};
use serde_json::json;

mod graph;
mod memory;
mod noop;
mod trace;
mod typed;

use noop::{NOOP_KERNEL_PARAMS, NoopBackend};

static NOOP: NoopBackend = NoopBackend::new();
static NOOP_BACKENDS: [&dyn Backend; 1] = [&NOOP];
ordo_core::static_runtime!(static NOOP_RUNTIME = &NOOP_BACKENDS);

/// Counts heap allocations of the whole process (installed as the global allocator).
pub struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: forwarded contract.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

/// Median over `rounds` of the nanoseconds per iteration of `f` run `iters` times.
fn ns_per(rounds: usize, iters: u64, mut f: impl FnMut()) -> f64 {
    let mut samples: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[rounds / 2]
}

/// One row: a measured figure, its baseline, and what the ratio means.
struct Row {
    name: &'static str,
    unit: &'static str,
    ordo: f64,
    baseline: Option<(&'static str, f64)>,
    /// 25th and 75th percentiles of per-round ratios, where the ratio is a median of those.
    quartiles: Option<(f64, f64)>,
    target: &'static str,
}

fn call_overhead(rows: &mut Vec<Row>) {
    let rt = &NOOP_RUNTIME;
    rt.init().expect("noop init");
    let device = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let queue = rt.queue_create(device).unwrap();
    let program = rt.program_load(device, b"noop").unwrap();
    let kernel = rt.kernel_get(program, "k").unwrap();
    let backend: &dyn Backend = black_box(&NOOP);
    let dims = LaunchDims::linear(1, 1);
    // The no-op kernels' four parameters (their values are never read).
    let word = 0u64;
    let four = [(&raw const word).cast_mut().cast::<core::ffi::c_void>(); 4];
    let four = KernelArgs::unsized_params(&four).unwrap();
    const N: u64 = 2_000_000;
    // Interleave so that frequency changes hit both sides alike.
    let (mut direct_q, mut ordo_q, mut direct_l, mut ordo_l) = (vec![], vec![], vec![], vec![]);
    for _ in 0..5 {
        direct_q.push(ns_per(3, N, || {
            // SAFETY: the no-op backend takes any value.
            black_box(unsafe { backend.queue_query(0, black_box(7)) }.unwrap());
        }));
        ordo_q.push(ns_per(3, N, || {
            black_box(rt.queue_query(black_box(queue)).unwrap());
        }));
        direct_l.push(ns_per(3, N, || {
            // SAFETY: the no-op backend reads no argument.
            unsafe { backend.launch(0, black_box(7), black_box(9), &dims, &four) }.unwrap();
        }));
        ordo_l.push(ns_per(3, N, || {
            // SAFETY: the no-op backend reads no argument.
            unsafe { rt.launch(black_box(queue), black_box(kernel), &dims, &four) }.unwrap();
        }));
    }
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (dq, oq, dl, ol) = (med(direct_q), med(ordo_q), med(direct_l), med(ordo_l));
    rows.push(Row {
        name: "API call overhead: queue_query",
        unit: "ns/call",
        ordo: oq - dq,
        baseline: Some(("direct backend call (ns/call)", dq)),
        quartiles: None,
        target: "<= 10 ns over the direct call",
    });
    rows.push(Row {
        name: "API call overhead: launch",
        unit: "ns/call",
        ordo: ol - dl,
        baseline: Some(("direct backend call (ns/call)", dl)),
        quartiles: None,
        target: "<= 10 ns over the direct call",
    });
    rt.shutdown().unwrap();
}

fn c_abi_overhead(rows: &mut Vec<Row>) {
    // The C entry points act on the process-wide runtime (host backend), so the C boundary's cost
    // (panic guard, pointer checks, handle conversion) is measured there: ordo_queue_query vs
    // Runtime::queue_query on the same runtime and queue.
    let rt = ordo::runtime();
    rt.init().expect("default runtime init");
    let device = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let queue = rt.queue_create(device).unwrap();
    let c_queue = ordo_ffi::ordo_queue_t { raw: queue.to_raw() };
    const N: u64 = 2_000_000;
    let (mut rust, mut c) = (vec![], vec![]);
    for _ in 0..5 {
        rust.push(ns_per(3, N, || {
            black_box(rt.queue_query(black_box(queue)).unwrap());
        }));
        c.push(ns_per(3, N, || {
            let mut done = 0i32;
            // SAFETY: `done` is a valid out-pointer.
            black_box(unsafe { ordo_ffi::ordo_queue_query(black_box(c_queue), &mut done) });
        }));
    }
    rust.sort_by(f64::total_cmp);
    c.sort_by(f64::total_cmp);
    rows.push(Row {
        name: "C ABI overhead: ordo_queue_query",
        unit: "ns/call",
        ordo: c[2] - rust[2],
        baseline: Some(("Runtime::queue_query (ns/call)", rust[2])),
        quartiles: None,
        target: "(informational)",
    });
    rt.shutdown().unwrap();
}

fn nested_init(rows: &mut Vec<Row>) {
    let rt = &NOOP_RUNTIME;
    rt.init().unwrap(); // the reference held throughout
    const N: u64 = 2_000_000;
    struct MutexLifecycle {
        refs: Mutex<u32>,
    }
    impl MutexLifecycle {
        fn init(&self) {
            let mut r = self.refs.lock().unwrap();
            if *r == 0 {
                black_box(()); // would initialise the plugins here
            }
            *r += 1;
        }
        fn shutdown(&self) {
            let mut r = self.refs.lock().unwrap();
            *r -= 1;
            if *r == 0 {
                black_box(()); // would deinitialise here
            }
        }
    }
    let m = MutexLifecycle { refs: Mutex::new(1) };
    /// The ordinary caller: both results through `?` (the `Shutdown` value is moved out).
    #[inline(never)]
    fn nested(rt: &Runtime) -> ordo_core::Result<ordo_core::Shutdown> {
        rt.init()?;
        let outcome = rt.shutdown()?;
        Ok(outcome)
    }
    let (mut o, mut b) = (vec![], vec![]);
    for _ in 0..5 {
        o.push(ns_per(3, N, || {
            black_box(nested(black_box(rt)).unwrap());
        }));
        b.push(ns_per(3, N, || {
            m.init();
            m.shutdown();
        }));
    }
    o.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    rows.push(Row {
        name: "nested init + shutdown pair through `?` (another reference held)",
        unit: "ns/pair",
        ordo: o[2],
        baseline: Some(("same protocol on std::sync::Mutex (ns/pair)", b[2])),
        quartiles: None,
        target: "<= 20 ns and <= 0.5x the mutex",
    });
    rt.shutdown().unwrap();
}

/// Throughput of `threads` threads calling `queue_query`, each on its own queue, started together
/// (calls per second over all threads): through ordo, or (`direct`) straight to the backend, the
/// hardware's own scaling for the same loop.
fn throughput(rt: &'static Runtime, queues: &[ordo_core::Queue], threads: usize, direct: bool) -> f64 {
    // About 10 ms per thread either way (the direct call is 3-4x faster), so that thread start-up
    // and scheduling noise stay small against it.
    let n: u64 = if direct { 4_000_000 } else { 1_000_000 };
    let start = std::sync::Barrier::new(threads + 1);
    let backend: &dyn Backend = &NOOP;
    let elapsed = std::thread::scope(|s| {
        for &queue in &queues[..threads] {
            let start = &start;
            s.spawn(move || {
                start.wait();
                if direct {
                    for _ in 0..n {
                        // SAFETY: the no-op backend takes any value.
                        black_box(unsafe { black_box(backend).queue_query(0, black_box(queue.0.0)) }.unwrap());
                    }
                } else {
                    for _ in 0..n {
                        black_box(rt.queue_query(black_box(queue)).unwrap());
                    }
                }
            });
        }
        start.wait();
        Instant::now()
    })
    .elapsed();
    (threads as u64 * n) as f64 / elapsed.as_secs_f64()
}

/// Median and quartiles of `v`.
fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.25), at(0.75))
}

fn concurrent(rows: &mut Vec<Row>) {
    let rt = &NOOP_RUNTIME;
    rt.init().unwrap();
    let device = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut counts: Vec<usize> = [2, 4, 8, 16].into_iter().filter(|&n| n <= cores).collect();
    if counts.len() < 2 {
        counts.push(cores.max(3)); // oversubscribed: what contention costs
    }
    let queues: Vec<_> = (0..*counts.iter().max().unwrap()).map(|_| rt.queue_create(device).unwrap()).collect();
    for threads in counts {
        for direct in [false, true] {
            // ABBA rounds of 1 thread against `threads`; the ratio is per round.
            let (mut ratios, mut single, mut many) = (vec![], vec![], vec![]);
            for _ in 0..5 {
                let a1 = throughput(rt, &queues, 1, direct);
                let b1 = throughput(rt, &queues, threads, direct);
                let b2 = throughput(rt, &queues, threads, direct);
                let a2 = throughput(rt, &queues, 1, direct);
                ratios.push((b1 + b2) / (a1 + a2));
                single.extend([a1, a2]);
                many.extend([b1, b2]);
            }
            let (ratio, q1, q3) = quartiles(ratios);
            let (one, _, _) = quartiles(single);
            let over = if threads > cores { ", oversubscribed" } else { "" };
            let name = if direct {
                format!("  the same loop on the backend directly (the hardware's scaling), {threads} threads{over}")
            } else {
                format!("concurrent queue_query, {threads} threads (own queues){over}")
            };
            let target = match (direct, threads <= cores) {
                (false, true) => ">= 0.8 x N (per-round ratio)",
                _ => "(informational)",
            };
            let _ = quartiles(many);
            rows.push(Row {
                name: Box::leak(name.into_boxed_str()),
                unit: "Mcalls/s",
                // The printed ratio is the median of per-round ratios, not a ratio of medians.
                ordo: ratio * one / 1e6,
                baseline: Some(("1 thread (Mcalls/s)", one / 1e6)),
                quartiles: Some((q1, q3)),
                target,
            });
        }
    }
    for q in queues {
        rt.queue_destroy(q).unwrap();
    }
    rt.shutdown().unwrap();
}

/// Object creation and destruction are exclusive calls: they wait for calls in flight, and with
/// per-thread counters they pay the writer's side of the asymmetric barrier (a `membarrier`).
fn exclusive(rows: &mut Vec<Row>) {
    let rt = &NOOP_RUNTIME;
    rt.init().unwrap();
    let device = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let backend: &dyn Backend = black_box(&NOOP);
    const N: u64 = 20_000;
    let direct = || {
        ns_per(1, N, || {
            let q = backend.queue_create(0).unwrap();
            // SAFETY: the no-op backend takes any value.
            unsafe { backend.queue_destroy(0, black_box(q)) }.unwrap();
        })
    };
    let ours = || {
        ns_per(1, N, || {
            let q = rt.queue_create(device).unwrap();
            rt.queue_destroy(q).unwrap();
        })
    };
    let (om, bm, q1, q3) = abba_medians(direct, ours);
    rows.push(Row {
        name: "exclusive calls: queue_create + queue_destroy pair",
        unit: "ns/pair",
        ordo: om,
        baseline: Some(("direct backend calls (ns/pair)", bm)),
        quartiles: Some((q1, q3)),
        target: "(informational: two writer barriers per pair)",
    });
    rt.shutdown().unwrap();
}

/// Five ABBA rounds (direct, ours, ours, direct): the medians of `ours` and of `direct`, and the
/// quartiles of the per-round ratios.
pub(super) fn abba_medians(direct: impl Fn() -> f64, ours: impl Fn() -> f64) -> (f64, f64, f64, f64) {
    let (mut o, mut b) = (vec![], vec![]);
    for _ in 0..5 {
        b.push(direct());
        o.push(ours());
        o.push(ours());
        b.push(direct());
    }
    let ratios: Vec<f64> = o.chunks(2).zip(b.chunks(2)).map(|(o, b)| (o[0] + o[1]) / (b[0] + b[1])).collect();
    let (_, q1, q3) = quartiles(ratios);
    (quartiles(o).0, quartiles(b).0, q1, q3)
}

fn full_table_lookup(rows: &mut Vec<Row>) {
    let rt = &NOOP_RUNTIME;
    rt.init().unwrap();
    let device = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    let first = rt.mem_alloc(device, MemKind::Device, 256).unwrap();
    const N: u64 = 2_000_000;
    let one = ns_per(5, N, || {
        black_box(rt.mem_info(black_box(first)).unwrap());
    });
    while rt.mem_alloc(device, MemKind::Device, 256).is_ok() {}
    let full = rt.live_objects().unwrap().allocations;
    let probes: Vec<DevicePtr> =
        (0..1024u64).map(|i| DevicePtr(first.0 + (i * 7919 % full as u64) * 256 + 8)).collect();
    let mut i = 0;
    let lookup = ns_per(5, N, || {
        i = (i + 1) & 1023;
        black_box(rt.mem_info(black_box(probes[i])).unwrap());
    });
    rows.push(Row {
        name: "allocation lookup (mem_info), table full",
        unit: "ns/lookup",
        ordo: lookup,
        baseline: Some(("with 1 allocation (ns/lookup)", one)),
        quartiles: None,
        target: "(binary search: log2 of the capacity)",
    });
    rt.shutdown().unwrap();
}

/// A host-backend runtime of its own for the teardown rows (arena for 10,000 allocations).
static TEARDOWN_ARENA: ordo_core::host::HostArena<{ 8 << 20 }> = ordo_core::host::HostArena::new();
static TEARDOWN_HOST: ordo_core::host::HostBackend =
    ordo_core::host::HostBackend::new(&TEARDOWN_ARENA, ordo_core::host::builtin::PROGRAMS, None);
static TEARDOWN_BACKENDS: [&dyn Backend; 1] = [&TEARDOWN_HOST];
ordo_core::static_runtime!(static TEARDOWN_RUNTIME = &TEARDOWN_BACKENDS);

/// Nanoseconds of the final shutdown of a runtime holding `programs` programs (one kernel
/// looked up in each) and `allocations` allocations of 256 bytes on the host device.
fn teardown_ns(programs: usize, allocations: usize) -> f64 {
    let rt = &TEARDOWN_RUNTIME;
    rt.init().expect("host runtime init");
    let device = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    for _ in 0..programs {
        let p = rt.program_load(device, ordo_core::host::builtin::PROGRAM_NAME.as_bytes()).unwrap();
        rt.kernel_get(p, "vector_add_f32").unwrap();
    }
    for _ in 0..allocations {
        rt.mem_alloc(device, MemKind::Device, 256).unwrap();
    }
    let t = Instant::now();
    let outcome = rt.shutdown().unwrap();
    let ns = t.elapsed().as_nanos() as f64;
    assert!(matches!(outcome, ordo_core::Shutdown::TornDown(s) if s.is_clean()));
    ns
}

/// Teardown is linear in the live objects: 10x the programs and allocations, at most 11x the time.
fn teardown_scaling(rows: &mut Vec<Row>) {
    let (small, large) = ((100, 1_000), (1_000, 10_000));
    let (mut ratios, mut small_ns, mut large_ns) = (vec![], vec![], vec![]);
    for _ in 0..7 {
        // ABBA within the round.
        let a1 = teardown_ns(small.0, small.1);
        let b1 = teardown_ns(large.0, large.1);
        let b2 = teardown_ns(large.0, large.1);
        let a2 = teardown_ns(small.0, small.1);
        ratios.push((b1 + b2) / (a1 + a2));
        small_ns.extend([a1, a2]);
        large_ns.extend([b1, b2]);
    }
    let (ratio, q1, q3) = quartiles(ratios);
    let (small_median, _, _) = quartiles(small_ns);
    let _ = quartiles(large_ns);
    rows.push(Row {
        name: "teardown of 1,000 programs + 10,000 allocations (host backend)",
        unit: "us",
        // The printed ratio is the median of per-round ratios, not a ratio of medians.
        ordo: ratio * small_median / 1e3,
        baseline: Some(("100 programs + 1,000 allocations (us)", small_median / 1e3)),
        quartiles: Some((q1, q3)),
        target: "<= 11x for 10x the objects (per-round ratio)",
    });
}

fn memory(rows: &mut Vec<Row>) {
    rows.push(Row {
        name: "size_of::<RuntimeState>() at default capacities",
        unit: "bytes",
        ordo: std::mem::size_of::<ordo_core::RuntimeState>() as f64,
        baseline: None,
        quartiles: None,
        target: "static memory, all zeros (.bss); no heap",
    });
    // Every core operation, many times, with the allocation counter read around it.
    let rt = &NOOP_RUNTIME;
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..100 {
        rt.init().unwrap();
        let d = rt.device(rt.platform(0).unwrap(), 0).unwrap();
        let q = rt.queue_create(d).unwrap();
        let e = rt.event_create(d).unwrap();
        let p = rt.program_load(d, b"noop").unwrap();
        let k = rt.kernel_get(p, "k").unwrap();
        let m = rt.mem_alloc(d, MemKind::Device, 4096).unwrap();
        rt.copy_to_device(m, &[0u8; 64]).unwrap();
        rt.fill(m, FillValue::U32(1), 16, Some(q)).unwrap();
        let word = 0u64;
        let four = [(&raw const word).cast_mut().cast::<core::ffi::c_void>(); 4];
        // SAFETY: the no-op backend reads no argument.
        unsafe { rt.launch(q, k, &LaunchDims::linear(1, 1), &KernelArgs::unsized_params(&four).unwrap()) }.unwrap();
        rt.event_record(e, q).unwrap();
        rt.queue_synchronize(q).unwrap();
        let _ = rt.queue_destroy(q).and(rt.event_destroy(e)).and(rt.mem_free(m)).and(rt.program_unload(p));
        let _ = black_box(rt.queue_query(q)); // a stale handle: an error, also without allocating
        rt.shutdown().unwrap();
    }
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
    rows.push(Row {
        name: "heap allocations in 100 cycles of every core operation",
        unit: "allocations",
        ordo: allocations as f64,
        baseline: None,
        quartiles: None,
        target: "0",
    });
}

pub fn run(as_json: bool) -> Result<(), String> {
    let mut rows = Vec::new();
    call_overhead(&mut rows);
    typed::typed_launch_overhead(&mut rows);
    c_abi_overhead(&mut rows);
    graph::host_graph_replay(&mut rows);
    trace::tracing_on(&mut rows);
    nested_init(&mut rows);
    concurrent(&mut rows);
    exclusive(&mut rows);
    memory::ordered_pair(&mut rows, false);
    memory::ordered_pair(&mut rows, true);
    graph::graph_update(&mut rows);
    graph::collective_call(&mut rows);
    full_table_lookup(&mut rows);
    teardown_scaling(&mut rows);
    memory(&mut rows);
    if as_json {
        let values: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "name": r.name, "unit": r.unit, "value": r.ordo,
                    "baseline_name": r.baseline.map(|b| b.0), "baseline": r.baseline.map(|b| b.1),
                    "ratio": r.baseline.map(|b| r.ordo / b.1), "target": r.target,
                    "ratio_q1": r.quartiles.map(|q| q.0), "ratio_q3": r.quartiles.map(|q| q.1),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&json!({ "benchmarks": values })).expect("JSON"));
        return Ok(());
    }
    println!("| benchmark | ordo | unit | baseline | baseline value | ratio | target |");
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        let (bn, bv, ratio) = match r.baseline {
            Some((n, v)) => (
                n,
                format!("{v:.2}"),
                match r.quartiles {
                    Some((q1, q3)) => format!("{:.3} [{q1:.3}, {q3:.3}]", r.ordo / v),
                    None => format!("{:.3}", r.ordo / v),
                },
            ),
            None => ("", String::new(), String::new()),
        };
        println!("| {} | {:.2} | {} | {bn} | {bv} | {ratio} | {} |", r.name, r.ordo, r.unit, r.target);
    }
    Ok(())
}
