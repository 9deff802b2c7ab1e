//! Helpers for ordo's integration tests: runtimes over fresh backends, leaked so they are
//! `'static` like the statics users build (each test gets its own, so tests run in parallel).

pub mod hsa_sim;

use ordo_core::host::{HostBackend, ProvidedArena, builtin};
use ordo_core::{Backend, Device, ErrorCode, Result, Runtime};
use ordo_testing::scripted::ScriptedBackend;

/// Bytes of the arena of `host_runtime`.
pub const HOST_ARENA: usize = 1 << 20;

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// A runtime over `backends` (leaked).
pub fn runtime(backends: Vec<&'static dyn Backend>) -> &'static Runtime {
    // Built in place on the heap: no 1 MB value on the stack.
    let state: &'static ordo_core::RuntimeState = ordo_core::RuntimeState::new_in(Box::leak(Box::new_uninit()));
    // SAFETY: a fresh state, used by this runtime only.
    leak(unsafe { Runtime::with_state(Box::leak(backends.into_boxed_slice()), state) })
}

/// A scripted backend with `devices` devices (leaked).
pub fn scripted(devices: u32) -> &'static ScriptedBackend {
    leak(ScriptedBackend::new(devices))
}

/// A runtime over one scripted backend with `devices` devices.
pub fn scripted_runtime(devices: u32) -> (&'static ScriptedBackend, &'static Runtime) {
    let b = scripted(devices);
    (b, runtime(vec![b]))
}

/// A host backend over a fresh `HOST_ARENA`-byte arena (on the heap, 256-byte aligned) with the
/// built-in programs (leaked).
pub fn host_backend() -> &'static HostBackend {
    let arena: &'static ProvidedArena = leak(ProvidedArena::new());
    let layout = std::alloc::Layout::from_size_align(HOST_ARENA, ordo_core::host::HOST_ALIGN).expect("layout");
    // SAFETY: a non-zero size.
    let block = unsafe { std::alloc::alloc_zeroed(layout) };
    assert!(!block.is_null(), "allocating the test arena");
    // SAFETY: a fresh block, never freed, used by nothing else.
    unsafe { arena.provide(block, HOST_ARENA) }.expect("a fresh arena");
    leak(HostBackend::new(arena, builtin::PROGRAMS, Some(ordo_core::std_clock_ns)))
}

/// A runtime over one fresh host backend.
pub fn host_runtime() -> (&'static HostBackend, &'static Runtime) {
    let h = host_backend();
    (h, runtime(vec![h]))
}

/// Device `index` of platform 0.
pub fn device(rt: &Runtime, index: u32) -> Result<Device> {
    rt.device(rt.platform(0)?, index)
}

/// A tensor map over `global_dim` elements of `data_type` at `address`, copied in boxes of 16 with
/// unit strides and no interleave, swizzle, promotion or fill (one dimension for a valid shape).
pub fn tensor_map(address: u64, data_type: u32, global_dim: &[u64]) -> ordo_core::TensorMapTiled<'_> {
    ordo_core::TensorMapTiled {
        data_type,
        global_address: address,
        global_dim,
        global_strides: &[],
        box_dim: &[16],
        element_strides: &[1],
        interleave: 0,
        swizzle: 0,
        l2_promotion: 0,
        oob_fill: 0,
    }
}

/// The error code of a result (panics on success: for tests).
#[track_caller]
pub fn code<T: std::fmt::Debug>(r: Result<T>) -> ErrorCode {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e.code,
    }
}

/// The workspace's root directory.
pub fn workspace() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Builds `libordo.so` (debug) with `feature` of `ordo-clib` in its own target directory
/// (`target/<feature>`, so that the other tests' `libordo.so` keeps its features) and returns
/// the directory holding it. Panics with cargo's output when the build fails.
pub fn build_clib_with(feature: &str) -> std::path::PathBuf {
    let target = workspace().join("target").join(feature);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["build", "-p", "ordo-clib", "--features", feature, "--target-dir"])
        .arg(&target)
        .current_dir(workspace())
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "building libordo.so with feature {feature} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("debug")
}

/// A command that runs `program` (or a script that runs programs) linked against a
/// `libordo.so.0` the test chose through the program's run path: without cargo's
/// `LD_LIBRARY_PATH`, which names `target/<profile>/`, where the build leaves a `libordo.so.0`
/// (the link to that profile's `libordo.so`, of whatever features it was last built with) that
/// would take precedence over the run path.
pub fn program(program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    cmd.env_remove("LD_LIBRARY_PATH");
    cmd
}
