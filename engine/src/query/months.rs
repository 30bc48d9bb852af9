//! Series-months of an answer, read from their stored row group.
//!
//! Such a month is one stored row group (layout: one per parameter), already encoded,
//! compressed and indexed. Its chunks are read in one ranged read (footer and page index from
//! the engine's footer cache, see `dataset::month_file`) and then either
//! - handed out as they are: a Parquet answer sends the column chunks of a month wholly
//!   inside it as they were read instead of decoding them to Arrow and encoding them again,
//!   so it costs a read of the compressed bytes, and the page statistics and page index come
//!   along; or
//! - decoded without a DataFusion scan, page by page straight into the arrays (the `pages`
//!   module), and cut to the rows or the time window the answer needs; chunks of other shapes
//!   go to the Parquet reader, which skips the pages outside those rows. A text column with
//!   one value in the month (its statistics say so) is made rather than read.

use crate::dataset::layout::{COL_TIMESTAMP, COL_VALUE, values_schema, values_schema_with_gaps};
use crate::dataset::manifest::Stored;
use crate::dataset::month_file::{FooterCache, MonthFooter, Tail};
use crate::dataset::{Dataset, MonthFile};
use crate::error::{EngineError, Result};
use crate::parquet::assembly::{Assembly, Chunks, FileFooter};
use crate::parquet::constant::ConstantColumns;
use crate::parquet::pages;
use crate::query::object_read::ObjectRead;
use crate::storage::Store;
use crate::storage::value_cache::ValueCache;
use bytes::{Buf, Bytes};
use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, Int32Array, RecordBatch, RecordBatchOptions,
    StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::buffer::BooleanBuffer;
use datafusion::arrow::compute::{concat_batches, filter_record_batch};
use datafusion::arrow::datatypes::{DataType, Int32Type, SchemaRef};
use datafusion::arrow::record_batch::RecordBatchReader;

use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};
use datafusion::parquet::file::reader::{ChunkReader, Length};
use datafusion::parquet::file::statistics::Statistics;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

/// A part of the answer, in order.
pub enum AnswerPart {
    /// Decoded rows.
    Rows(RecordBatch),
    /// A stored row group every row of which belongs to the answer.
    Stored(StoredRowGroup),
}

impl AnswerPart {
    pub fn rows(&self) -> usize {
        match self {
            Self::Rows(b) => b.num_rows(),
            Self::Stored(g) => g.rows,
        }
    }
}

/// The answer's columns of one stored row group, as encoded on disk.
pub struct StoredRowGroup {
    pub rows: usize,
    /// The read the chunks are cut from.
    read: FileBytes,
    footer: Arc<FileFooter>,
    row_group: usize,
    /// Positions in the file schema, in the answer's order.
    columns: Arc<[usize]>,
    /// Columns of one value each that go before the stored ones (a many-series answer's ids).
    before: Option<Arc<ConstantColumns>>,
}

impl StoredRowGroup {
    /// Adds the row group to a Parquet file being assembled: the bytes to send, slices of
    /// the read (chunks that lie side by side in the file, the usual case, as one).
    pub fn copy_into(self, file: &mut Assembly) -> Result<Vec<Bytes>> {
        let stored = Chunks {
            footer: &self.footer,
            group: self.row_group,
            columns: &self.columns,
            data: &self.read.bytes,
            data_start: self.read.start,
        };
        match &self.before {
            None => file.copy_joined(&[stored]),
            Some(before) => file.copy_joined(&[before.encoded(self.rows)?.chunks(), stored]),
        }
    }

    /// The row group with `columns` before its own.
    pub fn after(self, columns: Arc<ConstantColumns>) -> Self {
        Self {
            before: Some(columns),
            ..self
        }
    }
}

/// Bytes cut from a file, addressed by their offsets in that file (what a column chunk's
/// metadata points at).
#[derive(Clone)]
struct FileBytes {
    start: u64,
    bytes: Bytes,
}

impl FileBytes {
    fn at(&self, start: u64, length: usize) -> std::result::Result<Bytes, ParquetError> {
        let from = start
            .checked_sub(self.start)
            .map(|o| o as usize)
            .filter(|o| o.saturating_add(length) <= self.bytes.len())
            .ok_or_else(|| ParquetError::EOF(format!("offset {start} outside the chunk")))?;
        Ok(self.bytes.slice(from..from + length))
    }
}

impl Length for FileBytes {
    fn len(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }
}

