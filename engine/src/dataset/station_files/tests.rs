//! The files table by station: indexing, decoding years, passes and carrying, on tables
//! written for each case.

use super::*;
use crate::dataset::catalog_file::{Interner, from_parquet};
use crate::dataset::files_table::{FilesTableWriter, PLACE_COLUMNS, decode_files};
use crate::model::month::Month;
use crate::storage::counted::{Counted, RequestCounts, RequestKind};
use bytes::Bytes;
use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::object_store::memory::InMemory;
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::properties::WriterProperties;
use std::collections::BTreeSet;

fn file(station: &str, month: Month) -> ValueFile {
    let series = |parameter: &str| SeriesStats {
        parameter: parameter.parse().unwrap(),
        rows: 3,
        missing: 0,
        min: 0,
        max: 2,
    };
    ValueFile {
        station: station.parse().unwrap(),
        month,
        generation: 1,
        size: 100,
        series: Box::new([series("p"), series("q")]),
        stored: Stored::File,
    }
}

fn months(n: usize) -> impl Iterator<Item = Month> {
    (0..n).map(|i| {
        format!("{}-{:02}", 2001 + i / 12, i % 12 + 1)
            .parse()
            .unwrap()
    })
}

/// 40 stations of 120 months (two row groups, station `s34` across both), and `late`
/// with months at the start and the end of the table.
fn listed() -> Vec<ValueFile> {
    let mut files: Vec<ValueFile> = months(6).map(|m| file("late", m)).collect();
    for s in 0..40 {
        files.extend(months(120).map(|m| file(&format!("s{s}"), m)));
    }
    files.extend(months(12).skip(6).map(|m| file("late", m)));
    files
}

async fn table(files: Vec<ValueFile>) -> Bytes {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let mut table = FilesTableWriter::new(Arc::clone(&store), 1).unwrap();
    for f in files {
        table.add(f).await.unwrap();
    }
    let path = table.finish().await.unwrap().files;
    let got = store.get(&Path::from(path)).await.unwrap();
    got.bytes().await.unwrap()
}

/// The same rows with row groups of `rows` rows, cut anywhere (as tables were written
/// before row groups held whole files).
fn regrouped(bytes: Bytes, rows: usize) -> Bytes {
    rewritten(
        bytes,
        WriterProperties::builder().set_max_row_group_row_count(Some(rows)),
    )
}

/// The same rows with texts written as they are (no dictionary pages), as another writer
/// might (or the parquet crate, past its dictionary's size limit).
fn without_dictionaries(bytes: Bytes) -> Bytes {
    rewritten(
        bytes,
        WriterProperties::builder()
            .set_max_row_group_row_count(Some(4000))
            .set_dictionary_enabled(false),
    )
}

fn rewritten(
    bytes: Bytes,
    props: datafusion::parquet::file::properties::WriterPropertiesBuilder,
) -> Bytes {
    let (_, batches) = from_parquet(bytes, "test").unwrap();
    let batches: Vec<_> = batches.map(|b| b.unwrap()).collect();
    let props = props.build();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batches[0].schema(), Some(props)).unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    Bytes::from(out)
}

/// The table `bytes`, in a store of its own, indexed by station, its stations' decoded
/// files kept within `budget`.
async fn by_station(bytes: Bytes, budget: usize) -> FilesByStation {
    in_store(bytes, budget).await.unwrap()
}

async fn in_store(bytes: Bytes, budget: usize) -> Result<FilesByStation> {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = "catalog/files-1.parquet";
    store.put(&Path::from(path), bytes.into()).await.unwrap();
    let cache = Arc::new(FilesCache::new(budget));
    FilesByStation::open(store, path.into(), cache).await
}

/// Writes `bytes` (the table `index` was opened from) to `path` of `store` again, with the
/// first column chunk of row group `group` spoiled.
async fn spoil_group(
    store: &dyn ObjectStore,
    path: &Path,
    bytes: &Bytes,
    index: &FilesByStation,
    group: usize,
) {
    let (start, len) = index
        .metadata
        .metadata()
        .row_group(group)
        .column(0)
        .byte_range();
    let mut damaged = bytes.to_vec();
    damaged[start as usize..(start + len) as usize].fill(0xff);
    store.put(path, Bytes::from(damaged).into()).await.unwrap();
}

