//! Host program images (with `std`, on Linux): a shared object for the host's architecture,
//! handed to `ordo_program_load` or `olCreateProgram` on a host device from memory. The image
//! exports a kernel table in the C registration's format (`ordo_host_kernels`, an array of
//! `ordo_host_kernel_t`, and `ordo_host_kernel_count`, a `uint32_t`); loading it registers that
//! table as a host program (`ordo_host_program_register`) under a name of ordo's and loads the
//! program by that name. The image is opened from memory (`memfd_create`, then `dlopen` of
//! the descriptor's `/proc/self/fd` path) and stays mapped, its descriptor open (close-on-exec),
//! for the rest of the process, as registered tables do: loading the same bytes again loads the same registration, so a
//! program that loads and unloads one image in a loop costs one mapping. Depends on `c::host`.

use std::ffi::{CStr, CString, c_void};
use std::sync::Mutex;

use ordo::runtime;
use ordo_core::{BackendKind, Device, Error, ErrorCode};

use super::host::{ordo_host_kernel_t, register};

/// The table an image exports, and its length.
const KERNELS_SYMBOL: &CStr = c"ordo_host_kernels";
const COUNT_SYMBOL: &CStr = c"ordo_host_kernel_count";

/// ELF's machine number for the architecture this library was built for (0: none known, so no
/// image fits).
const MACHINE: u16 = if cfg!(target_arch = "x86_64") {
    62
} else if cfg!(target_arch = "aarch64") {
    183
} else if cfg!(target_arch = "riscv64") {
    243
} else if cfg!(target_arch = "x86") {
    3
} else if cfg!(target_arch = "arm") {
    40
} else {
    0
};

/// An image loaded so far.
struct Loaded {
    bytes: Vec<u8>,
    /// The program name it was registered under.
    name: &'static CStr,
    /// The loader's handle (an address).
    library: usize,
}

static LOADED: Mutex<Vec<Loaded>> = Mutex::new(Vec::new());

/// Held while the loader opens an image (so that each image's initialisers run once), never
/// with `LOADED` held: the initialisers are the image's code, and may call ordo or `fork`.
static OPENING: Mutex<()> = Mutex::new(());

std::thread_local! {
    /// Whether this thread is running a host image's initialisers (inside `open`) or, for an
    /// image refused after its opening, its finalisers.
    static IN_INITIALISERS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as running an image's initialisers until dropped.
struct Initialising;

impl Initialising {
    fn start() -> Self {
        IN_INITIALISERS.set(true);
        Self
    }
}

impl Drop for Initialising {
    fn drop(&mut self) {
        IN_INITIALISERS.set(false);
    }
}

/// `fork` handling for the registration of host programs (C tables and host images): a child
/// forked while another thread registers one must not find a lock that thread held. Before the
/// fork the forking thread takes the opening lock (unless it holds it itself: an image's
/// initialiser forks; in the child that thread goes on and releases it), the image list's lock
/// and the C registration's pool locks (waiting for a registration in progress), and releases
/// them after it in both processes. Installed by the first registration. (The registry of
/// programs needs no handler: a child takes over its writer lock.)
#[cfg(unix)]
pub(crate) mod fork {
    use std::cell::UnsafeCell;
    use std::sync::{MutexGuard, Once};

    use super::{IN_INITIALISERS, LOADED, Loaded, OPENING};

    /// The guards taken for a fork in progress (only the forking thread touches them, between
    /// its `prepare` and its `parent` or `child`; a second forking thread takes the image
    /// list's lock, so it waits for the first one's release before it writes here).
    type Guards = (Option<MutexGuard<'static, ()>>, MutexGuard<'static, Vec<Loaded>>);
    struct Held(UnsafeCell<Option<Guards>>);
    // SAFETY: see the type's doc: one thread at a time, ordered by `LOADED`'s lock.
    unsafe impl Sync for Held {}
    static HELD: Held = Held(UnsafeCell::new(None));

    pub(crate) extern "C" fn prepare() {
        let opening = (!IN_INITIALISERS.get()).then(|| OPENING.lock().unwrap_or_else(|p| p.into_inner()));
        let loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: see `Held`: this thread holds the image list's lock.
        unsafe { *HELD.0.get() = Some((opening, loaded)) };
    }

    pub(crate) extern "C" fn release() {
        // SAFETY: see `Held`; dropping the guards unlocks (in the child the forking thread is the
        // one that locked them).
        drop(unsafe { (*HELD.0.get()).take() });
    }

    /// Installs the handlers, once, after the host pools' (whose locks a registration takes
    /// while it holds the image list's: their `prepare` must run after this one's).
    pub(crate) fn install() {
        static INSTALLED: Once = Once::new();
        INSTALLED.call_once(|| {
            super::super::host::install_fork_handlers();
            // SAFETY: handlers with C linkage that only take and release ordo's locks.
            unsafe { libc::pthread_atfork(Some(prepare), Some(release), Some(release)) };
        });
    }
}

/// Whether `bytes` starts as an ELF file does (a host image, on a host device).
pub(crate) fn is_elf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF")
}

