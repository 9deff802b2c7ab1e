//! [`Queue`] (an in-order stream, destroyed on drop), [`Event`] (destroyed on drop) and
//! [`Scope`]: asynchronous copies and host launches whose memory stays borrowed until the queue
//! has finished them.

use ordo_core::{CopyKind, Event as RawEvent, Queue as RawQueue};

use crate::buffer::{DeviceCopy, DeviceSlice, DeviceSliceMut};
use crate::context::Device;
use crate::error::{Error, Result};

/// An in-order queue of a device (a CUDA stream, an HSA queue): work submitted to it runs in
/// submission order. Destroyed on drop (after the work it holds; a drop after the runtime's
/// final shutdown is a no-op). It holds its own runtime reference; `Send` and `Sync` (work may
/// be submitted to one queue from several threads).
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let queue = ctx.default_device()?.queue()?;
/// queue.synchronize()?;
/// assert!(queue.is_idle()?);
/// # Ok::<(), ordo::Error>(())
/// ```
pub struct Queue<'r> {
    pub(crate) device: Device<'r>,
    pub(crate) raw: RawQueue,
    /// While [`Queue::capture`] records this queue's work: 1 + the kernel launches submitted
    /// since it began (their numbers in the graph); else 0.
    pub(crate) captured: core::sync::atomic::AtomicU32,
}

impl core::fmt::Debug for Queue<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Queue({:?} on {:?})", self.raw, self.device)
    }
}

impl Queue<'_> {
    /// After a kernel launch on this queue: while [`Queue::capture`] records, the launch is
    /// counted and the buffers it was given are named to the runtime (`capture_uses`), so that
    /// the graph's launches refuse them once released. One relaxed load otherwise.
    #[inline(always)]
    pub(crate) fn launched(&self, owned: &[crate::host_kernel::Owned]) -> Result<()> {
        let c = self.captured.load(core::sync::atomic::Ordering::Relaxed);
        if c == 0 {
            return Ok(());
        }
        self.note_captured(c, owned)
    }

    #[cold]
    #[inline(never)]
    fn note_captured(&self, c: u32, owned: &[crate::host_kernel::Owned]) -> Result<()> {
        self.captured.store(c.saturating_add(1), core::sync::atomic::Ordering::Relaxed);
        Ok(self.device.rt().capture_uses(self.raw, c - 1, &distinct_allocations(owned))?)
    }
}

/// The allocations of a launch's buffer arguments, each once.
pub(crate) fn distinct_allocations(
    owned: &[crate::host_kernel::Owned],
) -> heapless::Vec<ordo_core::Allocation, { crate::MAX_LAUNCH_ARGS }> {
    let mut allocations = heapless::Vec::new();
    for &(a, _, _) in owned {
        if !allocations.contains(&a) {
            let _ = allocations.push(a);
        }
    }
    allocations
}

impl<'r> Device<'r> {
    /// A new queue on this device.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// assert_eq!(dev.queue()?.device(), &dev);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn queue(&self) -> Result<Queue<'r>> {
        self.ctx.check_current()?;
        let raw = self.rt().queue_create(self.raw)?;
        Ok(Queue { device: self.clone(), raw, captured: core::sync::atomic::AtomicU32::new(0) })
    }

    /// A new event on this device.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let (queue, done) = (dev.queue()?, dev.event()?);
    /// queue.record(&done)?;
    /// done.synchronize()?;
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn event(&self) -> Result<Event<'r>> {
        self.ctx.check_current()?;
        let raw = self.rt().event_create(self.raw)?;
        Ok(Event { device: self.clone(), raw })
    }
}

