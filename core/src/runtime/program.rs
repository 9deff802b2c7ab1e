//! Operations on programs, kernels and globals: loading and unloading, kernel lookup and
//! parameter layouts (launches: `launch.rs`).
//!
//! Every operation validates all of its input before it calls a backend, so bad input returns a
//! specific error and changes nothing; that validation is what the backend trait's `unsafe`
//! methods rely on. Calls that only use objects run shared; calls that create or destroy objects
//! run exclusive. A failed unload still retires the handle (and its kernels and globals). Depends
//! on `info` (handle resolution), `teardown` (what an unload forgets), the runtime's tables,
//! `alloc_table`, `backend`, `handle` and `error`.

use crate::alloc_table::{AllocEntry, NO_OWNER};
use crate::backend::{MemKind, ParamLayout, TensorMap, TensorMapTiled};
use crate::error::{Error, ErrorCode, Result, fail};
use crate::handle::{Device, DevicePtr, Global, Kernel, Program};
use crate::trace::traced;

use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

use super::{ARGS_END_UNKNOWN, KernelEntry, NO_SLOT, ProgramEntry, Runtime, teardown};

impl Runtime {
    // ---- programs and kernels -------------------------------------------------------------

    /// Loads a program image on a device. The image is copied (by the backend) as needed and
    /// need not outlive the call.
    pub fn program_load(&self, device: Device, image: &[u8]) -> Result<Program> {
        traced!("program_load", ["device" = device.0.0, "image_bytes" = image.len()], {
            self.with_exclusive(|t| {
                if image.is_empty() {
                    return fail(ErrorCode::InvalidSize, "program image is empty");
                }
                let d = self.dev(t, device)?;
                if t.programs.is_full() {
                    return fail(ErrorCode::OutOfResources, "program table is full (ORDO_MAX_PROGRAMS)");
                }
                let raw = d.backend.program_load(d.ordinal, image)?;
                match t.programs.insert(ProgramEntry {
                    device: d.slot,
                    raw,
                    first_kernel: NO_SLOT,
                    globals: 0,
                    retained: AtomicU32::new(0),
                }) {
                    Ok(h) => Ok(Program(h)),
                    Err(_) => {
                        // SAFETY: the program the backend just returned; never passed again.
                        let _ = unsafe { d.backend.program_unload(d.ordinal, raw) };
                        fail(ErrorCode::OutOfResources, "program table is full (ORDO_MAX_PROGRAMS)")
                    }
                }
            })
        })
    }

    /// Loads as `program_load` does; when the device's backend refused the image
    /// (`InvalidBinary`) and kept a log of why (CUDA: the JIT compiler's), hands the log to `log`
    /// before returning the error.
    /// Traced as the `program_load` it makes (one span, the name the user's call has).
    pub fn program_load_logged(&self, device: Device, image: &[u8], log: &mut dyn FnMut(&str)) -> Result<Program> {
        let loaded = self.program_load(device, image);
        if matches!(loaded, Err(e) if e.code == ErrorCode::InvalidBinary) {
            if let Ok(d) = self.with_shared(|t| self.dev(t, device)) {
                d.backend.take_load_log(log);
            }
        }
        loaded
    }

    /// Takes another reference to a loaded program: the next `program_unload` then gives that
    /// reference back instead of unloading, and the program (and its kernel handles) stays until
    /// every reference is given back or the final shutdown. A program starts with one reference,
    /// its loader's. What the typed API's functions use to keep their module loaded.
    /// `OutOfResources` past `u32::MAX` references.
    ///
    /// ```
    /// # use ordo_core::{Backend, ErrorCode};
    /// # use ordo_core::host::{HostArena, HostBackend, builtin};
    /// # static ARENA: HostArena<4096> = HostArena::new();
    /// # static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
    /// # static BACKENDS: [&dyn Backend; 1] = [&HOST];
    /// # ordo_core::static_runtime!(static RT = &BACKENDS);
    /// # let rt = &RT;
    /// # rt.init()?;
    /// # let device = rt.device(rt.platform(0)?, 0)?;
    /// let program = rt.program_load(device, builtin::PROGRAM_NAME.as_bytes())?;
    /// rt.program_retain(program)?;
    /// rt.program_unload(program)?; // gives the retained reference back
    /// assert!(rt.kernel_get(program, "vector_add_f32").is_ok());
    /// rt.program_unload(program)?; // the loader's: unloaded
    /// assert_eq!(rt.program_unload(program).unwrap_err().code, ErrorCode::InvalidHandle);
    /// # Ok::<(), ordo_core::Error>(())
    /// ```
    pub fn program_retain(&self, program: Program) -> Result<()> {
        traced!("program_retain", ["program" = program.0.0], {
            self.with_shared(|t| {
                let p = t.programs.get(program.0)?;
                p.retained
                    .fetch_update(Relaxed, Relaxed, |n| n.checked_add(1))
                    .map(|_| ())
                    .map_err(|_| Error::new(ErrorCode::OutOfResources, "too many references to the program"))
            })
        })
    }

