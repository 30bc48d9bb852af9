//! Every query parameter, defined once: its name, the endpoints (and variants) that take it,
//! how its value is parsed, how a JSON request body writes it and how the OpenAPI document
//! describes it. The typed requests ([`crate::api::request`]) read values through these
//! definitions; which parameters an endpoint admits, and the parameters of each operation in
//! `/v1/openapi.json` ([`openapi`], described as [`doc`] says), are read from [`ALL`]. A new
//! parameter is one definition here (its entry in [`ALL`] included; `doc::own` describes it
//! in place) and its use in a typed request.
//!
//! A name can have more than one definition when endpoints read it differently (`q` searches
//! stations but is the statement of `/v1/sql`; `from` is the start of a window of values but
//! of a reference period of statistics, documented apart); the endpoints of two definitions of
//! one name never overlap.

pub mod doc;
mod endpoint;
pub mod openapi;

use crate::api::params::{self, JsonForm, shorten};
use crate::http::error::ApiError;
use crate::render::chart;
use crate::render::resources::Includes;
use crate::versions::AsOf;
use doc::Doc;
use hydro_engine::IsoDuration;
use hydro_engine::ParameterId;
use hydro_engine::TextQuery;
use hydro_engine::Zone;
use hydro_engine::{BBox, Near};
use hydro_engine::{CharacteristicType, Micros, StationType};
use hydro_engine::{INTERVALS, Interval};
use hydro_engine::{STATISTICS, Statistic};
use hydro_engine::{STATISTICS_TYPES, StatisticsType};

use Endpoint::*;
pub use endpoint::Endpoint;

/// A query parameter. `T` is what its value parses to.
pub struct QueryParameter<T: 'static> {
    pub name: &'static str,
    /// The endpoints that take it in either variant of the API.
    pub basic: &'static [Endpoint],
    /// The endpoints that take it in the extended variant only.
    pub extended: &'static [Endpoint],
    /// How a JSON request body may write it.
    pub json: JsonForm,
    /// How the OpenAPI document describes it.
    pub doc: Doc,
    /// Its value parsed (the name is for the problem's `invalidParams`).
    parse: fn(&'static str, &str) -> Result<T, ApiError>,
}

impl<T> QueryParameter<T> {
    /// `value` parsed as this parameter's.
    pub fn parse(&self, value: &str) -> Result<T, ApiError> {
        (self.parse)(self.name, value)
    }
}

/// What the registry knows of a parameter, whatever its value's type.
pub trait Defined: Sync {
    fn name(&self) -> &'static str;
    fn taken(&self, endpoint: Endpoint, basic: bool) -> bool;
    fn json(&self) -> JsonForm;
    fn doc(&self) -> &Doc;
}

impl<T> Defined for QueryParameter<T> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn taken(&self, endpoint: Endpoint, basic: bool) -> bool {
        self.basic.contains(&endpoint) || (!basic && self.extended.contains(&endpoint))
    }
    fn json(&self) -> JsonForm {
        self.json
    }
    fn doc(&self) -> &Doc {
        &self.doc
    }
}

/// The names `endpoint` takes in the variant (`basic` or extended), in [`ALL`]'s order.
pub fn names(endpoint: Endpoint, basic: bool) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for p in ALL.iter().filter(|p| p.taken(endpoint, basic)) {
        if !out.contains(&p.name()) {
            out.push(p.name());
        }
    }
    out
}

/// How a JSON body writes `name` (a text for names no endpoint takes: refused later).
pub fn json_form(name: &str) -> JsonForm {
    ALL.iter()
        .find(|p| p.name() == name)
        .map_or(JsonForm::Text, |p| p.json())
}

