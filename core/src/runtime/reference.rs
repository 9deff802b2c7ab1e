//! The reference engine: collectives of communicators whose backend has no collective library
//! (the host, AMDGPU), run by the runtime over the backends' own copies, so the same program
//! runs on the CPU in CI and the tests have an answer to compare with. It runs when called: every
//! read and write is a backend copy without a queue, which starts after the work submitted
//! earlier to the device's queues and is complete when it returns. Buffers move through two
//! chunks on the stack (16 KiB), so any size runs in bounded memory. Reductions follow NCCL:
//! integers wrap, `Avg` divides the sum by the rank count (integers: rounded toward zero), and
//! 16-bit floats are reduced in `f32` and rounded to nearest even. Depends on `backend` and
//! `error`; `comm.rs` calls it with checked parts.

use crate::backend::{CollectiveKind, CopyKind, DataType, ReduceOp};
use crate::error::Result;

use super::comm::{Checked, MAX_GROUP_CALLS};

/// Bytes per chunk: a multiple of every element size.
const CHUNK: usize = 8192;

type Chunk = [u64; CHUNK / 8];

/// Runs checked parts: each clique's collective once over all its ranks, then each send with
/// its receive.
pub(super) fn run(calls: &[Checked]) -> Result<()> {
    let mut acc: Chunk = [0; CHUNK / 8];
    let mut tmp: Chunk = [0; CHUNK / 8];
    let mut done = 0u64;
    for (i, a) in calls.iter().enumerate() {
        if done & (1 << i) != 0 || a.call.count == 0 {
            continue;
        }
        match a.call.kind {
            CollectiveKind::Recv => {}
            CollectiveKind::Send => {
                // Its receive: the first of the peer's not yet used.
                let j = calls.iter().enumerate().position(|(j, b)| {
                    done & (1 << j) == 0
                        && b.clique == a.clique
                        && b.rank == a.call.peer
                        && b.call.peer == a.rank
                        && b.call.kind == CollectiveKind::Recv
                        && b.call.count == a.call.count
                        && b.call.dtype == a.call.dtype
                });
                let Some(j) = j else { continue };
                done |= 1 << j;
                let b = &calls[j];
                let bytes = a.call.count * a.call.dtype.size();
                for off in (0..bytes).step_by(CHUNK) {
                    let n = CHUNK.min(bytes - off);
                    let buf = &mut bytes_of(&mut acc)[..n];
                    read(a, a.call.send + off as u64, buf)?;
                    write(b, b.call.recv + off as u64, buf)?;
                }
            }
            _ => {
                // The clique's parts, by rank.
                let mut ranks: [usize; MAX_GROUP_CALLS] = [0; MAX_GROUP_CALLS];
                for (j, b) in calls.iter().enumerate() {
                    if b.clique == a.clique && b.call.kind == a.call.kind {
                        ranks[b.rank as usize] = j;
                        done |= 1 << j;
                    }
                }
                let parts = &ranks[..a.size as usize];
                collective(calls, parts, &mut acc, &mut tmp)?;
            }
        }
    }
    Ok(())
}

