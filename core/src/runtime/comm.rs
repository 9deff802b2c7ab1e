//! Communicators and collectives (DESIGN.md, "Collectives and the edge of one process").
//!
//! A communicator is one rank of a group of devices that reduce, gather and exchange data
//! together. It is made two ways: over several devices of this process at once
//! (`comm_create_all`, the ranks "created together"), or as one rank per process from a
//! `UniqueId` that the user carries to the other processes (`comm_create_rank`). A backend with a
//! collective library (CUDA: NCCL) runs them natively; on every other backend (the host, AMDGPU)
//! the runtime's reference engine (`reference.rs`) runs them over the backends' copies, between
//! devices of any of those platforms. Every call is checked before any library sees it, with the
//! errors copies give. Communicators live in their own table and are destroyed by the teardown
//! after the device's graphs and before its queues (finalized first, together, with a bounded
//! wait). Depends on the runtime's tables (`super`), `backend` and `error`.

use crate::backend::{CollectiveCall, CollectiveKind, CollectiveLibrary, DataType, ReduceOp, UniqueId};
use crate::error::{ErrorCode, Result, fail};
use crate::handle::{Communicator, Device, DevicePtr, Platform, Queue};
use crate::trace::traced;

use super::info::Dev;
use super::{Runtime, Tables};

/// The most calls (ranks' parts) one `Runtime::collective` call takes.
pub const MAX_GROUP_CALLS: usize = 64;

/// A communicator's entry.
pub(crate) struct CommEntry {
    /// The backend's value (the reference engine's: the rank).
    pub raw: u64,
    /// Device slot.
    pub device: u32,
    pub rank: u32,
    pub size: u32,
    /// Shared by the communicators `comm_create_all` made together (from 1); 0 for a rank of a
    /// communicator across processes.
    pub clique: u32,
    /// Run by the backend's library (else by the reference engine).
    pub native: bool,
}

/// One rank's part of a collective call (`Runtime::collective`). Which buffers a kind reads and
/// writes, and their lengths, are `CollectiveKind`'s; an address a kind does not use on this
/// rank is ignored (0 is fine).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Collective {
    /// The rank's communicator.
    pub comm: Communicator,
    /// The queue the work runs on: a queue of the communicator's device.
    pub queue: Queue,
    /// What the call does.
    pub kind: CollectiveKind,
    /// The element type.
    pub dtype: DataType,
    /// The reduction (all-reduce, reduce, reduce-scatter; ignored otherwise).
    pub op: ReduceOp,
    /// Elements per rank.
    pub count: usize,
    /// The root (broadcast, reduce) or the peer (send, receive); ignored otherwise.
    pub peer: u32,
    /// The address read.
    pub send: DevicePtr,
    /// The address written.
    pub recv: DevicePtr,
}

/// A call after its checks: its device and what the backend gets.
#[derive(Clone, Copy)]
pub(super) struct Checked {
    pub dev: Dev,
    pub call: CollectiveCall,
    pub rank: u32,
    pub size: u32,
    pub clique: u32,
    pub native: bool,
    /// Communicator slot.
    pub slot: u32,
}

impl Runtime {
    /// The collective library of `platform`'s backend: its name and version (NCCL on CUDA).
    /// Errors: the handle's; `Unsupported` when the backend has none (the runtime's reference
    /// engine runs its collectives); `NotPresent` with the reason when the library cannot be
    /// loaded.
    pub fn collective_library(&self, platform: Platform) -> Result<CollectiveLibrary> {
        self.with_shared(|t| {
            let p = t.platforms.get(platform.0)?;
            let backend = self.backends()[usize::from(p.backend)];
            match backend.collectives() {
                Some(c) => Ok(c.library()?),
                None => fail(ErrorCode::Unsupported, "the runtime's reference engine runs this platform's collectives"),
            }
        })
    }

