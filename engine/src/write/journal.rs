//! Where a writer writes, noted before it writes there: what a writer that crashed left
//! behind is then found by listing the stations it wrote to, not the whole store.
//!
//! A writer's objects lie under stations' prefixes (`values/station=<id>/`,
//! `rollups/station=<id>/`) and in `catalog/`. Before its first object under a station's
//! prefixes, a writer puts an empty entry `journal/<run>/station=<id>` and waits for it to be
//! stored. It deletes its entries once it has published, or deleted what it wrote after a
//! failure. Entries that remain name every station a writer that did neither may have left
//! objects in, and `vacuum` (which holds the write lock, so no writer runs) lists just those
//! stations' prefixes. `catalog/` holds a few tables a version and is listed whole.
//!
//! A generate of 10 000 stations puts 10 000 entries beside its 2.4 M value files; an append
//! of one value puts one.

use crate::storage::delete_if_present;
use async_trait::async_trait;
use datafusion::object_store::path::Path;
use datafusion::object_store::{
    self, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::OnceCell;

/// The prefix of every writer's entries.
pub(crate) const JOURNAL: &str = "journal";

/// The top-level folders whose objects lie under a station's prefix.
const STATION_FOLDERS: [&str; 2] = ["values", "rollups"];

/// Entries put or deleted at once.
const AT_ONCE: usize = 16;

/// The station whose prefix `location` lies under, if any.
fn station_of(location: &Path) -> Option<&str> {
    let mut parts = location.as_ref().split('/');
    let folder = parts.next()?;
    let station = parts.next()?.strip_prefix("station=")?;
    (STATION_FOLDERS.contains(&folder) && parts.next().is_some()).then_some(station)
}

/// The prefixes a station's objects lie under.
pub(crate) fn station_prefixes(station: &str) -> [Path; 2] {
    STATION_FOLDERS.map(|folder| Path::from(format!("{folder}/station={station}")))
}

/// A writer's store: `inner`, with the station of every object put under a station's prefix
/// noted in the journal first (once a station).
pub(crate) struct Journaled {
    inner: Arc<dyn ObjectStore>,
    /// `journal/<run>`: this writer's entries.
    run: String,
    noted: Mutex<HashMap<String, Arc<OnceCell<()>>>>,
}

impl Journaled {
    /// The store of a writer of `generation`. The run names the process and the time, since a
    /// writer that took over a stale lock writes the same generation as the one that crashed,
    /// and must not delete that one's entries with its own.
    pub(crate) fn new(inner: Arc<dyn ObjectStore>, generation: u64) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let run = format!("{JOURNAL}/g{generation}-{}-{nanos}", std::process::id());
        Self {
            inner,
            run,
            noted: Mutex::default(),
        }
    }

    fn entry(&self, station: &str) -> Path {
        Path::from(format!("{}/station={station}", self.run))
    }

    /// Notes the station `location` lies under (if any), once, before anything is put there.
    async fn note(&self, location: &Path) -> object_store::Result<()> {
        let Some(station) = station_of(location) else {
            return Ok(());
        };
        let once = {
            let mut noted = self.noted.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(noted.entry(station.to_owned()).or_default())
        };
        once.get_or_try_init(|| async {
            self.inner
                .put(&self.entry(station), PutPayload::default())
                .await
                .map(drop)
        })
        .await
        .map(drop)
    }

    /// The stations this writer noted (those it may have put objects under).
    pub(crate) fn stations(&self) -> Vec<String> {
        let noted = self.noted.lock().unwrap_or_else(PoisonError::into_inner);
        noted
            .iter()
            .filter(|(_, once)| once.initialized())
            .map(|(station, _)| station.clone())
            .collect()
    }

    /// Deletes this writer's entries: it published, or deleted what it wrote. Best effort: an
    /// entry left costs a later vacuum a listing of that station.
    pub(crate) async fn close(&self) {
        let entries = self.stations().into_iter().map(|s| self.entry(&s));
        let inner = self.inner.as_ref();
        futures::stream::iter(entries)
            .for_each_concurrent(AT_ONCE, |entry| async move {
                if let Err(e) = delete_if_present(inner, entry.as_ref()).await {
                    tracing::warn!("cannot delete {entry}: {e}");
                }
            })
            .await;
    }
}

