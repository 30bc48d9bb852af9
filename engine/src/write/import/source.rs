//! The values files of an import: which files (globs expanded), what each one is (CSV, gzip- or
//! zstd-compressed CSV, Parquet: told by the file's first bytes, not its name), and reading
//! them in blocks for the parsers.
//!
//! CSV is cut into blocks at line ends, so a field may not hold a line break (no values
//! column can: ids, timestamps, numbers and flags are one line each). Parquet is read through
//! the parquet crate's Arrow reader, its columns cast to the types the parsers take.

use super::bucket::{self, BucketObject, ObjectChunks};
use super::dialect;
use super::layout::{BlockKeys, Layout, LayoutRules, TextKind, is_zrxp_line};
use super::{GLOB_CHARS, ImportProgress, Problems};
use crate::storage::StoreUrl;
use bytes::Bytes;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::object_store::ObjectStore;
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::reader::{ChunkReader, Length};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::runtime::Handle;

/// The columns every values file has, in this order in [`CsvColumns::at`].
pub(super) const VALUE_COLUMNS: [&str; 5] =
    ["stationId", "parameterId", "timestamp", "value", "quality"];

/// How a CSV file is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Compression {
    None,
    Gzip,
    Zstd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InputKind {
    Csv(Compression),
    Parquet,
}

/// Where a values file is: on this machine, or in a bucket (`s3://…`, see [`super::bucket`]).
#[derive(Clone)]
pub(super) enum Source {
    File(PathBuf),
    Object(Arc<BucketObject>),
}

impl Source {
    /// The file from its first byte.
    fn read(&self) -> io::Result<Box<dyn Read + Send>> {
        Ok(match self {
            Source::File(path) => Box::new(File::open(path)?),
            Source::Object(object) => Box::new(object.read_from(0)?),
        })
    }

    fn size(&self) -> io::Result<u64> {
        match self {
            Source::File(path) => Ok(std::fs::metadata(path)?.len()),
            Source::Object(object) => Ok(object.size()),
        }
    }

    /// The Parquet reader's builder over the file.
    fn parquet(&self) -> Result<ParquetRecordBatchReaderBuilder<ParquetInput>, String> {
        let input = match self {
            Source::File(path) => {
                ParquetInput::File(File::open(path).map_err(|e| format!("cannot open: {e}"))?)
            }
            Source::Object(object) => ParquetInput::Object(ObjectChunks(Arc::clone(object))),
        };
        ParquetRecordBatchReaderBuilder::try_new(input)
            .map_err(|e| format!("not a readable Parquet file: {e}"))
    }
}

/// A Parquet values file, local or in a bucket, as the parquet crate's reader reads it.
pub(super) enum ParquetInput {
    File(File),
    Object(ObjectChunks),
}

impl Length for ParquetInput {
    fn len(&self) -> u64 {
        match self {
            ParquetInput::File(f) => f.len(),
            ParquetInput::Object(o) => o.len(),
        }
    }
}

impl ChunkReader for ParquetInput {
    type T = Box<dyn Read + Send>;

