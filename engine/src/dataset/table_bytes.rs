//! A files table's bytes as a process holds them: the object read whole, or, for a version
//! opened beside the one served before it, in pieces (a piece a row group, the file's head and
//! its tail of page indexes and footer), where each row group that is byte for byte one of
//! the previous table's is that table's bytes, held once for both.
//!
//! An append copies the files table's row groups it does not touch as they are
//! (`write::import`, `FilesTableWriter::copy_group`), so a following server's switch to the
//! new version (`Dataset::open_beside`) would otherwise hold the table twice while both
//! versions are open: 36 MB more at 200 000 station-years, a third of what the switch added
//! to the server's RSS (`benches/RESULTS.md`, issue 56). The pieces are read a span of row
//! groups at a time, so the switch never holds the new table whole either.

use crate::error::{EngineError, Result};
use bytes::{Bytes, BytesMut};
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::{
    PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader, RowGroupMetaData,
};
use datafusion::parquet::file::reader::{ChunkReader, Length};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// The most a read of the new table asks for at once: whole row groups up to this many bytes
/// (a row group of the 200 000-station-year table is ~120 KB, so ~70 of them).
pub(crate) const SPAN_BYTES: u64 = 8 << 20;

/// Bytes read of the table's end first, to find its footer (the whole footer at 200 000
/// station-years is ~490 KB; a second read gets the rest when it is longer).
const FIRST_TAIL_BYTES: u64 = 64 << 10;

/// The table's bytes, as pieces that together cover the object, ascending by offset. Cloning
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

/// Where `bytes` lie in memory.
fn memory(bytes: &Bytes) -> Range<usize> {
    let start = bytes.as_ptr() as usize;
    start..start + bytes.len()
}

/// How many of a table's row groups a read beside another table found in that table.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shared {
    pub groups: usize,
    pub shared: usize,
    pub shared_bytes: u64,
}

impl TableBytes {
    /// The object read whole.
    pub(crate) fn whole(bytes: Bytes) -> Self {
        let len = bytes.len() as u64;
        Self {
            pieces: Arc::new([Piece { start: 0, bytes }]),
            len,
        }
    }

    /// No bytes: what a table left in the store holds (see [`read_groups`]).
    pub(crate) fn none() -> Self {
        Self {
            pieces: Arc::new([]),
            len: 0,
        }
    }

    /// Bytes held (each piece counted, whether or not another table holds it too).
    pub(crate) fn held(&self) -> usize {
        self.pieces.iter().map(|p| p.bytes.len()).sum()
    }

    /// Bytes held that `other` does not hold in the same memory: what this table costs beside
    /// it (where it was read beside `other`, or beside a table that took its row groups from
    /// `other`).
    pub(crate) fn held_apart_from(&self, other: &Self) -> usize {
        let mut theirs: Vec<Range<usize>> = other.pieces.iter().map(|p| memory(&p.bytes)).collect();
        theirs.sort_unstable_by_key(|r| r.start);
        let within_theirs = |mine: Range<usize>| {
            let before = theirs.partition_point(|t| t.start <= mine.start);
            before > 0 && mine.end <= theirs[before - 1].end
        };
        self.pieces
            .iter()
            .filter(|p| !within_theirs(memory(&p.bytes)))
            .map(|p| p.bytes.len())
            .sum()
    }

    /// The object's bytes in one buffer: its only piece, else the pieces copied together (for
    /// writers, which read tables whole and never hold pieces).
    pub(crate) fn joined(&self) -> Bytes {
        match &*self.pieces {
            [one] => one.bytes.clone(),
            pieces => {
                let mut out = BytesMut::with_capacity(self.held());
                for p in pieces {
                    out.extend_from_slice(&p.bytes);
                }
                out.freeze()
            }
        }
    }

