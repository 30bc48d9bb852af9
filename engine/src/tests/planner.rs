//! The planner against a brute-force reading of the same Parquet files, over many random
//! windows, orders and pages; pruning proven from DataFusion's scan metrics.

use crate::Dataset;
use crate::model::duration::IsoDuration;
use crate::model::ids::{ParameterId, StationId};
use crate::model::month::Month;
use crate::query::AnswerPart;
use crate::query::plan::ScanMetrics;
use crate::query::plan::{HowRead, PlannedMonth};
use crate::query::{ReadAhead, SortKey, ValueColumn, ValuesQuery, Window};
use crate::storage::Store;
use crate::write::generate::{GenerateOptions, generate};
use chrono::NaiveDate;
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int32Type, TimestampMicrosecondType};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use futures::{StreamExt, TryStreamExt};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::sync::Arc;

type Row = (i64, f64, String);

struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    dataset: Dataset,
}

async fn fixture(stations: usize, years: u32) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let opts = GenerateOptions {
        stations,
        years,
        interval_minutes: 15,
        seed: 7,
        start: NaiveDate::from_ymd_opt(2021, 1, 1).unwrap(),
        ..GenerateOptions::default()
    };
    generate(Store::dir(&root).unwrap().object_store(), &opts, |_, _| {})
        .await
        .unwrap();
    let dataset = Dataset::open_dir(&root).await.unwrap();
    Fixture {
        _dir: dir,
        root,
        dataset,
    }
}

/// How many value files (station-months) the station has.
async fn files_of(f: &Fixture, station: &StationId) -> usize {
    f.dataset.value_files(station).await.unwrap().len()
}

/// Every row of one series, read file by file with the plain Parquet reader.
async fn brute_force(f: &Fixture, station: &StationId, parameter: &ParameterId) -> Vec<Row> {
    let mut rows = Vec::new();
    for file in f.dataset.value_files(station).await.unwrap() {
        let bytes = bytes::Bytes::from(std::fs::read(f.root.join(file.object())).unwrap());
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            rows.extend(rows_of(&batch.unwrap(), Some(parameter.as_str())));
        }
    }
    rows.sort_by_key(|r| r.0);
    rows
}

fn rows_of(batch: &RecordBatch, parameter: Option<&str>) -> Vec<Row> {
    let ts = batch
        .column_by_name("timestamp")
        .unwrap()
        .as_primitive::<TimestampMicrosecondType>();
    let value = batch
        .column_by_name("value")
        .unwrap()
        .as_primitive::<Float64Type>();
    let quality = batch
        .column_by_name("quality")
        .unwrap()
        .as_dictionary::<Int32Type>();
    let qv = quality.values().as_string::<i32>();
    let params = batch
        .column_by_name("parameter")
        .map(|c| c.as_dictionary::<Int32Type>().clone());
    (0..batch.num_rows())
        .filter(|&i| match (&params, parameter) {
            (Some(p), Some(want)) => {
                p.values()
                    .as_string::<i32>()
                    .value(p.keys().value(i) as usize)
                    == want
            }
            _ => true,
        })
        .map(|i| {
            (
                ts.value(i),
                value.value(i),
                qv.value(quality.keys().value(i) as usize).to_owned(),
            )
        })
        .collect()
}

async fn run(f: &Fixture, q: &ValuesQuery) -> (Option<u64>, Vec<Row>, ScanMetrics) {
    run_reading(f, q, ReadAhead::Monthly).await
}

async fn run_reading(
    f: &Fixture,
    q: &ValuesQuery,
    read_ahead: ReadAhead,
) -> (Option<u64>, Vec<Row>, ScanMetrics) {
    let mut plan = f.dataset.plan_values(q, read_ahead).await.unwrap();
    let total = plan.total;
    let stream = std::mem::replace(
        &mut plan.stream,
        Box::pin(
            datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
                plan.schema.clone(),
                futures::stream::empty(),
            ),
        ),
    );
    let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
    let rows = batches.iter().flat_map(|b| rows_of(b, None)).collect();
    (total, rows, plan.scans.metrics())
}

/// The whole series: no bounds.
const WHOLE_SERIES: Window = Window::Between {
    from: None,
    to: None,
};

