//! An opened dataset: its manifest, the catalog in memory, and what the planner needs to read
//! value files (the store registered with DataFusion, a shared footer/page-index cache, and the
//! value files indexed by station).

use crate::assembly::FileFooter;
use crate::catalog::Catalog;
use crate::catalog_file;
use crate::error::{EngineError, Result};
use crate::ids::StationId;
use crate::layout::MANIFEST;
use crate::local::{Kept, LocalDir};
use crate::manifest::{FORMAT, Manifest, ValueFile};
use crate::scan::Scanner;
use crate::value_cache::{Slot, ValueCache};
use datafusion::datasource::physical_plan::parquet::CachedParquetFileReaderFactory;
use datafusion::execution::TaskContext;
use datafusion::execution::cache::cache_manager::FileMetadataCache;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::object_store::local::LocalFileSystem;
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use datafusion::parquet::file::metadata::ParquetMetaData;
use datafusion::prelude::{SessionConfig, SessionContext};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

/// Budget for cached Parquet footers and page indexes. A value file's metadata is a few KB,
/// so this holds the metadata of tens of thousands of station-months.
const METADATA_CACHE_BYTES: usize = 256 * 1024 * 1024;

/// The value files of one station, ascending by month.
pub(crate) type StationFiles = Vec<Arc<MonthFile>>;

/// A value file and its location in the store, parsed once: `Path::from` percent-encodes each
/// part of the path, and a 10-year download reads 120 files.
pub(crate) struct MonthFile {
    pub(crate) file: ValueFile,
    pub(crate) location: Path,
    /// Where the metadata cache keeps the Arrow reader's view of the file (see `stored`).
    pub(crate) reader_key: Path,
    /// The file's footer while the metadata cache holds it (see `stored::MonthFile::metadata`).
    /// Once the cache drops it, what it held is freed; only the footer's own struct stays
    /// allocated until the next read of the file replaces it.
    pub(crate) metadata: Mutex<Weak<ParquetMetaData>>,
    /// Where the metadata cache keeps the footer split for copying, and that footer while
    /// the cache holds it (as `metadata`).
    pub(crate) copy_footer_key: Path,
    pub(crate) copy_footer: Mutex<Weak<FileFooter>>,
    /// The file's handle while it is open, in a local directory (see `local::Kept`).
    pub(crate) kept: Arc<Kept>,
    /// The file's bytes while the value cache holds them (see `value_cache`).
    pub(crate) held: Arc<Slot>,
}

pub struct Dataset {
    pub manifest: Manifest,
    pub catalog: Catalog,
    pub(crate) store: Arc<dyn ObjectStore>,
    pub(crate) ctx: SessionContext,
    /// The runtime's metadata cache, kept at hand: every month of an answer is read with it,
    /// and the runtime hands it out from behind a lock.
    pub(crate) metadata_cache: Arc<FileMetadataCache>,
    pub(crate) scanner: Scanner,
    pub(crate) files: HashMap<StationId, StationFiles>,
    /// The store again when it is a local directory: month files are then read through the
    /// handles they keep (see `local::Kept`).
    pub(crate) local: Option<Arc<LocalDir>>,
    /// Month files' bytes kept in memory, when a budget was given ([`Dataset::cache_values`]).
    pub(crate) values: Option<Arc<ValueCache>>,
}

/// Opens a local directory as an object store rooted there.
pub fn local_store(dir: &std::path::Path) -> Result<Arc<dyn ObjectStore>> {
    Ok(local_dir(dir)?)
}

fn local_dir(dir: &std::path::Path) -> Result<Arc<LocalDir>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| EngineError::Storage(format!("cannot create {}: {e}", dir.display())))?;
    Ok(Arc::new(LocalDir::new(LocalFileSystem::new_with_prefix(
        dir,
    )?)))
}

/// `DIR` or `file:///DIR` → a local directory. Other schemes are not built into this binary.
pub fn store_for(location: &str) -> Result<Arc<dyn ObjectStore>> {
    Ok(local_dir(&local_path(location)?)?)
}

fn local_path(location: &str) -> Result<PathBuf> {
    match location.split_once("://") {
        None => Ok(PathBuf::from(location)),
        Some(("file", rest)) => Ok(PathBuf::from(rest)),
        Some((scheme, _)) => Err(EngineError::Dataset(format!(
            "storage scheme '{scheme}' is not supported by this build (use a directory)"
        ))),
    }
}

