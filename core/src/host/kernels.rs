//! Host kernels: the grid position a kernel runs at (`HostThread`), kernels and the programs
//! that name them, and the registry of programs added at run time. Depends on `backend`
//! (`KernelArgs`) and `error`.

use crate::backend::KernelArgs;
use crate::error::{Error, ErrorCode};

/// Where a host kernel's thread is in the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostThread {
    /// Thread index within the block.
    pub thread: [u32; 3],
    /// Block index within the grid.
    pub block: [u32; 3],
    /// Threads per block.
    pub block_dim: [u32; 3],
    /// Blocks per grid.
    pub grid_dim: [u32; 3],
    /// The block's local (shared) memory: `local_len` bytes that the launch asked for
    /// (`LaunchDims::shared_mem_bytes`), zeroed when the block starts and common to its threads,
    /// which run one after another in index order; null when the launch asked for none. Valid
    /// only while the kernel runs.
    pub local: *mut u8,
    /// Bytes at `local`.
    pub local_len: usize,
}

impl HostThread {
    /// The global x index: `block.x * block_dim.x + thread.x`.
    pub fn global_x(&self) -> u64 {
        u64::from(self.block[0]) * u64::from(self.block_dim[0]) + u64::from(self.thread[0])
    }
}

/// A host kernel, run once per thread of the grid.
///
/// # Safety
/// The launch's caller guarantees what `Runtime::launch` requires of arguments.
pub type HostKernelFn = unsafe fn(&HostThread, &KernelArgs<'_>) -> Result<(), Error>;

/// A named host kernel.
#[derive(Clone, Copy)]
pub struct HostKernel {
    /// The name `kernel_get` looks up.
    pub name: &'static str,
    /// The function run per thread.
    pub run: HostKernelFn,
    /// The sizes of its parameters in bytes, in order, for packed argument buffers
    /// (`Runtime::kernel_param_layout` lays them out as a C struct would).
    pub params: &'static [usize],
}

/// A named set of host kernels: what a host "program image" names.
#[derive(Clone, Copy)]
pub struct HostProgram {
    /// The program's name; the image passed to `program_load` is this name (a trailing NUL is allowed).
    pub name: &'static str,
    /// Its kernels.
    pub kernels: &'static [HostKernel],
}

/// Most programs a `HostProgramRegistry` holds.
pub const MAX_REGISTERED_HOST_PROGRAMS: usize = 32;

/// Host programs added while the program runs (`HostBackend::with_registry`): a host backend
/// built in a `static` offers its built-in list and, after it, every program registered here.
/// Registration is append-only, so a program's place never changes; it may happen before or
/// after init (a program registered later is found by the next `program_load`).
pub struct HostProgramRegistry {
    entries: [spin::Once<&'static HostProgram>; MAX_REGISTERED_HOST_PROGRAMS],
    len: core::sync::atomic::AtomicUsize,
    writer: spin::Mutex<()>,
}

impl HostProgramRegistry {
    /// An empty registry.
    pub const fn new() -> Self {
        Self {
            entries: [const { spin::Once::new() }; MAX_REGISTERED_HOST_PROGRAMS],
            len: core::sync::atomic::AtomicUsize::new(0),
            writer: spin::Mutex::new(()),
        }
    }

    /// Adds `program`. Registering the same program again does nothing. `InvalidArgument` when
    /// another program of that name is registered, `OutOfResources` when the registry is full.
    pub fn register(&self, program: &'static HostProgram) -> Result<(), Error> {
        let _writer = self.writer.lock();
        if let Some(known) = self.iter().find(|p| p.name == program.name) {
            if core::ptr::eq(known, program) {
                return Ok(());
            }
            return Err(Error::new(ErrorCode::InvalidArgument, "another host program of that name is registered"));
        }
        let len = self.len.load(core::sync::atomic::Ordering::Relaxed);
        let Some(slot) = self.entries.get(len) else {
            return Err(Error::new(ErrorCode::OutOfResources, "the host program registry is full"));
        };
        slot.call_once(|| program);
        self.len.store(len + 1, core::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// The registered program of that name.
    pub fn find(&self, name: &str) -> Option<&'static HostProgram> {
        self.iter().find(|p| p.name == name)
    }

    /// The program in place `i`.
    pub(super) fn get(&self, i: usize) -> Option<&'static HostProgram> {
        if i >= self.len.load(core::sync::atomic::Ordering::Acquire) {
            return None;
        }
        self.entries[i].get().copied()
    }

    /// The registered programs, in registration order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &'static HostProgram> + '_ {
        (0..MAX_REGISTERED_HOST_PROGRAMS).map_while(|i| self.get(i))
    }
}

impl Default for HostProgramRegistry {
    fn default() -> Self {
        Self::new()
    }
}
