//! Typed identifiers. An id exists only through [`FromStr`], which rejects everything that
//! could escape a storage path (`/`, `..`, `=`, control characters, over-long input), so an id
//! that reaches the planner can never name a file outside its partition.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Longest id we accept (64 characters, DESIGN.md "Ids").
pub(crate) const MAX_ID_LEN: usize = 64;

/// Why a text is not an id. The message echoes at most a short prefix of the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidId(String);

fn validate(kind: &str, s: &str) -> Result<(), InvalidId> {
    // Made only for a message: ids are checked by the million when a files table is read.
    let shown = || -> String { s.chars().take(24).filter(|c| !c.is_control()).collect() };
    if s.is_empty() {
        return Err(InvalidId(format!("{kind} id must not be empty")));
    }
    if s.len() > MAX_ID_LEN {
        return Err(InvalidId(format!(
            "{kind} id '{}…' is longer than {MAX_ID_LEN} characters",
            shown()
        )));
    }
    let first_ok = s.as_bytes()[0].is_ascii_alphanumeric();
    let rest_ok = s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if !first_ok || !rest_ok || s.contains("..") {
        return Err(InvalidId(format!(
            "{kind} id '{}' must match [A-Za-z0-9][A-Za-z0-9._-]{{0,63}} without '..'",
            shown()
        )));
    }
    Ok(())
}

/// An id made from text the caller already holds: the catalog holds each distinct id once,
/// however many parameters, characteristics and indexes name it. Clones share the text too.
pub(crate) trait SharedId: Sized {
    fn parse_shared(s: Arc<str>) -> Result<Self, InvalidId>;
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The same id in a copy of its text of its own.
            pub fn relocated(&self) -> Self {
                Self(Arc::from(&*self.0))
            }
        }

        impl SharedId for $name {
            fn parse_shared(s: Arc<str>) -> Result<Self, InvalidId> {
                validate($kind, &s)?;
                Ok(Self(s))
            }
        }

        impl FromStr for $name {
            type Err = InvalidId;
            fn from_str(s: &str) -> Result<Self, InvalidId> {
                validate($kind, s)?;
                Ok(Self(Arc::from(s)))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

id_type!(
    /// A station id (UUIDs in the demo data).
    StationId,
    "station"
);
id_type!(
    /// A parameter id: a slug of quantity and interval, e.g. `water-level-15min`.
    ParameterId,
    "parameter"
);
id_type!(
    /// A characteristic id: a slug such as `mhw` or `mark-1`.
    CharacteristicId,
    "characteristic"
);

/// A series: a station's parameter.
pub type Series = (StationId, ParameterId);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_uuids_and_slugs() {
        for ok in [
            "6b3a1e0c-1f2d-4c55-9a3e-2f1d0c9b8a71",
            "water-level-15min",
            "mhw",
            "A.b_c-1",
        ] {
            assert!(ok.parse::<StationId>().is_ok(), "{ok}");
        }
    }

    #[test]
    fn rejects_everything_that_could_escape_a_path() {
        let long = "a".repeat(65);
        for bad in [
            "", "..", "a..b", "../etc", "a/b", "a\\b", "a=b", "a\0b", "a b", ".hidden", "-x",
            "%2F", "ä", &long,
        ] {
            assert!(bad.parse::<StationId>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn error_message_truncates_the_echo() {
        let long = "x".repeat(1000);
        let err = long.parse::<ParameterId>().unwrap_err().to_string();
        assert!(err.len() < 120, "{err}");
    }
}
