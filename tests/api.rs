//! End-to-end: the real `hydro serve` on a free port, spoken to over HTTP. Responses are
//! validated against the JSON Schemas in `schemas/`.

mod common;

use common::{Server, dataset, generate, get, get_with, request};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use serde_json::Value;

fn schema(name: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(format!(
        "{}/schemas/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
}

fn assert_valid(name: &str, v: &Value) {
    let validator = schema(name);
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:?}\n{v}");
}

/// A server of its own for each test: it stops when the test ends.
fn server() -> Server {
    Server::start()
}

async fn first_station(base: &str) -> (String, Value) {
    let r = get(&format!("{base}/stations?limit=1")).await;
    let s = r.json()["data"][0].clone();
    (s["id"].as_str().unwrap().to_owned(), s)
}

/// Every link of the landing page answers 200 when followed: those without placeholders as
/// they are, templates with the example station's id and its first parameter's.
#[tokio::test]
async fn every_landing_link_answers_when_followed() {
    let server = server();
    let base = &server.base;
    let landing = get(&format!("{base}/")).await.json();
    let example = landing["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["rel"] == "example")
        .expect("an example station")["href"]
        .as_str()
        .unwrap()
        .to_owned();
    let sid = example.rsplit('/').next().unwrap().to_owned();
    let parameters = get(&format!("{example}/parameters")).await.json();
    let pid = parameters["data"][0]["id"].as_str().unwrap().to_owned();
    let links = landing["links"].as_array().unwrap();
    assert!(links.len() >= 10, "{links:?}");
    for link in links {
        let href = link["href"].as_str().unwrap();
        let url = href
            .replace("{stationId}", &sid)
            .replace("{parameterId}", &pid);
        assert!(!url.contains('{'), "a placeholder not known: {href}");
        let r = get(&url).await;
        assert_eq!(r.status, 200, "{} {href}: {}", link["rel"], r.text());
    }
}

#[tokio::test]
async fn every_endpoint_answers_valid_json() {
    let server = server();
    let base = &server.base;
    let (sid, _) = first_station(base).await;
    let cases = [
        ("/", "landing"),
        ("/stations", "stations"),
        (&format!("/stations/{sid}") as &str, "station"),
        (
            &format!("/stations/{sid}?include=parameters,characteristics"),
            "station",
        ),
        (&format!("/stations/{sid}/parameters"), "parameters"),
        (
            &format!("/stations/{sid}/parameters/water-level-15min"),
            "parameter",
        ),
        (
            &format!("/stations/{sid}/parameters/water-level-15min/values?limit=10"),
            "values",
        ),
        (
            &format!("/stations/{sid}/characteristics"),
            "characteristics",
        ),
        (
            &format!("/stations/{sid}/characteristics/mhw"),
            "characteristic",
        ),
        ("/versions", "versions"),
        ("/versions/1", "version"),
        ("/stations?asOf=1&limit=2", "stations"),
        ("/health", "health"),
    ];
    for (path, name) in cases {
        let r = get(&format!("{base}{path}")).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        assert_eq!(
            r.header("content-type").as_deref(),
            Some("application/json; charset=utf-8"),
            "{path}"
        );
        let v = r.json();
        assert_valid(name, &v);
        if name != "health" {
            assert_eq!(
                v["meta"]["schemaUrl"],
                format!("{base}/schemas/{name}.json"),
                "{path}"
            );
            assert_eq!(v["meta"]["baseUrl"], base.as_str());
        }
    }
    for name in ["stations", "values", "problem", "health"] {
        let r = get(&format!("{base}/schemas/{name}.json")).await;
        assert_eq!(r.status, 200);
        jsonschema::validator_for(&r.json()).unwrap();
    }
    let r = get(&format!("{base}/openapi.json")).await;
    assert_eq!(r.json()["openapi"], "3.1.0");
    // A browser gets the same document as a page: every operation, its parameters and answers.
    let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let page = get_with(&format!("{base}/openapi.json"), &[("accept", browser)]).await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type").as_deref(),
        Some("text/html; charset=utf-8")
    );
    let html = page.text();
    for part in [
        "<h2><code>GET /stations/{stationId}/parameters/{parameterId}/values</code></h2>",
        "<h2><code>POST /values</code></h2>",
        "<td><code>observedProperties</code></td>",
        "application/vnd.apache.parquet",
        "/v1/openapi.json?format=json\"",
    ] {
        assert!(html.contains(part), "{part} in the page");
    }
    let asked = get_with(
        &format!("{base}/openapi.json?format=json"),
        &[("accept", browser)],
    )
    .await;
    assert_eq!(asked.json()["openapi"], "3.1.0");
    let bad = get(&format!("{base}/openapi.json?format=csv")).await;
    assert_eq!(bad.status, 400);
    let m = get(&format!("{}/metrics", base.trim_end_matches("/v1"))).await;
    assert!(m.text().contains("hydro_requests_total"));
}

#[tokio::test]
async fn bad_input_gets_problem_details() {
    let server = server();
    let base = &server.base;
    let (sid, _) = first_station(base).await;
    let v = format!("/stations/{sid}/parameters/water-level-15min/values");
    let cases: Vec<(String, u16, &str)> = vec![
        ("/stations?form=csv".into(), 400, "form"),
        ("/stations?limit=-1".into(), 400, "limit"),
        ("/stations?limit=".into(), 400, "limit"),
        ("/stations?limit=abc".into(), 400, "limit"),
        ("/stations?offset=1.5".into(), 400, "offset"),
        ("/stations?limit=1&limit=2".into(), 400, "limit"),
        ("/stations?states=Bayern".into(), 400, "states"),
        ("/stations?states=BY,,NW".into(), 400, "states"),
        ("/stations?types=river".into(), 400, "types"),
        ("/stations?bbox=1,2,3".into(), 400, "bbox"),
        ("/stations?bbox=6,50,8,95".into(), 400, "bbox"),
        ("/stations?near=7".into(), 400, "near"),
        ("/stations?near=7,50,-3".into(), 400, "near"),
        ("/stations?near=700,50,3".into(), 400, "near"),
        ("/stations?sort=height".into(), 400, "sort"),
        ("/stations?sort=name,,id".into(), 400, "sort"),
        ("/stations?fields=nope".into(), 400, "fields"),
        ("/stations?fields=id,".into(), 400, "fields"),
        ("/stations?include=values".into(), 400, "include"),
        ("/stations?format=pdf".into(), 400, "format"),
        ("/stations?format=".into(), 400, "format"),
        (
            format!("/stations/{sid}/parameters?format=geojson"),
            400,
            "format",
        ),
        (format!("{v}?from=2023-01-01"), 400, "from"),
        (format!("{v}?from=2023-01-01T00:00:00"), 400, "from"),
        (format!("{v}?from=yesterday"), 400, "from"),
        (
            format!("{v}?from=2023-02-01T00:00:00Z&to=2023-01-01T00:00:00Z"),
            400,
            "from",
        ),
        (format!("{v}?to=2023-13-01T00:00:00Z"), 400, "to"),
        (format!("{v}?recent=-1"), 400, "recent"),
        (format!("{v}?recent=1&last=P1D"), 400, "last"),
        (
            format!("{v}?recent=1&from=2023-01-01T00:00:00Z"),
            400,
            "recent",
        ),
        (format!("{v}?last=1D"), 400, "last"),
        (format!("{v}?last=P0D"), 400, "last"),
        (format!("{v}?last=PT"), 400, "last"),
        (format!("{v}?sort=quality,,value"), 400, "sort"),
        (format!("{v}?sort=name"), 400, "sort"),
        (format!("{v}?fields=timestamp,foo"), 400, "fields"),
        (format!("{v}?format=geojson"), 400, "format"),
        (
            format!("/stations/{sid}/characteristics?types=peak"),
            400,
            "types",
        ),
        (
            format!("/stations/{sid}/characteristics?parameterIds=a/b"),
            400,
            "parameterIds",
        ),
        ("/stations/nope".into(), 404, ""),
        ("/stations/..%2F..%2Fetc".into(), 404, ""),
        ("/stations/a%00b".into(), 404, ""),
        (format!("/stations/{}", "x".repeat(300)), 404, ""),
        (format!("/stations/{sid}/parameters/nope"), 404, ""),
        (
            format!("/stations/{sid}/parameters/..%2F..%2Fmanifest.json/values"),
            404,
            "",
        ),
        (format!("/stations/{sid}/characteristics/nope"), 404, ""),
        ("/stations/x/y/z/w/v/u".into(), 404, ""),
        ("/nothing".into(), 404, ""),
    ];
    for (path, status, param) in cases {
        let r = get(&format!("{base}{path}")).await;
        assert_eq!(r.status, status, "{path}: {}", r.text());
        assert_eq!(
            r.header("content-type").as_deref(),
            Some("application/problem+json"),
            "{path}"
        );
        assert_eq!(
            r.header("access-control-allow-origin").as_deref(),
            Some("*"),
            "{path}"
        );
        let p = r.json();
        assert_valid("problem", &p);
        assert_eq!(p["status"], status);
        if !param.is_empty() {
            assert_eq!(p["invalidParams"][0]["name"], param, "{path}: {p}");
        }
        let text = r.text();
        assert!(
            !text.contains("/tmp")
                && !text.contains(".parquet")
                && !text.contains("station=")
                && !text.contains("Error {"),
            "{path} leaks: {text}"
        );
    }
    // A window backwards: the problem names both ends as they were written.
    let p = get(&format!(
        "{base}{v}?from=2023-02-01T00:00:00Z&to=2023-01-01T00:00%2B01"
    ))
    .await
    .json();
    assert_eq!(
        p["invalidParams"][0]["reason"], "'2023-02-01T00:00:00Z' is after to '2023-01-01T00:00+01'",
        "{p}"
    );
    // A parameter the station does not have: the problem lists those it has.
    let p = get(&format!(
        "{base}/stations/{sid}/parameters/water-levle-15min/values"
    ))
    .await
    .json();
    let detail = p["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("has no parameter 'water-levle-15min'; it has ")
            && detail.contains("water-level-15min"),
        "{p}"
    );
    let outside = get(&format!("{}/v2/stations", base.trim_end_matches("/v1"))).await;
    assert_eq!(outside.status, 404);
}

#[tokio::test]
async fn methods_uri_length_and_headers() {
    let server = server();
    let base = &server.base;
    for m in ["POST", "PUT", "DELETE", "PATCH"] {
        let r = request(m, &format!("{base}/stations"), &[]).await;
        assert_eq!(r.status, 405, "{m}");
        assert_eq!(r.header("allow").as_deref(), Some("GET, HEAD, OPTIONS"));
        assert_eq!(r.json()["status"], 405);
    }
    let head = request("HEAD", &format!("{base}/stations"), &[]).await;
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    let pre = request(
        "OPTIONS",
        &format!("{base}/stations"),
        &[
            ("Origin", "https://example.org"),
            ("Access-Control-Request-Method", "GET"),
        ],
    )
    .await;
    assert_eq!(pre.status, 204);
    assert_eq!(
        pre.header("access-control-allow-origin").as_deref(),
        Some("*")
    );
    assert_eq!(
        pre.header("access-control-max-age").as_deref(),
        Some("86400")
    );
    assert!(
        pre.header("access-control-allow-headers")
            .unwrap()
            .contains("X-API-Key")
    );
    assert!(
        pre.header("access-control-expose-headers")
            .unwrap()
            .contains("ETag")
    );
    let long = format!("{base}/stations?states={}", "BY,".repeat(3000));
    assert_eq!(get(&long).await.status, 414);
    let big = "x".repeat(70 * 1024);
    let r = request("GET", &format!("{base}/stations"), &[("X-Big", &big)]).await;
    assert_eq!(r.status, 431);
}

#[tokio::test]
async fn station_filters_match_the_catalog() {
    let server = server();
    let base = &server.base;
    let all = get(&format!("{base}/stations")).await.json();
    let all = all["data"].as_array().unwrap().clone();
    assert_eq!(all.len(), 24);
    // Default order: name, case-insensitive.
    let names: Vec<String> = all
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_lowercase())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);

    let by_state = |code: &str| all.iter().filter(|s| s["state"] == code).count();
    for (q, want) in [
        ("states=DE-NW", by_state("DE-NW")),
        ("states=nw", by_state("DE-NW")),
        ("states=NW,RP", by_state("DE-NW") + by_state("DE-RP")),
    ] {
        let r = get(&format!("{base}/stations?{q}")).await.json();
        assert_eq!(r["data"].as_array().unwrap().len(), want, "{q}");
    }
    let rhein = all.iter().filter(|s| s["waterBodyId"] == "2").count();
    assert!(rhein > 0);
    let r = get(&format!("{base}/stations?waterBodyIds=2")).await.json();
    assert_eq!(r["data"].as_array().unwrap().len(), rhein);
    let r = get(&format!("{base}/stations?waterBodyIds=2&states=RP"))
        .await
        .json();
    assert!(
        r["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["waterBodyId"] == "2" && s["state"] == "DE-RP")
    );

    // bbox includes exactly the stations inside.
    let (min_lon, min_lat, max_lon, max_lat) = (6.5, 50.0, 8.0, 51.5);
    let want: Vec<&str> = all
        .iter()
        .filter(|s| {
            let (lat, lon) = (
                s["coordinates"]["lat"].as_f64().unwrap(),
                s["coordinates"]["lon"].as_f64().unwrap(),
            );
            (min_lon..=max_lon).contains(&lon) && (min_lat..=max_lat).contains(&lat)
        })
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    let r = get(&format!(
        "{base}/stations?bbox={min_lon},{min_lat},{max_lon},{max_lat}"
    ))
    .await
    .json();
    let got: Vec<&str> = r["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    let mut w = want.clone();
    w.sort();
    let mut g = got.clone();
    g.sort();
    assert_eq!(g, w);

    // near: nearest first with distance; location alias in fields.
    let r = get(&format!(
        "{base}/stations?near=6.9631,50.9367,120&fields=name,distance,location"
    ))
    .await
    .json();
    let hits = r["data"].as_array().unwrap();
    assert!(!hits.is_empty());
    assert_eq!(hits[0]["name"], "Köln");
    assert!(hits[0]["distance"].as_f64().unwrap() < 0.01);
    let d: Vec<f64> = hits
        .iter()
        .map(|h| h["distance"].as_f64().unwrap())
        .collect();
    assert!(d.windows(2).all(|w| w[0] <= w[1]) && d.iter().all(|x| *x <= 120.0));
    assert!(hits[0]["coordinates"]["lat"].is_number() && hits[0].get("id").is_none());
    assert_valid("stations", &r);

    // sort: multi-key, descending, case-insensitive.
    let r = get(&format!(
        "{base}/stations?sort=state,-name&fields=state,name"
    ))
    .await
    .json();
    let rows: Vec<(String, String)> = r["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["state"].as_str().unwrap().into(),
                s["name"].as_str().unwrap().to_lowercase(),
            )
        })
        .collect();
    assert!(
        rows.windows(2)
            .all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 >= w[1].1)),
        "{rows:?}"
    );
    let types = get(&format!("{base}/stations?types=groundwater,weather"))
        .await
        .json();
    assert!(
        types["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["type"] != "surfaceWater")
    );
}

