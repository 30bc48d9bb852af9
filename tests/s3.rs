//! The dataset in an S3-compatible bucket: a real SeaweedFS server started by the tests
//! (`tests/common/s3.rs`), `hydro` reading and writing it through object_store's S3 client.
//!
//! Checked here: answers from the bucket are byte-identical to answers from a local copy of
//! the same dataset (a representative subset of the API: every resource, every format, the
//! direct month reads and the DataFusion path, ranges and conditional requests); the GETs an
//! answer costs, counted on the wire by a proxy; `generate`, `import`, `--append` and
//! `vacuum` on a bucket; conditional publishing; and the store's faults.

mod common;

use common::proxy::Proxy;
use common::s3::{S3, on_own_runtime, upload_dir};
use common::{
    Server, dataset, dataset_version, get, get_with, sample, sample_urls, station_ids, unversioned,
};
use std::process::Command;

/// `hydro` with the variables that reach `s3`.
fn hydro(s3: &S3) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hydro"));
    cmd.envs(s3.env());
    cmd
}

fn env_of(s3: &S3) -> Vec<(&'static str, String)> {
    s3.env()
}

/// The variables that reach `s3`, but at `port` on loopback (a proxy in front of it, or a
/// port nobody listens on).
fn env_at(s3: &S3, port: u16) -> Vec<(&'static str, String)> {
    let mut env = env_of(s3);
    env.retain(|(k, _)| *k != "AWS_ENDPOINT_URL");
    env.push(("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}")));
    env
}

fn refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// A server of `location` in the bucket, through `proxy` (which counts the requests on the
/// wire), and one of the local test dataset. Answers not kept and no value cache, so every
/// request reads the store (the footers stay cached: that is the warm-up); the bucket's
/// server does not check for new versions (a GET of the manifest now and then) among the
/// counts; one public address for both, so that links compare equal.
fn side_by_side(s3: &S3, proxy: &Proxy, location: &str) -> (Server, Server) {
    let quiet = [
        ("HYDRO_VALUE_CACHE_BYTES", "0"),
        ("HYDRO_ANSWER_STORE_BYTES", "0"),
        ("HYDRO_BASE_URL", "http://hydro.test/v1"),
    ];
    let mut env = env_at(s3, proxy.port);
    env.extend(quiet.map(|(k, v)| (k, v.to_owned())));
    env.push(("HYDRO_FOLLOW_SECONDS", "0".into()));
    let remote = Server::start_with(location, &refs(&env));
    (remote, Server::start_with(dataset(), &quiet))
}

