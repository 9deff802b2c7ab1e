//! [`Module`] (a loaded program, unloaded when its last holder goes), [`Function`] (a kernel,
//! keeping its module loaded) and [`LaunchBuilder`]: a launch whose arguments are checked
//! against the kernel's own parameter layout before the driver sees them.

use core::ffi::c_void;
use core::mem::MaybeUninit;

use ordo_core::{ErrorCode, Kernel as RawKernel, KernelArgs, LaunchDims, ParamLayout, Program as RawProgram};

use crate::buffer::{DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut};
use crate::context::Device;
use crate::error::{Error, Result};
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

/// A program loaded on a device: PTX, a cubin or a fatbin on CUDA; a code object or offload
/// bundle on AMDGPU; a host program's name on the host device. Reference-counted: a clone, and
/// each [`Function`] looked up in it, keeps the program loaded (`Runtime::program_retain`); the
/// last one dropped unloads it (a drop after the runtime's final shutdown is a no-op). `Send`
/// and `Sync`.
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let dev = ctx.default_device()?;
/// let module = ordo::Module::load_builtin(&dev)?;
/// let add = module.function("vector_add_f32")?;
/// assert_eq!(add.param_count(), Some(4));
/// # Ok::<(), ordo::Error>(())
/// ```
pub struct Module<'r> {
    device: Device<'r>,
    raw: RawProgram,
    /// Whether this value holds a reference to the program (a clone made after the program or
    /// the runtime went holds none).
    held: bool,
}

impl Clone for Module<'_> {
    /// Another holder of the program (one runtime call, shared). A clone of a module whose
    /// program is gone holds nothing; its calls fail with `InvalidHandle` as the original's do.
    fn clone(&self) -> Self {
        let held = self.held && self.device.ctx.is_current() && self.device.rt().program_retain(self.raw).is_ok();
        Self { device: self.device.clone(), raw: self.raw, held }
    }
}

impl core::fmt::Debug for Module<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Module({:?} on {:?})", self.raw, self.device)
    }
}

/// One program's images for each platform ([`Module::load_for`]): PTX, a cubin or a fatbin for
/// CUDA, a code object or offload bundle for AMDGPU, and a program of host kernels (typed host
/// twins of the GPU kernels) for the host device.
///
/// ```
/// let ptx: &[u8] = b".version 8.0\n.target sm_80\n.address_size 64\n";
/// let images = ordo::ProgramImages { cuda: Some(ptx), ..ordo::ProgramImages::NONE };
/// assert!(images.host.is_none());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ProgramImages<'a> {
    /// The CUDA image.
    pub cuda: Option<&'a [u8]>,
    /// The AMDGPU image.
    pub amdgpu: Option<&'a [u8]>,
    /// The host program.
    pub host: Option<&'static ordo_core::host::HostProgram>,
}

impl ProgramImages<'_> {
    /// No image for any platform (to fill in with struct update syntax).
    pub const NONE: ProgramImages<'static> = ProgramImages { cuda: None, amdgpu: None, host: None };
}

