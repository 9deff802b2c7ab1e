//! Operations on platforms, devices, memory, queues, events, programs and kernels.
//!
//! Every operation validates all of its input before it calls a backend, so bad input returns a
//! specific error and changes nothing; that validation is what the backend trait's `unsafe`
//! methods rely on. Calls that only use objects run shared; calls that create or destroy objects
//! run exclusive. A failed release (free, destroy, unload) still retires the handle: the backend
//! was told once, and it is never told twice.

use crate::alloc_table::{AllocEntry, NO_OWNER};
use crate::backend::{
    Backend, CopyKind, DeviceInfo, FillValue, HostFn, InfoValue, KernelArgs, LaunchDims, MemKind, ParamLayout,
};
use crate::error::{BackendError, Error, ErrorCode, Result, fail};
use crate::handle::{Allocation, Device, DevicePtr, Event, Global, Kernel, Platform, Program, Queue};

use super::{DeviceEntry, EventEntry, KernelEntry, NO_SLOT, ProgramEntry, QueueEntry, Runtime, Tables, teardown};

/// What `platform_info` tells about a platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlatformInfo {
    /// The backend's kind.
    pub kind: crate::BackendKind,
    /// The backend's name.
    pub name: &'static str,
    /// Number of devices (0 when absent or unavailable).
    pub device_count: u32,
    /// Why the platform cannot be used, or `None` when it is present: code `NotPresent` when it
    /// is absent (no driver or no device), any other code when its driver is present but failed
    /// to initialise (unavailable; see `is_unavailable`).
    pub absent: Option<BackendError>,
    /// What its devices can do.
    pub capabilities: crate::Capabilities,
}

impl PlatformInfo {
    /// The driver is present but failed to initialise (the error is in `absent`).
    pub fn is_unavailable(&self) -> bool {
        self.absent.is_some_and(|e| e.code != ErrorCode::NotPresent)
    }
}

/// A resolved device: its backend, the backend's ordinal and its slot in the device table.
#[derive(Clone, Copy)]
struct Dev {
    backend: &'static dyn Backend,
    ordinal: u32,
    slot: u32,
}

const MAX_SIZE: usize = isize::MAX as usize;

fn check_size(size: usize) -> Result<()> {
    match size {
        0 => fail(ErrorCode::InvalidSize, "size is zero"),
        s if s > MAX_SIZE => fail(ErrorCode::InvalidSize, "size is larger than isize::MAX"),
        _ => Ok(()),
    }
}

impl Runtime {
    #[inline]
    fn dev_at(&self, t: &Tables, slot: u32) -> Dev {
        let d = t.devices.at(slot);
        Dev { backend: d.driver, ordinal: d.ordinal, slot }
    }

    #[inline]
    fn dev(&self, t: &Tables, device: Device) -> Result<Dev> {
        let slot = t.devices.resolve(device.0)?;
        Ok(self.dev_at(t, slot))
    }

    #[inline]
    fn queue(&self, t: &Tables, queue: Queue) -> Result<(Dev, u64)> {
        let q = t.queues.get(queue.0)?;
        Ok((self.dev_at(t, q.device), q.raw))
    }

    #[inline]
    fn event(&self, t: &Tables, event: Event) -> Result<(Dev, u64)> {
        let e = t.events.get(event.0)?;
        Ok((self.dev_at(t, e.device), e.raw))
    }

    // ---- platforms and devices ------------------------------------------------------------

    /// Number of platforms (one per registered backend, present or absent).
    pub fn platform_count(&self) -> Result<u32> {
        self.with_shared(|t| Ok(t.platforms.len() as u32))
    }

    /// The platform at `index` in registration order.
    pub fn platform(&self, index: u32) -> Result<Platform> {
        self.with_shared(|t| {
            let slot = t.platforms.iter_oldest_first().nth(index as usize);
            match slot {
                Some(s) => Ok(Platform(t.platforms.handle_at(s))),
                None => fail(ErrorCode::InvalidValue, "platform index out of range"),
            }
        })
    }

    /// Kind, name, device count and absence reason of a platform.
    pub fn platform_info(&self, platform: Platform) -> Result<PlatformInfo> {
        self.with_shared(|t| {
            let p = t.platforms.get(platform.0)?;
            let backend = self.backends[usize::from(p.backend)];
            Ok(PlatformInfo {
                kind: backend.kind(),
                name: backend.name(),
                device_count: p.devices.len() as u32,
                absent: p.absent,
                capabilities: backend.capabilities(),
            })
        })
    }

    /// The device at `index` of a platform.
    pub fn device(&self, platform: Platform, index: u32) -> Result<Device> {
        self.with_shared(|t| {
            let p = t.platforms.get(platform.0)?;
            match p.devices.get(index as usize) {
                Some(&slot) => Ok(Device(t.devices.handle_at(slot))),
                None => fail(ErrorCode::InvalidValue, "device index out of range"),
            }
        })
    }

    /// The platform a device belongs to.
    pub fn device_platform(&self, device: Device) -> Result<Platform> {
        self.with_shared(|t| {
            let d = t.devices.get(device.0)?;
            Ok(Platform(t.platforms.handle_at(d.platform)))
        })
    }

