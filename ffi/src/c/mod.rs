//! The `ordo_*` C ABI, one file per object kind: the lifecycle, platforms and devices
//! (`objects`), memory, queues and events, programs and kernels, and the C types they share.

pub(crate) mod comm;
pub(crate) mod host;
#[cfg(feature = "std")]
pub(crate) mod host_image;
pub(crate) mod lifecycle;
pub(crate) mod memory;
pub(crate) mod objects;
pub(crate) mod program;
pub(crate) mod queue;
pub(crate) mod trace;
pub(crate) mod types;