impl ChunkReader for FileBytes {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> std::result::Result<Self::T, ParquetError> {
        let rest = (self.len().saturating_sub(start)) as usize;
        Ok(self.at(start, rest)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> std::result::Result<Bytes, ParquetError> {
        self.at(start, length)
    }
}

/// The chunks of some columns of one row group, read, with the file's metadata.
#[derive(Clone)]
struct Fetched {
    metadata: Arc<ParquetMetaData>,
    row_group: usize,
    columns: Vec<usize>,
    chunks: Vec<FileBytes>,
}

/// The one read that covers `ranges` (chunks of a row group), from the first chunk to the end
/// of the last: the chunks of a row group lie side by side, and a read per chunk was three
/// system calls per month (a gap left by a column not asked for is one chunk, cheaper to read
/// than to skip).
fn spanning(mut ranges: impl Iterator<Item = Result<Range<u64>>>) -> Result<Range<u64>> {
    let span = ranges.try_fold(None, |span: Option<Range<u64>>, r| {
        let r = r?;
        Ok::<_, EngineError>(Some(match span {
            Some(s) => s.start.min(r.start)..s.end.max(r.end),
            None => r,
        }))
    })?;
    Ok(span.unwrap_or(0..0))
}

/// The month's row group with metadata `metadata`, columns `columns` (positions in the file
/// schema), the chunks in one ranged read.
async fn fetch(
    month: &MonthRead,
    metadata: Arc<ParquetMetaData>,
    columns: Vec<usize>,
) -> Result<Fetched> {
    let (location, row_group) = (month.file.location(), month.row_group);
    let group = metadata
        .row_groups()
        .get(row_group)
        .ok_or_else(|| EngineError::corrupt(format!("{location}: no row group {row_group}")))?;
    let mut ranges = Vec::with_capacity(columns.len());
    for &c in &columns {
        let chunk = group
            .columns()
            .get(c)
            .ok_or_else(|| EngineError::corrupt(format!("{location}: no column {c}")))?;
        let (start, len) = chunk.byte_range();
        ranges.push(start..start + len);
    }
    let span = spanning(ranges.iter().cloned().map(Ok))?;
    let whole = FileBytes {
        start: span.start,
        bytes: month.read(span).await?,
    };
    let chunks = ranges
        .iter()
        .map(|r| {
            Ok(FileBytes {
                start: r.start,
                bytes: whole.at(r.start, (r.end - r.start) as usize)?,
            })
        })
        .collect::<std::result::Result<Vec<_>, ParquetError>>()?;
    Ok(Fetched {
        metadata,
        row_group,
        columns,
        chunks,
    })
}

/// The fetched chunks as one file for the Parquet reader: each offset is served by the chunk
/// that holds it.
struct FetchedFile(Vec<FileBytes>);

impl FetchedFile {
    fn holding(&self, start: u64) -> std::result::Result<&FileBytes, ParquetError> {
        self.0
            .iter()
            .find(|c| c.start <= start && start < c.len())
            .ok_or_else(|| ParquetError::EOF(format!("offset {start} was not read")))
    }
}

impl Length for FetchedFile {
    fn len(&self) -> u64 {
        self.0.iter().map(Length::len).max().unwrap_or(0)
    }
}

impl ChunkReader for FetchedFile {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> std::result::Result<Self::T, ParquetError> {
        self.holding(start)?.get_read(start)
    }

    fn get_bytes(&self, start: u64, length: usize) -> std::result::Result<Bytes, ParquetError> {
        self.holding(start)?.get_bytes(start, length)
    }
}

impl Fetched {
    /// Rows `wanted` of the row group as one batch of `schema`, each chunk decoded page by
    /// page (see [`pages`]), pages outside `wanted` skipped; `None` when a chunk holds what
    /// only the Arrow reader decodes.
    fn decode_pages(
        &self,
        schema: &SchemaRef,
        constants: &[Constant],
        wanted: Range<usize>,
    ) -> Result<Option<RecordBatch>> {
        let group = self.metadata.row_group(self.row_group);
        let rows = group.num_rows() as usize;
        let wanted = wanted.start.min(rows)..wanted.end.min(rows);
        let file_schema = values_schema();
        let mut arrays = Vec::with_capacity(schema.fields().len());
        for field in schema.fields() {
            let column = file_schema.index_of(field.name())?;
            if let Some(k) = constants.iter().find(|k| k.column == column) {
                arrays.push(k.array(wanted.len()));
                continue;
            }
            let fetched = self.columns.iter().position(|&c| c == column);
            let chunk = fetched
                .and_then(|i| self.chunks.get(i))
                .ok_or_else(|| EngineError::corrupt(format!("column {} not read", field.name())))?;
            let locations = self
                .metadata
                .offset_index()
                .and_then(|index| index.get(self.row_group)?.get(column))
                .map(|index| index.page_locations().as_slice());
            let decoded = pages::decode_chunk(
                Arc::new(chunk.clone()),
                group.column(column),
                rows,
                wanted.clone(),
                locations,
                field.data_type(),
            )?;
            match decoded {
                Some(array) => arrays.push(array),
                None => return Ok(None),
            }
        }
        let options = RecordBatchOptions::new().with_row_count(Some(wanted.len()));
        Ok(Some(RecordBatch::try_new_with_options(
            Arc::clone(schema),
            arrays,
            &options,
        )?))
    }

