//! Typed host kernels: Rust functions the host device runs once per thread of a grid, declared
//! with [`host_kernel!`](crate::host_kernel) and launched with [`Queue::launch_host`], which the
//! compiler checks against the kernel's parameter types, so a launch needs no `unsafe`. Buffers
//! reach a kernel as [`In`] (read) and [`Out`] (read and write) views, bounds-checked (`views.rs`). Depends
//! on `buffer`, `module`, `queue` and `error`.

use core::marker::PhantomData;

use ordo_core::host::HostKernel;
use ordo_core::{BackendKind, KernelArgs, LaunchDims};

use crate::buffer::{DeviceBuffer, DeviceCopy, DeviceSlice};
use crate::error::{Error, Result};
use crate::module::{Function, Module};
use crate::queue::Queue;

mod views;

pub use views::{In, Out};

/// A parameter type of a typed host kernel: a plain value (`f32`, `u32`, ...) or a buffer view
/// ([`In`], [`Out`]). Implemented by ordo only.
///
/// ```
/// use ordo::host::Param;
/// assert_eq!(<f64 as Param>::SIZE, 8);
/// assert_eq!(<ordo::In<'static, f32> as Param>::SIZE, 16); // a view: address and length
/// ```
pub trait Param: sealed::Sealed {
    /// What the kernel's body receives (the view's lifetime is the launch's).
    type View<'k>;
    /// Bytes of the parameter in the argument buffer (a view: address and length).
    const SIZE: usize;
    /// Reads parameter `i`.
    ///
    /// # Safety
    /// Argument `i` points to this parameter's representation, made by a checked launch.
    #[doc(hidden)]
    unsafe fn read<'k>(args: &'k KernelArgs<'_>, i: usize) -> ordo_core::Result<Self::View<'k>>;
}

mod sealed {
    pub trait Sealed {}
}

/// A buffer view's representation in the argument buffer: address, length.
type ViewRepr = [u64; 2];

macro_rules! value_params {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Param for $t {
            type View<'k> = $t;
            const SIZE: usize = core::mem::size_of::<$t>();
            unsafe fn read(args: &KernelArgs<'_>, i: usize) -> ordo_core::Result<$t> {
                // SAFETY: the caller's contract.
                unsafe { args.read::<$t>(i) }
            }
        }
        impl LaunchArg<$t> for $t {
            fn repr(&self) -> Repr {
                Repr::Value(self as *const $t as *const core::ffi::c_void, core::mem::size_of::<$t>())
            }
        }
    )*};
}
value_params!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, usize, isize);

impl<T> sealed::Sealed for In<'static, T> {}
impl<T: DeviceCopy> Param for In<'static, T> {
    type View<'k> = In<'k, T>;
    const SIZE: usize = core::mem::size_of::<ViewRepr>();
    unsafe fn read<'k>(args: &'k KernelArgs<'_>, i: usize) -> ordo_core::Result<In<'k, T>> {
        // SAFETY: the caller's contract: a view made by a checked launch.
        let [addr, len] = unsafe { args.read::<ViewRepr>(i) }?;
        let ptr = core::ptr::with_exposed_provenance::<T>(addr as usize);
        Ok(In { ptr, len: len as usize, _k: PhantomData })
    }
}

impl<T> sealed::Sealed for Out<'static, T> {}
impl<T: DeviceCopy> Param for Out<'static, T> {
    type View<'k> = Out<'k, T>;
    const SIZE: usize = core::mem::size_of::<ViewRepr>();
    unsafe fn read<'k>(args: &'k KernelArgs<'_>, i: usize) -> ordo_core::Result<Out<'k, T>> {
        // SAFETY: as for `In`.
        let [addr, len] = unsafe { args.read::<ViewRepr>(i) }?;
        let ptr = core::ptr::with_exposed_provenance_mut::<T>(addr as usize);
        Ok(Out { ptr, len: len as usize, _k: PhantomData })
    }
}

/// An argument's representation while a launch is made.
#[doc(hidden)]
#[derive(Debug)]
pub enum Repr {
    /// A plain value: its address and size.
    Value(*const core::ffi::c_void, usize),
    /// A buffer: its device, address and length.
    View(ordo_core::Device, u64, usize),
}

