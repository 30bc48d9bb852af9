//! A month file of the dataset: one station-month of values, as the manifest names it, with
//! what reading it again and again keeps at hand: its open handle (a local directory), its
//! bytes (the value cache) and its footer (the footer cache).

use crate::dataset::layout::values_schema;
use crate::dataset::manifest::ValueFile;
use crate::error::Result;
use crate::parquet::assembly::FileFooter;
use crate::storage::local::{LocalDir, OpenHandle};
use crate::storage::slot_cache::{Slot, SlotCache};
use crate::storage::value_cache::CachedRanges;
use bytes::Bytes;
use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectMeta, ObjectStore};
use datafusion::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use datafusion::parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};
use std::ops::Range;
use std::sync::{Arc, OnceLock};

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
/// file keeps its own slot. A month file's metadata is a few KB, so the default budget holds
/// the footers of tens of thousands of station-months.
pub type FooterCache = SlotCache<MonthFooter>;

/// A value file, with its location in the store (parsed once: `Path::from` percent-encodes
/// each part of the path, and a 10-year download reads 120 files) and the slots the caches
/// fill. An archive of 100 000 station-years has over a million of these, most never read
/// while the server runs, so location and slots are made when first needed rather than at
/// open (a path string and three shared slots: some 200 bytes a file, by their sizes).
pub(crate) struct MonthFile {
    pub(crate) file: ValueFile,
    location: OnceLock<Path>,
    /// The file's footer while the footer cache holds it.
    footer: OnceLock<Arc<Slot<MonthFooter>>>,
    /// The file's handle while it is open, in a local directory (see [`OpenHandle`]).
    handle: OnceLock<Arc<OpenHandle>>,
    /// The file's bytes while the value cache holds them (see `storage::value_cache`).
    cached: OnceLock<Arc<CachedRanges>>,
}

impl MonthFile {
    pub(crate) fn new(file: ValueFile) -> Self {
        Self {
            location: OnceLock::new(),
            footer: OnceLock::new(),
            handle: OnceLock::new(),
            cached: OnceLock::new(),
            file,
        }
    }

    /// A file at a location of its own (not where its station, month and generation say).
    #[cfg(test)]
    pub(crate) fn at(location: Path, file: ValueFile) -> Self {
        let month = Self::new(file);
        let _ = month.location.set(location);
        month
    }

    pub(crate) fn location(&self) -> &Path {
        self.location
            .get_or_init(|| Path::from(self.file.path().as_str()))
    }

    fn footer_slot(&self) -> &Arc<Slot<MonthFooter>> {
        self.footer.get_or_init(Arc::default)
    }

    fn handle(&self) -> &Arc<OpenHandle> {
        self.handle.get_or_init(Arc::default)
    }

    pub(crate) fn cached(&self) -> &Arc<CachedRanges> {
        self.cached.get_or_init(Arc::default)
    }

    /// The file as the object store knows it: its size is in the files table, so reading the
    /// footer needs no HEAD request.
    pub(crate) fn object_meta(&self) -> ObjectMeta {
        ObjectMeta {
            location: self.location().clone(),
            last_modified: chrono::DateTime::UNIX_EPOCH,
            size: self.file.size,
            e_tag: None,
            version: None,
        }
    }

    /// Bytes `span` of the file: through the handle it keeps when the store is a local
    /// directory (`local`), else in a ranged read of the store (`get_ranges`, which a local
    /// store serves in place, see `storage::local`).
    pub(crate) async fn read(
        &self,
        store: &dyn ObjectStore,
        local: Option<&LocalDir>,
        span: Range<u64>,
    ) -> Result<Bytes> {
        if let Some(dir) = local {
            return Ok(dir.read_through_handle(self.handle(), self.location(), &span)?);
        }
        let read = store
            .get_ranges(self.location(), std::slice::from_ref(&span))
            .await?;
        Ok(read.into_iter().next().unwrap_or_default())
    }

    /// The file's footer, page index and the Arrow reader's view of them: from the footer
    /// cache, else read (one ranged read of the file's end) and kept there.
    pub(crate) async fn footer(
        &self,
        store: &dyn ObjectStore,
        cache: &FooterCache,
    ) -> Result<Arc<MonthFooter>> {
        if let Some(footer) = cache.get(self.footer_slot()) {
            return Ok(footer);
        }
        let metadata = DFParquetMetadata::new(store, &self.object_meta())
            .with_page_index_policy(Some(PageIndexPolicy::Optional))
            .fetch_metadata()
            .await?;
        // The schema as the planner knows it (dictionaries, the UTC zone), rather than parsing
        // the copy embedded in every file.
        let options = ArrowReaderOptions::new()
            .with_skip_arrow_metadata(true)
            .with_schema(values_schema());
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
        Ok(footer)
    }

    /// The file's footer split for copying: from the footer cache, else made from one read of
    /// what follows the file's last page (the page index and the footer) and kept there.
    pub(crate) async fn copy_footer(
        &self,
        store: &dyn ObjectStore,
        local: Option<&LocalDir>,
        cache: &FooterCache,
    ) -> Result<Arc<FileFooter>> {
        let footer = self.footer(store, cache).await?;
        if let Some(copy) = &footer.copy {
            return Ok(Arc::clone(copy));
        }
        let tail = footer
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
        let bytes = self.read(store, local, tail..self.file.size).await?;
        let copy = Arc::new(FileFooter::parse(&bytes, tail)?);
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
        Ok(copy)
    }
}
