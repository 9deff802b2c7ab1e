//! A loaded module's global variables (`cuModuleGetGlobal`): what `program_global` answers and
//! what the module constructors and destructors (`ctors.rs`) are found by.

use std::ffi::CString;

use cudarc::driver::sys::{self, CUmodule};
use ordo_core::{BackendError, BackendResult, ErrorCode};

use crate::conv::check;

/// `cuModuleGetGlobal`: a global variable's address and size.
///
/// # Safety
/// `program` is a live module of the current context.
pub(crate) unsafe fn global(program: u64, global_name: &str) -> BackendResult<(u64, usize)> {
    debug_assert!(program != 0 && !global_name.is_empty(), "global: a null module or an empty name");
    let c_name = CString::new(global_name)
        .map_err(|_| BackendError::new(ErrorCode::InvalidArgument, 0, "global variable name contains NUL"))?;
    let (mut addr, mut size) = (0u64, 0usize);
    // SAFETY: valid out-pointers, live module, NUL-terminated name.
    check("cuModuleGetGlobal_v2", unsafe {
        sys::cuModuleGetGlobal_v2(&mut addr, &mut size, program as usize as CUmodule, c_name.as_ptr())
    })?;
    Ok((addr, size))
}
