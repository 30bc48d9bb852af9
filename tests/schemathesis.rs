//! schemathesis (PyPI) against our own `/v1/openapi.json`, every check on: a bounded number of
//! generated requests per operation; no 5xx, no response outside the documented schemas,
//! status codes and content types, and no schema-valid request refused
//! (`positive_data_acceptance`): the document says exactly what the server accepts (patterns
//! and enums for lists, ranges, `from`/`to`, `recent` and `last` as one object parameter whose
//! schema says which go together). The one thing the document cannot say, that `from` must not
//! be after `to`, is left out of the generated requests by `tests/schemathesis_hooks.py`.

mod common;

use common::s3::{S3, upload_dir};
use common::{Server, dataset, get};
use std::process::Command;

/// The document as served: `schemas/openapi.json` with the query parameters the server
/// defines (`api::query_parameters`) filled in.
#[tokio::test]
async fn the_openapi_document_is_valid_openapi_3_1() {
    let server = Server::shared();
    let served = get(&format!("{}/openapi.json", server.base)).await;
    assert_eq!(served.status, 200);
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(file.path(), &served.body).expect("write the document");
    let out = Command::new("python3")
        .args(["-c", "import json,sys; from openapi_spec_validator import validate; validate(json.load(open(sys.argv[1]))); print('valid')"])
        .arg(file.path())
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn schemathesis_finds_no_server_error_or_schema_violation() {
    let server = Server::start();
    schemathesis(&server.base);
}

/// The same run against a server that reads the test dataset from a bucket (SeaweedFS,
/// started here), compacted (months read from station-year files, a year's months at once):
/// object storage and compaction change how months are read, never what is answered.
#[test]
fn schemathesis_finds_none_against_a_compacted_bucket_either() {
    let s3 = S3::start();
    upload_dir(s3.bucket_store("archive").as_ref(), dataset(), "v");
    let compacted = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(["compact", "--out", "s3://archive/v"])
        .envs(s3.env())
        .output()
        .expect("hydro compact");
    assert!(
        compacted.status.success(),
        "{}",
        String::from_utf8_lossy(&compacted.stderr)
    );
    let env = s3.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = Server::start_with("s3://archive/v", &env);
    schemathesis(&server.base);
}

/// Runs schemathesis against the server at `base` and fails with its report if it finds
/// anything.
fn schemathesis(base: &str) {
    let out = Command::new("schemathesis")
        .args(["run", &format!("{base}/openapi.json"), "--url", base])
        .args(["--max-examples", "25", "--seed", "1", "--checks", "all"])
        .env("NO_COLOR", "1")
        // A window with `from` after `to` is schema-valid and a 400: left out (see the hook).
        .env(
            "PYTHONPATH",
            format!("{}/tests", env!("CARGO_MANIFEST_DIR")),
        )
        .env("SCHEMATHESIS_HOOKS", "schemathesis_hooks")
        .output()
        .expect("schemathesis must be installed (pip install schemathesis; .ci/run does)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("passed"), "{stdout}");
}
