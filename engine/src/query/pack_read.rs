//! Months of one pack read from a bucket in one request.
//!
//! A pack holds a station-year's month files back to back (see `write::compact`), so the
//! months an answer reads from it lie close together in one object. Read one by one they would
//! cost a GET each, and on object storage it is the number of requests, not the bytes, that
//! sets a download's pace (SeaweedFS on loopback: 120 GETs of a 10-year series ~30 ms, the same
//! bytes in 10 GETs ~6 ms, `benches/s3.py`). So the months of an answer that lie in one pack
//! are read together: the bytes each needs are asked for in one `get_ranges`, which merges
//! ranges less than a MiB apart into one GET (another parameter's row groups between them cost
//! bytes, not a round trip). The first month that needs its bytes starts the read; the others
//! wait for it. A local directory reads in place and does not do this.

use crate::dataset::month_file::Tail;
use crate::error::{EngineError, Result};
use bytes::Bytes;
use datafusion::object_store::ObjectStore;
use datafusion::object_store::path::Path;
use std::ops::Range;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// At most this many bytes are read for one pack read: months beyond start another, so that
/// an answer holds a bounded amount of what it read ahead (a station-year of one 15-minute
/// series is ~300 KB; its month files whole, read cold, a few MB).
pub(crate) const PACK_READ_BYTES: u64 = 8 << 20;

/// What some months of one pack need, read in one request when the first of them asks.
pub(crate) struct PackRead {
    store: Arc<dyn ObjectStore>,
    location: Path,
    /// For each month: where its file begins in the pack, and the bytes of the file it needs.
    months: Vec<(u64, Range<u64>)>,
    read: OnceCell<Vec<Bytes>>,
}

impl PackRead {
    pub(crate) fn new(store: Arc<dyn ObjectStore>, location: Path) -> Self {
        Self {
            store,
            location,
            months: Vec::new(),
            read: OnceCell::new(),
        }
    }

    /// Adds a month whose file begins at `offset` in the pack and which needs bytes `wanted`
    /// of it; its place in the read, or None when the read is full.
    pub(crate) fn add(&mut self, offset: u64, wanted: Range<u64>) -> Option<usize> {
        let bytes = |r: &Range<u64>| r.end - r.start;
        let taken: u64 = self.months.iter().map(|(_, r)| bytes(r)).sum();
        if !self.months.is_empty() && taken + bytes(&wanted) > PACK_READ_BYTES {
            return None;
        }
        self.months.push((offset, wanted));
        Some(self.months.len() - 1)
    }

    pub(crate) fn location(&self) -> &Path {
        &self.location
    }

    pub(crate) fn len(&self) -> usize {
        self.months.len()
    }

    /// What month `i` needs, as bytes of its file; the read is made by the first to ask.
    pub(crate) async fn month(&self, i: usize) -> Result<Tail> {
        let read = self
            .read
            .get_or_try_init(|| async {
                let ranges: Vec<Range<u64>> = self
                    .months
                    .iter()
                    .map(|(offset, r)| r.start + offset..r.end + offset)
                    .collect();
                Ok::<_, EngineError>(self.store.get_ranges(&self.location, &ranges).await?)
            })
            .await?;
        let (Some(bytes), Some((_, wanted))) = (read.get(i), self.months.get(i)) else {
            return Err(EngineError::Internal(format!(
                "{}: no read {i} of a pack read",
                self.location
            )));
        };
        Ok(Tail {
            start: wanted.start,
            bytes: bytes.clone(),
        })
    }
}
