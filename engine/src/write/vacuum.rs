//! `hydro vacuum`: removes what no version within the grace period references.
//!
//! A publish deletes nothing: files of earlier versions stay readable for the downloads and
//! servers still on them, and for answers `asOf` them. Vacuum keeps the current version, every
//! version superseded less than the grace period ago (a version is superseded when the next
//! one was created) and the newest [`Retention::versions`] whatever their age, and
//! deletes value files, rollup files, catalog tables and version records none of them names.
//! It holds the dataset's write lock meanwhile, so it never deletes the files of an import
//! under way.
//!
//! It does not list the store: what it deletes is what the dropped versions' files tables name
//! and no kept version's does (compared a version and a station at a time, so memory holds the
//! kept versions' tables and two others, and a station's files), plus what writers that
//! crashed left under the stations they noted in the journal (`write::journal`), plus the
//! catalog tables and version records (a few objects a version, listed). Objects left by
//! writers before there was a journal are not found.

use crate::dataset::layout;
use crate::dataset::manifest::{Manifest, ValueFile};
use crate::dataset::station_files::FilesByStation;
use crate::dataset::{catalog_file, files_for_writer, read_manifest, rollups};
use crate::error::{EngineError, Result};
use crate::model::ids::StationId;
use crate::write::journal;
use crate::write::writer::{release_write_lock, take_write_lock};
use chrono::{DateTime, Utc};
use datafusion::object_store::path::Path;
use datafusion::object_store::{self, ObjectStore, ObjectStoreExt};
use futures::{StreamExt, TryStreamExt};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Objects deleted at once.
const DELETES_AT_ONCE: usize = 16;

/// What a vacuum did.
#[derive(Debug)]
pub struct Vacuumed {
    /// Generations whose files were kept.
    pub kept_versions: Vec<u64>,
    pub deleted_files: u64,
    pub deleted_bytes: u64,
}

/// Which versions a vacuum keeps: a version goes only when both let it go.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// Versions superseded less long ago are kept.
    pub grace: chrono::Duration,
    /// The newest this many versions (the current one among them) are kept, however old.
    pub versions: usize,
}

/// Deletes what no version `retention` keeps references.
pub async fn vacuum(store: &Arc<dyn ObjectStore>, retention: Retention) -> Result<Vacuumed> {
    take_write_lock(store.as_ref()).await?;
    let done = sweep(store, retention).await;
    release_write_lock(store.as_ref()).await;
    done
}

