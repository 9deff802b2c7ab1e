//! **A simulated HSA runtime, for tests only.** No AMD GPU is involved: this library exports the
//! HSA functions ordo's AMDGPU backend calls, backed by host memory, with one host agent and one
//! or two fake `gfx90a` GPU agents. It is strict where real HSA is strict and records every
//! violation instead of crashing:
//!
//! - a dispatch whose kernarg buffer is not from the kernarg pool, or whose size differs from
//!   the kernel symbol's kernarg segment size;
//! - a packet whose header is published before its body (the packet processor checks the body
//!   the moment it sees a valid header, as hardware reads it);
//! - a destroyed signal used anywhere; a double release of anything;
//! - memory a GPU agent reads or writes (copies, kernels) that is not granted to it;
//! - a queue destroyed with packets not yet processed; `hsa_shut_down` with live objects; any
//!   call after `hsa_shut_down`.
//!
//! A kernel that touches memory outside every allocation faults, as on hardware: the queue's
//! error callback is called with `HSA_STATUS_ERROR_EXCEPTION`, the queue stops, and the
//! dispatch's completion signal never fires (the program's bug, not a violation).
//!
//! A dispatch runs a host twin of the named kernel (`vector_add_f32`, `reduce_sum_f32`,
//! `empty`, `noop`, `mixed_args`), reading its arguments from the kernarg bytes at the offsets of the
//! code object's own metadata (parsed here independently of ordo), and the work-group size from
//! the hidden arguments as the compiled kernel does: a wrong layout gives wrong numbers.
//!
//! Test hooks (`ordo_hsa_sim_*`): live-object counts, violations, the call log, the number of
//! GPU agents, and failing the N-th status-returning call with a chosen status.

#![allow(clippy::missing_safety_doc)] // every export's contract is HSA's own
#![allow(non_camel_case_types)]

