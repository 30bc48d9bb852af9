//! `manifest.json`: the one object a reader opens first. It names the dataset version (which
//! feeds ETags), the counts, and the catalog tables, among them the files table: every value
//! file with its size and, per parameter, the row count and time range (see
//! [`files_table`](super::files_table)). With it the planner needs no LIST and can count and
//! skip whole months without opening them.
//!
//! The manifest stays a few hundred bytes however large the archive: the list of value files
//! (1.2 M files at 100 000 station-years, where a JSON list was ~430 MB) is a Parquet table of
//! 7.7 MB, written while the files are, so no writer holds the list.

use crate::dataset::derived_settings::DerivedSettings;
use crate::dataset::layout;
use crate::model::Micros;
use crate::model::ids::{ParameterId, StationId};
use crate::model::month::Month;
use crate::model::zone::Zone;
use serde::{Deserialize, Serialize};

/// Version 4: value files under one Hive key (`station=<id>`), compacted into station-year
/// Parquet files, the files table naming each month's object (`path`). Read too: version 3
/// (month files in `month=` directories, packs of them) and version 2 (no packs).
pub(crate) const FORMAT: u32 = 4;

/// Version 5: version 4 with recorded gaps (rows of quality `missing`, their `value` null in
/// month files whose `value` column is nullable). Written only by a version that holds one,
/// so that a build before gaps, which would fail reading them, refuses the dataset at start;
/// a dataset without gaps stays version 4.
pub(crate) const FORMAT_WITH_GAPS: u32 = 5;

/// The oldest layout version this build reads.
pub(crate) const OLDEST_FORMAT: u32 = 2;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format: u32,
    /// Opaque version string; changes with every publish.
    pub version: String,
    /// Sequence number of the publish; names the files it wrote.
    pub generation: u64,
    /// RFC 3339, UTC.
    pub created: String,
    pub counts: Counts,
    pub catalog: CatalogFiles,
    /// How the characteristic values of type `derived` were made; versions written before
    /// the settings were kept used the defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived: Option<DerivedSettings>,
    /// What the publish did; versions written before it was kept have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish: Option<PublishSummary>,
    /// The zone whose days the daily rollups are of (the dataset's zone), where it is not
    /// UTC; versions that name none have rollups of UTC days.
    #[serde(
        default,
        rename = "rollupZone",
        skip_serializing_if = "Option::is_none"
    )]
    pub rollup_zone: Option<String>,
}

impl Manifest {
    /// The zone whose days its daily rollups are of.
    pub fn rollup_zone(&self) -> Zone {
        self.rollup_zone
            .as_deref()
            .and_then(|z| Zone::parse(z).ok())
            .unwrap_or(Zone::UTC)
    }
}

/// What a publish did.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PublishSummary {
    pub kind: PublishKind,
    /// Series with values written (new or rewritten months).
    pub series: u64,
    /// Station-months written; the others are carried over as they were.
    pub station_months: u64,
}

/// How a version came about.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PublishKind {
    /// A dataset replaced by `hydro import`.
    Import,
    /// Values added or corrected by `hydro import --append`.
    Append,
    /// A dataset made by `hydro generate`.
    Generate,
    /// Months packed by `hydro compact`: the same values.
    Compact,
    /// An earlier version published again by `hydro rollback`.
    Rollback,
}

impl PublishKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Import => "import",
            Self::Append => "append",
            Self::Generate => "generate",
            Self::Compact => "compact",
            Self::Rollback => "rollback",
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Counts {
    pub stations: u64,
    pub parameters: u64,
    pub characteristics: u64,
    pub values: u64,
    /// Rows of quality `missing` (recorded gaps, without a value) among `values`; versions
    /// without gaps do not name it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub missing: u64,
    pub files: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CatalogFiles {
    pub stations: String,
    pub parameters: String,
    pub characteristics: String,
    /// The files table.
    pub files: String,
    /// The rollups table (`dataset::rollups`); versions written before rollups have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollups: Option<String>,
    /// The table of each series' newest month (`dataset::files_table::NEWEST`); versions
    /// written before it have none (their servers find those months in the files table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest: Option<String>,
}

/// One station-month of values, as the files table lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueFile {
    pub station: StationId,
    pub month: Month,
    /// The generation of the publish that wrote the month's values (what `changedSince`
    /// compares; a compaction moves them without changing it).
    pub generation: u64,
    /// Bytes of the month file, or of the station-year file that holds the month
    /// ([`Stored::Year`]); DataFusion needs it to read the footer without a HEAD request.
    pub size: u64,
    /// One per row group, in row group order.
    pub series: Box<[SeriesStats]>,
    /// Where its rows lie.
    pub stored: Stored,
}

