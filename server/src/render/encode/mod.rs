//! The encoders' machinery, whatever the format: the kinds of encoder a format is
//! ([`TextFormat`], [`TableFormat`]; charts are `render::chart`'s), value rows written into
//! recycled frames ([`text`]), catalog documents and lists ([`catalog`]), SQL rows ([`sql`]),
//! catalog items as a table ([`table`]), numbers ([`number`]). What each format writes is its
//! own file's, in `render::format`.

pub mod catalog;
mod number;
mod recycled;
pub mod sql;
pub mod table;
pub mod text;

pub use crate::render::out::{Appender, Out, SHORT, json_string, padded};
pub use number::number;

use bytes::Bytes;
use datafusion::arrow::datatypes::SchemaRef;
use hydro_engine::EngineError;
use hydro_engine::Station;
use hydro_engine::arrow::error::ArrowError;
use hydro_engine::{AnswerPart, ReadAhead};
use serde_json::Value;

/// A text format: documents whose rows (values, aggregates, statistics, SQL) or items
/// (resources) are written one after another between a head and a tail. The rows of values go
/// through [`text::ValuesText`], which asks the format how a row is spelled once per batch and
/// then copies bytes; items are written one by one as [`catalog::ListEncoder`] asks.
pub trait TextFormat: Sync {
    /// The bytes before the first row or item and after the last: the envelope with `meta`
    /// and `links`, the header line.
    fn document(&self, head: &Head<'_>) -> (Vec<u8>, Vec<u8>);

    /// `text` as a cell or a value of this format, escaped.
    fn escape(&self, text: &str, out: &mut Vec<u8>);

    /// Whether its documents are tables of named columns (a header line, a cell per column
    /// in each row), which must be known before the first item is written.
    fn names_columns(&self) -> bool {
        false
    }

    /// How a row of values is spelled, if the format is offered for them (GeoJSON shows
    /// resources only).
    fn rows(&self) -> Option<&dyn Rows> {
        None
    }

    /// Appends a resource of a list: after another one unless `first`.
    fn item(&self, item: &Value, list: &ListShape<'_>, first: bool, out: &mut Vec<u8>);

    /// A resource alone, when the format shows one otherwise than as a list of one (JSON: in
    /// the envelope's `data`; GeoJSON: a feature).
    fn one(&self, _item: &Value, _head: &Head<'_>) -> Option<Vec<u8>> {
        None
    }

    /// Appends an item that `write` writes in its JSON shape, if the format's items are JSON
    /// objects (JSON, NDJSON); false if not, and nothing written.
    fn json_item(
        &self,
        _first: bool,
        _out: &mut Vec<u8>,
        _write: &mut dyn FnMut(&mut Vec<u8>),
    ) -> bool {
        false
    }

    /// Appends a whole station written straight from its fields, without making it a JSON
    /// value first (the bulk download of a catalog); false if the format has no such way.
    fn whole_station(
        &self,
        _station: &Station,
        _distance_km: Option<f64>,
        _list: &ListShape<'_>,
        _first: bool,
        _out: &mut Vec<u8>,
    ) -> bool {
        false
    }

    /// The writer of a SQL answer's rows, whose times come as text already (`schema`): None if
    /// the format is not offered for SQL.
    fn sql(&self, _schema: &SchemaRef, _head: &Head<'_>) -> Option<Box<dyn BatchEncoder>> {
        None
    }
}

/// How a text format spells a row of values: the bytes around its cells, and the cells that
/// are not plain values. [`text::ValuesText`] asks once per batch and folds the constant bytes
/// together, so none of this is called per row.
pub trait Rows: Sync {
    /// The bytes before cell `k` (named `column`); the first cell's open the row.
    fn cell_before(&self, k: usize, column: &str, out: &mut Vec<u8>);

    /// The bytes after the cell named `column`.
    fn cell_after(&self, _column: &str, _out: &mut Vec<u8>) {}

    /// The bytes that end a row.
    fn row_end(&self, out: &mut Vec<u8>);

    /// How a missing cell and a time are written.
    fn cells(&self) -> Cells;

    /// Whether each row opens with a separator from the row before, which the answer's first
    /// row must drop (a JSON array's `,`).
    fn leading_separator(&self) -> bool {
        false
    }
}

/// How a text format writes what is not a plain value.
#[derive(Debug, Clone, Copy)]
pub struct Cells {
    /// A missing number or time.
    pub missing: &'static [u8],
    /// A missing text (a dictionary cell's null).
    pub missing_text: &'static [u8],
    /// Whether times are written in quotes (JSON strings).
    pub quoted_times: bool,
}

/// What a document holds besides its rows or items, made only for the formats that show it.
pub trait Envelope {
    /// `meta`.
    fn meta(&self) -> Value;

    /// `meta` as JSON text, the same as `meta().to_string()`.
    fn meta_json(&self) -> String {
        self.meta().to_string()
    }

    /// `links`, if the answer has them (None in the basic variant).
    fn links(&self) -> Option<Value>;
}

/// An envelope of values made already.
pub struct Given<'a> {
    pub meta: &'a Value,
    pub links: Option<&'a Value>,
}

impl Envelope for Given<'_> {
    fn meta(&self) -> Value {
        self.meta.clone()
    }

    fn links(&self) -> Option<Value> {
        self.links.cloned()
    }
}

/// What a text format needs to write a document's head and tail.
pub struct Head<'a> {
    pub envelope: &'a dyn Envelope,
    /// The document's columns (a CSV header), in order.
    pub columns: &'a [String],
}

/// The shape of the items of a list.
pub struct ListShape<'a> {
    /// The name of an item (an XML element: `station`, `parameter`, ...).
    pub item_name: &'a str,
    /// The columns of a table of items (CSV), as flattened paths.
    pub columns: &'a [String],
}

/// A binary table format: typed columns, no envelope.
pub trait TableFormat: Sync {
    /// The encoder of a table of `schema`, its batches in order.
    fn batches(&self, schema: SchemaRef) -> Box<dyn BatchEncoder>;

    /// Whether stored row groups may be sent as they are (Parquet).
    fn takes_stored_row_groups(&self) -> bool {
        false
    }

    /// How the engine reads ahead for it.
    fn read_ahead(&self) -> ReadAhead {
        ReadAhead::Monthly
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        let mut o = Vec::new();
        json_string("a\"b\\c\u{1}", &mut o);
        assert_eq!(String::from_utf8(o).unwrap(), r#""a\"b\\c\u0001""#);
    }
}
