//! `hydro import`: CSV and Parquet files into a dataset (formats in `data/README.md`), in
//! memory bounded by a budget whatever the size of the input.
//!
//! The catalog files (stations, parameters, characteristic values) are small and read whole
//! ([`catalog`]). The values go through two passes:
//!
//! 1. **Partition.** One thread reads the files in blocks (decompressing gzip or zstd, decoding
//!    Parquet, see [`source`]); the other workers parse and check each row ([`rows`]) and append
//!    it to a spill file, in the bucket of its station-month ([`spill`]). Nothing is kept in
//!    memory but the blocks in flight and a small buffer per bucket.
//! 2. **Sort and write.** Each worker takes a bucket at a time, reads it back, sorts it by
//!    series and time, finds repeated timestamps, cuts it into station-months and writes each
//!    as a value file ([`station_months`]). A bucket larger than its share of the budget (the
//!    input was larger than estimated, or one station-month is most of it) is read in as many
//!    parts as it takes, each part a set of whole station-months.
//!
//! Why partitions and not sorted runs merged: a value file is one station-month, so any
//! station-month is all that must be in memory at once; partitioning by it needs one write and
//! one read of the spill (33 bytes a row) and no merge, and the buckets are independent work
//! for both cores. Sorted runs need a k-way merge on one core at the end.
//!
//! An append (`ImportInput::append`) starts from the published version: catalog rows add or
//! replace entries, a station-month that already has a file is read back and merged with the
//! new rows ([`merge`]; a new row at a stored timestamp is a correction), and every file it
//! does not touch is listed in the new version as it is.
//!
//! Nothing is published unless every row is good: rows are checked in pass 1 (before anything
//! is written) and repeated timestamps in pass 2; a problem there deletes the value files the
//! import already wrote. Every bad row is reported as `file:line: reason` (for Parquet the
//! number is the row's, from 1).

mod bucket;
mod catalog;
mod dialect;
mod layout;
mod mapping;
mod merge;
mod rows;
mod source;
mod spill;
mod station_months;
mod time;

pub use dialect::{CsvDialect, Encoding, parse_quality, parse_zone};
pub use mapping::Mapping;

use crate::dataset::catalog_file::Interner;
use crate::dataset::files_table::{self, COPIED_GROUP_MIN_ROWS};
use crate::dataset::manifest::{Manifest, PublishKind, ValueFile};
use crate::dataset::station_files::FilesByStation;
use crate::dataset::stored_month::read_month;
use crate::error::{EngineError, Result};
use crate::model::ids::StationId;
use crate::model::month::Month;
use crate::model::zone::Zone;
use crate::storage::{S3Settings, Store, StoreUrl};
use crate::write::compact;
use crate::write::derived::DerivedChange;
use crate::write::writer::{Copied, DatasetWriter, encode_month};
use catalog::CatalogInput;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use layout::LayoutRules;
use rows::{REC_BYTES, Reading, Rec, RowParser, SeriesIndex, SeriesTraits, Suspicions};
use source::{Block, ValueInput};
use spill::{Partitioner, SpillFile};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The input files of one import.
#[derive(Debug, Clone, Default)]
pub struct ImportInput {
    /// Required unless appending.
    pub stations: Option<PathBuf>,
    /// Required unless appending.
    pub parameters: Option<PathBuf>,
    pub characteristics: Option<PathBuf>,
    /// Values files, or glob patterns naming them.
    pub values: Vec<PathBuf>,
    /// What becomes of a dataset published where the import writes.
    pub mode: ImportMode,
    /// How the CSV files are written (separator, decimal mark, encoding, times, gaps).
    pub dialect: CsvDialect,
    /// How the files name what the import formats name (`--mapping`).
    pub mapping: Mapping,
}

/// What an import does to a dataset published where it writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ImportMode {
    /// There must be none: an import never replaces an archive by accident.
    #[default]
    New,
    /// Add to the published version: catalog entries are added (an id already there is
    /// updated), values of a station-month already stored are merged with it, a new value at
    /// a stored timestamp replacing the stored one.
    Append,
    /// Publish a version of only the files given, in place of the published one (which stays
    /// reachable by `asOf` and `hydro rollback` until a vacuum removes it). A replacement that
    /// holds less than half the values asks [`ImportOptions::confirm_replace`] first.
    Replace,
}

/// What a replacement would do, as it is asked to go ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replacement {
    /// The published version's values (recorded gaps included) and its version.
    pub values_before: u64,
    pub version: u64,
    /// The rows the new version would hold.
    pub values_after: u64,
}

