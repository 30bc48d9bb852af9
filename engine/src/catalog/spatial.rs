//! Spatial search over station coordinates.
//!
//! An R-tree in degrees finds candidates; the exact answer then comes from the great-circle
//! (haversine) distance in km on a sphere of the mean Earth radius, so results equal a
//! brute-force scan. Both `bbox` and `near` handle the antimeridian.

use geo::{Distance, Haversine, Point};
use rstar::primitives::GeomWithData;
use rstar::{AABB, Envelope, RTree};

type Entry = GeomWithData<[f64; 2], usize>;

/// Mean Earth radius used by `geo`'s haversine (metres).
const EARTH_RADIUS_KM: f64 = 6_371.008_8;

/// A lon/lat rectangle; `min_lon > max_lon` means it crosses the antimeridian.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BBox {
    pub min_lon: f64,
    pub min_lat: f64,
    pub max_lon: f64,
    pub max_lat: f64,
}

impl BBox {
    pub fn contains(&self, lon: f64, lat: f64) -> bool {
        let lon_ok = if self.min_lon <= self.max_lon {
            (self.min_lon..=self.max_lon).contains(&lon)
        } else {
            lon >= self.min_lon || lon <= self.max_lon
        };
        lon_ok && (self.min_lat..=self.max_lat).contains(&lat)
    }

    /// Whether the two share a point (borders included).
    pub fn intersects(&self, other: &BBox) -> bool {
        let theirs = other.envelopes();
        self.envelopes()
            .iter()
            .any(|a| theirs.iter().any(|b| a.intersects(b)))
    }

    /// The smallest box holding `points` (lon, lat), widened by `km` on every side (a degree
    /// of latitude is 111.2 km; one of longitude shrinks with the cosine of the box's
    /// farthest latitude); `None` without points. Never crosses the antimeridian: a box of
    /// stations on both sides of it is as wide as the globe, which only makes it lenient.
    pub fn around(points: impl IntoIterator<Item = (f64, f64)>, km: f64) -> Option<BBox> {
        let mut points = points.into_iter();
        let (lon, lat) = points.next()?;
        let tight = points.fold(
            BBox {
                min_lon: lon,
                min_lat: lat,
                max_lon: lon,
                max_lat: lat,
            },
            |b, (lon, lat)| BBox {
                min_lon: b.min_lon.min(lon),
                min_lat: b.min_lat.min(lat),
                max_lon: b.max_lon.max(lon),
                max_lat: b.max_lat.max(lat),
            },
        );
        let dlat = (km / EARTH_RADIUS_KM).to_degrees();
        let min_lat = (tight.min_lat - dlat).max(-90.0);
        let max_lat = (tight.max_lat + dlat).min(90.0);
        let cos = min_lat.abs().max(max_lat.abs()).to_radians().cos();
        let dlon = if cos > 1e-6 { dlat / cos } else { 360.0 };
        Some(BBox {
            min_lon: (tight.min_lon - dlon).max(-180.0),
            min_lat,
            max_lon: (tight.max_lon + dlon).min(180.0),
            max_lat,
        })
    }

    /// The same area as one or two non-wrapping envelopes.
    fn envelopes(&self) -> Vec<AABB<[f64; 2]>> {
        if self.min_lon <= self.max_lon {
            vec![AABB::from_corners(
                [self.min_lon, self.min_lat],
                [self.max_lon, self.max_lat],
            )]
        } else {
            vec![
                AABB::from_corners([self.min_lon, self.min_lat], [180.0, self.max_lat]),
                AABB::from_corners([-180.0, self.min_lat], [self.max_lon, self.max_lat]),
            ]
        }
    }
}

/// A circle: centre and radius in km.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Near {
    pub lon: f64,
    pub lat: f64,
    pub radius_km: f64,
}

impl Near {
    /// Great-circle distance from the centre in km.
    pub fn distance_km(&self, lon: f64, lat: f64) -> f64 {
        Haversine.distance(Point::new(self.lon, self.lat), Point::new(lon, lat)) / 1000.0
    }

