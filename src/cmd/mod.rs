//! The commands, one file each: what `hydro <command>` does once its arguments are parsed
//! (`cli`).

pub mod compact;
pub mod generate;
pub mod import;
pub mod keys;
pub mod rollback;
pub mod serve;
pub mod vacuum;

use hydro_engine::S3Settings;
use hydro_server::config::Config;

/// How to reach a bucket: the s3_* and store_* settings of `config` and HYDRO_* variables.
pub fn s3_settings(config: Option<&std::path::Path>) -> anyhow::Result<S3Settings> {
    Ok(Config::load(config).map_err(anyhow::Error::msg)?.s3())
}