impl Replacement {
    /// Whether it drops more than half the values.
    pub fn drops_most(&self) -> bool {
        self.values_after.saturating_mul(2) < self.values_before
    }
}

/// Whether a replacement that drops most of the values goes ahead (a person asked, or
/// `--yes`); without one, it does not.
#[derive(Clone)]
pub struct ReplaceConfirm(pub Arc<dyn Fn(&Replacement) -> bool + Send + Sync>);

impl std::fmt::Debug for ReplaceConfirm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplaceConfirm")
    }
}

/// What an import did.
#[derive(Debug)]
pub struct Imported {
    pub manifest: Manifest,
    /// Value rows read (all written).
    pub rows: u64,
    /// Stored values an append replaced (corrections).
    pub replaced: u64,
    /// Station-months written (new or rewritten).
    pub months_written: u64,
    /// Files of the previous version an append listed in the new one by copying the files
    /// table's row groups that held them, without decoding them.
    pub files_copied: u64,
    /// `warning: file:line: reason` for what was imported but looks wrong (a station outside
    /// its state); with [`ImportOptions::strict`] these are errors instead.
    pub warnings: Vec<String>,
}

/// How an import may use the machine.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Bytes the import's buffers may hold together (blocks read, rows sorted, files encoded).
    /// The process needs some more of its own (code, allocator, catalog).
    pub memory_bytes: u64,
    /// Threads that parse, sort and encode.
    pub workers: usize,
    /// Where spill files go (about 33 bytes a row while the import runs).
    pub spill_dir: PathBuf,
    /// How to reach input files given as `s3://BUCKET/KEY`.
    pub s3: S3Settings,
    /// Changes to the dataset's derived-value settings (none: as it has them).
    pub derived: DerivedChange,
    /// Whether what looks wrong (a station outside its state) fails the import rather than
    /// being warned of.
    pub strict: bool,
    /// Asked before a replacement that drops more than half the values is published.
    pub confirm_replace: Option<ReplaceConfirm>,
}

/// What makes an input name a glob pattern (locally and in a bucket).
const GLOB_CHARS: [char; 3] = ['*', '?', '['];

/// The default budget of an import's buffers.
pub(crate) const DEFAULT_MEMORY_BYTES: u64 = 1 << 30;

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            memory_bytes: DEFAULT_MEMORY_BYTES,
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            spill_dir: std::env::temp_dir(),
            s3: S3Settings::default(),
            derived: DerivedChange::default(),
            strict: false,
            confirm_replace: None,
        }
    }
}

/// What an import has done so far, for a progress display.
#[derive(Debug, Default)]
pub struct ImportProgress {
    /// Bytes of all values files (as stored, compressed or not).
    pub bytes_total: AtomicU64,
    pub bytes_read: AtomicU64,
    pub rows_read: AtomicU64,
    pub rows_written: AtomicU64,
    /// Set when reading is done and value files are being written.
    pub writing: AtomicBool,
}

/// Quality flags accepted in values files.
pub(crate) use crate::model::QUALITY_FLAGS;

/// Reports shown at most: a file that is wrong throughout stays readable.
const SHOWN_PROBLEMS: usize = 1000;

/// Collects `file:line: reason` messages (`file: reason` for the whole file); the import
/// fails if there is any.
#[derive(Default)]
pub(super) struct Problems {
    shown: Vec<String>,
    total: u64,
    /// Whether warnings are problems.
    strict: bool,
    /// `warning: file:line: reason`, at most [`SHOWN_PROBLEMS`].
    warnings: Vec<String>,
    /// Rows that refer to a station or parameter whose own row was rejected: one error is
    /// said once, not again for every row that follows from it.
    followups: u64,
}

impl Problems {
    /// A problem at `line` of `file` (1-based; Parquet: the row), or of the whole file (0).
    pub(super) fn add(&mut self, file: &Path, line: u64, reason: impl std::fmt::Display) {
        self.total += 1;
        if self.shown.len() < SHOWN_PROBLEMS {
            self.shown.push(match line {
                0 => format!("{}: {reason}", file.display()),
                _ => format!("{}:{line}: {reason}", file.display()),
            });
        }
    }

    /// Something at `line` of `file` that is imported but looks wrong: a problem with
    /// `--strict`.
    pub(super) fn warn(&mut self, file: &Path, line: u64, reason: impl std::fmt::Display) {
        if self.strict {
            self.add(
                file,
                line,
                format_args!("{reason} (an error with --strict)"),
            );
        } else if self.warnings.len() < SHOWN_PROBLEMS {
            self.warnings
                .push(format!("warning: {}:{line}: {reason}", file.display()));
        }
    }

