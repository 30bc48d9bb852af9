//! Statistics of series (`…/statistics`, `/v1/statistics`) end to end: normals, annual values
//! and duration curves against pandas (`tests/statistics.py`), and every bad form of each
//! parameter a 400 that names it and says what is accepted.

mod common;

use common::{
    Server, bad_parameter, clean_up_after_exit, first_station_id, generate, get, oracle, send,
};
use std::process::Command;

#[test]
fn statistics_agree_with_pandas() {
    let server = Server::start();
    let stdout = oracle("statistics.py", &[&server.base]);
    for line in [
        "dayOfYear:",
        "monthOfYear:",
        "annual:",
        "duration:",
        "many series:",
    ] {
        assert!(stdout.contains(line), "{stdout}");
    }
}

/// Characteristic values derived at publish, against pandas' computation of the definitions:
/// first with the settings `generate` is given (calendar years in Berlin, so the day each
/// year's edge cuts is split by its raw values); after two appends to a station's last year,
/// the second of which derives from the years in the footer of the part of the years before
/// (which it keeps as it is); then after an append that sets them back to the defaults
/// (hydrological years from November, UTC, three complete years): every station's values are
/// derived anew, those of stations the append wrote nothing of included, and its parts are
/// written anew with years as the new settings define them.
#[tokio::test]
async fn derived_characteristic_values_follow_the_datasets_settings() {
    let dir = std::env::temp_dir().join(format!("hydro-derived-{}", std::process::id()));
    clean_up_after_exit(None, &[&dir]);
    generate(
        &dir,
        &[
            "--stations",
            "6",
            "--years",
            "5",
            "--interval",
            "PT1H",
            "--seed",
            "4",
            "--start",
            "2019-01-01",
            "--derived-years",
            "2",
            "--derived-complete",
            "0.95",
            "--derived-year-start",
            "1",
            "--derived-time-zone",
            "Europe/Berlin",
        ],
    );
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    assert!(
        manifest.contains(
            r#""derived":{"years":2,"complete":0.95,"yearStart":1,"timeZone":"Europe/Berlin"}"#
        ),
        "{manifest}"
    );
    let server = Server::start_with(&dir, &[]);
    let stdout = oracle(
        "statistics.py",
        &[&server.base, "--derived", "2", "0.95", "1", "Europe/Berlin"],
    );
    assert!(stdout.contains("derived:"), "{stdout}");
    let station = first_station_id(&server.base).await;
    drop(server);

    // Parts of the station's years before 2023 (the rollups keep every part a publish wrote
    // until a vacuum).
    let older_parts = || {
        let parts = std::fs::read_dir(dir.join(format!("rollups/station={station}"))).unwrap();
        parts
            .map(|p| p.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("2019-2022-"))
            .count()
    };
    let append = |day: &str, settings: &[&str]| {
        let values = dir.join("append.csv");
        std::fs::write(
            &values,
            format!(
                "stationId,parameterId,timestamp,value,quality\n\
                 {station},water-level-1h,2023-{day}T00:30:00Z,123.4,good\n"
            ),
        )
        .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_hydro"))
            .args(["import", "--append", "--out"])
            .arg(&dir)
            .arg("--values")
            .arg(&values)
            .args(settings)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    append("06-01", &[]);
    assert_eq!(
        older_parts(),
        1,
        "the first append splits the station's one part"
    );
    append("07-01", &[]);
    assert_eq!(
        older_parts(),
        1,
        "the second keeps the part of the years before"
    );
    let server = Server::start_with(&dir, &[]);
    let stdout = oracle(
        "statistics.py",
        &[&server.base, "--derived", "2", "0.95", "1", "Europe/Berlin"],
    );
    assert!(stdout.contains("derived:"), "{stdout}");
    drop(server);

    append(
        "08-01",
        &[
            "--derived-year-start",
            "11",
            "--derived-time-zone",
            "UTC",
            "--derived-years",
            "3",
            "--derived-complete",
            "0.9",
        ],
    );
    assert_eq!(
        older_parts(),
        2,
        "written anew with the new settings' years"
    );
    let server = Server::start_with(&dir, &[]);
    let stdout = oracle("statistics.py", &[&server.base, "--derived"]);
    assert!(
        stdout.contains("(3 years, 0.9, from month 11, UTC)"),
        "{stdout}"
    );
}

/// Bad derived-value settings stop `generate` and `import` before anything is written, with a
/// message that names the flag.
#[test]
fn bad_derived_value_settings_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, bad) in [
        ("--derived-years", "0"),
        ("--derived-complete", "1.5"),
        ("--derived-complete", "0"),
        ("--derived-year-start", "13"),
        ("--dataset-zone", "Europe/Nowhere"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_hydro"))
            .args(["generate", "--years", "0", "--out"])
            .arg(dir.path())
            .args([flag, bad])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{flag} {bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(flag), "{flag} {bad}: {stderr}");
        assert!(!dir.path().join("manifest.json").exists(), "{flag} {bad}");
    }
}

