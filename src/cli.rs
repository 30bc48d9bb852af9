//! The command line: `hydro`'s subcommands and their arguments, with the help text each
//! shows, and the parsers of argument values. What each command does is `cmd`'s.

use anyhow::bail;
use clap::{Args, Parser, Subcommand};
use hydro_engine::DerivedChange;
use hydro_engine::GenerateOptions;
use hydro_engine::Zone;
use hydro_engine::{CsvDialect, Encoding, Mapping, parse_quality};
use std::path::PathBuf;
use std::str::FromStr;

#[derive(Parser)]
#[command(
    name = "hydro",
    version,
    about = "Hydrological Data API: serve, import and generate datasets"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Serve a dataset over HTTP (the demo dataset when --data is not given).
    ///
    /// Settings come from --config (TOML, keys as listed below) and HYDRO_* environment
    /// variables, which win over the file.
    #[command(after_long_help = hydro_server::config::help())]
    Serve(ServeArgs),
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
    Import(ImportArgs),
    /// Remove what no version within the grace period references: files of versions
    /// superseded longer ago than --older-than, and of imports that crashed. Publishing deletes
    /// nothing (downloads and servers on the previous version keep reading it); run this
    /// now and then. Never removes what the current version references.
    Vacuum(VacuumArgs),
    /// Pack each station-year's months before --before into one object, so that a download
    /// from a bucket reads a year in one request instead of twelve, and each station's daily
    /// rollups of the years before --before's into one. Publishes a new version with the same
    /// values (nothing when there is nothing to pack); `vacuum` later removes the files it
    /// replaced. Run it now and then on an archive in a bucket, e.g. monthly.
    Compact(CompactArgs),
    /// Publish a new version equal to an earlier one (e.g. after a --replace by mistake): its
    /// values, catalog and derived values as they were. The versions between stay reachable
    /// with asOf; the earlier one must still be kept (see `vacuum --keep-versions`).
    Rollback(RollbackArgs),
    /// Make a new random API key and print it with the hash for `api_key_hashes`.
    HashKey,
    /// Print the argon2 hash of a password (read from stdin) for `basic_users = ["name:<hash>"]`.
    HashPassword,
    /// Write a synthetic, realistic dataset, deterministic by seed.
    Generate(GenerateArgs),
}

#[derive(Args)]
pub struct ServeArgs {
    /// Dataset directory (or file:// URL), or s3://BUCKET/PREFIX (see the s3_* settings).
    #[arg(long, env = "HYDRO_DATA")]
    pub data: Option<String>,
    /// Address to listen on.
    #[arg(long, env = "HYDRO_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,
    /// TOML file with service settings (see above).
    #[arg(long, env = "HYDRO_CONFIG")]
    pub config: Option<PathBuf>,
}

#[derive(Args)]
pub struct ImportArgs {
    /// Dataset to write: a directory (created if missing) or s3://BUCKET/PREFIX.
    #[arg(long)]
    pub out: String,
    /// TOML file of settings; only the s3_* and store_* ones (see `hydro serve --help`)
    /// apply here.
    #[arg(long, env = "HYDRO_CONFIG")]
    pub config: Option<PathBuf>,
    /// Stations: id, name, type (surfaceWater|groundwater|weather), state (DE-XX or XX),
    /// lat/lon (WGS 84) or easting/northing/epsg (Gauss-Krüger 31466-31469), and optional
    /// operator, waterBodyId, waterBodyName, riverKm, gaugeZero, gaugeZeroDatum,
    /// groundLevel, elevation. Optional with --append (new or updated stations).
    #[arg(long, required_unless_present = "append")]
    pub stations: Option<PathBuf>,
    /// Parameters: stationId, id (e.g. water-level-15min), name, observedProperty, unit,
    /// interval (ISO 8601, e.g. PT15M). Optional with --append.
    #[arg(long, required_unless_present = "append")]
    pub parameters: Option<PathBuf>,
    /// Characteristic values: stationId, id, name, type (mainValue|statistic|derived|mark),
    /// parameterId, value, unit, and optional periodStart and periodEnd (RFC 3339, both or
    /// neither) and description.
    #[arg(long)]
    pub characteristics: Option<PathBuf>,
    /// One or more values files or glob patterns (quoted, e.g. 'archive/*.csv.gz'), also
    /// in a bucket ('s3://BUCKET/raw/*.csv.gz', read in place with the S3 settings of
    /// --out, as the catalog files may be): stationId, parameterId, timestamp (RFC 3339 with an offset; in Parquet also
    /// a timestamp with time zone), value, quality (good|suspect|estimated|unchecked|missing).
    #[arg(long, num_args = 1.., required = true)]
    pub values: Vec<PathBuf>,
    /// Add to the dataset published in --out: only the station-months the values touch
    /// are rewritten; a value at a timestamp already stored for its series replaces it (a
    /// correction); catalog rows add stations, parameters and characteristics, or update
    /// those with the same id.
    #[arg(long, conflicts_with = "replace")]
    pub append: bool,
    /// Publish a version of only these files in place of the dataset in --out (the one
    /// before stays reachable with asOf and `hydro rollback` until a vacuum). One that
    /// holds less than half the values asks first, or needs --yes when not on a terminal.
    #[arg(long)]
    pub replace: bool,
    /// Replace even when the new version holds less than half the values.
    #[arg(long, requires = "replace")]
    pub yes: bool,
    #[command(flatten)]
    pub dialect: DialectArgs,
    /// Memory the import's buffers may use, e.g. 1GiB, 256MiB (the process needs some
    /// 30 MiB more).
    #[arg(long, env = "HYDRO_IMPORT_MEMORY", default_value = "1GiB", value_parser = parse_bytes)]
    pub memory: u64,
    /// Directory for spill files (about 33 bytes a value row, removed when done).
    #[arg(long, env = "HYDRO_SPILL_DIR")]
    pub spill_dir: Option<PathBuf>,
    /// Fail on what is otherwise a warning (a station whose coordinates lie outside its
    /// state, lat/lon given together with easting/northing, values that look like
    /// missing-value sentinels, negative discharge or precipitation, times off the series'
    /// interval, an observedProperty outside the vocabulary).
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub derived: DerivedArgs,
}

