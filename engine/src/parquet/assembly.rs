//! A Parquet file assembled from row groups of other Parquet files: their column chunks sent
//! as they were read, their metadata copied from the footers they come from, Thrift bytes as
//! they are but for the offsets that move with a chunk.
//!
//! The parquet crate's writer can take encoded chunks too (`append_column`), but it wants each
//! chunk's metadata and page index as structs, which had to be cloned from the cached footer,
//! rebuilt by the writer and encoded again at the end: together about 40 % of a 10-year
//! Parquet download's CPU time (`perf`), for 360 chunks.

use crate::error::{EngineError, Result};
use crate::parquet::thrift::{self, I32, I64, LIST, Reader, STRUCT};
use bytes::Bytes;
use std::ops::Range;

const MAGIC: &[u8; 4] = b"PAR1";

fn unsupported(what: &str) -> EngineError {
    EngineError::corrupt(format!("Parquet footer: {what}"))
}

/// A piece of a footer's Thrift bytes as a walk over them finds it: copied, or a value the
/// copy sets anew.
#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Raw(Range<usize>),
    Set(Set),
}

/// A value a copy of a footer's Thrift bytes sets anew.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Set {
    /// An offset of the chunk's pages in the file: moves with the chunk.
    Moved(i64),
    ColumnIndexOffset,
    ColumnIndexLength,
    OffsetIndexOffset,
    OffsetIndexLength,
}

/// Splits Thrift bytes into [`Seg`]s as a walk over them finds the values to set anew.
struct Splitter {
    segs: Vec<Seg>,
    from: usize,
}

impl Splitter {
    fn new(from: usize) -> Self {
        Self {
            segs: Vec::new(),
            from,
        }
    }

    /// The bytes from the last cut to `at` are copied, the value from `at` to `to` replaced.
    fn cut(&mut self, at: usize, to: usize, set: Set) {
        if at > self.from {
            self.segs.push(Seg::Raw(self.from..at));
        }
        self.segs.push(Seg::Set(set));
        self.from = to;
    }

    fn end(mut self, at: usize) -> Vec<Seg> {
        if at > self.from {
            self.segs.push(Seg::Raw(self.from..at));
        }
        self.segs
    }
}

/// What a chunk's metadata points at in the file the copy writes.
struct Placement {
    /// Added to each offset of the chunk's pages.
    shift: i64,
    /// The chunk's column index and offset index, if it has them: where each starts in its
    /// region of the page index (see [`Hole`]), and its length.
    column_index: Option<(i64, i64)>,
    offset_index: Option<(i64, i64)>,
}

/// Which part of the page index an offset is counted from. Both follow the last row group,
/// so where they start is known only when the file ends.
#[derive(Clone, Copy)]
enum Region {
    ColumnIndexes,
    OffsetIndexes,
}

/// A page index offset in the row groups' bytes, written when the file ends: `at` is where its
/// varint goes, `offset` its place in `region`.
struct Hole {
    at: usize,
    region: Region,
    offset: i64,
}

/// Thrift bytes ready to copy: a run of [`FileFooter::bytes`] and the values to set anew in it
/// ([`FileFooter::patches`], each at a position in the run).
#[derive(Clone, Copy)]
struct Part {
    bytes: (u32, u32),
    patches: (u32, u32),
}

/// A value set anew at `at`, a position in its part's bytes.
struct Patch {
    at: u32,
    set: Set,
}

/// One column chunk's metadata and page index.
struct ChunkFooter {
    /// Where the chunk's pages start in its file, and how many bytes they take.
    start: u64,
    len: u64,
    uncompressed: i64,
    /// Its `ColumnChunk` struct.
    meta: Part,
    /// Its `ColumnIndex` struct, copied as it is.
    column_index: Option<(u32, u32)>,
    /// Its `OffsetIndex` struct.
    offset_index: Option<Part>,
}

struct GroupFooter {
    rows: i64,
    /// Its chunks in [`FileFooter::chunks`].
    chunks: (u32, u32),
}

