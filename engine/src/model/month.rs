//! Calendar months of UTC time: the unit of value files.

use crate::model::Micros;
use std::fmt;
use std::str::FromStr;

/// A calendar month in UTC, counted in months since January of year 0 (so they order and
/// subtract as numbers); written `YYYY-MM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Month(i32);

impl Month {
    /// The month of a UTC instant.
    pub fn of(ts: Micros) -> Self {
        let (y, m) = civil_from_days(ts.div_euclid(86_400_000_000));
        Self((y * 12 + m - 1) as i32)
    }

    /// The month it is now (UTC): the one a live archive's appends write to.
    pub fn current() -> Self {
        Self::of(chrono::Utc::now().timestamp_micros())
    }

    /// Months since January of year 0.
    pub fn to_index(self) -> i32 {
        self.0
    }

    pub fn year(self) -> i32 {
        self.0.div_euclid(12)
    }

    /// 1-12.
    pub fn number(self) -> u32 {
        self.0.rem_euclid(12) as u32 + 1
    }
}

impl fmt::Display for Month {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}", self.year(), self.number())
    }
}

impl FromStr for Month {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("'{s}' is not a month (YYYY-MM)");
        let (y, m) = s.split_once('-').ok_or_else(bad)?;
        if y.len() != 4 || m.len() != 2 {
            return Err(bad());
        }
        let y: i32 = y.parse().map_err(|_| bad())?;
        let m: i32 = m.parse().map_err(|_| bad())?;
        if !(1..=12).contains(&m) {
            return Err(bad());
        }
        Ok(Self(y * 12 + m - 1))
    }
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's `days_from_civil`).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Year and month (1-12) of a day since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The month of an instant is chrono's, around month and year ends, leap days, and before
    /// 1970 and 1600.
    #[test]
    fn months_of_instants_agree_with_chrono() {
        for s in [
            "1969-12-31T23:59:59.999999Z",
            "1970-01-01T00:00:00Z",
            "2024-02-29T23:59:59Z",
            "2024-03-01T00:00:00Z",
            "1600-03-01T00:00:00Z",
            "1599-12-31T23:59:59Z",
            "0001-01-01T00:00:00Z",
        ] {
            let t = chrono::DateTime::parse_from_rfc3339(s).unwrap();
            let month = Month::of(t.timestamp_micros());
            assert_eq!(month.to_string(), t.format("%Y-%m").to_string(), "{s}");
            assert_eq!(month.to_string().parse::<Month>(), Ok(month));
        }
        assert!("2024-13".parse::<Month>().is_err());
        assert!("2024-1".parse::<Month>().is_err());
    }
}
