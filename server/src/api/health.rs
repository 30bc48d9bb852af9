//! `GET /v1/health` and `GET /metrics`: what operators and load balancers watch.

use crate::api::Ctx;
use crate::api::request::NoParameters;
use crate::http::error::ApiError;
use crate::render::reply::{Reply, json_reply};
use crate::state::AppState;
use hydro_engine::RequestKind;
use serde_json::json;
use std::sync::atomic::Ordering;

pub async fn health(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let NoParameters = ctx.request()?;
    let state = ctx.state;
    let dataset = &ctx.version.dataset;
    let started = std::time::Instant::now();
    let probe =
        tokio::time::timeout(std::time::Duration::from_secs(2), dataset.check_storage()).await;
    let (storage_status, storage_detail) = match probe {
        Ok(Ok(_)) => ("ok", None),
        Ok(Err(e)) => {
            tracing::warn!("health: storage: {e}");
            ("down", Some("the manifest cannot be read"))
        }
        Err(_) => ("down", Some("the store did not answer within 2 s")),
    };
    // A fault in the last five minutes makes the service degraded; no storage means down.
    let recent_fault = state
        .last_fault
        .lock()
        .ok()
        .and_then(|f| f.clone())
        .filter(|(at, _)| at.elapsed() < std::time::Duration::from_secs(300));
    let switch_fault = state.switch_fault.lock().ok().and_then(|f| f.clone());
    let status = match (storage_status, &recent_fault, &switch_fault) {
        ("ok", None, None) => "ok",
        ("ok", _, _) => "degraded",
        _ => "down",
    };
    let mut storage =
        json!({"status": storage_status, "latencyMs": started.elapsed().as_secs_f64() * 1000.0});
    if let Some(d) = storage_detail {
        storage["detail"] = json!(d);
    }
    let catalog = &dataset.catalog;
    let body = json!({
        "status": status,
        "version": state.config.version,
        "uptimeSeconds": state.started.elapsed().as_secs(),
        "checks": {
            "catalog": {"status": "ok", "stations": catalog.stations().len(), "datasetVersion": dataset.manifest.version},
            "storage": storage,
        }
    });
    let mut body = body;
    if let Some((at, _)) = recent_fault {
        body["checks"]["data"] = json!({
            "status": "degraded",
            "detail": "a data file could not be read (see the log)",
            "secondsAgo": at.elapsed().as_secs(),
        });
    }
    if let Some((at, why)) = switch_fault {
        body["checks"]["version"] = json!({
            "status": "degraded",
            "detail": format!("a newer published version cannot be served ({why}); serving {}", dataset.manifest.version),
            "secondsAgo": at.elapsed().as_secs(),
        });
    }
    let mut reply = json_reply(body);
    reply.cacheable = false;
    if status == "down" {
        reply.status = http::StatusCode::SERVICE_UNAVAILABLE;
    }
    Ok(reply)
}

