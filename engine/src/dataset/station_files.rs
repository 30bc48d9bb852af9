//! The files table as queries read it: by station, decoded when a station is first asked for
//! and kept within a byte budget.
//!
//! An archive of 200 000 station-years lists 2.4 M month files; decoded whole at open they
//! took ~1 GB and 7 s, most of them for stations no request asks for. A version
//! opened to be read ([`FilesByStation::open`]) reads the table a span of row groups at a
//! time and finds which rows hold each station's files of each year (the `station` and
//! `month` columns only), keeping none of its bytes: a station first asked for is decoded
//! from the row groups that hold its rows, read then (one request: its rows lie in one row
//! group or in neighbours), and only the pages that hold them are decompressed (the offset
//! index locates them; the writer cuts pages every 256 rows, so a station of 20 years is two
//! or three pages of each column). Held, the bytes were ~47 MB at 2.4 M files, growing with
//! the archive, in every process and in each version it kept open. Writers that pass over
//! every station read a batch of stations' row groups at a time ([`FilesByStation::batches`]),
//! or the table in order a span at a time ([`FilesByStation::in_order`]).
//!
//! A query decodes the years it needs: a window its own, `recent=N` the station's last year (where
//! each series with values that year has its newest month), anything else every year. Decoding a
//! year rather than the station made the first `recent=1` of a station at 2.4 M files 1.72 → 1.41
//! ms and the first one-month window 2.41 → 2.01 ms (the history of `benches/RESULTS.md`). What is
//! left of the decode is mostly skipping the rows before the year's in the pages that hold them (a
//! page is 256 rows of every column).
//!
//! A station's decoded years stay while the budget ([`FILES_CACHE_BYTES`],
//! `files_cache_bytes`) holds them, the oldest leaving first; a year read again after it left
//! is decoded again (its month files' footers are then read again too, as they are kept with
//! the files), but each series' newest month stays for good ([`SeriesNewest`]), known from the
//! start when the version lists them (`files_table::NEWEST`), else once the station was
//! decoded whole: `recent=N` within it needs no decoding, and its footer, once read, is found
//! again. Passes over every station
//! ([`FilesByStation::get_in_pass`]) keep a station only while the budget has room. Rows
//! that cannot be decoded fail the requests for their stations, naming the table's row
//! groups; others answer.

use crate::dataset::StationFiles;
use crate::dataset::catalog_file::Interner;
use crate::dataset::files_table::{FilesDecoder, PLACE_COLUMNS, decode_batches};
use crate::dataset::manifest::{SeriesStats, Stored, ValueFile};
use crate::dataset::month_file::{MonthFile, ObjectSlots};
use crate::dataset::table_bytes::{self, TableBytes};
use crate::error::{BoxError, EngineError, Result};
use crate::model::ids::{ParameterId, StationId};
use crate::model::month::Month;
use crate::parquet::assembly::FileFooter;
use crate::storage::slot_cache::{Slot, SlotCache};
use bytes::Bytes;
use datafusion::arrow::array::{Array, AsArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, FieldRef, Int32Type, Schema};
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::PageIndexPolicy;
use std::collections::{BTreeSet, HashMap};
use std::ops::{Range, RangeInclusive};
use std::sync::{Arc, LazyLock, OnceLock};

/// Default budget of the stations' files kept decoded: a station of 20 years of months with
/// two series takes ~70 KB, so this holds ~1 800 such stations.
pub const FILES_CACHE_BYTES: usize = 128 * 1024 * 1024;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 8 * 1024;

/// Bytes of the row groups a writer's pass over many stations reads and decodes at once
/// ([`FilesByStation::batches`]): ~8 row groups of the 200 000-station-year table, whose
/// ~200 stations' files take ~15 MB decoded (~20 bytes a month file in the table, ~290
/// decoded), so that the pass holds a batch's files, not a span's eight times as many.
const PASS_BATCH_BYTES: u64 = 1 << 20;

/// The budget over every station's decoded files (shared by the versions a server keeps open).
pub(crate) type FilesCache = SlotCache<Decoded>;

/// Rows of other stations a run of a station's rows may hold: writers that write stations
/// side by side (an import's workers) interleave their files, and a run a file would cost
/// memory for each, while the rows between them lie in the same pages anyway.
const RUN_GAP_ROWS: u64 = 1024;

/// Where a station's rows lie in the table, the slot of its decoded files, and what is kept of
/// them once decoded.
struct Located {
    /// The station's rows, a run for each year at least, ascending by year and then by row:
    /// one run a year for a station written in one go; rows of other stations (or years)
    /// between them, fewer than [`RUN_GAP_ROWS`] at a time, are decoded and dropped.
    years: Box<[YearRows]>,
    files: Arc<Slot<Decoded>>,
    /// Each series' newest month, as the newest-months table lists them or from the first
    /// time the station was decoded whole.
    newest: OnceLock<Box<[SeriesNewest]>>,
}

/// A run of rows of the table that holds a station's files of one year (UTC).
#[derive(Debug, Clone, PartialEq, Eq)]
struct YearRows {
    year: i32,
    rows: Range<u64>,
    /// The months the run lists, a bit each (January the lowest): an append knows whether
    /// the previous version has a file of a month without decoding the station.
    months: u16,
}

/// The bit of `month` in [`YearRows::months`].
fn month_bit(month: Month) -> u16 {
    1 << (month.number().clamp(1, 12) - 1)
}

impl Located {
    /// The years the station has files in, ascending.
    fn year_count(&self) -> usize {
        1 + self
            .years
            .windows(2)
            .filter(|w| w[0].year != w[1].year)
            .count()
    }
}

/// A station's files decoded so far: the months of the years a request needed. A window
/// decodes only the years it overlaps, so that the first request of a one-month window (or
/// of `recent=N` within a series' last year) decodes a year's rows, not twenty years'.
pub(crate) struct Decoded {
    months: Arc<StationFiles>,
    /// The years decoded, ascending.
    years: Box<[i32]>,
}

/// Stations decoded from row groups read at once (see [`FilesByStation::read_many`]): each
/// with its rows and another version's months of it to take over, the groups that hold them
/// and their bytes.
#[derive(Default)]
struct Span<'a> {
    stations: Vec<(&'a StationId, Rows<'a>, Option<&'a StationFiles>)>,
    groups: BTreeSet<usize>,
    bytes: u64,
}

/// What a read of a station needs: its files as kept, or rows of the table decoded.
enum ToRead<'a> {
    Kept(Arc<StationFiles>),
    Rows(Rows<'a>),
}

/// Rows of a station to decode: those of `years` (ascending), which lie in `runs` of rows of
/// row groups `groups`, to be kept beside its years `kept` before.
struct Rows<'a> {
    located: &'a Located,
    kept: Option<Arc<Decoded>>,
    groups: Vec<usize>,
    runs: Vec<Range<u64>>,
    years: Vec<i32>,
}

/// A series' newest month file with rows: kept for every station the version's newest-months
/// table lists, or else once it was decoded whole, outside the budget (a few hundred bytes a
/// series), so that `recent=N` within the newest month plans
/// without decoding the station again, and so that the newest month's footer and bytes, once
/// read (by `recent=N`, or for a newest value the parameters table does not give), stay where
/// that month's readers find them (they are kept in the month file's slots, which leave with a
/// station's decoded files).
pub(crate) struct SeriesNewest {
    pub(crate) parameter: ParameterId,
    pub(crate) month: Arc<MonthFile>,
}

/// Each series' [`SeriesNewest`] in `months` (a station's files, ascending by month).
fn newest_of(months: &StationFiles) -> Box<[SeriesNewest]> {
    let mut newest: Vec<SeriesNewest> = Vec::new();
    for month in months {
        for stats in month.file.series.iter().filter(|s| s.rows > 0) {
            match newest.iter_mut().find(|n| n.parameter == stats.parameter) {
                Some(n) => n.month = Arc::clone(month),
                None => newest.push(SeriesNewest {
                    parameter: stats.parameter.clone(),
                    month: Arc::clone(month),
                }),
            }
        }
    }
    newest.into_boxed_slice()
}

/// Where the table is read from: a station's row groups are read when it is decoded, and not
/// kept once it is.
struct Source {
    store: Arc<dyn ObjectStore>,
    location: Path,
    /// The table's length in bytes.
    len: u64,
}

/// A version's files table, by station; see the module doc.
pub struct FilesByStation {
    /// The table's path, to name it in errors.
    path: String,
    source: Source,
    /// Its footer with the offset index (where each page lies), without the column index.
    metadata: ArrowReaderMetadata,
    /// The first row of each row group, and the rows of all of them at the end.
    group_starts: Vec<u64>,
    stations: HashMap<StationId, Located>,
    /// Stations in the order their first rows lie in the table.
    order: Vec<StationId>,
    cache: Arc<FilesCache>,
}

impl FilesByStation {
    /// Reads the footer of the table at `path` in `store` and indexes its rows a span of row
    /// groups at a time ([`table_bytes::SPAN_BYTES`]), holding none of its bytes afterwards:
    /// a station is decoded from its row groups, read when it is asked for.
    pub(crate) async fn open(
        store: Arc<dyn ObjectStore>,
        path: String,
        cache: Arc<FilesCache>,
    ) -> Result<Self> {
        let location = Path::from(path.as_str());
        let (metadata, len) = table_bytes::read_footer(store.as_ref(), &location).await?;
        let name = format!("files table {path}");
        let metadata = ArrowReaderMetadata::try_new(Arc::new(metadata), reader_options())
            .map_err(damaged(&name))?;
        let mut indexer = Indexer::new(&metadata, &name)?;
        for span in table_bytes::spans(metadata.metadata(), 0..metadata.metadata().num_row_groups())
        {
            let groups: Vec<usize> = span.collect();
            let bytes = table_bytes::read_groups(
                store.as_ref(),
                &location,
                len,
                metadata.metadata(),
                &groups,
            )
            .await?;
            indexer.add(&bytes, &groups)?;
        }
        let source = Source {
            store,
            location,
            len,
        };
        Ok(indexer.finish(path, source, metadata, cache))
    }

