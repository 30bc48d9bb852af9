//! The catalog's resources as the engine holds them. Times are UTC microseconds since the Unix
//! epoch, the unit of the Parquet `timestamp` column; the server formats them.

pub(crate) mod chunk;
pub(crate) mod coords;
pub(crate) mod duration;
pub(crate) mod gap;
pub(crate) mod ids;
pub(crate) mod instant;
pub(crate) mod month;
pub(crate) mod property;
pub(crate) mod states;
pub(crate) mod zone;

use crate::model::ids::{CharacteristicId, ParameterId, StationId};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Microseconds since 1970-01-01T00:00:00Z.
pub type Micros = i64;

/// The qualities a value can have.
pub(crate) const QUALITY_FLAGS: [&str; 5] =
    ["good", "suspect", "estimated", "unchecked", "missing"];

/// Text that repeats across the catalog (states, operators, water bodies, units, parameter
/// names): a catalog of 100 000 stations names a dozen operators, so each distinct text is
/// held once and shared (see `catalog_file::Interner`).
pub(crate) type Text = Arc<str>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StationType {
    SurfaceWater,
    Groundwater,
    Weather,
}

impl StationType {
    pub const ALL: [StationType; 3] = [Self::SurfaceWater, Self::Groundwater, Self::Weather];
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SurfaceWater => "surfaceWater",
            Self::Groundwater => "groundwater",
            Self::Weather => "weather",
        }
    }
}

impl FromStr for StationType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| "not one of surfaceWater, groundwater, weather".to_owned())
    }
}

impl fmt::Display for StationType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// WGS 84, decimal degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coordinates {
    pub lat: f64,
    pub lon: f64,
}

/// Gauge zero of a surface-water station: the datum its water levels are measured from.
#[derive(Debug, Clone, PartialEq)]
pub struct GaugeZero {
    pub value: f64,
    pub unit: Text,
    pub datum: Text,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Station {
    pub id: StationId,
    pub name: String,
    pub kind: StationType,
    /// Stored as `DE-XX`.
    pub state: Text,
    pub operator: Text,
    pub water_body_id: Text,
    pub water_body_name: Text,
    pub coordinates: Coordinates,
    /// surfaceWater only: river kilometre.
    pub river_km: Option<f64>,
    /// surfaceWater only.
    pub gauge_zero: Option<GaugeZero>,
    /// groundwater only: ground level in m above sea level.
    pub ground_level: Option<f64>,
    /// weather only: elevation in m above sea level.
    pub elevation: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    pub start: Micros,
    pub end: Micros,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    pub station: StationId,
    pub id: ParameterId,
    pub name: Text,
    pub observed_property: Text,
    pub unit: Text,
    /// ISO 8601 duration, e.g. `PT15M`.
    pub interval: Text,
    /// Periods with data, ascending; derived from the values at publish time.
    pub availability: Vec<Period>,
    /// The newest row with a value, found at publish time: at the end of the last period of
    /// `availability`. None where that was not known (a table written before it, or a
    /// publish that carried a month whose newest value it did not have) or the series has no
    /// value; readers then find it in the values.
    pub latest: Option<Latest>,
}

/// A series' newest row with a value (not a recorded gap).
#[derive(Debug, Clone, PartialEq)]
pub struct Latest {
    /// Microseconds since the epoch, UTC.
    pub timestamp: Micros,
    pub value: f64,
    pub quality: Text,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CharacteristicType {
    MainValue,
    Statistic,
    Derived,
    Mark,
}

impl CharacteristicType {
    pub const ALL: [CharacteristicType; 4] =
        [Self::MainValue, Self::Statistic, Self::Derived, Self::Mark];
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MainValue => "mainValue",
            Self::Statistic => "statistic",
            Self::Derived => "derived",
            Self::Mark => "mark",
        }
    }
}

impl FromStr for CharacteristicType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| "expected one of mainValue, statistic, derived, mark".to_owned())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Characteristic {
    pub station: StationId,
    pub id: CharacteristicId,
    pub name: Text,
    pub kind: CharacteristicType,
    pub parameter: ParameterId,
    pub value: f64,
    pub unit: Text,
    pub period: Option<Period>,
    pub description: Option<Text>,
}

/// Normalises a state filter or input value to the stored `DE-XX` form
/// (`by`, `DE-by`, `de-BY` → `DE-BY`).
pub fn normalize_state(s: &str) -> Option<String> {
    let code = s
        .strip_prefix("DE-")
        .or_else(|| s.strip_prefix("de-"))
        .or_else(|| s.strip_prefix("De-"))
        .or_else(|| s.strip_prefix("dE-"))
        .unwrap_or(s);
    (code.len() == 2 && code.bytes().all(|b| b.is_ascii_alphabetic()))
        .then(|| format!("DE-{}", code.to_ascii_uppercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_normalise() {
        assert_eq!(normalize_state("by").as_deref(), Some("DE-BY"));
        assert_eq!(normalize_state("de-Nw").as_deref(), Some("DE-NW"));
        assert_eq!(normalize_state("DE-BYX"), None);
        assert_eq!(normalize_state("B1"), None);
        assert_eq!(normalize_state(""), None);
    }
}
