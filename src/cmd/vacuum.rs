//! `hydro vacuum`: removing the files no version within the grace period references.

use crate::cli::VacuumArgs;
use crate::cmd::s3_settings;
use anyhow::bail;
use hydro_engine::EngineError;
use hydro_engine::Retention;
use hydro_engine::Store;

pub async fn run(args: VacuumArgs) -> anyhow::Result<()> {
    let VacuumArgs {
        out,
        older_than,
        config,
        keep_versions,
    } = args;
    // No grace at all (PT0S): only the current version is kept.
    let grace = if matches!(older_than.as_str(), "PT0S" | "P0D" | "0") {
        chrono::Duration::zero()
    } else {
        let d: hydro_engine::IsoDuration = older_than
            .parse()
            .map_err(|e| anyhow::anyhow!("--older-than: {e}"))?;
        if d.months != 0 {
            bail!("--older-than: give days or less, e.g. P7D, PT1H");
        }
        chrono::Duration::microseconds(d.micros)
    };
    let store = Store::at(&out, &s3_settings(config.as_deref())?)?.object_store();
    let retention = Retention {
        grace,
        versions: usize::try_from(keep_versions).unwrap_or(usize::MAX),
    };
    match hydro_engine::vacuum(&store, retention).await {
        Ok(v) => {
            say!(
                "vacuumed {out}: kept versions {:?}; deleted {} files ({:.1} MB)",
                v.kept_versions,
                v.deleted_files,
                v.deleted_bytes as f64 / 1e6
            );
            Ok(())
        }
        Err(EngineError::Import(lines)) => bail!("{}", lines.join("\n")),
        Err(e) => Err(e.into()),
    }
}
