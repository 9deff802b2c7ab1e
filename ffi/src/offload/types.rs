//! The types of liboffload's header (`OffloadAPI.h`), value for value: its enumerations, handle
//! types, structs and callbacks. Checked against the header by a C test that includes it.

use super::*;

// Every enumeration of the header, with its values (generated from it; checked against it by
// tests/tests/offload.rs).

/// `ol_alloc_type_t`: Represents the type of allocation made with olMemAlloc.
pub type ol_alloc_type_t = u32;
/// Host allocation
pub const OL_ALLOC_TYPE_HOST: ol_alloc_type_t = 0;
/// Device allocation
pub const OL_ALLOC_TYPE_DEVICE: ol_alloc_type_t = 1;
/// Managed allocation
pub const OL_ALLOC_TYPE_MANAGED: ol_alloc_type_t = 2;
/// One past the last value.
pub const OL_ALLOC_TYPE_LAST: ol_alloc_type_t = 3;

/// `ol_device_fp_capability_flag_t`: Device floating-point capability flags
pub type ol_device_fp_capability_flag_t = u32;
/// Support correctly rounded divide and sqrt
pub const OL_DEVICE_FP_CAPABILITY_FLAG_CORRECTLY_ROUNDED_DIVIDE_SQRT: ol_device_fp_capability_flag_t = 1;
/// Support round to nearest
pub const OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_NEAREST: ol_device_fp_capability_flag_t = 2;
/// Support round to zero
pub const OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_ZERO: ol_device_fp_capability_flag_t = 4;
/// Support round to infinity
pub const OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_INF: ol_device_fp_capability_flag_t = 8;
/// Support INF to NAN
pub const OL_DEVICE_FP_CAPABILITY_FLAG_INF_NAN: ol_device_fp_capability_flag_t = 16;
/// Support denorm
pub const OL_DEVICE_FP_CAPABILITY_FLAG_DENORM: ol_device_fp_capability_flag_t = 32;
/// Support fused multiply-add
pub const OL_DEVICE_FP_CAPABILITY_FLAG_FMA: ol_device_fp_capability_flag_t = 64;
/// Basic floating point operations implemented in software
pub const OL_DEVICE_FP_CAPABILITY_FLAG_SOFT_FLOAT: ol_device_fp_capability_flag_t = 128;
/// One past the last value.
pub const OL_DEVICE_FP_CAPABILITY_FLAG_LAST: ol_device_fp_capability_flag_t = 256;

