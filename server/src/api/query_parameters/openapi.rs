//! The document served at `/v1/openapi.json`: `schemas/openapi.json` (paths, answers and
//! schemas, made by `schemas/build.py`) with each operation's query parameters, and the bodies
//! of the POSTs that take them, filled in from [`super::ALL`] as [`super::doc`] describes them.

use super::doc::{Doc, Group, MAX_LIST, Own};
use super::{ALL, Endpoint};
use crate::render::format::{Answer, Format};
use crate::render::schemas::OPENAPI;
use serde_json::{Map, Value, json};
use std::sync::LazyLock;

/// The OpenAPI parameter objects of `endpoint`'s query parameters, in [`ALL`]'s order (an
/// object parameter where its first member comes).
pub fn parameters(endpoint: Endpoint) -> Vec<Value> {
    let mut out = Vec::new();
    let mut groups: Vec<&'static str> = Vec::new();
    for p in ALL.iter().filter(|p| p.taken(endpoint, false)) {
        match p.doc() {
            Doc::Own(own) => out.push(own_parameter(p.name(), own, endpoint)),
            Doc::Member(group) if !groups.contains(&group.name) => {
                groups.push(group.name);
                out.push(
                    json!({"name": group.name, "in": "query", "required": group.required,
                                "style": "form", "explode": true,
                                "description": group.description, "schema": (group.schema)()}),
                );
            }
            Doc::Member(_) => {}
        }
    }
    out
}

fn own_parameter(name: &str, own: &Own, endpoint: Endpoint) -> Value {
    let mut p = json!({"name": name, "in": "query", "required": own.required});
    if own.array {
        p["style"] = json!("form");
        p["explode"] = json!(false);
    }
    p["description"] = json!(own.description);
    p["schema"] = (own.schema)(endpoint);
    if let Some(example) = own.example {
        p["example"] = example();
    }
    p
}

/// The request body of a POST that takes `endpoint`'s query parameters in its body: an object
/// with a member per parameter (the members of the object parameters, with their rules), lists
/// and arrays as in the query string (comma lists as one string; `bbox` and `near` as arrays
/// of numbers in JSON, comma-separated in a form); in JSON a comma list may also be an array
/// of its items.
pub fn body(endpoint: Endpoint) -> Value {
    let mut props = Map::new();
    let mut rules: Vec<Value> = Vec::new();
    let mut arrays: Vec<&str> = Vec::new();
    let mut groups: Vec<&'static str> = Vec::new();
    for p in ALL.iter().filter(|p| p.taken(endpoint, false)) {
        match p.doc() {
            Doc::Own(own) => {
                props.insert(p.name().to_owned(), (own.schema)(endpoint));
                if own.array {
                    arrays.push(p.name());
                }
            }
            Doc::Member(group) if !groups.contains(&group.name) => {
                groups.push(group.name);
                group_members(group, &mut props, &mut rules);
            }
            Doc::Member(_) => {}
        }
    }
    let schema = json!({"type": "object", "additionalProperties": false,
                        "properties": props.clone(), "allOf": rules});
    let encoding: Map<String, Value> = arrays
        .iter()
        .map(|name| {
            (
                (*name).to_owned(),
                json!({"style": "form", "explode": false}),
            )
        })
        .collect();
    let json_props: Map<String, Value> = props
        .into_iter()
        .map(|(name, p)| {
            let list = p["pattern"]
                .as_str()
                .filter(|pattern| p["type"] == "string" && pattern.starts_with('^'))
                .and_then(|pattern| pattern.find("(?:,").map(|end| &pattern[1..end]));
            let p = match list {
                Some(one) => json!({"anyOf": [p, {"type": "array", "minItems": 1,
                                                  "maxItems": MAX_LIST,
                                                  "items": {"type": "string",
                                                            "pattern": format!("^{one}$")}}]}),
                None => p,
            };
            (name, p)
        })
        .collect();
    let mut json_schema = schema.clone();
    json_schema["properties"] = Value::Object(json_props);
    json!({"required": true,
           "description": "the parameters of the query string, for selections too long for a URL \
                           (at most 1 MiB): a form, or a JSON object with lists as strings or \
                           arrays, numbers as numbers; a parameter in both the query and the body \
                           is a 400",
           "content": {"application/x-www-form-urlencoded": {"schema": schema, "encoding": encoding},
                       "application/json": {"schema": json_schema}}})
}