    /// Creates one communicator per device of `devices`, rank i on `devices[i]`, written to
    /// `out` (`out.len() == devices.len()`): NCCL's `ncclCommInitAll`, made in one group so
    /// that no device waits for another. The devices are distinct, and either all of one
    /// platform whose backend has a collective library, or all of platforms without one (the
    /// reference engine, which may join several host platforms).
    ///
    /// Errors: a handle's errors; `InvalidArgument` for an empty list, lengths that differ, a
    /// device named twice or devices of platforms that cannot join; `Unsupported` with the
    /// reason when the collective library cannot be loaded (NCCL not found); `OutOfResources` when the table has no room for
    /// all (nothing is created).
    pub fn comm_create_all(&self, devices: &[Device], out: &mut [Communicator]) -> Result<()> {
        traced!("comm_create_all", ["devices" = devices.len() as u64], {
            self.with_exclusive(|t| {
                if devices.is_empty() || devices.len() != out.len() {
                    return fail(ErrorCode::InvalidArgument, "one communicator per device: the lists differ or are empty");
                }
                if devices.len() > MAX_GROUP_CALLS {
                    return fail(ErrorCode::InvalidArgument, "at most 64 devices in one communicator");
                }
                let mut devs: heapless::Vec<Dev, MAX_GROUP_CALLS> = heapless::Vec::new();
                for &device in devices {
                    let d = self.dev(t, device)?;
                    if devs.iter().any(|o| o.slot == d.slot) {
                        return fail(ErrorCode::InvalidArgument, "a device is named twice");
                    }
                    let _ = devs.push(d);
                }
                let first = devs[0];
                let native = first.backend.collectives();
                for d in &devs[1..] {
                    let same = core::ptr::addr_eq(d.backend, first.backend);
                    if native.is_some() && !same || native.is_none() && d.backend.collectives().is_some() {
                        return fail(
                            ErrorCode::InvalidArgument,
                            "the devices' platforms cannot join one communicator (a collective library joins its own devices only)",
                        );
                    }
                }
                if t.comms.len() + devs.len() > crate::capacity::MAX_COMMUNICATORS {
                    return fail(ErrorCode::OutOfResources, "communicator table is full (ORDO_MAX_COMMUNICATORS)");
                }
                let mut raws = [0u64; MAX_GROUP_CALLS];
                if let Some(c) = native {
                    usable(c)?;
                    let mut ordinals = [0u32; MAX_GROUP_CALLS];
                    for (o, d) in ordinals.iter_mut().zip(&devs) {
                        *o = d.ordinal;
                    }
                    // SAFETY: distinct, live devices of this backend.
                    unsafe { c.comm_create_all(&ordinals[..devs.len()], &mut raws[..devs.len()]) }?;
                } else {
                    for (i, r) in raws.iter_mut().enumerate().take(devs.len()) {
                        *r = i as u64;
                    }
                }
                t.next_clique = t.next_clique.checked_add(1).unwrap_or(1);
                let clique = t.next_clique;
                let size = devs.len() as u32;
                for (i, d) in devs.iter().enumerate() {
                    let entry =
                        CommEntry { raw: raws[i], device: d.slot, rank: i as u32, size, clique, native: native.is_some() };
                    match t.comms.insert(entry) {
                        Ok(h) => out[i] = Communicator(h),
                        Err(_) => {
                            // Retired slots left less room than the count promised: nothing stays.
                            for made in &out[..i] {
                                let _ = t.comms.remove(made.0);
                            }
                            if let Some(c) = native {
                                for (d, &raw) in devs.iter().zip(&raws) {
                                    // SAFETY: values just created; never passed again.
                                    let _ = unsafe { c.comm_destroy(d.ordinal, raw) };
                                }
                            }
                            return fail(ErrorCode::OutOfResources, "communicator table is full (ORDO_MAX_COMMUNICATORS)");
                        }
                    }
                }
                Ok(())
            })
        })
    }

    /// A unique id for `comm_create_rank`, from `platform`'s collective library (NCCL's
    /// `ncclGetUniqueId`): made by one process and carried to every rank by any means (a file,
    /// the environment, `MPI_Bcast`, a socket).
    /// Errors: the handle's; `Unsupported` for a platform without a collective library (the
    /// reference engine joins the devices of one process only, or the library cannot be loaded:
    /// the reason says which).
    pub fn comm_unique_id(&self, platform: Platform) -> Result<UniqueId> {
        traced!("comm_unique_id", ["platform" = platform.0.0], {
            self.with_shared(|t| {
                let p = t.platforms.get(platform.0)?;
                match self.backends()[usize::from(p.backend)].collectives() {
                    Some(c) => {
                        usable(c)?;
                        Ok(c.unique_id()?)
                    }
                    None => {
                        fail(ErrorCode::Unsupported, "communicators across processes need a collective library (NCCL)")
                    }
                }
            })
        })
    }