    fn get_read(&self, start: u64) -> Result<Self::T, ParquetError> {
        Ok(match self {
            ParquetInput::File(f) => Box::new(f.get_read(start)?),
            ParquetInput::Object(o) => Box::new(o.get_read(start)?),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes, ParquetError> {
        match self {
            ParquetInput::File(f) => f.get_bytes(start, length),
            ParquetInput::Object(o) => o.get_bytes(start, length),
        }
    }
}

/// A values file as planned: its kind, its size, and about how many rows it holds.
pub(super) struct ValueInput {
    /// As the user named it (a path, or `s3://BUCKET/KEY`): what reports show.
    pub(super) path: PathBuf,
    pub(super) source: Source,
    pub(super) kind: InputKind,
    pub(super) size: u64,
    pub(super) rows_estimate: u64,
}

/// Bytes of CSV per row assumed when planning: a row is rarely shorter
/// (`a,b,2024-01-01T00:00:00Z,1,good` is 31), so row counts are rather over- than underestimated.
const CSV_BYTES_PER_ROW: u64 = 32;
/// How much a compressed CSV is assumed to expand, for the same purpose.
const COMPRESSED_EXPANSION: u64 = 12;

/// Opens a bucket (a [`StoreUrl`] of its root), with the import's settings.
pub(super) type BucketOpener<'a> = dyn Fn(&StoreUrl) -> Result<Arc<dyn ObjectStore>, String> + 'a;

/// Opens the inputs an import names: files, or objects of a bucket (`s3://BUCKET/KEY`). Its
/// methods block on the bucket's client, so they run off the runtime's threads.
pub(super) struct Inputs<'a> {
    pub(super) bucket_store: &'a BucketOpener<'a>,
    pub(super) runtime: &'a Handle,
}

impl Inputs<'_> {
    /// The objects `key` (a key, or a pattern of keys) names in `bucket`.
    fn objects(&self, bucket: &StoreUrl, key: &str) -> Result<Vec<(PathBuf, Source)>, String> {
        let store = (self.bucket_store)(bucket)?;
        Ok(bucket::find(&store, key, self.runtime)?
            .into_iter()
            .map(|o| {
                let path = PathBuf::from(format!("{bucket}/{}", o.key()));
                (path, Source::Object(Arc::new(o)))
            })
            .collect())
    }

    /// What an input argument names: a local path (None), or a bucket and a key in it; a
    /// scheme no store is known for is the error `StoreUrl::parse` gives.
    fn in_bucket(text: &str) -> Result<Option<(StoreUrl, String)>, String> {
        let url = StoreUrl::parse(text).map_err(|e| e.to_string())?;
        Ok(url
            .bucket_and_key()
            .map(|(bucket, key)| (bucket, key.to_owned())))
    }

    /// The files the `--values` arguments name: each one as given, or, when it does not
    /// exist and holds a glob pattern (`*`, `?`, `[`), the files it matches, in name order;
    /// the same for objects of a bucket. A pattern that matches nothing and a missing file are
    /// errors.
    pub(super) fn expand_values(
        &self,
        patterns: &[PathBuf],
        problems: &mut Problems,
    ) -> Vec<(PathBuf, Source)> {
        let mut files = Vec::new();
        for pattern in patterns {
            let text = pattern.to_string_lossy();
            let in_bucket = match Self::in_bucket(&text) {
                Ok(in_bucket) => in_bucket,
                Err(reason) => {
                    problems.add(pattern, 0, reason);
                    continue;
                }
            };
            if let Some((bucket, key)) = in_bucket {
                match self.objects(&bucket, &key) {
                    Ok(objects) if objects.is_empty() => {
                        problems.add(pattern, 0, "no file matches this pattern");
                    }
                    Ok(objects) => files.extend(objects),
                    Err(reason) => problems.add(pattern, 0, reason),
                }
                continue;
            }
            if pattern.exists() || !text.contains(GLOB_CHARS) {
                files.push((pattern.clone(), Source::File(pattern.clone())));
                continue;
            }
            let matched: Vec<PathBuf> = match glob::glob(&text) {
                Ok(paths) => paths.filter_map(std::result::Result::ok).collect(),
                Err(e) => {
                    problems.add(pattern, 0, format!("bad pattern: {e}"));
                    continue;
                }
            };
            if matched.is_empty() {
                problems.add(pattern, 0, "no file matches this pattern");
            }
            files.extend(
                matched
                    .into_iter()
                    .filter(|p| p.is_file())
                    .map(|p| (p.clone(), Source::File(p))),
            );
        }
        files
    }

    /// A CSV input (a catalog file) as text, decompressed as needed: a file, or the object
    /// `s3://BUCKET/KEY` names.
    pub(super) fn open_text(&self, path: &Path) -> Result<Box<dyn Read + Send>, String> {
        let source = match Self::in_bucket(&path.to_string_lossy())? {
            Some((_, key)) if key.contains(GLOB_CHARS) => {
                return Err("a catalog file is one object, not a pattern".into());
            }
            Some((bucket, key)) => {
                let store = (self.bucket_store)(&bucket)?;
                Source::Object(Arc::new(bucket::object(&store, &key, self.runtime)?))
            }
            None => Source::File(path.to_path_buf()),
        };
        open_text(&source).map_err(|e| format!("cannot open: {e}"))
    }
}

/// What kind of file `source` is, from its first bytes.
fn sniff(source: &Source) -> io::Result<InputKind> {
    let mut magic = [0u8; 4];
    let n = match source {
        Source::File(path) => read_up_to(&mut File::open(path)?, &mut magic)?,
        // A ranged read: a stream of the whole object would be cut off after four bytes.
        Source::Object(object) => {
            let head = object.range(0, magic.len())?;
            magic[..head.len()].copy_from_slice(&head);
            head.len()
        }
    };
    Ok(match &magic[..n] {
        [0x1f, 0x8b, ..] => InputKind::Csv(Compression::Gzip),
        [0x28, 0xb5, 0x2f, 0xfd] => InputKind::Csv(Compression::Zstd),
        b"PAR1" => InputKind::Parquet,
        _ => InputKind::Csv(Compression::None),
    })
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Plans the values files: kind, size, rows. Files that cannot be opened are reported.
pub(super) fn plan_inputs(
    files: Vec<(PathBuf, Source)>,
    problems: &mut Problems,
) -> Vec<ValueInput> {
    let mut inputs = Vec::new();
    for (path, source) in files {
        let planned = (|| -> Result<ValueInput, String> {
            let kind = sniff(&source).map_err(|e| format!("cannot open: {e}"))?;
            let size = source.size().map_err(|e| format!("cannot open: {e}"))?;
            let rows_estimate = match kind {
                InputKind::Csv(Compression::None) => size / CSV_BYTES_PER_ROW,
                InputKind::Csv(_) => size * COMPRESSED_EXPANSION / CSV_BYTES_PER_ROW,
                InputKind::Parquet => {
                    let builder = source.parquet()?;
                    u64::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0)
                }
            };
            Ok(ValueInput {
                path: path.clone(),
                source: source.clone(),
                kind,
                size,
                rows_estimate,
            })
        })();
        match planned {
            Ok(input) => inputs.push(input),
            Err(reason) => problems.add(&path, 0, reason),
        }
    }
    inputs
}

/// Counts the bytes read from a file (before decompression) into the import's progress.
struct Counted<R> {
    inner: R,
    progress: Arc<ImportProgress>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress
            .bytes_read
            .fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A file's text, decompressed when it is gzip (any number of members) or zstd.
fn text_reader(
    source: &Source,
    compression: Compression,
    progress: Arc<ImportProgress>,
) -> io::Result<Box<dyn Read + Send>> {
    let file = Counted {
        inner: source.read()?,
        progress,
    };
    Ok(match compression {
        Compression::None => Box::new(file),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(
            256 * 1024,
            file,
        ))),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(file)?),
    })
}