#[tokio::test]
async fn following_next_walks_the_collection_exactly_once() {
    let server = server();
    let base = &server.base;
    let all = get(&format!("{base}/stations?fields=id")).await.json();
    let want: Vec<Value> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].clone())
        .collect();
    let mut url = format!("{base}/stations?fields=id&limit=5");
    let mut seen = Vec::new();
    loop {
        let r = get(&url).await;
        assert_eq!(r.header("x-total-count").as_deref(), Some("24"));
        let v = r.json();
        assert_valid("stations", &v);
        let p = &v["meta"]["pagination"];
        assert_eq!(p["total"], 24);
        assert_eq!(p["limit"], 5);
        seen.extend(
            v["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["id"].clone()),
        );
        let link_header = r.header("link").unwrap();
        match v["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["rel"] == "next")
        {
            Some(next) => {
                assert!(link_header.contains("rel=\"next\""));
                url = next["href"].as_str().unwrap().to_owned();
            }
            None => {
                assert_eq!(p["hasNextPage"], false);
                assert_eq!(p["page"], p["totalPages"]);
                break;
            }
        }
    }
    assert_eq!(seen, want);
    let r = get(&format!("{base}/stations?limit=0")).await.json();
    assert_eq!(r["data"].as_array().unwrap().len(), 0);
    assert_eq!(r["meta"]["pagination"]["total"], 24);
    assert_eq!(r["meta"]["pagination"]["totalPages"], 0);
    assert_eq!(r["meta"]["pagination"]["page"], 1);
    let r = get(&format!("{base}/stations?offset=20")).await.json();
    assert_eq!(r["meta"]["pagination"]["count"], 4);
    assert_eq!(r["meta"]["pagination"]["limit"], 4);
    let r = get(&format!("{base}/stations?offset=10&limit=5"))
        .await
        .json();
    assert_eq!(r["meta"]["pagination"]["page"], 3);
    assert_eq!(r["data"][0]["id"], want[10]);
    // The largest offset and limit there are, sorted or not: nothing past the end, and a
    // limit past any count keeps the rest.
    let huge = "9223372036854775807";
    let too_large = get(&format!("{base}/stations?offset=9223372036854775808")).await;
    assert_eq!(too_large.status, 400, "beyond the documented maximum");
    for sort in ["", "&sort=-name"] {
        let r = get(&format!("{base}/stations?offset={huge}&limit={huge}{sort}")).await;
        assert_eq!(r.status, 200);
        let r = r.json();
        assert_eq!(r["data"].as_array().unwrap().len(), 0);
        assert_eq!(r["meta"]["pagination"]["total"], 24);
        let r = get(&format!("{base}/stations?offset=22&limit={huge}{sort}"))
            .await
            .json();
        assert_eq!(r["data"].as_array().unwrap().len(), 2, "{sort}");
    }
}

#[tokio::test]
async fn values_windows_and_paging() {
    let server = server();
    let base = &server.base;
    let (sid, _) = first_station(base).await;
    let v = format!("{base}/stations/{sid}/parameters/water-level-15min/values");
    let r = get(&format!(
        "{v}?from=2023-03-01T00:00:00Z&to=2023-03-01T01:00:00Z"
    ))
    .await
    .json();
    assert_valid("values", &r);
    let ts: Vec<&str> = r["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["timestamp"].as_str().unwrap())
        .collect();
    assert_eq!(
        ts,
        [
            "2023-03-01T00:00:00+00:00",
            "2023-03-01T00:15:00+00:00",
            "2023-03-01T00:30:00+00:00",
            "2023-03-01T00:45:00+00:00",
            "2023-03-01T01:00:00+00:00"
        ]
    );
    // Offsets, an unencoded '+' and a space in its place mean the same instant.
    for q in [
        "from=2023-03-01T01:00:00+01:00&to=2023-03-01T02:00:00+01:00",
        "from=2023-03-01T01:00:00%2B01:00&to=2023-03-01T02:00:00%2B01:00",
        "from=2023-03-01T01:00:00%2001:00&to=2023-03-01T02:00:00%2001:00",
    ] {
        let r2 = get(&format!("{v}?{q}")).await.json();
        assert_eq!(r2["data"], r["data"], "{q}");
    }
    let recent = get(&format!("{v}?recent=3")).await.json();
    let data = recent["data"].as_array().unwrap();
    assert_eq!(data.len(), 3);
    assert!(
        data[0]["timestamp"].as_str() < data[2]["timestamp"].as_str(),
        "recent is ascending"
    );
    let last = get(&format!("{v}?last=PT1H")).await.json();
    assert_eq!(last["data"].as_array().unwrap().len(), 4);
    assert_eq!(last["data"][3], data[2]);
    let desc = get(&format!("{v}?sort=-timestamp&limit=2&fields=timestamp"))
        .await
        .json();
    assert_eq!(desc["data"][0]["timestamp"], data[2]["timestamp"]);
    assert_eq!(desc["data"][0].as_object().unwrap().len(), 1);
    let paged = get(&format!("{v}?limit=10&offset=20")).await;
    let pv = paged.json();
    assert_valid("values", &pv);
    let total = pv["meta"]["pagination"]["total"].as_u64().unwrap();
    assert_eq!(paged.header("x-total-count"), Some(total.to_string()));
    assert!(total > 60_000);
    let full = get(&format!("{v}?limit=30")).await.json();
    assert_eq!(
        pv["data"].as_array().unwrap()[..],
        full["data"].as_array().unwrap()[20..30]
    );
    let peak = get(&format!("{v}?sort=-value&limit=1")).await.json();
    let hhw = get(&format!("{base}/stations/{sid}/characteristics/hhw"))
        .await
        .json();
    assert_eq!(
        peak["data"][0]["value"].as_f64(),
        hhw["data"]["value"].as_f64(),
        "HHW is the series maximum"
    );
}

#[tokio::test]
async fn formats_and_negotiation() {
    let server = server();
    let base = &server.base;
    let (sid, _) = first_station(base).await;
    let r = get(&format!("{base}/stations?format=csv")).await;
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("text/csv; charset=utf-8")
    );
    assert!(
        r.header("content-disposition")
            .unwrap()
            .contains("stations.csv")
    );
    let text = r.text();
    assert_eq!(
        text.lines().next().unwrap(),
        "id,name,type,state,operator,coordinates.lat,coordinates.lon,waterBodyName"
    );
    assert_eq!(text.lines().count(), 25);
    let r = get_with(
        &format!("{base}/stations?limit=2"),
        &[("Accept", "application/geo+json")],
    )
    .await;
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("application/geo+json; charset=utf-8")
    );
    let g = r.json();
    assert_eq!(g["type"], "FeatureCollection");
    let f = &g["features"][0];
    assert_eq!(f["geometry"]["type"], "Point");
    assert!(
        f["geometry"]["coordinates"][0].as_f64().unwrap()
            < f["geometry"]["coordinates"][1].as_f64().unwrap(),
        "[lon, lat] in Germany"
    );
    assert!(f["properties"]["name"].is_string() && f["properties"].get("coordinates").is_none());
    let r = get_with(
        &format!("{base}/stations?limit=1&format=json"),
        &[("Accept", "text/csv")],
    )
    .await;
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("application/json; charset=utf-8"),
        "format wins"
    );
    let r = get_with(
        &format!("{base}/stations?limit=1"),
        &[("Accept", "text/csv;q=0.2, application/xml;q=0.8")],
    )
    .await;
    assert!(r.text().starts_with("<?xml"));
    let r = get_with(&format!("{base}/stations"), &[("Accept", "image/png")]).await;
    assert_eq!(r.status, 406);
    let r = get_with(
        &format!("{base}/stations/{sid}/parameters"),
        &[("Accept", "application/geo+json")],
    )
    .await;
    assert_eq!(r.status, 406);
    let v = format!(
        "{base}/stations/{sid}/parameters/water-level-15min/values?from=2023-05-01T00:00:00Z&to=2023-05-02T00:00:00Z"
    );
    let json = get(&v).await.json();
    let rows = json["data"].as_array().unwrap();
    let csv = get(&format!("{v}&format=csv")).await.text();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("timestamp,value,quality"));
    for (line, row) in lines.zip(rows) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], row["timestamp"].as_str().unwrap());
        assert_eq!(
            cells[1].parse::<f64>().unwrap(),
            row["value"].as_f64().unwrap()
        );
        assert_eq!(cells[2], row["quality"].as_str().unwrap());
    }
    let nd = get(&format!("{v}&format=ndjson")).await.text();
    let nd: Vec<Value> = nd
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(&nd[..], &rows[..]);
    let xml = get(&format!("{v}&format=application/xml")).await.text();
    assert_eq!(xml.matches("<measurement>").count(), rows.len());
    let arrow = get(&format!("{v}&format=arrow")).await;
    assert_eq!(
        arrow.header("content-type").as_deref(),
        Some("application/vnd.apache.arrow.stream")
    );
    let n: usize = arrow_batches(&arrow.body)
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert_eq!(n, rows.len());
    let pq = get(&format!("{v}&format=parquet")).await;
    let reader =
        datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            pq.body.clone(),
        )
        .unwrap()
        .build()
        .unwrap();
    let n: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(n, rows.len());
    // Parquet pages are compressed already: no content coding on top.
    let gz = get_with(
        &format!("{v}&format=parquet"),
        &[("Accept-Encoding", "gzip, br, zstd")],
    )
    .await;
    assert_eq!(gz.status, 200);
    assert_eq!(gz.header("content-encoding"), None);
    assert_eq!(gz.body, pq.body);
}

