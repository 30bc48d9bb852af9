//! The access plan: which months of the series can hold the answer, counted where a total, an
//! offset or `recent` needs it, and which of the window's rows answer, in which order; made
//! before any row is read, then carried out by [`super::ascending`], [`super::descending`] or
//! [`super::sorted`].

use super::output_schema;
use crate::dataset::manifest::{SeriesStats, ValueFile};
use crate::dataset::{Dataset, MonthFile, StationFiles};
use crate::error::{EngineError, Result};
use crate::model::Micros;
use crate::model::ids::ParameterId;
use crate::query::months::MonthRead;
use crate::query::spec::{ValueColumn, ValuesQuery, Window, column_indices};
use chrono::{DateTime, Utc};
use datafusion::arrow::datatypes::SchemaRef;
use std::sync::Arc;

/// One month file that holds the series, with the rows it contributes to the window.
pub(crate) struct MonthPart<'a> {
    pub(crate) month: &'a Arc<MonthFile>,
    pub(super) stats: &'a SeriesStats,
    /// Rows inside the window; None until counted.
    pub(super) rows: Option<u64>,
}

impl<'a> MonthPart<'a> {
    pub(crate) fn file(&self) -> &'a ValueFile {
        &self.month.file
    }

    pub(super) fn inside(&self, lo: Micros, hi: Micros) -> bool {
        lo <= self.stats.min && self.stats.max <= hi
    }

    /// The series' row group in its object: months hold one row group per parameter, in
    /// `series` order.
    pub(crate) fn row_group(&self) -> usize {
        let file = &self.month.file;
        let i = file
            .series
            .iter()
            .position(|s| std::ptr::eq(s, self.stats))
            .unwrap_or(0);
        file.row_group(i)
    }
}

/// The months holding ascending window rows [a, b), and how many rows of the first to skip.
/// Months not counted yet are all kept (the stream stops early instead).
pub(super) fn select<'p, 'a>(
    parts: &'p [MonthPart<'a>],
    a: u64,
    b: u64,
) -> (Vec<&'p MonthPart<'a>>, u64) {
    let mut selected = Vec::new();
    let mut skip = a;
    let mut start = 0u64;
    for part in parts {
        match part.rows {
            Some(n) => {
                let end = start + n;
                if end > a && start < b && n > 0 {
                    if selected.is_empty() {
                        skip = a - start;
                    }
                    selected.push(part);
                }
                start = end;
            }
            None => selected.push(part),
        }
    }
    (selected, skip)
}

/// The station's month files with rows of `parameter`, ascending.
pub(super) fn month_parts<'a>(
    files: &'a StationFiles,
    parameter: &ParameterId,
) -> Vec<MonthPart<'a>> {
    files
        .iter()
        .filter_map(|f| {
            let stats = f.file.series.iter().find(|s| s.parameter == *parameter)?;
            (stats.rows > 0).then_some(MonthPart {
                month: f,
                stats,
                rows: None,
            })
        })
        .collect()
}

/// How a query reads its series, decided before any of its rows is read (only the months cut
/// by the window are counted, where a total, an offset or `recent` needs their rows): the
/// months that can hold the answer and which of their rows answer, in which order.
pub(super) struct Access<'a> {
    /// The answer's columns.
    pub columns: Vec<ValueColumn>,
    pub schema: SchemaRef,
    /// The series' months that overlap the window, in time order, counted where needed.
    pub parts: Vec<MonthPart<'a>>,
    /// The window in time, inclusive.
    pub window: (Micros, Micros),
    /// The collection's rows, where they are known.
    pub total: Option<u64>,
    pub order: Order,
}

/// Which rows of the window answer, as ascending positions `[a, b)` among its rows, and the
/// way they are read.
pub(super) enum Order {
    /// None: a zero `limit`, or nothing in the window.
    Nothing,
    /// In time order; `whole_window` when the positions are all of the window's rows.
    Ascending {
        rows: (u64, u64),
        whole_window: bool,
    },
    /// Newest first: the positions read from the last.
    Descending { rows: (u64, u64) },
    /// Sorted by other columns: the whole collection through a DataFusion sort, then the page.
    Sorted { rows: (u64, u64) },
}

