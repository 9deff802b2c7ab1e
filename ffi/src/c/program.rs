//! Programs, kernels and launches.

use core::ffi::{c_char, c_void};

use ordo_core::{Device, Error, ErrorCode, Kernel, KernelArgs, LaunchDims, Program, Queue};

use crate::boundary::produce;

use crate::boundary::c_name;
#[cfg(feature = "std")]
use crate::boundary::fail_with;
use crate::boundary::{fail, guard, non_null, output, ready, status};
use crate::c::types::*;
use ordo::runtime;

/// Loads a program image on a device: for the host platform the name of a built-in or
/// registered program ("ordo.builtin", `ordo_host_program_register`) or, with `std` on Linux, a
/// host image (a shared object of this machine exporting `ordo_host_kernels` and
/// `ordo_host_kernel_count`, loaded from memory and kept for the process: see docs/c-abi.md); for CUDA, PTX (NUL-terminated or not), cubin or fatbin; for AMDGPU, a code
/// object (ELF) or a clang offload bundle holding one for the device's ISA. The image is copied
/// as needed and need not outlive the call. A bad image is `ORDO_ERROR_INVALID_BINARY`, with the
/// JIT log in `ordo_last_error_detail()`. A host image's initialisers may call ordo, but loading
/// a host image from them is `ORDO_ERROR_BUSY`.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_program_load(
    device: ordo_device_t,
    image: *const c_void,
    size: usize,
    out: *mut ordo_program_t,
) -> ordo_status_t {
    guard(|| {
        if let Err(err) = non_null(out, "out is NULL").and_then(|()| ready()).and(non_null(image, "image is NULL")) {
            return fail(err);
        }
        if size > isize::MAX as usize {
            return fail(Error::new(ErrorCode::InvalidSize, "image size is larger than isize::MAX"));
        }
        // SAFETY: `image` is non-NULL and, by the C caller's contract, valid for `size` bytes.
        let bytes = unsafe { core::slice::from_raw_parts(image.cast::<u8>(), size) };
        // A refused image's detail carries the backend's log (CUDA: the JIT compiler's).
        #[cfg(feature = "std")]
        {
            // A host image (an ELF shared object, on a host device) loads as its registration.
            let bytes = match crate::c::host_image::program_bytes(Device::from_raw(device.raw), bytes) {
                Ok(bytes) => bytes,
                Err(e) => return fail(e),
            };
            let mut log = std::string::String::new();
            match runtime().program_load_logged(Device::from_raw(device.raw), bytes, &mut |l| log.push_str(l)) {
                Ok(p) => output(out, Ok(ordo_program_t { raw: p.to_raw() })),
                Err(e) => fail_with(e, &log),
            }
        }
        #[cfg(not(feature = "std"))]
        output(
            out,
            runtime().program_load(Device::from_raw(device.raw), bytes).map(|p| ordo_program_t { raw: p.to_raw() }),
        )
    })
}