/// Where a station-month's rows lie on the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// A file of its own (`layout::values_path`).
    File,
    /// A file of its own, named as layouts 2 and 3 named them (`layout::month_dir_path`).
    MonthDir,
    /// Row groups of its station-year's file (`layout::year_path`, see `write::compact`).
    Year(InYear),
    /// The month file's bytes, as written, in a pack of layout 3 (`layout::pack_path`), from
    /// `offset`.
    Pack { generation: u64, offset: u64 },
}

/// Where a month lies in its station-year's file: `series.len()` row groups from
/// `first_row_group`, its pages from byte `start`; the file's page index and footer from
/// byte `footer` to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InYear {
    /// The publish (a compaction) that wrote the file.
    pub generation: u64,
    pub first_row_group: u32,
    /// Row groups of the whole file (a scan's row-group selection must cover them all).
    pub row_groups: u32,
    pub start: u64,
    pub footer: u64,
}

impl ValueFile {
    /// The object that holds the month's rows.
    pub fn object(&self) -> String {
        let year = self.month.year();
        match self.stored {
            Stored::File => layout::values_path(&self.station, self.month, self.generation),
            Stored::MonthDir => layout::month_dir_path(&self.station, self.month, self.generation),
            Stored::Year(y) => layout::year_path(&self.station, year, y.generation),
            Stored::Pack { generation, .. } => layout::pack_path(&self.station, year, generation),
        }
    }

    /// The month as messages name it: its object, and which month of it where it holds more.
    pub fn name(&self) -> String {
        match self.stored {
            Stored::File | Stored::MonthDir => self.object(),
            _ => format!("{} ({})", self.object(), self.month),
        }
    }

    /// Where the month file's bytes begin in [`ValueFile::object`]: offsets in a month file
    /// are shifted by it. 0 but in a pack (a station-year file's offsets are its own).
    pub fn offset(&self) -> u64 {
        match self.stored {
            Stored::Pack { offset, .. } => offset,
            _ => 0,
        }
    }

    /// The object's row group of the month's `i`th series.
    pub fn row_group(&self, i: usize) -> usize {
        match self.stored {
            Stored::Year(y) => y.first_row_group as usize + i,
            _ => i,
        }
    }

    /// What a first read of the month takes, in the month file's offsets, when its footer is
    /// not known yet: the whole month file, or in a station-year file the month's pages and
    /// what follows them (later months, the page index and the footer).
    pub fn first_read(&self) -> std::ops::Range<u64> {
        match self.stored {
            Stored::Year(y) => y.start..self.size,
            _ => 0..self.size,
        }
    }

    /// Where the page index and footer begin, when the files table says.
    pub fn footer_start(&self) -> Option<u64> {
        match self.stored {
            Stored::Year(y) => Some(y.footer),
            _ => None,
        }
    }

    /// Whether its object holds other months too (a station-year file or a pack).
    pub fn shares_object(&self) -> bool {
        matches!(self.stored, Stored::Year(_) | Stored::Pack { .. })
    }
}

/// What one parameter contributes to a value file.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesStats {
    pub parameter: ParameterId,
    pub rows: u64,
    /// Rows of quality `missing` among `rows` (recorded gaps, without a value).
    pub missing: u64,
    /// Oldest and newest timestamp, UTC microseconds.
    pub min: Micros,
    pub max: Micros,
}
