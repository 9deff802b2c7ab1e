//! Communicators at the edges: at exit, and when a peer dies. Prints nothing and exits 0 when
//! all is as it should be; otherwise says what on stderr and exits 1 (2 without CUDA or NCCL).
//!
//! - `nccl_exit leave`: a communicator over every GPU, one all-reduce, then `main` returns with
//!   it live and no shutdown: the process exits 0, silently.
//! - `nccl_exit hook`: the same with ordo's teardown in an `atexit` handler registered before
//!   the first init (it runs after the driver's own exit handlers): the teardown's report is
//!   clean (a communicator the driver took with it counts as released by the driver).
//! - `nccl_exit rank R FILE`: rank R of two processes joined by the id in FILE (rank 0 writes
//!   it), one GPU each (`R % GPUs`), two all-reduces checked.
//! - `nccl_exit rank 1 FILE die`: rank 1 kills itself (SIGKILL) after the first all-reduce; rank
//!   0's second all-reduce then cannot end: its synchronise must return an error within
//!   `ORDO_NCCL_TIMEOUT_MS` (plus a second), and its shutdown must complete.

use std::time::{Duration, Instant};

use ordo_core::{Backend, Collective, CollectiveKind, DataType, DevicePtr, MemKind, ReduceOp, Shutdown, UniqueId};
use ordo_cuda::CudaBackend;

static CUDA: CudaBackend = CudaBackend::new();
static BACKENDS: [&dyn Backend; 1] = [&CUDA];
ordo_core::static_runtime!(static RUNTIME = &BACKENDS);

const COUNT: usize = 1 << 22;

fn fail(what: String) -> ! {
    eprintln!("nccl_exit: {what}");
    std::process::exit(1)
}

extern "C" fn shut_down_at_exit() {
    let outcome = RUNTIME.shutdown();
    let clean = matches!(outcome, Ok(Shutdown::TornDown(ref s)) if s.is_clean());
    if !clean {
        eprintln!("nccl_exit hook: {outcome:?}: {:?}", RUNTIME.last_teardown_report());
        // SAFETY: ends the process at once; nothing else runs.
        unsafe { libc::_exit(3) };
    }
}

/// `count` f32 all-reduced (sum) on each rank's part, then every queue synchronised; the
/// synchronise's result.
fn all_reduce(parts: &[(ordo_core::Communicator, ordo_core::Queue, DevicePtr)]) -> ordo_core::Result<()> {
    let calls: Vec<Collective> = parts
        .iter()
        .map(|&(comm, queue, buf)| Collective {
            comm,
            queue,
            kind: CollectiveKind::AllReduce,
            dtype: DataType::F32,
            op: ReduceOp::Sum,
            count: COUNT,
            peer: 0,
            send: buf,
            recv: buf,
        })
        .collect();
    RUNTIME.collective(&calls)?;
    for &(_, q, _) in parts {
        RUNTIME.queue_synchronize(q)?;
    }
    Ok(())
}

fn filled(device: ordo_core::Device, value: f32) -> DevicePtr {
    let buf = RUNTIME.mem_alloc(device, MemKind::Device, COUNT * 4).unwrap();
    let host: Vec<u8> = (0..COUNT).flat_map(|_| value.to_ne_bytes()).collect();
    RUNTIME.copy_to_device(buf, &host).unwrap();
    buf
}

