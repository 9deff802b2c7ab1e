//! Typed kernels: a kernel's signature declared once in Rust types ([`Params`]: plain values,
//! [`In`] and [`Out`] buffers), checked against the kernel's own parameter layout when it is
//! looked up ([`TypedFunction`]), and launched with the same arguments on every device: a PTX or
//! AMDGPU kernel on a GPU, a typed host kernel ([`host_kernel!`](crate::host_kernel)) of the same
//! name on the host CPU. A buffer parameter is a device address (8 bytes) on every device; the
//! typed launch hands host kernels each buffer's length beside it, so their views are bounds-
//! checked and a host launch needs no `unsafe`.

use core::marker::PhantomData;

use ordo_core::host::HostKernel;
use ordo_core::{Allocation, KernelArgs};

use crate::buffer::{DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut};
use crate::error::{Error, Result};

mod launch;
mod views;

pub use launch::TypedFunction;
pub use views::{In, Out};

/// A parameter type of a typed kernel: a plain value (`f32`, `u32`, ...) or a buffer
/// ([`In`]: read, [`Out`]: read and write). Implemented by ordo only.
///
/// ```
/// use ordo::host::Param;
/// assert_eq!(<f64 as Param>::SIZE, 8);
/// assert_eq!(<ordo::In<'static, f32> as Param>::SIZE, 8); // a device address, as on a GPU
/// ```
pub trait Param: sealed::Sealed {
    /// What a host kernel's body receives (a view's lifetime is the launch's).
    type View<'k>;
    /// Bytes of the parameter in the argument buffer (a buffer: its device address).
    const SIZE: usize;
    /// Whether it is a buffer ([`In`], [`Out`]): its view needs the buffer's length, which only
    /// the typed launch gives.
    const BUFFER: bool = false;
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

/// The elements of `T` a buffer argument's extent holds: argument `i`'s extent (bytes) from a
/// typed launch; `InvalidArgument` when the launch gave none (a raw or C launch of a typed host
/// kernel, whose buffer lengths are unknown).
fn view_len<T>(args: &KernelArgs<'_>, i: usize) -> ordo_core::Result<usize> {
    match args.extents().and_then(|e| e.get(i)) {
        Some(&bytes) => Ok(bytes.checked_div(core::mem::size_of::<T>()).unwrap_or(0)),
        None => Err(ordo_core::Error::new(
            ordo_core::ErrorCode::InvalidArgument,
            "a typed host kernel's buffer parameter has no length: launch it with ordo's typed launch",
        )),
    }
}

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
    const SIZE: usize = core::mem::size_of::<u64>();
    const BUFFER: bool = true;
    unsafe fn read<'k>(args: &'k KernelArgs<'_>, i: usize) -> ordo_core::Result<In<'k, T>> {
        // SAFETY: the caller's contract: an address, and its extent, made by a checked launch.
        let addr = unsafe { args.read::<u64>(i) }?;
        let len = view_len::<T>(args, i)?;
        let ptr = core::ptr::with_exposed_provenance::<T>(addr as usize);
        Ok(In { ptr, len, _k: PhantomData })
    }
}

impl<T> sealed::Sealed for Out<'static, T> {}
impl<T: DeviceCopy> Param for Out<'static, T> {
    type View<'k> = Out<'k, T>;
    const SIZE: usize = core::mem::size_of::<u64>();
    const BUFFER: bool = true;
    unsafe fn read<'k>(args: &'k KernelArgs<'_>, i: usize) -> ordo_core::Result<Out<'k, T>> {
        // SAFETY: as for `In`.
        let addr = unsafe { args.read::<u64>(i) }?;
        let len = view_len::<T>(args, i)?;
        let ptr = core::ptr::with_exposed_provenance_mut::<T>(addr as usize);
        Ok(Out { ptr, len, _k: PhantomData })
    }
}

