//! The engine's error type, and what a client should be told of any error however deeply it is
//! wrapped ([`ErrorKind`], found by [`kind_of`]).
//!
//! Errors keep their sources. A read fault reaches the server by several paths: straight from
//! a month read, or through a DataFusion stream, where it travels as
//! `DataFusionError::External`, inside `Context`, or as an arrow or parquet error with the
//! object store's error inside. [`kind_of`] walks through the wrappers to the cause, so the same
//! fault gets the same status whatever path (and whatever format) reached it.

use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;
use datafusion::object_store;
use datafusion::parquet::errors::ParquetError;
use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

pub(crate) type BoxError = Box<dyn StdError + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The request names something the catalog does not have.
    #[error("{0}")]
    NotFound(String),
    /// The request is well-formed but asks for something impossible.
    #[error("{0}")]
    InvalidQuery(String),
    /// The dataset does not follow its layout: a bad manifest, a catalog table or month file
    /// that cannot be decoded, a file the manifest names that is not there.
    #[error("{what}")]
    Corrupt {
        what: String,
        #[source]
        source: Option<BoxError>,
    },
    /// Input files of an import; each line is `file:line: reason`.
    #[error("{} invalid input line(s):\n{}", .0.len(), .0.join("\n"))]
    Import(Vec<String>),
    /// A write refused before anything was read or written: an import into a dataset without
    /// `--append` or `--replace`, a replacement of most values not confirmed, a rollback to a
    /// version that is not kept.
    #[error("{0}")]
    Refused(String),
    /// Something this build cannot do (a storage scheme it was built without).
    #[error("{0}")]
    Unsupported(String),
    /// A file or directory of the local system.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] object_store::Error),
    #[error(transparent)]
    Parquet(#[from] ParquetError),
    #[error(transparent)]
    Arrow(#[from] ArrowError),
    #[error(transparent)]
    DataFusion(#[from] DataFusionError),
    /// A task the engine started did not finish (it panicked or was cancelled).
    #[error("{what}: {source}")]
    Task {
        what: &'static str,
        #[source]
        source: tokio::task::JoinError,
    },
    /// An invariant of the engine's own code did not hold.
    #[error("{0}")]
    Internal(String),
    /// A SQL statement refused, or failed by its own doing (a typo, a type error, a division
    /// by zero): see `crate::sql`.
    #[error("{0}")]
    Sql(String),
    /// A SQL query ran into one of its limits.
    #[error("{0}")]
    Guardrail(Guardrail),
}

/// A guardrail a query ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guardrail {
    /// It needed more memory than `memory` bytes, with `spill` bytes of disk to spill to.
    Memory { memory: usize, spill: u64 },
    /// Its answer has more rows than this.
    Rows(u64),
    /// It ran longer than this.
    Time(Duration),
}

impl fmt::Display for Guardrail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = |b: u64| b / (1 << 20);
        match self {
            Self::Memory { memory, spill } => write!(
                f,
                "the query needs more than its {} MiB of memory (and {} MiB of disk to spill \
                 to): filter the values first (a station, a parameter, a time range), or \
                 aggregate before joining or sorting",
                mib(*memory as u64),
                mib(*spill)
            ),
            Self::Rows(n) => write!(
                f,
                "the answer has more than {n} rows: aggregate, filter, or page with LIMIT \
                 and OFFSET"
            ),
            Self::Time(t) => write!(
                f,
                "the query ran longer than {} s: filter the values first, or aggregate \
                 less at once",
                t.as_secs()
            ),
        }
    }
}

impl EngineError {
    /// A dataset that does not follow its layout, with no further cause.
    pub fn corrupt(what: impl Into<String>) -> Self {
        Self::Corrupt {
            what: what.into(),
            source: None,
        }
    }

    /// A dataset that does not follow its layout, because of `source`.
    pub fn corrupt_by(what: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Corrupt {
            what: what.into(),
            source: Some(source.into()),
        }
    }