    /// A row that refers to a station or parameter rejected above.
    pub(super) fn follow_up(&mut self) {
        self.followups += 1;
    }

    fn is_empty(&self) -> bool {
        self.total == 0
    }

    fn into_error(mut self, note: Option<&str>) -> EngineError {
        let hidden = self.total - self.shown.len() as u64;
        self.shown.splice(0..0, std::mem::take(&mut self.warnings));
        if hidden > 0 {
            self.shown.push(format!("… and {hidden} more"));
        }
        if self.followups > 0 {
            self.shown.push(format!(
                "({} rows that refer to a station or parameter rejected above are not listed)",
                self.followups
            ));
        }
        self.shown.extend(note.map(str::to_owned));
        EngineError::Import(self.shown)
    }
}

/// An error of a spill file (full disk, mostly).
fn spill_error(source: std::io::Error) -> EngineError {
    EngineError::Io {
        what: "spill file".into(),
        source,
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sizes derived from the budget, the number of workers and the estimated rows.
#[derive(Debug)]
struct MemoryBudget {
    workers: usize,
    /// Bytes of a block read for the parsers.
    block_bytes: usize,
    buckets: usize,
    /// Bytes of each worker's buffer per bucket.
    buffer_bytes: usize,
    /// Spilled bytes of a bucket (part) one worker sorts at a time.
    part_bytes: u64,
}

impl MemoryBudget {
    /// A quarter of the budget for blocks in flight (one per worker, as many queued, one being
    /// read), a quarter for the partition buffers, half for the buckets being sorted: a record
    /// takes 40 bytes in memory against 33 spilled, and its month's encoded copy far less.
    fn new(memory_bytes: u64, workers: usize, rows_estimate: u64) -> Self {
        const KIB: u64 = 1024;
        let budget = memory_bytes.max(16 * KIB * KIB);
        let workers = workers.max(1);
        let w = workers as u64;
        let block_bytes = (budget / 4 / (2 * w + 1)).clamp(64 * KIB, 8 * KIB * KIB);
        let in_memory = std::mem::size_of::<Rec>() as u64;
        let part_bytes = budget / 2 / w * REC_BYTES as u64 / in_memory;
        let buckets = (rows_estimate * REC_BYTES as u64)
            .div_ceil(part_bytes)
            .clamp(2 * w, 4096);
        let buffer_bytes = (budget / 4 / (w * buckets)).clamp(4 * KIB, KIB * KIB);
        Self {
            workers,
            block_bytes: block_bytes as usize,
            buckets: buckets as usize,
            buffer_bytes: buffer_bytes as usize,
            part_bytes,
        }
    }
}

/// Checks everything, then writes and publishes. Returns the manifest and the number of
/// value rows read (which equals the rows written).
pub async fn import(
    store: Arc<dyn ObjectStore>,
    input: &ImportInput,
    options: &ImportOptions,
    progress: Arc<ImportProgress>,
) -> Result<Imported> {
    let mut problems = Problems {
        strict: options.strict,
        ..Problems::default()
    };
    let published = crate::dataset::read_manifest(store.as_ref()).await?;
    if let (ImportMode::New, Some(m)) = (input.mode, &published) {
        return Err(EngineError::Refused(format!(
            "a dataset is published there (version {}, {} values): add to it with --append, or \
             publish these files in its place with --replace (the version before stays \
             reachable with asOf and hydro rollback until a vacuum)",
            m.version,
            m.counts.values + m.counts.missing
        )));
    }
    let append = input.mode == ImportMode::Append;
    let (existing, previous) = if append {
        let (published, files) = crate::dataset::read_published(&store)
            .await?
            .ok_or_else(|| {
                EngineError::Import(vec![
                    "nothing to append to: no dataset is published there (import without --append first)".into(),
                ])
            })?;
        let existing = CatalogInput {
            stations: published.stations,
            parameters: published.parameters,
            characteristics: published.characteristics,
        };
        (existing, Some((published.manifest, files)))
    } else {
        for (name, path) in [
            ("stations", &input.stations),
            ("parameters", &input.parameters),
        ] {
            if path.is_none() {
                problems.add(Path::new(name), 0, "a new dataset needs this file");
            }
        }
        (CatalogInput::default(), None)
    };
    // The catalog and the values files' first bytes are read off the runtime's threads:
    // reading from a bucket blocks on its client.
    let (catalog, inputs, problems) = {
        let input = input.clone();
        let s3 = options.s3.clone();
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let bucket_store = |bucket: &StoreUrl| {
                Store::open(bucket, &s3)
                    .map(|s| s.object_store())
                    .map_err(|e| e.to_string())
            };
            let inputs = source::Inputs {
                bucket_store: &bucket_store,
                runtime: &runtime,
            };
            let paths = catalog::CatalogPaths {
                stations: input.stations.as_deref(),
                parameters: input.parameters.as_deref(),
                characteristics: input.characteristics.as_deref(),
            };
            let new_catalog = catalog::read_catalog(
                &paths,
                &existing,
                (&input.dialect, &input.mapping),
                &inputs,
                &mut problems,
            );
            let catalog = existing.updated_by(new_catalog);
            if !problems.is_empty() {
                let note = "(the values files were not read: their rows are checked against \
                            good catalog files)";
                return Err(problems.into_error(Some(note)));
            }
            let files = inputs.expand_values(&input.values, &mut problems);
            let planned = source::plan_inputs(files, &mut problems);
            if !problems.is_empty() {
                return Err(problems.into_error(None));
            }
            Ok((catalog, planned, problems))
        })
        .await
        .map_err(|source| EngineError::Task {
            what: "import",
            source,
        })??
    };
    progress
        .bytes_total
        .store(inputs.iter().map(|i| i.size).sum(), Ordering::Relaxed);
    let rows_estimate = inputs.iter().map(|i| i.rows_estimate).sum();
    let budget = Arc::new(MemoryBudget::new(
        options.memory_bytes,
        options.workers,
        rows_estimate,
    ));
    tracing::debug!("import budget: {budget:?}");
    let index = Arc::new(SeriesIndex::new(
        catalog
            .parameters
            .iter()
            .map(|p| (p.station.clone(), p.id.clone(), SeriesTraits::of(p)))
            .collect(),
    ));
    let inputs = Arc::new(inputs);
    let problems = Arc::new(Mutex::new(problems));

    let (spills, rows_in) = {
        let (index, budget, inputs) =
            (Arc::clone(&index), Arc::clone(&budget), Arc::clone(&inputs));
        let (problems, progress) = (Arc::clone(&problems), Arc::clone(&progress));
        let spill_dir = options.spill_dir.clone();
        let (dialect, mapping) = (input.dialect.clone(), input.mapping.values.clone());
        tokio::task::spawn_blocking(move || {
            let rules = LayoutRules {
                dialect: &dialect,
                mapping: &mapping,
            };
            let reading = Reading::new(&dialect, &mapping);
            let pass = Pass {
                inputs: &inputs,
                index: &index,
                budget: &budget,
                progress: &progress,
                problems: &problems,
            };
            partition(&pass, &rules, &reading, &spill_dir)
        })
        .await
        .map_err(|source| EngineError::Task {
            what: "import",
            source,
        })??
    };
    if !lock(&problems).is_empty() {
        return Err(take(&problems).into_error(None));
    }
    if let (ImportMode::Replace, Some(m)) = (input.mode, &published) {
        let replacement = Replacement {
            values_before: m.counts.values + m.counts.missing,
            version: m.generation,
            values_after: rows_in,
        };
        let confirmed = !replacement.drops_most()
            || options
                .confirm_replace
                .as_ref()
                .is_some_and(|c| (c.0)(&replacement));
        if !confirmed {
            return Err(EngineError::Refused(format!(
                "not replaced: version {} holds {} values, these files {}, less than half; \
                 give --yes to replace it all the same (or --append to add to it)",
                replacement.version, replacement.values_before, replacement.values_after
            )));
        }
    }

    progress.writing.store(true, Ordering::Relaxed);
    let writer = Arc::new(
        DatasetWriter::begin(
            Arc::clone(&store),
            if append {
                PublishKind::Append
            } else {
                PublishKind::Import
            },
        )
        .await?
        .deriving(options.derived),
    );
    let previous = Arc::new(previous);
    let rewritten: Arc<Mutex<HashSet<(StationId, Month)>>> = Arc::default();
    let replaced = Arc::new(AtomicU64::new(0));
    let written = {
        let (index, budget, inputs) =
            (Arc::clone(&index), Arc::clone(&budget), Arc::clone(&inputs));
        let (problems, progress) = (Arc::clone(&problems), Arc::clone(&progress));
        let writer = Arc::clone(&writer);
        let (previous, rewritten, replaced) = (
            Arc::clone(&previous),
            Arc::clone(&rewritten),
            Arc::clone(&replaced),
        );
        let store = Arc::clone(&store);
        let runtime = tokio::runtime::Handle::current();
        let zone = input.dialect.time_zone;
        tokio::task::spawn_blocking(move || {
            let context = WriteContext {
                store: store.as_ref(),
                previous: previous.as_ref().as_ref().map(|(_, files)| files),
                rewritten: &rewritten,
                replaced: &replaced,
                spills: &spills,
                index: &index,
                budget: &budget,
                inputs: &inputs,
                problems: &problems,
                progress: &progress,
                writer: &writer,
                runtime: &runtime,
                zone,
            };
            context.write_all()
        })
        .await
        .map_err(|source| EngineError::Task {
            what: "import",
            source,
        })
        .and_then(|r| r)
    };
    let failure = match written {
        Err(e) => Some(e),
        Ok(_) if !lock(&problems).is_empty() => Some(take(&problems).into_error(None)),
        Ok(rows_out) if rows_out != rows_in => Some(EngineError::Internal(format!(
            "read {rows_in} value rows but wrote {rows_out}"
        ))),
        Ok(_) => None,
    };
    if let Some(e) = failure {
        writer.abandon().await;
        return Err(e);
    }
    let writer = Arc::into_inner(writer)
        .ok_or_else(|| EngineError::Internal("import writer still shared".into()))?;
    let rewritten = std::mem::take(&mut *lock(&rewritten));
    let months_written = writer.files_written()?;
    let carried = match previous.as_ref() {
        Some((manifest, files)) => carry(&writer, manifest, files, &rewritten).await,
        None => Ok(0),
    };
    let files_copied = match carried {
        Ok(copied) => copied,
        Err(e) => {
            writer.abandon().await;
            return Err(e);
        }
    };
    // The previous version's files table (its index and decoded stations: ~30 MB at 2.4 M
    // files) is not needed by the publish, which reads the new one.
    drop(previous);
    let manifest = writer
        .publish(
            &catalog.stations,
            catalog.parameters,
            &catalog.characteristics,
        )
        .await?;
    Ok(Imported {
        manifest,
        rows: rows_in,
        replaced: replaced.load(Ordering::Relaxed),
        months_written,
        files_copied,
        warnings: take(&problems).warnings,
    })
}

