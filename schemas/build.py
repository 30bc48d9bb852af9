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
STATISTIC_NUMBER = r"^(mean|min|max|sum|first|last|median|p([1-9]|[1-9][0-9]))$"
bucket_props = {"timestamp": ts, "count": {"type": "integer", "minimum": 1},
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
# (timestamp, year, min, minTime, max, maxTime, mean, count, coverage) or a point of a duration
# curve (exceedance, value).
stat_props = {"month": {"type": "integer", "minimum": 1, "maximum": 12},
              "day": {"type": "integer", "minimum": 1, "maximum": 31},
              "years": {"type": "integer", "minimum": 1,
                        "description": "how many years' daily (monthly) means the row summarises"},
              "timestamp": ts, "year": {"type": "integer", "description": "the calendar year the year ends in"},
              "count": {"type": ["integer", "null"], "minimum": 0},
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


def q(name, description, schema=None, example=None):
    p = {"name": name, "in": "query", "required": False, "description": description,
         "schema": schema or {"type": "string", "minLength": 1}}
    if example is not None:
        p["example"] = example
    return p


# What the server accepts, exactly enough that a generated client never sends a schema-valid
# request that is refused: comma lists of at most 1000 items, names from fixed lists.
MAX_LIST = 1000
MAX_INT = 9223372036854775807
ID_RE = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"


def alts(names):
    return "(?:" + "|".join(n.replace(".", r"\.") for n in names) + ")"


def ci(name):
    """`name` in any case, as the server compares it."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in name)


def comma_list(item, example=None):
    """Items are trimmed of white space and `+` (a form-encoded space) by the server."""
    one = rf"[\s+]*{item}[\s+]*"
    s = {"type": "string", "pattern": f"^{one}(?:,{one}){{0,{MAX_LIST - 1}}}$"}
    if example:
        s["example"] = example
    return s


def fields_param(names):
    return q("fields", "comma-separated fields, dot notation for nested ones", comma_list(alts(names)))


def sort_param(names):
    return q("sort", "comma-separated fields, '-' prefix for descending",
             comma_list("[-+]?" + alts(names)))


STATION_FIELDS = ["id", "name", "type", "state", "operator", "waterBodyId", "waterBodyName", "coordinates",
                  "coordinates.lat", "coordinates.lon", "location", "location.lat", "location.lon", "riverKm",
                  "gaugeZero", "gaugeZero.value", "gaugeZero.unit", "gaugeZero.datum", "groundLevel",
                  "elevation", "distance", "parameters", "characteristics"]
STATION_SORT = ["id", "name", "type", "state", "operator", "waterBodyId", "waterBodyName", "coordinates.lat",
                "coordinates.lon", "location.lat", "location.lon", "riverKm", "gaugeZero.value", "groundLevel",
                "elevation", "distance"]
PARAMETER_FIELDS = ["id", "name", "observedProperty", "unit", "interval", "availability"]
PARAMETER_SORT = ["id", "name", "observedProperty", "unit", "interval"]
CHAR_FIELDS = ["id", "name", "type", "parameterId", "value", "unit", "period", "period.start", "period.end",
               "description"]
CHAR_SORT = ["id", "name", "type", "parameterId", "value", "unit", "period.start", "period.end"]
VALUE_FIELDS = ["timestamp", "value", "quality"]

count = {"type": "integer", "minimum": 0, "maximum": MAX_INT}
PAGING = [q("limit", "maximum number of items (0: only the count)", count),
          q("offset", "items skipped before output starts", count)]


def listing(fields, sort):
    return PAGING + [sort_param(sort), fields_param(fields)]


FMT = lambda formats: q("format", "output format (short name or media type); wins over Accept",
                        {"type": "string", "enum": formats})
path_id = lambda name, d: {"name": name, "in": "path", "required": True, "description": d,
                           "schema": {"type": "string", "pattern": ID}}
STATION_ID = path_id("stationId", "station id")
PARAMETER_ID = path_id("parameterId", "parameter id, e.g. water-level-15min")
CHAR_ID = path_id("characteristicId", "characteristic id, e.g. mhw")
CATALOG = ["json", "csv", "xml", "ndjson", "arrow", "parquet"]
# html: a page for people with a browser (also chosen by an Accept that prefers text/html);
# svg, png: a chart of the values.
STATIONS = ["json", "csv", "geojson", "xml", "ndjson", "arrow", "parquet", "html"]
VALUES = ["json", "csv", "xml", "ndjson", "arrow", "parquet", "svg", "png", "html"]
MEDIA = {"json": "application/json", "csv": "text/csv", "geojson": "application/geo+json",
         "xml": "application/xml", "ndjson": "application/x-ndjson",
         "arrow": "application/vnd.apache.arrow.stream", "parquet": "application/vnd.apache.parquet",
         "svg": "image/svg+xml", "png": "image/png", "html": "text/html"}
CHART_SIZE = [q("width", "chart width in pixels (format=svg, png or html)",
                {"type": "integer", "minimum": 200, "maximum": 4000}),
              q("height", "chart height in pixels (format=svg, png or html)",
                {"type": "integer", "minimum": 150, "maximum": 3000})]

lon = {"type": "number", "minimum": -180, "maximum": 180}
lat = {"type": "number", "minimum": -90, "maximum": 90}
# Comma-separated numbers (an array, form style, not exploded).
BBOX = {"name": "bbox", "in": "query", "required": False, "style": "form", "explode": False,
        "description": "minLon,minLat,maxLon,maxLat (WGS 84 degrees); minLon > maxLon crosses the antimeridian; "
                       "the two latitudes bound the box in either order",
        "schema": {"type": "array", "prefixItems": [lon, lat, lon, lat], "items": False,
                   "minItems": 4, "maxItems": 4}, "example": [6, 50, 8, 52]}
NEAR = {"name": "near", "in": "query", "required": False, "style": "form", "explode": False,
        "description": "lon,lat[,radius]: stations within radius km (great-circle), nearest first, with "
                       "distance; without a radius (or one beyond half the Earth) every station, nearest first",
        "schema": {"type": "array", "prefixItems": [lon, lat, {"type": "number", "exclusiveMinimum": 0}],
                   "items": False, "minItems": 2, "maxItems": 3}, "example": [7, 50.7, 50]}
STATE = "(?:[Dd][Ee]-)?[A-Za-z]{2}"
STATION_TYPES = ["surfaceWater", "groundwater", "weather"]
CHAR_TYPES = ["mainValue", "statistic", "derived", "mark"]
TEXT_ITEM = r"[^,]*[^,\s+][^,]*"
SEARCH = q("q", "text in the station's name or its water body's name, case- and accent-insensitive "
              "(koeln, Köln and KOLN find Köln)", {"type": "string", "pattern": "[A-Za-z0-9]"}, "rhein")
INCLUDE = q("include", "parameters, characteristics", comma_list(alts(["parameters", "characteristics"])))


def problem(desc):
    return {"description": desc, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/problem"}}}}


ERRORS = {"400": problem("bad or unknown parameter"), "404": problem("unknown resource"),
          "405": problem("method not allowed"), "406": problem("no acceptable format"),
          "414": problem("URI too long"), "503": problem("overloaded or storage unavailable")}


def op(op_id, summary, schema, params, formats):
    content = {}
    for f in formats:
        if f == "json":
            content[MEDIA[f]] = {"schema": {"$ref": f"#/components/schemas/{schema}"}}
        elif f == "geojson":
            content[MEDIA[f]] = {"schema": {"type": "object", "required": ["type"],
                                            "properties": {"type": {"enum": ["FeatureCollection", "Feature"]}}}}
        elif f in ("arrow", "parquet", "png"):
            content[MEDIA[f]] = {"schema": {"type": "string", "format": "binary"}}
        else:
            content[MEDIA[f]] = {"schema": {"type": "string"}}
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


N = r"[1-9]\d{0,2}"
DATE_PART = (f"(?:{N}Y(?:{N}M)?(?:{N}W)?(?:{N}D)?|{N}M(?:{N}W)?(?:{N}D)?|{N}W(?:{N}D)?|{N}D)")
TIME_PART = f"T(?:{N}H(?:{N}M)?(?:{N}S)?|{N}M(?:{N}S)?|{N}S)"
DURATION = {"type": "string", "pattern": f"^P(?:{DATE_PART}(?:{TIME_PART})?|{TIME_PART})$",
            "description": "ISO 8601 duration longer than zero, e.g. P1D, PT6H, P1Y2M, P2W"}
# RFC 3339 date-times. The server also takes the other ISO 8601 forms with an offset (seconds
# left out, ±HHMM or ±HH): said in the description, not in a pattern beside the format, whose
# smallest example (year 0) made every generated window with both ends one that ends before it
# starts.
instant = {"type": "string", "format": "date-time",
           "description": "ISO 8601 with an offset, e.g. 2024-03-01T00:00:00+01:00, 2024-03-01T00:00+0100 "
                          "or 2024-03-01T00:00:00Z; a time without an offset is refused (ambiguous)"}
# from/to, recent and last exclude each other: one object parameter, form style, exploded (each
# member its own query parameter), whose schema says which members go together.
WINDOW = {"name": "window", "in": "query", "required": False, "style": "form", "explode": True,
          "description": "the part of the series: from/to (inclusive; from not after to), or recent "
                         "(the newest N values), or last (the period ending at the newest value); "
                         "they exclude each other",
          "schema": {"anyOf": [
              {"type": "object", "additionalProperties": False, "properties": {"from": instant, "to": instant}},
              {"type": "object", "additionalProperties": False, "required": ["recent"],
               "properties": {"recent": count}},
              {"type": "object", "additionalProperties": False, "required": ["last"],
               "properties": {"last": DURATION}}]}}
# Which series: at least one of parameters and observedProperties (an answer is never the
# whole archive by accident), with the station filters of /stations.
SERIES = {"name": "series", "in": "query", "required": True, "style": "form", "explode": True,
          "description": "parameters (comma list of parameter ids) and/or observedProperties (comma list); "
                         "at least one of them. Unknown ids are 404, as on the single-series endpoint",
          "schema": {"type": "object", "additionalProperties": False,
                     "properties": {"parameters": comma_list(ID_RE, "water-level-15min"),
                                    "observedProperties": comma_list(TEXT_ITEM, "waterLevel")},
                     "anyOf": [{"required": ["parameters"]}, {"required": ["observedProperties"]}]}}
SELECTION = [
    q("stations", "comma list of station ids (unknown ids are 404)", comma_list(ID_RE)),
    q("states", "comma list of DE-XX or XX", comma_list(STATE, "NW,DE-RP")),
    q("waterBodyIds", "comma list of water body ids", comma_list(TEXT_ITEM)),
    q("types", "comma list of surfaceWater, groundwater, weather", comma_list(alts([ci(t) for t in STATION_TYPES]))),
    BBOX, NEAR, SEARCH, SERIES]
MANY = ["json", "csv", "ndjson", "arrow", "parquet", "svg", "png"]
STATISTIC = r"(?:mean|min|max|sum|count|first|last|median|p(?:[1-9]|[1-9][0-9])|minTime|maxTime)"
MINUTES = [m for m in range(1, 721) if 1440 % m == 0]
INTERVALS = ([f"PT{m}M" for m in MINUTES if m % 60] + [f"PT{m // 60}H" for m in MINUTES if m % 60 == 0]
             + ["P1D", "P1M", "P2M", "P3M", "P4M", "P6M", "P1Y"])
# Any IANA name is taken; the document lists common ones (a pattern would let a generated
# client make up names), and offsets by pattern.
ZONES = ["UTC", "Etc/UTC", "Europe/Berlin", "Europe/Vienna", "Europe/Zurich", "Europe/Paris", "Europe/London",
         "Europe/Amsterdam", "Europe/Prague", "Europe/Warsaw", "Europe/Copenhagen", "America/New_York",
         "America/Chicago", "America/Denver", "America/Los_Angeles", "America/Santiago", "Asia/Tokyo",
         "Asia/Kolkata", "Australia/Sydney", "Africa/Johannesburg"]
ZONE = {"anyOf": [{"type": "string", "enum": ZONES},
                  {"type": "string", "pattern": r"^[+-]((0\d|1[0-7]):[0-5]\d|18:00)$"}],
        "example": "Europe/Berlin"}
# aggregate and what shapes it: one object parameter, form style, exploded (each member its own
# query parameter), whose schema says that the others need aggregate.
AGGREGATE = {"name": "aggregation", "in": "query", "required": False, "style": "form", "explode": True,
             "description": "aggregate: comma list of statistics per bucket (mean, min, max, sum, count, first, "
                            "last, median, p1 … p99 linear as pandas quantile, minTime, maxTime), columns named as "
                            "asked, then count and coverage; interval: the bucket (sub-day buckets on the UTC grid "
                            "from midnight UTC, P1D and longer in the calendar of timeZone; not finer than the "
                            "series' own interval); yearStart: the month years and quarters start (11: German "
                            "hydrological years); minCoverage: statistics of buckets with less coverage are null. "
                            "Without interval, one bucket over "
                            "the window; recent=N is then the last N buckets. sort and fields name the columns",
             "schema": {"type": "object", "additionalProperties": False, "properties": {
                 "aggregate": comma_list(STATISTIC, "mean,min,max"),
                 "interval": {"type": "string", "enum": INTERVALS},
                 "yearStart": {"type": "integer", "minimum": 1, "maximum": 12},
                 "minCoverage": {"type": "number", "minimum": 0, "maximum": 1}},
                 "dependentRequired": {k: ["aggregate"] for k in ["interval", "yearStart", "minCoverage"]}}}
QUALITIES = q("qualities", "comma list of qualities (good, estimated, suspect, unchecked, …): only values of these "
                           "qualities, raw or aggregated; page, total, recent and sort apply to them",
              comma_list(TEXT_ITEM, "good,estimated"))
TIME_ZONE = q("timeZone", "IANA time zone (Europe/Berlin), UTC or ±HH:MM: the offset of every output time and "
                          "the calendar of day, month and year buckets; default the service's output offset", ZONE)
BUCKET_COLUMNS = ["timestamp", "count", "coverage"]
LATEST = ["json", "csv", "geojson", "ndjson", "arrow", "parquet"]
SERIES_FIELDS = ["stationId", "parameterId", "timestamp", "value", "quality"]


def body_of(params):
    """The request body of a POST that takes the query parameters `params` in its body: an
    object with a member per parameter (the members of the exploded object parameters, window
    and series, with their rules), lists and arrays as in the query string (comma lists as one
    string; bbox and near as arrays of numbers in JSON, comma-separated in a form)."""
    props, rules, arrays = {}, [], []
    for p in params:
        schema = p["schema"]
        if p.get("explode") and "dependentRequired" in schema:  # aggregation: needs aggregate
            props |= schema["properties"]
            rules.append({"dependentRequired": schema["dependentRequired"]})
        elif p.get("explode") and "oneOf" in schema:  # statistics: type, and the members it takes
            members = {}
            for alt in schema["oneOf"]:
                members |= alt["properties"]
            types = [t for alt in schema["oneOf"] for t in alt["properties"]["type"].get("enum", [])
                     or [alt["properties"]["type"]["const"]]]
            props |= members | {"type": {"enum": types}}
            rules.append({"required": ["type"]})
            rules += [{"if": {"properties": {"type": alt["properties"]["type"]}},
                       "then": {"not": {"anyOf": [{"required": [m]} for m in members
                                                  if m not in alt["properties"]]}}}
                      for alt in schema["oneOf"]]
        elif p.get("explode") and "properties" in schema:  # series: its members, one required
            props |= schema["properties"]
            rules.append({"anyOf": schema["anyOf"]})
        elif p.get("explode"):  # window: from/to, recent or last
            for alt in schema["anyOf"]:
                props |= alt["properties"]
            exclusive = [["recent", "last"], ["recent", "from"], ["recent", "to"], ["last", "from"], ["last", "to"]]
            rules.append({"not": {"anyOf": [{"required": pair} for pair in exclusive]}})
        else:
            props[p["name"]] = schema
            if schema.get("type") == "array":
                arrays.append(p["name"])
    schema = {"type": "object", "additionalProperties": False, "properties": props, "allOf": rules}
    form = {"schema": schema, "encoding": {name: {"style": "form", "explode": False} for name in arrays}}
    # In JSON, a comma list may also be an array of its items.
    json_props = {}
    for name, p in props.items():
        pattern = p.get("pattern", "")
        if p.get("type") == "string" and pattern.startswith("^") and "(?:," in pattern:
            one = pattern[1:pattern.index("(?:,")]
            items = {"type": "array", "minItems": 1, "maxItems": MAX_LIST,
                     "items": {"type": "string", "pattern": f"^{one}$"}}
            p = {"anyOf": [p, items]}
        json_props[name] = p
    json_schema = schema | {"properties": json_props}
    return {"required": True, "description": "the parameters of the query string, for selections too long "
                                             "for a URL (at most 1 MiB): a form, or a JSON object with lists "
                                             "as strings or arrays, numbers as numbers; a parameter in both "
                                             "the query and the body is a 400",
            "content": {"application/x-www-form-urlencoded": form,
                        "application/json": {"schema": json_schema}}}


def posted(path, params):
    """The operation `path` has for GET, as POST too: the same answer (and ETag) with the
    parameters in the body."""
    get = path["get"]
    responses = {k: v for k, v in get["responses"].items() if k not in ("206", "304", "416")}
    formats = next(p for p in params if p["name"] == "format")["schema"]["enum"]
    responses["200"] = responses["200"] | {"content": {MEDIA[f]: responses["200"]["content"][MEDIA[f]]
                                                       for f in formats}}
    responses |= {"412": problem("If-None-Match matches: a POST is not answered 304"),
                  "413": problem("request body larger than 1 MiB"),
                  "415": problem("request body neither a form nor JSON")}
    path["post"] = {"operationId": get["operationId"] + "Posted",
                    "summary": get["summary"] + " (parameters in the body)", "parameters": [],
                    "requestBody": body_of(params), "responses": responses}
    return path


SQL_FORMATS = ["json", "csv", "ndjson", "arrow", "parquet"]
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
              "sql", [q("q", "one SQL statement: SELECT, WITH or EXPLAIN", SQL_STATEMENT) | {"required": True},
                      FMT(SQL_FORMATS)],
              SQL_FORMATS)
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
                    "parameters": [FMT(SQL_FORMATS)],
                    "requestBody": {"required": True, "content": {
                        "application/sql": text, "text/plain": text,
                        "application/json": {"schema": members},
                        "application/x-www-form-urlencoded": {"schema": members}}},
                    "responses": responses}
    return path


STATISTICS_FORMATS = ["json", "csv", "xml", "ndjson", "arrow", "parquet", "svg", "png"]
PROBABILITY = r"(?:0(?:\.\d{1,6})?|1(?:\.0{1,6})?)"
# type and what goes with it: one object parameter, form style, exploded, whose variants say
# which other members each type takes.
STATISTICS_KIND = {
    "name": "statistics", "in": "query", "required": True, "style": "form", "explode": True,
    "description": "type: dayOfYear (a row per calendar day, Jan 1 first, Feb 29 included: month, day, the "
                   "statistics in aggregate (default mean) of that day's daily means across the years, years), "
                   "monthOfYear (likewise per month), annual (a row per year with values: timestamp, year, min, "
                   "minTime, max, maxTime, mean, count, coverage; yearStart for hydrological years) or duration "
                   "(the duration curve over the values: exceedance, value, at the probabilities in exceedance, "
                   "default 0.01, 0.05, 0.1, 0.2 … 0.9, 0.95, 0.99)",
    "schema": {"oneOf": [
        {"type": "object", "additionalProperties": False, "required": ["type"],
         "properties": {"type": {"enum": ["dayOfYear", "monthOfYear"]},
                        "aggregate": comma_list(STATISTIC, "mean,p10,p90")}},
        {"type": "object", "additionalProperties": False, "required": ["type"],
         "properties": {"type": {"const": "annual"}}},
        {"type": "object", "additionalProperties": False, "required": ["type"],
         "properties": {"type": {"const": "duration"},
                        "exceedance": comma_list(PROBABILITY, "0.1,0.5,0.9")}}]}}
REFERENCE_PERIOD = [q("from", "start of the reference period (inclusive)", instant),
                    q("to", "end of the reference period (inclusive); not before from", instant),
                    q("yearStart", "the month years start in (11: German hydrological years); default 1",
                      {"type": "integer", "minimum": 1, "maximum": 12}),
                    q("minCoverage", "days, months or years with less coverage (values over the values their "
                                     "length holds) count for nothing in normals and have null annual statistics",
                      {"type": "number", "minimum": 0, "maximum": 1})]
STATISTICS_PARAMS = [STATISTICS_KIND] + REFERENCE_PERIOD + [QUALITIES, TIME_ZONE] + CHART_SIZE
# A page shows one series' statistics.
STATISTICS_PAGE = STATISTICS_FORMATS + ["html"]
# What a mirror of an earlier version needs.
CHANGED_SINCE = q("changedSince", "only the rows new or changed since this version (its id or generation), with "
                                  "their values now (or as asOf's version has them): upserted into that version's "
                                  "answer they make this one. Every such row in time order, in one answer: not with "
                                  "recent, last, sort, limit, offset, qualities or aggregate, nor as a chart; many "
                                  "series: only those with changes. A version newer than the one answered from is a "
                                  "400, one removed by vacuum 410",
                  {"anyOf": [{"type": "string", "pattern": r"^[0-9]{1,15}$"},
                             {"type": "string", "pattern": r"^[0-9]{1,15}-[0-9]{8}T[0-9]{6}\.[0-9]{3}Z$"}]})
MANY_VALUES = (SELECTION + [WINDOW, AGGREGATE, QUALITIES, CHANGED_SINCE, TIME_ZONE, fields_param(SERIES_FIELDS)]
               + PAGING + CHART_SIZE
               + [FMT(MANY)])
# A selection sent in a body is data to analyse: the charts (images a page links to with a URL)
# are GET's alone.
POSTED = [f for f in MANY if f not in ("svg", "png")]
POSTED_VALUES = MANY_VALUES[:-1] + [FMT(POSTED)]
POSTED_STATISTICS = [f for f in STATISTICS_FORMATS if f not in ("svg", "png")]
S = "/stations/{stationId}"
openapi = {
    "openapi": "3.1.0",
    "info": {"title": "Hydro API", "version": "1.0.0",
             "description": "Hydrological Data API Standard, EXTENDED variant. Errors are RFC 9457 problem details."},
    "servers": [{"url": "/v1"}],
    "paths": {
        "/": op("landing", "Landing page", "landing", [FMT(["json", "html"])], ["json", "html"]),
        "/health": {"get": {"operationId": "health", "summary": "Operational status", "parameters": [],
                            "responses": {"200": {"description": "ok or degraded", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/health"}}}},
                                          "503": {"description": "down", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/health"}}}}}}},
        "/stations": op("listStations", "Stations", "stations", [
            q("states", "comma list of DE-XX or XX", comma_list(STATE, "NW,DE-RP")),
            q("waterBodyIds", "comma list of water body ids", comma_list(TEXT_ITEM)),
            q("types", "comma list of surfaceWater, groundwater, weather", comma_list(alts([ci(t) for t in STATION_TYPES]))),
            BBOX, NEAR, SEARCH, INCLUDE] + listing(STATION_FIELDS, STATION_SORT) + [FMT(STATIONS)], STATIONS),
        "/values": posted(ranged(or_aggregates(op("listSeriesValues",
                                    "Values of many series in one answer: stationId, parameterId, timestamp, "
                                    "value, quality by station, parameter and time; each series' window as on "
                                    "the single-series endpoint", "seriesValues", MANY_VALUES, MANY),
                                                 "seriesAggregates")),
                          POSTED_VALUES),
        "/statistics": posted(op("listSeriesStatistics", "Statistics of many series over a reference period, "
                                                         "rows by station and parameter", "seriesStatistics",
                                 SELECTION + STATISTICS_PARAMS + [FMT(STATISTICS_FORMATS)], STATISTICS_FORMATS),
                              SELECTION + STATISTICS_PARAMS[:-len(CHART_SIZE)] + [FMT(POSTED_STATISTICS)]),
        "/latest": op("listLatest", "The newest value of each selected series, with its station's name and "
                                    "coordinates (GeoJSON: a map layer of current values)", "latest",
                      SELECTION + PAGING + [FMT(LATEST)], LATEST),
        S: op("getStation", "One station", "station",
              [STATION_ID, INCLUDE, fields_param(STATION_FIELDS), FMT(STATIONS)], STATIONS),
        S + "/parameters": op("listParameters", "Parameters of a station", "parameters",
                              [STATION_ID] + listing(PARAMETER_FIELDS, PARAMETER_SORT) + [FMT(CATALOG)], CATALOG),
        S + "/parameters/{parameterId}": op("getParameter", "One parameter", "parameter",
                                            [STATION_ID, PARAMETER_ID, fields_param(PARAMETER_FIELDS), FMT(CATALOG)],
                                            CATALOG),
        S + "/parameters/{parameterId}/values": ranged(or_aggregates(op("listValues", "Values of a series", "values",
                                                          [STATION_ID, PARAMETER_ID, WINDOW, AGGREGATE, QUALITIES,
                                                           CHANGED_SINCE, TIME_ZONE]
                                                          + listing(VALUE_FIELDS, VALUE_FIELDS) + CHART_SIZE
                                                          + [FMT(VALUES)],
                                                          VALUES), "aggregates")),
        S + "/parameters/{parameterId}/statistics": op("getStatistics",
                                                       "Statistics of a series over a reference period",
                                                       "statistics", [STATION_ID, PARAMETER_ID] + STATISTICS_PARAMS
                                                       + [FMT(STATISTICS_PAGE)], STATISTICS_PAGE),
        S + "/characteristics": op("listCharacteristics", "Characteristic values", "characteristics",
                                   [STATION_ID,
                                    q("types", "comma list of mainValue, statistic, derived, mark",
                                      comma_list(alts([ci(t) for t in CHAR_TYPES]))),
                                    q("parameterIds", "comma list of parameter ids", comma_list(ID_RE))]
                                   + listing(CHAR_FIELDS, CHAR_SORT) + [FMT(CATALOG)], CATALOG),
        S + "/characteristics/{characteristicId}": op("getCharacteristic", "One characteristic value", "characteristic",
                                                      [STATION_ID, CHAR_ID, fields_param(CHAR_FIELDS), FMT(CATALOG)],
                                                      CATALOG),
        "/versions": op("listVersions", "The versions of the dataset the store holds, newest first: ids to cite "
                                        "and to give as asOf", "versions", PAGING + [FMT(CATALOG)], CATALOG),
        "/versions/{versionId}": op("getVersion", "One version of the dataset", "version",
                                    [path_id("versionId", "a version id, a generation number or a time (the "
                                                          "version current then)"), FMT(CATALOG)], CATALOG),
        "/sql": sql_path(),
        "/schemas/{name}": {"get": {"operationId": "getSchema", "summary": "JSON Schema of a resource",
                                    "parameters": [{"name": "name", "in": "path", "required": True,
                                                    "schema": {"type": "string", "enum": [f"{n}.json" for n in SCHEMAS]}}],
                                    "responses": {"200": {"description": "JSON Schema", "content": {"application/json": {"schema": {"type": "object"}}}},
                                                  "404": problem("unknown schema")}}},
        "/openapi.json": {"get": {"operationId": "getOpenApi", "summary": "This document (to a browser: as a page)",
                                  "parameters": [FMT(["json", "html"])],
                                  "responses": {"200": {"description": "OpenAPI 3.1",
                                                        "content": {"application/json": {"schema": {"type": "object"}},
                                                                    "text/html": {"schema": {"type": "string"}}}},
                                                "400": problem("bad format")}}},
    },
    "components": {"schemas": SCHEMAS},
}

# Every data answer, and the landing page, as an earlier version gave it.
AS_OF = q("asOf", "answer as this version of the dataset did: its id (as /v1/versions lists them), its generation "
                  "number, or a time with an offset (the version current then); answers for a version named are "
                  "immutable. A version removed by vacuum is 410",
          {"anyOf": [{"type": "string", "pattern": r"^[0-9]{1,15}$"},
                     {"type": "string", "pattern": r"^[0-9]{1,15}-[0-9]{8}T[0-9]{6}\.[0-9]{3}Z$"},
                     instant]})
for path, item in openapi["paths"].items():
    if path.startswith(("/versions", "/schemas", "/health", "/openapi")):
        continue
    for method, operation in item.items():
        if method == "get":
            operation["parameters"].append(AS_OF)
        elif operation["parameters"]:
            # A POST that takes query parameters (/sql: the body is the statement) takes asOf
            # among them.
            operation["parameters"].append(AS_OF)
        else:
            for content in operation["requestBody"]["content"].values():
                content["schema"]["properties"]["asOf"] = AS_OF["schema"]
        operation["responses"]["410"] = problem("the version asOf names was removed (vacuum)")

for name, schema in SCHEMAS.items():
    doc = {"$schema": D, "$id": f"{BASE}/{name}.json"} | schema
    (HERE / f"{name}.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
(HERE / "openapi.json").write_text(json.dumps(openapi, indent=2, ensure_ascii=False) + "\n")