    /// The bytes of row groups `groups`, read from the store.
    pub(crate) async fn bytes_of(&self, groups: &[usize]) -> Result<TableBytes> {
        let Source {
            store,
            location,
            len,
        } = &self.source;
        let metadata = self.metadata.metadata();
        table_bytes::read_groups(store.as_ref(), location, *len, metadata, groups).await
    }

    /// Keeps stations' files within `cache` from now on (those kept so far stay counted in
    /// the cache that holds them).
    pub(crate) fn keep_in(&mut self, cache: Arc<FilesCache>) {
        self.cache = cache;
    }

    pub(crate) fn cache(&self) -> &Arc<FilesCache> {
        &self.cache
    }

    /// The station's value files, ascending by month; none for a station the table does not
    /// list.
    pub(crate) async fn get(&self, station: &StationId) -> Result<Arc<StationFiles>> {
        self.read(station, i32::MIN..=i32::MAX, FilesCache::put)
            .await
    }

    /// The station's value files of at least the years `years` (UTC), ascending by month:
    /// only the rows of those years are decoded, those of other years already decoded come
    /// along.
    pub(crate) async fn get_years(
        &self,
        station: &StationId,
        years: RangeInclusive<i32>,
    ) -> Result<Arc<StationFiles>> {
        self.read(station, years, FilesCache::put).await
    }

    /// The station's value files of at least its last year, ascending by month.
    pub(crate) async fn get_last_year(&self, station: &StationId) -> Result<Arc<StationFiles>> {
        let last = self
            .stations
            .get(station)
            .and_then(|l| l.years.last())
            .map_or(i32::MAX, |y| y.year);
        self.read(station, last..=last, FilesCache::put).await
    }

    /// The station's value files like [`Self::get`], for a pass over every station: decoded
    /// ones are kept only while the budget has room, and leave before those requests decoded,
    /// so that the pass does not push out the stations requests ask for again.
    pub(crate) async fn get_in_pass(&self, station: &StationId) -> Result<Arc<StationFiles>> {
        self.read(station, i32::MIN..=i32::MAX, FilesCache::put_first_out)
            .await
    }

    /// Keeps each series' newest month as `newest` lists them (the files of a version's
    /// newest-months table, `files_table::NEWEST`), for every station at once, so that
    /// `recent=N` within them plans without decoding the station's rows first, as it does once
    /// a station was decoded whole. Files of stations the table does not list are left out.
    pub(crate) fn know_newest(&mut self, newest: Vec<ValueFile>) {
        let mut by_station: HashMap<StationId, Vec<ValueFile>> = HashMap::new();
        for mut file in newest {
            let Some((id, _)) = self.stations.get_key_value(&file.station) else {
                continue;
            };
            // The table's id, so that its text is held once.
            file.station = id.clone();
            by_station.entry(id.clone()).or_default().push(file);
        }
        for (station, files) in by_station {
            if let Some(located) = self.stations.get_mut(&station) {
                located.newest = OnceLock::from(newest_of(&month_files(files)));
            }
        }
    }

    /// Decodes here the years of every station that `previous` (the version served before
    /// this one) holds decoded, taking over its month files where this table lists the same
    /// file: what their slots hold (footer, bytes, open handle) is then found again by this
    /// version's requests, and is held once for both versions. Both tables must keep their
    /// stations' files in one cache (`keep_in`), since a month's slots are counted in the
    /// caches that filled them. Bounded by that cache's budget: only what it holds now is
    /// decoded; the row groups that hold them are read a span at a time
    /// ([`table_bytes::SPAN_BYTES`]), in the order of the table. Each series' newest month
    /// both versions know as the same file is taken over too, whether or not its station was
    /// decoded. Returns how many stations were decoded; one whose rows cannot be read or
    /// decoded here is left to the requests for it (which then fail, naming the rows).
    pub(crate) async fn carry(&mut self, previous: &FilesByStation) -> usize {
        // Newest months both versions know, first: the stations' months decoded below are
        // then these.
        for (station, here) in &mut self.stations {
            let (Some(newest), Some(there)) = (
                here.newest.get_mut(),
                previous.stations.get(station).and_then(|l| l.newest.get()),
            ) else {
                continue;
            };
            for n in newest.iter_mut() {
                if let Some(same) = there.iter().find(|t| t.month.file == n.month.file) {
                    n.month = Arc::clone(&same.month);
                }
            }
        }
        let kept: Vec<(&StationId, Arc<Decoded>)> = self
            .order
            .iter()
            .filter_map(|station| {
                let there = previous.stations.get(station)?;
                Some((station, previous.cache.get(&there.files)?))
            })
            .collect();
        let wanted = kept.iter().filter_map(|(station, kept)| {
            let (&first, &last) = (kept.years.first()?, kept.years.last()?);
            Some((*station, first..=last, Some(&*kept.months)))
        });
        self.read_many(wanted).await
    }