/// Every parameter, in the order the OpenAPI document lists an operation's.
pub static ALL: &[&dyn Defined] = &[
    &STATIONS,
    &STATES,
    &WATER_BODY_IDS,
    &STATION_TYPES,
    &BBOX,
    &NEAR,
    &SEARCH,
    &PARAMETERS,
    &OBSERVED_PROPERTIES,
    &INCLUDE,
    &STATISTICS_TYPE,
    &NORMALS,
    &EXCEEDANCE,
    &DURATION_INTERVAL,
    &PERIOD_FROM,
    &PERIOD_TO,
    &PERIOD_YEAR_START,
    &PERIOD_MIN_COVERAGE,
    &FROM,
    &TO,
    &RECENT,
    &LAST,
    &AGGREGATE,
    &INTERVAL,
    &YEAR_START,
    &MIN_COVERAGE,
    &QUALITIES,
    &CHANGED_SINCE,
    &TIME_ZONE,
    &CHARACTERISTIC_TYPES,
    &PARAMETER_IDS,
    &STATEMENT,
    &LIMIT,
    &OFFSET,
    &SORT,
    &FIELDS,
    &WIDTH,
    &HEIGHT,
    &FORMAT,
    &AS_OF,
];

/// The endpoints that choose series by station filters and parameters.
const SELECTING: &[Endpoint] = &[
    ManyValues,
    PostedValues,
    ManyStatistics,
    PostedStatistics,
    Latest,
];
/// The same and the station list: the endpoints that filter stations.
const FILTERING: &[Endpoint] = &[
    Stations,
    ManyValues,
    PostedValues,
    ManyStatistics,
    PostedStatistics,
    Latest,
];
const VALUES: &[Endpoint] = &[Values, ManyValues, PostedValues];
const STATISTICS_OF: &[Endpoint] = &[Statistics, ManyStatistics, PostedStatistics];
const VALUES_AND_STATISTICS: &[Endpoint] = &[
    Values,
    ManyValues,
    PostedValues,
    Statistics,
    ManyStatistics,
    PostedStatistics,
];
/// The endpoints that draw charts (`format=svg`, `png`, a page's chart).
const CHARTS: &[Endpoint] = &[Values, ManyValues, PostedValues, Statistics, ManyStatistics];

// --- Which stations and series ---

pub static STATIONS: QueryParameter<Vec<String>> = QueryParameter {
    name: "stations",
    basic: &[],
    extended: SELECTING,
    json: JsonForm::List,
    doc: doc::STATIONS,
    parse: texts,
};

pub static STATES: QueryParameter<Vec<String>> = QueryParameter {
    name: "states",
    basic: &[Stations],
    extended: SELECTING,
    json: JsonForm::List,
    doc: doc::STATES,
    parse: |_, v| params::states(v),
};

pub static WATER_BODY_IDS: QueryParameter<Vec<String>> = QueryParameter {
    name: "waterBodyIds",
    basic: &[Stations],
    extended: SELECTING,
    json: JsonForm::List,
    doc: doc::WATER_BODY_IDS,
    parse: texts,
};

pub static STATION_TYPES: QueryParameter<Vec<StationType>> = QueryParameter {
    name: "types",
    basic: &[],
    extended: FILTERING,
    json: JsonForm::List,
    doc: doc::STATION_TYPES,
    parse: parsed_list,
};

pub static BBOX: QueryParameter<BBox> = QueryParameter {
    name: "bbox",
    basic: &[],
    extended: FILTERING,
    json: JsonForm::Numbers,
    doc: doc::BBOX,
    parse: |_, v| params::bbox(v),
};

pub static NEAR: QueryParameter<Near> = QueryParameter {
    name: "near",
    basic: &[],
    extended: FILTERING,
    json: JsonForm::Numbers,
    doc: doc::NEAR,
    parse: |_, v| params::near(v),
};

pub static SEARCH: QueryParameter<TextQuery> = QueryParameter {
    name: "q",
    basic: &[],
    extended: FILTERING,
    json: JsonForm::Text,
    doc: doc::SEARCH,
    parse: |name, v| {
        TextQuery::new(v)
            .ok_or_else(|| ApiError::param(name, "give some letters or digits to search for"))
    },
};

pub static PARAMETERS: QueryParameter<Vec<String>> = QueryParameter {
    name: "parameters",
    basic: &[],
    extended: SELECTING,
    json: JsonForm::List,
    doc: Doc::Member(&doc::SERIES),
    parse: texts,
};

