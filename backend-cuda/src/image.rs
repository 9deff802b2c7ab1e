//! Checks of program images before the driver reads them. Pure: no driver calls.
//!
//! `cuModuleLoadDataEx` takes a pointer and no length: for a cubin (ELF) or a fatbin it reads as
//! far as the sizes inside the image say. So every size and offset that the driver follows is
//! checked against the slice: the ELF header, the program and section header tables and each
//! segment and section (but `SHT_NOBITS`); the fatbin header and each of its entries. The host
//! wrapper of a fatbin (`__fatBinC_Wrapper_t`, magic `0x466243B1`) holds raw pointers and is
//! refused, as is the pre-CUDA-4 fatbin format (also pointers). Anything else is PTX text.

use ordo_core::{BackendError, BackendResult, ErrorCode};

/// What kind of image passed the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// A cubin or a fatbin, checked: passed to the driver as it is.
    Binary,
    /// PTX text (NUL-terminated by the caller when it has no NUL).
    Text,
}

const ELF_MAGIC: &[u8] = b"\x7fELF";
const FATBIN_MAGIC: u32 = 0xBA55_ED50;
const FATBIN_WRAPPER_MAGIC: u32 = 0x4662_43B1;
const OLD_STYLE_FATBIN_MAGIC: u32 = 0x1EE5_5A01;

fn invalid(message: &'static str) -> BackendError {
    BackendError::new(ErrorCode::InvalidBinary, 0, message)
}

pub(crate) fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?))
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

/// Whether `[offset, offset + size)` lies within `len` bytes.
fn within(offset: u64, size: u64, len: usize) -> bool {
    offset.checked_add(size).is_some_and(|end| end <= len as u64)
}

/// Classifies `image` and checks the extents of a binary one.
pub(crate) fn check(image: &[u8]) -> BackendResult<Format> {
    if image.starts_with(ELF_MAGIC) {
        check_elf(image).ok_or(invalid("truncated or inconsistent ELF image (cubin)"))?;
        return Ok(Format::Binary);
    }
    match u32_at(image, 0) {
        Some(FATBIN_MAGIC) => {
            check_fatbin(image).ok_or(invalid("truncated or inconsistent fatbin image"))?;
            Ok(Format::Binary)
        }
        Some(FATBIN_WRAPPER_MAGIC) => Err(invalid("a fatbin wrapper holds pointers: pass the fatbin it points to")),
        Some(OLD_STYLE_FATBIN_MAGIC) => Err(invalid("old-style fatbins (before CUDA 4) hold pointers: not accepted")),
        _ => Ok(Format::Text),
    }
}

/// A 64-bit little-endian ELF whose tables, segments and sections all lie within the image.
fn check_elf(b: &[u8]) -> Option<()> {
    const EHDR: usize = 64;
    const PHDR: u64 = 56;
    const SHDR: u64 = 64;
    const SHT_NOBITS: u32 = 8;
    if b.len() < EHDR || b[4] != 2 || b[5] != 1 {
        return None; // not ELFCLASS64 / ELFDATA2LSB: CUDA images are both
    }
    let (phoff, shoff) = (u64_at(b, 0x20)?, u64_at(b, 0x28)?);
    let (phentsize, phnum) = (u64::from(u16_at(b, 0x36)?), u64::from(u16_at(b, 0x38)?));
    let (shentsize, shnum, shstrndx) = (u64::from(u16_at(b, 0x3a)?), u64::from(u16_at(b, 0x3c)?), u16_at(b, 0x3e)?);
    if phnum > 0 {
        if phentsize < PHDR || !within(phoff, phentsize * phnum, b.len()) {
            return None;
        }
        for i in 0..phnum {
            let at = usize::try_from(phoff + i * phentsize).ok()?;
            if !within(u64_at(b, at + 8)?, u64_at(b, at + 0x20)?, b.len()) {
                return None;
            }
        }
    }
    if shnum == 0 {
        // No sections, or extended numbering (a count in section 0), which CUDA never emits.
        return (shoff == 0).then_some(());
    }
    if shentsize < SHDR || !within(shoff, shentsize * shnum, b.len()) || u64::from(shstrndx) >= shnum {
        return None;
    }
    for i in 0..shnum {
        let at = usize::try_from(shoff + i * shentsize).ok()?;
        if u32_at(b, at + 4)? != SHT_NOBITS && !within(u64_at(b, at + 0x18)?, u64_at(b, at + 0x20)?, b.len()) {
            return None;
        }
    }
    Some(())
}

