//! The model's own tests: the lifecycle table's rows and armed faults.

use super::*;

const ONE: &[PlatformModel] = &[PlatformModel { present: true, devices: 2 }];
const CFG: ModelConfig = ModelConfig {
    platforms: ONE,
    alloc_limit: 1 << 20,
    event_timing: true,
    graphs: true,
    cache_bytes: 0,
    collectives: true,
};

fn fault(platform: u8, op: BackendOp, code: ErrorCode, released: bool) -> Op {
    Op::ArmFault { platform, op, code, released }
}

#[test]
fn lifecycle_rows() {
    let mut m: Model<64> = Model::new(CFG);
    assert_eq!(m.apply(Op::Shutdown), Outcome::Err(ErrorCode::Uninitialized));
    assert_eq!(m.apply(Op::QueueCreate(Ref::Obj(ObjId(0)))), Outcome::Err(ErrorCode::Uninitialized));
    assert_eq!(m.apply(Op::PlatformCount), Outcome::Err(ErrorCode::Uninitialized));
    // Platform 0 is object 0, its devices 1 and 2.
    assert_eq!(m.apply(Op::Init), Outcome::Initialized { first: ObjId(0), count: 3 });
    assert_eq!(m.apply(Op::Init), Outcome::Ok);
    assert_eq!(m.apply(Op::Shutdown), Outcome::Released(1));
    let q = m.apply(Op::QueueCreate(Ref::Obj(ObjId(1))));
    assert_eq!(q, Outcome::Created(ObjId(3)));
    assert_eq!(m.apply(Op::QueueCreate(Ref::Obj(ObjId(0)))), Outcome::Err(ErrorCode::InvalidHandle));
    assert_eq!(m.apply(Op::Shutdown), Outcome::TornDown { failures: 0, released_by_driver: 0 });
    assert_eq!(m.apply(Op::Init), Outcome::Initialized { first: ObjId(4), count: 3 });
    assert_eq!(m.apply(Op::QueueSynchronize(Ref::Obj(ObjId(3)))), Outcome::Err(ErrorCode::InvalidHandle));
    assert_eq!(m.apply(Op::QueueCreate(Ref::Obj(ObjId(1)))), Outcome::Err(ErrorCode::InvalidHandle));
}

#[test]
fn faults_fire_once_at_their_call() {
    let mut m: Model<64> = Model::new(CFG);
    m.apply(fault(0, BackendOp::Init, ErrorCode::DeviceLost, false));
    // The platform is unavailable; init succeeds with it but without its devices.
    assert_eq!(m.apply(Op::Init), Outcome::Initialized { first: ObjId(0), count: 1 });
    assert_eq!(m.apply(Op::PlatformInfo(Ref::Obj(ObjId(0)))), Outcome::PlatformInfo { devices: 0, available: false });
    assert_eq!(m.refs(), 1);
    m.apply(fault(0, BackendOp::Deinit, ErrorCode::BackendFailure, false));
    assert_eq!(m.apply(Op::Shutdown), Outcome::TornDown { failures: 0, released_by_driver: 0 });
    assert!(m.fault_armed(), "an unavailable platform is not deinitialised");
    m.apply(fault(0, BackendOp::ProgramLoad, ErrorCode::BackendFailure, false));
    assert!(matches!(m.apply(Op::Init), Outcome::Initialized { .. }));
    m.apply(fault(0, BackendOp::MemFree, ErrorCode::BackendFailure, true));
    assert_eq!(m.apply(Op::Shutdown), Outcome::TornDown { failures: 0, released_by_driver: 0 });
    assert!(m.fault_armed());
    assert_eq!(m.apply(Op::Init), Outcome::Initialized { first: ObjId(4), count: 3 });
    let d = Ref::Obj(ObjId(5));
    assert!(matches!(m.apply(Op::MemAlloc { device: d, size: 8 }), Outcome::Created(_)));
    assert_eq!(m.apply(Op::Shutdown), Outcome::TornDown { failures: 0, released_by_driver: 1 });
}

