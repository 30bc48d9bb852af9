//! Catalog resources (stations, parameters, characteristics) as a table, for Arrow IPC and
//! Parquet: research users join the catalog with the values in pyarrow, polars or DuckDB.
//!
//! The columns are those of the CSV answer (dotted paths of the flattened items, `fields`
//! respected). A field whose type the resources' schemas fix (`DECLARED`: coordinates, river
//! km, gauge zero, characteristic values, times of periods and versions) has that type on every
//! page, whatever the page holds; any other column is typed by its values: whole numbers as
//! Int64, other numbers as Float64, booleans as Boolean, times as Timestamp(µs, UTC), text as
//! Utf8, and lists (availability periods, included parameters) as their JSON text. Every column
//! is nullable, since optional fields are absent where they do not apply.

use super::{EncodeError, TableFormat};
use crate::render::resources::flatten;
use chrono::DateTime;
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{Field, Schema};
use hydro_engine::AnswerPart;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// `items` as one table (an Arrow IPC stream, a Parquet file) with `columns`. A table needs a column: an
/// empty list whose columns are not known (they come from its items) is a table of one column,
/// `id`, and no rows.
pub fn encode(
    items: &[&Value],
    columns: &[String],
    format: &dyn TableFormat,
) -> Result<Vec<u8>, EncodeError> {
    let id = ["id".to_owned()];
    let columns = if columns.is_empty() { &id[..] } else { columns };
    let batch = record_batch(items, columns)?;
    let mut encoder = format.batches(batch.schema());
    let mut frames = encoder.begin()?;
    frames.extend(encoder.piece(AnswerPart::Rows(batch))?);
    frames.extend(encoder.finish()?);
    Ok(frames.concat())
}

/// The items' flattened values under `columns`, one row an item.
fn record_batch(items: &[&Value], columns: &[String]) -> Result<RecordBatch, EncodeError> {
    let position: HashMap<&str, usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i))
        .collect();
    let mut cells: Vec<Vec<Option<Value>>> = vec![vec![None; items.len()]; columns.len()];
    let mut flat = Vec::new();
    for (row, item) in items.iter().enumerate() {
        flat.clear();
        flatten(item, "", &mut flat);
        for (path, value) in flat.drain(..) {
            if let Some(&c) = position.get(path.as_str())
                && !value.is_null()
            {
                cells[c][row] = Some(value);
            }
        }
    }
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = columns
        .iter()
        .zip(&cells)
        .map(|(name, values)| {
            let array = declared_column(name, values).unwrap_or_else(|| column(values));
            (Field::new(name, array.data_type().clone(), true), array)
        })
        .unzip();
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

/// The type a resource's schema gives a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Declared {
    Number,
    Whole,
    Flag,
    Time,
}

/// Fields of the catalog resources whose type `schemas/` fixes, by their column names. Typed by
/// its values, a column of them differed from page to page: text where a page had none (a page
/// of groundwater wells has no river km), Int64 where a page's numbers happened to be whole;
/// tables of two pages of one list then did not concatenate.
const DECLARED: &[(&str, Declared)] = &[
    ("coordinates.lat", Declared::Number),
    ("coordinates.lon", Declared::Number),
    ("location.lat", Declared::Number),
    ("location.lon", Declared::Number),
    ("riverKm", Declared::Number),
    ("gaugeZero.value", Declared::Number),
    ("groundLevel", Declared::Number),
    ("elevation", Declared::Number),
    ("distance", Declared::Number),
    ("value", Declared::Number),
    ("period.start", Declared::Time),
    ("period.end", Declared::Time),
    ("generation", Declared::Whole),
    ("published", Declared::Time),
    ("current", Declared::Flag),
];

/// The column of a field [`DECLARED`] lists, in its type; `None` (typed by the values) when a
/// value is not of that type, which the schemas do not allow.
fn declared_column(name: &str, values: &[Option<Value>]) -> Option<ArrayRef> {
    let (_, kind) = DECLARED.iter().find(|(n, _)| *n == name)?;
    let fits = |test: fn(&Value) -> bool| values.iter().flatten().all(test);
    Some(match kind {
        Declared::Number if fits(Value::is_number) => Arc::new(Float64Array::from_iter(
            values.iter().map(|v| v.as_ref().and_then(Value::as_f64)),
        )),
        Declared::Whole if fits(Value::is_i64) => Arc::new(Int64Array::from_iter(
            values.iter().map(|v| v.as_ref().and_then(Value::as_i64)),
        )),
        Declared::Flag if fits(Value::is_boolean) => Arc::new(BooleanArray::from_iter(
            values.iter().map(|v| v.as_ref().and_then(Value::as_bool)),
        )),
        Declared::Time if fits(|v| v.as_str().and_then(micros).is_some()) => {
            let times = values
                .iter()
                .map(|v| v.as_ref().and_then(Value::as_str).and_then(micros));
            Arc::new(TimestampMicrosecondArray::from_iter(times).with_timezone("UTC"))
        }
        _ => return None,
    })
}