#[derive(Args)]
pub struct VacuumArgs {
    /// Dataset: a directory or s3://BUCKET/PREFIX.
    #[arg(long)]
    pub out: String,
    /// TOML file of settings; only the s3_* and store_* ones (see `hydro serve --help`)
    /// apply here.
    #[arg(long, env = "HYDRO_CONFIG")]
    pub config: Option<PathBuf>,
    /// Grace period, an ISO 8601 duration: versions superseded less long ago are kept.
    #[arg(long, default_value = "PT1H")]
    pub older_than: String,
    /// The newest N versions (the current one included) are kept however old, so that
    /// answers `asOf` them stay; a version goes only when both this and --older-than let
    /// it.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub keep_versions: u64,
}

#[derive(Args)]
pub struct CompactArgs {
    /// Dataset: a directory or s3://BUCKET/PREFIX.
    #[arg(long)]
    pub out: String,
    /// TOML file of settings; only the s3_* and store_* ones (see `hydro serve --help`)
    /// apply here.
    #[arg(long, env = "HYDRO_CONFIG")]
    pub config: Option<PathBuf>,
    /// First month left as files of their own (YYYY-MM, UTC); default: the current month,
    /// the one appends of a live archive write to.
    #[arg(long)]
    pub before: Option<String>,
}

#[derive(Args)]
pub struct RollbackArgs {
    /// Dataset: a directory or s3://BUCKET/PREFIX.
    #[arg(long)]
    pub out: String,
    /// TOML file of settings; only the s3_* and store_* ones (see `hydro serve --help`)
    /// apply here.
    #[arg(long, env = "HYDRO_CONFIG")]
    pub config: Option<PathBuf>,
    /// The version to publish again: its generation, as /v1/versions lists it (the
    /// number before the first '-' of its version).
    #[arg(long)]
    pub to: String,
}

#[derive(Args)]
pub struct GenerateArgs {
    /// Dataset to write: a directory (created if missing) or s3://BUCKET/PREFIX.
    #[arg(long)]
    pub out: String,
    /// TOML file of settings; only the s3_* and store_* ones (see `hydro serve --help`)
    /// apply here.
    #[arg(long, env = "HYDRO_CONFIG")]
    pub config: Option<PathBuf>,
    /// Stations: the 46 real gauges first, then made-up stations of every type.
    #[arg(long, default_value_t = GenerateOptions::default().stations)]
    pub stations: usize,
    /// Years of values (0: catalog only).
    #[arg(long, default_value_t = 3)]
    pub years: u32,
    /// Measurement interval as an ISO 8601 duration in whole minutes.
    #[arg(long, default_value = "PT15M")]
    pub interval: String,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// First day of the series (UTC).
    #[arg(long, default_value = "2022-01-01")]
    pub start: String,
    #[command(flatten)]
    pub derived: DerivedArgs,
}

/// The dataset's zone and its settings for characteristic values derived from the series
/// (NNW … HHQ of the complete hydrological years, type `derived`). Kept with the dataset: what
/// is not given stays as it is (defaults: 3 years, 0.9, 11, UTC), so appends and compactions
/// derive alike; a change derives every station's values anew.
#[derive(Args)]
#[command(next_help_heading = "The dataset's zone and derived values")]
pub struct DerivedArgs {
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
pub struct DialectArgs {
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
    pub fn dialect(&self) -> CsvDialect {
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

    pub fn mapping(&self) -> anyhow::Result<Mapping> {
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

impl DerivedArgs {
    pub fn change(&self) -> DerivedChange {
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
    hydro_engine::parse_zone(s)
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
