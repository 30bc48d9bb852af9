//! Arrow Flight SQL (`flight_bind`) as its users meet it: the ADBC driver and pyarrow.flight
//! (`tests/flight.py`, `tests/sql.py`) against the real server. Answers equal DuckDB's over
//! the files and `/v1/sql`'s; tables and columns listed; prepared statements; every refused
//! statement kind; the version answered from and `as-of`; each guardrail tripped; access by
//! API key, Basic through the handshake, bearer JWT and session token, and refused without.

mod common;

use common::{Server, dataset, oracle, serve_refused};
use std::io::Write;
use std::process::{Command, Stdio};

const FLIGHT: (&str, &str) = ("HYDRO_FLIGHT_BIND", "127.0.0.1:0");

fn flight_of(server: &Server) -> &str {
    server.flight.as_deref().expect("Flight SQL address")
}

#[test]
fn answers_equal_duckdb_and_v1_sql() {
    let server = Server::start_with(dataset(), &[FLIGHT]);
    let said = oracle(
        "sql.py",
        &[
            &server.base,
            dataset().to_str().unwrap(),
            flight_of(&server),
        ],
    );
    assert!(
        said.contains("queries through /v1/sql and Flight SQL agree with DuckDB"),
        "{said}"
    );
}

#[test]
fn tables_statements_refusals_and_versions() {
    let server = Server::start_with(dataset(), &[FLIGHT]);
    let said = oracle("flight.py", &["open", flight_of(&server), &server.base]);
    assert!(said.contains("flight open:"), "{said}");
}

#[test]
fn guardrails_trip_as_on_v1_sql() {
    let server = Server::start_with(
        dataset(),
        &[
            FLIGHT,
            ("HYDRO_SQL_MAX_ROWS", "100"),
            ("HYDRO_SQL_MEMORY_BYTES", "2000000"),
            ("HYDRO_SQL_SPILL_BYTES", "0"),
            ("HYDRO_SQL_TIMEOUT_SECS", "2"),
            ("HYDRO_SQL_QUERIES_AT_ONCE", "1"),
        ],
    );
    let said = oracle("flight.py", &["limits", flight_of(&server)]);
    assert!(said.contains("flight limits:"), "{said}");
}

#[test]
fn flight_sql_is_behind_the_same_door() {
    let (key, key_hash) = common::new_api_key();
    let password = "correct horse";
    let users = format!("ada:{}", password_hash(password));
    let secret = "a secret of thirty-two bytes or more";
    let server = Server::start_with(
        dataset(),
        &[
            FLIGHT,
            ("HYDRO_ACCESS", "restricted"),
            ("HYDRO_API_KEY_HASHES", &key_hash),
            ("HYDRO_BASIC_USERS", &users),
            ("HYDRO_JWT_SECRET", secret),
        ],
    );
    let said = oracle(
        "flight.py",
        &["access", flight_of(&server), &key, "ada", password, secret],
    );
    assert!(said.contains("flight access:"), "{said}");
}

#[test]
fn flight_needs_sql_on() {
    for env in [
        [FLIGHT, ("HYDRO_VARIANT", "basic")],
        [FLIGHT, ("HYDRO_SQL", "false")],
    ] {
        let said = serve_refused(&env);
        assert!(
            said.contains("flight_bind serves SQL: it needs sql = true"),
            "{said}"
        );
    }
    let said = serve_refused(&[("HYDRO_FLIGHT_BIND", "not an address")]);
    assert!(said.contains("flight_bind"), "{said}");
}

/// `hydro hash-password` of `password`.
fn password_hash(password: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hydro"))
        .arg("hash-password")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run hydro hash-password");
    writeln!(child.stdin.take().unwrap(), "{password}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}
