//! Engine hot paths, each beside a reference in the same run:
//! - scan of one year of one series (15 min) vs reading the same Parquet files whole;
//! - `recent=1` on a 10-year series vs on a 1-year series (cost must not grow with the archive);
//! - `bbox` and `near` over 100 000 stations: R-tree vs brute force;
//! - daily mean, min and max (and daily p90) of a 10-year 15-minute series: the streaming
//!   aggregator vs DataFusion's plan of the same aggregate (its test oracle).
//!
//! `cargo bench --bench engine`

use chrono::NaiveDate;
use criterion::{Criterion, criterion_group, criterion_main};
use futures::TryStreamExt;
use hydro_engine::Dataset;
use hydro_engine::Interval;
use hydro_engine::Store;
use hydro_engine::Zone;
use hydro_engine::{AggregateQuery, AggregateSpec, BucketColumn, SeriesToAggregate};
use hydro_engine::{BBox, Near, SpatialIndex};
use hydro_engine::{GenerateOptions, generate};
use hydro_engine::{ParameterId, StationId};
use hydro_engine::{ReadAhead, ValueColumn, ValuesQuery, Window};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::hint::black_box;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn dataset(rt: &tokio::runtime::Runtime, years: u32) -> (tempfile::TempDir, Dataset) {
    let dir = tempfile::tempdir().unwrap();
    let opts = GenerateOptions {
        stations: 1,
        years,
        interval_minutes: 15,
        seed: 3,
        start: NaiveDate::from_ymd_opt(2015, 1, 1).unwrap(),
        ..GenerateOptions::default()
    };
    rt.block_on(generate(
        Store::dir(dir.path()).unwrap().object_store(),
        &opts,
        |_, _| {},
    ))
    .unwrap();
    let ds = rt.block_on(Dataset::open_dir(dir.path())).unwrap();
    (dir, ds)
}

fn rows(rt: &tokio::runtime::Runtime, ds: &Dataset, q: &ValuesQuery) -> usize {
    rt.block_on(async {
        let plan = ds.plan_values(q, ReadAhead::Monthly).await.unwrap();
        let batches: Vec<_> = plan.stream.try_collect().await.unwrap();
        batches.iter().map(|b| b.num_rows()).sum()
    })
}

fn query(station: StationId, window: Window) -> ValuesQuery {
    ValuesQuery {
        station,
        parameter: "discharge-15min".parse::<ParameterId>().unwrap(),
        window,
        sort: vec![],
        offset: 0,
        limit: None,
        columns: ValueColumn::ALL.to_vec(),
        need_total: false,
        qualities: None,
    }
}

fn series(c: &mut Criterion) {
    let rt = runtime();
    let (dir10, ten) = dataset(&rt, 10);
    let (_dir1, one) = dataset(&rt, 1);
    let station = ten.catalog.stations()[0].id.clone();
    let from = chrono::DateTime::parse_from_rfc3339("2018-01-01T00:00:00Z")
        .unwrap()
        .timestamp_micros();
    let to = chrono::DateTime::parse_from_rfc3339("2018-12-31T23:45:00Z")
        .unwrap()
        .timestamp_micros();
    let year = query(
        station.clone(),
        Window::Between {
            from: Some(from),
            to: Some(to),
        },
    );
    assert!(
        rows(&rt, &ten, &year) > 34_000,
        "a year of 15-minute values, less gaps"
    );
    let files: Vec<std::path::PathBuf> = rt
        .block_on(ten.value_files(&station))
        .expect("the station's files")
        .into_iter()
        .filter(|f| f.month.year() == 2018)
        .map(|f| dir10.path().join(f.object()))
        .collect();
    let mut g = c.benchmark_group("series");
    g.sample_size(20);
    g.bench_function("year_of_one_series/planner", |b| {
        b.iter(|| black_box(rows(&rt, &ten, &year)))
    });
    g.bench_function("year_of_one_series/read_files_whole", |b| {
        b.iter(|| {
            let mut n = 0;
            for f in &files {
                let bytes = bytes::Bytes::from(std::fs::read(f).unwrap());
                let r = datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap().build().unwrap();
                n += r.map(|b| b.unwrap().num_rows()).sum::<usize>();
            }
            black_box(n)
        })
    });
    let recent10 = query(station, Window::Recent(1));
    let recent1 = query(one.catalog.stations()[0].id.clone(), Window::Recent(1));
    g.bench_function("recent_1/10_years", |b| {
        b.iter(|| black_box(rows(&rt, &ten, &recent10)))
    });
    g.bench_function("recent_1/1_year", |b| {
        b.iter(|| black_box(rows(&rt, &one, &recent1)))
    });
    g.finish();
}