    /// A device property. The launch limits (`MaxThreadsPerBlock`, `MaxBlockDim*`,
    /// `MaxGridDim*`, `MaxThreadsPerLaunch`) are the ones launches are checked against.
    pub fn device_info(&self, device: Device, key: DeviceInfo) -> Result<InfoValue> {
        self.with_shared(|t| {
            let d = self.dev(t, device)?;
            if let Some(v) = t.devices.at(d.slot).limits.info(key) {
                return Ok(v);
            }
            Ok(d.backend.device_info(d.ordinal, key)?)
        })
    }

    // ---- memory ---------------------------------------------------------------------------

    /// Allocates `size` bytes of `kind` memory on a device; returns its address.
    pub fn mem_alloc(&self, device: Device, kind: MemKind, size: usize) -> Result<DevicePtr> {
        self.mem_allocate(device, kind, size).map(|(_, ptr)| ptr)
    }

    /// Allocates as `mem_alloc` does; returns the allocation's handle and its address. The
    /// handle names this allocation and no other: `mem_release` of it after the memory was freed
    /// (by handle, by address or by a teardown) is `InvalidHandle`, even when the backend has
    /// since handed the same address to a new allocation.
    pub fn mem_allocate(&self, device: Device, kind: MemKind, size: usize) -> Result<(Allocation, DevicePtr)> {
        self.with_exclusive(|t| {
            check_size(size)?;
            if let MemKind::Registered | MemKind::Global = kind {
                // Not allocation kinds: `ORDO_MEM_REGISTERED` and `ORDO_MEM_GLOBAL` are as unknown
                // to `mem_alloc` as they were before registration and globals existed.
                return fail(
                    ErrorCode::InvalidEnumeration,
                    "registered memory and program globals are not allocation kinds",
                );
            }
            let d = self.dev(t, device)?;
            if t.allocations.slots.is_full() {
                return fail(ErrorCode::OutOfResources, "allocation table is full (ORDO_MAX_ALLOCATIONS)");
            }
            let base = d.backend.mem_alloc(d.ordinal, kind, size)?;
            let entry = AllocEntry { base, size, device: d.slot, kind, owner: NO_OWNER };
            match t.allocations.insert(entry) {
                Ok(h) => Ok((Allocation(h), DevicePtr(base))),
                Err(e) => {
                    // SAFETY: the allocation the backend just returned, with its kind and size.
                    let _ = unsafe { d.backend.mem_free(d.ordinal, kind, base, size) };
                    Err(e)
                }
            }
        })
    }

    /// Frees the allocation a handle from `mem_allocate` names. `InvalidHandle` when it was freed
    /// already (by handle, by address or by a teardown), comes from another runtime, or names a
    /// program's global variable; `NullHandle` for the null handle. Nothing changes on error.
    pub fn mem_release(&self, allocation: Allocation) -> Result<()> {
        self.with_exclusive(|t| {
            let slot = t.allocations.slots.resolve(allocation.0)?;
            if t.allocations.slots.at(slot).owner != NO_OWNER {
                return fail(ErrorCode::InvalidHandle, "handle names a program's global variable, not an allocation");
            }
            let d = self.dev_at(t, t.allocations.slots.at(slot).device);
            let m = t.allocations.remove_at(slot);
            // SAFETY: a live allocation of this device (found by its handle), removed from the
            // table first so it is never passed again.
            Ok(unsafe { d.backend.mem_free(d.ordinal, m.kind, m.base, m.size) }?)
        })
    }

    /// The address, size, kind and device of the live allocation a handle names (the same
    /// errors as `mem_release` for a bad handle).
    pub fn allocation_info(&self, allocation: Allocation) -> Result<(DevicePtr, usize, MemKind, Device)> {
        self.with_shared(|t| {
            let m = t.allocations.slots.get(allocation.0)?;
            if m.owner != NO_OWNER {
                return fail(ErrorCode::InvalidHandle, "handle names a program's global variable, not an allocation");
            }
            Ok((DevicePtr(m.base), m.size, m.kind, Device(t.devices.handle_at(m.device))))
        })
    }

    /// Registers `size` bytes of existing host memory at `ptr` with a device: page-locked and
    /// mapped for it at the same address, named by that address like an allocation (kind
    /// `Registered`: copies, fills and kernels may use it; `mem_info` finds it) until `mem_free`
    /// of `ptr` unregisters it, or the final teardown does (with the device's memory). Errors:
    /// `NullPointer`, `InvalidSize` (0 or above `isize::MAX`), the device's handle errors,
    /// `InvalidArgument` when the range overlaps an allocation or registered range,
    /// `OutOfResources` when the allocation table is full, `Unsupported` from backends that
    /// cannot register host memory (the host backend), and the driver's errors.
    ///
    /// # Safety
    /// `[ptr, ptr + size)` is host memory that stays valid until it is unregistered or the
    /// runtime is torn down.
    pub unsafe fn host_register(&self, device: Device, ptr: *mut u8, size: usize) -> Result<DevicePtr> {
        self.with_exclusive(|t| {
            if ptr.is_null() {
                return fail(ErrorCode::NullPointer, "host memory to register is null");
            }
            check_size(size)?;
            let d = self.dev(t, device)?;
            if t.allocations.slots.is_full() {
                return fail(ErrorCode::OutOfResources, "allocation table is full (ORDO_MAX_ALLOCATIONS)");
            }
            let base = ptr as u64;
            if t.allocations.overlaps(base, size) {
                return fail(ErrorCode::InvalidArgument, "the range overlaps memory ordo knows already");
            }
            // SAFETY: the caller's contract; the table holds no range containing its start.
            unsafe { d.backend.host_register(d.ordinal, base, size) }?;
            let entry = AllocEntry { base, size, device: d.slot, kind: MemKind::Registered, owner: NO_OWNER };
            if let Err(e) = t.allocations.insert(entry) {
                // SAFETY: the range just registered, unregistered once.
                let _ = unsafe { d.backend.mem_free(d.ordinal, MemKind::Registered, base, size) };
                return Err(e);
            }
            Ok(DevicePtr(base))
        })
    }

