//! `olGet*Info` and `olGet*InfoSize`: platform, device, queue, event, memory and symbol
//! properties, written out as liboffload's header lays them out.

use super::*;

/// A property's value.
pub(super) enum Info {
    U32(u32),
    U64(u64),
    Usize(usize),
    Ptr(*mut c_void),
    Bool(bool),
    Dims(ol_dimensions_t),
    Text(heapless::String<80>),
}

pub(super) fn text(s: &str) -> Info {
    Info::Text(ordo_core::text_prefix(s))
}

impl Info {
    fn size(&self) -> usize {
        match self {
            Self::U32(_) => 4,
            Self::U64(_) => 8,
            Self::Usize(_) | Self::Ptr(_) => size_of::<usize>(),
            Self::Bool(_) => size_of::<bool>(),
            Self::Dims(_) => size_of::<ol_dimensions_t>(),
            Self::Text(s) => s.len() + 1,
        }
    }

    /// Writes the value to `out`.
    ///
    /// # Safety
    /// `out` is valid for `self.size()` bytes.
    unsafe fn write(&self, out: *mut c_void) {
        // SAFETY: the caller's contract; unaligned writes (C gives no alignment promise for void*).
        unsafe {
            match self {
                Self::U32(v) => out.cast::<u32>().write_unaligned(*v),
                Self::U64(v) => out.cast::<u64>().write_unaligned(*v),
                Self::Usize(v) => out.cast::<usize>().write_unaligned(*v),
                Self::Ptr(v) => out.cast::<*mut c_void>().write_unaligned(*v),
                Self::Bool(v) => out.cast::<bool>().write(*v),
                Self::Dims(v) => out.cast::<ol_dimensions_t>().write_unaligned(*v),
                Self::Text(s) => {
                    core::ptr::copy_nonoverlapping(s.as_ptr(), out.cast::<u8>(), s.len());
                    out.cast::<u8>().add(s.len()).write(0);
                }
            }
        }
    }
}

/// The body of an `ol*Info` call after its handle checks: a non-NULL value of non-zero size, the
/// query, then the write when the value fits.
///
/// # Safety
/// `value` is NULL or valid for `size` bytes.
pub(super) unsafe fn value_out(
    size: usize,
    value: *mut c_void,
    query: impl FnOnce() -> OlResult<Info>,
) -> OlResult<()> {
    pointer(value, "NULL == PropValue")?;
    if size == 0 {
        return Err(err(OL_ERRC_INVALID_SIZE, "PropSize == 0"));
    }
    let v = query()?;
    if size < v.size() {
        return Err(err(OL_ERRC_INVALID_SIZE, "PropSize is less than the size of the property's value"));
    }
    // SAFETY: the caller's contract; `size >= v.size()`.
    unsafe { v.write(value) };
    Ok(())
}

/// The body of an `ol*InfoSize` call after its handle checks.
///
/// # Safety
/// `ret` is NULL or writable.
pub(super) unsafe fn size_out(ret: *mut usize, query: impl FnOnce() -> OlResult<Info>) -> OlResult<()> {
    pointer(ret, "NULL == PropSizeRet")?;
    let size = query()?.size();
    // SAFETY: non-NULL, writable by the caller's contract.
    unsafe { ret.write(size) };
    Ok(())
}

pub(super) fn bad_enum() -> OlError {
    err(OL_ERRC_INVALID_ENUMERATION, "unknown property or kind (enumeration value)")
}