use std::alloc::Layout;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{CStr, c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

type Status = u32;
const OK: Status = 0;
const INFO_BREAK: Status = 1;
const ERR_INVALID_ARGUMENT: Status = 0x1001;
const ERR_INVALID_ALLOCATION: Status = 0x1003;
const ERR_INVALID_AGENT: Status = 0x1004;
const ERR_INVALID_SIGNAL: Status = 0x1006;
const ERR_INVALID_QUEUE: Status = 0x1007;
const ERR_NOT_INITIALIZED: Status = 0x100B;
const ERR_INVALID_CODE_OBJECT: Status = 0x1010;
const ERR_INVALID_EXECUTABLE: Status = 0x1011;
const ERR_FROZEN_EXECUTABLE: Status = 0x1012;
const ERR_INVALID_SYMBOL_NAME: Status = 0x1013;
const ERR_INVALID_CODE_OBJECT_READER: Status = 0x1021;

const CPU: u64 = 1;
const GPU0: u64 = 2;
const POOL_KERNARG: u64 = 0x100;
const POOL_SYSTEM: u64 = 0x101;
const POOL_DEVICE: u64 = 0x200; // + agent
const POOL_GROUP: u64 = 0x300; // + agent
const LDS_BYTES: usize = 64 * 1024;
const EF_AMDGPU_MACH_GFX90A: u32 = 0x3f;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Handle {
    handle: u64,
}

#[repr(C)]
pub struct hsa_queue_t {
    type_: u32,
    features: u32,
    base_address: *mut c_void,
    doorbell_signal: Handle,
    size: u32,
    reserved1: u32,
    id: u64,
}

/// The public queue struct followed by the indices HSA keeps privately.
#[repr(C)]
struct SimQueueMem {
    public: hsa_queue_t,
    write_index: AtomicU64,
    read_index: AtomicU64,
}

struct Signal {
    value: Mutex<i64>,
    changed: Condvar,
    destroyed: AtomicBool,
}

impl Signal {
    fn new(v: i64) -> Arc<Self> {
        Arc::new(Self { value: Mutex::new(v), changed: Condvar::new(), destroyed: AtomicBool::new(false) })
    }
    fn set(&self, v: i64) {
        *self.value.lock().unwrap() = v;
        self.changed.notify_all();
    }
    fn get(&self) -> i64 {
        *self.value.lock().unwrap()
    }
}

#[derive(Clone, Debug)]
struct Arg {
    offset: usize,
    size: usize,
    kind: String,
}

#[derive(Clone, Debug)]
struct Kernel {
    name: String,
    symbol: String,
    kernarg_size: u32,
    group_size: u32,
    private_size: u32,
    args: Vec<Arg>,
}

struct Executable {
    frozen: bool,
    kernels: Vec<Kernel>,
}

struct Alloc {
    size: usize,
    pool: u64,
    granted: Vec<u64>,
}

type QueueCallback = unsafe extern "C" fn(Status, *mut hsa_queue_t, *mut c_void);

struct QueueCtl {
    mem: *mut SimQueueMem,
    /// The error callback and its data.
    callback: Option<QueueCallback>,
    data: *mut c_void,
    /// Set when a kernel faulted: the queue processes nothing more.
    stopped: AtomicBool,
    agent: u64,
    doorbell: Arc<Signal>,
    stop: AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

// SAFETY: the queue memory is shared with the packet-processor thread on purpose (atomics for
// the indices and headers, as hardware shares it).
unsafe impl Send for QueueCtl {}
// SAFETY: as above.
unsafe impl Sync for QueueCtl {}

#[derive(Default)]
struct Sim {
    initialized: u32,
    gpus: u64,
    next_id: u64,
    signals: HashMap<u64, Arc<Signal>>,
    live_signals: u64,
    allocs: BTreeMap<u64, Alloc>,
    readers: HashMap<u64, Vec<u8>>,
    executables: HashMap<u64, Option<Executable>>,
    symbols: HashMap<u64, (u64, usize)>,
    kernel_objects: HashMap<u64, Kernel>,
    queues: HashMap<usize, Arc<QueueCtl>>,
    violations: Vec<String>,
    calls: Vec<&'static str>,
    counted_calls: u64,
    fail_at: Option<(u64, Status)>,
    dispatches: u64,
}

static SIM: Mutex<Option<Sim>> = Mutex::new(None);

fn sim() -> MutexGuard<'static, Option<Sim>> {
    SIM.lock().unwrap_or_else(|p| p.into_inner())
}

fn with<R>(f: impl FnOnce(&mut Sim) -> R) -> R {
    let mut g = sim();
    let s = g.get_or_insert_with(|| Sim { gpus: 2, next_id: 0x1000, ..Default::default() });
    f(s)
}

impl Sim {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn violation(&mut self, what: String) {
        self.violations.push(what);
    }

    /// Logs a status-returning call; `Some(status)` when it must fail (injected fault, or HSA
    /// not initialised).
    fn enter(&mut self, name: &'static str) -> Option<Status> {
        self.calls.push(name);
        if name != "hsa_init" && name != "hsa_status_string" && self.initialized == 0 {
            self.violation(format!("{name} called while HSA is not initialised"));
            return Some(ERR_NOT_INITIALIZED);
        }
        let n = self.counted_calls;
        self.counted_calls += 1;
        match self.fail_at {
            Some((k, status)) if k == n => Some(status),
            _ => None,
        }
    }

    fn is_gpu(&self, agent: u64) -> bool {
        agent >= GPU0 && agent < GPU0 + self.gpus
    }

    fn signal(&mut self, h: u64, what: &str) -> Option<Arc<Signal>> {
        match self.signals.get(&h) {
            Some(s) if !s.destroyed.load(Ordering::Acquire) => Some(s.clone()),
            Some(_) => {
                self.violation(format!("{what}: destroyed signal {h:#x} in use"));
                None
            }
            None => {
                self.violation(format!("{what}: unknown signal {h:#x}"));
                None
            }
        }
    }

    /// Whether `agent` may access `[addr, addr + len)` (one allocation holds it all).
    fn check_access(&mut self, agent: u64, addr: u64, len: usize, what: &str) -> bool {
        if len == 0 {
            return true;
        }
        let found = self.allocs.range(..=addr).next_back().map(|(&base, a)| (base, a.size, a.pool, a.granted.clone()));
        let ok = match found {
            Some((base, size, pool, granted)) if addr + len as u64 <= base + size as u64 => {
                pool == POOL_KERNARG
                    || agent == CPU && pool == POOL_SYSTEM
                    || pool == POOL_DEVICE + agent
                    || granted.contains(&agent)
            }
            _ => false,
        };
        if !ok {
            self.violation(format!("{what}: agent {agent} accesses {len} bytes at {addr:#x}, not granted to it"));
        }
        ok
    }
}

fn report(what: String) {
    with(|s| s.violation(what));
}

// ---- init, status, agents, pools --------------------------------------------------------------

#[unsafe(no_mangle)]
pub extern "C" fn hsa_init() -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_init") {
            return st;
        }
        s.initialized += 1;
        OK
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsa_shut_down() -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_shut_down") {
            return st;
        }
        if s.initialized == 1 {
            let live_exec = s.executables.values().filter(|e| e.is_some()).count();
            let checks = [
                (live_exec as u64, "executables"),
                (s.queues.len() as u64, "queues"),
                (s.live_signals, "signals"),
                (s.allocs.len() as u64, "allocations"),
                (s.readers.len() as u64, "code object readers"),
            ];
            for (n, what) in checks {
                if n > 0 {
                    s.violation(format!("hsa_shut_down with {n} live {what}"));
                }
            }
        }
        s.initialized -= 1;
        OK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_status_string(status: Status, out: *mut *const c_char) -> Status {
    let text: &'static CStr = match status {
        OK => c"HSA_STATUS_SUCCESS (simulated)",
        ERR_NOT_INITIALIZED => c"HSA_STATUS_ERROR_NOT_INITIALIZED (simulated)",
        _ => c"an HSA error (simulated)",
    };
    if out.is_null() {
        return ERR_INVALID_ARGUMENT;
    }
    // SAFETY: a non-null out-pointer, as HSA requires.
    unsafe { *out = text.as_ptr() };
    OK
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_iterate_agents(
    callback: Option<unsafe extern "C" fn(Handle, *mut c_void) -> Status>,
    data: *mut c_void,
) -> Status {
    let agents = match with(|s| s.enter("hsa_iterate_agents").map_or_else(|| Ok(s.gpus), Err)) {
        Ok(gpus) => std::iter::once(CPU).chain((0..gpus).map(|g| GPU0 + g)).collect::<Vec<_>>(),
        Err(st) => return st,
    };
    let Some(cb) = callback else { return ERR_INVALID_ARGUMENT };
    for a in agents {
        // SAFETY: the caller's callback and data.
        match unsafe { cb(Handle { handle: a }, data) } {
            OK => {}
            INFO_BREAK => return OK,
            other => return other,
        }
    }
    OK
}

unsafe fn write<T>(out: *mut c_void, v: T) -> Status {
    if out.is_null() {
        return ERR_INVALID_ARGUMENT;
    }
    // SAFETY: HSA's contract: `out` holds the attribute's type.
    unsafe { out.cast::<T>().write_unaligned(v) };
    OK
}

