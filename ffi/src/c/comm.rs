//! Communicators and collectives (NCCL on CUDA, the runtime's reference engine on the host
//! device): `ordo_comm_*` and `ordo_collective`.

use ordo_core::{
    Collective, CollectiveKind, Communicator, DataType, Device, DevicePtr, Error, ErrorCode, MAX_GROUP_CALLS, Platform,
    Queue, ReduceOp, UniqueId,
};

use crate::boundary::{fail, guard, non_null, produce, ready, status};
use crate::c::types::*;
use ordo::runtime;

fn comm(h: ordo_comm_t) -> Communicator {
    Communicator::from_raw(h.raw)
}

/// Creates one communicator per device of `devices[0..count]`, rank i on `devices[i]`, made
/// together (NCCL's `ncclCommInitAll`, in one group), into `out[0..count]`. The devices are
/// distinct, and either all of one platform with a collective library (CUDA with NCCL) or all
/// of host platforms (the reference engine). `ORDO_ERROR_INVALID_ARGUMENT` for a count of 0 or
/// above 64, a device named twice or devices that cannot join; `ORDO_ERROR_UNSUPPORTED` (the
/// detail says why) when NCCL is not found; `ORDO_ERROR_OUT_OF_RESOURCES` when the table has no room (nothing made).
///
/// # Safety
/// `devices` is NULL or valid for `count` reads, `out` NULL or valid for `count` writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_comm_create_all(
    devices: *const ordo_device_t,
    count: u32,
    out: *mut ordo_comm_t,
) -> ordo_status_t {
    guard(|| {
        let checked = non_null(out, "out is NULL").and_then(|()| ready()).and(non_null(devices, "devices is NULL"));
        if let Err(e) = checked {
            return fail(e);
        }
        if count == 0 || count as usize > MAX_GROUP_CALLS {
            return fail(Error::new(ErrorCode::InvalidArgument, "count must be 1 to 64"));
        }
        // SAFETY: non-NULL and, by the C caller's contract, valid for `count` reads.
        let list = unsafe { core::slice::from_raw_parts(devices, count as usize) };
        let raw: heapless::Vec<Device, MAX_GROUP_CALLS> = list.iter().map(|d| Device::from_raw(d.raw)).collect();
        let mut made = [Communicator::NULL; MAX_GROUP_CALLS];
        let r = runtime().comm_create_all(&raw, &mut made[..count as usize]);
        if r.is_ok() {
            for (i, c) in made[..count as usize].iter().enumerate() {
                // SAFETY: valid for `count` writes by the C caller's contract.
                unsafe { out.add(i).write(ordo_comm_t { raw: c.to_raw() }) };
            }
        }
        status(r)
    })
}

/// Makes a unique id for `ordo_comm_create_rank` from `platform`'s collective library (NCCL's
/// `ncclGetUniqueId`), to be carried to every rank (a file, the environment, `MPI_Bcast`, a
/// socket). `ORDO_ERROR_UNSUPPORTED` for a platform without one (the host device's reference
/// engine joins the devices of one process only) and when NCCL is not found (the detail says
/// which).
///
/// # Safety
/// `out` is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_comm_unique_id(platform: ordo_platform_t, out: *mut ordo_comm_id_t) -> ordo_status_t {
    produce(out, "out is NULL", || {
        runtime().comm_unique_id(Platform::from_raw(platform.raw)).map(|id| ordo_comm_id_t { internal: id.0 })
    })
}

/// Creates rank `rank` of a communicator of `size` ranks, one per process, on `device`, from the
/// id one process made. Returns when every rank has joined; `ORDO_ERROR_TIMEOUT` after
/// `timeout_ms` milliseconds when one never does (nothing left made). `ORDO_ERROR_INVALID_VALUE`
/// for a size of 0, a rank not below it or a timeout of 0; `ORDO_ERROR_UNSUPPORTED` for a device
/// without a collective library.
///
/// # Safety
/// `id` is NULL or valid for a read, `out` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_comm_create_rank(
    device: ordo_device_t,
    id: *const ordo_comm_id_t,
    rank: u32,
    size: u32,
    timeout_ms: u32,
    out: *mut ordo_comm_t,
) -> ordo_status_t {
    produce(out, "out is NULL", || {
        ready()?;
        non_null(id, "id is NULL")?;
        // SAFETY: non-NULL and, by the C caller's contract, valid for a read.
        let id = UniqueId(unsafe { (*id).internal });
        runtime()
            .comm_create_rank(Device::from_raw(device.raw), &id, rank, size, timeout_ms)
            .map(|c| ordo_comm_t { raw: c.to_raw() })
    })
}