pub(super) fn platform_info(p: ol_platform_handle_t, prop: u32) -> OlResult<Info> {
    if prop >= OL_PLATFORM_INFO_LAST {
        return Err(bad_enum());
    }
    let (name, vendor, backend) = if p == host_platform() {
        ("Host", "ordo", OL_PLATFORM_BACKEND_HOST)
    } else {
        let info = on(Arg::Platform, runtime().platform_info(Platform::from_raw(ptr_to_handle(p))))?;
        match info.kind {
            BackendKind::Cuda => ("CUDA", "NVIDIA Corporation", OL_PLATFORM_BACKEND_CUDA),
            BackendKind::Amdgpu => ("AMDGPU", "Advanced Micro Devices, Inc.", OL_PLATFORM_BACKEND_AMDGPU),
            BackendKind::Host => ("ordo host", "ordo", OL_PLATFORM_BACKEND_UNKNOWN),
            BackendKind::Scripted => ("ordo scripted", "ordo", OL_PLATFORM_BACKEND_UNKNOWN),
        }
    };
    Ok(match prop {
        OL_PLATFORM_INFO_NAME => text(name),
        OL_PLATFORM_INFO_VENDOR_NAME => text(vendor),
        OL_PLATFORM_INFO_VERSION => text(concat!("v0.0.1 (ordo ", env!("CARGO_PKG_VERSION"), ")")),
        _ => Info::U32(backend),
    })
}

pub(super) fn device_info(h: ol_device_handle_t, prop: u32) -> OlResult<Info> {
    if prop >= OL_DEVICE_INFO_LAST {
        return Err(bad_enum());
    }
    let d = match device(h)? {
        Dev::Host => return Ok(host_device_info(prop)),
        Dev::Ordo(d) => d,
    };
    let rt = runtime();
    let platform = on(Arg::Device, rt.device_platform(d))?;
    let kind = on(Arg::Device, rt.platform_info(platform))?.kind;
    let int = |key| -> OlResult<u64> {
        match on(Arg::Device, rt.device_info(d, key))? {
            InfoValue::Int(v) => Ok(v),
            _ => Err(err(OL_ERRC_UNKNOWN, "device property has an unexpected type")),
        }
    };
    let u32_of = |key| int(key).map(|v| Info::U32(v.min(u64::from(u32::MAX)) as u32));
    let string = |key| on(Arg::Device, rt.device_info(d, key)).map(|v| text(&v.to_string()));
    let per_dim = |block: [DeviceInfo; 3], grid: Option<[DeviceInfo; 3]>| -> OlResult<Info> {
        let mut out = [0u32; 3];
        for i in 0..3 {
            let mut v = int(block[i])?;
            if let Some(g) = grid {
                v = v.saturating_mul(int(g[i])?);
            }
            out[i] = v.min(u64::from(u32::MAX)) as u32;
        }
        Ok(Info::Dims(ol_dimensions_t { x: out[0], y: out[1], z: out[2] }))
    };
    const BLOCK: [DeviceInfo; 3] = [DeviceInfo::MaxBlockDimX, DeviceInfo::MaxBlockDimY, DeviceInfo::MaxBlockDimZ];
    const GRID: [DeviceInfo; 3] = [DeviceInfo::MaxGridDimX, DeviceInfo::MaxGridDimY, DeviceInfo::MaxGridDimZ];
    Ok(match prop {
        OL_DEVICE_INFO_TYPE => {
            Info::U32(if kind == BackendKind::Host { OL_DEVICE_TYPE_CPU } else { OL_DEVICE_TYPE_GPU })
        }
        OL_DEVICE_INFO_PLATFORM => Info::Ptr(handle_to_ptr(platform.to_raw())),
        OL_DEVICE_INFO_NAME | OL_DEVICE_INFO_PRODUCT_NAME => string(DeviceInfo::Name)?,
        OL_DEVICE_INFO_UID => string(DeviceInfo::Uuid)?,
        OL_DEVICE_INFO_VENDOR => string(DeviceInfo::Vendor)?,
        OL_DEVICE_INFO_DRIVER_VERSION => string(DeviceInfo::DriverVersion)?,
        OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE => u32_of(DeviceInfo::MaxThreadsPerBlock)?,
        OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION => per_dim(BLOCK, None)?,
        OL_DEVICE_INFO_MAX_WORK_SIZE => u32_of(DeviceInfo::MaxThreadsPerLaunch)?,
        OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION => per_dim(BLOCK, Some(GRID))?,
        OL_DEVICE_INFO_VENDOR_ID => u32_of(DeviceInfo::VendorId).or_else(unknown_as_zero)?,
        OL_DEVICE_INFO_NUM_COMPUTE_UNITS => u32_of(DeviceInfo::MultiprocessorCount)?,
        // 0 where the backend does not know its clocks (ordo's host backend where the OS does
        // not tell them).
        OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY => u32_of(DeviceInfo::ClockRateMhz).or_else(unknown_as_zero)?,
        OL_DEVICE_INFO_MEMORY_CLOCK_RATE => u32_of(DeviceInfo::MemoryClockRateMhz).or_else(unknown_as_zero)?,
        OL_DEVICE_INFO_ADDRESS_BITS => Info::U32(64),
        OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE | OL_DEVICE_INFO_GLOBAL_MEM_SIZE => Info::U64(int(DeviceInfo::TotalMemory)?),
        OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE => Info::U64(int(DeviceInfo::MaxSharedMemoryPerBlockOptin)?),
        OL_DEVICE_INFO_SINGLE_FP_CONFIG..=OL_DEVICE_INFO_HALF_FP_CONFIG => Info::U32(FP_IEEE),
        _ => Info::U32(1), // native vector widths
    })
}