    /// Decodes rows `rows` of the row group (all of them when None) into one batch of
    /// `schema`, whose columns are the fetched ones in any order, with the Parquet reader: for
    /// chunks [`pages`] does not take. With the page index, pages wholly outside `rows` are
    /// skipped rather than decoded.
    fn decode(
        self,
        reader_metadata: ArrowReaderMetadata,
        schema: &SchemaRef,
        rows: Option<Range<usize>>,
        constants: &[Constant],
    ) -> Result<RecordBatch> {
        let mask = ProjectionMask::roots(
            self.metadata.file_metadata().schema_descr(),
            self.columns.iter().copied(),
        );
        let all = self.metadata.row_group(self.row_group).num_rows() as usize;
        let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(
            FetchedFile(self.chunks),
            reader_metadata,
        )
        .with_row_groups(vec![self.row_group])
        .with_projection(mask)
        .with_batch_size(all.max(1));
        if let Some(rows) = rows.filter(|r| *r != (0..all)) {
            let end = rows.end.min(all);
            let start = rows.start.min(end);
            builder = builder.with_row_selection(RowSelection::from(vec![
                RowSelector::skip(start),
                RowSelector::select(end - start),
            ]));
        }
        let reader = builder.build()?;
        let read_schema = reader.schema();
        let mut batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
        let decoded = if batches.len() == 1 {
            batches.swap_remove(0)
        } else {
            concat_batches(&read_schema, &batches)?
        };
        // The reader returns columns in file order; the answer may want another.
        let file_schema = values_schema();
        let arrays = schema
            .fields()
            .iter()
            .map(|f| {
                // A column left out as constant (see `constants`).
                let made = || {
                    let named = |c: &&Constant| file_schema.field(c.column).name() == f.name();
                    Some(constants.iter().find(named)?.array(decoded.num_rows()))
                };
                decoded
                    .column_by_name(f.name())
                    .cloned()
                    .or_else(made)
                    .ok_or_else(|| EngineError::corrupt(format!("column {} not read", f.name())))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(Arc::clone(schema), arrays)?)
    }
}

/// The value files' schema as an answer of `schema` reads them: `value` nullable where the
/// answer's is (a version with recorded gaps, see `crate::model::gap`).
fn file_schema_of(schema: &SchemaRef) -> SchemaRef {
    let nullable = schema
        .field_with_name(COL_VALUE)
        .is_ok_and(|f| f.is_nullable());
    match nullable {
        true => values_schema_with_gaps(),
        false => values_schema(),
    }
}

/// A text column that holds one value in the whole row group (a month whose quality is all
/// `good`, say), known from the chunk's statistics: made as a dictionary array of that value
/// instead of read and decoded. The quality column cost a tenth of a made Arrow download's CPU
/// time (`perf`), ~7 us a month, mostly what every chunk costs however alike its values.
struct Constant {
    /// Position in the file schema.
    column: usize,
    text: String,
}

impl Constant {
    /// The column's value when its chunk's statistics say there is only one, and no nulls:
    /// only statistics marked exact (a writer may cut a long text's minimum and maximum).
    fn of(chunk: &ColumnChunkMetaData) -> Option<String> {
        let stats = chunk.statistics()?;
        let trusted = matches!(stats, Statistics::ByteArray(_))
            && stats.min_is_exact()
            && stats.max_is_exact()
            && stats.null_count_opt() == Some(0);
        let min = stats.min_bytes_opt().filter(|_| trusted)?;
        let text = std::str::from_utf8(min).ok()?;
        (Some(min) == stats.max_bytes_opt()).then(|| text.to_owned())
    }

    /// `rows` rows of the text. Arrays are made once for each text and sliced to length:
    /// checking the keys of a new one for every month was 2-3 % of a made Arrow download's
    /// CPU time (`perf`).
    fn array(&self, rows: usize) -> ArrayRef {
        /// Texts kept: a handful of qualities and parameters in practice.
        const KEPT: usize = 16;
        static MADE: Mutex<Vec<DictionaryArray<Int32Type>>> = Mutex::new(Vec::new());
        let is_ours = |a: &DictionaryArray<Int32Type>| {
            let values = a.values().as_any().downcast_ref::<StringArray>();
            values.is_some_and(|v| v.len() == 1 && v.value(0) == self.text)
        };
        let Ok(mut made) = MADE.lock() else {
            return Arc::new(self.make(rows));
        };
        if let Some(a) = made.iter().find(|a| is_ours(a) && a.len() >= rows) {
            return Arc::new(a.slice(0, rows));
        }
        // Room for the months of a 5-minute series at least, so that one entry serves them all.
        let array = self.make(rows.max(9_000));
        made.retain(|a| !is_ours(a));
        if made.len() == KEPT {
            made.remove(0);
        }
        made.push(array.clone());
        Arc::new(array.slice(0, rows))
    }