    /// Bytes `range` of the object: a slice of the piece that holds them, or a copy joined
    /// from the pieces they span; an error where a piece is missing (a table read in part,
    /// [`read_groups`]).
    fn range(&self, range: Range<u64>) -> std::result::Result<Bytes, ParquetError> {
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

    /// Whether two tables hold the bytes of `range` (theirs) in the same memory: a row group
    /// one read beside the other took over.
    #[cfg(test)]
    pub(crate) fn same_memory(
        &self,
        range: Range<u64>,
        other: &Self,
        other_range: Range<u64>,
    ) -> bool {
        match (self.range(range), other.range(other_range)) {
            (Ok(a), Ok(b)) => a.as_ptr() == b.as_ptr() && a.len() == b.len(),
            _ => false,
        }
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

/// The bytes of each row group of a table, ascending by offset: from the first byte of its
/// first column chunk to the last of its last.
pub(crate) fn group_ranges(metadata: &ParquetMetaData) -> Vec<Range<u64>> {
    let mut ranges: Vec<Range<u64>> = metadata
        .row_groups()
        .iter()
        .filter_map(group_range)
        .collect();
    ranges.sort_by_key(|r| r.start);
    ranges
}

/// The bytes of a row group, from the first byte of its first column chunk to the last of its
/// last (None for a group without columns).
fn group_range(group: &RowGroupMetaData) -> Option<Range<u64>> {
    group
        .columns()
        .iter()
        .map(|c| {
            let (start, len) = c.byte_range();
            start..start + len
        })
        .reduce(|a, b| a.start.min(b.start)..a.end.max(b.end))
}

/// What finds a row group's bytes among another table's: its length and its first and last
/// bytes (a candidate is then compared whole).
type GroupKey = (u64, [u8; 16], [u8; 16]);

fn group_key(bytes: &[u8]) -> GroupKey {
    let mut first = [0u8; 16];
    let mut last = [0u8; 16];
    let n = bytes.len().min(16);
    first[..n].copy_from_slice(&bytes[..n]);
    last[..n].copy_from_slice(&bytes[bytes.len() - n..]);
    (bytes.len() as u64, first, last)
}

/// The row groups of `table` (whose footer is `metadata`) by [`GroupKey`].
fn groups_by_key(table: &TableBytes, metadata: &ParquetMetaData) -> HashMap<GroupKey, Vec<Bytes>> {
    let mut by_key: HashMap<GroupKey, Vec<Bytes>> = HashMap::new();
    for range in group_ranges(metadata) {
        if let Ok(bytes) = table.range(range) {
            by_key.entry(group_key(&bytes)).or_default().push(bytes);
        }
    }
    by_key
}

/// Reads the table at `path` a span of row groups at a time, taking over each row group that
/// is byte for byte one of `previous`'s (a table whose footer is `previous_metadata`).
pub(crate) async fn read_beside(
    store: &dyn ObjectStore,
    path: &str,
    previous: &TableBytes,
    previous_metadata: &ParquetMetaData,
) -> Result<(TableBytes, Shared)> {
    let location = Path::from(path);
    let size = store.head(&location).await?.size;
    let damaged = |e: ParquetError| EngineError::corrupt_by(format!("files table {path}"), e);
    // The footer alone, to find where the row groups end.
    let mut want = FIRST_TAIL_BYTES.min(size);
    let (metadata, tail) = loop {
        let tail = Piece {
            start: size - want,
            bytes: store.get_range(&location, size - want..size).await?,
        };
        let mut reader = ParquetMetaDataReader::new()
            .with_column_index_policy(PageIndexPolicy::Skip)
            .with_offset_index_policy(PageIndexPolicy::Skip);
        match reader.try_parse_sized(&tail.bytes, size) {
            Ok(()) => break (reader.finish().map_err(damaged)?, tail),
            Err(ParquetError::NeedMoreData(needed)) if (needed as u64) > want => {
                want = (needed as u64).min(size);
            }
            Err(e) => return Err(damaged(e)),
        }
    };
    let groups = group_ranges(&metadata);
    let data_end = groups.iter().map(|g| g.end).max().unwrap_or(4).min(size);
    // Pieces: the head, each row group, any bytes between them, and the tail (page indexes
    // and footer), in order.
    let mut cuts: Vec<Range<u64>> = Vec::with_capacity(groups.len() + 2);
    let mut at = 0;
    for g in &groups {
        if g.start < at || g.end > data_end {
            return Err(EngineError::corrupt(format!(
                "files table {path}: row groups overlap"
            )));
        }
        if g.start > at {
            cuts.push(at..g.start);
        }
        cuts.push(g.clone());
        at = g.end;
    }
    if at < data_end {
        cuts.push(at..data_end);
    }
    let old = groups_by_key(previous, previous_metadata);
    let is_group = |r: &Range<u64>| groups.binary_search_by_key(&r.start, |g| g.start).is_ok();
    let mut pieces = Vec::with_capacity(cuts.len() + 1);
    let mut shared = Shared {
        groups: groups.len(),
        ..Shared::default()
    };
    let mut next = 0;
    while next < cuts.len() {
        // Whole pieces up to SPAN_BYTES (at least one).
        let first = next;
        next += 1;
        while next < cuts.len() && cuts[next].end - cuts[first].start <= SPAN_BYTES {
            next += 1;
        }
        let span = cuts[first].start..cuts[next - 1].end;
        let read = store.get_range(&location, span.clone()).await?;
        for cut in &cuts[first..next] {
            let from = (cut.start - span.start) as usize;
            let here = &read[from..from + (cut.end - cut.start) as usize];
            let same = is_group(cut)
                .then(|| old.get(&group_key(here)))
                .flatten()
                .and_then(|candidates| candidates.iter().find(|c| c[..] == *here));
            let bytes = match same {
                Some(theirs) => {
                    shared.shared += 1;
                    shared.shared_bytes += theirs.len() as u64;
                    theirs.clone()
                }
                // A copy of its own, so that the span read is not held for it.
                None => Bytes::copy_from_slice(here),
            };
            pieces.push(Piece {
                start: cut.start,
                bytes,
            });
        }
    }
    // The tail from the end of the row groups: what the first read holds of it, the rest read.
    let tail = if tail.start <= data_end {
        tail.bytes.slice((data_end - tail.start) as usize..)
    } else {
        let mut bytes =
            BytesMut::from(&store.get_range(&location, data_end..tail.start).await?[..]);
        bytes.extend_from_slice(&tail.bytes);
        bytes.freeze()
    };
    pieces.push(Piece {
        start: data_end,
        bytes: tail,
    });
    Ok((
        TableBytes {
            pieces: pieces.into(),
            len: size,
        },
        shared,
    ))
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
