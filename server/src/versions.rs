//! The versions of the dataset: the one a request answers from ([`Version`]), and those
//! besides the one served now ([`Versions`]), which `asOf` answers from and `/v1/versions`
//! lists.
//!
//! Every publish leaves its manifest in the store as the version's record, and vacuum removes
//! a version's record with its files (the engine's `dataset::versions`), so the records are
//! the versions that can still be opened. Records never change: each is read once and kept
//! (a few hundred bytes). Opening a version loads its catalog and files table as a start does;
//! the few used last stay open (`Versions::open_budget`, LRU), within a memory budget
//! reported in `/metrics`.
//!
//! Generations are numbered from 1 without gaps, so a generation below the current one whose
//! record is gone was removed by vacuum (410), and one above it is a publish this server has
//! not switched to yet: answered from the store when it is there, 503 while it is under way,
//! 404 when it never was.

use crate::http::conditional::format_http_date;
use crate::http::error::ApiError;
use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use hydro_engine::EngineError;
use hydro_engine::Manifest;
use hydro_engine::Micros;
use hydro_engine::SqlTables;
use hydro_engine::Store;
use hydro_engine::{Dataset, published_generation};
use hydro_engine::{read_version, read_versions, recorded_generations};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How long a listing of the store's records is used before it is listed again.
const LISTING_FRESH: Duration = Duration::from_secs(5);

/// The published version being served: the dataset and the `Last-Modified` of its answers.
/// A request takes the current one when it begins and keeps it to its end, so a download that
/// began before a switch ends with the old version's bytes.
pub struct Version {
    pub dataset: Arc<Dataset>,
    /// `Last-Modified` of every data response: when the dataset was published.
    pub last_modified: String,
    /// The same instant, for `If-Modified-Since`.
    pub modified: Option<chrono::DateTime<chrono::Utc>>,
    /// Whether the request named this version (`asOf`), so that its answers never change and
    /// caches may keep them for good.
    pub pinned: bool,
    /// Its SQL tables once a query asked for them (shared with its pinned copies).
    sql: Arc<OnceLock<Arc<SqlTables>>>,
}

impl Version {
    /// The version of `dataset` (which has taken over what the version before it read, if it
    /// follows one: `Dataset::follow`); the newest values (for `/v1/latest`) that neither its
    /// parameters table nor that version gave are found in the background when a runtime
    /// runs.
    pub fn of(dataset: Dataset) -> Self {
        let modified = chrono::DateTime::parse_from_rfc3339(&dataset.manifest.created)
            .ok()
            .map(|t| t.with_timezone(&chrono::Utc));
        let dataset = Arc::new(dataset);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(Arc::clone(&dataset).warm_latest());
        }
        Self {
            last_modified: modified.map(format_http_date).unwrap_or_default(),
            modified,
            dataset,
            pinned: false,
            sql: Arc::default(),
        }
    }

    /// `Link: <…/versions/ID>; rel="version"`: how every answer names the version it was
    /// read from.
    pub fn link(&self, base_url: &str) -> Option<http::HeaderValue> {
        let id = &self.dataset.manifest.version;
        http::HeaderValue::from_str(&format!("<{base_url}/versions/{id}>; rel=\"version\"")).ok()
    }

    /// The version's SQL tables, made when first asked for.
    pub fn sql_tables(&self) -> Result<Arc<SqlTables>, EngineError> {
        if let Some(tables) = self.sql.get() {
            return Ok(Arc::clone(tables));
        }
        let made = Arc::new(SqlTables::of(&self.dataset)?);
        Ok(Arc::clone(self.sql.get_or_init(|| made)))
    }

    /// The same version, as a request that named it (`asOf`) answers from it.
    pub fn pinned(&self) -> Arc<Self> {
        Arc::new(Self {
            dataset: Arc::clone(&self.dataset),
            last_modified: self.last_modified.clone(),
            modified: self.modified,
            pinned: true,
            sql: Arc::clone(&self.sql),
        })
    }
}

/// What `asOf` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AsOf {
    /// A version id as answers name it (`3-20261126T120803.656Z`).
    Id { generation: u64, id: String },
    /// A generation number.
    Generation(u64),
    /// The version current at an instant.
    Time(Micros),
}

