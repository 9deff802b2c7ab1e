//! A program's global constructors and destructors, run at load and unload as liboffload's CUDA
//! plugin runs them. clang's NVPTX lowering gives a program with constructors a kernel
//! `nvptx$device$init` that calls the function pointers from `__init_array_start` up to
//! `__init_array_end` (two 64-bit globals holding the bounds of an array the loader provides),
//! and one `__init_array_object_<name>_<hash>_<priority>` global per constructor holding its
//! address; destructors likewise (`nvptx$device$fini`, `__fini_array_*`, called last to first).
//! The loader reads the object globals' names from the image (PTX text or a cubin's symbol
//! names; a compressed fatbin hides them, and then nothing is run), sorts them by priority,
//! writes their values to a device array, points the bounds at it and runs the kernel on one
//! thread. Constructors run during the load; the destructor array is made at load too and kept
//! until the unload runs it.

use std::ffi::CString;
use std::sync::Mutex;

use cudarc::driver::sys::{self, CUfunction, CUmodule, CUresult};
use ordo_core::BackendResult;

use crate::conv::check;

/// Destructor arrays of loaded programs: (module, device array), freed after `run_fini`.
static FINI_ARRAYS: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

/// The `<prefix><name>_<hash>_<priority>` identifiers in `image`, each once, ordered by priority
/// (then by first appearance).
pub(crate) fn array_objects(image: &[u8], prefix: &str) -> Vec<String> {
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$';
    let mut found: Vec<String> = Vec::new();
    let mut at = 0;
    while let Some(i) = image[at..].windows(prefix.len()).position(|w| w == prefix.as_bytes()) {
        let start = at + i;
        let end = image[start..].iter().position(|&b| !is_ident(b)).map_or(image.len(), |n| start + n);
        let name = String::from_utf8_lossy(&image[start..end]).into_owned();
        if !found.contains(&name) {
            found.push(name);
        }
        at = end;
    }
    let priority = |name: &str| name.rsplit('_').next().and_then(|p| p.parse::<u32>().ok()).unwrap_or(u32::MAX);
    found.sort_by_key(|n| priority(n));
    found
}

/// Whether `image` (PTX text, or a cubin's string table) names the identifier `name`: the bytes
/// appear with no identifier character right after them.
pub(crate) fn names(image: &[u8], name: &str) -> bool {
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$';
    let mut at = 0;
    while let Some(i) = image[at..].windows(name.len()).position(|w| w == name.as_bytes()) {
        let end = at + i + name.len();
        if image.get(end).is_none_or(|&b| !is_ident(b)) {
            return true;
        }
        at = at + i + 1;
    }
    false
}

/// The kernel `name` of `module`, if it has one.
///
/// # Safety
/// `module` is a live module of the current context.
unsafe fn function(module: u64, name: &str) -> Option<CUfunction> {
    let c_name = CString::new(name).ok()?;
    let mut f: CUfunction = std::ptr::null_mut();
    // SAFETY: valid out-pointer, live module, NUL-terminated name.
    let r = unsafe { sys::cuModuleGetFunction(&mut f, module as usize as CUmodule, c_name.as_ptr()) };
    (r == CUresult::CUDA_SUCCESS).then_some(f)
}

/// Writes `bytes` to device address `to`.
///
/// # Safety
/// `to` is device memory of the current context valid for `bytes.len()` bytes.
unsafe fn write(to: u64, bytes: &[u8]) -> BackendResult<()> {
    // SAFETY: the caller's contract; `bytes` is valid for reads.
    check("cuMemcpyHtoD_v2", unsafe { sys::cuMemcpyHtoD_v2(to, bytes.as_ptr().cast(), bytes.len()) })
}

/// Builds the array of `kind` ("init" or "fini") for `module` from the object globals named in
/// `image` and points the bounds at it. `None` when the module has no such kernel or no objects.
///
/// # Safety
/// `module` is a live module of the current context.
unsafe fn prepare(module: u64, image: &[u8], kind: &str) -> BackendResult<Option<(CUfunction, u64)>> {
    // The image's own names first: a lookup of a kernel the module does not have is an API error
    // under compute-sanitizer (`CUDA_ERROR_NOT_FOUND`), and most programs have no constructors.
    let kernel_name = format!("nvptx$device${kind}");
    let objects = array_objects(image, &format!("__{kind}_array_object_"));
    if objects.is_empty() || !names(image, &kernel_name) {
        return Ok(None);
    }
    // SAFETY: forwarded contract.
    let Some(kernel) = (unsafe { function(module, &kernel_name) }) else { return Ok(None) };
    let mut pointers: Vec<u8> = Vec::new();
    for name in objects {
        // SAFETY: forwarded contract.
        let Ok((addr, size)) = (unsafe { crate::global::global(module, &name) }) else { continue };
        if size != 8 {
            continue;
        }
        let mut value = [0u8; 8];
        // SAFETY: an 8-byte global of this module; `value` is valid for 8 bytes of writes.
        check("cuMemcpyDtoH_v2", unsafe { sys::cuMemcpyDtoH_v2(value.as_mut_ptr().cast(), addr, 8) })?;
        pointers.extend_from_slice(&value);
    }
    if pointers.is_empty() {
        return Ok(None);
    }
    let mut array = 0u64;
    // SAFETY: valid out-pointer.
    check("cuMemAlloc_v2", unsafe { sys::cuMemAlloc_v2(&mut array, pointers.len()) })?;
    let bounds = || -> BackendResult<()> {
        // SAFETY: `array` was just allocated with `pointers.len()` bytes; the bounds are 8-byte
        // globals of this module.
        unsafe {
            write(array, &pointers)?;
            let (start, _) = crate::global::global(module, &format!("__{kind}_array_start"))?;
            let (end, _) = crate::global::global(module, &format!("__{kind}_array_end"))?;
            write(start, &array.to_le_bytes())?;
            write(end, &(array + pointers.len() as u64).to_le_bytes())
        }
    };
    if let Err(e) = bounds() {
        // SAFETY: the allocation made above, used by nothing yet.
        let _ = unsafe { sys::cuMemFree_v2(array) };
        return Err(e);
    }
    Ok(Some((kernel, array)))
}