/// The record batches of an Arrow IPC stream answer.
fn arrow_batches(body: &[u8]) -> Vec<RecordBatch> {
    datafusion::arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(body), None)
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

/// A sorted answer is the same bytes every time its ETag is: the Arrow dictionary of its
/// qualities names each quality once (DataFusion's top-k concatenated the dictionaries of the
/// batches the rows came from, in an order that varied from request to request).
#[tokio::test]
async fn sorted_arrow_answers_name_each_quality_once() {
    let server = server();
    let base = &server.base;
    let (sid, _) = first_station(base).await;
    let url = format!(
        "{base}/stations/{sid}/parameters/discharge-15min/values?sort=value&limit=50&format=arrow"
    );
    let fresh = [("Cache-Control", "no-cache")];
    let first = get_with(&url, &fresh).await;
    assert_eq!(first.status, 200);
    let mut rows = 0;
    for batch in arrow_batches(&first.body) {
        rows += batch.num_rows();
        let quality = batch.column_by_name("quality").unwrap().as_any_dictionary();
        let names = quality.values().as_string::<i32>();
        let distinct: std::collections::BTreeSet<&str> = names.iter().flatten().collect();
        assert_eq!(distinct.len(), names.len(), "{names:?}");
    }
    assert_eq!(rows, 50);
    for _ in 0..4 {
        assert_eq!(get_with(&url, &fresh).await.body, first.body);
    }
}

