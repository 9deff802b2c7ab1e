//! `ordo`: a GPU offload runtime whose lifecycle is correct by construction — typed, checked,
//! self-freeing device memory, queues, events, modules and launches over CUDA, AMDGPU (HSA) and
//! the host CPU.
//!
//! ```
//! use ordo::{Context, DeviceBuffer};
//!
//! let ctx = Context::new()?; // the default runtime: the first GPU, else the host CPU
//! let dev = ctx.default_device()?;
//! let a = DeviceBuffer::from_slice(&dev, &[1.0f32, 2.0, 3.0])?;
//! let b = DeviceBuffer::from_slice(&dev, &[10.0f32, 20.0, 30.0])?;
//! let mut c = DeviceBuffer::<f32>::zeroed(&dev, 3)?;
//! ordo::builtin::vector_add(&dev.queue()?, &a, &b, &mut c)?;
//! assert_eq!(c.to_vec()?, [11.0, 22.0, 33.0]);
//! # Ok::<(), ordo::Error>(())
//! ```
//!
//! - A [`Context`] is a reference to an initialised runtime, cheap to clone. Every object holds
//!   one: [`Device`], [`DeviceBuffer`] (and its [`DeviceSlice`]s), [`HostBuffer`], [`Queue`],
//!   [`Event`], [`Module`], [`Function`]. They free themselves on drop, can be kept together in
//!   one struct and moved between threads, and name their runtime objects by identity: an
//!   object whose runtime was shut down under it gets `InvalidHandle`, never another object.
//! - Kernels: a signature declared once in Rust types ([`host_kernel!`], or
//!   [`Module::typed_function`]) and checked against the kernel's parameter layout; one launch
//!   ([`Queue::launch`]) runs a GPU kernel or its typed host twin with the same arguments; host
//!   launches need no `unsafe` ([`Queue::launch_host`], [`Scope::launch_host`]). Untyped
//!   launches are checked too ([`LaunchBuilder`]). ordo's own kernels are safe calls
//!   ([`builtin`]).
//! - Memory: copies and fills on device buffers and slices, asynchronous copies whose host memory
//!   stays borrowed until the queue is done ([`Queue::scope`]), managed memory
//!   ([`DeviceBuffer::managed`]), page-locked host memory ([`HostBuffer`]).
//! - The process-wide default runtime ([`runtime`]) over the compiled-in backends: the host CPU,
//!   CUDA (feature `cuda`) and AMDGPU (feature `amdgpu`), each absent with the reason when its
//!   driver or device is missing. Without `std`, bring a runtime of your own
//!   ([`static_runtime!`](crate::static_runtime)) and use [`Context::with_runtime`].
//! - The raw core API, for handles, backends and the C ABI's model: [`raw`]; the host backend's
//!   types (arenas, host programs): [`host`].
//!
//! Examples: `ordo/examples/` (`cargo run -p ordo --example 07_one_kernel_everywhere`).
#![cfg_attr(not(feature = "std"), no_std)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod buffer;
pub mod builtin;
#[cfg(feature = "std")]
mod collective;
mod context;
mod default;
mod error;
mod graph;
#[cfg(feature = "std")]
mod host_buffer;
mod host_kernel;
mod launch_builder;
mod module;
mod queue;
mod slice;
pub mod trace;

pub use buffer::{DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut};
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use collective::{CollectiveElement, CollectiveGroup, CollectiveLibrary, Communicator, ReduceOp, UniqueId};
pub use context::{Context, Device};
pub use default::{builtin_program_image, host_program_registry, provide_host_arena, register_host_program, runtime};
pub use error::{Error, Result};
pub use graph::Graph;
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use host_buffer::HostBuffer;
pub use host_kernel::{In, Out, TypedFunction, TypedHostKernel};
pub use launch_builder::{KernelArg, LaunchBuilder, MAX_LAUNCH_ARGS};
pub use module::{Function, Module, ProgramImages};
/// Kernels from CUDA C++ source at run time (NVRTC, loaded when first used): [`nvrtc::compile`]
/// needs no device; [`Module::compile_cuda`] compiles for a device and loads the result.
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use ordo_cuda::nvrtc;
pub use queue::{Event, Queue, Scope};

/// bytemuck, whose `Pod` makes a type [`DeviceCopy`] (derive it with `ordo::bytemuck::Pod`).
pub use bytemuck;

/// The host backend: arenas, host programs and kernels (`ordo_core::host`), and typed host
/// kernels ([`host_kernel!`]).
///
/// ```
/// use ordo::host::{HostArena, HostBackend, builtin};
/// static ARENA: HostArena<{ 1 << 16 }> = HostArena::new();
/// static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
/// static BACKENDS: [&dyn ordo::raw::Backend; 1] = [&HOST];
/// ordo::static_runtime!(static RT = &BACKENDS);
/// let ctx = ordo::Context::with_runtime(&RT)?;
/// assert_eq!(ctx.devices()?.len(), 1);
/// # Ok::<(), ordo::Error>(())
/// ```
pub mod host {
    pub use crate::host_kernel::{In, LaunchArg, LaunchArgs, Out, Param, Params, TypedFunction, TypedHostKernel};
    pub use ordo_core::Error as RuntimeError;
    pub use ordo_core::host::*;
}

pub use ordo_core::{BackendKind, CacheStats, DeviceInfo, ErrorCode, InfoValue, LaunchDims, State, static_runtime};

/// The raw core API the typed API wraps: the [`Runtime`](raw::Runtime) and its methods, object
/// handles, the backend trait, kernel arguments, copy and memory kinds, teardown reports and
/// capacities — for code that works with handles (as the C ABI does), implements a backend, or
/// tests a runtime. The typed API hands out raw handles (`raw()`, `into_raw()`) and the runtime
/// (`Context::runtime`).
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let queue = ctx.default_device()?.queue()?;
/// let raw: ordo::raw::Queue = queue.raw();
/// assert_eq!(raw.0.kind(), Some(ordo::raw::ObjectKind::Queue));
/// assert_eq!(raw.0.runtime(), ctx.runtime().identity());
/// # Ok::<(), ordo::Error>(())
/// ```
pub mod raw {
    pub use ordo_core::{
        Allocation, Backend, BackendError, BackendOp, Collective, CollectiveCall, CollectiveKind, Collectives,
        Communicator, CopyKind, DataType, Device, DevicePtr, Error, Event, FillValue, Global, Graph, Kernel,
        KernelArgs, MemKind, ObjectKind, PIN_MIN_BYTES, ParamLayout, ParamSlot, Platform, Program, Queue, RawHandle,
        ReduceOp, Runtime, RuntimeId, STAGE_CHUNK_BYTES, Shutdown, StepOutcome, TeardownEvent, TeardownReport,
        TeardownStep, TeardownSummary, capacity,
    };
}
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use ordo_core::OwnedRuntime;

/// The README's examples (the Rust quick start among them), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// The guide's Rust blocks, compiled and run as doctests (`tests/tests/docs.rs` checks that every
/// chapter with a Rust block is listed here).
#[cfg(doctest)]
pub mod guide_doctests {
    #[doc = include_str!("../../docs/rust.md")]
    pub struct Rust;
    #[doc = include_str!("../../docs/lifecycle.md")]
    pub struct Lifecycle;
}
