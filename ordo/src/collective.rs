//! Collectives: [`Communicator`]s over devices (one process: [`Context::communicators`]; one
//! rank per process: [`Device::communicator`] with a [`UniqueId`]), and the typed calls on
//! [`DeviceBuffer`]s that a [`CollectiveGroup`] submits together (NCCL on CUDA, the runtime's
//! reference engine on the host device).

use std::time::Duration;

use ordo_core::{Collective, CollectiveKind, Communicator as RawComm, DataType, DevicePtr, ErrorCode};
pub use ordo_core::{CollectiveLibrary, ReduceOp, UniqueId};

use crate::buffer::{DeviceBuffer, DeviceCopy};
use crate::context::{Context, Device};
use crate::error::{Error, Result};
use crate::queue::Queue;

mod sealed {
    pub trait Sealed {}
}

/// Element types collectives take: those NCCL has a data type for (`i8`, `u8`, `i32`, `u32`,
/// `i64`, `u64`, `f32`, `f64`). Other types do not compile:
///
/// ```compile_fail
/// fn needs<T: ordo::CollectiveElement>() {}
/// needs::<u16>(); // NCCL has no 16-bit integer type
/// ```
pub trait CollectiveElement: DeviceCopy + sealed::Sealed {
    /// The element's NCCL data type.
    const DATA_TYPE: DataType;
}

macro_rules! element {
    ($($t:ty => $d:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl CollectiveElement for $t {
            const DATA_TYPE: DataType = DataType::$d;
        }
    )*};
}
element!(i8 => I8, u8 => U8, i32 => I32, u32 => U32, i64 => I64, u64 => U64, f32 => F32, f64 => F64);

/// One rank of a group of devices that reduce, gather and exchange data together. Made over
/// several devices of this process at once ([`Context::communicators`]) or as one rank per
/// process ([`Device::communicator`]); destroyed on drop (NCCL: finalized, then destroyed; a
/// communicator whose peers are gone is aborted instead), or by the final shutdown in teardown
/// order (after graphs, before queues). It holds its own runtime reference, `Send` and `Sync`.
///
/// ```
/// // Every device of the default runtime averages its "gradients" with the others'.
/// let ctx = ordo::Context::new()?;
/// let devices: Vec<_> = ctx.devices()?.into_iter().collect();
/// let comms = ctx.communicators(&devices)?;
/// let queues = devices.iter().map(|d| d.queue()).collect::<ordo::Result<Vec<_>>>()?;
/// let mut grads = devices
///     .iter()
///     .enumerate()
///     .map(|(i, d)| ordo::DeviceBuffer::from_slice(d, &[i as f32; 4]))
///     .collect::<ordo::Result<Vec<_>>>()?;
/// let mut group = ordo::CollectiveGroup::new();
/// for ((comm, queue), grad) in comms.iter().zip(&queues).zip(grads.iter_mut()) {
///     group.all_reduce_in_place(comm, queue, grad, ordo::ReduceOp::Avg);
/// }
/// group.submit()?;
/// let mean = (0..devices.len()).sum::<usize>() as f32 / devices.len() as f32;
/// for (queue, grad) in queues.iter().zip(&grads) {
///     queue.synchronize()?;
///     assert_eq!(grad.to_vec()?, [mean; 4]);
/// }
/// # Ok::<(), ordo::Error>(())
/// ```
pub struct Communicator<'r> {
    device: Device<'r>,
    raw: RawComm,
    rank: u32,
    size: u32,
}

impl core::fmt::Debug for Communicator<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Communicator(rank {} of {} on {:?})", self.rank, self.size, self.device)
    }
}

