//! Where a dataset is stored, and what is kept in memory of what the store returned.
//!
//! A dataset lives on an `object_store`: a local directory, read through [`local::LocalDir`]
//! (ranged reads in place, through file handles kept open), or an S3-compatible bucket
//! ([`s3`]), whose requests are counted by kind ([`counted`]). Month files' bytes are kept in
//! [`value_cache::ValueCache`] within a budget.

pub mod counted;
pub mod local;
pub(crate) mod pack_view;
pub mod s3;
pub mod slot_cache;
pub mod value_cache;

use crate::error::{EngineError, Result};
use counted::{Counted, RequestCounts};
use datafusion::object_store::ObjectStore;
use datafusion::object_store::local::LocalFileSystem;
pub use s3::S3Settings;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// Where a dataset is: `DIR`, `file:///DIR` or `s3://BUCKET[/PREFIX]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Dir(PathBuf),
    S3 { bucket: String, prefix: String },
}

impl Location {
    pub fn parse(location: &str) -> Result<Self> {
        match location.split_once("://") {
            None => Ok(Self::Dir(PathBuf::from(location))),
            Some(("file", rest)) => Ok(Self::Dir(PathBuf::from(rest))),
            Some(("s3", rest)) => {
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    return Err(EngineError::Unsupported(format!(
                        "{location}: no bucket (s3://BUCKET/PREFIX)"
                    )));
                }
                Ok(Self::S3 {
                    bucket: bucket.to_string(),
                    prefix: prefix.trim_matches('/').to_string(),
                })
            }
            Some((scheme, _)) => Err(EngineError::Unsupported(format!(
                "storage scheme '{scheme}' is not supported (use a directory or s3://BUCKET/PREFIX)"
            ))),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dir(dir) => write!(f, "{}", dir.display()),
            Self::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            Self::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// A store opened, to be shared by the versions of a dataset read from it (a bucket's client
/// keeps its connections).
#[derive(Clone)]
pub struct Store {
    pub(crate) object: Arc<dyn ObjectStore>,
    /// The store again when it is a local directory: month files are then read through the
    /// handles they keep (see `local::OpenHandle`).
    pub(crate) local: Option<Arc<local::LocalDir>>,
    /// Requests made to a remote store, by kind (None for a local directory, whose reads are
    /// not requests).
    pub(crate) requests: Option<Arc<RequestCounts>>,
}

impl Store {
    /// Opens `location`; a bucket with `s3` (and the `AWS_*` variables). Makes no request:
    /// a bucket that cannot be reached fails at its first read.
    pub fn open(location: &Location, s3: &S3Settings) -> Result<Self> {
        match location {
            Location::Dir(dir) => Ok(Self::dir(dir)?),
            Location::S3 { bucket, prefix } => {
                let requests = Arc::new(RequestCounts::default());
                let counted = Counted::new(s3::open(bucket, prefix, s3)?, Arc::clone(&requests));
                Ok(Self {
                    object: Arc::new(counted),
                    local: None,
                    requests: Some(requests),
                })
            }
        }
    }

    /// A local directory, made if missing.
    pub fn dir(dir: &std::path::Path) -> Result<Self> {
        let local = local_dir(dir)?;
        Ok(Self {
            object: Arc::clone(&local) as Arc<dyn ObjectStore>,
            local: Some(local),
            requests: None,
        })
    }

    pub fn object_store(&self) -> Arc<dyn ObjectStore> {
        Arc::clone(&self.object)
    }

    /// Whether reads are requests over a network (so worth more of them in flight at once).
    pub fn is_remote(&self) -> bool {
        self.local.is_none()
    }

    /// Requests made so far by kind, for a remote store.
    pub fn requests(&self) -> Option<&RequestCounts> {
        self.requests.as_deref()
    }
}

/// Opens a local directory as an object store rooted there.
pub fn local_store(dir: &std::path::Path) -> Result<Arc<dyn ObjectStore>> {
    Ok(local_dir(dir)?)
}

fn local_dir(dir: &std::path::Path) -> Result<Arc<local::LocalDir>> {
    std::fs::create_dir_all(dir).map_err(|source| EngineError::Io {
        what: format!("cannot create {}", dir.display()),
        source,
    })?;
    Ok(Arc::new(local::LocalDir::new(
        LocalFileSystem::new_with_prefix(dir)?,
    )))
}

/// The object store at `location` (see [`Location`]).
pub fn store_for(location: &str, s3: &S3Settings) -> Result<Arc<dyn ObjectStore>> {
    Ok(Store::open(&Location::parse(location)?, s3)?.object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations() {
        let dir = |d: &str| Location::Dir(PathBuf::from(d));
        assert_eq!(Location::parse("data/x").unwrap(), dir("data/x"));
        assert_eq!(Location::parse("file:///srv/x").unwrap(), dir("/srv/x"));
        let s3 = |b: &str, p: &str| Location::S3 {
            bucket: b.into(),
            prefix: p.into(),
        };
        assert_eq!(Location::parse("s3://b").unwrap(), s3("b", ""));
        assert_eq!(Location::parse("s3://b/").unwrap(), s3("b", ""));
        assert_eq!(Location::parse("s3://b/a/c/").unwrap(), s3("b", "a/c"));
        assert_eq!(s3("b", "a/c").to_string(), "s3://b/a/c");
        assert!(Location::parse("s3:///x").is_err());
        let e = Location::parse("gs://b/x").unwrap_err().to_string();
        assert!(e.contains("'gs'"), "{e}");
    }
}
