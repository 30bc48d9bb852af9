//! The rollups of a publish (see [`crate::dataset::rollups`]): for every station the publish
//! wrote months of, new parts for the years it wrote (their rows of those months computed from
//! their value files, every other row taken as it is from the parts they replace) beside the
//! station's other parts as they were, and the station's derived characteristic values
//! ([`crate::write::derived`]) from the hydrological years of all its parts: those of the parts
//! written summed up as they are written and kept in their footers
//! ([`crate::dataset::rollup_years`]), those of the parts kept read from their footers, not
//! their rows. Stations it wrote nothing of keep their derived values, and their parts but in a
//! compaction, which joins each station's parts of the years it settles ([`parts_to_join`]).
//! Stations are done a few at a time: memory is a few stations' day rows of the years written
//! (a 20-year station of two series is ~15 000 rows) and one month each, beside the version's
//! files table, which this step reads back whole to group the month files by station (as a
//! server holds it; the rest of a publish writes it a row group at a time).
//!
//! The months written are read back from the store rather than summarised while they are
//! encoded: the writers hand months over in no order of station (an import's come from
//! buckets of station-months), so rows made while encoding would have to be held, or spilled,
//! until their station is complete. Reading back costs a decode of the months written
//! (the history of `benches/RESULTS.md` gives the import's time with and without).

use crate::dataset::catalog_file::Interner;
use crate::dataset::files_for_writer;
use crate::dataset::layout;
use crate::dataset::manifest::{PublishKind, ValueFile};
use crate::dataset::read_manifest;
use crate::dataset::rollup_years::{PartYears, YearSummary, read_part_years};
use crate::dataset::rollups::{self, DayRow, RollupFile, days_of};
use crate::dataset::stored_month::{MonthValues, read_month_values};
use crate::error::{EngineError, Result};
use crate::model::duration::IsoDuration;
use crate::model::ids::{ParameterId, Series, StationId};
use crate::model::month::Month;
use crate::model::property::property;
use crate::model::{Characteristic, Micros, Parameter, Text};
use crate::write::derived::{
    DerivedChange, DerivedSettings, Quantity, add_years, derived_values, edge_days, split_day,
    year_summaries,
};
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use futures::{StreamExt, TryStreamExt};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// Stations whose rollups are built at once.
const STATIONS_AT_ONCE: usize = 8;

