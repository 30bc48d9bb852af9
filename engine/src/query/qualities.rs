//! Values of some qualities only (`qualities=good,estimated`).
//!
//! Counts in the files table are of all values, so the arithmetic the planner does over them
//! (totals, `offset`, `recent`, skipping pages) does not hold for a subset. A filtered query is
//! therefore the unfiltered read of its window, in the same order, with the rows of other
//! qualities dropped as months pass and the page taken from what is left:
//! - **in time order**, months are read as for every answer ([`crate::query::months`]) and
//!   filtered in memory (a month is a few thousand rows); `offset` reads the rows before the
//!   page, as it must, since which rows are kept is only known by looking;
//! - **sorted by another column**, the qualities join the DataFusion scan's predicate, so the
//!   sort sees only kept rows and a `limit` stays a top-k;
//! - **the total** is a count over the window's quality column, a read of its own;
//! - **`recent=N`** is the window from the N-th newest kept value on, found reading months
//!   back from the newest.
//!
//! Parquet answers of a filtered query are always made of rows, never stored row groups.

use crate::dataset::Dataset;
use crate::error::{EngineError, Result};
use crate::query::months::AnswerPart;
use crate::query::plan::{PartsPlan, output_schema};
use crate::query::spec::{ReadAhead, SortKey, ValueColumn, ValuesQuery, Window};
use datafusion::arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::{Int32Type, TimestampMicrosecondType};
use futures::StreamExt;
use std::sync::Arc;

/// Which rows of `column` (a quality column: dictionary of text) have one of `qualities`.
pub(crate) fn quality_mask(column: &dyn Array, qualities: &[String]) -> Result<BooleanArray> {
    let d = column
        .as_dictionary_opt::<Int32Type>()
        .ok_or_else(|| EngineError::corrupt("quality is not a dictionary"))?;
    let names = d
        .values()
        .as_string_opt::<i32>()
        .ok_or_else(|| EngineError::corrupt("quality is not text"))?;
    let allowed: Vec<bool> = names
        .iter()
        .map(|n| n.is_some_and(|n| qualities.iter().any(|q| q == n)))
        .collect();
    Ok((0..d.len())
        .map(|i| {
            Some(
                d.is_valid(i)
                    && allowed
                        .get(d.keys().value(i) as usize)
                        .copied()
                        .unwrap_or(false),
            )
        })
        .collect())
}

/// `batch` (whose column `quality` is the quality) with only the rows of `qualities`, and the
/// columns `keep`.
fn kept(
    batch: &RecordBatch,
    quality: usize,
    qualities: &[String],
    keep: &[usize],
) -> Result<RecordBatch> {
    let mask = quality_mask(batch.column(quality).as_ref(), qualities)?;
    Ok(filter_record_batch(&batch.project(keep)?, &mask)?)
}

