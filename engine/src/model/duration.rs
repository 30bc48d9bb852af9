//! ISO 8601 durations as `last` takes them: `P1D`, `PT6H`, `P1Y2M`, `P2W`, `PT0.5S`.
//! Years and months are calendar units (applied with chrono's month arithmetic), the rest are
//! exact. A duration of zero is rejected: "the last nothing" is not a period.

use chrono::{DateTime, Months, TimeDelta, Utc};
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IsoDuration {
    pub months: u32,
    /// Everything below a month, exact.
    pub micros: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError(pub &'static str);

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

const MICROS_PER_SECOND: i64 = 1_000_000;

impl FromStr for IsoDuration {
    type Err = DurationError;

    fn from_str(s: &str) -> Result<Self, DurationError> {
        const FORM: DurationError =
            DurationError("expected an ISO 8601 duration such as P1D, PT6H, P1Y2M or P2W");
        let rest = s.strip_prefix('P').ok_or(FORM)?;
        if rest.is_empty() || rest.len() > 40 {
            return Err(FORM);
        }
        let (date, time) = match rest.split_once('T') {
            Some((_, "")) => return Err(FORM),
            Some((d, t)) => (d, Some(t)),
            None => (rest, None),
        };
        let mut out = IsoDuration::default();
        let mut total: i128 = 0;
        for (part, units) in [(date, "YMWD"), (time.unwrap_or(""), "HMS")] {
            let in_time = units == "HMS";
            let mut last_unit = None::<usize>;
            let mut number = String::new();
            for c in part.chars() {
                if c.is_ascii_digit() || (c == '.' && in_time) {
                    number.push(c);
                    continue;
                }
                let pos = units.find(c).ok_or(FORM)?;
                if number.is_empty() || last_unit.is_some_and(|l| pos <= l) {
                    return Err(FORM);
                }
                last_unit = Some(pos);
                let micros_per: i128 = match (in_time, c) {
                    (false, 'Y') | (false, 'M') => {
                        let n: u32 = number.parse().map_err(|_| FORM)?;
                        let m = if c == 'Y' { n.checked_mul(12) } else { Some(n) };
                        out.months = m
                            .and_then(|m| out.months.checked_add(m))
                            .filter(|&m| m <= 12 * 10_000)
                            .ok_or(DurationError("duration is too long"))?;
                        number.clear();
                        continue;
                    }
                    (false, 'W') => 7 * 86_400 * MICROS_PER_SECOND as i128,
                    (false, 'D') => 86_400 * MICROS_PER_SECOND as i128,
                    (true, 'H') => 3_600 * MICROS_PER_SECOND as i128,
                    (true, 'M') => 60 * MICROS_PER_SECOND as i128,
                    _ => MICROS_PER_SECOND as i128,
                };
                let micros = if number.contains('.') {
                    if c != 'S' {
                        return Err(FORM);
                    }
                    let v: f64 = number.parse().map_err(|_| FORM)?;
                    (v * 1e6).round() as i128
                } else {
                    let n: i128 = number.parse().map_err(|_| FORM)?;
                    n.checked_mul(micros_per)
                        .ok_or(DurationError("duration is too long"))?
                };
                total += micros;
                if total > 10_000 * 366 * 86_400 * MICROS_PER_SECOND as i128 {
                    return Err(DurationError("duration is too long"));
                }
                number.clear();
            }
            if !number.is_empty() {
                return Err(FORM);
            }
            if in_time && time.is_some() && last_unit.is_none() {
                return Err(FORM);
            }
        }
        out.micros = total as i64;
        if out.months == 0 && out.micros == 0 {
            return Err(DurationError("duration must be longer than zero"));
        }
        Ok(out)
    }
}

impl IsoDuration {
    /// The instant this long before `end`, or None when it falls outside chrono's range.
    pub fn before(&self, end: DateTime<Utc>) -> Option<DateTime<Utc>> {
        end.checked_sub_months(Months::new(self.months))?
            .checked_sub_signed(TimeDelta::microseconds(self.micros))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Result<IsoDuration, DurationError> {
        s.parse()
    }

    #[test]
    fn good_forms() {
        let day = 86_400 * MICROS_PER_SECOND;
        assert_eq!(
            d("P1D").unwrap(),
            IsoDuration {
                months: 0,
                micros: day
            }
        );
        assert_eq!(d("PT6H").unwrap().micros, 6 * 3_600 * MICROS_PER_SECOND);
        assert_eq!(
            d("P1Y2M").unwrap(),
            IsoDuration {
                months: 14,
                micros: 0
            }
        );
        assert_eq!(d("P2W").unwrap().micros, 14 * day);
        assert_eq!(d("PT15M").unwrap().micros, 15 * 60 * MICROS_PER_SECOND);
        assert_eq!(
            d("P1DT12H").unwrap().micros,
            day + 12 * 3_600 * MICROS_PER_SECOND
        );
        assert_eq!(d("PT0.5S").unwrap().micros, 500_000);
    }

    #[test]
    fn bad_forms() {
        for bad in [
            "",
            "P",
            "PT",
            "1D",
            "P1",
            "PD",
            "P1H",
            "PT1D",
            "P1M1Y",
            "P1DT",
            "P-1D",
            "P1.5D",
            "P0D",
            "PT0S",
            "P99999999999999999999D",
            "P100000Y",
            "p1d",
            "P1D ",
            " P1D",
            "P1DD",
        ] {
            assert!(d(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn calendar_months_apply_to_the_end() {
        let end: DateTime<Utc> = "2024-03-31T00:00:00Z".parse().unwrap();
        let start = d("P1M").unwrap().before(end).unwrap();
        assert_eq!(start.to_rfc3339(), "2024-02-29T00:00:00+00:00");
    }
}
