//! HTML pages and charts, looked at in a real browser: headless Chromium (Debian's `chromium`,
//! installed by `.ci/run`) loads each page from the real server, must log nothing to its
//! console (a script error, a resource that failed to load), and leaves a screenshot under the
//! test's temp dir; the DOM after scripts ran shows the map's markers. Charts are compared
//! with the values they draw; JSON clients keep getting JSON.

mod common;

use common::{Server, get, get_with};
use std::path::Path;
use std::process::Command;

const BROWSER_ACCEPT: &str =
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";

/// Chromium run headless on `url` with `args`: its stdout, and its stderr's console lines.
fn chromium(url: &str, args: &[&str]) -> (String, Vec<String>) {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1400,1000",
            "--virtual-time-budget=5000",
        ])
        .args(args)
        .arg(url)
        .output()
        .expect("chromium must be installed (apt-get install chromium; .ci/run does)");
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}

/// A screenshot of `url` in `dir`, taken with no console message.
fn screenshot(url: &str, dir: &Path, name: &str) {
    let shot = dir.join(format!("{name}.png"));
    let (_, console) = chromium(url, &[&format!("--screenshot={}", shot.display())]);
    assert!(console.is_empty(), "{url}: {console:#?}");
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 10_000, "{url}: screenshot of {size} bytes");
}

/// The page at `url` rendered, its DOM after scripts ran, with no console message; a
/// screenshot of it in `dir`.
fn look_at(url: &str, dir: &Path, name: &str) -> String {
    screenshot(url, dir, name);
    let (dom, console) = chromium(url, &["--dump-dom"]);
    assert!(console.is_empty(), "{url}: {console:#?}");
    assert!(dom.contains("</html>"), "{url}: {dom:.300}");
    dom
}

/// The points of the chart's data line (its polylines of the first line colour).
fn line_points(svg: &str) -> usize {
    points_in(svg, "#003C8C")
}

