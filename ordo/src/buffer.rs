//! Device memory: [`DeviceBuffer`] (owns an allocation, frees it on drop, by its identity); its
//! borrowed sub-ranges [`DeviceSlice`] / [`DeviceSliceMut`] are in `slice.rs`. Element types are
//! [`DeviceCopy`]: plain data, any bit pattern valid, no padding (bytemuck's `Pod`, derivable).

use core::marker::PhantomData;
use core::ops::RangeBounds;

use ordo_core::{Allocation, DevicePtr, FillValue, MemKind, Queue as RawQueue};

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
/// The buffer names its allocation by identity (`ordo_core::Allocation`), not by address: its
/// copies, fills and slices are checked against that allocation in the same runtime call, and a
/// launch refuses it once its runtime reference is gone, so a buffer from before a re-init
/// (see [`Context`](crate::Context)) gets `InvalidHandle` from every method and never reaches a
/// newer allocation that got its address; its drop is then a no-op. It holds its own runtime
/// reference, so it can be kept anywhere (a struct beside its context, another thread) and
/// never outlives the runtime. It is `Send` and `Sync` when `T` is.
///
/// Use after free and double free do not compile (`drop` takes the buffer by value):
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
///
/// Nor does dropping a buffer while a slice of it is in use:
///
/// ```compile_fail,E0505
/// let ctx = ordo::Context::new().unwrap();
/// let buf = ordo::DeviceBuffer::<f32>::zeroed(&ctx.default_device().unwrap(), 4).unwrap();
/// let part = buf.slice(1..).unwrap();
/// drop(buf); // error: cannot move out of `buf` because it is borrowed
/// let _ = part.to_vec();
/// ```
pub struct DeviceBuffer<'r, T: DeviceCopy> {
    device: Device<'r>,
    allocation: Allocation,
    /// The base address; launch arguments point at this field.
    pub(crate) addr: u64,
    len: usize,
    /// The queue a queue-ordered buffer (`zeroed_on`) is freed on when dropped.
    ordered: Option<RawQueue>,
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

impl<'r, T: DeviceCopy> DeviceBuffer<'r, T> {
    /// An uninitialised-by-the-caller buffer: allocated, then zeroed.
    fn alloc(device: &Device<'r>, kind: MemKind, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        device.ctx.check_current()?;
        let (allocation, ptr) = device.rt().mem_allocate(device.raw, kind, bytes)?;
        Ok(Self { device: device.clone(), allocation, addr: ptr.0, len, ordered: None, _values: PhantomData })
    }

    /// `len` zeroed values of device memory allocated and zeroed in `queue`'s order (kind
    /// `Ordered`: CUDA `cuMemAllocAsync` from the device's memory pool and `cuMemsetD8Async`,
    /// about a microsecond with the pool warm instead of `cuMemAlloc`'s tens; the host device
    /// and AMDGPU allocate at once). Dropped, it is freed in the same queue's order
    /// (`cuMemFreeAsync`): the queue's earlier work may still use it. Work of other queues
    /// that uses it (an `unsafe` launch) must be ordered before the drop with an event; every
    /// safe operation has finished with the buffer before its borrow ends. When the queue is
    /// gone by then, the buffer is freed like any other. Otherwise it is a buffer like any
    /// other; `InvalidSize` for 0 or a size that overflows.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let queue = ctx.default_device()?.queue()?;
    /// let buf = ordo::DeviceBuffer::<f32>::zeroed_on(&queue, 1024)?;
    /// assert!(buf.to_vec()?.iter().all(|&v| v == 0.0));
    /// drop(buf); // freed in the queue's order
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn zeroed_on(queue: &crate::Queue<'r>, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        let device = &queue.device;
        device.ctx.check_current()?;
        let rt = device.rt();
        let (allocation, ptr) = rt.mem_alloc_on(queue.raw, bytes)?;
        let buf = Self {
            device: device.clone(),
            allocation,
            addr: ptr.0,
            len,
            ordered: Some(queue.raw),
            _values: PhantomData,
        };
        rt.fill_owned(allocation, ptr, FillValue::U8(0), bytes, Some(queue.raw))?;
        Ok(buf)
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
    pub fn zeroed(device: &Device<'r>, len: usize) -> Result<Self> {
        Self::zeroed_in(device, MemKind::Device, len)
    }

    /// `len` zeroed values of managed (unified) memory on `device`: one address the device's
    /// kernels and the host share, migrated by the driver (CUDA `cuMemAllocManaged`; on the host
    /// device it is host memory like any other). `Unsupported` on a platform without managed
    /// memory (the device's `Capabilities::MANAGED_MEMORY`, e.g. AMDGPU). The buffer's methods
    /// are the same as for device memory.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let host = ctx.device(0)?;
    /// let mut m = ordo::DeviceBuffer::<u32>::managed(&host, 3)?;
    /// m.copy_from(&[1, 2, 3])?;
    /// assert_eq!(m.to_vec()?, [1, 2, 3]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn managed(device: &Device<'r>, len: usize) -> Result<Self> {
        Self::zeroed_in(device, MemKind::Managed, len)
    }

    fn zeroed_in(device: &Device<'r>, kind: MemKind, len: usize) -> Result<Self> {
        let buf = Self::alloc(device, kind, len)?;
        let bytes = len * core::mem::size_of::<T>();
        buf.device.rt().fill_owned(buf.allocation, DevicePtr(buf.addr), FillValue::U8(0), bytes, None)?;
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
    pub fn from_slice(device: &Device<'r>, values: &[T]) -> Result<Self> {
        let mut buf = Self::alloc(device, MemKind::Device, values.len())?;
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
    /// assert_eq!(ordo::DeviceBuffer::<u8>::zeroed(&dev, 1)?.device(), &dev);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn device(&self) -> &Device<'r> {
        &self.device
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

    /// The allocation's identity (the buffer still owns it).
    #[cfg(feature = "std")]
    pub(crate) fn allocation(&self) -> Allocation {
        self.allocation
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
        let mut this = core::mem::ManuallyDrop::new(self);
        let out = (this.allocation, DevicePtr(this.addr));
        // SAFETY: the device is dropped once, here (the buffer's own drop never runs); its
        // runtime reference is given back as the buffer's drop would.
        unsafe { core::ptr::drop_in_place(&mut this.device) };
        out
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
            ctx: &self.device.ctx,
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
        // handle) there is nothing of this buffer left to free, and nothing else is freed. A
        // queue-ordered buffer goes in its queue's order, or, with the queue gone, at once.
        let rt = self.device.rt();
        if let Some(queue) = self.ordered
            && rt.mem_release_on(queue, self.allocation).is_ok()
        {
            return;
        }
        let _ = rt.mem_release(self.allocation);
    }
}
