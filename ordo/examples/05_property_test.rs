//! A state-machine property test of your own code with `ordo-testing`: a small buffer pool
//! (the code under test) runs random sequences of operations on a fresh runtime over the
//! scripted backend, some with an injected driver failure; after every step the pool and the
//! backend's live-object count agree, and after the context is dropped nothing is left.
use ordo::ErrorCode;
use ordo::raw::{BackendError, BackendOp};
use ordo::{Context, DeviceBuffer, OwnedRuntime};
use ordo_testing::{ScriptedBackend, ScriptedObject};
use proptest::prelude::*;

/// The code under test: keeps at most `cap` buffers, reusing the oldest when full.
struct Pool<'c> {
    cap: usize,
    buffers: Vec<DeviceBuffer<'c, u32>>,
}

impl<'c> Pool<'c> {
    fn take(&mut self, dev: &ordo::Device<'c>, len: usize) -> Result<(), ordo::Error> {
        if self.buffers.len() == self.cap {
            self.buffers.remove(0);
        }
        self.buffers.push(DeviceBuffer::zeroed(dev, len)?);
        Ok(())
    }
}

#[derive(Clone, Debug)]
enum Op {
    Take(usize),
    FailNextAlloc,
    Release,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![(1usize..64).prop_map(Op::Take), Just(Op::FailNextAlloc), Just(Op::Release)];
    proptest::collection::vec(op, 1..40)
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let scripted: &'static ScriptedBackend = Box::leak(Box::new(ScriptedBackend::new(1)));
    let rt = OwnedRuntime::new(&[scripted]);
    {
        let ctx = Context::with_runtime(&rt).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let dev = ctx.device(0).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut pool = Pool { cap: 4, buffers: Vec::new() };
        for op in ops {
            match op {
                Op::Take(len) => {
                    let r = pool.take(&dev, *len);
                    prop_assert!(r.is_ok() || r.unwrap_err().code() == ErrorCode::OutOfResources);
                }
                Op::FailNextAlloc => {
                    scripted.fail_next(BackendOp::MemAlloc, BackendError::new(ErrorCode::OutOfResources, 2, "injected"))
                }
                Op::Release => drop(pool.buffers.pop()),
            }
            prop_assert_eq!(scripted.live(ScriptedObject::Allocation), pool.buffers.len());
        }
        scripted.disarm();
    }
    prop_assert_eq!(scripted.live(ScriptedObject::Allocation), 0, "the teardown freed nothing twice and left nothing");
    Ok(())
}

fn main() {
    let config = ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    runner.run(&ops(), |ops| run(&ops)).expect("the pool and the runtime agree");
    println!("200 random operation sequences: the pool and the scripted backend agree");
}