fn text64(s: &str) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[..s.len().min(63)].copy_from_slice(&s.as_bytes()[..s.len().min(63)]);
    b
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_agent_get_info(agent: Handle, attribute: u32, out: *mut c_void) -> Status {
    let (gpu, known) = match with(|s| {
        s.enter("hsa_agent_get_info")
            .map_or_else(|| Ok((s.is_gpu(agent.handle), agent.handle == CPU || s.is_gpu(agent.handle))), Err)
    }) {
        Ok(v) => v,
        Err(st) => return st,
    };
    if !known {
        return ERR_INVALID_AGENT;
    }
    // SAFETY: each attribute's documented type.
    unsafe {
        match attribute {
            17 => write::<u32>(out, u32::from(gpu)),
            0 => write(out, text64(if gpu { "gfx90a" } else { "simulated-cpu" })),
            0xA009 => write(out, text64(if gpu { "ordo SIMULATED gfx90a (no hardware)" } else { "simulated host" })),
            0xA002 => write::<u32>(out, 4),
            6 => write::<u32>(out, 64),
            7 => write::<[u16; 3]>(out, [1024, 1024, 1024]),
            8 => write::<u32>(out, 1024),
            9 => write::<[u32; 3]>(out, [u32::MAX; 3]),
            10 => write::<u32>(out, u32::MAX),
            14 => write::<u32>(out, 4096),
            _ => ERR_INVALID_ARGUMENT,
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_agent_iterate_memory_pools(
    agent: Handle,
    callback: Option<unsafe extern "C" fn(Handle, *mut c_void) -> Status>,
    data: *mut c_void,
) -> Status {
    let pools =
        match with(|s| s.enter("hsa_amd_agent_iterate_memory_pools").map_or_else(|| Ok(s.is_gpu(agent.handle)), Err)) {
            Ok(true) => vec![POOL_DEVICE + agent.handle, POOL_GROUP + agent.handle],
            Ok(false) if agent.handle == CPU => vec![POOL_KERNARG, POOL_SYSTEM],
            Ok(false) => return ERR_INVALID_AGENT,
            Err(st) => return st,
        };
    let Some(cb) = callback else { return ERR_INVALID_ARGUMENT };
    for p in pools {
        // SAFETY: the caller's callback and data.
        match unsafe { cb(Handle { handle: p }, data) } {
            OK => {}
            INFO_BREAK => return OK,
            other => return other,
        }
    }
    OK
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_memory_pool_get_info(pool: Handle, attribute: u32, out: *mut c_void) -> Status {
    if let Some(st) = with(|s| s.enter("hsa_amd_memory_pool_get_info")) {
        return st;
    }
    let p = pool.handle;
    let group = (POOL_GROUP..POOL_GROUP + 0x100).contains(&p);
    let (segment, flags, size): (u32, u32, usize) = match p {
        POOL_KERNARG => (0, 1 | 2, 1 << 30),
        POOL_SYSTEM => (0, 2, 1 << 30),
        _ if group => (3, 0, LDS_BYTES),
        _ => (0, 4, 1 << 30),
    };
    // SAFETY: each attribute's documented type.
    unsafe {
        match attribute {
            0 => write::<u32>(out, segment),
            1 => write::<u32>(out, flags),
            2 => write::<usize>(out, size),
            5 => write::<bool>(out, !group),
            _ => ERR_INVALID_ARGUMENT,
        }
    }
}

/// `hsa_amd_agent_memory_pool_get_info`: an agent reaches its own device pool and the host's
/// pools by default, another GPU's device pool when granted (`DISALLOWED_BY_DEFAULT`), over one hop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_agent_memory_pool_get_info(
    agent: Handle,
    pool: Handle,
    attribute: u32,
    out: *mut c_void,
) -> Status {
    let gpus = match with(|s| s.enter("hsa_amd_agent_memory_pool_get_info").map_or(Ok(s.gpus), Err)) {
        Ok(g) => g,
        Err(st) => return st,
    };
    let (a, p) = (agent.handle, pool.handle);
    let is_gpu = |x: u64| (GPU0..GPU0 + gpus).contains(&x);
    if !(a == CPU || is_gpu(a)) || out.is_null() {
        return ERR_INVALID_ARGUMENT;
    }
    let access: u32 = match p {
        POOL_KERNARG | POOL_SYSTEM => 1,
        _ if p == POOL_DEVICE + a => 1,
        _ if p >= POOL_DEVICE && is_gpu(p - POOL_DEVICE) => {
            if is_gpu(a) {
                2
            } else {
                0
            }
        }
        _ => return ERR_INVALID_ARGUMENT,
    };
    // SAFETY: each attribute's documented type.
    unsafe {
        match attribute {
            0 => write::<u32>(out, access),
            1 => write::<u32>(out, u32::from(access != 0)),
            _ => ERR_INVALID_ARGUMENT,
        }
    }
}

// ---- memory ------------------------------------------------------------------------------------

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_memory_pool_allocate(
    pool: Handle,
    size: usize,
    _flags: u32,
    out: *mut *mut c_void,
) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_amd_memory_pool_allocate") {
            return st;
        }
        let p = pool.handle;
        let valid =
            p == POOL_KERNARG || p == POOL_SYSTEM || (p >= POOL_DEVICE + GPU0 && p < POOL_DEVICE + GPU0 + s.gpus);
        if !valid || size == 0 || out.is_null() {
            return ERR_INVALID_ARGUMENT;
        }
        let Ok(layout) = Layout::from_size_align(size, 4096) else { return ERR_INVALID_ALLOCATION };
        // SAFETY: a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return ERR_INVALID_ALLOCATION;
        }
        s.allocs.insert(ptr as u64, Alloc { size, pool: p, granted: Vec::new() });
        // SAFETY: non-null out-pointer.
        unsafe { *out = ptr.cast() };
        OK
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_amd_memory_pool_free") {
            return st;
        }
        match s.allocs.remove(&(ptr as u64)) {
            Some(a) => {
                // SAFETY: allocated above with this layout.
                unsafe { std::alloc::dealloc(ptr.cast(), Layout::from_size_align(a.size, 4096).unwrap()) };
                OK
            }
            None => {
                s.violation(format!("hsa_amd_memory_pool_free of {ptr:p}: not a live allocation (double free?)"));
                ERR_INVALID_ARGUMENT
            }
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_agents_allow_access(
    n: u32,
    agents: *const Handle,
    _flags: *const u32,
    ptr: *const c_void,
) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_amd_agents_allow_access") {
            return st;
        }
        if agents.is_null() || n == 0 {
            return ERR_INVALID_ARGUMENT;
        }
        // SAFETY: `n` agents, HSA's contract.
        let list: Vec<u64> =
            unsafe { std::slice::from_raw_parts(agents, n as usize) }.iter().map(|a| a.handle).collect();
        match s.allocs.get_mut(&(ptr as u64)) {
            Some(a) => {
                a.granted.extend(list);
                OK
            }
            None => {
                s.violation(format!("hsa_amd_agents_allow_access on {ptr:p}: not an allocation base"));
                ERR_INVALID_ARGUMENT
            }
        }
    })
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hsa_amd_memory_async_copy(
    dst: *mut c_void,
    dst_agent: Handle,
    src: *const c_void,
    src_agent: Handle,
    size: usize,
    num_deps: u32,
    deps: *const Handle,
    completion: Handle,
) -> Status {
    let (ok, done, waits) = match with(|s| {
        if let Some(st) = s.enter("hsa_amd_memory_async_copy") {
            return Err(st);
        }
        if dst.is_null() || src.is_null() || completion.handle == 0 {
            return Err(ERR_INVALID_ARGUMENT);
        }
        let mut ok = s.check_access(dst_agent.handle, dst as u64, size, "async copy destination")
            & s.check_access(src_agent.handle, src as u64, size, "async copy source");
        if dst_agent.handle != src_agent.handle && s.is_gpu(dst_agent.handle) && s.is_gpu(src_agent.handle) {
            // Between two GPUs, as ROCr documents: each agent must reach both buffers.
            ok &= s.check_access(dst_agent.handle, src as u64, size, "peer copy source, from the destination's agent")
                & s.check_access(src_agent.handle, dst as u64, size, "peer copy destination, from the source's agent");
        }
        let done = s.signal(completion.handle, "async copy completion").ok_or(ERR_INVALID_SIGNAL)?;
        let mut waits = Vec::new();
        for i in 0..num_deps as usize {
            // SAFETY: `num_deps` handles, HSA's contract.
            let h = unsafe { *deps.add(i) }.handle;
            waits.push(s.signal(h, "async copy dependency").ok_or(ERR_INVALID_SIGNAL)?);
        }
        Ok((ok, done, waits))
    }) {
        Ok(v) => v,
        Err(st) => return st,
    };
    for w in waits {
        let mut v = w.value.lock().unwrap();
        while *v > 0 {
            v = w.changed.wait(v).unwrap();
        }
    }
    if ok {
        // SAFETY: both ranges lie in live allocations (checked above).
        unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), size) };
    }
    let v = done.get();
    done.set(v - 1);
    OK
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_memory_fill(ptr: *mut c_void, value: u32, count: usize) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_amd_memory_fill") {
            return st;
        }
        if (ptr as usize) % 4 != 0 {
            return ERR_INVALID_ARGUMENT;
        }
        let owner = s.allocs.range(..=(ptr as u64)).next_back().map(|(_, a)| a.pool);
        let agent = match owner {
            Some(p) if (POOL_DEVICE..POOL_GROUP).contains(&p) => p - POOL_DEVICE,
            _ => CPU,
        };
        if !s.check_access(agent, ptr as u64, count * 4, "hsa_amd_memory_fill") {
            return ERR_INVALID_ARGUMENT;
        }
        // SAFETY: checked to lie in one live allocation.
        unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u32>(), count) }.fill(value);
        OK
    })
}

