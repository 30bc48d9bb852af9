//! Where the German states lie: each state's extent (the bounding box of its territory,
//! islands included, widened by about 10 km on every side), for telling a station whose
//! coordinates cannot be in its state, and whether they would be with latitude and longitude
//! swapped (Bonn written as 7.1, 50.7 lies in the Indian Ocean). The boxes are coarse on
//! purpose: they catch a swap or a wrong zone, never a station near a border.

use super::Coordinates;

/// A state's extent in degrees: south, north, west, east.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Extent {
    pub min_lat: f64,
    pub max_lat: f64,
    pub min_lon: f64,
    pub max_lon: f64,
}

impl Extent {
    pub(crate) fn contains(&self, c: Coordinates) -> bool {
        (self.min_lat..=self.max_lat).contains(&c.lat)
            && (self.min_lon..=self.max_lon).contains(&c.lon)
    }
}

/// Each state's extent, by ISO 3166-2 code.
const EXTENTS: [(&str, [f64; 4]); 16] = [
    ("DE-BW", [47.4, 49.9, 7.4, 10.6]),
    ("DE-BY", [47.2, 50.7, 8.9, 13.9]),
    ("DE-BE", [52.2, 52.8, 13.0, 13.9]),
    ("DE-BB", [51.2, 53.7, 11.1, 14.9]),
    ("DE-HB", [52.9, 53.7, 8.4, 9.1]),
    ("DE-HH", [53.3, 54.1, 8.3, 10.4]),
    ("DE-HE", [49.3, 51.8, 7.6, 10.4]),
    ("DE-MV", [53.0, 54.8, 10.5, 14.5]),
    ("DE-NI", [51.2, 54.0, 6.5, 11.7]),
    ("DE-NW", [50.2, 52.6, 5.8, 9.6]),
    ("DE-RP", [48.9, 51.0, 6.0, 8.6]),
    ("DE-SL", [49.0, 49.7, 6.3, 7.5]),
    ("DE-SN", [50.1, 51.8, 11.8, 15.1]),
    ("DE-ST", [50.8, 53.1, 10.5, 13.3]),
    ("DE-SH", [53.3, 55.1, 7.8, 11.4]),
    ("DE-TH", [50.1, 51.7, 9.8, 12.7]),
];

/// The extent of the state `code` (`DE-NW`), if it is a German state.
pub(crate) fn extent(code: &str) -> Option<Extent> {
    EXTENTS
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, [min_lat, max_lat, min_lon, max_lon])| Extent {
            min_lat: *min_lat,
            max_lat: *max_lat,
            min_lon: *min_lon,
            max_lon: *max_lon,
        })
}

/// What is wrong with `at` for a station in `state`, if it lies outside the state's extent:
/// the likely swap of latitude and longitude when the swapped point lies inside.
pub(crate) fn implausible(state: &str, at: Coordinates) -> Option<String> {
    let extent = extent(state)?;
    if extent.contains(at) {
        return None;
    }
    let swapped = Coordinates {
        lat: at.lon,
        lon: at.lat,
    };
    Some(if extent.contains(swapped) {
        format!(
            "lat {}, lon {} lie outside {state}; swapped (lat {}, lon {}) they lie inside: \
             are lat and lon the wrong way round?",
            at.lat, at.lon, swapped.lat, swapped.lon
        )
    } else {
        format!(
            "lat {}, lon {} lie outside {state} (lat {} to {}, lon {} to {})",
            at.lat, at.lon, extent.min_lat, extent.max_lat, extent.min_lon, extent.max_lon
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(lat: f64, lon: f64) -> Coordinates {
        Coordinates { lat, lon }
    }

    #[test]
    fn capitals_lie_in_their_states_and_swaps_are_told() {
        for (state, lat, lon) in [
            ("DE-NW", 51.2277, 6.7735),  // Düsseldorf
            ("DE-BY", 48.1351, 11.5820), // München
            ("DE-BE", 52.5200, 13.4050),
            ("DE-HH", 53.5511, 9.9937),
            ("DE-SH", 54.3233, 10.1228), // Kiel
            ("DE-SH", 54.1823, 7.8859),  // Helgoland
            ("DE-NI", 52.3759, 9.7320),  // Hannover
            ("DE-NI", 53.7246, 7.3500),  // Norderney
            ("DE-SN", 51.0504, 13.7373), // Dresden
            ("DE-SN", 51.1533, 14.9870), // Görlitz
            ("DE-MV", 54.5736, 13.4114), // Rügen
            ("DE-BW", 47.6600, 9.1750),  // Konstanz
            ("DE-RP", 49.9929, 8.2473),  // Mainz
            ("DE-SL", 49.2402, 6.9969),  // Saarbrücken
            ("DE-TH", 50.9848, 11.0299), // Erfurt
            ("DE-ST", 52.1205, 11.6276), // Magdeburg
            ("DE-BB", 52.3906, 13.0645), // Potsdam
            ("DE-HB", 53.0793, 8.8017),
            ("DE-HB", 53.5396, 8.5809), // Bremerhaven
            ("DE-HE", 50.0782, 8.2398), // Wiesbaden
        ] {
            assert_eq!(
                implausible(state, at(lat, lon)),
                None,
                "{state} {lat},{lon}"
            );
        }
        let bonn = implausible("DE-NW", at(7.0982, 50.7374)).unwrap();
        assert!(bonn.contains("wrong way round"), "{bonn}");
        let munich_in_nw = implausible("DE-NW", at(48.1351, 11.5820)).unwrap();
        assert!(
            munich_in_nw.contains("outside DE-NW (lat 50.2 to 52.6"),
            "{munich_in_nw}"
        );
        assert_eq!(
            implausible("DE-XX", at(0.0, 0.0)),
            None,
            "unknown states are not checked"
        );
    }
}
