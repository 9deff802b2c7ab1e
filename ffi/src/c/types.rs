//! The C types of the ABI: status codes, handle structs, enumerations and plain structs.
//! Everything here is `#[repr(C)]` or a C integer alias and appears in `include/ordo.h`.

use core::ffi::c_void;

use ordo_core::ErrorCode;

/// The status every function returns: `ORDO_SUCCESS` (0) or an `ORDO_ERROR_*` code.
pub type ordo_status_t = i32;

// The values are ErrorCode's (checked at compile time below); literals so cbindgen emits them.
const _: () = {
    assert!(ORDO_SUCCESS == ErrorCode::Success as i32);
    assert!(ORDO_ERROR_UNKNOWN == ErrorCode::Unknown as i32);
    assert!(ORDO_ERROR_INVALID_ARGUMENT == ErrorCode::InvalidArgument as i32);
    assert!(ORDO_ERROR_INVALID_VALUE == ErrorCode::InvalidValue as i32);
    assert!(ORDO_ERROR_INVALID_SIZE == ErrorCode::InvalidSize as i32);
    assert!(ORDO_ERROR_INVALID_ENUMERATION == ErrorCode::InvalidEnumeration as i32);
    assert!(ORDO_ERROR_NULL_POINTER == ErrorCode::NullPointer as i32);
    assert!(ORDO_ERROR_NULL_HANDLE == ErrorCode::NullHandle as i32);
    assert!(ORDO_ERROR_INVALID_HANDLE == ErrorCode::InvalidHandle as i32);
    assert!(ORDO_ERROR_NOT_FOUND == ErrorCode::NotFound as i32);
    assert!(ORDO_ERROR_OUT_OF_RESOURCES == ErrorCode::OutOfResources as i32);
    assert!(ORDO_ERROR_INVALID_BINARY == ErrorCode::InvalidBinary as i32);
    assert!(ORDO_ERROR_UNSUPPORTED == ErrorCode::Unsupported as i32);
    assert!(ORDO_ERROR_BACKEND_FAILURE == ErrorCode::BackendFailure as i32);
    assert!(ORDO_ERROR_UNINITIALIZED == ErrorCode::Uninitialized as i32);
    assert!(ORDO_ERROR_DEVICE_LOST == ErrorCode::DeviceLost as i32);
    assert!(ORDO_ERROR_TEARDOWN_FAILED == ErrorCode::TeardownFailed as i32);
    assert!(ORDO_ERROR_NOT_PRESENT == ErrorCode::NotPresent as i32);
    assert!(ORDO_ERROR_INTERNAL == ErrorCode::Internal as i32);
    assert!(ORDO_ERROR_BUSY == ErrorCode::Busy as i32);
    assert!(ORDO_ERROR_TIMEOUT == ErrorCode::Timeout as i32);
};

