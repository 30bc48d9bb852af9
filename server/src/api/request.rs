//! Typed requests, one per endpoint: the raw query ([`RawQuery`], pairs as sent) becomes a
//! validated request (types, ranges, mutual exclusions) whose fields read like the standard's
//! parameter table of the endpoint, and which the handler turns into catalog look-ups or an
//! engine query. As ripgrep goes from `LowArgs` to `HiArgs`, nothing after this stage parses.
//!
//! Each request names the parameters its endpoint takes in the basic variant and those the
//! extended variant adds ([`Request::BASIC`], [`Request::EXTENDED`]); any other parameter is a
//! 400 (a typo must never widen an answer). The check runs before path ids are resolved, the
//! parsing after: a bad id is a 404 whatever the query, as before this stage existed.

use crate::api::params::{self, RawQuery, SortSpec, shorten};
use crate::http::error::ApiError;
use crate::http::negotiate::{Answer, Format, choose};
use crate::render::chart;
use crate::render::resources::{
    CHARACTERISTIC_FIELDS, CHARACTERISTIC_SORT, Includes, PARAMETER_FIELDS, PARAMETER_SORT,
    STATION_FIELDS, STATION_SORT, VALUE_FIELDS, canon_station_path,
};
use crate::versions::AsOf;
use hydro_engine::catalog::StationFilter;
use hydro_engine::catalog::search::TextQuery;
use hydro_engine::model::ids::ParameterId;
use hydro_engine::model::zone::Zone;
use hydro_engine::model::{CharacteristicType, StationType};
use hydro_engine::query::aggregate::calendar::{INTERVALS, Interval};
use hydro_engine::query::aggregate::statistic::{STATISTICS, Statistic};
use hydro_engine::query::aggregate::{AggregateSpec, BucketColumn};
use hydro_engine::query::statistics::{
    DEFAULT_EXCEEDANCE, STATISTICS_TYPES, StatisticsSpec, StatisticsType,
};
use hydro_engine::query::{SortKey, ValueColumn, Window};
use std::sync::Arc;

/// A request of one endpoint, parsed from its query.
pub trait Request: Sized {
    /// Parameters of the basic variant.
    const BASIC: &'static [&'static str];
    /// Parameters the extended variant adds.
    const EXTENDED: &'static [&'static str];
    /// Whether the endpoint answers from a version `asOf` names (the extended variant's
    /// parameter of every data endpoint, resolved before the handler runs: `service`).
    const VERSIONED: bool = true;
    /// The validated request. Only parameters the endpoint takes are present (checked first).
    fn parse(q: &Query<'_>) -> Result<Self, ApiError>;
}

/// `limit` and `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    pub limit: Option<u64>,
    pub offset: u64,
    /// Whether either was given: the answer then reports its pagination.
    pub given: bool,
}

const LIST: &[&str] = &["limit", "offset", "sort", "fields", "format"];

/// A request's query as the typed requests read it: its pairs, the `Accept` header (which
/// chooses the format when `format` does not) and the variant of the API.
pub struct Query<'a> {
    pub raw: &'a RawQuery,
    pub accept: Option<&'a str>,
    pub basic: bool,
    /// Whether the parameters came in a POST body.
    pub posted: bool,
    /// The zone of output times without `timeZone`: the service's output offset.
    pub zone: Zone,
}

