//! The store as DataFusion's scans see it: a month file that lies in a pack is an object of
//! its own, named after the pack, where the file begins in it and its size
//! (`<pack>@<offset>-<size>`, see [`month_in_pack`]).
//!
//! DataFusion reads a Parquet file as an object (its footer from the object's end), and a
//! month file in a pack is a whole Parquet file at an offset in a larger object. Rather than a
//! reader of our own for its scans (answers sorted by value or quality), its store is this
//! view: reads of such a name are reads of the pack, shifted; every other name is the store's
//! own. The view only reads: scans never write, list or delete.

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::object_store::path::Path;
use datafusion::object_store::{
    self, CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult,
    MultipartUpload, ObjectMeta, ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions,
    PutPayload, PutResult, RenameOptions,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// The name under which [`PackView`] shows the month file of `size` bytes at `offset` of the
/// pack `pack`.
pub(crate) fn month_in_pack(pack: &str, offset: u64, size: u64) -> String {
    format!("{pack}@{offset}-{size}")
}

/// A month in a pack as [`month_in_pack`] names it.
struct MonthInPack {
    pack: Path,
    offset: u64,
    size: u64,
}

impl MonthInPack {
    fn parse(location: &Path) -> Option<Self> {
        let (pack, at) = location.as_ref().rsplit_once('@')?;
        let (offset, size) = at.split_once('-')?;
        Some(Self {
            pack: Path::from(pack),
            offset: offset.parse().ok()?,
            size: size.parse().ok()?,
        })
    }

    /// Bytes `range` of the month (clamped to it) as bytes of the pack.
    fn in_pack(&self, range: &Range<u64>) -> Range<u64> {
        let end = range.end.min(self.size);
        self.offset + range.start.min(end)..self.offset + end
    }

    /// What a GET of the month asks for, as a range of the month.
    fn asked(&self, range: Option<&GetRange>) -> Range<u64> {
        match range {
            None => 0..self.size,
            Some(GetRange::Bounded(r)) => r.start..r.end.min(self.size),
            Some(GetRange::Offset(o)) => *o..self.size,
            Some(GetRange::Suffix(n)) => self.size.saturating_sub(*n)..self.size,
        }
    }
}

/// `inner`, with the months of packs as objects of their own (see the module doc).
#[derive(Debug)]
pub(crate) struct PackView {
    inner: Arc<dyn ObjectStore>,
}

impl PackView {
    pub(crate) fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self { inner }
    }
}

impl fmt::Display for PackView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PackView({})", self.inner)
    }
}

fn read_only() -> object_store::Error {
    object_store::Error::NotSupported {
        source: "the pack view of a dataset only reads".into(),
    }
}

#[async_trait]
impl ObjectStore for PackView {
    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let Some(month) = MonthInPack::parse(location) else {
            return self.inner.get_opts(location, options).await;
        };
        let asked = month.asked(options.range.as_ref());
        let bytes = if options.head {
            Bytes::new()
        } else {
            self.inner
                .get_range(&month.pack, month.in_pack(&asked))
                .await?
        };
        let meta = ObjectMeta {
            location: location.clone(),
            // Packs are never rewritten; their time is not worth a request.
            last_modified: chrono::DateTime::UNIX_EPOCH,
            size: month.size,
            e_tag: None,
            version: None,
        };
        Ok(GetResult {
            payload: GetResultPayload::Stream(futures::stream::once(async { Ok(bytes) }).boxed()),
            meta,
            range: asked,
            attributes: Default::default(),
        })
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        let Some(month) = MonthInPack::parse(location) else {
            return self.inner.get_ranges(location, ranges).await;
        };
        let in_pack: Vec<Range<u64>> = ranges.iter().map(|r| month.in_pack(r)).collect();
        self.inner.get_ranges(&month.pack, &in_pack).await
    }

    async fn put_opts(
        &self,
        _: &Path,
        _: PutPayload,
        _: PutOptions,
    ) -> object_store::Result<PutResult> {
        Err(read_only())
    }

    async fn put_multipart_opts(
        &self,
        _: &Path,
        _: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(read_only())
    }

    fn delete_stream(
        &self,
        _: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        futures::stream::once(async { Err(read_only()) }).boxed()
    }

    fn list(&self, _: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        futures::stream::once(async { Err(read_only()) }).boxed()
    }

    async fn list_with_delimiter(&self, _: Option<&Path>) -> object_store::Result<ListResult> {
        Err(read_only())
    }

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> object_store::Result<()> {
        Err(read_only())
    }

    async fn rename_opts(&self, _: &Path, _: &Path, _: RenameOptions) -> object_store::Result<()> {
        Err(read_only())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::object_store::memory::InMemory;

    #[tokio::test]
    async fn a_month_in_a_pack_reads_as_an_object_of_its_own() {
        let inner = Arc::new(InMemory::new());
        let pack = Path::from("values/station=s/year=2024/months-3.pack");
        inner
            .put(&pack, Bytes::from_static(b"aaaaBBBBBBcc").into())
            .await
            .unwrap();
        let view = PackView::new(inner);
        let month = Path::from(month_in_pack(pack.as_ref(), 4, 6));
        assert_eq!(
            view.get(&month).await.unwrap().bytes().await.unwrap(),
            "BBBBBB"
        );
        assert_eq!(view.get_range(&month, 1..3).await.unwrap(), "BB");
        // Reads past the month's end stop at it.
        assert_eq!(view.get_range(&month, 4..100).await.unwrap(), "BB");
        let suffix = GetOptions::default().with_range(Some(GetRange::Suffix(2)));
        let got = view.get_opts(&month, suffix).await.unwrap();
        assert_eq!((got.range.clone(), got.meta.size), (4..6, 6));
        assert_eq!(got.bytes().await.unwrap(), "BB");
        assert_eq!(view.head(&month).await.unwrap().size, 6);
        let ranges = view.get_ranges(&month, &[0..1, 5..6]).await.unwrap();
        assert_eq!(ranges, vec![Bytes::from("B"), Bytes::from("B")]);
        // Other names are the store's own; writes are refused.
        assert_eq!(view.get(&pack).await.unwrap().meta.size, 12);
        assert!(view.put(&month, Bytes::new().into()).await.is_err());
    }
}
