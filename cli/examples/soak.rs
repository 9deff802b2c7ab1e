//! A soak under load: 16 threads make random typed operations on the default device (a GPU
//! where there is one, else the host device): launches, copies, fills, graphs with argument
//! updates, queue-ordered memory, events across queues, host functions, while a controller
//! switches tracing on and off and, every few seconds, tears the runtime down as a raw caller
//! would (shutting down until the teardown happens, whatever references the workers hold) and
//! initialises it again.
//!
//! Checked: every error is one the operation could give after such a teardown (its objects are
//! stale: `InvalidHandle`, `Uninitialized`), nothing panics or hangs (a watchdog ends a run
//! whose workers stop making progress), after every teardown the GPU's used memory is back at its
//! baseline (`nvidia-smi`, where there is a GPU), the live heap (counted by this program's
//! allocator) does not grow after the warm-up, and the process's resident memory stays within
//! 1 MiB of what it was after the warm-up. Prints the figures and exits non-zero on a failure.
//!
//! `cargo run --release -p ordo-cli --example soak -- [SECONDS] [THREADS]` (60 and 16 by default;
//! `tests/gpu/run.sh soak` runs it for 8 minutes on the GPU machine).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use ordo::{BackendKind, Context, DeviceBuffer, ErrorCode, builtin};

/// Operations done, errors by kind (unexpected ones listed), and teardowns.
#[derive(Default)]
struct Tally {
    ops: AtomicU64,
    stale: AtomicU64,
    /// Calls without a queue refused while another thread's queue of the device captured.
    captured: AtomicU64,
    unexpected: Mutex<Vec<String>>,
}

/// A small xorshift generator (no dependency; each thread its own seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Whether `e` is what an operation may answer when the runtime was torn down under it (its
/// objects stale, the runtime down or coming up again) or it raced that teardown.
fn expected(e: &ordo::Error) -> bool {
    matches!(e.code(), ErrorCode::InvalidHandle | ErrorCode::Uninitialized | ErrorCode::NotFound)
}

/// Whether `e` is the documented refusal of a call without a queue (a synchronous copy or fill)
/// while a queue of its device captures into a graph (another thread's capture, here).
fn refused_for_a_capture(e: &ordo::Error) -> bool {
    e.code() == ErrorCode::InvalidArgument && e.to_string().contains("capturing into a graph")
}

unsafe extern "C" fn host_fn(data: *mut core::ffi::c_void) {
    // SAFETY: `data` is the address of the static counter below.
    unsafe { &*(data as *const AtomicU64) }.fetch_add(1, Relaxed);
}
static HOST_FNS: AtomicU64 = AtomicU64::new(0);

