//! The rollups of a publish (see [`crate::dataset::rollups`]): for every station the publish
//! wrote months of, a new rollup file, its rows of those months computed from their value files
//! and every other row taken as it is from the station's previous rollup file, and the
//! station's derived characteristic values ([`crate::write::derived`]) from its rows; stations
//! it wrote nothing of keep their file and their derived values. Stations are done a few at a
//! time: memory is a few stations' day rows (a 20-year station of two series is ~15 000 rows)
//! and one month each, beside the version's files table, which this step reads back whole to
//! group the month files by station (as a server holds it; the rest of a publish writes it a
//! row group at a time).
//!
//! The months written are read back from the store rather than summarised while they are
//! encoded: the writers hand months over in no order of station (an import's come from
//! buckets of station-months), so rows made while encoding would have to be held, or spilled,
//! until their station is complete. Reading back costs a decode of the months written
//! (`benches/RESULTS.md` gives the import's time with and without).

use crate::dataset::catalog_file::Interner;
use crate::dataset::files_for_writer;
use crate::dataset::layout;
use crate::dataset::manifest::ValueFile;
use crate::dataset::read_manifest;
use crate::dataset::rollups::{self, DayRow, RollupFile, days_of};
use crate::error::{EngineError, Result};
use crate::model::duration::IsoDuration;
use crate::model::ids::{Series, StationId};
use crate::model::month::Month;
use crate::model::{Characteristic, Micros, Parameter, Text};
use crate::write::derived::{
    DerivedChange, DerivedSettings, Quantity, derived_values, edge_days, split_day,
};
use crate::write::stored::{MonthValues, read_month_values};
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use futures::{StreamExt, TryStreamExt};
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// Stations whose rollups are built at once.
const STATIONS_AT_ONCE: usize = 8;

/// Writes the rollup files of generation `generation`, whose files table is at `files_table`
/// and which wrote months of the stations `written`, and its rollups table; returns the
/// table's path. The previous version is the one published now (the writer holds the write
/// lock); its derived-value settings, changed by `change`, are the new version's.
pub(crate) async fn write_rollups(
    store: &Arc<dyn ObjectStore>,
    generation: u64,
    files_table: &str,
    written: &HashSet<StationId>,
    parameters: &[Parameter],
    change: DerivedChange,
) -> Result<RollupsWritten> {
    let started = std::time::Instant::now();
    let mut texts = Interner::default();
    let manifest = read_manifest(store.as_ref()).await?;
    let before = manifest
        .as_ref()
        .and_then(|m| m.derived)
        .unwrap_or_default();
    before
        .check()
        .map_err(|e| EngineError::corrupt(format!("manifest.json: derived: {e}")))?;
    let settings = change.applied_to(before);
    settings
        .check()
        .map_err(|e| EngineError::Import(vec![format!("derived-value settings: {e}")]))?;
    // New settings derive every station's values anew, not only those of stations written.
    let rederive = manifest.is_some() && settings != before;
    let previous: HashMap<StationId, RollupFile> = match manifest {
        Some(m) => match m.catalog.rollups {
            Some(path) => {
                let bytes = store.get(&Path::from(path)).await?.bytes().await?;
                rollups::decode_table(bytes, &mut texts)?
                    .into_iter()
                    .map(|f| (f.station.clone(), f))
                    .collect()
            }
            None => HashMap::new(),
        },
        None => HashMap::new(),
    };
    let bytes = store.get(&Path::from(files_table)).await?.bytes().await?;
    // A station at a time: the table's files decoded at once would take ~1 GB at 2.4 M files.
    let files = Arc::new(files_for_writer(files_table.to_owned(), bytes)?);
    let previous = Arc::new(previous);
    let quantities: Arc<HashMap<Series, (char, Micros, Text)>> = Arc::new(
        parameters
            .iter()
            .filter_map(|p| Some(((p.station.clone(), p.id.clone()), quantity_of(p)?)))
            .collect(),
    );
    let built: Vec<(RollupFile, bool, Vec<Characteristic>)> =
        futures::stream::iter(files.stations().to_vec())
            .map(|station| {
                // No month of it written, the settings unchanged: its rollup file as it was,
                // without the station's files decoded (an append to one station decodes one).
                if !rederive && !written.contains(&station) {
                    let kept = previous
                        .get(&station)
                        .map(|b| (b.clone(), false, Vec::new()));
                    return futures::future::Either::Left(std::future::ready(Ok(kept)));
                }
                let (store, previous) = (Arc::clone(store), Arc::clone(&previous));
                let files = Arc::clone(&files);
                let derive = Derive {
                    settings,
                    quantities: Arc::clone(&quantities),
                    rederive,
                };
                // A task a station: decoding and encoding are work for every core, and the
                // futures of one stream run on one thread.
                let mut task = AbortOnDrop(tokio::spawn(async move {
                    let files = files.value_files(&station)?;
                    station_rollup(&store, generation, station, files, &previous, &derive).await
                }));
                futures::future::Either::Right(async move {
                    (&mut task.0).await.map_err(|source| EngineError::Task {
                        what: "rollups",
                        source,
                    })?
                })
            })
            .buffer_unordered(STATIONS_AT_ONCE)
            .try_filter_map(|f| std::future::ready(Ok(f)))
            .try_collect()
            .await?;
    let mut listed = Vec::with_capacity(built.len());
    let mut rebuilt = HashSet::new();
    let mut derived = Vec::new();
    for (file, new, values) in built {
        if new {
            rebuilt.insert(file.station.clone());
        }
        derived.extend(values);
        listed.push(file);
    }
    let path = layout::catalog_path("rollups", generation);
    let table = rollups::encode_table(&listed)?;
    store
        .put(&Path::from(path.as_str()), PutPayload::from_bytes(table))
        .await?;
    tracing::debug!(
        stations = listed.len(),
        rebuilt = rebuilt.len(),
        seconds = started.elapsed().as_secs_f64(),
        "rollups written"
    );
    Ok(RollupsWritten {
        table: path,
        rebuilt,
        derived,
        settings,
    })
}

