//! Launches: checked against the queue, the kernel, the device's launch limits and the kernel's
//! parameter count (or its packed arguments' end), then the backend's fast launch function or
//! its own call. Part of the runtime's operations on programs and kernels (`program.rs`).

use crate::backend::{KernelArgs, LaunchDims, ParamLayout};
use crate::error::{ErrorCode, Result, fail};
use crate::handle::{Device, Kernel, Queue};
use crate::trace::traced;

use core::sync::atomic::Ordering::Relaxed;

use super::{
    ARGS_END_MASK, ARGS_END_UNAVAILABLE, ARGS_END_UNKNOWN, DeviceEntry, KernelEntry, PARAM_COUNT_SHIFT, Runtime, Tables,
};

impl Runtime {
    /// Launches a kernel on a queue of the kernel's device in thread-block clusters of `cluster`
    /// blocks per dimension. Besides `launch`'s checks: `InvalidValue` when a cluster dimension
    /// is 0 or does not divide the grid's; `Unsupported` from backends without clusters (the host
    /// backend; CUDA devices below compute capability 9.0 answer with the driver's error).
    ///
    /// # Safety
    /// As `launch`.
    pub unsafe fn launch_cluster(
        &self,
        queue: Queue,
        kernel: Kernel,
        dims: &LaunchDims,
        cluster: [u32; 3],
        args: &KernelArgs<'_>,
    ) -> Result<()> {
        traced!(begun, "launch", ["queue" = queue.0.0, "kernel" = kernel.0.0], {
            self.with_shared(|t| {
                let (d, _, q, k) = Self::launch_target(t, queue, kernel, dims)?;
                if cluster.iter().zip(dims.grid).any(|(&c, g)| c == 0 || g % c != 0) {
                    return fail(ErrorCode::InvalidValue, "a cluster dimension is 0 or does not divide the grid's");
                }
                Self::check_param_count(d, k, args)?;
                let timing = Self::time_work(t, begun, d.driver, d.ordinal, queue, q);
                // SAFETY: a live queue and kernel of this device, dimensions within its limits and
                // divisible by the cluster's; the argument contract is the caller's.
                let r = unsafe { d.driver.launch_cluster(d.ordinal, q, k.raw, dims, cluster, args) };
                Self::work_done(timing, || kernel_work(kernel, dims), r.map_err(Into::into))
            })
        })
    }

    /// Launches a kernel on a queue of the kernel's device. `InvalidArgument` when `args` has
    /// another number of pointers than the kernel has parameters (where the backend tells the
    /// count; with fewer the driver would read past the array): one compare with a count cached
    /// at the kernel's first launch, whose layout query's error, if any, is the launch's.
    ///
    /// # Safety
    /// Each argument pointer must point to a value of the kernel's parameter type, and the kernel
    /// must only access memory it may (e.g. pointers in its arguments must be large enough).
    #[inline(always)]
    pub unsafe fn launch(&self, queue: Queue, kernel: Kernel, dims: &LaunchDims, args: &KernelArgs<'_>) -> Result<()> {
        if crate::trace::enabled() {
            // SAFETY: forwarded contract.
            return unsafe { self.launch_traced(queue, kernel, dims, args) };
        }
        // The untraced launch: `launch_in` without its timing hooks (even compiled away, they
        // changed how the caller's loop around an inlined launch was optimised).
        self.with_shared_inline(
            #[inline(always)]
            |t| {
                let (d, _, q, k) = Self::launch_target(t, queue, kernel, dims)?;
                Self::check_param_count(d, k, args)?;
                if let Some(f) = d.fast {
                    // SAFETY: as below (the fast function has `launch`'s contract).
                    if unsafe { (f.params)(k.raw, q, dims, args) } {
                        return Ok(());
                    }
                }
                // SAFETY: a live queue and kernel of this device, dimensions within its limits; the
                // argument contract is the caller's.
                unsafe { Self::backend_launch(d, q, k.raw, dims, args) }
            },
        )
    }

