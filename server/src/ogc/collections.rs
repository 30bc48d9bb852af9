//! The three collections and their features, built from the catalog of the version that
//! answers: a station is a point; a series (a station's parameter) is a point with its
//! parameter's fields and availability; a latest value is a point with the series' newest
//! value, time, unit and quality.

use super::crs::{CRS84, Crs, Projection};
use super::{GEOJSON, JSON, link};
use crate::api::Ctx;
use crate::api::params::shorten;
use crate::http::error::ApiError;
use crate::render::resources::StationDoc;
use crate::render::timefmt::TimeFormatter;
use hydro_engine::{Latest, Micros, Parameter, Station};
use serde_json::{Map, Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collection {
    Stations,
    Series,
    Latest,
}

/// One feature before its JSON is made: a station, or a station's parameter (with its newest
/// value, in `latest`).
#[derive(Clone, Copy)]
pub struct Candidate<'a> {
    pub station: &'a Station,
    pub parameter: Option<&'a Parameter>,
    pub latest: Option<&'a Latest>,
}

/// The separator of a series' feature id, `{stationId}~{parameterId}`: never part of an id.
const SERIES_SEPARATOR: char = '~';

impl Collection {
    pub const ALL: [Collection; 3] = [Self::Stations, Self::Series, Self::Latest];

