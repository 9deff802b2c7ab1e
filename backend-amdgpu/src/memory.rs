//! Memory: device memory from the GPU's coarse-grained pool (granted to the other GPUs that can
//! reach it, for copies between GPUs), host memory from the host agent's fine-grained pool
//! (granted to the GPU), copies with `hsa_amd_memory_async_copy` and a
//! completion signal, fills with `hsa_amd_memory_fill`.
//!
//! Copies to or from arbitrary host memory go through a staging buffer in the fine-grained pool
//! (HSA copies only between memory the agents may access). Copies and fills return when done:
//! with a queue, after that queue's earlier work; without one, after every queue of the device.

use std::ffi::c_void;

use ordo_core::{BackendError, BackendResult, CopyKind, ErrorCode, FillValue, MemKind};

use crate::conv::{StatusExt, check_release};
use crate::device::{Gpu, State};
use crate::queue::{self, new_signal, wait};
use crate::sys::*;

pub(crate) fn alloc(state: &State, gpu: &Gpu, kind: MemKind, size: usize) -> BackendResult<u64> {
    let hsa = state.hsa;
    let pool = match kind {
        MemKind::Device => gpu.device_pool,
        MemKind::Host => state.system_pool,
        MemKind::Managed | MemKind::Registered | MemKind::Global | MemKind::Ordered => {
            return Err(BackendError::new(ErrorCode::Unsupported, 0, "the AMDGPU backend has no managed memory"));
        }
    };
    let mut ptr: *mut c_void = std::ptr::null_mut();
    // SAFETY: a pool of this runtime; valid out-pointer.
    unsafe { (hsa.hsa_amd_memory_pool_allocate)(pool, size, 0, &mut ptr) }.result_in("hsa_amd_memory_pool_allocate")?;
    if kind == MemKind::Device && !gpu.peers.is_empty() {
        // The other GPUs that can reach it may access it (copies between GPUs run on their
        // agents too); without the grant the memory stays this GPU's alone.
        // SAFETY: a pool allocation; the agents of this runtime's GPUs.
        let granted = unsafe {
            (hsa.hsa_amd_agents_allow_access)(gpu.peers.len() as u32, gpu.peers.as_ptr(), std::ptr::null(), ptr)
        }
        .result_in("hsa_amd_agents_allow_access");
        if let Err(e) = granted {
            // SAFETY: allocated above, not handed out.
            let _ = unsafe { (hsa.hsa_amd_memory_pool_free)(ptr) };
            return Err(e);
        }
    }
    if kind == MemKind::Host {
        if let Err(e) = grant(state, gpu, ptr) {
            // SAFETY: allocated above, not handed out.
            let _ = unsafe { (hsa.hsa_amd_memory_pool_free)(ptr) };
            return Err(e);
        }
    }
    Ok(ptr as u64)
}

/// Lets the GPU access host-pool memory.
fn grant(state: &State, gpu: &Gpu, ptr: *mut c_void) -> BackendResult<()> {
    // SAFETY: one agent, no flags, a pool allocation.
    unsafe { (state.hsa.hsa_amd_agents_allow_access)(1, &gpu.agent, std::ptr::null(), ptr) }
        .result_in("hsa_amd_agents_allow_access")
}

/// # Safety
/// `addr` is a live allocation from `alloc`.
pub(crate) unsafe fn free(state: &State, addr: u64) -> BackendResult<()> {
    debug_assert!(addr != 0, "free: a null address");
    // SAFETY: the caller's contract.
    check_release("hsa_amd_memory_pool_free", unsafe {
        (state.hsa.hsa_amd_memory_pool_free)(addr as usize as *mut c_void)
    })
}

/// A staging buffer in the host pool, granted to the GPU, freed on drop.
struct Staging<'a> {
    state: &'a State,
    ptr: *mut c_void,
}

impl<'a> Staging<'a> {
    fn new(state: &'a State, gpu: &Gpu, size: usize) -> BackendResult<Self> {
        let ptr = alloc(state, gpu, MemKind::Host, size)? as usize as *mut c_void;
        Ok(Self { state, ptr })
    }
}

impl Drop for Staging<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated by `new`; no copy uses it any more (copies are waited for).
        let _ = unsafe { free(self.state, self.ptr as u64) };
    }
}

/// One asynchronous copy, waited for.
fn copy(
    state: &State,
    dst: *mut c_void,
    dst_agent: hsa_agent_t,
    src: *const c_void,
    src_agent: hsa_agent_t,
    size: usize,
) -> BackendResult<()> {
    let hsa = state.hsa;
    let signal = new_signal(hsa)?;
    // SAFETY: both ranges are memory the agents may access (device allocations, granted
    // staging); no dependencies; a live completion signal.
    let started =
        unsafe { (hsa.hsa_amd_memory_async_copy)(dst, dst_agent, src, src_agent, size, 0, std::ptr::null(), signal) }
            .result_in("hsa_amd_memory_async_copy");
    let started = started.and_then(|()| wait(hsa, signal, None));
    // SAFETY: the copy completed (or never started); the signal is not used again.
    let destroyed = unsafe { (hsa.hsa_signal_destroy)(signal) }.result_in("hsa_signal_destroy");
    started.and(destroyed)
}

