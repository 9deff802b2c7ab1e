//! LLVM 22.1.8 liboffload's `ol*` API (Debian's `offload/OffloadAPI.h`) on ordo's default runtime
//! (feature `offload`, 64-bit targets), so that a program written for liboffload links ordo
//! instead. Types and values match the header exactly (checked by a C test that includes it).
//!
//! - `ol_result_t` is NULL on success, else a pointer to the calling thread's error struct: the
//!   liboffload code and ordo's detail text. It stays valid, unchanged, until the thread's next
//!   failing `ol*` call.
//! - Handles are ordo handles cast to the opaque pointer types (platforms, devices, queues,
//!   events, programs; a kernel symbol is a kernel handle, a global-variable symbol a
//!   `Global` handle). Nothing is ever dereferenced: a stale, released or forged handle is
//!   rejected by the runtime with the matching code (`OL_ERRC_INVALID_PLATFORM`, `_DEVICE`,
//!   `_QUEUE`, `_EVENT`; programs and symbols, which have no code of their own:
//!   `OL_ERRC_INVALID_ARGUMENT`).
//! - Check order, as liboffload's generated validation: initialisation (`OL_ERRC_UNINITIALIZED`),
//!   then NULL handles (`INVALID_NULL_HANDLE`), then NULL pointers (`INVALID_NULL_POINTER`), then
//!   sizes and enumerations, then the call itself.
//! - liboffload's host platform (`OL_PLATFORM_BACKEND_HOST`) with its one host device stands for
//!   plain host memory in `olMemcpy`: no allocations, queues or programs on it
//!   (`OL_ERRC_UNSUPPORTED`). ordo's own host backend is an ordinary accelerator here (device type
//!   CPU, backend `OL_PLATFORM_BACKEND_UNKNOWN`).
//! - `olInit`/`olShutDown` are ordo's reference-counted init and shutdown: the last shutdown
//!   releases every object in ordo's documented order; later calls get `OL_ERRC_UNINITIALIZED`.
#![allow(non_snake_case)] // liboffload's parameter and field names are the ABI's.

use core::ffi::{c_char, c_void};
use std::cell::{RefCell, UnsafeCell};
use std::collections::HashMap;
use std::sync::Mutex;

use ordo_core::{
    BackendKind, Device, DeviceInfo, DevicePtr, Error, ErrorCode, Event, Global, InfoValue, Kernel, KernelArgs,
    LaunchDims, MemKind, ObjectKind, ParamSlot, Platform, Program, Queue, RawHandle, Shutdown,
};

use crate::runtime;

// ---- the header's types ---------------------------------------------------------------------

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
const FP_IEEE: u32 = OL_DEVICE_FP_CAPABILITY_FLAG_SOFT_FLOAT - 1;

// ---- errors ---------------------------------------------------------------------------------

/// An `ol*` failure: a liboffload code and a detail.
struct OlError {
    code: ol_errc_t,
    detail: &'static str,
}

type OlResult<T> = Result<T, OlError>;

fn err(code: ol_errc_t, detail: &'static str) -> OlError {
    OlError { code, detail }
}

/// Which kind of handle an ordo `InvalidHandle` is about, for its liboffload code.
#[derive(Clone, Copy)]
enum Arg {
    Platform,
    Device,
    Queue,
    Event,
    Other,
}

/// liboffload's code for an ordo error about argument `arg`.
fn code_of(e: &Error, arg: Arg) -> ol_errc_t {
    match e.code {
        ErrorCode::Success => OL_ERRC_SUCCESS,
        ErrorCode::InvalidHandle => match arg {
            Arg::Platform => OL_ERRC_INVALID_PLATFORM,
            Arg::Device => OL_ERRC_INVALID_DEVICE,
            Arg::Queue => OL_ERRC_INVALID_QUEUE,
            Arg::Event => OL_ERRC_INVALID_EVENT,
            Arg::Other => OL_ERRC_INVALID_ARGUMENT,
        },
        ErrorCode::InvalidArgument | ErrorCode::Busy => OL_ERRC_INVALID_ARGUMENT,
        ErrorCode::InvalidValue => OL_ERRC_INVALID_VALUE,
        ErrorCode::InvalidSize => OL_ERRC_INVALID_SIZE,
        ErrorCode::InvalidEnumeration => OL_ERRC_INVALID_ENUMERATION,
        ErrorCode::NullPointer => OL_ERRC_INVALID_NULL_POINTER,
        ErrorCode::NullHandle => OL_ERRC_INVALID_NULL_HANDLE,
        ErrorCode::NotFound => OL_ERRC_NOT_FOUND,
        ErrorCode::OutOfResources => OL_ERRC_OUT_OF_RESOURCES,
        ErrorCode::InvalidBinary => OL_ERRC_INVALID_BINARY,
        ErrorCode::Unsupported | ErrorCode::NotPresent => OL_ERRC_UNSUPPORTED,
        ErrorCode::Uninitialized => OL_ERRC_UNINITIALIZED,
        ErrorCode::BackendFailure | ErrorCode::DeviceLost | ErrorCode::TeardownFailed => OL_ERRC_BACKEND_FAILURE,
        ErrorCode::Unknown | ErrorCode::Internal => OL_ERRC_UNKNOWN,
    }
}

/// Converts an ordo result, naming the argument its handle errors are about.
fn on<T>(arg: Arg, r: ordo_core::Result<T>) -> OlResult<T> {
    r.map_err(|e| OlError { code: code_of(&e, arg), detail: e.message })
}

/// The calling thread's error struct and its detail text.
struct ErrorSlot {
    error: ol_error_struct_t,
    text: [u8; 256],
}

thread_local! {
    static LAST_ERROR: UnsafeCell<ErrorSlot> = const {
        UnsafeCell::new(ErrorSlot {
            error: ol_error_struct_t { Code: OL_ERRC_SUCCESS, Details: core::ptr::null() },
            text: [0; 256],
        })
    };
}

/// Stores `e` in the calling thread's error struct and returns a pointer to it.
fn fail(e: OlError) -> ol_result_t {
    LAST_ERROR.with(|slot| {
        let slot = slot.get();
        // SAFETY: the slot belongs to this thread; no reference to it is held (callers only keep
        // the raw pointer returned, and read it between calls).
        unsafe {
            let text = &mut (*slot).text;
            let n = e.detail.len().min(text.len() - 1);
            text[..n].copy_from_slice(&e.detail.as_bytes()[..n]);
            text[n] = 0;
            (*slot).error = ol_error_struct_t { Code: e.code, Details: text.as_ptr().cast() };
            &(*slot).error as *const ol_error_struct_t
        }
    })
}

/// Runs an entry point's body; a panic becomes `OL_ERRC_UNKNOWN` (it never crosses into C).
#[inline]
fn entry(body: impl FnOnce() -> OlResult<()>) -> ol_result_t {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(Ok(())) => core::ptr::null(),
        Ok(Err(e)) => fail(e),
        Err(_) => fail(err(OL_ERRC_UNKNOWN, "internal error: a panic was caught at the C boundary")),
    }
}

/// `OL_ERRC_UNINITIALIZED` unless ordo is initialised (the first check of every entry point).
fn ready() -> OlResult<()> {
    match runtime().state() {
        ordo_core::State::Ready(_) => Ok(()),
        _ => Err(err(OL_ERRC_UNINITIALIZED, "ordo is not initialised: call olInit first")),
    }
}

