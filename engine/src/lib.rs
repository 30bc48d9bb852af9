//! The Hydro API engine: the dataset on an object store, the catalog in memory, the values
//! queries, and the writers (import, generate). It knows nothing of HTTP.
//!
//! The server and the command line reach it through this module alone: a version of a dataset
//! opened as a [`Dataset`] (its catalog, values, aggregates, statistics, latest values, changes
//! and SQL tables), the queries it takes and the answers it gives, the writers of a publish
//! (import, generate, compact, vacuum, rollback), and the store they work on. Everything else
//! is the crate's own (`unreachable_pub` keeps it so).
//!
//! Modules from the bottom up; each uses only those above it in this list:
//!
//! - `error`: the engine's error, classified by what a client should be told.
//! - `model`: ids, catalog resources, durations, coordinate conversion.
//! - `parquet`: Parquet below the Arrow reader: thrift, footers split for copying, pages
//!   decoded straight into arrays.
//! - `storage`: the object store (a local directory read through kept file handles) and the
//!   budgeted caches of what it returned.
//! - `catalog`: stations, parameters and characteristics in memory, with the spatial index.
//! - `dataset`: what is on the store (manifest, file layout, catalog tables, month files)
//!   and the opened [`Dataset`].
//! - `query`: values queries, planned into direct month reads or DataFusion plans.
//! - `sql`: one read-only SQL statement over a dataset version, within guardrails.
//! - `write`: datasets written (import, generate).
//! - `tests`: tests across the modules (the planner, appends, rollups, latest values, the
//!   aggregator against DataFusion).

#![warn(unreachable_pub)]

mod catalog;
mod dataset;
mod error;
mod model;
mod parquet;
mod query;
mod sql;
mod storage;
#[cfg(test)]
mod tests;
mod write;

/// The arrow DataFusion is built on; the server encodes with it.
pub use datafusion::arrow;
pub use datafusion::physical_plan::SendableRecordBatchStream;

// The error, classified by what a client should be told.
pub use error::{EngineError, ErrorKind, Result};

// The catalog's resources, ids and the forms of time and duration the API takes.
pub use model::coords::{UTM_EPSG, Utm};
pub use model::duration::{DurationError, IsoDuration};
pub use model::ids::{CharacteristicId, ParameterId, Series, StationId};
pub use model::instant::{
    FORMS as INSTANT_FORMS, parse as parse_instant, parse_local as parse_local_time,
};
pub use model::month::Month;
pub use model::property::property as observed_property;
pub use model::zone::Zone;
pub use model::{
    Characteristic, CharacteristicType, Coordinates, GaugeZero, Latest, Micros, Parameter, Period,
    Station, StationType, normalize_state,
};

// The store, and the catalog in memory.
pub use catalog::search::{TextQuery, edits_within, typo_reach};
pub use catalog::spatial::{BBox, Near, SpatialIndex};
pub use catalog::{Catalog, NEIGHBOURHOOD_KM, StationFilter, StationHit};
pub use storage::counted::RequestKind;
pub use storage::{ReadCost, S3Settings, Store};

// A version opened, and the versions a store holds.
pub use dataset::Dataset;
pub use dataset::manifest::{Manifest, PublishKind};
pub use dataset::versions::{read_version, read_versions, recorded_generations};
pub use dataset::{published_generation, read_manifest};

// What a version answers.
pub use parquet::assembly::Assembly as ParquetAssembly;
pub use query::aggregate::calendar::{INTERVALS, Interval};
pub use query::aggregate::statistic::{Kind as StatisticKind, STATISTICS, Statistic};
pub use query::aggregate::{
    AggregatePlan, AggregateQuery, AggregateSpec, BucketColumn, ManyAggregateQuery,
    SeriesToAggregate,
};
pub use query::changes::ChangesQuery;
pub use query::statistics::{
    DEFAULT_EXCEEDANCE, STATISTICS_TYPES, StatisticsQuery, StatisticsSpec, StatisticsType,
};
pub use query::{
    AnswerPart, ManyPlan, ManyQuery, ReadAhead, SortKey, StoredRowGroup, ValueColumn, ValuesPlan,
    ValuesQuery, Window,
};
pub use sql::{
    CATALOG as SQL_CATALOG, Guardrail, SCHEMA as SQL_SCHEMA, SqlLimits, SqlTables, run as run_sql,
    schema_of as sql_schema_of,
};

// The writers of a publish.
pub use write::compact::compact;
pub use write::derived::DerivedChange;
pub use write::gauges::{gauge_means, means_along_river};
pub use write::generate::{GenerateOptions, generate};
pub use write::import::{
    CsvDialect, Encoding, ImportInput, ImportMode, ImportOptions, ImportProgress, Mapping,
    ReplaceConfirm, Replacement, import, parse_quality, parse_zone,
};
pub use write::rollback::rollback;
pub use write::vacuum::{Retention, vacuum};
pub use write::writer::DatasetWriter;
