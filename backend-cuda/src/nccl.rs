//! Collectives over NCCL, through cudarc's `nccl` bindings (`libnccl.so` loaded at run time, on
//! first use; its absence is `NotPresent`, never a panic: cudarc panics on a missing library, so
//! nothing of NCCL is called before `library` found it).
//!
//! Every communicator is non-blocking (`ncclCommInitRankConfig` with `blocking = 0`): a call
//! that answers `ncclInProgress` is waited for by polling `ncclCommGetAsyncError`, within
//! `ORDO_NCCL_TIMEOUT_MS` (default 30,000) where a peer may never come (init, finalize), so a
//! missing peer is a `Timeout`, not a hang. A communicator value is a pointer to `Comm`. A queue
//! synchronise on a device with communicators polls the stream and the communicators' errors:
//! a communicator that reports one (a peer gone) is aborted, which ends its kernels, and the
//! synchronise returns the error; one that waits longer than the bound aborts the device's
//! communicators and returns `Timeout` (a peer that died without a word ends nothing).

use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use cudarc::nccl::sys::{self, ncclComm_t, ncclResult_t};
use ordo_core::{BackendError, BackendResult, CollectiveCall, CollectiveKind, CollectiveLibrary, ErrorCode, UniqueId};

use crate::device::MAX_CUDA_DEVICES;

/// Runs a call with a device's context current: `in_device(ordinal, f)`.
pub(crate) type InDevice<'a> = &'a dyn Fn(u32, &mut dyn FnMut() -> BackendResult<()>) -> BackendResult<()>;

/// The oldest NCCL used: 2.17 (`ncclCommFinalize`, configs with `blocking`).
const MIN_VERSION: i32 = 21700;
/// The config layout version passed (2.17's fields: every later NCCL reads it).
const CONFIG_VERSION: u32 = 21700;
const CONFIG_MAGIC: u32 = 0xcafe_beef;
const UNDEF_INT: i32 = i32::MIN;

/// A communicator's state in the teardown.
const LIVE: u8 = 0;
const FINALIZED: u8 = 1;
const FAILED: u8 = 2;
/// Aborted after an asynchronous error (`Nccl::check_device`): its destroy calls nothing.
const ABORTED: u8 = 3;

pub(crate) struct Comm {
    raw: ncclComm_t,
    device: u32,
    state: AtomicU8,
    /// The error that made it fail (finalize, or an asynchronous error).
    error: Mutex<Option<BackendError>>,
}

/// What the backend keeps of NCCL: how many communicators each device has, and which.
pub(crate) struct Nccl {
    live: [AtomicU32; MAX_CUDA_DEVICES],
    comms: Mutex<Vec<usize>>,
}

impl Nccl {
    pub(crate) const fn new() -> Self {
        Self { live: [const { AtomicU32::new(0) }; MAX_CUDA_DEVICES], comms: Mutex::new(Vec::new()) }
    }

    /// Whether `device` has communicators (its queue synchronisations poll their errors).
    pub(crate) fn any_on(&self, device: u32) -> bool {
        self.live.get(device as usize).is_some_and(|n| n.load(Ordering::Acquire) > 0)
    }

