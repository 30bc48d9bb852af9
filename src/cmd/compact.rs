//! `hydro compact`: each station-year's months before a month joined into one file.

use crate::cli::CompactArgs;
use crate::cmd::s3_settings;
use crate::progress::progress_bar;
use hydro_engine::Month;
use hydro_engine::Store;

pub async fn run(args: CompactArgs) -> anyhow::Result<()> {
    let CompactArgs {
        out,
        config,
        before,
    } = args;
    let before: Month = match before {
        Some(b) => b
            .parse()
            .map_err(|e| anyhow::anyhow!("--before: {e} (give YYYY-MM)"))?,
        None => Month::current(),
    };
    let store = Store::at(&out, &s3_settings(config.as_deref())?)?.object_store();
    let progress = progress_bar("compacting", "stations");
    let c = hydro_engine::compact(store, before, progress).await?;
    match c.generation {
        Some(g) => {
            if c.files > 0 {
                say!(
                    "compacted {out}: {} months into {} station-year file{} ({:.1} MB)",
                    c.months,
                    c.files,
                    if c.files == 1 { "" } else { "s" },
                    c.bytes as f64 / 1e6
                );
            } else {
                say!("compacted {out}: no months to join before {before}");
            }
            if c.moved > 0 {
                say!(
                    "moved {} month files of an earlier layout to this one's names",
                    c.moved
                );
            }
            if c.rollups_joined > 0 {
                say!(
                    "joined the rollup parts of years before {} of {} station{}",
                    before.year(),
                    c.rollups_joined,
                    if c.rollups_joined == 1 { "" } else { "s" }
                );
            }
            say!("published generation {g}");
        }
        None => {
            say!("compacted {out}: nothing to join before {before}; nothing published")
        }
    }
    Ok(())
}
