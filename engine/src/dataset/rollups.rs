//! Rollups: each series' values summarised per UTC day, Parquet files per station in parts of
//! whole UTC years (`rollups/station=<id>/<first year>-<last year>-g<g>.parquet`), listed by the
//! version's rollups table (`catalog/rollups-<g>.parquet`: `station`, `generation`, `size`,
//! `path`, `firstDay`, `lastDay`, a row a part).
//!
//! A rollup file has a row per series and day with values, sorted by (parameter, day), one row
//! group per parameter:
//!
//! | column             | type               | meaning                                   |
//! |--------------------|--------------------|-------------------------------------------|
//! | parameter          | utf8 (dictionary)  | parameter id                              |
//! | day                | timestamp(µs, UTC) | the UTC day's start                       |
//! | count              | int64              | values that day                           |
//! | sum                | float64            | their sum, in time order                  |
//! | min, max           | float64            | the lowest and highest value              |
//! | minTime, maxTime   | timestamp(µs, UTC) | when (the first one on ties)              |
//! | first, last        | float64            | the day's first and last value            |
//! | firstTime, lastTime| timestamp(µs, UTC) | their times                               |
//!
//! and, in a station with series that have derived values, the hydrological years of its rows
//! in its footer (key `hydro.years`, [`crate::dataset::rollup_years`]).
//!
//! **The grain is the UTC day**, measured: daily rows of the 20-station × 10-year 15-minute
//! archive are 5 % (zstd) to 9 % (LZ4) of its bytes, hourly rows 134 % to 236 % (more bytes
//! than the values: eight numbers an hour against four values); on an hourly archive daily rows
//! a station are 14 % (zstd) to 20 % (LZ4). A day bucket in UTC is its rollup row; months and
//! years in any zone are their whole UTC days' rows plus the raw values of the (at most two)
//! UTC days their edges cut. Sub-day buckets, and days in zones off UTC, read raw values.
//!
//! **Parts of years, not a file a station**: a station-month's rows (~60) are smaller than a
//! Parquet footer, and an archive-wide question reads a few files per station; but one file a
//! station made every append rewrite every station's whole history (2.1 GB for a day of
//! 200 000 station-years, the history of `benches/RESULTS.md`). A station's parts cover disjoint
//! runs of UTC years, ascending. A publish rewrites the parts whose years it wrote months of
//! (rows of other months as they were, rows of the months written computed from them) and
//! keeps the others; what it rewrites it writes as two parts, the last year on its own and the
//! years before it, so that the appends of a live archive, which write the last year, rewrite
//! a year of days, and a new year starts a part of its own; a compaction joins the parts of
//! the years it settles into one (`write::rollup`). Tables written before parts list a
//! file a station (`part-<g>.parquet`) without `path`, `firstDay` and `lastDay`: it covers
//! every year, so the first publish that writes the station rewrites it into parts.

use crate::dataset::catalog_file::{Interner, column, from_parquet, optional_column};
use crate::dataset::layout::{self, UTC, writer_properties};
use crate::error::{EngineError, Result};
use crate::model::Micros;
use crate::model::gap::is_gap;
use crate::model::ids::{ParameterId, StationId};
use crate::model::month::Month;
use crate::model::zone::Zone;
use bytes::Bytes;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch, StringArray,
    StringDictionaryBuilder, TimestampMicrosecondArray, UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Field, Float64Type, Int32Type, Int64Type, Schema, SchemaRef, TimeUnit,
    TimestampMicrosecondType,
};
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::basic::{Compression, Encoding, ZstdLevel};
use datafusion::parquet::file::metadata::KeyValue;
use datafusion::parquet::schema::types::ColumnPath;
use std::borrow::Borrow;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

/// A day of 24 hours; the rollups' grain is a day of the dataset's zone (24 hours but for the
/// days its clocks change), a UTC day unless the dataset has a zone of its own.
pub(crate) const DAY: Micros = 86_400_000_000;

const W: &str = "rollups table";

/// One series' values of one day of the dataset's zone, summarised; of a day a UTC month's end
/// cuts (a local day starting at 23:00Z), one row of each month's values, which readers add up
/// (a month's rows come from its value file alone, so a publish rewrites the rows of the months
/// it wrote and no other).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DayRow {
    pub parameter: ParameterId,
    /// The day's start: its midnight in the dataset's zone, as a UTC instant.
    pub day: Micros,
    pub count: i64,
    pub sum: f64,
    pub min: f64,
    pub min_time: Micros,
    pub max: f64,
    pub max_time: Micros,
    pub first: f64,
    pub first_time: Micros,
    pub last: f64,
    pub last_time: Micros,
}

