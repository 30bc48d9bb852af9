//! The versions a store holds. Every publish writes its manifest as `versions/<g>.json` before
//! it makes it the current one (`write::writer`), and vacuum deletes a version's record with
//! its files (`write::vacuum`): the records are the versions a reader can still open, whose
//! manifests name files that are all there.

use crate::dataset::layout;
use crate::dataset::manifest::{FORMAT_WITH_GAPS, Manifest, OLDEST_FORMAT};
use crate::error::{EngineError, Result};
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use futures::{StreamExt, TryStreamExt};
use std::sync::Arc;

/// Records read at once.
const READ_AT_ONCE: usize = 16;

/// The generations of the version records in the store, ascending (records of a publish under
/// way, or of one that failed, included: callers keep those up to the current generation).
pub async fn recorded_generations(store: &dyn ObjectStore) -> Result<Vec<u64>> {
    let mut generations: Vec<u64> = store
        .list(Some(&Path::from("versions")))
        .try_filter_map(|meta| {
            let g = meta
                .location
                .filename()
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|n| n.parse::<u64>().ok());
            std::future::ready(Ok(g))
        })
        .try_collect()
        .await?;
    generations.sort_unstable();
    Ok(generations)
}

/// The record of version `generation`, or None when the store has none (never published, or
/// removed by vacuum).
pub async fn read_version(store: &dyn ObjectStore, generation: u64) -> Result<Option<Manifest>> {
    let path = layout::version_path(generation);
    let bytes = match store.get(&Path::from(path.as_str())).await {
        Ok(got) => got.bytes().await?,
        Err(datafusion::object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|e| EngineError::corrupt_by(&path, e))?;
    if !(OLDEST_FORMAT..=FORMAT_WITH_GAPS).contains(&manifest.format)
        || manifest.generation != generation
    {
        return Err(EngineError::corrupt(format!(
            "{path}: format {} generation {} is not a version this build reads",
            manifest.format, manifest.generation
        )));
    }
    Ok(Some(manifest))
}

/// The records of `generations`, in their order; a record gone meanwhile (vacuum) is left
/// out.
pub async fn read_versions(
    store: Arc<dyn ObjectStore>,
    generations: Vec<u64>,
) -> Result<Vec<Manifest>> {
    let read: Vec<Option<Manifest>> = futures::stream::iter(generations)
        .map(|g| {
            let store = Arc::clone(&store);
            async move { read_version(store.as_ref(), g).await }
        })
        .buffered(READ_AT_ONCE)
        .try_collect()
        .await?;
    Ok(read.into_iter().flatten().collect())
}
