//! The rollups of a publish (see [`crate::dataset::rollups`]): for every station the publish
//! wrote months of, a new rollup file, its rows of those months computed from their value files
//! and every other row taken as it is from the station's previous rollup file; stations it
//! wrote nothing of keep their file. Stations are done a few at a time, so memory is a few
//! stations' day rows (a 20-year station of two series is ~15 000 rows) and one month each.
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
use crate::model::ids::StationId;
use crate::model::month::Month;
use crate::write::stored::read_month;
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use futures::{StreamExt, TryStreamExt};
use std::collections::{BTreeMap, BTreeSet, HashMap};
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
) -> Result<String> {
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
    let listed: Vec<RollupFile> = futures::stream::iter(stations)
        .map(|(station, files)| {
            let (store, previous) = (Arc::clone(store), Arc::clone(&previous));
            async move { station_rollup(&store, generation, station, files, &previous).await }
        })
        .buffer_unordered(STATIONS_AT_ONCE)
        .try_filter_map(|f| std::future::ready(Ok(f)))
        .try_collect()
        .await?;
    let path = layout::catalog_path("rollups", generation);
    let table = rollups::encode_table(&listed)?;
    store
        .put(&Path::from(path.as_str()), PutPayload::from_bytes(table))
        .await?;
    Ok(path)
}

/// The station's rollup file in the new version: its previous one when no month of it was
/// written, else a new one; none when it has neither.
async fn station_rollup(
    store: &Arc<dyn ObjectStore>,
    generation: u64,
    station: StationId,
    files: Vec<ValueFile>,
    previous: &HashMap<StationId, RollupFile>,
) -> Result<Option<RollupFile>> {
    let before = previous.get(&station);
    let written: BTreeSet<Month> = files
        .iter()
        .filter(|f| f.generation == generation)
        .map(|f| f.month)
        .collect();
    if written.is_empty() {
        return Ok(before.cloned());
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
        for chunk in read_month(store.as_ref(), f).await? {
            rows.extend(days_of(&chunk.parameter, &chunk.timestamps, &chunk.values));
        }
    }
    rows.sort_by(|a, b| (&a.parameter, a.day).cmp(&(&b.parameter, b.day)));
    let bytes = rollups::encode_rollups(&rows)?;
    let file = RollupFile {
        station,
        generation,
        size: bytes.len() as u64,
    };
    store
        .put(&Path::from(file.path()), PutPayload::from_bytes(bytes))
        .await?;
    Ok(Some(file))
}
