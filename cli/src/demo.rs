//! `ordo demo`: on every device of every present platform, load the demo program, run a vector
//! add and a reduction on real data, check every element, then shut down and print each teardown
//! step in the order it ran. The objects are given to the runtime (`into_raw`) instead of being
//! dropped: releasing them in the documented order is what the demo shows.

use ordo::{
    Context, Device, DeviceBuffer, LaunchDims, Module,
    raw::{Shutdown, StepOutcome, TeardownEvent},
};

const N: usize = 1 << 20;
const BLOCK: u32 = 256;

fn run_on_device(dev: &Device<'_>) -> Result<String, ordo::Error> {
    let queue = dev.queue()?;
    let module = Module::load_builtin(dev)?;
    let add = module.function("vector_add_f32")?;
    let reduce = module.function("reduce_sum_f32")?;
    // Small integers in `a`: their sum (about 3.1e6 < 2^24) is exact in f32 in any order, so
    // the reduction is checked exactly whatever order the device adds in.
    let xa: Vec<f32> = (0..N).map(|i| (i % 7) as f32).collect();
    let xb: Vec<f32> = (0..N).map(|i| 0.25 * (i % 1000) as f32 - 100.0).collect();
    let a = DeviceBuffer::from_slice(dev, &xa)?;
    let b = DeviceBuffer::from_slice(dev, &xb)?;
    let mut c = DeviceBuffer::<f32>::zeroed(dev, N)?;
    let mut sum = DeviceBuffer::<f32>::zeroed(dev, 1)?;

    let n = N as u32;
    let dims = LaunchDims::linear(n.div_ceil(BLOCK), BLOCK);
    // SAFETY: vector_add_f32(a, b, c, n) reads n floats of a and b and writes n of c;
    // reduce_sum_f32(a, sum, n) reads n floats of a and adds into sum[0]. The buffers hold that
    // many (the launch checks each argument's size and device) and live past the synchronize.
    unsafe {
        queue.launch_builder(&add).arg(&a).arg(&b).arg(&c.as_mut_slice()).arg(&n).launch(dims)?;
        queue.launch_builder(&reduce).arg(&a).arg(&sum.as_mut_slice()).arg(&n).launch(dims)?;
    }
    queue.synchronize()?;

    let out = c.to_vec()?;
    let total = sum.to_vec()?[0];
    // Left to the final shutdown, which releases them in teardown order.
    let _ = (queue.into_raw(), module.into_raw());
    for buffer in [a, b, c, sum] {
        let _ = buffer.into_raw();
    }
    let wrong = (0..N).filter(|&i| out[i].to_bits() != (xa[i] + xb[i]).to_bits()).count();
    let expected: f64 = xa.iter().map(|&x| f64::from(x)).sum();
    if wrong > 0 {
        return Ok(format!("FAILED: vector add: {wrong} of {N} elements wrong"));
    }
    if f64::from(total) != expected {
        return Ok(format!("FAILED: reduction: got {total}, expected {expected}"));
    }
    Ok(format!("vector add: {N} of {N} elements correct; reduction: {total} = {expected} (exact)"))
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
    // Memory is named by its address (its step carries no handle).
    let handle = if step.handle == ordo::raw::RawHandle::NULL { String::new() } else { format!(" {:?}", step.handle) };
    format!("{where_}: {}{handle}{address}: {outcome}", step.step.name())
}

/// Runs the demo on every device of `ctx`; returns the platform names (for the teardown) and
/// how many devices ran and failed.
fn run_devices(ctx: &Context<'_>) -> Result<(Vec<&'static str>, usize, usize), ordo::Error> {
    let rt = ctx.runtime();
    let mut names = Vec::new();
    for i in 0..rt.platform_count()? {
        let info = rt.platform_info(rt.platform(i)?)?;
        names.push(info.name);
        if let Some(reason) = info.absent {
            let what = if info.is_unavailable() { "unavailable" } else { "absent" };
            println!("platform {}: {what} ({})", info.name, reason.detail());
        }
    }
    let (mut ran, mut failures) = (0, 0);
    for dev in ctx.devices()? {
        let line = match run_on_device(&dev) {
            Ok(line) => line,
            Err(e) => format!("FAILED: {e}"),
        };
        failures += usize::from(line.starts_with("FAILED"));
        ran += 1;
        println!("platform {} device {} ({}): {line}", dev.kind().name(), dev.ordinal(), dev.name()?);
    }
    Ok((names, ran, failures))
}

/// `run` with a trace of it written to `path` (`ordo demo --trace`).
pub fn run_traced(path: &str) -> Result<(), String> {
    ordo::trace::start(path).map_err(|e| format!("--trace {path}: {e}"))?;
    let result = run();
    match ordo::trace::stop() {
        Ok((path, events)) => eprintln!("trace: {events} events written to {}", path.display()),
        Err(e) => eprintln!("trace: {e}"),
    }
    result
}

pub fn run() -> Result<(), String> {
    let rt = crate::runtime();
    // The demo's own reference, given back by the observed final shutdown below; the context
    // takes a second one for the typed calls.
    rt.init().map_err(|e| format!("init failed: {e}"))?;
    let ctx = Context::new().map_err(|e| format!("init failed: {e}"))?;
    let outcome = run_devices(&ctx);
    drop(ctx);
    let (names, ran, failures) = outcome.map_err(|e| e.to_string())?;

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
