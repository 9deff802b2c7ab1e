//! Fills: a value repeated over device memory (`fill`), a byte pattern (`fill_pattern`), and
//! both checked against an allocation's handle (`*_owned`); with a queue, ordered on it (and
//! timed on the timeline), else ordered like a copy without a queue. Part of the runtime's
//! operations on memory (`memory.rs`), whose address checks it uses.

use crate::backend::FillValue;
use crate::error::{ErrorCode, Result, fail};
use crate::handle::{Allocation, DevicePtr, Queue};
use crate::trace::{WorkKind, traced};

use super::{Runtime, Tables};

impl Runtime {
    /// As `fill_pattern`, and the written range must lie in the live allocation `owner` names
    /// (the errors of `memcpy_owned`).
    pub fn fill_pattern_owned(
        &self,
        owner: Allocation,
        dst: DevicePtr,
        pattern: &[u8],
        size: usize,
        queue: Option<Queue>,
    ) -> Result<()> {
        traced!(
            begun,
            "fill_pattern",
            [
                "owner" = owner.0.0,
                "dst" = dst.0,
                "pattern_bytes" = pattern.len(),
                "size" = size,
                "queue" = queue.map_or(0, |h| h.0.0)
            ],
            {
                self.with_shared(|t| {
                    Self::owned_range(t, owner, dst.0, size)?;
                    self.fill_pattern_in(t, dst, pattern, size, queue, begun)
                })
            }
        )
    }

    /// As `fill`, and the written range must lie in the live allocation `owner` names (the
    /// errors of `memcpy_owned`).
    pub fn fill_owned(
        &self,
        owner: Allocation,
        dst: DevicePtr,
        value: FillValue,
        count: usize,
        queue: Option<Queue>,
    ) -> Result<()> {
        traced!(
            begun,
            "fill",
            ["owner" = owner.0.0, "dst" = dst.0, "count" = count, "queue" = queue.map_or(0, |h| h.0.0)],
            {
                self.with_shared(|t| {
                    Self::owned_range(t, owner, dst.0, count.saturating_mul(value.width()))?;
                    self.fill_in(t, dst, value, count, queue, begun)
                })
            }
        )
    }

    /// Writes `value` `count` times from `dst`; with a queue, asynchronously, else ordered like
    /// a copy without a queue. A zero-count fill succeeds and does nothing (a queue, when given,
    /// is still checked).
    pub fn fill(&self, dst: DevicePtr, value: FillValue, count: usize, queue: Option<Queue>) -> Result<()> {
        traced!(begun, "fill", ["dst" = dst.0, "count" = count, "queue" = queue.map_or(0, |h| h.0.0)], {
            self.with_shared(|t| self.fill_in(t, dst, value, count, queue, begun))
        })
    }

    /// `fill` inside a shared call.
    fn fill_in(
        &self,
        t: &Tables,
        dst: DevicePtr,
        value: FillValue,
        count: usize,
        queue: Option<Queue>,
        begun: Option<crate::trace::Begun>,
    ) -> Result<()> {
        let q = queue.map(|q| self.queue(t, q)).transpose()?;
        if count == 0 {
            return Ok(());
        }
        let Some(size) = count.checked_mul(value.width()) else {
            return fail(ErrorCode::InvalidSize, "fill size overflows");
        };
        if dst.0 == 0 {
            return fail(ErrorCode::NullPointer, "device address is null");
        }
        if dst.0 % value.width() as u64 != 0 {
            return fail(ErrorCode::InvalidArgument, "fill destination is not aligned to the element width");
        }
        let d = self.range_device(t, dst.0, size)?;
        let q = Self::queue_for(d, q)?;
        if q.is_none() {
            Self::no_capture_on(t, d.slot)?;
        }
        let timing = match (queue, q) {
            (Some(queue), Some(raw)) => Self::time_work(t, begun, d.backend, d.ordinal, queue, raw),
            _ => None,
        };
        // SAFETY: `count` aligned elements from `dst` lie in a live allocation of this device;
        // the queue is a live queue of it.
        let r = unsafe { d.backend.fill(d.ordinal, dst.0, value, count, q) };
        Self::work_done(timing, || WorkKind::Fill { bytes: size as u64 }, r.map_err(Into::into))
    }

    /// Writes the bytes of `pattern` repeatedly over `size` bytes from `dst` (liboffload's
    /// `olMemFill`); with a queue, asynchronously, else ordered like a copy without a queue.
    /// `dst` need not be aligned. Errors: `InvalidSize` for an empty pattern or a `size` that is
    /// not a multiple of its length; `Unsupported` from backends that cannot write the pattern
    /// (the AMDGPU backend writes 1-, 2- and 4-byte patterns only); then as `fill`. A zero size
    /// succeeds and does nothing (a queue, when given, is still checked).
    pub fn fill_pattern(&self, dst: DevicePtr, pattern: &[u8], size: usize, queue: Option<Queue>) -> Result<()> {
        traced!(
            begun,
            "fill_pattern",
            ["dst" = dst.0, "pattern_bytes" = pattern.len(), "size" = size, "queue" = queue.map_or(0, |h| h.0.0)],
            { self.with_shared(|t| self.fill_pattern_in(t, dst, pattern, size, queue, begun)) }
        )
    }

    /// `fill_pattern` inside a shared call.
    fn fill_pattern_in(
        &self,
        t: &Tables,
        dst: DevicePtr,
        pattern: &[u8],
        size: usize,
        queue: Option<Queue>,
        begun: Option<crate::trace::Begun>,
    ) -> Result<()> {
        let q = queue.map(|q| self.queue(t, q)).transpose()?;
        if pattern.is_empty() {
            return fail(ErrorCode::InvalidSize, "fill pattern is empty");
        }
        if size % pattern.len() != 0 {
            return fail(ErrorCode::InvalidSize, "fill size is not a multiple of the pattern size");
        }
        if size == 0 {
            return Ok(());
        }
        if dst.0 == 0 {
            return fail(ErrorCode::NullPointer, "device address is null");
        }
        let d = self.range_device(t, dst.0, size)?;
        let q = Self::queue_for(d, q)?;
        if q.is_none() {
            Self::no_capture_on(t, d.slot)?;
        }
        let timing = match (queue, q) {
            (Some(queue), Some(raw)) => Self::time_work(t, begun, d.backend, d.ordinal, queue, raw),
            _ => None,
        };
        // SAFETY: `size` bytes from `dst` lie in a live allocation of this device, `size` is a
        // non-zero multiple of the non-empty pattern; the queue is a live queue of it.
        let r = unsafe { d.backend.fill_pattern(d.ordinal, dst.0, pattern, size / pattern.len(), q) };
        Self::work_done(timing, || WorkKind::Fill { bytes: size as u64 }, r.map_err(Into::into))
    }
}
