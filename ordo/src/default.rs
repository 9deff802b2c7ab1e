//! The process-wide default runtime: the host backend (registered first), then, with feature
//! `cuda`, the CUDA backend and, with feature `amdgpu`, the AMDGPU backend over HSA (each absent
//! with the reason when there is no driver or device). The C library (`ordo-ffi`) and the `ordo`
//! command act on it.

use ordo_core::host::{HostBackend, HostProgram, HostProgramRegistry, ProvidedArena, builtin};
use ordo_core::{Backend, Runtime};

/// The host backend's arena: what the program gives with `ordo_set_host_arena` (or
/// `provide_host_arena`), used from the next init on. With std, while it gave none, the host
/// device allocates from the process heap instead (`STD_HOST_HEAP`: one block per allocation,
/// up to the machine's memory); without std and without an arena, the host platform is absent.
static ARENA: ProvidedArena = ProvidedArena::new();

/// Gives the host backend of the default runtime its arena: `len` bytes at `base` (zeroed here).
/// Only before the first init, once.
///
/// # Safety
/// As `ProvidedArena::provide`: `base` is valid for reads and writes of `len` bytes for the rest
/// of the program, and nothing else uses those bytes.
///
/// ```
/// // A firmware-style program: the arena is a static buffer of the caller's.
/// static mut ARENA: [u8; 1 << 16] = [0; 1 << 16];
/// // SAFETY: the buffer is used by nothing else, for the rest of the program.
/// let given = unsafe { ordo::provide_host_arena(&raw mut ARENA as *mut u8, 1 << 16) };
/// // (Refused once the default runtime has been initialised, as other examples here may have.)
/// assert!(given.is_ok() || given.unwrap_err().code == ordo::ErrorCode::Busy);
/// ```
pub unsafe fn provide_host_arena(base: *mut u8, len: usize) -> ordo_core::Result<()> {
    // SAFETY: forwarded contract.
    unsafe { ARENA.provide(base, len) }
}

static HOST_PROGRAMS: HostProgramRegistry = HostProgramRegistry::new();

#[cfg(feature = "std")]
static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, Some(ordo_core::std_clock_ns))
    .with_registry(&HOST_PROGRAMS)
    .with_info(ordo_core::host::std_host_device_info)
    .with_heap(ordo_core::host::STD_HOST_HEAP);
#[cfg(not(feature = "std"))]
static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None).with_registry(&HOST_PROGRAMS);

/// The registry of programs the default runtime's host device offers besides its built-in one
/// (what [`register_host_program`] adds to; the C ABI registers C kernel tables there).
pub fn host_program_registry() -> &'static HostProgramRegistry {
    &HOST_PROGRAMS
}

/// Offers a program of host kernels on the default runtime's host device, so that
/// `program_load` (and [`Module::load`](crate::Module::load) with the program's name as the image) finds it by name. Call it
/// before or after init; registering the same program again does nothing. `InvalidArgument` when
/// another program of that name is registered, `OutOfResources` past
/// `ordo_core::host::MAX_REGISTERED_HOST_PROGRAMS` programs.
///
/// ```
/// use ordo::host::{HostKernel, HostProgram};
/// static MINE: HostProgram = HostProgram { name: "mine.docs", kernels: &[] };
/// ordo::register_host_program(&MINE)?;
/// ordo::register_host_program(&MINE)?; // again: nothing changes
/// # Ok::<(), ordo::Error>(())
/// ```
pub fn register_host_program(program: &'static HostProgram) -> crate::Result<()> {
    Ok(HOST_PROGRAMS.register(program)?)
}

#[cfg(feature = "cuda")]
static CUDA: ordo_cuda::CudaBackend = ordo_cuda::CudaBackend::new();

#[cfg(feature = "amdgpu")]
static AMDGPU: ordo_amdgpu::AmdgpuBackend = ordo_amdgpu::AmdgpuBackend::new();

/// With std the host device's queues are asynchronous, each with its own thread
/// (`QueuedHost`); without std a queue's work waits for an execution point (the queue's next
/// synchronise or query, an event's, a queue-less copy: `DeferredHost`) and runs there.
#[cfg(feature = "std")]
static HOST_DEVICE: ordo_core::host::QueuedHost = ordo_core::host::QueuedHost::new(&HOST);
#[cfg(not(feature = "std"))]
static HOST_DEVICE: ordo_core::host::DeferredHost = ordo_core::host::DeferredHost::new(&HOST);

#[cfg(all(feature = "cuda", feature = "amdgpu"))]
static BACKENDS: [&dyn Backend; 3] = [&HOST_DEVICE, &CUDA, &AMDGPU];
#[cfg(all(feature = "cuda", not(feature = "amdgpu")))]
static BACKENDS: [&dyn Backend; 2] = [&HOST_DEVICE, &CUDA];
#[cfg(all(not(feature = "cuda"), feature = "amdgpu"))]
static BACKENDS: [&dyn Backend; 2] = [&HOST_DEVICE, &AMDGPU];
#[cfg(all(feature = "std", not(any(feature = "cuda", feature = "amdgpu"))))]
static BACKENDS: [&dyn Backend; 1] = [&HOST_DEVICE];
#[cfg(not(feature = "std"))]
static BACKENDS: [&dyn Backend; 1] = [&HOST_DEVICE];

ordo_core::static_runtime!(static RUNTIME = &BACKENDS);

/// The process-wide default runtime: the host backend (registered first), then, with feature
/// `cuda`, the CUDA backend and, with feature `amdgpu`, the AMDGPU backend over HSA (each absent
/// with the reason when there is no driver or device). The C functions all act on it; Rust code
/// may use it directly.
///
/// ```
/// let rt = ordo::runtime();
/// let guard = rt.init_guard()?; // a reference, given back on drop
/// assert_eq!(rt.platform_info(rt.platform(0)?)?.kind, ordo::BackendKind::Host);
/// drop(guard);
/// # Ok::<(), ordo::Error>(())
/// ```
pub fn runtime() -> &'static Runtime {
    &RUNTIME
}

/// The image of ordo's built-in program for a platform kind, to pass to `program_load`: the
/// host backend's `ordo.builtin`, (feature `cuda`) the built-in PTX, or (feature `amdgpu`) a
/// clang offload bundle of gfx90a and gfx1030 code objects. All hold `vector_add_f32` and
/// `reduce_sum_f32`. `None` for kinds without one.
///
/// ```
/// assert_eq!(ordo::builtin_program_image(ordo::BackendKind::Host), Some(&b"ordo.builtin"[..]));
/// assert_eq!(ordo::builtin_program_image(ordo::BackendKind::Scripted), None);
/// ```
pub fn builtin_program_image(kind: ordo_core::BackendKind) -> Option<&'static [u8]> {
    match kind {
        ordo_core::BackendKind::Host => Some(builtin::PROGRAM_NAME.as_bytes()),
        #[cfg(feature = "cuda")]
        ordo_core::BackendKind::Cuda => Some(ordo_cuda::BUILTIN_PTX.as_bytes()),
        #[cfg(feature = "amdgpu")]
        ordo_core::BackendKind::Amdgpu => Some(ordo_amdgpu::BUILTIN_BUNDLE),
        _ => None,
    }
}
