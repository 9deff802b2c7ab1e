//! Operations on memory: allocation and release (by address and by handle), host registration,
//! copies (fills are in `fill.rs`).
//!
//! Every operation validates all of its input before it calls a backend, so bad input returns a
//! specific error and changes nothing; that validation is what the backend trait's `unsafe`
//! methods rely on. Calls that only use objects run shared; calls that create or destroy objects
//! run exclusive. A failed release still retires the handle: the backend was told once, and it is
//! never told twice. Depends on `info` (handle resolution), the runtime's tables, `alloc_table`,
//! `backend`, `handle` and `error`.

use crate::alloc_table::{AllocEntry, NO_OWNER};
use crate::backend::{CopyKind, MemKind};
use crate::error::{ErrorCode, Result, fail};
use crate::handle::{Allocation, Device, DevicePtr, Queue};
use crate::trace::{WorkKind, traced};

use super::{Runtime, Tables};

use super::info::Dev;
use super::ordered::Place;

pub(super) const MAX_SIZE: usize = isize::MAX as usize;

/// Whether `size` is one that `check_size` accepts (1 to `isize::MAX`), in one compare.
#[inline(always)]
pub(super) const fn size_ok(size: usize) -> bool {
    size.wrapping_sub(1) < MAX_SIZE
}

pub(super) fn check_size(size: usize) -> Result<()> {
    match size {
        0 => fail(ErrorCode::InvalidSize, "size is zero"),
        s if s > MAX_SIZE => fail(ErrorCode::InvalidSize, "size is larger than isize::MAX"),
        _ => Ok(()),
    }
}

impl Runtime {
    // ---- memory ---------------------------------------------------------------------------

    /// Allocates `size` bytes of `kind` memory on a device; returns its address.
    pub fn mem_alloc(&self, device: Device, kind: MemKind, size: usize) -> Result<DevicePtr> {
        traced!("mem_alloc", ["device" = device.0.0, "size" = size], {
            self.mem_allocate(device, kind, size).map(|(_, ptr)| ptr)
        })
    }

    /// Allocates as `mem_alloc` does; returns the allocation's handle and its address. The
    /// handle names this allocation and no other: `mem_release` of it after the memory was freed
    /// (by handle, by address or by a teardown) is `InvalidHandle`, even when the backend has
    /// since handed the same address to a new allocation.
    pub fn mem_allocate(&self, device: Device, kind: MemKind, size: usize) -> Result<(Allocation, DevicePtr)> {
        traced!("mem_allocate", ["device" = device.0.0, "size" = size], {
            self.with_exclusive(|t| {
                check_size(size)?;
                if let MemKind::Registered | MemKind::Global | MemKind::Ordered = kind {
                    // Not allocation kinds of `mem_alloc`: `ORDO_MEM_REGISTERED`, `ORDO_MEM_GLOBAL`
                    // and `ORDO_MEM_ORDERED` are as unknown to it as they were before registration,
                    // globals and queue-ordered memory existed (`mem_alloc_on` makes the last).
                    return fail(
                        ErrorCode::InvalidEnumeration,
                        "registered memory, program globals and queue-ordered memory are not mem_alloc kinds",
                    );
                }
                let d = self.dev(t, device)?;
                if t.allocations.slots.is_full() {
                    return fail(ErrorCode::OutOfResources, "allocation table is full (ORDO_MAX_ALLOCATIONS)");
                }
                let base = d.backend.mem_alloc(d.ordinal, kind, size)?;
                let entry = AllocEntry { base, size, device: d.slot, kind, owner: NO_OWNER };
                match t.alloc_insert(entry) {
                    Ok(h) => Ok((Allocation(h), DevicePtr(base))),
                    Err(e) => {
                        // SAFETY: the allocation the backend just returned, with its kind and size.
                        let _ = unsafe { d.backend.mem_free(d.ordinal, kind, base, size) };
                        Err(e)
                    }
                }
            })
        })
    }