impl Query<'_> {
    /// Checks that only the parameters of `R`'s endpoint are present, split by variant.
    pub fn admit<R: Request>(&self) -> Result<(), ApiError> {
        if self.basic {
            let hint =
                self.raw.pairs.iter().any(|(k, _)| {
                    R::EXTENDED.contains(&k.as_str()) || (R::VERSIONED && k == "asOf")
                });
            return self.raw.only(R::BASIC, hint);
        }
        let versioned: &[&str] = if R::VERSIONED { &["asOf"] } else { &[] };
        let all: Vec<&str> = R::BASIC
            .iter()
            .chain(R::EXTENDED)
            .chain(versioned)
            .copied()
            .collect();
        self.raw.only(&all, false)
    }

    /// The format of an answer of kind `answer`: JSON alone in the basic variant.
    fn format(&self, answer: Answer) -> Result<Format, ApiError> {
        let offered = if self.basic {
            vec![Format::Json]
        } else {
            Format::offered(answer)
        };
        choose(self.raw.get("format")?, self.accept, &offered)
    }

    fn paging(&self) -> Result<Paging, ApiError> {
        let limit = self
            .raw
            .get("limit")?
            .map(|v| params::uint("limit", v))
            .transpose()?;
        let offset = self
            .raw
            .get("offset")?
            .map(|v| params::uint("offset", v))
            .transpose()?;
        Ok(Paging {
            limit,
            offset: offset.unwrap_or(0),
            given: limit.is_some() || offset.is_some(),
        })
    }

    fn sort(&self, allowed: &[&str], canon: fn(&str) -> String) -> Result<Vec<SortSpec>, ApiError> {
        self.raw
            .get("sort")?
            .map(|v| params::sort(v, allowed, canon))
            .transpose()
            .map(Option::unwrap_or_default)
    }

    fn fields(
        &self,
        allowed: &[&str],
        canon: fn(&str) -> String,
    ) -> Result<Option<Vec<String>>, ApiError> {
        self.raw
            .get("fields")?
            .map(|v| params::fields(v, allowed, canon))
            .transpose()
    }
}

/// `GET /v1/` (landing page).
/// The landing page: its format.
pub struct LandingRequest(pub Format);

impl Request for LandingRequest {
    const BASIC: &'static [&'static str] = &[];
    const EXTENDED: &'static [&'static str] = &["format"];
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self(q.format(Answer::Landing)?))
    }
}

/// `GET /v1/openapi.json`: JSON, or the page a browser asks for.
pub struct DocumentRequest(pub Format);

impl Request for DocumentRequest {
    const BASIC: &'static [&'static str] = &[];
    const EXTENDED: &'static [&'static str] = &["format"];
    const VERSIONED: bool = false;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self(q.format(Answer::Landing)?))
    }
}

/// Endpoints that take no parameters (health, OpenAPI document, schemas).
pub struct NoParameters;

impl Request for NoParameters {
    const BASIC: &'static [&'static str] = &[];
    const EXTENDED: &'static [&'static str] = &[];
    const VERSIONED: bool = false;
    fn parse(_: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self)
    }
}

/// `GET /v1/stations`.
pub struct StationsRequest {
    pub filter: StationFilter,
    pub include: Includes,
    pub sort: Vec<SortSpec>,
    pub fields: Option<Vec<String>>,
    pub paging: Paging,
    pub format: Format,
}

impl Request for StationsRequest {
    const BASIC: &'static [&'static str] = &["states", "waterBodyIds"];
    const EXTENDED: &'static [&'static str] = &[
        "types", "bbox", "near", "q", "include", "limit", "offset", "sort", "fields", "format",
    ];
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        let raw = q.raw;
        Ok(Self {
            filter: station_filter(raw)?,
            include: includes(raw)?,
            sort: q.sort(STATION_SORT, canon_station_path)?,
            fields: q.fields(STATION_FIELDS, canon_station_path)?,
            paging: q.paging()?,
            format: q.format(Answer::Stations)?,
        })
    }
}

/// The station filters of `/v1/stations`, shared by the endpoints that select stations.
fn station_filter(raw: &RawQuery) -> Result<StationFilter, ApiError> {
    Ok(StationFilter {
        states: raw.get("states")?.map(params::states).transpose()?,
        water_body_ids: texts(raw, "waterBodyIds")?,
        types: parsed_list::<StationType>(raw, "types")?,
        bbox: raw.get("bbox")?.map(params::bbox).transpose()?,
        near: raw.get("near")?.map(params::near).transpose()?,
        text: raw
            .get("q")?
            .map(|v| {
                TextQuery::new(v).ok_or_else(|| {
                    ApiError::param("q", "give some letters or digits to search for")
                })
            })
            .transpose()?,
    })
}

/// A comma list of texts.
fn texts(raw: &RawQuery, name: &str) -> Result<Option<Vec<String>>, ApiError> {
    raw.get(name)?
        .map(|v| params::list(name, v).map(|l| l.into_iter().map(str::to_owned).collect()))
        .transpose()
}

/// Series chosen by station filters and parameters (`/v1/values`, `/v1/latest`).
pub struct SeriesSelection {
    pub filter: StationFilter,
    /// `stations`: only these stations (ids).
    pub stations: Option<Vec<String>>,
    pub parameters: Option<Vec<String>>,
    pub observed_properties: Option<Vec<String>>,
}

