//! [`Context`] (a reference-counted hold on an initialised runtime) and [`Device`]. Every object
//! of the typed API holds a context of its own, so none can outlive its runtime reference.

use ordo_core::{BackendKind, Device as RawDevice, DeviceInfo, InfoValue, Runtime};

use crate::error::{Error, Result};

/// A reference to an initialised runtime, held as a cheap reference-counted value:
/// [`Context::new`] (the default runtime) or [`Context::with_runtime`] takes an init reference
/// (the first initialises the runtime); each clone takes another, and each drop gives one back
/// (the last one tears the runtime down, in the documented order).
///
/// Every object of the typed API (devices, buffers, queues, events, modules, functions) holds a
/// context of its own, so none outlives the runtime reference it uses, and a program can keep a
/// context and its objects together in one struct, move them between threads, and drop them in
/// any order:
///
/// ```
/// struct Gpu {
///     ctx: ordo::Context<'static>,
///     queue: ordo::Queue<'static>,
///     data: ordo::DeviceBuffer<'static, f32>,
/// }
/// let ctx = ordo::Context::new()?;
/// let dev = ctx.default_device()?;
/// let gpu = Gpu { queue: dev.queue()?, data: ordo::DeviceBuffer::zeroed(&dev, 4)?, ctx };
/// let gpu = std::thread::spawn(move || gpu).join().unwrap(); // `Send` (and `Sync`)
/// assert_eq!(gpu.data.to_vec()?, [0.0; 4]);
/// drop(gpu.ctx); // the buffer and queue keep the runtime up until they go
/// gpu.queue.synchronize()?;
/// # Ok::<(), ordo::Error>(())
/// ```
///
/// A reference belongs to the runtime's epoch it was taken in ([`Runtime::epoch`]): if a caller
/// of the raw API shuts the runtime down under the context (more `shutdown`s than `init`s), the
/// context and its objects are stale from then on (their calls fail with `InvalidHandle` or
/// `Uninitialized`, and never reach objects of a later init), and their drops give nothing back.
pub struct Context<'r> {
    rt: &'r Runtime,
    /// The runtime's epoch when the reference was taken.
    epoch: u32,
    /// Whether this value holds a reference (a clone made after the runtime was torn down
    /// under it holds none).
    held: bool,
}

impl core::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Context")
            .field("runtime", &self.rt.identity())
            .field("epoch", &self.epoch)
            .field("current", &self.is_current())
            .finish()
    }
}

impl Clone for Context<'_> {
    /// Another reference to the same runtime (one uncontended atomic step). A clone of a stale
    /// context is stale too: it takes no reference, and never brings the runtime up again.
    fn clone(&self) -> Self {
        let mut held = self.is_current() && self.rt.retain().is_ok();
        if held && self.rt.epoch() != self.epoch {
            // Torn down and brought up again between the two: that reference is a newer
            // holder's epoch's; give it back.
            let _ = self.rt.shutdown();
            held = false;
        }
        Self { rt: self.rt, epoch: self.epoch, held }
    }
}

impl PartialEq for Context<'_> {
    /// Whether two contexts hold the same runtime.
    fn eq(&self, other: &Self) -> bool {
        core::ptr::eq(self.rt, other.rt)
    }
}

impl Eq for Context<'_> {}

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl Context<'static> {
    /// A context over the process-wide default runtime ([`runtime`](crate::runtime)).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// assert!(ctx.default_device().is_ok()); // the host device at least
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn new() -> Result<Self> {
        Self::with_runtime(crate::runtime())
    }
}

impl<'r> Context<'r> {
    /// A context over a runtime the caller provides (a `static_runtime!`, an `OwnedRuntime`):
    /// the way to use the typed API without `std`.
    ///
    /// ```
    /// use ordo::host::{HostArena, HostBackend, builtin};
    /// static ARENA: HostArena<{ 1 << 16 }> = HostArena::new();
    /// static HOST: HostBackend = HostBackend::new(&ARENA, builtin::PROGRAMS, None);
    /// static BACKENDS: [&dyn ordo::raw::Backend; 1] = [&HOST];
    /// ordo::static_runtime!(static RUNTIME = &BACKENDS);
    ///
    /// let ctx = ordo::Context::with_runtime(&RUNTIME)?;
    /// let buf = ordo::DeviceBuffer::from_slice(&ctx.default_device()?, &[1u32, 2, 3])?;
    /// assert_eq!(buf.len(), 3);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn with_runtime(rt: &'r Runtime) -> Result<Self> {
        rt.init()?;
        // Held, the reference keeps the epoch from changing (but for a raw caller's extra
        // shutdowns, which make this context stale as documented).
        Ok(Self { rt, epoch: rt.epoch(), held: true })
    }

    /// Whether the context's reference still exists: `false` once a caller of the raw API has
    /// shut the runtime down under it (see [`Context`]).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// assert!(ctx.is_current());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    #[inline]
    pub fn is_current(&self) -> bool {
        self.held && self.rt.epoch() == self.epoch
    }

    /// The runtime this context holds (for the raw API, `ordo_core::Runtime`'s methods).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// assert!(core::ptr::eq(ctx.runtime(), ordo::runtime()));
    /// assert!(ctx.runtime().platform_count()? >= 1);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn runtime(&self) -> &'r Runtime {
        self.rt
    }

    /// Every device of every present platform, in platform registration order (the default
    /// runtime: host first, then CUDA, then AMDGPU).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// assert!(ctx.devices()?.iter().any(|d| d.kind() == ordo::BackendKind::Host));
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn devices(&self) -> Result<heapless::Vec<Device<'r>, { ordo_core::capacity::MAX_DEVICES }>> {
        self.check_current()?;
        let mut out = heapless::Vec::new();
        for p in 0..self.rt.platform_count()? {
            let platform = self.rt.platform(p)?;
            let info = self.rt.platform_info(platform)?;
            if info.absent.is_some() {
                continue;
            }
            for i in 0..info.device_count {
                let raw = self.rt.device(platform, i)?;
                // Cannot overflow: the runtime holds at most MAX_DEVICES devices.
                let _ = out.push(Device { ctx: self.clone(), raw, kind: info.kind, ordinal: i });
            }
        }
        Ok(out)
    }

    /// The device a program should use when it does not choose: the first device of the first
    /// present GPU platform, else the host device. [`Error::NoDevice`] when there is none.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// println!("running on {} ({})", dev.name()?, dev.kind().name());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn default_device(&self) -> Result<Device<'r>> {
        let devices = self.devices()?;
        let gpu = devices.iter().find(|d| d.kind != BackendKind::Host);
        gpu.or(devices.first()).cloned().ok_or(Error::NoDevice)
    }

    /// Device `index` of [`devices`](Self::devices) (the default runtime's host device is 0).
    /// [`Error::NoDevice`] past the last one.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// assert_eq!(ctx.device(0)?.kind(), ordo::BackendKind::Host);
    /// assert_eq!(ctx.device(99).unwrap_err(), ordo::Error::NoDevice);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn device(&self, index: usize) -> Result<Device<'r>> {
        let mut devices = self.devices()?;
        if index >= devices.len() {
            return Err(Error::NoDevice);
        }
        Ok(devices.swap_remove(index))
    }

    /// `InvalidHandle` when the context is stale (see [`Context`]).
    #[inline]
    pub(crate) fn check_current(&self) -> Result<()> {
        if self.is_current() {
            return Ok(());
        }
        Err(stale())
    }
}