/// `ol_device_info_t`: Supported device info.
pub type ol_device_info_t = u32;
/// `[ol_device_type_t]` type of the device
pub const OL_DEVICE_INFO_TYPE: ol_device_info_t = 0;
/// `[ol_platform_handle_t]` the platform associated with the device
pub const OL_DEVICE_INFO_PLATFORM: ol_device_info_t = 1;
/// `[char[]`] Device name
pub const OL_DEVICE_INFO_NAME: ol_device_info_t = 2;
/// `[char[]`] Device user-facing marketing name
pub const OL_DEVICE_INFO_PRODUCT_NAME: ol_device_info_t = 3;
/// `[char[]`] Device UID
pub const OL_DEVICE_INFO_UID: ol_device_info_t = 4;
/// `[char[]`] Device vendor
pub const OL_DEVICE_INFO_VENDOR: ol_device_info_t = 5;
/// `[char[]`] Driver version
pub const OL_DEVICE_INFO_DRIVER_VERSION: ol_device_info_t = 6;
/// `[uint32_t]` Maximum total work group size in work items
pub const OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE: ol_device_info_t = 7;
/// `[ol_dimensions_t]` Maximum work group size in each dimension
pub const OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION: ol_device_info_t = 8;
/// `[uint32_t]` Maximum total work items
pub const OL_DEVICE_INFO_MAX_WORK_SIZE: ol_device_info_t = 9;
/// `[ol_dimensions_t]` Maximum work items in each dimension
pub const OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION: ol_device_info_t = 10;
/// `[uint32_t]` A unique vendor device identifier assigned by PCI-SIG
pub const OL_DEVICE_INFO_VENDOR_ID: ol_device_info_t = 11;
/// `[uint32_t]` The number of parallel compute units available to the device
pub const OL_DEVICE_INFO_NUM_COMPUTE_UNITS: ol_device_info_t = 12;
/// `[uint32_t]` The maximum configured clock frequency of this device in MHz
pub const OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY: ol_device_info_t = 13;
/// `[uint32_t]` Memory clock frequency in MHz
pub const OL_DEVICE_INFO_MEMORY_CLOCK_RATE: ol_device_info_t = 14;
/// `[uint32_t]` Number of bits used to represent an address in device memory
pub const OL_DEVICE_INFO_ADDRESS_BITS: ol_device_info_t = 15;
/// `[uint64_t]` The maximum size of memory object allocation in bytes
pub const OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE: ol_device_info_t = 16;
/// `[uint64_t]` The size of global device memory in bytes
pub const OL_DEVICE_INFO_GLOBAL_MEM_SIZE: ol_device_info_t = 17;
/// `[uint64_t]` The maximum size of local shared memory per work group in bytes
pub const OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE: ol_device_info_t = 18;
/// `[ol_device_fp_capability_flags_t]` Single precision floating point capability
pub const OL_DEVICE_INFO_SINGLE_FP_CONFIG: ol_device_info_t = 19;
/// `[ol_device_fp_capability_flags_t]` Double precision floating point capability
pub const OL_DEVICE_INFO_DOUBLE_FP_CONFIG: ol_device_info_t = 20;
/// `[ol_device_fp_capability_flags_t]` Half precision floating point capability
pub const OL_DEVICE_INFO_HALF_FP_CONFIG: ol_device_info_t = 21;
/// `[uint32_t]` Native vector width for char
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR: ol_device_info_t = 22;
/// `[uint32_t]` Native vector width for short
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_SHORT: ol_device_info_t = 23;
/// `[uint32_t]` Native vector width for int
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_INT: ol_device_info_t = 24;
/// `[uint32_t]` Native vector width for long
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_LONG: ol_device_info_t = 25;
/// `[uint32_t]` Native vector width for float
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT: ol_device_info_t = 26;
/// `[uint32_t]` Native vector width for double
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE: ol_device_info_t = 27;
/// `[uint32_t]` Native vector width for half
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF: ol_device_info_t = 28;
/// One past the last value.
pub const OL_DEVICE_INFO_LAST: ol_device_info_t = 29;

/// `ol_device_type_t`: Supported device types.
pub type ol_device_type_t = u32;
/// The default device type as preferred by the runtime
pub const OL_DEVICE_TYPE_DEFAULT: ol_device_type_t = 0;
/// Devices of all types
pub const OL_DEVICE_TYPE_ALL: ol_device_type_t = 1;
/// GPU device type
pub const OL_DEVICE_TYPE_GPU: ol_device_type_t = 2;
/// CPU device type
pub const OL_DEVICE_TYPE_CPU: ol_device_type_t = 3;
/// Host device type
pub const OL_DEVICE_TYPE_HOST: ol_device_type_t = 4;
/// One past the last value.
pub const OL_DEVICE_TYPE_LAST: ol_device_type_t = 5;

