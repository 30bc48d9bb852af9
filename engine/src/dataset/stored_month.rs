//! A stored station-month read back: whole, one chunk per parameter, for an append's merge
//! ([`crate::write::import`]); or its times and values, for the rollups of a publish
//! ([`crate::dataset::rollups`]).

use crate::dataset::manifest::ValueFile;
use crate::error::{EngineError, Result};
use crate::model::QUALITY_FLAGS;
use crate::model::chunk::SeriesChunk;
use crate::model::gap::{GAP, nulls_to_gaps};
use crate::model::ids::ParameterId;
use crate::parquet::assembly::{Assembly, FileFooter};
use bytes::Bytes;
use datafusion::arrow::array::{
    Array, AsArray, Float64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::datatypes::{Float64Type, Int32Type, TimestampMicrosecondType};
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ParquetRecordBatchReaderBuilder,
};

/// The rows of a stored station-month, one chunk per parameter.
pub(crate) async fn read_month(
    store: &dyn ObjectStore,
    file: &ValueFile,
) -> Result<Vec<SeriesChunk>> {
    let path = file.name();
    let bytes = month_bytes(store, file).await?;
    let corrupt = |e: &dyn std::fmt::Display| EngineError::corrupt(format!("{path}: {e}"));
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| corrupt(&e))?
        .build()
        .map_err(|e| corrupt(&e))?;
    let mut chunks: Vec<SeriesChunk> = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| corrupt(&e))?;
        let text = |name: &str| -> Result<StringArray> {
            let c = batch
                .column_by_name(name)
                .ok_or_else(|| corrupt(&format!("no column {name}")))?;
            Ok(cast(c, &DataType::Utf8)
                .map_err(|e| corrupt(&e))?
                .as_string::<i32>()
                .clone())
        };
        let (parameters, quality) = (text("parameter")?, text("quality")?);
        let times = batch
            .column_by_name("timestamp")
            .and_then(|c| c.as_any().downcast_ref::<TimestampMicrosecondArray>())
            .ok_or_else(|| corrupt(&"timestamp column missing or mistyped"))?;
        let values = batch
            .column_by_name("value")
            .and_then(|c| c.as_any().downcast_ref::<Float64Array>())
            .ok_or_else(|| corrupt(&"value column missing or mistyped"))?;
        for i in 0..batch.num_rows() {
            let parameter = parameters.value(i);
            if chunks
                .last()
                .is_none_or(|c| c.parameter.as_str() != parameter)
            {
                chunks.push(SeriesChunk {
                    parameter: parameter.parse::<ParameterId>().map_err(|e| corrupt(&e))?,
                    timestamps: Vec::new(),
                    values: Vec::new(),
                    quality: Vec::new(),
                });
            }
            let flag = QUALITY_FLAGS
                .iter()
                .find(|f| **f == quality.value(i))
                .ok_or_else(|| corrupt(&format!("quality '{}'", quality.value(i))))?;
            if let Some(chunk) = chunks.last_mut() {
                chunk.timestamps.push(times.value(i));
                chunk.values.push(match values.is_null(i) {
                    true => GAP,
                    false => values.value(i),
                });
                chunk.quality.push(flag);
            }
        }
    }
    Ok(chunks)
}

/// A station-month's series: parameter, times and values.
pub(crate) type MonthValues = Vec<(ParameterId, Vec<i64>, Vec<f64>)>;

/// The times and values of each series of a stored station-month, without its qualities:
/// what its rollups are made of. A month file holds a row group per series, in the order of
/// [`ValueFile::series`], so each is read by itself, two columns of it: a fifth of the time
/// [`read_month`] takes, which decodes every column and checks every quality.
pub(crate) async fn read_month_values(
    store: &dyn ObjectStore,
    file: &ValueFile,
) -> Result<MonthValues> {
    let path = file.name();
    let bytes = month_bytes(store, file).await?;
    let corrupt = |e: &dyn std::fmt::Display| EngineError::corrupt(format!("{path}: {e}"));
    let metadata =
        ArrowReaderMetadata::load(&bytes, Default::default()).map_err(|e| corrupt(&e))?;
    let mut out = Vec::with_capacity(file.series.len());
    for (group, series) in file.series.iter().enumerate() {
        let builder =
            ParquetRecordBatchReaderBuilder::new_with_metadata(bytes.clone(), metadata.clone());
        let columns = ProjectionMask::roots(builder.parquet_schema(), [1, 2]);
        let reader = builder
            .with_projection(columns)
            .with_row_groups(vec![group])
            .with_batch_size(usize::try_from(series.rows).unwrap_or(usize::MAX).max(1))
            .build()
            .map_err(|e| corrupt(&e))?;
        let (mut times, mut values) = (Vec::new(), Vec::new());
        for batch in reader {
            let batch = batch.map_err(|e| corrupt(&e))?;
            let (t, v) = times_and_values(&batch).ok_or_else(|| corrupt(&MISTYPED))?;
            times.extend_from_slice(t);
            extend_values(&mut values, v);
        }
        out.push((series.parameter.clone(), times, values));
    }
    Ok(out)
}