    /// Creates rank `rank` of a communicator of `size` ranks, one per process, on `device`, from
    /// the `id` one process made (`comm_unique_id`). Returns when every rank has joined; a rank
    /// that never arrives makes it fail with `Timeout` after `timeout_ms` milliseconds (NCCL's
    /// non-blocking init), not hang.
    /// Errors: the handle's; `InvalidValue` for `size` 0 or `rank >= size`, or `timeout_ms` 0;
    /// `Unsupported` for a device without a collective library, or whose library cannot be
    /// loaded (with the reason); `Timeout`; the library's errors; `OutOfResources` when the table is full.
    pub fn comm_create_rank(
        &self,
        device: Device,
        id: &UniqueId,
        rank: u32,
        size: u32,
        timeout_ms: u32,
    ) -> Result<Communicator> {
        traced!("comm_create_rank", ["device" = device.0.0, "rank" = u64::from(rank), "size" = u64::from(size)], {
            self.with_exclusive(|t| {
                let d = self.dev(t, device)?;
                if size == 0 || rank >= size {
                    return fail(ErrorCode::InvalidValue, "the rank must be below the communicator's size");
                }
                if timeout_ms == 0 {
                    return fail(ErrorCode::InvalidValue, "the timeout must be at least 1 ms");
                }
                let Some(c) = d.backend.collectives() else {
                    return fail(
                        ErrorCode::Unsupported,
                        "communicators across processes need a collective library (NCCL)",
                    );
                };
                if t.comms.is_full() {
                    return fail(ErrorCode::OutOfResources, "communicator table is full (ORDO_MAX_COMMUNICATORS)");
                }
                usable(c)?;
                // SAFETY: a live device of this backend; rank < size.
                let raw = unsafe { c.comm_create_rank(d.ordinal, id, rank, size, timeout_ms) }?;
                let entry = CommEntry { raw, device: d.slot, rank, size, clique: 0, native: true };
                match t.comms.insert(entry) {
                    Ok(h) => Ok(Communicator(h)),
                    Err(_) => {
                        // SAFETY: the value just created; never passed again.
                        let _ = unsafe { c.comm_destroy(d.ordinal, raw) };
                        fail(ErrorCode::OutOfResources, "communicator table is full (ORDO_MAX_COMMUNICATORS)")
                    }
                }
            })
        })
    }

    /// A communicator's rank, its number of ranks and its device.
    pub fn comm_info(&self, comm: Communicator) -> Result<(u32, u32, Device)> {
        self.with_shared(|t| {
            let c = t.comms.get(comm.0)?;
            Ok((c.rank, c.size, Device(t.devices.handle_at(c.device))))
        })
    }

    /// The library's own communicator (NCCL: its `ncclComm_t`), for the calls ordo does not make
    /// (the communicator stays ordo's: destroying it is ordo's). `Unsupported` for the reference
    /// engine's communicators.
    pub fn comm_native(&self, comm: Communicator) -> Result<u64> {
        self.with_shared(|t| {
            let c = t.comms.get(comm.0)?;
            let d = self.dev_at(t, c.device);
            match (c.native, d.backend.collectives()) {
                // SAFETY: a live communicator of this device.
                (true, Some(lib)) => Ok(unsafe { lib.comm_native(d.ordinal, c.raw) }),
                _ => fail(ErrorCode::Unsupported, "the reference engine's communicators have no native object"),
            }
        })
    }

