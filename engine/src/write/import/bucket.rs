//! Import inputs in a bucket (`--values 's3://BUCKET/raw/*.csv.gz'`, `--stations
//! s3://BUCKET/stations.csv`), read where they are: an archive kept in object storage is
//! imported without a copy on local disk first. A file is
//! read as a stream (CSV) or by ranges (Parquet's footer and column chunks) through the same
//! S3 client as the dataset's store, from the import's reading threads (which block on the
//! client's requests), so memory is what a local file's reading takes.

use super::GLOB_CHARS;
use bytes::{Buf, Bytes};
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::reader::{ChunkReader, Length};
use futures::StreamExt;
use futures::stream::BoxStream;
use std::io::{self, Read};
use std::sync::Arc;
use tokio::runtime::Handle;

/// One object of a bucket, with what reading it needs.
pub(super) struct BucketObject {
    store: Arc<dyn ObjectStore>,
    location: ObjectPath,
    size: u64,
    runtime: Handle,
}

/// The objects of `store` whose keys match `pattern` (a key with `*`, `?` or `[...]`; `*` does
/// not cross a `/`), in key order, found by listing the pattern's literal prefix; or the
/// object `pattern` names, if it holds no pattern characters.
pub(super) fn find(
    store: &Arc<dyn ObjectStore>,
    pattern: &str,
    runtime: &Handle,
) -> Result<Vec<BucketObject>, String> {
    let Some(wild) = pattern.find(GLOB_CHARS) else {
        return Ok(vec![object(store, pattern, runtime)?]);
    };
    let matcher = glob::Pattern::new(pattern).map_err(|e| format!("bad pattern: {e}"))?;
    let options = glob::MatchOptions {
        require_literal_separator: true,
        ..glob::MatchOptions::new()
    };
    let prefix = pattern[..wild].rsplit_once('/').map(|(dir, _)| dir);
    let prefix = prefix.map(ObjectPath::from);
    // Only the matching keys are kept: a prefix may hold many more objects than the pattern.
    let mut found = runtime.block_on(async {
        let mut found = Vec::new();
        let mut listed = store.list(prefix.as_ref());
        while let Some(meta) = listed.next().await {
            let meta = meta.map_err(|e| format!("cannot list: {}", short(&e)))?;
            if matcher.matches_with(meta.location.as_ref(), options) {
                found.push(meta);
            }
        }
        Ok::<_, String>(found)
    })?;
    found.sort_by(|a, b| a.location.cmp(&b.location));
    Ok(found
        .into_iter()
        .map(|m| BucketObject {
            store: Arc::clone(store),
            location: m.location,
            size: m.size,
            runtime: runtime.clone(),
        })
        .collect())
}

/// The object `key` names in `store` (its size from a HEAD request).
pub(super) fn object(
    store: &Arc<dyn ObjectStore>,
    key: &str,
    runtime: &Handle,
) -> Result<BucketObject, String> {
    let location = ObjectPath::from(key);
    let meta = runtime
        .block_on(store.head(&location))
        .map_err(|e| format!("cannot open: {}", short(&e)))?;
    Ok(BucketObject {
        store: Arc::clone(store),
        location,
        size: meta.size,
        runtime: runtime.clone(),
    })
}

/// The store's error without the request URL and headers it may carry.
fn short(e: &datafusion::object_store::Error) -> String {
    match e {
        datafusion::object_store::Error::NotFound { .. } => "no such object".into(),
        other => other.to_string(),
    }
}

impl BucketObject {
    pub(super) fn size(&self) -> u64 {
        self.size
    }

    /// Its key in the bucket.
    pub(super) fn key(&self) -> &str {
        self.location.as_ref()
    }

    /// The object from byte `start` to its end, as a reader.
    pub(super) fn read_from(self: &Arc<Self>, start: u64) -> io::Result<ObjectRead> {
        let stream = if start >= self.size {
            futures::stream::empty().boxed()
        } else {
            let options = GetOptions {
                range: Some(GetRange::Bounded(start..self.size)),
                ..GetOptions::default()
            };
            self.runtime
                .block_on(self.store.get_opts(&self.location, options))
                .map_err(io::Error::other)?
                .into_stream()
        };
        Ok(ObjectRead {
            object: Arc::clone(self),
            stream,
            current: Bytes::new(),
        })
    }

    /// Bytes `start..start + length` (fewer at the object's end), in one ranged GET.
    pub(super) fn range(&self, start: u64, length: usize) -> io::Result<Bytes> {
        let end = start.saturating_add(length as u64).min(self.size);
        if start >= end {
            return Ok(Bytes::new());
        }
        self.runtime
            .block_on(self.store.get_range(&self.location, start..end))
            .map_err(io::Error::other)
    }
}

/// An object's bytes as a `Read`, request by request of the client's stream.
pub(super) struct ObjectRead {
    object: Arc<BucketObject>,
    stream: BoxStream<'static, datafusion::object_store::Result<Bytes>>,
    current: Bytes,
}

impl Read for ObjectRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.object.runtime.block_on(self.stream.next()) {
                None => return Ok(0),
                Some(Ok(bytes)) => self.current = bytes,
                Some(Err(e)) => return Err(io::Error::other(e)),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current.advance(n);
        Ok(n)
    }
}

/// A Parquet file in a bucket for the parquet crate's reader: its footer and each column
/// chunk it reads are ranged GETs.
pub(super) struct ObjectChunks(pub(super) Arc<BucketObject>);

impl Length for ObjectChunks {
    fn len(&self) -> u64 {
        self.0.size
    }
}

impl ChunkReader for ObjectChunks {
    type T = ObjectRead;

    fn get_read(&self, start: u64) -> Result<ObjectRead, ParquetError> {
        self.0
            .read_from(start)
            .map_err(|e| ParquetError::External(Box::new(e)))
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes, ParquetError> {
        self.0
            .range(start, length)
            .map_err(|e| ParquetError::External(Box::new(e)))
    }
}
