//! `InitGuard`: the safe way to hold an init reference.
//!
//! `Runtime::init_guard` takes a reference and returns a guard; `InitGuard::shutdown` releases it
//! and returns what happened (with the teardown report if it was the last). Dropping a guard
//! releases its reference too, and logs a failed teardown rather than hiding it.
//! Depends on `runtime` and `error`; nothing in the core depends on it (users hold it).

use crate::error::Result;
use crate::runtime::{Runtime, Shutdown};

/// One init reference to a runtime, released by `shutdown` or on drop.
#[must_use = "dropping the guard releases the init reference at once"]
pub struct InitGuard<'rt> {
    runtime: &'rt Runtime,
    released: bool,
}

impl core::fmt::Debug for InitGuard<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("InitGuard").field("runtime", &self.runtime.identity()).finish()
    }
}

impl Runtime {
    /// Takes an init reference (initialising on the first) and returns a guard that releases it.
    pub fn init_guard(&self) -> Result<InitGuard<'_>> {
        self.init()?;
        Ok(InitGuard { runtime: self, released: false })
    }
}

impl<'rt> InitGuard<'rt> {
    /// The runtime this guard holds.
    pub fn runtime(&self) -> &'rt Runtime {
        self.runtime
    }

    /// Releases the reference; for the last one, returns the teardown report.
    pub fn shutdown(mut self) -> Result<Shutdown> {
        self.released = true;
        self.runtime.shutdown()
    }
}

impl core::ops::Deref for InitGuard<'_> {
    type Target = Runtime;
    fn deref(&self) -> &Runtime {
        self.runtime
    }
}

impl Drop for InitGuard<'_> {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        match self.runtime.shutdown() {
            Ok(Shutdown::TornDown(summary)) if !summary.is_clean() => {
                log::error!("ordo: teardown on guard drop failed: {} step(s) failed", summary.failures);
            }
            Ok(_) => {}
            Err(e) => log::error!("ordo: shutdown on guard drop failed: {e}"),
        }
    }
}