    fn add(&self, comm: *mut Comm, device: u32) {
        self.comms.lock().unwrap_or_else(|e| e.into_inner()).push(comm as usize);
        if let Some(n) = self.live.get(device as usize) {
            n.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Takes the communicator out of the backend's lists and frees its record.
    ///
    /// # Safety
    /// A value `add` recorded, not removed before.
    unsafe fn remove(&self, comm: *mut Comm) -> Box<Comm> {
        self.comms.lock().unwrap_or_else(|e| e.into_inner()).retain(|&c| c != comm as usize);
        // SAFETY: made by `Box::into_raw` in `record`; the caller's contract: removed once.
        let comm = unsafe { Box::from_raw(comm) };
        if let Some(n) = self.live.get(comm.device as usize) {
            n.fetch_sub(1, Ordering::AcqRel);
        }
        comm
    }

    /// Forgets every communicator without a call (deinit after the teardown destroyed them, or
    /// a forked child, where the parent's are not this process's to release).
    pub(crate) fn forget(&self) {
        let mut comms = self.comms.lock().unwrap_or_else(|e| e.into_inner());
        comms.clear();
        for n in &self.live {
            n.store(0, Ordering::Release);
        }
    }

    /// Aborts every communicator of `device` with `error` (a synchronise that waited past the
    /// bound: a peer that never answers ends no kernel and sets no error).
    pub(crate) fn abort_device(&self, device: u32, error: BackendError) {
        let comms = self.comms.lock().unwrap_or_else(|e| e.into_inner());
        for &c in comms.iter() {
            // SAFETY: a live record, as in `check_device`.
            let comm = unsafe { &*(c as *const Comm) };
            // One abort, whichever thread's synchronise gets here first.
            if comm.device == device && comm.state.swap(ABORTED, Ordering::AcqRel) != ABORTED {
                *comm.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(error);
                // SAFETY: a live communicator; its destroy sees `ABORTED` and calls nothing.
                unsafe { sys::ncclCommAbort(comm.raw) };
            }
        }
    }

    /// The first asynchronous error of `device`'s communicators, which are aborted (so that
    /// the kernels waiting for their peers end); `Ok` when none has one.
    pub(crate) fn check_device(&self, device: u32) -> BackendResult<()> {
        let comms: Vec<usize> = self.comms.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut first = Ok(());
        for c in comms {
            // SAFETY: a live record (the list holds only those; removal needs the runtime's
            // exclusive access, which a synchronise excludes).
            let comm = unsafe { &*(c as *const Comm) };
            if comm.device != device || comm.state.load(Ordering::Acquire) == ABORTED {
                continue;
            }
            if let Err(e) = async_error(comm.raw) {
                // One abort, whichever thread's synchronise gets here first.
                if comm.state.swap(ABORTED, Ordering::AcqRel) != ABORTED {
                    *comm.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    // SAFETY: a live communicator; not passed to NCCL again (collectives on it
                    // are refused, its destroy sees `ABORTED` and frees only the record).
                    unsafe { sys::ncclCommAbort(comm.raw) };
                }
                first = first.and(Err(e));
            }
        }
        first
    }
}

fn fail(comm: &Comm, e: BackendError) {
    comm.state.store(FAILED, Ordering::Release);
    *comm.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
}

/// NCCL's library and version, found once.
pub(crate) fn library() -> BackendResult<CollectiveLibrary> {
    static FOUND: OnceLock<Result<u32, &'static str>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        // SAFETY: tries to open the library by cudarc's candidate names; no NCCL call.
        if !unsafe { sys::is_culib_present() } {
            return Err("NCCL was not found: libnccl.so is not on the library path (the libnccl2 and libnccl-dev \
                        packages, or a libnccl.so link beside the nvidia-nccl wheel's libnccl.so.2)");
        }
        let mut version = 0;
        // SAFETY: the library is present; a valid out-pointer.
        if unsafe { sys::ncclGetVersion(&mut version) } != ncclResult_t::ncclSuccess || version < MIN_VERSION {
            return Err("NCCL is older than 2.17 (ncclCommFinalize and non-blocking communicators are needed)");
        }
        Ok(version as u32)
    });
    match *found {
        Ok(version) => Ok(CollectiveLibrary { name: "NCCL", version }),
        Err(reason) => Err(BackendError::new(ErrorCode::NotPresent, 0, reason)),
    }
}

/// The bound of waits a peer may never end.
pub(crate) fn timeout() -> Duration {
    static MS: OnceLock<u64> = OnceLock::new();
    let ms = *MS.get_or_init(|| {
        std::env::var("ORDO_NCCL_TIMEOUT_MS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|&v| v > 0)
            .unwrap_or(30_000)
    });
    Duration::from_millis(ms)
}

fn message(r: ncclResult_t) -> &'static str {
    match r {
        ncclResult_t::ncclUnhandledCudaError => "NCCL: a CUDA call failed",
        ncclResult_t::ncclSystemError => "NCCL: a system call failed (a peer process may have exited)",
        ncclResult_t::ncclInternalError => "NCCL: internal error",
        ncclResult_t::ncclInvalidArgument => "NCCL: invalid argument",
        ncclResult_t::ncclInvalidUsage => "NCCL: invalid usage",
        ncclResult_t::ncclRemoteError => "NCCL: a remote peer failed (it exited, or the network failed)",
        ncclResult_t::ncclTimeout => "NCCL: timed out",
        _ => "NCCL: error",
    }
}

fn check(call: &'static str, r: ncclResult_t) -> BackendResult<bool> {
    match r {
        ncclResult_t::ncclSuccess => Ok(true),
        ncclResult_t::ncclInProgress => Ok(false),
        r => {
            let code = match r {
                ncclResult_t::ncclInvalidArgument => ErrorCode::InvalidArgument,
                ncclResult_t::ncclInvalidUsage => ErrorCode::InvalidArgument,
                _ => ErrorCode::BackendFailure,
            };
            Err(BackendError::new(code, r as i64, message(r)).in_call(call))
        }
    }
}

