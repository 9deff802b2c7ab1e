//! Host kernels written in C: `ordo_host_program_register` gives the host platform a program of
//! C functions (a function table of the caller's, kept for the rest of the program), which
//! `ordo_program_load` then loads by name on the host device, as the built-in one. Works in
//! `no_std` builds (firmware): nothing is allocated. Each C kernel runs through one of a fixed
//! set of trampolines (Rust functions of the host backend's kernel type), which finds the C
//! function in a slot table; at most `MAX_C_HOST_KERNELS` kernels in all.

use core::cell::UnsafeCell;
use core::ffi::{c_char, c_void};
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicUsize, Ordering};

use ordo_core::host::{HostKernel, HostKernelFn, HostProgram, HostThread, MAX_REGISTERED_HOST_PROGRAMS};
use ordo_core::{Error, ErrorCode, KernelArgs};

use crate::boundary::c_name;
use crate::boundary::{guard, status};
use crate::c::types::ordo_status_t;

/// Most C host kernels a process registers, over all its programs.
pub const ORDO_MAX_C_HOST_KERNELS: u32 = 64;
const MAX_C_HOST_KERNELS: usize = ORDO_MAX_C_HOST_KERNELS as usize;

/// Where a thread of a host kernel launch is (as CUDA's `threadIdx`, `blockIdx`, `blockDim`,
/// `gridDim`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ordo_host_thread_t {
    /// Thread index within the block (x, y, z).
    pub thread: [u32; 3],
    /// Block index within the grid.
    pub block: [u32; 3],
    /// Threads per block.
    pub block_dim: [u32; 3],
    /// Blocks per grid.
    pub grid_dim: [u32; 3],
    /// The block's local (shared) memory: the `shared_mem_bytes` the launch asked for (at most
    /// 48 KiB), zeroed when the block starts and common to its threads, which run one after
    /// another in index order; NULL when the launch asked for none.
    pub local: *mut c_void,
    /// Bytes at `local`.
    pub local_len: usize,
}

/// A host kernel in C: called once per thread of a launch, one thread at a time, with the
/// thread's position and the launch's argument pointers (`args[i]` points to parameter `i`, of
/// the size the kernel declares). Returns `ORDO_SUCCESS`, or an error status that fails the
/// launch (reported by the queue's next synchronise). It must not call ordo.
pub type ordo_host_kernel_fn =
    Option<unsafe extern "C" fn(*const ordo_host_thread_t, *const *mut c_void) -> ordo_status_t>;

/// One kernel of a C host program.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ordo_host_kernel_t {
    /// The name `ordo_kernel_get` (and `olGetSymbol`) finds it by (UTF-8, NUL-terminated).
    pub name: *const c_char,
    /// The function run per thread.
    pub run: ordo_host_kernel_fn,
    /// The size in bytes of each parameter, in order (launches are checked against them, and
    /// `olLaunchKernel` lays a packed argument buffer out by them as a C struct).
    pub param_sizes: *const usize,
    /// How many parameters.
    pub param_count: u32,
}

/// Storage written once per slot, then only read (handed out as `'static` references).
struct Pool<T, const N: usize> {
    items: UnsafeCell<[MaybeUninit<T>; N]>,
    used: spin::Mutex<usize>,
}

// SAFETY: a slot is written once, under `used`'s lock, before any reference to it exists, and
// never again; the values are `Sync` (names, function pointers, slices of the caller's static
// data, which the registration's contract keeps alive and unchanged).
unsafe impl<T: Sync, const N: usize> Sync for Pool<T, N> {}

impl<T, const N: usize> Pool<T, N> {
    const fn new() -> Self {
        Self { items: UnsafeCell::new([const { MaybeUninit::uninit() }; N]), used: spin::Mutex::new(0) }
    }
}

static KERNELS: Pool<HostKernel, MAX_C_HOST_KERNELS> = Pool::new();
static PROGRAMS: Pool<HostProgram, MAX_REGISTERED_HOST_PROGRAMS> = Pool::new();
/// The C function behind each trampoline (an address; 0 before its kernel is registered).
static C_FUNCTIONS: [AtomicUsize; MAX_C_HOST_KERNELS] = [const { AtomicUsize::new(0) }; MAX_C_HOST_KERNELS];

