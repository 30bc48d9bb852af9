#!/usr/bin/env python3
"""Writes the JSON Schemas and the OpenAPI 3.1 document of this directory.

Run `python3 schemas/build.py` after changing a resource; the server compiles the files in
and tests validate real responses against them.
"""
import json
import pathlib

HERE = pathlib.Path(__file__).parent
D = "https://json-schema.org/draft/2020-12/schema"
BASE = "https://hydro-api.dev/v1/schemas"

ts = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?[+-]\d{2}:\d{2}$",
      "description": "RFC 3339 with a numeric offset (never Z)"}
ints = {k: {"type": "integer", "minimum": 0} for k in ["total", "count", "limit", "offset", "totalPages"]}
pagination = {"type": "object", "additionalProperties": False,
              "required": ["total", "count", "limit", "offset", "page", "totalPages", "hasNextPage", "hasPreviousPage"],
              "properties": ints | {"page": {"type": "integer", "minimum": 1},
                                    "hasNextPage": {"type": "boolean"}, "hasPreviousPage": {"type": "boolean"}}}
meta = {"type": "object", "additionalProperties": False, "required": ["title", "version", "datasetVersion"],
        "properties": {"title": {"type": "string"}, "version": {"type": "string", "pattern": r"^\d+\.\d+\.\d+"},
                       "datasetVersion": {"type": "string", "description": "the dataset version the answer was "
                                          "read from, as /v1/versions lists it (version is the API's)"},
                       "description": {"type": "string"}, "descriptionUrl": {"type": "string"},
                       "baseUrl": {"type": "string"}, "publisherName": {"type": "string"},
                       "publisherEmail": {"type": "string"}, "licenseName": {"type": "string"},
                       "licenseUrl": {"type": "string"}, "schemaUrl": {"type": "string"}, "pagination": pagination}}
links = {"type": "array", "items": {"type": "object", "additionalProperties": False, "required": ["rel", "href"],
                                    "properties": {"rel": {"type": "string"}, "href": {"type": "string"},
                                                   "templated": {"const": True,
                                                                 "description": "href is a URI template"}}}}
period = {"type": "object", "additionalProperties": False, "properties": {"start": ts, "end": ts}}
parameter = {"type": "object", "additionalProperties": False, "properties": {
    "id": {"type": "string"}, "name": {"type": "string"}, "observedProperty": {"type": "string"},
    "unit": {"type": "string"}, "interval": {"type": "string", "pattern": "^P"},
    "availability": {"type": "array", "items": period}}}
characteristic = {"type": "object", "additionalProperties": False, "properties": {
    "id": {"type": "string"}, "name": {"type": "string"},
    "type": {"enum": ["mainValue", "statistic", "derived", "mark"]}, "parameterId": {"type": "string"},
    "value": {"type": "number"}, "unit": {"type": "string"}, "period": period, "description": {"type": "string"}}}
ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
station = {"type": "object", "additionalProperties": False, "properties": {
    "id": {"type": "string", "pattern": ID}, "name": {"type": "string"},
    "type": {"enum": ["surfaceWater", "groundwater", "weather"]},
    "state": {"type": "string", "pattern": "^DE-[A-Z]{2}$"}, "operator": {"type": "string"},
    "waterBodyId": {"type": "string"}, "waterBodyName": {"type": "string"},
    "coordinates": {"type": "object", "additionalProperties": False, "properties": {
        "lat": {"type": "number", "minimum": -90, "maximum": 90},
        "lon": {"type": "number", "minimum": -180, "maximum": 180}}},
    "riverKm": {"type": "number"},
    "gaugeZero": {"type": "object", "additionalProperties": False, "properties": {
        "value": {"type": "number"}, "unit": {"type": "string"}, "datum": {"type": "string"}}},
    "groundLevel": {"type": "number"}, "elevation": {"type": "number"},
    "distance": {"type": "number", "minimum": 0, "description": "great-circle distance in km (with near)"},
    "parameters": {"type": "array", "items": parameter},
    "characteristics": {"type": "array", "items": characteristic}}}
# A recorded gap (quality missing) is a row without a value: null, and only there.
GAP_VALUE = {"type": ["number", "null"],
             "description": "null only in a recorded gap: a row of quality missing, which has no value"}
ONLY_GAPS_NULL = {"if": {"properties": {"value": {"type": "null"}}, "required": ["value"]},
                  "then": {"properties": {"quality": {"const": "missing"}}}}
