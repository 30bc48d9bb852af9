//! Recorded gaps end to end: rows of quality `missing` without a value imported from a real
//! export, stored, and served as rows without a value in every format; counted as rows, never
//! as values; kept through compaction.

mod common;

use common::{Server, batches, get};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Float64Type;
use std::path::Path;
use std::process::{Command, Output};

const SERIES: &str = "/stations/koeln/parameters/water-level-15min";

fn sample(name: &str) -> String {
    format!("{}/data/sample/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn hydro(args: &[&str], out: &Path, values: &Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hydro"));
    cmd.args(args).arg("--out").arg(out);
    cmd.args(["--stations", &sample("stations.csv")]);
    cmd.args(["--parameters", &sample("parameters.csv")]);
    cmd.arg("--values").arg(values);
    cmd.output().expect("run hydro")
}

/// 15-minute water levels from 2021-01-31T12:00Z into February: rows 10..14 and the last
/// three are recorded gaps (`,,missing`, CRLF as a spreadsheet writes them); February's other
/// rows have none, so months with and without gaps are stored side by side.
fn export() -> (String, Vec<Option<f64>>) {
    let start = chrono::DateTime::parse_from_rfc3339("2021-01-31T12:00:00Z").unwrap();
    let mut csv = String::from("stationId,parameterId,timestamp,value,quality\r\n");
    let mut values = Vec::new();
    let n = 100;
    for i in 0..n {
        let t = (start + chrono::Duration::minutes(15 * i)).to_rfc3339();
        let gap = (10..14).contains(&i) || i >= n - 3;
        let v = 300.0 + i as f64;
        match gap {
            true => csv.push_str(&format!("koeln,water-level-15min,{t},,missing\r\n")),
            false => csv.push_str(&format!("koeln,water-level-15min,{t},{v},good\r\n")),
        }
        values.push((!gap).then_some(v));
    }
    (csv, values)
}

/// What every format says of the series, checked against the export.
async fn served_as_written(base: &str, want: &[Option<f64>]) {
    let url = format!("{base}{SERIES}/values?from=2021-01-01T00:00:00Z&limit=1000");
    let json = get(&url).await.json();
    let rows = json["data"].as_array().unwrap();
    assert_eq!(rows.len(), want.len(), "gaps are rows");
    for (row, w) in rows.iter().zip(want) {
        assert_eq!(row["value"].as_f64(), *w, "{row}");
        let gap = w.is_none();
        assert_eq!(row["quality"] == "missing", gap, "{row}");
        assert_eq!(row["value"].is_null(), gap, "{row}");
    }
    // The answer keeps its own schema: null only with quality missing.
    let schema = get(&format!("{base}/schemas/values.json")).await.json();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&json), "{json}");
    let mut wrong = json.clone();
    wrong["data"][0]["value"] = serde_json::Value::Null;
    assert!(!validator.is_valid(&wrong), "null with quality good");

    let csv = get(&format!("{url}&format=csv")).await.text();
    let lines: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(lines.len(), want.len());
    assert!(lines[10].ends_with(",,missing"), "{}", lines[10]);
    assert!(
        lines[9].ends_with(",good") && !lines[9].contains(",,"),
        "{}",
        lines[9]
    );

    let xml = get(&format!("{url}&format=xml")).await.text();
    assert!(
        xml.contains("<value></value><quality>missing</quality>"),
        "{xml:.600}"
    );

    for format in ["arrow", "parquet"] {
        let body = get(&format!("{url}&format={format}")).await.body;
        let got: Vec<Option<f64>> = batches(format, &body)
            .iter()
            .flat_map(|b| {
                let v = b
                    .column_by_name("value")
                    .unwrap()
                    .as_primitive::<Float64Type>();
                (0..v.len())
                    .map(|i| v.is_valid(i).then(|| v.value(i)))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(got, want, "{format}");
    }

    // `recent` counts rows, gaps among them; a sort puts them last either way.
    let recent = get(&format!("{base}{SERIES}/values?recent=4")).await.json();
    let recent: Vec<_> = recent["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"].as_f64())
        .collect();
    assert_eq!(recent, want[want.len() - 4..]);
    for sort in ["value", "-value"] {
        let sorted = get(&format!("{url}&sort={sort}&format=csv")).await.text();
        let tail: Vec<&str> = sorted.lines().rev().take(7).collect();
        assert!(
            tail.iter().all(|l| l.ends_with(",,missing")),
            "{sort}: {tail:?}"
        );
    }
    // Aggregates never count a gap: 2021-01-31 has 48 rows, 4 of them gaps.
    let daily = get(&format!(
        "{base}{SERIES}/values?aggregate=mean,count&interval=P1D&from=2021-01-31T00:00:00Z&to=2021-01-31T23:59:59Z"
    ))
    .await
    .json();
    let day = &daily["data"][0];
    assert_eq!(day["count"], 44, "{daily}");
    let valued: Vec<f64> = want[..48].iter().flatten().copied().collect();
    let mean = valued.iter().sum::<f64>() / valued.len() as f64;
    assert!(
        (day["mean"].as_f64().unwrap() - mean).abs() < 1e-9,
        "{daily}"
    );
}

