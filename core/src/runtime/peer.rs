//! Work between devices: copies between two devices' memory (a peer copy within a platform; the
//! GPU's own copy to or from the host device's memory, page-locked for it when large; a copy
//! staged through page-locked host memory between two GPU platforms) and what one device
//! reaches of another's (`peer_access`), and copies that name each side's device
//! (`memcpy_between`, liboffload's `olMemcpy`). Part of the runtime's memory operations
//! (`memory.rs` routes device-to-device copies of two devices here).

use crate::backend::{Capabilities, CopyKind, MemKind, PeerAccess};
use crate::error::{ErrorCode, Result, fail};
use crate::handle::{Device, Queue};
use crate::trace::traced;

use super::info::Dev;
use super::{Runtime, Tables};

/// The most host-device allocations page-locked at once for copies between platforms; a copy
/// that finds no room copies from pageable memory.
pub(crate) const MAX_PINNED: usize = 32;

/// A copy between a GPU and the host device of at least this many bytes page-locks the host
/// device's allocation for the GPU's platform (once: it stays page-locked until it is freed or
/// the runtime is torn down), so that it is a page-locked copy, asynchronous on its queue.
/// Smaller copies copy from pageable memory and are finished before the call returns.
pub const PIN_MIN_BYTES: usize = 256 << 10;

/// The chunk of a copy between two GPU platforms, staged through page-locked host memory.
pub const STAGE_CHUNK_BYTES: usize = 8 << 20;

/// A host-device allocation page-locked by a GPU backend for its copies (or that it refused to
/// page-lock, so as not to ask again).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pinned {
    /// The allocation's slot in the allocation table.
    pub alloc: u32,
    pub base: u64,
    pub size: usize,
    /// The slot of the GPU device whose backend registered it.
    pub device: u32,
    /// Whether the backend registered it (`false`: it refused).
    pub registered: bool,
}

impl Runtime {
    /// A copy between two devices' memory (`memcpy` device to device, `copy_device`, the typed
    /// buffers' `copy_from_device`, `ordo_memcpy`, `olMemcpy` with two devices); see
    /// [`Runtime::copy_device`]. Both ranges lie in live allocations of `to` and `from`.
    ///
    /// # Safety
    /// As `memcpy`.
    pub(super) unsafe fn copy_between(
        t: &Tables,
        to: Dev,
        dst: u64,
        from: Dev,
        src: u64,
        size: usize,
        q: Option<(Dev, u64)>,
    ) -> Result<()> {
        if let Some((qd, _)) = q
            && qd.slot != to.slot
            && qd.slot != from.slot
        {
            return fail(ErrorCode::InvalidArgument, "the queue belongs to neither device of the copy");
        }
        if core::ptr::addr_eq(from.backend, to.backend) {
            let queue = q.map(|(qd, raw)| (qd.ordinal, raw));
            // SAFETY: two live ranges of two devices of this backend; a live queue of one of them.
            return Ok(unsafe { to.backend.memcpy_peer(to.ordinal, dst, from.ordinal, src, size, queue) }?);
        }
        // Two platforms: where one side's memory is host memory (the host device's), the other
        // side's backend copies to or from it as it copies any host memory.
        let host = |d: Dev| d.backend.capabilities().contains(Capabilities::HOST_ACCESSIBLE_MEMORY);
        if !host(to) && !host(from) {
            // SAFETY: forwarded contract.
            return unsafe { Self::copy_staged(to, dst, from, src, size, q) };
        }
        let by_source = match q {
            Some((qd, _)) => qd.slot == from.slot,
            // Without a queue: the side whose memory is not host memory does it.
            None => host(to),
        };
        let (runner, kind, other) =
            if by_source { (from, CopyKind::DeviceToHost, to) } else { (to, CopyKind::HostToDevice, from) };
        if !host(other) {
            return fail(
                ErrorCode::Unsupported,
                "a copy between platforms runs on a queue of the device whose memory is not host memory",
            );
        }
        let pinned = size >= PIN_MIN_BYTES && Self::pin(t, runner, if by_source { dst } else { src });
        if q.is_none() {
            // Synchronous: after the other device's earlier work too (the runner's own is its
            // backend's to wait for, as for any copy without a queue).
            other.backend.settle();
        }
        let queue = q.map(|(_, raw)| raw);
        // SAFETY: the runner's range lies in its live allocation; the other side is host memory
        // of a live allocation of the host device, valid until the copy completes: waited for
        // below when it is not page-locked, and by the allocation's free (`unpin`) when it is.
        unsafe { runner.backend.memcpy(runner.ordinal, kind, dst, src, size, queue) }?;
        if let Some(queue) = queue
            && !pinned
        {
            // Pageable memory: on the queue after its earlier work, and done before this returns
            // (nothing of the host device's would wait for another platform's queue before
            // freeing that memory, which a safe caller may do next).
            // SAFETY: a live queue of the runner's device.
            unsafe { runner.backend.queue_synchronize(runner.ordinal, queue) }?;
        }
        Ok(())
    }