impl SeriesSelection {
    fn parse(raw: &RawQuery) -> Result<Self, ApiError> {
        let parameters = texts(raw, "parameters")?;
        let observed_properties = texts(raw, "observedProperties")?;
        if parameters.is_none() && observed_properties.is_none() {
            return Err(ApiError::param(
                "parameters",
                "give parameters (ids such as water-level-15min) or observedProperties, so \
                 that the answer holds the series meant",
            ));
        }
        Ok(Self {
            filter: station_filter(raw)?,
            stations: texts(raw, "stations")?,
            parameters,
            observed_properties,
        })
    }
}

/// The parameters of a [`SeriesSelection`] (the station filters, `parameters`,
/// `observedProperties`) followed by `$rest`: the parameter list of a many-series request, as
/// a constant (constant slices cannot be joined).
macro_rules! selection_and {
    ($($rest:literal),* $(,)?) => {
        &[
            "stations",
            "states",
            "types",
            "waterBodyIds",
            "bbox",
            "near",
            "q",
            "parameters",
            "observedProperties",
            $($rest),*
        ]
    };
}

/// The parameters of both values endpoints that shape aggregates or filter values.
const AGGREGATE_PARAMETERS: [&str; 6] = [
    "aggregate",
    "interval",
    "timeZone",
    "yearStart",
    "minCoverage",
    "qualities",
];

/// The extended parameters of `…/values` (`from` and `to` are basic).
const VALUES_PARAMETERS: [&str; 16] = concat(
    &[
        "recent",
        "last",
        "limit",
        "offset",
        "sort",
        "fields",
        "format",
        "width",
        "height",
        "changedSince",
    ],
    &AGGREGATE_PARAMETERS,
);

/// The parameters of `/v1/values`.
const MANY_VALUES_PARAMETERS: [&str; 26] = concat(
    selection_and![
        "from",
        "to",
        "recent",
        "last",
        "fields",
        "limit",
        "offset",
        "format",
        "width",
        "height",
        "changedSince"
    ],
    &AGGREGATE_PARAMETERS,
);

/// `GET /v1/versions`: the versions the store holds.
pub struct VersionsRequest {
    pub paging: Paging,
    pub format: Format,
}

impl Request for VersionsRequest {
    const BASIC: &'static [&'static str] = &[];
    const EXTENDED: &'static [&'static str] = &["limit", "offset", "format"];
    const VERSIONED: bool = false;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            paging: q.paging()?,
            format: q.format(Answer::Catalog)?,
        })
    }
}

/// `GET /v1/versions/{id}`: one version.
pub struct VersionRequest(pub Format);

impl Request for VersionRequest {
    const BASIC: &'static [&'static str] = &[];
    const EXTENDED: &'static [&'static str] = &["format"];
    const VERSIONED: bool = false;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self(q.format(Answer::Catalog)?))
    }
}

/// `GET /v1/latest`: the newest value of each selected series.
pub struct LatestRequest {
    pub selection: SeriesSelection,
    pub paging: Paging,
    pub format: Format,
}

impl Request for LatestRequest {
    const BASIC: &'static [&'static str] = &[];
    const EXTENDED: &'static [&'static str] = selection_and!["limit", "offset", "format"];
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            selection: SeriesSelection::parse(q.raw)?,
            paging: q.paging()?,
            format: q.format(Answer::Latest)?,
        })
    }
}

/// `GET /v1/values`: the values of many series, chosen by station filters and parameters.
pub struct ManyValuesRequest {
    pub selection: SeriesSelection,
    pub window: Window,
    pub columns: Vec<ValueColumn>,
    /// Only values of these qualities (`qualities`), raw or aggregated.
    pub qualities: Option<Arc<[String]>>,
    /// Buckets instead of values (`aggregate`).
    pub aggregate: Option<Aggregate>,
    /// The offset of output times (`timeZone`).
    pub zone: Zone,
    pub paging: Paging,
    pub format: Format,
    /// A chart's size in pixels (`width`, `height`).
    pub size: (u32, u32),
    /// Only the rows changed since this version (`changedSince`).
    pub changed_since: Option<AsOf>,
}

