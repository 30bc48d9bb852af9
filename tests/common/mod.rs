//! Test harness: a generated dataset and the real `hydro` binary on a free local port.

#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

pub mod nginx;
pub mod proxy;
pub mod s3;

/// Runs `hydro generate --out DIR` with `args` and expects it to succeed.
pub fn generate(dir: &Path, args: &[&str]) {
    let status = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(["generate", "--out"])
        .arg(dir)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .expect("run hydro generate");
    assert!(status.success(), "hydro generate {args:?}");
}

/// Runs `hydro` with `args` and extra environment `env`, expects it to succeed; its stdout.
pub fn hydro_succeeds(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run hydro");
    assert!(
        out.status.success(),
        "hydro {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every file under `dir`, in name order.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A file of `data/sample/`.
pub fn sample(name: &str) -> String {
    format!("{}/data/sample/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `hydro import --out OUT` with the sample stations and parameters; the caller adds values.
pub fn import_command(out: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hydro"));
    cmd.arg("import").arg("--out").arg(out);
    cmd.args(["--stations", &sample("stations.csv")]);
    cmd.args(["--parameters", &sample("parameters.csv")]);
    cmd
}

/// Cleans up after this test binary once it has exited, however it exits: what a `static`
/// holds is never dropped, so a server shared by a binary's tests would outlive it and a shared
/// dataset would stay on disk. A shell waits for this process to end (`tail --pid`), then stops
/// `server` (SIGTERM, and waits until it is gone) and removes `paths`.
// The shell outlives this process by design (it waits for its end), so it is never waited
// for here; once this process is gone, init reaps it.
#[allow(clippy::zombie_processes)]
pub fn clean_up_after_exit(server: Option<u32>, paths: &[&Path]) {
    let mut script = format!("tail --pid={} -f /dev/null;", std::process::id());
    if let Some(pid) = server {
        script.push_str(&format!(
            " kill {pid} 2>/dev/null; while kill -0 {pid} 2>/dev/null; do sleep 0.1; done;"
        ));
    }
    for path in paths {
        let quoted = path.display().to_string().replace('\'', "'\\''");
        script.push_str(&format!(" rm -rf '{quoted}';"));
    }
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the clean-up shell");
}

/// A dataset generated once per test binary (deterministic, small), removed when the binary
/// exits.
pub fn dataset() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("hydro-test-{}", std::process::id()));
        clean_up_after_exit(None, &[&dir]);
        generate(
            &dir,
            &[
                "--stations",
                "24",
                "--years",
                "2",
                "--seed",
                "11",
                "--start",
                "2023-01-01",
            ],
        );
        dir
    })
}

pub struct Server {
    child: Child,
    pub base: String,
    /// `grpc://host:port` of Arrow Flight SQL, when `HYDRO_FLIGHT_BIND` asked for it.
    pub flight: Option<String>,
    /// Where the server keeps its answer store: killed servers cannot remove their own.
    answers: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts `hydro serve` on 127.0.0.1:0 with extra environment.
    pub fn start_with(data: impl AsRef<std::ffi::OsStr>, env: &[(&str, &str)]) -> Server {
        let answers = tempfile::tempdir().expect("answer store directory");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hydro"));
        cmd.args(["serve", "--bind", "127.0.0.1:0", "--data"])
            .arg(data)
            .env_remove("HYDRO_VARIANT")
            .env("HYDRO_ANSWER_STORE_DIR", answers.path())
            .env("HYDRO_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start hydro serve");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let base = banner_url(&mut stdout, "http://");
        // Flight SQL says where it listens on the next line.
        let flight = env
            .iter()
            .any(|(k, _)| *k == "HYDRO_FLIGHT_BIND")
            .then(|| banner_url(&mut stdout, "grpc://"));
        Server {
            child,
            base,
            flight,
            answers,
        }
    }

    pub fn start() -> Server {
        Self::start_with(dataset(), &[])
    }