impl<'r> Context<'r> {
    /// One communicator per device of `devices`, rank i on `devices[i]`, made together (NCCL's
    /// `ncclCommInitAll`, in one group). The devices are distinct: all of one platform with a
    /// collective library (CUDA with NCCL), or all of host platforms (the reference engine).
    /// `InvalidArgument` otherwise; `Unsupported` (with the reason) when NCCL is not found.
    pub fn communicators(&self, devices: &[Device<'r>]) -> Result<Vec<Communicator<'r>>> {
        self.check_current()?;
        if devices.iter().any(|d| d.ctx != *self) {
            return Err(Error::Runtime(ordo_core::Error::new(
                ErrorCode::InvalidArgument,
                "a device of another context or runtime",
            )));
        }
        let raw_devices: Vec<_> = devices.iter().map(|d| d.raw).collect();
        let mut raws = vec![RawComm::NULL; devices.len()];
        self.runtime().comm_create_all(&raw_devices, &mut raws)?;
        Ok(devices
            .iter()
            .zip(raws)
            .enumerate()
            .map(|(i, (d, raw))| Communicator { device: d.clone(), raw, rank: i as u32, size: devices.len() as u32 })
            .collect())
    }
}

impl<'r> Device<'r> {
    /// A unique id for [`Device::communicator`] from this device's platform's library (NCCL's
    /// `ncclGetUniqueId`): made in one process and carried to every rank by any means (a file,
    /// the environment, MPI, a socket). `Unsupported` on the host device (its reference
    /// engine joins the devices of one process only).
    pub fn comm_unique_id(&self) -> Result<UniqueId> {
        self.ctx.check_current()?;
        let rt = self.rt();
        Ok(rt.comm_unique_id(rt.device_platform(self.raw)?)?)
    }

    /// Rank `rank` of a communicator of `size` ranks, one per process, on this device, from the
    /// `id` one process made. Returns when every rank has joined; a rank that never arrives
    /// makes it fail with `Timeout` after `timeout` (NCCL's non-blocking init), never hang.
    pub fn communicator(&self, id: &UniqueId, rank: u32, size: u32, timeout: Duration) -> Result<Communicator<'r>> {
        self.ctx.check_current()?;
        let ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        let raw = self.rt().comm_create_rank(self.raw, id, rank, size, ms)?;
        Ok(Communicator { device: self.clone(), raw, rank, size })
    }

    /// The collective library of this device's platform (NCCL and its version on CUDA);
    /// `Unsupported` where the reference engine runs collectives (the host device).
    pub fn collective_library(&self) -> Result<CollectiveLibrary> {
        let rt = self.rt();
        Ok(rt.collective_library(rt.device_platform(self.raw)?)?)
    }
}

impl<'r> Communicator<'r> {
    /// This communicator's rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// How many ranks the communicator has.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The device the rank runs on.
    pub fn device(&self) -> &Device<'r> {
        &self.device
    }

    /// The runtime's handle (for the raw API); the communicator still owns it.
    pub fn raw(&self) -> RawComm {
        self.raw
    }

    /// Aborts the communicator: its pending collectives are abandoned and its peers'
    /// collectives fail (NCCL's `ncclCommAbort`), for a rank that gives up on its peers.
    pub fn abort(self) -> Result<()> {
        let mut this = core::mem::ManuallyDrop::new(self);
        let result = this.device.rt().comm_abort(this.raw);
        // SAFETY: the device is dropped once, here (the communicator's own drop never runs).
        unsafe { core::ptr::drop_in_place(&mut this.device) };
        Ok(result?)
    }

    /// All-reduce of this rank alone (a communicator across processes, or one of one rank):
    /// a [`CollectiveGroup`] of one part.
    pub fn all_reduce<T: CollectiveElement>(
        &self,
        queue: &Queue<'r>,
        send: &DeviceBuffer<'r, T>,
        recv: &mut DeviceBuffer<'r, T>,
        op: ReduceOp,
    ) -> Result<()> {
        let mut g = CollectiveGroup::new();
        g.all_reduce(self, queue, send, recv, op);
        g.submit()
    }
}

impl Drop for Communicator<'_> {
    fn drop(&mut self) {
        // By identity: after the final shutdown or a re-init the handle is stale.
        let _ = self.device.rt().comm_destroy(self.raw);
    }
}

/// Collective calls submitted together (NCCL's `ncclGroupStart`/`ncclGroupEnd`): the parts of
/// every rank of communicators made together are named in one group, each once, with the same
/// operation, type, length and root, and sends pair with receives; a rank of a communicator
/// across processes names its own part. Lengths come from the buffers: a part whose buffers
/// disagree (all-reduce: equal lengths; all-gather: `recv` is `send` × ranks; reduce-scatter:
/// `send` is `recv` × ranks) makes [`CollectiveGroup::submit`] fail with `InvalidSize`, and
/// nothing is submitted. The buffers stay borrowed until `submit`; the work runs on each part's
/// queue, after its earlier work (the host device's reference engine runs it within `submit`).
#[derive(Default)]
pub struct CollectiveGroup<'g, 'r> {
    parts: Vec<Collective>,
    buffers: Vec<(&'g Device<'r>, ordo_core::Allocation)>,
    contexts: Vec<&'g Context<'r>>,
    error: Option<Error>,
}

