//! `hydro import`: CSV, ZRXP and Parquet files into a dataset, published atomically, with the
//! import's progress on a terminal and its warnings and errors as lines to read.

use crate::cli::ImportArgs;
use crate::cmd::s3_settings;
use anyhow::bail;
use hydro_engine::EngineError;
use hydro_engine::Store;
use hydro_engine::{
    ImportInput, ImportMode, ImportOptions, ImportProgress, ReplaceConfirm, Replacement, import,
};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::Ordering;

pub async fn run(args: ImportArgs) -> anyhow::Result<()> {
    let ImportArgs {
        out,
        stations,
        parameters,
        characteristics,
        values,
        append,
        replace,
        yes,
        dialect,
        memory,
        spill_dir,
        strict,
        config,
        derived,
    } = args;
    let mode = match (append, replace) {
        (true, _) => ImportMode::Append,
        (_, true) => ImportMode::Replace,
        _ => ImportMode::New,
    };
    let input = ImportInput {
        stations,
        parameters,
        characteristics,
        values,
        mode,
        dialect: dialect.dialect(),
        mapping: dialect.mapping()?,
    };
    let s3 = s3_settings(config.as_deref())?;
    let confirm = match (yes, std::io::stdin().is_terminal()) {
        (true, _) => Some(ReplaceConfirm(Arc::new(|_: &Replacement| true))),
        (false, true) => Some(ReplaceConfirm(Arc::new(ask_to_replace))),
        (false, false) => None,
    };
    let mut options = ImportOptions {
        memory_bytes: memory,
        s3: s3.clone(),
        derived: derived.change(),
        strict,
        confirm_replace: confirm,
        ..ImportOptions::default()
    };
    if let Some(dir) = spill_dir {
        options.spill_dir = dir;
    }
    let progress = Arc::new(ImportProgress::default());
    let stop_showing = show_import_progress(Arc::clone(&progress));
    let imported = import(
        Store::at(&out, &s3)?.object_store(),
        &input,
        &options,
        progress,
    )
    .await;
    stop_showing();
    match imported {
        Ok(done) => {
            for w in &done.warnings {
                tell!("{w}");
            }
            let m = &done.manifest;
            say!(
                "published {out} version {}: {} stations, {} parameters, {} characteristics, {} values",
                m.version,
                m.counts.stations,
                m.counts.parameters,
                m.counts.characteristics,
                m.counts.values
            );
            if append {
                say!(
                    "appended {} values ({} replaced stored ones) in {} station-months written; {} files carried over in the files table's row groups as they were",
                    done.rows,
                    done.replaced,
                    done.months_written,
                    done.files_copied
                );
            }
            Ok(())
        }
        Err(EngineError::Import(lines)) => {
            for l in &lines {
                tell!("{l}");
            }
            bail!("the input has errors (above); nothing was published")
        }
        Err(e) => Err(e.into()),
    }
}

/// Asks on the terminal whether a replacement that drops most values goes ahead.
fn ask_to_replace(r: &Replacement) -> bool {
    eprint!(
        "\nversion {} holds {} values; these files hold {}, less than half. Replace it? [y/N] ",
        r.version, r.values_before, r.values_after
    );
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).is_ok()
        && matches!(answer.trim(), "y" | "Y" | "yes" | "Yes")
}

/// Shows an import's progress on standard error while `progress` runs (nothing when standard
/// error is not a terminal): bytes read and rows per second, then rows written.
fn show_import_progress(progress: Arc<ImportProgress>) -> impl FnOnce() {
    let Some(bar) = std::io::stderr()
        .is_terminal()
        .then(indicatif::ProgressBar::no_length)
    else {
        return Box::new(|| {}) as Box<dyn FnOnce()>;
    };
    let reading = indicatif::ProgressStyle::with_template(
        "reading [{bar:30}] {binary_bytes}/{binary_total_bytes} {msg} ({elapsed})",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    let writing = indicatif::ProgressStyle::with_template(
        "writing [{bar:30}] {human_pos}/{human_len} rows ({per_sec}, {elapsed})",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(reading);
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ticker = {
        let (bar, done) = (bar.clone(), Arc::clone(&done));
        std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let mut styled_for_writing = false;
            while !done.load(Ordering::Relaxed) {
                let rows = progress.rows_read.load(Ordering::Relaxed);
                if progress.writing.load(Ordering::Relaxed) {
                    if !styled_for_writing {
                        bar.set_style(writing.clone());
                        bar.reset_elapsed();
                        bar.set_length(rows);
                        styled_for_writing = true;
                    }
                    bar.set_position(progress.rows_written.load(Ordering::Relaxed));
                } else {
                    bar.set_length(progress.bytes_total.load(Ordering::Relaxed));
                    bar.set_position(progress.bytes_read.load(Ordering::Relaxed));
                    let per_sec = rows as f64 / started.elapsed().as_secs_f64().max(0.001);
                    bar.set_message(format!(
                        "{} rows, {} rows/s",
                        indicatif::HumanCount(rows),
                        indicatif::HumanCount(per_sec as u64)
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            bar.finish_and_clear();
        })
    };
    Box::new(move || {
        done.store(true, Ordering::Relaxed);
        let _ = ticker.join();
    })
}