impl<'r> Module<'r> {
    /// Loads a program image on `device` (copied: the image need not outlive the call).
    /// `InvalidBinary` for an image the device cannot load; the driver's code is in the error,
    /// and PTX the CUDA JIT refused is [`Error::Load`] with the JIT's log.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let host = ctx.device(0)?;
    /// let module = ordo::Module::load(&host, b"ordo.builtin")?;
    /// let bad = ordo::Module::load(&host, b"no such program").unwrap_err();
    /// assert_eq!(bad.code(), ordo::ErrorCode::InvalidBinary);
    /// # drop(module);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn load(device: &Device<'r>, image: &[u8]) -> Result<Self> {
        device.ctx.check_current()?;
        let rt = device.rt();
        // Only the CUDA backend keeps a load log (its JIT compiler's).
        #[cfg(feature = "cuda")]
        let raw = {
            let mut log = std::string::String::new();
            match rt.program_load_logged(device.raw, image, &mut |text| log.push_str(text)) {
                Ok(raw) => raw,
                Err(error) if !log.is_empty() => return Err(Error::Load { error, log }),
                Err(error) => return Err(error.into()),
            }
        };
        #[cfg(not(feature = "cuda"))]
        let raw = rt.program_load(device.raw, image)?;
        Ok(Self { device: device.clone(), raw, held: true })
    }

    /// Loads a program of host kernels on a host device: registers `program` with the default
    /// runtime's host device when `device` is one of its devices (as
    /// [`register_host_program`](crate::register_host_program)), then loads it by name (a
    /// runtime of your own finds it among its host backend's programs). `Unsupported` on a
    /// device other than the host.
    ///
    /// ```
    /// ordo::host_kernel! { pub const NOP = fn nop(t) {} }
    /// static PROGRAM: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.load_host", kernels: &[NOP.kernel] };
    /// let ctx = ordo::Context::new()?;
    /// let module = ordo::Module::load_host(&ctx.device(0)?, &PROGRAM)?;
    /// assert!(module.kernel(&NOP).is_ok());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn load_host(device: &Device<'r>, program: &'static ordo_core::host::HostProgram) -> Result<Self> {
        if device.kind() != ordo_core::BackendKind::Host {
            return Err(ordo_core::Error::new(ErrorCode::Unsupported, "host programs load on the host device").into());
        }
        #[cfg(feature = "std")]
        if core::ptr::eq(device.rt(), crate::runtime()) {
            crate::register_host_program(program)?;
        }
        Self::load(device, program.name.as_bytes())
    }

    /// Loads the image of `program` for the device's platform: one program written for every
    /// device (a GPU kernel and its host twin). `Unsupported` when `program` has no image for it.
    ///
    /// ```
    /// ordo::host_kernel! { pub const NOP = fn nop(t) {} }
    /// static HOST: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.load_for", kernels: &[NOP.kernel] };
    /// static PROGRAM: ordo::ProgramImages = ordo::ProgramImages { host: Some(&HOST), ..ordo::ProgramImages::NONE };
    /// let ctx = ordo::Context::new()?;
    /// let module = ordo::Module::load_for(&ctx.device(0)?, &PROGRAM)?;
    /// assert!(module.kernel(&NOP).is_ok());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn load_for(device: &Device<'r>, program: &ProgramImages<'_>) -> Result<Self> {
        let missing = || -> Error {
            ordo_core::Error::new(ErrorCode::Unsupported, "the program has no image for this device's platform").into()
        };
        match device.kind() {
            ordo_core::BackendKind::Host => Self::load_host(device, program.host.ok_or_else(missing)?),
            ordo_core::BackendKind::Cuda => Self::load(device, program.cuda.ok_or_else(missing)?),
            ordo_core::BackendKind::Amdgpu => Self::load(device, program.amdgpu.ok_or_else(missing)?),
            _ => Err(missing()),
        }
    }

    /// Loads ordo's built-in program for the device's platform (`vector_add_f32`,
    /// `reduce_sum_f32`, and on CUDA `empty` and `spin_cycles`). `Unsupported` for a platform
    /// without one, or whose backend is not compiled into the default runtime.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let module = ordo::Module::load_builtin(&ctx.default_device()?)?;
    /// assert!(module.function("reduce_sum_f32").is_ok());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn load_builtin(device: &Device<'r>) -> Result<Self> {
        let image = crate::builtin_program_image(device.kind()).ok_or(Error::Runtime(ordo_core::Error::new(
            ErrorCode::Unsupported,
            "no built-in program for this platform",
        )))?;
        Self::load(device, image)
    }

    /// The module's device.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// assert_eq!(ordo::Module::load_builtin(&dev)?.device(), &dev);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn device(&self) -> &Device<'r> {
        &self.device
    }

    /// The kernel called `name`. Its parameter layout is read once, here (CUDA's
    /// `cuFuncGetParamInfo`, the host kernel's declared sizes, AMDGPU's code-object metadata),
    /// so every launch can be checked against it. `NotFound` when there is no such kernel.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let module = ordo::Module::load_builtin(&ctx.default_device()?)?;
    /// assert!(module.function("vector_add_f32").is_ok());
    /// assert_eq!(module.function("nope").unwrap_err().code(), ordo::ErrorCode::NotFound);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn function(&self, name: &str) -> Result<Function<'r>> {
        let rt = self.device.rt();
        self.device.ctx.check_current()?;
        let raw = rt.kernel_get(self.raw, name)?;
        let layout = match rt.kernel_param_layout(raw) {
            Ok(layout) => Some(layout),
            // The backend cannot tell (a CUDA driver before 12.4): launches are not checked.
            Err(e) if e.code == ErrorCode::Unsupported => None,
            Err(e) => return Err(e.into()),
        };
        let module = self.clone();
        if !module.held {
            return Err(Error::Runtime(ordo_core::Error::new(ErrorCode::InvalidHandle, "the module is unloaded")));
        }
        Ok(Function { module, raw, layout })
    }

    /// The raw handle (for the raw API and the C ABI).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let module = ordo::Module::load_builtin(&ctx.default_device()?)?;
    /// assert!(ctx.runtime().kernel_get(module.raw(), "vector_add_f32").is_ok());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn raw(&self) -> RawProgram {
        self.raw
    }

    /// Gives the program to the runtime instead of unloading it on drop: it is then unloaded by
    /// `Runtime::program_unload`, or by the runtime's final shutdown in teardown order.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let raw = ordo::Module::load_builtin(&ctx.default_device()?)?.into_raw();
    /// ctx.runtime().program_unload(raw)?;
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn into_raw(self) -> RawProgram {
        let mut this = core::mem::ManuallyDrop::new(self);
        // SAFETY: the device is dropped once, here (the module's own drop never runs).
        unsafe { core::ptr::drop_in_place(&mut this.device) };
        this.raw
    }
}