    /// Decodes the years `years` of each station of `wanted` that are not kept yet, months
    /// equal to one of its `carried` (another version's of the station, ascending by month)
    /// taken from there, and keeps them: the row groups that hold them are read a span of up
    /// to [`table_bytes::SPAN_BYTES`] at a time, in the order of the table (a request a span,
    /// not one a station). A station whose rows cannot be read or decoded is left to the
    /// requests for it (which then fail, naming the rows). Returns how many were decoded.
    pub(crate) async fn read_many<'a>(
        &'a self,
        wanted: impl IntoIterator<Item = (&'a StationId, RangeInclusive<i32>, Option<&'a StationFiles>)>,
    ) -> usize {
        let to_read: Vec<(&StationId, Rows<'_>, Option<&StationFiles>)> = wanted
            .into_iter()
            .filter_map(
                |(station, years, carried)| match self.to_read(station, years) {
                    ToRead::Rows(rows) => Some((station, rows, carried)),
                    ToRead::Kept(_) => None,
                },
            )
            .collect();
        let mut decoded = 0;
        for span in self.spans_of(to_read, table_bytes::SPAN_BYTES) {
            decoded += self.read_span(span).await;
        }
        decoded
    }

    /// Stations to decode, in spans whose row groups together are at most `most` bytes (a
    /// station alone where its own are more), in the order of the table.
    fn spans_of<'a>(
        &'a self,
        mut to_read: Vec<(&'a StationId, Rows<'a>, Option<&'a StationFiles>)>,
        most: u64,
    ) -> Vec<Span<'a>> {
        to_read.sort_by_key(|(_, rows, _)| rows.runs.first().map(|r| r.start));
        let mut spans = Vec::new();
        let mut span = Span::default();
        for (station, rows, carried) in to_read {
            let more = self.bytes_beyond(&span.groups, &rows.groups);
            if !span.stations.is_empty() && span.bytes + more > most {
                spans.push(std::mem::take(&mut span));
            }
            span.bytes += self.bytes_beyond(&span.groups, &rows.groups);
            span.groups.extend(&rows.groups);
            span.stations.push((station, rows, carried));
        }
        if !span.stations.is_empty() {
            spans.push(span);
        }
        spans
    }

    /// Bytes of the row groups `groups` that `held` does not hold.
    fn bytes_beyond(&self, held: &BTreeSet<usize>, groups: &[usize]) -> u64 {
        groups
            .iter()
            .filter(|g| !held.contains(g))
            .map(|&g| u64::try_from(self.metadata.metadata().row_group(g).compressed_size()))
            .map(|size| size.unwrap_or(0))
            .sum()
    }

    /// `stations` in batches for a writer's pass over them ([`Self::files_of`] a batch at a
    /// time), in the order of the table: each batch's stations lie in row groups of at most
    /// [`PASS_BATCH_BYTES`] (a station alone where its own are more). Stations the table does
    /// not list go in the last batch.
    pub(crate) fn batches(
        &self,
        stations: impl IntoIterator<Item = StationId>,
    ) -> Vec<Vec<StationId>> {
        let (listed, unlisted): (Vec<StationId>, Vec<StationId>) = stations
            .into_iter()
            .partition(|s| self.stations.contains_key(s));
        let to_read: Vec<_> = listed
            .iter()
            .filter_map(|station| match self.to_read(station, i32::MIN..=i32::MAX) {
                ToRead::Rows(rows) => Some((station, rows, None)),
                ToRead::Kept(_) => None,
            })
            .collect();
        let mut batches: Vec<Vec<StationId>> = self
            .spans_of(to_read, PASS_BATCH_BYTES)
            .into_iter()
            .map(|span| {
                span.stations
                    .into_iter()
                    .map(|(s, _, _)| s.clone())
                    .collect()
            })
            .collect();
        // Those kept decoded (none for a writer's table, whose budget is 0) need no read.
        let kept = listed
            .iter()
            .filter(|s| matches!(self.to_read(s, i32::MIN..=i32::MAX), ToRead::Kept(_)));
        let rest: Vec<StationId> = kept.chain(&unlisted).cloned().collect();
        if !rest.is_empty() {
            batches.push(rest);
        }
        batches
    }

    /// Each of `stations` with its value files (ascending by month; none for a station the
    /// table does not list), for a writer's pass: those kept decoded first, then the others
    /// in the order of the table, the row groups that hold them read together, a span of up
    /// to [`table_bytes::SPAN_BYTES`] at a time (a batch of [`Self::batches`] is one span of
    /// its own table), rather than a request a station. An error names the row groups that
    /// cannot be read or decoded.
    pub(crate) async fn files_of(
        &self,
        stations: &[StationId],
    ) -> Result<Vec<(StationId, Vec<ValueFile>)>> {
        let files = |months: &StationFiles| months.iter().map(|m| m.file.clone()).collect();
        let mut out = Vec::with_capacity(stations.len());
        let mut to_read = Vec::new();
        for station in stations {
            match self.to_read(station, i32::MIN..=i32::MAX) {
                ToRead::Kept(months) => out.push((station.clone(), files(&months))),
                ToRead::Rows(rows) => to_read.push((station, rows, None)),
            }
        }
        for span in self.spans_of(to_read, table_bytes::SPAN_BYTES) {
            let groups: Vec<usize> = span.groups.into_iter().collect();
            let bytes = self.bytes_of(&groups).await?;
            for (station, rows, _) in span.stations {
                let months = self.decoded(station, rows, &bytes, FilesCache::put, None)?;
                out.push((station.clone(), files(&months)));
            }
        }
        Ok(out)
    }

    /// Decodes the stations of `span`, from its row groups read at once.
    async fn read_span(&self, span: Span<'_>) -> usize {
        let groups: Vec<usize> = span.groups.into_iter().collect();
        let bytes = match self.bytes_of(&groups).await {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::debug!("row groups {groups:?} not read: {e}");
                return 0;
            }
        };
        let mut decoded = 0;
        for (station, rows, carried) in span.stations {
            match self.decoded(station, rows, &bytes, FilesCache::put, carried) {
                Ok(_) => decoded += 1,
                Err(e) => tracing::debug!("station {station} not decoded: {e}"),
            }
        }
        decoded
    }

    /// The station's files of at least `wanted` years: those kept, with the years not kept
    /// yet decoded (their row groups read, where the table is in the store) and kept beside
    /// them by `keep`.
    async fn read(
        &self,
        station: &StationId,
        wanted: RangeInclusive<i32>,
        keep: impl FnOnce(&FilesCache, &Arc<Slot<Decoded>>, Arc<Decoded>, usize),
    ) -> Result<Arc<StationFiles>> {
        match self.to_read(station, wanted) {
            ToRead::Kept(months) => Ok(months),
            ToRead::Rows(rows) => {
                let bytes = self.bytes_of(&rows.groups).await?;
                self.decoded(station, rows, &bytes, keep, None)
            }
        }
    }

    /// What reading `wanted` years of the station needs: nothing, or rows decoded.
    fn to_read(&self, station: &StationId, wanted: RangeInclusive<i32>) -> ToRead<'_> {
        static NONE: LazyLock<Arc<StationFiles>> = LazyLock::new(Arc::default);
        let Some(located) = self.stations.get(station) else {
            return ToRead::Kept(Arc::clone(&NONE));
        };
        let kept = self.cache.get(&located.files);
        let is_kept = |year: i32| {
            kept.as_ref()
                .is_some_and(|k| k.years.binary_search(&year).is_ok())
        };
        let missing: Vec<&YearRows> = located
            .years
            .iter()
            .filter(|y| wanted.contains(&y.year) && !is_kept(y.year))
            .collect();
        if missing.is_empty() {
            return ToRead::Kept(kept.map_or_else(|| Arc::clone(&NONE), |k| Arc::clone(&k.months)));
        }
        let mut years: Vec<i32> = missing.iter().map(|y| y.year).collect();
        years.dedup();
        let runs = selected_runs(&missing);
        ToRead::Rows(Rows {
            located,
            kept,
            groups: self.groups_of(&runs),
            runs,
            years,
        })
    }

    /// The station's files once `rows` are decoded from `bytes`, kept by `keep` with those
    /// decoded before; months equal to one of `carried` are taken from there.
    fn decoded(
        &self,
        station: &StationId,
        rows: Rows<'_>,
        bytes: &TableBytes,
        keep: impl FnOnce(&FilesCache, &Arc<Slot<Decoded>>, Arc<Decoded>, usize),
        carried: Option<&StationFiles>,
    ) -> Result<Arc<StationFiles>> {
        let Rows {
            located,
            kept,
            groups,
            runs,
            years: new_years,
        } = rows;
        let mut files = self.decode(bytes, &groups, &runs)?;
        files.retain(|f| &f.station == station && new_years.binary_search(&f.month.year()).is_ok());
        let mut months = month_files(files);
        if let Some(newest) = located.newest.get() {
            // The newest months as kept, so that what their slots hold is found again.
            for n in newest {
                if let Ok(i) = months.binary_search_by_key(&n.month.file.month, |m| m.file.month) {
                    months[i] = Arc::clone(&n.month);
                }
            }
        }
        if let Some(carried) = carried {
            take_over(&mut months, carried);
        }
        let mut years = new_years;
        if let Some(kept) = &kept {
            months.extend(kept.months.iter().cloned());
            months.sort_by_key(|m| m.file.month);
            years.extend_from_slice(&kept.years);
            years.sort_unstable();
        }
        if years.len() == located.year_count() && located.newest.get().is_none() {
            let _ = located.newest.set(newest_of(&months));
        }
        let months = Arc::new(months);
        let size = size_of::<Decoded>()
            + size_of::<StationFiles>()
            + years.len() * size_of::<i32>()
            + months
                .iter()
                .map(|m| {
                    size_of::<Arc<MonthFile>>()
                        + size_of::<MonthFile>()
                        + m.file.series.len() * size_of::<SeriesStats>()
                })
                .sum::<usize>();
        let decoded = Decoded {
            months: Arc::clone(&months),
            years: years.into_boxed_slice(),
        };
        keep(&self.cache, &located.files, Arc::new(decoded), size);
        Ok(months)
    }

    /// The series' newest month with rows, once its station was decoded (None before, and
    /// for a series without rows).
    pub(crate) fn newest(
        &self,
        station: &StationId,
        parameter: &ParameterId,
    ) -> Option<&SeriesNewest> {
        self.stations
            .get(station)?
            .newest
            .get()?
            .iter()
            .find(|n| n.parameter == *parameter)
    }

    /// Every station the table lists, in the order of its rows.
    pub fn stations(&self) -> &[StationId] {
        &self.order
    }

    /// The row after the station's last in the table (none for a station it does not list):
    /// a pass in the table's order ([`Self::in_order`]) has seen all of the station's files
    /// once it has passed that many rows.
    pub fn rows_end(&self, station: &StationId) -> Option<u64> {
        let located = self.stations.get(station)?;
        located.years.iter().map(|y| y.rows.end).max()
    }

    /// Whether the table lists a file of the station's `month`, known from its index without
    /// a read: an append looks up the previous file of each month it writes, and most of
    /// them (a new day at the end of every series) have none.
    pub(crate) fn lists_month(&self, station: &StationId, month: Month) -> bool {
        self.stations.get(station).is_some_and(|located| {
            located
                .years
                .iter()
                .any(|y| y.year == month.year() && y.months & month_bit(month) != 0)
        })
    }

    /// Every file of the table in the order of its rows, a batch of rows at a time
    /// ([`InOrder::next`]), its row groups read a span of up to [`table_bytes::SPAN_BYTES`]
    /// at a time, none kept: for a writer that carries a version over whole, one pass through
    /// the table's pages, rather than every station decoded through the offset index
    /// (skipping rows inside pages), which was most of a one-value append's 12 s at 2.4 M
    /// files; and for SQL over every station.
    pub(crate) fn in_order(&self) -> InOrder<'_> {
        let spans: Vec<Range<usize>> = self.spans().collect();
        InOrder {
            table: self,
            spans: spans.into_iter(),
            batches: None,
            decoder: Some(FilesDecoder::default()),
            texts: Interner::default(),
        }
    }

    /// Every file of the table in the order of its rows, handed to `each` a batch of rows at
    /// a time, as [`Self::in_order`] gives them.
    pub(crate) async fn each_in_order(&self, mut each: impl FnMut(Vec<ValueFile>)) -> Result<()> {
        let mut files = self.in_order();
        while let Some(batch) = files.next().await? {
            each(batch);
        }
        Ok(())
    }

    /// The table's row groups in runs of neighbours of up to [`table_bytes::SPAN_BYTES`]
    /// together: what a pass over the whole table reads at once ([`Self::bytes_of`]).
    pub(crate) fn spans(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        table_bytes::spans(self.metadata.metadata(), 0..self.row_groups())
    }

    /// Row groups of the table.
    pub fn row_groups(&self) -> usize {
        self.group_starts.len() - 1
    }

    /// The rows of row group `group`.
    pub fn group_rows(&self, group: usize) -> Range<u64> {
        match (
            self.group_starts.get(group),
            self.group_starts.get(group + 1),
        ) {
            (Some(&start), Some(&end)) => start..end,
            _ => 0..0,
        }
    }

    /// For each row group, whether it holds rows of one of `stations`, or may: a station's
    /// runs take in the few rows of others between its own, so a group at a run's edge may be
    /// said to hold the station without doing so.
    pub fn groups_holding<'a>(
        &self,
        stations: impl IntoIterator<Item = &'a StationId>,
    ) -> Vec<bool> {
        let mut holding = vec![false; self.row_groups()];
        for located in stations.into_iter().filter_map(|s| self.stations.get(s)) {
            for run in located.years.iter().map(|y| &y.rows) {
                // The group that holds the run's first row, and those after it that it
                // reaches into.
                let mut g = self
                    .group_starts
                    .partition_point(|&start| start <= run.start)
                    .saturating_sub(1);
                while g < holding.len() && self.group_starts[g] < run.end {
                    holding[g] = true;
                    g += 1;
                }
            }
        }
        holding
    }

    /// The files of row group `group`, in the order of their rows (a file may be cut at
    /// either end in tables written before row groups held whole files), from `read`, which
    /// holds the group's bytes ([`Self::bytes_of`]).
    pub(crate) fn group_files(&self, read: &TableBytes, group: usize) -> Result<Vec<ValueFile>> {
        let name = format!("files table {}, row group {group}", self.path);
        let rows = self.group_rows(group);
        let rows = to_usize(rows.end - rows.start)?;
        let batches =
            ParquetRecordBatchReaderBuilder::new_with_metadata(read.clone(), self.metadata.clone())
                .with_row_groups(vec![group])
                .with_batch_size(BATCH_ROWS)
                .build()
                .map_err(damaged(&name))?
                .map(|b| b.map_err(damaged(&name)));
        decode_batches(rows, batches, &mut Interner::default()).map_err(damaged(&name))
    }

    /// The bytes of row group `group` from `read`, which holds them ([`Self::bytes_of`]),
    /// and the offset of their first in the table: what a writer copies the group from
    /// ([`crate::dataset::files_table::FilesTableWriter::copy_group`]).
    pub(crate) fn group_bytes(&self, read: &TableBytes, group: usize) -> Result<(Bytes, u64)> {
        let name = format!("files table {}, row group {group}", self.path);
        let metadata = self.metadata.metadata();
        let range = metadata
            .row_groups()
            .get(group)
            .and_then(table_bytes::group_range)
            .ok_or_else(|| EngineError::corrupt(format!("{name}: no columns")))?;
        let bytes = read.range(range.clone()).map_err(damaged(&name))?;
        Ok((bytes, range.start))
    }

    /// The table's footer as a writer copies its row groups with it
    /// ([`crate::dataset::files_table::FilesTableWriter::copy_group`]): the table's bytes
    /// after its last row group's (its page index and footer), read from the store.
    pub(crate) async fn copy_footer(&self) -> Result<FileFooter> {
        let name = format!("files table {}", self.path);
        let metadata = self.metadata.metadata();
        let data_end = metadata
            .row_groups()
            .iter()
            .filter_map(table_bytes::group_range)
            .map(|r| r.end)
            .max()
            .unwrap_or(0);
        let Source {
            store,
            location,
            len,
        } = &self.source;
        if data_end > *len {
            return Err(EngineError::corrupt(format!(
                "{name}: row groups end past its {len} bytes"
            )));
        }
        let tail = store.get_range(location, data_end..*len).await?;
        FileFooter::parse(&tail, data_end).map_err(damaged(&name))
    }

    /// Bytes held by the table's footer and the index of its stations (an estimate); the
    /// decoded files are the cache's.
    pub(crate) fn memory(&self) -> usize {
        let index: usize = self
            .stations
            .values()
            .map(|l| size_of::<(StationId, Located)>() + size_of_val(&*l.years) + 64)
            .sum();
        let newest: usize = self
            .stations
            .values()
            .filter_map(|l| l.newest.get())
            .map(|n| {
                n.len()
                    * (size_of::<SeriesNewest>()
                        + size_of::<MonthFile>()
                        + 2 * size_of::<SeriesStats>())
            })
            .sum();
        self.metadata.metadata().memory_size() + index + newest
    }

    /// The row groups that hold rows of `runs`.
    fn groups_of(&self, runs: &[Range<u64>]) -> Vec<usize> {
        (0..self.group_starts.len() - 1)
            .filter(|&g| {
                let rows = self.group_starts[g]..self.group_starts[g + 1];
                runs.iter()
                    .any(|r| r.start < rows.end && rows.start < r.end)
            })
            .collect()
    }

    /// The files of the rows `runs`, from `bytes` of the row groups `groups` that hold them,
    /// read with a selection of just those rows (pages without them are not decompressed).
    fn decode(
        &self,
        bytes: &TableBytes,
        groups: &[usize],
        runs: &[Range<u64>],
    ) -> Result<Vec<ValueFile>> {
        let name = format!("files table {}, row groups {groups:?}", self.path);
        // The selection counts the rows of the chosen groups only.
        let mut selectors = Vec::new();
        let mut rows = 0usize;
        for &g in groups {
            let mut at = self.group_starts[g];
            let end = self.group_starts[g + 1];
            for r in runs {
                let (from, to) = (r.start.max(at), r.end.min(end));
                if from < to {
                    selectors.push(RowSelector::skip(to_usize(from - at)?));
                    selectors.push(RowSelector::select(to_usize(to - from)?));
                    rows += to_usize(to - from)?;
                    at = to;
                }
            }
            selectors.push(RowSelector::skip(to_usize(end - at)?));
        }
        let batches = ParquetRecordBatchReaderBuilder::new_with_metadata(
            bytes.clone(),
            self.metadata.clone(),
        )
        .with_projection(self.projection(groups))
        .with_row_groups(groups.to_vec())
        .with_row_selection(RowSelection::from(selectors))
        // The reader sets aside a batch's room in every column: room for a station's ~500
        // rows rather than 8 Ki made a `recent=1` of a station not asked before 4 % faster
        // (1.78 against 1.86 ms, 300 stations at 2.4 M files, `perf` showed fresh pages).
        .with_batch_size(rows.clamp(1, BATCH_ROWS))
        .build()
        .map_err(damaged(&name))?
        .map(|b| b.map_err(damaged(&name)));
        decode_batches(rows, batches, &mut Interner::default()).map_err(damaged(&name))
    }
}

