//! Newest values as a publish gives them: a version opened knows every series' newest value
//! without reading a value file, an append keeps those of the series it did not touch and
//! gives the new one, a compaction keeps them, and a series whose newest value the publish
//! could not know is found in the values; `recent=1` of a series that ends before its
//! station's last year finds its newest month whatever years of the station were decoded.

use crate::Dataset;
use crate::model::Latest;
use crate::model::ids::Series;
use crate::query::spec::{ReadAhead, ValuesQuery, Window};
use crate::query::{AnswerPart, ManyQuery};
use crate::storage::Store;
use crate::write::compact::compact;
use crate::write::generate::{GenerateOptions, generate};
use crate::write::import::{ImportInput, ImportMode, ImportOptions, import};
use chrono::NaiveDate;
use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{Float64Type, Int32Type, TimestampMicrosecondType};
use futures::TryStreamExt;
use std::path::{Path, PathBuf};

/// Every series of `dataset`.
fn all_series(dataset: &Dataset) -> Vec<Series> {
    dataset
        .catalog
        .stations()
        .iter()
        .flat_map(|s| {
            dataset
                .catalog
                .parameters(&s.id)
                .iter()
                .map(|p| (s.id.clone(), p.id.clone()))
        })
        .collect()
}

/// The newest row of `series` as the planner reads it (`recent=1`; the generator writes no
/// recorded gaps, so it has a value).
async fn newest_row(dataset: &Dataset, (station, parameter): &Series) -> Latest {
    let query = ValuesQuery::of_series(station.clone(), parameter.clone(), Window::Recent(1));
    let plan = dataset
        .plan_values(&query, ReadAhead::Monthly)
        .await
        .unwrap();
    let batches: Vec<_> = plan.stream.try_collect().await.unwrap();
    let batch = batches.iter().find(|b| b.num_rows() == 1).unwrap();
    let quality = batch.column(2).as_dictionary::<Int32Type>();
    let texts = quality.values().as_string::<i32>();
    Latest {
        timestamp: batch
            .column(0)
            .as_primitive::<TimestampMicrosecondType>()
            .value(0),
        value: batch.column(1).as_primitive::<Float64Type>().value(0),
        quality: texts.value(quality.keys().value(0) as usize).into(),
    }
}

/// An archive of 3 stations' hourly values over `years` years from the start of `start`,
/// generated into `dir`/data; returns its path.
async fn generated(dir: &Path, years: u32, start: i32) -> PathBuf {
    let root = dir.join("data");
    let opts = GenerateOptions {
        stations: 3,
        years,
        interval_minutes: 60,
        seed: 11,
        start: NaiveDate::from_ymd_opt(start, 1, 1).unwrap(),
        ..GenerateOptions::default()
    };
    generate(Store::dir(&root).unwrap().object_store(), &opts, |_, _| {})
        .await
        .unwrap();
    root
}