/// Lists in the new version every file of `previous` (whose manifest is `manifest`) whose
/// station-month the append did not write anew, in one pass through the previous files table
/// in its order (so each station's rows stay together: `dataset::station_files`); returns how
/// many files it listed by copying row groups.
///
/// Where the previous version lists its newest months, row groups that hold no row of a station the
/// append wrote months of (and at least [`COPIED_GROUP_MIN_ROWS`] rows) are copied as they are,
/// without decoding them: the new newest-months table takes those groups' stations' rows from the
/// previous one, and their parameters keep their availability and newest value ([`Copied`]). A
/// one-value append to 200 000 station-years decoded, noted and encoded all 2.4 M files again: 10.5
/// s, against 2.4 s copying (the history of `benches/RESULTS.md`).
///
/// Files of the other groups are decoded: those of stations whose months the append did not
/// rewrite go over as they come; those of a station it rewrote months of are held until the
/// pass has passed the station's last row, then go over together, where months of a
/// station-year file whose other months it rewrote are joined into a new file
/// (`compact::rejoin`). What is held is the rewritten stations whose rows the pass is inside
/// of: one station of a table written a station at a time, not every such station's files
/// (an append of a day to every series held all 2.4 M files of a 200 000-station-year
/// archive, ~200 bytes each: an estimate, not a measurement).
async fn carry(
    writer: &DatasetWriter,
    manifest: &Manifest,
    previous: &FilesByStation,
    rewritten: &HashSet<(StationId, Month)>,
) -> Result<u64> {
    let mut pass = CarryPass {
        writer,
        rewritten,
        ends: rewritten
            .iter()
            .filter_map(|(s, _)| Some((s.clone(), previous.rows_end(s)?)))
            .collect(),
        held: HashMap::new(),
    };
    let Some(path) = &manifest.catalog.newest else {
        // Tables written before the newest months were listed may cut a file between row
        // groups: read as one stream.
        let mut row = 0;
        let mut files = previous.in_order();
        while let Some(batch) = files.next().await? {
            for file in batch {
                row += file.series.len() as u64;
                pass.file(file, row).await?;
            }
        }
        pass.finish().await?;
        return Ok(0);
    };
    let newest = read_newest(writer, path).await?;
    // Every file of a station written is seen, so that its series' availability is found
    // from its files as before.
    let touched = writer.stations_written()?;
    let holding = previous.groups_holding(&touched);
    let footer = previous.copy_footer().await?;
    // What the groups copied hold: the previous version's counts, less the files decoded.
    let mut left = manifest.counts.clone();
    // A span of row groups read at a time, none kept after it.
    for span in previous.spans() {
        let groups: Vec<usize> = span.collect();
        let read = previous.bytes_of(&groups).await?;
        for group in groups {
            let rows = previous.group_rows(group);
            if !holding[group] && rows.end - rows.start >= COPIED_GROUP_MIN_ROWS {
                let (data, data_start) = previous.group_bytes(&read, group)?;
                writer
                    .copy_table_group(&footer, group, &data, data_start)
                    .await?;
                continue;
            }
            let mut row = rows.start;
            for file in previous.group_files(&read, group)? {
                row += file.series.len() as u64;
                left.files = left.files.wrapping_sub(1);
                for s in file.series.iter() {
                    left.values = left.values.wrapping_sub(s.rows);
                    left.missing = left.missing.wrapping_sub(s.missing);
                }
                pass.file(file, row).await?;
            }
        }
    }
    pass.finish().await?;
    if left.files > manifest.counts.files
        || left.values > manifest.counts.values
        || left.missing > manifest.counts.missing
    {
        return Err(EngineError::corrupt(format!(
            "{}: the version counts fewer files or values than it lists",
            manifest.catalog.files
        )));
    }
    let files_copied = left.files;
    writer
        .copied(Copied {
            files: left.files,
            values: left.values,
            missing: left.missing,
            newest: newest
                .into_iter()
                .filter(|f| !touched.contains(&f.station))
                .collect(),
            touched,
        })
        .await?;
    Ok(files_copied)
}