impl FilesByStation {
    /// The columns to decode from row groups `groups`: all but those of [`PLACE_COLUMNS`]
    /// that are null in every row of them (as in an archive of month files of their own).
    /// Each column costs a page or two to decompress and skip through whatever its values:
    /// leaving the six out made first requests of stations at 2.4 M files 1-6 % faster
    /// (`benches/first_ab.py`, two runs in both orders).
    fn projection(&self, groups: &[usize]) -> ProjectionMask {
        let meta = self.metadata.metadata();
        let schema = meta.file_metadata().schema_descr();
        let all_null = |c: usize| {
            groups.iter().all(|&g| {
                let group = meta.row_group(g);
                let nulls = group
                    .column(c)
                    .statistics()
                    .and_then(|s| s.null_count_opt());
                u64::try_from(group.num_rows()).is_ok_and(|rows| nulls == Some(rows))
            })
        };
        let kept = (0..schema.num_columns())
            .filter(|&c| !(PLACE_COLUMNS.contains(&schema.column(c).name()) && all_null(c)));
        ProjectionMask::leaves(schema, kept)
    }
}

/// How the table is read: its offset index (where each page lies), not its column index.
fn reader_options() -> ArrowReaderOptions {
    ArrowReaderOptions::new()
        .with_column_index_policy(PageIndexPolicy::Skip)
        .with_offset_index_policy(PageIndexPolicy::Optional)
}

/// Finds each station's runs of rows of each year, from the table's `station` and `month`
/// columns, row group after row group.
/// A pass through a table's files in the order of its rows ([`FilesByStation::in_order`]).
pub(crate) struct InOrder<'a> {
    table: &'a FilesByStation,
    /// The spans of row groups not read yet.
    spans: std::vec::IntoIter<Range<usize>>,
    /// The batches of the span read.
    batches: Option<ParquetRecordBatchReader>,
    /// None once the last files were given.
    decoder: Option<FilesDecoder>,
    texts: Interner,
}

impl InOrder<'_> {
    /// The files of the next batch of rows (a file cut between batches comes whole with the
    /// later one); None once every row was given.
    pub(crate) async fn next(&mut self) -> Result<Option<Vec<ValueFile>>> {
        let name = format!("files table {}", self.table.path);
        loop {
            let Some(decoder) = self.decoder.as_mut() else {
                return Ok(None);
            };
            if let Some(batch) = self.batches.as_mut().and_then(Iterator::next) {
                let batch = batch.map_err(damaged(&name))?;
                let mut files = Vec::new();
                decoder
                    .push(&batch, &mut self.texts, &mut files)
                    .map_err(damaged(&name))?;
                return Ok(Some(files));
            }
            self.batches = None;
            let Some(span) = self.spans.next() else {
                let mut files = Vec::new();
                if let Some(decoder) = self.decoder.take() {
                    decoder.finish(&mut files).map_err(damaged(&name))?;
                }
                return Ok(Some(files));
            };
            let groups: Vec<usize> = span.collect();
            let read = self.table.bytes_of(&groups).await?;
            let batches = ParquetRecordBatchReaderBuilder::new_with_metadata(
                read,
                self.table.metadata.clone(),
            )
            .with_row_groups(groups)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(damaged(&name))?;
            self.batches = Some(batches);
        }
    }
}

struct Indexer {
    name: String,
    /// The footer with `station` and `month` read as dictionaries (see [`places_as_keys`]).
    keyed: ArrowReaderMetadata,
    located_by: ProjectionMask,
    /// The first row of each row group, and the rows of all of them at the end.
    group_starts: Vec<u64>,
    texts: Interner,
    /// Each station's runs, in the order of its first row; looked up by id once per
    /// dictionary value of a batch (a row group's stations), a row compared with the one
    /// before by its key.
    runs: Vec<(StationId, Vec<YearRows>)>,
    index: HashMap<StationId, usize>,
    /// The station (in `runs`), year and run of the row before.
    last: Option<(usize, i32, usize)>,
    /// The next row's number.
    row: u64,
}

impl Indexer {
    fn new(metadata: &ArrowReaderMetadata, name: &str) -> Result<Self> {
        let mut group_starts = vec![0u64];
        for g in metadata.metadata().row_groups() {
            let rows = u64::try_from(g.num_rows()).unwrap_or(0);
            group_starts.push(group_starts[group_starts.len() - 1] + rows);
        }
        Ok(Self {
            name: name.to_owned(),
            keyed: places_as_keys(metadata).map_err(damaged(name))?,
            located_by: ProjectionMask::columns(metadata.parquet_schema(), ["station", "month"]),
            group_starts,
            texts: Interner::default(),
            runs: Vec::new(),
            index: HashMap::new(),
            last: None,
            row: 0,
        })
    }

