//! The settings of a dataset's characteristic values of type `derived`
//! ([`crate::write::derived`]), which its manifest keeps so that every publish derives alike,
//! and the hydrological years they define.

use crate::model::Micros;
use crate::model::zone::Zone;
use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What derived values take: the dataset's settings, kept in its manifest.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DerivedSettings {
    /// Complete years a series needs.
    pub years: usize,
    /// The share of its expected values a complete year has.
    pub complete: f64,
    /// The month years start in.
    pub year_start: u32,
    /// The zone whose midnight starts a year.
    #[serde(rename = "timeZone", with = "zone_name")]
    pub zone: Zone,
}

impl Default for DerivedSettings {
    fn default() -> Self {
        Self {
            years: 3,
            complete: 0.9,
            year_start: 11,
            zone: Zone::UTC,
        }
    }
}

/// Why derived-value settings were refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsError {
    #[error("complete years must be at least 1")]
    Years,
    #[error("the share of a complete year's values must be above 0 and at most 1")]
    Complete,
    #[error("the month years start in must be 1 to 12")]
    YearStart,
}

impl DerivedSettings {
    /// Whether the settings make sense (a manifest's are checked as a flag's are).
    pub fn check(&self) -> std::result::Result<(), SettingsError> {
        if self.years == 0 {
            return Err(SettingsError::Years);
        }
        if !(self.complete > 0.0 && self.complete <= 1.0) {
            return Err(SettingsError::Complete);
        }
        if !(1..=12).contains(&self.year_start) {
            return Err(SettingsError::YearStart);
        }
        Ok(())
    }

    /// The name of the year holding the instant `t` (the calendar year it ends in) and the
    /// year's first and end instants.
    pub(crate) fn year_of(&self, t: Micros) -> (i32, Micros, Micros) {
        let date = self.zone.local_date(t);
        let later = self.year_start != 1;
        let name = date.year() + i32::from(later && date.month() >= self.year_start);
        let first = name - i32::from(later);
        (
            name,
            self.month_start(first, self.year_start),
            self.month_start(first + 1, self.year_start),
        )
    }

    /// [`Self::year_of`] for instants asked in order: the year found last is kept and looked
    /// up anew only for an instant outside it. A station's derived values ask for the year of
    /// every day three times, and `year_of` (a local date and two local midnights) was 5 % of
    /// the CPU of an append of a day for every series (`perf record`).
    pub(crate) fn years(&self) -> impl FnMut(Micros) -> (i32, Micros, Micros) + '_ {
        let mut last: Option<(i32, Micros, Micros)> = None;
        move |t| match last {
            Some(year @ (_, start, end)) if start <= t && t < end => year,
            _ => *last.insert(self.year_of(t)),
        }
    }

    /// Midnight of the 1st of `month` in `year`, in the zone.
    fn month_start(&self, year: i32, month: u32) -> Micros {
        NaiveDate::from_ymd_opt(year, month, 1).map_or(0, |d| self.zone.day_start(d))
    }
}

/// A zone as its name (`UTC`, `+01:00`, `Europe/Berlin`) in the manifest.
mod zone_name {
    use super::*;

    pub(super) fn serialize<S: Serializer>(
        zone: &Zone,
        s: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(&ZoneName(zone))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> std::result::Result<Zone, D::Error> {
        let name = String::deserialize(d)?;
        Zone::parse(&name).map_err(serde::de::Error::custom)
    }
}

/// A zone as the manifest names it.
pub(crate) struct ZoneName<'a>(pub &'a Zone);

impl std::fmt::Display for ZoneName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.fixed() {
            Some(o) if o.local_minus_utc() == 0 => f.write_str("UTC"),
            _ => write!(f, "{}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every hour of four years in a zone with summer time, in order and back again: the kept
    /// year gives what `year_of` gives.
    #[test]
    fn years_in_order_are_year_of() {
        for (zone, year_start) in [("Europe/Berlin", 11), ("UTC", 1), ("-03:30", 5)] {
            let settings = DerivedSettings {
                zone: Zone::parse(zone).unwrap(),
                year_start,
                ..DerivedSettings::default()
            };
            let hour = 3_600_000_000;
            let start = 1_577_836_800_000_000; // 2020-01-01T00:00Z
            let hours: Vec<Micros> = (0..4 * 8784).map(|h| start + h * hour).collect();
            let mut year_of = settings.years();
            for &t in hours.iter().chain(hours.iter().rev()) {
                assert_eq!(year_of(t), settings.year_of(t), "{zone} {t}");
            }
        }
    }
}