/// The previous version's files as [`carry`] goes through them in the table's order.
struct CarryPass<'a> {
    writer: &'a DatasetWriter,
    rewritten: &'a HashSet<(StationId, Month)>,
    /// The row after the last of each station whose months the append rewrote.
    ends: HashMap<StationId, u64>,
    /// Files of those stations, until the pass is past their last row.
    held: HashMap<StationId, Vec<ValueFile>>,
}

impl CarryPass<'_> {
    /// Carries `file`, whose last row is the one before `row`.
    async fn file(&mut self, file: ValueFile, row: u64) -> Result<()> {
        let Some(&end) = self.ends.get(&file.station) else {
            return self.writer.carry(file).await;
        };
        let station = file.station.clone();
        self.held.entry(station.clone()).or_default().push(file);
        if row >= end
            && let Some(files) = self.held.remove(&station)
        {
            carry_touched(self.writer, &station, files, self.rewritten).await?;
        }
        Ok(())
    }

    async fn finish(self) -> Result<()> {
        // Only a table whose station index and rows disagree leaves any.
        let mut left: Vec<_> = self.held.into_iter().collect();
        left.sort_by(|a, b| a.0.cmp(&b.0));
        for (station, files) in left {
            carry_touched(self.writer, &station, files, self.rewritten).await?;
        }
        Ok(())
    }
}