/// Runs C kernel `slot` for one thread.
///
/// # Safety
/// The host backend's kernel contract: the arguments are the launch's, checked against the
/// kernel's declared sizes.
unsafe fn call_c(slot: usize, t: &HostThread, args: &KernelArgs<'_>) -> Result<(), Error> {
    let address = C_FUNCTIONS[slot].load(Ordering::Acquire);
    if address == 0 {
        return Err(Error::new(ErrorCode::Internal, "a C host kernel's slot is empty"));
    }
    // SAFETY: the slot holds the non-null `ordo_host_kernel_fn` registered for it.
    let run: unsafe extern "C" fn(*const ordo_host_thread_t, *const *mut c_void) -> ordo_status_t =
        unsafe { core::mem::transmute::<usize, _>(address) };
    let thread = ordo_host_thread_t {
        thread: t.thread,
        block: t.block,
        block_dim: t.block_dim,
        grid_dim: t.grid_dim,
        local: t.local.cast(),
        local_len: t.local_len,
    };
    // SAFETY: the C kernel's contract (registered by its caller): it reads its parameters.
    match unsafe { run(&thread, args.params().as_ptr()) } {
        0 => Ok(()),
        code => Err(Error::new(
            ErrorCode::from_i32(code).filter(|c| *c != ErrorCode::Success).unwrap_or(ErrorCode::Unknown),
            "a C host kernel returned an error status",
        )),
    }
}

macro_rules! trampolines {
    ($($slot:literal)*) => {
        /// One Rust kernel function per slot, each running that slot's C function.
        const TRAMPOLINES: [HostKernelFn; MAX_C_HOST_KERNELS] = [$({
            unsafe fn run(t: &HostThread, args: &KernelArgs<'_>) -> Result<(), Error> {
                // SAFETY: forwarded contract.
                unsafe { call_c($slot, t, args) }
            }
            run
        },)*];
    };
}
trampolines!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);

/// A C string of the caller's as a non-empty `'static` UTF-8 name (the registration's contract
/// keeps it).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that lives, unchanged, for the rest of the program.
unsafe fn name(p: *const c_char, null: &'static str) -> Result<&'static str, Error> {
    // SAFETY: the caller's contract.
    let s = unsafe { c_name(p, null, "a name is not UTF-8") }?;
    if s.is_empty() {
        return Err(Error::new(ErrorCode::InvalidArgument, "a name is empty"));
    }
    Ok(s)
}

/// Before a `fork` (std, Unix): takes the pools' locks and keeps them.
#[cfg(all(feature = "std", unix))]
extern "C" fn hold_pools_for_fork() {
    core::mem::forget(KERNELS.used.lock());
    core::mem::forget(PROGRAMS.used.lock());
}

/// After a `fork`, in the parent and in the child: releases what `hold_pools_for_fork` took
/// (this thread's `prepare` handler took them; their guards were forgotten, so nothing else
/// unlocks them).
#[cfg(all(feature = "std", unix))]
extern "C" fn release_pools_after_fork() {
    // SAFETY: see the doc: taken by this thread in `hold_pools_for_fork`, not released since.
    unsafe {
        PROGRAMS.used.force_unlock();
        KERNELS.used.force_unlock();
    }
}

/// Installs the pools' `fork` handlers, once. Installed before any other handler that takes a
/// lock held around a registration (host images: `host_image::fork`), so that its `prepare`
/// runs last (handlers run in reverse order of installation) and takes the pools' locks after
/// that one's, in the order the code takes them.
#[cfg(all(feature = "std", unix))]
pub(crate) fn install_fork_handlers() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: handlers with C linkage that only take and release the pools' locks.
        unsafe {
            libc::pthread_atfork(
                Some(hold_pools_for_fork),
                Some(release_pools_after_fork),
                Some(release_pools_after_fork),
            )
        };
    });
}

