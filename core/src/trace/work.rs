//! The timeline's device work: the backend events that bracket a piece of queue work, the list
//! of spans waiting for them, each queue's anchor (the host time of its last resolved event) and
//! the events kept for reuse; resolving spans as they complete (`mod.rs` describes how times are
//! placed). Depends on `backend`, `reentry` and the sink in `mod.rs`.

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

use super::{Begun, MAX_PENDING, TraceRelax, Work, WorkKind, sink};

/// The timeline's locks: spin's, waiting with the core's wait step.
type Lock<T> = spin::mutex::Mutex<T, TraceRelax>;
use crate::backend::Backend;

/// Work that ran untimed because the pending list was full (since the process started).
pub(super) static LOST: AtomicUsize = AtomicUsize::new(0);
/// How many queues keep an anchor (the host time of a completed event) at once; past it the
/// oldest is dropped and its queue takes a new reference at its next timed work.
const MAX_ANCHORS: usize = 64;
/// Completed events kept for reuse.
const MAX_SPARE: usize = 64;

/// Where a queue's work runs: its backend, device ordinal and backend queue.
#[derive(Clone, Copy)]
pub(crate) struct Target {
    pub backend: &'static dyn Backend,
    pub ordinal: u32,
    pub raw: u64,
    /// The device's number in the timeline (`Work::device_number`).
    pub number: u32,
}

impl Target {
    fn same_device(&self, backend: &'static dyn Backend, ordinal: u32) -> bool {
        core::ptr::addr_eq(self.backend, backend) && self.ordinal == ordinal
    }
    fn same_queue(&self, other: &Target) -> bool {
        self.same_device(other.backend, other.ordinal) && self.raw == other.raw
    }
}

/// A piece of work whose start event is recorded (`timed`'s first half).
pub(crate) struct Timing {
    target: Target,
    queue: u64,
    start: u64,
    submit_ns: u64,
}

struct Pending {
    /// Its place in the order spans were queued (`Waiting::next`, wrapping).
    seq: u32,
    target: Target,
    queue: u64,
    kind: WorkKind,
    start: u64,
    end: u64,
    submit_ns: u64,
}

#[derive(Clone, Copy)]
struct Anchor {
    target: Target,
    event: u64,
    ns: u64,
}

struct Spare {
    backend: &'static dyn Backend,
    ordinal: u32,
    event: u64,
}

struct Waiting {
    pending: heapless::Deque<Pending, MAX_PENDING>,
    spare: heapless::Vec<Spare, MAX_SPARE>,
    /// The next span's `seq`.
    next: u32,
}

static WAITING: Lock<Waiting> =
    Lock::new(Waiting { pending: heapless::Deque::new(), spare: heapless::Vec::new(), next: 0 });
/// Each timed queue's anchor. An anchor's event is replaced or released only by the thread
/// holding `RESOLVER`.
static ANCHORS: Lock<heapless::Vec<Anchor, MAX_ANCHORS>> = Lock::new(heapless::Vec::new());
/// Held by the one thread that resolves spans; nothing blocks on it but the calls that must see
/// their spans resolved (queue destroy, teardown, uninstall), which are never callbacks.
static RESOLVER: Lock<()> = Lock::new(());
/// Whether this module ever kept a backend event (so that a queue's destroy and a teardown
/// look for spans only then).
static HELD: AtomicBool = AtomicBool::new(false);

fn take_event(backend: &'static dyn Backend, ordinal: u32) -> Option<u64> {
    {
        let mut w = WAITING.lock();
        if let Some(i) = w.spare.iter().position(|s| core::ptr::addr_eq(s.backend, backend) && s.ordinal == ordinal) {
            return Some(w.spare.swap_remove(i).event);
        }
    }
    HELD.store(true, Relaxed);
    backend.event_create(ordinal).ok()
}

/// Gives an event back for reuse, or destroys it.
fn give_event(backend: &'static dyn Backend, ordinal: u32, event: u64) {
    let kept = WAITING.lock().spare.push(Spare { backend, ordinal, event });
    if let Err(s) = kept {
        // SAFETY: an event this module created on that device and no longer uses.
        let _ = unsafe { s.backend.event_destroy(s.ordinal, s.event) };
    }
}

fn anchored(target: &Target) -> bool {
    ANCHORS.lock().iter().any(|x| x.target.same_queue(target))
}