impl Dataset {
    /// The access plan of `q` over `months`, its station's files.
    pub(super) async fn access_plan<'a>(
        &self,
        months: &'a StationFiles,
        q: &ValuesQuery,
    ) -> Result<Access<'a>> {
        let columns = if q.columns.is_empty() {
            ValueColumn::ALL.to_vec()
        } else {
            q.columns.clone()
        };
        let schema = output_schema(&columns, self.has_gaps())?;
        let mut parts = month_parts(months, &q.parameter);

        // The window in time, inclusive.
        let (lo, hi) = match q.window {
            Window::Between { from, to } => {
                (from.unwrap_or(Micros::MIN), to.unwrap_or(Micros::MAX))
            }
            Window::Recent(_) => (Micros::MIN, Micros::MAX),
            Window::Last(d) => match parts.last() {
                None => (Micros::MIN, Micros::MAX),
                Some(p) => {
                    let end = DateTime::<Utc>::from_timestamp_micros(p.stats.max)
                        .ok_or_else(|| EngineError::corrupt("timestamp out of range"))?;
                    let start = d
                        .before(end)
                        .map_or(Micros::MIN, |s| s.timestamp_micros().saturating_add(1));
                    (start, p.stats.max)
                }
            },
        };
        if lo > hi {
            return Err(EngineError::InvalidQuery("'from' is after 'to'".into()));
        }
        parts.retain(|p| p.stats.max >= lo && p.stats.min <= hi);

        let time_order = match q.sort.first() {
            None => Some(false),
            Some(k) if k.column == ValueColumn::Timestamp => Some(k.descending),
            Some(_) => None,
        };
        let needs_counts = q.need_total
            || q.offset > 0
            || matches!(q.window, Window::Recent(_))
            || time_order != Some(false);
        // Cumulative row positions of each month inside the window.
        let mut total_in_window = None;
        if needs_counts {
            let mut sum = 0u64;
            for part in parts.iter_mut() {
                let n = self.count_part(part, lo, hi).await?;
                part.rows = Some(n);
                sum += n;
            }
            total_in_window = Some(sum);
        }

        // The collection as an ascending index range [c0, c1) of the window's rows.
        let (c0, c1) = match (q.window, total_in_window) {
            (Window::Recent(n), Some(all)) => (all - n.min(all), all),
            (_, Some(all)) => (0, all),
            (_, None) => (0, u64::MAX),
        };
        let page_len = q.limit.unwrap_or(u64::MAX);
        let order = if q.limit == Some(0) || c0 >= c1 {
            Order::Nothing
        } else {
            match time_order {
                Some(false) => {
                    let a = c0.saturating_add(q.offset).min(c1);
                    let b = a.saturating_add(page_len).min(c1);
                    Order::Ascending {
                        rows: (a, b),
                        whole_window: a == 0 && b == c1,
                    }
                }
                Some(true) => {
                    // Position p of the descending collection is ascending index c1 - 1 - p.
                    let b = c1.saturating_sub(q.offset).max(c0);
                    let a = b.saturating_sub(page_len).max(c0);
                    Order::Descending { rows: (a, b) }
                }
                None => Order::Sorted { rows: (c0, c1) },
            }
        };
        Ok(Access {
            columns,
            schema,
            parts,
            window: (lo, hi),
            total: total_in_window.map(|_| c1 - c0),
            order,
        })
    }

    pub(super) fn month_read(&self, part: &MonthPart<'_>, columns: Arc<[usize]>) -> MonthRead {
        MonthRead::new(self, part.month, part.row_group(), columns)
    }

    /// Rows of `part` inside [lo, hi]: from the manifest when the month lies inside, else from
    /// the month's timestamps.
    async fn count_part(&self, part: &MonthPart<'_>, lo: Micros, hi: Micros) -> Result<u64> {
        if part.inside(lo, hi) {
            return Ok(part.stats.rows);
        }
        if part.stats.max < lo || part.stats.min > hi {
            return Ok(0);
        }
        let times = [ValueColumn::Timestamp];
        let month = self.month_read(part, column_indices(&times)?.into());
        let rows = month
            .within(output_schema(&times, self.has_gaps())?, (lo, hi))
            .await?;
        Ok(rows.num_rows() as u64)
    }
}
