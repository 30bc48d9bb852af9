//! The time zone of an answer (`timeZone`): a fixed offset (`UTC`, `+01:00`) or an IANA zone
//! (`Europe/Berlin`). It gives the offset every output time is written in, and the calendar of
//! day, month and year buckets: local midnights, so a day around a DST change has 23 or 25
//! hours.

use crate::model::Micros;
use chrono::{DateTime, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    Fixed(FixedOffset),
    Named(Tz),
}

/// Why a `timeZone` was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneError;

impl fmt::Display for ZoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("expected an IANA time zone such as Europe/Berlin, UTC, or an offset ±HH:MM")
    }
}

const MICROS: i64 = 1_000_000;

impl Zone {
    pub const UTC: Zone = Zone::Fixed(FixedOffset::east_opt(0).expect("zero is an offset"));

    /// `UTC`, `±HH:MM` (at most ±18:00), or an IANA name as the tz database spells it.
    pub fn parse(s: &str) -> Result<Self, ZoneError> {
        if s == "UTC" || s == "Z" {
            return Ok(Self::UTC);
        }
        if let Some(rest) = s.strip_prefix('+').or_else(|| s.strip_prefix('-')) {
            let (h, m) = rest.split_once(':').ok_or(ZoneError)?;
            let digits = |t: &str| t.len() == 2 && t.bytes().all(|b| b.is_ascii_digit());
            if !digits(h) || !digits(m) {
                return Err(ZoneError);
            }
            let (h, m): (i32, i32) = (
                h.parse().map_err(|_| ZoneError)?,
                m.parse().map_err(|_| ZoneError)?,
            );
            if m >= 60 || h * 60 + m > 18 * 60 {
                return Err(ZoneError);
            }
            let secs = (h * 3600 + m * 60) * if s.starts_with('-') { -1 } else { 1 };
            return FixedOffset::east_opt(secs)
                .map(Self::Fixed)
                .ok_or(ZoneError);
        }
        s.parse::<Tz>().map(Self::Named).map_err(|_| ZoneError)
    }

    /// Seconds east of UTC at the instant `utc`.
    pub fn offset_secs(&self, utc: Micros) -> i32 {
        match self {
            Self::Fixed(o) => o.local_minus_utc(),
            Self::Named(tz) => DateTime::from_timestamp_micros(utc)
                .map(|t| {
                    tz.offset_from_utc_datetime(&t.naive_utc())
                        .fix()
                        .local_minus_utc()
                })
                .unwrap_or(0),
        }
    }

    /// The offset at the instant `utc`.
    pub fn offset_at(&self, utc: Micros) -> FixedOffset {
        FixedOffset::east_opt(self.offset_secs(utc))
            .unwrap_or(FixedOffset::east_opt(0).expect("zero"))
    }

    /// The local wall-clock time of the instant `utc`.
    pub fn local(&self, utc: Micros) -> NaiveDateTime {
        let local = utc.saturating_add(i64::from(self.offset_secs(utc)) * MICROS);
        DateTime::from_timestamp_micros(local)
            .map(|t| t.naive_utc())
            .unwrap_or_default()
    }

    /// The instant of the local time `local`: of a time the clocks pass twice, the earlier
    /// (`later`: the later one); None for a time they skip.
    pub fn instant(&self, local: NaiveDateTime, later: bool) -> Option<Micros> {
        match self {
            Self::Fixed(o) => Some(local_to_utc(local, o.local_minus_utc())),
            Self::Named(tz) => match tz.from_local_datetime(&local) {
                LocalResult::Single(t) => Some(t.timestamp_micros()),
                LocalResult::Ambiguous(a, b) => Some(if later { b } else { a }.timestamp_micros()),
                LocalResult::None => None,
            },
        }
    }

    /// Whether every instant has the same offset (the output needs no look-up per value).
    pub fn fixed(&self) -> Option<FixedOffset> {
        match self {
            Self::Fixed(o) => Some(*o),
            Self::Named(_) => None,
        }
    }