impl<'r> Queue<'r> {
    /// The queue's device.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// assert_eq!(dev.queue()?.device().kind(), dev.kind());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn device(&self) -> &Device<'r> {
        &self.device
    }

    /// The raw handle (for the raw API and the C ABI).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let queue = ctx.default_device()?.queue()?;
    /// ctx.runtime().queue_synchronize(queue.raw())?;
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn raw(&self) -> RawQueue {
        self.raw
    }

    /// Gives the queue to the runtime instead of destroying it on drop: it is then destroyed by
    /// `Runtime::queue_destroy`, or by the runtime's final shutdown in teardown order.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let raw = ctx.default_device()?.queue()?.into_raw();
    /// ctx.runtime().queue_destroy(raw)?;
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn into_raw(self) -> RawQueue {
        let mut this = core::mem::ManuallyDrop::new(self);
        // SAFETY: the device is dropped once, here (the queue's own drop never runs).
        unsafe { core::ptr::drop_in_place(&mut this.device) };
        this.raw
    }

    /// Waits until everything submitted to the queue has finished.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// ctx.default_device()?.queue()?.synchronize()?;
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        Ok(self.device.rt().queue_synchronize(self.raw)?)
    }

    /// Gives back to the driver the blocks of queue-ordered memory that the cache keeps for this
    /// queue (buffers from [`DeviceBuffer::zeroed_on`](crate::DeviceBuffer::zeroed_on) dropped
    /// on it are kept for its next allocations of their size); returns the bytes given back.
    /// Dropping the queue gives them back too.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let queue = ctx.default_device()?.queue()?;
    /// drop(ordo::DeviceBuffer::<f32>::zeroed_on(&queue, 1024)?); // kept for `queue`
    /// let again = ordo::DeviceBuffer::<f32>::zeroed_on(&queue, 1024)?; // the same block
    /// drop(again);
    /// assert_eq!(queue.trim()?, 4096);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn trim(&self) -> Result<usize> {
        Ok(self.device.rt().queue_trim(self.raw)?)
    }

    /// Whether everything submitted to the queue has finished (without waiting).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let queue = ctx.default_device()?.queue()?;
    /// queue.synchronize()?;
    /// assert!(queue.is_idle()?);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn is_idle(&self) -> Result<bool> {
        Ok(self.device.rt().queue_query(self.raw)?)
    }

    /// Records `event` on the queue: it completes when the work submitted before it has.
    /// [`Error::DeviceMismatch`] for an event of another device.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let (queue, event) = (dev.queue()?, dev.event()?);
    /// queue.record(&event)?;
    /// event.synchronize()?;
    /// assert!(event.is_complete()?);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn record(&self, event: &Event<'_>) -> Result<()> {
        if event.device != self.device {
            return Err(Error::DeviceMismatch);
        }
        Ok(self.device.rt().event_record(event.raw, self.raw)?)
    }

    /// Makes the queue's later work wait until `event` has completed: work of another queue,
    /// of this device or of any other. An event of another device of the platform is waited for
    /// by the device (CUDA: across contexts); one of another platform, on the host before this
    /// returns (see `Runtime::queue_wait_event`).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let (first, second, event) = (dev.queue()?, dev.queue()?, dev.event()?);
    /// first.record(&event)?;
    /// second.wait(&event)?; // second's later work runs after first's earlier work
    /// second.synchronize()?;
    /// let host_event = ctx.device(0)?.event()?;
    /// ctx.device(0)?.queue()?.record(&host_event)?;
    /// second.wait(&host_event)?; // of another device (the host CPU's, where there is a GPU)
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn wait(&self, event: &Event<'_>) -> Result<()> {
        Ok(self.device.rt().queue_wait_event(self.raw, event.raw)?)
    }

    /// Runs `f` with a [`Scope`] on this queue, then waits for the queue: asynchronous
    /// copies made in the scope borrow their host memory for the whole scope, so the memory
    /// cannot be dropped or touched before the queue is done with it (even if a scope's value is
    /// leaked). If `f` fails or panics, the queue is still waited for before the borrows end.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let queue = dev.queue()?;
    /// let mut buf = ordo::DeviceBuffer::<f32>::zeroed(&dev, 4)?;
    /// let input = [1.0, 2.0, 3.0, 4.0];
    /// let mut output = [0.0; 4];
    /// queue.scope(|s| {
    ///     s.copy_to_device(&input, &mut buf.as_mut_slice())?;
    ///     s.copy_from_device(&buf.as_slice(), &mut output)
    /// })?;
    /// assert_eq!(output, input);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    ///
    /// The host memory stays borrowed until the scope has waited:
    ///
    /// ```compile_fail,E0506
    /// let ctx = ordo::Context::new().unwrap();
    /// let dev = ctx.default_device().unwrap();
    /// let queue = dev.queue().unwrap();
    /// let mut buf = ordo::DeviceBuffer::<f32>::zeroed(&dev, 4).unwrap();
    /// let mut output = [0.0f32; 4];
    /// queue.scope(|s| {
    ///     s.copy_from_device(&buf.as_slice(), &mut output)?;
    ///     output[0] = 1.0; // error: `output` is borrowed until the copy is done
    ///     Ok(())
    /// }).unwrap();
    /// ```
    pub fn scope<'env, R>(&self, f: impl for<'s> FnOnce(&'s Scope<'s, 'env, 'r>) -> Result<R>) -> Result<R> {
        struct WaitOnExit<'q, 'r>(&'q Queue<'r>);
        impl Drop for WaitOnExit<'_, '_> {
            fn drop(&mut self) {
                // Runs on every exit, unwinding included. An error here means the queue can no
                // longer run work (the device was lost, or the runtime was torn down, which
                // synchronised every queue first): nothing is left in flight either way.
                let _ = self.0.synchronize();
            }
        }
        let scope = Scope { queue: self, _scope: core::marker::PhantomData, _env: core::marker::PhantomData };
        let wait = WaitOnExit(self);
        let result = f(&scope);
        drop(wait);
        result
    }
}

