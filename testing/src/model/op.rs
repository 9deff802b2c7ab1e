//! The operations the model predicts (`Op`, naming objects by `Ref`) and what the runtime must
//! answer (`Outcome`). Depends on `ordo_core` only; the model (`model/mod.rs`) and harnesses
//! depend on it.

use ordo_core::{BackendOp, ErrorCode};

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
    /// `platform_count()`.
    PlatformCount,
    /// `platform(index)`.
    PlatformAt(u32),
    /// `platform_info(platform)`.
    PlatformInfo(Ref),
    /// `device(platform, index)`.
    DeviceAt {
        /// The platform.
        platform: Ref,
        /// The device's index on it.
        index: u32,
    },
    /// `device_platform(device)`.
    DevicePlatform(Ref),
    /// Arms the scripted backend of platform `platform` (an index in registration order) to fail
    /// its next call of `op` with `code` (or "released by the driver" when `released`). Not a
    /// runtime call.
    ArmFault {
        /// The platform whose backend fails.
        platform: u8,
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
    /// `queue_begin_capture(queue)`.
    QueueBeginCapture(Ref),
    /// `queue_end_capture(queue)`: a graph.
    QueueEndCapture(Ref),
    /// `graph_launch(graph, queue)`.
    GraphLaunch {
        /// The graph.
        graph: Ref,
        /// The queue.
        queue: Ref,
    },
    /// `graph_set_args(graph, index, kernel, one 4-byte argument)`.
    GraphSetArgs {
        /// The graph.
        graph: Ref,
        /// The launch's index (0 or 1).
        index: u8,
        /// The kernel.
        kernel: Ref,
    },
    /// `graph_destroy(graph)`.
    GraphDestroy(Ref),
    /// `comm_create_all(&[device])`: a communicator of one rank.
    CommCreate(Ref),
    /// `comm_destroy(comm)`.
    CommDestroy(Ref),
    /// `comm_abort(comm)`.
    CommAbort(Ref),
    /// `collective`: one part, an all-reduce (f32, sum) of 4 elements in place at the base of
    /// `alloc`, on `queue`.
    AllReduce {
        /// The communicator.
        comm: Ref,
        /// The queue.
        queue: Ref,
        /// The allocation read and written.
        alloc: Ref,
    },
    /// `mem_alloc_on(queue, size)`: device memory in the queue's order.
    MemAllocOn {
        /// The queue.
        queue: Ref,
        /// Bytes.
        size: usize,
    },
    /// `mem_free_on(queue, base of alloc)`.
    MemFreeOn {
        /// The queue.
        queue: Ref,
        /// The allocation.
        alloc: Ref,
    },
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
    /// `queue_reissue(queue)`: the queue under a new handle, the old one stale.
    QueueReissue(Ref),
    /// `event_reissue(event)`: the event under a new handle, the old one stale.
    EventReissue(Ref),
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
    /// `queue_create_independent(device)`.
    QueueCreateIndependent(Ref),
    /// `default_queue(device)`: the device's one default queue (made by the first call).
    DefaultQueue(Ref),
    /// `host_unregister(start of a registration)`.
    HostUnregister(Ref),
    /// `host_register(device, fresh host memory of size bytes)`.
    HostRegister {
        /// The device.
        device: Ref,
        /// Bytes (the harness's buffer has at least one).
        size: usize,
    },
    /// `fill_pattern(base + offset, pattern of pattern_len bytes, len, None)`.
    FillPattern {
        /// The allocation.
        alloc: Ref,
        /// Offset from its base (below 256).
        offset: usize,
        /// Bytes.
        len: usize,
        /// The pattern's length (0 is refused).
        pattern_len: usize,
    },
    /// `launch_cluster(queue, kernel, grid 2 x block 1, cluster [cluster, 1, 1], no args)`.
    LaunchCluster {
        /// The queue.
        queue: Ref,
        /// The kernel.
        kernel: Ref,
        /// The cluster's x dimension (0 and values not dividing 2 are refused).
        cluster: u32,
    },
    /// `kernel_param_count(kernel)`.
    KernelParamCount(Ref),
    /// `kernel_param_layout(kernel)`.
    KernelParamLayout(Ref),
    /// `kernel_optimal_block_size(kernel, 0)`.
    KernelOptimalBlockSize(Ref),
    /// `program_global(program, name)`: the global variable's address.
    ProgramGlobal {
        /// The program.
        program: Ref,
        /// Which of the harness's names (0 and 1 exist; 2 does not).
        name: u8,
    },
    /// `program_check(device, image)`, with a valid or an invalid image: `Count(1)` or `Count(0)`.
    ProgramCheck {
        /// The device.
        device: Ref,
        /// Whether the image is one the backend accepts.
        valid: bool,
    },
    /// `queue_host_function(queue, f, data)`.
    QueueHostFunction(Ref),
    /// `tensor_map_encode_tiled(device, a one-dimensional map)`.
    TensorMapEncode(Ref),
}

