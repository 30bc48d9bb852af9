//! OGC API – Features under `/ogc`, opened by OWSLib and GDAL's OAPIF driver and checked
//! against `/v1` and, for coordinate systems, PROJ (pyproj): see `tests/ogc.py`. `.ci/run`
//! installs them; without them this test fails.

mod common;

use common::Server;
use std::process::Command;

#[test]
fn gis_clients_open_the_ogc_api() {
    let server = Server::start();
    let out = Command::new("python3")
        .arg(format!("{}/tests/ogc.py", env!("CARGO_MANIFEST_DIR")))
        .arg(&server.base)
        .output()
        .expect("python3 must be installed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "ogc.py failed (pip install owslib pyogrio pyproj):\n{stdout}\n{stderr}"
    );
    for part in [
        "owslib:",
        "against /v1:",
        "gdal:",
        "crs:",
        "html:",
        "bad requests:",
    ] {
        assert!(stdout.contains(part), "{part}\n{stdout}");
    }
}