pub async fn read_manifest(store: &dyn ObjectStore) -> Result<Option<Manifest>> {
    let bytes = match store.get(&Path::from(MANIFEST)).await {
        Ok(r) => r.bytes().await?,
        Err(datafusion::object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let manifest: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| EngineError::Dataset(format!("manifest.json: {e}")))?;
    if manifest.format != FORMAT {
        return Err(EngineError::Dataset(format!(
            "manifest.json: format {} is not supported (expected {FORMAT})",
            manifest.format
        )));
    }
    Ok(Some(manifest))
}

impl Dataset {
    pub async fn open(location: &str) -> Result<Self> {
        let dir = local_dir(&local_path(location)?)?;
        let mut dataset = Self::open_store(Arc::clone(&dir) as Arc<dyn ObjectStore>).await?;
        dataset.local = Some(dir);
        Ok(dataset)
    }

    pub async fn open_store(store: Arc<dyn ObjectStore>) -> Result<Self> {
        let manifest = read_manifest(store.as_ref())
            .await?
            .ok_or_else(|| EngineError::Dataset("no manifest.json: not a dataset".into()))?;
        let get = |path: String| {
            let store = Arc::clone(&store);
            async move { Ok::<_, EngineError>(store.get(&Path::from(path)).await?.bytes().await?) }
        };
        let mut texts = catalog_file::Interner::default();
        let stations = catalog_file::decode_stations(
            get(manifest.catalog.stations.clone()).await?,
            &mut texts,
        )?;
        let parameters = catalog_file::decode_parameters(
            get(manifest.catalog.parameters.clone()).await?,
            &mut texts,
        )?;
        let characteristics = catalog_file::decode_characteristics(
            get(manifest.catalog.characteristics.clone()).await?,
            &mut texts,
        )?;
        // Scratch from here on: freed before the catalog's indexes take their room.
        drop(texts);
        let catalog = Catalog::new(stations, parameters, characteristics);

        let mut files: HashMap<StationId, StationFiles> = HashMap::new();
        for f in &manifest.files {
            let station: StationId = f
                .station
                .parse()
                .map_err(|e| EngineError::Dataset(format!("manifest.json: {e}")))?;
            let location = Path::from(f.path.as_str());
            files.entry(station).or_default().push(Arc::new(MonthFile {
                file: f.clone(),
                reader_key: crate::stored::reader_metadata_key(&location),
                copy_footer_key: crate::stored::copy_footer_key(&location),
                copy_footer: Mutex::default(),
                location,
                metadata: Mutex::default(),
                kept: Arc::default(),
                held: Arc::default(),
            }));
        }
        files
            .values_mut()
            .for_each(|v| v.sort_by(|a, b| a.file.month.cmp(&b.file.month)));

        let store_url = ObjectStoreUrl::parse("hydro://dataset")?;
        let runtime = RuntimeEnvBuilder::new()
            .with_metadata_cache_limit(METADATA_CACHE_BYTES)
            .build_arc()?;
        runtime.register_object_store(store_url.as_ref(), Arc::clone(&store));
        let ctx = SessionContext::new_with_config_rt(SessionConfig::new(), runtime);
        let metadata_cache = ctx.runtime_env().cache_manager.get_file_metadata_cache();
        let reader_factory = Arc::new(CachedParquetFileReaderFactory::new(
            Arc::clone(&store),
            Arc::clone(&metadata_cache),
        ));
        let scanner = Scanner {
            store_url,
            reader_factory,
        };
        Ok(Self {
            manifest,
            catalog,
            store,
            ctx,
            metadata_cache,
            scanner,
            files,
            local: None,
            values: None,
        })
    }

    /// Keeps up to `budget` bytes of month files in memory, so that answers made again from
    /// months read before do not read them from the store again (see `value_cache`); 0 keeps
    /// none.
    pub fn cache_values(&mut self, budget: u64) {
        let budget = usize::try_from(budget).unwrap_or(usize::MAX);
        self.values = (budget > 0).then(|| Arc::new(ValueCache::new(budget)));
    }

    /// Bytes of month files held in memory now.
    pub fn cached_value_bytes(&self) -> usize {
        self.values.as_ref().map_or(0, |v| v.bytes())
    }

    pub(crate) fn task_ctx(&self) -> Arc<TaskContext> {
        self.ctx.task_ctx()
    }

    /// Whether the store still answers: a HEAD of the manifest.
    pub async fn check_storage(&self) -> Result<()> {
        self.store.head(&Path::from(MANIFEST)).await?;
        Ok(())
    }
}
