//! Typed requests, one per endpoint: the raw query ([`RawQuery`], pairs as sent) becomes a
//! validated request (types, ranges, mutual exclusions) whose fields read like the standard's
//! parameter table of the endpoint, and which the handler turns into catalog look-ups or an
//! engine query. As ripgrep goes from `LowArgs` to `HiArgs`, nothing after this stage parses.
//!
//! Each request names its endpoint; the parameters an endpoint takes in each variant are
//! those [`query_parameters`](super::query_parameters) defines for it, and any other is a
//! 400 (a typo must never widen an answer). The check runs before path ids are resolved, the
//! parsing after: a bad id is a 404 whatever the query, as before this stage existed.

use crate::api::params::{self, RawQuery, SortSpec};
use crate::api::query_parameters::{self as param, Endpoint, QueryParameter};
use crate::http::error::ApiError;
use crate::render::chart;
use crate::render::format::{Format, choose};
use crate::render::resources::{
    CHARACTERISTIC_FIELDS, CHARACTERISTIC_SORT, Includes, MANY_VALUE_FIELDS, PARAMETER_FIELDS,
    PARAMETER_SORT, STATION_FIELDS, STATION_SORT, VALUE_FIELDS, canon_station_path,
};
use crate::versions::AsOf;
use hydro_engine::ParameterId;
use hydro_engine::StationFilter;
use hydro_engine::Statistic;
use hydro_engine::Zone;
use hydro_engine::{AggregateSpec, BucketColumn};
use hydro_engine::{CharacteristicType, Micros};
use hydro_engine::{DEFAULT_EXCEEDANCE, STATISTICS_TYPES, StatisticsSpec, StatisticsType};
use hydro_engine::{SortKey, ValueColumn, Window};
use std::sync::Arc;

/// A request of one endpoint, parsed from its query.
pub trait Request: Sized {
    /// The endpoint, whose parameters it takes.
    const ENDPOINT: Endpoint;
    /// The endpoint when the parameters come in a POST body.
    const POSTED: Endpoint = Self::ENDPOINT;
    /// The endpoint asked, by whether the parameters came in a POST body.
    fn endpoint(posted: bool) -> Endpoint {
        if posted { Self::POSTED } else { Self::ENDPOINT }
    }
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

/// A request's query as the typed requests read it: its pairs, the `Accept` header (which
/// chooses the format when `format` does not) and the variant of the API.
pub struct Query<'a> {
    pub raw: &'a RawQuery,
    pub accept: Option<&'a str>,
    pub basic: bool,
    /// The endpoint asked (the POST one when the parameters came in a body): the parameters
    /// it takes and the formats it offers.
    pub endpoint: Endpoint,
    /// The zone of output times without `timeZone`: the service's output zone.
    pub zone: Zone,
    /// The dataset's own zone, where it has one: the calendar of aggregates and statistics
    /// without `timeZone`.
    pub dataset_zone: Option<Zone>,
}

impl Query<'_> {
    /// Checks that only the endpoint's parameters are present, split by variant.
    pub fn admit(&self) -> Result<(), ApiError> {
        let endpoint = self.endpoint;
        let extended = param::names(endpoint, false);
        if self.basic {
            let hint = self
                .raw
                .pairs
                .iter()
                .any(|(k, _)| extended.contains(&k.as_str()));
            return self.raw.only(&param::names(endpoint, true), hint);
        }
        self.raw.only(&extended, false)
    }

    /// The value of `parameter`, parsed, if given.
    pub fn value<T>(&self, parameter: &QueryParameter<T>) -> Result<Option<T>, ApiError> {
        self.raw
            .get(parameter.name)?
            .map(|v| parameter.parse(v))
            .transpose()
    }

    /// Whether `parameter` was given.
    fn given<T>(&self, parameter: &QueryParameter<T>) -> Result<bool, ApiError> {
        Ok(self.raw.get(parameter.name)?.is_some())
    }

    /// The answer's format among those the endpoint offers: JSON alone in the basic variant.
    fn format(&self) -> Result<Format, ApiError> {
        let offered = if self.basic {
            vec![Format::JSON]
        } else {
            Format::offered(self.endpoint.answer())
        };
        choose(self.raw.get(param::FORMAT.name)?, self.accept, &offered)
    }

    fn paging(&self) -> Result<Paging, ApiError> {
        let limit = self.value(&param::LIMIT)?;
        let offset = self.value(&param::OFFSET)?;
        Ok(Paging {
            limit,
            offset: offset.unwrap_or(0),
            given: limit.is_some() || offset.is_some(),
        })
    }

    fn sort(&self, allowed: &[&str], canon: fn(&str) -> String) -> Result<Vec<SortSpec>, ApiError> {
        self.value(&param::SORT)?
            .map(|v| params::sort(&v, allowed, canon))
            .transpose()
            .map(Option::unwrap_or_default)
    }

    fn fields(
        &self,
        allowed: &[&str],
        canon: fn(&str) -> String,
    ) -> Result<Option<Vec<String>>, ApiError> {
        self.value(&param::FIELDS)?
            .map(|v| params::fields(&v, allowed, canon))
            .transpose()
    }
}

