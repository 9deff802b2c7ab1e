//! [`LaunchBuilder`]: an untyped launch whose arguments ([`KernelArg`]) are checked against the
//! kernel's own parameter layout, their devices and their runtime reference before the driver
//! sees them.

use core::ffi::c_void;
use core::mem::MaybeUninit;

use ordo_core::{KernelArgs, LaunchDims};

use crate::buffer::{DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut};
use crate::error::{Error, Result};
use crate::module::Function;
use crate::queue::Queue;

/// Most arguments a [`LaunchBuilder`] takes.
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let dev = ctx.default_device()?;
/// let (queue, module) = (dev.queue()?, ordo::Module::load_builtin(&dev)?);
/// let add = module.function("vector_add_f32")?;
/// let mut launch = queue.launch_builder(&add);
/// for _ in 0..=ordo::MAX_LAUNCH_ARGS {
///     launch.arg(&0u32);
/// }
/// // SAFETY: refused before anything runs.
/// assert!(matches!(unsafe { launch.launch(add.dims_for(1)?) }, Err(ordo::Error::TooManyArguments)));
/// # Ok::<(), ordo::Error>(())
/// ```
pub const MAX_LAUNCH_ARGS: usize = 32;

/// What a launch argument is to a kernel: a pointer to its bytes and their count, and the device
/// whose memory it names (buffers).
///
/// ```
/// use ordo::KernelArg;
/// let ctx = ordo::Context::new()?;
/// let dev = ctx.default_device()?;
/// let buf = ordo::DeviceBuffer::<f32>::zeroed(&dev, 4)?;
/// let (_, size, device) = buf.as_kernel_arg();
/// assert_eq!((size, device), (8, Some(dev.raw()))); // a device address, of `dev`'s memory
/// assert_eq!(7u16.as_kernel_arg().1, 2);
/// # Ok::<(), ordo::Error>(())
/// ```
pub trait KernelArg {
    /// The argument's bytes as the kernel receives them, their size, and the device of the
    /// memory it names (`None` for plain values).
    fn as_kernel_arg(&self) -> (*const c_void, usize, Option<ordo_core::Device>);

    /// Whether the memory the argument names is still its runtime's (`false` for a buffer whose
    /// runtime reference was taken away: see [`Context`](crate::Context)); plain values are.
    #[inline]
    fn is_current(&self) -> bool {
        true
    }
}

impl<T: DeviceCopy> KernelArg for T {
    fn as_kernel_arg(&self) -> (*const c_void, usize, Option<ordo_core::Device>) {
        ((self as *const T).cast(), core::mem::size_of::<T>(), None)
    }
}

impl<T: DeviceCopy> KernelArg for DeviceBuffer<'_, T> {
    fn as_kernel_arg(&self) -> (*const c_void, usize, Option<ordo_core::Device>) {
        ((&self.addr as *const u64).cast(), core::mem::size_of::<u64>(), Some(self.device().raw))
    }
    #[inline]
    fn is_current(&self) -> bool {
        self.device().context().is_current()
    }
}

impl<T: DeviceCopy> KernelArg for DeviceSlice<'_, T> {
    fn as_kernel_arg(&self) -> (*const c_void, usize, Option<ordo_core::Device>) {
        ((&self.addr as *const u64).cast(), core::mem::size_of::<u64>(), Some(self.device))
    }
    #[inline]
    fn is_current(&self) -> bool {
        self.ctx.is_current()
    }
}

impl<T: DeviceCopy> KernelArg for DeviceSliceMut<'_, T> {
    fn as_kernel_arg(&self) -> (*const c_void, usize, Option<ordo_core::Device>) {
        self.inner.as_kernel_arg()
    }
    #[inline]
    fn is_current(&self) -> bool {
        self.inner.is_current()
    }
}

