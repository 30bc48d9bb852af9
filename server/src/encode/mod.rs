//! Encoders, one per format. Value encoders take Arrow record batches straight from the
//! engine and append bytes to a buffer that becomes one body frame per batch; catalog
//! encoders take the (small) list of JSON resources.

pub mod binary;
pub mod catalog;
pub mod text;

use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;

/// Turns a stream of record batches into body bytes.
pub trait BatchEncoder: Send {
    /// Bytes before the first row (envelope head, CSV header, Arrow schema).
    fn begin(&mut self) -> Result<Bytes, String>;
    fn batch(&mut self, batch: &RecordBatch) -> Result<Bytes, String>;
    /// Bytes after the last row (envelope tail, Parquet footer).
    fn finish(&mut self) -> Result<Bytes, String>;
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

/// A finite float in the shortest form that reads back exactly (ryu); integral values get
/// no `.0` so that JSON and CSV show `12` as users write it.
pub fn number(v: f64, out: &mut Vec<u8>) {
    if !v.is_finite() {
        out.extend_from_slice(b"null");
        return;
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let mut b = itoa::Buffer::new();
        out.extend_from_slice(b.format(v as i64).as_bytes());
        return;
    }
    let mut b = ryu::Buffer::new();
    out.extend_from_slice(b.format_finite(v).as_bytes());
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
        for v in [12.0, 0.1, -3.25, 1e20] {
            number(v, &mut o);
            o.push(b' ');
        }
        assert_eq!(String::from_utf8(o).unwrap(), "12 0.1 -3.25 1e20 ");
    }
}