    /// `launch` while tracing is on: out of line, so that the untraced launch stays as it was.
    ///
    /// # Safety
    /// As `launch`.
    #[cold]
    #[inline(never)]
    unsafe fn launch_traced(
        &self,
        queue: Queue,
        kernel: Kernel,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> Result<()> {
        traced!(begun, "launch", ["queue" = queue.0.0, "kernel" = kernel.0.0], {
            // SAFETY: forwarded contract.
            unsafe { self.launch_in(begun, queue, kernel, dims, args) }
        })
    }

    /// `launch`'s body, timed on the queue when `begun` (tracing on).
    ///
    /// # Safety
    /// As `launch`.
    #[inline(always)]
    unsafe fn launch_in(
        &self,
        begun: Option<crate::trace::Begun>,
        queue: Queue,
        kernel: Kernel,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> Result<()> {
        self.with_shared_inline(
            #[inline(always)]
            |t| {
                let (d, _, q, k) = Self::launch_target(t, queue, kernel, dims)?;
                Self::check_param_count(d, k, args)?;
                let timing = Self::time_work(t, begun, d.driver, d.ordinal, queue, q);
                if let Some(f) = d.fast {
                    // SAFETY: as below (the fast function has `launch`'s contract).
                    if unsafe { (f.params)(k.raw, q, dims, args) } {
                        return Self::work_done(timing, || kernel_work(kernel, dims), Ok(()));
                    }
                }
                // SAFETY: a live queue and kernel of this device, dimensions within its limits; the
                // argument contract is the caller's.
                let r = unsafe { Self::backend_launch(d, q, k.raw, dims, args) };
                Self::work_done(timing, || kernel_work(kernel, dims), r)
            },
        )
    }

    /// As `launch`, and each `(owner, address, bytes)` of `owned` must lie in the live allocation
    /// `owner` names (the errors of `memcpy_owned`, the first range's first), checked in the same
    /// call as the launch: the memory cannot be freed between the check and the submission (a
    /// free waits for calls in flight, and for the host device's queues). What the typed API's
    /// launches of host kernels use, whose views are made from those ranges.
    ///
    /// # Safety
    /// As `launch`.
    pub unsafe fn launch_owned(
        &self,
        queue: Queue,
        kernel: Kernel,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
        owned: &[(crate::handle::Allocation, u64, usize)],
    ) -> Result<()> {
        traced!(begun, "launch", ["queue" = queue.0.0, "kernel" = kernel.0.0], {
            self.with_shared(|t| {
                for &(owner, addr, bytes) in owned {
                    Self::owned_range(t, owner, addr, bytes)?;
                }
                let (d, _, q, k) = Self::launch_target(t, queue, kernel, dims)?;
                Self::check_param_count(d, k, args)?;
                let timing = Self::time_work(t, begun, d.driver, d.ordinal, queue, q);
                // SAFETY: a live queue and kernel of this device, dimensions within its limits; the
                // argument contract is the caller's.
                let r = unsafe { Self::backend_launch(d, q, k.raw, dims, args) };
                Self::work_done(timing, || kernel_work(kernel, dims), r)
            })
        })
    }

    /// As `launch`, and the queue must be on `device` (liboffload's `olLaunchKernel` names the
    /// device too): `InvalidArgument` otherwise, the device's handle errors for a bad `device`.
    ///
    /// # Safety
    /// As `launch`.
    #[inline]
    pub unsafe fn launch_on(
        &self,
        device: Device,
        queue: Queue,
        kernel: Kernel,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> Result<()> {
        traced!(begun, "launch", ["device" = device.0.0, "queue" = queue.0.0, "kernel" = kernel.0.0], {
            self.with_shared(|t| {
                let (d, slot, q, k) = Self::launch_target(t, queue, kernel, dims)?;
                Self::check_param_count(d, k, args)?;
                // The queue's device is live: a handle equal to its handle names it (one compare);
                // anything else is a bad handle or another device, told apart off the fast path.
                if t.devices.handle_at(slot) != device.0 {
                    return Self::other_device(t, device);
                }
                let timing = Self::time_work(t, begun, d.driver, d.ordinal, queue, q);
                // SAFETY: as in `launch`.
                let r = unsafe { d.driver.launch(d.ordinal, q, k.raw, dims, args) };
                Self::work_done(timing, || kernel_work(kernel, dims), r.map_err(Into::into))
            })
        })
    }

    /// As `launch_on`, with the arguments packed in one buffer laid out as the kernel's
    /// parameters are (`kernel_param_layout`): liboffload's `olLaunchKernel` form. Besides
    /// `launch_on`'s errors: `InvalidSize` when `args` ends before the kernel's last parameter
    /// does, and the layout's own errors (`Unsupported` from a backend that cannot lay out
    /// parameters). Bytes after the last parameter are not read. The layout is asked of the
    /// backend once per kernel, at its first packed launch, and kept with the kernel; CUDA
    /// hands the buffer to the driver whole, other backends split it by the layout.
    ///
    /// # Safety
    /// As `launch`: each parameter's bytes in `args` are a value of the parameter's type.
    #[inline(always)]
    pub unsafe fn launch_packed_on(
        &self,
        device: Device,
        queue: Queue,
        kernel: Kernel,
        dims: &LaunchDims,
        args: &[u8],
    ) -> Result<()> {
        traced!(
            begun,
            "launch",
            ["device" = device.0.0, "queue" = queue.0.0, "kernel" = kernel.0.0, "args_bytes" = args.len()],
            {
                self.with_shared_inline(
                    #[inline(always)]
                    |t| {
                        let (d, slot, q, k) = Self::launch_target(t, queue, kernel, dims)?;
                        // The device's handle and the buffer's end in one branch (`ARGS_END_UNKNOWN` before
                        // the kernel's first packed launch takes the other side too).
                        let mut end = k.args_end.load(Relaxed) & ARGS_END_MASK;
                        let ok = (t.devices.handle_at(slot) == device.0)
                            & (end != ARGS_END_UNAVAILABLE)
                            & (end as usize <= args.len());
                        if !ok {
                            crate::sync::cold_path();
                            if t.devices.handle_at(slot) != device.0 {
                                return Self::other_device(t, device);
                            }
                            if end == ARGS_END_UNAVAILABLE {
                                end = Self::launch_facts(d, k)? & ARGS_END_MASK;
                                if end == ARGS_END_UNAVAILABLE {
                                    // No layout (the backend's error), or one past what the word holds.
                                    end = Self::args_end(d, k.raw)?;
                                }
                            }
                            if end as usize > args.len() {
                                return fail(
                                    ErrorCode::InvalidSize,
                                    "the argument buffer ends before the kernel's last parameter",
                                );
                            }
                        }
                        // SAFETY: `end` is at most the buffer's length (checked on one side or the other).
                        let args = unsafe { args.get_unchecked(..end as usize) };
                        let timing = Self::time_work(t, begun, d.driver, d.ordinal, queue, q);
                        if let Some(f) = d.fast {
                            // SAFETY: as below (the fast function has `launch_packed`'s contract).
                            if unsafe { (f.packed)(k.raw, q, dims, args) } {
                                return Self::work_done(timing, || kernel_work(kernel, dims), Ok(()));
                            }
                        }
                        // SAFETY: as in `launch`; `args` ends where the last parameter does.
                        let r = unsafe { Self::backend_launch_packed(d, q, k.raw, dims, args) };
                        Self::work_done(timing, || kernel_work(kernel, dims), r)
                    },
                )
            }
        )
    }

    /// The backend's `launch`: for a backend without fast launch functions, or a launch they
    /// declined (out of line, so that the launch path's common side stays short).
    ///
    /// # Safety
    /// As `Backend::launch`, for a live queue and kernel of `d`'s device and dimensions within
    /// its limits.
    #[inline(never)]
    unsafe fn backend_launch(
        d: &DeviceEntry,
        q: u64,
        kernel: u64,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        Ok(unsafe { d.driver.launch(d.ordinal, q, kernel, dims, args) }?)
    }

    /// `backend_launch` for a packed buffer (`Backend::launch_packed`).
    ///
    /// # Safety
    /// As `Backend::launch_packed`, for a live queue and kernel of `d`'s device, dimensions
    /// within its limits and `args` ending where the kernel's last parameter does.
    #[inline(never)]
    unsafe fn backend_launch_packed(
        d: &DeviceEntry,
        q: u64,
        kernel: u64,
        dims: &LaunchDims,
        args: &[u8],
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        Ok(unsafe { d.driver.launch_packed(d.ordinal, q, kernel, dims, args) }?)
    }

    /// `InvalidArgument` when `args` has another number of pointers than the kernel has
    /// parameters: one compare on the common path (a word of `ARGS_END_UNKNOWN`, before the
    /// first launch, reads as 65,535 parameters and takes the cold side, which fills it in).
    #[inline(always)]
    pub(super) fn check_param_count(d: &DeviceEntry, k: &KernelEntry, args: &KernelArgs<'_>) -> Result<()> {
        let count = k.args_end.load(Relaxed) >> PARAM_COUNT_SHIFT;
        if args.params().len() != count as usize {
            return Self::param_count_error(d, k, args.params().len());
        }
        Ok(())
    }

    /// `check_param_count`'s cold side: fills in the kernel's launch facts when unknown (a
    /// backend error doing so is the launch's) and compares again.
    #[cold]
    #[inline(never)]
    fn param_count_error(d: &DeviceEntry, k: &KernelEntry, given: usize) -> Result<()> {
        let word = Self::launch_facts(d, k)?;
        let count = word >> PARAM_COUNT_SHIFT;
        // Count 0 with the end unavailable: the backend tells no layout, nothing to compare.
        let known = !(count == 0 && word & ARGS_END_MASK == ARGS_END_UNAVAILABLE);
        if known && given != count as usize {
            return fail(ErrorCode::InvalidArgument, "the argument count differs from the kernel's parameter count");
        }
        Ok(())
    }

    /// The kernel's launch facts word (`KernelEntry::args_end`), read from the backend's layout
    /// and stored when not known yet. A backend without layouts (`Unsupported`): the end
    /// unavailable and the count 0 (nothing to compare), stored; another error is returned and
    /// nothing is stored (the next launch asks again).
    #[cold]
    #[inline(never)]
    fn launch_facts(d: &DeviceEntry, k: &KernelEntry) -> Result<u32> {
        let word = k.args_end.load(Relaxed);
        if word != ARGS_END_UNKNOWN {
            return Ok(word);
        }
        let mut layout = ParamLayout::new();
        // SAFETY: a live kernel of this device.
        let word = match unsafe { d.driver.kernel_param_layout(d.ordinal, k.raw, &mut layout) } {
            Ok(()) => {
                let end = layout_end(&layout).filter(|&e| e < ARGS_END_UNAVAILABLE).unwrap_or(ARGS_END_UNAVAILABLE);
                let count = u32::try_from(layout.len()).ok().filter(|&c| c < 0xFFFF).unwrap_or(0);
                (count << PARAM_COUNT_SHIFT) | end
            }
            Err(e) if e.code == ErrorCode::Unsupported => ARGS_END_UNAVAILABLE,
            Err(e) => return Err(e.into()),
        };
        k.args_end.store(word, Relaxed);
        Ok(word)
    }

    /// Where a live kernel's last parameter ends, from the backend's layout.
    #[cold]
    #[inline(never)]
    fn args_end(d: &DeviceEntry, kernel: u64) -> Result<u32> {
        let mut layout = ParamLayout::new();
        // SAFETY: a live kernel of this device.
        unsafe { d.driver.kernel_param_layout(d.ordinal, kernel, &mut layout) }?;
        match layout_end(&layout) {
            Some(end) if end != ARGS_END_UNKNOWN => Ok(end),
            _ => fail(ErrorCode::BackendFailure, "the backend's parameter layout overflows"),
        }
    }

    /// `launch_on`'s error for a device other than the queue's: the device handle's own error,
    /// else `InvalidArgument`.
    #[cold]
    #[inline(never)]
    fn other_device(t: &Tables, device: Device) -> Result<()> {
        t.devices.resolve(device.0)?;
        fail(ErrorCode::InvalidArgument, "the queue is not on the given device")
    }

    /// What every launch checks: a live queue and a live kernel of one device, and dimensions
    /// within that device's limits. The device's entry and slot, and the backend's queue and
    /// kernel. Three branches on the way (each handle's, then the device and the dimensions
    /// together); the errors, in that order, come from the cold side.
    #[inline(always)]
    fn launch_target<'t>(
        t: &'t Tables,
        queue: Queue,
        kernel: Kernel,
        dims: &LaunchDims,
    ) -> Result<(&'t DeviceEntry, u32, u64, &'t KernelEntry)> {
        let q = t.queues.get(queue.0)?;
        let k = t.kernels.get(kernel.0)?;
        let d = t.devices.at(q.device);
        if !((k.device == q.device) & d.fits(dims)) {
            Self::launch_target_error(d, k.device != q.device, dims)?;
        }
        Ok((d, q.device, q.raw, k))
    }

    /// `launch_target`'s error when the kernel's device or the dimensions do not fit (out of
    /// line, so that the fast side keeps none of the compares' values for it).
    #[cold]
    #[inline(never)]
    fn launch_target_error(d: &DeviceEntry, other_device: bool, dims: &LaunchDims) -> Result<()> {
        if other_device {
            return fail(ErrorCode::InvalidArgument, "kernel and queue belong to different devices");
        }
        dims.validate(&d.limits())
    }
}

/// Where a layout's last parameter ends (bytes), or `None` when that overflows.
fn layout_end(layout: &ParamLayout) -> Option<u32> {
    layout.iter().try_fold(0u32, |end, s| Some(end.max(s.offset.checked_add(s.size)?)))
}

/// What a launch's span on its queue says (`trace`).
fn kernel_work(kernel: Kernel, dims: &LaunchDims) -> crate::trace::WorkKind {
    crate::trace::WorkKind::Kernel { kernel: kernel.0.0, grid: dims.grid, block: dims.block }
}