/// `POST /v1/statistics`: the parameters as a form or a JSON object in the body give the GET's
/// answer, byte for byte and with its ETag; charts are GET's alone.
#[tokio::test]
async fn post_takes_the_statistics_parameters_in_the_body() {
    let server = Server::start();
    let b = &server.base;
    let station = first_station_id(b).await;
    let query = format!(
        "stations={station}&parameters=water-level-15min,discharge-15min&type=dayOfYear\
         &aggregate=mean,p10&timeZone=Europe/Berlin&yearStart=11"
    );
    let form = [("content-type", "application/x-www-form-urlencoded")];
    let json = [("content-type", "application/json")];
    for format in ["csv", "json", "parquet"] {
        let want = get(&format!("{b}/statistics?format={format}&{query}")).await;
        assert_eq!(want.status, 200, "{}", want.text());
        let as_form = send(
            "POST",
            &format!("{b}/statistics?format={format}"),
            &form,
            query.clone().into_bytes(),
        )
        .await;
        let as_json = send(
            "POST",
            &format!("{b}/statistics"),
            &json,
            serde_json::json!({
                "format": format,
                "stations": [station],
                "parameters": "water-level-15min,discharge-15min",
                "type": "dayOfYear",
                "aggregate": ["mean", "p10"],
                "timeZone": "Europe/Berlin",
                "yearStart": 11,
            })
            .to_string()
            .into_bytes(),
        )
        .await;
        for (how, got) in [("form", &as_form), ("json", &as_json)] {
            assert_eq!(got.status, 200, "{how} {format}: {}", got.text());
            assert!(got.body == want.body, "{how} {format}: the GET's bytes");
            assert_eq!(got.header("etag"), want.header("etag"), "{how} {format}");
        }
    }
    let chart = send(
        "POST",
        &format!("{b}/statistics?format=svg"),
        &form,
        format!("stations={station}&parameters=water-level-15min&type=annual").into_bytes(),
    )
    .await;
    assert_eq!(chart.status, 400, "{}", chart.text());
    assert_eq!(
        chart.json()["invalidParams"][0]["name"],
        "format",
        "{}",
        chart.text()
    );
    // Nor a chart's size, which the document's body does not list either.
    let sized = send(
        "POST",
        &format!("{b}/statistics"),
        &form,
        format!("stations={station}&parameters=water-level-15min&type=annual&width=800")
            .into_bytes(),
    )
    .await;
    assert_eq!(sized.status, 400, "{}", sized.text());
    assert_eq!(sized.json()["invalidParams"][0]["name"], "width");
    // A page shows one series' statistics: the many-series endpoint does not offer one.
    let page = get(&format!(
        "{b}/statistics?stations={station}&parameters=water-level-15min&type=annual&format=html"
    ))
    .await;
    assert_eq!(page.status, 400, "{}", page.text());
    assert!(page.text().contains("formats here"), "{}", page.text());
    let single = send(
        "POST",
        &format!("{b}/stations/{station}/parameters/water-level-15min/statistics"),
        &form,
        b"type=annual".to_vec(),
    )
    .await;
    assert_eq!(single.status, 405, "{}", single.text());
}

