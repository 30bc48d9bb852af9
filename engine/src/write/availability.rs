//! Each series' availability: the periods that have values, split where the series has a gap
//! longer than [`GAP_STEPS`] of its interval (a 23.5-hour outage of a 15-minute series is two
//! periods, not one from the first value to the last) and at every recorded gap (rows of
//! quality `missing`).
//!
//! The periods are found where the values are: a month's while it is encoded (its
//! timestamps are at hand), and joined across months as the files are noted, in whatever
//! order they are written; what is kept is a series' periods, not its files. A month an
//! append carries over unchanged is not read again: its periods are the previous version's
//! availability within its time range.

use crate::model::gap::is_gap;
use crate::model::{Micros, Period};

/// A step longer than this many of the series' usual steps splits its availability.
pub(crate) const GAP_STEPS: i64 = 6;

/// The periods with values of a series' ascending `timestamps` and their `values`: as
/// [`periods_of`], and split at every recorded gap (rows of quality `missing`, whose value is
/// a gap: [`is_gap`]), which belong to no period.
pub(crate) fn periods_with_values(timestamps: &[Micros], values: &[f64]) -> Vec<Period> {
    if !values.iter().any(|&v| is_gap(v)) {
        return periods_of(timestamps);
    }
    let mut steps: Vec<i64> = timestamps.windows(2).map(|w| w[1] - w[0]).collect();
    let limit = median(&mut steps).map(|m| m.saturating_mul(GAP_STEPS));
    let mut periods = Vec::new();
    let mut run: Option<Period> = None;
    for (&t, &v) in timestamps.iter().zip(values) {
        run = match run {
            _ if is_gap(v) => {
                periods.extend(run);
                None
            }
            Some(p) if limit.is_some_and(|l| t - p.end > l) => {
                periods.push(p);
                Some(Period { start: t, end: t })
            }
            Some(p) => Some(Period {
                start: p.start,
                end: t,
            }),
            None => Some(Period { start: t, end: t }),
        };
    }
    periods.extend(run);
    periods
}

/// The periods of ascending `timestamps`, split at steps longer than [`GAP_STEPS`] of their
/// median step.
pub(crate) fn periods_of(timestamps: &[Micros]) -> Vec<Period> {
    let (Some(&first), Some(&last)) = (timestamps.first(), timestamps.last()) else {
        return Vec::new();
    };
    let mut steps: Vec<i64> = timestamps.windows(2).map(|w| w[1] - w[0]).collect();
    let Some(limit) = median(&mut steps).map(|m| m.saturating_mul(GAP_STEPS)) else {
        return vec![Period {
            start: first,
            end: last,
        }];
    };
    let mut periods = Vec::new();
    let mut start = first;
    for w in timestamps.windows(2) {
        if w[1] - w[0] > limit {
            periods.push(Period { start, end: w[0] });
            start = w[1];
        }
    }
    periods.push(Period { start, end: last });
    periods
}

fn median(values: &mut [i64]) -> Option<i64> {
    if values.is_empty() {
        return None;
    }
    let mid = values.len() / 2;
    Some(*values.select_nth_unstable(mid).1)
}

/// A series' periods as its files report them, in any order, kept sorted and joined where
/// they are at most [`GAP_STEPS`] steps apart and come from different files: a file's own
/// periods were split on purpose where they were found (an outage, a recorded gap), while a
/// month's edge splits them only because months are files of their own.
#[derive(Debug, Default, Clone)]
pub(crate) struct Spans {
    /// The series' usual step: the smallest mean step of a file of it.
    step: Option<i64>,
    spans: Vec<Span>,
    /// Files added so far: the next one's number.
    files: u32,
}

/// A period and the files its first and last values came from.
#[derive(Debug, Clone, Copy)]
struct Span {
    period: Period,
    first_file: u32,
    last_file: u32,
}

impl Spans {
    /// A file's periods of the series, `rows` values from `min` to `max`.
    pub(crate) fn add(&mut self, periods: &[Period], rows: u64, min: Micros, max: Micros) {
        if rows > 1 {
            let mean = (max - min) / (rows as i64 - 1);
            self.step = Some(self.step.map_or(mean, |s| s.min(mean)));
        }
        let file = self.next_file();
        for &period in periods {
            self.insert(Span {
                period,
                first_file: file,
                last_file: file,
            });
        }
    }

    fn next_file(&mut self) -> u32 {
        self.files += 1;
        self.files
    }

    fn insert(&mut self, span: Span) {
        let at = self
            .spans
            .partition_point(|q| q.period.start < span.period.start);
        self.spans.insert(at, span);
        self.join_around(at);
    }

    /// Joins the period at `at` with its neighbours where they are one.
    fn join_around(&mut self, at: usize) {
        let mut at = at;
        if at > 0 && self.close(at - 1, at) {
            self.join(at - 1);
            at -= 1;
        }
        if at + 1 < self.spans.len() && self.close(at, at + 1) {
            self.join(at);
        }
    }

