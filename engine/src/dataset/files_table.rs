//! The files table (`catalog/files-<g>.parquet`): every value file of a dataset version, one
//! row per file and parameter, in the order the files were written:
//!
//! | column     | type                  | meaning                                       |
//! |------------|-----------------------|-----------------------------------------------|
//! | station    | utf8                  | station id                                    |
//! | month      | utf8                  | `YYYY-MM` (UTC)                               |
//! | generation | uint64                | the publish that wrote the file (in its name) |
//! | size       | uint64                | bytes of the month file or station-year file  |
//! | parameter  | utf8                  | parameter id; rows in row group order         |
//! | rows       | uint64                | the parameter's rows in the file              |
//! | min, max   | timestamp(µs, UTC)    | its oldest and newest timestamp               |
//! | pack       | uint64, null          | generation of the station-year file or pack   |
//! | offset     | uint64, null          | where the month file begins in its pack       |
//! | path       | utf8                  | the object that holds the rows                |
//! | row_group  | uint32, null          | in a station-year file: the parameter-month's |
//! | row_groups | uint32, null          | ... the file's row groups                     |
//! | start      | uint64, null          | ... where the month's pages begin             |
//! | footer     | uint64, null          | ... where its page index and footer begin     |
//! | missing    | uint64                | rows of quality `missing` (recorded gaps)     |
//!
//! `path` follows from the other columns (`ValueFile::object`); it is written for readers
//! outside: the distinct paths are exactly the files of the version, each holding only rows
//! of it. Tables of layout 3 have no `path` and the columns after it (their own files are
//! named by `layout::month_dir_path`), tables of layout 2 no `pack` and `offset` either;
//! tables written before recorded gaps have no `missing` (none). The
//! table is written while the value files are (a row group at a time, uploaded in parts), so
//! writing an archive of any size keeps only a row group in memory; each row group is encoded
//! on its own and copied in with its part of the footer, so that an append can put the
//! previous table's row groups of stations it did not touch between them as they are
//! (`write::import`). Any Parquet reader can query it
//! (`SELECT station, sum(rows) FROM 'catalog/files-1.parquet' GROUP BY 1`).

use crate::dataset::catalog_file::{self, Interner, column, from_parquet, room_for};
use crate::dataset::layout::{self, UTC, writer_properties};
use crate::dataset::manifest::{InYear, SeriesStats, Stored, ValueFile};
use crate::error::{EngineError, Result};
use crate::model::ids::{ParameterId, StationId};
use crate::model::month::Month;
use crate::parquet::assembly::{Assembly, FileFooter};
use bytes::Bytes;
use datafusion::arrow::array::{
    Array, ArrayRef, RecordBatch, StringArray, TimestampMicrosecondArray, UInt32Array, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::object_store::ObjectStore;
use datafusion::object_store::buffered::BufWriter;
use datafusion::object_store::path::Path;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::Encoding;
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use datafusion::parquet::schema::types::ColumnPath;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use tokio::io::AsyncWriteExt;

const W: &str = "files table";

/// Files buffered before they go to the Parquet writer as one batch.
const BATCH_FILES: usize = 4096;
/// Rows after which the writer closes a row group, at the end of a batch: a row group holds
/// whole files (a month's rows never span two). Tables written before this were cut every
/// 64 Ki rows, anywhere.
const ROW_GROUP_ROWS: usize = 8 * 1024;
/// Rows under which a row group of the previous table is not copied as it is by an append
/// but decoded and written again with its neighbours: each append leaves a row group of the
/// rows it wrote, and copied, they would pile up (a footer entry each).
pub(crate) const COPIED_GROUP_MIN_ROWS: u64 = ROW_GROUP_ROWS as u64 / 2;
/// Rows of a page: a station's rows are read through the offset index, the pages that hold
/// them only (`dataset::station_files`), and a station of 20 years has 240-480 rows. A page
/// that holds a station's first rows is decompressed and decoded whole and the rows before
/// them skipped: with pages of 256 rows rather than 1 024 a station not decoded lately is
/// read 23 % faster (server time of a one-month answer, 1.76 against 2.28 ms at 2.4 M files)
/// for a table 69 % larger (37.0 MB against 21.9; the server keeps it in memory).
const PAGE_ROWS: usize = 256;

/// The columns that say where a month's rows lie in a station-year file or a pack: null for a
/// month file of its own, and readers take a column missing from a batch as null (see
/// `Places`), so that a decode may leave them out where they are null in every row.
pub(crate) const PLACE_COLUMNS: [&str; 6] = [
    "pack",
    "offset",
    "row_group",
    "row_groups",
    "start",
    "footer",
];

fn schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        let ts = DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into()));
        Arc::new(Schema::new(vec![
            Field::new("station", DataType::Utf8, false),
            Field::new("month", DataType::Utf8, false),
            Field::new("generation", DataType::UInt64, false),
            Field::new("size", DataType::UInt64, false),
            Field::new("parameter", DataType::Utf8, false),
            Field::new("rows", DataType::UInt64, false),
            Field::new("min", ts.clone(), false),
            Field::new("max", ts, false),
            Field::new("pack", DataType::UInt64, true),
            Field::new("offset", DataType::UInt64, true),
            Field::new("path", DataType::Utf8, false),
            Field::new("row_group", DataType::UInt32, true),
            Field::new("row_groups", DataType::UInt32, true),
            Field::new("start", DataType::UInt64, true),
            Field::new("footer", DataType::UInt64, true),
            Field::new("missing", DataType::UInt64, false),
        ]))
    });
    Arc::clone(&SCHEMA)
}

