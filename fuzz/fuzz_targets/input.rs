//! The fuzz targets' reader of their input bytes (each target includes this file as a module
//! and adds the size rules of its own calls).
#![allow(dead_code)] // each target reads the widths it needs

/// The input not read yet.
pub struct Input<'a>(pub &'a [u8]);

impl Input<'_> {
    pub fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    pub fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes([self.byte()?, self.byte()?]))
    }
    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes([self.byte()?, self.byte()?, self.byte()?, self.byte()?]))
    }
}