/// `GET /v1/` (landing page).
/// The landing page: its format.
pub struct LandingRequest(pub Format);

impl Request for LandingRequest {
    const ENDPOINT: Endpoint = Endpoint::Landing;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self(q.format()?))
    }
}

/// `GET /v1/openapi.json`: JSON, or the page a browser asks for.
pub struct DocumentRequest(pub Format);

impl Request for DocumentRequest {
    const ENDPOINT: Endpoint = Endpoint::Document;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self(q.format()?))
    }
}

/// Endpoints that take no parameters (health, OpenAPI document, schemas).
pub struct NoParameters;

impl Request for NoParameters {
    const ENDPOINT: Endpoint = Endpoint::Fixed;
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
    const ENDPOINT: Endpoint = Endpoint::Stations;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            filter: station_filter(q)?,
            include: q.value(&param::INCLUDE)?.unwrap_or_default(),
            sort: q.sort(STATION_SORT, canon_station_path)?,
            fields: q.fields(STATION_FIELDS, canon_station_path)?,
            paging: q.paging()?,
            format: q.format()?,
        })
    }
}

/// The station filters of `/v1/stations`, shared by the endpoints that select stations.
fn station_filter(q: &Query<'_>) -> Result<StationFilter, ApiError> {
    Ok(StationFilter {
        states: q.value(&param::STATES)?,
        water_body_ids: q.value(&param::WATER_BODY_IDS)?,
        types: q.value(&param::STATION_TYPES)?,
        bbox: q.value(&param::BBOX)?,
        near: q.value(&param::NEAR)?,
        text: q.value(&param::SEARCH)?,
    })
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
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        let parameters = q.value(&param::PARAMETERS)?;
        let observed_properties = q.value(&param::OBSERVED_PROPERTIES)?;
        if parameters.is_none() && observed_properties.is_none() {
            return Err(ApiError::param(
                param::PARAMETERS.name,
                "give parameters (ids such as water-level-15min) or observedProperties, so \
                 that the answer holds the series meant",
            ));
        }
        Ok(Self {
            filter: station_filter(q)?,
            stations: q.value(&param::STATIONS)?,
            parameters,
            observed_properties,
        })
    }
}

/// `GET /v1/versions`: the versions the store holds.
pub struct VersionsRequest {
    pub paging: Paging,
    pub format: Format,
}

impl Request for VersionsRequest {
    const ENDPOINT: Endpoint = Endpoint::Versions;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            paging: q.paging()?,
            format: q.format()?,
        })
    }
}

/// `GET /v1/versions/{id}`: one version.
pub struct VersionRequest(pub Format);

impl Request for VersionRequest {
    const ENDPOINT: Endpoint = Endpoint::Version;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self(q.format()?))
    }
}

/// `GET /v1/latest`: the newest value of each selected series.
pub struct LatestRequest {
    pub selection: SeriesSelection,
    pub paging: Paging,
    pub format: Format,
}

impl Request for LatestRequest {
    const ENDPOINT: Endpoint = Endpoint::Latest;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            selection: SeriesSelection::parse(q)?,
            paging: q.paging()?,
            format: q.format()?,
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
    const ENDPOINT: Endpoint = Endpoint::ManyValues;
    const POSTED: Endpoint = Endpoint::PostedValues;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        let selection = SeriesSelection::parse(q)?;
        let qualities = qualities(q)?;
        let aggregate = aggregate_spec(q, qualities.clone())?;
        let zone = match &aggregate {
            Some(spec) => spec.zone,
            None => time_zone(q)?,
        };
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
            window: window(q)?,
            columns,
            qualities,
            aggregate,
            zone,
            paging: q.paging()?,
            // A selection too long for a URL is data to analyse, not a chart to look at: a
            // POST has the formats of `Endpoint::PostedValues`.
            format: q.format()?,
            size: chart_size(q)?,
            changed_since: changed_since(q)?,
        })
    }
}

