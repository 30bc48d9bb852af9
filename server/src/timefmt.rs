//! RFC 3339 timestamps with a numeric offset (`2024-03-01T12:15:00+00:00`, never `Z`), fast:
//! the date part is formatted once per day and reused, the time of day is written digit by
//! digit. Sub-second parts appear only when present.

use chrono::FixedOffset;

#[derive(Clone)]
pub struct TimeFormatter {
    offset_secs: i64,
    day: i64,
    /// `YYYY-MM-DDT` of `day`.
    date: [u8; 11],
    /// `±hh:mm`.
    offset: [u8; 6],
}

impl TimeFormatter {
    pub fn new(offset: FixedOffset) -> Self {
        let offset_secs = i64::from(offset.local_minus_utc());
        let sign = if offset_secs < 0 { '-' } else { '+' };
        let a = offset_secs.abs();
        let text = format!("{sign}{:02}:{:02}", a / 3600, (a % 3600) / 60);
        let mut offset = *b"+00:00";
        if text.len() == offset.len() {
            offset.copy_from_slice(text.as_bytes());
        }
        Self {
            offset_secs,
            day: i64::MIN,
            date: *b"0000-00-00T",
            offset,
        }
    }

    /// Appends the timestamp (UTC microseconds) in the output offset.
    pub fn write(&mut self, micros: i64, out: &mut Vec<u8>) {
        let local = micros + self.offset_secs * 1_000_000;
        let day = local.div_euclid(86_400_000_000);
        let in_day = local.rem_euclid(86_400_000_000);
        if day != self.day {
            self.day = day;
            self.date = date_text(day);
        }
        let secs = (in_day / 1_000_000) as u64;
        let frac = in_day % 1_000_000;
        out.extend_from_slice(&self.date);
        out.extend_from_slice(&hh_mm_ss(secs).to_le_bytes());
        if frac != 0 {
            let s = format!(".{frac:06}");
            out.extend_from_slice(s.trim_end_matches('0').as_bytes());
        }
        out.extend_from_slice(&self.offset);
    }

    pub fn format(&mut self, micros: i64) -> String {
        let mut out = Vec::with_capacity(32);
        self.write(micros, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
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

/// `hh:mm:ss` as the eight bytes of a little-endian integer, built in a register: writing the
/// digits one by one into a buffer and copying it out stalled on store forwarding (a third of
/// this function's samples in `perf`).
fn hh_mm_ss(secs: u64) -> u64 {
    let digits = |v: u64| (b'0' as u64 + v / 10) | ((b'0' as u64 + v % 10) << 8);
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    digits(h) | (b':' as u64) << 16 | digits(m) << 24 | (b':' as u64) << 40 | digits(s) << 48
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Datelike;

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
