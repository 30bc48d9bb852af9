//! Bytes of month files kept in memory, within a budget, so that answers made again from
//! months read before take them from here rather than from the kernel.
//!
//! A made 10-year answer reads 120 month files of ~13 KB each. From the page cache each read is a
//! system call, a look-up of the file's pages and a copy, and the reads with their tasks were about
//! a third of a made Parquet answer's CPU time (the history of `benches/RESULTS.md`). `mmap` would
//! make them memory reads, but the workspace forbids `unsafe` (and a file truncated under a map is
//! a `SIGBUS`). Held here, a month's bytes are handed out as slices of one buffer, with no copy.
//! The price is memory: a second copy of the hottest part of the page cache, bounded by the budget;
//! the files held longest leave first. The bytes are the files' as stored, so nothing an answer is
//! made of changes: it is still planned, assembled or decoded, and encoded anew.

use bytes::Bytes;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Bytes held of one file: ranges read from it, each with the offset it starts at. A month
/// file's own (`dataset::MonthFile`), so that finding them is no look-up by path.
#[derive(Debug, Default)]
pub(crate) struct CachedRanges(Mutex<Vec<(u64, Bytes)>>);

impl CachedRanges {
    fn ranges(&self) -> MutexGuard<'_, Vec<(u64, Bytes)>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Files whose bytes are held, the longest held first, and how many bytes they hold.
#[derive(Default)]
struct Residents {
    bytes: usize,
    slots: VecDeque<Arc<CachedRanges>>,
}

pub(crate) struct ValueCache {
    budget: usize,
    held: Mutex<Residents>,
}

/// The part of `bytes` (read from offset `start`) that is `span`, when it holds all of it.
fn within(start: u64, bytes: &Bytes, span: &Range<u64>) -> Option<Bytes> {
    let from = span.start.checked_sub(start)?;
    let to = span.end.checked_sub(start)?;
    let (from, to) = (usize::try_from(from).ok()?, usize::try_from(to).ok()?);
    (from <= to && to <= bytes.len()).then(|| bytes.slice(from..to))
}

impl ValueCache {
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            budget,
            held: Mutex::default(),
        }
    }

    fn held(&self) -> MutexGuard<'_, Residents> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes `span` (offsets in the file) of the file of `slot`, if they are held.
    pub(crate) fn get(&self, slot: &CachedRanges, span: &Range<u64>) -> Option<Bytes> {
        let ranges = slot.ranges();
        ranges.iter().find_map(|(start, b)| within(*start, b, span))
    }

    /// Holds `bytes`, read from offset `start` of the file of `slot`, making room by letting
    /// the files held longest go; nothing when they are larger than the whole budget.
    pub(crate) fn put(&self, slot: &Arc<CachedRanges>, start: u64, bytes: Bytes) {
        let n = bytes.len();
        if n == 0 || n > self.budget {
            return;
        }
        // Always the budget's lock before a slot's: `get` takes a slot's alone.
        let mut held = self.held();
        while held.bytes + n > self.budget {
            let Some(oldest) = held.slots.pop_front() else {
                break;
            };
            let freed: usize = oldest.ranges().drain(..).map(|(_, b)| b.len()).sum();
            held.bytes -= freed;
        }
        let mut ranges = slot.ranges();
        let end = start + n as u64;
        if ranges
            .iter()
            .any(|(s, b)| within(*s, b, &(start..end)).is_some())
        {
            // Read meanwhile by another answer.
            return;
        }
        if ranges.is_empty() {
            held.slots.push_back(Arc::clone(slot));
        }
        ranges.push((start, bytes));
        held.bytes += n;
    }

    /// Bytes held now.
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    pub(crate) fn bytes(&self) -> usize {
        self.held().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize, seed: u8) -> Bytes {
        Bytes::from(
            (0..n)
                .map(|i| (i as u8).wrapping_add(seed))
                .collect::<Vec<_>>(),
        )
    }

    /// A range is found within any range held of its file, as a slice of it; ranges of other
    /// files or beyond what was read are not.
    #[test]
    fn held_ranges_are_found_within() {
        let cache = ValueCache::new(1 << 20);
        let (a, b) = (
            Arc::new(CachedRanges::default()),
            Arc::new(CachedRanges::default()),
        );
        let read = bytes(1000, 7);
        cache.put(&a, 4000, read.clone());
        assert_eq!(cache.get(&a, &(4000..5000)).unwrap(), read);
        let part = cache.get(&a, &(4100..4200)).unwrap();
        assert_eq!(part, read.slice(100..200));
        assert_eq!(
            part.as_ptr(),
            read.slice(100..).as_ptr(),
            "a slice, not a copy"
        );
        assert!(cache.get(&a, &(3999..4100)).is_none());
        assert!(cache.get(&a, &(4900..5001)).is_none());
        assert!(cache.get(&b, &(4000..4100)).is_none());
        // A second range of the same file, and one already held: counted once.
        cache.put(&a, 9000, bytes(500, 1));
        cache.put(&a, 4100, read.slice(100..300));
        assert_eq!(cache.bytes(), 1500);
        assert!(cache.get(&a, &(9100..9200)).is_some());
    }

    /// The budget holds: the files held longest leave first, all of a file's ranges with it,
    /// and what is larger than the whole budget is not held at all.
    #[test]
    fn the_budget_holds() {
        let cache = ValueCache::new(2500);
        let slots: Vec<Arc<CachedRanges>> = (0..4).map(|_| Arc::default()).collect();
        cache.put(&slots[0], 0, bytes(600, 0));
        cache.put(&slots[0], 1000, bytes(400, 0));
        cache.put(&slots[1], 0, bytes(1000, 0));
        assert_eq!(cache.bytes(), 2000);
        cache.put(&slots[2], 0, bytes(1000, 0));
        assert_eq!(cache.bytes(), 2000, "the first file left, both its ranges");
        assert!(cache.get(&slots[0], &(0..10)).is_none());
        assert!(cache.get(&slots[0], &(1000..1010)).is_none());
        assert!(cache.get(&slots[1], &(0..10)).is_some());
        cache.put(&slots[3], 0, bytes(2501, 0));
        assert!(cache.get(&slots[3], &(0..10)).is_none());
        assert_eq!(cache.bytes(), 2000);
        // A file that left is held again when read again.
        cache.put(&slots[0], 0, bytes(600, 0));
        assert!(cache.get(&slots[0], &(0..600)).is_some());
        assert!(cache.bytes() <= 2500);
    }
}
