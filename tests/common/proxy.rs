//! A forwarding TCP proxy in front of a server, counting the HTTP requests that pass by
//! method (and, apart, those for the dataset's value files: `GET values`): what a client
//! really sent on the wire, not what it says it sent. It can also be made to stall (accept
//! and never answer), as a store that hangs does.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
pub struct Counts(Arc<Mutex<HashMap<String, u64>>>);

impl Counts {
    pub fn get(&self, method: &str) -> u64 {
        self.0.lock().unwrap().get(method).copied().unwrap_or(0)
    }
    fn add(&self, method: &str) {
        *self.0.lock().unwrap().entry(method.to_owned()).or_default() += 1;
    }
}

pub struct Proxy {
    pub port: u16,
    pub counts: Counts,
    /// While set, new connections are accepted and never answered.
    pub stall: Arc<AtomicBool>,
}

impl Proxy {
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let counts = Counts::default();
        let stall = Arc::new(AtomicBool::new(false));
        let (c, s) = (counts.clone(), Arc::clone(&stall));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if s.load(Ordering::SeqCst) {
                    // Held open, never read: the caller's timeout must end it.
                    std::thread::spawn(move || {
                        std::thread::sleep(std::time::Duration::from_secs(600));
                        drop(client);
                    });
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                let (c, s) = (c.clone(), Arc::clone(&s));
                let (client2, server2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || forward_requests(client, server, c, s));
                std::thread::spawn(move || copy(server2, client2));
            }
        });
        Proxy {
            port,
            counts,
            stall,
        }
    }
}

fn copy(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

/// Forwards the client's bytes, counting each request by its method: headers up to the blank
/// line, then a body of `Content-Length` bytes (what object_store's client sends).
/// While `stall` is set, what the client sends is held, never forwarded (connections open
/// before stay open and hang too).
fn forward_requests(
    mut from: TcpStream,
    mut to: TcpStream,
    counts: Counts,
    stall: Arc<AtomicBool>,
) {
    let mut pending: Vec<u8> = Vec::new();
    let mut body_left = 0usize;
    let mut buf = [0u8; 64 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if stall.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_secs(600));
            break;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
        let mut data = &buf[..n];
        while !data.is_empty() {
            if body_left > 0 {
                let k = body_left.min(data.len());
                body_left -= k;
                data = &data[k..];
                continue;
            }
            pending.extend_from_slice(data);
            data = &[];
            while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&pending[..end]).into_owned();
                let rest = pending.split_off(end + 4);
                pending = rest;
                let mut words = head.split(' ');
                let method = words.next().unwrap_or("").to_owned();
                counts.add(&method);
                if words.next().is_some_and(|path| path.contains("/values/")) {
                    counts.add(&format!("{method} values"));
                }
                let length = head
                    .lines()
                    .filter_map(|l| l.split_once(':'))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                let k = length.min(pending.len());
                pending.drain(..k);
                body_left = length - k;
                if body_left > 0 {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
