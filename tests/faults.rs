//! Faults and limits: broken files affect only their own requests, health says so, downloads
//! and long station lists are capped, a client that leaves frees its slot, SIGTERM finishes
//! in-flight work.

mod common;

use common::{Server, copy_dir, dataset, generate, get};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

#[tokio::test]
async fn a_broken_file_affects_only_its_requests() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(dataset(), dir.path());
    // (station, month, path) of every value file, from the layout's names.
    let mut files = Vec::new();
    for station in std::fs::read_dir(dir.path().join("values")).unwrap() {
        let station = station.unwrap().path();
        let id = station.file_name().unwrap().to_str().unwrap();
        let id = id.strip_prefix("station=").unwrap().to_owned();
        // `<YYYY-MM>-g<generation>.parquet`
        for file in std::fs::read_dir(&station).unwrap() {
            let path = file.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap();
            let month = name.rsplit_once("-g").unwrap().0.to_owned();
            files.push((id.clone(), month, path));
        }
    }
    files.sort();
    let corrupt = files.iter().find(|f| f.1 == "2023-03").unwrap();
    let missing = files
        .iter()
        .find(|f| f.1 == "2023-05" && f.0 != corrupt.0)
        .unwrap();
    let server = Server::start_with(dir.path(), &[]);
    let b = &server.base;
    assert_eq!(get(&format!("{b}/health")).await.json()["status"], "ok");

    std::fs::write(&corrupt.2, b"PAR1 this is not parquet").unwrap();
    std::fs::remove_file(&missing.2).unwrap();
    // A damaged or missing file is a 500 (trying again will not help), in every format: the
    // fault is told by its cause, whatever path (direct month read or DataFusion stream) and
    // whatever encoder it went through.
    for (file, month) in [(corrupt, "03"), (missing, "05")] {
        for format in ["json", "csv", "arrow", "parquet"] {
            for extra in ["", "&sort=-value"] {
                let url = format!(
                    "{b}/stations/{}/parameters/water-level-15min/values?from=2023-{month}-02T00:00:00Z&to=2023-{month}-03T00:00:00Z&format={format}{extra}",
                    file.0
                );
                let r = get(&url).await;
                assert_eq!(r.status, 500, "{format}{extra}: {}", r.text());
                assert_eq!(
                    r.header("content-type").as_deref(),
                    Some("application/problem+json")
                );
                assert!(r.header("retry-after").is_none());
                let text = r.text();
                assert!(
                    !text.contains(".parquet") && !text.contains("station="),
                    "no internals: {text}"
                );
            }
        }
    }
    // Everything else keeps working.
    let sid = corrupt.0.as_str();
    let ok = get(&format!("{b}/stations/{sid}/parameters/water-level-15min/values?from=2023-04-02T00:00:00Z&to=2023-04-03T00:00:00Z")).await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json()["data"].as_array().unwrap().len(), 97);
    assert_eq!(get(&format!("{b}/stations")).await.status, 200);
    let health = get(&format!("{b}/health")).await;
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["status"], "degraded");

    // The store itself gone: health is down (503).
    std::fs::remove_file(dir.path().join("manifest.json")).unwrap();
    let health = get(&format!("{b}/health")).await;
    assert_eq!(health.status, 503);
    assert_eq!(health.json()["status"], "down");
}

/// Sends a raw request for a large download and returns the socket unread.
fn start_download(base: &str, path: &str) -> TcpStream {
    let addr = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(s, "GET /v1{path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut buf = [0u8; 512];
    let n = s.read(&mut buf).unwrap();
    assert!(
        String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );
    s
}

/// Asks for `url`, a heavy query, until it gets 200 (at most 5 s): a client that left has
/// freed its slot.
async fn slot_comes_back(url: &str) {
    let mut status = 0;
    for _ in 0..100 {
        status = get(url).await.status;
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, 200, "the slot came back");
}

#[tokio::test]
async fn downloads_are_capped_and_a_leaving_client_frees_its_slot() {
    // Ten years of one series (~25 MB of NDJSON): far more than loopback socket buffers hold,
    // so the unread download really stays in flight.
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), &["--stations", "1", "--years", "10"]);
    let server = Server::start_with(dir.path(), &[("HYDRO_MAX_HEAVY_QUERIES", "1")]);
    let b = &server.base;
    let sid = get(&format!("{b}/stations?limit=1")).await.json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let big = format!("/stations/{sid}/parameters/water-level-15min/values?format=ndjson");
    let held = start_download(b, &big);
    let r = get(&format!("{b}{big}")).await;
    assert_eq!(r.status, 503);
    assert!(r.header("retry-after").is_some());
    assert_eq!(
        get(&format!("{b}/stations")).await.status,
        200,
        "small requests still answered"
    );
    drop(held);
    // The server notices the closed socket on its next write and drops the query.
    slot_comes_back(&format!(
        "{b}/stations/{sid}/parameters/water-level-15min/values?recent=1"
    ))
    .await;
}

/// A long station list streams under the same cap as value downloads: while one is in flight
/// unread, another long or sorted list gets 503, a short page still 200.
#[tokio::test]
async fn long_station_lists_share_the_download_cap() {
    // 40 000 stations with their parameters: ~20 MB of JSON, more than loopback buffers hold.
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), &["--stations", "40000", "--years", "0"]);
    let server = Server::start_with(dir.path(), &[("HYDRO_MAX_HEAVY_QUERIES", "1")]);
    let b = &server.base;
    let held = start_download(b, "/stations?include=parameters");
    for busy in ["/stations?format=csv", "/stations?limit=10&sort=name"] {
        let r = get(&format!("{b}{busy}")).await;
        assert_eq!(r.status, 503, "{busy}");
        assert!(r.header("retry-after").is_some());
    }
    assert_eq!(get(&format!("{b}/stations?limit=10")).await.status, 200);
    drop(held);
    slot_comes_back(&format!("{b}/stations?limit=100")).await;
}

