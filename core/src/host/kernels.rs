//! Host kernels: the grid position a kernel runs at (`HostThread`), kernels and the programs
//! that name them, and the registry of programs added at run time. Depends on `backend`
//! (`KernelArgs`) and `error`.

use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};

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
#[derive(Clone, Copy, Debug)]
pub struct HostKernel {
    /// The name `kernel_get` looks up.
    pub name: &'static str,
    /// The function run per thread.
    pub run: HostKernelFn,
    /// The sizes of its parameters in bytes, in order, for packed argument buffers
    /// (`Runtime::kernel_param_layout` lays them out as a C struct would).
    pub params: &'static [usize],
    /// Whether its launches must carry the typed launch's extents (`KernelArgs::extents`): the
    /// kernels `ordo::host_kernel!` makes with a buffer parameter, whose views are bounded by
    /// each buffer's length. A launch without them (an untyped launch, C's `ordo_launch`, a
    /// graph's argument update) is refused at submission with `InvalidArgument`, nothing
    /// enqueued. `false` for kernels that take raw addresses.
    pub extents_required: bool,
}

/// A named set of host kernels: what a host "program image" names.
#[derive(Clone, Copy, Debug)]
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
///
/// Readers take no lock. Writers take one, held only by `register` and never across other
/// code; with `std` on Unix it records the holder's process, so that the child of a `fork`
/// made while a parent thread was registering takes it over (that thread does not exist in the
/// child) instead of waiting for ever. Every step of a registration leaves the registry
/// consistent for that takeover: a program is written to the first free place before the
/// length that publishes it grows.
pub struct HostProgramRegistry {
    entries: [AtomicPtr<HostProgram>; MAX_REGISTERED_HOST_PROGRAMS],
    len: AtomicUsize,
    /// 0 when free, else the holder's process (`process_id`).
    writer: AtomicU32,
}

impl core::fmt::Debug for HostProgramRegistry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HostProgramRegistry").field("programs", &self.len).finish_non_exhaustive()
    }
}

/// This process's identity for the writer lock: its id with `std` on Unix (a forked child's
/// differs from its parent's), else 1 (no `fork`).
fn process_id() -> u32 {
    #[cfg(all(feature = "std", unix, not(loom)))]
    return std::process::id().max(1);
    #[cfg(not(all(feature = "std", unix, not(loom))))]
    1
}

/// The registry's writer lock, released on drop.
struct Writer<'a>(&'a AtomicU32);

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

impl HostProgramRegistry {
    /// An empty registry.
    pub const fn new() -> Self {
        Self {
            entries: [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_REGISTERED_HOST_PROGRAMS],
            len: AtomicUsize::new(0),
            writer: AtomicU32::new(0),
        }
    }

    /// Takes the writer lock: waits (the core's wait step, `set_wait_strategy`) while a thread
    /// of this process holds it, and takes it over from a thread of another process (the parent
    /// of a `fork`; see the type's doc).
    fn lock_writer(&self) -> Writer<'_> {
        let me = process_id();
        let mut seen = 0;
        loop {
            match self.writer.compare_exchange_weak(seen, me, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Writer(&self.writer),
                // Free, or held by another process's thread: try to take it from that value.
                Err(owner) if owner != me => seen = owner,
                Err(_) => {
                    seen = 0;
                    // The core's wait step (spin, yield with std, or the host's hook).
                    crate::sync::relax();
                }
            }
        }
    }

    /// Adds `program`. Registering the same program again does nothing. `InvalidArgument` when
    /// another program of that name is registered, `OutOfResources` when the registry is full.
    pub fn register(&self, program: &'static HostProgram) -> Result<(), Error> {
        let _writer = self.lock_writer();
        if let Some(known) = self.iter().find(|p| p.name == program.name) {
            if core::ptr::eq(known, program) {
                return Ok(());
            }
            return Err(Error::new(ErrorCode::InvalidArgument, "another host program of that name is registered"));
        }
        let len = self.len.load(Ordering::Relaxed);
        let Some(slot) = self.entries.get(len) else {
            return Err(Error::new(ErrorCode::OutOfResources, "the host program registry is full"));
        };
        // Readers look only below `len`: the place is free to (over)write until it grows.
        slot.store(core::ptr::from_ref(program).cast_mut(), Ordering::Relaxed);
        self.len.store(len + 1, Ordering::Release);
        Ok(())
    }

    /// The registered program of that name.
    pub fn find(&self, name: &str) -> Option<&'static HostProgram> {
        self.iter().find(|p| p.name == name)
    }

    /// The program in place `i`.
    pub(super) fn get(&self, i: usize) -> Option<&'static HostProgram> {
        if i >= self.len.load(Ordering::Acquire) {
            return None;
        }
        let p = self.entries[i].load(Ordering::Relaxed);
        // SAFETY: places below `len` hold a `&'static HostProgram` written before `len` grew
        // past them (the release store above, acquired here) and never written again.
        Some(unsafe { &*p })
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

/// How many programs (built-in and registered) a host program value can name.
pub(super) const PROGRAM_PLACES: usize = 0xffff;

/// The place in the program list that a host program value names (`program_load`: the place
/// + 1 in the low 16 bits, which load it is above them).
pub(super) fn program_place(program: u64) -> usize {
    ((program & 0xffff) as usize).wrapping_sub(1)
}