    fn make(&self, rows: usize) -> DictionaryArray<Int32Type> {
        let keys = Int32Array::from(vec![0; rows]);
        let values = Arc::new(StringArray::from(vec![self.text.as_str()]));
        DictionaryArray::new(keys, values)
    }
}

/// Of `columns` (positions in the file schema), the dictionary text columns that hold one
/// value in row group `row_group`, and the columns left to read. At least one column is read,
/// so that the decoded rows say how many there are.
fn constants(
    metadata: &ParquetMetaData,
    row_group: usize,
    columns: Vec<usize>,
) -> (Vec<Constant>, Vec<usize>) {
    let schema = values_schema();
    let chunks = metadata.row_groups().get(row_group).map(|g| g.columns());
    let constant = |c: usize| {
        if !matches!(
            schema.fields().get(c)?.data_type(),
            DataType::Dictionary(..)
        ) {
            return None;
        }
        let text = Constant::of(chunks?.get(c)?)?;
        Some(Constant { column: c, text })
    };
    let (mut constants, mut read) = (Vec::new(), Vec::new());
    for c in columns {
        match constant(c) {
            Some(k) => constants.push(k),
            None => read.push(c),
        }
    }
    if read.is_empty() {
        read.extend(constants.pop().map(|k| k.column));
    }
    (constants, read)
}

/// A series-month of an answer, read without a DataFusion scan: its row group, the columns
/// to read, and where to read them. Mostly a month wholly inside the answer; a month the
/// window cuts is read whole too and cut ([`MonthRead::within`]).
pub(crate) struct MonthRead {
    store: Store,
    /// Month files' bytes kept in memory, if any are (see `storage::value_cache`).
    values: Option<Arc<ValueCache>>,
    footers: Arc<FooterCache>,
    file: Arc<MonthFile>,
    row_group: usize,
    /// Positions in the file schema.
    columns: Arc<[usize]>,
    /// The file's end as read for its footer, when it was not cached: mostly the whole file,
    /// so the pages are taken from it rather than read again. Or what the month needs, read
    /// with its object's other months (`shared`).
    tail: OnceLock<Tail>,
    /// The read of the month's object that holds what it needs, if its months are read at once
    /// (see [`ObjectRead`]), and its place in it.
    shared: Option<(Arc<ObjectRead>, usize)>,
}

impl MonthRead {
    /// Row group `row_group` of `file`, columns `columns` (positions in the file schema).
    pub(crate) fn new(
        dataset: &Dataset,
        file: &Arc<MonthFile>,
        row_group: usize,
        columns: Arc<[usize]>,
    ) -> Self {
        Self {
            store: dataset.store.clone(),
            values: dataset.values.clone(),
            footers: Arc::clone(&dataset.footers),
            file: Arc::clone(file),
            row_group,
            columns,
            tail: OnceLock::new(),
            shared: None,
        }
    }

    pub(crate) fn file(&self) -> &MonthFile {
        &self.file
    }

    /// Takes the month's bytes from read `i` of `read`.
    pub(crate) fn read_with_others(&mut self, read: Arc<ObjectRead>, i: usize) {
        self.shared = Some((read, i));
    }

    /// The bytes this month reads, to read them with others of its object (see
    /// [`ObjectRead`]): its row group's chunks when the footer cache knows where they are, else
    /// what a first read takes (`ValueFile::first_read`). `stored`: for a copy (which needs
    /// the footer split for copying as well).
    pub(crate) fn wanted(&self, stored: bool) -> Range<u64> {
        let whole = self.file.file.first_read();
        let Some(footer) = self.file.cached_footer(&self.footers) else {
            return whole;
        };
        if stored && footer.copy.is_none() {
            return whole;
        }
        let Some(group) = footer.metadata.row_groups().get(self.row_group) else {
            return whole;
        };
        let chunks = self.columns.iter().map(|&c| {
            let chunk = group
                .columns()
                .get(c)
                .ok_or_else(|| EngineError::corrupt("no such column"))?;
            let (start, len) = chunk.byte_range();
            Ok(start..start + len)
        });
        spanning(chunks).unwrap_or(whole)
    }

    /// Whether the value cache holds bytes `span` of the month's file.
    pub(crate) fn holds(&self, span: &Range<u64>) -> bool {
        let cached = self.file.cached();
        self.values
            .as_ref()
            .is_some_and(|v| v.get(cached, span).is_some())
    }

    /// Takes what the read of the month's object holds for it, if it is read with others.
    async fn take_from_object_read(&self) -> Result<()> {
        let Some((read, i)) = &self.shared else {
            return Ok(());
        };
        let tail = read.month(*i).await?;
        if self.caches_tail() {
            self.cache_copy(tail.start, &tail.bytes);
        }
        let _ = self.tail.set(tail);
        Ok(())
    }

    /// Whether the tail a month reads is worth keeping whole in the value cache: a month
    /// file's is mostly the whole file, a station-year file's is the footer (and, read with
    /// other months, what follows the month), of which the month's reads keep what they take.
    fn caches_tail(&self) -> bool {
        !matches!(self.file.file.stored, Stored::Year(_))
    }

    /// A copy of `bytes` (from `start` of the month's object) in the value cache, if there is
    /// one: a copy of its own, as the bytes read are slices of a larger buffer (an object read,
    /// a tail), which a slice in the cache would keep alive beyond the cache's budget.
    fn cache_copy(&self, start: u64, bytes: &Bytes) {
        if let Some(values) = &self.values {
            values.put(self.file.cached(), start, Bytes::copy_from_slice(bytes));
        }
    }
}

impl MonthRead {
    /// Bytes `span` of the month's file: held in memory, or in the tail read for the footer,
    /// or read and then held.
    async fn read(&self, span: Range<u64>) -> Result<Bytes> {
        let cached = self.file.cached();
        if let Some(bytes) = self.values.as_ref().and_then(|v| v.get(cached, &span)) {
            return Ok(bytes);
        }
        if let Some(bytes) = self.tail.get().and_then(|t| t.slice(&span)) {
            if !self.caches_tail() {
                self.cache_copy(span.start, &bytes);
            }
            return Ok(bytes);
        }
        let start = span.start;
        let bytes = self.file.read(&self.store, span).await?;
        if let Some(values) = &self.values {
            values.put(cached, start, bytes.clone());
        }
        Ok(bytes)
    }