/// Each station's files as the whole table lists them, ascending by month.
fn expected(bytes: &Bytes, station: &StationId) -> Vec<ValueFile> {
    let all = decode_files(bytes.clone(), &mut Interner::default()).unwrap();
    let mut files: Vec<ValueFile> = all.into_iter().filter(|f| &f.station == station).collect();
    files.sort_by_key(|f| f.month);
    files
}

/// A station's runs of rows, as (year, rows).
fn runs(index: &FilesByStation, station: &str) -> Vec<(i32, Range<u64>)> {
    let located = &index.stations[&station.parse::<StationId>().unwrap()];
    located
        .years
        .iter()
        .map(|y| (y.year, y.rows.clone()))
        .collect()
}

async fn got(index: &FilesByStation, station: &StationId) -> Vec<ValueFile> {
    let months = index.get(station).await.unwrap();
    months.iter().map(|m| m.file.clone()).collect()
}

#[tokio::test]
async fn each_station_gets_its_files_from_its_row_groups() {
    let bytes = table(listed()).await;
    for bytes in [
        bytes.clone(),
        regrouped(bytes.clone(), 7),
        without_dictionaries(bytes),
    ] {
        let index = by_station(bytes.clone(), FILES_CACHE_BYTES).await;
        assert!(index.metadata.metadata().num_row_groups() >= 2);
        assert_eq!(index.stations().len(), 41);
        assert_eq!(index.stations()[0].as_str(), "late");
        assert_eq!(runs(&index, "late"), [(2001, 0..12), (2001, 9612..9624)]);
        let end = |s: &str| index.rows_end(&s.parse().unwrap());
        assert_eq!(
            (end("late"), end("s0"), end("nowhere")),
            (Some(9624), Some(252), None)
        );
        for station in index.stations() {
            assert_eq!(
                got(&index, station).await,
                expected(&bytes, station),
                "{station}"
            );
        }
        assert!(
            index
                .get(&"nowhere".parse().unwrap())
                .await
                .unwrap()
                .is_empty()
        );
    }
}

#[tokio::test]
async fn files_of_stations_written_side_by_side_are_one_run_a_year_each() {
    let mut files = Vec::new();
    for m in months(24) {
        files.extend(["a", "b"].map(|s| file(s, m)));
    }
    files.extend(months(3).map(|m| file("c", m)));
    let bytes = table(files).await;
    let index = by_station(bytes.clone(), FILES_CACHE_BYTES).await;
    // Each station's one run a year.
    assert_eq!(runs(&index, "a"), [(2001, 0..46), (2002, 48..94)]);
    assert_eq!(runs(&index, "b"), [(2001, 2..48), (2002, 50..96)]);
    assert_eq!(runs(&index, "c"), [(2001, 96..102)]);
    for station in index.stations() {
        assert_eq!(
            got(&index, station).await,
            expected(&bytes, station),
            "{station}"
        );
    }
}

#[tokio::test]
async fn the_writer_closes_row_groups_between_files() {
    let bytes = table(listed()).await;
    let index = by_station(bytes, FILES_CACHE_BYTES).await;
    let groups = index.metadata.metadata().row_groups();
    // 4 096 files of two series each, then the rest.
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0].num_rows(), 8192);
    let s34 = runs(&index, "s34");
    assert_eq!(s34.len(), 10);
    assert_eq!(
        (&s34[0], &s34[9]),
        (&(2001, 8172..8196), &(2010, 8388..8412))
    );
    assert_eq!(index.group_starts, [0, 8192, 9624]);
}

#[tokio::test]
async fn decoded_stations_stay_within_the_budget() {
    let bytes = regrouped(table(listed()).await, 500);
    // About three stations of 120 months.
    let budget = 3 * 120 * (size_of::<MonthFile>() + 2 * size_of::<SeriesStats>() + 8);
    let index = by_station(bytes.clone(), budget).await;
    for _ in 0..2 {
        for station in index.stations() {
            assert_eq!(
                got(&index, station).await,
                expected(&bytes, station),
                "{station}"
            );
            assert!(index.cache.bytes() <= budget);
        }
    }
    assert!(index.cache.bytes() > 0);
}

