//! Where things live in a dataset and what the files look like.
//!
//! ```text
//! <root>/manifest.json                         the published version: the only entry point
//! <root>/catalog/stations-<g>.parquet          stations
//! <root>/catalog/parameters-<g>.parquet        parameters with availability
//! <root>/catalog/characteristics-<g>.parquet   characteristic values
//! <root>/catalog/files-<g>.parquet             value files: one row per file and parameter
//! <root>/catalog/rollups-<g>.parquet          rollup files: one row per station
//! <root>/catalog/newest-<g>.parquet           each series' newest month: the files table's rows of it
//! <root>/values/station=<id>/<YYYY-MM>-g<g>.parquet   a station-month of values
//! <root>/values/station=<id>/<YYYY>-g<g>.parquet      a station-year of them (`hydro compact`)
//! <root>/rollups/station=<id>/<YYYY>-<YYYY>-g<g>.parquet  daily summaries of a station's series, some years
//! <root>/versions/<g>.json                     each published version's manifest
//! ```
//!
//! `<g>` is the generation of the import that wrote the file. Readers open only what the
//! manifest names, so files of an import that has not published (or crashed) are invisible,
//! and nothing ever needs a LIST of the store. Value files hold one station-month, sorted by
//! (parameter, timestamp), one row group per parameter, page statistics and page index on:
//! a series window touches one row group per month and only the pages it needs. Compaction
//! joins a station-year's months into one file of the same schema, their row groups as they
//! were, month after month. Every value file lies under one Hive key, `station=<id>`, with its
//! period in its name, so a reader of `values/` sees one partition column of one type.
//!
//! Layouts 2 and 3 named month files `values/station=<id>/month=<YYYY-MM>/part-<g>.parquet`
//! and layout 3 packed them into `values/station=<id>/year=<YYYY>/months-<g>.pack`; both are
//! still read ([`month_dir_path`], [`pack_path`]).
//!
//! Encoding and codec are chosen for reading whole months fast (see [`writer_properties`]):
//! timestamps delta-encoded, LZ4 (raw) pages, values in a dictionary only where they repeat
//! (see [`value_file_properties`]).

use crate::model::ids::StationId;
use crate::model::month::Month;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::parquet::basic::{Compression, Encoding};
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use datafusion::parquet::schema::types::ColumnPath;
use std::collections::HashSet;
use std::sync::{Arc, LazyLock};

pub(crate) const MANIFEST: &str = "manifest.json";

/// The time zone of the `timestamp` column: values are UTC instants.
pub(crate) const UTC: &str = "UTC";

pub(crate) const COL_PARAMETER: &str = "parameter";
/// The Hive key of the value and rollup files' paths (`values/station=<id>/…`): a column as
/// readers of the archive (and its SQL tables) see it.
pub(crate) const COL_STATION: &str = "station";
pub(crate) const COL_TIMESTAMP: &str = "timestamp";
pub(crate) const COL_VALUE: &str = "value";
pub(crate) const COL_QUALITY: &str = "quality";

/// Rows per data page. A month of a 15-minute series (at most 2 976 rows) is two pages, so a
/// one-day window inside it decodes at most 2 048 rows, while a whole-month read pays the per-page
/// costs (header, decompression, decoder setup) only twice a column. Pages of 1 024 rows cost a
/// 10-year CSV download 12 % more CPU time (`benches/ab.py`; the history of `benches/RESULTS.md`).
pub(crate) const PAGE_ROWS: usize = 2048;

fn dict_utf8() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// The schema of every value file, as the engine reads it: `value` required. A month with
/// recorded gaps (rows of quality `missing`, which have no value) is written with `value`
/// nullable ([`values_schema_with_gaps`]); its nulls are read as NaN (see [`crate::model::gap`]).
pub(crate) fn values_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| schema_with_value(false));
    Arc::clone(&SCHEMA)
}

/// The schema of a value file with recorded gaps: `value` nullable. Months without gaps keep
/// it required, so their pages carry no levels and decode on the fast path
/// (`parquet::pages`).
pub(crate) fn values_schema_with_gaps() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| schema_with_value(true));
    Arc::clone(&SCHEMA)
}

fn schema_with_value(nullable: bool) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(COL_PARAMETER, dict_utf8(), false),
        Field::new(
            COL_TIMESTAMP,
            DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into())),
            false,
        ),
        Field::new(COL_VALUE, DataType::Float64, nullable),
        Field::new(COL_QUALITY, dict_utf8(), false),
    ]))
}

/// A station-month's value file.
pub(crate) fn values_path(station: &StationId, month: Month, generation: u64) -> String {
    format!("values/station={station}/{month}-g{generation}.parquet")
}

/// A station-year's value file, written by `hydro compact` (see `write::compact`).
pub(crate) fn year_path(station: &StationId, year: i32, generation: u64) -> String {
    format!("values/station={station}/{year:04}-g{generation}.parquet")
}

/// A station-month's value file as layouts 2 and 3 named it.
pub(crate) fn month_dir_path(station: &StationId, month: Month, generation: u64) -> String {
    format!("values/station={station}/month={month}/part-{generation}.parquet")
}

