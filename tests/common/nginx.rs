//! nginx (the Debian package) as the load balancer in front of `hydro serve` replicas, with
//! the configuration `docs/deployment.md` shows.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Nginx {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Nginx {
    /// SIGTERM, not SIGKILL: the master then stops its workers before it exits (killed, it
    /// left them running after the tests).
    fn drop(&mut self) {
        let stopped = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        if !stopped.is_ok_and(|s| s.success()) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// The balancer's configuration as `docs/deployment.md` documents it (its `nginx` block, read
/// from the page, so that what is tested is what is documented), with `upstreams` as
/// `host:port` for its servers, listening on `port`, and each answer naming the replica that
/// made it (`X-Upstream`).
pub fn config(port: u16, upstreams: &[String]) -> String {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/deployment.md"))
        .expect("docs/deployment.md");
    let block = page
        .split("```nginx\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("an nginx block in docs/deployment.md");
    let mut out = String::new();
    for line in block.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("server 10.0.0.") {
            continue;
        }
        if trimmed == "keepalive 32;" {
            for u in upstreams {
                out.push_str(&format!("    server {u} max_fails=1 fail_timeout=5s;\n"));
            }
        }
        if trimmed == "listen 80;" {
            out.push_str(&format!("    listen 127.0.0.1:{port};\n"));
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if trimmed == "proxy_pass http://hydro;" {
            out.push_str("        add_header X-Upstream $upstream_addr always;\n");
        }
    }
    assert!(
        out.contains(&format!("listen 127.0.0.1:{port};")) && out.contains("proxy_pass"),
        "the nginx block of docs/deployment.md is not as this test expects:\n{block}"
    );
    out
}

impl Nginx {
    pub fn start(upstreams: &[String]) -> Nginx {
        let dir = tempfile::tempdir().expect("nginx dir");
        let port = super::s3::free_ports(1)[0];
        let d = dir.path().display();
        let conf = format!(
            "worker_processes 1; daemon off; pid {d}/nginx.pid; error_log {d}/error.log;\n\
             events {{ worker_connections 256; }}\n\
             http {{ access_log off; client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;\n{}\n}}\n",
            config(port, upstreams)
        );
        let path = dir.path().join("nginx.conf");
        std::fs::write(&path, conf).expect("write nginx.conf");
        let child = Command::new("nginx")
            .arg("-c")
            .arg(&path)
            .arg("-p")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nginx (Debian package nginx)");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "nginx did not start: {}",
                std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Nginx { child, port, dir }
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}