/// A launch argument that fits parameter type `P` of a typed host kernel: the value itself for
/// plain parameters, `&DeviceBuffer<T>` / `&DeviceSlice<T>` for [`In<T>`](In), and
/// `&mut DeviceBuffer<T>` for [`Out<T>`](Out).
///
/// ```
/// use ordo::host::LaunchArg;
/// fn fits_in<A: LaunchArg<ordo::In<'static, f32>>>(_: A) {}
/// let ctx = ordo::Context::new()?;
/// let buf = ordo::DeviceBuffer::<f32>::zeroed(&ctx.devices()?[0], 2)?;
/// fits_in(&buf);
/// fits_in(&buf.slice(1..)?);
/// # Ok::<(), ordo::Error>(())
/// ```
pub trait LaunchArg<P> {
    /// The argument's representation.
    #[doc(hidden)]
    fn repr(&self) -> Repr;
}

impl<T: DeviceCopy> LaunchArg<In<'static, T>> for &DeviceBuffer<'_, T> {
    fn repr(&self) -> Repr {
        Repr::View(self.device().raw, self.addr, self.len())
    }
}
impl<T: DeviceCopy> LaunchArg<In<'static, T>> for &DeviceSlice<'_, T> {
    fn repr(&self) -> Repr {
        Repr::View(self.device, self.addr, self.len())
    }
}
impl<T: DeviceCopy> LaunchArg<Out<'static, T>> for &mut DeviceBuffer<'_, T> {
    fn repr(&self) -> Repr {
        Repr::View(self.device().raw, self.addr, self.len())
    }
}

/// A typed host kernel's parameter list (a tuple of [`Param`]s), and the launch argument
/// tuples that fit it.
///
/// ```
/// use ordo::host::Params;
/// assert_eq!(<(u32, f64, ordo::Out<'static, u8>) as Params>::SIZES, &[4, 8, 16]);
/// ```
pub trait Params: sealed::Sealed {
    /// The parameters' sizes, in order (what `kernel_param_layout` reports).
    const SIZES: &'static [usize];
}

/// A tuple of launch arguments fitting the parameter list `P`.
///
/// ```
/// use ordo::host::LaunchArgs;
/// fn fits<A: LaunchArgs<(f32, ordo::Out<'static, f32>)>>(_: A) {}
/// let ctx = ordo::Context::new()?;
/// let mut y = ordo::DeviceBuffer::<f32>::zeroed(&ctx.devices()?[0], 2)?;
/// fits((2.0f32, &mut y));
/// # Ok::<(), ordo::Error>(())
/// ```
pub trait LaunchArgs<P: Params> {
    /// Calls `f` with the arguments' pointers and sizes (views are laid out on the stack here).
    #[doc(hidden)]
    fn with_args<R>(&self, device: ordo_core::Device, f: impl FnOnce(&KernelArgs<'_>) -> Result<R>) -> Result<R>;
}

macro_rules! tuples {
    ($n:literal; $($p:ident $a:ident $i:tt),*) => {
        impl<$($p: Param),*> sealed::Sealed for ($($p,)*) {}
        impl<$($p: Param),*> Params for ($($p,)*) {
            const SIZES: &'static [usize] = &[$($p::SIZE),*];
        }
        impl<$($p: Param, $a: LaunchArg<$p>),*> LaunchArgs<($($p,)*)> for ($($a,)*) {
            #[allow(unused_variables, unused_mut, clippy::zero_repeat_side_effects)] // the empty tuple
            fn with_args<R>(&self, device: ordo_core::Device, f: impl FnOnce(&KernelArgs<'_>) -> Result<R>) -> Result<R> {
                let mut views: [ViewRepr; $n] = [[0; 2]; $n];
                let mut sizes = [0usize; $n];
                let mut ptrs = [core::ptr::null_mut::<core::ffi::c_void>(); $n];
                $(
                    match self.$i.repr() {
                        Repr::Value(p, s) => { ptrs[$i] = p.cast_mut(); sizes[$i] = s; }
                        Repr::View(d, addr, len) => {
                            if d != device {
                                return Err(Error::ArgumentDevice { index: $i });
                            }
                            views[$i] = [addr, len as u64];
                            sizes[$i] = core::mem::size_of::<ViewRepr>();
                        }
                    }
                )*
                $( if ptrs[$i].is_null() { ptrs[$i] = (&mut views[$i] as *mut ViewRepr).cast(); } )*
                f(&KernelArgs::new(&ptrs, &sizes)?)
            }
        }
    };
}
tuples!(0;);
tuples!(1; P0 A0 0);
tuples!(2; P0 A0 0, P1 A1 1);
tuples!(3; P0 A0 0, P1 A1 1, P2 A2 2);
tuples!(4; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3);
tuples!(5; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4);
tuples!(6; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5);
tuples!(7; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6);
tuples!(8; P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7);

/// A typed host kernel: its entry for a `HostProgram` and its parameter list `P` (made by
/// [`host_kernel!`](crate::host_kernel)).
///
/// ```
/// ordo::host_kernel! { pub const NOP = fn nop(t, n: u32) {} }
/// let k: ordo::TypedHostKernel<(u32,)> = NOP;
/// assert_eq!((k.kernel.name, k.kernel.params), ("nop", &[4usize][..]));
/// ```
pub struct TypedHostKernel<P: Params> {
    /// The kernel as the host backend runs it (put it in a `HostProgram`'s `kernels`).
    pub kernel: HostKernel,
    _params: PhantomData<fn(P)>,
}

impl<P: Params> core::fmt::Debug for TypedHostKernel<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "TypedHostKernel<{}>({:?})", core::any::type_name::<P>(), self.kernel.name)
    }
}

