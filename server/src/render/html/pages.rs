//! HTML pages for people with a browser: the landing page, the station list (a map and a
//! table, paged as the API pages), a station (its metadata, parameters, characteristic values
//! and a chart of each parameter's recent values) and a series' values (a chart and a table of
//! the page). Each is the answer of the resource's own URL to a request that prefers
//! `text/html` (or says `format=html`), and links the same resource in the machine formats.
//!
//! Lists without `limit` are cut to a page ([`PAGE_ROWS`]), with links to the next ones: a
//! table of 350 000 values is of no use on a screen, and the data formats give them all. The
//! handlers find the stations and plan the values; these pages only show them.

use crate::config::Config;
use crate::render::envelope::{Pagination, PagingUrl};
use crate::render::format::Format;
use crate::render::html::{self, Frame, Link};
use crate::render::reply::{Reply, built};
use crate::render::resources::SortSpec;
use crate::render::timefmt::TimeFormatter;
use chrono::{DateTime, SecondsFormat};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int32Type, Int64Type, TimestampMicrosecondType};
use futures::StreamExt;
use http::HeaderMap;
use hydro_engine::Catalog;
use hydro_engine::EngineError;
use hydro_engine::Manifest;
use hydro_engine::ValuesPlan;
use hydro_engine::Zone;
use hydro_engine::{Parameter, Station};
use maud::{Markup, PreEscaped, html};

/// What every page needs of the service and of the request: the service's address and
/// settings, the zone of times, and this request's URL (for the same resource in other
/// formats, other pages, other orders).
pub struct Site<'a> {
    pub base_url: &'a str,
    pub config: &'a Config,
    /// The zone times are shown in: the request's `timeZone`, else the output zone.
    pub zone: Zone,
    pub here: PagingUrl,
}

impl Site<'_> {
    fn url(&self, rest: &str) -> String {
        format!("{}{rest}", self.base_url)
    }
}

/// Rows of a page when the request gives no `limit`.
pub const PAGE_ROWS: u64 = 200;

/// Rows a values page shows at most.
pub const MOST_ROWS: u64 = 10_000;

/// The windows a station page offers for its charts; its charts show the second.
const CHART_WINDOWS: [(&str, &str); 4] = [
    ("P7D", "7 days"),
    ("P30D", "30 days"),
    ("P1Y", "1 year"),
    ("P10Y", "10 years"),
];

fn reply(page: String) -> Reply {
    built(page.into_bytes(), Format::HTML, HeaderMap::new())
}

fn service(site: &Site<'_>) -> String {
    site.config.title.clone()
}

/// The same resource in `formats`, for the page's "as data" links.
fn formats(site: &Site<'_>, formats: &[Format]) -> Vec<Link> {
    let url = site.here.clone();
    formats
        .iter()
        .filter(|f| **f != Format::HTML)
        .map(|f| {
            (
                f.short().to_uppercase(),
                url.rewritten(&["format"], &[("format", f.short())]),
            )
        })
        .collect()
}

fn time(micros: i64, zone: Zone) -> String {
    DateTime::from_timestamp_micros(micros).map_or_else(String::new, |t| {
        t.with_timezone(&zone.offset_at(micros))
            .to_rfc3339_opts(SecondsFormat::AutoSi, false)
    })
}

/// How a page names the zone of its times: `UTC+01:00`, or an IANA name.
fn zone_name(zone: Zone) -> String {
    match zone {
        Zone::Fixed(_) => format!("UTC{zone}"),
        Zone::Named(_) => zone.to_string(),
    }
}

fn station_url(site: &Site<'_>, s: &Station) -> String {
    site.url(&format!("/stations/{}", s.id))
}

