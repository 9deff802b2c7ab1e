//! Graphs: the work submitted to a queue between `queue_begin_capture` and `queue_end_capture`,
//! kept as one executable graph of the queue's device and launched on any of its queues as one
//! submission (CUDA stream capture, `cuGraphInstantiate`, `cuGraphLaunch`). While a queue
//! captures, what would wait for it or join its capture by accident is refused: synchronising,
//! querying or destroying the queue, a second capture on it, and calls without a queue on its
//! device (they would be ordered with the capture). An event recorded during a capture may be
//! waited for by the capturing queue only (another queue would join or merge captures) and is
//! not synchronised, queried, timed or waited for by any queue after it, until it is recorded
//! again outside a capture: its record became part of the graph and never runs on its own
//! (CUDA refuses such an event too). A graph's kernel launches are
//! numbered in capture order, and their arguments can be set between launches
//! (`graph_set_args`). A graph keeps the programs of its kernels loaded (a reference each,
//! given back when it is destroyed); a program unloaded regardless (more unloads than loads
//! and retains) orphans the graph (its launches and updates are refused). A graph's launches and argument updates are
//! serialised (each holds the graph's own lock around the backend's call), so one graph may be
//! updated and launched from many threads. Graphs are handles in their own table, destroyed by
//! the teardown after the device's events and before its queues. Depends on the runtime's
//! tables (`super`), `info` (lookups), `backend`, `handle` and `error`.

use crate::trace::traced;
use core::sync::atomic::Ordering::Relaxed;

use crate::backend::KernelArgs;
use crate::error::{ErrorCode, Result, fail};
use crate::handle::{Allocation, Graph, Kernel, Queue};

use super::info::Dev;

/// An event's capture mark once the capture that recorded it ended (see `set_capturing`).
pub(super) const CAPTURE_ENDED: u32 = u32::MAX;
use super::{Runtime, Tables};

impl Runtime {
    /// Starts capturing `queue`'s work into a graph: launches, copies, fills, host functions,
    /// event records and waits submitted to the queue from now on are recorded, not run, until
    /// `queue_end_capture`. Meanwhile the queue cannot be synchronised, queried or destroyed,
    /// and calls without a queue on its device (synchronous copies and fills) are refused
    /// (`InvalidArgument` each). Errors: the queue's handle errors; `InvalidArgument` when it is
    /// capturing already (captures do not nest); `Unsupported` from backends without graphs
    /// (AMDGPU, and the bare host backend whose queues run work at submission).
    pub fn queue_begin_capture(&self, queue: Queue) -> Result<()> {
        traced!("queue_begin_capture", ["queue" = queue.0.0], {
            self.with_exclusive(|t| {
                let (d, raw) = self.queue_not_capturing(t, queue)?;
                // SAFETY: a live queue of the device, not capturing.
                unsafe { d.backend.queue_begin_capture(d.ordinal, raw) }?;
                Self::set_capturing(t, queue, d, true);
                // What an earlier capture of this slot left (one that a teardown ended).
                let slot = t.queues.resolve(queue.0)?;
                t.capture_uses.get_mut().retain(|u| u.queue != slot);
                Ok(())
            })
        })
    }

