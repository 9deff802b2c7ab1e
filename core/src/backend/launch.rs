//! A launch's values: the launch limits a device accepts, launch dimensions and their checks,
//! kernel arguments and their parameter layouts, and the backend's fast launch functions
//! (`FastLaunch`). Depends on `types.rs` (info keys and values) and `error`; the trait
//! (`backend/mod.rs`) and the runtime's launch path depend on this file.

use core::ffi::c_void;

use super::types::{DeviceInfo, InfoValue};
use crate::error::{ErrorCode, Result, fail};

/// The launch dimensions a device accepts: launches beyond them fail with `InvalidValue`
/// before any backend call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchLimits {
    /// Largest grid dimensions (blocks).
    pub grid: [u32; 3],
    /// Largest block dimensions (threads).
    pub block: [u32; 3],
    /// Most threads per block.
    pub threads_per_block: u32,
    /// Most threads per launch (grid times block).
    pub threads_per_launch: u64,
}

impl LaunchLimits {
    /// CUDA's limits on every current NVIDIA GPU (compute capability 3.0 and later).
    pub const CUDA: Self = Self {
        grid: [i32::MAX as u32, 65535, 65535],
        block: [1024, 1024, 64],
        threads_per_block: 1024,
        threads_per_launch: u64::MAX,
    };

    /// The value of a launch-limit key of `DeviceInfo`, or `None` for other keys.
    pub fn info(&self, key: DeviceInfo) -> Option<InfoValue> {
        let v = match key {
            DeviceInfo::MaxThreadsPerBlock => u64::from(self.threads_per_block),
            DeviceInfo::MaxBlockDimX => u64::from(self.block[0]),
            DeviceInfo::MaxBlockDimY => u64::from(self.block[1]),
            DeviceInfo::MaxBlockDimZ => u64::from(self.block[2]),
            DeviceInfo::MaxGridDimX => u64::from(self.grid[0]),
            DeviceInfo::MaxGridDimY => u64::from(self.grid[1]),
            DeviceInfo::MaxGridDimZ => u64::from(self.grid[2]),
            DeviceInfo::MaxThreadsPerLaunch => self.threads_per_launch,
            _ => return None,
        };
        Some(InfoValue::Int(v))
    }
}

/// Where one kernel parameter lies in a packed argument buffer (C struct layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ParamSlot {
    /// Offset in bytes from the start of the buffer.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

/// Most parameters `kernel_param_layout` describes (a CUDA kernel's parameters take at most
/// 32,764 bytes; kernels with more parameters than this are `Unsupported` there).
pub const MAX_KERNEL_PARAMS: usize = 256;

/// A kernel's parameter layout: offsets and sizes in order.
pub type ParamLayout = heapless::Vec<ParamSlot, MAX_KERNEL_PARAMS>;

/// The layout of parameters of the given sizes in a C struct: each at the next multiple of its
/// alignment (the largest power of two dividing its size, at most 8). `None` on overflow, more
/// than `MAX_KERNEL_PARAMS` parameters or a zero size.
pub fn c_layout(sizes: &[usize]) -> Option<ParamLayout> {
    let mut out = ParamLayout::new();
    let mut at = 0u32;
    for &size in sizes {
        let size = u32::try_from(size).ok().filter(|&s| s > 0)?;
        let align = (1u32 << size.trailing_zeros()).min(8);
        at = at.checked_next_multiple_of(align)?;
        out.push(ParamSlot { offset: at, size }).ok()?;
        at = at.checked_add(size)?;
    }
    Some(out)
}

