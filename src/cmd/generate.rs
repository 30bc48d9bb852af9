//! `hydro generate`: a synthetic, realistic dataset, deterministic by seed.

use crate::cli::GenerateArgs;
use crate::cmd::s3_settings;
use crate::progress::progress_bar;
use anyhow::{Context, bail};
use hydro_engine::Store;
use hydro_engine::{GenerateOptions, generate};

pub async fn run(args: GenerateArgs) -> anyhow::Result<()> {
    let GenerateArgs {
        out,
        stations,
        years,
        interval,
        seed,
        start,
        config,
        derived,
    } = args;
    let opts = GenerateOptions {
        stations,
        years,
        interval_minutes: parse_interval_minutes(&interval)?,
        seed,
        start: start
            .parse()
            .with_context(|| format!("--start {start}: expected YYYY-MM-DD"))?,
        derived: derived.change(),
    };
    let started = std::time::Instant::now();
    let m = generate(
        Store::at(&out, &s3_settings(config.as_deref())?)?.object_store(),
        &opts,
        progress_bar("generating", "stations"),
    )
    .await?;
    say!(
        "published {out} version {}: {} stations, {} values in {} files ({:.1}s)",
        m.version,
        m.counts.stations,
        m.counts.values,
        m.counts.files,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn parse_interval_minutes(s: &str) -> anyhow::Result<u32> {
    let d: hydro_engine::IsoDuration = s.parse().map_err(|e| anyhow::anyhow!("--interval: {e}"))?;
    if d.months != 0 || d.micros % 60_000_000 != 0 {
        bail!("--interval must be whole minutes, e.g. PT15M, PT1H, P1D");
    }
    u32::try_from(d.micros / 60_000_000).context("--interval too long")
}
