//! What every request shares: the dataset, the settings, the caches, the metrics.

use crate::answer_store::AnswerStore;
use crate::config::{Config, Variant};
use crate::http::access::Gate;
use crate::http::client::TrustedProxies;
use crate::http::ratelimit::RateLimiter;
use crate::render::envelope::Meta;
use crate::render::stream::StreamWatch;
use crate::versions::{Version, Versions};
use hydro_engine::Dataset;
use hydro_engine::Zone;
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;
use tokio::sync::Semaphore;

#[derive(Default)]
pub struct Metrics {
    pub requests: AtomicU64,
    pub status_2xx: AtomicU64,
    pub status_3xx: AtomicU64,
    pub status_4xx: AtomicU64,
    pub status_5xx: AtomicU64,
    pub rows_streamed: AtomicU64,
}

/// Why the last attempt to switch to a newer published version failed, and when.
pub type SwitchFault = (Instant, String);

pub struct AppState {
    /// The version served now; see [`AppState::version`].
    current: RwLock<Arc<Version>>,
    /// The last failure to switch to a newer version, while it is not resolved.
    pub switch_fault: Mutex<Option<SwitchFault>>,
    pub config: Config,
    /// Public base address including `/v1`, no trailing slash.
    pub base_url: String,
    /// The zone every answer's times are written in without `timeZone` (`output_offset`).
    pub zone: Zone,
    /// Permits for queries that read value files.
    pub heavy: Arc<Semaphore>,
    /// Permits for SQL queries (`sql_queries_at_once`).
    pub sql_slots: Arc<Semaphore>,
    pub started: Instant,
    pub metrics: Metrics,
    pub gate: Gate,
    pub rate: Option<RateLimiter>,
    /// Balancers whose `X-Forwarded-For` says who the client is (for rate limits).
    pub trusted: TrustedProxies,
    /// The last failure to read data (when, what), for `/v1/health`.
    pub last_fault: std::sync::Mutex<Option<(Instant, String)>>,
    /// Finished value answers kept on disk and sent again (the answer store).
    pub answer_store: Arc<AnswerStore>,
    /// What shapes a response besides the dataset and the request, in every ETag.
    pub representation: String,
    /// The `meta` block of every response.
    pub meta: Meta,
    /// Versions other than the current one (`asOf`, `/v1/versions`).
    pub versions: Versions,
}

impl AppState {
    pub fn new(dataset: Dataset, config: Config, bind: &str) -> Result<Self, String> {
        let zone = config.zone()?;
        let base_url = config
            .base_url
            .clone()
            .unwrap_or_else(|| format!("http://{bind}/v1"))
            .trim_end_matches('/')
            .to_owned();
        let gate = Gate::new(&config)?;
        let rate = RateLimiter::new(config.rate_limit_per_second, config.rate_burst);
        let trusted = TrustedProxies::parse(&config.trusted_proxies)?;
        let answer_store = AnswerStore::new(
            config.answer_store_dir.as_deref(),
            config.answer_store_bytes,
        )?;
        let representation = representation(&config, &base_url);
        Ok(Self {
            representation,
            meta: Meta::new(&config, &base_url),
            versions: Versions::new(config.past_versions_open),
            answer_store: Arc::new(answer_store),
            gate,
            rate,
            trusted,
            last_fault: std::sync::Mutex::new(None),
            current: RwLock::new(Arc::new(Version::of(dataset))),
            switch_fault: Mutex::new(None),
            heavy: Arc::new(Semaphore::new(config.max_heavy_queries.max(1))),
            sql_slots: Arc::new(Semaphore::new(config.sql_queries_at_once.max(1))),
            config,
            base_url,
            zone,
            started: Instant::now(),
            metrics: Metrics::default(),
        })
    }

    /// The version served now.
    pub fn version(&self) -> Arc<Version> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Serves `dataset` from now on (having taken over what the version served read:
    /// `Dataset::follow`); requests under way keep the version they began with.
    pub fn switch_to(&self, dataset: Dataset) {
        let next = Arc::new(Version::of(dataset));
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = next;
        self.clear_switch_fault();
    }

    pub fn clear_switch_fault(&self) {
        *self
            .switch_fault
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Remembers why a newer version could not be served; health says so until a switch.
    pub fn record_switch_fault(&self, what: String) {
        *self
            .switch_fault
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((Instant::now(), what));
    }

    /// Remembers a failed read; the log gets the cause, health reports `degraded` for a while.
    pub fn record_fault(&self, what: &str) {
        if let Ok(mut f) = self.last_fault.lock() {
            *f = Some((Instant::now(), what.to_owned()));
        }
    }

    pub fn basic(&self) -> bool {
        self.config.variant == Variant::Basic
    }
}

/// Streamed answers count their rows in the metrics, and one cut by a failed read is
/// remembered for health.
impl StreamWatch for AppState {
    fn rows_sent(&self, rows: usize) {
        self.metrics
            .rows_streamed
            .fetch_add(rows as u64, Ordering::Relaxed);
    }

    fn cut(&self, cause: &str) {
        self.record_fault(cause);
    }
}

/// A digest of the settings that shape response bytes besides the dataset and the request:
/// the `meta` block, the base address in links, the output offset, the variant, and the build
/// (whose encoders make the bytes, see [`build`]). A strong ETag must change when the bytes
/// do, so a restart with another `base_url` or a new release does not answer
/// `304 Not Modified` to a client holding bytes it no longer sends. Access settings are left
/// out: they decide who gets an answer, not its bytes, and no secret goes into a header.
fn representation(c: &Config, base_url: &str) -> String {
    let mut h = Sha256::new();
    for part in [
        &build(),
        &c.title,
        &c.version,
        &c.description,
        &c.description_url,
        c.publisher_name.as_deref().unwrap_or("\u{1}"),
        c.publisher_email.as_deref().unwrap_or("\u{1}"),
        c.license_name.as_deref().unwrap_or("\u{1}"),
        c.license_url.as_deref().unwrap_or("\u{1}"),
        base_url,
        &c.output_offset,
        &format!("{:?}", c.variant),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    hex::encode(&h.finalize()[..16])
}

/// The running build, as far as it shapes bytes: the version, and the executable's size and
/// time, since versions are not bumped for every change to an encoder. A reinstall of the same
/// build changes ETags too, which costs clients one download each, never a stale answer.
fn build() -> String {
    let exe = std::env::current_exe().and_then(|p| p.metadata());
    let (len, modified) = exe.map_or((0, None), |m| (m.len(), m.modified().ok()));
    format!("{} {len} {modified:?}", env!("CARGO_PKG_VERSION"))
}
