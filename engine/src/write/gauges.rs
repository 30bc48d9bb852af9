//! Real German gauges (public facts: names, water bodies, states, approximate positions) that
//! give the synthetic archive its first stations. Water body ids are the official
//! "Gewässerkennzahl" of the river.

/// (name, water body, water body id, state code, lat, lon, operator)
pub(crate) const GAUGES: &[(&str, &str, &str, &str, f64, f64, &str)] = &[
    ("Köln", "Rhein", "2", "NW", 50.9367, 6.9631, "WSV"),
    ("Kaub", "Rhein", "2", "RP", 50.0853, 7.7650, "WSV"),
    ("Maxau", "Rhein", "2", "BW", 49.0392, 8.3056, "WSV"),
    ("Bonn", "Rhein", "2", "NW", 50.7369, 7.1069, "WSV"),
    ("Düsseldorf", "Rhein", "2", "NW", 51.2264, 6.7706, "WSV"),
    (
        "Duisburg-Ruhrort",
        "Rhein",
        "2",
        "NW",
        51.4550,
        6.7278,
        "WSV",
    ),
    ("Emmerich", "Rhein", "2", "NW", 51.8297, 6.2453, "WSV"),
    ("Mainz", "Rhein", "2", "RP", 50.0044, 8.2750, "WSV"),
    ("Worms", "Rhein", "2", "RP", 49.6342, 8.3736, "WSV"),
    ("Trier", "Mosel", "26", "RP", 49.7564, 6.6278, "WSV"),
    ("Cochem", "Mosel", "26", "RP", 50.1447, 7.1667, "WSV"),
    ("Dresden", "Elbe", "5", "SN", 51.0546, 13.7384, "WSV"),
    (
        "Magdeburg-Strombrücke",
        "Elbe",
        "5",
        "ST",
        52.1300,
        11.6440,
        "WSV",
    ),
    ("Wittenberge", "Elbe", "5", "BB", 53.0000, 11.7500, "WSV"),
    ("Neu Darchau", "Elbe", "5", "NI", 53.2300, 10.8900, "WSV"),
    (
        "Hamburg St. Pauli",
        "Elbe",
        "5",
        "HH",
        53.5458,
        9.9703,
        "WSV",
    ),
    ("Passau", "Donau", "1", "BY", 48.5750, 13.4650, "WSV"),
    ("Regensburg", "Donau", "1", "BY", 49.0200, 12.1000, "WSV"),
    (
        "Ingolstadt",
        "Donau",
        "1",
        "BY",
        48.7570,
        11.4250,
        "LfU Bayern",
    ),
    ("Hofkirchen", "Donau", "1", "BY", 48.6770, 13.1150, "WSV"),
    (
        "Frankfurt Osthafen",
        "Main",
        "24",
        "HE",
        50.1050,
        8.7200,
        "WSV",
    ),
    ("Würzburg", "Main", "24", "BY", 49.7960, 9.9260, "WSV"),
    ("Hann. Münden", "Weser", "4", "NI", 51.4200, 9.6500, "WSV"),
    ("Vlotho", "Weser", "4", "NW", 52.1760, 8.8600, "WSV"),
    ("Intschede", "Weser", "4", "NI", 52.9640, 9.1260, "WSV"),
    (
        "Frankfurt (Oder)",
        "Oder",
        "6",
        "BB",
        52.3520,
        14.5560,
        "WSV",
    ),
    (
        "Hohensaaten-Finow",
        "Oder",
        "6",
        "BB",
        52.8640,
        14.1400,
        "WSV",
    ),
    ("Plochingen", "Neckar", "238", "BW", 48.7120, 9.4180, "LUBW"),
    ("Lauffen", "Neckar", "238", "BW", 49.0700, 9.1500, "WSV"),
    ("Heidelberg", "Neckar", "238", "BW", 49.4130, 8.6900, "WSV"),
    (
        "Hattingen",
        "Ruhr",
        "276",
        "NW",
        51.4000,
        7.1800,
        "LANUV NRW",
    ),
    ("Greven", "Ems", "3", "NW", 52.0900, 7.6100, "WSV"),
    ("Versen", "Ems", "3", "NI", 52.7300, 7.2400, "WSV"),
    ("Halle-Trotha", "Saale", "56", "ST", 51.5100, 11.9600, "WSV"),
    (
        "Calbe-Grizehne",
        "Saale",
        "56",
        "ST",
        51.9000,
        11.7800,
        "WSV",
    ),
    (
        "Bad Düben",
        "Mulde",
        "54",
        "SN",
        51.5900,
        12.5900,
        "LfULG Sachsen",
    ),
    ("Rathenow", "Havel", "58", "BB", 52.6000, 12.3400, "WSV"),
    (
        "Cottbus Sandower Brücke",
        "Spree",
        "582",
        "BB",
        51.7600,
        14.3400,
        "LfU Brandenburg",
    ),
    (
        "München",
        "Isar",
        "16",
        "BY",
        48.1200,
        11.5800,
        "LfU Bayern",
    ),
    (
        "Plattling",
        "Isar",
        "16",
        "BY",
        48.7750,
        12.8700,
        "LfU Bayern",
    ),
    (
        "Wasserburg",
        "Inn",
        "18",
        "BY",
        48.0600,
        12.2300,
        "LfU Bayern",
    ),
    ("Kalkofen", "Lahn", "258", "RP", 50.3240, 7.8470, "WSV"),
    (
        "Bad Hersfeld",
        "Fulda",
        "42",
        "HE",
        50.8700,
        9.7100,
        "HLNUG",
    ),
    ("Rethem", "Aller", "48", "NI", 52.7900, 9.3800, "WSV"),
    (
        "Schermbeck",
        "Lippe",
        "278",
        "NW",
        51.6900,
        6.8700,
        "LANUV NRW",
    ),
    ("Menden", "Sieg", "272", "NW", 50.7700, 7.1900, "LANUV NRW"),
];

