//! An append copies the row groups of the previous files table that hold no station it wrote,
//! as they are, and publishes what an append that decodes every file publishes: the same
//! files, counts, availability, newest values and newest months. The oracle is the same
//! append to a copy of the archive whose manifest does not name its newest months, which
//! takes the path that decodes every file (as for versions written before them).

use crate::dataset::catalog_file::{Interner, decode_parameters};
use crate::dataset::files_table::decode_files;
use crate::dataset::manifest::{Manifest, ValueFile};
use crate::dataset::{Dataset, read_manifest};
use crate::model::Parameter;
use crate::storage::Store;
use crate::write::generate::{GenerateOptions, generate};
use crate::write::import::{ImportInput, ImportMode, ImportOptions, Imported, import};
use chrono::NaiveDate;
use std::path::Path;

/// Enough stations of daily values for a files table of several row groups (~8 Ki rows
/// each), in a few seconds of a debug build.
async fn generated(root: &Path) {
    let opts = GenerateOptions {
        stations: 420,
        years: 5,
        interval_minutes: 1440,
        seed: 5,
        start: NaiveDate::from_ymd_opt(2020, 1, 1).unwrap(),
        ..GenerateOptions::default()
    };
    generate(Store::dir(root).unwrap().object_store(), &opts, |_, _| {})
        .await
        .unwrap();
}

/// Appends `rows` to the archive at `root`; returns the files it copied.
async fn append(root: &Path, rows: &str) -> u64 {
    try_append(root, rows).await.unwrap().files_copied
}

async fn try_append(root: &Path, rows: &str) -> crate::error::Result<Imported> {
    let values = root.with_extension("csv");
    std::fs::write(
        &values,
        format!("stationId,parameterId,timestamp,value,quality\n{rows}"),
    )
    .unwrap();
    let input = ImportInput {
        stations: None,
        parameters: None,
        characteristics: None,
        values: vec![values],
        mode: ImportMode::Append,
        ..ImportInput::default()
    };
    import_into(root, &input).await
}

async fn import_into(root: &Path, input: &ImportInput) -> crate::error::Result<Imported> {
    let options = ImportOptions {
        spill_dir: root.parent().unwrap().to_path_buf(),
        ..ImportOptions::default()
    };
    import(
        Store::dir(root).unwrap().object_store(),
        input,
        &options,
        Default::default(),
    )
    .await
}

/// What a version publishes about its files, in an order that does not depend on the
/// table's: files, parameters and newest months sorted.
#[derive(Debug, PartialEq)]
struct Published {
    counts: (u64, u64, u64),
    files: Vec<ValueFile>,
    parameters: Vec<Parameter>,
    newest: Vec<ValueFile>,
}

fn sorted(mut files: Vec<ValueFile>) -> Vec<ValueFile> {
    files.sort_by(|a, b| (a.station.as_str(), a.month).cmp(&(b.station.as_str(), b.month)));
    files
}

async fn published(root: &Path) -> (Manifest, Published) {
    let manifest = read_manifest(Store::dir(root).unwrap().object_store().as_ref())
        .await
        .unwrap()
        .unwrap();
    let read = |path: &str| bytes::Bytes::from(std::fs::read(root.join(path)).unwrap());
    let mut texts = Interner::default();
    let files = decode_files(read(&manifest.catalog.files), &mut texts).unwrap();
    let newest = decode_files(read(manifest.catalog.newest.as_ref().unwrap()), &mut texts).unwrap();
    let mut parameters = decode_parameters(read(&manifest.catalog.parameters), &mut texts).unwrap();
    parameters.sort_by(|a, b| {
        (a.station.as_str(), a.id.as_str()).cmp(&(b.station.as_str(), b.id.as_str()))
    });
    let counts = (
        manifest.counts.files,
        manifest.counts.values,
        manifest.counts.missing,
    );
    let published = Published {
        counts,
        files: sorted(files),
        parameters,
        newest: sorted(newest),
    };
    (manifest, published)
}

/// The manifest of the archive at `root` without its newest months' table.
fn forget_newest(root: &Path) {
    let path = root.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["catalog"]
        .as_object_mut()
        .unwrap()
        .remove("newest");
    std::fs::write(&path, serde_json::to_vec(&manifest).unwrap()).unwrap();
}

