//! Service settings: a TOML file, overridden by `HYDRO_<NAME>` environment variables (the
//! setting's name in upper snake case, e.g. `HYDRO_PUBLISHER_NAME`). Every setting is listed
//! with its default in `hydro serve --help` and the README.

use chrono::FixedOffset;
use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    Extended,
    Basic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Public,
    Restricted,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub title: String,
    /// `meta.version`: the detailed API version (MAJOR.MINOR.PATCH).
    pub version: String,
    pub description: String,
    pub description_url: String,
    pub publisher_name: String,
    pub publisher_email: String,
    pub license_name: String,
    pub license_url: String,
    /// Public base address including `/v1`; default `http://<bind>/v1`.
    pub base_url: Option<String>,
    /// Output time zone as a fixed offset (`+00:00`, `+01:00`). Part of the API version:
    /// change it only with a new major version.
    pub output_offset: String,
    pub variant: Variant,
    /// `Cache-Control` of successful responses.
    pub cache_control: String,
    /// Heavy queries at once (value downloads, station lists over 64 stations or sorted);
    /// more get 503 + Retry-After.
    pub max_heavy_queries: usize,
    /// Seconds a client may take to send its request headers.
    pub header_timeout_secs: u64,
    /// Seconds in-flight responses get to finish on shutdown.
    pub shutdown_grace_secs: u64,
    /// Requests per second and client address (0: no rate limit); bursts up to `rate_burst`.
    pub rate_limit_per_second: f64,
    pub rate_burst: u32,
    /// `public` (default) or `restricted` (credentials required except for /v1/health).
    pub access: Access,
    /// API keys as `sha256:<hex>` of the key (`hydro hash-key` makes one).
    pub api_key_hashes: Vec<String>,
    /// Basic users as `name:<argon2 PHC string>` (`hydro hash-password` makes one).
    pub basic_users: Vec<String>,
    /// HS256 secret for bearer tokens.
    pub jwt_secret: Option<String>,
    /// RS256 or ES256 public key (PEM) for bearer tokens.
    pub jwt_public_key_pem: Option<String>,
    /// Required `iss` and `aud` of bearer tokens, when set.
    pub jwt_issuer: Option<String>,
    pub jwt_audience: Option<String>,
    /// A token must carry this value in its `scope` claim to be let in (403 otherwise).
    pub jwt_required_scope: Option<String>,
    /// Origins allowed by CORS when restricted (echoed back; never `*`).
    pub cors_origins: Vec<String>,
    /// Bytes of finished value answers kept on disk and sent again (0: none kept).
    pub answer_store_bytes: u64,
    /// Where the answer store makes its private directory (`/var/tmp` when unset: on disk,
    /// where `/tmp` may be memory).
    pub answer_store_dir: Option<String>,
    /// Bytes of value files kept in memory once read, so that answers made again from them do
    /// not read them again (0: none kept).
    pub value_cache_bytes: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            title: "Hydro API".into(),
            version: "1.0.0".into(),
            description: "Hydrological stations, measurement series and characteristic values"
                .into(),
            description_url: "https://hydro-api.dev/docs".into(),
            publisher_name: "Hydro API demo".into(),
            publisher_email: "data@hydro-api.dev".into(),
            license_name: "CC BY 4.0".into(),
            license_url: "https://creativecommons.org/licenses/by/4.0/".into(),
            base_url: None,
            output_offset: "+00:00".into(),
            variant: Variant::Extended,
            cache_control: "public, max-age=60".into(),
            max_heavy_queries: 64,
            header_timeout_secs: 10,
            shutdown_grace_secs: 20,
            rate_limit_per_second: 0.0,
            rate_burst: 50,
            access: Access::Public,
            api_key_hashes: Vec::new(),
            basic_users: Vec::new(),
            jwt_secret: None,
            jwt_public_key_pem: None,
            jwt_issuer: None,
            jwt_audience: None,
            jwt_required_scope: None,
            cors_origins: Vec::new(),
            answer_store_bytes: 1 << 30,
            answer_store_dir: None,
            value_cache_bytes: 64 << 20,
        }
    }
}

impl Config {
    /// Reads the file (if any), then applies `HYDRO_*` variables.
    pub fn load(file: Option<&std::path::Path>) -> Result<Self, String> {
        let text = match file {
            Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
            None => String::new(),
        };
        let mut table: toml::Table = text.parse().map_err(|e| format!("config: {e}"))?;
        for (key, value) in std::env::vars() {
            let Some(name) = key.strip_prefix("HYDRO_") else {
                continue;
            };
            let name = name.to_ascii_lowercase();
            if !Self::KEYS.contains(&name.as_str()) {
                continue;
            }
            let v = if Self::LIST_KEYS.contains(&name.as_str()) {
                // Whitespace separates items; commas too, except in basic_users, whose argon2
                // hashes contain commas.
                let commas = name != "basic_users";
                toml::Value::Array(
                    value
                        .split(|c: char| c.is_whitespace() || (commas && c == ','))
                        .filter(|x| !x.is_empty())
                        .map(|x| toml::Value::String(x.to_owned()))
                        .collect(),
                )
            } else if let Ok(n) = value.parse::<i64>() {
                toml::Value::Integer(n)
            } else if let Ok(f) = value.parse::<f64>() {
                toml::Value::Float(f)
            } else {
                toml::Value::String(value)
            };
            table.insert(name, v);
        }
        let config: Config = table.try_into().map_err(|e| format!("config: {e}"))?;
        config.offset()?;
        Ok(config)
    }

    const KEYS: &'static [&'static str] = &[
        "title",
        "version",
        "description",
        "description_url",
        "publisher_name",
        "publisher_email",
        "license_name",
        "license_url",
        "base_url",
        "output_offset",
        "variant",
        "cache_control",
        "max_heavy_queries",
        "header_timeout_secs",
        "shutdown_grace_secs",
        "rate_limit_per_second",
        "rate_burst",
        "access",
        "api_key_hashes",
        "basic_users",
        "jwt_secret",
        "jwt_public_key_pem",
        "jwt_issuer",
        "jwt_audience",
        "jwt_required_scope",
        "cors_origins",
        "answer_store_bytes",
        "answer_store_dir",
        "value_cache_bytes",
    ];
    const LIST_KEYS: &'static [&'static str] = &["api_key_hashes", "basic_users", "cors_origins"];

    pub fn offset(&self) -> Result<FixedOffset, String> {
        let s = self.output_offset.as_str();
        if s.eq_ignore_ascii_case("utc") || s == "Z" {
            return FixedOffset::east_opt(0).ok_or_else(|| "offset".into());
        }
        let bad = || format!("output_offset '{s}' must be ±HH:MM");
        let (sign, rest) = match s.as_bytes().first() {
            Some(b'+') => (1, &s[1..]),
            Some(b'-') => (-1, &s[1..]),
            _ => return Err(bad()),
        };
        let (h, m) = rest.split_once(':').ok_or_else(bad)?;
        let (h, m): (i32, i32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
        FixedOffset::east_opt(sign * (h * 3600 + m * 60)).ok_or_else(bad)
    }
}