/// Compiles CUDA C++ `source` (NUL-terminated) with NVRTC for a CUDA device and loads the
/// result as a program, as `ordo_program_load` loads PTX. `options` holds `option_count`
/// NVRTC options (NUL-terminated; NULL when `option_count` is 0), such as `-std=c++17`,
/// `-DBLOCK=256`, `-I<dir>`, `-lineinfo`; without `--gpu-architecture=<arch>` (or `-arch=<arch>`)
/// the device's own architecture is used. Kernels declared `extern "C"` are found by their
/// names with `ordo_kernel_get`. Compilations are cached by source, options and architecture
/// for the process (and on disk in the directory `ORDO_NVRTC_CACHE` names, if set).
/// `ORDO_ERROR_INVALID_BINARY` for source that does not compile, with the compiler's log in
/// `ordo_last_error_detail()`; `ORDO_ERROR_NOT_PRESENT` without NVRTC (the detail names the
/// library and how to install the version that matches the driver, e.g. `pip install
/// 'nvidia-cuda-nvrtc==13.0.*'` for a CUDA 13.0 driver, its lib directory on `LD_LIBRARY_PATH`); `ORDO_ERROR_INVALID_ARGUMENT` for options NVRTC refuses or text that is
/// not UTF-8; `ORDO_ERROR_UNSUPPORTED` for a device that is not CUDA's, or a library built
/// without CUDA.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_program_compile(
    device: ordo_device_t,
    source: *const c_char,
    options: *const *const c_char,
    option_count: u32,
    out: *mut ordo_program_t,
) -> ordo_status_t {
    guard(|| {
        if let Err(err) = non_null(out, "out is NULL").and_then(|()| ready()) {
            return fail(err);
        }
        if option_count != 0 && options.is_null() {
            return fail(Error::new(ErrorCode::NullPointer, "options is NULL but option_count is not 0"));
        }
        // SAFETY: the caller's contract: NULL or NUL-terminated.
        let source = match unsafe { c_name(source, "source is NULL", "source is not UTF-8") } {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        // SAFETY: the caller's contract.
        unsafe { compile_options_and_load(Device::from_raw(device.raw), source, options, option_count, out) }
    })
}

/// `ordo_program_compile` after its first checks: the options read, then compiled and loaded.
///
/// # Safety
/// `options` holds `option_count` pointers, each NULL or NUL-terminated.
#[cfg(feature = "std")]
unsafe fn compile_options_and_load(
    device: Device,
    source: &str,
    options: *const *const c_char,
    option_count: u32,
    out: *mut ordo_program_t,
) -> ordo_status_t {
    let mut texts = std::vec::Vec::new();
    for i in 0..option_count as usize {
        // SAFETY: the caller's contract.
        match unsafe { c_name(*options.add(i), "an option is NULL", "an option is not UTF-8") } {
            Ok(o) => texts.push(o),
            Err(e) => return fail(e),
        }
    }
    compile_and_load(device, source, &texts, out)
}

/// Without std there is no NVRTC: `Unsupported`.
///
/// # Safety
/// None beyond the arguments' types.
#[cfg(not(feature = "std"))]
unsafe fn compile_options_and_load(
    _: Device,
    _: &str,
    _: *const *const c_char,
    _: u32,
    _: *mut ordo_program_t,
) -> ordo_status_t {
    fail(Error::new(ErrorCode::Unsupported, "runtime compilation needs a build with std and CUDA"))
}

#[cfg(feature = "cuda")]
fn compile_and_load(device: Device, source: &str, texts: &[&str], out: *mut ordo_program_t) -> ordo_status_t {
    use ordo::nvrtc::{CompileOptions, arch_of, compile};
    let rt = runtime();
    let kind = rt.device_platform(device).and_then(|p| rt.platform_info(p)).map(|i| i.kind);
    match kind.and_then(|k| Ok((k, rt.device_info(device, ordo_core::DeviceInfo::ComputeCapability)?))) {
        Err(e) => fail(e),
        Ok((k, _)) if k != ordo_core::BackendKind::Cuda => {
            fail(Error::new(ErrorCode::Unsupported, "CUDA C++ compiles for CUDA devices only"))
        }
        Ok((_, v)) => {
            let mut options = CompileOptions::default();
            if let ordo_core::InfoValue::Version(major, minor) = v {
                options.arch = Some(arch_of(major, minor));
            }
            for t in texts {
                match t.strip_prefix("--gpu-architecture=").or_else(|| t.strip_prefix("-arch=")) {
                    Some(arch) => options.arch = Some(arch.into()),
                    None => options.extra.push((*t).into()),
                }
            }
            match compile(source, &options) {
                Ok(c) => match rt.program_load(device, c.ptx()) {
                    Ok(p) => output(out, Ok(ordo_program_t { raw: p.to_raw() })),
                    Err(e) => fail(e),
                },
                Err(e) => fail_with(e.error, &e.log),
            }
        }
    }
}

#[cfg(all(feature = "std", not(feature = "cuda")))]
fn compile_and_load(device: Device, _: &str, _: &[&str], _: *mut ordo_program_t) -> ordo_status_t {
    match runtime().device_info(device, ordo_core::DeviceInfo::Name) {
        Err(e) => fail(e),
        Ok(_) => fail(Error::new(ErrorCode::Unsupported, "this library was built without CUDA")),
    }
}

/// Unloads a program; its kernel handles become invalid, and graphs that launch its kernels can
/// no longer be launched or updated. `ORDO_ERROR_INVALID_ARGUMENT` while a queue of its device is
/// capturing.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_program_unload(program: ordo_program_t) -> ordo_status_t {
    guard(|| status(runtime().program_unload(Program::from_raw(program.raw))))
}

