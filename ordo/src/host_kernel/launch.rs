//! Typed launches: [`TypedFunction`] (a kernel checked against its declared parameter list),
//! looked up with `Module::kernel` / `Module::typed_function`, and launched with
//! `Queue::launch` on any device or, with no `unsafe`, `Queue::launch_host` and
//! `Scope::launch_host` on the host device.

use core::marker::PhantomData;

use ordo_core::host::HostKernelFn;
use ordo_core::{BackendKind, LaunchDims};

use super::{LaunchArgs, Params, TypedHostKernel};
use crate::error::Result;
use crate::module::{Function, Module};
use crate::queue::{Queue, Scope};

/// A kernel of a loaded module whose parameter list is `P`, checked against the kernel's own
/// layout when it was looked up ([`Module::kernel`], [`Module::typed_function`]): launched with
/// [`Queue::launch`] on any device, and with no `unsafe` on the host device
/// ([`Queue::launch_host`], [`Scope::launch_host`]) when it is the typed host kernel it was
/// looked up for. It keeps its module loaded; `Send` and `Sync`.
///
/// ```
/// ordo::host_kernel! { pub const FILL = fn fill(t, x: u32, v: ordo::Out<u32>) { v.set(t.global_x() as usize, x); } }
/// static PROGRAM: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.fill", kernels: &[FILL.kernel] };
/// let ctx = ordo::Context::new()?;
/// let host = ctx.device(0)?;
/// let module = ordo::Module::load_host(&host, &PROGRAM)?;
/// let fill: ordo::TypedFunction<'static, (u32, ordo::Out<'static, u32>)> = module.kernel(&FILL)?;
/// let mut v = ordo::DeviceBuffer::<u32>::zeroed(&host, 3)?;
/// host.queue()?.launch_host(&fill, ordo::LaunchDims::linear(1, 3), (7u32, &mut v))?;
/// assert_eq!(v.to_vec()?, [7, 7, 7]);
/// # Ok::<(), ordo::Error>(())
/// ```
pub struct TypedFunction<'r, P: Params> {
    function: Function<'r>,
    /// The typed host kernel this function was checked to run (`Module::kernel` on the host
    /// device): what makes its host launches safe.
    host: Option<HostKernelFn>,
    _params: PhantomData<fn(P)>,
}

impl<P: Params> Clone for TypedFunction<'_, P> {
    fn clone(&self) -> Self {
        Self { function: self.function.clone(), host: self.host, _params: PhantomData }
    }
}

impl<P: Params> core::fmt::Debug for TypedFunction<'_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "TypedFunction<{}>({:?})", core::any::type_name::<P>(), self.function)
    }
}

impl<'r, P: Params> TypedFunction<'r, P> {
    /// The untyped function (its layout, launch dimensions, raw handle).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let module = ordo::Module::load_builtin(&ctx.default_device()?)?;
    /// let add = module.typed_function::<(ordo::In<'static, f32>, ordo::In<'static, f32>, ordo::Out<'static, f32>, u32)>("vector_add_f32")?;
    /// assert_eq!(add.function().param_count(), Some(4));
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn function(&self) -> &Function<'r> {
        &self.function
    }

    /// Launch dimensions covering `n` elements ([`Function::dims_for`]).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let module = ordo::Module::load_builtin(&ctx.default_device()?)?;
    /// let add = module.typed_function::<(ordo::In<'static, f32>, ordo::In<'static, f32>, ordo::Out<'static, f32>, u32)>("vector_add_f32")?;
    /// assert!(add.dims_for(10).is_ok());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn dims_for(&self, n: u32) -> Result<LaunchDims> {
        self.function.dims_for(n)
    }
}