pub fn landing(site: &Site<'_>, ds: &Manifest, citation: &str) -> Reply {
    let config = &site.config;
    let title = service(site);
    let content = html! {
        p { (config.description) }
        h2 { "Dataset" }
        table {
            tbody {
                tr { th scope="row" { "Version" } td { (ds.version) } }
                tr { th scope="row" { "Published" } td { (ds.created) } }
                tr { th scope="row" { "Stations" } td.num { (ds.counts.stations) } }
                tr { th scope="row" { "Series" } td.num { (ds.counts.parameters) } }
                tr { th scope="row" { "Characteristic values" } td.num { (ds.counts.characteristics) } }
                tr { th scope="row" { "Values" } td.num { (ds.counts.values) } }
            }
        }
        h2 { "Cite" }
        p.citation { (citation) }
        p { "Answers of this version stay available with " code { "asOf=" (ds.version) } " on every data URL: "
            a href=(site.url("/versions")) { "versions" } " lists those kept." }
        h2 { "Explore" }
        ul {
            li { a href=(site.url("/stations")) { "Stations" } ": a map and a table, with search" }
            li { a href=(site.url("/openapi.json")) { "OpenAPI document" } ": every endpoint and parameter" }
            li { a href=(site.url("/health")) { "Service health" } }
        }
        @if let Some(publisher) = &config.publisher_name { p { "Publisher: " (publisher) "." } }
        @if let Some(licence) = &config.license_name {
            p { "Licence: "
                @if let Some(url) = &config.license_url { a href=(url) { (licence) } } @else { (licence) }
                "." }
        }
    };
    let frame = Frame {
        title: &title,
        service: &title,
        trail: Vec::new(),
        formats: formats(site, &[Format::JSON]),
        head: html! {},
    };
    reply(html::page(frame, content))
}

/// The station list: the stations the filters select, in the order asked for, a page of them
/// on a map and in a table.
pub fn station_list(
    site: &Site<'_>,
    (total, hits): (usize, Vec<(&Station, Option<f64>)>),
    sort: &[SortSpec],
    (limit, offset): (u64, u64),
    search: &str,
    offered: &[Format],
    swapped: Option<(&str, &str)>,
) -> Reply {
    let page = Pagination::new(total as u64, Some(limit), offset);
    let mut url = site.here.clone();
    url.pairs.retain(|(k, _)| k != "format");
    let pages = page.links(&url);
    let map: Vec<serde_json::Value> = hits
        .iter()
        .map(|(s, _)| {
            serde_json::json!({
                "name": s.name,
                "lat": s.coordinates.lat,
                "lon": s.coordinates.lon,
                "href": station_url(site, s),
            })
        })
        .collect();
    // `</` cannot end the script element early: every `<` of the JSON is escaped.
    let map_json = serde_json::Value::Array(map)
        .to_string()
        .replace('<', "\\u003c");
    let tiles = site.config.map_tile_url.clone();
    // Without tiles, the country's outline gives the map its bearings (`assets/outline`).
    let outline = tiles.is_none().then(|| site.url("/assets/outline.geojson"));
    let near = hits.iter().any(|(_, d)| d.is_some());
    let content = html! {
        form.inline method="get" action=(site.url("/stations")) role="search" {
            label for="q" { "Name or water body" }
            input id="q" type="search" name="q" value=(search) required minlength="1";
            button type="submit" { "Search" }
        }
        p { (total) " stations; " (page.count) " shown from number " (offset + 1) "." }
        @if let Some((href, title)) = swapped {
            p role="note" {
                "The coordinates look like latitude, longitude (" (title) "): "
                a href=(href) rel="alternate" { "the list with them swapped" } "."
            }
        }
        div id="map" data-tiles=[tiles.as_deref()] data-outline=[outline.as_deref()]
            role="region" aria-label="Map of the stations listed" {}
        script id="map-stations" type="application/json" { (PreEscaped(map_json)) }
        table {
            caption { "Stations" }
            thead {
                tr {
                    @for (field, heading) in SORTABLE {
                        th scope="col" aria-sort=[sorted_by(sort, field)] {
                            a href=(sort_url(&url, sort, field)) { (heading) }
                        }
                    }
                    @if near { th scope="col" { "Distance (km)" } }
                }
            }
            tbody {
                @for (s, distance) in &hits {
                    tr {
                        td { a href=(station_url(site, s)) { (s.name) } }
                        td { (s.water_body_name) }
                        td { (s.kind.as_str()) }
                        td { (s.state) }
                        td.num { (format!("{:.4}", s.coordinates.lat)) }
                        td.num { (format!("{:.4}", s.coordinates.lon)) }
                        @if near {
                            td.num { (distance.map(|d| format!("{d:.1}")).unwrap_or_default()) }
                        }
                    }
                }
            }
        }
        (html::pager(&pages))
        script src=(site.url("/assets/leaflet.js")) {}
        script src=(site.url("/assets/map.js")) {}
    };
    let title = service(site);
    let frame = Frame {
        title: "Stations",
        service: &title,
        trail: vec![(title.clone(), site.url("/"))],
        formats: formats(site, offered),
        head: html! { link rel="stylesheet" href=(site.url("/assets/leaflet.css")); },
    };
    reply(html::page(frame, content))
}