pub static OBSERVED_PROPERTIES: QueryParameter<Vec<String>> = QueryParameter {
    name: "observedProperties",
    basic: &[],
    extended: SELECTING,
    json: JsonForm::List,
    doc: Doc::Member(&doc::SERIES),
    parse: texts,
};

pub static INCLUDE: QueryParameter<Includes> = QueryParameter {
    name: "include",
    basic: &[Station],
    extended: &[Stations],
    json: JsonForm::Text,
    doc: doc::INCLUDE,
    parse: includes,
};

// --- Statistics: what and over which period ---

pub static STATISTICS_TYPE: QueryParameter<StatisticsType> = QueryParameter {
    name: "type",
    basic: &[],
    extended: STATISTICS_OF,
    json: JsonForm::Text,
    doc: Doc::Member(&doc::STATISTICS_KIND),
    parse: |name, v| {
        v.parse::<StatisticsType>().map_err(|()| {
            ApiError::param(
                name,
                format!(
                    "'{}' is not a statistics type; use {STATISTICS_TYPES}",
                    shorten(v)
                ),
            )
        })
    },
};

/// `aggregate` of the statistics endpoints: what summarises the normals.
pub static NORMALS: QueryParameter<Vec<Statistic>> = QueryParameter {
    name: "aggregate",
    basic: &[],
    extended: STATISTICS_OF,
    json: JsonForm::List,
    doc: Doc::Member(&doc::STATISTICS_KIND),
    parse: statistics,
};

pub static EXCEEDANCE: QueryParameter<Vec<f64>> = QueryParameter {
    name: "exceedance",
    basic: &[],
    extended: STATISTICS_OF,
    json: JsonForm::List,
    doc: Doc::Member(&doc::STATISTICS_KIND),
    parse: exceedance,
};

pub static PERIOD_FROM: QueryParameter<Micros> = QueryParameter {
    name: "from",
    basic: &[],
    extended: STATISTICS_OF,
    json: JsonForm::Text,
    doc: doc::PERIOD_FROM,
    parse: params::timestamp,
};

pub static PERIOD_TO: QueryParameter<Micros> = QueryParameter {
    name: "to",
    basic: &[],
    extended: STATISTICS_OF,
    json: JsonForm::Text,
    doc: doc::PERIOD_TO,
    parse: params::timestamp,
};

pub static PERIOD_YEAR_START: QueryParameter<u32> = QueryParameter {
    name: "yearStart",
    basic: &[],
    extended: STATISTICS_OF,
    json: JsonForm::Count,
    doc: doc::PERIOD_YEAR_START,
    parse: year_start,
};

pub static PERIOD_MIN_COVERAGE: QueryParameter<f64> = QueryParameter {
    name: "minCoverage",
    basic: &[],
    extended: STATISTICS_OF,
    json: JsonForm::Number,
    doc: doc::PERIOD_MIN_COVERAGE,
    parse: min_coverage,
};

// --- Values: which part of the series, and aggregates of it ---

pub static FROM: QueryParameter<Micros> = QueryParameter {
    name: "from",
    basic: &[Values],
    extended: &[ManyValues, PostedValues],
    json: JsonForm::Text,
    doc: Doc::Member(&doc::WINDOW),
    parse: params::timestamp,
};

pub static TO: QueryParameter<Micros> = QueryParameter {
    name: "to",
    basic: &[Values],
    extended: &[ManyValues, PostedValues],
    json: JsonForm::Text,
    doc: Doc::Member(&doc::WINDOW),
    parse: params::timestamp,
};

pub static RECENT: QueryParameter<u64> = QueryParameter {
    name: "recent",
    basic: &[],
    extended: VALUES,
    json: JsonForm::Count,
    doc: Doc::Member(&doc::WINDOW),
    parse: params::uint,
};

pub static LAST: QueryParameter<IsoDuration> = QueryParameter {
    name: "last",
    basic: &[],
    extended: VALUES,
    json: JsonForm::Text,
    doc: Doc::Member(&doc::WINDOW),
    parse: params::duration,
};

pub static AGGREGATE: QueryParameter<Vec<Statistic>> = QueryParameter {
    name: "aggregate",
    basic: &[],
    extended: VALUES,
    json: JsonForm::List,
    doc: Doc::Member(&doc::AGGREGATION),
    parse: statistics,
};