#[tokio::test]
async fn each_series_newest_month_is_kept_once_its_station_was_decoded() {
    let mut files = listed();
    // `q` of station s0 ends a month before `p`.
    for f in files.iter_mut().filter(|f| f.station.as_str() == "s0") {
        if f.month == months(120).last().unwrap() {
            f.series[1].rows = 0;
        }
    }
    let bytes = table(files).await;
    // A budget that keeps no station: each is decoded anew every time.
    let index = by_station(bytes, 1).await;
    let (s0, p, q) = (
        "s0".parse().unwrap(),
        "p".parse().unwrap(),
        "q".parse().unwrap(),
    );
    assert!(
        index.newest(&s0, &p).is_none(),
        "not before the station is decoded"
    );
    let first = index.get(&s0).await.unwrap();
    let newest_p = index.newest(&s0, &p).unwrap();
    let newest_q = index.newest(&s0, &q).unwrap();
    assert_eq!(newest_p.month.file.month, months(120).last().unwrap());
    assert_eq!(newest_q.month.file.month, months(119).last().unwrap());
    assert!(Arc::ptr_eq(&newest_p.month, first.last().unwrap()));
    // Decoded again after it left the budget, the station lists the kept month files
    // themselves, so that what their slots hold (footers, bytes) is found again.
    drop(first);
    let again = index.get(&s0).await.unwrap();
    assert!(Arc::ptr_eq(&newest_p.month, again.last().unwrap()));
    assert!(Arc::ptr_eq(&newest_q.month, &again[again.len() - 2]));
    assert!(index.newest(&s0, &"r".parse().unwrap()).is_none());
}

#[tokio::test]
async fn a_window_decodes_only_its_years_and_keeps_them_beside_those_decoded_before() {
    let bytes = table(listed()).await;
    let index = by_station(bytes.clone(), FILES_CACHE_BYTES).await;
    let s0: StationId = "s0".parse().unwrap();
    let years = |months: &StationFiles| {
        let mut years: Vec<i32> = months.iter().map(|m| m.file.month.year()).collect();
        years.dedup();
        years
    };
    let first = index.get_years(&s0, 2003..=2003).await.unwrap();
    assert_eq!((first.len(), years(&first)), (12, vec![2003]));
    assert!(index.newest(&s0, &"p".parse().unwrap()).is_none());
    let more = index.get_years(&s0, 2005..=2006).await.unwrap();
    assert_eq!(years(&more), [2003, 2005, 2006]);
    assert!(
        Arc::ptr_eq(&first[0], &more[0]),
        "the year decoded before, as kept"
    );
    // Years already kept are not decoded again: the same files come back.
    assert!(Arc::ptr_eq(
        &index.get_years(&s0, 2005..=2005).await.unwrap(),
        &more
    ));
    let last = index.get_last_year(&s0).await.unwrap();
    assert_eq!(years(&last), [2003, 2005, 2006, 2010]);
    // The whole station: every year, the ones kept among them, and each series' newest
    // month known from then on.
    let all = index.get(&s0).await.unwrap();
    assert_eq!(got(&index, &s0).await, expected(&bytes, &s0));
    assert!(Arc::ptr_eq(&first[0], &all[24]));
    let newest = index.newest(&s0, &"p".parse().unwrap()).unwrap();
    assert!(Arc::ptr_eq(&newest.month, all.last().unwrap()));
    // Years the station has no files in: nothing decoded, nothing found.
    let none = by_station(bytes, FILES_CACHE_BYTES).await;
    assert!(none.get_years(&s0, 1990..=1999).await.unwrap().is_empty());
    assert_eq!(none.cache.bytes(), 0);
}

#[tokio::test]
async fn months_of_station_year_files_keep_where_they_lie_beside_files_of_their_own() {
    // s1's months joined into station-year files (their place columns set), in the first
    // row group with month files of their own; the second row group has none.
    let mut files = listed();
    for f in files.iter_mut().filter(|f| f.station.as_str() == "s1") {
        let k = f.month.number() - 1;
        f.stored = Stored::Year(crate::dataset::manifest::InYear {
            generation: 7,
            first_row_group: 2 * k,
            row_groups: 24,
            start: 1000 * u64::from(k),
            footer: 12_000,
        });
    }
    let bytes = table(files).await;
    let index = by_station(bytes.clone(), FILES_CACHE_BYTES).await;
    let in_groups = |groups: &[usize]| {
        let mask = index.projection(groups);
        let schema = index.metadata.metadata().file_metadata().schema_descr();
        PLACE_COLUMNS
            .iter()
            .filter(|name| {
                let c = (0..schema.num_columns())
                    .find(|&c| schema.column(c).name() == **name)
                    .unwrap();
                mask.leaf_included(c)
            })
            .count()
    };
    // `offset` (packs only) is null in both; the others only in the second.
    assert_eq!(
        (in_groups(&[0]), in_groups(&[1]), in_groups(&[0, 1])),
        (5, 0, 5)
    );
    for station in index.stations() {
        assert_eq!(
            got(&index, station).await,
            expected(&bytes, station),
            "{station}"
        );
    }
    let s1 = got(&index, &"s1".parse().unwrap()).await;
    assert!(matches!(s1[13].stored, Stored::Year(y) if y.first_row_group == 2));
}

