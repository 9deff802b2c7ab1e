//! Kernels from CUDA C++ source at run time: NVRTC (`libnvrtc`, loaded when first asked for,
//! through cudarc's bindings) compiles source to PTX, which `program_load` JIT-compiles for the
//! device like any other PTX. No device is needed to compile ([`compile`]): the architecture is
//! an option (a device's own is `arch_of`'s answer). Results are kept in memory, keyed by the
//! source, the options and the architecture, and optionally on disk (`CompileOptions::cache_dir`,
//! or the `ORDO_NVRTC_CACHE` directory). Without NVRTC every call answers `NotPresent`, naming
//! the library and how to install it; nothing else of ordo needs it.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::nvrtc::sys::{self, nvrtcProgram, nvrtcResult};
use ordo_core::{Error, ErrorCode};

/// What to compile with. The defaults: the architecture `compute_75` (PTX any GPU since Turing
/// can JIT; name the device's own with `arch_of`), the compiler's default C++ standard, no
/// defines, include paths, line information or name expressions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    /// A virtual architecture such as `compute_90` (or a real one, `sm_90`).
    pub arch: Option<String>,
    /// The C++ standard, such as `c++17`.
    pub std: Option<String>,
    /// Macro definitions: `(name, value)`, `-Dname=value` (`-Dname` without a value).
    pub defines: Vec<(String, Option<String>)>,
    /// Directories searched for `#include`s.
    pub include_paths: Vec<PathBuf>,
    /// Line information in the PTX (`-lineinfo`), for profilers and `compute-sanitizer`.
    pub line_info: bool,
    /// Name expressions whose mangled names the result reports (`Compiled::lowered_name`): how
    /// a template instantiation such as `"scale<float>"` is found after compilation.
    pub name_expressions: Vec<String>,
    /// Further options, passed as given (`--use_fast_math`, `-maxrregcount=32`, …).
    pub extra: Vec<String>,
    /// A directory that keeps compiled PTX between processes (created when missing).
    pub cache_dir: Option<PathBuf>,
}

/// A compiled program: its PTX (NUL-terminated, ready for `program_load`), the compiler's log
/// (warnings; empty when there were none) and the mangled name of each name expression.
#[derive(Debug, PartialEq, Eq)]
pub struct Compiled {
    ptx: Vec<u8>,
    log: String,
    lowered: Vec<(String, String)>,
}

impl Compiled {
    /// The PTX, NUL-terminated.
    pub fn ptx(&self) -> &[u8] {
        &self.ptx
    }

    /// The PTX as text (without the NUL).
    pub fn ptx_text(&self) -> &str {
        std::str::from_utf8(self.ptx.strip_suffix(&[0]).unwrap_or(&self.ptx)).unwrap_or("")
    }

    /// The compiler's log (its warnings).
    pub fn log(&self) -> &str {
        &self.log
    }

    /// The mangled name of `expression`, one of `CompileOptions::name_expressions`: the name to
    /// look the kernel up by.
    pub fn lowered_name(&self, expression: &str) -> Option<&str> {
        self.lowered.iter().find(|(e, _)| e == expression).map(|(_, l)| l.as_str())
    }
}

/// A failed compilation: the error (`InvalidBinary` for the source's errors, `NotPresent`
/// without NVRTC, `InvalidArgument` for bad options) and the compiler's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    /// The error code and message.
    pub error: Error,
    /// The compiler's log (the source's errors with their lines); empty where there is none.
    pub log: String,
}

impl core::fmt::Display for CompileError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.log.is_empty() { write!(f, "{}", self.error) } else { write!(f, "{}:\n{}", self.error, self.log) }
    }
}

impl std::error::Error for CompileError {}

fn error(code: ErrorCode, message: &'static str) -> CompileError {
    CompileError { error: Error::new(code, message), log: String::new() }
}

/// The message of a missing NVRTC.
pub const NVRTC_MISSING: &str = "NVRTC (libnvrtc.so.13 or .12) was not found: install the version that matches \
     the driver (`pip install 'nvidia-cuda-nvrtc==13.0.*'` for a CUDA 13.0 driver: a newer NVRTC writes PTX \
     an older driver refuses), or the CUDA toolkit, and put its lib directory on LD_LIBRARY_PATH";

