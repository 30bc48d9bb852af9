//! Encoders, one per format. Value encoders take the engine's pieces (Arrow record batches,
//! or for Parquet also stored row groups) and return the body frames of each piece;
//! catalog encoders take the (small) list of JSON resources.

pub mod binary;
pub mod catalog;
pub mod text;

use bytes::Bytes;
use hydro_engine::stored::Piece;

/// Turns the pieces of an answer, in order, into body bytes (the binary formats, whose
/// writers carry state from piece to piece).
pub trait BatchEncoder: Send {
    /// Frames before the first row (Arrow schema, Parquet magic).
    fn begin(&mut self) -> Result<Vec<Bytes>, String>;
    /// Frames of a piece; stored Parquet chunks are frames of their own, sent as read.
    fn piece(&mut self, piece: Piece) -> Result<Vec<Bytes>, String>;
    /// Frames after the last row (Parquet footer).
    fn finish(&mut self) -> Result<Vec<Bytes>, String>;
}

/// Escapes a string for JSON (quotes included).
pub fn json_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let mut start = 0;
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let esc: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0..=0x1f => None,
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        match esc {
            Some(e) => out.extend_from_slice(e),
            None => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Where text is appended: a `Vec`, or an [`Appender`] in the row loop.
pub trait Out {
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]);
    /// Appends the first `len` bytes of `bytes` with one copy of a fixed size: a copy of a
    /// length known only at run time is a call to libc's `memmove`, and a CSV row made six of
    /// them (`memmove` was 14 % of a CSV download in `perf`). Writes all N bytes, so N bytes
    /// must be room.
    fn put_fixed<const N: usize>(&mut self, bytes: &[u8; N], len: usize);
}

impl Out for Vec<u8> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    #[inline]
    fn put_fixed<const N: usize>(&mut self, bytes: &[u8; N], len: usize) {
        let at = self.len();
        self.extend_from_slice(bytes);
        self.truncate(at + len.min(N));
    }
}

/// Appends into a buffer, keeping the position in a register. A `Vec` stores its length after
/// every append and loads it for the next; a CSV row is eight appends, each waiting for the
/// store of the one before, and that chain was the longest path through the row loop.
pub struct Appender<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Appender<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes left.
    pub fn room(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// What was appended.
    pub fn appended(&self) -> &[u8] {
        &self.buf[..self.pos]
    }
}

impl Out for Appender<'_> {
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }

    #[inline(always)]
    fn put_fixed<const N: usize>(&mut self, bytes: &[u8; N], len: usize) {
        self.buf[self.pos..self.pos + N].copy_from_slice(bytes);
        self.pos += len.min(N);
    }
}

/// A finite float in the shortest form that reads back exactly (ryu); integral values get
/// no `.0` so that JSON and CSV show `12` as users write it.
#[inline]
pub fn number(v: f64, out: &mut impl Out) {
    if !v.is_finite() {
        out.put(b"null");
        return;
    }
    if let Some((m, decimals)) = short_decimal(v) {
        write_decimal(m, decimals, out);
        return;
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let mut b = itoa::Buffer::new();
        out.put(b.format(v as i64).as_bytes());
        return;
    }
    let mut b = ryu::Buffer::new();
    out.put(b.format_finite(v).as_bytes());
}

/// Byte strings of up to `SHORT` bytes are appended with one copy of a fixed size
/// ([`Out::put_fixed`]).
pub const SHORT: usize = 32;

/// `bytes` at the start of N bytes, zeros after; `bytes` must fit.
pub fn padded<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut b = [0u8; N];
    b[..bytes.len()].copy_from_slice(bytes);
    b
}

/// Bytes written before a cell or after a row, or a dictionary value already escaped.
pub enum Fragment {
    /// Up to eight bytes (a CSV separator, most dictionary values), as the bytes of a
    /// little-endian integer: one 8-byte copy rather than two 16-byte ones (a CSV row is
    /// mostly such copies; 5 % of its time in `benches/encode.rs`).
    Word(u64, usize),
    Short([u8; SHORT], usize),
    Long(Vec<u8>),
}

