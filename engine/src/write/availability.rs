//! Each series' availability: the periods that have values, split where the series has a gap
//! longer than [`GAP_STEPS`] of its interval (a 23.5-hour outage of a 15-minute series is two
//! periods, not one from the first value to the last).
//!
//! The periods are found where the values are: a month's while it is encoded (its
//! timestamps are at hand), and joined across months as the files are noted, in whatever
//! order they are written; what is kept is a series' periods, not its files. A month an
//! append carries over unchanged is not read again: its periods are the previous version's
//! availability within its time range.

use crate::model::{Micros, Period};

/// A step longer than this many of the series' usual steps splits its availability.
pub const GAP_STEPS: i64 = 6;

/// The periods of ascending `timestamps`, split at steps longer than [`GAP_STEPS`] of their
/// median step.
pub fn periods_of(timestamps: &[Micros]) -> Vec<Period> {
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
/// they are at most [`GAP_STEPS`] steps apart.
#[derive(Debug, Default, Clone)]
pub struct Spans {
    /// The series' usual step: the smallest mean step of a file of it.
    step: Option<i64>,
    periods: Vec<Period>,
}

impl Spans {
    /// A file's periods of the series, `rows` values from `min` to `max`.
    pub fn add(&mut self, periods: &[Period], rows: u64, min: Micros, max: Micros) {
        if rows > 1 {
            let mean = (max - min) / (rows as i64 - 1);
            self.step = Some(self.step.map_or(mean, |s| s.min(mean)));
        }
        for p in periods {
            let at = self.periods.partition_point(|q| q.start < p.start);
            self.periods.insert(at, *p);
            self.join_around(at);
        }
    }

    /// Joins the period at `at` with its neighbours where they are close enough.
    fn join_around(&mut self, at: usize) {
        let mut at = at;
        if at > 0 && self.close(at - 1, at) {
            self.join(at - 1);
            at -= 1;
        }
        if at + 1 < self.periods.len() && self.close(at, at + 1) {
            self.join(at);
        }
    }

    fn close(&self, a: usize, b: usize) -> bool {
        let limit = self.step.map_or(0, |s| s.saturating_mul(GAP_STEPS));
        self.periods[b].start.saturating_sub(self.periods[a].end) <= limit
    }

    /// Joins the period at `at` and the one after it.
    fn join(&mut self, at: usize) {
        let next = self.periods.remove(at + 1);
        let p = &mut self.periods[at];
        p.end = p.end.max(next.end);
        p.start = p.start.min(next.start);
    }

    /// Both series' periods as one (a series' written months and its carried ones).
    pub fn merged(mut self, other: Spans) -> Spans {
        self.step = match (self.step, other.step) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for p in other.periods {
            let at = self.periods.partition_point(|q| q.start < p.start);
            self.periods.insert(at, p);
            self.join_around(at);
        }
        self
    }

    /// The periods within `within` (sorted, disjoint): a carried month's share of the
    /// previous version's availability.
    pub fn within(self, within: &[Period]) -> Spans {
        let mut periods = Vec::new();
        for p in &self.periods {
            for w in within {
                let (start, end) = (p.start.max(w.start), p.end.min(w.end));
                if start <= end {
                    periods.push(Period { start, end });
                }
            }
        }
        Spans {
            step: self.step,
            periods,
        }
    }

    pub fn into_periods(self) -> Vec<Period> {
        self.periods
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEP: i64 = 900_000_000;

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
