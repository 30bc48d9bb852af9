//! RFC 3339 timestamps with a numeric offset (`2024-03-01T12:15:00+00:00`, never `Z`), fast:
//! the date part is formatted once per day and reused, the time of day comes from a table of
//! the 1 440 minutes of a day. Sub-second parts appear only when present. In an IANA zone
//! (`timeZone=Europe/Berlin`) each instant is written in the offset the zone has then.

use crate::render::out::{Out, padded};
use chrono::FixedOffset;
use hydro_engine::Zone;

const DAY_MICROS: i64 = 86_400_000_000;

#[derive(Clone)]
pub struct TimeFormatter {
    offset_micros: i64,
    /// Local midnight of the day in `date`, in microseconds.
    day_start: i64,
    /// `YYYY-MM-DDT` of that day, as the low bytes of a little-endian integer. As an array
    /// the compiler could take it apart into eleven one-byte copies (seen in `perf
    /// annotate`); as an integer it is one 16-byte store (6 % of a CSV row's time in
    /// `benches/encode.rs`).
    date: u128,
    /// `±hh:mm`, likewise.
    offset: u64,
    /// A zone whose offset changes: looked up for each instant.
    zone: Option<Zone>,
}

impl TimeFormatter {
    pub fn new(offset: FixedOffset) -> Self {
        let offset_secs = i64::from(offset.local_minus_utc());
        let sign = if offset_secs < 0 { '-' } else { '+' };
        let a = offset_secs.abs();
        let text = format!("{sign}{:02}:{:02}", a / 3600, (a % 3600) / 60);
        let offset: &[u8] = if text.len() == 6 {
            text.as_bytes()
        } else {
            b"+00:00"
        };
        Self {
            offset_micros: offset_secs * 1_000_000,
            day_start: i64::MIN,
            date: date_word(*b"0000-00-00T"),
            offset: u64::from_le_bytes(padded(offset)),
            zone: None,
        }
    }

    /// Times in `zone`: a fixed offset as [`Self::new`], an IANA zone in its offset at each
    /// instant.
    pub fn zoned(zone: Zone) -> Self {
        match zone.fixed() {
            Some(offset) => Self::new(offset),
            None => Self {
                zone: Some(zone),
                ..Self::new(FixedOffset::east_opt(0).expect("zero is an offset"))
            },
        }
    }

    /// Follows the zone's offset at `micros` (the date cache holds for one offset).
    #[cold]
    fn follow_zone(&mut self, zone: Zone, micros: i64) {
        let secs = zone.offset_secs(micros);
        if i64::from(secs) * 1_000_000 != self.offset_micros
            && let Some(offset) = FixedOffset::east_opt(secs)
        {
            *self = Self {
                zone: Some(zone),
                ..Self::new(offset)
            };
        }
    }

    /// Appends the timestamp (UTC microseconds) in the output offset: at most 32 bytes.
    #[inline(always)]
    pub fn write(&mut self, micros: i64, out: &mut impl Out) {
        if let Some(zone) = self.zone {
            self.follow_zone(zone, micros);
        }
        let local = micros.saturating_add(self.offset_micros);
        // Consecutive values mostly share the day: a subtraction instead of two divisions.
        let mut in_day = local.wrapping_sub(self.day_start);
        if !(0..DAY_MICROS).contains(&in_day) {
            let day = local.div_euclid(DAY_MICROS);
            self.day_start = day * DAY_MICROS;
            self.date = date_word(date_text(day));
            in_day = local - self.day_start;
        }
        let secs = in_day / 1_000_000;
        let frac = in_day - secs * 1_000_000;
        out.put_fixed(&self.date.to_le_bytes(), 11);
        out.put_fixed(&hh_mm_ss(secs as usize).to_le_bytes(), 8);
        if frac != 0 {
            let s = format!(".{frac:06}");
            out.put(s.trim_end_matches('0').as_bytes());
        }
        out.put_fixed(&self.offset.to_le_bytes(), 6);
    }