    /// Ends `queue`'s capture: the work submitted since `queue_begin_capture`, as a graph of the
    /// queue's device (nothing of it has run). The queue stops capturing whatever this returns.
    /// Events recorded during the capture stay refused (`InvalidArgument`) by waits,
    /// synchronisation, queries and timing until they are recorded again outside a capture:
    /// their record is part of the graph.
    /// Errors: the queue's handle errors; `InvalidArgument` when it is not capturing; the
    /// driver's error for a capture it invalidated (a call that was not allowed during
    /// capture); `OutOfResources` when the graph table is full (the captured graph is destroyed).
    pub fn queue_end_capture(&self, queue: Queue) -> Result<Graph> {
        traced!("queue_end_capture", ["queue" = queue.0.0], {
            self.with_exclusive(|t| {
                let (d, raw) = self.queue(t, queue)?;
                if !t.queues.get(queue.0)?.capturing() {
                    return fail(ErrorCode::InvalidArgument, "the queue is not capturing");
                }
                Self::set_capturing(t, queue, d, false);
                // The allocations its launches named, moved out whatever the capture gives.
                let slot = t.queues.resolve(queue.0)?;
                let mut named = GraphUses::default();
                t.capture_uses.get_mut().retain(|u| {
                    if u.queue != slot {
                        return true;
                    }
                    let _ = named.list.push((u.index, u.allocation));
                    false
                });
                // SAFETY: a live queue of the device that is capturing.
                let ended = unsafe { d.backend.queue_end_capture(d.ordinal, raw) };
                // Programs unloaded during the device's captures: a graph of this capture that
                // launches a kernel the tables no longer know is orphaned, and once no capture is
                // left the backend unloads them.
                let deferred = t.deferred_unloads.iter().any(|&(dev, _)| dev == d.slot);
                let unloaded = if deferred && t.devices.at(d.slot).capturing == 0 {
                    self.run_deferred_unloads(t, d.slot)
                } else {
                    Ok(())
                };
                let graph = ended?;
                if let Err(e) = unloaded {
                    // SAFETY: the graph the backend just returned; never passed again.
                    let _ = unsafe { d.backend.graph_destroy(d.ordinal, graph) };
                    return Err(e);
                }
                if t.graphs.is_full() {
                    // SAFETY: the graph the backend just returned; never passed again.
                    let _ = unsafe { d.backend.graph_destroy(d.ordinal, graph) };
                    return fail(ErrorCode::OutOfResources, "graph table is full (ORDO_MAX_GRAPHS)");
                }
                let mut entry = Self::graph_entry(t, d, graph);
                entry.orphaned = deferred && entry.any_program;
                *entry.uses.lock() = named;
                match t.graphs.insert(entry) {
                    Ok(h) => Ok(Graph(h)),
                    Err(_) => {
                        // SAFETY: as above.
                        let _ = unsafe { d.backend.graph_destroy(d.ordinal, graph) };
                        fail(ErrorCode::OutOfResources, "graph table is full (ORDO_MAX_GRAPHS)")
                    }
                }
            })
        })
    }

    /// A new graph's entry: its launches counted and their kernels' programs found in the
    /// kernel table (the same kernel is usually launched many times: the last one found is
    /// remembered).
    fn graph_entry(t: &Tables, d: Dev, graph: u64) -> GraphEntry {
        let mut entry = GraphEntry {
            raw: graph,
            device: d.slot,
            kernels: 0,
            programs: heapless::Vec::new(),
            any_program: false,
            orphaned: false,
            uses: crate::sync::SpinLock::new(GraphUses::default()),
            held: heapless::Vec::new(),
        };
        let mut last: Option<(u64, u32)> = None;
        let mut each = |kernel: u64| {
            entry.kernels = entry.kernels.saturating_add(1);
            let program = match last {
                Some((raw, program)) if raw == kernel => Some(program),
                _ => t
                    .kernels
                    .iter_oldest_first()
                    .map(|k| t.kernels.at(k))
                    .find(|k| k.raw == kernel && k.device == d.slot)
                    .map(|k| k.program),
            };
            match program {
                Some(p) => {
                    last = Some((kernel, p));
                    if !entry.programs.contains(&p) && entry.programs.push(p).is_err() {
                        entry.any_program = true;
                    }
                }
                None => entry.any_program = true,
            }
        };
        // SAFETY: the live graph the backend just returned.
        if unsafe { d.backend.graph_kernels(d.ordinal, graph, &mut each) }.is_err() {
            (entry.kernels, entry.any_program) = (0, true);
            entry.programs.clear();
        }
        // The graph keeps its programs loaded: one reference each, given back by its destroy.
        for &p in &entry.programs {
            let taken = t.programs.at(p).retained.fetch_update(Relaxed, Relaxed, |n| n.checked_add(1)).is_ok();
            if taken {
                let _ = entry.held.push(t.programs.handle_at(p));
            } else {
                // Too many references: this one is not held, and its unload orphans the graph.
                entry.any_program = true;
            }
        }
        entry
    }