async fn sweep(store: &Arc<dyn ObjectStore>, retention: Retention) -> Result<Vacuumed> {
    let current = read_manifest(store.as_ref())
        .await?
        .ok_or_else(|| EngineError::InvalidQuery("no dataset is published there".into()))?;
    let versions = version_records(store).await?;
    let kept = kept_versions(&current, &versions, retention);
    let dropped: Vec<Manifest> = versions
        .into_iter()
        .filter(|v| !kept.iter().any(|k| k.generation == v.generation))
        .collect();
    let kept_files = files_tables(store, &kept).await?;
    let kept_rollups: HashSet<String> = rollup_files(store, &kept).await?.into_keys().collect();
    let mut deleted = Deleted::default();

    // Value files the dropped versions name and no kept one does, a version (oldest first)
    // and a batch of stations at a time. What the dropped version before names was dealt
    // with then: an object no version names any more is never named again, so one named by
    // this version and an earlier one is named by every version between them.
    let mut before: Option<FilesByStation> = None;
    for version in &dropped {
        let table = files_table(store, version).await?;
        for batch in table.batches(table.stations().iter().cloned()) {
            let mut keep = objects_of(&kept_files, &batch).await?;
            if let Some(before) = &before {
                keep.extend(objects_of(std::slice::from_ref(before), &batch).await?);
            }
            let gone: HashMap<String, u64> = table
                .files_of(&batch)
                .await?
                .into_iter()
                .flat_map(|(_, files)| files)
                .map(|file| (file.object(), file.size))
                .filter(|(object, _)| !keep.contains(object))
                .collect();
            deleted.add(delete_all(store, gone).await?);
        }
        before = Some(table);
    }
    drop(before);
    let mut gone = rollup_files(store, &dropped).await?;
    gone.retain(|path, _| !kept_rollups.contains(path));
    deleted.add(delete_all(store, gone).await?);

    // What writers that crashed left, under the stations they noted before writing there.
    for (station, entries) in journal::left_behind(store).await? {
        let keep = match station.parse::<StationId>() {
            Ok(id) => objects_of(&kept_files, &[id]).await?,
            Err(_) => HashSet::new(),
        };
        let mut gone = HashMap::new();
        for prefix in journal::station_prefixes(&station) {
            let listed: Vec<_> = store.list(Some(&prefix)).try_collect().await?;
            for meta in listed {
                let object = meta.location.to_string();
                if !keep.contains(&object) && !kept_rollups.contains(&object) {
                    gone.insert(object, meta.size);
                }
            }
        }
        deleted.add(delete_all(store, gone).await?);
        let entries = entries.into_iter().map(|e| (e.to_string(), 0));
        delete_all(store, entries).await?;
    }

    // Catalog tables and version records: a few objects a version, listed whole. Last, so
    // that a vacuum cut short leaves the records and tables the next one reads.
    let mut referenced: HashSet<String> = HashSet::new();
    for v in &kept {
        referenced.insert(layout::version_path(v.generation));
        referenced.extend(
            [
                &v.catalog.stations,
                &v.catalog.parameters,
                &v.catalog.characteristics,
                &v.catalog.files,
            ]
            .into_iter()
            .chain(&v.catalog.rollups)
            .chain(&v.catalog.newest)
            .cloned(),
        );
    }
    for prefix in ["catalog", "versions"] {
        let listed: Vec<_> = store.list(Some(&Path::from(prefix))).try_collect().await?;
        let gone = listed
            .into_iter()
            .filter(|meta| !referenced.contains(meta.location.as_ref()))
            .map(|meta| (meta.location.to_string(), meta.size));
        deleted.add(delete_all(store, gone).await?);
    }
    let mut kept_versions: Vec<u64> = kept.iter().map(|v| v.generation).collect();
    kept_versions.sort_unstable();
    Ok(Vacuumed {
        kept_versions,
        deleted_files: deleted.files,
        deleted_bytes: deleted.bytes,
    })
}

/// The records of published versions, oldest first.
async fn version_records(store: &dyn ObjectStore) -> Result<Vec<Manifest>> {
    let mut versions: Vec<Manifest> = Vec::new();
    let listed: Vec<_> = store
        .list(Some(&Path::from("versions")))
        .try_collect()
        .await?;
    for meta in &listed {
        let bytes = store.get(&meta.location).await?.bytes().await?;
        match serde_json::from_slice::<Manifest>(&bytes) {
            Ok(m) => versions.push(m),
            // A record of another layout version names nothing this one can read: kept.
            Err(e) => tracing::warn!("vacuum: {} is not a version record ({e})", meta.location),
        }
    }
    versions.sort_by_key(|m| m.generation);
    Ok(versions)
}

/// The versions `retention` keeps: the current one, those superseded within the grace
/// period, and the newest ones the count keeps.
fn kept_versions(current: &Manifest, versions: &[Manifest], retention: Retention) -> Vec<Manifest> {
    let now = Utc::now();
    let created =
        |m: &Manifest| DateTime::parse_from_rfc3339(&m.created).map(|t| t.with_timezone(&Utc));
    let mut kept = vec![current.clone()];
    let earlier = versions
        .iter()
        .filter(|v| v.generation < current.generation)
        .count();
    // The newest earlier ones the count keeps (the current one is one of the count).
    let kept_by_count = earlier.saturating_sub(retention.versions.saturating_sub(1));
    for (i, v) in versions.iter().enumerate() {
        if v.generation >= current.generation {
            continue;
        }
        // Superseded when the next version was created; without a readable date, kept.
        let superseded = versions.get(i + 1).map_or(Ok(now), &created);
        let young = superseded.is_err() || superseded.is_ok_and(|t| now - t < retention.grace);
        if young || i >= kept_by_count {
            kept.push(v.clone());
        }
    }
    kept
}

/// The files tables of `versions`, each read by station.
async fn files_tables(
    store: &Arc<dyn ObjectStore>,
    versions: &[Manifest],
) -> Result<Vec<FilesByStation>> {
    let mut tables = Vec::with_capacity(versions.len());
    for v in versions {
        tables.push(files_table(store, v).await?);
    }
    Ok(tables)
}

