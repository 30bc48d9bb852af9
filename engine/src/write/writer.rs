//! Writing a dataset: value files station-month by station-month (each listed in the files
//! table as it is written), then the catalog, the version's record, and the manifest. The
//! manifest is written last with one atomic PUT (the local store writes a temporary file and
//! renames it), so until then readers keep seeing the previous version. A publish deletes
//! nothing; an import that crashes leaves only unreferenced files behind, under stations the
//! writer noted in the journal before writing there (`write::journal`), where `vacuum` finds
//! and removes them (see `write::vacuum`).

use crate::dataset::catalog_file;
use crate::dataset::files_table::FilesTableWriter;
use crate::dataset::layout::{
    self, COL_PARAMETER, COL_QUALITY, COL_TIMESTAMP, COL_VALUE, MANIFEST, UTC,
};
use crate::dataset::manifest::{
    CatalogFiles, Counts, FORMAT, FORMAT_WITH_GAPS, Manifest, PublishKind, PublishSummary,
    SeriesStats, Stored, ValueFile,
};
use crate::error::{EngineError, Result};
use crate::model::gap::{gaps_to_nulls, is_gap};
use crate::model::ids::{ParameterId, StationId};
use crate::model::month::Month;
use crate::model::zone::Zone;
use crate::model::{Characteristic, CharacteristicType, Latest, Parameter, Period, Station, Text};
use crate::parquet::assembly::FileFooter;
use crate::storage::delete_if_present;
use crate::write::availability::{Spans, periods_with_values};
use crate::write::derived::DerivedChange;
use crate::write::journal::{self, Journaled};
use crate::write::{derived, rollup};
use bytes::Bytes;
use chrono::{SecondsFormat, Utc};
use datafusion::arrow::array::{
    ArrayRef, Float64Array, RecordBatch, StringDictionaryBuilder, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::Int32Type;
use datafusion::object_store::path::Path;
use datafusion::object_store::{
    self as object_store, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    UpdateVersion,
};
use datafusion::parquet::arrow::ArrowWriter;
use futures::TryStreamExt;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

pub(crate) use crate::model::chunk::SeriesChunk;

/// A station-month encoded: the file's bytes, and for each series in it (in row group order)
/// its statistics, its periods with values ([`periods_with_values`]) and its newest row with
/// a value.
pub struct EncodedMonth {
    pub bytes: Bytes,
    pub series: Vec<SeriesStats>,
    pub periods: Vec<Vec<Period>>,
    pub newest: Vec<Option<Latest>>,
}

/// Encodes one station-month (chunks sorted by parameter, one row group each) as Parquet.
pub(crate) fn encode_month(chunks: &mut [SeriesChunk]) -> Result<EncodedMonth> {
    // One schema for the file: `value` nullable only when a series has a recorded gap.
    let gaps = chunks.iter().any(|c| c.values.iter().any(|&v| is_gap(v)));
    encode_month_as(chunks, gaps)
}

/// [`encode_month`], with `value` nullable when `with_gaps` (gaps in the chunks or not): a
/// month joined into a station-year file with gaps takes that file's schema.
pub(crate) fn encode_month_as(chunks: &mut [SeriesChunk], with_gaps: bool) -> Result<EncodedMonth> {
    chunks.sort_by(|a, b| a.parameter.cmp(&b.parameter));
    let schema = match with_gaps {
        true => layout::values_schema_with_gaps(),
        false => layout::values_schema(),
    };
    let mut buf = Vec::with_capacity(64 * 1024);
    let repeating = layout::values_repeat(chunks.iter().flat_map(|c| c.values.iter().copied()));
    let mut writer = ArrowWriter::try_new(
        &mut buf,
        Arc::clone(&schema),
        Some(layout::value_file_properties(repeating)),
    )?;
    let mut stats = Vec::new();
    let mut periods = Vec::new();
    let mut newest = Vec::new();
    for chunk in chunks.iter() {
        let n = chunk.timestamps.len();
        if n == 0 {
            continue;
        }
        if chunk.timestamps.windows(2).any(|w| w[0] >= w[1]) {
            return Err(EngineError::Internal(format!(
                "series {} is not strictly ascending in time",
                chunk.parameter
            )));
        }
        let mut params = StringDictionaryBuilder::<Int32Type>::new();
        params.append_values(chunk.parameter.as_str(), n);
        let mut quality = StringDictionaryBuilder::<Int32Type>::new();
        for q in &chunk.quality {
            quality.append_value(q);
        }
        let columns: Vec<(&str, ArrayRef)> = vec![
            (COL_PARAMETER, Arc::new(params.finish())),
            (
                COL_TIMESTAMP,
                Arc::new(
                    TimestampMicrosecondArray::from(chunk.timestamps.clone()).with_timezone(UTC),
                ),
            ),
            (COL_VALUE, {
                let values = Float64Array::from(chunk.values.clone());
                gaps_to_nulls(&values).unwrap_or_else(|| Arc::new(values) as ArrayRef)
            }),
            (COL_QUALITY, Arc::new(quality.finish())),
        ];
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            columns.into_iter().map(|(_, c)| c).collect(),
        )?;
        writer.write(&batch)?;
        writer.flush()?;
        stats.push(SeriesStats {
            parameter: chunk.parameter.clone(),
            rows: n as u64,
            missing: chunk.values.iter().filter(|&&v| is_gap(v)).count() as u64,
            min: chunk.timestamps[0],
            max: chunk.timestamps[n - 1],
        });
        periods.push(periods_with_values(&chunk.timestamps, &chunk.values));
        newest.push(newest_with_value(chunk));
    }
    writer.close()?;
    Ok(EncodedMonth {
        bytes: Bytes::from(buf),
        series: stats,
        periods,
        newest,
    })
}

