//! Thousands of malformed requests against the real server: none gets a 5xx, every error is a
//! problem document, and the server still answers afterwards.

mod common;

use common::{Server, get, get_with};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

const PIECES: &[&str] = &[
    "stations",
    "parameters",
    "values",
    "characteristics",
    "health",
    "schemas",
    "openapi.json",
    "..",
    "%2F",
    "%00",
    "%2e%2e",
    "water-level-15min",
    "mhw",
    "x",
    "",
    "%FF",
    "%",
    "a b",
    "ä",
    "{stationId}",
    "..%2F..%2Fmanifest.json",
    "values?x",
];
const KEYS: &[&str] = &[
    "limit",
    "offset",
    "sort",
    "fields",
    "format",
    "from",
    "to",
    "recent",
    "last",
    "bbox",
    "near",
    "states",
    "waterBodyIds",
    "types",
    "include",
    "parameterIds",
    "form",
    "",
    "%",
    "limit%00",
];
const VALUES: &[&str] = &[
    "",
    "-1",
    "0",
    "1",
    "99999999999999999999999",
    "abc",
    "2023-01-01T00:00:00Z",
    "2023-01-01T00:00:00+01:00",
    "2023-01-01",
    "P1D",
    "PT",
    "P-1D",
    "1,2,3,4",
    "200,100,1,2",
    "7,50,10",
    "NaN,NaN,NaN",
    "-name",
    "name,-name",
    "id,coordinates.lat",
    "parameters",
    "csv",
    "geojson",
    "parquet",
    "arrow",
    "xml",
    "text/csv;q=0",
    "DE-BY",
    "BY,,",
    "%FF",
    "%00",
    "a%2Cb",
    "1e308,1e308,1e308",
    "timestamp",
    "-value",
    "quality,-timestamp",
    ",",
    ",,,",
];

#[tokio::test]
async fn malformed_requests_never_reach_a_5xx() {
    let server = Server::start();
    let b = server.base.clone();
    let sid = get(&format!("{b}/stations?limit=1")).await.json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut rng = StdRng::seed_from_u64(2024);
    let pick = |rng: &mut StdRng, xs: &[&'static str]| xs[rng.random_range(0..xs.len())];
    for i in 0..1500 {
        let mut path = String::new();
        if rng.random_range(0..3) > 0 {
            path.push_str("/stations/");
            path.push_str(&sid);
        }
        for _ in 0..rng.random_range(0..4) {
            path.push('/');
            path.push_str(pick(&mut rng, PIECES));
        }
        let mut query = Vec::new();
        for _ in 0..rng.random_range(0..4) {
            query.push(format!(
                "{}={}",
                pick(&mut rng, KEYS),
                pick(&mut rng, VALUES)
            ));
        }
        let url = format!("{b}{path}?{}", query.join("&"));
        let accept = [
            "*/*",
            "text/csv",
            "image/png",
            "application/json;q=0",
            "",
            "application/vnd.apache.parquet",
        ][i % 6];
        let Ok(uri) = url.parse::<http::Uri>() else {
            continue;
        };
        let r = get_with(
            &uri.to_string(),
            &[("Accept", accept), ("Accept-Encoding", "gzip;q=0.5, br")],
        )
        .await;
        assert!(r.status < 500, "{url} (Accept {accept}) -> {}", r.status);
        if r.status >= 400 {
            assert_eq!(
                r.header("content-type").as_deref(),
                Some("application/problem+json"),
                "{url}"
            );
        }
    }
    assert_eq!(get(&format!("{b}/health")).await.json()["status"], "ok");
}
