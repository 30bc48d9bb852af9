//! Gauss-Krüger (DHDN, EPSG 31466–31469) to WGS 84 with the standard's seven-parameter
//! Helmert transformation (TOWGS84 598.1, 73.7, 418.2, 0.202, 0.045, -2.455, 6.7; error
//! 0.5–1.5 m), and WGS 84 to and from ETRS89 / UTM (EPSG 25832, 25833: the German states' own
//! grid; ETRS89 is taken as WGS 84, which it is within a metre in Europe), computed by proj4rs.

use proj4rs::proj::Proj;

const TOWGS84: &str = "598.1,73.7,418.2,0.202,0.045,-2.455,6.7";

/// The EPSG codes of the Gauss-Krüger zones 2 to 5.
pub(crate) const GK_EPSG: std::ops::RangeInclusive<u16> = 31466..=31469;

/// (lat, lon) in WGS 84 degrees of a Gauss-Krüger easting/northing in metres.
pub(crate) fn gauss_krueger_to_wgs84(
    epsg: u16,
    easting: f64,
    northing: f64,
) -> Result<(f64, f64), String> {
    if !GK_EPSG.contains(&epsg) {
        return Err(format!(
            "EPSG {epsg} is not a Gauss-Krüger zone (31466–31469)"
        ));
    }
    if !easting.is_finite() || !northing.is_finite() {
        return Err("easting and northing must be numbers".into());
    }
    let zone = u32::from(epsg - 31464);
    let expected = f64::from(zone) * 1e6;
    if !(expected..expected + 1e6).contains(&easting) {
        return Err(format!(
            "easting {easting} does not belong to zone {zone} (EPSG {epsg}): expected {zone}xxxxxx m"
        ));
    }
    let from = Proj::from_proj_string(&format!(
        "+proj=tmerc +lat_0=0 +lon_0={} +k=1 +x_0={} +y_0=0 +ellps=bessel +towgs84={TOWGS84} +units=m +no_defs",
        zone * 3,
        zone * 1_000_000 + 500_000
    ))
    .map_err(|e| format!("projection: {e}"))?;
    let to = Proj::from_proj_string("+proj=longlat +datum=WGS84 +no_defs")
        .map_err(|e| format!("projection: {e}"))?;
    let mut point = (easting, northing, 0.0);
    proj4rs::transform::transform(&from, &to, &mut point)
        .map_err(|e| format!("projection: {e}"))?;
    let (lon, lat) = (point.0.to_degrees(), point.1.to_degrees());
    if !(-90.0..=90.0).contains(&lat) || !(-180.0..=180.0).contains(&lon) {
        return Err("coordinates fall outside WGS 84".into());
    }
    Ok((lat, lon))
}

/// The ETRS89 / UTM zones the German states' data is in: 32N (EPSG 25832) and 33N (25833).
pub const UTM_EPSG: [u16; 2] = [25832, 25833];

/// WGS 84 and one ETRS89 / UTM zone, both ways; made once for many points.
pub struct Utm {
    utm: Proj,
    wgs84: Proj,
}

impl Utm {
    /// The zone of EPSG code `epsg` (one of [`UTM_EPSG`]).
    pub fn of(epsg: u16) -> Result<Self, String> {
        if !UTM_EPSG.contains(&epsg) {
            return Err(format!(
                "EPSG {epsg} is not ETRS89 / UTM 32N or 33N (25832, 25833)"
            ));
        }
        let utm = Proj::from_proj_string(&format!(
            "+proj=utm +zone={} +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs",
            epsg - 25800
        ))
        .map_err(|e| format!("projection: {e}"))?;
        let wgs84 = Proj::from_proj_string("+proj=longlat +datum=WGS84 +no_defs")
            .map_err(|e| format!("projection: {e}"))?;
        Ok(Self { utm, wgs84 })
    }

    /// Easting and northing in metres of a WGS 84 longitude and latitude in degrees.
    pub fn forward(&self, lon: f64, lat: f64) -> Result<(f64, f64), String> {
        let mut point = (lon.to_radians(), lat.to_radians(), 0.0);
        proj4rs::transform::transform(&self.wgs84, &self.utm, &mut point)
            .map_err(|e| format!("projection: {e}"))?;
        Ok((point.0, point.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use geo::{Distance, Haversine, Point};

    /// The reference points of ../shared/reference, computed with PROJ.
    const REFERENCE: &str = include_str!("../../../data/reference/gauss-krueger-helmert.csv");

    #[test]
    fn matches_proj_reference_points_within_a_few_centimetres() {
        let mut checked = 0;
        for line in REFERENCE.lines().skip(1).filter(|l| !l.trim().is_empty()) {
            let f: Vec<f64> = line.split(',').map(|x| x.parse().unwrap()).collect();
            let (lat, lon) = gauss_krueger_to_wgs84(f[0] as u16, f[1], f[2]).unwrap();
            let err_m = Haversine.distance(Point::new(lon, lat), Point::new(f[4], f[3]));
            assert!(err_m < 0.1, "{line}: off by {err_m} m");
            checked += 1;
        }
        assert_eq!(checked, 24);
    }

    /// Points in UTM 32N and 33N as PROJ 9.5.1 gives them (pyproj 3.7.2,
    /// `Transformer.from_crs("EPSG:4326", "EPSG:2583x", always_xy=True)`).
    #[test]
    fn utm_matches_proj() {
        let cases = [
            (25832, 6.963, 50.937, 356_877.226, 5_644_794.897),
            (25833, 13.4, 52.5, 391_390.731, 5_817_855.241),
        ];
        for (epsg, lon, lat, e, n) in cases {
            let (x, y) = Utm::of(epsg).unwrap().forward(lon, lat).unwrap();
            assert!(
                (x - e).abs() < 0.01 && (y - n).abs() < 0.01,
                "{epsg}: {x} {y}"
            );
        }
        assert!(Utm::of(25831).is_err());
    }

    #[test]
    fn rejects_wrong_zone_and_codes() {
        assert!(gauss_krueger_to_wgs84(31461, 2_500_000.0, 5_500_000.0).is_err());
        assert!(gauss_krueger_to_wgs84(31467, 2_500_000.0, 5_500_000.0).is_err());
        assert!(gauss_krueger_to_wgs84(31467, f64::NAN, 5_500_000.0).is_err());
    }
}