    /// A lon/lat box that surely contains the circle.
    fn bounding_box(&self) -> BBox {
        let dlat = (self.radius_km / EARTH_RADIUS_KM).to_degrees() * 1.000_001 + 1e-9;
        let min_lat = (self.lat - dlat).max(-90.0);
        let max_lat = (self.lat + dlat).min(90.0);
        let widest = min_lat.abs().max(max_lat.abs());
        let angular = self.radius_km / EARTH_RADIUS_KM;
        if max_lat >= 90.0
            || min_lat <= -90.0
            || widest >= 89.999
            || angular >= std::f64::consts::FRAC_PI_2
        {
            return BBox {
                min_lon: -180.0,
                min_lat,
                max_lon: 180.0,
                max_lat,
            };
        }
        // The widest longitude span of a small circle, at the latitude where it is widest:
        // asin(sin(r) / cos(lat)), conservative by using the band's widest latitude.
        let ratio = angular.sin() / widest.to_radians().cos();
        if ratio >= 1.0 {
            return BBox {
                min_lon: -180.0,
                min_lat,
                max_lon: 180.0,
                max_lat,
            };
        }
        let dlon = ratio.asin().to_degrees() * 1.000_001 + 1e-9;
        let wrap = |x: f64| {
            if x > 180.0 {
                x - 360.0
            } else if x < -180.0 {
                x + 360.0
            } else {
                x
            }
        };
        if dlon >= 180.0 {
            return BBox {
                min_lon: -180.0,
                min_lat,
                max_lon: 180.0,
                max_lat,
            };
        }
        BBox {
            min_lon: wrap(self.lon - dlon),
            min_lat,
            max_lon: wrap(self.lon + dlon),
            max_lat,
        }
    }
}

/// Station positions by index into the catalog's station list.
pub struct SpatialIndex {
    tree: RTree<Entry>,
}

impl SpatialIndex {
    /// `points` are (lon, lat) by station index.
    pub fn new(points: impl IntoIterator<Item = (f64, f64)>) -> Self {
        let entries = points
            .into_iter()
            .enumerate()
            .map(|(i, (lon, lat))| GeomWithData::new([lon, lat], i))
            .collect();
        Self {
            tree: RTree::bulk_load(entries),
        }
    }