/// The call succeeded.
pub const ORDO_SUCCESS: ordo_status_t = 0;
/// An error that fits no other code.
pub const ORDO_ERROR_UNKNOWN: ordo_status_t = 1;
/// An argument is invalid in combination with the others (e.g. objects of two devices).
pub const ORDO_ERROR_INVALID_ARGUMENT: ordo_status_t = 2;
/// A numeric argument is out of range (e.g. a zero grid dimension).
pub const ORDO_ERROR_INVALID_VALUE: ordo_status_t = 3;
/// A size is zero, too large, or runs past the end of an allocation.
pub const ORDO_ERROR_INVALID_SIZE: ordo_status_t = 4;
/// An enumeration value is not one of the defined values.
pub const ORDO_ERROR_INVALID_ENUMERATION: ordo_status_t = 5;
/// A required pointer is NULL.
pub const ORDO_ERROR_NULL_POINTER: ordo_status_t = 6;
/// A handle is null (zero).
pub const ORDO_ERROR_NULL_HANDLE: ordo_status_t = 7;
/// A handle is stale (released, or from before a shutdown), forged, or of another kind.
pub const ORDO_ERROR_INVALID_HANDLE: ordo_status_t = 8;
/// A named thing (kernel, device address) does not exist.
pub const ORDO_ERROR_NOT_FOUND: ordo_status_t = 9;
/// A table, a reference count or device memory is exhausted.
pub const ORDO_ERROR_OUT_OF_RESOURCES: ordo_status_t = 10;
/// A program image is not valid for the device (see ordo_last_error_detail for a JIT log).
pub const ORDO_ERROR_INVALID_BINARY: ordo_status_t = 11;
/// Not supported by this backend, device or build.
pub const ORDO_ERROR_UNSUPPORTED: ordo_status_t = 12;
/// The backend failed with no more specific code.
pub const ORDO_ERROR_BACKEND_FAILURE: ordo_status_t = 13;
/// ordo is not initialised (before ordo_init, or after the final ordo_shutdown).
pub const ORDO_ERROR_UNINITIALIZED: ordo_status_t = 14;
/// The device was lost or a kernel faulted.
pub const ORDO_ERROR_DEVICE_LOST: ordo_status_t = 15;
/// The final shutdown completed but some releases failed (see ordo_last_teardown_report).
pub const ORDO_ERROR_TEARDOWN_FAILED: ordo_status_t = 16;
/// The backend's driver or devices are not present.
pub const ORDO_ERROR_NOT_PRESENT: ordo_status_t = 17;
/// A bug in ordo (e.g. a caught panic); the detail says what.
pub const ORDO_ERROR_INTERNAL: ordo_status_t = 18;
/// The call would wait for the calling thread itself (a lifecycle or create/destroy call, or a
/// wait for host queues, from inside a host kernel or host function; any call from one while
/// another thread's create/destroy call holds the runtime and a thread waits for host queues;
/// the at-exit shutdown when calls in flight do not return in time), an event's elapsed time
/// before its record ran (host device), or a backend is already initialised by another runtime.
pub const ORDO_ERROR_BUSY: ordo_status_t = 19;
/// A wait ran out of time (a communicator's peer that never joined `ordo_comm_create_rank`).
pub const ORDO_ERROR_TIMEOUT: ordo_status_t = 20;

// Handles are distinct one-field structs so that C compilers reject mixing kinds; the runtime
// rejects casts and forgeries. (Written out, not macro-generated: cbindgen reads the source.)

/// A platform (one backend: host, CUDA, ...).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ordo_platform_t {
    /// The handle's bits; 0 is the null handle.
    pub raw: u64,
}

/// A device of a platform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ordo_device_t {
    /// The handle's bits; 0 is the null handle.
    pub raw: u64,
}

/// An in-order queue (a CUDA stream).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ordo_queue_t {
    /// The handle's bits; 0 is the null handle.
    pub raw: u64,
}

/// A graph: the work captured from a queue (`ordo_queue_end_capture`), launched as one
/// submission (`ordo_graph_launch`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ordo_graph_t {
    /// The handle's bits; 0 is the null handle.
    pub raw: u64,
}

/// A communicator: one rank of a group of devices that run collectives together
/// (`ordo_comm_create_all`, `ordo_comm_create_rank`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ordo_comm_t {
    /// The handle's bits; 0 is the null handle.
    pub raw: u64,
}

/// A unique id naming one communicator across processes (NCCL's `ncclUniqueId`): made by
/// `ordo_comm_unique_id` in one process, carried to every rank by any means.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ordo_comm_id_t {
    /// The id's bytes, opaque.
    pub internal: [u8; 128],
}