/// `ol_errc_t`: Defines Return/Error codes
pub type ol_errc_t = u32;
/// success
pub const OL_ERRC_SUCCESS: ol_errc_t = 0;
/// unknown or internal error
pub const OL_ERRC_UNKNOWN: ol_errc_t = 1;
/// I/O error on host
pub const OL_ERRC_HOST_IO: ol_errc_t = 2;
/// a provided binary image is malformed
pub const OL_ERRC_INVALID_BINARY: ol_errc_t = 3;
/// a pointer argument is null when it should not be
pub const OL_ERRC_INVALID_NULL_POINTER: ol_errc_t = 4;
/// an argument is invalid
pub const OL_ERRC_INVALID_ARGUMENT: ol_errc_t = 5;
/// requested object was not found in the binary image
pub const OL_ERRC_NOT_FOUND: ol_errc_t = 6;
/// out of resources
pub const OL_ERRC_OUT_OF_RESOURCES: ol_errc_t = 7;
/// invalid size or dimensions (e.g., must not be zero, or is out of bounds)
pub const OL_ERRC_INVALID_SIZE: ol_errc_t = 8;
/// enumerator argument is not valid
pub const OL_ERRC_INVALID_ENUMERATION: ol_errc_t = 9;
/// a required binary (linker, etc.) was not found on the host
pub const OL_ERRC_HOST_TOOL_NOT_FOUND: ol_errc_t = 10;
/// invalid value
pub const OL_ERRC_INVALID_VALUE: ol_errc_t = 11;
/// generic error code for features currently unimplemented by the device/backend
pub const OL_ERRC_UNIMPLEMENTED: ol_errc_t = 12;
/// generic error code for features unsupported by the device/backend
pub const OL_ERRC_UNSUPPORTED: ol_errc_t = 13;
/// assembler failure while processing binary image
pub const OL_ERRC_ASSEMBLE_FAILURE: ol_errc_t = 14;
/// jit compile failure while processing binary image
pub const OL_ERRC_COMPILE_FAILURE: ol_errc_t = 15;
/// linker failure while processing binary image
pub const OL_ERRC_LINK_FAILURE: ol_errc_t = 16;
/// the plugin backend is in an invalid or unsupported state
pub const OL_ERRC_BACKEND_FAILURE: ol_errc_t = 17;
/// not initialized
pub const OL_ERRC_UNINITIALIZED: ol_errc_t = 18;
/// a handle argument is null when it should not be
pub const OL_ERRC_INVALID_NULL_HANDLE: ol_errc_t = 19;
/// invalid platform
pub const OL_ERRC_INVALID_PLATFORM: ol_errc_t = 20;
/// invalid device
pub const OL_ERRC_INVALID_DEVICE: ol_errc_t = 21;
/// invalid queue
pub const OL_ERRC_INVALID_QUEUE: ol_errc_t = 22;
/// invalid event
pub const OL_ERRC_INVALID_EVENT: ol_errc_t = 23;
/// the operation does not support this symbol kind
pub const OL_ERRC_SYMBOL_KIND: ol_errc_t = 24;
/// One past the last value.
pub const OL_ERRC_LAST: ol_errc_t = 25;

/// `ol_event_info_t`: Supported event info.
pub type ol_event_info_t = u32;
/// `[ol_queue_handle_t]` The handle of the queue associated with the device.
pub const OL_EVENT_INFO_QUEUE: ol_event_info_t = 0;
/// `[bool]` True if and only if the event is complete.
pub const OL_EVENT_INFO_IS_COMPLETE: ol_event_info_t = 1;
/// One past the last value.
pub const OL_EVENT_INFO_LAST: ol_event_info_t = 2;

/// `ol_mem_info_t`: Supported memory info.
pub type ol_mem_info_t = u32;
/// `[ol_device_handle_t]` The handle of the device associated with the allocation.
pub const OL_MEM_INFO_DEVICE: ol_mem_info_t = 0;
/// `[void *]` Base address of this allocation.
pub const OL_MEM_INFO_BASE: ol_mem_info_t = 1;
/// `[size_t]` Size of this allocation in bytes.
pub const OL_MEM_INFO_SIZE: ol_mem_info_t = 2;
/// `[ol_alloc_type_t]` Type of this allocation.
pub const OL_MEM_INFO_TYPE: ol_mem_info_t = 3;
/// One past the last value.
pub const OL_MEM_INFO_LAST: ol_mem_info_t = 4;

/// `ol_platform_backend_t`: Identifies the native backend of the platform.
pub type ol_platform_backend_t = u32;
/// The backend is not recognized
pub const OL_PLATFORM_BACKEND_UNKNOWN: ol_platform_backend_t = 0;
/// The backend is CUDA
pub const OL_PLATFORM_BACKEND_CUDA: ol_platform_backend_t = 1;
/// The backend is AMDGPU
pub const OL_PLATFORM_BACKEND_AMDGPU: ol_platform_backend_t = 2;
/// The backend is Level Zero
pub const OL_PLATFORM_BACKEND_LEVEL_ZERO: ol_platform_backend_t = 3;
/// The backend is the host
pub const OL_PLATFORM_BACKEND_HOST: ol_platform_backend_t = 4;
/// One past the last value.
pub const OL_PLATFORM_BACKEND_LAST: ol_platform_backend_t = 5;

/// `ol_platform_info_t`: Supported platform info.
pub type ol_platform_info_t = u32;
/// `[char[]`] The string denoting name of the platform. The size of the info needs to be dynamically queried.
pub const OL_PLATFORM_INFO_NAME: ol_platform_info_t = 0;
/// `[char[]`] The string denoting name of the vendor of the platform. The size of the info needs to be dynamically queried.
pub const OL_PLATFORM_INFO_VENDOR_NAME: ol_platform_info_t = 1;
/// `[char[]`] The string denoting the version of the platform. The size of the info needs to be dynamically queried.
pub const OL_PLATFORM_INFO_VERSION: ol_platform_info_t = 2;
/// `[ol_platform_backend_t]` The native backend of the platform.
pub const OL_PLATFORM_INFO_BACKEND: ol_platform_info_t = 3;
/// One past the last value.
pub const OL_PLATFORM_INFO_LAST: ol_platform_info_t = 4;

