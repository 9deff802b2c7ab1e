//! The backend of the loom models (`loom.rs`, `loom_ordered.rs`): every call checks, with
//! loom-visible atomics, that it reaches the backend inside init, and that calls using the queue
//! find it live and are not overlapped by its release ("no call observes a torn-down object");
//! its pool hands out two blocks of queue-ordered memory and fails a model that frees one twice
//! or frees one it never handed out.
#![allow(dead_code, reason = "each model file uses part of it")]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use ordo_core::{
    Backend, BackendError, BackendKind, BackendResult, Capabilities, CopyKind, DeviceInfo, ErrorCode, FillValue,
    InfoValue, KernelArgs, LaunchDims, LaunchLimits, MemKind, ParamLayout, Queue, Runtime, Shutdown,
};

pub struct LoomBackend {
    /// Backend calls in progress that use the queue.
    in_call: AtomicU32,
    pub up: AtomicBool,
    pub queue_live: AtomicBool,
    pub inits: AtomicU32,
    pub deinits: AtomicU32,
    /// The pool's blocks (`POOL[i]`), whether handed out and not yet freed.
    handed_out: [AtomicBool; 2],
    /// Blocks handed out and freed, in all.
    pool_allocs: AtomicU32,
    pool_frees: AtomicU32,
}

/// The addresses of the pool's two blocks (`POOL_BLOCK` bytes each).
pub const POOL: [u64; 2] = [0x10_0000, 0x20_0000];
/// The size of a pool block.
pub const POOL_BLOCK: usize = 0x1000;

impl LoomBackend {
    pub fn new() -> Self {
        Self {
            in_call: AtomicU32::new(0),
            up: AtomicBool::new(false),
            queue_live: AtomicBool::new(false),
            inits: AtomicU32::new(0),
            deinits: AtomicU32::new(0),
            handed_out: [AtomicBool::new(false), AtomicBool::new(false)],
            pool_allocs: AtomicU32::new(0),
            pool_frees: AtomicU32::new(0),
        }
    }

    /// Frees the pool block at `addr`: a block handed out and not freed since.
    fn pool_free(&self, what: &str, addr: u64, size: usize) {
        let i = POOL.iter().position(|&a| a == addr).unwrap_or_else(|| panic!("{what} of {addr:#x}, not a block"));
        assert_eq!(size, POOL_BLOCK, "{what} with another size than the block's");
        assert!(self.handed_out[i].swap(false, Ordering::SeqCst), "{what} of a block not handed out (double free)");
        self.pool_frees.fetch_add(1, Ordering::SeqCst);
    }

    /// Blocks handed out and freed so far.
    pub fn pool_counts(&self) -> (u32, u32) {
        (self.pool_allocs.load(Ordering::SeqCst), self.pool_frees.load(Ordering::SeqCst))
    }

    fn assert_up(&self, what: &str) {
        assert!(self.up.load(Ordering::SeqCst), "{what} reached the backend outside init");
    }

    fn assert_queue(&self, what: &str) {
        self.assert_up(what);
        assert!(self.queue_live.load(Ordering::SeqCst), "{what} used a destroyed queue");
    }

    /// Releasing an object while a call is using it is the bug these models look for.
    fn assert_no_call_in_flight(&self, what: &str) {
        assert_eq!(self.in_call.load(Ordering::SeqCst), 0, "{what} while a call was using the object");
    }
}

pub fn unsupported<T>() -> BackendResult<T> {
    Err(BackendError::new(ErrorCode::Unsupported, 0, "not in the loom models"))
}

