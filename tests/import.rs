//! `hydro import` end to end: sample CSVs in, dataset served out; bad input reported line by
//! line with nothing published.

mod common;

use common::{Server, get};
use std::path::Path;
use std::process::Command;

fn sample(name: &str) -> String {
    format!("{}/data/sample/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `hydro import --replace --yes` of the sample catalog and `values` into `out`: the tests
/// import again and again into one place.
fn import(out: &Path, values: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hydro"));
    cmd.arg("import")
        .arg("--out")
        .arg(out)
        .args(["--replace", "--yes"]);
    cmd.args([
        "--stations",
        &sample("stations.csv"),
        "--parameters",
        &sample("parameters.csv"),
    ]);
    cmd.args([
        "--characteristics",
        &sample("characteristics.csv"),
        "--values",
    ]);
    cmd.args(values);
    cmd.output().expect("run hydro import")
}

#[tokio::test]
async fn samples_import_and_serve() {
    let dir = tempfile::tempdir().unwrap();
    let out = import(dir.path(), &[&sample("values.csv")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows_in = std::fs::read_to_string(sample("values.csv"))
        .unwrap()
        .lines()
        .count()
        - 1;
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{rows_in} values")));

    let server = Server::start_with(dir.path(), &[]);
    let b = &server.base;
    let kaub = get(&format!("{b}/stations/kaub")).await.json();
    // Gauss-Krüger zone 3 (EPSG 31467) converted with the standard's Helmert parameters.
    let (lat, lon) = (
        kaub["data"]["coordinates"]["lat"].as_f64().unwrap(),
        kaub["data"]["coordinates"]["lon"].as_f64().unwrap(),
    );
    assert!(
        (lat - 50.0743).abs() < 0.001 && (lon - 7.8048).abs() < 0.001,
        "{lat},{lon}"
    );
    assert_eq!(kaub["data"]["state"], "DE-RP");
    // Empty optional cells are left out of answers, not shown as "".
    let well = get(&format!("{b}/stations/gwm-ried-7")).await.json();
    let well = well["data"].as_object().unwrap();
    assert!(!well.contains_key("waterBodyId") && !well.contains_key("waterBodyName"));
    assert_eq!(well["operator"], "HLNUG");
    let list = get(&format!("{b}/stations?format=ndjson")).await.text();
    assert!(!list.contains("\"\""), "no empty texts: {list}");
    let mut served = 0;
    for (s, p) in [
        ("koeln", "water-level-15min"),
        ("koeln", "discharge-15min"),
        ("kaub", "water-level-15min"),
        ("gwm-ried-7", "groundwater-level-1d"),
    ] {
        let v = get(&format!(
            "{b}/stations/{s}/parameters/{p}/values?format=csv"
        ))
        .await
        .text();
        served += v.lines().count() - 1;
    }
    assert_eq!(served, rows_in, "row counts in = row counts out");
    // Offsets in the input are instants: kaub's +01:00 rows come out in UTC.
    let first = get(&format!(
        "{b}/stations/kaub/parameters/water-level-15min/values?limit=1"
    ))
    .await
    .json();
    assert_eq!(first["data"][0]["timestamp"], "2024-01-31T01:00:00+00:00");
    let p = get(&format!("{b}/stations/koeln/parameters/water-level-15min"))
        .await
        .json();
    assert_eq!(
        p["data"]["availability"][0]["start"],
        "2024-01-31T00:00:00+00:00"
    );
    let c = get(&format!("{b}/stations/kaub/characteristics/mhw"))
        .await
        .json();
    assert_eq!(
        c["data"]["description"],
        "mean of yearly highs, \"hydrological year\""
    );
}

#[tokio::test]
async fn bad_lines_are_reported_and_nothing_is_published() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        import(dir.path(), &[&sample("values.csv")])
            .status
            .success()
    );
    let before = std::fs::read(dir.path().join("manifest.json")).unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "stationId,parameterId,timestamp,value,quality\n\
         koeln,water-level-15min,2024-03-01T00:00:00,1,good\n\
         nope,water-level-15min,2024-03-01T00:00:00Z,1,good\n\
         koeln,water-level-15min,2024-03-01T00:00:00Z,abc,good\n\
         koeln,water-level-15min,2024-03-01T00:00:00Z,1,great\n\
         koeln,water-level-15min,2024-03-01T00:15:00Z,1,good\n",
    )
    .unwrap();
    let out = import(dir.path(), &[&sample("values.csv"), bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for line in 2..=5 {
        assert!(
            err.contains(&format!("bad.csv:{line}:")),
            "line {line} reported: {err}"
        );
    }
    assert!(!err.contains("bad.csv:6:"), "{err}");
    assert!(err.contains("nothing was published"));
    assert_eq!(
        std::fs::read(dir.path().join("manifest.json")).unwrap(),
        before,
        "old version stays"
    );
}

/// `serve` on a directory that holds no dataset says how to make one.
#[test]
fn serving_a_directory_without_a_dataset_suggests_import() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(["serve", "--bind", "127.0.0.1:0", "--data"])
        .arg(dir.path())
        .output()
        .expect("run hydro serve");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hydro import --out") && err.contains("not a dataset"),
        "{err}"
    );
    // A directory that is not there: that is the first thing said.
    let missing = dir.path().join("nonexistent");
    let out = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(["serve", "--bind", "127.0.0.1:0", "--data"])
        .arg(&missing)
        .env_remove("HYDRO_LOG")
        .output()
        .expect("run hydro serve");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("error: --data ") && first.contains("nonexistent: no such directory"),
        "{err}"
    );
    let help = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(["import", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in [
        "--stations",
        "--parameters",
        "--characteristics",
        "--values",
        "quality",
    ] {
        assert!(help.contains(flag), "{flag} in {help}");
    }
}

/// `import --append` adds values and corrects stored ones, with a new station in the same
/// call; only the station-months it touches are written; bad appends publish nothing.
#[tokio::test]
async fn appends_add_and_correct_values() {
    let dir = tempfile::tempdir().unwrap();
    let out = import(dir.path(), &[&sample("values.csv")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = |d: &Path| -> Vec<String> {
        common::files_under(&d.join("values"))
            .iter()
            .map(|p| p.strip_prefix(d).unwrap().display().to_string())
            .collect()
    };
    let before = files(dir.path());
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let stations = write(
        "st.csv",
        "id,name,type,state,lat,lon\nbonn,Bonn,surfaceWater,NW,50.73,7.10\n",
    );
    let parameters = write(
        "par.csv",
        "stationId,id,name,observedProperty,unit,interval\n\
         bonn,water-level-15min,Water level,waterLevel,cm,PT15M\n",
    );
    let values = write(
        "new.csv",
        "stationId,parameterId,timestamp,value,quality\n\
         koeln,water-level-15min,2024-01-31T00:00:00Z,999.5,good\n\
         koeln,water-level-15min,2024-03-01T00:00:00Z,310.0,unchecked\n\
         bonn,water-level-15min,2024-03-01T00:00:00Z,250.0,unchecked\n",
    );
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hydro"))
            .arg("import")
            .arg("--append")
            .arg("--out")
            .arg(dir.path())
            .args(args)
            .output()
            .unwrap()
    };
    // Bad: a row of an unknown series; nothing changes.
    let bad = write(
        "bad.csv",
        "stationId,parameterId,timestamp,value,quality\nbonn,water-level-15min,2024-03-01T00:00:00Z,1,good\n",
    );
    let manifest = std::fs::read(dir.path().join("manifest.json")).unwrap();
    let r = run(&["--values", &bad]);
    assert!(!r.status.success());
    assert!(
        String::from_utf8_lossy(&r.stderr)
            .contains("bad.csv:2: stationId: 'bonn' is not a station of the catalog")
    );
    assert_eq!(
        std::fs::read(dir.path().join("manifest.json")).unwrap(),
        manifest
    );

    let r = run(&[
        "--stations",
        &stations,
        "--parameters",
        &parameters,
        "--values",
        &values,
    ]);
    let said = String::from_utf8_lossy(&r.stdout);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(
        said.contains("appended 3 values (1 replaced stored ones) in 3 station-months written"),
        "{said}"
    );
    // Untouched station-months keep their files; touched and new ones are written anew.
    let after = files(dir.path());
    let new: Vec<&String> = after.iter().filter(|f| !before.contains(f)).collect();
    assert_eq!(
        new,
        [
            "values/station=bonn/2024-03-g2.parquet",
            "values/station=koeln/2024-01-g2.parquet",
            "values/station=koeln/2024-03-g2.parquet",
        ]
    );

    let server = Server::start_with(dir.path(), &[]);
    let b = &server.base;
    let series = format!("{b}/stations/koeln/parameters/water-level-15min/values");
    let first = get(&format!("{series}?limit=1")).await.json();
    assert_eq!(first["data"][0]["value"], 999.5, "corrected");
    let all = get(&format!("{series}?format=csv")).await.text();
    assert_eq!(all.lines().count() - 1, 201, "200 stored + 1 new");
    let latest = get(&format!("{series}?recent=1")).await.json();
    assert_eq!(latest["data"][0]["timestamp"], "2024-03-01T00:00:00+00:00");
    assert_eq!(latest["data"][0]["quality"], "unchecked");
    let bonn = get(&format!(
        "{b}/stations/bonn/parameters/water-level-15min/values"
    ))
    .await
    .json();
    assert_eq!(bonn["data"][0]["value"], 250.0);
    let p = get(&format!("{b}/stations/koeln/parameters/water-level-15min"))
        .await
        .json();
    // The appended value a month after the others is a period of its own.
    let periods = p["data"]["availability"].as_array().unwrap();
    assert_eq!(periods.len(), 2, "{periods:?}");
    assert_eq!(periods[0]["end"], "2024-02-02T01:45:00+00:00");
    assert_eq!(periods[1]["end"], "2024-03-01T00:00:00+00:00");
    let health = get(&format!("{b}/health")).await.json();
    assert_eq!(health["checks"]["catalog"]["stations"], 4);
}

#[test]
fn appending_needs_a_published_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let r = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(["import", "--append", "--out"])
        .arg(dir.path().join("empty"))
        .args(["--values", &sample("values.csv")])
        .output()
        .unwrap();
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("nothing to append to"));
}

/// Of two writers one writes: while a dataset's write lock is held by a running process, an
/// import stops before writing anything and says who holds it; a lock left by a process that
/// no longer runs is taken over.
#[test]
fn a_second_writer_stops_while_the_first_holds_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        import(dir.path(), &[&sample("values.csv")])
            .status
            .success()
    );
    let manifest = std::fs::read(dir.path().join("manifest.json")).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let lock = dir.path().join("writing.lock");
    // This test's own process runs: the lock is live.
    let live = format!(
        r#"{{"pid":{},"host":"{}","since":"2026-01-01T00:00:00Z"}}"#,
        std::process::id(),
        host.trim()
    );
    std::fs::write(&lock, &live).unwrap();
    let r = import(dir.path(), &[&sample("values.csv")]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(!r.status.success());
    assert!(
        err.contains(&format!("process {} on", std::process::id())),
        "{err}"
    );
    assert!(err.contains("nothing was published"), "{err}");
    assert_eq!(
        std::fs::read(dir.path().join("manifest.json")).unwrap(),
        manifest
    );
    assert_eq!(
        std::fs::read_to_string(&lock).unwrap(),
        live,
        "the holder's lock stays"
    );

    // A process that has exited: its lock is stale.
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    std::fs::write(
        &lock,
        format!(
            r#"{{"pid":{pid},"host":"{}","since":"2026-01-01T00:00:00Z"}}"#,
            host.trim()
        ),
    )
    .unwrap();
    let r = import(dir.path(), &[&sample("values.csv")]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(!lock.exists(), "released after publishing");
}

/// Serving one's own data without a publisher and licence warns at start, naming the
/// settings, and the answers claim none (the demo's are the demo's); with them set, it does
/// not warn and the answers carry them.
#[tokio::test]
async fn own_data_without_metadata_warns_and_claims_none() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        import(dir.path(), &[&sample("values.csv")])
            .status
            .success()
    );
    let stderr_of = |env: &[(&str, &str)]| {
        let mut server = Server::start_with(dir.path(), env);
        let mut err = server.child().stderr.take().unwrap();
        server.child().kill().unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut err, &mut text).unwrap();
        text
    };
    let warned = stderr_of(&[]);
    assert!(
        warned.contains("publisher_name, publisher_email, license_name, license_url not set"),
        "{warned}"
    );
    let own = [
        ("HYDRO_PUBLISHER_NAME", "Landesamt"),
        ("HYDRO_PUBLISHER_EMAIL", "daten@example.org"),
        ("HYDRO_LICENSE_NAME", "DL-DE/BY-2.0"),
        ("HYDRO_LICENSE_URL", "https://www.govdata.de/dl-de/by-2-0"),
    ];
    let quiet = stderr_of(&own);
    assert!(!quiet.contains("not set"), "{quiet}");
    let bare = Server::start_with(dir.path(), &[]);
    let meta = common::get(&format!("{}/", bare.base)).await.json()["meta"].clone();
    assert!(
        meta.get("publisherName").is_none() && meta.get("licenseUrl").is_none(),
        "{meta}"
    );
    let named = Server::start_with(dir.path(), &own);
    let meta = common::get(&format!("{}/", named.base)).await.json()["meta"].clone();
    assert_eq!(meta["licenseName"], "DL-DE/BY-2.0");
}

