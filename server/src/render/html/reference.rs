//! The OpenAPI document as a page for people: `/v1/openapi.json` asked for by a browser (an
//! `Accept` that prefers `text/html`, or `format=html`). Every operation with its parameters
//! (where they go, whether required, what they take), its request bodies and its answers,
//! read from the same document the JSON answer is, so the two cannot disagree. Plain HTML, no
//! script: a reference is read, searched with the browser's find and printed.

use crate::render::format::Format;
use crate::render::html::pages::Site;
use crate::render::html::{self, Frame};
use crate::render::reply::{Reply, built};
use http::HeaderMap;
use maud::{Markup, html};
use serde_json::Value;

/// The page of `document` (an OpenAPI 3.1 document, as JSON).
pub fn page(site: &Site<'_>, document: &Value, json_url: String) -> Reply {
    let title = format!(
        "{} {} – API reference",
        text(&document["info"]["title"]),
        text(&document["info"]["version"])
    );
    let operations = operations(document);
    let content = html! {
        p { (text(&document["info"]["description"])) }
        p { "Every path is under " code { (site.base_url) } ". Answers are JSON unless "
            code { "format" } " or " code { "Accept" } " asks for another format." }
        h2 { "Operations" }
        ul {
            @for op in &operations {
                li { a href={ "#" (op.id) } { code { (op.method.to_uppercase()) " " (op.path) } }
                     " – " (op.summary) }
            }
        }
        @for op in &operations { (operation(op)) }
        h2 { "Schemas" }
        p { "The JSON Schemas of the answers:" }
        ul {
            @if let Some(schemas) = document["components"]["schemas"].as_object() {
                @for name in schemas.keys() {
                    li { a href=(format!("{}/schemas/{name}.json", site.base_url)) { (name) } }
                }
            }
        }
    };
    let frame = Frame {
        title: &title,
        service: &site.config.title,
        trail: vec![(site.config.title.clone(), format!("{}/", site.base_url))],
        formats: vec![("JSON".to_owned(), json_url)],
        head: html! {},
    };
    let page = html::page(frame, content);
    built(page.into_bytes(), Format::HTML, HeaderMap::new())
}

/// One operation of the document.
struct Operation<'a> {
    id: String,
    method: &'a str,
    path: &'a str,
    summary: String,
    item: &'a Value,
}

/// The operations in the document's order of paths, GET before POST.
fn operations(document: &Value) -> Vec<Operation<'_>> {
    let Some(paths) = document["paths"].as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (path, item) in paths {
        for method in ["get", "post"] {
            let Some(op) = item.get(method) else { continue };
            let id = match op["operationId"].as_str() {
                Some(id) => id.to_owned(),
                None => format!("{method}-{path}"),
            };
            out.push(Operation {
                id,
                method,
                path,
                summary: text(&op["summary"]),
                item: op,
            });
        }
    }
    out
}

/// A parameter as rows of the table: (name, where, required, schema, meaning). An object
/// exploded into the query (`style: form`, `explode: true`) is its properties, each a query
/// parameter of its own, as a client sends them.
fn parameter_rows(p: &Value) -> Vec<(String, String, bool, Value, String)> {
    let exploded = p["style"] == "form" && p["explode"] == true && p["schema"]["type"] == "object";
    let Some(properties) = p["schema"]["properties"].as_object().filter(|_| exploded) else {
        let required = p["required"].as_bool() == Some(true);
        let row = (
            text(&p["name"]),
            text(&p["in"]),
            required,
            p["schema"].clone(),
            text(&p["description"]),
        );
        return vec![row];
    };
    let required: Vec<&Value> = p["schema"]["required"]
        .as_array()
        .map(|r| r.iter().collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(name, schema)| {
            let needed = required.iter().any(|r| r.as_str() == Some(name));
            (
                name.clone(),
                text(&p["in"]),
                needed,
                schema.clone(),
                text(&p["description"]),
            )
        })
        .collect()
}