pub(super) fn unknown_as_zero(e: OlError) -> OlResult<Info> {
    if e.code == OL_ERRC_UNSUPPORTED { Ok(Info::U32(0)) } else { Err(e) }
}

/// liboffload's host device: the values Debian's liboffload 22.1.8 reports for it where they
/// describe the host (name, UID, vendor, version), ordo's where they are its own.
pub(super) fn host_device_info(prop: u32) -> Info {
    match prop {
        OL_DEVICE_INFO_TYPE => Info::U32(OL_DEVICE_TYPE_HOST),
        OL_DEVICE_INFO_PLATFORM => Info::Ptr(host_platform()),
        OL_DEVICE_INFO_NAME | OL_DEVICE_INFO_PRODUCT_NAME => text("Virtual Host Device"),
        OL_DEVICE_INFO_UID => text("HOST"),
        OL_DEVICE_INFO_VENDOR => text("ordo"),
        OL_DEVICE_INFO_DRIVER_VERSION => text(env!("CARGO_PKG_VERSION")),
        OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE
        | OL_DEVICE_INFO_NUM_COMPUTE_UNITS
        | OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR..=OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE => Info::U32(1),
        OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION => Info::Dims(ol_dimensions_t { x: 1, y: 1, z: 1 }),
        OL_DEVICE_INFO_MAX_WORK_SIZE => Info::U32(u32::MAX),
        OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION => {
            Info::Dims(ol_dimensions_t { x: u32::MAX, y: u32::MAX, z: u32::MAX })
        }
        OL_DEVICE_INFO_ADDRESS_BITS => Info::U32(64),
        // The CPU's, as the host backend reports them (0 where the OS does not tell).
        OL_DEVICE_INFO_VENDOR_ID => Info::U32(ordo::host::std_host_device_info().vendor_id),
        OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY => Info::U32(ordo::host::std_host_device_info().clock_mhz),
        OL_DEVICE_INFO_MEMORY_CLOCK_RATE => Info::U32(ordo::host::std_host_device_info().memory_clock_mhz),
        OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE..=OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE => Info::U64(0),
        OL_DEVICE_INFO_SINGLE_FP_CONFIG | OL_DEVICE_INFO_DOUBLE_FP_CONFIG => Info::U32(FP_IEEE),
        _ => Info::U32(0),
    }
}

pub(super) fn queue_info(q: ol_queue_handle_t, prop: u32) -> OlResult<Info> {
    if prop >= OL_QUEUE_INFO_LAST {
        return Err(bad_enum());
    }
    let rt = runtime();
    let d = on(Arg::Queue, rt.queue_device(queue(q)))?;
    Ok(match prop {
        OL_QUEUE_INFO_DEVICE => Info::Ptr(handle_to_ptr(d.to_raw())),
        _ => Info::Bool(on(Arg::Queue, rt.queue_query(queue(q)))?),
    })
}

