//! Text encoding of value rows, the CPU cost of a CSV or JSON download, beside arrow-rs's own
//! writers on the same batch (a reference any Arrow-based server would use):
//! - CSV: ours vs `arrow_csv::Writer`;
//! - NDJSON: ours vs `arrow_json::LineDelimitedWriter`.
//!
//! One year of a 15-minute series (35 040 rows) with two-decimal values, as `hydro generate`
//! writes them: around 466 (a water level), and for CSV also around 2 174 (a discharge, whose
//! numbers have a second group of digits). `cargo bench --bench encode`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use datafusion::arrow::array::{
    ArrayRef, DictionaryArray, Float64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::Int32Type;
use hydro_server::render::encode::TextFormat;
use hydro_server::render::encode::text::ValuesText;
use hydro_server::render::format::{csv::Csv, ndjson::NdJson};
use hydro_server::render::timefmt::TimeFormatter;
use std::hint::black_box;
use std::sync::Arc;

const ROWS: usize = 35_040;

/// As in the server: the allocator is part of the cost.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The year's values start at `first_level / 100` and walk by up to 1.5 a step.
fn year(first_level: i64) -> RecordBatch {
    let start = 1_420_070_400_000_000i64; // 2015-01-01T00:00:00Z
    let step = 15 * 60 * 1_000_000i64;
    let times: TimestampMicrosecondArray = (0..ROWS as i64)
        .map(|i| start + i * step)
        .collect::<Vec<_>>()
        .into();
    let mut level = first_level;
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let values: Float64Array = (0..ROWS)
        .map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            level = (level + (rng % 301) as i64 - 150).max(100);
            level as f64 / 100.0
        })
        .collect::<Vec<_>>()
        .into();
    let keys = (0..ROWS as i32)
        .map(|i| i32::from(i % 97 == 0))
        .collect::<Vec<_>>();
    let quality = DictionaryArray::<Int32Type>::try_new(
        keys.into(),
        Arc::new(StringArray::from(vec!["good", "suspect"])),
    )
    .unwrap();
    RecordBatch::try_from_iter([
        (
            "timestamp",
            Arc::new(times.with_timezone("+00:00")) as ArrayRef,
        ),
        ("value", Arc::new(values) as ArrayRef),
        ("quality", Arc::new(quality) as ArrayRef),
    ])
    .unwrap()
}

fn ours(format: &'static dyn TextFormat) -> ValuesText {
    let columns = ["timestamp", "value", "quality"].map(String::from).to_vec();
    ValuesText::new(
        format,
        columns,
        Vec::new(),
        Vec::new(),
        TimeFormatter::new(chrono::FixedOffset::east_opt(0).unwrap()),
    )
    .unwrap()
}

fn bytes(chunks: Vec<bytes::Bytes>) -> usize {
    chunks.iter().map(|c| c.len()).sum()
}

fn encode(c: &mut Criterion) {
    let batch = year(46_616);
    let discharges = year(217_391);
    let mut g = c.benchmark_group("encode_year");
    g.throughput(Throughput::Elements(ROWS as u64));
    let csv = ours(&Csv);
    g.bench_function("csv/ours", |b| {
        b.iter(|| bytes(csv.rows(black_box(&batch)).unwrap()))
    });
    g.bench_function("csv/ours/discharge", |b| {
        b.iter(|| bytes(csv.rows(black_box(&discharges)).unwrap()))
    });
    g.bench_function("csv/arrow_csv", |b| {
        b.iter(|| {
            let mut w = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(false)
                .build(Vec::with_capacity(2 << 20));
            w.write(black_box(&batch)).unwrap();
            w.into_inner().len()
        })
    });
    let ndjson = ours(&NdJson);
    g.bench_function("ndjson/ours", |b| {
        b.iter(|| bytes(ndjson.rows(black_box(&batch)).unwrap()))
    });
    g.bench_function("ndjson/arrow_json", |b| {
        b.iter(|| {
            let mut w =
                datafusion::arrow::json::LineDelimitedWriter::new(Vec::with_capacity(4 << 20));
            w.write(black_box(&batch)).unwrap();
            w.finish().unwrap();
            w.into_inner().len()
        })
    });
    g.finish();
}

criterion_group!(benches, encode);
criterion_main!(benches);
