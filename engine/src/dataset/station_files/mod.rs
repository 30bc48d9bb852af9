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
//!
//! One file a reason to change: `index` finds where each station's rows lie when a version is
//! opened; `cache` decodes a station's years for a request and keeps them within the budget;
//! `passes` serves writers' passes over every station; `carry` hands a newer version what the
//! one before decoded; this file holds the table, its stations and the bytes of its row
//! groups.

mod cache;
mod carry;
mod index;
mod passes;
#[cfg(test)]
mod tests;

use crate::dataset::StationFiles;
use crate::dataset::manifest::{SeriesStats, Stored, ValueFile};
use crate::dataset::month_file::{MonthFile, ObjectSlots};
use crate::dataset::table_bytes::{self, TableBytes};
use crate::error::{BoxError, EngineError, Result};
use crate::model::ids::{ParameterId, StationId};
use crate::model::month::Month;
use crate::parquet::assembly::FileFooter;
use crate::storage::slot_cache::{Slot, SlotCache};
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use datafusion::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use datafusion::parquet::file::metadata::PageIndexPolicy;
use index::Indexer;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

/// Default budget of the stations' files kept decoded: a station of 20 years of months with
/// two series takes ~70 KB, so this holds ~1 800 such stations.
pub(crate) const FILES_CACHE_BYTES: usize = 128 * 1024 * 1024;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 8 * 1024;

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

/// Where the table is read from: a station's row groups are read when it is decoded, and not
/// kept once it is.
struct Source {
    store: Arc<dyn ObjectStore>,
    location: Path,
    /// The table's length in bytes.
    len: u64,
}

/// A version's files table, by station; see the module doc.
pub(crate) struct FilesByStation {
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

    /// Every station the table lists, in the order of its rows.
    pub(crate) fn stations(&self) -> &[StationId] {
        &self.order
    }

    /// The row after the station's last in the table (none for a station it does not list):
    /// a pass in the table's order ([`Self::in_order`]) has seen all of the station's files
    /// once it has passed that many rows.
    pub(crate) fn rows_end(&self, station: &StationId) -> Option<u64> {
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

    /// Row groups of the table.
    pub(crate) fn row_groups(&self) -> usize {
        self.group_starts.len() - 1
    }

    /// The rows of row group `group`.
    pub(crate) fn group_rows(&self, group: usize) -> Range<u64> {
        match (
            self.group_starts.get(group),
            self.group_starts.get(group + 1),
        ) {
            (Some(&start), Some(&end)) => start..end,
            _ => 0..0,
        }
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
}

/// How the table is read: its offset index (where each page lies), not its column index.
fn reader_options() -> ArrowReaderOptions {
    ArrowReaderOptions::new()
        .with_column_index_policy(PageIndexPolicy::Skip)
        .with_offset_index_policy(PageIndexPolicy::Optional)
}

fn to_usize(rows: u64) -> Result<usize> {
    usize::try_from(rows).map_err(|_| EngineError::corrupt(format!("files table: {rows} rows")))
}

/// An error of the table's bytes, naming `what` of it.
fn damaged<E: Into<BoxError>>(what: &str) -> impl Fn(E) -> EngineError + '_ {
    move |e| EngineError::corrupt_by(what.to_owned(), e)
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