/// Writes the rollup files of generation `generation` (a publish of `kind`), whose files table
/// is at `files_table` and which wrote months of the stations `written`, and its rollups table;
/// returns the table's path. The previous version is the one published now (the writer holds
/// the write lock); its derived-value settings, changed by `change`, are the new version's.
/// Its rollups are built on where the publish builds on its months (an append or a
/// compaction); a dataset replaced (an import or a generate) has none of its months, and
/// none of its rollups. With `join_before` (a compaction), each station's parts that end
/// before that UTC year are joined into one ([`parts_to_join`]).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn write_rollups(
    store: &Arc<dyn ObjectStore>,
    generation: u64,
    kind: PublishKind,
    files_table: &str,
    written: &HashSet<StationId>,
    parameters: &[Parameter],
    change: DerivedChange,
    join_before: Option<i32>,
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
    let builds_on = matches!(kind, PublishKind::Append | PublishKind::Compact);
    // Rollups of another zone's days (the dataset's zone changed, or they were written as UTC
    // days before the dataset's zone was their grain) are made again from the month files.
    let rebuild = manifest
        .as_ref()
        .is_some_and(|m| m.rollup_zone() != settings.zone);
    let previous: HashMap<StationId, Vec<RollupFile>> = match manifest.filter(|_| builds_on) {
        Some(m) => match m.catalog.rollups {
            Some(path) => {
                let bytes = store.get(&Path::from(path)).await?.bytes().await?;
                rollups::by_station(rollups::decode_table(bytes, &mut texts)?)
            }
            None => HashMap::new(),
        },
        None => HashMap::new(),
    };
    // A batch of stations at a time: the table's files decoded at once would take ~1 GB at
    // 2.4 M files.
    let files = files_for_writer(Arc::clone(store), files_table.to_owned()).await?;
    let previous = Arc::new(previous);
    let quantities: Arc<HashMap<Series, (char, Micros, Text)>> = Arc::new(
        parameters
            .iter()
            .filter_map(|p| Some(((p.station.clone(), p.id.clone()), quantity_of(p)?)))
            .collect(),
    );
    let derived_stations: Arc<HashSet<StationId>> =
        Arc::new(quantities.keys().map(|(s, _)| s.clone()).collect());
    let join = |station: &StationId| {
        join_before.and_then(|year| parts_to_join(previous.get(station)?, year))
    };
    let values_as_they_were =
        |station: &StationId| !rederive && !rebuild && !written.contains(station);
    // No month of it written, the settings unchanged, nothing to join: its parts as they
    // were, without the station's files decoded (an append to one station decodes one).
    let (kept, to_build): (Vec<&StationId>, Vec<&StationId>) = files
        .stations()
        .iter()
        .partition(|s| values_as_they_were(s) && join(s).is_none());
    let mut built: Vec<StationRollups> = kept
        .into_iter()
        .filter_map(|station| previous.get(station))
        .map(|parts| StationRollups {
            parts: parts.clone(),
            derived: None,
        })
        .collect();
    let files = &files;
    let rebuilt: Vec<StationRollups> =
        futures::stream::iter(files.batches(to_build.into_iter().cloned()))
            .then(|batch| async move { files.files_of(&batch).await })
            .map_ok(|batch| futures::stream::iter(batch.into_iter().map(Ok)))
            .try_flatten()
            .map_ok(|(station, files)| {
                let join = join(&station);
                let values_as_they_were = values_as_they_were(&station);
                let (store, previous) = (Arc::clone(store), Arc::clone(&previous));
                let derive = Derive {
                    settings,
                    quantities: Arc::clone(&quantities),
                    stations: Arc::clone(&derived_stations),
                    rebuild,
                };
                // A task a station: reading its months and encoding its parts are work for
                // every core, and the futures of one stream run on one thread.
                let mut task = AbortOnDrop(tokio::spawn(async move {
                    let task = StationTask {
                        generation,
                        station,
                        files,
                        join,
                    };
                    let built = station_rollup(&store, task, &previous, &derive).await?;
                    // Parts joined alone change no value: the station's derived values stay as
                    // they were (summed in another order, they could differ in the last digit).
                    Ok::<_, EngineError>(built.map(|built| match values_as_they_were {
                        true => StationRollups {
                            derived: None,
                            ..built
                        },
                        false => built,
                    }))
                }));
                async move {
                    (&mut task.0).await.map_err(|source| EngineError::Task {
                        what: "rollups",
                        source,
                    })?
                }
            })
            .try_buffer_unordered(STATIONS_AT_ONCE)
            .try_filter_map(|f| std::future::ready(Ok(f)))
            .try_collect()
            .await?;
    built.extend(rebuilt);
    let mut listed = Vec::with_capacity(built.len());
    let mut rebuilt = HashSet::new();
    let mut derived = Vec::new();
    for built in built {
        if let Some((station, values)) = built.derived {
            rebuilt.insert(station);
            derived.extend(values);
        }
        listed.extend(built.parts);
    }
    // In station order, not the order the stations finished in: a version's tables are the
    // same whichever station's task ran longer (sorts that keep each station's order).
    listed.sort_by(|a, b| a.station.cmp(&b.station));
    derived.sort_by(|a, b| a.station.cmp(&b.station));
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

/// A station's rollup parts in the new version, and its derived values where they are made
/// anew (its parts are, or the settings).
struct StationRollups {
    parts: Vec<RollupFile>,
    derived: Option<(StationId, Vec<Characteristic>)>,
}

/// How a station's derived values are made.
struct Derive {
    /// The dataset's settings: its zone is the rollups' days'.
    settings: DerivedSettings,
    quantities: Arc<HashMap<Series, (char, Micros, Text)>>,
    /// The stations with a series in `quantities`: only theirs keep years in their parts.
    stations: Arc<HashSet<StationId>>,
    /// Whether the previous parts are of another zone's days: every row is made again.
    rebuild: bool,
}

/// A parameter's derived-values letter (`W` for water levels, `Q` for discharge), interval
/// and unit; None for other quantities or parameters without a fixed interval.
fn quantity_of(p: &Parameter) -> Option<(char, Micros, Text)> {
    let letter = property(&p.observed_property)?.derived?;
    let step = p
        .interval
        .parse::<IsoDuration>()
        .ok()
        .filter(|d| d.months == 0 && d.micros > 0)?
        .micros;
    Some((letter, step, p.unit.clone()))
}

