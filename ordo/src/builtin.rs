//! ordo's built-in kernels as safe calls: the kernels' contracts are ordo's own, so these
//! wrappers check what the kernels assume (lengths, devices) and need no `unsafe` from the
//! caller, on every platform with a built-in program. The program is loaded once per device
//! and kept until the runtime's final shutdown (a later init loads it again).
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

use ordo_core::{Device as RawDevice, ErrorCode, Kernel as RawKernel, KernelArgs, Program as RawProgram, Runtime};

use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::launch_builder::KernelArg;
use crate::module::Module;
use crate::queue::Queue;

/// Devices whose built-in program is kept loaded (oldest first). Past it the oldest entry is
/// forgotten (its program stays loaded until its runtime's final shutdown).
const KEPT: usize = 16;

/// A device's loaded built-in program: (runtime, device, program, `vector_add_f32`,
/// `reduce_sum_f32`).
type Kept = (usize, RawDevice, RawProgram, RawKernel, RawKernel);

static LOADED: spin::Mutex<heapless::Vec<Kept, KEPT>> = spin::Mutex::new(heapless::Vec::new());

/// The built-in kernel `which` (0: `vector_add_f32`, 1: `reduce_sum_f32`) of `queue`'s device,
/// loading the program at the device's first use (and again after a re-init made it stale).
fn builtin_kernel(queue: &Queue<'_>, which: usize) -> Result<RawKernel> {
    let (rt, device) = (queue.device().rt(), queue.device().raw());
    let key = rt as *const Runtime as usize;
    let kept = LOADED.lock().iter().find(|k| k.0 == key && k.1 == device).copied();
    if let Some((_, _, program, add, sum)) = kept {
        // The program is still loaded (not unloaded by a raw caller, not from before a re-init).
        if rt.kernel_program(add).is_ok_and(|p| p == program) {
            return Ok([add, sum][which]);
        }
    }
    let module = Module::load_builtin(queue.device())?;
    let (add, sum) = (module.function("vector_add_f32")?.raw(), module.function("reduce_sum_f32")?.raw());
    let program = module.into_raw();
    let mut loaded = LOADED.lock();
    loaded.retain(|k| !(k.0 == key && k.1 == device));
    if loaded.is_full() {
        loaded.remove(0);
    }
    let _ = loaded.push((key, device, program, add, sum));
    Ok([add, sum][which])
}

/// Checks the buffers (device, runtime reference) and launches built-in kernel `which` with
/// `args` (buffers, then `n`) over `n` elements, then waits for it.
fn run(queue: &Queue<'_>, which: usize, buffers: &[&dyn KernelArg], n: u32) -> Result<()> {
    for (index, b) in buffers.iter().enumerate() {
        if !b.is_current() {
            return Err(crate::context::stale());
        }
        if b.as_kernel_arg().2 != Some(queue.device().raw()) {
            return Err(Error::ArgumentDevice { index });
        }
    }
    let kernel = builtin_kernel(queue, which)?;
    let rt = queue.device().rt();
    let block = match rt.kernel_optimal_block_size(kernel, 0) {
        // Never panics: `min` then `max`, whatever `n` (`clamp` would for `n == 0`).
        Ok(b) => b.min(n).max(1),
        Err(e) if e.code == ErrorCode::Unsupported => 256.min(n).max(1),
        Err(e) => return Err(e.into()),
    };
    let mut params = [core::ptr::null_mut(); 4];
    let mut sizes = [0usize; 4];
    for (i, b) in buffers.iter().enumerate() {
        let (p, size, _) = b.as_kernel_arg();
        (params[i], sizes[i]) = (p.cast_mut(), size);
    }
    let count = buffers.len() + 1;
    (params[count - 1], sizes[count - 1]) = ((&n as *const u32).cast_mut().cast(), 4);
    let args = KernelArgs::new(&params[..count], &sizes[..count])?;
    let dims = ordo_core::LaunchDims::linear(n.div_ceil(block), block);
    // SAFETY: the built-in kernels read and write `n` elements of each buffer, which hold that
    // many (checked by the callers), on the queue's device (checked above); the launch is
    // waited for before the buffers' borrows end.
    unsafe { rt.launch(queue.raw(), kernel, &dims, &args) }?;
    queue.synchronize()
}

/// `c[i] = a[i] + b[i]` for every element, on `queue`'s device. [`Error::LengthMismatch`]
/// unless the three lengths agree, [`Error::ArgumentDevice`] for a buffer of another device,
/// `InvalidSize` above `u32::MAX` elements. Returns when the kernel has finished.
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
    run(queue, 0, &[a, b, &*c], n)
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
    run(queue, 1, &[x, &*out], n)
}

fn element_count(len: usize) -> Result<u32> {
    u32::try_from(len).map_err(|_| {
        Error::Runtime(ordo_core::Error::new(ordo_core::ErrorCode::InvalidSize, "more than u32::MAX elements"))
    })
}