fn handle<T>(h: *mut T, what: &'static str) -> OlResult<u64> {
    if h.is_null() { Err(err(OL_ERRC_INVALID_NULL_HANDLE, what)) } else { Ok(h as u64) }
}

fn pointer<T>(p: *const T, what: &'static str) -> OlResult<()> {
    if p.is_null() { Err(err(OL_ERRC_INVALID_NULL_POINTER, what)) } else { Ok(()) }
}

fn as_handle(raw: u64) -> *mut c_void {
    raw as usize as *mut c_void
}

// ---- liboffload's host platform and device -------------------------------------------------

static HOST_PLATFORM: u8 = 1;
static HOST_DEVICE: u8 = 2;

fn host_platform() -> ol_platform_handle_t {
    (&raw const HOST_PLATFORM).cast_mut().cast()
}

fn host_device() -> ol_device_handle_t {
    (&raw const HOST_DEVICE).cast_mut().cast()
}

/// A device argument: liboffload's host device or an ordo device (checked live).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dev {
    Host,
    Ordo(Device),
}

fn device(h: ol_device_handle_t) -> OlResult<Dev> {
    if h == host_device() {
        return Ok(Dev::Host);
    }
    let d = Device::from_raw(h as u64);
    on(Arg::Device, runtime().device_platform(d))?;
    Ok(Dev::Ordo(d))
}

/// An ordo device argument: the host device is `OL_ERRC_UNSUPPORTED` for `what`.
fn ordo_device(h: ol_device_handle_t, what: &'static str) -> OlResult<Device> {
    match device(h)? {
        Dev::Host => Err(err(OL_ERRC_UNSUPPORTED, what)),
        Dev::Ordo(d) => Ok(d),
    }
}

fn queue(h: ol_queue_handle_t) -> Queue {
    Queue::from_raw(h as u64)
}

fn event(h: ol_event_handle_t) -> Event {
    Event::from_raw(h as u64)
}

// ---- state the API keeps beside the runtime ---------------------------------------------------

/// The queue each event was created on (`OL_EVENT_INFO_QUEUE`), and each device's queue for
/// launches and fills without one. Handles are never reused, so a stale entry is harmless; both
/// maps are emptied when a final `olShutDown` tears the runtime down.
struct Side {
    event_queue: HashMap<u64, u64>,
    sync_queue: HashMap<u64, u64>,
}

static SIDE: Mutex<Option<Side>> = Mutex::new(None);

fn side<R>(f: impl FnOnce(&mut Side) -> R) -> R {
    let mut guard = SIDE.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(|| Side { event_queue: HashMap::new(), sync_queue: HashMap::new() }))
}

/// The device's queue for work submitted without one (created on first use).
fn sync_queue(d: Device) -> OlResult<Queue> {
    let rt = runtime();
    if let Some(q) = side(|s| s.sync_queue.get(&d.to_raw()).copied()) {
        if rt.queue_device(Queue::from_raw(q)) == Ok(d) {
            return Ok(Queue::from_raw(q));
        }
    }
    let q = on(Arg::Device, rt.queue_create(d))?;
    // Another thread may have made one meanwhile and be using it: keep that one (never destroy
    // a queue another thread may hold) unless it went stale.
    let kept = side(|s| match s.sync_queue.get(&d.to_raw()) {
        Some(&other) if rt.queue_device(Queue::from_raw(other)) == Ok(d) => other,
        _ => {
            s.sync_queue.insert(d.to_raw(), q.to_raw());
            q.to_raw()
        }
    });
    if kept != q.to_raw() {
        let _ = rt.queue_destroy(q);
    }
    Ok(Queue::from_raw(kept))
}

// ---- info queries -----------------------------------------------------------------------------

/// A property's value.
enum Info {
    U32(u32),
    U64(u64),
    Usize(usize),
    Ptr(*mut c_void),
    Bool(bool),
    Dims(ol_dimensions_t),
    Text(heapless::String<80>),
}

fn text(s: &str) -> Info {
    Info::Text(ordo_core::text_prefix(s))
}

impl Info {
    fn size(&self) -> usize {
        match self {
            Self::U32(_) => 4,
            Self::U64(_) => 8,
            Self::Usize(_) | Self::Ptr(_) => size_of::<usize>(),
            Self::Bool(_) => size_of::<bool>(),
            Self::Dims(_) => size_of::<ol_dimensions_t>(),
            Self::Text(s) => s.len() + 1,
        }
    }

    /// Writes the value to `out`.
    ///
    /// # Safety
    /// `out` is valid for `self.size()` bytes.
    unsafe fn write(&self, out: *mut c_void) {
        // SAFETY: the caller's contract; unaligned writes (C gives no alignment promise for void*).
        unsafe {
            match self {
                Self::U32(v) => out.cast::<u32>().write_unaligned(*v),
                Self::U64(v) => out.cast::<u64>().write_unaligned(*v),
                Self::Usize(v) => out.cast::<usize>().write_unaligned(*v),
                Self::Ptr(v) => out.cast::<*mut c_void>().write_unaligned(*v),
                Self::Bool(v) => out.cast::<bool>().write(*v),
                Self::Dims(v) => out.cast::<ol_dimensions_t>().write_unaligned(*v),
                Self::Text(s) => {
                    core::ptr::copy_nonoverlapping(s.as_ptr(), out.cast::<u8>(), s.len());
                    out.cast::<u8>().add(s.len()).write(0);
                }
            }
        }
    }
}

/// The body of an `ol*Info` call after its handle checks: a non-NULL value of non-zero size, the
/// query, then the write when the value fits.
///
/// # Safety
/// `value` is NULL or valid for `size` bytes.
unsafe fn value_out(size: usize, value: *mut c_void, query: impl FnOnce() -> OlResult<Info>) -> OlResult<()> {
    pointer(value, "NULL == PropValue")?;
    if size == 0 {
        return Err(err(OL_ERRC_INVALID_SIZE, "PropSize == 0"));
    }
    let v = query()?;
    if size < v.size() {
        return Err(err(OL_ERRC_INVALID_SIZE, "PropSize is less than the size of the property's value"));
    }
    // SAFETY: the caller's contract; `size >= v.size()`.
    unsafe { v.write(value) };
    Ok(())
}

/// The body of an `ol*InfoSize` call after its handle checks.
///
/// # Safety
/// `ret` is NULL or writable.
unsafe fn size_out(ret: *mut usize, query: impl FnOnce() -> OlResult<Info>) -> OlResult<()> {
    pointer(ret, "NULL == PropSizeRet")?;
    let size = query()?.size();
    // SAFETY: non-NULL, writable by the caller's contract.
    unsafe { ret.write(size) };
    Ok(())
}

fn bad_enum() -> OlError {
    err(OL_ERRC_INVALID_ENUMERATION, "unknown property or kind (enumeration value)")
}

