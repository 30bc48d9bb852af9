//! Our files and responses read by independent readers (pyarrow, DuckDB, pandas, GDAL via
//! pyogrio, fsspec range reads, polars): see `tests/readers.py`. `.ci/run` installs them;
//! without them this test fails.

mod common;

use common::{Server, dataset};
use std::process::Command;

#[test]
fn independent_readers_agree() {
    let server = Server::start();
    let out = Command::new("python3")
        .arg(format!("{}/tests/readers.py", env!("CARGO_MANIFEST_DIR")))
        .arg(&server.base)
        .arg(dataset())
        .output()
        .expect("python3 must be installed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "readers.py failed (pip install pyarrow pandas pyogrio duckdb fsspec aiohttp polars):\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("layout:")
            && stdout.contains("formats:")
            && stdout.contains("http readers:")
            && stdout.contains("many series:"),
        "{stdout}"
    );
}
