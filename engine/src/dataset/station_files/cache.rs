//! A station's files decoded when a request first needs them, a year at a time, and kept
//! within the budget ([`super::FilesCache`]).

use super::carry::newest_of;
use super::carry::take_over;
use super::index::selected_runs;
use super::{
    BATCH_ROWS, Decoded, FilesByStation, FilesCache, Rows, SeriesNewest, ToRead, YearRows, damaged,
    month_files, to_usize,
};
use crate::dataset::StationFiles;
use crate::dataset::catalog_file::Interner;
use crate::dataset::files_table::{PLACE_COLUMNS, decode_batches};
use crate::dataset::manifest::{SeriesStats, ValueFile};
use crate::dataset::month_file::MonthFile;
use crate::dataset::table_bytes::TableBytes;
use crate::error::Result;
use crate::model::ids::{ParameterId, StationId};
use crate::storage::slot_cache::Slot;
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::arrow_reader::{
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use std::ops::{Range, RangeInclusive};
use std::sync::{Arc, LazyLock};

impl FilesByStation {
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

    /// The station's files of at least `wanted` years: those kept, with the years not kept
    /// yet decoded (their row groups read, where the table is in the store) and kept beside
    /// them by `keep`.
    pub(super) async fn read(
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
    pub(super) fn to_read(&self, station: &StationId, wanted: RangeInclusive<i32>) -> ToRead<'_> {
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
    pub(super) fn decoded(
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
    /// The columns to decode from row groups `groups`: all but those of [`PLACE_COLUMNS`]
    /// that are null in every row of them (as in an archive of month files of their own).
    /// Each column costs a page or two to decompress and skip through whatever its values:
    /// leaving the six out made first requests of stations at 2.4 M files 1-6 % faster
    /// (`benches/first_ab.py`, two runs in both orders).
    pub(super) fn projection(&self, groups: &[usize]) -> ProjectionMask {
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
