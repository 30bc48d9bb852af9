//! The body of a values answer (one series or many) in any format but the charts and pages: a
//! table format's encoder in order, or a text format's rows on both cores (see [`stream`])
//! inside its document.

use crate::http::body::Body;
use crate::render::encode::text::ValuesText;
use crate::render::encode::{EncodeError, Envelope, Head};
use crate::render::envelope::{Meta, Pagination};
use crate::render::format::{Encoder, Format};
use crate::render::stream;
use crate::render::timefmt::TimeFormatter;
use datafusion::arrow::datatypes::SchemaRef;
use serde_json::Value;

/// What a values answer's body is made of besides its rows.
pub struct ValuesBody<'a> {
    pub format: Format,
    pub schema: SchemaRef,
    /// Column names, in order.
    pub columns: Vec<String>,
    /// The `meta` block of envelopes, and the JSON Schema a JSON answer's `meta` names.
    pub meta: &'a Meta,
    pub meta_schema: &'a str,
    /// The dataset version the answer is read from (`meta.datasetVersion`).
    pub dataset_version: &'a str,
    pub page: Option<&'a Pagination>,
    /// How timestamps are written.
    pub time: TimeFormatter,
}

/// A values answer's envelope: `meta` and `links` made only if its format shows them.
struct ValuesEnvelope<'a, 'b> {
    answer: &'b ValuesBody<'a>,
    links: &'b dyn Fn() -> Option<Value>,
}

impl Envelope for ValuesEnvelope<'_, '_> {
    fn meta(&self) -> Value {
        let a = self.answer;
        a.meta.value(a.meta_schema, a.dataset_version, a.page)
    }

    fn meta_json(&self) -> String {
        let a = self.answer;
        a.meta.json(a.meta_schema, a.dataset_version, a.page)
    }

    fn links(&self) -> Option<Value> {
        (self.links)()
    }
}

/// The body of a values answer (one series or many): a table format's encoder, or a text
/// format's rows inside its document, whose `links` (`links`) are built only if it shows
/// them.
pub fn values_body(
    answer: ValuesBody<'_>,
    parts: stream::Parts,
    links: &dyn Fn() -> Option<Value>,
    held: stream::DownloadGuard,
) -> Result<Body, EncodeError> {
    match answer.format.encoder() {
        Encoder::Table(table) => Ok(stream::sequential(
            parts,
            table.batches(answer.schema),
            held,
        )),
        Encoder::Text(text) => {
            let envelope = ValuesEnvelope {
                answer: &answer,
                links,
            };
            let (head, tail) = text.document(&Head {
                envelope: &envelope,
                columns: &answer.columns,
            });
            let ValuesBody { columns, time, .. } = answer;
            let rows = ValuesText::new(text, columns, head, tail, time)?;
            Ok(stream::text(parts, rows, held))
        }
        Encoder::Chart(_) | Encoder::Page => Err(EncodeError::Unexpected(format!(
            "{} is not a format of rows",
            answer.format.short()
        ))),
    }
}
