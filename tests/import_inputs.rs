//! `hydro import` of every kind of values file (CSV plain, gzip, zstd; Parquet as other tools
//! write it) gives the same dataset, and every kind of bad input publishes nothing.

use datafusion::arrow::array::{
    Array, ArrayRef, DictionaryArray, Float64Array, Int32Array, LargeStringArray, RecordBatch,
    StringArray, TimestampMicrosecondArray, TimestampNanosecondArray,
};
use datafusion::arrow::datatypes::{Int32Type, TimestampMicrosecondType};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::basic::{Compression, GzipLevel, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

mod common;

use common::{files_under, import_command, sample};

/// `hydro import --replace --yes` of the sample catalog and `values` into `out` (the tests
/// import again and again into one place).
fn import(out: &Path, values: &[&Path]) -> Output {
    import_command(out)
        .args(["--replace", "--yes", "--values"])
        .args(values)
        .output()
        .unwrap()
}

fn ok(out: Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A values row as the sample file has it.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    station: String,
    parameter: String,
    micros: i64,
    value: f64,
    quality: String,
}

fn sample_rows() -> Vec<Row> {
    let mut reader = csv::Reader::from_path(sample("values.csv")).unwrap();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            Row {
                station: r[0].to_owned(),
                parameter: r[1].to_owned(),
                micros: chrono::DateTime::parse_from_rfc3339(&r[2])
                    .unwrap()
                    .timestamp_micros(),
                value: r[3].parse().unwrap(),
                quality: r[4].to_owned(),
            }
        })
        .collect()
}

/// Every value the dataset in `dir` holds, in (station, parameter, time) order.
fn stored_rows(dir: &Path) -> Vec<(String, String, i64, f64, String)> {
    let mut rows = Vec::new();
    for f in files_under(&dir.join("values")) {
        let station = f
            .components()
            .find_map(|c| c.as_os_str().to_str()?.strip_prefix("station="))
            .unwrap()
            .to_owned();
        let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&f).unwrap())
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            let b = batch.unwrap();
            let text = |name: &str| {
                let c = datafusion::arrow::compute::cast(
                    b.column_by_name(name).unwrap(),
                    &datafusion::arrow::datatypes::DataType::Utf8,
                )
                .unwrap();
                let s = c.as_any().downcast_ref::<StringArray>().unwrap().clone();
                (0..s.len())
                    .map(|i| s.value(i).to_owned())
                    .collect::<Vec<_>>()
            };
            let (params, quality) = (text("parameter"), text("quality"));
            let ts = b.column_by_name("timestamp").unwrap();
            let ts = ts
                .as_any()
                .downcast_ref::<TimestampMicrosecondArray>()
                .unwrap();
            let v = b.column_by_name("value").unwrap();
            let v = v.as_any().downcast_ref::<Float64Array>().unwrap();
            for i in 0..b.num_rows() {
                rows.push((
                    station.clone(),
                    params[i].clone(),
                    ts.value(i),
                    v.value(i),
                    quality[i].clone(),
                ));
            }
        }
    }
    rows.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    rows
}

/// How a Parquet test file spells its columns.
#[derive(Clone, Copy)]
enum Spelling {
    /// Plain strings, microsecond UTC timestamps, doubles; zstd.
    Plain,
    /// Dictionary strings, nanosecond timestamps in another zone, nullable; snappy.
    Dictionary,
    /// Large strings, timestamps as RFC 3339 text, integer-valued values as Int32; gzip.
    Text,
}