/// The rows of one series of a stored station-month, or None when the month has none of it:
/// its row group alone, without the parameter column, each quality of the dictionary looked
/// up once. What `changedSince` compares (`crate::query::changes`), a month per series.
pub(crate) async fn read_series(
    store: &dyn ObjectStore,
    file: &ValueFile,
    parameter: &ParameterId,
) -> Result<Option<SeriesChunk>> {
    let Some(group) = file.series.iter().position(|s| &s.parameter == parameter) else {
        return Ok(None);
    };
    let path = file.name();
    let bytes = month_bytes(store, file).await?;
    let corrupt = |e: &dyn std::fmt::Display| EngineError::corrupt(format!("{path}: {e}"));
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(|e| corrupt(&e))?;
    let columns = ProjectionMask::roots(builder.parquet_schema(), [1, 2, 3]);
    let rows = usize::try_from(file.series[group].rows).unwrap_or(usize::MAX);
    let reader = builder
        .with_projection(columns)
        .with_row_groups(vec![group])
        .with_batch_size(rows.max(1))
        .build()
        .map_err(|e| corrupt(&e))?;
    let mut chunk = SeriesChunk {
        parameter: parameter.clone(),
        timestamps: Vec::with_capacity(rows),
        values: Vec::with_capacity(rows),
        quality: Vec::with_capacity(rows),
    };
    for batch in reader {
        let batch = batch.map_err(|e| corrupt(&e))?;
        let (t, v) = times_and_values(&batch).ok_or_else(|| corrupt(&MISTYPED))?;
        let flag = |name: Option<&str>| {
            let name = name.unwrap_or_default();
            QUALITY_FLAGS
                .iter()
                .find(|f| **f == name)
                .copied()
                .ok_or_else(|| corrupt(&format!("quality '{name}'")))
        };
        chunk.timestamps.extend_from_slice(t);
        extend_values(&mut chunk.values, v);
        match batch.column(2).as_dictionary_opt::<Int32Type>() {
            // As written: each quality of the dictionary looked up once.
            Some(q) => {
                let names = q
                    .values()
                    .as_string_opt::<i32>()
                    .ok_or_else(|| corrupt(&"quality column mistyped"))?;
                let flags: Vec<&'static str> = names.iter().map(flag).collect::<Result<_>>()?;
                for key in q.keys().values() {
                    let f = usize::try_from(*key)
                        .ok()
                        .and_then(|k| flags.get(k))
                        .ok_or_else(|| corrupt(&"quality key out of range"))?;
                    chunk.quality.push(f);
                }
            }
            None => {
                let q = cast(batch.column(2), &DataType::Utf8).map_err(|e| corrupt(&e))?;
                for name in q.as_string::<i32>().iter() {
                    chunk.quality.push(flag(name)?);
                }
            }
        }
    }
    Ok(Some(chunk))
}

const MISTYPED: &str = "timestamp or value column mistyped";

/// The first two columns of a batch read with timestamp and value projected first.
fn times_and_values(batch: &RecordBatch) -> Option<(&[i64], &Float64Array)> {
    let t = batch
        .column(0)
        .as_primitive_opt::<TimestampMicrosecondType>()?;
    let v = batch.column(1).as_primitive_opt::<Float64Type>()?;
    Some((t.values(), v))
}

/// `values` appended to `out`, a null (a recorded gap) as NaN, as the engine holds gaps.
fn extend_values(out: &mut Vec<f64>, values: &Float64Array) {
    match nulls_to_gaps(values) {
        Some(filled) => out.extend_from_slice(filled.values()),
        None => out.extend_from_slice(values.values()),
    }
}

/// A stored station-month's bytes as a Parquet file of its own: its object, or its range of
/// a pack, or its row groups of its station-year file copied into one (two reads: the year's
/// footer, then the month's pages).
pub(crate) async fn month_bytes(store: &dyn ObjectStore, file: &ValueFile) -> Result<Bytes> {
    let object = Path::from(file.object());
    let Some(footer_start) = file.footer_start() else {
        let start = file.offset();
        return Ok(store.get_range(&object, start..start + file.size).await?);
    };
    let tail = store.get_range(&object, footer_start..file.size).await?;
    let footer = FileFooter::parse(&tail, footer_start)?;
    let groups: Vec<usize> = (0..file.series.len()).map(|i| file.row_group(i)).collect();
    let mut span: Option<std::ops::Range<u64>> = None;
    for &g in &groups {
        for c in ALL_COLUMNS {
            let r = footer.chunk_range(g, c)?;
            span = Some(match span {
                Some(s) => s.start.min(r.start)..s.end.max(r.end),
                None => r,
            });
        }
    }
    let span = span.unwrap_or_default();
    let data = store.get_range(&object, span.clone()).await?;
    let (mut month, head) = Assembly::new(&tail)?;
    let mut out = vec![head];
    for g in groups {
        out.extend(month.copy(&footer, g, &ALL_COLUMNS, &data, span.start)?);
    }
    out.push(month.finish()?);
    Ok(out.concat().into())
}

/// Every column of a value file.
const ALL_COLUMNS: [usize; 4] = [0, 1, 2, 3];
