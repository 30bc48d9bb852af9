//! Whole column chunks of a value file decoded page by page, without the Arrow reader.
//!
//! A month of a 15-minute series is ~3 000 rows in two pages a column. For so few rows the
//! Arrow reader's machinery around the values (array readers built per month, record and
//! level buffers zeroed and then filled, batches assembled, dictionary keys checked twice)
//! cost more than decoding them: ~30 % of a made Arrow download's CPU time against ~12 % for
//! the values' LZ4 (`perf --call-graph dwarf`). Here the parquet crate still reads the page
//! headers and decompresses the pages; the values are decoded straight into the arrays.
//!
//! Only what our writer produces is taken: required columns (no levels), INT64 timestamps
//! PLAIN or DELTA_BINARY_PACKED, DOUBLE values PLAIN or in a dictionary, BYTE_ARRAY text in a
//! dictionary. For anything else [`decode_chunk`] answers `None` and the caller hands the month
//! to the Arrow reader.

use bytes::Bytes;
use datafusion::arrow::array::{
    ArrayRef, DictionaryArray, Float64Array, Int32Array, PrimitiveArray, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Int32Type, TimeUnit, TimestampMicrosecondType};
use datafusion::parquet::basic::{Encoding, Type as PhysicalType};
use datafusion::parquet::column::page::{Page, PageReader};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::ColumnChunkMetaData;
use datafusion::parquet::file::page_index::offset_index::PageLocation;
use datafusion::parquet::file::properties::{ReaderProperties, ReaderPropertiesPtr};
use datafusion::parquet::file::reader::ChunkReader;
use datafusion::parquet::file::serialized_reader::SerializedPageReader;
use std::ops::Range;
use std::sync::{Arc, LazyLock};

type Result<T> = std::result::Result<T, ParquetError>;

fn corrupt(what: &str) -> ParquetError {
    ParquetError::General(format!("corrupt page: {what}"))
}

/// Rows `wanted` of a column chunk of `rows` rows as an array of `data_type`, or `None` when
/// the chunk holds something this module does not decode (see the module doc).
///
/// With the chunk's page locations (its offset index), pages wholly outside `wanted` are
/// skipped, neither decompressed nor decoded: the latest rows of a series (`recent=1`) are
/// the last page of a month of two or three. The locations, not the page headers, say how
/// many rows a page holds: asked to peek at a page header, the parquet crate's reader panics
/// on some damaged ones (it unwraps a data page header's fields that damage can remove).
pub(crate) fn decode_chunk<R: ChunkReader + 'static>(
    chunk: Arc<R>,
    meta: &ColumnChunkMetaData,
    rows: usize,
    wanted: Range<usize>,
    locations: Option<&[PageLocation]>,
    data_type: &DataType,
) -> Result<Option<ArrayRef>> {
    let descr = meta.column_descr();
    if descr.max_def_level() != 0 || descr.max_rep_level() != 0 {
        return Ok(None);
    }
    let kind = match (descr.physical_type(), data_type) {
        (PhysicalType::INT64, DataType::Timestamp(TimeUnit::Microsecond, _)) => Kind::Int64,
        (PhysicalType::DOUBLE, DataType::Float64) => Kind::Double,
        (PhysicalType::BYTE_ARRAY, DataType::Dictionary(key, value))
            if **key == DataType::Int32 && **value == DataType::Utf8 =>
        {
            Kind::Text
        }
        _ => return Ok(None),
    };
    static PROPERTIES: LazyLock<ReaderPropertiesPtr> =
        LazyLock::new(|| Arc::new(ReaderProperties::builder().build()));
    let wanted = wanted.start.min(rows)..wanted.end.min(rows);
    let locations = match locations {
        Some(pages) if wanted != (0..rows) => {
            // The reader takes a page's rows as the difference of two first rows: out of
            // order, they would underflow.
            if !in_order(pages, rows) {
                return Err(corrupt("page locations out of order"));
            }
            Some(pages.to_vec())
        }
        _ => None,
    };
    let skipping = locations.is_some();
    let mut pages = SerializedPageReader::new_with_properties(
        chunk,
        meta,
        rows,
        locations,
        Arc::clone(&PROPERTIES),
    )?;
    let mut column = Column::new(kind, rows);
    if !skipping {
        while let Some(page) = pages.get_next_page()? {
            if !column.page(page, rows)? {
                return Ok(None);
            }
        }
        let array = column.finish(rows, data_type)?;
        return Ok(array.map(|a| a.slice(wanted.start, wanted.len())));
    }
    // Rows before the next data page, and the first row decoded.
    let (mut at, mut first) = (0usize, None);
    while let Some(next) = pages.peek_next_page()? {
        if !next.is_dict {
            if at >= wanted.end {
                break;
            }
            // In order (checked above), the locations' rows add up to the chunk's.
            let end = at
                + next
                    .num_rows
                    .ok_or_else(|| corrupt("a page without its rows"))?;
            if end <= wanted.start {
                pages.skip_next_page()?;
                at = end;
                continue;
            }
            first.get_or_insert(at);
            at = end;
        }
        let Some(page) = pages.get_next_page()? else {
            break;
        };
        if !column.page(page, rows)? {
            return Ok(None);
        }
    }
    let first = first.unwrap_or(at);
    if first > wanted.start || at < wanted.end {
        return Err(corrupt("page locations of fewer rows than the chunk"));
    }
    let array = column.finish(at - first, data_type)?;
    Ok(array.map(|a| a.slice(wanted.start - first, wanted.len())))
}