fn platform_info(p: ol_platform_handle_t, prop: u32) -> OlResult<Info> {
    if prop >= OL_PLATFORM_INFO_LAST {
        return Err(bad_enum());
    }
    let (name, vendor, backend) = if p == host_platform() {
        ("Host", "ordo", OL_PLATFORM_BACKEND_HOST)
    } else {
        let info = on(Arg::Platform, runtime().platform_info(Platform::from_raw(p as u64)))?;
        match info.kind {
            BackendKind::Cuda => ("CUDA", "NVIDIA Corporation", OL_PLATFORM_BACKEND_CUDA),
            BackendKind::Amdgpu => ("AMDGPU", "Advanced Micro Devices, Inc.", OL_PLATFORM_BACKEND_AMDGPU),
            BackendKind::Host => ("ordo host", "ordo", OL_PLATFORM_BACKEND_UNKNOWN),
            BackendKind::Scripted => ("ordo scripted", "ordo", OL_PLATFORM_BACKEND_UNKNOWN),
        }
    };
    Ok(match prop {
        OL_PLATFORM_INFO_NAME => text(name),
        OL_PLATFORM_INFO_VENDOR_NAME => text(vendor),
        OL_PLATFORM_INFO_VERSION => text(concat!("v0.0.1 (ordo ", env!("CARGO_PKG_VERSION"), ")")),
        _ => Info::U32(backend),
    })
}

fn device_info(h: ol_device_handle_t, prop: u32) -> OlResult<Info> {
    if prop >= OL_DEVICE_INFO_LAST {
        return Err(bad_enum());
    }
    let d = match device(h)? {
        Dev::Host => return Ok(host_device_info(prop)),
        Dev::Ordo(d) => d,
    };
    let rt = runtime();
    let platform = on(Arg::Device, rt.device_platform(d))?;
    let kind = on(Arg::Device, rt.platform_info(platform))?.kind;
    let int = |key| -> OlResult<u64> {
        match on(Arg::Device, rt.device_info(d, key))? {
            InfoValue::Int(v) => Ok(v),
            _ => Err(err(OL_ERRC_UNKNOWN, "device property has an unexpected type")),
        }
    };
    let u32_of = |key| int(key).map(|v| Info::U32(v.min(u64::from(u32::MAX)) as u32));
    let string = |key| on(Arg::Device, rt.device_info(d, key)).map(|v| text(&v.to_string()));
    let per_dim = |block: [DeviceInfo; 3], grid: Option<[DeviceInfo; 3]>| -> OlResult<Info> {
        let mut out = [0u32; 3];
        for i in 0..3 {
            let mut v = int(block[i])?;
            if let Some(g) = grid {
                v = v.saturating_mul(int(g[i])?);
            }
            out[i] = v.min(u64::from(u32::MAX)) as u32;
        }
        Ok(Info::Dims(ol_dimensions_t { x: out[0], y: out[1], z: out[2] }))
    };
    const BLOCK: [DeviceInfo; 3] = [DeviceInfo::MaxBlockDimX, DeviceInfo::MaxBlockDimY, DeviceInfo::MaxBlockDimZ];
    const GRID: [DeviceInfo; 3] = [DeviceInfo::MaxGridDimX, DeviceInfo::MaxGridDimY, DeviceInfo::MaxGridDimZ];
    Ok(match prop {
        OL_DEVICE_INFO_TYPE => {
            Info::U32(if kind == BackendKind::Host { OL_DEVICE_TYPE_CPU } else { OL_DEVICE_TYPE_GPU })
        }
        OL_DEVICE_INFO_PLATFORM => Info::Ptr(as_handle(platform.to_raw())),
        OL_DEVICE_INFO_NAME | OL_DEVICE_INFO_PRODUCT_NAME => string(DeviceInfo::Name)?,
        OL_DEVICE_INFO_UID => string(DeviceInfo::Uuid)?,
        OL_DEVICE_INFO_VENDOR => string(DeviceInfo::Vendor)?,
        OL_DEVICE_INFO_DRIVER_VERSION => string(DeviceInfo::DriverVersion)?,
        OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE => u32_of(DeviceInfo::MaxThreadsPerBlock)?,
        OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION => per_dim(BLOCK, None)?,
        OL_DEVICE_INFO_MAX_WORK_SIZE => u32_of(DeviceInfo::MaxThreadsPerLaunch)?,
        OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION => per_dim(BLOCK, Some(GRID))?,
        OL_DEVICE_INFO_VENDOR_ID => Info::U32(match kind {
            BackendKind::Cuda => 0x10de,
            BackendKind::Amdgpu => 0x1002,
            _ => 0,
        }),
        OL_DEVICE_INFO_NUM_COMPUTE_UNITS => u32_of(DeviceInfo::MultiprocessorCount)?,
        // 0 where the backend does not know its clocks (ordo's host backend).
        OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY => u32_of(DeviceInfo::ClockRateMhz).or_else(unknown_as_zero)?,
        OL_DEVICE_INFO_MEMORY_CLOCK_RATE => u32_of(DeviceInfo::MemoryClockRateMhz).or_else(unknown_as_zero)?,
        OL_DEVICE_INFO_ADDRESS_BITS => Info::U32(64),
        OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE | OL_DEVICE_INFO_GLOBAL_MEM_SIZE => Info::U64(int(DeviceInfo::TotalMemory)?),
        OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE => Info::U64(int(DeviceInfo::MaxSharedMemoryPerBlockOptin)?),
        OL_DEVICE_INFO_SINGLE_FP_CONFIG..=OL_DEVICE_INFO_HALF_FP_CONFIG => Info::U32(FP_IEEE),
        _ => Info::U32(1), // native vector widths
    })
}

fn unknown_as_zero(e: OlError) -> OlResult<Info> {
    if e.code == OL_ERRC_UNSUPPORTED { Ok(Info::U32(0)) } else { Err(e) }
}

/// liboffload's host device: the values Debian's liboffload 22.1.8 reports for it where they
/// describe the host (name, UID, vendor, version), ordo's where they are its own.
fn host_device_info(prop: u32) -> Info {
    match prop {
        OL_DEVICE_INFO_TYPE => Info::U32(OL_DEVICE_TYPE_HOST),
        OL_DEVICE_INFO_PLATFORM => Info::Ptr(host_platform()),
        OL_DEVICE_INFO_NAME | OL_DEVICE_INFO_PRODUCT_NAME => text("Virtual Host Device"),
        OL_DEVICE_INFO_UID => text("HOST"),
        OL_DEVICE_INFO_VENDOR => text("ordo"),
        OL_DEVICE_INFO_DRIVER_VERSION => text(env!("CARGO_PKG_VERSION")),
        OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE
        | OL_DEVICE_INFO_NUM_COMPUTE_UNITS
        | OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR..=OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE => Info::U32(1),
        OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION => Info::Dims(ol_dimensions_t { x: 1, y: 1, z: 1 }),
        OL_DEVICE_INFO_MAX_WORK_SIZE => Info::U32(u32::MAX),
        OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION => {
            Info::Dims(ol_dimensions_t { x: u32::MAX, y: u32::MAX, z: u32::MAX })
        }
        OL_DEVICE_INFO_ADDRESS_BITS => Info::U32(64),
        OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE..=OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE => Info::U64(0),
        OL_DEVICE_INFO_SINGLE_FP_CONFIG | OL_DEVICE_INFO_DOUBLE_FP_CONFIG => Info::U32(FP_IEEE),
        _ => Info::U32(0),
    }
}

