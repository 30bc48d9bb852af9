//! The Hydro API engine: the dataset on an object store, the catalog in memory, the values
//! queries, and the writers (import, generate). It knows nothing of HTTP.
//!
//! Modules from the bottom up; each uses only those above it in this list:
//!
//! - [`error`]: the engine's error, classified by what a client should be told.
//! - [`model`]: ids, catalog resources, durations, coordinate conversion.
//! - [`parquet`]: Parquet below the Arrow reader: thrift, footers split for copying, pages
//!   decoded straight into arrays.
//! - [`storage`]: the object store (a local directory read through kept file handles) and the
//!   budgeted caches of what it returned.
//! - [`catalog`]: stations, parameters and characteristics in memory, with the spatial index.
//! - [`dataset`]: what is on the store (manifest, file layout, catalog tables, month files)
//!   and the opened [`Dataset`].
//! - [`query`]: values queries, planned into direct month reads or DataFusion plans.
//! - [`sql`]: one read-only SQL statement over a dataset version, within guardrails.
//! - [`write`](mod@write): datasets written (import, generate).

pub mod catalog;
pub mod dataset;
pub mod error;
pub mod model;
pub mod parquet;
pub mod query;
pub mod sql;
pub mod storage;
pub mod write;

/// The arrow DataFusion is built on; the server encodes with it.
pub use datafusion::arrow;
pub use datafusion::physical_plan::SendableRecordBatchStream;
pub use dataset::Dataset;
pub use error::{EngineError, Result};