/// A Parquet file's footer and page index, split for copying its row groups elsewhere. Made
/// once per file (the engine's footer cache keeps it) and used by every answer that copies from it.
///
/// What a chunk's copy needs lies side by side in a few arrays, rather than in structs of its
/// own pointing into the file's last bytes: a made 10-year Parquet answer copies the metadata
/// of 360 chunks from 120 files, none of it in the CPU's caches when requests come from other
/// processes, and following the pointers (`chunk_range`, `Assembly::copy`, `put` and the
/// copies under them) was 14 % of the answer's CPU time then, against 7 % with the caches warm
/// (`perf`, requests from curl against back to back from wrk).
pub struct FileFooter {
    /// The bytes each chunk's parts copy as they are, chunk after chunk, each chunk's column
    /// index, offset index and `ColumnChunk` struct in that order (as `Assembly::place` uses
    /// them).
    bytes: Vec<u8>,
    patches: Vec<Patch>,
    /// Row group after row group.
    chunks: Vec<ChunkFooter>,
    groups: Vec<GroupFooter>,
}

/// A chunk's footer as parsed: its parts as [`Seg`]s of the file's last bytes.
struct ParsedChunk {
    start: u64,
    len: u64,
    uncompressed: i64,
    meta: Vec<Seg>,
    column_index: Option<Range<usize>>,
    offset_index: Option<Vec<Seg>>,
}

struct ParsedGroup {
    rows: i64,
    columns: Vec<ParsedChunk>,
}

/// Positions in a footer's arrays, which a footer's 4 GiB limit keeps within u32.
fn pos(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| unsupported("footer over 4 GiB"))
}

impl FileFooter {
    /// The footer of the file whose bytes from offset `buf_start` to its end are `buf`, which
    /// must include its page index.
    pub fn parse(buf: &[u8], buf_start: u64) -> Result<Self> {
        let footer_start = footer_start(buf)?;
        let mut r = Reader::new(&buf[..buf.len() - 8], footer_start);
        let mut groups = Vec::new();
        let mut last = 0;
        while let Some((id, ty)) = r.field(&mut last)? {
            match (id, ty) {
                (4, LIST) => {
                    let n = structs(&mut r)?;
                    groups = (0..n)
                        .map(|_| group(&mut r, buf_start))
                        .collect::<Result<_>>()?;
                }
                (8 | 9, _) => return Err(unsupported("encrypted")),
                _ => r.skip(ty, false)?,
            }
        }
        Self::compact(buf, groups)
    }

    /// The parsed footer with its parts copied out of `buf` into the footer's own arrays.
    fn compact(buf: &[u8], parsed: Vec<ParsedGroup>) -> Result<Self> {
        let mut footer = Self {
            bytes: Vec::new(),
            patches: Vec::new(),
            chunks: Vec::new(),
            groups: Vec::with_capacity(parsed.len()),
        };
        for group in parsed {
            let first = pos(footer.chunks.len())?;
            for c in group.columns {
                let column_index = match c.column_index {
                    Some(r) => {
                        let start = pos(footer.bytes.len())?;
                        footer.bytes.extend_from_slice(&buf[r]);
                        Some((start, pos(footer.bytes.len())?))
                    }
                    None => None,
                };
                let offset_index = match c.offset_index {
                    Some(segs) => Some(footer.part(buf, &segs)?),
                    None => None,
                };
                let meta = footer.part(buf, &c.meta)?;
                footer.chunks.push(ChunkFooter {
                    start: c.start,
                    len: c.len,
                    uncompressed: c.uncompressed,
                    meta,
                    column_index,
                    offset_index,
                });
            }
            footer.groups.push(GroupFooter {
                rows: group.rows,
                chunks: (first, pos(footer.chunks.len())?),
            });
        }
        footer.bytes.shrink_to_fit();
        footer.patches.shrink_to_fit();
        footer.chunks.shrink_to_fit();
        Ok(footer)
    }

    /// `segs` of `buf` as a part: the raw bytes appended, the values to set as patches.
    fn part(&mut self, buf: &[u8], segs: &[Seg]) -> Result<Part> {
        let (bytes, patches) = (self.bytes.len(), self.patches.len());
        for seg in segs {
            match seg {
                Seg::Raw(r) => self.bytes.extend_from_slice(&buf[r.clone()]),
                Seg::Set(set) => self.patches.push(Patch {
                    at: pos(self.bytes.len() - bytes)?,
                    set: *set,
                }),
            }
        }
        Ok(Part {
            bytes: (pos(bytes)?, pos(self.bytes.len())?),
            patches: (pos(patches)?, pos(self.patches.len())?),
        })
    }

    fn group(&self, group: usize) -> Result<&GroupFooter> {
        self.groups
            .get(group)
            .ok_or_else(|| unsupported("no such row group"))
    }

    fn chunk(&self, group: usize, column: usize) -> Result<&ChunkFooter> {
        let (first, end) = self.group(group)?.chunks;
        let at = (first as usize).saturating_add(column);
        self.chunks
            .get(at)
            .filter(|_| at < end as usize)
            .ok_or_else(|| unsupported("no such column"))
    }

