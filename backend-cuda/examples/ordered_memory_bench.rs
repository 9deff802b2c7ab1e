//! Memory allocated and freed in a queue's order: ordo's `mem_alloc_on` + `mem_free_on` (1 MiB,
//! the device's pool warm) against the raw pair they are made of, `cuMemAllocAsync` +
//! `cuMemFreeAsync` on the same stream (ordo's queue, by its native handle), and, for scale,
//! the synchronous pair `cuMemAlloc` + `cuMemFree`. Host nanoseconds per pair over batches of
//! 1,000 pairs (the stream synchronised after each batch, outside the timing); ABBA rounds (raw,
//! ordo, ordo, raw); medians with the quartiles of the per-round ratios. Then the raw pair with
//! an uncontended lock taken and given back after each call, against the raw pair: the floor
//! that any table shared between threads puts under ordo's ratio. Then ordo's pair freed by
//! handle (`mem_release_on`, the Rust API's queue-ordered buffer's drop), and the backend's two
//! calls made directly (no core), each against the raw pair: the second is the backend's share
//! of ordo's. Then the same pair on 8 threads at once, each on its own queue (the slowest
//! thread's batch). All of that with the cache of queue-ordered memory off (every pair reaches
//! the driver); then, the runtime made again with the cache on, ordo's pair served by the
//! queue's cached block against the raw pair (target: at most 0.25 of it), and a mixed workload
//! (8 threads, 6 live buffers of 256 B to 64 MiB a step, freed in a shuffled order; target: at
//! most 0.5 of the raw workload). Prints a table and a `BENCH_JSON` line for each. Needs a CUDA device (exits 0 saying so otherwise).

use std::time::Instant;

use cudarc::driver::sys::{self, CUstream};
use ordo_core::Backend;
use ordo_cuda::CudaBackend;

static CUDA: CudaBackend = CudaBackend::new();
static BACKENDS: [&dyn Backend; 1] = [&CUDA];
ordo_core::static_runtime!(static RUNTIME = &BACKENDS);

const SIZE: usize = 1 << 20;
const PAIRS: usize = 1000;

mod common;
use common::{ok, quartiles};

