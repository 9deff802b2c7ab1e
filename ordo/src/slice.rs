//! Borrowed views of device memory: [`DeviceSlice`] and [`DeviceSliceMut`], sub-ranges of a
//! [`DeviceBuffer`](crate::DeviceBuffer) that copy and fill by the buffer's identity (its
//! allocation handle, checked in the same runtime call as the copy).

use core::marker::PhantomData;
use core::ops::{Bound, RangeBounds};

use ordo_core::{Allocation, CopyKind, Device as RawDevice, DevicePtr, FillValue, Runtime};

use crate::context::Context;

use crate::buffer::DeviceCopy;
use crate::error::{Error, Result};

/// A shared view of `len` elements of a device buffer (or of a part of one).
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let buf = ordo::DeviceBuffer::from_slice(&ctx.default_device()?, &[1u16, 2, 3, 4])?;
/// let tail: ordo::DeviceSlice<'_, u16> = buf.slice(2..)?;
/// assert_eq!(tail.to_vec()?, [3, 4]);
/// # Ok::<(), ordo::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct DeviceSlice<'b, T: DeviceCopy> {
    /// The buffer's context (its runtime reference: launches check that it is current).
    pub(crate) ctx: &'b Context<'b>,
    pub(crate) device: RawDevice,
    /// The buffer's allocation: every copy checks it, so a view of a buffer from before a
    /// re-init never reaches a newer allocation at its address.
    pub(crate) allocation: Allocation,
    /// The first element's address; launch arguments point at this field.
    pub(crate) addr: u64,
    pub(crate) len: usize,
    pub(crate) _borrow: PhantomData<&'b [T]>,
}

impl<T: DeviceCopy> core::fmt::Debug for DeviceSlice<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "DeviceSlice<{}>({} at {:#x})", core::any::type_name::<T>(), self.len, self.addr)
    }
}

impl<'b, T: DeviceCopy> DeviceSlice<'b, T> {
    #[inline]
    pub(crate) fn rt(&self) -> &'b Runtime {
        self.ctx.runtime()
    }

    /// Elements in the view.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::<u8>::zeroed(&ctx.default_device()?, 8)?;
    /// assert_eq!(buf.slice(2..6)?.len(), 4);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view has no elements.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::<u8>::zeroed(&ctx.default_device()?, 8)?;
    /// assert!(buf.slice(3..3)?.is_empty());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the view's first element.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::<u32>::zeroed(&ctx.default_device()?, 8)?;
    /// assert_eq!(buf.slice(2..)?.device_ptr(), buf.device_ptr().offset(8));
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn device_ptr(&self) -> DevicePtr {
        DevicePtr(self.addr)
    }

    /// A checked sub-range of this view.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::from_slice(&ctx.default_device()?, &[0u8, 1, 2, 3])?;
    /// assert_eq!(buf.slice(1..)?.sub(1..2)?.to_vec()?, [2]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn sub(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'b, T>> {
        let start = match range.start_bound() {
            Bound::Included(&s) => Some(s),
            Bound::Excluded(&s) => s.checked_add(1),
            Bound::Unbounded => Some(0),
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e.checked_add(1),
            Bound::Excluded(&e) => Some(e),
            Bound::Unbounded => Some(self.len),
        };
        match (start, end) {
            (Some(start), Some(end)) if start <= end && end <= self.len => Ok(DeviceSlice {
                addr: self.addr + (start * core::mem::size_of::<T>()) as u64,
                len: end - start,
                ..*self
            }),
            (start, end) => Err(Error::OutOfRange {
                start: start.unwrap_or(usize::MAX),
                end: end.unwrap_or(usize::MAX),
                len: self.len,
            }),
        }
    }

    /// Copies the view into `out` (same length); returns when the copy is complete.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::from_slice(&ctx.default_device()?, &[1u8, 2, 3])?;
    /// let mut two = [0u8; 2];
    /// buf.slice(1..)?.copy_to(&mut two)?;
    /// assert_eq!(two, [2, 3]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn copy_to(&self, out: &mut [T]) -> Result<()> {
        if out.len() != self.len {
            return Err(Error::LengthMismatch { expected: self.len, actual: out.len() });
        }
        if self.len == 0 {
            return Ok(());
        }
        let out: &mut [u8] = bytemuck::cast_slice_mut(out);
        // SAFETY: `out` is valid for its length for the whole (synchronous) copy.
        Ok(unsafe {
            self.rt().memcpy_owned(
                self.allocation,
                CopyKind::DeviceToHost,
                out.as_mut_ptr() as u64,
                self.addr,
                out.len(),
                None,
            )
        }?)
    }

    /// The view's values in a new `Vec`.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let buf = ordo::DeviceBuffer::from_slice(&ctx.default_device()?, &[5u8, 6])?;
    /// assert_eq!(buf.as_slice().to_vec()?, [5, 6]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    pub fn to_vec(&self) -> Result<std::vec::Vec<T>> {
        let mut out = std::vec![T::zeroed(); self.len];
        self.copy_to(&mut out)?;
        Ok(out)
    }
}