/// A CSV input, decompressed as needed.
fn open_text(source: &Source) -> io::Result<Box<dyn Read + Send>> {
    let compression = match sniff(source)? {
        InputKind::Csv(c) => c,
        InputKind::Parquet => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a Parquet file where CSV is expected",
            ));
        }
    };
    text_reader(source, compression, Arc::default())
}

/// The timestamps of a table block: instants, or RFC 3339 text to parse like CSV.
pub(super) enum TimeColumn {
    Micros(TimestampMicrosecondArray),
    Text(StringArray),
}

/// Rows of a Parquet file, cast to the types the parsers take.
pub(super) struct TableBlock {
    pub(super) file: u32,
    /// Row number (1-based) of the first row.
    pub(super) first_row: u64,
    pub(super) station: StringArray,
    pub(super) parameter: StringArray,
    pub(super) timestamp: TimeColumn,
    pub(super) value: Float64Array,
    pub(super) quality: StringArray,
}

/// Whole lines of a CSV file (no header).
pub(super) struct CsvBlock {
    pub(super) file: u32,
    /// Line number (1-based) of the first line.
    pub(super) first_line: u64,
    pub(super) layout: Arc<Layout>,
    pub(super) bytes: Vec<u8>,
}

pub(super) enum Block {
    Csv(CsvBlock),
    Table(Box<TableBlock>),
}

impl Block {
    /// Index of the input file it is from.
    pub(super) fn file(&self) -> u32 {
        match self {
            Block::Csv(b) => b.file,
            Block::Table(t) => t.file,
        }
    }
}

/// How the reader gets its blocks to the parsers and their buffers back.
pub(super) struct BlockChannel<'a> {
    /// Hands a block over, waiting while the parsers are busy; false once they stopped.
    pub(super) send: &'a mut dyn FnMut(Block) -> bool,
    /// A buffer of a block the parsers are done with, if there is one: reusing them keeps
    /// the reader from allocating a block for every few MB read, which the parsers then free
    /// on their threads (memory the allocator holds on to for a while).
    pub(super) recycled: &'a mut dyn FnMut() -> Option<Vec<u8>>,
}