fn operation(op: &Operation<'_>) -> Markup {
    let parameters: Vec<_> = op.item["parameters"]
        .as_array()
        .map(|ps| ps.iter().flat_map(parameter_rows).collect())
        .unwrap_or_default();
    html! {
        section id=(op.id) {
            h2 { code { (op.method.to_uppercase()) " " (op.path) } }
            p { (op.summary) }
            @if let Some(d) = op.item["description"].as_str() { p { (d) } }
            @if !parameters.is_empty() {
                table {
                    thead { tr { th { "Parameter" } th { "In" } th { "Required" } th { "Takes" } th { "Meaning" } } }
                    tbody {
                        @for (name, place, required, schema, meaning) in &parameters {
                            tr {
                                td { code { (name) } }
                                td { (place) }
                                td { @if *required { "yes" } }
                                td { (schema_text(schema)) }
                                td { (meaning) }
                            }
                        }
                    }
                }
            }
            @if let Some(bodies) = op.item["requestBody"]["content"].as_object() {
                p { "Body: " (media_types(bodies.keys())) }
            }
            @if let Some(responses) = op.item["responses"].as_object() {
                table {
                    thead { tr { th { "Status" } th { "Meaning" } th { "Formats" } } }
                    tbody {
                        @for (status, r) in responses {
                            tr {
                                td { (status) }
                                td { (text(&r["description"])) }
                                td { @if let Some(c) = r["content"].as_object() { (media_types(c.keys())) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn media_types<'a>(types: impl Iterator<Item = &'a String>) -> String {
    types.map(String::as_str).collect::<Vec<_>>().join(", ")
}

/// A JSON text as shown (numbers and other values as JSON writes them; nothing for null).
fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What a schema takes, in a few words: its type or its values, its bounds and its default.
fn schema_text(schema: &Value) -> String {
    if let Some(values) = schema["enum"].as_array() {
        let values: Vec<String> = values.iter().map(text).collect();
        return format!("one of {}", values.join(", "));
    }
    if let Some(alternatives) = schema["anyOf"].as_array().or(schema["oneOf"].as_array()) {
        let parts: Vec<String> = alternatives.iter().map(schema_text).collect();
        return parts.join(" or ");
    }
    if let Some(reference) = schema["$ref"].as_str() {
        return reference.rsplit('/').next().unwrap_or(reference).to_owned();
    }
    let mut out = match (schema["type"].as_str(), schema["prefixItems"].as_array()) {
        (Some("array"), Some(items)) => {
            let items: Vec<String> = items.iter().map(schema_text).collect();
            format!("list: {}", items.join("; "))
        }
        (Some("array"), None) => format!("list of {}", schema_text(&schema["items"])),
        (Some(kind), _) => kind.to_owned(),
        (None, _) => text(&schema["type"]),
    };
    if let Some(format) = schema["format"].as_str() {
        out.push_str(&format!(" ({format})"));
    }
    // A long pattern says less than an example.
    match (schema["pattern"].as_str(), schema.get("example")) {
        (Some(pattern), _) if pattern.len() <= 40 => out.push_str(&format!(" matching {pattern}")),
        (_, Some(example)) => out.push_str(&format!(", e.g. {}", text(example))),
        _ => {}
    }
    for (key, word) in [
        ("minimum", "at least"),
        ("exclusiveMinimum", "above"),
        ("maximum", "at most"),
    ] {
        if let Some(n) = schema.get(key) {
            out.push_str(&format!(", {word} {n}"));
        }
    }
    if let Some(d) = schema.get("default") {
        out.push_str(&format!(", default {}", text(d)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::schema_text;
    use serde_json::json;

    #[test]
    fn schemas_read_as_words() {
        assert_eq!(
            schema_text(&json!({"enum": ["json", "html"]})),
            "one of json, html"
        );
        assert_eq!(
            schema_text(&json!({"type": "integer", "minimum": 0, "default": 100})),
            "integer, at least 0, default 100"
        );
        assert_eq!(
            schema_text(&json!({"anyOf": [{"type": "string", "format": "date-time"},
                                          {"type": "array", "items": {"type": "number"}}]})),
            "string (date-time) or list of number"
        );
        assert_eq!(
            schema_text(&json!({"$ref": "#/components/schemas/problem"})),
            "problem"
        );
        assert_eq!(
            schema_text(&json!({"type": "array", "prefixItems": [
                {"type": "number", "minimum": -180}, {"type": "number", "exclusiveMinimum": 0}]})),
            "list: number, at least -180; number, above 0"
        );
        assert_eq!(
            schema_text(
                &json!({"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}(,[A-Za-z0-9]+)*$",
                                "example": "water-level-15min"})
            ),
            "string, e.g. water-level-15min"
        );
    }
}
