//! Coordinate systems (OGC API – Features, Part 2): features in CRS84 (longitude, latitude:
//! the default), EPSG:4326 (latitude first, as its definition says) or ETRS89 / UTM 32N and
//! 33N (EPSG:25832, 25833: the German states' own grid, easting and northing in metres), by
//! `crs`; a `bbox` in any of them, by `bbox-crs`.

use crate::api::params::shorten;
use crate::http::error::ApiError;
use hydro_engine::{UTM_EPSG, Utm};

/// CRS84: longitude, latitude in WGS 84, what the catalog holds.
pub const CRS84: &str = "http://www.opengis.net/def/crs/OGC/1.3/CRS84";
const EPSG: &str = "http://www.opengis.net/def/crs/EPSG/0/";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crs {
    Crs84,
    /// WGS 84, latitude first.
    Epsg4326,
    /// ETRS89 / UTM, by EPSG code.
    Utm(u16),
}

impl Crs {
    /// Every coordinate system offered, CRS84 first.
    pub fn offered() -> Vec<String> {
        let mut all = vec![CRS84.to_owned(), format!("{EPSG}4326")];
        all.extend(UTM_EPSG.iter().map(|c| format!("{EPSG}{c}")));
        all
    }

    /// The coordinate system `parameter` names by its URI (with or without the brackets of a
    /// safe CURIE), or CRS84 when it is not given.
    pub fn parse(parameter: &str, given: Option<&str>) -> Result<Self, ApiError> {
        let Some(given) = given else {
            return Ok(Self::Crs84);
        };
        let uri = given.trim_start_matches('[').trim_end_matches(']');
        if uri == CRS84 {
            return Ok(Self::Crs84);
        }
        let code = uri.strip_prefix(EPSG).and_then(|c| c.parse::<u16>().ok());
        match code {
            Some(4326) => Ok(Self::Epsg4326),
            Some(c) if UTM_EPSG.contains(&c) => Ok(Self::Utm(c)),
            _ => Err(ApiError::param(
                parameter,
                format!(
                    "'{}' is not offered; give one of {}",
                    shorten(given),
                    Self::offered().join(", ")
                ),
            )),
        }
    }

    pub fn uri(self) -> String {
        match self {
            Self::Crs84 => CRS84.to_owned(),
            Self::Epsg4326 => format!("{EPSG}4326"),
            Self::Utm(code) => format!("{EPSG}{code}"),
        }
    }

    /// Turns WGS 84 longitudes and latitudes into this system's coordinates, in its axis
    /// order.
    pub fn projection(self) -> Result<Projection, ApiError> {
        Ok(match self {
            Self::Crs84 => Projection::LonLat,
            Self::Epsg4326 => Projection::LatLon,
            Self::Utm(code) => {
                Projection::Utm(Box::new(Utm::of(code).map_err(ApiError::Internal)?))
            }
        })
    }
}

/// A [`Crs`] made ready to project many points.
pub enum Projection {
    LonLat,
    LatLon,
    Utm(Box<Utm>),
}

impl Projection {
    /// The position of a WGS 84 point, in the system's axis order; None where it cannot be
    /// projected.
    pub fn position(&self, lon: f64, lat: f64) -> Option<[f64; 2]> {
        match self {
            Self::LonLat => Some([lon, lat]),
            Self::LatLon => Some([lat, lon]),
            Self::Utm(utm) => utm.forward(lon, lat).ok().map(|(e, n)| [e, n]),
        }
    }
}