/// Grid and block dimensions of a launch, and its dynamic shared memory in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDims {
    /// Blocks per grid (x, y, z); each at least 1.
    pub grid: [u32; 3],
    /// Threads per block (x, y, z); each at least 1.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchDims {
    /// A one-dimensional launch of `grid` blocks of `block` threads.
    pub const fn linear(grid: u32, block: u32) -> Self {
        Self { grid: [grid, 1, 1], block: [block, 1, 1], shared_mem_bytes: 0 }
    }

    /// Threads per block, or `None` when the product overflows a `u64`.
    #[inline]
    pub fn threads_per_block(&self) -> Option<u64> {
        let [x, y, z] = self.block.map(u64::from);
        x.checked_mul(y)?.checked_mul(z)
    }

    /// Threads in the whole launch, or `None` when the product overflows a `u64`.
    #[inline]
    pub fn threads_per_launch(&self) -> Option<u64> {
        let [x, y, z] = self.grid.map(u64::from);
        self.threads_per_block()?.checked_mul(x)?.checked_mul(y)?.checked_mul(z)
    }

    /// Checks the dimensions against a device's limits: `InvalidValue` for a zero dimension or
    /// one beyond the limits (products computed without overflow).
    #[inline]
    pub fn validate(&self, limits: &LaunchLimits) -> Result<()> {
        if self.fits(limits) { Ok(()) } else { self.explain(limits) }
    }

    /// `validate` as one flag (the launch path folds it into its other checks). `d - 1 < max`
    /// (wrapping) is `1 <= d <= max` in one compare. The threads per launch are only counted for a device that
    /// limits them (CUDA's do not): in 128 bits, each product clamped to 2^64 (past every limit)
    /// before the next factor, so nothing overflows (`saturating_mul` compiles to a branch on the
    /// overflow flag, and a chain of them is the longest latency on this path).
    #[inline(always)]
    pub(crate) fn fits(&self, limits: &LaunchLimits) -> bool {
        self.fits_parts(&limits.grid, &limits.block, limits.threads_per_block, limits.threads_per_launch)
    }

    /// `fits` with the limits' fields where they are (a device entry keeps them flattened): no
    /// copy into a `LaunchLimits` on the launch path.
    #[inline(always)]
    pub(crate) fn fits_parts(
        &self,
        grid: &[u32; 3],
        block: &[u32; 3],
        per_block_limit: u32,
        launch_limit: u64,
    ) -> bool {
        let ([gx, gy, gz], [bx, by, bz]) = (self.grid, self.block);
        let in_range = |d: u32, max: u32| d.wrapping_sub(1) < max;
        let dims_ok = in_range(bx, block[0])
            & in_range(by, block[1])
            & in_range(bz, block[2])
            & in_range(gx, grid[0])
            & in_range(gy, grid[1])
            & in_range(gz, grid[2]);
        // x·y fits a u64; clamped to 2^32 (past every per-block limit) it times z still does,
        // and is exact whenever it can pass.
        let per_block = (u64::from(bx) * u64::from(by)).min(1 << 32) * u64::from(bz);
        let ok = dims_ok & (per_block <= u64::from(per_block_limit));
        if launch_limit == u64::MAX {
            return ok;
        }
        ok & within_launch_limit(per_block, [gx, gy, gz], launch_limit)
    }

    /// Which check of `validate` failed (only called when one did).
    #[cold]
    #[inline(never)]
    fn explain(&self, limits: &LaunchLimits) -> Result<()> {
        if self.grid.contains(&0) || self.block.contains(&0) {
            return fail(ErrorCode::InvalidValue, "grid and block dimensions must all be at least 1");
        }
        if self.block.iter().zip(limits.block).any(|(&d, max)| d > max) {
            return fail(ErrorCode::InvalidValue, "a block dimension exceeds the device's limit");
        }
        if self.grid.iter().zip(limits.grid).any(|(&d, max)| d > max) {
            return fail(ErrorCode::InvalidValue, "a grid dimension exceeds the device's limit");
        }
        if self.threads_per_block().is_none_or(|n| n > u64::from(limits.threads_per_block)) {
            return fail(ErrorCode::InvalidValue, "more threads per block than the device allows");
        }
        fail(ErrorCode::InvalidValue, "more threads in the launch than the device allows")
    }
}

/// Whether `per_block` threads in each block of `grid` are at most `launch_limit` (for a device
/// that limits the threads of a launch; out of line, so that the launch path of a device that
/// does not keeps its code short).
#[inline(never)]
fn within_launch_limit(per_block: u64, grid: [u32; 3], launch_limit: u64) -> bool {
    const PAST_U64: u128 = 1 << 64;
    let times = |n: u128, d: u32| n.min(PAST_U64) * u128::from(d);
    let [gx, gy, gz] = grid;
    let total = times(times(times(u128::from(per_block), gx), gy), gz).min(PAST_U64);
    total <= u128::from(launch_limit)
}