fn queue_info(q: ol_queue_handle_t, prop: u32) -> OlResult<Info> {
    if prop >= OL_QUEUE_INFO_LAST {
        return Err(bad_enum());
    }
    let rt = runtime();
    let d = on(Arg::Queue, rt.queue_device(queue(q)))?;
    Ok(match prop {
        OL_QUEUE_INFO_DEVICE => Info::Ptr(as_handle(d.to_raw())),
        _ => Info::Bool(on(Arg::Queue, rt.queue_query(queue(q)))?),
    })
}

fn event_info(e: ol_event_handle_t, prop: u32) -> OlResult<Info> {
    if prop >= OL_EVENT_INFO_LAST {
        return Err(bad_enum());
    }
    let rt = runtime();
    on(Arg::Event, rt.event_device(event(e)))?;
    Ok(match prop {
        OL_EVENT_INFO_QUEUE => Info::Ptr(as_handle(side(|s| s.event_queue.get(&(e as u64)).copied()).unwrap_or(0))),
        _ => Info::Bool(on(Arg::Event, rt.event_query(event(e)))?),
    })
}

fn mem_info(ptr: *const c_void, prop: u32) -> OlResult<Info> {
    if prop >= OL_MEM_INFO_LAST {
        return Err(bad_enum());
    }
    let (base, size, kind, d) = match runtime().mem_info(DevicePtr(ptr as u64)) {
        Err(e) if e.code == ErrorCode::NotFound => {
            return Err(err(OL_ERRC_NOT_FOUND, "the pointer is in no allocation ordo made or registered"));
        }
        r => on(Arg::Other, r)?,
    };
    Ok(match prop {
        OL_MEM_INFO_DEVICE => Info::Ptr(as_handle(d.to_raw())),
        OL_MEM_INFO_BASE => Info::Ptr(base.as_ptr()),
        OL_MEM_INFO_SIZE => Info::Usize(size),
        _ => Info::U32(match kind {
            MemKind::Host | MemKind::Registered => OL_ALLOC_TYPE_HOST,
            MemKind::Managed => OL_ALLOC_TYPE_MANAGED,
            MemKind::Device | MemKind::Global => OL_ALLOC_TYPE_DEVICE,
        }),
    })
}

/// A symbol argument: a kernel or a global variable (checked live).
enum Symbol {
    Kernel(Kernel),
    Global(Global),
}

fn symbol(h: ol_symbol_handle_t) -> OlResult<Symbol> {
    let raw = RawHandle(h as u64);
    let rt = runtime();
    match raw.kind() {
        Some(ObjectKind::Kernel) => {
            let k = Kernel(raw);
            on(Arg::Other, rt.kernel_program(k))?;
            Ok(Symbol::Kernel(k))
        }
        Some(ObjectKind::Allocation) => {
            let g = Global(raw);
            on(Arg::Other, rt.global_info(g))?;
            Ok(Symbol::Global(g))
        }
        _ => Err(err(OL_ERRC_INVALID_ARGUMENT, "the symbol handle is stale, released or forged")),
    }
}

fn symbol_info(h: ol_symbol_handle_t, prop: u32) -> OlResult<Info> {
    if prop >= OL_SYMBOL_INFO_LAST {
        return Err(bad_enum());
    }
    match (symbol(h)?, prop) {
        (Symbol::Kernel(_), OL_SYMBOL_INFO_KIND) => Ok(Info::U32(OL_SYMBOL_KIND_KERNEL)),
        (Symbol::Global(_), OL_SYMBOL_INFO_KIND) => Ok(Info::U32(OL_SYMBOL_KIND_GLOBAL_VARIABLE)),
        (Symbol::Kernel(_), _) => Err(err(OL_ERRC_SYMBOL_KIND, "a kernel has no address or size")),
        (Symbol::Global(g), p) => {
            let (addr, size, _) = on(Arg::Other, runtime().global_info(g))?;
            Ok(if p == OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS { Info::Ptr(addr.as_ptr()) } else { Info::Usize(size) })
        }
    }
}

// ---- kernel launches --------------------------------------------------------------------------

thread_local! {
    /// This thread's recent kernel parameter layouts (kernel handle, layout). A handle is never
    /// reused, so an entry stays right for as long as its kernel lives; a stale kernel fails in
    /// the launch itself.
    /// Plain data (no destructor), so that reaching it costs no registration check.
    static LAYOUTS: RefCell<LayoutCache> = const { RefCell::new(LayoutCache::EMPTY) };
}

/// Layouts of up to `CACHED_PARAMS` parameters of the last `LAYOUT_CACHE` kernels launched.
struct LayoutCache {
    entries: [(u64, u8, [ParamSlot; CACHED_PARAMS]); LAYOUT_CACHE],
    next: usize,
}
const LAYOUT_CACHE: usize = 8;
const CACHED_PARAMS: usize = 16;

impl LayoutCache {
    const EMPTY: Self =
        Self { entries: [(0, 0, [ParamSlot { offset: 0, size: 0 }; CACHED_PARAMS]); LAYOUT_CACHE], next: 0 };

    fn find(&self, kernel: u64) -> Option<&[ParamSlot]> {
        let (_, n, slots) = self.entries.iter().find(|(k, _, _)| *k == kernel)?;
        Some(&slots[..usize::from(*n)])
    }

    fn insert(&mut self, kernel: u64, layout: &[ParamSlot]) {
        if layout.len() <= CACHED_PARAMS {
            let (k, n, slots) = &mut self.entries[self.next];
            (*k, *n) = (kernel, layout.len() as u8);
            slots[..layout.len()].copy_from_slice(layout);
            self.next = (self.next + 1) % LAYOUT_CACHE;
        }
    }
}

/// Splits the packed argument buffer by the kernel's layout and launches.
///
/// # Safety
/// `data` is valid for `size` bytes; the buffer holds the kernel's arguments laid out as its
/// parameters are (liboffload's contract).
unsafe fn launch_packed(
    device: Device,
    q: Queue,
    kernel: Kernel,
    data: *const c_void,
    size: usize,
    dims: &LaunchDims,
) -> OlResult<()> {
    let with_layout = |layout: &[ParamSlot]| -> OlResult<()> {
        let end = layout.last().map_or(0, |s| s.offset as usize + s.size as usize);
        if size < end {
            return Err(err(OL_ERRC_INVALID_SIZE, "ArgumentsSize is smaller than the kernel's parameters"));
        }
        // Kernels with few parameters (nearly all) split into a small stack array; others into
        // heap vectors (a launch of such a kernel costs an allocation).
        const INLINE: usize = 16;
        let arg = |s: &ParamSlot| {
            // SAFETY: `offset + size <= end <= size` bytes of `data`.
            unsafe { data.cast::<u8>().add(s.offset as usize) }.cast_mut().cast::<c_void>()
        };
        let (mut inline_params, mut inline_sizes) = ([core::ptr::null_mut(); INLINE], [0usize; INLINE]);
        let (heap_params, heap_sizes): (Vec<*mut c_void>, Vec<usize>);
        let (params, sizes): (&[*mut c_void], &[usize]) = if layout.len() <= INLINE {
            for (i, s) in layout.iter().enumerate() {
                inline_params[i] = arg(s);
                inline_sizes[i] = s.size as usize;
            }
            (&inline_params[..layout.len()], &inline_sizes[..layout.len()])
        } else {
            heap_params = layout.iter().map(arg).collect();
            heap_sizes = layout.iter().map(|s| s.size as usize).collect();
            (&heap_params, &heap_sizes)
        };
        let args =
            KernelArgs::new(params, sizes).map_err(|e| OlError { code: code_of(&e, Arg::Other), detail: e.message })?;
        // SAFETY: each pointer points at its parameter's bytes in the caller's buffer.
        let r = unsafe { runtime().launch_on(device, q, kernel, dims, &args) };
        r.map_err(|e| launch_error(e, device, q))
    };
    // (A launch from inside a host kernel finds the cache borrowed and takes the slow path.)
    let cached = LAYOUTS.with(|cache| Some(with_layout(cache.try_borrow().ok()?.find(kernel.to_raw())?)));
    if let Some(r) = cached {
        return r;
    }
    let layout = on(Arg::Other, runtime().kernel_param_layout(kernel))?;
    let r = with_layout(&layout);
    LAYOUTS.with(|cache| {
        if let Ok(mut cache) = cache.try_borrow_mut() {
            cache.insert(kernel.to_raw(), &layout);
        }
    });
    r
}

