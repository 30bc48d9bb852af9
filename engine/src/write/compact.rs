//! `hydro compact`: a station's months joined into one Parquet file a year.
//!
//! A month per file keeps appends cheap, but on object storage every file a download reads is
//! a request, and the store's time per request, not its bandwidth, sets the pace (a 10-year
//! series: 120 GETs). Compaction, as Delta Lake's OPTIMIZE or Iceberg's `rewrite_data_files`
//! do for their tables, rewrites what has settled into fewer, larger files: each station-year
//! whose months before `before` are not yet in one file gets a file
//! (`values/station=<id>/<YYYY>-g<g>.parquet`) of the value files' schema holding their row
//! groups, copied as they were (pages, statistics, page index: `parquet::assembly`), month
//! after month, each month's in its file's order. It is a Parquet file like any other, so any
//! reader opens it. The files table of the new version names, for each month, the file, its
//! first row group, where its pages begin and where the file's page index and footer begin;
//! readers read a month as they read a month file, with the year's footer (read once for all
//! its months, or in the same request as the pages: `query::object_read`), and an answer's
//! months of one year are read in one request.
//!
//! A station-year file has one schema: where a month of the year holds recorded gaps (its
//! `value` nullable, see `model::gap`), the year's months without are written again with
//! `value` nullable before they are joined, instead of copied.
//!
//! Months at or after `before` stay files of their own, so the appends of a live archive keep
//! rewriting one station-month. Every file a version lists holds only rows of that version: an
//! append that rewrites a month of a station-year file joins the year's other months into a
//! new file ([`rejoin`]), and the next compaction joins the year again. A station's rollup
//! parts of the years before `before`'s are joined into one the same way
//! ([`crate::write::rollup`]): the appends of a live archive leave a part a year. Compaction
//! also moves the month files and packs of earlier layouts to this one (`dataset::layout`).
//! Like any publish it deletes nothing: `vacuum` removes the files no kept version names. A
//! compaction that fails publishes nothing and deletes the files it wrote; one that finds
//! nothing to do publishes nothing either.

use crate::dataset::layout;
use crate::dataset::manifest::{InYear, PublishKind, Stored, ValueFile};
use crate::dataset::read_published_for_pass;
use crate::dataset::stored_month::{month_bytes, read_month};
use crate::error::{EngineError, Result};
use crate::model::ids::StationId;
use crate::model::month::Month;
use crate::parquet::assembly::{Assembly, FileFooter};
use crate::write::rollup::stations_to_join;
use crate::write::writer::DatasetWriter;
use crate::write::writer::encode_month_as;
use datafusion::object_store::buffered::BufWriter;
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use futures::{StreamExt, TryStreamExt};
use std::collections::HashSet;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

/// Stations compacted at once, a station-year at a time each. Each holds a month read and the
/// upload's buffer in memory, and a file larger than the buffer has up to [`PARTS_AT_ONCE`]
/// parts of that size in flight: at most 4 x (3 x 5 MiB + a month) whatever the archive's
/// size.
const STATIONS_AT_ONCE: usize = 4;

/// Bytes of a station-year file buffered before they go to the store; a larger file goes up
/// in parts of this size (S3's smallest part).
const UPLOAD_BUFFER: usize = 5 << 20;

/// Parts of one file uploaded at once.
const PARTS_AT_ONCE: usize = 2;

/// What a compaction did.
#[derive(Debug, PartialEq, Eq)]
pub struct Compacted {
    /// The version published, if there was anything to do.
    pub generation: Option<u64>,
    /// Station-year files written.
    pub files: u64,
    /// Months joined into them.
    pub months: u64,
    /// Bytes of the files written.
    pub bytes: u64,
    /// Month files of earlier layouts moved to this one's names.
    pub moved: u64,
    /// Stations whose rollup parts of the years before `before`'s were joined into one.
    pub rollups_joined: u64,
}

/// Joins, for every station-year, its months before `before` (see the module doc), telling
/// `progress` how many stations of how many are done.
pub async fn compact(
    store: Arc<dyn ObjectStore>,
    before: Month,
    progress: impl Fn(u64, u64),
) -> Result<Compacted> {
    let writer = DatasetWriter::begin(store, PublishKind::Compact)
        .await?
        .joining_rollups_before(before.year());
    // The writer's store notes where files go before they are written (`write::journal`).
    let store = writer.store();
    match join_all(&store, &writer, before, &progress).await {
        Ok((mut compacted, published)) => {
            compacted.rollups_joined = stations_to_join(&published.rollups, before.year());
            if compacted.files + compacted.moved + compacted.rollups_joined == 0 {
                writer.give_up_unwritten().await;
                return Ok(compacted);
            }
            let manifest = writer
                .publish(
                    &published.stations,
                    published.parameters,
                    &published.characteristics,
                )
                .await?;
            Ok(Compacted {
                generation: Some(manifest.generation),
                ..compacted
            })
        }
        Err(e) => {
            writer.abandon().await;
            Err(e)
        }
    }
}