impl<'r> Module<'r> {
    /// The kernel called `name`, typed with the parameter list `P` (plain values, [`In`](crate::In) and
    /// [`Out`](crate::Out) buffers), checked against the kernel's layout: `InvalidArgument` when the kernel
    /// has other parameter sizes (a buffer is a device address, 8 bytes), `NotFound` when there
    /// is no such kernel. Where the backend cannot describe parameters (a CUDA driver before
    /// 12.4), the types are taken as given. Its host launches need the typed host kernel itself
    /// ([`Module::kernel`]).
    ///
    /// ```
    /// use ordo::{In, Out};
    /// let ctx = ordo::Context::new()?;
    /// let module = ordo::Module::load_builtin(&ctx.default_device()?)?;
    /// type Add = (In<'static, f32>, In<'static, f32>, Out<'static, f32>, u32);
    /// assert!(module.typed_function::<Add>("vector_add_f32").is_ok());
    /// let wrong = module.typed_function::<(In<'static, f32>, u64)>("vector_add_f32").unwrap_err();
    /// assert_eq!(wrong.code(), ordo::ErrorCode::InvalidArgument);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn typed_function<P: Params>(&self, name: &str) -> Result<TypedFunction<'r, P>> {
        let function = self.function(name)?;
        if let Some(layout) = function.param_layout()
            && !layout.iter().map(|p| p.size as usize).eq(P::SIZES.iter().copied())
        {
            return Err(ordo_core::Error::new(
                ordo_core::ErrorCode::InvalidArgument,
                "the kernel's parameters differ from the declared ones",
            )
            .into());
        }
        Ok(TypedFunction { function, host: None, _params: PhantomData })
    }

    /// The kernel of `kernel`'s name, typed with its parameter list: on a GPU the module's
    /// kernel of that name (PTX, AMDGPU), on the host device the typed host kernel itself — one
    /// declaration for both. Checked as [`typed_function`](Self::typed_function); on the host
    /// device, the module's kernel must also be `kernel` itself (not another kernel of that name
    /// and parameter sizes): `InvalidArgument` otherwise.
    ///
    /// ```
    /// ordo::host_kernel! {
    ///     /// Doubles each element.
    ///     pub const DOUBLE = fn double(t, v: ordo::Out<f32>) {
    ///         let i = t.global_x() as usize;
    ///         if let Some(x) = v.get(i) { v.set(i, 2.0 * x); }
    ///     }
    /// }
    /// static PROGRAM: ordo::host::HostProgram =
    ///     ordo::host::HostProgram { name: "docs.double", kernels: &[DOUBLE.kernel] };
    ///
    /// let ctx = ordo::Context::new()?;
    /// let host = ctx.device(0)?;
    /// let double = ordo::Module::load_host(&host, &PROGRAM)?.kernel(&DOUBLE)?;
    /// let mut v = ordo::DeviceBuffer::from_slice(&host, &[1.0f32, 2.0])?;
    /// host.queue()?.launch_host(&double, ordo::LaunchDims::linear(1, 2), (&mut v,))?;
    /// assert_eq!(v.to_vec()?, [2.0, 4.0]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn kernel<P: Params>(&self, kernel: &TypedHostKernel<P>) -> Result<TypedFunction<'r, P>> {
        let mut typed = self.typed_function::<P>(kernel.kernel.name)?;
        if self.device().kind() == BackendKind::Host {
            let run = self.device().rt().host_kernel_fn(typed.function.raw())?;
            // One function, one address (a kernel's `run` is a plain `fn` item): another kernel
            // of the same name and sizes is refused rather than run by a safe launch.
            if run != Some(kernel.kernel.run as usize) {
                return Err(ordo_core::Error::new(
                    ordo_core::ErrorCode::InvalidArgument,
                    "the module's kernel of that name is not this typed host kernel",
                )
                .into());
            }
            typed.host = Some(kernel.kernel.run);
        }
        Ok(typed)
    }
}