impl DayRow {
    /// The UTC month its values are in (the value file they came from).
    pub(crate) fn month(&self) -> Month {
        Month::of(self.first_time)
    }

    /// A day of hourly values around `v`, for tests: the lowest, `v - 1`, at 01:00, the
    /// highest, `v + 1`, at 02:00, the first and last, `v`, at 00:00 and 23:00.
    #[cfg(test)]
    pub(crate) fn hourly(parameter: &ParameterId, day: Micros, v: f64) -> DayRow {
        const HOUR: Micros = DAY / 24;
        DayRow {
            parameter: parameter.clone(),
            day,
            count: 24,
            sum: v * 24.0,
            min: v - 1.0,
            min_time: day + HOUR,
            max: v + 1.0,
            max_time: day + 2 * HOUR,
            first: v,
            first_time: day,
            last: v,
            last_time: day + 23 * HOUR,
        }
    }
}

/// The days of a zone: the start of the day of an instant, found once a day (an IANA zone's
/// midnights are looked up, a fixed offset's computed).
pub(crate) struct ZoneDays {
    zone: Zone,
    /// The day found last: `[start, end)`.
    current: (Micros, Micros),
}

impl ZoneDays {
    pub(crate) fn new(zone: Zone) -> Self {
        Self {
            zone,
            current: (0, 0),
        }
    }

    /// The start of the day that holds `t`.
    #[inline]
    pub(crate) fn start(&mut self, t: Micros) -> Micros {
        if let Some(offset) = self.zone.fixed() {
            let offset = i64::from(offset.local_minus_utc()) * 1_000_000;
            return (t + offset).div_euclid(DAY) * DAY - offset;
        }
        if !(self.current.0 <= t && t < self.current.1) {
            let date = self.zone.local_date(t);
            let next = date.succ_opt().unwrap_or(date);
            self.current = (self.zone.day_start(date), self.zone.day_start(next));
        }
        self.current.0
    }
}

/// The day rows of one series' values (of one month file, or fewer), ascending in time, of the
/// days of `zone`. Recorded gaps are no values: a day of gaps alone has no row.
pub(crate) fn days_of(
    parameter: &ParameterId,
    times: &[Micros],
    values: &[f64],
    zone: Zone,
) -> Vec<DayRow> {
    let mut out: Vec<DayRow> = Vec::new();
    let mut days = ZoneDays::new(zone);
    for (&t, &v) in times.iter().zip(values) {
        if is_gap(v) {
            continue;
        }
        let day = days.start(t);
        match out.last_mut() {
            Some(row) if row.day == day => {
                row.count += 1;
                row.sum += v;
                if v < row.min {
                    (row.min, row.min_time) = (v, t);
                }
                if v > row.max {
                    (row.max, row.max_time) = (v, t);
                }
                (row.last, row.last_time) = (v, t);
            }
            _ => out.push(DayRow {
                parameter: parameter.clone(),
                day,
                count: 1,
                sum: v,
                min: v,
                min_time: t,
                max: v,
                max_time: t,
                first: v,
                first_time: t,
                last: v,
                last_time: t,
            }),
        }
    }
    out
}

fn time() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into()))
}

/// The schema of a rollup file.
pub(crate) fn rollup_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        let number = |name: &str| Field::new(name, DataType::Float64, false);
        Arc::new(Schema::new(vec![
            Field::new(
                "parameter",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                false,
            ),
            Field::new("day", time(), false),
            Field::new("count", DataType::Int64, false),
            number("sum"),
            number("min"),
            Field::new("minTime", time(), false),
            number("max"),
            Field::new("maxTime", time(), false),
            number("first"),
            Field::new("firstTime", time(), false),
            number("last"),
            Field::new("lastTime", time(), false),
        ]))
    });
    Arc::clone(&SCHEMA)
}

/// The footer key of a part's hydrological years ([`crate::dataset::rollup_years`]).
pub(crate) const YEARS_KEY: &str = "hydro.years";

/// Days a series from which a rollup file's numbers are zstd (see [`encode_rollups`]).
pub(crate) const ZSTD_FROM_DAYS: usize = 2 * 366;