/// The newest row of `chunk` whose value is not a recorded gap.
fn newest_with_value(chunk: &SeriesChunk) -> Option<Latest> {
    let i = chunk.values.iter().rposition(|&v| !is_gap(v))?;
    Some(Latest {
        timestamp: chunk.timestamps[i],
        value: chunk.values[i],
        quality: Text::from(chunk.quality[i]),
    })
}

/// What a publish says about the files written: counts, and each series' periods with values
/// (its availability), of the months written and of those carried over from the previous
/// version. Grows with the series and their gaps, not with the files.
#[derive(Default)]
struct Written {
    files: u64,
    values: u64,
    /// Rows of quality `missing`: recorded gaps, among `values`.
    missing: u64,
    /// Station-months written (not carried).
    months_written: u64,
    written: HashMap<(StationId, ParameterId), Spans>,
    carried: HashMap<(StationId, ParameterId), Spans>,
    /// Each series' newest row with a value in the months written.
    newest: HashMap<(StationId, ParameterId), Latest>,
    /// Set when row groups of the previous files table were copied ([`Copied`]): the
    /// stations whose parameters' availability and newest value are found anew from their
    /// files; every other station's are as given.
    found_anew: Option<HashSet<StationId>>,
}

/// What an append says of the row groups of the previous files table it copied as they are
/// ([`DatasetWriter::copy_table_group`]), whose files the writer does not see.
pub struct Copied {
    /// The files, values and recorded gaps they hold: the previous version's counts less
    /// those of the files the append saw.
    pub files: u64,
    pub values: u64,
    pub missing: u64,
    /// The series' newest months among them: the previous version's newest months of the
    /// stations not `touched`.
    pub newest: Vec<ValueFile>,
    /// The stations the append wrote months of: the copied groups hold none of their rows,
    /// so the writer saw all their files. The availability and newest value of every other
    /// station's parameters stay as given.
    pub touched: HashSet<StationId>,
}

/// Writes the value files of a new version and publishes it.
pub struct DatasetWriter {
    /// The store, with where the writer writes noted first (`journal`).
    store: Arc<dyn ObjectStore>,
    journal: Arc<Journaled>,
    generation: u64,
    /// The store's version of the manifest this writer follows (None: there was none), which
    /// the publish replaces only if it is still the current one.
    previous: Option<UpdateVersion>,
    table: tokio::sync::Mutex<FilesTableWriter>,
    written: Mutex<Written>,
    /// Changes to the dataset's derived-value settings.
    derive: DerivedChange,
    /// The UTC year before which each station's rollup parts are joined into one (a
    /// compaction).
    join_rollups_before: Option<i32>,
    /// What kind of publish this is, for the version's record.
    kind: PublishKind,
}