/// A column of values typed by what they all are.
fn column(values: &[Option<Value>]) -> ArrayRef {
    let present = || values.iter().flatten();
    let all = |test: fn(&Value) -> bool| present().next().is_some() && present().all(test);
    if all(|v| v.is_i64()) {
        return Arc::new(Int64Array::from_iter(
            values.iter().map(|v| v.as_ref().and_then(Value::as_i64)),
        ));
    }
    if all(Value::is_number) {
        return Arc::new(Float64Array::from_iter(
            values.iter().map(|v| v.as_ref().and_then(Value::as_f64)),
        ));
    }
    if all(Value::is_boolean) {
        return Arc::new(BooleanArray::from_iter(
            values.iter().map(|v| v.as_ref().and_then(Value::as_bool)),
        ));
    }
    if all(|v| v.as_str().and_then(micros).is_some()) {
        let times = values
            .iter()
            .map(|v| v.as_ref().and_then(Value::as_str).and_then(micros));
        return Arc::new(TimestampMicrosecondArray::from_iter(times).with_timezone("UTC"));
    }
    let texts = values.iter().map(|v| {
        v.as_ref().map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    });
    Arc::new(StringArray::from_iter(texts))
}

/// An RFC 3339 time as UTC microseconds.
fn micros(s: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_micros())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::format::{arrow::Arrow, parquet::ParquetFormat};
    use bytes::Bytes;
    use datafusion::arrow::array::Array;
    use datafusion::arrow::datatypes::{DataType, TimeUnit};
    use datafusion::arrow::ipc::reader::StreamReader;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use serde_json::json;

    fn items() -> Vec<Value> {
        vec![
            json!({"id": "a", "riverKm": 12.5, "n": 3, "active": true,
                   "period": {"start": "2024-01-01T00:00:00+01:00"}, "tags": [1, 2]}),
            json!({"id": "b", "n": 4, "active": false, "period": {"start": "2024-02-01T00:00:00+00:00"}}),
        ]
    }

    fn columns() -> Vec<String> {
        [
            "id",
            "riverKm",
            "n",
            "active",
            "period.start",
            "tags",
            "missing",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn columns_are_typed_by_their_values() {
        let items = items();
        let refs: Vec<&Value> = items.iter().collect();
        let batch = record_batch(&refs, &columns()).unwrap();
        let types: Vec<DataType> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        assert_eq!(
            types,
            [
                DataType::Utf8,
                DataType::Float64,
                DataType::Int64,
                DataType::Boolean,
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                DataType::Utf8,
                DataType::Utf8,
            ]
        );
        assert_eq!(batch.num_rows(), 2);
        assert!(batch.column(1).is_null(1), "riverKm absent in b");
        assert_eq!(batch.column(6).null_count(), 2);
        let start = batch
            .column(4)
            .as_any()
            .downcast_ref::<TimestampMicrosecondArray>()
            .unwrap();
        assert_eq!(start.value(0), 1_704_063_600_000_000);
    }

    /// A declared field has its type whatever a page holds: none of it, or whole numbers.
    #[test]
    fn declared_fields_keep_their_type_on_every_page() {
        let wells = [json!({"id": "w", "groundLevel": 41}), json!({"id": "v"})];
        let gauges = [json!({"id": "g", "riverKm": 688, "groundLevel": 40.5})];
        let columns = ["id", "riverKm", "groundLevel", "period.start"].map(String::from);
        let schema = |items: &[Value]| {
            let refs: Vec<&Value> = items.iter().collect();
            record_batch(&refs, &columns).unwrap().schema()
        };
        let (a, b) = (schema(&wells), schema(&gauges));
        assert_eq!(a, b);
        assert_eq!(
            a.field_with_name("riverKm").unwrap().data_type(),
            &DataType::Float64
        );
        assert_eq!(
            a.field_with_name("period.start").unwrap().data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
        // A value the schemas do not allow is not lost: the column is typed by its values.
        let odd = [json!({"id": "x", "riverKm": "km 3"})];
        assert_eq!(
            schema(&odd).field_with_name("riverKm").unwrap().data_type(),
            &DataType::Utf8
        );
    }

    #[test]
    fn both_formats_read_back() {
        let items = items();
        let refs: Vec<&Value> = items.iter().collect();
        let ipc = encode(&refs, &columns(), &Arrow).unwrap();
        let batches: Vec<RecordBatch> = StreamReader::try_new(&ipc[..], None)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(batches[0].num_rows(), 2);
        let parquet = encode(&refs, &columns(), &ParquetFormat).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(parquet))
            .unwrap()
            .build()
            .unwrap();
        let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(rows, 2);
        // An empty list is a table with its columns and no rows; one whose columns come from
        // its items has an id column.
        let formats: [&dyn TableFormat; 2] = [&ParquetFormat, &Arrow];
        for format in formats {
            assert!(!encode(&[], &columns(), format).unwrap().is_empty());
            assert!(!encode(&[], &[], format).unwrap().is_empty());
        }
        let empty = encode(&[], &[], &ParquetFormat).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(empty)).unwrap();
        assert_eq!(reader.schema().fields().len(), 1);
    }
}
