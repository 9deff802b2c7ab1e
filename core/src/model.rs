//! A pure reference model of the lifecycle and the handle rules, for property tests.
//!
//! The model knows nothing of real handles: objects are numbered (`ObjId`) in creation order and
//! never reused, and a test harness maps them to the runtime's handles. For each operation the
//! model predicts the outcome the runtime must give: the new object, or the specific error code.
//! It covers one platform with `devices` devices, every object operation but the platform
//! queries, and the faults a scripted backend injects ("fail the next call of op X"). Users can
//! drive it against their own runtime configurations.
//!
//! The order of checks is part of the contract it models: first the lifecycle (`Uninitialized`
//! outside `Ready`), then null pointers, then sizes and values, then handles and addresses in
//! parameter order, then capacity, then the backend call (an armed fault fires here), then
//! backend-specific outcomes.

use crate::backend::BackendOp;
use crate::capacity::{MAX_ALLOCATIONS, MAX_EVENTS, MAX_KERNELS, MAX_PROGRAMS, MAX_QUEUES};
use crate::error::ErrorCode;
use crate::handle::ObjectKind;
use crate::lifecycle::MAX_REFS;

/// A model object: its index in creation order over the model's whole life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjId(pub u32);

/// How an operation names an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ref {
    /// The null handle (or a null address).
    Null,
    /// A handle that was never issued (a forgery).
    Forged,
    /// A handle the runtime issued for this model object (live or not, of whatever kind).
    Obj(ObjId),
}

/// An operation on the runtime, as the model sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `init`.
    Init,
    /// `shutdown`.
    Shutdown,
    /// Arms the scripted backend to fail the next call of `op` with `code` (or "released by the
    /// driver" when `released`). Not a runtime call.
    ArmFault {
        /// The backend call to fail.
        op: BackendOp,
        /// The error code it fails with.
        code: ErrorCode,
        /// Whether the error means "already released by the driver".
        released: bool,
    },
    /// `device_info(device, Name)`.
    DeviceInfo(Ref),
    /// `mem_alloc(device, Device, size)`.
    MemAlloc {
        /// The device.
        device: Ref,
        /// Bytes.
        size: usize,
    },
    /// `mem_free(base of alloc)`.
    MemFree(Ref),
    /// `copy_to_device(base + offset, [0; len])`.
    CopyToDevice {
        /// The allocation.
        alloc: Ref,
        /// Offset from its base (below 256).
        offset: usize,
        /// Bytes.
        len: usize,
    },
    /// `copy_from_device([0; len], base + offset)`.
    CopyFromDevice {
        /// The allocation.
        alloc: Ref,
        /// Offset from its base (below 256).
        offset: usize,
        /// Bytes.
        len: usize,
    },
    /// `fill(base + offset, U8(0), count, None)`.
    Fill {
        /// The allocation.
        alloc: Ref,
        /// Offset from its base (below 256).
        offset: usize,
        /// Bytes.
        count: usize,
    },
    /// `copy_device(dst base, src base, len, None)`.
    CopyDevice {
        /// The destination allocation.
        dst: Ref,
        /// The source allocation.
        src: Ref,
        /// Bytes.
        len: usize,
    },
    /// `mem_info(base)`.
    MemInfo(Ref),
    /// `queue_create(device)`.
    QueueCreate(Ref),
    /// `queue_destroy(queue)`.
    QueueDestroy(Ref),
    /// `queue_synchronize(queue)`.
    QueueSynchronize(Ref),
    /// `queue_query(queue)`.
    QueueQuery(Ref),
    /// `queue_wait_event(queue, event)`.
    QueueWaitEvent {
        /// The queue.
        queue: Ref,
        /// The event.
        event: Ref,
    },
    /// `event_create(device)`.
    EventCreate(Ref),
    /// `event_synchronize(event)`.
    EventSynchronize(Ref),
    /// `event_query(event)`.
    EventQuery(Ref),
    /// `event_elapsed_ms(start, end)`.
    EventElapsed {
        /// The first event.
        start: Ref,
        /// The second event.
        end: Ref,
    },
    /// `kernel_program(kernel)`.
    KernelProgram(Ref),
    /// `event_destroy(event)`.
    EventDestroy(Ref),
    /// `event_record(event, queue)`.
    EventRecord {
        /// The event.
        event: Ref,
        /// The queue.
        queue: Ref,
    },
    /// `program_load(device, image)`, with a valid or an invalid image.
    ProgramLoad {
        /// The device.
        device: Ref,
        /// Whether the image is one the backend accepts.
        valid: bool,
    },
    /// `program_unload(program)`.
    ProgramUnload(Ref),
    /// `kernel_get(program, name)`, with a name that exists or one that does not.
    KernelGet {
        /// The program.
        program: Ref,
        /// Which of the harness's names (0 and 1 exist; 2 does not).
        name: u8,
    },
    /// `launch(queue, kernel, 1x1, no args)`.
    Launch {
        /// The queue.
        queue: Ref,
        /// The kernel.
        kernel: Ref,
    },
}

