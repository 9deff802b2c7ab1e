//! The typed API's memory on a CUDA device: allocations released once, page-locked and managed
//! buffers, large copies with the host device, queue-ordered buffers and their cache.

use ordo::{Context, DeviceBuffer, ErrorCode, Module};

use super::cuda;

#[test]
fn a_released_cuda_allocation_is_released_once() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let rt = ctx.runtime();
    let (allocation, ptr) = DeviceBuffer::<f32>::zeroed(&dev, 16).unwrap().into_raw();
    rt.mem_release(allocation).unwrap();
    assert_eq!(rt.mem_release(allocation).unwrap_err().code, ErrorCode::InvalidHandle);
    // A newer allocation, wherever the driver puts it, is not freed by the stale handle.
    let newer = DeviceBuffer::<f32>::zeroed(&dev, 16).unwrap();
    assert_eq!(rt.mem_release(allocation).unwrap_err().code, ErrorCode::InvalidHandle);
    assert_eq!(newer.to_vec().unwrap(), [0.0; 16]);
    println!("first allocation at {:#x}, newer at {:#x}", ptr.0, newer.device_ptr().0);
}

/// Page-locked host buffers on CUDA: registered, and asynchronous copies through them in a scope
/// carry 64 MiB there and back intact.
#[test]
fn host_buffers_are_page_locked_and_carry_asynchronous_copies() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let n = 16 << 20;
    let mut staging = ordo::HostBuffer::<u32>::zeroed(&dev, n).unwrap();
    assert!(staging.is_page_locked());
    for (i, v) in staging.iter_mut().enumerate() {
        *v = i as u32;
    }
    let mut buf = DeviceBuffer::<u32>::zeroed(&dev, n).unwrap();
    let queue = dev.queue().unwrap();
    queue.scope(|s| s.copy_to_device(&staging, &mut buf.as_mut_slice())).unwrap();
    staging.fill(0);
    queue.scope(|s| s.copy_from_device(&buf.as_slice(), &mut staging)).unwrap();
    assert!(staging.iter().enumerate().all(|(i, &v)| v == i as u32));
}

/// Managed memory on CUDA: a buffer like any other, launched on and read back.
#[test]
fn managed_buffers_work_like_device_buffers() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let a = DeviceBuffer::<f32>::managed(&dev, 4096).unwrap();
    let mut b = DeviceBuffer::<f32>::managed(&dev, 4096).unwrap();
    b.fill(3.0).unwrap();
    let mut c = DeviceBuffer::<f32>::managed(&dev, 4096).unwrap();
    ordo::builtin::vector_add(&dev.queue().unwrap(), &a, &b, &mut c).unwrap();
    assert_eq!(c.to_vec().unwrap(), vec![3.0; 4096]);
}

/// Large copies between a GPU and the host device page-lock the host device's allocation and
/// run asynchronously on the GPU's queue, both ways, checked byte for byte; freeing the host
/// allocation while such a copy is queued waits for it first; what is still page-locked at the
/// teardown is unregistered by it (the report is clean).
#[test]
fn large_copies_with_the_host_device_are_page_locked_and_asynchronous() {
    use ordo::raw::{CopyKind, MemKind};
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    let host = ctx.device(0).unwrap();
    let n = 16 << 20; // 64 MiB of u32
    let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let on_host = DeviceBuffer::from_slice(&host, &data).unwrap();
    let mut on_gpu = DeviceBuffer::<u32>::zeroed(&gpu, n).unwrap();
    let mut back = DeviceBuffer::<u32>::zeroed(&host, n).unwrap();
    let q = gpu.queue().unwrap();
    let (from, mut to) = (on_host.as_slice(), on_gpu.as_mut_slice());
    q.scope(|s| s.copy_between(&from, &mut to)).unwrap();
    let (from, mut to) = (on_gpu.as_slice(), back.as_mut_slice());
    q.scope(|s| s.copy_between(&from, &mut to)).unwrap();
    assert!(back.to_vec().unwrap() == data, "64 MiB there and back on the GPU's queue");
    // The raw API: a host allocation freed right after its copy was queued.
    let rt = ctx.runtime();
    let bytes = n * 4;
    let (h, g) = (
        rt.mem_alloc(host.raw(), MemKind::Device, bytes).unwrap(),
        rt.mem_alloc(gpu.raw(), MemKind::Device, bytes).unwrap(),
    );
    rt.copy_to_device(h, bytemuck_bytes(&data)).unwrap();
    let raw_q = rt.queue_create(gpu.raw()).unwrap();
    for _ in 0..4 {
        rt.copy_device(g, h, bytes, Some(raw_q)).unwrap();
    }
    rt.mem_free(h).unwrap(); // waits for the queued copies, then unregisters and frees
    let mut out = vec![0u32; n];
    // SAFETY: `out` is `bytes` long and outlives the synchronous copy.
    unsafe { rt.memcpy(CopyKind::DeviceToHost, out.as_mut_ptr() as u64, g.0, bytes, None) }.unwrap();
    assert!(out == data, "the copies queued before the free read the data");
    rt.queue_destroy(raw_q).unwrap();
    rt.mem_free(g).unwrap();
}