/// The previous version's newest-months table (`files_table::NEWEST`).
async fn read_newest(writer: &DatasetWriter, path: &str) -> Result<Vec<ValueFile>> {
    let bytes = writer
        .store()
        .get(&ObjectPath::from(path))
        .await?
        .bytes()
        .await?;
    files_table::decode_files(bytes, &mut Interner::default())
        .map_err(|e| EngineError::corrupt_by(path.to_owned(), e))
}

/// Carries the `files` of a `station` the append wrote months of: those it did not rewrite,
/// ascending by month, with a station-year file whose other months it rewrote joined anew.
async fn carry_touched(
    writer: &DatasetWriter,
    station: &StationId,
    files: Vec<ValueFile>,
    rewritten: &HashSet<(StationId, Month)>,
) -> Result<()> {
    let (mut carried, replaced): (Vec<_>, Vec<_>) = files
        .into_iter()
        .partition(|f| !rewritten.contains(&(station.clone(), f.month)));
    carried.sort_by_key(|f| f.month);
    let replaced: Vec<&ValueFile> = replaced.iter().collect();
    compact::rejoin(
        &writer.store(),
        &mut carried,
        &replaced,
        writer.generation(),
    )
    .await?;
    for file in carried {
        writer.carry(file).await?;
    }
    Ok(())
}

fn take(problems: &Mutex<Problems>) -> Problems {
    std::mem::take(&mut *lock(problems))
}

/// What pass 1 reads with.
struct Pass<'a> {
    inputs: &'a [ValueInput],
    index: &'a SeriesIndex,
    budget: &'a MemoryBudget,
    progress: &'a Arc<ImportProgress>,
    problems: &'a Mutex<Problems>,
}