    /// A server for every test of a binary, kept in a `static` (never dropped): stopped, and
    /// its answer store removed, when the binary exits.
    pub fn shared() -> Server {
        let server = Self::start();
        clean_up_after_exit(Some(server.pid()), &[server.answers.path()]);
        server
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }
}

/// The address starting with `scheme` on the next line the server says.
fn banner_url(stdout: &mut impl BufRead, scheme: &str) -> String {
    let mut line = String::new();
    stdout.read_line(&mut line).expect("read banner");
    line.split_whitespace()
        .find(|w| w.starts_with(scheme))
        .unwrap_or_else(|| panic!("no {scheme} address in banner: {line}"))
        .trim_end_matches('/')
        .to_owned()
}

/// A new API key and its hash as `api_key_hashes` takes it (`hydro hash-key`).
pub fn new_api_key() -> (String, String) {
    let made = hydro_succeeds(&["hash-key"], &[]);
    let line = |name: &str| {
        made.lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in: {made}"))
            .trim()
            .to_owned()
    };
    (line("key:"), line("hash:"))
}

/// Runs `hydro serve` on the test dataset with `env`, expects it to refuse to start, and
/// returns what it said on stderr.
pub fn serve_refused(env: &[(&str, &str)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(["serve", "--bind", "127.0.0.1:0", "--data"])
        .arg(dataset())
        .envs(env.iter().copied())
        .output()
        .expect("run hydro serve");
    assert!(!out.status.success(), "hydro serve started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub struct Resp {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Resp {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn text(&self) -> String {
        String::from_utf8(self.body.to_vec()).expect("utf-8")
    }
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap_or("").to_owned())
    }
}

pub async fn request(method: &str, url: &str, headers: &[(&str, &str)]) -> Resp {
    send(method, url, headers, Vec::new()).await
}