/// The station table's columns: the sort field each orders by, and its heading. A heading
/// links the list sorted by it (descending when it is sorted ascending by it already).
const SORTABLE: [(&str, &str); 6] = [
    ("name", "Name"),
    ("waterBodyName", "Water body"),
    ("type", "Type"),
    ("state", "State"),
    ("coordinates.lat", "Latitude"),
    ("coordinates.lon", "Longitude"),
];

/// `aria-sort` of a column the list is sorted by first.
fn sorted_by(sort: &[SortSpec], field: &str) -> Option<&'static str> {
    match sort.first() {
        Some(k) if k.path == field => Some(if k.descending {
            "descending"
        } else {
            "ascending"
        }),
        _ => None,
    }
}

fn sort_url(url: &PagingUrl, sort: &[SortSpec], field: &str) -> String {
    let value = match sorted_by(sort, field) {
        Some("ascending") => format!("-{field}"),
        _ => field.to_owned(),
    };
    url.rewritten(&["sort", "offset"], &[("sort", &value)])
}

/// The chart of a series as an image, with its text alternative.
fn chart(src: &str, alt: &str) -> Markup {
    html! {
        figure {
            img src=(src) alt=(alt) width="900" height="400" loading="lazy";
            figcaption { (alt) }
        }
    }
}

fn values_url(site: &Site<'_>, s: &Station, p: &Parameter) -> String {
    site.url(&format!("/stations/{}/parameters/{}/values", s.id, p.id))
}

pub fn station(site: &Site<'_>, catalog: &Catalog, s: &Station, offered: &[Format]) -> Reply {
    let zone = site.zone;
    let parameters = catalog.parameters(&s.id);
    let characteristics = catalog.characteristics(&s.id);
    let (window, window_name) = CHART_WINDOWS[1];
    let content = html! {
        dl {
            dt { "Id" } dd { code { (s.id) } }
            dt { "Type" } dd { (s.kind.as_str()) }
            @if !s.water_body_name.is_empty() { dt { "Water body" } dd { (s.water_body_name) } }
            dt { "State" } dd { (s.state) }
            @if !s.operator.is_empty() { dt { "Operator" } dd { (s.operator) } }
            dt { "Coordinates" } dd { (format!("{:.5}° N, {:.5}° E (WGS 84)", s.coordinates.lat, s.coordinates.lon)) }
            @if let Some(km) = s.river_km { dt { "River km" } dd { (km) } }
            @if let Some(z) = &s.gauge_zero { dt { "Gauge zero" } dd { (z.value) " " (z.unit) " " (z.datum) } }
            @if let Some(g) = s.ground_level { dt { "Ground level" } dd { (g) " m" } }
            @if let Some(e) = s.elevation { dt { "Elevation" } dd { (e) " m" } }
        }
        h2 { "Parameters" }
        table {
            thead { tr {
                th scope="col" { "Parameter" } th scope="col" { "Unit" } th scope="col" { "Interval" }
                th scope="col" { "Values from" } th scope="col" { "to" } th scope="col" { "Download" }
            } }
            tbody {
                @for p in parameters {
                    tr {
                        td { a href=(values_url(site, s, p)) { (p.name) } }
                        td { (p.unit) }
                        td { (p.interval) }
                        td { (p.availability.first().map(|a| time(a.start, zone)).unwrap_or_default()) }
                        td { (p.availability.last().map(|a| time(a.end, zone)).unwrap_or_default()) }
                        td {
                            @for f in ["csv", "parquet", "json"] {
                                a href=(format!("{}?format={f}", values_url(site, s, p))) { (f.to_uppercase()) } " "
                            }
                        }
                    }
                }
            }
        }
        @if !characteristics.is_empty() {
            h2 { "Characteristic values" }
            table {
                thead { tr {
                    th scope="col" { "Name" } th scope="col" { "Type" } th scope="col" { "Parameter" }
                    th scope="col" { "Value" } th scope="col" { "Period" }
                } }
                tbody {
                    @for c in characteristics {
                        tr {
                            td { (c.name) }
                            td { (c.kind.as_str()) }
                            td { (c.parameter) }
                            td.num { (c.value) " " (c.unit) }
                            td { (c.period.map(|p| format!("{} – {}", time(p.start, zone), time(p.end, zone))).unwrap_or_default()) }
                        }
                    }
                }
            }
        }
        @for p in parameters {
            h2 { (p.name) ", last " (window_name) }
            (chart(
                &format!("{}?format=svg&last={window}", values_url(site, s, p)),
                &format!("Chart of {} ({}) at {}, the last {window_name} of values", p.name, p.unit, s.name),
            ))
            form.inline method="get" action=(values_url(site, s, p)) {
                label for=(format!("window-{}", p.id)) { "Show the last" }
                select id=(format!("window-{}", p.id)) name="last" {
                    @for (value, name) in CHART_WINDOWS {
                        option value=(value) selected[value == window] { (name) }
                    }
                }
                input type="hidden" name="format" value="html";
                button type="submit" { "Show values" }
            }
        }
    };
    let title = service(site);
    let frame = Frame {
        title: &s.name,
        service: &title,
        trail: vec![
            (title.clone(), site.url("/")),
            ("Stations".into(), site.url("/stations")),
        ],
        formats: formats(site, offered),
        head: html! {},
    };
    reply(html::page(frame, content))
}

