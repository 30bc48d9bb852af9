//! `hydro compact`: each station-year's settled months in one Parquet file, read in place.
//!
//! Checked here: a compacted archive (its month files vacuumed away) answers every request of
//! the sample byte for byte as the archive did; compacting again joins nothing; an append to a
//! compacted month is read, the year's other months joined anew without it, and joined again
//! by the next compaction; a download under way keeps its version through a compaction; an
//! archive of layout 3 (month directories, packs) answers as before and is moved, then joined,
//! into layout 4; a compaction that meets a damaged month file, or a bad `--before`,
//! publishes nothing; a damaged station-year file fails only the requests that need it.
//! Outside readers (DuckDB, Polars, pyarrow) of compacted archives: `tests/open_archive.rs`.
//! Against a bucket (requests counted on the wire): `tests/s3.rs`.

mod common;

use common::{
    Server, copy_dir, dataset, dataset_version, files_under, get, import_command, sample,
    sample_urls, unversioned,
};
use std::path::Path;
use std::process::{Command, Output};

fn hydro(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

fn succeeds(args: &[&str], out: &Path) -> String {
    let r = hydro(args, out);
    assert!(
        r.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    String::from_utf8_lossy(&r.stdout).into_owned()
}

/// The value objects of a dataset directory, relative to it.
fn value_objects(dir: &Path) -> Vec<String> {
    files_under(&dir.join("values"))
        .iter()
        .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
        .collect()
}

/// Directories under `dir` that hold nothing.
fn empty_dirs(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut empty = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if std::fs::read_dir(&path).unwrap().next().is_none() {
                empty.push(path);
            } else {
                empty.extend(empty_dirs(&path));
            }
        }
    }
    empty
}