/// What the runtime must answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Success with nothing new.
    Ok,
    /// `init` initialised: devices are new objects `first .. first + count`.
    Initialized {
        /// The first device object.
        first: ObjId,
        /// How many devices.
        count: u32,
    },
    /// A new object.
    Created(ObjId),
    /// An existing object was returned (kernel lookup by a name already looked up).
    Existing(ObjId),
    /// `shutdown` dropped a reference; this many remain.
    Released(u32),
    /// The final `shutdown` tore down, with this many failures and released-by-driver steps.
    TornDown {
        /// Failed steps.
        failures: u32,
        /// Steps whose object the driver had already released.
        released_by_driver: u32,
    },
    /// The operation failed with this code and changed nothing (releases retire the handle).
    Err(ErrorCode),
    /// The model's own object log is full; the harness should stop the sequence.
    ModelFull,
}

/// The configuration the model predicts for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelConfig {
    /// Devices of the one platform.
    pub devices: u32,
    /// Allocations larger than this fail with `OutOfResources` in the backend.
    pub alloc_limit: usize,
    /// `event_elapsed_ms` of two events of one device succeeds (a backend with a clock that
    /// times events whether or not they were recorded, as the scripted backend); otherwise it
    /// fails with `Unsupported` (the host backend built without a clock).
    pub event_timing: bool,
}

/// One object's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjInfo {
    /// Its kind.
    pub kind: ObjectKind,
    /// Its device (an object id), or itself for a device.
    pub device: ObjId,
    /// Whether it is live.
    pub live: bool,
    /// For a kernel, its program; for a kernel, its name index in `size`.
    pub parent: Option<ObjId>,
    /// For an allocation, its size; for a kernel, its name index.
    pub size: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fault {
    op: BackendOp,
    code: ErrorCode,
    released: bool,
}

/// The reference model, holding at most `N` objects over its life.
#[derive(Clone, Debug)]
pub struct Model<const N: usize = 4096> {
    config: ModelConfig,
    refs: u32,
    /// The platform's backend initialised (it is deinitialised at the final teardown).
    present: bool,
    objects: heapless::Vec<ObjInfo, N>,
    fault: Option<Fault>,
}

type Check<T> = core::result::Result<T, ErrorCode>;

impl<const N: usize> Model<N> {
    /// A model of an uninitialised runtime.
    pub const fn new(config: ModelConfig) -> Self {
        Self { config, refs: 0, present: false, objects: heapless::Vec::new(), fault: None }
    }

    /// Init references held.
    pub fn refs(&self) -> u32 {
        self.refs
    }

    /// Every object ever created, by id.
    pub fn objects(&self) -> &[ObjInfo] {
        &self.objects
    }

    /// The record of an object.
    pub fn object(&self, id: ObjId) -> Option<&ObjInfo> {
        self.objects.get(id.0 as usize)
    }