    /// Keeps the tail read for the footer (if it was read now) for the reads that follow, and
    /// in the value cache where it is worth it ([`MonthRead::caches_tail`]).
    fn keep_tail(&self, tail: Option<Tail>) {
        let Some(tail) = tail else { return };
        if let Some(values) = &self.values
            && self.caches_tail()
        {
            values.put(self.file.cached(), tail.start, tail.bytes.clone());
        }
        let _ = self.tail.set(tail);
    }

    /// The stored row group, to be copied into a Parquet answer as it is: its chunks in one
    /// ranged read.
    pub(crate) async fn stored(self) -> Result<StoredRowGroup> {
        self.take_from_object_read().await?;
        let (footer, tail) = self
            .file
            .copy_footer(&self.store, &self.footers, self.tail.get())
            .await?;
        self.keep_tail(tail);
        let ranges = self
            .columns
            .iter()
            .map(|&c| footer.chunk_range(self.row_group, c));
        let span = spanning(ranges)?;
        Ok(StoredRowGroup {
            rows: usize::try_from(footer.rows(self.row_group)?).unwrap_or(0),
            read: FileBytes {
                start: span.start,
                bytes: self.read(span.clone()).await?,
            },
            footer,
            row_group: self.row_group,
            columns: self.columns,
            before: None,
        })
    }

    /// Rows `rows` of the month (all when None), decoded without a DataFusion scan (whose
    /// per-file setup was a tenth of a download's CPU time with ~3 000 rows per file): the
    /// pages that hold those rows, page by page, where its chunks allow; else by the Parquet
    /// reader.
    pub(crate) async fn decoded(
        self,
        schema: SchemaRef,
        rows: Option<Range<usize>>,
    ) -> Result<RecordBatch> {
        let (fetched, constants, footer) = self.fetched().await?;
        let wanted = rows.clone().unwrap_or(0..usize::MAX);
        if let Some(batch) = fetched.decode_pages(&schema, &constants, wanted)? {
            return Ok(batch);
        }
        fetched.decode(footer.reader.clone(), &schema, rows, &constants)
    }

    /// The month's chunks read, but for the text columns that hold one value (`constants`),
    /// with the file's footer.
    async fn fetched(&self) -> Result<(Fetched, Vec<Constant>, Arc<MonthFooter>)> {
        self.take_from_object_read().await?;
        let (footer, tail) = self
            .file
            .footer_with_tail(&self.store, &self.footers, self.tail.get())
            .await?;
        self.keep_tail(tail);
        let metadata = Arc::clone(&footer.metadata);
        let (constants, read) = constants(&metadata, self.row_group, self.columns.to_vec());
        let fetched = fetch(self, metadata, read).await?;
        Ok((fetched, constants, footer))
    }
}

/// The rows of `batch` whose `timestamp` lies in `[lo, hi]`. Rows in time order, as our
/// writer stores them, make one run, sliced without a copy; a mask (built then filtered,
/// 8 % of a one-month JSON answer's CPU time in `perf`) only for rows in another order.
fn in_window(batch: &RecordBatch, window: (i64, i64)) -> Result<RecordBatch> {
    let times = timestamps(batch)?;
    if let Some(rows) = window_run(times, window) {
        return Ok(batch.slice(rows.start, rows.len()));
    }
    let (lo, hi) = window;
    let mask = BooleanBuffer::collect_bool(times.len(), |i| lo <= times[i] && times[i] <= hi);
    Ok(filter_record_batch(batch, &BooleanArray::from(mask))?)
}

fn timestamps(batch: &RecordBatch) -> Result<&[i64]> {
    Ok(batch
        .column_by_name(COL_TIMESTAMP)
        .and_then(|c| c.as_any().downcast_ref::<TimestampMicrosecondArray>())
        .ok_or_else(|| EngineError::corrupt("month read without its timestamps"))?
        .values())
}

/// The rows whose time lies in `[lo, hi]`, when they make one run (none make an empty one).
fn window_run(times: &[i64], (lo, hi): (i64, i64)) -> Option<Range<usize>> {
    let inside = |t: &i64| lo <= *t && *t <= hi;
    let start = times.iter().position(inside).unwrap_or(times.len());
    let run = times[start..].iter().take_while(|t| inside(t)).count();
    (!times[start + run..].iter().any(inside)).then_some(start..start + run)
}

/// Rows `rows` of `batch`, as far as it has them.
pub(crate) fn rows_of(batch: &RecordBatch, rows: Range<usize>) -> RecordBatch {
    let end = rows.end.min(batch.num_rows());
    let start = rows.start.min(end);
    batch.slice(start, end - start)
}

impl MonthRead {
    /// The month's rows whose time lies in `[lo, hi]` (a month the window cuts), in the
    /// columns of `schema`; the month must have been given its timestamp column to read.
    /// Its timestamps are decoded first, then the other columns' pages that hold the rows
    /// inside (a DataFusion scan with the window as its predicate skipped pages too, but its
    /// setup took ~0.3 ms a month, four times what a one-month window aligned on months took
    /// in all, `wrk`).
    pub(crate) async fn within(self, schema: SchemaRef, window: (i64, i64)) -> Result<RecordBatch> {
        let mut read = self.columns.to_vec();
        read.sort_unstable();
        let read_schema = Arc::new(file_schema_of(&schema).project(&read)?);
        let month = self.cut(read_schema, window).await?;
        let columns = schema
            .fields()
            .iter()
            .map(|f| month.schema().index_of(f.name()))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(month.num_rows()));
        Ok(RecordBatch::try_new_with_options(
            schema,
            columns
                .iter()
                .map(|&i| Arc::clone(month.column(i)))
                .collect(),
            &options,
        )?)
    }