/// A station whose rollups a publish of generation `generation` writes anew, with its files in
/// the new version.
struct StationTask {
    generation: u64,
    station: StationId,
    files: Vec<ValueFile>,
    /// In a compaction, its parts of the settled years, to join into one, and those it keeps
    /// ([`parts_to_join`]).
    join: Option<(Vec<RollupFile>, Vec<RollupFile>)>,
}

/// The station's rollup parts in the new version: those of the years not written as they were
/// and new ones for the years written ([`parts_to_rewrite`], [`write_part`]), or, in a
/// compaction, those of settled years joined ([`parts_to_join`]); none when it has no rows.
/// With them the station's derived values, from the hydrological years of every part: of the
/// parts written as they are written, of the parts kept from their footers. A kept part
/// without years as the settings define them (written before years were kept, or under other
/// settings: every part when the settings change) is read and written anew with them.
async fn station_rollup(
    store: &Arc<dyn ObjectStore>,
    task: StationTask,
    previous: &HashMap<StationId, Vec<RollupFile>>,
    derive: &Derive,
) -> Result<Option<StationRollups>> {
    let StationTask {
        generation,
        station,
        files,
        join,
    } = task;
    let store = store.as_ref();
    let (before, written): (&[RollupFile], BTreeSet<Month>) = match derive.rebuild {
        // Every month summarised anew, no part kept.
        true => (&[], files.iter().map(|f| f.month).collect()),
        false => (
            previous.get(&station).map_or(&[][..], Vec::as_slice),
            files
                .iter()
                .filter(|f| f.generation == generation)
                .map(|f| f.month)
                .collect(),
        ),
    };
    // Only a station with a series to derive keeps years in its parts (of all its series).
    let mut years = derive
        .stations
        .contains(&station)
        .then(|| StationYears::new(&station, &files, derive.settings));
    let mut parts = Vec::new();
    let kept = match (written.first(), written.last()) {
        (Some(first), Some(last)) => {
            let (rewritten, kept) = parts_to_rewrite(before, (first.year(), last.year()));
            let mut rows = parts_rows(store, &rewritten).await?;
            rows.retain(|r| !written.contains(&r.month()));
            // Without a previous part every month is summarised; with them, the months written.
            for f in files
                .iter()
                .filter(|f| before.is_empty() || written.contains(&f.month))
            {
                for (parameter, times, values) in read_month_values(store, f).await? {
                    rows.extend(days_of(&parameter, &times, &values, derive.settings.zone));
                }
            }
            let rows = sorted(rows);
            // Rows rewritten up to the station's last year are split (kept parts are all
            // before or all after the years rewritten), and so are those of a rebuild: the
            // next append rewrites the last year's part alone, as after any other publish.
            let split = derive.rebuild
                || (!before.is_empty()
                    && kept
                        .iter()
                        .all(|k| k.years().is_some_and(|(_, last)| last < first.year())));
            for group in part_groups(&rows, split) {
                parts
                    .extend(write_part(store, generation, &station, &group, years.as_mut()).await?);
            }
            kept
        }
        // No month written: the settings changed or parts are joined (else the station's
        // parts are taken over without a task).
        _ if before.is_empty() => return Ok(None),
        _ => match join {
            Some((joined, kept)) => {
                let rows = sorted(parts_rows(store, &joined).await?);
                let rows: Vec<&DayRow> = rows.iter().collect();
                parts.extend(write_part(store, generation, &station, &rows, years.as_mut()).await?);
                kept
            }
            None => before.to_vec(),
        },
    };
    let Some(mut years) = years else {
        parts.extend(kept);
        parts.sort_by_key(|p| p.days);
        return Ok(Some(StationRollups {
            parts,
            derived: Some((station, Vec::new())),
        }));
    };
    for part in kept {
        let found = read_part_years(store, &part).await?;
        match found.filter(|y| y.defined_as(&derive.settings)) {
            Some(found) => {
                years.add(&part, &found)?;
                parts.push(part);
            }
            None => {
                let rows = rollups::read_part(store, &part, None).await?;
                let rows: Vec<&DayRow> = rows.iter().collect();
                parts.extend(
                    write_part(store, generation, &station, &rows, Some(&mut years)).await?,
                );
            }
        }
    }
    parts.sort_by_key(|p| p.days);
    let derived = years.derived(&derive.quantities)?;
    Ok(Some(StationRollups {
        parts,
        derived: Some((station, derived)),
    }))
}