/// Runs `kernel` on one thread of the legacy default stream and waits for it.
///
/// # Safety
/// `kernel` is a parameterless kernel of a live module of the current context.
unsafe fn run(kernel: CUfunction) -> BackendResult<()> {
    // SAFETY: the caller's contract; no parameters.
    check("cuLaunchKernel", unsafe {
        sys::cuLaunchKernel(
            kernel,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    })?;
    // SAFETY: the legacy default stream of the current context.
    check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(std::ptr::null_mut()) })
}

/// At load: runs the constructors of `module` (from `image`) and prepares its destructors.
///
/// # Safety
/// `module` is a live module of the current context, loaded from `image`.
pub(crate) unsafe fn at_load(module: u64, image: &[u8]) -> BackendResult<()> {
    // SAFETY: forwarded contract.
    if let Some((kernel, array)) = unsafe { prepare(module, image, "init") }? {
        // SAFETY: the module's init kernel, its bounds set.
        let ran = unsafe { run(kernel) };
        // SAFETY: the array made for that launch, which has finished (or failed).
        let _ = unsafe { sys::cuMemFree_v2(array) };
        ran?;
    }
    // SAFETY: forwarded contract.
    if let Some((_, array)) = unsafe { prepare(module, image, "fini") }? {
        FINI_ARRAYS.lock().unwrap_or_else(|p| p.into_inner()).push((module, array));
    }
    Ok(())
}

/// Forgets every destructor array (at deinit: their modules and memory went with the contexts).
pub(crate) fn forget_all() {
    FINI_ARRAYS.lock().unwrap_or_else(|p| p.into_inner()).clear();
}

/// At unload: runs the destructors of `module`, if it has any, and frees their array.
///
/// # Safety
/// `module` is a live module of the current context.
pub(crate) unsafe fn at_unload(module: u64) -> BackendResult<()> {
    let array = {
        let mut arrays = FINI_ARRAYS.lock().unwrap_or_else(|p| p.into_inner());
        let Some(i) = arrays.iter().position(|&(m, _)| m == module) else { return Ok(()) };
        arrays.swap_remove(i).1
    };
    // SAFETY: forwarded contract.
    let ran = match unsafe { function(module, "nvptx$device$fini") } {
        // SAFETY: the module's fini kernel; its bounds point at `array`.
        Some(kernel) => unsafe { run(kernel) },
        None => Ok(()),
    };
    // SAFETY: the array `at_load` made for this module; the kernel using it has finished.
    let _ = unsafe { sys::cuMemFree_v2(array) };
    ran
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_found_once_and_ordered_by_priority() {
        let ptx = b".visible .const .align 8 .u64 __init_array_object_ctorc_29_202 = ctorc;\n\
            .visible .const .align 8 .u64 __init_array_object_ctorb_29_201 = ctorb;\n\
            mov.u64 %rd1, __init_array_object_ctorb_29_201;\n\
            .visible .const .align 8 .u64 __init_array_object_ctora_29_200 = ctora;\n";
        assert_eq!(
            array_objects(ptx, "__init_array_object_"),
            [
                "__init_array_object_ctora_29_200",
                "__init_array_object_ctorb_29_201",
                "__init_array_object_ctorc_29_202"
            ]
        );
        // A cubin's string table: NUL-separated names.
        let strtab = b"\0global\0__fini_array_object_dtor_be_65535\0__fini_array_start\0";
        assert_eq!(array_objects(strtab, "__fini_array_object_"), ["__fini_array_object_dtor_be_65535"]);
        assert!(array_objects(b"no constructors here", "__init_array_object_").is_empty());
    }

    #[test]
    fn a_kernel_is_named_only_as_a_whole_identifier() {
        assert!(names(b".entry nvptx$device$init(\n", "nvptx$device$init"));
        assert!(names(b"\0nvptx$device$fini\0", "nvptx$device$fini"));
        assert!(names(b"nvptx$device$init", "nvptx$device$init"));
        assert!(!names(b".entry nvptx$device$init_other(", "nvptx$device$init"));
        assert!(!names(b".entry vector_add(", "nvptx$device$init"));
        assert!(!names(b"", "nvptx$device$init"));
    }
}
