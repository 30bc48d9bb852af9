//! Where a dataset is stored, and what is kept in memory of what the store returned.
//!
//! A dataset lives on an `object_store`: a local directory, read through [`local::LocalDir`]
//! (ranged reads in place, through file handles kept open), or an S3-compatible bucket
//! ([`s3`]), whose requests are counted by kind ([`counted`]). Month files' bytes are kept in
//! [`value_cache::ValueCache`] within a budget.

pub(crate) mod counted;
pub(crate) mod local;
pub(crate) mod pack_view;
pub(crate) mod s3;
pub(crate) mod slot_cache;
pub(crate) mod value_cache;

use crate::error::{EngineError, Result};
use bytes::Bytes;
use counted::{Counted, RequestCounts};
use datafusion::object_store::local::LocalFileSystem;
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
pub use s3::S3Settings;
use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

/// Deletes `path`; absent is fine.
pub(crate) async fn delete_if_present(store: &dyn ObjectStore, path: &str) -> Result<()> {
    match store.delete(&Path::from(path)).await {
        Ok(()) | Err(datafusion::object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Where a dataset or an input is, as every command takes it: a local directory (`DIR` or
/// `file:///DIR`) or a bucket of an object storage service (`s3://BUCKET[/PREFIX]`). The one
/// parser of store arguments, and the one place that opens a store for a URL ([`Store::open`]):
/// another object_store backend (`gs://`, `az://`) is a variant here and a cargo feature of
/// object_store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    Dir(PathBuf),
    S3 { bucket: String, prefix: String },
}

impl StoreUrl {
    pub fn parse(url: &str) -> Result<Self> {
        match url.split_once("://") {
            None => Ok(Self::Dir(PathBuf::from(url))),
            Some(("file", rest)) => Ok(Self::Dir(PathBuf::from(rest))),
            Some(("s3", rest)) => {
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    return Err(EngineError::Unsupported(format!(
                        "{url}: no bucket (s3://BUCKET/PREFIX)"
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

    /// For a bucket: the bucket itself (its root) and the key this URL names in it, which an
    /// input may give as a pattern (`s3://BUCKET/raw/*.csv`). None for a directory, whose
    /// files are read as files.
    pub fn bucket_and_key(&self) -> Option<(Self, &str)> {
        match self {
            Self::Dir(_) => None,
            Self::S3 { bucket, prefix } => Some((
                Self::S3 {
                    bucket: bucket.clone(),
                    prefix: String::new(),
                },
                prefix,
            )),
        }
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dir(dir) => write!(f, "{}", dir.display()),
            Self::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            Self::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// What one read of a store costs, which is what a reader plans its reads by: how many to
/// keep in flight, whether to merge neighbouring ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadCost {
    /// A read in place (a local directory, through a file handle kept open): microseconds,
    /// nothing to gain from more of them at once than cores, nor from merging them.
    InPlace,
    /// A request over a network (a bucket): a round trip each, hidden by many in flight and
    /// saved by merging reads of one object.
    RoundTrip,
}

/// A store opened, to be shared by the versions of a dataset read from it (a bucket's client
/// keeps its connections).
#[derive(Clone)]
pub struct Store {
    pub(crate) object: Arc<dyn ObjectStore>,
    /// The store again when it is a local directory: month files are then read through the
    /// handles they keep (see `local::OpenHandle`).
    local: Option<Arc<local::LocalDir>>,
    /// Requests made to a remote store, by kind (None for a local directory, whose reads are
    /// not requests).
    pub(crate) requests: Option<Arc<RequestCounts>>,
}

impl Store {
    /// Opens the store at `url`; a bucket with `s3` (and the `AWS_*` variables). Makes no
    /// request: a bucket that cannot be reached fails at its first read.
    pub fn open(url: &StoreUrl, s3: &S3Settings) -> Result<Self> {
        match url {
            StoreUrl::Dir(dir) => Ok(Self::dir(dir)?),
            StoreUrl::S3 { bucket, prefix } => {
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

    /// Opens the store a command argument names (see `StoreUrl`).
    pub fn at(url: &str, s3: &S3Settings) -> Result<Self> {
        Self::open(&StoreUrl::parse(url)?, s3)
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

    /// A store of any other object_store (an in-memory one in tests), read with ranged GETs.
    pub fn of(object: Arc<dyn ObjectStore>) -> Self {
        Self {
            object,
            local: None,
            requests: None,
        }
    }

    pub fn object_store(&self) -> Arc<dyn ObjectStore> {
        Arc::clone(&self.object)
    }

    /// What a read costs here.
    pub fn read_cost(&self) -> ReadCost {
        match self.local {
            Some(_) => ReadCost::InPlace,
            None => ReadCost::RoundTrip,
        }
    }

    /// Bytes `span` of the object at `location`, read as this store reads best: in place
    /// through the file handle `kept` holds open (opened on first use), or with a ranged GET.
    pub(crate) async fn read(
        &self,
        kept: &Arc<local::OpenHandle>,
        location: &Path,
        span: Range<u64>,
    ) -> Result<Bytes> {
        if let Some(dir) = &self.local {
            return Ok(dir.read_through_handle(kept, location, &span)?);
        }
        let read = self
            .object
            .get_ranges(location, std::slice::from_ref(&span))
            .await?;
        Ok(read.into_iter().next().unwrap_or_default())
    }

    /// Requests made so far by kind, for a remote store.
    pub fn requests(&self) -> Option<&RequestCounts> {
        self.requests.as_deref()
    }
}

fn local_dir(dir: &std::path::Path) -> Result<Arc<local::LocalDir>> {
    std::fs::create_dir_all(dir).map_err(|source| EngineError::Io {
        what: format!("cannot create {}", dir.display()),
        source,
    })?;
    // A directory left empty by a delete goes too: vacuum and writers' journals (one
    // directory a run) would otherwise leave them behind.
    Ok(Arc::new(local::LocalDir::new(
        LocalFileSystem::new_with_prefix(dir)?.with_automatic_cleanup(true),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations() {
        let dir = |d: &str| StoreUrl::Dir(PathBuf::from(d));
        assert_eq!(StoreUrl::parse("data/x").unwrap(), dir("data/x"));
        assert_eq!(StoreUrl::parse("file:///srv/x").unwrap(), dir("/srv/x"));
        let s3 = |b: &str, p: &str| StoreUrl::S3 {
            bucket: b.into(),
            prefix: p.into(),
        };
        assert_eq!(StoreUrl::parse("s3://b").unwrap(), s3("b", ""));
        assert_eq!(StoreUrl::parse("s3://b/").unwrap(), s3("b", ""));
        assert_eq!(StoreUrl::parse("s3://b/a/c/").unwrap(), s3("b", "a/c"));
        assert_eq!(s3("b", "a/c").to_string(), "s3://b/a/c");
        assert!(StoreUrl::parse("s3:///x").is_err());
        let e = StoreUrl::parse("gs://b/x").unwrap_err().to_string();
        assert!(e.contains("'gs'"), "{e}");
        let input = StoreUrl::parse("s3://b/raw/*.csv").unwrap();
        let (root, key) = input.bucket_and_key().unwrap();
        assert_eq!((root, key), (s3("b", ""), "raw/*.csv"));
        assert!(dir("x").bucket_and_key().is_none());
    }
}