/// Whether `bytes` has the header of an ELF shared object for this process: its class (32 or
/// 64 bits), byte order and machine, and type `ET_DYN`. Only the header is read.
pub(crate) fn fits(bytes: &[u8]) -> bool {
    let u16_at = |at: usize| {
        let raw = [bytes[at], bytes[at + 1]];
        if cfg!(target_endian = "little") { u16::from_le_bytes(raw) } else { u16::from_be_bytes(raw) }
    };
    let class = if cfg!(target_pointer_width = "64") { 2 } else { 1 };
    let order = if cfg!(target_endian = "little") { 1 } else { 2 };
    const ET_DYN: u16 = 3;
    // e_ident (16 bytes: magic, class, byte order, version), e_type, e_machine.
    bytes.len() >= 52
        && is_elf(bytes)
        && bytes[4] == class
        && bytes[5] == order
        && bytes[6] == 1
        && u16_at(16) == ET_DYN
        && MACHINE != 0
        && u16_at(18) == MACHINE
}

fn refused(message: &'static str) -> Error {
    Error::new(ErrorCode::InvalidBinary, message)
}

/// Whether `device` is a live device of the host platform.
fn on_host(device: Device) -> bool {
    let rt = runtime();
    rt.device_platform(device).and_then(|p| rt.platform_info(p)).is_ok_and(|info| info.kind == BackendKind::Host)
}

/// What `ordo_program_load` and `olCreateProgram` give the runtime for `bytes` on `device`: a
/// host image's program name where `device` is a host device and `bytes` an ELF file (the image
/// registered first), else `bytes` as they are (a GPU's ELF images go to its backend).
pub(crate) fn program_bytes(device: Device, bytes: &[u8]) -> Result<&[u8], Error> {
    if is_elf(bytes) && on_host(device) { register_image(bytes).map(CStr::to_bytes) } else { Ok(bytes) }
}

/// `ordo_program_check` and `olIsValidBinary` for a host image: `Some(fits)` where `device` is
/// a host device and `bytes` an ELF file (the header is checked, nothing is loaded), else
/// `None` (the runtime answers).
pub(crate) fn check(device: Device, bytes: &[u8]) -> Option<bool> {
    (is_elf(bytes) && on_host(device)).then(|| fits(bytes))
}

/// Registers host image `bytes` (once per distinct image) and returns the program name that
/// loads it. `InvalidBinary` for an image that is not a shared object for this machine, one the
/// dynamic loader refuses (its message goes to the log), or one without the two symbols;
/// `Busy` when called from a host image's initialisers (on the thread running them); the
/// registration's own errors for its table. Nothing stays loaded when it fails. The image's
/// initialisers run with no lock of ordo's held but the one that lets one image open at a time:
/// they may call ordo (but not load a host image) and `fork`.
pub(crate) fn register_image(bytes: &[u8]) -> Result<&'static CStr, Error> {
    if !fits(bytes) {
        return Err(refused("the image is not an ELF shared object for this machine"));
    }
    if IN_INITIALISERS.get() {
        return Err(Error::new(ErrorCode::Busy, "a host image's initialisers cannot load a host image"));
    }
    #[cfg(unix)]
    fork::install();
    let known = || {
        let loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
        loaded.iter().find(|image| image.bytes == bytes).map(|image| image.name)
    };
    if let Some(name) = known() {
        return Ok(name);
    }
    let _opening = OPENING.lock().unwrap_or_else(|p| p.into_inner());
    // Another thread may have opened it meanwhile.
    if let Some(name) = known() {
        return Ok(name);
    }
    let (library, fd) = {
        let _initialising = Initialising::start();
        // SAFETY: the loader maps and initialises the image (its initialisers run: an image is
        // code its caller trusts, as any library it links).
        unsafe { open(bytes) }?
    };
    let registered = {
        let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: a library `open` returned; the names are NUL-terminated.
        let (table, count) =
            unsafe { (libc::dlsym(library, KERNELS_SYMBOL.as_ptr()), libc::dlsym(library, COUNT_SYMBOL.as_ptr())) };
        // The loader knows a library by its path: were a descriptor's path ever reused (a
        // program that closed ordo's descriptor), it would hand back the library loaded from it
        // before.
        if loaded.iter().any(|image| image.library == library as usize) {
            Err(refused("the dynamic loader handed back a host image loaded before"))
        } else if table.is_null() || count.is_null() {
            Err(refused("the image exports no ordo_host_kernels or no ordo_host_kernel_count"))
        } else {
            let name = CString::new(format!("ordo.host-image.{}", loaded.len())).expect("no NUL in the name");
            // SAFETY: `count` is the image's `uint32_t`, and the table and everything it names
            // are the image's, mapped for the rest of the process once registered (never closed).
            unsafe { register(name.as_ptr(), table.cast::<ordo_host_kernel_t>(), *count.cast::<u32>()) }.map(|()| {
                let name: &'static CStr = Box::leak(name.into_boxed_c_str());
                // The library and its descriptor stay open for the rest of the process.
                loaded.push(Loaded { bytes: bytes.to_vec(), name, library: library as usize });
                name
            })
        }
    };
    if registered.is_err() {
        // Outside the image list's lock: closing runs the image's finalisers.
        let _finalising = Initialising::start();
        // SAFETY: a library `open` returned, closed once, and its descriptor; nothing of the
        // image was kept.
        unsafe {
            libc::dlclose(library);
            libc::close(fd);
        }
    }
    registered
}