// ---- signals -------------------------------------------------------------------------------------

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_signal_create(
    initial: i64,
    _n: u32,
    _consumers: *const Handle,
    out: *mut Handle,
) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_signal_create") {
            return st;
        }
        if out.is_null() {
            return ERR_INVALID_ARGUMENT;
        }
        let id = s.id();
        s.signals.insert(id, Signal::new(initial));
        s.live_signals += 1;
        // SAFETY: non-null out-pointer.
        unsafe { *out = Handle { handle: id } };
        OK
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsa_signal_destroy(signal: Handle) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_signal_destroy") {
            return st;
        }
        match s.signals.get(&signal.handle) {
            Some(sig) if !sig.destroyed.swap(true, Ordering::AcqRel) => {
                s.live_signals -= 1;
                OK
            }
            Some(_) => {
                s.violation(format!("hsa_signal_destroy: signal {:#x} destroyed twice", signal.handle));
                ERR_INVALID_SIGNAL
            }
            None => ERR_INVALID_SIGNAL,
        }
    })
}

fn live_signal(h: Handle, what: &str) -> Option<Arc<Signal>> {
    with(|s| s.signal(h.handle, what))
}

#[unsafe(no_mangle)]
pub extern "C" fn hsa_signal_load_scacquire(signal: Handle) -> i64 {
    live_signal(signal, "hsa_signal_load_scacquire").map_or(0, |s| s.get())
}