    /// Indexes the rows of row groups `groups` (the next ones, ascending), whose bytes `bytes`
    /// holds.
    fn add(&mut self, bytes: &TableBytes, groups: &[usize]) -> Result<()> {
        let name = self.name.clone();
        // A reader a row group: a batch that spans two row groups (two dictionaries) is built
        // again value by value into one dictionary, which cost more than reading texts.
        for &g in groups {
            let batches = ParquetRecordBatchReaderBuilder::new_with_metadata(
                bytes.clone(),
                self.keyed.clone(),
            )
            .with_projection(self.located_by.clone())
            .with_row_groups(vec![g])
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(damaged(&name))?;
            for batch in batches {
                self.add_batch(&batch.map_err(damaged(&name))?)?;
            }
        }
        Ok(())
    }

    fn add_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let name = &self.name;
        let (station_keys, station_ids) = keyed(batch, "station", name)?;
        let (month_keys, month_texts) = keyed(batch, "month", name)?;
        // Each dictionary value's station (in `runs`) and year with its month's bit, once a
        // row used it.
        let mut stations: Vec<Option<usize>> = vec![None; station_ids.len()];
        let mut years: Vec<Option<(i32, u16)>> = vec![None; month_texts.len()];
        let runs = &mut self.runs;
        let row = &mut self.row;
        for (&station_key, &month_key) in station_keys.iter().zip(month_keys) {
            let (year, bit) = match years.get(month_key as usize) {
                Some(Some(year)) => *year,
                _ => {
                    let text = dictionary_value(month_texts, month_key, name)?;
                    let month: Month = text
                        .parse()
                        .map_err(|e: String| EngineError::corrupt(format!("{name}: {e}")))?;
                    let year = (month.year(), month_bit(month));
                    years[month_key as usize] = Some(year);
                    year
                }
            };
            let s = match stations.get(station_key as usize) {
                Some(Some(s)) => *s,
                _ => {
                    let text = dictionary_value(station_ids, station_key, name)?;
                    let id = self.texts.id(text, "files table")?;
                    let s = match self.index.get(&id) {
                        Some(&s) => s,
                        None => {
                            self.index.insert(id.clone(), runs.len());
                            runs.push((id, Vec::new()));
                            runs.len() - 1
                        }
                    };
                    stations[station_key as usize] = Some(s);
                    s
                }
            };
            if let Some((ls, y, run)) = self.last
                && ls == s
                && y == year
            {
                let run = &mut runs[s].1[run];
                run.rows.end = *row + 1;
                run.months |= bit;
                *row += 1;
                continue;
            }
            let years = &mut runs[s].1;
            let run = match years.iter().rposition(|r| r.year == year) {
                Some(j) if *row - years[j].rows.end <= RUN_GAP_ROWS => {
                    years[j].rows.end = *row + 1;
                    years[j].months |= bit;
                    j
                }
                _ => {
                    years.push(YearRows {
                        year,
                        rows: *row..*row + 1,
                        months: bit,
                    });
                    years.len() - 1
                }
            };
            self.last = Some((s, year, run));
            *row += 1;
        }
        Ok(())
    }

    fn finish(
        self,
        path: String,
        source: Source,
        metadata: ArrowReaderMetadata,
        cache: Arc<FilesCache>,
    ) -> FilesByStation {
        let order: Vec<StationId> = self.runs.iter().map(|(id, _)| id.clone()).collect();
        let stations = self
            .runs
            .into_iter()
            .map(|(id, mut years)| {
                years.sort_by_key(|y| (y.year, y.rows.start));
                let located = Located {
                    years: years.into_boxed_slice(),
                    files: Arc::default(),
                    newest: OnceLock::new(),
                };
                (id, located)
            })
            .collect();
        FilesByStation {
            path,
            source,
            metadata,
            group_starts: self.group_starts,
            stations,
            order,
            cache,
        }
    }
}

/// The rows of `years`, as ascending runs that do not overlap (a year's run may hold rows of
/// another, see [`Located::years`]).
fn selected_runs(years: &[&YearRows]) -> Vec<Range<u64>> {
    let mut rows: Vec<Range<u64>> = years.iter().map(|y| y.rows.clone()).collect();
    rows.sort_by_key(|r| r.start);
    let mut runs: Vec<Range<u64>> = Vec::with_capacity(rows.len());
    for r in rows {
        match runs.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => runs.push(r),
        }
    }
    runs
}

/// `metadata` with the `station` and `month` columns read as dictionaries (Int32 keys, the
/// texts of their row group's dictionary page): indexing the table then compares a row's
/// keys with the row before's and looks up and parses each text once per batch. Read as text,
/// every row's two strings were copied out of the dictionary and compared (the two index
/// passes of a one-value append at 2.4 M files were 39 % of its CPU, `perf`).
fn places_as_keys(
    metadata: &ArrowReaderMetadata,
) -> std::result::Result<ArrowReaderMetadata, ParquetError> {
    let keyed = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let fields: Vec<FieldRef> = metadata
        .schema()
        .fields()
        .iter()
        .map(|f| match f.name().as_str() {
            "station" | "month" => Arc::new(f.as_ref().clone().with_data_type(keyed.clone())),
            _ => Arc::clone(f),
        })
        .collect();
    let schema = Schema::new_with_metadata(fields, metadata.schema().metadata().clone());
    let options = ArrowReaderOptions::new()
        .with_schema(Arc::new(schema))
        .with_column_index_policy(PageIndexPolicy::Skip)
        .with_offset_index_policy(PageIndexPolicy::Optional);
    ArrowReaderMetadata::try_new(Arc::clone(metadata.metadata()), options)
}

/// The keys of the dictionary column `column` of `batch` (of `table`) and its texts.
fn keyed<'a>(
    batch: &'a RecordBatch,
    column: &str,
    table: &str,
) -> Result<(&'a [i32], &'a StringArray)> {
    let keys = batch
        .column_by_name(column)
        .and_then(|c| c.as_dictionary_opt::<Int32Type>())
        .ok_or_else(|| EngineError::corrupt(format!("{table}: no column {column} of texts")))?;
    let texts = keys
        .values()
        .as_string_opt::<i32>()
        .ok_or_else(|| EngineError::corrupt(format!("{table}: column {column} is not text")))?;
    Ok((keys.keys().values(), texts))
}

/// The text of dictionary key `key` of `texts`.
fn dictionary_value<'a>(texts: &'a StringArray, key: i32, table: &str) -> Result<&'a str> {
    usize::try_from(key)
        .ok()
        .filter(|&k| k < texts.len())
        .map(|k| texts.value(k))
        .ok_or_else(|| EngineError::corrupt(format!("{table}: dictionary key {key} out of range")))
}

fn to_usize(rows: u64) -> Result<usize> {
    usize::try_from(rows).map_err(|_| EngineError::corrupt(format!("files table: {rows} rows")))
}

/// An error of the table's bytes, naming `what` of it.
fn damaged<E: Into<BoxError>>(what: &str) -> impl Fn(E) -> EngineError + '_ {
    move |e| EngineError::corrupt_by(what.to_owned(), e)
}

/// Puts in `months` each month of `carried` (both ascending by month) that is the same file.
fn take_over(months: &mut StationFiles, carried: &StationFiles) {
    for m in months.iter_mut() {
        if let Ok(i) = carried.binary_search_by_key(&m.file.month, |c| c.file.month)
            && carried[i].file == m.file
        {
            *m = Arc::clone(&carried[i]);
        }
    }
}