impl Drop for Module<'_> {
    fn drop(&mut self) {
        // Gives back this holder's reference (the last one unloads). After the final shutdown
        // or a re-init the program is gone already and nothing else is unloaded.
        if self.held {
            let _ = self.device.rt().program_unload(self.raw);
        }
    }
}

/// A kernel of a loaded module, with its parameter layout where the backend knows it. It keeps
/// its module loaded (it holds a clone), so it can be kept and moved on its own; `Send` and
/// `Sync`.
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let module = ordo::Module::load_builtin(&ctx.default_device()?)?;
/// assert!(matches!(module.function("no_such_kernel"), Err(e) if e.code() == ordo::ErrorCode::NotFound));
/// let add: ordo::Function<'static> = module.function("vector_add_f32")?;
/// drop(module); // `add` keeps the program loaded
/// assert_eq!(add.param_count(), Some(4));
/// # Ok::<(), ordo::Error>(())
/// ```
#[derive(Clone)]
pub struct Function<'r> {
    module: Module<'r>,
    raw: RawKernel,
    layout: Option<ParamLayout>,
}

impl core::fmt::Debug for Function<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Function({:?}, {:?} parameters)", self.raw, self.param_count())
    }
}

impl<'r> Function<'r> {
    /// How many parameters the kernel takes, where the backend knows its layout.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let module = ordo::Module::load_builtin(&ctx.default_device()?)?;
    /// assert_eq!(module.function("reduce_sum_f32")?.param_count(), Some(3));
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn param_count(&self) -> Option<usize> {
        self.layout.as_ref().map(|l| l.len())
    }

    /// The kernel's parameter layout (offsets and sizes), where the backend knows it.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let module = ordo::Module::load_builtin(&ctx.default_device()?)?;
    /// let add = module.function("vector_add_f32")?;
    /// assert_eq!(add.param_layout().unwrap()[3].size, 4); // n: u32
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn param_layout(&self) -> Option<&ParamLayout> {
        self.layout.as_ref()
    }

    /// Launch dimensions covering `n` elements with one thread each: the block size with the
    /// best occupancy for this kernel (CUDA's occupancy query; 1 on the host backend, whose
    /// threads run one at a time; 256 where the backend cannot tell), and enough blocks.
    /// `InvalidValue` for `n == 0`.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let module = ordo::Module::load_builtin(&ctx.default_device()?)?;
    /// let dims = module.function("vector_add_f32")?.dims_for(1000)?;
    /// assert!(u64::from(dims.grid[0]) * u64::from(dims.block[0]) >= 1000);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn dims_for(&self, n: u32) -> Result<LaunchDims> {
        if n == 0 {
            return Err(ordo_core::Error::new(ErrorCode::InvalidValue, "no elements to launch over").into());
        }
        let block = match self.module.device.rt().kernel_optimal_block_size(self.raw, 0) {
            Ok(b) => b.max(1),
            Err(e) if e.code == ErrorCode::Unsupported => 256,
            Err(e) => return Err(e.into()),
        };
        let block = block.min(n);
        Ok(LaunchDims::linear(n.div_ceil(block), block))
    }

    /// The raw handle (for the raw API and the C ABI).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let module = ordo::Module::load_builtin(&ctx.default_device()?)?;
    /// let f = module.function("vector_add_f32")?;
    /// assert_eq!(ctx.runtime().kernel_program(f.raw())?, module.raw());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn raw(&self) -> RawKernel {
        self.raw
    }

    /// The module the kernel belongs to.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let module = ordo::Module::load_builtin(&ctx.default_device()?)?;
    /// assert_eq!(module.function("vector_add_f32")?.module().raw(), module.raw());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn module(&self) -> &Module<'r> {
        &self.module
    }
}

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
        Ok(unsafe { self.queue.device.rt().launch(self.queue.raw, self.function.raw, &dims, &args) }?)
    }
}
