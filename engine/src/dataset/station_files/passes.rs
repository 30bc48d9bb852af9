//! Writers' passes over every station: a batch of stations' row groups decoded at a time,
//! or the table read in the order of its rows.

use super::{BATCH_ROWS, FilesByStation, FilesCache, Rows, ToRead, damaged, to_usize};
use crate::dataset::StationFiles;
use crate::dataset::catalog_file::Interner;
use crate::dataset::files_table::{FilesDecoder, decode_batches};
use crate::dataset::manifest::ValueFile;
use crate::dataset::table_bytes::{self, TableBytes};
use crate::error::{EngineError, Result};
use crate::model::ids::StationId;
use bytes::Bytes;
use datafusion::parquet::arrow::arrow_reader::{
    ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
};
use std::collections::BTreeSet;
use std::ops::{Range, RangeInclusive};
use std::sync::Arc;

/// Bytes of the row groups a writer's pass over many stations reads and decodes at once
/// ([`FilesByStation::batches`]): ~8 row groups of the 200 000-station-year table, whose
/// ~200 stations' files take ~15 MB decoded (~20 bytes a month file in the table, ~290
/// decoded), so that the pass holds a batch's files, not a span's eight times as many.
const PASS_BATCH_BYTES: u64 = 1 << 20;

/// Stations decoded from row groups read at once (see [`FilesByStation::read_many`]): each
/// with its rows and another version's months of it to take over, the groups that hold them
/// and their bytes.
#[derive(Default)]
struct Span<'a> {
    stations: Vec<(&'a StationId, Rows<'a>, Option<&'a StationFiles>)>,
    groups: BTreeSet<usize>,
    bytes: u64,
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

impl FilesByStation {
    /// The station's value files like [`Self::get`], for a pass over every station: decoded
    /// ones are kept only while the budget has room, and leave before those requests decoded,
    /// so that the pass does not push out the stations requests ask for again.
    pub(crate) async fn get_in_pass(&self, station: &StationId) -> Result<Arc<StationFiles>> {
        self.read(station, i32::MIN..=i32::MAX, FilesCache::put_first_out)
            .await
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
}