/// What station-years came to: files written, the months and bytes joined into them, months
/// moved to this layout.
#[derive(Default)]
struct YearDone {
    files: u64,
    months: u64,
    bytes: u64,
    moved: u64,
}

impl YearDone {
    fn add(&mut self, other: YearDone) {
        self.files += other.files;
        self.months += other.months;
        self.bytes += other.bytes;
        self.moved += other.moved;
    }
}

/// Writes the station-year files and lists every file of the new version; what was done, and
/// the published version's catalog (which the new version keeps). Goes through the files
/// table a batch of stations at a time ([`crate::dataset::FilesByStation::batches`]), so
/// memory holds a batch's files and the years in hand, not the table's bytes nor every file
/// decoded (~1 GB at 2.4 M files).
async fn join_all(
    store: &Arc<dyn ObjectStore>,
    writer: &DatasetWriter,
    before: Month,
    progress: &impl Fn(u64, u64),
) -> Result<(Compacted, crate::dataset::Published)> {
    let (published, files) = read_published_for_pass(store)
        .await?
        .ok_or_else(|| EngineError::InvalidQuery("no dataset is published there".into()))?;
    let generation = writer.generation();
    let total = files.stations().len() as u64;
    let mut done = 0;
    let files = &files;
    let compacted = futures::stream::iter(files.batches(files.stations().iter().cloned()))
        .then(|batch| async move { files.files_of(&batch).await })
        .map_ok(|batch| futures::stream::iter(batch.into_iter().map(Ok)))
        .try_flatten()
        .map(|station: Result<(StationId, Vec<ValueFile>)>| async move {
            let years = station_years(station?.1);
            let mut done = YearDone::default();
            for year in years {
                done.add(join_year(store, writer, year, before, generation).await?);
            }
            Ok::<_, EngineError>(done)
        })
        .buffer_unordered(STATIONS_AT_ONCE)
        .try_fold(YearDone::default(), |mut sum, station| {
            done += 1;
            progress(done, total);
            sum.add(station);
            futures::future::ok(sum)
        })
        .await?;
    let compacted = Compacted {
        generation: None,
        files: compacted.files,
        months: compacted.months,
        bytes: compacted.bytes,
        moved: compacted.moved,
        rollups_joined: 0,
    };
    Ok((compacted, published))
}

/// Joins a station-year's months before `before` into a file when they need it, moves its
/// other months to this layout's names, and lists them all in the new version.
async fn join_year(
    store: &Arc<dyn ObjectStore>,
    writer: &DatasetWriter,
    mut year: Vec<ValueFile>,
    before: Month,
    generation: u64,
) -> Result<YearDone> {
    let settled = year.iter().take_while(|f| f.month < before).count();
    let mut rest = year.split_off(settled);
    let mut done = YearDone::default();
    if needs_join(&year) {
        (done.months, done.bytes) = write_year(store, &mut year, generation).await?;
        done.files = 1;
    } else {
        rest.append(&mut year);
    }
    for file in &mut rest {
        done.moved += u64::from(move_to_this_layout(store, file).await?);
    }
    for file in year.into_iter().chain(rest) {
        writer.carry(file).await?;
    }
    Ok(done)
}

/// `files` (sorted by station and month) cut into station-years.
fn station_years(files: Vec<ValueFile>) -> Vec<Vec<ValueFile>> {
    let mut years: Vec<Vec<ValueFile>> = Vec::new();
    for file in files {
        match years.last_mut() {
            Some(year)
                if year[0].station == file.station && year[0].month.year() == file.month.year() =>
            {
                year.push(file)
            }
            _ => years.push(vec![file]),
        }
    }
    years
}

/// Whether a station-year's settled months are worth a (new) file: two or more, not all in
/// one station-year file already.
fn needs_join(months: &[ValueFile]) -> bool {
    let in_year = |f: &ValueFile| match f.stored {
        Stored::Year(y) => Some(y.generation),
        _ => None,
    };
    let one_file = months
        .first()
        .and_then(in_year)
        .is_some_and(|g| months.iter().all(|f| in_year(f) == Some(g)));
    months.len() >= 2 && !one_file
}

/// Gives a month file of an earlier layout (named in a `month=` directory, or in a pack) this
/// layout's name, under the month's own generation (its values are unchanged); whether it did.
async fn move_to_this_layout(store: &Arc<dyn ObjectStore>, file: &mut ValueFile) -> Result<bool> {
    if !matches!(file.stored, Stored::MonthDir | Stored::Pack { .. }) {
        return Ok(false);
    }
    let bytes = checked_month(store.as_ref(), file).await?;
    let moved = ValueFile {
        stored: Stored::File,
        ..file.clone()
    };
    store
        .put(&Path::from(moved.object()), PutPayload::from_bytes(bytes))
        .await?;
    *file = moved;
    Ok(true)
}

