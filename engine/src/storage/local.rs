//! A local directory as an object store whose ranged reads run on the calling task.
//!
//! object_store's `LocalFileSystem` sends every read to tokio's blocking pool. A 10-year
//! download reads 120 month files of a few tens of KB each, mostly from the page cache; each
//! hand-off to the pool and back costs two thread wake-ups, and on this virtual machine those
//! were the largest item in `perf` for a Parquet download (a third of its CPU time in context
//! switches). Reading the ranges in place costs microseconds. The price: a read that misses the
//! page cache holds a runtime worker for one disk read.
//!
//! Files read are kept open (up to `KEPT_FILES` in slots of their own, `OPEN_FILES` by path): a
//! published dataset's files never change (each import writes new names), and opening 120
//! files per download was a tenth of a Parquet download's CPU time (path lookup in the kernel).
//! Everything else is `LocalFileSystem`.

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::object_store::local::LocalFileSystem;
use datafusion::object_store::path::Path;
use datafusion::object_store::{
    self, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use rustix::buffer::spare_capacity;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::ops::Range;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Files kept open in their own slots ([`OpenHandle`]) at most; beyond, the one kept longest is
/// closed.
const KEPT_FILES: usize = 512;

/// Files kept open by path at most (reads through the object store interface, such as
/// DataFusion's scans of sorted answers); when full, the set is emptied and refilled by use.
const OPEN_FILES: usize = 128;

#[derive(Debug)]
pub(crate) struct LocalDir {
    fs: LocalFileSystem,
    open: Arc<Mutex<HashMap<Path, Arc<File>>>>,
    /// The slots holding a file open, the longest held first.
    kept: Mutex<VecDeque<Arc<OpenHandle>>>,
}

/// The slot in which a file that is read often (a month file of the dataset) keeps its handle
/// while it is open. Its reader finds the handle there rather than by the file's path: hashing
/// and comparing the paths of 120 month files was nearly 4 % of a made Parquet download's CPU time
/// with the caches cold (`perf`, requests from curl).
#[derive(Debug, Default)]
pub(crate) struct OpenHandle(Mutex<Option<Arc<File>>>);

impl OpenHandle {
    fn slot(&self) -> MutexGuard<'_, Option<Arc<File>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl LocalDir {
    pub(crate) fn new(fs: LocalFileSystem) -> Self {
        Self {
            fs,
            open: Arc::default(),
            kept: Mutex::default(),
        }
    }

    fn open(&self, location: &Path) -> object_store::Result<File> {
        let path = self.fs.path_to_filesystem(location)?;
        open(&path).map_err(|e| read_error(&path, e))
    }

    fn file(&self, location: &Path) -> object_store::Result<Arc<File>> {
        if let Some(f) = self.open.lock().ok().and_then(|m| m.get(location).cloned()) {
            return Ok(f);
        }
        let file = Arc::new(self.open(location)?);
        if let Ok(mut open) = self.open.lock() {
            if open.len() >= OPEN_FILES {
                open.clear();
            }
            open.insert(location.clone(), Arc::clone(&file));
        }
        Ok(file)
    }

    /// The file at `location`, open in `kept`.
    fn handle_file(
        &self,
        kept: &Arc<OpenHandle>,
        location: &Path,
    ) -> object_store::Result<Arc<File>> {
        if let Some(file) = kept.slot().as_ref() {
            return Ok(Arc::clone(file));
        }
        let file = Arc::new(self.open(location)?);
        *kept.slot() = Some(Arc::clone(&file));
        let mut held = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        held.push_back(Arc::clone(kept));
        if held.len() > KEPT_FILES
            && let Some(oldest) = held.pop_front()
        {
            oldest.slot().take();
        }
        Ok(file)
    }

    /// Bytes `range` of the file at `location`, whose handle is kept in `kept`.
    pub(crate) fn read_through_handle(
        &self,
        kept: &Arc<OpenHandle>,
        location: &Path,
        range: &Range<u64>,
    ) -> object_store::Result<Bytes> {
        let file = self.handle_file(kept, location)?;
        read_range(&file, range).map_err(|e| read_failed(location, e))
    }
}

impl fmt::Display for LocalDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LocalDir({})", self.fs)
    }
}

fn read_error(path: &std::path::Path, e: std::io::Error) -> object_store::Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        object_store::Error::NotFound {
            path: path.display().to_string(),
            source: Box::new(e),
        }
    } else {
        object_store::Error::Generic {
            store: "LocalDir",
            source: Box::new(e),
        }
    }
}

/// A read of a file that was opened.
/// A read of a file that failed, with the I/O error as its source (a short file is damage, a
/// failing disk is not: the error's kind tells them apart, see `crate::error::kind_of`).
#[derive(Debug, thiserror::Error)]
#[error("{location}: {source}")]
struct ReadFailed {
    location: String,
    #[source]
    source: std::io::Error,
}

