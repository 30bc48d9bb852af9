//! Daily rollups through the life of a dataset: written by a generate, rebuilt for the months an
//! append touches and for those only, in parts of years so that an append rewrites the years
//! it wrote, kept by a compaction, agreeing with the raw values all along, and small beside
//! them.

use crate::dataset::read_published;
use crate::dataset::rollup_years::read_part_years;
use crate::dataset::rollups::{DayRow, RollupFile, by_station, decode_rollups};
use crate::model::Characteristic;
use crate::model::ids::{ParameterId, StationId};
use crate::model::month::Month;
use crate::model::zone::Zone;
use crate::query::Window;
use crate::query::aggregate::calendar::Interval;
use crate::query::aggregate::{AggregateQuery, AggregateSpec, BucketColumn, SeriesToAggregate};
use crate::storage::Store;
use crate::write::compact::compact;
use crate::write::derived::{DerivedChange, is_derived_id};
use crate::write::generate::{GenerateOptions, generate};
use crate::write::import::{ImportInput, ImportMode, ImportOptions, import};
use crate::{Dataset, EngineError};
use chrono::NaiveDate;
use std::collections::HashMap;
use std::path::Path;

/// Each station's parts, which the rollups table lists in station order (whichever station's
/// rollups were done first).
async fn rollups_of(root: &Path) -> HashMap<StationId, Vec<RollupFile>> {
    let store = Store::dir(root).unwrap().object_store();
    let (published, _) = read_published(&store).await.unwrap().unwrap();
    assert!(
        published
            .rollups
            .is_sorted_by(|a, b| a.station <= b.station),
        "{:?}",
        published.rollups
    );
    by_station(published.rollups)
}

/// The rows of a station's parts, by parameter and day.
fn rows(root: &Path, parts: &[RollupFile]) -> Vec<DayRow> {
    let mut rows: Vec<DayRow> = parts
        .iter()
        .flat_map(|p| {
            let bytes = std::fs::read(root.join(p.path())).unwrap();
            decode_rollups(&p.path(), bytes.into(), None).unwrap()
        })
        .collect();
    rows.sort_by(|a, b| (&a.parameter, a.day).cmp(&(&b.parameter, b.day)));
    rows
}

/// The UTC years of a station's parts.
fn years(parts: &[RollupFile]) -> Vec<(i32, i32)> {
    parts.iter().map(|p| p.years().unwrap()).collect()
}

/// Appends `rows` (`station,parameter,timestamp,value`) to the dataset at `root`.
async fn append(root: &Path, rows: &[(&StationId, &ParameterId, &str, f64)]) {
    try_append(root, rows).await.unwrap();
}

async fn try_append(
    root: &Path,
    rows: &[(&StationId, &ParameterId, &str, f64)],
) -> crate::Result<()> {
    let csv = root.join("append.csv");
    let mut text = String::from("stationId,parameterId,timestamp,value,quality\n");
    for (station, parameter, at, value) in rows {
        text.push_str(&format!("{station},{parameter},{at},{value},good\n"));
    }
    std::fs::write(&csv, text).unwrap();
    let input = ImportInput {
        stations: None,
        parameters: None,
        characteristics: None,
        values: vec![csv],
        mode: ImportMode::Append,
        ..ImportInput::default()
    };
    let options = ImportOptions {
        spill_dir: root.to_path_buf(),
        ..ImportOptions::default()
    };
    let store = Store::dir(root).unwrap().object_store();
    import(store, &input, &options, Default::default()).await?;
    Ok(())
}

/// The derived characteristic values of `station`.
async fn derived_of(root: &Path, station: &StationId) -> Vec<Characteristic> {
    let dataset = Dataset::open_dir(root).await.unwrap();
    dataset
        .catalog
        .characteristics(station)
        .iter()
        .filter(|c| is_derived_id(c.id.as_str()))
        .cloned()
        .collect()
}