    /// Live objects of a kind.
    pub fn live(&self, kind: ObjectKind) -> usize {
        self.objects.iter().filter(|o| o.live && o.kind == kind).count()
    }

    /// Whether a fault is armed and not yet fired.
    pub fn fault_armed(&self) -> bool {
        self.fault.is_some()
    }

    fn resolve(&self, r: Ref, kind: ObjectKind) -> Check<ObjId> {
        match r {
            Ref::Null => Err(ErrorCode::NullHandle),
            Ref::Forged => Err(ErrorCode::InvalidHandle),
            Ref::Obj(id) => match self.object(id) {
                Some(o) if o.kind == kind && o.live => Ok(id),
                _ => Err(ErrorCode::InvalidHandle),
            },
        }
    }

    /// Resolves an address-named allocation (null address, unknown address, or live).
    fn resolve_address(&self, r: Ref) -> Check<ObjId> {
        match r {
            Ref::Null => Err(ErrorCode::NullPointer),
            Ref::Forged => Err(ErrorCode::NotFound),
            Ref::Obj(id) => match self.object(id) {
                Some(o) if o.kind == ObjectKind::Allocation && o.live => Ok(id),
                _ => Err(ErrorCode::NotFound),
            },
        }
    }

    /// The allocation holding `len > 0` bytes at `offset` from the base of `alloc` (a non-null
    /// reference), or the error the runtime gives for that range.
    fn range(&self, alloc: Ref, offset: usize, len: usize) -> Check<ObjId> {
        let a = self.resolve_address(alloc)?;
        if offset >= self.info(a).size {
            // Past the end: an address no allocation contains (allocations are 256-byte aligned
            // and offsets stay below that, so it never reaches the next one).
            return Err(ErrorCode::NotFound);
        }
        if offset + len > self.info(a).size {
            return Err(ErrorCode::InvalidSize);
        }
        Ok(a)
    }

    fn info(&self, id: ObjId) -> ObjInfo {
        self.objects[id.0 as usize]
    }

    /// Fires the armed fault if it is for `op`.
    fn backend_call(&mut self, op: BackendOp) -> Check<()> {
        match self.fault {
            Some(f) if f.op == op => {
                self.fault = None;
                Err(f.code)
            }
            _ => Ok(()),
        }
    }

    fn create(&mut self, info: ObjInfo) -> Outcome {
        let id = ObjId(self.objects.len() as u32);
        match self.objects.push(info) {
            Ok(()) => Outcome::Created(id),
            Err(_) => Outcome::ModelFull,
        }
    }

    fn kill(&mut self, id: ObjId) {
        self.objects[id.0 as usize].live = false;
        if self.objects[id.0 as usize].kind == ObjectKind::Program {
            for o in self.objects.iter_mut().filter(|o| o.parent == Some(id)) {
                o.live = false;
            }
        }
    }

    fn full(&self, kind: ObjectKind, capacity: usize) -> Check<()> {
        if self.live(kind) >= capacity { Err(ErrorCode::OutOfResources) } else { Ok(()) }
    }

    /// Applies `op` and returns the outcome the runtime must give.
    pub fn apply(&mut self, op: Op) -> Outcome {
        match op {
            Op::Init => return self.init(),
            Op::Shutdown => return self.shutdown(),
            Op::ArmFault { op, code, released } => {
                self.fault = Some(Fault { op, code, released });
                return Outcome::Ok;
            }
            _ if self.refs == 0 => return Outcome::Err(ErrorCode::Uninitialized),
            _ => {}
        }
        match self.object_op(op) {
            Ok(outcome) => outcome,
            Err(code) => Outcome::Err(code),
        }
    }