    /// Destroys a communicator once its work is done (NCCL: `ncclCommFinalize`, then
    /// `ncclCommDestroy`; one whose finalize fails or does not complete in the backend's bound
    /// is aborted, and the error returned). The handle is stale afterwards either way.
    pub fn comm_destroy(&self, comm: Communicator) -> Result<()> {
        traced!("comm_destroy", ["comm" = comm.0.0], {
            self.with_exclusive(|t| {
                let c = t.comms.remove(comm.0)?;
                let d = self.dev_at(t, c.device);
                match (c.native, d.backend.collectives()) {
                    // SAFETY: a live communicator of this device, removed first: never passed again.
                    (true, Some(lib)) => Ok(unsafe { lib.comm_destroy(d.ordinal, c.raw) }?),
                    _ => Ok(()),
                }
            })
        })
    }

    /// Aborts a communicator: its pending collectives are abandoned (the queues' work that
    /// waits for them fails or ends), its peers' collectives fail. The handle is stale
    /// afterwards.
    pub fn comm_abort(&self, comm: Communicator) -> Result<()> {
        traced!("comm_abort", ["comm" = comm.0.0], {
            self.with_exclusive(|t| {
                let c = t.comms.remove(comm.0)?;
                let d = self.dev_at(t, c.device);
                match (c.native, d.backend.collectives()) {
                    // SAFETY: as for `comm_destroy`.
                    (true, Some(lib)) => Ok(unsafe { lib.comm_abort(d.ordinal, c.raw) }?),
                    _ => Ok(()),
                }
            })
        })
    }

    /// Runs collective calls, each on its queue: every rank's part, checked together, then given
    /// to the backend's library in one group (NCCL: `ncclGroupStart`/`End`), or run by the
    /// reference engine. The ranks of a communicator made by `comm_create_all` are all named in
    /// one call, each once, with the same kind, type, reduction, count and root (their sends
    /// and receives pair up); a rank of a communicator across processes names its own part.
    ///
    /// On a backend with a library the work is queued, like a copy, and may be captured into a
    /// graph. The reference engine runs it when called, after the work submitted earlier to the
    /// devices' queues (its copies without a queue wait for them), so its results are ready
    /// when this returns; it is refused during a capture.
    ///
    /// A count of 0 does nothing (the handles are still checked). Errors: a handle's errors;
    /// `InvalidArgument` for an empty list or more than 64 parts, a queue of another device
    /// than its communicator's, memory of another device, calls of several platforms, a
    /// communicator created together with others whose ranks are missing, named twice or
    /// disagree, or an unpaired send or receive; `InvalidValue` for a root or peer not below the
    /// communicator's size; `NullPointer` for a buffer the kind needs that is 0; `InvalidSize`
    /// when a buffer's length overflows or runs past its allocation; `NotFound` for memory the
    /// runtime does not know; `Unsupported` for the reference engine during a capture; the
    /// library's errors.
    pub fn collective(&self, calls: &[Collective]) -> Result<()> {
        traced!("collective", ["calls" = calls.len() as u64], {
            self.with_shared(|t| {
                if let [one] = calls {
                    // One part (a rank of this process): no lists to build.
                    let c = self.check_collective(t, one)?;
                    // Alone, a part is whole when its communicator has one rank and it is no
                    // send or receive (which would need its pair), or is a rank across processes.
                    if c.clique != 0 && (c.size != 1 || is_p2p(&c)) {
                        check_cliques(core::slice::from_ref(&c))?;
                    }
                    if c.native && one.count > 0 {
                        if let Some(lib) = c.dev.backend.collectives() {
                            // SAFETY: the part was checked above, as below.
                            return Ok(unsafe { lib.collectives(core::slice::from_ref(&c.call)) }?);
                        }
                    }
                }
                if calls.is_empty() || calls.len() > MAX_GROUP_CALLS {
                    return fail(ErrorCode::InvalidArgument, "a collective call names 1 to 64 parts");
                }
                let mut checked: heapless::Vec<Checked, MAX_GROUP_CALLS> = heapless::Vec::new();
                for c in calls {
                    let _ = checked.push(self.check_collective(t, c)?);
                }
                let first = checked[0];
                for c in &checked[1..] {
                    if !core::ptr::addr_eq(c.dev.backend, first.dev.backend) && (c.native || first.native) {
                        return fail(
                            ErrorCode::InvalidArgument,
                            "the parts are on platforms that cannot join one collective",
                        );
                    }
                }
                check_cliques(&checked)?;
                if calls.iter().all(|c| c.count == 0) {
                    return Ok(());
                }
                if first.native {
                    let Some(lib) = first.dev.backend.collectives() else {
                        return fail(ErrorCode::Internal, "a native communicator's backend has no library");
                    };
                    let mut raw: heapless::Vec<CollectiveCall, MAX_GROUP_CALLS> = heapless::Vec::new();
                    for c in checked.iter().filter(|c| c.call.count > 0) {
                        let _ = raw.push(c.call);
                    }
                    // SAFETY: every part checked above: live objects of their devices, ranges in
                    // live allocations of them, peers below the sizes.
                    return Ok(unsafe { lib.collectives(&raw) }?);
                }
                for c in &checked {
                    if t.devices.at(c.dev.slot).capturing > 0 {
                        return fail(
                            ErrorCode::Unsupported,
                            "the reference engine's collectives run when called: not during a capture",
                        );
                    }
                }
                super::reference::run(&checked)
            })
        })
    }

