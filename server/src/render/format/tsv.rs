//! Tab-separated values (`text/tab-separated-values`), a format the tests register to show
//! that a format is this one file and its row in `FORMATS`: a header line, then a row per
//! value or resource, cells separated by tabs. Tabs and line breaks in text become spaces
//! (the IANA registration has no escaping).

use super::{Encoder, Format, Schema, Spec};
use crate::render::encode::{
    BatchEncoder, Cells, EncodeError, Head, ListShape, Rows, TextFormat, number,
};
use crate::render::resources::lookup;
use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::csv::writer::WriterBuilder;
use datafusion::arrow::datatypes::SchemaRef;
use hydro_engine::AnswerPart;
use serde_json::Value;
use std::sync::Arc;

pub const TSV: Format = Format::of(&Spec {
    short: "tsv",
    media_type: "text/tab-separated-values",
    aliases: &[],
    text: true,
    compressible: true,
    attachment: Some("tsv"),
    offered: super::DATA,
    encoder: Encoder::Text(&Tsv),
    schema: Schema::Text,
});

pub struct Tsv;

fn cell(text: &str, out: &mut Vec<u8>) {
    out.extend(text.bytes().map(|b| {
        if matches!(b, b'\t' | b'\n' | b'\r') {
            b' '
        } else {
            b
        }
    }));
}

fn line(columns: &[String], out: &mut Vec<u8>, mut write: impl FnMut(&str, &mut Vec<u8>)) {
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            out.push(b'\t');
        }
        write(c, out);
    }
    out.push(b'\n');
}

impl TextFormat for Tsv {
    fn document(&self, head: &Head<'_>) -> (Vec<u8>, Vec<u8>) {
        let mut header = Vec::new();
        line(head.columns, &mut header, cell);
        (header, Vec::new())
    }

    fn escape(&self, text: &str, out: &mut Vec<u8>) {
        cell(text, out);
    }

    fn names_columns(&self) -> bool {
        true
    }

    fn rows(&self) -> Option<&dyn Rows> {
        Some(self)
    }

    fn item(&self, item: &Value, list: &ListShape<'_>, _first: bool, out: &mut Vec<u8>) {
        line(list.columns, out, |c, out| match lookup(item, c) {
            Some(Value::String(s)) => cell(s, out),
            Some(Value::Number(n)) => number(n.as_f64().unwrap_or(0.0), out),
            Some(other @ (Value::Bool(_) | Value::Array(_))) => cell(&other.to_string(), out),
            _ => {}
        });
    }

    fn sql(&self, schema: &SchemaRef, _head: &Head<'_>) -> Option<Box<dyn BatchEncoder>> {
        Some(Box::new(SqlRows {
            schema: Arc::clone(schema),
            header_sent: false,
        }))
    }
}

impl Rows for Tsv {
    fn cell_before(&self, k: usize, _column: &str, out: &mut Vec<u8>) {
        if k > 0 {
            out.push(b'\t');
        }
    }

    fn row_end(&self, out: &mut Vec<u8>) {
        out.push(b'\n');
    }

    fn cells(&self) -> Cells {
        Cells {
            missing: b"",
            missing_text: b"",
            quoted_times: false,
        }
    }
}

/// A SQL answer's rows, written by Arrow's CSV writer with tabs.
struct SqlRows {
    schema: SchemaRef,
    header_sent: bool,
}

impl SqlRows {
    fn tsv(&mut self, batch: &RecordBatch) -> Result<Vec<Bytes>, EncodeError> {
        let mut writer = WriterBuilder::new()
            .with_header(!self.header_sent)
            .with_delimiter(b'\t')
            .build(Vec::new());
        writer.write(batch)?;
        self.header_sent = true;
        Ok(vec![Bytes::from(writer.into_inner())])
    }
}

impl BatchEncoder for SqlRows {
    fn begin(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        Ok(Vec::new())
    }

    fn piece(&mut self, piece: AnswerPart) -> Result<Vec<Bytes>, EncodeError> {
        let AnswerPart::Rows(batch) = piece else {
            return Err(EncodeError::Unexpected(
                "a stored row group in a SQL answer".into(),
            ));
        };
        self.tsv(&batch)
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, EncodeError> {
        if self.header_sent {
            return Ok(Vec::new());
        }
        self.tsv(&RecordBatch::new_empty(Arc::clone(&self.schema)))
    }
}

#[cfg(test)]
mod tests {
    use crate::api::query_parameters::openapi;
    use crate::config::Config;
    use crate::service::handle;
    use crate::state::AppState;
    use bytes::Bytes;
    use http::{Method, Request, StatusCode, header};
    use http_body_util::{BodyExt, Full};
    use hydro_engine::Dataset;
    use hydro_engine::Store;
    use hydro_engine::{GenerateOptions, generate};
    use serde_json::Value;
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::Arc;

    /// The media type this file registers.
    const TSV: &str = "text/tab-separated-values";