    /// Frees the allocation a handle from `mem_allocate` names. `InvalidHandle` when it was freed
    /// already (by handle, by address or by a teardown), comes from another runtime, or names a
    /// program's global variable; `NullHandle` for the null handle. Nothing changes on error.
    pub fn mem_release(&self, allocation: Allocation) -> Result<()> {
        traced!("mem_release", ["allocation" = allocation.0.0], {
            self.settle_backends();
            self.with_exclusive(|t| {
                let (place, m) = t.alloc_handle(allocation.0)?;
                if m.owner != NO_OWNER {
                    return fail(
                        ErrorCode::InvalidHandle,
                        "handle names a program's global variable, not an allocation",
                    );
                }
                let d = self.dev_at(t, m.device);
                Self::no_capture_on(t, d.slot)?;
                if let Place::Main(slot) = place {
                    Self::unpin(t, slot);
                }
                t.alloc_remove(place);
                // SAFETY: a live allocation of this device (found by its handle), removed from the
                // table first so it is never passed again.
                Ok(unsafe { d.backend.mem_free(d.ordinal, m.kind, m.base, m.size) }?)
            })
        })
    }

    /// The address, size, kind and device of the live allocation a handle names (the same
    /// errors as `mem_release` for a bad handle).
    pub fn allocation_info(&self, allocation: Allocation) -> Result<(DevicePtr, usize, MemKind, Device)> {
        traced!("allocation_info", ["allocation" = allocation.0.0], {
            self.with_shared(|t| {
                let (_, m) = t.alloc_handle(allocation.0)?;
                if m.owner != NO_OWNER {
                    return fail(
                        ErrorCode::InvalidHandle,
                        "handle names a program's global variable, not an allocation",
                    );
                }
                Ok((DevicePtr(m.base), m.size, m.kind, Device(t.devices.handle_at(m.device))))
            })
        })
    }

    /// Registers `size` bytes of existing host memory at `ptr` with a device: page-locked and
    /// mapped for it at the same address, named by that address like an allocation (kind
    /// `Registered`: copies, fills and kernels may use it; `mem_info` finds it) until
    /// `host_unregister` of `ptr` ends it (`mem_free` refuses it), or the final teardown does
    /// (with the device's memory). Errors:
    /// `NullPointer`, `InvalidSize` (0 or above `isize::MAX`), the device's handle errors,
    /// `InvalidArgument` when the range overlaps an allocation or registered range,
    /// `OutOfResources` when the allocation table is full, `Unsupported` from backends that
    /// cannot register host memory (AMDGPU), and the driver's errors. On the host backend the
    /// range is the device's memory as it is (nothing is pinned).
    ///
    /// # Safety
    /// `[ptr, ptr + size)` is host memory that stays valid until it is unregistered or the
    /// runtime is torn down.
    pub unsafe fn host_register(&self, device: Device, ptr: *mut u8, size: usize) -> Result<DevicePtr> {
        traced!("host_register", ["device" = device.0.0, "size" = size], {
            self.with_exclusive(|t| {
                if ptr.is_null() {
                    return fail(ErrorCode::NullPointer, "host memory to register is null");
                }
                check_size(size)?;
                let d = self.dev(t, device)?;
                if t.allocations.slots.is_full() {
                    return fail(ErrorCode::OutOfResources, "allocation table is full (ORDO_MAX_ALLOCATIONS)");
                }
                let base = ptr as u64;
                if t.alloc_overlaps(base, size) {
                    return fail(ErrorCode::InvalidArgument, "the range overlaps memory ordo knows already");
                }
                // SAFETY: the caller's contract; the table holds no range containing its start.
                unsafe { d.backend.host_register(d.ordinal, base, size) }?;
                let entry = AllocEntry { base, size, device: d.slot, kind: MemKind::Registered, owner: NO_OWNER };
                if let Err(e) = t.alloc_insert(entry) {
                    // SAFETY: the range just registered, unregistered once.
                    let _ = unsafe { d.backend.mem_free(d.ordinal, MemKind::Registered, base, size) };
                    return Err(e);
                }
                Ok(DevicePtr(base))
            })
        })
    }

