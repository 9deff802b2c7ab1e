//! The scripted backend's collective library: communicators are counted objects, collectives
//! check that their communicators and queues are live, and every call is counted and can be
//! made to fail (`BackendOp::CommCreateAll` to `CommAbort`). Depends on the backend (`super`).

use ordo_core::{CollectiveCall, CollectiveLibrary, Collectives, UniqueId};

use super::*;

impl Collectives for ScriptedBackend {
    fn library(&self) -> BackendResult<CollectiveLibrary> {
        Ok(CollectiveLibrary { name: "scripted", version: 1 })
    }

    unsafe fn comm_create_all(&self, devices: &[u32], out: &mut [u64]) -> BackendResult<()> {
        self.use_object(BackendOp::CommCreateAll, &[])?;
        for i in 0..devices.len() {
            // Counted as one call: the objects are tracked without a call each.
            let raw = {
                let mut s = self.state.lock();
                s.next_raw += 1;
                let raw = s.next_raw;
                if s.live.push((ScriptedObject::Communicator, raw)).is_err() {
                    for &made in &out[..i] {
                        s.live.retain(|&o| o != (ScriptedObject::Communicator, made));
                    }
                    return Err(BackendError::new(
                        ErrorCode::OutOfResources,
                        0,
                        "scripted backend live-object log is full",
                    ));
                }
                raw
            };
            out[i] = raw;
        }
        Ok(())
    }

    fn unique_id(&self) -> BackendResult<UniqueId> {
        self.use_object(BackendOp::CommUniqueId, &[])?;
        Ok(UniqueId([7; 128]))
    }

    unsafe fn comm_create_rank(
        &self,
        _device: u32,
        _id: &UniqueId,
        _rank: u32,
        _size: u32,
        _timeout_ms: u32,
    ) -> BackendResult<u64> {
        self.create(BackendOp::CommCreateRank, ScriptedObject::Communicator, 0)
    }

    unsafe fn collectives(&self, calls: &[CollectiveCall]) -> BackendResult<()> {
        let mut objects: heapless::Vec<(ScriptedObject, u64), 128> = heapless::Vec::new();
        for c in calls {
            let _ = objects.push((ScriptedObject::Communicator, c.comm));
            let _ = objects.push((ScriptedObject::Queue, c.queue));
        }
        self.use_object(BackendOp::Collectives, &objects)
    }

    unsafe fn comm_native(&self, _device: u32, comm: u64) -> u64 {
        comm
    }

    unsafe fn comm_async_error(&self, _device: u32, comm: u64) -> BackendResult<()> {
        self.use_object(BackendOp::CommAsyncError, &[(ScriptedObject::Communicator, comm)])
    }

    unsafe fn comm_finalize(&self, comms: &[(u32, u64)]) {
        let objects: heapless::Vec<(ScriptedObject, u64), 64> =
            comms.iter().map(|&(_, c)| (ScriptedObject::Communicator, c)).take(64).collect();
        // A failed finalize fails every communicator of the call: their destroys return it (as
        // NCCL's are then aborted and reported).
        if let Err(e) = self.use_object(BackendOp::CommFinalize, &objects) {
            let mut s = self.state.lock();
            for &(_, c) in comms {
                let _ = s.finalize_failed.push((c, e));
            }
        }
    }

    unsafe fn comm_destroy(&self, _device: u32, comm: u64) -> BackendResult<()> {
        let failed = {
            let mut s = self.state.lock();
            let i = s.finalize_failed.iter().position(|&(c, _)| c == comm);
            i.map(|i| s.finalize_failed.swap_remove(i).1)
        };
        let destroyed = self.release(BackendOp::CommDestroy, ScriptedObject::Communicator, comm);
        match failed {
            Some(e) => Err(e),
            None => destroyed,
        }
    }

    unsafe fn comm_abort(&self, _device: u32, comm: u64) -> BackendResult<()> {
        self.release(BackendOp::CommAbort, ScriptedObject::Communicator, comm)
    }
}