fn query(station: &StationId, parameter: &ParameterId, window: Window) -> ValuesQuery {
    ValuesQuery {
        station: station.clone(),
        parameter: parameter.clone(),
        window,
        sort: Vec::new(),
        offset: 0,
        limit: None,
        columns: ValueColumn::ALL.to_vec(),
        need_total: true,
        qualities: None,
    }
}

/// The expected answer: window → collection → order → page.
fn expected(
    all: &[Row],
    window: Window,
    sort: &[SortKey],
    offset: u64,
    limit: Option<u64>,
) -> Vec<Row> {
    let mut coll: Vec<Row> = match window {
        Window::Between { from, to } => all
            .iter()
            .filter(|r| from.is_none_or(|f| r.0 >= f) && to.is_none_or(|t| r.0 <= t))
            .cloned()
            .collect(),
        Window::Recent(n) => all[all.len().saturating_sub(n as usize)..].to_vec(),
        Window::Last(d) => {
            let end = all.last().unwrap().0;
            let start = d
                .before(chrono::DateTime::from_timestamp_micros(end).unwrap())
                .unwrap()
                .timestamp_micros();
            all.iter()
                .filter(|r| r.0 > start && r.0 <= end)
                .cloned()
                .collect()
        }
    };
    coll.sort_by(|a, b| {
        for k in sort {
            let o = match k.column {
                ValueColumn::Timestamp => a.0.cmp(&b.0),
                ValueColumn::Value => a.1.total_cmp(&b.1),
                ValueColumn::Quality => a.2.cmp(&b.2),
            };
            let o = if k.descending { o.reverse() } else { o };
            if o.is_ne() {
                return o;
            }
        }
        a.0.cmp(&b.0)
    });
    coll.into_iter()
        .skip(offset as usize)
        .take(limit.unwrap_or(u64::MAX) as usize)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planner_matches_brute_force_over_random_windows() {
    let f = fixture(2, 2).await;
    let station = f.dataset.catalog.stations()[0].id.clone();
    let parameter: ParameterId = "discharge-15min".parse().unwrap();
    let all = brute_force(&f, &station, &parameter).await;
    assert!(all.len() > 60_000, "{}", all.len());
    let (t0, t1) = (all[0].0, all.last().unwrap().0);
    let mut rng = StdRng::seed_from_u64(99);
    let step = 15 * 60 * 1_000_000i64;
    for case in 0..150 {
        // Boundaries on and off the 15-minute grid, inside and outside the series.
        let a = rng.random_range(t0 - 40 * step..t1 + 10 * step);
        let a = if case % 2 == 0 {
            a - a.rem_euclid(step)
        } else {
            a
        };
        let b = a + rng.random_range(0..90 * 96) * step / 3;
        let window = match case % 6 {
            0 => Window::Between {
                from: Some(a),
                to: Some(b),
            },
            1 => Window::Between {
                from: Some(a),
                to: None,
            },
            2 => Window::Between {
                from: None,
                to: Some(b),
            },
            3 => Window::Recent(rng.random_range(0..5000)),
            4 => Window::Last(
                ["P1D", "PT6H", "P2W", "P1M", "P1Y2M", "PT15M"][rng.random_range(0..6)]
                    .parse::<IsoDuration>()
                    .unwrap(),
            ),
            _ => Window::Between {
                from: Some(a),
                to: Some(a),
            },
        };
        let sort = match rng.random_range(0..4) {
            0 => vec![],
            1 => vec![SortKey {
                column: ValueColumn::Timestamp,
                descending: true,
            }],
            2 => vec![SortKey {
                column: ValueColumn::Value,
                descending: true,
            }],
            _ => vec![
                SortKey {
                    column: ValueColumn::Quality,
                    descending: false,
                },
                SortKey {
                    column: ValueColumn::Value,
                    descending: false,
                },
            ],
        };
        let offset = [0, 1, 95, 3000, 70_000][rng.random_range(0..5)];
        let limit = [None, Some(0), Some(1), Some(500), Some(10_000)][rng.random_range(0..5)];
        let mut q = query(&station, &parameter, window);
        q.sort = sort.clone();
        q.offset = offset;
        q.limit = limit;
        // Both ways of reading ahead give the same rows.
        let read_ahead = [ReadAhead::Monthly, ReadAhead::Grouped][(case / 6) % 2];
        let (total, rows, _) = run_reading(&f, &q, read_ahead).await;
        let want = expected(&all, window, &sort, offset, limit);
        let want_total = expected(&all, window, &sort, 0, None).len() as u64;
        assert_eq!(total, Some(want_total), "case {case}: total of {window:?}");
        assert_eq!(
            rows.len(),
            want.len(),
            "case {case}: {window:?} sort {sort:?} offset {offset} limit {limit:?}"
        );
        assert!(
            rows == want,
            "case {case}: rows differ for {window:?} sort {sort:?} offset {offset} limit {limit:?}"
        );
        check_pieces(&f, &q, want.len(), all.len()).await;
    }
}

/// A Parquet answer's pieces hold as many rows as the answer, and stored row groups appear
/// only where every row of the month belongs to it: the whole window, ascending, unpaged.
async fn check_pieces(f: &Fixture, q: &ValuesQuery, want: usize, series_rows: usize) {
    let plan = f.dataset.plan_parts(q).await.unwrap();
    let pieces: Vec<AnswerPart> = plan.parts.try_collect().await.unwrap();
    let rows: usize = pieces.iter().map(AnswerPart::rows).sum();
    let stored = pieces
        .iter()
        .filter(|p| matches!(p, AnswerPart::Stored(_)))
        .count();
    assert_eq!(rows, want, "{q:?}");
    let ascending = q
        .sort
        .first()
        .is_none_or(|k| k.column == ValueColumn::Timestamp && !k.descending);
    let whole_window = ascending && q.offset == 0 && q.limit.is_none();
    let recent_cut = matches!(q.window, Window::Recent(n) if (n as usize) < series_rows);
    if !whole_window || recent_cut {
        assert_eq!(stored, 0, "{q:?}");
    }
    // Windows over more than two months have a month wholly inside.
    if whole_window && !matches!(q.window, Window::Recent(_)) && want > 3 * 31 * 96 {
        assert!(stored > 0, "{q:?}");
    }
}

/// A long answer reads ahead a few months, not the whole series: memory is bounded by the
/// read-ahead, whatever the size of the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_ahead_is_bounded() {
    let f = fixture(1, 3).await;
    let station = f.dataset.catalog.stations()[0].id.clone();
    let parameter: ParameterId = "discharge-15min".parse().unwrap();
    let months = files_of(&f, &station).await;
    assert!(months >= 36);
    let mut q = query(&station, &parameter, WHOLE_SERIES);
    q.need_total = false;
    // Months one task each, then grouped (as stored months always are).
    for (pieces, read_ahead) in [
        (false, ReadAhead::Monthly),
        (false, ReadAhead::Grouped),
        (true, ReadAhead::Grouped),
    ] {
        let grouped = read_ahead == ReadAhead::Grouped;
        let (mut stream, scans) = if pieces {
            let p = f.dataset.plan_parts(&q).await.unwrap();
            (p.parts.map_ok(|_| ()).boxed(), p.scans)
        } else {
            let p = f.dataset.plan_values(&q, read_ahead).await.unwrap();
            (
                p.stream.map_ok(|_| ()).map_err(|e| e.into()).boxed(),
                p.scans,
            )
        };
        stream.next().await.unwrap().unwrap();
        // Whatever the runtime does meanwhile, no more months start than the read-ahead: a few
        // months, or the first month and three groups (of 12 288 rows: five 15-minute months
        // each).
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let started = scans.metrics().files_scanned;
        let most = if grouped { 1 + 3 * 5 } else { 6 };
        assert!(
            started <= most,
            "{started} of {months} months read after the first piece ({read_ahead:?}, pieces: {pieces})"
        );
        while let Some(p) = stream.next().await {
            p.unwrap();
        }
        assert_eq!(scans.metrics().files_scanned, months);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boundaries_are_inclusive_and_columns_project() {
    let f = fixture(1, 1).await;
    let station = f.dataset.catalog.stations()[0].id.clone();
    let parameter: ParameterId = "water-level-15min".parse().unwrap();
    let all = brute_force(&f, &station, &parameter).await;
    let (a, b) = (all[1000].0, all[1010].0);
    let mut q = query(
        &station,
        &parameter,
        Window::Between {
            from: Some(a),
            to: Some(b),
        },
    );
    q.columns = vec![ValueColumn::Value, ValueColumn::Timestamp];
    let plan = f.dataset.plan_values(&q, ReadAhead::Monthly).await.unwrap();
    assert_eq!(
        plan.schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>(),
        ["value", "timestamp"]
    );
    let batches: Vec<RecordBatch> = plan.stream.try_collect().await.unwrap();
    let n: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(n, 11, "both ends included");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruning_reads_only_the_window() {
    let f = fixture(1, 2).await;
    let station = f.dataset.catalog.stations()[0].id.clone();
    let parameter: ParameterId = "water-level-15min".parse().unwrap();
    let all = brute_force(&f, &station, &parameter).await;
    let files_of_station = files_of(&f, &station).await;
    assert!(files_of_station >= 24);

    // One day inside one month: one file, its month decoded and cut.
    let day = all
        .iter()
        .find(|r| r.0 >= all[0].0 + 200 * 86_400_000_000)
        .unwrap()
        .0;
    let q = query(
        &station,
        &parameter,
        Window::Between {
            from: Some(day),
            to: Some(day + 86_400_000_000 - 1),
        },
    );
    let (_, rows, m) = run(&f, &q).await;
    assert_eq!(rows.len(), 96);
    assert_eq!(m.files_scanned, 1, "{m:?}");
    // Sorted by value, the day goes through a DataFusion scan: one file, the other parameter's
    // row group pruned, the page of the month without the day pruned by the page index.
    let mut q = q;
    q.sort = vec![SortKey {
        column: ValueColumn::Value,
        descending: true,
    }];
    let (_, rows, m) = run(&f, &q).await;
    assert_eq!(rows.len(), 96);
    assert_eq!(m.files_scanned, 1, "{m:?}");
    assert!(
        m.row_groups_pruned >= 1,
        "other parameter's row group pruned: {m:?}"
    );
    // A month is two pages: only the one holding the day is read.
    assert!(
        m.page_rows_pruned > 0 && m.page_rows_matched <= crate::dataset::layout::PAGE_ROWS,
        "page index pruned the other page of the month: {m:?}"
    );

    // recent=1 opens only the newest month.
    let (_, rows, m) = run(&f, &query(&station, &parameter, Window::Recent(1))).await;
    assert_eq!(rows, vec![all.last().unwrap().clone()]);
    assert_eq!(m.files_scanned, 1, "{m:?}");

    // A deep offset opens only the month it lands in.
    let mut q = query(&station, &parameter, WHOLE_SERIES);
    q.offset = all.len() as u64 - 10;
    q.limit = Some(5);
    let (_, rows, m) = run(&f, &q).await;
    assert_eq!(rows, all[all.len() - 10..all.len() - 5].to_vec());
    assert_eq!(m.files_scanned, 1, "{m:?}");
}

/// What a plan reads is known before it reads: the months in order and how each is read, and
/// the stream then opens exactly those.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_tells_what_it_reads_before_reading() {
    let f = fixture(1, 2).await;
    let station = f.dataset.catalog.stations()[0].id.clone();
    let parameter: ParameterId = "water-level-15min".parse().unwrap();
    let months: Vec<Month> = f
        .dataset
        .value_files(&station)
        .await
        .unwrap()
        .iter()
        .map(|v| v.month)
        .collect();
    let all = brute_force(&f, &station, &parameter).await;
    let day = all[0].0 + 200 * 86_400_000_000;
    let month_of = Month::of;
    // Two days across a month's end: the two months, each cut.
    let end_of_month = all
        .iter()
        .find(|r| r.0 > day && month_of(r.0) != month_of(day))
        .unwrap()
        .0;
    let window = Window::Between {
        from: Some(end_of_month - 86_400_000_000),
        to: Some(end_of_month + 86_400_000_000),
    };
    let plan = f
        .dataset
        .plan_values(&query(&station, &parameter, window), ReadAhead::Monthly)
        .await
        .unwrap();
    assert_eq!(
        plan.reads.0,
        [
            PlannedMonth {
                month: month_of(end_of_month - 86_400_000_000),
                how: HowRead::Cut
            },
            PlannedMonth {
                month: month_of(end_of_month),
                how: HowRead::Cut
            }
        ]
    );
    // The newest 10 rows, newest first: the last month alone, its last rows.
    let mut q = query(&station, &parameter, WHOLE_SERIES);
    q.sort = vec![SortKey {
        column: ValueColumn::Timestamp,
        descending: true,
    }];
    q.limit = Some(10);
    let plan = f.dataset.plan_values(&q, ReadAhead::Monthly).await.unwrap();
    let last = *months.last().unwrap();
    let rows_in_last = all.iter().filter(|r| month_of(r.0) == last).count();
    assert_eq!(
        plan.reads.0,
        [PlannedMonth {
            month: last,
            how: HowRead::Decoded(Some(rows_in_last - 10..rows_in_last))
        }]
    );
    // The whole series as stored row groups (a Parquet answer): every month, in order.
    let plan = f
        .dataset
        .plan_parts(&query(&station, &parameter, WHOLE_SERIES))
        .await
        .unwrap();
    assert_eq!(plan.reads.months(), months);
    assert!(plan.reads.0.iter().all(|m| m.how == HowRead::Stored));
    // Sorted by value: a DataFusion scan of every month; run, it opens as many files.
    let mut q = query(&station, &parameter, WHOLE_SERIES);
    q.sort = vec![SortKey {
        column: ValueColumn::Value,
        descending: false,
    }];
    q.limit = Some(3);
    let plan = f.dataset.plan_values(&q, ReadAhead::Monthly).await.unwrap();
    assert_eq!(plan.reads.months(), months);
    assert!(plan.reads.0.iter().all(|m| m.how == HowRead::Scanned));
    let (_, rows, m) = run(&f, &q).await;
    assert_eq!(rows.len(), 3);
    assert_eq!(m.files_scanned, months.len(), "{m:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_import_leaves_the_published_dataset_intact() {
    let f = fixture(2, 1).await;
    let before = f.dataset.manifest.clone();
    // A writer that writes files but never publishes (the process died).
    let store = Store::dir(&f.root).unwrap().object_store();
    let writer = crate::write::writer::DatasetWriter::begin(
        Arc::clone(&store),
        crate::dataset::manifest::PublishKind::Append,
    )
    .await
    .unwrap();
    let station = f.dataset.catalog.stations()[0].id.clone();
    let mut chunk = vec![crate::write::writer::SeriesChunk {
        parameter: "water-level-15min".parse().unwrap(),
        timestamps: vec![0, 1],
        values: vec![1.0, 2.0],
        quality: vec!["good", "good"],
    }];
    let encoded = crate::write::writer::encode_month(&mut chunk).unwrap();
    writer
        .write_month(&station, "1970-01".parse().unwrap(), encoded)
        .await
        .unwrap();
    // The crash: the writer is gone without publishing. Its lock stays; this process still
    // runs, so the next writer would refuse it: delete it, as the message then says to.
    drop(writer);
    std::fs::remove_file(f.root.join("writing.lock")).unwrap();
    let reopened = Dataset::open_dir(&f.root).await.unwrap();
    assert_eq!(reopened.manifest, before);
    assert!(
        reopened
            .value_files(&station)
            .await
            .unwrap()
            .iter()
            .all(|f| f.month.to_string() != "1970-01")
    );
    // Vacuum removes the orphan (it belongs to no version).
    let retention = crate::write::vacuum::Retention {
        grace: chrono::Duration::hours(1),
        versions: 1,
    };
    let vacuumed = crate::write::vacuum::vacuum(&store, retention)
        .await
        .unwrap();
    assert_eq!(vacuumed.deleted_files, 1);
    assert!(
        !f.root
            .join(format!("values/station={station}/month=1970-01"))
            .join(format!("part-{}.parquet", before.generation + 1))
            .exists()
    );
}