/// Yearly and quarterly statistics of a series, summed from rollups (the statistics that do
/// not rank values) and from raw values (with `p50` beside them, which ranks).
async fn both_paths(dataset: &Dataset, series: (&StationId, &ParameterId)) -> usize {
    paths_agree(
        dataset,
        series,
        &[
            (Interval::Months(12), "+01:00"),
            (Interval::Months(3), "UTC"),
        ],
    )
    .await
}

/// Statistics of a series on each grid of `grids`, from rollups and from raw values.
async fn paths_agree(
    dataset: &Dataset,
    series: (&StationId, &ParameterId),
    grids: &[(Interval, &str)],
) -> usize {
    let mut compared = 0;
    for &(interval, zone) in grids {
        let q = |statistics: &[&str]| {
            let spec = AggregateSpec {
                statistics: statistics.iter().map(|s| s.parse().unwrap()).collect(),
                interval: Some(interval),
                zone: Zone::parse(zone).unwrap(),
                year_start: 11,
                min_coverage: 0.0,
                qualities: None,
            };
            AggregateQuery {
                series: SeriesToAggregate {
                    series: (series.0.clone(), series.1.clone()),
                    step: Some(3_600_000_000),
                    total: false,
                },
                window: Window::Between {
                    from: None,
                    to: None,
                },
                columns: BucketColumn::all(&spec),
                spec,
                sort: Vec::new(),
                offset: 0,
                limit: None,
            }
        };
        let names = [
            "mean", "min", "max", "sum", "count", "first", "last", "minTime", "maxTime",
        ];
        let rolled = dataset.aggregate(&q(&names)).await.unwrap().batch;
        let mut with_rank = names.to_vec();
        with_rank.push("p50");
        let raw = dataset.aggregate(&q(&with_rank)).await.unwrap().batch;
        assert!(rolled.num_rows() > 1);
        for name in names.iter().chain(&["timestamp", "coverage"]) {
            let (a, b) = (
                rolled.column_by_name(name).unwrap(),
                raw.column_by_name(name).unwrap(),
            );
            let cast = |c| {
                datafusion::arrow::compute::cast(
                    c,
                    &datafusion::arrow::datatypes::DataType::Float64,
                )
                .unwrap()
            };
            let (a, b) = (cast(a), cast(b));
            let (a, b) = (
                a.as_any()
                    .downcast_ref::<datafusion::arrow::array::Float64Array>()
                    .unwrap(),
                b.as_any()
                    .downcast_ref::<datafusion::arrow::array::Float64Array>()
                    .unwrap(),
            );
            assert_eq!(a.len(), b.len(), "{name}");
            for (x, y) in a.iter().zip(b.iter()) {
                // A bucket wholly in a gap has no statistics on either path.
                let (Some(x), Some(y)) = (x, y) else {
                    assert_eq!(x, y, "{interval} in {zone}: {name}");
                    continue;
                };
                assert!(
                    (x - y).abs() <= 1e-12 * x.abs().max(1.0),
                    "{interval} in {zone}: {name} {x} vs {y}"
                );
                compared += 1;
            }
        }
    }
    compared
}