impl core::fmt::Debug for CollectiveGroup<'_, '_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "CollectiveGroup({} parts)", self.parts.len())
    }
}

fn size_error(message: &'static str) -> Error {
    Error::Runtime(ordo_core::Error::new(ErrorCode::InvalidSize, message))
}

impl<'g, 'r> CollectiveGroup<'g, 'r> {
    /// An empty group.
    pub fn new() -> Self {
        Self { parts: Vec::new(), buffers: Vec::new(), contexts: Vec::new(), error: None }
    }

    #[allow(clippy::too_many_arguments, reason = "one part's fields")]
    fn part<T: CollectiveElement>(
        &mut self,
        comm: &'g Communicator<'r>,
        queue: &'g Queue<'r>,
        kind: CollectiveKind,
        op: ReduceOp,
        count: usize,
        peer: u32,
        send: Option<&'g DeviceBuffer<'r, T>>,
        recv: Option<&'g DeviceBuffer<'r, T>>,
    ) {
        for b in [send, recv].into_iter().flatten() {
            self.buffers.push((b.device(), b.allocation()));
        }
        self.contexts.push(&comm.device.ctx);
        self.parts.push(Collective {
            comm: comm.raw,
            queue: queue.raw,
            kind,
            dtype: T::DATA_TYPE,
            op,
            count,
            peer,
            send: send.map_or(DevicePtr::NULL, |b| b.device_ptr()),
            recv: recv.map_or(DevicePtr::NULL, |b| b.device_ptr()),
        });
    }

    fn refuse(&mut self, e: Error) -> &mut Self {
        if self.error.is_none() {
            self.error = Some(e);
        }
        self
    }

    /// Every rank's `recv` gets the element-wise reduction of every rank's `send` (equal
    /// lengths).
    pub fn all_reduce<T: CollectiveElement>(
        &mut self,
        comm: &'g Communicator<'r>,
        queue: &'g Queue<'r>,
        send: &'g DeviceBuffer<'r, T>,
        recv: &'g mut DeviceBuffer<'r, T>,
        op: ReduceOp,
    ) -> &mut Self {
        if send.len() != recv.len() {
            return self.refuse(size_error("all-reduce: send and recv lengths differ"));
        }
        let recv: &'g DeviceBuffer<'r, T> = recv;
        self.part(comm, queue, CollectiveKind::AllReduce, op, send.len(), 0, Some(send), Some(recv));
        self
    }

    /// All-reduce in place: `buf` is read and written.
    pub fn all_reduce_in_place<T: CollectiveElement>(
        &mut self,
        comm: &'g Communicator<'r>,
        queue: &'g Queue<'r>,
        buf: &'g mut DeviceBuffer<'r, T>,
        op: ReduceOp,
    ) -> &mut Self {
        let buf: &'g DeviceBuffer<'r, T> = buf;
        self.part(comm, queue, CollectiveKind::AllReduce, op, buf.len(), 0, Some(buf), Some(buf));
        self
    }

    /// Every rank's `buf` gets rank `root`'s (in place; equal lengths).
    pub fn broadcast<T: CollectiveElement>(
        &mut self,
        comm: &'g Communicator<'r>,
        queue: &'g Queue<'r>,
        buf: &'g mut DeviceBuffer<'r, T>,
        root: u32,
    ) -> &mut Self {
        let buf: &'g DeviceBuffer<'r, T> = buf;
        self.part(comm, queue, CollectiveKind::Broadcast, ReduceOp::Sum, buf.len(), root, Some(buf), Some(buf));
        self
    }

