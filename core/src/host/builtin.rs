//! Built-in host kernels: the program `ordo.builtin`.
//! Depends on `kernels`, `backend` and `error`.

use super::kernels::{HostKernel, HostProgram, HostThread};
use crate::backend::KernelArgs;
use crate::error::Error;

/// The program's name (the image to load).
pub const PROGRAM_NAME: &str = "ordo.builtin";

/// `vector_add_f32(a: *const f32, b: *const f32, c: *mut f32, n: u32)`: `c[i] = a[i] + b[i]`.
///
/// # Safety
/// `a`, `b` and `c` must be valid for `n` elements.
pub unsafe fn vector_add_f32(t: &HostThread, args: &KernelArgs<'_>) -> Result<(), Error> {
    // SAFETY: the launch contract: arguments are (ptr, ptr, ptr, u32) valid for n elements.
    unsafe {
        // Pointers are read as addresses (C callers pass device memory as integers too) and
        // take the provenance the runtime exposed when it handed the address out.
        let (a, b, c, n) = (
            core::ptr::with_exposed_provenance::<f32>(args.read::<usize>(0)?),
            core::ptr::with_exposed_provenance::<f32>(args.read::<usize>(1)?),
            core::ptr::with_exposed_provenance_mut::<f32>(args.read::<usize>(2)?),
            args.read::<u32>(3)?,
        );
        let i = t.global_x() as usize;
        if i < n as usize {
            *c.add(i) = *a.add(i) + *b.add(i);
        }
    }
    Ok(())
}

/// `reduce_sum_f32(x: *const f32, out: *mut f32, n: u32)`: each thread adds its element to
/// `*out` (which the caller zeroes first). Host grids run threads one at a time, so the adds
/// need no atomics here; GPU versions of this kernel use atomic adds.
///
/// # Safety
/// `x` must be valid for `n` elements and `out` for one.
pub unsafe fn reduce_sum_f32(t: &HostThread, args: &KernelArgs<'_>) -> Result<(), Error> {
    // SAFETY: the launch contract: arguments are (ptr, ptr, u32) valid as documented.
    unsafe {
        let (x, out, n) = (
            core::ptr::with_exposed_provenance::<f32>(args.read::<usize>(0)?),
            core::ptr::with_exposed_provenance_mut::<f32>(args.read::<usize>(1)?),
            args.read::<u32>(2)?,
        );
        let i = t.global_x() as usize;
        if i < n as usize {
            *out += *x.add(i);
        }
    }
    Ok(())
}

const PTR: usize = core::mem::size_of::<usize>();

/// The kernels of `ordo.builtin`.
pub const KERNELS: &[HostKernel] = &[
    HostKernel { name: "vector_add_f32", run: vector_add_f32, params: &[PTR, PTR, PTR, 4], extents_required: false },
    HostKernel { name: "reduce_sum_f32", run: reduce_sum_f32, params: &[PTR, PTR, 4], extents_required: false },
];

/// The `ordo.builtin` program.
pub const PROGRAM: HostProgram = HostProgram { name: PROGRAM_NAME, kernels: KERNELS };

/// A program list holding only `ordo.builtin`.
pub const PROGRAMS: &[HostProgram] = &[PROGRAM];
