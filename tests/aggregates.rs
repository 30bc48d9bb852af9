//! Aggregates (`aggregate`, `interval`, `timeZone`, `yearStart`, `minCoverage`, `qualities`)
//! end to end: value by value against pandas `resample` and DuckDB `time_bucket` over the same
//! files (`tests/aggregates.py`), and every bad form of each parameter a 400 that names it and
//! says what is accepted.

mod common;

use common::{Server, bad_parameter, dataset, first_station_id, get, oracle, send};

#[test]
fn aggregates_agree_with_pandas_and_duckdb() {
    let server = Server::start();
    let data = dataset().to_string_lossy();
    let stdout = oracle("aggregates.py", &[&server.base, &data]);
    for line in ["pandas:", "duckdb:", "coverage,", "many series:"] {
        assert!(stdout.contains(line), "{stdout}");
    }
}

#[tokio::test]
async fn bad_aggregates_are_400s_that_name_the_parameter_and_what_it_takes() {
    let server = Server::start();
    let station = first_station_id(&server.base).await;
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
        ("yearStart=11", "aggregate", "aggregate=mean"),
        ("timeZone=Mars/Olympus", "timeZone", "IANA"),
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
            bad_parameter(&format!("{base}{sep}{query}"), name, hint).await;
        }
    }
}

#[tokio::test]
async fn aggregate_pages_and_charts_are_drawn() {
    let server = Server::start();
    let station = first_station_id(&server.base).await;
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
    // The five highest daily maxima, drawn where they lie in time, also without timestamps
    // among the fields.
    for fields in ["", "&fields=max"] {
        let top = get(&format!("{url}&sort=-max&limit=5{fields}&format=svg")).await;
        assert_eq!(top.status, 200, "{}", top.text());
        assert!(top.text().contains("<svg"), "{fields}");
    }
    let png = get(&format!("{url}&format=png")).await;
    assert_eq!(png.status, 200);
    assert!(png.body.starts_with(b"\x89PNG"));
    let page = get(&format!("{url}&format=html&limit=5")).await;
    assert_eq!(page.status, 200);
    let html = page.text();
    assert!(html.contains("<th scope=\"col\">coverage</th>"), "{html}");
    assert_eq!(html.matches("<tr><td>").count(), 5, "{html}");
    let many = get(&format!(
        "{}/values?parameters=water-level-15min&stations={station}&aggregate=count,max&interval=P1M&format=svg",
        server.base
    ))
    .await;
    assert_eq!(many.status, 200, "{}", many.text());
    assert!(
        many.text().contains("max"),
        "the many-series chart draws the first numeric statistic"
    );
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

/// JSON answers of aggregates are what their JSON Schemas say (nulls below `minCoverage`
/// included), and each names its schema.
#[tokio::test]
async fn aggregate_answers_match_their_schemas() {
    let server = Server::start();
    let stations = get(&format!("{}/stations?limit=2", server.base))
        .await
        .json();
    let station = stations["data"][0]["id"].as_str().unwrap().to_owned();
    let asked = "aggregate=mean,p5,minTime,count&interval=P1D&minCoverage=1&timeZone=Europe/Berlin";
    let cases = [
        (
            format!(
                "{}/stations/{station}/parameters/water-level-15min/values?{asked}",
                server.base
            ),
            "aggregates",
        ),
        (
            format!(
                "{}/values?parameters=water-level-15min&limit=500&{asked}",
                server.base
            ),
            "seriesAggregates",
        ),
    ];
    for (url, name) in cases {
        let r = get(&url).await;
        assert_eq!(r.status, 200, "{url}: {}", r.text());
        let body = r.json();
        let nulls = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["mean"].is_null())
            .count();
        assert!(
            nulls > 0,
            "minCoverage=1 leaves some buckets without statistics: {url}"
        );
        let text = std::fs::read_to_string(format!(
            "{}/schemas/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let validator = jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&body)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
        let schema_url = body["meta"]["schemaUrl"].as_str().unwrap();
        assert!(
            schema_url.ends_with(&format!("/schemas/{name}.json")),
            "{schema_url}"
        );
        assert_eq!(get(schema_url).await.status, 200, "{schema_url}");
    }
}

/// A selection sent in a POST body takes the aggregate's parameters too, JSON lists and
/// numbers as such, and answers what the GET answers.
#[tokio::test]
async fn posted_aggregates_equal_the_get() {
    let server = Server::start();
    let query =
        "parameters=water-level-15min&aggregate=mean,max&interval=P1M&minCoverage=0.5&yearStart=11";
    let got = get(&format!("{}/values?{query}", server.base)).await;
    assert_eq!(got.status, 200, "{}", got.text());
    let body = serde_json::json!({
        "parameters": ["water-level-15min"],
        "aggregate": ["mean", "max"],
        "interval": "P1M",
        "minCoverage": 0.5,
        "yearStart": 11,
    });
    let url = format!("{}/values", server.base);
    let headers = [("content-type", "application/json")];
    let posted = send("POST", &url, &headers, body.to_string().into_bytes()).await;
    assert_eq!(posted.status, 200, "{}", posted.text());
    assert_eq!(posted.json()["data"], got.json()["data"]);
}

/// `(timestamp, value, quality)` rows of a CSV answer (the last three columns).
fn csv_rows(text: &str) -> Vec<(String, f64, String)> {
    text.lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<&str> = line.rsplitn(4, ',').collect();
            (
                cells[2].to_owned(),
                cells[1].parse().unwrap(),
                cells[0].to_owned(),
            )
        })
        .collect()
}

