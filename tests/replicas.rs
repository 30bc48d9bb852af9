//! Replicas: several `hydro serve` over one bucket (SeaweedFS) behind nginx as the load
//! balancer. Answers and ETags are the same whichever replica serves; a replica killed
//! mid-download costs the client one resumed request (`Range` + `If-Range`) on another; a
//! version published to the bucket is picked up by every replica; health tells the balancer.

mod common;

use bytes::Bytes;
use common::nginx::Nginx;
use common::s3::S3;
use common::{Server, get, get_with};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::process::Command;

const PUBLIC: &str = "http://hydro.example/v1";

fn replica(s3: &S3) -> Server {
    let mut env: Vec<(&str, String)> = s3.env();
    // One public address for every replica: the balancer's (links are the same whichever
    // replica made them).
    env.push(("HYDRO_BASE_URL", PUBLIC.into()));
    env.push(("HYDRO_FOLLOW_SECONDS", "1".into()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start_with("s3://replicas/d", &env)
}

fn hydro(s3: &S3, args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .envs(s3.env())
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn host_port(base: &str) -> String {
    base.trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned()
}

async fn dataset_version(base: &str) -> String {
    get(&format!("{base}/health")).await.json()["checks"]["catalog"]["datasetVersion"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_behind_nginx_answer_alike_resume_downloads_and_follow_the_bucket() {
    let s3 = S3::start();
    // Two years at 5 minutes: a CSV download of some 10 MB, long enough to cut.
    hydro(
        &s3,
        &[
            "generate",
            "--out",
            "s3://replicas/d",
            "--stations",
            "3",
            "--years",
            "2",
            "--interval",
            "PT5M",
            "--seed",
            "7",
        ],
    );
    let mut replicas = vec![replica(&s3), replica(&s3)];
    let nginx = Nginx::start(
        &replicas
            .iter()
            .map(|r| host_port(&r.base))
            .collect::<Vec<_>>(),
    );
    let lb = nginx.base();

    // The same answer and ETag from each replica directly and through the balancer.
    let station = get(&format!("{lb}/stations?limit=1")).await.json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let parameters = get(&format!("{lb}/stations/{station}/parameters"))
        .await
        .json();
    let parameter = parameters["data"][0]["id"].as_str().unwrap().to_owned();
    let values = format!("/stations/{station}/parameters/{parameter}/values");
    let urls = [
        "/".to_owned(),
        "/stations".into(),
        format!("/stations/{station}"),
        format!("{values}?from=2022-03-01T00:00:00Z&to=2022-03-31T23:59:59Z"),
        format!("{values}?from=2022-01-01T00:00:00Z&to=2023-12-31T23:59:59Z&format=parquet"),
    ];
    for url in &urls {
        let first = get(&format!("{}{url}", replicas[0].base)).await;
        assert_eq!(first.status, 200, "{url}");
        let mut seen = std::collections::HashSet::new();
        for base in [&replicas[1].base, &lb, &lb, &lb, &lb] {
            let r = get(&format!("{base}{url}")).await;
            assert_eq!(r.status, 200, "{url}");
            assert!(r.body == first.body, "{url} via {base}");
            assert_eq!(r.header("etag"), first.header("etag"), "{url} via {base}");
            seen.extend(r.header("x-upstream"));
        }
        assert_eq!(seen.len(), 2, "the balancer used both replicas: {seen:?}");
    }

    // A download cut by its replica's death, resumed from where it stopped on the other.
    let big = format!("{values}?from=2022-01-01T00:00:00Z&to=2023-12-31T23:59:59Z&format=csv");
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let resp = client
        .get(format!("{lb}{big}").parse().unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let etag = resp.headers()["etag"].to_str().unwrap().to_owned();
    let served_by = resp.headers()["x-upstream"].to_str().unwrap().to_owned();
    let mut body = resp.into_body();
    let mut got: Vec<u8> = Vec::new();
    while got.len() < 256 << 10 {
        let frame = body.frame().await.unwrap().unwrap();
        got.extend_from_slice(frame.data_ref().unwrap());
    }
    let victim = replicas
        .iter()
        .position(|r| host_port(&r.base) == served_by)
        .unwrap();
    let _ = replicas[victim].child().kill();
    let _ = replicas[victim].child().wait();
    // The rest of what was on its way, then the cut.
    while let Some(Ok(frame)) = body.frame().await {
        if let Some(d) = frame.data_ref() {
            got.extend_from_slice(d);
        }
    }
    let whole = get(&format!("{}{big}", replicas[1 - victim].base)).await;
    assert!(
        got.len() < whole.body.len(),
        "the download was cut ({} bytes)",
        got.len()
    );
    assert_eq!(
        &whole.body[..got.len()],
        &got[..],
        "what arrived is a prefix"
    );
    let rest = get_with(
        &format!("{lb}{big}"),
        &[
            ("range", &format!("bytes={}-", got.len())),
            ("if-range", &etag),
        ],
    )
    .await;
    assert_eq!(rest.status, 206, "{}", rest.text());
    assert_eq!(rest.header("etag").as_deref(), Some(etag.as_str()));
    got.extend_from_slice(&rest.body);
    assert!(got == whole.body, "resumed download is byte-identical");

    // With one replica gone, the balancer keeps answering (the next one takes the request).
    for _ in 0..4 {
        assert_eq!(
            get(&format!("{lb}/stations")).await.status,
            200,
            "{}",
            nginx.error_log()
        );
    }
    // A replica comes back; a version published to the bucket is served by every replica.
    replicas[victim] = replica(&s3);
    let before = dataset_version(&replicas[0].base).await;
    hydro(
        &s3,
        &[
            "generate",
            "--out",
            "s3://replicas/d",
            "--stations",
            "3",
            "--years",
            "1",
            "--interval",
            "PT1H",
            "--seed",
            "8",
        ],
    );
    for r in &replicas {
        let mut now = before.clone();
        for _ in 0..100 {
            now = dataset_version(&r.base).await;
            if now != before {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_ne!(now, before, "{} did not follow", r.base);
    }
    // Health for the balancer: 200 and ok from each.
    for r in &replicas {
        let h = get(&format!("{}/health", r.base)).await;
        assert_eq!((h.status, h.json()["status"].as_str()), (200, Some("ok")));
    }
}
