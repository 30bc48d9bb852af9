//! What a Flight SQL ticket or prepared statement carries: the statement and the version it
//! was planned on, so that its rows come from that version even when another is published
//! between `GetFlightInfo` and `DoGet`, on this server or on a replica behind the same
//! balancer. Nothing is kept on the server: a handle is its own state, and a forged one can
//! ask no more than the statement it holds (the call's credentials are checked as ever).

use crate::http::error::ApiError;
use bytes::Bytes;

/// Marks the handles of this encoding.
const TAG: &str = "hydro-sql-1";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle {
    /// The version's id, as `asOf` takes it.
    pub version: String,
    pub statement: String,
}

impl Handle {
    pub fn encode(&self) -> Bytes {
        Bytes::from(format!("{TAG}\n{}\n{}", self.version, self.statement))
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, ApiError> {
        let bad = || ApiError::BadRequest("not a ticket or statement handle of this server".into());
        let text = std::str::from_utf8(bytes).map_err(|_| bad())?;
        let mut parts = text.splitn(3, '\n');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(TAG), Some(version), Some(statement)) if !version.is_empty() => Ok(Self {
                version: version.to_owned(),
                statement: statement.to_owned(),
            }),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_reads_back_as_written_and_others_are_refused() {
        let handle = Handle {
            version: "3-20261126T120803.656Z".into(),
            statement: "SELECT 1\nFROM values".into(),
        };
        assert_eq!(Handle::decode(&handle.encode()).unwrap(), handle);
        for bad in [
            &b""[..],
            b"SELECT 1",
            b"hydro-sql-1\n\nSELECT 1",
            b"\xff\xfe",
        ] {
            assert!(Handle::decode(bad).is_err(), "{bad:?}");
        }
    }
}
