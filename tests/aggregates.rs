//! Aggregates (`aggregate`, `interval`, `timeZone`, `yearStart`, `minCoverage`, `qualities`)
//! end to end: value by value against pandas `resample` and DuckDB `time_bucket` over the same
//! files (`tests/aggregates.py`), and every bad form of each parameter a 400 that names it and
//! says what is accepted.

mod common;

use common::{Server, dataset, get};
use std::process::Command;

#[test]
fn aggregates_agree_with_pandas_and_duckdb() {
    let server = Server::start();
    let out = Command::new("python3")
        .arg(format!(
            "{}/tests/aggregates.py",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg(&server.base)
        .arg(dataset())
        .output()
        .expect("python3 must be installed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "aggregates.py failed:\n{stdout}\n{stderr}"
    );
    for line in ["pandas:", "duckdb:", "coverage,", "many series:"] {
        assert!(stdout.contains(line), "{stdout}");
    }
}

#[tokio::test]
async fn bad_aggregates_are_400s_that_name_the_parameter_and_what_it_takes() {
    let server = Server::start();
    let stations = get(&format!("{}/stations?limit=1", server.base))
        .await
        .json();
    let station = stations["data"][0]["id"].as_str().unwrap().to_owned();
    let one = format!(
        "{}/stations/{station}/parameters/water-level-15min/values",
        server.base
    );
    let many = format!("{}/values?parameters=water-level-15min", server.base);
    let cases: &[(&str, &str, &str)] = &[
        ("aggregate=avg", "aggregate", "p1 … p99"),
        ("aggregate=p0", "aggregate", "minTime"),
        ("aggregate=p100", "aggregate", "minTime"),
        ("aggregate=p50.5", "aggregate", "minTime"),
        ("aggregate=mean,mean", "aggregate", "twice"),
        ("aggregate=mean&interval=PT7M", "interval", "P1D"),
        ("aggregate=mean&interval=P1W", "interval", "P1Y"),
        ("aggregate=mean&interval=soon", "interval", "PT15M"),
        ("aggregate=mean&interval=PT5M", "interval", "finer"),
        ("aggregate=mean&timeZone=Europe/Nowhere", "timeZone", "IANA"),
        ("aggregate=mean&timeZone=%2B25:00", "timeZone", "±HH:MM"),
        ("aggregate=mean&yearStart=13", "yearStart", "1 to 12"),
        ("aggregate=mean&yearStart=0", "yearStart", "1 to 12"),
        ("aggregate=mean&minCoverage=1.5", "minCoverage", "0 to 1"),
        ("aggregate=mean&minCoverage=NaN", "minCoverage", "0 to 1"),
        ("interval=P1D", "aggregate", "aggregate=mean"),
        ("minCoverage=0.5", "aggregate", "aggregate=mean"),
        ("aggregate=mean&sort=value", "sort", "mean"),
        ("aggregate=mean&fields=quality", "fields", "coverage"),
        ("aggregate=&interval=P1D", "aggregate", "empty"),
    ];
    for (query, name, hint) in cases {
        for base in [&one, &many] {
            let sep = if base.contains('?') { '&' } else { '?' };
            if *name == "sort" && base == &many {
                continue;
            }
            let r = get(&format!("{base}{sep}{query}")).await;
            assert_eq!(r.status, 400, "{query}: {}", r.text());
            let p = r.json();
            assert_eq!(p["invalidParams"][0]["name"], *name, "{query}: {p}");
            let reason = p["invalidParams"][0]["reason"].as_str().unwrap();
            assert!(reason.contains(hint), "{query}: {reason}");
        }
    }
}

#[tokio::test]
async fn aggregate_pages_and_charts_are_drawn() {
    let server = Server::start();
    let stations = get(&format!("{}/stations?limit=1", server.base))
        .await
        .json();
    let station = stations["data"][0]["id"].as_str().unwrap().to_owned();
    let url = format!(
        "{}/stations/{station}/parameters/water-level-15min/values?aggregate=mean,min,max&interval=P1D",
        server.base
    );
    let svg = get(&format!("{url}&format=svg")).await;
    assert_eq!(svg.status, 200);
    let text = svg.text();
    for line in ["mean", "min", "max"] {
        assert!(text.contains(line), "the chart names its line {line}");
    }
    let png = get(&format!("{url}&format=png")).await;
    assert_eq!(png.status, 200);
    assert!(png.body.starts_with(b"\x89PNG"));
    let page = get(&format!("{url}&format=html&limit=5")).await;
    assert_eq!(page.status, 200);
    let html = page.text();
    assert!(html.contains("<th scope=\"col\">coverage</th>"), "{html}");
    assert_eq!(html.matches("<tr><td>").count(), 5, "{html}");
    let raw = get(&format!(
        "{}/stations/{station}/parameters/water-level-15min/values?format=html",
        server.base
    ))
    .await
    .text();
    assert!(
        raw.contains("aggregate=mean,min,max&amp;interval=P1D")
            || raw.contains("aggregate=mean%2Cmin%2Cmax&amp;interval=P1D"),
        "the values page offers the daily means"
    );
}