fn write_parquet(path: &Path, rows: &[Row], spelling: Spelling) {
    let strings = |f: fn(&Row) -> &str| -> ArrayRef {
        match spelling {
            Spelling::Plain => Arc::new(StringArray::from_iter_values(rows.iter().map(f))),
            Spelling::Dictionary => Arc::new(
                rows.iter()
                    .map(|r| Some(f(r)))
                    .collect::<DictionaryArray<Int32Type>>(),
            ),
            Spelling::Text => Arc::new(LargeStringArray::from_iter_values(rows.iter().map(f))),
        }
    };
    let timestamps: ArrayRef = match spelling {
        Spelling::Plain => Arc::new(
            TimestampMicrosecondArray::from_iter_values(rows.iter().map(|r| r.micros))
                .with_timezone("UTC"),
        ),
        Spelling::Dictionary => Arc::new(
            TimestampNanosecondArray::from_iter(rows.iter().map(|r| Some(r.micros * 1000)))
                .with_timezone("+01:00"),
        ),
        Spelling::Text => Arc::new(StringArray::from_iter_values(rows.iter().map(|r| {
            chrono::DateTime::from_timestamp_micros(r.micros)
                .unwrap()
                .with_timezone(&chrono::FixedOffset::east_opt(7200).unwrap())
                .to_rfc3339()
        }))),
    };
    let values: ArrayRef = match spelling {
        Spelling::Text => Arc::new(Int32Array::from_iter_values(
            rows.iter().map(|r| r.value as i32),
        )),
        _ => Arc::new(Float64Array::from_iter(rows.iter().map(|r| Some(r.value)))),
    };
    let columns = vec![
        ("quality", strings(|r| &r.quality)),
        ("stationId", strings(|r| &r.station)),
        ("timestamp", timestamps),
        ("parameterId", strings(|r| &r.parameter)),
        ("value", values),
    ];
    let compression = match spelling {
        Spelling::Plain => Compression::ZSTD(ZstdLevel::default()),
        Spelling::Dictionary => Compression::SNAPPY,
        Spelling::Text => Compression::GZIP(GzipLevel::default()),
    };
    let props = WriterProperties::builder()
        .set_compression(compression)
        .set_dictionary_enabled(matches!(spelling, Spelling::Dictionary))
        .set_max_row_group_row_count(Some(100))
        .build();
    write_columns(path, columns, Some(props));
}

