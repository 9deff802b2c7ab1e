//! The host device's queues, one design in two executions. A queue wrapper over a `HostBackend`
//! keeps each queue's work — launches, copies, fills, host functions, event records and waits —
//! and runs it in submission order, so that work on a queue is asynchronous to its caller as on
//! a GPU and a program that forgets a synchronise sees the same stale data:
//! - with `std`, on a worker thread per queue ([`QueuedHost`], `threaded.rs`): a call that
//!   enqueues returns at once, and a host function that blocks holds up only its own queue;
//! - without `std`, at the documented execution points on the calling thread ([`DeferredHost`],
//!   `deferred.rs`): synchronises, queries, queue-less copies and fills, frees and unloads.
//!
//! What both keep and how: a launch's argument values are copied at submission into a
//! [`CopiedLaunch`] (each at its parameter's offset, with the typed launch's extents), so the
//! caller's storage may go once the call returns; a launch whose arguments exceed
//! `DEFERRED_ARG_BYTES` or `DEFERRED_PARAMS` runs at submission, after its queue's work. The
//! host sides of copies must stay valid until the copy has run (the `Backend` contract). An
//! error of enqueued work is the queue's next `queue_synchronize`'s. Every other backend method
//! is the wrapped backend's ([`forward_to_host_backend!`]).

use core::ffi::c_void;

use crate::backend::{KernelArgs, LaunchDims, ParamLayout};
use crate::error::BackendError;

use super::HostBackend;

mod deferred;
mod graph;
#[cfg(feature = "std")]
mod threaded;
#[cfg(feature = "std")]
mod worker;

pub use deferred::{DEFERRED_ERRORS, DEFERRED_PATTERN, DEFERRED_WORK, DeferredHost};
pub use graph::HOST_CAPTURES;
#[cfg(feature = "std")]
pub use threaded::QueuedHost;

/// Bytes of kernel arguments a waiting launch keeps (each argument at its C-struct offset).
pub const DEFERRED_ARG_BYTES: usize = 128;
/// Parameters a waiting launch keeps.
pub const DEFERRED_PARAMS: usize = 16;

/// The error of a host function or kernel that would wait for host queues (which may be waiting
/// for it): the threaded queues' (the deferred ones run such work on the waiting thread).
#[cfg(feature = "std")]
pub(crate) fn busy() -> BackendError {
    BackendError::new(crate::error::ErrorCode::Busy, 0, "a host function or kernel may not wait for host queues")
}

/// Argument bytes, aligned for any parameter type.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct ArgBytes([u8; DEFERRED_ARG_BYTES]);

/// A launch as a host queue keeps it until it runs: the kernel, its dimensions, and a copy of
/// the argument values laid out as the kernel's parameters, with the launch's extents.
#[derive(Clone, Copy)]
pub(crate) struct CopiedLaunch {
    kernel: u64,
    dims: LaunchDims,
    /// Offset and size of each parameter in `bytes`.
    slots: [(u16, u16); DEFERRED_PARAMS],
    count: u8,
    bytes: ArgBytes,
    /// The launch's argument extents (`KernelArgs::extents`), when it gave them.
    extents: Option<[usize; DEFERRED_PARAMS]>,
}

// SAFETY: the copy holds values only (argument bytes, which a launch passes to the kernel on
// whichever thread runs it, as a GPU's launch does).
unsafe impl Send for CopiedLaunch {}

impl CopiedLaunch {
    /// Checks a launch as the wrapped backend and the kernel would when it ran (local memory,
    /// argument count and sizes: such errors are the launch's, not the next synchronise's), then
    /// copies `args`, laid out as the kernel's parameters; `Ok(None)` when they exceed
    /// `DEFERRED_ARG_BYTES` or `DEFERRED_PARAMS` (the launch then runs at submission).
    ///
    /// # Safety
    /// As `Backend::launch`: a live kernel and queue of `inner`'s `device`, each argument
    /// pointing to a value of its parameter's size.
    pub(crate) unsafe fn check_and_copy(
        inner: &HostBackend,
        device: u32,
        kernel: u64,
        dims: &LaunchDims,
        args: &KernelArgs<'_>,
    ) -> Result<Option<Self>, BackendError> {
        // SAFETY: forwarded contract.
        let layout = unsafe { inner.check_launch(device, kernel, dims, args) }?;
        // SAFETY: forwarded contract.
        Ok(unsafe { Self::new(kernel, dims, &layout, args) })
    }