/// A text column from an iterator that does not know its length (`from_iter_values` needs
/// it to).
fn texts<S: AsRef<str>>(values: impl Iterator<Item = S>) -> StringArray {
    values.map(Some).collect()
}

/// Writes the files table of one publish while its value files are written, and at the end
/// the table of each series' newest month ([`NEWEST`]).
pub(crate) struct FilesTableWriter {
    store: Arc<dyn ObjectStore>,
    generation: u64,
    files: TableSink,
    /// Each series' newest month with rows so far: a few hundred bytes a series.
    newest: HashMap<(StationId, ParameterId), ValueFile>,
}

/// The catalog tables a [`FilesTableWriter`] wrote.
pub(crate) struct WrittenTables {
    /// The files table.
    pub files: String,
    /// The table of each series' newest month.
    pub newest: String,
}

/// The name of the table that lists each series' newest month file with rows: the files
/// table's rows of those months, ordered by station and month. A server reads it whole at
/// start (~20 000 rows at 200 000 station-years), so that `recent=N` within a series' newest
/// month plans without decoding the station's rows of the files table first: that decode was
/// a third of a first `recent=1` at 2.4 M files (the history of `benches/RESULTS.md`).
pub(crate) const NEWEST: &str = "newest";

impl FilesTableWriter {
    pub(crate) fn new(store: Arc<dyn ObjectStore>, generation: u64) -> Result<Self> {
        let files = TableSink::new(
            Arc::clone(&store),
            layout::catalog_path("files", generation),
        )?;
        Ok(Self {
            store,
            generation,
            files,
            newest: HashMap::new(),
        })
    }

    pub(crate) async fn add(&mut self, file: ValueFile) -> Result<()> {
        self.keep_newest(&file);
        self.files.add(file).await
    }

    /// Copies row group `group` of a files table whose footer is `footer`, as it is: `data`
    /// holds the group's bytes, from offset `data_start` of that table. Its files are listed,
    /// but not seen: the newest months among them must be given to [`Self::keep_newest`].
    pub(crate) async fn copy_group(
        &mut self,
        footer: &FileFooter,
        group: usize,
        data: &Bytes,
        data_start: u64,
    ) -> Result<()> {
        self.files.copy_group(footer, group, data, data_start).await
    }