#[unsafe(no_mangle)]
pub extern "C" fn hsa_signal_store_screlease(signal: Handle, value: i64) {
    if let Some(s) = live_signal(signal, "hsa_signal_store_screlease") {
        s.set(value);
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn hsa_signal_wait_scacquire(
    signal: Handle,
    condition: u32,
    compare: i64,
    timeout: u64,
    _state: u32,
) -> i64 {
    // The hint is taken as nanoseconds (the simulation's timestamp unit); u64::MAX: no limit.
    let deadline = std::time::Instant::now().checked_add(Duration::from_nanos(timeout));
    let Some(s) = live_signal(signal, "hsa_signal_wait_scacquire") else { return 0 };
    let holds = |v: i64| match condition {
        0 => v == compare,
        1 => v != compare,
        2 => v < compare,
        _ => v >= compare,
    };
    let mut v = s.value.lock().unwrap();
    while !holds(*v) {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return *v;
        }
        let (g, _) = s.changed.wait_timeout(v, Duration::from_millis(1)).unwrap();
        v = g;
        if s.destroyed.load(Ordering::Acquire) {
            drop(v);
            report("hsa_signal_wait_scacquire: signal destroyed while waited on".into());
            return 0;
        }
    }
    *v
}

// ---- queues and the packet processor -----------------------------------------------------------

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hsa_queue_create(
    agent: Handle,
    size: u32,
    _type: u32,
    callback: Option<QueueCallback>,
    data: *mut c_void,
    _private: u32,
    _group: u32,
    out: *mut *mut hsa_queue_t,
) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_queue_create") {
            return st;
        }
        if !s.is_gpu(agent.handle) {
            return ERR_INVALID_AGENT;
        }
        if out.is_null() || !size.is_power_of_two() || size > 4096 {
            return ERR_INVALID_ARGUMENT;
        }
        let ring_layout = Layout::from_size_align(size as usize * 64, 64).unwrap();
        // SAFETY: a non-zero size.
        let ring = unsafe { std::alloc::alloc_zeroed(ring_layout) };
        for i in 0..size as usize {
            // SAFETY: within the ring; headers start INVALID.
            unsafe { ring.add(i * 64).cast::<u16>().write(1) };
        }
        let doorbell_id = s.id();
        let doorbell = Signal::new(-1);
        s.signals.insert(doorbell_id, doorbell.clone());
        let id = s.id();
        let mem = Box::into_raw(Box::new(SimQueueMem {
            public: hsa_queue_t {
                type_: 0,
                features: 1,
                base_address: ring.cast(),
                doorbell_signal: Handle { handle: doorbell_id },
                size,
                reserved1: 0,
                id,
            },
            write_index: AtomicU64::new(0),
            read_index: AtomicU64::new(0),
        }));
        let ctl = Arc::new(QueueCtl {
            mem,
            callback,
            data,
            stopped: AtomicBool::new(false),
            agent: agent.handle,
            doorbell,
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
        });
        let worker = ctl.clone();
        *ctl.thread.lock().unwrap() = Some(std::thread::spawn(move || process(&worker)));
        s.queues.insert(mem as usize, ctl);
        // SAFETY: non-null out-pointer.
        unsafe { *out = mem.cast() };
        OK
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsa_queue_destroy(queue: *mut hsa_queue_t) -> Status {
    let ctl = match with(|s| {
        if let Some(st) = s.enter("hsa_queue_destroy") {
            return Err(st);
        }
        match s.queues.remove(&(queue as usize)) {
            Some(c) => Ok(c),
            None => {
                s.violation(format!("hsa_queue_destroy of {queue:p}: not a live queue (destroyed twice?)"));
                Err(ERR_INVALID_QUEUE)
            }
        }
    }) {
        Ok(c) => c,
        Err(st) => return st,
    };
    // SAFETY: the queue memory lives until freed below.
    let mem = unsafe { &*ctl.mem };
    let (r, w) = (mem.read_index.load(Ordering::Acquire), mem.write_index.load(Ordering::Acquire));
    if r != w && !ctl.stopped.load(Ordering::Acquire) {
        report(format!("hsa_queue_destroy with {} packet(s) not yet processed", w - r));
    }
    ctl.stop.store(true, Ordering::Release);
    ctl.doorbell.set(-2);
    if let Some(t) = ctl.thread.lock().unwrap().take() {
        let _ = t.join();
    }
    let size = mem.public.size as usize;
    // SAFETY: allocated in hsa_queue_create with these layouts; the processor has stopped.
    unsafe {
        std::alloc::dealloc(mem.public.base_address.cast(), Layout::from_size_align(size * 64, 64).unwrap());
        drop(Box::from_raw(ctl.mem));
    }
    OK
}

#[unsafe(no_mangle)]
pub extern "C" fn hsa_queue_add_write_index_scacq_screl(queue: *const hsa_queue_t, n: u64) -> u64 {
    // SAFETY: a queue from hsa_queue_create (SimQueueMem starts with the public struct).
    unsafe { &*queue.cast::<SimQueueMem>() }.write_index.fetch_add(n, Ordering::AcqRel)
}

#[unsafe(no_mangle)]
pub extern "C" fn hsa_queue_load_read_index_scacquire(queue: *const hsa_queue_t) -> u64 {
    // SAFETY: as above.
    unsafe { &*queue.cast::<SimQueueMem>() }.read_index.load(Ordering::Acquire)
}