/// A station's rollup file: `rows` sorted by (parameter, day), a row group per parameter, a
/// page per column chunk, and `years` (their hydrological years as JSON, when given) in its
/// footer under [`YEARS_KEY`] ([`crate::dataset::rollup_years`]).
///
/// Writing and reading these files is mostly the zstd codec's setup, not its work: the parquet
/// crate makes a compression context for every column chunk (issuing `cpuid`, a VM exit here)
/// and resets it for every page, and makes a decompression context for every page it reads.
/// An append of a day for every series of a 60 000-station-year archive spent 67 % of its CPU
/// on rollups and a third of its CPU on those contexts (`perf record`,
/// RESULTS.md). So a series' days are one page (36 500 rows for 100 years is 290 KB a column;
/// readers decode a parameter's row group whole anyway), and the columns zstd does not shrink
/// by much (`parameter`, `day`, `count`: a few hundred bytes a series) keep the archive's LZ4.
/// A part of a year or two (up to [`ZSTD_FROM_DAYS`] days a series: the part a live
/// archive's appends rewrite) is LZ4 throughout: its few KB are not worth the contexts, made
/// at every append that rewrites it and every read of it.
pub(crate) fn encode_rollups<R: Borrow<DayRow>>(
    rows: &[R],
    years: Option<String>,
) -> Result<Bytes> {
    let same_series = |a: &R, b: &R| a.borrow().parameter == b.borrow().parameter;
    let longest = rows
        .chunk_by(same_series)
        .map(<[R]>::len)
        .max()
        .unwrap_or(0);
    let mut props = writer_properties()
        .into_builder()
        .set_data_page_row_count_limit(usize::MAX);
    for c in ["day", "minTime", "maxTime", "firstTime", "lastTime"] {
        props = props
            .set_column_dictionary_enabled(ColumnPath::from(c), false)
            .set_column_encoding(ColumnPath::from(c), Encoding::DELTA_BINARY_PACKED);
    }
    // A day's sums, extremes and edge values seldom repeat, so a dictionary of them is about
    // as long as the column: without one the rollup files an append wrote were 7 % smaller
    // (`benches/append_ab.sh`, the history of RESULTS.md), in the same time.
    for c in ["sum", "min", "max", "first", "last"] {
        props = props.set_column_dictionary_enabled(ColumnPath::from(c), false);
    }
    for field in rollup_schema().fields() {
        if longest > ZSTD_FROM_DAYS
            && !["parameter", "day", "count"].contains(&field.name().as_str())
        {
            props = props.set_column_compression(
                ColumnPath::from(field.name().as_str()),
                Compression::ZSTD(ZstdLevel::default()),
            );
        }
    }
    if let Some(years) = years {
        props =
            props.set_key_value_metadata(Some(vec![KeyValue::new(YEARS_KEY.to_owned(), years)]));
    }
    let mut buf = Vec::with_capacity(rows.len() * 48 + 1024);
    let mut writer = ArrowWriter::try_new(&mut buf, rollup_schema(), Some(props.build()))?;
    for series in rows.chunk_by(same_series) {
        writer.write(&batch_of(series)?)?;
        writer.flush()?;
    }
    writer.close()?;
    Ok(Bytes::from(buf))
}

fn batch_of<R: Borrow<DayRow>>(rows: &[R]) -> Result<RecordBatch> {
    let rows = || rows.iter().map(Borrow::borrow);
    let mut parameters = StringDictionaryBuilder::<Int32Type>::new();
    for r in rows() {
        parameters.append_value(r.parameter.as_str());
    }
    let times = |f: fn(&DayRow) -> Micros| -> ArrayRef {
        Arc::new(TimestampMicrosecondArray::from_iter_values(rows().map(f)).with_timezone(UTC))
    };
    let numbers = |f: fn(&DayRow) -> f64| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(rows().map(f)))
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(parameters.finish()),
        times(|r| r.day),
        Arc::new(Int64Array::from_iter_values(rows().map(|r| r.count))),
        numbers(|r| r.sum),
        numbers(|r| r.min),
        times(|r| r.min_time),
        numbers(|r| r.max),
        times(|r| r.max_time),
        numbers(|r| r.first),
        times(|r| r.first_time),
        numbers(|r| r.last),
        times(|r| r.last_time),
    ];
    Ok(RecordBatch::try_new(rollup_schema(), columns)?)
}

