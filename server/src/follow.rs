//! Following the dataset: a newer published version is served without a restart.
//!
//! Every few seconds (`follow_seconds`) the served dataset's store is asked for its current
//! manifest; when its version differs, the new version is opened (catalog, files table) while
//! the old one goes on answering, then requests that begin afterwards get the new one
//! (`AppState::switch_to`). Requests under way keep the version they began with to their end,
//! and everything cached is per version: caches live in the `Dataset`, the answer store is
//! keyed by ETags that name the version. A version that cannot be read (a damaged manifest,
//! a missing table) is not served: the old one stays, health says `degraded`, the log says
//! why, and the next check tries again.

use crate::state::AppState;
use hydro_engine::Dataset;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub async fn follow<F, Fut>(state: Arc<AppState>, every: Duration, open: F)
where
    F: Fn() -> Fut,
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
                state.record_switch_fault(e.to_string());
                continue;
            }
        };
        match open().await {
            // (Published again while it was opened: what was opened is served, and the next
            // check finds the newer one.)
            Ok(dataset) => {
                tracing::info!(
                    "serving version {} (was {serving})",
                    dataset.manifest.version
                );
                state.switch_to(dataset);
            }
            Err(e) => {
                tracing::warn!(
                    "version {published} cannot be served ({e}); still serving {serving}"
                );
                state.record_switch_fault(format!("version {published}: {e}"));
            }
        }
    }
}