pub fn metrics(state: &AppState) -> String {
    let m = &state.metrics;
    let available = state.heavy.available_permits();
    let stored = state.answer_store.size();
    let version = state.version();
    let memory = version.dataset.memory();
    let mut text = format!(
        "# HELP hydro_requests_total HTTP requests by status class.\n# TYPE hydro_requests_total counter\n\
hydro_requests_total{{class=\"2xx\"}} {}\nhydro_requests_total{{class=\"3xx\"}} {}\nhydro_requests_total{{class=\"4xx\"}} {}\nhydro_requests_total{{class=\"5xx\"}} {}\n\
# HELP hydro_value_rows_streamed_total Value rows encoded into answers (not those sent again from the answer store).\n# TYPE hydro_value_rows_streamed_total counter\nhydro_value_rows_streamed_total {}\n\
# HELP hydro_heavy_query_permits_available Free slots for heavy queries (value downloads, long or sorted station lists).\n# TYPE hydro_heavy_query_permits_available gauge\nhydro_heavy_query_permits_available {}\n\
# HELP hydro_answer_store_hits_total Value answers sent again from the answer store.\n# TYPE hydro_answer_store_hits_total counter\nhydro_answer_store_hits_total {}\n\
# HELP hydro_answer_store_answers Value answers in the answer store.\n# TYPE hydro_answer_store_answers gauge\nhydro_answer_store_answers {}\n\
# HELP hydro_answer_store_bytes Bytes in the answer store.\n# TYPE hydro_answer_store_bytes gauge\nhydro_answer_store_bytes {}\n\
# HELP hydro_answer_store_copies_given_up_total Copies of streamed answers not kept: larger than the store allows, or its writer too far behind.\n# TYPE hydro_answer_store_copies_given_up_total counter\nhydro_answer_store_copies_given_up_total {}\n\
# HELP hydro_value_cache_bytes Bytes of value files kept in memory once read.\n# TYPE hydro_value_cache_bytes gauge\nhydro_value_cache_bytes {}\n\
# HELP hydro_memory_bytes Bytes held in memory by the dataset, by part (the catalog's is an estimate; files: the files table's footer and where it lists each station, each series' newest month; files_cache: stations' files decoded from it, for every version open).\n# TYPE hydro_memory_bytes gauge\nhydro_memory_bytes{{part=\"footer_cache\"}} {}\nhydro_memory_bytes{{part=\"value_cache\"}} {}\nhydro_memory_bytes{{part=\"catalog\"}} {}\nhydro_memory_bytes{{part=\"files\"}} {}\nhydro_memory_bytes{{part=\"files_cache\"}} {}\n\
# HELP hydro_memory_budget_bytes Budgets of the dataset's caches (0: off).\n# TYPE hydro_memory_budget_bytes gauge\nhydro_memory_budget_bytes{{part=\"footer_cache\"}} {}\nhydro_memory_budget_bytes{{part=\"value_cache\"}} {}\nhydro_memory_budget_bytes{{part=\"files_cache\"}} {}\n\
# HELP hydro_newest_values_known Series whose newest value the version served knows: those its parameters table gives, and those the pass at its start has found in the values (all of them once it is done).\n# TYPE hydro_newest_values_known gauge\nhydro_newest_values_known {}\n\
# HELP hydro_uptime_seconds Seconds since start.\n# TYPE hydro_uptime_seconds gauge\nhydro_uptime_seconds {}\n",
        m.status_2xx.load(Ordering::Relaxed),
        m.status_3xx.load(Ordering::Relaxed),
        m.status_4xx.load(Ordering::Relaxed),
        m.status_5xx.load(Ordering::Relaxed),
        m.rows_streamed.load(Ordering::Relaxed),
        available,
        state.answer_store.hits.load(Ordering::Relaxed),
        stored.0,
        stored.1,
        state.answer_store.given_up.load(Ordering::Relaxed),
        memory.value_cache,
        memory.footer_cache,
        memory.value_cache,
        memory.catalog,
        memory.files,
        memory.files_cache,
        memory.footer_cache_budget,
        memory.value_cache_budget,
        memory.files_cache_budget,
        version.dataset.newest_values_known(),
        state.started.elapsed().as_secs(),
    );
    let (open, open_bytes) = state.versions.open_memory(&version.dataset);
    text.push_str(&format!(
        "# HELP hydro_past_versions_open Earlier versions kept open for asOf (at most past_versions_open).\n\
         # TYPE hydro_past_versions_open gauge\nhydro_past_versions_open {open}\n\
         # HELP hydro_past_versions_memory_bytes Bytes their catalogs and files tables hold beside the version served (an estimate; what they hold once with it is counted in its memory, what they read in the caches above).\n\
         # TYPE hydro_past_versions_memory_bytes gauge\nhydro_past_versions_memory_bytes {open_bytes}\n"
    ));
    if let Some(requests) = version.dataset.store_requests() {
        text.push_str(
            "# HELP hydro_store_requests_total Requests made to the object store, by kind.\n\
             # TYPE hydro_store_requests_total counter\n",
        );
        for kind in RequestKind::ALL {
            text.push_str(&format!(
                "hydro_store_requests_total{{kind=\"{}\"}} {}\n",
                kind.name(),
                requests.get(kind)
            ));
        }
    }
    text
}