/// Both servers answer each URL alike (200, same body but for the version it names, and type).
async fn same_answers(a: &str, b: &str, urls: &[String]) {
    let (va, vb) = (dataset_version(a).await, dataset_version(b).await);
    for url in urls {
        let x = get(&format!("{a}{url}")).await;
        let y = get(&format!("{b}{url}")).await;
        assert_eq!(x.status, 200, "{url}: {}", x.text());
        assert_eq!(y.status, 200, "{url}: {}", y.text());
        assert!(
            unversioned(&x.body, &va) == unversioned(&y.body, &vb),
            "{url}: bodies differ"
        );
        for h in ["content-type", "x-total-count"] {
            assert_eq!(x.header(h), y.header(h), "{url}: {h}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_archive_answers_as_before() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(dataset(), dir.path());
    let said = succeeds(&["compact"], dir.path());
    // 24 stations x 2 years, every month of each in its year's file.
    assert!(
        said.contains("576 months into 48 station-year files"),
        "{said}"
    );
    assert!(said.contains("published generation 2"), "{said}");
    succeeds(&["vacuum", "--older-than", "PT0S"], dir.path());
    // The writers' journal entries are gone with their directories, and vacuum leaves no
    // empty directory behind.
    assert!(!dir.path().join("journal").exists());
    let empty = empty_dirs(dir.path());
    assert!(empty.is_empty(), "{empty:?}");
    let objects = value_objects(dir.path());
    assert_eq!(objects.len(), 48, "{objects:?}");
    for o in &objects {
        let name = o.rsplit_once('/').unwrap().1;
        assert!(
            name == "2023-g2.parquet" || name == "2024-g2.parquet",
            "{o}"
        );
        assert!(o.starts_with("values/station="), "{o}");
    }
    let manifest = std::fs::read_to_string(dir.path().join("manifest.json")).unwrap();
    assert!(manifest.contains("\"format\":4"), "{manifest}");

    // The base URL the same for both, so that links compare equal.
    let env = [
        ("HYDRO_VALUE_CACHE_BYTES", "0"),
        ("HYDRO_ANSWER_STORE_BYTES", "0"),
        ("HYDRO_BASE_URL", "http://hydro.test/v1"),
    ];
    let before = Server::start_with(dataset(), &env);
    let after = Server::start_with(dir.path(), &env);
    // All but the landing page, which names the version.
    let mut urls = sample_urls(&before.base).await;
    urls.retain(|u| u != "/");
    // Twice: footers read with the months, then from the footer cache.
    for _ in 0..2 {
        same_answers(&before.base, &after.base, &urls).await;
    }

    // Nothing left to join: nothing published.
    let said = succeeds(&["compact"], dir.path());
    assert!(said.contains("nothing to join"), "{said}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("manifest.json")).unwrap(),
        manifest
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_to_a_compacted_month_is_read_and_joined_again() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("data");
    let r = import_command(&out)
        .args(["--values", &sample("values.csv")])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let said = succeeds(&["compact"], &out);
    assert!(
        said.contains("6 months into 3 station-year files"),
        "{said}"
    );
    let series = "/stations/koeln/parameters/water-level-15min/values";
    let packed = Server::start_with(&out, &[]);
    let stored = get(&format!("{}{series}?format=csv", packed.base))
        .await
        .text();
    drop(packed);

    // A correction in January, a new value in March.
    let values = dir.path().join("new.csv");
    std::fs::write(
        &values,
        "stationId,parameterId,timestamp,value,quality\n\
         koeln,water-level-15min,2024-01-31T00:00:00Z,999.5,good\n\
         koeln,water-level-15min,2024-03-01T00:00:00Z,310.0,unchecked\n",
    )
    .unwrap();
    let said = succeeds(
        &["import", "--append", "--values", values.to_str().unwrap()],
        &out,
    );
    assert!(said.contains("1 replaced stored ones"), "{said}");
    let expected: String = {
        let mut lines: Vec<&str> = stored.lines().collect();
        assert_eq!(lines[1], "2024-01-31T00:00:00+00:00,300,good");
        lines[1] = "2024-01-31T00:00:00+00:00,999.5,good";
        lines.push("2024-03-01T00:00:00+00:00,310,unchecked");
        // CSV lines end in CRLF (RFC 4180).
        lines.join("\r\n") + "\r\n"
    };
    let check = |label: &'static str| {
        let out = out.clone();
        let expected = expected.clone();
        async move {
            let server = Server::start_with(&out, &[]);
            let got = get(&format!("{}{series}?format=csv", server.base))
                .await
                .text();
            assert!(got == expected, "{label}: {got}");
            let sorted = get(&format!(
                "{}{series}?format=csv&sort=-value&limit=1",
                server.base
            ))
            .await
            .text();
            assert!(sorted.contains("999.5"), "{label}: {sorted}");
        }
    };
    check("appended to a compacted month").await;
    // January and March files of their own, February joined anew by the append, alone: every
    // file of the version holds only its rows.
    succeeds(&["vacuum", "--older-than", "PT0S"], &out);
    let mut objects = value_objects(&out);
    objects.sort();
    assert_eq!(
        objects,
        [
            "values/station=gwm-ried-7/2024-g2.parquet",
            "values/station=kaub/2024-g2.parquet",
            "values/station=koeln/2024-01-g3.parquet",
            "values/station=koeln/2024-03-g3.parquet",
            "values/station=koeln/2024-g3.parquet",
        ]
    );
    check("after vacuum").await;
    // koeln's 2024 again (March settled too); the other stations' files are whole and stay.
    let said = succeeds(&["compact", "--before", "2030-01"], &out);
    assert!(
        said.contains("3 months into 1 station-year file "),
        "{said}"
    );
    succeeds(&["vacuum", "--older-than", "PT0S"], &out);
    let objects = value_objects(&out);
    assert_eq!(
        objects,
        [
            "values/station=gwm-ried-7/2024-g2.parquet",
            "values/station=kaub/2024-g2.parquet",
            "values/station=koeln/2024-g4.parquet",
        ]
    );
    check("joined again").await;
}

#[test]
fn a_compaction_that_fails_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(dataset(), dir.path());
    let manifest = std::fs::read(dir.path().join("manifest.json")).unwrap();
    let r = hydro(&["compact", "--before", "2024-13"], dir.path());
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("--before") && err.contains("YYYY-MM"), "{err}");

    // A month file cut short: named, nothing published, no station-year file left behind.
    let victim = files_under(&dir.path().join("values"))
        .into_iter()
        .find(|p| p.display().to_string().contains("/2023-05-g1"))
        .unwrap();
    let bytes = std::fs::read(&victim).unwrap();
    std::fs::write(&victim, &bytes[..bytes.len() / 2]).unwrap();
    let r = hydro(&["compact"], dir.path());
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("/2023-05-g1.parquet"), "{err}");
    assert_eq!(
        std::fs::read(dir.path().join("manifest.json")).unwrap(),
        manifest
    );
    let left: Vec<String> = value_objects(dir.path())
        .into_iter()
        .filter(|o| o.ends_with("-g2.parquet"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // The lock is released: the next writer may begin.
    assert!(!dir.path().join("writing.lock").exists());
}

#[tokio::test]
async fn a_damaged_station_year_file_fails_only_its_requests() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(dataset(), dir.path());
    succeeds(&["compact"], dir.path());
    succeeds(&["vacuum", "--older-than", "PT0S"], dir.path());
    let server = Server::start_with(dir.path(), &[]);
    let b = &server.base;
    let ids: Vec<String> = get(&format!("{b}/stations?limit=2")).await.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    let values = |id: &str, month: &str, format: &str| {
        format!(
            "{b}/stations/{id}/parameters/water-level-15min/values?from={month}-02T00:00:00Z&to={month}-03T00:00:00Z&format={format}"
        )
    };
    // The first station's 2023 file cut in half: its footer is gone, and with it every month
    // of the year; its 2024 and the other stations' years are not.
    let year = dir
        .path()
        .join(format!("values/station={}/2023-g2.parquet", ids[0]));
    let bytes = std::fs::read(&year).unwrap();
    std::fs::write(&year, &bytes[..bytes.len() / 2]).unwrap();
    for format in ["json", "csv", "parquet", "csv&sort=-value"] {
        for month in ["2023-01", "2023-12"] {
            let r = get(&values(&ids[0], month, format)).await;
            assert_eq!(r.status, 500, "{month} {format}: {}", r.text());
            let text = r.text();
            assert!(!text.contains("values/"), "no internals: {text}");
        }
        for (id, month) in [(&ids[0], "2024-12"), (&ids[1], "2023-12")] {
            let r = get(&values(id, month, format)).await;
            assert_eq!(r.status, 200, "{id} {month} {format}: {}", r.text());
        }
    }
    let health = get(&format!("{b}/health")).await.json();
    assert_eq!(health["status"], "degraded");
}

/// A download under way when the archive is compacted reads on in the version it began with:
/// compaction deletes nothing, and the answer's bytes are those of a download before it.
#[test]
fn a_download_under_way_keeps_its_version_through_a_compaction() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    copy_dir(dataset(), dir.path());
    let server = Server::start_with(dir.path(), &[("HYDRO_VALUE_CACHE_BYTES", "0")]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let id = runtime.block_on(common::first_station_id(&server.base));
    let url = format!(
        "{}/stations/{id}/parameters/water-level-15min/values?format=csv",
        server.base
    );
    let before = runtime.block_on(get(&url));
    assert_eq!(before.status, 200);
    // The same request by hand, read a little, then the rest after the compaction.
    let (host, path) = url
        .strip_prefix("http://")
        .and_then(|u| u.split_once('/'))
        .unwrap();
    let mut conn = std::net::TcpStream::connect(host).unwrap();
    write!(
        conn,
        "GET /{path} HTTP/1.0\r\nHost: {host}\r\nCache-Control: no-cache\r\n\r\n"
    )
    .unwrap();
    let mut answer = vec![0; 4096];
    conn.read_exact(&mut answer).unwrap();
    let said = succeeds(&["compact"], dir.path());
    assert!(said.contains("published generation 2"), "{said}");
    conn.read_to_end(&mut answer).unwrap();
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&answer[..split]);
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    assert!(
        answer[split + 4..] == before.body[..],
        "the answer changed under compaction"
    );
}

