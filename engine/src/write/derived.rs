//! Characteristic values derived from a series at publish (type `derived`): the main values of
//! the German gauge definitions (DIN 4049: NNW, MNW, MW, MHW, HHW for water levels; NNQ, MNQ,
//! MQ, MHQ, HHQ for discharge) over the complete hydrological years of the series, from its
//! daily rollup rows:
//! - NN: the lowest value; MN: the mean of the annual minima; M: the mean of every value;
//!   MH: the mean of the annual maxima; HH: the highest value;
//! - a year is complete with at least [`DerivedSettings::complete`] of the values its length
//!   holds at the parameter's interval; a series needs [`DerivedSettings::years`] complete
//!   years;
//! - years start at midnight of the 1st of [`DerivedSettings::year_start`] (11: the German
//!   hydrological year) in [`DerivedSettings::zone`]. In UTC a year is whole UTC days of
//!   rollup rows; in another zone the day a year's edge cuts is split by its raw values
//!   ([`edge_days`], [`split_day`]): one month file read a year and series.
//!
//! Each is named as the definition (`MHW`), with id `<name lowercased>-derived` (`mhw-derived`)
//! and the period from the first to the last value of the years used.
//!
//! The settings are the dataset's: given to `import` or `generate` and kept in the manifest, so
//! that appends and compactions derive with them too; a publish that changes them derives every
//! station's values anew (from its rollup file, and the edge days' raw values in a zone off
//! UTC).

pub use crate::dataset::derived_settings::{DerivedSettings, SettingsError};

use crate::dataset::derived_settings::ZoneName;
use crate::dataset::rollups::{DAY, DayRow, days_of};
use crate::error::{EngineError, Result};
use crate::model::ids::{CharacteristicId, ParameterId, StationId};
use crate::model::zone::Zone;
use crate::model::{Characteristic, CharacteristicType, Micros, Period};
use std::collections::BTreeMap;

/// Changes to a dataset's derived-value settings, as `import` and `generate` take them: what
/// is not given stays as the dataset has it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DerivedChange {
    pub years: Option<usize>,
    pub complete: Option<f64>,
    pub year_start: Option<u32>,
    pub zone: Option<Zone>,
}

impl DerivedChange {
    /// `base` with the changes made.
    pub fn applied_to(&self, base: DerivedSettings) -> DerivedSettings {
        DerivedSettings {
            years: self.years.unwrap_or(base.years),
            complete: self.complete.unwrap_or(base.complete),
            year_start: self.year_start.unwrap_or(base.year_start),
            zone: self.zone.unwrap_or(base.zone),
        }
    }
}

/// What a parameter is, for its derived values.
pub struct Quantity<'a> {
    /// `W` for water levels, `Q` for discharge; other quantities have none.
    pub letter: char,
    /// The parameter's interval in microseconds.
    pub step: Micros,
    pub unit: &'a str,
}

/// A year's values.
#[derive(Default)]
struct Year {
    start: Micros,
    end: Micros,
    count: i64,
    sum: f64,
    min: f64,
    max: f64,
    first: Micros,
    last: Micros,
}

/// The UTC days of `days` that a year's edge cuts (none in UTC, where years start at UTC
/// midnight): their rows span two years, so [`split_day`] makes two of each from raw values.
pub fn edge_days(days: &[DayRow], settings: &DerivedSettings) -> Vec<Micros> {
    let mut year_of = settings.years();
    days.iter()
        .map(|d| d.day)
        .filter(|&day| year_of(day).0 != year_of(day + DAY - 1).0)
        .collect()
}

/// The rows of the UTC day `day` of one series split where a year starts, from the series'
/// raw values of that day or more (ascending).
pub fn split_day(
    parameter: &ParameterId,
    day: Micros,
    times: &[Micros],
    values: &[f64],
    settings: &DerivedSettings,
) -> Vec<DayRow> {
    let edge = settings.year_of(day + DAY - 1).1;
    let at = |t: Micros| times.partition_point(|&x| x < t);
    let (from, cut, to) = (at(day), at(edge), at(day + DAY));
    let mut rows = days_of(parameter, &times[from..cut], &values[from..cut]);
    rows.extend(days_of(parameter, &times[cut..to], &values[cut..to]));
    rows
}

/// The derived values of one series from its day rows (ascending by day, the days that
/// [`edge_days`] names split by [`split_day`]).
pub fn derived_values(
    station: &StationId,
    parameter: &ParameterId,
    quantity: &Quantity<'_>,
    days: &[DayRow],
    settings: &DerivedSettings,
) -> Result<Vec<Characteristic>> {
    let mut years: BTreeMap<i32, Year> = BTreeMap::new();
    let mut year_of = settings.years();
    for d in days {
        // A row lies in one year (edge days come split): the year of its first value.
        let (name, start, end) = year_of(d.first_time);
        let y = years.entry(name).or_insert_with(|| Year {
            start,
            end,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            first: d.first_time,
            ..Year::default()
        });
        y.count += d.count;
        y.sum += d.sum;
        y.min = y.min.min(d.min);
        y.max = y.max.max(d.max);
        y.last = d.last_time;
    }
    let complete: Vec<&Year> = years
        .values()
        .filter(|y| {
            let expected = (y.end - y.start) as f64 / quantity.step as f64;
            y.count as f64 >= settings.complete * expected
        })
        .collect();
    if complete.len() < settings.years || complete.is_empty() {
        return Ok(Vec::new());
    }
    let n = complete.len() as f64;
    let count: i64 = complete.iter().map(|y| y.count).sum();
    let values = [
        (
            "NN",
            "lowest value",
            complete.iter().map(|y| y.min).fold(f64::INFINITY, f64::min),
        ),
        (
            "MN",
            "mean of the annual minima",
            complete.iter().map(|y| y.min).sum::<f64>() / n,
        ),
        (
            "M",
            "mean value",
            complete.iter().map(|y| y.sum).sum::<f64>() / count as f64,
        ),
        (
            "MH",
            "mean of the annual maxima",
            complete.iter().map(|y| y.max).sum::<f64>() / n,
        ),
        (
            "HH",
            "highest value",
            complete
                .iter()
                .map(|y| y.max)
                .fold(f64::NEG_INFINITY, f64::max),
        ),
    ];
    let period = Period {
        start: complete.first().map_or(0, |y| y.first),
        end: complete.last().map_or(0, |y| y.last),
    };
    values
        .into_iter()
        .map(|(prefix, what, value)| {
            let name = format!("{prefix}{}", quantity.letter);
            let id: CharacteristicId = format!("{}-derived", name.to_lowercase())
                .parse()
                .map_err(|e| EngineError::Internal(format!("derived id: {e}")))?;
            Ok(Characteristic {
                station: station.clone(),
                id,
                name: name.as_str().into(),
                kind: CharacteristicType::Derived,
                parameter: parameter.clone(),
                value,
                unit: quantity.unit.into(),
                period: Some(period),
                description: Some(
                    format!(
                        "{what} over {} complete hydrological years (from month {}, {}), derived from the values",
                        complete.len(),
                        settings.year_start,
                        ZoneName(&settings.zone)
                    )
                    .into(),
                ),
            })
        })
        .collect()
}

const PREFIXES: [&str; 5] = ["nn", "mn", "m", "mh", "hh"];

/// Whether `id` is one a derived value is given (`mhw-derived`, ...).
pub fn is_derived_id(id: &str) -> bool {
    id.strip_suffix("-derived")
        .and_then(|name| name.strip_suffix(['w', 'q']))
        .is_some_and(|prefix| PREFIXES.contains(&prefix))
}
