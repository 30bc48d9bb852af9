//! The streaming aggregator against DataFusion's plan of the same aggregate
//! (`Dataset::aggregate_reference`): every statistic, sub-day, day, month and (hydrological)
//! year buckets, zones with and without DST, a window that cuts months, and a quality filter;
//! buckets summed from daily rollups as well as from raw values.

use crate::Dataset;
use crate::model::ids::Series;
use crate::model::zone::Zone;
use crate::query::Window;
use crate::query::aggregate::calendar::Interval;
use crate::query::aggregate::statistic::Statistic;
use crate::query::aggregate::{AggregateQuery, AggregateSpec, BucketColumn, SeriesToAggregate};
use crate::storage::Store;
use crate::write::generate::{GenerateOptions, generate};
use chrono::NaiveDate;
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type, TimestampMicrosecondType};
use std::sync::Arc;

const HOUR: i64 = 3_600_000_000;

fn micros(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .timestamp_micros()
}

/// Column `name` of `batches` as numbers (times and counts too), nulls as `None`.
fn column(batches: &[RecordBatch], name: &str) -> Vec<Option<f64>> {
    let mut out = Vec::new();
    for b in batches {
        let c = b
            .column_by_name(name)
            .unwrap_or_else(|| panic!("no {name}"));
        for i in 0..c.len() {
            out.push(c.is_valid(i).then(|| match c.data_type() {
                DataType::Float64 => c.as_primitive::<Float64Type>().value(i),
                DataType::Int64 => c.as_primitive::<Int64Type>().value(i) as f64,
                DataType::Timestamp(..) => {
                    c.as_primitive::<TimestampMicrosecondType>().value(i) as f64
                }
                other => panic!("{name} is {other}"),
            }));
        }
    }
    out
}

/// Compares the aggregator's answer to `q` with the reference plan's, column by column.
async fn agree(dataset: &Dataset, q: &AggregateQuery, label: &str) -> usize {
    let ours = dataset.aggregate(q).await.unwrap();
    let reference = dataset.aggregate_reference(q).await.unwrap();
    let ours = [ours.batch];
    let mut names = vec!["count".to_owned()];
    if q.spec.interval.is_some() {
        names.push("timestamp".to_owned());
    }
    names.extend(q.spec.statistics.iter().map(Statistic::to_string));
    let rows = column(&ours, "count").len();
    // Without an interval the reference has one row even for no values; the aggregator none.
    let theirs_rows = column(&reference, "count");
    if rows == 0 {
        assert!(theirs_rows.iter().all(|c| *c == Some(0.0)), "{label}");
        return 0;
    }
    // The reference groups the values: it has no bucket wholly in a gap, which the aggregator
    // answers with count 0 and no statistics.
    let counts = column(&ours, "count");
    let held: Vec<usize> = (0..rows).filter(|&i| counts[i] != Some(0.0)).collect();
    for name in names.iter().filter(|n| *n != "count" && *n != "timestamp") {
        let values = column(&ours, name);
        for i in (0..rows).filter(|i| !held.contains(i)) {
            assert_eq!(values[i], None, "{label}: {name} of an empty bucket");
        }
    }
    for name in names {
        let a: Vec<Option<f64>> = {
            let all = column(&ours, &name);
            held.iter().map(|&i| all[i]).collect()
        };
        let b = column(&reference, &name);
        assert_eq!(a.len(), b.len(), "{label}: rows of {name}");
        let percentile = name.starts_with('p') || name == "median";
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            let (Some(x), Some(y)) = (x, y) else {
                assert_eq!(x, y, "{label}: {name} row {i}");
                continue;
            };
            // Sums in another order differ in the last bits; DataFusion rounds the weight of a
            // percentile's interpolation to 1e-6.
            let tolerance = if percentile { 1e-5 } else { 1e-9 } * x.abs().max(1.0);
            assert!(
                (x - y).abs() <= tolerance,
                "{label}: {name} row {i}: {x} vs {y}"
            );
        }
    }
    rows
}

#[tokio::test]
async fn the_aggregator_agrees_with_datafusion() {
    let dir = tempfile::tempdir().unwrap();
    let opts = GenerateOptions {
        stations: 2,
        years: 2,
        interval_minutes: 15,
        seed: 7,
        start: NaiveDate::from_ymd_opt(2023, 1, 1).unwrap(),
        ..GenerateOptions::default()
    };
    generate(
        Store::dir(dir.path()).unwrap().object_store(),
        &opts,
        |_, _| {},
    )
    .await
    .unwrap();
    let dataset = Dataset::open_dir(dir.path()).await.unwrap();
    let station = &dataset.catalog.stations()[0];
    let parameter = dataset.catalog.parameters(&station.id)[0].clone();
    let series: Series = (station.id.clone(), parameter.id.clone());
    let statistics: Vec<Statistic> = [
        "mean", "min", "max", "sum", "count", "first", "last", "median", "p1", "p10", "p90",
        "minTime", "maxTime",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    // A window that cuts months at both ends and holds both DST changes of two years.
    let window = Window::Between {
        from: Some(micros("2023-01-14T05:00:00Z")),
        to: Some(micros("2024-11-20T17:45:00Z")),
    };
    let cases: Vec<(Option<Interval>, &str, u32)> = vec![
        (Some(Interval::Fixed(HOUR)), "UTC", 1),
        (Some(Interval::Fixed(3 * HOUR)), "Europe/Berlin", 1),
        (Some(Interval::Day), "Europe/Berlin", 1),
        (Some(Interval::Day), "America/New_York", 1),
        (Some(Interval::Day), "+05:30", 1),
        (Some(Interval::Months(1)), "Europe/Berlin", 1),
        (Some(Interval::Months(3)), "America/New_York", 10),
        (Some(Interval::Months(12)), "Europe/Berlin", 11),
        (Some(Interval::Months(12)), "UTC", 1),
        (Some(Interval::Day), "UTC", 1),
        (Some(Interval::Months(1)), "+00:00", 1),
        (Some(Interval::Months(6)), "+05:30", 4),
        (None, "UTC", 1),
    ];
    // Without the statistics that rank values, buckets of days and longer are summed from
    // the daily rollups (in zones at UTC+00:00, and quarters and years in any).
    let summable: Vec<Statistic> = statistics
        .iter()
        .copied()
        .filter(|s| !matches!(s, Statistic::Median | Statistic::Percentile(_)))
        .collect();
    let mut buckets = 0;
    for (interval, zone, year_start) in cases {
        for (statistics, qualities) in [
            (&statistics, None),
            (&statistics, Some(vec!["good".to_owned()])),
            (&summable, None),
        ] {
            let spec = AggregateSpec {
                statistics: statistics.clone(),
                interval,
                zone: Zone::parse(zone).unwrap(),
                year_start,
                min_coverage: 0.0,
                qualities: qualities.map(Arc::from),
            };
            let q = AggregateQuery {
                series: SeriesToAggregate {
                    series: series.clone(),
                    step: Some(15 * 60_000_000),
                    total: false,
                },
                window,
                columns: BucketColumn::all(&spec),
                spec,
                sort: Vec::new(),
                offset: 0,
                limit: None,
            };
            let label = format!(
                "{interval:?} in {zone} from month {year_start}, {:?}",
                q.spec.qualities
            );
            buckets += agree(&dataset, &q, &label).await;
        }
    }
    // Every case had buckets to compare (the quality filter keeps some values).
    assert!(buckets > 40_000, "{buckets} buckets compared");
}