value = {"type": "object", "additionalProperties": False, "properties": {
    "timestamp": ts, "value": GAP_VALUE, "quality": {"type": "string"}}} | ONLY_GAPS_NULL

series_value = {"type": "object", "additionalProperties": False, "properties": {
    "stationId": {"type": "string", "pattern": ID}, "parameterId": {"type": "string"},
    "timestamp": ts, "value": GAP_VALUE, "quality": {"type": "string"}}} | ONLY_GAPS_NULL
# An aggregate's bucket: its start, the statistics as asked (named so), its count and coverage.
# A bucket between the first and the last with values may hold none: count 0, coverage 0 and
# null statistics.
STATISTIC_NUMBER = r"^(mean|min|max|sum|first|last|median|p([1-9]|[1-9][0-9]))$"
bucket_props = {"timestamp": ts, "count": {"type": "integer", "minimum": 0},
                "coverage": {"type": ["number", "null"], "minimum": 0,
                             "description": "values in the bucket over the values its whole length holds"}}
bucket_patterns = {STATISTIC_NUMBER: {"type": ["number", "null"]},
                   "^(minTime|maxTime)$": {"anyOf": [ts, {"type": "null"}]}}
bucket = {"type": "object", "additionalProperties": False, "properties": bucket_props,
          "patternProperties": bucket_patterns}
series_bucket = {"type": "object", "additionalProperties": False,
                 "properties": {"stationId": series_value["properties"]["stationId"],
                                "parameterId": {"type": "string"}} | bucket_props,
                 "patternProperties": bucket_patterns}
# A row of statistics: normals (month, day, the statistics asked, years), annual values
# (timestamp, year, min, minTime, max, maxTime, mean, sum, count, coverage) or a point of a duration
# curve (exceedance, value).
stat_props = {"month": {"type": "integer", "minimum": 1, "maximum": 12},
              "day": {"type": "integer", "minimum": 1, "maximum": 31},
              "years": {"type": "integer", "minimum": 1,
                        "description": "how many years' daily (monthly) means (sums, for "
                                       "precipitation) the row summarises"},
              "timestamp": ts, "year": {"type": "integer", "description": "the calendar year the year ends in"},
              "count": {"type": "integer", "minimum": 0},
              "coverage": bucket_props["coverage"],
              "exceedance": {"type": "number", "minimum": 0, "maximum": 1},
              "value": {"type": "number", "description": "the value exceeded that share of the time"}}
stat_row = {"type": "object", "additionalProperties": False, "properties": stat_props,
            "patternProperties": bucket_patterns}
series_stat_row = {"type": "object", "additionalProperties": False,
                   "properties": {"stationId": series_value["properties"]["stationId"],
                                  "parameterId": {"type": "string"}} | stat_props,
                   "patternProperties": bucket_patterns}
latest_value = {"type": "object", "additionalProperties": False,
                "required": ["stationId", "parameterId", "timestamp", "quality"], "properties": {
    "stationId": {"type": "string", "pattern": ID}, "stationName": {"type": "string"},
    "coordinates": station["properties"]["coordinates"], "parameterId": {"type": "string"},
    "unit": {"type": "string"}, "timestamp": ts, "value": {"type": ["number", "null"]},
    "quality": {"type": "string"}}}


dataset_version = {
    "type": "object", "additionalProperties": False,
    "required": ["id", "generation", "published", "current", "counts", "publish", "url"],
    "properties": {
        "id": {"type": "string", "description": "the version's id, for asOf and citations"},
        "generation": {"type": "integer", "minimum": 1, "description": "its sequence number (asOf takes it too)"},
        "published": ts | {"pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$",
                           "description": "when it became current (UTC)"},
        "current": {"type": "boolean", "description": "whether it is the version answers come from without asOf"},
        "counts": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
        "publish": {"description": "what the publish did; null for versions written before it was recorded",
                    "anyOf": [{"type": "null"},
                              {"type": "object", "additionalProperties": False,
                               "required": ["kind", "series", "stationMonths"],
                               "properties": {"kind": {"enum": ["import", "append", "generate", "compact"]},
                                              "series": {"type": "integer", "minimum": 0,
                                                         "description": "series of the station-months written"},
                                              "stationMonths": {"type": "integer", "minimum": 0,
                                                                "description": "station-months written"}}}]},
        "url": {"type": "string"}}}