fn read_failed(location: &Path, source: std::io::Error) -> object_store::Error {
    object_store::Error::Generic {
        store: "LocalDir",
        source: Box::new(ReadFailed {
            location: location.to_string(),
            source,
        }),
    }
}

/// `path` opened for reading without its access time kept: the kernel's check whether to
/// update it (`touch_atime`) ran on every read, 1.5 % of a made Parquet download. Only a file's
/// owner may ask for that; for anyone else the file opens as usual.
fn open(path: &std::path::Path) -> std::io::Result<File> {
    let flags = rustix::fs::OFlags::NOATIME.bits() as i32;
    match OpenOptions::new().read(true).custom_flags(flags).open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => File::open(path),
        opened => opened,
    }
}

/// Bytes `range` of `file`, read into a buffer that is not zeroed first: zeroing it
/// (`vec![0; n]`) was 3 % of a made Parquet download in `perf`, and leaving it out saved 6-7 %
/// of that download's CPU time (the history of `benches/RESULTS.md`).
fn read_range(file: &File, range: &Range<u64>) -> std::io::Result<Bytes> {
    let len = range.end.saturating_sub(range.start) as usize;
    let mut buf = Vec::with_capacity(len);
    while buf.len() < len {
        let at = range.start + buf.len() as u64;
        if rustix::io::pread(file, spare_capacity(&mut buf), at)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
    // The capacity may exceed `len`, and a read may fill all of it.
    buf.truncate(len);
    Ok(Bytes::from(buf))
}

#[async_trait]
impl ObjectStore for LocalDir {
    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        let file = self.file(location)?;
        ranges
            .iter()
            .map(|r| read_range(&file, r).map_err(|e| read_failed(location, e)))
            .collect()
    }

    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.fs.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.fs.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.fs.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        // A deleted file is no longer served from an open handle.
        let open = Arc::clone(&self.open);
        let locations = locations
            .inspect(move |l| {
                if let (Ok(l), Ok(mut open)) = (l, open.lock()) {
                    open.remove(l);
                }
            })
            .boxed();
        self.fs.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.fs.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.fs.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.fs.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.fs.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        self.fs.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::object_store::ObjectStoreExt;

    #[tokio::test]
    #[allow(clippy::single_range_in_vec_init)] // one range per read is the point
    async fn reads_ranges_in_place_and_reports_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"0123456789").unwrap();
        let store = LocalDir::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let got = store
            .get_ranges(&Path::from("f"), &[2..4, 0..1, 9..10, 5..5, 0..10])
            .await
            .unwrap();
        assert_eq!(
            got,
            vec![
                &b"23"[..],
                &b"0"[..],
                &b"9"[..],
                &b""[..],
                &b"0123456789"[..]
            ]
        );
        assert!(store.get_ranges(&Path::from("f"), &[8..12]).await.is_err());
        assert!(matches!(
            store.get_ranges(&Path::from("missing"), &[0..1]).await,
            Err(object_store::Error::NotFound { .. })
        ));
        // Everything else is LocalFileSystem's.
        store
            .put(&Path::from("g"), b"x".to_vec().into())
            .await
            .unwrap();
        assert_eq!(store.head(&Path::from("g")).await.unwrap().size, 1);
    }

    /// Reads through kept handles: the handle stays in its slot, the slots holding one are
    /// capped (the longest held is closed), and a missing file is NotFound.
    #[test]
    fn kept_handles_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"0123456789").unwrap();
        let store = LocalDir::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let slots: Vec<Arc<OpenHandle>> = (0..KEPT_FILES + 2).map(|_| Arc::default()).collect();
        let f = Path::from("f");
        assert_eq!(
            store.read_through_handle(&slots[0], &f, &(2..5)).unwrap(),
            &b"234"[..]
        );
        assert!(slots[0].slot().is_some());
        for slot in &slots[1..] {
            assert_eq!(
                store.read_through_handle(slot, &f, &(9..10)).unwrap(),
                &b"9"[..]
            );
        }
        let open = slots.iter().filter(|s| s.slot().is_some()).count();
        assert_eq!(open, KEPT_FILES);
        assert!(slots[0].slot().is_none() && slots[1].slot().is_none());
        // A closed slot opens its file again.
        assert_eq!(
            store.read_through_handle(&slots[0], &f, &(0..1)).unwrap(),
            &b"0"[..]
        );
        assert!(store.read_through_handle(&slots[0], &f, &(8..12)).is_err());
        assert!(matches!(
            store.read_through_handle(&Arc::default(), &Path::from("missing"), &(0..1)),
            Err(object_store::Error::NotFound { .. })
        ));
    }
}
