//! What the benchmark examples share: the driver-call check, quartiles of a sample, and the
//! device's primary context for their raw sides.
#![allow(dead_code, reason = "each example uses part of it")]

use cudarc::driver::sys::{self, CUcontext, CUdevice, CUresult};

/// Panics unless a driver call succeeded.
pub fn ok(r: CUresult) {
    assert_eq!(r, CUresult::CUDA_SUCCESS, "driver call failed");
}

/// The median, 25th and 75th percentile of a sample.
pub fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
    (q(0.5), q(0.25), q(0.75))
}

/// Retains CUDA device `ordinal`'s primary context (ordo's, which ordo retains too) and makes it
/// current on this thread, for a benchmark's raw side; give it back with `release_primary`.
pub fn retain_primary(ordinal: i32) -> (CUdevice, CUcontext) {
    let (mut dev, mut ctx) = (0, std::ptr::null_mut());
    // SAFETY: valid out-pointers; the driver is initialised (by ordo).
    unsafe {
        ok(sys::cuDeviceGet(&mut dev, ordinal));
        ok(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev));
        ok(sys::cuCtxSetCurrent(ctx));
    }
    (dev, ctx)
}

/// Gives back the reference `retain_primary` took.
pub fn release_primary(dev: CUdevice) {
    // SAFETY: retained once by `retain_primary`, released once.
    ok(unsafe { sys::cuDevicePrimaryCtxRelease_v2(dev) });
}

/// Initialises `rt` and returns its first platform (CUDA), or `None` after saying why when it has
/// fewer than `devices` devices.
pub fn cuda_platform(rt: &ordo_core::Runtime, devices: u32, name: &str) -> Option<ordo_core::Platform> {
    rt.init().unwrap();
    let p = rt.platform(0).unwrap();
    let info = rt.platform_info(p).unwrap();
    if info.absent.is_some() || info.device_count < devices {
        println!("{name}: {devices} CUDA device(s) needed ({} here; {:?})", info.device_count, info.absent);
        return None;
    }
    Some(p)
}

/// `rounds` ABBA rounds of two measures (a, b, b, a): each side's samples and the per-round
/// ratios b / a.
pub fn abba(rounds: usize, a: impl Fn() -> f64, b: impl Fn() -> f64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut as_, mut bs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (a1, b1, b2, a2) = (a(), b(), b(), a());
        as_.extend([a1, a2]);
        bs.extend([b1, b2]);
        ratios.push((b1 + b2) / (a1 + a2));
    }
    (as_, bs, ratios)
}

/// Prints a one-column table row of the ratios' median and quartiles under `title`, and its
/// `BENCH_JSON` line named `name`.
pub fn ratio_row(title: &str, name: &str, ratios: Vec<f64>) {
    let (m, lo, hi) = quartiles(ratios);
    println!("| {title}: median [p25, p75] |");
    println!("|---|");
    println!("| {m:.4} [{lo:.4}, {hi:.4}] |");
    println!("BENCH_JSON [{{\"name\":\"{name}\",\"ratio\":{m:.4},\"q1\":{lo:.4},\"q3\":{hi:.4}}}]");
}
