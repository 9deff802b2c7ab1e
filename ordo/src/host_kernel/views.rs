//! The buffer views a typed host kernel receives: [`In`] (read) and [`Out`] (read and write),
//! bounds-checked. Made by `Param::read` (in `mod.rs`) from a checked launch's arguments.

use core::marker::PhantomData;

use crate::buffer::DeviceCopy;

/// A read-only buffer parameter of a typed host kernel (the launch passes `&DeviceBuffer<T>` or
/// `&DeviceSlice<T>`); inside the kernel, a bounds-checked view of its elements.
///
/// ```
/// ordo::host_kernel! {
///     /// out[0] = the sum of x.
///     pub const SUM = fn sum(t, x: ordo::In<u32>, out: ordo::Out<u32>) {
///         let total = (0..x.len()).filter_map(|i| x.get(i)).sum();
///         out.set(0, total);
///     }
/// }
/// static PROGRAM: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.in", kernels: &[SUM.kernel] };
/// let ctx = ordo::Context::new()?;
/// let host = ctx.device(0)?;
/// let module = ordo::Module::load_host(&host, &PROGRAM)?;
/// let sum = module.kernel(&SUM)?;
/// let x = ordo::DeviceBuffer::from_slice(&host, &[1u32, 2, 3])?;
/// let mut out = ordo::DeviceBuffer::<u32>::zeroed(&host, 1)?;
/// host.queue()?.launch_host(&sum, ordo::LaunchDims::linear(1, 1), (&x, &mut out))?;
/// assert_eq!(out.to_vec()?, [6]);
/// # Ok::<(), ordo::Error>(())
/// ```
pub struct In<'k, T> {
    pub(super) ptr: *const T,
    pub(super) len: usize,
    pub(super) _k: PhantomData<&'k [T]>,
}

impl<T> core::fmt::Debug for In<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "In<{}>({} at {:p})", core::any::type_name::<T>(), self.len, self.ptr)
    }
}

/// A read-write buffer parameter of a typed host kernel (the launch passes
/// `&mut DeviceBuffer<T>`); inside the kernel, a bounds-checked view of its elements.
///
/// A view lives only as long as the kernel's run, on the thread that runs it: it cannot be sent
/// to another thread (nor kept past the launch, its lifetime being the launch's).
///
/// ```
/// ordo::host_kernel! {
///     /// Reverses v in place (one thread).
///     pub const REVERSE = fn reverse(t, v: ordo::Out<i8>) {
///         let n = v.len();
///         for i in 0..n / 2 {
///             let (a, b) = (v.get(i).unwrap(), v.get(n - 1 - i).unwrap());
///             v.set(i, b);
///             v.set(n - 1 - i, a);
///         }
///     }
/// }
/// # static PROGRAM: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.out", kernels: &[REVERSE.kernel] };
/// # let ctx = ordo::Context::new()?;
/// # let host = ctx.device(0)?;
/// # let module = ordo::Module::load_host(&host, &PROGRAM)?;
/// # let f = module.kernel(&REVERSE)?;
/// # let mut v = ordo::DeviceBuffer::from_slice(&host, &[1i8, 2, 3])?;
/// # host.queue()?.launch_host(&f, ordo::LaunchDims::linear(1, 1), (&mut v,))?;
/// # assert_eq!(v.to_vec()?, [3, 2, 1]);
/// # Ok::<(), ordo::Error>(())
/// ```
///
/// ```compile_fail,E0277
/// ordo::host_kernel! {
///     pub const LEAK = fn leak(t, v: ordo::Out<f32>) {
///         std::thread::scope(|s| { s.spawn(move || v.len()); });
///     }
/// }
/// ```
pub struct Out<'k, T> {
    pub(super) ptr: *mut T,
    pub(super) len: usize,
    pub(super) _k: PhantomData<&'k mut [T]>,
}

impl<T> core::fmt::Debug for Out<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Out<{}>({} at {:p})", core::any::type_name::<T>(), self.len, self.ptr)
    }
}

impl<T: DeviceCopy> In<'_, T> {
    /// Elements in the buffer.
    ///
    /// ```
    /// ordo::host_kernel! { pub const K = fn k(t, x: ordo::In<u8>, out: ordo::Out<u32>) { out.set(0, x.len() as u32); } }
    /// # static PROGRAM: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.in.len", kernels: &[K.kernel] };
    /// # let ctx = ordo::Context::new()?;
    /// # let host = ctx.device(0)?;
    /// # let module = ordo::Module::load_host(&host, &PROGRAM)?;
    /// # let f = module.kernel(&K)?;
    /// # let x = ordo::DeviceBuffer::from_slice(&host, &[1u8, 2, 3])?;
    /// # let mut v = ordo::DeviceBuffer::from_slice(&host, &[0u32])?;
    /// # host.queue()?.launch_host(&f, ordo::LaunchDims::linear(1, 1), (&x, &mut v))?;
    /// # assert_eq!(v.to_vec()?, [3]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the buffer has no elements.
    ///
    /// ```
    /// ordo::host_kernel! { pub const K = fn k(t, x: ordo::In<u8>, out: ordo::Out<u32>) { out.set(0, u32::from(x.is_empty())); } }
    /// # static PROGRAM: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.in.is_empty", kernels: &[K.kernel] };
    /// # let ctx = ordo::Context::new()?;
    /// # let host = ctx.device(0)?;
    /// # let module = ordo::Module::load_host(&host, &PROGRAM)?;
    /// # let f = module.kernel(&K)?;
    /// # let x = ordo::DeviceBuffer::from_slice(&host, &[1u8])?;
    /// # let mut v = ordo::DeviceBuffer::from_slice(&host, &[7u32])?;
    /// # host.queue()?.launch_host(&f, ordo::LaunchDims::linear(1, 1), (&x, &mut v))?;
    /// # assert_eq!(v.to_vec()?, [0]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Element `i`, or `None` past the end.
    ///
    /// ```
    /// ordo::host_kernel! { pub const K = fn k(t, x: ordo::In<u32>, out: ordo::Out<u32>) { out.set(0, x.get(1).unwrap_or(0) + x.get(9).unwrap_or(100)); } }
    /// # static PROGRAM: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.in.get", kernels: &[K.kernel] };
    /// # let ctx = ordo::Context::new()?;
    /// # let host = ctx.device(0)?;
    /// # let module = ordo::Module::load_host(&host, &PROGRAM)?;
    /// # let f = module.kernel(&K)?;
    /// # let x = ordo::DeviceBuffer::from_slice(&host, &[10u32, 20])?;
    /// # let mut v = ordo::DeviceBuffer::from_slice(&host, &[0u32])?;
    /// # host.queue()?.launch_host(&f, ordo::LaunchDims::linear(1, 1), (&x, &mut v))?;
    /// # assert_eq!(v.to_vec()?, [120]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn get(&self, i: usize) -> Option<T> {
        // SAFETY: `i < len`, and the view names `len` live elements of host-device memory that
        // the launch borrowed for the kernel's run (see `Param::read`).
        (i < self.len).then(|| unsafe { self.ptr.add(i).read_unaligned() })
    }
}