    /// Frees the allocation whose base address is `ptr`.
    pub fn mem_free(&self, ptr: DevicePtr) -> Result<()> {
        self.with_exclusive(|t| {
            let slot = t.allocations.find_base(ptr.0)?;
            if t.allocations.slots.at(slot).kind == MemKind::Global {
                return fail(
                    ErrorCode::InvalidArgument,
                    "the address is a program's global variable: unload the program",
                );
            }
            let d = self.dev_at(t, t.allocations.slots.at(slot).device);
            let m = t.allocations.remove_at(slot);
            // SAFETY: a live allocation of this device (found by its base), removed from the
            // table first so it is never passed again.
            Ok(unsafe { d.backend.mem_free(d.ordinal, m.kind, m.base, m.size) }?)
        })
    }

    /// The base address, size, kind and device of the allocation containing `ptr`.
    pub fn mem_info(&self, ptr: DevicePtr) -> Result<(DevicePtr, usize, MemKind, Device)> {
        self.with_shared(|t| {
            let slot = t.allocations.find_range(ptr.0, 1)?;
            let m = t.allocations.slots.at(slot);
            Ok((DevicePtr(m.base), m.size, m.kind, Device(t.devices.handle_at(m.device))))
        })
    }

    /// The device whose allocation holds `[addr, addr + size)` (`size > 0`).
    fn range_device(&self, t: &Tables, addr: u64, size: usize) -> Result<Dev> {
        check_size(size)?;
        let slot = t.allocations.find_range(addr, size)?;
        Ok(self.dev_at(t, t.allocations.slots.at(slot).device))
    }

    /// Checks that a queue, when given, belongs to the device `d` works on; its raw value.
    fn queue_for(d: Dev, queue: Option<(Dev, u64)>) -> Result<Option<u64>> {
        match queue {
            None => Ok(None),
            Some((qd, _)) if !core::ptr::addr_eq(qd.backend, d.backend) => {
                fail(ErrorCode::InvalidArgument, "queue and memory belong to different platforms")
            }
            Some((qd, _)) if qd.slot != d.slot => {
                fail(ErrorCode::InvalidArgument, "queue and memory belong to different devices")
            }
            Some((_, raw)) => Ok(Some(raw)),
        }
    }

    /// Copies `size` bytes between host and device, or device and device, given raw addresses
    /// (the C ABI's `ordo_memcpy`); with a queue, asynchronously on it, else it returns when the
    /// copy is complete and starts after all work submitted earlier to the device's queues.
    ///
    /// The device side (both sides for device-to-device) must lie in one live allocation; both
    /// ends and the queue must belong to one device: a copy between platforms is
    /// `InvalidArgument`, one between two devices of a platform is `Unsupported` (copy through
    /// host memory), either before any backend call. A zero-byte copy succeeds and does nothing
    /// (its addresses are not looked at; a queue, when given, is still checked).
    ///
    /// # Safety
    /// Host pointers must be valid for `size` bytes; with a queue, until the copy completes.
    pub unsafe fn memcpy(&self, kind: CopyKind, dst: u64, src: u64, size: usize, queue: Option<Queue>) -> Result<()> {
        // SAFETY: forwarded contract.
        self.with_shared(|t| unsafe { self.copy_in(t, kind, dst, src, size, queue) })
    }

    /// `memcpy`'s body, in a shared section the caller holds.
    ///
    /// # Safety
    /// As `memcpy`.
    unsafe fn copy_in(
        &self,
        t: &Tables,
        kind: CopyKind,
        dst: u64,
        src: u64,
        size: usize,
        queue: Option<Queue>,
    ) -> Result<()> {
        let q = queue.map(|q| self.queue(t, q)).transpose()?;
        if size == 0 {
            return Ok(());
        }
        if dst == 0 || src == 0 {
            return fail(ErrorCode::NullPointer, "copy source or destination is null");
        }
        let d = match kind {
            CopyKind::HostToDevice => self.range_device(t, dst, size)?,
            CopyKind::DeviceToHost => self.range_device(t, src, size)?,
            CopyKind::DeviceToDevice => {
                let from = self.range_device(t, src, size)?;
                let to = self.range_device(t, dst, size)?;
                if !core::ptr::addr_eq(from.backend, to.backend) {
                    return fail(ErrorCode::InvalidArgument, "copy between memory of two platforms");
                }
                if from.slot != to.slot {
                    return fail(ErrorCode::Unsupported, "copy between two devices (copy through host memory)");
                }
                to
            }
        };
        let q = Self::queue_for(d, q)?;
        // SAFETY: the device ranges lie in live allocations of this device, the queue is a live
        // queue of it; host ranges are the caller's contract.
        Ok(unsafe { d.backend.memcpy(d.ordinal, kind, dst, src, size, q) }?)
    }

