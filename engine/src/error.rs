//! The engine's error type. The server maps each variant to an HTTP status in one place.

use datafusion::error::DataFusionError;
use datafusion::object_store;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The request names something the catalog does not have.
    #[error("{0}")]
    NotFound(String),
    /// The request is well-formed but asks for something impossible.
    #[error("{0}")]
    InvalidQuery(String),
    /// The store did not answer or a file is missing or corrupt.
    #[error("storage: {0}")]
    Storage(String),
    /// A dataset that does not follow the layout (bad manifest, bad catalog).
    #[error("dataset: {0}")]
    Dataset(String),
    /// Input files of an import; each line is `file:line: reason`.
    #[error("{} invalid input line(s):\n{}", .0.len(), .0.join("\n"))]
    Import(Vec<String>),
    #[error("query: {0}")]
    Query(#[from] DataFusionError),
}

impl From<datafusion::arrow::error::ArrowError> for EngineError {
    fn from(e: datafusion::arrow::error::ArrowError) -> Self {
        Self::Query(e.into())
    }
}

impl From<datafusion::parquet::errors::ParquetError> for EngineError {
    fn from(e: datafusion::parquet::errors::ParquetError) -> Self {
        Self::Storage(e.to_string())
    }
}

impl From<object_store::Error> for EngineError {
    fn from(e: object_store::Error) -> Self {
        Self::Storage(e.to_string())
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
