//! All-reduce through ordo (`Runtime::collective`, then `queue_synchronize`) against the same
//! NCCL calls made directly (`ncclAllReduce` over the same communicators, streams and buffers,
//! in a group when there are several ranks, then `cuStreamSynchronize`), over every CUDA device of the machine in one process
//! (up to 8): 8 bytes (latency), 8 MiB, 256 MiB and 1 GiB (bandwidth). Bus bandwidth is
//! nccl-tests' (`algbw × 2(n−1)/n`); with one rank that factor is 0, so the algorithm
//! bandwidth is printed and compared instead (NCCL's one-rank all-reduce is a device copy).
//! ABBA rounds (direct, ordo, ordo, direct); medians with the quartiles of the per-round
//! ratios. `NCCL_NVLS_ENABLE=0` must be set by the caller (no NVLink multicast). Needs a CUDA
//! device and NCCL (exits 0 saying so otherwise).

use std::time::Instant;

use cudarc::driver::sys as cu;
use cudarc::nccl::sys as nccl;
use ordo_core::{Backend, Collective, CollectiveKind, DataType, DevicePtr, MemKind, ReduceOp};
use ordo_cuda::CudaBackend;

static CUDA: CudaBackend = CudaBackend::new();
static BACKENDS: [&dyn Backend; 1] = [&CUDA];
ordo_core::static_runtime!(static RUNTIME = &BACKENDS);

mod common;
use common::{abba, quartiles};

const GIB: usize = 1 << 30;

