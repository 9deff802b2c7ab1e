//! The model's rules for every operation on platforms, devices and objects (everything but
//! init, shutdown and fault arming, which `model/mod.rs` keeps with the lifecycle). Part of the
//! model: it uses its lookups and records.

use ordo_core::capacity::{MAX_ALLOCATIONS, MAX_EVENTS, MAX_GRAPHS, MAX_KERNELS, MAX_PROGRAMS, MAX_QUEUES};
use ordo_core::{BackendOp, ErrorCode, ObjectKind};

use super::{Check, Launches, Model, ObjId, ObjInfo, Op, Outcome, Ref};

impl<const N: usize> Model<N> {
    /// A launch's first look at its kernel: the runtime asks the backend for the parameter
    /// layout (whose error is the launch's) and keeps it once known.
    fn learn_layout(&mut self, kernel: ObjId) -> Check<()> {
        if !self.info(kernel).layout_known {
            self.call_on(kernel, BackendOp::KernelParamLayout)?;
            self.objects[kernel.0 as usize].layout_known = true;
        }
        Ok(())
    }

    pub(super) fn object_op(&mut self, op: Op) -> Check<Outcome> {
        use ObjectKind as K;
        let obj = ObjInfo::of;
        Ok(match op {
            Op::CommCreate(_)
            | Op::CommDestroy(_)
            | Op::CommAbort(_)
            | Op::AllReduce { .. }
            | Op::QueueSynchronize(_) => self.comm_op(op)?,
            Op::PlatformCount => Outcome::Count(self.platforms.len() as u32),
            Op::PlatformAt(index) => match self.platforms.get(index as usize) {
                Some(&p) => Outcome::Existing(p),
                None => return Err(ErrorCode::InvalidValue),
            },
            Op::PlatformInfo(p) => {
                let p = self.resolve(p, K::Platform)?;
                let index = self.info(p).size;
                let devices = if self.up[index] { self.platform_configs()[index].devices } else { 0 };
                Outcome::PlatformInfo { devices, available: self.up[index] }
            }
            Op::DeviceAt { platform, index } => {
                let p = self.resolve(platform, K::Platform)?;
                let device = |o: &ObjInfo| o.kind == K::Device && o.parent == Some(p) && o.size == index as usize;
                match self.objects.iter().position(device) {
                    Some(i) => Outcome::Existing(ObjId(i as u32)),
                    None => return Err(ErrorCode::InvalidValue),
                }
            }
            Op::DevicePlatform(d) => {
                let d = self.resolve(d, K::Device)?;
                Outcome::Existing(self.info(d).parent.expect("a device has a platform"))
            }
            Op::DeviceInfo(d) => {
                let d = self.resolve(d, K::Device)?;
                self.call_on(d, BackendOp::DeviceInfo)?;
                Outcome::Ok
            }
            Op::MemAlloc { device, size } => {
                if size == 0 || size > isize::MAX as usize {
                    return Err(ErrorCode::InvalidSize);
                }
                let d = self.resolve(device, K::Device)?;
                self.full(K::Allocation, MAX_ALLOCATIONS)?;
                self.call_on(d, BackendOp::MemAlloc)?;
                if size > self.config.alloc_limit {
                    return Err(ErrorCode::OutOfResources);
                }
                self.create(ObjInfo { size, ..obj(K::Allocation, d) })
            }
            Op::MemFree(a) => {
                let a = self.resolve_address(a)?;
                if self.info(a).global.is_some() {
                    // A program's global variable leaves with its program.
                    return Err(ErrorCode::InvalidArgument);
                }
                if self.info(a).registered {
                    // Registered host memory is no allocation: `host_unregister` ends it.
                    return Err(ErrorCode::NotFound);
                }
                self.no_capture_on(self.info(a).device)?;
                self.kill(a);
                self.call_on(a, BackendOp::MemFree)?;
                Outcome::Ok
            }
            Op::MemAllocOn { queue, size } => {
                if size == 0 || size > isize::MAX as usize {
                    return Err(ErrorCode::InvalidSize);
                }
                let q = self.resolve(queue, K::Queue)?;
                self.not_capturing(q)?;
                self.full(K::Allocation, MAX_ALLOCATIONS)?;
                if let Some(i) = self.cached.iter().rposition(|&(c, s, _)| (c, s) == (q, size)) {
                    // The queue's newest cached block of this size: no backend call, and the freed
                    // allocation's address names the new one.
                    let (.., freed) = self.cached.remove(i);
                    let _ = self.reused.push(freed);
                } else {
                    let refused = match self.call_on(q, BackendOp::MemAllocOn) {
                        Err(code) => Some(code),
                        Ok(()) => (size > self.config.alloc_limit).then_some(ErrorCode::OutOfResources),
                    };
                    match refused {
                        None => {}
                        Some(ErrorCode::OutOfResources) => self.alloc_on_after_trim(q, size)?,
                        Some(code) => return Err(code),
                    }
                }
                self.create(ObjInfo { size, ordered: true, ..obj(K::Allocation, self.info(q).device) })
            }
            Op::MemFreeOn { queue, alloc } => {
                let a = self.resolve_address(alloc)?;
                let q = self.resolve(queue, K::Queue)?;
                if !self.info(a).ordered || self.info(a).device != self.info(q).device {
                    // Not queue-ordered memory (`mem_free` frees it), or a queue of another device.
                    return Err(ErrorCode::InvalidArgument);
                }
                self.not_capturing(q)?;
                self.kill(a);
                if !self.cache_put(q, self.info(a).size, a) {
                    self.call_on(a, BackendOp::MemFreeOn)?;
                }
                Outcome::Ok
            }
            Op::QueueBeginCapture(q) => {
                let q = self.resolve(q, K::Queue)?;
                self.not_capturing(q)?;
                if !self.config.graphs {
                    return Err(ErrorCode::Unsupported);
                }
                self.call_on(q, BackendOp::QueueBeginCapture)?;
                self.objects[q.0 as usize].capturing = true;
                self.objects[q.0 as usize].launches = Launches::default();
                Outcome::Ok
            }
            Op::QueueEndCapture(q) => {
                let q = self.resolve(q, K::Queue)?;
                if !self.info(q).capturing {
                    return Err(ErrorCode::InvalidArgument);
                }
                self.objects[q.0 as usize].capturing = false;
                // Events its capture recorded keep a record that never runs until recorded again.
                for o in self.objects.iter_mut().filter(|o| o.captured_by == Some(q)) {
                    o.captured_by = Some(super::CAPTURE_ENDED);
                }
                let ended = self.call_on(q, BackendOp::QueueEndCapture);
                // Unloads that waited for the device's captures run once none is left.
                let device = self.info(q).device;
                let deferred = self.deferred.iter().any(|&(_, d)| d == device);
                let unloaded = if deferred && self.no_capture_on(device).is_ok() {
                    self.run_deferred_unloads(device)
                } else {
                    Ok(())
                };
                ended?;
                if let Err(e) = unloaded {
                    let _ = self.call_on(q, BackendOp::GraphDestroy);
                    return Err(e);
                }
                if self.live(K::Graph) >= MAX_GRAPHS {
                    // The captured graph is destroyed (that call's own error is not the answer).
                    let _ = self.call_on(q, BackendOp::GraphDestroy);
                    return Err(ErrorCode::OutOfResources);
                }
                // The graph's launches are listed; a failed list leaves none to update, and any
                // program unloaded on the device orphans the graph.
                let mut launches = match self.call_on(q, BackendOp::GraphKernels) {
                    Ok(()) => self.info(q).launches,
                    Err(_) => Launches { any_program: true, ..Launches::default() },
                };
                // A program unloaded during the capture: its kernels are unknown to the runtime.
                for slot in launches.programs.iter_mut() {
                    if slot.is_some_and(|p| !self.objects[p.0 as usize].live) {
                        *slot = None;
                        launches.any_program = true;
                    }
                }
                launches.orphaned = deferred && launches.any_program;
                // The graph holds a reference to each program of its launches.
                for p in launches.programs.into_iter().flatten() {
                    self.objects[p.0 as usize].retained += 1;
                }
                self.create(ObjInfo { launches, ..obj(K::Graph, self.info(q).device) })
            }
            Op::GraphLaunch { graph, queue } => {
                let g = self.resolve(graph, K::Graph)?;
                let q = self.resolve(queue, K::Queue)?;
                if self.info(g).device != self.info(q).device || self.info(g).launches.orphaned {
                    return Err(ErrorCode::InvalidArgument);
                }
                // Not into a capture (refused before the backend sees it, the capture unchanged).
                self.not_capturing(q)?;
                self.call_on(q, BackendOp::GraphLaunch)?;
                Outcome::Ok
            }
            Op::GraphSetArgs { graph, index, kernel } => {
                let g = self.resolve(graph, K::Graph)?;
                let k = self.resolve(kernel, K::Kernel)?;
                let launches = self.info(g).launches;
                if self.info(k).device != self.info(g).device || launches.orphaned || u32::from(index) >= launches.count
                {
                    return Err(ErrorCode::InvalidArgument);
                }
                self.learn_layout(k)?;
                self.call_on(g, BackendOp::GraphSetArgs)?;
                if launches.kernels[usize::from(index)] != Some(k) {
                    // The backend's answer: that launch runs another kernel.
                    return Err(ErrorCode::InvalidArgument);
                }
                Outcome::Ok
            }
            Op::GraphDestroy(g) => {
                let g = self.resolve(g, K::Graph)?;
                self.kill(g);
                let destroyed = self.call_on(g, BackendOp::GraphDestroy);
                // Then the program references it held: a program whose last one this was is
                // unloaded (left loaded while a queue of its device captures); the first failed
                // unload is the answer when the destroy itself succeeded.
                let mut released = Ok(());
                for p in self.info(g).launches.programs.into_iter().flatten() {
                    if !self.info(p).live {
                        continue;
                    }
                    if self.info(p).retained > 0 {
                        self.objects[p.0 as usize].retained -= 1;
                        continue;
                    }
                    let unloaded = self.unload_program(p);
                    released = released.and(unloaded);
                }
                destroyed?;
                released?;
                Outcome::Ok
            }
            Op::HostUnregister(a) => {
                let a = self.resolve_address(a)?;
                if !self.info(a).registered {
                    return Err(ErrorCode::InvalidArgument);
                }
                self.kill(a);
                self.call_on(a, BackendOp::MemFree)?;
                Outcome::Ok
            }
            Op::CopyToDevice { alloc, offset, len }
            | Op::CopyFromDevice { alloc, offset, len }
            | Op::Fill { alloc, offset, count: len } => {
                if len == 0 {
                    // A zero-byte copy or fill succeeds and does nothing, whatever its address.
                    return Ok(Outcome::Ok);
                }
                if alloc == Ref::Null {
                    return Err(ErrorCode::NullPointer);
                }
                let a = self.range(alloc, offset, len)?;
                self.no_capture_on(self.info(a).device)?;
                let call = if matches!(op, Op::Fill { .. }) { BackendOp::Fill } else { BackendOp::Memcpy };
                self.call_on(a, call)?;
                Outcome::Ok
            }
            Op::CopyDevice { dst, src, len } => {
                if len == 0 {
                    return Ok(Outcome::Ok);
                }
                if dst == Ref::Null || src == Ref::Null {
                    return Err(ErrorCode::NullPointer);
                }
                let s = self.range(src, 0, len)?;
                let d = self.range(dst, 0, len)?;
                self.no_capture_on(self.info(s).device)?;
                self.no_capture_on(self.info(d).device)?;
                // Two platforms: the model's (scripted) platforms are GPU platforms (no host
                // memory), so the copy is staged through page-locked memory of the source's
                // platform (one chunk at the model's sizes): allocated, copied to, copied on
                // from, freed; freed after a failed copy too, and the first error is the call's.
                if self.platform_of(s) != self.platform_of(d) {
                    self.call_on(s, BackendOp::MemAlloc)?;
                    let copied = self.call_on(s, BackendOp::Memcpy).and_then(|()| self.call_on(d, BackendOp::Memcpy));
                    let freed = self.call_on(s, BackendOp::MemFree);
                    copied?;
                    freed?;
                    return Ok(Outcome::Ok);
                }
                // One device, or two of a platform (the backend's peer copy): one copy call.
                self.call_on(d, BackendOp::Memcpy)?;
                Outcome::Ok
            }
            Op::MemInfo(a) => {
                self.resolve_address(a)?;
                Outcome::Ok
            }
            Op::QueueQuery(q) => {
                let q = self.resolve(q, K::Queue)?;
                self.not_capturing(q)?;
                self.call_on(q, BackendOp::QueueQuery)?;
                Outcome::Ok
            }
            Op::QueueWaitEvent { queue, event } => {
                let q = self.resolve(queue, K::Queue)?;
                let e = self.resolve(event, K::Event)?;
                if self.info(e).captured_by.is_some_and(|c| c != q) {
                    // The wait would join another queue's capture, or merge two.
                    return Err(ErrorCode::InvalidArgument);
                }
                if self.platform_of(q) != self.platform_of(e) {
                    // Another platform's event: waited for on the host.
                    self.call_on(e, BackendOp::EventSynchronize)?;
                    return Ok(Outcome::Ok);
                }
                self.call_on(q, BackendOp::QueueWaitEvent)?;
                Outcome::Ok
            }
            Op::EventSynchronize(e) | Op::EventQuery(e) => {
                let e = self.resolve(e, K::Event)?;
                self.not_captured(e)?;
                let call =
                    if matches!(op, Op::EventQuery(_)) { BackendOp::EventQuery } else { BackendOp::EventSynchronize };
                self.call_on(e, call)?;
                Outcome::Ok
            }
            Op::EventElapsed { start, end } => {
                let s = self.resolve(start, K::Event)?;
                let e = self.resolve(end, K::Event)?;
                self.not_captured(s)?;
                self.not_captured(e)?;
                if self.info(s).device != self.info(e).device {
                    return Err(ErrorCode::InvalidArgument);
                }
                self.call_on(s, BackendOp::EventElapsed)?;
                if !self.config.event_timing {
                    return Err(ErrorCode::Unsupported);
                }
                Outcome::Ok
            }
            Op::KernelProgram(k) => {
                self.resolve(k, K::Kernel)?;
                Outcome::Ok
            }
            Op::QueueCreate(d) | Op::EventCreate(d) => {
                let (kind, cap, call) = match op {
                    Op::QueueCreate(_) => (K::Queue, MAX_QUEUES, BackendOp::QueueCreate),
                    _ => (K::Event, MAX_EVENTS, BackendOp::EventCreate),
                };
                let d = self.resolve(d, K::Device)?;
                self.full(kind, cap)?;
                self.call_on(d, call)?;
                self.create(obj(kind, d))
            }
            Op::QueueDestroy(x) | Op::EventDestroy(x) | Op::ProgramUnload(x) => {
                let (kind, call) = match op {
                    Op::QueueDestroy(_) => (K::Queue, BackendOp::QueueDestroy),
                    Op::EventDestroy(_) => (K::Event, BackendOp::EventDestroy),
                    _ => (K::Program, BackendOp::ProgramUnload),
                };
                let x = self.resolve(x, kind)?;
                if kind == K::Queue {
                    self.not_capturing(x)?;
                    // Its cached blocks go back to the backend first (each a queue-ordered free,
                    // whose error is only logged).
                    self.give_back(|q| q == x);
                }
                if kind == K::Program {
                    if self.info(x).retained > 0 {
                        // A reference a graph holds is given back instead: still loaded.
                        self.objects[x.0 as usize].retained -= 1;
                        return Ok(Outcome::Ok);
                    }
                    self.unload_program(x)?;
                    return Ok(Outcome::Ok);
                }
                self.kill(x);
                self.call_on(x, call)?;
                Outcome::Ok
            }
            Op::QueueReissue(x) | Op::EventReissue(x) => {
                let kind = if matches!(op, Op::QueueReissue(_)) { K::Queue } else { K::Event };
                let x = self.resolve(x, kind)?;
                // The object under its new handle; a reissued default queue is no longer its
                // device's default (`Runtime::queue_reissue`: the next `default_queue` makes one).
                let info = ObjInfo { size: 0, ..self.info(x) };
                self.kill(x);
                let made = self.create(info);
                if let Outcome::Created(new) = made {
                    // Events its capture recorded name it by its new handle (the runtime keeps
                    // the slot).
                    for o in self.objects.iter_mut().filter(|o| o.captured_by == Some(x)) {
                        o.captured_by = Some(new);
                    }
                }
                made
            }
            Op::EventRecord { event, queue } => {
                let e = self.resolve(event, K::Event)?;
                let q = self.resolve(queue, K::Queue)?;
                if self.info(e).device != self.info(q).device {
                    return Err(ErrorCode::InvalidArgument);
                }
                self.call_on(e, BackendOp::EventRecord)?;
                self.objects[e.0 as usize].captured_by = self.info(q).capturing.then_some(q);
                Outcome::Ok
            }
            Op::ProgramLoad { device, valid } => {
                let d = self.resolve(device, K::Device)?;
                self.full(K::Program, MAX_PROGRAMS)?;
                self.call_on(d, BackendOp::ProgramLoad)?;
                if !valid {
                    return Err(ErrorCode::InvalidBinary);
                }
                self.create(obj(K::Program, d))
            }
            Op::KernelGet { program, name } => {
                let p = self.resolve(program, K::Program)?;
                self.call_on(p, BackendOp::KernelGet)?;
                if name >= 2 {
                    return Err(ErrorCode::NotFound);
                }
                let same =
                    |o: &ObjInfo| o.live && o.kind == K::Kernel && o.parent == Some(p) && o.size == usize::from(name);
                if let Some(i) = self.objects.iter().position(same) {
                    return Ok(Outcome::Existing(ObjId(i as u32)));
                }
                self.full(K::Kernel, MAX_KERNELS)?;
                let device = self.info(p).device;
                self.create(ObjInfo { parent: Some(p), size: usize::from(name), ..obj(K::Kernel, device) })
            }
            Op::Launch { queue, kernel } => {
                let q = self.resolve(queue, K::Queue)?;
                let k = self.resolve(kernel, K::Kernel)?;
                if self.info(q).device != self.info(k).device {
                    return Err(ErrorCode::InvalidArgument);
                }
                self.learn_layout(k)?;
                self.call_on(q, BackendOp::Launch)?;
                self.captured_launch(q, k);
                Outcome::Ok
            }
            Op::QueueCreateIndependent(d) => {
                let d = self.resolve(d, K::Device)?;
                self.full(K::Queue, MAX_QUEUES)?;
                self.call_on(d, BackendOp::QueueCreateIndependent)?;
                self.create(obj(K::Queue, d))
            }
            Op::DefaultQueue(d) => {
                let d = self.resolve(d, K::Device)?;
                let default = |o: &ObjInfo| o.live && o.kind == K::Queue && o.device == d && o.size == 1;
                if let Some(i) = self.objects.iter().position(default) {
                    return Ok(Outcome::Existing(ObjId(i as u32)));
                }
                self.full(K::Queue, MAX_QUEUES)?;
                self.call_on(d, BackendOp::QueueCreateIndependent)?;
                self.create(ObjInfo { size: 1, ..obj(K::Queue, d) })
            }
            Op::HostRegister { device, size } => {
                if size == 0 || size > isize::MAX as usize {
                    return Err(ErrorCode::InvalidSize);
                }
                let d = self.resolve(device, K::Device)?;
                self.full(K::Allocation, MAX_ALLOCATIONS)?;
                self.call_on(d, BackendOp::HostRegister)?;
                self.create(ObjInfo { size, registered: true, ..obj(K::Allocation, d) })
            }
            Op::FillPattern { alloc, offset, len, pattern_len } => {
                if pattern_len == 0 || len % pattern_len != 0 {
                    return Err(ErrorCode::InvalidSize);
                }
                if len == 0 {
                    return Ok(Outcome::Ok);
                }
                if alloc == Ref::Null {
                    return Err(ErrorCode::NullPointer);
                }
                let a = self.range(alloc, offset, len)?;
                self.no_capture_on(self.info(a).device)?;
                self.call_on(a, BackendOp::FillPattern)?;
                Outcome::Ok
            }
            Op::LaunchCluster { queue, kernel, cluster } => {
                let q = self.resolve(queue, K::Queue)?;
                let k = self.resolve(kernel, K::Kernel)?;
                if self.info(q).device != self.info(k).device {
                    return Err(ErrorCode::InvalidArgument);
                }
                if cluster == 0 || 2 % cluster != 0 {
                    return Err(ErrorCode::InvalidValue);
                }
                self.learn_layout(k)?;
                self.call_on(q, BackendOp::LaunchCluster)?;
                self.captured_launch(q, k);
                Outcome::Ok
            }
            Op::KernelParamCount(k) | Op::KernelParamLayout(k) | Op::KernelOptimalBlockSize(k) => {
                let k = self.resolve(k, K::Kernel)?;
                let call = match op {
                    Op::KernelParamCount(_) => BackendOp::KernelParamCount,
                    Op::KernelParamLayout(_) => BackendOp::KernelParamLayout,
                    _ => BackendOp::KernelOptimalBlockSize,
                };
                self.call_on(k, call)?;
                Outcome::Ok
            }
            Op::ProgramGlobal { program, name } => {
                let p = self.resolve(program, K::Program)?;
                self.call_on(p, BackendOp::ProgramGlobal)?;
                if name >= 2 {
                    return Err(ErrorCode::NotFound);
                }
                let same = |o: &ObjInfo| o.live && o.parent == Some(p) && o.global == Some(name);
                if let Some(i) = self.objects.iter().position(same) {
                    return Ok(Outcome::Existing(ObjId(i as u32)));
                }
                self.full(K::Allocation, MAX_ALLOCATIONS)?;
                let device = self.info(p).device;
                self.create(ObjInfo { parent: Some(p), size: 64, global: Some(name), ..obj(K::Allocation, device) })
            }
            Op::ProgramCheck { device, valid } => {
                let d = self.resolve(device, K::Device)?;
                self.call_on(d, BackendOp::ProgramCheck)?;
                Outcome::Count(u32::from(valid))
            }
            Op::QueueHostFunction(q) => {
                let q = self.resolve(q, K::Queue)?;
                self.call_on(q, BackendOp::QueueHostFunction)?;
                Outcome::Ok
            }
            Op::TensorMapEncode(d) => {
                let d = self.resolve(d, K::Device)?;
                self.call_on(d, BackendOp::TensorMapEncodeTiled)?;
                Outcome::Ok
            }
            Op::Init | Op::Shutdown | Op::ArmFault { .. } => Outcome::Ok,
        })
    }
}