#[tokio::test]
async fn etag_compression_and_cors() {
    let server = server();
    let base = &server.base;
    let (sid, _) = first_station(base).await;
    let url = format!(
        "{base}/stations/{sid}/parameters/discharge-15min/values?from=2023-01-01T00:00:00Z&to=2023-02-01T00:00:00Z"
    );
    let r = get(&url).await;
    let etag = r.header("etag").unwrap();
    assert!(etag.starts_with('"'));
    assert!(r.header("last-modified").is_some());
    assert!(r.header("cache-control").unwrap().contains("max-age"));
    assert!(r.header("vary").unwrap().contains("Accept-Encoding"));
    let again = get_with(&url, &[("If-None-Match", &etag)]).await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag").as_deref(), Some(etag.as_str()));
    for (coding, decode) in [("gzip", "gzip"), ("br", "br"), ("zstd", "zstd")] {
        let c = get_with(&url, &[("Accept-Encoding", coding)]).await;
        assert_eq!(c.header("content-encoding").as_deref(), Some(decode));
        assert_ne!(
            c.header("etag"),
            Some(etag.clone()),
            "each coding has its own ETag"
        );
        assert_eq!(decode_body(coding, &c.body), r.body.to_vec());
    }
    let tiny = get_with(&format!("{base}/health"), &[("Accept-Encoding", "gzip")]).await;
    assert!(
        tiny.header("content-encoding").is_none(),
        "tiny bodies are not compressed"
    );
}