/// Pass 1: every row read, checked and spilled to its bucket. Returns the spill files and the
/// number of good rows.
fn partition(
    pass: &Pass<'_>,
    rules: &LayoutRules<'_>,
    reading: &Reading,
    spill_dir: &Path,
) -> Result<(Vec<SpillFile>, u64)> {
    let Pass {
        inputs,
        index,
        budget,
        progress,
        problems,
    } = *pass;
    let (sender, receiver) = std::sync::mpsc::sync_channel::<Block>(budget.workers);
    let receiver = Mutex::new(receiver);
    // Buffers of parsed blocks, back to the reader: at most as many as there are blocks.
    let (give_back, take_back) = std::sync::mpsc::sync_channel::<Vec<u8>>(2 * budget.workers + 1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..budget.workers)
            .map(|worker| {
                let receiver = &receiver;
                let give_back = give_back.clone();
                scope.spawn(move || -> Result<(SpillFile, u64, Suspicions)> {
                    let mut partitioner = Partitioner::new(
                        index,
                        spill_dir,
                        worker,
                        budget.buckets,
                        budget.buffer_bytes,
                    )
                    .map_err(spill_error)?;
                    let mut parser = RowParser::new(index, reading);
                    let mut rows = 0u64;
                    loop {
                        let Ok(block) = lock(receiver).recv() else {
                            break;
                        };
                        let (mut spilled, mut bad) = (Ok(()), Vec::new());
                        let before = rows;
                        parser.block(
                            &block,
                            &mut |rec| {
                                rows += 1;
                                if spilled.is_ok() {
                                    spilled = partitioner.push(&rec);
                                }
                            },
                            &mut |row| bad.push(row),
                        );
                        spilled.map_err(spill_error)?;
                        progress
                            .rows_read
                            .fetch_add(rows - before, Ordering::Relaxed);
                        if !bad.is_empty() {
                            let path = &inputs[block.file() as usize].path;
                            let mut problems = lock(problems);
                            for (line, reason) in bad {
                                problems.add(path, line, reason);
                            }
                        }
                        if let Block::Csv(csv) = block {
                            let _ = give_back.try_send(csv.bytes);
                        }
                    }
                    let spill = partitioner.finish().map_err(spill_error)?;
                    Ok((spill, rows, parser.suspicions))
                })
            })
            .collect();
        drop(give_back);
        {
            let mut send = |block: Block| sender.send(block).is_ok();
            let mut recycled = || take_back.try_recv().ok();
            let mut channel = source::BlockChannel {
                send: &mut send,
                recycled: &mut recycled,
            };
            source::read_all(
                inputs,
                rules,
                budget.block_bytes,
                progress,
                problems,
                &mut channel,
            );
        }
        drop(sender);
        let mut spills = Vec::new();
        let mut rows = 0;
        let mut suspicions = Suspicions::default();
        for worker in workers {
            let (spill, n, found) = worker
                .join()
                .map_err(|_| EngineError::Internal("an import worker panicked".into()))??;
            spills.push(spill);
            rows += n;
            suspicions.merge(found);
        }
        let mut problems = lock(problems);
        for (file, line, what) in suspicions.findings(index) {
            problems.warn(&inputs[file as usize].path, line, what);
        }
        Ok((spills, rows))
    })
}

/// What pass 2 works with.
struct WriteContext<'a> {
    store: &'a dyn ObjectStore,
    /// The published version's files (None unless appending).
    previous: Option<&'a FilesByStation>,
    /// Station-months of `previous` written anew.
    rewritten: &'a Mutex<HashSet<(StationId, Month)>>,
    /// Stored values replaced by new ones.
    replaced: &'a AtomicU64,
    spills: &'a [SpillFile],
    index: &'a SeriesIndex,
    budget: &'a MemoryBudget,
    inputs: &'a [ValueInput],
    problems: &'a Mutex<Problems>,
    progress: &'a ImportProgress,
    writer: &'a DatasetWriter,
    runtime: &'a tokio::runtime::Handle,
    /// The zone of times without an offset, whose repeated hour is told by order.
    zone: Option<Zone>,
}