#[tokio::test]
async fn damaged_pages_fail_their_stations_only() {
    let bytes = table(listed()).await;
    let index = by_station(bytes.clone(), FILES_CACHE_BYTES).await;
    let meta = index.metadata.metadata();
    let rows_column = meta
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .position(|c| c.name() == "rows")
        .unwrap();
    let mut damaged = bytes.to_vec();
    let mut spoil = |start: u64, len: u64| {
        for b in &mut damaged[start as usize..(start + len) as usize] {
            *b = 0xff;
        }
    };
    // The whole `rows` chunk of row group 1, and the last page of it in row group 0
    // (rows 7 936 to 8 191: stations s33 and s34).
    let (start, len) = meta.row_group(1).column(rows_column).byte_range();
    spoil(start, len);
    let pages = &index.metadata.metadata().offset_index().unwrap()[0][rows_column];
    let last = pages.page_locations().last().unwrap();
    assert_eq!(last.first_row_index, 7936);
    spoil(last.offset as u64, last.compressed_page_size as u64);
    let index = by_station(Bytes::from(damaged), FILES_CACHE_BYTES).await;
    for (station, groups) in [("s39", "[1]"), ("s33", "[0]"), ("s34", "[0, 1]")] {
        let Err(e) = index.get(&station.parse().unwrap()).await else {
            panic!("{station}: a damaged page decoded");
        };
        let says = format!("files table catalog/files-1.parquet, row groups {groups}");
        assert!(e.to_string().contains(&says), "{station}: {e}");
        assert!(matches!(e.kind(), crate::error::ErrorKind::Corrupt));
    }
    // Stations on other pages answer: their pages are the only ones decoded.
    for station in ["s0", "s28", "s32"] {
        assert_eq!(got(&index, &station.parse().unwrap()).await.len(), 120);
    }
}

/// The index knows which months each station lists, without a read: every month of its
/// files, and no other (`late` lists the first half of 2001, then the second half far
/// from it in the table; the stations ten years of months).
#[tokio::test]
async fn the_index_says_which_months_a_station_lists() {
    let bytes = regrouped(table(listed()).await, 500);
    let index = by_station(bytes.clone(), 0).await;
    for station in index.stations() {
        let listed: BTreeSet<Month> = expected(&bytes, station).iter().map(|f| f.month).collect();
        assert!(!listed.is_empty());
        for month in months(12 * 12) {
            assert_eq!(
                index.lists_month(station, month),
                listed.contains(&month),
                "{station} {month}"
            );
        }
    }
    let nowhere: StationId = "nowhere".parse().unwrap();
    assert!(!index.lists_month(&nowhere, "2001-01".parse().unwrap()));
}

