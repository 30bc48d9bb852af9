//! The formats an answer can be in: one file each, holding everything that format needs (its
//! row of the formats table and how it writes every kind of answer it is offered for), listed
//! once in [`FORMATS`]. A new format is a new file here and a row in that list; the content
//! negotiation, the `format` parameter's documentation, the OpenAPI document's media types and
//! every endpoint that offers it follow from the row.
//!
//! A format is one of four kinds of encoder ([`Encoder`]): text documents of rows and items
//! ([`TextFormat`]: JSON, CSV, XML, NDJSON, GeoJSON), binary tables ([`TableFormat`]: Arrow
//! IPC, Parquet), charts ([`ChartFormat`]: SVG, PNG), and the pages for people (HTML). The
//! machinery each kind shares (rows into recycled frames, lists streamed item by item, SQL
//! times as text) is [`encode`]'s. The kinds are what the answers differ by: a values answer streams rows
//! through a text or table encoder, plots them for a chart, or lays out a page. A trait per
//! kind rather than one enum matched in every encoder is what keeps a format in one file (the
//! match on the format was spread over seven files); the dynamic call is once per answer, or
//! per batch of rows, never per row.
//!
//! [`encode`]: crate::render::encode

pub mod arrow;
pub mod csv;
pub mod geojson;
pub mod html;
pub mod json;
pub mod ndjson;
pub mod parquet;
pub mod png;
pub mod svg;
#[cfg(test)]
pub mod tsv;
pub mod xml;

use crate::http::negotiate::Representation;
use crate::render::chart::answer::ChartFormat;
use crate::render::encode::catalog::Document;
use crate::render::encode::sql::SqlText;
use crate::render::encode::{BatchEncoder, EncodeError, Envelope, TableFormat, TextFormat};
use crate::render::timefmt::TimeFormatter;
use datafusion::arrow::datatypes::SchemaRef;
use hydro_engine::ReadAhead;

/// Every format, in the order `format=` lists them; an answer's default format is the first
/// that offers it.
pub const FORMATS: &[Format] = &[
    json::JSON,
    csv::CSV,
    geojson::GEOJSON,
    xml::XML,
    ndjson::NDJSON,
    arrow::ARROW,
    parquet::PARQUET,
    svg::SVG,
    png::PNG,
    html::HTML,
    #[cfg(test)]
    tsv::TSV,
];

/// The kinds of answer, by what a format must be able to show: each format's row says which
/// it offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The landing page and the OpenAPI document: JSON, or a page for people.
    Landing,
    /// Stations, a list or one (GeoJSON: points).
    Stations,
    /// Parameters and characteristic values: lists and single items.
    Catalog,
    /// A series' values.
    Values,
    /// Many series' values in one answer (`/v1/values`).
    ManyValues,
    /// The same, its selection sent in a POST body (too long for a URL): the data formats, not
    /// the charts, which are images a page links to with a URL.
    PostedValues,
    /// The newest value of each series (`/v1/latest`, with coordinates).
    Latest,
    /// Statistics of a series (`…/statistics`): tables of numbers, charts, a page.
    Statistics,
    /// Many series' statistics (`/v1/statistics`): a page shows one series' alone.
    ManyStatistics,
    /// Many series' statistics, the selection sent in a POST body: the data formats.
    PostedStatistics,
    /// The rows of a SQL query (`/v1/sql`): tables of any columns.
    Sql,
}

/// The answers the data formats show: every one but the landing page.
pub const DATA: &[Answer] = &[
    Answer::Stations,
    Answer::Catalog,
    Answer::Values,
    Answer::ManyValues,
    Answer::PostedValues,
    Answer::Statistics,
    Answer::ManyStatistics,
    Answer::PostedStatistics,
    Answer::Latest,
    Answer::Sql,
];