/// A request with a body (`POST /v1/values`).
pub async fn send(method: &str, url: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Resp {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut req = http::Request::builder().method(method).uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = client
        .request(req.body(Full::new(Bytes::from(body))).unwrap())
        .await
        .expect("request");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    Resp {
        status,
        headers,
        body,
    }
}

pub async fn get(url: &str) -> Resp {
    request("GET", url, &[]).await
}

pub async fn get_with(url: &str, headers: &[(&str, &str)]) -> Resp {
    request("GET", url, headers).await
}

/// The URLs compared between two servers of the same values (a local copy and a bucket, an
/// archive and its compacted copy): every resource, every format, the
/// windows, sorted answers (DataFusion's scan of the month files), station lists.
/// The dataset version the server at `base` answers from.
pub async fn dataset_version(base: &str) -> String {
    get(&format!("{base}/")).await.json()["data"]["datasetVersion"]
        .as_str()
        .expect("the landing page names the version")
        .to_owned()
}

/// `body` with the version id `version` (as envelopes name it) made a placeholder, so that
/// answers of two versions with the same data compare equal.
pub fn unversioned(body: &[u8], version: &str) -> Vec<u8> {
    let (needle, mut out, mut rest) = (version.as_bytes(), Vec::with_capacity(body.len()), body);
    while let Some(i) = rest.windows(needle.len()).position(|w| w == needle) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(b"VERSION");
        rest = &rest[i + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

pub async fn sample_urls(base: &str) -> Vec<String> {
    let stations = get(&format!("{base}/stations?limit=3")).await.json();
    let ids: Vec<String> = stations["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    let mut urls = vec![
        "/".to_owned(),
        "/stations".into(),
        "/stations?format=csv".into(),
        "/stations?format=geojson".into(),
        "/stations?format=parquet".into(),
        "/stations?near=10,51,200".into(),
        "/openapi.json".into(),
        "/values?parameters=water-level-15min&from=2023-06-01T00:00:00Z&to=2023-07-15T00:00:00Z&format=csv&limit=20000".into(),
        "/values?parameters=water-level-15min&from=2023-06-01T00:00:00Z&to=2023-07-15T00:00:00Z&format=parquet".into(),
        "/latest?parameters=water-level-15min".into(),
    ];
    for id in &ids {
        urls.push(format!("/stations/{id}"));
        urls.push(format!("/stations/{id}/parameters"));
        urls.push(format!("/stations/{id}/characteristics"));
        let parameters = get(&format!("{base}/stations/{id}/parameters"))
            .await
            .json();
        for p in parameters["data"].as_array().unwrap() {
            let values = format!(
                "/stations/{id}/parameters/{}/values",
                p["id"].as_str().unwrap()
            );
            for format in ["json", "csv", "ndjson", "arrow", "parquet", "xml"] {
                urls.push(format!(
                    "{values}?format={format}&from=2023-01-01T00:00:00Z&to=2024-12-31T23:59:59Z"
                ));
            }
            urls.push(format!(
                "{values}?from=2023-03-01T00:00:00Z&to=2023-03-31T23:59:59Z&format=csv"
            ));
            urls.push(format!(
                "{values}?from=2023-03-10T06:00:00%2B01:00&to=2023-04-02T00:00:00Z&format=parquet"
            ));
            urls.push(format!("{values}?recent=10&format=csv"));
            urls.push(format!("{values}?last=P10D"));
            urls.push(format!("{values}?from=2023-01-01T00:00:00Z&to=2024-12-31T23:59:59Z&sort=-value&limit=100&format=csv"));
            urls.push(format!("{values}?from=2023-01-01T00:00:00Z&to=2024-12-31T23:59:59Z&limit=1000&offset=5000&format=json"));
        }
    }
    urls
}

/// A copy of the directory `from` (made) in `to` (there).
pub fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs the Python oracle `tests/<script>` with `args` and expects it to succeed; its stdout.
pub fn oracle(script: &str, args: &[&str]) -> String {
    let out = Command::new("python3")
        .arg(format!("{}/tests/{script}", env!("CARGO_MANIFEST_DIR")))
        .args(args)
        .output()
        .expect("python3 must be installed");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{script} {args:?} failed:\n{stdout}\n{stderr}"
    );
    stdout
}

/// Expects `url` to be a 400 whose first invalid parameter is `name`, its reason saying `hint`.
pub async fn bad_parameter(url: &str, name: &str, hint: &str) {
    let r = get(url).await;
    assert_eq!(r.status, 400, "{url}: {}", r.text());
    let p = r.json();
    assert_eq!(p["invalidParams"][0]["name"], name, "{url}: {p}");
    let reason = p["invalidParams"][0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains(hint), "{url}: {reason}");
}

/// The ids of the stations of the server at `base` (its first page of them).
pub async fn station_ids(base: &str) -> Vec<String> {
    get(&format!("{base}/stations?fields=id")).await.json()["data"]
        .as_array()
        .expect("a list of stations")
        .iter()
        .map(|s| s["id"].as_str().expect("an id").to_owned())
        .collect()
}

/// The id of the first station of the server at `base`.
pub async fn first_station_id(base: &str) -> String {
    let stations = get(&format!("{base}/stations?limit=1")).await.json();
    stations["data"][0]["id"]
        .as_str()
        .expect("a station")
        .to_owned()
}

/// The record batches of an Arrow IPC stream (`format` "arrow") or a Parquet file (any other).
pub fn batches(format: &str, body: &Bytes) -> Vec<datafusion::arrow::array::RecordBatch> {
    use datafusion::arrow::ipc::reader::StreamReader;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    match format {
        "arrow" => StreamReader::try_new(&body[..], None)
            .expect("an Arrow IPC stream")
            .collect::<Result<_, _>>()
            .expect("its batches"),
        _ => ParquetRecordBatchReaderBuilder::try_new(body.clone())
            .expect("a Parquet file")
            .build()
            .expect("its reader")
            .collect::<Result<_, _>>()
            .expect("its batches"),
    }
}
