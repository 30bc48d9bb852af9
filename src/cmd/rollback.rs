//! `hydro rollback`: a new version equal to an earlier one.

use crate::cli::RollbackArgs;
use crate::cmd::s3_settings;
use anyhow::bail;
use hydro_engine::EngineError;
use hydro_engine::Store;

pub async fn run(args: RollbackArgs) -> anyhow::Result<()> {
    let RollbackArgs { out, config, to } = args;
    let generation: u64 = to
        .split('-')
        .next()
        .and_then(|g| g.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("--to: '{to}' is not a version (e.g. 3)"))?;
    let store = Store::at(&out, &s3_settings(config.as_deref())?)?.object_store();
    match hydro_engine::rollback(store, generation).await {
        Ok(m) => {
            say!(
                "published {out} version {}: equal to version {generation} ({} values)",
                m.version,
                m.counts.values
            );
            Ok(())
        }
        Err(EngineError::Import(lines)) => bail!("{}", lines.join("\n")),
        Err(e) => Err(e.into()),
    }
}