impl<P: Params> TypedHostKernel<P> {
    #[doc(hidden)]
    pub const fn new(kernel: HostKernel) -> Self {
        Self { kernel, _params: PhantomData }
    }
}

/// A function of a loaded host module whose parameter list is `P` ([`Module::host_function`]).
///
/// ```
/// ordo::host_kernel! { pub const FILL = fn fill(t, x: u32, v: ordo::Out<u32>) { v.set(t.global_x() as usize, x); } }
/// static PROGRAM: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.fill", kernels: &[FILL.kernel] };
/// ordo::register_host_program(&PROGRAM)?;
/// let ctx = ordo::Context::new()?;
/// let host = ctx.devices()?[0];
/// let module = ordo::Module::load(&host, b"docs.fill")?;
/// let fill: ordo::HostFunction<'_, '_, (u32, ordo::Out<'static, u32>)> = module.host_function(&FILL)?;
/// let mut v = ordo::DeviceBuffer::<u32>::zeroed(&host, 3)?;
/// host.queue()?.launch_host(&fill, ordo::LaunchDims::linear(1, 3), (7u32, &mut v))?;
/// assert_eq!(v.to_vec()?, [7, 7, 7]);
/// # Ok::<(), ordo::Error>(())
/// ```
pub struct HostFunction<'m, 'c, P: Params> {
    function: Function<'m, 'c>,
    _params: PhantomData<fn(P)>,
}

impl<P: Params> core::fmt::Debug for HostFunction<'_, '_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "HostFunction<{}>({:?})", core::any::type_name::<P>(), self.function)
    }
}

impl<'c> Module<'c> {
    /// The typed host kernel `kernel` of this module (a host program that lists it). `NotFound`
    /// when the module has no kernel of its name, `InvalidArgument` when the module's kernel of
    /// that name declares other parameters, `Unsupported` on a device other than the host.
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
    /// ordo::register_host_program(&PROGRAM)?;
    /// let ctx = ordo::Context::new()?;
    /// let host = ctx.devices()?[0];
    /// let module = ordo::Module::load(&host, PROGRAM.name.as_bytes())?;
    /// let double = module.host_function(&DOUBLE)?;
    /// let mut v = ordo::DeviceBuffer::from_slice(&host, &[1.0f32, 2.0])?;
    /// host.queue()?.launch_host(&double, ordo::LaunchDims::linear(1, 2), (&mut v,))?;
    /// assert_eq!(v.to_vec()?, [2.0, 4.0]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn host_function<P: Params>(&self, kernel: &TypedHostKernel<P>) -> Result<HostFunction<'_, 'c, P>> {
        if self.device().kind() != BackendKind::Host {
            return Err(ordo_core::Error::new(
                ordo_core::ErrorCode::Unsupported,
                "typed host kernels run on the host device",
            )
            .into());
        }
        let function = self.function(kernel.kernel.name)?;
        let declared = function.param_layout().map(|l| l.iter().map(|p| p.size as usize).eq(P::SIZES.iter().copied()));
        if declared != Some(true) {
            return Err(ordo_core::Error::new(
                ordo_core::ErrorCode::InvalidArgument,
                "the module's kernel of that name declares other parameters",
            )
            .into());
        }
        Ok(HostFunction { function, _params: PhantomData })
    }
}

