//! `hydro rollback`: publishes a new version equal to an earlier one, so that an archive
//! replaced by mistake (or a bad correction) is current again. The earlier version must still
//! be kept (`vacuum` has not removed it); the versions between stay as they were, reachable by
//! `asOf` like any past version, and the new one is citable by its own version.

use crate::dataset::manifest::{Manifest, PublishKind};
use crate::dataset::read_manifest;
use crate::dataset::versions::{read_version, recorded_generations};
use crate::error::{EngineError, Result};
use crate::write::writer::DatasetWriter;
use datafusion::object_store::ObjectStore;
use std::sync::Arc;

/// Publishes version `to` again as the next version.
pub async fn rollback(store: Arc<dyn ObjectStore>, to: u64) -> Result<Manifest> {
    let current = read_manifest(store.as_ref())
        .await?
        .ok_or_else(|| EngineError::Refused("no dataset is published there".into()))?;
    if current.generation == to {
        return Err(EngineError::Refused(format!(
            "version {to} is the current one: nothing to roll back"
        )));
    }
    let Some(earlier) = read_version(store.as_ref(), to).await? else {
        let kept = recorded_generations(store.as_ref()).await?;
        let kept: Vec<String> = kept
            .iter()
            .filter(|g| **g <= current.generation)
            .map(u64::to_string)
            .collect();
        return Err(EngineError::Refused(format!(
            "version {to} is not kept (never published, or removed by a vacuum); the versions \
             kept are {}",
            kept.join(", ")
        )));
    };
    let writer = DatasetWriter::begin(store, PublishKind::Rollback).await?;
    writer.republish(&earlier).await
}