    fn candidates<'a>(&'a self, bbox: &BBox) -> impl Iterator<Item = &'a Entry> + 'a {
        bbox.envelopes()
            .into_iter()
            .flat_map(move |env| self.tree.locate_in_envelope(&env).collect::<Vec<_>>())
    }

    /// Indices inside the box (borders included), ascending.
    pub fn within_bbox(&self, bbox: &BBox) -> Vec<usize> {
        let mut hits: Vec<usize> = self.candidates(bbox).map(|e| e.data).collect();
        hits.sort_unstable();
        hits.dedup();
        hits
    }

    /// (index, distance km) within the circle (border included), nearest first, ties by index.
    pub fn within_radius(&self, near: &Near) -> Vec<(usize, f64)> {
        let mut hits: Vec<(usize, f64)> = self
            .candidates(&near.bounding_box())
            .filter_map(|e| {
                let [lon, lat] = *e.geom();
                let d = near.distance_km(lon, lat);
                (d <= near.radius_km).then_some((e.data, d))
            })
            .collect();
        hits.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        hits.dedup_by_key(|h| h.0);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng, rngs::StdRng};

    fn points(n: usize, seed: u64) -> Vec<(f64, f64)> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                (
                    rng.random_range(-180.0..=180.0),
                    rng.random_range(-90.0..=90.0),
                )
            })
            .collect()
    }

    #[test]
    fn around_widens_the_points_box_by_the_distance_and_intersects_across_the_antimeridian() {
        assert_eq!(BBox::around(std::iter::empty(), 100.0), None);
        // Köln and Dresden, widened by 100 km.
        let b = BBox::around([(6.96, 50.94), (13.74, 51.05)], 100.0).unwrap();
        let dlat = 100.0 / 111.195;
        assert!((b.min_lat - (50.94 - dlat)).abs() < 1e-3, "{b:?}");
        assert!((b.max_lat - (51.05 + dlat)).abs() < 1e-3, "{b:?}");
        // At ~52°N a degree of longitude is ~68 km: 100 km is ~1.46°.
        assert!((b.min_lon - 5.5).abs() < 0.05, "{b:?}");
        assert!(b.contains(6.0, 50.5) && !b.contains(50.94, 6.96));
        let wide = BBox::around([(0.0, 89.5)], 200.0).unwrap();
        assert_eq!(
            (wide.min_lon, wide.max_lon, wide.max_lat),
            (-180.0, 180.0, 90.0)
        );
        let wrapping = BBox {
            min_lon: 170.0,
            min_lat: -10.0,
            max_lon: -170.0,
            max_lat: 10.0,
        };
        let east = BBox {
            min_lon: -175.0,
            min_lat: 0.0,
            max_lon: -160.0,
            max_lat: 5.0,
        };
        assert!(wrapping.intersects(&east) && east.intersects(&wrapping));
        assert!(!b.intersects(&wrapping));
        assert!(b.intersects(&BBox {
            min_lon: 6.0,
            min_lat: 50.0,
            max_lon: 8.0,
            max_lat: 52.0
        }));
    }

    #[test]
    fn near_equals_brute_force_everywhere_including_poles_and_antimeridian() {
        let pts = points(20_000, 7);
        let index = SpatialIndex::new(pts.iter().copied());
        let mut rng = StdRng::seed_from_u64(8);
        let mut centres: Vec<(f64, f64)> = (0..200)
            .map(|_| {
                (
                    rng.random_range(-180.0..=180.0),
                    rng.random_range(-90.0..=90.0),
                )
            })
            .collect();
        centres.extend([
            (179.9, 0.0),
            (-179.9, 10.0),
            (0.0, 89.9),
            (10.0, -89.5),
            (180.0, 45.0),
        ]);
        for (k, (lon, lat)) in centres.into_iter().enumerate() {
            let radius_km = [1.0, 50.0, 500.0, 3000.0, 25_000.0][k % 5];
            let near = Near {
                lon,
                lat,
                radius_km,
            };
            let got = index.within_radius(&near);
            let mut want: Vec<(usize, f64)> = pts
                .iter()
                .enumerate()
                .map(|(i, &(x, y))| (i, near.distance_km(x, y)))
                .filter(|&(_, d)| d <= radius_km)
                .collect();
            want.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            assert_eq!(got, want, "near {near:?}");
        }
    }

    #[test]
    fn bbox_equals_brute_force_including_antimeridian() {
        let pts = points(20_000, 9);
        let index = SpatialIndex::new(pts.iter().copied());
        let boxes = [
            BBox {
                min_lon: 5.0,
                min_lat: 47.0,
                max_lon: 15.0,
                max_lat: 55.0,
            },
            BBox {
                min_lon: 170.0,
                min_lat: -10.0,
                max_lon: -170.0,
                max_lat: 10.0,
            },
            BBox {
                min_lon: -180.0,
                min_lat: -90.0,
                max_lon: 180.0,
                max_lat: 90.0,
            },
            BBox {
                min_lon: 0.0,
                min_lat: 0.0,
                max_lon: 0.0,
                max_lat: 0.0,
            },
        ];
        for bbox in boxes {
            let got = index.within_bbox(&bbox);
            let want: Vec<usize> = pts
                .iter()
                .enumerate()
                .filter(|(_, p)| bbox.contains(p.0, p.1))
                .map(|(i, _)| i)
                .collect();
            assert_eq!(got, want, "{bbox:?}");
        }
    }
}