/// A Parquet file of these columns, in this order.
fn write_columns(path: &Path, columns: Vec<(&str, ArrayRef)>, props: Option<WriterProperties>) {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), props).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// `n` good rows of koeln's water levels, 15 minutes apart from 2040 on.
fn good_columns(n: usize) -> Vec<(&'static str, ArrayRef)> {
    let start = 2_208_988_800_000_000i64;
    vec![
        (
            "stationId",
            Arc::new(StringArray::from_iter_values(vec!["koeln"; n])),
        ),
        (
            "parameterId",
            Arc::new(StringArray::from_iter_values(vec!["water-level-15min"; n])),
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
        ("value", Arc::new(Float64Array::from(vec![1.0; n]))),
        (
            "quality",
            Arc::new(StringArray::from_iter_values(vec!["good"; n])),
        ),
    ]
}

/// `columns` with column `name` replaced by `array`.
fn with(
    mut columns: Vec<(&'static str, ArrayRef)>,
    name: &str,
    array: ArrayRef,
) -> Vec<(&'static str, ArrayRef)> {
    for c in &mut columns {
        if c.0 == name {
            c.1 = Arc::clone(&array);
        }
    }
    columns
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn every_kind_of_values_file_gives_the_same_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let csv_path = PathBuf::from(sample("values.csv"));
    ok(import(&dir.path().join("csv"), &[&csv_path]));
    let expected = stored_rows(&dir.path().join("csv"));
    assert_eq!(expected.len(), sample_rows().len());

    // gzip in two members (as pigz or bgzip write), and zstd.
    let text = std::fs::read(&csv_path).unwrap();
    let half = text.len() / 2;
    let mut gz = gzip(&text[..half]);
    gz.extend(gzip(&text[half..]));
    let gz_path = dir.path().join("values.csv.gz");
    std::fs::write(&gz_path, gz).unwrap();
    let zst_path = dir.path().join("values.csv.zst");
    std::fs::write(&zst_path, zstd::encode_all(text.as_slice(), 3).unwrap()).unwrap();

    let rows = sample_rows();
    let plain = dir.path().join("plain.parquet");
    write_parquet(&plain, &rows, Spelling::Plain);
    let dictionary = dir.path().join("dictionary.parquet");
    write_parquet(&dictionary, &rows, Spelling::Dictionary);
    // Split in two files found by a glob pattern.
    let (whole, rest): (Vec<Row>, Vec<Row>) =
        rows.iter().cloned().partition(|r| r.value.fract() == 0.0);
    assert!(!rest.is_empty(), "the sample has fractional values too");
    write_parquet(&dir.path().join("part-1.parquet"), &whole, Spelling::Text);
    write_parquet(&dir.path().join("part-2.parquet"), &rest, Spelling::Plain);
    let pattern = dir.path().join("part-*.parquet");

    for (name, inputs) in [
        ("gzip", vec![gz_path.as_path()]),
        ("zstd", vec![zst_path.as_path()]),
        ("plain Parquet", vec![plain.as_path()]),
        ("dictionary Parquet", vec![dictionary.as_path()]),
        ("a glob of Parquet files", vec![pattern.as_path()]),
    ] {
        let out = dir.path().join(name.replace(' ', "-"));
        ok(import(&out, &inputs));
        assert_eq!(stored_rows(&out), expected, "{name}");
    }
}

#[test]
fn bad_values_files_publish_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("dataset");
    let csv_path = PathBuf::from(sample("values.csv"));
    ok(import(&out, &[&csv_path]));
    let before = files_under(&out);
    let manifest = std::fs::read(out.join("manifest.json")).unwrap();
    let rows = sample_rows();
    let text = std::fs::read(&csv_path).unwrap();

    let truncated = dir.path().join("truncated.csv.gz");
    let gz = gzip(&text);
    std::fs::write(&truncated, &gz[..gz.len() - 40]).unwrap();

    // Good rows of the sample's first series, but for one column.
    let wrong_type = dir.path().join("wrong-type.parquet");
    let numbers_as_text = StringArray::from_iter_values((0..10).map(|i| format!("{i}.5")));
    write_columns(
        &wrong_type,
        with(good_columns(10), "value", Arc::new(numbers_as_text)),
        None,
    );
    let naive = dir.path().join("naive-time.parquet");
    let naive_times =
        datafusion::arrow::array::PrimitiveArray::<TimestampMicrosecondType>::from_iter_values([0]);
    write_columns(
        &naive,
        with(good_columns(1), "timestamp", Arc::new(naive_times)),
        None,
    );
    let null_value = dir.path().join("null-value.parquet");
    let with_null = Float64Array::from(vec![Some(1.0), None]);
    write_columns(
        &null_value,
        with(good_columns(2), "value", Arc::new(with_null)),
        None,
    );
    let unknown = dir.path().join("unknown.csv");
    std::fs::write(
        &unknown,
        "stationId,parameterId,timestamp,value,quality\n\
         koeln,water-level-15min,2031-01-01T00:00:00Z,1,good\n\
         atlantis,water-level-15min,2031-01-01T00:00:00Z,1,good\n",
    )
    .unwrap();
    let typo = dir.path().join("typo.csv");
    std::fs::write(
        &typo,
        "stationId,parameterId,timestamp,value,quality\n\
         koeln,water-level,2031-01-01T00:00:00Z,1,good\n",
    )
    .unwrap();
    // The second file repeats one timestamp of the sample (in another spelling of the same
    // instant) among new ones.
    let first = &rows[0];
    let first_written = csv::Reader::from_path(&csv_path)
        .unwrap()
        .records()
        .next()
        .unwrap()
        .unwrap()[2]
        .to_owned();
    let repeated = dir.path().join("repeated.csv");
    let again = chrono::DateTime::from_timestamp_micros(first.micros)
        .unwrap()
        .with_timezone(&chrono::FixedOffset::west_opt(3 * 3600).unwrap())
        .to_rfc3339();
    std::fs::write(
        &repeated,
        format!(
            "stationId,parameterId,timestamp,value,quality\n\
             {s},{p},2031-01-01T00:00:00Z,1,good\n\
             {s},{p},{again},2,good\n",
            s = first.station,
            p = first.parameter
        ),
    )
    .unwrap();
    // As a German spreadsheet exports it: semicolons, decimal commas.
    let semicolons = dir.path().join("semicolons.csv");
    std::fs::write(
        &semicolons,
        "stationId;parameterId;timestamp;value;quality\n\
         koeln;water-level-15min;2031-01-01T00:00:00Z;1,5;good\n",
    )
    .unwrap();
    let decimal_comma = dir.path().join("decimal-comma.csv");
    std::fs::write(
        &decimal_comma,
        "stationId,parameterId,timestamp,value,quality\n\
         koeln,water-level-15min,2031-01-01T00:00:00Z,1,5,good\n\
         koeln,water-level-15min,2031-01-01T00:15:00Z,\"2,5\",good\n\
         koeln,water-level-15min,01.01.2031 00:30,2.5,good\n",
    )
    .unwrap();
    let vanished = dir.path().join("vanished.csv");
    let no_match = dir.path().join("none-*.csv");
    let not_csv = dir.path().join("binary.csv");
    std::fs::write(&not_csv, [0xff, 0xfe, 0x00, 0x01, b'\n', 0x80]).unwrap();

    let cases: Vec<(Vec<&Path>, Vec<String>)> = vec![
        (
            vec![&truncated],
            vec!["truncated.csv.gz:".into(), "cannot read".into()],
        ),
        (
            vec![&wrong_type],
            vec!["wrong-type.parquet: column value is Utf8, expected a number".into()],
        ),
        (
            vec![&naive],
            vec![
                "naive-time.parquet: column timestamp".into(),
                "without a zone".into(),
            ],
        ),
        (
            vec![&null_value],
            vec!["null-value.parquet:2: value is required".into()],
        ),
        (
            vec![&unknown],
            vec!["unknown.csv:3: stationId: 'atlantis' is not a station of the catalog".into()],
        ),
        (
            vec![&typo],
            vec![
                "typo.csv:2: parameterId: 'water-level' is not a parameter of station 'koeln' \
                 (it has discharge-15min, water-level-15min)"
                    .into(),
            ],
        ),
        (
            vec![&csv_path, &repeated],
            vec![
                // Both times as their files wrote them.
                format!(
                    "repeated.csv:3: duplicate timestamp {again} for {}/{}",
                    first.station, first.parameter
                ),
                format!("(first at {}:2 as {first_written})", csv_path.display()),
            ],
        ),
        (
            vec![&csv_path, &vanished],
            vec!["vanished.csv: cannot open: No such file".into()],
        ),
        (vec![&no_match], vec!["none-*.csv: no file matches".into()]),
        (vec![&not_csv], vec!["binary.csv:1:".into()]),
        (
            vec![&decimal_comma],
            vec![
                "decimal-comma.csv:2: 6 fields where the header has 5 (a decimal comma".into(),
                "decimal-comma.csv:3: value: '2,5' is not a number (a decimal comma? write 2.5)"
                    .into(),
                "decimal-comma.csv:4: timestamp: '01.01.2031 00:30' is not a time with an offset"
                    .into(),
            ],
        ),
    ];
    for (inputs, expected) in cases {
        let result = import(&out, &inputs);
        let err = String::from_utf8_lossy(&result.stderr);
        assert!(!result.status.success(), "{inputs:?} imported");
        for e in &expected {
            assert!(err.contains(e.as_str()), "{inputs:?}: '{e}' not in {err}");
        }
        assert!(err.contains("nothing was published"), "{err}");
        assert_eq!(files_under(&out), before, "{inputs:?} left files behind");
        assert_eq!(std::fs::read(out.join("manifest.json")).unwrap(), manifest);
    }

    // Semicolons and decimal commas, as a German spreadsheet exports them, are told from the
    // header: the file imports as it is.
    let german = dir.path().join("german");
    ok(import(&german, &[&semicolons]));
    let published: serde_json::Value =
        serde_json::from_slice(&std::fs::read(german.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(published["counts"]["values"], 1, "{published}");

    // The same files with CRLF line ends, as Excel and Python's csv module write them: every
    // report names the same line.
    let crlf_dir = dir.path().join("crlf");
    std::fs::create_dir(&crlf_dir).unwrap();
    let crlf = |file: &Path| {
        let to = crlf_dir.join(file.file_name().unwrap());
        let text = std::fs::read_to_string(file).unwrap();
        std::fs::write(&to, text.replace('\n', "\r\n")).unwrap();
        to
    };
    let sample_crlf = crlf(&csv_path);
    let cases: Vec<(Vec<PathBuf>, Vec<String>)> = vec![
        (
            vec![crlf(&unknown)],
            vec!["unknown.csv:3: stationId: 'atlantis' is not a station".into()],
        ),
        (
            vec![crlf(&typo)],
            vec!["typo.csv:2: parameterId: 'water-level' is not a parameter".into()],
        ),
        (
            vec![sample_crlf.clone(), crlf(&repeated)],
            vec![
                format!("repeated.csv:3: duplicate timestamp {again}"),
                format!("(first at {}:2 as {first_written})", sample_crlf.display()),
            ],
        ),
        (
            vec![crlf(&decimal_comma)],
            vec![
                "decimal-comma.csv:2: 6 fields where the header has 5".into(),
                "decimal-comma.csv:3: value: '2,5' is not a number".into(),
                "decimal-comma.csv:4: timestamp: '01.01.2031 00:30'".into(),
            ],
        ),
    ];
    for (inputs, expected) in cases {
        let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        let result = import(&out, &inputs);
        let err = String::from_utf8_lossy(&result.stderr);
        assert!(!result.status.success(), "{inputs:?} imported");
        for e in &expected {
            assert!(
                err.contains(e.as_str()),
                "CRLF {inputs:?}: '{e}' not in {err}"
            );
        }
    }
}
