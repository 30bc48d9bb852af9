//! The mapping file of an import (`hydro import --mapping FILE`, TOML): how an agency's files
//! name what the import formats name (`data/README.md`):
//!
//! ```toml
//! [values.columns]          # our column = the file's
//! date = "Datum"            # a date and a time column, or `timestamp`
//! time = "Uhrzeit"
//! value = "Wert"
//! [values.constants]        # what every row is, where no column says
//! parameterId = "discharge-15min"
//! [values.blocks]           # `#Station;25820100` lines open a block of one station's rows
//! stationId = "Station"
//! [values.ids.parameterId]  # the file's ids = the catalog's (also stationId, quality)
//! Q = "discharge-15min"
//! [[values.wide]]           # a sheet with a column per series
//! column = "Köln Abfluss"
//! stationId = "2710080"
//! parameterId = "discharge-15min"
//! [stations.columns]        # likewise for the catalog files
//! id = "Messstellennummer"
//! easting = "Rechtswert"
//! northing = "Hochwert"
//! [stations.constants]
//! type = "surfaceWater"
//! ```
//!
//! Unknown keys are errors that name them: a typo must not import a file as something else.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// How the files of an import name things, where they do not as the import formats do.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mapping {
    #[serde(default)]
    pub values: ValuesMapping,
    #[serde(default)]
    pub stations: TableMapping,
    #[serde(default)]
    pub parameters: TableMapping,
    #[serde(default)]
    pub characteristics: TableMapping,
}

/// The values files' columns, constants, blocks, id renames and wide columns.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValuesMapping {
    #[serde(default)]
    pub columns: ValueColumns,
    #[serde(default)]
    pub constants: ValueConstants,
    #[serde(default)]
    pub blocks: BlockKeys,
    #[serde(default)]
    pub ids: IdRenames,
    #[serde(default)]
    pub wide: Vec<WideColumn>,
}

/// The file's names of our value columns.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ValueColumns {
    pub station_id: Option<String>,
    pub parameter_id: Option<String>,
    pub timestamp: Option<String>,
    /// A date column, with `time` (joined by a space: what `--date-format` then reads).
    pub date: Option<String>,
    pub time: Option<String>,
    pub value: Option<String>,
    pub quality: Option<String>,
}

/// What every row of a values file is where no column (or block) says.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ValueConstants {
    pub station_id: Option<String>,
    pub parameter_id: Option<String>,
}

/// The keys of the `#key;value` lines (ZRXP: `#SANR…|*|`) that name a block's station and
/// parameter.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BlockKeys {
    pub station_id: Option<String>,
    pub parameter_id: Option<String>,
}

impl BlockKeys {
    pub(super) fn any(&self) -> bool {
        self.station_id.is_some() || self.parameter_id.is_some()
    }
}

/// Ids and quality codes as the files write them, and what they are in the catalog.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IdRenames {
    #[serde(default)]
    pub station_id: BTreeMap<String, String>,
    #[serde(default)]
    pub parameter_id: BTreeMap<String, String>,
    #[serde(default)]
    pub quality: BTreeMap<String, String>,
}

/// A column of a wide sheet: the values of one series.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WideColumn {
    pub column: String,
    pub station_id: String,
    pub parameter_id: String,
}

/// A catalog file's columns (ours = the file's) and constants (ours = every row's value).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableMapping {
    #[serde(default)]
    pub columns: BTreeMap<String, String>,
    #[serde(default)]
    pub constants: BTreeMap<String, String>,
}

/// The columns each catalog file knows (`data/README.md`).
pub(super) const STATION_COLUMNS: [&str; 17] = [
    "id",
    "name",
    "type",
    "state",
    "operator",
    "waterBodyId",
    "waterBodyName",
    "lat",
    "lon",
    "easting",
    "northing",
    "epsg",
    "riverKm",
    "gaugeZero",
    "gaugeZeroDatum",
    "groundLevel",
    "elevation",
];
pub(super) const PARAMETER_COLUMNS: [&str; 6] = [
    "stationId",
    "id",
    "name",
    "observedProperty",
    "unit",
    "interval",
];
pub(super) const CHARACTERISTIC_COLUMNS: [&str; 10] = [
    "stationId",
    "id",
    "name",
    "type",
    "parameterId",
    "value",
    "unit",
    "periodStart",
    "periodEnd",
    "description",
];

impl Mapping {
    /// The mapping file at `path`, checked.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let mapping: Mapping = toml::from_str(text).map_err(|e| e.to_string())?;
        for (name, table, known) in [
            ("stations", &mapping.stations, &STATION_COLUMNS[..]),
            ("parameters", &mapping.parameters, &PARAMETER_COLUMNS[..]),
            (
                "characteristics",
                &mapping.characteristics,
                &CHARACTERISTIC_COLUMNS[..],
            ),
        ] {
            for (section, keys) in [("columns", &table.columns), ("constants", &table.constants)] {
                if let Some(unknown) = keys.keys().find(|k| !known.contains(&k.as_str())) {
                    return Err(format!(
                        "[{name}.{section}]: '{unknown}' is not a column of {name} files ({})",
                        known.join(", ")
                    ));
                }
            }
        }
        let v = &mapping.values;
        let c = &v.columns;
        if c.timestamp.is_some() && (c.date.is_some() || c.time.is_some()) {
            return Err("[values.columns]: timestamp, or date and time, not both".into());
        }
        if c.time.is_some() && c.date.is_none() {
            return Err(
                "[values.columns]: time needs date (a time column alone has no day)".into(),
            );
        }
        if !v.wide.is_empty() && c.value.is_some() {
            return Err("[values]: wide columns, or a value column, not both".into());
        }
        for flag in v.ids.quality.values() {
            super::dialect::parse_quality(flag)
                .map_err(|e| format!("[values.ids.quality]: {e}"))?;
        }
        Ok(mapping)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapping_reads_and_typos_are_named() {
        let m = Mapping::parse(
            r#"
            [values.columns]
            date = "Datum"
            time = "Uhrzeit"
            value = "Wert"
            [values.constants]
            parameterId = "discharge-15min"
            [values.blocks]
            stationId = "Station"
            [values.ids.parameterId]
            Q = "discharge-15min"
            [[values.wide]]
            column = "Köln"
            stationId = "koeln"
            parameterId = "w"
            [stations.columns]
            easting = "Rechtswert"
            [stations.constants]
            epsg = "31467"
            "#,
        );
        let m = m.unwrap_err();
        // A value column and wide columns cannot both be.
        assert!(m.contains("not both"), "{m}");
        let m = Mapping::parse(
            "[values.columns]\nvalue = \"Wert\"\n[stations.constants]\nepsg = \"31467\"\n",
        )
        .unwrap();
        assert_eq!(m.values.columns.value.as_deref(), Some("Wert"));
        assert_eq!(m.stations.constants["epsg"], "31467");
        for (bad, named) in [
            ("[values.columns]\nvalu = \"Wert\"", "valu"),
            ("[stations.columns]\nRechtswert = \"easting\"", "Rechtswert"),
            ("[value.columns]\nvalue = \"Wert\"", "value"),
            ("[values.ids.quality]\n\"200\" = \"fine\"", "fine"),
            ("[values.columns]\ntime = \"Uhrzeit\"", "date"),
        ] {
            let e = Mapping::parse(bad).unwrap_err();
            assert!(e.contains(named), "{bad}: {e}");
        }
    }
}