/// An ETag names bytes: a server started again with the same settings gives the same ETag,
/// one whose links point elsewhere gives another, and does not answer 304 to the old one.
#[tokio::test]
async fn etags_change_with_the_settings_that_shape_the_bytes() {
    let here = [("HYDRO_BASE_URL", "https://hydro.example/v1")];
    let elsewhere = [("HYDRO_BASE_URL", "https://mirror.example/v1")];
    let path = "/stations?limit=2";
    let mut tags = Vec::new();
    for env in [&here, &here, &elsewhere] {
        let server = Server::start_with(dataset(), env);
        let r = get(&format!("{}{path}", server.base)).await;
        assert_eq!(r.status, 200);
        tags.push((r.header("etag").unwrap(), r.text(), server));
    }
    assert_eq!(tags[0].0, tags[1].0, "same settings, same bytes, same ETag");
    assert_eq!(tags[0].1, tags[1].1);
    assert_ne!(tags[0].1, tags[2].1, "links follow the base address");
    assert_ne!(tags[0].0, tags[2].0);
    let stale = get_with(
        &format!("{}{path}", tags[2].2.base),
        &[("If-None-Match", &tags[0].0)],
    )
    .await;
    assert_eq!(stale.status, 200, "an ETag of other bytes is not a match");
}

fn decode_body(coding: &str, body: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    match coding {
        "gzip" => {
            // One gzip member holds the whole answer: a reader of the first member sees all.
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut out)
                .unwrap();
        }
        "zstd" => out = zstd::stream::decode_all(body).unwrap(),
        "br" => {
            brotli_decompressor::Decompressor::new(body, 4096)
                .read_to_end(&mut out)
                .unwrap();
        }
        _ => panic!("{coding}"),
    }
    out
}

/// A counter or gauge from `/metrics`.
async fn metric(base: &str, name: &str) -> u64 {
    let text = get(&format!("{}/metrics", base.trim_end_matches("/v1")))
        .await
        .text();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} missing:\n{text}"))
        .parse()
        .unwrap()
}

/// Waits (at most 5 s) until the answer store holds `n` answers.
async fn stored_answers_come_to(base: &str, n: u64) {
    let name = "hydro_answer_store_answers";
    for _ in 0..100 {
        if metric(base, name).await == n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(metric(base, name).await, n, "answers in the store");
}

/// A value answer asked for a third time comes from the answer store: the same bytes and
/// headers, now with a length. `Cache-Control: no-cache` gets one made afresh.
#[tokio::test]
async fn repeated_answers_come_from_the_store() {
    let server = server();
    let base = &server.base;
    let (sid, _) = first_station(base).await;
    let url = format!(
        "{base}/stations/{sid}/parameters/discharge-15min/values?format=csv&limit=50000&offset=7"
    );
    let hits = "hydro_answer_store_hits_total";
    let first = get(&url).await;
    assert_eq!(first.status, 200);
    assert!(first.header("content-length").is_none(), "streamed");
    let second = get(&url).await;
    assert_eq!(second.body, first.body);
    assert_eq!(metric(base, hits).await, 0);
    // The second request's copy is in the store a moment after its last byte, once the
    // store's writer has written it (a request in that moment is made again, not kept waiting).
    stored_answers_come_to(base, 1).await;
    let stored = get(&url).await;
    assert_eq!(metric(base, hits).await, 1);
    assert_eq!(metric(base, "hydro_answer_store_answers").await, 1);
    assert_eq!(stored.status, 200);
    assert_eq!(stored.body, first.body);
    assert_eq!(
        stored.header("content-length"),
        Some(first.body.len().to_string())
    );
    for h in [
        "content-type",
        "content-disposition",
        "etag",
        "link",
        "x-total-count",
        "cache-control",
        "vary",
        "access-control-allow-origin",
    ] {
        assert!(first.header(h).is_some(), "{h}");
        assert_eq!(stored.header(h), first.header(h), "{h}");
    }
    let head = request("HEAD", &url, &[]).await;
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(
        head.header("content-length"),
        stored.header("content-length")
    );

    let fresh = get_with(&url, &[("Cache-Control", "no-cache")]).await;
    assert_eq!(fresh.body, first.body);
    assert!(fresh.header("content-length").is_none(), "made afresh");
    assert_eq!(
        metric(base, hits).await,
        2,
        "only the HEAD came from the store"
    );

    // Each coding is an answer of its own.
    let gzip = [("Accept-Encoding", "gzip")];
    for _ in 0..2 {
        get_with(&url, &gzip).await;
    }
    stored_answers_come_to(base, 2).await;
    let coded = get_with(&url, &gzip).await;
    assert_eq!(metric(base, hits).await, 3);
    assert_eq!(coded.header("content-encoding").as_deref(), Some("gzip"));
    assert_eq!(decode_body("gzip", &coded.body), first.body.to_vec());
    assert_ne!(coded.header("etag"), first.header("etag"));
}

/// A download cut off part way resumes with a byte range. The first range request makes the
/// whole answer (kept in the store, or in memory when short) and sends the part; the parts put
/// together are the answer. Several ranges, a malformed one, `If-Range` with another tag or
/// `no-cache` get the whole answer; a range beyond the end gets 416.
#[tokio::test]
async fn downloads_resume_from_a_byte_range() {
    let server = server();
    let base = &server.base;
    let (sid, _) = first_station(base).await;
    let values = format!("{base}/stations/{sid}/parameters/discharge-15min/values");
    for (query, stored) in [
        ("format=csv&limit=50000&offset=3", true),
        ("limit=20", false),
    ] {
        let url = format!("{values}?{query}");
        let whole = get(&url).await;
        assert_eq!(whole.status, 200);
        assert_eq!(whole.header("accept-ranges").as_deref(), Some("bytes"));
        let etag = whole.header("etag").unwrap();
        let n = whole.body.len();
        assert_eq!(stored, n > 256 * 1024, "{n} bytes");
        let cut = n / 3;
        let rest = get_with(
            &url,
            &[("Range", &format!("bytes={cut}-")), ("If-Range", &etag)],
        )
        .await;
        assert_eq!(rest.status, 206, "{query}");
        assert_eq!(
            rest.header("content-range"),
            Some(format!("bytes {cut}-{}/{n}", n - 1))
        );
        assert_eq!(rest.header("content-length"), Some((n - cut).to_string()));
        assert!(
            rest.header("access-control-expose-headers")
                .unwrap()
                .contains("Content-Range"),
            "browser scripts can read which part they got"
        );
        for h in ["etag", "content-type", "link", "accept-ranges"] {
            assert_eq!(rest.header(h), whole.header(h), "{h}");
        }
        let mut joined = whole.body[..cut].to_vec();
        joined.extend_from_slice(&rest.body);
        assert_eq!(joined, whole.body.to_vec());
        let middle = get_with(&url, &[("Range", "bytes=10-19")]).await;
        assert_eq!(middle.status, 206);
        assert_eq!(middle.body[..], whole.body[10..20]);
        let tail = get_with(&url, &[("Range", "bytes=-5")]).await;
        assert_eq!(tail.body[..], whole.body[n - 5..]);

        for asked in [
            &[("Range", "bytes=0-1,5-6")][..],
            &[("Range", "bytes=oops")],
            &[("Range", "bytes=5-"), ("If-Range", "\"another\"")],
            &[("Range", "bytes=5-"), ("Cache-Control", "no-cache")],
        ] {
            let r = get_with(&url, asked).await;
            assert_eq!(r.status, 200, "{asked:?}");
            assert_eq!(r.body, whole.body, "{asked:?}");
        }
        let beyond = get_with(&url, &[("Range", &format!("bytes={n}-"))]).await;
        assert_eq!(beyond.status, 416);
        assert_eq!(beyond.header("content-range"), Some(format!("bytes */{n}")));
        assert_eq!(
            beyond.header("content-type").as_deref(),
            Some("application/problem+json")
        );
        let head = request("HEAD", &url, &[("Range", "bytes=5-")]).await;
        assert_eq!(head.status, 200, "HEAD ignores Range");
    }

    // A range of a compressed answer is a range of its compressed bytes.
    let url = format!("{values}?format=csv&limit=40000");
    let gzip = ("Accept-Encoding", "gzip");
    let whole = get_with(&url, &[gzip]).await;
    assert_eq!(whole.header("content-encoding").as_deref(), Some("gzip"));
    let rest = get_with(&url, &[gzip, ("Range", "bytes=100-")]).await;
    assert_eq!(rest.status, 206);
    assert_eq!(rest.header("content-encoding").as_deref(), Some("gzip"));
    assert_eq!(rest.body[..], whole.body[100..]);

    // Without a store, ranges are not offered, and a Range header gets the whole answer.
    let off = Server::start_with(dataset(), &[("HYDRO_ANSWER_STORE_BYTES", "0")]);
    let url = url.replace(base.as_str(), &off.base);
    let r = get_with(&url, &[("Range", "bytes=5-")]).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("accept-ranges"), None);
}