#[tokio::test]
async fn sigterm_finishes_in_flight_responses_and_exits_zero() {
    let mut server = Server::start();
    let b = server.base.clone();
    let sid = get(&format!("{b}/stations?limit=1")).await.json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut s = start_download(
        &b,
        &format!("/stations/{sid}/parameters/discharge-15min/values?format=csv"),
    );
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    let text = String::from_utf8_lossy(&rest);
    assert!(
        text.trim_end().ends_with("0\r\n\r\n") || text.contains("\r\n0\r\n\r\n"),
        "chunked body completed"
    );
    let status = server.child().wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// A damaged page of the files table fails the requests for the stations it lists (a 500,
/// for a many-series answer before its first byte) while the others answer: a station's rows
/// of the table are decoded only when a request needs them, from their own pages.
#[tokio::test]
async fn a_damaged_page_of_the_files_table_fails_its_stations_only() {
    use datafusion::arrow::array::{Array, StringArray};
    use datafusion::parquet::arrow::arrow_reader::{
        ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
    };
    use datafusion::parquet::file::metadata::PageIndexPolicy;

    let dir = tempfile::tempdir().unwrap();
    generate(
        dir.path(),
        &["--stations", "6", "--years", "10", "--seed", "2"],
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("manifest.json")).unwrap()).unwrap();
    let table = dir
        .path()
        .join(manifest["catalog"]["files"].as_str().unwrap());
    let bytes = bytes::Bytes::from(std::fs::read(&table).unwrap());
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
    let reader =
        ParquetRecordBatchReaderBuilder::try_new_with_options(bytes.clone(), options).unwrap();
    let meta = std::sync::Arc::clone(reader.metadata());
    let rows_column = meta
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .position(|c| c.name() == "rows")
        .unwrap();
    // The last page of `rows` in the last row group, and the stations with rows in it.
    let last_group = meta.num_row_groups() - 1;
    let pages = &meta.offset_index().unwrap()[last_group][rows_column];
    assert!(pages.page_locations().len() >= 2, "{pages:?}");
    let page = pages.page_locations().last().unwrap().clone();
    let first_row: i64 = (0..last_group)
        .map(|g| meta.row_group(g).num_rows())
        .sum::<i64>()
        + page.first_row_index;
    let mut stations: Vec<(i64, String)> = Vec::new();
    let mut row = 0i64;
    for batch in reader.build().unwrap() {
        let batch = batch.unwrap();
        let column = batch.column_by_name("station").unwrap();
        let ids = column.as_any().downcast_ref::<StringArray>().unwrap();
        for i in 0..ids.len() {
            stations.push((row, ids.value(i).to_owned()));
            row += 1;
        }
    }
    let broken: std::collections::BTreeSet<&str> = stations
        .iter()
        .filter(|(r, _)| *r >= first_row)
        .map(|(_, s)| s.as_str())
        .collect();
    let whole: std::collections::BTreeSet<&str> = stations
        .iter()
        .map(|(_, s)| s.as_str())
        .filter(|s| !broken.contains(s))
        .collect();
    assert!(
        !broken.is_empty() && !whole.is_empty(),
        "{broken:?} {whole:?}"
    );
    let mut damaged = bytes.to_vec();
    let at = page.offset as usize;
    damaged[at..at + page.compressed_page_size as usize].fill(0xff);
    std::fs::write(&table, damaged).unwrap();

    let server = Server::start_with(dir.path(), &[]);
    let b = &server.base;
    // Each station's first parameter (from the catalog, which the damage does not touch).
    let mut first_parameter = std::collections::BTreeMap::new();
    for s in whole.iter().chain(&broken) {
        let listed = get(&format!("{b}/stations/{s}/parameters?fields=id")).await;
        assert_eq!(listed.status, 200, "{s}");
        let id = listed.json()["data"][0]["id"].as_str().unwrap().to_owned();
        first_parameter.insert(*s, id);
    }
    // `recent=5` of good values: of every quality it would be planned from the newest months'
    // table, without the files table.
    let values = |s: &str| {
        let p = &first_parameter[s];
        format!("{b}/stations/{s}/parameters/{p}/values?recent=5&qualities=good")
    };
    for s in &whole {
        assert_eq!(get(&values(s)).await.status, 200, "{s}");
    }
    for s in &broken {
        let got = get(&values(s)).await;
        assert_eq!(got.status, 500, "{s}");
        assert_eq!(
            got.header("content-type").as_deref(),
            Some("application/problem+json")
        );
    }
    let many = |stations: &mut dyn Iterator<Item = &&str>| {
        let stations: Vec<&str> = stations.copied().collect();
        let parameters: std::collections::BTreeSet<&str> = stations
            .iter()
            .map(|s| first_parameter[s].as_str())
            .collect();
        format!(
            "{b}/values?stations={}&parameters={}&recent=5&qualities=good&format=csv",
            stations.join(","),
            parameters.into_iter().collect::<Vec<_>>().join(",")
        )
    };
    let with_broken = many(&mut whole.iter().chain(&broken));
    assert_eq!(get(&with_broken).await.status, 500, "{with_broken}");
    let whole_only = many(&mut whole.iter());
    assert_eq!(get(&whole_only).await.status, 200, "{whole_only}");
}