    /// Where column `column` of row group `group` lies in the file.
    pub fn chunk_range(&self, group: usize, column: usize) -> Result<Range<u64>> {
        let c = self.chunk(group, column)?;
        Ok(c.start..c.start + c.len)
    }

    pub fn rows(&self, group: usize) -> Result<i64> {
        Ok(self.group(group)?.rows)
    }

    /// Row groups of the file.
    pub fn row_groups(&self) -> usize {
        self.groups.len()
    }

    /// What the cache counts for it.
    pub fn memory_size(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.bytes.capacity()
            + self.patches.capacity() * std::mem::size_of::<Patch>()
            + self.chunks.capacity() * std::mem::size_of::<ChunkFooter>()
            + self.groups.capacity() * std::mem::size_of::<GroupFooter>()
    }

    /// `part` appended to `out`, the values that move set for `at`. Page index offsets are
    /// left as holes (recorded in `holes`) where there is a page index to point at.
    fn put(&self, part: Part, at: &Placement, out: &mut Vec<u8>, holes: &mut Vec<Hole>) {
        let bytes = &self.bytes[part.bytes.0 as usize..part.bytes.1 as usize];
        let patches = &self.patches[part.patches.0 as usize..part.patches.1 as usize];
        let len = |index: Option<(i64, i64)>| index.map_or(0, |(_, len)| len);
        let mut from = 0;
        for patch in patches {
            // Made by `part`: every patch lies within its bytes, in order.
            let to = patch.at as usize;
            out.extend_from_slice(&bytes[from..to]);
            from = to;
            let (region, index) = match patch.set {
                // Offsets from a corrupt footer make a corrupt copy, not a panic.
                Set::Moved(v) => {
                    thrift::put_int(out, v.saturating_add(at.shift));
                    continue;
                }
                Set::ColumnIndexLength => {
                    thrift::put_int(out, len(at.column_index));
                    continue;
                }
                Set::OffsetIndexLength => {
                    thrift::put_int(out, len(at.offset_index));
                    continue;
                }
                Set::ColumnIndexOffset => (Region::ColumnIndexes, at.column_index),
                Set::OffsetIndexOffset => (Region::OffsetIndexes, at.offset_index),
            };
            match index {
                Some((offset, _)) => holes.push(Hole {
                    at: out.len(),
                    region,
                    offset,
                }),
                None => thrift::put_int(out, 0),
            }
        }
        out.extend_from_slice(&bytes[from..]);
    }
}

/// The length of a list of structs.
fn structs(r: &mut Reader<'_>) -> Result<usize> {
    match r.list()? {
        (n, STRUCT) => Ok(n),
        _ => Err(unsupported("a list of other than structs")),
    }
}

/// A `RowGroup` struct: its rows and its chunks.
fn group(r: &mut Reader<'_>, buf_start: u64) -> Result<ParsedGroup> {
    let mut rows = 0;
    let mut columns = Vec::new();
    let mut last = 0;
    while let Some((id, ty)) = r.field(&mut last)? {
        match (id, ty) {
            (1, LIST) => {
                let n = structs(r)?;
                columns = (0..n).map(|_| chunk(r, buf_start)).collect::<Result<_>>()?;
            }
            (3, I64) => rows = r.int()?,
            _ => r.skip(ty, false)?,
        }
    }
    Ok(ParsedGroup { rows, columns })
}

/// What a chunk's `ColumnMetaData` says of its pages.
#[derive(Default)]
struct Pages {
    data: Option<i64>,
    dictionary: Option<i64>,
    len: i64,
    uncompressed: i64,
}

/// A `ColumnMetaData` struct: its page offsets cut out of `s` to be moved.
fn pages(r: &mut Reader<'_>, s: &mut Splitter) -> Result<Pages> {
    let mut pages = Pages::default();
    let mut last = 0;
    while let Some((id, ty)) = r.field(&mut last)? {
        let at = r.pos;
        match (id, ty) {
            (6, I64) => pages.uncompressed = r.int()?,
            (7, I64) => pages.len = r.int()?,
            (9..=11, I64) => {
                let v = r.int()?;
                s.cut(at, r.pos, Set::Moved(v));
                match id {
                    9 => pages.data = Some(v),
                    11 => pages.dictionary = Some(v),
                    _ => {}
                }
            }
            (14 | 15, _) => return Err(unsupported("bloom filters are not copied")),
            _ => r.skip(ty, false)?,
        }
    }
    Ok(pages)
}

