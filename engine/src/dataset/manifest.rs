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
use serde::{Deserialize, Serialize};

/// Version 3: a value file may lie in a pack (the files table's `pack` and `offset`).
/// Version 2 (value files listed in the files table, each an object of its own) is read too.
pub const FORMAT: u32 = 3;

/// The oldest layout version this build reads.
pub const OLDEST_FORMAT: u32 = 2;

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
}

impl PublishKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Import => "import",
            Self::Append => "append",
            Self::Generate => "generate",
            Self::Compact => "compact",
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Counts {
    pub stations: u64,
    pub parameters: u64,
    pub characteristics: u64,
    pub values: u64,
    pub files: u64,
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
}

/// One station-month of values, as the files table lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueFile {
    pub station: StationId,
    pub month: Month,
    /// The generation of the publish that wrote it (part of its name).
    pub generation: u64,
    /// Bytes; DataFusion needs it to read the footer without a HEAD request.
    pub size: u64,
    /// One per row group, in row group order.
    pub series: Box<[SeriesStats]>,
    /// The pack that holds the file, if it is not an object of its own.
    pub pack: Option<Packed>,
}

/// Where a month file lies in a pack (see `write::compact`): the file's bytes as written,
/// unchanged, from `offset` of the station-year's pack written by generation `generation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packed {
    pub generation: u64,
    pub offset: u64,
}

impl ValueFile {
    /// The file's own name, as it was written (and as it stays when packed: part of the
    /// identity of its bytes).
    pub fn path(&self) -> String {
        layout::values_path(&self.station, self.month, self.generation)
    }

    /// The object that holds the file's bytes: its pack, or the file itself.
    pub fn object(&self) -> String {
        match self.pack {
            Some(p) => layout::pack_path(&self.station, self.month.year(), p.generation),
            None => self.path(),
        }
    }

    /// Where the file's bytes begin in [`ValueFile::object`].
    pub fn offset(&self) -> u64 {
        self.pack.map_or(0, |p| p.offset)
    }
}

/// What one parameter contributes to a value file.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesStats {
    pub parameter: ParameterId,
    pub rows: u64,
    /// Oldest and newest timestamp, UTC microseconds.
    pub min: Micros,
    pub max: Micros,
}
