//! The threaded host queues' machinery (feature `std`): a queue's worker thread (`Worker`:
//! started with its first work, jobs run in order, the first error kept for the next
//! synchronise, waits that refuse to wait from inside a callback) and an event's record
//! counts (`Track`), which `threaded.rs` builds `QueuedHost` from.

use std::boxed::Box;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, mpsc};

use super::busy;
use crate::backend::BackendResult;
use crate::error::{BackendError, ErrorCode};
use crate::host::{catch_panic, in_callback, panicked, waiting_for_callbacks};

pub(super) type Job = Box<dyn FnOnce() -> BackendResult<()> + Send>;

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A value that crosses to a worker thread: raw pointers of the caller's, valid (by the
/// `Backend` contract) until the work that uses them has run.
pub(super) struct Sendable<T>(pub(super) T);
// SAFETY: see the type's doc; the worker is the only user of the value.
unsafe impl<T> Send for Sendable<T> {}

impl<T> Sendable<T> {
    /// The value (a method, so that a closure captures the whole wrapper, not its field).
    pub(super) fn into_inner(self) -> T {
        self.0
    }
}

/// How far a queue's worker has come.
#[derive(Default)]
pub(super) struct Progress {
    pub(super) submitted: u64,
    pub(super) done: u64,
    /// The first error of enqueued work since the last `queue_synchronize`.
    pub(super) error: Option<BackendError>,
}

pub(super) struct Worker {
    /// Where work goes; `None` until the queue's first work starts its thread (a queue that
    /// never gets any costs no thread).
    pub(super) jobs: Option<mpsc::Sender<Job>>,
    progress: Arc<(Mutex<Progress>, Condvar)>,
    /// The queue's thread (`None` before it starts, and in the transient copies made to wait on
    /// it).
    pub(super) thread: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    pub(super) fn new() -> Self {
        Self { jobs: None, progress: Arc::new((Mutex::new(Progress::default()), Condvar::new())), thread: None }
    }

    /// Starts the queue's thread if it has none yet.
    pub(super) fn start(&mut self) -> BackendResult<()> {
        if self.jobs.is_some() {
            return Ok(());
        }
        let (jobs, inbox) = mpsc::channel::<Job>();
        let theirs = Arc::clone(&self.progress);
        let thread = std::thread::Builder::new()
            .name("ordo-host-queue".into())
            .spawn(move || {
                for job in inbox {
                    // A panic in the work (a host kernel's is already the launch's error) is the
                    // queue's error: the thread goes on, so the queue stays usable.
                    let result = catch_panic("work on a host queue panicked", job).unwrap_or_else(|m| Err(panicked(m)));
                    let mut p = lock(&theirs.0);
                    p.done += 1;
                    if let Err(e) = result {
                        p.error.get_or_insert(e);
                    }
                    theirs.1.notify_all();
                }
            })
            .map_err(|_| BackendError::new(ErrorCode::OutOfResources, 0, "could not start a host queue's thread"))?;
        (self.jobs, self.thread) = (Some(jobs), Some(thread));
        Ok(())
    }

    /// A handle to wait on this worker: its progress only (no sender, so that a waiter never
    /// keeps a finished worker's thread alive).
    pub(super) fn handle(&self) -> Self {
        Self { jobs: None, progress: Arc::clone(&self.progress), thread: None }
    }

    /// A handle to submit to this worker (a transient sender).
    pub(super) fn sender(&self) -> Self {
        Self { jobs: self.jobs.clone(), ..self.handle() }
    }

    /// Submits to a started worker.
    pub(super) fn submit(&self, job: Job) -> BackendResult<()> {
        let gone = || BackendError::new(ErrorCode::Internal, 0, "a host queue's thread has gone");
        let jobs = self.jobs.as_ref().ok_or_else(gone)?;
        lock(&self.progress.0).submitted += 1;
        jobs.send(job).map_err(|_| {
            lock(&self.progress.0).submitted -= 1;
            gone()
        })
    }

    /// Waits until everything submitted so far has run.
    pub(super) fn wait(&self) -> BackendResult<MutexGuard<'_, Progress>> {
        let (m, cv) = &*self.progress;
        let mut p = lock(m);
        let target = p.submitted;
        if p.done < target && in_callback() {
            return Err(busy());
        }
        if p.done < target {
            // The worker may be running a host function that calls into ordo meanwhile.
            p = waiting_for_callbacks(|| {
                while p.done < target {
                    p = cv.wait(p).unwrap_or_else(|e| e.into_inner());
                }
                p
            });
        }
        Ok(p)
    }

    /// Waits until everything submitted so far has run; returns (and clears) the first error.
    pub(super) fn drain(&self) -> BackendResult<()> {
        self.wait()?.error.take().map_or(Ok(()), Err)
    }

    pub(super) fn idle(&self) -> bool {
        let p = lock(&self.progress.0);
        p.done == p.submitted
    }
}

/// An event's records: how many were enqueued and how many have run.
#[derive(Default)]
pub(super) struct Track {
    pub(super) counts: Mutex<(u64, u64)>,
    pub(super) cv: Condvar,
}

impl Track {
    /// Waits until the `target`-th record has run.
    pub(super) fn wait_for(&self, target: u64) -> BackendResult<()> {
        let mut c = lock(&self.counts);
        if c.1 < target && in_callback() {
            return Err(busy());
        }
        if c.1 < target {
            // The record may wait behind a host function that calls into ordo meanwhile.
            waiting_for_callbacks(|| {
                while c.1 < target {
                    c = self.cv.wait(c).unwrap_or_else(|e| e.into_inner());
                }
            });
        }
        Ok(())
    }
}