impl DatasetWriter {
    /// Starts the next generation after the one currently published (if any), holding the
    /// dataset's write lock (one writer at a time). Value files of that generation left by an
    /// attempt that crashed are not listed in this version's files table, so never taken for
    /// its files (`vacuum` removes them); a version record it left is deleted, so that this
    /// version's can be created.
    pub async fn begin(store: Arc<dyn ObjectStore>, kind: PublishKind) -> Result<Self> {
        take_write_lock(store.as_ref()).await?;
        let started = async {
            let pointer = crate::dataset::published_pointer(store.as_ref()).await?;
            let generation = pointer.as_ref().map_or(1, |(g, _)| g + 1);
            delete_if_present(store.as_ref(), &layout::version_path(generation)).await?;
            let table = FilesTableWriter::new(Arc::clone(&store), generation)?;
            Ok::<_, EngineError>((generation, pointer.map(|(_, v)| v), table))
        }
        .await;
        let (generation, previous, table) = match started {
            Ok(s) => s,
            Err(e) => {
                release_write_lock(store.as_ref()).await;
                return Err(e);
            }
        };
        let journal = Arc::new(Journaled::new(store, generation));
        Ok(Self {
            table: tokio::sync::Mutex::new(table),
            store: Arc::clone(&journal) as Arc<dyn ObjectStore>,
            journal,
            generation,
            previous,
            written: Mutex::new(Written::default()),
            derive: DerivedChange::default(),
            join_rollups_before: None,
            kind,
        })
    }

    /// Publishes with the dataset's derived-value settings changed (see
    /// `derived`).
    pub fn deriving(mut self, change: DerivedChange) -> Self {
        self.derive = change;
        self
    }

    /// Publishes with each station's rollup parts that end before the UTC year `year` joined
    /// into one (see `rollup::write_rollups`).
    pub fn joining_rollups_before(mut self, year: i32) -> Self {
        self.join_rollups_before = Some(year);
        self
    }

    /// The store to write this version's objects to: where they go is noted in the journal
    /// first (see `write::journal`), so that a crash leaves nothing vacuum cannot find.
    pub fn store(&self) -> Arc<dyn ObjectStore> {
        Arc::clone(&self.store)
    }

    async fn put(&self, path: &str, bytes: Bytes) -> Result<()> {
        self.store
            .put(&Path::from(path), PutPayload::from_bytes(bytes))
            .await?;
        Ok(())
    }

    /// The generation this writer publishes.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Value files written so far.
    pub fn files_written(&self) -> Result<u64> {
        Ok(self
            .written
            .lock()
            .map_err(|_| EngineError::Internal("writer state poisoned".into()))?
            .files)
    }

    /// The stations whose months were written so far.
    pub fn stations_written(&self) -> Result<HashSet<StationId>> {
        Ok(self
            .written
            .lock()
            .map_err(|_| EngineError::Internal("writer state poisoned".into()))?
            .written
            .keys()
            .map(|(station, _)| station.clone())
            .collect())
    }

    /// Lists a file of an earlier version in the new one, as it is.
    pub async fn carry(&self, file: ValueFile) -> Result<()> {
        self.note(&file, None, &[])?;
        self.table.lock().await.add(file).await
    }

    /// Lists row group `group` of the previous version's files table (whose footer is
    /// `footer`; `data` holds the group's bytes, from offset `data_start` of that table) in
    /// the new one as it is; say what the groups copied hold with [`Self::copied`].
    pub async fn copy_table_group(
        &self,
        footer: &FileFooter,
        group: usize,
        data: &Bytes,
        data_start: u64,
    ) -> Result<()> {
        self.table
            .lock()
            .await
            .copy_group(footer, group, data, data_start)
            .await
    }

    /// Counts the files of the row groups copied ([`Self::copy_table_group`]) and keeps their
    /// series' newest months and the catalog rows of the stations they hold.
    pub async fn copied(&self, copied: Copied) -> Result<()> {
        let mut table = self.table.lock().await;
        for file in &copied.newest {
            table.keep_newest(file);
        }
        let mut written = self
            .written
            .lock()
            .map_err(|_| EngineError::Internal("writer state poisoned".into()))?;
        written.files += copied.files;
        written.values += copied.values;
        written.missing += copied.missing;
        written.found_anew = Some(copied.touched);
        Ok(())
    }

