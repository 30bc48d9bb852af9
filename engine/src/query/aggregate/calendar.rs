//! Buckets in time. Sub-day buckets lie on a fixed grid of UTC instants counted from midnight
//! UTC (as pandas `resample` and DuckDB `time_bucket` do by default); day, month and year
//! buckets follow the calendar of the answer's zone, from local midnight of their first day,
//! and months and years are counted from `yearStart` (hydrological years: Germany 11, USGS 10).

use crate::model::Micros;
use crate::model::duration::IsoDuration;
use crate::model::zone::Zone;
use chrono::{Datelike, Months, NaiveDate};
use std::fmt;

const MINUTE: i64 = 60_000_000;
const DAY: i64 = 24 * 60 * MINUTE;

/// A bucket length (`interval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interval {
    /// Microseconds: a whole number of minutes that divides a day.
    Fixed(i64),
    /// A local day.
    Day,
    /// Months: 1, 2, 3, 4, 6 or 12 (a year).
    Months(u32),
}

/// What `interval` takes, as a 400 lists it.
pub const INTERVALS: &str = "PT1M … PT12H (minutes or hours that divide a day, e.g. PT15M, PT30M, \
                             PT1H, PT3H, PT6H, PT12H), P1D, P1M, P2M, P3M, P4M, P6M, P1Y";

impl Interval {
    /// The bucket an ISO 8601 duration names, if it is one of [`INTERVALS`].
    pub fn of(d: IsoDuration) -> Option<Self> {
        match (d.months, d.micros) {
            (0, DAY) => Some(Self::Day),
            (0, m) if m > 0 && m < DAY && m % MINUTE == 0 && DAY % m == 0 => Some(Self::Fixed(m)),
            (n, 0) if n > 0 && 12 % n == 0 => Some(Self::Months(n)),
            _ => None,
        }
    }

    /// Its length as the calendar names it (a day 24 hours, a month 28 days at least), to
    /// compare with a series' own interval: a bucket finer than the values it summarises is
    /// refused, a daily one over daily values is not (a DST day's 23 hours hold its one value).
    pub fn nominal(self) -> i64 {
        match self {
            Self::Fixed(m) => m,
            Self::Day => DAY,
            Self::Months(n) => i64::from(n) * 28 * DAY,
        }
    }

    /// The shortest a bucket of this kind can be (a chart's bars are no wider).
    pub fn shortest(self) -> i64 {
        match self {
            Self::Fixed(m) => m,
            // A day of a DST change is 23 hours.
            Self::Day => DAY - 60 * MINUTE,
            Self::Months(n) => i64::from(n) * 28 * DAY - 60 * MINUTE,
        }
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Fixed(m) if m % (60 * MINUTE) == 0 => write!(f, "PT{}H", m / (60 * MINUTE)),
            Self::Fixed(m) => write!(f, "PT{}M", m / MINUTE),
            Self::Day => f.write_str("P1D"),
            Self::Months(12) => f.write_str("P1Y"),
            Self::Months(n) => write!(f, "P{n}M"),
        }
    }
}

/// A bucket: `[start, end)` in UTC microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bucket {
    pub start: Micros,
    pub end: Micros,
}

impl Bucket {
    pub(crate) fn contains(&self, t: Micros) -> bool {
        self.start <= t && t < self.end
    }
}

/// The buckets of an interval in a zone.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Grid {
    pub interval: Interval,
    pub zone: Zone,
    /// The month (1-12) month buckets are counted from.
    pub year_start: u32,
}

impl Grid {
    /// The bucket that holds the instant `t`.
    pub(crate) fn bucket(&self, t: Micros) -> Bucket {
        match self.interval {
            Interval::Fixed(len) => {
                let start = t.div_euclid(len) * len;
                Bucket {
                    start,
                    end: start + len,
                }
            }
            Interval::Day => self.calendar_bucket(self.zone.local_date(t)),
            Interval::Months(n) => {
                let date = self.zone.local_date(t);
                self.calendar_bucket(self.month_start(date, n))
            }
        }
    }

