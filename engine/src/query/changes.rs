//! The rows of a series changed since an earlier version (`changedSince`): what a mirror that
//! holds the values of version B needs to hold those of this version A. They are the rows A
//! holds that B lacks or holds with another value or quality, with A's value; appends never
//! remove a row, so B's rows with these upserted are A's.
//!
//! A station-month is rewritten only by a publish that writes rows of it (compaction moves a
//! month into a station-year file but keeps the generation that wrote it), so only A's months written by a
//! generation after B's can differ: those months and B's same months are read, compared row by
//! row, and nothing else. The work is what the publishes since B wrote, not the series.

use crate::dataset::Dataset;
use crate::dataset::layout::UTC;
use crate::dataset::manifest::ValueFile;
use crate::dataset::stored_month::read_series;
use crate::error::{EngineError, Result};
use crate::model::Micros;
use crate::model::chunk::SeriesChunk;
use crate::model::gap::gaps_to_nulls;
use crate::model::ids::Series;
use crate::model::month::Month;
use crate::query::many_series::many_schema;
use crate::query::plan::output_schema;
use crate::query::spec::{ValueColumn, column_indices};
use datafusion::arrow::array::{
    ArrayRef, Float64Array, RecordBatch, StringDictionaryBuilder, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{Int32Type, SchemaRef};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use std::sync::Arc;

/// Months read and compared at once (in answer order): a month of changes is often a few
/// rows, and its reads, not its rows, are the work.
const MONTHS_AT_ONCE: usize = 8;

/// Months of changes in one batch: at most ~90 000 rows (32 full months of 15-minute values),
/// and far fewer row groups in a Parquet answer than a batch a month.
const MONTHS_A_BATCH: usize = 32;

/// What changed of some series since a version, within a time range.
#[derive(Debug, Clone)]
pub struct ChangesQuery {
    /// In answer order.
    pub series: Vec<Series>,
    /// Inclusive bounds of the rows' times; `None` is open.
    pub from: Option<Micros>,
    pub to: Option<Micros>,
    /// Output columns, in order (after the ids for many series).
    pub columns: Vec<ValueColumn>,
}

/// A planned answer of changes: its rows stream series after series, in time order, a batch
/// for up to `MONTHS_A_BATCH` months of changes.
pub struct ChangesPlan {
    pub schema: SchemaRef,
    pub stream: BoxStream<'static, Result<RecordBatch>>,
}

/// A station-month of a series that may differ from the base version's.
struct Touched {
    series: Series,
    file: ValueFile,
    /// The base version's file of the same station-month, if it has one.
    base: Option<ValueFile>,
}

impl Dataset {
    /// The series of `series` with months written after `base` within `from..=to`: those a
    /// changes answer of many series lists.
    pub async fn changed_series(
        &self,
        base: &Dataset,
        series: &[Series],
        from: Option<Micros>,
        to: Option<Micros>,
    ) -> Result<Vec<Series>> {
        let mut changed = Vec::new();
        for s in series {
            if !self.touched(base, s, from, to).await?.is_empty() {
                changed.push(s.clone());
            }
        }
        Ok(changed)
    }

    /// The rows of one series (`ids`: false) or of many (with their station and parameter
    /// ids) that changed since `base`.
    pub async fn plan_changes(
        self: &Arc<Self>,
        base: &Dataset,
        query: &ChangesQuery,
        ids: bool,
    ) -> Result<ChangesPlan> {
        let columns = query.columns.clone();
        let schema = if ids {
            many_schema(&columns, self.has_gaps())?
        } else {
            output_schema(&columns, self.has_gaps())?
        };
        let mut touched: Vec<Touched> = Vec::new();
        for s in &query.series {
            touched.extend(self.touched(base, s, query.from, query.to).await?);
        }
        let (from, to) = (query.from, query.to);
        let store = self.store.object_store();
        let out = Arc::clone(&schema);
        let stream = futures::stream::iter(touched)
            .map(move |t| {
                let store = Arc::clone(&store);
                // A task a month, so that both cores read and compare.
                let month = tokio::spawn(async move {
                    let parameter = &t.series.1;
                    let Some(now) = read_series(store.as_ref(), &t.file, parameter).await? else {
                        return Ok(None);
                    };
                    let before = match &t.base {
                        Some(b) => read_series(store.as_ref(), b, parameter).await?,
                        None => None,
                    };
                    let rows = changed(&now, before.as_ref(), from, to);
                    Ok::<_, EngineError>((!rows.is_empty()).then_some(Found {
                        series: t.series,
                        chunk: now,
                        rows,
                    }))
                });
                async move {
                    month.await.map_err(|source| EngineError::Task {
                        what: "changes of a month",
                        source,
                    })?
                }
            })
            .buffered(MONTHS_AT_ONCE)
            .try_filter_map(|b| std::future::ready(Ok(b)))
            // Months of changes are often a few rows each: one batch of many.
            .try_chunks(MONTHS_A_BATCH)
            .map_err(|e| e.1)
            .and_then(move |found| {
                std::future::ready(batch_of(&found, &columns, ids, Arc::clone(&out)))
            })
            .boxed();
        Ok(ChangesPlan { schema, stream })
    }

    /// The station-months of `series` within `from..=to` written after `base`, in time order.
    async fn touched(
        &self,
        base: &Dataset,
        (station, parameter): &Series,
        from: Option<Micros>,
        to: Option<Micros>,
    ) -> Result<Vec<Touched>> {
        let months = self.station_files(station).await?;
        let (first, last) = (from.map(Month::of), to.map(Month::of));
        let base_months = base.station_files(station).await?;
        let touched = months
            .iter()
            .map(|m| &m.file)
            .filter(|f| f.generation > base.manifest.generation)
            .filter(|f| first.is_none_or(|m| f.month >= m) && last.is_none_or(|m| f.month <= m))
            .filter(|f| f.series.iter().any(|s| &s.parameter == parameter))
            .map(|f| Touched {
                series: (station.clone(), parameter.clone()),
                file: f.clone(),
                base: base_months
                    .binary_search_by_key(&f.month, |m| m.file.month)
                    .ok()
                    .map(|i| base_months[i].file.clone()),
            })
            .collect();
        Ok(touched)
    }
}

/// The indices of the rows of `now` within `from..=to` that `before` lacks or holds with
/// another value or quality (both ascending in time).
fn changed(
    now: &SeriesChunk,
    before: Option<&SeriesChunk>,
    from: Option<Micros>,
    to: Option<Micros>,
) -> Vec<usize> {
    let mut out = Vec::new();
    let mut j = 0;
    for (i, &t) in now.timestamps.iter().enumerate() {
        if from.is_some_and(|f| t < f) || to.is_some_and(|e| t > e) {
            continue;
        }
        let same = before.is_some_and(|b| {
            while j < b.timestamps.len() && b.timestamps[j] < t {
                j += 1;
            }
            j < b.timestamps.len()
                && b.timestamps[j] == t
                && b.values[j].to_bits() == now.values[i].to_bits()
                && b.quality[j] == now.quality[i]
        });
        if !same {
            out.push(i);
        }
    }
    out
}

/// A month's changed rows of a series: `rows` of `chunk`.
struct Found {
    series: Series,
    chunk: SeriesChunk,
    rows: Vec<usize>,
}

/// The changed rows of `found` as one batch of `schema`: the ids (when `ids`), then `columns`.
fn batch_of(
    found: &[Found],
    columns: &[ValueColumn],
    ids: bool,
    schema: SchemaRef,
) -> Result<RecordBatch> {
    let n: usize = found.iter().map(|f| f.rows.len()).sum();
    let (mut station, mut parameter) = (
        StringDictionaryBuilder::<Int32Type>::new(),
        StringDictionaryBuilder::<Int32Type>::new(),
    );
    let (mut times, mut values) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut quality = StringDictionaryBuilder::<Int32Type>::new();
    for f in found {
        station.append_values(f.series.0.as_str(), f.rows.len());
        parameter.append_values(f.series.1.as_str(), f.rows.len());
        for &i in &f.rows {
            times.push(f.chunk.timestamps[i]);
            values.push(f.chunk.values[i]);
            quality.append_value(f.chunk.quality[i]);
        }
    }
    let all: [ArrayRef; 4] = [
        Arc::new(parameter.finish()),
        Arc::new(TimestampMicrosecondArray::from(times).with_timezone(UTC)),
        {
            // Recorded gaps (NaN as read back) leave as nulls.
            let values = Float64Array::from(values);
            gaps_to_nulls(&values).unwrap_or_else(|| Arc::new(values))
        },
        Arc::new(quality.finish()),
    ];
    let mut picked: Vec<ArrayRef> = Vec::with_capacity(columns.len() + 2);
    if ids {
        // The ids as `many_schema` has them (the stored parameter column is the same array).
        picked.push(Arc::new(station.finish()));
        picked.push(Arc::clone(&all[0]));
    }
    picked.extend(
        column_indices(columns)?
            .into_iter()
            .map(|i| Arc::clone(&all[i])),
    );
    Ok(RecordBatch::try_new(schema, picked)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(rows: &[(Micros, f64, &'static str)]) -> SeriesChunk {
        SeriesChunk {
            parameter: "p".parse().unwrap(),
            timestamps: rows.iter().map(|r| r.0).collect(),
            values: rows.iter().map(|r| r.1).collect(),
            quality: rows.iter().map(|r| r.2).collect(),
        }
    }

    #[test]
    fn new_and_changed_rows_are_the_changes() {
        let before = chunk(&[(1, 1.0, "good"), (2, 2.0, "good"), (4, 4.0, "good")]);
        let now = chunk(&[
            (1, 1.0, "good"),
            (2, 2.5, "good"),
            (3, 3.0, "good"),
            (4, 4.0, "suspect"),
            (5, 5.0, "good"),
        ]);
        assert_eq!(changed(&now, Some(&before), None, None), [1, 2, 3, 4]);
        assert_eq!(changed(&now, Some(&before), Some(3), Some(4)), [2, 3]);
        assert_eq!(changed(&now, None, None, None), [0, 1, 2, 3, 4]);
        assert!(changed(&before, Some(&before), None, None).is_empty());
    }
}