/// Program unloads: now, or once the device's captures end.
impl<const N: usize> Model<N> {
    /// Programs that left the tables but whose backend unload waits for a capture to end: the
    /// backend still holds them.
    pub fn deferred_unloads(&self) -> usize {
        self.deferred.len()
    }

    /// Unloads program `p` whose references are all given back: its graphs orphaned, it and its
    /// kernels dead; the backend's unload now, or (a queue of its device capturing) when the
    /// device's last capture ends. `InvalidArgument` when too many unloads wait already.
    pub(super) fn unload_program(&mut self, p: ObjId) -> Check<()> {
        let device = self.info(p).device;
        let capturing = self.no_capture_on(device).is_err();
        if capturing && self.deferred.is_full() {
            return Err(ErrorCode::InvalidArgument);
        }
        self.orphan_graphs_of(p);
        self.kill(p);
        if capturing {
            let _ = self.deferred.push((p, device));
            return Ok(());
        }
        self.call_on(p, BackendOp::ProgramUnload)
    }

    /// The backend's unloads that waited for `device`'s captures (none is left); the first
    /// failure is the answer, every one is made.
    pub(super) fn run_deferred_unloads(&mut self, device: ObjId) -> Check<()> {
        let mut result = Ok(());
        let mut i = 0;
        while i < self.deferred.len() {
            if self.deferred[i].1 != device {
                i += 1;
                continue;
            }
            let (p, _) = self.deferred.remove(i);
            let unloaded = self.call_on(p, BackendOp::ProgramUnload);
            result = result.and(unloaded);
        }
        result
    }

    /// Program `p` is about to be unloaded: the graphs of its device that use it are orphaned.
    pub(super) fn orphan_graphs_of(&mut self, p: ObjId) {
        let device = self.info(p).device;
        for o in self.objects.iter_mut() {
            if o.live && o.kind == ObjectKind::Graph && o.device == device && o.launches.uses(p) {
                o.launches.orphaned = true;
            }
        }
    }
}