/// Reads every input in turn and hands its blocks over. A file that cannot be read is
/// reported.
pub(super) fn read_all(
    inputs: &[ValueInput],
    rules: &LayoutRules<'_>,
    block_bytes: usize,
    progress: &Arc<ImportProgress>,
    problems: &Mutex<Problems>,
    channel: &mut BlockChannel<'_>,
) {
    for (i, input) in inputs.iter().enumerate() {
        let file = u32::try_from(i).unwrap_or(u32::MAX);
        let send = &mut *channel.send;
        let outcome = match input.kind {
            InputKind::Csv(c) => {
                let reading = CsvReading::new(file, rules);
                reading.read(
                    input,
                    c,
                    block_bytes,
                    progress,
                    &mut *channel.recycled,
                    send,
                )
            }
            InputKind::Parquet => {
                let rows = (block_bytes / 64).max(1024);
                read_parquet(file, input, rows, progress, send)
            }
        };
        if let Err((line, reason)) = outcome {
            super::lock(problems).add(&input.path, line, reason);
        }
    }
}

/// A problem of a whole file: the line (or row) where it showed, and what it is.
type FileProblem = (u64, String);

/// Lines are cut at the last line end of each block; a line longer than this is an error
/// rather than a reason to grow the block without end.
const MAX_LINE: usize = 1 << 20;

/// A CSV (or ZRXP) values file as the reader goes through it: its header and `#` lines read
/// here, its rows cut into blocks for the parsers, each with the layout of the rows in it.
struct CsvReading<'a> {
    file: u32,
    rules: &'a LayoutRules<'a>,
    kind: Option<TextKind>,
    /// Lines at the start still to skip (`--skip-lines`).
    skip: usize,
    /// The keys of the `#` lines so far: a block's own override those before them.
    keys: BlockKeys,
    /// Whether the lines since the last row were `#` lines (a block's header).
    in_keys: bool,
    /// The header line of a CSV file (a block may repeat it).
    header: Option<Vec<u8>>,
    layout: Option<Arc<Layout>>,
    /// The line the reader is at (1-based).
    line: u64,
}

impl<'a> CsvReading<'a> {
    fn new(file: u32, rules: &'a LayoutRules<'a>) -> Self {
        Self {
            file,
            rules,
            kind: None,
            skip: rules.dialect.skip_lines,
            keys: BlockKeys::default(),
            in_keys: false,
            header: None,
            layout: None,
            line: 1,
        }
    }

    fn read(
        mut self,
        input: &ValueInput,
        compression: Compression,
        block_bytes: usize,
        progress: &Arc<ImportProgress>,
        recycled: &mut dyn FnMut() -> Option<Vec<u8>>,
        send: &mut dyn FnMut(Block) -> bool,
    ) -> Result<(), FileProblem> {
        let encoding = self.rules.dialect.encoding;
        let mut reader = text_reader(&input.source, compression, Arc::clone(progress))
            .map(|r| dialect::decoded(r, encoding))
            .map_err(|e| (0, format!("cannot open: {e}")))?;
        let mut carry: Vec<u8> = Vec::new();
        loop {
            let mut buf = recycled().unwrap_or_default();
            buf.clear();
            buf.reserve(block_bytes + carry.len());
            buf.append(&mut carry);
            let eof = fill(&mut reader, &mut buf, block_bytes).map_err(|e| {
                let at = self.line + bytecount(&buf);
                (at, format!("cannot read: {e}"))
            })?;
            let cut = match memchr::memrchr(b'\n', &buf) {
                _ if eof => buf.len(),
                Some(i) => i + 1,
                None if buf.len() > MAX_LINE => {
                    return Err((self.line, format!("a line longer than {MAX_LINE} bytes")));
                }
                None => {
                    carry = buf;
                    continue;
                }
            };
            carry.extend_from_slice(&buf[cut..]);
            buf.truncate(cut);
            if !self.lines(buf, send)? {
                return Ok(());
            }
            if eof {
                if self.layout.is_none() && self.kind != Some(TextKind::Zrxp) {
                    return Err((self.line, "empty file: no header row".into()));
                }
                return Ok(());
            }
        }
    }

