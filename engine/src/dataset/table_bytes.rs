//! A files table's bytes as a process holds them: the row groups being decoded or copied,
//! read from the store when they are ([`read_groups`]), none of the rest.

use crate::error::{EngineError, Result};
use bytes::{Bytes, BytesMut};
use datafusion::object_store::path::Path;
use datafusion::object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::{
    PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader, RowGroupMetaData,
};
use datafusion::parquet::file::reader::{ChunkReader, Length};
use std::ops::Range;
use std::sync::Arc;

/// The most a pass over the whole table reads at once: whole row groups up to this many bytes
/// (a row group of the 200 000-station-year table is ~120 KB, so ~70 of them).
pub(crate) const SPAN_BYTES: u64 = 8 << 20;

/// Bytes read of the table's end first, to find its footer and offset index in one request
/// (both together are ~490 KB at 200 000 station-years; further reads get the rest when they
/// are longer: the footer's, then the offset index's).
const FIRST_TAIL_BYTES: u64 = 1 << 20;

/// The table's bytes, as pieces ascending by offset: those of the row groups read. Cloning
/// shares them.
#[derive(Clone)]
pub(crate) struct TableBytes {
    pieces: Arc<[Piece]>,
    len: u64,
}

/// Bytes of the table starting at `start`.
#[derive(Clone)]
struct Piece {
    start: u64,
    bytes: Bytes,
}

impl Piece {
    fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }
}

impl TableBytes {
    /// Bytes `range` of the object: a slice of the piece that holds them, or a copy joined
    /// from the pieces they span; an error where a piece is missing (a table read in part,
    /// [`read_groups`]).
    pub(crate) fn range(&self, range: Range<u64>) -> std::result::Result<Bytes, ParquetError> {
        if range.end > self.len || range.start > range.end {
            return Err(ParquetError::EOF(format!(
                "bytes {range:?} of a table of {} bytes",
                self.len
            )));
        }
        let first = self.pieces.partition_point(|p| p.end() <= range.start);
        if let Some(piece) = self.pieces.get(first)
            && piece.start <= range.start
            && range.end <= piece.end()
        {
            let from = (range.start - piece.start) as usize;
            return Ok(piece
                .bytes
                .slice(from..from + (range.end - range.start) as usize));
        }
        let mut out = BytesMut::with_capacity((range.end - range.start) as usize);
        let mut at = range.start;
        for p in self.pieces[first..]
            .iter()
            .take_while(|p| p.start < range.end)
        {
            if p.start > at {
                break;
            }
            let to = range.end.min(p.end());
            out.extend_from_slice(&p.bytes[(at - p.start) as usize..(to - p.start) as usize]);
            at = to;
        }
        if at < range.end {
            return Err(ParquetError::EOF(format!(
                "bytes {at}..{} of the table were not read",
                range.end
            )));
        }
        Ok(out.freeze())
    }
}

impl Length for TableBytes {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for TableBytes {
    type T = bytes::buf::Reader<Bytes>;

    /// From `start` to the end of the piece that holds it: a reader of a column chunk reads
    /// within its row group, which a piece holds whole.
    fn get_read(&self, start: u64) -> std::result::Result<Self::T, ParquetError> {
        let i = self.pieces.partition_point(|p| p.end() <= start);
        let end = self.pieces.get(i).map_or(self.len, Piece::end);
        Ok(bytes::Buf::reader(self.range(start..end)?))
    }

    fn get_bytes(&self, start: u64, length: usize) -> std::result::Result<Bytes, ParquetError> {
        self.range(start..start.saturating_add(length as u64))
    }
}

/// The bytes of a row group, from the first byte of its first column chunk to the last of its
/// last (None for a group without columns).
pub(crate) fn group_range(group: &RowGroupMetaData) -> Option<Range<u64>> {
    group
        .columns()
        .iter()
        .map(|c| {
            let (start, len) = c.byte_range();
            start..start + len
        })
        .reduce(|a, b| a.start.min(b.start)..a.end.max(b.end))
}

/// Reads the bytes of row groups `groups` of the table at `location` (of `len` bytes, whose
/// footer is `metadata`): contiguous groups in one range, and the ranges in as few requests as
/// the store joins them into. The table's other bytes are not held; reading them fails.
pub(crate) async fn read_groups(
    store: &dyn ObjectStore,
    location: &Path,
    len: u64,
    metadata: &ParquetMetaData,
    groups: &[usize],
) -> Result<TableBytes> {
    let mut ranges: Vec<Range<u64>> = Vec::with_capacity(groups.len());
    for &g in groups {
        let Some(range) = metadata.row_groups().get(g).and_then(group_range) else {
            continue;
        };
        match ranges.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => ranges.push(range),
        }
    }
    if ranges.iter().any(|r| r.end > len) {
        return Err(EngineError::corrupt(format!(
            "files table {location}: row groups {groups:?} end past its {len} bytes"
        )));
    }
    let read = store.get_ranges(location, &ranges).await?;
    let pieces: Vec<Piece> = ranges
        .iter()
        .zip(read)
        .map(|(r, bytes)| Piece {
            start: r.start,
            bytes,
        })
        .collect();
    Ok(TableBytes {
        pieces: pieces.into(),
        len,
    })
}

/// The footer of the table at `location`, with its offset index, and the table's length:
/// the end of the object read (its length comes with it), then the rest of them if they are
/// longer.
pub(crate) async fn read_footer(
    store: &dyn ObjectStore,
    location: &Path,
) -> Result<(ParquetMetaData, u64)> {
    let end = GetOptions::default().with_range(Some(GetRange::Suffix(FIRST_TAIL_BYTES)));
    let got = store.get_opts(location, end).await?;
    let len = got.meta.size;
    let mut tail = got.bytes().await?;
    let damaged = |e: ParquetError| EngineError::corrupt_by(format!("files table {location}"), e);
    loop {
        let mut reader = ParquetMetaDataReader::new()
            .with_column_index_policy(PageIndexPolicy::Skip)
            .with_offset_index_policy(PageIndexPolicy::Optional);
        match reader.try_parse_sized(&tail, len) {
            Ok(()) => return Ok((reader.finish().map_err(damaged)?, len)),
            Err(ParquetError::NeedMoreData(needed))
                if needed > tail.len() && (tail.len() as u64) < len =>
            {
                let want = (needed as u64).min(len);
                tail = store.get_range(location, len - want..len).await?;
            }
            Err(e) => return Err(damaged(e)),
        }
    }
}

/// Row groups `groups` in runs of neighbours whose bytes together are at most
/// [`SPAN_BYTES`] (a group alone where it is larger): what a pass over the table reads at once.
pub(crate) fn spans(
    metadata: &ParquetMetaData,
    groups: Range<usize>,
) -> impl Iterator<Item = Range<usize>> + '_ {
    let size = |g: usize| u64::try_from(metadata.row_group(g).compressed_size()).unwrap_or(0);
    let end = groups.end;
    let mut next = groups.start;
    std::iter::from_fn(move || {
        if next >= end {
            return None;
        }
        let first = next;
        let mut bytes = size(first);
        next += 1;
        while next < end && bytes + size(next) <= SPAN_BYTES {
            bytes += size(next);
            next += 1;
        }
        Some(first..next)
    })
}