/// A `ColumnChunk` struct, and the page index it points at.
fn chunk(r: &mut Reader<'_>, buf_start: u64) -> Result<ParsedChunk> {
    let mut s = Splitter::new(r.pos);
    let mut pages = None;
    let (mut ci_at, mut ci_len, mut oi_at, mut oi_len) = (None, None, None, None);
    let mut last = 0;
    while let Some((id, ty)) = r.field(&mut last)? {
        let at = r.pos;
        match (id, ty) {
            (1 | 8 | 9, _) => return Err(unsupported("chunk in another file, or encrypted")),
            (2, I64) => {
                // Deprecated and written as 0 by parquet-rs: moved only when set.
                let v = r.int()?;
                if v != 0 {
                    s.cut(at, r.pos, Set::Moved(v));
                }
            }
            (3, STRUCT) => pages = Some(self::pages(r, &mut s)?),
            (4..=7, I32 | I64) => {
                let v = r.int()?;
                let (seg, slot) = match id {
                    4 => (Set::OffsetIndexOffset, &mut oi_at),
                    5 => (Set::OffsetIndexLength, &mut oi_len),
                    6 => (Set::ColumnIndexOffset, &mut ci_at),
                    _ => (Set::ColumnIndexLength, &mut ci_len),
                };
                *slot = Some(v);
                s.cut(at, r.pos, seg);
            }
            _ => r.skip(ty, false)?,
        }
    }
    let meta = s.end(r.pos);
    let pages = pages.ok_or_else(|| unsupported("column chunk without its metadata"))?;
    let start = pages
        .dictionary
        .or(pages.data)
        .ok_or_else(|| unsupported("column chunk without pages"))?;
    let within = |at: Option<i64>, len: Option<i64>| -> Result<Option<Range<usize>>> {
        let (Some(at), Some(len)) = (at, len) else {
            return Ok(None);
        };
        let from = u64::try_from(at)
            .ok()
            .and_then(|a| a.checked_sub(buf_start))
            .and_then(|a| usize::try_from(a).ok());
        let to = from
            .zip(usize::try_from(len).ok())
            .and_then(|(f, l)| f.checked_add(l));
        match (from, to) {
            (Some(f), Some(t)) if t <= r.buf.len() => Ok(Some(f..t)),
            _ => Err(unsupported("page index outside the bytes read")),
        }
    };
    let column_index = within(ci_at, ci_len)?;
    let offset_index = within(oi_at, oi_len)?
        .map(|range| offset_index(&r.buf[..range.end], range.start))
        .transpose()?;
    Ok(ParsedChunk {
        start: u64::try_from(start).map_err(|_| unsupported("negative offset"))?,
        len: u64::try_from(pages.len).map_err(|_| unsupported("negative size"))?,
        uncompressed: pages.uncompressed,
        meta,
        column_index,
        offset_index,
    })
}

/// An `OffsetIndex` struct: each page's offset moves with the chunk.
fn offset_index(buf: &[u8], start: usize) -> Result<Vec<Seg>> {
    let mut r = Reader::new(buf, start);
    let mut s = Splitter::new(start);
    let mut last = 0;
    while let Some((id, ty)) = r.field(&mut last)? {
        if (id, ty) != (1, LIST) {
            r.skip(ty, false)?;
            continue;
        }
        for _ in 0..structs(&mut r)? {
            let mut last = 0;
            while let Some((id, ty)) = r.field(&mut last)? {
                let at = r.pos;
                if (id, ty) == (1, I64) {
                    let v = r.int()?;
                    s.cut(at, r.pos, Set::Moved(v));
                } else {
                    r.skip(ty, false)?;
                }
            }
        }
    }
    Ok(s.end(r.pos))
}

