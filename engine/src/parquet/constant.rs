//! Text columns of one value as encoded column chunks, to put beside stored chunks in a
//! Parquet answer ([`super::assembly::Assembly::copy_joined`]): a many-series answer's
//! `stationId` and `parameterId` are one value for a whole stored month.
//!
//! A chunk is made once per row count a series' months have (a handful: the month's length in
//! days) and copied for every month of that length. Its two pages are written here: a
//! dictionary page of the one value (`PLAIN`) and a data page of keys that are all zero (one
//! `RLE` run of bit width 0, a few bytes whatever the row count); the parquet crate puts them
//! in a file with their metadata and page index (`append_column`). Its Arrow writer made the
//! same chunks from a dictionary array, hashing and comparing the value once a row: 41 % of a
//! many-series Parquet answer's CPU time (78 series of 20 years, `perf`), for chunks of a few
//! dozen bytes. That writer stays as the fallback ([`ConstantColumns::written`]), and the
//! tests read both alike.

use crate::error::{EngineError, Result};
use crate::parquet::assembly::{Chunks, FileFooter};
use crate::parquet::thrift;
use bytes::Bytes;
use datafusion::arrow::array::{ArrayRef, DictionaryArray, Int32Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{Int32Type, SchemaRef};
use datafusion::parquet::arrow::arrow_writer::ArrowWriterOptions;
use datafusion::parquet::arrow::{ArrowSchemaConverter, ArrowWriter};
use datafusion::parquet::basic::{BoundaryOrder, Compression, Encoding, Type};
use datafusion::parquet::column::page::{CompressedPage, Page, PageWriter};
use datafusion::parquet::column::writer::ColumnCloseResult;
use datafusion::parquet::data_type::ByteArray;
use datafusion::parquet::file::metadata::{
    ColumnChunkMetaData, ColumnIndexBuilder, OffsetIndexBuilder,
};
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::parquet::file::statistics::Statistics;
use datafusion::parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use datafusion::parquet::schema::types::ColumnDescPtr;
use std::sync::{Arc, Mutex, PoisonError};

/// Row counts whose chunks are kept, at most; a series has months of a few lengths.
const KEPT: usize = 16;

/// Columns of a dictionary-encoded text type, each of one value, as chunks of any length.
pub struct ConstantColumns {
    /// The columns' fields.
    schema: SchemaRef,
    texts: Vec<String>,
    /// The stored columns' writer settings, so that the answer's row groups look alike.
    properties: WriterProperties,
    made: Mutex<Vec<Arc<Encoded>>>,
}

/// The columns for one row count: a Parquet file of one row group.
pub struct Encoded {
    rows: usize,
    footer: FileFooter,
    file: Bytes,
    columns: Vec<usize>,
}

impl Encoded {
    /// Its chunks, to join to others with as many rows.
    pub fn chunks(&self) -> Chunks<'_> {
        Chunks {
            footer: &self.footer,
            group: 0,
            columns: &self.columns,
            data: &self.file,
            data_start: 0,
        }
    }
}

impl ConstantColumns {
    /// Columns of the fields of `schema` (dictionaries of Int32 keys and Utf8 values), each
    /// holding the text of the same position in `texts`, written with `properties` (those of
    /// the chunks they are put beside).
    pub fn new(schema: SchemaRef, texts: Vec<String>, properties: WriterProperties) -> Self {
        Self {
            schema,
            texts,
            properties,
            made: Mutex::new(Vec::new()),
        }
    }

