//! The HSA functions ordo uses, loaded at run time from `libhsa-runtime64.so.1` (or a library
//! named by the backend's constructor or `ORDO_HSA_LIBRARY`), and the types and constants they
//! take, written by hand from Debian's `hsa.h` / `hsa_ext_amd.h` (ROCm 5.2). `tests/layout.rs`
//! compiles a C file against those headers and checks every size, offset and constant here.
//!
//! A loaded library is never unloaded (the HSA runtime starts threads that would outlive it).
//! Every function here is required; a library without one is reported as an absent platform.

#![allow(non_camel_case_types)] // the C names, so that they can be checked against the headers

use std::ffi::{c_char, c_void};

/// `hsa_status_t`.
pub type hsa_status_t = u32;
/// `hsa_signal_value_t` (64-bit builds).
pub type hsa_signal_value_t = i64;

/// `HSA_STATUS_SUCCESS`.
pub const HSA_STATUS_SUCCESS: hsa_status_t = 0;
/// `HSA_STATUS_INFO_BREAK`: an iteration callback's "stop here".
pub const HSA_STATUS_INFO_BREAK: hsa_status_t = 0x1;
/// `HSA_STATUS_ERROR`.
pub const HSA_STATUS_ERROR: hsa_status_t = 0x1000;
/// `HSA_STATUS_ERROR_INVALID_ARGUMENT`.
pub const HSA_STATUS_ERROR_INVALID_ARGUMENT: hsa_status_t = 0x1001;
/// `HSA_STATUS_ERROR_INVALID_QUEUE_CREATION`.
pub const HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: hsa_status_t = 0x1002;
/// `HSA_STATUS_ERROR_INVALID_ALLOCATION`.
pub const HSA_STATUS_ERROR_INVALID_ALLOCATION: hsa_status_t = 0x1003;
/// `HSA_STATUS_ERROR_INVALID_AGENT`.
pub const HSA_STATUS_ERROR_INVALID_AGENT: hsa_status_t = 0x1004;
/// `HSA_STATUS_ERROR_INVALID_SIGNAL`.
pub const HSA_STATUS_ERROR_INVALID_SIGNAL: hsa_status_t = 0x1006;
/// `HSA_STATUS_ERROR_INVALID_QUEUE`.
pub const HSA_STATUS_ERROR_INVALID_QUEUE: hsa_status_t = 0x1007;
/// `HSA_STATUS_ERROR_OUT_OF_RESOURCES` (also what `hsa_init` returns without `/dev/kfd`).
pub const HSA_STATUS_ERROR_OUT_OF_RESOURCES: hsa_status_t = 0x1008;
/// `HSA_STATUS_ERROR_INVALID_PACKET_FORMAT`.
pub const HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: hsa_status_t = 0x1009;
/// `HSA_STATUS_ERROR_NOT_INITIALIZED`.
pub const HSA_STATUS_ERROR_NOT_INITIALIZED: hsa_status_t = 0x100B;
/// `HSA_STATUS_ERROR_INVALID_ISA`.
pub const HSA_STATUS_ERROR_INVALID_ISA: hsa_status_t = 0x100F;
/// `HSA_STATUS_ERROR_INVALID_CODE_OBJECT`.
pub const HSA_STATUS_ERROR_INVALID_CODE_OBJECT: hsa_status_t = 0x1010;
/// `HSA_STATUS_ERROR_INVALID_EXECUTABLE`.
pub const HSA_STATUS_ERROR_INVALID_EXECUTABLE: hsa_status_t = 0x1011;
/// `HSA_STATUS_ERROR_INVALID_SYMBOL_NAME`.
pub const HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: hsa_status_t = 0x1013;
/// `HSA_STATUS_ERROR_EXCEPTION` (a kernel fault).
pub const HSA_STATUS_ERROR_EXCEPTION: hsa_status_t = 0x1016;
/// `HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER`.
pub const HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER: hsa_status_t = 0x1021;
/// `HSA_STATUS_ERROR_FATAL`.
pub const HSA_STATUS_ERROR_FATAL: hsa_status_t = 0x1026;

