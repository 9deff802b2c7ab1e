//! How many parameters each kernel of an image has, read from the image itself, so that
//! describing a kernel's parameters makes no failing driver call. CUDA 13.0 drivers (the H200's)
//! have no `cuFuncGetParamCount`. Without a count, the parameters are probed with
//! `cuFuncGetParamInfo` until it answers `CUDA_ERROR_INVALID_VALUE`, and compute-sanitizer reports
//! that answer as an API error in every program that loads a module.
//!
//! The sources, each read with bounds checks (an image is the caller's bytes):
//! - PTX text: each `.entry NAME ( .param …, .param … )` (every `.param` between the
//!   parentheses is one parameter);
//! - a cubin (ELF64): each `.nv.info.NAME` section's `EIATTR_KPARAM_INFO` records, one per
//!   parameter, numbered by their ordinal;
//! - a fatbin: the cubins and PTX texts it carries uncompressed (a compressed entry hides them).
//!
//! A kernel the image does not describe, or describes twice with different counts, is absent
//! from the map. Its parameters are then probed as before.

use std::collections::HashMap;

use crate::image::{u16_at, u32_at, u64_at};

/// The parameter counts of the kernels `image` describes, by kernel name.
pub(crate) fn param_counts(image: &[u8]) -> HashMap<String, usize> {
    let mut counts = Counts::default();
    if image.starts_with(ELF_MAGIC) {
        elf_counts(image, &mut counts);
    } else if image.starts_with(&FATBIN_MAGIC) {
        let mut at = 0;
        while let Some(i) = find(&image[at..], ELF_MAGIC) {
            elf_counts(&image[at + i..], &mut counts);
            at += i + 1;
        }
        ptx_counts(image, &mut counts);
    } else {
        ptx_counts(image, &mut counts);
    }
    counts.into_map()
}

const ELF_MAGIC: &[u8] = b"\x7fELF";
/// A fatbin's magic number (`0xBA55ED50`, little-endian).
const FATBIN_MAGIC: [u8; 4] = [0x50, 0xED, 0x55, 0xBA];
/// `.nv.info` record formats: a 4-byte record, or (`EIFMT_SVAL`) a 4-byte header whose last two
/// bytes are the length of the data that follows.
const EIFMT_SVAL: u8 = 0x04;
/// The `.nv.info` attribute describing one kernel parameter (index, ordinal, offset, size).
const EIATTR_KPARAM_INFO: u8 = 0x17;

/// Counts found so far; a name found twice with different counts is marked ambiguous.
#[derive(Default)]
struct Counts(HashMap<String, Option<usize>>);

impl Counts {
    fn add(&mut self, name: &str, count: usize) {
        let entry = self.0.entry(name.to_owned()).or_insert(Some(count));
        if *entry != Some(count) {
            *entry = None;
        }
    }

