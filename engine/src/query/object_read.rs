//! Months of one object read from a bucket in one request.
//!
//! A station-year file holds a station-year's months one after the other (see
//! `write::compact`; so did the packs of layout 3), so the months an answer reads from it lie
//! close together in one object. Read one by one they would cost a GET each, and on object
//! storage it is the number of requests, not the bytes, that sets a download's pace (SeaweedFS
//! on loopback: 120 GETs of a 10-year series ~30 ms, the same bytes in 10 GETs ~6 ms,
//! `benches/s3.py`). So the months of an answer that lie in one object are read together: the
//! bytes each needs (before the file's footer is known, its pages and what follows them, the
//! footer among it) are asked for in one `get_ranges`, which merges ranges less than a MiB
//! apart into one GET (another parameter's row groups between them cost bytes, not a round
//! trip). The first month that needs its bytes starts the read; the others wait for it. A
//! local directory reads in place and does not do this.

use crate::dataset::month_file::Tail;
use crate::error::{EngineError, Result};
use bytes::Bytes;
use datafusion::object_store::ObjectStore;
use datafusion::object_store::path::Path;
use std::ops::Range;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// One read spans at most this many bytes of its object, from the first byte a month of
/// it needs to the last (what lies between is read too when ranges merge): months beyond
/// start another. A station-year of one 15-minute series is ~300 KB (one read), of a 1-minute
/// series ~4.5 MB (two). An answer reads 48 months ahead from a bucket
/// (`plan::PREFETCH_MONTHS_REMOTE`), so it holds at most five such reads at once: up to
/// 20 MiB for the densest series, a few hundred KB for most.
pub(crate) const OBJECT_READ_BYTES: u64 = 4 << 20;

/// What some months of one object need, read in one request when the first of them asks.
pub(crate) struct ObjectRead {
    store: Arc<dyn ObjectStore>,
    location: Path,
    /// For each month: where its file begins in the object (0 in a station-year file, whose
    /// months use its offsets), and the bytes of the file it needs.
    months: Vec<(u64, Range<u64>)>,
    read: OnceCell<Vec<Bytes>>,
}

impl ObjectRead {
    pub(crate) fn new(store: Arc<dyn ObjectStore>, location: Path) -> Self {
        Self {
            store,
            location,
            months: Vec::new(),
            read: OnceCell::new(),
        }
    }

    /// Adds a month whose file begins at `offset` in the object and which needs bytes `wanted`
    /// of it; its place in the read, or None when the read is full.
    pub(crate) fn add(&mut self, offset: u64, wanted: Range<u64>) -> Option<usize> {
        let in_object = |(offset, r): &(u64, Range<u64>)| r.start + offset..r.end + offset;
        let this = in_object(&(offset, wanted.clone()));
        let spanned = self
            .months
            .iter()
            .map(in_object)
            .fold(this.clone(), |s, r| s.start.min(r.start)..s.end.max(r.end));
        if !self.months.is_empty() && spanned.end - spanned.start > OBJECT_READ_BYTES {
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
                "{}: no read {i} of an object read",
                self.location
            )));
        };
        Ok(Tail {
            start: wanted.start,
            bytes: bytes.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::object_store::memory::InMemory;

    #[test]
    fn a_read_spans_a_bounded_part_of_the_object() {
        let mut read = ObjectRead::new(Arc::new(InMemory::new()), Path::from("p"));
        let mb = 1 << 20;
        assert_eq!(read.add(0, 0..mb), Some(0));
        assert_eq!(read.add(mb, 0..mb), Some(1));
        // The third month would stretch the read past OBJECT_READ_BYTES (a gap counts).
        assert_eq!(read.add(3 * mb, 10..mb + 10), None);
        assert_eq!(read.add(2 * mb, 0..mb), Some(2));
        assert_eq!(read.len(), 3);
        // A month larger than a read alone still gets one.
        let mut alone = ObjectRead::new(Arc::new(InMemory::new()), Path::from("p"));
        assert_eq!(alone.add(0, 0..10 * mb), Some(0));
    }

    #[tokio::test]
    async fn months_take_their_bytes_from_one_read() {
        let store = Arc::new(InMemory::new());
        let object = Path::from("p");
        datafusion::object_store::ObjectStoreExt::put(
            store.as_ref(),
            &object,
            Bytes::from_static(b"aaaabbbbcccc").into(),
        )
        .await
        .unwrap();
        let mut read = ObjectRead::new(store, object);
        // Second month from byte 4 of the object: its bytes 1..3; third from byte 8: all.
        read.add(4, 1..3).unwrap();
        read.add(8, 0..4).unwrap();
        let second = read.month(0).await.unwrap();
        assert_eq!((second.start, &second.bytes[..]), (1, &b"bb"[..]));
        let third = read.month(1).await.unwrap();
        assert_eq!((third.start, &third.bytes[..]), (0, &b"cccc"[..]));
        assert!(read.month(2).await.is_err());
    }
}