    /// Frees the allocation whose base address is `ptr`. The start of registered host memory is
    /// `NotFound` (it is no allocation: `host_unregister` ends it), a program's global variable
    /// `InvalidArgument` (it leaves with its program); nothing changes on error.
    pub fn mem_free(&self, ptr: DevicePtr) -> Result<()> {
        traced!("mem_free", ["ptr" = ptr.0], {
            self.settle_backends();
            self.with_exclusive(|t| {
                let (place, m) = t.alloc_base(ptr.0)?;
                match m.kind {
                    MemKind::Global => {
                        return fail(
                            ErrorCode::InvalidArgument,
                            "the address is a program's global variable: unload the program",
                        );
                    }
                    MemKind::Registered => {
                        return fail(
                            ErrorCode::NotFound,
                            "the address is registered host memory, not an allocation: unregister it",
                        );
                    }
                    _ => {}
                }
                let d = self.dev_at(t, m.device);
                Self::no_capture_on(t, d.slot)?;
                if let Place::Main(slot) = place {
                    Self::unpin(t, slot);
                }
                t.alloc_remove(place);
                // SAFETY: a live allocation of this device (found by its base), removed from the
                // table first so it is never passed again.
                Ok(unsafe { d.backend.mem_free(d.ordinal, m.kind, m.base, m.size) }?)
            })
        })
    }

    /// Unregisters the host memory `host_register` registered at `ptr` (its start), in one
    /// lookup. `NotFound` for an address ordo does not know (or an unregistered one),
    /// `InvalidArgument` for the start of an allocation or global variable (`mem_free` and the
    /// program's unload end those) and for an address inside a registered range; nothing
    /// changes on error.
    pub fn host_unregister(&self, ptr: DevicePtr) -> Result<()> {
        traced!("host_unregister", ["ptr" = ptr.0], {
            self.settle_backends();
            self.with_exclusive(|t| {
                let (place, m) = t.alloc_base(ptr.0)?;
                if m.kind != MemKind::Registered {
                    return fail(ErrorCode::InvalidArgument, "the address is not the start of registered host memory");
                }
                let d = self.dev_at(t, m.device);
                t.alloc_remove(place);
                // SAFETY: a live registration of this device (found by its start), removed from the
                // table first so it is never passed again.
                Ok(unsafe { d.backend.mem_free(d.ordinal, m.kind, m.base, m.size) }?)
            })
        })
    }

    /// The base address, size, kind and device of the allocation containing `ptr`.
    pub fn mem_info(&self, ptr: DevicePtr) -> Result<(DevicePtr, usize, MemKind, Device)> {
        traced!("mem_info", ["ptr" = ptr.0], {
            self.with_shared(|t| {
                let m = t.alloc_range(ptr.0, 1)?;
                Ok((DevicePtr(m.base), m.size, m.kind, Device(t.devices.handle_at(m.device))))
            })
        })
    }

    /// The device whose allocation holds `[addr, addr + size)` (`size > 0`).
    pub(super) fn range_device(&self, t: &Tables, addr: u64, size: usize) -> Result<Dev> {
        check_size(size)?;
        let m = t.alloc_range(addr, size)?;
        Ok(self.dev_at(t, m.device))
    }

    /// Checks that a queue, when given, belongs to the device `d` works on; its raw value.
    pub(super) fn queue_for(d: Dev, queue: Option<(Dev, u64)>) -> Result<Option<u64>> {
        match queue {
            None => Ok(None),
            Some((qd, _)) if !core::ptr::addr_eq(qd.backend, d.backend) => {
                fail(ErrorCode::InvalidArgument, "queue and memory belong to different platforms")
            }
            Some((qd, _)) if qd.slot != d.slot => {
                fail(ErrorCode::InvalidArgument, "queue and memory belong to different devices")
            }
            Some((_, raw)) => Ok(Some(raw)),
        }
    }

    /// Copies `size` bytes between host and device, or device and device, given raw addresses
    /// (the C ABI's `ordo_memcpy`); with a queue, asynchronously on it, else it returns when the
    /// copy is complete and starts after all work submitted earlier to the device's queues.
    ///
    /// The device side (both sides for device-to-device) must lie in one live allocation, and the
    /// queue must belong to the device of the memory (`InvalidArgument` otherwise); the host side
    /// must not be a GPU's device memory ordo knows (`InvalidArgument`: the host cannot address
    /// it). A
    /// device-to-device copy may join any two devices (see [`Runtime::copy_device`] for how,
    /// and which queue it takes). A zero-byte copy succeeds and does nothing (its
    /// addresses are not looked at; a queue, when given, is still checked).
    ///
    /// # Safety
    /// Host pointers must be valid for `size` bytes; with a queue, until the copy completes.
    pub unsafe fn memcpy(&self, kind: CopyKind, dst: u64, src: u64, size: usize, queue: Option<Queue>) -> Result<()> {
        traced!(begun, "memcpy", ["dst" = dst, "src" = src, "bytes" = size, "queue" = queue.map_or(0, |h| h.0.0)], {
            // SAFETY: forwarded contract.
            self.with_shared(|t| unsafe { self.copy_in(t, kind, dst, src, size, queue, begun) })
        })
    }