#[tokio::test]
async fn rollups_follow_every_publish_and_agree_with_the_values() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let opts = GenerateOptions {
        stations: 3,
        years: 2,
        interval_minutes: 60,
        seed: 13,
        start: NaiveDate::from_ymd_opt(2022, 1, 1).unwrap(),
        ..GenerateOptions::default()
    };
    generate(Store::dir(&root).unwrap().object_store(), &opts, |_, _| {})
        .await
        .unwrap();
    let before = rollups_of(&root).await;
    let dataset = Dataset::open_dir(&root).await.unwrap();
    assert_eq!(
        before.len(),
        dataset.catalog.stations().len(),
        "rollups for every station"
    );
    assert!(
        before.values().all(|parts| years(parts) == [(2022, 2023)]),
        "a generated station's rollups are one part: {before:?}"
    );

    // Small beside the values: under 30 % of their bytes, even for hourly values of two years,
    // where a station's part (2 × 730 rows) is mostly its footer: 50 KB, of which 1.2 KB are
    // its years (146 688 bytes of rollups without them, 25.0 % of the values).
    let bytes_under = |prefix: &str| -> u64 {
        walk(&root.join(prefix))
            .iter()
            .map(|p| p.metadata().unwrap().len())
            .sum()
    };
    let (values, rolled) = (bytes_under("values"), bytes_under("rollups"));
    assert!(
        rolled * 10 < values * 3,
        "rollups {rolled} bytes, values {values}"
    );

    let station = dataset.catalog.stations()[0].id.clone();
    let parameter = dataset.catalog.parameters(&station)[0].id.clone();
    assert!(both_paths(&dataset, (&station, &parameter)).await > 20);

    // A correction in one month and a new value in a new month (and year).
    append(
        &root,
        &[
            (&station, &parameter, "2022-06-15T12:00:00Z", 99999.0),
            (&station, &parameter, "2024-01-03T00:00:00Z", 1.5),
        ],
    )
    .await;
    let after = rollups_of(&root).await;
    for (s, parts) in &after {
        if *s != station {
            assert_eq!(
                before.get(s),
                Some(parts),
                "a station the append did not touch"
            );
        }
    }
    // Its part rewritten, as two: the last year on its own.
    assert_eq!(years(&after[&station]), [(2022, 2023), (2024, 2024)]);
    let (old, new) = (
        rows(&root, &before[&station]),
        rows(&root, &after[&station]),
    );
    assert!(
        after[&station]
            .iter()
            .all(|p| p.generation > before[&station][0].generation)
    );
    let touched: [Month; 2] = ["2022-06".parse().unwrap(), "2024-01".parse().unwrap()];
    let untouched = |rows: &[DayRow]| -> Vec<DayRow> {
        rows.iter()
            .filter(|r| !touched.contains(&r.month()))
            .cloned()
            .collect()
    };
    assert_eq!(
        untouched(&old),
        untouched(&new),
        "rows of other months as they were"
    );
    let corrected = new
        .iter()
        .find(|r| {
            r.parameter == parameter
                && r.month() == touched[0]
                && r.day == micros("2022-06-15T00:00:00Z")
        })
        .unwrap();
    assert_eq!(
        (corrected.max, corrected.max_time),
        (99999.0, micros("2022-06-15T12:00:00Z"))
    );
    assert!(
        new.iter()
            .any(|r| r.parameter == parameter && r.month() == touched[1])
    );

    let dataset = Dataset::open_dir(&root).await.unwrap();
    both_paths(&dataset, (&station, &parameter)).await;

    // Appends within the last year rewrite its part alone; one in a new year adds a part.
    let [older, _] = after[&station].as_slice() else {
        panic!("two parts")
    };
    append(
        &root,
        &[(&station, &parameter, "2024-01-04T06:00:00Z", 2.5)],
    )
    .await;
    let parts = rollups_of(&root).await.remove(&station).unwrap();
    assert_eq!(years(&parts), [(2022, 2023), (2024, 2024)]);
    assert_eq!(&parts[0], older, "the years before kept as they were");
    append(
        &root,
        &[(&station, &parameter, "2025-02-01T00:00:00Z", 3.5)],
    )
    .await;
    let parts = rollups_of(&root).await.remove(&station).unwrap();
    assert_eq!(years(&parts), [(2022, 2023), (2024, 2024), (2025, 2025)]);
    assert_eq!(&parts[0], older);
    let new_days: Vec<i64> = rows(&root, &parts)
        .iter()
        .filter(|r| r.parameter == parameter && r.day >= micros("2024-01-01T00:00:00Z"))
        .map(|r| r.day)
        .collect();
    assert_eq!(
        new_days,
        [
            micros("2024-01-03T00:00:00Z"),
            micros("2024-01-04T00:00:00Z"),
            micros("2025-02-01T00:00:00Z")
        ]
    );
    // A correction of an older year rewrites that year's part alone, as one.
    append(
        &root,
        &[(&station, &parameter, "2023-03-01T00:00:00Z", -7.0)],
    )
    .await;
    let after = rollups_of(&root).await;
    assert_eq!(
        years(&after[&station]),
        [(2022, 2023), (2024, 2024), (2025, 2025)]
    );
    assert_ne!(&after[&station][0], older);
    assert_eq!(after[&station][1..], parts[1..]);
    let dataset = Dataset::open_dir(&root).await.unwrap();
    assert!(both_paths(&dataset, (&station, &parameter)).await > 20);

    // A compaction moves value files into packs, and the rollups stay as they are.
    let compacted = compact(
        Store::dir(&root).unwrap().object_store(),
        "2024-01".parse().unwrap(),
        |_, _| {},
    )
    .await
    .unwrap();
    assert!(compacted.months > 0);
    assert_eq!(compacted.rollups_joined, 0, "one part ends before 2024");
    assert_eq!(rollups_of(&root).await, after);
    let dataset = Dataset::open_dir(&root).await.unwrap();
    both_paths(&dataset, (&station, &parameter)).await;
}