    /// Page-locks, for `runner`'s backend, the host-device allocation holding `addr` (once;
    /// `Pinned` remembers it). Whether it is page-locked for that backend. The driver's call
    /// runs outside the list's lock (page-locking takes milliseconds for large ranges): the
    /// entry goes in first, not registered, so a copy of another thread meanwhile finds it and
    /// copies as from pageable memory; it is marked registered before this returns, so within
    /// the same shared section, before any exclusive call (a free's `unpin`, the teardown)
    /// can look at the list.
    fn pin(t: &Tables, runner: Dev, addr: u64) -> bool {
        let Ok(slot) = t.allocations.find_range(addr, 1) else { return false };
        let m = *t.allocations.slots.at(slot);
        if !matches!(m.kind, MemKind::Device | MemKind::Host | MemKind::Managed) {
            // Registered memory and globals end without `mem_free`; they are never page-locked.
            return false;
        }
        let mut pins = t.pinned.lock();
        let same_backend = |p: &Pinned| core::ptr::addr_eq(t.devices.at(p.device).driver, runner.backend);
        if let Some(p) = pins.iter().find(|p| p.alloc == slot && same_backend(p)) {
            return p.registered;
        }
        let pin = Pinned { alloc: slot, base: m.base, size: m.size, device: runner.slot, registered: false };
        if pins.push(pin).is_err() {
            return false;
        }
        drop(pins);
        // SAFETY: a live allocation of the host device, valid until it is freed (under exclusive
        // access, after this shared call); its free (and the teardown) unregisters it first
        // (`unpin`, `tear_down`). A range the driver has registered already (another backend's,
        // or sharing pages with one) is refused by it.
        let registered = unsafe { runner.backend.host_register(runner.ordinal, m.base, m.size) }.is_ok();
        if registered {
            // Only exclusive calls remove entries: the one pushed above is still there.
            let mut pins = t.pinned.lock();
            if let Some(p) = pins.iter_mut().find(|p| p.alloc == slot && p.device == runner.slot) {
                p.registered = true;
            }
        }
        registered
    }

    /// Before the allocation in `slot` is freed (exclusively): the GPU backends that page-locked
    /// it finish their work (every queue of their devices) and unregister it.
    pub(super) fn unpin(t: &Tables, slot: u32) {
        let mut pins = t.pinned.lock();
        if pins.is_empty() {
            return;
        }
        pins.retain(|p| {
            if p.alloc != slot {
                return true;
            }
            if p.registered {
                let d = t.devices.at(p.device);
                let backend = d.driver;
                for q in t.queues.iter_oldest_first() {
                    let queue = t.queues.at(q);
                    let qd = t.devices.at(queue.device);
                    if core::ptr::addr_eq(qd.driver, backend) {
                        // SAFETY: a live queue of a live device of that backend. Its errors stay
                        // with the queue; the range is unregistered regardless.
                        let _ = unsafe { backend.queue_synchronize(qd.ordinal, queue.raw) };
                    }
                }
                // SAFETY: registered by this backend in `pin`, unregistered once (it leaves the list).
                if let Err(e) = unsafe { backend.mem_free(d.ordinal, MemKind::Registered, p.base, p.size) } {
                    log::warn!("ordo: unregistering page-locked host-device memory failed: {e}");
                }
            }
            false
        });
    }

    /// A copy between two GPU platforms (CUDA and AMDGPU): staged through page-locked host
    /// memory of the source's platform, `STAGE_CHUNK_BYTES` at a time, each chunk copied to it
    /// and on from it before the next. With a queue (either device's), after its earlier work;
    /// done before this returns either way.
    ///
    /// # Safety
    /// As `memcpy`: both ranges lie in live allocations of their devices.
    unsafe fn copy_staged(to: Dev, dst: u64, from: Dev, src: u64, size: usize, q: Option<(Dev, u64)>) -> Result<()> {
        if let Some((qd, raw)) = q {
            // SAFETY: a live queue of its device.
            unsafe { qd.backend.queue_synchronize(qd.ordinal, raw) }?;
        }
        let chunk = size.min(STAGE_CHUNK_BYTES);
        let stage = from.backend.mem_alloc(from.ordinal, MemKind::Host, chunk)?;
        let mut copied = Ok(());
        let mut offset = 0;
        while offset < size && copied.is_ok() {
            let n = chunk.min(size - offset);
            let at = offset as u64;
            // SAFETY: `stage` is `chunk >= n` bytes of host memory of the source's backend, live
            // until freed below; both device ranges lie in their live allocations. Without a
            // queue each copy is complete when it returns (and starts after its device's
            // earlier work).
            copied = unsafe {
                from.backend
                    .memcpy(from.ordinal, CopyKind::DeviceToHost, stage, src + at, n, None)
                    .and_then(|()| to.backend.memcpy(to.ordinal, CopyKind::HostToDevice, dst + at, stage, n, None))
            };
            offset += n;
        }
        // SAFETY: allocated above with this kind and size; no copy uses it any more.
        let freed = unsafe { from.backend.mem_free(from.ordinal, MemKind::Host, stage, chunk) };
        copied?;
        Ok(freed?)
    }
}

