//! How the OpenAPI document describes each query parameter: the schemas say exactly what the
//! server accepts, so that a generated client never sends a schema-valid request that is
//! refused: comma lists of at most 1 000 items, names from fixed lists, numbers within their
//! ranges.

use super::endpoint::Endpoint;
use crate::render::chart;
use crate::render::format::Format;
use crate::render::resources::{
    CHARACTERISTIC_FIELDS, CHARACTERISTIC_SORT, MANY_VALUE_FIELDS, PARAMETER_FIELDS,
    PARAMETER_SORT, STATION_FIELDS, STATION_SORT, VALUE_FIELDS,
};
use hydro_engine::{CharacteristicType, StationType};
use serde_json::{Value, json};

/// How the document describes a parameter.
pub enum Doc {
    /// A parameter of its own.
    Own(Own),
    /// A member of an object parameter (form style, exploded: each member its own query
    /// parameter) whose schema says which members go together; described whole where its
    /// first member comes.
    Member(&'static Group),
}

pub struct Own {
    pub description: &'static str,
    /// Its schema on an endpoint (`format`, `sort` and `fields` list that endpoint's names).
    pub schema: fn(Endpoint) -> Value,
    /// Comma-separated numbers: an array, form style, not exploded.
    pub array: bool,
    pub required: bool,
    pub example: Option<fn() -> Value>,
}

/// An object parameter.
pub struct Group {
    pub name: &'static str,
    pub required: bool,
    pub description: &'static str,
    pub schema: fn() -> Value,
}

/// A plain parameter: a description and a schema.
pub const fn own(description: &'static str, schema: fn(Endpoint) -> Value) -> Doc {
    Doc::Own(Own {
        description,
        schema,
        array: false,
        required: false,
        example: None,
    })
}

/// Longest list a comma parameter may have (`api::params`).
pub(super) const MAX_LIST: usize = 1000;
const ID: &str = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}";
const STATE: &str = "(?:[Dd][Ee]-)?[A-Za-z]{2}";
const TEXT_ITEM: &str = r"[^,]*[^,\s+][^,]*";
const STATISTIC: &str =
    r"(?:mean|min|max|sum|count|first|last|median|p(?:[1-9]|[1-9][0-9])|minTime|maxTime)";
const PROBABILITY: &str = r"(?:0(?:\.\d{1,6})?|1(?:\.0{1,6})?)";

/// One of `names` (dots escaped).
fn alts<S: AsRef<str>>(names: &[S]) -> String {
    let names: Vec<String> = names
        .iter()
        .map(|n| n.as_ref().replace('.', r"\."))
        .collect();
    format!("(?:{})", names.join("|"))
}