/// Appends `rows` (CSV lines without the header) to the dataset at `root`, with `parameters`
/// (a parameters file) if given.
async fn append(root: &Path, rows: &str, parameters: Option<PathBuf>) {
    let values = root.parent().unwrap().join("append.csv");
    std::fs::write(
        &values,
        format!("stationId,parameterId,timestamp,value,quality\n{rows}"),
    )
    .unwrap();
    let input = ImportInput {
        stations: None,
        parameters,
        characteristics: None,
        values: vec![values],
        mode: ImportMode::Append,
        ..ImportInput::default()
    };
    let options = ImportOptions {
        spill_dir: root.parent().unwrap().to_path_buf(),
        ..ImportOptions::default()
    };
    import(
        Store::dir(root).unwrap().object_store(),
        &input,
        &options,
        Default::default(),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_version_knows_its_newest_values_and_an_append_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = generated(dir.path(), 1, 2021).await;
    let before = Dataset::open_dir(&root).await.unwrap();
    let all = all_series(&before);
    assert!(all.len() > 3);
    // Known at open, before any value file is read, and as the values say.
    assert_eq!(before.newest_values_known(), all.len());
    let old = before.latest(&all).await.unwrap();
    for (series, latest) in all.iter().zip(&old) {
        assert_eq!(latest.as_ref(), Some(&newest_row(&before, series).await));
    }

    // One value after the end of the first series: the append writes one new station-month.
    // It brings every parameter again, as an append with the whole catalog does: what their
    // values say of them (availability, newest value) stays.
    let parameters = dir.path().join("parameters.csv");
    let mut csv = String::from("stationId,id,name,observedProperty,unit,interval\n");
    for (station, parameter) in &all {
        let p = before.catalog.parameter(station, parameter).unwrap();
        let (name, property, unit, interval) =
            (&p.name, &p.observed_property, &p.unit, &p.interval);
        csv.push_str(&format!(
            "{station},{parameter},{name},{property},{unit},{interval}\n"
        ));
    }
    std::fs::write(&parameters, csv).unwrap();
    let (station, parameter) = &all[0];
    append(
        &root,
        &format!("{station},{parameter},2022-01-05T00:00:00+01:00,123.5,good\n"),
        Some(parameters),
    )
    .await;
    let after = Dataset::open_dir(&root).await.unwrap();
    assert_eq!(after.newest_values_known(), all.len());
    assert_eq!(after.carry_latest(&before), 0, "nothing left to carry");
    let new = after.latest(&all).await.unwrap();
    let appended = Latest {
        timestamp: chrono::DateTime::parse_from_rfc3339("2022-01-04T23:00:00Z")
            .unwrap()
            .timestamp_micros(),
        value: 123.5,
        quality: "good".into(),
    };
    assert_eq!(new[0], Some(appended));
    assert_eq!(new[1..], old[1..]);
    for (station, parameter) in &all[1..] {
        assert_eq!(
            after
                .catalog
                .parameter(station, parameter)
                .unwrap()
                .availability,
            before
                .catalog
                .parameter(station, parameter)
                .unwrap()
                .availability
        );
    }

    // That value replaced by a recorded gap: the series' newest value is again the one
    // before, in a month the append carried over, which the publish cannot know without
    // reading it. It is found in the values.
    append(
        &root,
        &format!("{station},{parameter},2022-01-05T00:00:00+01:00,,missing\n"),
        None,
    )
    .await;
    let gap = Dataset::open_dir(&root).await.unwrap();
    assert_eq!(gap.newest_values_known(), all.len() - 1);
    assert_eq!(gap.latest(&all).await.unwrap(), old);

    // A compaction moves the months into station-year files and keeps what was known.
    let compacted = compact(
        Store::dir(&root).unwrap().object_store(),
        "2022-01".parse().unwrap(),
        |_, _| {},
    )
    .await
    .unwrap();
    assert!(compacted.months > 0);
    let compacted = Dataset::open_dir(&root).await.unwrap();
    assert_eq!(compacted.newest_values_known(), all.len() - 1);
    assert_eq!(compacted.latest(&all).await.unwrap(), old);
}

#[tokio::test]
async fn recent_finds_the_newest_month_of_a_series_that_ends_before_its_stations_last_year() {
    let dir = tempfile::tempdir().unwrap();
    let root = generated(dir.path(), 2, 2020).await;
    let all = all_series(&Dataset::open_dir(&root).await.unwrap());
    let (station, p) = all
        .iter()
        .find(|(s, _)| all.iter().filter(|(t, _)| t == s).count() >= 2)
        .expect("a station with two series")
        .clone();
    let q = all
        .iter()
        .find(|(s, x)| *s == station && *x != p)
        .map(|(_, x)| x.clone())
        .unwrap();
    // `p` goes on into 2022, the station's last year; `q` ends with 2021.
    append(
        &root,
        &format!("{station},{p},2022-01-05T00:00:00Z,1.5,good\n"),
        None,
    )
    .await;
    let dataset = Dataset::open_dir(&root).await.unwrap();
    let q_series = (station.clone(), q.clone());
    let known = dataset
        .latest(std::slice::from_ref(&q_series))
        .await
        .unwrap()[0]
        .clone()
        .unwrap();
    assert!(
        known.timestamp >= 1_609_459_200_000_000,
        "in 2021: {known:?}"
    );

    // A window decodes the station's first year; `recent=1` of `p` its last.
    let window = Window::Between {
        from: Some(1_583_020_800_000_000), // 2020-03-01
        to: Some(1_585_699_200_000_000),   // 2020-04-01
    };
    let query = ValuesQuery::of_series(station.clone(), q.clone(), window);
    let plan = dataset
        .plan_values(&query, ReadAhead::Monthly)
        .await
        .unwrap();
    let rows: usize = plan
        .stream
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert!(rows > 0);
    let newest_p = newest_row(&dataset, &(station.clone(), p)).await;
    assert_eq!(newest_p.value, 1.5);
    // `q`'s newest month lies in 2021, a year no request decoded: not in the decoded 2020.
    assert_eq!(newest_row(&dataset, &q_series).await, known);
}

/// `recent=1` of each series as the planner answers it, with the bytes of stations' files
/// it left decoded.
async fn newest_rows(dataset: &Dataset, all: &[Series]) -> (Vec<Latest>, usize) {
    let mut rows = Vec::new();
    for series in all {
        rows.push(newest_row(dataset, series).await);
    }
    (rows, dataset.memory().files_cache)
}

#[tokio::test]
async fn recent_plans_from_the_newest_months_the_publish_listed() {
    let dir = tempfile::tempdir().unwrap();
    let root = generated(dir.path(), 2, 2020).await;
    let dataset = Dataset::open_dir(&root).await.unwrap();
    let all = all_series(&dataset);
    let published: Vec<Latest> = dataset
        .latest(&all)
        .await
        .unwrap()
        .into_iter()
        .map(Option::unwrap)
        .collect();
    // No station's rows of the files table were decoded: the newest months came with the
    // version.
    assert_eq!(newest_rows(&dataset, &all).await, (published.clone(), 0));
    // Nor for every series in one answer.
    let dataset = std::sync::Arc::new(dataset);
    let many = ManyQuery {
        series: all.clone(),
        window: Window::Recent(1),
        columns: Vec::new(),
        offset: 0,
        limit: None,
        need_total: false,
        stored: false,
        qualities: None,
    };
    let parts: Vec<AnswerPart> = dataset
        .plan_many(many, ReadAhead::Monthly)
        .await
        .unwrap()
        .parts
        .try_collect()
        .await
        .unwrap();
    let rows: usize = parts
        .iter()
        .map(|p| match p {
            AnswerPart::Rows(b) => b.num_rows(),
            AnswerPart::Stored(_) => panic!("rows only were asked for"),
        })
        .sum();
    assert_eq!((rows, dataset.memory().files_cache), (all.len(), 0));

    // A version written before the table (its manifest names none) finds them in the files
    // table, decoding the stations' last years.
    let manifest_path = root.join("manifest.json");
    let written = std::fs::read_to_string(&manifest_path).unwrap();
    let mut manifest: serde_json::Value = serde_json::from_str(&written).unwrap();
    let newest = manifest["catalog"]
        .as_object_mut()
        .unwrap()
        .remove("newest")
        .expect("the publish names the newest months' table");
    assert!(root.join(newest.as_str().unwrap()).is_file());
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let older = Dataset::open_dir(&root).await.unwrap();
    let (rows, decoded) = newest_rows(&older, &all).await;
    assert_eq!(rows, published);
    assert!(decoded > 0);
    std::fs::write(&manifest_path, written).unwrap();

    // An append and a compaction list them again: the appended value is the newest of its
    // series, the others' stay, and still nothing is decoded.
    let (station, parameter) = &all[0];
    append(
        &root,
        &format!("{station},{parameter},2022-01-05T00:00:00Z,7.25,good\n"),
        None,
    )
    .await;
    compact(
        Store::dir(&root).unwrap().object_store(),
        "2023-01".parse().unwrap(),
        |_, _| {},
    )
    .await
    .unwrap();
    let compacted = Dataset::open_dir(&root).await.unwrap();
    let (rows, decoded) = newest_rows(&compacted, &all).await;
    assert_eq!(decoded, 0);
    assert_eq!(rows[0].value, 7.25);
    assert_eq!(rows[1..], published[1..]);

    // A damaged table: the version is not opened (a following server stays on the one it
    // serves), and the error names the table.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    let newest = manifest["catalog"]["newest"].as_str().unwrap();
    std::fs::write(root.join(newest), b"PAR1 not a table PAR1").unwrap();
    let Err(e) = Dataset::open_dir(&root).await else {
        panic!("a damaged newest months' table opened");
    };
    assert!(e.to_string().contains(newest), "{e}");
}