impl Runtime {
    /// How `device` reaches `peer`'s memory: directly (a peer copy over the link) or not, with
    /// what the driver tells of the link (CUDA: `cuDeviceCanAccessPeer` and
    /// `cuDeviceGetP2PAttribute`). Devices of two platforms have no direct access; a device and
    /// itself, `same_device`. The devices' handle errors otherwise.
    ///
    /// ```
    /// # use ordo_core::Backend;
    /// # use ordo_core::host::{HostArena, HostBackend, builtin};
    /// # static ARENA: HostArena<4096> = HostArena::new();
    /// # static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
    /// # static BACKENDS: [&dyn Backend; 1] = [&HOST];
    /// ordo_core::static_runtime!(static RT = &BACKENDS);
    /// let rt = &RT;
    /// rt.init()?;
    /// let d = rt.device(rt.platform(0)?, 0)?;
    /// assert!(rt.peer_access(d, d)?.same_device);
    /// # rt.shutdown()?;
    /// # Ok::<(), ordo_core::Error>(())
    /// ```
    pub fn peer_access(&self, device: Device, peer: Device) -> Result<PeerAccess> {
        traced!("peer_access", ["device" = device.0.0, "peer" = peer.0.0], {
            self.with_shared(|t| {
                let (d, p) = (self.dev(t, device)?, self.dev(t, peer)?);
                if d.slot == p.slot {
                    return Ok(PeerAccess { same_device: true, ..PeerAccess::NONE });
                }
                if !core::ptr::addr_eq(d.backend, p.backend) {
                    return Ok(PeerAccess::NONE);
                }
                Ok(d.backend.peer_access(d.ordinal, p.ordinal)?)
            })
        })
    }
}

impl Runtime {
    /// Copies `size` bytes between memory named with its device (liboffload's `olMemcpy`):
    /// `None` names plain host memory, which must not lie in device memory ordo knows
    /// (`InvalidArgument`); a device side must start in an allocation of that very device
    /// (`InvalidArgument` when it lies in none or in another device's). Host to host is copied
    /// on the calling thread and takes no queue (`InvalidArgument` with one); everything else is
    /// `memcpy`, checked in the same pass over the tables. A zero-byte copy checks no address.
    ///
    /// # Safety
    /// As `memcpy`; host to host, both ranges are valid for `size` bytes.
    pub unsafe fn memcpy_between(
        &self,
        dst: u64,
        dst_device: Option<Device>,
        src: u64,
        src_device: Option<Device>,
        size: usize,
        queue: Option<Queue>,
    ) -> Result<()> {
        traced!(
            begun,
            "memcpy",
            [
                "dst" = dst,
                "dst_device" = dst_device.map_or(0, |h| h.0.0),
                "src" = src,
                "src_device" = src_device.map_or(0, |h| h.0.0),
                "bytes" = size,
                "queue" = queue.map_or(0, |h| h.0.0)
            ],
            {
                let kind = match (dst_device, src_device) {
                    (Some(_), None) => Some(CopyKind::HostToDevice),
                    (None, Some(_)) => Some(CopyKind::DeviceToHost),
                    (Some(_), Some(_)) => Some(CopyKind::DeviceToDevice),
                    (None, None) => None,
                };
                self.with_shared(|t| {
                    // No range may be larger than isize::MAX bytes (a host-to-host copy of such a size
                    // would run past both buffers before any driver could refuse it).
                    if size > super::memory::MAX_SIZE {
                        return fail(ErrorCode::InvalidSize, "size is larger than isize::MAX");
                    }
                    // A zero-byte copy checks no address.
                    for (addr, named) in [(dst, dst_device), (src, src_device)].into_iter().filter(|_| size != 0) {
                        let found = t.alloc_range(addr, 1);
                        match (named, found) {
                            (None, Ok(m)) if matches!(m.kind, MemKind::Device | MemKind::Global | MemKind::Ordered) => {
                                return fail(
                                    ErrorCode::InvalidArgument,
                                    "a device pointer is named with the host device",
                                );
                            }
                            (None, _) => {}
                            (Some(d), Ok(m)) if m.device != self.dev(t, d)?.slot => {
                                return fail(
                                    ErrorCode::InvalidArgument,
                                    "a pointer is not memory of the device named with it",
                                );
                            }
                            (Some(_), Ok(_)) => {}
                            (Some(_), Err(e)) if e.code == ErrorCode::NotFound => {
                                return fail(
                                    ErrorCode::InvalidArgument,
                                    "a device pointer is in no allocation of its device",
                                );
                            }
                            (Some(_), Err(e)) => return Err(e),
                        }
                    }
                    match kind {
                        // SAFETY: forwarded contract.
                        Some(kind) => unsafe { self.copy_in(t, kind, dst, src, size, queue, begun) },
                        None if queue.is_some() => {
                            fail(ErrorCode::InvalidArgument, "a copy on a queue needs a non-host device")
                        }
                        None => {
                            // SAFETY: two host ranges of `size` bytes (the caller's contract).
                            unsafe { crate::host::copy_addresses(dst, src, size) };
                            Ok(())
                        }
                    }
                })
            }
        )
    }
}
