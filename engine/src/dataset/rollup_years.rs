//! The hydrological years of a rollup part, summarised in its footer, so that a publish derives
//! a station's characteristic values ([`crate::write::derived`]) from the footers of the parts
//! it keeps instead of their rows.
//!
//! Derived values take, per series and hydrological year, the count, sum, lowest and highest
//! value and the first and last instant; such summaries of parts add up (a year that two parts
//! share, or a day a year's edge cuts, is summed across them). An append of a day for every
//! series of 200 000 station-years read every station's kept parts back whole for them, 2 GB
//! of rows to add a day (the history of `benches/RESULTS.md`); their footers are
//! a few KB a station.
//!
//! They are the footer's key-value metadata under [`YEARS_KEY`], JSON, with the settings that
//! define the years (`yearStart`, `timeZone`): a part written under other settings (or before
//! summaries, or by a station with no series to derive) has none that count, and a publish
//! reads its rows and writes it anew with them.

use crate::dataset::derived_settings::{DerivedSettings, ZoneName};
use crate::dataset::rollups::{RollupFile, YEARS_KEY};
use crate::error::{EngineError, Result};
use crate::model::Micros;
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bytes of a part's end read first: its footer and years (a few KB) and some of its pages.
const TAIL_BYTES: u64 = 16 * 1024;

/// One series' values of one hydrological year, or of the days of it a part holds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct YearSummary {
    /// The year's name: the calendar year it ends in.
    pub year: i32,
    /// The year's first instant and the next year's.
    pub start: Micros,
    pub end: Micros,
    pub count: i64,
    #[serde(with = "exact")]
    pub sum: f64,
    #[serde(with = "exact")]
    pub min: f64,
    #[serde(with = "exact")]
    pub max: f64,
    /// The instants of the first and the last value.
    pub first: Micros,
    pub last: Micros,
}

impl YearSummary {
    /// Adds the summary of other values of the same year.
    pub(crate) fn add(&mut self, other: &YearSummary) {
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.first = self.first.min(other.first);
        self.last = self.last.max(other.last);
    }
}

/// Numbers as text in their shortest exact form: serde_json's parser may be a unit in the last
/// place off (exact only with its `float_roundtrip` feature, which would rebuild DataFusion's
/// crates), and a year's sum read back must be the one written.
mod exact {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        // Debug: the shortest exact digits, with an exponent only for very large or small.
        s.collect_str(&format_args!("{x:?}"))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A part's years: every series' summaries, ascending by year, under the settings that
/// define the years.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PartYears {
    pub year_start: u32,
    pub time_zone: String,
    pub series: BTreeMap<String, Vec<YearSummary>>,
}

impl PartYears {
    /// No series yet, years as `settings` define them.
    pub(crate) fn new(settings: &DerivedSettings) -> Self {
        Self {
            year_start: settings.year_start,
            time_zone: ZoneName(&settings.zone).to_string(),
            series: BTreeMap::new(),
        }
    }

    /// Whether its years are those `settings` define.
    pub(crate) fn defined_as(&self, settings: &DerivedSettings) -> bool {
        self.year_start == settings.year_start
            && self.time_zone == ZoneName(&settings.zone).to_string()
    }

    pub(crate) fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|e| EngineError::Internal(format!("years: {e}")))
    }
}

/// The years in the footer of the part `part`, read alone (the end of the file); None when it
/// has none that can be read (a part written before them, or without them).
pub(crate) async fn read_part_years(
    store: &dyn ObjectStore,
    part: &RollupFile,
) -> Result<Option<PartYears>> {
    let path = part.path();
    let location = Path::from(path.as_str());
    let size = part.size;
    let damaged = |e: ParquetError| EngineError::corrupt_by(format!("rollup part {path}"), e);
    let mut want = TAIL_BYTES.min(size);
    let metadata = loop {
        let tail = store.get_range(&location, size - want..size).await?;
        let mut reader = ParquetMetaDataReader::new()
            .with_column_index_policy(PageIndexPolicy::Skip)
            .with_offset_index_policy(PageIndexPolicy::Skip);
        match reader.try_parse_sized(&tail, size) {
            Ok(()) => break reader.finish().map_err(damaged)?,
            Err(ParquetError::NeedMoreData(needed)) if (needed as u64) > want => {
                want = (needed as u64).min(size);
            }
            Err(e) => return Err(damaged(e)),
        }
    };
    let Some(text) = metadata
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|kv| kv.key == YEARS_KEY))
        .and_then(|kv| kv.value.as_deref())
    else {
        return Ok(None);
    };
    match serde_json::from_str(text) {
        Ok(years) => Ok(Some(years)),
        Err(e) => {
            // The rows are still there: the publish derives from them and writes the part anew.
            tracing::warn!(part = %path, error = %e, "unreadable years in a rollup part's footer");
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::rollups::{DAY, DayRow, encode_rollups};
    use crate::model::zone::Zone;
    use datafusion::object_store::PutPayload;
    use datafusion::object_store::memory::InMemory;

    fn rows(days: i64) -> Vec<DayRow> {
        let q = "q".parse().unwrap();
        (0..days)
            .map(|d| DayRow::hourly(&q, d * DAY, d as f64))
            .collect()
    }

    fn years(series: usize) -> PartYears {
        let settings = DerivedSettings {
            zone: Zone::parse("Europe/Berlin").unwrap(),
            ..DerivedSettings::default()
        };
        let mut years = PartYears::new(&settings);
        for s in 0..series {
            let summaries = (1990..2040)
                .map(|year| YearSummary {
                    year,
                    start: i64::from(year) * 1_000,
                    end: i64::from(year + 1) * 1_000,
                    count: 8760,
                    sum: 0.1 * f64::from(year),
                    min: -1.5,
                    max: 1e300,
                    first: i64::from(year) * 1_000 + 1,
                    last: i64::from(year) * 1_000 + 999,
                })
                .collect();
            years.series.insert(format!("series-{s}"), summaries);
        }
        years
    }

    /// Years read back from the footer alone, exactly: from a part larger than the tail read
    /// first, and from a footer larger than it; a part without them has none.
    #[tokio::test]
    async fn a_parts_years_are_read_from_its_footer() {
        let store = InMemory::new();
        for (days, series) in [(20 * 365, 2), (30, 100), (30, 0)] {
            let rows = rows(days);
            let years = (series > 0).then(|| years(series));
            let json = years.as_ref().map(|y| y.to_json().unwrap());
            let bytes = encode_rollups(&rows, json).unwrap();
            let part = RollupFile {
                station: "s".parse().unwrap(),
                generation: 3,
                size: bytes.len() as u64,
                days: Some((0, (days - 1) * DAY)),
            };
            store
                .put(&Path::from(part.path()), PutPayload::from_bytes(bytes))
                .await
                .unwrap();
            let read = read_part_years(&store, &part).await.unwrap();
            assert_eq!(read, years, "{days} days, {series} series");
        }
        let berlin = years(1);
        let mut settings = DerivedSettings {
            zone: Zone::parse("Europe/Berlin").unwrap(),
            ..DerivedSettings::default()
        };
        assert!(berlin.defined_as(&settings));
        settings.year_start = 1;
        assert!(!berlin.defined_as(&settings));
        settings = DerivedSettings::default();
        assert!(!berlin.defined_as(&settings), "another zone");
        settings.years = 9;
        assert!(
            PartYears::new(&DerivedSettings::default()).defined_as(&settings),
            "years do not define years"
        );
    }
}