/// A month's bytes as a Parquet file of its own, checked against what the files table says.
async fn checked_month(store: &dyn ObjectStore, file: &ValueFile) -> Result<bytes::Bytes> {
    let bytes = month_bytes(store, file).await?;
    let whole = match file.stored {
        Stored::Year(_) => bytes.ends_with(b"PAR1"),
        _ => bytes.len() as u64 == file.size && bytes.ends_with(b"PAR1"),
    };
    if !whole {
        return Err(EngineError::corrupt(format!(
            "{}: not the {} bytes of a Parquet file the files table says",
            file.name(),
            file.size
        )));
    }
    Ok(bytes)
}

/// Writes the months `months` (of one station-year, ascending) into a new station-year file
/// and points each at its place there; the months and bytes written.
async fn write_year(
    store: &Arc<dyn ObjectStore>,
    months: &mut [ValueFile],
    generation: u64,
) -> Result<(u64, u64)> {
    let Some(first) = months.first() else {
        return Ok((0, 0));
    };
    let path = layout::year_path(&first.station, first.month.year(), generation);
    let mut sink =
        BufWriter::with_capacity(Arc::clone(store), Path::from(path.as_str()), UPLOAD_BUFFER)
            .with_max_concurrency(PARTS_AT_ONCE);
    let mut file: Option<Assembly> = None;
    let mut written = 0u64;
    let mut groups = 0u32;
    let mut places = Vec::with_capacity(months.len());
    // A file has one schema: where a month of the year has recorded gaps (`value` nullable),
    // the months without are written again with `value` nullable before they are joined.
    let has_gaps = |m: &ValueFile| m.series.iter().any(|s| s.missing > 0);
    let year_has_gaps = months.iter().any(has_gaps);
    for month in months.iter() {
        let bytes = if year_has_gaps && !has_gaps(month) {
            let mut chunks = read_month(store.as_ref(), month).await?;
            encode_month_as(&mut chunks, true)?.bytes
        } else {
            checked_month(store.as_ref(), month).await?
        };
        let footer = FileFooter::parse(&bytes, 0)?;
        if footer.row_groups() != month.series.len() {
            return Err(EngineError::corrupt(format!(
                "{}: {} row groups, the files table lists {} series",
                month.name(),
                footer.row_groups(),
                month.series.len()
            )));
        }
        if file.is_none() {
            // The file's schema and metadata are its months' (which are all alike).
            let (assembly, head) = Assembly::new(&bytes)?;
            written += put(&mut sink, &path, &head).await?;
            file = Some(assembly);
        }
        let Some(assembly) = file.as_mut() else {
            continue;
        };
        places.push((groups, written));
        for g in 0..footer.row_groups() {
            for part in assembly.copy(&footer, g, &[0, 1, 2, 3], &bytes, 0)? {
                written += put(&mut sink, &path, &part).await?;
            }
        }
        groups += footer.row_groups() as u32;
    }
    let footer = written;
    if let Some(assembly) = file {
        written += put(&mut sink, &path, &assembly.finish()?).await?;
    }
    sink.shutdown().await.map_err(|e| io_error(&path, e))?;
    for (month, (first_row_group, start)) in months.iter_mut().zip(places) {
        month.size = written;
        month.stored = Stored::Year(InYear {
            generation,
            first_row_group,
            row_groups: groups,
            start,
            footer,
        });
    }
    Ok((months.len() as u64, written))
}

/// Writes `bytes` to `sink`; how many.
async fn put(sink: &mut BufWriter, path: &str, bytes: &[u8]) -> Result<u64> {
    sink.write_all(bytes).await.map_err(|e| io_error(path, e))?;
    Ok(bytes.len() as u64)
}

/// The months of station-year files an append carries over while it rewrote other months of
/// those files, each such year's joined into a new file (by the append's `generation`), so
/// that every file the new version lists holds only its rows. `replaced`: the months of the
/// previous version the append wrote anew. Returns how many files it wrote.
pub(crate) async fn rejoin(
    store: &Arc<dyn ObjectStore>,
    carried: &mut [ValueFile],
    replaced: &[&ValueFile],
    generation: u64,
) -> Result<u64> {
    let broken: HashSet<String> = replaced
        .iter()
        .filter(|f| matches!(f.stored, Stored::Year(_)))
        .map(|f| f.object())
        .collect();
    if broken.is_empty() {
        return Ok(0);
    }
    let mut left: Vec<&mut ValueFile> = carried
        .iter_mut()
        .filter(|f| broken.contains(&f.object()))
        .collect();
    left.sort_by(|a, b| (&a.station, a.month).cmp(&(&b.station, b.month)));
    let mut rejoined = 0;
    for year in left.chunk_by_mut(|a, b| a.object() == b.object()) {
        let mut months: Vec<ValueFile> = year.iter().map(|f| (*f).clone()).collect();
        write_year(store, &mut months, generation).await?;
        for (f, joined) in year.iter_mut().zip(months) {
            **f = joined;
        }
        rejoined += 1;
    }
    Ok(rejoined)
}