fn main() {
    let rt = &RUNTIME;
    // The driver-backed pair first: no cache.
    rt.set_cache_bytes(0);
    let Some(p) = common::cuda_platform(rt, 1, "ordered_memory_bench") else { return };
    let d = rt.device(p, 0).unwrap();
    let q = rt.queue_create(d).unwrap();
    // The raw side runs in the device's primary context (ordo's), current on this thread.
    let (dev, ctx) = common::retain_primary(0);
    let stream = rt.queue_native(q).unwrap() as usize as CUstream;
    let raw = || per_pair(rt, q, || raw_pair(stream));
    let ordo = || {
        per_pair(rt, q, || {
            let (_, a) = rt.mem_alloc_on(q, SIZE).unwrap();
            rt.mem_free_on(q, a).unwrap();
        })
    };
    // The pair as the Rust API's queue-ordered buffer makes it: freed by its handle on drop.
    let ordo_by_handle = || {
        per_pair(rt, q, || {
            let (h, _) = rt.mem_alloc_on(q, SIZE).unwrap();
            rt.mem_release_on(q, h).unwrap();
        })
    };
    // The backend's two calls made directly, without the core (its dynamic call, its context
    // check, its error mapping): what of ordo's part is the backend's.
    let queue_raw = rt.queue_native(q).unwrap();
    let backend = || {
        per_pair(rt, q, || {
            // SAFETY: ordo's live queue of device 0 (its native value is the backend's); the
            // memory is freed once.
            unsafe {
                let a = CUDA.mem_alloc_on(0, queue_raw, SIZE).unwrap();
                CUDA.mem_free_on(0, queue_raw, a, SIZE).unwrap();
            }
        })
    };
    // The raw pair with what any table shared between threads adds at the least: one
    // uncontended lock taken and given back after each call (an atomic read-modify-write, a
    // full barrier on x86, right after the driver's stores), as ordo's table lock is.
    let lock = std::sync::atomic::AtomicBool::new(false);
    let take_and_give_back = || {
        while lock
            .compare_exchange_weak(
                false,
                true,
                std::sync::atomic::Ordering::Acquire,
                std::sync::atomic::Ordering::Relaxed,
            )
            .is_err()
        {}
        lock.store(false, std::sync::atomic::Ordering::Release);
    };
    let raw_locked = || {
        per_pair(rt, q, || {
            let mut a = 0u64;
            // SAFETY: as for `raw_pair`.
            unsafe {
                ok(sys::cuMemAllocAsync(&mut a, SIZE, stream));
                take_and_give_back();
                take_and_give_back();
                ok(sys::cuMemFreeAsync(a, stream));
            }
        })
    };
    // The synchronous pair, for scale (100 pairs).
    let blocking = || {
        let t = Instant::now();
        for _ in 0..100 {
            let mut a = 0u64;
            // SAFETY: the current context is the device's; the memory is freed once.
            unsafe {
                ok(sys::cuMemAlloc_v2(&mut a, SIZE));
                ok(sys::cuMemFree_v2(a));
            }
        }
        t.elapsed().as_nanos() as f64 / 100.0
    };
    // Warm-up: the pool grows to its working size.
    ordo();
    raw();
    let (rs, os, ratios) = common::abba(10, raw, ordo);
    let b = quartiles((0..3).map(|_| blocking()).collect()).0;
    let ((r, _, _), (o, _, _), (m, lo, hi)) = (quartiles(rs), quartiles(os), quartiles(ratios));
    println!(
        "| 1 MiB allocate + free | raw cuMemAllocAsync + cuMemFreeAsync ns | ordo mem_alloc_on + mem_free_on ns | cuMemAlloc + cuMemFree ns | ordo / raw queue-ordered: median [p25, p75] | raw queue-ordered / raw synchronous |"
    );
    println!("|---|---|---|---|---|---|");
    println!("| per pair | {r:.0} | {o:.0} | {b:.0} | {m:.4} [{lo:.4}, {hi:.4}] | {:.4} |", r / b);
    println!(
        "BENCH_JSON [{{\"name\":\"1 MiB allocate + free in queue order\",\"raw_ns\":{r:.1},\"ordo_ns\":{o:.1},\"raw_sync_ns\":{b:.1},\"ratio\":{m:.4},\"q1\":{lo:.4},\"q3\":{hi:.4}}}]"
    );
    // Each against the raw pair: the lock's floor (a lock taken after each call), the pair
    // freed by handle (mem_release_on), the backend's calls without the core.
    let rows: [(&str, &str, &dyn Fn() -> f64); 3] = [
        (
            "raw pair + an uncontended lock taken after each call / raw pair",
            "raw queue-ordered pair with a lock after each call",
            &raw_locked,
        ),
        (
            "ordo mem_alloc_on + mem_release_on (freed by handle, as the Rust API's buffer) / raw pair",
            "1 MiB allocate + free by handle in queue order",
            &ordo_by_handle,
        ),
        (
            "the backend's mem_alloc_on + mem_free_on called directly / raw pair",
            "the backend's queue-ordered pair called directly",
            &backend,
        ),
    ];
    for (title, name, side) in rows {
        let (_, _, ratios) = common::abba(10, raw, side);
        println!();
        common::ratio_row(title, name, ratios);
    }
    threads_bench(rt, d, ctx);
    rt.queue_destroy(q).unwrap();
    rt.shutdown().unwrap();
    cached_bench(rt, ctx);
    common::release_primary(dev);
}