pub static INTERVAL: QueryParameter<Interval> = QueryParameter {
    name: "interval",
    basic: &[],
    extended: VALUES,
    json: JsonForm::Text,
    doc: Doc::Member(&doc::AGGREGATION),
    parse: interval,
};

/// `interval` of the statistics endpoints: a duration curve of the means of buckets of this
/// length (`P1D`: daily means) rather than of the raw values.
pub static DURATION_INTERVAL: QueryParameter<Interval> = QueryParameter {
    name: "interval",
    basic: &[],
    extended: STATISTICS_OF,
    json: JsonForm::Text,
    doc: Doc::Member(&doc::STATISTICS_KIND),
    parse: interval,
};

fn interval(name: &'static str, v: &str) -> Result<Interval, ApiError> {
    params::duration(name, v)
        .ok()
        .and_then(Interval::of)
        .ok_or_else(|| {
            ApiError::param(
                name,
                format!("'{}' is not a bucket length; use {INTERVALS}", shorten(v)),
            )
        })
}

pub static YEAR_START: QueryParameter<u32> = QueryParameter {
    name: "yearStart",
    basic: &[],
    extended: VALUES,
    json: JsonForm::Count,
    doc: Doc::Member(&doc::AGGREGATION),
    parse: year_start,
};

pub static MIN_COVERAGE: QueryParameter<f64> = QueryParameter {
    name: "minCoverage",
    basic: &[],
    extended: VALUES,
    json: JsonForm::Number,
    doc: Doc::Member(&doc::AGGREGATION),
    parse: min_coverage,
};

pub static QUALITIES: QueryParameter<Vec<String>> = QueryParameter {
    name: "qualities",
    basic: &[],
    extended: VALUES_AND_STATISTICS,
    json: JsonForm::List,
    doc: doc::QUALITIES,
    parse: texts,
};

pub static CHANGED_SINCE: QueryParameter<AsOf> = QueryParameter {
    name: "changedSince",
    basic: &[],
    extended: VALUES,
    json: JsonForm::Text,
    doc: doc::CHANGED_SINCE,
    parse: |name, v| match AsOf::parse(v) {
        Ok(base @ (AsOf::Id { .. } | AsOf::Generation(_))) => Ok(base),
        _ => Err(ApiError::param(
            name,
            format!(
                "'{}' is not a version; give a version id (as /v1/versions lists them) or a \
                 generation number",
                shorten(v)
            ),
        )),
    },
};

pub static TIME_ZONE: QueryParameter<Zone> = QueryParameter {
    name: "timeZone",
    basic: &[],
    extended: VALUES_AND_STATISTICS,
    json: JsonForm::Text,
    doc: doc::TIME_ZONE,
    parse: |name, v| {
        Zone::parse(v).map_err(|e| ApiError::param(name, format!("'{}': {e}", shorten(v))))
    },
};

// --- Characteristic values ---

pub static CHARACTERISTIC_TYPES: QueryParameter<Vec<CharacteristicType>> = QueryParameter {
    name: "types",
    basic: &[Characteristics],
    extended: &[],
    json: JsonForm::List,
    doc: doc::CHARACTERISTIC_TYPES,
    parse: parsed_list,
};

pub static PARAMETER_IDS: QueryParameter<Vec<ParameterId>> = QueryParameter {
    name: "parameterIds",
    basic: &[Characteristics],
    extended: &[],
    json: JsonForm::List,
    doc: doc::PARAMETER_IDS,
    parse: parsed_list,
};

// --- SQL ---

pub static STATEMENT: QueryParameter<String> = QueryParameter {
    name: "q",
    basic: &[],
    extended: &[Sql],
    json: JsonForm::Text,
    doc: doc::STATEMENT,
    parse: |name, v| {
        if v.trim().is_empty() {
            return Err(ApiError::param(name, "must not be blank"));
        }
        Ok(v.to_owned())
    },
};

// --- Shape of the answer ---

