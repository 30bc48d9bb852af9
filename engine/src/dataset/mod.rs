//! What is on the store, and the opened [`Dataset`].
//!
//! [`layout`] says where every file lives and how value files are written; [`manifest`] is the
//! one object a reader opens first; [`catalog_file`] encodes the catalog tables,
//! [`files_table`] the list of value files and [`rollups`] the daily summaries, with
//! [`rollup_years`] the hydrological years each part's footer sums up; [`derived_settings`]
//! are the manifest's settings of derived values; `month_file` is one station-month of values
//! as the readers keep it; [`station_files`] the files table as queries read it, a station at
//! a time; [`latest_values`] the newest value of each series once a query found it. A
//! [`Dataset`] holds the manifest, the catalog in memory, and what queries need to read value
//! files: the store, the footer cache, DataFusion's session, and the files table by station.

pub(crate) mod catalog_file;
pub(crate) mod derived_settings;
pub(crate) mod files_table;
pub(crate) mod latest_values;
pub(crate) mod layout;
pub(crate) mod manifest;
pub(crate) mod month_file;
pub(crate) mod rollup_years;
pub(crate) mod rollups;
pub(crate) mod station_files;
pub(crate) mod stored_month;
pub(crate) mod table_bytes;
pub(crate) mod versions;

use crate::catalog::Catalog;
use crate::dataset::latest_values::LatestValues;
use crate::error::{EngineError, Result};
use crate::model::Micros;
use crate::model::ids::{ParameterId, StationId};
use crate::model::month::Month;
use crate::storage::Store;
use crate::storage::counted::RequestCounts;
use crate::storage::pack_view::PackView;
use crate::storage::value_cache::ValueCache;
use datafusion::datasource::physical_plan::parquet::CachedParquetFileReaderFactory;
use datafusion::execution::TaskContext;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt, UpdateVersion};
use datafusion::prelude::{SessionConfig, SessionContext};
use layout::MANIFEST;
use manifest::{FORMAT_WITH_GAPS, Manifest, OLDEST_FORMAT};
use month_file::FooterCache;
pub(crate) use month_file::MonthFile;
use station_files::{FilesByStation, FilesCache};
use std::collections::HashMap;
use std::sync::Arc;

/// Budget of the engine's footer cache (month files' footers, offset indexes and what the
/// readers derive from them). A month file of two series takes about 10 KB of it once a Parquet
/// answer copied from it (190 MB for the 18 720 months of `benches/many_ab.py`'s answer), so
/// this holds about 20 000 of them; an answer over more months than that reads footers again.
pub(crate) const FOOTER_CACHE_BYTES: usize = 192 * 1024 * 1024;

/// Budget of DataFusion's own metadata cache, which only its scans use (answers sorted by value
/// or quality): they read few months each.
pub(crate) const SCAN_METADATA_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// The value files of one station, ascending by month.
pub(crate) type StationFiles = Vec<Arc<MonthFile>>;

/// Bytes a dataset holds in memory (see [`Dataset::memory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUse {
    /// Month files' footers (the engine's footer cache), and its budget.
    pub footer_cache: usize,
    pub footer_cache_budget: usize,
    /// Month files' bytes (the value cache), and its budget (0: off).
    pub value_cache: usize,
    pub value_cache_budget: usize,
    /// The catalog, whole in memory (an estimate; it has no budget).
    pub catalog: usize,
    /// The files table: its bytes and which stations it lists where (an estimate).
    pub files: usize,
    /// Stations' files decoded from it (see [`station_files`]), and their budget: one cache
    /// for every version open.
    pub files_cache: usize,
    pub files_cache_budget: usize,
}

/// What DataFusion needs to scan this dataset's value files: the store as registered with the
/// session's runtime, and readers that take footers from the runtime's own metadata cache
/// (which only DataFusion's scans use).
#[derive(Clone)]
pub(crate) struct ScanSource {
    pub(crate) store_url: ObjectStoreUrl,
    pub(crate) reader_factory: Arc<CachedParquetFileReaderFactory>,
}