/// `changedSince`: the version (an id or a generation) whose rows the answer's rows, upserted
/// into, make this version's. The changes are all rows at once in time order, so what picks or
/// orders other rows is not taken with it (`from` and `to` narrow it).
fn changed_since(q: &Query<'_>) -> Result<Option<AsOf>, ApiError> {
    let Some(base) = q.value(&param::CHANGED_SINCE)? else {
        return Ok(None);
    };
    for other in [
        param::RECENT.name,
        param::LAST.name,
        param::AGGREGATE.name,
        param::QUALITIES.name,
        param::SORT.name,
        param::LIMIT.name,
        param::OFFSET.name,
    ] {
        if q.raw.get(other)?.is_some() {
            return Err(ApiError::param(
                param::CHANGED_SINCE.name,
                format!(
                    "is not taken with {other}: the changes are every row new or changed since \
                     that version, in time order, in one answer (from and to narrow them)"
                ),
            ));
        }
    }
    Ok(Some(base))
}

/// `GET /v1/stations/{id}`.
pub struct StationRequest {
    pub include: Includes,
    pub fields: Option<Vec<String>>,
    pub format: Format,
}

impl Request for StationRequest {
    const ENDPOINT: Endpoint = Endpoint::Station;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            include: q.value(&param::INCLUDE)?.unwrap_or_default(),
            fields: q.fields(STATION_FIELDS, canon_station_path)?,
            format: q.format()?,
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
    const ENDPOINT: Endpoint = Endpoint::Parameters;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            sort: q.sort(PARAMETER_SORT, no_alias)?,
            fields: q.fields(PARAMETER_FIELDS, no_alias)?,
            paging: q.paging()?,
            format: q.format()?,
        })
    }
}

/// `GET /v1/stations/{id}/parameters/{parameterId}`.
pub struct ParameterRequest {
    pub fields: Option<Vec<String>>,
    pub format: Format,
}

impl Request for ParameterRequest {
    const ENDPOINT: Endpoint = Endpoint::Parameter;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            fields: q.fields(PARAMETER_FIELDS, no_alias)?,
            format: q.format()?,
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
    const ENDPOINT: Endpoint = Endpoint::Characteristics;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            types: q.value(&param::CHARACTERISTIC_TYPES)?,
            parameter_ids: q.value(&param::PARAMETER_IDS)?,
            sort: q.sort(CHARACTERISTIC_SORT, no_alias)?,
            fields: q.fields(CHARACTERISTIC_FIELDS, no_alias)?,
            paging: q.paging()?,
            format: q.format()?,
        })
    }
}

/// `GET /v1/stations/{id}/characteristics/{characteristicId}`.
pub struct CharacteristicRequest {
    pub fields: Option<Vec<String>>,
    pub format: Format,
}

impl Request for CharacteristicRequest {
    const ENDPOINT: Endpoint = Endpoint::Characteristic;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            fields: q.fields(CHARACTERISTIC_FIELDS, no_alias)?,
            format: q.format()?,
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
    const ENDPOINT: Endpoint = Endpoint::Values;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        let window = window(q)?;
        let zone = time_zone(q)?;
        let qualities = qualities(q)?;
        let changed_since = changed_since(q)?;
        if let Some(spec) = aggregate_spec(q, qualities.clone())? {
            let zone = spec.zone;
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
                size: chart_size(q)?,
                format: q.format()?,
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
        let format = q.format()?;
        Ok(Self {
            window,
            sort,
            columns,
            qualities,
            aggregate: None,
            zone,
            paging: q.paging()?,
            size: chart_size(q)?,
            format,
            changed_since,
        })
    }
}

/// `width` and `height` of a chart (`format=svg` or `png`, and the chart of a values page), each
/// within the sizes a chart may have. Other formats have no use for them and leave them be,
/// as they do `sort` (a request valid for one format stays valid for the others).
fn chart_size(q: &Query<'_>) -> Result<(u32, u32), ApiError> {
    let (width, height) = chart::DEFAULT_SIZE;
    Ok((
        q.value(&param::WIDTH)?.unwrap_or(width),
        q.value(&param::HEIGHT)?.unwrap_or(height),
    ))
}