pub(super) fn event_info(e: ol_event_handle_t, prop: u32) -> OlResult<Info> {
    if prop >= OL_EVENT_INFO_LAST {
        return Err(bad_enum());
    }
    let rt = runtime();
    on(Arg::Event, rt.event_device(event(e)))?;
    Ok(match prop {
        OL_EVENT_INFO_QUEUE => {
            let queue = side(|s| s.event_queue.get(&ptr_to_handle(e)).copied());
            // The map is read outside the runtime's calls: check the event again after reading
            // it, so that a teardown in between is this call's error, never a NULL queue.
            on(Arg::Event, rt.event_device(event(e)))?;
            // (An event made through `ordo_event_create` has no entry: its queue reads NULL.)
            Info::Ptr(handle_to_ptr(queue.unwrap_or(0)))
        }
        _ => Info::Bool(on(Arg::Event, rt.event_query(event(e)))?),
    })
}

pub(super) fn mem_info(ptr: *const c_void, prop: u32) -> OlResult<Info> {
    if prop >= OL_MEM_INFO_LAST {
        return Err(bad_enum());
    }
    let (base, size, kind, d) = match runtime().mem_info(DevicePtr(ptr as u64)) {
        Err(e) if e.code == ErrorCode::NotFound => {
            return Err(err(OL_ERRC_NOT_FOUND, "the pointer is in no allocation ordo made or registered"));
        }
        r => on(Arg::Other, r)?,
    };
    Ok(match prop {
        OL_MEM_INFO_DEVICE => Info::Ptr(handle_to_ptr(d.to_raw())),
        OL_MEM_INFO_BASE => Info::Ptr(base.as_ptr()),
        OL_MEM_INFO_SIZE => Info::Usize(size),
        _ => Info::U32(match kind {
            MemKind::Host | MemKind::Registered => OL_ALLOC_TYPE_HOST,
            MemKind::Managed => OL_ALLOC_TYPE_MANAGED,
            MemKind::Device | MemKind::Global | MemKind::Ordered => OL_ALLOC_TYPE_DEVICE,
        }),
    })
}

/// A symbol argument: a kernel or a global variable (checked live).
pub(super) enum Symbol {
    Kernel(Kernel),
    Global(Global),
}

pub(super) fn symbol(h: ol_symbol_handle_t) -> OlResult<Symbol> {
    let raw = RawHandle(ptr_to_handle(h));
    let rt = runtime();
    match raw.kind() {
        Some(ObjectKind::Kernel) => {
            let k = Kernel(raw);
            on(Arg::Other, rt.kernel_program(k))?;
            Ok(Symbol::Kernel(k))
        }
        Some(ObjectKind::Allocation) => {
            let g = Global(raw);
            on(Arg::Other, rt.global_info(g))?;
            Ok(Symbol::Global(g))
        }
        _ => Err(err(OL_ERRC_INVALID_ARGUMENT, "the symbol handle is stale, released or forged")),
    }
}

pub(super) fn symbol_info(h: ol_symbol_handle_t, prop: u32) -> OlResult<Info> {
    if prop >= OL_SYMBOL_INFO_LAST {
        return Err(bad_enum());
    }
    match (symbol(h)?, prop) {
        (Symbol::Kernel(_), OL_SYMBOL_INFO_KIND) => Ok(Info::U32(OL_SYMBOL_KIND_KERNEL)),
        (Symbol::Global(_), OL_SYMBOL_INFO_KIND) => Ok(Info::U32(OL_SYMBOL_KIND_GLOBAL_VARIABLE)),
        (Symbol::Kernel(_), _) => Err(err(OL_ERRC_SYMBOL_KIND, "a kernel has no address or size")),
        (Symbol::Global(g), p) => {
            let (addr, size, _) = on(Arg::Other, runtime().global_info(g))?;
            Ok(if p == OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS { Info::Ptr(addr.as_ptr()) } else { Info::Usize(size) })
        }
    }
}