impl<'r> Queue<'r> {
    /// Launches a typed kernel on this queue, on any device: a GPU kernel, or on the host device
    /// a typed host kernel (whose views are bounded by the buffers' lengths). The arguments'
    /// types are checked by the compiler against the kernel's parameters, each buffer's device
    /// against the queue's ([`Error::ArgumentDevice`](crate::Error::ArgumentDevice)) and its runtime reference (a buffer from
    /// before a re-init: `InvalidHandle`). Asynchronous, like every operation on a queue.
    ///
    /// # Safety
    /// As [`LaunchBuilder::launch`](crate::LaunchBuilder::launch): the kernel must only access
    /// memory it may (a GPU kernel's accesses are its own; buffers long enough for what it is
    /// told), and the buffers must not be used by other work, nor dropped, until the queue has
    /// finished it. For a safe launch on the host device see [`Queue::launch_host`] and
    /// [`Scope::launch_host`].
    ///
    /// ```
    /// use ordo::{In, Out};
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let module = ordo::Module::load_builtin(&dev)?;
    /// let add = module.typed_function::<(In<'static, f32>, In<'static, f32>, Out<'static, f32>, u32)>("vector_add_f32")?;
    /// let a = ordo::DeviceBuffer::from_slice(&dev, &[1.0f32, 2.0])?;
    /// let mut c = ordo::DeviceBuffer::<f32>::zeroed(&dev, 2)?;
    /// let queue = dev.queue()?;
    /// // SAFETY: vector_add_f32(a, b, c, n) reads n = 2 elements of a and b and writes 2 of c,
    /// // and nothing else uses them until the queue is synchronised.
    /// unsafe { queue.launch(&add, add.dims_for(2)?, (&a, &a, &mut c, 2u32))? };
    /// queue.synchronize()?;
    /// assert_eq!(c.to_vec()?, [2.0, 4.0]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    #[inline]
    pub unsafe fn launch<P: Params, A: LaunchArgs<P>>(
        &self,
        function: &TypedFunction<'r, P>,
        dims: LaunchDims,
        args: A,
    ) -> Result<()> {
        let (rt, kernel) = (self.device.rt(), function.function.raw());
        let host = self.device.kind() == BackendKind::Host;
        args.with_args(self.device.raw, |kernel_args, owned| {
            // SAFETY: the caller's contract; the runtime checks the queue, kernel and dimensions.
            // On the host device the buffers' ranges are checked live in the launch's own call.
            unsafe {
                if host {
                    rt.launch_owned(self.raw, kernel, &dims, kernel_args, owned)
                } else {
                    rt.launch(self.raw, kernel, &dims, kernel_args)
                }
            }?;
            self.launched(owned)
        })
    }

    /// Launches a typed host kernel on this host-device queue and waits for it: no `unsafe`
    /// (the kernel sees its buffers only through views bounded by their lengths, and they stay
    /// borrowed until it has finished). For several launches in flight at once, use
    /// [`Scope::launch_host`]. `Unsupported` on a GPU queue or for a function not looked up
    /// with [`Module::kernel`]; the errors of [`Queue::launch`] otherwise.
    ///
    /// Arguments of the wrong type do not compile:
    ///
    /// ```compile_fail,E0277
    /// ordo::host_kernel! { pub const SCALE = fn scale(t, k: f32, v: ordo::Out<f32>) {} }
    /// static P: ordo::host::HostProgram = ordo::host::HostProgram { name: "cf", kernels: &[SCALE.kernel] };
    /// let ctx = ordo::Context::new().unwrap();
    /// let host = ctx.device(0).unwrap();
    /// let f = ordo::Module::load_host(&host, &P).unwrap().kernel(&SCALE).unwrap();
    /// let v = ordo::DeviceBuffer::<f32>::zeroed(&host, 4).unwrap();
    /// // error: a `u32` for an `f32` parameter, and a shared buffer for an `Out` parameter
    /// host.queue().unwrap().launch_host(&f, ordo::LaunchDims::linear(1, 4), (2u32, &v)).unwrap();
    /// ```
    pub fn launch_host<P: Params, A: LaunchArgs<P>>(
        &self,
        function: &TypedFunction<'r, P>,
        dims: LaunchDims,
        args: A,
    ) -> Result<()> {
        self.check_host(function)?;
        // SAFETY: a typed host kernel (checked above) reaches memory only through its views,
        // bounded by live buffers (checked in the launch's call) borrowed until the queue has
        // finished the launch: it is waited for below, before the borrows end.
        unsafe { self.launch(function, dims, args) }?;
        self.synchronize()
    }