/// An argument's representation while a launch is made.
#[doc(hidden)]
#[derive(Debug)]
pub enum Repr {
    /// A plain value: its address and size.
    Value(*const core::ffi::c_void, usize),
    /// A buffer.
    View(ViewArg),
}

/// A buffer argument: its device, allocation, address and bytes, and whether its runtime
/// reference is current.
#[doc(hidden)]
#[derive(Debug)]
pub struct ViewArg {
    device: ordo_core::Device,
    allocation: Allocation,
    addr: u64,
    bytes: usize,
    current: bool,
}

impl ViewArg {
    fn of<T: DeviceCopy>(s: &DeviceSlice<'_, T>) -> Repr {
        Repr::View(ViewArg {
            device: s.device,
            allocation: s.allocation,
            addr: s.addr,
            bytes: s.len() * core::mem::size_of::<T>(),
            current: s.ctx.is_current(),
        })
    }
}

/// A launch argument that fits parameter type `P` of a typed kernel: the value itself for plain
/// parameters, `&DeviceBuffer<T>`, `&DeviceSlice<T>` or `&DeviceSliceMut<T>` for
/// [`In<T>`](In), and `&mut DeviceBuffer<T>` or `&mut DeviceSliceMut<T>` for [`Out<T>`](Out).
///
/// ```
/// use ordo::host::LaunchArg;
/// fn fits_in<A: LaunchArg<ordo::In<'static, f32>>>(_: A) {}
/// let ctx = ordo::Context::new()?;
/// let buf = ordo::DeviceBuffer::<f32>::zeroed(&ctx.device(0)?, 2)?;
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
        ViewArg::of(&self.as_slice())
    }
}
impl<T: DeviceCopy> LaunchArg<In<'static, T>> for &DeviceSlice<'_, T> {
    fn repr(&self) -> Repr {
        ViewArg::of(self)
    }
}
impl<T: DeviceCopy> LaunchArg<In<'static, T>> for &DeviceSliceMut<'_, T> {
    fn repr(&self) -> Repr {
        ViewArg::of(&self.inner)
    }
}
impl<T: DeviceCopy> LaunchArg<Out<'static, T>> for &mut DeviceBuffer<'_, T> {
    fn repr(&self) -> Repr {
        ViewArg::of(&self.as_slice())
    }
}
impl<T: DeviceCopy> LaunchArg<Out<'static, T>> for &mut DeviceSliceMut<'_, T> {
    fn repr(&self) -> Repr {
        ViewArg::of(&self.inner)
    }
}

/// A typed kernel's parameter list (a tuple of [`Param`]s), and the launch argument tuples that
/// fit it.
///
/// ```
/// use ordo::host::Params;
/// assert_eq!(<(u32, f64, ordo::Out<'static, u8>) as Params>::SIZES, &[4, 8, 8]);
/// ```
pub trait Params: sealed::Sealed {
    /// The parameters' sizes, in order (what `kernel_param_layout` reports).
    const SIZES: &'static [usize];
    /// Whether any parameter is a buffer (`HostKernel::extents_required` of a kernel
    /// `host_kernel!` makes with this list).
    const BUFFERS: bool;
}

