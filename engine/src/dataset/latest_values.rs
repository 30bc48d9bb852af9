//! The newest value of each series as a version keeps it: given by its parameters table
//! (the publish found it), or once found in the values (filled and used by `query::latest`).
//! A version is immutable, so what is kept is never stale.

pub(crate) use crate::model::Latest;
use crate::model::Parameter;
use crate::model::ids::Series;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Newest values found so far, by series (None: a series without values).
#[derive(Default)]
pub(crate) struct LatestValues(Mutex<HashMap<Series, Option<Latest>>>);

impl LatestValues {
    /// The newest values the parameters table gives (found by the publish that wrote it).
    pub(crate) fn published(parameters: &[Parameter]) -> Self {
        let known = parameters
            .iter()
            .filter_map(|p| {
                let latest = p.latest.clone()?;
                Some(((p.station.clone(), p.id.clone()), Some(latest)))
            })
            .collect();
        Self(Mutex::new(known))
    }

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