/// The members of an object parameter as members of a body, and its rules.
fn group_members(group: &Group, props: &mut Map<String, Value>, rules: &mut Vec<Value>) {
    let schema = (group.schema)();
    if let Some(dependent) = schema.get("dependentRequired") {
        // aggregation: the others need aggregate.
        extend(props, &schema["properties"]);
        rules.push(json!({"dependentRequired": dependent}));
    } else if let Some(Value::Array(variants)) = schema.get("oneOf") {
        // statistics: type, and the members each type takes.
        let mut members = Map::new();
        for v in variants {
            extend(&mut members, &v["properties"]);
        }
        let mut types: Vec<Value> = Vec::new();
        for v in variants {
            let kind = &v["properties"]["type"];
            match kind.get("enum") {
                Some(Value::Array(names)) => types.extend(names.iter().cloned()),
                _ => types.push(kind["const"].clone()),
            }
        }
        extend(props, &Value::Object(members.clone()));
        props.insert("type".into(), json!({"enum": types}));
        rules.push(json!({"required": ["type"]}));
        for v in variants {
            let others: Vec<Value> = members
                .keys()
                .filter(|m| v["properties"].get(m.as_str()).is_none())
                .map(|m| json!({"required": [m]}))
                .collect();
            rules.push(
                json!({"if": {"properties": {"type": v["properties"]["type"]}},
                              "then": {"not": {"anyOf": others}}}),
            );
        }
    } else if schema.get("properties").is_some() {
        // series: its members, one of them required.
        extend(props, &schema["properties"]);
        rules.push(json!({"anyOf": schema["anyOf"]}));
    } else if let Some(Value::Array(alternatives)) = schema.get("anyOf") {
        // window: from/to, recent or last.
        for alt in alternatives {
            extend(props, &alt["properties"]);
        }
        let exclusive = [
            ["recent", "last"],
            ["recent", "from"],
            ["recent", "to"],
            ["last", "from"],
            ["last", "to"],
        ];
        let pairs: Vec<Value> = exclusive
            .iter()
            .map(|pair| json!({"required": pair}))
            .collect();
        rules.push(json!({"not": {"anyOf": pairs}}));
    }
}

fn extend(props: &mut Map<String, Value>, more: &Value) {
    if let Value::Object(more) = more {
        for (k, v) in more {
            props.insert(k.clone(), v.clone());
        }
    }
}

/// Where an operation of `schemas/openapi.json` takes its query parameters: in the query
/// (those of an endpoint, but those named) or in its body.
enum Placement {
    Query(Endpoint, &'static [&'static str]),
    Body(Endpoint),
}

fn placement(operation_id: &str) -> Option<Placement> {
    use Placement::{Body, Query};
    Some(match operation_id {
        "landing" => Query(Endpoint::Landing, &[]),
        "getOpenApi" => Query(Endpoint::Document, &[]),
        "listStations" => Query(Endpoint::Stations, &[]),
        "getStation" => Query(Endpoint::Station, &[]),
        "listParameters" => Query(Endpoint::Parameters, &[]),
        "getParameter" => Query(Endpoint::Parameter, &[]),
        "listCharacteristics" => Query(Endpoint::Characteristics, &[]),
        "getCharacteristic" => Query(Endpoint::Characteristic, &[]),
        "listValues" => Query(Endpoint::Values, &[]),
        "listSeriesValues" => Query(Endpoint::ManyValues, &[]),
        "listSeriesValuesPosted" => Body(Endpoint::PostedValues),
        "listLatest" => Query(Endpoint::Latest, &[]),
        "getStatistics" => Query(Endpoint::Statistics, &[]),
        "listSeriesStatistics" => Query(Endpoint::ManyStatistics, &[]),
        "listSeriesStatisticsPosted" => Body(Endpoint::PostedStatistics),
        "listVersions" => Query(Endpoint::Versions, &[]),
        "getVersion" => Query(Endpoint::Version, &[]),
        "querySql" => Query(Endpoint::Sql, &[]),
        // The statement is the body.
        "querySqlPosted" => Query(Endpoint::Sql, &["q"]),
        _ => return None,
    })
}

