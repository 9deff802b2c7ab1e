//! [`Module`] (a loaded program, unloaded when its last holder goes), [`ProgramImages`] (one
//! program's images per platform) and [`Function`] (a kernel, keeping its module loaded).
//! Launches: `launch_builder.rs` (untyped, checked) and `host_kernel/` (typed).

use ordo_core::{ErrorCode, Kernel as RawKernel, LaunchDims, ParamLayout, Program as RawProgram};

use crate::context::Device;
use crate::error::{Error, Result};

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

    /// Compiles CUDA C++ `source` with NVRTC for this CUDA device (the architecture defaults to
    /// the device's own, `compute_XY` of its compute capability) and loads the PTX; returns the
    /// module and the compilation (its log, and the mangled names of
    /// [`name_expressions`](crate::nvrtc::CompileOptions::name_expressions), to look template
    /// instantiations up by). Compilations are cached (see [`nvrtc::compile`](crate::nvrtc::compile)).
    /// Errors: [`Error::Load`] with the compiler's log for source that does not compile;
    /// `NotPresent` without NVRTC (the message says how to install it); `Unsupported` on a
    /// device that is not CUDA's.
    ///
    /// ```no_run
    /// # fn main() -> ordo::Result<()> {
    /// use ordo::{In, Out};
    /// let ctx = ordo::Context::new()?;
    /// let gpu = ctx.default_device()?; // a CUDA device
    /// let source = r#"extern "C" __global__ void twice(const float* x, float* y, unsigned n) {
    ///     unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    ///     if (i < n) y[i] = 2.0f * x[i];
    /// }"#;
    /// let (module, _) = ordo::Module::compile_cuda(&gpu, source, &Default::default())?;
    /// let twice = module.typed_function::<(In<'static, f32>, Out<'static, f32>, u32)>("twice")?;
    /// let x = ordo::DeviceBuffer::from_slice(&gpu, &[1.0f32, 2.0])?;
    /// let mut y = ordo::DeviceBuffer::<f32>::zeroed(&gpu, 2)?;
    /// let queue = gpu.queue()?;
    /// // SAFETY: twice reads 2 elements of x and writes 2 of y.
    /// unsafe { queue.launch(&twice, twice.dims_for(2)?, (&x, &mut y, 2u32))? };
    /// queue.synchronize()?;
    /// assert_eq!(y.to_vec()?, [2.0, 4.0]);
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "cuda")]
    #[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
    pub fn compile_cuda(
        device: &Device<'r>,
        source: &str,
        options: &crate::nvrtc::CompileOptions,
    ) -> Result<(Self, std::sync::Arc<crate::nvrtc::Compiled>)> {
        device.ctx.check_current()?;
        if device.kind() != ordo_core::BackendKind::Cuda {
            return Err(ordo_core::Error::new(ErrorCode::Unsupported, "CUDA C++ compiles for CUDA devices only").into());
        }
        let mut options = options.clone();
        if options.arch.is_none() {
            if let ordo_core::InfoValue::Version(major, minor) =
                device.info(ordo_core::DeviceInfo::ComputeCapability)?
            {
                options.arch = Some(crate::nvrtc::arch_of(major, minor));
            }
        }
        let compiled = crate::nvrtc::compile(source, &options)?;
        Ok((Self::load(device, compiled.ptx())?, compiled))
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
    pub(crate) raw: RawKernel,
    pub(crate) layout: Option<ParamLayout>,
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