/// The packet processor of one queue: takes packets in order as their headers become valid.
fn process(ctl: &QueueCtl) {
    // SAFETY: the queue memory outlives this thread (joined before it is freed).
    let mem = unsafe { &*ctl.mem };
    let size = u64::from(mem.public.size);
    let ring = mem.public.base_address.cast::<u8>();
    loop {
        let r = mem.read_index.load(Ordering::Acquire);
        if r == mem.write_index.load(Ordering::Acquire) || ctl.stopped.load(Ordering::Acquire) {
            if ctl.stop.load(Ordering::Acquire) {
                return;
            }
            let v = ctl.doorbell.value.lock().unwrap();
            let _ = ctl.doorbell.changed.wait_timeout(v, Duration::from_millis(2)).unwrap();
            continue;
        }
        // SAFETY: the slot lies in the ring; its first 16 bits are the header, accessed atomically.
        let packet = unsafe { ring.add(((r % size) * 64) as usize) };
        // SAFETY: as above (2-byte aligned: the ring is 64-byte aligned).
        let header = unsafe { &*packet.cast::<AtomicU16>() }.load(Ordering::Acquire);
        let kind = header & 0xff;
        if kind == 1 {
            if ctl.stop.load(Ordering::Acquire) {
                return;
            }
            std::thread::yield_now();
            continue;
        }
        // SAFETY: a published 64-byte packet.
        let bytes: [u8; 64] = unsafe { std::ptr::read_volatile(packet.cast::<[u8; 64]>()) };
        if header & (1 << 8) == 0 {
            report("a packet without the barrier bit (ordo's queues are in order)".into());
        }
        // As a packet processor does, the packet is consumed (slot back to INVALID, read index
        // past it) when it is launched, before it completes: once its completion signal fires,
        // the read index is already beyond it.
        // SAFETY: as above.
        unsafe { &*packet.cast::<AtomicU16>() }.store(1, Ordering::Release);
        mem.read_index.store(r + 1, Ordering::Release);
        match kind {
            2 => dispatch(ctl, &bytes),
            3 => barrier(&bytes),
            k => report(format!("packet of unknown type {k}")),
        }
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn complete(h: u64, what: &str) {
    if h == 0 {
        return;
    }
    if let Some(s) = live_signal(Handle { handle: h }, what) {
        let v = s.get();
        s.set(v - 1);
    }
}

fn barrier(p: &[u8]) {
    for i in 0..5 {
        let h = u64_at(p, 8 + i * 8);
        if h != 0 {
            if let Some(s) = live_signal(Handle { handle: h }, "barrier-AND dependency") {
                let mut v = s.value.lock().unwrap();
                while *v > 0 {
                    v = s.changed.wait(v).unwrap();
                }
            }
        }
    }
    complete(u64_at(p, 56), "barrier-AND completion");
}

fn dispatch(ctl: &QueueCtl, p: &[u8]) {
    let agent = ctl.agent;
    let setup = u16_at(p, 2);
    let wg = [u16_at(p, 4), u16_at(p, 6), u16_at(p, 8)].map(u32::from);
    let grid = [u32_at(p, 12), u32_at(p, 16), u32_at(p, 20)];
    let group_size = u32_at(p, 28) as usize;
    let (object, kernarg, signal) = (u64_at(p, 32), u64_at(p, 40), u64_at(p, 56));
    let prepared = with(|s| {
        s.dispatches += 1;
        let Some(k) = s.kernel_objects.get(&object).cloned() else {
            s.violation(format!(
                "dispatch of unknown kernel object {object:#x} (header published before the body was written?)"
            ));
            return None;
        };
        if wg.contains(&0) || grid.contains(&0) || setup & 3 == 0 {
            s.violation(format!("dispatch of {} with a zero size or no dimensions (body not written?)", k.name));
            return None;
        }
        match s.allocs.range(..=kernarg).next_back() {
            Some((&base, a)) if base == kernarg && a.pool == POOL_KERNARG => {
                if a.size != k.kernarg_size as usize {
                    s.violation(format!(
                        "dispatch of {}: kernarg buffer of {} bytes, the symbol's segment is {}",
                        k.name, a.size, k.kernarg_size
                    ));
                    return None;
                }
            }
            _ if k.kernarg_size == 0 && kernarg == 0 => {}
            _ => {
                s.violation(format!(
                    "dispatch of {}: kernarg buffer {kernarg:#x} is not from the kernarg pool",
                    k.name
                ));
                return None;
            }
        }
        if group_size < k.group_size as usize {
            s.violation(format!("dispatch of {}: group segment smaller than the kernel's static LDS", k.name));
        }
        Some(k)
    });
    if let Some(k) = prepared {
        let args: &[u8] = if kernarg == 0 {
            &[]
        } else {
            // SAFETY: checked: a kernarg-pool allocation of exactly the kernel's segment size.
            unsafe { std::slice::from_raw_parts(kernarg as usize as *const u8, k.kernarg_size as usize) }
        };
        match run_twin(agent, &k, args, wg, grid, group_size) {
            Ok(()) => {}
            Err(Twin::Fault(what)) => {
                // As hardware does: the queue stops, its error callback runs, and this
                // dispatch never completes.
                let _ = what;
                ctl.stopped.store(true, Ordering::Release);
                if let Some(cb) = ctl.callback {
                    // SAFETY: the callback and data the queue was created with.
                    unsafe { cb(0x1016, ctl.mem.cast(), ctl.data) };
                }
                return;
            }
            Err(Twin::Violation(e)) => report(format!("dispatch of {}: {e}", k.name)),
        }
    }
    complete(signal, "dispatch completion");
}

/// Why a host twin did not finish.
enum Twin {
    /// The kernel touched memory outside every allocation: a fault of the program.
    Fault(String),
    /// Something ordo must not do (memory not granted, wrong hidden arguments, …).
    Violation(String),
}

impl From<String> for Twin {
    fn from(s: String) -> Self {
        Self::Violation(s)
    }
}

impl From<&str> for Twin {
    fn from(s: &str) -> Self {
        Self::Violation(s.to_string())
    }
}

/// Kernel arguments read at the metadata's offsets.
struct Args<'a> {
    k: &'a Kernel,
    bytes: &'a [u8],
}

impl Args<'_> {
    fn explicit(&self, i: usize) -> Result<&Arg, String> {
        self.k.args.iter().filter(|a| !a.kind.starts_with("hidden_")).nth(i).ok_or(format!("no argument {i}"))
    }
    fn raw(&self, i: usize) -> Result<u64, String> {
        let a = self.explicit(i)?;
        let mut b = [0u8; 8];
        b[..a.size.min(8)].copy_from_slice(&self.bytes[a.offset..a.offset + a.size.min(8)]);
        Ok(u64::from_le_bytes(b))
    }
    fn hidden(&self, kind: &str) -> Result<u64, String> {
        let a = self.k.args.iter().find(|a| a.kind == kind).ok_or(format!("no {kind} argument"))?;
        let mut b = [0u8; 8];
        b[..a.size.min(8)].copy_from_slice(&self.bytes[a.offset..a.offset + a.size.min(8)]);
        Ok(u64::from_le_bytes(b))
    }
}

fn access(agent: u64, addr: u64, len: usize, what: &str) -> Result<(), Twin> {
    with(|s| {
        let mapped = len == 0
            || s.allocs.range(..=addr).next_back().is_some_and(|(&base, a)| addr + len as u64 <= base + a.size as u64);
        if !mapped {
            return Err(Twin::Fault(format!("{what}: {len} bytes at {addr:#x} lie outside every allocation")));
        }
        if s.check_access(agent, addr, len, what) {
            Ok(())
        } else {
            Err(Twin::Violation(format!("{what}: access not granted")))
        }
    })
}