/// Whether the pages' first rows start at 0 and rise, all within the chunk's `rows`.
fn in_order(pages: &[PageLocation], rows: usize) -> bool {
    let firsts = || pages.iter().map(|p| p.first_row_index);
    firsts().next() == Some(0)
        && firsts().zip(firsts().skip(1)).all(|(a, b)| a < b)
        && pages
            .last()
            .is_some_and(|last| (last.first_row_index as u64) < rows as u64)
}

#[derive(Clone, Copy)]
enum Kind {
    Int64,
    Double,
    Text,
}

/// A column chunk being decoded: its dictionary when it has one, and the rows so far.
enum Column {
    Int64 {
        dict: Vec<i64>,
        rows: Vec<i64>,
    },
    Double {
        dict: Vec<f64>,
        rows: Vec<f64>,
    },
    Text {
        dict: Option<StringArray>,
        keys: Vec<i32>,
    },
}

impl Column {
    fn new(kind: Kind, rows: usize) -> Self {
        // The row count comes from the footer: room for a row group of our writer's at most.
        let rows = rows.min(1 << 20);
        match kind {
            Kind::Int64 => Self::Int64 {
                dict: Vec::new(),
                rows: Vec::with_capacity(rows),
            },
            Kind::Double => Self::Double {
                dict: Vec::new(),
                rows: Vec::with_capacity(rows),
            },
            Kind::Text => Self::Text {
                dict: None,
                keys: Vec::with_capacity(rows),
            },
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Int64 { rows, .. } => rows.len(),
            Self::Double { rows, .. } => rows.len(),
            Self::Text { keys, .. } => keys.len(),
        }
    }