    fn close(&self, a: usize, b: usize) -> bool {
        let limit = self.step.map_or(0, |s| s.saturating_mul(GAP_STEPS));
        let (a, b) = (&self.spans[a], &self.spans[b]);
        a.last_file != b.first_file && b.period.start.saturating_sub(a.period.end) <= limit
    }

    /// Joins the period at `at` and the one after it.
    fn join(&mut self, at: usize) {
        let next = self.spans.remove(at + 1);
        let s = &mut self.spans[at];
        if next.period.end > s.period.end {
            s.period.end = next.period.end;
            s.last_file = next.last_file;
        }
        if next.period.start < s.period.start {
            s.period.start = next.period.start;
            s.first_file = next.first_file;
        }
    }

    /// Both series' periods as one (a series' written months and its carried ones).
    pub(crate) fn merged(mut self, other: Spans) -> Spans {
        self.step = match (self.step, other.step) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // The other's files are files of their own here.
        let offset = self.files;
        self.files += other.files;
        for s in other.spans {
            self.insert(Span {
                first_file: s.first_file + offset,
                last_file: s.last_file + offset,
                ..s
            });
        }
        self
    }

    /// The periods within `within` (sorted, disjoint): a carried month's share of the
    /// previous version's availability. They were joined as far as they are one when that
    /// version was written, so they count as one file: they never join each other again.
    pub(crate) fn within(self, within: &[Period]) -> Spans {
        let mut out = Spans {
            step: self.step,
            ..Spans::default()
        };
        let file = out.next_file();
        for s in &self.spans {
            for w in within {
                let (start, end) = (s.period.start.max(w.start), s.period.end.min(w.end));
                if start <= end {
                    out.spans.push(Span {
                        period: Period { start, end },
                        first_file: file,
                        last_file: file,
                    });
                }
            }
        }
        out.spans.sort_by_key(|s| s.period.start);
        out
    }

    pub(crate) fn into_periods(self) -> Vec<Period> {
        self.spans.into_iter().map(|s| s.period).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEP: i64 = 900_000_000;

    #[test]
    fn recorded_gaps_split_periods_and_belong_to_none() {
        let times: Vec<i64> = (0..10).map(|i| i * STEP).collect();
        let nan = f64::NAN;
        let values = [1.0, 2.0, nan, nan, 3.0, 4.0, 5.0, nan, 6.0, nan];
        assert_eq!(
            periods_with_values(&times, &values),
            vec![p(0, 1), p(4, 6), p(8, 8)]
        );
        assert_eq!(periods_with_values(&times, &[nan; 10]), vec![]);
        let whole = [1.0; 10];
        assert_eq!(periods_with_values(&times, &whole), periods_of(&times));
        // A long outage between valued rows still splits.
        let spread = [0, STEP, 2 * STEP, 50 * STEP, 51 * STEP];
        assert_eq!(
            periods_with_values(&spread, &[1.0, nan, 1.0, 1.0, 1.0]),
            vec![p(0, 0), p(2, 2), p(50, 51)]
        );
    }

    fn p(start: i64, end: i64) -> Period {
        Period {
            start: start * STEP,
            end: end * STEP,
        }
    }

    /// A 23.5-hour outage in a 15-minute series splits it; a missing value or two does not;
    /// months noted out of order join where they meet, and a carried month takes the
    /// previous availability within its range.
    #[test]
    fn gaps_split_and_months_join() {
        let mut times: Vec<i64> = (0..100).map(|i| i * STEP).collect();
        times.retain(|t| *t != 10 * STEP && *t != 11 * STEP);
        times.extend((194..300).map(|i| i * STEP));
        assert_eq!(periods_of(&times), [p(0, 99), p(194, 299)]);
        assert_eq!(periods_of(&[5]), [Period { start: 5, end: 5 }]);
        assert!(periods_of(&[]).is_empty());

        let mut spans = Spans::default();
        spans.add(&[p(300, 399)], 100, 300 * STEP, 399 * STEP);
        spans.add(&[p(0, 99), p(194, 299)], 206, 0, 299 * STEP);
        spans.add(&[p(500, 599)], 100, 500 * STEP, 599 * STEP);
        assert_eq!(
            spans.clone().into_periods(),
            [p(0, 99), p(194, 399), p(500, 599)]
        );

        let mut carried = Spans::default();
        carried.add(&[p(400, 499)], 100, 400 * STEP, 499 * STEP);
        let previous = [p(0, 450), p(470, 480)];
        let all = spans.merged(carried.within(&previous));
        assert_eq!(
            all.into_periods(),
            [p(0, 99), p(194, 450), p(470, 480), p(500, 599)]
        );
    }
}