/// A kept part whose footer's years cannot be read is read whole and written anew, and the
/// derived values are those of an undamaged copy; years naming something that is no parameter
/// id fail the append, naming the part, and publish nothing.
#[tokio::test]
async fn a_kept_parts_damaged_years_are_read_from_its_rows_or_fail_the_append() {
    let dir = tempfile::tempdir().unwrap();
    let (damaged, intact) = (dir.path().join("damaged"), dir.path().join("intact"));
    let opts = GenerateOptions {
        stations: 2,
        years: 3,
        interval_minutes: 60,
        seed: 5,
        start: NaiveDate::from_ymd_opt(2022, 1, 1).unwrap(),
        derived: DerivedChange {
            years: Some(1),
            ..DerivedChange::default()
        },
    };
    for root in [&damaged, &intact] {
        generate(Store::dir(root).unwrap().object_store(), &opts, |_, _| {})
            .await
            .unwrap();
    }
    let dataset = Dataset::open_dir(&damaged).await.unwrap();
    let station = dataset.catalog.stations()[0].id.clone();
    let parameter = dataset.catalog.parameters(&station)[0].id.clone();
    let value = |at: &'static str| [(&station, &parameter, at, 4.25)];
    for root in [&damaged, &intact] {
        append(root, &value("2024-06-01T00:00:00Z")).await;
    }
    let kept = rollups_of(&damaged).await.remove(&station).unwrap();
    assert_eq!(years(&kept), [(2022, 2023), (2024, 2024)]);
    let kept = kept[0].clone();

    // Replaces the byte `skip` bytes into `marker` in the footer of `part` (its size stays).
    let damage = |part: &RollupFile, marker: &str, skip: usize, with: u8| {
        let path = damaged.join(part.path());
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes
            .windows(marker.len())
            .position(|w| w == marker.as_bytes())
            .expect("the years in the footer");
        bytes[at + skip] = with;
        std::fs::write(&path, bytes).unwrap();
    };
    // Not JSON: `{"yearStart"…` starts with `!`.
    damage(&kept, "{\"yearStart\"", 0, b'!');
    for root in [&damaged, &intact] {
        append(root, &value("2024-06-02T00:00:00Z")).await;
    }
    let rewritten = rollups_of(&damaged).await.remove(&station).unwrap();
    assert_eq!(years(&rewritten), [(2022, 2023), (2024, 2024)]);
    assert!(rewritten[0].generation > kept.generation, "written anew");
    let store = Store::dir(&damaged).unwrap().object_store();
    assert!(
        read_part_years(store.as_ref(), &rewritten[0])
            .await
            .unwrap()
            .is_some(),
        "with its years"
    );
    assert_eq!(
        rollups_of(&intact).await[&station][0],
        kept,
        "the undamaged copy's part kept"
    );
    let from_rows = derived_of(&damaged, &station).await;
    assert!(!from_rows.is_empty());
    assert_eq!(from_rows, derived_of(&intact, &station).await);

    // Years of a series whose id is not one: `"series":{"!…`.
    let marker = "\"series\":{\"";
    damage(&rewritten[0], marker, marker.len(), b'!');
    let manifest = std::fs::read(damaged.join("manifest.json")).unwrap();
    let error = try_append(&damaged, &value("2024-06-03T00:00:00Z"))
        .await
        .unwrap_err();
    assert!(matches!(error, EngineError::Corrupt { .. }), "{error:?}");
    assert!(
        error.to_string().contains(&rewritten[0].path()),
        "names the part: {error}"
    );
    assert_eq!(
        std::fs::read(damaged.join("manifest.json")).unwrap(),
        manifest,
        "nothing published"
    );
}

