//! Entry points for programs and their symbols (kernels and global variables), and occupancy.

use super::*;

ol_api! {

    /// Loads a program (CUDA: PTX, cubin or fatbin; ordo's host platform: a built-in program's
    /// name; AMDGPU: a code object or offload bundle). The image is copied.
    fn olCreateProgram / olCreateProgramWithCodeLoc(
        device_h: ol_device_handle_t, ProgData: *const c_void, ProgDataSize: usize, program_h: *mut ol_program_handle_t,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        pointer(ProgData, "NULL == ProgData")?;
        pointer(program_h, "NULL == Program")?;
        if ProgDataSize == 0 || ProgDataSize > isize::MAX as usize {
            return Err(err(OL_ERRC_INVALID_SIZE, "ProgDataSize is 0 or too large"));
        }
        let d = ordo_device(device_h, "the host device runs no programs")?;
        // SAFETY: non-NULL, valid for `ProgDataSize` bytes by the caller's contract.
        let image = unsafe { core::slice::from_raw_parts(ProgData.cast::<u8>(), ProgDataSize) };
        // A host image (an ELF shared object, on ordo's CPU device) loads as its registration.
        let image = on(Arg::Other, crate::c::host_image::program_bytes(d, image))?;
        let p = on(Arg::Device, runtime().program_load(d, image))?;
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { program_h.write(handle_to_ptr(p.to_raw())) };
        Ok(())
    }

    /// Unloads a program; its symbols go stale with it.
    fn olDestroyProgram / olDestroyProgramWithCodeLoc(program_h: ol_program_handle_t) {
        ready()?;
        handle(program_h, "NULL == Program")?;
        on(Arg::Other, runtime().program_unload(Program::from_raw(ptr_to_handle(program_h))))
    }

    /// Whether an image is a program the device can load, without loading it (the host device:
    /// never; an empty image: not valid; on ordo's CPU device a host image's ELF header is
    /// checked).
    fn olIsValidBinary / olIsValidBinaryWithCodeLoc(
        device_h: ol_device_handle_t, ProgData: *const c_void, ProgDataSize: usize, Valid: *mut bool,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        pointer(ProgData, "NULL == ProgData")?;
        pointer(Valid, "NULL == Valid")?;
        let valid = match device(device_h)? {
            Dev::Host => false,
            _ if ProgDataSize == 0 => false,
            Dev::Ordo(d) => {
                if ProgDataSize > isize::MAX as usize {
                    return Err(err(OL_ERRC_INVALID_SIZE, "ProgDataSize is too large"));
                }
                // SAFETY: non-NULL, valid for `ProgDataSize` bytes by the caller's contract.
                let image = unsafe { core::slice::from_raw_parts(ProgData.cast::<u8>(), ProgDataSize) };
                match crate::c::host_image::check(d, image) {
                    Some(fits) => fits,
                    None => on(Arg::Device, runtime().program_check(d, image))?,
                }
            }
        };
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { Valid.write(valid) };
        Ok(())
    }

    /// A kernel or global variable of a program by name; the same name gives the same handle.
    fn olGetSymbol / olGetSymbolWithCodeLoc(
        program_h: ol_program_handle_t, Name: *const c_char, Kind: u32, Symbol: *mut ol_symbol_handle_t,
    ) {
        ready()?;
        handle(program_h, "NULL == Program")?;
        pointer(Name, "NULL == Name")?;
        pointer(Symbol, "NULL == Symbol")?;
        // SAFETY: non-NULL and NUL-terminated by the caller's contract.
        let Ok(name) = unsafe { core::ffi::CStr::from_ptr(Name) }.to_str() else {
            return Err(err(OL_ERRC_INVALID_ARGUMENT, "Name is not UTF-8"));
        };
        let p = Program::from_raw(ptr_to_handle(program_h));
        let raw = match Kind {
            OL_SYMBOL_KIND_KERNEL => on(Arg::Other, runtime().kernel_get(p, name))?.to_raw(),
            OL_SYMBOL_KIND_GLOBAL_VARIABLE => on(Arg::Other, runtime().program_global(p, name))?.0.to_raw(),
            _ => return Err(err(OL_ERRC_INVALID_ENUMERATION, "unknown ol_symbol_kind_t")),
        };
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { Symbol.write(handle_to_ptr(raw)) };
        Ok(())
    }

    /// A symbol property.
    fn olGetSymbolInfo / olGetSymbolInfoWithCodeLoc(
        Symbol: ol_symbol_handle_t, PropName: u32, PropSize: usize, PropValue: *mut c_void,
    ) {
        ready()?;
        handle(Symbol, "NULL == Symbol")?;
        // SAFETY: `PropValue` is NULL or valid for `PropSize` bytes (the caller's contract).
        unsafe { value_out(PropSize, PropValue, || symbol_info(Symbol, PropName)) }
    }

    /// The size of a symbol property.
    fn olGetSymbolInfoSize / olGetSymbolInfoSizeWithCodeLoc(Symbol: ol_symbol_handle_t, PropName: u32, PropSizeRet: *mut usize) {
        ready()?;
        handle(Symbol, "NULL == Symbol")?;
        // SAFETY: `PropSizeRet` is NULL or writable (the caller's contract).
        unsafe { size_out(PropSizeRet, || symbol_info(Symbol, PropName)) }
    }

    /// The work-group size with the highest occupancy for a kernel and a dynamic shared memory
    /// size (CUDA: the driver's occupancy calculator, per block).
    fn olCalculateOptimalOccupancy / olCalculateOptimalOccupancyWithCodeLoc(
        device_h: ol_device_handle_t, kernel_h: ol_symbol_handle_t, SharedMemory: usize, GroupSize: *mut usize,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        handle(kernel_h, "NULL == Kernel")?;
        pointer(GroupSize, "NULL == GroupSize")?;
        ordo_device(device_h, "the host device runs no kernels")?;
        let Symbol::Kernel(k) = symbol(kernel_h)? else {
            return Err(err(OL_ERRC_SYMBOL_KIND, "the symbol is not a kernel"));
        };
        let block = on(Arg::Other, runtime().kernel_optimal_block_size(k, SharedMemory))?;
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { GroupSize.write(block as usize) };
        Ok(())
    }
}