/// `template` (an OpenAPI document whose operations list their path parameters alone) with
/// every operation's query parameters, or the body that takes them.
fn completed(template: &str) -> Result<Value, String> {
    let mut document: Value =
        serde_json::from_str(template).map_err(|e| format!("the OpenAPI document: {e}"))?;
    let paths = document["paths"]
        .as_object_mut()
        .ok_or("the OpenAPI document has no paths")?;
    for item in paths.values_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for operation in item.values_mut() {
            let id = operation["operationId"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            match placement(&id) {
                Some(Placement::Query(endpoint, but)) => {
                    let Some(Value::Array(listed)) = operation.get_mut("parameters") else {
                        return Err(format!("operation {id} has no parameters"));
                    };
                    listed.extend(
                        parameters(endpoint)
                            .into_iter()
                            .filter(|p| !but.iter().any(|n| p["name"] == *n)),
                    );
                }
                Some(Placement::Body(endpoint)) => operation["requestBody"] = body(endpoint),
                None => {}
            }
            if let Some(Placement::Query(endpoint, _) | Placement::Body(endpoint)) = placement(&id)
            {
                media_types(operation, endpoint.answer())?;
            }
        }
    }
    Ok(document)
}

/// The media types of `operation`'s answers: those of every format its answer is offered in,
/// as the formats table says, each described as its format describes it (JSON by the
/// template's schema of the answer); a partial answer (206) is bytes in any of them.
fn media_types(operation: &mut Value, answer: Answer) -> Result<(), String> {
    let id = operation["operationId"].clone();
    let responses = operation["responses"]
        .as_object_mut()
        .ok_or_else(|| format!("operation {id} has no responses"))?;
    let answer_schema = responses["200"]["content"]["application/json"]["schema"].clone();
    if answer_schema.is_null() {
        return Err(format!("operation {id} has no JSON schema of its answer"));
    }
    let offered = Format::offered(answer);
    let content: Map<String, Value> = offered
        .iter()
        .map(|f| {
            let schema = f.openapi_schema(&answer_schema);
            (f.media_type().to_owned(), json!({ "schema": schema }))
        })
        .collect();
    responses["200"]["content"] = Value::Object(content);
    if let Some(partial) = responses.get_mut("206") {
        let bytes = json!({"schema": {"type": "string", "format": "binary"}});
        partial["content"] = offered
            .iter()
            .map(|f| (f.media_type().to_owned(), bytes.clone()))
            .collect::<Map<String, Value>>()
            .into();
    }
    Ok(())
}

static DOCUMENT: LazyLock<Result<String, String>> = LazyLock::new(|| {
    let document = completed(OPENAPI)?;
    serde_json::to_string_pretty(&document).map_err(|e| e.to_string())
});

/// The OpenAPI document served, made once.
pub fn document() -> Result<&'static str, String> {
    DOCUMENT.as_deref().map_err(Clone::clone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_of_the_template_is_completed() {
        let document: Value = serde_json::from_str(document().unwrap()).unwrap();
        let stations = &document["paths"]["/stations"]["get"]["parameters"];
        let names: Vec<&str> = stations
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "states",
                "waterBodyIds",
                "types",
                "bbox",
                "near",
                "q",
                "include",
                "limit",
                "offset",
                "sort",
                "fields",
                "format",
                "asOf"
            ]
        );
        let posted = &document["paths"]["/values"]["post"]["requestBody"]["content"];
        let members = &posted["application/json"]["schema"]["properties"];
        for name in ["parameters", "from", "recent", "aggregate", "bbox", "asOf"] {
            assert!(members.get(name).is_some(), "{name}");
        }
        // The statement of a POST to /v1/sql is its body.
        let sql = &document["paths"]["/sql"]["post"]["parameters"];
        assert!(sql.as_array().unwrap().iter().all(|p| p["name"] != "q"));
    }

    #[test]
    fn a_format_enum_is_the_formats_table() {
        let p = parameters(Endpoint::Latest);
        let format = p.iter().find(|p| p["name"] == "format").unwrap();
        assert_eq!(
            format["schema"]["enum"],
            json!([
                "json", "csv", "geojson", "ndjson", "arrow", "parquet", "tsv"
            ])
        );
    }
}