    /// Goes through whole lines: `#` lines, skipped lines and headers read here, rows sent to
    /// the parsers in blocks. False once the parsers stopped.
    fn lines(
        &mut self,
        mut buf: Vec<u8>,
        send: &mut dyn FnMut(Block) -> bool,
    ) -> Result<bool, FileProblem> {
        if self.line == 1 && buf.starts_with(b"\xEF\xBB\xBF") {
            buf.drain(..3);
        }
        let mut at = 0;
        while at < buf.len() {
            // The rows of a plain file after its header: the rest of the block read, as it is
            // (no copy where the block is all rows).
            if self.kind == Some(TextKind::Plain) && self.layout.is_some() {
                return Ok(match at {
                    0 => self.send_rows(buf, send),
                    _ => self.send_rows(buf[at..].to_vec(), send),
                });
            }
            let end = memchr::memchr(b'\n', &buf[at..]).map_or(buf.len(), |i| at + i + 1);
            let line = &buf[at..end];
            if self.skip > 0 {
                self.skip -= 1;
            } else if line.first() == Some(&b'#')
                || self.layout.is_none() && line.iter().all(u8::is_ascii_whitespace)
            {
                self.keys_line(line);
            } else if self.layout.is_none() || self.in_keys && self.kind == Some(TextKind::Blocks) {
                let kind = *self
                    .kind
                    .get_or_insert(match self.rules.mapping.blocks.any() {
                        true => TextKind::Blocks,
                        false => TextKind::Plain,
                    });
                self.in_keys = false;
                let header = self.header.clone();
                let layout = match (kind, header) {
                    (TextKind::Zrxp, _) => self.rules.zrxp(&self.keys),
                    // A block's rows under the file's header: the header with this block's keys.
                    (TextKind::Blocks, Some(h)) if h.trim_ascii() != line.trim_ascii() => {
                        self.rules.csv(&h, kind, &self.keys)
                    }
                    _ => {
                        self.header = Some(line.to_vec());
                        let made = self.rules.csv(line, kind, &self.keys);
                        self.layout = Some(Arc::new(made.map_err(|e| (self.line, e))?));
                        self.line += 1;
                        at = end;
                        continue;
                    }
                };
                self.layout = Some(Arc::new(layout.map_err(|e| (self.line, e))?));
                // The line is a row: read again as one.
                continue;
            } else {
                // Rows: to the next `#` line.
                let rows_end =
                    memchr::memmem::find(&buf[at..], b"\n#").map_or(buf.len(), |i| at + i + 1);
                if !self.send_rows(buf[at..rows_end].to_vec(), send) {
                    return Ok(false);
                }
                at = rows_end;
                continue;
            }
            self.line += 1;
            at = end;
        }
        Ok(true)
    }

    /// Hands `rows` (whole lines) to the parsers with the current layout.
    fn send_rows(&mut self, rows: Vec<u8>, send: &mut dyn FnMut(Block) -> bool) -> bool {
        let Some(layout) = &self.layout else {
            return true;
        };
        let lines = bytecount(&rows) + u64::from(rows.last().is_some_and(|b| *b != b'\n'));
        let first_line = self.line;
        self.line += lines;
        rows.is_empty()
            || send(Block::Csv(CsvBlock {
                file: self.file,
                first_line,
                layout: Arc::clone(layout),
                bytes: rows,
            }))
    }

    /// A `#` line (or a blank one before the header): metadata before the header of a plain
    /// file; the keys of a block in a file of blocks or ZRXP, where the first `#` line after
    /// rows opens a new block (whose keys override those before it).
    fn keys_line(&mut self, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        let kind = *self.kind.get_or_insert(if is_zrxp_line(text) {
            TextKind::Zrxp
        } else if self.rules.mapping.blocks.any() {
            TextKind::Blocks
        } else {
            TextKind::Plain
        });
        if !text.starts_with('#') || kind == TextKind::Plain {
            return;
        }
        if !self.in_keys && kind == TextKind::Zrxp {
            self.layout = None;
        }
        self.in_keys = true;
        let delimiter = self
            .rules
            .dialect
            .delimiter
            .unwrap_or_else(|| dialect::sniff_delimiter(text.as_bytes()));
        self.keys.read_line(text, delimiter);
    }
}

fn bytecount(bytes: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', bytes).count() as u64
}