/// The communicator's asynchronous state: `Ok(true)` done, `Ok(false)` in progress.
fn poll(comm: ncclComm_t) -> BackendResult<bool> {
    let mut state = ncclResult_t::ncclSuccess;
    // SAFETY: a live communicator and a valid out-pointer.
    let r = unsafe { sys::ncclCommGetAsyncError(comm, &mut state) };
    check("ncclCommGetAsyncError", r)?;
    check("ncclCommGetAsyncError", state)
}

fn async_error(comm: ncclComm_t) -> BackendResult<()> {
    poll(comm).map(|_| ())
}

/// Waits until no communicator of `comms` is in progress, or `deadline` (`Timeout`). The first error is returned; each one's outcome is in `outcomes`.
fn wait_all(comms: &[ncclComm_t], deadline: Option<Instant>, outcomes: &mut [BackendResult<()>]) {
    let mut pending: Vec<usize> = (0..comms.len()).collect();
    let mut spins = 0u32;
    while !pending.is_empty() {
        pending.retain(|&i| match poll(comms[i]) {
            Ok(true) => {
                outcomes[i] = Ok(());
                false
            }
            Ok(false) => true,
            Err(e) => {
                outcomes[i] = Err(e);
                false
            }
        });
        if pending.is_empty() {
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            for &i in &pending {
                outcomes[i] = Err(BackendError::new(
                    ErrorCode::Timeout,
                    0,
                    "NCCL: a peer did not arrive within ORDO_NCCL_TIMEOUT_MS",
                ));
            }
            break;
        }
        spins += 1;
        if spins < 1000 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

fn config() -> sys::ncclConfig_t {
    // SAFETY: a plain C struct of integers and pointers: zero is valid for every field.
    let mut c: sys::ncclConfig_t = unsafe { std::mem::zeroed() };
    c.size = std::mem::size_of::<sys::ncclConfig_t>();
    c.magic = CONFIG_MAGIC;
    c.version = CONFIG_VERSION;
    c.blocking = 0;
    c.cgaClusterSize = UNDEF_INT;
    c.minCTAs = UNDEF_INT;
    c.maxCTAs = UNDEF_INT;
    c.splitShare = UNDEF_INT;
    c
}

fn record(nccl: &Nccl, raw: ncclComm_t, device: u32) -> u64 {
    let comm = Box::into_raw(Box::new(Comm { raw, device, state: AtomicU8::new(LIVE), error: Mutex::new(None) }));
    nccl.add(comm, device);
    comm as u64
}

fn comm_of(value: u64) -> &'static Comm {
    // SAFETY: the runtime passes only live values `record` made (the trait's contract).
    unsafe { &*(value as usize as *const Comm) }
}

/// The `ncclComm_t` of a live value.
pub(crate) fn native(value: u64) -> u64 {
    comm_of(value).raw as u64
}

fn unique(id: &UniqueId) -> sys::ncclUniqueId {
    let mut u = sys::ncclUniqueId { internal: [0; 128] };
    for (d, s) in u.internal.iter_mut().zip(id.0) {
        *d = s as _;
    }
    u
}

/// Creates one communicator per device, in one group; `in_device(ordinal, f)` runs `f` with
/// the device's context current.
pub(crate) fn create_all(nccl: &Nccl, devices: &[u32], out: &mut [u64], in_device: InDevice<'_>) -> BackendResult<()> {
    let id = unique_id()?;
    let mut raws: Vec<ncclComm_t> = vec![std::ptr::null_mut(); devices.len()];
    let n = devices.len() as i32;
    // SAFETY: NCCL calls with valid arguments; the group is ended on every path.
    let started = unsafe { sys::ncclGroupStart() };
    check("ncclGroupStart", started)?;
    let mut made = Ok(());
    for (i, &d) in devices.iter().enumerate() {
        let mut cfg = config();
        let slot = &mut raws[i];
        let r = in_device(d, &mut || {
            // SAFETY: valid out-pointer, id and config; the device's context is current.
            check("ncclCommInitRankConfig", unsafe {
                sys::ncclCommInitRankConfig(slot, n, unique(&id), i as i32, &mut cfg)
            })
            .map(|_| ())
        });
        if let Err(e) = r {
            made = Err(e);
            break;
        }
    }
    // SAFETY: ends the group started above.
    let ended = check("ncclGroupEnd", unsafe { sys::ncclGroupEnd() });
    let mut outcomes = vec![Ok(()); devices.len()];
    if made.is_ok() && ended.is_ok() {
        wait_all(&raws, Some(Instant::now() + timeout()), &mut outcomes);
    }
    let first = made.and(ended.map(|_| ())).and(outcomes.iter().copied().find(|o| o.is_err()).unwrap_or(Ok(())));
    if let Err(e) = first {
        for &raw in raws.iter().filter(|r| !r.is_null()) {
            // SAFETY: a communicator NCCL made here; never used again.
            unsafe { sys::ncclCommAbort(raw) };
        }
        return Err(e);
    }
    for (i, &raw) in raws.iter().enumerate() {
        out[i] = record(nccl, raw, devices[i]);
    }
    Ok(())
}

pub(crate) fn unique_id() -> BackendResult<UniqueId> {
    library()?;
    let mut u = sys::ncclUniqueId { internal: [0; 128] };
    // SAFETY: a valid out-pointer.
    check("ncclGetUniqueId", unsafe { sys::ncclGetUniqueId(&mut u) })?;
    let mut id = UniqueId([0; 128]);
    for (d, s) in id.0.iter_mut().zip(u.internal) {
        *d = s as u8;
    }
    Ok(id)
}

/// One rank of a communicator across processes; the device's context is current.
pub(crate) fn create_rank(
    nccl: &Nccl,
    device: u32,
    id: &UniqueId,
    rank: u32,
    size: u32,
    timeout_ms: u32,
) -> BackendResult<u64> {
    let mut raw: ncclComm_t = std::ptr::null_mut();
    let mut cfg = config();
    // SAFETY: valid out-pointer, id and config.
    let r = unsafe { sys::ncclCommInitRankConfig(&mut raw, size as i32, unique(id), rank as i32, &mut cfg) };
    let started = check("ncclCommInitRankConfig", r);
    let mut outcome = [Ok(())];
    if started.is_ok() && !raw.is_null() {
        wait_all(&[raw], Some(Instant::now() + Duration::from_millis(u64::from(timeout_ms))), &mut outcome);
    }
    if let Err(e) = started.map(|_| ()).and(outcome[0]) {
        if !raw.is_null() {
            // SAFETY: the communicator made here; never used again.
            unsafe { sys::ncclCommAbort(raw) };
        }
        return Err(e);
    }
    Ok(record(nccl, raw, device))
}

/// Enqueues the calls, in one group when there are several; `in_device` as for `create_all`.
pub(crate) fn collectives(calls: &[CollectiveCall], in_device: InDevice<'_>) -> BackendResult<()> {
    // A communicator aborted after an asynchronous error is NCCL's no more: refused with that
    // error (its handle stays ordo's until destroyed).
    for c in calls {
        let comm = comm_of(c.comm);
        if comm.state.load(Ordering::Acquire) == ABORTED {
            let error = *comm.error.lock().unwrap_or_else(|p| p.into_inner());
            return Err(error.unwrap_or(BackendError::new(ErrorCode::BackendFailure, 0, "NCCL: aborted")));
        }
    }
    let mut done = true;
    if let [c] = calls {
        // One part (one rank of this process): no group, as a program would call it.
        in_device(c.device, &mut || {
            done = enqueue(c)?;
            Ok(())
        })?;
    } else {
        // SAFETY: NCCL calls with the runtime's checked values; the group is ended on every path.
        check("ncclGroupStart", unsafe { sys::ncclGroupStart() })?;
        let mut enqueued = Ok(());
        for c in calls {
            let r = in_device(c.device, &mut || enqueue(c).map(|_| ()));
            if let Err(e) = r {
                enqueued = Err(e);
                break;
            }
        }
        // SAFETY: ends the group started above.
        let ended = check("ncclGroupEnd", unsafe { sys::ncclGroupEnd() });
        enqueued?;
        done = ended?;
    }
    if !done {
        // Non-blocking communicators: the enqueue completes asynchronously; wait for it
        // (it waits for no peer: the collective itself runs on the streams).
        let comms: Vec<ncclComm_t> = calls.iter().map(|c| comm_of(c.comm).raw).collect();
        let mut outcomes = vec![Ok(()); comms.len()];
        wait_all(&comms, Some(Instant::now() + timeout()), &mut outcomes);
        outcomes.into_iter().collect::<BackendResult<Vec<()>>>()?;
    }
    Ok(())
}

/// One call; `Ok(false)` while a non-blocking communicator completes it.
fn enqueue(c: &CollectiveCall) -> BackendResult<bool> {
    let comm = comm_of(c.comm).raw;
    let stream = c.queue as usize as sys::cudaStream_t;
    // SAFETY: the runtime's values: NCCL's enumerations have the same numbers (`DataType`,
    // `ReduceOp` are NCCL's numbering).
    let (dtype, op) = unsafe {
        (
            std::mem::transmute::<u32, sys::ncclDataType_t>(c.dtype as u32),
            std::mem::transmute::<u32, sys::ncclRedOp_t>(c.op as u32),
        )
    };
    let send = c.send as usize as *const core::ffi::c_void;
    let recv = c.recv as usize as *mut core::ffi::c_void;
    let peer = c.peer as i32;
    // SAFETY: ranges in live allocations of the communicator's device, a live stream of it.
    let r = unsafe {
        match c.kind {
            CollectiveKind::AllReduce => sys::ncclAllReduce(send, recv, c.count, dtype, op, comm, stream),
            CollectiveKind::Broadcast => sys::ncclBroadcast(send, recv, c.count, dtype, peer, comm, stream),
            CollectiveKind::Reduce => sys::ncclReduce(send, recv, c.count, dtype, op, peer, comm, stream),
            CollectiveKind::AllGather => sys::ncclAllGather(send, recv, c.count, dtype, comm, stream),
            CollectiveKind::ReduceScatter => sys::ncclReduceScatter(send, recv, c.count, dtype, op, comm, stream),
            CollectiveKind::Send => sys::ncclSend(send, c.count, dtype, peer, comm, stream),
            CollectiveKind::Recv => sys::ncclRecv(recv, c.count, dtype, peer, comm, stream),
        }
    };
    check(c.kind.name(), r)
}

/// Starts every finalize, then waits for them together (bounded).
pub(crate) fn finalize(comms: &[(u32, u64)], in_device: InDevice<'_>) {
    let mut raws = Vec::new();
    let mut which = Vec::new();
    for &(device, value) in comms {
        let comm = comm_of(value);
        if comm.state.load(Ordering::Acquire) != LIVE {
            continue;
        }
        let r = in_device(device, &mut || {
            // SAFETY: a live communicator, its device current.
            let r = unsafe { sys::ncclCommFinalize(comm.raw) };
            check("ncclCommFinalize", r).map(|_| ())
        });
        match r {
            Ok(()) => {
                raws.push(comm.raw);
                which.push(comm);
            }
            Err(e) => fail(comm, e),
        }
    }
    let mut outcomes = vec![Ok(()); raws.len()];
    wait_all(&raws, Some(Instant::now() + timeout()), &mut outcomes);
    for (comm, outcome) in which.into_iter().zip(outcomes) {
        match outcome {
            Ok(()) => comm.state.store(FINALIZED, Ordering::Release),
            Err(e) => fail(comm, e),
        }
    }
}

/// Frees a communicator's record without a call (the driver is gone at exit).
///
/// # Safety
/// A live value of `nccl`'s, never passed again.
pub(crate) unsafe fn forget_one(nccl: &Nccl, value: u64) {
    // SAFETY: forwarded contract.
    drop(unsafe { nccl.remove(value as usize as *mut Comm) });
}

/// Destroys (finalizing first if the teardown did not) or aborts a communicator that failed;
/// its record is freed either way. The device's context is current.
///
/// # Safety
/// A live value of `nccl`'s, never passed again.
pub(crate) unsafe fn destroy(nccl: &Nccl, value: u64, abort: bool) -> BackendResult<()> {
    let comm = comm_of(value);
    if !abort && comm.state.load(Ordering::Acquire) == LIVE {
        // SAFETY: a live communicator.
        match check("ncclCommFinalize", unsafe { sys::ncclCommFinalize(comm.raw) }) {
            Ok(_) => {
                let mut outcome = [Ok(())];
                wait_all(&[comm.raw], Some(Instant::now() + timeout()), &mut outcome);
                match outcome[0] {
                    Ok(()) => comm.state.store(FINALIZED, Ordering::Release),
                    Err(e) => fail(comm, e),
                }
            }
            Err(e) => fail(comm, e),
        }
    }
    let state = comm.state.load(Ordering::Acquire);
    let error = *comm.error.lock().unwrap_or_else(|p| p.into_inner());
    let result = if abort || state != FINALIZED {
        // An asynchronous error already aborted it (`check_device`): nothing more to call.
        if state != ABORTED {
            // SAFETY: a live communicator, never used again.
            unsafe { sys::ncclCommAbort(comm.raw) };
        }
        if abort {
            Ok(())
        } else {
            Err(error.unwrap_or(BackendError::new(ErrorCode::BackendFailure, 0, "NCCL: aborted")))
        }
    } else {
        // SAFETY: a finalized communicator, never used again.
        check("ncclCommDestroy", unsafe { sys::ncclCommDestroy(comm.raw) }).map(|_| ())
    };
    // SAFETY: recorded by `record`, removed once.
    drop(unsafe { nccl.remove(value as usize as *mut Comm) });
    result
}