    /// The asynchronous errors of the communicators of `d` (NCCL: a peer gone, a network
    /// failure), at a queue's synchronise: the first is returned (the library aborted the
    /// communicator), and logged with the communicator's handle.
    pub(super) fn comm_errors(t: &Tables, d: Dev) -> Result<()> {
        let Some(lib) = d.backend.collectives() else { return Ok(()) };
        let mut cur = t.comms.oldest();
        while let Some(c) = cur {
            cur = t.comms.newer(c);
            let entry = t.comms.at(c);
            if entry.device != d.slot || !entry.native {
                continue;
            }
            // SAFETY: a live communicator of this device.
            if let Err(e) = unsafe { lib.comm_async_error(d.ordinal, entry.raw) } {
                log::error!("communicator {:?} failed: {}", t.comms.handle_at(c), e.detail());
                return Err(e.into());
            }
        }
        Ok(())
    }

    /// One part's checks (see `collective`).
    #[inline]
    fn check_collective(&self, t: &Tables, c: &Collective) -> Result<Checked> {
        let slot = t.comms.resolve(c.comm.0)?;
        let entry = t.comms.at(slot);
        let (qd, queue) = self.queue(t, c.queue)?;
        if qd.slot != entry.device {
            return fail(ErrorCode::InvalidArgument, "the queue is not on the communicator's device");
        }
        let rooted = matches!(
            c.kind,
            CollectiveKind::Broadcast | CollectiveKind::Reduce | CollectiveKind::Send | CollectiveKind::Recv
        );
        if rooted && c.peer >= entry.size {
            return fail(ErrorCode::InvalidValue, "the root or peer is not a rank of the communicator");
        }
        let peer = if rooted { c.peer } else { 0 };
        let op = match c.kind {
            CollectiveKind::AllReduce | CollectiveKind::Reduce | CollectiveKind::ReduceScatter => c.op,
            _ => ReduceOp::Sum,
        };
        let elem = c.dtype.size();
        let bytes = c.count.checked_mul(elem);
        let all = bytes.and_then(|b| b.checked_mul(entry.size as usize));
        let (Some(bytes), Some(all)) = (bytes, all) else {
            return fail(ErrorCode::InvalidSize, "the element count overflows the buffers' size");
        };
        let root = entry.rank == c.peer;
        // (bytes read, bytes written) on this rank; 0 = that side is not used.
        let (read, write) = match c.kind {
            CollectiveKind::AllReduce => (bytes, bytes),
            CollectiveKind::Broadcast => (if root { bytes } else { 0 }, bytes),
            CollectiveKind::Reduce => (bytes, if root { bytes } else { 0 }),
            CollectiveKind::AllGather => (bytes, all),
            CollectiveKind::ReduceScatter => (all, bytes),
            CollectiveKind::Send => (bytes, 0),
            CollectiveKind::Recv => (0, bytes),
        };
        let mut call = CollectiveCall {
            device: qd.ordinal,
            comm: entry.raw,
            queue,
            kind: c.kind,
            dtype: c.dtype,
            op,
            count: c.count,
            peer,
            send: 0,
            recv: 0,
        };
        if c.count > 0 {
            if read > 0 {
                call.send = Self::comm_range(t, entry.device, c.send, read)?;
            }
            if write > 0 {
                // In place (the same range read and written): checked once.
                call.recv = if c.recv == c.send && write == read {
                    call.send
                } else {
                    Self::comm_range(t, entry.device, c.recv, write)?
                };
            }
            // NCCL reads a broadcast's `sendbuff` on the root only, and takes `recvbuff` there.
            if c.kind == CollectiveKind::Broadcast && !root {
                call.send = call.recv;
            }
        }
        Ok(Checked {
            dev: qd,
            call,
            rank: entry.rank,
            size: entry.size,
            clique: entry.clique,
            native: entry.native,
            slot,
        })
    }