/// A station's task, aborted when its future is dropped: when one station fails, the publish
/// stops and drops the others, and a task left running would write its rollup file after the
/// writer had deleted what it wrote.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What [`write_rollups`] wrote.
pub(crate) struct RollupsWritten {
    /// The rollups table's path.
    pub table: String,
    /// Stations whose derived values are in `derived` (their rollup file is new, or the
    /// settings are): those of the previous version are out of date.
    pub rebuilt: HashSet<StationId>,
    pub derived: Vec<Characteristic>,
    /// The derived-value settings of the new version.
    pub settings: DerivedSettings,
}

/// How a station's derived values are made.
struct Derive {
    settings: DerivedSettings,
    quantities: Arc<HashMap<Series, (char, Micros, Text)>>,
    /// Whether stations without months written derive theirs anew (the settings changed).
    rederive: bool,
}

/// A parameter's derived-values letter (`W` for water levels, `Q` for discharge), interval
/// and unit; None for other quantities or parameters without a fixed interval.
fn quantity_of(p: &Parameter) -> Option<(char, Micros, Text)> {
    let letter = match &*p.observed_property {
        "waterLevel" => 'W',
        "discharge" => 'Q',
        _ => return None,
    };
    let step = p
        .interval
        .parse::<IsoDuration>()
        .ok()
        .filter(|d| d.months == 0 && d.micros > 0)?
        .micros;
    Some((letter, step, p.unit.clone()))
}