/// An answer larger than the whole store is sent but never kept; a store directory that
/// cannot be made, or a size that is not a whole number of bytes, stops the server at start
/// with a clear message.
#[tokio::test]
async fn the_store_keeps_to_its_size_and_its_directory() {
    let server = Server::start_with(dataset(), &[("HYDRO_ANSWER_STORE_BYTES", "100000")]);
    let base = &server.base;
    let (sid, _) = first_station(base).await;
    let url = format!("{base}/stations/{sid}/parameters/discharge-15min/values?format=csv");
    let first = get(&url).await;
    assert!(first.body.len() > 100_000);
    for _ in 0..3 {
        let again = get(&url).await;
        assert_eq!(again.body, first.body);
        assert!(again.header("content-length").is_none());
    }
    // A range of an answer too large to keep: the whole answer.
    let ranged = get_with(&url, &[("Range", "bytes=5-")]).await;
    assert_eq!(ranged.status, 200);
    assert_eq!(ranged.body, first.body);
    assert_eq!(metric(base, "hydro_answer_store_hits_total").await, 0);
    assert_eq!(metric(base, "hydro_answer_store_bytes").await, 0);
    assert_eq!(
        metric(base, "hydro_answer_store_copies_given_up_total").await,
        2,
        "the second and fourth request were admitted, and gave their copies up"
    );

    let err = common::serve_refused(&[("HYDRO_ANSWER_STORE_DIR", "/nonexistent/hydro-answers")]);
    assert!(err.contains("answer store in /nonexistent"), "{err}");
    for bad in ["-1", "lots", "1.5", "1e9"] {
        let err = common::serve_refused(&[("HYDRO_ANSWER_STORE_BYTES", bad)]);
        assert!(err.contains("answer_store_bytes"), "{bad}: {err}");
    }
}

/// A server killed hard cannot remove its answer store; the next server started in the same
/// directory does, and keeps its own.
#[tokio::test]
async fn a_killed_servers_store_is_removed_by_the_next() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().to_str().unwrap();
    let stores = || -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    };
    let mut killed = Server::start_with(dataset(), &[("HYDRO_ANSWER_STORE_DIR", dir)]);
    let first = stores();
    assert_eq!(first.len(), 1, "{first:?}");
    killed.child().kill().unwrap();
    killed.child().wait().unwrap();
    assert_eq!(stores(), first, "SIGKILL leaves the store behind");
    let next = Server::start_with(dataset(), &[("HYDRO_ANSWER_STORE_DIR", dir)]);
    let now = stores();
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now, first);
    assert!(get(&format!("{}/health", next.base)).await.status == 200);
}

/// A long answer is compressed in several jobs side by side (gzip, zstd): decoded, it is the
/// plain answer byte for byte, in every coding.
/// Value files' bytes are kept in memory once read (`value_cache_bytes`): answers made again
/// from them are the bytes of answers read from the files, whatever the budget, and the memory
/// held keeps to it.
#[tokio::test]
async fn value_bytes_kept_in_memory_keep_to_their_budget() {
    let held = server();
    let small = Server::start_with(dataset(), &[("HYDRO_VALUE_CACHE_BYTES", "100000")]);
    let none = Server::start_with(dataset(), &[("HYDRO_VALUE_CACHE_BYTES", "0")]);
    let (sid, _) = first_station(&held.base).await;
    let fresh = [("Cache-Control", "no-cache")];
    for query in [
        "format=parquet",
        "format=csv&from=2023-02-10T06:00:00Z&to=2023-11-20T00:00:00Z",
        "format=arrow&fields=value,timestamp",
        "format=parquet&fields=quality",
    ] {
        let path = format!("/stations/{sid}/parameters/discharge-15min/values?{query}");
        let read = get_with(&format!("{}{path}", none.base), &fresh).await;
        assert_eq!(read.status, 200, "{query}");
        for s in [&held, &small] {
            // Read and kept, then made from what was kept.
            for _ in 0..2 {
                let made = get_with(&format!("{}{path}", s.base), &fresh).await;
                assert!(made.body == read.body, "{query}: other bytes");
            }
        }
    }
    let gauge = "hydro_value_cache_bytes";
    assert!(metric(&held.base, gauge).await > 100_000);
    let kept = metric(&small.base, gauge).await;
    assert!(kept > 0 && kept <= 100_000, "{kept} bytes kept");
    assert_eq!(metric(&none.base, gauge).await, 0);
    for bad in ["-1", "lots", "1.5", "1e9"] {
        let err = common::serve_refused(&[("HYDRO_VALUE_CACHE_BYTES", bad)]);
        assert!(err.contains("value_cache_bytes"), "{bad}: {err}");
    }
}