impl Request for ManyValuesRequest {
    const BASIC: &'static [&'static str] = &[];
    const EXTENDED: &'static [&'static str] = &MANY_VALUES_PARAMETERS;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        let raw = q.raw;
        let selection = SeriesSelection::parse(raw)?;
        let zone = time_zone(q)?;
        let qualities = qualities(raw)?;
        let aggregate = aggregate_spec(raw, zone, qualities.clone())?;
        let (columns, aggregate) = match aggregate {
            Some(spec) => {
                let all = BucketColumn::all(&spec);
                let mut names = vec!["stationId".to_owned(), "parameterId".to_owned()];
                names.extend(all.iter().map(|c| c.name()));
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let fields = q.fields(&names, no_alias)?;
                let columns = chosen(all, fields.as_deref());
                let aggregate = Aggregate {
                    spec,
                    columns,
                    sort: Vec::new(),
                };
                (Vec::new(), Some(aggregate))
            }
            None => {
                let fields = q.fields(MANY_VALUE_FIELDS, no_alias)?;
                let columns = ValueColumn::ALL
                    .into_iter()
                    .filter(|c| {
                        fields
                            .as_ref()
                            .is_none_or(|f| f.iter().any(|n| n == c.name()))
                    })
                    .collect();
                (columns, None)
            }
        };
        Ok(Self {
            selection,
            window: window(raw)?,
            columns,
            qualities,
            aggregate,
            zone,
            paging: q.paging()?,
            // A selection too long for a URL is data to analyse, not a chart to look at.
            format: q.format(if q.posted {
                Answer::PostedValues
            } else {
                Answer::ManyValues
            })?,
            size: chart_size(raw)?,
            changed_since: changed_since(raw)?,
        })
    }
}

/// `changedSince`: the version (an id or a generation) whose rows the answer's rows, upserted
/// into, make this version's. The changes are all rows at once in time order, so what picks or
/// orders other rows is not taken with it (`from` and `to` narrow it).
fn changed_since(raw: &RawQuery) -> Result<Option<AsOf>, ApiError> {
    let Some(v) = raw.get("changedSince")? else {
        return Ok(None);
    };
    let base = match AsOf::parse(v) {
        Ok(base @ (AsOf::Id { .. } | AsOf::Generation(_))) => base,
        _ => {
            return Err(ApiError::param(
                "changedSince",
                format!(
                    "'{}' is not a version; give a version id (as /v1/versions lists them) or a \
                     generation number",
                    shorten(v)
                ),
            ));
        }
    };
    for other in [
        "recent",
        "last",
        "aggregate",
        "qualities",
        "sort",
        "limit",
        "offset",
    ] {
        if raw.get(other)?.is_some() {
            return Err(ApiError::param(
                "changedSince",
                format!(
                    "is not taken with {other}: the changes are every row new or changed since \
                     that version, in time order, in one answer (from and to narrow them)"
                ),
            ));
        }
    }
    Ok(Some(base))
}

/// `fields` of `/v1/values`: the ids are always there (a row without them is no use).
pub const MANY_VALUE_FIELDS: &[&str] =
    &["stationId", "parameterId", "timestamp", "value", "quality"];

/// `GET /v1/stations/{id}`.
pub struct StationRequest {
    pub include: Includes,
    pub fields: Option<Vec<String>>,
    pub format: Format,
}

impl Request for StationRequest {
    const BASIC: &'static [&'static str] = &["include", "fields", "format"];
    const EXTENDED: &'static [&'static str] = &[];
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            include: includes(q.raw)?,
            fields: q.fields(STATION_FIELDS, canon_station_path)?,
            format: q.format(Answer::Stations)?,
        })
    }
}

/// `GET /v1/stations/{id}/parameters`.
pub struct ParametersRequest {
    pub sort: Vec<SortSpec>,
    pub fields: Option<Vec<String>>,
    pub paging: Paging,
    pub format: Format,
}

impl Request for ParametersRequest {
    const BASIC: &'static [&'static str] = &[];
    const EXTENDED: &'static [&'static str] = LIST;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            sort: q.sort(PARAMETER_SORT, no_alias)?,
            fields: q.fields(PARAMETER_FIELDS, no_alias)?,
            paging: q.paging()?,
            format: q.format(Answer::Catalog)?,
        })
    }
}

/// `GET /v1/stations/{id}/parameters/{parameterId}`.
pub struct ParameterRequest {
    pub fields: Option<Vec<String>>,
    pub format: Format,
}