    /// Takes in one page of a chunk of `rows` rows; false when the page is of a kind not
    /// decoded here.
    fn page(&mut self, page: Page, rows: usize) -> Result<bool> {
        let (buf, values, encoding) = match page {
            Page::DictionaryPage {
                buf,
                num_values,
                encoding,
                ..
            } => {
                if !matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY) {
                    return Ok(false);
                }
                if self.len() > 0 || self.has_dictionary() {
                    return Err(corrupt("a dictionary page after the first page"));
                }
                return self.dictionary(&buf, num_values as usize).map(|()| true);
            }
            Page::DataPage {
                buf,
                num_values,
                encoding,
                ..
            } => (buf, num_values, encoding),
            Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                num_nulls,
                def_levels_byte_len,
                rep_levels_byte_len,
                ..
            } => {
                if num_nulls != 0 || def_levels_byte_len != 0 || rep_levels_byte_len != 0 {
                    return Ok(false);
                }
                (buf, num_values, encoding)
            }
        };
        let n = values as usize;
        if n > rows - self.len() {
            return Err(corrupt("more values than rows"));
        }
        let dictionary_encoded = matches!(
            encoding,
            Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY
        );
        match (self, encoding) {
            (Self::Int64 { rows, .. }, Encoding::PLAIN) => {
                plain(&buf, n, rows, i64::from_le_bytes)?
            }
            (Self::Double { rows, .. }, Encoding::PLAIN) => {
                plain(&buf, n, rows, f64::from_le_bytes)?
            }
            (Self::Int64 { rows, .. }, Encoding::DELTA_BINARY_PACKED) => delta(&buf, n, rows)?,
            (Self::Int64 { dict, rows }, _) if dictionary_encoded => lookup(&buf, n, dict, rows)?,
            (Self::Double { dict, rows }, _) if dictionary_encoded => lookup(&buf, n, dict, rows)?,
            // Keys out of range fail `DictionaryArray::try_new` in `finish`.
            (
                Self::Text {
                    dict: Some(_),
                    keys,
                },
                _,
            ) if dictionary_encoded => dictionary_keys(&buf, n, keys)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn has_dictionary(&self) -> bool {
        match self {
            Self::Int64 { dict, .. } => !dict.is_empty(),
            Self::Double { dict, .. } => !dict.is_empty(),
            Self::Text { dict, .. } => dict.is_some(),
        }
    }

    fn dictionary(&mut self, buf: &Bytes, n: usize) -> Result<()> {
        match self {
            Self::Int64 { dict, .. } => plain(buf, n, dict, i64::from_le_bytes),
            Self::Double { dict, .. } => plain(buf, n, dict, f64::from_le_bytes),
            Self::Text { dict, .. } => {
                *dict = Some(plain_texts(buf, n)?);
                Ok(())
            }
        }
    }

    fn finish(self, rows: usize, data_type: &DataType) -> Result<Option<ArrayRef>> {
        let len = self.len();
        if len != rows {
            return Err(corrupt(&format!("{len} values in pages of {rows} rows")));
        }
        Ok(Some(match self {
            // `data_type` is a microsecond timestamp (see `decode_chunk`), in the answer's zone.
            Self::Int64 { rows, .. } => Arc::new(
                PrimitiveArray::<TimestampMicrosecondType>::from(rows)
                    .with_data_type(data_type.clone()),
            ),
            Self::Double { rows, .. } => Arc::new(Float64Array::from(rows)),
            Self::Text { dict, keys } => {
                let values = dict.ok_or_else(|| corrupt("no dictionary page"))?;
                Arc::new(DictionaryArray::<Int32Type>::try_new(
                    Int32Array::from(keys),
                    Arc::new(values),
                )?)
            }
        }))
    }
}

/// `n` fixed-width values stored as they are (PLAIN), appended to `out`.
fn plain<T, const W: usize>(
    buf: &[u8],
    n: usize,
    out: &mut Vec<T>,
    from_le: impl Fn([u8; W]) -> T,
) -> Result<()> {
    let bytes = buf
        .get(..n * W)
        .ok_or_else(|| corrupt("short PLAIN page"))?;
    out.extend(
        bytes
            .chunks_exact(W)
            .map(|c| from_le(c.try_into().unwrap_or([0; W]))),
    );
    Ok(())
}

/// `n` texts stored as they are (PLAIN: a 4-byte length before each), as a string array.
fn plain_texts(buf: &[u8], n: usize) -> Result<StringArray> {
    let mut texts = Vec::with_capacity(n.min(buf.len() / 4));
    let mut rest = buf;
    for _ in 0..n {
        let (len, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| corrupt("short dictionary page"))?;
        let len = u32::from_le_bytes(*len) as usize;
        let text = tail
            .get(..len)
            .ok_or_else(|| corrupt("short dictionary page"))?;
        texts.push(std::str::from_utf8(text).map_err(|_| corrupt("text not UTF-8"))?);
        rest = &tail[len..];
    }
    Ok(StringArray::from(texts))
}

/// `n` values of a dictionary-encoded page, looked up in `dict` and appended to `out`.
fn lookup<T: Copy>(buf: &[u8], n: usize, dict: &[T], out: &mut Vec<T>) -> Result<()> {
    let mut keys = Vec::with_capacity(n);
    dictionary_keys(buf, n, &mut keys)?;
    for k in keys {
        out.push(
            *dict
                .get(k as usize)
                .ok_or_else(|| corrupt("dictionary key out of range"))?,
        );
    }
    Ok(())
}