fn spatial(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(1);
    let points: Vec<(f64, f64)> = (0..100_000)
        .map(|_| (rng.random_range(5.9..15.0), rng.random_range(47.3..55.0)))
        .collect();
    let index = SpatialIndex::new(points.iter().copied());
    let bbox = BBox {
        min_lon: 9.0,
        min_lat: 50.0,
        max_lon: 9.5,
        max_lat: 50.4,
    };
    let near = Near {
        lon: 10.0,
        lat: 51.0,
        radius_km: 25.0,
    };
    assert_eq!(
        index.within_bbox(&bbox).len(),
        points.iter().filter(|p| bbox.contains(p.0, p.1)).count()
    );
    let mut g = c.benchmark_group("stations_100k");
    g.bench_function("bbox/rtree", |b| {
        b.iter(|| black_box(index.within_bbox(&bbox).len()))
    });
    g.bench_function("bbox/brute_force", |b| {
        b.iter(|| black_box(points.iter().filter(|p| bbox.contains(p.0, p.1)).count()))
    });
    g.bench_function("near/rtree", |b| {
        b.iter(|| black_box(index.within_radius(&near).len()))
    });
    g.bench_function("near/brute_force", |b| {
        b.iter(|| {
            black_box(
                points
                    .iter()
                    .filter(|p| near.distance_km(p.0, p.1) <= near.radius_km)
                    .count(),
            )
        })
    });
    g.finish();
}

fn aggregates(c: &mut Criterion) {
    let rt = runtime();
    let (_dir, ten) = dataset(&rt, 10);
    let station = ten.catalog.stations()[0].id.clone();
    let parameter = ten.catalog.parameters(&station)[0].id.clone();
    let daily = |statistics: &[&str]| {
        let spec = AggregateSpec {
            statistics: statistics.iter().map(|s| s.parse().unwrap()).collect(),
            interval: Some(Interval::Day),
            zone: Zone::parse("Europe/Berlin").unwrap(),
            year_start: 1,
            min_coverage: 0.0,
            qualities: None,
        };
        AggregateQuery {
            series: SeriesToAggregate {
                series: (station.clone(), parameter.clone()),
                step: Some(15 * 60_000_000),
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
    let mut g = c.benchmark_group("aggregate_10_years_daily");
    g.sample_size(10);
    for (name, q) in [
        ("mean_min_max", daily(&["mean", "min", "max"])),
        ("p90", daily(&["p90"])),
    ] {
        let ours = rt.block_on(ten.aggregate(&q)).unwrap().total;
        let theirs: usize = rt
            .block_on(ten.aggregate_reference(&q))
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum();
        assert!(
            ours > 3_600 && ours as usize == theirs,
            "{ours} vs {theirs} days"
        );
        g.bench_function(format!("{name}/streaming"), |b| {
            b.iter(|| black_box(rt.block_on(ten.aggregate(&q)).unwrap().total))
        });
        g.bench_function(format!("{name}/datafusion"), |b| {
            b.iter(|| black_box(rt.block_on(ten.aggregate_reference(&q)).unwrap().len()))
        });
    }
    g.finish();
}

criterion_group!(benches, series, spatial, aggregates);
criterion_main!(benches);