    /// What a client should be told of this error.
    pub fn kind(&self) -> ErrorKind {
        kind_of(self)
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// What a client should be told of an error, by its cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request asks for something impossible (400).
    BadRequest,
    /// The request names something that is not there (404).
    NotFound,
    /// The store did not answer or failed to read; trying again later may work (503 with
    /// `Retry-After`).
    Unavailable,
    /// The dataset is damaged: a file that is missing or cannot be decoded. Trying again will
    /// not help (500).
    Corrupt,
    /// A fault of this program (500).
    Internal,
}

impl ErrorKind {
    /// Whether the error is the server's, not the request's: logged, and remembered for health.
    pub fn is_fault(self) -> bool {
        matches!(self, Self::Unavailable | Self::Corrupt | Self::Internal)
    }
}

/// What a client should be told of `e`: the first cause down its chain of sources that decides
/// it. Wrappers (DataFusion's `External`, `Context`, `Shared`, arrow's and parquet's external
/// errors, an I/O error carrying another error) are looked through. An object store's generic
/// error leans to "unavailable" (the store did not answer), unless a cause below it decides
/// otherwise (a local file cut short is damage).
pub(crate) fn kind_of(e: &(dyn StdError + 'static)) -> ErrorKind {
    let mut leaning = None;
    let mut current = Some(e);
    while let Some(e) = current {
        match verdict(e) {
            Verdict::Decided(kind) => return kind,
            Verdict::Leaning(kind) => leaning = leaning.or(Some(kind)),
            Verdict::Wrapper => {}
        }
        current = next_cause(e);
    }
    leaning.unwrap_or(ErrorKind::Internal)
}

/// What one error of a chain says of the whole.
enum Verdict {
    Decided(ErrorKind),
    /// The kind, unless a cause below decides.
    Leaning(ErrorKind),
    /// Only wraps its cause.
    Wrapper,
}

fn verdict(e: &(dyn StdError + 'static)) -> Verdict {
    use Verdict::{Decided, Leaning, Wrapper};
    if let Some(e) = e.downcast_ref::<EngineError>() {
        return match e {
            EngineError::NotFound(_) => Decided(ErrorKind::NotFound),
            EngineError::InvalidQuery(_)
            | EngineError::Import(_)
            | EngineError::Refused(_)
            | EngineError::Sql(_)
            | EngineError::Guardrail(_) => Decided(ErrorKind::BadRequest),
            EngineError::Corrupt { .. } => Decided(ErrorKind::Corrupt),
            EngineError::Unsupported(_) | EngineError::Internal(_) | EngineError::Task { .. } => {
                Decided(ErrorKind::Internal)
            }
            EngineError::Io { source, .. } => Decided(io_kind(source)),
            EngineError::Store(_)
            | EngineError::Parquet(_)
            | EngineError::Arrow(_)
            | EngineError::DataFusion(_) => Wrapper,
        };
    }
    if let Some(e) = e.downcast_ref::<DataFusionError>() {
        return match e {
            DataFusionError::ResourcesExhausted(_) => Decided(ErrorKind::Unavailable),
            DataFusionError::ArrowError(..)
            | DataFusionError::ParquetError(_)
            | DataFusionError::ObjectStore(_)
            | DataFusionError::IoError(_)
            | DataFusionError::External(_)
            | DataFusionError::Context(..)
            | DataFusionError::Shared(_)
            | DataFusionError::Collection(_)
            | DataFusionError::Diagnostic(..)
            | DataFusionError::ExecutionJoin(_) => Wrapper,
            _ => Decided(ErrorKind::Internal),
        };
    }
    if let Some(e) = e.downcast_ref::<ArrowError>() {
        return match e {
            ArrowError::ExternalError(_) | ArrowError::IoError(..) => Wrapper,
            ArrowError::MemoryError(_) => Decided(ErrorKind::Unavailable),
            // Decoding stored data is the engine's use of arrow that can fail on its input.
            _ => Decided(ErrorKind::Corrupt),
        };
    }
    if let Some(e) = e.downcast_ref::<ParquetError>() {
        return match e {
            ParquetError::External(_) => Wrapper,
            _ => Decided(ErrorKind::Corrupt),
        };
    }
    if let Some(e) = e.downcast_ref::<object_store::Error>() {
        return match e {
            // Every file read was named by the manifest: its absence is damage, not a typo.
            object_store::Error::NotFound { .. } => Decided(ErrorKind::Corrupt),
            object_store::Error::NotSupported { .. }
            | object_store::Error::NotImplemented { .. }
            | object_store::Error::InvalidPath { .. }
            | object_store::Error::UnknownConfigurationKey { .. } => Decided(ErrorKind::Internal),
            _ => Leaning(ErrorKind::Unavailable),
        };
    }
    if let Some(e) = e.downcast_ref::<std::io::Error>() {
        // An I/O error that carries another error is decided by that one.
        return match e.get_ref() {
            Some(_) => Wrapper,
            None => Decided(io_kind(e)),
        };
    }
    if e.is::<tokio::task::JoinError>() {
        return Decided(ErrorKind::Internal);
    }
    Wrapper
}

fn io_kind(e: &std::io::Error) -> ErrorKind {
    use std::io::ErrorKind as Io;
    match e.kind() {
        Io::NotFound | Io::UnexpectedEof | Io::InvalidData => ErrorKind::Corrupt,
        _ => ErrorKind::Unavailable,
    }
}

/// The error `e` wraps: its source, or the error an I/O error carries (whose `source()` skips
/// that error and gives its source instead).
fn next_cause<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a (dyn StdError + 'static)> {
    if let Some(io) = e.downcast_ref::<std::io::Error>()
        && let Some(inner) = io.get_ref()
    {
        return Some(inner);
    }
    // The transparent variants' `source()` is their inner error's source: the inner error
    // itself is the next cause.
    match e.downcast_ref::<EngineError>() {
        Some(EngineError::Store(inner)) => Some(inner),
        Some(EngineError::Parquet(inner)) => Some(inner),
        Some(EngineError::Arrow(inner)) => Some(inner),
        Some(EngineError::DataFusion(inner)) => Some(inner),
        _ => e.source(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn missing() -> object_store::Error {
        object_store::Error::NotFound {
            path: "values/x.parquet".into(),
            source: "gone".into(),
        }
    }

    fn unreachable() -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
        }
    }

    #[test]
    fn the_same_fault_has_the_same_kind_however_wrapped() {
        type Wrap = fn(object_store::Error) -> EngineError;
        let wrappings: Vec<(&str, Wrap)> = vec![
            ("direct", EngineError::Store),
            ("datafusion", |e| {
                EngineError::DataFusion(DataFusionError::ObjectStore(Box::new(e)))
            }),
            ("external", |e| {
                EngineError::DataFusion(DataFusionError::External(Box::new(EngineError::Store(e))))
            }),
            ("context", |e| {
                EngineError::DataFusion(DataFusionError::Context(
                    "reading".into(),
                    Box::new(DataFusionError::Shared(Arc::new(
                        DataFusionError::ObjectStore(Box::new(e)),
                    ))),
                ))
            }),
            ("parquet", |e| {
                EngineError::Parquet(ParquetError::External(Box::new(e)))
            }),
            ("arrow", |e| {
                EngineError::Arrow(ArrowError::ExternalError(Box::new(EngineError::Store(e))))
            }),
            ("io", |e| {
                EngineError::DataFusion(DataFusionError::IoError(std::io::Error::other(e)))
            }),
        ];
        for (name, wrap) in wrappings {
            assert_eq!(wrap(missing()).kind(), ErrorKind::Corrupt, "{name}");
            assert_eq!(wrap(unreachable()).kind(), ErrorKind::Unavailable, "{name}");
        }
    }

    #[test]
    fn a_generic_store_error_leans_to_unavailable_unless_its_cause_decides() {
        let short = object_store::Error::Generic {
            store: "LocalDir",
            source: Box::new(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)),
        };
        assert_eq!(EngineError::Store(short).kind(), ErrorKind::Corrupt);
        let opaque = object_store::Error::Generic {
            store: "S3",
            source: "connection reset".into(),
        };
        assert_eq!(EngineError::Store(opaque).kind(), ErrorKind::Unavailable);
    }

    #[test]
    fn kinds_by_cause() {
        assert_eq!(
            EngineError::NotFound("x".into()).kind(),
            ErrorKind::NotFound
        );
        assert_eq!(
            EngineError::InvalidQuery("x".into()).kind(),
            ErrorKind::BadRequest
        );
        assert_eq!(EngineError::corrupt("x").kind(), ErrorKind::Corrupt);
        assert_eq!(
            EngineError::Parquet(ParquetError::EOF("short".into())).kind(),
            ErrorKind::Corrupt
        );
        assert_eq!(
            EngineError::DataFusion(DataFusionError::ResourcesExhausted("memory".into())).kind(),
            ErrorKind::Unavailable
        );
        assert_eq!(
            EngineError::DataFusion(DataFusionError::Plan("bad plan".into())).kind(),
            ErrorKind::Internal
        );
        assert!(!ErrorKind::NotFound.is_fault());
        assert!(ErrorKind::Unavailable.is_fault());
    }
}