/// liboffload's code for a failed launch: which handle was bad, or a queue of another device.
#[cold]
fn launch_error(e: Error, device: Device, q: Queue) -> OlError {
    let rt = runtime();
    let arg = match e.code {
        ErrorCode::InvalidHandle if rt.device_platform(device).is_err() => Arg::Device,
        ErrorCode::InvalidHandle if rt.queue_device(q).is_err() => Arg::Queue,
        ErrorCode::InvalidArgument if rt.queue_device(q).is_ok_and(|d| d != device) => {
            return err(OL_ERRC_INVALID_DEVICE, "the queue does not belong to Device");
        }
        _ => Arg::Other,
    };
    OlError { code: code_of(&e, arg), detail: e.message }
}

fn launch_dims(a: &ol_kernel_launch_size_args_t) -> OlResult<LaunchDims> {
    if !(1..=3).contains(&a.Dimensions) {
        return Err(err(OL_ERRC_INVALID_VALUE, "Dimensions must be 1, 2 or 3"));
    }
    let Ok(shared) = u32::try_from(a.DynSharedMemory) else {
        return Err(err(OL_ERRC_INVALID_VALUE, "DynSharedMemory is too large"));
    };
    let used = |v: u32, dim: usize| if dim < a.Dimensions { v } else { 1 };
    Ok(LaunchDims {
        grid: [used(a.NumGroups.x, 0), used(a.NumGroups.y, 1), used(a.NumGroups.z, 2)],
        block: [used(a.GroupSize.x, 0), used(a.GroupSize.y, 1), used(a.GroupSize.z, 2)],
        shared_mem_bytes: shared,
    })
}

// ---- the entry points -------------------------------------------------------------------------

/// Defines an entry point and its `…WithCodeLoc` variant (which ignores the location).
macro_rules! ol_api {
    ($(
        $(#[$doc:meta])*
        fn $name:ident / $loc:ident ( $($arg:ident : $ty:ty),* $(,)? ) $body:block
    )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// Pointer arguments are NULL or valid as liboffload's header documents, as C requires of
        /// its callers.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> ol_result_t {
            entry(|| $body)
        }

        #[doc = concat!("`", stringify!($name), "`; the code location is accepted and not used.")]
        ///
        /// # Safety
        #[doc = concat!("As `", stringify!($name), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $loc($($arg: $ty,)* _location: *mut ol_code_location_t) -> ol_result_t {
            // SAFETY: forwarded contract.
            unsafe { $name($($arg),*) }
        }
    )*};
}

