//! The demo's catalog as a hydrologist reads it: every station type the README's examples ask
//! for, and real gauges whose river kilometre and gauge zero agree with each other along each
//! river (the kilometrage runs one way along a river; the gauge zero falls downstream).

mod common;

use common::{Server, get};
use std::collections::BTreeMap;

#[tokio::test]
async fn the_demo_catalog_is_plausible() {
    let dir = tempfile::tempdir().unwrap();
    // The demo's stations (the default), catalog only.
    common::generate(dir.path(), &["--years", "0"]);
    let server = Server::start_with(dir.path(), &[]);
    let b = &server.base;
    for kind in ["surfaceWater", "groundwater", "weather"] {
        let list = get(&format!("{b}/stations?types={kind}")).await.json();
        assert!(
            !list["data"].as_array().unwrap().is_empty(),
            "no {kind} station"
        );
    }
    let all = get(&format!("{b}/stations?types=surfaceWater"))
        .await
        .json();
    // Real gauges: names without the made-up stations' numbers.
    let mut rivers: BTreeMap<String, Vec<(f64, f64, String)>> = BTreeMap::new();
    for s in all["data"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap().to_owned();
        if name.chars().any(|c| c.is_ascii_digit()) {
            continue;
        }
        let km = s["riverKm"].as_f64().expect("river km");
        let zero = &s["gaugeZero"];
        assert_eq!(zero["datum"], "DHHN2016", "{name}");
        rivers
            .entry(s["waterBodyName"].as_str().unwrap().to_owned())
            .or_default()
            .push((km, zero["value"].as_f64().unwrap(), name));
    }
    assert!(rivers["Rhein"].len() >= 9, "{rivers:?}");
    for (river, mut gauges) in rivers {
        gauges.sort_by(|a, b| a.0.total_cmp(&b.0));
        let falling = gauges.windows(2).all(|w| w[1].1 < w[0].1);
        let rising = gauges.windows(2).all(|w| w[1].1 > w[0].1);
        assert!(falling || rising || gauges.len() < 2, "{river}: {gauges:?}");
    }
    // Downstream is where the Rhine's kilometres grow: Köln lies below Bonn.
    let km = |name: &str| {
        all["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .and_then(|s| s["riverKm"].as_f64())
            .unwrap()
    };
    assert!(km("Bonn") < km("Köln") && km("Köln") < km("Düsseldorf"));
}