/// The rows of a rollup file (`name` for errors), of `parameter` only when given.
pub(crate) fn decode_rollups(
    name: &str,
    bytes: Bytes,
    parameter: Option<&ParameterId>,
) -> Result<Vec<DayRow>> {
    let corrupt = |e: &dyn std::fmt::Display| EngineError::corrupt(format!("{name}: {e}"));
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(|e| corrupt(&e))?;
    // A row group per parameter: only the asked one's is decoded (by its statistics).
    let groups: Vec<usize> = builder
        .metadata()
        .row_groups()
        .iter()
        .enumerate()
        .filter(|(_, g)| {
            let Some(want) = parameter else { return true };
            let stats = g.column(0).statistics();
            let is = |v: Option<&[u8]>| v == Some(want.as_str().as_bytes());
            stats.is_none_or(|s| is(s.min_bytes_opt()) && is(s.max_bytes_opt()))
        })
        .map(|(i, _)| i)
        .collect();
    let reader = builder
        .with_row_groups(groups)
        .build()
        .map_err(|e| corrupt(&e))?;
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| corrupt(&e))?;
        if batch.schema().fields() != rollup_schema().fields() {
            return Err(corrupt(&"not a rollup file"));
        }
        let parameters = cast(batch.column(0), &DataType::Utf8).map_err(|e| corrupt(&e))?;
        let parameters = parameters.as_string::<i32>();
        let time = |i: usize| batch.column(i).as_primitive::<TimestampMicrosecondType>();
        let number = |i: usize| batch.column(i).as_primitive::<Float64Type>();
        let counts = batch.column(2).as_primitive::<Int64Type>();
        let (days, min_times, max_times) = (time(1), time(5), time(7));
        let (first_times, last_times) = (time(9), time(11));
        let (sums, mins, maxs, firsts, lasts) =
            (number(3), number(4), number(6), number(8), number(10));
        let mut id: Option<ParameterId> = None;
        for i in 0..batch.num_rows() {
            let text = parameters.value(i);
            if id.as_ref().is_none_or(|p| p.as_str() != text) {
                id = Some(text.parse().map_err(|e| corrupt(&e))?);
            }
            let Some(p) = id.as_ref() else { continue };
            if parameter.is_some_and(|want| want != p) {
                continue;
            }
            out.push(DayRow {
                parameter: p.clone(),
                day: days.value(i),
                count: counts.value(i),
                sum: sums.value(i),
                min: mins.value(i),
                min_time: min_times.value(i),
                max: maxs.value(i),
                max_time: max_times.value(i),
                first: firsts.value(i),
                first_time: first_times.value(i),
                last: lasts.value(i),
                last_time: last_times.value(i),
            });
        }
    }
    Ok(out)
}

/// The rows of the rollup part `part` in `store`, of `parameter` only when given.
pub(crate) async fn read_part(
    store: &dyn ObjectStore,
    part: &RollupFile,
    parameter: Option<&ParameterId>,
) -> Result<Vec<DayRow>> {
    let path = part.path();
    let bytes = store.get(&Path::from(path.as_str())).await?.bytes().await?;
    decode_rollups(&path, bytes, parameter)
}

/// A part of a station's rollups as the rollups table lists it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RollupFile {
    pub station: StationId,
    /// The publish that wrote it (in its name).
    pub generation: u64,
    pub size: u64,
    /// Its first and last day; None in a table written before parts (the station's one file,
    /// taken to cover every year). Publishes write no part without rows.
    pub days: Option<(Micros, Micros)>,
}

impl RollupFile {
    pub(crate) fn path(&self) -> String {
        match self.years() {
            Some((first, last)) => {
                layout::rollup_part_path(&self.station, first, last, self.generation)
            }
            None => layout::rollup_path(&self.station, self.generation),
        }
    }

    /// The UTC years of its first and last day.
    pub(crate) fn years(&self) -> Option<(i32, i32)> {
        self.days
            .map(|(first, last)| (Month::of(first).year(), Month::of(last).year()))
    }

    /// Whether it may hold days of the UTC years `first..=last` (a part of unknown days may).
    pub(crate) fn may_hold_years(&self, first: i32, last: i32) -> bool {
        self.years().is_none_or(|(a, b)| a <= last && first <= b)
    }