/// What writers that neither published nor cleaned up left in the journal: the stations they
/// noted, each with its entries (several when several such writers noted it).
pub(crate) async fn left_behind(
    store: &dyn ObjectStore,
) -> object_store::Result<BTreeMap<String, Vec<Path>>> {
    let listed: Vec<ObjectMeta> = store.list(Some(&Path::from(JOURNAL))).try_collect().await?;
    let mut stations: BTreeMap<String, Vec<Path>> = BTreeMap::new();
    for meta in listed {
        let name = meta.location.filename().unwrap_or_default();
        match name.strip_prefix("station=") {
            Some(station) if !station.is_empty() => {
                let station = station.to_owned();
                stations.entry(station).or_default().push(meta.location);
            }
            _ => tracing::warn!("{}: not a journal entry; left alone", meta.location),
        }
    }
    Ok(stations)
}

impl fmt::Debug for Journaled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Journaled")
            .field("inner", &self.inner)
            .field("run", &self.run)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for Journaled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

#[async_trait]
impl ObjectStore for Journaled {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.note(location).await?;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.note(location).await?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.note(to).await?;
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        self.note(to).await?;
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::object_store::local::LocalFileSystem;
    use datafusion::object_store::memory::InMemory;

    fn names(store: &InMemory, prefix: &str) -> Vec<String> {
        futures::executor::block_on(
            store
                .list(Some(&Path::from(prefix)))
                .map_ok(|m| m.location.to_string())
                .try_collect::<Vec<_>>(),
        )
        .unwrap()
    }

    /// Objects under a station's prefixes are noted once per station, before they are put;
    /// other objects are not noted; closing deletes the writer's entries only.
    #[tokio::test]
    async fn notes_each_station_once_and_closes_its_own_entries() {
        let inner = Arc::new(InMemory::new());
        let other = Journaled::new(inner.clone(), 2);
        other
            .put(&Path::from("values/station=b/x.parquet"), "x".into())
            .await
            .unwrap();
        let store = Journaled::new(inner.clone(), 2);
        for path in [
            "values/station=a/2015-01-g2.parquet",
            "values/station=a/2015-02-g2.parquet",
            "rollups/station=a/part-2.parquet",
            "rollups/station=b/part-2.parquet",
            "catalog/files-2.parquet",
            "values/station=c",
        ] {
            store.put(&Path::from(path), "x".into()).await.unwrap();
        }
        let mut stations = store.stations();
        stations.sort();
        assert_eq!(stations, ["a", "b"]);
        assert_eq!(
            names(&inner, JOURNAL).len(),
            3,
            "{:?}",
            names(&inner, JOURNAL)
        );
        let left = left_behind(inner.as_ref()).await.unwrap();
        assert_eq!(left.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(left["b"].len(), 2, "two writers noted b");

        store.close().await;
        let left = left_behind(inner.as_ref()).await.unwrap();
        assert_eq!(left.keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(left["b"][0].as_ref(), other.entry("b").as_ref());
    }

    /// Objects under `journal/` that are not a station's entry are left alone and name no
    /// station.
    #[tokio::test]
    async fn objects_that_are_not_entries_name_no_station() {
        let store = InMemory::new();
        for path in [
            "journal/g1-1-1/station=a",
            "journal/g1-1-1/notes.txt",
            "journal/station=",
        ] {
            store.put(&Path::from(path), "x".into()).await.unwrap();
        }
        let left = left_behind(&store).await.unwrap();
        assert_eq!(left.keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(names(&store, JOURNAL).len(), 3, "nothing deleted");
    }

    /// A station is noted before its first object is put: when the entry cannot be stored
    /// (here `journal` is a file, so no entry can go under it), the object is not written.
    #[tokio::test]
    async fn nothing_is_put_where_the_entry_was_not_stored() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(JOURNAL), b"").unwrap();
        let inner = Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let store = Journaled::new(inner.clone(), 1);
        let file = Path::from("values/station=a/2015-01-g1.parquet");
        assert!(store.put(&file, "x".into()).await.is_err());
        assert!(inner.head(&file).await.is_err(), "not written");
        assert!(store.stations().is_empty());
        store
            .put(&Path::from("catalog/x"), "x".into())
            .await
            .unwrap();
    }
}