/// Whether NVRTC can be loaded (asked once per process).
pub fn available() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: loading a shared library by name; its initialisers are the toolkit's.
    *PRESENT.get_or_init(|| std::panic::catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false))
}

/// NVRTC's version, `(major, minor)`; `NotPresent` without it.
pub fn version() -> Result<(i32, i32), CompileError> {
    if !available() {
        return Err(error(ErrorCode::NotPresent, NVRTC_MISSING));
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: valid out-pointers; the library is present.
    let r = guarded(|| unsafe { sys::nvrtcVersion(&mut major, &mut minor) })?;
    check(r, "nvrtcVersion")?;
    Ok((major, minor))
}

/// The virtual architecture of a device of compute capability `major.minor`: `compute_<major><minor>`.
pub fn arch_of(major: u32, minor: u32) -> String {
    format!("compute_{major}{minor}")
}

type Key = (String, CompileOptions);

fn cache() -> &'static Mutex<HashMap<Key, Arc<Compiled>>> {
    static CACHE: OnceLock<Mutex<HashMap<Key, Arc<Compiled>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Forgets the results kept in memory (a cache directory keeps its files).
pub fn clear_memory_cache() {
    cache().lock().unwrap_or_else(|p| p.into_inner()).clear();
}

/// The cache directory `ORDO_NVRTC_CACHE` names: none when it is unset or empty (an empty
/// variable means unset, as for `ORDO_TRACE`; it never means the current directory).
fn env_cache_dir() -> Option<PathBuf> {
    std::env::var_os("ORDO_NVRTC_CACHE").filter(|d| !d.is_empty()).map(PathBuf::from)
}

/// Compiles CUDA C++ `source` to PTX (no device needed), or returns the result of an earlier
/// compilation of the same source with the same options (in memory, then in the cache
/// directory). Errors: `NotPresent` without NVRTC (`NVRTC_MISSING`), `InvalidArgument` for a
/// source or option holding a NUL byte or options NVRTC refuses (with its log),
/// `InvalidBinary` for a source that does not compile (with the log: its errors and lines).
pub fn compile(source: &str, options: &CompileOptions) -> Result<Arc<Compiled>, CompileError> {
    let key = (source.to_owned(), options.clone());
    if let Some(hit) = cache().lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(Arc::clone(hit));
    }
    let dir = options.cache_dir.clone().or_else(env_cache_dir);
    let file = dir.as_ref().map(|d| d.join(format!("{:016x}.ptx", fingerprint(&key, FNV_BASIS))));
    let check = format!("{:016x}", fingerprint(&key, CHECK_BASIS));
    let compiled = match file.as_ref().and_then(|f| read_cached(f, &check, options)) {
        Some(c) => c,
        None => {
            let c = compile_now(source, options)?;
            if let (Some(dir), Some(file)) = (&dir, &file) {
                write_cached(dir, file, &check, &c);
            }
            c
        }
    };
    let compiled = Arc::new(compiled);
    cache().lock().unwrap_or_else(|p| p.into_inner()).insert(key, Arc::clone(&compiled));
    Ok(compiled)
}

const FNV_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// A second basis: the file's check line, so that two keys whose names collide only miss.
const CHECK_BASIS: u64 = 0x6c62_272e_07bb_0142;

