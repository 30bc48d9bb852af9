//! Encoders, one per format. Value encoders take the engine's parts (Arrow record batches,
//! or for Parquet also stored row groups) and return the body frames of each piece;
//! catalog encoders take the (small) list of JSON resources.

pub mod binary;
pub mod catalog;
mod number;
mod recycled;
pub mod sql;
pub mod table;
pub mod text;

pub use crate::render::out::{Appender, Out, SHORT, json_string, padded};
pub use number::number;

use bytes::Bytes;
use hydro_engine::EngineError;
use hydro_engine::arrow::error::ArrowError;
use hydro_engine::query::AnswerPart;

/// Why an encoder could not make an answer's bytes. All are faults of the server (or of the
/// data it read), never of the request: the answer's status line has usually gone out.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("arrow: {0}")]
    Arrow(#[from] ArrowError),
    #[error("parquet: {0}")]
    Parquet(#[from] datafusion::parquet::errors::ParquetError),
    /// Copying a stored row group (its footer parts) failed.
    #[error("stored row group: {0}")]
    Stored(#[from] EngineError),
    /// The answer's parts are not what the format can take (a batch of the wrong shape, a
    /// stored row group for a format that decodes).
    #[error("{0}")]
    Unexpected(String),
    /// A part or the end of an answer before its beginning.
    #[error("the encoder was not started")]
    NotStarted,
}

/// An answer that could not be encoded before its status line: the server's fault.
impl From<EncodeError> for crate::http::error::ApiError {
    fn from(e: EncodeError) -> Self {
        Self::Internal(format!("encoding: {e}"))
    }
}

/// Turns the parts of an answer, in order, into body bytes (the binary formats, whose
/// writers carry state from piece to piece).
pub trait BatchEncoder: Send {
    /// Frames before the first row (Arrow schema, Parquet magic).
    fn begin(&mut self) -> Result<Vec<Bytes>, EncodeError>;
    /// Frames of a piece; stored Parquet chunks are frames of their own, sent as read.
    fn piece(&mut self, piece: AnswerPart) -> Result<Vec<Bytes>, EncodeError>;
    /// Frames after the last row (Parquet footer).
    fn finish(&mut self) -> Result<Vec<Bytes>, EncodeError>;
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
    }
}