    /// The rows inside `window`, in the columns of `schema` (the timestamp among them).
    async fn cut(self, schema: SchemaRef, window: (i64, i64)) -> Result<RecordBatch> {
        let (fetched, constants, footer) = self.fetched().await?;
        let file_schema = values_schema();
        let times = Arc::new(file_schema.project(&[file_schema.index_of(COL_TIMESTAMP)?])?);
        if let Some(times) = fetched.decode_pages(&times, &[], 0..usize::MAX)?
            && let Some(rows) = window_run(timestamps(&times)?, window)
        {
            // Counting a cut month's rows reads its timestamps alone: they are decoded.
            if times.schema() == schema {
                return Ok(times.slice(rows.start, rows.len()));
            }
            if let Some(batch) = fetched.decode_pages(&schema, &constants, rows)? {
                return Ok(batch);
            }
        }
        let month = match fetched.decode_pages(&schema, &constants, 0..usize::MAX)? {
            Some(month) => month,
            None => fetched.decode(footer.reader.clone(), &schema, None, &constants)?,
        };
        in_window(&month, window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::layout::{COL_PARAMETER, COL_QUALITY, COL_TIMESTAMP, COL_VALUE};
    use crate::dataset::month_file::TAIL_BYTES;
    use crate::write::writer::{SeriesChunk, encode_month};
    use datafusion::object_store::ObjectMeta;
    use datafusion::object_store::memory::InMemory;
    use datafusion::object_store::path::Path;
    use datafusion::object_store::{ObjectStoreExt, PutPayload};

    /// A month file of `rows` 15-minute values in an in-memory store, the last `suspect` of
    /// them of quality `suspect`, the others `good`.
    async fn month_file(store: &Store, name: &str, rows: usize, suspect: usize) -> ObjectMeta {
        let mut chunk = [SeriesChunk {
            parameter: "discharge-15min".parse().unwrap(),
            timestamps: (0..rows as i64).map(|i| i * 900_000_000).collect(),
            values: (0..rows).map(|i| i as f64 / 4.0).collect(),
            quality: (0..rows)
                .map(|i| {
                    if i + suspect < rows {
                        "good"
                    } else {
                        "suspect"
                    }
                })
                .collect(),
        }];
        let bytes = encode_month(&mut chunk).unwrap().bytes;
        let location = Path::from(name);
        store
            .object
            .put(&location, PutPayload::from(bytes.clone()))
            .await
            .unwrap();
        ObjectMeta {
            location,
            last_modified: chrono::DateTime::UNIX_EPOCH,
            size: bytes.len() as u64,
            e_tag: None,
            version: None,
        }
    }

    /// A window keeps exactly the rows whose time lies in it, whatever their order; rows in
    /// time order come back as a slice of the month, sharing its memory.
    #[test]
    fn windows_keep_the_rows_inside() {
        let schema = Arc::new(values_schema().project(&[1, 2]).unwrap());
        let month = |times: Vec<i64>| {
            let values: Vec<f64> = times.iter().map(|&t| t as f64).collect();
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(TimestampMicrosecondArray::from(times).with_timezone("UTC")),
                    Arc::new(datafusion::arrow::array::Float64Array::from(values)),
                ],
            )
            .unwrap()
        };
        let times_of = |b: &RecordBatch| -> Vec<i64> {
            let t = b.column(0).as_any();
            let t = t.downcast_ref::<TimestampMicrosecondArray>().unwrap();
            t.values().to_vec()
        };
        let sorted: Vec<i64> = (0..50).map(|i| i * 10).collect();
        let mut shuffled = sorted.clone();
        shuffled.swap(3, 40);
        shuffled.swap(10, 25);
        for times in [sorted.clone(), shuffled, vec![30, 20, 10], vec![]] {
            for window in [
                (0, 490),
                (35, 250),
                (30, 30),
                (-5, 5),
                (480, 900),
                (491, 900),
                (7, 8),
            ] {
                let batch = month(times.clone());
                let cut = in_window(&batch, window).unwrap();
                let want: Vec<i64> = times
                    .iter()
                    .copied()
                    .filter(|t| window.0 <= *t && *t <= window.1)
                    .collect();
                assert_eq!(times_of(&cut), want, "{times:?} {window:?}");
                let values = cut.column(1).as_any();
                let values = values.downcast_ref::<datafusion::arrow::array::Float64Array>();
                let want: Vec<f64> = want.iter().map(|&t| t as f64).collect();
                assert_eq!(values.unwrap().values().to_vec(), want);
            }
        }
        let batch = month(sorted);
        let cut = in_window(&batch, (35, 250)).unwrap();
        let first = |b: &RecordBatch| b.column(1).to_data().buffers()[0].as_ptr();
        assert_eq!(first(&cut), first(&batch.slice(4, 1)));
    }