/// The runtime made again with the cache of queue-ordered memory on: ordo's pair, served by the
/// queue's cached block after the first, against the raw pair on the same stream.
fn cached_bench(rt: &'static ordo_core::Runtime, ctx: sys::CUcontext) {
    // Room for the mixed workload's steps on every thread (as a framework's caching allocator
    // keeps what its steps use).
    rt.set_cache_bytes(MIXED_CACHE_BYTES);
    rt.init().unwrap();
    let p = rt.platform(0).unwrap();
    let d = rt.device(p, 0).unwrap();
    let q = rt.queue_create(d).unwrap();
    let stream = rt.queue_native(q).unwrap() as usize as CUstream;
    let raw = || per_pair(rt, q, || raw_pair(stream));
    let cached = || {
        per_pair(rt, q, || {
            let (_, a) = rt.mem_alloc_on(q, SIZE).unwrap();
            rt.mem_free_on(q, a).unwrap();
        })
    };
    cached();
    raw();
    let (_, _, ratios) = common::abba(10, raw, cached);
    println!();
    common::ratio_row(
        "ordo mem_alloc_on + mem_free_on with the cache on (the queue's cached block) / raw pair",
        "1 MiB allocate + free in queue order, served by the cache",
        ratios,
    );
    rt.queue_destroy(q).unwrap();
    mixed_bench(rt, d, ctx);
    let stats = rt.cache_stats(d).unwrap();
    println!("cache after the mixed workload: {stats:?}");
    rt.shutdown().unwrap();
}

/// The mixed workload's sizes, 256 B to 64 MiB.
const MIXED_SIZES: [usize; 6] = [256, 4 << 10, 64 << 10, 1 << 20, 8 << 20, 64 << 20];
/// Allocations per step (all live at once, then freed in a shuffled order), and steps per round.
const MIXED_LIVE: usize = 6;
const MIXED_STEPS: usize = 50;
/// The cache's byte limit for the cached rows: every thread's step fits (8 × 6 × 64 MiB at most).
const MIXED_CACHE_BYTES: usize = 4 << 30;

/// A mixed workload as a training loop makes it: `THREADS` threads on their own queues, each
/// step allocating `MIXED_LIVE` buffers of sizes drawn from `MIXED_SIZES` and freeing them in a
/// shuffled order (each thread's sequence the same on both sides: one seed per thread); the
/// slowest thread's nanoseconds per step, ordo (cache on) against the raw driver pair on the
/// same streams. Target: at most 0.5 of the raw workload.
fn mixed_bench(rt: &'static ordo_core::Runtime, d: ordo_core::Device, ctx: sys::CUcontext) {
    let step = |i: usize, q: ordo_core::Queue, stream: CUstream, use_ordo: bool| {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ (i as u64 + 1);
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut live = [0u64; MIXED_LIVE];
        let t = Instant::now();
        for _ in 0..MIXED_STEPS {
            for slot in &mut live {
                let size = MIXED_SIZES[(next() % MIXED_SIZES.len() as u64) as usize];
                *slot = if use_ordo {
                    rt.mem_alloc_on(q, size).unwrap().1.0
                } else {
                    let mut a = 0u64;
                    // SAFETY: ordo's live stream, its context current.
                    ok(unsafe { sys::cuMemAllocAsync(&mut a, size, stream) });
                    a
                };
            }
            // Freed in a shuffled order (Fisher-Yates on the step's buffers).
            for k in (1..MIXED_LIVE).rev() {
                live.swap(k, (next() % (k as u64 + 1)) as usize);
            }
            for &a in &live {
                if use_ordo {
                    rt.mem_free_on(q, ordo_core::DevicePtr(a)).unwrap();
                } else {
                    // SAFETY: allocated above on this stream, freed once.
                    ok(unsafe { sys::cuMemFreeAsync(a, stream) });
                }
            }
        }
        t.elapsed().as_nanos() as f64 / MIXED_STEPS as f64
    };
    threads_abba(
        rt,
        d,
        ctx,
        step,
        &format!("mixed workload ({THREADS} threads, {MIXED_LIVE} buffers of 256 B to 64 MiB a step)"),
        "ns per step",
        &format!("mixed workload in queue order, {THREADS} threads, cache on"),
    );
}

/// The raw queue-ordered pair, `cuMemAllocAsync` + `cuMemFreeAsync` of `SIZE` bytes on `stream`
/// (ordo's live stream of the device, whose primary context is current on this thread).
#[inline(always)]
fn raw_pair(stream: CUstream) {
    let mut a = 0u64;
    // SAFETY: as above; the memory is freed once.
    unsafe {
        ok(sys::cuMemAllocAsync(&mut a, SIZE, stream));
        ok(sys::cuMemFreeAsync(a, stream));
    }
}