/// One collective over `parts` (indices into `calls`, by rank).
fn collective(calls: &[Checked], parts: &[usize], acc: &mut Chunk, tmp: &mut Chunk) -> Result<()> {
    let first = &calls[parts[0]].call;
    let (dtype, op, n) = (first.dtype, first.op, parts.len());
    let bytes = first.count * dtype.size();
    let part = |r: usize| &calls[parts[r]];
    match first.kind {
        CollectiveKind::AllReduce | CollectiveKind::Reduce => {
            for off in (0..bytes).step_by(CHUNK) {
                let len = CHUNK.min(bytes - off);
                reduce_ranks(calls, parts, |c| c.call.send + off as u64, len, dtype, op, acc, tmp)?;
                for r in 0..n {
                    let c = part(r);
                    if first.kind == CollectiveKind::AllReduce || c.rank == first.peer {
                        write(c, c.call.recv + off as u64, &bytes_of(acc)[..len])?;
                    }
                }
            }
        }
        CollectiveKind::Broadcast => {
            let root = part(first.peer as usize);
            for off in (0..bytes).step_by(CHUNK) {
                let len = CHUNK.min(bytes - off);
                let buf = &mut bytes_of(acc)[..len];
                read(root, root.call.send + off as u64, buf)?;
                for r in 0..n {
                    let c = part(r);
                    write(c, c.call.recv + off as u64, buf)?;
                }
            }
        }
        CollectiveKind::AllGather => {
            for src in 0..n {
                let s = part(src);
                for off in (0..bytes).step_by(CHUNK) {
                    let len = CHUNK.min(bytes - off);
                    let buf = &mut bytes_of(acc)[..len];
                    read(s, s.call.send + off as u64, buf)?;
                    for r in 0..n {
                        let c = part(r);
                        write(c, c.call.recv + (src * bytes + off) as u64, buf)?;
                    }
                }
            }
        }
        CollectiveKind::ReduceScatter => {
            for dst in 0..n {
                let d = part(dst);
                let block = (dst * bytes) as u64;
                for off in (0..bytes).step_by(CHUNK) {
                    let len = CHUNK.min(bytes - off);
                    reduce_ranks(calls, parts, |c| c.call.send + block + off as u64, len, dtype, op, acc, tmp)?;
                    write(d, d.call.recv + off as u64, &bytes_of(acc)[..len])?;
                }
            }
        }
        CollectiveKind::Send | CollectiveKind::Recv => {}
    }
    Ok(())
}

/// Reduces `len` bytes at `at(part)` over every rank into `acc` (divided for `Avg`).
#[allow(clippy::too_many_arguments, reason = "the parts, where to read, the element and the two chunks")]
fn reduce_ranks(
    calls: &[Checked],
    parts: &[usize],
    at: impl Fn(&Checked) -> u64,
    len: usize,
    dtype: DataType,
    op: ReduceOp,
    acc: &mut Chunk,
    tmp: &mut Chunk,
) -> Result<()> {
    let c0 = &calls[parts[0]];
    read(c0, at(c0), &mut bytes_of(acc)[..len])?;
    for &p in &parts[1..] {
        let c = &calls[p];
        read(c, at(c), &mut bytes_of(tmp)[..len])?;
        combine(dtype, op, &mut bytes_of(acc)[..len], &bytes_of(tmp)[..len]);
    }
    if op == ReduceOp::Avg {
        divide(dtype, &mut bytes_of(acc)[..len], parts.len());
    }
    Ok(())
}

fn bytes_of(chunk: &mut Chunk) -> &mut [u8] {
    // SAFETY: `u64`s are plain bytes; the slice covers the array exactly.
    unsafe { core::slice::from_raw_parts_mut(chunk.as_mut_ptr().cast(), CHUNK) }
}

fn read(c: &Checked, addr: u64, buf: &mut [u8]) -> Result<()> {
    // SAFETY: `addr..+len` lies in the range `comm.rs` checked in a live allocation of the
    // part's device; `buf` is valid for its length, and the copy is complete when it returns.
    Ok(unsafe {
        c.dev.backend.memcpy(c.dev.ordinal, CopyKind::DeviceToHost, buf.as_mut_ptr() as u64, addr, buf.len(), None)
    }?)
}

fn write(c: &Checked, addr: u64, buf: &[u8]) -> Result<()> {
    // SAFETY: as for `read`.
    Ok(unsafe {
        c.dev.backend.memcpy(c.dev.ordinal, CopyKind::HostToDevice, addr, buf.as_ptr() as u64, buf.len(), None)
    }?)
}