/// A station's month files, ascending by month; the months of one station-year file share its
/// slots (one footer for all of them).
fn month_files(files: Vec<ValueFile>) -> StationFiles {
    let mut years: HashMap<(i32, u64), Arc<ObjectSlots>> = HashMap::new();
    let mut months: StationFiles = files
        .into_iter()
        .map(|f| {
            Arc::new(match f.stored {
                Stored::Year(y) => {
                    let slots = years.entry((f.month.year(), y.generation)).or_default();
                    MonthFile::sharing(f, Arc::clone(slots))
                }
                _ => MonthFile::new(f),
            })
        })
        .collect();
    months.sort_by_key(|m| m.file.month);
    months
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::catalog_file::from_parquet;
    use crate::dataset::files_table::{FilesTableWriter, decode_files};
    use crate::model::month::Month;
    use crate::storage::counted::{Counted, RequestCounts, RequestKind};
    use datafusion::object_store::memory::InMemory;
    use datafusion::object_store::path::Path;
    use datafusion::object_store::{ObjectStore, ObjectStoreExt};
    use datafusion::parquet::arrow::ArrowWriter;
    use datafusion::parquet::file::properties::WriterProperties;

    fn file(station: &str, month: Month) -> ValueFile {
        let series = |parameter: &str| SeriesStats {
            parameter: parameter.parse().unwrap(),
            rows: 3,
            missing: 0,
            min: 0,
            max: 2,
        };
        ValueFile {
            station: station.parse().unwrap(),
            month,
            generation: 1,
            size: 100,
            series: Box::new([series("p"), series("q")]),
            stored: Stored::File,
        }
    }

    fn months(n: usize) -> impl Iterator<Item = Month> {
        (0..n).map(|i| {
            format!("{}-{:02}", 2001 + i / 12, i % 12 + 1)
                .parse()
                .unwrap()
        })
    }

    /// 40 stations of 120 months (two row groups, station `s34` across both), and `late`
    /// with months at the start and the end of the table.
    fn listed() -> Vec<ValueFile> {
        let mut files: Vec<ValueFile> = months(6).map(|m| file("late", m)).collect();
        for s in 0..40 {
            files.extend(months(120).map(|m| file(&format!("s{s}"), m)));
        }
        files.extend(months(12).skip(6).map(|m| file("late", m)));
        files
    }

    async fn table(files: Vec<ValueFile>) -> Bytes {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut table = FilesTableWriter::new(Arc::clone(&store), 1).unwrap();
        for f in files {
            table.add(f).await.unwrap();
        }
        let path = table.finish().await.unwrap().files;
        let got = store.get(&Path::from(path)).await.unwrap();
        got.bytes().await.unwrap()
    }

    /// The same rows with row groups of `rows` rows, cut anywhere (as tables were written
    /// before row groups held whole files).
    fn regrouped(bytes: Bytes, rows: usize) -> Bytes {
        rewritten(
            bytes,
            WriterProperties::builder().set_max_row_group_row_count(Some(rows)),
        )
    }

    /// The same rows with texts written as they are (no dictionary pages), as another writer
    /// might (or the parquet crate, past its dictionary's size limit).
    fn without_dictionaries(bytes: Bytes) -> Bytes {
        rewritten(
            bytes,
            WriterProperties::builder()
                .set_max_row_group_row_count(Some(4000))
                .set_dictionary_enabled(false),
        )
    }

    fn rewritten(
        bytes: Bytes,
        props: datafusion::parquet::file::properties::WriterPropertiesBuilder,
    ) -> Bytes {
        let (_, batches) = from_parquet(bytes, "test").unwrap();
        let batches: Vec<_> = batches.map(|b| b.unwrap()).collect();
        let props = props.build();
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, batches[0].schema(), Some(props)).unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        w.close().unwrap();
        Bytes::from(out)
    }

    /// The table `bytes`, in a store of its own, indexed by station, its stations' decoded
    /// files kept within `budget`.
    async fn by_station(bytes: Bytes, budget: usize) -> FilesByStation {
        in_store(bytes, budget).await.unwrap()
    }

    async fn in_store(bytes: Bytes, budget: usize) -> Result<FilesByStation> {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = "catalog/files-1.parquet";
        store.put(&Path::from(path), bytes.into()).await.unwrap();
        let cache = Arc::new(FilesCache::new(budget));
        FilesByStation::open(store, path.into(), cache).await
    }

    /// Writes `bytes` (the table `index` was opened from) to `path` of `store` again, with the
    /// first column chunk of row group `group` spoiled.
    async fn spoil_group(
        store: &dyn ObjectStore,
        path: &Path,
        bytes: &Bytes,
        index: &FilesByStation,
        group: usize,
    ) {
        let (start, len) = index
            .metadata
            .metadata()
            .row_group(group)
            .column(0)
            .byte_range();
        let mut damaged = bytes.to_vec();
        damaged[start as usize..(start + len) as usize].fill(0xff);
        store.put(path, Bytes::from(damaged).into()).await.unwrap();
    }

    /// Each station's files as the whole table lists them, ascending by month.
    fn expected(bytes: &Bytes, station: &StationId) -> Vec<ValueFile> {
        let all = decode_files(bytes.clone(), &mut Interner::default()).unwrap();
        let mut files: Vec<ValueFile> = all.into_iter().filter(|f| &f.station == station).collect();
        files.sort_by_key(|f| f.month);
        files
    }

    /// A station's runs of rows, as (year, rows).
    fn runs(index: &FilesByStation, station: &str) -> Vec<(i32, Range<u64>)> {
        let located = &index.stations[&station.parse::<StationId>().unwrap()];
        located
            .years
            .iter()
            .map(|y| (y.year, y.rows.clone()))
            .collect()
    }

    async fn got(index: &FilesByStation, station: &StationId) -> Vec<ValueFile> {
        let months = index.get(station).await.unwrap();
        months.iter().map(|m| m.file.clone()).collect()
    }

    #[tokio::test]
    async fn each_station_gets_its_files_from_its_row_groups() {
        let bytes = table(listed()).await;
        for bytes in [
            bytes.clone(),
            regrouped(bytes.clone(), 7),
            without_dictionaries(bytes),
        ] {
            let index = by_station(bytes.clone(), FILES_CACHE_BYTES).await;
            assert!(index.metadata.metadata().num_row_groups() >= 2);
            assert_eq!(index.stations().len(), 41);
            assert_eq!(index.stations()[0].as_str(), "late");
            assert_eq!(runs(&index, "late"), [(2001, 0..12), (2001, 9612..9624)]);
            let end = |s: &str| index.rows_end(&s.parse().unwrap());
            assert_eq!(
                (end("late"), end("s0"), end("nowhere")),
                (Some(9624), Some(252), None)
            );
            for station in index.stations() {
                assert_eq!(
                    got(&index, station).await,
                    expected(&bytes, station),
                    "{station}"
                );
            }
            assert!(
                index
                    .get(&"nowhere".parse().unwrap())
                    .await
                    .unwrap()
                    .is_empty()
            );
        }
    }

    #[tokio::test]
    async fn files_of_stations_written_side_by_side_are_one_run_a_year_each() {
        let mut files = Vec::new();
        for m in months(24) {
            files.extend(["a", "b"].map(|s| file(s, m)));
        }
        files.extend(months(3).map(|m| file("c", m)));
        let bytes = table(files).await;
        let index = by_station(bytes.clone(), FILES_CACHE_BYTES).await;
        // Each station's one run a year.
        assert_eq!(runs(&index, "a"), [(2001, 0..46), (2002, 48..94)]);
        assert_eq!(runs(&index, "b"), [(2001, 2..48), (2002, 50..96)]);
        assert_eq!(runs(&index, "c"), [(2001, 96..102)]);
        for station in index.stations() {
            assert_eq!(
                got(&index, station).await,
                expected(&bytes, station),
                "{station}"
            );
        }
    }

    #[tokio::test]
    async fn the_writer_closes_row_groups_between_files() {
        let bytes = table(listed()).await;
        let index = by_station(bytes, FILES_CACHE_BYTES).await;
        let groups = index.metadata.metadata().row_groups();
        // 4 096 files of two series each, then the rest.
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].num_rows(), 8192);
        let s34 = runs(&index, "s34");
        assert_eq!(s34.len(), 10);
        assert_eq!(
            (&s34[0], &s34[9]),
            (&(2001, 8172..8196), &(2010, 8388..8412))
        );
        assert_eq!(index.group_starts, [0, 8192, 9624]);
    }

    #[tokio::test]
    async fn decoded_stations_stay_within_the_budget() {
        let bytes = regrouped(table(listed()).await, 500);
        // About three stations of 120 months.
        let budget = 3 * 120 * (size_of::<MonthFile>() + 2 * size_of::<SeriesStats>() + 8);
        let index = by_station(bytes.clone(), budget).await;
        for _ in 0..2 {
            for station in index.stations() {
                assert_eq!(
                    got(&index, station).await,
                    expected(&bytes, station),
                    "{station}"
                );
                assert!(index.cache.bytes() <= budget);
            }
        }
        assert!(index.cache.bytes() > 0);
    }

    #[tokio::test]
    async fn each_series_newest_month_is_kept_once_its_station_was_decoded() {
        let mut files = listed();
        // `q` of station s0 ends a month before `p`.
        for f in files.iter_mut().filter(|f| f.station.as_str() == "s0") {
            if f.month == months(120).last().unwrap() {
                f.series[1].rows = 0;
            }
        }
        let bytes = table(files).await;
        // A budget that keeps no station: each is decoded anew every time.
        let index = by_station(bytes, 1).await;
        let (s0, p, q) = (
            "s0".parse().unwrap(),
            "p".parse().unwrap(),
            "q".parse().unwrap(),
        );
        assert!(
            index.newest(&s0, &p).is_none(),
            "not before the station is decoded"
        );
        let first = index.get(&s0).await.unwrap();
        let newest_p = index.newest(&s0, &p).unwrap();
        let newest_q = index.newest(&s0, &q).unwrap();
        assert_eq!(newest_p.month.file.month, months(120).last().unwrap());
        assert_eq!(newest_q.month.file.month, months(119).last().unwrap());
        assert!(Arc::ptr_eq(&newest_p.month, first.last().unwrap()));
        // Decoded again after it left the budget, the station lists the kept month files
        // themselves, so that what their slots hold (footers, bytes) is found again.
        drop(first);
        let again = index.get(&s0).await.unwrap();
        assert!(Arc::ptr_eq(&newest_p.month, again.last().unwrap()));
        assert!(Arc::ptr_eq(&newest_q.month, &again[again.len() - 2]));
        assert!(index.newest(&s0, &"r".parse().unwrap()).is_none());
    }

    #[tokio::test]
    async fn a_window_decodes_only_its_years_and_keeps_them_beside_those_decoded_before() {
        let bytes = table(listed()).await;
        let index = by_station(bytes.clone(), FILES_CACHE_BYTES).await;
        let s0: StationId = "s0".parse().unwrap();
        let years = |months: &StationFiles| {
            let mut years: Vec<i32> = months.iter().map(|m| m.file.month.year()).collect();
            years.dedup();
            years
        };
        let first = index.get_years(&s0, 2003..=2003).await.unwrap();
        assert_eq!((first.len(), years(&first)), (12, vec![2003]));
        assert!(index.newest(&s0, &"p".parse().unwrap()).is_none());
        let more = index.get_years(&s0, 2005..=2006).await.unwrap();
        assert_eq!(years(&more), [2003, 2005, 2006]);
        assert!(
            Arc::ptr_eq(&first[0], &more[0]),
            "the year decoded before, as kept"
        );
        // Years already kept are not decoded again: the same files come back.
        assert!(Arc::ptr_eq(
            &index.get_years(&s0, 2005..=2005).await.unwrap(),
            &more
        ));
        let last = index.get_last_year(&s0).await.unwrap();
        assert_eq!(years(&last), [2003, 2005, 2006, 2010]);
        // The whole station: every year, the ones kept among them, and each series' newest
        // month known from then on.
        let all = index.get(&s0).await.unwrap();
        assert_eq!(got(&index, &s0).await, expected(&bytes, &s0));
        assert!(Arc::ptr_eq(&first[0], &all[24]));
        let newest = index.newest(&s0, &"p".parse().unwrap()).unwrap();
        assert!(Arc::ptr_eq(&newest.month, all.last().unwrap()));
        // Years the station has no files in: nothing decoded, nothing found.
        let none = by_station(bytes, FILES_CACHE_BYTES).await;
        assert!(none.get_years(&s0, 1990..=1999).await.unwrap().is_empty());
        assert_eq!(none.cache.bytes(), 0);
    }

    #[tokio::test]
    async fn months_of_station_year_files_keep_where_they_lie_beside_files_of_their_own() {
        // s1's months joined into station-year files (their place columns set), in the first
        // row group with month files of their own; the second row group has none.
        let mut files = listed();
        for f in files.iter_mut().filter(|f| f.station.as_str() == "s1") {
            let k = f.month.number() - 1;
            f.stored = Stored::Year(crate::dataset::manifest::InYear {
                generation: 7,
                first_row_group: 2 * k,
                row_groups: 24,
                start: 1000 * u64::from(k),
                footer: 12_000,
            });
        }
        let bytes = table(files).await;
        let index = by_station(bytes.clone(), FILES_CACHE_BYTES).await;
        let in_groups = |groups: &[usize]| {
            let mask = index.projection(groups);
            let schema = index.metadata.metadata().file_metadata().schema_descr();
            PLACE_COLUMNS
                .iter()
                .filter(|name| {
                    let c = (0..schema.num_columns())
                        .find(|&c| schema.column(c).name() == **name)
                        .unwrap();
                    mask.leaf_included(c)
                })
                .count()
        };
        // `offset` (packs only) is null in both; the others only in the second.
        assert_eq!(
            (in_groups(&[0]), in_groups(&[1]), in_groups(&[0, 1])),
            (5, 0, 5)
        );
        for station in index.stations() {
            assert_eq!(
                got(&index, station).await,
                expected(&bytes, station),
                "{station}"
            );
        }
        let s1 = got(&index, &"s1".parse().unwrap()).await;
        assert!(matches!(s1[13].stored, Stored::Year(y) if y.first_row_group == 2));
    }

    #[tokio::test]
    async fn damaged_pages_fail_their_stations_only() {
        let bytes = table(listed()).await;
        let index = by_station(bytes.clone(), FILES_CACHE_BYTES).await;
        let meta = index.metadata.metadata();
        let rows_column = meta
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .position(|c| c.name() == "rows")
            .unwrap();
        let mut damaged = bytes.to_vec();
        let mut spoil = |start: u64, len: u64| {
            for b in &mut damaged[start as usize..(start + len) as usize] {
                *b = 0xff;
            }
        };
        // The whole `rows` chunk of row group 1, and the last page of it in row group 0
        // (rows 7 936 to 8 191: stations s33 and s34).
        let (start, len) = meta.row_group(1).column(rows_column).byte_range();
        spoil(start, len);
        let pages = &index.metadata.metadata().offset_index().unwrap()[0][rows_column];
        let last = pages.page_locations().last().unwrap();
        assert_eq!(last.first_row_index, 7936);
        spoil(last.offset as u64, last.compressed_page_size as u64);
        let index = by_station(Bytes::from(damaged), FILES_CACHE_BYTES).await;
        for (station, groups) in [("s39", "[1]"), ("s33", "[0]"), ("s34", "[0, 1]")] {
            let Err(e) = index.get(&station.parse().unwrap()).await else {
                panic!("{station}: a damaged page decoded");
            };
            let says = format!("files table catalog/files-1.parquet, row groups {groups}");
            assert!(e.to_string().contains(&says), "{station}: {e}");
            assert!(matches!(e.kind(), crate::error::ErrorKind::Corrupt));
        }
        // Stations on other pages answer: their pages are the only ones decoded.
        for station in ["s0", "s28", "s32"] {
            assert_eq!(got(&index, &station.parse().unwrap()).await.len(), 120);
        }
    }

    /// The index knows which months each station lists, without a read: every month of its
    /// files, and no other (`late` lists the first half of 2001, then the second half far
    /// from it in the table; the stations ten years of months).
    #[tokio::test]
    async fn the_index_says_which_months_a_station_lists() {
        let bytes = regrouped(table(listed()).await, 500);
        let index = by_station(bytes.clone(), 0).await;
        for station in index.stations() {
            let listed: BTreeSet<Month> =
                expected(&bytes, station).iter().map(|f| f.month).collect();
            assert!(!listed.is_empty());
            for month in months(12 * 12) {
                assert_eq!(
                    index.lists_month(station, month),
                    listed.contains(&month),
                    "{station} {month}"
                );
            }
        }
        let nowhere: StationId = "nowhere".parse().unwrap();
        assert!(!index.lists_month(&nowhere, "2001-01".parse().unwrap()));
    }

    /// A writer's pass over a table left in the store: its stations in batches, each
    /// station once, in the order of the table (those it does not list last); a batch's
    /// files read in one request and decoded as the table lists them, none kept; a damaged
    /// row group fails the batch, naming it.
    #[tokio::test]
    async fn a_writers_pass_reads_a_batch_of_stations_in_one_request() {
        // Row groups of 500 rows: a station's 120 rows lie in one or two of them.
        let bytes = regrouped(table(listed()).await, 500);
        let path = Path::from("catalog/files-1.parquet");
        let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        memory.put(&path, bytes.clone().into()).await.unwrap();
        let counts = Arc::new(RequestCounts::default());
        let store: Arc<dyn ObjectStore> =
            Arc::new(Counted::new(Arc::clone(&memory), Arc::clone(&counts)));
        let gets = || counts.get(RequestKind::Get);
        let cache = Arc::new(FilesCache::new(0));
        let index = FilesByStation::open(store, path.to_string(), cache)
            .await
            .unwrap();
        assert!(index.row_groups() > 5, "{}", index.row_groups());
        let nowhere: StationId = "nowhere".parse().unwrap();
        let mut asked: Vec<StationId> = index.stations().iter().rev().cloned().collect();
        asked.insert(3, nowhere.clone());
        let batches = index.batches(asked);
        let (unlisted, batches) = batches.split_last().unwrap();
        assert_eq!(unlisted, std::slice::from_ref(&nowhere));
        assert_eq!(batches.concat(), index.stations());
        for batch in batches {
            for _ in 0..2 {
                let before = gets();
                let got = index.files_of(batch).await.unwrap();
                assert_eq!(gets() - before, 1, "{batch:?}");
                let stations: Vec<&StationId> = got.iter().map(|(s, _)| s).collect();
                assert_eq!(stations, batch.iter().collect::<Vec<_>>());
                for (station, files) in got {
                    assert_eq!(files, expected(&bytes, &station), "{station}");
                }
            }
        }
        assert_eq!(index.cache().bytes(), 0, "nothing kept");
        assert_eq!(index.files_of(unlisted).await.unwrap(), [(nowhere, vec![])]);

        // Row group 2's bytes spoiled in the store.
        spoil_group(memory.as_ref(), &path, &bytes, &index, 2).await;
        let Err(e) = index.files_of(&batches[0]).await else {
            panic!("a damaged row group decoded");
        };
        let says = "files table catalog/files-1.parquet, row groups [";
        assert!(e.to_string().contains(says), "{e}");
    }

    /// A table opened in the store: indexed from a read of its row groups, none of which it
    /// keeps; a station is decoded from its row groups, read when it is asked for (one
    /// request, whether it lies in one row group or two); a station kept decoded reads
    /// nothing; a pass in order reads the table again; a row group damaged in the store
    /// fails its stations only.
    #[tokio::test]
    async fn a_table_in_the_store_reads_a_stations_row_groups_when_it_is_decoded() {
        let bytes = table(listed()).await;
        let path = Path::from("catalog/files-1.parquet");
        let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        memory.put(&path, bytes.clone().into()).await.unwrap();
        let counts = Arc::new(RequestCounts::default());
        let store: Arc<dyn ObjectStore> =
            Arc::new(Counted::new(Arc::clone(&memory), Arc::clone(&counts)));
        let gets = || counts.get(RequestKind::Get);
        let opened = |budget: usize| {
            let cache = Arc::new(FilesCache::new(budget));
            FilesByStation::open(Arc::clone(&store), path.to_string(), cache)
        };
        let before = gets();
        let index = opened(FILES_CACHE_BYTES).await.unwrap();
        // The footer, then the row groups (a span: the table is smaller than one).
        assert_eq!(gets() - before, 2);
        assert_eq!(index.stations().len(), 41);
        for station in index.stations() {
            let before = gets();
            assert_eq!(
                got(&index, station).await,
                expected(&bytes, station),
                "{station}"
            );
            assert_eq!(gets() - before, 1, "{station}");
        }
        let before = gets();
        for station in index.stations() {
            assert_eq!(
                got(&index, station).await,
                expected(&bytes, station),
                "{station}"
            );
        }
        assert_eq!(gets(), before, "stations kept decoded read nothing");
        // Many stations at once (s0 to s39 lie in both row groups): one read.
        let index = opened(FILES_CACHE_BYTES).await.unwrap();
        let many: Vec<StationId> = (0..40).map(|i| format!("s{i}").parse().unwrap()).collect();
        let before = gets();
        let wanted = many.iter().map(|s| (s, i32::MIN..=i32::MAX, None));
        assert_eq!(index.read_many(wanted).await, 40);
        assert_eq!(gets() - before, 1);
        for station in &many {
            assert_eq!(
                got(&index, station).await,
                expected(&bytes, station),
                "{station}"
            );
        }
        assert_eq!(gets() - before, 1, "the stations were kept decoded");
        // Nothing kept decoded: read again.
        let index = opened(0).await.unwrap();
        let s5: StationId = "s5".parse().unwrap();
        for _ in 0..2 {
            let before = gets();
            assert_eq!(got(&index, &s5).await, expected(&bytes, &s5));
            assert_eq!(gets() - before, 1);
        }
        let mut all = Vec::new();
        index
            .each_in_order(|files| all.extend(files))
            .await
            .unwrap();
        assert_eq!(
            all,
            decode_files(bytes.clone(), &mut Interner::default()).unwrap()
        );

        // Row group 1's bytes spoiled in the store after the table was indexed.
        spoil_group(memory.as_ref(), &path, &bytes, &index, 1).await;
        for station in ["s39", "s34"] {
            let Err(e) = index.get(&station.parse().unwrap()).await else {
                panic!("{station}: a damaged row group decoded");
            };
            let says = "files table catalog/files-1.parquet, row groups";
            assert!(e.to_string().contains(says), "{station}: {e}");
        }
        assert!(index.each_in_order(|_| ()).await.is_err());
        assert_eq!(got(&index, &"s0".parse().unwrap()).await.len(), 120);

        // A footer longer than the first read of the table's end (4 812 row groups of 2
        // rows): the rest read in further requests (the footer's, the offset index's).
        let small_groups = regrouped(bytes.clone(), 2);
        let end = small_groups.len();
        let footer = u32::from_le_bytes(small_groups[end - 8..end - 4].try_into().unwrap());
        assert!(footer > 1 << 20, "{footer}");
        memory
            .put(&path, small_groups.clone().into())
            .await
            .unwrap();
        let before = gets();
        let index = opened(FILES_CACHE_BYTES).await.unwrap();
        let reads = gets() - before;
        assert!((3..=4).contains(&reads), "{reads}");
        for station in index.stations() {
            let got = got(&index, station).await;
            assert_eq!(got, expected(&small_groups, station), "{station}");
        }
    }

    /// A table whose `station` or `month` column is not text, or lists a month that is none,
    /// cannot be indexed: opening it fails naming it, rather than placing rows wrongly.
    #[tokio::test]
    async fn a_table_with_places_of_the_wrong_kind_fails_naming_itself() {
        use datafusion::arrow::array::{ArrayRef, Int64Array};
        use datafusion::arrow::datatypes::Field;
        let bytes = table(listed()).await;
        let (_, batches) = from_parquet(bytes, "test").unwrap();
        let batches: Vec<RecordBatch> = batches.map(|b| b.unwrap()).collect();
        let numbers: fn(&ArrayRef) -> (DataType, ArrayRef) = |c| {
            let n = Int64Array::from_iter_values(0..c.len() as i64);
            (DataType::Int64, Arc::new(n))
        };
        let no_month: fn(&ArrayRef) -> (DataType, ArrayRef) = |c| {
            let texts = StringArray::from_iter_values((0..c.len()).map(|_| "2022-13"));
            (DataType::Utf8, Arc::new(texts))
        };
        for (column, replace) in [
            ("station", numbers),
            ("month", numbers),
            ("month", no_month),
        ] {
            let changed: Vec<RecordBatch> = batches
                .iter()
                .map(|b| {
                    let i = b.schema().index_of(column).unwrap();
                    let (kind, values) = replace(b.column(i));
                    let mut fields: Vec<Field> = b
                        .schema()
                        .fields()
                        .iter()
                        .map(|f| f.as_ref().clone())
                        .collect();
                    fields[i] = Field::new(column, kind, false);
                    let mut columns = b.columns().to_vec();
                    columns[i] = values;
                    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
                })
                .collect();
            let mut out = Vec::new();
            let mut w = ArrowWriter::try_new(&mut out, changed[0].schema(), None).unwrap();
            for b in &changed {
                w.write(b).unwrap();
            }
            w.close().unwrap();
            let Err(e) = in_store(Bytes::from(out), FILES_CACHE_BYTES).await else {
                panic!("a table whose {column} column is of the wrong kind was indexed");
            };
            assert!(
                e.to_string()
                    .contains("files table catalog/files-1.parquet"),
                "{column}: {e}"
            );
            assert!(matches!(e.kind(), crate::error::ErrorKind::Corrupt), "{e}");
        }
    }

    /// A version opened after another takes over the month files of the stations the other
    /// holds decoded, the same objects where its table lists the same files (so that their
    /// footers and bytes are found again), its own where a file changed; stations the other
    /// never decoded stay undecoded.
    #[tokio::test]
    async fn a_new_version_takes_over_the_decoded_months_it_shares() {
        let before = listed();
        let s3: StationId = "s3".parse().unwrap();
        let changed: Month = "2010-12".parse().unwrap();
        let mut after = before.clone();
        for f in after
            .iter_mut()
            .filter(|f| f.station == s3 && f.month == changed)
        {
            f.generation = 2;
        }
        let previous = by_station(table(before).await, FILES_CACHE_BYTES).await;
        // The next version as a server opens it, from the store.
        let store = InMemory::new();
        let path = Path::from("catalog/files-2.parquet");
        store.put(&path, table(after).await.into()).await.unwrap();
        let counts = Arc::new(RequestCounts::default());
        let store = Arc::new(Counted::new(Arc::new(store), Arc::clone(&counts)));
        let cache = Arc::clone(previous.cache());
        let mut next = FilesByStation::open(store, path.to_string(), cache)
            .await
            .unwrap();
        // s3's last two years and s5 whole were read from the previous version; s7 not.
        let s3_then = previous.get_years(&s3, 2009..=2010).await.unwrap();
        let s5: StationId = "s5".parse().unwrap();
        let s5_then = previous.get(&s5).await.unwrap();

        let before = counts.get(RequestKind::Get);
        assert_eq!(next.carry(&previous).await, 2);
        assert_eq!(
            counts.get(RequestKind::Get) - before,
            1,
            "one read for both"
        );
        let s7: StationId = "s7".parse().unwrap();
        let slot = |index: &FilesByStation, s: &StationId| {
            index
                .cache
                .get(&index.stations[s].files)
                .map(|d| d.years.to_vec())
        };
        assert_eq!(slot(&next, &s7), None, "s7 was not decoded before");
        assert_eq!(slot(&next, &s3), Some(vec![2009, 2010]));
        let s3_now = next.get_years(&s3, 2009..=2010).await.unwrap();
        assert_eq!(s3_now.len(), 24);
        for (now, then) in s3_now.iter().zip(s3_then.iter()) {
            assert_eq!(now.file.month, then.file.month);
            let same = now.file.month != changed;
            assert_eq!(Arc::ptr_eq(now, then), same, "{}", now.file.month);
            assert_eq!(now.file.generation, if same { 1 } else { 2 });
        }
        let s5_now = next.get(&s5).await.unwrap();
        assert_eq!(s5_now.len(), 120);
        assert!(
            s5_now
                .iter()
                .zip(s5_then.iter())
                .all(|(a, b)| Arc::ptr_eq(a, b))
        );
        // Once whole, its newest months are the carried ones too.
        let p: ParameterId = "p".parse().unwrap();
        let newest = next.newest(&s5, &p).unwrap();
        assert!(Arc::ptr_eq(&newest.month, s5_then.last().unwrap()));
    }

    /// Newest months known from a version's newest-months table: known before any decoding,
    /// taken over by the next version where they are the same file, and the months a station's
    /// decoding then gives.
    #[tokio::test]
    async fn newest_months_listed_are_known_at_once_and_carried_over() {
        let before = listed();
        let last: Month = "2010-12".parse().unwrap();
        let (s3, s5): (StationId, StationId) = ("s3".parse().unwrap(), "s5".parse().unwrap());
        let mut after = before.clone();
        for f in after
            .iter_mut()
            .filter(|f| f.station == s3 && f.month == last)
        {
            f.generation = 2;
        }
        let newest_of = |files: &[ValueFile]| -> Vec<ValueFile> {
            let listed = [&s3, &s5];
            let newest = files
                .iter()
                .filter(|f| listed.contains(&&f.station) && f.month == last);
            newest.cloned().collect()
        };
        let mut previous = by_station(table(before.clone()).await, FILES_CACHE_BYTES).await;
        previous.know_newest(newest_of(&before));
        let mut next = by_station(table(after.clone()).await, FILES_CACHE_BYTES).await;
        next.know_newest(newest_of(&after));
        next.keep_in(Arc::clone(previous.cache()));
        let p: ParameterId = "p".parse().unwrap();
        let then = |s: &StationId| Arc::clone(&previous.newest(s, &p).unwrap().month);
        let (s3_then, s5_then) = (then(&s3), then(&s5));
        assert_eq!(previous.cache.bytes(), 0, "known without decoding");

        assert_eq!(next.carry(&previous).await, 0, "nothing was decoded");
        let now = |s: &StationId| Arc::clone(&next.newest(s, &p).unwrap().month);
        assert!(Arc::ptr_eq(&now(&s5), &s5_then));
        assert!(!Arc::ptr_eq(&now(&s3), &s3_then));
        assert_eq!(now(&s3).file.generation, 2);
        // A station decoded whole gives its newest month as the one known.
        let s5_months = next.get(&s5).await.unwrap();
        assert!(Arc::ptr_eq(s5_months.last().unwrap(), &s5_then));
    }
}