pub struct Dataset {
    pub manifest: Manifest,
    pub catalog: Catalog,
    /// Its stations and characteristics tables' digest, which says whether another version
    /// can hold their lists once with it.
    lists: ListsDigest,
    /// Where the version is, read as that store reads best (see [`Store::read`]).
    pub(crate) store: Store,
    pub(crate) ctx: SessionContext,
    /// Month files' footers, read once and kept within a budget.
    pub(crate) footers: Arc<FooterCache>,
    /// About how many bytes the catalog holds (its lists held once with another version's
    /// too): it never changes, so measured once.
    catalog_bytes: usize,
    pub(crate) scan_source: ScanSource,
    /// The files table by station, decoded as stations are asked for.
    files: FilesByStation,
    /// Each station's rollup parts (`rollups`), where it has any, ascending by their days.
    pub(crate) rollups: HashMap<StationId, Vec<rollups::RollupFile>>,
    /// Series' newest values once found (see `query::latest`).
    pub(crate) latest: LatestValues,
    /// Month files' bytes kept in memory, when a budget was given ([`Dataset::cache_values`]).
    pub(crate) values: Option<Arc<ValueCache>>,
}

/// The generation of the version published in `store`, if any, in any layout version: what a
/// writer needs to name the next one, including when it replaces a dataset of an older layout.
pub async fn published_generation(store: &dyn ObjectStore) -> Result<Option<u64>> {
    Ok(published_pointer(store).await?.map(|(g, _)| g))
}