#[tokio::test]
async fn recorded_gaps_are_rows_without_a_value_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, want) = export();
    let values = dir.path().join("export.csv");
    std::fs::write(&values, &csv).unwrap();
    let out = dir.path().join("dataset");
    let r = hydro(&["import"], &out, &values);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["format"], 5, "a layout older servers refuse");
    assert_eq!(manifest["counts"]["missing"], 7);

    let server = Server::start_with(&out, &[]);
    let b = &server.base;
    served_as_written(b, &want).await;
    // Availability splits at the gaps; the newest value is the newest row with one.
    let parameter = get(&format!("{b}{SERIES}")).await.json();
    let periods = parameter["data"]["availability"].as_array().unwrap();
    assert_eq!(periods.len(), 2, "{parameter}");
    assert_eq!(periods[0]["end"], "2021-01-31T14:15:00+00:00");
    assert_eq!(periods[1]["start"], "2021-01-31T15:30:00+00:00");
    let latest = get(&format!(
        "{b}/latest?parameters=water-level-15min&stations=koeln"
    ))
    .await
    .json();
    assert_eq!(latest["data"][0]["value"].as_f64(), want[96], "{latest}");
    drop(server);

    // Compaction joins the months (one with gaps, one without) into one nullable year file.
    let compact = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(["compact", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        compact.status.success(),
        "{}",
        String::from_utf8_lossy(&compact.stderr)
    );
    let said = String::from_utf8_lossy(&compact.stdout);
    assert!(
        said.contains("2 months into 1 station-year file "),
        "{said}"
    );
    let server = Server::start_with(&out, &[]);
    served_as_written(&server.base, &want).await;
}

#[test]
fn a_gap_must_be_written_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let values = dir.path().join("bad.csv");
    std::fs::write(
        &values,
        "stationId,parameterId,timestamp,value,quality\n\
         koeln,water-level-15min,2021-01-01T00:00:00Z,,good\n\
         koeln,water-level-15min,2021-01-01T00:15:00Z,-999,missing\n\
         koeln,water-level-15min,2021-01-01T00:30:00Z,,missing\n",
    )
    .unwrap();
    let out = dir.path().join("dataset");
    let r = hydro(&["import"], &out, &values);
    assert!(!r.status.success());
    let said = String::from_utf8_lossy(&r.stderr);
    assert!(
        said.contains(
            "bad.csv:2: value is required (a gap is an empty value with quality missing, not good)"
        ),
        "{said}"
    );
    assert!(
        said.contains("bad.csv:3: value: '-999' has quality missing, which has no value"),
        "{said}"
    );
    assert!(
        !said.contains("bad.csv:4"),
        "a gap written as one is fine: {said}"
    );
    assert!(!out.join("manifest.json").exists(), "nothing published");
}

/// A Parquet export marks a gap with a null value: kept with quality `missing`, refused with
/// another quality, and a value with quality `missing` is refused too.
#[test]
fn parquet_nulls_are_gaps_only_with_quality_missing() {
    use datafusion::arrow::array::TimestampMicrosecondArray;
    use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let write = |path: &Path, values: Vec<Option<f64>>, qualities: Vec<&str>| {
        let n = values.len();
        let start = 1_609_459_200_000_000i64; // 2021-01-01T00:00Z
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("stationId", Arc::new(StringArray::from(vec!["koeln"; n]))),
            (
                "parameterId",
                Arc::new(StringArray::from(vec!["water-level-15min"; n])),
            ),
            (
                "timestamp",
                Arc::new(
                    TimestampMicrosecondArray::from_iter_values(
                        (0..n as i64).map(|i| start + i * 900_000_000),
                    )
                    .with_timezone("UTC"),
                ),
            ),
            ("value", Arc::new(Float64Array::from(values))),
            ("quality", Arc::new(StringArray::from(qualities))),
        ];
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let file = std::fs::File::create(path).unwrap();
        let mut w =
            datafusion::parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    };
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.parquet");
    write(
        &good,
        vec![Some(1.5), None, Some(2.5)],
        vec!["good", "missing", "good"],
    );
    let out = dir.path().join("dataset");
    let r = hydro(&["import"], &out, &good);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["counts"]["missing"], 1);

    let bad = dir.path().join("bad.parquet");
    write(
        &bad,
        vec![None, Some(3.0), None],
        vec!["good", "missing", "missing"],
    );
    let refused = dir.path().join("refused");
    let r = hydro(&["import"], &refused, &bad);
    assert!(!r.status.success());
    let said = String::from_utf8_lossy(&r.stderr);
    assert!(said.contains("bad.parquet:1: value is required (a gap is an empty value with quality missing, not good)"), "{said}");
    assert!(
        said.contains("bad.parquet:2: value: '3' has quality missing"),
        "{said}"
    );
    assert!(!said.contains("bad.parquet:3"), "{said}");
    assert!(!refused.join("manifest.json").exists(), "nothing published");
}
