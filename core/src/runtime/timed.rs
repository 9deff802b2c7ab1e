//! Queue work timed for the timeline while tracing is on: the hooks the runtime's queue
//! operations (launches, copies, fills, host functions, graph launches) call around their
//! submission. With tracing off they get a constant `None` and compile away. Depends on
//! `trace` and the runtime's tables.

use crate::backend::Backend;

use super::{QueueEntry, Runtime, Tables};
use crate::error::Result;

impl Runtime {
    /// Starts timing work about to be submitted to `queue` (backend value `raw`) while tracing is
    /// on (`trace::work_begin`); `None` at once while it is off (`begun` is `None`).
    #[inline(always)]
    pub(crate) fn time_work(
        t: &Tables,
        begun: Option<crate::trace::Begun>,
        backend: &'static dyn Backend,
        ordinal: u32,
        queue: crate::handle::Queue,
        raw: u64,
    ) -> Option<crate::trace::Timing> {
        let b = begun?;
        Self::time_work_slow(t, b, backend, ordinal, queue, raw)
    }

    #[cold]
    #[inline(never)]
    fn time_work_slow(
        t: &Tables,
        begun: crate::trace::Begun,
        backend: &'static dyn Backend,
        ordinal: u32,
        queue: crate::handle::Queue,
        raw: u64,
    ) -> Option<crate::trace::Timing> {
        // A queue that is capturing records no events of the trace's (they would join the graph).
        let entry = t.queues.get(queue.0);
        let capturing = entry.map_or(true, QueueEntry::capturing);
        let number = entry.map_or(ordinal, |q| Self::device_number(t, backend, ordinal, q.device));
        let target = crate::trace::Target { backend, ordinal, raw, number };
        // SAFETY: a live queue of a live device (the caller resolved it in this shared call).
        unsafe { crate::trace::work_begin(Some(begun), target, queue.0.0, capturing) }
    }

    /// The device's number in the timeline: a host device's number among the host devices
    /// (`host CPU N`), another device's ordinal.
    pub(crate) fn device_number(t: &Tables, backend: &'static dyn Backend, ordinal: u32, slot: u32) -> u32 {
        if backend.kind() == crate::backend::BackendKind::Host { Self::host_number(t, slot) } else { ordinal }
    }

    /// Ends timing work submitted with `time_work`'s timing (`result`: the submission's), and
    /// returns `result`.
    #[inline(always)]
    pub(crate) fn work_done<R>(
        timing: Option<crate::trace::Timing>,
        kind: impl FnOnce() -> crate::trace::WorkKind,
        result: Result<R>,
    ) -> Result<R> {
        if let Some(timing) = timing {
            // SAFETY: the queue `time_work` was given is live for the rest of the call.
            unsafe { crate::trace::work_end(timing, kind(), result.is_ok()) };
        }
        result
    }
}