    /// `memcpy`'s body, in a shared section the caller holds.
    ///
    /// # Safety
    /// As `memcpy`.
    #[allow(clippy::too_many_arguments, reason = "memcpy's five, the tables, and the call's trace start")]
    pub(super) unsafe fn copy_in(
        &self,
        t: &Tables,
        kind: CopyKind,
        dst: u64,
        src: u64,
        size: usize,
        queue: Option<Queue>,
        begun: Option<crate::trace::Begun>,
    ) -> Result<()> {
        let q = queue.map(|q| self.queue(t, q)).transpose()?;
        if size == 0 {
            return Ok(());
        }
        if size > MAX_SIZE {
            return fail(ErrorCode::InvalidSize, "size is larger than isize::MAX");
        }
        if dst == 0 || src == 0 {
            return fail(ErrorCode::NullPointer, "copy source or destination is null");
        }
        let d = match kind {
            CopyKind::HostToDevice => {
                Self::host_side(t, src)?;
                self.range_device(t, dst, size)?
            }
            CopyKind::DeviceToHost => {
                Self::host_side(t, dst)?;
                self.range_device(t, src, size)?
            }
            CopyKind::DeviceToDevice => {
                let from = self.range_device(t, src, size)?;
                let to = self.range_device(t, dst, size)?;
                if q.is_none() {
                    Self::no_capture_on(t, from.slot)?;
                    Self::no_capture_on(t, to.slot)?;
                }
                if from.slot != to.slot {
                    // SAFETY: forwarded contract; both ranges lie in live allocations.
                    return unsafe { Self::copy_between(t, to, dst, from, src, size, q) };
                }
                to
            }
        };
        let q = Self::queue_for(d, q)?;
        if q.is_none() {
            Self::no_capture_on(t, d.slot)?;
        }
        let timing = match (queue, q) {
            (Some(queue), Some(raw)) => Self::time_work(t, begun, d.backend, d.ordinal, queue, raw),
            _ => None,
        };
        // SAFETY: the device ranges lie in live allocations of this device, the queue is a live
        // queue of it; host ranges are the caller's contract.
        let r = unsafe { d.backend.memcpy(d.ordinal, kind, dst, src, size, q) };
        Self::work_done(timing, || WorkKind::Copy { bytes: size as u64 }, r.map_err(Into::into))
    }

    /// `InvalidArgument` when the host side of a copy starts in memory ordo knows that the host
    /// cannot address: a GPU's device, queue-ordered or global memory (the host device's memory
    /// is host memory, and pinned, managed and registered memory are host-addressable). Such a
    /// copy would read or write a device address on the host and fault the process.
    #[inline]
    fn host_side(t: &Tables, addr: u64) -> Result<()> {
        if let Ok(m) = t.alloc_range(addr, 1)
            && matches!(m.kind, MemKind::Device | MemKind::Global | MemKind::Ordered)
            && t.devices.at(m.device).driver.kind() != crate::backend::BackendKind::Host
        {
            return Self::device_memory_as_host();
        }
        Ok(())
    }

    #[cold]
    fn device_memory_as_host() -> Result<()> {
        fail(
            ErrorCode::InvalidArgument,
            "the host side of the copy is a GPU's device memory: copy device to device instead",
        )
    }

    /// Copies `src` into device memory at `dst` and waits for it.
    pub fn copy_to_device(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        traced!("memcpy", ["dst" = dst.0, "src" = src.as_ptr() as u64, "bytes" = src.len(), "queue" = 0u64], {
            // SAFETY: `src` is valid for its length for the whole (synchronous) copy.
            unsafe { self.memcpy(CopyKind::HostToDevice, dst.0, src.as_ptr() as u64, src.len(), None) }
        })
    }