impl Request for ParameterRequest {
    const BASIC: &'static [&'static str] = &["fields", "format"];
    const EXTENDED: &'static [&'static str] = &[];
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            fields: q.fields(PARAMETER_FIELDS, no_alias)?,
            format: q.format(Answer::Catalog)?,
        })
    }
}

/// `GET /v1/stations/{id}/characteristics`.
pub struct CharacteristicsRequest {
    pub types: Option<Vec<CharacteristicType>>,
    pub parameter_ids: Option<Vec<ParameterId>>,
    pub sort: Vec<SortSpec>,
    pub fields: Option<Vec<String>>,
    pub paging: Paging,
    pub format: Format,
}

impl Request for CharacteristicsRequest {
    const BASIC: &'static [&'static str] = &[
        "types",
        "parameterIds",
        "limit",
        "offset",
        "sort",
        "fields",
        "format",
    ];
    const EXTENDED: &'static [&'static str] = &[];
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            types: parsed_list::<CharacteristicType>(q.raw, "types")?,
            parameter_ids: parsed_list::<ParameterId>(q.raw, "parameterIds")?,
            sort: q.sort(CHARACTERISTIC_SORT, no_alias)?,
            fields: q.fields(CHARACTERISTIC_FIELDS, no_alias)?,
            paging: q.paging()?,
            format: q.format(Answer::Catalog)?,
        })
    }
}

/// `GET /v1/stations/{id}/characteristics/{characteristicId}`.
pub struct CharacteristicRequest {
    pub fields: Option<Vec<String>>,
    pub format: Format,
}

impl Request for CharacteristicRequest {
    const BASIC: &'static [&'static str] = &["fields", "format"];
    const EXTENDED: &'static [&'static str] = &[];
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            fields: q.fields(CHARACTERISTIC_FIELDS, no_alias)?,
            format: q.format(Answer::Catalog)?,
        })
    }
}

/// `GET /v1/stations/{id}/parameters/{parameterId}/values`.
pub struct ValuesRequest {
    /// `from`/`to`, `recent` or `last`, exclusively.
    pub window: Window,
    pub sort: Vec<SortKey>,
    /// The output columns, in the resource's own field order (as `fields` keeps it for every
    /// other resource).
    pub columns: Vec<ValueColumn>,
    /// Only values of these qualities (`qualities`), raw or aggregated.
    pub qualities: Option<Arc<[String]>>,
    /// Buckets instead of values (`aggregate`); `sort`, `fields` and the page then apply to
    /// them, and `sort` and `columns` above are left empty.
    pub aggregate: Option<Aggregate>,
    /// The offset of output times (`timeZone`).
    pub zone: Zone,
    pub paging: Paging,
    pub format: Format,
    /// A chart's size in pixels (`width`, `height`).
    pub size: (u32, u32),
    /// Only the rows changed since this version (`changedSince`).
    pub changed_since: Option<AsOf>,
}

impl Request for ValuesRequest {
    const BASIC: &'static [&'static str] = &["from", "to"];
    const EXTENDED: &'static [&'static str] = &VALUES_PARAMETERS;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        let window = window(q.raw)?;
        let zone = time_zone(q)?;
        let qualities = qualities(q.raw)?;
        let changed_since = changed_since(q.raw)?;
        if let Some(spec) = aggregate_spec(q.raw, zone, qualities.clone())? {
            let all = BucketColumn::all(&spec);
            let names: Vec<String> = all.iter().map(|c| c.name()).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let sort = q
                .sort(&names, no_alias)?
                .iter()
                .filter_map(|k| {
                    let c = all.iter().find(|c| c.name() == k.path)?;
                    Some((*c, k.descending))
                })
                .collect();
            let fields = q.fields(&names, no_alias)?;
            return Ok(Self {
                window,
                sort: Vec::new(),
                columns: Vec::new(),
                qualities,
                aggregate: Some(Aggregate {
                    columns: chosen(all, fields.as_deref()),
                    spec,
                    sort,
                }),
                zone,
                paging: q.paging()?,
                size: chart_size(q.raw)?,
                format: q.format(Answer::Values)?,
                changed_since,
            });
        }
        let sort = q
            .sort(VALUE_FIELDS, no_alias)?
            .iter()
            .filter_map(|k| {
                Some(SortKey {
                    column: ValueColumn::from_name(&k.path)?,
                    descending: k.descending,
                })
            })
            .collect();
        let fields = q.fields(VALUE_FIELDS, no_alias)?;
        let columns = ValueColumn::ALL
            .into_iter()
            .filter(|c| {
                fields
                    .as_ref()
                    .is_none_or(|f| f.iter().any(|n| n == c.name()))
            })
            .collect();
        let format = q.format(Answer::Values)?;
        Ok(Self {
            window,
            sort,
            columns,
            qualities,
            aggregate: None,
            zone,
            paging: q.paging()?,
            size: chart_size(q.raw)?,
            format,
            changed_since,
        })
    }
}