    /// The local date of the instant `utc`.
    pub fn local_date(&self, utc: Micros) -> NaiveDate {
        let local = utc.saturating_add(i64::from(self.offset_secs(utc)) * MICROS);
        DateTime::from_timestamp_micros(local)
            .map(|t| t.date_naive())
            .unwrap_or_default()
    }

    /// The first instant of the local day `date`: its midnight, the earlier one where midnight
    /// repeats, or where a change skips midnight (some zones switch at 00:00), the end of the
    /// gap.
    pub fn day_start(&self, date: NaiveDate) -> Micros {
        let midnight = date.and_time(chrono::NaiveTime::MIN);
        match self {
            Self::Fixed(o) => local_to_utc(midnight, o.local_minus_utc()),
            Self::Named(tz) => {
                let mut local = midnight;
                // Gaps are at most a few hours; step through them a quarter-hour at a time.
                for _ in 0..4 * 24 {
                    match tz.from_local_datetime(&local) {
                        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => {
                            return t.timestamp_micros();
                        }
                        LocalResult::None => local += chrono::TimeDelta::minutes(15),
                    }
                }
                local_to_utc(midnight, 0)
            }
        }
    }
}

fn local_to_utc(local: NaiveDateTime, offset_secs: i32) -> Micros {
    local.and_utc().timestamp_micros() - i64::from(offset_secs) * MICROS
}

impl fmt::Display for Zone {
    /// The name as given for IANA zones, `±HH:MM` for offsets (`+00:00` for UTC, as answers
    /// write it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Named(tz) => f.write_str(tz.name()),
            Self::Fixed(o) => {
                let s = o.local_minus_utc();
                let sign = if s < 0 { '-' } else { '+' };
                let a = s.abs();
                write!(f, "{sign}{:02}:{:02}", a / 3600, (a % 3600) / 60)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> Micros {
        DateTime::parse_from_rfc3339(s)
            .map(|t| t.timestamp_micros())
            .unwrap_or(0)
    }

    #[test]
    fn names_and_offsets_parse_and_the_rest_is_refused() {
        assert_eq!(Zone::parse("UTC"), Ok(Zone::UTC));
        assert_eq!(
            Zone::parse("+01:00").map(|z| z.to_string()),
            Ok("+01:00".into())
        );
        assert_eq!(Zone::parse("-03:30").map(|z| z.offset_secs(0)), Ok(-12_600));
        assert_eq!(
            Zone::parse("Europe/Berlin").map(|z| z.to_string()),
            Ok("Europe/Berlin".into())
        );
        for bad in [
            "Europe/Nowhere",
            "+1:00",
            "+01:60",
            "+19:00",
            "berlin",
            "",
            "+0100",
        ] {
            assert_eq!(Zone::parse(bad), Err(ZoneError), "{bad}");
        }
    }

    #[test]
    fn berlin_days_around_the_changes_have_23_and_25_hours() {
        let z = Zone::parse("Europe/Berlin").unwrap_or(Zone::UTC);
        let day = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).unwrap_or_default();
        let hours = |d: NaiveDate| {
            (z.day_start(d + chrono::TimeDelta::days(1)) - z.day_start(d)) / (3600 * MICROS)
        };
        assert_eq!(hours(day(2024, 3, 31)), 23);
        assert_eq!(hours(day(2024, 10, 27)), 25);
        assert_eq!(hours(day(2024, 6, 1)), 24);
        assert_eq!(z.day_start(day(2024, 1, 1)), utc("2023-12-31T23:00:00Z"));
        assert_eq!(z.local_date(utc("2024-06-30T22:30:00Z")), day(2024, 7, 1));
    }

    #[test]
    fn a_midnight_the_change_skips_starts_the_day_at_the_end_of_the_gap() {
        // Chile moved its clocks from 00:00 to 01:00 on 2024-09-08.
        let z = Zone::parse("America/Santiago").unwrap_or(Zone::UTC);
        let d = NaiveDate::from_ymd_opt(2024, 9, 8).unwrap_or_default();
        assert_eq!(z.day_start(d), utc("2024-09-08T04:00:00Z"));
    }
}