    /// Takes `file` for the newest month of its series where it is newer than the one kept.
    pub(crate) fn keep_newest(&mut self, file: &ValueFile) {
        for s in file.series.iter().filter(|s| s.rows > 0) {
            let key = (file.station.clone(), s.parameter.clone());
            match self.newest.get_mut(&key) {
                Some(kept) if kept.month >= file.month => {}
                Some(kept) => *kept = file.clone(),
                None => {
                    self.newest.insert(key, file.clone());
                }
            }
        }
    }

    /// Writes what is buffered, completes the upload and writes the newest months' table.
    pub(crate) async fn finish(self) -> Result<WrittenTables> {
        let files = self.files.finish().await?;
        let mut newest: Vec<ValueFile> = self.newest.into_values().collect();
        newest.sort_by(|a, b| {
            (a.station.as_str(), a.month, a.generation).cmp(&(
                b.station.as_str(),
                b.month,
                b.generation,
            ))
        });
        newest.dedup_by(|a, b| {
            a.station == b.station && a.month == b.month && a.generation == b.generation
        });
        let mut sink = TableSink::new(self.store, layout::catalog_path(NEWEST, self.generation))?;
        for file in newest {
            sink.add(file).await?;
        }
        let newest = sink.finish().await?;
        Ok(WrittenTables { files, newest })
    }
}

/// A table of value files (the files table's schema) written a row group at a time and
/// uploaded in parts: each row group is encoded on its own and copied into the table with
/// its footer's part ([`Assembly`]), so that row groups of another table of this schema can
/// go in between as they are ([`Self::copy_group`]: an append carries the previous table's
/// row groups without the stations it touched that way, without decoding them).
struct TableSink {
    path: String,
    props: WriterProperties,
    out: BufWriter,
    table: Assembly,
    /// The table's first bytes, until they are sent with the first row group.
    head: Option<Bytes>,
    /// The row group being encoded, once it has rows.
    group: Option<ArrowWriter<Vec<u8>>>,
    pending: Vec<ValueFile>,
}

impl TableSink {
    fn new(store: Arc<dyn ObjectStore>, path: String) -> Result<Self> {
        let mut props = writer_properties()
            .into_builder()
            .set_max_row_group_row_count(None)
            .set_data_page_row_count_limit(PAGE_ROWS)
            .set_write_batch_size(PAGE_ROWS)
            // Statistics of row groups only: nothing reads a column index of the table.
            .set_statistics_enabled(EnabledStatistics::Chunk);
        // Each path differs from the one before in a few bytes, each time range and size in a
        // few bits: delta encodings make the table about a third of its size with
        // dictionaries (45 MB against ~13 at 2.4 M files, pyarrow's rewrite of it), and the
        // server keeps the table's bytes.
        for (column, encoding) in [
            ("path", Encoding::DELTA_BYTE_ARRAY),
            ("min", Encoding::DELTA_BINARY_PACKED),
            ("max", Encoding::DELTA_BINARY_PACKED),
            ("size", Encoding::DELTA_BINARY_PACKED),
        ] {
            let column = ColumnPath::from(column);
            props = props
                .set_column_dictionary_enabled(column.clone(), false)
                .set_column_encoding(column, encoding);
        }
        let props = props.build();
        let empty =
            ArrowWriter::try_new(Vec::new(), schema(), Some(props.clone()))?.into_inner()?;
        let (table, head) = Assembly::new(&empty)?;
        Ok(Self {
            out: BufWriter::new(store, Path::from(path.as_str())),
            path,
            props,
            table,
            head: Some(head),
            group: None,
            pending: Vec::with_capacity(BATCH_FILES),
        })
    }

    async fn add(&mut self, file: ValueFile) -> Result<()> {
        self.pending.push(file);
        if self.pending.len() >= BATCH_FILES {
            self.encode_pending()?;
            if self
                .group
                .as_ref()
                .is_some_and(|g| g.in_progress_rows() >= ROW_GROUP_ROWS)
            {
                self.close_group().await?;
            }
        }
        Ok(())
    }