/// A launch being put together: `queue.launch_builder(&f).arg(&a).arg(&n).launch(dims)`.
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let dev = ctx.default_device()?;
/// let (queue, module) = (dev.queue()?, ordo::Module::load_builtin(&dev)?);
/// let add = module.function("vector_add_f32")?;
/// let a = ordo::DeviceBuffer::from_slice(&dev, &[1.0f32, 2.0])?;
/// let mut c = ordo::DeviceBuffer::<f32>::zeroed(&dev, 2)?;
/// let mut c_view = c.as_mut_slice();
/// let mut launch: ordo::LaunchBuilder<'_, '_> = queue.launch_builder(&add);
/// launch.arg(&a).arg(&a).arg(&c_view).arg(&2u32);
/// // SAFETY: vector_add_f32(a, b, c, n) reads a and b and writes c, n = 2 elements each.
/// unsafe { launch.launch(add.dims_for(2)?)? };
/// queue.synchronize()?;
/// drop(launch);
/// c_view.copy_from(&[0.0, 0.0])?;
/// assert_eq!(c.to_vec()?, [0.0, 0.0]);
/// # Ok::<(), ordo::Error>(())
/// ```
/// Arguments are borrowed for the builder's life; [`LaunchBuilder::launch`] may be called again
/// to submit the same launch once more. The builder is used in place (`&mut self`), never moved,
/// so its argument arrays are not copied on the way.
///
/// Each argument is checked as it is added (its size against the kernel's parameter, its device
/// against the queue's); the first failure is kept and returned by [`LaunchBuilder::launch`].
///
/// A builder holds its arguments' addresses, so it is neither `Send` nor `Sync`: it cannot be
/// handed to another thread while the arguments are borrowed here.
///
/// ```compile_fail,E0277
/// let ctx = ordo::Context::new().unwrap();
/// let dev = ctx.default_device().unwrap();
/// let (queue, module) = (dev.queue().unwrap(), ordo::Module::load_builtin(&dev).unwrap());
/// let add = module.function("vector_add_f32").unwrap();
/// let launch = queue.launch_builder(&add);
/// std::thread::scope(|s| { s.spawn(move || drop(launch)); }); // error: not `Send`
/// ```
pub struct LaunchBuilder<'a, 'r> {
    queue: &'a Queue<'r>,
    function: &'a Function<'r>,
    /// The first `count` (at most `MAX_LAUNCH_ARGS`) are written; the rest are never read.
    params: [MaybeUninit<*mut c_void>; MAX_LAUNCH_ARGS],
    /// As `params`.
    sizes: [MaybeUninit<usize>; MAX_LAUNCH_ARGS],
    count: usize,
    /// The first argument whose size differs from its parameter's: (index, expected, actual).
    wrong_size: Option<(usize, usize, usize)>,
    /// The first argument naming memory of another device than the queue's.
    wrong_device: Option<usize>,
    /// The first argument naming memory whose runtime reference was taken away.
    stale: Option<usize>,
    _args: core::marker::PhantomData<&'a ()>,
}

impl core::fmt::Debug for LaunchBuilder<'_, '_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LaunchBuilder")
            .field("queue", self.queue)
            .field("function", self.function)
            .field("arguments", &self.count)
            .finish_non_exhaustive()
    }
}

impl<'r> Queue<'r> {
    /// Starts a launch of `function` on this queue.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let (queue, module) = (dev.queue()?, ordo::Module::load_builtin(&dev)?);
    /// let add = module.function("vector_add_f32")?;
    /// let a = ordo::DeviceBuffer::from_slice(&dev, &[1.0f32; 8])?;
    /// let mut c = ordo::DeviceBuffer::<f32>::zeroed(&dev, 8)?;
    /// // Five arguments for a kernel of four parameters: refused before the driver sees them.
    /// let wrong = unsafe { queue.launch_builder(&add).arg(&a).arg(&a).arg(&c).arg(&8u32).arg(&8u32).launch(add.dims_for(8)?) };
    /// assert!(matches!(wrong, Err(ordo::Error::ArgumentCount { expected: 4, actual: 5 })));
    /// // SAFETY: vector_add_f32(a, b, c, n) reads a and b and writes c, n elements each.
    /// unsafe { queue.launch_builder(&add).arg(&a).arg(&a).arg(&c.as_mut_slice()).arg(&8u32).launch(add.dims_for(8)?)? };
    /// assert_eq!(c.to_vec()?, [2.0; 8]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    #[inline]
    pub fn launch_builder<'a>(&'a self, function: &'a Function<'r>) -> LaunchBuilder<'a, 'r> {
        LaunchBuilder {
            queue: self,
            function,
            params: [const { MaybeUninit::uninit() }; MAX_LAUNCH_ARGS],
            sizes: [const { MaybeUninit::uninit() }; MAX_LAUNCH_ARGS],
            count: 0,
            wrong_size: None,
            wrong_device: None,
            stale: None,
            _args: core::marker::PhantomData,
        }
    }
}

impl<'a, 'r> LaunchBuilder<'a, 'r> {
    /// Adds the next argument: a plain value (`&n`), a buffer or a slice of one (its device
    /// address). Past [`MAX_LAUNCH_ARGS`], the launch fails with [`Error::TooManyArguments`].
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let (queue, module) = (dev.queue()?, ordo::Module::load_builtin(&dev)?);
    /// let sum = module.function("reduce_sum_f32")?;
    /// let x = ordo::DeviceBuffer::from_slice(&dev, &[1.0f32, 2.0, 3.0])?;
    /// let mut out = ordo::DeviceBuffer::<f32>::zeroed(&dev, 1)?;
    /// let n = 3u32;
    /// // SAFETY: reduce_sum_f32(x, out, n) reads n elements of x and adds them into out[0].
    /// unsafe { queue.launch_builder(&sum).arg(&x).arg(&out).arg(&n).launch(sum.dims_for(n)?)? };
    /// assert_eq!(out.to_vec()?, [6.0]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    #[inline]
    pub fn arg<A: KernelArg + ?Sized>(&mut self, arg: &'a A) -> &mut Self {
        let (ptr, size, device) = arg.as_kernel_arg();
        let index = self.count;
        if let (Some(param), Some(slot)) = (self.params.get_mut(index), self.sizes.get_mut(index)) {
            param.write(ptr.cast_mut());
            slot.write(size);
        }
        if let Some(expected) = self.function.layout.as_ref().and_then(|l| l.get(index)).map(|p| p.size as usize)
            && expected != size
            && self.wrong_size.is_none()
        {
            self.wrong_size = Some((index, expected, size));
        }
        if device.is_some_and(|d| d != self.queue.device.raw) && self.wrong_device.is_none() {
            self.wrong_device = Some(index);
        }
        if device.is_some() && !arg.is_current() && self.stale.is_none() {
            self.stale = Some(index);
        }
        self.count += 1;
        self
    }