impl AsOf {
    pub fn parse(v: &str) -> Result<Self, ApiError> {
        if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
            return v.parse().map(Self::Generation).map_err(|_| bad_as_of(v));
        }
        // An id by its shape (`<generation>-<yyyymmdd>T<hhmmss>.<mmm>Z`): one that names no
        // version is a 404, as any other the store never held.
        if let Some((g, stamp)) = v.split_once('-')
            && !g.is_empty()
            && g.bytes().all(|b| b.is_ascii_digit())
            && id_stamp_shape(stamp)
        {
            let generation = g.parse().map_err(|_| bad_as_of(v))?;
            return Ok(Self::Id {
                generation,
                id: v.to_owned(),
            });
        }
        hydro_engine::parse_instant(&v.replace(' ', "+"))
            .map(|(t, _)| Self::Time(t))
            .ok_or_else(|| bad_as_of(v))
    }

    /// Whether answers for it never change, `current` being the version served now: a
    /// version named, or an instant before `current` was published (the versions before it
    /// are all known). From then on, the version current at an instant is this one only until
    /// a later publish is seen, which may be earlier than the instant.
    pub fn pins(&self, current: &Manifest) -> bool {
        match self {
            Self::Time(t) => published(current).is_some_and(|p| *t < p.timestamp_micros()),
            _ => true,
        }
    }
}

/// Whether `stamp` has the shape of a version id's time: `20261126T120803.656Z`.
fn id_stamp_shape(stamp: &str) -> bool {
    let b = stamp.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    b.len() == 20
        && digits(0..8)
        && b[8] == b'T'
        && digits(9..15)
        && b[15] == b'.'
        && digits(16..19)
        && b[19] == b'Z'
}

fn bad_as_of(v: &str) -> ApiError {
    ApiError::param(
        "asOf",
        format!(
            "'{}' is not a version; give a version id (as /v1/versions lists them, e.g. \
             3-20261126T120803.656Z), a generation number (3) or a time with an offset \
             (2026-11-26T12:00:00Z)",
            crate::http::error::shorten(v)
        ),
    )
}

/// The instant in a version id's stamp (`20261126T120803.656Z`).
fn published_at(stamp: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%S%.3fZ")
        .ok()
        .map(|t| t.and_utc())
}

/// When a version was published: the instant of its id (milliseconds), else its `created`.
pub fn published(m: &Manifest) -> Option<DateTime<Utc>> {
    m.version
        .split_once('-')
        .and_then(|(_, stamp)| published_at(stamp))
        .or_else(|| {
            DateTime::parse_from_rfc3339(&m.created)
                .ok()
                .map(|t| t.with_timezone(&Utc))
        })
}