/// `rows` sorted by (parameter, day), as rollup files and derived values take them; the rows
/// of a day two months' files share in time order.
fn sorted(mut rows: Vec<DayRow>) -> Vec<DayRow> {
    rows.sort_by(|a, b| {
        (&a.parameter, a.day, a.first_time).cmp(&(&b.parameter, b.day, b.first_time))
    });
    rows
}

/// Splits a station's parts into those a publish that wrote months of the UTC years
/// `first..=last` rewrites and those it keeps as they are: the parts that may hold days of
/// those years and, so that parts stay disjoint, those within the years of a part rewritten.
fn parts_to_rewrite(
    parts: &[RollupFile],
    (mut first, mut last): (i32, i32),
) -> (Vec<RollupFile>, Vec<RollupFile>) {
    let mut rewrite = vec![false; parts.len()];
    loop {
        let mut grew = false;
        for (part, rewrite) in parts.iter().zip(rewrite.iter_mut()) {
            if !*rewrite && part.may_hold_years(first, last) {
                *rewrite = true;
                grew = true;
                if let Some((a, b)) = part.years() {
                    (first, last) = (first.min(a), last.max(b));
                }
            }
        }
        if !grew {
            break;
        }
    }
    let (rewritten, kept): (Vec<_>, Vec<_>) =
        parts.iter().zip(rewrite).partition(|(_, rewrite)| *rewrite);
    let parts = |v: Vec<(&RollupFile, bool)>| v.into_iter().map(|(p, _)| p.clone()).collect();
    (parts(rewritten), parts(kept))
}

/// Whether a compaction that settles the years before the UTC year `year` joins `part`.
fn joins(part: &RollupFile, year: i32) -> bool {
    part.years().is_some_and(|(_, last)| last < year)
}

/// A station's parts a compaction of the years before the UTC year `year` joins into one, and
/// those it keeps, when it joins any: the parts that end before that year, if there are
/// several. The appends of a live archive, which write later years, leave a part a year
/// ([`part_groups`]); joined, a station's settled years are one file again, which the next
/// appends keep.
fn parts_to_join(parts: &[RollupFile], year: i32) -> Option<(Vec<RollupFile>, Vec<RollupFile>)> {
    let (joined, kept): (Vec<RollupFile>, Vec<RollupFile>) =
        parts.iter().cloned().partition(|p| joins(p, year));
    (joined.len() > 1).then_some((joined, kept))
}

/// Stations of the rollups table `rollups` whose parts a compaction of the years before the UTC
/// year `year` joins ([`parts_to_join`]).
pub(crate) fn stations_to_join(rollups: &[RollupFile], year: i32) -> u64 {
    let mut joined: HashMap<&StationId, u32> = HashMap::new();
    for part in rollups.iter().filter(|p| joins(p, year)) {
        *joined.entry(&part.station).or_default() += 1;
    }
    joined.values().filter(|&&parts| parts > 1).count() as u64
}

/// `rows` (sorted by parameter and day) as a station's parts: one, or (`split`: rows rewritten
/// up to the station's last year) two, their last UTC year on its own, so that the next
/// appends, which write the last year, rewrite a year of days. A station's first rollups are
/// one part (readers of the whole archive open a file a station), and so are years rewritten
/// before its last. The rows themselves are not copied: a part is encoded from references.
fn part_groups(rows: &[DayRow], split: bool) -> Vec<Vec<&DayRow>> {
    let Some(last_year) = rows.iter().map(|r| r.month().year()).max() else {
        return Vec::new();
    };
    let groups: Vec<Vec<&DayRow>> = match split {
        true => {
            let (older, last) = rows.iter().partition(|r| r.month().year() < last_year);
            vec![older, last]
        }
        false => vec![rows.iter().collect()],
    };
    groups.into_iter().filter(|g| !g.is_empty()).collect()
}

/// Writes `rows` (sorted by parameter and day) as a part of the station's rollups of
/// generation `generation`, with their hydrological years when the station keeps them
/// (`years`, to which they are added); None without rows.
async fn write_part(
    store: &dyn ObjectStore,
    generation: u64,
    station: &StationId,
    rows: &[&DayRow],
    years: Option<&mut StationYears<'_>>,
) -> Result<Option<RollupFile>> {
    // The span of its values: the UTC years of a part are those of its months, disjoint from
    // other parts' even where a local day starts in the year before.
    let first = rows.iter().map(|r| r.first_time).min();
    let last = rows.iter().map(|r| r.last_time).max();
    let Some(days) = first.zip(last) else {
        return Ok(None);
    };
    let part_years = match years {
        Some(years) => Some(years.of_part(store, rows).await?),
        None => None,
    };
    let json = part_years.as_ref().map(PartYears::to_json).transpose()?;
    let bytes = rollups::encode_rollups(rows, json)?;
    let part = RollupFile {
        station: station.clone(),
        generation,
        size: bytes.len() as u64,
        days: Some(days),
    };
    store
        .put(&Path::from(part.path()), PutPayload::from_bytes(bytes))
        .await?;
    Ok(Some(part))
}

