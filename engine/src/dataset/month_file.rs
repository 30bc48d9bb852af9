//! A month file of the dataset: one station-month of values, as the files table names it (an
//! object of its own; row groups of its station-year's file, read with that file's offsets and
//! footer; or a stretch of a pack of layout 3, read alike, shifted by its offset), with what
//! reading it again and again keeps at hand: its open handle (a local directory), its bytes
//! (the value cache) and its footer (the footer cache).

use crate::dataset::layout::{COL_VALUE, values_schema, values_schema_with_gaps};
use crate::dataset::manifest::ValueFile;
use crate::error::{EngineError, Result};
use crate::parquet::assembly::FileFooter;
use crate::storage::Store;
use crate::storage::local::OpenHandle;
use crate::storage::slot_cache::{Slot, SlotCache};
use crate::storage::value_cache::CachedRanges;
use bytes::Bytes;
use datafusion::object_store::path::Path;
use datafusion::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::{
    PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader,
};
use std::ops::Range;
use std::sync::{Arc, OnceLock};

/// Bytes read from a month file's end to find its footer: more than most month files hold
/// (an hourly month is ~10 KB, a 15-minute month ~30 KB), so that one read gets all of it.
pub(crate) const TAIL_BYTES: u64 = 64 << 10;

/// The end of a month file, from `start`, as read for its footer.
pub(crate) struct Tail {
    pub(crate) start: u64,
    pub(crate) bytes: Bytes,
}

impl Tail {
    /// Bytes `span` of the file, if the tail holds them.
    pub(crate) fn slice(&self, span: &Range<u64>) -> Option<Bytes> {
        let from = usize::try_from(span.start.checked_sub(self.start)?).ok()?;
        let to = usize::try_from(span.end.checked_sub(self.start)?).ok()?;
        (from <= to && to <= self.bytes.len()).then(|| self.bytes.slice(from..to))
    }
}

/// What the readers derive from a month file's footer, kept together in the footer cache.
pub(crate) struct MonthFooter {
    /// The footer and page index as the parquet crate decodes them.
    pub(crate) metadata: Arc<ParquetMetaData>,
    /// What the Arrow reader makes of them before it decodes anything: the schema converted
    /// and matched to the planner's. The same every time for the same file, and it was 2-4 %
    /// of a download's CPU time (`perf`) to make it for every month of every answer.
    pub(crate) reader: ArrowReaderMetadata,
    /// The footer split for copying (see `parquet::assembly`), once a Parquet answer needed it.
    pub(crate) copy: Option<Arc<FileFooter>>,
}

impl MonthFooter {
    /// Bytes it holds, for the cache's budget.
    fn memory_size(&self) -> usize {
        self.metadata.memory_size()
            + self.copy.as_ref().map_or(0, |c| c.memory_size())
            + std::mem::size_of::<Self>()
    }
}

/// The engine's cache of month files' footers ([`MonthFooter`]), within a byte budget; each
/// file keeps its own slot. A month file's footer takes about 10 KB of it (see
/// [`super::FOOTER_CACHE_BYTES`]).
pub(crate) type FooterCache = SlotCache<MonthFooter>;

/// What reading an object of the store again and again keeps at hand: its location (parsed
/// once: `Path::from` percent-encodes each part of the path, and a 10-year download reads 120
/// months), and the slots the caches fill. An archive of 100 000 station-years has over a
/// million month files, most never read while the server runs, so they are made when first
/// needed rather than at open (a path string and three shared slots: some 200 bytes a file, by
/// their sizes).
#[derive(Default)]
pub(crate) struct ObjectSlots {
    location: OnceLock<Path>,
    /// The object's footer while the footer cache holds it.
    footer: OnceLock<Arc<Slot<MonthFooter>>>,
    /// The object's handle while it is open, in a local directory (see [`OpenHandle`]).
    handle: OnceLock<Arc<OpenHandle>>,
    /// The object's bytes while the value cache holds them (see `storage::value_cache`).
    cached: OnceLock<Arc<CachedRanges>>,
}

