//! `manifest.json`: the one object a reader opens first. It names the dataset version (which
//! feeds ETags), the catalog files, and every value file with its size and, per parameter, the
//! row count and time range. With it the planner needs no LIST and can count and skip whole
//! months without opening them.

use crate::model::Micros;
use serde::{Deserialize, Serialize};

pub const FORMAT: u32 = 1;

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
    pub files: Vec<ValueFile>,
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
}

/// One station-month of values.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ValueFile {
    pub path: String,
    pub station: String,
    /// `YYYY-MM`
    pub month: String,
    /// Bytes; DataFusion needs it to read the footer without a HEAD request.
    pub size: u64,
    pub series: Vec<SeriesStats>,
}

/// What one parameter contributes to a value file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeriesStats {
    pub parameter: String,
    pub rows: u64,
    /// Oldest and newest timestamp, UTC microseconds.
    pub min: Micros,
    pub max: Micros,
}