/// `fields`: the names each endpoint allows are checked where they are known (the typed
/// request), so this is the list as written.
pub static FIELDS: QueryParameter<String> = QueryParameter {
    name: "fields",
    basic: &[Station, Parameter, Characteristics, Characteristic],
    extended: &[Stations, Parameters, Values, ManyValues, PostedValues],
    json: JsonForm::List,
    doc: doc::FIELDS,
    parse: text,
};

/// The endpoints that page their answers, in either variant.
const PAGED_BASIC: &[Endpoint] = &[Characteristics];
/// The endpoints that page their answers in the extended variant.
const PAGED: &[Endpoint] = &[
    Stations,
    Parameters,
    Values,
    ManyValues,
    PostedValues,
    Latest,
    Versions,
];

pub static LIMIT: QueryParameter<u64> = QueryParameter {
    name: "limit",
    basic: PAGED_BASIC,
    extended: PAGED,
    json: JsonForm::Count,
    doc: doc::LIMIT,
    parse: params::uint,
};

pub static OFFSET: QueryParameter<u64> = QueryParameter {
    name: "offset",
    basic: PAGED_BASIC,
    extended: PAGED,
    json: JsonForm::Count,
    doc: doc::OFFSET,
    parse: params::uint,
};

/// `sort`: as `fields`, checked against the endpoint's names by the typed request.
pub static SORT: QueryParameter<String> = QueryParameter {
    name: "sort",
    basic: &[Characteristics],
    extended: &[Stations, Parameters, Values],
    json: JsonForm::Text,
    doc: doc::SORT,
    parse: text,
};

pub static WIDTH: QueryParameter<u32> = QueryParameter {
    name: "width",
    basic: &[],
    extended: CHARTS,
    json: JsonForm::Count,
    doc: doc::WIDTH,
    parse: |name, v| pixels(name, v, chart::WIDTHS),
};

pub static HEIGHT: QueryParameter<u32> = QueryParameter {
    name: "height",
    basic: &[],
    extended: CHARTS,
    json: JsonForm::Count,
    doc: doc::HEIGHT,
    parse: |name, v| pixels(name, v, chart::HEIGHTS),
};

/// `format`: chosen among the endpoint's formats together with `Accept`
/// (`http::negotiate::choose`).
pub static FORMAT: QueryParameter<String> = QueryParameter {
    name: "format",
    basic: &[Station, Parameter, Characteristics, Characteristic],
    extended: &[
        Landing,
        Document,
        Stations,
        Parameters,
        Values,
        ManyValues,
        PostedValues,
        Latest,
        Statistics,
        ManyStatistics,
        PostedStatistics,
        Versions,
        Version,
        Sql,
    ],
    json: JsonForm::Text,
    doc: doc::FORMAT,
    parse: text,
};

/// `asOf`: resolved to a version before the handler runs (`service`), on every data endpoint
/// and the landing page.
pub static AS_OF: QueryParameter<AsOf> = QueryParameter {
    name: "asOf",
    basic: &[],
    extended: &[
        Landing,
        Stations,
        Station,
        Parameters,
        Parameter,
        Characteristics,
        Characteristic,
        Values,
        ManyValues,
        PostedValues,
        Latest,
        Statistics,
        ManyStatistics,
        PostedStatistics,
        Sql,
    ],
    json: JsonForm::Text,
    doc: doc::AS_OF,
    parse: |_, v| AsOf::parse(v),
};

// --- Parsers shared by several parameters ---

fn text(_: &'static str, v: &str) -> Result<String, ApiError> {
    Ok(v.to_owned())
}

/// A comma list of texts.
fn texts(name: &'static str, v: &str) -> Result<Vec<String>, ApiError> {
    Ok(params::list(name, v)?
        .into_iter()
        .map(str::to_owned)
        .collect())
}

/// A comma list of values of `T`, each parsed by its `FromStr`.
fn parsed_list<T>(name: &'static str, v: &str) -> Result<Vec<T>, ApiError>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    params::list(name, v)?
        .into_iter()
        .map(|t| {
            t.parse::<T>()
                .map_err(|e| ApiError::param(name, format!("'{}': {e}", shorten(t))))
        })
        .collect()
}

