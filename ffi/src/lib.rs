//! `ordo-ffi`: the C ABI of ordo (the `ordo_*` functions and `include/ordo.h`; `ordo-clib` builds
//! them into `libordo.a` and `libordo.so`), over the process-wide default runtime of the `ordo`
//! crate ([`ordo::runtime`]). Feature `mlir` adds MLIR's `mgpu*` runtime ABI (`mlir`), feature
//! `offload` LLVM liboffload's `ol*` API (`offload`), both on the same runtime. Rust programs
//! depend on `ordo`, not on this crate.
//!
//! Every exported function validates its pointers, converts C enumerations with a specific error
//! for unknown values, writes out-parameters only on success, records a detail message for the
//! calling thread on failure, and (with `std`) catches any panic as `ORDO_ERROR_INTERNAL`.
//! Without default features the crate is `no_std` (host backend only, one shared detail buffer)
//! for static linking into firmware-like hosts. It defines no panic handler: a Rust firmware
//! that links this rlib keeps its own, and `ordo-clib`'s no-std C library brings one that aborts.
#![cfg_attr(not(feature = "std"), no_std)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![allow(non_camel_case_types)] // C type names (`ordo_queue_t`) are the ABI.

mod boundary;
mod c;
#[cfg(feature = "mlir")]
#[cfg_attr(docsrs, doc(cfg(feature = "mlir")))]
pub mod mlir;
#[cfg(all(feature = "offload", target_pointer_width = "64"))]
#[cfg_attr(docsrs, doc(cfg(feature = "offload")))]
pub mod offload;

pub use boundary::{ordo_last_error_detail, ordo_status_string};
pub use c::comm::{
    ordo_collective, ordo_comm_abort, ordo_comm_create_all, ordo_comm_create_rank, ordo_comm_destroy, ordo_comm_info,
    ordo_comm_native, ordo_comm_unique_id,
};
pub use c::host::{
    ORDO_MAX_C_HOST_KERNELS, ordo_host_kernel_fn, ordo_host_kernel_t, ordo_host_program_register, ordo_host_thread_t,
};
pub use c::lifecycle::{
    ordo_get_state, ordo_init, ordo_last_teardown_report, ordo_set_host_arena, ordo_set_wait_hook, ordo_shutdown,
    ordo_shutdown_at_exit,
};
pub use c::memory::{
    ordo_fill, ordo_fill_pattern, ordo_mem_alloc, ordo_mem_alloc_async, ordo_mem_alloc_handle, ordo_mem_free,
    ordo_mem_free_async, ordo_mem_release, ordo_memcpy, ordo_memcpy_async,
};
pub use c::objects::{
    ordo_device_get, ordo_device_get_info, ordo_platform_count, ordo_platform_get, ordo_platform_get_info,
};
pub use c::program::{
    ordo_builtin_program_image, ordo_graph_kernel_count, ordo_graph_set_args, ordo_kernel_get, ordo_kernel_native,
    ordo_kernel_optimal_block_size, ordo_kernel_param_layout, ordo_launch, ordo_program_compile, ordo_program_global,
    ordo_program_image_check, ordo_program_load, ordo_program_unload,
};
pub use c::queue::{
    ordo_device_cache_stats, ordo_event_create, ordo_event_destroy, ordo_event_elapsed_ms, ordo_event_query,
    ordo_event_record, ordo_event_synchronize, ordo_graph_destroy, ordo_graph_launch, ordo_queue_begin_capture,
    ordo_queue_create, ordo_queue_destroy, ordo_queue_end_capture, ordo_queue_host_function, ordo_queue_is_capturing,
    ordo_queue_native, ordo_queue_query, ordo_queue_synchronize, ordo_queue_trim, ordo_queue_wait_event,
};
pub use c::types::*;