    fn into_map(self) -> HashMap<String, usize> {
        self.0.into_iter().filter_map(|(name, count)| Some((name, count?))).collect()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'.'
}

/// PTX: every `.entry` directive and the `.param`s between its parentheses.
fn ptx_counts(text: &[u8], counts: &mut Counts) {
    let mut at = 0;
    while let Some(i) = find(&text[at..], b".entry") {
        let start = at + i;
        at = start + b".entry".len();
        // A whole directive: not the end of a longer name, and followed by white space.
        if start > 0 && is_ident(text[start - 1]) || !text.get(at).is_some_and(u8::is_ascii_whitespace) {
            continue;
        }
        let rest = &text[at..];
        let Some(name_start) = rest.iter().position(|b| !b.is_ascii_whitespace()) else { return };
        let name_len = rest[name_start..].iter().position(|&b| !is_ident(b)).unwrap_or(rest.len() - name_start);
        if name_len == 0 {
            continue;
        }
        let name = &rest[name_start..name_start + name_len];
        let after = &rest[name_start + name_len..];
        let Some(next) = after.iter().position(|b| !b.is_ascii_whitespace()) else { return };
        let count = if after[next] == b'(' {
            let Some(close) = after[next..].iter().position(|&b| b == b')') else { return };
            let list = &after[next + 1..next + close];
            let mut n = 0;
            let mut p = 0;
            while let Some(j) = find(&list[p..], b".param") {
                let s = p + j;
                p = s + b".param".len();
                if (s == 0 || !is_ident(list[s - 1])) && list.get(p).is_none_or(|&b| !is_ident(b)) {
                    n += 1;
                }
            }
            n
        } else {
            0
        };
        if let Ok(name) = std::str::from_utf8(name) {
            counts.add(name, count);
        }
    }
}

/// A cubin (64-bit little-endian ELF): the `EIATTR_KPARAM_INFO` records of each
/// `.nv.info.NAME` section. Anything out of bounds ends the reading quietly.
fn elf_counts(elf: &[u8], counts: &mut Counts) {
    let _ = (|| -> Option<()> {
        // ELFCLASS64, little-endian.
        if elf.get(4) != Some(&2) || elf.get(5) != Some(&1) {
            return None;
        }
        let shoff = usize::try_from(u64_at(elf, 0x28)?).ok()?;
        let shentsize = usize::from(u16_at(elf, 0x3A)?);
        let shnum = usize::from(u16_at(elf, 0x3C)?);
        let shstrndx = usize::from(u16_at(elf, 0x3E)?);
        if shentsize < 0x28 {
            return None;
        }
        let section = |i: usize| -> Option<(u32, &[u8])> {
            let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
            let name = u32_at(elf, h)?;
            let offset = usize::try_from(u64_at(elf, h + 0x18)?).ok()?;
            let size = usize::try_from(u64_at(elf, h + 0x20)?).ok()?;
            Some((name, elf.get(offset..offset.checked_add(size)?)?))
        };
        let (_, names) = section(shstrndx)?;
        for i in 0..shnum {
            let Some((name_at, data)) = section(i) else { continue };
            let Some(name) = names.get(name_at as usize..) else { continue };
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            let Some(kernel) = name.strip_prefix(b".nv.info.") else { continue };
            let Some(count) = kparam_count(data) else { continue };
            if let Ok(kernel) = std::str::from_utf8(kernel) {
                counts.add(kernel, count);
            }
        }
        Some(())
    })();
}

/// The parameters an `.nv.info.NAME` section describes: one more than the highest ordinal of its
/// `EIATTR_KPARAM_INFO` records (0 without any). `None` for a section that does not parse.
fn kparam_count(mut data: &[u8]) -> Option<usize> {
    let mut count = 0usize;
    while !data.is_empty() {
        let (format, attribute) = (*data.first()?, *data.get(1)?);
        let len = if format == EIFMT_SVAL { 4 + usize::from(u16_at(data, 2)?) } else { 4 };
        let record = data.get(..len)?;
        if attribute == EIATTR_KPARAM_INFO {
            if format != EIFMT_SVAL {
                return None;
            }
            // Data: index (u32), ordinal (u16), offset (u16), flags (u32).
            let ordinal = usize::from(u16_at(record, 8)?);
            count = count.max(ordinal + 1);
        }
        data = &data[len..];
    }
    Some(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_entries_are_counted() {
        let ptx = b"// .entry in_a_comment_is_not_followed_by_a_list\n\
            .version 8.0\n.target sm_90\n\
            .visible .entry vector_add_f32(\n\t.param .u64 a,\n\t.param .u64 b,\n\t.param .u64 c,\n\t.param .u32 n\n)\n{ ret; }\n\
            .visible .entry empty()\n{ ret; }\n\
            .entry bare\n.maxntid 32, 1, 1\n{ ret; }\n\
            .visible .entry big(.param .align 8 .b8 big_param_0[64], .param .u32 big_param_1) { ret; }\n\
            .func helper(.param .u32 x) { ret; }\n";
        let counts = param_counts(ptx);
        assert_eq!(counts.get("vector_add_f32"), Some(&4));
        assert_eq!(counts.get("empty"), Some(&0));
        assert_eq!(counts.get("bare"), Some(&0));
        assert_eq!(counts.get("big"), Some(&2));
        assert_eq!(counts.get("helper"), None, "a .func is no kernel");
        assert_eq!(counts.get("in_a_comment_is_not_followed_by_a_list"), Some(&0));
    }

    #[test]
    fn the_builtin_program_is_described() {
        let counts = param_counts(crate::BUILTIN_PTX.as_bytes());
        for kernel in ["vector_add_f32", "reduce_sum_f32", "empty", "spin_cycles"] {
            assert!(counts.contains_key(kernel), "{kernel} not found");
        }
        assert_eq!(counts["empty"], 0);
    }

    #[test]
    fn a_kernel_described_twice_differently_is_left_to_the_driver() {
        let counts = param_counts(b".entry k(.param .u32 a) {}\n.entry k(.param .u32 a, .param .u32 b) {}\n");
        assert!(counts.is_empty());
    }

    /// A minimal ELF64 with a section-name table and one `.nv.info.k` section.
    fn cubin(info: &[u8]) -> Vec<u8> {
        let names = b"\0.shstrtab\0.nv.info.k\0";
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(ELF_MAGIC);
        elf[4] = 2;
        elf[5] = 1;
        let names_at = elf.len();
        elf.extend_from_slice(names);
        let info_at = elf.len();
        elf.extend_from_slice(info);
        let shoff = elf.len();
        elf[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
        elf[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3C..0x3E].copy_from_slice(&3u16.to_le_bytes());
        elf[0x3E..0x40].copy_from_slice(&1u16.to_le_bytes());
        let header = |name: u32, offset: usize, size: usize| {
            let mut h = vec![0u8; 64];
            h[..4].copy_from_slice(&name.to_le_bytes());
            h[0x18..0x20].copy_from_slice(&(offset as u64).to_le_bytes());
            h[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
            h
        };
        elf.extend(header(0, 0, 0));
        elf.extend(header(1, names_at, names.len()));
        elf.extend(header(11, info_at, info.len()));
        elf
    }

    fn kparam(ordinal: u16) -> Vec<u8> {
        let mut r = vec![EIFMT_SVAL, EIATTR_KPARAM_INFO, 12, 0, 0, 0, 0, 0];
        r.extend_from_slice(&ordinal.to_le_bytes());
        r.extend_from_slice(&[0, 0, 0, 0, 0x1f, 0]);
        r
    }

    #[test]
    fn cubin_parameters_are_counted_by_ordinal() {
        let mut info = vec![0x03, 0x1b, 0xff, 0x00]; // a 4-byte record (EIFMT_HVAL)
        info.extend(kparam(2));
        info.extend(kparam(0));
        info.extend(kparam(1));
        info.extend([EIFMT_SVAL, 0x0a, 4, 0, 1, 2, 3, 4]); // another record with data
        assert_eq!(param_counts(&cubin(&info)).get("k"), Some(&3));
        assert_eq!(param_counts(&cubin(&[0x03, 0x1b, 0xff, 0x00])).get("k"), Some(&0));
        // Inside a fatbin, after its header.
        let mut fatbin = FATBIN_MAGIC.to_vec();
        fatbin.extend([0u8; 60]);
        fatbin.extend(cubin(&kparam(0)));
        assert_eq!(param_counts(&fatbin).get("k"), Some(&1));
    }

    #[test]
    fn broken_images_describe_nothing_and_never_panic() {
        let good = cubin(&kparam(0));
        for end in 0..good.len() {
            let _ = param_counts(&good[..end]);
        }
        let mut truncated_record = cubin(&[EIFMT_SVAL, EIATTR_KPARAM_INFO, 200, 0]);
        assert!(param_counts(&truncated_record).is_empty());
        truncated_record[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(param_counts(&truncated_record).is_empty());
        assert!(param_counts(b".entry").is_empty());
        assert!(param_counts(b".entry k(.param").is_empty());
        assert!(param_counts(b"").is_empty());
    }
}