impl Fragment {
    pub fn new(bytes: Vec<u8>) -> Self {
        if bytes.len() <= 8 {
            Self::Word(u64::from_le_bytes(padded(&bytes)), bytes.len())
        } else if bytes.len() <= SHORT {
            Self::Short(padded(&bytes), bytes.len())
        } else {
            Self::Long(bytes)
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Self::Word(_, n) | Self::Short(_, n) => *n,
            Self::Long(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline(always)]
    pub fn put(&self, out: &mut impl Out) {
        match self {
            Self::Word(w, n) => out.put_fixed(&w.to_le_bytes(), *n),
            Self::Short(b, n) => out.put_fixed(b, *n),
            Self::Long(b) => out.put(b),
        }
    }
}

/// `v` as `m / 10^decimals` with at most three decimals, when that decimal reads back as exactly
/// `v`. Measurements are recorded to a few decimals, and this test is several times cheaper than
/// ryu's general search (which was a fifth of a CSV download's CPU time in `perf`).
///
/// Why it is exact: `m` and `1000` are exact in f64, so `m / 1000` is the correctly rounded value
/// of the decimal, which is what a reader parses it to. Why it is the shortest form (the one ryu
/// prints): below 1e12 two decimals with three places that read back as the same double differ
/// by less than one in the last place, so any shorter form that reads back is `m` without its
/// trailing zeros.
fn short_decimal(v: f64) -> Option<(i64, usize)> {
    if v.abs() >= 1e12 {
        return None;
    }
    let x = v * 1000.0;
    // Round half away from zero with a plain conversion (no libm call); exactness is checked
    // next, so an off-by-one here only costs the fallback.
    let mut m = (x + 0.5f64.copysign(x)) as i64;
    if m as f64 / 1000.0 != v {
        return None;
    }
    let mut decimals = 3;
    while decimals > 0 && m % 10 == 0 {
        m /= 10;
        decimals -= 1;
    }
    Some((m, decimals))
}

/// `m / 10^decimals` in decimal, written backwards into a buffer and appended in one
/// fixed-size copy (see [`SHORT`]).
#[inline(always)]
fn write_decimal(m: i64, decimals: usize, out: &mut impl Out) {
    const POW10: [u64; 16] = {
        let mut p = [1u64; 16];
        let mut i = 1;
        while i < 16 {
            p[i] = p[i - 1] * 10;
            i += 1;
        }
        p
    };
    let mut a = m.unsigned_abs();
    // Constant divisors: a division by a table entry is a hardware divide (tens of cycles).
    let int_part = match decimals {
        0 => a,
        1 => a / 10,
        2 => a / 100,
        _ => a / 1000,
    };
    let int_digits = 1 + POW10[1..].iter().take_while(|&&p| int_part >= p).count();
    // |m| < 1e15: at most 16 digits, a point and a sign, well inside SHORT.
    let len = usize::from(m < 0) + int_digits + if decimals > 0 { decimals + 1 } else { 0 };
    if len <= 8 {
        // Most measurements: built in a register, last character first, so that the first
        // lands in the lowest byte. Digits written to a buffer and read back at once stalled
        // on store forwarding (a fifth of this function in `perf`).
        let mut word = 0u64;
        for _ in 0..decimals {
            word = (word << 8) | (b'0' as u64 + a % 10);
            a /= 10;
        }
        if decimals > 0 {
            word = (word << 8) | b'.' as u64;
        }
        for _ in 0..int_digits {
            word = (word << 8) | (b'0' as u64 + a % 10);
            a /= 10;
        }
        if m < 0 {
            word = (word << 8) | b'-' as u64;
        }
        out.put_fixed(&word.to_le_bytes(), len);
        return;
    }
    let mut buf = [0u8; SHORT];
    let mut pos = len;
    for _ in 0..decimals {
        pos -= 1;
        buf[pos] = b'0' + (a % 10) as u8;
        a /= 10;
    }
    if decimals > 0 {
        pos -= 1;
        buf[pos] = b'.';
    }
    for _ in 0..int_digits {
        pos -= 1;
        buf[pos] = b'0' + (a % 10) as u8;
        a /= 10;
    }
    if m < 0 {
        buf[0] = b'-';
    }
    out.put_fixed(&buf, len);
}

/// Escapes text for XML character data and attributes.
pub fn xml_text(s: &str, out: &mut Vec<u8>) {
    for c in s.chars() {
        match c {
            '&' => out.extend_from_slice(b"&amp;"),
            '<' => out.extend_from_slice(b"&lt;"),
            '>' => out.extend_from_slice(b"&gt;"),
            '"' => out.extend_from_slice(b"&quot;"),
            '\'' => out.extend_from_slice(b"&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => {}
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

/// A CSV field per RFC 4180: quoted when it holds a comma, quote or line break.
pub fn csv_field(s: &str, out: &mut Vec<u8>) {
    if s.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        out.push(b'"');
        out.extend_from_slice(s.replace('"', "\"\"").as_bytes());
        out.push(b'"');
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        let mut o = Vec::new();
        json_string("a\"b\\c\u{1}", &mut o);
        assert_eq!(String::from_utf8(o).unwrap(), r#""a\"b\\c\u0001""#);
        let mut o = Vec::new();
        csv_field("a,\"b\"", &mut o);
        assert_eq!(String::from_utf8(o).unwrap(), r#""a,""b""""#);
        let mut o = Vec::new();
        for v in [
            12.0,
            0.1,
            -3.25,
            1e20,
            -0.0,
            -0.5,
            0.001,
            0.0001,
            1e-7,
            466.16,
            2.5e11,
            0.5,
            1024.0,
            99_999_999_999.999,
            99_999.999,
            -100_000.5,
            12_345.678,
            0.0005,
            0.125,
            0.000_976_562_5,
            -7.0,
        ] {
            number(v, &mut o);
            o.push(b' ');
        }
        assert_eq!(
            String::from_utf8(o).unwrap(),
            "12 0.1 -3.25 1e20 0 -0.5 0.001 0.0001 1e-7 466.16 250000000000 0.5 1024 99999999999.999 \
             99999.999 -100000.5 12345.678 0.0005 0.125 0.0009765625 -7 "
        );
    }

    /// Both ways of writing a decimal (in a register, and through a buffer) agree with `format!`
    /// on every length of integer and fraction part, both signs.
    #[test]
    fn decimals_match_format() {
        let mut ms: Vec<i64> = (0..20_000).collect();
        for p in 1..16 {
            let t = 10i64.pow(p);
            ms.extend([t - 1, t, t + 1, t + 7 * (t / 10), 3 * t - 1]);
        }
        for m in ms.into_iter().flat_map(|m| [m, -m]) {
            for decimals in 0..=3usize {
                let a = m.unsigned_abs();
                let p = 10u64.pow(decimals as u32);
                let sign = if m < 0 { "-" } else { "" };
                let want = if decimals == 0 {
                    format!("{sign}{a}")
                } else {
                    format!("{sign}{}.{:0w$}", a / p, a % p, w = decimals)
                };
                let mut got = Vec::new();
                write_decimal(m, decimals, &mut got);
                assert_eq!(String::from_utf8(got).unwrap(), want, "{m} / 10^{decimals}");
            }
        }
    }

    /// The fast path prints what ryu prints (its shortest round-trip form), wherever ryu does
    /// not switch to an exponent.
    #[test]
    fn short_decimals_match_ryu() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for i in 0..200_000 {
            let r = next();
            let v = match i % 5 {
                // measured-looking values: up to 3 decimals, any magnitude below 1e12
                0 => {
                    (r % 2_000_000_000) as f64 / [1.0, 10.0, 100.0, 1000.0][(r >> 40) as usize % 4]
                        - 1e6
                }
                1 => (r % 100_000) as f64 / 1000.0,
                // the doubles next to a three-decimal value must not print as it
                2 => {
                    let v = (r % 100_000_000) as f64 / 1000.0;
                    f64::from_bits(if r >> 63 == 0 {
                        v.to_bits() + 1
                    } else {
                        v.to_bits().saturating_sub(1)
                    })
                }
                // powers of two and their neighbours, where the spacing of doubles halves
                3 => {
                    let p = 2f64.powi((r % 50) as i32 - 12);
                    f64::from_bits((p.to_bits() as i64 + (r >> 62) as i64 - 2) as u64)
                }
                _ => f64::from_bits(r),
            };
            if !v.is_finite() {
                continue;
            }
            let mut ours = Vec::new();
            number(v, &mut ours);
            let ours = String::from_utf8(ours).unwrap();
            assert_eq!(ours.parse::<f64>().unwrap(), v, "{ours} does not read back");
            let theirs = ryu::Buffer::new().format_finite(v).to_owned();
            if !theirs.contains('e') {
                let trim = |s: &str| s.trim_end_matches(".0").to_owned();
                assert_eq!(trim(&ours), trim(&theirs), "{v:e}");
            }
        }
    }
}
