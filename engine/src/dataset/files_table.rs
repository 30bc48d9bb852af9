//! The files table (`catalog/files-<g>.parquet`): every value file of a dataset version, one
//! row per file and parameter, in the order the files were written:
//!
//! | column     | type                  | meaning                                       |
//! |------------|-----------------------|-----------------------------------------------|
//! | station    | utf8                  | station id                                    |
//! | month      | utf8                  | `YYYY-MM` (UTC)                               |
//! | generation | uint64                | the publish that wrote the file (in its name) |
//! | size       | uint64                | bytes of the file                             |
//! | parameter  | utf8                  | parameter id; rows in row group order         |
//! | rows       | uint64                | the parameter's rows in the file              |
//! | min, max   | timestamp(µs, UTC)    | its oldest and newest timestamp               |
//! | pack       | uint64, null          | generation of the pack holding it, if packed  |
//! | offset     | uint64, null          | where the file begins in its pack             |
//!
//! A file's path follows from station, month and generation (`layout::values_path`), a
//! pack's from station, year and the pack's generation (`layout::pack_path`); tables of
//! layout version 2 have no `pack` and `offset` (every file an object of its own). The
//! table is written while the value files are (a row group at a time, uploaded in parts), so
//! writing an archive of any size keeps only a row group in memory; any Parquet reader can
//! query it (`SELECT station, sum(rows) FROM 'catalog/files-1.parquet' GROUP BY 1`).

use crate::dataset::catalog_file::{Interner, column, from_parquet, room_for};
use crate::dataset::layout::{self, UTC, writer_properties};
use crate::dataset::manifest::{Packed, SeriesStats, ValueFile};
use crate::error::{EngineError, Result};
use crate::model::ids::ParameterId;
use crate::model::month::Month;
use bytes::Bytes;
use datafusion::arrow::array::{
    Array, ArrayRef, RecordBatch, StringArray, TimestampMicrosecondArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::object_store::ObjectStore;
use datafusion::object_store::buffered::BufWriter;
use datafusion::object_store::path::Path;
use datafusion::parquet::arrow::AsyncArrowWriter;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

const W: &str = "files table";

/// Files buffered before they go to the Parquet writer as one batch.
const BATCH_FILES: usize = 4096;
/// Rows of a row group of the table.
const ROW_GROUP_ROWS: usize = 64 * 1024;

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
        ]))
    });
    Arc::clone(&SCHEMA)
}

/// A text column from an iterator that does not know its length (`from_iter_values` needs
/// it to).
fn texts<S: AsRef<str>>(values: impl Iterator<Item = S>) -> StringArray {
    values.map(Some).collect()
}

/// Writes the files table of one publish while its value files are written.
pub struct FilesTableWriter {
    path: String,
    writer: AsyncArrowWriter<BufWriter>,
    pending: Vec<ValueFile>,
}

impl FilesTableWriter {
    pub fn new(store: Arc<dyn ObjectStore>, generation: u64) -> Result<Self> {
        let path = layout::catalog_path("files", generation);
        let props = writer_properties()
            .into_builder()
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .build();
        let sink = BufWriter::new(store, Path::from(path.as_str()));
        let writer = AsyncArrowWriter::try_new(sink, schema(), Some(props))?;
        Ok(Self {
            path,
            writer,
            pending: Vec::with_capacity(BATCH_FILES),
        })
    }

    pub async fn add(&mut self, file: ValueFile) -> Result<()> {
        self.pending.push(file);
        if self.pending.len() >= BATCH_FILES {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let rows = || {
            self.pending
                .iter()
                .flat_map(|f| f.series.iter().map(move |s| (f, s)))
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
            Arc::new(UInt64Array::from_iter(
                rows().map(|(f, _)| f.pack.map(|p| p.generation)),
            )),
            Arc::new(UInt64Array::from_iter(
                rows().map(|(f, _)| f.pack.map(|p| p.offset)),
            )),
        ];
        self.writer
            .write(&RecordBatch::try_new(schema(), columns)?)
            .await?;
        self.pending.clear();
        Ok(())
    }

    /// Writes what is buffered and completes the upload; returns the table's path.
    pub async fn finish(mut self) -> Result<String> {
        self.flush().await?;
        self.writer.close().await?;
        Ok(self.path)
    }
}

/// A column that tables of layout version 2 do not have: None there, else as [`column`].
fn optional_column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<Option<&'a T>> {
    match batch.column_by_name(name) {
        None => Ok(None),
        Some(_) => column::<T>(batch, name, W).map(Some),
    }
}

/// Row `i`'s place in a pack, if it has one: `pack` and `offset` set together or not at all.
fn packed_at(
    pack: Option<&UInt64Array>,
    offset: Option<&UInt64Array>,
    i: usize,
) -> Result<Option<Packed>> {
    let value = |c: Option<&UInt64Array>| c.filter(|c| c.is_valid(i)).map(|c| c.value(i));
    match (value(pack), value(offset)) {
        (Some(generation), Some(offset)) => Ok(Some(Packed { generation, offset })),
        (None, None) => Ok(None),
        _ => Err(EngineError::corrupt(format!(
            "{W}: row {i} has a pack without an offset or an offset without a pack"
        ))),
    }
}