impl WriteContext<'_> {
    /// Pass 2: every bucket sorted, checked and written, by all workers. Returns rows written.
    fn write_all(&self) -> Result<u64> {
        let next = AtomicUsize::new(0);
        let repeated = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..self.budget.workers)
                .map(|_| scope.spawn(|| self.worker(&next, &repeated)))
                .collect();
            let mut rows = 0;
            let mut first_error = None;
            for worker in workers {
                match worker.join() {
                    Ok(Ok(n)) => rows += n,
                    Ok(Err(e)) => {
                        first_error.get_or_insert(e);
                    }
                    Err(_) => {
                        first_error.get_or_insert(EngineError::Internal(
                            "an import worker panicked".into(),
                        ));
                    }
                }
            }
            first_error.map_or(Ok(rows), Err)
        })
    }

    fn worker(&self, next: &AtomicUsize, repeated: &AtomicBool) -> Result<u64> {
        // Room for the largest part from the start: growing a vector of hundreds of MB means a
        // moment with two of them (seen as spikes of RSS at part changes), and the memory a
        // smaller one leaves behind is not always back with the system in time.
        let largest = (0..self.budget.buckets)
            .map(|b| spill::bucket_bytes(self.spills, b))
            .max()
            .unwrap_or(0)
            .min(self.budget.part_bytes);
        let mut records: Vec<Rec> = Vec::with_capacity((largest / REC_BYTES as u64) as usize);
        let mut rows = 0;
        loop {
            let bucket = next.fetch_add(1, Ordering::Relaxed);
            if bucket >= self.budget.buckets {
                return Ok(rows);
            }
            let bytes = spill::bucket_bytes(self.spills, bucket);
            let parts = bytes.div_ceil(self.budget.part_bytes).max(1) as usize;
            let part_of = |r: &Rec| {
                let station = self.index.station_of[r.series as usize];
                spill::part_of(spill::bucket_hash(station, Month::of(r.ts)), parts)
            };
            // Room for exactly the records of each part: a vector that grows by doubling
            // could take twice the budget.
            let sizes = if parts == 1 {
                vec![(bytes / REC_BYTES as u64) as usize]
            } else {
                spill::count_parts(self.spills, bucket, parts, &part_of).map_err(spill_error)?
            };
            for (part, size) in sizes.into_iter().enumerate() {
                records.clear();
                records.reserve_exact(size);
                let keep = |r: &Rec| parts == 1 || part_of(r) == part;
                spill::read_bucket(self.spills, bucket, &keep, &mut records)
                    .map_err(spill_error)?;
                let found = station_months::sort_and_check(&mut records, self.zone);
                if !found.is_empty() {
                    repeated.store(true, Ordering::Relaxed);
                    self.report_repeats(&found);
                }
                // Once a repeat is known nothing will be published: the rest is only checked.
                if repeated.load(Ordering::Relaxed) {
                    continue;
                }
                station_months::each_station_month(&records, self.index, &mut |mut month| {
                    let n: u64 = month.chunks.iter().map(|c| c.timestamps.len() as u64).sum();
                    let key = (month.station.clone(), month.month);
                    if let Some(stored) = self.previous_file(&key)? {
                        let old = self.runtime.block_on(read_month(self.store, &stored))?;
                        let (merged, replaced) = merge::merge_chunks(old, month.chunks);
                        month.chunks = merged;
                        self.replaced.fetch_add(replaced, Ordering::Relaxed);
                        lock(self.rewritten).insert(key);
                    }
                    let encoded = encode_month(&mut month.chunks)?;
                    self.runtime.block_on(self.writer.write_month(
                        month.station,
                        month.month,
                        encoded,
                    ))?;
                    rows += n;
                    self.progress.rows_written.fetch_add(n, Ordering::Relaxed);
                    Ok::<_, EngineError>(())
                })?;
            }
        }
    }

    /// The published version's file of a station-month, if it has one: known from the
    /// previous table's index where it has none, else found among the station's files of
    /// that year, read and decoded (and kept within the previous table's budget).
    fn previous_file(&self, (station, month): &(StationId, Month)) -> Result<Option<ValueFile>> {
        let Some(previous) = self.previous else {
            return Ok(None);
        };
        if !previous.lists_month(station, *month) {
            return Ok(None);
        }
        let year = month.year();
        let months = self
            .runtime
            .block_on(previous.get_years(station, year..=year))?;
        Ok(months
            .iter()
            .map(|m| &m.file)
            .find(|f| f.month == *month)
            .cloned())
    }

    fn report_repeats(&self, found: &[station_months::Repeated]) {
        let mut problems = lock(self.problems);
        for r in found {
            let (station, parameter) = &self.index.series[r.series as usize];
            let (first, again) = (&r.first, &r.again);
            // Each time as its own file wrote it; the first named again only when it differs.
            let when = again.offset.show(r.ts);
            let first_when = first.offset.show(r.ts);
            let first_as = if first_when == when {
                String::new()
            } else {
                format!(" as {first_when}")
            };
            problems.add(
                &self.inputs[again.file as usize].path,
                again.line,
                format!(
                    "duplicate timestamp {when} for {station}/{parameter} (first at {}:{}{first_as})",
                    self.inputs[first.file as usize].path.display(),
                    first.line,
                ),
            );
        }
    }
}