/// Syllables for plausible place names beyond the real list.
pub(crate) const NAME_PARTS: (&[&str], &[&str]) = (
    &[
        "Alt", "Neu", "Ober", "Nieder", "Groß", "Klein", "Bad ", "Hohen", "Linden", "Eichen",
        "Buchen", "Weiden", "Birken", "Mühl", "Stein", "Wald", "Berg", "Tal", "Rosen", "Hirsch",
    ],
    &[
        "bach", "berg", "dorf", "feld", "hausen", "heim", "hof", "ingen", "rode", "stadt", "stedt",
        "thal", "au", "brück", "furt", "wede", "wick", "mühle", "bruch", "hagen",
    ],
);

/// States with their operators, for stations beyond the real list.
pub(crate) const STATES: &[(&str, &str)] = &[
    ("BW", "LUBW"),
    ("BY", "LfU Bayern"),
    ("BB", "LfU Brandenburg"),
    ("HE", "HLNUG"),
    ("MV", "LUNG MV"),
    ("NI", "NLWKN"),
    ("NW", "LANUV NRW"),
    ("RP", "LfU Rheinland-Pfalz"),
    ("SL", "LUA Saarland"),
    ("SN", "LfULG Sachsen"),
    ("ST", "LHW Sachsen-Anhalt"),
    ("SH", "LKN.SH"),
    ("TH", "TLUBN"),
];

