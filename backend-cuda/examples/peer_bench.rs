//! Copy bandwidth between two GPUs through ordo (`Runtime::copy_device` on a queue of the
//! destination, then its synchronise) against raw `cuMemcpyPeerAsync` on a stream of the
//! destination's primary context (then `cuStreamSynchronize`), the same buffers, one process:
//! 256 MiB and 1 GiB, each direction, with peer access enabled (ordo enables it at the pair's
//! first copy; the raw side shares the primary contexts) and then with it disabled on both.
//! ABBA rounds (raw, ordo, ordo, raw); medians of GB/s and the quartiles of the per-round
//! ratios. Prints the link the driver reports, a table and one `BENCH_JSON` line. Needs two CUDA
//! devices (exits 0 saying so otherwise).

use std::time::Instant;

use cudarc::driver::sys::{self, CUcontext, CUresult, CUstream};
use ordo_core::{Backend, DevicePtr, MemKind};
use ordo_cuda::CudaBackend;

static CUDA: CudaBackend = CudaBackend::new();
static BACKENDS: [&dyn Backend; 1] = [&CUDA];
ordo_core::static_runtime!(static RUNTIME = &BACKENDS);

mod common;
use common::{ok, quartiles};

/// The primary context of CUDA device `ordinal` (retained here too; released at the end).
fn primary(ordinal: i32) -> CUcontext {
    let (mut dev, mut ctx) = (0, std::ptr::null_mut());
    // SAFETY: valid out-pointers; the driver is initialised (by ordo).
    unsafe {
        ok(sys::cuDeviceGet(&mut dev, ordinal));
        ok(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev));
    }
    ctx
}

fn main() {
    let rt = &RUNTIME;
    let Some(p) = common::cuda_platform(rt, 2, "peer_bench") else { return };
    let (d0, d1) = (rt.device(p, 0).unwrap(), rt.device(p, 1).unwrap());
    println!("link 0 -> 1: {:?}", rt.peer_access(d0, d1).unwrap());
    println!("link 1 -> 0: {:?}", rt.peer_access(d1, d0).unwrap());
    let (c0, c1) = (primary(0), primary(1));
    let raw_stream = |ctx: CUcontext| -> CUstream {
        let mut s = std::ptr::null_mut();
        // SAFETY: a retained context made current; valid out-pointer.
        unsafe {
            ok(sys::cuCtxSetCurrent(ctx));
            ok(sys::cuStreamCreate(&mut s, 1));
        }
        s
    };
    let (s0, s1) = (raw_stream(c0), raw_stream(c1));
    let (q0, q1) = (rt.queue_create(d0).unwrap(), rt.queue_create(d1).unwrap());
    let mut json = Vec::new();
    println!("| copy | peer access | size | raw GB/s | ordo GB/s | ordo / raw: median [p25, p75] |");
    println!("|---|---|---|---|---|---|");
    for access in [true, false] {
        if !access {
            // Both sides in the same state: access off in both contexts (ordo keeps copying with
            // `cuMemcpyPeerAsync`, which the driver then stages itself).
            // SAFETY: retained contexts; disabling access ordo enabled.
            unsafe {
                for (ctx, peer) in [(c0, c1), (c1, c0)] {
                    ok(sys::cuCtxSetCurrent(ctx));
                    let r = sys::cuCtxDisablePeerAccess(peer);
                    assert!(r == CUresult::CUDA_SUCCESS || r == CUresult::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
                }
            }
        }
        for size in [256usize << 20, 1 << 30] {
            let (b0, b1) =
                (rt.mem_alloc(d0, MemKind::Device, size).unwrap(), rt.mem_alloc(d1, MemKind::Device, size).unwrap());
            rt.fill(b0, ordo_core::FillValue::U8(1), size, None).unwrap();
            rt.fill(b1, ordo_core::FillValue::U8(2), size, None).unwrap();
            for (name, dst, src, dst_ctx, src_ctx, stream, queue) in
                [("0 -> 1", b1, b0, c1, c0, s1, q1), ("1 -> 0", b0, b1, c0, c1, s0, q0)]
            {
                let gbps = |secs: f64| size as f64 / secs / 1e9;
                let raw = || {
                    let t = Instant::now();
                    // SAFETY: two live allocations of `size` bytes in the two contexts; a live
                    // stream of the destination's context.
                    unsafe {
                        ok(sys::cuCtxSetCurrent(dst_ctx));
                        ok(sys::cuMemcpyPeerAsync(dst.0, dst_ctx, src.0, src_ctx, size, stream));
                        ok(sys::cuStreamSynchronize(stream));
                    }
                    gbps(t.elapsed().as_secs_f64())
                };
                let ordo = || {
                    let t = Instant::now();
                    rt.copy_device(DevicePtr(dst.0), DevicePtr(src.0), size, Some(queue)).unwrap();
                    rt.queue_synchronize(queue).unwrap();
                    gbps(t.elapsed().as_secs_f64())
                };
                // Warm-up (ordo's first copy of the pair enables access where it is on).
                ordo();
                raw();
                let (rs, os, ratios) = common::abba(6, raw, ordo);
                let ((r, _, _), (o, _, _), (m, lo, hi)) = (quartiles(rs), quartiles(os), quartiles(ratios));
                let mib = size >> 20;
                let on = if access { "on" } else { "off" };
                println!("| {name} | {on} | {mib} MiB | {r:.1} | {o:.1} | {m:.4} [{lo:.4}, {hi:.4}] |");
                json.push(format!(
                    "{{\"copy\":\"{name}\",\"access\":{access},\"mib\":{mib},\"raw_gbps\":{r:.2},\"ordo_gbps\":{o:.2},\"ratio\":{m:.4},\"q1\":{lo:.4},\"q3\":{hi:.4}}}"
                ));
            }
            rt.mem_free(b0).unwrap();
            rt.mem_free(b1).unwrap();
        }
    }
    println!("BENCH_JSON [{}]", json.join(","));
    // SAFETY: releases what was created above, once.
    unsafe {
        for (ctx, s) in [(c0, s0), (c1, s1)] {
            ok(sys::cuCtxSetCurrent(ctx));
            ok(sys::cuStreamDestroy_v2(s));
        }
        for ordinal in [0, 1] {
            let mut dev = 0;
            ok(sys::cuDeviceGet(&mut dev, ordinal));
            ok(sys::cuDevicePrimaryCtxRelease_v2(dev));
        }
    }
    rt.queue_destroy(q0).unwrap();
    rt.queue_destroy(q1).unwrap();
    rt.shutdown().unwrap();
}