/// A 64-bit FNV-1a hash of the source and options (with `FNV_BASIS`: the cache file's name).
fn fingerprint(key: &Key, basis: u64) -> u64 {
    let text = format!("{key:?}");
    text.bytes().fold(basis, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The cache file's layout: a header line `ordo nvrtc cache <check>`, the lowered names (one
/// `expression\tname` line each), a line `--`, then the PTX. A file whose check differs is
/// another key's (or damaged): a miss.
fn read_cached(file: &std::path::Path, check: &str, options: &CompileOptions) -> Option<Compiled> {
    let bytes = std::fs::read(file).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let (head, ptx) = text.split_once("\n--\n")?;
    let mut lines = head.lines();
    if lines.next()?.strip_prefix("ordo nvrtc cache ")? != check {
        return None;
    }
    let lowered: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once('\t')).map(|(e, n)| (e.to_owned(), n.to_owned())).collect();
    if lowered.len() != options.name_expressions.len() {
        return None;
    }
    let mut ptx = ptx.as_bytes().to_vec();
    ptx.push(0);
    Some(Compiled { ptx, log: String::new(), lowered })
}

fn write_cached(dir: &std::path::Path, file: &std::path::Path, check: &str, c: &Compiled) {
    let mut text = format!("ordo nvrtc cache {check}\n");
    for (e, n) in &c.lowered {
        text.push_str(&format!("{e}\t{n}\n"));
    }
    text.push_str("--\n");
    text.push_str(c.ptx_text());
    // Best effort: a cache that cannot be written only costs a later compilation. Written
    // aside and renamed, so that a reader never sees half a file.
    let _ = std::fs::create_dir_all(dir);
    let part = file.with_extension(format!("ptx.{}", std::process::id()));
    if std::fs::write(&part, text).is_ok() {
        let _ = std::fs::rename(&part, file);
    }
}

/// A call into NVRTC with cudarc's loader panics (a missing library or symbol) turned into
/// `NotPresent`.
fn guarded<R>(call: impl FnOnce() -> R) -> Result<R, CompileError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(call))
        .map_err(|_| error(ErrorCode::NotPresent, NVRTC_MISSING))
}

fn check(r: nvrtcResult, call: &'static str) -> Result<(), CompileError> {
    match r {
        nvrtcResult::NVRTC_SUCCESS => Ok(()),
        nvrtcResult::NVRTC_ERROR_COMPILATION => Err(error(ErrorCode::InvalidBinary, "the source did not compile")),
        nvrtcResult::NVRTC_ERROR_INVALID_OPTION => Err(error(ErrorCode::InvalidArgument, "NVRTC refused an option")),
        nvrtcResult::NVRTC_ERROR_OUT_OF_MEMORY => Err(error(ErrorCode::OutOfResources, "NVRTC ran out of memory")),
        nvrtcResult::NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID => {
            Err(error(ErrorCode::InvalidArgument, "a name expression names nothing in the source"))
        }
        other => Err(CompileError {
            error: Error { native: other as i64, call, ..Error::new(ErrorCode::BackendFailure, "NVRTC failed") },
            log: String::new(),
        }),
    }
}

/// The options as NVRTC takes them.
fn option_strings(options: &CompileOptions) -> Result<Vec<CString>, CompileError> {
    let mut out = vec![format!("--gpu-architecture={}", options.arch.as_deref().unwrap_or("compute_75"))];
    if let Some(std) = &options.std {
        out.push(format!("-std={std}"));
    }
    for (name, value) in &options.defines {
        out.push(match value {
            Some(v) => format!("-D{name}={v}"),
            None => format!("-D{name}"),
        });
    }
    for dir in &options.include_paths {
        out.push(format!("-I{}", dir.display()));
    }
    if options.line_info {
        out.push("-lineinfo".to_owned());
    }
    out.extend(options.extra.iter().cloned());
    out.into_iter()
        .map(|o| CString::new(o).map_err(|_| error(ErrorCode::InvalidArgument, "an option holds a NUL byte")))
        .collect()
}

/// The program, destroyed on drop.
struct Program(nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: a program `nvrtcCreateProgram` made, destroyed once.
        let _ = guarded(|| unsafe { sys::nvrtcDestroyProgram(&mut self.0) });
    }
}