macro_rules! each {
    ($acc:expr, $x:expr, $t:ty, |$a:ident, $b:ident| $f:expr) => {{
        const W: usize = core::mem::size_of::<$t>();
        for (ca, cb) in $acc.chunks_exact_mut(W).zip($x.chunks_exact(W)) {
            let $a = <$t>::from_ne_bytes(ca.try_into().unwrap_or([0; W]));
            let $b = <$t>::from_ne_bytes(cb.try_into().unwrap_or([0; W]));
            ca.copy_from_slice(&($f).to_ne_bytes());
        }
    }};
}

macro_rules! int_op {
    ($acc:expr, $x:expr, $t:ty, $op:expr) => {
        match $op {
            ReduceOp::Sum | ReduceOp::Avg => each!($acc, $x, $t, |a, b| a.wrapping_add(b)),
            ReduceOp::Prod => each!($acc, $x, $t, |a, b| a.wrapping_mul(b)),
            ReduceOp::Max => each!($acc, $x, $t, |a, b| a.max(b)),
            ReduceOp::Min => each!($acc, $x, $t, |a, b| a.min(b)),
        }
    };
}

macro_rules! float_op {
    ($acc:expr, $x:expr, $t:ty, $op:expr) => {
        match $op {
            ReduceOp::Sum | ReduceOp::Avg => each!($acc, $x, $t, |a, b| a + b),
            ReduceOp::Prod => each!($acc, $x, $t, |a, b| a * b),
            ReduceOp::Max => each!($acc, $x, $t, |a, b| if b > a || a.is_nan() { b } else { a }),
            ReduceOp::Min => each!($acc, $x, $t, |a, b| if b < a || a.is_nan() { b } else { a }),
        }
    };
}

/// `acc[i] = acc[i] op x[i]` for every element.
fn combine(dtype: DataType, op: ReduceOp, acc: &mut [u8], x: &[u8]) {
    match dtype {
        DataType::I8 => int_op!(acc, x, i8, op),
        DataType::U8 => int_op!(acc, x, u8, op),
        DataType::I32 => int_op!(acc, x, i32, op),
        DataType::U32 => int_op!(acc, x, u32, op),
        DataType::I64 => int_op!(acc, x, i64, op),
        DataType::U64 => int_op!(acc, x, u64, op),
        DataType::F32 => float_op!(acc, x, f32, op),
        DataType::F64 => float_op!(acc, x, f64, op),
        DataType::F16 | DataType::Bf16 => {
            let (to, from) = half_conversions(dtype);
            for (ca, cb) in acc.chunks_exact_mut(2).zip(x.chunks_exact(2)) {
                let a = to(u16::from_ne_bytes([ca[0], ca[1]]));
                let b = to(u16::from_ne_bytes([cb[0], cb[1]]));
                let r = match op {
                    ReduceOp::Sum | ReduceOp::Avg => a + b,
                    ReduceOp::Prod => a * b,
                    ReduceOp::Max => {
                        if b > a || a.is_nan() {
                            b
                        } else {
                            a
                        }
                    }
                    ReduceOp::Min => {
                        if b < a || a.is_nan() {
                            b
                        } else {
                            a
                        }
                    }
                };
                ca.copy_from_slice(&from(r).to_ne_bytes());
            }
        }
    }
}

/// `acc[i] /= n` for every element (`Avg`).
fn divide(dtype: DataType, acc: &mut [u8], n: usize) {
    macro_rules! div {
        ($t:ty) => {{
            const W: usize = core::mem::size_of::<$t>();
            for ca in acc.chunks_exact_mut(W) {
                let a = <$t>::from_ne_bytes(ca.try_into().unwrap_or([0; W]));
                ca.copy_from_slice(&(a / (n as $t)).to_ne_bytes());
            }
        }};
    }
    match dtype {
        DataType::I8 => div!(i8),
        DataType::U8 => div!(u8),
        DataType::I32 => div!(i32),
        DataType::U32 => div!(u32),
        DataType::I64 => div!(i64),
        DataType::U64 => div!(u64),
        DataType::F32 => div!(f32),
        DataType::F64 => div!(f64),
        DataType::F16 | DataType::Bf16 => {
            let (to, from) = half_conversions(dtype);
            for ca in acc.chunks_exact_mut(2) {
                let a = to(u16::from_ne_bytes([ca[0], ca[1]]));
                ca.copy_from_slice(&from(a / n as f32).to_ne_bytes());
            }
        }
    }
}