/// Starts timing a piece of work about to be submitted to `target` (queue handle `queue`): its
/// start event recorded. `None` (the work runs untimed) when tracing is off, when the queue is
/// capturing (events would join the capture), when the queue has no anchor and the caller is a
/// callback (taking one waits for the queue), or when no event can be had.
///
/// # Safety
/// `target` names a live queue of a live device of an initialised backend, for the rest of the
/// call (a shared call in flight).
#[inline(always)]
pub(crate) unsafe fn work_begin(begun: Option<Begun>, target: Target, queue: u64, capturing: bool) -> Option<Timing> {
    let b = begun?;
    // SAFETY: forwarded.
    unsafe { work_begin_slow(b, target, queue, capturing) }
}

#[cold]
#[inline(never)]
unsafe fn work_begin_slow(begun: Begun, target: Target, queue: u64, capturing: bool) -> Option<Timing> {
    if capturing {
        return None;
    }
    if !anchored(&target) {
        if crate::reentry::in_callback() {
            return None;
        }
        // SAFETY: forwarded.
        unsafe { take_anchor(target)? };
    }
    if WAITING.lock().pending.is_full() {
        resolve(Scope::All, false);
        if WAITING.lock().pending.is_full() {
            if crate::reentry::in_callback() {
                LOST.fetch_add(1, Relaxed);
                return None;
            }
            resolve_oldest();
        }
    }
    let Some(start) = take_event(target.backend, target.ordinal) else {
        LOST.fetch_add(1, Relaxed);
        return None;
    };
    // SAFETY: a live queue and an event of its device.
    if unsafe { target.backend.event_record(target.ordinal, start, target.raw) }.is_err() {
        give_event(target.backend, target.ordinal, start);
        return None;
    }
    Some(Timing { target, queue, start, submit_ns: begun.start_ns })
}

/// Records a reference event on the queue and waits for it: its anchor, at the host time the
/// wait returned (not before the event completed, so device times derived from it lie after
/// their calls).
///
/// # Safety
/// As `work_begin`.
unsafe fn take_anchor(target: Target) -> Option<()> {
    let s = sink()?;
    let event = take_event(target.backend, target.ordinal)?;
    // SAFETY: a live queue and an event of its device.
    let ok = unsafe {
        target.backend.event_record(target.ordinal, event, target.raw).is_ok()
            && target.backend.event_synchronize(target.ordinal, event).is_ok()
    };
    let ns = s.now_ns();
    if !ok {
        give_event(target.backend, target.ordinal, event);
        return None;
    }
    let mut anchors = ANCHORS.lock();
    if anchors.iter().any(|x| x.target.same_queue(&target)) {
        drop(anchors);
        give_event(target.backend, target.ordinal, event);
        return Some(());
    }
    if anchors.is_full() {
        // The oldest anchor goes, if no thread is resolving (which may be using it).
        let Some(_resolver) = RESOLVER.try_lock() else {
            drop(anchors);
            give_event(target.backend, target.ordinal, event);
            return None;
        };
        let old = anchors.remove(0);
        drop(anchors);
        give_event(old.target.backend, old.target.ordinal, old.event);
        anchors = ANCHORS.lock();
    }
    if let Err(a) = anchors.push(Anchor { target, event, ns }) {
        drop(anchors);
        give_event(a.target.backend, a.target.ordinal, a.event);
        return None;
    }
    Some(())
}

/// Ends timing a piece of work submitted with [`work_begin`]'s timing: its end event recorded,
/// the span queued until both complete. Work whose submission failed is not kept.
///
/// # Safety
/// As `work_begin`, for the timing's queue.
#[cold]
#[inline(never)]
pub(crate) unsafe fn work_end(timing: Timing, kind: WorkKind, submitted: bool) {
    let Timing { target, queue, start, submit_ns } = timing;
    let end = if submitted { take_event(target.backend, target.ordinal) } else { None };
    let recorded = end.filter(|&e| {
        // SAFETY: a live queue and an event of its device.
        let ok = unsafe { target.backend.event_record(target.ordinal, e, target.raw) }.is_ok();
        if !ok {
            give_event(target.backend, target.ordinal, e);
        }
        ok
    });
    let Some(end) = recorded else {
        // The start event may still be pending on the queue: a later record replaces this one
        // for every backend, so it is reused.
        give_event(target.backend, target.ordinal, start);
        return;
    };
    let pushed = {
        let mut w = WAITING.lock();
        let span = Pending { seq: w.next, target, queue, kind, start, end, submit_ns };
        let pushed = w.pending.push_back(span);
        if pushed.is_ok() {
            w.next = w.next.wrapping_add(1);
        }
        pushed
    };
    if let Err(span) = pushed {
        // Filled by other threads meanwhile: this one goes untimed.
        LOST.fetch_add(1, Relaxed);
        give_event(target.backend, target.ordinal, span.start);
        give_event(target.backend, target.ordinal, span.end);
        return;
    }
    resolve(Scope::All, false);
}