fn compile_now(source: &str, options: &CompileOptions) -> Result<Compiled, CompileError> {
    if !available() {
        return Err(error(ErrorCode::NotPresent, NVRTC_MISSING));
    }
    let src = CString::new(source).map_err(|_| error(ErrorCode::InvalidArgument, "the source holds a NUL byte"))?;
    let opts = option_strings(options)?;
    let expressions: Vec<CString> = options
        .name_expressions
        .iter()
        .map(|e| CString::new(e.as_str()))
        .collect::<Result<_, _>>()
        .map_err(|_| error(ErrorCode::InvalidArgument, "a name expression holds a NUL byte"))?;
    let mut raw: nvrtcProgram = std::ptr::null_mut();
    let name = c"ordo.cu";
    // SAFETY: NUL-terminated source and name; no headers; valid out-pointer.
    let r = guarded(|| unsafe {
        sys::nvrtcCreateProgram(&mut raw, src.as_ptr(), name.as_ptr(), 0, std::ptr::null(), std::ptr::null())
    })?;
    check(r, "nvrtcCreateProgram")?;
    let program = Program(raw);
    for e in &expressions {
        // SAFETY: a live program; a NUL-terminated expression.
        check(guarded(|| unsafe { sys::nvrtcAddNameExpression(program.0, e.as_ptr()) })?, "nvrtcAddNameExpression")?;
    }
    let pointers: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: a live program; `pointers` holds that many NUL-terminated options.
    let compiled =
        guarded(|| unsafe { sys::nvrtcCompileProgram(program.0, pointers.len() as i32, pointers.as_ptr()) })?;
    let log = program_log(&program)?;
    if let Err(mut e) = check(compiled, "nvrtcCompileProgram") {
        e.log = log;
        return Err(e);
    }
    let mut size = 0usize;
    // SAFETY: a compiled program; valid out-pointer.
    check(guarded(|| unsafe { sys::nvrtcGetPTXSize(program.0, &mut size) })?, "nvrtcGetPTXSize")?;
    let mut ptx = vec![0u8; size.max(1)];
    // SAFETY: room for `size` bytes (the PTX with its NUL).
    check(guarded(|| unsafe { sys::nvrtcGetPTX(program.0, ptx.as_mut_ptr().cast()) })?, "nvrtcGetPTX")?;
    if ptx.last() != Some(&0) {
        ptx.push(0);
    }
    let mut lowered = Vec::with_capacity(expressions.len());
    for (e, text) in expressions.iter().zip(&options.name_expressions) {
        let mut name: *const c_char = std::ptr::null();
        let lower = || {
            // SAFETY: a compiled program and an expression added before compilation; NVRTC owns
            // the returned string until the program is destroyed (copied below, before that).
            unsafe { sys::nvrtcGetLoweredName(program.0, e.as_ptr(), &mut name) }
        };
        check(guarded(lower)?, "nvrtcGetLoweredName")?;
        // SAFETY: NUL-terminated, alive until the program goes.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
        lowered.push((text.clone(), name));
    }
    Ok(Compiled { ptx, log, lowered })
}

fn program_log(program: &Program) -> Result<String, CompileError> {
    let mut size = 0usize;
    // SAFETY: a live program; valid out-pointer.
    check(guarded(|| unsafe { sys::nvrtcGetProgramLogSize(program.0, &mut size) })?, "nvrtcGetProgramLogSize")?;
    let mut log = vec![0u8; size.max(1)];
    // SAFETY: room for `size` bytes.
    check(guarded(|| unsafe { sys::nvrtcGetProgramLog(program.0, log.as_mut_ptr().cast()) })?, "nvrtcGetProgramLog")?;
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    Ok(String::from_utf8_lossy(&log[..end]).trim_end().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ORDO_NVRTC_CACHE=` (set but empty) is unset: compiled PTX never lands in the current
    /// directory. (The only test of this crate that touches the variable.)
    #[test]
    fn an_empty_cache_variable_means_no_cache() {
        // SAFETY: no other test of this crate reads or writes the environment.
        unsafe { std::env::set_var("ORDO_NVRTC_CACHE", "") };
        assert_eq!(env_cache_dir(), None);
        // SAFETY: as above.
        unsafe { std::env::set_var("ORDO_NVRTC_CACHE", "/tmp/ordo-nvrtc-cache") };
        assert_eq!(env_cache_dir(), Some(PathBuf::from("/tmp/ordo-nvrtc-cache")));
        // SAFETY: as above.
        unsafe { std::env::remove_var("ORDO_NVRTC_CACHE") };
        assert_eq!(env_cache_dir(), None);
    }
}