    fn init(&mut self) -> Outcome {
        if self.refs > 0 {
            if self.refs >= MAX_REFS {
                return Outcome::Err(ErrorCode::OutOfResources);
            }
            self.refs += 1;
            return Outcome::Ok;
        }
        let first = ObjId(self.objects.len() as u32);
        // A backend whose init fails is an unavailable (or, with `NotPresent`, absent) platform:
        // init succeeds without its devices.
        self.present = self.backend_call(BackendOp::Init).is_ok();
        let devices = if self.present { self.config.devices } else { 0 };
        for i in 0..devices {
            let info =
                ObjInfo { kind: ObjectKind::Device, device: ObjId(first.0 + i), live: true, parent: None, size: 0 };
            if self.objects.push(info).is_err() {
                return Outcome::ModelFull;
            }
        }
        self.refs = 1;
        Outcome::Initialized { first, count: devices }
    }

    fn shutdown(&mut self) -> Outcome {
        match self.refs {
            0 => return Outcome::Err(ErrorCode::Uninitialized),
            1 => {}
            n => {
                self.refs = n - 1;
                return Outcome::Released(n - 1);
            }
        }
        self.refs = 0;
        let any = |kind| self.live(kind) > 0;
        let fires = match self.fault {
            Some(f) => match f.op {
                BackendOp::QueueSynchronize | BackendOp::QueueDestroy => any(ObjectKind::Queue),
                BackendOp::EventDestroy => any(ObjectKind::Event),
                BackendOp::ProgramUnload => any(ObjectKind::Program),
                BackendOp::MemFree => any(ObjectKind::Allocation),
                BackendOp::DeviceRelease => any(ObjectKind::Device),
                BackendOp::Deinit => self.present,
                _ => false,
            },
            None => false,
        };
        let (mut failures, mut released_by_driver) = (0, 0);
        if fires {
            let f = self.fault.take().expect("fault is armed");
            if f.released { released_by_driver = 1 } else { failures = 1 }
        }
        for o in self.objects.iter_mut() {
            o.live = false;
        }
        Outcome::TornDown { failures, released_by_driver }
    }