    /// Whether it may hold days that overlap `[lo, hi]` (microseconds, UTC).
    pub(crate) fn may_hold(&self, lo: Micros, hi: Micros) -> bool {
        self.days
            .is_none_or(|(first, last)| first <= hi && lo < last.saturating_add(DAY))
    }
}

/// Each station's parts, ascending by their days (they cover disjoint years; a part of
/// unknown days is a station's only one).
pub(crate) fn by_station(files: Vec<RollupFile>) -> HashMap<StationId, Vec<RollupFile>> {
    let mut out: HashMap<StationId, Vec<RollupFile>> = HashMap::new();
    for f in files {
        out.entry(f.station.clone()).or_default().push(f);
    }
    for parts in out.values_mut() {
        parts.sort_by_key(|p| p.days);
    }
    out
}

fn table_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("station", DataType::Utf8, false),
        Field::new("generation", DataType::UInt64, false),
        Field::new("size", DataType::UInt64, false),
        Field::new("path", DataType::Utf8, false),
        Field::new("firstDay", time(), true),
        Field::new("lastDay", time(), true),
    ]))
}

/// The rollups table of `files`. `path` follows from the other columns (the engine reads it
/// from them); it is written for readers outside, whose list of a version's rollup files it is.
pub(crate) fn encode_table(files: &[RollupFile]) -> Result<Bytes> {
    let day = |f: fn((Micros, Micros)) -> Micros| -> ArrayRef {
        Arc::new(
            files
                .iter()
                .map(|r| r.days.map(f))
                .collect::<TimestampMicrosecondArray>()
                .with_timezone(UTC),
        )
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            files.iter().map(|f| f.station.as_str()),
        )),
        Arc::new(UInt64Array::from_iter_values(
            files.iter().map(|f| f.generation),
        )),
        Arc::new(UInt64Array::from_iter_values(files.iter().map(|f| f.size))),
        Arc::new(StringArray::from_iter_values(
            files.iter().map(|f| f.path()),
        )),
        day(|(first, _)| first),
        day(|(_, last)| last),
    ];
    let batch = RecordBatch::try_new(table_schema(), columns)?;
    let mut buf = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut buf, table_schema(), Some(writer_properties()))?;
    writer.write(&batch)?;
    writer.close()?;
    Ok(Bytes::from(buf))
}

