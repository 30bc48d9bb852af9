//! Access control for `access = "restricted"`: API keys (`X-API-Key`, stored as SHA-256),
//! bearer JWTs (HS256 secret or RS256/ES256 public key; exp, nbf, iss, aud checked) and Basic
//! users (argon2 password hashes). Secrets are compared in constant time; an unknown Basic
//! user costs the same argon2 verification as a known one.

use crate::config::{Access, Config};
use crate::http::error::ApiError;
use argon2::{Argon2, PasswordHash, PasswordVerifier};
use base64::Engine;
use http::{HeaderMap, header};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

const CHALLENGE: &str = "Bearer realm=\"hydro\", Basic realm=\"hydro\", charset=\"UTF-8\"";

/// Argon2 hash used when the Basic user does not exist, so that timing does not tell.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$E3k6MvxU4GyXHfk3E8U6aG0Jb0m0n3mZyU4c7mH2nCM";

pub struct Gate {
    restricted: bool,
    key_hashes: Vec<[u8; 32]>,
    users: Vec<(String, String)>,
    jwt: Vec<(DecodingKey, Validation)>,
    required_scope: Option<String>,
}

fn unauthorized(detail: &str) -> ApiError {
    ApiError::Unauthorized {
        challenge: CHALLENGE.into(),
        detail: detail.into(),
    }
}

/// `sha256:<hex>` of an API key, as the config stores it.
pub fn hash_key(key: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(key.as_bytes())))
}

impl Gate {
    pub fn new(config: &Config) -> Result<Self, String> {
        let key_hashes = config
            .api_key_hashes
            .iter()
            .map(|h| {
                let hex = h
                    .strip_prefix("sha256:")
                    .ok_or("api_key_hashes entries must be sha256:<hex>")?;
                let bytes = hex::decode(hex).map_err(|_| "api_key_hashes: bad hex")?;
                <[u8; 32]>::try_from(bytes.as_slice())
                    .map_err(|_| "api_key_hashes: need 32 bytes".to_owned())
            })
            .collect::<Result<Vec<_>, String>>()?;
        let users = config
            .basic_users
            .iter()
            .map(|u| {
                let (name, hash) = u
                    .split_once(':')
                    .ok_or("basic_users entries must be name:<argon2 hash>")?;
                PasswordHash::new(hash).map_err(|e| format!("basic_users {name}: {e}"))?;
                Ok((name.to_owned(), hash.to_owned()))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let validation = |alg| {
            let mut v = Validation::new(alg);
            v.validate_nbf = true;
            v.leeway = 30;
            if let Some(iss) = &config.jwt_issuer {
                v.set_issuer(&[iss]);
            }
            match &config.jwt_audience {
                Some(aud) => v.set_audience(&[aud]),
                None => v.validate_aud = false,
            }
            v
        };
        let mut jwt = Vec::new();
        if let Some(secret) = &config.jwt_secret {
            jwt.push((
                DecodingKey::from_secret(secret.as_bytes()),
                validation(Algorithm::HS256),
            ));
        }
        if let Some(pem) = &config.jwt_public_key_pem {
            if let Ok(k) = DecodingKey::from_rsa_pem(pem.as_bytes()) {
                jwt.push((k, validation(Algorithm::RS256)));
            } else if let Ok(k) = DecodingKey::from_ec_pem(pem.as_bytes()) {
                jwt.push((k, validation(Algorithm::ES256)));
            } else {
                return Err("jwt_public_key_pem is neither an RSA nor an EC public key".into());
            }
        }
        let restricted = config.access == Access::Restricted;
        if restricted && key_hashes.is_empty() && users.is_empty() && jwt.is_empty() {
            return Err(
                "access = restricted needs api_key_hashes, basic_users or a JWT key".into(),
            );
        }
        Ok(Self {
            restricted,
            key_hashes,
            users,
            jwt,
            required_scope: config.jwt_required_scope.clone(),
        })
    }

    pub fn restricted(&self) -> bool {
        self.restricted
    }

    /// Lets the request through, or says why not (401 or 403).
    pub fn check(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        if !self.restricted {
            return Ok(());
        }
        if let Some(key) = headers.get("x-api-key") {
            let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
            let hit = self
                .key_hashes
                .iter()
                .fold(subtle::Choice::from(0), |acc, h| acc | h.ct_eq(&digest));
            return if bool::from(hit) {
                Ok(())
            } else {
                Err(unauthorized("the API key is not valid"))
            };
        }
        let Some(auth) = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
        else {
            return Err(unauthorized(
                "credentials are required: X-API-Key, Bearer token or Basic",
            ));
        };
        let (scheme, credentials) = auth.split_once(' ').unwrap_or((auth, ""));
        match scheme.to_ascii_lowercase().as_str() {
            "bearer" => self.bearer(credentials.trim()),
            "basic" => self.basic(credentials.trim()),
            _ => Err(unauthorized("unsupported authorization scheme")),
        }
    }

    fn bearer(&self, token: &str) -> Result<(), ApiError> {
        for (key, validation) in &self.jwt {
            if let Ok(data) = decode::<serde_json::Value>(token, key, validation) {
                if let Some(scope) = &self.required_scope {
                    let scopes = data
                        .claims
                        .get("scope")
                        .and_then(|s| s.as_str())
                        .unwrap_or("");
                    if !scopes.split(' ').any(|s| s == scope) {
                        return Err(ApiError::Forbidden(format!(
                            "the token lacks the scope '{scope}'"
                        )));
                    }
                }
                return Ok(());
            }
        }
        Err(unauthorized(
            "the bearer token is not valid (signature, exp, nbf, iss or aud)",
        ))
    }

    fn basic(&self, encoded: &str) -> Result<(), ApiError> {
        let bad = || unauthorized("user name or password is not valid");
        // Padding optional: Go's gRPC clients (the ADBC Flight SQL driver) send Basic
        // credentials unpadded.
        const LENIENT: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            base64::engine::GeneralPurposeConfig::new()
                .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
        );
        let decoded = LENIENT.decode(encoded).map_err(|_| bad())?;
        let text = String::from_utf8(decoded).map_err(|_| bad())?;
        let (user, password) = text.split_once(':').ok_or_else(bad)?;
        let stored = self
            .users
            .iter()
            .find(|(name, _)| name.as_bytes().ct_eq(user.as_bytes()).into());
        let hash = stored.map_or(DUMMY_HASH, |(_, h)| h.as_str());
        let ok = PasswordHash::new(hash)
            .map(|h| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &h)
                    .is_ok()
            })
            .unwrap_or(false);
        if ok && stored.is_some() {
            Ok(())
        } else {
            Err(bad())
        }
    }
}

/// A new random API key: 32 bytes from the OS, URL-safe base64.
pub fn new_key() -> String {
    use argon2::password_hash::rand_core::{OsRng, RngCore};
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// An argon2id PHC string for a password.
pub fn hash_password(password: &str) -> Result<String, String> {
    use argon2::password_hash::{PasswordHasher, SaltString, rand_core::OsRng};
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}
