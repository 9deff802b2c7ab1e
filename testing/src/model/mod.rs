//! A pure reference model of the lifecycle and the handle rules, for property tests.
//!
//! The model knows nothing of real handles: objects are numbered (`ObjId`) in creation order and
//! never reused, and a test harness maps them to the runtime's handles. For each operation the
//! model predicts the outcome the runtime must give: the new object, or the specific error code.
//! It covers several platforms (present with their devices, absent, or unavailable because their
//! backend's init failed), every platform, device and object operation, and the faults a scripted
//! backend per platform injects ("fail the next call of op X"). Users can drive it against their
//! own runtime configurations (`OwnedRuntime` gives a fresh runtime per test case).
//!
//! The order of checks is part of the contract it models: first the lifecycle (`Uninitialized`
//! outside `Ready`), then null pointers, then sizes and values, then handles and addresses in
//! parameter order, then capacity, then the backend call (an armed fault fires here), then
//! backend-specific outcomes.
//!
//! Files: `op.rs` (the operations and outcomes), `cache.rs` (the cache of queue-ordered memory),
//! `comms.rs` (communicators and collectives),
//! `tests.rs` (the model's own tests), `objects.rs` (the rules of every object
//! operation); this file holds the configuration, the records, the lookups and the lifecycle.

use ordo_core::BackendOp;
use ordo_core::ErrorCode;
use ordo_core::MAX_REFS;
use ordo_core::ObjectKind;

mod cache;
mod comms;
mod objects;
mod op;

pub use op::{ObjId, Op, Outcome, Ref};

/// The most platforms a model covers.
pub const MAX_MODEL_PLATFORMS: usize = 4;

/// One registered platform, as the model sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlatformModel {
    /// Whether its driver is present (`false`: its backend's init answers `NotPresent`).
    pub present: bool,
    /// Its devices when present and initialised.
    pub devices: u32,
}

/// The configuration the model predicts for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelConfig {
    /// The registered platforms in registration order (at most `MAX_MODEL_PLATFORMS`).
    pub platforms: &'static [PlatformModel],
    /// Allocations larger than this fail with `OutOfResources` in the backend.
    pub alloc_limit: usize,
    /// `event_elapsed_ms` of two events of one device succeeds (a backend with a clock that
    /// times events whether or not they were recorded, as the scripted backend); otherwise it
    /// fails with `Unsupported` (the host backend built without a clock).
    pub event_timing: bool,
    /// The platforms' backends have graphs (the scripted backend); otherwise
    /// `queue_begin_capture` fails with `Unsupported` (the host backend, AMDGPU).
    pub graphs: bool,
    /// The byte limit of the cache of queue-ordered memory the runtime was given
    /// (`Runtime::set_cache_bytes`; 0: off). With it on, a queue-ordered free keeps the block
    /// for its queue (no backend call) while it fits (`MAX_CACHED_BLOCKS` blocks,
    /// `MAX_CACHED_PER_QUEUE` per queue, this many bytes), and that queue's next allocation of
    /// the same size takes it (no backend call).
    pub cache_bytes: usize,
    /// The platforms' backends have a collective library (the scripted backend: its calls are
    /// counted and can fail); otherwise the runtime's reference engine runs their collectives
    /// over their copies (the host backend, AMDGPU).
    pub collectives: bool,
}