/// `hsa_agent_t`, `hsa_signal_t`, `hsa_amd_memory_pool_t`, `hsa_executable_t`,
/// `hsa_code_object_reader_t`, `hsa_executable_symbol_t`, `hsa_loaded_code_object_t`: one
/// opaque 64-bit handle each.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct hsa_handle_t {
    /// The runtime's value (0: none, for signals).
    pub handle: u64,
}

/// `hsa_agent_t`.
pub type hsa_agent_t = hsa_handle_t;
/// `hsa_signal_t`.
pub type hsa_signal_t = hsa_handle_t;
/// `hsa_amd_memory_pool_t`.
pub type hsa_amd_memory_pool_t = hsa_handle_t;
/// `hsa_executable_t`.
pub type hsa_executable_t = hsa_handle_t;
/// `hsa_code_object_reader_t`.
pub type hsa_code_object_reader_t = hsa_handle_t;
/// `hsa_executable_symbol_t`.
pub type hsa_executable_symbol_t = hsa_handle_t;
/// `hsa_loaded_code_object_t`.
pub type hsa_loaded_code_object_t = hsa_handle_t;

/// `hsa_queue_t` (64-bit, little-endian layout).
#[repr(C)]
#[derive(Debug)]
pub struct hsa_queue_t {
    /// `hsa_queue_type32_t`.
    pub type_: u32,
    /// Queue features.
    pub features: u32,
    /// The ring of 64-byte packets.
    pub base_address: *mut c_void,
    /// Rung with the packet index after publishing a packet.
    pub doorbell_signal: hsa_signal_t,
    /// Packets in the ring (a power of two).
    pub size: u32,
    /// Reserved.
    pub reserved1: u32,
    /// Queue identifier.
    pub id: u64,
}

/// `hsa_kernel_dispatch_packet_t` (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hsa_kernel_dispatch_packet_t {
    /// Packet header (type, barrier bit, fence scopes): written last.
    pub header: u16,
    /// Dimensions (bits 0..2).
    pub setup: u16,
    /// Work-group size x.
    pub workgroup_size_x: u16,
    /// Work-group size y.
    pub workgroup_size_y: u16,
    /// Work-group size z.
    pub workgroup_size_z: u16,
    /// Reserved.
    pub reserved0: u16,
    /// Grid size x in work-items.
    pub grid_size_x: u32,
    /// Grid size y in work-items.
    pub grid_size_y: u32,
    /// Grid size z in work-items.
    pub grid_size_z: u32,
    /// Private (scratch) bytes per work-item.
    pub private_segment_size: u32,
    /// Group (LDS) bytes per work-group.
    pub group_segment_size: u32,
    /// The kernel's code descriptor (`NAME.kd`).
    pub kernel_object: u64,
    /// The kernel arguments (kernarg memory).
    pub kernarg_address: *mut c_void,
    /// Reserved.
    pub reserved2: u64,
    /// Decremented when the dispatch completes.
    pub completion_signal: hsa_signal_t,
}

/// `hsa_barrier_and_packet_t` (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hsa_barrier_and_packet_t {
    /// Packet header.
    pub header: u16,
    /// Reserved.
    pub reserved0: u16,
    /// Reserved.
    pub reserved1: u32,
    /// Signals to wait for (0: none).
    pub dep_signal: [hsa_signal_t; 5],
    /// Reserved.
    pub reserved2: u64,
    /// Decremented when the barrier completes.
    pub completion_signal: hsa_signal_t,
}