    /// Counts a file and notes its series' periods: those found while encoding it, or for a
    /// carried file its time range (cut to the previous availability at publish); and the
    /// newest rows with a value found while encoding it.
    fn note(
        &self,
        file: &ValueFile,
        periods: Option<&[Vec<Period>]>,
        newest: &[Option<Latest>],
    ) -> Result<()> {
        let mut written = self
            .written
            .lock()
            .map_err(|_| EngineError::Internal("writer state poisoned".into()))?;
        written.files += 1;
        written.months_written += u64::from(periods.is_some());
        for (i, s) in file.series.iter().enumerate() {
            written.values += s.rows;
            written.missing += s.missing;
            let key = (file.station.clone(), s.parameter.clone());
            if let Some(Some(found)) = newest.get(i) {
                let kept = written
                    .newest
                    .entry(key.clone())
                    .or_insert_with(|| found.clone());
                if found.timestamp > kept.timestamp {
                    *kept = found.clone();
                }
            }
            let range = [Period {
                start: s.min,
                end: s.max,
            }];
            let (spans, found) = match periods.and_then(|p| p.get(i)) {
                Some(found) => (&mut written.written, found.as_slice()),
                None => (&mut written.carried, &range[..]),
            };
            spans
                .entry(key)
                .or_default()
                .add(found, s.rows, s.min, s.max);
        }
        Ok(())
    }

    /// Writes one encoded station-month.
    pub async fn write_month(
        &self,
        station: &StationId,
        month: Month,
        encoded: EncodedMonth,
    ) -> Result<()> {
        let EncodedMonth {
            bytes,
            series,
            periods,
            newest,
        } = encoded;
        let file = ValueFile {
            station: station.clone(),
            month,
            generation: self.generation,
            size: bytes.len() as u64,
            series: series.into_boxed_slice(),
            stored: Stored::File,
        };
        self.put(&file.object(), bytes).await?;
        self.note(&file, Some(&periods), &newest)?;
        self.table.lock().await.add(file).await
    }

    /// Gives up having written nothing: lets another writer begin.
    pub async fn give_up_unwritten(self) {
        release_write_lock(self.store.as_ref()).await;
    }

    /// Gives up: deletes the value files written so far and lets another writer begin.
    pub async fn abandon(&self) {
        self.delete_own_files().await;
        release_write_lock(self.store.as_ref()).await;
    }