/// The `n` keys of a dictionary-encoded page: their bit width in the first byte, then the
/// RLE / bit-packed hybrid.
fn dictionary_keys(buf: &[u8], n: usize, out: &mut Vec<i32>) -> Result<()> {
    let (&width, data) = buf.split_first().ok_or_else(|| corrupt("empty page"))?;
    if width > 32 {
        return Err(corrupt("dictionary key wider than 32 bits"));
    }
    let width = usize::from(width);
    let end = out.len() + n;
    let mut data = data;
    while out.len() < end {
        let header = uleb128(&mut data)?;
        let left = end - out.len();
        if header & 1 == 1 {
            // Groups of eight values, `width` bytes a group.
            let groups = usize::try_from(header >> 1).map_err(|_| corrupt("run too long"))?;
            let bytes = groups
                .checked_mul(width)
                .ok_or_else(|| corrupt("run too long"))?;
            let packed = data
                .get(..bytes)
                .ok_or_else(|| corrupt("short bit-packed run"))?;
            let count = groups.saturating_mul(8).min(left);
            unpack(packed, width, count, |v| out.push(v as i32))?;
            data = &data[bytes..];
        } else {
            let count = usize::try_from(header >> 1).map_err(|_| corrupt("run too long"))?;
            let (value, rest) = data
                .split_at_checked(width.div_ceil(8))
                .ok_or_else(|| corrupt("short RLE run"))?;
            let mut le = [0u8; 4];
            le[..value.len()].copy_from_slice(value);
            out.extend(std::iter::repeat_n(i32::from_le_bytes(le), count.min(left)));
            data = rest;
        }
    }
    Ok(())
}

/// `n` DELTA_BINARY_PACKED 64-bit integers appended to `out`: a header (values a block,
/// miniblocks a block, values in all, the first value), then blocks of a minimum delta, the
/// bit width of each miniblock and the miniblocks' deltas from that minimum, bit-packed.
fn delta(buf: &[u8], n: usize, out: &mut Vec<i64>) -> Result<()> {
    let mut data = buf;
    let block = usize::try_from(uleb128(&mut data)?).map_err(|_| corrupt("block size"))?;
    let miniblocks = usize::try_from(uleb128(&mut data)?).map_err(|_| corrupt("miniblocks"))?;
    let total = usize::try_from(uleb128(&mut data)?).map_err(|_| corrupt("value count"))?;
    let mut value = zigzag(uleb128(&mut data)?);
    if total != n {
        return Err(corrupt("DELTA_BINARY_PACKED count differs from the page's"));
    }
    if n == 0 {
        return Ok(());
    }
    if miniblocks == 0
        || block % miniblocks != 0
        || block / miniblocks == 0
        || (block / miniblocks) % 32 != 0
    {
        return Err(corrupt("DELTA_BINARY_PACKED block shape"));
    }
    let per_miniblock = block / miniblocks;
    let end = out.len() + n;
    out.push(value);
    while out.len() < end {
        let min_delta = zigzag(uleb128(&mut data)?);
        let (widths, rest) = data
            .split_at_checked(miniblocks)
            .ok_or_else(|| corrupt("short DELTA_BINARY_PACKED block"))?;
        data = rest;
        for &width in widths {
            if out.len() == end {
                break;
            }
            let width = usize::from(width);
            if width > 64 {
                return Err(corrupt("delta wider than 64 bits"));
            }
            let count = per_miniblock.min(end - out.len());
            // A miniblock takes its full size, although the last one's values may be fewer.
            let full = per_miniblock.saturating_mul(width) / 8;
            let bytes = full.min(data.len());
            if width == 0 {
                // A regular series: every delta the minimum. Computed from the start rather
                // than one from the other, so that the loop vectorises.
                let start = value;
                out.extend(
                    (1..=count as i64).map(|k| start.wrapping_add(min_delta.wrapping_mul(k))),
                );
                value = start.wrapping_add(min_delta.wrapping_mul(count as i64));
            } else {
                unpack(&data[..bytes], width, count, |d| {
                    value = value.wrapping_add(min_delta).wrapping_add(d as i64);
                    out.push(value);
                })?;
            }
            data = &data[bytes..];
        }
    }
    Ok(())
}