/// A compaction joins a station's parts of the years it settles into one, with the same rows
/// and years in its footer, and keeps the derived values; the appends after it keep the
/// joined part, and derive from its years; a compaction with no parts to join and no months
/// publishes nothing.
#[tokio::test]
async fn a_compaction_joins_the_rollup_parts_of_the_years_it_settles() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let opts = GenerateOptions {
        stations: 2,
        years: 2,
        interval_minutes: 60,
        seed: 8,
        start: NaiveDate::from_ymd_opt(2022, 1, 1).unwrap(),
        derived: DerivedChange {
            years: Some(1),
            ..DerivedChange::default()
        },
    };
    generate(Store::dir(&root).unwrap().object_store(), &opts, |_, _| {})
        .await
        .unwrap();
    let dataset = Dataset::open_dir(&root).await.unwrap();
    let station = dataset.catalog.stations()[0].id.clone();
    let parameter = dataset.catalog.parameters(&station)[0].id.clone();
    for at in ["2024-01-05T00:00:00Z", "2025-02-01T00:00:00Z"] {
        append(&root, &[(&station, &parameter, at, 2.0)]).await;
    }
    let before = rollups_of(&root).await;
    assert_eq!(
        years(&before[&station]),
        [(2022, 2023), (2024, 2024), (2025, 2025)]
    );
    let derived_before = derived_of(&root, &station).await;
    assert!(!derived_before.is_empty());

    let compact_before = |month: &str| {
        compact(
            Store::dir(&root).unwrap().object_store(),
            month.parse().unwrap(),
            |_, _| {},
        )
    };
    let compacted = compact_before("2025-01").await.unwrap();
    assert_eq!(compacted.rollups_joined, 1);
    let after = rollups_of(&root).await;
    assert_eq!(years(&after[&station]), [(2022, 2024), (2025, 2025)]);
    assert_eq!(after[&station][1], before[&station][2], "2025 kept");
    for (s, parts) in &after {
        if *s != station {
            assert_eq!(Some(parts), before.get(s), "one part: nothing to join");
        }
    }
    assert_eq!(
        rows(&root, &after[&station]),
        rows(&root, &before[&station])
    );
    let store = Store::dir(&root).unwrap().object_store();
    assert!(
        read_part_years(store.as_ref(), &after[&station][0])
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        derived_of(&root, &station).await,
        derived_before,
        "the derived values as they were"
    );
    let dataset = Dataset::open_dir(&root).await.unwrap();
    assert!(both_paths(&dataset, (&station, &parameter)).await > 20);

    let manifest = std::fs::read(root.join("manifest.json")).unwrap();
    let again = compact_before("2025-01").await.unwrap();
    assert_eq!((again.generation, again.rollups_joined), (None, 0));
    assert_eq!(std::fs::read(root.join("manifest.json")).unwrap(), manifest);

    append(
        &root,
        &[(&station, &parameter, "2025-03-01T00:00:00Z", 3.0)],
    )
    .await;
    let parts = rollups_of(&root).await.remove(&station).unwrap();
    assert_eq!(years(&parts), [(2022, 2024), (2025, 2025)]);
    assert_eq!(parts[0], after[&station][0], "the joined part kept");
    // Derived from the joined part's years (the new value is in an incomplete year).
    let derived_last = derived_of(&root, &station).await;
    assert_eq!(derived_last.len(), derived_before.len());
    for (a, b) in derived_last.iter().zip(&derived_before) {
        assert_eq!((&a.id, a.period), (&b.id, b.period));
        assert!(
            (a.value - b.value).abs() <= 1e-9 * b.value.abs(),
            "{a:?} {b:?}"
        );
    }
}

