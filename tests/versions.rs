//! Versions you can cite: `/v1/versions` lists the versions the store holds (a following
//! server lists new ones), every answer names its version, `asOf` answers as an earlier version
//! did (byte for byte in every format without an envelope, cacheable for good), `changedSince`
//! gives what a mirror of an earlier version needs (checked in DuckDB), and a version vacuum
//! removed is 410.

mod common;

use common::{Server, first_station_id, generate, get, oracle};
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

/// The version the server answers from now.
async fn serving(base: &str) -> String {
    get(&format!("{base}/")).await.json()["data"]["datasetVersion"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Waits (a deadline, not a measurement) until the server answers from a version other than
/// `old`, and returns it.
async fn switched_from(base: &str, old: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = serving(base).await;
        if now != old {
            return now;
        }
        assert!(Instant::now() < deadline, "still on {old}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn hydro(args: &[&str]) {
    common::hydro_succeeds(args, &[]);
}

/// Appends `rows` (`timestamp,value`) to the station's hourly water level.
fn append(dir: &std::path::Path, station: &str, rows: &[(&str, f64)]) {
    let mut csv = String::from("stationId,parameterId,timestamp,value,quality\n");
    for (t, v) in rows {
        csv.push_str(&format!("{station},water-level-1h,{t},{v},good\n"));
    }
    let file = dir.join("append.csv");
    std::fs::write(&file, csv).unwrap();
    hydro(&[
        "import",
        "--append",
        "--out",
        dir.to_str().unwrap(),
        "--values",
        file.to_str().unwrap(),
    ]);
}

/// The answers recorded of each version, by URL (without `asOf`).
fn answers(base: &str, station: &str) -> Vec<String> {
    let series = format!("{base}/stations/{station}/parameters/water-level-1h");
    let june = "from=2024-06-01T00:00:00Z&to=2024-06-03T00:00:00Z";
    let mut urls: Vec<String> = ["csv", "ndjson", "parquet", "arrow"]
        .iter()
        .map(|f| format!("{series}/values?{june}&format={f}"))
        .collect();
    urls.extend([
        format!("{series}/values?recent=5&format=csv"),
        format!("{series}/values?aggregate=mean,max&interval=P1D&{june}&format=csv"),
        format!("{series}/statistics?type=annual&format=csv"),
        format!("{base}/values?stations={station}&parameters=water-level-1h&{june}&format=csv"),
        format!("{base}/latest?stations={station}&parameters=water-level-1h&format=csv"),
        format!("{base}/stations?format=csv"),
    ]);
    urls
}

/// Answers recorded: URL and bytes.
type Answers = Vec<(String, Vec<u8>)>;

fn with_as_of(url: &str, as_of: &str) -> String {
    format!("{url}&asOf={as_of}")
}

#[tokio::test]
async fn as_of_answers_as_each_version_did() {
    let dir = tempfile::tempdir().unwrap();
    generate(
        dir.path(),
        &[
            "--stations",
            "3",
            "--years",
            "1",
            "--interval",
            "PT1H",
            "--start",
            "2024-01-01",
            "--seed",
            "5",
        ],
    );
    let server = Server::start_with(dir.path(), &[("HYDRO_FOLLOW_SECONDS", "1")]);
    let b = server.base.clone();
    let station = first_station_id(&b).await;

    // Three versions: generated, a correction and a new value, one more new value.
    let mut recorded: Vec<(String, Answers)> = Vec::new();
    let mut version = serving(&b).await;
    for step in 0..3 {
        let mut kept = Vec::new();
        for url in answers(&b, &station) {
            let r = get(&url).await;
            assert_eq!(r.status, 200, "{url}: {}", r.text());
            kept.push((url, r.body.to_vec()));
        }
        recorded.push((version.clone(), kept));
        match step {
            0 => append(
                dir.path(),
                &station,
                &[
                    ("2024-06-01T05:00:00Z", 999.5),
                    ("2024-12-31T23:30:00Z", 12.5),
                ],
            ),
            1 => append(dir.path(), &station, &[("2024-06-02T00:30:00Z", 1.5)]),
            _ => break,
        }
        version = switched_from(&b, &version).await;
    }
    assert_eq!(recorded.len(), 3);
    assert_ne!(
        recorded[0].1[0].1, recorded[1].1[0].1,
        "the correction changed the answer"
    );

    // Each version, by id and by generation, answers with the bytes it gave when current.
    for (generation, (id, kept)) in recorded.iter().enumerate() {
        let generation = (generation + 1).to_string();
        for (url, bytes) in kept {
            for as_of in [id.as_str(), generation.as_str()] {
                let r = get(&with_as_of(url, as_of)).await;
                assert_eq!(r.status, 200, "{url} asOf={as_of}: {}", r.text());
                assert!(
                    r.body == bytes.as_slice(),
                    "{url} asOf={as_of}: other bytes"
                );
                let link = r.header("link").unwrap_or_default();
                assert!(
                    link.contains(&format!("/versions/{id}>; rel=\"version\"")),
                    "{url}: {link}"
                );
                let cache = r.header("cache-control").unwrap_or_default();
                assert!(cache.contains("immutable"), "{url}: {cache}");
            }
        }
        // The same ETag every time; the envelope names the version.
        let url = with_as_of(&kept[0].0.replace("format=csv", "format=json"), id);
        let (a, c) = (get(&url).await, get(&url).await);
        assert_eq!(a.header("etag"), c.header("etag"));
        assert_eq!(a.json()["meta"]["datasetVersion"], id.as_str());
    }
    // Earlier versions stay open, within their number, and /metrics says so.
    let metrics = get(&format!("{}/metrics", b.trim_end_matches("/v1")))
        .await
        .text();
    assert!(metrics.contains("hydro_past_versions_open 2"), "{metrics}");
    // Without asOf: the current version, named too, cached briefly.
    let now = get(&recorded[2].1[0].0).await;
    assert!(
        now.header("link")
            .unwrap_or_default()
            .contains(&recorded[2].0)
    );
    assert!(
        !now.header("cache-control")
            .unwrap_or_default()
            .contains("immutable")
    );

    // /v1/versions: newest first, what each publish did, the current one marked.
    let listed = get(&format!("{b}/versions")).await.json();
    let rows = listed["data"].as_array().unwrap();
    let ids: Vec<&str> = rows.iter().map(|v| v["id"].as_str().unwrap()).collect();
    let want: Vec<&str> = recorded.iter().rev().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, want);
    let kinds: Vec<&Value> = rows.iter().map(|v| &v["publish"]["kind"]).collect();
    assert_eq!(kinds, ["append", "append", "generate"]);
    assert_eq!(rows[0]["current"], true);
    assert_eq!(rows[1]["current"], false);
    assert_eq!(rows[1]["publish"]["stationMonths"], 2, "{}", rows[1]);
    let one = get(&format!("{b}/versions/{}", want[1])).await.json();
    assert_eq!(one["data"], rows[1]);

    // A time picks the version current then: just before the second, the first; later than
    // the newest, the current one (not for good: a later publish may follow); before the
    // first, none.
    let second = chrono::DateTime::parse_from_rfc3339(rows[1]["published"].as_str().unwrap())
        .unwrap()
        - chrono::Duration::milliseconds(1);
    let second = second.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let url = format!("{b}/stations?limit=1&asOf={second}");
    assert_eq!(
        get(&url).await.json()["meta"]["datasetVersion"],
        want[2],
        "{url}"
    );
    let future = get(&format!("{b}/stations?limit=1&asOf=2999-01-01T00:00:00Z")).await;
    assert_eq!(future.json()["meta"]["datasetVersion"], want[0]);
    assert!(
        !future
            .header("cache-control")
            .unwrap_or_default()
            .contains("immutable")
    );
    let before = get(&format!("{b}/stations?asOf=2000-01-01T00:00:00Z")).await;
    assert_eq!(before.status, 404, "{}", before.text());
    for unknown in ["4", "0", "1-20000101T000000.000Z"] {
        let r = get(&format!("{b}/stations?asOf={unknown}")).await;
        assert_eq!(r.status, 404, "{unknown}: {}", r.text());
    }

    // changedSince: a mirror of an earlier version upserted with the changes holds the current
    // answer (DuckDB), for one series and many; with asOf, the changes between two versions.
    let one = format!("/stations/{station}/parameters/water-level-1h/values?format=csv");
    let many = "/values?parameters=water-level-1h&format=csv".to_owned();
    for query in [&one, &many] {
        for base in ["1", want[1]] {
            let out = oracle("changes.py", &[&b, query, base]);
            assert!(out.contains("synced:"), "{out}");
        }
    }
    let between = get(&format!("{b}{one}&asOf=2&changedSince=1")).await.text();
    assert_eq!(
        between.lines().collect::<Vec<_>>(),
        [
            "timestamp,value,quality",
            "2024-06-01T05:00:00+00:00,999.5,good",
            "2024-12-31T23:30:00+00:00,12.5,good"
        ]
    );
    let none = get(&format!("{b}{one}&changedSince={}", want[0])).await;
    assert_eq!(none.text(), "timestamp,value,quality\r\n");
    for (bad, name) in [
        ("changedSince=4", "changedSince"),
        ("asOf=1&changedSince=2", "changedSince"),
        ("changedSince=x", "changedSince"),
        ("changedSince=2024-01-01T00:00:00Z", "changedSince"),
        ("changedSince=1&limit=10", "changedSince"),
        ("changedSince=1&recent=5", "changedSince"),
        ("changedSince=1&qualities=good", "changedSince"),
        ("changedSince=1&aggregate=mean&interval=P1D", "changedSince"),
        ("changedSince=1&format=svg", "format"),
    ] {
        for query in [&one, &many] {
            let url = if bad.contains("format=") {
                format!("{b}{}", query.replace("format=csv", bad))
            } else {
                format!("{b}{query}&{bad}")
            };
            let r = get(&url).await;
            assert_eq!(r.status, 400, "{url}: {}", r.text());
            assert_eq!(r.json()["invalidParams"][0]["name"], name, "{url}");
        }
    }
    // (Many series take no sort at all.)
    let sorted = get(&format!("{b}{one}&changedSince=1&sort=-value")).await;
    assert_eq!(sorted.status, 400, "{}", sorted.text());
    assert_eq!(sorted.json()["invalidParams"][0]["name"], "changedSince");

    // Vacuum keeping the newest two removes the first: 410 naming the oldest kept, once the
    // store is listed again (every few seconds), even for a version kept open; then keeping
    // one removes the second.
    let vacuum = |keep: &str| {
        hydro(&[
            "vacuum",
            "--out",
            dir.path().to_str().unwrap(),
            "--older-than",
            "PT0S",
            "--keep-versions",
            keep,
        ])
    };
    vacuum("2");
    let gone = gone_in_time(&with_as_of(&recorded[0].1[0].0, "1")).await;
    assert!(gone.contains(want[1]), "{gone}");
    let r = get(&format!("{b}{one}&changedSince=1")).await;
    assert_eq!(r.status, 410, "{}", r.text());
    let kept = get(&with_as_of(&recorded[1].1[0].0, want[1])).await;
    assert!(kept.body == recorded[1].1[0].1.as_slice());
    let listed = get(&format!("{b}/versions")).await.json();
    assert_eq!(listed["data"].as_array().unwrap().len(), 2);
    vacuum("1");
    let gone = gone_in_time(&format!("{b}/stations?asOf={}", want[1])).await;
    assert!(gone.contains(want[0]), "{gone}");
    let listed = get(&format!("{b}/versions")).await.json();
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
}

/// Waits (a deadline, not a measurement) until `url` answers 410, and returns its detail.
async fn gone_in_time(url: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = get(url).await;
        if r.status == 410 {
            return r.text();
        }
        assert_eq!(r.status, 200, "{url}: {}", r.text());
        assert!(Instant::now() < deadline, "{url} still answered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A server that has not switched to the newest version yet (here: one that never follows)
/// answers `asOf` it from the store, not 404.
#[tokio::test]
async fn a_version_newer_than_the_one_served_is_read_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    generate(
        dir.path(),
        &[
            "--stations",
            "2",
            "--years",
            "1",
            "--interval",
            "PT1H",
            "--start",
            "2024-01-01",
        ],
    );
    let server = Server::start_with(dir.path(), &[("HYDRO_FOLLOW_SECONDS", "0")]);
    let b = &server.base;
    let station = first_station_id(b).await;
    let served = serving(b).await;
    append(dir.path(), &station, &[("2025-01-01T00:00:00Z", 7.5)]);
    let url =
        format!("{b}/stations/{station}/parameters/water-level-1h/values?recent=1&format=json");
    let now = get(&url).await.json();
    assert_eq!(now["meta"]["datasetVersion"], served.as_str());
    let newer = get(&format!("{url}&asOf=2")).await;
    assert_eq!(newer.status, 200, "{}", newer.text());
    let newer = newer.json();
    assert_ne!(newer["meta"]["datasetVersion"], served.as_str());
    assert_eq!(newer["data"][0]["value"], 7.5);
    assert_eq!(get(&format!("{url}&asOf=3")).await.status, 404);
}

#[tokio::test]
async fn bad_as_of_is_a_400_that_names_it() {
    let server = Server::start();
    let b = &server.base;
    let station = first_station_id(b).await;
    for bad in [
        "x",
        "-1",
        "2024-01-01",
        "2024-01-01T00:00:00",
        "3-2026",
        "1-20261126T120803Z",
        "",
    ] {
        for path in [
            "/stations".to_owned(),
            format!("/stations/{station}/parameters/water-level-15min/values?recent=1"),
        ] {
            let sep = if path.contains('?') { '&' } else { '?' };
            let url = format!("{b}{path}{sep}asOf={bad}");
            let r = get(&url).await;
            assert_eq!(r.status, 400, "{url}: {}", r.text());
            assert_eq!(r.json()["invalidParams"][0]["name"], "asOf", "{url}");
        }
    }
    // Listing versions takes no asOf; an id that is none is a 404.
    let r = get(&format!("{b}/versions?asOf=1")).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(get(&format!("{b}/versions/nope")).await.status, 404);
    assert_eq!(get(&format!("{b}/versions/1")).await.status, 200);
}

/// `--keep-versions` keeps at least the current version: 0 and words are refused by name,
/// and nothing is removed.
#[test]
fn bad_keep_versions_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), &["--stations", "1", "--years", "0"]);
    for bad in ["0", "two"] {
        let out = Command::new(env!("CARGO_BIN_EXE_hydro"))
            .args(["vacuum", "--out", dir.path().to_str().unwrap()])
            .args(["--older-than", "PT0S", "--keep-versions", bad])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--keep-versions"), "{bad}: {stderr}");
    }
    assert!(dir.path().join("versions/1.json").exists());
}