/// [`published`] as answers write it.
pub fn published_text(m: &Manifest) -> Option<String> {
    published(m).map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// What an `asOf` names.
enum Found {
    /// The version served now.
    Current,
    /// Another one, by its record.
    Record(Arc<Manifest>),
}

/// The records of the store and the versions kept open.
pub struct Versions {
    /// Records read so far, by generation.
    records: Mutex<BTreeMap<u64, Arc<Manifest>>>,
    /// The generations recorded in the store when last listed, and when.
    listing: Mutex<Option<(Instant, Vec<u64>)>>,
    /// Versions opened for `asOf`, the one used last at the end.
    open: Mutex<Vec<Arc<Version>>>,
    /// Versions kept open at most.
    open_budget: usize,
    /// One version opened at a time: requests for the same one wait and share it.
    opening: tokio::sync::Mutex<()>,
}

impl Versions {
    pub fn new(open_budget: usize) -> Self {
        Self {
            records: Mutex::default(),
            listing: Mutex::default(),
            open: Mutex::default(),
            open_budget,
            opening: tokio::sync::Mutex::new(()),
        }
    }

    /// The versions kept open, and the memory their catalogs and files tables hold beside
    /// `served` (what they hold once with it is its; what they read is in its caches:
    /// `Dataset::share_caches`).
    pub fn open_memory(&self, served: &Dataset) -> (usize, usize) {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes = open
            .iter()
            .map(|v| v.dataset.memory_apart_from(served))
            .sum();
        (open.len(), bytes)
    }

    /// The generations whose records the store holds, up to `current` (a record above it is
    /// of a publish under way), ascending.
    pub async fn generations(&self, store: &Store, current: u64) -> Result<Vec<u64>, ApiError> {
        let cached = {
            let listing = self.listing.lock().unwrap_or_else(PoisonError::into_inner);
            listing
                .as_ref()
                .filter(|(at, g)| at.elapsed() < LISTING_FRESH && g.last() >= Some(&current))
                .map(|(_, g)| g.clone())
        };
        let all = match cached {
            Some(g) => g,
            None => {
                let g = recorded_generations(store.object_store().as_ref())
                    .await
                    .map_err(ApiError::Engine)?;
                // Records of versions no longer listed (vacuum removed them) are let go.
                self.records
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .retain(|k, _| g.binary_search(k).is_ok());
                *self.listing.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some((Instant::now(), g.clone()));
                g
            }
        };
        Ok(all.into_iter().filter(|&g| g <= current).collect())
    }

    /// The records of `generations` (in their order), read once each; those gone are left out.
    pub async fn records(
        &self,
        store: &Store,
        generations: &[u64],
    ) -> Result<Vec<Arc<Manifest>>, ApiError> {
        let missing: Vec<u64> = {
            let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
            generations
                .iter()
                .copied()
                .filter(|g| !records.contains_key(g))
                .collect()
        };
        if !missing.is_empty() {
            let read = read_versions(store.object_store(), missing)
                .await
                .map_err(ApiError::Engine)?;
            let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
            for m in read {
                records.insert(m.generation, Arc::new(m));
            }
        }
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(generations
            .iter()
            .filter_map(|g| records.get(g).cloned())
            .collect())
    }

    /// The record of `generation`, or None when the store has none.
    async fn record(
        &self,
        store: &Store,
        generation: u64,
    ) -> Result<Option<Arc<Manifest>>, ApiError> {
        if let Some(m) = self
            .records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&generation)
        {
            return Ok(Some(Arc::clone(m)));
        }
        let read = read_version(store.object_store().as_ref(), generation)
            .await
            .map_err(ApiError::Engine)?;
        Ok(read.map(|m| {
            let m = Arc::new(m);
            self.records
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(generation, Arc::clone(&m));
            m
        }))
    }

    /// The version `as_of` names, as a request answers from it.
    pub async fn resolve(
        &self,
        current: &Arc<Version>,
        as_of: &AsOf,
    ) -> Result<Arc<Version>, ApiError> {
        match self.find(current, as_of).await? {
            Found::Current => Ok(Arc::clone(current)),
            Found::Record(record) => self.open(current, record).await,
        }
    }

    /// The record of the version `as_of` names (the current one's is its manifest).
    pub async fn record_of(
        &self,
        current: &Arc<Version>,
        as_of: &AsOf,
    ) -> Result<Arc<Manifest>, ApiError> {
        match self.find(current, as_of).await? {
            Found::Current => Ok(Arc::new(current.dataset.manifest.clone())),
            Found::Record(record) => Ok(record),
        }
    }

    /// Which version `as_of` names, or why none: 404 (never one), 410 (removed), 503 (being
    /// published).
    async fn find(&self, current: &Arc<Version>, as_of: &AsOf) -> Result<Found, ApiError> {
        let store = current.dataset.store();
        let served = current.dataset.manifest.generation;
        let (generation, id) = match as_of {
            AsOf::Id { generation, id } => (*generation, Some(id.as_str())),
            AsOf::Generation(g) => (*g, None),
            AsOf::Time(t) => (self.generation_at(store, current, *t).await?, None),
        };
        let unknown = || {
            ApiError::NotFound(format!(
                "no version {}: /v1/versions lists those there are",
                id.map_or_else(|| generation.to_string(), str::to_owned)
            ))
        };
        if generation == served {
            return match id {
                Some(id) if id != current.dataset.manifest.version => Err(unknown()),
                _ => Ok(Found::Current),
            };
        }
        if generation == 0 {
            return Err(unknown());
        }
        // An earlier version is there while the store lists its record (listed again every
        // few seconds): one vacuum removed is forgotten, even when it was kept open.
        let removed =
            generation < served && !self.generations(store, served).await?.contains(&generation);
        if removed {
            self.forget(generation);
            return Err(self.gone(store, served, &generation.to_string()).await);
        }
        let Some(record) = self.record(store, generation).await? else {
            if generation > served {
                return Err(unknown());
            }
            return Err(self.gone(store, served, &generation.to_string()).await);
        };
        if id.is_some_and(|id| id != record.version) {
            return Err(unknown());
        }
        if generation > served {
            // Recorded, and published unless its publish is under way (or failed).
            let published = published_generation(store.object_store().as_ref())
                .await
                .map_err(ApiError::Engine)?;
            if published.is_none_or(|p| p < generation) {
                return Err(ApiError::Unavailable {
                    retry_after: 1,
                    detail: format!(
                        "version {} is being published; retry shortly",
                        record.version
                    ),
                });
            }
        }
        Ok(Found::Record(record))
    }

    /// The generation current at `t`: the newest published at or before it.
    async fn generation_at(
        &self,
        store: &Store,
        current: &Arc<Version>,
        t: Micros,
    ) -> Result<u64, ApiError> {
        let served = current.dataset.manifest.generation;
        let at = DateTime::from_timestamp_micros(t);
        if published(&current.dataset.manifest) <= at {
            return Ok(served);
        }
        let generations = self.generations(store, served).await?;
        let records = self.records(store, &generations).await?;
        if let Some(m) = records.iter().rev().find(|m| published(m) <= at) {
            // The next one was published after `t` unless it is gone (then it may have been
            // the one current at `t`).
            let next = m.generation + 1;
            if next < served && !generations.contains(&next) {
                return Err(self.gone(store, served, "current then").await);
            }
            return Ok(m.generation);
        }
        if generations.first() == Some(&1) {
            return Err(ApiError::NotFound(
                "that time is before the first version of the dataset".into(),
            ));
        }
        Err(self.gone(store, served, "current then").await)
    }

    /// 410 for a version vacuum removed, naming the oldest one kept.
    async fn gone(&self, store: &Store, served: u64, what: &str) -> ApiError {
        let oldest = match self.generations(store, served).await {
            Ok(g) => match g.first() {
                Some(&first) => self
                    .record(store, first)
                    .await
                    .ok()
                    .flatten()
                    .map(|m| m.version.clone()),
                None => None,
            },
            Err(_) => None,
        };
        ApiError::Gone(format!(
            "the version {what} was removed (vacuum); the oldest kept is {}",
            oldest.unwrap_or_else(|| "the current one".into())
        ))
    }

    /// The version of `record`, opened (or kept open from before).
    async fn open(
        &self,
        current: &Arc<Version>,
        record: Arc<Manifest>,
    ) -> Result<Arc<Version>, ApiError> {
        let store = current.dataset.store();
        let generation = record.generation;
        if let Some(v) = self.kept(generation) {
            return Ok(v);
        }
        let _one = self.opening.lock().await;
        if let Some(v) = self.kept(generation) {
            return Ok(v);
        }
        let started = Instant::now();
        // Beside the version served: what did not change since (most of the files table
        // and the catalog, after appends of values) is held once for both.
        let mut dataset =
            Dataset::open_version_beside(store, Manifest::clone(&record), &current.dataset)
                .await
                .map_err(ApiError::Engine)?;
        dataset.share_caches(&current.dataset);
        tracing::info!(
            version = %record.version,
            seconds = started.elapsed().as_secs_f64(),
            "opened a past version"
        );
        let version = Arc::new(Version::of(dataset));
        if self.open_budget > 0 {
            let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
            open.push(Arc::clone(&version));
            if open.len() > self.open_budget {
                open.remove(0);
            }
        }
        Ok(version)
    }

    /// Drops what is kept of a version vacuum removed.
    fn forget(&self, generation: u64) {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&generation);
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|v| v.dataset.manifest.generation != generation);
    }

    /// A version kept open, marked as used last.
    fn kept(&self, generation: u64) -> Option<Arc<Version>> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let i = open
            .iter()
            .position(|v| v.dataset.manifest.generation == generation)?;
        let v = open.remove(i);
        open.push(Arc::clone(&v));
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_of_takes_ids_generations_and_times() {
        assert_eq!(AsOf::parse("12").unwrap(), AsOf::Generation(12));
        assert_eq!(
            AsOf::parse("3-20261126T120803.656Z").unwrap(),
            AsOf::Id {
                generation: 3,
                id: "3-20261126T120803.656Z".into()
            }
        );
        assert!(matches!(
            AsOf::parse("2026-11-26T12:00:00Z").unwrap(),
            AsOf::Time(_)
        ));
        for bad in [
            "",
            "x",
            "-3",
            "3-",
            "3-2026",
            "3-20261126T120803Z",
            "3-20261126T120803.656",
            "2026-11-26",
            "2026-11-26T12:00:00",
            "99999999999999999999999",
        ] {
            assert!(AsOf::parse(bad).is_err(), "{bad}");
        }
    }
}