/// Kernel arguments: one pointer per parameter, each to the argument's value (the layout
/// `cuLaunchKernel`'s `kernelParams` takes), with optional sizes for backends that check them,
/// and optional extents: for each argument that is a memory address, the bytes the kernel may
/// reach from it (what a typed launch knows of its buffers, and what a typed host kernel needs
/// to bound its views; device backends ignore them).
#[derive(Clone, Copy, Debug)]
pub struct KernelArgs<'a> {
    params: &'a [*mut c_void],
    sizes: Option<&'a [usize]>,
    extents: Option<&'a [usize]>,
}

impl<'a> KernelArgs<'a> {
    /// No arguments.
    pub const EMPTY: KernelArgs<'static> = KernelArgs { params: &[], sizes: None, extents: None };

    /// Arguments with sizes; `params` and `sizes` must have the same length and no null pointer.
    pub fn new(params: &'a [*mut c_void], sizes: &'a [usize]) -> Result<Self> {
        if params.len() != sizes.len() {
            return fail(ErrorCode::InvalidArgument, "argument pointer and size counts differ");
        }
        Self::unsized_params(params).map(|a| Self { sizes: Some(sizes), ..a })
    }

    /// Arguments with sizes, not checked: for callers whose pointers come from references (the
    /// typed launch), where the null check of [`KernelArgs::new`] would only cost time.
    ///
    /// # Safety
    /// `params` and `sizes` have the same length, and no pointer in `params` is null.
    #[inline]
    pub unsafe fn new_unchecked(params: &'a [*mut c_void], sizes: &'a [usize]) -> Self {
        debug_assert!(params.len() == sizes.len(), "argument pointer and size counts differ");
        debug_assert!(params.iter().all(|p| !p.is_null()), "a kernel argument pointer is null");
        Self { params, sizes: Some(sizes), extents: None }
    }

    /// The same arguments with extents: `extents[i]` is how many bytes from argument `i`'s
    /// address the kernel may reach (0 for an argument that is not an address). One per argument
    /// (`InvalidArgument` otherwise).
    ///
    /// # Safety
    /// Each non-zero extent is true for the launch: the `extents[i]` bytes from the address in
    /// argument `i` are memory the kernel may read and (for a writable argument) write until the
    /// launch has finished. Typed host kernels build slices from them.
    pub unsafe fn with_extents(self, extents: &'a [usize]) -> Result<Self> {
        if extents.len() != self.params.len() {
            return fail(ErrorCode::InvalidArgument, "argument extent and pointer counts differ");
        }
        Ok(Self { extents: Some(extents), ..self })
    }

    /// The extents given with [`KernelArgs::with_extents`], if any.
    pub fn extents(&self) -> Option<&'a [usize]> {
        self.extents
    }

    /// Arguments without sizes (the MLIR `mgpuLaunchKernel` form).
    #[inline]
    pub fn unsized_params(params: &'a [*mut c_void]) -> Result<Self> {
        // Every pointer looked at, no early exit: one branch after the loop.
        if params.iter().fold(false, |null, p| null | p.is_null()) {
            return fail(ErrorCode::NullPointer, "a kernel argument pointer is null");
        }
        Ok(Self { params, sizes: None, extents: None })
    }

    /// The argument pointers.
    pub fn params(&self) -> &'a [*mut c_void] {
        self.params
    }

    /// The argument sizes, when given.
    pub fn sizes(&self) -> Option<&'a [usize]> {
        self.sizes
    }

    /// Reads argument `i` as a `T`, checking its size when sizes were given.
    ///
    /// # Safety
    /// Argument `i` must point to a readable value whose first `size_of::<T>()` bytes are a valid `T`.
    pub unsafe fn read<T: Copy>(&self, i: usize) -> Result<T> {
        let Some(&p) = self.params.get(i) else {
            return fail(ErrorCode::InvalidArgument, "kernel argument index out of range");
        };
        if let Some(sizes) = self.sizes {
            if sizes[i] != core::mem::size_of::<T>() {
                return fail(ErrorCode::InvalidSize, "kernel argument size does not match the kernel's parameter");
            }
        }
        debug_assert!(!p.is_null());
        // SAFETY: the caller guarantees `p` points to a valid `T`; it may be unaligned.
        Ok(unsafe { p.cast::<T>().read_unaligned() })
    }
}