#[tokio::test]
async fn long_answers_compress_in_parts() {
    let server = server();
    let base = &server.base;
    let (sid, _) = first_station(base).await;
    let url = format!("{base}/stations/{sid}/parameters/discharge-15min/values?format=csv");
    let plain = get(&url).await;
    assert!(plain.body.len() > 3 * 512 * 1024, "{}", plain.body.len());
    for coding in ["gzip", "zstd", "br"] {
        let c = get_with(&url, &[("Accept-Encoding", coding)]).await;
        assert_eq!(c.status, 200);
        assert_eq!(c.header("content-encoding").as_deref(), Some(coding));
        assert!(
            c.body.len() < plain.body.len() / 3,
            "{coding}: {}",
            c.body.len()
        );
        assert!(
            decode_body(coding, &c.body) == plain.body.to_vec(),
            "{coding}"
        );
        // Made again, the same bytes: its strong ETag, and ranges of it, hold.
        let again = get_with(
            &url,
            &[("Accept-Encoding", coding), ("Cache-Control", "no-cache")],
        )
        .await;
        assert_eq!(again.header("etag"), c.header("etag"), "{coding}");
        assert!(
            again.body == c.body,
            "{coding}: made twice, different bytes"
        );
    }
}

#[tokio::test]
async fn basic_variant_is_narrow() {
    let server = Server::start_with(dataset(), &[("HYDRO_VARIANT", "basic")]);
    let base = &server.base;
    let r = get(&format!("{base}/stations")).await.json();
    assert!(r.get("links").is_none());
    let sid = r["data"][0]["id"].as_str().unwrap().to_owned();
    for path in [
        format!("/stations/{sid}/characteristics"),
        format!("/stations/{sid}"),
    ] {
        assert_eq!(get(&format!("{base}{path}")).await.status, 404, "{path}");
    }
    // (`asOf=99` names no version: refused as not basic, not looked up.)
    for q in [
        "limit=1",
        "format=csv",
        "bbox=6,50,8,52",
        "sort=name",
        "asOf=99",
    ] {
        let r = get(&format!("{base}/stations?{q}")).await;
        assert_eq!(r.status, 400, "{q}");
        assert!(r.text().contains("basic"));
    }
    let v = format!("{base}/stations/{sid}/parameters/water-level-15min/values");
    assert_eq!(get(&format!("{v}?recent=1")).await.status, 400);
    let ok = get(&format!(
        "{v}?from=2023-03-01T00:00:00Z&to=2023-03-01T00:30:00Z"
    ))
    .await
    .json();
    assert_eq!(ok["data"].as_array().unwrap().len(), 3);
    assert!(ok.get("links").is_none());
    assert_eq!(
        get_with(&format!("{base}/stations"), &[("Accept", "text/csv")])
            .await
            .status,
        406
    );
}