/// A 16-bit float type's conversions to and from `f32`.
type Conversions = (fn(u16) -> f32, fn(f32) -> u16);

fn half_conversions(dtype: DataType) -> Conversions {
    if dtype == DataType::F16 { (f16_to_f32, f32_to_f16) } else { (bf16_to_f32, f32_to_bf16) }
}

/// IEEE binary16 to `f32` (exact).
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let mant = u32::from(h & 0x3ff);
    let bits = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalise.
            let shift = m.leading_zeros() - 21;
            sign | ((113 - shift) << 23) | ((m << shift) & 0x3ff) << 13
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// `f32` to IEEE binary16, rounded to nearest even (overflow to infinity, NaN kept NaN).
pub(crate) fn f32_to_f16(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let mant = x & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if mant != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = mant | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut h = m >> shift;
        if rest > half || rest == half && h & 1 == 1 {
            h += 1;
        }
        return sign | h as u16;
    }
    let mut h = ((e as u32) << 10) | (mant >> 13);
    let rest = mant & 0x1fff;
    if rest > 0x1000 || rest == 0x1000 && h & 1 == 1 {
        h += 1; // may carry into the exponent, up to infinity: still correct
    }
    sign | h as u16
}

/// bfloat16 to `f32` (exact).
pub(crate) fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// `f32` to bfloat16, rounded to nearest even (NaN kept NaN).
pub(crate) fn f32_to_bf16(f: f32) -> u16 {
    let x = f.to_bits();
    if f.is_nan() {
        return ((x >> 16) as u16) | 0x40;
    }
    let rest = x & 0xffff;
    let mut h = x >> 16;
    if rest > 0x8000 || rest == 0x8000 && h & 1 == 1 {
        h += 1;
    }
    h as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversions_round_trip_and_round_to_nearest_even() {
        // Every value (every 13th under Miri, which interprets each one).
        let step = if cfg!(miri) { 13 } else { 1 };
        for h in (0..=u16::MAX).step_by(step) {
            let f = f16_to_f32(h);
            if f.is_nan() {
                assert!(f16_to_f32(f32_to_f16(f)).is_nan());
            } else {
                assert_eq!(f32_to_f16(f), h, "{h:#x}");
            }
        }
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00, "a tie rounds to even");
        assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3c02, "a tie rounds to even, up");
        assert_eq!(f32_to_f16(65520.0), 0x7c00, "overflow is infinity");
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80, "a tie rounds to even");
    }

    #[test]
    fn combine_reduces_each_type_as_nccl_does() {
        let mut a = 250u8.to_ne_bytes();
        combine(DataType::U8, ReduceOp::Sum, &mut a, &10u8.to_ne_bytes());
        assert_eq!(a, [4], "integers wrap");
        let mut a = (-3i32).to_ne_bytes();
        combine(DataType::I32, ReduceOp::Max, &mut a, &(-7i32).to_ne_bytes());
        assert_eq!(i32::from_ne_bytes(a), -3);
        let mut a = 7i64.to_ne_bytes();
        divide(DataType::I64, &mut a, 2);
        assert_eq!(i64::from_ne_bytes(a), 3, "integer averages round toward zero");
        let mut a = 1.5f64.to_ne_bytes();
        combine(DataType::F64, ReduceOp::Prod, &mut a, &4.0f64.to_ne_bytes());
        assert_eq!(f64::from_ne_bytes(a), 6.0);
        let mut a = f32_to_f16(1.5).to_ne_bytes();
        combine(DataType::F16, ReduceOp::Min, &mut a, &f32_to_f16(-2.0).to_ne_bytes());
        assert_eq!(f16_to_f32(u16::from_ne_bytes(a)), -2.0);
    }
}