/// A writer's pass over a table left in the store: its stations in batches, each
/// station once, in the order of the table (those it does not list last); a batch's
/// files read in one request and decoded as the table lists them, none kept; a damaged
/// row group fails the batch, naming it.
#[tokio::test]
async fn a_writers_pass_reads_a_batch_of_stations_in_one_request() {
    // Row groups of 500 rows: a station's 120 rows lie in one or two of them.
    let bytes = regrouped(table(listed()).await, 500);
    let path = Path::from("catalog/files-1.parquet");
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    memory.put(&path, bytes.clone().into()).await.unwrap();
    let counts = Arc::new(RequestCounts::default());
    let store: Arc<dyn ObjectStore> =
        Arc::new(Counted::new(Arc::clone(&memory), Arc::clone(&counts)));
    let gets = || counts.get(RequestKind::Get);
    let cache = Arc::new(FilesCache::new(0));
    let index = FilesByStation::open(store, path.to_string(), cache)
        .await
        .unwrap();
    assert!(index.row_groups() > 5, "{}", index.row_groups());
    let nowhere: StationId = "nowhere".parse().unwrap();
    let mut asked: Vec<StationId> = index.stations().iter().rev().cloned().collect();
    asked.insert(3, nowhere.clone());
    let batches = index.batches(asked);
    let (unlisted, batches) = batches.split_last().unwrap();
    assert_eq!(unlisted, std::slice::from_ref(&nowhere));
    assert_eq!(batches.concat(), index.stations());
    for batch in batches {
        for _ in 0..2 {
            let before = gets();
            let got = index.files_of(batch).await.unwrap();
            assert_eq!(gets() - before, 1, "{batch:?}");
            let stations: Vec<&StationId> = got.iter().map(|(s, _)| s).collect();
            assert_eq!(stations, batch.iter().collect::<Vec<_>>());
            for (station, files) in got {
                assert_eq!(files, expected(&bytes, &station), "{station}");
            }
        }
    }
    assert_eq!(index.cache().bytes(), 0, "nothing kept");
    assert_eq!(index.files_of(unlisted).await.unwrap(), [(nowhere, vec![])]);

    // Row group 2's bytes spoiled in the store.
    spoil_group(memory.as_ref(), &path, &bytes, &index, 2).await;
    let Err(e) = index.files_of(&batches[0]).await else {
        panic!("a damaged row group decoded");
    };
    let says = "files table catalog/files-1.parquet, row groups [";
    assert!(e.to_string().contains(says), "{e}");
}

/// A table opened in the store: indexed from a read of its row groups, none of which it
/// keeps; a station is decoded from its row groups, read when it is asked for (one
/// request, whether it lies in one row group or two); a station kept decoded reads
/// nothing; a pass in order reads the table again; a row group damaged in the store
/// fails its stations only.
#[tokio::test]
async fn a_table_in_the_store_reads_a_stations_row_groups_when_it_is_decoded() {
    let bytes = table(listed()).await;
    let path = Path::from("catalog/files-1.parquet");
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    memory.put(&path, bytes.clone().into()).await.unwrap();
    let counts = Arc::new(RequestCounts::default());
    let store: Arc<dyn ObjectStore> =
        Arc::new(Counted::new(Arc::clone(&memory), Arc::clone(&counts)));
    let gets = || counts.get(RequestKind::Get);
    let opened = |budget: usize| {
        let cache = Arc::new(FilesCache::new(budget));
        FilesByStation::open(Arc::clone(&store), path.to_string(), cache)
    };
    let before = gets();
    let index = opened(FILES_CACHE_BYTES).await.unwrap();
    // The footer, then the row groups (a span: the table is smaller than one).
    assert_eq!(gets() - before, 2);
    assert_eq!(index.stations().len(), 41);
    for station in index.stations() {
        let before = gets();
        assert_eq!(
            got(&index, station).await,
            expected(&bytes, station),
            "{station}"
        );
        assert_eq!(gets() - before, 1, "{station}");
    }
    let before = gets();
    for station in index.stations() {
        assert_eq!(
            got(&index, station).await,
            expected(&bytes, station),
            "{station}"
        );
    }
    assert_eq!(gets(), before, "stations kept decoded read nothing");
    // Many stations at once (s0 to s39 lie in both row groups): one read.
    let index = opened(FILES_CACHE_BYTES).await.unwrap();
    let many: Vec<StationId> = (0..40).map(|i| format!("s{i}").parse().unwrap()).collect();
    let before = gets();
    let wanted = many.iter().map(|s| (s, i32::MIN..=i32::MAX, None));
    assert_eq!(index.read_many(wanted).await, 40);
    assert_eq!(gets() - before, 1);
    for station in &many {
        assert_eq!(
            got(&index, station).await,
            expected(&bytes, station),
            "{station}"
        );
    }
    assert_eq!(gets() - before, 1, "the stations were kept decoded");
    // Nothing kept decoded: read again.
    let index = opened(0).await.unwrap();
    let s5: StationId = "s5".parse().unwrap();
    for _ in 0..2 {
        let before = gets();
        assert_eq!(got(&index, &s5).await, expected(&bytes, &s5));
        assert_eq!(gets() - before, 1);
    }
    let mut all = Vec::new();
    index
        .each_in_order(|files| all.extend(files))
        .await
        .unwrap();
    assert_eq!(
        all,
        decode_files(bytes.clone(), &mut Interner::default()).unwrap()
    );

    // Row group 1's bytes spoiled in the store after the table was indexed.
    spoil_group(memory.as_ref(), &path, &bytes, &index, 1).await;
    for station in ["s39", "s34"] {
        let Err(e) = index.get(&station.parse().unwrap()).await else {
            panic!("{station}: a damaged row group decoded");
        };
        let says = "files table catalog/files-1.parquet, row groups";
        assert!(e.to_string().contains(says), "{station}: {e}");
    }
    assert!(index.each_in_order(|_| ()).await.is_err());
    assert_eq!(got(&index, &"s0".parse().unwrap()).await.len(), 120);

    // A footer longer than the first read of the table's end (4 812 row groups of 2
    // rows): the rest read in further requests (the footer's, the offset index's).
    let small_groups = regrouped(bytes.clone(), 2);
    let end = small_groups.len();
    let footer = u32::from_le_bytes(small_groups[end - 8..end - 4].try_into().unwrap());
    assert!(footer > 1 << 20, "{footer}");
    memory
        .put(&path, small_groups.clone().into())
        .await
        .unwrap();
    let before = gets();
    let index = opened(FILES_CACHE_BYTES).await.unwrap();
    let reads = gets() - before;
    assert!((3..=4).contains(&reads), "{reads}");
    for station in index.stations() {
        let got = got(&index, station).await;
        assert_eq!(got, expected(&small_groups, station), "{station}");
    }
}