/// Reads until `buf` holds `want` bytes or the input ends (then returns true).
fn fill(reader: &mut dyn Read, buf: &mut Vec<u8>, want: usize) -> io::Result<bool> {
    while buf.len() < want {
        let start = buf.len();
        buf.resize(want, 0);
        match reader.read(&mut buf[start..]) {
            Ok(0) => {
                buf.truncate(start);
                return Ok(true);
            }
            Ok(n) => buf.truncate(start + n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => buf.truncate(start),
            Err(e) => {
                buf.truncate(start);
                return Err(e);
            }
        }
    }
    Ok(false)
}

/// The line of `bytes` (CSV read by the csv crate) on which the record at `position` starts,
/// counted from 1. The crate counts a line at each `\n` it has read; where lines end with
/// `\r\n` (Excel, Python's csv module) it ends a record at the `\r`, so the next record's
/// position is taken before that line's `\n` is read and is one line short: such a record
/// starts at the `\n`.
pub(super) fn line_of(position: &csv::Position, bytes: &[u8]) -> u64 {
    let at_newline = usize::try_from(position.byte())
        .ok()
        .and_then(|b| bytes.get(b))
        == Some(&b'\n');
    position.line() + u64::from(at_newline)
}

fn read_parquet(
    file: u32,
    input: &ValueInput,
    batch_rows: usize,
    progress: &Arc<ImportProgress>,
    send: &mut dyn FnMut(Block) -> bool,
) -> Result<(), FileProblem> {
    let builder = input.source.parquet().map_err(|e| (0, e))?;
    let schema = Arc::clone(builder.schema());
    let mut roots = Vec::new();
    let mut problems = Vec::new();
    for name in VALUE_COLUMNS {
        match schema.index_of(name) {
            Ok(i) => {
                roots.push(i);
                if let Err(e) = check_type(name, schema.field(i).data_type()) {
                    problems.push(e);
                }
            }
            Err(_) => problems.push(format!("missing column {name}")),
        }
    }
    if !problems.is_empty() {
        return Err((0, problems.join("; ")));
    }
    let total_rows = builder.metadata().file_metadata().num_rows().max(1) as u64;
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(batch_rows)
        .build()
        .map_err(|e| (0, format!("cannot read: {e}")))?;
    let mut row = 1u64;
    for batch in reader {
        let batch = batch.map_err(|e| (row, format!("cannot read: {e}")))?;
        let n = batch.num_rows() as u64;
        let block = table_block(file, row, &batch).map_err(|e| (row, e))?;
        progress
            .bytes_read
            .fetch_add(input.size * n / total_rows, Ordering::Relaxed);
        if !send(Block::Table(Box::new(block))) {
            return Ok(());
        }
        row += n;
    }
    Ok(())
}

fn is_text(t: &DataType) -> bool {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, v) => is_text(v),
        _ => false,
    }
}

/// Whether a Parquet column's type can stand for value column `name`.
fn check_type(name: &str, t: &DataType) -> Result<(), String> {
    let fits = match name {
        "timestamp" => match t {
            DataType::Timestamp(_, Some(_)) => true,
            DataType::Timestamp(_, None) => {
                return Err(format!(
                    "column timestamp is {t}, a time without a zone: write it as a timestamp \
                     with time zone (UTC), or as RFC 3339 text with an offset"
                ));
            }
            other => is_text(other),
        },
        "value" => t.is_numeric(),
        _ => is_text(t),
    };
    if fits {
        Ok(())
    } else {
        let expected = match name {
            "timestamp" => "a timestamp with time zone or RFC 3339 text",
            "value" => "a number",
            _ => "text",
        };
        Err(format!("column {name} is {t}, expected {expected}"))
    }
}

fn column(batch: &RecordBatch, name: &str) -> Result<ArrayRef, String> {
    batch
        .column_by_name(name)
        .cloned()
        .ok_or_else(|| format!("missing column {name}"))
}

fn text_column(batch: &RecordBatch, name: &str) -> Result<StringArray, String> {
    let c = cast(&column(batch, name)?, &DataType::Utf8).map_err(|e| format!("{name}: {e}"))?;
    Ok(c.as_string::<i32>().clone())
}

fn table_block(file: u32, first_row: u64, batch: &RecordBatch) -> Result<TableBlock, String> {
    let time = column(batch, "timestamp")?;
    let timestamp = match time.data_type() {
        DataType::Timestamp(_, Some(_)) => {
            let micros = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
            let c = cast(&time, &micros).map_err(|e| format!("timestamp: {e}"))?;
            TimeColumn::Micros(
                c.as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>()
                    .clone(),
            )
        }
        _ => TimeColumn::Text(text_column(batch, "timestamp")?),
    };
    let value = cast(&column(batch, "value")?, &DataType::Float64)
        .map_err(|e| format!("value: {e}"))?
        .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
        .clone();
    Ok(TableBlock {
        file,
        first_row,
        station: text_column(batch, "stationId")?,
        parameter: text_column(batch, "parameterId")?,
        timestamp,
        value,
        quality: text_column(batch, "quality")?,
    })
}
