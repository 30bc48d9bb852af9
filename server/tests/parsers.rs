//! Property tests: every parser of request input takes any string without panicking, and
//! what it accepts is well-formed.

use hydro_server::api::params::{self, RawQuery};
use hydro_server::render::format::{FORMATS, choose};
use hydro_server::render::resources::{STATION_FIELDS, STATION_SORT, canon_station_path};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn query_strings(s in ".{0,200}") {
        let _ = RawQuery::parse(Some(&s));
    }

    #[test]
    fn numbers_and_times(s in ".{0,60}") {
        if let Ok(n) = params::uint("limit", &s) {
            prop_assert!(s.bytes().all(|b| b.is_ascii_digit()));
            prop_assert_eq!(Some(n), s.parse::<u64>().ok());
        }
        let _ = params::timestamp("from", &s);
        let _ = params::duration("last", &s);
    }

    #[test]
    fn durations_round_trip(d in 0u32..400, h in 0u32..100, m in 0u32..1000) {
        let text = format!("P{d}DT{h}H{m}M");
        let parsed = params::duration("last", &text);
        if d + h + m == 0 {
            prop_assert!(parsed.is_err());
        } else {
            let p = parsed.unwrap();
            prop_assert_eq!(p.micros, ((d as i64 * 24 + h as i64) * 60 + m as i64) * 60_000_000);
        }
    }

    #[test]
    fn places(s in "[-0-9.,eE+NaInf ]{0,60}") {
        if let Ok(b) = params::bbox(&s) {
            prop_assert!(b.min_lat <= b.max_lat && (-90.0..=90.0).contains(&b.min_lat) && (-180.0..=180.0).contains(&b.max_lon));
        }
        if let Ok(n) = params::near(&s) {
            prop_assert!(n.radius_km > 0.0 && n.radius_km.is_finite());
        }
    }

    #[test]
    fn lists(s in "[-a-zA-Z.,+ ]{0,80}") {
        if let Ok(keys) = params::sort(&s, STATION_SORT, canon_station_path) {
            prop_assert!(keys.iter().all(|k| STATION_SORT.contains(&k.path.as_str())));
        }
        if let Ok(fields) = params::fields(&s, STATION_FIELDS, canon_station_path) {
            prop_assert!(fields.iter().all(|f| STATION_FIELDS.contains(&f.as_str())));
        }
        let _ = params::states(&s);
    }

    #[test]
    fn accept_headers(accept in ".{0,120}", format in proptest::option::of(".{0,30}")) {
        let _ = choose(format.as_deref(), Some(&accept), FORMATS);
    }
}
