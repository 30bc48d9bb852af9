//! The pruning of `values` and `daily` changes what a query reads, never what it answers:
//! random predicates of every comparison form (numbers and texts against the text columns,
//! `IN`, `NOT IN`, `OR`, `NOT`, `BETWEEN`, `LIKE`, casts, time bounds) answer the same rows,
//! or fail alike, with the pruning on and off (every file read, every filter DataFusion's).

use super::{SqlLimits, SqlTables, run};
use crate::dataset::Dataset;
use crate::storage::Store;
use crate::write::import::{ImportInput, ImportOptions, import};
use datafusion::arrow::util::pretty::pretty_format_batches;
use futures::TryStreamExt;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

/// Agency gauge numbers as ids: two that are the same number, one that is another.
const STATIONS: [&str; 4] = ["25820100", "025820100", "25810300", "7"];
const PARAMETERS: [&str; 2] = ["water-level-15min", "discharge-1d"];

/// A small archive: every station with both series over three months, a gap in each.
async fn archive(root: &Path) -> Arc<Dataset> {
    let mut stations = String::from("id,name,type,state,lat,lon\n");
    let mut parameters = String::from("stationId,id,name,observedProperty,unit,interval\n");
    let mut values = String::from("stationId,parameterId,timestamp,value,quality\n");
    for (i, s) in STATIONS.iter().enumerate() {
        writeln!(stations, "{s},Gauge {i},surfaceWater,NW,51.{i},7.{i}").unwrap();
        writeln!(parameters, "{s},water-level-15min,W,waterLevel,cm,PT15M").unwrap();
        writeln!(parameters, "{s},discharge-1d,Q,discharge,m³/s,P1D").unwrap();
        for day in 0..90 {
            let date =
                chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap() + chrono::Days::new(day);
            let q = 10.0 * i as f64 + day as f64 / 7.0;
            match day % 17 {
                3 => writeln!(values, "{s},discharge-1d,{date}T00:00:00Z,,missing").unwrap(),
                _ => writeln!(values, "{s},discharge-1d,{date}T00:00:00Z,{q},good").unwrap(),
            }
            for quarter in (0..96).step_by(9) {
                let (h, m) = (quarter / 4, quarter % 4 * 15);
                let w = 100.0 + i as f64 + (day * 96 + quarter) as f64 % 13.0;
                let quality = ["good", "suspect", "estimated"][(quarter % 3) as usize];
                writeln!(
                    values,
                    "{s},water-level-15min,{date}T{h:02}:{m:02}:00+01:00,{w},{quality}"
                )
                .unwrap();
            }
        }
    }
    let dir = root.join("in");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in [
        ("stations.csv", &stations),
        ("parameters.csv", &parameters),
        ("values.csv", &values),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let out = root.join("archive");
    let input = ImportInput {
        stations: Some(dir.join("stations.csv")),
        parameters: Some(dir.join("parameters.csv")),
        values: vec![dir.join("values.csv")],
        ..ImportInput::default()
    };
    let options = ImportOptions {
        spill_dir: root.to_path_buf(),
        ..ImportOptions::default()
    };
    let store = Store::dir(&out).unwrap();
    import(store.object_store(), &input, &options, Default::default())
        .await
        .unwrap();
    Arc::new(Dataset::open(&store).await.unwrap())
}

/// A station as a literal: a text, or a number (as agency staff write gauge numbers).
fn station_literal(rng: &mut StdRng) -> String {
    let s = STATIONS[rng.random_range(0..STATIONS.len())];
    match rng.random_range(0..3) {
        0 => format!("'{s}'"),
        1 => s.trim_start_matches('0').to_owned(),
        _ => format!("{}", rng.random_range(0..30_000_000)),
    }
}

fn list(rng: &mut StdRng, item: fn(&mut StdRng) -> String) -> String {
    let n = rng.random_range(1..4);
    (0..n).map(|_| item(rng)).collect::<Vec<_>>().join(", ")
}

fn time_literal(rng: &mut StdRng) -> String {
    let day = rng.random_range(-5..100);
    let t = chrono::DateTime::from_timestamp(1_704_067_200 + day * 86_400, 0).unwrap()
        + chrono::TimeDelta::minutes(rng.random_range(0..96) * 15);
    match rng.random_range(0..3) {
        0 => format!("TIMESTAMP '{}'", t.format("%Y-%m-%dT%H:%M:%SZ")),
        1 => format!("TIMESTAMP '{}'", t.format("%Y-%m-%d %H:%M:%S")),
        _ => format!("'{}'", t.format("%Y-%m-%dT%H:%M:%S+01:00")),
    }
}

/// One comparison of `table`'s columns (`values`: `timestamp`, `value`, `quality`; `daily`:
/// `day`, `mean`).
fn comparison(rng: &mut StdRng, daily: bool) -> String {
    let (time, number) = if daily {
        ("day", "mean")
    } else {
        ("timestamp", "value")
    };
    let op = ["=", "<>", "<", "<=", ">", ">="][rng.random_range(0..6)];
    match rng.random_range(0..14) {
        0 => format!("station {op} {}", station_literal(rng)),
        1 => format!("station IN ({})", list(rng, station_literal)),
        2 => format!("station NOT IN ({})", list(rng, station_literal)),
        3 => format!(
            "station BETWEEN {} AND {}",
            station_literal(rng),
            station_literal(rng)
        ),
        4 => format!(
            "CAST(station AS BIGINT) {op} {}",
            rng.random_range(0..30_000_000)
        ),
        5 => {
            let s = STATIONS[rng.random_range(0..STATIONS.len())];
            format!("station LIKE '{}%'", &s[..s.len().min(2)])
        }
        6 => format!(
            "parameter {op} '{}'",
            PARAMETERS[rng.random_range(0..PARAMETERS.len())]
        ),
        7 => format!(
            "parameter IN ({})",
            list(rng, |r| format!("'{}'", PARAMETERS[r.random_range(0..2)]))
        ),
        8 => format!("{time} {op} {}", time_literal(rng)),
        9 => format!(
            "{time} BETWEEN {} AND {}",
            time_literal(rng),
            time_literal(rng)
        ),
        10 => format!(
            "CAST({time} AS DATE) {op} DATE '2024-02-1{}'",
            rng.random_range(0..9)
        ),
        11 => format!("{number} {op} {}", rng.random_range(0..130)),
        12 if !daily => format!(
            "quality = '{}'",
            ["good", "suspect", "missing"][rng.random_range(0..3)]
        ),
        _ => format!("{number} IS NULL"),
    }
}

/// A predicate of up to `depth` levels of AND, OR and NOT.
fn predicate(rng: &mut StdRng, daily: bool, depth: u32) -> String {
    if depth == 0 || rng.random_bool(0.4) {
        return comparison(rng, daily);
    }
    match rng.random_range(0..3) {
        0 => format!(
            "({} AND {})",
            predicate(rng, daily, depth - 1),
            predicate(rng, daily, depth - 1)
        ),
        1 => format!(
            "({} OR {})",
            predicate(rng, daily, depth - 1),
            predicate(rng, daily, depth - 1)
        ),
        _ => format!("NOT ({})", predicate(rng, daily, depth - 1)),
    }
}

const LIMITS: SqlLimits = SqlLimits {
    memory_bytes: 256 << 20,
    spill_bytes: 0,
    rows: 1_000_000,
};

/// The answer as text, or the failure's kind (the two runs must fail alike, not with the
/// same words: a scan of other files may meet the failing row elsewhere). Sums are rounded:
/// the scans add in another order.
async fn answer(tables: &SqlTables, statement: &str) -> String {
    let batches = match run(tables, statement, LIMITS).await {
        Ok(answer) => answer.rows.try_collect::<Vec<_>>().await,
        Err(e) => Err(e),
    };
    match batches {
        Ok(b) => pretty_format_batches(&b).unwrap().to_string(),
        Err(crate::error::EngineError::Sql(_)) => "a failure of the statement".into(),
        Err(e) => format!("another failure: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruning_never_changes_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = archive(dir.path()).await;
    let pruned = SqlTables::of(&dataset).unwrap();
    let whole = SqlTables::unpruned(&dataset).unwrap();
    let mut rng = StdRng::seed_from_u64(87);
    let mut answered = 0;
    for case in 0..400 {
        let daily = case % 4 == 3;
        let (table, number) = if daily {
            ("daily", "mean")
        } else {
            ("values", "value")
        };
        let statement = format!(
            "SELECT station, parameter, count(*) AS n, round(sum({number}), 6) AS total \
             FROM {table} WHERE {} GROUP BY station, parameter ORDER BY station, parameter",
            predicate(&mut rng, daily, 3)
        );
        let (got, expected) = (
            answer(&pruned, &statement).await,
            answer(&whole, &statement).await,
        );
        assert_eq!(got, expected, "{statement}");
        answered += usize::from(!got.starts_with("a failure"));
    }
    // Most statements answer rows: the comparison is of answers, not of failures.
    assert!(answered > 300, "only {answered} of 400 answered");
}

/// The reported forms: a gauge number unquoted, and a list of them, answer what the quoted
/// ids do (`25820100` is also `025820100` as a number).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gauge_numbers_unquoted_answer_as_their_texts() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = archive(dir.path()).await;
    let tables = SqlTables::of(&dataset).unwrap();
    let count = |w: &str| format!("SELECT count(*) AS n FROM values WHERE {w}");
    let quoted = answer(&tables, &count("station IN ('25820100', '025820100')")).await;
    assert!(!quoted.contains("| 0 "), "{quoted}");
    assert_eq!(answer(&tables, &count("station = 25820100")).await, quoted);
    let both = answer(&tables, &count("station IN (25820100, 25810300)")).await;
    let texts = answer(
        &tables,
        &count("station IN ('25820100', '025820100', '25810300')"),
    )
    .await;
    assert_eq!(both, texts);
}