/// Host nanoseconds per pair over a batch of `PAIRS` calls of `pair`, the queue synchronised
/// after the batch (outside the timing). Inlined, so that each side's loop is its own code.
#[inline(always)]
fn per_pair(rt: &ordo_core::Runtime, q: ordo_core::Queue, mut pair: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..PAIRS {
        pair();
    }
    let ns = t.elapsed().as_nanos() as f64 / PAIRS as f64;
    rt.queue_synchronize(q).unwrap();
    ns
}

/// Threads allocating at once, each on its own queue.
const THREADS: usize = 8;

/// The same pair on `THREADS` threads at once, each on its own queue (ordo's queues, the raw
/// side on their streams): nanoseconds per pair of the slowest thread's batch. Before the pool's
/// table ran under shared access, every ordo pair waited for the calls in flight of all threads.
fn threads_bench(rt: &'static ordo_core::Runtime, d: ordo_core::Device, ctx: sys::CUcontext) {
    let batch = |_: usize, q: ordo_core::Queue, stream: CUstream, use_ordo: bool| {
        let t = Instant::now();
        for _ in 0..PAIRS {
            if use_ordo {
                let (_, a) = rt.mem_alloc_on(q, SIZE).unwrap();
                rt.mem_free_on(q, a).unwrap();
            } else {
                raw_pair(stream);
            }
        }
        t.elapsed().as_nanos() as f64 / PAIRS as f64
    };
    threads_abba(
        rt,
        d,
        ctx,
        batch,
        &format!("1 MiB allocate + free, {THREADS} threads at once (own queues)"),
        "ns per pair",
        &format!("1 MiB allocate + free in queue order, {THREADS} threads"),
    );
}

/// `THREADS` threads at once, each on a queue of its own: `work(thread, queue, its stream, ordo?)`
/// timed on every thread after a barrier (the device's primary context current), the slowest
/// thread's figure per round; ABBA rounds of the raw side (`false`) and ordo's (`true`); prints
/// the table row (`title`, `unit`) and a `BENCH_JSON` line (`name`).
fn threads_abba(
    rt: &'static ordo_core::Runtime,
    d: ordo_core::Device,
    ctx: sys::CUcontext,
    work: impl Fn(usize, ordo_core::Queue, CUstream, bool) -> f64 + Sync,
    title: &str,
    unit: &str,
    name: &str,
) {
    let queues: Vec<_> = (0..THREADS).map(|_| rt.queue_create(d).unwrap()).collect();
    let streams: Vec<usize> = queues.iter().map(|&q| rt.queue_native(q).unwrap() as usize).collect();
    let ctx = ctx as usize;
    let round = |use_ordo: bool| {
        let barrier = std::sync::Barrier::new(THREADS);
        let slowest = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|i| {
                    let (q, stream, barrier, work) = (queues[i], streams[i], &barrier, &work);
                    s.spawn(move || {
                        // SAFETY: the device's primary context, retained by `main`.
                        ok(unsafe { sys::cuCtxSetCurrent(ctx as sys::CUcontext) });
                        barrier.wait();
                        work(i, q, stream as CUstream, use_ordo)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).fold(0.0, f64::max)
        });
        for &q in &queues {
            rt.queue_synchronize(q).unwrap();
        }
        slowest
    };
    round(true);
    round(false);
    let (rs, os, ratios) = common::abba(10, || round(false), || round(true));
    let ((r, _, _), (o, _, _), (m, lo, hi)) = (quartiles(rs), quartiles(os), quartiles(ratios));
    println!();
    println!("| {title} | raw {unit} | ordo {unit} | ordo / raw: median [p25, p75] |");
    println!("|---|---|---|---|");
    println!("| slowest thread | {r:.0} | {o:.0} | {m:.4} [{lo:.4}, {hi:.4}] |");
    println!(
        "BENCH_JSON [{{\"name\":\"{name}\",\"raw_ns\":{r:.1},\"ordo_ns\":{o:.1},\"ratio\":{m:.4},\"q1\":{lo:.4},\"q3\":{hi:.4}}}]"
    );
    for q in queues {
        rt.queue_destroy(q).unwrap();
    }
}