ol_api! {
    /// Initialises ordo (reference-counted with `olShutDown`, and with `ordo_init`).
    fn olInit / olInitWithCodeLoc() {
        on(Arg::Other, runtime().init())
    }

    /// Drops one reference; the last tears everything down in ordo's documented order.
    fn olShutDown / olShutDownWithCodeLoc() {
        ready()?;
        match on(Arg::Other, runtime().shutdown())? {
            Shutdown::TornDown(summary) => {
                *SIDE.lock().unwrap_or_else(|p| p.into_inner()) = None;
                if summary.is_clean() {
                    Ok(())
                } else {
                    Err(err(OL_ERRC_BACKEND_FAILURE, "the teardown completed, but some objects failed to release"))
                }
            }
            _ => Ok(()),
        }
    }

    /// Calls `Callback` for every device of every present platform (ordo's order), then for
    /// liboffload's host device, until it returns false.
    fn olIterateDevices / olIterateDevicesWithCodeLoc(Callback: ol_device_iterate_cb_t, UserData: *mut c_void) {
        ready()?;
        let Some(cb) = Callback else {
            return Err(err(OL_ERRC_INVALID_NULL_POINTER, "NULL == Callback"));
        };
        let rt = runtime();
        for i in 0..on(Arg::Other, rt.platform_count())? {
            let p = on(Arg::Platform, rt.platform(i))?;
            let info = on(Arg::Platform, rt.platform_info(p))?;
            for d in 0..info.device_count {
                let dev = on(Arg::Device, rt.device(p, d))?;
                // SAFETY: the caller's callback, with its own data.
                if !unsafe { cb(as_handle(dev.to_raw()), UserData) } {
                    return Ok(());
                }
            }
        }
        // SAFETY: as above.
        unsafe { cb(host_device(), UserData) };
        Ok(())
    }

    /// A platform property.
    fn olGetPlatformInfo / olGetPlatformInfoWithCodeLoc(
        platform_h: ol_platform_handle_t, PropName: u32, PropSize: usize, PropValue: *mut c_void,
    ) {
        ready()?;
        handle(platform_h, "NULL == Platform")?;
        // SAFETY: `PropValue` is NULL or valid for `PropSize` bytes (the caller's contract).
        unsafe { value_out(PropSize, PropValue, || platform_info(platform_h, PropName)) }
    }

    /// The size of a platform property.
    fn olGetPlatformInfoSize / olGetPlatformInfoSizeWithCodeLoc(
        platform_h: ol_platform_handle_t, PropName: u32, PropSizeRet: *mut usize,
    ) {
        ready()?;
        handle(platform_h, "NULL == Platform")?;
        // SAFETY: `PropSizeRet` is NULL or writable (the caller's contract).
        unsafe { size_out(PropSizeRet, || platform_info(platform_h, PropName)) }
    }

    /// A device property.
    fn olGetDeviceInfo / olGetDeviceInfoWithCodeLoc(
        device_h: ol_device_handle_t, PropName: u32, PropSize: usize, PropValue: *mut c_void,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        // SAFETY: `PropValue` is NULL or valid for `PropSize` bytes (the caller's contract).
        unsafe { value_out(PropSize, PropValue, || device_info(device_h, PropName)) }
    }

    /// The size of a device property.
    fn olGetDeviceInfoSize / olGetDeviceInfoSizeWithCodeLoc(
        device_h: ol_device_handle_t, PropName: u32, PropSizeRet: *mut usize,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        // SAFETY: `PropSizeRet` is NULL or writable (the caller's contract).
        unsafe { size_out(PropSizeRet, || device_info(device_h, PropName)) }
    }

    /// Allocates memory on a device (not on liboffload's host device: `OL_ERRC_UNSUPPORTED`).
    fn olMemAlloc / olMemAllocWithCodeLoc(
        device_h: ol_device_handle_t, Type: u32, Size: usize, AllocationOut: *mut *mut c_void,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        pointer(AllocationOut, "NULL == AllocationOut")?;
        if Size == 0 {
            return Err(err(OL_ERRC_INVALID_SIZE, "Size == 0"));
        }
        let kind = match Type {
            OL_ALLOC_TYPE_HOST => MemKind::Host,
            OL_ALLOC_TYPE_DEVICE => MemKind::Device,
            OL_ALLOC_TYPE_MANAGED => MemKind::Managed,
            _ => return Err(err(OL_ERRC_INVALID_ENUMERATION, "unknown ol_alloc_type_t")),
        };
        let d = ordo_device(device_h, "the host device allocates nothing: host memory is the program's own")?;
        let p = on(Arg::Device, runtime().mem_alloc(d, kind, Size))?;
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { AllocationOut.write(p.as_ptr()) };
        Ok(())
    }

    /// Frees an allocation by its base address.
    fn olMemFree / olMemFreeWithCodeLoc(Address: *mut c_void) {
        ready()?;
        pointer(Address, "NULL == Address")?;
        on(Arg::Other, runtime().mem_free(DevicePtr(Address as u64)))
    }

    /// A property of the allocation holding `Ptr` (any interior pointer).
    fn olGetMemInfo / olGetMemInfoWithCodeLoc(
        Ptr: *const c_void, PropName: u32, PropSize: usize, PropValue: *mut c_void,
    ) {
        ready()?;
        pointer(Ptr, "NULL == Ptr")?;
        // SAFETY: `PropValue` is NULL or valid for `PropSize` bytes (the caller's contract).
        unsafe { value_out(PropSize, PropValue, || mem_info(Ptr, PropName)) }
    }

    /// The size of an allocation property.
    fn olGetMemInfoSize / olGetMemInfoSizeWithCodeLoc(Ptr: *const c_void, PropName: u32, PropSizeRet: *mut usize) {
        ready()?;
        pointer(Ptr, "NULL == Ptr")?;
        // SAFETY: `PropSizeRet` is NULL or writable (the caller's contract).
        unsafe { size_out(PropSizeRet, || mem_info(Ptr, PropName)) }
    }

    /// Registers (page-locks and maps) host memory with a device; `*PinnedPtr` = `Ptr` (ordo
    /// maps it at the same address). Overlapping an earlier registration is
    /// `OL_ERRC_INVALID_ARGUMENT` (ordo keeps no per-range user count).
    fn olMemRegister / olMemRegisterWithCodeLoc(
        device_h: ol_device_handle_t, Ptr: *mut c_void, Size: usize, Flags: u32, PinnedPtr: *mut *mut c_void,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        pointer(Ptr, "NULL == Ptr")?;
        pointer(PinnedPtr, "NULL == PinnedPtr")?;
        if Size == 0 {
            return Err(err(OL_ERRC_INVALID_SIZE, "Size == 0"));
        }
        if Flags != 0 {
            return Err(err(OL_ERRC_INVALID_VALUE, "Flags are reserved and must be 0"));
        }
        let d = ordo_device(device_h, "the host device registers nothing")?;
        // SAFETY: the caller's contract: `Size` bytes of host memory at `Ptr` that stay valid
        // until unregistered.
        let p = on(Arg::Device, unsafe { runtime().host_register(d, Ptr.cast(), Size) })?;
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { PinnedPtr.write(p.as_ptr()) };
        Ok(())
    }

    /// Unregisters host memory registered with `olMemRegister` on this device.
    fn olMemUnregister / olMemUnregisterWithCodeLoc(device_h: ol_device_handle_t, Ptr: *mut c_void) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        pointer(Ptr, "NULL == Ptr")?;
        let d = ordo_device(device_h, "the host device registers nothing")?;
        let rt = runtime();
        let (base, _, kind, owner) = match rt.mem_info(DevicePtr(Ptr as u64)) {
            Err(e) if e.code == ErrorCode::NotFound => {
                return Err(err(OL_ERRC_NOT_FOUND, "the pointer is not registered"));
            }
            r => on(Arg::Other, r)?,
        };
        if kind != MemKind::Registered || base.0 != Ptr as u64 || owner != d {
            return Err(err(OL_ERRC_INVALID_ARGUMENT, "the pointer is not the start of a range registered with Device"));
        }
        on(Arg::Other, rt.mem_free(base))
    }

    /// Copies between host memory (liboffload's host device) and device memory, or within a
    /// device; with a queue, asynchronously on it, else synchronously.
    fn olMemcpy / olMemcpyWithCodeLoc(
        queue_h: ol_queue_handle_t, DstPtr: *mut c_void, DstDevice: ol_device_handle_t,
        SrcPtr: *const c_void, SrcDevice: ol_device_handle_t, Size: usize,
    ) {
        ready()?;
        handle(DstDevice, "NULL == DstDevice")?;
        handle(SrcDevice, "NULL == SrcDevice")?;
        pointer(DstPtr, "NULL == DstPtr")?;
        pointer(SrcPtr, "NULL == SrcPtr")?;
        let (dst, src) = (device(DstDevice)?, device(SrcDevice)?);
        let q = (!queue_h.is_null()).then(|| queue(queue_h));
        let named = |d: Dev| match d {
            Dev::Host => None,
            Dev::Ordo(d) => Some(d),
        };
        // SAFETY: device sides are validated by the runtime; host sides are the caller's contract
        // (valid for `Size` bytes until the queue passes the copy).
        let r = unsafe { runtime().memcpy_between(DstPtr as u64, named(dst), SrcPtr as u64, named(src), Size, q) };
        on(Arg::Queue, r)
    }

    /// Fills memory with copies of a pattern of any size; with a queue, asynchronously.
    fn olMemFill / olMemFillWithCodeLoc(
        queue_h: ol_queue_handle_t, Ptr: *mut c_void, PatternSize: usize, PatternPtr: *const c_void, FillSize: usize,
    ) {
        ready()?;
        pointer(Ptr, "NULL == Ptr")?;
        pointer(PatternPtr, "NULL == PatternPtr")?;
        if PatternSize == 0 || FillSize % PatternSize != 0 {
            return Err(err(OL_ERRC_INVALID_SIZE, "FillSize % PatternSize != 0"));
        }
        if PatternSize > isize::MAX as usize {
            return Err(err(OL_ERRC_INVALID_SIZE, "PatternSize is too large"));
        }
        // SAFETY: non-NULL, valid for `PatternSize` bytes by the caller's contract.
        let pattern = unsafe { core::slice::from_raw_parts(PatternPtr.cast::<u8>(), PatternSize) };
        let q = (!queue_h.is_null()).then(|| queue(queue_h));
        on(Arg::Queue, runtime().fill_pattern(DevicePtr(Ptr as u64), pattern, FillSize, q))
    }

    /// Creates an in-order queue on a device.
    fn olCreateQueue / olCreateQueueWithCodeLoc(device_h: ol_device_handle_t, queue_h: *mut ol_queue_handle_t) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        pointer(queue_h, "NULL == Queue")?;
        let d = ordo_device(device_h, "the host device has no queues")?;
        let q = on(Arg::Device, runtime().queue_create(d))?;
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { queue_h.write(as_handle(q.to_raw())) };
        Ok(())
    }

    /// Destroys a queue; its enqueued work still completes and its events stay valid.
    fn olDestroyQueue / olDestroyQueueWithCodeLoc(queue_h: ol_queue_handle_t) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        on(Arg::Queue, runtime().queue_destroy(queue(queue_h)))
    }

    /// Waits for the queue's work.
    fn olSyncQueue / olSyncQueueWithCodeLoc(queue_h: ol_queue_handle_t) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        on(Arg::Queue, runtime().queue_synchronize(queue(queue_h)))
    }

    /// Makes later work on the queue wait for each event.
    fn olWaitEvents / olWaitEventsWithCodeLoc(queue_h: ol_queue_handle_t, Events: *mut ol_event_handle_t, NumEvents: usize) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        pointer(Events, "NULL == Events")?;
        if NumEvents > isize::MAX as usize / size_of::<ol_event_handle_t>() {
            return Err(err(OL_ERRC_INVALID_SIZE, "NumEvents is too large"));
        }
        // SAFETY: non-NULL, valid for `NumEvents` handles by the caller's contract (a count no
        // array can hold was refused above).
        let events = unsafe { core::slice::from_raw_parts(Events, NumEvents) };
        if events.iter().any(|e| e.is_null()) {
            return Err(err(OL_ERRC_INVALID_NULL_HANDLE, "an event handle in the list is NULL"));
        }
        let rt = runtime();
        on(Arg::Queue, rt.queue_device(queue(queue_h)))?;
        for &e in events {
            on(Arg::Event, rt.event_device(event(e)))?;
        }
        for &e in events {
            on(Arg::Other, rt.queue_wait_event(queue(queue_h), event(e)))?;
        }
        Ok(())
    }

    /// A queue property.
    fn olGetQueueInfo / olGetQueueInfoWithCodeLoc(
        queue_h: ol_queue_handle_t, PropName: u32, PropSize: usize, PropValue: *mut c_void,
    ) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        // SAFETY: `PropValue` is NULL or valid for `PropSize` bytes (the caller's contract).
        unsafe { value_out(PropSize, PropValue, || queue_info(queue_h, PropName)) }
    }

    /// The size of a queue property.
    fn olGetQueueInfoSize / olGetQueueInfoSizeWithCodeLoc(queue_h: ol_queue_handle_t, PropName: u32, PropSizeRet: *mut usize) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        // SAFETY: `PropSizeRet` is NULL or writable (the caller's contract).
        unsafe { size_out(PropSizeRet, || queue_info(queue_h, PropName)) }
    }

    /// Creates an event recorded on the queue: complete when the work enqueued before it is.
    fn olCreateEvent / olCreateEventWithCodeLoc(queue_h: ol_queue_handle_t, event_h: *mut ol_event_handle_t) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        pointer(event_h, "NULL == Event")?;
        let rt = runtime();
        let d = on(Arg::Queue, rt.queue_device(queue(queue_h)))?;
        let e = on(Arg::Queue, rt.event_create(d))?;
        if let Err(x) = rt.event_record(e, queue(queue_h)) {
            let _ = rt.event_destroy(e);
            return on(Arg::Queue, Err(x));
        }
        side(|s| s.event_queue.insert(e.to_raw(), queue_h as u64));
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { event_h.write(as_handle(e.to_raw())) };
        Ok(())
    }

    /// Destroys an event.
    fn olDestroyEvent / olDestroyEventWithCodeLoc(event_h: ol_event_handle_t) {
        ready()?;
        handle(event_h, "NULL == Event")?;
        on(Arg::Event, runtime().event_destroy(event(event_h)))?;
        side(|s| s.event_queue.remove(&(event_h as u64)));
        Ok(())
    }

    /// Waits for the event.
    fn olSyncEvent / olSyncEventWithCodeLoc(event_h: ol_event_handle_t) {
        ready()?;
        handle(event_h, "NULL == Event")?;
        on(Arg::Event, runtime().event_synchronize(event(event_h)))
    }

    /// An event property.
    fn olGetEventInfo / olGetEventInfoWithCodeLoc(
        event_h: ol_event_handle_t, PropName: u32, PropSize: usize, PropValue: *mut c_void,
    ) {
        ready()?;
        handle(event_h, "NULL == Event")?;
        // SAFETY: `PropValue` is NULL or valid for `PropSize` bytes (the caller's contract).
        unsafe { value_out(PropSize, PropValue, || event_info(event_h, PropName)) }
    }

    /// The size of an event property.
    fn olGetEventInfoSize / olGetEventInfoSizeWithCodeLoc(event_h: ol_event_handle_t, PropName: u32, PropSizeRet: *mut usize) {
        ready()?;
        handle(event_h, "NULL == Event")?;
        // SAFETY: `PropSizeRet` is NULL or writable (the caller's contract).
        unsafe { size_out(PropSizeRet, || event_info(event_h, PropName)) }
    }

    /// Loads a program (CUDA: PTX, cubin or fatbin; ordo's host platform: a built-in program's
    /// name; AMDGPU: a code object or offload bundle). The image is copied.
    fn olCreateProgram / olCreateProgramWithCodeLoc(
        device_h: ol_device_handle_t, ProgData: *const c_void, ProgDataSize: usize, program_h: *mut ol_program_handle_t,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        pointer(ProgData, "NULL == ProgData")?;
        pointer(program_h, "NULL == Program")?;
        if ProgDataSize == 0 || ProgDataSize > isize::MAX as usize {
            return Err(err(OL_ERRC_INVALID_SIZE, "ProgDataSize is 0 or too large"));
        }
        let d = ordo_device(device_h, "the host device runs no programs")?;
        // SAFETY: non-NULL, valid for `ProgDataSize` bytes by the caller's contract.
        let image = unsafe { core::slice::from_raw_parts(ProgData.cast::<u8>(), ProgDataSize) };
        let p = on(Arg::Device, runtime().program_load(d, image))?;
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { program_h.write(as_handle(p.to_raw())) };
        Ok(())
    }

    /// Unloads a program; its symbols go stale with it.
    fn olDestroyProgram / olDestroyProgramWithCodeLoc(program_h: ol_program_handle_t) {
        ready()?;
        handle(program_h, "NULL == Program")?;
        on(Arg::Other, runtime().program_unload(Program::from_raw(program_h as u64)))
    }

    /// Whether an image is a program the device can load, without loading it (the host device:
    /// never; an empty image: not valid).
    fn olIsValidBinary / olIsValidBinaryWithCodeLoc(
        device_h: ol_device_handle_t, ProgData: *const c_void, ProgDataSize: usize, Valid: *mut bool,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        pointer(ProgData, "NULL == ProgData")?;
        pointer(Valid, "NULL == Valid")?;
        let valid = match device(device_h)? {
            Dev::Host => false,
            _ if ProgDataSize == 0 => false,
            Dev::Ordo(d) => {
                if ProgDataSize > isize::MAX as usize {
                    return Err(err(OL_ERRC_INVALID_SIZE, "ProgDataSize is too large"));
                }
                // SAFETY: non-NULL, valid for `ProgDataSize` bytes by the caller's contract.
                let image = unsafe { core::slice::from_raw_parts(ProgData.cast::<u8>(), ProgDataSize) };
                on(Arg::Device, runtime().program_check(d, image))?
            }
        };
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { Valid.write(valid) };
        Ok(())
    }

    /// A kernel or global variable of a program by name; the same name gives the same handle.
    fn olGetSymbol / olGetSymbolWithCodeLoc(
        program_h: ol_program_handle_t, Name: *const c_char, Kind: u32, Symbol: *mut ol_symbol_handle_t,
    ) {
        ready()?;
        handle(program_h, "NULL == Program")?;
        pointer(Name, "NULL == Name")?;
        pointer(Symbol, "NULL == Symbol")?;
        // SAFETY: non-NULL and NUL-terminated by the caller's contract.
        let Ok(name) = unsafe { core::ffi::CStr::from_ptr(Name) }.to_str() else {
            return Err(err(OL_ERRC_INVALID_ARGUMENT, "Name is not UTF-8"));
        };
        let p = Program::from_raw(program_h as u64);
        let raw = match Kind {
            OL_SYMBOL_KIND_KERNEL => on(Arg::Other, runtime().kernel_get(p, name))?.to_raw(),
            OL_SYMBOL_KIND_GLOBAL_VARIABLE => on(Arg::Other, runtime().program_global(p, name))?.0.to_raw(),
            _ => return Err(err(OL_ERRC_INVALID_ENUMERATION, "unknown ol_symbol_kind_t")),
        };
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { Symbol.write(as_handle(raw)) };
        Ok(())
    }

    /// A symbol property.
    fn olGetSymbolInfo / olGetSymbolInfoWithCodeLoc(
        Symbol: ol_symbol_handle_t, PropName: u32, PropSize: usize, PropValue: *mut c_void,
    ) {
        ready()?;
        handle(Symbol, "NULL == Symbol")?;
        // SAFETY: `PropValue` is NULL or valid for `PropSize` bytes (the caller's contract).
        unsafe { value_out(PropSize, PropValue, || symbol_info(Symbol, PropName)) }
    }

    /// The size of a symbol property.
    fn olGetSymbolInfoSize / olGetSymbolInfoSizeWithCodeLoc(Symbol: ol_symbol_handle_t, PropName: u32, PropSizeRet: *mut usize) {
        ready()?;
        handle(Symbol, "NULL == Symbol")?;
        // SAFETY: `PropSizeRet` is NULL or writable (the caller's contract).
        unsafe { size_out(PropSizeRet, || symbol_info(Symbol, PropName)) }
    }

    /// The work-group size with the highest occupancy for a kernel and a dynamic shared memory
    /// size (CUDA: the driver's occupancy calculator, per block).
    fn olCalculateOptimalOccupancy / olCalculateOptimalOccupancyWithCodeLoc(
        device_h: ol_device_handle_t, kernel_h: ol_symbol_handle_t, SharedMemory: usize, GroupSize: *mut usize,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        handle(kernel_h, "NULL == Kernel")?;
        pointer(GroupSize, "NULL == GroupSize")?;
        ordo_device(device_h, "the host device runs no kernels")?;
        let Symbol::Kernel(k) = symbol(kernel_h)? else {
            return Err(err(OL_ERRC_SYMBOL_KIND, "the symbol is not a kernel"));
        };
        let block = on(Arg::Other, runtime().kernel_optimal_block_size(k, SharedMemory))?;
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { GroupSize.write(block as usize) };
        Ok(())
    }

    /// Enqueues a host function on a queue.
    fn olLaunchHostFunction / olLaunchHostFunctionWithCodeLoc(
        queue_h: ol_queue_handle_t, Callback: ol_host_function_cb_t, UserData: *mut c_void,
    ) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        let Some(f) = Callback else {
            return Err(err(OL_ERRC_INVALID_NULL_POINTER, "NULL == Callback"));
        };
        // SAFETY: liboffload's contract for the callback (called once, no API calls).
        on(Arg::Queue, unsafe { runtime().queue_host_function(queue(queue_h), f, UserData) })
    }
}

