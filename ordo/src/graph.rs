//! [`Graph`]: the work a closure submits to a queue, captured once ([`Queue::capture`]) and
//! launched many times as one submission (CUDA graphs: `cuStreamBeginCapture`,
//! `cuGraphInstantiate`, `cuGraphLaunch`). Destroyed on drop.

use ordo_core::Graph as RawGraph;

use crate::context::Device;
use crate::error::Result;
use crate::host_kernel::{LaunchArgs, Params, TypedFunction};
use crate::queue::Queue;

/// Work captured from a queue, launched on a queue of its device as one submission: on an H200 a
/// thousand kernels cost one `cuGraphLaunch` instead of a thousand `cuLaunchKernel`s. The
/// graph keeps the kernels, addresses and arguments it captured, so its launch is `unsafe` as
/// the launches it holds were: the buffers and modules they use must be alive and unshared
/// for each launch of the graph. Destroyed on drop (launches already submitted
/// still run); it holds its own runtime reference, `Send` and `Sync`.
///
/// Graphs come from backends that have them: CUDA and the host device (AMDGPU answers
/// `Unsupported`; the host device captures launches, copies, fills and host functions, not event
/// records or waits). The arguments of its kernel launches can be changed between launches
/// without capturing again ([`Graph::set_args`]); their grids and blocks stay as captured.
///
/// A graph holds what it uses, as every other object does: its kernels' modules stay loaded
/// until it is dropped (a reference each), and its launches are refused (`InvalidHandle`,
/// nothing launched) once a buffer given to one of its typed launches ([`Queue::launch`] while
/// capturing, or [`Graph::set_args`]) has been dropped or is from before a re-init, as a direct
/// launch refuses it. Up to 16 buffers per graph are checked; buffers given through a
/// [`LaunchBuilder`](crate::LaunchBuilder) or captured copies are not, and remain the launch's
/// `unsafe` contract. Launches and argument updates of one graph from many threads are
/// serialised.
pub struct Graph<'r> {
    device: Device<'r>,
    raw: RawGraph,
}

impl core::fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Graph({:?} on {:?})", self.raw, self.device)
    }
}

/// Ends a capture that the closure left by unwinding (its graph is destroyed), so that the
/// queue does not stay capturing.
struct Capturing<'a, 'r>(&'a Queue<'r>);

impl Drop for Capturing<'_, '_> {
    fn drop(&mut self) {
        self.0.captured.store(0, core::sync::atomic::Ordering::Relaxed);
        let rt = self.0.device.rt();
        if let Ok(g) = rt.queue_end_capture(self.0.raw) {
            let _ = rt.graph_destroy(g);
        }
    }
}

impl<'r> Queue<'r> {
    /// Captures the work `f` submits to this queue (launches, event records and waits; the
    /// queue's copies through a [`Scope`](crate::Scope) wait for the queue and so cannot be
    /// captured) into a [`Graph`]: none of it runs now. While `f` runs the queue cannot be
    /// synchronised and calls without a queue on its device are refused (`InvalidArgument`).
    /// The capture ends whatever `f` returns; an error of `f` is returned (its graph
    /// destroyed), as is the driver's error for a capture it invalidated. `Unsupported` on
    /// devices without graphs (AMDGPU in this version); `InvalidArgument`
    /// when the queue is capturing already.
    ///
    /// ```no_run
    /// # fn main() -> ordo::Result<()> {
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?; // a CUDA device
    /// let module = ordo::Module::load_builtin(&dev)?;
    /// let empty = module.typed_function::<()>("empty")?;
    /// let queue = dev.queue()?;
    /// let graph = queue.capture(|q| {
    ///     for _ in 0..1000 {
    ///         // SAFETY: `empty` takes no arguments and touches no memory.
    ///         unsafe { q.launch(&empty, ordo::LaunchDims::linear(1, 1), ())? };
    ///     }
    ///     Ok(())
    /// })?;
    /// // SAFETY: the graph's kernel touches no memory.
    /// unsafe { graph.launch(&queue)? }; // a thousand kernels, one submission
    /// queue.synchronize()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn capture(&self, f: impl FnOnce(&Queue<'r>) -> Result<()>) -> Result<Graph<'r>> {
        self.device.ctx.check_current()?;
        let rt = self.device.rt();
        rt.queue_begin_capture(self.raw)?;
        self.captured.store(1, core::sync::atomic::Ordering::Relaxed);
        let capturing = Capturing(self);
        let body = f(self);
        core::mem::forget(capturing);
        self.captured.store(0, core::sync::atomic::Ordering::Relaxed);
        let ended = rt.queue_end_capture(self.raw);
        match (body, ended) {
            (Ok(()), Ok(raw)) => Ok(Graph { device: self.device.clone(), raw }),
            (Err(e), ended) => {
                if let Ok(g) = ended {
                    let _ = rt.graph_destroy(g);
                }
                Err(e)
            }
            (Ok(()), Err(e)) => Err(e.into()),
        }
    }
}