/// Three platforms: present with two devices, absent, present with one device. Lookups,
/// cross-platform rules, and a fault that fires only on its own platform's backend.
#[test]
fn several_platforms() {
    const THREE: &[PlatformModel] = &[
        PlatformModel { present: true, devices: 2 },
        PlatformModel { present: false, devices: 4 },
        PlatformModel { present: true, devices: 1 },
    ];
    let mut m: Model<64> = Model::new(ModelConfig { platforms: THREE, ..CFG });
    // Objects: p0 = 0 (devices 1, 2), p1 = 3 (absent), p2 = 4 (device 5).
    assert_eq!(m.apply(Op::Init), Outcome::Initialized { first: ObjId(0), count: 6 });
    assert_eq!(m.apply(Op::PlatformCount), Outcome::Count(3));
    assert_eq!(m.apply(Op::PlatformAt(1)), Outcome::Existing(ObjId(3)));
    assert_eq!(m.apply(Op::PlatformAt(3)), Outcome::Err(ErrorCode::InvalidValue));
    assert_eq!(m.apply(Op::PlatformInfo(Ref::Obj(ObjId(3)))), Outcome::PlatformInfo { devices: 0, available: false });
    assert_eq!(m.apply(Op::PlatformInfo(Ref::Obj(ObjId(4)))), Outcome::PlatformInfo { devices: 1, available: true });
    assert_eq!(m.apply(Op::PlatformInfo(Ref::Obj(ObjId(5)))), Outcome::Err(ErrorCode::InvalidHandle));
    assert_eq!(m.apply(Op::DeviceAt { platform: Ref::Obj(ObjId(0)), index: 1 }), Outcome::Existing(ObjId(2)));
    assert_eq!(m.apply(Op::DeviceAt { platform: Ref::Obj(ObjId(3)), index: 0 }), Outcome::Err(ErrorCode::InvalidValue));
    assert_eq!(m.apply(Op::DevicePlatform(Ref::Obj(ObjId(5)))), Outcome::Existing(ObjId(4)));
    let Outcome::Created(a) = m.apply(Op::MemAlloc { device: Ref::Obj(ObjId(1)), size: 64 }) else { panic!() };
    let Outcome::Created(b) = m.apply(Op::MemAlloc { device: Ref::Obj(ObjId(2)), size: 64 }) else { panic!() };
    let Outcome::Created(c) = m.apply(Op::MemAlloc { device: Ref::Obj(ObjId(5)), size: 64 }) else { panic!() };
    let copy = |dst, src| Op::CopyDevice { dst: Ref::Obj(dst), src: Ref::Obj(src), len: 8 };
    assert_eq!(m.apply(copy(a, c)), Outcome::Ok, "two GPU platforms: staged");
    // c's platform (2) stages: its free failing fails the copy; so does the copy into a's (0).
    m.apply(fault(2, BackendOp::MemFree, ErrorCode::BackendFailure, false));
    assert_eq!(m.apply(copy(a, c)), Outcome::Err(ErrorCode::BackendFailure), "the staging memory's free failed");
    assert!(!m.fault_armed());
    m.apply(fault(0, BackendOp::Memcpy, ErrorCode::BackendFailure, false));
    assert_eq!(m.apply(copy(a, c)), Outcome::Err(ErrorCode::BackendFailure), "the second half failed");
    assert!(!m.fault_armed());
    assert_eq!(m.apply(copy(a, b)), Outcome::Ok, "two devices of one platform: a peer copy");
    // A fault armed on platform 2 does not fire on platform 0's backend.
    m.apply(fault(2, BackendOp::MemAlloc, ErrorCode::OutOfResources, false));
    assert!(matches!(m.apply(Op::MemAlloc { device: Ref::Obj(ObjId(1)), size: 8 }), Outcome::Created(_)));
    assert_eq!(m.apply(Op::MemAlloc { device: Ref::Obj(ObjId(5)), size: 8 }), Outcome::Err(ErrorCode::OutOfResources));
    // Teardown: a deinit fault on the absent platform never fires; on platform 2 it does.
    m.apply(fault(1, BackendOp::Deinit, ErrorCode::BackendFailure, false));
    m.apply(fault(2, BackendOp::Deinit, ErrorCode::BackendFailure, false));
    assert_eq!(m.apply(Op::Shutdown), Outcome::TornDown { failures: 1, released_by_driver: 0 });
    assert!(m.fault_armed());
}

/// A reissued default queue is the same queue under a new handle, but no longer its device's
/// default: the next `default_queue` makes another (as `Runtime::queue_reissue` documents).
#[test]
fn a_reissued_default_queue_is_no_longer_the_default() {
    let mut m: Model<64> = Model::new(CFG);
    assert_eq!(m.apply(Op::Init), Outcome::Initialized { first: ObjId(0), count: 3 });
    let d = Ref::Obj(ObjId(1));
    assert_eq!(m.apply(Op::DefaultQueue(d)), Outcome::Created(ObjId(3)));
    assert_eq!(m.apply(Op::DefaultQueue(d)), Outcome::Existing(ObjId(3)));
    assert_eq!(m.apply(Op::QueueReissue(Ref::Obj(ObjId(3)))), Outcome::Created(ObjId(4)));
    assert_eq!(m.apply(Op::QueueSynchronize(Ref::Obj(ObjId(3)))), Outcome::Err(ErrorCode::InvalidHandle));
    assert_eq!(m.apply(Op::QueueSynchronize(Ref::Obj(ObjId(4)))), Outcome::Ok);
    assert_eq!(m.apply(Op::DefaultQueue(d)), Outcome::Created(ObjId(5)));
    assert_eq!(m.apply(Op::DefaultQueue(d)), Outcome::Existing(ObjId(5)));
}
