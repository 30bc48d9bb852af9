//! Requests made to an object store, counted by kind, for `/metrics` and for tests that check
//! how many round trips an answer costs (a one-month window after warm-up: one ranged GET).
//!
//! The count is made here, around the store, rather than inside the S3 client: what the
//! client does per call (one request per `get_opts`, ranges coalesced by the trait's own
//! `get_ranges` into one GET each) is then what is counted, whichever store it is.

use async_trait::async_trait;
use datafusion::object_store::path::Path;
use datafusion::object_store::{
    self, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The kinds of request counted, as `/metrics` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    Get,
    Head,
    Put,
    List,
    Delete,
    Copy,
}

impl RequestKind {
    pub const ALL: [RequestKind; 6] = [
        Self::Get,
        Self::Head,
        Self::Put,
        Self::List,
        Self::Delete,
        Self::Copy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::Head => "head",
            Self::Put => "put",
            Self::List => "list",
            Self::Delete => "delete",
            Self::Copy => "copy",
        }
    }
}

/// Requests made so far, by kind (shared by every store of a dataset and its later versions).
#[derive(Debug, Default)]
pub struct RequestCounts([AtomicU64; 6]);

impl RequestCounts {
    fn add(&self, kind: RequestKind) {
        self.0[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self, kind: RequestKind) -> u64 {
        self.0[kind as usize].load(Ordering::Relaxed)
    }
}

/// `inner`, with each request it is asked for counted in `counts`.
#[derive(Debug)]
pub(crate) struct Counted {
    inner: Arc<dyn ObjectStore>,
    counts: Arc<RequestCounts>,
}

impl Counted {
    pub(crate) fn new(inner: Arc<dyn ObjectStore>, counts: Arc<RequestCounts>) -> Self {
        Self { inner, counts }
    }
}

impl fmt::Display for Counted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

#[async_trait]
impl ObjectStore for Counted {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.counts.add(RequestKind::Put);
        self.inner.put_opts(location, payload, opts).await
    }

    /// Counted once: its parts are the upload's business.
    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.counts.add(RequestKind::Put);
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.counts.add(if options.head {
            RequestKind::Head
        } else {
            RequestKind::Get
        });
        self.inner.get_opts(location, options).await
    }

    // `get_ranges` is the trait's own: ranges coalesced, each read a `get_opts` above.

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        let counts = Arc::clone(&self.counts);
        let counted = locations
            .inspect(move |_| counts.add(RequestKind::Delete))
            .boxed();
        self.inner.delete_stream(counted)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.counts.add(RequestKind::List);
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.counts.add(RequestKind::List);
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.counts.add(RequestKind::List);
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.counts.add(RequestKind::Copy);
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        self.counts.add(RequestKind::Copy);
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::object_store::ObjectStoreExt;
    use datafusion::object_store::memory::InMemory;

    #[tokio::test]
    #[allow(clippy::single_range_in_vec_init)] // one range per read is the point
    async fn counts_requests_by_kind() {
        let counts = Arc::new(RequestCounts::default());
        let store = Counted::new(Arc::new(InMemory::new()), Arc::clone(&counts));
        let f = Path::from("f");
        store.put(&f, vec![0u8; 4 << 20].into()).await.unwrap();
        store.head(&f).await.unwrap();
        // Two ranges near each other are one GET, a third far away another.
        store
            .get_ranges(&f, &[0..10, 20..30, (3 << 20)..(3 << 20) + 5])
            .await
            .unwrap();
        store.get_ranges(&f, &[5..6]).await.unwrap();
        let _ = store.list(None).collect::<Vec<_>>().await;
        store.delete(&f).await.unwrap();
        let got: Vec<u64> = RequestKind::ALL.iter().map(|&k| counts.get(k)).collect();
        assert_eq!(got, vec![3, 1, 1, 1, 1, 0]);
    }
}