impl<'r> Graph<'r> {
    /// Launches the graph on `queue` (a queue of its device), asynchronously: its work runs in
    /// the captured order after the queue's earlier work. `InvalidArgument` for a queue of
    /// another device or a queue that is capturing; `InvalidHandle` for a graph from before a
    /// re-init, or when a buffer its typed launches were given has been dropped (see [`Graph`]).
    ///
    /// # Safety
    /// What the `unsafe` launches captured into the graph promised holds again for this launch:
    /// the buffers they were given are alive, their kernels' modules are loaded, and nothing
    /// else touches the memory the kernels write until the queue has passed the graph.
    pub unsafe fn launch(&self, queue: &Queue<'_>) -> Result<()> {
        // SAFETY: the caller's contract.
        Ok(unsafe { self.device.rt().graph_launch(self.raw, queue.raw) }?)
    }

    /// How many kernel launches the graph holds ([`Graph::set_args`] numbers them from 0 in the
    /// order they were captured).
    pub fn kernel_count(&self) -> Result<u32> {
        Ok(self.device.rt().graph_kernel_count(self.raw)?)
    }

    /// Sets the arguments of the graph's kernel launch number `index` (capture order) for its
    /// later launches, without capturing again: typed as [`Queue::launch`]'s, for `function`,
    /// the kernel that launch runs. Launches of the graph already submitted keep the
    /// arguments they had. `InvalidArgument` for an `index` past [`Graph::kernel_count`], a
    /// launch of another kernel, a function of another device or an orphaned graph;
    /// [`Error::ArgumentDevice`](crate::Error::ArgumentDevice) for a buffer of another device.
    ///
    /// ```no_run
    /// # fn main() -> ordo::Result<()> {
    /// use ordo::{In, Out};
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?; // a CUDA device
    /// let module = ordo::Module::load_builtin(&dev)?;
    /// let add = module.typed_function::<(In<'static, f32>, In<'static, f32>, Out<'static, f32>, u32)>("vector_add_f32")?;
    /// let (a, b) = (ordo::DeviceBuffer::from_slice(&dev, &[1.0f32; 4])?, ordo::DeviceBuffer::from_slice(&dev, &[2.0f32; 4])?);
    /// let mut c = ordo::DeviceBuffer::<f32>::zeroed(&dev, 4)?;
    /// let queue = dev.queue()?;
    /// // SAFETY: each launch reads 4 elements of its inputs and writes 4 of `c`, all alive and
    /// // unshared until the queue is synchronised.
    /// let graph = queue.capture(|q| unsafe { q.launch(&add, add.dims_for(4)?, (&a, &a, &mut c, 4u32)) })?;
    /// unsafe {
    ///     graph.launch(&queue)?; // c = a + a
    ///     graph.set_args(0, &add, (&a, &b, &mut c, 4u32))?;
    ///     graph.launch(&queue)?; // c = a + b
    /// }
    /// queue.synchronize()?;
    /// assert_eq!(c.to_vec()?, [3.0; 4]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Safety
    /// As [`Queue::launch`]'s, for every later launch of the graph: the kernel's accesses stay
    /// within the buffers given here, which stay alive and unshared while those launches run.
    pub unsafe fn set_args<P: Params, A: LaunchArgs<P>>(
        &self,
        index: u32,
        function: &TypedFunction<'r, P>,
        args: A,
    ) -> Result<()> {
        let (rt, kernel) = (self.device.rt(), function.function().raw());
        args.with_args(self.device.raw(), |kernel_args, owned| {
            let allocations = crate::queue::distinct_allocations(owned);
            // SAFETY: the caller's contract; the runtime checks the graph, index, kernel and count.
            Ok(unsafe { rt.graph_set_args_using(self.raw, index, kernel, kernel_args, &allocations) }?)
        })
    }

    /// The device the graph runs on.
    pub fn device(&self) -> &Device<'r> {
        &self.device
    }

    /// The runtime's handle (for the raw API); the graph still owns it.
    pub fn raw(&self) -> RawGraph {
        self.raw
    }
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        // By identity: after the final shutdown or a re-init the handle is stale and nothing else
        // is destroyed.
        let _ = self.device.rt().graph_destroy(self.raw);
    }
}