/// A fatbin header (magic, version, header size, size of the entries) and entries (kind,
/// version, header size, payload size) that all lie within the image.
fn check_fatbin(b: &[u8]) -> Option<()> {
    let header = u64::from(u16_at(b, 6)?);
    let body = u64_at(b, 8)?;
    if header < 16 || !within(header, body, b.len()) {
        return None;
    }
    let end = header + body;
    let mut at = header;
    while at < end {
        let entry_header = u64::from(u32_at(b, usize::try_from(at).ok()? + 4)?);
        let payload = u64_at(b, usize::try_from(at).ok()? + 8)?;
        let next = at.checked_add(entry_header)?.checked_add(payload)?;
        if entry_header < 16 || next > end {
            return None;
        }
        at = next;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal well-formed ELF64 image: header, one program header, two sections.
    fn elf() -> Vec<u8> {
        let mut b = vec![0u8; 64 + 56 + 2 * 64 + 16];
        b[..4].copy_from_slice(ELF_MAGIC);
        (b[4], b[5]) = (2, 1);
        let put16 = |b: &mut Vec<u8>, at: usize, v: u16| b[at..at + 2].copy_from_slice(&v.to_le_bytes());
        let put64 = |b: &mut Vec<u8>, at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        put64(&mut b, 0x20, 64); // phoff
        put64(&mut b, 0x28, 64 + 56); // shoff
        put16(&mut b, 0x36, 56);
        put16(&mut b, 0x38, 1);
        put16(&mut b, 0x3a, 64);
        put16(&mut b, 0x3c, 2);
        put16(&mut b, 0x3e, 1);
        put64(&mut b, 64 + 8, 0); // segment: the whole header
        put64(&mut b, 64 + 0x20, 64);
        let sec1 = 64 + 56 + 64;
        put64(&mut b, sec1 + 0x18, (64 + 56 + 128) as u64); // section 1: the last 16 bytes
        put64(&mut b, sec1 + 0x20, 16);
        b
    }

    fn fatbin(entries: &[u64]) -> Vec<u8> {
        let mut b = vec![0u8; 16];
        b[..4].copy_from_slice(&FATBIN_MAGIC.to_le_bytes());
        b[6..8].copy_from_slice(&16u16.to_le_bytes());
        for &payload in entries {
            let mut e = vec![0u8; 64 + payload as usize];
            e[4..8].copy_from_slice(&64u32.to_le_bytes());
            e[8..16].copy_from_slice(&payload.to_le_bytes());
            b.extend_from_slice(&e);
        }
        let body = (b.len() - 16) as u64;
        b[8..16].copy_from_slice(&body.to_le_bytes());
        b
    }

    #[test]
    fn well_formed_binaries_pass_and_text_is_text() {
        assert_eq!(check(&elf()), Ok(Format::Binary));
        assert_eq!(check(&fatbin(&[32, 8])), Ok(Format::Binary));
        assert_eq!(check(b".version 8.0\n.target sm_90\n"), Ok(Format::Text));
        assert_eq!(check(b"x"), Ok(Format::Text));
    }

    #[test]
    fn every_truncation_and_every_bad_extent_is_refused() {
        let e = elf();
        for len in 0..e.len() {
            if e[..len].starts_with(ELF_MAGIC) {
                assert!(check(&e[..len]).is_err(), "ELF truncated to {len} bytes");
            }
        }
        let f = fatbin(&[32, 8]);
        for len in 4..f.len() {
            assert!(check(&f[..len]).is_err(), "fatbin truncated to {len} bytes");
        }
        assert!(check(b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00").is_err(), "12 bytes of ELF");
        let mut bad = elf();
        bad[64 + 56 + 64 + 0x20..][..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(check(&bad).is_err(), "section size overflowing");
        let mut bad = elf();
        bad[0x3e] = 9;
        assert!(check(&bad).is_err(), "string table index out of range");
        let mut bad = fatbin(&[32]);
        bad[16 + 8..][..8].copy_from_slice(&1000u64.to_le_bytes());
        assert!(check(&bad).is_err(), "entry past the end");
        let wrapper = [FATBIN_WRAPPER_MAGIC.to_le_bytes(), [1, 0, 0, 0]].concat();
        assert_eq!(check(&wrapper).unwrap_err().code, ErrorCode::InvalidBinary);
    }
}
