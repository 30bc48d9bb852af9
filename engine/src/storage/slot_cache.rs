//! Values kept in memory within a byte budget, each in a slot that its owner keeps (a month
//! file keeps the slot of its footer), the values held longest leaving first.
//!
//! A slot is found through its owner, never by a key: a 10-year answer reads 120 month files,
//! and hashing their paths for a shared map's look-up was several percent of a made download's
//! CPU time (`perf`). The cache itself only counts bytes and remembers the order in which slots
//! were filled, so that it can empty the oldest when the budget is exceeded.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Where one value of a [`SlotCache`] is kept while the cache holds it.
#[derive(Debug)]
pub(crate) struct Slot<T>(Mutex<Option<(Arc<T>, usize)>>);

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Self(Mutex::new(None))
    }
}

impl<T> Slot<T> {
    fn value(&self) -> MutexGuard<'_, Option<(Arc<T>, usize)>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The filled slots, the longest filled first, and the bytes their values hold.
struct Filled<T> {
    bytes: usize,
    slots: VecDeque<Arc<Slot<T>>>,
}

/// Where a value put in a slot goes in the order in which values leave.
#[derive(Clone, Copy)]
enum Leaves {
    Last,
    First,
}

/// A budget of bytes over values in slots; see the module doc.
pub(crate) struct SlotCache<T> {
    budget: usize,
    filled: Mutex<Filled<T>>,
}

impl<T> SlotCache<T> {
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            budget,
            filled: Mutex::new(Filled {
                bytes: 0,
                slots: VecDeque::new(),
            }),
        }
    }

    fn filled(&self) -> MutexGuard<'_, Filled<T>> {
        self.filled.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value in `slot`, while the cache holds it.
    pub(crate) fn get(&self, slot: &Slot<T>) -> Option<Arc<T>> {
        slot.value().as_ref().map(|(v, _)| Arc::clone(v))
    }

    /// Keeps `value` (`size` bytes) in `slot`, in place of what it held; then the values held
    /// longest leave until the budget holds. A value larger than the whole budget is not kept.
    pub(crate) fn put(&self, slot: &Arc<Slot<T>>, value: Arc<T>, size: usize) {
        self.keep(slot, value, size, Leaves::Last);
    }

    /// Keeps `value` like [`Self::put`], but as the first to leave, so that it is kept only
    /// while the budget has room: for values that a pass over every key reads once (finding
    /// the newest values the parameters table does not give), which would otherwise push out
    /// the values that requests read again.
    pub(crate) fn put_first_out(&self, slot: &Arc<Slot<T>>, value: Arc<T>, size: usize) {
        self.keep(slot, value, size, Leaves::First);
    }

    fn keep(&self, slot: &Arc<Slot<T>>, value: Arc<T>, size: usize, leaves: Leaves) {
        if size > self.budget {
            return;
        }
        let mut filled = self.filled();
        let replaced = slot.value().replace((value, size));
        match (replaced, leaves) {
            (Some((_, old)), _) => filled.bytes -= old,
            (None, Leaves::Last) => filled.slots.push_back(Arc::clone(slot)),
            (None, Leaves::First) => filled.slots.push_front(Arc::clone(slot)),
        }
        filled.bytes += size;
        while filled.bytes > self.budget {
            let Some(oldest) = filled.slots.pop_front() else {
                break;
            };
            if let Some((_, size)) = oldest.value().take() {
                filled.bytes -= size;
            }
        }
    }

    /// Bytes held now.
    pub(crate) fn bytes(&self) -> usize {
        self.filled().bytes
    }

    pub(crate) fn budget(&self) -> usize {
        self.budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_stay_within_the_budget_oldest_out_first() {
        let cache = SlotCache::<u32>::new(100);
        let slots: Vec<Arc<Slot<u32>>> = (0..4).map(|_| Arc::default()).collect();
        cache.put(&slots[0], Arc::new(0), 40);
        cache.put(&slots[1], Arc::new(1), 40);
        assert_eq!(cache.bytes(), 80);
        cache.put(&slots[2], Arc::new(2), 40);
        assert_eq!(cache.get(&slots[0]), None, "the oldest left");
        assert_eq!(cache.get(&slots[2]).as_deref(), Some(&2));
        assert_eq!(cache.bytes(), 80);
        // A value replaced in its slot counts once, with its new size.
        cache.put(&slots[1], Arc::new(11), 50);
        assert_eq!(cache.bytes(), 90);
        assert_eq!(cache.get(&slots[1]).as_deref(), Some(&11));
        // Larger than the budget: not kept, nothing else leaves for it.
        cache.put(&slots[3], Arc::new(3), 101);
        assert_eq!(cache.get(&slots[3]), None);
        assert_eq!(cache.bytes(), 90);
        // A slot emptied by the budget is filled again as a new one.
        cache.put(&slots[0], Arc::new(0), 30);
        assert!(cache.bytes() <= 100);
        assert_eq!(cache.get(&slots[0]).as_deref(), Some(&0));
    }

    #[test]
    fn values_put_first_out_leave_before_the_others() {
        let cache = SlotCache::<u32>::new(100);
        let slots: Vec<Arc<Slot<u32>>> = (0..4).map(|_| Arc::default()).collect();
        cache.put(&slots[0], Arc::new(0), 40);
        cache.put_first_out(&slots[1], Arc::new(1), 40);
        assert_eq!(
            cache.get(&slots[1]).as_deref(),
            Some(&1),
            "kept while there is room"
        );
        cache.put(&slots[2], Arc::new(2), 40);
        assert_eq!(cache.get(&slots[1]), None, "left first, though put after 0");
        assert_eq!(cache.get(&slots[0]).as_deref(), Some(&0));
        // With the budget full, it leaves at once and nothing else does.
        cache.put_first_out(&slots[3], Arc::new(3), 40);
        assert_eq!(cache.get(&slots[3]), None);
        assert_eq!(cache.get(&slots[0]).as_deref(), Some(&0));
        assert_eq!(cache.get(&slots[2]).as_deref(), Some(&2));
        assert_eq!(cache.bytes(), 80);
    }
}