/// A table whose `station` or `month` column is not text, or lists a month that is none,
/// cannot be indexed: opening it fails naming it, rather than placing rows wrongly.
#[tokio::test]
async fn a_table_with_places_of_the_wrong_kind_fails_naming_itself() {
    use datafusion::arrow::array::{ArrayRef, Int64Array};
    use datafusion::arrow::datatypes::Field;
    let bytes = table(listed()).await;
    let (_, batches) = from_parquet(bytes, "test").unwrap();
    let batches: Vec<RecordBatch> = batches.map(|b| b.unwrap()).collect();
    let numbers: fn(&ArrayRef) -> (DataType, ArrayRef) = |c| {
        let n = Int64Array::from_iter_values(0..c.len() as i64);
        (DataType::Int64, Arc::new(n))
    };
    let no_month: fn(&ArrayRef) -> (DataType, ArrayRef) = |c| {
        let texts = StringArray::from_iter_values((0..c.len()).map(|_| "2022-13"));
        (DataType::Utf8, Arc::new(texts))
    };
    for (column, replace) in [
        ("station", numbers),
        ("month", numbers),
        ("month", no_month),
    ] {
        let changed: Vec<RecordBatch> = batches
            .iter()
            .map(|b| {
                let i = b.schema().index_of(column).unwrap();
                let (kind, values) = replace(b.column(i));
                let mut fields: Vec<Field> = b
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| f.as_ref().clone())
                    .collect();
                fields[i] = Field::new(column, kind, false);
                let mut columns = b.columns().to_vec();
                columns[i] = values;
                RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
            })
            .collect();
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, changed[0].schema(), None).unwrap();
        for b in &changed {
            w.write(b).unwrap();
        }
        w.close().unwrap();
        let Err(e) = in_store(Bytes::from(out), FILES_CACHE_BYTES).await else {
            panic!("a table whose {column} column is of the wrong kind was indexed");
        };
        assert!(
            e.to_string()
                .contains("files table catalog/files-1.parquet"),
            "{column}: {e}"
        );
        assert!(matches!(e.kind(), crate::error::ErrorKind::Corrupt), "{e}");
    }
}

