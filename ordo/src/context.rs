//! [`Context`] (a held reference to an initialised runtime) and [`Device`]. Every object of the
//! typed API borrows the context it was made in, so none can outlive it. Depends on `error`.

use ordo_core::{BackendKind, Device as RawDevice, DeviceInfo, InfoValue, Runtime};

use crate::error::{Error, Result};

/// A reference to an initialised runtime: [`Context::new`] (the default runtime) or
/// [`Context::with_runtime`] takes one (the first initialises the runtime), and dropping the
/// context gives it back (the last one tears the runtime down). Buffers, queues, events and
/// modules borrow the context, so the compiler keeps each from outliving it.
///
/// ```
/// let ctx = ordo::Context::new()?;
/// for device in ctx.devices()? {
///     println!("{} device {}: {}", device.kind().name(), device.ordinal(), device.name()?);
/// }
/// # Ok::<(), ordo::Error>(())
/// ```
pub struct Context<'r> {
    rt: &'r Runtime,
}

impl core::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Context").field("runtime", &self.rt.identity()).finish()
    }
}

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
    /// static BACKENDS: [&dyn ordo::Backend; 1] = [&HOST];
    /// ordo::static_runtime!(static RUNTIME = &BACKENDS);
    ///
    /// let ctx = ordo::Context::with_runtime(&RUNTIME)?;
    /// let buf = ordo::DeviceBuffer::from_slice(&ctx.default_device()?, &[1u32, 2, 3])?;
    /// assert_eq!(buf.len(), 3);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn with_runtime(rt: &'r Runtime) -> Result<Self> {
        rt.init()?;
        Ok(Self { rt })
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
    pub fn devices(&self) -> Result<heapless::Vec<Device<'_>, { ordo_core::capacity::MAX_DEVICES }>> {
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
                let _ = out.push(Device { rt: self.rt, raw, kind: info.kind, ordinal: i });
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
    pub fn default_device(&self) -> Result<Device<'_>> {
        let devices = self.devices()?;
        let gpu = devices.iter().find(|d| d.kind != BackendKind::Host);
        gpu.or(devices.first()).copied().ok_or(Error::NoDevice)
    }
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        // Gives back this context's reference; an error means a caller of the raw API shut the
        // runtime down under the context already, which leaves nothing to give back.
        let _ = self.rt.shutdown();
    }
}

/// A device of a context's runtime. `Copy`: it names the device and borrows the context.
///
/// ```
/// let ctx = ordo::Context::new()?;
/// let dev = ctx.default_device()?;
/// let queue = dev.queue()?;
/// # drop(queue);
/// # Ok::<(), ordo::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct Device<'c> {
    pub(crate) rt: &'c Runtime,
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
        self.raw == other.raw && core::ptr::eq(self.rt, other.rt)
    }
}

impl Eq for Device<'_> {}

impl<'c> Device<'c> {
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
    /// assert_eq!(ctx.devices()?[0].ordinal(), 0);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// A property of the device.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// let dev = ctx.devices()?[0];
    /// assert!(dev.info(ordo::DeviceInfo::MaxThreadsPerBlock)?.as_int().unwrap() >= 1);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn info(&self, key: DeviceInfo) -> Result<InfoValue> {
        Ok(self.rt.device_info(self.raw, key)?)
    }

    /// The device's name.
    ///
    /// ```
    /// let ctx = ordo::Context::new()?;
    /// assert!(!ctx.devices()?[0].name()?.is_empty());
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
    /// let raw = ctx.devices()?[0].raw();
    /// assert_eq!(ctx.runtime().device_info(raw, ordo::DeviceInfo::Name).is_ok(), true);
    /// # Ok::<(), ordo::Error>(())
    /// ```
    pub fn raw(&self) -> RawDevice {
        self.raw
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