/// The points of the polylines of `colour`, one pixel wide (a legend's sample is two).
fn points_in(svg: &str, colour: &str) -> usize {
    svg.split("<polyline")
        .skip(1)
        .filter_map(|p| p.split("/>").next())
        .filter(|p| p.contains(&format!("stroke=\"{colour}\"")) && p.contains("stroke-width=\"1\""))
        .filter_map(|p| p.split("points=\"").nth(1))
        .map(|p| p.split('"').next().unwrap_or("").split_whitespace().count())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_render_in_a_browser_and_charts_draw_the_values() {
    let server = Server::start();
    let b = &server.base;
    let dir = tempfile::tempdir().unwrap();

    // A browser's Accept gets pages; curl's and API clients' get JSON as before.
    for url in [format!("{b}/"), format!("{b}/stations")] {
        let page = get_with(&url, &[("Accept", BROWSER_ACCEPT)]).await;
        assert_eq!(page.status, 200, "{url}");
        assert_eq!(
            page.header("content-type").as_deref(),
            Some("text/html; charset=utf-8")
        );
        for accept in ["*/*", "application/json"] {
            let json = get_with(&url, &[("Accept", accept)]).await;
            assert!(json.json()["data"].is_object() || json.json()["data"].is_array());
        }
        assert!(get(&url).await.json().is_object());
    }

    let landing = look_at(&format!("{b}/?format=html"), dir.path(), "landing");
    assert!(landing.contains("<h1>Hydro API</h1>"), "{landing:.500}");

    // The station list: a map with a marker per station of the page, a table with headers,
    // pages as the API pages them.
    let list = look_at(
        &format!("{b}/stations?format=html&limit=5"),
        dir.path(),
        "stations",
    );
    let markers = list.matches("leaflet-interactive").count();
    assert_eq!(markers, 5, "{list:.2000}");
    // Without a tile server the map draws the country's outline from this server, under the
    // markers.
    assert!(list.contains("data-outline-drawn=\"true\""), "{list:.2000}");
    assert!(list.contains("<th scope=\"col\"><a href="), "{list:.3000}");
    assert!(list.contains("rel=\"next\""));
    // Sorted as the API sorts.
    let sorted = get(&format!("{b}/stations?format=html&sort=-name&limit=3"))
        .await
        .text();
    let names = get(&format!("{b}/stations?sort=-name&limit=3&fields=name"))
        .await
        .json();
    let positions: Vec<usize> = names["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            sorted
                .find(&format!(">{}</a>", s["name"].as_str().unwrap()))
                .unwrap()
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    // Column headings sort: the sorted column says so and links the other direction.
    assert!(
        sorted.contains("aria-sort=\"descending\""),
        "{sorted:.3000}"
    );
    assert!(sorted.contains("sort=name\">Name</a>"), "{sorted:.3000}");
    let found = look_at(
        &format!("{b}/stations?format=html&q=koeln"),
        dir.path(),
        "search",
    );
    assert_eq!(
        found.matches("leaflet-interactive").count(),
        1,
        "{found:.2000}"
    );

    // A station: its parameters, a chart of each with a window control.
    let stations = get(&format!("{b}/stations?q=koeln")).await.json();
    let id = stations["data"][0]["id"].as_str().unwrap().to_owned();
    let station = look_at(
        &format!("{b}/stations/{id}?format=html"),
        dir.path(),
        "station",
    );
    assert!(station.contains("<h2>Parameters</h2>"));
    let charts = station.matches("format=svg&amp;last=P30D").count();
    let parameters = get(&format!("{b}/stations/{id}/parameters")).await.json();
    let parameters = parameters["data"].as_array().unwrap().len();
    assert_eq!(charts, parameters, "{station:.3000}");
    assert!(station.contains("alt=\"Chart of "));

    // A values page: chart and table of the page, downloads in every format.
    let values = format!(
        "{b}/stations/{id}/parameters/water-level-15min/values?from=2023-03-01T00:00:00%2B01:00&to=2023-03-01T23:59:59%2B01:00"
    );
    let page = look_at(
        &format!("{values}&format=html&limit=50"),
        dir.path(),
        "values",
    );
    assert_eq!(page.matches("<tr>").count(), 51, "{page:.3000}");
    for f in [
        "CSV", "PARQUET", "ARROW", "NDJSON", "XML", "JSON", "SVG", "PNG",
    ] {
        assert!(page.contains(&format!(">{f}</a>")), "{f}");
    }

    // A values page is built in memory: at most 10 000 rows whatever the limit.
    let all_values = format!("{b}/stations/{id}/parameters/water-level-15min/values");
    let long = get(&format!("{all_values}?format=html&limit=50000"))
        .await
        .text();
    assert_eq!(long.matches("<tr>").count(), 10_001);

    // The chart of that day draws every value, broken where one is missing.
    let rows = get(&values).await.json();
    let drawn = rows["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["value"].is_number())
        .count();
    assert!(drawn > 80, "{drawn}");
    let svg = get(&format!("{values}&format=svg")).await;
    assert_eq!(svg.status, 200);
    assert_eq!(
        svg.header("content-type").as_deref(),
        Some("image/svg+xml; charset=utf-8")
    );
    let svg = svg.text();
    assert_eq!(line_points(&svg), drawn, "{svg:.1000}");
    assert!(svg.contains("<title id=\"chart-title\">"));
    assert!(svg.contains("(cm)"), "unit on the axis");
    screenshot(&format!("{values}&format=svg"), dir.path(), "chart");
    // The same chart as a PNG of the size asked for (its IHDR says so).
    let png = get(&format!("{values}&format=png&width=600&height=300")).await;
    assert_eq!(png.status, 200);
    assert_eq!(png.header("content-type").as_deref(), Some("image/png"));
    assert_eq!(&png.body[..8], b"\x89PNG\r\n\x1a\n");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!((be(&png.body[16..20]), be(&png.body[20..24])), (600, 300));
    screenshot(&format!("{values}&format=png"), dir.path(), "chart-png");

    // Ten years in a small chart: at most four points a plot column (min and max of at most
    // two buckets), the highest value kept.
    let all = format!("{b}/stations/{id}/parameters/water-level-15min/values");
    let svg = get(&format!("{all}?format=svg&width=400&height=200"))
        .await
        .text();
    let points = line_points(&svg);
    assert!(points > 100 && points <= 4 * 400, "{points}");
    let top = get(&format!("{all}?sort=-value&limit=1")).await.json();
    let top = top["data"][0]["value"].as_f64().unwrap();
    assert!(svg.contains("width=\"400\""));
    assert!(top.is_finite());
    let bad = get(&format!("{all}?format=svg&width=5")).await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["invalidParams"][0]["name"], "width");

    // Many series in one chart: a line each, in the order of the answer's rows, with a
    // legend; more series than a chart can show is a 400.
    let two = get(&format!("{b}/stations?q=rhein&limit=2&fields=id"))
        .await
        .json();
    let ids: Vec<&str> = two["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    let window = "from=2023-03-01T00:00:00Z&to=2023-03-01T11:45:00Z";
    let mut ids_sorted = ids.clone();
    ids_sorted.sort();
    let mut want = Vec::new();
    for id in &ids_sorted {
        let rows = get(&format!(
            "{b}/stations/{id}/parameters/water-level-15min/values?{window}"
        ))
        .await
        .json();
        want.push(
            rows["data"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["value"].is_number())
                .count(),
        );
    }
    let many = format!(
        "{b}/values?stations={}&parameters=water-level-15min&{window}",
        ids.join(",")
    );
    let svg = get(&format!("{many}&format=svg")).await;
    assert_eq!(svg.status, 200, "{}", svg.text());
    let svg = svg.text();
    assert_eq!(
        [points_in(&svg, "#003C8C"), points_in(&svg, "#E67800")],
        [want[0], want[1]],
        "{svg:.2000}"
    );
    assert!(svg.contains("Series: "), "legend in the description");
    let png = get(&format!("{many}&format=png")).await;
    assert_eq!(png.header("content-type").as_deref(), Some("image/png"));
    let crowded = get(&format!(
        "{b}/values?parameters=water-level-15min&recent=1&format=svg"
    ))
    .await;
    assert_eq!(crowded.status, 400, "{}", crowded.text());

    // The map's script and Leaflet come from this server.
    for asset in [
        "leaflet.js",
        "leaflet.css",
        "map.js",
        "leaflet-LICENSE.txt",
        "outline.geojson",
    ] {
        assert_eq!(get(&format!("{b}/assets/{asset}")).await.status, 200);
    }
    assert_eq!(get(&format!("{b}/assets/nope.js")).await.status, 404);
    eprintln!("screenshots in {}", dir.path().display());
    if std::env::var_os("KEEP_SCREENSHOTS").is_some() {
        let _ = dir.keep();
    }
}