/// What one rank's part of a collective does (`ordo_collective_t::kind`).
pub type ordo_collective_kind_t = u32;
/// Every rank's `recv` gets the reduction of every rank's `send` (`count` elements each).
pub const ORDO_COLLECTIVE_ALL_REDUCE: ordo_collective_kind_t = 0;
/// Every rank's `recv` gets rank `peer`'s `send` (`count` elements; `send` read on the root only).
pub const ORDO_COLLECTIVE_BROADCAST: ordo_collective_kind_t = 1;
/// Rank `peer`'s `recv` gets the reduction of every rank's `send` (`recv` written on the root only).
pub const ORDO_COLLECTIVE_REDUCE: ordo_collective_kind_t = 2;
/// Every rank's `recv` (`count` × ranks) gets every rank's `send` (`count`), in rank order.
pub const ORDO_COLLECTIVE_ALL_GATHER: ordo_collective_kind_t = 3;
/// Rank r's `recv` (`count`) gets the reduction of block r of every rank's `send` (`count` × ranks).
pub const ORDO_COLLECTIVE_REDUCE_SCATTER: ordo_collective_kind_t = 4;
/// Sends `count` elements of `send` to rank `peer`.
pub const ORDO_COLLECTIVE_SEND: ordo_collective_kind_t = 5;
/// Receives `count` elements from rank `peer` into `recv`.
pub const ORDO_COLLECTIVE_RECV: ordo_collective_kind_t = 6;

/// The element type of a collective's buffers (NCCL's numbering).
pub type ordo_data_type_t = u32;
/// `int8_t`.
pub const ORDO_DATA_INT8: ordo_data_type_t = 0;
/// `uint8_t`.
pub const ORDO_DATA_UINT8: ordo_data_type_t = 1;
/// `int32_t`.
pub const ORDO_DATA_INT32: ordo_data_type_t = 2;
/// `uint32_t`.
pub const ORDO_DATA_UINT32: ordo_data_type_t = 3;
/// `int64_t`.
pub const ORDO_DATA_INT64: ordo_data_type_t = 4;
/// `uint64_t`.
pub const ORDO_DATA_UINT64: ordo_data_type_t = 5;
/// IEEE binary16.
pub const ORDO_DATA_FLOAT16: ordo_data_type_t = 6;
/// `float`.
pub const ORDO_DATA_FLOAT32: ordo_data_type_t = 7;
/// `double`.
pub const ORDO_DATA_FLOAT64: ordo_data_type_t = 8;
/// bfloat16.
pub const ORDO_DATA_BFLOAT16: ordo_data_type_t = 9;

/// How a reduction combines elements (NCCL's numbering).
pub type ordo_reduce_op_t = u32;
/// The sum.
pub const ORDO_REDUCE_SUM: ordo_reduce_op_t = 0;
/// The product.
pub const ORDO_REDUCE_PROD: ordo_reduce_op_t = 1;
/// The maximum.
pub const ORDO_REDUCE_MAX: ordo_reduce_op_t = 2;
/// The minimum.
pub const ORDO_REDUCE_MIN: ordo_reduce_op_t = 3;
/// The sum divided by the rank count (integers: rounded toward zero).
pub const ORDO_REDUCE_AVG: ordo_reduce_op_t = 4;

/// One rank's part of a collective call (`ordo_collective`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ordo_collective_t {
    /// The rank's communicator.
    pub comm: ordo_comm_t,
    /// The queue the work runs on: a queue of the communicator's device.
    pub queue: ordo_queue_t,
    /// What the part does (`ORDO_COLLECTIVE_*`).
    pub kind: ordo_collective_kind_t,
    /// The element type (`ORDO_DATA_*`).
    pub data_type: ordo_data_type_t,
    /// The reduction (`ORDO_REDUCE_*`; read by all-reduce, reduce and reduce-scatter only).
    pub op: ordo_reduce_op_t,
    /// The root (broadcast, reduce) or the peer (send, receive); ignored otherwise.
    pub peer: u32,
    /// Elements per rank.
    pub count: usize,
    /// The device memory read (NULL where the kind reads nothing on this rank).
    pub send: *const c_void,
    /// The device memory written (NULL where the kind writes nothing on this rank).
    pub recv: *mut c_void,
}

/// An event.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ordo_event_t {
    /// The handle's bits; 0 is the null handle.
    pub raw: u64,
}

/// A loaded program.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ordo_program_t {
    /// The handle's bits; 0 is the null handle.
    pub raw: u64,
}