    /// Copies `args`, laid out as `layout` (the kernel's checked parameters); `None` when they
    /// exceed `DEFERRED_ARG_BYTES` or `DEFERRED_PARAMS`.
    ///
    /// # Safety
    /// As `Backend::launch`: each argument points to a value of its parameter's size.
    unsafe fn new(kernel: u64, dims: &LaunchDims, layout: &ParamLayout, args: &KernelArgs<'_>) -> Option<Self> {
        let fits = layout.len() <= DEFERRED_PARAMS
            && layout.iter().all(|s| (s.offset as usize).saturating_add(s.size as usize) <= DEFERRED_ARG_BYTES);
        if !fits {
            return None;
        }
        let mut bytes = ArgBytes([0; DEFERRED_ARG_BYTES]);
        let mut slots = [(0u16, 0u16); DEFERRED_PARAMS];
        for (i, (s, &p)) in layout.iter().zip(args.params()).enumerate() {
            let (offset, size) = (s.offset as usize, s.size as usize);
            // SAFETY: the caller's contract: each argument points to a value of its parameter's
            // type (`size` readable bytes); the destination lies within `bytes` (checked above).
            unsafe { core::ptr::copy_nonoverlapping(p.cast::<u8>(), bytes.0.as_mut_ptr().add(offset), size) };
            slots[i] = (offset as u16, size as u16);
        }
        let extents = args.extents().map(|given| {
            let mut kept = [0usize; DEFERRED_PARAMS];
            kept[..given.len()].copy_from_slice(given);
            kept
        });
        Some(Self { kernel, dims: *dims, slots, count: layout.len() as u8, bytes, extents })
    }

    /// The launch's kernel.
    pub(crate) fn kernel(&self) -> u64 {
        self.kernel
    }

    /// The launch's dimensions.
    pub(crate) fn dims(&self) -> LaunchDims {
        self.dims
    }

    /// Runs the launch on `inner` with the copied arguments.
    ///
    /// # Safety
    /// As `Backend::launch` at submission: `device`, `queue` and the kernel are the wrapped
    /// backend's, and the memory the arguments name is still valid.
    pub(crate) unsafe fn run(mut self, inner: &HostBackend, device: u32, queue: u64) -> Result<(), BackendError> {
        use crate::backend::Backend;
        let n = usize::from(self.count);
        let base = self.bytes.0.as_mut_ptr();
        let mut params = [core::ptr::null_mut::<c_void>(); DEFERRED_PARAMS];
        let mut sizes = [0usize; DEFERRED_PARAMS];
        for (i, &(offset, size)) in self.slots[..n].iter().enumerate() {
            // SAFETY: each slot lies within `bytes` (checked when copied).
            params[i] = unsafe { base.add(usize::from(offset)) }.cast();
            sizes[i] = usize::from(size);
        }
        // SAFETY: as many sizes as pointers, none null.
        let args = unsafe { KernelArgs::new_unchecked(&params[..n], &sizes[..n]) };
        let args = match &self.extents {
            // SAFETY: the submission's extents, one per argument.
            Some(e) => unsafe { args.with_extents(&e[..n]) }.map_err(BackendError::from_error)?,
            None => args,
        };
        // SAFETY: the caller's contract; the arguments are the copies made at submission.
        unsafe { inner.launch(device, queue, self.kernel, &self.dims, &args) }
    }
}