impl Drop for Queue<'_> {
    fn drop(&mut self) {
        // After the final shutdown (Uninitialized) or a re-init (a stale handle) the queue is
        // gone already; nothing else is destroyed.
        let _ = self.device.rt().queue_destroy(self.raw);
    }
}

/// Asynchronous copies on a queue whose host memory is borrowed for `'s`, the whole scope
/// ([`Queue::scope`]), which waits for the queue before it returns. As in `std::thread::scope`,
/// `'s` is chosen by the scope itself (the closure works for every `'s`), so a borrow for `'s`
/// lasts to the end of the closure and beyond, and `'env: 's` lets it borrow the caller's data.
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let dev = ctx.default_device()?;
/// let mut buf = ordo::DeviceBuffer::<u32>::zeroed(&dev, 3)?;
/// let (src, mut back) = ([1u32, 2, 3], [0u32; 3]);
/// dev.queue()?.scope(|s: &ordo::Scope<'_, '_, '_>| {
///     s.copy_to_device(&src, &mut buf.as_mut_slice())?;
///     s.copy_from_device(&buf.as_slice(), &mut back)
/// })?;
/// assert_eq!(back, src);
/// # Ok::<(), ordo::Error>(())
/// ```
pub struct Scope<'s, 'env: 's, 'r> {
    pub(crate) queue: &'s Queue<'r>,
    _scope: core::marker::PhantomData<&'s mut &'s ()>,
    _env: core::marker::PhantomData<&'env mut &'env ()>,
}

impl core::fmt::Debug for Scope<'_, '_, '_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Scope").field("queue", self.queue).finish()
    }
}

impl<'s, 'r> Scope<'s, '_, 'r> {
    fn check(&self, device: ordo_core::Device, expected: usize, actual: usize) -> Result<()> {
        if device != self.queue.device.raw {
            return Err(Error::DeviceMismatch);
        }
        if expected != actual {
            return Err(Error::LengthMismatch { expected, actual });
        }
        Ok(())
    }

    /// Enqueues a copy between two devices' buffers (same length; the scope's queue is one of
    /// the two devices' and the copy runs on it, see `Runtime::copy_device`: between a GPU and
    /// the host device it is asynchronous from 256 KiB on, the host memory page-locked for it).
    /// Which queue may run it: between two devices of one platform, either device's; between a
    /// GPU and the host device, the GPU's only (a host device's queue is `Unsupported`: the GPU's
    /// driver makes the copy); between two GPU platforms, either device's.
    /// Both stay borrowed
    /// until the scope has waited (one of them may be the host device's memory, which another
    /// device's queue reads or writes). Work on the other device's queues is ordered with an
    /// event ([`Queue::wait`] takes one of any device).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let (host, dev) = (ctx.device(0)?, ctx.default_device()?);
    /// let a = ordo::DeviceBuffer::from_slice(&host, &[4u16, 5])?;
    /// let mut b = ordo::DeviceBuffer::<u16>::zeroed(&dev, 2)?;
    /// let (from, mut to) = (a.as_slice(), b.as_mut_slice());
    /// dev.queue()?.scope(|s| s.copy_between(&from, &mut to))?;
    /// assert_eq!(b.to_vec()?, [4, 5]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn copy_between<T: DeviceCopy>(
        &self,
        src: &'s DeviceSlice<'_, T>,
        dst: &'s mut DeviceSliceMut<'_, T>,
    ) -> Result<()> {
        let d = &dst.inner;
        if d.len() != src.len() {
            return Err(Error::LengthMismatch { expected: d.len(), actual: src.len() });
        }
        let bytes = d.len() * core::mem::size_of::<T>();
        let (to, from) = (ordo_core::DevicePtr(d.addr), ordo_core::DevicePtr(src.addr));
        Ok(self.queue.device.rt().copy_device_owned(
            d.allocation,
            to,
            src.allocation,
            from,
            bytes,
            Some(self.queue.raw),
        )?)
    }

    /// Enqueues a copy of `src` into `dst` (same length, `dst` on the queue's device).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let mut buf = ordo::DeviceBuffer::<u8>::zeroed(&dev, 2)?;
    /// dev.queue()?.scope(|s| s.copy_to_device(&[1, 2], &mut buf.as_mut_slice()))?;
    /// assert_eq!(buf.to_vec()?, [1, 2]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn copy_to_device<T: DeviceCopy>(&self, src: &'s [T], dst: &mut DeviceSliceMut<'_, T>) -> Result<()> {
        let d = &dst.inner;
        self.check(d.device, d.len(), src.len())?;
        let bytes: &[u8] = bytemuck::cast_slice(src);
        // SAFETY: `src` stays borrowed (and so valid and unchanged) for `'s`, until the scope has
        // waited for the queue; the device range is checked by the runtime.
        Ok(unsafe {
            let src = bytes.as_ptr() as u64;
            self.queue.device.rt().memcpy_owned(
                d.allocation,
                CopyKind::HostToDevice,
                d.addr,
                src,
                bytes.len(),
                Some(self.queue.raw),
            )
        }?)
    }

    /// Enqueues a copy of `src` into `dst` (same length, `src` on the queue's device).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let buf = ordo::DeviceBuffer::from_slice(&dev, &[3u8, 4])?;
    /// let mut out = [0u8; 2];
    /// dev.queue()?.scope(|s| s.copy_from_device(&buf.as_slice(), &mut out))?;
    /// assert_eq!(out, [3, 4]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn copy_from_device<T: DeviceCopy>(&self, src: &DeviceSlice<'_, T>, dst: &'s mut [T]) -> Result<()> {
        self.check(src.device, src.len(), dst.len())?;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(dst);
        // SAFETY: `dst` stays mutably borrowed (nothing else reads or writes it) for `'s`, until
        // the scope has waited for the queue; the device range is checked by the runtime.
        Ok(unsafe {
            let dst = bytes.as_mut_ptr() as u64;
            self.queue.device.rt().memcpy_owned(
                src.allocation,
                CopyKind::DeviceToHost,
                dst,
                src.addr,
                bytes.len(),
                Some(self.queue.raw),
            )
        }?)
    }
}

