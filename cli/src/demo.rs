//! `ordo demo`: on every device of every present platform, load the demo program, run a vector
//! add and a reduction on real data, check every element, then shut down and print each teardown
//! step in the order it ran. The objects are left for the teardown on purpose: releasing them in
//! the documented order is what the demo shows.

use std::ffi::c_void;

use ordo_core::{Device, FillValue, KernelArgs, LaunchDims, MemKind, Runtime, Shutdown, StepOutcome, TeardownEvent};

const N: usize = 1 << 20;
const BLOCK: u32 = 256;

fn f32_bytes(v: &[f32]) -> &[u8] {
    // SAFETY: f32 has no padding and any byte pattern is a valid u8.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

fn f32_bytes_mut(v: &mut [f32]) -> &mut [u8] {
    // SAFETY: as above; every byte pattern written back is a valid f32.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

fn run_on_device(rt: &Runtime, device: Device, image: &[u8]) -> Result<String, ordo_core::Error> {
    let queue = rt.queue_create(device)?;
    let program = rt.program_load(device, image)?;
    let add = rt.kernel_get(program, "vector_add_f32")?;
    let reduce = rt.kernel_get(program, "reduce_sum_f32")?;
    let bytes = N * 4;
    let (a, b, c, sum) = (
        rt.mem_alloc(device, MemKind::Device, bytes)?,
        rt.mem_alloc(device, MemKind::Device, bytes)?,
        rt.mem_alloc(device, MemKind::Device, bytes)?,
        rt.mem_alloc(device, MemKind::Device, 4)?,
    );
    // Small integers in `a`: their sum (about 3.1e6 < 2^24) is exact in f32 in any order, so
    // the reduction is checked exactly whatever order the device adds in.
    let xa: Vec<f32> = (0..N).map(|i| (i % 7) as f32).collect();
    let xb: Vec<f32> = (0..N).map(|i| 0.25 * (i % 1000) as f32 - 100.0).collect();
    rt.copy_to_device(a, f32_bytes(&xa))?;
    rt.copy_to_device(b, f32_bytes(&xb))?;
    rt.fill(sum, FillValue::U32(0), 1, Some(queue))?;

    let n = N as u32;
    let grid = n.div_ceil(BLOCK);
    let (pa, pb, pc, psum): (*mut f32, *mut f32, *mut f32, *mut f32) =
        (a.as_ptr(), b.as_ptr(), c.as_ptr(), sum.as_ptr());
    let add_params = [
        &pa as *const _ as *mut c_void,
        &pb as *const _ as *mut c_void,
        &pc as *const _ as *mut c_void,
        &n as *const _ as *mut c_void,
    ];
    const PTR: usize = std::mem::size_of::<*mut f32>();
    let add_sizes = [PTR, PTR, PTR, 4];
    let reduce_params =
        [&pa as *const _ as *mut c_void, &psum as *const _ as *mut c_void, &n as *const _ as *mut c_void];
    let reduce_sizes = [PTR, PTR, 4];
    let dims = LaunchDims::linear(grid, BLOCK);
    // SAFETY: the arguments are (f32*, f32*, f32*, u32) and (f32*, f32*, u32) as the kernels
    // declare, pointing at allocations of N (and 1) floats that outlive the synchronisation below.
    unsafe {
        rt.launch(queue, add, &dims, &KernelArgs::new(&add_params, &add_sizes)?)?;
        rt.launch(queue, reduce, &dims, &KernelArgs::new(&reduce_params, &reduce_sizes)?)?;
    }
    rt.queue_synchronize(queue)?;

    let mut out = vec![0f32; N];
    rt.copy_from_device(f32_bytes_mut(&mut out), c)?;
    let mut total = [0f32];
    rt.copy_from_device(f32_bytes_mut(&mut total), sum)?;
    let wrong = (0..N).filter(|&i| out[i].to_bits() != (xa[i] + xb[i]).to_bits()).count();
    let expected: f64 = xa.iter().map(|&x| f64::from(x)).sum();
    if wrong > 0 {
        return Ok(format!("FAILED: vector add: {wrong} of {N} elements wrong"));
    }
    if f64::from(total[0]) != expected {
        return Ok(format!("FAILED: reduction: got {}, expected {expected}", total[0]));
    }
    Ok(format!("vector add: {N} of {N} elements correct; reduction: {} = {expected} (exact)", total[0]))
}

fn describe(step: &TeardownEvent, names: &[&str]) -> String {
    let platform = names.get(step.platform as usize).copied().unwrap_or("?");
    let where_ = if step.device == u32::MAX {
        format!("platform {platform}")
    } else {
        format!("{platform} device {}", step.device)
    };
    let address = if step.address != 0 { format!(" at {:#x}", step.address) } else { String::new() };
    let outcome = match step.outcome {
        StepOutcome::Done => "ok".to_string(),
        StepOutcome::ReleasedByDriver => "already released by the driver".to_string(),
        StepOutcome::Failed(e) => format!("FAILED: {e}"),
    };
    format!("{where_}: {} {:?}{address}: {outcome}", step.step.name(), step.handle)
}

pub fn run() -> Result<(), String> {
    let rt = crate::runtime();
    rt.init().map_err(|e| format!("init failed: {e}"))?;
    let mut names = Vec::new();
    let mut failures = 0;
    let mut ran = 0;
    let count = rt.platform_count().map_err(|e| e.to_string())?;
    for i in 0..count {
        let p = rt.platform(i).map_err(|e| e.to_string())?;
        let info = rt.platform_info(p).map_err(|e| e.to_string())?;
        names.push(info.name);
        if let Some(reason) = info.absent {
            let what = if info.is_unavailable() { "unavailable" } else { "absent" };
            println!("platform {}: {what} ({})", info.name, reason.message);
            continue;
        }
        let Some(image) = ordo::builtin_program_image(info.kind) else {
            println!("platform {}: no demo program for this platform", info.name);
            continue;
        };
        for d in 0..info.device_count {
            let device = rt.device(p, d).map_err(|e| e.to_string())?;
            let name = rt.device_info(device, ordo_core::DeviceInfo::Name).map_err(|e| e.to_string())?;
            let line = match run_on_device(rt, device, image) {
                Ok(line) => line,
                Err(e) => format!("FAILED: {e}"),
            };
            failures += usize::from(line.starts_with("FAILED"));
            ran += 1;
            println!("platform {} device {d} ({name}): {line}", info.name);
        }
    }

    println!("teardown (in the order objects were released):");
    let mut step_no = 0;
    let shutdown = rt.shutdown_observed(&mut |step| {
        step_no += 1;
        println!("  {step_no:>3}. {}", describe(step, &names));
    });
    match shutdown {
        Ok(Shutdown::TornDown(summary)) => {
            if let Some(report) = rt.last_teardown_report() {
                println!("teardown report: {report}");
            }
            if !summary.is_clean() {
                return Err("teardown reported failures".into());
            }
        }
        Ok(Shutdown::Released { remaining }) => {
            println!("other init references remain ({remaining}); no teardown")
        }
        Err(e) => return Err(format!("shutdown failed: {e}")),
    }
    if ran == 0 {
        return Err("no device ran the demo".into());
    }
    if failures > 0 {
        return Err(format!("{failures} device(s) failed verification"));
    }
    Ok(())
}
