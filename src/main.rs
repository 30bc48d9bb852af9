//! `hydro`: serve, import and generate Hydro API datasets.

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use hydro_engine::model::month::Month;
use hydro_engine::model::zone::Zone;
use hydro_engine::storage::{ReadCost, S3Settings, Store};
use hydro_engine::write::derived::DerivedChange;
use hydro_engine::write::generate::{GenerateOptions, generate};
use hydro_engine::write::import::{
    CsvDialect, Encoding, ImportInput, ImportMode, ImportOptions, ImportProgress, Mapping,
    ReplaceConfirm, Replacement, import, parse_quality,
};
use hydro_engine::write::vacuum::Retention;
use hydro_engine::{Dataset, EngineError};
use hydro_server::config::{Config, LogFormat};
use hydro_server::state::AppState;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// mimalloc instead of glibc malloc: decoding and encoding a download allocate per page and per
/// batch on several threads at once, and glibc's arena locks and trimming showed up in `perf`
/// as a sixth of the CPU time of a bulk download (futex waits, `malloc_consolidate`).
///
/// Built without transparent huge pages (`no_thp`): by default mimalloc asks for them for its
/// segments, and the kernel then zeroes 2 MiB at the first touch of any byte of one, while most of
/// what this program allocates is a batch, a page or a row group used once. Without them, measured
/// side by side with release builds (the history of `benches/RESULTS.md`): a one-value append to
/// 720 000 files spent 0.13-0.17 s in the kernel rather than 0.60-0.66 s (half of its samples had
/// been `clear_page_erms`), took half the time and peaked at 204-210 MiB rather than 230-242; a
/// `generate` of 36 000 files peaked at 112-116 MiB rather than 188-246; `serve` started at 111-114
/// MiB rather than 129-135, with downloads and first requests as fast. (A host whose kernel puts
/// huge pages everywhere, `transparent_hugepage=always`, still gets them.)
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `println!` that stops quietly at a closed pipe: `hydro import … | head` ends `head`'s input,
/// and a report line written after that is no reason to panic (`println!` does).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `eprintln!`, likewise.
macro_rules! tell {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Where `hydro serve` keeps the demo dataset when no `--data` is given.
const DEMO_DIR: &str = "data/demo";

/// The demo's service metadata (publisher, licence), under the user's own settings.
const DEMO_CONFIG: &str = include_str!("../data/demo.toml");

#[derive(Parser)]
#[command(
    name = "hydro",
    version,
    about = "Hydrological Data API: serve, import and generate datasets"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a dataset over HTTP (the demo dataset when --data is not given).
    ///
    /// Settings come from --config (TOML, keys as listed below) and HYDRO_* environment
    /// variables, which win over the file.
    #[command(after_long_help = hydro_server::config::help())]
    Serve {
        /// Dataset directory (or file:// URL), or s3://BUCKET/PREFIX (see the s3_* settings).
        #[arg(long, env = "HYDRO_DATA")]
        data: Option<String>,
        /// Address to listen on.
        #[arg(long, env = "HYDRO_BIND", default_value = "127.0.0.1:8080")]
        bind: String,
        /// TOML file with service settings (see above).
        #[arg(long, env = "HYDRO_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Import CSV, ZRXP or Parquet files into a dataset, published atomically: a new version
    /// is published in --out only when every line of every file is good; otherwise every bad
    /// line is reported as file:line: reason and nothing is published. Into a dataset already
    /// there, give --append (add and correct) or --replace (a new version of only these files).
    ///
    /// CSV files have a header row, plain or gzip- or zstd-compressed (told by their first
    /// bytes); column order is free, cells are trimmed, empty cells mean "not given"; `#` lines
    /// before the header are skipped. Agencies' exports import as they are written with the
    /// options below (separator, decimal comma, Latin-1, German dates, local time, -999) and a
    /// --mapping file for their column names, station blocks and wide sheets; ZRXP files are
    /// told by their content. Values files may also be Parquet. The formats are described in
    /// data/README.md, with samples in data/sample/. Memory stays within --memory whatever the
    /// size of the values; rows wait in spill files meanwhile.
    Import {
        /// Dataset to write: a directory (created if missing) or s3://BUCKET/PREFIX.
        #[arg(long)]
        out: String,
        /// TOML file of settings; only the s3_* and store_* ones (see `hydro serve --help`)
        /// apply here.
        #[arg(long, env = "HYDRO_CONFIG")]
        config: Option<PathBuf>,
        /// Stations: id, name, type (surfaceWater|groundwater|weather), state (DE-XX or XX),
        /// lat/lon (WGS 84) or easting/northing/epsg (Gauss-Krüger 31466-31469), and optional
        /// operator, waterBodyId, waterBodyName, riverKm, gaugeZero, gaugeZeroDatum,
        /// groundLevel, elevation. Optional with --append (new or updated stations).
        #[arg(long, required_unless_present = "append")]
        stations: Option<PathBuf>,
        /// Parameters: stationId, id (e.g. water-level-15min), name, observedProperty, unit,
        /// interval (ISO 8601, e.g. PT15M). Optional with --append.
        #[arg(long, required_unless_present = "append")]
        parameters: Option<PathBuf>,
        /// Characteristic values: stationId, id, name, type (mainValue|statistic|derived|mark),
        /// parameterId, value, unit, and optional periodStart and periodEnd (RFC 3339, both or
        /// neither) and description.
        #[arg(long)]
        characteristics: Option<PathBuf>,
        /// One or more values files or glob patterns (quoted, e.g. 'archive/*.csv.gz'), also
        /// in a bucket ('s3://BUCKET/raw/*.csv.gz', read in place with the S3 settings of
        /// --out, as the catalog files may be): stationId, parameterId, timestamp (RFC 3339 with an offset; in Parquet also
        /// a timestamp with time zone), value, quality (good|suspect|estimated|unchecked|missing).
        #[arg(long, num_args = 1.., required = true)]
        values: Vec<PathBuf>,
        /// Add to the dataset published in --out: only the station-months the values touch
        /// are rewritten; a value at a timestamp already stored for its series replaces it (a
        /// correction); catalog rows add stations, parameters and characteristics, or update
        /// those with the same id.
        #[arg(long, conflicts_with = "replace")]
        append: bool,
        /// Publish a version of only these files in place of the dataset in --out (the one
        /// before stays reachable with asOf and `hydro rollback` until a vacuum). One that
        /// holds less than half the values asks first, or needs --yes when not on a terminal.
        #[arg(long)]
        replace: bool,
        /// Replace even when the new version holds less than half the values.
        #[arg(long, requires = "replace")]
        yes: bool,
        #[command(flatten)]
        dialect: DialectArgs,
        /// Memory the import's buffers may use, e.g. 1GiB, 256MiB (the process needs some
        /// 30 MiB more).
        #[arg(long, env = "HYDRO_IMPORT_MEMORY", default_value = "1GiB", value_parser = parse_bytes)]
        memory: u64,
        /// Directory for spill files (about 33 bytes a value row, removed when done).
        #[arg(long, env = "HYDRO_SPILL_DIR")]
        spill_dir: Option<PathBuf>,
        /// Fail on what is otherwise a warning (a station whose coordinates lie outside its
        /// state, lat/lon given together with easting/northing, values that look like
        /// missing-value sentinels, negative discharge or precipitation, times off the series'
        /// interval, an observedProperty outside the vocabulary).
        #[arg(long)]
        strict: bool,
        #[command(flatten)]
        derived: DerivedArgs,
    },
    /// Remove what no version within the grace period references: files of versions
    /// superseded longer ago than --older-than, and of imports that crashed. Publishing deletes
    /// nothing (downloads and servers on the previous version keep reading it); run this
    /// now and then. Never removes what the current version references.
    Vacuum {
        /// Dataset: a directory or s3://BUCKET/PREFIX.
        #[arg(long)]
        out: String,
        /// TOML file of settings; only the s3_* and store_* ones (see `hydro serve --help`)
        /// apply here.
        #[arg(long, env = "HYDRO_CONFIG")]
        config: Option<PathBuf>,
        /// Grace period, an ISO 8601 duration: versions superseded less long ago are kept.
        #[arg(long, default_value = "PT1H")]
        older_than: String,
        /// The newest N versions (the current one included) are kept however old, so that
        /// answers `asOf` them stay; a version goes only when both this and --older-than let
        /// it.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        keep_versions: u64,
    },
    /// Pack each station-year's months before --before into one object, so that a download
    /// from a bucket reads a year in one request instead of twelve, and each station's daily
    /// rollups of the years before --before's into one. Publishes a new version with the same
    /// values (nothing when there is nothing to pack); `vacuum` later removes the files it
    /// replaced. Run it now and then on an archive in a bucket, e.g. monthly.
    Compact {
        /// Dataset: a directory or s3://BUCKET/PREFIX.
        #[arg(long)]
        out: String,
        /// TOML file of settings; only the s3_* and store_* ones (see `hydro serve --help`)
        /// apply here.
        #[arg(long, env = "HYDRO_CONFIG")]
        config: Option<PathBuf>,
        /// First month left as files of their own (YYYY-MM, UTC); default: the current month,
        /// the one appends of a live archive write to.
        #[arg(long)]
        before: Option<String>,
    },
    /// Publish a new version equal to an earlier one (e.g. after a --replace by mistake): its
    /// values, catalog and derived values as they were. The versions between stay reachable
    /// with asOf; the earlier one must still be kept (see `vacuum --keep-versions`).
    Rollback {
        /// Dataset: a directory or s3://BUCKET/PREFIX.
        #[arg(long)]
        out: String,
        /// TOML file of settings; only the s3_* and store_* ones (see `hydro serve --help`)
        /// apply here.
        #[arg(long, env = "HYDRO_CONFIG")]
        config: Option<PathBuf>,
        /// The version to publish again: its generation, as /v1/versions lists it (the
        /// number before the first '-' of its version).
        #[arg(long)]
        to: String,
    },
    /// Make a new random API key and print it with the hash for `api_key_hashes`.
    HashKey,
    /// Print the argon2 hash of a password (read from stdin) for `basic_users = ["name:<hash>"]`.
    HashPassword,
    /// Write a synthetic, realistic dataset, deterministic by seed.
    Generate {
        /// Dataset to write: a directory (created if missing) or s3://BUCKET/PREFIX.
        #[arg(long)]
        out: String,
        /// TOML file of settings; only the s3_* and store_* ones (see `hydro serve --help`)
        /// apply here.
        #[arg(long, env = "HYDRO_CONFIG")]
        config: Option<PathBuf>,
        /// Stations: the 46 real gauges first, then made-up stations of every type.
        #[arg(long, default_value_t = GenerateOptions::default().stations)]
        stations: usize,
        /// Years of values (0: catalog only).
        #[arg(long, default_value_t = 3)]
        years: u32,
        /// Measurement interval as an ISO 8601 duration in whole minutes.
        #[arg(long, default_value = "PT15M")]
        interval: String,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// First day of the series (UTC).
        #[arg(long, default_value = "2022-01-01")]
        start: String,
        #[command(flatten)]
        derived: DerivedArgs,
    },
}

/// The dataset's zone and its settings for characteristic values derived from the series
/// (NNW … HHQ of the complete hydrological years, type `derived`). Kept with the dataset: what
/// is not given stays as it is (defaults: 3 years, 0.9, 11, UTC), so appends and compactions
/// derive alike; a change derives every station's values anew.
#[derive(Args)]
#[command(next_help_heading = "The dataset's zone and derived values")]
struct DerivedArgs {
    /// Complete hydrological years a series needs for derived values.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    derived_years: Option<u32>,
    /// The share of its expected values that makes a year complete (above 0, at most 1).
    #[arg(long, value_parser = parse_share)]
    derived_complete: Option<f64>,
    /// The month hydrological years start in (1-12).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=12))]
    derived_year_start: Option<u32>,
    /// The dataset's own zone, kept with it: UTC, an offset (+01:00, MEZ) or an IANA name.
    /// Its midnights start the hydrological years of derived values, and it is the calendar
    /// (and offset) of aggregates and statistics asked without timeZone. Not the same as
    /// import's --time-zone, which says how to read times written without an offset.
    /// Off UTC, a publish also reads the raw values of the day each year's edge cuts.
    #[arg(long, alias = "derived-time-zone", value_parser = parse_zone)]
    dataset_zone: Option<Zone>,
}

/// How an agency's CSV files are written: every file an import reads (values and catalog).
#[derive(Args)]
#[command(next_help_heading = "How the files are written")]
struct DialectArgs {
    /// Field separator: , ; tab | (default: told from each file's header line).
    #[arg(long, value_parser = parse_delimiter)]
    delimiter: Option<u8>,
    /// Decimal mark of numbers: . or , (default: a point, and a comma in a file not separated
    /// by commas).
    #[arg(long, value_parser = parse_decimal)]
    decimal: Option<u8>,
    /// Text encoding: utf-8, latin1 or windows-1252.
    #[arg(long, default_value = "utf-8", value_parser = Encoding::from_str)]
    encoding: Encoding,
    /// How times are written, strftime-style, e.g. '%d.%m.%Y %H:%M' (a date and a time column
    /// of the mapping are joined by a space first). Default: RFC 3339, or 31.12.2024 23:45,
    /// 2024-12-31 23:45 and 20241231234500 without an offset (with --time-zone).
    #[arg(long)]
    date_format: Option<String>,
    /// The zone of times written without an offset: a fixed offset (+01:00, UTC+1, MEZ for
    /// +01:00 all year) or an IANA zone with DST (Europe/Berlin: the repeated hour is told by
    /// the order of a series' rows, a skipped one is an error).
    #[arg(long, value_parser = parse_zone)]
    time_zone: Option<Zone>,
    /// Values that stand for a missing one, e.g. -999 (repeat or comma-separate): imported as
    /// recorded gaps (quality missing, no value).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    missing: Vec<String>,
    /// The quality of the values of files without a quality column: good, suspect,
    /// estimated or unchecked.
    #[arg(long, value_parser = parse_quality)]
    quality: Option<String>,
    /// Lines to skip at the start of every file (before `#` lines and the header).
    #[arg(long, default_value_t = 0)]
    skip_lines: usize,
    /// TOML file naming the files' columns, constants, station blocks, id renames and wide
    /// sheets' columns (see data/README.md).
    #[arg(long)]
    mapping: Option<PathBuf>,
}

impl DialectArgs {
    fn dialect(&self) -> CsvDialect {
        CsvDialect {
            delimiter: self.delimiter,
            decimal: self.decimal,
            encoding: self.encoding,
            date_format: self.date_format.clone(),
            time_zone: self.time_zone,
            missing: self.missing.clone(),
            quality: self.quality.clone(),
            skip_lines: self.skip_lines,
        }
    }

    fn mapping(&self) -> anyhow::Result<Mapping> {
        match &self.mapping {
            Some(path) => Mapping::read(path).map_err(|e| anyhow::anyhow!("--mapping {e}")),
            None => Ok(Mapping::default()),
        }
    }
}

fn parse_delimiter(s: &str) -> Result<u8, String> {
    match s {
        "," | ";" | "|" | " " => Ok(s.as_bytes()[0]),
        "\t" | "tab" | "\\t" => Ok(b'\t'),
        _ => Err(format!("'{s}': give , ; | tab or a space")),
    }
}

fn parse_decimal(s: &str) -> Result<u8, String> {
    match s {
        "." | "," => Ok(s.as_bytes()[0]),
        _ => Err(format!("'{s}': give . or ,")),
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

impl DerivedArgs {
    fn change(&self) -> DerivedChange {
        DerivedChange {
            years: self.derived_years.map(|y| y as usize),
            complete: self.derived_complete,
            year_start: self.derived_year_start,
            zone: self.dataset_zone,
        }
    }
}

fn parse_share(s: &str) -> anyhow::Result<f64> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 1.0 => Ok(x),
        _ => bail!("expected a number above 0 and at most 1, e.g. 0.9"),
    }
}

fn parse_zone(s: &str) -> Result<Zone, String> {
    hydro_engine::write::import::parse_zone(s)
}

fn parse_interval_minutes(s: &str) -> anyhow::Result<u32> {
    let d: hydro_engine::model::duration::IsoDuration =
        s.parse().map_err(|e| anyhow::anyhow!("--interval: {e}"))?;
    if d.months != 0 || d.micros % 60_000_000 != 0 {
        bail!("--interval must be whole minutes, e.g. PT15M, PT1H, P1D");
    }
    u32::try_from(d.micros / 60_000_000).context("--interval too long")
}

/// `1GiB`, `256MiB`, `64MB`, `500k`, `1048576`: a number of bytes with an optional unit
/// (k/M/G/T in powers of 1000, Ki/Mi/Gi/Ti in powers of 1024; a trailing B is optional).
fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("'{s}' is not a size such as 1GiB or 256MiB"))?;
    let unit = unit.trim().trim_end_matches(['B', 'b']);
    let factor: u64 = match unit {
        "" => 1,
        "k" | "K" => 1000,
        "M" => 1000_u64.pow(2),
        "G" => 1000_u64.pow(3),
        "T" => 1000_u64.pow(4),
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        _ => return Err(format!("'{s}': unknown unit (use k, M, G, Ki, Mi, Gi)")),
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| format!("'{s}' is too large"))
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