    /// Deletes the value and rollup files of this generation under the stations the writer
    /// noted: what an import (or compaction) that failed after it began writing leaves behind.
    /// Best effort, like the cleanup after a publish; what it cannot delete stays noted for
    /// `vacuum`.
    async fn delete_own_files(&self) {
        let mut all_gone = true;
        for station in self.journal.stations() {
            for prefix in journal::station_prefixes(&station) {
                let listed: Vec<_> = match self.store.list(Some(&prefix)).try_collect().await {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!("cleanup: cannot list {prefix}: {e}");
                        all_gone = false;
                        continue;
                    }
                };
                for meta in listed {
                    if layout::written_by(meta.location.as_ref(), self.generation)
                        && let Err(e) = self.store.delete(&meta.location).await
                    {
                        tracing::warn!("cleanup: cannot delete {}: {e}", meta.location);
                        all_gone = false;
                    }
                }
            }
        }
        if all_gone {
            self.journal.close().await;
        }
    }

    /// Writes the catalog and the manifest. Parameters' availability and newest value are
    /// derived from the value files written, so they are always true to the data; a
    /// parameter's availability and newest value as given are its previous version's, which
    /// carried months take theirs from.
    pub async fn publish(
        self,
        stations: &[Station],
        parameters: Vec<Parameter>,
        characteristics: &[Characteristic],
    ) -> Result<Manifest> {
        let store = Arc::clone(&self.store);
        let published = self
            .write_version(stations, parameters, characteristics)
            .await;
        if published.is_err() {
            release_write_lock(store.as_ref()).await;
        }
        published
    }

    async fn write_version(
        self,
        stations: &[Station],
        mut parameters: Vec<Parameter>,
        characteristics: &[Characteristic],
    ) -> Result<Manifest> {
        let written = self
            .written
            .into_inner()
            .map_err(|_| EngineError::Internal("writer state poisoned".into()))?;
        let tables = self.table.into_inner().finish().await?;
        let stations_written: HashSet<StationId> =
            written.written.keys().map(|(s, _)| s.clone()).collect();
        let rollups = rollup::write_rollups(
            &self.store,
            self.generation,
            self.kind,
            &tables.files,
            &stations_written,
            &parameters,
            self.derive,
            self.join_rollups_before,
        )
        .await?;
        // Derived values of the stations whose rollups are new replace theirs of before.
        let characteristics: Vec<Characteristic> = characteristics
            .iter()
            .filter(|c| {
                !(c.kind == CharacteristicType::Derived
                    && rollups.rebuilt.contains(&c.station)
                    && derived::is_derived_id(c.id.as_str()))
            })
            .cloned()
            .chain(rollups.derived)
            .collect();
        let characteristics = characteristics.as_slice();
        let Written {
            written: mut new,
            mut carried,
            mut newest,
            months_written,
            found_anew,
            ..
        } = written;
        let publish = PublishSummary {
            kind: self.kind,
            series: new.len() as u64,
            station_months: months_written,
        };
        for p in &mut parameters {
            if found_anew
                .as_ref()
                .is_some_and(|anew| !anew.contains(&p.station))
            {
                continue;
            }
            let key = (p.station.clone(), p.id.clone());
            let new = new.remove(&key).unwrap_or_default();
            let spans = match carried.remove(&key) {
                // A dataset of an older layout gave no availability: the months' ranges.
                Some(c) if p.availability.is_empty() => new.merged(c),
                Some(c) => new.merged(c.within(&p.availability)),
                None => new,
            };
            p.availability = spans.into_periods();
            p.latest = latest_at_end(&p.availability, newest.remove(&key), p.latest.take());
        }
        let g = self.generation;
        let catalog = CatalogFiles {
            stations: layout::catalog_path("stations", g),
            parameters: layout::catalog_path("parameters", g),
            characteristics: layout::catalog_path("characteristics", g),
            files: tables.files,
            rollups: Some(rollups.table),
            newest: Some(tables.newest),
        };
        let store = Arc::clone(&self.store);
        let put = |path: String, bytes: Bytes| {
            let store = Arc::clone(&store);
            async move {
                store
                    .put(&Path::from(path), PutPayload::from_bytes(bytes))
                    .await?;
                Ok::<_, EngineError>(())
            }
        };
        put(
            catalog.stations.clone(),
            catalog_file::encode_stations(stations)?,
        )
        .await?;
        put(
            catalog.parameters.clone(),
            catalog_file::encode_parameters(&parameters)?,
        )
        .await?;
        put(
            catalog.characteristics.clone(),
            catalog_file::encode_characteristics(characteristics)?,
        )
        .await?;
        let created = Utc::now();
        let manifest = Manifest {
            format: if written.missing > 0 {
                FORMAT_WITH_GAPS
            } else {
                FORMAT
            },
            version: format!("{g}-{}", created.format("%Y%m%dT%H%M%S%.3fZ")),
            generation: g,
            created: created.to_rfc3339_opts(SecondsFormat::Secs, false),
            counts: Counts {
                stations: stations.len() as u64,
                parameters: parameters.len() as u64,
                characteristics: characteristics.len() as u64,
                values: written.values,
                missing: written.missing,
                files: written.files,
            },
            catalog,
            derived: Some(rollups.settings),
            publish: Some(publish),
            rollup_zone: (rollups.settings.zone != Zone::UTC)
                .then(|| rollups.settings.zone.to_string()),
        };
        put_version(store.as_ref(), &manifest, self.previous).await?;
        self.journal.close().await;
        release_write_lock(store.as_ref()).await;
        Ok(manifest)
    }

    /// Publishes a version equal to `earlier` (a version record the store keeps): its
    /// catalog tables, files table and rollups as they are, under this writer's generation
    /// (`hydro rollback`). Nothing else is written; every version between stays as it was.
    pub async fn republish(self, earlier: &Manifest) -> Result<Manifest> {
        let created = Utc::now();
        let g = self.generation;
        let manifest = Manifest {
            version: format!("{g}-{}", created.format("%Y%m%dT%H%M%S%.3fZ")),
            generation: g,
            created: created.to_rfc3339_opts(SecondsFormat::Secs, false),
            publish: Some(PublishSummary {
                kind: PublishKind::Rollback,
                series: 0,
                station_months: 0,
            }),
            ..earlier.clone()
        };
        let store = Arc::clone(&self.store);
        let published = put_version(store.as_ref(), &manifest, self.previous).await;
        self.journal.close().await;
        release_write_lock(store.as_ref()).await;
        published.map(|()| manifest)
    }
}

