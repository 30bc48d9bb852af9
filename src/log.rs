//! The log of every command: `HYDRO_LOG`'s filter, as text or JSON lines.

use anyhow::Context;
use hydro_server::config::LogFormat;
use std::io::IsTerminal;

/// The log: the lines `HYDRO_LOG` asks for (`info` when unset), as `format` writes them, to
/// `file` (appended to) or standard error (colours only on a terminal).
pub fn start_log(format: LogFormat, file: Option<&str>) -> anyhow::Result<()> {
    use tracing_subscriber::fmt::writer::BoxMakeWriter;
    let filter = match std::env::var("HYDRO_LOG") {
        Ok(v) => tracing_subscriber::EnvFilter::try_new(&v).with_context(|| {
            format!(
                "HYDRO_LOG={v:?} is not a log filter (e.g. info, warn, info,hydro::request=off)"
            )
        })?,
        Err(_) => tracing_subscriber::EnvFilter::new("info"),
    };
    let (writer, ansi) = match file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening {path} (log_file)"))?;
            (BoxMakeWriter::new(std::sync::Mutex::new(file)), false)
        }
        None => (
            BoxMakeWriter::new(std::io::stderr),
            std::io::stderr().is_terminal(),
        ),
    };
    let log = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(ansi);
    match format {
        LogFormat::Text => log.init(),
        LogFormat::Json => log.json().flatten_event(true).init(),
    }
    Ok(())
}