/// A progress bar on standard error (when it is a terminal) of `what`, counted in `units`.
fn progress_bar(what: &'static str, units: &str) -> impl Fn(u64, u64) {
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(&format!(
                "{{msg}} [{{bar:40}}] {{pos}}/{{len}} {units}, {{elapsed}} (eta {{eta}})"
            ))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b.set_message(what);
        b
    });
    move |done, total| {
        if let Some(b) = &bar {
            b.set_length(total);
            b.set_position(done);
            if done == total {
                b.finish();
            }
        }
    }
}

/// How to reach a bucket: the s3_* and store_* settings of `config` and HYDRO_* variables.
fn s3_settings(config: Option<&std::path::Path>) -> anyhow::Result<S3Settings> {
    Ok(Config::load(config).map_err(anyhow::Error::msg)?.s3())
}

/// The demo dataset: generated once, deterministically, on first start, and again when the
/// copy there is of an older layout.
async fn ensure_demo() -> anyhow::Result<String> {
    let store = Store::dir(std::path::Path::new(DEMO_DIR))?.object_store();
    let generate_it = match hydro_engine::dataset::read_manifest(store.as_ref()).await {
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

/// Threads for blocking work at once: above all the local store's file operations, a thread each
/// while it runs. Tokio's default, 512, let a compaction at 200 000 station-years run 121 of them
/// at its end, each with its own allocator heap (memory a thread freed is reused by that thread).
/// Capped at 16, release builds side by side (the history of `benches/RESULTS.md`), in the same
/// time: peak RSS of that compaction 425-442 → 359-399 MiB (19 threads), of one at 18 000
/// station-years 199-205 → 154-163 MiB, of a day append at 200 000 station-years 311-314 → 285-300
/// MiB; 78 series in one download as fast. The blocking tasks that run long hold a thread each: an
/// import's writing (which waits on file operations run on other threads of the pool) and a follow
/// switch, one at a time, and a generate's stations, one a core (so a generate uses at most 16
/// cores).
const BLOCKING_THREADS: usize = 16;

fn main() -> std::process::ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .build();
    let outcome = match runtime {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => Err(anyhow::Error::new(e).context("starting the async runtime")),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tell!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The log: the lines `HYDRO_LOG` asks for (`info` when unset), as `format` writes them, to
/// `file` (appended to) or standard error (colours only on a terminal).
fn start_log(format: LogFormat, file: Option<&str>) -> anyhow::Result<()> {
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

async fn run() -> anyhow::Result<()> {
    let command = Cli::parse().command;
    // `serve` starts its log once its settings say how.
    if !matches!(command, Command::Serve { .. }) {
        start_log(LogFormat::Text, None)?;
    }
    match command {
        Command::Serve { data, bind, config } => {
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
            let state = Arc::new(
                AppState::new(dataset, config, &local.to_string()).map_err(anyhow::Error::msg)?,
            );
            if store.read_cost() == ReadCost::RoundTrip {
                // Reads and decodes the whole files table again, a span at a time: after start,
                // not before, and on a blocking thread, as its decoding is CPU work that would
                // hold up the requests of a runtime thread.
                let dataset = Arc::clone(&state.version().dataset);
                let data = data.clone();
                let runtime = tokio::runtime::Handle::current();
                tokio::task::spawn_blocking(move || {
                    runtime.block_on(warn_of_loose_files(&dataset, &data))
                });
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
                let service = hydro_server::flight::FlightSql::new(Arc::clone(&state))
                    .map_err(anyhow::Error::msg)?;
                let listener = tokio::net::TcpListener::bind(&flight_bind)
                    .await
                    .with_context(|| format!("binding {flight_bind} (flight_bind)"))?;
                say!(
                    "Arrow Flight SQL listening on grpc://{}",
                    listener.local_addr()?
                );
                tokio::spawn(async move {
                    let served =
                        hydro_server::flight::serve(listener, service, shutdown_signal()).await;
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
        Command::Import {
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
        } => {
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
        Command::Rollback { out, config, to } => {
            let generation: u64 = to
                .split('-')
                .next()
                .and_then(|g| g.parse().ok())
                .ok_or_else(|| anyhow::anyhow!("--to: '{to}' is not a version (e.g. 3)"))?;
            let store = Store::at(&out, &s3_settings(config.as_deref())?)?.object_store();
            match hydro_engine::write::rollback::rollback(store, generation).await {
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
        Command::Vacuum {
            out,
            older_than,
            config,
            keep_versions,
        } => {
            // No grace at all (PT0S): only the current version is kept.
            let grace = if matches!(older_than.as_str(), "PT0S" | "P0D" | "0") {
                chrono::Duration::zero()
            } else {
                let d: hydro_engine::model::duration::IsoDuration = older_than
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
            match hydro_engine::write::vacuum::vacuum(&store, retention).await {
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
        Command::Compact {
            out,
            config,
            before,
        } => {
            let before: Month = match before {
                Some(b) => b
                    .parse()
                    .map_err(|e| anyhow::anyhow!("--before: {e} (give YYYY-MM)"))?,
                None => Month::current(),
            };
            let store = Store::at(&out, &s3_settings(config.as_deref())?)?.object_store();
            let progress = progress_bar("compacting", "stations");
            let c = hydro_engine::write::compact::compact(store, before, progress).await?;
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
        Command::HashKey => {
            let key = hydro_server::http::access::new_key();
            say!(
                "key:  {key}\nhash: {}",
                hydro_server::http::access::hash_key(&key)
            );
            Ok(())
        }
        Command::HashPassword => {
            let mut password = String::new();
            std::io::stdin().read_line(&mut password)?;
            let password = password.trim_end_matches(['\r', '\n']);
            if password.is_empty() {
                bail!("no password on standard input");
            }
            say!(
                "{}",
                hydro_server::http::access::hash_password(password).map_err(anyhow::Error::msg)?
            );
            Ok(())
        }
        Command::Generate {
            out,
            stations,
            years,
            interval,
            seed,
            start,
            config,
            derived,
        } => {
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
    }
}
