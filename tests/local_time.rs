//! Local time everywhere: an IANA `output_offset` whose offsets follow DST, `timeZone` shaping
//! charts (axis and description) and pages as it shapes data, `from`/`to` without an offset
//! read in `timeZone` (still a 400 without one), and a typo of a parameter's name answered
//! with the name meant.

mod common;

use common::{Server, bad_parameter, dataset, first_station_id, get};

fn series(b: &str, station: &str) -> String {
    format!("{b}/stations/{station}/parameters/water-level-15min/values")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_iana_output_zone_follows_dst() {
    let server = Server::start_with(dataset(), &[("HYDRO_OUTPUT_OFFSET", "Europe/Berlin")]);
    let b = &server.base;
    let s = first_station_id(b).await;
    let csv = |window: &str| {
        let url = format!("{}?{window}&format=csv", series(b, &s));
        async move { get(&url).await.text() }
    };
    let offsets = |text: &str| -> Vec<String> {
        text.lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap_or("")[19..].to_owned())
            .collect()
    };
    let winter = csv("from=2024-01-15T00:00:00Z&to=2024-01-15T23:59:59Z").await;
    let summer = csv("from=2024-07-15T00:00:00Z&to=2024-07-15T23:59:59Z").await;
    assert!(offsets(&winter).iter().all(|o| o == "+01:00"), "{winter}");
    assert!(offsets(&summer).iter().all(|o| o == "+02:00"), "{summer}");
    assert!(winter.lines().count() > 1 && summer.lines().count() > 1);
    // The night the clocks go back: 02:xx+02:00 first, then 02:xx+01:00.
    let night = csv("from=2024-10-27T00:00:00Z&to=2024-10-27T01:59:59Z").await;
    let night_offsets = offsets(&night);
    assert!(
        night_offsets.first().map(String::as_str) == Some("+02:00")
            && night_offsets.last().map(String::as_str) == Some("+01:00"),
        "{night}"
    );
    // A page shows its times so, and says in which zone.
    let page = get(&format!("{}?recent=3&format=html", series(b, &s)))
        .await
        .text();
    assert!(page.contains("Times in Europe/Berlin"), "{}", &page[..500]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_zone_shapes_charts_pages_and_bounds() {
    let server = Server::start_with(dataset(), &[]);
    let b = &server.base;
    let s = first_station_id(b).await;
    let one = series(b, &s);
    // Without an offset, from and to are read in timeZone: the same rows as with +01:00.
    let local = get(&format!(
        "{one}?from=2024-03-01T00:00&to=2024-03-01T06:00&timeZone=Europe/Berlin&format=csv"
    ))
    .await;
    assert_eq!(local.status, 200, "{}", local.text());
    let offset = get(&format!(
        "{one}?from=2024-03-01T00:00%2B01:00&to=2024-03-01T06:00%2B01:00&timeZone=Europe/Berlin&format=csv"
    ))
    .await;
    assert_eq!(local.text(), offset.text());
    assert!(local.text().lines().count() > 20, "{}", local.text());
    // The repeated hour: from its first 02:00 to its second 02:45, both passes.
    let fold = get(&format!(
        "{one}?from=2024-10-27T02:00:00&to=2024-10-27T02:45:00&timeZone=Europe/Berlin&format=json"
    ))
    .await
    .json();
    let utc = get(&format!(
        "{one}?from=2024-10-27T00:00:00Z&to=2024-10-27T01:45:00Z&timeZone=Europe/Berlin&format=json"
    ))
    .await
    .json();
    assert_eq!(fold["data"], utc["data"]);
    // Without timeZone a time without an offset is still refused, and says how to give one.
    bad_parameter(&format!("{one}?from=2024-03-01T00:00"), "from", "timeZone").await;
    // A time the clocks skip.
    bad_parameter(
        &format!("{one}?from=2024-03-31T02:30&timeZone=Europe/Berlin"),
        "from",
        "daylight saving",
    )
    .await;
    // Charts: the axis and the description in the zone asked.
    let svg = get(&format!(
        "{one}?from=2024-03-01T00:00:00Z&to=2024-03-08T00:00:00Z&timeZone=Europe/Berlin&format=svg"
    ))
    .await
    .text();
    assert!(svg.contains("time (Europe/Berlin)"), "{}", &svg[..300]);
    assert!(svg.contains("time in Europe/Berlin"), "{}", &svg[..600]);
    let utc = get(&format!(
        "{one}?from=2024-03-01T00:00:00Z&to=2024-03-08T00:00:00Z&format=svg"
    ))
    .await
    .text();
    assert!(utc.contains("time (UTC+00:00)"), "{}", &utc[..300]);
    // Pages: the values' times in the zone asked.
    let page = get(&format!(
        "{one}?from=2024-03-01T00:00:00Z&to=2024-03-01T01:00:00Z&timeZone=%2B05:30&format=html"
    ))
    .await
    .text();
    assert!(page.contains("+05:30</td>"), "{page}");
    assert!(page.contains("Times in UTC+05:30"), "{page}");
    // An aggregate's chart is in its calendar's zone.
    let daily = get(&format!(
        "{one}?aggregate=mean&interval=P1D&timeZone=America/New_York&from=2024-03-01T00:00:00Z&to=2024-03-20T00:00:00Z&format=svg"
    ))
    .await
    .text();
    assert!(
        daily.contains("time (America/New_York)"),
        "{}",
        &daily[..300]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mistyped_parameter_name_gets_the_one_meant() {
    let server = Server::start_with(dataset(), &[]);
    let b = &server.base;
    let s = first_station_id(b).await;
    let one = series(b, &s);
    for (typed, meant) in [
        ("form=csv", "format"),
        ("timezone=UTC", "timeZone"),
        ("agregate=mean", "aggregate"),
        ("recnt=3", "recent"),
    ] {
        let r = get(&format!("{one}?{typed}")).await;
        assert_eq!(r.status, 400, "{typed}");
        let reason = r.json()["invalidParams"][0]["reason"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            reason.contains(&format!("did you mean {meant}?")),
            "{typed}: {reason}"
        );
    }
    // Nothing near: no guess.
    let r = get(&format!("{one}?zzzzzz=1")).await;
    let reason = r.json()["invalidParams"][0]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!reason.contains("did you mean"), "{reason}");
}