/// A memory allocation named by its identity (`ordo_mem_alloc_handle`), not its address: once
/// the allocation is freed, the handle is stale even if a new allocation gets the same address,
/// so `ordo_mem_release` never frees another allocation.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ordo_allocation_t {
    /// The handle's bits; 0 is the null handle.
    pub raw: u64,
}

/// A kernel of a loaded program.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ordo_kernel_t {
    /// The handle's bits; 0 is the null handle.
    pub raw: u64,
}

/// Where memory lives: `ORDO_MEM_DEVICE`, `ORDO_MEM_HOST` (pinned), `ORDO_MEM_MANAGED`,
/// `ORDO_MEM_REGISTERED` (host memory given to `ordo_host_register`), `ORDO_MEM_GLOBAL` or
/// `ORDO_MEM_ORDERED` (the last three are not kinds `ordo_mem_alloc` takes).
pub type ordo_mem_kind_t = u32;
/// Device memory.
pub const ORDO_MEM_DEVICE: ordo_mem_kind_t = 0;
/// Page-locked host memory visible to the device.
pub const ORDO_MEM_HOST: ordo_mem_kind_t = 1;
/// Managed (unified) memory.
pub const ORDO_MEM_MANAGED: ordo_mem_kind_t = 2;
/// Existing host memory registered with `ordo_host_register` (reported by `ordo_mem_info`; not an
/// allocation kind: `ordo_mem_alloc` refuses it with `ORDO_ERROR_INVALID_ENUMERATION`).
pub const ORDO_MEM_REGISTERED: ordo_mem_kind_t = 3;
/// A loaded program's global variable (`ordo_program_global`; reported by `ordo_mem_info`; not an
/// allocation kind: `ordo_mem_alloc` refuses it with `ORDO_ERROR_INVALID_ENUMERATION` and
/// `ordo_mem_free` with `ORDO_ERROR_INVALID_ARGUMENT`).
pub const ORDO_MEM_GLOBAL: ordo_mem_kind_t = 4;
/// Device memory allocated in a queue's order (`ordo_mem_alloc_async`; reported by
/// `ordo_mem_info`; not a kind `ordo_mem_alloc` takes: `ORDO_ERROR_INVALID_ENUMERATION`).
pub const ORDO_MEM_ORDERED: ordo_mem_kind_t = 5;

/// The direction of a copy.
pub type ordo_copy_kind_t = u32;
/// Host memory to a device allocation.
pub const ORDO_COPY_HOST_TO_DEVICE: ordo_copy_kind_t = 0;
/// A device allocation to host memory.
pub const ORDO_COPY_DEVICE_TO_HOST: ordo_copy_kind_t = 1;
/// Between device allocations.
pub const ORDO_COPY_DEVICE_TO_DEVICE: ordo_copy_kind_t = 2;