    /// Encodes the files buffered into the row group being written.
    fn encode_pending(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let batch = batch_of(&self.pending)?;
        let group = match &mut self.group {
            Some(g) => g,
            None => self.group.insert(ArrowWriter::try_new(
                Vec::with_capacity(256 * 1024),
                schema(),
                Some(self.props.clone()),
            )?),
        };
        group.write(&batch)?;
        self.pending.clear();
        Ok(())
    }

    /// Ends the row group being written (with what is buffered) and sends it.
    async fn close_group(&mut self) -> Result<()> {
        self.encode_pending()?;
        let Some(group) = self.group.take() else {
            return Ok(());
        };
        let encoded = Bytes::from(group.into_inner()?);
        let pieces = self.table.copy_file(encoded)?;
        self.send(pieces).await
    }

    /// Ends the row group being written, then copies row group `group` of a table of this
    /// schema whose footer is `footer` as it is (`data` holds its bytes, from offset
    /// `data_start` of that table).
    async fn copy_group(
        &mut self,
        footer: &FileFooter,
        group: usize,
        data: &Bytes,
        data_start: u64,
    ) -> Result<()> {
        self.close_group().await?;
        let columns: Vec<usize> = (0..schema().fields().len()).collect();
        let pieces = self.table.copy(footer, group, &columns, data, data_start)?;
        self.send(pieces).await
    }

    async fn send(&mut self, pieces: Vec<Bytes>) -> Result<()> {
        for piece in self.head.take().into_iter().chain(pieces) {
            self.out.put(piece).await?;
        }
        Ok(())
    }

    /// Writes what is buffered and completes the upload; returns the table's path.
    async fn finish(mut self) -> Result<String> {
        self.close_group().await?;
        let Self {
            path,
            mut out,
            table,
            head,
            ..
        } = self;
        for piece in head.into_iter().chain([table.finish()?]) {
            out.put(piece).await?;
        }
        out.shutdown().await.map_err(|source| EngineError::Io {
            what: format!("upload of {path}"),
            source,
        })?;
        Ok(path)
    }
}

/// `files` as rows of the files table.
fn batch_of(files: &[ValueFile]) -> Result<RecordBatch> {
    let rows = || {
        files
            .iter()
            .flat_map(|f| f.series.iter().map(move |s| (f, s)))
    };
    // Each row's row group in its object.
    let groups = || {
        files
            .iter()
            .flat_map(|f| (0..f.series.len()).map(move |i| (f, f.row_group(i))))
    };
    let in_year = |f: &ValueFile| match f.stored {
        Stored::Year(y) => Some(y),
        _ => None,
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(texts(rows().map(|(f, _)| f.station.as_str()))),
        Arc::new(texts(rows().map(|(f, _)| f.month.to_string()))),
        Arc::new(UInt64Array::from_iter_values(
            rows().map(|(f, _)| f.generation),
        )),
        Arc::new(UInt64Array::from_iter_values(rows().map(|(f, _)| f.size))),
        Arc::new(texts(rows().map(|(_, s)| s.parameter.as_str()))),
        Arc::new(UInt64Array::from_iter_values(rows().map(|(_, s)| s.rows))),
        Arc::new(
            TimestampMicrosecondArray::from_iter_values(rows().map(|(_, s)| s.min))
                .with_timezone(UTC),
        ),
        Arc::new(
            TimestampMicrosecondArray::from_iter_values(rows().map(|(_, s)| s.max))
                .with_timezone(UTC),
        ),
        Arc::new(UInt64Array::from_iter(rows().map(
            |(f, _)| match f.stored {
                Stored::Year(y) => Some(y.generation),
                Stored::Pack { generation, .. } => Some(generation),
                Stored::File | Stored::MonthDir => None,
            },
        ))),
        Arc::new(UInt64Array::from_iter(rows().map(
            |(f, _)| match f.stored {
                Stored::Pack { offset, .. } => Some(offset),
                _ => None,
            },
        ))),
        Arc::new(texts(rows().map(|(f, _)| f.object()))),
        Arc::new(UInt32Array::from_iter(
            groups().map(|(f, g)| in_year(f).and_then(|_| u32::try_from(g).ok())),
        )),
        Arc::new(UInt32Array::from_iter(
            rows().map(|(f, _)| in_year(f).map(|y| y.row_groups)),
        )),
        Arc::new(UInt64Array::from_iter(
            rows().map(|(f, _)| in_year(f).map(|y| y.start)),
        )),
        Arc::new(UInt64Array::from_iter(
            rows().map(|(f, _)| in_year(f).map(|y| y.footer)),
        )),
        Arc::new(UInt64Array::from_iter_values(
            rows().map(|(_, s)| s.missing),
        )),
    ];
    Ok(RecordBatch::try_new(schema(), columns)?)
}