/// A mutable view of `len` elements of a device buffer.
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let mut buf = ordo::DeviceBuffer::<u16>::zeroed(&ctx.default_device()?, 4)?;
/// let mut head: ordo::DeviceSliceMut<'_, u16> = buf.slice_mut(..2)?;
/// head.copy_from(&[7, 8])?;
/// assert_eq!(buf.to_vec()?, [7, 8, 0, 0]);
/// # Ok::<(), ordo::Error>(())
/// ```
pub struct DeviceSliceMut<'b, T: DeviceCopy> {
    pub(crate) inner: DeviceSlice<'b, T>,
    pub(crate) _borrow: PhantomData<&'b mut [T]>,
}

impl<T: DeviceCopy> core::fmt::Debug for DeviceSliceMut<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&self.inner, f)
    }
}

impl<'b, T: DeviceCopy> DeviceSliceMut<'b, T> {
    /// Elements in the view.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let mut buf = ordo::DeviceBuffer::<u8>::zeroed(&ctx.default_device()?, 8)?;
    /// assert_eq!(buf.slice_mut(..5)?.len(), 5);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.inner.len
    }

    /// Whether the view has no elements.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let mut buf = ordo::DeviceBuffer::<u8>::zeroed(&ctx.default_device()?, 8)?;
    /// assert!(!buf.slice_mut(..5)?.is_empty());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// Copies `values` into the view (same length); returns when the copy is complete.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let mut buf = ordo::DeviceBuffer::<u8>::zeroed(&ctx.default_device()?, 3)?;
    /// buf.slice_mut(1..)?.copy_from(&[1, 2])?;
    /// assert_eq!(buf.to_vec()?, [0, 1, 2]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn copy_from(&mut self, values: &[T]) -> Result<()> {
        let s = &self.inner;
        if values.len() != s.len {
            return Err(Error::LengthMismatch { expected: s.len, actual: values.len() });
        }
        if s.len == 0 {
            return Ok(());
        }
        let values: &[u8] = bytemuck::cast_slice(values);
        // SAFETY: `values` is valid for its length for the whole (synchronous) copy.
        Ok(unsafe {
            s.rt().memcpy_owned(
                s.allocation,
                CopyKind::HostToDevice,
                s.addr,
                values.as_ptr() as u64,
                values.len(),
                None,
            )
        }?)
    }

    /// Copies `src` (same length, of any device) into the view; returns when the copy is
    /// complete. Between two devices of a platform it is a peer copy (over NVLink or PCIe where
    /// the driver allows access), between a GPU and the host device a copy to or from host
    /// memory, between two GPU platforms a copy staged through page-locked host memory
    /// (`Runtime::copy_device` says how). Both sides are checked by identity: a buffer from before a re-init is
    /// `InvalidHandle`.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let (host, dev) = (ctx.device(0)?, ctx.default_device()?); // the same device without a GPU
    /// let a = ordo::DeviceBuffer::from_slice(&host, &[1u32, 2, 3])?;
    /// let mut b = ordo::DeviceBuffer::<u32>::zeroed(&dev, 2)?;
    /// b.as_mut_slice().copy_from_device(&a.slice(1..)?)?;
    /// assert_eq!(b.to_vec()?, [2, 3]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn copy_from_device(&mut self, src: &DeviceSlice<'_, T>) -> Result<()> {
        let s = &self.inner;
        if src.len != s.len {
            return Err(Error::LengthMismatch { expected: s.len, actual: src.len });
        }
        let bytes = s.len * core::mem::size_of::<T>();
        let (dst, from) = (DevicePtr(s.addr), DevicePtr(src.addr));
        Ok(s.rt().copy_device_owned(s.allocation, dst, src.allocation, from, bytes, None)?)
    }

    /// Writes `value` into every element of the view; returns when it is done.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let mut buf = ordo::DeviceBuffer::<f64>::zeroed(&ctx.default_device()?, 4)?;
    /// buf.slice_mut(1..3)?.fill(2.5)?;
    /// assert_eq!(buf.to_vec()?, [0.0, 2.5, 2.5, 0.0]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn fill(&mut self, value: T) -> Result<()> {
        let s = &self.inner;
        let (dst, bytes) = (DevicePtr(s.addr), bytemuck::bytes_of(&value));
        let fill = match *bytes {
            [b] => FillValue::U8(b),
            [a, b] => FillValue::U16(u16::from_ne_bytes([a, b])),
            [a, b, c, d] => FillValue::U32(u32::from_ne_bytes([a, b, c, d])),
            // Other sizes (and zero-sized types): the value's bytes as a pattern.
            _ => return Ok(s.rt().fill_pattern_owned(s.allocation, dst, bytes, s.len * bytes.len(), None)?),
        };
        Ok(s.rt().fill_owned(s.allocation, dst, fill, s.len, None)?)
    }

    /// The view as a shared view.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let mut buf = ordo::DeviceBuffer::<u8>::zeroed(&ctx.default_device()?, 3)?;
    /// assert_eq!(buf.slice_mut(1..)?.as_slice().to_vec()?, [0, 0]);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        self.inner
    }
}
