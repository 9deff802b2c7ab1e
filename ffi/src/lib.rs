//! `ordo-ffi`: the C ABI of ordo (`libordo.a`, `libordo.so`, `include/ordo.h`), and the
//! process-wide default runtime that the C library and the `ordo` command use: the host backend,
//! plus CUDA (feature `cuda`, on by default) when its driver is present.
//!
//! Every exported function validates its pointers, converts C enumerations with a specific error
//! for unknown values, writes out-parameters only on success, records a detail message for the
//! calling thread on failure, and (with `std`) catches any panic as `ORDO_ERROR_INTERNAL`.
//! Without default features the crate is `no_std` (host backend only, one shared detail buffer,
//! a panic handler that aborts) for static linking into firmware-like hosts.
#![cfg_attr(not(feature = "std"), no_std)]
#![allow(non_camel_case_types)] // C type names (`ordo_queue_t`) are the ABI.

mod boundary;
mod lifecycle;
mod memory;
mod objects;
mod program;
mod queue;
mod types;

pub use boundary::{ordo_last_error_detail, ordo_status_string};
pub use lifecycle::{ordo_get_state, ordo_init, ordo_last_teardown_report, ordo_shutdown, ordo_shutdown_at_exit};
pub use memory::{ordo_fill, ordo_mem_alloc, ordo_mem_free, ordo_memcpy, ordo_memcpy_async};
pub use objects::{
    ordo_device_get, ordo_device_get_info, ordo_platform_count, ordo_platform_get, ordo_platform_get_info,
};
pub use program::{ordo_builtin_program_image, ordo_kernel_get, ordo_launch, ordo_program_load, ordo_program_unload};
pub use queue::{
    ordo_event_create, ordo_event_destroy, ordo_event_elapsed_ms, ordo_event_query, ordo_event_record,
    ordo_event_synchronize, ordo_queue_create, ordo_queue_destroy, ordo_queue_query, ordo_queue_synchronize,
    ordo_queue_wait_event,
};
pub use types::*;

use ordo_core::capacity::HOST_ARENA_BYTES;
use ordo_core::host::{HostArena, HostBackend, builtin};
use ordo_core::{Backend, Runtime};

static ARENA: HostArena<HOST_ARENA_BYTES> = HostArena::new();

#[cfg(feature = "std")]
static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, Some(ordo_core::std_clock_ns));
#[cfg(not(feature = "std"))]
static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);

#[cfg(feature = "cuda")]
static CUDA: ordo_cuda::CudaBackend = ordo_cuda::CudaBackend::new();

#[cfg(feature = "cuda")]
static BACKENDS: [&dyn Backend; 2] = [&HOST, &CUDA];
#[cfg(not(feature = "cuda"))]
static BACKENDS: [&dyn Backend; 1] = [&HOST];

static RUNTIME: Runtime = Runtime::new(&BACKENDS);

/// The process-wide default runtime: the host backend (registered first) and, with feature
/// `cuda`, the CUDA backend (absent with the reason when there is no driver or device). The C
/// functions all act on it; Rust code may use it directly.
pub fn runtime() -> &'static Runtime {
    &RUNTIME
}

/// The prebuilt `libcore` (compiled with unwinding) references this symbol; a `no_std` build of
/// the C library uses `panic = "abort"`, so nothing unwinds and it is never called.
#[cfg(all(not(feature = "std"), not(test)))]
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}

/// The image of ordo's built-in program for a platform kind, to pass to `program_load`: the
/// host backend's `ordo.builtin`, or (feature `cuda`) the built-in PTX. Both hold
/// `vector_add_f32` and `reduce_sum_f32`. `None` for kinds without one.
pub fn builtin_program_image(kind: ordo_core::BackendKind) -> Option<&'static [u8]> {
    match kind {
        ordo_core::BackendKind::Host => Some(builtin::PROGRAM_NAME.as_bytes()),
        #[cfg(feature = "cuda")]
        ordo_core::BackendKind::Cuda => Some(ordo_cuda::BUILTIN_PTX.as_bytes()),
        _ => None,
    }
}

/// Without std, a panic (a bug in ordo: input never panics) aborts the process.
#[cfg(all(not(feature = "std"), not(test)))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe extern "C" {
        fn abort() -> !;
    }
    // SAFETY: `abort` takes nothing and never returns.
    unsafe { abort() }
}