/// The published generation with the store's version of `manifest.json` (its ETag), which a
/// publisher replaces only while it is still that one (a conditional put).
pub(crate) async fn published_pointer(
    store: &dyn ObjectStore,
) -> Result<Option<(u64, UpdateVersion)>> {
    #[derive(serde::Deserialize)]
    struct Generation {
        generation: u64,
    }
    let got = match store.get(&Path::from(MANIFEST)).await {
        Ok(got) => got,
        Err(datafusion::object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let version = UpdateVersion {
        e_tag: got.meta.e_tag.clone(),
        version: got.meta.version.clone(),
    };
    let bytes = got.bytes().await?;
    let g: Generation =
        serde_json::from_slice(&bytes).map_err(|e| EngineError::corrupt_by("manifest.json", e))?;
    Ok(Some((g.generation, version)))
}

/// `manifest.json`'s bytes, or None when there is none (no dataset yet).
async fn manifest_bytes(store: &dyn ObjectStore) -> Result<Option<bytes::Bytes>> {
    match store.get(&Path::from(MANIFEST)).await {
        Ok(r) => Ok(Some(r.bytes().await?)),
        Err(datafusion::object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

pub async fn read_manifest(store: &dyn ObjectStore) -> Result<Option<Manifest>> {
    let Some(bytes) = manifest_bytes(store).await? else {
        return Ok(None);
    };
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|e| EngineError::corrupt_by("manifest.json", e))?;
    if !(OLDEST_FORMAT..=FORMAT_WITH_GAPS).contains(&manifest.format) {
        return Err(EngineError::corrupt(format!(
            "manifest.json: format {} is not supported (expected {OLDEST_FORMAT} to {FORMAT_WITH_GAPS})",
            manifest.format
        )));
    }
    Ok(Some(manifest))
}

/// The published version of a dataset as its catalog tables hold it (ids share their texts);
/// its files table is read by station ([`FilesByStation`]).
pub(crate) struct Published {
    pub manifest: Manifest,
    pub stations: Vec<crate::model::Station>,
    pub parameters: Vec<crate::model::Parameter>,
    pub characteristics: Vec<crate::model::Characteristic>,
    /// Empty for versions written before rollups.
    pub rollups: Vec<rollups::RollupFile>,
}

/// Budget of stations' decoded files for an append reading the published version's files
/// table to look up the months it rewrites: it goes through stations in runs, so little is
/// read again.
const WRITER_FILES_CACHE_BYTES: usize = 16 << 20;

/// Reads the published version's manifest and catalog, with its files table indexed by
/// station and left in the store, or None when nothing is published: what an append reads,
/// looking up the stations' months it writes (their decoded files kept within
/// [`WRITER_FILES_CACHE_BYTES`]) and copying the table's row groups a span at a time. Memory
/// grows with the table's stations (its index), not with its bytes nor its files.
pub(crate) async fn read_published(
    store: &Arc<dyn ObjectStore>,
) -> Result<Option<(Published, FilesByStation)>> {
    read_published_with(store, WRITER_FILES_CACHE_BYTES).await
}

/// Reads the published version's manifest and catalog, with its files table indexed for a
/// pass over its stations ([`files_for_writer`]), or None when nothing is published: what a
/// compaction reads.
pub(crate) async fn read_published_for_pass(
    store: &Arc<dyn ObjectStore>,
) -> Result<Option<(Published, FilesByStation)>> {
    read_published_with(store, 0).await
}

async fn read_published_with(
    store: &Arc<dyn ObjectStore>,
    files_cache_bytes: usize,
) -> Result<Option<(Published, FilesByStation)>> {
    let Some(manifest) = read_manifest(store.as_ref()).await? else {
        return Ok(None);
    };
    let cache = Arc::new(FilesCache::new(files_cache_bytes));
    let path = manifest.catalog.files.clone();
    let files = FilesByStation::open(Arc::clone(store), path, cache).await?;
    let published =
        read_catalog(store.as_ref(), manifest, catalog_file::Interner::default()).await?;
    Ok(Some((published, files)))
}

/// The files table at `path` in `store`, indexed by station for a writer's pass that reads
/// each station's files once (a compaction, a publish's rollups, a vacuum's versions), a
/// batch of stations at a time ([`FilesByStation::batches`]): none of the table's bytes are
/// kept (held, they were ~47 MB at 2.4 M files, growing with the archive), and no station's
/// decoded files, only each series' newest month, as for every reader
/// (`station_files::SeriesNewest`, a few hundred bytes a series). Kept within
/// [`WRITER_FILES_CACHE_BYTES`], decoded files were ~14 MB of a day append's peak heap at
/// 2.4 M files that nothing read again (heaptrack, `benches/RESULTS.md`).
pub(crate) async fn files_for_writer(
    store: Arc<dyn ObjectStore>,
    path: String,
) -> Result<FilesByStation> {
    FilesByStation::open(store, path, Arc::new(FilesCache::new(0))).await
}

async fn get(store: &dyn ObjectStore, path: String) -> Result<bytes::Bytes> {
    Ok(store.get(&Path::from(path)).await?.bytes().await?)
}

/// Reads the catalog tables `manifest` names, sharing the texts of `texts`.
async fn read_catalog(
    store: &dyn ObjectStore,
    manifest: Manifest,
    mut texts: catalog_file::Interner,
) -> Result<Published> {
    let get = |path: String| get(store, path);
    let stations =
        catalog_file::decode_stations(get(manifest.catalog.stations.clone()).await?, &mut texts)?;
    let parameters = catalog_file::decode_parameters(
        get(manifest.catalog.parameters.clone()).await?,
        &mut texts,
    )?;
    let characteristics = catalog_file::decode_characteristics(
        get(manifest.catalog.characteristics.clone()).await?,
        &mut texts,
    )?;
    let rollups = read_rollups(store, &manifest, &mut texts).await?;
    Ok(Published {
        manifest,
        stations,
        parameters,
        characteristics,
        rollups,
    })
}

/// The rollups table `manifest` names (none for versions written before rollups).
async fn read_rollups(
    store: &dyn ObjectStore,
    manifest: &Manifest,
    texts: &mut catalog_file::Interner,
) -> Result<Vec<rollups::RollupFile>> {
    match manifest.catalog.rollups.clone() {
        Some(path) => rollups::decode_table(get(store, path).await?, texts),
        None => Ok(Vec::new()),
    }
}

/// SHA-256 of a version's stations and characteristics tables, byte for byte: a version
/// opened beside another of the same digest holds their decoded lists and the stations'
/// indexes once with it ([`Catalog::beside`]). An append of values writes both tables again
/// unchanged, and only its parameters table differs. The digest is one SHA-256 pass over
/// both tables (2.6 MB at 200 000 station-years); decoding them again made a follow switch
/// there hold ~24 MiB more (the history of `benches/RESULTS.md`).
#[derive(Clone, Copy, PartialEq, Eq)]
struct ListsDigest([u8; 32]);

impl ListsDigest {
    fn of(stations: &[u8], characteristics: &[u8]) -> Self {
        use sha2::Digest;
        let mut hasher = sha2::Sha256::new();
        for table in [stations, characteristics] {
            hasher.update((table.len() as u64).to_le_bytes());
            hasher.update(table);
        }
        Self(hasher.finalize().into())
    }
}

/// The catalog tables `manifest` names, as a reader holds them: the catalog (its stations
/// and characteristics `beside`'s where their tables are the same bytes), each series' newest
/// value the parameters table gives, and the rollup parts.
struct ReadCatalog {
    manifest: Manifest,
    catalog: Catalog,
    lists: ListsDigest,
    latest: LatestValues,
    rollups: Vec<rollups::RollupFile>,
}

async fn read_catalog_beside(
    store: &dyn ObjectStore,
    manifest: Manifest,
    beside: Option<&Dataset>,
) -> Result<ReadCatalog> {
    let stations = get(store, manifest.catalog.stations.clone()).await?;
    let characteristics = get(store, manifest.catalog.characteristics.clone()).await?;
    let lists = ListsDigest::of(&stations, &characteristics);
    let parameters = get(store, manifest.catalog.parameters.clone()).await?;
    let mut texts = catalog_file::Interner::default();
    let (catalog, latest) = match beside.filter(|b| b.lists == lists) {
        Some(previous) => {
            let parameters = catalog_file::decode_parameters(parameters, &mut texts)?;
            let latest = LatestValues::published(&parameters);
            (previous.catalog.beside(parameters), latest)
        }
        None => {
            let stations = catalog_file::decode_stations(stations, &mut texts)?;
            let parameters = catalog_file::decode_parameters(parameters, &mut texts)?;
            let characteristics =
                catalog_file::decode_characteristics(characteristics, &mut texts)?;
            let latest = LatestValues::published(&parameters);
            (Catalog::new(stations, parameters, characteristics), latest)
        }
    };
    let rollups = read_rollups(store, &manifest, &mut texts).await?;
    Ok(ReadCatalog {
        manifest,
        catalog,
        lists,
        latest,
        rollups,
    })
}

impl Dataset {
    /// Whether the version holds recorded gaps (rows of quality `missing`, without a value):
    /// its answers' `value` is then nullable (see `crate::model::gap`).
    pub fn has_gaps(&self) -> bool {
        self.manifest.counts.missing > 0
    }

    /// The dataset's own zone (`--dataset-zone`, kept in the manifest with the derived-value
    /// settings), where it has one other than UTC: the calendar of its hydrological years, and
    /// of aggregates and statistics asked without `timeZone`.
    pub fn zone(&self) -> Option<crate::model::zone::Zone> {
        let zone = self.manifest.derived?.zone;
        (zone != crate::model::zone::Zone::UTC).then_some(zone)
    }

    /// The version published in the local directory `dir`.
    pub async fn open_dir(dir: &std::path::Path) -> Result<Self> {
        Self::open(&Store::dir(dir)?).await
    }

    /// The version published in `store` now.
    pub async fn open(store: &Store) -> Result<Self> {
        let manifest = read_manifest(store.object.as_ref())
            .await?
            .ok_or_else(|| EngineError::corrupt("no manifest.json: not a dataset"))?;
        Self::open_version(store, manifest).await
    }

    /// The version of `store` whose manifest (its record, `versions`) is `manifest`: the
    /// current one or an earlier one. Its files table is indexed by station, read a span at a
    /// time and not kept; a station's row groups are read and decoded when it is asked for
    /// (see `station_files`); each series' newest month is known at once where the version
    /// lists them (`catalog.newest`).
    pub async fn open_version(store: &Store, manifest: Manifest) -> Result<Self> {
        Self::open_with(store, manifest, None).await
    }

    /// The version published in `store` now, opened while `previous` (an earlier version of
    /// the same store) is served: see [`Self::open_version_beside`].
    pub async fn open_beside(store: &Store, previous: &Dataset) -> Result<Self> {
        let manifest = read_manifest(store.object.as_ref())
            .await?
            .ok_or_else(|| EngineError::corrupt("no manifest.json: not a dataset"))?;
        Self::open_version_beside(store, manifest, previous).await
    }

    /// As [`Self::open_version`], while `other` (another version of the same store) is
    /// served, holding once for both the stations and characteristics where their tables did
    /// not change (an append of values writes them again as they were).
    pub async fn open_version_beside(
        store: &Store,
        manifest: Manifest,
        other: &Dataset,
    ) -> Result<Self> {
        Self::open_with(store, manifest, Some(other)).await
    }

    async fn open_with(
        store: &Store,
        manifest: Manifest,
        beside: Option<&Dataset>,
    ) -> Result<Self> {
        let mut files = FilesByStation::open(
            store.object_store(),
            manifest.catalog.files.clone(),
            Arc::new(FilesCache::new(station_files::FILES_CACHE_BYTES)),
        )
        .await?;
        if let Some(path) = manifest.catalog.newest.clone() {
            let bytes = get(store.object.as_ref(), path.clone()).await?;
            let newest = files_table::decode_files(bytes, &mut catalog_file::Interner::default())
                .map_err(|e| EngineError::corrupt_by(path, e))?;
            files.know_newest(newest);
        }
        let read = read_catalog_beside(store.object.as_ref(), manifest, beside).await?;
        Self::of(store, read, files)
    }

    fn of(store: &Store, read: ReadCatalog, files: FilesByStation) -> Result<Self> {
        let ReadCatalog {
            manifest,
            catalog,
            lists,
            latest,
            rollups,
        } = read;
        let catalog_bytes = catalog.memory_size();

        let store_url = ObjectStoreUrl::parse("hydro://dataset")?;
        let runtime = RuntimeEnvBuilder::new()
            .with_metadata_cache_limit(SCAN_METADATA_CACHE_BYTES)
            .build_arc()?;
        // Scans see month files in packs as objects of their own (see `storage::pack_view`).
        let scanned: Arc<dyn ObjectStore> = Arc::new(PackView::new(store.object_store()));
        runtime.register_object_store(store_url.as_ref(), Arc::clone(&scanned));
        let ctx = SessionContext::new_with_config_rt(SessionConfig::new(), runtime);
        let reader_factory = Arc::new(CachedParquetFileReaderFactory::new(
            scanned,
            ctx.runtime_env().cache_manager.get_file_metadata_cache(),
        ));
        let scan_source = ScanSource {
            store_url,
            reader_factory,
        };
        Ok(Self {
            manifest,
            catalog,
            lists,
            store: store.clone(),
            ctx,
            footers: Arc::new(FooterCache::new(FOOTER_CACHE_BYTES)),
            catalog_bytes,
            scan_source,
            files,
            rollups: rollups::by_station(rollups),
            latest,
            values: None,
        })
    }

    /// Keeps what is read in `other`'s caches (month files' footers and bytes, stations'
    /// decoded files): one budget for both versions while both are open, whatever the number
    /// of versions a server holds. Files of one version are files of the next where it did
    /// not change them (see [`Self::carry_months`]).
    pub fn share_caches(&mut self, other: &Dataset) {
        self.footers = Arc::clone(&other.footers);
        self.values = other.values.clone();
        self.files.keep_in(Arc::clone(other.files.cache()));
    }

    /// Takes over from `previous` (the version served before this one, sharing its caches:
    /// [`Self::share_caches`]) the month files of the stations it holds decoded, and the
    /// series' newest months, where this version lists the same files, so that their footers
    /// and bytes, once read, serve this version's requests as they served the previous one's.
    /// Returns how many stations were decoded.
    pub async fn carry_months(&mut self, previous: &Dataset) -> usize {
        self.files.carry(&previous.files).await
    }

    /// Takes over what `previous` (the version served before this one) read that this one
    /// shares: its caches ([`Self::share_caches`]), its stations' decoded month files
    /// ([`Self::carry_months`]) and its series' newest values ([`Self::carry_latest`]).
    /// Returns how many stations and series were carried over.
    pub async fn follow(&mut self, previous: &Dataset) -> (usize, usize) {
        self.share_caches(previous);
        let stations = self.carry_months(previous).await;
        (stations, self.carry_latest(previous))
    }

    /// The store the dataset is read from.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Keeps up to `budget` bytes of month files in memory, so that answers made again from
    /// months read before do not read them from the store again (see `storage::value_cache`); 0 keeps
    /// none.
    pub fn cache_values(&mut self, budget: u64) {
        let budget = usize::try_from(budget).unwrap_or(usize::MAX);
        self.values = (budget > 0).then(|| Arc::new(ValueCache::new(budget)));
    }

    /// Keeps stations' decoded files within `budget` bytes (see `station_files`).
    pub fn cache_files(&mut self, budget: u64) {
        let budget = usize::try_from(budget).unwrap_or(usize::MAX);
        self.files.keep_in(Arc::new(FilesCache::new(budget)));
    }

    /// A station's month files, ascending by month (none for a station without values); an
    /// error when the part of the files table that lists them cannot be decoded.
    pub(crate) async fn station_files(&self, station: &StationId) -> Result<Arc<StationFiles>> {
        self.files.get(station).await
    }

    /// Decodes the month files of those of `stations` not kept decoded yet, their row groups
    /// read a span at a time (see [`FilesByStation::read_many`]): what a request of many
    /// series needs before its first byte, without a request to the store for each station.
    pub(crate) async fn read_stations(&self, stations: &[&StationId]) -> usize {
        let whole = || i32::MIN..=i32::MAX;
        let wanted = stations.iter().map(|s| (*s, whole(), None));
        self.files.read_many(wanted).await
    }

    /// A station's month files of at least the years overlapping `window` (inclusive, UTC),
    /// ascending by month: what a query of that window reads, without the station's other
    /// years decoded.
    pub(crate) async fn station_files_within(
        &self,
        station: &StationId,
        (lo, hi): (Micros, Micros),
    ) -> Result<Arc<StationFiles>> {
        let year = |t: Micros, open: i32| match t {
            Micros::MIN | Micros::MAX => open,
            t => Month::of(t).year(),
        };
        self.files
            .get_years(station, year(lo, i32::MIN)..=year(hi, i32::MAX))
            .await
    }

    /// A station's month files of at least its last year, ascending by month: where each of
    /// its series with values that year has its newest month.
    pub(crate) async fn station_files_of_last_year(
        &self,
        station: &StationId,
    ) -> Result<Arc<StationFiles>> {
        self.files.get_last_year(station).await
    }

    /// A series' newest month file, once its station was decoded (see
    /// [`station_files::SeriesNewest`]).
    pub(crate) fn series_newest(
        &self,
        station: &StationId,
        parameter: &ParameterId,
    ) -> Option<&station_files::SeriesNewest> {
        self.files.newest(station, parameter)
    }

    /// A station's month files like [`Self::station_files`], for a pass over every station
    /// that should not push out of the budget the stations requests read again.
    pub(crate) async fn station_files_in_pass(
        &self,
        station: &StationId,
    ) -> Result<Arc<StationFiles>> {
        self.files.get_in_pass(station).await
    }

    /// A station's value files, ascending by month.
    pub async fn value_files(&self, station: &StationId) -> Result<Vec<manifest::ValueFile>> {
        let months = self.station_files(station).await?;
        Ok(months.iter().map(|m| m.file.clone()).collect())
    }

    /// Every value file of the version, handed to `each` a batch at a time in the order of
    /// the files table, which is read once, a span of row groups at a time: a pass over every
    /// station without a request for each.
    pub(crate) async fn each_value_file(
        &self,
        each: impl FnMut(Vec<manifest::ValueFile>),
    ) -> Result<()> {
        self.files.each_in_order(each).await
    }

    /// Every station with value files, in the order of the files table.
    pub fn stations_with_files(&self) -> &[StationId] {
        self.files.stations()
    }

    /// Month files before `before` that are objects of their own, in station-years with at
    /// least two months before it: the files `write::compact` would join into station-year
    /// files (it would also join anew a year whose months lie in different files, which this
    /// does not count). Reads the files table once in order, a batch at a time, holding a
    /// count per station-year: decoding it a station at a time filled the decoded stations'
    /// budget (128 MiB) at every start from a bucket, with stations no request had asked for.
    pub async fn loose_files(&self, before: Month) -> Result<usize> {
        // (months before `before`, of them objects of their own), by station-year.
        let mut years: HashMap<(StationId, i32), (usize, usize)> = HashMap::new();
        self.each_value_file(|files| {
            for file in files.into_iter().filter(|f| f.month < before) {
                let year = years
                    .entry((file.station.clone(), file.month.year()))
                    .or_default();
                year.0 += 1;
                year.1 += usize::from(!file.shares_object());
            }
        })
        .await?;
        Ok(years
            .into_values()
            .filter(|&(settled, _)| settled >= 2)
            .map(|(_, loose)| loose)
            .sum())
    }

    /// Requests made so far to the store, by kind, when it is remote (a bucket).
    pub fn store_requests(&self) -> Option<&RequestCounts> {
        self.store.requests()
    }

    /// Bytes of month files held in memory now.
    pub fn cached_value_bytes(&self) -> usize {
        self.values.as_ref().map_or(0, |v| v.bytes())
    }

    /// What the dataset holds in memory, by what holds it, with the budgets of the caches.
    pub fn memory(&self) -> MemoryUse {
        MemoryUse {
            footer_cache: self.footers.bytes(),
            footer_cache_budget: self.footers.budget(),
            value_cache: self.cached_value_bytes(),
            value_cache_budget: self.values.as_ref().map_or(0, |v| v.budget()),
            catalog: self.catalog_bytes,
            files: self.files.memory(),
            files_cache: self.files.cache().bytes(),
            files_cache_budget: self.files.cache().budget(),
        }
    }

    /// Bytes its catalog and files table hold that `other` (another version of the store,
    /// the one served) does not hold too: what keeping this version open beside it costs (an
    /// estimate; see [`Self::open_version_beside`]).
    pub fn memory_apart_from(&self, other: &Dataset) -> usize {
        self.catalog.memory_size_apart_from(&other.catalog) + self.files.memory()
    }

    pub(crate) fn task_ctx(&self) -> Arc<TaskContext> {
        self.ctx.task_ctx()
    }

    /// The version published in the store now (it may be newer than this one's); an error
    /// when the manifest cannot be read or is damaged.
    pub async fn published_version(&self) -> Result<Option<String>> {
        Ok(read_manifest(self.store.object.as_ref())
            .await?
            .map(|m| m.version))
    }

    /// Whether the store still answers: a HEAD of the manifest.
    pub async fn check_storage(&self) -> Result<()> {
        self.store.object.head(&Path::from(MANIFEST)).await?;
        Ok(())
    }
}
