//! The request log: a line per request, as JSON into a file or as text on standard error,
//! with what a request was and how its answer went out (cut ones too).

mod common;

use common::{Server, dataset, get, get_with, request, serve_refused};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// The log file's lines once it has at least `n`; waits for the lines of answers still being
/// finished (a line is written when a body ends), at most 10 s.
fn lines(file: &Path, n: usize) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        let requests = lines
            .iter()
            .filter(|l| l["target"] == "hydro::request")
            .count();
        if requests >= n || started.elapsed() > Duration::from_secs(10) {
            return lines
                .into_iter()
                .filter(|l| l["target"] == "hydro::request")
                .collect();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn each_request_is_a_json_line_in_the_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("requests.log");
    let server = Server::start_with(
        dataset(),
        &[
            ("HYDRO_LOG", "info"),
            ("HYDRO_LOG_FORMAT", "json"),
            ("HYDRO_LOG_FILE", file.to_str().unwrap()),
            ("HYDRO_TRUSTED_PROXIES", "127.0.0.1, ::1"),
        ],
    );
    let b = &server.base;
    let listed = get_with(
        &format!("{b}/stations?limit=2&fields=id"),
        &[("X-Forwarded-For", "203.0.113.9")],
    )
    .await;
    assert_eq!(listed.status, 200);
    assert_eq!(get(&format!("{b}/nowhere")).await.status, 404);
    let head = request("HEAD", &format!("{b}/stations?limit=2&fields=id"), &[]).await;
    assert_eq!(head.status, 200);
    let head = request("HEAD", &format!("{b}/nowhere"), &[]).await;
    assert_eq!(head.status, 404);

    // A download the client leaves after its first bytes: far more than loopback buffers hold.
    let addr = b.trim_start_matches("http://").split('/').next().unwrap();
    let big = "/v1/values?parameters=water-level-15min&format=ndjson";
    let mut socket = TcpStream::connect(addr).unwrap();
    write!(
        socket,
        "GET {big} HTTP/1.1\r\nHost: {addr}\r\nCache-Control: no-cache\r\n\r\n"
    )
    .unwrap();
    let mut first = [0u8; 512];
    let n = socket.read(&mut first).unwrap();
    assert!(first[..n].starts_with(b"HTTP/1.1 200"));
    drop(socket);

    let log = lines(&file, 5);
    assert_eq!(log.len(), 5, "{log:#?}");
    let listed_line = &log[0];
    assert_eq!(listed_line["method"], "GET");
    assert_eq!(listed_line["path"], "/v1/stations?limit=2&fields=id");
    assert_eq!(listed_line["status"], 200);
    assert_eq!(listed_line["bytes"], listed.body.len() as u64);
    assert_eq!(
        listed_line["client"], "203.0.113.9",
        "as the trusted balancer names it"
    );
    assert_eq!(listed_line["cut"], false);
    assert!(listed_line["ms"].as_f64().unwrap() > 0.0);
    assert_eq!(listed_line["level"], "INFO");
    assert!(listed_line["timestamp"].is_string());

    assert_eq!(log[1]["path"], "/v1/nowhere");
    assert_eq!(log[1]["status"], 404);
    assert_eq!(log[1]["client"], "127.0.0.1");
    assert!(log[1]["bytes"].as_u64().unwrap() > 0, "the problem body");

    for (line, status) in [(&log[2], 200), (&log[3], 404)] {
        assert_eq!(line["method"], "HEAD");
        assert_eq!(line["status"], status);
        assert_eq!(line["bytes"], 0);
        assert_eq!(
            line["cut"], false,
            "a HEAD answer has no body to cut: {line}"
        );
    }

    assert_eq!(log[4]["path"], big);
    assert_eq!(log[4]["status"], 200);
    assert_eq!(log[4]["cut"], true, "{:#?}", log[4]);
}

/// Text lines on standard error: `key=value` fields, no colour codes off a terminal.
#[tokio::test]
async fn text_lines_on_standard_error_without_colour_codes() {
    let mut server = Server::start_with(dataset(), &[("HYDRO_LOG", "info")]);
    let url = format!("{}/stations?limit=1", server.base);
    assert_eq!(get(&url).await.status, 200);
    let stderr = server.child().stderr.take().unwrap();
    // Read on a thread of its own: the server's stderr stays open while it runs.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let line = BufReader::new(stderr)
            .lines()
            .find_map(|l| l.ok().filter(|l| l.contains("hydro::request")));
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("a request line within 10 s")
        .expect("a request line");
    assert!(line.contains(r#"path="/v1/stations?limit=1""#), "{line}");
    for field in ["method=GET", "status=200", "client=127.0.0.1", "cut=false"] {
        assert!(line.contains(field), "{field}: {line}");
    }
    assert!(!line.contains('\u{1b}'), "colour codes: {line:?}");
}

#[test]
fn bad_log_settings_are_refused_by_name() {
    let said = serve_refused(&[("HYDRO_LOG_FORMAT", "xml")]);
    assert!(
        said.contains("log_format") || said.contains("LOG_FORMAT"),
        "{said}"
    );
    let said = serve_refused(&[("HYDRO_LOG_FILE", "/nonexistent/dir/requests.log")]);
    assert!(said.contains("log_file"), "{said}");
    let said = serve_refused(&[("HYDRO_LOG", "info,[")]);
    assert!(said.contains("HYDRO_LOG"), "{said}");
}
