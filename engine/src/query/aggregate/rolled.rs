//! Buckets summed from a series' daily rollups ([`crate::dataset::rollups`]) instead of its
//! raw values, where the statistics allow it (those that rank values cannot be summed) and
//! the buckets are made of whole rollup days (days of the dataset's zone, UTC unless it has
//! one) but for a few:
//! - in the rollups' zone, days, months and years are whole rollup days;
//! - in any other zone, a quarter or a year (and longer) is whole rollup days but for the one
//!   its start cuts, so its rollup rows serve with the raw values of that day; months and
//!   shorter would read as many raw days as buckets, so they read raw values throughout.
//!
//! A day whose values lie in one bucket and inside the window is its rollup row; any other
//! day's values are read raw (from its month file, cut to the day and the window). Days are
//! summed in time order, so an answer is the same on every replica; it agrees with the raw
//! path to the last bits of sums and means (relative 1e-12 in `engine/tests/rollups.rs`).

use super::calendar::{Bucket, Grid, Interval};
use super::statistic::Accumulator;
use super::{AggregateSpec, Buckets, SeriesToAggregate};
use crate::dataset::Dataset;
use crate::dataset::rollups::{RollupFile, read_part};
use crate::error::Result;
use crate::model::Micros;
use crate::model::zone::Zone;
use crate::query::spec::{ReadAhead, ValueColumn, ValuesQuery, Window};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Float64Type, TimestampMicrosecondType};
use futures::StreamExt;

/// Whether the buckets of `spec` on `grid` are summed from rollups of the days of
/// `rollup_zone`.
pub(super) fn serves(spec: &AggregateSpec, grid: &Grid, rollup_zone: Zone) -> bool {
    let same_days = spec.zone == rollup_zone
        || spec
            .zone
            .fixed()
            .is_some_and(|o| rollup_zone.fixed() == Some(o));
    spec.qualities.is_none()
        && !spec.statistics.iter().any(|s| s.ranks())
        && match grid.interval {
            Interval::Fixed(_) => false,
            Interval::Day | Interval::Months(1 | 2) => same_days,
            Interval::Months(_) => true,
        }
}

impl Dataset {
    /// The buckets of the series in the window `[lo, hi]` from its station's rollup parts
    /// `parts` (ascending by their days), reading only those the window overlaps.
    pub(super) async fn rolled_buckets(
        &self,
        s: &SeriesToAggregate,
        (lo, hi): (Micros, Micros),
        spec: &AggregateSpec,
        grid: Grid,
        parts: &[RollupFile],
    ) -> Result<Buckets> {
        // The parts read side by side, their days put one after the other.
        let store = self.store.object.as_ref();
        let read = parts
            .iter()
            .filter(|p| p.may_hold(lo, hi))
            .map(|part| read_part(store, part, Some(&s.series.1)));
        let days: Vec<_> = futures::future::try_join_all(read)
            .await?
            .into_iter()
            .flatten()
            .collect();
        let mut out = Buckets::new(spec.statistics.len());
        let mut acc = Accumulator::new(&spec.statistics);
        let mut current: Option<Bucket> = None;
        let expected = |b: Bucket| s.step.map(|step| (b.end - b.start) as f64 / step as f64);
        // Starts the bucket of `t` when `t` is past the current one, closing that.
        let mut enter = |t: Micros, acc: &mut Accumulator, out: &mut Buckets| {
            if !current.is_some_and(|b| b.contains(t)) {
                if let Some(b) = current.filter(|_| acc.count() > 0) {
                    out.push(spec, b.start, acc, expected(b));
                }
                current = Some(grid.bucket(t));
            }
        };
        for d in days
            .iter()
            .filter(|d| d.last_time >= lo && d.first_time <= hi)
        {
            let whole = lo <= d.first_time
                && d.last_time <= hi
                && grid.bucket(d.first_time).contains(d.last_time);
            if whole {
                enter(d.first_time, &mut acc, &mut out);
                acc.push_day(d);
                continue;
            }
            let day = (lo.max(d.first_time), hi.min(d.last_time));
            for (t, v) in self.raw_values(s, day).await? {
                enter(t, &mut acc, &mut out);
                acc.push(t, v);
            }
        }
        if let Some(b) = current.filter(|_| acc.count() > 0) {
            out.push(spec, b.start, &mut acc, expected(b));
        }
        Ok(out)
    }

    /// The series' raw values in `[from, to]`, in time order.
    async fn raw_values(
        &self,
        s: &SeriesToAggregate,
        (from, to): (Micros, Micros),
    ) -> Result<Vec<(Micros, f64)>> {
        let query = ValuesQuery {
            station: s.series.0.clone(),
            parameter: s.series.1.clone(),
            window: Window::Between {
                from: Some(from),
                to: Some(to),
            },
            sort: Vec::new(),
            offset: 0,
            limit: None,
            columns: vec![ValueColumn::Timestamp, ValueColumn::Value],
            need_total: false,
            qualities: None,
        };
        let mut stream = self.plan_values(&query, ReadAhead::Monthly).await?.stream;
        let mut out = Vec::new();
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            let times = batch.column(0).as_primitive::<TimestampMicrosecondType>();
            let values = batch.column(1).as_primitive::<Float64Type>();
            out.extend(
                (0..batch.num_rows())
                    .filter(|&i| values.is_valid(i))
                    .map(|i| (times.value(i), values.value(i))),
            );
        }
        Ok(out)
    }
}
