//! Restricted mode: every kind of credential in its missing, wrong, expired and valid forms;
//! CORS for allowed and foreign origins; rate limiting.

mod common;

use base64::Engine;
use common::{Server, dataset, get, get_with, request};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::json;
use std::io::Write;
use std::process::{Command, Stdio};

const SECRET: &str = "test-secret-of-enough-length-0123456789";

fn hydro(args: &[&str], stdin: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn hs256(claims: serde_json::Value) -> String {
    encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap()
}

fn es256(claims: serde_json::Value) -> String {
    let pem = std::fs::read(format!(
        "{}/tests/fixtures/es256-private.pem",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    encode(
        &Header::new(Algorithm::ES256),
        &claims,
        &EncodingKey::from_ec_pem(&pem).unwrap(),
    )
    .unwrap()
}

fn basic(user: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

#[tokio::test]
async fn restricted_mode_checks_every_kind_of_credential() {
    let key_out = hydro(&["hash-key"], "");
    let key = key_out
        .lines()
        .find_map(|l| l.strip_prefix("key:  "))
        .unwrap()
        .to_owned();
    let key_hash = key_out
        .lines()
        .find_map(|l| l.strip_prefix("hash: "))
        .unwrap()
        .to_owned();
    let password_hash = hydro(&["hash-password"], "correct horse\n")
        .trim()
        .to_owned();
    let public_pem = std::fs::read_to_string(format!(
        "{}/tests/fixtures/es256-public.pem",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let users = format!("ada:{password_hash}");
    let server = Server::start_with(
        dataset(),
        &[
            ("HYDRO_ACCESS", "restricted"),
            ("HYDRO_API_KEY_HASHES", &key_hash),
            ("HYDRO_BASIC_USERS", &users),
            ("HYDRO_JWT_SECRET", SECRET),
            ("HYDRO_JWT_PUBLIC_KEY_PEM", &public_pem),
            ("HYDRO_JWT_ISSUER", "https://issuer.example"),
            ("HYDRO_JWT_AUDIENCE", "hydro"),
            ("HYDRO_JWT_REQUIRED_SCOPE", "hydro:read"),
            (
                "HYDRO_CORS_ORIGINS",
                "https://app.example,https://other.example",
            ),
        ],
    );
    let url = format!("{}/stations?limit=1", server.base);
    let good = json!({"iss": "https://issuer.example", "aud": "hydro", "exp": now() + 600, "nbf": now() - 10, "scope": "hydro:read"});
    let with = |k: &str, v: serde_json::Value| {
        let mut c = good.clone();
        c[k] = v;
        c
    };
    // (what, request headers, expected status)
    type Case<'a> = (&'a str, Vec<(&'a str, String)>, u16);
    let cases: Vec<Case> = vec![
        ("no credentials", vec![], 401),
        ("valid api key", vec![("X-API-Key", key.clone())], 200),
        ("wrong api key", vec![("X-API-Key", "nope".into())], 401),
        (
            "valid HS256",
            vec![("Authorization", format!("Bearer {}", hs256(good.clone())))],
            200,
        ),
        (
            "valid ES256",
            vec![("Authorization", format!("Bearer {}", es256(good.clone())))],
            200,
        ),
        (
            "expired",
            vec![(
                "Authorization",
                format!("Bearer {}", hs256(with("exp", json!(now() - 3600)))),
            )],
            401,
        ),
        (
            "not yet valid",
            vec![(
                "Authorization",
                format!("Bearer {}", hs256(with("nbf", json!(now() + 3600)))),
            )],
            401,
        ),
        (
            "wrong issuer",
            vec![(
                "Authorization",
                format!(
                    "Bearer {}",
                    hs256(with("iss", json!("https://evil.example")))
                ),
            )],
            401,
        ),
        (
            "wrong audience",
            vec![(
                "Authorization",
                format!("Bearer {}", hs256(with("aud", json!("other")))),
            )],
            401,
        ),
        (
            "bad signature",
            vec![("Authorization", format!("Bearer {}x", hs256(good.clone())))],
            401,
        ),
        (
            "garbage token",
            vec![("Authorization", "Bearer not.a.token".into())],
            401,
        ),
        (
            "valid identity, no scope",
            vec![(
                "Authorization",
                format!("Bearer {}", hs256(with("scope", json!("other:read")))),
            )],
            403,
        ),
        (
            "valid basic",
            vec![("Authorization", basic("ada", "correct horse"))],
            200,
        ),
        // As Go's gRPC clients write it: base64 without its padding.
        (
            "valid basic, unpadded",
            vec![(
                "Authorization",
                basic("ada", "correct horse")
                    .trim_end_matches('=')
                    .to_owned(),
            )],
            200,
        ),
        // Pages for browsers are the same resources, behind the same door.
        (
            "browser, no credentials",
            vec![("Accept", "text/html".into())],
            401,
        ),
        (
            "browser, valid basic",
            vec![
                ("Accept", "text/html".into()),
                ("Authorization", basic("ada", "correct horse")),
            ],
            200,
        ),
        (
            "wrong password",
            vec![("Authorization", basic("ada", "wrong"))],
            401,
        ),
        (
            "unknown user",
            vec![("Authorization", basic("bob", "correct horse"))],
            401,
        ),
        (
            "basic not base64",
            vec![("Authorization", "Basic %%%".into())],
            401,
        ),
        (
            "other scheme",
            vec![("Authorization", "Digest x".into())],
            401,
        ),
    ];
    for (name, headers, status) in cases {
        let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = get_with(&url, &h).await;
        assert_eq!(r.status, status, "{name}: {}", r.text());
        if status == 401 {
            assert!(
                r.header("www-authenticate").unwrap().contains("Bearer"),
                "{name}"
            );
            assert_eq!(r.json()["status"], 401);
        }
        if status == 200 {
            assert!(
                r.header("cache-control").unwrap().starts_with("private"),
                "{name}"
            );
        }
    }
    // Health stays public; the metrics take the API's credentials, as Prometheus sends them.
    assert_eq!(get(&format!("{}/health", server.base)).await.status, 200);
    let metrics = format!("{}/metrics", server.base.trim_end_matches("/v1"));
    let refused = get(&metrics).await;
    assert_eq!(refused.status, 401);
    assert!(!refused.text().contains("hydro_requests_total"));
    let bearer = format!("Bearer {}", hs256(good.clone()));
    let scraped = get_with(&metrics, &[("Authorization", bearer.as_str())]).await;
    assert_eq!(scraped.status, 200);
    assert!(scraped.text().contains("hydro_requests_total"));
    let ada = basic("ada", "correct horse");
    let scraped = get_with(&metrics, &[("Authorization", ada.as_str())]).await;
    assert_eq!(scraped.status, 200);
    // CORS: allowed origins echoed with credentials, never '*'; foreign origins get nothing.
    let k = key.as_str();
    let r = get_with(&url, &[("X-API-Key", k), ("Origin", "https://app.example")]).await;
    assert_eq!(
        r.header("access-control-allow-origin").as_deref(),
        Some("https://app.example")
    );
    assert_eq!(
        r.header("access-control-allow-credentials").as_deref(),
        Some("true")
    );
    assert!(
        r.headers
            .get_all("vary")
            .iter()
            .any(|v| v.to_str().unwrap().contains("Origin"))
    );
    let r = get_with(
        &url,
        &[("X-API-Key", k), ("Origin", "https://evil.example")],
    )
    .await;
    assert!(r.header("access-control-allow-origin").is_none());
    let pre = request(
        "OPTIONS",
        &url,
        &[
            ("Origin", "https://other.example"),
            ("Access-Control-Request-Method", "GET"),
        ],
    )
    .await;
    assert_eq!(pre.status, 204);
    assert_eq!(
        pre.header("access-control-allow-origin").as_deref(),
        Some("https://other.example")
    );
    let pre = request("OPTIONS", &url, &[("Origin", "https://evil.example")]).await;
    assert!(pre.header("access-control-allow-origin").is_none());
    let unauth = get_with(&url, &[("Origin", "https://app.example")]).await;
    assert_eq!(unauth.status, 401);
    assert_eq!(
        unauth.header("access-control-allow-origin").as_deref(),
        Some("https://app.example"),
        "CORS on errors too"
    );
}

#[tokio::test]
async fn rate_limit_answers_429_with_headers() {
    let server = Server::start_with(
        dataset(),
        &[
            // So slow a refill that the five requests cannot earn a sixth, however slow the
            // machine.
            ("HYDRO_RATE_LIMIT_PER_SECOND", "0.001"),
            ("HYDRO_RATE_BURST", "3"),
        ],
    );
    let url = format!("{}/stations?limit=1", server.base);
    let mut statuses = Vec::new();
    let mut last = None;
    for _ in 0..5 {
        let r = get(&url).await;
        statuses.push(r.status);
        last = Some(r);
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    let r = last.unwrap();
    assert!(r.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
    assert_eq!(r.header("ratelimit-limit").as_deref(), Some("3"));
    assert_eq!(r.header("ratelimit-remaining").as_deref(), Some("0"));
    assert_eq!(r.json()["status"], 429);
}

/// Behind a balancer every request comes from it: with the balancer trusted, each client it
/// forwards for has an allowance of its own; without, `X-Forwarded-For` (which anyone can
/// write) changes nothing.
#[tokio::test]
async fn rate_limits_count_the_client_a_trusted_balancer_names() {
    let limits = [
        ("HYDRO_RATE_LIMIT_PER_SECOND", "0.001"),
        ("HYDRO_RATE_BURST", "2"),
    ];
    let statuses = |base: String| async move {
        let url = format!("{base}/stations?limit=1");
        let mut seen = Vec::new();
        for client in ["203.0.113.5", "203.0.113.5", "203.0.113.5", "203.0.113.6"] {
            seen.push(get_with(&url, &[("X-Forwarded-For", client)]).await.status);
        }
        seen
    };
    let trusting = Server::start_with(
        dataset(),
        &[
            limits[0],
            limits[1],
            ("HYDRO_TRUSTED_PROXIES", "127.0.0.1, ::1"),
        ],
    );
    assert_eq!(statuses(trusting.base.clone()).await, [200, 200, 429, 200]);
    let wary = Server::start_with(dataset(), &limits);
    assert_eq!(statuses(wary.base.clone()).await, [200, 200, 429, 429]);

    let err = common::serve_refused(&[("HYDRO_TRUSTED_PROXIES", "nginx")]);
    assert!(err.contains("trusted_proxies: 'nginx'"), "{err}");
}

#[test]
fn restricted_without_credentials_configured_refuses_to_start() {
    let err = common::serve_refused(&[("HYDRO_ACCESS", "restricted")]);
    assert!(err.contains("restricted needs"));
}