impl<'c> Queue<'c> {
    /// Launches a typed host kernel: the arguments' types are checked by the compiler against
    /// the kernel's parameters, each buffer's device against the queue's
    /// ([`Error::ArgumentDevice`]), and the launch has finished when this returns (the host
    /// device runs the grid's threads one at a time, in order). No `unsafe`: the kernel sees
    /// the buffers only through bounds-checked views.
    ///
    /// Arguments of the wrong type do not compile:
    ///
    /// ```compile_fail,E0277
    /// ordo::host_kernel! { pub const SCALE = fn scale(t, k: f32, v: ordo::Out<f32>) {} }
    /// static P: ordo::host::HostProgram = ordo::host::HostProgram { name: "cf", kernels: &[SCALE.kernel] };
    /// let ctx = ordo::Context::new().unwrap();
    /// let host = ctx.devices().unwrap()[0];
    /// let m = ordo::Module::load(&host, b"cf").unwrap();
    /// let f = m.host_function(&SCALE).unwrap();
    /// let v = ordo::DeviceBuffer::<f32>::zeroed(&host, 4).unwrap();
    /// // error: a `u32` for an `f32` parameter, and a shared buffer for an `Out` parameter
    /// host.queue().unwrap().launch_host(&f, ordo::LaunchDims::linear(1, 4), (2u32, &v)).unwrap();
    /// ```
    pub fn launch_host<P: Params, A: LaunchArgs<P>>(
        &self,
        function: &HostFunction<'_, 'c, P>,
        dims: LaunchDims,
        args: A,
    ) -> Result<()> {
        args.with_args(self.device.raw, |kernel_args| {
            // SAFETY: the kernel is a typed host kernel whose parameters are `P` (checked when
            // the function was looked up); every argument is `P`'s representation, made by
            // `LaunchArgs` from values and from buffers of the queue's device, borrowed until
            // this returns (host queues copy the argument values at submission).
            unsafe { self.rt.launch(self.raw, function.function.raw(), &dims, kernel_args) }?;
            Ok(())
        })?;
        // The views must not outlive the borrows: wait for the queue (host queues run their
        // work later, on a thread or at an execution point such as this synchronise).
        self.synchronize()
    }
}

/// Defines a typed host kernel: `host_kernel! { pub const NAME = fn name(t, a: f32, x: In<f32>,
/// y: Out<f32>) { body } }` makes `NAME`, a [`TypedHostKernel`] to list in a `HostProgram`
/// (`kernels: &[NAME.kernel]`) and to look up with [`Module::host_function`]. The body runs
/// once per thread; `t` is the thread's `HostThread` (grid position). Parameters are plain
/// values (`u8`..`u64`, `i8`..`i64`, `f32`, `f64`, `usize`, `isize`), [`In<T>`](In) and
/// [`Out<T>`](Out); up to eight.
///
/// ```
/// ordo::host_kernel! {
///     /// y = a * x + y
///     pub const SAXPY = fn saxpy(t, a: f32, x: ordo::In<f32>, y: ordo::Out<f32>) {
///         let i = t.global_x() as usize;
///         if let (Some(xi), Some(yi)) = (x.get(i), y.get(i)) {
///             y.set(i, a * xi + yi);
///         }
///     }
/// }
/// assert_eq!(SAXPY.kernel.name, "saxpy");
/// ```
#[macro_export]
macro_rules! host_kernel {
    ($(#[$attr:meta])* $vis:vis const $NAME:ident = fn $name:ident($t:ident $(, $arg:ident : $ty:ty)* $(,)?) $body:block) => {
        $(#[$attr])*
        $vis const $NAME: $crate::host::TypedHostKernel<($($crate::__host_param!($ty),)*)> = {
            #[allow(unused_mut, unused_variables, unused_assignments)]
            unsafe fn $name(
                $t: &$crate::host::HostThread,
                args: &$crate::KernelArgs<'_>,
            ) -> ::core::result::Result<(), $crate::host::RuntimeError> {
                let mut index = 0usize;
                $(
                    // SAFETY: the launch's contract (a typed launch made the arguments).
                    let mut $arg = unsafe {
                        <$crate::__host_param!($ty) as $crate::host::Param>::read(args, index)
                    }?;
                    index += 1;
                )*
                $body
                Ok(())
            }
            $crate::host::TypedHostKernel::new($crate::host::HostKernel {
                name: stringify!($name),
                run: $name,
                params: <($($crate::__host_param!($ty),)*) as $crate::host::Params>::SIZES,
            })
        };
    };
}

/// The parameter type for a kernel's declared type (`In<T>` and `Out<T>` get their `'static`
/// marker lifetime).
#[doc(hidden)]
#[macro_export]
macro_rules! __host_param {
    ($($p:ident ::)* In < $t:ty >) => { $crate::host::In<'static, $t> };
    ($($p:ident ::)* Out < $t:ty >) => { $crate::host::Out<'static, $t> };
    ($t:ty) => { $t };
}