/// A month's slots: its file's own, or those of the station-year file it shares with the
/// year's other months (one footer read and cached for all of them, one handle, one set of
/// cached bytes in the file's offsets).
enum Slots {
    Own(ObjectSlots),
    Shared(Arc<ObjectSlots>),
}

/// A value file as the readers keep it: where its rows lie, and the slots of the object that
/// holds them.
pub(crate) struct MonthFile {
    pub(crate) file: ValueFile,
    slots: Slots,
}

impl MonthFile {
    pub(crate) fn new(file: ValueFile) -> Self {
        Self {
            file,
            slots: Slots::Own(ObjectSlots::default()),
        }
    }

    /// A month of a station-year file, with the slots of that file.
    pub(crate) fn sharing(file: ValueFile, slots: Arc<ObjectSlots>) -> Self {
        Self {
            file,
            slots: Slots::Shared(slots),
        }
    }

    /// A file at a location of its own (not where its station, month and generation say).
    #[cfg(test)]
    pub(crate) fn at(location: Path, file: ValueFile) -> Self {
        let month = Self::new(file);
        let _ = month.slots().location.set(location);
        month
    }

    fn slots(&self) -> &ObjectSlots {
        match &self.slots {
            Slots::Own(s) => s,
            Slots::Shared(s) => s,
        }
    }

    /// The object that holds the month: its file, its station-year's file or its pack.
    pub(crate) fn location(&self) -> &Path {
        self.slots()
            .location
            .get_or_init(|| Path::from(self.file.object()))
    }

    fn footer_slot(&self) -> &Arc<Slot<MonthFooter>> {
        self.slots().footer.get_or_init(Arc::default)
    }

    fn handle(&self) -> &Arc<OpenHandle> {
        self.slots().handle.get_or_init(Arc::default)
    }

    pub(crate) fn cached(&self) -> &Arc<CachedRanges> {
        self.slots().cached.get_or_init(Arc::default)
    }

    /// Bytes `span` of the file (offsets in the file, wherever it lies), as `store` reads
    /// best (in a local directory through the handle the file keeps, see [`OpenHandle`]).
    pub(crate) async fn read(&self, store: &Store, span: Range<u64>) -> Result<Bytes> {
        store
            .read(self.handle(), self.location(), self.in_object(span))
            .await
    }

    /// Bytes `span` of the file as bytes of the object that holds it.
    fn in_object(&self, span: Range<u64>) -> Range<u64> {
        let offset = self.file.offset();
        span.start + offset..span.end + offset
    }

    /// The file's footer, page index and the Arrow reader's view of them: from the footer
    /// cache, else read and kept there (see [`MonthFile::footer_with_tail`]).
    #[cfg(test)]
    pub(crate) async fn footer(
        &self,
        store: &Store,
        cache: &FooterCache,
    ) -> Result<Arc<MonthFooter>> {
        Ok(self.footer_with_tail(store, cache, None).await?.0)
    }

    /// The file's footer if the footer cache holds it.
    pub(crate) fn cached_footer(&self, cache: &FooterCache) -> Option<Arc<MonthFooter>> {
        cache.get(self.footer_slot())
    }