/// Calls `f` with each of `count` values of `width` bits (at most 64) packed from the lowest
/// bit of `data` upwards.
#[inline(always)]
fn unpack(data: &[u8], width: usize, count: usize, mut f: impl FnMut(u64)) -> Result<()> {
    if data.len() < (count * width).div_ceil(8) {
        return Err(corrupt("short bit-packed values"));
    }
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    for i in 0..count {
        let bit = i * width;
        let byte = bit / 8;
        // A fixed-size load where 16 bytes are left (a value spans at most 9), else a copy.
        let window = match data.get(byte..byte + 16) {
            Some(w) => u128::from_le_bytes(w.try_into().unwrap_or([0; 16])),
            None => {
                let mut w = [0u8; 16];
                let tail = &data[byte.min(data.len())..];
                w[..tail.len()].copy_from_slice(tail);
                u128::from_le_bytes(w)
            }
        };
        f((window >> (bit % 8)) as u64 & mask);
    }
    Ok(())
}

/// An unsigned LEB128 integer taken from the front of `data`.
fn uleb128(data: &mut &[u8]) -> Result<u64> {
    let mut value = 0u64;
    for (i, &b) in data.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *data = &data[i + 1..];
            return Ok(value);
        }
    }
    Err(corrupt("bad varint"))
}