/// The file's `FileMetaData` around its row groups, from a file of the same schema that has
/// none: everything up to the value of `num_rows`, and everything after the `row_groups` list.
struct Template {
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Template {
    fn of(empty: &[u8]) -> Result<Self> {
        let start = footer_start(empty)?;
        let buf = &empty[..empty.len() - 8];
        let mut r = Reader::new(buf, start);
        let mut last = 0;
        let (mut head_end, mut tail_start) = (None, None);
        while let Some((id, ty)) = r.field(&mut last)? {
            match (id, ty) {
                (3, I64) => {
                    head_end = Some(r.pos);
                    r.int()?;
                }
                (4, LIST) if head_end.is_some() => {
                    r.skip(ty, false)?;
                    tail_start = Some(r.pos);
                }
                _ => r.skip(ty, false)?,
            }
        }
        match (head_end, tail_start) {
            (Some(h), Some(t)) => Ok(Self {
                head: buf[start..h].to_vec(),
                tail: buf[t..].to_vec(),
            }),
            _ => Err(unsupported("no num_rows followed by row_groups")),
        }
    }
}

/// Where the footer of the Parquet file (or file end) `file` starts.
fn footer_start(file: &[u8]) -> Result<usize> {
    let len = file.len();
    if len < 12 || &file[len - 4..] != MAGIC {
        return Err(unsupported("no Parquet footer at the end"));
    }
    let footer_len =
        u32::from_le_bytes([file[len - 8], file[len - 7], file[len - 6], file[len - 5]]) as usize;
    (len - 8)
        .checked_sub(footer_len)
        .ok_or_else(|| unsupported("footer longer than the bytes read"))
}

/// Room each of the footer's growing parts starts with. A 10-year answer's footer is about
/// 40 KB; grown from nothing, its parts were reallocated a dozen times each, every time on
/// fresh pages the kernel had to clear (`clear_page_erms` under `realloc`, 2.4 % of a made
/// Parquet download in `perf`).
const START_BYTES: usize = 16 * 1024;

/// Some column chunks of one row group of another file, to copy: `columns` (positions in
/// that file, in the order wanted) of row group `group` of the file `footer` describes; `data`
/// holds their bytes, from offset `data_start` of that file.
pub struct Chunks<'a> {
    pub footer: &'a FileFooter,
    pub group: usize,
    pub columns: &'a [usize],
    pub data: &'a Bytes,
    pub data_start: u64,
}

impl Chunks<'_> {
    /// The chunks' bytes as slices of `data` appended to `out`, chunks that lie side by side
    /// in one slice.
    fn slices(&self, out: &mut Vec<Bytes>) -> Result<()> {
        let slice = |r: Range<u64>| {
            let from = r.start.checked_sub(self.data_start).map(|f| f as usize);
            let to = r.end.checked_sub(self.data_start).map(|t| t as usize);
            match (from, to) {
                (Some(f), Some(t)) if t <= self.data.len() => Ok(self.data.slice(f..t)),
                _ => Err(unsupported("chunk outside the bytes read")),
            }
        };
        let mut span: Option<Range<u64>> = None;
        for &c in self.columns {
            let c = self.footer.chunk(self.group, c)?;
            match &mut span {
                Some(last) if last.end == c.start => last.end = c.start + c.len,
                _ => {
                    if let Some(last) = span.replace(c.start..c.start + c.len) {
                        out.push(slice(last)?);
                    }
                }
            }
        }
        if let Some(last) = span {
            out.push(slice(last)?);
        }
        Ok(())
    }
}

/// A Parquet file being written: row groups copied in, then the footer.
///
/// Each row group's page index and `RowGroup` struct are written as it is copied, while its
/// footer's bytes are at hand; the footer then joins them. Built at the end from the cached
/// footers instead, the 360 chunks of a 10-year answer were read again from wherever they lay
/// in memory, after the last data and with nothing to overlap with (an eighth of a made
/// Parquet download's CPU time).
pub struct Assembly {
    template: Template,
    /// Bytes handed out so far.
    written: u64,
    /// The chunks' column indexes, in order, as the file ends with them.
    column_indexes: Vec<u8>,
    /// The chunks' offset indexes, their page offsets moved; after the column indexes.
    offset_indexes: Vec<u8>,
    /// The `row_groups` list's elements, but for the page index offsets (`holes`).
    row_groups: Vec<u8>,
    holes: Vec<Hole>,
    groups: usize,
    rows: i64,
}

impl Assembly {
    /// A file of the schema of `empty`, a Parquet file without row groups whose footer (schema,
    /// key-value metadata, creator) the file's is made from; and the file's first bytes.
    pub fn new(empty: &[u8]) -> Result<(Self, Bytes)> {
        let assembly = Self {
            template: Template::of(empty)?,
            written: MAGIC.len() as u64,
            column_indexes: Vec::with_capacity(START_BYTES),
            offset_indexes: Vec::with_capacity(START_BYTES),
            row_groups: Vec::with_capacity(START_BYTES),
            holes: Vec::with_capacity(START_BYTES / size_of::<Hole>()),
            groups: 0,
            rows: 0,
        };
        Ok((assembly, Bytes::from_static(MAGIC)))
    }