fn main() {
    let rt = &RUNTIME;
    if std::env::var("NCCL_NVLS_ENABLE").as_deref() != Ok("0") {
        eprintln!("nccl_bench: set NCCL_NVLS_ENABLE=0 (no NVLink multicast)");
        std::process::exit(2);
    }
    let Some(p) = common::cuda_platform(rt, 1, "nccl_bench") else { return };
    let library = match rt.collective_library(p) {
        Ok(l) => l,
        Err(e) => {
            println!("nccl_bench: {e}");
            return;
        }
    };
    let n = rt.platform_info(p).unwrap().device_count.min(8) as usize;
    let devices: Vec<_> = (0..n as u32).map(|i| rt.device(p, i).unwrap()).collect();
    let mut comms = vec![ordo_core::Communicator::NULL; n];
    rt.comm_create_all(&devices, &mut comms).unwrap();
    let queues: Vec<_> = devices.iter().map(|&d| rt.queue_create(d).unwrap()).collect();
    let streams: Vec<u64> = queues.iter().map(|&q| rt.queue_native(q).unwrap()).collect();
    let natives: Vec<u64> = comms.iter().map(|&c| rt.comm_native(c).unwrap()).collect();
    let sends: Vec<DevicePtr> = devices.iter().map(|&d| rt.mem_alloc(d, MemKind::Device, GIB).unwrap()).collect();
    let recvs: Vec<DevicePtr> = devices.iter().map(|&d| rt.mem_alloc(d, MemKind::Device, GIB).unwrap()).collect();
    println!("{} {}, {n} rank(s) in one process, one per GPU", library.name, library.version);
    println!();
    println!("| all-reduce (f32, sum) | direct | ordo | ordo / direct: median [p25, p75] | target |");
    println!("|---|---|---|---|---|");
    for (bytes, iters, rounds) in [(8usize, 2000, 10), (8 << 20, 100, 10), (256 << 20, 10, 6), (GIB, 4, 6)] {
        let count = bytes / 4;
        let parts: Vec<Collective> = (0..n)
            .map(|r| Collective {
                comm: comms[r],
                queue: queues[r],
                kind: CollectiveKind::AllReduce,
                dtype: DataType::F32,
                op: ReduceOp::Sum,
                count,
                peer: 0,
                send: sends[r],
                recv: recvs[r],
            })
            .collect();
        let sync_ordo = || {
            for &q in &queues {
                rt.queue_synchronize(q).unwrap();
            }
        };
        // Seconds per all-reduce through ordo.
        let ordo = || {
            sync_ordo();
            let t = Instant::now();
            for _ in 0..iters {
                rt.collective(&parts).unwrap();
            }
            sync_ordo();
            t.elapsed().as_secs_f64() / iters as f64
        };
        // The same calls made directly, in a group (the streams are ordo's queues').
        let direct = || {
            sync_ordo();
            let t = Instant::now();
            for _ in 0..iters {
                // SAFETY: live communicators, streams and 1 GiB buffers of each rank's device;
                // every rank's call in one group (one thread drives every device).
                unsafe {
                    // One rank: no group, as a program would call it; several: one group.
                    if n > 1 {
                        assert_eq!(nccl::ncclGroupStart(), nccl::ncclResult_t::ncclSuccess);
                    }
                    let mut pending = false;
                    for r in 0..n {
                        let c = natives[r] as usize as nccl::ncclComm_t;
                        let s = streams[r] as usize as nccl::cudaStream_t;
                        let res = nccl::ncclAllReduce(
                            sends[r].0 as usize as *const _,
                            recvs[r].0 as usize as *mut _,
                            count,
                            nccl::ncclDataType_t::ncclFloat32,
                            nccl::ncclRedOp_t::ncclSum,
                            c,
                            s,
                        );
                        assert!(matches!(res, nccl::ncclResult_t::ncclSuccess | nccl::ncclResult_t::ncclInProgress));
                        pending |= res == nccl::ncclResult_t::ncclInProgress;
                    }
                    if n > 1 {
                        let end = nccl::ncclGroupEnd();
                        assert!(matches!(end, nccl::ncclResult_t::ncclSuccess | nccl::ncclResult_t::ncclInProgress));
                        pending = end == nccl::ncclResult_t::ncclInProgress;
                    }
                    // Non-blocking communicators (ordo's): wait until the enqueue completed.
                    if pending {
                        for &c in &natives {
                            let mut state = nccl::ncclResult_t::ncclInProgress;
                            while state == nccl::ncclResult_t::ncclInProgress {
                                nccl::ncclCommGetAsyncError(c as usize as nccl::ncclComm_t, &mut state);
                            }
                        }
                    }
                }
            }
            for &s in &streams {
                // SAFETY: a live stream (ordo's queue's).
                assert_eq!(unsafe { cu::cuStreamSynchronize(s as usize as cu::CUstream) }, cu::CUresult::CUDA_SUCCESS);
            }
            t.elapsed().as_secs_f64() / iters as f64
        };
        ordo();
        direct();
        let (d, o, ratios) = abba(rounds, direct, ordo);
        let (dm, om) = (quartiles(d).0, quartiles(o).0);
        if bytes == 8 {
            // Latency: time ratio (lower is better).
            let (m, lo, hi) = quartiles(ratios);
            println!("| 8 B, latency | {:.2} µs | {:.2} µs | {m:.4} [{lo:.4}, {hi:.4}] | ≤ 1.02 |", dm * 1e6, om * 1e6);
        } else {
            // Bandwidth: direct time / ordo time (higher is better).
            let inv: Vec<f64> = quartiles_inverse(&ratios);
            let (m, lo, hi) = quartiles(inv);
            let factor = if n > 1 { 2.0 * (n - 1) as f64 / n as f64 } else { 1.0 };
            let what = if n > 1 { "bus" } else { "algorithm" };
            let gbs = |s: f64| bytes as f64 / s / 1e9 * factor;
            println!(
                "| {} MiB, {what} bandwidth | {:.1} GB/s | {:.1} GB/s | {m:.4} [{lo:.4}, {hi:.4}] | ≥ 0.99 |",
                bytes >> 20,
                gbs(dm),
                gbs(om)
            );
        }
    }
    for (&s, &r) in sends.iter().zip(&recvs) {
        rt.mem_free(s).unwrap();
        rt.mem_free(r).unwrap();
    }
    let report = rt.shutdown().unwrap();
    println!("\nteardown with {n} communicator(s): {report:?}");
}

/// The per-round ratios ordo / direct of times, as direct / ordo (bandwidth ratios).
fn quartiles_inverse(ratios: &[f64]) -> Vec<f64> {
    ratios.iter().map(|r| 1.0 / r).collect()
}
