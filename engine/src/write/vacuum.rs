//! `hydro vacuum`: removes what no version within the grace period references.
//!
//! A publish deletes nothing: files of earlier versions stay readable for the downloads and
//! servers still on them, and for answers `asOf` them. Vacuum keeps the current version, every
//! version superseded less than the grace period ago (a version is superseded when the next
//! one was created) and the newest [`Retention::versions`] whatever their age, and
//! deletes value files, rollup files, catalog tables and version records none of them names. It holds the
//! dataset's write lock meanwhile, so it never deletes the files of an import under way.

use crate::dataset::layout::{self, MANIFEST};
use crate::dataset::manifest::Manifest;
use crate::dataset::{catalog_file, files_table, read_manifest, rollups};
use crate::error::{EngineError, Result};
use crate::write::writer::{WRITE_LOCK, release_write_lock, take_write_lock};
use chrono::{DateTime, Utc};
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use futures::TryStreamExt;
use std::collections::HashSet;

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
pub async fn vacuum(store: &dyn ObjectStore, retention: Retention) -> Result<Vacuumed> {
    take_write_lock(store).await?;
    let done = sweep(store, retention).await;
    release_write_lock(store).await;
    done
}

async fn sweep(store: &dyn ObjectStore, retention: Retention) -> Result<Vacuumed> {
    let grace = retention.grace;
    let current = read_manifest(store)
        .await?
        .ok_or_else(|| EngineError::InvalidQuery("no dataset is published there".into()))?;
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
        let young = superseded.is_err() || superseded.is_ok_and(|t| now - t < grace);
        if young || i >= kept_by_count {
            kept.push(v.clone());
        }
    }
    let mut referenced: HashSet<String> = [MANIFEST.to_owned(), WRITE_LOCK.to_owned()].into();
    for v in &kept {
        referenced.insert(layout::version_path(v.generation));
        for table in [
            &v.catalog.stations,
            &v.catalog.parameters,
            &v.catalog.characteristics,
            &v.catalog.files,
        ] {
            referenced.insert(table.clone());
        }
        let table = store
            .get(&Path::from(v.catalog.files.as_str()))
            .await?
            .bytes()
            .await?;
        let mut texts = catalog_file::Interner::default();
        for f in files_table::decode_files(table, &mut texts)? {
            referenced.insert(f.object());
        }
        if let Some(path) = &v.catalog.rollups {
            referenced.insert(path.clone());
            let table = store.get(&Path::from(path.as_str())).await?.bytes().await?;
            for f in rollups::decode_table(table, &mut texts)? {
                referenced.insert(f.path());
            }
        }
    }
    let mut deleted_files = 0;
    let mut deleted_bytes = 0;
    for prefix in ["values", "rollups", "catalog", "versions"] {
        let listed: Vec<_> = store.list(Some(&Path::from(prefix))).try_collect().await?;
        for meta in listed {
            if !referenced.contains(meta.location.as_ref()) {
                store.delete(&meta.location).await?;
                deleted_files += 1;
                deleted_bytes += meta.size;
            }
        }
    }
    let mut kept_versions: Vec<u64> = kept.iter().map(|v| v.generation).collect();
    kept_versions.sort_unstable();
    Ok(Vacuumed {
        kept_versions,
        deleted_files,
        deleted_bytes,
    })
}