    /// Gives back the program references a removed graph held: each one's count goes down, and a
    /// program whose last reference this was is unloaded (as `program_unload` unloads it: after
    /// the device's captures, if a queue of it is capturing).
    fn release_held(&self, t: &mut Tables, held: &[crate::handle::RawHandle]) -> Result<()> {
        let mut result = Ok(());
        for &h in held {
            let Ok(slot) = t.programs.resolve(h) else { continue };
            let p = t.programs.at(slot);
            if p.retained.fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1)).is_ok() {
                continue;
            }
            let unloaded = self.unload_slot(t, slot);
            result = result.and(unloaded);
        }
        result
    }

    /// How many kernel launches `graph` holds (`graph_set_args` numbers them from 0, in the
    /// order they were captured).
    pub fn graph_kernel_count(&self, graph: Graph) -> Result<u32> {
        traced!("graph_kernel_count", ["graph" = graph.0.0], {
            self.with_shared(|t| Ok(t.graphs.get(graph.0)?.kernels))
        })
    }

    /// Sets the arguments of `graph`'s launch number `index` (capture order) for the graph's
    /// later launches, without capturing again: the launch's grid, block and shared memory stay
    /// as captured; launches of the graph already submitted keep the arguments they had.
    /// `kernel` must be the kernel that launch runs, and `args` fit its parameters as for
    /// `launch`. Errors: the handles' errors; `InvalidArgument` for a kernel of another device,
    /// an `index` past the graph's launches (`graph_kernel_count`), a launch that runs another
    /// kernel, another number of arguments than the kernel has parameters, or an orphaned graph
    /// (a program of its kernels was unloaded); `Unsupported` from backends that cannot update
    /// launches.
    ///
    /// # Safety
    /// As `launch`: each argument pointer points to a value of the kernel's parameter type, and
    /// at each later launch of the graph the kernel only reaches memory it may.
    #[inline(always)]
    pub unsafe fn graph_set_args(&self, graph: Graph, index: u32, kernel: Kernel, args: &KernelArgs<'_>) -> Result<()> {
        traced!("graph_set_args", ["graph" = graph.0.0, "index" = index, "kernel" = kernel.0.0], {
            // SAFETY: forwarded contract.
            unsafe { self.graph_set_args_in(graph, index, kernel, args, None) }
        })
    }

    /// `graph_set_args`, naming the allocations the new arguments use (`capture_uses`): from
    /// now on the graph's launches are refused (`InvalidHandle`) once one of them is released,
    /// and no longer check the ones the launch used before. ordo's typed API calls it.
    ///
    /// # Safety
    /// As `graph_set_args`.
    #[inline(always)]
    pub unsafe fn graph_set_args_using(
        &self,
        graph: Graph,
        index: u32,
        kernel: Kernel,
        args: &KernelArgs<'_>,
        allocations: &[Allocation],
    ) -> Result<()> {
        traced!("graph_set_args", ["graph" = graph.0.0, "index" = index, "kernel" = kernel.0.0], {
            // SAFETY: forwarded contract.
            unsafe { self.graph_set_args_in(graph, index, kernel, args, Some(allocations)) }
        })
    }

    /// Records that kernel launch number `index` (counted from 0 since the capture began) of
    /// `queue`'s capture in progress uses `allocations`: its graph's launches are refused
    /// (`InvalidHandle`, nothing launched) once one of them is released or from an earlier
    /// epoch, as a direct launch refuses such a buffer. Nothing happens when the queue is not
    /// capturing. A graph keeps up to 16 such allocations (and captures in progress 64 between
    /// them); the rest go unchecked. ordo's typed API calls it for each buffer of each launch.
    pub fn capture_uses(&self, queue: Queue, index: u32, allocations: &[Allocation]) -> Result<()> {
        traced!("capture_uses", ["queue" = queue.0.0, "index" = index], {
            self.with_shared(|t| {
                let slot = t.queues.resolve(queue.0)?;
                if !t.queues.at(slot).capturing() {
                    return Ok(());
                }
                let mut uses = t.capture_uses.lock();
                for a in allocations {
                    let _ = uses.push(CaptureUse { queue: slot, index, allocation: a.0 });
                }
                Ok(())
            })
        })
    }

    /// `graph_set_args`' body (`traced!` keeps the traced call out of line): the handles, then
    /// every other check in one branch (the errors, in the documented order, from out-of-line
    /// code).
    ///
    /// # Safety
    /// As `graph_set_args`.
    #[inline(always)]
    unsafe fn graph_set_args_in(
        &self,
        graph: Graph,
        index: u32,
        kernel: Kernel,
        args: &KernelArgs<'_>,
        allocations: Option<&[Allocation]>,
    ) -> Result<()> {
        self.with_shared_inline(
            #[inline(always)]
            |t| {
                let g = t.graphs.get(graph.0)?;
                let k = t.kernels.get(kernel.0)?;
                if !((k.device == g.device) & !g.orphaned & (index < g.kernels)) {
                    return Self::set_args_refused(k, g);
                }
                let d = t.devices.at(g.device);
                Self::check_param_count(d, k, args)?;
                // SAFETY: a live graph and kernel of this device; the arguments' contract is the
                // caller's.
                g.exclusively(|uses| {
                    // SAFETY: as above.
                    unsafe { d.driver.graph_set_args(d.ordinal, g.raw, index, k.raw, args) }?;
                    if let Some(allocations) = allocations {
                        uses.set(index, allocations.iter().map(|a| a.0));
                    }
                    Ok(())
                })
            },
        )
    }

    /// Why `graph_set_args` refuses a live graph and kernel: another device, an orphaned graph,
    /// an index past its launches (in that order).
    #[cold]
    #[inline(never)]
    fn set_args_refused(k: &super::KernelEntry, g: &super::GraphEntry) -> Result<()> {
        if k.device != g.device {
            return fail(ErrorCode::InvalidArgument, "the kernel belongs to another device than the graph");
        }
        if g.orphaned {
            return Self::orphaned();
        }
        fail(ErrorCode::InvalidArgument, "the graph has no kernel launch at this index")
    }

    #[cold]
    #[inline(never)]
    fn uses_released() -> Result<()> {
        fail(
            ErrorCode::InvalidHandle,
            "a buffer the graph's launches use was released (or is from before a re-init): capture again or set the launch's arguments",
        )
    }

    #[cold]
    fn orphaned<T>() -> Result<T> {
        fail(ErrorCode::InvalidArgument, "a program whose kernels the graph launches was unloaded: capture again")
    }

    /// After a program of the device in `device` (slot `program`) was unloaded: the graphs whose
    /// kernels it held are orphaned.
    pub(super) fn orphan_graphs(t: &mut Tables, device: u32, program: u32) {
        let mut cur = t.graphs.oldest();
        while let Some(slot) = cur {
            cur = t.graphs.newer(slot);
            let g = t.graphs.at_mut(slot);
            if g.device == device && (g.any_program || g.programs.contains(&program)) {
                g.orphaned = true;
            }
        }
    }

    /// Whether `queue` is capturing into a graph.
    pub fn queue_is_capturing(&self, queue: Queue) -> Result<bool> {
        traced!("queue_is_capturing", ["queue" = queue.0.0], {
            self.with_shared(|t| Ok(t.queues.get(queue.0)?.capturing()))
        })
    }

    /// Launches `graph` on `queue`, a queue of the graph's device, asynchronously: its work runs
    /// in the captured order after the queue's earlier work. Errors: the handles' errors;
    /// `InvalidArgument` for a queue of another device, an orphaned graph (a program of its
    /// kernels was unloaded) or a queue that is capturing (a graph is not launched into a
    /// capture; the capture goes on unchanged).
    ///
    /// # Safety
    /// What the captured launches, copies and host functions required of their callers holds
    /// again for this launch: the memory they use is live and not used by other work meanwhile,
    /// the kernels' programs are loaded, host functions may run again (a graph keeps the
    /// addresses and arguments it captured; the runtime cannot check them).
    pub unsafe fn graph_launch(&self, graph: Graph, queue: Queue) -> Result<()> {
        traced!(begun, "graph_launch", ["graph" = graph.0.0, "queue" = queue.0.0], {
            self.with_shared(|t| {
                let g = t.graphs.get(graph.0)?;
                let (d, raw) = self.queue(t, queue)?;
                if g.device != d.slot {
                    return fail(ErrorCode::InvalidArgument, "the queue belongs to another device than the graph");
                }
                if g.orphaned {
                    return Self::orphaned();
                }
                if t.queues.get(queue.0)?.capturing() {
                    // CUDA would add the graph to the capture as a child graph on some paths and
                    // invalidate the capture on others; the host device cannot: refused alike,
                    // before any backend sees it, and the capture goes on unchanged.
                    return fail(ErrorCode::InvalidArgument, super::queue::CAPTURING);
                }
                let timing = Self::time_work(t, begun, d.backend, d.ordinal, queue, raw);
                // SAFETY: a live graph and a live queue of this device.
                let r = g.exclusively(|uses| {
                    if uses.list.iter().any(|&(_, a)| t.alloc_handle(a).is_err()) {
                        return Self::uses_released();
                    }
                    // SAFETY: a live graph and a live queue of this device.
                    Ok(unsafe { d.backend.graph_launch(d.ordinal, g.raw, raw) }?)
                });
                Self::work_done(timing, || crate::trace::WorkKind::Graph { graph: graph.0.0 }, r)
            })
        })
    }

    /// The device a graph belongs to.
    pub fn graph_device(&self, graph: Graph) -> Result<crate::handle::Device> {
        traced!("graph_device", ["graph" = graph.0.0], {
            self.with_shared(|t| Ok(crate::handle::Device(t.devices.handle_at(t.graphs.get(graph.0)?.device))))
        })
    }

    /// Destroys a graph; launches of it already submitted still run. The handle is stale
    /// afterwards (a second destroy is `InvalidHandle`).
    pub fn graph_destroy(&self, graph: Graph) -> Result<()> {
        traced!("graph_destroy", ["graph" = graph.0.0], {
            // Host queues wait for the graph's submitted launches before its memory goes: before
            // the runtime holds its tables, as for `mem_free`.
            self.settle_backends();
            self.with_exclusive(|t| {
                let g = t.graphs.remove(graph.0)?;
                let d = self.dev_at(t, g.device);
                // SAFETY: a live graph of this device, removed from the table first so it is never
                // passed again.
                let destroyed = unsafe { d.backend.graph_destroy(d.ordinal, g.raw) };
                // Then the programs its kernels need: after the graph that launches them.
                let released = self.release_held(t, &g.held);
                destroyed?;
                released
            })
        })
    }

    fn set_capturing(t: &mut Tables, queue: Queue, d: Dev, capturing: bool) {
        if let Ok(slot) = t.queues.resolve(queue.0) {
            t.queues.at_mut(slot).capture.store(u32::from(capturing), Relaxed);
            if !capturing {
                // Events recorded during the capture keep a record that never runs (it is part
                // of the graph): marked until they are recorded again outside a capture.
                let mark = slot + 1;
                let mut cur = t.events.oldest();
                while let Some(e) = cur {
                    cur = t.events.newer(e);
                    let _ = t.events.at(e).capture.compare_exchange(mark, CAPTURE_ENDED, Relaxed, Relaxed);
                }
            }
        }
        let device = t.devices.at_mut(d.slot);
        device.capturing = if capturing { device.capturing + 1 } else { device.capturing.saturating_sub(1) };
    }

    /// An event's capture mark for a record on the queue in `slot`: 1 + the slot while that
    /// queue captures, else 0.
    #[inline]
    pub(super) fn capture_mark(t: &Tables, slot: u32) -> u32 {
        if t.queues.at(slot).capturing() { slot + 1 } else { 0 }
    }

    /// `InvalidArgument` for a wait by the queue in `queue_slot` for an event whose latest
    /// record was captured by another queue: the wait would join a capture (a queue that is not
    /// capturing) or merge two (one that is).
    #[inline]
    pub(super) fn wait_within_capture(mark: u32, queue_slot: u32) -> Result<()> {
        if mark == CAPTURE_ENDED {
            return Self::record_captured();
        }
        if mark != 0 && mark != queue_slot + 1 {
            return fail(
                ErrorCode::InvalidArgument,
                "the event was recorded during another queue's capture: only that queue may wait for it until the capture ends",
            );
        }
        Ok(())
    }

    /// `InvalidArgument` for an event whose latest record was captured by a capture that has not
    /// ended (it has no completion to wait for, query or time).
    #[inline]
    pub(super) fn not_captured(event: &super::EventEntry) -> Result<()> {
        if event.capture.load(Relaxed) == CAPTURE_ENDED {
            return Self::record_captured();
        }
        if event.capturing() {
            return fail(
                ErrorCode::InvalidArgument,
                "the event was recorded during a capture that has not ended: it has not run",
            );
        }
        Ok(())
    }

    #[cold]
    fn record_captured() -> Result<()> {
        fail(
            ErrorCode::InvalidArgument,
            "the event's latest record was captured into a graph (it never runs on its own): record it again outside a capture",
        )
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

/// A graph: the backend's executable graph and its device's slot, the launches it holds, and
/// the programs their kernels belong to (so that unloading one orphans the graph).
pub(crate) struct GraphEntry {
    pub raw: u64,
    pub device: u32,
    /// Kernel launches in the graph (`graph_set_args` numbers them from 0).
    pub kernels: u32,
    /// Slots of the programs its kernels belong to, each once.
    pub programs: heapless::Vec<u32, GRAPH_PROGRAMS>,
    /// More programs than `programs` holds, or a kernel the tables do not know (or a backend
    /// that cannot list them): any program unloaded on the device orphans the graph.
    pub any_program: bool,
    /// A program of its kernels was unloaded: launches and argument updates are refused.
    pub orphaned: bool,
    /// The programs whose reference the graph holds (one `program_retain` each, taken when the
    /// capture ended and given back when the graph is destroyed): an unload by their loader
    /// leaves them loaded until then. Handles, so a program unloaded regardless (its references
    /// given back more often than taken) is never confused with a later one in its slot.
    pub held: heapless::Vec<crate::handle::RawHandle, GRAPH_PROGRAMS>,
    /// The allocations its launches use, as far as the callers named them (`capture_uses`,
    /// `graph_set_args_using`), under the graph's own lock: held by every launch and argument
    /// update of the graph, which are so serialised per graph.
    pub uses: crate::sync::SpinLock<GraphUses>,
}

impl GraphEntry {
    /// Holds the graph's lock for `f`: the backend's launch or update of this graph, and the
    /// allocations its launches use. A thread that finds it held waits with the core's wait step.
    #[inline(always)]
    pub(crate) fn exclusively<R>(&self, f: impl FnOnce(&mut GraphUses) -> R) -> R {
        f(&mut self.uses.lock())
    }
}

/// Allocations a graph's kernel launches use, each with the launch's number (capture order):
/// a launch of the graph is refused (`InvalidHandle`) once one of them is released, as a
/// direct launch is refused a released buffer. Past `GRAPH_USES`, the rest go unchecked.
#[derive(Debug, Default)]
pub(crate) struct GraphUses {
    pub list: heapless::Vec<(u32, crate::handle::RawHandle), GRAPH_USES>,
}

impl GraphUses {
    /// Names the allocations launch `index` uses from now on (replacing what it used).
    pub(crate) fn set(&mut self, index: u32, allocations: impl Iterator<Item = crate::handle::RawHandle>) {
        self.list.retain(|&(i, _)| i != index);
        for a in allocations {
            if !self.list.contains(&(index, a)) {
                let _ = self.list.push((index, a));
            }
        }
    }
}

/// Allocations one graph's entry names (`GraphUses`); a graph whose launches use more checks the
/// first ones only.
pub(crate) const GRAPH_USES: usize = 16;

/// Allocations named by launches of captures in progress (`capture_uses`), over all queues.
pub(crate) const CAPTURE_USES: usize = 64;

/// One allocation a capture's launch uses: the capturing queue's slot, the launch's number,
/// the allocation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CaptureUse {
    pub queue: u32,
    pub index: u32,
    pub allocation: crate::handle::RawHandle,
}

/// Programs a graph's entry names one by one; a graph with kernels of more programs is
/// orphaned by an unload of any program of its device.
pub(crate) const GRAPH_PROGRAMS: usize = 4;
