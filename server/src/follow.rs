//! Following the dataset: a newer published version is served without a restart.
//!
//! Every few seconds (`follow_seconds`) the served dataset's store is asked for its current
//! manifest; when its version differs, the new version is opened (catalog, files table) while
//! the old one goes on answering, then requests that begin afterwards get the new one
//! (`AppState::switch_to`). It is opened beside the old one (`Dataset::open_beside`): its
//! stations and characteristics, where an append did not change them, are held once for both;
//! its files table is indexed a span at a time and none of it kept. Requests under way keep the
//! version they began with to their end. The new version takes over the old one's caches (one
//! budget for both) and what it read of the month files both list (`Dataset::follow`):
//! what is kept is kept per file, and files are never rewritten in place, so what is carried
//! over is the new version's too. The answer store is keyed by ETags that name the version. A
//! version that cannot be read (a damaged manifest, a missing table) is not served: the old
//! one stays, health says `degraded` (without the store's addresses), the log says why, and
//! the next check tries again. A store that does not answer is health's storage check's to
//! report.

use crate::state::AppState;
use hydro_engine::ErrorKind;
use hydro_engine::{Dataset, EngineError};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Checks every `every` for a newer version, which `open` opens beside the dataset served
/// until then (so that it can hold once what both versions share).
pub async fn follow<F, Fut>(state: Arc<AppState>, every: Duration, open: F)
where
    F: Fn(Arc<Dataset>) -> Fut,
    Fut: Future<Output = hydro_engine::Result<Dataset>>,
{
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let current = state.version();
        let serving = current.dataset.manifest.version.clone();
        let checked = current.dataset.published_version().await;
        drop(current);
        let published = match checked {
            Ok(Some(v)) if v != serving => v,
            Ok(_) => {
                // What was wrong (a damaged manifest, say) was put right.
                state.clear_switch_fault();
                continue;
            }
            Err(e) => {
                tracing::warn!(
                    "the published version cannot be read ({e}); still serving {serving}"
                );
                // A store that does not answer is the storage check's to report (and over
                // when the store is back); a manifest that cannot be read is this one's.
                if e.kind() != ErrorKind::Unavailable {
                    state.record_switch_fault(public_reason(&e));
                }
                continue;
            }
        };
        match open(Arc::clone(&state.version().dataset)).await {
            // (Published again while it was opened: what was opened is served, and the next
            // check finds the newer one.)
            Ok(mut dataset) => {
                let version = dataset.manifest.version.clone();
                // The switch decodes the new version's files of the stations the old one holds
                // decoded (`Dataset::follow`): CPU work of up to the files cache's budget,
                // kept off the threads that answer requests, with the reads of their row
                // groups driven from there too.
                let switching = Arc::clone(&state);
                let runtime = tokio::runtime::Handle::current();
                let switched = tokio::task::spawn_blocking(move || {
                    let previous = switching.version();
                    let (stations, series) = runtime.block_on(dataset.follow(&previous.dataset));
                    tracing::debug!(
                        "{stations} stations' decoded month files and {series} series' newest \
                         values carried over"
                    );
                    drop(previous);
                    switching.switch_to(dataset);
                });
                match switched.await {
                    Ok(()) => tracing::info!("serving version {version} (was {serving})"),
                    Err(e) => {
                        tracing::error!("switching to version {version} failed: {e}");
                        state.record_switch_fault(format!("version {version}: the switch failed"));
                    }
                }
            }
            Err(e) => {
                tracing::warn!(
                    "version {published} cannot be served ({e}); still serving {serving}"
                );
                state.record_switch_fault(format!("version {published}: {}", public_reason(&e)));
            }
        }
    }
}

/// Why a version cannot be served, as health may say it to anyone: the kind of fault, not the
/// store's addresses and paths (the log has those).
fn public_reason(e: &EngineError) -> String {
    match e.kind() {
        ErrorKind::Unavailable => "the store did not answer (see the log)",
        ErrorKind::Corrupt => "its manifest or tables are damaged (see the log)",
        _ => "it cannot be read (see the log)",
    }
    .to_owned()
}
