//! Where a dataset is stored, and what is kept in memory of what the store returned.
//!
//! A dataset lives on an `object_store`. A local directory is read through [`local::LocalDir`],
//! which reads ranges on the calling task through file handles kept open. Month files' bytes
//! are kept in [`value_cache::ValueCache`] within a budget.

pub mod local;
pub mod slot_cache;
pub mod value_cache;

use crate::error::{EngineError, Result};
use datafusion::object_store::ObjectStore;
use datafusion::object_store::local::LocalFileSystem;
use std::path::PathBuf;
use std::sync::Arc;

/// Opens a local directory as an object store rooted there.
pub fn local_store(dir: &std::path::Path) -> Result<Arc<dyn ObjectStore>> {
    Ok(local_dir(dir)?)
}

pub(crate) fn local_dir(dir: &std::path::Path) -> Result<Arc<local::LocalDir>> {
    std::fs::create_dir_all(dir).map_err(|source| EngineError::Io {
        what: format!("cannot create {}", dir.display()),
        source,
    })?;
    Ok(Arc::new(local::LocalDir::new(
        LocalFileSystem::new_with_prefix(dir)?,
    )))
}

/// `DIR` or `file:///DIR` → a local directory. Other schemes are not built into this binary.
pub fn store_for(location: &str) -> Result<Arc<dyn ObjectStore>> {
    Ok(local_dir(&local_path(location)?)?)
}

pub(crate) fn local_path(location: &str) -> Result<PathBuf> {
    match location.split_once("://") {
        None => Ok(PathBuf::from(location)),
        Some(("file", rest)) => Ok(PathBuf::from(rest)),
        Some((scheme, _)) => Err(EngineError::Unsupported(format!(
            "storage scheme '{scheme}' is not supported by this build (use a directory)"
        ))),
    }
}