impl Op {
    /// The objects this operation names (at most two; `None` where it names fewer). A sequence
    /// replayed in part (a shrunk property-test case, say) is valid only where every `Ref::Obj`
    /// it names exists in the model at that step.
    pub fn refs(&self) -> [Option<Ref>; 3] {
        use Op::*;
        let [a, b] = match *self {
            AllReduce { comm, queue, alloc } => return [Some(comm), Some(queue), Some(alloc)],
            Init | Shutdown | PlatformCount | PlatformAt(_) | ArmFault { .. } => [None, None],
            PlatformInfo(r)
            | DevicePlatform(r)
            | DeviceInfo(r)
            | MemAlloc { device: r, .. }
            | MemFree(r)
            | MemAllocOn { queue: r, .. }
            | QueueBeginCapture(r)
            | QueueEndCapture(r)
            | GraphDestroy(r)
            | CommCreate(r)
            | CommDestroy(r)
            | CommAbort(r)
            | CopyToDevice { alloc: r, .. }
            | CopyFromDevice { alloc: r, .. }
            | Fill { alloc: r, .. }
            | MemInfo(r)
            | QueueCreate(r)
            | QueueDestroy(r)
            | QueueSynchronize(r)
            | QueueReissue(r)
            | EventReissue(r)
            | QueueQuery(r)
            | EventCreate(r)
            | EventSynchronize(r)
            | EventQuery(r)
            | KernelProgram(r)
            | EventDestroy(r)
            | ProgramLoad { device: r, .. }
            | ProgramUnload(r)
            | KernelGet { program: r, .. }
            | QueueCreateIndependent(r)
            | DefaultQueue(r)
            | HostRegister { device: r, .. }
            | HostUnregister(r)
            | FillPattern { alloc: r, .. }
            | KernelParamCount(r)
            | KernelParamLayout(r)
            | KernelOptimalBlockSize(r)
            | ProgramGlobal { program: r, .. }
            | ProgramCheck { device: r, .. }
            | QueueHostFunction(r)
            | TensorMapEncode(r)
            | DeviceAt { platform: r, .. } => [Some(r), None],
            CopyDevice { dst: a, src: b, .. }
            | QueueWaitEvent { queue: a, event: b }
            | MemFreeOn { queue: a, alloc: b }
            | GraphLaunch { graph: a, queue: b }
            | GraphSetArgs { graph: a, kernel: b, .. }
            | EventElapsed { start: a, end: b }
            | EventRecord { event: a, queue: b }
            | Launch { queue: a, kernel: b }
            | LaunchCluster { queue: a, kernel: b, .. } => [Some(a), Some(b)],
        };
        [a, b, None]
    }
}

/// What the runtime must answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Success with nothing new.
    Ok,
    /// `init` initialised: new objects `first .. first + count`, for each platform in
    /// registration order the platform and then its devices.
    Initialized {
        /// The first new object (platform 0).
        first: ObjId,
        /// How many objects (platforms and devices).
        count: u32,
    },
    /// A new object.
    Created(ObjId),
    /// An existing object was returned (a platform or device lookup, a kernel lookup by a name
    /// already looked up).
    Existing(ObjId),
    /// A count (`platform_count`).
    Count(u32),
    /// `platform_info`: the devices of the platform, and whether it is available (present, and
    /// its backend initialised).
    PlatformInfo {
        /// Devices.
        devices: u32,
        /// Present and initialised.
        available: bool,
    },
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
