//! The scripted backend's test controls and what tests read of it: fast launches, the call
//! hook, presence, armed faults, live objects per kind, double releases, calls outside init,
//! the call count and the release log, `reset`, and the kinds of objects it counts. Depends on the backend's state (`super`).

use super::*;

/// Kinds of objects the scripted backend counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScriptedObject {
    /// A device retained by `init` and released by `device_release`.
    Device,
    /// A queue.
    Queue,
    /// An event.
    Event,
    /// A program.
    Program,
    /// An allocation.
    Allocation,
    /// A graph (`queue_end_capture`).
    Graph,
    /// A communicator (`comm_create_all`, `comm_create_rank`).
    Communicator,
}

impl ScriptedBackend {
    /// Whether the backend hands the runtime fast launch functions (`Backend::fast_launch`,
    /// asked at the runtime's init). Default: no, so that every launch reaches `launch`, counted
    /// and fault-injectable. The functions launch nothing and check no object: they count their
    /// calls (`fast_launches`) and answer what `set_fast_launches_accepted` says.
    pub fn set_fast_launch(&self, on: bool) {
        self.fast.store(on, Ordering::SeqCst);
    }

    /// What the fast launch functions answer from now on (`true`, the default: "launched";
    /// `false`: declined, so the runtime makes the backend's own call). Shared by every scripted
    /// backend of the process.
    pub fn set_fast_launches_accepted(accepted: bool) {
        FAST_ACCEPTS.store(accepted, Ordering::SeqCst);
    }

    /// Calls of the fast launch functions so far, by every scripted backend of the process.
    pub fn fast_launches() -> u64 {
        FAST_CALLS.load(Ordering::SeqCst)
    }

    /// Calls `hook` at the start of every backend call, outside the backend's lock (a test can
    /// block in it to hold a call in flight). `None` removes it.
    pub fn set_hook(&self, hook: Option<fn(BackendOp)>) {
        *self.hook.lock() = hook;
    }

    /// Sets whether `init` finds the driver (absent: `init` returns `NotPresent`).
    pub fn set_present(&self, present: bool) {
        self.state.lock().present = present;
    }

    /// Fails the next call of `op` with `error` (replacing any armed fault).
    pub fn fail_next(&self, op: BackendOp, error: BackendError) {
        let mut s = self.state.lock();
        s.armed_at = s.calls;
        s.fault = Some(Fault { at_call: None, op: Some(op), error });
    }

    /// Fails the `k`-th call from now (0 = the next call) with `error`.
    pub fn fail_call(&self, k: u64, error: BackendError) {
        let mut s = self.state.lock();
        s.armed_at = s.calls;
        s.fault = Some(Fault { at_call: Some(k), op: None, error });
    }

    /// Disarms any pending fault; returns whether one was pending.
    pub fn disarm(&self) -> bool {
        self.state.lock().fault.take().is_some()
    }

    /// Live objects of a kind.
    pub fn live(&self, kind: ScriptedObject) -> usize {
        self.state.lock().live.iter().filter(|(k, _)| *k == kind).count()
    }

    /// Live objects of every kind.
    pub fn live_total(&self) -> usize {
        self.state.lock().live.len()
    }

    /// Whether the backend is initialised.
    pub fn is_up(&self) -> bool {
        self.state.lock().up
    }

    /// Releases of objects that were not live (double releases or forgeries); must stay 0.
    pub fn double_releases(&self) -> u32 {
        self.state.lock().double_releases
    }

    /// Object calls made while the backend was not initialised; must stay 0.
    pub fn calls_while_down(&self) -> u32 {
        self.state.lock().calls_while_down
    }

    /// Calls made so far.
    pub fn calls(&self) -> u64 {
        self.state.lock().calls
    }

    /// The last (at most 64) objects released, oldest first; cleared by `init`.
    pub fn release_log(&self) -> heapless::Vec<(ScriptedObject, u64), 64> {
        self.state.lock().last_released.clone()
    }

    /// Resets everything but the device count and presence (live objects are forgotten).
    pub fn reset(&self) {
        // Field by field, in place (a whole new state would be ~130 KB on the stack).
        let mut s = self.state.lock();
        s.up = false;
        s.calls = 0;
        s.armed_at = 0;
        s.fault = None;
        s.live.clear();
        s.next_raw = 1;
        s.next_address = s.base;
        s.double_releases = 0;
        s.calls_while_down = 0;
        s.last_released.clear();
        s.load_log = false;
        s.captures.clear();
        s.graphs.clear();
        s.finalize_failed.clear();
    }
}
