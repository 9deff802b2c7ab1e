//! `ordo`: a GPU offload runtime whose lifecycle is correct by construction, and the crate Rust
//! programs depend on.
//!
//! - The typed API: a [`Context`] holds a reference to an initialised runtime; [`DeviceBuffer`]s,
//!   [`Queue`]s, [`Event`]s and [`Module`]s free themselves on drop and borrow their context;
//!   [`Function`]s borrow their module; launches are checked against the kernel's own parameter
//!   layout ([`LaunchBuilder`]); host kernels are typed Rust functions ([`host_kernel!`]),
//!   launched with no `unsafe` at all ([`Queue::launch_host`]); ordo's built-in kernels are safe
//!   calls ([`builtin`]).
//! - The process-wide default runtime ([`runtime`]) over the compiled-in backends: the host CPU,
//!   CUDA (feature `cuda`) and AMDGPU (feature `amdgpu`), each absent with the reason when its
//!   driver or device is missing. Without `std`, bring your own runtime
//!   ([`static_runtime!`](crate::static_runtime)) and use it with `Context::with_runtime`.
//! - Re-exports of what users need from `ordo-core`: the raw [`Runtime`] and its handles
//!   ([`raw`]), the host backend's types ([`host`]), `static_runtime!`, capacities.
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
//! Examples: `ordo/examples/` (`cargo run -p ordo --example 01_vector_add`).
#![cfg_attr(not(feature = "std"), no_std)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod buffer;
pub mod builtin;
mod context;
mod default;
mod error;
mod host_kernel;
#[cfg(feature = "std")]
mod host_queues;
mod module;
mod queue;
mod slice;

pub use buffer::{DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut};
pub use context::{Context, Device};
pub use default::{builtin_program_image, host_program_registry, provide_host_arena, register_host_program, runtime};
pub use error::{Error, Result};
pub use host_kernel::{In, Out, TypedFunction, TypedHostKernel};
pub use module::{Function, KernelArg, LaunchBuilder, MAX_LAUNCH_ARGS, Module, ProgramImages};
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
/// static BACKENDS: [&dyn ordo::Backend; 1] = [&HOST];
/// ordo::static_runtime!(static RT = &BACKENDS);
/// let ctx = ordo::Context::with_runtime(&RT)?;
/// assert_eq!(ctx.devices()?.len(), 1);
/// # Ok::<(), ordo::Error>(())
/// ```
pub mod host {
    pub use crate::host_kernel::{In, LaunchArg, LaunchArgs, Out, Param, Params, TypedFunction, TypedHostKernel};
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    pub use crate::host_queues::QueuedHost;
    pub use ordo_core::Error as RuntimeError;
    pub use ordo_core::host::*;
}

pub use ordo_core::{
    Backend, BackendKind, CopyKind, DeviceInfo, ErrorCode, InfoValue, KernelArgs, LaunchDims, MemKind, ParamLayout,
    ParamSlot, Runtime, Shutdown, State, StepOutcome, TeardownEvent, TeardownReport, TeardownStep, TeardownSummary,
    capacity, static_runtime,
};
/// Raw handles of the runtime's objects (what the typed API wraps, and what the C ABI carries).
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
        Allocation, Device, DevicePtr, Event, Global, Kernel, ObjectKind, Platform, Program, Queue, RawHandle,
        RuntimeId,
    };
}
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use ordo_core::OwnedRuntime;

/// The README's examples (the Rust quick start among them), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
