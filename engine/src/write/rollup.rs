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
use crate::dataset::files_table::decode_files;
use crate::dataset::layout;
use crate::dataset::manifest::ValueFile;
use crate::dataset::read_manifest;
use crate::dataset::rollups::{self, DayRow, RollupFile, days_of};
use crate::error::Result;
use crate::model::duration::IsoDuration;
use crate::model::ids::{Series, StationId};
use crate::model::month::Month;
use crate::model::{Characteristic, Micros, Parameter, Text};
use crate::write::derived::{DerivedSettings, Quantity, derived_values};
use crate::write::stored::read_month_values;
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use futures::{StreamExt, TryStreamExt};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// Stations whose rollups are built at once.
const STATIONS_AT_ONCE: usize = 8;

/// Writes the rollup files of generation `generation`, whose files table is at `files_table`,
/// and its rollups table; returns the table's path. The previous version is the one published
/// now (the writer holds the write lock).
pub(crate) async fn write_rollups(
    store: &Arc<dyn ObjectStore>,
    generation: u64,
    files_table: &str,
    parameters: &[Parameter],
) -> Result<RollupsWritten> {
    let started = std::time::Instant::now();
    let mut texts = Interner::default();
    let previous: HashMap<StationId, RollupFile> = match read_manifest(store.as_ref()).await? {
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
    let mut stations: BTreeMap<StationId, Vec<ValueFile>> = BTreeMap::new();
    for f in decode_files(bytes, &mut texts)? {
        stations.entry(f.station.clone()).or_default().push(f);
    }
    let previous = Arc::new(previous);
    let quantities: Arc<HashMap<Series, (char, Micros, Text)>> = Arc::new(
        parameters
            .iter()
            .filter_map(|p| Some(((p.station.clone(), p.id.clone()), quantity_of(p)?)))
            .collect(),
    );
    let built: Vec<(RollupFile, bool, Vec<Characteristic>)> = futures::stream::iter(stations)
        .map(|(station, files)| {
            let (store, previous) = (Arc::clone(store), Arc::clone(&previous));
            let quantities = Arc::clone(&quantities);
            async move {
                station_rollup(&store, generation, station, files, &previous, &quantities).await
            }
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
    })
}

/// What [`write_rollups`] wrote.
pub(crate) struct RollupsWritten {
    /// The rollups table's path.
    pub table: String,
    /// Stations whose rollup file is new: their derived values are in `derived`, and those of
    /// the previous version are out of date.
    pub rebuilt: HashSet<StationId>,
    pub derived: Vec<Characteristic>,
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
/// written, else a new one; none when it has neither.
async fn station_rollup(
    store: &Arc<dyn ObjectStore>,
    generation: u64,
    station: StationId,
    files: Vec<ValueFile>,
    previous: &HashMap<StationId, RollupFile>,
    quantities: &HashMap<Series, (char, Micros, Text)>,
) -> Result<Option<(RollupFile, bool, Vec<Characteristic>)>> {
    let before = previous.get(&station);
    let written: BTreeSet<Month> = files
        .iter()
        .filter(|f| f.generation == generation)
        .map(|f| f.month)
        .collect();
    if written.is_empty() {
        return Ok(before.map(|b| (b.clone(), false, Vec::new())));
    }
    let mut rows: Vec<DayRow> = match before {
        Some(b) => {
            let bytes = store.get(&Path::from(b.path())).await?.bytes().await?;
            let mut kept = rollups::decode_rollups(&b.path(), bytes, None)?;
            kept.retain(|r| !written.contains(&r.month()));
            kept
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
    let mut derived = Vec::new();
    for series in rows.chunk_by(|a, b| a.parameter == b.parameter) {
        let parameter = &series[0].parameter;
        if let Some((letter, step, unit)) = quantities.get(&(station.clone(), parameter.clone())) {
            let quantity = Quantity {
                letter: *letter,
                step: *step,
                unit,
            };
            derived.extend(derived_values(
                &station,
                parameter,
                &quantity,
                series,
                DerivedSettings::default(),
            )?);
        }
    }
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