/// An archive as layout 3 left it (month files in `month=` directories, packs, a files table
/// without paths; made by `tests/old_layout.py`) answers as it did, and one compaction moves
/// all of it to layout 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_of_layout_3_is_read_and_compacted_into_layout_4() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(dataset(), dir.path());
    let said = common::oracle("old_layout.py", &[dir.path().to_str().unwrap()]);
    assert!(said.contains("576 month files, 2 packs"), "{said}");
    let objects = value_objects(dir.path());
    assert!(objects.iter().any(|o| o.ends_with("/months-1.pack")));
    assert!(objects.iter().any(|o| o.contains("/month=2023-05/")));

    let env = [
        ("HYDRO_VALUE_CACHE_BYTES", "0"),
        ("HYDRO_ANSWER_STORE_BYTES", "0"),
        ("HYDRO_BASE_URL", "http://hydro.test/v1"),
    ];
    let written = Server::start_with(dataset(), &env);
    let mut urls = sample_urls(&written.base).await;
    urls.retain(|u| u != "/");
    {
        let old = Server::start_with(dir.path(), &env);
        same_answers(&written.base, &old.base, &urls).await;
    }
    // Nothing settled before 2023: every month file (those of packs too) only moved.
    let said = succeeds(&["compact", "--before", "2023-01"], dir.path());
    assert!(said.contains("no months to join before 2023-01"), "{said}");
    assert!(said.contains("moved 576 month files"), "{said}");
    succeeds(&["vacuum", "--older-than", "PT0S"], dir.path());
    let objects = value_objects(dir.path());
    assert_eq!(objects.len(), 576);
    assert!(
        objects.iter().all(|o| o.ends_with("-g1.parquet")),
        "{objects:?}"
    );
    {
        let moved = Server::start_with(dir.path(), &env);
        same_answers(&written.base, &moved.base, &urls).await;
    }
    let said = succeeds(&["compact", "--before", "2100-01"], dir.path());
    assert!(
        said.contains("576 months into 48 station-year files"),
        "{said}"
    );
    succeeds(&["vacuum", "--older-than", "PT0S"], dir.path());
    let objects = value_objects(dir.path());
    assert_eq!(objects.len(), 48, "{objects:?}");
    assert!(
        objects
            .iter()
            .all(|o| o.ends_with("-g3.parquet") && !o.contains("month=") && !o.contains("year=")),
        "{objects:?}"
    );
    let compacted = Server::start_with(dir.path(), &env);
    same_answers(&written.base, &compacted.base, &urls).await;
}
