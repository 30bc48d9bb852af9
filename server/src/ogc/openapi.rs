//! The OpenAPI 3.0 document of `/ogc` (`service-desc`): its paths, parameters and answers, so
//! that clients that read it (QGIS, OWSLib) find the collections and what `items` takes.

use super::collections::Collection;
use super::crs::Crs;
use serde_json::{Value, json};

pub fn document(base: &str) -> Value {
    let mut paths = serde_json::Map::new();
    let json_answer = |what: &str| json!({ "200": { "description": what, "content": { "application/json": { "schema": { "type": "object" } } } } });
    let f = json!({ "name": "f", "in": "query", "required": false,
        "schema": { "type": "string", "enum": ["json"] } });
    paths.insert("/".into(), json!({ "get": { "operationId": "getLandingPage", "summary": "The landing page", "parameters": [f], "responses": json_answer("links to the API definition, the conformance classes and the collections") } }));
    paths.insert("/conformance".into(), json!({ "get": { "operationId": "getConformance", "summary": "The conformance classes implemented", "parameters": [f], "responses": json_answer("the conformance classes") } }));
    paths.insert("/collections".into(), json!({ "get": { "operationId": "getCollections", "summary": "The collections", "parameters": [f], "responses": json_answer("the collections") } }));
    for c in Collection::ALL {
        let id = c.id();
        let mut items_parameters = vec![
            json!({ "name": "f", "in": "query", "required": false, "schema": { "type": "string", "enum": ["json", "geojson"] } }),
            json!({ "$ref": "#/components/parameters/limit" }),
            json!({ "$ref": "#/components/parameters/offset" }),
            json!({ "$ref": "#/components/parameters/bbox" }),
            json!({ "$ref": "#/components/parameters/datetime" }),
            json!({ "$ref": "#/components/parameters/crs" }),
            json!({ "$ref": "#/components/parameters/bbox-crs" }),
        ];
        for (name, kind) in c.queryable() {
            items_parameters.push(json!({ "name": name, "in": "query", "required": false,
                "description": format!("only features whose property {name} is this"),
                "schema": { "type": kind }, "style": "form", "explode": false }));
        }
        let features = json!({ "200": { "description": "the features",
            "content": { "application/geo+json": { "schema": { "type": "object" } } } },
            "400": { "description": "a parameter is not valid" } });
        paths.insert(format!("/collections/{id}"), json!({ "get": { "operationId": format!("describe_{id}"), "summary": format!("The collection {id}"), "parameters": [f], "responses": json_answer("the collection") } }));
        paths.insert(format!("/collections/{id}/queryables"), json!({ "get": { "operationId": format!("queryables_{id}"), "summary": format!("What items of {id} filters on"), "responses": { "200": { "description": "a JSON Schema", "content": { "application/schema+json": { "schema": { "type": "object" } } } } } } }));
        paths.insert(format!("/collections/{id}/items"), json!({ "get": { "operationId": format!("items_{id}"), "summary": format!("The features of {id}"), "parameters": items_parameters, "responses": features } }));
        paths.insert(format!("/collections/{id}/items/{{featureId}}"), json!({ "get": { "operationId": format!("item_{id}"), "summary": format!("A feature of {id}"),
            "parameters": [ { "name": "featureId", "in": "path", "required": true, "schema": { "type": "string" } }, { "$ref": "#/components/parameters/crs" } ],
            "responses": { "200": { "description": "the feature", "content": { "application/geo+json": { "schema": { "type": "object" } } } }, "404": { "description": "no such feature" } } } }));
    }
    json!({
        "openapi": "3.0.3",
        "info": { "title": "Hydro API: OGC API – Features", "version": "1.0.0",
            "description": "Hydrological stations, their series and their newest values as features." },
        "servers": [ { "url": base } ],
        "paths": paths,
        "components": { "parameters": {
            "limit": { "name": "limit", "in": "query", "required": false, "style": "form", "explode": false,
                "schema": { "type": "integer", "minimum": 1, "maximum": 10000, "default": 10 } },
            "offset": { "name": "offset", "in": "query", "required": false,
                "schema": { "type": "integer", "minimum": 0, "default": 0 } },
            "bbox": { "name": "bbox", "in": "query", "required": false, "style": "form", "explode": false,
                "schema": { "type": "array", "minItems": 4, "maxItems": 6, "items": { "type": "number" } } },
            "datetime": { "name": "datetime", "in": "query", "required": false, "style": "form", "explode": false,
                "schema": { "type": "string" } },
            "crs": { "name": "crs", "in": "query", "required": false,
                "schema": { "type": "string", "format": "uri", "enum": Crs::offered() } },
            "bbox-crs": { "name": "bbox-crs", "in": "query", "required": false,
                "schema": { "type": "string", "format": "uri", "enum": Crs::offered() } },
        } },
    })
}