/// A station list longer than a frame is streamed (no length, chunked) and is the same list
/// its pages give, in every format; sorted lists are in order; gzip decodes to the same bytes.
#[tokio::test]
async fn long_station_lists_stream_and_match_their_pages() {
    let dir = tempfile::tempdir().unwrap();
    generate(
        dir.path(),
        &["--stations", "300", "--years", "0", "--seed", "5"],
    );
    let server = Server::start_with(dir.path(), &[]);
    let base = &server.base;

    let whole = get(&format!("{base}/stations")).await;
    assert_eq!(whole.status, 200);
    assert_eq!(whole.header("content-length"), None, "not streamed");
    assert_eq!(
        whole.header("transfer-encoding").as_deref(),
        Some("chunked")
    );
    let doc = whole.json();
    assert_valid("stations", &doc);
    let data = doc["data"].as_array().unwrap().clone();
    assert_eq!(data.len(), 300);

    // Whole stations are written straight from the catalog; named fields go through a JSON
    // object per station. Naming every field must give the same items, byte for byte.
    let every = "id,name,type,state,operator,waterBodyId,waterBodyName,coordinates,riverKm,\
                 gaugeZero,groundLevel,elevation";
    let named = get(&format!("{base}/stations?fields={every}")).await.json();
    assert_eq!(named["data"].to_string(), doc["data"].to_string());
    let near = "near=10.0,51.0,500";
    let direct = get(&format!("{base}/stations?{near}")).await.json();
    let projected = get(&format!("{base}/stations?{near}&fields={every},distance")).await;
    assert!(
        direct["data"].as_array().unwrap().len() > 64,
        "near not streamed"
    );
    assert_eq!(
        projected.json()["data"].to_string(),
        direct["data"].to_string()
    );
    // So are stations with their included lists.
    let lists = "include=parameters,characteristics";
    let with_lists = get(&format!("{base}/stations?{lists}")).await.json();
    assert!(
        with_lists["data"][0]["parameters"][0]["id"].is_string(),
        "{}",
        with_lists["data"][0]
    );
    let named = get(&format!(
        "{base}/stations?{lists}&fields={every},parameters,characteristics"
    ))
    .await
    .json();
    assert_eq!(named["data"].to_string(), with_lists["data"].to_string());

    let mut paged = Vec::new();
    for offset in (0..300).step_by(70) {
        let page = get(&format!("{base}/stations?limit=70&offset={offset}")).await;
        paged.extend(page.json()["data"].as_array().unwrap().iter().cloned());
    }
    assert!(paged == data, "pages differ from the whole list");

    let ids: Vec<&str> = data.iter().map(|s| s["id"].as_str().unwrap()).collect();
    let ndjson = get(&format!("{base}/stations?format=ndjson")).await.text();
    let lines: Vec<Value> = ndjson
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines == data, "NDJSON differs from JSON");
    let geo = get(&format!("{base}/stations?format=geojson")).await.json();
    let geo_ids: Vec<&str> = geo["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(geo_ids, ids);
    let geo_named = get(&format!("{base}/stations?format=geojson&fields={every}"))
        .await
        .json();
    assert_eq!(
        geo_named["features"].to_string(),
        geo["features"].to_string()
    );
    let csv = get(&format!("{base}/stations?format=csv")).await.text();
    let csv_ids: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(csv_ids, ids);
    let xml = get(&format!("{base}/stations?format=xml")).await.text();
    assert_eq!(xml.matches("<station>").count(), 300);
    assert!(xml.ends_with("</data></response>"));
    // Named fields: the columns the items have, though the first station may lack one.
    let some = get(&format!("{base}/stations?format=csv&fields=id,riverKm")).await;
    assert!(some.text().starts_with("id,riverKm\r\n"), "{}", some.text());
    assert_eq!(some.text().lines().count(), 301);

    let by_name = get(&format!("{base}/stations?sort=-name")).await.json();
    let names: Vec<String> = by_name["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_lowercase())
        .collect();
    assert_eq!(names.len(), 300);
    assert!(
        names.windows(2).all(|w| w[0] >= w[1]),
        "not by name, descending"
    );
    let by_km = get(&format!("{base}/stations?sort=riverKm")).await.json();
    let kms: Vec<Option<f64>> = by_km["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["riverKm"].as_f64())
        .collect();
    let known = kms.iter().take_while(|k| k.is_some()).count();
    assert!(known > 0 && known < 300, "{known} stations with riverKm");
    assert!(kms[known..].iter().all(Option::is_none), "missing not last");
    assert!(kms[..known].windows(2).all(|w| w[0] <= w[1]));

    let gz = get_with(&format!("{base}/stations"), &[("Accept-Encoding", "gzip")]).await;
    assert_eq!(gz.header("content-encoding").as_deref(), Some("gzip"));
    assert!(decode_body("gzip", &gz.body) == whole.body.to_vec());
}

/// Sorted by value with only the value asked for: the timestamp that breaks ties is read
/// anyway (it was a 500, found by schemathesis).
#[tokio::test]
async fn sorting_by_a_column_without_the_timestamp_in_fields() {
    let server = server();
    let b = &server.base;
    let list = get(&format!("{b}/stations?limit=1&fields=id")).await.json();
    let id = list["data"][0]["id"].as_str().unwrap().to_owned();
    let url = format!("{b}/stations/{id}/parameters/water-level-15min/values");
    let top = get(&format!("{url}?sort=-value&fields=value&limit=5")).await;
    assert_eq!(top.status, 200, "{}", top.text());
    let values: Vec<f64> = top.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"].as_f64().unwrap())
        .collect();
    assert_eq!(values.len(), 5);
    assert!(values.windows(2).all(|w| w[0] >= w[1]), "{values:?}");
    let by_quality = get(&format!(
        "{url}?sort=quality&fields=quality&limit=3&format=csv"
    ))
    .await;
    assert_eq!(by_quality.status, 200, "{}", by_quality.text());
    assert!(by_quality.text().starts_with("quality\r\n"));
}

/// `near` and `bbox` take lon,lat; typed the other way round (lat,lon, as maps show it) they
/// lie far from every station, and the answer links the same query with the two swapped,
/// which finds Köln: with or without a radius, on the station list, many-series values and
/// the newest values. Coordinates near the stations, or far from them both ways, get no link.
#[tokio::test]
async fn a_swapped_near_links_the_list_it_meant() {
    let server = server();
    let b = &server.base;
    let wrong = get(&format!("{b}/stations?near=50.94,6.96,20")).await;
    assert_eq!(wrong.status, 200);
    let body = wrong.json();
    assert_eq!(body["data"], serde_json::json!([]));
    let alternate = body["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["rel"] == "alternate")
        .expect("an alternate link")["href"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        alternate.ends_with("/stations?near=6.96,50.94,20"),
        "{alternate}"
    );
    let link = wrong.header("link").unwrap_or_default();
    assert!(link.contains("rel=\"alternate\""), "{link}");
    let right = get(&alternate).await.json();
    assert_eq!(right["data"][0]["name"], "Köln", "{right}");
    // The page for people says so too, and links the list meant.
    let page = get(&format!("{b}/stations?near=50.94,6.96,20&format=html"))
        .await
        .text();
    assert!(
        page.contains("near=6.96,50.94,20") && page.contains("rel=\"alternate\""),
        "{page}"
    );
    let nowhere = get(&format!("{b}/stations?near=-170,-80,20")).await.json();
    assert_eq!(alternate_of(&nowhere), None);
    // Without a radius every station is listed either way; the link is there all the same.
    let unbounded = get(&format!("{b}/stations?near=50.94,6.96&limit=1")).await;
    let body = unbounded.json();
    assert_eq!(body["data"].as_array().map(Vec::len), Some(1));
    let href = alternate_of(&body).expect("an alternate link without a radius");
    assert!(
        href.ends_with("/stations?limit=1&near=6.96,50.94"),
        "{href}"
    );
    assert_eq!(get(&href).await.json()["data"][0]["name"], "Köln");
    // Written the right way round, or far from everything both ways: no link.
    let right = get(&format!("{b}/stations?near=6.96,50.94&limit=1"))
        .await
        .json();
    assert_eq!(alternate_of(&right), None);
    // A box typed minLat,minLon,maxLat,maxLon.
    let boxed = get(&format!("{b}/stations?bbox=50,6,52,8")).await;
    assert_eq!(boxed.status, 200);
    assert!(
        boxed
            .header("link")
            .is_some_and(|l| l.contains("title=\"bbox takes")),
        "{:?}",
        boxed.header("link")
    );
    let href = alternate_of(&boxed.json()).expect("an alternate link for bbox");
    assert!(href.ends_with("/stations?bbox=6,50,8,52"), "{href}");
    let meant = get(&href).await.json();
    assert!(meant["data"].as_array().is_some_and(|d| !d.is_empty()));
    assert_eq!(alternate_of(&meant), None);
    // The answers that select stations the same way carry it too.
    let values = get(&format!(
        "{b}/values?bbox=50,6,52,8&observedProperties=waterLevel&recent=1"
    ))
    .await;
    assert_eq!(values.status, 200, "{}", values.text());
    assert!(
        values
            .header("link")
            .is_some_and(|l| l.contains("rel=\"alternate\"")),
        "{:?}",
        values.header("link")
    );
    let href = alternate_of(&values.json()).expect("an alternate link on values");
    assert!(href.contains("bbox=6,50,8,52"), "{href}");
    let latest = get(&format!(
        "{b}/latest?near=50.94,6.96,30&observedProperties=waterLevel"
    ))
    .await
    .json();
    let href = alternate_of(&latest).expect("an alternate link on latest");
    assert!(href.contains("near=6.96,50.94,30"), "{href}");
}

/// The `href` of an answer's `rel="alternate"` link.
fn alternate_of(body: &serde_json::Value) -> Option<String> {
    body["links"]
        .as_array()?
        .iter()
        .find(|l| l["rel"] == "alternate")?["href"]
        .as_str()
        .map(str::to_owned)
}
