//! LLVM 22.1.8 liboffload's `ol*` API (Debian's `offload/OffloadAPI.h`) on ordo's default runtime
//! (feature `offload`, 64-bit targets), so that a program written for liboffload links ordo
//! instead. Types and values match the header exactly (checked by a C test that includes it).
//!
//! - `ol_result_t` is NULL on success, else a pointer to an error struct kept in one
//!   process-wide set, as liboffload keeps its results: the liboffload code and ordo's detail
//!   text (the same text as the thread's `ordo_last_error_detail`). It stays valid and unchanged
//!   for the life of the process, after its thread exits too; one struct serves every failure
//!   with the same code and text, so the set is bounded by the distinct results (at most 4,096
//!   texts kept; past that a failure's struct carries its code and a note instead of the text).
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
//!
//! Files: `types.rs` (the header's types), `error.rs` (codes and the error struct), `info.rs`
//! (property queries), `launch.rs` (kernel launches), and the entry points by object kind:
//! `platform.rs`, `memory.rs`, `queue.rs` (queues, events, host functions), `program.rs`
//! (programs, symbols, occupancy). This file holds liboffload's host platform and device and the
//! state kept beside the runtime.
#![allow(non_snake_case)] // liboffload's parameter and field names are the ABI's.

use core::ffi::{c_char, c_void};
use std::collections::HashMap;
use std::sync::Mutex;

use ordo_core::{
    BackendKind, Device, DeviceInfo, DevicePtr, Error, ErrorCode, Event, Global, InfoValue, Kernel, LaunchDims,
    MemKind, ObjectKind, Platform, Program, Queue, RawHandle, Shutdown,
};

use crate::boundary::{catch, detail_pointer, handle_to_ptr, ptr_to_handle, set_detail, set_detail_of};
use ordo::runtime;

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

mod error;
mod info;
mod launch;
mod memory;
mod platform;
mod program;
mod queue;
mod types;

use error::*;
use info::*;
pub use launch::{olLaunchKernel, olLaunchKernelWithCodeLoc};
pub use memory::*;
pub use platform::*;
pub use program::*;
pub use queue::*;
pub use types::*;

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
    let d = Device::from_raw(ptr_to_handle(h));
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
    Queue::from_raw(ptr_to_handle(h))
}

fn event(h: ol_event_handle_t) -> Event {
    Event::from_raw(ptr_to_handle(h))
}

// ---- state the API keeps beside the runtime ---------------------------------------------------

/// The queue each event was created on (`OL_EVENT_INFO_QUEUE`). Handles are never reused, so a
/// stale entry is harmless; a final `olShutDown` removes the entries of the events it released
/// (and keeps those a racing init made).
struct Side {
    event_queue: HashMap<u64, u64>,
    /// Registered host ranges (by base address) registered again: the extra registrations,
    /// each released by one `olMemUnregister` before the range itself is.
    registered: HashMap<u64, u32>,
}

static SIDE: Mutex<Option<Side>> = Mutex::new(None);

fn side<R>(f: impl FnOnce(&mut Side) -> R) -> R {
    let mut guard = SIDE.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(|| Side { event_queue: HashMap::new(), registered: HashMap::new() }))
}

/// The device's queue for work submitted without one: the runtime's default queue of the device
/// (one per device, race-free; the same one MLIR's null stream uses).
fn sync_queue(d: Device) -> OlResult<Queue> {
    on(Arg::Device, runtime().default_queue(d))
}
