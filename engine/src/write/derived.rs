//! Characteristic values derived from a series at publish (type `derived`): the main values of
//! the German gauge definitions (DIN 4049: NNW, MNW, MW, MHW, HHW for water levels; NNQ, MNQ,
//! MQ, MHQ, HHQ for discharge) over the complete hydrological years of the series, from its
//! daily rollup rows:
//! - NN: the lowest value; MN: the mean of the annual minima; M: the mean of every value;
//!   MH: the mean of the annual maxima; HH: the highest value;
//! - a year is complete with at least [`DerivedSettings::complete`] of the values its length
//!   holds at the parameter's interval; a series needs [`DerivedSettings::years`] complete
//!   years;
//! - years start on the 1st of [`DerivedSettings::year_start`] (11: the German hydrological
//!   year) at UTC midnight, so that each is whole UTC days of rollup rows.
//!
//! Each is named as the definition (`MHW`), with id `<name lowercased>-derived` (`mhw-derived`)
//! and the period from the first to the last value of the years used.

use crate::dataset::rollups::DayRow;
use crate::error::{EngineError, Result};
use crate::model::ids::{CharacteristicId, ParameterId, StationId};
use crate::model::{Characteristic, CharacteristicType, Micros, Period};
use chrono::{DateTime, Datelike, NaiveDate};
use std::collections::BTreeMap;

/// What derived values take.
#[derive(Debug, Clone, Copy)]
pub struct DerivedSettings {
    /// Complete years a series needs.
    pub years: usize,
    /// The share of its expected values a complete year has.
    pub complete: f64,
    /// The month years start in.
    pub year_start: u32,
}

impl Default for DerivedSettings {
    fn default() -> Self {
        Self {
            years: 3,
            complete: 0.9,
            year_start: 11,
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

/// The derived values of one series from its day rows (ascending by day).
pub fn derived_values(
    station: &StationId,
    parameter: &ParameterId,
    quantity: &Quantity<'_>,
    days: &[DayRow],
    settings: DerivedSettings,
) -> Result<Vec<Characteristic>> {
    let mut years: BTreeMap<i32, Year> = BTreeMap::new();
    for d in days {
        let Some(date) = DateTime::from_timestamp_micros(d.day).map(|t| t.date_naive()) else {
            continue;
        };
        let name = date.year()
            + i32::from(date.month() >= settings.year_start && settings.year_start != 1);
        let y = years.entry(name).or_insert_with(|| {
            let start = year_start(
                name - i32::from(settings.year_start != 1),
                settings.year_start,
            );
            let end = year_start(
                name + i32::from(settings.year_start == 1),
                settings.year_start,
            );
            Year {
                start,
                end,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
                first: d.first_time,
                ..Year::default()
            }
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
                        "{what} over {} complete hydrological years (from month {}, UTC), derived from the values",
                        complete.len(),
                        settings.year_start
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

/// UTC midnight of the 1st of `month` in `year`.
fn year_start(year: i32, month: u32) -> Micros {
    NaiveDate::from_ymd_opt(year, month, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map_or(0, |t| t.and_utc().timestamp_micros())
}
