//! The model of the cache of queue-ordered memory (`ModelConfig::cache_bytes`): what a free keeps,
//! what gives blocks back, and which freed addresses name newer allocations.

use ordo_core::{BackendOp, ErrorCode};

use super::{Check, Model, ObjId};

impl<const N: usize> Model<N> {
    /// Blocks the cache of queue-ordered memory keeps: the backend still holds them, and no
    /// table names them.
    pub fn cached_blocks(&self) -> usize {
        self.cached.len()
    }

    /// Keeps a block of `size` freed on queue `q` in the cache when it fits (see
    /// `ModelConfig::cache_bytes`); `freed` is the allocation it was.
    pub(super) fn cache_put(&mut self, q: ObjId, size: usize, freed: ObjId) -> bool {
        let bytes: usize = self.cached.iter().map(|&(_, s, _)| s).sum();
        let fits = size <= self.config.cache_bytes.saturating_sub(bytes)
            && self.cached.iter().filter(|&&(c, ..)| c == q).count() < ordo_core::MAX_CACHED_PER_QUEUE;
        fits && self.cached.push((q, size, freed)).is_ok()
    }

    /// Whether the cache handed the block of the freed allocation `id` to a later allocation
    /// (its address then names that one, while it lives): a test that names freed allocations
    /// by their addresses leaves such ones out.
    pub fn address_reused(&self, id: ObjId) -> bool {
        self.reused.contains(&id)
    }

    /// The cached blocks of the queues `which` selects go back to the backend, each a
    /// queue-ordered free (an armed fault of that call fires; its error changes nothing).
    pub(super) fn give_back(&mut self, which: impl Fn(ObjId) -> bool) {
        let mut i = 0;
        while i < self.cached.len() {
            let q = self.cached[i].0;
            if which(q) {
                self.cached.remove(i);
                let _ = self.call_on(q, BackendOp::MemFreeOn);
            } else {
                i += 1;
            }
        }
    }

    /// `mem_alloc_on` on queue `q` after the backend ran out of memory: the device's cached
    /// blocks go back, then the allocation is tried once more (`OutOfResources` when none was
    /// cached, or when the second try fails as well).
    pub(super) fn alloc_on_after_trim(&mut self, q: ObjId, size: usize) -> Check<()> {
        let device = self.info(q).device;
        if !self.cached.iter().any(|&(c, ..)| self.info(c).device == device) {
            return Err(ErrorCode::OutOfResources);
        }
        let on_device: heapless::Vec<ObjId, { ordo_core::MAX_CACHED_BLOCKS }> =
            self.cached.iter().map(|&(c, ..)| c).filter(|&c| self.info(c).device == device).collect();
        self.give_back(|c| on_device.contains(&c));
        self.call_on(q, BackendOp::MemAllocOn)?;
        if size > self.config.alloc_limit {
            return Err(ErrorCode::OutOfResources);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ModelConfig, Op, Outcome, PlatformModel, Ref};
    use super::*;
    use ordo_core::ObjectKind;

    const ONE: &[PlatformModel] = &[PlatformModel { present: true, devices: 2 }];
    const CFG: ModelConfig = ModelConfig {
        platforms: ONE,
        alloc_limit: 1 << 20,
        event_timing: true,
        graphs: true,
        cache_bytes: 1 << 10,
        collectives: true,
    };

    fn fault(platform: u8, op: BackendOp, code: ErrorCode, released: bool) -> Op {
        Op::ArmFault { platform, op, code, released }
    }

    /// The cache of queue-ordered memory: a free keeps the block for its queue (no backend call:
    /// an armed fault does not fire), the queue's next allocation of its size takes it (its
    /// address then names the new allocation), another queue's does not; the queue's destroy
    /// gives it back (a queue-ordered free: the fault fires there, its error changes nothing);
    /// the driver out of memory gives the device's blocks back and tries once more.
    #[test]
    fn the_cache_keeps_a_freed_block_for_its_queue_only() {
        let mut m: Model<64> = Model::new(CFG);
        let obj = |i| Ref::Obj(ObjId(i));
        m.apply(Op::Init);
        assert_eq!(m.apply(Op::QueueCreate(obj(1))), Outcome::Created(ObjId(3)));
        assert_eq!(m.apply(Op::QueueCreate(obj(1))), Outcome::Created(ObjId(4)));
        assert_eq!(m.apply(Op::MemAllocOn { queue: obj(3), size: 256 }), Outcome::Created(ObjId(5)));
        m.apply(fault(0, BackendOp::MemFreeOn, ErrorCode::BackendFailure, false));
        assert_eq!(m.apply(Op::MemFreeOn { queue: obj(3), alloc: obj(5) }), Outcome::Ok);
        assert!(m.fault_armed(), "a kept block makes no backend call");
        assert_eq!((m.cached_blocks(), m.live(ObjectKind::Allocation)), (1, 0));
        // Another queue's allocation of that size goes to the backend.
        assert_eq!(m.apply(Op::MemAllocOn { queue: obj(4), size: 256 }), Outcome::Created(ObjId(6)));
        assert_eq!(m.apply(Op::MemAllocOn { queue: obj(3), size: 256 }), Outcome::Created(ObjId(7)));
        assert_eq!(m.cached_blocks(), 0);
        assert!(m.address_reused(ObjId(5)) && !m.address_reused(ObjId(6)));
        // Past the byte limit, a free goes to the backend (and the fault fires there).
        assert_eq!(m.apply(Op::MemAllocOn { queue: obj(3), size: 2048 }), Outcome::Created(ObjId(8)));
        assert_eq!(m.apply(Op::MemFreeOn { queue: obj(3), alloc: obj(8) }), Outcome::Err(ErrorCode::BackendFailure));
        assert_eq!(m.apply(Op::MemFreeOn { queue: obj(3), alloc: obj(7) }), Outcome::Ok);
        m.apply(fault(0, BackendOp::MemFreeOn, ErrorCode::BackendFailure, false));
        assert_eq!(m.apply(Op::QueueDestroy(obj(3))), Outcome::Ok);
        assert!(!m.fault_armed() && m.cached_blocks() == 0, "the destroy gave the block back");
        // Out of memory: the device's blocks go back, then the allocation succeeds.
        assert_eq!(m.apply(Op::MemFreeOn { queue: obj(4), alloc: obj(6) }), Outcome::Ok);
        m.apply(fault(0, BackendOp::MemAllocOn, ErrorCode::OutOfResources, false));
        assert_eq!(m.apply(Op::MemAllocOn { queue: obj(4), size: 64 }), Outcome::Created(ObjId(9)));
        assert_eq!(m.cached_blocks(), 0);
        m.apply(fault(0, BackendOp::MemAllocOn, ErrorCode::OutOfResources, false));
        assert_eq!(m.apply(Op::MemAllocOn { queue: obj(4), size: 64 }), Outcome::Err(ErrorCode::OutOfResources));
    }
}