    /// A server over a small generated dataset, answering in process.
    async fn state() -> Arc<AppState> {
        let dir = std::env::temp_dir().join(format!("hydro-tsv-format-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let options = GenerateOptions {
            stations: 3,
            years: 1,
            interval_minutes: 60,
            ..GenerateOptions::default()
        };
        let store = Store::dir(&dir).unwrap();
        generate(store.object_store(), &options, |_, _| {})
            .await
            .unwrap();
        let dataset = Dataset::open_dir(&dir).await.unwrap();
        let state = AppState::new(dataset, Config::default(), "127.0.0.1:8080").unwrap();
        Arc::new(state)
    }

    async fn request(
        state: &Arc<AppState>,
        method: Method,
        target: &str,
        body: Option<(&str, &str)>,
    ) -> (StatusCode, String, String) {
        let mut builder = Request::builder().method(method).uri(target);
        if let Some((content_type, _)) = body {
            builder = builder.header(header::CONTENT_TYPE, content_type);
        }
        let content = Bytes::from(body.map_or("", |(_, b)| b).to_owned());
        let request = builder.body(Full::new(content)).unwrap();
        let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let response = handle(Arc::clone(state), peer, request).await;
        let status = response.status();
        let content_type = response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            content_type,
            String::from_utf8(bytes.to_vec()).unwrap(),
        )
    }

    async fn json(state: &Arc<AppState>, target: &str) -> Value {
        let (status, _, body) = request(state, Method::GET, target, None).await;
        assert_eq!(status, StatusCode::OK, "{target}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// Every operation of the OpenAPI document that lists this format (it lists what the
    /// formats table says, and this file's row is the only place the format is named) answers
    /// in it: a table of tab-separated lines, each with the header's number of cells.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_operation_that_lists_it_answers_in_it() {
        let state = state().await;
        let stations = json(&state, "/v1/stations").await;
        let station = stations["data"][0]["id"].as_str().unwrap().to_owned();
        let parameters = json(&state, &format!("/v1/stations/{station}/parameters")).await;
        let parameter = parameters["data"][0]["id"].as_str().unwrap().to_owned();
        let characteristics =
            json(&state, &format!("/v1/stations/{station}/characteristics")).await;
        let characteristic = characteristics["data"][0]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let versions = json(&state, "/v1/versions").await;
        let version = versions["data"][0]["id"].as_str().unwrap().to_owned();
        let series = format!("parameters={parameter}");
        let selection = format!("{series}&recent=5");
        let statistics = format!("parameters={parameter}&type=annual");
        let sql = "SELECT station, count(*) AS n FROM values GROUP BY station";

        let document: Value = serde_json::from_str(openapi::document().unwrap()).unwrap();
        let mut answered = Vec::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let listed = operation["responses"]["200"]["content"].get(TSV).is_some();
                let id = operation["operationId"].as_str().unwrap();
                if !listed {
                    continue;
                }
                let target = path
                    .replace("{stationId}", &station)
                    .replace("{parameterId}", &parameter)
                    .replace("{characteristicId}", &characteristic)
                    .replace("{versionId}", &version);
                let form = "application/x-www-form-urlencoded";
                let (query, body) = match id {
                    "listSeriesValues" => (selection.clone(), None),
                    "listLatest" => (series.clone(), None),
                    "listSeriesStatistics" => (statistics.clone(), None),
                    "getStatistics" => ("type=annual".to_owned(), None),
                    "querySql" => (format!("q={}", sql.replace(' ', "%20")), None),
                    "listSeriesValuesPosted" => (String::new(), Some((form, selection.as_str()))),
                    "listSeriesStatisticsPosted" => {
                        (String::new(), Some((form, statistics.as_str())))
                    }
                    "querySqlPosted" => (String::new(), Some(("application/sql", sql))),
                    _ => (String::new(), None),
                };
                let separator = if query.is_empty() { "" } else { "&" };
                let target = format!("/v1{target}?{query}{separator}format=tsv");
                let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                let (status, content_type, text) = request(&state, method, &target, body).await;
                assert_eq!(status, StatusCode::OK, "{id} {target}: {text}");
                assert!(content_type.starts_with(TSV), "{id}: {content_type}");
                let mut lines = text.lines();
                let header = lines.next().unwrap_or_default();
                let cells = header.split('\t').count();
                assert!(cells > 1 || id.starts_with("get"), "{id}: {header}");
                let rows: Vec<&str> = lines.collect();
                assert!(!rows.is_empty(), "{id}: no rows");
                for row in rows {
                    assert_eq!(row.split('\t').count(), cells, "{id}: {row}");
                }
                answered.push(id.to_owned());
            }
        }
        answered.sort();
        assert_eq!(
            answered,
            [
                "getCharacteristic",
                "getParameter",
                "getStation",
                "getStatistics",
                "getVersion",
                "listCharacteristics",
                "listLatest",
                "listParameters",
                "listSeriesStatistics",
                "listSeriesStatisticsPosted",
                "listSeriesValues",
                "listSeriesValuesPosted",
                "listStations",
                "listValues",
                "listVersions",
                "querySql",
                "querySqlPosted",
            ]
        );
    }
}