/// A device property.
pub type ordo_device_info_t = u32;
/// Name (text).
pub const ORDO_DEVICE_INFO_NAME: ordo_device_info_t = 0;
/// Compute capability (version).
pub const ORDO_DEVICE_INFO_COMPUTE_CAPABILITY: ordo_device_info_t = 1;
/// Total memory in bytes.
pub const ORDO_DEVICE_INFO_TOTAL_MEMORY: ordo_device_info_t = 2;
/// Multiprocessors.
pub const ORDO_DEVICE_INFO_MULTIPROCESSOR_COUNT: ordo_device_info_t = 3;
/// Maximum threads per block.
pub const ORDO_DEVICE_INFO_MAX_THREADS_PER_BLOCK: ordo_device_info_t = 4;
/// Shared memory per block without opt-in, bytes.
pub const ORDO_DEVICE_INFO_MAX_SHARED_MEMORY_PER_BLOCK: ordo_device_info_t = 5;
/// Shared memory per block with opt-in, bytes.
pub const ORDO_DEVICE_INFO_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: ordo_device_info_t = 6;
/// Threads per warp.
pub const ORDO_DEVICE_INFO_WARP_SIZE: ordo_device_info_t = 7;
/// Largest block dimension x (launches beyond any limit fail with ORDO_ERROR_INVALID_VALUE).
pub const ORDO_DEVICE_INFO_MAX_BLOCK_DIM_X: ordo_device_info_t = 8;
/// Largest block dimension y.
pub const ORDO_DEVICE_INFO_MAX_BLOCK_DIM_Y: ordo_device_info_t = 9;
/// Largest block dimension z.
pub const ORDO_DEVICE_INFO_MAX_BLOCK_DIM_Z: ordo_device_info_t = 10;
/// Largest grid dimension x.
pub const ORDO_DEVICE_INFO_MAX_GRID_DIM_X: ordo_device_info_t = 11;
/// Largest grid dimension y.
pub const ORDO_DEVICE_INFO_MAX_GRID_DIM_Y: ordo_device_info_t = 12;
/// Largest grid dimension z.
pub const ORDO_DEVICE_INFO_MAX_GRID_DIM_Z: ordo_device_info_t = 13;
/// Most threads in one launch (UINT64_MAX where only the grid and block limits apply; the host
/// platform: 2^28).
pub const ORDO_DEVICE_INFO_MAX_THREADS_PER_LAUNCH: ordo_device_info_t = 14;
/// The device's vendor (text).
pub const ORDO_DEVICE_INFO_VENDOR: ordo_device_info_t = 15;
/// The driver's version (text; CUDA: as `13.0`).
pub const ORDO_DEVICE_INFO_DRIVER_VERSION: ordo_device_info_t = 16;
/// A unique identifier of the device (text; CUDA: `GPU-` and the UUID in hexadecimal).
pub const ORDO_DEVICE_INFO_UUID: ordo_device_info_t = 17;
/// Maximum clock frequency in MHz (ORDO_ERROR_UNSUPPORTED where the driver does not tell).
pub const ORDO_DEVICE_INFO_CLOCK_RATE_MHZ: ordo_device_info_t = 18;
/// Memory clock frequency in MHz (ORDO_ERROR_UNSUPPORTED where the driver does not tell).
pub const ORDO_DEVICE_INFO_MEMORY_CLOCK_RATE_MHZ: ordo_device_info_t = 19;
/// The PCI-SIG vendor ID of the device's maker (0x10de NVIDIA, 0x1002 AMD; the host device: the
/// CPU's maker, 0x8086 Intel, 0x1022 AMD, ...; `ORDO_ERROR_UNSUPPORTED` where unknown).
pub const ORDO_DEVICE_INFO_VENDOR_ID: ordo_device_info_t = 20;

/// Which field of `ordo_info_value_t` holds the value.
pub type ordo_info_type_t = u32;
/// `integer` holds it.
pub const ORDO_INFO_INTEGER: ordo_info_type_t = 0;
/// `major` and `minor` hold it.
pub const ORDO_INFO_VERSION: ordo_info_type_t = 1;
/// `text` holds it (NUL-terminated).
pub const ORDO_INFO_TEXT: ordo_info_type_t = 2;

/// A device property's value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ordo_info_value_t {
    /// `ORDO_INFO_INTEGER`, `ORDO_INFO_VERSION` or `ORDO_INFO_TEXT`.
    pub type_: ordo_info_type_t,
    /// The number, for `ORDO_INFO_INTEGER`.
    pub integer: u64,
    /// The major version, for `ORDO_INFO_VERSION`.
    pub major: u32,
    /// The minor version, for `ORDO_INFO_VERSION`.
    pub minor: u32,
    /// The text, NUL-terminated, for `ORDO_INFO_TEXT`.
    pub text: [u8; 72],
}

/// What a platform is.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ordo_platform_info_t {
    /// 0 host, 1 CUDA, 2 AMDGPU.
    pub kind: u32,
    /// Devices (0 when absent or unavailable).
    pub device_count: u32,
    /// 1 when the platform is present (usable).
    pub present: u32,
    /// Capability bits (`ORDO_CAP_*`).
    pub capabilities: u32,
    /// Why it is not present: ORDO_SUCCESS when present, ORDO_ERROR_NOT_PRESENT when absent (no
    /// driver or no device), any other status when its driver is present but failed to
    /// initialise (unavailable; the other platforms work).
    pub status: ordo_status_t,
    /// The platform's name, NUL-terminated.
    pub name: [u8; 32],
    /// Why it is absent or unavailable, NUL-terminated (empty when present): the failing driver
    /// call, the driver's name for its error and its number where there are (e.g.
    /// `cuInit: CUDA_ERROR_OPERATING_SYSTEM (304)`).
    pub absent_reason: [u8; 128],
}