/// `qualities` on raw values keeps exactly the values of those qualities, and every other
/// parameter (page, `recent`, sorts, the total, many series, Parquet) applies to them.
#[tokio::test]
async fn raw_values_of_some_qualities() {
    let server = Server::start();
    let station = first_station_id(&server.base).await;
    let one = format!(
        "{}/stations/{station}/parameters/water-level-15min/values?format=csv",
        server.base
    );
    let all = csv_rows(&get(&one).await.text());
    let kept = |qualities: &[&str]| -> Vec<(String, f64, String)> {
        all.iter()
            .filter(|r| qualities.contains(&r.2.as_str()))
            .cloned()
            .collect()
    };
    let (good, other) = (kept(&["good"]), kept(&["estimated", "unchecked"]));
    assert!(good.len() > 1000 && !other.is_empty() && good.len() + other.len() < all.len());
    let asked = |query: &str| {
        let url = format!("{one}&{query}");
        async move {
            let r = get(&url).await;
            assert_eq!(r.status, 200, "{url}: {}", r.text());
            (csv_rows(&r.text()), r.header("x-total-count"))
        }
    };
    assert_eq!(asked("qualities=good").await.0, good);
    assert_eq!(
        asked("qualities=estimated,unchecked").await.0,
        other,
        "a list keeps every quality in it"
    );
    let (page, total) = asked("qualities=good&offset=1000&limit=700").await;
    assert_eq!(page, good[1000..1700]);
    assert_eq!(total, Some(good.len().to_string()));
    let (newest, _) = asked("qualities=estimated,unchecked&recent=25").await;
    assert_eq!(newest, other[other.len() - 25..]);
    let (backwards, _) = asked("qualities=good&sort=-timestamp&offset=3&limit=7").await;
    let mut reversed = good.clone();
    reversed.reverse();
    assert_eq!(backwards, reversed[3..10]);
    let (highest, total) = asked("qualities=estimated&sort=-value&limit=5").await;
    let mut estimated = kept(&["estimated"]);
    estimated.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    assert_eq!(highest, estimated[..5]);
    assert_eq!(total, Some(estimated.len().to_string()));
    let (none, total) = asked("qualities=nonsense").await;
    assert!(none.is_empty());
    assert_eq!(total, None, "no page asked, no total");

    let many = get(&format!(
        "{}/values?parameters=water-level-15min&stations={station}&qualities=good&offset=10&limit=50&format=csv",
        server.base
    ))
    .await;
    assert_eq!(many.status, 200, "{}", many.text());
    assert_eq!(csv_rows(&many.text()), good[10..60]);
    assert_eq!(many.header("x-total-count"), Some(good.len().to_string()));

    let parquet = get(&one.replace("format=csv", "format=parquet&qualities=good")).await;
    assert_eq!(parquet.status, 200);
    let reader =
        datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            parquet.body.clone(),
        )
        .unwrap()
        .build()
        .unwrap();
    let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, good.len(), "Parquet answers are filtered too");

    let r = get(&format!("{one}&qualities=")).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["invalidParams"][0]["name"], "qualities");
}

/// `timeZone` on raw values gives every time in the zone's offset of that instant.
#[tokio::test]
async fn raw_values_in_a_time_zone() {
    let server = Server::start();
    let station = first_station_id(&server.base).await;
    let url = format!(
        "{}/stations/{station}/parameters/water-level-15min/values?format=csv&timeZone=Europe/Berlin\
         &from=2023-03-26T00:00:00Z&to=2023-03-26T01:30:00Z",
        server.base
    );
    let r = get(&url).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let times: Vec<String> = csv_rows(&r.text()).into_iter().map(|r| r.0).collect();
    // Berlin's clocks went from 02:00 +01:00 to 03:00 +02:00 at 01:00 UTC.
    assert_eq!(
        times.first().map(String::as_str),
        Some("2023-03-26T01:00:00+01:00")
    );
    assert!(
        times.contains(&"2023-03-26T01:45:00+01:00".to_owned()),
        "{times:?}"
    );
    assert!(
        times.contains(&"2023-03-26T03:00:00+02:00".to_owned()),
        "{times:?}"
    );
    assert_eq!(
        times.last().map(String::as_str),
        Some("2023-03-26T03:30:00+02:00")
    );
}