/// Runs the host twin of `k` over the grid, as the compiled kernel computes its indices: the
/// work-group size from `hidden_group_size_x`, the grid from the packet.
fn run_twin(agent: u64, k: &Kernel, bytes: &[u8], wg: [u32; 3], grid: [u32; 3], group: usize) -> Result<(), Twin> {
    let a = Args { k, bytes };
    if k.name == "empty" || k.name == "noop" {
        return Ok(());
    }
    let group_x = a.hidden("hidden_group_size_x")?;
    if group_x != u64::from(wg[0]) {
        return Err(format!("hidden_group_size_x is {group_x}, the packet's work-group is {}", wg[0]).into());
    }
    let blocks = a.hidden("hidden_block_count_x")?;
    if blocks * u64::from(wg[0]) != u64::from(grid[0]) {
        return Err(format!("hidden_block_count_x is {blocks}, the grid is {} work-items of {}", grid[0], wg[0]).into());
    }
    let items = (blocks * group_x) as usize;
    match k.name.as_str() {
        "vector_add_f32" => {
            let (pa, pb, pc, n) = (a.raw(0)?, a.raw(1)?, a.raw(2)?, a.raw(3)? as u32 as usize);
            let m = n.min(items);
            access(agent, pa, m * 4, "vector_add_f32 a")?;
            access(agent, pb, m * 4, "vector_add_f32 b")?;
            access(agent, pc, m * 4, "vector_add_f32 c")?;
            for i in 0..m {
                // SAFETY: checked ranges of live allocations.
                unsafe {
                    let v = *(pa as *const f32).add(i) + *(pb as *const f32).add(i);
                    *(pc as *mut f32).add(i) = v;
                }
            }
        }
        "reduce_sum_f32" => {
            let (px, pout, n) = (a.raw(0)?, a.raw(1)?, a.raw(2)? as u32 as usize);
            let m = n.min(items);
            access(agent, px, m * 4, "reduce_sum_f32 x")?;
            access(agent, pout, 4, "reduce_sum_f32 out")?;
            for i in 0..m {
                // SAFETY: checked ranges.
                unsafe { *(pout as *mut f32) += *(px as *const f32).add(i) };
            }
        }
        "mixed_args" => {
            let scale = f32::from_bits(a.raw(0)? as u32);
            let (pout, offset, lds, tag, n) =
                (a.raw(1)?, a.raw(2)? as i64, a.raw(3)? as usize, a.raw(4)? as u8 as i8, a.raw(5)? as u32 as usize);
            let dynamic = a.hidden("hidden_dynamic_lds_size").unwrap_or(0) as usize;
            if lds + wg[0] as usize * 4 > group {
                return Err(format!(
                    "LDS writes at {lds}..{} beyond the dispatch's group segment of {group} bytes",
                    lds + wg[0] as usize * 4
                )
                .into());
            }
            if lds + dynamic > group {
                return Err("hidden_dynamic_lds_size reaches beyond the group segment".into());
            }
            let m = n.min(items);
            access(agent, pout, m * 4, "mixed_args out")?;
            for i in 0..m {
                let v = scale * f32::from(tag) + offset as f32 + i as f32;
                // SAFETY: checked range.
                unsafe { *(pout as *mut f32).add(i) = v };
            }
        }
        other => return Err(format!("no host twin for kernel {other}").into()),
    }
    Ok(())
}

// ---- code objects and executables ---------------------------------------------------------------

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_code_object_reader_create_from_memory(
    data: *const c_void,
    size: usize,
    out: *mut Handle,
) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_code_object_reader_create_from_memory") {
            return st;
        }
        if data.is_null() || size == 0 || out.is_null() {
            return ERR_INVALID_ARGUMENT;
        }
        // SAFETY: `size` readable bytes, HSA's contract.
        let copy = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) }.to_vec();
        let id = s.id();
        s.readers.insert(id, copy);
        // SAFETY: non-null out-pointer.
        unsafe { *out = Handle { handle: id } };
        OK
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsa_code_object_reader_destroy(reader: Handle) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_code_object_reader_destroy") {
            return st;
        }
        if s.readers.remove(&reader.handle).is_none() {
            s.violation("hsa_code_object_reader_destroy of a reader that is not live".into());
            return ERR_INVALID_CODE_OBJECT_READER;
        }
        OK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_create_alt(
    _profile: u32,
    _rounding: u32,
    _options: *const c_char,
    out: *mut Handle,
) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_executable_create_alt") {
            return st;
        }
        if out.is_null() {
            return ERR_INVALID_ARGUMENT;
        }
        let id = s.id();
        s.executables.insert(id, Some(Executable { frozen: false, kernels: Vec::new() }));
        // SAFETY: non-null out-pointer.
        unsafe { *out = Handle { handle: id } };
        OK
    })
}

fn parse(image: &[u8]) -> Result<Vec<Kernel>, String> {
    use object::read::elf::{FileHeader, SectionHeader};
    let h = object::elf::FileHeader64::<object::LittleEndian>::parse(image).map_err(|e| e.to_string())?;
    let e = h.endian().map_err(|e| e.to_string())?;
    if h.e_machine(e) != object::elf::EM_AMDGPU {
        return Err("not AMDGPU".into());
    }
    if h.e_flags(e) & 0xff != EF_AMDGPU_MACH_GFX90A {
        return Err(format!("code object for another ISA (e_flags {:#x}), the agent is gfx90a", h.e_flags(e)));
    }
    let mut desc = None;
    for sec in h.sections(e, image).map_err(|e| e.to_string())?.iter() {
        if let Some(mut notes) = sec.notes(e, image).map_err(|e| e.to_string())? {
            while let Some(n) = notes.next().map_err(|e| e.to_string())? {
                if n.name() == b"AMDGPU" && n.n_type(e) == 32 {
                    desc = Some(n.desc());
                }
            }
        }
    }
    let mut d = desc.ok_or("no metadata")?;
    let v = rmpv::decode::read_value(&mut d).map_err(|e| e.to_string())?;
    let get = |m: &rmpv::Value, k: &str| -> Option<rmpv::Value> {
        m.as_map()?.iter().find(|(kk, _)| kk.as_str() == Some(k)).map(|(_, v)| v.clone())
    };
    let num = |m: &rmpv::Value, k: &str| get(m, k).and_then(|v| v.as_u64()).unwrap_or(0);
    let mut out = Vec::new();
    for k in get(&v, "amdhsa.kernels").and_then(|v| v.as_array().cloned()).ok_or("no kernels")? {
        let args = get(&k, ".args")
            .and_then(|a| a.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|a| Arg {
                offset: num(a, ".offset") as usize,
                size: num(a, ".size") as usize,
                kind: get(a, ".value_kind").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
            })
            .collect();
        out.push(Kernel {
            name: get(&k, ".name").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
            symbol: get(&k, ".symbol").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
            kernarg_size: num(&k, ".kernarg_segment_size") as u32,
            group_size: num(&k, ".group_segment_fixed_size") as u32,
            private_size: num(&k, ".private_segment_fixed_size") as u32,
            args,
        });
    }
    Ok(out)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_load_agent_code_object(
    exec: Handle,
    agent: Handle,
    reader: Handle,
    _options: *const c_char,
    _loaded: *mut Handle,
) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_executable_load_agent_code_object") {
            return st;
        }
        if !s.is_gpu(agent.handle) {
            return ERR_INVALID_AGENT;
        }
        let Some(image) = s.readers.get(&reader.handle).cloned() else { return ERR_INVALID_CODE_OBJECT_READER };
        let kernels = match parse(&image) {
            Ok(k) => k,
            Err(_) => return ERR_INVALID_CODE_OBJECT,
        };
        match s.executables.get_mut(&exec.handle) {
            Some(Some(e)) if e.frozen => ERR_FROZEN_EXECUTABLE,
            Some(Some(e)) => {
                e.kernels = kernels;
                OK
            }
            _ => ERR_INVALID_EXECUTABLE,
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsa_executable_freeze(exec: Handle, _options: *const c_char) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_executable_freeze") {
            return st;
        }
        match s.executables.get_mut(&exec.handle) {
            Some(Some(e)) => {
                e.frozen = true;
                OK
            }
            _ => ERR_INVALID_EXECUTABLE,
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsa_executable_destroy(exec: Handle) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_executable_destroy") {
            return st;
        }
        match s.executables.get_mut(&exec.handle) {
            Some(e @ Some(_)) => {
                *e = None;
                s.symbols.retain(|_, (x, _)| *x != exec.handle);
                OK
            }
            Some(None) => {
                s.violation("hsa_executable_destroy: executable destroyed twice".into());
                ERR_INVALID_EXECUTABLE
            }
            None => ERR_INVALID_EXECUTABLE,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_get_symbol_by_name(
    exec: Handle,
    name: *const c_char,
    agent: *const Handle,
    out: *mut Handle,
) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_executable_get_symbol_by_name") {
            return st;
        }
        if name.is_null() || out.is_null() || agent.is_null() {
            return ERR_INVALID_ARGUMENT;
        }
        // SAFETY: a NUL-terminated name, HSA's contract.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
        let index = match s.executables.get(&exec.handle) {
            Some(Some(e)) if !e.frozen => {
                s.violation("symbol lookup in an executable that is not frozen".into());
                return ERR_INVALID_EXECUTABLE;
            }
            Some(Some(e)) => e.kernels.iter().position(|k| k.symbol == name),
            _ => return ERR_INVALID_EXECUTABLE,
        };
        let Some(index) = index else { return ERR_INVALID_SYMBOL_NAME };
        let id = s.id();
        s.symbols.insert(id, (exec.handle, index));
        // SAFETY: non-null out-pointer.
        unsafe { *out = Handle { handle: id } };
        OK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_symbol_get_info(symbol: Handle, attribute: u32, out: *mut c_void) -> Status {
    with(|s| {
        if let Some(st) = s.enter("hsa_executable_symbol_get_info") {
            return st;
        }
        let Some(&(exec, index)) = s.symbols.get(&symbol.handle) else { return ERR_INVALID_ARGUMENT };
        let Some(Some(e)) = s.executables.get(&exec) else { return ERR_INVALID_EXECUTABLE };
        let k = e.kernels[index].clone();
        // The kernel object: an address unique to this executable and kernel.
        let object = 0x7000_0000_0000 + exec * 0x1000 + index as u64 * 64;
        s.kernel_objects.insert(object, k.clone());
        // SAFETY: each attribute's documented type.
        unsafe {
            match attribute {
                22 => write::<u64>(out, object),
                11 => write::<u32>(out, k.kernarg_size),
                13 => write::<u32>(out, k.group_size),
                14 => write::<u32>(out, k.private_size),
                _ => ERR_INVALID_ARGUMENT,
            }
        }
    })
}

