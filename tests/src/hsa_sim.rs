//! The simulated HSA library (`tests/hsa-sim`, built on first use with cargo) and its test
//! hooks: AMDGPU backends pointed at it, live-object counts, violations, the call log, fault
//! injection. The simulation is one per process: tests that use it hold `lock()`.

use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};

use ordo_amdgpu::AmdgpuBackend;
use ordo_core::Runtime;

/// What the simulation counts (`ordo_hsa_sim_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// `hsa_init` calls not yet matched by `hsa_shut_down`.
    pub initialized: u64,
    /// Executables not destroyed.
    pub live_executables: u64,
    /// Queues not destroyed.
    pub live_queues: u64,
    /// Signals not destroyed (doorbells excluded).
    pub live_signals: u64,
    /// Pool allocations not freed.
    pub live_allocations: u64,
    /// Code object readers not destroyed.
    pub live_readers: u64,
    /// Dispatch packets processed.
    pub dispatches: u64,
    /// Violations recorded.
    pub violations: u64,
    /// Status-returning calls made.
    pub calls: u64,
}

impl Stats {
    /// Every live object, summed.
    pub fn live(&self) -> u64 {
        self.live_executables + self.live_queues + self.live_signals + self.live_allocations + self.live_readers
    }
}

/// The loaded simulation.
pub struct Sim {
    path: &'static str,
    stats: libloading::Symbol<'static, unsafe extern "C" fn(*mut Stats)>,
    violation: libloading::Symbol<'static, unsafe extern "C" fn(u64, *mut u8, usize) -> i64>,
    calls: libloading::Symbol<'static, unsafe extern "C" fn(*mut u8, usize) -> i64>,
    reset: libloading::Symbol<'static, unsafe extern "C" fn(u32, u64, u32)>,
}

fn build() -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "-q", "-p", "ordo-hsa-sim", "--message-format=json"])
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "building the HSA simulation failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines().filter(|l| l.contains("\"ordo_hsa_sim\"") && l.contains("compiler-artifact")) {
        if let Some(rest) = line.split("\"filenames\":[\"").nth(1) {
            let path = rest.split('"').next().unwrap_or("");
            if path.ends_with(".so") {
                return path.to_string();
            }
        }
    }
    panic!("no libordo_hsa_sim.so in cargo's output:\n{stdout}");
}

/// The simulation, built and loaded once per process.
pub fn sim() -> &'static Sim {
    static SIM: OnceLock<Sim> = OnceLock::new();
    SIM.get_or_init(|| {
        let path: &'static str = Box::leak(build().into_boxed_str());
        // SAFETY: the simulation's initialisers are plain Rust; it is never unloaded (leaked).
        let lib: &'static libloading::Library = Box::leak(Box::new(unsafe { libloading::Library::new(path) }.unwrap()));
        // SAFETY: the hooks' C signatures as the simulation defines them.
        unsafe {
            Sim {
                path,
                stats: lib.get(b"ordo_hsa_sim_stats\0").unwrap(),
                violation: lib.get(b"ordo_hsa_sim_violation\0").unwrap(),
                calls: lib.get(b"ordo_hsa_sim_calls\0").unwrap(),
                reset: lib.get(b"ordo_hsa_sim_reset\0").unwrap(),
            }
        }
    })
}

/// Serialises the tests of one process that use the simulation.
pub fn lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

impl Sim {
    /// The library's path (for `ORDO_HSA_LIBRARY`).
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// Forgets every object and record; `gpus` agents; fail the `fail_at`-th call with `status`.
    pub fn reset(&self, gpus: u32, fail_at: Option<u64>, status: u32) {
        // SAFETY: the hook's contract (no pointers).
        unsafe { (self.reset)(gpus, fail_at.unwrap_or(u64::MAX), status) }
    }

    /// The counters now.
    pub fn stats(&self) -> Stats {
        let mut s = Stats::default();
        // SAFETY: a valid out-pointer.
        unsafe { (self.stats)(&mut s) };
        s
    }

    /// Every violation recorded since the last reset.
    pub fn violations(&self) -> Vec<String> {
        (0..)
            .map_while(|i| {
                let mut buf = vec![0u8; 512];
                // SAFETY: a buffer of that length.
                let n = unsafe { (self.violation)(i, buf.as_mut_ptr(), buf.len()) };
                (n >= 0).then(|| String::from_utf8_lossy(&buf[..(n as usize).min(511)]).into_owned())
            })
            .collect()
    }

    /// The status-returning calls since the last reset, in order.
    pub fn calls(&self) -> Vec<String> {
        // SAFETY: a null buffer asks for the length only.
        let n = unsafe { (self.calls)(std::ptr::null_mut(), 0) };
        let mut buf = vec![0u8; n.max(0) as usize + 1];
        // SAFETY: a buffer of that length.
        unsafe { (self.calls)(buf.as_mut_ptr(), buf.len()) };
        String::from_utf8_lossy(&buf[..n.max(0) as usize]).lines().map(str::to_string).collect()
    }

    /// An AMDGPU backend over the simulation (leaked).
    pub fn backend(&self) -> &'static AmdgpuBackend {
        // SAFETY: the simulation exports every HSA function ordo uses, with HSA's signatures.
        Box::leak(Box::new(unsafe { AmdgpuBackend::with_library(self.path) }))
    }

    /// A runtime over one AMDGPU backend over the simulation.
    pub fn runtime(&self) -> &'static Runtime {
        crate::runtime(vec![self.backend()])
    }
}
