//! Entry points for queues and events, and host functions enqueued on a queue.

use super::*;

ol_api! {

    /// Creates an in-order queue on a device.
    fn olCreateQueue / olCreateQueueWithCodeLoc(device_h: ol_device_handle_t, queue_h: *mut ol_queue_handle_t) {
        ready()?;
        handle(device_h, "NULL == Device")?;
        pointer(queue_h, "NULL == Queue")?;
        let d = ordo_device(device_h, "the host device has no queues")?;
        let q = on(Arg::Device, runtime().queue_create(d))?;
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { queue_h.write(handle_to_ptr(q.to_raw())) };
        Ok(())
    }

    /// Destroys a queue; its enqueued work still completes and its events stay valid.
    fn olDestroyQueue / olDestroyQueueWithCodeLoc(queue_h: ol_queue_handle_t) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        on(Arg::Queue, runtime().queue_destroy(queue(queue_h)))
    }

    /// Waits for the queue's work.
    fn olSyncQueue / olSyncQueueWithCodeLoc(queue_h: ol_queue_handle_t) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        on(Arg::Queue, runtime().queue_synchronize(queue(queue_h)))
    }

    /// Makes later work on the queue wait for each event.
    fn olWaitEvents / olWaitEventsWithCodeLoc(queue_h: ol_queue_handle_t, Events: *mut ol_event_handle_t, NumEvents: usize) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        pointer(Events, "NULL == Events")?;
        if NumEvents > isize::MAX as usize / size_of::<ol_event_handle_t>() {
            return Err(err(OL_ERRC_INVALID_SIZE, "NumEvents is too large"));
        }
        // SAFETY: non-NULL, valid for `NumEvents` handles by the caller's contract (a count no
        // array can hold was refused above).
        let events = unsafe { core::slice::from_raw_parts(Events, NumEvents) };
        if events.iter().any(|e| e.is_null()) {
            return Err(err(OL_ERRC_INVALID_NULL_HANDLE, "an event handle in the list is NULL"));
        }
        let rt = runtime();
        on(Arg::Queue, rt.queue_device(queue(queue_h)))?;
        for &e in events {
            on(Arg::Event, rt.event_device(event(e)))?;
        }
        for &e in events {
            on(Arg::Other, rt.queue_wait_event(queue(queue_h), event(e)))?;
        }
        Ok(())
    }

    /// A queue property.
    fn olGetQueueInfo / olGetQueueInfoWithCodeLoc(
        queue_h: ol_queue_handle_t, PropName: u32, PropSize: usize, PropValue: *mut c_void,
    ) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        // SAFETY: `PropValue` is NULL or valid for `PropSize` bytes (the caller's contract).
        unsafe { value_out(PropSize, PropValue, || queue_info(queue_h, PropName)) }
    }

    /// The size of a queue property.
    fn olGetQueueInfoSize / olGetQueueInfoSizeWithCodeLoc(queue_h: ol_queue_handle_t, PropName: u32, PropSizeRet: *mut usize) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        // SAFETY: `PropSizeRet` is NULL or writable (the caller's contract).
        unsafe { size_out(PropSizeRet, || queue_info(queue_h, PropName)) }
    }

    /// Creates an event recorded on the queue: complete when the work enqueued before it is.
    fn olCreateEvent / olCreateEventWithCodeLoc(queue_h: ol_queue_handle_t, event_h: *mut ol_event_handle_t) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        pointer(event_h, "NULL == Event")?;
        let rt = runtime();
        let d = on(Arg::Queue, rt.queue_device(queue(queue_h)))?;
        let e = on(Arg::Queue, rt.event_create(d))?;
        if let Err(x) = rt.event_record(e, queue(queue_h)) {
            let _ = rt.event_destroy(e);
            return on(Arg::Queue, Err(x));
        }
        side(|s| s.event_queue.insert(e.to_raw(), ptr_to_handle(queue_h)));
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { event_h.write(handle_to_ptr(e.to_raw())) };
        Ok(())
    }

    /// Destroys an event.
    fn olDestroyEvent / olDestroyEventWithCodeLoc(event_h: ol_event_handle_t) {
        ready()?;
        handle(event_h, "NULL == Event")?;
        on(Arg::Event, runtime().event_destroy(event(event_h)))?;
        side(|s| s.event_queue.remove(&(ptr_to_handle(event_h))));
        Ok(())
    }

    /// Waits for the event.
    fn olSyncEvent / olSyncEventWithCodeLoc(event_h: ol_event_handle_t) {
        ready()?;
        handle(event_h, "NULL == Event")?;
        on(Arg::Event, runtime().event_synchronize(event(event_h)))
    }

    /// An event property.
    fn olGetEventInfo / olGetEventInfoWithCodeLoc(
        event_h: ol_event_handle_t, PropName: u32, PropSize: usize, PropValue: *mut c_void,
    ) {
        ready()?;
        handle(event_h, "NULL == Event")?;
        // SAFETY: `PropValue` is NULL or valid for `PropSize` bytes (the caller's contract).
        unsafe { value_out(PropSize, PropValue, || event_info(event_h, PropName)) }
    }

    /// The size of an event property.
    fn olGetEventInfoSize / olGetEventInfoSizeWithCodeLoc(event_h: ol_event_handle_t, PropName: u32, PropSizeRet: *mut usize) {
        ready()?;
        handle(event_h, "NULL == Event")?;
        // SAFETY: `PropSizeRet` is NULL or writable (the caller's contract).
        unsafe { size_out(PropSizeRet, || event_info(event_h, PropName)) }
    }


    /// Enqueues a host function on a queue.
    fn olLaunchHostFunction / olLaunchHostFunctionWithCodeLoc(
        queue_h: ol_queue_handle_t, Callback: ol_host_function_cb_t, UserData: *mut c_void,
    ) {
        ready()?;
        handle(queue_h, "NULL == Queue")?;
        let Some(f) = Callback else {
            return Err(err(OL_ERRC_INVALID_NULL_POINTER, "NULL == Callback"));
        };
        // SAFETY: liboffload's contract for the callback (called once, no API calls).
        on(Arg::Queue, unsafe { runtime().queue_host_function(queue(queue_h), f, UserData) })
    }
}
