//! The Hydro API engine: the dataset layout on an object store, the catalog in memory, the
//! spatial index, the values planner on DataFusion, and the writers (import, generate).
//! It knows nothing of HTTP.

pub mod assembly;
pub mod catalog;
pub mod catalog_file;
pub mod coords;
pub mod dataset;
pub mod duration;
pub mod error;
pub mod gauges;
pub mod generate;
pub mod ids;
pub mod import;
pub mod layout;
mod local;
pub mod manifest;
pub mod model;
mod pages;
pub mod planner;
mod scan;
pub mod spatial;
pub mod stored;
mod thrift;
mod value_cache;
pub mod writer;

/// The arrow DataFusion is built on; the server encodes with it.
pub use datafusion::arrow;
pub use datafusion::physical_plan::SendableRecordBatchStream;
pub use dataset::Dataset;
pub use error::{EngineError, Result};
