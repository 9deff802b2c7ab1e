//! [`HostBuffer`]: host memory page-locked for a device, so that a queue's copies to and from it
//! run asynchronously at the link's full speed (CUDA: `cuMemHostRegister`), while the memory
//! stays the program's own.

use core::ops::{Deref, DerefMut};

use ordo_core::{DevicePtr, ErrorCode};

use crate::buffer::DeviceCopy;
use crate::context::Device;
use crate::error::{Error, Result};

/// `len` values of `T` in host memory registered with a device: page-locked and mapped where
/// the platform does that (CUDA), named as is on the host device. It dereferences to `[T]`; a
/// [`Scope`](crate::Scope)'s asynchronous copies borrow it for the whole scope, so it cannot be
/// touched or dropped while a copy runs:
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let dev = ctx.default_device()?;
/// let mut staging = ordo::HostBuffer::from_slice(&dev, &[1.0f32, 2.0, 3.0])?;
/// let mut buf = ordo::DeviceBuffer::<f32>::zeroed(&dev, 3)?;
/// dev.queue()?.scope(|s| {
///     s.copy_to_device(&staging, &mut buf.as_mut_slice())?; // asynchronous
///     Ok(())
/// })?;
/// staging.fill(0.0);
/// dev.queue()?.scope(|s| s.copy_from_device(&buf.as_slice(), &mut staging))?;
/// assert_eq!(&staging[..], [1.0, 2.0, 3.0]);
/// # Ok::<(), ordo::Error>(())
/// ```
///
/// ```compile_fail,E0502
/// let ctx = ordo::Context::new().unwrap();
/// let dev = ctx.default_device().unwrap();
/// let mut staging = ordo::HostBuffer::<f32>::zeroed(&dev, 3).unwrap();
/// let buf = ordo::DeviceBuffer::<f32>::zeroed(&dev, 3).unwrap();
/// dev.queue().unwrap().scope(|s| {
///     s.copy_from_device(&buf.as_slice(), &mut staging)?;
///     let _ = staging[0]; // error: borrowed by the copy until the scope has waited
///     Ok(())
/// }).unwrap();
/// ```
///
/// The memory is the buffer's own (the process heap), registered: a runtime torn down under it
/// takes the registration away, never the memory. `Send` and `Sync` when `T` is.
pub struct HostBuffer<'r, T: DeviceCopy> {
    device: Device<'r>,
    values: std::boxed::Box<[T]>,
    /// Whether the registration succeeded (the device's platform pins host memory).
    registered: bool,
}

impl<T: DeviceCopy> core::fmt::Debug for HostBuffer<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "HostBuffer<{}>({} for {:?}, {})",
            core::any::type_name::<T>(),
            self.values.len(),
            self.device,
            if self.registered { "page-locked" } else { "not registered" }
        )
    }
}

impl<'r, T: DeviceCopy> HostBuffer<'r, T> {
    /// `len` zeroed values registered with `device`. `InvalidSize` for 0 or a size that
    /// overflows; the registration's errors (`OutOfResources` when the driver cannot pin more).
    /// A platform that cannot register host memory (`Unsupported`) gets plain host memory,
    /// which copies still accept ([`is_page_locked`](Self::is_page_locked) says which).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let staging = ordo::HostBuffer::<u64>::zeroed(&ctx.default_device()?, 1024)?;
    /// assert!(staging.iter().all(|&v| v == 0));
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn zeroed(device: &Device<'r>, len: usize) -> Result<Self> {
        Self::new(device, std::vec![T::zeroed(); len].into_boxed_slice())
    }

    /// A registered copy of `values`.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let staging = ordo::HostBuffer::from_slice(&ctx.default_device()?, &[1u8, 2])?;
    /// assert_eq!(&staging[..], [1, 2]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn from_slice(device: &Device<'r>, values: &[T]) -> Result<Self> {
        Self::new(device, values.into())
    }

    fn new(device: &Device<'r>, mut values: std::boxed::Box<[T]>) -> Result<Self> {
        let bytes = core::mem::size_of_val(&*values);
        if bytes == 0 {
            return Err(ordo_core::Error::new(ErrorCode::InvalidSize, "a host buffer holds at least one byte").into());
        }
        device.ctx.check_current()?;
        let ptr = values.as_mut_ptr().cast::<u8>();
        // SAFETY: `ptr` is valid for `bytes` bytes for as long as the registration lasts: the box
        // is never reallocated, and the drop unregisters before freeing it.
        let registered = match unsafe { device.rt().host_register(device.raw, ptr, bytes) } {
            Ok(_) => true,
            Err(e) if e.code == ErrorCode::Unsupported => false,
            Err(e) => return Err(Error::Runtime(e)),
        };
        Ok(Self { device: device.clone(), values, registered })
    }

    /// Whether the memory is registered with the device (page-locked where the platform pins).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// assert!(ordo::HostBuffer::<u8>::zeroed(&ctx.device(0)?, 8)?.is_page_locked());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn is_page_locked(&self) -> bool {
        self.registered && self.device.ctx.is_current()
    }

    /// The device the memory is registered with.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// assert_eq!(ordo::HostBuffer::<u8>::zeroed(&dev, 1)?.device(), &dev);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn device(&self) -> &Device<'r> {
        &self.device
    }
}

impl<T: DeviceCopy> Deref for HostBuffer<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.values
    }
}

impl<T: DeviceCopy> DerefMut for HostBuffer<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.values
    }
}

impl<T: DeviceCopy> Drop for HostBuffer<'_, T> {
    fn drop(&mut self) {
        // Unregistered in the registration's own epoch only (after a teardown under it there is
        // nothing left to unregister); the memory is freed after, with the box.
        if self.registered && self.device.ctx.is_current() {
            let _ = self.device.rt().host_unregister(DevicePtr(self.values.as_ptr() as u64));
        }
    }
}
