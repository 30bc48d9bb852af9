//! Just enough of Thrift's compact protocol to walk a Parquet footer and copy it in pieces:
//! field headers, varints and skipping values. The parquet crate's own Thrift code is private
//! to it, and a general Thrift library would decode every field to write it out again, where
//! copying a footer changes only a few offsets in it (see `assembly`).

use crate::error::{EngineError, Result};

pub(crate) const BOOL_TRUE: u8 = 1;
pub(crate) const BOOL_FALSE: u8 = 2;
pub(crate) const BYTE: u8 = 3;
pub(crate) const I16: u8 = 4;
pub(crate) const I32: u8 = 5;
pub(crate) const I64: u8 = 6;
pub(crate) const DOUBLE: u8 = 7;
pub(crate) const BINARY: u8 = 8;
pub(crate) const LIST: u8 = 9;
pub(crate) const SET: u8 = 10;
pub(crate) const MAP: u8 = 11;
pub(crate) const STRUCT: u8 = 12;

/// Structs nest this deep at most in a Parquet footer (statistics inside a column's metadata
/// inside a row group); more means a corrupt or hostile footer.
const MAX_DEPTH: usize = 32;

fn corrupt(what: &str) -> EngineError {
    EngineError::corrupt(format!("Parquet footer: {what}"))
}

/// A position in compact-protocol bytes.
pub(crate) struct Reader<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], pos: usize) -> Self {
        Self { buf, pos }
    }

    fn byte(&mut self) -> Result<u8> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| corrupt("ends early"))?;
        self.pos += 1;
        Ok(b)
    }

    fn advance(&mut self, n: usize) -> Result<()> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        self.pos = end.ok_or_else(|| corrupt("ends early"))?;
        Ok(())
    }

    pub(crate) fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(corrupt("varint too long"))
    }

    /// An i16, i32 or i64 value.
    pub(crate) fn int(&mut self) -> Result<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// The next field of a struct whose last field so far was `last`: its id and type, or
    /// `None` at the struct's end.
    pub(crate) fn field(&mut self, last: &mut i16) -> Result<Option<(i16, u8)>> {
        let header = self.byte()?;
        if header == 0 {
            return Ok(None);
        }
        let delta = header >> 4;
        let id = if delta == 0 {
            i16::try_from(self.int()?).map_err(|_| corrupt("field id out of range"))?
        } else {
            last.checked_add(i16::from(delta))
                .ok_or_else(|| corrupt("field id out of range"))?
        };
        *last = id;
        Ok(Some((id, header & 0x0f)))
    }

    /// A list's (or set's) length and element type.
    pub(crate) fn list(&mut self) -> Result<(usize, u8)> {
        let header = self.byte()?;
        let short = usize::from(header >> 4);
        let len = if short == 15 {
            usize::try_from(self.varint()?).map_err(|_| corrupt("list too long"))?
        } else {
            short
        };
        // Every element takes a byte at least: a longer list cannot be in the bytes left.
        if len > self.buf.len() - self.pos {
            return Err(corrupt("list longer than the footer"));
        }
        Ok((len, header & 0x0f))
    }

    /// Skips a value of type `ty`; `in_list`: an element of a list, where a bool takes a byte
    /// (as a field it is all in the field's header).
    pub(crate) fn skip(&mut self, ty: u8, in_list: bool) -> Result<()> {
        self.skip_at(ty, in_list, 0)
    }

    fn skip_at(&mut self, ty: u8, in_list: bool, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(corrupt("nested too deeply"));
        }
        match ty {
            BOOL_TRUE | BOOL_FALSE if in_list => self.advance(1),
            BOOL_TRUE | BOOL_FALSE => Ok(()),
            BYTE => self.advance(1),
            I16 | I32 | I64 => self.varint().map(drop),
            DOUBLE => self.advance(8),
            BINARY => {
                let len =
                    usize::try_from(self.varint()?).map_err(|_| corrupt("binary too long"))?;
                self.advance(len)
            }
            LIST | SET => {
                let (len, elem) = self.list()?;
                (0..len).try_for_each(|_| self.skip_at(elem, true, depth + 1))
            }
            MAP => {
                let len = usize::try_from(self.varint()?).map_err(|_| corrupt("map too long"))?;
                if len == 0 {
                    return Ok(());
                }
                let types = self.byte()?;
                for _ in 0..len {
                    self.skip_at(types >> 4, true, depth + 1)?;
                    self.skip_at(types & 0x0f, true, depth + 1)?;
                }
                Ok(())
            }
            STRUCT => {
                let mut last = 0;
                while let Some((_, ty)) = self.field(&mut last)? {
                    self.skip_at(ty, false, depth + 1)?;
                }
                Ok(())
            }
            _ => Err(corrupt("unknown type")),
        }
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// An i16, i32 or i64 value.
pub(crate) fn put_int(out: &mut Vec<u8>, v: i64) {
    put_varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// The header of field `id` of type `ty`, after field `last`.
pub(crate) fn put_field(out: &mut Vec<u8>, last: i16, id: i16, ty: u8) {
    match id - last {
        delta @ 1..=15 => out.push((delta as u8) << 4 | ty),
        _ => {
            out.push(ty);
            put_int(out, i64::from(id));
        }
    }
}

/// The header of a list of `len` elements of type `ty`.
pub(crate) fn put_list(out: &mut Vec<u8>, len: usize, ty: u8) {
    if len < 15 {
        out.push((len as u8) << 4 | ty);
    } else {
        out.push(0xf0 | ty);
        put_varint(out, len as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_and_headers_read_back() {
        let mut out = Vec::new();
        let values = [
            0,
            1,
            -1,
            63,
            -64,
            64,
            i64::from(i32::MAX),
            i64::MIN,
            i64::MAX,
        ];
        for v in values {
            put_int(&mut out, v);
        }
        put_field(&mut out, 0, 3, I64);
        put_field(&mut out, 3, 40, LIST);
        put_list(&mut out, 20, STRUCT);
        let mut r = Reader::new(&out, 0);
        for v in values {
            assert_eq!(r.int().unwrap(), v);
        }
        let mut last = 0;
        assert_eq!(r.field(&mut last).unwrap(), Some((3, I64)));
        assert_eq!(r.field(&mut last).unwrap(), Some((40, LIST)));
        // 20 elements cannot fit in what is left.
        assert!(r.list().is_err());
    }

    #[test]
    fn truncated_and_hostile_bytes_are_errors() {
        // A struct field that never ends, a varint that never ends, nesting without end.
        for bytes in [&[0x1c][..], &[0x16, 0xff, 0xff], &[0x1c; 200]] {
            assert!(Reader::new(bytes, 0).skip(STRUCT, false).is_err());
        }
    }
}
