//! Teardown from an `atexit` handler registered *before* the first init, so that it runs after
//! every exit handler the CUDA driver registers during init: the driver may already have torn
//! itself down. ordo must still exit 0 and print nothing on stderr; objects the driver already
//! released are counted as released-by-driver, not reported as failures.
//!
//! Prints one line on stdout with the report's counts; exits 3 from the handler if the teardown
//! failed, 2 if CUDA is absent (the GPU pass runs it only where CUDA is present).

use std::ffi::c_void;
use std::io::Write;

use ordo_core::{Backend, KernelArgs, LaunchDims, MemKind, Shutdown};
use ordo_cuda::{BUILTIN_PTX, CudaBackend};

static CUDA: CudaBackend = CudaBackend::new();
static BACKENDS: [&dyn Backend; 1] = [&CUDA];
ordo_core::static_runtime!(static RUNTIME = &BACKENDS);

extern "C" fn shut_down_at_exit() {
    let outcome = RUNTIME.shutdown();
    let line = match (&outcome, RUNTIME.last_teardown_report()) {
        (Ok(Shutdown::TornDown(_)), Some(r)) => format!(
            "atexit teardown: failures={} released_by_driver={} released={:?}\n",
            r.failure_count(),
            r.released_by_driver,
            r.released
        ),
        (other, _) => format!("atexit teardown: unexpected {other:?}\n"),
    };
    let _ = std::io::stdout().write_all(line.as_bytes());
    let _ = std::io::stdout().flush();
    if !matches!(outcome, Ok(Shutdown::TornDown(ref r)) if r.is_clean()) {
        // SAFETY: ends the process at once; nothing else runs.
        unsafe { libc::_exit(3) };
    }
}

fn main() {
    // SAFETY: registers a plain function; registered before anything loads the CUDA driver.
    assert_eq!(unsafe { libc::atexit(shut_down_at_exit) }, 0);
    RUNTIME.init().expect("init");
    let platform = RUNTIME.platform(0).unwrap();
    if RUNTIME.platform_info(platform).unwrap().absent.is_some() {
        println!("CUDA absent");
        std::process::exit(2);
    }
    let d = RUNTIME.device(platform, 0).unwrap();
    let q = RUNTIME.queue_create(d).unwrap();
    let _e = RUNTIME.event_create(d).unwrap();
    let p = RUNTIME.program_load(d, BUILTIN_PTX.as_bytes()).unwrap();
    let spin = RUNTIME.kernel_get(p, "spin_cycles").unwrap();
    for _ in 0..8 {
        RUNTIME.mem_alloc(d, MemKind::Device, 1 << 20).unwrap();
    }
    RUNTIME.mem_alloc(d, MemKind::Host, 4096).unwrap();
    let cycles: u64 = 50_000_000;
    let params = [&cycles as *const u64 as *mut c_void];
    // SAFETY: spin_cycles takes one u64. Left running on purpose: exit arrives while it runs.
    unsafe { RUNTIME.launch(q, spin, &LaunchDims::linear(1, 1), &KernelArgs::new(&params, &[8]).unwrap()) }.unwrap();
    // Return from main without shutting down: exit handlers run.
}