    /// Copies device memory at `src` into `dst` and waits for it.
    pub fn copy_from_device(&self, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        traced!("memcpy", ["dst" = dst.as_ptr() as u64, "src" = src.0, "bytes" = dst.len(), "queue" = 0u64], {
            // SAFETY: `dst` is valid for its length for the whole (synchronous) copy.
            unsafe { self.memcpy(CopyKind::DeviceToHost, dst.as_mut_ptr() as u64, src.0, dst.len(), None) }
        })
    }

    /// Copies `size` bytes between device allocations; with a queue, asynchronously. The two may
    /// be on any two devices (every copy API reaches the same path):
    /// - two devices of one platform: the backend's peer copy (CUDA: `cuMemcpyPeerAsync` on the
    ///   given queue, which may be either device's, with peer access enabled the first time a
    ///   pair copies where `cuDeviceCanAccessPeer` allows; without a queue, `cuMemcpyPeer` after
    ///   both devices' earlier work);
    /// - two platforms, one of them the host device (whose memory is host memory): the other
    ///   device's backend copies from or to it as from or to any host memory, on that device's
    ///   queue when one is given (after its earlier work; a queue of the host device:
    ///   `Unsupported`), else synchronously, after both devices' earlier work. A copy of at
    ///   least [`PIN_MIN_BYTES`](crate::PIN_MIN_BYTES) page-locks the host device's allocation
    ///   for the GPU's platform the first time (it stays so until freed: its free waits for that
    ///   platform's queues and unregisters it) and runs asynchronously on the queue; a smaller
    ///   one (or one the driver does not page-lock) is finished before the call returns, so
    ///   that the host device's memory is never freed under it;
    /// - two GPU platforms (CUDA and AMDGPU): staged through page-locked memory of the source's
    ///   platform, [`STAGE_CHUNK_BYTES`](crate::STAGE_CHUNK_BYTES) at a time, after the given
    ///   queue's earlier work (either device's), finished before the call returns.
    ///
    /// Work of the other device's queues is ordered with an event (`queue_wait_event` takes an
    /// event of any device). Errors as every copy: `InvalidSize`, `NullPointer`, a range outside
    /// its allocation, a queue of neither device (`InvalidArgument`).
    ///
    /// ```
    /// # use ordo_core::{Backend, MemKind};
    /// # use ordo_core::host::{HostArena, HostBackend, builtin};
    /// static A: HostArena<4096> = HostArena::new();
    /// static B: HostArena<4096> = HostArena::new();
    /// static HOST_A: HostBackend = HostBackend::new(&A, builtin::PROGRAMS, None);
    /// static HOST_B: HostBackend = HostBackend::new(&B, builtin::PROGRAMS, None);
    /// static BACKENDS: [&dyn Backend; 2] = [&HOST_A, &HOST_B]; // two platforms, a device each
    /// ordo_core::static_runtime!(static RT = &BACKENDS);
    /// let rt = &RT;
    /// rt.init()?;
    /// let (a, b) = (rt.device(rt.platform(0)?, 0)?, rt.device(rt.platform(1)?, 0)?);
    /// let (x, y) = (rt.mem_alloc(a, MemKind::Device, 64)?, rt.mem_alloc(b, MemKind::Device, 64)?);
    /// rt.copy_to_device(x, &[7; 64])?;
    /// rt.copy_device(y, x, 64, None)?; // between the two devices
    /// let mut back = [0u8; 64];
    /// rt.copy_from_device(&mut back, y)?;
    /// assert_eq!(back, [7; 64]);
    /// # rt.shutdown()?;
    /// # Ok::<(), ordo_core::Error>(())
    /// ```
    pub fn copy_device(&self, dst: DevicePtr, src: DevicePtr, size: usize, queue: Option<Queue>) -> Result<()> {
        traced!("memcpy", ["dst" = dst.0, "src" = src.0, "bytes" = size, "queue" = queue.map_or(0, |h| h.0.0)], {
            // SAFETY: both sides are device ranges that the runtime validates.
            unsafe { self.memcpy(CopyKind::DeviceToDevice, dst.0, src.0, size, queue) }
        })
    }