impl Dataset {
    /// Plans `q`, whose `qualities` are set (see the module doc).
    pub(super) async fn plan_of_qualities(
        &self,
        q: &ValuesQuery,
        qualities: Arc<[String]>,
        read_ahead: ReadAhead,
    ) -> Result<PartsPlan> {
        let window = self.window_of_qualities(q, &qualities).await?;
        let total = match q.need_total {
            true => Some(self.count_of_qualities(q, window, &qualities).await?),
            false => None,
        };
        let time_order = q
            .sort
            .first()
            .is_none_or(|k| k.column == ValueColumn::Timestamp);
        if !time_order {
            // The qualities go into the scan's predicate (see `plan`).
            let inner = ValuesQuery {
                window,
                need_total: false,
                ..q.clone()
            };
            let plan = self.plan_all(&inner, false, read_ahead).await?;
            return Ok(PartsPlan { total, ..plan });
        }
        let columns = match q.columns.is_empty() {
            true => ValueColumn::ALL.to_vec(),
            false => q.columns.clone(),
        };
        let mut read = columns.clone();
        if !read.contains(&ValueColumn::Quality) {
            read.push(ValueColumn::Quality);
        }
        let quality = read
            .iter()
            .position(|c| *c == ValueColumn::Quality)
            .unwrap_or(columns.len());
        let keep: Vec<usize> = (0..columns.len()).collect();
        let inner = ValuesQuery {
            window,
            offset: 0,
            limit: None,
            columns: read,
            need_total: false,
            qualities: None,
            ..q.clone()
        };
        let plan = self.plan_all(&inner, false, read_ahead).await?;
        // (rows still to skip, rows still to give); the stream ends once the page is full.
        let page = (q.offset, q.limit.unwrap_or(u64::MAX));
        let parts = plan
            .parts
            .scan(page, move |(skip, left), part| {
                let next = match part {
                    _ if *left == 0 => None,
                    Err(e) => Some(Err(e)),
                    Ok(AnswerPart::Stored(_)) => Some(Err(EngineError::corrupt(
                        "stored row group in a filtered answer",
                    ))),
                    Ok(AnswerPart::Rows(batch)) => {
                        Some(kept(&batch, quality, &qualities, &keep).map(|batch| {
                            let n = batch.num_rows() as u64;
                            let from = (*skip).min(n);
                            let len = (n - from).min(*left);
                            *skip -= from;
                            *left -= len;
                            batch.slice(from as usize, len as usize)
                        }))
                    }
                };
                std::future::ready(next)
            })
            .filter(|b| std::future::ready(!matches!(b, Ok(b) if b.num_rows() == 0)))
            .map(|b| b.map(AnswerPart::Rows));
        Ok(PartsPlan {
            total,
            schema: output_schema(&columns, self.has_gaps())?,
            parts: parts.boxed(),
            reads: plan.reads,
            scans: plan.scans,
        })
    }

    /// The window of `q` with `recent=N` made the window from the N-th newest kept value on.
    async fn window_of_qualities(&self, q: &ValuesQuery, qualities: &[String]) -> Result<Window> {
        let Window::Recent(n) = q.window else {
            return Ok(q.window);
        };
        let everything = Window::Between {
            from: None,
            to: None,
        };
        if n == 0 {
            // An empty window: after the newest value.
            return Ok(Window::Between {
                from: Some(i64::MAX),
                to: None,
            });
        }
        let newest_first = ValuesQuery {
            window: everything,
            sort: vec![SortKey {
                column: ValueColumn::Timestamp,
                descending: true,
            }],
            offset: 0,
            limit: None,
            columns: vec![ValueColumn::Timestamp, ValueColumn::Quality],
            need_total: false,
            qualities: None,
            ..q.clone()
        };
        let mut parts = self
            .plan_all(&newest_first, false, ReadAhead::Monthly)
            .await?
            .parts;
        let mut left = n;
        while let Some(part) = parts.next().await {
            let AnswerPart::Rows(batch) = part? else {
                continue;
            };
            let batch = kept(&batch, 1, qualities, &[0])?;
            let rows = batch.num_rows() as u64;
            if rows >= left {
                let times = batch.column(0).as_primitive::<TimestampMicrosecondType>();
                return Ok(Window::Between {
                    from: Some(times.value((left - 1) as usize)),
                    to: None,
                });
            }
            left -= rows;
        }
        Ok(everything)
    }

    /// How many values of `qualities` the window holds.
    async fn count_of_qualities(
        &self,
        q: &ValuesQuery,
        window: Window,
        qualities: &[String],
    ) -> Result<u64> {
        let count = ValuesQuery {
            window,
            sort: Vec::new(),
            offset: 0,
            limit: None,
            columns: vec![ValueColumn::Quality],
            need_total: false,
            qualities: None,
            ..q.clone()
        };
        let mut parts = self
            .plan_all(&count, false, ReadAhead::Monthly)
            .await?
            .parts;
        let mut n = 0u64;
        while let Some(part) = parts.next().await {
            if let AnswerPart::Rows(batch) = part? {
                n += quality_mask(batch.column(0).as_ref(), qualities)?.true_count() as u64;
            }
        }
        Ok(n)
    }
}
