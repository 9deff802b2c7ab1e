//! Work between devices: copies between two devices' memory (a peer copy within a platform, the
//! GPU's own copy to or from the host device's memory between platforms) and what one device
//! reaches of another's (`peer_access`). Part of the runtime's memory operations
//! (`memory.rs` routes device-to-device copies of two devices here).

use crate::backend::{Capabilities, CopyKind, PeerAccess};
use crate::error::{ErrorCode, Result, fail};
use crate::handle::Device;

use super::Runtime;
use super::info::Dev;

impl Runtime {
    /// A copy between two devices' memory (`memcpy` device to device, `copy_device`, the typed
    /// buffers' `copy_from_device`, `ordo_memcpy`, `olMemcpy` with two devices); see
    /// [`Runtime::copy_device`]. Both ranges lie in live allocations of `to` and `from`.
    ///
    /// # Safety
    /// As `memcpy`.
    pub(super) unsafe fn copy_between(
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
        // Two platforms: one side's memory must be host memory (the host device's), which the
        // other side's backend copies to or from as it copies any host memory.
        let host = |d: Dev| d.backend.capabilities().contains(Capabilities::HOST_ACCESSIBLE_MEMORY);
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
                if host(runner) {
                    "a copy between platforms runs on a queue of the device whose memory is not host memory"
                } else {
                    "a copy between two GPU platforms (copy through host memory)"
                },
            );
        }
        if q.is_none() {
            // Synchronous: after the other device's earlier work too (the runner's own is its
            // backend's to wait for, as for any copy without a queue).
            other.backend.settle();
        }
        let queue = q.map(|(_, raw)| raw);
        // SAFETY: the runner's range lies in its live allocation; the other side is host memory
        // of a live allocation of the host device, valid until the copy completes (waited for
        // below when it runs on a queue).
        unsafe { runner.backend.memcpy(runner.ordinal, kind, dst, src, size, queue) }?;
        if let Some(queue) = queue {
            // On a queue, after its earlier work; done before this returns. Nothing of the host
            // device's would wait for another platform's queue before freeing its memory, so the
            // copy may not outlive the call (a safe caller could free that memory next).
            // SAFETY: a live queue of the runner's device.
            unsafe { runner.backend.queue_synchronize(runner.ordinal, queue) }?;
        }
        Ok(())
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
    }
}