fn first_value(buf: DevicePtr) -> f32 {
    let mut b = [0u8; 4];
    RUNTIME.copy_from_device(&mut b, buf).unwrap();
    f32::from_ne_bytes(b)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("");
    if mode == "hook" {
        // SAFETY: registers a plain function, before anything loads the CUDA driver.
        assert_eq!(unsafe { libc::atexit(shut_down_at_exit) }, 0);
    }
    RUNTIME.init().unwrap();
    let platform = RUNTIME.platform(0).unwrap();
    let gpus = RUNTIME.platform_info(platform).unwrap().device_count;
    if gpus == 0 || RUNTIME.collective_library(platform).is_err() {
        eprintln!("nccl_exit: CUDA or NCCL absent");
        std::process::exit(2);
    }
    let devices: Vec<_> = (0..gpus).map(|i| RUNTIME.device(platform, i).unwrap()).collect();
    match mode {
        "leave" | "hook" => {
            let mut comms = vec![ordo_core::Communicator::NULL; devices.len()];
            RUNTIME.comm_create_all(&devices, &mut comms).unwrap();
            let parts: Vec<_> = devices
                .iter()
                .zip(&comms)
                .map(|(&d, &c)| (c, RUNTIME.queue_create(d).unwrap(), filled(d, 1.0)))
                .collect();
            all_reduce(&parts).unwrap_or_else(|e| fail(format!("all-reduce: {e}")));
            if first_value(parts[0].2) != gpus as f32 {
                fail("wrong sum".into());
            }
            // Return with every object live.
        }
        "rank" => {
            let rank: u32 = args.get(1).and_then(|r| r.parse().ok()).unwrap_or_else(|| fail("rank R FILE".into()));
            let path = args.get(2).unwrap_or_else(|| fail("rank R FILE".into()));
            let die = args.get(3).map(String::as_str) == Some("die");
            let device = devices[rank as usize % devices.len()];
            let id = if rank == 0 {
                let id = RUNTIME.comm_unique_id(platform).unwrap();
                let tmp = format!("{path}.tmp");
                std::fs::write(&tmp, id.0).unwrap();
                std::fs::rename(&tmp, path).unwrap();
                id
            } else {
                let t = Instant::now();
                loop {
                    if let Ok(bytes) = std::fs::read(path)
                        && let Ok(id) = <[u8; 128]>::try_from(bytes)
                    {
                        break UniqueId(id);
                    }
                    if t.elapsed() > Duration::from_secs(60) {
                        fail("no id".into());
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            };
            let comm = RUNTIME
                .comm_create_rank(device, &id, rank, 2, 60_000)
                .unwrap_or_else(|e| fail(format!("rank {rank}: create: {e}")));
            let part = [(comm, RUNTIME.queue_create(device).unwrap(), filled(device, rank as f32 + 1.0))];
            all_reduce(&part).unwrap_or_else(|e| fail(format!("rank {rank}: first all-reduce: {e}")));
            if first_value(part[0].2) != 3.0 {
                fail(format!("rank {rank}: wrong sum"));
            }
            if die && rank == 1 {
                // SAFETY: ends this process at once, as `kill -9` would.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            }
            let limit = std::env::var("ORDO_NCCL_TIMEOUT_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(30_000u64);
            if rank == 0 && args.get(3).map(String::as_str) == Some("survive") {
                // The peer is gone: the second all-reduce must fail within the bound, not hang.
                std::thread::sleep(Duration::from_millis(500));
                let t = Instant::now();
                match all_reduce(&part) {
                    Ok(()) => fail("the all-reduce without its peer succeeded".into()),
                    Err(_) if t.elapsed() <= Duration::from_millis(limit + 1000) => {}
                    Err(e) => fail(format!("the error came after {:?}: {e}", t.elapsed())),
                }
                // The teardown completes (the aborted communicator is a failure in its report).
                match RUNTIME.shutdown() {
                    Ok(Shutdown::TornDown(_)) => {}
                    other => fail(format!("shutdown: {other:?}")),
                }
                return;
            }
            all_reduce(&part).unwrap_or_else(|e| fail(format!("rank {rank}: second all-reduce: {e}")));
            if first_value(part[0].2) != 6.0 {
                fail(format!("rank {rank}: wrong second sum"));
            }
            match RUNTIME.shutdown() {
                Ok(Shutdown::TornDown(s)) if s.is_clean() => {}
                other => fail(format!("rank {rank}: shutdown: {other:?}: {:?}", RUNTIME.last_teardown_report())),
            }
        }
        _ => fail("usage: nccl_exit leave | hook | rank R FILE [die | survive]".into()),
    }
}