pub fn no_alias(p: &str) -> String {
    p.to_owned()
}

/// `from` and `to` (as `from_def` and `to_def` define them), `from` not after `to` (the
/// problem names both as they were written).
fn from_to(
    q: &Query<'_>,
    from_def: &QueryParameter<Micros>,
    to_def: &QueryParameter<Micros>,
) -> Result<(Option<Micros>, Option<Micros>), ApiError> {
    let (from, to) = (bound(q, from_def, false)?, bound(q, to_def, true)?);
    if let (Some(f), Some(t)) = (from, to)
        && f > t
    {
        let written = |def: &QueryParameter<Micros>| {
            q.raw
                .get(def.name)
                .ok()
                .flatten()
                .map(params::shorten)
                .unwrap_or_default()
        };
        return Err(ApiError::param(
            from_def.name,
            format!("'{}' is after to '{}'", written(from_def), written(to_def)),
        ));
    }
    Ok((from, to))
}

/// `from` or `to` (`end`): with an offset; or without one where `timeZone` is given, the
/// wall-clock time in that zone (of an hour the clocks pass twice, the earlier for `from` and
/// the later for `to`, so that the window holds both; one they skip is a 400).
fn bound(
    q: &Query<'_>,
    def: &QueryParameter<Micros>,
    end: bool,
) -> Result<Option<Micros>, ApiError> {
    let refused = match q.value(def) {
        Ok(t) => return Ok(t),
        Err(e) => e,
    };
    let (Some(zone), Some(written)) = (q.value(&param::TIME_ZONE)?, q.raw.get(def.name)?) else {
        return Err(refused);
    };
    let Some(local) = hydro_engine::parse_local_time(written) else {
        return Err(refused);
    };
    zone.instant(local, end).map(Some).ok_or_else(|| {
        ApiError::param(
            def.name,
            format!(
                "'{}' does not exist in {zone}: the clocks skip that hour when daylight saving \
                 time begins",
                params::shorten(written)
            ),
        )
    })
}

