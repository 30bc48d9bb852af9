//! An agency's exports import as they come, with the options `data/README.md` documents and
//! no converter: the commands are taken from that document and run as it gives them, and the
//! series served are compared with readers of their own (`tests/agency.py`: the PyPI `zrxp`
//! reader, pandas). Then what a user of such an archive does by accident or on purpose: an
//! import without `--append` or `--replace` is refused, a replacement of most of it asks for
//! `--yes`, `hydro rollback` makes an earlier version current again, and gauge numbers work
//! unquoted in SQL. Every new option has its bad forms refused with a clear message.

mod common;

use common::{Server, get, oracle};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample/agency")
}

/// The `hydro import` commands of `data/README.md`'s agency example, as argument lists, with
/// `$A` the sample directory and `/tmp/agency` replaced by `out`.
fn documented_imports(out: &Path) -> Vec<Vec<String>> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/README.md"))
            .unwrap();
    let start = readme
        .find("A=data/sample/agency")
        .expect("the agency example");
    let block = &readme[start..readme[start..].find("```").unwrap() + start];
    let joined = block.replace("\\\n", " ");
    let commands: Vec<Vec<String>> = joined
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("hydro import"))
        .map(|l| {
            l.split_whitespace()
                .skip(1)
                .map(|w| {
                    w.replace("$A", samples().to_str().unwrap())
                        .replace("/tmp/agency", out.to_str().unwrap())
                })
                .collect()
        })
        .collect();
    assert_eq!(commands.len(), 4, "{block}");
    commands
}

fn hydro(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hydro"))
        .args(args)
        .output()
        .unwrap()
}