fn zigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::layout::{value_file_properties, values_schema, writer_properties};
    use datafusion::arrow::array::{Array, RecordBatch, TimestampMicrosecondArray};
    use datafusion::arrow::compute::concat_batches;
    use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
    use datafusion::arrow::record_batch::RecordBatchReader;
    use datafusion::parquet::arrow::ArrowWriter;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use datafusion::parquet::basic::Compression;
    use datafusion::parquet::file::metadata::{
        PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader,
    };
    use datafusion::parquet::file::properties::{WriterProperties, WriterVersion};
    use datafusion::parquet::schema::types::ColumnPath;

    /// A small deterministic generator (xorshift), so that failures repeat.
    struct Noise(u64);

    impl Noise {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// `rows` rows of the value files' schema: timestamps from `time`, values from `value`,
    /// qualities from `quality`.
    fn batch(
        rows: usize,
        time: impl Fn(usize) -> i64,
        value: impl Fn(usize) -> f64,
        quality: impl Fn(usize) -> &'static str,
    ) -> RecordBatch {
        let schema = values_schema();
        let text = |f: &dyn Fn(usize) -> &'static str| -> ArrayRef {
            Arc::new((0..rows).map(f).collect::<DictionaryArray<Int32Type>>())
        };
        RecordBatch::try_new(
            schema,
            vec![
                text(&|_| "discharge-15min"),
                Arc::new(
                    TimestampMicrosecondArray::from((0..rows).map(time).collect::<Vec<_>>())
                        .with_timezone("UTC"),
                ),
                Arc::new(Float64Array::from((0..rows).map(value).collect::<Vec<_>>())),
                text(&quality),
            ],
        )
        .unwrap()
    }

    fn write(batch: &RecordBatch, props: WriterProperties) -> Bytes {
        let mut buf = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props)).unwrap();
        writer.write(batch).unwrap();
        writer.close().unwrap();
        Bytes::from(buf)
    }

    fn metadata(file: &Bytes) -> Arc<ParquetMetaData> {
        let reader = ParquetRecordBatchReaderBuilder::try_new(file.clone()).unwrap();
        Arc::clone(reader.metadata())
    }

    /// The file's metadata with its offset index.
    fn indexed(file: &Bytes) -> ParquetMetaData {
        ParquetMetaDataReader::new()
            .with_offset_index_policy(PageIndexPolicy::Required)
            .parse_and_finish(file)
            .unwrap()
    }

    /// Where the pages of column `c` of the first row group are.
    fn locations(indexed: &ParquetMetaData, c: usize) -> &[PageLocation] {
        indexed.offset_index().unwrap()[0][c].page_locations()
    }

    /// Each column of the file's first row group decoded here (`None` where not taken).
    fn ours(file: &Bytes, schema: &SchemaRef) -> Vec<Option<ArrayRef>> {
        let metadata = metadata(file);
        let group = metadata.row_group(0);
        let rows = group.num_rows() as usize;
        schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                decode_chunk(
                    Arc::new(file.clone()),
                    group.column(i),
                    rows,
                    0..rows,
                    None,
                    f.data_type(),
                )
                .unwrap()
            })
            .collect()
    }

    fn theirs(file: &Bytes) -> RecordBatch {
        let reader = ParquetRecordBatchReaderBuilder::try_new(file.clone())
            .unwrap()
            .build()
            .unwrap();
        let schema = reader.schema();
        let batches: Vec<_> = reader.map(|b| b.unwrap()).collect();
        concat_batches(&schema, &batches).unwrap()
    }

    /// The same arrays, dictionaries included value for value (an Arrow IPC answer writes
    /// the dictionary as it is, so a dictionary merely equivalent would change its bytes).
    fn assert_same(ours: &dyn Array, theirs: &dyn Array, what: &str) {
        assert_eq!(ours.data_type(), theirs.data_type(), "{what}");
        assert_eq!(ours, theirs, "{what}");
        if let (Some(a), Some(b)) = (
            ours.as_any().downcast_ref::<DictionaryArray<Int32Type>>(),
            theirs.as_any().downcast_ref::<DictionaryArray<Int32Type>>(),
        ) {
            assert_eq!(a.keys(), b.keys(), "{what}: keys");
            assert_eq!(a.values(), b.values(), "{what}: dictionary");
        }
    }

    /// Regular and irregular series, repeating and distinct values, one to many qualities,
    /// one row to several pages, through the writer settings we use and the ones a file may
    /// also come with (data pages v2, no compression, PLAIN or dictionary timestamps): every
    /// column decodes here to what the Arrow reader makes of it.
    #[test]
    fn decodes_what_the_arrow_reader_decodes() {
        const QUALITIES: [&str; 5] = ["good", "suspect", "estimated", "missing", "bad"];
        let regular = batch(
            2_976,
            |i| 1_451_606_400_000_000 + i as i64 * 900_000_000,
            |i| (i as f64 * 0.37).sin() * 100.0,
            |i| if i % 1_000 < 40 { "suspect" } else { "good" },
        );
        let irregular = {
            let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
            let times: Vec<i64> = (0..5_000)
                .map(|i| match i % 97 {
                    // Jumps across the whole range: deltas 64 bits wide.
                    0 => i64::MIN + i as i64,
                    1 => i64::MAX - i as i64,
                    _ => (noise.next() >> 20) as i64 - (1 << 43),
                })
                .collect();
            let qualities: Vec<&str> = (0..5_000)
                .map(|_| QUALITIES[noise.next() as usize % QUALITIES.len()])
                .collect();
            batch(
                5_000,
                |i| times[i],
                |i| (i % 7) as f64 - 3.5,
                |i| qualities[i],
            )
        };
        let one = batch(1, |_| -1, |_| f64::NAN, |_| "good");
        let plain_times = writer_properties()
            .into_builder()
            .set_column_encoding(ColumnPath::from("timestamp"), Encoding::PLAIN)
            .build();
        let settings = [
            ("ours", writer_properties()),
            ("ours, repeating values", value_file_properties(true)),
            (
                "pages v2",
                writer_properties()
                    .into_builder()
                    .set_writer_version(WriterVersion::PARQUET_2_0)
                    .build(),
            ),
            (
                "uncompressed",
                writer_properties()
                    .into_builder()
                    .set_compression(Compression::UNCOMPRESSED)
                    .build(),
            ),
            ("PLAIN timestamps", plain_times),
            (
                "dictionaries everywhere",
                WriterProperties::builder()
                    .set_data_page_row_count_limit(1_000)
                    .set_write_batch_size(1_000)
                    .build(),
            ),
        ];
        for (name, batch) in [
            ("regular", &regular),
            ("irregular", &irregular),
            ("one row", &one),
        ] {
            for (setting, props) in &settings {
                let file = write(batch, props.clone());
                let theirs = theirs(&file);
                for (i, ours) in ours(&file, &batch.schema()).into_iter().enumerate() {
                    let what = format!("{name}, {setting}, column {i}");
                    let ours = ours.unwrap_or_else(|| panic!("{what}: not decoded"));
                    assert_same(ours.as_ref(), theirs.column(i).as_ref(), &what);
                }
            }
        }
    }

    /// Row ranges decode to the rows the Arrow reader gives for them, at page edges and
    /// inside pages, dictionary columns included; pages before the range are not even read.
    #[test]
    fn decodes_row_ranges_skipping_other_pages() {
        let rows = 2_976;
        let sample = batch(
            rows,
            |i| 1_451_606_400_000_000 + i as i64 * 900_000_000,
            |i| (i as f64 * 0.37).sin() * 100.0,
            |i| if i % 700 < 40 { "suspect" } else { "good" },
        );
        for compression in [Compression::UNCOMPRESSED, Compression::LZ4_RAW] {
            let props = value_file_properties(false)
                .into_builder()
                .set_compression(compression)
                .set_data_page_row_count_limit(500)
                .set_write_batch_size(500)
                .build();
            let file = write(&sample, props);
            let theirs = theirs(&file);
            let metadata = metadata(&file);
            let group = metadata.row_group(0);
            let indexed = indexed(&file);
            let decode = |file: &Bytes, c: usize, wanted: Range<usize>| {
                let field = sample.schema().field(c).clone();
                decode_chunk(
                    Arc::new(file.clone()),
                    group.column(c),
                    rows,
                    wanted,
                    Some(locations(&indexed, c)),
                    field.data_type(),
                )
            };
            for wanted in [
                0..rows,
                0..1,
                rows - 1..rows,
                499..501,
                500..1000,
                1_234..2_345,
                10..10,
                2_900..4_000,
            ] {
                for c in 0..sample.num_columns() {
                    let ours = decode(&file, c, wanted.clone()).unwrap().unwrap();
                    let end = wanted.end.min(rows);
                    let want = theirs.column(c).slice(wanted.start, end - wanted.start);
                    assert_same(ours.as_ref(), want.as_ref(), &format!("{wanted:?}, {c}"));
                }
            }
            // The value chunk's first data page made unreadable (its header's first byte):
            // rows after it still decode, so it was skipped, not read.
            let value = 2;
            let pages = locations(&indexed, value);
            let first_rows = pages[1].first_row_index as usize;
            let mut damaged = file.to_vec();
            damaged[pages[0].offset as usize] = 0xff;
            let damaged = Bytes::from(damaged);
            assert!(decode(&damaged, value, 0..rows).is_err());
            assert!(decode(&damaged, value, 0..first_rows).is_err());
            let later = decode(&damaged, value, first_rows..rows).unwrap().unwrap();
            let want = theirs.column(value).slice(first_rows, rows - first_rows);
            assert_same(later.as_ref(), want.as_ref(), "after the damage");
        }
    }

    /// Page locations that do not match the chunk (a page left out, first rows out of order
    /// or past the end) fail the decoding instead of cutting the wrong rows or panicking.
    #[test]
    fn page_locations_that_do_not_fit_fail() {
        let rows = 2_976;
        let sample = batch(rows, |i| i as i64, |i| i as f64, |_| "good");
        let props = value_file_properties(false)
            .into_builder()
            .set_data_page_row_count_limit(500)
            .set_write_batch_size(500)
            .build();
        let file = write(&sample, props);
        let metadata = metadata(&file);
        let indexed = indexed(&file);
        let value = 2;
        let pages = locations(&indexed, value).to_vec();
        assert!(pages.len() > 3);
        let with = |pages: &[PageLocation]| {
            decode_chunk(
                Arc::new(file.clone()),
                metadata.row_group(0).column(value),
                rows,
                rows - 10..rows,
                Some(pages),
                &DataType::Float64,
            )
        };
        assert!(with(&pages).unwrap().is_some());
        let last_left_out = &pages[..pages.len() - 1];
        let mut swapped = pages.clone();
        swapped.swap(1, 2);
        let mut past_the_end = pages.clone();
        past_the_end.last_mut().unwrap().first_row_index = rows as i64;
        let mut not_from_zero = pages.clone();
        not_from_zero[0].first_row_index = 1;
        for (what, bad) in [
            ("last left out", last_left_out),
            ("swapped", &swapped[..]),
            ("past the end", &past_the_end[..]),
            ("not from zero", &not_from_zero[..]),
            ("none", &[][..]),
        ] {
            assert!(with(bad).is_err(), "{what}");
        }
    }

    /// Chunks with levels (a nullable column), texts whose dictionary overflowed into PLAIN
    /// pages and values in an encoding we never write are left to the Arrow reader.
    #[test]
    fn leaves_the_rest_to_the_arrow_reader() {
        let rows = 3_000;
        let nullable = Arc::new(Schema::new(vec![Field::new(
            "value",
            DataType::Float64,
            true,
        )]));
        let with_null = RecordBatch::try_new(
            Arc::clone(&nullable),
            vec![Arc::new(Float64Array::from(
                (0..rows)
                    .map(|i| (i != 5).then_some(i as f64))
                    .collect::<Vec<_>>(),
            ))],
        )
        .unwrap();
        let file = write(&with_null, writer_properties());
        assert!(ours(&file, &nullable)[0].is_none());

        let texts: Vec<String> = (0..rows).map(|i| format!("quality {i}")).collect();
        let many = batch(
            rows,
            |i| i as i64,
            |i| i as f64,
            |i| texts[i].clone().leak(),
        );
        let overflowing = writer_properties()
            .into_builder()
            .set_dictionary_page_size_limit(256)
            .build();
        let file = write(&many, overflowing);
        let decoded = ours(&file, &many.schema());
        assert!(decoded[1].is_some() && decoded[2].is_some());
        assert!(decoded[3].is_none(), "a dictionary that overflowed");

        let split = value_file_properties(false)
            .into_builder()
            .set_column_encoding(ColumnPath::from("value"), Encoding::BYTE_STREAM_SPLIT)
            .build();
        let file = write(&many, split);
        assert!(ours(&file, &many.schema())[2].is_none());
    }

    /// Any byte of a chunk damaged, compressed or not: an error or some array, never a panic
    /// or a runaway allocation.
    #[test]
    fn damaged_chunks_fail_cleanly() {
        let mut noise = Noise(7);
        let qualities = ["good", "suspect", "estimated"];
        let rows: Vec<(i64, usize)> = (0..300)
            .map(|i| {
                (
                    i * 900 + (noise.next() % 3) as i64,
                    noise.next() as usize % 3,
                )
            })
            .collect();
        let sample = batch(
            300,
            |i| rows[i].0,
            |i| i as f64 / 8.0,
            |i| qualities[rows[i].1],
        );
        for compression in [Compression::UNCOMPRESSED, Compression::LZ4_RAW] {
            let props = value_file_properties(true)
                .into_builder()
                .set_compression(compression)
                .set_data_page_row_count_limit(128)
                .set_write_batch_size(64)
                .build();
            let file = write(&sample, props);
            let metadata = metadata(&file);
            let indexed = indexed(&file);
            let group = metadata.row_group(0);
            for (c, field) in sample.schema().fields().iter().enumerate() {
                let column = group.column(c);
                let (start, len) = column.byte_range();
                for at in start..start + len {
                    for flip in [0x01u8, 0x80, 0xff] {
                        let mut damaged = file.to_vec();
                        damaged[at as usize] ^= flip;
                        let damaged = Arc::new(Bytes::from(damaged));
                        let _ = decode_chunk(
                            Arc::clone(&damaged),
                            column,
                            300,
                            0..300,
                            None,
                            field.data_type(),
                        );
                        let _ = decode_chunk(
                            damaged,
                            column,
                            300,
                            150..300,
                            Some(locations(&indexed, c)),
                            field.data_type(),
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn varints_and_bit_packing() {
        let mut data: &[u8] = &[0xe5, 0x8e, 0x26, 0x01];
        assert_eq!(uleb128(&mut data).unwrap(), 624_485);
        assert_eq!(data, [0x01]);
        assert!(uleb128(&mut &[0x80u8; 10][..]).is_err());
        assert_eq!([zigzag(0), zigzag(1), zigzag(2), zigzag(3)], [0, -1, 1, -2]);
        assert_eq!(zigzag(u64::MAX), i64::MIN);

        // 0..8 in three bits each: the example of the Parquet format's RLE encoding.
        let mut values = Vec::new();
        unpack(&[0b1000_1000, 0b1100_0110, 0b1111_1010], 3, 8, |v| {
            values.push(v)
        })
        .unwrap();
        assert_eq!(values, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert!(unpack(&[0xff], 3, 8, |_| ()).is_err());
        let mut wide = Vec::new();
        unpack(&[0xff; 24], 64, 3, |v| wide.push(v)).unwrap();
        assert_eq!(wide, [u64::MAX; 3]);
    }
}
