//! The contract details real clients trip on: conditional requests as RFC 9110 says, `HEAD`
//! telling the length wherever ranges are offered (readers of Parquet over HTTP ask it first),
//! `near` beyond half the Earth, and the catalog as Arrow and Parquet tables.

mod common;

use common::{Server, batches, dataset, get, get_with, request};
use datafusion::arrow::array::Array;
use std::sync::OnceLock;

fn server() -> &'static Server {
    static S: OnceLock<Server> = OnceLock::new();
    S.get_or_init(Server::shared)
}

async fn first_station(base: &str) -> String {
    get(&format!("{base}/stations?limit=1&types=surfaceWater"))
        .await
        .json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn if_none_match_takes_lists_star_and_weak_tags() {
    let base = &server().base;
    let sid = first_station(base).await;
    let url = format!("{base}/stations/{sid}/parameters/water-level-15min/values?recent=10");
    let r = get(&url).await;
    assert_eq!(r.status, 200);
    let tag = r.header("etag").unwrap();
    let weak = format!("W/{tag}");
    for (inm, want) in [
        (format!("\"nope\", {tag}"), 304),
        (format!("\"a\",\"b\",{weak}"), 304),
        ("*".to_owned(), 304),
        ("\"nope\", W/\"other\"".to_owned(), 200),
    ] {
        let r = get_with(&url, &[("If-None-Match", &inm)]).await;
        assert_eq!(r.status, want, "If-None-Match: {inm}");
        if want == 304 {
            assert!(r.body.is_empty());
            assert_eq!(r.header("etag").as_deref(), Some(tag.as_str()));
            assert!(r.header("last-modified").is_some());
        }
    }
    // `*` matches a current representation only: a request that has none is answered as
    // without the header.
    for (bad, status) in [
        (format!("{url}&recnt=1"), 400),
        (format!("{base}/stations/no-such-station"), 404),
    ] {
        let r = get_with(&bad, &[("If-None-Match", "*")]).await;
        assert_eq!(r.status, status, "{bad}");
    }
    // The same for a catalog answer.
    let stations = format!("{base}/stations?limit=3");
    let tag = get(&stations).await.header("etag").unwrap();
    let r = get_with(&stations, &[("If-None-Match", &format!("W/{tag}"))]).await;
    assert_eq!(r.status, 304);
}

#[tokio::test]
async fn if_modified_since_where_last_modified_is_sent() {
    let base = &server().base;
    let url = format!("{base}/stations?limit=2");
    let r = get(&url).await;
    let modified = r.header("last-modified").expect("Last-Modified");
    let earlier = "Mon, 01 Jan 2001 00:00:00 GMT";
    let later = "Fri, 01 Jan 2100 00:00:00 GMT";
    for (since, want) in [
        (modified.as_str(), 304),
        (later, 304),
        (earlier, 200),
        ("not a date", 200),
    ] {
        let r = get_with(&url, &[("If-Modified-Since", since)]).await;
        assert_eq!(r.status, want, "If-Modified-Since: {since}");
    }
    // If-None-Match wins: a tag that does not match means a full answer whatever the date.
    let r = get_with(
        &url,
        &[("If-Modified-Since", later), ("If-None-Match", "\"other\"")],
    )
    .await;
    assert_eq!(r.status, 200);
    // A bad request stays a bad request.
    let r = get_with(&format!("{url}&limit2=1"), &[("If-Modified-Since", later)]).await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn head_tells_the_length_where_ranges_are_offered() {
    let base = &server().base;
    let sid = first_station(base).await;
    for format in ["parquet", "csv", "arrow"] {
        let url = format!(
            "{base}/stations/{sid}/parameters/discharge-15min/values?format={format}&from=2023-02-01T00:00:00Z"
        );
        let head = request("HEAD", &url, &[]).await;
        assert_eq!(head.status, 200, "{format}");
        assert!(head.body.is_empty());
        assert_eq!(head.header("accept-ranges").as_deref(), Some("bytes"));
        let len: usize = head
            .header("content-length")
            .unwrap_or_else(|| panic!("{format}: HEAD offers ranges without a length"))
            .parse()
            .unwrap();
        let whole = get(&url).await;
        assert_eq!(whole.body.len(), len, "{format}");
        assert_eq!(whole.header("etag"), head.header("etag"));
        // What a range reader does next: the footer, then a part in the middle.
        let tail = get_with(&url, &[("Range", "bytes=-8")]).await;
        assert_eq!(tail.status, 206);
        assert_eq!(&tail.body[..], &whole.body[len - 8..]);
        let mid = get_with(&url, &[("Range", &format!("bytes=100-{}", len / 2))]).await;
        assert_eq!(mid.status, 206);
        assert_eq!(&mid.body[..], &whole.body[100..=len / 2]);
    }
}

#[tokio::test]
async fn without_a_response_store_ranges_are_not_offered() {
    let server = Server::start_with(dataset(), &[("HYDRO_ANSWER_STORE_BYTES", "0")]);
    let base = &server.base;
    let sid = first_station(base).await;
    let url = format!("{base}/stations/{sid}/parameters/discharge-15min/values?format=parquet");
    for method in ["HEAD", "GET"] {
        let r = request(method, &url, &[]).await;
        assert_eq!(r.status, 200);
        assert!(r.header("accept-ranges").is_none(), "{method}");
    }
}

/// An answer larger than the answer store cannot be cut into ranges: `HEAD` and `GET` do not
/// offer them, and the answer is still whole.
#[tokio::test]
async fn an_answer_larger_than_the_store_offers_no_ranges() {
    let server = Server::start_with(dataset(), &[("HYDRO_ANSWER_STORE_BYTES", "300000")]);
    let base = &server.base;
    let sid = first_station(base).await;
    let url = format!("{base}/stations/{sid}/parameters/discharge-15min/values?format=csv");
    let head = request("HEAD", &url, &[]).await;
    assert_eq!(head.status, 200);
    assert!(head.header("accept-ranges").is_none(), "{:?}", head.headers);
    let whole = get(&url).await;
    assert!(whole.body.len() > 300_000, "larger than the store");
    let ranged = get_with(&url, &[("Range", "bytes=0-99")]).await;
    assert_eq!(ranged.status, 200, "the whole answer, not a part");
    assert_eq!(ranged.body, whole.body);
}

#[tokio::test]
async fn near_beyond_half_the_earth_or_without_a_radius_is_every_station_nearest_first() {
    let base = &server().base;
    let total =
        get(&format!("{base}/stations?limit=0")).await.json()["meta"]["pagination"]["total"]
            .as_u64()
            .unwrap();
    for near in ["7,50,30000", "7,50,1e9", "7,50", "-170,-80,20100"] {
        let r = get(&format!("{base}/stations?near={near}")).await;
        assert_eq!(r.status, 200, "{near}: {}", r.text());
        let data = r.json()["data"].as_array().unwrap().clone();
        assert_eq!(data.len() as u64, total, "{near}");
        let distances: Vec<f64> = data
            .iter()
            .map(|s| s["distance"].as_f64().unwrap())
            .collect();
        assert!(distances.windows(2).all(|w| w[0] <= w[1]), "{near}");
    }
    let nearest = get(&format!("{base}/stations?near=7,50&limit=1"))
        .await
        .json();
    assert_eq!(nearest["data"].as_array().unwrap().len(), 1);
    for bad in ["7,50,0", "7,50,-5", "7", "7,95", "7,50,x"] {
        let r = get(&format!("{base}/stations?near={bad}")).await;
        assert_eq!(r.status, 400, "{bad}");
    }
}

fn csv_header(text: &str) -> Vec<String> {
    text.lines()
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn the_catalog_comes_as_arrow_and_parquet_tables() {
    let base = &server().base;
    let sid = first_station(base).await;
    let lists = [
        format!("{base}/stations?sort=-name"),
        format!("{base}/stations?fields=id,name,location.lat&near=7,50,300"),
        format!("{base}/stations/{sid}/parameters"),
        format!("{base}/stations/{sid}/characteristics"),
        format!("{base}/stations/{sid}/characteristics?limit=2&offset=1"),
    ];
    for url in &lists {
        let sep = if url.contains('?') { '&' } else { '?' };
        let json = get(url).await.json();
        let ids: Vec<String> = json["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_owned())
            .collect();
        let header = csv_header(&get(&format!("{url}{sep}format=csv")).await.text());
        for format in ["arrow", "parquet"] {
            let r = get(&format!("{url}{sep}format={format}")).await;
            assert_eq!(
                r.status,
                200,
                "{url} {format}: {}",
                String::from_utf8_lossy(&r.body)
            );
            let media = if format == "arrow" {
                "application/vnd.apache.arrow.stream"
            } else {
                "application/vnd.apache.parquet"
            };
            assert_eq!(r.header("content-type").as_deref(), Some(media));
            let batches = batches(format, &r.body);
            let schema = batches[0].schema();
            let columns: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            // The CSV answer's columns, in its order; a station table without `fields` then
            // carries every other plain field (river km, gauge zero, ...).
            let every_field = url.contains("/stations?") && !url.contains("fields=");
            match every_field {
                true => assert_eq!(
                    columns[..header.len().min(columns.len())],
                    header[..],
                    "{url} {format}: the CSV answer's columns first"
                ),
                false => assert_eq!(columns, header, "{url} {format}: the CSV answer's columns"),
            }
            let id_col = schema.index_of("id").unwrap();
            let got: Vec<String> = batches
                .iter()
                .flat_map(|b| {
                    let col = b.column(id_col).clone();
                    let col = col
                        .as_any()
                        .downcast_ref::<datafusion::arrow::array::StringArray>()
                        .unwrap()
                        .clone();
                    (0..col.len()).map(move |i| col.value(i).to_owned())
                })
                .collect();
            assert_eq!(got, ids, "{url} {format}: the JSON answer's rows, in order");
        }
    }
    // Coordinates are numbers and times are times, so a join needs no parsing.
    let r = get(&format!("{base}/stations?format=parquet")).await;
    let schema = batches("parquet", &r.body)[0].schema();
    use datafusion::arrow::datatypes::DataType;
    assert_eq!(
        schema
            .field_with_name("coordinates.lat")
            .unwrap()
            .data_type(),
        &DataType::Float64
    );
    // A station table carries every plain field (a CSV keeps the standard's columns): river
    // km and the gauge's datum are what values are read against.
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    for field in [
        "waterBodyId",
        "riverKm",
        "gaugeZero.value",
        "gaugeZero.datum",
    ] {
        assert!(names.iter().any(|n| n == field), "{field} in {names:?}");
    }
    assert_eq!(
        schema.field_with_name("riverKm").unwrap().data_type(),
        &DataType::Float64
    );
    let one = get(&format!("{base}/stations/{sid}?format=arrow")).await;
    let one_schema = batches("arrow", &one.body)[0].schema();
    assert!(
        one_schema.field_with_name("gaugeZero.value").is_ok(),
        "{one_schema:?}"
    );
    let csv = get(&format!("{base}/stations?format=csv&limit=1"))
        .await
        .text();
    assert!(
        !csv.lines().next().unwrap_or_default().contains("riverKm"),
        "{csv}"
    );
    let r = get(&format!(
        "{base}/stations/{sid}/characteristics?format=arrow"
    ))
    .await;
    let schema = batches("arrow", &r.body)[0].schema();
    assert!(matches!(
        schema
            .field_with_name("period.start")
            .map(|f| f.data_type().clone()),
        Ok(DataType::Timestamp(_, Some(_))) | Err(_)
    ));
    // GeoJSON stays stations-only.
    let r = get(&format!("{base}/stations/{sid}/parameters?format=geojson")).await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn the_root_redirects_to_the_api() {
    let base = &server().base;
    let root = base.trim_end_matches("/v1");
    let r = get(&format!("{root}/")).await;
    assert_eq!(r.status, 308);
    assert_eq!(r.header("location").as_deref(), Some("/v1/"));
}

/// A field named again in `sort` cannot change the order: it is left out, not refused (a
/// client generated from the OpenAPI document may well send it).
#[tokio::test]
async fn a_sort_key_named_again_changes_nothing() {
    let base = &server().base;
    let once = get(&format!("{base}/stations?sort=-state,name")).await;
    let twice = get(&format!("{base}/stations?sort=-state,name,state,-name")).await;
    assert_eq!(twice.status, 200);
    assert_eq!(once.json()["data"], twice.json()["data"]);
}

/// Latitudes do not wrap: a box's two latitudes bound it in either order.
#[tokio::test]
async fn a_bbox_takes_its_latitudes_in_either_order() {
    let base = &server().base;
    let ordered = get(&format!("{base}/stations?bbox=6,49,10,52")).await;
    let swapped = get(&format!("{base}/stations?bbox=6,52,10,49")).await;
    assert_eq!(swapped.status, 200);
    let ids = |r: &common::Resp| r.json()["data"].clone();
    assert!(!ids(&ordered).as_array().unwrap().is_empty());
    assert_eq!(ids(&ordered), ids(&swapped));
}

/// Times in the ISO 8601 forms users type, with an offset, mean the same instant; a time
/// without an offset is refused with a message that names forms to use.
#[tokio::test]
async fn times_take_the_iso_forms_users_type() {
    let base = &server().base;
    let sid = first_station(base).await;
    let values = format!("{base}/stations/{sid}/parameters/water-level-15min/values");
    let want = get(&format!(
        "{values}?from=2023-03-01T00:00:00%2B01:00&to=2023-03-01T06:00:00Z"
    ))
    .await
    .json()["data"]
        .clone();
    assert!(!want.as_array().unwrap().is_empty());
    for from in [
        "2023-03-01T00:00%2B01:00",
        "2023-03-01T00:00:00.000%2B0100",
        "2023-03-01T00:00%2B01",
        "2023-02-28T23:00:00Z",
        "2023-03-01T00:00:00+01:00",
    ] {
        let r = get(&format!("{values}?from={from}&to=2023-03-01T06:00:00Z")).await;
        assert_eq!(r.status, 200, "{from}: {}", r.text());
        assert_eq!(r.json()["data"], want, "{from}");
    }
    let r = get(&format!("{values}?from=2023-03-01T00:00:00")).await;
    assert_eq!(r.status, 400);
    let reason = r.json()["invalidParams"][0]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        reason.contains("2024-03-01T00:00:00+01:00") && reason.contains("offset"),
        "{reason}"
    );
}

/// The landing page's templated links say so, and one real station is linked.
#[tokio::test]
async fn landing_links_mark_templates_and_name_a_real_station() {
    let base = &server().base;
    let links = get(&format!("{base}/")).await.json()["links"].clone();
    let links = links.as_array().unwrap();
    for l in links {
        let href = l["href"].as_str().unwrap();
        assert_eq!(
            l["templated"].as_bool().unwrap_or(false),
            href.contains('{'),
            "{l}"
        );
    }
    let example = links.iter().find(|l| l["rel"] == "example").unwrap();
    let r = get(example["href"].as_str().unwrap()).await;
    assert_eq!(r.status, 200);
    assert!(r.json()["data"]["id"].is_string());
}

/// An `offset` beyond the end links pages with rows, not count-only pages.
#[tokio::test]
async fn links_beyond_the_end_lead_back_to_rows() {
    let base = &server().base;
    let total =
        get(&format!("{base}/stations?limit=0")).await.json()["meta"]["pagination"]["total"]
            .as_u64()
            .unwrap();
    for query in ["offset=1000", "offset=1000&limit=5"] {
        let r = get(&format!("{base}/stations?{query}")).await.json();
        assert_eq!(r["data"].as_array().unwrap().len(), 0);
        for l in r["links"].as_array().unwrap() {
            if ["first", "prev", "last"].contains(&l["rel"].as_str().unwrap()) {
                let page = get(l["href"].as_str().unwrap()).await.json();
                assert!(!page["data"].as_array().unwrap().is_empty(), "{query}: {l}");
            }
        }
        assert!(total > 0);
    }
}

/// The memory the dataset holds is reported together on `/metrics`: the footer cache and the
/// value cache with their budgets, and the catalog.
#[tokio::test]
async fn metrics_report_the_memory_budgets_together() {
    let base = &server().base;
    let sid = first_station(base).await;
    get(&format!(
        "{base}/stations/{sid}/parameters/water-level-15min/values?recent=10"
    ))
    .await;
    let text = get(&format!("{}/metrics", base.trim_end_matches("/v1")))
        .await
        .text();
    let gauge = |name: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} in {text}"))
    };
    assert!(gauge("hydro_memory_bytes{part=\"catalog\"}") > 0.0);
    assert!(gauge("hydro_memory_bytes{part=\"files\"}") > 0.0);
    assert!(
        gauge("hydro_memory_bytes{part=\"footer_cache\"}") > 0.0,
        "a month was read"
    );
    assert!(gauge("hydro_memory_budget_bytes{part=\"footer_cache\"}") > 0.0);
    assert_eq!(
        gauge("hydro_memory_budget_bytes{part=\"value_cache\"}"),
        (64 << 20) as f64
    );
    assert!(
        gauge("hydro_memory_bytes{part=\"files_cache\"}") > 0.0,
        "a station's files were decoded"
    );
    assert_eq!(
        gauge("hydro_memory_budget_bytes{part=\"files_cache\"}"),
        (128 << 20) as f64
    );
    // The parameters table gives every series' newest value; the gauge counts them.
    let mut known = 0.0;
    for _ in 0..200 {
        let text = get(&format!("{}/metrics", base.trim_end_matches("/v1")))
            .await
            .text();
        known = text
            .lines()
            .find(|l| l.starts_with("hydro_newest_values_known "))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("hydro_newest_values_known in {text}"));
        if known > 0.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(known > 0.0, "newest values found at start: {known}");
}

/// `q` finds stations by name or water body name, however accents and case are typed, and
/// combines with the other filters; a name typed where an id goes is pointed to the search.
#[tokio::test]
async fn stations_are_found_by_name() {
    let server = Server::start();
    let b = &server.base;
    let all = get(&format!("{b}/stations?limit=1000")).await.json();
    let first = &all["data"][0];
    let name = first["name"].as_str().unwrap().to_owned();
    let word = name.split([' ', '-']).next().unwrap().to_owned();
    for typed in [word.to_uppercase(), word.to_lowercase()] {
        let found = get(&format!("{b}/stations?q={}", encode(&typed)))
            .await
            .json();
        let data = found["data"].as_array().unwrap();
        let names: Vec<&str> = data.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert!(names.contains(&name.as_str()), "{typed}: {names:?}");
        let has_word = |s: &serde_json::Value| {
            ["name", "waterBodyName"].iter().any(|k| {
                s[*k]
                    .as_str()
                    .is_some_and(|t| t.to_lowercase().contains(&word.to_lowercase()))
            })
        };
        assert!(data.iter().all(has_word), "{typed}: {names:?}");
        assert!(
            data.len() < all["data"].as_array().unwrap().len(),
            "{typed} narrows"
        );
    }
    // By water body, combined with a type filter.
    if let Some(water) = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|s| s["waterBodyName"].as_str())
    {
        let found = get(&format!(
            "{b}/stations?q={}&types=surfaceWater",
            encode(water)
        ))
        .await;
        assert_eq!(found.status, 200);
        let data = found.json()["data"].as_array().unwrap().clone();
        assert!(!data.is_empty(), "{water}");
        assert!(data.iter().all(|s| s["type"] == "surfaceWater"));
    }
    let none = get(&format!("{b}/stations?q=zzzzqqq")).await.json();
    assert_eq!(none["data"], serde_json::json!([]));
    assert_eq!(get(&format!("{b}/stations?q=%20-%20")).await.status, 400);
    let missing = get(&format!("{b}/stations/koeln")).await;
    assert_eq!(missing.status, 404);
    assert!(
        missing.json()["detail"]
            .as_str()
            .unwrap()
            .ends_with("/stations?q=koeln"),
        "{}",
        missing.text()
    );
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