fn succeeded(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn failed(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn manifest(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_exports_import_and_agree_with_their_readers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("agency");
    for args in documented_imports(&out) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let done = hydro(&args);
        succeeded(&done);
        // The -999 of the WISKI export were declared missing: no sentinel is warned of.
        let said = String::from_utf8_lossy(&done.stderr);
        assert!(!said.contains("sentinel"), "{args:?}: {said}");
    }
    let m = manifest(&out);
    assert_eq!(m["counts"]["stations"], 3, "{m}");
    assert_eq!(m["generation"], 4, "{m}");
    let server = Server::start_with(&out, &[]);
    let said = oracle("agency.py", &[&server.base, samples().to_str().unwrap()]);
    assert!(said.contains("agency files agree"), "{said}");

    // Gauge numbers, unquoted as agency staff write them, answer what the quoted ids do.
    let b = &server.base;
    let count = |w: &str| {
        format!(
            "{b}/sql?format=csv&q={}",
            format!("SELECT count(*) AS n FROM values WHERE {w}").replace(' ', "+")
        )
    };
    let quoted = get(&count("station='2710080'")).await.text();
    assert!(!quoted.contains("\r\n0\r\n"), "{quoted}");
    assert_eq!(get(&count("station=2710080")).await.text(), quoted);
    let both = get(&count("station+IN+(2710080,2710090)")).await;
    assert_eq!(both.status, 200, "{}", both.text());
    let texts = get(&count("station+IN+('2710080','2710090')")).await.text();
    assert_eq!(both.text(), texts);
    // A mistyped gauge number: the nearest ids, and `q` finds stations by id.
    let typo = get(&format!("{b}/stations/2710070")).await;
    assert_eq!(typo.status, 404);
    let detail = typo.json()["detail"].as_str().unwrap().to_owned();
    assert!(
        detail.contains("did you mean '2710080' or '2710090'"),
        "{detail}"
    );
    let found = get(&format!("{b}/stations?q=2710080&fields=id"))
        .await
        .json();
    assert_eq!(
        found["data"],
        serde_json::json!([{"id": "2710080"}]),
        "{found}"
    );
}

/// An archive is never replaced by accident: without `--append` or `--replace` an import is
/// refused, a replacement of most of its values needs `--yes` off a terminal, and the version
/// replaced comes back with `hydro rollback` (a new version, the others as they were).
#[test]
fn no_archive_is_replaced_by_accident_and_a_replacement_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("agency");
    let first = documented_imports(&out).swap_remove(0);
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    succeeded(&hydro(&first));
    let before = std::fs::read(out.join("manifest.json")).unwrap();
    let values = manifest(&out)["counts"]["values"].clone();

    let one = dir.path().join("one.csv");
    std::fs::write(
        &one,
        "#Station;2710080\n#Parameter;W\nDatum;Uhrzeit;Wert\n01.01.2024;00:00;300,0\n",
    )
    .unwrap();
    let one = one.to_str().unwrap();
    let stations = samples().join("stammdaten.csv");
    let parameters = samples().join("parameter.csv");
    let mapping = samples().join("wiski.toml");
    let again = |more: &[&str]| {
        let mut args = vec![
            "import",
            "--out",
            out.to_str().unwrap(),
            "--encoding",
            "latin1",
            "--time-zone",
            "MEZ",
            "--quality",
            "good",
            "--mapping",
            mapping.to_str().unwrap(),
            "--stations",
            stations.to_str().unwrap(),
            "--parameters",
            parameters.to_str().unwrap(),
            "--values",
            one,
        ];
        args.extend(more);
        hydro(&args)
    };
    let refused = failed(&again(&[]));
    assert!(
        refused.contains("--append") && refused.contains("--replace"),
        "{refused}"
    );
    assert_eq!(std::fs::read(out.join("manifest.json")).unwrap(), before);
    // Standard input is no terminal here: a replacement of most values asks for --yes.
    let refused = failed(&again(&["--replace"]));
    assert!(
        refused.contains("less than half") && refused.contains("--yes"),
        "{refused}"
    );
    assert_eq!(std::fs::read(out.join("manifest.json")).unwrap(), before);
    succeeded(&again(&["--replace", "--yes"]));
    assert_eq!(manifest(&out)["counts"]["values"], 1);
    assert_eq!(manifest(&out)["generation"], 2);

    let out_arg = out.to_str().unwrap();
    let said = succeeded(&hydro(&["rollback", "--out", out_arg, "--to", "1"]));
    assert!(said.contains("equal to version 1"), "{said}");
    let m = manifest(&out);
    assert_eq!(
        (m["generation"].clone(), m["counts"]["values"].clone()),
        (3.into(), values)
    );
    assert_eq!(m["publish"]["kind"], "rollback", "{m}");
    let refused = failed(&hydro(&["rollback", "--out", out_arg, "--to", "3"]));
    assert!(refused.contains("current one"), "{refused}");
    let refused = failed(&hydro(&["rollback", "--out", out_arg, "--to", "9"]));
    assert!(
        refused.contains("not kept") && refused.contains("1, 2, 3"),
        "{refused}"
    );
    let refused = failed(&hydro(&["rollback", "--out", out_arg, "--to", "first"]));
    assert!(refused.contains("--to"), "{refused}");
}