/// A column that tables of layout version 2 do not have: None there, else as [`column`].
fn optional_column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<Option<&'a T>> {
    catalog_file::optional_column(batch, name, W)
}

/// The columns that say where a month's rows lie, as far as the table has them.
struct Places<'a> {
    pack: Option<&'a UInt64Array>,
    offset: Option<&'a UInt64Array>,
    path: Option<&'a StringArray>,
    row_group: Option<&'a UInt32Array>,
    row_groups: Option<&'a UInt32Array>,
    start: Option<&'a UInt64Array>,
    footer: Option<&'a UInt64Array>,
}

impl<'a> Places<'a> {
    fn of(b: &'a RecordBatch) -> Result<Self> {
        Ok(Self {
            pack: optional_column(b, "pack")?,
            offset: optional_column(b, "offset")?,
            path: optional_column(b, "path")?,
            row_group: optional_column(b, "row_group")?,
            row_groups: optional_column(b, "row_groups")?,
            start: optional_column(b, "start")?,
            footer: optional_column(b, "footer")?,
        })
    }

    /// Where the rows of the month whose first row is row `i` lie.
    fn stored(&self, i: usize) -> Result<Stored> {
        fn at<A: Array, T>(c: Option<&A>, i: usize, v: impl Fn(&A, usize) -> T) -> Option<T> {
            c.filter(|c| c.is_valid(i)).map(|c| v(c, i))
        }
        let u64_at = |c: Option<&UInt64Array>| at(c, i, |c, i| c.value(i));
        let u32_at = |c: Option<&UInt32Array>| at(c, i, |c, i| c.value(i));
        let bad = |what: &str| EngineError::corrupt(format!("{W}: row {i} {what}"));
        if let Some(first_row_group) = u32_at(self.row_group) {
            let (Some(generation), Some(row_groups), Some(start), Some(footer)) = (
                u64_at(self.pack),
                u32_at(self.row_groups),
                u64_at(self.start),
                u64_at(self.footer),
            ) else {
                return Err(bad(
                    "has a row group without pack, row_groups, start and footer",
                ));
            };
            return Ok(Stored::Year(InYear {
                generation,
                first_row_group,
                row_groups,
                start,
                footer,
            }));
        }
        match (u64_at(self.pack), u64_at(self.offset)) {
            (Some(generation), Some(offset)) => Ok(Stored::Pack { generation, offset }),
            (None, None) => Ok(
                match at(self.path, i, |c, i| c.value(i).contains("/month=")) {
                    Some(false) => Stored::File,
                    // Named as layouts 2 and 3 name them (which had no `path`).
                    Some(true) | None => Stored::MonthDir,
                },
            ),
            _ => Err(bad(
                "has a pack without an offset or an offset without a pack",
            )),
        }
    }

    /// Whether row `i` is the `k`th series of the month `stored` says: in a station-year file
    /// a month's row groups follow each other.
    fn continues(&self, stored: &Stored, k: usize, i: usize) -> bool {
        match stored {
            Stored::Year(y) => self
                .row_group
                .filter(|c| c.is_valid(i))
                .is_some_and(|c| c.value(i) as usize == y.first_row_group as usize + k),
            _ => true,
        }
    }
}