    /// [`MonthFile::footer`], with the bytes read for it when it was not cached: one read of
    /// the file's last [`TAIL_BYTES`] (again, larger, only if footer and page index do not fit
    /// in them), unless `have` (bytes of the file read before) holds them. A month file is
    /// mostly smaller than that, so the read is the whole file and its pages need no second
    /// request: on object storage, where each request costs a round trip, a month read cold
    /// is one GET instead of four (the parquet crate's own reader reads the footer's length,
    /// the footer and the page index one after the other).
    pub(crate) async fn footer_with_tail(
        &self,
        store: &Store,
        cache: &FooterCache,
        have: Option<&Tail>,
    ) -> Result<(Arc<MonthFooter>, Option<Tail>)> {
        if let Some(footer) = cache.get(self.footer_slot()) {
            return Ok((footer, None));
        }
        let size = self.file.size;
        // A station-year file's footer is where the files table says; a month file's end
        // mostly holds all of the file.
        let mut want = match self.file.footer_start() {
            Some(footer) => size.saturating_sub(footer),
            None => TAIL_BYTES,
        }
        .min(size);
        let (metadata, tail) = loop {
            let start = size - want;
            let bytes = match have.and_then(|h| h.slice(&(start..size))) {
                Some(bytes) => bytes,
                None => self.read(store, start..size).await?,
            };
            // The offset index (where each page starts) serves page-by-page reads; the column
            // index (each page's minimum and maximum) nothing here: left out, a footer takes
            // 27 % less of the cache (6.6 KB instead of 9.0 for a month of two series) and
            // less time to parse. Parquet answers copy the column index from the file's bytes.
            let mut reader = ParquetMetaDataReader::new()
                .with_column_index_policy(PageIndexPolicy::Skip)
                .with_offset_index_policy(PageIndexPolicy::Optional);
            match reader.try_parse_sized(&bytes, size) {
                Ok(()) => break (reader.finish()?, Tail { start, bytes }),
                Err(ParquetError::NeedMoreData(needed)) if (needed as u64) > want => {
                    want = (needed as u64).min(size);
                }
                Err(e) => {
                    return Err(EngineError::corrupt_by(self.location().as_ref(), e));
                }
            }
        };
        // The schema as the planner knows it (dictionaries, the UTC zone), rather than parsing
        // the copy embedded in every file.
        let metadata = Arc::new(metadata);
        // A month with recorded gaps has `value` nullable (`layout::values_schema_with_gaps`).
        let gaps = metadata
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .any(|c| c.name() == COL_VALUE && c.max_def_level() > 0);
        let schema = match gaps {
            true => values_schema_with_gaps(),
            false => values_schema(),
        };
        let options = ArrowReaderOptions::new()
            .with_skip_arrow_metadata(true)
            .with_schema(schema);
        let reader = ArrowReaderMetadata::try_new(Arc::clone(&metadata), options)?;
        let footer = Arc::new(MonthFooter {
            metadata,
            reader,
            copy: None,
        });
        cache.put(
            self.footer_slot(),
            Arc::clone(&footer),
            footer.memory_size(),
        );
        Ok((footer, Some(tail)))
    }

    /// The file's footer split for copying: from the footer cache, else made from what
    /// follows the file's last page (the page index and the footer) and kept there; with the
    /// tail read for the footer, if it was read now. `have` as for
    /// [`MonthFile::footer_with_tail`].
    pub(crate) async fn copy_footer(
        &self,
        store: &Store,
        cache: &FooterCache,
        have: Option<&Tail>,
    ) -> Result<(Arc<FileFooter>, Option<Tail>)> {
        let (footer, tail) = self.footer_with_tail(store, cache, have).await?;
        if let Some(copy) = &footer.copy {
            return Ok((Arc::clone(copy), tail));
        }
        let end = footer
            .metadata
            .row_groups()
            .iter()
            .flat_map(|g| g.columns())
            .map(|c| {
                let (start, len) = c.byte_range();
                start + len
            })
            .max()
            .unwrap_or(0);
        let span = end..self.file.size;
        let bytes = match [tail.as_ref(), have]
            .into_iter()
            .flatten()
            .find_map(|t| t.slice(&span))
        {
            Some(b) => b,
            None => self.read(store, span).await?,
        };
        let copy = Arc::new(FileFooter::parse(&bytes, end)?);
        let with_copy = Arc::new(MonthFooter {
            metadata: Arc::clone(&footer.metadata),
            reader: footer.reader.clone(),
            copy: Some(Arc::clone(&copy)),
        });
        cache.put(
            self.footer_slot(),
            Arc::clone(&with_copy),
            with_copy.memory_size(),
        );
        Ok((copy, tail))
    }
}