/// The version's files table, indexed by station for a pass over them (none of it held; a
/// batch of stations' files read and decoded when asked for).
async fn files_table(store: &Arc<dyn ObjectStore>, version: &Manifest) -> Result<FilesByStation> {
    files_for_writer(Arc::clone(store), version.catalog.files.clone()).await
}

/// The objects that hold the values of `stations` in any of `tables` (an object holds one
/// station's).
async fn objects_of(tables: &[FilesByStation], stations: &[StationId]) -> Result<HashSet<String>> {
    let mut objects = HashSet::new();
    for table in tables {
        for (_, files) in table.files_of(stations).await? {
            objects.extend(files.iter().map(ValueFile::object));
        }
    }
    Ok(objects)
}

/// The rollup files `versions` name, with their sizes: a row a station each.
async fn rollup_files(
    store: &dyn ObjectStore,
    versions: &[Manifest],
) -> Result<HashMap<String, u64>> {
    let mut files = HashMap::new();
    let mut texts = catalog_file::Interner::default();
    for path in versions.iter().filter_map(|v| v.catalog.rollups.as_ref()) {
        let table = store.get(&Path::from(path.as_str())).await?.bytes().await?;
        for f in rollups::decode_table(table, &mut texts)? {
            files.insert(f.path(), f.size);
        }
    }
    Ok(files)
}

/// Objects deleted, and their bytes.
#[derive(Default)]
struct Deleted {
    files: u64,
    bytes: u64,
}

impl Deleted {
    fn add(&mut self, other: Deleted) {
        self.files += other.files;
        self.bytes += other.bytes;
    }
}

