//! The model's communicators and collectives: one-rank communicators made by
//! `comm_create_all`, destroyed or aborted, an all-reduce in place, and a queue's synchronise,
//! which reads the asynchronous errors of its device's communicators (`ModelConfig::collectives`: the scripted library's calls, which
//! count and fail; else the runtime's reference engine, which makes none). Depends on the
//! model's records (`super`).

use ordo_core::{BackendOp, ErrorCode, ObjectKind as K};

use super::{Check, Model, ObjId, ObjInfo, Op, Outcome};

/// Bytes the model's all-reduce reads and writes (4 f32).
pub const ALL_REDUCE_BYTES: usize = 16;

impl<const N: usize> Model<N> {
    pub(super) fn comm_op(&mut self, op: Op) -> Check<Outcome> {
        let native = self.config.collectives;
        Ok(match op {
            Op::CommCreate(device) => {
                let d = self.resolve(device, K::Device)?;
                self.full(K::Communicator, ordo_core::capacity::MAX_COMMUNICATORS)?;
                if native {
                    self.call_on(d, BackendOp::CommCreateAll)?;
                }
                self.create(ObjInfo::of(K::Communicator, d))
            }
            Op::CommDestroy(c) | Op::CommAbort(c) => {
                let c = self.resolve(c, K::Communicator)?;
                self.kill(c);
                if native {
                    let call =
                        if matches!(op, Op::CommDestroy(_)) { BackendOp::CommDestroy } else { BackendOp::CommAbort };
                    self.call_on(c, call)?;
                }
                Outcome::Ok
            }
            Op::AllReduce { comm, queue, alloc } => {
                let c = self.resolve(comm, K::Communicator)?;
                let q = self.resolve(queue, K::Queue)?;
                if self.info(q).device != self.info(c).device {
                    return Err(ErrorCode::InvalidArgument);
                }
                let a = self.range(alloc, 0, ALL_REDUCE_BYTES)?;
                if self.info(a).device != self.info(c).device {
                    return Err(ErrorCode::InvalidArgument);
                }
                if native {
                    self.call_on(c, BackendOp::Collectives)?;
                } else if self.info(q).capturing {
                    return Err(ErrorCode::Unsupported);
                }
                Outcome::Ok
            }
            Op::QueueSynchronize(q) => {
                let q = self.resolve(q, K::Queue)?;
                self.not_capturing(q)?;
                let synced = self.call_on(q, BackendOp::QueueSynchronize);
                // Then its device's communicators' asynchronous errors, whose is the answer.
                self.comm_errors(self.info(q).device)?;
                synced?;
                Outcome::Ok
            }
            _ => return Err(ErrorCode::Internal),
        })
    }

    /// A queue synchronise's read of the asynchronous errors of `device`'s communicators (the
    /// library's, oldest first): the first error is the answer.
    pub(super) fn comm_errors(&mut self, device: ObjId) -> Check<()> {
        if !self.config.collectives {
            return Ok(());
        }
        let comms: heapless::Vec<ObjId, 64> = (0..self.objects.len() as u32)
            .map(ObjId)
            .filter(|&c| {
                let o = self.info(c);
                o.live && o.kind == K::Communicator && o.device == device
            })
            .take(64)
            .collect();
        for c in comms {
            self.call_on(c, BackendOp::CommAsyncError)?;
        }
        Ok(())
    }
}
