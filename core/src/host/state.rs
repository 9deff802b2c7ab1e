//! The host backend's bookkeeping of one arena (its free ranges and events), kept beside the
//! arena so that a `static` arena and its bookkeeping sit in `.bss` together. Only the host
//! backend (`host/mod.rs`) reads it. Depends on `capacity`.

use crate::capacity::{MAX_ALLOCATIONS, MAX_EVENTS};

/// The host backend's bookkeeping of one arena: its free ranges and events. All zeros when new,
/// so a `static` arena holding one stays in `.bss`. Only `HostBackend` reads it.
pub struct HostBookkeeping(pub(super) crate::sync::SpinLock<HostState>);

impl core::fmt::Debug for HostBookkeeping {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HostBookkeeping").finish_non_exhaustive()
    }
}

impl HostBookkeeping {
    /// Fresh bookkeeping (nothing allocated; the backend is not initialised).
    pub const fn new() -> Self {
        Self(crate::sync::SpinLock::new(HostState {
            up: false,
            base: core::ptr::null_mut(),
            len: 0,
            free: heapless::Vec::new(),
            events: [EVENT_FREE; MAX_EVENTS],
            next_queue: 0,
            heap: false,
            heap_used: 0,
            loads: 0,
        }))
    }
}

impl Default for HostBookkeeping {
    fn default() -> Self {
        Self::new()
    }
}

pub(super) const EVENT_FREE: u64 = 0;
pub(super) const EVENT_UNRECORDED: u64 = 1;
/// Recorded events hold their timestamp plus this offset.
pub(super) const EVENT_RECORDED_BASE: u64 = 2;

pub(crate) struct HostState {
    pub(super) up: bool,
    /// The arena as it was at `init` (used until `deinit`): its first `HOST_ALIGN`-aligned byte,
    /// and the region's length.
    pub(super) base: *mut u8,
    pub(super) len: usize,
    /// Free ranges `(offset, len)` of the arena in blocks of `HOST_ALIGN` bytes from `base`,
    /// sorted and coalesced (`u32` blocks: up to 1 TiB of arena, in half the memory of `usize`
    /// byte ranges). Free ranges are never more than live allocations plus one, so this cannot
    /// overflow.
    pub(super) free: heapless::Vec<(u32, u32), { MAX_ALLOCATIONS + 1 }>,
    pub(super) events: [u64; MAX_EVENTS],
    pub(super) next_queue: u64,
    /// Allocations come from the backend's `HostHeap` (no arena was given): `free` is unused.
    pub(super) heap: bool,
    /// Bytes the heap mode has handed out and not taken back.
    pub(super) heap_used: u64,
    /// Programs loaded so far (each load's program value carries it: `program_load`).
    pub(super) loads: u32,
}

// SAFETY: the arena pointer is only an address the state carries between calls; the bytes it
// names are reached under the backend's rules (see `HostBackend`), whatever thread holds the lock.
unsafe impl Send for HostState {}