/// Launches a kernel: `ArgumentsData` is the packed argument struct, split by the kernel's
/// parameter layout (CUDA: `cuFuncGetParamInfo`; ordo's host kernels: their declared sizes).
/// Without a queue it runs on the device's own queue and returns when the kernel has finished.
///
/// # Safety
/// Pointer arguments are NULL or valid as liboffload's header documents; the buffer holds the
/// kernel's arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olLaunchKernel(
    queue_h: ol_queue_handle_t,
    device_h: ol_device_handle_t,
    kernel_h: ol_symbol_handle_t,
    ArgumentsData: *const c_void,
    ArgumentsSize: usize,
    LaunchSizeArgs: *const ol_kernel_launch_size_args_t,
) -> ol_result_t {
    entry(|| {
        // The cheap argument checks first; when one fails, initialisation is reported first.
        let bad = if device_h.is_null() {
            Some(err(OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"))
        } else if kernel_h.is_null() {
            Some(err(OL_ERRC_INVALID_NULL_HANDLE, "NULL == Kernel"))
        } else if LaunchSizeArgs.is_null() {
            Some(err(OL_ERRC_INVALID_NULL_POINTER, "NULL == LaunchSizeArgs"))
        } else if ArgumentsSize > 0 && ArgumentsData.is_null() {
            Some(err(OL_ERRC_INVALID_ARGUMENT, "ArgumentsSize > 0 && ArgumentsData == NULL"))
        } else {
            None
        };
        if let Some(e) = bad {
            ready()?;
            return Err(e);
        }
        let raw = RawHandle(kernel_h as u64);
        if raw.kind() != Some(ObjectKind::Kernel) {
            ready()?;
            symbol(kernel_h)?;
            return Err(err(OL_ERRC_SYMBOL_KIND, "the symbol is not a kernel"));
        }
        if device_h == host_device() {
            ready()?;
            return Err(err(OL_ERRC_INVALID_DEVICE, "the host device runs no kernels"));
        }
        // SAFETY: non-NULL (checked), readable by the caller's contract.
        let dims = match launch_dims(unsafe { &*LaunchSizeArgs }) {
            Ok(d) => d,
            Err(e) => {
                ready()?;
                return Err(e);
            }
        };
        let device = ordo_core::Device::from_raw(device_h as u64);
        let kernel = ordo_core::Kernel(raw);
        if queue_h.is_null() {
            ready()?;
            let q = sync_queue(device)?;
            // SAFETY: the caller's contract for the buffer.
            unsafe { launch_packed(device, q, kernel, ArgumentsData, ArgumentsSize, &dims) }?;
            return on(Arg::Device, runtime().queue_synchronize(q));
        }
        // SAFETY: as above.
        unsafe { launch_packed(device, queue(queue_h), kernel, ArgumentsData, ArgumentsSize, &dims) }
    })
}

/// `olLaunchKernel`; the code location is accepted and not used.
///
/// # Safety
/// As `olLaunchKernel`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olLaunchKernelWithCodeLoc(
    queue_h: ol_queue_handle_t,
    device_h: ol_device_handle_t,
    kernel_h: ol_symbol_handle_t,
    ArgumentsData: *const c_void,
    ArgumentsSize: usize,
    LaunchSizeArgs: *const ol_kernel_launch_size_args_t,
    _location: *mut ol_code_location_t,
) -> ol_result_t {
    // SAFETY: forwarded contract.
    unsafe { olLaunchKernel(queue_h, device_h, kernel_h, ArgumentsData, ArgumentsSize, LaunchSizeArgs) }
}