fn bytemuck_bytes(v: &[u32]) -> &[u8] {
    // SAFETY: u32 has no padding; the byte view covers the same memory for its whole length.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

/// Buffers allocated and freed in a CUDA queue's order (`cuMemAllocAsync` / `cuMemFreeAsync`):
/// zeroed on the queue, written and read back, freed when dropped, a hundred times over; an
/// address of the raw call is `Ordered` to `mem_info`, and `mem_free` frees it too.
#[test]
fn queue_ordered_buffers_on_a_cuda_queue() {
    use ordo::raw::MemKind;
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let q = dev.queue().unwrap();
    let n = 1 << 16;
    for round in 0..100u32 {
        let mut b = DeviceBuffer::<u32>::zeroed_on(&q, n).unwrap();
        assert!(b.to_vec().unwrap().iter().all(|&v| v == 0), "zeroed in queue order");
        b.copy_from(&vec![round; n]).unwrap();
        assert!(b.to_vec().unwrap().iter().all(|&v| v == round));
    }
    let rt = ctx.runtime();
    let (_, p) = rt.mem_alloc_on(q.raw(), 4096).unwrap();
    assert_eq!(rt.mem_info(p).unwrap().2, MemKind::Ordered);
    rt.mem_free_on(q.raw(), p).unwrap();
    let (_, p) = rt.mem_alloc_on(q.raw(), 4096).unwrap();
    rt.mem_free(p).unwrap();
    assert_eq!(rt.mem_free(p).unwrap_err().code, ErrorCode::NotFound);
}

/// A host-and-device copy whose host side is a GPU's device memory (known to ordo) is refused
/// before the driver, nothing copied: the host would read or write a device address and fault.
#[test]
fn a_gpus_memory_named_as_the_host_side_of_a_copy_is_refused() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(gpu) = cuda(&ctx) else { return };
    let rt = ctx.runtime();
    let a = rt.mem_alloc(gpu.raw(), ordo_core::MemKind::Device, 256).unwrap();
    let b = rt.mem_alloc(gpu.raw(), ordo_core::MemKind::Device, 256).unwrap();
    // Initialised, so that the device-to-device copy below reads no uninitialised memory.
    rt.copy_to_device(a, &[1u8; 256]).unwrap();
    for kind in [ordo_core::CopyKind::HostToDevice, ordo_core::CopyKind::DeviceToHost] {
        // SAFETY: refused before anything is read or written.
        let r = unsafe { rt.memcpy(kind, b.0, a.0 + 16, 64, None) };
        assert_eq!(r.unwrap_err().code, ErrorCode::InvalidArgument, "{kind:?}");
    }
    // SAFETY: two device allocations of 256 bytes.
    unsafe { rt.memcpy(ordo_core::CopyKind::DeviceToDevice, b.0, a.0, 256, None) }.unwrap();
    rt.mem_free(a).unwrap();
    rt.mem_free(b).unwrap();
}

/// The cache of queue-ordered memory on a GPU: a buffer dropped on its queue while that queue's
/// kernel (a long spin, then an add writing the buffer) still runs is kept for the queue; another
/// queue's allocation of its size gets other memory at once; the same queue's next allocation
/// gets the same block, and writes through it land after the old kernel (checked values).
#[test]
fn a_cached_block_is_reused_in_its_queues_order_only() {
    let _one = crate::one_at_a_time();
    let ctx = Context::new().unwrap();
    let Some(dev) = cuda(&ctx) else { return };
    let n = 1 << 20;
    let (q, other) = (dev.queue().unwrap(), dev.queue().unwrap());
    let module = Module::load_builtin(&dev).unwrap();
    type Add = (ordo::In<'static, f32>, ordo::In<'static, f32>, ordo::Out<'static, f32>, u32);
    let add = module.typed_function::<Add>("vector_add_f32").unwrap();
    let spin = module.function("spin_cycles").unwrap();
    let ones = DeviceBuffer::from_slice(&dev, &vec![1.0f32; n]).unwrap();
    let mut result = DeviceBuffer::<f32>::zeroed(&dev, n).unwrap();
    let mut first = DeviceBuffer::<f32>::zeroed_on(&q, n).unwrap();
    let address = first.device_ptr();
    let dims = add.dims_for(n as u32).unwrap();
    // SAFETY: spin_cycles only spins; each vector_add reads n of its inputs and writes n of its
    // output: `first` = 2, then `result` = `first` + 1 = 3, both after the spin.
    unsafe {
        q.launch_builder(&spin).arg(&200_000_000u64).launch(ordo::LaunchDims::linear(1, 1)).unwrap();
        q.launch(&add, dims, (&ones, &ones, &mut first, n as u32)).unwrap();
        q.launch(&add, dims, (&first, &ones, &mut result, n as u32)).unwrap();
    }
    drop(first); // freed on `q` while its kernels run: kept for `q`
    assert_eq!(dev.cache_stats().unwrap().blocks, 1);
    let elsewhere = DeviceBuffer::<f32>::zeroed_on(&other, n).unwrap();
    assert_ne!(elsewhere.device_ptr(), address, "another queue never gets a block of this one");
    let mut again = DeviceBuffer::<f32>::zeroed_on(&q, n).unwrap();
    assert_eq!(again.device_ptr(), address, "the queue's next allocation of the size takes its block");
    assert_eq!(dev.cache_stats().unwrap().hits, 1);
    // Written after the adds that used the block before (a fill without a queue starts after
    // the device's queued work): the second add read 2s, never 7s or 0s.
    again.fill(7.0).unwrap();
    assert!(result.to_vec().unwrap().iter().all(|&v| v == 3.0), "the old user's kernels saw their own data");
    assert!(again.to_vec().unwrap().iter().all(|&v| v == 7.0));
    drop(again);
    assert_eq!(q.trim().unwrap(), n * 4);
    assert_eq!(dev.cache_stats().unwrap().blocks, 0);
}
