//! Copies between a GPU and the host device through ordo (`Runtime::copy_device` between a CUDA
//! allocation and a host-device allocation, on a queue of the GPU, then its synchronise) against
//! the page-locked host copy they are made of: raw `cuMemcpyHtoDAsync` / `cuMemcpyDtoHAsync`
//! from or to `cuMemAllocHost` memory on a stream of the same primary context (then
//! `cuStreamSynchronize`), one process, 256 MiB and 1 GiB, each direction. The host device's
//! allocation is ordinary heap memory, page-locked by ordo at its first large copy (the warm-up);
//! a third column times raw copies from pageable heap memory, what such a copy costs without it.
//! ABBA rounds (raw, ordo, ordo, raw); medians of GB/s and the quartiles of the per-round ratios.
//! Prints a table and one `BENCH_JSON` line. Needs a CUDA device (exits 0 saying so otherwise).

use std::time::Instant;

use cudarc::driver::sys::{self, CUstream};
use ordo_core::host::{HostBackend, ProvidedArena, QueuedHost, STD_HOST_HEAP, builtin};
use ordo_core::{Backend, DevicePtr, FillValue, MemKind};
use ordo_cuda::CudaBackend;

static CUDA: CudaBackend = CudaBackend::new();
static NO_ARENA: ProvidedArena = ProvidedArena::new();
static HOST: HostBackend = HostBackend::new(&NO_ARENA, builtin::PROGRAMS, None).with_heap(STD_HOST_HEAP);
static QUEUED_HOST: QueuedHost = QueuedHost::new(&HOST);
static BACKENDS: [&dyn Backend; 2] = [&CUDA, &QUEUED_HOST];
ordo_core::static_runtime!(static RUNTIME = &BACKENDS);

mod common;
use common::{ok, quartiles};

fn main() {
    let rt = &RUNTIME;
    let Some(p) = common::cuda_platform(rt, 1, "host_device_bench") else { return };
    let (gpu, host) = (rt.device(p, 0).unwrap(), rt.device(rt.platform(1).unwrap(), 0).unwrap());
    let (dev, ctx) = common::retain_primary(0);
    let mut stream: CUstream = std::ptr::null_mut();
    // SAFETY: valid out-pointer; the context is current.
    ok(unsafe { sys::cuStreamCreate(&mut stream, 1) });
    let q = rt.queue_create(gpu).unwrap();
    let mut json = Vec::new();
    println!(
        "| copy | size | raw page-locked GB/s | ordo GB/s | raw pageable GB/s | ordo / raw page-locked: median [p25, p75] |"
    );
    println!("|---|---|---|---|---|---|");
    for size in [256usize << 20, 1 << 30] {
        let device = rt.mem_alloc(gpu, MemKind::Device, size).unwrap();
        let host_device = rt.mem_alloc(host, MemKind::Device, size).unwrap();
        rt.fill(device, FillValue::U8(1), size, None).unwrap();
        rt.fill(host_device, FillValue::U8(2), size, None).unwrap();
        let mut pinned: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the context is current.
        ok(unsafe { sys::cuMemAllocHost_v2(&mut pinned, size) });
        let mut pageable = vec![3u8; size];
        for name in ["host device -> GPU", "GPU -> host device"] {
            let to_gpu = name.starts_with("host");
            let gbps = |secs: f64| size as f64 / secs / 1e9;
            let raw_from = |host: *mut u8| {
                let t = Instant::now();
                // SAFETY: a live device allocation and `size` bytes of host memory; a live
                // stream of the current context.
                unsafe {
                    ok(sys::cuCtxSetCurrent(ctx));
                    if to_gpu {
                        ok(sys::cuMemcpyHtoDAsync_v2(device.0, host.cast(), size, stream));
                    } else {
                        ok(sys::cuMemcpyDtoHAsync_v2(host.cast(), device.0, size, stream));
                    }
                    ok(sys::cuStreamSynchronize(stream));
                }
                gbps(t.elapsed().as_secs_f64())
            };
            let raw = || raw_from(pinned.cast());
            let ordo = || {
                let t = Instant::now();
                let (dst, src) = if to_gpu { (device, host_device) } else { (host_device, device) };
                rt.copy_device(DevicePtr(dst.0), DevicePtr(src.0), size, Some(q)).unwrap();
                rt.queue_synchronize(q).unwrap();
                gbps(t.elapsed().as_secs_f64())
            };
            // Warm-up: ordo's first large copy page-locks the host device's allocation.
            ordo();
            raw();
            let pageable_gbps = quartiles((0..3).map(|_| raw_from(pageable.as_mut_ptr())).collect()).0;
            let (rs, os, ratios) = common::abba(6, raw, ordo);
            let ((r, _, _), (o, _, _), (m, lo, hi)) = (quartiles(rs), quartiles(os), quartiles(ratios));
            let mib = size >> 20;
            println!("| {name} | {mib} MiB | {r:.1} | {o:.1} | {pageable_gbps:.1} | {m:.4} [{lo:.4}, {hi:.4}] |");
            json.push(format!(
                "{{\"copy\":\"{name}\",\"mib\":{mib},\"raw_pinned_gbps\":{r:.2},\"ordo_gbps\":{o:.2},\"raw_pageable_gbps\":{pageable_gbps:.2},\"ratio\":{m:.4},\"q1\":{lo:.4},\"q3\":{hi:.4}}}"
            ));
        }
        // SAFETY: allocated above, freed once.
        ok(unsafe { sys::cuMemFreeHost(pinned) });
        rt.mem_free(host_device).unwrap();
        rt.mem_free(device).unwrap();
        drop(pageable);
    }
    println!("BENCH_JSON [{}]", json.join(","));
    // SAFETY: the stream created above, destroyed once.
    unsafe {
        ok(sys::cuCtxSetCurrent(ctx));
        ok(sys::cuStreamDestroy_v2(stream));
    }
    common::release_primary(dev);
    rt.queue_destroy(q).unwrap();
    rt.shutdown().unwrap();
}