/// The station's rollup file in the new version: its previous one when no month of it was
/// written, else a new one; none when it has neither. With it the station's derived values,
/// when they are made anew (the bool: the file is new or the settings are).
async fn station_rollup(
    store: &Arc<dyn ObjectStore>,
    generation: u64,
    station: StationId,
    files: Vec<ValueFile>,
    previous: &HashMap<StationId, RollupFile>,
    derive: &Derive,
) -> Result<Option<(RollupFile, bool, Vec<Characteristic>)>> {
    let before = previous.get(&station);
    let written: BTreeSet<Month> = files
        .iter()
        .filter(|f| f.generation == generation)
        .map(|f| f.month)
        .collect();
    if written.is_empty() {
        return match before {
            Some(b) if derive.rederive => {
                let rows = rollup_rows(store.as_ref(), b).await?;
                let derived =
                    station_derived(store.as_ref(), &station, &files, &rows, derive).await?;
                Ok(Some((b.clone(), true, derived)))
            }
            Some(b) => Ok(Some((b.clone(), false, Vec::new()))),
            None => Ok(None),
        };
    }
    let mut rows: Vec<DayRow> = match before {
        Some(b) => {
            let mut rows = rollup_rows(store.as_ref(), b).await?;
            rows.retain(|r| !written.contains(&r.month()));
            rows
        }
        None => Vec::new(),
    };
    // Without a previous file every month is summarised; with one, the months written.
    for f in files
        .iter()
        .filter(|f| before.is_none() || written.contains(&f.month))
    {
        for (parameter, times, values) in read_month_values(store.as_ref(), f).await? {
            rows.extend(days_of(&parameter, &times, &values));
        }
    }
    rows.sort_by(|a, b| (&a.parameter, a.day).cmp(&(&b.parameter, b.day)));
    let derived = station_derived(store.as_ref(), &station, &files, &rows, derive).await?;
    let bytes = rollups::encode_rollups(&rows)?;
    let file = RollupFile {
        station,
        generation,
        size: bytes.len() as u64,
    };
    store
        .put(&Path::from(file.path()), PutPayload::from_bytes(bytes))
        .await?;
    Ok(Some((file, true, derived)))
}

/// The rows of a rollup file.
async fn rollup_rows(store: &dyn ObjectStore, file: &RollupFile) -> Result<Vec<DayRow>> {
    let bytes = store.get(&Path::from(file.path())).await?.bytes().await?;
    rollups::decode_rollups(&file.path(), bytes, None)
}

/// The derived values of a station's series from its day rows (sorted by parameter and day),
/// reading the raw values of the days a year's edge cuts (in a zone off UTC) from its `files`.
async fn station_derived(
    store: &dyn ObjectStore,
    station: &StationId,
    files: &[ValueFile],
    rows: &[DayRow],
    derive: &Derive,
) -> Result<Vec<Characteristic>> {
    let settings = &derive.settings;
    let mut months: HashMap<Month, MonthValues> = HashMap::new();
    let mut derived = Vec::new();
    for series in rows.chunk_by(|a, b| a.parameter == b.parameter) {
        let parameter = &series[0].parameter;
        let Some((letter, step, unit)) =
            derive.quantities.get(&(station.clone(), parameter.clone()))
        else {
            continue;
        };
        let edges = edge_days(series, settings);
        let mut split: Vec<DayRow>;
        let mut days = series;
        if !edges.is_empty() {
            split = Vec::with_capacity(series.len() + edges.len());
            for d in series {
                if edges.binary_search(&d.day).is_err() {
                    split.push(d.clone());
                    continue;
                }
                let month = d.month();
                let month_values = match months.entry(month) {
                    Entry::Occupied(e) => e.into_mut(),
                    Entry::Vacant(e) => {
                        let file = files.iter().find(|f| f.month == month).ok_or_else(|| {
                            EngineError::corrupt(format!(
                                "{station}: rollups of {month} without its value file"
                            ))
                        })?;
                        e.insert(read_month_values(store, file).await?)
                    }
                };
                let (_, times, values) = month_values
                    .iter()
                    .find(|(p, ..)| p == parameter)
                    .ok_or_else(|| {
                        EngineError::corrupt(format!(
                            "{station}: rollups of {parameter} in {month} without its values"
                        ))
                    })?;
                split.extend(split_day(parameter, d.day, times, values, settings));
            }
            days = &split;
        }
        let quantity = Quantity {
            letter: *letter,
            step: *step,
            unit,
        };
        derived.extend(derived_values(
            station, parameter, &quantity, days, settings,
        )?);
    }
    Ok(derived)
}
