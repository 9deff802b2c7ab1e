//! Where the host backend's memory comes from: the `ArenaRegion` contract, a `static` arena of
//! fixed size (`HostArena`) and a region the caller provides at run time (`ProvidedArena`).
//! Depends on `state` (the bookkeeping each arena keeps).

use core::cell::UnsafeCell;

use super::state::HostBookkeeping;
use crate::error::{Error, ErrorCode};

/// Alignment of every host allocation (as CUDA's allocations are 256-byte aligned).
pub const HOST_ALIGN: usize = 256;

/// A region of memory the host backend allocates from, and the storage for the backend's
/// bookkeeping of it. The backend asks for the region once per `init` and uses it until its
/// `deinit`.
///
/// The bookkeeping (free ranges, events: about 140 KB at default capacities) lives with the
/// arena rather than in the `HostBackend`, because a backend holds pointers and so sits in
/// `.data`, while an arena is all zeros and sits in `.bss` (no file size, no flash).
///
/// # Safety
/// The region `region` returns is valid for reads and writes, initialised, and not accessed by
/// anything but the `HostBackend` built over it (and the code its allocations are handed to)
/// from that call until the backend's `deinit`. An empty region (length below `HOST_ALIGN`)
/// makes the host platform absent. `bookkeeping` returns the same object every time.
pub unsafe trait ArenaRegion: Sync {
    /// Start and length of the region.
    fn region(&self) -> (*mut u8, usize);
    /// The host backend's bookkeeping for this arena (a `HostBookkeeping::new()` kept beside
    /// the region).
    fn bookkeeping(&self) -> &HostBookkeeping;
}

/// An arena the host program gives at run time (`provide`), for firmware hosts that place it
/// themselves (a linker section, external RAM) and C programs (`ordo_set_host_arena`). Until it
/// is provided it is empty, and the host platform is absent with that reason.
pub struct ProvidedArena {
    base: core::sync::atomic::AtomicPtr<u8>,
    len: core::sync::atomic::AtomicUsize,
    bookkeeping: HostBookkeeping,
}

impl core::fmt::Debug for ProvidedArena {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ProvidedArena").field("base", &self.base).finish_non_exhaustive()
    }
}

impl ProvidedArena {
    /// An empty arena (place it in a `static`).
    pub const fn new() -> Self {
        Self {
            base: core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()),
            len: core::sync::atomic::AtomicUsize::new(0),
            bookkeeping: HostBookkeeping::new(),
        }
    }

    /// Whether an arena was provided.
    pub fn is_provided(&self) -> bool {
        !self.base.load(core::sync::atomic::Ordering::Acquire).is_null()
    }

    /// Gives the arena `len` bytes at `base`, once; they are zeroed here. `NullPointer` for a
    /// null base, `InvalidSize` below `HOST_ALIGN` bytes, `Busy` when one was provided already
    /// (a host backend may be using it).
    ///
    /// # Safety
    /// `base` is valid for reads and writes of `len` bytes for the rest of the program, and
    /// nothing else uses those bytes.
    pub unsafe fn provide(&self, base: *mut u8, len: usize) -> Result<(), Error> {
        use core::sync::atomic::Ordering;
        if base.is_null() {
            return Err(Error::new(ErrorCode::NullPointer, "host arena base is null"));
        }
        if len < HOST_ALIGN || len > isize::MAX as usize {
            return Err(Error::new(ErrorCode::InvalidSize, "host arena is smaller than 256 bytes or too large"));
        }
        if self.base.compare_exchange(core::ptr::null_mut(), base, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return Err(Error::new(ErrorCode::Busy, "a host arena was provided already"));
        }
        // SAFETY: the caller's contract; no backend has seen the region yet (`len` is still 0,
        // and `region` reports the arena only once both are set).
        unsafe { core::ptr::write_bytes(base, 0, len) };
        self.len.store(len, Ordering::Release);
        Ok(())
    }
}

impl Default for ProvidedArena {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: `provide`'s contract makes the region valid, exclusive and zeroed (initialised) for
// the rest of the program; before it completes the region is empty.
unsafe impl ArenaRegion for ProvidedArena {
    fn region(&self) -> (*mut u8, usize) {
        use core::sync::atomic::Ordering;
        match self.len.load(Ordering::Acquire) {
            0 => (core::ptr::null_mut(), 0),
            len => (self.base.load(Ordering::Acquire), len),
        }
    }
    fn bookkeeping(&self) -> &HostBookkeeping {
        &self.bookkeeping
    }
}

/// A fixed arena of `N` bytes and its bookkeeping, meant to be a `static`. It starts zeroed (so
/// it sits in `.bss` and a fresh allocation never exposes uninitialised bytes).
#[repr(C, align(256))]
pub struct HostArena<const N: usize> {
    bytes: UnsafeCell<[u8; N]>,
    bookkeeping: HostBookkeeping,
}

impl<const N: usize> core::fmt::Debug for HostArena<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "HostArena<{N}>")
    }
}

impl<const N: usize> HostArena<N> {
    /// A new, zeroed arena (place it in a `static`).
    pub const fn new() -> Self {
        Self { bytes: UnsafeCell::new([0; N]), bookkeeping: HostBookkeeping::new() }
    }
}

impl<const N: usize> Default for HostArena<N> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the arena's bytes are only reached through raw pointers: by one `HostBackend`, which
// serialises its own accesses (copies, fills and launches hold its execution lock) and never gives
// the same byte to two live allocations, and by code the allocations are handed to.
unsafe impl<const N: usize> Sync for HostArena<N> {}

// SAFETY: a fixed, initialised (zeroed) array that lives as long as the arena; the pointer is
// derived from the `UnsafeCell`, so writes through it are allowed.
unsafe impl<const N: usize> ArenaRegion for HostArena<N> {
    fn region(&self) -> (*mut u8, usize) {
        (self.bytes.get().cast::<u8>(), N)
    }
    fn bookkeeping(&self) -> &HostBookkeeping {
        &self.bookkeeping
    }
}