/// `HSA_PACKET_TYPE_INVALID`.
pub const HSA_PACKET_TYPE_INVALID: u16 = 1;
/// `HSA_PACKET_TYPE_KERNEL_DISPATCH`.
pub const HSA_PACKET_TYPE_KERNEL_DISPATCH: u16 = 2;
/// `HSA_PACKET_TYPE_BARRIER_AND`.
pub const HSA_PACKET_TYPE_BARRIER_AND: u16 = 3;
/// `HSA_PACKET_HEADER_TYPE` (bit offset).
pub const HSA_PACKET_HEADER_TYPE: u16 = 0;
/// `HSA_PACKET_HEADER_BARRIER` (bit offset).
pub const HSA_PACKET_HEADER_BARRIER: u16 = 8;
/// `HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE` (bit offset).
pub const HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE: u16 = 9;
/// `HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE` (bit offset).
pub const HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE: u16 = 11;
/// `HSA_FENCE_SCOPE_SYSTEM`.
pub const HSA_FENCE_SCOPE_SYSTEM: u16 = 2;
/// `HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS` (bit offset).
pub const HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS: u16 = 0;

/// `HSA_AGENT_INFO_NAME` (`char[64]`: the ISA's processor, e.g. `gfx90a`).
pub const HSA_AGENT_INFO_NAME: u32 = 0;
/// `HSA_AGENT_INFO_WAVEFRONT_SIZE` (u32).
pub const HSA_AGENT_INFO_WAVEFRONT_SIZE: u32 = 6;
/// `HSA_AGENT_INFO_WORKGROUP_MAX_DIM` (`u16[3]`).
pub const HSA_AGENT_INFO_WORKGROUP_MAX_DIM: u32 = 7;
/// `HSA_AGENT_INFO_WORKGROUP_MAX_SIZE` (u32).
pub const HSA_AGENT_INFO_WORKGROUP_MAX_SIZE: u32 = 8;
/// `HSA_AGENT_INFO_GRID_MAX_DIM` (`hsa_dim3_t`: `u32[3]`).
pub const HSA_AGENT_INFO_GRID_MAX_DIM: u32 = 9;
/// `HSA_AGENT_INFO_GRID_MAX_SIZE` (u32).
pub const HSA_AGENT_INFO_GRID_MAX_SIZE: u32 = 10;
/// `HSA_AGENT_INFO_QUEUE_MAX_SIZE` (u32).
pub const HSA_AGENT_INFO_QUEUE_MAX_SIZE: u32 = 14;
/// `HSA_AGENT_INFO_DEVICE` (`hsa_device_type_t`).
pub const HSA_AGENT_INFO_DEVICE: u32 = 17;
/// `HSA_DEVICE_TYPE_CPU`.
pub const HSA_DEVICE_TYPE_CPU: u32 = 0;
/// `HSA_DEVICE_TYPE_GPU`.
pub const HSA_DEVICE_TYPE_GPU: u32 = 1;
/// `HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT` (u32).
pub const HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: u32 = 0xA002;
/// `HSA_AMD_AGENT_INFO_PRODUCT_NAME` (`char[64]`).
pub const HSA_AMD_AGENT_INFO_PRODUCT_NAME: u32 = 0xA009;

/// `HSA_AMD_SEGMENT_GLOBAL`.
pub const HSA_AMD_SEGMENT_GLOBAL: u32 = 0;
/// `HSA_AMD_SEGMENT_GROUP`.
pub const HSA_AMD_SEGMENT_GROUP: u32 = 3;
/// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT`.
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT: u32 = 1;
/// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED`.
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED: u32 = 2;
/// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED`.
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED: u32 = 4;
/// `HSA_AMD_MEMORY_POOL_INFO_SEGMENT` (`hsa_amd_segment_t`).
pub const HSA_AMD_MEMORY_POOL_INFO_SEGMENT: u32 = 0;
/// `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS` (u32).
pub const HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS: u32 = 1;
/// `HSA_AMD_MEMORY_POOL_INFO_SIZE` (size_t).
pub const HSA_AMD_MEMORY_POOL_INFO_SIZE: u32 = 2;
/// `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED` (bool).
pub const HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED: u32 = 5;