/// One object's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjInfo {
    /// Its kind.
    pub kind: ObjectKind,
    /// Its device (an object id), or itself for a device or a platform.
    pub device: ObjId,
    /// Whether it is live.
    pub live: bool,
    /// For a kernel, its program; for a device, its platform.
    pub parent: Option<ObjId>,
    /// For an allocation, its size; for a kernel, its name index; for a platform, its index in
    /// registration order; for a device, its index on its platform; for a queue, 1 when it is
    /// its device's default queue (`default_queue`), else 0.
    pub size: usize,
    /// For a program's global variable (an allocation whose `parent` is the program), its name
    /// index; `None` for everything else.
    pub global: Option<u8>,
    /// For host memory registered with a device (`host_register`): true.
    pub registered: bool,
    /// For memory allocated in a queue's order (`mem_alloc_on`): true.
    pub ordered: bool,
    /// For a queue: whether it is capturing into a graph (`queue_begin_capture`).
    pub capturing: bool,
    /// For a kernel: whether the runtime knows its parameter layout (asked of the backend at
    /// the kernel's first launch, and again after a failed ask).
    pub layout_known: bool,
    /// For a capturing queue (since its capture began) and a graph: its kernel launches.
    pub launches: Launches,
    /// For an event: the queue whose capture recorded it, while that capture lasts;
    /// [`CAPTURE_ENDED`] once that capture ended, until the event is recorded again (its record
    /// is part of the graph and never runs on its own).
    pub captured_by: Option<ObjId>,
    /// For a program: the references its graphs hold (one per graph whose launches use it),
    /// which its unloads give back before it is unloaded.
    pub retained: u32,
}

impl ObjInfo {
    /// A live object of `kind` on `device`, with nothing else set.
    pub(crate) fn of(kind: ObjectKind, device: ObjId) -> Self {
        Self {
            kind,
            device,
            live: true,
            parent: None,
            size: 0,
            global: None,
            registered: false,
            ordered: false,
            capturing: false,
            layout_known: false,
            launches: Launches::default(),
            captured_by: None,
            retained: 0,
        }
    }
}

/// An event's `captured_by` once the capture that recorded it ended.
pub const CAPTURE_ENDED: ObjId = ObjId(u32::MAX);

/// What a capture (and its graph) holds of kernel launches: the runtime numbers them for
/// argument updates and orphans the graph when a program of theirs is unloaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Launches {
    /// How many.
    pub count: u32,
    /// The kernels of the first two (the indices the model updates).
    pub kernels: [Option<ObjId>; 2],
    /// Their programs, each once, as the runtime's graph entry keeps them.
    pub programs: [Option<ObjId>; 4],
    /// More programs than `programs` holds: any unload on the device orphans the graph.
    pub any_program: bool,
    /// A program of theirs was unloaded (a graph: launches and updates are refused).
    pub orphaned: bool,
}

impl Launches {
    /// Adds a launch of `kernel`, of `program`.
    pub fn add(&mut self, kernel: ObjId, program: ObjId) {
        if let Some(slot) = self.kernels.get_mut(self.count as usize) {
            *slot = Some(kernel);
        }
        self.count += 1;
        if !self.programs.contains(&Some(program)) {
            match self.programs.iter_mut().find(|p| p.is_none()) {
                Some(free) => *free = Some(program),
                None => self.any_program = true,
            }
        }
    }

    /// Whether unloading `program` orphans a graph of these launches.
    pub fn uses(&self, program: ObjId) -> bool {
        self.any_program || self.programs.contains(&Some(program))
    }
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
    /// Per platform: its backend initialised (it is deinitialised at the final teardown).
    up: [bool; MAX_MODEL_PLATFORMS],
    /// Per platform: the armed fault of its backend.
    faults: [Option<Fault>; MAX_MODEL_PLATFORMS],
    /// The platform objects of the current (or last) init, in registration order.
    platforms: heapless::Vec<ObjId, MAX_MODEL_PLATFORMS>,
    objects: heapless::Vec<ObjInfo, N>,
    /// Programs unloaded while a queue of their device captured: (program, device), unloaded by
    /// the backend when the device's last capture ends or at the teardown.
    deferred: heapless::Vec<(ObjId, ObjId), DEFERRED_UNLOADS>,
    /// Blocks the cache keeps: (queue, size, the freed allocation), oldest first.
    cached: heapless::Vec<(ObjId, usize, ObjId), { ordo_core::MAX_CACHED_BLOCKS }>,
    /// Freed allocations whose block the cache handed to a later allocation: their address
    /// names that one now (while it lives).
    reused: heapless::Vec<ObjId, N>,
}