/// A real gauge's river kilometre and gauge zero (m above DHHN2016), approximately as the
/// waterway and state agencies publish them. Kilometres are counted as each river's official
/// kilometrage counts them: downstream on the Rhine (from Konstanz), the Elbe (from the Czech
/// border), the Weser (from Hann. Münden) and the Oder; upstream from the mouth on the Danube
/// (from the Black Sea) and the tributaries (Main, Mosel, Neckar, Saale, ...). Gauge zero falls
/// downstream along every river.
pub(crate) fn gauge_position(name: &str) -> Option<(f64, f64)> {
    Some(match name {
        "Maxau" => (362.3, 97.69),
        "Worms" => (443.4, 84.59),
        "Mainz" => (498.5, 78.31),
        "Kaub" => (546.3, 67.66),
        "Bonn" => (654.8, 42.14),
        "Köln" => (688.0, 34.97),
        "Düsseldorf" => (744.2, 24.48),
        "Duisburg-Ruhrort" => (780.8, 16.13),
        "Emmerich" => (851.9, 9.50),
        "Trier" => (195.8, 124.14),
        "Cochem" => (51.5, 77.42),
        "Dresden" => (55.6, 102.73),
        "Magdeburg-Strombrücke" => (326.6, 40.99),
        "Wittenberge" => (453.9, 19.99),
        "Neu Darchau" => (536.4, 5.33),
        "Hamburg St. Pauli" => (623.1, -5.00),
        "Ingolstadt" => (2458.3, 362.02),
        "Regensburg" => (2379.7, 323.80),
        "Hofkirchen" => (2256.9, 299.27),
        "Passau" => (2225.3, 287.70),
        "Würzburg" => (252.0, 163.00),
        "Frankfurt Osthafen" => (35.9, 89.90),
        "Hann. Münden" => (0.8, 116.00),
        "Vlotho" => (201.4, 41.90),
        "Intschede" => (331.4, 4.90),
        "Frankfurt (Oder)" => (584.0, 18.70),
        "Hohensaaten-Finow" => (664.9, 0.10),
        "Plochingen" => (200.0, 246.00),
        "Lauffen" => (125.0, 162.00),
        "Heidelberg" => (26.1, 102.00),
        "Hattingen" => (56.0, 67.50),
        "Greven" => (127.0, 40.40),
        "Versen" => (45.0, 9.30),
        "Halle-Trotha" => (89.0, 71.00),
        "Calbe-Grizehne" => (17.6, 49.00),
        "Bad Düben" => (68.0, 82.00),
        "Rathenow" => (102.0, 24.00),
        "Cottbus Sandower Brücke" => (276.0, 63.00),
        "München" => (146.0, 508.00),
        "Plattling" => (9.1, 311.00),
        "Wasserburg" => (160.0, 407.00),
        "Kalkofen" => (70.0, 94.00),
        "Bad Hersfeld" => (110.0, 200.00),
        "Rethem" => (38.0, 14.00),
        "Schermbeck" => (53.0, 28.00),
        "Menden" => (11.0, 50.00),
        _ => return None,
    })
}