/// Deletes `objects` (path and size), several at once. One already gone (a vacuum cut short
/// deleted it) is not counted where the store says so (a local directory; S3 does not).
async fn delete_all(
    store: &dyn ObjectStore,
    objects: impl IntoIterator<Item = (String, u64)>,
) -> Result<Deleted> {
    futures::stream::iter(objects)
        .map(|(path, size)| async move {
            match store.delete(&Path::from(path)).await {
                Ok(()) => Ok(Deleted {
                    files: 1,
                    bytes: size,
                }),
                Err(object_store::Error::NotFound { .. }) => Ok(Deleted::default()),
                Err(e) => Err(EngineError::from(e)),
            }
        })
        .buffer_unordered(DELETES_AT_ONCE)
        .try_fold(Deleted::default(), |mut all, one| async move {
            all.add(one);
            Ok(all)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::Published;
    use crate::dataset::manifest::PublishKind;
    use crate::model::chunk::SeriesChunk;
    use crate::model::month::Month;
    use crate::write::generate::{GenerateOptions, generate};
    use crate::write::writer::{DatasetWriter, EncodedMonth, WRITE_LOCK, encode_month};
    use datafusion::object_store::memory::InMemory;
    use std::sync::Arc;

    async fn listed(store: &dyn ObjectStore, prefix: &str) -> Vec<String> {
        let mut names: Vec<String> = store
            .list(Some(&Path::from(prefix)))
            .map_ok(|m| m.location.to_string())
            .try_collect()
            .await
            .unwrap();
        names.sort();
        names
    }

    /// The value files a version's table names.
    async fn named_by(store: &Arc<dyn ObjectStore>, version: &Manifest) -> Vec<String> {
        let tables = files_tables(store, std::slice::from_ref(version))
            .await
            .unwrap();
        let stations = tables[0].stations().to_vec();
        let mut names: Vec<String> = objects_of(&tables, &stations)
            .await
            .unwrap()
            .into_iter()
            .collect();
        names.sort();
        names
    }

    /// A dataset of `stations` stations and a year of hourly values.
    fn small(stations: usize) -> GenerateOptions {
        GenerateOptions {
            stations,
            years: 1,
            interval_minutes: 60,
            ..GenerateOptions::default()
        }
    }

    /// A month of one value, as an append writes it.
    fn one_value_month() -> EncodedMonth {
        let chunk = SeriesChunk {
            parameter: "discharge-15min".parse().unwrap(),
            timestamps: vec![1_893_456_000_000_000],
            values: vec![1.5],
            quality: vec!["good"],
        };
        encode_month(&mut [chunk]).unwrap()
    }

    /// Without listing the store: a writer that crashed leaves files under a station it noted,
    /// and vacuum deletes them and its journal entries; the files of a dropped version go
    /// where no kept version names them; kept versions' files all stay.
    #[tokio::test]
    async fn deletes_what_crashed_writers_and_dropped_versions_left() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let opts = small(3);
        let first = generate(Arc::clone(&store), &opts, |_, _| {})
            .await
            .unwrap();
        let station = &named_by(&store, &first).await[0];
        let station: StationId = station
            .split('/')
            .nth(1)
            .and_then(|s| s.strip_prefix("station="))
            .unwrap()
            .parse()
            .unwrap();

        // A writer that crashed after writing a month: its lock is taken over.
        let crashed = DatasetWriter::begin(Arc::clone(&store), PublishKind::Append)
            .await
            .unwrap();
        let month: Month = "2030-01".parse().unwrap();
        let encoded = one_value_month();
        crashed.write_month(&station, month, encoded).await.unwrap();
        let left = layout::values_path(&station, month, 2);
        drop(crashed);
        store.delete(&Path::from(WRITE_LOCK)).await.unwrap();
        assert!(listed(store.as_ref(), "values").await.contains(&left));
        assert_eq!(listed(store.as_ref(), "journal").await.len(), 1);

        let retention = Retention {
            grace: chrono::Duration::zero(),
            versions: 1,
        };
        let done = vacuum(&store, retention).await.unwrap();
        assert_eq!(done.kept_versions, [1]);
        assert!(!listed(store.as_ref(), "values").await.contains(&left));
        assert!(listed(store.as_ref(), "journal").await.is_empty());
        assert_eq!(
            listed(store.as_ref(), "values").await,
            named_by(&store, &first).await
        );

        // A second version of every station: the first one's files go, its own stay.
        let second = generate(Arc::clone(&store), &opts, |_, _| {})
            .await
            .unwrap();
        assert!(listed(store.as_ref(), "journal").await.is_empty(), "closed");
        let done = vacuum(&store, retention).await.unwrap();
        assert_eq!(done.kept_versions, [2]);
        assert!(done.deleted_files > 0);
        assert_eq!(
            listed(store.as_ref(), "values").await,
            named_by(&store, &second).await
        );
        let rollups = listed(store.as_ref(), "rollups").await;
        assert!(!rollups.is_empty());
        assert!(
            rollups.iter().all(|r| r.ends_with("-g2.parquet")),
            "{rollups:?}"
        );
        assert_eq!(
            listed(store.as_ref(), "versions").await,
            ["versions/2.json"]
        );
    }

    /// Two dropped versions name the same files (the second carried them over): each is
    /// deleted and counted once, and what the versions' tables name is all that goes.
    #[tokio::test]
    async fn files_two_dropped_versions_name_are_deleted_once() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let opts = small(2);
        generate(Arc::clone(&store), &opts, |_, _| {})
            .await
            .unwrap();
        // An append: one month more, every other file carried.
        let (published, files) = crate::dataset::read_published(&store)
            .await
            .unwrap()
            .unwrap();
        let writer = DatasetWriter::begin(Arc::clone(&store), PublishKind::Append)
            .await
            .unwrap();
        let station = files.stations()[0].clone();
        let month: Month = "2030-01".parse().unwrap();
        let encoded = one_value_month();
        writer.write_month(&station, month, encoded).await.unwrap();
        for (_, files) in files.files_of(files.stations()).await.unwrap() {
            for file in files {
                writer.carry(file).await.unwrap();
            }
        }
        let Published {
            stations,
            parameters,
            characteristics,
            ..
        } = published;
        writer
            .publish(&stations, parameters, &characteristics)
            .await
            .unwrap();
        generate(Arc::clone(&store), &opts, |_, _| {})
            .await
            .unwrap();

        let all = |store: Arc<dyn ObjectStore>| async move { listed(store.as_ref(), "").await };
        let before = all(Arc::clone(&store)).await;
        let retention = Retention {
            grace: chrono::Duration::zero(),
            versions: 1,
        };
        let done = vacuum(&store, retention).await.unwrap();
        assert_eq!(done.kept_versions, [3]);
        let after = all(Arc::clone(&store)).await;
        assert_eq!(done.deleted_files as usize, before.len() - after.len());
        assert!(
            after
                .iter()
                .all(|o| !o.contains("-g1.") && !o.contains("-g2.") && !o.contains("-1.")),
            "{after:?}"
        );
    }
}
