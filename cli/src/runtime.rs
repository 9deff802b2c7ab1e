//! The `ordo` command's runtime: the host backend (always present) and CUDA (absent, with the
//! reason, when there is no driver or no device). Host first, so teardown releases CUDA first.

use ordo_core::capacity::HOST_ARENA_BYTES;
use ordo_core::host::{HostArena, HostBackend, builtin};
use ordo_core::{Backend, Runtime};
use ordo_cuda::CudaBackend;

static ARENA: HostArena<HOST_ARENA_BYTES> = HostArena::new();
static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, Some(ordo_core::std_clock_ns));
static CUDA: CudaBackend = CudaBackend::new();
static BACKENDS: [&dyn Backend; 2] = [&HOST, &CUDA];
static RUNTIME: Runtime = Runtime::new(&BACKENDS);

/// The process-wide runtime of the `ordo` command.
pub fn runtime() -> &'static Runtime {
    &RUNTIME
}