/// The rows of a station's parts.
async fn parts_rows(store: &dyn ObjectStore, parts: &[RollupFile]) -> Result<Vec<DayRow>> {
    let mut rows = Vec::new();
    for part in parts {
        rows.extend(rollups::read_part(store, part, None).await?);
    }
    Ok(rows)
}

/// A station's hydrological years, a series at a time, as its parts are written or read, and
/// the raw values of the months whose days a year's edge cuts (in a zone off UTC), read once.
struct StationYears<'a> {
    station: &'a StationId,
    files: &'a [ValueFile],
    settings: DerivedSettings,
    months: HashMap<Month, MonthValues>,
    series: BTreeMap<ParameterId, BTreeMap<i32, YearSummary>>,
}

impl<'a> StationYears<'a> {
    fn new(station: &'a StationId, files: &'a [ValueFile], settings: DerivedSettings) -> Self {
        Self {
            station,
            files,
            settings,
            months: HashMap::new(),
            series: BTreeMap::new(),
        }
    }

    /// The years of a part's rows (sorted by parameter and day), added to the station's.
    async fn of_part(&mut self, store: &dyn ObjectStore, rows: &[&DayRow]) -> Result<PartYears> {
        let mut part = PartYears::new(&self.settings);
        for series in rows.chunk_by(|a, b| a.parameter == b.parameter) {
            let parameter = &series[0].parameter;
            let edges = edge_days(series, &self.settings);
            let years = match edges.is_empty() {
                true => year_summaries(series, &self.settings),
                false => {
                    let split = self.split_edges(store, parameter, series, &edges).await?;
                    year_summaries(&split, &self.settings)
                }
            };
            add_years(self.series.entry(parameter.clone()).or_default(), &years);
            part.series.insert(parameter.to_string(), years);
        }
        Ok(part)
    }

    /// Adds the years a kept part's footer gives.
    fn add(&mut self, part: &RollupFile, found: &PartYears) -> Result<()> {
        for (parameter, years) in &found.series {
            let parameter: ParameterId = parameter.parse().map_err(|e| {
                EngineError::corrupt(format!(
                    "rollup part {}: years of {parameter}: {e}",
                    part.path()
                ))
            })?;
            add_years(self.series.entry(parameter).or_default(), years);
        }
        Ok(())
    }

    /// One series' day rows with the `edges` days split where a year starts, from the raw
    /// values of their months.
    async fn split_edges(
        &mut self,
        store: &dyn ObjectStore,
        parameter: &ParameterId,
        series: &[&DayRow],
        edges: &[(Micros, Micros)],
    ) -> Result<Vec<DayRow>> {
        let station = self.station;
        let mut split = Vec::with_capacity(series.len() + edges.len());
        for &d in series {
            if edges.binary_search(&(d.day, d.first_time)).is_err() {
                split.push(d.clone());
                continue;
            }
            let month = d.month();
            let month_values = match self.months.entry(month) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    let file = self
                        .files
                        .iter()
                        .find(|f| f.month == month)
                        .ok_or_else(|| {
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
            split.extend(split_day(d, times, values, &self.settings));
        }
        Ok(split)
    }

    /// The derived values of the station's series of a quantity that has them.
    fn derived(
        &self,
        quantities: &HashMap<Series, (char, Micros, Text)>,
    ) -> Result<Vec<Characteristic>> {
        let mut derived = Vec::new();
        for (parameter, years) in &self.series {
            let Some((letter, step, unit)) =
                quantities.get(&(self.station.clone(), parameter.clone()))
            else {
                continue;
            };
            let quantity = Quantity {
                letter: *letter,
                step: *step,
                unit,
            };
            derived.extend(derived_values(
                self.station,
                parameter,
                &quantity,
                years,
                &self.settings,
            )?);
        }
        Ok(derived)
    }
}
