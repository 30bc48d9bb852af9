//! `hydro serve` follows the published version: an append from outside is served without a
//! restart, a download under way ends with the old version's bytes (vacuum within the grace
//! period does not take them away), and a damaged manifest leaves the server on the version it
//! has.

mod common;

use bytes::Bytes;
use common::{Server, get, request};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::process::Command;
use std::time::{Duration, Instant};

async fn serving(base: &str) -> (String, String) {
    let h = get(&format!("{base}/health")).await.json();
    (
        h["checks"]["catalog"]["datasetVersion"]
            .as_str()
            .unwrap()
            .to_owned(),
        h["status"].as_str().unwrap().to_owned(),
    )
}

/// Waits (up to a minute: a deadline, not a measurement) until `done` holds for what health says.
async fn wait_for(base: &str, done: impl Fn(&(String, String)) -> bool) -> (String, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = serving(base).await;
        if done(&now) {
            return now;
        }
        assert!(Instant::now() < deadline, "health still says {now:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `hydro import --append` of value `rows` (CSV lines without the header) into `dir`.
fn append(dir: &std::path::Path, rows: &str) {
    let values = dir.join("append.csv");
    std::fs::write(
        &values,
        format!("stationId,parameterId,timestamp,value,quality\n{rows}"),
    )
    .unwrap();
    let appended = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(["import", "--append", "--out"])
        .arg(dir)
        .arg("--values")
        .arg(&values)
        .output()
        .unwrap();
    assert!(
        appended.status.success(),
        "{}",
        String::from_utf8_lossy(&appended.stderr)
    );
}

#[tokio::test]
async fn the_server_follows_appends_and_keeps_downloads_on_their_version() {
    let dir = tempfile::tempdir().unwrap();
    common::generate(
        dir.path(),
        &["--stations", "1", "--years", "10", "--seed", "3"],
    );
    let server = Server::start_with(dir.path(), &[("HYDRO_FOLLOW_SECONDS", "1")]);
    let b = server.base.clone();
    let sid = get(&format!("{b}/stations?fields=id&limit=1")).await.json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let url = format!("{b}/stations/{sid}/parameters/water-level-15min/values?format=csv");
    let fresh = [("Cache-Control", "no-cache")];
    let old = request("GET", &url, &fresh).await;
    assert_eq!(old.status, 200);
    // Far more than socket buffers hold, so the answer is still being made after the switch.
    assert!(
        old.body.len() > 8_000_000,
        "long enough to be read slowly: {}",
        old.body.len()
    );
    let (first_version, _) = serving(&b).await;
    // Every series' newest value, before the append (which touches one series only).
    let parameters: Vec<String> =
        get(&format!("{b}/stations/{sid}/parameters")).await.json()["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap().to_owned())
            .collect();
    let latest_url = format!(
        "{b}/latest?stations={sid}&parameters={}&format=csv",
        parameters.join(",")
    );
    let latest_before = request("GET", &latest_url, &fresh).await.text();

    // A slow reader: the first frame now, the rest after the append is served.
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let req = http::Request::get(&url)
        .header("Cache-Control", "no-cache")
        .body(Empty::new())
        .unwrap();
    let mut slow = client.request(req).await.unwrap().into_body();
    let mut got = Vec::new();
    while got.is_empty() {
        let frame = slow.frame().await.unwrap().unwrap();
        if let Ok(data) = frame.into_data() {
            got.extend_from_slice(&data);
        }
    }

    // A correction of the series' first value, and a value after its end.
    let text = old.text();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    let first_time = first[at("timestamp")].to_owned();
    append(
        dir.path(),
        &format!(
            "{sid},water-level-15min,{first_time},12345.5,good\n\
             {sid},water-level-15min,2040-01-01T00:00:00Z,1.5,unchecked\n"
        ),
    );
    let (second_version, status) = wait_for(&b, |(v, _)| *v != first_version).await;
    assert_eq!(status, "ok");

    // Vacuum within the grace period (the default hour) keeps the old version's files.
    let vacuum = |grace: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_hydro"))
            .args(["vacuum", "--older-than", grace, "--out"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = vacuum("PT1H");
    assert!(
        said.contains("kept versions [1, 2]; deleted 0 files"),
        "{said}"
    );

    // The slow download ends with the old version's bytes.
    let rest = slow.collect().await.unwrap().to_bytes();
    got.extend_from_slice(&rest);
    assert!(
        got == old.body,
        "the download that began before the switch changed"
    );

    // New requests see the new version: the correction, the appended value, new validators.
    let new = request("GET", &url, &fresh).await;
    assert_ne!(new.header("etag"), old.header("etag"));
    let row = get(&format!(
        "{b}/stations/{sid}/parameters/water-level-15min/values?limit=1"
    ))
    .await
    .json();
    assert_eq!(row["data"][0]["value"], 12345.5);
    let latest = get(&format!(
        "{b}/stations/{sid}/parameters/water-level-15min/values?recent=1"
    ))
    .await
    .json();
    assert_eq!(latest["data"][0]["timestamp"], "2040-01-01T00:00:00+00:00");
    // /v1/latest: the appended series' new value, every other series' as before (the new
    // version took those over from the old one).
    let latest_after = request("GET", &latest_url, &fresh).await.text();
    let (before_rows, after_rows): (Vec<&str>, Vec<&str>) = (
        latest_before.lines().collect(),
        latest_after.lines().collect(),
    );
    assert_eq!(before_rows.len(), parameters.len() + 1, "{latest_before}");
    assert_eq!(after_rows.len(), before_rows.len());
    for (was, is) in before_rows.iter().zip(&after_rows) {
        if is.contains(",water-level-15min,") {
            assert!(
                is.contains("2040-01-01T00:00:00+00:00,1.5,unchecked"),
                "{is}"
            );
        } else {
            assert_eq!(was, is);
        }
    }
    let landing = get(&format!("{b}/")).await.json();
    assert!(landing.to_string().contains(&second_version), "{landing}");

    // Past the grace period the old version's own files go (the month rewritten by the
    // correction, the rollup file of its station, its six catalog tables, its record); the current
    // version still answers whole.
    let whole = request("GET", &url, &fresh).await;
    let files = || common::files_under(dir.path()).len();
    let before = files();
    let said = vacuum("PT0S");
    assert!(
        said.contains("kept versions [2]; deleted 9 files"),
        "{said}"
    );
    assert_eq!(files(), before - 9);
    assert_eq!(request("GET", &url, &fresh).await.body, whole.body);

    // A damaged manifest: the server stays on its version and says so; put right, it is ok.
    let manifest = dir.path().join("manifest.json");
    let good = std::fs::read(&manifest).unwrap();
    std::fs::write(&manifest, b"{ not a manifest").unwrap();
    let (version, _) = wait_for(&b, |(_, s)| s == "degraded").await;
    assert_eq!(version, second_version);
    let again = get(&format!(
        "{b}/stations/{sid}/parameters/water-level-15min/values?limit=1"
    ))
    .await
    .json();
    assert_eq!(again["data"][0]["value"], 12345.5, "still served");
    std::fs::write(&manifest, good).unwrap();
    wait_for(&b, |(v, s)| s == "ok" && *v == second_version).await;
}

/// A gauge of `/metrics`.
async fn gauge(base: &str, name: &str) -> f64 {
    let root = base.trim_end_matches("/v1");
    let text = get(&format!("{root}/metrics")).await.text();
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} in {text}"))
}

/// Stations' files are decoded from the files table when a request first needs them and kept
/// within `files_cache_bytes`: a server whose budget keeps none decodes them for every
/// request, before and after it switches to an appended version, and answers as one that
/// keeps them.
#[tokio::test]
async fn stations_files_are_decoded_when_asked_for_before_and_after_a_switch() {
    let dir = tempfile::tempdir().unwrap();
    common::generate(
        dir.path(),
        &["--stations", "3", "--years", "2", "--seed", "5"],
    );
    let follow = ("HYDRO_FOLLOW_SECONDS", "1");
    let none_kept = Server::start_with(dir.path(), &[follow, ("HYDRO_FILES_CACHE_BYTES", "1")]);
    let kept = Server::start_with(dir.path(), &[follow]);
    let stations = common::station_ids(&kept.base).await;
    assert_eq!(stations.len(), 3);
    let fresh = [("Cache-Control", "no-cache")];
    let answers = |base: String| {
        let stations = stations.clone();
        async move {
            let mut bodies = Vec::new();
            for sid in &stations {
                let url =
                    format!("{base}/stations/{sid}/parameters/water-level-15min/values?format=csv");
                let got = request("GET", &url, &fresh).await;
                assert_eq!(got.status, 200, "{url}");
                bodies.push(got.body);
            }
            bodies
        }
    };
    let before = answers(kept.base.clone()).await;
    assert_eq!(answers(none_kept.base.clone()).await, before);
    let cache = "hydro_memory_bytes{part=\"files_cache\"}";
    assert_eq!(gauge(&none_kept.base, cache).await, 0.0);
    assert!(gauge(&kept.base, cache).await > 0.0);
    assert_eq!(
        gauge(
            &none_kept.base,
            "hydro_memory_budget_bytes{part=\"files_cache\"}"
        )
        .await,
        1.0
    );

    // An append to the first station; both servers follow.
    let (first_version, _) = serving(&kept.base).await;
    append(
        dir.path(),
        &format!(
            "{},water-level-15min,2040-01-01T00:00:00Z,1.5,unchecked\n",
            stations[0]
        ),
    );
    for base in [&kept.base, &none_kept.base] {
        wait_for(base, |(v, _)| *v != first_version).await;
    }
    let after = answers(kept.base.clone()).await;
    assert_eq!(answers(none_kept.base.clone()).await, after);
    assert_ne!(after[0], before[0], "the appended station's answer changed");
    assert!(String::from_utf8_lossy(&after[0]).contains("2040-01-01T00:00:00"));
    assert_eq!(after[1..], before[1..], "the other stations' did not");
    assert_eq!(gauge(&none_kept.base, cache).await, 0.0);
    for bad in ["-1", "lots", "1.5", "1e9"] {
        let err = common::serve_refused(&[("HYDRO_FILES_CACHE_BYTES", bad)]);
        assert!(err.contains("files_cache_bytes"), "{bad}: {err}");
    }
}