/// Writes, in an `impl Backend` of a queue wrapper with an `inner: &HostBackend` field, the
/// methods that are the wrapped backend's own (devices, memory allocation and registration,
/// programs and kernels, tensor maps), and `device_info` answering `name` for the device's name
/// (where its queue work runs).
macro_rules! forward_to_host_backend {
    (name: $name:expr) => {
        fn kind(&self) -> $crate::backend::BackendKind {
            self.inner.kind()
        }

        fn name(&self) -> &'static str {
            self.inner.name()
        }

        fn init(&self) -> $crate::backend::BackendResult<u32> {
            self.inner.init()
        }

        unsafe fn device_release(&self, device: u32) -> $crate::backend::BackendResult<()> {
            // SAFETY: forwarded contract.
            unsafe { self.inner.device_release(device) }
        }

        fn device_info(
            &self,
            device: u32,
            key: $crate::backend::DeviceInfo,
        ) -> $crate::backend::BackendResult<$crate::backend::InfoValue> {
            let info = self.inner.device_info(device, key)?;
            Ok(if key == $crate::backend::DeviceInfo::Name { $crate::backend::InfoValue::text($name) } else { info })
        }

        fn launch_limits(&self, device: u32) -> $crate::backend::LaunchLimits {
            self.inner.launch_limits(device)
        }

        fn mem_alloc(
            &self,
            device: u32,
            kind: $crate::backend::MemKind,
            size: usize,
        ) -> $crate::backend::BackendResult<u64> {
            self.inner.mem_alloc(device, kind, size)
        }

        unsafe fn host_register(&self, device: u32, addr: u64, size: usize) -> $crate::backend::BackendResult<()> {
            // SAFETY: forwarded contract.
            unsafe { self.inner.host_register(device, addr, size) }
        }

        fn program_load(&self, device: u32, image: &[u8]) -> $crate::backend::BackendResult<u64> {
            self.inner.program_load(device, image)
        }

        unsafe fn kernel_get(&self, device: u32, program: u64, name: &str) -> $crate::backend::BackendResult<u64> {
            // SAFETY: forwarded contract.
            unsafe { self.inner.kernel_get(device, program, name) }
        }

        unsafe fn kernel_param_count(&self, device: u32, kernel: u64) -> $crate::backend::BackendResult<usize> {
            // SAFETY: forwarded contract.
            unsafe { self.inner.kernel_param_count(device, kernel) }
        }

        unsafe fn host_kernel_fn(&self, device: u32, kernel: u64) -> Option<usize> {
            // SAFETY: forwarded contract.
            unsafe { self.inner.host_kernel_fn(device, kernel) }
        }

        unsafe fn kernel_param_layout(
            &self,
            device: u32,
            kernel: u64,
            out: &mut $crate::backend::ParamLayout,
        ) -> $crate::backend::BackendResult<()> {
            // SAFETY: forwarded contract.
            unsafe { self.inner.kernel_param_layout(device, kernel, out) }
        }

        unsafe fn kernel_optimal_block_size(
            &self,
            device: u32,
            kernel: u64,
            dynamic_shared: usize,
        ) -> $crate::backend::BackendResult<u32> {
            // SAFETY: forwarded contract.
            unsafe { self.inner.kernel_optimal_block_size(device, kernel, dynamic_shared) }
        }

        unsafe fn program_global(
            &self,
            device: u32,
            program: u64,
            name: &str,
        ) -> $crate::backend::BackendResult<(u64, usize)> {
            // SAFETY: forwarded contract.
            unsafe { self.inner.program_global(device, program, name) }
        }

        fn program_check(&self, device: u32, image: &[u8]) -> $crate::backend::BackendResult<bool> {
            self.inner.program_check(device, image)
        }

        fn tensor_map_encode_tiled(
            &self,
            device: u32,
            tensor: &$crate::backend::TensorMapTiled<'_>,
        ) -> $crate::backend::BackendResult<$crate::backend::TensorMap> {
            self.inner.tensor_map_encode_tiled(device, tensor)
        }
    };
}
use forward_to_host_backend;
