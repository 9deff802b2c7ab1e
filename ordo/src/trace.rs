//! The timeline: a trace of every ordo call (of every ABI, this crate's included), the device
//! work they submit, device-timed, and the lifecycle's steps.
//!
//! `ORDO_TRACE=path.json` starts one at the first init; [`start`] and [`stop`] do it from code.
//! The file is the Chrome trace-event format: open it in Perfetto (ui.perfetto.dev, "Open trace
//! file") or `chrome://tracing`, or summarise it with `ordo trace summary path.json`. While no
//! trace is written each call pays one relaxed load. A custom [`Sink`] ([`install`]) receives
//! the same calls and spans, for tests and other formats.
//!
//! ```no_run
//! # fn main() -> ordo::Result<()> {
//! ordo::trace::start("run.json")?;
//! let ctx = ordo::Context::new()?;
//! let buf = ordo::DeviceBuffer::from_slice(&ctx.default_device()?, &[1.0f32; 1024])?;
//! drop((buf, ctx));
//! let (path, events) = ordo::trace::stop()?;
//! println!("{events} events in {}", path.display());
//! # Ok(()) }
//! ```

pub use ordo_core::trace::{Call, Category, MAX_PENDING, Sink, Work, WorkKind, enabled, install, lost_work, uninstall};

/// Starts writing a trace to `path` (created or truncated). `Busy` while a trace (or another
/// sink) is active; `InvalidArgument` for a path whose directory does not exist, that may not be
/// written, or that is not a regular file (a directory, FIFO, socket or device: refused at once,
/// never waited on); `OutOfResources` when the file cannot be created for another reason.
/// Events reach the file every 100 ms (a writer thread of the trace's own) and at each final
/// teardown; a forked child drops the trace it inherited without writing it, and may start its
/// own.
#[cfg(feature = "std")]
pub fn start(path: impl AsRef<std::path::Path>) -> crate::Result<()> {
    Ok(ordo_core::trace::chrome::start(path.as_ref())?)
}

/// Stops the trace [`start`] (or `ORDO_TRACE`) began: waiting device work is resolved, the JSON
/// array closed and the file written. Returns its path and how many events it holds;
/// `NotFound` when no trace is being written.
#[cfg(feature = "std")]
pub fn stop() -> crate::Result<(std::path::PathBuf, u64)> {
    Ok(ordo_core::trace::chrome::stop()?)
}

/// Where the current trace is written, if one is.
#[cfg(feature = "std")]
pub fn path() -> Option<std::path::PathBuf> {
    ordo_core::trace::chrome::path()
}

/// Whether traced calls also become NVTX ranges (`libnvToolsExt.so.1` loaded at the first
/// trace), which Nsight Systems shows.
#[cfg(feature = "std")]
pub fn nvtx_loaded() -> bool {
    ordo_core::trace::chrome::nvtx_loaded()
}