    /// The dataset's view of the file `meta` describes.
    fn month_of(meta: &ObjectMeta) -> MonthFile {
        MonthFile::at(
            meta.location.clone(),
            crate::dataset::manifest::ValueFile {
                station: "s".parse().unwrap(),
                month: "2020-01".parse().unwrap(),
                generation: 1,
                size: meta.size,
                series: Box::new([]),
                stored: crate::dataset::manifest::Stored::File,
            },
        )
    }

    /// A month file's footer is read in one request with the file's end; a small file is read
    /// whole, a large one only at its end.
    #[tokio::test]
    async fn footers_are_read_in_one_request_with_the_tail() {
        use crate::storage::counted::{Counted, RequestCounts, RequestKind};
        let counts = Arc::new(RequestCounts::default());
        let store = Store::of(Arc::new(Counted::new(
            Arc::new(InMemory::new()),
            Arc::clone(&counts),
        )));
        for rows in [2_000, 400_000] {
            let meta = month_file(&store, &format!("m{rows}.parquet"), rows, 0).await;
            let before = counts.get(RequestKind::Get);
            let cache = FooterCache::new(1 << 24);
            let (footer, tail) = month_of(&meta)
                .footer_with_tail(&store, &cache, None)
                .await
                .unwrap();
            assert_eq!(counts.get(RequestKind::Get), before + 1);
            assert_eq!(footer.metadata.file_metadata().num_rows(), rows as i64);
            assert!(footer.metadata.offset_index().is_some(), "page index read");
            let tail = tail.unwrap();
            let whole = meta.size <= TAIL_BYTES;
            assert_eq!(tail.start == 0, whole, "{} bytes", meta.size);
            assert_eq!(tail.start + tail.bytes.len() as u64, meta.size);
        }
    }

    /// A month's footer is read once and then comes from the footer cache, with the Arrow
    /// reader's view of it and, once a Parquet answer asked for it, the footer split for
    /// copying; once the budget lets it go, it is read again.
    #[tokio::test]
    async fn month_footers_are_read_once_and_kept_within_the_budget() {
        let store = Store::of(Arc::new(InMemory::new()));
        let cache = FooterCache::new(1 << 24);
        let meta = month_file(&store, "m.parquet", 2_000, 0).await;
        let month = month_of(&meta);
        let first = month.footer(&store, &cache).await.unwrap();
        assert_eq!(first.metadata.file_metadata().num_rows(), 2_000);
        assert_eq!(first.reader.metadata().file_metadata().num_rows(), 2_000);
        assert!(cache.bytes() > 0);
        let again = month.footer(&store, &cache).await.unwrap();
        assert!(Arc::ptr_eq(&first, &again));

        // The footer split for copying joins it, counted in the budget.
        let before = cache.bytes();
        let (copy, tail) = month.copy_footer(&store, &cache, None).await.unwrap();
        assert!(tail.is_none(), "the footer was cached");
        assert_eq!(copy.rows(0).unwrap(), 2_000);
        assert!(cache.bytes() > before);
        let (kept, _) = month.copy_footer(&store, &cache, None).await.unwrap();
        assert!(Arc::ptr_eq(&copy, &kept));
        assert_eq!(copy.chunk_range(0, 2).unwrap(), {
            let (start, len) = first.metadata.row_group(0).column(2).byte_range();
            start..start + len
        });
        let with_copy = month.footer(&store, &cache).await.unwrap();
        assert!(
            Arc::ptr_eq(&with_copy.metadata, &first.metadata),
            "not read again"
        );

        // A budget that holds either of two footers but not both: the second file's read
        // lets the first one go. (A slot belongs to its file, so each cache gets files of
        // its own.)
        let o = month_file(&store, "o.parquet", 3_000, 0).await;
        let sizes = FooterCache::new(1 << 24);
        month_of(&meta).footer(&store, &sizes).await.unwrap();
        let one = sizes.bytes();
        month_of(&o).footer(&store, &sizes).await.unwrap();
        let both = sizes.bytes();
        let small = FooterCache::new(both - 1);
        let (month, other) = (month_of(&meta), month_of(&o));
        let a = month.footer(&store, &small).await.unwrap();
        assert_eq!(small.bytes(), one);
        let b = other.footer(&store, &small).await.unwrap();
        assert_eq!(b.metadata.file_metadata().num_rows(), 3_000);
        assert_eq!(small.bytes(), both - one, "only the second is held");
        let a_again = month.footer(&store, &small).await.unwrap();
        assert!(!Arc::ptr_eq(&a, &a_again), "read again once let go");
        assert_eq!(a_again.metadata.file_metadata().num_rows(), 2_000);
    }