/// `name` in any case, as the server compares it.
fn any_case(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_alphabetic() {
                format!("[{}{}]", c.to_uppercase(), c.to_lowercase())
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A comma list of `item`s; items are trimmed of white space and `+` (a form-encoded space)
/// by the server.
fn comma_list(item: &str, example: Option<&str>) -> Value {
    let one = format!(r"[\s+]*{item}[\s+]*");
    let mut s = json!({
        "type": "string",
        "pattern": format!("^{one}(?:,{one}){{0,{}}}$", MAX_LIST - 1),
    });
    if let Some(example) = example {
        s["example"] = json!(example);
    }
    s
}

fn count() -> Value {
    json!({"type": "integer", "minimum": 0, "maximum": i64::MAX})
}

fn month() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": 12})
}

fn share() -> Value {
    json!({"type": "number", "minimum": 0, "maximum": 1})
}

fn lon() -> Value {
    json!({"type": "number", "minimum": -180, "maximum": 180})
}

fn lat() -> Value {
    json!({"type": "number", "minimum": -90, "maximum": 90})
}

/// RFC 3339 date-times. The server also takes the other ISO 8601 forms with an offset (seconds
/// left out, ±HHMM or ±HH): said in the description, not in a pattern beside the format, whose
/// smallest example (year 0) made every generated window with both ends one that ends before
/// it starts.
fn instant() -> Value {
    json!({"type": "string", "format": "date-time",
           "description": "ISO 8601 with an offset, e.g. 2024-03-01T00:00:00+01:00, 2024-03-01T00:00+0100 \
                           or 2024-03-01T00:00:00Z; a time without an offset is refused (ambiguous)"})
}

/// An ISO 8601 duration longer than zero.
fn duration() -> Value {
    let n = r"[1-9]\d{0,2}";
    let date =
        format!("(?:{n}Y(?:{n}M)?(?:{n}W)?(?:{n}D)?|{n}M(?:{n}W)?(?:{n}D)?|{n}W(?:{n}D)?|{n}D)");
    let time = format!("T(?:{n}H(?:{n}M)?(?:{n}S)?|{n}M(?:{n}S)?|{n}S)");
    json!({"type": "string", "pattern": format!("^P(?:{date}(?:{time})?|{time})$"),
           "description": "ISO 8601 duration longer than zero, e.g. P1D, PT6H, P1Y2M, P2W"})
}

/// A version: its id or generation number (`changedSince`), or also a time (`asOf`).
fn version_patterns() -> Vec<Value> {
    vec![
        json!({"type": "string", "pattern": r"^[0-9]{1,15}$"}),
        json!({"type": "string", "pattern": r"^[0-9]{1,15}-[0-9]{8}T[0-9]{6}\.[0-9]{3}Z$"}),
    ]
}

/// The bucket lengths `interval` takes: minutes and hours that divide a day, then calendar
/// lengths.
fn intervals() -> Vec<String> {
    let minutes: Vec<u32> = (1..721).filter(|m| 1440 % m == 0).collect();
    let mut out: Vec<String> = minutes
        .iter()
        .filter(|m| *m % 60 != 0)
        .map(|m| format!("PT{m}M"))
        .collect();
    out.extend(
        minutes
            .iter()
            .filter(|m| *m % 60 == 0)
            .map(|m| format!("PT{}H", m / 60)),
    );
    out.extend(
        ["P1D", "P1M", "P2M", "P3M", "P4M", "P6M", "P1Y"]
            .iter()
            .map(|s| (*s).to_owned()),
    );
    out
}

/// Any IANA name is taken; the document lists common ones (a pattern would let a generated
/// client make up names), and offsets by pattern.
fn zone() -> Value {
    json!({"anyOf": [
        {"type": "string", "enum": ["UTC", "Etc/UTC", "Europe/Berlin", "Europe/Vienna", "Europe/Zurich",
            "Europe/Paris", "Europe/London", "Europe/Amsterdam", "Europe/Prague", "Europe/Warsaw",
            "Europe/Copenhagen", "America/New_York", "America/Chicago", "America/Denver",
            "America/Los_Angeles", "America/Santiago", "Asia/Tokyo", "Asia/Kolkata", "Australia/Sydney",
            "Africa/Johannesburg"]},
        {"type": "string", "pattern": r"^[+-]((0\d|1[0-7]):[0-5]\d|18:00)$"}],
        "example": "Europe/Berlin"})
}

/// The names `sort` takes on an endpoint.
fn sortable(endpoint: Endpoint) -> Vec<String> {
    match endpoint {
        Endpoint::Stations => with_location(STATION_SORT),
        Endpoint::Parameters => names(PARAMETER_SORT),
        Endpoint::Characteristics => names(CHARACTERISTIC_SORT),
        _ => names(VALUE_FIELDS),
    }
}

/// The names `fields` takes on an endpoint.
fn fields_of(endpoint: Endpoint) -> Vec<String> {
    match endpoint {
        Endpoint::Stations | Endpoint::Station => with_location(STATION_FIELDS),
        Endpoint::Parameters | Endpoint::Parameter => names(PARAMETER_FIELDS),
        Endpoint::Characteristics | Endpoint::Characteristic => names(CHARACTERISTIC_FIELDS),
        Endpoint::ManyValues | Endpoint::PostedValues => names(MANY_VALUE_FIELDS),
        _ => names(VALUE_FIELDS),
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|n| (*n).to_owned()).collect()
}

/// A station's names with `location`, the alias of `coordinates` (`canon_station_path`), after
/// the `coordinates` ones.
fn with_location(list: &[&str]) -> Vec<String> {
    let mut out = names(list);
    let aliases: Vec<String> = list
        .iter()
        .filter_map(|n| n.strip_prefix("coordinates"))
        .map(|rest| format!("location{rest}"))
        .collect();
    let after = out
        .iter()
        .rposition(|n| n.starts_with("coordinates"))
        .map_or(out.len(), |i| i + 1);
    out.splice(after..after, aliases);
    out
}

pub const STATIONS: Doc = own("comma list of station ids (unknown ids are 404)", |_| {
    comma_list(ID, None)
});
pub const STATES: Doc = own("comma list of DE-XX or XX", |_| {
    comma_list(STATE, Some("NW,DE-RP"))
});
pub const WATER_BODY_IDS: Doc = own("comma list of water body ids", |_| {
    comma_list(TEXT_ITEM, None)
});
pub const STATION_TYPES: Doc = own("comma list of surfaceWater, groundwater, weather", |_| {
    let names: Vec<String> = StationType::ALL
        .iter()
        .map(|t| any_case(t.as_str()))
        .collect();
    comma_list(&alts(&names), None)
});
pub const BBOX: Doc = Doc::Own(Own {
    description: "minLon,minLat,maxLon,maxLat (WGS 84 degrees); minLon > maxLon crosses the \
                  antimeridian; the two latitudes bound the box in either order",
    schema: |_| {
        json!({"type": "array", "prefixItems": [lon(), lat(), lon(), lat()], "items": false,
               "minItems": 4, "maxItems": 4})
    },
    array: true,
    required: false,
    example: Some(|| json!([6, 50, 8, 52])),
});
pub const NEAR: Doc = Doc::Own(Own {
    description: "lon,lat[,radius]: stations within radius km (great-circle), nearest first, \
                  with distance; without a radius (or one beyond half the Earth) every station, \
                  nearest first",
    schema: |_| {
        json!({"type": "array", "prefixItems": [lon(), lat(), {"type": "number", "exclusiveMinimum": 0}],
               "items": false, "minItems": 2, "maxItems": 3})
    },
    array: true,
    required: false,
    example: Some(|| json!([7, 50.7, 50])),
});
pub const SEARCH: Doc = Doc::Own(Own {
    description: "text in the station's name or its water body's name, case- and \
                  accent-insensitive (koeln, Köln and KOLN find Köln)",
    schema: |_| json!({"type": "string", "pattern": "[A-Za-z0-9]"}),
    array: false,
    required: false,
    example: Some(|| json!("rhein")),
});
pub const INCLUDE: Doc = own("parameters, characteristics", |_| {
    comma_list(&alts(&["parameters", "characteristics"]), None)
});

/// Which series: at least one of `parameters` and `observedProperties` (an answer is never
/// the whole archive by accident).
pub static SERIES: Group = Group {
    name: "series",
    required: true,
    description: "parameters (comma list of parameter ids) and/or observedProperties (comma \
                  list); at least one of them. Unknown ids are 404, as on the single-series \
                  endpoint",
    schema: || {
        json!({"type": "object", "additionalProperties": false,
               "properties": {"parameters": comma_list(ID, Some("water-level-15min")),
                              "observedProperties": comma_list(TEXT_ITEM, Some("waterLevel"))},
               "anyOf": [{"required": ["parameters"]}, {"required": ["observedProperties"]}]})
    },
};

/// `from`/`to`, `recent` and `last` exclude each other.
pub static WINDOW: Group = Group {
    name: "window",
    required: false,
    description: "the part of the series: from/to (inclusive; from not after to), or recent \
                  (the newest N values), or last (the period ending at the newest value); they \
                  exclude each other",
    schema: || {
        json!({"anyOf": [
            {"type": "object", "additionalProperties": false,
             "properties": {"from": instant(), "to": instant()}},
            {"type": "object", "additionalProperties": false, "required": ["recent"],
             "properties": {"recent": count()}},
            {"type": "object", "additionalProperties": false, "required": ["last"],
             "properties": {"last": duration()}}]})
    },
};

/// `aggregate` and what shapes it, which needs it.
pub static AGGREGATION: Group = Group {
    name: "aggregation",
    required: false,
    description: "aggregate: comma list of statistics per bucket (mean, min, max, sum, count, \
                  first, last, median, p1 … p99 linear as pandas quantile, minTime, maxTime), \
                  columns named as asked, then count and coverage; interval: the bucket (sub-day \
                  buckets on the UTC grid from midnight UTC, P1D and longer in the calendar of \
                  timeZone; not finer than the series' own interval); yearStart: the month years \
                  and quarters start (11: German hydrological years); minCoverage: statistics of \
                  buckets with less coverage are null. Without interval, one bucket over the \
                  window; recent=N is then the last N buckets. sort and fields name the columns",
    schema: || {
        json!({"type": "object", "additionalProperties": false, "properties": {
                   "aggregate": comma_list(STATISTIC, Some("mean,min,max")),
                   "interval": {"type": "string", "enum": intervals()},
                   "yearStart": month(),
                   "minCoverage": share()},
               "dependentRequired": {"interval": ["aggregate"], "yearStart": ["aggregate"],
                                     "minCoverage": ["aggregate"]}})
    },
};

/// `type` and what goes with it: the variants say which other members each type takes.
pub static STATISTICS_KIND: Group = Group {
    name: "statistics",
    required: true,
    description: "type: dayOfYear (a row per calendar day, Jan 1 first, Feb 29 included: \
                  month, day, the statistics in aggregate (default mean) of that day's daily \
                  means across the years, years), monthOfYear (likewise per month), annual (a \
                  row per year: timestamp, year, min, minTime, max, maxTime, mean, sum, \
                  count, coverage; yearStart for hydrological years) or duration (the duration \
                  curve over the values, or with interval over the means of its buckets, \
                  interval=P1D: daily means: exceedance, value, at the probabilities in \
                  exceedance, default 0.01, 0.05, 0.1, 0.2 … 0.9, 0.95, 0.99). Normals of \
                  precipitation are of daily (monthly) sums",
    schema: || {
        json!({"oneOf": [
            {"type": "object", "additionalProperties": false, "required": ["type"],
             "properties": {"type": {"enum": ["dayOfYear", "monthOfYear"]},
                            "aggregate": comma_list(STATISTIC, Some("mean,p10,p90"))}},
            {"type": "object", "additionalProperties": false, "required": ["type"],
             "properties": {"type": {"const": "annual"}}},
            {"type": "object", "additionalProperties": false, "required": ["type"],
             "properties": {"type": {"const": "duration"},
                            "exceedance": comma_list(PROBABILITY, Some("0.1,0.5,0.9")),
                            "interval": {"type": "string", "enum": intervals()}}}]})
    },
};

pub const PERIOD_FROM: Doc = own("start of the reference period (inclusive)", |_| instant());
pub const PERIOD_TO: Doc = own(
    "end of the reference period (inclusive); not before from",
    |_| instant(),
);
pub const PERIOD_YEAR_START: Doc = own(
    "the month years start in (11: German hydrological years); default 1",
    |_| month(),
);
pub const PERIOD_MIN_COVERAGE: Doc = own(
    "days, months or years with less coverage (values over the values their length holds) \
     count for nothing in normals and have null annual statistics",
    |_| share(),
);
pub const QUALITIES: Doc = own(
    "comma list of qualities (good, estimated, suspect, unchecked, …): only values of these \
     qualities, raw or aggregated; page, total, recent and sort apply to them",
    |_| comma_list(TEXT_ITEM, Some("good,estimated")),
);
pub const CHANGED_SINCE: Doc = own(
    "only the rows new or changed since this version (its id or generation), with their values \
     now (or as asOf's version has them): upserted into that version's answer they make this \
     one. Every such row in time order, in one answer: not with recent, last, sort, limit, \
     offset, qualities or aggregate, nor as a chart; many series: only those with changes. A \
     version newer than the one answered from is a 400, one removed by vacuum 410",
    |_| json!({"anyOf": version_patterns()}),
);
pub const TIME_ZONE: Doc = own(
    "IANA time zone (Europe/Berlin), UTC or ±HH:MM: the offset of every output time and the \
     calendar of day, month and year buckets; default the service's output offset",
    |_| zone(),
);
pub const CHARACTERISTIC_TYPES: Doc =
    own("comma list of mainValue, statistic, derived, mark", |_| {
        let names: Vec<String> = CharacteristicType::ALL
            .iter()
            .map(|t| any_case(t.as_str()))
            .collect();
        comma_list(&alts(&names), None)
    });
pub const PARAMETER_IDS: Doc = own("comma list of parameter ids", |_| comma_list(ID, None));
pub const STATEMENT: Doc = Doc::Own(Own {
    description: "one SQL statement: SELECT, WITH or EXPLAIN",
    schema: |_| statement(),
    array: false,
    required: true,
    example: None,
});

/// The schema of a SQL statement (also the body of `POST /v1/sql`, `schemas/build.py`).
fn statement() -> Value {
    json!({"type": "string", "minLength": 1,
           "example": "SELECT station, max(value) AS highest FROM values WHERE parameter = \
                       'water-level-15min' GROUP BY station ORDER BY highest DESC LIMIT 10"})
}

pub const LIMIT: Doc = own("maximum number of items (0: only the count)", |_| count());
pub const OFFSET: Doc = own("items skipped before output starts", |_| count());
pub const SORT: Doc = own(
    "comma-separated fields, '-' prefix for descending",
    |endpoint| comma_list(&format!("[-+]?{}", alts(&sortable(endpoint))), None),
);
pub const FIELDS: Doc = own(
    "comma-separated fields, dot notation for nested ones",
    |endpoint| comma_list(&alts(&fields_of(endpoint)), None),
);
pub const WIDTH: Doc = own(
    "chart width in pixels (format=svg, png or html)",
    |_| json!({"type": "integer", "minimum": chart::WIDTHS.start(), "maximum": chart::WIDTHS.end()}),
);
pub const HEIGHT: Doc = own(
    "chart height in pixels (format=svg, png or html)",
    |_| json!({"type": "integer", "minimum": chart::HEIGHTS.start(), "maximum": chart::HEIGHTS.end()}),
);
pub const FORMAT: Doc = own(
    "output format (short name or media type); wins over Accept",
    |endpoint| {
        let names: Vec<&str> = Format::offered(endpoint.answer())
            .into_iter()
            .map(Format::short)
            .collect();
        json!({"type": "string", "enum": names})
    },
);
pub const AS_OF: Doc = own(
    "answer as this version of the dataset did: its id (as /v1/versions lists them), its \
     generation number, or a time with an offset (the version current then); answers for a \
     version named are immutable. A version removed by vacuum is 410",
    |_| {
        let mut any = version_patterns();
        any.push(instant());
        json!({"anyOf": any})
    },
);