/// `include`: `parameters`, `characteristics`.
fn includes(name: &'static str, v: &str) -> Result<Includes, ApiError> {
    let mut out = Includes::default();
    for item in params::list(name, v)? {
        match item {
            "parameters" => out.parameters = true,
            "characteristics" => out.characteristics = true,
            other => {
                return Err(ApiError::param(
                    name,
                    format!(
                        "cannot include '{}'; use parameters, characteristics",
                        shorten(other)
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// Statistics, each once, in the order asked.
fn statistics(name: &'static str, asked: &str) -> Result<Vec<Statistic>, ApiError> {
    let mut statistics: Vec<Statistic> = Vec::new();
    for item in params::list(name, asked)? {
        let s: Statistic = item.parse().map_err(|()| {
            ApiError::param(
                name,
                format!("'{}' is not a statistic; use {STATISTICS}", shorten(item)),
            )
        })?;
        // A statistic asked for again adds nothing (as a repeated sort key does).
        if !statistics.contains(&s) {
            statistics.push(s);
        }
    }
    Ok(statistics)
}

/// Probabilities from 0 to 1, in the order asked.
fn exceedance(name: &'static str, asked: &str) -> Result<Vec<f64>, ApiError> {
    params::list(name, asked)?
        .into_iter()
        .map(|item| {
            item.parse::<f64>()
                .ok()
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or_else(|| {
                    ApiError::param(
                        name,
                        format!(
                            "'{}' is not a probability; give numbers from 0 to 1, e.g. 0.1,0.5,0.9",
                            shorten(item)
                        ),
                    )
                })
        })
        .collect()
}

/// The month years start in.
fn year_start(name: &'static str, v: &str) -> Result<u32, ApiError> {
    params::uint(name, v)
        .ok()
        .filter(|m| (1..=12).contains(m))
        .map(|m| m as u32)
        .ok_or_else(|| {
            ApiError::param(
                name,
                "must be the month a year starts in, 1 to 12 (e.g. 11 for German hydrological years)",
            )
        })
}

/// A share of a bucket's expected values.
fn min_coverage(name: &'static str, v: &str) -> Result<f64, ApiError> {
    v.parse::<f64>()
        .ok()
        .filter(|c| (0.0..=1.0).contains(c))
        .ok_or_else(|| {
            ApiError::param(
                name,
                "must be a number from 0 to 1 (the share of a bucket's expected values)",
            )
        })
}

/// A chart's width or height, within the sizes a chart may have.
fn pixels(
    name: &'static str,
    v: &str,
    range: std::ops::RangeInclusive<u32>,
) -> Result<u32, ApiError> {
    params::uint(name, v)
        .ok()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| range.contains(n))
        .ok_or_else(|| {
            ApiError::param(
                name,
                format!(
                    "{name} must be a whole number of pixels from {} to {}",
                    range.start(),
                    range.end()
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two definitions of one name never serve the same endpoint, and agree on how a JSON
    /// body writes it.
    #[test]
    fn definitions_of_one_name_do_not_overlap() {
        let endpoints = [
            Landing,
            Document,
            Stations,
            Station,
            Parameters,
            Parameter,
            Characteristics,
            Characteristic,
            Values,
            ManyValues,
            PostedValues,
            Latest,
            Statistics,
            ManyStatistics,
            PostedStatistics,
            Versions,
            Version,
            Sql,
            Fixed,
        ];
        for (i, a) in ALL.iter().enumerate() {
            for b in &ALL[i + 1..] {
                if a.name() != b.name() {
                    continue;
                }
                assert_eq!(a.json(), b.json(), "{}", a.name());
                for e in endpoints {
                    assert!(
                        !(a.taken(e, false) && b.taken(e, false)),
                        "{} defined twice for {e:?}",
                        a.name()
                    );
                }
            }
        }
        assert!(names(Fixed, false).is_empty());
    }

    #[test]
    fn basic_names_are_among_the_extended() {
        assert_eq!(names(Stations, true), ["states", "waterBodyIds"]);
        assert_eq!(names(Values, true), ["from", "to"]);
        let extended = names(Values, false);
        assert!(extended.contains(&"from") && extended.contains(&"asOf"));
        assert!(!names(Versions, false).contains(&"asOf"));
    }
}