    /// The columns' chunks for `rows` rows.
    pub fn encoded(&self, rows: usize) -> Result<Arc<Encoded>> {
        let made = || self.made.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = made().iter().find(|e| e.rows == rows) {
            return Ok(Arc::clone(e));
        }
        let encoded = match self.paged(rows) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!("constant columns of {rows} rows: {e}; made by the Arrow writer");
                self.written(rows)?
            }
        };
        let encoded = Arc::new(encoded);
        let mut made = made();
        if made.len() < KEPT {
            made.push(Arc::clone(&encoded));
        }
        Ok(encoded)
    }

    /// The chunks from pages written here, in a file the parquet crate writes around them.
    fn paged(&self, rows: usize) -> Result<Encoded> {
        let schema = ArrowSchemaConverter::new().convert(&self.schema)?;
        let properties = Arc::new(self.properties.clone());
        let mut writer =
            SerializedFileWriter::new(Vec::new(), schema.root_schema_ptr(), properties)?;
        let mut group = writer.next_row_group()?;
        for (i, text) in self.texts.iter().enumerate() {
            let (pages, close) = constant_chunk(schema.column(i), text.as_bytes(), rows)?;
            group.append_column(&pages, close)?;
        }
        group.close()?;
        let file = Bytes::from(writer.into_inner()?);
        self.made_from(rows, file)
    }

    /// The chunks as the parquet crate's Arrow writer makes them from dictionary arrays.
    fn written(&self, rows: usize) -> Result<Encoded> {
        let columns: Vec<ArrayRef> = self
            .texts
            .iter()
            .map(|text| {
                let keys = Int32Array::from(vec![0; rows]);
                let values: ArrayRef = Arc::new(StringArray::from(vec![text.as_str()]));
                Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(keys, values)?) as ArrayRef)
            })
            .collect::<Result<_>>()?;
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
        // One row group whatever the row count.
        let properties = self
            .properties
            .clone()
            .into_builder()
            .set_max_row_group_row_count(Some(rows.max(1)))
            .build();
        let options = ArrowWriterOptions::new()
            .with_properties(properties)
            .with_skip_arrow_metadata(true);
        let mut writer = ArrowWriter::try_new_with_options(Vec::new(), batch.schema(), options)?;
        writer.write(&batch)?;
        let file = Bytes::from(writer.into_inner()?);
        self.made_from(rows, file)
    }

    fn made_from(&self, rows: usize, file: Bytes) -> Result<Encoded> {
        let footer = FileFooter::parse(&file, 0)?;
        Ok(Encoded {
            rows,
            footer,
            file,
            columns: (0..self.texts.len()).collect(),
        })
    }
}