/// Bad forms of every option and of the mapping file: each a clear error naming what is
/// wrong, and nothing published.
#[test]
fn bad_options_and_mappings_are_named_and_publish_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let a = samples();
    let at = |name: &str| a.join(name).to_str().unwrap().to_owned();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let typo = write("typo.toml", "[values.columns]\nvalu = \"Wert\"\n");
    let not_toml = write("broken.toml", "[values.columns\n");
    let wrong_column = write(
        "column.toml",
        "[values.columns]\nvalue = \"Messwert\"\n[values.constants]\nstationId = \"2710080\"\nparameterId = \"W\"\n[values.columns.x]\n",
    );
    let skipped_hour = write(
        "dst.csv",
        "#Station;2710080\n#Parameter;W\nDatum;Uhrzeit;Wert\n31.03.2024;02:30;300,0\n",
    );
    let no_block = write("blocks.csv", "Datum;Uhrzeit;Wert\n30.03.2024;00:00;311,0\n");
    let catalog = [
        "--mapping".to_owned(),
        at("wiski.toml"),
        "--encoding".into(),
        "latin1".into(),
        "--stations".into(),
        at("stammdaten.csv"),
        "--parameters".into(),
        at("parameter.csv"),
    ];
    let run = |options: &[&str], extra_catalog: bool| {
        let out = dir.path().join("out");
        let mut args: Vec<String> = vec![
            "import".into(),
            "--out".into(),
            out.to_str().unwrap().into(),
        ];
        if extra_catalog {
            args.extend(catalog.iter().cloned());
        }
        args.extend(options.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let said = failed(&hydro(&args));
        assert!(!out.join("manifest.json").exists(), "{options:?} published");
        said
    };
    let stations = at("stammdaten.csv");
    let parameters = at("parameter.csv");
    let wiski = at("wiski-export.csv");
    for (options, catalog, says) in [
        (
            vec!["--encoding", "ebcdic", "--values", &wiski],
            false,
            "not an encoding",
        ),
        (
            vec!["--delimiter", "::", "--values", &wiski],
            true,
            "give , ; | tab",
        ),
        (
            vec!["--decimal", "'", "--values", &wiski],
            true,
            "give . or ,",
        ),
        (
            vec!["--time-zone", "Europe/Atlantis", "--values", &wiski],
            true,
            "not a zone",
        ),
        (
            vec!["--quality", "great", "--values", &wiski],
            true,
            "not one of good",
        ),
        (
            vec![
                "--mapping",
                &typo,
                "--stations",
                &stations,
                "--parameters",
                &parameters,
                "--values",
                &wiski,
            ],
            false,
            "valu",
        ),
        (
            vec![
                "--mapping",
                &not_toml,
                "--stations",
                &stations,
                "--parameters",
                &parameters,
                "--values",
                &wiski,
            ],
            false,
            "broken.toml",
        ),
        (
            vec![
                "--mapping",
                &wrong_column,
                "--stations",
                &stations,
                "--parameters",
                &parameters,
                "--values",
                &wiski,
            ],
            false,
            "column.toml",
        ),
        // The export without the zone of its times, or without --quality, or without --missing.
        (
            vec!["--quality", "good", "--values", &wiski],
            true,
            "--time-zone",
        ),
        (
            vec!["--time-zone", "MEZ", "--values", &wiski],
            true,
            "--quality",
        ),
        // Latin-1 read as UTF-8: the mapping's column names are not found.
        (
            vec![
                "--mapping",
                &at("wiski.toml"),
                "--stations",
                &stations,
                "--parameters",
                &parameters,
                "--time-zone",
                "MEZ",
                "--quality",
                "good",
                "--values",
                &wiski,
            ],
            false,
            "not UTF-8",
        ),
        // A wall-clock time in the hour skipped in spring.
        (
            vec![
                "--time-zone",
                "Europe/Berlin",
                "--quality",
                "good",
                "--values",
                &skipped_hour,
            ],
            true,
            "daylight saving",
        ),
        // Rows of a file of blocks before any block names its station.
        (
            vec![
                "--time-zone",
                "MEZ",
                "--quality",
                "good",
                "--values",
                &no_block,
            ],
            true,
            "#Station",
        ),
    ] {
        let said = run(&options, catalog);
        assert!(said.contains(says), "{options:?}: '{says}' not in {said}");
    }
    // A wide sheet's mapping (with the master data's) over a file without its columns.
    let master = std::fs::read_to_string(a.join("wiski.toml")).unwrap();
    let master = &master[..master.find("# The export").unwrap()];
    let wide_columns = std::fs::read_to_string(a.join("pegel-wide.toml")).unwrap();
    let wide = write("wide.toml", &format!("{master}\n{wide_columns}"));
    let said = run(
        &[
            "--mapping",
            &wide,
            "--stations",
            &stations,
            "--parameters",
            &parameters,
            "--encoding",
            "latin1",
            "--time-zone",
            "MEZ",
            "--quality",
            "good",
            "--values",
            &wiski,
        ],
        false,
    );
    assert!(said.contains("[[values.wide]]"), "{said}");
    // Strict: the -999 not declared missing fail the import, naming the series and count.
    let said = run(
        &[
            "--strict",
            "--time-zone",
            "MEZ",
            "--quality",
            "good",
            "--values",
            &wiski,
        ],
        true,
    );
    assert!(
        said.contains("2710080/W: 2 values of -999 look like a missing-value sentinel"),
        "{said}"
    );
}