/// What writes a format's bytes: the kinds of encoder, by the kind of body they make.
#[derive(Clone, Copy)]
pub enum Encoder {
    /// Documents of rows or items as text, streamed.
    Text(&'static dyn TextFormat),
    /// Tables of typed columns.
    Table(&'static dyn TableFormat),
    /// A chart of values or statistics.
    Chart(&'static dyn ChartFormat),
    /// A page for people with a browser (`render::html`).
    Page,
}

/// A row of the formats table: everything the server knows of a format.
pub struct Spec {
    /// Its name in `format=`.
    pub short: &'static str,
    pub media_type: &'static str,
    /// Other media types clients send for it (in `Accept` or `format`).
    pub aliases: &'static [&'static str],
    /// Whether it is text (`charset=utf-8`).
    pub text: bool,
    /// Whether a content coding may shrink it (not so for formats compressed already: Parquet
    /// pages are LZ4, and gzip on top saved a tenth of the bytes for five times the time).
    pub compressible: bool,
    /// The file extension it is offered under as a download, if it is offered as a file.
    pub attachment: Option<&'static str>,
    /// The answers it can show.
    pub offered: &'static [Answer],
    pub encoder: Encoder,
    /// How the OpenAPI document describes its bodies.
    pub schema: Schema,
}

/// How the OpenAPI document describes a format's bodies.
#[derive(Debug, Clone, Copy)]
pub enum Schema {
    /// By the JSON Schema of the answer (`schemas/`).
    Answer,
    /// By this JSON Schema, the same for every answer.
    Fixed(fn() -> serde_json::Value),
    /// As text.
    Text,
    /// As bytes.
    Binary,
}

/// A format: a row of [`FORMATS`].
#[derive(Clone, Copy)]
pub struct Format(&'static Spec);

impl Format {
    pub const JSON: Format = json::JSON;
    pub const CSV: Format = csv::CSV;
    pub const HTML: Format = html::HTML;

    /// A format of the row `spec` (each format's file makes its own).
    pub const fn of(spec: &'static Spec) -> Self {
        Self(spec)
    }

    pub fn short(self) -> &'static str {
        self.0.short
    }

    pub fn media_type(self) -> &'static str {
        self.0.media_type
    }

    pub fn encoder(self) -> Encoder {
        self.0.encoder
    }

    /// Whether it is a chart (an image of the values).
    pub fn is_chart(self) -> bool {
        matches!(self.0.encoder, Encoder::Chart(_))
    }

    /// Whether it is a page for people.
    pub fn is_page(self) -> bool {
        matches!(self.0.encoder, Encoder::Page)
    }

    /// Whether it is a table of typed columns (Arrow IPC, Parquet): catalog answers made
    /// whole, since a table's columns are typed by all its rows.
    pub fn is_table(self) -> bool {
        matches!(self.0.encoder, Encoder::Table(_))
    }

    /// Whether its documents are tables of named columns that must be known before the first
    /// item (CSV).
    pub fn names_columns(self) -> bool {
        match self.0.encoder {
            Encoder::Text(text) => text.names_columns(),
            _ => false,
        }
    }

    /// Whether the stored row groups of the values may be sent as they are (Parquet).
    pub fn takes_stored_row_groups(self) -> bool {
        match self.0.encoder {
            Encoder::Table(t) => t.takes_stored_row_groups(),
            _ => false,
        }
    }

    /// How the engine should read ahead for this format's encoder: text encoders hand
    /// batches to tasks of their own, which interleave with decoding best a month at a time;
    /// a table encoder may take months in groups (see [`ReadAhead`]).
    pub fn read_ahead(self) -> ReadAhead {
        match self.0.encoder {
            Encoder::Table(t) => t.read_ahead(),
            _ => ReadAhead::Monthly,
        }
    }

    /// The `Content-Type` header: text types carry `charset=utf-8`.
    pub fn content_type(self) -> String {
        if self.0.text {
            format!("{}; charset=utf-8", self.0.media_type)
        } else {
            self.0.media_type.to_owned()
        }
    }

    /// Whether a content coding (gzip, br, zstd) may shrink an answer in this format.
    pub fn compressible(self) -> bool {
        self.0.compressible
    }

    /// The file extension of a download offered as a file (binary tables and CSV).
    pub fn attachment_extension(self) -> Option<&'static str> {
        self.0.attachment
    }

    /// A catalog document (resources, a list or one) in this format, made whole.
    pub fn document(self, doc: &Document<'_>) -> Result<Vec<u8>, EncodeError> {
        match self.0.encoder {
            Encoder::Text(text) => Ok(doc.text(text)),
            Encoder::Table(table) => doc.table(table),
            Encoder::Chart(_) | Encoder::Page => Err(EncodeError::Unexpected(format!(
                "{} does not show resources",
                self.short()
            ))),
        }
    }