    /// `Unsupported` unless this is a host-device queue and `function` the typed host kernel it
    /// was looked up for.
    pub(crate) fn check_host<P: Params>(&self, function: &TypedFunction<'r, P>) -> Result<()> {
        if self.device.kind() != BackendKind::Host || function.host.is_none() {
            return Err(ordo_core::Error::new(
                ordo_core::ErrorCode::Unsupported,
                "a safe launch runs a typed host kernel (`Module::kernel`) on the host device",
            )
            .into());
        }
        Ok(())
    }
}

impl<'s, 'r> Scope<'s, '_, 'r> {
    /// Launches a typed host kernel on the scope's host-device queue without waiting: the
    /// buffers stay borrowed (shared for [`In`](crate::In), exclusive for [`Out`](crate::Out)) until the scope has
    /// waited for the queue, so launches on several queues run at once. The checks and errors
    /// of [`Queue::launch_host`].
    ///
    /// ```
    /// ordo::host_kernel! { pub const INC = fn inc(t, v: ordo::Out<u32>) { let i = t.global_x() as usize; v.set(i, v.get(i).unwrap_or(0) + 1); } }
    /// static P: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.scope", kernels: &[INC.kernel] };
    /// let ctx = ordo::Context::new()?;
    /// let host = ctx.device(0)?;
    /// let inc = ordo::Module::load_host(&host, &P)?.kernel(&INC)?;
    /// let (q1, q2) = (host.queue()?, host.queue()?);
    /// let (mut a, mut b) = (ordo::DeviceBuffer::<u32>::zeroed(&host, 4)?, ordo::DeviceBuffer::<u32>::zeroed(&host, 4)?);
    /// q1.scope(|s1| q2.scope(|s2| {
    ///     s1.launch_host(&inc, ordo::LaunchDims::linear(1, 4), (&mut a,))?; // both in flight
    ///     s2.launch_host(&inc, ordo::LaunchDims::linear(1, 4), (&mut b,))
    /// }))?;
    /// assert_eq!((a.to_vec()?, b.to_vec()?), (vec![1; 4], vec![1; 4]));
    /// # Ok::<(), ordo::Error>(())
    /// ```
    ///
    /// A buffer a launch writes cannot be touched until the scope has waited:
    ///
    /// ```compile_fail,E0499
    /// ordo::host_kernel! { pub const INC = fn inc(t, v: ordo::Out<u32>) {} }
    /// static P: ordo::host::HostProgram = ordo::host::HostProgram { name: "cf.scope", kernels: &[INC.kernel] };
    /// let ctx = ordo::Context::new().unwrap();
    /// let host = ctx.device(0).unwrap();
    /// let inc = ordo::Module::load_host(&host, &P).unwrap().kernel(&INC).unwrap();
    /// let mut a = ordo::DeviceBuffer::<u32>::zeroed(&host, 4).unwrap();
    /// host.queue().unwrap().scope(|s| {
    ///     s.launch_host(&inc, ordo::LaunchDims::linear(1, 4), (&mut a,))?;
    ///     a.fill(3) // error: `a` is borrowed by the launch until the scope ends
    /// }).unwrap();
    /// ```
    pub fn launch_host<P: Params, A: LaunchArgs<P> + 's>(
        &self,
        function: &TypedFunction<'r, P>,
        dims: LaunchDims,
        args: A,
    ) -> Result<()> {
        self.queue.check_host(function)?;
        // SAFETY: as in `Queue::launch_host`, with the borrows held for `'s`: until the scope
        // has waited for the queue (also when it unwinds).
        unsafe { self.queue.launch(function, dims, args) }
    }
}