    /// Rank `root`'s `recv` gets the reduction of every rank's `send` (equal lengths; the other
    /// ranks' `recv` is not written).
    #[allow(clippy::too_many_arguments, reason = "a rooted reduction's arguments")]
    pub fn reduce<T: CollectiveElement>(
        &mut self,
        comm: &'g Communicator<'r>,
        queue: &'g Queue<'r>,
        send: &'g DeviceBuffer<'r, T>,
        recv: &'g mut DeviceBuffer<'r, T>,
        op: ReduceOp,
        root: u32,
    ) -> &mut Self {
        if send.len() != recv.len() {
            return self.refuse(size_error("reduce: send and recv lengths differ"));
        }
        let recv: &'g DeviceBuffer<'r, T> = recv;
        self.part(comm, queue, CollectiveKind::Reduce, op, send.len(), root, Some(send), Some(recv));
        self
    }

    /// Every rank's `recv` (ranks × `send.len()`) gets every rank's `send`, in rank order.
    pub fn all_gather<T: CollectiveElement>(
        &mut self,
        comm: &'g Communicator<'r>,
        queue: &'g Queue<'r>,
        send: &'g DeviceBuffer<'r, T>,
        recv: &'g mut DeviceBuffer<'r, T>,
    ) -> &mut Self {
        if send.len().checked_mul(comm.size as usize) != Some(recv.len()) {
            return self.refuse(size_error("all-gather: recv must hold send's length times the ranks"));
        }
        let recv: &'g DeviceBuffer<'r, T> = recv;
        self.part(comm, queue, CollectiveKind::AllGather, ReduceOp::Sum, send.len(), 0, Some(send), Some(recv));
        self
    }

    /// Rank r's `recv` gets the reduction of block r (of `recv.len()` elements) of every rank's
    /// `send` (ranks × `recv.len()`).
    pub fn reduce_scatter<T: CollectiveElement>(
        &mut self,
        comm: &'g Communicator<'r>,
        queue: &'g Queue<'r>,
        send: &'g DeviceBuffer<'r, T>,
        recv: &'g mut DeviceBuffer<'r, T>,
        op: ReduceOp,
    ) -> &mut Self {
        if recv.len().checked_mul(comm.size as usize) != Some(send.len()) {
            return self.refuse(size_error("reduce-scatter: send must hold recv's length times the ranks"));
        }
        let recv: &'g DeviceBuffer<'r, T> = recv;
        self.part(comm, queue, CollectiveKind::ReduceScatter, op, recv.len(), 0, Some(send), Some(recv));
        self
    }

    /// Sends `buf` to rank `peer` (which receives it in the same group, or its own process's).
    pub fn send<T: CollectiveElement>(
        &mut self,
        comm: &'g Communicator<'r>,
        queue: &'g Queue<'r>,
        buf: &'g DeviceBuffer<'r, T>,
        peer: u32,
    ) -> &mut Self {
        self.part(comm, queue, CollectiveKind::Send, ReduceOp::Sum, buf.len(), peer, Some(buf), None);
        self
    }

    /// Receives `buf.len()` elements from rank `peer` into `buf`.
    pub fn recv<T: CollectiveElement>(
        &mut self,
        comm: &'g Communicator<'r>,
        queue: &'g Queue<'r>,
        buf: &'g mut DeviceBuffer<'r, T>,
        peer: u32,
    ) -> &mut Self {
        let buf: &'g DeviceBuffer<'r, T> = buf;
        self.part(comm, queue, CollectiveKind::Recv, ReduceOp::Sum, buf.len(), peer, None, Some(buf));
        self
    }

    /// Checks every part and submits them together. The first refused part's error is
    /// returned, and then nothing is submitted; so is the runtime's for a buffer from before a
    /// re-init (`InvalidHandle`), a queue of another device than its communicator's, or ranks
    /// missing from the group (`InvalidArgument`).
    pub fn submit(self) -> Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        for ctx in &self.contexts {
            ctx.check_current()?;
        }
        // Buffers by identity: a buffer from before a re-init never names a newer allocation.
        for (device, allocation) in &self.buffers {
            device.rt().allocation_info(*allocation)?;
        }
        let Some(first) = self.contexts.first() else {
            return Err(Error::Runtime(ordo_core::Error::new(ErrorCode::InvalidArgument, "an empty collective group")));
        };
        Ok(first.runtime().collective(&self.parts)?)
    }
}