    /// The encoder of a SQL answer of `schema` in this format; `envelope`: its `meta`.
    pub fn sql_rows(
        self,
        schema: SchemaRef,
        envelope: &dyn Envelope,
        time: TimeFormatter,
    ) -> Result<Box<dyn BatchEncoder>, EncodeError> {
        match self.0.encoder {
            Encoder::Table(table) => Ok(table.batches(schema)),
            Encoder::Text(text) => Ok(Box::new(SqlText::new(text, &schema, envelope, time)?)),
            Encoder::Chart(_) | Encoder::Page => Err(EncodeError::Unexpected(format!(
                "{} does not show rows of SQL",
                self.short()
            ))),
        }
    }

    /// The schema of this format's bodies in the OpenAPI document: `answer`, the JSON Schema of
    /// the operation's answer.
    pub fn openapi_schema(self, answer: &serde_json::Value) -> serde_json::Value {
        match self.0.schema {
            Schema::Answer => answer.clone(),
            Schema::Fixed(schema) => schema(),
            Schema::Text => serde_json::json!({"type": "string"}),
            Schema::Binary => serde_json::json!({"type": "string", "format": "binary"}),
        }
    }

    /// Whether `answer` may be given in this format.
    pub fn offers(self, answer: Answer) -> bool {
        self.0.offered.contains(&answer)
    }

    /// The formats `answer` is offered in, its default first.
    pub fn offered(answer: Answer) -> Vec<Format> {
        FORMATS
            .iter()
            .copied()
            .filter(|f| f.offers(answer))
            .collect()
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.0.short == other.0.short
    }
}

impl Eq for Format {}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.short)
    }
}

impl Representation for Format {
    fn short(self) -> &'static str {
        self.0.short
    }

    fn media_type(self) -> &'static str {
        self.0.media_type
    }

    fn aliases(self) -> &'static [&'static str] {
        self.0.aliases
    }

    /// `text/*` asks for a table of text: a format under `text/` (or known by an alias
    /// there), but not a page.
    fn is_text(self) -> bool {
        !self.is_page()
            && std::iter::once(self.0.media_type)
                .chain(self.0.aliases.iter().copied())
                .any(|m| m.starts_with("text/"))
    }
}

/// Picks the format of an answer among `offered` (the first is the default): `format` (a short
/// name or a media type) wins over `Accept`.
pub fn choose(
    format_param: Option<&str>,
    accept: Option<&str>,
    offered: &[Format],
) -> Result<Format, crate::http::error::ApiError> {
    crate::http::negotiate::choose(format_param, accept, offered, FORMATS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Answer::*;

    fn shorts(formats: &[Format]) -> Vec<&'static str> {
        formats.iter().map(|f| f.short()).collect()
    }

    #[test]
    fn the_table_says_what_each_answer_offers() {
        assert_eq!(shorts(&Format::offered(Landing)), ["json", "html"]);
        assert_eq!(
            shorts(&Format::offered(Values)),
            [
                "json", "csv", "xml", "ndjson", "arrow", "parquet", "svg", "png", "html", "tsv"
            ]
        );
        assert_eq!(
            shorts(&Format::offered(Sql)),
            ["json", "csv", "ndjson", "arrow", "parquet", "tsv"]
        );
        let names: Vec<&str> = FORMATS.iter().map(|f| f.short()).collect();
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(names, unique, "a short name twice");
    }

    #[test]
    fn media_types_and_aliases_name_their_format() {
        let offered = Format::offered(Values);
        for (asked, format) in [
            ("text/xml", "xml"),
            ("application/jsonl", "ndjson"),
            ("application/x-parquet", "parquet"),
            ("csv", "csv"),
        ] {
            assert_eq!(choose(Some(asked), None, &offered).unwrap().short(), format);
        }
        assert_eq!(choose(None, Some("text/*"), &offered).unwrap(), Format::CSV);
        let xml_first = [xml::XML, Format::CSV];
        assert_eq!(choose(None, Some("text/*"), &xml_first).unwrap(), xml::XML);
        assert!(choose(None, Some("text/*"), &[Format::HTML]).is_err());
    }
}
