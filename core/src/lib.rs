//! `ordo-core`: the `no_std` heart of the ordo GPU offload runtime.
//!
//! - [`Runtime`]: the lifecycle state machine (uninit, initializing, ready(n), shutting down)
//!   over fixed-capacity, generational handle tables, driving one or more [`Backend`]s.
//! - [`host::HostBackend`]: runs kernels on the calling thread from a host-supplied arena.
//! - [`InitGuard`]: a reference to an initialised runtime whose drop releases it.
//! - The reference model and the scripted (fault-injecting) backend for tests live in the
//!   `ordo-testing` crate; feature `testing` here adds only the runtime's test hooks.
//!
//! No heap allocation, no static constructors or destructors: a `Runtime` is built by a
//! `const fn` in a `static` and torn down only by its final `shutdown` (or an at-exit hook that
//! an upper layer registers explicitly). The core defines no runtime of its own: the program
//! (or `ordo-ffi`, for C) builds the one it uses.
#![cfg_attr(not(test), no_std)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(any(feature = "std", loom))]
extern crate std;

/// Table capacities, fixed at build time. Override with environment variables when building:
/// `ORDO_MAX_PLATFORMS`, `ORDO_MAX_DEVICES`, `ORDO_MAX_QUEUES`, `ORDO_MAX_EVENTS`,
/// `ORDO_MAX_PROGRAMS`, `ORDO_MAX_KERNELS`, `ORDO_MAX_ALLOCATIONS`,
/// `ORDO_MAX_ORDERED_ALLOCATIONS`, `ORDO_MAX_GRAPHS`, `ORDO_MAX_CACHED_BLOCKS`,
/// `ORDO_MAX_REPORT_FAILURES`.
pub mod capacity {
    include!(concat!(env!("OUT_DIR"), "/capacity.rs"));
}

mod alloc_table;
mod backend;
mod error;
mod guard;
mod handle;
pub mod host;
mod lifecycle;
mod reentry;
mod report;
mod runtime;
#[cfg(any(feature = "std", loom))]
mod slots;
mod sync;
/// The C library's calls the core makes itself (std builds).
#[cfg(feature = "std")]
mod os {
    unsafe extern "C" {
        /// Registers fork handlers (the runtime's and the trace writer's).
        pub(crate) fn pthread_atfork(
            prepare: Option<unsafe extern "C" fn()>,
            parent: Option<unsafe extern "C" fn()>,
            child: Option<unsafe extern "C" fn()>,
        ) -> core::ffi::c_int;
    }
}
mod table;
pub mod trace;

pub use backend::{
    Backend, BackendKind, BackendOp, BackendResult, Capabilities, CollectiveCall, CollectiveKind, CollectiveLibrary,
    Collectives, CopyKind, DataType, DeviceInfo, FastLaunch, FillValue, HostFn, InfoValue, KernelArgs, LaunchDims,
    LaunchLimits, MAX_KERNEL_PARAMS, MemKind, ParamLayout, ParamSlot, PeerAccess, ReduceOp, TensorMap, TensorMapTiled,
    UniqueId, c_layout, text_prefix,
};
pub use error::{BackendError, Error, ErrorCode, ErrorDetail, Result};
pub use guard::InitGuard;
pub use handle::{
    Allocation, Communicator, Device, DevicePtr, Event, Global, Graph, Kernel, MAX_GENERATION, MAX_RUNTIME_ID,
    ObjectKind, Platform, Program, Queue, RawHandle, RuntimeId,
};
pub use lifecycle::{MAX_REFS, Phase, State};
pub use report::{StepOutcome, TeardownEvent, TeardownFailure, TeardownReport, TeardownStep, TeardownSummary};
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use runtime::OwnedRuntime;
pub use runtime::{
    CacheStats, Collective, DEFAULT_CACHE_BYTES, LiveObjects, MAX_CACHED_BLOCKS, MAX_CACHED_PER_QUEUE, MAX_GROUP_CALLS,
    PIN_MIN_BYTES, PlatformInfo, Runtime, RuntimeState, STAGE_CHUNK_BYTES, Shutdown,
};
#[doc(hidden)]
pub use sync::cold_path;
#[cfg(not(loom))]
pub use sync::{Relax, set_wait_strategy};

/// Nanoseconds of a monotonic clock, for the host backend's event timing (feature `std`).
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub fn std_clock_ns() -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}
