//! The typed API's error: the runtime's errors, plus what the typed layer checks itself (launch
//! arguments against the kernel's layout, lengths, ranges, devices).

use core::fmt;

use ordo_core::ErrorCode;

/// What went wrong in a call of the typed API. Every variant maps to a stable [`ErrorCode`]
/// ([`Error::code`]); `Display` gives the detail (argument index and sizes, lengths, the
/// runtime's message and the driver's own code, the CUDA JIT's log).
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let buf = ordo::DeviceBuffer::<f32>::zeroed(&ctx.default_device()?, 4)?;
/// match buf.slice(2..9) {
///     Err(ordo::Error::OutOfRange { start: 2, end: 9, len: 4 }) => {}
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), ordo::Error>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// An error of the runtime or a backend (with the driver's code in `native` when non-zero).
    Runtime(ordo_core::Error),
    /// A launch passed another number of arguments than the kernel has parameters.
    ArgumentCount {
        /// The kernel's parameter count.
        expected: usize,
        /// Arguments given.
        actual: usize,
    },
    /// A launch argument's size differs from its parameter's.
    ArgumentSize {
        /// The argument's position (0-based).
        index: usize,
        /// The parameter's size in bytes.
        expected: usize,
        /// The argument's size in bytes.
        actual: usize,
    },
    /// A launch argument is a buffer of another device than the queue's, or of another runtime.
    ArgumentDevice {
        /// The argument's position (0-based).
        index: usize,
    },
    /// More launch arguments than [`MAX_LAUNCH_ARGS`](crate::MAX_LAUNCH_ARGS).
    TooManyArguments,
    /// Two lengths that must agree do not (a copy's host and device sides, a kernel's inputs).
    LengthMismatch {
        /// The length required (elements).
        expected: usize,
        /// The length given (elements).
        actual: usize,
    },
    /// A sub-slice range outside its buffer, or reversed.
    OutOfRange {
        /// The range's start (elements).
        start: usize,
        /// The range's end (elements).
        end: usize,
        /// The buffer's length (elements).
        len: usize,
    },
    /// Objects of two devices (or two runtimes) were combined: a queue and a buffer of a copy, an
    /// event and a queue, a module and a queue.
    DeviceMismatch,
    /// No device of a present platform (the runtime has none to offer).
    NoDevice,
    /// A module the driver's compiler refused, with the compiler's log (the CUDA JIT's error
    /// log: the PTX line and what is wrong with it), or CUDA C++ source NVRTC refused
    /// ([`Module::compile_cuda`](crate::Module::compile_cuda): its errors with their lines).
    /// Failures without a log are [`Error::Runtime`].
    #[cfg(feature = "cuda")]
    #[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
    Load {
        /// The runtime's error (`InvalidBinary`, with the driver's code).
        error: ordo_core::Error,
        /// The compiler's log.
        log: std::string::String,
    },
}

impl Error {
    /// The stable code of this error (the C ABI's `ordo_status_t`).
    ///
    /// ```
    /// let e = ordo::Error::LengthMismatch { expected: 4, actual: 3 };
    /// assert_eq!(e.code(), ordo::ErrorCode::InvalidSize);
    /// assert_eq!(e.code() as i32, 4); // ORDO_ERROR_INVALID_SIZE in C
    /// ```
    pub const fn code(&self) -> ErrorCode {
        match self {
            Self::Runtime(e) => e.code,
            #[cfg(feature = "cuda")]
            Self::Load { error, .. } => error.code,
            Self::ArgumentCount { .. } | Self::ArgumentDevice { .. } | Self::DeviceMismatch => {
                ErrorCode::InvalidArgument
            }
            Self::ArgumentSize { .. } | Self::LengthMismatch { .. } | Self::OutOfRange { .. } => ErrorCode::InvalidSize,
            Self::TooManyArguments => ErrorCode::Unsupported,
            Self::NoDevice => ErrorCode::NotPresent,
        }
    }
}

impl From<ordo_core::Error> for Error {
    fn from(e: ordo_core::Error) -> Self {
        Self::Runtime(e)
    }
}

/// An NVRTC compilation's error ([`nvrtc::compile`](crate::nvrtc::compile)) is this crate's:
/// with the compiler's log, [`Error::Load`]; without one, [`Error::Runtime`]. So `?` works on
/// `nvrtc::compile` in a function returning `ordo::Result`.
///
/// ```no_run
/// fn ptx() -> ordo::Result<()> {
///     let compiled = ordo::nvrtc::compile("extern \"C\" __global__ void k() {}", &Default::default())?;
///     assert!(!compiled.ptx().is_empty());
///     Ok(())
/// }
/// ```
#[cfg(feature = "cuda")]
impl From<ordo_cuda::nvrtc::CompileError> for Error {
    fn from(e: ordo_cuda::nvrtc::CompileError) -> Self {
        if e.log.is_empty() { Self::Runtime(e.error) } else { Self::Load { error: e.error, log: e.log } }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Runtime(e) => fmt::Display::fmt(e, f),
            Self::ArgumentCount { expected, actual } => {
                write!(f, "{}: the kernel takes {expected} arguments, {actual} were given", self.code())
            }
            Self::ArgumentSize { index, expected, actual } => write!(
                f,
                "{}: argument {index} is {actual} bytes, the kernel's parameter {index} is {expected} bytes",
                self.code()
            ),
            Self::ArgumentDevice { index } => {
                write!(f, "{}: argument {index} is a buffer of another device than the queue's", self.code())
            }
            Self::TooManyArguments => {
                write!(f, "{}: more than {} launch arguments", self.code(), crate::MAX_LAUNCH_ARGS)
            }
            Self::LengthMismatch { expected, actual } => {
                write!(f, "{}: length {actual} given where {expected} elements are required", self.code())
            }
            Self::OutOfRange { start, end, len } => {
                write!(f, "{}: range {start}..{end} is outside a buffer of {len} elements", self.code())
            }
            Self::DeviceMismatch => write!(f, "{}: the objects belong to different devices", self.code()),
            Self::NoDevice => write!(f, "{}: no platform with a device is present", self.code()),
            #[cfg(feature = "cuda")]
            Self::Load { error, log } => write!(f, "{error}; the compiler's log:\n{}", log.trim_end()),
        }
    }
}

impl core::error::Error for Error {}

/// The result type of the typed API.
///
/// ```
/// fn first_device_name() -> ordo::Result<String> {
///     let ctx = ordo::Context::new()?;
///     Ok(ctx.device(0)?.name()?.to_string())
/// }
/// assert!(!first_device_name()?.is_empty());
/// # Ok::<(), ordo::Error>(())
/// ```
pub type Result<T> = core::result::Result<T, Error>;
