//! ordo's built-in kernels as safe calls: the kernels' contracts are ordo's own, so these
//! wrappers check what the kernels assume (lengths, devices) and need no `unsafe` from the
//! caller, on every platform with a built-in program.
//!
//! ```
//! let ctx = ordo::Context::new()?;
//! let dev = ctx.default_device()?;
//! let x = ordo::DeviceBuffer::from_slice(&dev, &[1.0f32, 2.0, 3.0])?;
//! let mut twice = ordo::DeviceBuffer::<f32>::zeroed(&dev, 3)?;
//! let mut sum = ordo::DeviceBuffer::<f32>::zeroed(&dev, 1)?;
//! let queue = dev.queue()?;
//! ordo::builtin::vector_add(&queue, &x, &x, &mut twice)?;
//! ordo::builtin::reduce_sum(&queue, &twice, &mut sum)?;
//! assert_eq!(sum.to_vec()?, [12.0]);
//! # Ok::<(), ordo::Error>(())
//! ```

// Depends on `buffer`, `module`, `queue`.

use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::module::Module;
use crate::queue::Queue;

/// `c[i] = a[i] + b[i]` for every element, on `queue`'s device (loads the built-in program for
/// the call). [`Error::LengthMismatch`] unless the three lengths agree, [`Error::ArgumentDevice`]
/// for a buffer of another device, `InvalidSize` above `u32::MAX` elements. Returns when the
/// kernel has finished.
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let dev = ctx.default_device()?;
/// let a = ordo::DeviceBuffer::from_slice(&dev, &[1.0f32, 2.0])?;
/// let mut c = ordo::DeviceBuffer::<f32>::zeroed(&dev, 2)?;
/// ordo::builtin::vector_add(&dev.queue()?, &a, &a, &mut c)?;
/// assert_eq!(c.to_vec()?, [2.0, 4.0]);
/// # Ok::<(), ordo::Error>(())
/// ```
pub fn vector_add(
    queue: &Queue<'_>,
    a: &DeviceBuffer<'_, f32>,
    b: &DeviceBuffer<'_, f32>,
    c: &mut DeviceBuffer<'_, f32>,
) -> Result<()> {
    for len in [b.len(), c.len()] {
        if len != a.len() {
            return Err(Error::LengthMismatch { expected: a.len(), actual: len });
        }
    }
    let n = element_count(a.len())?;
    let module = Module::load_builtin(&queue.device())?;
    let add = module.function("vector_add_f32")?;
    // SAFETY: vector_add_f32(a, b, c, n) reads n elements of a and b and writes n of c; all three
    // hold n elements (checked above) on the queue's device (checked by the launch).
    unsafe { queue.launch_builder(&add).arg(a).arg(b).arg(&*c).arg(&n).launch(add.dims_for(n)?) }?;
    // The module is unloaded when this returns: the launch must be done first.
    queue.synchronize()
}

/// `out[0] += x[0] + ... + x[n-1]` on `queue`'s device (zero `out` first for the plain sum).
/// [`Error::LengthMismatch`] unless `out` holds one element, [`Error::ArgumentDevice`] for a
/// buffer of another device.
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let dev = ctx.default_device()?;
/// let x = ordo::DeviceBuffer::from_slice(&dev, &[1.0f32, 2.0, 3.5])?;
/// let mut sum = ordo::DeviceBuffer::<f32>::zeroed(&dev, 1)?;
/// ordo::builtin::reduce_sum(&dev.queue()?, &x, &mut sum)?;
/// assert_eq!(sum.to_vec()?, [6.5]);
/// # Ok::<(), ordo::Error>(())
/// ```
pub fn reduce_sum(queue: &Queue<'_>, x: &DeviceBuffer<'_, f32>, out: &mut DeviceBuffer<'_, f32>) -> Result<()> {
    if out.len() != 1 {
        return Err(Error::LengthMismatch { expected: 1, actual: out.len() });
    }
    let n = element_count(x.len())?;
    let module = Module::load_builtin(&queue.device())?;
    let sum = module.function("reduce_sum_f32")?;
    // SAFETY: reduce_sum_f32(x, out, n) reads n elements of x and adds into out[0]; x holds n and
    // out one element (checked above), on the queue's device (checked by the launch).
    unsafe { queue.launch_builder(&sum).arg(x).arg(&*out).arg(&n).launch(sum.dims_for(n)?) }?;
    queue.synchronize()
}

fn element_count(len: usize) -> Result<u32> {
    u32::try_from(len).map_err(|_| {
        Error::Runtime(ordo_core::Error::new(ordo_core::ErrorCode::InvalidSize, "more than u32::MAX elements"))
    })
}