/// A series' values: the chart of the window and a table of the page, with links to the
/// window in every format.
/// The aggregates a values page links to, as the query parameters that ask for them.
const SUMMARIES: &[(&str, &[(&str, &str)])] = &[
    (
        "daily mean, min and max",
        &[("aggregate", "mean,min,max"), ("interval", "P1D")],
    ),
    (
        "monthly mean, min and max",
        &[("aggregate", "mean,min,max"), ("interval", "P1M")],
    ),
    (
        "annual maxima (hydrological year from November)",
        &[
            ("aggregate", "max,maxTime"),
            ("interval", "P1Y"),
            ("yearStart", "11"),
        ],
    ),
    (
        "statistics of the whole window",
        &[("aggregate", "mean,min,p10,median,p90,max")],
    ),
];

/// The chart of what a page shows (its SVG answer, sized as asked) and the downloads of all of
/// it (not the page) in every data format, from the page's URL without `format`.
fn chart_and_downloads(
    url: &PagingUrl,
    (width, height): (u32, u32),
    offered: &[Format],
) -> (String, Vec<Link>) {
    let whole = ["limit", "offset", "format", "width", "height"];
    let (width, height) = (width.to_string(), height.to_string());
    let chart = url.rewritten(
        &whole,
        &[("format", "svg"), ("width", &width), ("height", &height)],
    );
    let downloads = offered
        .iter()
        .filter(|f| !(f.is_page() || f.is_chart()))
        .map(|f| {
            let href = url.rewritten(&whole, &[("format", f.short())]);
            (f.short().to_uppercase(), href)
        })
        .collect();
    (chart, downloads)
}

/// A page of one of a station's series, `content` under `heading`, in the trail of its station.
fn series_page(
    site: &Site<'_>,
    s: &Station,
    heading: &str,
    offered: &[Format],
    content: Markup,
) -> Reply {
    let title = service(site);
    let frame = Frame {
        title: heading,
        service: &title,
        trail: vec![
            (title.clone(), site.url("/")),
            ("Stations".into(), site.url("/stations")),
            (s.name.clone(), station_url(site, s)),
        ],
        formats: formats(site, offered),
        head: html! {},
    };
    reply(html::page(frame, content))
}

/// What a table page of a series shows: aggregates (a row a bucket) or statistics.
#[derive(Clone, Copy)]
pub enum TableOf {
    Aggregates,
    Statistics,
}

impl TableOf {
    /// (what the page is of, what a row is, what the rows say of themselves).
    fn words(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Self::Aggregates => (
                "aggregates",
                "buckets",
                "Each bucket is labelled with its start.",
            ),
            Self::Statistics => (
                "statistics",
                "rows",
                "Statistics of the reference period asked.",
            ),
        }
    }
}