/// The rollup files a rollups table lists, with ids sharing the catalog's texts.
pub(crate) fn decode_table(bytes: Bytes, texts: &mut Interner) -> Result<Vec<RollupFile>> {
    let (_, batches) = from_parquet(bytes, W)?;
    let mut out = Vec::new();
    for batch in batches {
        let batch = batch?;
        let stations = column::<StringArray>(&batch, "station", W)?;
        let generations = column::<UInt64Array>(&batch, "generation", W)?;
        let sizes = column::<UInt64Array>(&batch, "size", W)?;
        // Tables written before parts have neither.
        let firsts = optional_column::<TimestampMicrosecondArray>(&batch, "firstDay", W)?;
        let lasts = optional_column::<TimestampMicrosecondArray>(&batch, "lastDay", W)?;
        for i in 0..batch.num_rows() {
            let days = match (firsts, lasts) {
                (Some(f), Some(l)) if f.is_valid(i) && l.is_valid(i) => {
                    let days = (f.value(i), l.value(i));
                    if days.0 > days.1 {
                        return Err(EngineError::corrupt(format!(
                            "{W}: row {i}: firstDay after lastDay"
                        )));
                    }
                    Some(days)
                }
                _ => None,
            };
            out.push(RollupFile {
                station: texts.id(stations.value(i), W)?,
                generation: generations.value(i),
                size: sizes.value(i),
                days,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_split_at_utc_midnight_and_keep_the_first_extreme() {
        let p: ParameterId = "q".parse().unwrap();
        let h = DAY / 24;
        let times = [22 * h, 23 * h, DAY, DAY + h, DAY + 2 * h];
        let values = [1.0, 3.0, 2.0, 2.0, 0.5];
        let rows = days_of(&p, &times, &values, Zone::UTC);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].day, rows[0].count, rows[0].sum), (0, 2, 4.0));
        assert_eq!((rows[0].max, rows[0].max_time), (3.0, 23 * h));
        assert_eq!((rows[1].max, rows[1].max_time), (2.0, DAY), "first on ties");
        assert_eq!((rows[1].first, rows[1].last), (2.0, 0.5));
        let bytes = encode_rollups(&rows, None).unwrap();
        assert_eq!(decode_rollups("t", bytes.clone(), None).unwrap(), rows);
        let other: ParameterId = "w".parse().unwrap();
        assert!(decode_rollups("t", bytes, Some(&other)).unwrap().is_empty());
    }

    /// The codec's contexts are made per column chunk and page (see `encode_rollups`): a
    /// series of 50 years is one page a column, zstd only where it shrinks the column.
    #[test]
    fn a_series_is_a_page_a_column_and_zstd_only_where_it_pays() {
        use datafusion::parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};
        let rows: Vec<DayRow> = ["q", "w"]
            .iter()
            .flat_map(|p| {
                let p: ParameterId = p.parse().unwrap();
                (0..365 * 50).map(move |d| DayRow::hourly(&p, d * DAY, (d % 997) as f64 / 100.0))
            })
            .collect();
        let bytes = encode_rollups(&rows, None).unwrap();
        let meta = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Required)
            .parse_and_finish(&bytes)
            .unwrap();
        assert_eq!(meta.num_row_groups(), 2, "a row group per parameter");
        let pages = meta.offset_index().unwrap();
        for (g, group) in meta.row_groups().iter().enumerate() {
            for (c, chunk) in group.columns().iter().enumerate() {
                assert_eq!(
                    pages[g][c].page_locations().len(),
                    1,
                    "{}",
                    chunk.column_path()
                );
                let name = chunk.column_path().string();
                let zstd = matches!(chunk.compression(), Compression::ZSTD(_));
                assert_eq!(
                    zstd,
                    !["parameter", "day", "count"].contains(&name.as_str()),
                    "{name}"
                );
            }
        }
        assert_eq!(decode_rollups("t", bytes, None).unwrap(), rows);

        // A year's part: LZ4 throughout.
        let year: Vec<DayRow> = rows.into_iter().filter(|r| r.day < 366 * DAY).collect();
        let bytes = encode_rollups(&year, None).unwrap();
        let meta = ParquetMetaDataReader::new()
            .parse_and_finish(&bytes)
            .unwrap();
        for group in meta.row_groups() {
            for chunk in group.columns() {
                assert_eq!(
                    chunk.compression(),
                    Compression::LZ4_RAW,
                    "{}",
                    chunk.column_path()
                );
            }
        }
        assert_eq!(decode_rollups("t", bytes, None).unwrap(), year);
    }

    /// Parts read back with their days and the paths they name; a table written before parts
    /// (no days) names the station's one file; days that end before they start are refused.
    #[test]
    fn the_rollups_table_lists_parts_and_reads_tables_before_them() {
        let part = RollupFile {
            station: "s".parse().unwrap(),
            generation: 7,
            size: 10,
            days: Some((micros_of_day(2023, 3), micros_of_day(2024, 1))),
        };
        let legacy = RollupFile {
            station: "t".parse().unwrap(),
            days: None,
            ..part.clone()
        };
        let files = vec![part.clone(), legacy.clone()];
        let read = decode_table(encode_table(&files).unwrap(), &mut Interner::default()).unwrap();
        assert_eq!(read, files);
        assert_eq!(part.path(), "rollups/station=s/2023-2024-g7.parquet");
        assert_eq!(legacy.path(), "rollups/station=t/part-7.parquet");
        assert!(legacy.may_hold_years(1900, 1900) && !part.may_hold_years(2025, 2030));

        // The columns before parts only.
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(table_schema().fields()[..3].to_vec())),
            vec![
                Arc::new(StringArray::from(vec!["t"])),
                Arc::new(UInt64Array::from(vec![7])),
                Arc::new(UInt64Array::from(vec![10])),
            ],
        )
        .unwrap();
        let mut buf = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut buf, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let read = decode_table(Bytes::from(buf), &mut Interner::default()).unwrap();
        assert_eq!(read, [legacy]);

        let backwards = RollupFile {
            days: Some((micros_of_day(2024, 1), micros_of_day(2023, 3))),
            ..part
        };
        let err = decode_table(
            encode_table(&[backwards]).unwrap(),
            &mut Interner::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("firstDay after lastDay"), "{err}");
    }

    /// Midnight UTC of the `day`th day of `year` (days from 0), roughly: for test days only.
    fn micros_of_day(year: i64, day: i64) -> Micros {
        ((year - 1970) * 365 + (year - 1969) / 4 + day) * DAY
    }
}
