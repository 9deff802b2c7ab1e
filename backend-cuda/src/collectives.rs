//! The CUDA backend's collectives: `Collectives` over NCCL (`nccl.rs`), and the queue
//! synchronise that watches a device's communicators. Depends on the backend (`super`), its
//! devices' contexts and `nccl`.

use ordo_core::{BackendResult, CollectiveCall, CollectiveLibrary, UniqueId};

use crate::{CudaBackend, nccl, queue};

impl CudaBackend {
    /// `queue_synchronize` on a device with communicators: polls the stream and their errors.
    ///
    /// # Safety
    /// A live queue of the device, whose context is current.
    pub(crate) unsafe fn synchronize_polling(&self, device: u32, q: u64) -> BackendResult<()> {
        // As the driver's default synchronisation on a host with more cores than GPUs: the
        // thread spins (yielding), so the collective's end is seen at once; the communicators'
        // errors are read every 1,024 polls (well under a millisecond).
        let mut polls = 0u32;
        let deadline = std::time::Instant::now() + nccl::timeout();
        loop {
            // SAFETY: forwarded contract.
            if unsafe { queue::queue_query(q) }? {
                // Its work ended: a collective among it completed (one whose peer failed does
                // not end until the error aborts it, below).
                return Ok(());
            }
            polls = polls.wrapping_add(1);
            if polls % 1024 == 0 {
                let checked = self.nccl.check_device(device).and_then(|()| {
                    if std::time::Instant::now() < deadline {
                        return Ok(());
                    }
                    let e = ordo_core::BackendError::new(
                        ordo_core::ErrorCode::Timeout,
                        0,
                        "NCCL: the queue's work did not end within ORDO_NCCL_TIMEOUT_MS; the device's communicators were aborted",
                    );
                    self.nccl.abort_device(device, e);
                    Err(e)
                });
                if let Err(e) = checked {
                    // The aborted communicators' kernels end; what else the queue holds finishes.
                    // SAFETY: forwarded contract.
                    let _ = unsafe { queue::queue_synchronize(q) };
                    return Err(e);
                }
            }
            std::thread::yield_now();
        }
    }

    /// Runs `f` with `device`'s context current (NCCL reads the current device); as a launch,
    /// no driver call when the thread's record says the context is current already.
    fn with_device(&self, device: u32, f: &mut dyn FnMut() -> BackendResult<()>) -> BackendResult<()> {
        let _program_context = self.devices.make_current_cached(device)?;
        f()
    }
}

impl ordo_core::Collectives for CudaBackend {
    fn library(&self) -> BackendResult<CollectiveLibrary> {
        nccl::library()
    }

    unsafe fn comm_create_all(&self, devices: &[u32], out: &mut [u64]) -> BackendResult<()> {
        nccl::library()?;
        nccl::create_all(&self.nccl, devices, out, &|d, f| self.with_device(d, f))
    }

    fn unique_id(&self) -> BackendResult<UniqueId> {
        nccl::unique_id()
    }

    unsafe fn comm_create_rank(
        &self,
        device: u32,
        id: &UniqueId,
        rank: u32,
        size: u32,
        timeout_ms: u32,
    ) -> BackendResult<u64> {
        nccl::library()?;
        let _program_context = self.devices.make_current(device)?;
        nccl::create_rank(&self.nccl, device, id, rank, size, timeout_ms)
    }

    unsafe fn collectives(&self, calls: &[CollectiveCall]) -> BackendResult<()> {
        nccl::collectives(calls, &|d, f| self.with_device(d, f))
    }

    unsafe fn comm_native(&self, _device: u32, comm: u64) -> u64 {
        nccl::native(comm)
    }

    unsafe fn comm_async_error(&self, device: u32, _comm: u64) -> BackendResult<()> {
        self.nccl.check_device(device)
    }

    unsafe fn comm_finalize(&self, comms: &[(u32, u64)]) {
        nccl::finalize(comms, &|d, f| {
            let _program_context = self.devices.make_current_for_release(d)?;
            f()
        })
    }

    unsafe fn comm_destroy(&self, device: u32, comm: u64) -> BackendResult<()> {
        let current = self.devices.make_current_for_release(device);
        // When the driver is gone, NCCL is not called (the record is freed, the communicator is
        // the process's exit's to end).
        match current {
            // SAFETY: forwarded contract.
            Ok(_program_context) => unsafe { nccl::destroy(&self.nccl, comm, false) },
            Err(e) => {
                // SAFETY: forwarded contract.
                unsafe { nccl::forget_one(&self.nccl, comm) };
                Err(e)
            }
        }
    }

    unsafe fn comm_abort(&self, device: u32, comm: u64) -> BackendResult<()> {
        let _program_context = self.devices.make_current_for_release(device)?;
        // SAFETY: forwarded contract.
        unsafe { nccl::destroy(&self.nccl, comm, true) }
    }
}