/// A tuple of launch arguments fitting the parameter list `P`.
///
/// ```
/// use ordo::host::LaunchArgs;
/// fn fits<A: LaunchArgs<(f32, ordo::Out<'static, f32>)>>(_: A) {}
/// let ctx = ordo::Context::new()?;
/// let mut y = ordo::DeviceBuffer::<f32>::zeroed(&ctx.device(0)?, 2)?;
/// fits((2.0f32, &mut y));
/// # Ok::<(), ordo::Error>(())
/// ```
pub trait LaunchArgs<P: Params> {
    /// Calls `f` with the arguments' pointers, sizes and extents, and the buffers' owned ranges
    /// (laid out on the stack here), after checking each buffer's device against `device` and
    /// that its runtime reference is current.
    #[doc(hidden)]
    fn with_args<R>(
        &self,
        device: ordo_core::Device,
        f: impl FnOnce(&KernelArgs<'_>, &[Owned]) -> Result<R>,
    ) -> Result<R>;
}

/// A buffer argument's range: its allocation, address and bytes.
#[doc(hidden)]
pub type Owned = (Allocation, u64, usize);

macro_rules! tuples {
    ($n:literal; $($p:ident $a:ident $i:tt),*) => {
        impl<$($p: Param),*> sealed::Sealed for ($($p,)*) {}
        impl<$($p: Param),*> Params for ($($p,)*) {
            const SIZES: &'static [usize] = &[$($p::SIZE),*];
            const BUFFERS: bool = false $(|| $p::BUFFER)*;
        }
        impl<$($p: Param, $a: LaunchArg<$p>),*> LaunchArgs<($($p,)*)> for ($($a,)*) {
            #[allow(unused_variables, unused_mut, clippy::zero_repeat_side_effects)] // the empty tuple
            #[inline]
            fn with_args<R>(&self, device: ordo_core::Device, f: impl FnOnce(&KernelArgs<'_>, &[Owned]) -> Result<R>) -> Result<R> {
                let mut addrs = [0u64; $n];
                let mut sizes = [0usize; $n];
                let mut extents = [0usize; $n];
                let mut ptrs = [core::ptr::null_mut::<core::ffi::c_void>(); $n];
                let mut owned: [Owned; $n] = [(Allocation::NULL, 0, 0); $n];
                let mut count = 0;
                $(
                    match self.$i.repr() {
                        Repr::Value(p, s) => { ptrs[$i] = p.cast_mut(); sizes[$i] = s; }
                        Repr::View(v) => {
                            if !v.current {
                                return Err(crate::context::stale());
                            }
                            if v.device != device {
                                return Err(Error::ArgumentDevice { index: $i });
                            }
                            addrs[$i] = v.addr;
                            sizes[$i] = core::mem::size_of::<u64>();
                            extents[$i] = v.bytes;
                            owned[count] = (v.allocation, v.addr, v.bytes);
                            count += 1;
                        }
                    }
                )*
                $( if ptrs[$i].is_null() { ptrs[$i] = (&mut addrs[$i] as *mut u64).cast(); } )*
                // SAFETY: one size per pointer, none null (each points at a value or an address
                // above); the extents are the buffers' own lengths, live for the launch (checked
                // in the launch's runtime call, `Runtime::launch_owned`).
                let args = unsafe { KernelArgs::new_unchecked(&ptrs, &sizes).with_extents(&extents) }?;
                f(&args, &owned[..count])
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

/// A typed kernel: its parameter list `P` and its host implementation, the entry for a
/// `HostProgram` (made by [`host_kernel!`](crate::host_kernel)).
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

/// Defines a typed kernel's signature and its host implementation: `host_kernel! { pub const
/// NAME = fn name(t, a: f32, x: In<f32>, y: Out<f32>, n: u32) { body } }` makes `NAME`, a
/// [`TypedHostKernel`] to list in a `HostProgram` (`kernels: &[NAME.kernel]`) and to look up
/// with [`Module::kernel`](crate::Module::kernel) on every device: on the host device it runs `body`, on a GPU the
/// module's kernel of the same name and parameters (`saxpy(float a, const float* x, float* y,
/// unsigned n)` here). The body runs once per thread; `t` is the thread's `HostThread` (grid
/// position). Parameters are plain values (`u8`..`u64`, `i8`..`i64`, `f32`, `f64`, `usize`,
/// `isize`), [`In<T>`](In) and [`Out<T>`](Out) (a device address on the GPU, a bounds-checked
/// view here); up to eight.
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
                args: &$crate::raw::KernelArgs<'_>,
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
                extents_required: <($($crate::__host_param!($ty),)*) as $crate::host::Params>::BUFFERS,
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