/// Queues run asynchronously to the caller.
pub const ORDO_CAP_ASYNC_QUEUES: u32 = 1;
/// Events measure time.
pub const ORDO_CAP_EVENT_TIMING: u32 = 2;
/// Managed memory migrates.
pub const ORDO_CAP_MANAGED_MEMORY: u32 = 4;
/// Kernels may use dynamic shared memory.
pub const ORDO_CAP_SHARED_MEMORY: u32 = 8;
/// Device memory is directly readable by host code.
pub const ORDO_CAP_HOST_ACCESSIBLE_MEMORY: u32 = 16;

/// Where one kernel parameter lies in a packed argument buffer (`ordo_kernel_param_layout`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ordo_param_slot_t {
    /// Offset in bytes from the start of the buffer.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

/// What the cache of queue-ordered memory holds for a device and has served since the init
/// (`ordo_device_cache_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ordo_cache_stats_t {
    /// Bytes the cache holds for the device now.
    pub bytes: u64,
    /// Queue-ordered allocations it served without a driver call.
    pub hits: u64,
    /// Queue-ordered allocations the driver made while the cache was on.
    pub misses: u64,
    /// Blocks it holds for the device now.
    pub blocks: u32,
}

/// A function a queue runs on the host (`ordo_queue_host_function`).
pub type ordo_host_fn_t = Option<unsafe extern "C" fn(*mut core::ffi::c_void)>;

/// Grid and block dimensions and dynamic shared memory of a launch.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ordo_launch_dims_t {
    /// Blocks per grid (x, y, z), each at least 1.
    pub grid: [u32; 3],
    /// Threads per block (x, y, z), each at least 1.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, bytes.
    pub shared_mem_bytes: u32,
}

/// Failures kept in `ordo_teardown_report_t` (more are counted in `overflow`).
pub const ORDO_REPORT_FAILURES: usize = 32;

/// One failed step of a teardown.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ordo_teardown_failure_t {
    /// Platform index (registration order).
    pub platform: u32,
    /// The backend's device ordinal (UINT32_MAX for a backend deinit).
    pub device: u32,
    /// The step: 0 synchronize queue, 1 destroy event, 2 destroy queue, 3 unload program,
    /// 4 free memory, 5 release device, 6 deinit backend.
    pub step: u32,
    /// The translated status.
    pub status: ordo_status_t,
    /// The handle the object had (0 for memory: see `address`).
    pub handle: u64,
    /// For step 4 (free memory), the allocation's address as ordo_mem_alloc returned it; else 0.
    pub address: u64,
    /// The backend's own code (e.g. the CUresult).
    pub native: i64,
    /// The backend's message, NUL-terminated (truncated to fit): the failing driver call, the
    /// driver's name for its error and its number where there are (e.g.
    /// `cuMemFree_v2: CUDA_ERROR_ILLEGAL_ADDRESS (700)`).
    pub message: [u8; 96],
}

/// The report of the last final shutdown.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ordo_teardown_report_t {
    /// Which final shutdown this was (1 for the first).
    pub sequence: u64,
    /// Entries of `failures` used.
    pub failure_count: u32,
    /// Failures that did not fit.
    pub overflow: u32,
    /// Objects released per kind: platform, device, queue, event, program, kernel, allocation, graph,
    /// communicator.
    pub released: [u32; 9],
    /// Steps whose object the driver had already released (e.g. at process exit).
    pub released_by_driver: u32,
    /// The failures, in order.
    pub failures: [ordo_teardown_failure_t; ORDO_REPORT_FAILURES],
}