/// `HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS` (`hsa_amd_memory_pool_access_t`).
pub const HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS: u32 = 0;
/// `HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS` (u32).
pub const HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS: u32 = 1;
/// `HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED`.
pub const HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED: u32 = 0;

/// `HSA_QUEUE_TYPE_MULTI`.
pub const HSA_QUEUE_TYPE_MULTI: u32 = 0;
/// `HSA_SIGNAL_CONDITION_LT`.
pub const HSA_SIGNAL_CONDITION_LT: u32 = 2;
/// `HSA_WAIT_STATE_BLOCKED`.
pub const HSA_WAIT_STATE_BLOCKED: u32 = 0;
/// `HSA_PROFILE_FULL`.
pub const HSA_PROFILE_FULL: u32 = 1;
/// `HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT`.
pub const HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT: u32 = 0;
/// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE` (u32).
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE: u32 = 11;
/// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE` (u32).
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE: u32 = 13;
/// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE` (u32).
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE: u32 = 14;
/// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT` (u64).
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: u32 = 22;

/// An agent-iteration callback.
pub type AgentCallback = unsafe extern "C" fn(hsa_agent_t, *mut c_void) -> hsa_status_t;
/// A pool-iteration callback.
pub type PoolCallback = unsafe extern "C" fn(hsa_amd_memory_pool_t, *mut c_void) -> hsa_status_t;
/// A queue-error callback.
pub type QueueCallback = unsafe extern "C" fn(hsa_status_t, *mut hsa_queue_t, *mut c_void);