/// A version opened after another takes over the month files of the stations the other
/// holds decoded, the same objects where its table lists the same files (so that their
/// footers and bytes are found again), its own where a file changed; stations the other
/// never decoded stay undecoded.
#[tokio::test]
async fn a_new_version_takes_over_the_decoded_months_it_shares() {
    let before = listed();
    let s3: StationId = "s3".parse().unwrap();
    let changed: Month = "2010-12".parse().unwrap();
    let mut after = before.clone();
    for f in after
        .iter_mut()
        .filter(|f| f.station == s3 && f.month == changed)
    {
        f.generation = 2;
    }
    let previous = by_station(table(before).await, FILES_CACHE_BYTES).await;
    // The next version as a server opens it, from the store.
    let store = InMemory::new();
    let path = Path::from("catalog/files-2.parquet");
    store.put(&path, table(after).await.into()).await.unwrap();
    let counts = Arc::new(RequestCounts::default());
    let store = Arc::new(Counted::new(Arc::new(store), Arc::clone(&counts)));
    let cache = Arc::clone(previous.cache());
    let mut next = FilesByStation::open(store, path.to_string(), cache)
        .await
        .unwrap();
    // s3's last two years and s5 whole were read from the previous version; s7 not.
    let s3_then = previous.get_years(&s3, 2009..=2010).await.unwrap();
    let s5: StationId = "s5".parse().unwrap();
    let s5_then = previous.get(&s5).await.unwrap();

    let before = counts.get(RequestKind::Get);
    assert_eq!(next.carry(&previous).await, 2);
    assert_eq!(
        counts.get(RequestKind::Get) - before,
        1,
        "one read for both"
    );
    let s7: StationId = "s7".parse().unwrap();
    let slot = |index: &FilesByStation, s: &StationId| {
        index
            .cache
            .get(&index.stations[s].files)
            .map(|d| d.years.to_vec())
    };
    assert_eq!(slot(&next, &s7), None, "s7 was not decoded before");
    assert_eq!(slot(&next, &s3), Some(vec![2009, 2010]));
    let s3_now = next.get_years(&s3, 2009..=2010).await.unwrap();
    assert_eq!(s3_now.len(), 24);
    for (now, then) in s3_now.iter().zip(s3_then.iter()) {
        assert_eq!(now.file.month, then.file.month);
        let same = now.file.month != changed;
        assert_eq!(Arc::ptr_eq(now, then), same, "{}", now.file.month);
        assert_eq!(now.file.generation, if same { 1 } else { 2 });
    }
    let s5_now = next.get(&s5).await.unwrap();
    assert_eq!(s5_now.len(), 120);
    assert!(
        s5_now
            .iter()
            .zip(s5_then.iter())
            .all(|(a, b)| Arc::ptr_eq(a, b))
    );
    // Once whole, its newest months are the carried ones too.
    let p: ParameterId = "p".parse().unwrap();
    let newest = next.newest(&s5, &p).unwrap();
    assert!(Arc::ptr_eq(&newest.month, s5_then.last().unwrap()));
}

/// Newest months known from a version's newest-months table: known before any decoding,
/// taken over by the next version where they are the same file, and the months a station's
/// decoding then gives.
#[tokio::test]
async fn newest_months_listed_are_known_at_once_and_carried_over() {
    let before = listed();
    let last: Month = "2010-12".parse().unwrap();
    let (s3, s5): (StationId, StationId) = ("s3".parse().unwrap(), "s5".parse().unwrap());
    let mut after = before.clone();
    for f in after
        .iter_mut()
        .filter(|f| f.station == s3 && f.month == last)
    {
        f.generation = 2;
    }
    let newest_of = |files: &[ValueFile]| -> Vec<ValueFile> {
        let listed = [&s3, &s5];
        let newest = files
            .iter()
            .filter(|f| listed.contains(&&f.station) && f.month == last);
        newest.cloned().collect()
    };
    let mut previous = by_station(table(before.clone()).await, FILES_CACHE_BYTES).await;
    previous.know_newest(newest_of(&before));
    let mut next = by_station(table(after.clone()).await, FILES_CACHE_BYTES).await;
    next.know_newest(newest_of(&after));
    next.keep_in(Arc::clone(previous.cache()));
    let p: ParameterId = "p".parse().unwrap();
    let then = |s: &StationId| Arc::clone(&previous.newest(s, &p).unwrap().month);
    let (s3_then, s5_then) = (then(&s3), then(&s5));
    assert_eq!(previous.cache.bytes(), 0, "known without decoding");

    assert_eq!(next.carry(&previous).await, 0, "nothing was decoded");
    let now = |s: &StationId| Arc::clone(&next.newest(s, &p).unwrap().month);
    assert!(Arc::ptr_eq(&now(&s5), &s5_then));
    assert!(!Arc::ptr_eq(&now(&s3), &s3_then));
    assert_eq!(now(&s3).file.generation, 2);
    // A station decoded whole gives its newest month as the one known.
    let s5_months = next.get(&s5).await.unwrap();
    assert!(Arc::ptr_eq(s5_months.last().unwrap(), &s5_then));
}