/// The kernel called `name` (NUL-terminated UTF-8) in a program; the same name gives the same handle.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_kernel_get(
    program: ordo_program_t,
    name: *const c_char,
    out: *mut ordo_kernel_t,
) -> ordo_status_t {
    guard(|| {
        if let Err(err) = non_null(out, "out is NULL").and_then(|()| ready()) {
            return fail(err);
        }
        // SAFETY: the caller's contract.
        let name = match unsafe { c_name(name, "name is NULL", "kernel name is not UTF-8") } {
            Ok(n) => n,
            Err(e) => return fail(e),
        };
        output(
            out,
            runtime().kernel_get(Program::from_raw(program.raw), name).map(|k| ordo_kernel_t { raw: k.to_raw() }),
        )
    })
}

/// Launches a kernel on a queue of the kernel's device. `args` holds `arg_count` pointers, each to
/// one argument's value (as `cuLaunchKernel`'s `kernelParams`); `sizes`, when not NULL, holds each
/// argument's size for backends that check it (the host backend does). An `arg_count` other than
/// the kernel's parameter count (where the backend tells it) is `ORDO_ERROR_INVALID_ARGUMENT`.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_launch(
    queue: ordo_queue_t,
    kernel: ordo_kernel_t,
    dims: *const ordo_launch_dims_t,
    args: *const *mut c_void,
    sizes: *const usize,
    arg_count: u32,
) -> ordo_status_t {
    guard(|| {
        // The checks in one branch on the common path (a driver call before this one has
        // evicted the branch predictor's history); the errors in their documented order on the
        // other side. Initialisation is the runtime's own first check of the launch; every
        // error found here reports it first, as the other entry points do.
        if !(!dims.is_null() & ((arg_count == 0) | !args.is_null())) {
            ordo_core::cold_path();
            if let Err(err) = ready().and(non_null(dims, "dims is NULL")) {
                return fail(err);
            }
            return fail(Error::new(ErrorCode::NullPointer, "args is NULL but arg_count is not 0"));
        }
        // SAFETY: `dims` is non-NULL; by the C caller's contract it points to an ordo_launch_dims_t.
        let d = unsafe { dims.read() };
        let dims = LaunchDims { grid: d.grid, block: d.block, shared_mem_bytes: d.shared_mem_bytes };
        // SAFETY: `args` is non-NULL or `arg_count` is 0 (checked); the rest is the caller's contract.
        let kernel_args = match unsafe { c_kernel_args(args, sizes, arg_count) } {
            Ok(a) => a,
            Err(err) => return fail(ready().err().unwrap_or(err)),
        };
        // SAFETY: the argument pointers are the C caller's contract, as with cuLaunchKernel.
        status(unsafe {
            runtime().launch(Queue::from_raw(queue.raw), Kernel::from_raw(kernel.raw), &dims, &kernel_args)
        })
    })
}

/// `ordo_launch`'s arguments as `KernelArgs`.
///
/// # Safety
/// `args` is non-NULL or `arg_count` is 0; `args` (and `sizes` when not NULL) are valid for
/// `arg_count` elements, for the returned value's lifetime.
#[inline(always)]
unsafe fn c_kernel_args<'a>(
    args: *const *mut c_void,
    sizes: *const usize,
    arg_count: u32,
) -> ordo_core::Result<KernelArgs<'a>> {
    let params: &[*mut c_void] = if arg_count == 0 {
        &[]
    } else {
        // SAFETY: non-NULL and valid for `arg_count` pointers by the caller's contract.
        unsafe { core::slice::from_raw_parts(args, arg_count as usize) }
    };
    if sizes.is_null() || arg_count == 0 {
        KernelArgs::unsized_params(params)
    } else {
        // SAFETY: non-NULL and valid for `arg_count` sizes by the caller's contract.
        KernelArgs::new(params, unsafe { core::slice::from_raw_parts(sizes, arg_count as usize) })
    }
}

/// How many kernel launches a graph holds: `ordo_graph_set_args` numbers them from 0 in the
/// order they were captured.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_graph_kernel_count(graph: ordo_graph_t, out: *mut u32) -> ordo_status_t {
    produce(out, "out is NULL", || runtime().graph_kernel_count(ordo_core::Graph::from_raw(graph.raw)))
}