    /// Enqueues a host-to-device copy of `size` bytes from `src` on `queue`.
    ///
    /// # Safety
    /// `src` must stay valid and unchanged for `size` bytes until the queue has passed the copy.
    pub unsafe fn copy_to_device_async(&self, queue: Queue, dst: DevicePtr, src: *const u8, size: usize) -> Result<()> {
        traced!("memcpy", ["dst" = dst.0, "src" = src as u64, "bytes" = size, "queue" = queue.0.0], {
            // SAFETY: forwarded contract.
            unsafe { self.memcpy(CopyKind::HostToDevice, dst.0, src as u64, size, Some(queue)) }
        })
    }

    /// Enqueues a device-to-host copy of `size` bytes into `dst` on `queue`.
    ///
    /// # Safety
    /// `dst` must stay valid for `size` bytes, and unread, until the queue has passed the copy.
    pub unsafe fn copy_from_device_async(&self, queue: Queue, dst: *mut u8, src: DevicePtr, size: usize) -> Result<()> {
        traced!("memcpy", ["dst" = dst as u64, "src" = src.0, "bytes" = size, "queue" = queue.0.0], {
            // SAFETY: forwarded contract.
            unsafe { self.memcpy(CopyKind::DeviceToHost, dst as u64, src.0, size, Some(queue)) }
        })
    }

    /// As `memcpy`, and the device side (the destination of a host-to-device or device-to-device
    /// copy, the source of a device-to-host one) must lie in the live allocation `owner` names,
    /// checked in the same call as the copy: `InvalidHandle` when the handle is released, stale
    /// (from before a re-init, whose addresses may be another allocation's now) or another
    /// runtime's, `InvalidArgument` for a range outside it. What the typed API's buffers use: they
    /// name their memory by identity, so a stale one never reaches a newer allocation at its
    /// address. A zero-byte copy checks the handle too.
    ///
    /// # Safety
    /// As `memcpy`.
    pub unsafe fn memcpy_owned(
        &self,
        owner: Allocation,
        kind: CopyKind,
        dst: u64,
        src: u64,
        size: usize,
        queue: Option<Queue>,
    ) -> Result<()> {
        traced!(
            begun,
            "memcpy",
            ["owner" = owner.0.0, "dst" = dst, "src" = src, "bytes" = size, "queue" = queue.map_or(0, |h| h.0.0)],
            {
                self.with_shared(|t| {
                    let side = if kind == CopyKind::DeviceToHost { src } else { dst };
                    Self::owned_range(t, owner, side, size)?;
                    // SAFETY: forwarded contract.
                    unsafe { self.copy_in(t, kind, dst, src, size, queue, begun) }
                })
            }
        )
    }

    /// A copy of `size` bytes between two device ranges, each of which must lie in the live
    /// allocation its owner names (the errors of `memcpy_owned`, the destination's first), checked
    /// in the same call as the copy; then as `copy_device`.
    pub fn copy_device_owned(
        &self,
        dst_owner: Allocation,
        dst: DevicePtr,
        src_owner: Allocation,
        src: DevicePtr,
        size: usize,
        queue: Option<Queue>,
    ) -> Result<()> {
        traced!(
            begun,
            "memcpy",
            [
                "dst_owner" = dst_owner.0.0,
                "dst" = dst.0,
                "src_owner" = src_owner.0.0,
                "src" = src.0,
                "bytes" = size,
                "queue" = queue.map_or(0, |h| h.0.0)
            ],
            {
                self.with_shared(|t| {
                    Self::owned_range(t, dst_owner, dst.0, size)?;
                    Self::owned_range(t, src_owner, src.0, size)?;
                    // SAFETY: both sides are device ranges that the runtime validates.
                    unsafe { self.copy_in(t, CopyKind::DeviceToDevice, dst.0, src.0, size, queue, begun) }
                })
            }
        )
    }

    /// Whether `[addr, addr + size)` lies in the live allocation `owner` names (an allocation of
    /// `mem_allocate`'s, not a global variable).
    pub(super) fn owned_range(t: &Tables, owner: Allocation, addr: u64, size: usize) -> Result<()> {
        let (_, m) = t.alloc_handle(owner.0)?;
        if m.owner != NO_OWNER {
            return fail(ErrorCode::InvalidHandle, "handle names a program's global variable, not an allocation");
        }
        let end = m.base.saturating_add(m.size as u64);
        if addr < m.base || addr.checked_add(size as u64).is_none_or(|e| e > end) {
            return fail(ErrorCode::InvalidArgument, "the range is not in the named allocation");
        }
        Ok(())
    }
}