/// One random operation on the worker's context (its objects live for this operation only).
fn operation(ctx: &Context<'static>, rng: &mut Rng) -> ordo::Result<()> {
    let dev = ctx.default_device()?;
    let n = 1 + rng.below(1 << 14) as usize;
    let queue = dev.queue()?;
    match rng.below(8) {
        // A launch (the built-in vector add) and its result read back.
        0 => {
            let x = DeviceBuffer::from_slice(&dev, &vec![1.0f32; n])?;
            let mut y = DeviceBuffer::<f32>::zeroed(&dev, n)?;
            builtin::vector_add(&queue, &x, &x, &mut y)?;
            let v = y.to_vec()?;
            assert!(v.iter().all(|&e| e == 2.0), "vector_add gave a wrong value");
        }
        // Copies host to device, device to device, device to host.
        1 => {
            let data: Vec<u32> = (0..n as u32).collect();
            let a = DeviceBuffer::from_slice(&dev, &data)?;
            let mut b = DeviceBuffer::<u32>::zeroed(&dev, n)?;
            b.copy_from_device(&a)?;
            assert_eq!(b.to_vec()?, data, "a copy lost data");
        }
        // A fill.
        2 => {
            let mut a = DeviceBuffer::<u32>::zeroed(&dev, n)?;
            a.fill(7)?;
            assert!(a.to_vec()?.iter().all(|&e| e == 7), "a fill lost data");
        }
        // Queue-ordered memory, freed on its queue.
        3 => {
            let a = DeviceBuffer::<u8>::zeroed_on(&queue, n)?;
            queue.synchronize()?;
            drop(a);
            queue.synchronize()?;
        }
        // An event of one queue gates another.
        4 => {
            let other = dev.queue()?;
            let x = DeviceBuffer::from_slice(&dev, &vec![1.0f32; n])?;
            let mut y = DeviceBuffer::<f32>::zeroed(&dev, n)?;
            builtin::vector_add(&queue, &x, &x, &mut y)?;
            let event = dev.event()?;
            queue.record(&event)?;
            other.wait(&event)?;
            other.synchronize()?;
        }
        // A host function on a queue.
        5 => {
            // SAFETY: `host_fn` only counts, on any thread; its data is a static.
            unsafe {
                ctx.runtime().queue_host_function(queue.raw(), host_fn, (&raw const HOST_FNS).cast_mut().cast())
            }?;
            queue.synchronize()?;
        }
        // A graph captured once, launched, updated and launched again.
        6 => {
            let module = ordo::Module::load_builtin(&dev)?;
            let add = module
                .typed_function::<(ordo::In<'static, f32>, ordo::In<'static, f32>, ordo::Out<'static, f32>, u32)>(
                    "vector_add_f32",
                )?;
            let n32 = n as u32;
            let x = DeviceBuffer::from_slice(&dev, &vec![1.0f32; n])?;
            let mut y = DeviceBuffer::<f32>::zeroed(&dev, n)?;
            let mut z = DeviceBuffer::<f32>::zeroed(&dev, n)?;
            let dims = add.dims_for(n32)?;
            // SAFETY: vector_add_f32 reads n elements of x twice and writes n of y or z (all n
            // long, alive and unshared until the queue is synchronised below).
            let graph = match queue.capture(|q| unsafe { q.launch(&add, dims, (&x, &x, &mut y, n32)) }) {
                Err(e) if e.code() == ErrorCode::Unsupported => return Ok(()),
                other => other?,
            };
            // SAFETY: as above.
            unsafe {
                graph.launch(&queue)?;
                graph.set_args(0, &add, (&x, &x, &mut z, n32))?;
                graph.launch(&queue)?;
            }
            queue.synchronize()?;
            assert!(z.to_vec()?.iter().all(|&e| e == 2.0), "the updated graph wrote a wrong value");
        }
        // A reduction over a buffer.
        _ => {
            let x = DeviceBuffer::from_slice(&dev, &vec![1.0f32; n])?;
            let mut out = DeviceBuffer::<f32>::zeroed(&dev, 1)?;
            builtin::reduce_sum(&queue, &x, &mut out)?;
            assert_eq!(out.to_vec()?[0], n as f32, "reduce_sum gave a wrong value");
        }
    }
    Ok(())
}

/// The system allocator, counting the bytes the process has live on its heap: the leak check's
/// measure. Resident memory is printed too, but it is no measure of a leak: with 16 threads the C
/// library's allocator keeps per-thread arenas whose footprint drifts by megabytes either way
/// while the live bytes stay put.
struct LiveBytes;

static LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts what it hands out.
unsafe impl std::alloc::GlobalAlloc for LiveBytes {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { std::alloc::System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as i64, Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { std::alloc::System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as i64, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE.fetch_sub(layout.size() as i64, Relaxed);
        // SAFETY: forwarded contract.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { std::alloc::System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size as i64 - layout.size() as i64, Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: LiveBytes = LiveBytes;

/// The process's resident memory, in bytes (Linux).
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// The GPUs' used memory in MiB (`nvidia-smi`), summed; `None` without one.
fn gpu_used_mib() -> Option<u64> {
    let out = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=memory.used", "--format=csv,noheader,nounits"])
        .output()
        .ok()?;
    out.status.success().then_some(())?;
    Some(String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim().parse::<u64>().ok()).sum())
}

/// The C library's allocator settings the soak measures under: no per-thread caches, one arena.
/// With them, resident memory after `malloc_trim` is what the process holds; without them, 16
/// threads' caches pin a few MiB more pages as the run goes on (measured: 14.6 to 23.1 MiB over
/// 40 s while the live heap stayed at 6,000 bytes), which is no leak of ordo's.
const TUNABLES: &str = "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1";

fn main() {
    // Run again under `TUNABLES` unless already (a program's allocator settings are read once,
    // when it starts).
    if !std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains(TUNABLES)) {
        use std::os::unix::process::CommandExt;
        let tunables = match std::env::var("GLIBC_TUNABLES") {
            Ok(t) if !t.is_empty() => format!("{t}:{TUNABLES}"),
            _ => TUNABLES.to_string(),
        };
        let me = std::env::current_exe().expect("the soak's own path");
        let e = std::process::Command::new(me).args(std::env::args_os().skip(1)).env("GLIBC_TUNABLES", tunables).exec();
        panic!("could not run the soak again under GLIBC_TUNABLES: {e}");
    }
    let args: Vec<String> = std::env::args().collect();
    let seconds: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(60);
    let threads: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(16);
    let rt = ordo::runtime();
    // The GPU's used memory before ordo is up: what every teardown must come back to.
    let gpu_baseline = gpu_used_mib();
    let kind = {
        let ctx = Context::new().expect("the default runtime initialises");
        ctx.default_device().expect("a default device").kind()
    };
    let gpu = kind == BackendKind::Cuda;
    let trace_path = std::env::temp_dir().join(format!("ordo-soak-{}.json", std::process::id()));
    println!("soak: {seconds} s, {threads} threads, on the {kind:?} device");
    let tally = Tally::default();
    let stop = AtomicBool::new(false);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut failures: Vec<String> = Vec::new();
    let mut teardowns = 0u32;
    // Room for every sample from the start: the samples' own growth is no part of the live heap
    // they measure.
    let room = (seconds / 3 + 2) as usize;
    let mut rss_samples: Vec<u64> = Vec::with_capacity(room);
    // The live heap after each teardown with tracing off (tracing on keeps its buffers).
    let mut live_samples: Vec<u64> = Vec::with_capacity(room);
    let mut gpu_samples: Vec<u64> = Vec::with_capacity(room);
    // Workers hold it (shared) around each operation; the controller takes it (exclusive) for a
    // teardown and the samples after it, so that no context is up while they are taken.
    let gate = std::sync::RwLock::new(());
    std::thread::scope(|s| {
        for t in 0..threads {
            let (tally, stop, gate) = (&tally, &stop, &gate);
            s.spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
                // A long-lived context, as a program keeps one: made again when a teardown made
                // it stale.
                let mut ctx: Option<Context<'static>> = None;
                while !stop.load(Relaxed) {
                    let _running = gate.read().unwrap_or_else(|p| p.into_inner());
                    if ctx.is_none() {
                        match Context::new() {
                            Ok(c) => ctx = Some(c),
                            Err(e) if expected(&e) => {
                                tally.stale.fetch_add(1, Relaxed);
                                continue;
                            }
                            Err(e) => {
                                tally.unexpected.lock().unwrap().push(format!("Context::new: {e}"));
                                continue;
                            }
                        }
                    }
                    match operation(ctx.as_ref().expect("made above"), &mut rng) {
                        Ok(()) => {}
                        Err(e) if expected(&e) => {
                            tally.stale.fetch_add(1, Relaxed);
                            ctx = None;
                        }
                        Err(e) if refused_for_a_capture(&e) => {
                            tally.captured.fetch_add(1, Relaxed);
                        }
                        Err(e) => tally.unexpected.lock().unwrap().push(e.to_string()),
                    }
                    tally.ops.fetch_add(1, Relaxed);
                }
            });
        }
        let mut last_ops = 0;
        let mut tracing = false;
        let mut round = 0u64;
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(500));
            round += 1;
            // Tracing switched on and off every second.
            if round % 2 == 0 {
                let r = if tracing { ordo::trace::stop().map(drop) } else { ordo::trace::start(&trace_path) };
                match r {
                    Ok(()) => tracing = !tracing,
                    Err(e) => failures.push(format!("tracing {}: {e}", if tracing { "off" } else { "on" })),
                }
            }
            // A raw caller's teardown every 3 s: shut down until the teardown happens.
            if round % 6 == 0 {
                let _paused = gate.write().unwrap_or_else(|p| p.into_inner());
                let started = Instant::now();
                loop {
                    match rt.shutdown() {
                        Ok(ordo::raw::Shutdown::TornDown(_)) => break,
                        Ok(ordo::raw::Shutdown::Released { .. }) => continue,
                        Err(e) if e.code == ErrorCode::Uninitialized => break,
                        Err(e) => {
                            failures.push(format!("shutdown: {e}"));
                            break;
                        }
                    }
                }
                teardowns += 1;
                if started.elapsed() > Duration::from_secs(30) {
                    failures.push(format!("a teardown took {:?}", started.elapsed()));
                }
                // No context is up until the workers go on (each makes a new one).
                if gpu && let Some(used) = gpu_used_mib() {
                    gpu_samples.push(used);
                }
                // The C library's allocator keeps what was freed (per-thread arenas, 16 of them
                // here) until asked: given back first, what stays resident is what is held.
                // SAFETY: no precondition; it only returns free pages to the system.
                unsafe { libc::malloc_trim(0) };
                rss_samples.push(rss());
                if !tracing {
                    live_samples.push(LIVE.load(Relaxed).max(0) as u64);
                }
            }
            let ops = tally.ops.load(Relaxed);
            if round % 20 == 0 {
                if ops == last_ops {
                    failures.push(format!("no operation finished in 10 s (after {ops})"));
                    break;
                }
                last_ops = ops;
            }
        }
        stop.store(true, Relaxed);
        if tracing {
            let _ = ordo::trace::stop();
        }
    });
    let _ = std::fs::remove_file(&trace_path);
    let unexpected = tally.unexpected.lock().unwrap();
    for e in unexpected.iter().take(10) {
        failures.push(format!("unexpected error: {e}"));
    }
    // After the warm-up (the first three teardowns), the last third of the samples against the
    // first third (medians): the live heap with tracing off may not grow at all (a leak of one
    // allocation per teardown shows), resident memory (the allocator's free pages given back, the
    // C library's per-thread caches off: see `main`) by 1 MiB at most.
    let growth = |samples: &[u64], skip: usize| {
        let warm: Vec<u64> = samples.iter().skip(skip).copied().collect();
        let median = |v: &[u64]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v.get(v.len() / 2).copied().unwrap_or(0)
        };
        let third = (warm.len() / 3).max(1).min(warm.len());
        let (early, late) = (median(&warm[..third]), median(&warm[warm.len() - third..]));
        (early, late, late.saturating_sub(early))
    };
    let (rss_early, rss_late, rss_growth) = growth(&rss_samples, 3);
    if rss_growth > 1 << 20 {
        failures.push(format!("resident memory grew by {} KiB after the warm-up", rss_growth >> 10));
    }
    let (live_early, live_late, live_growth) = growth(&live_samples, 2);
    if live_growth > 0 {
        failures.push(format!("the live heap grew by {live_growth} bytes after the warm-up"));
    }
    println!(
        "soak: {} operations, {} refused as stale (teardowns under them), {} refused during another thread's capture, {} unexpected errors, {teardowns} teardowns, {} host functions ran",
        tally.ops.load(Relaxed),
        tally.stale.load(Relaxed),
        tally.captured.load(Relaxed),
        unexpected.len(),
        HOST_FNS.load(Relaxed)
    );
    println!("soak: live heap after each teardown with tracing off (bytes): {:?}", live_samples);
    println!(
        "soak: resident memory after each teardown (KiB): {:?}",
        rss_samples.iter().map(|r| r >> 10).collect::<Vec<_>>()
    );
    println!(
        "soak: after the warm-up, resident memory {} KiB in the first third, {} KiB in the last (median), growth {} KiB",
        rss_early >> 10,
        rss_late >> 10,
        rss_growth >> 10
    );
    println!(
        "soak: after the warm-up, live heap {live_early} bytes in the first third, {live_late} in the last (median), growth {live_growth} bytes"
    );
    if gpu {
        println!(
            "soak: GPU memory used (MiB): before ordo was up {gpu_baseline:?}, after each teardown {gpu_samples:?}"
        );
        // Every teardown gives the device's memory back (nvidia-smi counts in MiB). The baseline
        // is the first teardown's: once the driver is loaded, the process keeps a fixed
        // reservation of its own on the device (36 MiB on an H200 with driver 580) that no
        // context owns and no teardown can give back.
        let baseline = gpu_samples.first().copied().unwrap_or(0);
        if let Some(&worst) = gpu_samples.iter().max()
            && worst > baseline + 2
        {
            failures.push(format!(
                "GPU memory not back after a teardown: {worst} MiB used, {baseline} MiB after the first teardown"
            ));
        }
    }
    if teardowns < 2 || tally.ops.load(Relaxed) == 0 {
        failures.push(format!("too short a soak: {teardowns} teardowns"));
    }
    if failures.is_empty() {
        println!("soak: passed");
    } else {
        for f in &failures {
            eprintln!("soak: FAILED: {f}");
        }
        std::process::exit(1);
    }
}