macro_rules! hsa_table {
    ($($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The HSA functions ordo calls, resolved from one library.
        #[allow(missing_docs)] // each field is the HSA function of the same name
        pub struct Hsa {
            $(pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl Hsa {
            /// Every symbol the table needs, for messages.
            pub const SYMBOLS: &'static [&'static str] = &[$(stringify!($name)),*];

            /// Resolves every function from `lib`.
            ///
            /// # Safety
            /// `lib` is an HSA runtime whose functions have the signatures above, and it is
            /// never unloaded while the table is used.
            unsafe fn resolve(lib: &libloading::Library) -> Result<Self, String> {
                Ok(Self {
                    $($name: {
                        // SAFETY: the caller's contract (the symbol's C signature).
                        let sym = unsafe { lib.get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                            concat!(stringify!($name), "\0").as_bytes()) };
                        *sym.map_err(|_| format!("the HSA runtime has no {}", stringify!($name)))?
                    },)*
                })
            }
        }
    };
}

hsa_table! {
    hsa_init: fn() -> hsa_status_t;
    hsa_shut_down: fn() -> hsa_status_t;
    hsa_status_string: fn(hsa_status_t, *mut *const c_char) -> hsa_status_t;
    hsa_iterate_agents: fn(AgentCallback, *mut c_void) -> hsa_status_t;
    hsa_agent_get_info: fn(hsa_agent_t, u32, *mut c_void) -> hsa_status_t;
    hsa_amd_agent_iterate_memory_pools: fn(hsa_agent_t, PoolCallback, *mut c_void) -> hsa_status_t;
    hsa_amd_memory_pool_get_info: fn(hsa_amd_memory_pool_t, u32, *mut c_void) -> hsa_status_t;
    hsa_amd_memory_pool_allocate: fn(hsa_amd_memory_pool_t, usize, u32, *mut *mut c_void) -> hsa_status_t;
    hsa_amd_memory_pool_free: fn(*mut c_void) -> hsa_status_t;
    hsa_amd_agent_memory_pool_get_info: fn(hsa_agent_t, hsa_amd_memory_pool_t, u32, *mut c_void) -> hsa_status_t;
    hsa_amd_agents_allow_access: fn(u32, *const hsa_agent_t, *const u32, *const c_void) -> hsa_status_t;
    hsa_amd_memory_async_copy: fn(*mut c_void, hsa_agent_t, *const c_void, hsa_agent_t, usize, u32,
        *const hsa_signal_t, hsa_signal_t) -> hsa_status_t;
    hsa_amd_memory_fill: fn(*mut c_void, u32, usize) -> hsa_status_t;
    hsa_signal_create: fn(hsa_signal_value_t, u32, *const hsa_agent_t, *mut hsa_signal_t) -> hsa_status_t;
    hsa_signal_destroy: fn(hsa_signal_t) -> hsa_status_t;
    hsa_signal_load_scacquire: fn(hsa_signal_t) -> hsa_signal_value_t;
    hsa_signal_store_screlease: fn(hsa_signal_t, hsa_signal_value_t);
    hsa_signal_wait_scacquire: fn(hsa_signal_t, u32, hsa_signal_value_t, u64, u32) -> hsa_signal_value_t;
    hsa_queue_create: fn(hsa_agent_t, u32, u32, Option<QueueCallback>, *mut c_void, u32, u32,
        *mut *mut hsa_queue_t) -> hsa_status_t;
    hsa_queue_destroy: fn(*mut hsa_queue_t) -> hsa_status_t;
    hsa_queue_add_write_index_scacq_screl: fn(*const hsa_queue_t, u64) -> u64;
    hsa_queue_load_read_index_scacquire: fn(*const hsa_queue_t) -> u64;
    hsa_code_object_reader_create_from_memory: fn(*const c_void, usize, *mut hsa_code_object_reader_t)
        -> hsa_status_t;
    hsa_code_object_reader_destroy: fn(hsa_code_object_reader_t) -> hsa_status_t;
    hsa_executable_create_alt: fn(u32, u32, *const c_char, *mut hsa_executable_t) -> hsa_status_t;
    hsa_executable_load_agent_code_object: fn(hsa_executable_t, hsa_agent_t, hsa_code_object_reader_t,
        *const c_char, *mut hsa_loaded_code_object_t) -> hsa_status_t;
    hsa_executable_freeze: fn(hsa_executable_t, *const c_char) -> hsa_status_t;
    hsa_executable_destroy: fn(hsa_executable_t) -> hsa_status_t;
    hsa_executable_get_symbol_by_name: fn(hsa_executable_t, *const c_char, *const hsa_agent_t,
        *mut hsa_executable_symbol_t) -> hsa_status_t;
    hsa_executable_symbol_get_info: fn(hsa_executable_symbol_t, u32, *mut c_void) -> hsa_status_t;
}

/// The HSA runtime's library name (Debian's `libhsa-runtime64-1`).
pub const DEFAULT_LIBRARY: &str = "libhsa-runtime64.so.1";

/// Loads `path` and resolves the table; the library stays loaded for the rest of the process.
/// One load per distinct path (later calls for the same path reuse it).
///
/// # Safety
/// The library at `path`, if one loads, is an HSA runtime: loading it runs its initialisers,
/// and it exports the functions of `Hsa` with those C signatures.
pub unsafe fn load(path: &str) -> Result<&'static Hsa, String> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static LOADED: Mutex<Option<HashMap<String, &'static Hsa>>> = Mutex::new(None);
    let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&hsa) = loaded.as_ref().and_then(|m| m.get(path)) {
        return Ok(hsa);
    }
    // SAFETY: the caller's contract (an HSA runtime, whose initialisers are sound to run).
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| format!("cannot load {path}: {e}"))?;
    // SAFETY: the caller's contract (these names with these C signatures); the library is
    // leaked below, so it is never unloaded.
    let table = unsafe { Hsa::resolve(&lib) }?;
    std::mem::forget(lib);
    let hsa: &'static Hsa = Box::leak(Box::new(table));
    loaded.get_or_insert_with(HashMap::new).insert(path.to_string(), hsa);
    Ok(hsa)
}