/// `file` with its `series`, if its row groups lie in its object.
fn finished(mut file: ValueFile, series: Vec<SeriesStats>) -> Result<ValueFile> {
    file.series = series.into_boxed_slice();
    if let Stored::Year(y) = file.stored
        && file.row_group(file.series.len()) > y.row_groups as usize
    {
        return Err(EngineError::corrupt(format!(
            "{W}: {} {}: row groups past the {} of {}",
            file.station,
            file.month,
            y.row_groups,
            file.object()
        )));
    }
    Ok(file)
}

/// The value files a files table lists, with ids sharing the catalog's texts.
pub(crate) fn decode_files(bytes: Bytes, texts: &mut Interner) -> Result<Vec<ValueFile>> {
    let (rows, batches) = from_parquet(bytes, W)?;
    decode_batches(rows, batches, texts)
}

/// The value files of `rows` rows of a files table: a whole table, or row groups of it (in
/// which a file at either end may be cut, in tables written before groups held whole files).
pub(crate) fn decode_batches(
    rows: usize,
    batches: impl Iterator<Item = Result<RecordBatch>>,
    texts: &mut Interner,
) -> Result<Vec<ValueFile>> {
    // About two parameters a file; the exact count is not known before reading.
    let mut files: Vec<ValueFile> = room_for(rows / 2 + 1, W)?;
    let mut decoder = FilesDecoder::default();
    for b in batches {
        decoder.push(&b?, texts, &mut files)?;
    }
    decoder.finish(&mut files)?;
    files.shrink_to_fit();
    Ok(files)
}

/// Rows of a files table to value files, batch after batch: a file's rows (one a parameter)
/// may continue in the next batch, so the last file of a batch is held until the next one.
#[derive(Default)]
pub(crate) struct FilesDecoder {
    current: Option<ValueFile>,
    series: Vec<SeriesStats>,
    /// A few dozen parameter ids for a million rows: each checked and shared once.
    parameters: HashMap<String, ParameterId>,
}

impl FilesDecoder {
    /// Appends to `files` the files the rows of `b` complete.
    pub(crate) fn push(
        &mut self,
        b: &RecordBatch,
        texts: &mut Interner,
        files: &mut Vec<ValueFile>,
    ) -> Result<()> {
        let station = column::<StringArray>(b, "station", W)?;
        let month = column::<StringArray>(b, "month", W)?;
        let generation = column::<UInt64Array>(b, "generation", W)?;
        let size = column::<UInt64Array>(b, "size", W)?;
        let parameter = column::<StringArray>(b, "parameter", W)?;
        let count = column::<UInt64Array>(b, "rows", W)?;
        let min = column::<TimestampMicrosecondArray>(b, "min", W)?;
        let max = column::<TimestampMicrosecondArray>(b, "max", W)?;
        let missing = optional_column::<UInt64Array>(b, "missing")?;
        let places = Places::of(b)?;
        for i in 0..b.num_rows() {
            let this_month: Month = month
                .value(i)
                .parse()
                .map_err(|e: String| EngineError::corrupt(format!("{W}: {e}")))?;
            let same_file = self.current.as_ref().is_some_and(|f| {
                f.station.as_str() == station.value(i)
                    && f.month == this_month
                    && f.generation == generation.value(i)
            });
            if !same_file {
                // A station's files mostly come together: its id is the last one's.
                let station = match &self.current {
                    Some(f) if f.station.as_str() == station.value(i) => f.station.clone(),
                    _ => texts.id(station.value(i), W)?,
                };
                if let Some(done) = self.current.take() {
                    files.push(finished(done, std::mem::take(&mut self.series))?);
                }
                self.current = Some(ValueFile {
                    station,
                    month: this_month,
                    generation: generation.value(i),
                    size: size.value(i),
                    series: Box::new([]),
                    stored: places.stored(i)?,
                });
            }
            if let Some(f) = &self.current
                && !places.continues(&f.stored, self.series.len(), i)
            {
                return Err(EngineError::corrupt(format!(
                    "{W}: row {i}: a month's row groups do not follow each other"
                )));
            }
            let parameter = match self.parameters.get(parameter.value(i)) {
                Some(p) => p.clone(),
                None => {
                    let p: ParameterId = texts.id(parameter.value(i), W)?;
                    self.parameters
                        .insert(parameter.value(i).to_owned(), p.clone());
                    p
                }
            };
            self.series.push(SeriesStats {
                parameter,
                rows: count.value(i),
                missing: missing.map_or(0, |m| m.value(i)),
                min: min.value(i),
                max: max.value(i),
            });
        }
        Ok(())
    }

