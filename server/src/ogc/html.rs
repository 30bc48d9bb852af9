//! The documents of `/ogc` as pages for people (`f=html`, or a browser's `Accept`): the
//! landing page's links, the conformance classes, the collections, a page of features as a
//! table with its pager, one feature's properties. Each page is the JSON document it shows,
//! in the frame every page of the service has.

use crate::render::format::Format;
use crate::render::html::{Frame, page, pager};
use crate::render::reply::{Reply, built};
use http::HeaderMap;
use maud::{Markup, html};
use serde_json::Value;

/// `document` as a page titled `title`; `json` is the same document as data.
pub fn document_page(title: &str, document: &Value, json: &str) -> Reply {
    let content = match document.get("type").and_then(Value::as_str) {
        Some("FeatureCollection") => features(document),
        Some("Feature") => feature(document),
        _ => other(document),
    };
    let frame = Frame {
        title,
        service: "Hydro API: OGC API – Features",
        trail: Vec::new(),
        formats: vec![("JSON".into(), json.to_owned())],
        head: html! {},
    };
    built(
        page(frame, content).into_bytes(),
        Format::HTML,
        HeaderMap::new(),
    )
}

/// `href` with `f=html`, so that a link followed from a page stays a page.
fn as_page(href: &str) -> String {
    let sep = if href.contains('?') { '&' } else { '?' };
    format!("{href}{sep}f=html")
}

fn links(document: &Value) -> Markup {
    let list = document["links"].as_array().cloned().unwrap_or_default();
    html! {
        @if !list.is_empty() {
            h2 { "Links" }
            ul {
                @for l in &list {
                    @let href = l["href"].as_str().unwrap_or("");
                    @let html_ok = !l["type"].as_str().unwrap_or("").contains("openapi");
                    li {
                        a href=(if html_ok { as_page(href) } else { href.to_owned() }) {
                            (l["title"].as_str().unwrap_or(href))
                        }
                        " (" (l["rel"].as_str().unwrap_or("")) ")"
                    }
                }
            }
        }
    }
}

fn other(document: &Value) -> Markup {
    html! {
        @if let Some(d) = document["description"].as_str() { p { (d) } }
        @if let Some(classes) = document["conformsTo"].as_array() {
            h2 { "Conformance classes" }
            ul { @for c in classes { li { (c.as_str().unwrap_or("")) } } }
        }
        @if let Some(list) = document["collections"].as_array() {
            h2 { "Collections" }
            table {
                thead { tr { th { "Collection" } th { "Description" } th.num { "Features" } } }
                tbody {
                    @for c in list {
                        @let items = c["links"].as_array().and_then(|l| l.iter().find(|l| l["rel"] == "items"));
                        tr {
                            td { a href=(as_page(items.and_then(|l| l["href"].as_str()).unwrap_or(""))) { (c["title"].as_str().unwrap_or("")) } }
                            td { (c["description"].as_str().unwrap_or("")) }
                            td.num { (c["numberOfFeatures"]) }
                        }
                    }
                }
            }
        }
        @if document.get("extent").is_some() {
            p { "Features: " (document["numberOfFeatures"]) "; extent: " code { (document["extent"]["spatial"]["bbox"]) } }
        }
        (links(document))
    }
}

fn features(document: &Value) -> Markup {
    let list = document["features"].as_array().cloned().unwrap_or_default();
    let columns: Vec<String> = list
        .first()
        .and_then(|f| f["properties"].as_object())
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let paging: Vec<(&str, String)> = document["links"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| Some((l["rel"].as_str()?, as_page(l["href"].as_str()?))))
        .collect();
    html! {
        p { (document["numberMatched"]) " features match; this page holds " (document["numberReturned"]) "." }
        table {
            thead { tr { th { "id" } th { "coordinates" } @for c in &columns { th { (c) } } } }
            tbody {
                @for f in &list {
                    @let own = f["links"].as_array().and_then(|l| l.iter().find(|l| l["rel"] == "self")).and_then(|l| l["href"].as_str()).unwrap_or("");
                    tr {
                        td { a href=(as_page(own)) { (f["id"].as_str().unwrap_or("")) } }
                        td { (f["geometry"]["coordinates"]) }
                        @for c in &columns { td { (cell(&f["properties"][c])) } }
                    }
                }
            }
        }
        (pager(&paging))
    }
}

fn feature(document: &Value) -> Markup {
    let properties = document["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    html! {
        dl {
            dt { "coordinates" } dd { (document["geometry"]["coordinates"]) }
            @for (k, v) in &properties { dt { (k) } dd { (cell(v)) } }
        }
        (links(document))
    }
}

fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