/// A real gauge's mean water level (MW, cm on the gauge) and mean discharge (MQ, m³/s),
/// rounded, as the federal and state agencies publish them as "gewässerkundliche Hauptwerte"
/// (the BfG's Undine pages and the Deutsches Gewässerkundliches Jahrbuch; e.g. Köln MQ 2 080
/// m³/s, MW 321 cm; Kaub MQ 1 640; Hofkirchen MQ 637). The demo's series are drawn around them
/// (the generator's `Synth`), so its MW and MQ characteristic values read as a hydrologist
/// expects, not as random numbers. Hamburg St. Pauli is tidal: its MW is the mean tide level,
/// its MQ the Elbe's from upstream.
pub fn gauge_means(name: &str) -> Option<Means> {
    let (water_level_cm, discharge) = match name {
        "Maxau" => (490.0, 1260.0),
        "Worms" => (240.0, 1410.0),
        "Mainz" => (320.0, 1620.0),
        "Kaub" => (235.0, 1640.0),
        "Bonn" => (330.0, 2000.0),
        "Köln" => (321.0, 2080.0),
        "Düsseldorf" => (300.0, 2100.0),
        "Duisburg-Ruhrort" => (430.0, 2150.0),
        "Emmerich" => (190.0, 2300.0),
        "Trier" => (280.0, 290.0),
        "Cochem" => (250.0, 315.0),
        "Dresden" => (190.0, 330.0),
        "Magdeburg-Strombrücke" => (200.0, 560.0),
        "Wittenberge" => (290.0, 690.0),
        "Neu Darchau" => (300.0, 710.0),
        "Hamburg St. Pauli" => (520.0, 720.0),
        "Ingolstadt" => (260.0, 310.0),
        "Regensburg" => (310.0, 440.0),
        "Hofkirchen" => (340.0, 637.0),
        "Passau" => (470.0, 680.0),
        "Würzburg" => (170.0, 115.0),
        "Frankfurt Osthafen" => (180.0, 195.0),
        "Hann. Münden" => (170.0, 110.0),
        "Vlotho" => (290.0, 185.0),
        "Intschede" => (410.0, 325.0),
        "Frankfurt (Oder)" => (280.0, 530.0),
        "Hohensaaten-Finow" => (400.0, 530.0),
        "Plochingen" => (130.0, 47.0),
        "Lauffen" => (240.0, 90.0),
        "Heidelberg" => (240.0, 145.0),
        "Hattingen" => (190.0, 70.0),
        "Greven" => (120.0, 33.0),
        "Versen" => (230.0, 80.0),
        "Halle-Trotha" => (260.0, 100.0),
        "Calbe-Grizehne" => (230.0, 115.0),
        "Bad Düben" => (150.0, 62.0),
        "Rathenow" => (200.0, 80.0),
        "Cottbus Sandower Brücke" => (110.0, 12.0),
        "München" => (110.0, 64.0),
        "Plattling" => (200.0, 175.0),
        "Wasserburg" => (250.0, 355.0),
        "Kalkofen" => (170.0, 46.0),
        "Bad Hersfeld" => (100.0, 20.0),
        "Rethem" => (300.0, 115.0),
        "Schermbeck" => (150.0, 40.0),
        "Menden" => (150.0, 52.0),
        _ => return None,
    };
    Some(Means {
        water_level_cm,
        discharge,
    })
}

/// The long-term means of a gauge's series: MW (cm on the gauge) and MQ (m³/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Means {
    pub water_level_cm: f64,
    pub discharge: f64,
}

/// The means a gauge on `water_body_id` at `river_km` would have: a real gauge's own, or, for
/// one between two real gauges of that river, each mean a share of the way from the upstream
/// gauge's to the downstream one's (as their river kilometres are apart). `None` off a river
/// with real gauges around the kilometre.
pub fn means_along_river(name: &str, water_body_id: &str, river_km: f64) -> Option<Means> {
    if let Some(own) = gauge_means(name) {
        return Some(own);
    }
    let mut known: Vec<(f64, Means)> = GAUGES
        .iter()
        .filter(|g| g.2 == water_body_id)
        .filter_map(|g| Some((gauge_position(g.0)?.0, gauge_means(g.0)?)))
        .collect();
    known.sort_by(|a, b| a.0.total_cmp(&b.0));
    let pair = known
        .windows(2)
        .find(|w| (w[0].0..=w[1].0).contains(&river_km))?;
    let (a, b) = (pair[0], pair[1]);
    let share = if b.0 > a.0 {
        (river_km - a.0) / (b.0 - a.0)
    } else {
        0.0
    };
    let lerp = |x: f64, y: f64| x + share * (y - x);
    Some(Means {
        water_level_cm: lerp(a.1.water_level_cm, b.1.water_level_cm),
        discharge: lerp(a.1.discharge, b.1.discharge),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_real_gauge_has_means_and_made_up_ones_lie_between_neighbours() {
        for g in GAUGES {
            assert!(gauge_means(g.0).is_some(), "{}", g.0);
        }
        // Halfway between Bonn (654.8) and Köln (688.0) on the Rhine.
        let between = means_along_river("Neudorf 47", "2", 671.4).unwrap();
        assert!((between.discharge - 2040.0).abs() < 1.0, "{between:?}");
        assert!((between.water_level_cm - 325.5).abs() < 0.5, "{between:?}");
        assert_eq!(means_along_river("Neudorf 47", "2", 10.0), None);
        assert_eq!(means_along_river("Neudorf 47", "999", 671.4), None);
    }
}