/// The row groups of the files table at `path`: each one's rows, files and stations.
fn row_groups(path: &Path) -> Vec<(i64, u64, Vec<String>)> {
    use datafusion::arrow::array::AsArray;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let bytes = bytes::Bytes::from(std::fs::read(path).unwrap());
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes.clone()).unwrap();
    let groups = builder.metadata().row_groups().to_vec();
    (0..groups.len())
        .map(|g| {
            let mut files: Vec<(String, String)> =
                ParquetRecordBatchReaderBuilder::try_new(bytes.clone())
                    .unwrap()
                    .with_row_groups(vec![g])
                    .build()
                    .unwrap()
                    .flat_map(|b| {
                        let b = b.unwrap();
                        let column =
                            |name| b.column_by_name(name).unwrap().as_string::<i32>().clone();
                        let (stations, months) = (column("station"), column("month"));
                        (0..b.num_rows())
                            .map(|i| (stations.value(i).to_owned(), months.value(i).to_owned()))
                            .collect::<Vec<_>>()
                    })
                    .collect();
            files.dedup();
            let mut stations: Vec<String> = files.iter().map(|(s, _)| s.clone()).collect();
            stations.sort();
            stations.dedup();
            (groups[g].num_rows(), files.len() as u64, stations)
        })
        .collect()
}