// ---- test hooks ----------------------------------------------------------------------------------

/// What the simulation counts.
#[repr(C)]
#[derive(Default)]
pub struct ordo_hsa_sim_stats {
    pub initialized: u64,
    pub live_executables: u64,
    pub live_queues: u64,
    pub live_signals: u64,
    pub live_allocations: u64,
    pub live_readers: u64,
    pub dispatches: u64,
    pub violations: u64,
    pub calls: u64,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_hsa_sim_stats(out: *mut ordo_hsa_sim_stats) {
    let stats = with(|s| ordo_hsa_sim_stats {
        initialized: u64::from(s.initialized),
        live_executables: s.executables.values().filter(|e| e.is_some()).count() as u64,
        live_queues: s.queues.len() as u64,
        live_signals: s.live_signals,
        live_allocations: s.allocs.len() as u64,
        live_readers: s.readers.len() as u64,
        dispatches: s.dispatches,
        violations: s.violations.len() as u64,
        calls: s.counted_calls,
    });
    // SAFETY: the caller's out-pointer.
    unsafe { out.write(stats) };
}

/// Copies violation `index` (NUL-terminated, truncated to `len`); returns its full length, or
/// -1 when there is no such violation.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_hsa_sim_violation(index: u64, buf: *mut u8, len: usize) -> i64 {
    // SAFETY: the caller's buffer.
    unsafe { copy_text(with(|s| s.violations.get(index as usize).cloned()), buf, len) }
}

/// The call log: every status-returning call's name, one per line.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_hsa_sim_calls(buf: *mut u8, len: usize) -> i64 {
    // SAFETY: the caller's buffer.
    unsafe { copy_text(Some(with(|s| s.calls.join("\n"))), buf, len) }
}

unsafe fn copy_text(text: Option<String>, buf: *mut u8, len: usize) -> i64 {
    let Some(t) = text else { return -1 };
    if !buf.is_null() && len > 0 {
        let n = t.len().min(len - 1);
        // SAFETY: the caller's buffer of `len` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(t.as_ptr(), buf, n);
            *buf.add(n) = 0;
        }
    }
    t.len() as i64
}

/// Starts over: forgets every object (left alive by an injected release failure: leaked, its
/// queue processor stopped), clears violations, the call log and counters, sets the GPU agent
/// count and fails the `fail_at`-th counted call (from now) with `status` (`u64::MAX`: none).
#[unsafe(no_mangle)]
pub extern "C" fn ordo_hsa_sim_reset(gpus: u32, fail_at: u64, status: u32) {
    with(|s| {
        for q in s.queues.values() {
            q.stop.store(true, Ordering::Release);
            q.doorbell.set(-2);
        }
        s.queues.clear();
        s.signals.clear();
        s.live_signals = 0;
        s.allocs.clear();
        s.readers.clear();
        s.executables.clear();
        s.symbols.clear();
        s.kernel_objects.clear();
        s.initialized = 0;
        s.violations.clear();
        s.calls.clear();
        s.counted_calls = 0;
        s.dispatches = 0;
        s.gpus = u64::from(gpus.clamp(1, 2));
        s.fail_at = (fail_at != u64::MAX).then_some((fail_at, status));
    });
}