    /// A month of our writer's decodes page by page (not through the Arrow reader), whole or
    /// in part, to the rows the Arrow reader makes of it, constant columns or not.
    #[tokio::test]
    async fn months_decode_page_by_page() {
        let store = Store::of(Arc::new(InMemory::new()));
        let schema = values_schema();
        let answer = Arc::new(schema.project(&[1, 2, 3]).unwrap());
        for suspect in [0, 700] {
            let cache = Arc::new(FooterCache::new(1 << 24));
            let file = month_file(&store, "m.parquet", 2_976, suspect).await;
            let footer = month_of(&file).footer(&store, &cache).await.unwrap();
            let reader = footer.reader.clone();
            let metadata = Arc::clone(&footer.metadata);
            let (made, read) = constants(&metadata, 0, vec![1, 2, 3]);
            let month = MonthRead {
                store: store.clone(),
                values: None,
                footers: Arc::clone(&cache),
                file: Arc::new(month_of(&file)),
                row_group: 0,
                columns: Arc::from([1, 2, 3]),
                tail: OnceLock::new(),
                shared: None,
            };
            let fetched = fetch(&month, metadata, read).await.unwrap();
            let ours = fetched.decode_pages(&answer, &made, 0..usize::MAX).unwrap();
            let ours = ours.expect("decoded page by page");
            assert_eq!(ours.num_rows(), 2_976);
            // The whole month, the first rows, rows across the page boundary, the last rows.
            for rows in [None, Some(0..100), Some(2_000..2_100), Some(2_880..2_976)] {
                let theirs = fetched
                    .clone()
                    .decode(reader.clone(), &answer, rows.clone(), &made)
                    .unwrap();
                let ours = rows.map_or_else(|| ours.clone(), |r| rows_of(&ours, r));
                assert_eq!(ours, theirs, "{suspect} suspect");
            }
        }
    }

    /// A text column of one value in the month is made, not read; one of two values, or a
    /// column that is not text, is read; and a month whose every column asked for is constant
    /// still reads one, to know its rows.
    #[tokio::test]
    async fn constant_columns_are_made_not_read() {
        let store = Store::of(Arc::new(InMemory::new()));
        let schema = values_schema();
        let at = |name: &str| schema.index_of(name).unwrap();
        let (time, value, quality) = (at(COL_TIMESTAMP), at(COL_VALUE), at(COL_QUALITY));
        let footer_of = async |meta: &ObjectMeta| {
            month_of(meta)
                .footer(&store, &FooterCache::new(1 << 24))
                .await
                .unwrap()
        };
        for (suspect, constant) in [(0, true), (1, false)] {
            let file = month_file(&store, "m.parquet", 2_976, suspect).await;
            let footer = footer_of(&file).await;
            let (made, read) = constants(&footer.metadata, 0, vec![time, value, quality]);
            let made: Vec<(usize, &str)> =
                made.iter().map(|k| (k.column, k.text.as_str())).collect();
            if constant {
                assert_eq!(made, [(quality, "good")]);
                assert_eq!(read, [time, value]);
            } else {
                assert!(made.is_empty());
                assert_eq!(read, [time, value, quality]);
            }
        }
        let file = month_file(&store, "m.parquet", 10, 0).await;
        let footer = footer_of(&file).await;
        let (made, read) = constants(&footer.metadata, 0, vec![quality]);
        assert!(made.is_empty());
        assert_eq!(read, [quality]);
        let parameter = at(COL_PARAMETER);
        let (made, read) = constants(&footer.metadata, 0, vec![parameter, quality]);
        assert_eq!(made.len(), 1);
        assert_eq!(read.len(), 1);

        let array = Constant {
            column: quality,
            text: "good".into(),
        }
        .array(3);
        let array = array
            .as_any()
            .downcast_ref::<DictionaryArray<Int32Type>>()
            .unwrap();
        let texts: Vec<_> = array
            .downcast_dict::<StringArray>()
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(texts, [Some("good"); 3]);

        // Arrays are sliced from one made per text, and longer ones made as needed.
        for (text, rows) in [
            ("good", 2_976),
            ("suspect", 10),
            ("good", 20_000),
            ("good", 1),
        ] {
            let constant = Constant {
                column: quality,
                text: text.into(),
            };
            let array = constant.array(rows);
            let array = array
                .as_any()
                .downcast_ref::<DictionaryArray<Int32Type>>()
                .unwrap();
            assert_eq!(array.len(), rows);
            let texts = array.downcast_dict::<StringArray>().unwrap();
            assert!(texts.into_iter().all(|t| t == Some(text)), "{text}");
        }
    }
}