fn order_before(state: &State, gpu: &Gpu, queue: Option<u64>) -> BackendResult<()> {
    match queue {
        // SAFETY: the runtime passes live queues of this device.
        Some(q) => unsafe { queue::from_value(q) }.synchronize(state),
        None => queue::drain_all(state, gpu),
    }
}

/// # Safety
/// As `Backend::memcpy`.
pub(crate) unsafe fn memcpy(
    state: &State,
    gpu: &Gpu,
    kind: CopyKind,
    dst: u64,
    src: u64,
    size: usize,
    queue: Option<u64>,
) -> BackendResult<()> {
    debug_assert!(size > 0 && dst != 0 && src != 0, "memcpy: an empty range or a null side");
    order_before(state, gpu, queue)?;
    let (dst, src) = (dst as usize as *mut c_void, src as usize as *const c_void);
    match kind {
        CopyKind::DeviceToDevice => copy(state, dst, gpu.agent, src, gpu.agent, size),
        CopyKind::HostToDevice => {
            let staging = Staging::new(state, gpu, size)?;
            // SAFETY: `src` is readable for `size` bytes (the caller's contract); the staging
            // buffer holds `size` bytes.
            unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>(), staging.ptr.cast::<u8>(), size) };
            copy(state, dst, gpu.agent, staging.ptr, state.cpu, size)
        }
        CopyKind::DeviceToHost => {
            let staging = Staging::new(state, gpu, size)?;
            copy(state, staging.ptr, state.cpu, src, gpu.agent, size)?;
            // SAFETY: `dst` is writable for `size` bytes; the copy into staging completed.
            unsafe { std::ptr::copy_nonoverlapping(staging.ptr.cast::<u8>(), dst.cast::<u8>(), size) };
            Ok(())
        }
    }
}

/// A copy between two GPUs of this backend (`hsa_amd_memory_async_copy` between their agents),
/// after the queue's earlier work (a queue of either device), or without one after both
/// devices' earlier work; returns when the copy is complete.
///
/// # Safety
/// As `Backend::memcpy_peer`.
pub(crate) unsafe fn memcpy_peer(
    state: &State,
    (dst_gpu, dst): (&Gpu, u64),
    (src_gpu, src): (&Gpu, u64),
    size: usize,
    queue: Option<u64>,
) -> BackendResult<()> {
    debug_assert!(size > 0 && dst != 0 && src != 0, "memcpy_peer: an empty range or a null side");
    match queue {
        Some(_) => order_before(state, dst_gpu, queue)?,
        None => {
            order_before(state, src_gpu, None)?;
            order_before(state, dst_gpu, None)?;
        }
    }
    copy(state, dst as usize as *mut c_void, dst_gpu.agent, src as usize as *const c_void, src_gpu.agent, size)
}

/// # Safety
/// As `Backend::fill`.
pub(crate) unsafe fn fill(
    state: &State,
    gpu: &Gpu,
    dst: u64,
    value: FillValue,
    count: usize,
    queue: Option<u64>,
) -> BackendResult<()> {
    debug_assert!(count > 0 && dst % value.width() as u64 == 0, "fill: an empty or misaligned range");
    order_before(state, gpu, queue)?;
    if let FillValue::U32(v) = value {
        // SAFETY: a 4-byte-aligned range of `count` words in one allocation (the runtime's
        // guarantee for fills).
        return unsafe { (state.hsa.hsa_amd_memory_fill)(dst as usize as *mut c_void, v, count) }
            .result_in("hsa_amd_memory_fill");
    }
    // Narrower patterns: written into staging on the host, then copied.
    let size =
        count.checked_mul(value.width()).ok_or(BackendError::new(ErrorCode::InvalidSize, 0, "fill size overflows"))?;
    let staging = Staging::new(state, gpu, size)?;
    // SAFETY: the staging buffer holds `count` elements of the value's width, aligned for any.
    unsafe {
        match value {
            FillValue::U8(b) => std::ptr::write_bytes(staging.ptr.cast::<u8>(), b, count),
            FillValue::U16(h) => std::slice::from_raw_parts_mut(staging.ptr.cast::<u16>(), count).fill(h),
            FillValue::U32(w) => std::slice::from_raw_parts_mut(staging.ptr.cast::<u32>(), count).fill(w),
        }
    }
    copy(state, dst as usize as *mut c_void, gpu.agent, staging.ptr, state.cpu, size)
}
