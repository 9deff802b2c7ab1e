//! Entry points for initialisation, shutdown, platforms and devices.

use super::*;

ol_api! {
    /// Initialises ordo (reference-counted with `olShutDown`, and with `ordo_init`).
    fn olInit / olInitWithCodeLoc() {
        on(Arg::Other, crate::boundary::init_default())
    }

    /// Drops one reference; the last tears everything down in ordo's documented order.
    fn olShutDown / olShutDownWithCodeLoc() {
        ready()?;
        match on(Arg::Other, runtime().shutdown())? {
            Shutdown::TornDown(summary) => {
                // Forget the events the teardown released, and only those: an init racing this
                // shutdown may have made events whose entries must stay.
                let rt = runtime();
                side(|s| {
                    s.event_queue.retain(|&e, _| rt.event_device(Event::from_raw(e)).is_ok());
                    // Registrations the teardown released (a racing init's stay).
                    s.registered.retain(|&base, _| {
                        rt.mem_info(DevicePtr(base)).is_ok_and(|(b, _, kind, _)| b.0 == base && kind == MemKind::Registered)
                    });
                });
                if summary.is_clean() {
                    Ok(())
                } else {
                    Err(err(OL_ERRC_BACKEND_FAILURE, "the teardown completed, but some objects failed to release"))
                }
            }
            _ => Ok(()),
        }
    }

    /// Calls `Callback` for every device of every present platform (ordo's order), then for
    /// liboffload's host device, until it returns false.
    fn olIterateDevices / olIterateDevicesWithCodeLoc(Callback: ol_device_iterate_cb_t, UserData: *mut c_void) {
        ready()?;
        let Some(cb) = Callback else {
            return Err(err(OL_ERRC_INVALID_NULL_POINTER, "NULL == Callback"));
        };
        let rt = runtime();
        for i in 0..on(Arg::Other, rt.platform_count())? {
            let p = on(Arg::Platform, rt.platform(i))?;
            let info = on(Arg::Platform, rt.platform_info(p))?;
            for d in 0..info.device_count {
                let dev = on(Arg::Device, rt.device(p, d))?;
                // SAFETY: the caller's callback, with its own data.
                if !unsafe { cb(handle_to_ptr(dev.to_raw()), UserData) } {
                    return Ok(());
                }
            }
        }
        // SAFETY: as above.
        unsafe { cb(host_device(), UserData) };
        Ok(())
    }

    /// A platform property.
    fn olGetPlatformInfo / olGetPlatformInfoWithCodeLoc(
        platform_h: ol_platform_handle_t, PropName: u32, PropSize: usize, PropValue: *mut c_void,
    ) {
        ready()?;
        handle(platform_h, "NULL == Platform")?;
        // SAFETY: `PropValue` is NULL or valid for `PropSize` bytes (the caller's contract).
        unsafe { value_out(PropSize, PropValue, || platform_info(platform_h, PropName)) }
    }

    /// The size of a platform property.
    fn olGetPlatformInfoSize / olGetPlatformInfoSizeWithCodeLoc(
        platform_h: ol_platform_handle_t, PropName: u32, PropSizeRet: *mut usize,
    ) {
        ready()?;
        handle(platform_h, "NULL == Platform")?;
        // SAFETY: `PropSizeRet` is NULL or writable (the caller's contract).
        unsafe { size_out(PropSizeRet, || platform_info(platform_h, PropName)) }
    }

    /// A device property.
    fn olGetDeviceInfo / olGetDeviceInfoWithCodeLoc(
        device_h: ol_device_handle_t, PropName: u32, PropSize: usize, PropValue: *mut c_void,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        // SAFETY: `PropValue` is NULL or valid for `PropSize` bytes (the caller's contract).
        unsafe { value_out(PropSize, PropValue, || device_info(device_h, PropName)) }
    }

    /// The size of a device property.
    fn olGetDeviceInfoSize / olGetDeviceInfoSizeWithCodeLoc(
        device_h: ol_device_handle_t, PropName: u32, PropSizeRet: *mut usize,
    ) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        // SAFETY: `PropSizeRet` is NULL or writable (the caller's contract).
        unsafe { size_out(PropSizeRet, || device_info(device_h, PropName)) }
    }
}