impl<T: DeviceCopy> Out<'_, T> {
    /// Elements in the buffer.
    ///
    /// ```
    /// ordo::host_kernel! { pub const K = fn k(t, v: ordo::Out<u32>) { let n = v.len() as u32; v.set(0, n); } }
    /// # static PROGRAM: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.out.len", kernels: &[K.kernel] };
    /// # let ctx = ordo::Context::new()?;
    /// # let host = ctx.device(0)?;
    /// # let module = ordo::Module::load_host(&host, &PROGRAM)?;
    /// # let f = module.kernel(&K)?;
    /// # let mut v = ordo::DeviceBuffer::from_slice(&host, &[0u32, 0])?;
    /// # host.queue()?.launch_host(&f, ordo::LaunchDims::linear(1, 1), (&mut v,))?;
    /// # assert_eq!(v.to_vec()?, [2, 0]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the buffer has no elements.
    ///
    /// ```
    /// ordo::host_kernel! { pub const K = fn k(t, v: ordo::Out<u32>) { let e = u32::from(v.is_empty()); v.set(0, e + 5); } }
    /// # static PROGRAM: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.out.is_empty", kernels: &[K.kernel] };
    /// # let ctx = ordo::Context::new()?;
    /// # let host = ctx.device(0)?;
    /// # let module = ordo::Module::load_host(&host, &PROGRAM)?;
    /// # let f = module.kernel(&K)?;
    /// # let mut v = ordo::DeviceBuffer::from_slice(&host, &[0u32])?;
    /// # host.queue()?.launch_host(&f, ordo::LaunchDims::linear(1, 1), (&mut v,))?;
    /// # assert_eq!(v.to_vec()?, [5]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Element `i`, or `None` past the end.
    ///
    /// ```
    /// ordo::host_kernel! { pub const K = fn k(t, v: ordo::Out<u32>) { let x = v.get(0).unwrap() * 3; v.set(0, x); assert!(v.get(1).is_none()); } }
    /// # static PROGRAM: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.out.get", kernels: &[K.kernel] };
    /// # let ctx = ordo::Context::new()?;
    /// # let host = ctx.device(0)?;
    /// # let module = ordo::Module::load_host(&host, &PROGRAM)?;
    /// # let f = module.kernel(&K)?;
    /// # let mut v = ordo::DeviceBuffer::from_slice(&host, &[4u32])?;
    /// # host.queue()?.launch_host(&f, ordo::LaunchDims::linear(1, 1), (&mut v,))?;
    /// # assert_eq!(v.to_vec()?, [12]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn get(&self, i: usize) -> Option<T> {
        // SAFETY: as `In::get`.
        (i < self.len).then(|| unsafe { self.ptr.add(i).read_unaligned() })
    }
    /// Writes element `i`; `false` (and nothing written) past the end.
    ///
    /// ```
    /// ordo::host_kernel! { pub const K = fn k(t, v: ordo::Out<u32>) { let ok = v.set(0, 9); let past = v.set(1, 9); v.set(0, u32::from(ok) * 10 + u32::from(past)); } }
    /// # static PROGRAM: ordo::host::HostProgram = ordo::host::HostProgram { name: "docs.out.set", kernels: &[K.kernel] };
    /// # let ctx = ordo::Context::new()?;
    /// # let host = ctx.device(0)?;
    /// # let module = ordo::Module::load_host(&host, &PROGRAM)?;
    /// # let f = module.kernel(&K)?;
    /// # let mut v = ordo::DeviceBuffer::from_slice(&host, &[0u32])?;
    /// # host.queue()?.launch_host(&f, ordo::LaunchDims::linear(1, 1), (&mut v,))?;
    /// # assert_eq!(v.to_vec()?, [10]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn set(&mut self, i: usize, value: T) -> bool {
        if i >= self.len {
            return false;
        }
        // SAFETY: `i < len`; the launch borrowed the buffer mutably for the kernel's run, and the
        // host device runs a grid's threads one at a time.
        unsafe { self.ptr.add(i).write_unaligned(value) };
        true
    }
}
