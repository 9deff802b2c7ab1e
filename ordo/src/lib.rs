//! `ordo`: a GPU offload runtime whose lifecycle is correct by construction, and the crate Rust
//! programs depend on.
//!
//! - The process-wide default runtime ([`runtime`]) over the compiled-in backends: the host CPU,
//!   CUDA (feature `cuda`) and AMDGPU (feature `amdgpu`), each absent with the reason when its
//!   driver or device is missing. Without `std`, bring your own runtime
//!   (`ordo_core::static_runtime!`) and use it directly.
//! - Re-exports of what users need from `ordo-core`: errors, handles, the raw [`Runtime`].
#![cfg_attr(not(feature = "std"), no_std)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod default;

pub use default::{builtin_program_image, provide_host_arena, runtime};

pub use ordo_core::{
    BackendKind, CopyKind, DeviceInfo, ErrorCode, InfoValue, KernelArgs, LaunchDims, MemKind, ParamLayout, ParamSlot,
    Runtime, Shutdown, State, TeardownReport, TeardownSummary, capacity, host, static_runtime,
};
/// Raw handles of the runtime's objects (what the typed API wraps, and what the C ABI carries).
pub mod raw {
    pub use ordo_core::{Device, DevicePtr, Event, Global, Kernel, ObjectKind, Platform, Program, Queue, RawHandle};
}
pub use ordo_core::Error;
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use ordo_core::OwnedRuntime;
