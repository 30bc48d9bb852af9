//! `hydro serve`: the HTTP API (and Arrow Flight SQL, and following a bucket) over a dataset,
//! the demo dataset when none is given.

use crate::cli::ServeArgs;
use crate::log::start_log;
use crate::progress::progress_bar;
use anyhow::{Context, bail};
use hydro_engine::Dataset;
use hydro_engine::DerivedChange;
use hydro_engine::Month;
use hydro_engine::{GenerateOptions, generate};
use hydro_engine::{ReadCost, Store};
use hydro_server::config::Config;
use hydro_server::state::AppState;
use std::sync::Arc;

/// Where `hydro serve` keeps the demo dataset when no `--data` is given.
const DEMO_DIR: &str = "data/demo";

/// The demo's service metadata (publisher, licence), under the user's own settings.
const DEMO_CONFIG: &str = include_str!("../../data/demo.toml");

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let ServeArgs { data, bind, config } = args;
    // The demo's publisher and licence apply to the demo only.
    let base = if data.is_none() { DEMO_CONFIG } else { "" };
    let config = Config::load_over(base, config.as_deref()).map_err(anyhow::Error::msg)?;
    start_log(config.log_format, config.log_file.as_deref())?;
    let own_data = data.is_some();
    let data = match data {
        Some(d) => d,
        None => ensure_demo().await?,
    };
    // A directory that is not there is the error to tell, before anything else.
    if !data.contains("://") && !std::path::Path::new(&data).is_dir() {
        bail!(
            "--data {data}: no such directory (a dataset is what `hydro import --out \
             DIR ...` or `hydro generate --out DIR` writes)"
        );
    }
    let store = Store::at(&data, &config.s3())?;
    let mut dataset = Dataset::open(&store).await.with_context(|| {
        format!(
            "opening dataset {data} (what `hydro import --out {data} ...` or \
             `hydro generate --out {data}` wrote)"
        )
    })?;
    let missing = config.missing_metadata();
    if own_data && !missing.is_empty() {
        tracing::warn!(
            "meta: {} not set; answers leave them out until you set them \
             (--config file or HYDRO_* variables, see `hydro serve --help`)",
            missing.join(", ")
        );
    }
    dataset.cache_values(config.value_cache_bytes);
    dataset.cache_files(config.files_cache_bytes);
    let listener = tokio::net::TcpListener::bind(&bind)
        .await
        .with_context(|| format!("binding {bind}"))?;
    let local = listener.local_addr()?;
    let state =
        Arc::new(AppState::new(dataset, config, &local.to_string()).map_err(anyhow::Error::msg)?);
    if store.read_cost() == ReadCost::RoundTrip {
        // Reads and decodes the whole files table again, a span at a time: after start,
        // not before, and on a blocking thread, as its decoding is CPU work that would
        // hold up the requests of a runtime thread.
        let dataset = Arc::clone(&state.version().dataset);
        let data = data.clone();
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || runtime.block_on(warn_of_loose_files(&dataset, &data)));
    }
    let memory = state.version().dataset.memory();
    let mib = |b: usize| b as f64 / (1024.0 * 1024.0);
    tracing::info!(
        "memory: footer cache budget {:.0} MiB, value cache budget {:.0} MiB, catalog {:.1} MiB",
        mib(memory.footer_cache_budget),
        mib(memory.value_cache_budget),
        mib(memory.catalog)
    );
    say!(
        "Hydro API listening on http://{local}/v1/ (dataset {})",
        state.version().dataset.manifest.version
    );
    if let Some(flight_bind) = state.config.flight_bind.clone() {
        let service =
            hydro_server::flight::FlightSql::new(Arc::clone(&state)).map_err(anyhow::Error::msg)?;
        let listener = tokio::net::TcpListener::bind(&flight_bind)
            .await
            .with_context(|| format!("binding {flight_bind} (flight_bind)"))?;
        say!(
            "Arrow Flight SQL listening on grpc://{}",
            listener.local_addr()?
        );
        tokio::spawn(async move {
            let served = hydro_server::flight::serve(listener, service, shutdown_signal()).await;
            if let Err(e) = served {
                tracing::error!("Flight SQL stopped: {e}");
            }
        });
    }
    if state.config.follow_seconds > 0 {
        // The caches are the served version's, shared at the switch (`Version::of`).
        let open = move |previous: Arc<Dataset>| {
            let store = store.clone();
            async move { Dataset::open_beside(&store, &previous).await }
        };
        tokio::spawn(hydro_server::follow::follow(
            Arc::clone(&state),
            std::time::Duration::from_secs(state.config.follow_seconds),
            open,
        ));
    }
    // On a worker thread rather than `main`'s own: accepting there made every new
    // connection a wake-up of the main thread by the worker that saw it ready.
    tokio::spawn(hydro_server::listener::serve(
        listener,
        state,
        shutdown_signal(),
    ))
    .await?;
    Ok(())
}

/// The demo dataset: generated once, deterministically, on first start, and again when the
/// copy there is of an older layout.
async fn ensure_demo() -> anyhow::Result<String> {
    let store = Store::dir(std::path::Path::new(DEMO_DIR))?.object_store();
    let generate_it = match hydro_engine::read_manifest(store.as_ref()).await {
        Ok(Some(_)) => false,
        Ok(None) => {
            tell!("generating the demo dataset in {DEMO_DIR} (once)…");
            true
        }
        Err(e) => {
            tell!("the demo dataset in {DEMO_DIR} cannot be read ({e}); generating it again…");
            true
        }
    };
    if generate_it {
        // Its three calendar years hold two complete hydrological years (November to
        // October): derived values from two, so that the tour shows them.
        let opts = GenerateOptions {
            derived: DerivedChange {
                years: Some(2),
                ..DerivedChange::default()
            },
            ..GenerateOptions::default()
        };
        generate(store, &opts, progress_bar("demo", "stations")).await?;
    }
    Ok(DEMO_DIR.to_owned())
}

/// Warns when a dataset served from a bucket has months that `hydro compact` would join
/// (each is a request of its own there).
async fn warn_of_loose_files(dataset: &Dataset, data: &str) {
    let this_month = Month::current();
    match dataset.loose_files(this_month).await {
        Ok(0) => tracing::info!("every month file before {this_month} is compacted"),
        Ok(loose) => tracing::warn!(
            "{loose} month files before {this_month} are not compacted: a download from the \
             bucket reads each on its own; `hydro compact --out {data}` joins a station-year \
             into one file"
        ),
        Err(e) => tracing::warn!("counting the month files to compact: {e}"),
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
