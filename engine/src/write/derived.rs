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
//!   hydrological year) in [`DerivedSettings::zone`], the dataset's zone, whose days the
//!   rollups are of: a year is whole days of rollup rows. Rollups of another zone's days (of
//!   UTC, written before the dataset's zone was their grain) have a day a year that a year's
//!   edge cuts, split by its raw values ([`edge_days`], [`split_day`]): one month file read a
//!   year and series.
//!
//! A series' rows are summed up a hydrological year at a time ([`year_summaries`]), a rollup
//! part's years kept in its footer ([`crate::dataset::rollup_years`]): a publish adds up the
//! years of the parts it keeps from their footers and those of the parts it writes
//! ([`add_years`]) and derives from them ([`derived_values`]).
//!
//! Each is named as the definition (`MHW`), with id `<name lowercased>-derived` (`mhw-derived`)
//! and the period from the first to the last value of the years used.
//!
//! The settings are the dataset's: given to `import` or `generate` and kept in the manifest, so
//! that appends and compactions derive with them too; a publish that changes them derives every
//! station's values anew (from its rollup parts' rows, and the edge days' raw values in a zone
//! off UTC), and writes the parts anew with years as the new settings define them.

pub(crate) use crate::dataset::derived_settings::DerivedSettings;

use crate::dataset::derived_settings::ZoneName;
use crate::dataset::rollup_years::YearSummary;
use crate::dataset::rollups::{DayRow, days_of};
use crate::error::{EngineError, Result};
use crate::model::ids::{CharacteristicId, ParameterId, StationId};
use crate::model::zone::Zone;
use crate::model::{Characteristic, CharacteristicType, Micros, Period};
use std::borrow::Borrow;
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
pub(crate) struct Quantity<'a> {
    /// `W` for water levels, `Q` for discharge; other quantities have none.
    pub letter: char,
    /// The parameter's interval in microseconds.
    pub step: Micros,
    pub unit: &'a str,
}

/// The rows of `days` that a year's edge cuts, by their day and first value's time: their
/// values span two years, so [`split_day`] makes two of each from raw values. None where the
/// rollups' days are those of the years' zone (a year starts at a day's start); rollups of UTC
/// days in a dataset whose years start at another zone's midnight have one a year.
pub(crate) fn edge_days<R: Borrow<DayRow>>(
    days: &[R],
    settings: &DerivedSettings,
) -> Vec<(Micros, Micros)> {
    let mut year_of = settings.years();
    days.iter()
        .map(Borrow::borrow)
        .filter(|d| year_of(d.first_time).0 != year_of(d.last_time).0)
        .map(|d| (d.day, d.first_time))
        .collect()
}

/// The values of `row` (of one series) split where a year starts, as rows of `row`'s day, from
/// the series' raw values of that day or more (ascending).
pub(crate) fn split_day(
    row: &DayRow,
    times: &[Micros],
    values: &[f64],
    settings: &DerivedSettings,
) -> Vec<DayRow> {
    let edge = settings.year_of(row.last_time).1;
    let at = |t: Micros| times.partition_point(|&x| x < t);
    let (from, cut, to) = (at(row.first_time), at(edge), at(row.last_time + 1));
    let day = |range: std::ops::Range<usize>| {
        let mut rows = days_of(
            &row.parameter,
            &times[range.clone()],
            &values[range],
            Zone::UTC,
        );
        for r in &mut rows {
            r.day = row.day;
        }
        rows
    };
    let mut rows = day(from..cut);
    rows.extend(day(cut..to));
    rows
}

/// The hydrological years of one series' day rows (ascending by day, the days that
/// [`edge_days`] names split by [`split_day`]), ascending.
pub(crate) fn year_summaries<R: Borrow<DayRow>>(
    days: &[R],
    settings: &DerivedSettings,
) -> Vec<YearSummary> {
    let mut years: Vec<YearSummary> = Vec::new();
    let mut year_of = settings.years();
    for d in days.iter().map(Borrow::borrow) {
        // A row lies in one year (edge days come split): the year of its first value.
        let (name, start, end) = year_of(d.first_time);
        let day = YearSummary {
            year: name,
            start,
            end,
            count: d.count,
            sum: d.sum,
            min: d.min,
            max: d.max,
            first: d.first_time,
            last: d.last_time,
        };
        match years.last_mut() {
            Some(y) if y.year == name => y.add(&day),
            _ => years.push(day),
        }
    }
    years
}

/// Adds `more` (one series' years, ascending) to `years`.
pub(crate) fn add_years(years: &mut BTreeMap<i32, YearSummary>, more: &[YearSummary]) {
    for y in more {
        years
            .entry(y.year)
            .and_modify(|have| have.add(y))
            .or_insert(*y);
    }
}