/// `ol_queue_info_t`: Supported queue info.
pub type ol_queue_info_t = u32;
/// `[ol_device_handle_t]` The handle of the device associated with the queue.
pub const OL_QUEUE_INFO_DEVICE: ol_queue_info_t = 0;
/// `[bool]` True if the queue is known to be empty. May be unconditionally false if the device does not support status queries.
pub const OL_QUEUE_INFO_EMPTY: ol_queue_info_t = 1;
/// One past the last value.
pub const OL_QUEUE_INFO_LAST: ol_queue_info_t = 2;

/// `ol_symbol_info_t`: Supported symbol info.
pub type ol_symbol_info_t = u32;
/// `[ol_symbol_kind_t]` The kind of this symbol.
pub const OL_SYMBOL_INFO_KIND: ol_symbol_info_t = 0;
/// `[void *]` The address in memory for this global variable.
pub const OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS: ol_symbol_info_t = 1;
/// `[size_t]` The size in bytes for this global variable.
pub const OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE: ol_symbol_info_t = 2;
/// One past the last value.
pub const OL_SYMBOL_INFO_LAST: ol_symbol_info_t = 3;

/// `ol_symbol_kind_t`: The kind of a symbol
pub type ol_symbol_kind_t = u32;
/// a kernel object
pub const OL_SYMBOL_KIND_KERNEL: ol_symbol_kind_t = 0;
/// a global variable
pub const OL_SYMBOL_KIND_GLOBAL_VARIABLE: ol_symbol_kind_t = 1;
/// One past the last value.
pub const OL_SYMBOL_KIND_LAST: ol_symbol_kind_t = 2;

/// Details of an error (`ol_error_struct_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ol_error_struct_t {
    /// The error code.
    pub Code: ol_errc_t,
    /// NUL-terminated details.
    pub Details: *const c_char,
}

/// NULL on success, else the error.
pub type ol_result_t = *const ol_error_struct_t;
/// A platform (an ordo platform handle, or liboffload's host platform).
pub type ol_platform_handle_t = *mut c_void;
/// A device (an ordo device handle, or liboffload's host device).
pub type ol_device_handle_t = *mut c_void;
/// A queue (an ordo queue handle).
pub type ol_queue_handle_t = *mut c_void;
/// An event (an ordo event handle).
pub type ol_event_handle_t = *mut c_void;
/// A program (an ordo program handle).
pub type ol_program_handle_t = *mut c_void;
/// A symbol (an ordo kernel or global-variable handle).
pub type ol_symbol_handle_t = *mut c_void;
/// Unused by the API (declared by the header).
pub type ol_context_handle_t = *mut c_void;
/// `olIterateDevices`'s callback.
pub type ol_device_iterate_cb_t = Option<unsafe extern "C" fn(ol_device_handle_t, *mut c_void) -> bool>;
/// `olLaunchHostFunction`'s callback.
pub type ol_host_function_cb_t = Option<unsafe extern "C" fn(*mut c_void)>;

/// Source location of a call (`ol_code_location_t`; accepted and not used).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ol_code_location_t {
    /// Function name.
    pub FunctionName: *const c_char,
    /// Source file.
    pub SourceFile: *const c_char,
    /// Line.
    pub LineNumber: u32,
    /// Column.
    pub ColumnNumber: u32,
}

/// Three dimensions.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ol_dimensions_t {
    /// X
    pub x: u32,
    /// Y
    pub y: u32,
    /// Z
    pub z: u32,
}

/// A launch's size arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ol_kernel_launch_size_args_t {
    /// Number of work dimensions (1 to 3; the others are taken as 1).
    pub Dimensions: usize,
    /// Work groups in each dimension.
    pub NumGroups: ol_dimensions_t,
    /// Work-group size in each dimension.
    pub GroupSize: ol_dimensions_t,
    /// Dynamic shared memory in bytes.
    pub DynSharedMemory: usize,
}

/// Every `ol_device_fp_capability_flag_t` but `SOFT_FLOAT`: IEEE arithmetic in hardware.
pub(super) const FP_IEEE: u32 = OL_DEVICE_FP_CAPABILITY_FLAG_SOFT_FLOAT - 1;
