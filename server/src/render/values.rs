//! The body of a values answer (one series or many) in any format but the charts and pages:
//! Arrow IPC and Parquet through their stateful encoders, the text formats through
//! [`ValuesText`] on both cores (see [`stream`]), JSON and XML inside their envelope.

use crate::http::body::Body;
use crate::http::negotiate::Format;
use crate::render::encode::catalog::xml_head;
use crate::render::encode::{binary, text::ValuesText};
use crate::render::envelope::{Meta, Pagination};
use crate::render::stream;
use crate::render::timefmt::TimeFormatter;
use datafusion::arrow::datatypes::SchemaRef;
use hydro_engine::query::ReadAhead;
use serde_json::Value;

/// Arrow IPC sends each batch's columns as they are, on the answer's own task, so decoding is
/// the work and months are read in groups; text encoders hand batches to tasks of their own,
/// which interleave with decoding best a month at a time (see [`ReadAhead`]).
pub fn read_ahead(format: Format) -> ReadAhead {
    match format {
        Format::Arrow => ReadAhead::Grouped,
        _ => ReadAhead::Monthly,
    }
}

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

/// The body of a values answer (one series or many): Arrow IPC and Parquet through their
/// stateful encoders, the text formats through [`ValuesText`], JSON and XML inside their
/// envelope, whose `links` (`links`) are built only for them.
pub fn values_body(
    answer: ValuesBody<'_>,
    parts: stream::Parts,
    links: impl FnOnce() -> Option<Value>,
    held: stream::DownloadGuard,
) -> Body {
    let ValuesBody {
        format,
        schema,
        columns,
        meta,
        meta_schema,
        dataset_version,
        page,
        time,
    } = answer;
    let text =
        |head: Vec<u8>, tail: &[u8]| ValuesText::new(format, columns, head, tail.to_vec(), time);
    match format {
        Format::Arrow => stream::sequential(parts, Box::new(binary::ArrowIpc::new(schema)), held),
        Format::Parquet => stream::sequential(parts, Box::new(binary::Parquet::new(schema)), held),
        Format::Xml => {
            let meta = meta.value(meta_schema, dataset_version, page);
            let head = xml_head(&meta, links().as_ref());
            stream::text(parts, text(head, b"</data></response>"), held)
        }
        Format::Json => {
            let mut head = b"{\"meta\":".to_vec();
            head.extend_from_slice(meta.json(meta_schema, dataset_version, page).as_bytes());
            if let Some(l) = links() {
                head.extend_from_slice(b",\"links\":");
                head.extend_from_slice(l.to_string().as_bytes());
            }
            head.extend_from_slice(b",\"data\":[");
            stream::text(parts, text(head, b"]}"), held)
        }
        _ => stream::text(parts, text(Vec::new(), b""), held),
    }
}