/// The error of an object whose runtime reference was taken away (see [`Context`]).
#[cold]
pub(crate) fn stale() -> Error {
    Error::Runtime(ordo_core::Error::new(
        ordo_core::ErrorCode::InvalidHandle,
        "the object is from before the runtime was shut down under it",
    ))
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        // Gives back this value's reference, only in the epoch it was taken in: after a raw
        // caller's extra shutdowns it is gone already, and a later init's references are not
        // this value's to give back.
        if self.is_current() {
            let _ = self.rt.shutdown();
        }
    }
}

/// A device of a context's runtime. It holds a [`Context`] (a clone is another reference).
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let dev = ctx.default_device()?;
/// let queue = dev.queue()?;
/// # drop(queue);
/// # Ok::<(), ordo::Error>(())
/// ```
#[derive(Clone)]
pub struct Device<'r> {
    pub(crate) ctx: Context<'r>,
    pub(crate) raw: RawDevice,
    kind: BackendKind,
    ordinal: u32,
}

impl core::fmt::Debug for Device<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Device({} {})", self.kind.name(), self.ordinal)
    }
}

impl PartialEq for Device<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw && self.ctx == other.ctx
    }
}

impl Eq for Device<'_> {}

impl<'r> Device<'r> {
    /// The platform kind (host, CUDA, AMDGPU).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let kinds: Vec<_> = ctx.devices()?.iter().map(|d| d.kind()).collect();
    /// assert_eq!(kinds[0], ordo::BackendKind::Host);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// The device's ordinal within its platform.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// assert_eq!(ctx.device(0)?.ordinal(), 0);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// A property of the device.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.device(0)?;
    /// assert!(dev.info(ordo::DeviceInfo::MaxThreadsPerBlock)?.as_int().unwrap() >= 1);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn info(&self, key: DeviceInfo) -> Result<InfoValue> {
        Ok(self.ctx.rt.device_info(self.raw, key)?)
    }

    /// What the cache of queue-ordered memory holds for the device and has served since the
    /// runtime's init (`ordo_core::CacheStats`).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.default_device()?;
    /// let queue = dev.queue()?;
    /// drop(ordo::DeviceBuffer::<u8>::zeroed_on(&queue, 256)?);
    /// let _again = ordo::DeviceBuffer::<u8>::zeroed_on(&queue, 256)?;
    /// assert!(dev.cache_stats()?.hits >= 1);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn cache_stats(&self) -> Result<crate::CacheStats> {
        Ok(self.ctx.rt.cache_stats(self.raw)?)
    }

    /// The device's name.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// assert!(!ctx.device(0)?.name()?.is_empty());
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn name(&self) -> Result<heapless::String<64>> {
        match self.info(DeviceInfo::Name)? {
            InfoValue::Text(t) => Ok(t),
            other => Ok(alloc_free_display(&other)),
        }
    }

    /// The raw handle (for the raw API and the C ABI).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let raw = ctx.device(0)?.raw();
    /// assert_eq!(ctx.runtime().device_info(raw, ordo::DeviceInfo::Name).is_ok(), true);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn raw(&self) -> RawDevice {
        self.raw
    }

    /// The context the device holds (a reference to its runtime).
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// assert_eq!(ctx.default_device()?.context(), &ctx);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn context(&self) -> &Context<'r> {
        &self.ctx
    }

    /// The runtime (for the raw API).
    #[inline]
    pub(crate) fn rt(&self) -> &'r Runtime {
        self.ctx.rt
    }
}

/// A number or version as text without allocating (device names are text on every backend;
/// this is only the fallback for a backend that answers otherwise).
fn alloc_free_display(v: &InfoValue) -> heapless::String<64> {
    use core::fmt::Write;
    let mut s = heapless::String::new();
    let _ = write!(s, "{v}");
    s
}
