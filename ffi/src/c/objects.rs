//! Platforms and devices.

use ordo_core::{Device, DeviceInfo, InfoValue, Platform};

use crate::boundary::{copy_c_display, copy_c_string, fail, guard, non_null, output, produce, ready};
use crate::c::types::*;
use ordo::runtime;

/// Number of platforms (one per registered backend, present or absent).
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_platform_count(out: *mut u32) -> ordo_status_t {
    produce(out, "out is NULL", || runtime().platform_count())
}

/// The platform at `index` (registration order: 0 is the host backend).
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_platform_get(index: u32, out: *mut ordo_platform_t) -> ordo_status_t {
    produce(out, "out is NULL", || runtime().platform(index).map(|p| ordo_platform_t { raw: p.to_raw() }))
}

/// Kind, device count, presence, capabilities, name and absence reason of a platform.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_platform_get_info(
    platform: ordo_platform_t,
    out: *mut ordo_platform_info_t,
) -> ordo_status_t {
    produce(out, "out is NULL", || {
        runtime().platform_info(Platform::from_raw(platform.raw)).map(|i| {
            let mut c = ordo_platform_info_t {
                kind: i.kind as u32,
                device_count: i.device_count,
                present: u32::from(i.absent.is_none()),
                capabilities: i.capabilities.bits(),
                status: i.absent.map_or(ORDO_SUCCESS, |e| e.code as ordo_status_t),
                name: [0; 32],
                absent_reason: [0; 128],
            };
            copy_c_string(&mut c.name, i.name);
            if let Some(e) = i.absent {
                copy_c_display(&mut c.absent_reason, e.detail());
            }
            c
        })
    })
}

/// The device at `index` of a platform.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_device_get(
    platform: ordo_platform_t,
    index: u32,
    out: *mut ordo_device_t,
) -> ordo_status_t {
    produce(out, "out is NULL", || {
        runtime().device(Platform::from_raw(platform.raw), index).map(|d| ordo_device_t { raw: d.to_raw() })
    })
}

/// A device property; `key` is an `ORDO_DEVICE_INFO_*` value.
///
/// # Safety
/// Each pointer argument must be NULL or valid for the reads and writes this function
/// documents, as C requires of its callers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_device_get_info(
    device: ordo_device_t,
    key: ordo_device_info_t,
    out: *mut ordo_info_value_t,
) -> ordo_status_t {
    guard(|| {
        let key = match non_null(out, "out is NULL").and_then(|()| ready()).and_then(|()| DeviceInfo::try_from(key)) {
            Ok(k) => k,
            Err(e) => return fail(e),
        };
        let value = runtime().device_info(Device::from_raw(device.raw), key).map(|v| {
            let mut c = ordo_info_value_t { type_: ORDO_INFO_INTEGER, integer: 0, major: 0, minor: 0, text: [0; 72] };
            match v {
                InfoValue::Int(n) => c.integer = n,
                InfoValue::Version(a, b) => (c.type_, c.major, c.minor) = (ORDO_INFO_VERSION, a, b),
                InfoValue::Text(t) => {
                    c.type_ = ORDO_INFO_TEXT;
                    copy_c_string(&mut c.text, &t);
                }
            }
            c
        });
        output(out, value)
    })
}