    /// Unloads a program (or gives back a reference `program_retain` or a graph took: see
    /// there); its kernel handles go stale with it. A graph that launches its kernels holds a
    /// reference, so the program stays loaded until the graph is destroyed; unloaded regardless
    /// (references given back more often than taken), it orphans such graphs (their launches and
    /// argument updates are refused). While a queue of its device is capturing, the program
    /// leaves the tables at once (handle and kernels stale) and the backend unloads it when the
    /// device's last capture ends (a graph that capture made with its kernels is orphaned) or at
    /// the teardown; `InvalidArgument`, nothing changed, only when 16 such unloads wait already.
    pub fn program_unload(&self, program: Program) -> Result<()> {
        traced!("program_unload", ["program" = program.0.0], {
            // A retained reference is given back under the shared gate, with no wait for queues.
            let released = self.with_shared(|t| {
                let p = t.programs.get(program.0)?;
                Ok(p.retained.fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1)).is_ok())
            })?;
            if released {
                return Ok(());
            }
            self.settle_backends();
            self.with_exclusive(|t| {
                let slot = t.programs.resolve(program.0)?;
                // A reference retained since the check above is given back instead (decided here,
                // where nothing else changes the count).
                let p = t.programs.at(slot);
                if p.retained.load(Relaxed) > 0 {
                    p.retained.fetch_sub(1, Relaxed);
                    return Ok(());
                }
                self.unload_slot(t, slot)
            })
        })
    }

    /// Unloads the live program in `slot`, whose references are all given back: its kernels and
    /// globals are forgotten and the graphs that launch its kernels orphaned. While a queue of
    /// its device captures (a launch of its kernels may be in that capture, whose graph would
    /// outlive them) the backend's unload waits for the device's last capture to end
    /// (`run_deferred_unloads`); refused (`InvalidArgument`, nothing changed) only when
    /// `DEFERRED_UNLOADS` unloads wait already.
    pub(super) fn unload_slot(&self, t: &mut super::Tables, slot: u32) -> Result<()> {
        let d = self.dev_at(t, t.programs.at(slot).device);
        let capturing = Self::no_capture_on(t, d.slot).is_err();
        if capturing && t.deferred_unloads.is_full() {
            return fail(
                ErrorCode::InvalidArgument,
                "a queue of the device is capturing and too many unloads wait for its captures to end",
            );
        }
        let entry = t.programs.remove_at(slot);
        teardown::forget_kernels(t, entry.first_kernel);
        Self::orphan_graphs(t, entry.device, slot);
        if entry.globals > 0 {
            teardown::forget_globals(t, slot);
        }
        if capturing {
            let _ = t.deferred_unloads.push((d.slot, entry.raw));
            return Ok(());
        }
        // SAFETY: a live program of this device, removed from the table (with its kernels) so
        // never passed again.
        Ok(unsafe { d.backend.program_unload(d.ordinal, entry.raw) }?)
    }

    /// Unloads, in the backend, the programs of the device in `device` whose unload waited for
    /// its captures (none captures any more). The first failure is returned; every one is tried.
    pub(super) fn run_deferred_unloads(&self, t: &mut super::Tables, device: u32) -> Result<()> {
        let d = self.dev_at(t, device);
        let mut result = Ok(());
        while let Some(raw) = t.take_deferred_unload(device) {
            // SAFETY: a program of this device that left the table when its unload was deferred;
            // never passed again.
            let unloaded = unsafe { d.backend.program_unload(d.ordinal, raw) };
            result = result.and(unloaded.map_err(Into::into));
        }
        result
    }

    /// The kernel called `name` in a program; the same name gives the same handle.
    pub fn kernel_get(&self, program: Program, name: &str) -> Result<Kernel> {
        traced!(begun, "kernel_get", ["program" = program.0.0], {
            let kernel = self.kernel_get_in(program, name);
            if let (Ok(k), Some(_)) = (kernel, begun) {
                // The name the timeline gives the kernel's launches.
                crate::trace::kernel_named(k.0.0, name);
            }
            kernel
        })
    }

    /// `kernel_get`'s lookup, in an exclusive call.
    fn kernel_get_in(&self, program: Program, name: &str) -> Result<Kernel> {
        self.with_exclusive(|t| {
            if name.is_empty() || name.contains('\0') {
                return fail(ErrorCode::InvalidArgument, "kernel name is empty or contains NUL");
            }
            let slot = t.programs.resolve(program.0)?;
            let (device, raw_program, first) = {
                let p = t.programs.at(slot);
                (p.device, p.raw, p.first_kernel)
            };
            let d = self.dev_at(t, device);
            // SAFETY: a live program of this device; the name is non-empty without NUL.
            let raw = unsafe { d.backend.kernel_get(d.ordinal, raw_program, name) }?;
            let mut k = first;
            while k != NO_SLOT {
                let entry = t.kernels.at(k);
                if entry.raw == raw {
                    return Ok(Kernel(t.kernels.handle_at(k)));
                }
                k = entry.next;
            }
            let h = t
                .kernels
                .insert(KernelEntry {
                    program: slot,
                    device,
                    raw,
                    next: first,
                    args_end: AtomicU32::new(ARGS_END_UNKNOWN),
                })
                .map_err(|_| Error::new(ErrorCode::OutOfResources, "kernel table is full (ORDO_MAX_KERNELS)"))?;
            t.programs.at_mut(slot).first_kernel = h.index() as u32;
            Ok(Kernel(h))
        })
    }

    /// The program a kernel belongs to.
    pub fn kernel_program(&self, kernel: Kernel) -> Result<Program> {
        traced!("kernel_program", ["kernel" = kernel.0.0], {
            self.with_shared(|t| {
                let k = t.kernels.get(kernel.0)?;
                Ok(Program(t.programs.handle_at(k.program)))
            })
        })
    }

    /// How many parameters a kernel takes, from the backend (CUDA: `cuFuncGetParamInfo`;
    /// `Unsupported` where the backend cannot tell, as the host backend).
    pub fn kernel_param_count(&self, kernel: Kernel) -> Result<usize> {
        traced!("kernel_param_count", ["kernel" = kernel.0.0], {
            self.with_shared(|t| {
                let k = t.kernels.get(kernel.0)?;
                let d = self.dev_at(t, k.device);
                // SAFETY: a live kernel of this device.
                Ok(unsafe { d.backend.kernel_param_count(d.ordinal, k.raw) }?)
            })
        })
    }

    /// The backend's own value for a kernel (CUDA: its `CUfunction`; the host backend: its
    /// index), for interoperation with the driver (attributes, launches ordo does not make). It
    /// names the kernel only while the kernel's program is loaded.
    pub fn kernel_native(&self, kernel: Kernel) -> Result<u64> {
        traced!("kernel_native", ["kernel" = kernel.0.0], { self.with_shared(|t| Ok(t.kernels.get(kernel.0)?.raw)) })
    }

    /// A kernel's parameter layout: the offset and size of each parameter in a packed argument
    /// buffer, in order (CUDA: `cuFuncGetParamInfo`, drivers 12.4 and up; AMDGPU: the code
    /// object's metadata; the host backend: the sizes its kernels declare, in C struct layout).
    pub fn kernel_param_layout(&self, kernel: Kernel) -> Result<ParamLayout> {
        traced!("kernel_param_layout", ["kernel" = kernel.0.0], {
            self.with_shared(|t| {
                let k = t.kernels.get(kernel.0)?;
                let d = self.dev_at(t, k.device);
                let mut layout = ParamLayout::new();
                // SAFETY: a live kernel of this device.
                unsafe { d.backend.kernel_param_layout(d.ordinal, k.raw, &mut layout) }?;
                Ok(layout)
            })
        })
    }

    /// The address of the Rust function a host kernel runs (`HostKernel::run as usize`), `None`
    /// for a kernel of a device backend; the kernel's handle errors otherwise. What the typed API
    /// uses to make sure a kernel handle names the typed host kernel it was looked up for.
    pub fn host_kernel_fn(&self, kernel: Kernel) -> Result<Option<usize>> {
        traced!("host_kernel_fn", ["kernel" = kernel.0.0], {
            self.with_shared(|t| {
                let k = t.kernels.get(kernel.0)?;
                let d = self.dev_at(t, k.device);
                // SAFETY: a live kernel of this device.
                Ok(unsafe { d.backend.host_kernel_fn(d.ordinal, k.raw) })
            })
        })
    }

    /// The block size (threads per block) with the highest occupancy for a kernel using
    /// `dynamic_shared` bytes of dynamic shared memory per block (CUDA:
    /// `cuOccupancyMaxPotentialBlockSize`; the host backend, which runs one thread at a time: 1).
    /// `Unsupported` where the backend cannot tell (AMDGPU).
    pub fn kernel_optimal_block_size(&self, kernel: Kernel, dynamic_shared: usize) -> Result<u32> {
        traced!("kernel_optimal_block_size", ["kernel" = kernel.0.0, "dynamic_shared" = dynamic_shared], {
            self.with_shared(|t| {
                let k = t.kernels.get(kernel.0)?;
                let d = self.dev_at(t, k.device);
                // SAFETY: a live kernel of this device.
                Ok(unsafe { d.backend.kernel_optimal_block_size(d.ordinal, k.raw, dynamic_shared) }?)
            })
        })
    }

    /// The global variable `name` of a program (CUDA: `cuModuleGetGlobal`): a handle, its
    /// address and its size. The range is registered as program-owned memory (`MemKind::Global`):
    /// copies, fills and `mem_info` accept addresses in it, `mem_free` refuses it, and it leaves
    /// with the program. The same name gives the same handle. Errors: `InvalidArgument` for an
    /// empty name or one with NUL, the program's handle errors, `NotFound` when the program has
    /// no such variable (host programs have none), `OutOfResources` when the allocation table is
    /// full, `Unsupported` from backends without globals (AMDGPU).
    pub fn program_global(&self, program: Program, name: &str) -> Result<(Global, DevicePtr, usize)> {
        traced!("program_global", ["program" = program.0.0], {
            self.with_exclusive(|t| {
                if name.is_empty() || name.contains('\0') {
                    return fail(ErrorCode::InvalidArgument, "global variable name is empty or contains NUL");
                }
                let slot = t.programs.resolve(program.0)?;
                let (device, raw_program) = {
                    let p = t.programs.at(slot);
                    (p.device, p.raw)
                };
                let d = self.dev_at(t, device);
                // SAFETY: a live program of this device; the name is non-empty without NUL.
                let (base, size) = unsafe { d.backend.program_global(d.ordinal, raw_program, name) }?;
                if base == 0 || size == 0 {
                    return fail(ErrorCode::NotFound, "the program's global variable has no storage");
                }
                if let Ok(a) = t.allocations.find_base(base) {
                    let e = t.allocations.slots.at(a);
                    if e.owner == slot && e.size == size {
                        return Ok((Global(t.allocations.slots.handle_at(a)), DevicePtr(base), size));
                    }
                }
                if t.allocations.overlaps(base, size) {
                    return fail(ErrorCode::BackendFailure, "the driver placed a global variable over known memory");
                }
                let h = t.allocations.insert(AllocEntry { base, size, device, kind: MemKind::Global, owner: slot })?;
                t.programs.at_mut(slot).globals += 1;
                Ok((Global(h), DevicePtr(base), size))
            })
        })
    }

    /// The address, size and program of a global variable handle.
    pub fn global_info(&self, global: Global) -> Result<(DevicePtr, usize, Program)> {
        traced!("global_info", ["global" = global.0.0], {
            self.with_shared(|t| {
                let g = t.allocations.slots.get(global.0)?;
                // Only program globals' slots carry an owner; other allocations are not `Global`s.
                if g.owner == NO_OWNER {
                    return fail(ErrorCode::InvalidHandle, "handle names an allocation, not a global variable");
                }
                Ok((DevicePtr(g.base), g.size, Program(t.programs.handle_at(g.owner))))
            })
        })
    }

    /// Whether `image` is a program the device can load, checked without loading it
    /// (liboffload's `olIsValidBinary`): CUDA reads a PTX image's target and a cubin's
    /// architecture (a fatbin passes when its structure is sound: the driver picks its entry);
    /// the host backend compares program names. `InvalidSize` for an empty image, the device's
    /// handle errors, `Unsupported` where the backend cannot tell (AMDGPU).
    pub fn program_check(&self, device: Device, image: &[u8]) -> Result<bool> {
        traced!("program_check", ["device" = device.0.0, "image_bytes" = image.len()], {
            self.with_shared(|t| {
                if image.is_empty() {
                    return fail(ErrorCode::InvalidSize, "program image is empty");
                }
                let d = self.dev(t, device)?;
                Ok(d.backend.program_check(d.ordinal, image)?)
            })
        })
    }

    /// Encodes a tiled tensor map for kernels of `device` (CUDA: `cuTensorMapEncodeTiled`): the
    /// 128 bytes to copy where a kernel reads them. `InvalidValue` for a shape that does not fit
    /// its rank (1 to 5), `InvalidEnumeration` for an unknown data type, interleave, swizzle, L2
    /// promotion or fill, the device's handle errors, `Unsupported` from backends without tensor
    /// maps, the driver's error for a map it refuses.
    pub fn tensor_map_encode_tiled(&self, device: Device, tensor: &TensorMapTiled<'_>) -> Result<TensorMap> {
        traced!("tensor_map_encode_tiled", ["device" = device.0.0], {
            self.with_shared(|t| {
                let d = self.dev(t, device)?;
                if !tensor.shape_is_valid() {
                    return fail(ErrorCode::InvalidValue, "tensor-map rank or dimension lists are wrong");
                }
                Ok(d.backend.tensor_map_encode_tiled(d.ordinal, tensor)?)
            })
        })
    }
}
