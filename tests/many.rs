//! `GET /v1/values`: many series in one answer, checked against the single-series endpoint
//! (the same rows, byte for byte in CSV and NDJSON but for the two id columns in front).

mod common;

use common::{Server, get, request, send};

/// Rows of a CSV answer without its header.
fn rows(csv: &str) -> Vec<String> {
    csv.lines().skip(1).map(str::to_owned).collect()
}

/// The series a filter selects, as the single-series endpoints see them: (station, parameter)
/// by station id, then parameter id.
async fn series_of(b: &str, station_filter: &str, parameters: &[&str]) -> Vec<(String, String)> {
    let list = get(&format!(
        "{b}/stations?{station_filter}&limit=1000&fields=id"
    ))
    .await
    .json();
    let mut ids: Vec<String> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    let mut out = Vec::new();
    for id in ids {
        let ps = get(&format!("{b}/stations/{id}/parameters")).await.json();
        let mut pids: Vec<String> = ps["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap().to_owned())
            .filter(|p| parameters.contains(&p.as_str()))
            .collect();
        pids.sort();
        out.extend(pids.into_iter().map(|p| (id.clone(), p)));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_series_match_the_single_series_answers() {
    let server = Server::start();
    let b = &server.base;
    let windows = [
        "from=2023-03-10T00:00:00Z&to=2023-04-20T12:00:00Z",
        "recent=5",
        "last=P2D",
        "",
    ];
    let filters = [
        "types=surfaceWater",
        "states=BY,DE-NW",
        "bbox=5,47,16,56",
        "near=10,51,300",
    ];
    let parameters = ["water-level-15min", "discharge-15min"];
    for filter in filters {
        let series = series_of(b, filter, &parameters).await;
        assert!(!series.is_empty(), "{filter}");
        for window in windows {
            let mut want = Vec::new();
            for (s, p) in &series {
                let one = get(&format!(
                    "{b}/stations/{s}/parameters/{p}/values?format=csv&{window}"
                ))
                .await;
                assert_eq!(one.status, 200);
                want.extend(
                    rows(&one.text())
                        .into_iter()
                        .map(|r| format!("{s},{p},{r}")),
                );
            }
            let url = format!(
                "{b}/values?{filter}&parameters={}&{window}&format=csv",
                parameters.join(",")
            );
            let many = get(&url).await;
            assert_eq!(many.status, 200, "{url}: {}", many.text());
            let text = many.text();
            assert!(
                text.starts_with("stationId,parameterId,timestamp,value,quality\r\n"),
                "{text:.80}"
            );
            assert_eq!(rows(&text), want, "{url}");
            // NDJSON: the same rows as objects.
            let nd = get(&url.replace("format=csv", "format=ndjson"))
                .await
                .text();
            assert_eq!(nd.lines().count(), want.len(), "{url}");
            // Pages: the same rows in slices, with the total.
            let paged = get(&format!("{url}&limit=7&offset=3")).await;
            assert_eq!(
                paged.header("x-total-count"),
                Some(want.len().to_string()),
                "{url}"
            );
            let end = (3 + 7).min(want.len());
            assert_eq!(
                rows(&paged.text()),
                want[3.min(want.len())..end].to_vec(),
                "{url}"
            );
        }
    }
    // observedProperties select as parameters do; fields keep the id columns.
    let by_property = get(&format!(
        "{b}/values?types=surfaceWater&observedProperties=waterLevel&recent=2&format=csv"
    ))
    .await;
    let by_id = get(&format!(
        "{b}/values?types=surfaceWater&parameters=water-level-15min&recent=2&format=csv"
    ))
    .await;
    assert_eq!(by_property.status, 200, "{}", by_property.text());
    assert_eq!(by_property.text(), by_id.text());
    // One no parameter has is a 400 that lists those there are.
    let unknown = get(&format!(
        "{b}/values?observedProperties=waterlevel&recent=2"
    ))
    .await;
    assert_eq!(unknown.status, 400);
    let problem = unknown.json();
    assert_eq!(problem["invalidParams"][0]["name"], "observedProperties");
    let reason = problem["invalidParams"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "'waterlevel' is not an observed property of any station; the archive has "
        ) && reason.contains("waterLevel")
            && reason.contains("discharge"),
        "{reason}"
    );
    let some = get(&format!("{b}/values?types=surfaceWater&parameters=water-level-15min&recent=2&format=csv&fields=stationId,value")).await;
    assert!(
        some.text().starts_with("stationId,parameterId,value\r\n"),
        "{}",
        some.text()
    );
    // JSON: an envelope with the page.
    let json = get(&format!(
        "{b}/values?types=surfaceWater&parameters=water-level-15min&recent=2&limit=3"
    ))
    .await
    .json();
    assert_eq!(json["data"].as_array().unwrap().len(), 3);
    assert!(json["data"][0]["stationId"].is_string());
}

/// A Parquet answer copies each month wholly inside the window as it is stored, with the
/// series' ids as chunks made for it, and encodes the months the window cuts: its rows are the
/// Arrow IPC answer's (made from decoded rows only), and readers find its page index.
#[tokio::test]
async fn parquet_answers_join_stored_months_to_their_ids() {
    use datafusion::arrow::array::RecordBatch;
    use datafusion::arrow::compute::cast;
    use datafusion::arrow::datatypes::DataType;
    use datafusion::arrow::ipc::reader::StreamReader;
    use datafusion::parquet::arrow::arrow_reader::{
        ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
    };
    use datafusion::parquet::file::metadata::PageIndexPolicy;

    // Plain text columns, so that answers compare whatever their dictionaries.
    let plain = |batches: Vec<RecordBatch>| -> Vec<Vec<datafusion::arrow::array::ArrayRef>> {
        batches
            .iter()
            .map(|b| {
                b.columns()
                    .iter()
                    .map(|c| match c.data_type() {
                        DataType::Dictionary(..) => cast(c, &DataType::Utf8).unwrap(),
                        _ => c.clone(),
                    })
                    .collect()
            })
            .collect()
    };
    let rows_of = |columns: Vec<Vec<datafusion::arrow::array::ArrayRef>>| {
        // One table per answer: row groups and batches need not line up.
        let n = columns.first().map_or(0, |c| c.len());
        (0..n)
            .map(|i| {
                let arrays: Vec<&dyn datafusion::arrow::array::Array> =
                    columns.iter().map(|b| b[i].as_ref()).collect();
                datafusion::arrow::compute::concat(&arrays).unwrap()
            })
            .collect::<Vec<_>>()
    };
    let server = Server::start();
    let b = &server.base;
    for window in [
        "from=2023-01-15T00:00:00Z&to=2023-07-15T00:00:00Z",
        "",
        "last=P70D",
    ] {
        let url = format!(
            "{b}/values?types=surfaceWater&parameters=water-level-15min,discharge-15min&{window}"
        );
        let parquet = get(&format!("{url}&format=parquet")).await;
        assert_eq!(parquet.status, 200, "{}", parquet.text());
        let arrow = get(&format!("{url}&format=arrow")).await;
        let from_parquet = ParquetRecordBatchReaderBuilder::try_new(parquet.body.clone())
            .unwrap()
            .build()
            .unwrap()
            .map(|b| b.unwrap())
            .collect::<Vec<_>>();
        let from_arrow = StreamReader::try_new(std::io::Cursor::new(arrow.body.to_vec()), None)
            .unwrap()
            .map(|b| b.unwrap())
            .collect::<Vec<_>>();
        assert_eq!(from_parquet[0].schema().fields().len(), 5);
        let rows = |b: &[RecordBatch]| b.iter().map(|b| b.num_rows()).sum::<usize>();
        assert!(rows(&from_arrow) > 5_000, "{window}");
        assert_eq!(rows(&from_parquet), rows(&from_arrow), "{window}");
        assert_eq!(
            rows_of(plain(from_parquet)),
            rows_of(plain(from_arrow)),
            "{window}"
        );
        let meta = ArrowReaderMetadata::load(
            &parquet.body,
            ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required),
        )
        .unwrap();
        // Stored months are row groups of a month of 15-minute values each.
        let groups = meta.metadata().row_groups();
        let months = groups
            .iter()
            .filter(|g| [2_688, 2_784, 2_880, 2_976].contains(&g.num_rows()))
            .count();
        assert!(months > 2, "{window}: {months} of {}", groups.len());
        assert!(meta.metadata().offset_index().is_some(), "{window}");
    }
}

#[tokio::test]
async fn bad_and_empty_selections() {
    let server = Server::start_with(common::dataset(), &[("HYDRO_MAX_SERIES_PER_REQUEST", "5")]);
    let b = &server.base;
    let problem = |r: &common::Resp, name: &str| {
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(r.json()["invalidParams"][0]["name"], name, "{}", r.text());
    };
    problem(&get(&format!("{b}/values?recent=1")).await, "parameters");
    // Unknown ids are 404s, as on the single-series endpoint.
    for url in [
        "values?parameters=no-such-thing&recent=1",
        "values?stations=nowhere&parameters=water-level-15min",
    ] {
        assert_eq!(get(&format!("{b}/{url}")).await.status, 404, "{url}");
    }
    problem(
        &get(&format!("{b}/values?parameters=water-level-15min&recent=1")).await,
        "parameters",
    );
    problem(
        &get(&format!(
            "{b}/values?parameters=water-level-15min&recent=1&last=P1D&states=BY"
        ))
        .await,
        "last",
    );
    problem(
        &get(&format!(
            "{b}/values?parameters=water-level-15min&format=xml&states=BY"
        ))
        .await,
        "format",
    );
    let r = get(&format!("{b}/values?parameters=water-level-15min&from=2024-01-02T00:00:00Z&to=2024-01-01T00:00:00Z&states=BY")).await;
    assert_eq!(r.status, 400, "{}", r.text());
    // An empty selection is an empty answer, not an error.
    let empty = get(&format!(
        "{b}/values?parameters=water-level-15min&bbox=0,0,1,1&format=csv&limit=10"
    ))
    .await;
    assert_eq!(empty.status, 200);
    assert_eq!(
        empty.text(),
        "stationId,parameterId,timestamp,value,quality\r\n"
    );
    assert_eq!(empty.header("x-total-count").as_deref(), Some("0"));
    let empty = get(&format!(
        "{b}/values?parameters=water-level-15min&bbox=0,0,1,1"
    ))
    .await
    .json();
    assert_eq!(empty["data"], serde_json::json!([]));
}

#[tokio::test]
async fn latest_values_are_the_newest_of_each_series() {
    let server = Server::start();
    let b = &server.base;
    let url = format!("{b}/latest?types=surfaceWater&parameters=water-level-15min,discharge-15min");
    let latest = get(&url).await;
    assert_eq!(latest.status, 200, "{}", latest.text());
    let rows = latest.json()["data"].as_array().unwrap().clone();
    let series = series_of(
        b,
        "types=surfaceWater",
        &["water-level-15min", "discharge-15min"],
    )
    .await;
    assert_eq!(rows.len(), series.len());
    for (row, (s, p)) in rows.iter().zip(&series) {
        assert_eq!(
            (row["stationId"].as_str(), row["parameterId"].as_str()),
            (Some(s.as_str()), Some(p.as_str()))
        );
        let one = get(&format!("{b}/stations/{s}/parameters/{p}/values?recent=1"))
            .await
            .json();
        let newest = &one["data"][0];
        for k in ["timestamp", "quality"] {
            assert_eq!(row[k], newest[k], "{s}/{p} {k}");
        }
        assert_eq!(row["value"].as_f64(), newest["value"].as_f64(), "{s}/{p}");
        assert!(row["stationName"].is_string() && row["coordinates"]["lat"].is_number());
    }
    // A map layer: points with the row as properties.
    let geo = get(&format!("{url}&format=geojson")).await.json();
    assert_eq!(geo["type"], "FeatureCollection");
    assert_eq!(geo["features"].as_array().unwrap().len(), rows.len());
    assert_eq!(geo["features"][0]["geometry"]["type"], "Point");
    let csv = get(&format!("{url}&format=csv")).await.text();
    assert_eq!(csv.lines().count(), rows.len() + 1);
    for format in ["ndjson", "arrow", "parquet"] {
        assert_eq!(
            get(&format!("{url}&format={format}")).await.status,
            200,
            "{format}"
        );
    }
    // Paged like the other lists; bad selections as /v1/values.
    let page = get(&format!("{url}&limit=2&offset=1")).await;
    assert_eq!(page.header("x-total-count"), Some(rows.len().to_string()));
    assert_eq!(page.json()["data"].as_array().unwrap()[..], rows[1..3]);
    assert_eq!(
        get(&format!("{b}/latest?types=surfaceWater")).await.status,
        400
    );
    assert_eq!(
        get(&format!("{b}/latest?parameters=nope")).await.status,
        404
    );
}

/// `POST /v1/values`: the parameters as a form or a JSON object in the body give the answer of
/// the equivalent GET, byte for byte and with its ETag; bad bodies are refused with problems.
#[tokio::test]
async fn post_takes_the_parameters_in_the_body() {
    let server = Server::start();
    let b = &server.base;
    let ids: Vec<String> = get(&format!(
        "{b}/stations?types=surfaceWater&limit=3&fields=id"
    ))
    .await
    .json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    let stations = ids.join(",");
    let query = format!(
        "stations={stations}&parameters=water-level-15min,discharge-15min\
         &from=2023-03-01T00:00:00%2B01:00&to=2023-03-03T00:00:00Z&limit=500&offset=20"
    );
    let form = [("content-type", "application/x-www-form-urlencoded")];
    let json = [("content-type", "application/json; charset=utf-8")];
    for format in ["csv", "json", "parquet"] {
        // The equivalent GET: the query's parameters, then the body's.
        let want = get(&format!("{b}/values?format={format}&{query}")).await;
        assert_eq!(want.status, 200, "{}", want.text());
        let as_form = send(
            "POST",
            &format!("{b}/values?format={format}"),
            &form,
            query.clone().into_bytes(),
        )
        .await;
        let as_json = send(
            "POST",
            &format!("{b}/values"),
            &json,
            serde_json::json!({
                "format": format,
                "stations": ids,
                "parameters": ["water-level-15min", "discharge-15min"],
                "from": "2023-03-01T00:00:00+01:00",
                "to": "2023-03-03T00:00:00Z",
                "limit": 500,
                "offset": 20,
            })
            .to_string()
            .into_bytes(),
        )
        .await;
        for (how, got) in [("form", &as_form), ("json", &as_json)] {
            assert_eq!(got.status, 200, "{how} {format}: {}", got.text());
            assert!(got.body == want.body, "{how} {format}: the GET's bytes");
            assert_eq!(got.header("etag"), want.header("etag"), "{how} {format}");
            assert_eq!(got.header("link"), want.header("link"), "{how} {format}");
        }
    }
    // A form's `+` is a space, as HTML forms and HTTP clients write it; `%2B` is a plus.
    let spaced = send(
        "POST",
        &format!("{b}/values?format=csv"),
        &form,
        query.replace("%2B", "+").into_bytes(),
    )
    .await;
    assert_eq!(spaced.status, 200, "{}", spaced.text());

    // Conditional: the GET's ETag matches; a POST is not answered 304 but 412.
    let tag = get(&format!("{b}/values?{query}&format=csv"))
        .await
        .header("etag")
        .unwrap();
    let pre = send(
        "POST",
        &format!("{b}/values?format=csv"),
        &[form[0], ("if-none-match", &tag)],
        query.clone().into_bytes(),
    )
    .await;
    assert_eq!(pre.status, 412, "{}", pre.text());

    // Bad bodies and other paths: problems that say what is wrong.
    // (path, headers, body, status, what the problem says)
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<u8>, u16, &'a str);
    let cases: Vec<Case> = vec![
        (
            "/values?recent=1",
            form.to_vec(),
            b"recent=2&parameters=discharge-15min".to_vec(),
            400,
            "both",
        ),
        (
            "/values",
            form.to_vec(),
            b"parameters=a&parameters=b".to_vec(),
            400,
            "more than once",
        ),
        (
            "/values",
            json.to_vec(),
            b"[1,2]".to_vec(),
            400,
            "JSON object",
        ),
        (
            "/values",
            json.to_vec(),
            br#"{"parameters": {"a": 1}}"#.to_vec(),
            400,
            "an array of strings",
        ),
        (
            "/values",
            json.to_vec(),
            br#"{"parameters": [true]}"#.to_vec(),
            400,
            "an array of strings",
        ),
        (
            "/values",
            json.to_vec(),
            br#"{"parameters": "x", "limit": "5"}"#.to_vec(),
            400,
            "a whole number",
        ),
        (
            "/values",
            json.to_vec(),
            br#"{"parameters": "x", "bbox": "6,50,8,52"}"#.to_vec(),
            400,
            "an array of numbers",
        ),
        (
            "/values",
            json.to_vec(),
            br#"{"observedProperties": 0}"#.to_vec(),
            400,
            "an array of strings",
        ),
        (
            "/values",
            json.to_vec(),
            br#"{"parameters": "water-level-15min", "form": "csv"}"#.to_vec(),
            400,
            "unknown parameter",
        ),
        (
            "/values?format=png",
            form.to_vec(),
            b"parameters=discharge-15min".to_vec(),
            400,
            "formats here: json, csv, ndjson, arrow, parquet",
        ),
        (
            "/values",
            vec![("content-type", "text/csv")],
            b"x".to_vec(),
            415,
            "application/json",
        ),
        (
            "/values",
            vec![],
            b"parameters=discharge-15min".to_vec(),
            415,
            "Content-Type",
        ),
        (
            "/values",
            form.to_vec(),
            vec![b'a'; (1 << 20) + 1],
            413,
            "1024 KiB",
        ),
        ("/values", form.to_vec(), vec![0xff, 0xfe], 400, "UTF-8"),
        (
            "/stations",
            form.to_vec(),
            b"limit=1".to_vec(),
            405,
            "GET, HEAD, OPTIONS",
        ),
        (
            "/latest",
            form.to_vec(),
            b"parameters=discharge-15min".to_vec(),
            405,
            "GET, HEAD, OPTIONS",
        ),
    ];
    for (path, headers, body, status, says) in cases {
        let r = send("POST", &format!("{b}{path}"), &headers, body).await;
        assert_eq!(r.status, status, "{path}: {}", r.text());
        assert_eq!(
            r.header("content-type").as_deref(),
            Some("application/problem+json")
        );
        assert!(r.text().contains(says), "{path}: {}", r.text());
    }
    let put = request("PUT", &format!("{b}/values"), &[]).await;
    assert_eq!(put.status, 405);
    assert_eq!(
        put.header("allow").as_deref(),
        Some("GET, HEAD, POST, OPTIONS")
    );
    let other = request("PUT", &format!("{b}/stations"), &[]).await;
    assert_eq!(other.header("allow").as_deref(), Some("GET, HEAD, OPTIONS"));
    // A browser's preflight for a JSON POST is told POST is allowed there (and only there).
    let preflight = |path: &str| {
        let url = format!("{b}{path}");
        async move {
            let headers = [
                ("origin", "https://example.org"),
                ("access-control-request-method", "POST"),
                ("access-control-request-headers", "content-type"),
            ];
            request("OPTIONS", &url, &headers).await
        }
    };
    let values = preflight("/values").await;
    assert_eq!(values.status, 204);
    assert_eq!(
        values.header("access-control-allow-methods").as_deref(),
        Some("GET, HEAD, POST, OPTIONS")
    );
    let stations = preflight("/stations").await;
    assert_eq!(
        stations.header("access-control-allow-methods").as_deref(),
        Some("GET, HEAD, OPTIONS")
    );
}