    /// Row group `group` of the file `footer` describes, columns `columns` (positions in
    /// that file) in this file's order; `data` holds those chunks' bytes, from offset
    /// `data_start` of that file. Returns the bytes to send: slices of `data`, chunks that
    /// lie side by side in one slice.
    pub fn copy(
        &mut self,
        footer: &FileFooter,
        group: usize,
        columns: &[usize],
        data: &Bytes,
        data_start: u64,
    ) -> Result<Vec<Bytes>> {
        self.copy_joined(&[Chunks {
            footer,
            group,
            columns,
            data,
            data_start,
        }])
    }

    /// One row group of this file made of the chunks of row groups of other files, side by
    /// side in the order given (each as [`Self::copy`] takes it); they must have as many rows.
    /// A many-series answer joins the chunks of its series' ids, made for it, to a stored
    /// month's.
    pub fn copy_joined(&mut self, parts: &[Chunks<'_>]) -> Result<Vec<Bytes>> {
        let mut rows = None;
        for part in parts {
            let r = part.footer.rows(part.group)?;
            if *rows.get_or_insert(r) != r {
                return Err(unsupported("joined row groups of different lengths"));
            }
        }
        let mut out = Vec::with_capacity(parts.len());
        for part in parts {
            part.slices(&mut out)?;
        }
        self.place(parts, rows.unwrap_or(0));
        Ok(out)
    }

    /// The page index and `RowGroup` struct of a row group made of `parts` (each column found
    /// in its footer, as [`Self::copy_joined`] made sure), its pages starting at
    /// `self.written`.
    fn place(&mut self, parts: &[Chunks<'_>], rows: i64) {
        let first = self.written as i64;
        let out = &mut self.row_groups;
        thrift::put_field(out, 0, 1, LIST);
        let columns = parts.iter().map(|p| p.columns.len()).sum();
        thrift::put_list(out, columns, STRUCT);
        let (mut uncompressed, mut compressed) = (0, 0);
        for part in parts {
            let footer = part.footer;
            for chunk in part
                .columns
                .iter()
                .filter_map(|&c| footer.chunk(part.group, c).ok())
            {
                let to = self.written;
                let mut p = Placement {
                    shift: to as i64 - chunk.start as i64,
                    column_index: None,
                    offset_index: None,
                };
                if let Some((from, end)) = chunk.column_index {
                    let start = self.column_indexes.len() as i64;
                    self.column_indexes
                        .extend_from_slice(&footer.bytes[from as usize..end as usize]);
                    p.column_index = Some((start, i64::from(end - from)));
                }
                if let Some(part) = chunk.offset_index {
                    let start = self.offset_indexes.len();
                    footer.put(part, &p, &mut self.offset_indexes, &mut Vec::new());
                    p.offset_index =
                        Some((start as i64, (self.offset_indexes.len() - start) as i64));
                }
                footer.put(chunk.meta, &p, out, &mut self.holes);
                uncompressed += chunk.uncompressed;
                compressed += chunk.len as i64;
                self.written += chunk.len;
            }
        }
        for (last, id, v) in [
            (1, 2, uncompressed),
            (2, 3, rows),
            (3, 5, first),
            (5, 6, compressed),
        ] {
            thrift::put_field(out, last, id, I64);
            thrift::put_int(out, v);
        }
        // As parquet-rs: the row group's position, where an i16 holds it.
        if let Ok(ordinal) = i16::try_from(self.groups) {
            thrift::put_field(out, 6, 7, thrift::I16);
            thrift::put_int(out, i64::from(ordinal));
        }
        out.push(0);
        self.groups += 1;
        self.rows += rows;
    }

    /// Every row group of a whole Parquet file (rows encoded for this one), as [`Self::copy`].
    /// Its pages go out now; what its footer says of them is copied in at once, so memory
    /// does not grow with the rows encoded.
    pub fn copy_file(&mut self, file: Bytes) -> Result<Vec<Bytes>> {
        let footer = FileFooter::parse(&file, 0)?;
        let mut out = Vec::new();
        for (g, group) in footer.groups.iter().enumerate() {
            let columns: Vec<usize> = (0..(group.chunks.1 - group.chunks.0) as usize).collect();
            out.extend(self.copy(&footer, g, &columns, &file, 0)?);
        }
        Ok(out)
    }

    /// The page index, the footer and the file's last bytes.
    pub fn finish(self) -> Result<Bytes> {
        // As parquet-rs lays it out: every column index, then every offset index.
        let column_indexes = self.written as i64;
        let offset_indexes = column_indexes + self.column_indexes.len() as i64;
        let mut out = Vec::with_capacity(
            self.column_indexes.len()
                + self.offset_indexes.len()
                + self.template.head.len()
                + self.row_groups.len()
                + 10 * self.holes.len()
                + self.template.tail.len()
                + 32,
        );
        out.extend_from_slice(&self.column_indexes);
        out.extend_from_slice(&self.offset_indexes);
        let meta_start = out.len();
        out.extend_from_slice(&self.template.head);
        thrift::put_int(&mut out, self.rows);
        thrift::put_field(&mut out, 3, 4, LIST);
        thrift::put_list(&mut out, self.groups, STRUCT);
        let mut from = 0;
        for hole in &self.holes {
            out.extend_from_slice(&self.row_groups[from..hole.at]);
            let start = match hole.region {
                Region::ColumnIndexes => column_indexes,
                Region::OffsetIndexes => offset_indexes,
            };
            thrift::put_int(&mut out, start + hole.offset);
            from = hole.at;
        }
        out.extend_from_slice(&self.row_groups[from..]);
        out.extend_from_slice(&self.template.tail);
        let meta_len =
            u32::try_from(out.len() - meta_start).map_err(|_| unsupported("footer over 4 GiB"))?;
        out.extend_from_slice(&meta_len.to_le_bytes());
        out.extend_from_slice(MAGIC);
        Ok(Bytes::from(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{
        Array, ArrayRef, DictionaryArray, Float64Array, Int64Array, RecordBatch,
    };
    use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
    use datafusion::parquet::arrow::ArrowWriter;
    use datafusion::parquet::arrow::arrow_reader::{
        ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
    };
    use datafusion::parquet::file::metadata::PageIndexPolicy;
    use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
    use std::sync::Arc;

    fn schema(columns: &[&str]) -> SchemaRef {
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let field = |name: &&str| match *name {
            "t" => Field::new("t", DataType::Int64, false),
            "v" => Field::new("v", DataType::Float64, true),
            _ => Field::new("q", dict.clone(), false),
        };
        Arc::new(Schema::new(columns.iter().map(field).collect::<Vec<_>>()))
    }

    fn batch(columns: &[&str], rows: std::ops::Range<i64>) -> RecordBatch {
        let arrays: Vec<ArrayRef> = columns
            .iter()
            .map(|c| -> ArrayRef {
                match *c {
                    "t" => Arc::new(Int64Array::from_iter_values(rows.clone())),
                    "v" => Arc::new(Float64Array::from_iter(
                        rows.clone().map(|i| (i % 7 != 3).then_some(i as f64 / 4.0)),
                    )),
                    _ => Arc::new(
                        rows.clone()
                            .map(|i| if i % 100 == 0 { "suspect" } else { "good" })
                            .collect::<DictionaryArray<Int32Type>>(),
                    ),
                }
            })
            .collect();
        RecordBatch::try_new(schema(columns), arrays).unwrap()
    }

    /// A file of `rows` in row groups of `per_group` rows, pages of 500 rows, each with its
    /// statistics and page index.
    fn file(columns: &[&str], rows: std::ops::Range<i64>, per_group: usize) -> Bytes {
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(per_group))
            .set_data_page_row_count_limit(500)
            .set_write_batch_size(100)
            .set_statistics_enabled(EnabledStatistics::Page)
            .build();
        let mut w = ArrowWriter::try_new(Vec::new(), schema(columns), Some(props)).unwrap();
        if !rows.is_empty() {
            w.write(&batch(columns, rows)).unwrap();
        }
        Bytes::from(w.into_inner().unwrap())
    }

    fn read(file: Bytes, selection: Option<RowSelection>) -> (Vec<RecordBatch>, usize) {
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
        let mut builder = ParquetRecordBatchReaderBuilder::try_new_with_options(file, options)
            .unwrap()
            .with_batch_size(100_000);
        let groups = builder.metadata().num_row_groups();
        assert!(builder.metadata().offset_index().is_some());
        assert!(builder.metadata().column_index().is_some());
        if let Some(selection) = selection {
            builder = builder.with_row_selection(selection);
        }
        let batches = builder.build().unwrap().collect::<Result<Vec<_>, _>>();
        (batches.unwrap(), groups)
    }

    /// Row groups copied from several files, some columns in another order, a read that
    /// starts mid-file, and a whole file of encoded rows: the result reads back as those rows,
    /// and reads through its page index (rows selected page by page) find the right pages.
    #[test]
    fn copied_row_groups_read_back_through_their_page_index() {
        let cols = ["t", "v", "q"];
        let a = file(&cols, 0..5_000, 2_000);
        let b = file(&cols, 10_000..13_000, 3_000);
        let fa = FileFooter::parse(&a, 0).unwrap();
        // b as a ranged read would give it: from some offset to its end.
        let from = 4;
        let fb = FileFooter::parse(&b[from..], from as u64).unwrap();
        let encoded = file(&["v", "t"], 20_000..20_700, 1_000);

        let (mut out, head) = Assembly::new(&file(&["v", "t"], 0..0, 1)).unwrap();
        let mut bytes = head.to_vec();
        let mut put = |frames: Vec<Bytes>| frames.iter().for_each(|f| bytes.extend(f));
        put(out.copy(&fa, 2, &[1, 0], &a, 0).unwrap());
        put(out
            .copy(&fb, 0, &[1, 0], &b.slice(from..), from as u64)
            .unwrap());
        put(out.copy(&fa, 0, &[1, 0], &a, 0).unwrap());
        let held =
            |a: &Assembly| a.column_indexes.len() + a.offset_indexes.len() + a.row_groups.len();
        let before = held(&out);
        put(out.copy_file(encoded.clone()).unwrap());
        // Of the encoded file, only what its footer says of its pages stays, not its pages.
        let kept = held(&out) - before;
        assert!(kept < encoded.len() / 4, "{kept} of {}", encoded.len());
        put(vec![out.finish().unwrap()]);
        let bytes = Bytes::from(bytes);

        let rows = [4_000..5_000, 10_000..13_000, 0..2_000, 20_000..20_700];
        let (got, groups) = read(bytes.clone(), None);
        assert_eq!(groups, 4);
        let want: Vec<RecordBatch> = rows.iter().map(|r| batch(&["v", "t"], r.clone())).collect();
        let concat = |b: &[RecordBatch]| {
            datafusion::arrow::compute::concat_batches(&schema(&["v", "t"]), b).unwrap()
        };
        assert_eq!(concat(&got), concat(&want));

        // Every other run of 250 rows: pages are skipped by their offsets.
        let selection: Vec<RowSelector> = (0..(6_700 / 250))
            .map(|i| {
                if i % 2 == 0 {
                    RowSelector::skip(250)
                } else {
                    RowSelector::select(250)
                }
            })
            .collect();
        let (got, _) = read(bytes, Some(RowSelection::from(selection)));
        let all = concat(&want);
        let picked: Vec<RecordBatch> = (0..(6_700 / 250))
            .filter(|i| i % 2 == 1)
            .map(|i| all.slice(i * 250, 250))
            .collect();
        assert_eq!(concat(&got), concat(&picked));
        assert_eq!(concat(&got).column(1).len(), 13 * 250);
    }

    /// Footers cut short or with any byte changed are errors or odd copies, never a panic,
    /// and so are reads that do not hold the chunks.
    #[test]
    fn damaged_footers_do_not_panic() {
        let f = file(&["t", "v", "q"], 0..3_000, 1_000);
        for cut in 0..f.len() {
            let _ = FileFooter::parse(&f[cut..], cut as u64);
            let _ = FileFooter::parse(&f[..cut], 0);
        }
        let start = footer_start(&f).unwrap();
        for i in start..f.len() - 8 {
            for x in [0x00, 0x0f, 0x19, 0x80, 0xff] {
                let mut bad = f.to_vec();
                bad[i] ^= x;
                if let Ok(footer) = FileFooter::parse(&bad, 0) {
                    let (mut out, _) = Assembly::new(&file(&["t"], 0..0, 1)).unwrap();
                    let _ = out.copy(&footer, 0, &[0, 2], &f.slice(..100), 0);
                    let _ = out.finish();
                }
            }
        }
        assert!(Assembly::new(b"PAR1").is_err());
    }

    /// A file with bloom filters is refused: copying them is not supported, and their
    /// offsets copied unmoved would point into other bytes.
    #[test]
    fn bloom_filters_are_refused() {
        let props = WriterProperties::builder()
            .set_bloom_filter_enabled(true)
            .build();
        let mut w = ArrowWriter::try_new(Vec::new(), schema(&["t"]), Some(props)).unwrap();
        w.write(&batch(&["t"], 0..100)).unwrap();
        let file = Bytes::from(w.into_inner().unwrap());
        let refused = FileFooter::parse(&file, 0).err().map(|e| e.to_string());
        assert!(
            refused.as_ref().is_some_and(|e| e.contains("bloom")),
            "{refused:?}"
        );
    }
}