/// The derived values of one series from its hydrological years.
pub(crate) fn derived_values(
    station: &StationId,
    parameter: &ParameterId,
    quantity: &Quantity<'_>,
    years: &BTreeMap<i32, YearSummary>,
    settings: &DerivedSettings,
) -> Result<Vec<Characteristic>> {
    let complete: Vec<&YearSummary> = years
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
    // Means to the precision the values are given in (the most decimals of the years'
    // extremes, which are values as measured): MQ 2 081.4 m³/s, not 2 081.4183506.
    let digits = complete
        .iter()
        .flat_map(|y| [y.min, y.max])
        .map(decimals)
        .max()
        .unwrap_or(0);
    let scale = 10f64.powi(digits);
    let rounded = |v: f64| (v * scale).round() / scale;
    let values = [
        (
            "NN",
            "lowest value",
            complete.iter().map(|y| y.min).fold(f64::INFINITY, f64::min),
        ),
        (
            "MN",
            "mean of the annual minima",
            rounded(complete.iter().map(|y| y.min).sum::<f64>() / n),
        ),
        (
            "M",
            "mean value",
            rounded(complete.iter().map(|y| y.sum).sum::<f64>() / count as f64),
        ),
        (
            "MH",
            "mean of the annual maxima",
            rounded(complete.iter().map(|y| y.max).sum::<f64>() / n),
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

/// The decimals of `v` as it is written shortest (`311.25` has 2), at most 6.
fn decimals(v: f64) -> i32 {
    let text = v.to_string();
    text.split_once('.')
        .map_or(0, |(_, fraction)| fraction.len().min(6) as i32)
}

const PREFIXES: [&str; 5] = ["nn", "mn", "m", "mh", "hh"];

/// Whether `id` is one a derived value is given (`mhw-derived`, ...).
pub(crate) fn is_derived_id(id: &str) -> bool {
    id.strip_suffix("-derived")
        .and_then(|name| name.strip_suffix(['w', 'q']))
        .is_some_and(|prefix| PREFIXES.contains(&prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::rollups::DAY;

    /// The years of a series' parts added up are the years of its rows at once (a year two
    /// parts share included), and derive the same values.
    #[test]
    fn years_of_parts_add_up_to_the_years_of_the_series() {
        let settings = DerivedSettings::default();
        let parameter: ParameterId = "q".parse().unwrap();
        let start = 1_546_300_800_000_000; // 2019-01-01T00:00Z
        let days: Vec<DayRow> = (0..5 * 365)
            .map(|d| {
                let v = ((d * 37) % 101) as f64 / 7.0;
                // Sums that are not whole multiples, so that adding parts rounds.
                DayRow {
                    sum: v * 24.0 + 0.1,
                    ..DayRow::hourly(&parameter, start + d * DAY, v)
                }
            })
            .collect();
        let mut whole = BTreeMap::new();
        add_years(&mut whole, &year_summaries(&days, &settings));
        // Parts of UTC years: 2019-2022 and 2023, the hydrological year 2023 in both.
        let cut = days.partition_point(|d| d.day < start + 4 * 365 * DAY + DAY);
        let mut parts = BTreeMap::new();
        for part in [&days[..cut], &days[cut..]] {
            add_years(&mut parts, &year_summaries(part, &settings));
        }
        assert_eq!(whole.len(), 6, "2019 to 2024, from November");
        assert_eq!(
            whole.keys().collect::<Vec<_>>(),
            parts.keys().collect::<Vec<_>>()
        );
        for (w, p) in whole.values().zip(parts.values()) {
            assert_eq!(
                (w.start, w.end, w.count, w.min, w.max),
                (p.start, p.end, p.count, p.min, p.max)
            );
            assert_eq!((w.first, w.last), (p.first, p.last));
            assert!(
                (w.sum - p.sum).abs() <= 1e-9 * w.sum.abs(),
                "{} {}",
                w.sum,
                p.sum
            );
        }
        let quantity = Quantity {
            letter: 'Q',
            step: 3_600_000_000,
            unit: "m3/s",
        };
        let station: StationId = "s".parse().unwrap();
        let of = |years| derived_values(&station, &parameter, &quantity, years, &settings).unwrap();
        let (a, b) = (of(&whole), of(&parts));
        assert_eq!(a.len(), 5);
        for (a, b) in a.iter().zip(&b) {
            assert_eq!((&a.id, a.period), (&b.id, b.period));
            assert!(
                (a.value - b.value).abs() <= 1e-9 * a.value.abs(),
                "{a:?} {b:?}"
            );
        }
    }
}