    /// Copies `size` bytes between memory named with its device (liboffload's `olMemcpy`):
    /// `None` names plain host memory, which must not lie in device memory ordo knows
    /// (`InvalidArgument`); a device side must start in an allocation of that very device
    /// (`InvalidArgument` when it lies in none or in another device's). Host to host is copied
    /// on the calling thread and takes no queue (`InvalidArgument` with one); everything else is
    /// `memcpy`, checked in the same pass over the tables. A zero-byte copy checks no address.
    ///
    /// # Safety
    /// As `memcpy`; host to host, both ranges are valid for `size` bytes.
    pub unsafe fn memcpy_between(
        &self,
        dst: u64,
        dst_device: Option<Device>,
        src: u64,
        src_device: Option<Device>,
        size: usize,
        queue: Option<Queue>,
    ) -> Result<()> {
        let kind = match (dst_device, src_device) {
            (Some(_), None) => Some(CopyKind::HostToDevice),
            (None, Some(_)) => Some(CopyKind::DeviceToHost),
            (Some(_), Some(_)) => Some(CopyKind::DeviceToDevice),
            (None, None) => None,
        };
        self.with_shared(|t| {
            // A zero-byte copy checks no address.
            for (addr, named) in [(dst, dst_device), (src, src_device)].into_iter().filter(|_| size != 0) {
                let found = t.allocations.find_range(addr, 1).map(|slot| t.allocations.slots.at(slot));
                match (named, found) {
                    (None, Ok(m)) if matches!(m.kind, MemKind::Device | MemKind::Global) => {
                        return fail(ErrorCode::InvalidArgument, "a device pointer is named with the host device");
                    }
                    (None, _) => {}
                    (Some(d), Ok(m)) if m.device != self.dev(t, d)?.slot => {
                        return fail(ErrorCode::InvalidArgument, "a pointer is not memory of the device named with it");
                    }
                    (Some(_), Ok(_)) => {}
                    (Some(_), Err(e)) if e.code == ErrorCode::NotFound => {
                        return fail(ErrorCode::InvalidArgument, "a device pointer is in no allocation of its device");
                    }
                    (Some(_), Err(e)) => return Err(e),
                }
            }
            match kind {
                // SAFETY: forwarded contract.
                Some(kind) => unsafe { self.copy_in(t, kind, dst, src, size, queue) },
                None if queue.is_some() => {
                    fail(ErrorCode::InvalidArgument, "a copy on a queue needs a non-host device")
                }
                None => {
                    // SAFETY: two host ranges of `size` bytes (the caller's contract).
                    unsafe { crate::host::copy_addresses(dst, src, size) };
                    Ok(())
                }
            }
        })
    }

    /// Copies `src` into device memory at `dst` and waits for it.
    pub fn copy_to_device(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        // SAFETY: `src` is valid for its length for the whole (synchronous) copy.
        unsafe { self.memcpy(CopyKind::HostToDevice, dst.0, src.as_ptr() as u64, src.len(), None) }
    }

    /// Copies device memory at `src` into `dst` and waits for it.
    pub fn copy_from_device(&self, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        // SAFETY: `dst` is valid for its length for the whole (synchronous) copy.
        unsafe { self.memcpy(CopyKind::DeviceToHost, dst.as_mut_ptr() as u64, src.0, dst.len(), None) }
    }

    /// Copies `size` bytes between device allocations; with a queue, asynchronously.
    pub fn copy_device(&self, dst: DevicePtr, src: DevicePtr, size: usize, queue: Option<Queue>) -> Result<()> {
        // SAFETY: both sides are device ranges that the runtime validates.
        unsafe { self.memcpy(CopyKind::DeviceToDevice, dst.0, src.0, size, queue) }
    }

