//! Time-axis ticks on calendar boundaries of the chart's zone (its wall clock, DST included):
//! whole hours, midnights,
//! Mondays, dekads, firsts of months, New Year's days. plotters spaces an integer axis's ticks
//! evenly over the span, which puts labels at times nobody reads a chart by (03:17, the 9th).

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, Timelike};
use hydro_engine::Zone;

const HOUR: i64 = 3_600_000_000;
const DAY: i64 = 24 * HOUR;

/// A distance between ticks on the calendar.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Hours(u32),
    Days(u32),
    Week,
    /// The 1st, 11th and 21st of each month: the ten-day periods hydrology reports by.
    Dekad,
    Months(u32),
    Years(i32),
}

/// From finest to coarsest; the first that gives at most the wanted number of ticks is used.
const STEPS: [Step; 18] = [
    Step::Hours(1),
    Step::Hours(2),
    Step::Hours(3),
    Step::Hours(6),
    Step::Hours(12),
    Step::Days(1),
    Step::Days(2),
    Step::Week,
    Step::Dekad,
    Step::Months(1),
    Step::Months(2),
    Step::Months(3),
    Step::Months(6),
    Step::Years(1),
    Step::Years(2),
    Step::Years(5),
    Step::Years(10),
    Step::Years(100),
];

impl Step {
    /// About how long a step is, for choosing one.
    fn micros(self) -> i64 {
        match self {
            Step::Hours(h) => i64::from(h) * HOUR,
            Step::Days(d) => i64::from(d) * DAY,
            Step::Week => 7 * DAY,
            Step::Dekad => 10 * DAY,
            Step::Months(m) => i64::from(m) * 30 * DAY,
            Step::Years(y) => i64::from(y) * 365 * DAY,
        }
    }

    /// How a tick at this step is labelled: no finer than the step.
    fn format(self) -> &'static str {
        match self {
            Step::Hours(_) => "%m-%d %H:%M",
            Step::Days(_) | Step::Week | Step::Dekad => "%Y-%m-%d",
            Step::Months(_) => "%Y-%m",
            Step::Years(_) => "%Y",
        }
    }

    /// The last tick at or before `t` (local time).
    fn floor(self, t: NaiveDateTime) -> NaiveDateTime {
        let date = t.date();
        let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).unwrap_or(t);
        let first_of =
            |year: i32, month: u32| NaiveDate::from_ymd_opt(year, month, 1).map_or(t, midnight);
        match self {
            Step::Hours(h) => date.and_hms_opt(t.hour() / h * h, 0, 0).unwrap_or(t),
            Step::Days(d) => {
                let behind = date.num_days_from_ce().rem_euclid(d as i32);
                midnight(date - Duration::days(i64::from(behind)))
            }
            Step::Week => {
                let behind = date.weekday().num_days_from_monday();
                midnight(date - Duration::days(i64::from(behind)))
            }
            Step::Dekad => {
                let day = (date.day().min(21) - 1) / 10 * 10 + 1;
                date.with_day(day).map_or(t, midnight)
            }
            Step::Months(m) => first_of(date.year(), (date.month0() / m) * m + 1),
            Step::Years(y) => first_of(date.year().div_euclid(y) * y, 1),
        }
    }

    /// The tick after `t` (a tick).
    fn next(self, t: NaiveDateTime) -> Option<NaiveDateTime> {
        match self {
            Step::Hours(h) => t.checked_add_signed(Duration::hours(i64::from(h))),
            Step::Days(d) => t.checked_add_signed(Duration::days(i64::from(d))),
            Step::Week => t.checked_add_signed(Duration::days(7)),
            Step::Dekad if t.day() < 21 => t.with_day(t.day() + 10),
            Step::Dekad => t.with_day(1)?.checked_add_months(chrono::Months::new(1)),
            Step::Months(m) => t.checked_add_months(chrono::Months::new(m)),
            Step::Years(y) => t.with_year(t.year().checked_add(y)?),
        }
    }
}

/// Ticks within `from..=to` (UTC microseconds), at most `most` of them, on calendar
/// boundaries of `zone`'s wall clock, and the `strftime` form their labels take: the finest step that
/// gives between two and `most` ticks (or, if none does, the finest that gives no more than
/// `most`: a window shorter than an hour, or a chart too narrow for two labels).
pub(super) fn calendar_ticks(
    from: i64,
    to: i64,
    zone: Zone,
    most: usize,
) -> (Vec<i64>, &'static str) {
    let span = to.saturating_sub(from).max(1);
    let mut fallback = None;
    for step in STEPS {
        // Steps that would give far too many ticks are not walked.
        if span / step.micros() > 2 * most as i64 {
            continue;
        }
        let ticks = ticks_at(step, from, to, zone, most + 1);
        if ticks.len() > most {
            continue;
        }
        if ticks.len() >= 2 {
            return (ticks, step.format());
        }
        fallback.get_or_insert((ticks, step.format()));
    }
    fallback.unwrap_or_else(|| (Vec::new(), Step::Years(100).format()))
}