/// Bad values of the import's and vacuum's own flags are refused with what was wrong.
#[test]
fn bad_flags_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hydro"))
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} accepted");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let out = dir.path().to_str().unwrap();
    let values = sample("values.csv");
    for (memory, said) in [
        ("lots", "is not a size"),
        ("12XB", "unknown unit"),
        ("99999999999GiB", "too large"),
    ] {
        let err = run(&[
            "import", "--append", "--out", out, "--values", &values, "--memory", memory,
        ]);
        assert!(err.contains(said), "{memory}: {err}");
    }
    let err = run(&["vacuum", "--out", out, "--older-than", "an hour"]);
    assert!(err.contains("--older-than"), "{err}");
    let err = run(&["vacuum", "--out", out]);
    assert!(err.contains("no dataset is published there"), "{err}");
}

/// Availability is split where a series has a gap longer than six of its steps: a 23.5-hour
/// outage of a 15-minute series inside one month is two periods; the months an append
/// carries over keep theirs.
#[tokio::test]
async fn availability_splits_at_outages_and_keeps_them_on_append() {
    let dir = tempfile::tempdir().unwrap();
    let step = chrono::Duration::minutes(15);
    let start = chrono::DateTime::parse_from_rfc3339("2031-01-10T00:00:00Z").unwrap();
    let mut csv = String::from("stationId,parameterId,timestamp,value,quality\n");
    for i in 0..400 {
        // Values 100..194 (23.5 hours) are missing.
        if (100..194).contains(&i) {
            continue;
        }
        let t = (start + step * i).to_rfc3339();
        csv.push_str(&format!("koeln,water-level-15min,{t},{i}.5,good\n"));
    }
    let values = dir.path().join("outage.csv");
    std::fs::write(&values, csv).unwrap();
    let out = dir.path().join("dataset");
    let r = import(&out, &[values.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let periods = |server: &Server| {
        let url = format!(
            "{}/stations/koeln/parameters/water-level-15min",
            server.base
        );
        async move {
            let p = get(&url).await.json();
            p["data"]["availability"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p["start"].as_str().unwrap().to_owned(),
                        p["end"].as_str().unwrap().to_owned(),
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    let server = Server::start_with(&out, &[]);
    let got = periods(&server).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, "2031-01-10T00:00:00+00:00");
    assert_eq!(
        got[0].1,
        (start + step * 99).to_rfc3339().replace('Z', "+00:00")
    );
    assert_eq!(
        got[1].0,
        (start + step * 194).to_rfc3339().replace('Z', "+00:00")
    );
    drop(server);

    // An append in February: January is carried over, its outage with it.
    let more = dir.path().join("february.csv");
    std::fs::write(
        &more,
        "stationId,parameterId,timestamp,value,quality\n\
         koeln,water-level-15min,2031-02-01T00:00:00Z,1.5,good\n",
    )
    .unwrap();
    let r = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(["import", "--append", "--out"])
        .arg(&out)
        .arg("--values")
        .arg(&more)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let server = Server::start_with(&out, &[]);
    let after = periods(&server).await;
    assert_eq!(after.len(), 3, "{after:?}");
    assert_eq!(after[..2], got[..]);
    assert_eq!(after[2].0, "2031-02-01T00:00:00+00:00");
}

/// A bad station row is one error: its parameters and characteristics, which refer to it,
/// are counted in one line rather than each reported as an unknown station.
#[test]
fn a_bad_station_row_is_one_error() {
    let dir = tempfile::tempdir().unwrap();
    let stations = std::fs::read_to_string(sample("stations.csv"))
        .unwrap()
        .replace(
            "koeln,Köln,surfaceWater,NW,",
            "koeln,Köln,surfaceWater,Nordrhein,",
        );
    let err = refused_with_stations(dir.path(), "stations.csv", &stations);
    assert!(err.contains("stations.csv:2: "), "{err}");
    assert!(!err.contains("is not a station"), "{err}");
    assert!(
        err.contains("(5 rows that refer to a station or parameter rejected above are not listed)"),
        "{err}"
    );
}

/// A catalog file with CRLF line ends (Excel, Python's csv module) is reported at the same
/// lines as with LF ones.
#[test]
fn catalog_rows_are_reported_at_their_line_with_crlf_too() {
    let dir = tempfile::tempdir().unwrap();
    let stations = std::fs::read_to_string(sample("stations.csv"))
        .unwrap()
        .replace(
            "kaub,Kaub,surfaceWater,DE-RP,",
            "kaub,Kaub,surfaceWater,Rheinland,",
        );
    for (name, ends) in [("lf.csv", "\n"), ("crlf.csv", "\r\n")] {
        let err = refused_with_stations(dir.path(), name, &stations.replace('\n', ends));
        assert!(err.contains(&format!("{name}:3: ")), "{err}");
    }
}

/// `hydro import` into `dir` with the stations file `name` holding `stations` and the samples
/// for the rest; expects it to refuse, and returns what it said.
fn refused_with_stations(dir: &Path, name: &str, stations: &str) -> String {
    let bad = dir.join(name);
    std::fs::write(&bad, stations).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .arg("import")
        .arg("--out")
        .arg(dir.join("dataset"))
        .arg("--stations")
        .arg(&bad)
        .args(["--parameters", &sample("parameters.csv")])
        .args(["--characteristics", &sample("characteristics.csv")])
        .args(["--values", &sample("values.csv")])
        .output()
        .unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `hydro import … | head`: a report written to a pipe whose reader has gone ends quietly; the
/// import is published and the exit status is success (a `println!` panicked here).
#[test]
fn a_closed_stdout_is_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hydro"));
    cmd.arg("import").arg("--out").arg(dir.path());
    cmd.args(["--stations", &sample("stations.csv")]);
    cmd.args(["--parameters", &sample("parameters.csv")]);
    cmd.args(["--values", &sample("values.csv")]);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("run hydro import");
    // The reader goes before the import has written anything.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait for hydro import");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(dir.path().join("manifest.json").exists(), "published");
}

/// Value rows take a time in every form the API's `from` and `to` take; a time without an
/// offset is reported with the forms to write.
#[tokio::test]
async fn times_are_read_in_the_forms_from_and_to_take() {
    let dir = tempfile::tempdir().unwrap();
    let values = dir.path().join("forms.csv");
    std::fs::write(
        &values,
        "stationId,parameterId,timestamp,value,quality\r\n\
         koeln,water-level-15min,2024-03-01T01:00+0100,1.0,good\r\n\
         koeln,water-level-15min,2024-03-01T00:15:00.000+00,2.0,good\r\n\
         koeln,water-level-15min,2024-03-01 01:30:00+01:00,3.0,good\r\n\
         koeln,water-level-15min,2024-03-01t00:45:00.5z,4.0,good\r\n\
         koeln,water-level-15min,2024-02-29T23:00:00-0200,5.0,good\r\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let made = import(&out, &[values.to_str().unwrap()]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let server = Server::start_with(&out, &[]);
    let got = get(&format!(
        "{}/stations/koeln/parameters/water-level-15min/values?format=csv&fields=timestamp,value",
        server.base
    ))
    .await
    .text();
    assert_eq!(
        got,
        "timestamp,value\r\n\
         2024-03-01T00:00:00+00:00,1\r\n\
         2024-03-01T00:15:00+00:00,2\r\n\
         2024-03-01T00:30:00+00:00,3\r\n\
         2024-03-01T00:45:00.5+00:00,4\r\n\
         2024-03-01T01:00:00+00:00,5\r\n"
    );

    let bad = dir.path().join("no-offset.csv");
    std::fs::write(
        &bad,
        "stationId,parameterId,timestamp,value,quality\n\
         koeln,water-level-15min,2024-03-01T00:00:00,1.0,good\n",
    )
    .unwrap();
    let refused = import(&dir.path().join("refused"), &[bad.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        said.contains(
            "no-offset.csv:2: timestamp: '2024-03-01T00:00:00' is not a time with an offset; \
             write ISO 8601 such as 2024-03-01T00:00:00+01:00, 2024-03-01T00:00+0100"
        ),
        "{said}"
    );
}

/// Station rows that import but look wrong are warned of (row, station, the likely swap), and
/// refused with `--strict`; rows that cannot import name their column and value.
#[test]
fn implausible_stations_are_warned_of_and_bad_ones_named() {
    let dir = tempfile::tempdir().unwrap();
    let samples = std::fs::read_to_string(sample("stations.csv")).unwrap();
    // Köln with lat and lon swapped; the groundwater well with Gauss-Krüger given too.
    let swapped = samples
        .replace(
            "koeln,Köln,surfaceWater,NW,WSV,2,Rhein,50.9367,6.9631,,,,",
            "koeln,Köln,surfaceWater,NW,WSV,2,Rhein,6.9631,50.9367,,,,",
        )
        .replace(
            "gwm-ried-7,\"Ried GWM 7\",groundwater,HE,HLNUG,,,49.8,8.45,,,,",
            "gwm-ried-7,\"Ried GWM 7\",groundwater,HE,HLNUG,,,49.8,8.45,3460000,5518000,31467,",
        );
    let file = dir.path().join("swapped.csv");
    std::fs::write(&file, &swapped).unwrap();
    let run = |out: &str, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hydro"))
            .arg("import")
            .arg("--out")
            .arg(dir.path().join(out))
            .arg("--stations")
            .arg(&file)
            .args(["--parameters", &sample("parameters.csv")])
            .args(["--values", &sample("values.csv")])
            .args(extra)
            .output()
            .unwrap()
    };
    let warned = run("warned", &[]);
    let said = String::from_utf8_lossy(&warned.stderr);
    assert!(warned.status.success(), "{said}");
    assert!(
        said.contains(
            "swapped.csv:2: station koeln: lat 6.9631, lon 50.9367 lie outside DE-NW; \
             swapped (lat 50.9367, lon 6.9631) they lie inside"
        ),
        "{said}"
    );
    assert!(
        said.contains(
            "swapped.csv:4: station gwm-ried-7: both lat/lon and easting/northing/epsg \
             given: lat/lon used"
        ),
        "{said}"
    );
    let warnings = said.lines().filter(|l| l.starts_with("warning: ")).count();
    assert_eq!(warnings, 2, "{said}");
    let strict = run("strict", &["--strict"]);
    let said = String::from_utf8_lossy(&strict.stderr);
    assert!(!strict.status.success(), "{said}");
    assert!(
        said.contains("swapped.csv:2: station koeln: lat 6.9631"),
        "{said}"
    );
    assert!(said.contains("(an error with --strict)"), "{said}");
    assert!(said.contains("nothing was published"), "{said}");
    assert!(!dir.path().join("strict/manifest.json").exists());

    for (from, to, reason) in [
        (
            "koeln,Köln,surfaceWater,NW,",
            "koeln,Köln,surfaceWater,Nordrhein-Westfalen,",
            "state: 'Nordrhein-Westfalen' is not a state code like DE-NW or NW",
        ),
        (
            "koeln,Köln,surfaceWater,NW,",
            "koeln,Köln,river,NW,",
            "type: 'river': not one of surfaceWater, groundwater, weather",
        ),
        (
            "Rhein,50.9367,6.9631,,,,",
            "Rhein,,,,,,",
            "no coordinates: give lat and lon, or easting, northing and epsg",
        ),
        (
            "Rhein,50.9367,6.9631,,,,",
            "Rhein,95.1,6.9631,,,,",
            "lat: '95.1' is not between -90 and 90",
        ),
        (
            "Rhein,50.9367,6.9631,,,,",
            "Rhein,,,3414520.0,5549360.0,GK3,",
            "epsg: 'GK3' is not one of 31466–31469",
        ),
    ] {
        let stations = samples.replace(from, to);
        assert_ne!(stations, samples, "{from}");
        let err = refused_with_stations(dir.path(), "stations.csv", &stations);
        assert!(err.contains(&format!("stations.csv:2: {reason}")), "{err}");
    }
}

/// A catalog or values file saved as Latin-1 (as Excel may save CSV) is told to be saved as
/// UTF-8, at its line.
#[test]
fn latin1_files_are_told_to_be_saved_as_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let latin1 = |name: &str, text: &str| {
        let path = dir.path().join(name);
        let bytes: Vec<u8> = text.chars().map(|c| c as u32 as u8).collect();
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let stations = latin1(
        "stations.csv",
        &std::fs::read_to_string(sample("stations.csv")).unwrap(),
    );
    let values = latin1(
        "values.csv",
        "stationId,parameterId,timestamp,value,quality\n\
         köln,water-level-15min,2024-01-31T00:00:00+00:00,300.0,good\n",
    );
    for (inputs, said) in [
        (
            vec![
                "--stations",
                stations.to_str().unwrap(),
                "--values",
                &sample("values.csv"),
            ],
            "stations.csv:2: the text is not UTF-8 (Latin-1 or Windows-1252, as Excel may save CSV): save the file as UTF-8",
        ),
        (
            vec![
                "--stations",
                &sample("stations.csv"),
                "--values",
                values.to_str().unwrap(),
            ],
            "values.csv:2: stationId: 'k\u{fffd}ln' is not a station of the catalog (the text is not UTF-8",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_hydro"))
            .arg("import")
            .arg("--out")
            .arg(dir.path().join("out"))
            .args(["--parameters", &sample("parameters.csv")])
            .args(&inputs)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(err.contains(said), "{said}: {err}");
    }
}
