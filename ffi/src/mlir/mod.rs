//! The MLIR CUDA runtime ABI (`mgpu*`, MLIR 22) on ordo's default runtime (feature `mlir`), so
//! that `libordo.so` can stand in for `libmlir_cuda_runtime.so`.
//!
//! Every signature is the one `mlir-opt -gpu-lower-to-nvvm-pipeline | mlir-translate
//! --mlir-to-llvmir` declares (checked against Debian's `mlir-22-tools`; see `tests/mlir/`).
//! Modules, functions, streams and events handed to MLIR code are ordo handles cast to pointers,
//! so a stale one (a module unloaded by a global destructor after ordo's at-exit teardown) is
//! recognised and ignored, never passed to the driver. Device memory is named by its address,
//! which ordo's allocation table checks the same way.
//!
//! The first call (usually `mgpuModuleLoadJIT` from a global constructor) initialises ordo and
//! registers its at-exit teardown (`ordo_shutdown_at_exit`), after the driver is up, so it runs
//! before the driver's own exit handlers. Without a CUDA device it prints one line saying so and
//! exits with status 1 (an MLIR program cannot go on without one). Genuine errors print one line
//! to stderr, as upstream does; calls on objects already released by the teardown print nothing.
//!
//! Host registration (`mgpuMemHostRegister*`) uses ordo's `Runtime::host_register`: registered
//! ranges are named like allocations and unregistered by the teardown if the program does not.
//!
//! Faster than upstream on the path MLIR emits for a synchronous `gpu.launch_func`
//! (get function, stream create, launch, stream synchronize, stream destroy): streams come from
//! and go back to a per-device pool instead of the driver, and a function already looked up is
//! found in a cache under a read lock.
//!
//! Not provided (absent from `libordo.so`; programs using them do not link): the cuSPARSE and
//! cuSPARSELt helpers.
//!
//! Files: this one holds initialisation, the default device, error reporting and handle casts;
//! `stream.rs` streams and events, `module.rs` modules, functions and launches, `memory.rs`
//! memory and host registration, `tensor_map.rs` tensor maps.

use core::ffi::{c_char, c_void};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Mutex, Once, RwLock};

use ordo_core::{
    BackendKind, CopyKind, Device, DevicePtr, ErrorCode, Event, FillValue, Kernel, KernelArgs, LaunchDims, MemKind,
    Program, Queue,
};

use ordo::runtime;

mod memory;
mod module;
mod stream;
mod tensor_map;

pub use memory::*;
pub use module::*;
pub use stream::*;
pub use tensor_map::*;

/// Runs an exported function's body; a panic (a bug in ordo) prints one line and gives `fallback`.
fn contain_or<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    crate::boundary::catch(body, |_| {
        eprintln!("ordo: mgpu: internal error (a panic in ordo, caught at the C boundary)");
        fallback
    })
}

std::thread_local! {
    /// `mgpuSetDefaultDevice`: the CUDA device ordinal this thread's calls use.
    static DEFAULT_DEVICE: Cell<u32> = const { Cell::new(0) };
}

/// Set by the first error that loses the device (a kernel `assert`, an illegal address): every
/// later call fails the same way, so only that first one is printed.
static DEVICE_LOST: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// One line on stderr for a genuine error (upstream prints one per failed driver call), and
/// nothing for what follows from it: calls after the at-exit teardown, and calls after the
/// device was lost (the driver reported the cause once already).
#[cold]
#[inline(never)]
fn report(what: &str, e: &ordo_core::Error) {
    use std::sync::atomic::Ordering;
    if matches!(e.code, ErrorCode::Uninitialized) || DEVICE_LOST.load(Ordering::Relaxed) {
        return;
    }
    if e.code == ErrorCode::DeviceLost {
        DEVICE_LOST.store(true, Ordering::Relaxed);
    }
    eprintln!("'{what}' failed with '{e}'");
}

/// Initialises ordo once (and registers its at-exit teardown after the driver is up). Without a
/// CUDA device, says so and exits with status 1: once, and outside the one-time initialisation,
/// so that an exit handler calling an `mgpu*` function during that exit (or a program whose
/// first call comes from an exit handler) finds the initialisation finished and failed, prints
/// nothing more and gets the call's error, instead of waiting for an initialisation that never
/// ends.
fn ensure_init() {
    static INIT: Once = Once::new();
    static FAILURE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    static EXITING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    INIT.call_once(|| {
        let rt = runtime();
        if let Err(e) = crate::boundary::init_default() {
            let _ = FAILURE.set(format!("ordo: mgpu: initialisation failed: {e}"));
            return;
        }
        crate::c::lifecycle::ordo_shutdown_at_exit();
        if cuda_device_count() == 0 {
            let reason = cuda_platform()
                .and_then(|p| rt.platform_info(p).ok())
                .and_then(|i| i.absent)
                .map_or_else(|| "no device".to_string(), |e| e.message.to_string());
            let _ = FAILURE.set(format!("ordo: no CUDA device ({reason}); this MLIR program needs one"));
        }
    });
    if let Some(failure) = FAILURE.get()
        && !EXITING.swap(true, std::sync::atomic::Ordering::AcqRel)
    {
        eprintln!("{failure}");
        std::process::exit(1);
    }
}

fn cuda_platform() -> Option<ordo_core::Platform> {
    let rt = runtime();
    let count = rt.platform_count().ok()?;
    (0..count)
        .filter_map(|i| rt.platform(i).ok())
        .find(|&p| rt.platform_info(p).is_ok_and(|i| i.kind == BackendKind::Cuda))
}

fn cuda_device_count() -> u32 {
    cuda_platform().and_then(|p| runtime().platform_info(p).ok()).map_or(0, |i| i.device_count)
}

std::thread_local! {
    /// The device `device()` found last on this thread: its ordinal and handle (raw; 0: none).
    static DEVICE: Cell<(u32, u64)> = const { Cell::new((0, 0)) };
}

/// The calling thread's default CUDA device. The handle found last is kept per thread and
/// reused while it is live (one shared call instead of a walk over the platforms).
fn device() -> Option<Device> {
    ensure_init();
    let rt = runtime();
    let ordinal = DEFAULT_DEVICE.with(Cell::get);
    let (cached_ordinal, cached) = DEVICE.with(Cell::get);
    if cached != 0 && cached_ordinal == ordinal && rt.device_platform(Device::from_raw(cached)).is_ok() {
        return Some(Device::from_raw(cached));
    }
    let d = rt.device(cuda_platform()?, ordinal).ok()?;
    DEVICE.with(|c| c.set((ordinal, d.to_raw())));
    Some(d)
}

/// A handle made by `create`, or null after one line on stderr.
fn created(what: &str, made: ordo_core::Result<u64>) -> *mut c_void {
    match made {
        Ok(raw) => to_ptr(raw),
        Err(e) => {
            report(what, &e);
            core::ptr::null_mut()
        }
    }
}

fn to_ptr(raw: u64) -> *mut c_void {
    crate::boundary::handle_to_ptr(raw)
}

fn from_ptr(p: *mut c_void) -> u64 {
    crate::boundary::ptr_to_handle(p)
}
