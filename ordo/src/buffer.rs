//! Device memory: [`DeviceBuffer`] (owns an allocation, frees it on drop, by its identity); its
//! borrowed sub-ranges [`DeviceSlice`] / [`DeviceSliceMut`] are in `slice.rs`. Element types are [`DeviceCopy`]:
//! plain data, any bit pattern valid, no padding (bytemuck's `Pod`, derivable). Depends on
//! `context` and `error`.

use core::marker::PhantomData;
use core::ops::RangeBounds;

use ordo_core::{Allocation, DevicePtr, FillValue, MemKind, Runtime};

use crate::context::Device;
use crate::error::{Error, Result};
pub use crate::slice::{DeviceSlice, DeviceSliceMut};

/// Types whose values may be copied to and from a device byte for byte: plain data with no
/// padding and no invalid bit patterns. Every [`bytemuck::Pod`] type is one; derive it with
/// `#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]` on a `#[repr(C)]` struct.
///
/// ```
/// #[repr(C)]
/// #[derive(Clone, Copy, Debug, PartialEq, ordo::bytemuck::Pod, ordo::bytemuck::Zeroable)]
/// struct Particle { x: f32, y: f32, mass: f32 }
///
/// let ctx = ordo::Context::new()?;
/// let dev = ctx.default_device()?;
/// let p = [Particle { x: 1.0, y: 2.0, mass: 3.0 }];
/// let buf = ordo::DeviceBuffer::from_slice(&dev, &p)?;
/// assert_eq!(buf.to_vec()?, p);
/// # Ok::<(), ordo::Error>(())
/// ```
pub trait DeviceCopy: bytemuck::Pod {}

impl<T: bytemuck::Pod> DeviceCopy for T {}

/// Device memory holding `len` values of `T`, allocated on one device and freed when dropped.
///
/// The buffer names its allocation by identity (`ordo_core::Allocation`), not by address: a drop
/// after the runtime's final shutdown, or after a re-init, is a no-op (never a double free of a
/// newer allocation that got the same address), and never panics; its copies and fills, and its
/// slices', are `InvalidHandle` then and never reach that newer allocation. (Launch arguments
/// still pass its address.) It borrows its context, so it
/// cannot outlive it:
///
/// ```compile_fail,E0597
/// let buf = {
///     let ctx = ordo::Context::new().unwrap();
///     ordo::DeviceBuffer::<f32>::zeroed(&ctx.default_device().unwrap(), 4).unwrap()
/// }; // error: `ctx` does not live long enough
/// ```
///
/// Use after free and double free do not compile either (`drop` takes the buffer by value):
///
/// ```compile_fail,E0382
/// let ctx = ordo::Context::new().unwrap();
/// let buf = ordo::DeviceBuffer::<f32>::zeroed(&ctx.default_device().unwrap(), 4).unwrap();
/// drop(buf);
/// let _ = buf.to_vec(); // error: use of moved value
/// ```
///
/// ```compile_fail,E0382
/// let ctx = ordo::Context::new().unwrap();
/// let buf = ordo::DeviceBuffer::<f32>::zeroed(&ctx.default_device().unwrap(), 4).unwrap();
/// drop(buf);
/// drop(buf); // error: use of moved value
/// ```
pub struct DeviceBuffer<'c, T: DeviceCopy> {
    rt: &'c Runtime,
    device: Device<'c>,
    allocation: Allocation,
    /// The base address; launch arguments point at this field.
    pub(crate) addr: u64,
    len: usize,
    _values: PhantomData<T>,
}

impl<T: DeviceCopy> core::fmt::Debug for DeviceBuffer<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "DeviceBuffer<{}>({} x {:?} at {:#x})", core::any::type_name::<T>(), self.len, self.device, self.addr)
    }
}

