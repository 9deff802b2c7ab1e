//! Memory allocated and freed in a queue's order (`mem_alloc_on`, `mem_free_on`,
//! `mem_release_on`; kind `Ordered`): CUDA's stream-ordered pool, or the backend trait's default
//! (allocate at once, free after the queue). Such memory is an allocation like any other in the
//! allocation table (`memory.rs` frees it too, the teardown with the rest). Depends on the
//! runtime's tables (`super`), `alloc_table`, `info` (lookups), `backend`, `handle` and `error`.

use crate::alloc_table::{AllocEntry, NO_OWNER};
use crate::backend::MemKind;
use crate::error::{ErrorCode, Result, fail};
use crate::handle::{Allocation, DevicePtr, Queue};
use crate::trace::traced;

use super::memory::check_size;
use super::{Runtime, Tables};

impl Runtime {
    /// Allocates `size` bytes of device memory in the order of `queue` (kind `Ordered`): work
    /// submitted to the queue after this call may use it, other queues after waiting for an
    /// event recorded after it. CUDA takes it from the device's memory pool
    /// (`cuMemAllocAsync`; the pool keeps freed memory for reuse up to its release threshold,
    /// `ORDO_POOL_RELEASE_THRESHOLD` bytes, by default all of it); backends without pools (the
    /// host device, AMDGPU) allocate at once. It is an allocation like any other: named by its
    /// handle and address, used by copies, fills and kernels, freed by `mem_free_on` (in queue
    /// order), `mem_free`/`mem_release` (at once, after the device's work) or the teardown.
    /// Errors: `InvalidSize` (0 or above `isize::MAX`), the queue's handle errors,
    /// `OutOfResources` when the allocation table is full, and the driver's errors.
    pub fn mem_alloc_on(&self, queue: Queue, size: usize) -> Result<(Allocation, DevicePtr)> {
        traced!("mem_alloc_on", ["queue" = queue.0.0, "size" = size], {
            self.with_exclusive(|t| {
                check_size(size)?;
                let (d, raw) = self.queue_not_capturing(t, queue)?;
                if t.allocations.slots.is_full() {
                    return fail(ErrorCode::OutOfResources, "allocation table is full (ORDO_MAX_ALLOCATIONS)");
                }
                // SAFETY: a live queue of the device.
                let base = unsafe { d.backend.mem_alloc_on(d.ordinal, raw, size) }?;
                let entry = AllocEntry { base, size, device: d.slot, kind: MemKind::Ordered, owner: NO_OWNER };
                match t.allocations.insert(entry) {
                    Ok(h) => Ok((Allocation(h), DevicePtr(base))),
                    Err(e) => {
                        // SAFETY: the allocation the backend just returned, freed in the queue's order.
                        let _ = unsafe { d.backend.mem_free_on(d.ordinal, raw, base, size) };
                        Err(e)
                    }
                }
            })
        })
    }

    /// Frees queue-ordered memory (from `mem_alloc_on`; its base address) in the order of
    /// `queue`, a queue of its device: work submitted to the queue before this call may still
    /// use it; from this call on the address is unknown to ordo (a copy, fill or launch naming
    /// it is `NotFound`, a free `NotFound`). Errors: the queue's handle errors; `NotFound` for
    /// an address that is not the start of a live allocation; `InvalidArgument` for memory that
    /// is not queue-ordered (`mem_free` frees it) and for a queue of another device. Nothing
    /// changes on error.
    pub fn mem_free_on(&self, queue: Queue, ptr: DevicePtr) -> Result<()> {
        traced!("mem_free_on", ["queue" = queue.0.0, "ptr" = ptr.0], {
            self.with_exclusive(|t| {
                let slot = t.allocations.find_base(ptr.0)?;
                Self::free_on(t, queue, slot)
            })
        })
    }

    /// `mem_free_on` by the allocation's handle (the Rust API's queue-ordered buffers): the
    /// handle's errors as `mem_release`, then as `mem_free_on`.
    pub fn mem_release_on(&self, queue: Queue, allocation: Allocation) -> Result<()> {
        traced!("mem_release_on", ["queue" = queue.0.0, "allocation" = allocation.0.0], {
            self.with_exclusive(|t| {
                let slot = t.allocations.slots.resolve(allocation.0)?;
                Self::free_on(t, queue, slot)
            })
        })
    }

    /// The body of `mem_free_on` and `mem_release_on` for the allocation in `slot`.
    fn free_on(t: &mut Tables, queue: Queue, slot: u32) -> Result<()> {
        let (d, raw, capturing) = {
            let q = t.queues.get(queue.0)?;
            (q.device, q.raw, q.capturing())
        };
        let m = *t.allocations.slots.at(slot);
        if m.kind != MemKind::Ordered {
            return fail(ErrorCode::InvalidArgument, "the memory is not queue-ordered (free it with mem_free)");
        }
        if m.device != d {
            return fail(ErrorCode::InvalidArgument, "the queue belongs to another device than the memory");
        }
        if capturing {
            return fail(ErrorCode::InvalidArgument, super::queue::CAPTURING);
        }
        let dev = t.devices.at(d);
        let (backend, ordinal) = (dev.driver, dev.ordinal);
        t.allocations.remove_at(slot);
        // SAFETY: a live queue-ordered allocation of this device, removed from the table first
        // so it is never passed again; a live queue of the device.
        Ok(unsafe { backend.mem_free_on(ordinal, raw, m.base, m.size) }?)
    }
}