/// The pages of a column chunk of `rows` rows that all hold `text` (a required column of
/// dictionary-encoded byte arrays), with the metadata and page index the file writer needs:
/// statistics and page bounds as the Arrow writer gives them. The pages are left uncompressed,
/// being a few bytes each.
fn constant_chunk(
    column: ColumnDescPtr,
    text: &[u8],
    rows: usize,
) -> Result<(Bytes, ColumnCloseResult)> {
    let count = u32::try_from(rows)
        .map_err(|_| EngineError::Internal(format!("{rows} rows in one constant chunk")))?;
    let len = u32::try_from(text.len())
        .map_err(|_| EngineError::Internal("a constant text over 4 GiB".into()))?;
    let mut dictionary = len.to_le_bytes().to_vec();
    dictionary.extend_from_slice(text);
    // Keys: their bit width (0, for a dictionary of one value), then one RLE run of `rows`
    // zeros: its header is the run length shifted left once (the low bit 0 says RLE), as a
    // ULEB128 varint (Thrift's too), and a value of bit width 0 takes no bytes.
    let mut keys = vec![0u8];
    thrift::put_varint(&mut keys, u64::from(count) << 1);
    let page = |page: Page| {
        let size = page.buffer().len();
        CompressedPage::new(page, size)
    };
    let mut sink = TrackedWrite::new(Vec::new());
    let (dictionary_spec, data_spec) = {
        let mut pages = SerializedPageWriter::new(&mut sink);
        let dictionary_spec = pages.write_page(page(Page::DictionaryPage {
            buf: Bytes::from(dictionary),
            num_values: 1,
            encoding: Encoding::PLAIN,
            is_sorted: true,
        }))?;
        let data_spec = pages.write_page(page(Page::DataPage {
            buf: Bytes::from(keys),
            num_values: count,
            encoding: Encoding::RLE_DICTIONARY,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        }))?;
        pages.close()?;
        (dictionary_spec, data_spec)
    };
    let pages = Bytes::from(sink.into_inner()?);
    let size = i64::try_from(pages.len()).unwrap_or(i64::MAX);
    let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let statistics = Statistics::byte_array(
        Some(ByteArray::from(text.to_vec())),
        Some(ByteArray::from(text.to_vec())),
        None,
        Some(0),
        false,
    );
    let metadata = ColumnChunkMetaData::builder(column)
        .set_compression(Compression::UNCOMPRESSED)
        .set_encodings(vec![
            Encoding::PLAIN,
            Encoding::RLE,
            Encoding::RLE_DICTIONARY,
        ])
        .set_num_values(i64::from(count))
        .set_total_compressed_size(size)
        .set_total_uncompressed_size(size)
        .set_dictionary_page_offset(Some(as_i64(dictionary_spec.offset)))
        .set_data_page_offset(as_i64(data_spec.offset))
        .set_statistics(statistics)
        .build()?;
    let mut column_index = ColumnIndexBuilder::new(Type::BYTE_ARRAY);
    column_index.append(false, text.to_vec(), text.to_vec(), 0);
    column_index.set_boundary_order(BoundaryOrder::ASCENDING);
    let mut offset_index = OffsetIndexBuilder::new();
    offset_index.append_row_count(i64::from(count));
    offset_index.append_offset_and_size(
        as_i64(data_spec.offset),
        i32::try_from(data_spec.compressed_size).unwrap_or(i32::MAX),
    );
    let close = ColumnCloseResult {
        bytes_written: pages.len() as u64,
        rows_written: u64::from(count),
        metadata,
        bloom_filter: None,
        column_index: Some(column_index.build()?),
        offset_index: Some(offset_index.build()),
    };
    Ok((pages, close))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parquet::assembly::Assembly;
    use datafusion::arrow::array::Array;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn text() -> DataType {
        DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
    }

    /// Constant chunks joined to chunks of another file read back as one table, row groups of
    /// different lengths included; a join of different lengths is refused.
    #[test]
    fn joined_to_other_chunks_they_read_back() {
        let ids = Arc::new(Schema::new(vec![
            Field::new("station", text(), false),
            Field::new("parameter", text(), false),
        ]));
        let constants = ConstantColumns::new(
            Arc::clone(&ids),
            vec!["s-1".into(), "p".into()],
            WriterProperties::default(),
        );
        let values_schema = Arc::new(Schema::new(vec![Field::new(
            "value",
            DataType::Int32,
            false,
        )]));
        let values = |n: i32| {
            let batch = RecordBatch::try_new(
                Arc::clone(&values_schema),
                vec![Arc::new(Int32Array::from_iter_values(0..n)) as ArrayRef],
            )
            .unwrap();
            let mut w = ArrowWriter::try_new(Vec::new(), batch.schema(), None).unwrap();
            w.write(&batch).unwrap();
            let file = Bytes::from(w.into_inner().unwrap());
            (FileFooter::parse(&file, 0).unwrap(), file)
        };
        let mut fields = ids.fields().to_vec();
        fields.extend(values_schema.fields().iter().cloned());
        let all = Arc::new(Schema::new(fields));
        let empty = ArrowWriter::try_new(Vec::new(), Arc::clone(&all), None)
            .unwrap()
            .into_inner()
            .unwrap();
        let (mut out, head) = Assembly::new(&empty).unwrap();
        let mut bytes = head.to_vec();
        // Ids for `ids` rows joined to a stored chunk of `rows` rows.
        let mut join = |ids: usize, rows: i32| {
            let (footer, file) = values(rows);
            let enc = constants.encoded(ids).unwrap();
            let stored = Chunks {
                footer: &footer,
                group: 0,
                columns: &[0],
                data: &file,
                data_start: 0,
            };
            out.copy_joined(&[enc.chunks(), stored])
        };
        for n in [2_976, 2_880, 2_976] {
            for f in join(n as usize, n).unwrap() {
                bytes.extend_from_slice(&f);
            }
        }
        assert!(join(11, 10).is_err());
        assert_eq!(constants.made.lock().unwrap().len(), 3);
        bytes.extend_from_slice(&out.finish().unwrap());

        let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(bytes))
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, 2_976 * 2 + 2_880);
        for b in &batches {
            let station = b
                .column(0)
                .as_any()
                .downcast_ref::<DictionaryArray<Int32Type>>();
            let station = station.unwrap().downcast_dict::<StringArray>().unwrap();
            assert!(station.into_iter().all(|s| s == Some("s-1")));
            assert_eq!(b.column(2).null_count(), 0);
        }
    }

    /// The texts of each row.
    fn texts_of(batches: &[RecordBatch]) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        for b in batches {
            let columns: Vec<Vec<String>> = b
                .columns()
                .iter()
                .map(|c| {
                    let plain = datafusion::arrow::compute::cast(c, &DataType::Utf8).unwrap();
                    let plain = plain.as_any().downcast_ref::<StringArray>().unwrap();
                    plain.iter().map(|v| v.unwrap().to_string()).collect()
                })
                .collect();
            for i in 0..b.num_rows() {
                rows.push(columns.iter().map(|c| c[i].clone()).collect());
            }
        }
        rows
    }

    /// The pages written here and the Arrow writer's chunks read back alike, through the page
    /// index too, with the same statistics; the pages stay a few bytes at any row count.
    #[test]
    fn written_pages_read_as_the_arrow_writers_do() {
        use datafusion::parquet::arrow::arrow_reader::ArrowReaderOptions;
        use datafusion::parquet::file::metadata::PageIndexPolicy;
        use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
        let ids = Arc::new(Schema::new(vec![
            Field::new("station", text(), false),
            Field::new("parameter", text(), false),
        ]));
        let constants = ConstantColumns::new(
            Arc::clone(&ids),
            vec!["a-station-id".into(), "water-level-15min".into()],
            crate::dataset::layout::writer_properties(),
        );
        for rows in [1, 2_048, 2_976, 100_000] {
            let paged = constants.paged(rows).unwrap();
            let written = constants.written(rows).unwrap();
            let read = |e: &Encoded| {
                let options =
                    ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
                let reader =
                    ParquetRecordBatchReaderBuilder::try_new_with_options(e.file.clone(), options)
                        .unwrap();
                let metadata = Arc::clone(reader.metadata());
                let batches: Vec<RecordBatch> =
                    reader.build().unwrap().map(|b| b.unwrap()).collect();
                (metadata, batches)
            };
            let (paged_meta, paged_rows) = read(&paged);
            let (written_meta, written_rows) = read(&written);
            let paged_rows = texts_of(&paged_rows);
            assert_eq!(paged_rows, texts_of(&written_rows), "{rows} rows");
            assert_eq!(paged_rows.len(), rows);
            assert!(
                paged_rows
                    .iter()
                    .all(|r| r == &["a-station-id".to_string(), "water-level-15min".into()])
            );
            for c in 0..2 {
                let stats = |m: &datafusion::parquet::file::metadata::ParquetMetaData| {
                    let s = m.row_group(0).column(c).statistics().unwrap().clone();
                    (
                        s.min_bytes_opt().map(<[u8]>::to_vec),
                        s.max_bytes_opt().map(<[u8]>::to_vec),
                        s.null_count_opt(),
                    )
                };
                assert_eq!(stats(&paged_meta), stats(&written_meta));
                assert!(paged_meta.column_index().is_some_and(|i| i[0].len() == 2));
                let pages = &paged_meta.offset_index().unwrap()[0][c].page_locations;
                assert_eq!(pages.len(), 1);
            }
            assert!(paged.file.len() < 1_000, "{} bytes", paged.file.len());
            let reader = SerializedFileReader::new(paged.file.clone()).unwrap();
            assert_eq!(reader.metadata().file_metadata().num_rows(), rows as i64);
        }
    }
}