/// Unloads that may wait for a device's captures at once (the runtime's `DEFERRED_UNLOADS`).
const DEFERRED_UNLOADS: usize = 16;

type Check<T> = core::result::Result<T, ErrorCode>;

impl<const N: usize> Model<N> {
    /// A model of an uninitialised runtime. Platforms beyond `MAX_MODEL_PLATFORMS` are ignored.
    pub const fn new(config: ModelConfig) -> Self {
        Self {
            config,
            refs: 0,
            up: [false; MAX_MODEL_PLATFORMS],
            faults: [None; MAX_MODEL_PLATFORMS],
            platforms: heapless::Vec::new(),
            objects: heapless::Vec::new(),
            deferred: heapless::Vec::new(),
            cached: heapless::Vec::new(),
            reused: heapless::Vec::new(),
        }
    }

    fn platform_configs(&self) -> &'static [PlatformModel] {
        let all = self.config.platforms;
        &all[..all.len().min(MAX_MODEL_PLATFORMS)]
    }

    /// The platform index of an object (of a platform, device, or anything on a device).
    fn platform_of(&self, id: ObjId) -> usize {
        self.platform_of_info(&self.info(id))
    }

    /// `platform_of` for a record at hand.
    fn platform_of_info(&self, o: &ObjInfo) -> usize {
        match o.kind {
            ObjectKind::Platform => o.size,
            ObjectKind::Device => self.info(o.parent.expect("a device has a platform")).size,
            _ => self.platform_of(o.device),
        }
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

    /// Whether a fault is armed and not yet fired, on any platform.
    pub fn fault_armed(&self) -> bool {
        self.faults.iter().any(Option::is_some)
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

    /// A call of `op` to the backend of platform `platform`: fires its armed fault if it is for
    /// `op`.
    fn backend_call(&mut self, platform: usize, op: BackendOp) -> Check<()> {
        match self.faults[platform] {
            Some(f) if f.op == op => {
                self.faults[platform] = None;
                Err(f.code)
            }
            _ => Ok(()),
        }
    }

    /// Whether a live queue of platform `p` is capturing.
    fn capturing_on(&self, p: usize) -> bool {
        self.objects
            .iter()
            .any(|o| o.live && o.kind == ObjectKind::Queue && o.capturing && self.platform_of_info(o) == p)
    }

    /// `InvalidArgument` when a live queue of `device` is capturing (a call without a queue on
    /// the device is refused meanwhile).
    fn no_capture_on(&self, device: ObjId) -> Check<()> {
        let busy =
            self.objects.iter().any(|o| o.live && o.kind == ObjectKind::Queue && o.capturing && o.device == device);
        if busy { Err(ErrorCode::InvalidArgument) } else { Ok(()) }
    }

    /// `InvalidArgument` when event `e`'s latest record was captured (by a capture that has not
    /// ended, or by one that ended: see [`CAPTURE_ENDED`]).
    fn not_captured(&self, e: ObjId) -> Check<()> {
        if self.info(e).captured_by.is_some() { Err(ErrorCode::InvalidArgument) } else { Ok(()) }
    }

    /// A launch of kernel `k` went to queue `q`: listed in its capture if it captures.
    fn captured_launch(&mut self, q: ObjId, k: ObjId) {
        if self.info(q).capturing {
            let program = self.info(k).parent.expect("a kernel has a program");
            self.objects[q.0 as usize].launches.add(k, program);
        }
    }

    /// `InvalidArgument` when queue `q` is capturing.
    fn not_capturing(&self, q: ObjId) -> Check<()> {
        if self.info(q).capturing { Err(ErrorCode::InvalidArgument) } else { Ok(()) }
    }

    /// `backend_call` to the platform of object `id`.
    fn call_on(&mut self, id: ObjId, op: BackendOp) -> Check<()> {
        self.backend_call(self.platform_of(id), op)
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
            Op::ArmFault { platform, op, code, released } => {
                if let Some(slot) = self.faults.get_mut(usize::from(platform)) {
                    *slot = Some(Fault { op, code, released });
                }
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
        self.platforms.clear();
        // Every backend is initialised in order. One whose init fails (absent: `NotPresent`;
        // an armed fault: unavailable) is a platform without devices; init succeeds anyway.
        for (index, config) in self.platform_configs().iter().enumerate() {
            let fault = self.backend_call(index, BackendOp::Init);
            self.up[index] = fault.is_ok() && config.present;
            let platform = ObjId(self.objects.len() as u32);
            let info = ObjInfo { size: index, ..ObjInfo::of(ObjectKind::Platform, platform) };
            if self.objects.push(info).is_err() || self.platforms.push(platform).is_err() {
                return Outcome::ModelFull;
            }
            let devices = if self.up[index] { config.devices } else { 0 };
            for i in 0..devices {
                let id = ObjId(self.objects.len() as u32);
                let info = ObjInfo { parent: Some(platform), size: i as usize, ..ObjInfo::of(ObjectKind::Device, id) };
                if self.objects.push(info).is_err() {
                    return Outcome::ModelFull;
                }
            }
        }
        self.refs = 1;
        Outcome::Initialized { first, count: self.objects.len() as u32 - first.0 }
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
        let (mut failures, mut released_by_driver) = (0, 0);
        for p in 0..self.platform_configs().len() {
            // Globals leave with their program (the teardown frees no global).
            let any = |kind| {
                self.objects
                    .iter()
                    .any(|o| o.live && o.kind == kind && o.global.is_none() && self.platform_of_info(o) == p)
            };
            let fires = match self.faults[p] {
                Some(f) => match f.op {
                    BackendOp::QueueSynchronize | BackendOp::QueueDestroy => any(ObjectKind::Queue),
                    // A capture still open is ended (and its graph destroyed) before the
                    // queue's synchronisation; then the graphs go.
                    BackendOp::QueueEndCapture => self.capturing_on(p),
                    BackendOp::GraphDestroy => self.capturing_on(p) || any(ObjectKind::Graph),
                    BackendOp::EventDestroy => any(ObjectKind::Event),
                    BackendOp::ProgramUnload => {
                        any(ObjectKind::Program) || self.deferred.iter().any(|&(p2, _)| self.platform_of(p2) == p)
                    }
                    // The cache's blocks are freed as memory of their device.
                    BackendOp::MemFree => {
                        any(ObjectKind::Allocation) || self.cached.iter().any(|&(q, ..)| self.platform_of(q) == p)
                    }
                    BackendOp::DeviceRelease => any(ObjectKind::Device),
                    BackendOp::CommDestroy => self.config.collectives && any(ObjectKind::Communicator),
                    BackendOp::Deinit => self.up[p],
                    _ => false,
                },
                None => false,
            };
            // A failed finalize (after the queues' synchronise) fails the destroy of every
            // communicator of the platform (each is aborted and reported).
            let finalized = self.config.collectives && any(ObjectKind::Communicator);
            let comms = self
                .objects
                .iter()
                .filter(|o| o.live && o.kind == ObjectKind::Communicator && self.platform_of_info(o) == p)
                .count() as u32;
            let (fires, steps) = match self.faults[p] {
                Some(f) if f.op == BackendOp::CommFinalize && finalized => (true, comms),
                _ => (fires, 1),
            };
            if fires {
                let f = self.faults[p].take().expect("fault is armed");
                if f.released { released_by_driver += steps } else { failures += steps }
            }
            self.up[p] = false;
        }
        for o in self.objects.iter_mut() {
            o.live = false;
        }
        self.deferred.clear();
        self.cached.clear();
        Outcome::TornDown { failures, released_by_driver }
    }
}

#[cfg(test)]
mod tests;