/// Sets the arguments of a graph's kernel launch number `index` (capture order) for the graph's
/// later launches, without capturing again; launches already submitted keep their arguments,
/// and the launch's grid, block and shared memory stay as captured. `kernel` is the kernel that
/// launch runs; `args`, `sizes` and `arg_count` are as for `ordo_launch`.
/// `ORDO_ERROR_INVALID_ARGUMENT` for a kernel of another device, an `index` past the graph's
/// launches (`ordo_graph_kernel_count`), a launch that runs another kernel, an `arg_count`
/// other than the kernel's parameter count, or a graph whose kernels' program was unloaded;
/// `ORDO_ERROR_UNSUPPORTED` from backends that cannot update launches.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers; the arguments are as for `ordo_launch`, for every
/// later launch of the graph.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_graph_set_args(
    graph: ordo_graph_t,
    index: u32,
    kernel: ordo_kernel_t,
    args: *const *mut c_void,
    sizes: *const usize,
    arg_count: u32,
) -> ordo_status_t {
    guard(|| {
        if arg_count != 0 && args.is_null() {
            return fail(
                ready().err().unwrap_or(Error::new(ErrorCode::NullPointer, "args is NULL but arg_count is not 0")),
            );
        }
        // SAFETY: checked above; the rest is the caller's contract.
        let kernel_args = match unsafe { c_kernel_args(args, sizes, arg_count) } {
            Ok(a) => a,
            Err(err) => return fail(ready().err().unwrap_or(err)),
        };
        let (graph, kernel) = (ordo_core::Graph::from_raw(graph.raw), Kernel::from_raw(kernel.raw));
        // SAFETY: the argument pointers are the C caller's contract, as with ordo_launch.
        status(unsafe { runtime().graph_set_args(graph, index, kernel, &kernel_args) })
    })
}

/// The image of ordo's built-in program for a device's platform, to pass to `ordo_program_load`:
/// kernels `vector_add_f32(const float*, const float*, float*, uint32_t)` and
/// `reduce_sum_f32(const float*, float*, uint32_t)` (CUDA adds `empty()` and
/// `spin_cycles(uint64_t)`; AMDGPU adds `empty()`, `noop()` and `mixed_args(float, float*, int64_t,
/// local float*, char, uint32_t)`). The image is static. `ORDO_ERROR_NOT_FOUND` for platforms without one.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_builtin_program_image(
    device: ordo_device_t,
    image: *mut *const c_void,
    size: *mut usize,
) -> ordo_status_t {
    guard(|| {
        if let Err(err) = non_null(image, "image is NULL").and(non_null(size, "size is NULL")) {
            return fail(err);
        }
        let rt = runtime();
        let kind = rt.device_platform(Device::from_raw(device.raw)).and_then(|p| rt.platform_info(p)).map(|i| i.kind);
        let bytes = match kind.map(ordo::builtin_program_image) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return fail(Error::new(ErrorCode::NotFound, "no built-in program for this platform")),
            Err(err) => return fail(err),
        };
        // SAFETY: `size` was checked non-NULL above.
        unsafe { size.write(bytes.len()) };
        output(image, Ok(bytes.as_ptr().cast()))
    })
}

/// The global variable `name` of a loaded program: `*addr` gets its address and `*size` its size.
/// Its memory is named by that address like an allocation (copies and fills accept it;
/// `ordo_mem_info` reports `ORDO_MEM_GLOBAL`; `ordo_mem_free` refuses it) until the program is
/// unloaded. `ORDO_ERROR_NOT_FOUND` when the program has none of that name (host programs have
/// none); `ORDO_ERROR_UNSUPPORTED` on AMDGPU.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_program_global(
    program: ordo_program_t,
    name: *const c_char,
    addr: *mut *mut c_void,
    size: *mut usize,
) -> ordo_status_t {
    guard(|| {
        if let Err(err) = non_null(addr, "addr is NULL").and(non_null(size, "size is NULL")).and_then(|()| ready()) {
            return fail(err);
        }
        // SAFETY: the caller's contract.
        let name = match unsafe { c_name(name, "name is NULL", "name is not UTF-8") } {
            Ok(n) => n,
            Err(e) => return fail(e),
        };
        match runtime().program_global(Program::from_raw(program.raw), name) {
            Ok((_, ptr, bytes)) => {
                // SAFETY: `size` was checked non-NULL above.
                unsafe { size.write(bytes) };
                output(addr, Ok(ptr.as_ptr()))
            }
            Err(e) => fail(e),
        }
    })
}

