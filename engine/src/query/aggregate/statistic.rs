//! The statistics of a bucket (`aggregate`), computed from its values in time order, one
//! bucket at a time: percentiles hold the bucket's values (a year of quarter-hours is 35 000
//! numbers), the others a few numbers.

use crate::dataset::rollups::DayRow;
use crate::model::Micros;
use std::fmt;
use std::str::FromStr;

/// A statistic a bucket can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Statistic {
    Mean,
    Min,
    Max,
    Sum,
    Count,
    First,
    Last,
    Median,
    /// 1 … 99: the percentile, linear between the two nearest values (pandas `quantile`,
    /// DataFusion `percentile_cont`, DuckDB `quantile_cont`).
    Percentile(u8),
    /// The time of the lowest value; the first one on ties.
    MinTime,
    /// The time of the highest value; the first one on ties.
    MaxTime,
}

/// What `aggregate` takes, as a 400 lists it.
pub const STATISTICS: &str =
    "mean, min, max, sum, count, first, last, median, p1 … p99, minTime, maxTime";

/// What a statistic's cells hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Number,
    Time,
    Count,
}

impl Statistic {
    pub fn kind(self) -> Kind {
        match self {
            Self::MinTime | Self::MaxTime => Kind::Time,
            Self::Count => Kind::Count,
            _ => Kind::Number,
        }
    }

    /// Whether the statistic needs the bucket's values sorted (daily rollups cannot give it).
    pub(crate) fn ranks(self) -> bool {
        matches!(self, Self::Median | Self::Percentile(_))
    }
}

impl FromStr for Statistic {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        Ok(match s {
            "mean" => Self::Mean,
            "min" => Self::Min,
            "max" => Self::Max,
            "sum" => Self::Sum,
            "count" => Self::Count,
            "first" => Self::First,
            "last" => Self::Last,
            "median" => Self::Median,
            "minTime" => Self::MinTime,
            "maxTime" => Self::MaxTime,
            _ => {
                let digits = s.strip_prefix('p').ok_or(())?;
                let whole = !digits.is_empty()
                    && !digits.starts_with('0')
                    && digits.bytes().all(|b| b.is_ascii_digit());
                let p: u8 = digits.parse().map_err(|_| ())?;
                if !whole || !(1..=99).contains(&p) {
                    return Err(());
                }
                Self::Percentile(p)
            }
        })
    }
}

impl fmt::Display for Statistic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Self::Mean => "mean",
            Self::Min => "min",
            Self::Max => "max",
            Self::Sum => "sum",
            Self::Count => "count",
            Self::First => "first",
            Self::Last => "last",
            Self::Median => "median",
            Self::MinTime => "minTime",
            Self::MaxTime => "maxTime",
            Self::Percentile(p) => return write!(f, "p{p}"),
        };
        f.write_str(name)
    }
}

/// A statistic's value for a bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Cell {
    Number(f64),
    Time(Micros),
    Count(i64),
}

/// The values of one bucket so far.
#[derive(Debug, Default)]
pub(crate) struct Accumulator {
    count: u64,
    sum: f64,
    min: (f64, Micros),
    max: (f64, Micros),
    first: (f64, Micros),
    last: (f64, Micros),
    /// The values, kept only when a statistic ranks them; sorted once asked.
    values: Vec<f64>,
    keep_values: bool,
    sorted: bool,
}