    /// Checks that `[addr, addr + bytes)` lies in one live allocation of the device in `slot`.
    #[inline]
    fn comm_range(t: &Tables, slot: u32, addr: DevicePtr, bytes: usize) -> Result<u64> {
        if addr.0 == 0 {
            return fail(ErrorCode::NullPointer, "a buffer the collective uses is null");
        }
        let m = t.alloc_range(addr.0, bytes)?;
        if m.device != slot {
            return fail(ErrorCode::InvalidArgument, "the buffer is memory of another device than the communicator's");
        }
        Ok(addr.0)
    }
}

/// The library, for making communicators: one that cannot be loaded (`NotPresent` from
/// `library`) makes them `Unsupported`, with the library's reason.
fn usable(c: &dyn crate::backend::Collectives) -> Result<()> {
    match c.library() {
        Ok(_) => Ok(()),
        Err(e) => Err(crate::error::Error { code: ErrorCode::Unsupported, ..e.into() }),
    }
}

/// The rules of communicators created together: every rank named once for a collective, with
/// the same arguments; sends and receives paired. Parts of a communicator across processes are
/// the user's to pair with their peers.
fn check_cliques(calls: &[Checked]) -> Result<()> {
    const DISAGREE: &str = "the ranks of communicators created together are named once each, with the same arguments";
    for (i, a) in calls.iter().enumerate() {
        if calls[..i].iter().any(|b| b.slot == a.slot && !is_p2p(b) && !is_p2p(a)) {
            return fail(ErrorCode::InvalidArgument, "a communicator is named twice in one collective call");
        }
        if a.clique == 0 {
            continue;
        }
        if is_p2p(a) {
            // Its pair: the peer's opposite part, the same length and type, not taken by an
            // earlier part of the same kind.
            let want = if a.call.kind == CollectiveKind::Send { CollectiveKind::Recv } else { CollectiveKind::Send };
            let matches = |b: &Checked| {
                b.clique == a.clique
                    && b.rank == a.call.peer
                    && b.call.peer == a.rank
                    && b.call.kind == want
                    && b.call.count == a.call.count
                    && b.call.dtype == a.call.dtype
            };
            let same = |b: &Checked| {
                b.clique == a.clique
                    && b.rank == a.rank
                    && b.call.peer == a.call.peer
                    && b.call.kind == a.call.kind
                    && b.call.count == a.call.count
                    && b.call.dtype == a.call.dtype
            };
            let before = calls[..i].iter().filter(|b| same(b)).count();
            if calls.iter().filter(|b| matches(b)).count() <= before {
                return fail(ErrorCode::InvalidArgument, "a send or receive has no matching part on its peer");
            }
            continue;
        }
        let mut ranks = 0u64;
        let mut seen = 0u32;
        for b in calls.iter().filter(|b| b.clique == a.clique && !is_p2p(b)) {
            let c = (&b.call, &a.call);
            if c.0.kind != c.1.kind
                || c.0.dtype != c.1.dtype
                || c.0.op != c.1.op
                || c.0.count != c.1.count
                || c.0.peer != c.1.peer
            {
                return fail(ErrorCode::InvalidArgument, DISAGREE);
            }
            ranks |= 1 << b.rank;
            seen += 1;
        }
        if seen != a.size || ranks.count_ones() != a.size {
            return fail(
                ErrorCode::InvalidArgument,
                "a collective over communicators created together names every rank",
            );
        }
    }
    Ok(())
}

fn is_p2p(c: &Checked) -> bool {
    matches!(c.call.kind, CollectiveKind::Send | CollectiveKind::Recv)
}
