//! How the encoders append bytes: the [`Out`] trait over a `Vec` or an [`Appender`] that keeps
//! its position in a register, fixed-size copies of short byte strings, and JSON strings
//! escaped alike everywhere. Below every other part of `render` (times and resources write
//! with it too).

/// A JSON string (quotes included) as serde_json writes it, so that every encoder escapes
/// alike: text with nothing to escape (no control character, quote or backslash) copied whole,
/// anything else left to serde_json.
pub fn json_string(s: &str, out: &mut Vec<u8>) {
    if needs_escape(s.as_bytes()) {
        // Writing to a Vec cannot fail.
        let _ = serde_json::to_writer(out, s);
    } else {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }
}

/// Whether `s` has a byte JSON escapes (below 0x20, `"` or a backslash), looked for eight
/// bytes at a time rather than one by one: this function was a fifth of a whole-catalog JSON
/// download's CPU time (`perf`), and that download took about 5 % less time so. Each test is
/// exact for the word as a whole (Bit Twiddling Hacks' `haszero` and `hasless`); bytes of 0x80
/// and above (UTF-8 beyond ASCII) never match.
fn needs_escape(s: &[u8]) -> bool {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES * 0x80;
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * u64::from(n)) & !w & HIGH != 0;
    let has = |w: u64, b: u8| below(w ^ (ONES * u64::from(b)), 1);
    let mut words = s.chunks_exact(8);
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
        if below(w, 0x20) | has(w, b'"') | has(w, b'\\') {
            return true;
        }
    }
    words
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
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

/// Byte strings of up to `SHORT` bytes are appended with one copy of a fixed size
/// ([`Out::put_fixed`]).
pub const SHORT: usize = 32;

/// `bytes` at the start of N bytes, zeros after; `bytes` must fit.
pub fn padded<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut b = [0u8; N];
    b[..bytes.len()].copy_from_slice(bytes);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings with each ASCII byte at each position of a word and its tail, and text
    /// beyond ASCII, are written as serde_json writes them.
    #[test]
    fn texts_are_escaped_as_serde_json_escapes_them() {
        let mut texts: Vec<String> = vec![String::new(), "Köln-Ehrenfeld".into(), "水位".into()];
        for b in 0u8..0x80 {
            for len in [1, 7, 8, 9, 16, 19] {
                for at in 0..len {
                    let mut t = vec![b'a'; len];
                    t[at] = b;
                    texts.push(String::from_utf8(t).unwrap());
                }
            }
        }
        texts.push("Straße \u{7f} ä\u{1f}ö".into());
        for t in &texts {
            let mut ours = Vec::new();
            json_string(t, &mut ours);
            assert_eq!(ours, serde_json::to_vec(t).unwrap(), "{t:?}");
            let plain = t.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\');
            assert_eq!(needs_escape(t.as_bytes()), !plain, "{t:?}");
        }
    }
}
