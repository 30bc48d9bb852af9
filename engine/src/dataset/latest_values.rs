//! The newest value of each series as a version keeps it once found (filled and used by
//! `query::latest`): a version is immutable, so what is kept is never stale.

use crate::model::ids::Series;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// A series' newest value.
#[derive(Debug, Clone, PartialEq)]
pub struct Latest {
    /// Microseconds since the epoch, UTC.
    pub timestamp: i64,
    pub value: Option<f64>,
    pub quality: Arc<str>,
}

/// Newest values found so far, by series (None: a series without values).
#[derive(Default)]
pub(crate) struct LatestValues(Mutex<HashMap<Series, Option<Latest>>>);

impl LatestValues {
    pub(crate) fn get(&self, s: &Series) -> Option<Option<Latest>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(s)
            .cloned()
    }

    pub(crate) fn snapshot(&self) -> Vec<(Series, Option<Latest>)> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(s, l)| (s.clone(), l.clone()))
            .collect()
    }

    /// Series whose newest value is known (None included).
    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    pub(crate) fn put(&self, s: Series, latest: Option<Latest>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(s, latest);
    }
}