def envelope(title, data):
    return {"title": title, "type": "object", "additionalProperties": False, "required": ["meta", "data"],
            "properties": {"meta": meta, "links": links, "data": data}}


SCHEMAS = {
    "landing": envelope("Landing page", {"type": "object", "properties": {
        "datasetVersion": {"type": "string"}, "datasetCreated": {"type": "string"},
        "citation": {"type": "string", "description": "publisher, title, version, date and the URL that "
                                                      "answers as this version did (asOf)"},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}}}}),
    "stations": envelope("List of stations", {"type": "array", "items": station}),
    "station": envelope("One station", station),
    "parameters": envelope("Parameters of a station", {"type": "array", "items": parameter}),
    "parameter": envelope("One parameter", parameter),
    "values": envelope("Values of one series", {"type": "array", "items": value}),
    "seriesValues": envelope("Values of many series, by station, parameter and time",
                             {"type": "array", "items": series_value,
                              "examples": [[{"stationId": "koeln", "parameterId": "water-level-15min",
                                             "timestamp": "2024-01-31T00:00:00+00:00", "value": 300.0,
                                             "quality": "good"}]]}),
    "aggregates": envelope("Aggregates of one series: a row a bucket with values",
                           {"type": "array", "items": bucket,
                            "examples": [[{"timestamp": "2024-03-31T00:00:00+01:00", "mean": 187.2,
                                           "max": 190.4, "count": 92, "coverage": 1.0}]]}),
    "seriesAggregates": envelope("Aggregates of many series, by station, parameter and bucket",
                                 {"type": "array", "items": series_bucket}),
    "statistics": envelope("Statistics of one series over a reference period",
                           {"type": "array", "items": stat_row,
                            "examples": [[{"month": 2, "day": 29, "mean": 212.4, "years": 5}]]}),
    "seriesStatistics": envelope("Statistics of many series, by station and parameter",
                                 {"type": "array", "items": series_stat_row}),
    "latest": envelope("The newest value of each series",
                       {"type": "array", "items": latest_value,
                        "examples": [[{"stationId": "koeln", "stationName": "Köln",
                                       "coordinates": {"lat": 50.9368, "lon": 6.9633},
                                       "parameterId": "water-level-15min", "unit": "cm",
                                       "timestamp": "2024-01-31T00:00:00+00:00", "value": 300.0,
                                       "quality": "good"}]]}),
    "characteristics": envelope("Characteristic values of a station", {"type": "array", "items": characteristic}),
    "versions": envelope("The versions of the dataset the store holds, newest first",
                         {"type": "array", "items": dataset_version}),
    "version": envelope("One version of the dataset", dataset_version),
    "characteristic": envelope("One characteristic value", characteristic),
    "sql": envelope("The rows of a SQL query",
                    {"type": "array", "items": {"type": "object", "description": "a row: the statement's columns "
                                                "by name, times as RFC 3339 text, nulls as null"}}),
    "health": {"title": "Health", "type": "object", "additionalProperties": False,
               "required": ["status", "version", "uptimeSeconds", "checks"],
               "properties": {"status": {"enum": ["ok", "degraded", "down"]}, "version": {"type": "string"},
                              "uptimeSeconds": {"type": "integer", "minimum": 0},
                              "checks": {"type": "object", "required": ["catalog", "storage"],
                                         "properties": {"catalog": {"type": "object", "required": ["status"]},
                                                        "storage": {"type": "object", "required": ["status"]}}}}},
    "problem": {"title": "RFC 9457 problem details", "type": "object", "additionalProperties": False,
                "required": ["type", "title", "status", "detail", "instance"],
                "properties": {"type": {"type": "string"}, "title": {"type": "string"},
                               "status": {"type": "integer", "minimum": 400, "maximum": 599},
                               "detail": {"type": "string"}, "instance": {"type": "string"},
                               "invalidParams": {"type": "array", "items": {
                                   "type": "object", "required": ["name", "reason"], "additionalProperties": False,
                                   "properties": {"name": {"type": "string"}, "reason": {"type": "string"}}}}}},
}


# Query parameters are not written here: the server defines each once
# (server/src/api/query_parameters), and fills every operation's parameters, and the bodies of
# the POSTs that take them, into this document when it serves it. An operation here lists its
# path parameters alone.