impl Backend for LoomBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Scripted
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::empty()
    }
    fn init(&self) -> BackendResult<u32> {
        assert!(!self.up.swap(true, Ordering::SeqCst), "init while up");
        self.inits.fetch_add(1, Ordering::SeqCst);
        Ok(1)
    }
    unsafe fn deinit(&self) -> BackendResult<()> {
        self.assert_no_call_in_flight("deinit");
        assert!(!self.queue_live.load(Ordering::SeqCst), "deinit before the queue was destroyed");
        assert!(self.up.swap(false, Ordering::SeqCst), "deinit while down");
        self.deinits.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    unsafe fn device_release(&self, _: u32) -> BackendResult<()> {
        self.assert_up("device_release");
        Ok(())
    }
    unsafe fn forget_after_fork(&self) {}
    fn launch_limits(&self, _: u32) -> LaunchLimits {
        LaunchLimits::CUDA
    }
    fn device_info(&self, _: u32, _: DeviceInfo) -> BackendResult<InfoValue> {
        self.assert_up("device_info");
        Ok(InfoValue::Int(0))
    }
    fn mem_alloc(&self, _: u32, _: MemKind, _: usize) -> BackendResult<u64> {
        unsupported()
    }
    unsafe fn mem_free(&self, _: u32, kind: MemKind, addr: u64, size: usize) -> BackendResult<()> {
        // The teardown frees what is left of the queue-ordered memory this way.
        self.assert_up("mem_free");
        assert_eq!(kind, MemKind::Ordered, "the models allocate queue-ordered memory only");
        self.pool_free("mem_free", addr, size);
        Ok(())
    }
    unsafe fn mem_alloc_on(&self, _: u32, _: u64, size: usize) -> BackendResult<u64> {
        self.in_call.fetch_add(1, Ordering::SeqCst);
        self.assert_queue("mem_alloc_on");
        assert!(size <= POOL_BLOCK, "the models allocate at most a block");
        let i = (0..2).find(|&i| !self.handed_out[i].swap(true, Ordering::SeqCst));
        self.in_call.fetch_sub(1, Ordering::SeqCst);
        let i = i.expect("the runtime allocates at most two blocks at once in these models");
        self.pool_allocs.fetch_add(1, Ordering::SeqCst);
        Ok(POOL[i])
    }
    unsafe fn mem_free_on(&self, _: u32, _: u64, addr: u64, size: usize) -> BackendResult<()> {
        self.in_call.fetch_add(1, Ordering::SeqCst);
        self.assert_queue("mem_free_on");
        self.pool_free("mem_free_on", addr, size);
        self.in_call.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
    fn ordered_concurrent(&self, _: u32) -> bool {
        true
    }
    unsafe fn memcpy(&self, _: u32, _: CopyKind, _: u64, _: u64, _: usize, _: Option<u64>) -> BackendResult<()> {
        unsupported()
    }
    unsafe fn fill(&self, _: u32, _: u64, _: FillValue, _: usize, _: Option<u64>) -> BackendResult<()> {
        unsupported()
    }
    fn queue_create(&self, _: u32) -> BackendResult<u64> {
        self.assert_up("queue_create");
        assert!(!self.queue_live.swap(true, Ordering::SeqCst), "one queue at a time in these models");
        Ok(1)
    }
    unsafe fn queue_destroy(&self, _: u32, _: u64) -> BackendResult<()> {
        self.assert_queue("queue_destroy");
        self.assert_no_call_in_flight("queue_destroy");
        self.queue_live.store(false, Ordering::SeqCst);
        Ok(())
    }
    unsafe fn queue_synchronize(&self, _: u32, _: u64) -> BackendResult<()> {
        self.in_call.fetch_add(1, Ordering::SeqCst);
        self.assert_queue("queue_synchronize");
        self.in_call.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
    unsafe fn queue_query(&self, _: u32, _: u64) -> BackendResult<bool> {
        self.in_call.fetch_add(1, Ordering::SeqCst);
        self.assert_queue("queue_query");
        self.in_call.fetch_sub(1, Ordering::SeqCst);
        Ok(true)
    }
    unsafe fn queue_wait_event(&self, _: u32, _: u64, _: u64) -> BackendResult<()> {
        unsupported()
    }
    fn event_create(&self, _: u32) -> BackendResult<u64> {
        unsupported()
    }
    unsafe fn event_destroy(&self, _: u32, _: u64) -> BackendResult<()> {
        unsupported()
    }
    unsafe fn event_record(&self, _: u32, _: u64, _: u64) -> BackendResult<()> {
        unsupported()
    }
    unsafe fn event_synchronize(&self, _: u32, _: u64) -> BackendResult<()> {
        unsupported()
    }
    unsafe fn event_query(&self, _: u32, _: u64) -> BackendResult<bool> {
        unsupported()
    }
    unsafe fn event_elapsed_ms(&self, _: u32, _: u64, _: u64) -> BackendResult<f32> {
        unsupported()
    }
    fn program_load(&self, _: u32, _: &[u8]) -> BackendResult<u64> {
        self.assert_up("program_load");
        Ok(1)
    }
    unsafe fn program_unload(&self, _: u32, _: u64) -> BackendResult<()> {
        self.assert_up("program_unload");
        Ok(())
    }
    unsafe fn kernel_get(&self, _: u32, _: u64, _: &str) -> BackendResult<u64> {
        self.assert_up("kernel_get");
        Ok(1)
    }
    unsafe fn kernel_param_layout(&self, _: u32, _: u64, out: &mut ParamLayout) -> BackendResult<()> {
        self.assert_up("kernel_param_layout");
        out.clear();
        Ok(())
    }
    unsafe fn launch(&self, _: u32, _: u64, _: u64, _: &LaunchDims, _: &KernelArgs<'_>) -> BackendResult<()> {
        self.in_call.fetch_add(1, Ordering::SeqCst);
        self.assert_queue("launch");
        self.in_call.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
    unsafe fn launch_packed(&self, _: u32, _: u64, _: u64, _: &LaunchDims, _: &[u8]) -> BackendResult<()> {
        self.in_call.fetch_add(1, Ordering::SeqCst);
        self.assert_queue("launch_packed");
        self.in_call.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A runtime over a fresh loom backend. The backend (a few atomics) is leaked, as the runtime
/// needs `'static` backends; the runtime is shared through an `Arc`.
pub fn setup() -> (&'static LoomBackend, Arc<Runtime>) {
    let backend: &'static LoomBackend = Box::leak(Box::new(LoomBackend::new()));
    let backends: &'static [&'static dyn Backend] = Box::leak(Box::new([backend as &dyn Backend]));
    let state: &'static ordo_core::RuntimeState = Box::leak(Box::new(ordo_core::RuntimeState::new()));
    // SAFETY: a fresh state, used by this runtime only.
    (backend, Arc::new(unsafe { Runtime::with_state(backends, state) }))
}

/// `setup`, initialised, with one queue.
pub fn ready() -> (&'static LoomBackend, Arc<Runtime>, Queue) {
    let (b, rt) = setup();
    rt.init().unwrap();
    let q = queue(&rt);
    (b, rt, q)
}

/// The final shutdown, which must be a clean teardown.
pub fn shut_down_clean(rt: &Runtime) {
    let outcome = rt.shutdown().unwrap();
    assert!(matches!(outcome, Shutdown::TornDown(ref r) if r.is_clean()), "{outcome:?}");
}

pub fn queue(rt: &Runtime) -> Queue {
    let d = rt.device(rt.platform(0).unwrap(), 0).unwrap();
    rt.queue_create(d).unwrap()
}