    /// Checks the arguments (count, each size against the kernel's parameter layout where the
    /// backend knows it, each buffer's device against the queue's) and submits the launch.
    /// Nothing is submitted when a check fails: [`Error::ArgumentCount`],
    /// [`Error::ArgumentSize`] (naming the argument), [`Error::ArgumentDevice`],
    /// [`Error::TooManyArguments`], or the runtime's errors (dimensions, handles).
    ///
    /// # Safety
    /// The kernel must only access memory it may: each pointer argument must be valid for what
    /// the kernel does with it (e.g. a buffer at least as long as the element count the kernel
    /// is given) until the launch has finished, and each value must be valid for its
    /// parameter's type. The launch is asynchronous: memory the kernel uses must stay allocated,
    /// and not be read or written by other work, until the queue has finished it (dropping a
    /// buffer waits for host queues, and a device's memory outlives its queue's work; the
    /// function's module stays loaded while the [`Function`] lives). On the host device the
    /// kernel is Rust code reading that memory on the queue's thread. The checks above make sure
    /// only that each argument has its parameter's size and device, and that no buffer is from
    /// before a re-init.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let (queue, module) = (dev.queue()?, ordo::Module::load_builtin(&dev)?);
    /// let sum = module.function("reduce_sum_f32")?;
    /// let x = ordo::DeviceBuffer::from_slice(&dev, &[1.0f32, 2.0])?;
    /// let mut out = ordo::DeviceBuffer::<f32>::zeroed(&dev, 1)?;
    /// // A u64 where the kernel takes a u32: refused, naming the argument.
    /// // SAFETY: refused before anything runs.
    /// let wrong = unsafe { queue.launch_builder(&sum).arg(&x).arg(&out).arg(&2u64).launch(sum.dims_for(2)?) };
    /// assert_eq!(wrong.unwrap_err(), ordo::Error::ArgumentSize { index: 2, expected: 4, actual: 8 });
    /// // SAFETY: reduce_sum_f32(x, out, n) reads n = 2 elements of x and adds them into out[0].
    /// unsafe { queue.launch_builder(&sum).arg(&x).arg(&out.as_mut_slice()).arg(&2u32).launch(sum.dims_for(2)?)? };
    /// assert_eq!(out.to_vec()?, [3.0]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    #[inline]
    pub unsafe fn launch(&self, dims: LaunchDims) -> Result<()> {
        let count = self.count;
        if count > MAX_LAUNCH_ARGS {
            return Err(Error::TooManyArguments);
        }
        if let Some(layout) = &self.function.layout
            && layout.len() != count
        {
            return Err(Error::ArgumentCount { expected: layout.len(), actual: count });
        }
        if let Some((index, expected, actual)) = self.wrong_size {
            return Err(Error::ArgumentSize { index, expected, actual });
        }
        if self.stale.is_some() {
            return Err(crate::context::stale());
        }
        if let Some(index) = self.wrong_device {
            return Err(Error::ArgumentDevice { index });
        }
        // SAFETY: `arg` wrote the first `count` (<= MAX_LAUNCH_ARGS, checked above) elements of
        // both arrays, and `MaybeUninit<T>` has `T`'s layout.
        let (params, sizes) = unsafe {
            (
                core::slice::from_raw_parts(self.params.as_ptr().cast::<*mut c_void>(), count),
                core::slice::from_raw_parts(self.sizes.as_ptr().cast::<usize>(), count),
            )
        };
        // SAFETY: one size per pointer, and every pointer comes from a reference (`arg`).
        let args = unsafe { KernelArgs::new_unchecked(params, sizes) };
        // SAFETY: the caller's contract; the runtime checks the queue, kernel and dimensions.
        unsafe { self.queue.device.rt().launch(self.queue.raw, self.function.raw, &dims, &args) }?;
        // Counted in a capture (the builder names no buffer to it: see `Queue::capture`).
        self.queue.launched(&[])
    }
}