/// The GETs (counted by `proxy`) that the server at `r` costs for a one-month window and for
/// two years of the first station's water level (the station found at `l`), in every format
/// and newest first: each answer's query with its count.
async fn gets_per_window(proxy: &Proxy, l: &str, r: &str) -> Vec<(String, u64)> {
    let station = get(&format!("{l}/stations?limit=1")).await.json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let series = format!("{r}/stations/{station}/parameters/water-level-15min/values");
    let month = "from=2023-06-01T00:00:00Z&to=2023-06-30T23:59:59Z";
    let years = "from=2023-01-01T00:00:00Z&to=2024-12-31T23:59:59Z";
    let mut queries: Vec<String> = ["csv", "json", "parquet", "arrow"]
        .iter()
        .flat_map(|f| [format!("{month}&format={f}"), format!("{years}&format={f}")])
        .collect();
    queries.push(format!("{years}&format=csv&sort=-timestamp"));
    let mut counted = Vec::new();
    for query in queries {
        let before = proxy.counts.get("GET");
        let got = get(&format!("{series}?{query}")).await;
        assert_eq!(got.status, 200, "{query}: {}", got.text());
        counted.push((query, proxy.counts.get("GET") - before));
    }
    counted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_in_a_bucket_answers_as_its_local_copy_in_few_requests() {
    let s3 = S3::start();
    upload_dir(s3.bucket_store("archive").as_ref(), dataset(), "agency/v");
    let proxy = Proxy::start(s3.port);
    let (remote, local) = side_by_side(&s3, &proxy, "s3://archive/agency/v");
    let (r, l) = (&remote.base, &local.base);
    let health = get(&format!("{r}/health")).await;
    assert_eq!(health.status, 200, "{}", health.text());
    assert_eq!(health.json()["status"], "ok");

    let urls = sample_urls(l).await;
    assert!(urls.len() > 60, "{}", urls.len());
    for url in &urls {
        for pass in 0..2 {
            let a = get(&format!("{l}{url}")).await;
            let b = get(&format!("{r}{url}")).await;
            assert_eq!(a.status, 200, "{url}: {}", a.text());
            assert_eq!(b.status, a.status, "{url} (pass {pass}): {}", b.text());
            assert!(a.body == b.body, "{url}: bodies differ (pass {pass})");
            for h in [
                "etag",
                "content-type",
                "last-modified",
                "link",
                "x-total-count",
            ] {
                assert_eq!(a.header(h), b.header(h), "{url}: {h}");
            }
        }
    }
    // A conditional GET (ranges need the answer store, off here: see tests/replicas.rs).
    let values = urls
        .iter()
        .find(|u| u.contains("format=csv&from=2023-01-01"))
        .unwrap();
    let etag = get(&format!("{r}{values}")).await.header("etag").unwrap();
    let same = get_with(&format!("{r}{values}"), &[("if-none-match", &etag)]).await;
    assert_eq!(same.status, 304);

    // Round trips after warm-up (footers cached, no value cache, no answer store): a
    // one-month window is one GET (two at most); a two-year download one GET per month file.
    let gets = || proxy.counts.get("GET");
    for (window, most) in gets_per_window(&proxy, l, r).await {
        assert!(
            most <= 2 || window.contains("2024-12") && most <= 24,
            "{window}: {most}"
        );
    }
    // The server's own count on /metrics agrees with the wire.
    let metrics = get(&format!("{}/metrics", r.trim_end_matches("/v1")))
        .await
        .text();
    let counted: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("hydro_store_requests_total{kind=\"get\"} "))
        .unwrap_or_else(|| panic!("no GET count in {metrics}"))
        .parse()
        .unwrap();
    assert_eq!(counted, gets(), "the server's count vs the wire");
}

/// A bucket compacted in place by `hydro compact` (its month files then vacuumed away) answers
/// as the archive did before, and reads a station-year's months in one GET.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_bucket_answers_as_before_in_a_get_per_station_year() {
    let s3 = S3::start();
    let bucket = s3.bucket_store("packs");
    upload_dir(bucket.as_ref(), dataset(), "v");
    // A server says what compaction would do, until it is done.
    let env = env_of(&s3);
    // The log until the server has counted the months to compact (after its start).
    let log_of_serving = || {
        let mut env = refs(&env);
        env.push(("HYDRO_LOG", "info"));
        let mut server = Server::start_with("s3://packs/v", &env);
        let err = server.child().stderr.take().unwrap();
        // Kept open until the server is killed: it logs the request below.
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(err));
        let mut text = String::new();
        for line in lines.by_ref() {
            let line = line.unwrap();
            text.push_str(&line);
            text.push('\n');
            if line.contains("not compacted") || line.contains("is compacted") {
                break;
            }
        }
        // Counting read the files table in order: it decoded no station into the budget
        // of those requests ask for.
        let metrics = on_own_runtime(get(&format!(
            "{}/metrics",
            server.base.trim_end_matches("/v1")
        )))
        .text();
        assert!(
            metrics.contains("hydro_memory_bytes{part=\"files_cache\"} 0\n"),
            "{metrics}"
        );
        server.child().kill().unwrap();
        text
    };
    let log = log_of_serving();
    assert!(
        log.contains("576 month files before") && log.contains("hydro compact --out s3://packs/v"),
        "{log}"
    );
    let said = succeeds(hydro(&s3).args(["compact", "--out", "s3://packs/v"]));
    assert!(
        said.contains("576 months into 48 station-year files"),
        "{said}"
    );
    let log = log_of_serving();
    assert!(
        !log.contains("not compacted") && log.contains("is compacted"),
        "{log}"
    );
    succeeds(hydro(&s3).args(["vacuum", "--out", "s3://packs/v", "--older-than", "PT0S"]));
    let values = on_own_runtime(async {
        use futures::TryStreamExt;
        let prefix = object_store::path::Path::from("v/values");
        bucket.list(Some(&prefix)).try_collect::<Vec<_>>().await
    })
    .unwrap();
    assert_eq!(values.len(), 48);
    assert!(
        values
            .iter()
            .all(|o| o.location.as_ref().ends_with("-g2.parquet")),
        "{values:?}"
    );

    let proxy = Proxy::start(s3.port);
    let (remote, local) = side_by_side(&s3, &proxy, "s3://packs/v");
    let (r, l) = (&remote.base, &local.base);
    // All but the landing page, which names the version.
    let mut urls = sample_urls(l).await;
    urls.retain(|u| u != "/");
    let (vl, vr) = (dataset_version(l).await, dataset_version(r).await);
    for url in &urls {
        // Cold (footers read with the months), then warm.
        for pass in 0..2 {
            let a = get(&format!("{l}{url}")).await;
            let b = get(&format!("{r}{url}")).await;
            assert_eq!((a.status, b.status), (200, 200), "{url}: {}", b.text());
            assert!(
                unversioned(&a.body, &vl) == unversioned(&b.body, &vr),
                "{url}: bodies differ (pass {pass})"
            );
        }
    }
    // After warm-up: a month one GET, two years (24 months in 2 station-year files) two,
    // whatever the format, and newest first.
    for (query, cost) in gets_per_window(&proxy, l, r).await {
        let limit = if query.contains("2023-06") { 1 } else { 2 };
        assert!(cost <= limit, "{query}: {cost} GETs");
    }
}

