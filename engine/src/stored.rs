//! Stored row groups handed out as they are on disk, for Parquet answers.
//!
//! A month wholly inside a window is one stored row group (layout: one per parameter), already
//! encoded, compressed and indexed. A Parquet answer can copy its column chunks byte for byte
//! instead of decoding them to Arrow and encoding them again: the answer costs a read of the
//! compressed bytes, and the page statistics and page index come along.

use crate::dataset::Dataset;
use crate::error::{EngineError, Result};
use crate::manifest::ValueFile;
use bytes::{Buf, Bytes};
use datafusion::arrow::array::RecordBatch;
use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectMeta, ObjectStore};
use datafusion::parquet::column::writer::ColumnCloseResult;
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::PageIndexPolicy;
use datafusion::parquet::file::reader::{ChunkReader, Length};
use datafusion::parquet::file::writer::SerializedRowGroupWriter;
use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

/// A part of the answer, in order.
pub enum Piece {
    /// Decoded rows.
    Rows(RecordBatch),
    /// A stored row group every row of which belongs to the answer.
    Stored(StoredRowGroup),
}

/// The answer's columns of one stored row group, as encoded on disk.
pub struct StoredRowGroup {
    pub rows: usize,
    columns: Vec<StoredColumn>,
}

struct StoredColumn {
    chunk: FileBytes,
    close: ColumnCloseResult,
}

impl StoredRowGroup {
    /// Appends the column chunks, in the answer's column order, to a row group of a writer
    /// whose schema has exactly those columns. The writer moves the page offsets.
    pub fn append_to<W: Write + Send>(
        self,
        row_group: &mut SerializedRowGroupWriter<'_, W>,
    ) -> std::result::Result<(), ParquetError> {
        for c in self.columns {
            row_group.append_column(&c.chunk, c.close)?;
        }
        Ok(())
    }
}

/// Bytes cut from a file, addressed by their offsets in that file (what a column chunk's
/// metadata points at).
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

impl Dataset {
    /// Row group `row_group` of `file`, columns `columns` (positions in the file schema), with
    /// their statistics and page index: the footer from the shared metadata cache, the chunks
    /// in one ranged read.
    pub(crate) async fn stored_row_group(
        store: Arc<dyn ObjectStore>,
        cache: Arc<datafusion::execution::cache::cache_manager::FileMetadataCache>,
        file: ValueFile,
        row_group: usize,
        columns: Vec<usize>,
    ) -> Result<StoredRowGroup> {
        let meta = ObjectMeta {
            location: Path::from(file.path.as_str()),
            // As DataFusion's own scans key the cache (PartitionedFile::new), so both share it.
            last_modified: chrono::DateTime::UNIX_EPOCH,
            size: file.size,
            e_tag: None,
            version: None,
        };
        let metadata = DFParquetMetadata::new(store.as_ref(), &meta)
            .with_file_metadata_cache(Some(cache))
            .with_page_index_policy(Some(PageIndexPolicy::Optional))
            .fetch_metadata()
            .await?;
        let group = metadata.row_groups().get(row_group).ok_or_else(|| {
            EngineError::Dataset(format!("{}: no row group {row_group}", file.path))
        })?;
        let mut chunks = Vec::with_capacity(columns.len());
        for &c in &columns {
            let chunk = group
                .columns()
                .get(c)
                .ok_or_else(|| EngineError::Dataset(format!("{}: no column {c}", file.path)))?;
            chunks.push(chunk);
        }
        let ranges: Vec<Range<u64>> = chunks
            .iter()
            .map(|c| {
                let (start, len) = c.byte_range();
                start..start + len
            })
            .collect();
        let bytes = store.get_ranges(&meta.location, &ranges).await?;
        let page_index = |c: usize| {
            let column_index = metadata
                .column_index()
                .and_then(|i| i.get(row_group))
                .and_then(|g| g.get(c))
                .cloned();
            let offset_index = metadata
                .offset_index()
                .and_then(|i| i.get(row_group))
                .and_then(|g| g.get(c))
                .cloned();
            (column_index, offset_index)
        };
        let columns = columns
            .iter()
            .zip(chunks)
            .zip(ranges.iter().zip(bytes))
            .map(|((&c, chunk), (range, bytes))| {
                let (column_index, offset_index) = page_index(c);
                StoredColumn {
                    chunk: FileBytes {
                        start: range.start,
                        bytes,
                    },
                    close: ColumnCloseResult {
                        bytes_written: chunk.compressed_size() as u64,
                        rows_written: group.num_rows() as u64,
                        metadata: chunk.clone(),
                        bloom_filter: None,
                        column_index,
                        offset_index,
                    },
                }
            })
            .collect();
        Ok(StoredRowGroup {
            rows: group.num_rows() as usize,
            columns,
        })
    }
}