fn io_error(path: &str, source: std::io::Error) -> EngineError {
    EngineError::Io {
        what: format!("{path}: writing the station-year file"),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::manifest::SeriesStats;
    use crate::model::chunk::SeriesChunk;
    use crate::write::writer::encode_month;
    use datafusion::arrow::array::{Array, Float64Array};
    use datafusion::object_store::memory::InMemory;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    /// A month file of two series with `rows` values each, stored loose.
    async fn month(store: &Arc<dyn ObjectStore>, month: &str, rows: usize) -> ValueFile {
        let month: Month = month.parse().unwrap();
        let start = chrono::NaiveDate::from_ymd_opt(month.year(), month.number(), 1)
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .unwrap()
            .and_utc()
            .timestamp_micros();
        let chunk = |p: &str, scale: f64| SeriesChunk {
            parameter: p.parse().unwrap(),
            timestamps: (0..rows as i64).map(|i| start + i * 900_000_000).collect(),
            values: (0..rows).map(|i| i as f64 * scale).collect(),
            quality: vec!["good"; rows],
        };
        let mut chunks = vec![chunk("q", 1.0), chunk("w", 0.5)];
        let encoded = encode_month(&mut chunks).unwrap();
        let file = ValueFile {
            station: "s".parse().unwrap(),
            month,
            generation: 1,
            size: encoded.bytes.len() as u64,
            series: encoded.series.into_boxed_slice(),
            stored: Stored::File,
        };
        store
            .put(&Path::from(file.object()), encoded.bytes.into())
            .await
            .unwrap();
        file
    }

    fn values(bytes: bytes::Bytes, groups: Vec<usize>) -> Vec<f64> {
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .with_row_groups(groups)
            .build()
            .unwrap();
        let mut out = Vec::new();
        for batch in reader {
            let batch = batch.unwrap();
            let v = batch.column_by_name("value").unwrap();
            let v = v.as_any().downcast_ref::<Float64Array>().unwrap();
            out.extend(v.values().iter().copied());
        }
        out
    }

    #[tokio::test]
    async fn a_station_year_file_holds_its_months_row_groups_in_order() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut months = Vec::new();
        for (m, rows) in [("2024-01", 3000), ("2024-02", 10), ("2024-03", 2000)] {
            months.push(month(&store, m, rows).await);
        }
        let loose: Vec<ValueFile> = months.clone();
        let (n, bytes) = write_year(&store, &mut months, 7).await.unwrap();
        assert_eq!(n, 3);
        let object = months[0].object();
        assert_eq!(object, "values/station=s/2024-g7.parquet");
        let year = store.get(&Path::from(object)).await.unwrap();
        let year = year.bytes().await.unwrap();
        assert_eq!(year.len() as u64, bytes);
        // A Parquet file any reader opens: every month's rows, month after month.
        let mut all = Vec::new();
        for m in &loose {
            let own = store.get(&Path::from(m.object())).await.unwrap();
            all.extend(values(own.bytes().await.unwrap(), vec![0, 1]));
        }
        assert_eq!(values(year.clone(), (0..6).collect()), all);
        for (m, original) in months.iter().zip(&loose) {
            let Stored::Year(y) = m.stored else {
                panic!("{m:?}")
            };
            assert_eq!((y.row_groups, m.size, m.series.len()), (6, bytes, 2));
            assert!(y.start < y.footer && y.footer < bytes);
            // The month read back on its own is the month as it was.
            let alone = month_bytes(store.as_ref(), m).await.unwrap();
            let own = store.get(&Path::from(original.object())).await.unwrap();
            let own = own.bytes().await.unwrap();
            assert_eq!(values(alone, vec![0, 1]), values(own, vec![0, 1]));
            let g = m.row_group(1);
            let stats: &SeriesStats = &m.series[1];
            assert_eq!(values(year.clone(), vec![g]).len() as u64, stats.rows);
        }
    }

    #[tokio::test]
    async fn a_month_file_not_as_listed_stops_the_join() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut file = month(&store, "2024-01", 10).await;
        // Listed larger than it is.
        file.size += 10;
        let e = write_year(&store, &mut [file], 2).await.unwrap_err();
        assert!(e.to_string().contains("2024-01-g1.parquet"), "{e}");
    }
}
