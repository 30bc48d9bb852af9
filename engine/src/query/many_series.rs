//! Many series in one answer: each selected series' values in the window, one series after
//! the other in the order the caller gives (station, then parameter), every batch with its
//! series' station and parameter ids as columns.
//!
//! For a Parquet answer, a month wholly inside the window is its stored row group with the
//! series' ids as chunks made for it beside it ([`crate::parquet::constant`]), as a
//! single-series Parquet answer copies the stored row group alone.
//!
//! A series is planned when the answer reaches it, so what is in memory is one series'
//! read-ahead however many series there are, and the first rows go out before later series
//! are looked at. Asked for a page (or its total), every series' rows in the window are
//! counted first (arithmetic over the files table, plus a read of a month the window cuts),
//! so that series before the page are skipped without a read.

use crate::dataset::Dataset;
use crate::dataset::layout::writer_properties;
use crate::error::{EngineError, Result};
use crate::parquet::constant::ConstantColumns;
use crate::query::months::AnswerPart;
use crate::query::plan::PartStream;
use crate::query::spec::{ReadAhead, ValueColumn, ValuesQuery, Window};
use datafusion::arrow::array::{ArrayRef, DictionaryArray, Int32Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
use futures::{StreamExt, TryStreamExt};
use std::sync::Arc;

pub(crate) const COL_STATION_ID: &str = "stationId";
pub(crate) const COL_PARAMETER_ID: &str = "parameterId";

use crate::model::ids::{Series, StationId};

#[derive(Debug, Clone)]
pub struct ManyQuery {
    /// In answer order.
    pub series: Vec<Series>,
    pub window: Window,
    /// Value columns after the two id columns (empty: all).
    pub columns: Vec<ValueColumn>,
    pub offset: u64,
    pub limit: Option<u64>,
    pub need_total: bool,
    /// Whether months wholly inside the answer may be stored row groups (a Parquet answer),
    /// rather than rows only.
    pub stored: bool,
    /// Only values of these qualities (`None`: all).
    pub qualities: Option<Arc<[String]>>,
}

pub struct ManyPlan {
    pub total: Option<u64>,
    pub schema: SchemaRef,
    pub parts: PartStream,
}

/// A series' part of the answer: rows `offset..` of its window, at most `limit`.
struct SeriesPage {
    series: Series,
    offset: u64,
    limit: Option<u64>,
}

/// `stationId`, `parameterId` (dictionary-encoded, like the stored text columns), then the
/// value columns (`value` nullable where the version has recorded gaps: `gaps`).
pub(crate) fn many_schema(columns: &[ValueColumn], gaps: bool) -> Result<SchemaRef> {
    let text = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let mut fields = vec![
        Field::new(COL_STATION_ID, text.clone(), false),
        Field::new(COL_PARAMETER_ID, text, false),
    ];
    let values = match gaps {
        true => crate::dataset::layout::values_schema_with_gaps(),
        false => crate::dataset::layout::values_schema(),
    };
    for c in columns {
        fields.push(values.field_with_name(c.name())?.clone());
    }
    Ok(Arc::new(Schema::new(fields)))
}

impl Dataset {
    /// Plans a many-series answer. A request error (a window that is empty by its bounds) is
    /// an error here, before the caller sends a status line.
    pub async fn plan_many(
        self: &Arc<Self>,
        q: ManyQuery,
        read_ahead: ReadAhead,
    ) -> Result<ManyPlan> {
        if let Window::Between {
            from: Some(from),
            to: Some(to),
        } = q.window
            && from > to
        {
            return Err(EngineError::InvalidQuery("'from' is after 'to'".into()));
        }
        let columns = if q.columns.is_empty() {
            ValueColumn::ALL.to_vec()
        } else {
            q.columns.clone()
        };
        let schema = many_schema(&columns, self.has_gaps())?;
        // Every station's files found before the first byte: a part of the files table that
        // cannot be decoded fails the request with a status, not a cut stream. A series whose
        // answer lies in its newest month, known without the table (`recent=N` within it), is
        // planned without them: a first `recent=1` of many series decodes no station.
        // The stations not kept decoded are read together first, a span of the table's row
        // groups at a time, rather than a request each.
        let mut unplanned: Vec<&StationId> = Vec::new();
        for (station, parameter) in &q.series {
            let mut series = ValuesQuery::of_series(station.clone(), parameter.clone(), q.window);
            series.qualities.clone_from(&q.qualities);
            if self.newest_holds(&series).await?.is_none() {
                unplanned.push(station);
            }
        }
        unplanned.sort_unstable();
        unplanned.dedup();
        self.read_stations(&unplanned).await;
        for station in unplanned {
            self.station_files(station).await?;
        }
        let paged = q.need_total || q.offset > 0 || q.limit.is_some();
        let (total, pages) = if paged {
            let (total, pages) = self.pages(&q).await?;
            (Some(total), pages)
        } else {
            let pages = q.series.into_iter().map(|series| SeriesPage {
                series,
                offset: 0,
                limit: None,
            });
            (None, pages.collect())
        };
        let dataset = Arc::clone(self);
        let (window, stored, qualities) = (q.window, q.stored, q.qualities.clone());
        let out = Arc::clone(&schema);
        let ids_schema = Arc::new(schema.project(&[0, 1])?);
        let parts = futures::stream::iter(pages)
            .then(move |page| {
                let dataset = Arc::clone(&dataset);
                let columns = columns.clone();
                let out = Arc::clone(&out);
                let ids_schema = Arc::clone(&ids_schema);
                let qualities = qualities.clone();
                async move {
                    let (station, parameter) = page.series;
                    let query = ValuesQuery {
                        station: station.clone(),
                        parameter: parameter.clone(),
                        window,
                        sort: Vec::new(),
                        offset: page.offset,
                        limit: page.limit,
                        columns,
                        need_total: false,
                        qualities,
                    };
                    let plan = dataset.plan(&query, stored, read_ahead).await?;
                    let ids = (station.to_string(), parameter.to_string());
                    let constant = Arc::new(ConstantColumns::new(
                        ids_schema,
                        vec![ids.0.clone(), ids.1.clone()],
                        writer_properties(),
                    ));
                    Ok::<_, EngineError>(plan.parts.map(move |part| match part? {
                        AnswerPart::Rows(batch) => Ok(AnswerPart::Rows(tagged(&out, &ids, batch)?)),
                        AnswerPart::Stored(g) => {
                            Ok(AnswerPart::Stored(g.after(Arc::clone(&constant))))
                        }
                    }))
                }
            })
            .try_flatten();
        Ok(ManyPlan {
            total,
            schema,
            parts: parts.boxed(),
        })
    }

    /// Every series' rows in the window counted: the total, and the parts of the series that
    /// fall in the page.
    async fn pages(&self, q: &ManyQuery) -> Result<(u64, Vec<SeriesPage>)> {
        let (mut total, mut skip, mut left) = (0u64, q.offset, q.limit);
        let mut pages = Vec::new();
        for (station, parameter) in &q.series {
            let count = ValuesQuery {
                station: station.clone(),
                parameter: parameter.clone(),
                window: q.window,
                sort: Vec::new(),
                offset: 0,
                limit: Some(0),
                columns: vec![ValueColumn::Timestamp],
                need_total: true,
                qualities: q.qualities.clone(),
            };
            let n = self
                .plan_values(&count, ReadAhead::Monthly)
                .await?
                .total
                .unwrap_or(0);
            total += n;
            if left == Some(0) || n == 0 {
                continue;
            }
            if skip >= n {
                skip -= n;
                continue;
            }
            let take = left.map(|l| l.min(n - skip));
            pages.push(SeriesPage {
                series: (station.clone(), parameter.clone()),
                offset: skip,
                limit: take,
            });
            left = left.zip(take).map(|(l, t)| l - t);
            skip = 0;
        }
        Ok((total, pages))
    }
}

/// `batch` with its series' ids in front: dictionaries of one value each (a key a row).
fn tagged(
    schema: &SchemaRef,
    (station, parameter): &(String, String),
    batch: RecordBatch,
) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let constant = |text: &str| -> Result<ArrayRef> {
        let keys = Int32Array::from(vec![0; rows]);
        let values: ArrayRef = Arc::new(StringArray::from(vec![text]));
        Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
            keys, values,
        )?))
    };
    let mut columns = vec![constant(station)?, constant(parameter)?];
    columns.extend(batch.columns().iter().cloned());
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}