    pub fn id(self) -> &'static str {
        match self {
            Self::Stations => "stations",
            Self::Series => "series",
            Self::Latest => "latest",
        }
    }

    pub fn named(name: &str) -> Result<Self, ApiError> {
        Self::ALL
            .into_iter()
            .find(|c| c.id() == name)
            .ok_or_else(|| {
                ApiError::NotFound(format!(
                    "no collection '{}' (there are stations, series and latest)",
                    shorten(name)
                ))
            })
    }

    pub fn title(self) -> &'static str {
        match self {
            Self::Stations => "Stations",
            Self::Series => "Series",
            Self::Latest => "Latest values",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Self::Stations => "Every station, with the fields of the standard's station.",
            Self::Series => {
                "A feature per station and parameter: the parameter's fields and the period with data."
            }
            Self::Latest => {
                "A feature per series with values: its newest value, its time, unit and quality."
            }
        }
    }

    /// The properties a feature of this collection has that `items` filters on by name
    /// (`type=surfaceWater`), with their JSON Schema types.
    pub fn queryable(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Stations => &[
                ("id", "string"),
                ("name", "string"),
                ("type", "string"),
                ("state", "string"),
                ("operator", "string"),
                ("waterBodyId", "string"),
                ("waterBodyName", "string"),
            ],
            Self::Series | Self::Latest => &[
                ("stationId", "string"),
                ("stationName", "string"),
                ("stationType", "string"),
                ("state", "string"),
                ("waterBodyName", "string"),
                ("parameterId", "string"),
                ("name", "string"),
                ("observedProperty", "string"),
                ("unit", "string"),
                ("interval", "string"),
            ],
        }
    }

    /// The collection's features in the catalog's order, before any filter. `latest` holds
    /// the newest value of each series, in the order of the catalog's series (None where a
    /// series has none).
    pub fn candidates<'a>(
        self,
        stations: &'a [Station],
        parameters: impl Fn(&Station) -> &'a [Parameter],
        latest: &'a [Option<Latest>],
    ) -> Vec<Candidate<'a>> {
        match self {
            Self::Stations => stations
                .iter()
                .map(|station| Candidate {
                    station,
                    parameter: None,
                    latest: None,
                })
                .collect(),
            Self::Series | Self::Latest => {
                let series = stations
                    .iter()
                    .flat_map(|station| parameters(station).iter().map(move |p| (station, p)));
                let mut out = Vec::new();
                for (i, (station, parameter)) in series.enumerate() {
                    let newest = latest.get(i).and_then(Option::as_ref);
                    if self == Self::Latest && newest.is_none() {
                        continue;
                    }
                    out.push(Candidate {
                        station,
                        parameter: Some(parameter),
                        latest: newest,
                    });
                }
                out
            }
        }
    }

    /// The collection's metadata: links, extent and the number of its features.
    pub fn describe(self, ctx: &Ctx<'_>, base: &str) -> Result<Value, ApiError> {
        let catalog = &ctx.version.dataset.catalog;
        let stations = catalog.stations();
        let url = format!("{base}/collections/{}", self.id());
        let (mut bbox, mut period) = (None::<[f64; 4]>, None::<(Micros, Micros)>);
        let mut count = 0usize;
        for station in stations {
            let parameters = catalog.parameters(&station.id);
            let features = match self {
                Self::Stations => 1,
                Self::Series => parameters.len(),
                Self::Latest => parameters
                    .iter()
                    .filter(|p| !p.availability.is_empty())
                    .count(),
            };
            if features == 0 {
                continue;
            }
            count += features;
            let (lon, lat) = (station.coordinates.lon, station.coordinates.lat);
            bbox = Some(match bbox {
                None => [lon, lat, lon, lat],
                Some([a, b, c, d]) => [a.min(lon), b.min(lat), c.max(lon), d.max(lat)],
            });
            for p in parameters {
                if let Some((start, end)) = availability(p) {
                    period = Some(match period {
                        None => (start, end),
                        Some((s, e)) => (s.min(start), e.max(end)),
                    });
                }
            }
        }
        let mut tf = utc();
        let interval = period.map_or(json!([[null, null]]), |(s, e)| {
            json!([[tf.format(s), tf.format(e)]])
        });
        Ok(json!({
            "id": self.id(),
            "title": self.title(),
            "description": self.description(),
            "itemType": "feature",
            "crs": Crs::offered(),
            "storageCrs": CRS84,
            "extent": {
                "spatial": { "bbox": [bbox.unwrap_or([-180.0, -90.0, 180.0, 90.0])], "crs": CRS84 },
                "temporal": { "interval": interval, "trs": "http://www.opengis.net/def/uom/ISO-8601/0/Gregorian" },
            },
            "numberOfFeatures": count,
            "links": [
                link(&url, "self", JSON, "this collection"),
                link(&format!("{url}/items"), "items", GEOJSON, "its features"),
                link(&format!("{url}/queryables"), "http://www.opengis.net/def/rel/ogc/1.0/queryables", "application/schema+json", "the properties items filters on"),
            ],
        }))
    }

    /// The properties `items` filters on, as a JSON Schema (OGC API – Features, Part 3).
    pub fn queryables(self, base: &str) -> Value {
        let mut properties = Map::new();
        for (name, kind) in self.queryable() {
            properties.insert((*name).into(), json!({ "title": name, "type": kind }));
        }
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": format!("{base}/collections/{}/queryables", self.id()),
            "type": "object",
            "title": self.title(),
            "properties": properties,
        })
    }

    /// The feature id of a candidate: the station's id, or `{stationId}~{parameterId}`.
    pub fn feature_id(self, c: &Candidate<'_>) -> String {
        match c.parameter {
            None => c.station.id.to_string(),
            Some(p) => format!("{}{SERIES_SEPARATOR}{}", c.station.id, p.id),
        }
    }

    /// The station and parameter ids a feature id names.
    pub fn split_id(self, id: &str) -> (&str, Option<&str>) {
        match (self, id.split_once(SERIES_SEPARATOR)) {
            (Self::Stations, _) | (_, None) => (id, None),
            (_, Some((station, parameter))) => (station, Some(parameter)),
        }
    }

    /// A candidate's properties, as its feature carries them.
    pub fn properties(self, c: &Candidate<'_>, tf: &mut TimeFormatter) -> Map<String, Value> {
        let station = c.station;
        let Some(p) = c.parameter else {
            let mut doc = match serde_json::to_value(StationDoc::new(station, None)) {
                Ok(Value::Object(map)) => map,
                _ => Map::new(),
            };
            // The point is the geometry.
            doc.remove("coordinates");
            return doc;
        };
        let mut props = Map::new();
        let mut put = |k: &str, v: Value| {
            props.insert(k.into(), v);
        };
        put("stationId", json!(station.id.as_str()));
        put("stationName", json!(station.name));
        put("stationType", json!(station.kind.as_str()));
        put("state", json!(&*station.state));
        put("waterBodyName", json!(&*station.water_body_name));
        put("parameterId", json!(p.id.as_str()));
        put("name", json!(&*p.name));
        put("observedProperty", json!(&*p.observed_property));
        put("unit", json!(&*p.unit));
        put("interval", json!(&*p.interval));
        match availability(p) {
            Some((start, end)) => {
                put("periodStart", json!(tf.format(start)));
                put("periodEnd", json!(tf.format(end)));
            }
            None => {
                put("periodStart", Value::Null);
                put("periodEnd", Value::Null);
            }
        }
        if let Some(latest) = c.latest {
            put("timestamp", json!(tf.format(latest.timestamp)));
            put("value", json!(latest.value));
            put("quality", json!(&*latest.quality));
        }
        props
    }

    /// The time a candidate covers, for `datetime`: a station's and a series' period with
    /// data, a latest value's instant.
    pub fn period(self, c: &Candidate<'_>, parameters: &[Parameter]) -> Option<(Micros, Micros)> {
        match (self, c.parameter, c.latest) {
            (Self::Latest, _, Some(l)) => Some((l.timestamp, l.timestamp)),
            (_, Some(p), _) => availability(p),
            (_, None, _) => parameters
                .iter()
                .filter_map(availability)
                .reduce(|(s, e), (s2, e2)| (s.min(s2), e.max(e2))),
        }
    }

    /// A candidate as a GeoJSON feature, with its links.
    pub fn feature(
        self,
        c: &Candidate<'_>,
        base: &str,
        ctx: &Ctx<'_>,
        projection: &Projection,
        tf: &mut TimeFormatter,
    ) -> Value {
        let id = self.feature_id(c);
        let station = c.station;
        let own = format!("{base}/collections/{}/items/{id}", self.id());
        let mut links = vec![link(&own, "self", GEOJSON, "this feature")];
        match c.parameter {
            None => links.push(link(
                &ctx.url(&format!("/stations/{}", station.id)),
                "alternate",
                JSON,
                "the station in the Hydro API",
            )),
            Some(p) => links.push(link(
                &ctx.url(&format!(
                    "/stations/{}/parameters/{}/values",
                    station.id, p.id
                )),
                "alternate",
                JSON,
                "the series' values in the Hydro API",
            )),
        }
        json!({
            "type": "Feature",
            "id": id,
            "geometry": projection
                .position(station.coordinates.lon, station.coordinates.lat)
                .map(|position| json!({ "type": "Point", "coordinates": position })),
            "properties": self.properties(c, tf),
            "links": links,
        })
    }
}

/// The period a parameter has data in: from the start of its first period to the end of its
/// last.
fn availability(p: &Parameter) -> Option<(Micros, Micros)> {
    Some((p.availability.first()?.start, p.availability.last()?.end))
}

/// Times as RFC 3339 in UTC.
pub fn utc() -> TimeFormatter {
    TimeFormatter::zoned(hydro_engine::Zone::UTC)
}