/// A kernel's parameter layout: up to `capacity` slots (offset and size of each parameter in a
/// packed argument buffer, in order) into `out`, and the number of parameters into `*count`
/// (`out` may be NULL when `capacity` is 0, to ask for the count). CUDA: from the driver (12.4
/// and up); AMDGPU: from the code object's metadata; the host platform: from its kernels'
/// declared sizes. `ORDO_ERROR_INVALID_SIZE` when `capacity` is non-zero but below the count.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents (`out`: `capacity` slots), as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_kernel_param_layout(
    kernel: ordo_kernel_t,
    out: *mut ordo_param_slot_t,
    capacity: usize,
    count: *mut usize,
) -> ordo_status_t {
    guard(|| {
        if let Err(err) = non_null(count, "count is NULL").and_then(|()| ready()) {
            return fail(err);
        }
        if capacity > 0 && out.is_null() {
            return fail(Error::new(ErrorCode::NullPointer, "out is NULL"));
        }
        let layout = match runtime().kernel_param_layout(Kernel::from_raw(kernel.raw)) {
            Ok(l) => l,
            Err(e) => return fail(e),
        };
        if capacity > 0 && capacity < layout.len() {
            return fail(Error::new(ErrorCode::InvalidSize, "capacity is below the kernel's parameter count"));
        }
        if capacity > 0 {
            for (i, slot) in layout.iter().enumerate() {
                // SAFETY: `out` is valid for `capacity >= layout.len()` slots (caller's contract).
                unsafe { out.add(i).write(ordo_param_slot_t { offset: slot.offset, size: slot.size }) };
            }
        }
        output(count, Ok(layout.len()))
    })
}

/// `*out` = the block size (threads) with the highest occupancy for a kernel using
/// `dynamic_shared` bytes of dynamic shared memory per block (CUDA: the driver's occupancy
/// calculator; the host platform: 1; `ORDO_ERROR_UNSUPPORTED` on AMDGPU).
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_kernel_optimal_block_size(
    kernel: ordo_kernel_t,
    dynamic_shared: usize,
    out: *mut u32,
) -> ordo_status_t {
    produce(out, "out is NULL", || runtime().kernel_optimal_block_size(Kernel::from_raw(kernel.raw), dynamic_shared))
}

/// `*out` = the driver's own handle of a kernel (CUDA: its `CUfunction`; the host platform: an
/// index), for interoperation: attributes, or launches made with the driver directly. It stays
/// valid while the kernel's program is loaded.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_kernel_native(kernel: ordo_kernel_t, out: *mut *mut c_void) -> ordo_status_t {
    produce(out, "out is NULL", || {
        runtime().kernel_native(Kernel::from_raw(kernel.raw)).map(|raw| raw as usize as *mut c_void)
    })
}

/// `*valid` = 1 when `image` (`size` bytes) is a program the device can load, else 0, checked
/// without loading it: CUDA reads a PTX image's `.target` and a cubin's architecture (a
/// well-formed fatbin counts as valid: the driver picks its entry); the host platform compares
/// program names, and checks a host image's ELF header (class, byte order, machine, shared
/// object) without loading it. `ORDO_ERROR_INVALID_SIZE` for size 0; `ORDO_ERROR_UNSUPPORTED` on AMDGPU.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents (`image`: `size` bytes), as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_program_image_check(
    device: ordo_device_t,
    image: *const c_void,
    size: usize,
    valid: *mut i32,
) -> ordo_status_t {
    produce(valid, "valid is NULL", || {
        ready()?;
        non_null(image, "image is NULL")?;
        if size > isize::MAX as usize {
            return Err(Error::new(ErrorCode::InvalidSize, "image size is too large"));
        }
        // SAFETY: non-NULL, valid for `size` bytes by the caller's contract.
        let bytes = unsafe { core::slice::from_raw_parts(image.cast::<u8>(), size) };
        #[cfg(feature = "std")]
        if let Some(fits) = crate::c::host_image::check(Device::from_raw(device.raw), bytes) {
            return Ok(i32::from(fits));
        }
        runtime().program_check(Device::from_raw(device.raw), bytes).map(i32::from)
    })
}
