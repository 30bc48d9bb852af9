//! `/v1/sql`: answers equal DuckDB's over the same files (`tests/sql.py`), in every format;
//! the statement by GET, and by POST in each body form; every refused statement kind a 400
//! that names it; each guardrail tripped (429 with `Retry-After`, 413 rows, 422 memory, 504
//! time) while the server answers others; `asOf`; off in the basic variant and by setting;
//! access control as on the other endpoints.

mod common;

use common::{Server, dataset, get, get_with, oracle, send};
use std::time::Duration;

/// `s` percent-encoded for a query string or form.
fn encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn q(base: &str, statement: &str, more: &str) -> String {
    format!("{base}/sql?q={}{more}", encoded(statement))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_equal_duckdb_over_the_files() {
    let server = Server::start();
    let said = oracle("sql.py", &[&server.base, dataset().to_str().unwrap()]);
    assert!(
        said.contains("queries through /v1/sql agree with DuckDB"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_format_and_every_way_of_sending_the_statement() {
    let server = Server::start();
    let b = &server.base;
    let statement = "SELECT id, state FROM stations ORDER BY id LIMIT 3";
    let csv = get(&q(b, statement, "&format=csv")).await;
    assert_eq!(csv.status, 200, "{}", csv.text());
    assert_eq!(csv.header("cache-control").as_deref(), Some("no-store"));
    let text = csv.text();
    let lines: Vec<&str> = text.split("\r\n").collect();
    assert_eq!(lines[0], "id,state", "{text}");
    assert_eq!(lines.len(), 5, "header, 3 rows, and the last CRLF: {text}");
    let json = get(&q(b, statement, "")).await;
    assert_eq!(json.status, 200);
    let doc = json.json();
    assert_eq!(doc["data"].as_array().unwrap().len(), 3, "{doc}");
    assert!(doc["meta"]["datasetVersion"].is_string(), "{doc}");
    assert!(json.header("link").unwrap().contains("rel=\"version\""));
    let ndjson = get(&q(b, statement, "&format=ndjson")).await.text();
    assert_eq!(ndjson.lines().count(), 3, "{ndjson}");
    for format in ["arrow", "parquet"] {
        let r = get(&q(b, statement, &format!("&format={format}"))).await;
        assert_eq!(r.status, 200, "{format}");
        assert!(r.body.len() > 100, "{format}");
    }
    // In the query string `+` is a space, `%2B` a plus (as query encoders write them).
    let plus = get(&format!("{b}/sql?q=SELECT+1+%2B+1+AS+two&format=csv")).await;
    assert_eq!(plus.text(), "two\r\n2\r\n");
    // Times as every answer writes them; no rows still names the columns.
    let times = get(&q(
        b,
        "SELECT min(timestamp) AS first FROM values",
        "&format=csv",
    ))
    .await
    .text();
    assert!(times.contains("+00:00"), "{times}");
    let none = get(&q(
        b,
        "SELECT id FROM stations WHERE id = 'none'",
        "&format=csv",
    ))
    .await
    .text();
    assert_eq!(none, "id\r\n");
    let empty = get(&q(b, "SELECT id FROM stations WHERE id = 'none'", "")).await;
    assert_eq!(empty.json()["data"], serde_json::json!([]));

    // POST: the statement as the body, or as q in JSON or a form.
    let url = format!("{b}/sql?format=csv");
    for (media, body) in [
        ("application/sql", statement.to_owned()),
        ("text/plain; charset=utf-8", statement.to_owned()),
        (
            "application/json",
            serde_json::json!({ "q": statement }).to_string(),
        ),
        (
            "application/x-www-form-urlencoded",
            format!("q={}", encoded(statement)),
        ),
    ] {
        let r = send("POST", &url, &[("content-type", media)], body.into_bytes()).await;
        assert_eq!(r.status, 200, "{media}: {}", r.text());
        assert_eq!(r.text(), text, "{media}");
    }
    let r = send(
        "POST",
        &url,
        &[("content-type", "image/png")],
        b"SELECT 1".to_vec(),
    )
    .await;
    assert_eq!(r.status, 415, "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_not_one_reading_statement_is_refused_by_name() {
    let server = Server::start();
    let b = &server.base;
    for (statement, says) in [
        ("CREATE TABLE t AS SELECT 1", "CREATE"),
        (
            "CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION '/etc'",
            "CREATE",
        ),
        ("INSERT INTO stations VALUES ('x')", "INSERT"),
        ("COPY stations TO '/tmp/x.csv'", "COPY"),
        ("SET datafusion.execution.batch_size = 1", "SET"),
        ("DROP TABLE stations", "DROP"),
        ("SELECT 1; SELECT 2", "one statement at a time"),
        ("SELEC 1", "SQL"),
        ("SELECT * FROM nowhere", "nowhere"),
        ("SELECT * FROM '/etc/passwd'", "passwd"),
        ("SELECT 1 / 0", "zero"),
        // Gauge numbers unquoted, over ids that are no numbers: the cast fails as DataFusion
        // says, in the scan or above it alike (it was a 500 when the scan's filter failed).
        (
            "SELECT count(*) FROM values WHERE station IN (25820100, 25810300)",
            "Cannot cast",
        ),
        (
            "SELECT count(*) FROM daily WHERE station = 25820100",
            "Cannot cast",
        ),
    ] {
        let r = get(&q(b, statement, "")).await;
        assert_eq!(r.status, 400, "{statement}: {}", r.text());
        let detail = r.json()["detail"].as_str().unwrap().to_owned();
        assert!(detail.contains(says), "{statement}: {detail}");
    }
    let r = get(&format!("{b}/sql")).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["invalidParams"][0]["name"], "q");
    let r = get(&q(b, "SELECT 1", "&format=xml")).await;
    assert!(r.status == 400 || r.status == 406, "{}", r.text());
    // EXPLAIN is answered, and shows that a one-station query reads that station's files
    // and no other's.
    let station = common::first_station_id(b).await;
    let explained = format!("EXPLAIN SELECT count(*) FROM values WHERE station = '{station}'");
    let r = get(&q(b, &explained, "&format=csv")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let plan = r.text();
    assert!(
        plan.contains(&format!("values/station={station}/")),
        "{plan}"
    );
    assert_eq!(
        plan.matches("values/station=").count(),
        plan.matches(&format!("values/station={station}/")).count(),
        "{plan}"
    );
    // A one-series query reads the series as the values endpoint does, in time order: no sort.
    let explained = format!(
        "EXPLAIN SELECT timestamp, value FROM values WHERE station = '{station}' \
         AND parameter = 'water-level-15min' ORDER BY timestamp"
    );
    let plan = get(&q(b, &explained, "&format=csv")).await.text();
    assert!(plan.contains("SeriesScan"), "{plan}");
    assert!(!plan.contains("SortExec"), "{plan}");
    // Its station, parameter and plain time bounds are the scan's own: nothing above it
    // filters, deals the rows over the cores or merges them again.
    let bounded = format!(
        "EXPLAIN SELECT timestamp, value FROM values WHERE station = '{station}' \
         AND parameter = 'water-level-15min' AND timestamp >= '2024-01-01T00:00:00Z' \
         AND timestamp < '2024-02-01T00:00:00Z'"
    );
    let ordered = format!("{bounded} ORDER BY timestamp");
    let plan = get(&q(b, &ordered, "&format=csv")).await.text();
    let physical = &plan[plan.find("physical_plan").expect("a physical plan")..];
    assert!(physical.contains("SeriesScan"), "{plan}");
    for above in [
        "FilterExec",
        "RepartitionExec",
        "SortPreservingMergeExec",
        "SortExec",
    ] {
        assert!(!physical.contains(above), "{above}: {plan}");
    }
    // A filter on values stays above it.
    let filtered = format!("{bounded} AND value > 1 ORDER BY timestamp");
    let plan = get(&q(b, &filtered, "&format=csv")).await.text();
    assert!(plan.contains("FilterExec"), "{plan}");
    // So does a one-station query of the daily rollups: that station's one rollup file.
    let explained = format!(
        "EXPLAIN SELECT max(max_time) FROM daily WHERE station = '{station}' AND day >= '2024-01-01T00:00:00Z'"
    );
    let plan = get(&q(b, &explained, "&format=csv")).await.text();
    assert_eq!(plan.matches("rollups/station=").count(), 1, "{plan}");
    assert!(
        plan.contains(&format!("rollups/station={station}/")),
        "{plan}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_of_runs_the_statement_on_that_version() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(dataset(), dir.path());
    let before = Server::start_with(dir.path(), &[]);
    let station = common::first_station_id(&before.base).await;
    drop(before);
    let values = dir.path().join("new.csv");
    std::fs::write(
        &values,
        format!(
            "stationId,parameterId,timestamp,value,quality\n\
             {station},water-level-15min,2030-01-01T00:00:00Z,1.5,good\n"
        ),
    )
    .unwrap();
    common::hydro_succeeds(
        &[
            "import",
            "--out",
            dir.path().to_str().unwrap(),
            "--append",
            "--values",
            values.to_str().unwrap(),
        ],
        &[],
    );
    let server = Server::start_with(dir.path(), &[]);
    let count = |more: &'static str| {
        let url = q(&server.base, "SELECT count(*) AS n FROM values", more);
        async move { get(&url).await.json()["data"][0]["n"].as_u64().unwrap() }
    };
    let (now, then) = (count("").await, count("&asOf=1").await);
    assert_eq!(now, then + 1);
    // The station's rollups are now two parts (the new year's apart): `daily` reads both.
    let days = |more: &'static str| {
        let url = q(
            &server.base,
            &format!(
                "SELECT count(*) AS n, sum(CASE WHEN day >= '2030-01-01T00:00:00Z' THEN 1 ELSE 0 END) AS new \
                 FROM daily WHERE station = '{station}' AND parameter = 'water-level-15min'"
            ),
            more,
        );
        async move { get(&url).await.json()["data"][0].clone() }
    };
    let (now, then) = (days("").await, days("&asOf=1").await);
    assert_eq!(
        now["n"].as_u64(),
        then["n"].as_u64().map(|n| n + 1),
        "{now} {then}"
    );
    assert_eq!(
        (now["new"].as_u64(), then["new"].as_u64()),
        (Some(1), Some(0)),
        "{now} {then}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guardrails_trip_with_a_problem_naming_them() {
    let server = Server::start_with(
        dataset(),
        &[
            ("HYDRO_SQL_MAX_ROWS", "100"),
            ("HYDRO_SQL_MEMORY_BYTES", "2000000"),
            ("HYDRO_SQL_SPILL_BYTES", "0"),
            ("HYDRO_SQL_TIMEOUT_SECS", "2"),
            ("HYDRO_SQL_QUERIES_AT_ONCE", "1"),
        ],
    );
    let b = server.base.clone();
    let rows = get(&q(&b, "SELECT * FROM values LIMIT 1000", "")).await;
    assert_eq!(rows.status, 413, "{}", rows.text());
    assert!(rows.json()["detail"].as_str().unwrap().contains("100 rows"));
    // A whole sort of the values, with no disk to spill to.
    let memory = get(&q(&b, "SELECT * FROM values ORDER BY value DESC", "")).await;
    assert_eq!(memory.status, 422, "{}", memory.text());
    assert!(memory.json()["detail"].as_str().unwrap().contains("memory"));
    // A query that outlives its time holds the one slot meanwhile: the next waits its turn.
    let slow = tokio::spawn({
        let url = q(
            &b,
            "SELECT count(*) FROM generate_series(1, 100000000000)",
            "",
        );
        async move { get(&url).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let busy = get(&q(&b, "SELECT 1", "")).await;
    assert_eq!(busy.status, 429, "{}", busy.text());
    assert_eq!(busy.header("retry-after").as_deref(), Some("1"));
    // Other endpoints answer meanwhile.
    assert_eq!(get(&format!("{b}/stations?limit=1")).await.status, 200);
    let slow = slow.await.unwrap();
    assert_eq!(slow.status, 504, "{}", slow.text());
    assert!(slow.json()["detail"].as_str().unwrap().contains("2 s"));
    assert_eq!(get(&q(&b, "SELECT 1 AS one", "")).await.status, 200);
    assert_eq!(get(&format!("{b}/health")).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_is_off_in_the_basic_variant_and_by_setting() {
    let basic = Server::start_with(dataset(), &[("HYDRO_VARIANT", "basic")]);
    assert_eq!(get(&q(&basic.base, "SELECT 1", "")).await.status, 404);
    let off = Server::start_with(dataset(), &[("HYDRO_SQL", "false")]);
    let r = get(&q(&off.base, "SELECT 1", "")).await;
    assert_eq!(r.status, 404);
    assert!(r.text().contains("turned off"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_is_behind_the_same_door() {
    let (key, hash) = common::new_api_key();
    let server = Server::start_with(
        dataset(),
        &[
            ("HYDRO_ACCESS", "restricted"),
            ("HYDRO_API_KEY_HASHES", hash.as_str()),
        ],
    );
    let url = q(&server.base, "SELECT count(*) AS n FROM stations", "");
    assert_eq!(get(&url).await.status, 401);
    let r = get_with(&url, &[("x-api-key", key.as_str())]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["data"][0]["n"], 24);
}
