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
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `http` block of the balancer: `upstreams` as `host:port`, listening on `port`.
pub fn config(port: u16, upstreams: &[String]) -> String {
    let servers: String = upstreams
        .iter()
        .map(|u| format!("    server {u} max_fails=1 fail_timeout=5s;\n"))
        .collect();
    format!(
        r#"upstream hydro {{
{servers}    keepalive 32;
}}
server {{
    listen 127.0.0.1:{port};
    location / {{
        proxy_pass http://hydro;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        # Downloads stream through as they are made, and a replica that goes away mid-answer
        # costs the client one resumed request (Range + If-Range) rather than a stalled copy.
        proxy_buffering off;
        # A replica that refuses or cannot be reached (or says 502/503) before answering:
        # the request goes to the next one.
        proxy_next_upstream error timeout http_502 http_503;
        proxy_next_upstream_tries 2;
        proxy_connect_timeout 2s;
        add_header X-Upstream $upstream_addr always;
    }}
}}
"#
    )
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