def problem(desc):
    return {"description": desc, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/problem"}}}}


ERRORS = {"400": problem("bad or unknown parameter"), "404": problem("unknown resource"),
          "405": problem("method not allowed"), "406": problem("no acceptable format"),
          "414": problem("URI too long"), "503": problem("overloaded or storage unavailable")}
def op(op_id, summary, schema, params):
    """An operation answering the JSON Schema `schema` in JSON. The server adds the media types
    of the other formats the operation offers, from its formats table."""
    content = {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}
    return {"get": {"operationId": op_id, "summary": summary, "parameters": params,
                    "responses": {"200": {"description": "OK", "content": content}, "304": {"description": "Not modified"}} | ERRORS}}


def or_aggregates(path, aggregates):
    """A values operation answers aggregates (the schema `aggregates`) when asked for them."""
    content = path["get"]["responses"]["200"]["content"]["application/json"]
    content["schema"] = {"anyOf": [content["schema"], {"$ref": f"#/components/schemas/{aggregates}"}]}
    return path


def ranged(path):
    """Value answers also come in byte ranges (a resumed download), while the answer store is on."""
    responses = path["get"]["responses"]
    part = {"schema": {"type": "string", "format": "binary"}}
    responses["206"] = {"description": "Partial content: the byte range asked for with Range (and If-Range)",
                        "content": {media: part for media in responses["200"]["content"]}}
    responses["416"] = problem("the byte range starts beyond the end of the answer")
    return path


def posted(path):
    """The operation `path` has for GET, as POST too: the same answer (and ETag) with the
    parameters in the body (which the server describes), in the data formats (the server's
    formats table leaves out the charts: images a page links to with a URL)."""
    get = path["get"]
    responses = {k: v for k, v in get["responses"].items() if k not in ("206", "304", "416")}
    responses |= {"412": problem("If-None-Match matches: a POST is not answered 304"),
                  "413": problem("request body larger than 1 MiB"),
                  "415": problem("request body neither a form nor JSON")}
    path["post"] = {"operationId": get["operationId"] + "Posted",
                    "summary": get["summary"] + " (parameters in the body)", "parameters": [],
                    "responses": responses}
    return path


path_id = lambda name, d: {"name": name, "in": "path", "required": True, "description": d,
                           "schema": {"type": "string", "pattern": ID}}
STATION_ID = path_id("stationId", "station id")
PARAMETER_ID = path_id("parameterId", "parameter id, e.g. water-level-15min")
CHAR_ID = path_id("characteristicId", "characteristic id, e.g. mhw")
SQL_STATEMENT = {"type": "string", "minLength": 1,
                 "example": "SELECT station, max(value) AS highest FROM values WHERE parameter = 'water-level-15min' "
                            "GROUP BY station ORDER BY highest DESC LIMIT 10"}
SQL_LIMITS = {"413": problem("the answer has more rows than the server's sql_max_rows (10 000 000)"),
              "422": problem("the query needs more memory than the server's sql_memory_bytes (512 MiB), with "
                             "sql_spill_bytes (2 GiB) of disk to spill to"),
              "429": problem("as many SQL queries are running as the server runs at once; retry after Retry-After"),
              "504": problem("the query ran longer than the server's sql_timeout_secs (60)")}


def sql_path():
    """`/v1/sql`: the statement as q, in the query string or in a POST body (the statement itself
    as application/sql or text/plain, or q in a JSON object or form)."""
    path = op("querySql", "The rows of one read-only SQL statement (SELECT, WITH or EXPLAIN) over the tables "
                          "values, daily (the rollups), stations, parameters and characteristics; see docs/sql.md",
              "sql", [])
    get = path["get"]
    # Never 304: SQL answers are not cached (a statement may ask for now() or random()).
    get["responses"] = {k: v for k, v in get["responses"].items() if k != "304"} | SQL_LIMITS
    # The body is the statement; format and asOf go in the query string.
    members = {"type": "object", "additionalProperties": False, "required": ["q"],
               "properties": {"q": SQL_STATEMENT}}
    text = {"schema": {"type": "string", "minLength": 1}}
    responses = get["responses"] | {"413": problem("request body larger than 1 MiB, or " + SQL_LIMITS["413"]["description"]),
                                    "415": problem("request body neither SQL, text, a form nor JSON")}
    path["post"] = {"operationId": "querySqlPosted", "summary": get["summary"] + " (the statement in the body)",
                    "parameters": [],
                    "requestBody": {"required": True, "content": {
                        "application/sql": text, "text/plain": text,
                        "application/json": {"schema": members},
                        "application/x-www-form-urlencoded": {"schema": members}}},
                    "responses": responses}
    return path


S = "/stations/{stationId}"
openapi = {
    "openapi": "3.1.0",
    "info": {"title": "Hydro API", "version": "1.0.0",
             "description": "Hydrological Data API Standard, EXTENDED variant. Errors are RFC 9457 problem details."},
    "servers": [{"url": "/v1"}],
    "paths": {
        "/": op("landing", "Landing page", "landing", []),
        "/health": {"get": {"operationId": "health", "summary": "Operational status", "parameters": [],
                            "responses": {"200": {"description": "ok or degraded", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/health"}}}},
                                          "503": {"description": "down", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/health"}}}}}}},
        "/stations": op("listStations", "Stations", "stations", []),
        "/values": posted(ranged(or_aggregates(op("listSeriesValues",
                                    "Values of many series in one answer: stationId, parameterId, timestamp, "
                                    "value, quality by station, parameter and time; each series' window as on "
                                    "the single-series endpoint", "seriesValues", []),
                                               "seriesAggregates"))),
        "/statistics": posted(op("listSeriesStatistics", "Statistics of many series over a reference period, "
                                                         "rows by station and parameter", "seriesStatistics",
                                 [])),
        "/latest": op("listLatest", "The newest value of each selected series, with its station's name and "
                                    "coordinates (GeoJSON: a map layer of current values)", "latest", []),
        S: op("getStation", "One station", "station", [STATION_ID]),
        S + "/parameters": op("listParameters", "Parameters of a station", "parameters", [STATION_ID]),
        S + "/parameters/{parameterId}": op("getParameter", "One parameter", "parameter",
                                            [STATION_ID, PARAMETER_ID]),
        S + "/parameters/{parameterId}/values": ranged(or_aggregates(op("listValues", "Values of a series", "values",
                                                                        [STATION_ID, PARAMETER_ID]),
                                                                     "aggregates")),
        S + "/parameters/{parameterId}/statistics": op("getStatistics",
                                                       "Statistics of a series over a reference period",
                                                       "statistics", [STATION_ID, PARAMETER_ID]),
        S + "/characteristics": op("listCharacteristics", "Characteristic values", "characteristics",
                                   [STATION_ID]),
        S + "/characteristics/{characteristicId}": op("getCharacteristic", "One characteristic value", "characteristic",
                                                      [STATION_ID, CHAR_ID]),
        "/versions": op("listVersions", "The versions of the dataset the store holds, newest first: ids to cite "
                                        "and to give as asOf", "versions", []),
        "/versions/{versionId}": op("getVersion", "One version of the dataset", "version",
                                    [path_id("versionId", "a version id, a generation number or a time (the "
                                                          "version current then)")]),
        "/sql": sql_path(),
        "/schemas/{name}": {"get": {"operationId": "getSchema", "summary": "JSON Schema of a resource",
                                    "parameters": [{"name": "name", "in": "path", "required": True,
                                                    "schema": {"type": "string", "enum": [f"{n}.json" for n in SCHEMAS]}}],
                                    "responses": {"200": {"description": "JSON Schema", "content": {"application/json": {"schema": {"type": "object"}}}},
                                                  "404": problem("unknown schema")}}},
        "/openapi.json": {"get": {"operationId": "getOpenApi", "summary": "This document (to a browser: as a page)",
                                  "parameters": [],
                                  "responses": {"200": {"description": "OpenAPI 3.1",
                                                        "content": {"application/json": {"schema": {"type": "object"}},
                                                                    "text/html": {"schema": {"type": "string"}}}},
                                                "400": problem("bad format")}}},
    },
    "components": {"schemas": SCHEMAS},
}

# Every data answer, and the landing page, can be asked of an earlier version (asOf).
for path, item in openapi["paths"].items():
    if path.startswith(("/versions", "/schemas", "/health", "/openapi")):
        continue
    for operation in item.values():
        operation["responses"]["410"] = problem("the version asOf names was removed (vacuum)")

for name, schema in SCHEMAS.items():
    doc = {"$schema": D, "$id": f"{BASE}/{name}.json"} | schema
    (HERE / f"{name}.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
(HERE / "openapi.json").write_text(json.dumps(openapi, indent=2, ensure_ascii=False) + "\n")