/// In a forked child (one thread; see `child_after_fork`): the timeline's locks released by
/// force where a vanished thread of the parent held them, and every span, anchor and spare
/// event forgotten without a backend call.
#[cfg(feature = "std")]
pub(super) fn forget_after_fork() {
    // SAFETY: the child's only thread is this one, and it holds none of them.
    unsafe {
        for lock in [&RESOLVER as &dyn ForceUnlock, &WAITING, &ANCHORS] {
            lock.force_unlock_if_held();
        }
    }
    let mut w = WAITING.lock();
    w.pending.clear();
    w.spare.clear();
    drop(w);
    ANCHORS.lock().clear();
}

/// A timeline lock that can be released by force (`forget_after_fork`).
#[cfg(feature = "std")]
trait ForceUnlock {
    /// # Safety
    /// No live guard of this lock exists in this process.
    unsafe fn force_unlock_if_held(&self);
}

#[cfg(feature = "std")]
impl<T> ForceUnlock for Lock<T> {
    unsafe fn force_unlock_if_held(&self) {
        if self.is_locked() {
            // SAFETY: the caller's contract.
            unsafe { self.force_unlock() };
        }
    }
}

/// Which waiting spans to resolve.
#[derive(Clone, Copy)]
pub(crate) enum Scope {
    /// Every span.
    All,
    /// The spans of one queue (and its anchor).
    Queue(Target),
    /// The spans of one backend's devices (and their anchors and spare events).
    Backend(&'static dyn Backend),
}

impl Scope {
    fn covers(&self, t: &Target) -> bool {
        match self {
            Scope::All => true,
            Scope::Queue(q) => q.same_queue(t),
            Scope::Backend(b) => core::ptr::addr_eq(t.backend, *b),
        }
    }
}

/// Whether a queue's destroy or a teardown must resolve spans first (one relaxed load).
#[inline]
pub(crate) fn holds_events() -> bool {
    HELD.load(Relaxed)
}

/// Resolves the waiting spans in `scope`. With `wait`, waits for their events (and for the
/// resolver), and drops the scope's anchors (a queue about to be destroyed, a backend about to
/// be deinitialised, the end of a trace) and, for a backend or all, the spare events; without,
/// resolves the spans that completed (`poll`), if no other thread is resolving.
pub(crate) fn resolve(scope: Scope, wait: bool) {
    if !wait {
        if let Some(_resolver) = RESOLVER.try_lock() {
            poll();
        }
        return;
    }
    let _resolver = RESOLVER.lock();
    // Only the spans queued before now: threads that go on submitting traced work meanwhile
    // cannot keep this loop going (their spans are resolved by their own polls, or by the next
    // waiting resolve).
    let limit = WAITING.lock().next;
    let before = |p: &Pending| (p.seq.wrapping_sub(limit) as i32) < 0;
    loop {
        let next = {
            let mut w = WAITING.lock();
            let i = w.pending.iter().position(|p| before(p) && scope.covers(&p.target));
            i.and_then(|i| take_at(&mut w.pending, i))
        };
        let Some(p) = next else { break };
        // SAFETY: the span's queue and events are live: queues resolve their spans before
        // they are destroyed, backends before they are deinitialised.
        let done = unsafe { p.target.backend.event_synchronize(p.target.ordinal, p.end) }.is_ok();
        // SAFETY: as above; both events completed (or the span is dropped).
        unsafe { retire(p, done) };
    }
    let mut i = 0;
    loop {
        let a = {
            let mut anchors = ANCHORS.lock();
            while i < anchors.len() && !scope.covers(&anchors[i].target) {
                i += 1;
            }
            if i == anchors.len() {
                break;
            }
            anchors.remove(i)
        };
        give_event(a.target.backend, a.target.ordinal, a.event);
    }
    match scope {
        Scope::All => release_spare(None),
        Scope::Backend(b) => release_spare(Some(b)),
        // A queue's destroy leaves its device's spare events alone.
        Scope::Queue(_) => {}
    }
}

/// Waits for the oldest waiting span and resolves it (the list is full, and the caller is no
/// callback: the queue's work cannot be waiting for it), then what else completed.
fn resolve_oldest() {
    let _resolver = RESOLVER.lock();
    let oldest = WAITING.lock().pending.pop_front();
    if let Some(p) = oldest {
        // SAFETY: as in `resolve`.
        let done = unsafe { p.target.backend.event_synchronize(p.target.ordinal, p.end) }.is_ok();
        // SAFETY: as in `resolve`.
        unsafe { retire(p, done) };
    }
    poll();
}

/// How many queues' first waiting spans one poll looks at.
const POLL_QUEUES: usize = 32;

/// Resolves the spans that completed, each queue's in order: the first waiting span of each
/// queue (of the first `POLL_QUEUES` queues) is asked whether it completed, without waiting.
/// Called by the resolver.
fn poll() {
    loop {
        let mut heads: heapless::Vec<(Target, u64), POLL_QUEUES> = heapless::Vec::new();
        {
            let w = WAITING.lock();
            for p in w.pending.iter() {
                if !heads.iter().any(|(t, _)| t.same_queue(&p.target)) && heads.push((p.target, p.end)).is_err() {
                    break;
                }
            }
        }
        let mut resolved = false;
        for (target, end) in heads {
            // SAFETY: as in `resolve`.
            if unsafe { target.backend.event_query(target.ordinal, end) } != Ok(true) {
                continue;
            }
            let taken = {
                let mut w = WAITING.lock();
                let i = w.pending.iter().position(|p| p.end == end && p.target.same_queue(&target));
                i.and_then(|i| take_at(&mut w.pending, i))
            };
            if let Some(p) = taken {
                // SAFETY: as in `resolve`; its end event completed, so its start did.
                unsafe { retire(p, true) };
                resolved = true;
            }
        }
        if !resolved {
            break;
        }
    }
}

/// Hands a span that completed (`done`) to the sink and gives its events back (its end event
/// becomes its queue's anchor).
///
/// # Safety
/// Called by the resolver; with `done`, both events completed.
unsafe fn retire(p: Pending, done: bool) {
    let (b, ordinal) = (p.target.backend, p.target.ordinal);
    // SAFETY: forwarded.
    let anchored_at_end = done && unsafe { finish(&p) };
    give_event(b, ordinal, p.start);
    if !anchored_at_end {
        give_event(b, ordinal, p.end);
    }
}

fn take_at(d: &mut heapless::Deque<Pending, MAX_PENDING>, i: usize) -> Option<Pending> {
    // The spans before `i` come off the front and go back in their order.
    let mut before: heapless::Vec<Pending, MAX_PENDING> = heapless::Vec::new();
    for _ in 0..i {
        if let Some(p) = d.pop_front() {
            let _ = before.push(p);
        }
    }
    let taken = d.pop_front();
    while let Some(p) = before.pop() {
        let _ = d.push_front(p);
    }
    taken
}

fn release_spare(backend: Option<&'static dyn Backend>) {
    loop {
        let s = {
            let mut w = WAITING.lock();
            let i = w.spare.iter().position(|s| backend.is_none_or(|b| core::ptr::addr_eq(s.backend, b)));
            match i {
                Some(i) => w.spare.swap_remove(i),
                None => break,
            }
        };
        // SAFETY: an event this module created and no longer uses; its backend is initialised.
        let _ = unsafe { s.backend.event_destroy(s.ordinal, s.event) };
    }
}

/// Hands a completed span to the sink, measured from its queue's anchor, and makes its end
/// event the queue's new anchor (`true`; the old anchor's event is given back). `false` when
/// the queue has no anchor (dropped meanwhile) or the backend cannot time the events.
///
/// # Safety
/// The span's events completed; called by the resolver.
unsafe fn finish(p: &Pending) -> bool {
    let Some(a) = ANCHORS.lock().iter().find(|a| a.target.same_queue(&p.target)).copied() else {
        return false;
    };
    let (b, ordinal) = (p.target.backend, p.target.ordinal);
    // SAFETY: forwarded; all three events are of this device and completed, and the anchor's
    // event is released only by the resolver, this thread.
    let elapsed =
        unsafe { (b.event_elapsed_ms(ordinal, a.event, p.start), b.event_elapsed_ms(ordinal, a.event, p.end)) };
    let (Ok(to_start), Ok(to_end)) = elapsed else {
        return false;
    };
    let ns = |ms: f32| a.ns.saturating_add_signed((f64::from(ms) * 1.0e6) as i64);
    // Not before the queue's previous span ended, nor before the call that submitted it.
    let start_ns = ns(to_start).max(a.ns).max(p.submit_ns);
    let end_ns = ns(to_end).max(start_ns);
    if let Some(s) = sink() {
        s.work(&Work {
            backend: b.kind(),
            ordinal,
            device_number: p.target.number,
            queue: p.queue,
            kind: p.kind,
            submit_ns: p.submit_ns,
            start_ns,
            end_ns,
        });
    }
    let new = Anchor { target: p.target, event: p.end, ns: end_ns };
    let old = {
        let mut anchors = ANCHORS.lock();
        match anchors.iter_mut().find(|x| x.target.same_queue(&p.target)) {
            Some(x) => core::mem::replace(x, new),
            None => return false,
        }
    };
    give_event(old.target.backend, old.target.ordinal, old.event);
    true
}
