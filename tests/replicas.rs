//! Replicas: several `hydro serve` over one bucket (SeaweedFS) behind nginx as the load
//! balancer. Answers and ETags are the same whichever replica serves; a replica killed
//! mid-download costs the client one resumed request (`Range` + `If-Range`) on another; a
//! version published to the bucket is picked up by every replica; health tells the balancer.
//! The balancer's configuration is the one `docs/deployment.md` documents, and it passes the
//! contract a replica passes: long selections, large headers, encoded and malformed paths,
//! methods and `POST /v1/values` answered alike, every error a problem document.

mod common;

use bytes::Bytes;
use common::nginx::Nginx;
use common::s3::S3;
use common::{Resp, Server, get, get_with, sample_urls, send};
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

/// What a response is for the contract: its status, and for an error that it is a problem
/// document of that status; for a success its body and ETag.
fn contract(r: &Resp) -> (u16, Option<Bytes>, Option<String>) {
    if r.status >= 400 {
        assert_eq!(
            r.header("content-type").as_deref(),
            Some("application/problem+json"),
            "{} {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        );
        let problem: serde_json::Value = serde_json::from_slice(&r.body).expect("a problem");
        assert_eq!(problem["status"], r.status, "{problem}");
        assert!(problem["detail"].is_string(), "{problem}");
        return (r.status, None, None);
    }
    (r.status, Some(r.body.clone()), r.header("etag"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_balancer_passes_the_replica_contract() {
    let replica = Server::start();
    let nginx = Nginx::start(&[host_port(&replica.base)]);
    let (direct, lb) = (replica.base.clone(), nginx.base());
    let stations = get(&format!("{direct}/stations")).await.json();
    let ids: Vec<String> = stations["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    // A selection of 1 000 station ids (~37 KB): too long for a URL (414 from the replica,
    // not nginx's HTML page), fine as a POST body through the balancer.
    let thousand: Vec<&str> = ids.iter().map(String::as_str).cycle().take(1000).collect();
    let thousand = thousand.join(",");
    let window = "parameters=water-level-15min&from=2023-03-01T00:00:00Z&to=2023-03-02T00:00:00Z";
    let several: Vec<&str> = ids.iter().map(String::as_str).cycle().take(180).collect();
    let several = several.join(",");
    let form = [("content-type", "application/x-www-form-urlencoded")];
    let json = [("content-type", "application/json")];
    let filler_ok = "x".repeat(60 << 10);
    let filler_big = "x".repeat(70 << 10);
    type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>, Vec<u8>);
    let cases: Vec<Case> = vec![
        ("GET", "/stations".into(), vec![], vec![]),
        (
            "GET",
            format!("/values?stations={thousand}&{window}"),
            vec![],
            vec![],
        ),
        (
            "GET",
            format!("/values?stations={several}&{window}&format=csv"),
            vec![],
            vec![],
        ),
        (
            "GET",
            "/stations".into(),
            vec![("x-filler", &filler_ok)],
            vec![],
        ),
        (
            "GET",
            "/stations".into(),
            vec![("x-filler", &filler_big)],
            vec![],
        ),
        ("GET", "/stations/..%2F..%2Fetc".into(), vec![], vec![]),
        ("GET", "/stations/a%2Fb/parameters".into(), vec![], vec![]),
        ("GET", "/stations?near=%FF".into(), vec![], vec![]),
        ("GET", "/stations?limit=1&limit=2".into(), vec![], vec![]),
        ("GET", "/nowhere".into(), vec![], vec![]),
        ("PUT", "/stations".into(), vec![], vec![]),
        ("DELETE", "/values".into(), vec![], vec![]),
        ("POST", "/stations".into(), vec![], vec![]),
        (
            "POST",
            "/values?format=csv".into(),
            form.to_vec(),
            format!("stations={thousand}&{window}").into_bytes(),
        ),
        (
            "POST",
            "/values".into(),
            form.to_vec(),
            format!("stations={several}&{window}").into_bytes(),
        ),
        (
            "POST",
            "/values?format=csv".into(),
            json.to_vec(),
            serde_json::json!({"stations": ids, "parameters": ["water-level-15min"], "recent": 2})
                .to_string()
                .into_bytes(),
        ),
        (
            "POST",
            "/values".into(),
            form.to_vec(),
            vec![b'a'; (1 << 20) + 10],
        ),
        (
            "POST",
            "/values?recent=1".into(),
            form.to_vec(),
            b"recent=2&parameters=discharge-15min".to_vec(),
        ),
        (
            "POST",
            "/values".into(),
            vec![("content-type", "text/plain")],
            b"parameters=x".to_vec(),
        ),
    ];
    for (method, path, headers, body) in &cases {
        let direct_r = send(method, &format!("{direct}{path}"), headers, body.clone()).await;
        let lb_r = send(method, &format!("{lb}{path}"), headers, body.clone()).await;
        let shown = &path[..path.len().min(60)];
        assert_eq!(
            contract(&direct_r),
            contract(&lb_r),
            "{method} {shown} directly and through nginx: {}",
            nginx.error_log()
        );
        if method == &"PUT" || method == &"DELETE" || path == "/stations" && method == &"POST" {
            assert_eq!(
                direct_r.header("allow"),
                lb_r.header("allow"),
                "{method} {shown}"
            );
        }
    }
    // What the replica would refuse too, nginx refuses itself (a NUL byte in the path, a path
    // above the root, TRACE, a body beyond 2 MiB, a header beyond its buffers): with a problem
    // document of the same kind.
    let nul = send("GET", &format!("{lb}/stations/a%00b"), &[], vec![]).await;
    assert_eq!(contract(&nul).0, 400);
    assert_eq!(
        contract(&send("GET", &format!("{direct}/stations/a%00b"), &[], vec![]).await).0,
        404
    );
    let above = send("GET", &format!("{lb}/%2e%2e/%2e%2e/etc"), &[], vec![]).await;
    assert_eq!(contract(&above).0, 400);
    let trace = send("TRACE", &format!("{lb}/stations"), &[], vec![]).await;
    assert_eq!(contract(&trace).0, 405);
    let huge = send("POST", &format!("{lb}/values"), &form, vec![b'a'; 3 << 20]).await;
    assert_eq!(contract(&huge).0, 413);
    // A request line longer than the http crate's URIs: written by hand.
    let line = format!("/v1/stations?q={}", "a".repeat(140 << 10));
    assert_eq!(contract(&raw_get(nginx.port, &line)).0, 414);
    let header = "x".repeat(130 << 10);
    let big = send(
        "GET",
        &format!("{lb}/stations"),
        &[("x-filler", &header)],
        vec![],
    )
    .await;
    assert_eq!(contract(&big).0, 431);

    // Every sample answer byte for byte and ETag for ETag through the balancer.
    for url in sample_urls(&direct).await {
        let a = get(&format!("{direct}{url}")).await;
        let b = get(&format!("{lb}{url}")).await;
        assert_eq!(contract(&a), contract(&b), "{url}");
    }
}

/// `GET target` over a connection of its own, written by hand (for request lines no client
/// library builds), read to its end.
fn raw_get(port: u16, target: &str) -> Resp {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        conn,
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .unwrap()
        .parse()
        .unwrap();
    let mut headers = http::HeaderMap::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            headers.append(
                http::HeaderName::from_bytes(k.trim().as_bytes()).unwrap(),
                http::HeaderValue::from_str(v.trim()).unwrap(),
            );
        }
    }
    Resp {
        status,
        headers,
        body: Bytes::copy_from_slice(&raw[split + 4..]),
    }
}