/// An event of a device: recorded on a queue, it completes when the work before it has.
/// Destroyed on drop.
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let dev = ctx.default_device()?;
/// let (queue, start, end) = (dev.queue()?, dev.event()?, dev.event()?);
/// queue.record(&start)?;
/// queue.record(&end)?;
/// end.synchronize()?;
/// let ms = end.elapsed_since(&start)?; // milliseconds between the two
/// assert!(ms >= 0.0);
/// # Ok::<(), ordo::Error>(())
/// ```
pub struct Event<'r> {
    device: Device<'r>,
    raw: RawEvent,
}

impl core::fmt::Debug for Event<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Event({:?} on {:?})", self.raw, self.device)
    }
}

impl<'r> Event<'r> {
    /// Waits until the event has completed.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let (queue, event) = (dev.queue()?, dev.event()?);
    /// queue.record(&event)?;
    /// event.synchronize()?;
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        Ok(self.device.rt().event_synchronize(self.raw)?)
    }

    /// Whether the event has completed (without waiting).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let (queue, event) = (dev.queue()?, dev.event()?);
    /// queue.record(&event)?;
    /// queue.synchronize()?;
    /// assert!(event.is_complete()?);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn is_complete(&self) -> Result<bool> {
        Ok(self.device.rt().event_query(self.raw)?)
    }

    /// Milliseconds from `start` to this event (both recorded and complete).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let (queue, a, b) = (dev.queue()?, dev.event()?, dev.event()?);
    /// queue.record(&a)?;
    /// queue.record(&b)?;
    /// b.synchronize()?;
    /// assert!(b.elapsed_since(&a)? >= 0.0);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn elapsed_since(&self, start: &Event<'_>) -> Result<f32> {
        Ok(self.device.rt().event_elapsed_ms(start.raw, self.raw)?)
    }

    /// The raw handle (for the raw API and the C ABI).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let event = ctx.default_device()?.event()?;
    /// assert!(ctx.runtime().event_device(event.raw()).is_ok());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn raw(&self) -> RawEvent {
        self.raw
    }

    /// Gives the event to the runtime instead of destroying it on drop: it is then destroyed by
    /// `Runtime::event_destroy`, or by the runtime's final shutdown in teardown order.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let raw = ctx.default_device()?.event()?.into_raw();
    /// ctx.runtime().event_destroy(raw)?;
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn into_raw(self) -> RawEvent {
        let mut this = core::mem::ManuallyDrop::new(self);
        // SAFETY: the device is dropped once, here (the event's own drop never runs).
        unsafe { core::ptr::drop_in_place(&mut this.device) };
        this.raw
    }
}

impl Drop for Event<'_> {
    fn drop(&mut self) {
        // As for queues: after the final shutdown or a re-init the event is gone already.
        let _ = self.device.rt().event_destroy(self.raw);
    }
}