/// A device's launches reduced to plain functions of the backend (no `self`, no error value):
/// what `Backend::fast_launch` hands the runtime, so that a launch costs one direct call in
/// front of the driver's. Each returns whether the kernel was launched; on `false` nothing was
/// launched and the runtime makes the backend's own call (`launch_packed` or `launch`) with the
/// same arguments, which launches or says why not (a thread with another context current, a
/// launch that needs a step first, such as CUDA's opt-in above 48 KiB of dynamic shared memory,
/// a driver error). The contracts are those of `Backend::launch_packed` and `Backend::launch`
/// for the device that handed them out.
#[derive(Clone, Copy, Debug)]
pub struct FastLaunch {
    /// `Backend::launch_packed` without `self` or the device: kernel, queue, dimensions,
    /// the packed arguments (ending where the kernel's last parameter does).
    pub packed: unsafe fn(kernel: u64, queue: u64, dims: &LaunchDims, args: &[u8]) -> bool,
    /// `Backend::launch` without `self` or the device.
    pub params: unsafe fn(kernel: u64, queue: u64, dims: &LaunchDims, args: &KernelArgs<'_>) -> bool,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The checks of `validate` written the slow, obvious way (u128 products, no shortcuts).
    fn reference(d: &LaunchDims, l: &LaunchLimits) -> bool {
        let all = d.grid.iter().chain(&d.block);
        let per_block: u128 = d.block.iter().map(|&v| u128::from(v)).product();
        let per_launch = d.grid.iter().try_fold(per_block, |n, &v| n.checked_mul(u128::from(v)));
        all.clone().all(|&v| v >= 1)
            && d.block.iter().zip(l.block).all(|(&v, max)| v <= max)
            && d.grid.iter().zip(l.grid).all(|(&v, max)| v <= max)
            && per_block <= u128::from(l.threads_per_block)
            && (l.threads_per_launch == u64::MAX || per_launch.is_some_and(|n| n <= u128::from(l.threads_per_launch)))
    }

    /// Edge values of every dimension against several limits (CUDA's, the host's, unlimited
    /// dimensions with a launch limit, and limits at `u32::MAX` where products overflow a u64),
    /// plus pseudo-random dimensions: `validate` agrees with the reference on every one.
    #[test]
    fn launch_dimension_checks_agree_with_the_obvious_ones() {
        let huge = LaunchLimits {
            grid: [u32::MAX; 3],
            block: [u32::MAX; 3],
            threads_per_block: u32::MAX,
            threads_per_launch: u64::MAX - 1,
        };
        let unlimited = LaunchLimits { threads_per_launch: u64::MAX, ..huge };
        // The host backend's limits (`host::HOST_LAUNCH_LIMITS`), written out: no import of `host`.
        let host_limits = LaunchLimits { threads_per_launch: 1 << 28, ..LaunchLimits::CUDA };
        let limits = [LaunchLimits::CUDA, host_limits, huge, unlimited];
        let edges = [0, 1, 2, 3, 64, 1023, 1024, 1025, 65535, 65536, 1 << 20, i32::MAX as u32, u32::MAX - 1, u32::MAX];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            edges[(seed % edges.len() as u64) as usize]
        };
        let mut checked = 0;
        for l in &limits {
            // Far fewer under Miri: plain integer arithmetic (nothing for Miri to find that the
            // native run does not), and at 500 a limit this one test was two thirds of each of
            // Miri's three runs of the core's tests.
            for _ in 0..if cfg!(miri) { 40 } else { 20_000 } {
                let d =
                    LaunchDims { grid: [next(), next(), next()], block: [next(), next(), next()], shared_mem_bytes: 0 };
                assert_eq!(d.validate(l).is_ok(), reference(&d, l), "{d:?} against {l:?}");
                if let Err(e) = d.validate(l) {
                    assert_eq!(e.code, ErrorCode::InvalidValue);
                }
                checked += 1;
            }
            assert!(LaunchDims::linear(1, 1).validate(l).is_ok());
        }
        assert_eq!(checked, if cfg!(miri) { 160 } else { 80_000 });
    }
}