/// `width` and `height` of a chart (`format=svg` or `png`, and the chart of a values page), each
/// within the sizes a chart may have. Other formats have no use for them and leave them be,
/// as they do `sort` (a request valid for one format stays valid for the others).
fn chart_size(raw: &RawQuery) -> Result<(u32, u32), ApiError> {
    let (default_width, default_height) = chart::DEFAULT_SIZE;
    let size = |name: &str, range: std::ops::RangeInclusive<u32>, default: u32| {
        let Some(v) = raw.get(name)? else {
            return Ok(default);
        };
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
    };
    Ok((
        size("width", chart::WIDTHS, default_width)?,
        size("height", chart::HEIGHTS, default_height)?,
    ))
}

pub fn no_alias(p: &str) -> String {
    p.to_owned()
}

/// A comma list of values of `T`, each parsed by its `FromStr`.
fn parsed_list<T>(q: &RawQuery, name: &str) -> Result<Option<Vec<T>>, ApiError>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    q.get(name)?
        .map(|v| {
            params::list(name, v)?
                .into_iter()
                .map(|t| {
                    t.parse::<T>()
                        .map_err(|e| ApiError::param(name, format!("'{}': {e}", shorten(t))))
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()
}

/// `include`: `parameters`, `characteristics`.
fn includes(q: &RawQuery) -> Result<Includes, ApiError> {
    let Some(v) = q.get("include")? else {
        return Ok(Includes::default());
    };
    let mut out = Includes::default();
    for item in params::list("include", v)? {
        match item {
            "parameters" => out.parameters = true,
            "characteristics" => out.characteristics = true,
            other => {
                return Err(ApiError::param(
                    "include",
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

/// The time window of a values request: `from`/`to`, `recent` or `last`, exclusively.
fn window(q: &RawQuery) -> Result<Window, ApiError> {
    let (from, to) = params::from_to(q)?;
    let recent = q
        .get("recent")?
        .map(|v| params::uint("recent", v))
        .transpose()?;
    let last = q
        .get("last")?
        .map(|v| params::duration("last", v))
        .transpose()?;
    let given: Vec<&str> = [
        ("from/to", from.is_some() || to.is_some()),
        ("recent", recent.is_some()),
        ("last", last.is_some()),
    ]
    .into_iter()
    .filter_map(|(n, g)| g.then_some(n))
    .collect();
    if given.len() > 1 {
        return Err(ApiError::param(
            given[1],
            format!("cannot be combined with {}", given[0]),
        ));
    }
    Ok(match (recent, last) {
        (Some(n), _) => Window::Recent(n),
        (_, Some(d)) => Window::Last(d),
        _ => Window::Between { from, to },
    })
}

/// What an aggregate answer holds (`aggregate` and the parameters that go with it).
pub struct Aggregate {
    pub spec: AggregateSpec,
    /// The output columns (`fields`), in the answer's own order.
    pub columns: Vec<BucketColumn>,
    /// `sort` over the buckets (`true`: descending); single series only.
    pub sort: Vec<(BucketColumn, bool)>,
}

/// The columns of `all` that `fields` names, in `all`'s order.
fn chosen(all: Vec<BucketColumn>, fields: Option<&[String]>) -> Vec<BucketColumn> {
    all.into_iter()
        .filter(|c| fields.is_none_or(|f| f.iter().any(|n| *n == c.name())))
        .collect()
}

/// `timeZone`: an IANA name, `UTC` or `±HH:MM`; the service's output offset without it.
fn time_zone(q: &Query<'_>) -> Result<Zone, ApiError> {
    q.raw
        .get("timeZone")?
        .map(|v| {
            Zone::parse(v)
                .map_err(|e| ApiError::param("timeZone", format!("'{}': {e}", shorten(v))))
        })
        .transpose()
        .map(|z| z.unwrap_or(q.zone))
}

/// `qualities`: only values of these qualities, raw or aggregated.
fn qualities(raw: &RawQuery) -> Result<Option<Arc<[String]>>, ApiError> {
    Ok(texts(raw, "qualities")?.map(Arc::from))
}

/// `aggregate` and the parameters that shape it (`interval`, `yearStart`, `minCoverage`),
/// which without it are a 400 naming it; `qualities` as given.
fn aggregate_spec(
    raw: &RawQuery,
    zone: Zone,
    qualities: Option<Arc<[String]>>,
) -> Result<Option<AggregateSpec>, ApiError> {
    let Some(asked) = raw.get("aggregate")? else {
        for name in ["interval", "yearStart", "minCoverage"] {
            if raw.get(name)?.is_some() {
                return Err(ApiError::param(
                    "aggregate",
                    format!(
                        "{name} shapes an aggregate: give the statistics to compute, e.g. aggregate=mean,min,max"
                    ),
                ));
            }
        }
        return Ok(None);
    };
    let statistics = statistics(asked)?;
    let interval = raw
        .get("interval")?
        .map(|v| {
            let bad = || {
                ApiError::param(
                    "interval",
                    format!("'{}' is not a bucket length; use {INTERVALS}", shorten(v)),
                )
            };
            params::duration("interval", v)
                .ok()
                .and_then(Interval::of)
                .ok_or_else(bad)
        })
        .transpose()?;
    let year_start = year_start(raw)?;
    let min_coverage = min_coverage(raw)?;
    Ok(Some(AggregateSpec {
        statistics,
        interval,
        zone,
        year_start,
        min_coverage,
        qualities,
    }))
}

/// `aggregate`: the statistics asked for, each once, in the order asked.
fn statistics(asked: &str) -> Result<Vec<Statistic>, ApiError> {
    let mut statistics: Vec<Statistic> = Vec::new();
    for item in params::list("aggregate", asked)? {
        let s: Statistic = item.parse().map_err(|()| {
            ApiError::param(
                "aggregate",
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

/// `yearStart`: the month years start in; 1 without it.
fn year_start(raw: &RawQuery) -> Result<u32, ApiError> {
    Ok(raw
        .get("yearStart")?
        .map(|v| {
            params::uint("yearStart", v)
                .ok()
                .filter(|m| (1..=12).contains(m))
                .ok_or_else(|| ApiError::param("yearStart", "must be the month a year starts in, 1 to 12 (e.g. 11 for German hydrological years)"))
        })
        .transpose()?
        .map_or(1, |m| m as u32))
}

/// `minCoverage`: 0 without it.
fn min_coverage(raw: &RawQuery) -> Result<f64, ApiError> {
    Ok(raw
        .get("minCoverage")?
        .map(|v| {
            v.parse::<f64>()
                .ok()
                .filter(|c| (0.0..=1.0).contains(c))
                .ok_or_else(|| {
                    ApiError::param(
                        "minCoverage",
                        "must be a number from 0 to 1 (the share of a bucket's expected values)",
                    )
                })
        })
        .transpose()?
        .unwrap_or(0.0))
}

/// `GET …/parameters/{parameterId}/statistics`: statistics of a series over a reference
/// period (see `hydro_engine::query::statistics`).
#[derive(Clone)]
pub struct StatisticsRequest {
    /// The reference period (`from`/`to`).
    pub window: Window,
    pub spec: StatisticsSpec,
    pub format: Format,
    /// A chart's size in pixels (`width`, `height`).
    pub size: (u32, u32),
}

/// The parameters of both statistics endpoints besides the selection.
const STATISTICS_PARAMETERS: [&str; 12] = [
    "type",
    "from",
    "to",
    "timeZone",
    "yearStart",
    "minCoverage",
    "aggregate",
    "exceedance",
    "qualities",
    "format",
    "width",
    "height",
];

/// `a` then `b`: a list of parameters made of two (`N` must be their lengths' sum).
const fn concat<const N: usize>(a: &[&'static str], b: &[&'static str]) -> [&'static str; N] {
    assert!(N == a.len() + b.len(), "N is not the sum of the lengths");
    let mut out = [""; N];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    let mut j = 0;
    while j < b.len() {
        out[i + j] = b[j];
        j += 1;
    }
    out
}

const MANY_STATISTICS_PARAMETERS: [&str; 21] = concat(selection_and![], &STATISTICS_PARAMETERS);

impl Request for StatisticsRequest {
    const BASIC: &'static [&'static str] = &[];
    const EXTENDED: &'static [&'static str] = &STATISTICS_PARAMETERS;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        let raw = q.raw;
        let kind = match raw.get("type")? {
            None => Err(format!("give the statistics wanted: {STATISTICS_TYPES}")),
            Some(v) => v.parse::<StatisticsType>().map_err(|()| {
                format!(
                    "'{}' is not a statistics type; use {STATISTICS_TYPES}",
                    shorten(v)
                )
            }),
        }
        .map_err(|reason| ApiError::param("type", reason))?;
        let normals = matches!(
            kind,
            StatisticsType::DayOfYear | StatisticsType::MonthOfYear
        );
        let statistics = match raw.get("aggregate")? {
            Some(_) if !normals => {
                return Err(ApiError::param(
                    "aggregate",
                    "summarises normals: it goes with type=dayOfYear or type=monthOfYear",
                ));
            }
            Some(asked) => statistics(asked)?,
            None => vec![Statistic::Mean],
        };
        let exceedance = match raw.get("exceedance")? {
            Some(_) if kind != StatisticsType::Duration => {
                return Err(ApiError::param(
                    "exceedance",
                    "gives the points of a duration curve: it goes with type=duration",
                ));
            }
            Some(asked) => exceedance(asked)?,
            None => DEFAULT_EXCEEDANCE.to_vec(),
        };
        let (from, to) = params::from_to(raw)?;
        Ok(Self {
            window: Window::Between { from, to },
            spec: StatisticsSpec {
                kind,
                statistics,
                zone: time_zone(q)?,
                year_start: year_start(raw)?,
                min_coverage: min_coverage(raw)?,
                qualities: qualities(raw)?,
                exceedance,
            },
            // As for values, a selection sent in a body gets the data formats, not the charts.
            format: q.format(if q.posted {
                Answer::PostedStatistics
            } else {
                Answer::Statistics
            })?,
            size: chart_size(raw)?,
        })
    }
}

/// `exceedance`: probabilities from 0 to 1, in the order asked.
fn exceedance(asked: &str) -> Result<Vec<f64>, ApiError> {
    params::list("exceedance", asked)?
        .into_iter()
        .map(|item| {
            item.parse::<f64>()
                .ok()
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or_else(|| {
                    ApiError::param(
                        "exceedance",
                        format!(
                            "'{}' is not a probability; give numbers from 0 to 1, e.g. 0.1,0.5,0.9",
                            shorten(item)
                        ),
                    )
                })
        })
        .collect()
}

/// `GET /v1/statistics` (or POST, the parameters in the body): the statistics of many series,
/// chosen as for `/v1/values`.
pub struct ManyStatisticsRequest {
    pub selection: SeriesSelection,
    pub statistics: StatisticsRequest,
}

impl Request for ManyStatisticsRequest {
    const BASIC: &'static [&'static str] = &[];
    const EXTENDED: &'static [&'static str] = &MANY_STATISTICS_PARAMETERS;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            selection: SeriesSelection::parse(q.raw)?,
            statistics: StatisticsRequest::parse(q)?,
        })
    }
}

/// `GET /v1/sql?q=…`, or `POST /v1/sql` with the statement as the body: one read-only SQL
/// statement over the version answered from.
pub struct SqlRequest {
    pub statement: String,
    pub format: Format,
}

impl Request for SqlRequest {
    const BASIC: &'static [&'static str] = &[];
    const EXTENDED: &'static [&'static str] = &["q", "format"];
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        let statement = q.raw.get("q")?.ok_or_else(|| {
            ApiError::param(
                "q",
                "give one SQL statement, e.g. q=SELECT count(*) FROM stations",
            )
        })?;
        if statement.trim().is_empty() {
            return Err(ApiError::param("q", "must not be blank"));
        }
        Ok(Self {
            statement: statement.to_owned(),
            format: q.format(Answer::Sql)?,
        })
    }
}
