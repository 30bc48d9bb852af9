//! Who may speak Flight SQL: the same credentials as HTTP (`X-API-Key`, a bearer JWT, Basic;
//! see [`crate::http::access`]), sent as gRPC metadata on every call, or once in the Flight
//! handshake, which answers with a session token for the calls after it.
//!
//! A session token is a JWT signed with a key this process drew at start (HS256), naming
//! nothing but when it expires: checking one costs a signature, not an argon2 verification
//! as Basic does, and no table of sessions grows with the number of clients. Tokens die with
//! the process; a client whose token is refused does the handshake again (as the ADBC driver
//! does on a new connection).

use crate::http::access::Gate;
use crate::http::error::ApiError;
use http::HeaderMap;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, decode, encode};
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a session token is good for: a working day of queries from one connection.
const SESSION: Duration = Duration::from_secs(12 * 3600);

/// Whom tokens name (and so, never a token of the deployment's own JWT issuer).
const ISSUER: &str = "hydro-flight-sql";

#[derive(Serialize, Deserialize)]
struct Claims {
    iss: String,
    exp: u64,
}

pub struct Sessions {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl Sessions {
    /// Sessions signed with a key drawn from the OS now.
    pub fn new() -> Self {
        use argon2::password_hash::rand_core::{OsRng, RngCore};
        let mut key = [0u8; 32];
        OsRng.fill_bytes(&mut key);
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.validate_aud = false;
        validation.leeway = 0;
        Self {
            encoding: EncodingKey::from_secret(&key),
            decoding: DecodingKey::from_secret(&key),
            validation,
        }
    }

    /// A new session token.
    pub fn token(&self) -> Result<String, ApiError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let claims = Claims {
            iss: ISSUER.into(),
            exp: (now + SESSION).as_secs(),
        };
        encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(|e| ApiError::Internal(format!("signing a Flight session token: {e}")))
    }

    /// Lets a call through: a session token of this process, or else the credentials the
    /// gate takes.
    pub fn admit(&self, gate: &Gate, headers: &HeaderMap) -> Result<(), ApiError> {
        if !gate.restricted() {
            return Ok(());
        }
        if let Some(token) = bearer(headers)
            && decode::<Claims>(token, &self.decoding, &self.validation).is_ok()
        {
            return Ok(());
        }
        gate.check(headers)
    }
}

/// The token of `authorization: Bearer <token>`.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}
