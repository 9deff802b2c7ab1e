//! Graphs: the work submitted to a queue between `queue_begin_capture` and `queue_end_capture`,
//! kept as one executable graph of the queue's device and launched on any of its queues as one
//! submission (CUDA stream capture, `cuGraphInstantiate`, `cuGraphLaunch`). While a queue
//! captures, what would wait for it or join its capture by accident is refused: synchronising,
//! querying or destroying the queue, a second capture on it, and calls without a queue on its
//! device (they would be ordered with the capture). Graphs are handles in their own table,
//! destroyed by the teardown after the device's events and before its queues. Depends on the
//! runtime's tables (`super`), `info` (lookups), `backend`, `handle` and `error`.

use crate::error::{ErrorCode, Result, fail};
use crate::handle::{Graph, Queue};

use super::info::Dev;
use super::{GraphEntry, Runtime, Tables};

impl Runtime {
    /// Starts capturing `queue`'s work into a graph: launches, copies, fills, host functions,
    /// event records and waits submitted to the queue from now on are recorded, not run, until
    /// `queue_end_capture`. Meanwhile the queue cannot be synchronised, queried or destroyed,
    /// and calls without a queue on its device (synchronous copies and fills) are refused
    /// (`InvalidArgument` each). Errors: the queue's handle errors; `InvalidArgument` when it is
    /// capturing already (captures do not nest); `Unsupported` from backends without graphs
    /// (the host device and AMDGPU in this version).
    pub fn queue_begin_capture(&self, queue: Queue) -> Result<()> {
        self.with_exclusive(|t| {
            let (d, raw) = self.queue_not_capturing(t, queue)?;
            // SAFETY: a live queue of the device, not capturing.
            unsafe { d.backend.queue_begin_capture(d.ordinal, raw) }?;
            Self::set_capturing(t, queue, d, true);
            Ok(())
        })
    }

    /// Ends `queue`'s capture: the work submitted since `queue_begin_capture`, as a graph of the
    /// queue's device (nothing of it has run). The queue stops capturing whatever this returns.
    /// Errors: the queue's handle errors; `InvalidArgument` when it is not capturing; the
    /// driver's error for a capture it invalidated (a call that was not allowed during
    /// capture); `OutOfResources` when the graph table is full (the captured graph is destroyed).
    pub fn queue_end_capture(&self, queue: Queue) -> Result<Graph> {
        self.with_exclusive(|t| {
            let (d, raw) = self.queue(t, queue)?;
            if !t.queues.get(queue.0)?.capturing {
                return fail(ErrorCode::InvalidArgument, "the queue is not capturing");
            }
            Self::set_capturing(t, queue, d, false);
            // SAFETY: a live queue of the device that is capturing.
            let graph = unsafe { d.backend.queue_end_capture(d.ordinal, raw) }?;
            match t.graphs.insert(GraphEntry { raw: graph, device: d.slot }) {
                Ok(h) => Ok(Graph(h)),
                Err(_) => {
                    // SAFETY: the graph the backend just returned; never passed again.
                    let _ = unsafe { d.backend.graph_destroy(d.ordinal, graph) };
                    fail(ErrorCode::OutOfResources, "graph table is full (ORDO_MAX_GRAPHS)")
                }
            }
        })
    }

    /// Whether `queue` is capturing into a graph.
    pub fn queue_is_capturing(&self, queue: Queue) -> Result<bool> {
        self.with_shared(|t| Ok(t.queues.get(queue.0)?.capturing))
    }

    /// Launches `graph` on `queue`, a queue of the graph's device, asynchronously: its work runs
    /// in the captured order after the queue's earlier work. Errors: the handles' errors;
    /// `InvalidArgument` for a queue of another device.
    ///
    /// # Safety
    /// What the captured launches, copies and host functions required of their callers holds
    /// again for this launch: the memory they use is live and not used by other work meanwhile,
    /// the kernels' programs are loaded, host functions may run again (a graph keeps the
    /// addresses and arguments it captured; the runtime cannot check them).
    pub unsafe fn graph_launch(&self, graph: Graph, queue: Queue) -> Result<()> {
        self.with_shared(|t| {
            let g = t.graphs.get(graph.0)?;
            let (d, raw) = self.queue(t, queue)?;
            if g.device != d.slot {
                return fail(ErrorCode::InvalidArgument, "the queue belongs to another device than the graph");
            }
            // SAFETY: a live graph and a live queue of this device.
            Ok(unsafe { d.backend.graph_launch(d.ordinal, g.raw, raw) }?)
        })
    }

    /// The device a graph belongs to.
    pub fn graph_device(&self, graph: Graph) -> Result<crate::handle::Device> {
        self.with_shared(|t| Ok(crate::handle::Device(t.devices.handle_at(t.graphs.get(graph.0)?.device))))
    }

    /// Destroys a graph; launches of it already submitted still run. The handle is stale
    /// afterwards (a second destroy is `InvalidHandle`).
    pub fn graph_destroy(&self, graph: Graph) -> Result<()> {
        self.with_exclusive(|t| {
            let g = t.graphs.remove(graph.0)?;
            let d = self.dev_at(t, g.device);
            // SAFETY: a live graph of this device, removed from the table first so it is never
            // passed again.
            Ok(unsafe { d.backend.graph_destroy(d.ordinal, g.raw) }?)
        })
    }

    fn set_capturing(t: &mut Tables, queue: Queue, d: Dev, capturing: bool) {
        if let Ok(slot) = t.queues.resolve(queue.0) {
            t.queues.at_mut(slot).capturing = capturing;
        }
        let device = t.devices.at_mut(d.slot);
        device.capturing = if capturing { device.capturing + 1 } else { device.capturing.saturating_sub(1) };
    }

    /// `InvalidArgument` when a queue of the device in `slot` is capturing: a call without a
    /// queue there would be ordered with the capture (CUDA's legacy stream), which breaks it.
    #[inline]
    pub(super) fn no_capture_on(t: &Tables, slot: u32) -> Result<()> {
        if t.devices.at(slot).capturing != 0 {
            return fail(
                ErrorCode::InvalidArgument,
                "a queue of the device is capturing into a graph: end the capture first",
            );
        }
        Ok(())
    }
}