#[tokio::test]
async fn bad_statistics_requests_are_400s_that_name_the_parameter() {
    let server = Server::start();
    let station = first_station_id(&server.base).await;
    let one = format!(
        "{}/stations/{station}/parameters/water-level-15min/statistics",
        server.base
    );
    let many = format!("{}/statistics?parameters=water-level-15min", server.base);
    let cases: &[(&str, &str, &str)] = &[
        ("", "type", "dayOfYear, monthOfYear, annual, duration"),
        (
            "type=weekly",
            "type",
            "dayOfYear, monthOfYear, annual, duration",
        ),
        ("type=annual&aggregate=mean", "aggregate", "dayOfYear"),
        ("type=dayOfYear&aggregate=avg", "aggregate", "p1 … p99"),
        ("type=dayOfYear&aggregate=p100", "aggregate", "p1 … p99"),
        ("type=monthOfYear&exceedance=0.5", "exceedance", "duration"),
        ("type=duration&exceedance=1.5", "exceedance", "0 to 1"),
        ("type=duration&exceedance=half", "exceedance", "0 to 1"),
        ("type=duration&exceedance=", "exceedance", "empty"),
        ("type=annual&yearStart=13", "yearStart", "1 to 12"),
        ("type=annual&minCoverage=2", "minCoverage", "0 to 1"),
        ("type=annual&timeZone=Europe/Nowhere", "timeZone", "IANA"),
        (
            "type=annual&from=2024-01-01T00:00:00Z&to=2023-01-01T00:00:00Z",
            "from",
            "after",
        ),
        ("type=annual&from=yesterday", "from", "ISO 8601"),
        ("type=annual&recent=5", "recent", ""),
        ("type=annual&format=geojson", "format", "svg"),
    ];
    for (query, name, hint) in cases {
        for base in [&one, &many] {
            let sep = if base.contains('?') { '&' } else { '?' };
            bad_parameter(&format!("{base}{sep}{query}"), name, hint).await;
        }
    }
    let r = get(&format!(
        "{}/statistics?type=annual&stations={station}",
        server.base
    ))
    .await;
    assert_eq!(r.status, 400, "a selection names its parameters");
    let r = get(&format!(
        "{}/stations/{station}/parameters/no-such/statistics?type=annual",
        server.base
    ))
    .await;
    assert_eq!(r.status, 404);
}

/// Charts: a duration curve (one series or several), annual values, and the newest daily
/// (monthly) means over the band of the normals; a chart of many series' normals is refused.
#[tokio::test]
async fn statistics_charts_are_drawn() {
    let server = Server::start();
    let stations = get(&format!("{}/stations?limit=2", server.base))
        .await
        .json();
    let ids: Vec<String> = stations["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    let one = format!(
        "{}/stations/{}/parameters/water-level-15min/statistics",
        server.base, ids[0]
    );
    for (query, words) in [
        ("type=duration", "duration curve"),
        ("type=annual&yearStart=11", "annual values"),
        ("type=dayOfYear", "normal, 10th to 90th percentile"),
        ("type=monthOfYear", "newest monthly means"),
    ] {
        let svg = get(&format!("{one}?{query}&format=svg")).await;
        assert_eq!(svg.status, 200, "{query}: {}", svg.text());
        assert!(svg.text().contains(words), "{query}");
        let png = get(&format!("{one}?{query}&format=png&width=400&height=300")).await;
        assert_eq!(png.status, 200, "{query}");
        assert!(png.body.starts_with(b"\x89PNG"));
    }
    let many = format!(
        "{}/statistics?parameters=water-level-15min&stations={}",
        server.base,
        ids.join(",")
    );
    let curves = get(&format!("{many}&type=duration&format=svg")).await;
    assert_eq!(curves.status, 200, "{}", curves.text());
    let text = curves.text();
    assert!(
        ids.len() == 2 && text.matches("<circle").count() >= 2 * 13,
        "a curve a series"
    );
    let normals = get(&format!("{many}&type=dayOfYear&format=svg")).await;
    assert_eq!(normals.status, 400);
    assert_eq!(normals.json()["invalidParams"][0]["name"], "format");

    // A page of one series' statistics: the table, its chart and the downloads.
    let page = get(&format!("{one}?type=annual&yearStart=11&format=html")).await;
    assert_eq!(page.status, 200, "{}", page.text());
    let html = page.text();
    assert!(html.contains("<th scope=\"col\">maxTime</th>"), "{html}");
    assert!(html.contains("format=svg"), "the page shows the chart");
    assert!(html.contains("format=parquet"), "and offers the downloads");
    assert_eq!(
        html.matches("<tr><td>").count(),
        3,
        "three hydrological years"
    );
    let page = get(&format!("{many}&type=annual&format=html")).await;
    assert_eq!(page.status, 400);
}