/// Publishes `manifest`: its version record first, so that every manifest published has one
/// (vacuum reads them to know which files earlier versions still need), created only if
/// absent (of two publishers of one generation, one gets here); then the manifest, replaced
/// only if it is still `previous`.
async fn put_version(
    store: &dyn ObjectStore,
    manifest: &Manifest,
    previous: Option<UpdateVersion>,
) -> Result<()> {
    let g = manifest.generation;
    let json = serde_json::to_vec(manifest)
        .map_err(|e| EngineError::Internal(format!("manifest: {e}")))?;
    let record = Path::from(layout::version_path(g));
    let created = store
        .put_opts(
            &record,
            PutPayload::from(json.clone()),
            PutOptions::from(PutMode::Create),
        )
        .await;
    if let Err(e) = created {
        return Err(lost_race(e, g));
    }
    if let Err(e) = put_manifest(store, json, previous).await {
        // Not published: the record goes too, so that it names no version.
        delete_if_present(store, record.as_ref()).await.ok();
        return Err(lost_race(e, g));
    }
    Ok(())
}

/// Replaces the manifest only if it is still `previous` (creates it only if there is none):
/// `If-Match` / `If-None-Match` on S3. A store without conditional updates (a local
/// directory) overwrites it: the version record's atomic create already decided the race.
/// A series' newest value once published: the row at the end of its `availability` (the
/// newest time with a value), from the months `written` if one of them holds it, else the
/// `previous` version's if that is the row (then its month was carried unchanged: a month
/// rewritten holding that time would have given it). None where neither is: readers find it
/// in the values.
fn latest_at_end(
    availability: &[Period],
    written: Option<Latest>,
    previous: Option<Latest>,
) -> Option<Latest> {
    let end = availability.last()?.end;
    written
        .into_iter()
        .chain(previous)
        .find(|l| l.timestamp == end)
}

async fn put_manifest(
    store: &dyn ObjectStore,
    json: Vec<u8>,
    previous: Option<UpdateVersion>,
) -> std::result::Result<(), object_store::Error> {
    let path = Path::from(MANIFEST);
    let mode = match previous {
        Some(v) if v.e_tag.is_some() || v.version.is_some() => PutMode::Update(v),
        Some(_) => PutMode::Overwrite,
        None => PutMode::Create,
    };
    let conditional = !matches!(mode, PutMode::Overwrite);
    match store
        .put_opts(
            &path,
            PutPayload::from(json.clone()),
            PutOptions::from(mode),
        )
        .await
    {
        Err(object_store::Error::NotImplemented { .. }) if conditional => {
            store.put(&path, PutPayload::from(json)).await.map(drop)
        }
        done => done.map(drop),
    }
}

/// A failed publish, said as a lost race when the store refused a conditional write.
fn lost_race(e: object_store::Error, generation: u64) -> EngineError {
    match e {
        object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. } => {
            EngineError::Import(vec![format!(
                "another writer published this dataset while this one wrote generation \
                 {generation} (manifest.json changed); nothing was published"
            )])
        }
        e => e.into(),
    }
}

/// The object a writer holds while it writes: created only if absent (an atomic create on
/// every store), so of two imports into one dataset one writes and the other stops before
/// writing anything.
pub(crate) const WRITE_LOCK: &str = "writing.lock";

/// This machine's name, to tell a lock of a process here from one of another machine.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

#[derive(serde::Serialize, serde::Deserialize)]
struct LockHolder {
    pid: u32,
    host: String,
    since: String,
}