/// The backend's programs and kernels by their values.
impl super::HostBackend {
    /// The program in place `i`: the built-in list first, then the registry's.
    pub(super) fn program_at(&self, i: usize) -> Option<&'static HostProgram> {
        match self.programs.get(i) {
            Some(p) => Some(p),
            None => self.registry?.get(i - self.programs.len()),
        }
    }

    /// The place of the program `image` names (its name, a trailing NUL allowed).
    pub(super) fn program_index(&self, image: &[u8]) -> Option<usize> {
        let name = image.strip_suffix(&[0]).unwrap_or(image);
        let registered = self.registry.into_iter().flat_map(|r| r.iter());
        self.programs.iter().chain(registered).position(|p| p.name.as_bytes() == name)
    }

    /// The kernel a kernel value names (`kernel_get`: its program's value above 32 bits, its
    /// index below).
    pub(super) fn host_kernel(&self, kernel: u64) -> crate::BackendResult<&HostKernel> {
        let program = self.program_at(program_place(kernel >> 32));
        program
            .and_then(|p| p.kernels.get((kernel & 0xffff_ffff) as usize))
            .ok_or_else(|| super::err(ErrorCode::InvalidHandle, "host kernel does not exist"))
    }

    /// `InvalidArgument` when `kernel` needs the typed launch's extents and `args` has none
    /// (`HostKernel::extents_required`).
    pub(super) fn check_extents(&self, kernel: u64, args: &KernelArgs<'_>) -> crate::BackendResult<()> {
        self.host_kernel(kernel)?.check_extents(args)
    }
}

impl HostKernel {
    /// `InvalidArgument` when this kernel needs the typed launch's extents and `args` has none.
    pub(super) fn check_extents(&self, args: &KernelArgs<'_>) -> crate::BackendResult<()> {
        if self.extents_required && args.extents().is_none() {
            return Err(super::err(
                ErrorCode::InvalidArgument,
                "a typed host kernel's buffers need their lengths: launch it with ordo's typed launch",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static A: HostProgram = HostProgram { name: "a", kernels: &[] };
    static A_AGAIN: HostProgram = HostProgram { name: "a", kernels: &[] };
    static B: HostProgram = HostProgram { name: "b", kernels: &[] };

    #[test]
    fn registration_is_append_only_and_checked() {
        let r = HostProgramRegistry::new();
        assert!(r.find("a").is_none());
        r.register(&A).unwrap();
        r.register(&A).unwrap(); // the same program again: nothing changes
        assert_eq!(r.register(&A_AGAIN).map_err(|e| e.code), Err(ErrorCode::InvalidArgument));
        r.register(&B).unwrap();
        let names: heapless::Vec<&str, 4> = r.iter().map(|p| p.name).collect();
        assert_eq!(names.as_slice(), ["a", "b"]);
        assert!(core::ptr::eq(r.find("b").unwrap(), &B));
        assert_eq!(r.writer.load(Ordering::Relaxed), 0, "the lock is released");
    }

    #[test]
    fn a_full_registry_refuses_and_keeps_what_it_has() {
        static MANY: [HostProgram; MAX_REGISTERED_HOST_PROGRAMS + 1] = {
            const NAMES: [&str; MAX_REGISTERED_HOST_PROGRAMS + 1] = [
                "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p11", "p12", "p13", "p14", "p15",
                "p16", "p17", "p18", "p19", "p20", "p21", "p22", "p23", "p24", "p25", "p26", "p27", "p28", "p29",
                "p30", "p31", "p32",
            ];
            let mut out = [HostProgram { name: "", kernels: &[] }; MAX_REGISTERED_HOST_PROGRAMS + 1];
            let mut i = 0;
            while i < out.len() {
                out[i].name = NAMES[i];
                i += 1;
            }
            out
        };
        let r = HostProgramRegistry::new();
        for p in &MANY[..MAX_REGISTERED_HOST_PROGRAMS] {
            r.register(p).unwrap();
        }
        let last = &MANY[MAX_REGISTERED_HOST_PROGRAMS];
        assert_eq!(r.register(last).map_err(|e| e.code), Err(ErrorCode::OutOfResources));
        assert_eq!(r.iter().count(), MAX_REGISTERED_HOST_PROGRAMS);
        assert!(r.find("p31").is_some() && r.find("p32").is_none());
    }

    /// The state a `fork` leaves in a child when a parent thread was registering: the lock held
    /// by another process, a program written past the length but not published. The child takes
    /// the lock over, and the unpublished place is overwritten.
    #[test]
    fn a_lock_held_by_another_process_is_taken_over() {
        let r = HostProgramRegistry::new();
        r.register(&A).unwrap();
        r.entries[1].store(core::ptr::from_ref(&A_AGAIN).cast_mut(), Ordering::Relaxed);
        r.writer.store(process_id().wrapping_add(1).max(2), Ordering::Relaxed);
        assert!(r.find("b").is_none());
        r.register(&B).unwrap();
        assert!(core::ptr::eq(r.find("b").unwrap(), &B));
        assert_eq!(r.iter().count(), 2);
        assert_eq!(r.writer.load(Ordering::Relaxed), 0);
    }
}