/// The value files a files table lists, with ids sharing the catalog's texts.
pub fn decode_files(bytes: Bytes, texts: &mut Interner) -> Result<Vec<ValueFile>> {
    let (rows, batches) = from_parquet(bytes, W)?;
    // About two parameters a file; the exact count is not known before reading.
    let mut files: Vec<ValueFile> = room_for(rows / 2 + 1, W)?;
    let mut series: Vec<SeriesStats> = Vec::new();
    let mut current: Option<ValueFile> = None;
    // A few dozen parameter ids for a million rows: each checked and shared once.
    let mut parameters: HashMap<String, ParameterId> = HashMap::new();
    for b in batches {
        let b = b?;
        let station = column::<StringArray>(&b, "station", W)?;
        let month = column::<StringArray>(&b, "month", W)?;
        let generation = column::<UInt64Array>(&b, "generation", W)?;
        let size = column::<UInt64Array>(&b, "size", W)?;
        let parameter = column::<StringArray>(&b, "parameter", W)?;
        let count = column::<UInt64Array>(&b, "rows", W)?;
        let min = column::<TimestampMicrosecondArray>(&b, "min", W)?;
        let max = column::<TimestampMicrosecondArray>(&b, "max", W)?;
        let pack = optional_column::<UInt64Array>(&b, "pack")?;
        let offset = optional_column::<UInt64Array>(&b, "offset")?;
        for i in 0..b.num_rows() {
            let this_month: Month = month
                .value(i)
                .parse()
                .map_err(|e: String| EngineError::corrupt(format!("{W}: {e}")))?;
            let same_file = current.as_ref().is_some_and(|f| {
                f.station.as_str() == station.value(i)
                    && f.month == this_month
                    && f.generation == generation.value(i)
            });
            if !same_file {
                // A station's files mostly come together: its id is the last one's.
                let station = match &current {
                    Some(f) if f.station.as_str() == station.value(i) => f.station.clone(),
                    _ => texts.id(station.value(i), W)?,
                };
                if let Some(mut done) = current.take() {
                    done.series = std::mem::take(&mut series).into_boxed_slice();
                    files.push(done);
                }
                current = Some(ValueFile {
                    station,
                    month: this_month,
                    generation: generation.value(i),
                    size: size.value(i),
                    series: Box::new([]),
                    pack: packed_at(pack, offset, i)?,
                });
            }
            let parameter = match parameters.get(parameter.value(i)) {
                Some(p) => p.clone(),
                None => {
                    let p: ParameterId = texts.id(parameter.value(i), W)?;
                    parameters.insert(parameter.value(i).to_owned(), p.clone());
                    p
                }
            };
            series.push(SeriesStats {
                parameter,
                rows: count.value(i),
                min: min.value(i),
                max: max.value(i),
            });
        }
    }
    if let Some(mut done) = current {
        done.series = series.into_boxed_slice();
        files.push(done);
    }
    files.shrink_to_fit();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::object_store::memory::InMemory;
    use datafusion::object_store::{ObjectStore, ObjectStoreExt};
    use datafusion::parquet::arrow::ArrowWriter;

    fn file(month: &str, pack: Option<Packed>) -> ValueFile {
        ValueFile {
            station: "s".parse().unwrap(),
            month: month.parse().unwrap(),
            generation: 1,
            size: 100,
            series: Box::new([SeriesStats {
                parameter: "p".parse().unwrap(),
                rows: 3,
                min: 0,
                max: 2,
            }]),
            pack,
        }
    }

    async fn written(files: Vec<ValueFile>) -> Bytes {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut table = FilesTableWriter::new(Arc::clone(&store), 2).unwrap();
        for f in files {
            table.add(f).await.unwrap();
        }
        let path = table.finish().await.unwrap();
        store
            .get(&Path::from(path))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
    }

    /// A table with the columns of `schema()` but the last `drop`, the pack column's values
    /// `pack` and the offset column's `offset` (when kept).
    fn table_of(drop: usize, pack: Option<u64>, offset: Option<u64>) -> Bytes {
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
        ];
        let schema = Arc::new(full.project(&(0..keep).collect::<Vec<_>>()).unwrap());
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns[..keep].to_vec()).unwrap();
        let mut buf = Vec::new();
        let mut w = ArrowWriter::try_new(&mut buf, schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        Bytes::from(buf)
    }

    #[tokio::test]
    async fn files_keep_their_place_in_a_pack() {
        let packed = Some(Packed {
            generation: 2,
            offset: 4096,
        });
        let files = vec![file("2024-01", packed), file("2024-02", None)];
        let bytes = written(files.clone()).await;
        let read = decode_files(bytes, &mut Interner::default()).unwrap();
        assert_eq!(read, files);
        assert_eq!(read[0].object(), "values/station=s/year=2024/months-2.pack");
        assert_eq!(read[0].offset(), 4096);
        assert_eq!(
            read[1].object(),
            "values/station=s/month=2024-02/part-1.parquet"
        );
    }

    #[test]
    fn a_table_of_layout_version_2_lists_files_of_their_own() {
        let read = decode_files(table_of(2, None, None), &mut Interner::default()).unwrap();
        assert_eq!(read, vec![file("2024-01", None)]);
    }

    #[test]
    fn a_pack_without_an_offset_is_refused() {
        for (pack, offset) in [(Some(2), None), (None, Some(0))] {
            let e = decode_files(table_of(0, pack, offset), &mut Interner::default()).unwrap_err();
            assert!(e.to_string().contains("without"), "{e}");
        }
    }
}