/// A station's rollup file as publishes before rollup parts named it (one a station), and a
/// part without rows (see `dataset::rollups`).
pub(crate) fn rollup_path(station: &StationId, generation: u64) -> String {
    format!("rollups/station={station}/part-{generation}.parquet")
}

/// A part of a station's rollups: its days of the UTC years `first..=last` (see
/// `dataset::rollups`).
pub(crate) fn rollup_part_path(
    station: &StationId,
    first: i32,
    last: i32,
    generation: u64,
) -> String {
    format!("rollups/station={station}/{first:04}-{last:04}-g{generation}.parquet")
}

/// A station-year's pack as layout 3 wrote it: its month files back to back.
pub(crate) fn pack_path(station: &StationId, year: i32, generation: u64) -> String {
    format!("values/station={station}/year={year:04}/months-{generation}.pack")
}

/// Whether `name` is the name of a value file (of any layout) or pack written by
/// `generation`.
pub(crate) fn written_by(name: &str, generation: u64) -> bool {
    let file = name.rsplit_once('/').map_or(name, |(_, f)| f);
    file.strip_suffix(".parquet")
        .and_then(|n| {
            n.strip_prefix("part-")
                .or_else(|| Some(n.rsplit_once("-g")?.1))
        })
        .or_else(|| file.strip_suffix(".pack")?.strip_prefix("months-"))
        .is_some_and(|g| g.parse() == Ok(generation))
}

/// The record of a published version: a copy of its manifest, kept until vacuum removes the
/// version.
pub(crate) fn version_path(generation: u64) -> String {
    format!("versions/{generation}.json")
}

pub(crate) fn catalog_path(table: &str, generation: u64) -> String {
    format!("catalog/{table}-{generation}.parquet")
}

/// Writer settings of a value file. `repeating_values`: whether the file's values repeat
/// enough for a dictionary (see [`values_repeat`]); when nearly every value is distinct, the
/// dictionary page is as large as the values and decoding goes through it for nothing.
pub(crate) fn value_file_properties(repeating_values: bool) -> WriterProperties {
    writer_properties()
        .into_builder()
        .set_column_dictionary_enabled(ColumnPath::from(COL_VALUE), repeating_values)
        .build()
}

/// Whether at most a quarter of the values are distinct. Measurements at a fixed resolution
/// (water levels in whole centimetres) repeat and shrink in a dictionary; a 15-minute series
/// of discharges with two decimals has ~85 % distinct values in a month, and without a
/// dictionary its downloads took 9-11 % less CPU (CSV and Arrow IPC, `benches/ab.py`) for a
/// 9 % larger archive.
pub(crate) fn values_repeat(values: impl IntoIterator<Item = f64>) -> bool {
    let mut rows = 0usize;
    let mut distinct = HashSet::new();
    for v in values.into_iter().filter(|v| !v.is_nan()) {
        rows += 1;
        distinct.insert(v.to_bits());
    }
    distinct.len() * 4 <= rows
}

/// Writer settings shared by value and catalog files.
///
/// Timestamps are DELTA_BINARY_PACKED: a regular series has one constant delta, so a page of
/// timestamps shrinks to a few bytes (a dictionary of distinct instants costs 12 bits a row).
/// Pages are LZ4 (raw), not zstd, which DESIGN.md names: measured on the 20-station × 10-year
/// bench archive, LZ4 with delta timestamps is 66 MB against zstd's 120 MB with dictionary
/// timestamps, and an Arrow download of a 10-year series took 11 ms instead of 17 ms. A month
/// holds only ~3 000 rows per series, so per-column-chunk costs dominate, and the zstd codec
/// issues `cpuid` twice for every column chunk it opens (a VM exit on virtual machines like
/// ours: a fifth of the CPU time of a download in `perf`).
pub(crate) fn writer_properties() -> WriterProperties {
    let timestamp = ColumnPath::from(COL_TIMESTAMP);
    WriterProperties::builder()
        .set_compression(Compression::LZ4_RAW)
        .set_column_dictionary_enabled(timestamp.clone(), false)
        .set_column_encoding(timestamp, Encoding::DELTA_BINARY_PACKED)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_data_page_row_count_limit(PAGE_ROWS)
        .set_write_batch_size(PAGE_ROWS)
        .set_max_row_group_row_count(Some(1 << 20))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_of_every_layout_are_known_by_their_generation() {
        let s: StationId = "a-g1".parse().unwrap();
        let m: Month = "2024-03".parse().unwrap();
        for name in [
            values_path(&s, m, 12),
            year_path(&s, 2024, 12),
            month_dir_path(&s, m, 12),
            pack_path(&s, 2024, 12),
        ] {
            assert!(written_by(&name, 12), "{name}");
            assert!(!written_by(&name, 1), "{name}");
        }
        assert_eq!(
            values_path(&s, m, 12),
            "values/station=a-g1/2024-03-g12.parquet"
        );
        assert!(!written_by("values/station=a/notes.txt", 12));
    }
}