/// Bytes of `len` values of `T`, or `InvalidSize` when that overflows.
fn byte_len<T>(len: usize) -> Result<usize> {
    len.checked_mul(core::mem::size_of::<T>())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or(Error::Runtime(ordo_core::Error::new(ordo_core::ErrorCode::InvalidSize, "buffer size overflows")))
}

impl<'c, T: DeviceCopy> DeviceBuffer<'c, T> {
    /// An uninitialised-by-the-caller buffer: allocated, then zeroed.
    fn alloc(device: &Device<'c>, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        let (allocation, ptr) = device.rt.mem_allocate(device.raw, MemKind::Device, bytes)?;
        Ok(Self { rt: device.rt, device: *device, allocation, addr: ptr.0, len, _values: PhantomData })
    }

    /// `len` zeroed values on `device`. `InvalidSize` for 0 (a zero-byte allocation is an error
    /// in ordo) or a size that overflows.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::<u64>::zeroed(&ctx.default_device()?, 1000)?;
    /// assert!(buf.to_vec()?.iter().all(|&v| v == 0));
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn zeroed(device: &Device<'c>, len: usize) -> Result<Self> {
        let buf = Self::alloc(device, len)?;
        let bytes = len * core::mem::size_of::<T>();
        buf.rt.fill_owned(buf.allocation, DevicePtr(buf.addr), FillValue::U8(0), bytes, None)?;
        Ok(buf)
    }