    /// The bucket `n` buckets before the one that starts at `start` (for `recent`).
    pub(crate) fn back(&self, bucket: Bucket, n: u64) -> Bucket {
        let n32 = u32::try_from(n).unwrap_or(u32::MAX);
        match self.interval {
            Interval::Fixed(len) => {
                let start = bucket
                    .start
                    .saturating_sub(len.saturating_mul(i64::try_from(n).unwrap_or(i64::MAX)));
                Bucket {
                    start,
                    end: start.saturating_add(len),
                }
            }
            Interval::Day => {
                let date = self.zone.local_date(bucket.start);
                let earlier = date
                    .checked_sub_days(chrono::Days::new(u64::from(n32)))
                    .unwrap_or(NaiveDate::MIN);
                self.calendar_bucket(earlier)
            }
            Interval::Months(m) => {
                let date = self.zone.local_date(bucket.start);
                let earlier = date
                    .checked_sub_months(Months::new(n32.saturating_mul(m)))
                    .unwrap_or(NaiveDate::MIN);
                self.calendar_bucket(earlier)
            }
        }
    }

    /// The first day of the `n`-month bucket that holds `date`, months counted from
    /// `year_start`.
    fn month_start(&self, date: NaiveDate, n: u32) -> NaiveDate {
        let months = date.year() * 12 + date.month0() as i32;
        let anchor = self.year_start.clamp(1, 12) as i32 - 1;
        let first = (months - anchor).div_euclid(n as i32) * n as i32 + anchor;
        NaiveDate::from_ymd_opt(first.div_euclid(12), first.rem_euclid(12) as u32 + 1, 1)
            .unwrap_or(date)
    }

    /// The calendar bucket that starts on local day `first`.
    fn calendar_bucket(&self, first: NaiveDate) -> Bucket {
        let next = match self.interval {
            Interval::Months(n) => first.checked_add_months(Months::new(n)),
            _ => first.succ_opt(),
        }
        .unwrap_or(NaiveDate::MAX);
        Bucket {
            start: self.zone.day_start(first),
            end: self.zone.day_start(next),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::DateTime;

    fn utc(s: &str) -> Micros {
        DateTime::parse_from_rfc3339(s)
            .map(|t| t.timestamp_micros())
            .unwrap_or(0)
    }

    fn interval(s: &str) -> Option<Interval> {
        Interval::of(s.parse().ok()?)
    }

    #[test]
    fn the_listed_intervals_are_taken_and_others_refused() {
        for ok in [
            "PT1M", "PT15M", "PT30M", "PT1H", "PT3H", "PT6H", "PT12H", "P1D", "P1M", "P3M", "P1Y",
            "P12M",
        ] {
            let i = interval(ok);
            assert!(i.is_some(), "{ok}");
        }
        assert_eq!(interval("P12M").map(|i| i.to_string()), Some("P1Y".into()));
        for bad in [
            "PT7M", "PT90S", "PT1S", "P2D", "P1W", "P5M", "P2Y", "P1DT1H", "P1MT1H",
        ] {
            assert_eq!(interval(bad), None, "{bad}");
        }
    }

    #[test]
    fn hydrological_years_start_in_november_local_time() {
        let grid = Grid {
            interval: Interval::Months(12),
            zone: Zone::parse("Europe/Berlin").unwrap_or(Zone::UTC),
            year_start: 11,
        };
        let b = grid.bucket(utc("2024-03-05T12:00:00Z"));
        assert_eq!(b.start, utc("2023-10-31T23:00:00Z"));
        assert_eq!(b.end, utc("2024-10-31T23:00:00Z"));
        // The first quarter-hour of November, local, is in the next year.
        assert_eq!(grid.bucket(utc("2024-10-31T23:00:00Z")).start, b.end);
        assert_eq!(grid.back(b, 2).start, utc("2021-10-31T23:00:00Z"));
    }

    #[test]
    fn sub_day_buckets_lie_on_the_utc_grid_whatever_the_zone() {
        let grid = Grid {
            interval: Interval::Fixed(3 * 60 * MINUTE),
            zone: Zone::parse("+05:30").unwrap_or(Zone::UTC),
            year_start: 1,
        };
        let b = grid.bucket(utc("2024-01-01T04:15:00Z"));
        assert_eq!(
            (b.start, b.end),
            (utc("2024-01-01T03:00:00Z"), utc("2024-01-01T06:00:00Z"))
        );
    }

    #[test]
    fn quarters_follow_the_year_start() {
        let grid = Grid {
            interval: Interval::Months(3),
            zone: Zone::UTC,
            year_start: 11,
        };
        let b = grid.bucket(utc("2024-01-15T00:00:00Z"));
        assert_eq!(b.start, utc("2023-11-01T00:00:00Z"));
        assert_eq!(b.end, utc("2024-02-01T00:00:00Z"));
    }
}
