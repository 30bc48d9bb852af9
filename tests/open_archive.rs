//! The archive read in place by DuckDB, Polars and pyarrow, with the recipes of
//! `docs/on-disk-layout.md` (`tests/open_archive.py` runs them as the document gives them),
//! against what the API serves: per series count, sum, min and max, and whole series row by
//! row. On a local directory and on a bucket (SeaweedFS), through the life of an archive: as
//! written, compacted (older files still there), vacuumed (then a plain glob is exact too),
//! a correction appended to a compacted month, and vacuumed again.

mod common;

use common::s3::S3;
use common::{Server, generate, hydro_succeeds};
use std::process::Command;

fn hydro(args: &[&str], env: &[(&str, &str)]) {
    hydro_succeeds(args, env);
}

/// The recipes read `root` as the server serving it answers; with `vacuumed`, plain globs too.
fn recipes_agree(root: &str, env: &[(&str, &str)], vacuumed: bool, phase: &str) {
    let server = Server::start_with(root, env);
    let mut cmd = Command::new("python3");
    cmd.arg(format!(
        "{}/tests/open_archive.py",
        env!("CARGO_MANIFEST_DIR")
    ))
    .args([&server.base, root])
    .envs(env.iter().copied());
    if vacuumed {
        cmd.arg("--vacuumed");
    }
    let out = cmd.output().expect("python3 must be installed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{phase}: open_archive.py (pip install duckdb polars pyarrow) failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("series agree"), "{phase}: {stdout}");
}

/// A correction of a compacted month and a value in a month after the archive's.
fn corrections(dir: &std::path::Path, base: &str) -> std::path::PathBuf {
    // The first station's first series, from the catalog the server serves.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (station, parameter) = runtime.block_on(async {
        let s = common::first_station_id(base).await;
        let p = common::get(&format!("{base}/stations/{s}/parameters?limit=1"))
            .await
            .json();
        (s, p["data"][0]["id"].as_str().unwrap().to_owned())
    });
    let path = dir.join("corrections.csv");
    std::fs::write(
        &path,
        format!(
            "stationId,parameterId,timestamp,value,quality\n\
             {station},{parameter},2023-03-01T00:00:00Z,12345.5,good\n\
             {station},{parameter},2025-02-01T00:00:00Z,1.25,unchecked\n"
        ),
    )
    .unwrap();
    path
}

/// The life of an archive at `root` (a directory or a bucket prefix), read in place after
/// each step.
fn through_its_life(root: &str, env: &[(&str, &str)], scratch: &std::path::Path) {
    recipes_agree(root, env, true, "as written");
    hydro(&["compact", "--out", root, "--before", "2100-01"], env);
    recipes_agree(root, env, false, "compacted");
    hydro(&["vacuum", "--out", root, "--older-than", "PT0S"], env);
    recipes_agree(root, env, true, "compacted and vacuumed");
    let values = {
        let server = Server::start_with(root, env);
        corrections(scratch, &server.base)
    };
    let values = values.to_str().unwrap();
    hydro(
        &["import", "--out", root, "--append", "--values", values],
        env,
    );
    recipes_agree(root, env, false, "appended to a compacted month");
    hydro(&["vacuum", "--out", root, "--older-than", "PT0S"], env);
    recipes_agree(root, env, true, "appended and vacuumed");
}

const ARCHIVE: [&str; 8] = [
    "--stations",
    "4",
    "--years",
    "2",
    "--seed",
    "5",
    "--start",
    "2023-01-01",
];

#[test]
fn a_directory_reads_in_place_as_the_api_serves_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("archive");
    generate(&root, &ARCHIVE);
    through_its_life(root.to_str().unwrap(), &[], dir.path());
}

#[test]
fn a_bucket_reads_in_place_as_the_api_serves_it() {
    let s3 = S3::start();
    let env = s3.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["generate", "--out", "s3://open/archive"];
    args.extend(ARCHIVE);
    hydro(&args, &env);
    through_its_life("s3://open/archive", &env, dir.path());
}