    pub fn format(&mut self, micros: i64) -> String {
        let mut out = Vec::with_capacity(32);
        self.write(micros, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

/// The eleven bytes of a date as the low bytes of an integer.
fn date_word(date: [u8; 11]) -> u128 {
    u128::from_le_bytes(padded(&date))
}

/// `YYYY-MM-DDT` of a day since 1970-01-01 (proleptic Gregorian; years outside 0..=9999
/// clamp, which timestamps of measurements never reach). Days to civil date after Howard
/// Hinnant's `civil_from_days`.
fn date_text(day: i64) -> [u8; 11] {
    let z = day + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = (yoe + era * 400 + i64::from(m <= 2)).clamp(0, 9999);
    let digit = |v: i64| b'0' + v as u8;
    [
        digit(y / 1000),
        digit(y / 100 % 10),
        digit(y / 10 % 10),
        digit(y % 10),
        b'-',
        digit(m / 10),
        digit(m % 10),
        b'-',
        digit(d / 10),
        digit(d % 10),
        b'T',
    ]
}

/// `hh:mm:` of each minute of a day, as the low six bytes of a little-endian integer.
static MINUTES: [u64; 1440] = {
    let mut t = [0u64; 1440];
    let mut i = 0;
    while i < 1440 {
        let (h, m) = ((i / 60) as u64, (i % 60) as u64);
        t[i] = (b'0' as u64 + h / 10)
            | (b'0' as u64 + h % 10) << 8
            | (b':' as u64) << 16
            | (b'0' as u64 + m / 10) << 24
            | (b'0' as u64 + m % 10) << 32
            | (b':' as u64) << 40;
        i += 1;
    }
    t
};

/// `hh:mm:ss` of a second of the day (below 86 400) as the eight bytes of a little-endian
/// integer, built in a register: writing digits one by one into a buffer and copying it out
/// stalled on store forwarding, and the divisions for hours, minutes and seconds were a third
/// of this file's time in `perf`.
fn hh_mm_ss(secs: usize) -> u64 {
    let (minute, s) = (secs / 60, (secs % 60) as u64);
    MINUTES[minute % 1440] | (b'0' as u64 + s / 10) << 48 | (b'0' as u64 + s % 10) << 56
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Datelike};

    /// The hand-written civil date agrees with chrono on every day from 1800 to 2200.
    #[test]
    fn dates_match_chrono() {
        let first = chrono::NaiveDate::from_ymd_opt(1800, 1, 1).unwrap();
        let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
        let mut d = first;
        while d.year() < 2200 {
            let day = (d - epoch).num_days();
            let want = d.format("%Y-%m-%dT").to_string();
            assert_eq!(std::str::from_utf8(&date_text(day)).unwrap(), want);
            d = d.succ_opt().unwrap();
        }
    }

    /// Against chrono: runs of regular steps (the common case, one day cached), random jumps
    /// back and forth, sub-seconds, offsets east and west, before and after 1970.
    #[test]
    fn matches_chrono_on_random_instants() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for offset_minutes in [0, 60, -330, 840, -720] {
            let offset = FixedOffset::east_opt(offset_minutes * 60).unwrap();
            let mut f = TimeFormatter::new(offset);
            let mut t: i64 = -2_208_988_800_000_000; // 1900-01-01
            for i in 0..20_000 {
                t = match i % 7 {
                    0 => (next() % 7_258_118_400_000_000) as i64 - 2_208_988_800_000_000,
                    1 => t + (next() % 1_000_000) as i64,
                    _ => t + 900_000_000,
                };
                let d = DateTime::from_timestamp_micros(t)
                    .unwrap()
                    .with_timezone(&offset);
                let frac = d.timestamp_subsec_micros();
                let frac = if frac == 0 {
                    String::new()
                } else {
                    format!(".{frac:06}").trim_end_matches('0').to_owned()
                };
                let want = format!("{}{frac}{}", d.format("%Y-%m-%dT%H:%M:%S"), d.format("%:z"));
                assert_eq!(f.format(t), want, "{t}");
            }
        }
    }

    #[test]
    fn a_named_zone_writes_each_instant_in_its_own_offset() {
        let zone = Zone::parse("Europe/Berlin").unwrap();
        let mut f = TimeFormatter::zoned(zone);
        assert_eq!(f.format(1_711_846_800_000_000), "2024-03-31T03:00:00+02:00");
        assert_eq!(f.format(1_711_843_200_000_000), "2024-03-31T01:00:00+01:00");
        assert_eq!(f.format(1_704_063_600_000_000), "2024-01-01T00:00:00+01:00");
        assert_eq!(
            TimeFormatter::zoned(Zone::UTC).format(0),
            "1970-01-01T00:00:00+00:00"
        );
    }

    #[test]
    fn formats_with_numeric_offset() {
        let utc = FixedOffset::east_opt(0).unwrap();
        let mut f = TimeFormatter::new(utc);
        assert_eq!(f.format(0), "1970-01-01T00:00:00+00:00");
        assert_eq!(f.format(1_709_295_300_000_000), "2024-03-01T12:15:00+00:00");
        assert_eq!(f.format(1_500_000), "1970-01-01T00:00:01.5+00:00");
        let cet = FixedOffset::east_opt(3600).unwrap();
        let mut f = TimeFormatter::new(cet);
        assert_eq!(f.format(1_709_335_800_000_000), "2024-03-02T00:30:00+01:00");
        let west = FixedOffset::west_opt(5 * 3600 + 1800).unwrap();
        assert_eq!(
            TimeFormatter::new(west).format(0),
            "1969-12-31T18:30:00-05:30"
        );
    }
}