#[tokio::test]
async fn an_append_copies_the_row_groups_it_does_not_touch_and_publishes_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let copying = dir.path().join("copying");
    generated(&copying).await;
    let decoding = dir.path().join("decoding");
    let (_, before) = published(&copying).await;
    let mut stations: Vec<String> = before.files.iter().map(|f| f.station.to_string()).collect();
    stations.dedup();
    // A parameter of the station with values.
    let first = |station: &str| {
        before
            .parameters
            .iter()
            .find(|p| p.station.as_str() == station && !p.availability.is_empty())
            .map(|p| p.id.to_string())
            .unwrap()
    };
    let (a, b) = (&stations[3], &stations[stations.len() / 2]);
    let (pa, pb) = (first(a), first(b));
    // A month rewritten (a value replaced) at one station, a month added at another; then, on
    // that version, a value after the end of a third.
    let c = &stations[stations.len() - 2];
    let pc = first(c);
    let appends = [
        (
            format!(
                "{a},{pa},2021-06-15T00:00:00Z,1.5,good\n{b},{pb},2025-02-01T00:00:00Z,2.5,good\n"
            ),
            vec![a.clone(), b.clone()],
        ),
        (
            format!("{c},{pc},2025-03-01T00:00:00Z,3.5,good\n"),
            vec![c.clone()],
        ),
    ];
    for (rows, touched) in &appends {
        copy_dir(&copying, &decoding);
        forget_newest(&decoding);
        let (before_manifest, _) = published(&copying).await;
        let groups_before = row_groups(&copying.join(&before_manifest.catalog.files));
        assert!(
            groups_before.len() >= 3,
            "{} row groups: too few to copy any",
            groups_before.len()
        );
        let files_copied = append(&copying, rows).await;
        assert_eq!(append(&decoding, rows).await, 0);
        let (_, copied) = published(&copying).await;
        let (_, decoded) = published(&decoding).await;
        assert_eq!(copied.counts, decoded.counts);
        assert_eq!(copied.files.len(), decoded.files.len());
        assert!(copied.files == decoded.files, "the files listed differ");
        assert!(
            copied.parameters == decoded.parameters,
            "the parameters differ"
        );
        assert!(copied.newest == decoded.newest, "the newest months differ");
        assert_eq!(copied.counts.0, copied.files.len() as u64);
        // The row groups of the previous table without the stations written, and not of the
        // fewest rows, are copied.
        let copyable: u64 = groups_before
            .iter()
            .filter(|(rows, _, stations)| {
                *rows >= 4096 && !stations.iter().any(|s| touched.contains(s))
            })
            .map(|(_, files, _)| files)
            .sum();
        assert!(copyable > 0, "no row group to copy");
        assert_eq!(files_copied, copyable);
        std::fs::remove_dir_all(&decoding).unwrap();
    }
    // A version that counts fewer files than its table lists: the append stops, naming the
    // table, and publishes nothing.
    let path = copying.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["counts"]["files"] = 0.into();
    let table = manifest["catalog"]["files"].as_str().unwrap().to_owned();
    std::fs::write(&path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let before = std::fs::read(&path).unwrap();
    let Err(refused) = try_append(
        &copying,
        &format!("{c},{pc},2025-04-01T00:00:00Z,4.5,good\n"),
    )
    .await
    else {
        panic!("an append over counts that disagree with the table published");
    };
    assert!(refused.to_string().contains(&table), "{refused}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// A version opened beside the one before it holds that one's stations and characteristics
/// where an append of values wrote their tables again unchanged, and decodes its own where an
/// append added a station; either way its catalog is the one the version has opened alone.
#[tokio::test]
async fn a_version_opened_beside_another_shares_the_stations_an_append_left_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("archive");
    generated(&root).await;
    let store = Store::dir(&root).unwrap();
    let first = Dataset::open(&store).await.unwrap();
    let station = first.catalog.stations()[0].id.clone();
    let parameter = first.catalog.parameters(&station)[0].id.clone();
    append(
        &root,
        &format!("{station},{parameter},2031-01-01T00:00:00Z,1.5,unchecked\n"),
    )
    .await;
    let second = Dataset::open_beside(&store, &first).await.unwrap();
    assert!(second.catalog.shares_stations_with(&first.catalog));
    // Beside the first, it costs its parameters and its files table's index (its bytes are
    // left in the store).
    let whole = second.memory().catalog + second.memory().files;
    let apart = second.memory_apart_from(&first);
    let own_catalog = apart - second.memory().files;
    assert!(
        own_catalog < second.memory().catalog / 2,
        "{own_catalog} of {} bytes of catalog held apart",
        second.memory().catalog
    );
    let alone = Dataset::open(&store).await.unwrap();
    assert_eq!(second.memory_apart_from(&alone), whole);
    assert_same_catalog(&second, &alone);
    // The parameters are the new version's own: the series' newest value moved on.
    assert_ne!(
        second.catalog.parameters(&station),
        first.catalog.parameters(&station)
    );

    let stations = dir.path().join("stations.csv");
    std::fs::write(
        &stations,
        "id,name,type,state,operator,waterBodyId,waterBodyName,lat,lon\n\
         added,Aaach,surfaceWater,NW,WSV,2,Rhein,50.9,6.9\n",
    )
    .unwrap();
    let input = ImportInput {
        stations: Some(stations),
        parameters: None,
        characteristics: None,
        values: Vec::new(),
        mode: ImportMode::Append,
        ..ImportInput::default()
    };
    import_into(&root, &input).await.unwrap();
    let third = Dataset::open_beside(&store, &second).await.unwrap();
    assert!(!third.catalog.shares_stations_with(&second.catalog));
    assert_same_catalog(&third, &Dataset::open(&store).await.unwrap());
    let added = "added".parse().unwrap();
    assert_eq!(
        third.catalog.station(&added).map(|s| s.name.as_str()),
        Some("Aaach")
    );
    assert_eq!(
        third.catalog.stations().len(),
        first.catalog.stations().len() + 1
    );
}

/// Both catalogs list the same stations in the same order, each with the same parameters and
/// characteristics, and find the same stations.
fn assert_same_catalog(a: &Dataset, b: &Dataset) {
    use crate::catalog::StationFilter;
    assert_eq!(a.catalog.stations(), b.catalog.stations());
    for s in a.catalog.stations() {
        assert_eq!(a.catalog.parameters(&s.id), b.catalog.parameters(&s.id));
        assert_eq!(
            a.catalog.characteristics(&s.id),
            b.catalog.characteristics(&s.id)
        );
    }
    let found = |d: &Dataset| -> Vec<usize> {
        let (_, hits) = d
            .catalog
            .find_stations(&StationFilter::default(), 0..usize::MAX);
        hits.iter().map(|h| h.index).collect()
    };
    assert_eq!(found(a), found(b));
    assert_eq!(a.memory().catalog, b.memory().catalog);
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in walk(from) {
        let target = to.join(entry.strip_prefix(from).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &target).unwrap();
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