fn micros(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .timestamp_micros()
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A dataset with a zone of its own keeps rollups of its local days: a day's row starts at its
/// midnight there (23 or 25 hours around a DST change), a day a UTC month's end cuts has a row
/// of each month's values, and daily and monthly aggregates in that zone summed from them
/// agree with the raw values, before and after an append that rewrites one month.
#[tokio::test]
async fn rollups_of_a_dataset_zone_are_its_days() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let berlin = Zone::parse("Europe/Berlin").unwrap();
    let opts = GenerateOptions {
        stations: 2,
        years: 2,
        interval_minutes: 60,
        seed: 17,
        start: NaiveDate::from_ymd_opt(2022, 1, 1).unwrap(),
        derived: DerivedChange {
            zone: Some(berlin),
            ..DerivedChange::default()
        },
    };
    generate(Store::dir(&root).unwrap().object_store(), &opts, |_, _| {})
        .await
        .unwrap();
    let dataset = Dataset::open_dir(&root).await.unwrap();
    assert_eq!(dataset.manifest.rollup_zone(), berlin);
    let station = dataset.catalog.stations()[0].id.clone();
    let parameter = dataset.catalog.parameters(&station)[0].id.clone();
    let parts = rollups_of(&root).await.remove(&station).unwrap();
    let days: Vec<DayRow> = rows(&root, &parts)
        .into_iter()
        .filter(|r| r.parameter == parameter)
        .collect();
    for d in &days {
        assert_eq!(berlin.day_start(berlin.local_date(d.day)), d.day, "{d:?}");
        assert!(d.day <= d.first_time && d.last_time < d.day + 25 * 3_600_000_000);
    }
    // 1 February 2022 (local) starts 31 January 23:00Z: a row of each month's values.
    let feb_1 = micros("2022-01-31T23:00:00Z");
    let cut: Vec<&DayRow> = days.iter().filter(|d| d.day == feb_1).collect();
    assert_eq!(cut.len(), 2, "{cut:?}");
    assert_eq!(cut.iter().map(|d| d.count).sum::<i64>(), 24);
    // The day the clocks go back has 25 hours.
    let long = days
        .iter()
        .filter(|d| d.day == micros("2022-10-29T22:00:00Z"))
        .map(|d| d.count)
        .sum::<i64>();
    assert_eq!(long, 25);
    let grids = [
        (Interval::Day, "Europe/Berlin"),
        (Interval::Months(1), "Europe/Berlin"),
        (Interval::Months(12), "Europe/Berlin"),
        (Interval::Months(3), "UTC"),
    ];
    assert!(paths_agree(&dataset, (&station, &parameter), &grids).await > 100);

    // A correction in the first hour of a local day a month end cuts, and one in another month.
    append(
        &root,
        &[
            (&station, &parameter, "2022-01-31T23:00:00Z", 99999.0),
            (&station, &parameter, "2022-06-15T12:00:00Z", -5.0),
        ],
    )
    .await;
    let dataset = Dataset::open_dir(&root).await.unwrap();
    assert!(paths_agree(&dataset, (&station, &parameter), &grids).await > 100);
    let parts = rollups_of(&root).await.remove(&station).unwrap();
    let cut: Vec<DayRow> = rows(&root, &parts)
        .into_iter()
        .filter(|r| r.parameter == parameter && r.day == feb_1)
        .collect();
    assert_eq!(cut.iter().map(|d| d.count).sum::<i64>(), 24, "{cut:?}");
    assert!(cut.iter().any(|d| d.max == 99999.0));
}
