//! The demo's catalog as a hydrologist reads it: every station type the README's examples ask
//! for, and gauges (real, and made-up ones between them) whose river kilometre and gauge zero
//! agree with each other along each river (the kilometrage runs one way along a river; the
//! gauge zero falls downstream).

mod common;

use common::{Server, get};
use hydro_engine::{gauge_means, means_along_river};
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
    // A table of each kind has the list's schema, though wells have no river km and weather
    // stations no gauge zero: the pages of a list concatenate.
    let whole = get(&format!("{b}/stations?format=parquet")).await;
    let schema = common::batches("parquet", &whole.body)[0].schema();
    for kind in ["surfaceWater", "groundwater", "weather"] {
        let page = get(&format!("{b}/stations?format=parquet&types={kind}")).await;
        let page = common::batches("parquet", &page.body);
        assert_eq!(page[0].schema(), schema, "{kind}");
    }
    // Wells and weather stations lie near a gauge (within 50 km), not anywhere in a box
    // around Germany.
    let others = get(&format!("{b}/stations?types=groundwater,weather"))
        .await
        .json();
    for s in others["data"].as_array().unwrap() {
        let (lon, lat) = (
            s["coordinates"]["lon"].as_f64().unwrap(),
            s["coordinates"]["lat"].as_f64().unwrap(),
        );
        let near = get(&format!(
            "{b}/stations?types=surfaceWater&near={lon},{lat},50"
        ))
        .await
        .json();
        assert!(
            !near["data"].as_array().unwrap().is_empty(),
            "{} is far from every gauge",
            s["name"]
        );
    }
    let all = get(&format!("{b}/stations?types=surfaceWater"))
        .await
        .json();
    // Real gauges and the made-up ones between them (names with a number) alike.
    let mut rivers: BTreeMap<String, Vec<(f64, f64, String)>> = BTreeMap::new();
    let mut made_up = 0;
    for s in all["data"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap().to_owned();
        made_up += usize::from(name.chars().any(|c| c.is_ascii_digit()));
        let km = s["riverKm"].as_f64().expect("river km");
        let zero = &s["gaugeZero"];
        assert_eq!(zero["datum"], "DHHN2016", "{name}");
        rivers
            .entry(s["waterBodyName"].as_str().unwrap().to_owned())
            .or_default()
            .push((km, zero["value"].as_f64().unwrap(), name));
    }
    assert!(rivers["Rhein"].len() >= 9, "{rivers:?}");
    assert!(made_up > 0, "the demo has made-up gauges too");
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

/// The demo reads as its rivers do: each real gauge's mean water level (MW) and mean discharge
/// (MQ), as the demo's own characteristic values give them, lie within 25 % of the published
/// values the generator draws around (the engine's `write::gauges`; Köln MQ ~2 000 m³/s), and
/// a made-up gauge between two real ones has means between theirs.
#[tokio::test]
async fn the_demo_gauges_have_their_published_means() {
    let dir = tempfile::tempdir().unwrap();
    // The demo's 60 stations; hourly values over two years are enough for the means.
    common::generate(dir.path(), &["--years", "2", "--interval", "PT60M"]);
    let server = Server::start_with(dir.path(), &[]);
    let b = &server.base;
    let gauges = get(&format!(
        "{b}/stations?types=surfaceWater&fields=id,name,waterBodyId,riverKm"
    ))
    .await
    .json();
    let mut checked = 0;
    let mut between = 0;
    for s in gauges["data"].as_array().unwrap() {
        let (id, name) = (s["id"].as_str().unwrap(), s["name"].as_str().unwrap());
        let means = get(&format!(
            "{b}/stations/{id}/characteristics?types=mainValue&fields=id,value"
        ))
        .await
        .json();
        let value = |cid: &str| {
            means["data"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["id"] == cid)
                .and_then(|c| c["value"].as_f64())
                .unwrap_or_else(|| panic!("{name} has no {cid}: {means}"))
        };
        let (mw, mq) = (value("mw"), value("mq"));
        match gauge_means(name) {
            Some(published) => {
                let off = |got: f64, want: f64| (got - want).abs() / want;
                assert!(
                    off(mw, published.water_level_cm) <= 0.25,
                    "{name}: MW {mw} cm, published {}",
                    published.water_level_cm
                );
                assert!(
                    off(mq, published.discharge) <= 0.25,
                    "{name}: MQ {mq} m³/s, published {}",
                    published.discharge
                );
                checked += 1;
            }
            None => {
                // Between its river's real gauges: MQ within the range of theirs, widened by
                // the same 25 %.
                let river = s["waterBodyId"].as_str().unwrap();
                let km = s["riverKm"].as_f64().unwrap();
                let expected = means_along_river(name, river, km)
                    .unwrap_or_else(|| panic!("{name} at km {km} lies between no real gauges"));
                let off = (mq - expected.discharge).abs() / expected.discharge;
                assert!(
                    off <= 0.25,
                    "{name}: MQ {mq}, its neighbours make {expected:?}"
                );
                between += 1;
            }
        }
    }
    assert_eq!(checked, 46, "every real gauge");
    assert!(between > 0, "made-up gauges too");
}

/// The tour (`docs/tour.md`) and the README's five requests, every `curl` in them, against the
/// demo as `serve` makes it: each answers 200 with a body, and each list or series answer has
/// rows (but the one the tour says is empty).
#[tokio::test]
async fn the_tour_and_the_readme_answer_with_rows() {
    let dir = tempfile::tempdir().unwrap();
    common::generate(dir.path(), &[]);
    let server = Server::start_with(dir.path(), &[]);
    let b = &server.base;
    let root = b.trim_end_matches("/v1");
    let station = get(&format!("{b}/stations?limit=1&fields=id")).await.json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let read = |path: &str| {
        std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    };
    let sh_block = |text: &str, after: &str| -> String {
        text.split(after)
            .nth(1)
            .and_then(|t| t.split("```sh").nth(1))
            .and_then(|t| t.split("```").next())
            .unwrap_or_else(|| panic!("a sh block after {after}"))
            .to_owned()
    };
    let tour = sh_block(&read("docs/tour.md"), "# Tour")
        + &sh_block(&read("README.md"), "## Five requests");
    let mut asked = 0;
    for line in tour.lines().filter(|l| l.starts_with("curl ")) {
        let (command, comment) = line.split_once(" #").unwrap_or((line, ""));
        // Quoted URLs, and bare ones.
        let urls = command
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .chain(
                command
                    .split_whitespace()
                    .filter(|w| w.starts_with("http://"))
                    .map(str::to_owned),
            );
        for url in urls {
            let url = url
                .replace("$B", b)
                .replace("$S", &station)
                .replace("http://127.0.0.1:8080", root);
            let answer = get(&url).await;
            assert_eq!(answer.status, 200, "{line}: {}", answer.text());
            assert!(!answer.body.is_empty(), "{line}");
            let empty_by_design = comment.contains("empty");
            let kind = answer.header("content-type").unwrap_or_default();
            if kind.contains("json")
                && let Ok(json) = serde_json::from_slice::<serde_json::Value>(&answer.body)
            {
                let rows = json.get("data").or_else(|| json.get("features"));
                if let Some(rows) = rows.and_then(|d| d.as_array()) {
                    assert_eq!(rows.is_empty(), empty_by_design, "{line}");
                }
            }
            if kind.starts_with("text/csv") {
                assert!(answer.text().lines().count() > 1, "{line}");
            }
            asked += 1;
        }
    }
    assert!(asked > 30, "only {asked} URLs found in the tour");
}