/// Registers a program of C kernels (`ordo_host_program_register`; host images too).
///
/// # Safety
/// As `ordo_host_program_register`: the name, the table and what it names stay valid and
/// unchanged for the rest of the program.
pub(super) unsafe fn register(
    name_ptr: *const c_char,
    kernels: *const ordo_host_kernel_t,
    count: u32,
) -> Result<(), Error> {
    #[cfg(all(feature = "std", unix))]
    install_fork_handlers();
    // SAFETY: the caller's contract (see `ordo_host_program_register`).
    let program_name = unsafe { name(name_ptr, "name is NULL") }?;
    if count > 0 && kernels.is_null() {
        return Err(Error::new(ErrorCode::NullPointer, "kernels is NULL but count is not 0"));
    }
    let table: &'static [ordo_host_kernel_t] = if count == 0 {
        &[]
    } else {
        // SAFETY: non-NULL, and valid for `count` entries for the rest of the program (contract).
        unsafe { core::slice::from_raw_parts(kernels, count as usize) }
    };
    // Every entry is checked before anything is taken.
    let mut checked: heapless::Vec<(&'static str, usize, &'static [usize]), MAX_C_HOST_KERNELS> = heapless::Vec::new();
    for k in table {
        // SAFETY: as above.
        let kernel_name = unsafe { name(k.name, "a kernel's name is NULL") }?;
        let run = k.run.ok_or(Error::new(ErrorCode::NullPointer, "a kernel's function is NULL"))?;
        if k.param_count > 0 && k.param_sizes.is_null() {
            return Err(Error::new(ErrorCode::NullPointer, "a kernel's param_sizes is NULL but param_count is not 0"));
        }
        let sizes: &'static [usize] = if k.param_count == 0 {
            &[]
        } else {
            // SAFETY: non-NULL, valid for `param_count` sizes for the rest of the program.
            unsafe { core::slice::from_raw_parts(k.param_sizes, k.param_count as usize) }
        };
        if ordo_core::c_layout(sizes).is_none() || sizes.contains(&0) {
            return Err(Error::new(ErrorCode::InvalidSize, "a kernel's parameter sizes are 0 or unusable"));
        }
        if checked.iter().any(|(n, _, _)| *n == kernel_name) {
            return Err(Error::new(ErrorCode::InvalidArgument, "two kernels of the program have one name"));
        }
        checked
            .push((kernel_name, run as usize, sizes))
            .map_err(|_| Error::new(ErrorCode::OutOfResources, "more than ORDO_MAX_C_HOST_KERNELS kernels"))?;
    }
    let registry = ordo::host_program_registry();
    if let Some(existing) = registry.find(program_name) {
        // The same table registered again changes nothing; another program of that name is refused.
        let same = existing.kernels.len() == checked.len()
            && existing.kernels.iter().zip(&checked).all(|(k, (n, _, s))| k.name == *n && core::ptr::eq(k.params, *s));
        return if same {
            Ok(())
        } else {
            Err(Error::new(ErrorCode::InvalidArgument, "another host program of that name is registered"))
        };
    }
    let mut kernels_used = KERNELS.used.lock();
    let mut programs_used = PROGRAMS.used.lock();
    if *kernels_used + checked.len() > MAX_C_HOST_KERNELS || *programs_used >= MAX_REGISTERED_HOST_PROGRAMS {
        return Err(Error::new(ErrorCode::OutOfResources, "no room for more C host kernels or programs"));
    }
    let first = *kernels_used;
    for (i, (kernel_name, run, sizes)) in checked.iter().enumerate() {
        let slot = first + i;
        C_FUNCTIONS[slot].store(*run, Ordering::Release);
        // SAFETY: slot `slot` was never written (below `used`), and no reference to it exists.
        unsafe {
            (*KERNELS.items.get())[slot].write(HostKernel {
                name: kernel_name,
                run: TRAMPOLINES[slot],
                params: sizes,
                extents_required: false,
            });
        }
    }
    // SAFETY: the slots just written, never written again.
    let kernels: &'static [HostKernel] = unsafe {
        core::slice::from_raw_parts((*KERNELS.items.get()).as_ptr().add(first).cast::<HostKernel>(), checked.len())
    };
    let p = *programs_used;
    // SAFETY: program slot `p` was never written, and no reference to it exists.
    let program: &'static HostProgram = unsafe {
        (*PROGRAMS.items.get())[p].write(HostProgram { name: program_name, kernels });
        (*PROGRAMS.items.get())[p].assume_init_ref()
    };
    registry.register(program)?;
    // Taken only once the program is in: a refused registration leaves the slots free.
    *kernels_used += checked.len();
    *programs_used += 1;
    Ok(())
}

/// Gives the host platform a program of host kernels written in C: afterwards
/// `ordo_program_load(host_device, name, strlen(name), &program)` loads it (as
/// `olCreateProgram` does through liboffload's API), and `ordo_kernel_get` finds its kernels by
/// name. Before or after `ordo_init`. Registering the same table again changes nothing.
/// `ORDO_ERROR_NULL_POINTER` for a NULL name, table, function or size list;
/// `ORDO_ERROR_INVALID_ARGUMENT` for a name that is empty or not UTF-8, two kernels of one name,
/// or another program of that name; `ORDO_ERROR_INVALID_SIZE` for a parameter size of 0;
/// `ORDO_ERROR_OUT_OF_RESOURCES` past 32 programs or `ORDO_MAX_C_HOST_KERNELS` kernels in all.
/// Nothing is registered when it fails.
///
/// # Safety
/// `name`, `kernels[0..count]`, their names and parameter size lists must be valid and stay
/// unchanged for the rest of the program (static data, as a firmware's tables are); each
/// function must be sound to call with any thread position and its parameters as declared.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_host_program_register(
    name: *const c_char,
    kernels: *const ordo_host_kernel_t,
    count: u32,
) -> ordo_status_t {
    // SAFETY: forwarded contract.
    guard(|| status(unsafe { register(name, kernels, count) }))
}