impl LockHolder {
    /// Whether the holder is a process of this machine that no longer runs (killed, crashed):
    /// then its lock is stale and may be taken over.
    fn is_gone(&self) -> bool {
        !self.host.is_empty()
            && self.host == host_name()
            && !std::path::Path::new(&format!("/proc/{}", self.pid)).exists()
    }
}

pub(crate) async fn take_write_lock(store: &dyn ObjectStore) -> Result<()> {
    let me = LockHolder {
        pid: std::process::id(),
        host: host_name(),
        since: Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true),
    };
    let note = serde_json::to_vec(&me).map_err(|e| EngineError::Internal(e.to_string()))?;
    for attempt in 0..2 {
        let opts =
            datafusion::object_store::PutOptions::from(datafusion::object_store::PutMode::Create);
        let err = match store
            .put_opts(
                &Path::from(WRITE_LOCK),
                PutPayload::from(note.clone()),
                opts,
            )
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        if !matches!(err, datafusion::object_store::Error::AlreadyExists { .. }) {
            return Err(err.into());
        }
        let holder = match store.get(&Path::from(WRITE_LOCK)).await {
            Ok(r) => r.bytes().await.ok(),
            Err(_) => None,
        };
        let holder: Option<LockHolder> = holder.and_then(|b| serde_json::from_slice(&b).ok());
        if attempt == 0 && holder.as_ref().is_some_and(LockHolder::is_gone) {
            tracing::warn!("{WRITE_LOCK}: its writer no longer runs; taking it over");
            store.delete(&Path::from(WRITE_LOCK)).await?;
            continue;
        }
        let who = holder.map_or_else(
            || "a writer".to_owned(),
            |h| format!("process {} on {} since {}", h.pid, h.host, h.since),
        );
        return Err(EngineError::Import(vec![format!(
            "{WRITE_LOCK}: {who} is writing to this dataset; nothing was written. If it is not \
             running any more, delete {WRITE_LOCK} in the dataset and try again."
        )]));
    }
    Err(EngineError::Internal(format!(
        "{WRITE_LOCK}: could not be taken"
    )))
}

pub(crate) async fn release_write_lock(store: &dyn ObjectStore) {
    if let Err(e) = store.delete(&Path::from(WRITE_LOCK)).await {
        tracing::warn!("cannot delete {WRITE_LOCK}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};

    fn month(values: Vec<f64>) -> SeriesChunk {
        let start = 1_420_070_400_000_000;
        SeriesChunk {
            parameter: "discharge-15min".parse().unwrap(),
            timestamps: (0..values.len() as i64)
                .map(|i| start + i * 900_000_000)
                .collect(),
            quality: vec!["good"; values.len()],
            values,
        }
    }

    /// Whether the value column of an encoded month has a dictionary page, after checking that
    /// its values read back as written.
    fn value_dictionary(values: Vec<f64>) -> bool {
        let bytes = encode_month(&mut [month(values.clone())]).unwrap().bytes;
        let batches: Vec<RecordBatch> = ParquetRecordBatchReaderBuilder::try_new(bytes.clone())
            .unwrap()
            .build()
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        let read: Vec<f64> = batches
            .iter()
            .flat_map(|b| {
                let c = b.column_by_name(COL_VALUE).unwrap();
                let c = c.as_any().downcast_ref::<Float64Array>().unwrap();
                c.values().to_vec()
            })
            .collect();
        assert_eq!(read, values);
        let file = SerializedFileReader::new(bytes).unwrap();
        let group = file.metadata().row_group(0);
        let value = group
            .columns()
            .iter()
            .find(|c| c.column_path().string() == COL_VALUE);
        value.unwrap().dictionary_page_offset().is_some()
    }

    /// Values that repeat (whole centimetres) keep a dictionary; values that are nearly all
    /// distinct are written plain.
    #[test]
    fn a_dictionary_only_for_repeating_values() {
        let levels = (0..2976).map(|i| f64::from(300 + (i / 40) % 50)).collect();
        assert!(value_dictionary(levels));
        let discharges = (0..2976).map(|i| 466.16 + f64::from(i) * 0.37).collect();
        assert!(!value_dictionary(discharges));
    }
}