/// A communicator's rank, its rank count and its device.
///
/// # Safety
/// Each pointer is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_comm_info(
    c: ordo_comm_t,
    rank: *mut u32,
    size: *mut u32,
    device: *mut ordo_device_t,
) -> ordo_status_t {
    guard(|| {
        let checked = non_null(rank, "rank is NULL")
            .and(non_null(size, "size is NULL"))
            .and(non_null(device, "device is NULL"))
            .and_then(|()| runtime().comm_info(comm(c)));
        match checked {
            Ok((r, n, d)) => {
                // SAFETY: non-NULL and, by the C caller's contract, valid for writes.
                unsafe {
                    rank.write(r);
                    size.write(n);
                    device.write(ordo_device_t { raw: d.to_raw() });
                }
                ORDO_SUCCESS
            }
            Err(e) => fail(e),
        }
    })
}

/// The library's own communicator (NCCL: its `ncclComm_t`), for calls ordo does not make; it
/// stays ordo's (destroy it with `ordo_comm_destroy`). `ORDO_ERROR_UNSUPPORTED` for the
/// reference engine's communicators.
///
/// # Safety
/// `out` is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_comm_native(c: ordo_comm_t, out: *mut *mut core::ffi::c_void) -> ordo_status_t {
    produce(out, "out is NULL", || runtime().comm_native(comm(c)).map(|raw| raw as usize as *mut core::ffi::c_void))
}

/// Runs `parts[0..count]` together, each on its queue (NCCL: one group). The parts of every rank
/// of communicators made together are named once each, with the same kind, type, reduction,
/// count and root; their sends and receives pair up. On CUDA the work is queued (and may be
/// captured into a graph); the host device's reference engine runs it before returning, after
/// the queues' earlier work. A count of 0 does nothing. Errors: `ORDO_ERROR_INVALID_ARGUMENT`
/// (count 0 or above 64, a queue or memory of another device, missing or disagreeing ranks,
/// an unpaired send or receive), `ORDO_ERROR_INVALID_ENUMERATION` (an unknown kind, type or
/// reduction), `ORDO_ERROR_INVALID_VALUE` (a root or peer not below the rank count),
/// `ORDO_ERROR_NULL_POINTER` (a buffer the kind uses is NULL), `ORDO_ERROR_INVALID_SIZE` (a
/// buffer that overflows or runs past its allocation), `ORDO_ERROR_NOT_FOUND` (memory ordo does
/// not know); nothing runs then.
///
/// # Safety
/// `parts` is NULL or valid for `count` reads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ordo_collective(parts: *const ordo_collective_t, count: u32) -> ordo_status_t {
    guard(|| {
        if let Err(e) = ready().and(non_null(parts, "parts is NULL")) {
            return fail(e);
        }
        if count == 0 || count as usize > MAX_GROUP_CALLS {
            return fail(Error::new(ErrorCode::InvalidArgument, "count must be 1 to 64"));
        }
        // SAFETY: non-NULL and, by the C caller's contract, valid for `count` reads.
        let list = unsafe { core::slice::from_raw_parts(parts, count as usize) };
        let mut calls: heapless::Vec<Collective, MAX_GROUP_CALLS> = heapless::Vec::new();
        for p in list {
            let converted = (|| {
                Ok::<_, Error>(Collective {
                    comm: comm(p.comm),
                    queue: Queue::from_raw(p.queue.raw),
                    kind: CollectiveKind::try_from(p.kind)?,
                    dtype: DataType::try_from(p.data_type)?,
                    op: ReduceOp::try_from(p.op)?,
                    count: p.count,
                    peer: p.peer,
                    send: DevicePtr(p.send as usize as u64),
                    recv: DevicePtr(p.recv as usize as u64),
                })
            })();
            match converted {
                Ok(c) => {
                    let _ = calls.push(c);
                }
                Err(e) => return fail(e),
            }
        }
        status(runtime().collective(&calls))
    })
}

/// Destroys a communicator once its work is done (NCCL: finalize, then destroy; one whose
/// finalize fails or does not end within `ORDO_NCCL_TIMEOUT_MS` is aborted, and that error
/// returned). The handle is stale afterwards either way.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_comm_destroy(c: ordo_comm_t) -> ordo_status_t {
    guard(|| status(runtime().comm_destroy(comm(c))))
}

/// Aborts a communicator: its pending collectives are abandoned and its peers' collectives fail
/// (NCCL's `ncclCommAbort`). The handle is stale afterwards.
#[unsafe(no_mangle)]
pub extern "C" fn ordo_comm_abort(c: ordo_comm_t) -> ordo_status_t {
    guard(|| status(runtime().comm_abort(comm(c))))
}