/// The time window of a values request: `from`/`to`, `recent` or `last`, exclusively.
fn window(q: &Query<'_>) -> Result<Window, ApiError> {
    let (from, to) = from_to(q, &param::FROM, &param::TO)?;
    let recent = q.value(&param::RECENT)?;
    let last = q.value(&param::LAST)?;
    let given: Vec<&str> = [
        ("from/to", from.is_some() || to.is_some()),
        (param::RECENT.name, recent.is_some()),
        (param::LAST.name, last.is_some()),
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

/// `timeZone`: an IANA name, `UTC` or `±HH:MM`; the service's output zone without it.
fn time_zone(q: &Query<'_>) -> Result<Zone, ApiError> {
    Ok(q.value(&param::TIME_ZONE)?.unwrap_or(q.zone))
}

/// The calendar of aggregates and statistics: `timeZone`, else the dataset's own zone (where
/// it has one: `--dataset-zone`), else the service's output zone.
fn calendar_zone(q: &Query<'_>) -> Result<Zone, ApiError> {
    Ok(q.value(&param::TIME_ZONE)?
        .or(q.dataset_zone)
        .unwrap_or(q.zone))
}

/// `qualities`: only values of these qualities, raw or aggregated.
fn qualities(q: &Query<'_>) -> Result<Option<Arc<[String]>>, ApiError> {
    Ok(q.value(&param::QUALITIES)?.map(Arc::from))
}

/// `aggregate` and the parameters that shape it (`interval`, `yearStart`, `minCoverage`),
/// which without it are a 400 naming it; `qualities` as given.
fn aggregate_spec(
    q: &Query<'_>,
    qualities: Option<Arc<[String]>>,
) -> Result<Option<AggregateSpec>, ApiError> {
    let Some(statistics) = q.value(&param::AGGREGATE)? else {
        for name in [
            param::INTERVAL.name,
            param::YEAR_START.name,
            param::MIN_COVERAGE.name,
        ] {
            if q.raw.get(name)?.is_some() {
                return Err(ApiError::param(
                    param::AGGREGATE.name,
                    format!(
                        "{name} shapes an aggregate: give the statistics to compute, e.g. aggregate=mean,min,max"
                    ),
                ));
            }
        }
        return Ok(None);
    };
    Ok(Some(AggregateSpec {
        statistics,
        interval: q.value(&param::INTERVAL)?,
        zone: calendar_zone(q)?,
        year_start: q.value(&param::YEAR_START)?.unwrap_or(1),
        min_coverage: q.value(&param::MIN_COVERAGE)?.unwrap_or(0.0),
        qualities,
    }))
}

/// `GET …/parameters/{parameterId}/statistics`: statistics of a series over a reference
/// period (see the engine's `query::statistics`).
#[derive(Clone)]
pub struct StatisticsRequest {
    /// The reference period (`from`/`to`).
    pub window: Window,
    pub spec: StatisticsSpec,
    pub format: Format,
    /// A chart's size in pixels (`width`, `height`).
    pub size: (u32, u32),
}

impl Request for StatisticsRequest {
    const ENDPOINT: Endpoint = Endpoint::Statistics;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Self::parse_statistics(q)
    }
}

impl StatisticsRequest {
    /// The statistics asked for, of one series or many (the format among the endpoint's).
    fn parse_statistics(q: &Query<'_>) -> Result<Self, ApiError> {
        let kind = q.value(&param::STATISTICS_TYPE)?.ok_or_else(|| {
            ApiError::param(
                param::STATISTICS_TYPE.name,
                format!("give the statistics wanted: {STATISTICS_TYPES}"),
            )
        })?;
        let normals = matches!(
            kind,
            StatisticsType::DayOfYear | StatisticsType::MonthOfYear
        );
        if !normals && q.given(&param::NORMALS)? {
            return Err(ApiError::param(
                param::NORMALS.name,
                "summarises normals: it goes with type=dayOfYear or type=monthOfYear",
            ));
        }
        if kind != StatisticsType::Duration && q.given(&param::EXCEEDANCE)? {
            return Err(ApiError::param(
                param::EXCEEDANCE.name,
                "gives the points of a duration curve: it goes with type=duration",
            ));
        }
        if kind != StatisticsType::Duration && q.given(&param::DURATION_INTERVAL)? {
            return Err(ApiError::param(
                param::DURATION_INTERVAL.name,
                "ranks the means of buckets in a duration curve (interval=P1D: daily means): \
                 it goes with type=duration",
            ));
        }
        let statistics = q
            .value(&param::NORMALS)?
            .unwrap_or_else(|| vec![Statistic::Mean]);
        let exceedance = q
            .value(&param::EXCEEDANCE)?
            .unwrap_or_else(|| DEFAULT_EXCEEDANCE.to_vec());
        let (from, to) = from_to(q, &param::PERIOD_FROM, &param::PERIOD_TO)?;
        Ok(Self {
            window: Window::Between { from, to },
            spec: StatisticsSpec {
                kind,
                statistics,
                zone: calendar_zone(q)?,
                year_start: q.value(&param::PERIOD_YEAR_START)?.unwrap_or(1),
                min_coverage: q.value(&param::PERIOD_MIN_COVERAGE)?.unwrap_or(0.0),
                qualities: qualities(q)?,
                exceedance,
                duration_of: q.value(&param::DURATION_INTERVAL)?,
            },
            format: q.format()?,
            size: chart_size(q)?,
        })
    }
}

/// `GET /v1/statistics` (or POST, the parameters in the body): the statistics of many series,
/// chosen as for `/v1/values`.
pub struct ManyStatisticsRequest {
    pub selection: SeriesSelection,
    pub statistics: StatisticsRequest,
}

impl Request for ManyStatisticsRequest {
    const ENDPOINT: Endpoint = Endpoint::ManyStatistics;
    const POSTED: Endpoint = Endpoint::PostedStatistics;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            selection: SeriesSelection::parse(q)?,
            // A selection sent in a body gets the data formats, not the charts
            // (`Endpoint::PostedStatistics`).
            statistics: StatisticsRequest::parse_statistics(q)?,
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
    const ENDPOINT: Endpoint = Endpoint::Sql;
    fn parse(q: &Query<'_>) -> Result<Self, ApiError> {
        let statement = q.value(&param::STATEMENT)?.ok_or_else(|| {
            ApiError::param(
                param::STATEMENT.name,
                "give one SQL statement, e.g. q=SELECT count(*) FROM stations",
            )
        })?;
        Ok(Self {
            statement,
            format: q.format()?,
        })
    }
}