/// The ticks of `step` within `from..=to`, at most `limit` of them.
fn ticks_at(step: Step, from: i64, to: i64, zone: Zone, limit: usize) -> Vec<i64> {
    let mut ticks = Vec::new();
    let mut at = Some(step.floor(zone.local(from)));
    while let Some(t) = at {
        // A tick in an hour the clocks skip is left out.
        let Some(micros) = zone.instant(t, false) else {
            at = step.next(t);
            continue;
        };
        if micros > to || ticks.len() >= limit {
            break;
        }
        if micros >= from {
            ticks.push(micros);
        }
        at = step.next(t);
    }
    ticks
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, FixedOffset};

    fn at(s: &str) -> i64 {
        DateTime::parse_from_rfc3339(s).unwrap().timestamp_micros()
    }

    fn labels(from: &str, to: &str, offset: FixedOffset) -> Vec<String> {
        let zone = Zone::Fixed(offset);
        let (ticks, format) = calendar_ticks(at(from), at(to), zone, 8);
        ticks
            .into_iter()
            .map(|t| zone.local(t).format(format).to_string())
            .collect()
    }

    #[test]
    fn ticks_fall_on_calendar_boundaries_of_the_offset() {
        let cet = FixedOffset::east_opt(3600).unwrap();
        let utc = FixedOffset::east_opt(0).unwrap();
        // Ten years: every other New Year's day (ten would be more than eight).
        assert_eq!(
            labels("2014-03-17T09:13:00Z", "2024-03-17T09:13:00Z", utc),
            ["2016", "2018", "2020", "2022", "2024"]
        );
        // A day in +01:00: every three hours from local midnight.
        assert_eq!(
            labels(
                "2024-03-01T00:00:00+01:00",
                "2024-03-02T00:00:00+01:00",
                cet
            ),
            [
                "03-01 00:00",
                "03-01 03:00",
                "03-01 06:00",
                "03-01 09:00",
                "03-01 12:00",
                "03-01 15:00",
                "03-01 18:00",
                "03-01 21:00",
                "03-02 00:00"
            ][..]
                .iter()
                .step_by(2)
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
        );
        // Thirty days: Mondays.
        assert_eq!(
            labels("2024-03-01T00:00:00Z", "2024-03-31T00:00:00Z", utc),
            ["2024-03-04", "2024-03-11", "2024-03-18", "2024-03-25"]
        );
        // A year: firsts of every other month.
        assert_eq!(
            labels("2023-11-25T10:00:00Z", "2024-11-25T10:00:00Z", utc),
            [
                "2024-01", "2024-03", "2024-05", "2024-07", "2024-09", "2024-11"
            ]
        );
    }

    /// A narrow chart of 30 days that holds no first of a month still gets two ticks.
    #[test]
    fn narrow_charts_get_dekads() {
        let utc = FixedOffset::east_opt(0).unwrap();
        let (ticks, format) = calendar_ticks(
            at("2024-12-01T23:45:00Z"),
            at("2024-12-31T23:45:00Z"),
            Zone::Fixed(utc),
            3,
        );
        let shown: Vec<String> = ticks
            .iter()
            .map(|t| {
                DateTime::from_timestamp_micros(*t)
                    .unwrap()
                    .format(format)
                    .to_string()
            })
            .collect();
        assert_eq!(shown, ["2024-12-11", "2024-12-21"]);
    }

    #[test]
    fn ticks_stay_within_the_window_and_few() {
        let utc = FixedOffset::east_opt(0).unwrap();
        for (from, to) in [
            (0, 1),
            (0, 59 * 60_000_000),
            (at("1900-01-01T00:00:00Z"), at("2100-01-01T00:00:00Z")),
            (at("2024-02-29T23:00:00Z"), at("2024-03-01T01:00:00Z")),
        ] {
            let (ticks, _) = calendar_ticks(from, to, Zone::Fixed(utc), 8);
            assert!(ticks.len() <= 8, "{ticks:?}");
            assert!(ticks.iter().all(|t| (from..=to).contains(t)), "{ticks:?}");
            assert!(ticks.windows(2).all(|w| w[0] < w[1]));
        }
    }
}