/// Maps `bytes` as a library: written to an anonymous memory file (close-on-exec) and opened by
/// its descriptor's path. Returns the library and the descriptor, which the caller keeps open
/// for as long as the library is loaded: the loader knows libraries by path, so the path must
/// not name another image while this one is loaded.
///
/// # Safety
/// Opening a library runs its initialisers.
#[cfg(not(target_os = "linux"))]
unsafe fn open(_bytes: &[u8]) -> Result<(*mut c_void, i32), Error> {
    Err(Error::new(ErrorCode::Unsupported, "host images are loaded on Linux only"))
}

/// As above, on Linux.
///
/// # Safety
/// Opening a library runs its initialisers.
#[cfg(target_os = "linux")]
unsafe fn open(bytes: &[u8]) -> Result<(*mut c_void, i32), Error> {
    // SAFETY: a NUL-terminated name; the flag is known to the kernel.
    let fd = unsafe { libc::memfd_create(c"ordo-host-image".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(Error::new(ErrorCode::OutOfResources, "memfd_create failed for a host image"));
    }
    let mut written = 0;
    while written < bytes.len() {
        // SAFETY: the remaining bytes of `bytes`, readable.
        let n = unsafe { libc::write(fd, bytes[written..].as_ptr().cast(), bytes.len() - written) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            // SAFETY: our descriptor, closed once.
            unsafe { libc::close(fd) };
            return Err(Error::new(ErrorCode::OutOfResources, "a host image could not be written to memory"));
        }
        written += n as usize;
    }
    let path = CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL in the path");
    // SAFETY: a NUL-terminated path; the caller accepts the initialisers.
    let library = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if library.is_null() {
        // SAFETY: our descriptor, closed once.
        unsafe { libc::close(fd) };
        // SAFETY: dlerror's message is this thread's, valid until its next dl call.
        let why = unsafe { libc::dlerror() };
        if !why.is_null() {
            // SAFETY: non-null, NUL-terminated (dlerror's contract).
            log::warn!("ordo: a host image was refused: {}", unsafe { CStr::from_ptr(why) }.to_string_lossy());
        }
        return Err(refused("the dynamic loader refused the host image"));
    }
    Ok((library, fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_shared_objects_of_this_machine_fit() {
        let mut header = vec![0u8; 64];
        header[..4].copy_from_slice(b"\x7fELF");
        header[4] = if cfg!(target_pointer_width = "64") { 2 } else { 1 };
        header[5] = if cfg!(target_endian = "little") { 1 } else { 2 };
        header[6] = 1;
        let put = |h: &mut Vec<u8>, at: usize, v: u16| {
            let b = if cfg!(target_endian = "little") { v.to_le_bytes() } else { v.to_be_bytes() };
            h[at..at + 2].copy_from_slice(&b);
        };
        put(&mut header, 16, 3);
        put(&mut header, 18, MACHINE);
        assert!(fits(&header), "a shared object of this machine");
        let mut cubin = header.clone();
        put(&mut cubin, 18, 190);
        assert!(!fits(&cubin), "a CUDA cubin (EM_CUDA)");
        let mut executable = header.clone();
        put(&mut executable, 16, 2);
        assert!(!fits(&executable), "an executable");
        let mut other_class = header.clone();
        other_class[4] ^= 3;
        assert!(!fits(&other_class));
        assert!(!fits(&header[..40]), "a truncated header");
        assert!(!fits(b"ordo.builtin"));
        assert_eq!(register_image(&cubin).unwrap_err().code, ErrorCode::InvalidBinary);
        // A header alone is refused by the loader, and nothing is kept.
        assert_eq!(register_image(&header).unwrap_err().code, ErrorCode::InvalidBinary);
        assert!(LOADED.lock().unwrap().is_empty());
    }
}