    /// A buffer on `device` holding a copy of `values`.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::from_slice(&ctx.default_device()?, &[1i32, -2, 3])?;
    /// assert_eq!(buf.to_vec()?, [1, -2, 3]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn from_slice(device: &Device<'c>, values: &[T]) -> Result<Self> {
        let mut buf = Self::alloc(device, values.len())?;
        buf.copy_from(values)?;
        Ok(buf)
    }

    /// Elements in the buffer.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// assert_eq!(ordo::DeviceBuffer::<u8>::zeroed(&ctx.default_device()?, 7)?.len(), 7);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: a buffer holds at least one element.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// assert!(!ordo::DeviceBuffer::<u8>::zeroed(&ctx.default_device()?, 1)?.is_empty());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device the buffer lives on.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// assert_eq!(ordo::DeviceBuffer::<u8>::zeroed(&dev, 1)?.device(), dev);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn device(&self) -> Device<'c> {
        self.device
    }

    /// The device address of the first element (for the raw API and the C ABI).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::<u8>::zeroed(&ctx.default_device()?, 16)?;
    /// let (base, size, ..) = ctx.runtime().mem_info(buf.device_ptr())?;
    /// assert_eq!((base, size), (buf.device_ptr(), 16));
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn device_ptr(&self) -> DevicePtr {
        DevicePtr(self.addr)
    }

    /// Gives the allocation to the runtime instead of freeing it on drop: it is then released by
    /// `Runtime::mem_release` (or `ordo_mem_release` in C), or by the runtime's final shutdown in
    /// teardown order. For handing memory to code that uses the raw API or the C ABI.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::<u32>::zeroed(&ctx.default_device()?, 4)?;
    /// let (allocation, ptr) = buf.into_raw();
    /// assert_eq!(ctx.runtime().allocation_info(allocation)?.0, ptr);
    /// ctx.runtime().mem_release(allocation)?;
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn into_raw(self) -> (Allocation, DevicePtr) {
        let this = core::mem::ManuallyDrop::new(self);
        (this.allocation, DevicePtr(this.addr))
    }

    /// Copies `values` into the buffer (same length); returns when the copy is complete.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let mut buf = ordo::DeviceBuffer::<f32>::zeroed(&ctx.default_device()?, 2)?;
    /// buf.copy_from(&[0.5, 1.5])?;
    /// assert_eq!(buf.copy_from(&[1.0]).unwrap_err().code(), ordo::ErrorCode::InvalidSize);
    /// assert_eq!(buf.to_vec()?, [0.5, 1.5], "a refused copy changes nothing");
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn copy_from(&mut self, values: &[T]) -> Result<()> {
        self.as_mut_slice().copy_from(values)
    }

    /// Copies the buffer into `out` (same length); returns when the copy is complete.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::from_slice(&ctx.default_device()?, &[4u16, 5])?;
    /// let mut out = [0u16; 2];
    /// buf.copy_to(&mut out)?;
    /// assert_eq!(out, [4, 5]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn copy_to(&self, out: &mut [T]) -> Result<()> {
        self.as_slice().copy_to(out)
    }

    /// Copies `src` (same length, on the same device) into the buffer; returns when the copy is
    /// complete (see [`DeviceSliceMut::copy_from_device`]).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let a = ordo::DeviceBuffer::from_slice(&dev, &[5i16, 6])?;
    /// let mut b = ordo::DeviceBuffer::<i16>::zeroed(&dev, 2)?;
    /// b.copy_from_device(&a)?;
    /// assert_eq!(b.to_vec()?, [5, 6]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn copy_from_device(&mut self, src: &DeviceBuffer<'_, T>) -> Result<()> {
        self.as_mut_slice().copy_from_device(&src.as_slice())
    }

    /// Writes `value` into every element; returns when it is done.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let mut buf = ordo::DeviceBuffer::<u8>::zeroed(&ctx.default_device()?, 3)?;
    /// buf.fill(7)?;
    /// assert_eq!(buf.to_vec()?, [7, 7, 7]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn fill(&mut self, value: T) -> Result<()> {
        self.as_mut_slice().fill(value)
    }

    /// The buffer's values in a new `Vec`.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::from_slice(&ctx.default_device()?, &[9u8; 3])?;
    /// assert_eq!(buf.to_vec()?, vec![9, 9, 9]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    pub fn to_vec(&self) -> Result<std::vec::Vec<T>> {
        self.as_slice().to_vec()
    }

    /// The whole buffer as a shared slice.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::from_slice(&ctx.default_device()?, &[1u8, 2])?;
    /// assert_eq!(buf.as_slice().len(), 2);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice {
            rt: self.rt,
            device: self.device.raw,
            allocation: self.allocation,
            addr: self.addr,
            len: self.len,
            _borrow: PhantomData,
        }
    }

    /// The whole buffer as a mutable slice.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let mut buf = ordo::DeviceBuffer::<u8>::zeroed(&ctx.default_device()?, 2)?;
    /// buf.as_mut_slice().copy_from(&[3, 4])?;
    /// assert_eq!(buf.to_vec()?, [3, 4]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn as_mut_slice(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut { inner: self.as_slice(), _borrow: PhantomData }
    }

    /// Elements `range` of the buffer, checked: [`Error::OutOfRange`] when it is reversed or runs
    /// past the end.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::from_slice(&ctx.default_device()?, &[0u32, 1, 2, 3])?;
    /// assert_eq!(buf.slice(1..3)?.to_vec()?, [1, 2]);
    /// assert_eq!(buf.slice(3..5).unwrap_err().code(), ordo::ErrorCode::InvalidSize);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>> {
        self.as_slice().sub(range)
    }

    /// Elements `range` of the buffer, mutable, checked as [`slice`](Self::slice).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let mut buf = ordo::DeviceBuffer::<u32>::zeroed(&ctx.default_device()?, 4)?;
    /// buf.slice_mut(2..)?.copy_from(&[7, 8])?;
    /// assert_eq!(buf.to_vec()?, [0, 0, 7, 8]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        let inner = self.as_mut_slice().inner.sub(range)?;
        Ok(DeviceSliceMut { inner, _borrow: PhantomData })
    }
}

impl<T: DeviceCopy> Drop for DeviceBuffer<'_, T> {
    fn drop(&mut self) {
        // Released by identity: after the final shutdown (Uninitialized) or a re-init (a stale
        // handle) there is nothing of this buffer left to free, and nothing else is freed.
        let _ = self.rt.mem_release(self.allocation);
    }
}