impl Accumulator {
    pub(crate) fn new(statistics: &[Statistic]) -> Self {
        Self {
            keep_values: statistics.iter().any(|s| s.ranks()),
            ..Self::default()
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// Times of the first and the last value.
    pub(crate) fn span(&self) -> (Micros, Micros) {
        (self.first.1, self.last.1)
    }

    /// Adds a value; values come in time order. (Recorded gaps reach a query as nulls, which
    /// the callers skip.)
    #[inline]
    pub(crate) fn push(&mut self, t: Micros, v: f64) {
        if self.count == 0 {
            self.min = (v, t);
            self.max = (v, t);
            self.first = (v, t);
        } else {
            if v < self.min.0 {
                self.min = (v, t);
            }
            if v > self.max.0 {
                self.max = (v, t);
            }
        }
        self.last = (v, t);
        self.count += 1;
        self.sum += v;
        if self.keep_values {
            self.values.push(v);
        }
    }

    /// Adds a day's values as its rollup row summarises them; days come in time order, after
    /// the values before them. Never for statistics that rank values.
    pub(crate) fn push_day(&mut self, d: &DayRow) {
        if self.count == 0 {
            self.min = (d.min, d.min_time);
            self.max = (d.max, d.max_time);
            self.first = (d.first, d.first_time);
        } else {
            if d.min < self.min.0 {
                self.min = (d.min, d.min_time);
            }
            if d.max > self.max.0 {
                self.max = (d.max, d.max_time);
            }
        }
        self.last = (d.last, d.last_time);
        self.count += u64::try_from(d.count).unwrap_or(0);
        self.sum += d.sum;
    }

    /// The statistic over the values pushed since the last [`Self::clear`]; at least one.
    pub(crate) fn get(&mut self, s: Statistic) -> Cell {
        match s {
            Statistic::Mean => Cell::Number(self.sum / self.count as f64),
            Statistic::Min => Cell::Number(self.min.0),
            Statistic::Max => Cell::Number(self.max.0),
            Statistic::Sum => Cell::Number(self.sum),
            Statistic::Count => Cell::Count(i64::try_from(self.count).unwrap_or(i64::MAX)),
            Statistic::First => Cell::Number(self.first.0),
            Statistic::Last => Cell::Number(self.last.0),
            Statistic::MinTime => Cell::Time(self.min.1),
            Statistic::MaxTime => Cell::Time(self.max.1),
            Statistic::Median => Cell::Number(self.quantile(0.5)),
            Statistic::Percentile(p) => Cell::Number(self.quantile(f64::from(p) / 100.0)),
        }
    }

    /// The `q` quantile, linear between the two nearest ranks (numpy's `linear`).
    pub(crate) fn quantile(&mut self, q: f64) -> f64 {
        if !self.sorted {
            self.values.sort_unstable_by(f64::total_cmp);
            self.sorted = true;
        }
        let n = self.values.len();
        if n == 0 {
            return f64::NAN;
        }
        let pos = q * (n - 1) as f64;
        let lo = pos.floor() as usize;
        let hi = (lo + 1).min(n - 1);
        let (a, b) = (self.values[lo], self.values[hi]);
        let t = pos - lo as f64;
        // numpy's lerp: from the nearer end, so that equal neighbours give exactly their value.
        if t < 0.5 {
            a + (b - a) * t
        } else {
            b - (b - a) * (1.0 - t)
        }
    }

    /// Empties the accumulator for the next bucket, keeping its memory.
    pub(crate) fn clear(&mut self) {
        self.count = 0;
        self.sum = 0.0;
        self.values.clear();
        self.sorted = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_percentiles_are_refused() {
        for s in [
            "mean", "min", "max", "sum", "count", "first", "last", "median", "p1", "p99", "p50",
            "minTime", "maxTime",
        ] {
            assert_eq!(
                s.parse::<Statistic>().map(|x| x.to_string()),
                Ok(s.to_owned())
            );
        }
        for bad in [
            "p0", "p100", "p50.5", "p05", "p", "P50", "avg", "mintime", "p-1", "p+5",
        ] {
            assert!(bad.parse::<Statistic>().is_err(), "{bad}");
        }
    }

    #[test]
    fn statistics_of_a_bucket_with_ties() {
        let mut a = Accumulator::new(&[Statistic::Median]);
        for (t, v) in [(10, 3.0), (20, 1.0), (30, 4.0), (40, 1.0), (50, 4.0)] {
            a.push(t, v);
        }
        assert_eq!(a.get(Statistic::Mean), Cell::Number(2.6));
        assert_eq!(a.get(Statistic::MinTime), Cell::Time(20));
        assert_eq!(a.get(Statistic::MaxTime), Cell::Time(30));
        assert_eq!(a.get(Statistic::Median), Cell::Number(3.0));
        // Sorted 1 1 3 4 4: p25 at rank 1 (1.0), p90 at rank 3.6: 4.0.
        assert_eq!(a.get(Statistic::Percentile(25)), Cell::Number(1.0));
        assert_eq!(a.get(Statistic::Percentile(90)), Cell::Number(4.0));
        assert_eq!(a.get(Statistic::Percentile(60)), Cell::Number(3.4));
        assert_eq!(a.get(Statistic::First), Cell::Number(3.0));
        assert_eq!(a.get(Statistic::Last), Cell::Number(4.0));
        assert_eq!(a.get(Statistic::Count), Cell::Count(5));
        a.clear();
        a.push(60, 7.0);
        assert_eq!(a.get(Statistic::Median), Cell::Number(7.0));
        assert_eq!(a.get(Statistic::Min), Cell::Number(7.0));
    }
}