/// Aggregates or statistics of a series as a page: their chart (an image of the SVG answer)
/// and a table of the page of rows. `batch` holds the page's rows with the `columns` asked
/// for; `page` says which.
#[allow(clippy::too_many_arguments)]
pub fn table(
    site: &Site<'_>,
    (s, p): (&Station, &Parameter),
    of: TableOf,
    batch: &RecordBatch,
    columns: &[String],
    page: &Pagination,
    mut times: TimeFormatter,
    size: (u32, u32),
    offered: &[Format],
) -> Result<Reply, EngineError> {
    let (what, rows_are, labelled) = of.words();
    let mut rows: Vec<Vec<String>> = vec![Vec::with_capacity(columns.len()); batch.num_rows()];
    for name in columns {
        let column = batch
            .column_by_name(name)
            .ok_or_else(|| EngineError::Internal(format!("{what} page: no column {name}")))?;
        for (i, row) in rows.iter_mut().enumerate() {
            let cell = if column.is_null(i) {
                "–".to_owned()
            } else if let Some(t) = column.as_primitive_opt::<TimestampMicrosecondType>() {
                times.format(t.value(i))
            } else if let Some(v) = column.as_primitive_opt::<Float64Type>() {
                v.value(i).to_string()
            } else if let Some(n) = column.as_primitive_opt::<Int64Type>() {
                n.value(i).to_string()
            } else {
                String::new()
            };
            row.push(cell);
        }
    }
    let mut url = site.here.clone();
    url.pairs.retain(|(k, _)| k != "format");
    let pages = page.links(&url);
    let (chart_src, downloads) = chart_and_downloads(&url, size, offered);
    let first = page.offset;
    let content = html! {
        (chart(&chart_src, &format!("Chart of the {what} of {} ({}) at {}", p.name, p.unit, s.name)))
        p { "Download every one of the " (rows_are) ": "
            @for (name, href) in &downloads { a href=(href) { (name) } " " }
        }
        p { (page.total) " " (rows_are) "; " (page.count) " shown from number " (first + 1) ". " (labelled) }
        table {
            caption { (p.name) " (" (p.unit) ")" }
            thead { tr { @for c in columns { th scope="col" { (c) } } } }
            tbody {
                @for row in &rows {
                    tr { @for (k, cell) in row.iter().enumerate() {
                        @if k == 0 { td { (cell) } } @else { td.num { (cell) } }
                    } }
                }
            }
        }
        (html::pager(&pages))
    };
    let heading = format!("{}: {} ({what})", s.name, p.name);
    Ok(series_page(site, s, &heading, offered, content))
}

pub async fn values(
    site: &Site<'_>,
    (s, p): (&Station, &Parameter),
    mut plan: ValuesPlan,
    (limit, first): (u64, u64),
    size: (u32, u32),
    offered: &[Format],
) -> Result<Reply, EngineError> {
    let zone = site.zone;
    let mut rows: Vec<(String, Option<f64>, String)> = Vec::new();
    while let Some(batch) = plan.stream.next().await {
        let batch = batch?;
        let bad = || EngineError::Internal("values page: unexpected columns".into());
        let times = batch
            .column(0)
            .as_primitive_opt::<TimestampMicrosecondType>();
        let values = batch.column(1).as_primitive_opt::<Float64Type>();
        let quality = batch.column(2).as_dictionary_opt::<Int32Type>();
        let (Some(times), Some(values), Some(quality)) = (times, values, quality) else {
            return Err(bad());
        };
        let texts = quality.values().as_string_opt::<i32>().ok_or_else(bad)?;
        for i in 0..batch.num_rows() {
            let q = quality.keys().value(i) as usize;
            rows.push((
                time(times.value(i), zone),
                values.is_valid(i).then(|| values.value(i)),
                if q < texts.len() {
                    texts.value(q).to_owned()
                } else {
                    String::new()
                },
            ));
        }
    }
    let page = Pagination::new(plan.total.unwrap_or(0), Some(limit), first);
    let mut url = site.here.clone();
    url.pairs.retain(|(k, _)| k != "format");
    let pages = page.links(&url);
    let (chart_src, downloads) = chart_and_downloads(&url, size, offered);
    let summaries: Vec<Link> = SUMMARIES
        .iter()
        .map(|(name, pairs)| {
            let href = url.rewritten(&["limit", "offset", "format", "sort", "fields"], pairs);
            ((*name).to_owned(), href)
        })
        .collect();
    let content = html! {
        (chart(&chart_src, &format!("Chart of {} ({}) at {} in the window asked for", p.name, p.unit, s.name)))
        p { "Download the whole window: "
            @for (name, href) in &downloads { a href=(href) { (name) } " " }
        }
        p { "Summaries of the window: "
            @for (name, href) in &summaries { a href=(href) { (name) } " · " }
        }
        p { (page.total) " values; " (page.count) " shown from number " (first + 1) ". Times in " (zone_name(zone)) "." }
        table {
            caption { (p.name) " (" (p.unit) ")" }
            thead { tr { th scope="col" { "Time" } th scope="col" { "Value (" (p.unit) ")" } th scope="col" { "Quality" } } }
            tbody {
                @for (t, v, q) in &rows {
                    tr {
                        td { (t) }
                        td.num { (v.map(|v| v.to_string()).unwrap_or_else(|| "–".into())) }
                        td { (q) }
                    }
                }
            }
        }
        (html::pager(&pages))
    };
    let heading = format!("{}: {}", s.name, p.name);
    Ok(series_page(site, s, &heading, offered, content))
}