/// `hydro import` of the samples into `out`, plus `extra` arguments.
fn import_args(out: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["import", "--out", out].map(String::from).into();
    for (flag, file) in [
        ("--stations", "stations.csv"),
        ("--parameters", "parameters.csv"),
        ("--characteristics", "characteristics.csv"),
        ("--values", "values.csv"),
    ] {
        args.push(flag.into());
        args.push(sample(file));
    }
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

fn succeeds(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The served dataset version, from the health check.
async fn served_version(base: &str) -> String {
    let health = get(&format!("{base}/health")).await.json();
    health["checks"]["catalog"]["datasetVersion"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A server following a bucket keeps, across a switch to an appended version, what it read of
/// the month files both versions list (their footers and bytes): answered again after the
/// switch, the series read before cost no GET of a value file but the new month's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switch_keeps_what_was_read_of_the_months_an_append_left_alone() {
    let s3 = S3::start();
    succeeds(hydro(&s3).args([
        "generate",
        "--out",
        "s3://fol/demo",
        "--stations",
        "3",
        "--years",
        "2",
        "--seed",
        "5",
    ]));
    let proxy = Proxy::start(s3.port);
    let mut env = env_at(&s3, proxy.port);
    env.push(("HYDRO_ANSWER_STORE_BYTES", "0".into()));
    env.push(("HYDRO_FOLLOW_SECONDS", "1".into()));
    let served = Server::start_with("s3://fol/demo", &refs(&env));
    let base = &served.base;
    let stations = station_ids(base).await;
    assert_eq!(stations.len(), 3);
    let value_gets = || proxy.counts.get("GET values");
    let answer_all = || async {
        let before = value_gets();
        let mut bodies = Vec::new();
        for sid in &stations {
            let url =
                format!("{base}/stations/{sid}/parameters/water-level-15min/values?format=csv");
            let got = get(&url).await;
            assert_eq!(got.status, 200, "{url}: {}", got.text());
            bodies.push(got.body);
        }
        (bodies, value_gets() - before)
    };
    let (first, cold) = answer_all().await;
    assert!(cold > 10, "every month read once: {cold} GETs");
    let (again, warm) = answer_all().await;
    assert_eq!((again == first, warm), (true, 0), "read again from memory");

    // A value in a new month of the first station; the server switches to that version.
    let old = served_version(base).await;
    let dir = tempfile::tempdir().unwrap();
    let values = dir.path().join("append.csv");
    let row = format!(
        "{},water-level-15min,2040-01-01T00:00:00Z,1.5,unchecked",
        stations[0]
    );
    std::fs::write(
        &values,
        format!("stationId,parameterId,timestamp,value,quality\n{row}\n"),
    )
    .unwrap();
    let values = values.to_str().unwrap();
    succeeds(hydro(&s3).args([
        "import",
        "--out",
        "s3://fol/demo",
        "--append",
        "--values",
        values,
    ]));
    let mut now = old.clone();
    for _ in 0..200 {
        now = served_version(base).await;
        if now != old {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_ne!(now, old, "the server did not follow the append");
    let (after, switched) = answer_all().await;
    assert_eq!(
        after[1..],
        first[1..],
        "the other stations' answers are the same"
    );
    assert!(String::from_utf8_lossy(&after[0]).contains("2040-01-01T00:00:00"));
    // The new month's file: its footer and pages in one GET, two at most.
    assert!(
        (1..=2).contains(&switched),
        "GETs of value files after the switch: {switched}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_import_append_and_vacuum_write_to_a_bucket() {
    let s3 = S3::start();
    let env = env_of(&s3);
    succeeds(hydro(&s3).args([
        "generate",
        "--out",
        "s3://gen/demo",
        "--stations",
        "3",
        "--years",
        "1",
    ]));
    let generated = Server::start_with("s3://gen/demo", &refs(&env));
    let listed = get(&format!("{}/stations", generated.base)).await.json();
    assert_eq!(listed["data"].as_array().unwrap().len(), 3);

    // The same import into a bucket and into a directory: the same rows.
    let dir = tempfile::tempdir().unwrap();
    let local_out = dir.path().to_str().unwrap();
    succeeds(Command::new(env!("CARGO_BIN_EXE_hydro")).args(import_args(local_out, &[])));
    succeeds(hydro(&s3).args(import_args("s3://imp/x", &[])));
    let mut follow = refs(&env);
    follow.push(("HYDRO_FOLLOW_SECONDS", "1"));
    let served = Server::start_with("s3://imp/x", &follow);
    let local = Server::start_with(dir.path(), &[]);
    let urls = sample_urls(&local.base).await;
    let csv = urls.iter().filter(|u| u.contains("format=csv"));
    for url in csv {
        let a = get(&format!("{}{url}", local.base)).await;
        let b = get(&format!("{}{url}", served.base)).await;
        assert_eq!((a.status, b.status), (200, 200), "{url}: {}", b.text());
        assert!(a.body == b.body, "{url}");
    }

    // An append to the bucket: the running server follows it.
    let before = served_version(&served.base).await;
    let out = succeeds(hydro(&s3).args([
        "import",
        "--out",
        "s3://imp/x",
        "--append",
        "--values",
        &sample("values.csv"),
    ]));
    assert!(out.contains("appended"), "{out}");
    let mut now = before.clone();
    for _ in 0..100 {
        now = served_version(&served.base).await;
        if now != before {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_ne!(now, before, "the server did not follow the append");

    // Vacuum drops the first version's files; the current one still answers in full.
    let out = succeeds(hydro(&s3).args(["vacuum", "--out", "s3://imp/x", "--older-than", "PT0S"]));
    assert!(out.contains("deleted"), "{out}");
    let fresh = Server::start_with("s3://imp/x", &refs(&env));
    for url in urls.iter().filter(|u| u.contains("format=csv")) {
        let a = get(&format!("{}{url}", local.base)).await;
        let b = get(&format!("{}{url}", fresh.base)).await;
        assert_eq!(b.status, 200, "{url}: {}", b.text());
        assert!(a.body == b.body, "{url}: the append wrote the same values");
    }
}

/// An import whose files are kept in a bucket reads them where they are: the catalog, and
/// plain CSV, gzip'd CSV and Parquet values found by a pattern, into the same value files as
/// the same files on local disk. A pattern that finds nothing and a missing object are errors
/// that publish nothing.
#[test]
fn values_files_in_a_bucket_are_imported_in_place() {
    let s3 = S3::start();
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(sample("values.csv")).unwrap();
    let (header, rows) = text.split_once('\n').unwrap();
    let rows: Vec<&str> = rows.lines().collect();
    let third = rows.len() / 3;
    let part = |r: &[&str]| format!("{header}\n{}\n", r.join("\n"));
    let plain = part(&rows[..third]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, part(&rows[third..2 * third]).as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let parquet = parquet_of(&rows[2 * third..]);
    let files = [
        ("a.csv", plain.into_bytes()),
        ("b.csv.gz", gz),
        ("c.parquet", parquet),
    ];
    let raw = s3.bucket_store("raw");
    common::s3::on_own_runtime(async {
        use object_store::ObjectStoreExt;
        for (name, bytes) in &files {
            std::fs::write(dir.path().join(name), bytes).unwrap();
            raw.put(&format!("2024/{name}").into(), bytes.clone().into())
                .await
                .unwrap();
        }
        // The catalog beside them (one file gzip'd).
        let stations = std::fs::read(sample("stations.csv")).unwrap();
        raw.put(&"catalog/stations.csv".into(), stations.into())
            .await
            .unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, &std::fs::read(sample("parameters.csv")).unwrap())
            .unwrap();
        raw.put(
            &"catalog/parameters.csv.gz".into(),
            gz.finish().unwrap().into(),
        )
        .await
        .unwrap();
        // Not matched by the pattern: another directory, another name.
        raw.put(&"2024/old/d.csv".into(), b"not values".to_vec().into())
            .await
            .unwrap();
        raw.put(&"2024/readme.txt".into(), b"not values".to_vec().into())
            .await
            .unwrap();
    });

    let from_bucket = dir.path().join("from-bucket");
    let from_disk = dir.path().join("from-disk");
    let import = |out: &std::path::Path, stations: &str, parameters: &str| {
        let mut cmd = hydro(&s3);
        cmd.args(["import", "--out"]).arg(out);
        cmd.args([
            "--stations",
            stations,
            "--parameters",
            parameters,
            "--values",
        ]);
        cmd
    };
    let in_bucket = [
        "s3://raw/catalog/stations.csv",
        "s3://raw/catalog/parameters.csv.gz",
    ];
    let catalog = |out: &std::path::Path| import(out, in_bucket[0], in_bucket[1]);
    let out =
        succeeds(catalog(&from_bucket).args(["s3://raw/2024/*.csv*", "s3://raw/2024/c.parquet"]));
    assert!(out.contains(&format!("{} values", rows.len())), "{out}");
    let (stations, parameters) = (sample("stations.csv"), sample("parameters.csv"));
    succeeds(
        import(&from_disk, &stations, &parameters)
            .args(files.map(|(name, _)| dir.path().join(name))),
    );
    let values = |root: &std::path::Path| {
        let mut files: Vec<(String, Vec<u8>)> = common::files_under(&root.join("values"))
            .into_iter()
            .map(|f| {
                let rel = f.strip_prefix(root).unwrap().display().to_string();
                (rel, std::fs::read(&f).unwrap())
            })
            .collect();
        files.sort();
        files
    };
    let stored = values(&from_bucket);
    assert!(!stored.is_empty());
    assert!(stored == values(&from_disk), "the same value files");

    for (stations, said) in [
        (
            "s3://raw/catalog/gone.csv",
            "s3://raw/catalog/gone.csv: cannot open: no such object",
        ),
        (
            "s3://raw/catalog/*.csv",
            "s3://raw/catalog/*.csv: a catalog file is one object, not a pattern",
        ),
    ] {
        let out = import(&dir.path().join("bad"), stations, in_bucket[1])
            .arg("s3://raw/2024/a.csv")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(said), "{err}");
    }
    for (pattern, said) in [
        (
            "s3://raw/2025/*.csv",
            "s3://raw/2025/*.csv: no file matches this pattern",
        ),
        (
            "s3://raw/2024/gone.csv",
            "s3://raw/2024/gone.csv: cannot open: no such object",
        ),
        ("s3://raw/2024/[a.csv", "s3://raw/2024/[a.csv: bad pattern"),
    ] {
        let out = catalog(&dir.path().join("bad"))
            .arg(pattern)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(said),
            "{pattern}: {err}"
        );
        assert!(!dir.path().join("bad/manifest.json").exists());
    }
}

/// Values rows (`stationId,parameterId,timestamp,value,quality` CSV lines) as a Parquet file.
fn parquet_of(rows: &[&str]) -> Vec<u8> {
    use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
    let fields: Vec<Vec<&str>> = rows.iter().map(|r| r.split(',').collect()).collect();
    let text = |i: usize| -> ArrayRef {
        std::sync::Arc::new(StringArray::from_iter_values(fields.iter().map(|f| f[i])))
    };
    let value: ArrayRef = std::sync::Arc::new(Float64Array::from_iter_values(
        fields.iter().map(|f| f[3].parse::<f64>().unwrap()),
    ));
    let batch = RecordBatch::try_from_iter([
        ("stationId", text(0)),
        ("parameterId", text(1)),
        ("timestamp", text(2)),
        ("value", value),
        ("quality", text(4)),
    ])
    .unwrap();
    let mut bytes = Vec::new();
    let mut writer =
        datafusion::parquet::arrow::ArrowWriter::try_new(&mut bytes, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    bytes
}

/// `hydro serve --data s3://…` that must refuse to start; what it said.
fn serve_refuses(location: &str, env: &[(&str, String)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(["serve", "--bind", "127.0.0.1:0", "--data", location])
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert!(!out.status.success(), "started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_faults_fail_their_requests_and_the_server_recovers() {
    let mut s3 = S3::start();
    let bucket = s3.bucket_store("faults");
    upload_dir(bucket.as_ref(), dataset(), "d");

    // Refused at start, with what to do: no credentials (never the metadata endpoint), an
    // endpoint that does not answer, a bucket without a dataset.
    let mut env = env_of(&s3);
    env.retain(|(k, _)| !k.starts_with("AWS_ACCESS") && !k.starts_with("AWS_SECRET"));
    let said = serve_refuses("s3://faults/d", &env);
    assert!(
        said.contains("no credentials") && said.contains("AWS_ACCESS_KEY_ID"),
        "{said}"
    );
    let closed = common::s3::free_ports(1)[0];
    let mut env = env_at(&s3, closed);
    env.push(("HYDRO_STORE_RETRIES", "1".into()));
    let said = serve_refuses("s3://faults/d", &env);
    assert!(said.contains("s3://faults/d"), "{said}");
    let said = serve_refuses("s3://faults/nothing-here", &env_of(&s3));
    assert!(said.contains("not a dataset"), "{said}");

    // Serving through a proxy that can hang; every answer reads the store.
    let proxy = Proxy::start(s3.port);
    let mut env = env_at(&s3, proxy.port);
    env.push(("HYDRO_VALUE_CACHE_BYTES", "0".into()));
    env.push(("HYDRO_ANSWER_STORE_BYTES", "0".into()));
    env.push(("HYDRO_STORE_TIMEOUT_SECS", "2".into()));
    env.push(("HYDRO_STORE_RETRIES", "1".into()));
    let server = Server::start_with("s3://faults/d", &refs(&env));
    let b = &server.base;
    let station = get(&format!("{b}/stations?limit=1")).await.json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let month = |m: &str| {
        format!(
            "{b}/stations/{station}/parameters/water-level-15min/values?format=csv\
             &from=2023-{m}-01T00:00:00Z&to=2023-{m}-20T00:00:00Z"
        )
    };
    assert_eq!(get(&month("02")).await.status, 200);
    let health = |b: String| async move { get(&format!("{b}/health")).await };

    // A store that hangs: the request ends within its timeout as 503 + Retry-After, health
    // says down; once it answers again, so does the server.
    proxy.stall.store(true, std::sync::atomic::Ordering::SeqCst);
    let hung = get(&month("02")).await;
    assert_eq!(hung.status, 503, "{}", hung.text());
    assert!(hung.header("retry-after").is_some());
    let h = health(b.clone()).await;
    assert_eq!((h.status, h.json()["status"].as_str()), (503, Some("down")));
    proxy
        .stall
        .store(false, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(get(&month("02")).await.status, 200);

    // A store that is gone: the same, and back without a restart when it returns.
    s3.stop();
    let gone = get(&month("02")).await;
    assert_eq!(gone.status, 503, "{}", gone.text());
    assert!(gone.header("retry-after").is_some());
    let h = health(b.clone()).await;
    assert_eq!(h.status, 503);
    assert_eq!(h.json()["checks"]["storage"]["status"], "down");
    s3.restart();
    assert_eq!(get(&month("02")).await.status, 200);
    let h = health(b.clone()).await.json();
    assert_eq!(h["status"], "ok", "{h}");

    // An object missing or damaged: its requests fail (500: trying again will not help),
    // the others are served.
    let files: Vec<object_store::path::Path> = common::s3::on_own_runtime(async {
        use futures::TryStreamExt;
        bucket
            .list(Some(&object_store::path::Path::from(format!(
                "d/values/station={station}"
            ))))
            .map_ok(|m| m.location)
            .try_collect()
            .await
            .unwrap()
    });
    let of = |m: &str| {
        files
            .iter()
            .find(|p| p.as_ref().contains(&format!("/2023-{m}-g")))
            .unwrap()
            .clone()
    };
    let (missing, damaged) = (of("03"), of("04"));
    common::s3::on_own_runtime(async {
        use object_store::ObjectStoreExt;
        bucket.delete(&missing).await.unwrap();
        bucket
            .put(&damaged, b"PAR1 not parquet at all PAR1".to_vec().into())
            .await
            .unwrap();
    });
    for m in ["03", "04"] {
        let r = get(&month(m)).await;
        assert_eq!(r.status, 500, "{m}: {}", r.text());
        assert!(!r.text().contains("station="), "no internals: {}", r.text());
    }
    assert_eq!(get(&month("05")).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishing_to_a_bucket_is_conditional() {
    use hydro_engine::DatasetWriter;
    use hydro_engine::PublishKind;
    use object_store::ObjectStoreExt;
    use object_store::path::Path;
    let s3 = S3::start();
    succeeds(hydro(&s3).args(import_args("s3://pub", &[])));
    let store = s3.bucket_store("pub");
    let manifest = |store: std::sync::Arc<dyn object_store::ObjectStore>| async move {
        let bytes = store
            .get(&Path::from("manifest.json"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()
    };
    let lost = |e: hydro_engine::EngineError| {
        let text = e.to_string() + &format!("{e:?}");
        assert!(text.contains("another writer published"), "{text}");
    };

    // Two writers of one generation (the second took a lock it thought stale): the first
    // to publish wins, the other publishes nothing.
    let a = DatasetWriter::begin(store.clone(), PublishKind::Append)
        .await
        .unwrap();
    store.delete(&Path::from("writing.lock")).await.unwrap();
    let b = DatasetWriter::begin(store.clone(), PublishKind::Append)
        .await
        .unwrap();
    let published = b.publish(&[], vec![], &[]).await.unwrap();
    assert_eq!(published.generation, 2);
    lost(a.publish(&[], vec![], &[]).await.unwrap_err());
    assert_eq!(
        manifest(store.clone()).await["version"],
        published.version.as_str()
    );

    // The manifest changed under a writer (If-Match fails): nothing published, and its
    // version record is not left behind.
    let c = DatasetWriter::begin(store.clone(), PublishKind::Append)
        .await
        .unwrap();
    let mut changed = serde_json::to_vec(&manifest(store.clone()).await).unwrap();
    changed.push(b'\n');
    store
        .put(&Path::from("manifest.json"), changed.into())
        .await
        .unwrap();
    lost(c.publish(&[], vec![], &[]).await.unwrap_err());
    assert_eq!(manifest(store.clone()).await["generation"], 2);
    assert!(store.head(&Path::from("versions/3.json")).await.is_err());
    // And the next writer publishes.
    let d = DatasetWriter::begin(store.clone(), PublishKind::Append)
        .await
        .unwrap();
    assert_eq!(d.publish(&[], vec![], &[]).await.unwrap().generation, 3);
}