    fn object_op(&mut self, op: Op) -> Check<Outcome> {
        use ObjectKind as K;
        let obj = |kind, device: ObjId| ObjInfo { kind, device, live: true, parent: None, size: 0 };
        Ok(match op {
            Op::DeviceInfo(d) => {
                self.resolve(d, K::Device)?;
                self.backend_call(BackendOp::DeviceInfo)?;
                Outcome::Ok
            }
            Op::MemAlloc { device, size } => {
                if size == 0 || size > isize::MAX as usize {
                    return Err(ErrorCode::InvalidSize);
                }
                let d = self.resolve(device, K::Device)?;
                self.full(K::Allocation, MAX_ALLOCATIONS)?;
                self.backend_call(BackendOp::MemAlloc)?;
                if size > self.config.alloc_limit {
                    return Err(ErrorCode::OutOfResources);
                }
                self.create(ObjInfo { size, ..obj(K::Allocation, d) })
            }
            Op::MemFree(a) => {
                let a = self.resolve_address(a)?;
                self.kill(a);
                self.backend_call(BackendOp::MemFree)?;
                Outcome::Ok
            }
            Op::CopyToDevice { alloc, offset, len }
            | Op::CopyFromDevice { alloc, offset, len }
            | Op::Fill { alloc, offset, count: len } => {
                if len == 0 {
                    // A zero-byte copy or fill succeeds and does nothing, whatever its address.
                    return Ok(Outcome::Ok);
                }
                if alloc == Ref::Null {
                    return Err(ErrorCode::NullPointer);
                }
                self.range(alloc, offset, len)?;
                let call = if matches!(op, Op::Fill { .. }) { BackendOp::Fill } else { BackendOp::Memcpy };
                self.backend_call(call)?;
                Outcome::Ok
            }
            Op::CopyDevice { dst, src, len } => {
                if len == 0 {
                    return Ok(Outcome::Ok);
                }
                if dst == Ref::Null || src == Ref::Null {
                    return Err(ErrorCode::NullPointer);
                }
                let s = self.range(src, 0, len)?;
                let d = self.range(dst, 0, len)?;
                if self.info(s).device != self.info(d).device {
                    return Err(ErrorCode::Unsupported);
                }
                self.backend_call(BackendOp::Memcpy)?;
                Outcome::Ok
            }
            Op::MemInfo(a) => {
                self.resolve_address(a)?;
                Outcome::Ok
            }
            Op::QueueQuery(q) => {
                self.resolve(q, K::Queue)?;
                self.backend_call(BackendOp::QueueQuery)?;
                Outcome::Ok
            }
            Op::QueueWaitEvent { queue, event } => {
                self.resolve(queue, K::Queue)?;
                self.resolve(event, K::Event)?;
                self.backend_call(BackendOp::QueueWaitEvent)?;
                Outcome::Ok
            }
            Op::EventSynchronize(e) | Op::EventQuery(e) => {
                self.resolve(e, K::Event)?;
                let call =
                    if matches!(op, Op::EventQuery(_)) { BackendOp::EventQuery } else { BackendOp::EventSynchronize };
                self.backend_call(call)?;
                Outcome::Ok
            }
            Op::EventElapsed { start, end } => {
                let s = self.resolve(start, K::Event)?;
                let e = self.resolve(end, K::Event)?;
                if self.info(s).device != self.info(e).device {
                    return Err(ErrorCode::InvalidArgument);
                }
                self.backend_call(BackendOp::EventElapsed)?;
                if !self.config.event_timing {
                    return Err(ErrorCode::Unsupported);
                }
                Outcome::Ok
            }
            Op::KernelProgram(k) => {
                self.resolve(k, K::Kernel)?;
                Outcome::Ok
            }
            Op::QueueCreate(d) | Op::EventCreate(d) => {
                let (kind, cap, call) = match op {
                    Op::QueueCreate(_) => (K::Queue, MAX_QUEUES, BackendOp::QueueCreate),
                    _ => (K::Event, MAX_EVENTS, BackendOp::EventCreate),
                };
                let d = self.resolve(d, K::Device)?;
                self.full(kind, cap)?;
                self.backend_call(call)?;
                self.create(obj(kind, d))
            }
            Op::QueueDestroy(x) | Op::EventDestroy(x) | Op::ProgramUnload(x) => {
                let (kind, call) = match op {
                    Op::QueueDestroy(_) => (K::Queue, BackendOp::QueueDestroy),
                    Op::EventDestroy(_) => (K::Event, BackendOp::EventDestroy),
                    _ => (K::Program, BackendOp::ProgramUnload),
                };
                let x = self.resolve(x, kind)?;
                self.kill(x);
                self.backend_call(call)?;
                Outcome::Ok
            }
            Op::QueueSynchronize(q) => {
                self.resolve(q, K::Queue)?;
                self.backend_call(BackendOp::QueueSynchronize)?;
                Outcome::Ok
            }
            Op::EventRecord { event, queue } => {
                let e = self.resolve(event, K::Event)?;
                let q = self.resolve(queue, K::Queue)?;
                if self.info(e).device != self.info(q).device {
                    return Err(ErrorCode::InvalidArgument);
                }
                self.backend_call(BackendOp::EventRecord)?;
                Outcome::Ok
            }
            Op::ProgramLoad { device, valid } => {
                let d = self.resolve(device, K::Device)?;
                self.full(K::Program, MAX_PROGRAMS)?;
                self.backend_call(BackendOp::ProgramLoad)?;
                if !valid {
                    return Err(ErrorCode::InvalidBinary);
                }
                self.create(obj(K::Program, d))
            }
            Op::KernelGet { program, name } => {
                let p = self.resolve(program, K::Program)?;
                self.backend_call(BackendOp::KernelGet)?;
                if name >= 2 {
                    return Err(ErrorCode::NotFound);
                }
                let same = |o: &ObjInfo| o.live && o.parent == Some(p) && o.size == usize::from(name);
                if let Some(i) = self.objects.iter().position(same) {
                    return Ok(Outcome::Existing(ObjId(i as u32)));
                }
                self.full(K::Kernel, MAX_KERNELS)?;
                let device = self.info(p).device;
                self.create(ObjInfo { parent: Some(p), size: usize::from(name), ..obj(K::Kernel, device) })
            }
            Op::Launch { queue, kernel } => {
                let q = self.resolve(queue, K::Queue)?;
                let k = self.resolve(kernel, K::Kernel)?;
                if self.info(q).device != self.info(k).device {
                    return Err(ErrorCode::InvalidArgument);
                }
                self.backend_call(BackendOp::Launch)?;
                Outcome::Ok
            }
            Op::Init | Op::Shutdown | Op::ArmFault { .. } => Outcome::Ok,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: ModelConfig = ModelConfig { devices: 2, alloc_limit: 1 << 20, event_timing: true };

    #[test]
    fn lifecycle_rows() {
        let mut m: Model<64> = Model::new(CFG);
        assert_eq!(m.apply(Op::Shutdown), Outcome::Err(ErrorCode::Uninitialized));
        assert_eq!(m.apply(Op::QueueCreate(Ref::Obj(ObjId(0)))), Outcome::Err(ErrorCode::Uninitialized));
        assert_eq!(m.apply(Op::Init), Outcome::Initialized { first: ObjId(0), count: 2 });
        assert_eq!(m.apply(Op::Init), Outcome::Ok);
        assert_eq!(m.apply(Op::Shutdown), Outcome::Released(1));
        let q = m.apply(Op::QueueCreate(Ref::Obj(ObjId(1))));
        assert_eq!(q, Outcome::Created(ObjId(2)));
        assert_eq!(m.apply(Op::Shutdown), Outcome::TornDown { failures: 0, released_by_driver: 0 });
        assert_eq!(m.apply(Op::Init), Outcome::Initialized { first: ObjId(3), count: 2 });
        assert_eq!(m.apply(Op::QueueSynchronize(Ref::Obj(ObjId(2)))), Outcome::Err(ErrorCode::InvalidHandle));
        assert_eq!(m.apply(Op::QueueCreate(Ref::Obj(ObjId(0)))), Outcome::Err(ErrorCode::InvalidHandle));
    }

    #[test]
    fn faults_fire_once_at_their_call() {
        let mut m: Model<64> = Model::new(CFG);
        m.apply(Op::ArmFault { op: BackendOp::Init, code: ErrorCode::DeviceLost, released: false });
        // The platform is unavailable; init succeeds without its devices.
        assert_eq!(m.apply(Op::Init), Outcome::Initialized { first: ObjId(0), count: 0 });
        assert_eq!(m.refs(), 1);
        m.apply(Op::ArmFault { op: BackendOp::Deinit, code: ErrorCode::BackendFailure, released: false });
        assert_eq!(m.apply(Op::Shutdown), Outcome::TornDown { failures: 0, released_by_driver: 0 });
        assert!(m.fault_armed(), "an unavailable platform is not deinitialised");
        m.apply(Op::ArmFault { op: BackendOp::ProgramLoad, code: ErrorCode::BackendFailure, released: false });
        assert!(matches!(m.apply(Op::Init), Outcome::Initialized { .. }));
        m.apply(Op::ArmFault { op: BackendOp::MemFree, code: ErrorCode::BackendFailure, released: true });
        assert_eq!(m.apply(Op::Shutdown), Outcome::TornDown { failures: 0, released_by_driver: 0 });
        assert!(m.fault_armed());
        assert!(matches!(m.apply(Op::Init), Outcome::Initialized { .. }));
        let d = Ref::Obj(ObjId(2));
        assert!(matches!(m.apply(Op::MemAlloc { device: d, size: 8 }), Outcome::Created(_)));
        assert_eq!(m.apply(Op::Shutdown), Outcome::TornDown { failures: 0, released_by_driver: 1 });
    }
}
