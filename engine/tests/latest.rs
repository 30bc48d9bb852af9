//! Newest values carried from one version to the next: an append that touches one series
//! leaves every other series' newest value to be taken over, and that series' to be read anew.

use chrono::NaiveDate;
use hydro_engine::Dataset;
use hydro_engine::model::ids::Series;
use hydro_engine::storage::Store;
use hydro_engine::write::generate::{GenerateOptions, generate};
use hydro_engine::write::import::{ImportInput, ImportOptions, import};

#[tokio::test]
async fn an_append_carries_the_newest_values_of_the_series_it_did_not_touch() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let opts = GenerateOptions {
        stations: 3,
        years: 1,
        interval_minutes: 60,
        seed: 11,
        start: NaiveDate::from_ymd_opt(2021, 1, 1).unwrap(),
        ..GenerateOptions::default()
    };
    generate(Store::dir(&root).unwrap().object_store(), &opts, |_, _| {})
        .await
        .unwrap();
    let before = Dataset::open_dir(&root).await.unwrap();
    let all: Vec<Series> = before
        .catalog
        .stations()
        .iter()
        .flat_map(|s| {
            before
                .catalog
                .parameters(&s.id)
                .iter()
                .map(|p| (s.id.clone(), p.id.clone()))
        })
        .collect();
    assert!(all.len() > 3);
    let old = before.latest(&all).await.unwrap();
    assert!(old.iter().all(Option::is_some));

    // One value after the end of the first series: the append writes one new station-month.
    let (station, parameter) = &all[0];
    let values = dir.path().join("append.csv");
    std::fs::write(
        &values,
        format!(
            "stationId,parameterId,timestamp,value,quality\n\
             {station},{parameter},2022-01-05T00:00:00+01:00,123.5,good\n"
        ),
    )
    .unwrap();
    let input = ImportInput {
        stations: None,
        parameters: None,
        characteristics: None,
        values: vec![values],
        append: true,
    };
    let options = ImportOptions {
        spill_dir: dir.path().to_path_buf(),
        ..ImportOptions::default()
    };
    import(
        Store::dir(&root).unwrap().object_store(),
        &input,
        &options,
        Default::default(),
    )
    .await
    .unwrap();

    let after = Dataset::open_dir(&root).await.unwrap();
    assert_eq!(after.carry_latest(&before), all.len() - 1);
    let new = after.latest(&all).await.unwrap();
    let appended = new[0].as_ref().unwrap();
    assert_eq!(appended.value, Some(123.5));
    assert_eq!(
        appended.timestamp,
        chrono::DateTime::parse_from_rfc3339("2022-01-04T23:00:00Z")
            .unwrap()
            .timestamp_micros()
    );
    assert_eq!(new[1..], old[1..]);
}