    /// Enqueues a host-to-device copy of `size` bytes from `src` on `queue`.
    ///
    /// # Safety
    /// `src` must stay valid and unchanged for `size` bytes until the queue has passed the copy.
    pub unsafe fn copy_to_device_async(&self, queue: Queue, dst: DevicePtr, src: *const u8, size: usize) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.memcpy(CopyKind::HostToDevice, dst.0, src as u64, size, Some(queue)) }
    }

    /// Enqueues a device-to-host copy of `size` bytes into `dst` on `queue`.
    ///
    /// # Safety
    /// `dst` must stay valid for `size` bytes, and unread, until the queue has passed the copy.
    pub unsafe fn copy_from_device_async(&self, queue: Queue, dst: *mut u8, src: DevicePtr, size: usize) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.memcpy(CopyKind::DeviceToHost, dst as u64, src.0, size, Some(queue)) }
    }

    /// Writes `value` `count` times from `dst`; with a queue, asynchronously, else ordered like
    /// a copy without a queue. A zero-count fill succeeds and does nothing (a queue, when given,
    /// is still checked).
    pub fn fill(&self, dst: DevicePtr, value: FillValue, count: usize, queue: Option<Queue>) -> Result<()> {
        self.with_shared(|t| {
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
            // SAFETY: `count` aligned elements from `dst` lie in a live allocation of this device;
            // the queue is a live queue of it.
            Ok(unsafe { d.backend.fill(d.ordinal, dst.0, value, count, q) }?)
        })
    }

    /// Writes the bytes of `pattern` repeatedly over `size` bytes from `dst` (liboffload's
    /// `olMemFill`); with a queue, asynchronously, else ordered like a copy without a queue.
    /// `dst` need not be aligned. Errors: `InvalidSize` for an empty pattern or a `size` that is
    /// not a multiple of its length; `Unsupported` from backends that cannot write the pattern
    /// (the AMDGPU backend writes 1-, 2- and 4-byte patterns only); then as `fill`. A zero size
    /// succeeds and does nothing (a queue, when given, is still checked).
    pub fn fill_pattern(&self, dst: DevicePtr, pattern: &[u8], size: usize, queue: Option<Queue>) -> Result<()> {
        self.with_shared(|t| {
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
            // SAFETY: `size` bytes from `dst` lie in a live allocation of this device, `size` is a
            // non-zero multiple of the non-empty pattern; the queue is a live queue of it.
            Ok(unsafe { d.backend.fill_pattern(d.ordinal, dst.0, pattern, size / pattern.len(), q) }?)
        })
    }

    // ---- queues ---------------------------------------------------------------------------

    /// The backend's own value for a queue (CUDA: its `CUstream`; the host backend: a counter),
    /// for interoperation with the driver. It names the queue only while the queue lives; work
    /// the caller puts on it directly is outside ordo's bookkeeping.
    pub fn queue_native(&self, queue: Queue) -> Result<u64> {
        self.with_shared(|t| self.queue(t, queue).map(|(_, raw)| raw))
    }

    /// Enqueues `f(data)` on a queue (liboffload's `olLaunchHostFunction`): it runs on the host
    /// after all work submitted to the queue before it, and work submitted after it waits for it
    /// to return. On the host backend it runs before this call returns. `Unsupported` from
    /// backends without it (AMDGPU).
    ///
    /// # Safety
    /// `f(data)` is sound to call once from any thread; it must not call ordo or the driver
    /// (CUDA forbids driver calls there; ordo calls that would wait for it fail with `Busy` on
    /// the host backend).
    pub unsafe fn queue_host_function(&self, queue: Queue, f: HostFn, data: *mut core::ffi::c_void) -> Result<()> {
        self.with_shared(|t| {
            let (d, q) = self.queue(t, queue)?;
            // SAFETY: a live queue of this device; the function's contract is the caller's.
            Ok(unsafe { d.backend.queue_host_function(d.ordinal, q, f, data) }?)
        })
    }

    /// Creates an in-order queue on a device.
    pub fn queue_create(&self, device: Device) -> Result<Queue> {
        self.create_queue(device, false)
    }

    /// Creates a queue whose work later calls *without* a queue do not wait for (CUDA: a
    /// non-blocking stream), for callers that synchronise their queues themselves, as MLIR code
    /// does: launches on it avoid the driver's bookkeeping for the legacy stream. Everything else
    /// is as `queue_create` (the teardown synchronises it like any queue).
    pub fn queue_create_independent(&self, device: Device) -> Result<Queue> {
        self.create_queue(device, true)
    }

    fn create_queue(&self, device: Device, independent: bool) -> Result<Queue> {
        self.with_exclusive(|t| {
            let d = self.dev(t, device)?;
            if t.queues.is_full() {
                return fail(ErrorCode::OutOfResources, "queue table is full (ORDO_MAX_QUEUES)");
            }
            let raw = if independent {
                d.backend.queue_create_independent(d.ordinal)?
            } else {
                d.backend.queue_create(d.ordinal)?
            };
            match t.queues.insert(QueueEntry { device: d.slot, raw }) {
                Ok(h) => Ok(Queue(h)),
                Err(_) => {
                    // SAFETY: the queue the backend just returned; never passed again.
                    let _ = unsafe { d.backend.queue_destroy(d.ordinal, raw) };
                    fail(ErrorCode::OutOfResources, "queue table is full (ORDO_MAX_QUEUES)")
                }
            }
        })
    }

    /// Destroys a queue (without waiting for its work).
    pub fn queue_destroy(&self, queue: Queue) -> Result<()> {
        self.with_exclusive(|t| {
            let (d, raw) = self.queue(t, queue)?;
            t.queues.remove(queue.0)?;
            // SAFETY: a live queue of this device, removed from the table so never passed again.
            Ok(unsafe { d.backend.queue_destroy(d.ordinal, raw) }?)
        })
    }

    /// Waits until all work on a queue has finished.
    pub fn queue_synchronize(&self, queue: Queue) -> Result<()> {
        self.with_shared(|t| {
            let (d, raw) = self.queue(t, queue)?;
            // SAFETY: a live queue of this device.
            Ok(unsafe { d.backend.queue_synchronize(d.ordinal, raw) }?)
        })
    }

    /// Whether all work on a queue has finished.
    pub fn queue_query(&self, queue: Queue) -> Result<bool> {
        self.with_shared(|t| {
            let (d, raw) = self.queue(t, queue)?;
            // SAFETY: a live queue of this device.
            Ok(unsafe { d.backend.queue_query(d.ordinal, raw) }?)
        })
    }

    /// The device an event belongs to.
    pub fn event_device(&self, event: Event) -> Result<Device> {
        self.with_shared(|t| {
            let e = t.events.get(event.0)?;
            Ok(Device(t.devices.handle_at(e.device)))
        })
    }

    /// The device a queue belongs to.
    pub fn queue_device(&self, queue: Queue) -> Result<Device> {
        self.with_shared(|t| {
            let q = t.queues.get(queue.0)?;
            Ok(Device(t.devices.handle_at(q.device)))
        })
    }

    /// Makes later work on `queue` wait until `event` has completed.
    pub fn queue_wait_event(&self, queue: Queue, event: Event) -> Result<()> {
        self.with_shared(|t| {
            let (d, q) = self.queue(t, queue)?;
            let (ed, e) = self.event(t, event)?;
            if t.devices.at(ed.slot).backend != t.devices.at(d.slot).backend {
                return fail(ErrorCode::InvalidArgument, "event and queue belong to different platforms");
            }
            // SAFETY: a live queue of this device and a live event of the same backend.
            Ok(unsafe { d.backend.queue_wait_event(d.ordinal, q, e) }?)
        })
    }

    // ---- events ---------------------------------------------------------------------------

    /// Creates an event on a device.
    pub fn event_create(&self, device: Device) -> Result<Event> {
        self.with_exclusive(|t| {
            let d = self.dev(t, device)?;
            if t.events.is_full() {
                return fail(ErrorCode::OutOfResources, "event table is full (ORDO_MAX_EVENTS)");
            }
            let raw = d.backend.event_create(d.ordinal)?;
            match t.events.insert(EventEntry { device: d.slot, raw }) {
                Ok(h) => Ok(Event(h)),
                Err(_) => {
                    // SAFETY: the event the backend just returned; never passed again.
                    let _ = unsafe { d.backend.event_destroy(d.ordinal, raw) };
                    fail(ErrorCode::OutOfResources, "event table is full (ORDO_MAX_EVENTS)")
                }
            }
        })
    }

    /// Destroys an event.
    pub fn event_destroy(&self, event: Event) -> Result<()> {
        self.with_exclusive(|t| {
            let (d, raw) = self.event(t, event)?;
            t.events.remove(event.0)?;
            // SAFETY: a live event of this device, removed from the table so never passed again.
            Ok(unsafe { d.backend.event_destroy(d.ordinal, raw) }?)
        })
    }

    /// Records an event on a queue of the same device.
    pub fn event_record(&self, event: Event, queue: Queue) -> Result<()> {
        self.with_shared(|t| {
            let (ed, e) = self.event(t, event)?;
            let (qd, q) = self.queue(t, queue)?;
            if ed.slot != qd.slot {
                return fail(ErrorCode::InvalidArgument, "event and queue belong to different devices");
            }
            // SAFETY: a live event and a live queue of this device.
            Ok(unsafe { ed.backend.event_record(ed.ordinal, e, q) }?)
        })
    }

    /// Waits until an event has completed (an event never recorded counts as completed).
    pub fn event_synchronize(&self, event: Event) -> Result<()> {
        self.with_shared(|t| {
            let (d, e) = self.event(t, event)?;
            // SAFETY: a live event of this device.
            Ok(unsafe { d.backend.event_synchronize(d.ordinal, e) }?)
        })
    }

    /// Whether an event has completed.
    pub fn event_query(&self, event: Event) -> Result<bool> {
        self.with_shared(|t| {
            let (d, e) = self.event(t, event)?;
            // SAFETY: a live event of this device.
            Ok(unsafe { d.backend.event_query(d.ordinal, e) }?)
        })
    }

    /// Milliseconds between two completed events of the same device.
    pub fn event_elapsed_ms(&self, start: Event, end: Event) -> Result<f32> {
        self.with_shared(|t| {
            let (sd, s) = self.event(t, start)?;
            let (ed, e) = self.event(t, end)?;
            if sd.slot != ed.slot {
                return fail(ErrorCode::InvalidArgument, "events belong to different devices");
            }
            // SAFETY: two live events of this device.
            Ok(unsafe { sd.backend.event_elapsed_ms(sd.ordinal, s, e) }?)
        })
    }

    // ---- programs and kernels -------------------------------------------------------------

    /// Loads a program image on a device. The image is copied (by the backend) as needed and
    /// need not outlive the call.
    pub fn program_load(&self, device: Device, image: &[u8]) -> Result<Program> {
        self.with_exclusive(|t| {
            if image.is_empty() {
                return fail(ErrorCode::InvalidSize, "program image is empty");
            }
            let d = self.dev(t, device)?;
            if t.programs.is_full() {
                return fail(ErrorCode::OutOfResources, "program table is full (ORDO_MAX_PROGRAMS)");
            }
            let raw = d.backend.program_load(d.ordinal, image)?;
            match t.programs.insert(ProgramEntry { device: d.slot, raw, first_kernel: NO_SLOT, globals: 0 }) {
                Ok(h) => Ok(Program(h)),
                Err(_) => {
                    // SAFETY: the program the backend just returned; never passed again.
                    let _ = unsafe { d.backend.program_unload(d.ordinal, raw) };
                    fail(ErrorCode::OutOfResources, "program table is full (ORDO_MAX_PROGRAMS)")
                }
            }
        })
    }

    /// Unloads a program; its kernel handles go stale with it.
    pub fn program_unload(&self, program: Program) -> Result<()> {
        self.with_exclusive(|t| {
            let slot = t.programs.resolve(program.0)?;
            let d = self.dev_at(t, t.programs.at(slot).device);
            let entry = t.programs.remove_at(slot);
            teardown::forget_kernels(t, entry.first_kernel);
            if entry.globals > 0 {
                teardown::forget_globals(t, slot);
            }
            // SAFETY: a live program of this device, removed from the table (with its kernels)
            // so never passed again.
            Ok(unsafe { d.backend.program_unload(d.ordinal, entry.raw) }?)
        })
    }

    /// The kernel called `name` in a program; the same name gives the same handle.
    pub fn kernel_get(&self, program: Program, name: &str) -> Result<Kernel> {
        self.with_exclusive(|t| {
            if name.is_empty() || name.contains('\0') {
                return fail(ErrorCode::InvalidArgument, "kernel name is empty or contains NUL");
            }
            let slot = t.programs.resolve(program.0)?;
            let (device, raw_program, first) = {
                let p = t.programs.at(slot);
                (p.device, p.raw, p.first_kernel)
            };
            let d = self.dev_at(t, device);
            // SAFETY: a live program of this device; the name is non-empty without NUL.
            let raw = unsafe { d.backend.kernel_get(d.ordinal, raw_program, name) }?;
            let mut k = first;
            while k != NO_SLOT {
                let entry = t.kernels.at(k);
                if entry.raw == raw {
                    return Ok(Kernel(t.kernels.handle_at(k)));
                }
                k = entry.next;
            }
            let h = t
                .kernels
                .insert(KernelEntry { program: slot, device, raw, next: first })
                .map_err(|_| Error::new(ErrorCode::OutOfResources, "kernel table is full (ORDO_MAX_KERNELS)"))?;
            t.programs.at_mut(slot).first_kernel = h.index() as u32;
            Ok(Kernel(h))
        })
    }

    /// The program a kernel belongs to.
    pub fn kernel_program(&self, kernel: Kernel) -> Result<Program> {
        self.with_shared(|t| {
            let k = t.kernels.get(kernel.0)?;
            Ok(Program(t.programs.handle_at(k.program)))
        })
    }

    /// How many parameters a kernel takes, from the backend (CUDA: `cuFuncGetParamInfo`;
    /// `Unsupported` where the backend cannot tell, as the host backend).
    pub fn kernel_param_count(&self, kernel: Kernel) -> Result<usize> {
        self.with_shared(|t| {
            let k = t.kernels.get(kernel.0)?;
            let d = self.dev_at(t, k.device);
            // SAFETY: a live kernel of this device.
            Ok(unsafe { d.backend.kernel_param_count(d.ordinal, k.raw) }?)
        })
    }

    /// The backend's own value for a kernel (CUDA: its `CUfunction`; the host backend: its
    /// index), for interoperation with the driver (attributes, launches ordo does not make). It
    /// names the kernel only while the kernel's program is loaded.
    pub fn kernel_native(&self, kernel: Kernel) -> Result<u64> {
        self.with_shared(|t| Ok(t.kernels.get(kernel.0)?.raw))
    }

    /// A kernel's parameter layout: the offset and size of each parameter in a packed argument
    /// buffer, in order (CUDA: `cuFuncGetParamInfo`, drivers 12.4 and up; AMDGPU: the code
    /// object's metadata; the host backend: the sizes its kernels declare, in C struct layout).
    pub fn kernel_param_layout(&self, kernel: Kernel) -> Result<ParamLayout> {
        self.with_shared(|t| {
            let k = t.kernels.get(kernel.0)?;
            let d = self.dev_at(t, k.device);
            let mut layout = ParamLayout::new();
            // SAFETY: a live kernel of this device.
            unsafe { d.backend.kernel_param_layout(d.ordinal, k.raw, &mut layout) }?;
            Ok(layout)
        })
    }

    /// The block size (threads per block) with the highest occupancy for a kernel using
    /// `dynamic_shared` bytes of dynamic shared memory per block (CUDA:
    /// `cuOccupancyMaxPotentialBlockSize`; the host backend, which runs one thread at a time: 1).
    /// `Unsupported` where the backend cannot tell (AMDGPU).
    pub fn kernel_optimal_block_size(&self, kernel: Kernel, dynamic_shared: usize) -> Result<u32> {
        self.with_shared(|t| {
            let k = t.kernels.get(kernel.0)?;
            let d = self.dev_at(t, k.device);
            // SAFETY: a live kernel of this device.
            Ok(unsafe { d.backend.kernel_optimal_block_size(d.ordinal, k.raw, dynamic_shared) }?)
        })
    }

    /// The global variable `name` of a program (CUDA: `cuModuleGetGlobal`): a handle, its
    /// address and its size. The range is registered as program-owned memory (`MemKind::Global`):
    /// copies, fills and `mem_info` accept addresses in it, `mem_free` refuses it, and it leaves
    /// with the program. The same name gives the same handle. Errors: `InvalidArgument` for an
    /// empty name or one with NUL, the program's handle errors, `NotFound` when the program has
    /// no such variable (host programs have none), `OutOfResources` when the allocation table is
    /// full, `Unsupported` from backends without globals (AMDGPU).
    pub fn program_global(&self, program: Program, name: &str) -> Result<(Global, DevicePtr, usize)> {
        self.with_exclusive(|t| {
            if name.is_empty() || name.contains('\0') {
                return fail(ErrorCode::InvalidArgument, "global variable name is empty or contains NUL");
            }
            let slot = t.programs.resolve(program.0)?;
            let (device, raw_program) = {
                let p = t.programs.at(slot);
                (p.device, p.raw)
            };
            let d = self.dev_at(t, device);
            // SAFETY: a live program of this device; the name is non-empty without NUL.
            let (base, size) = unsafe { d.backend.program_global(d.ordinal, raw_program, name) }?;
            if base == 0 || size == 0 {
                return fail(ErrorCode::NotFound, "the program's global variable has no storage");
            }
            if let Ok(a) = t.allocations.find_base(base) {
                let e = t.allocations.slots.at(a);
                if e.owner == slot && e.size == size {
                    return Ok((Global(t.allocations.slots.handle_at(a)), DevicePtr(base), size));
                }
            }
            if t.allocations.overlaps(base, size) {
                return fail(ErrorCode::BackendFailure, "the driver placed a global variable over known memory");
            }
            let h = t.allocations.insert(AllocEntry { base, size, device, kind: MemKind::Global, owner: slot })?;
            t.programs.at_mut(slot).globals += 1;
            Ok((Global(h), DevicePtr(base), size))
        })
    }

    /// The address, size and program of a global variable handle.
    pub fn global_info(&self, global: Global) -> Result<(DevicePtr, usize, Program)> {
        self.with_shared(|t| {
            let g = t.allocations.slots.get(global.0)?;
            // Only program globals' slots carry an owner; other allocations are not `Global`s.
            if g.owner == NO_OWNER {
                return fail(ErrorCode::InvalidHandle, "handle names an allocation, not a global variable");
            }
            Ok((DevicePtr(g.base), g.size, Program(t.programs.handle_at(g.owner))))
        })
    }

    /// Whether `image` is a program the device can load, checked without loading it
    /// (liboffload's `olIsValidBinary`): CUDA reads a PTX image's target and a cubin's
    /// architecture (a fatbin passes when its structure is sound: the driver picks its entry);
    /// the host backend compares program names. `InvalidSize` for an empty image, the device's
    /// handle errors, `Unsupported` where the backend cannot tell (AMDGPU).
    pub fn program_check(&self, device: Device, image: &[u8]) -> Result<bool> {
        self.with_shared(|t| {
            if image.is_empty() {
                return fail(ErrorCode::InvalidSize, "program image is empty");
            }
            let d = self.dev(t, device)?;
            Ok(d.backend.program_check(d.ordinal, image)?)
        })
    }

    /// Launches a kernel on a queue of the kernel's device in thread-block clusters of `cluster`
    /// blocks per dimension. Besides `launch`'s checks: `InvalidValue` when a cluster dimension
    /// is 0 or does not divide the grid's; `Unsupported` from backends without clusters (the host
    /// backend; CUDA devices below compute capability 9.0 answer with the driver's error).
    ///
    /// # Safety
    /// As `launch`.
    pub unsafe fn launch_cluster(
        &self,
        queue: Queue,
        kernel: Kernel,
        dims: &LaunchDims,
        cluster: [u32; 3],
        args: &KernelArgs<'_>,
    ) -> Result<()> {
        self.with_shared(|t| {
            let (d, q, k) = Self::launch_target(t, queue, kernel, dims)?;
            if cluster.iter().zip(dims.grid).any(|(&c, g)| c == 0 || g % c != 0) {
                return fail(ErrorCode::InvalidValue, "a cluster dimension is 0 or does not divide the grid's");
            }
            // SAFETY: a live queue and kernel of this device, dimensions within its limits and
            // divisible by the cluster's; the argument contract is the caller's.
            Ok(unsafe { d.driver.launch_cluster(d.ordinal, q, k, dims, cluster, args) }?)
        })
    }

    /// Launches a kernel on a queue of the kernel's device.
    ///
    /// # Safety
    /// Each argument pointer must point to a value of the kernel's parameter type, and the kernel
    /// must only access memory it may (e.g. pointers in its arguments must be large enough).
    #[inline]
    pub unsafe fn launch(&self, queue: Queue, kernel: Kernel, dims: &LaunchDims, args: &KernelArgs<'_>) -> Result<()> {
        self.with_shared(|t| {
            let (d, q, k) = Self::launch_target(t, queue, kernel, dims)?;
            // SAFETY: a live queue and kernel of this device, dimensions within its limits; the
            // argument contract is the caller's.
            Ok(unsafe { d.driver.launch(d.ordinal, q, k, dims, args) }?)
        })
    }

    /// As `launch`, and the queue must be on `device` (liboffload's `olLaunchKernel` names the
    /// device too): `InvalidArgument` otherwise, the device's handle errors for a bad `device`.
    ///
    /// # Safety
    /// As `launch`.
    #[inline]
    pub unsafe fn launch_on(
        &self,
        device: Device,
        queue: Queue,
        kernel: Kernel,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> Result<()> {
        self.with_shared(|t| {
            let (d, q, k) = Self::launch_target(t, queue, kernel, dims)?;
            if !core::ptr::eq(t.devices.get(device.0)?, d) {
                return fail(ErrorCode::InvalidArgument, "the queue is not on the given device");
            }
            // SAFETY: as in `launch`.
            Ok(unsafe { d.driver.launch(d.ordinal, q, k, dims, args) }?)
        })
    }

    /// What every launch checks: a live queue and a live kernel of one device, and dimensions
    /// within that device's limits. The device's entry and the backend's queue and kernel.
    #[inline(always)]
    fn launch_target<'t>(
        t: &'t Tables,
        queue: Queue,
        kernel: Kernel,
        dims: &LaunchDims,
    ) -> Result<(&'t DeviceEntry, u64, u64)> {
        let q = t.queues.get(queue.0)?;
        let k = t.kernels.get(kernel.0)?;
        if k.device != q.device {
            return fail(ErrorCode::InvalidArgument, "kernel and queue belong to different devices");
        }
        let d = t.devices.at(q.device);
        dims.validate(&d.limits)?;
        Ok((d, q.raw, k.raw))
    }
}