    /// Appends the last file.
    pub(crate) fn finish(self, files: &mut Vec<ValueFile>) -> Result<()> {
        if let Some(done) = self.current {
            files.push(finished(done, self.series)?);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::object_store::memory::InMemory;
    use datafusion::object_store::{ObjectStore, ObjectStoreExt};
    use datafusion::parquet::arrow::ArrowWriter;

    fn file(month: &str, stored: Stored) -> ValueFile {
        ValueFile {
            station: "s".parse().unwrap(),
            month: month.parse().unwrap(),
            generation: 1,
            size: 100,
            series: Box::new([
                SeriesStats {
                    parameter: "p".parse().unwrap(),
                    rows: 3,
                    missing: 1,
                    min: 0,
                    max: 2,
                },
                SeriesStats {
                    parameter: "q".parse().unwrap(),
                    rows: 1,
                    missing: 0,
                    min: 1,
                    max: 1,
                },
            ]),
            stored,
        }
    }

    async fn written(files: Vec<ValueFile>) -> Bytes {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut table = FilesTableWriter::new(Arc::clone(&store), 2).unwrap();
        for f in files {
            table.add(f).await.unwrap();
        }
        let path = table.finish().await.unwrap().files;
        store
            .get(&Path::from(path))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
    }

    /// A one-row table with the columns of `schema()` but the last `drop`, with `pack`,
    /// `offset`, `path` and `row_group` (when kept); the other place columns set.
    fn table_of(
        drop: usize,
        pack: Option<u64>,
        offset: Option<u64>,
        path: &str,
        row_group: Option<u32>,
    ) -> Bytes {
        let full = schema();
        let keep = full.fields().len() - drop;
        let ts =
            |v| Arc::new(TimestampMicrosecondArray::from(vec![v]).with_timezone(UTC)) as ArrayRef;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec!["s"])),
            Arc::new(StringArray::from(vec!["2024-01"])),
            Arc::new(UInt64Array::from(vec![1])),
            Arc::new(UInt64Array::from(vec![100])),
            Arc::new(StringArray::from(vec!["p"])),
            Arc::new(UInt64Array::from(vec![3])),
            ts(0),
            ts(2),
            Arc::new(UInt64Array::from(vec![pack])),
            Arc::new(UInt64Array::from(vec![offset])),
            Arc::new(StringArray::from(vec![path])),
            Arc::new(UInt32Array::from(vec![row_group])),
            Arc::new(UInt32Array::from(vec![Some(24)])),
            Arc::new(UInt64Array::from(vec![Some(4)])),
            Arc::new(UInt64Array::from(vec![Some(90)])),
            Arc::new(UInt64Array::from(vec![0])),
        ];
        let schema = Arc::new(full.project(&(0..keep).collect::<Vec<_>>()).unwrap());
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns[..keep].to_vec()).unwrap();
        let mut buf = Vec::new();
        let mut w = ArrowWriter::try_new(&mut buf, schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        Bytes::from(buf)
    }

    fn one_series(mut f: ValueFile) -> ValueFile {
        f.series = f.series[..1].into();
        f
    }

    #[tokio::test]
    async fn files_keep_where_their_rows_lie() {
        let year = Stored::Year(InYear {
            generation: 3,
            first_row_group: 4,
            row_groups: 24,
            start: 4096,
            footer: 9000,
        });
        let files = vec![
            file("2024-01", year),
            file("2024-02", Stored::File),
            file(
                "2023-03",
                Stored::Pack {
                    generation: 2,
                    offset: 77,
                },
            ),
            file("2023-04", Stored::MonthDir),
        ];
        let bytes = written(files.clone()).await;
        let read = decode_files(bytes.clone(), &mut Interner::default()).unwrap();
        assert_eq!(read, files);
        let objects: Vec<String> = read.iter().map(|f| f.object()).collect();
        assert_eq!(
            objects,
            [
                "values/station=s/2024-g3.parquet",
                "values/station=s/2024-02-g1.parquet",
                "values/station=s/year=2023/months-2.pack",
                "values/station=s/month=2023-04/part-1.parquet",
            ]
        );
        assert_eq!((read[0].row_group(1), read[1].row_group(1)), (5, 1));
        // The `path` column names each row's object, for readers outside.
        let (_, batches) = from_parquet(bytes, W).unwrap();
        let batch = batches.into_iter().next().unwrap().unwrap();
        let paths = column::<StringArray>(&batch, "path", W).unwrap();
        let groups = column::<UInt32Array>(&batch, "row_group", W).unwrap();
        assert_eq!(paths.value(1), objects[0]);
        assert_eq!((groups.value(0), groups.value(1)), (4, 5));
        assert!(groups.is_null(2));
    }

    /// The newest months' table lists, for each series, its newest month with rows, each file
    /// once, ordered by station and month, whatever order the files came in.
    #[tokio::test]
    async fn the_newest_months_table_lists_each_series_newest_month_once() {
        let at = |station: &str, month: &str, q_rows: u64| {
            let mut f = file(month, Stored::File);
            f.station = station.parse().unwrap();
            let mut series = f.series.to_vec();
            series[1].rows = q_rows;
            f.series = series.into_boxed_slice();
            f
        };
        let files = vec![
            at("t", "2024-03", 1),
            at("s", "2024-05", 0),
            at("s", "2024-02", 1),
            at("s", "2024-04", 1),
            at("t", "2024-01", 1),
        ];
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut table = FilesTableWriter::new(Arc::clone(&store), 7).unwrap();
        for f in files.clone() {
            table.add(f).await.unwrap();
        }
        let written = table.finish().await.unwrap();
        assert_eq!(written.newest, "catalog/newest-7.parquet");
        let bytes = store
            .get(&Path::from(written.newest))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let newest = decode_files(bytes, &mut Interner::default()).unwrap();
        // `s`: `p`'s newest is May, `q`'s April (none in May); `t`: March for both.
        assert_eq!(
            newest,
            vec![files[3].clone(), files[1].clone(), files[0].clone()]
        );
    }

    #[test]
    fn tables_of_layouts_2_and_3_name_files_in_month_directories() {
        // Without `path` and after (layout 3), and `pack` and `offset` too (layout 2); neither
        // has `missing`.
        for drop in [6, 8] {
            let read = decode_files(
                table_of(drop, None, None, "", None),
                &mut Interner::default(),
            )
            .unwrap();
            let mut want = one_series(file("2024-01", Stored::MonthDir));
            want.series[0].missing = 0;
            assert_eq!(read, vec![want]);
        }
    }

    #[test]
    fn a_place_half_given_is_refused() {
        let year = "values/station=s/2024-g2.parquet";
        for (pack, offset, row_group, says) in [
            (Some(2), None, None, "without"),
            (None, Some(0), None, "without"),
            (None, None, Some(3), "row group without"),
        ] {
            let table = table_of(0, pack, offset, year, row_group);
            let e = decode_files(table, &mut Interner::default()).unwrap_err();
            assert!(e.to_string().contains(says), "{e}");
        }
    }
}
