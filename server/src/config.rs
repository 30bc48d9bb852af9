//! Service settings, defined once: each setting's name, type, default and help text are
//! written in the one `settings!` list below, which makes the [`Config`] struct (read from a
//! TOML file), its defaults, the `HYDRO_<NAME>` environment variables (the name in upper snake
//! case, e.g. `HYDRO_PUBLISHER_NAME`, winning over the file) and the settings part of
//! `hydro serve --help` ([`help`]).
//!
//! An environment value is parsed as its setting's own type: `HYDRO_JWT_AUDIENCE=12345` is the
//! text "12345", `HYDRO_MAX_HEAVY_QUERIES=1.5` is an error. Lists are separated by whitespace
//! or commas (`basic_users` by whitespace only: argon2 hashes contain commas).

use hydro_engine::S3Settings;
use hydro_engine::Zone;
use serde::Deserialize;
use std::time::Duration;

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

/// How a setting's value is written, in TOML and in its environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    WholeNumber,
    Number,
    /// A list of texts; `commas`: whether commas separate items in the environment variable.
    List {
        commas: bool,
    },
    /// One of a few words.
    Choice(&'static [&'static str]),
    /// `true` or `false`.
    Boolean,
}

/// A setting as `hydro serve --help` and the environment see it.
#[derive(Debug)]
pub struct Setting {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
}

/// The kind of a setting's type and how its default is shown.
trait SettingType {
    const KIND: Kind;
    fn shown(&self) -> String;
}

impl SettingType for String {
    const KIND: Kind = Kind::Text;
    fn shown(&self) -> String {
        format!("{self:?}")
    }
}

impl SettingType for Option<String> {
    const KIND: Kind = Kind::Text;
    fn shown(&self) -> String {
        self.as_ref()
            .map_or_else(|| "unset".into(), |s| format!("{s:?}"))
    }
}

impl SettingType for Option<bool> {
    const KIND: Kind = Kind::Boolean;
    fn shown(&self) -> String {
        self.map_or_else(|| "unset".into(), |b| b.to_string())
    }
}

impl SettingType for bool {
    const KIND: Kind = Kind::Boolean;
    fn shown(&self) -> String {
        self.to_string()
    }
}

impl SettingType for u64 {
    const KIND: Kind = Kind::WholeNumber;
    fn shown(&self) -> String {
        self.to_string()
    }
}

impl SettingType for usize {
    const KIND: Kind = Kind::WholeNumber;
    fn shown(&self) -> String {
        self.to_string()
    }
}

impl SettingType for u32 {
    const KIND: Kind = Kind::WholeNumber;
    fn shown(&self) -> String {
        self.to_string()
    }
}

impl SettingType for f64 {
    const KIND: Kind = Kind::Number;
    fn shown(&self) -> String {
        self.to_string()
    }
}

impl SettingType for Vec<String> {
    const KIND: Kind = Kind::List { commas: true };
    fn shown(&self) -> String {
        format!("{self:?}")
    }
}

impl SettingType for Variant {
    const KIND: Kind = Kind::Choice(&["extended", "basic"]);
    fn shown(&self) -> String {
        format!("{self:?}").to_lowercase()
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// A time, a level, a target and `key=value` fields.
    Text,
    /// One JSON object a line, the fields at its top level.
    Json,
}

impl SettingType for LogFormat {
    const KIND: Kind = Kind::Choice(&["text", "json"]);
    fn shown(&self) -> String {
        format!("{self:?}").to_lowercase()
    }
}

impl SettingType for Access {
    const KIND: Kind = Kind::Choice(&["public", "restricted"]);
    fn shown(&self) -> String {
        format!("{self:?}").to_lowercase()
    }
}

macro_rules! settings {
    ($( $(#[doc = $doc:literal])+ $name:ident : $ty:ty = $default:expr $(, $list:ident)? ; )+) => {
        #[derive(Debug, Clone, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct Config {
            $( $(#[doc = $doc])+ pub $name: $ty, )+
        }

        impl Default for Config {
            fn default() -> Self {
                Self { $( $name: $default, )+ }
            }
        }

        /// Every setting, in the order of the list.
        pub const SETTINGS: &[Setting] = &[
            $( Setting {
                name: stringify!($name),
                kind: settings!(@kind $ty $(, $list)?),
                help: concat!($($doc),+),
            }, )+
        ];

        impl Config {
            /// Each setting's default as `hydro serve --help` shows it, in the order of
            /// [`SETTINGS`].
            fn defaults_shown() -> Vec<String> {
                let d = Self::default();
                vec![ $( SettingType::shown(&d.$name), )+ ]
            }
        }
    };
    (@kind $ty:ty) => { <$ty as SettingType>::KIND };
    // Whitespace-only lists: for items that contain commas.
    (@kind $ty:ty, SpaceList) => { Kind::List { commas: false } };
}

settings! {
    /// Service title (`meta.title`).
    title: String = "Hydro API".into();
    /// `meta.version`: the detailed API version (MAJOR.MINOR.PATCH).
    version: String = "1.0.0".into();
    /// `meta.description`.
    description: String = "Hydrological stations, measurement series and characteristic values".into();
    /// `meta.descriptionUrl`.
    description_url: String = "https://hydro-api.dev/docs".into();
    /// `meta.publisherName`.
    publisher_name: Option<String> = None;
    /// `meta.publisherEmail`.
    publisher_email: Option<String> = None;
    /// `meta.licenseName`.
    license_name: Option<String> = None;
    /// `meta.licenseUrl`.
    license_url: Option<String> = None;
    /// Public base address including `/v1`; unset: `http://<bind>/v1`.
    base_url: Option<String> = None;
    /// Output time zone: a fixed offset (`+00:00`, `+01:00`) or an IANA zone
    /// (`Europe/Berlin`, whose offset follows DST). Every answer's times are written in it
    /// unless a request gives `timeZone`. Part of the API version: change it only with a new
    /// major version.
    output_offset: String = "+00:00".into();
    /// `extended` (every format and resource) or `basic` (JSON only, no links, no
    /// characteristics).
    variant: Variant = Variant::Extended;
    /// `Cache-Control` of successful responses (`private, max-age=60` when restricted).
    cache_control: String = "public, max-age=60".into();
    /// Heavy queries at once (value downloads, station lists over 64 stations or sorted);
    /// more get 503 + Retry-After.
    max_heavy_queries: usize = 64;
    /// Series one `/v1/values` request may select; more is a 400.
    max_series_per_request: usize = 10_000;
    /// Whether `/v1/sql` answers SQL (the extended variant only).
    sql: bool = true;
    /// SQL queries at once; more get 429 + Retry-After.
    sql_queries_at_once: usize = 2;
    /// Bytes of memory one SQL query may hold; sorts, joins and aggregates spill to disk beyond
    /// it, and a query that needs more is a 422.
    sql_memory_bytes: u64 = 512 << 20;
    /// Bytes one SQL query may spill to disk (in the system's temporary directory).
    sql_spill_bytes: u64 = 2 << 30;
    /// Seconds one SQL query may run: 504 before its answer begins, the answer cut after.
    sql_timeout_secs: u64 = 60;
    /// Rows one SQL answer may have: 413 before it begins, the answer cut after.
    sql_max_rows: u64 = 10_000_000;
    /// Address (`host:port`) of Arrow Flight SQL: the tables, limits and access of `/v1/sql`
    /// over gRPC, without TLS. Unset: no Flight SQL.
    flight_bind: Option<String> = None;
    /// Log lines as `text` (`key=value` fields) or `json` (an object a line). Which lines:
    /// `HYDRO_LOG` (`info` when unset: a line a request, target `hydro::request`, besides
    /// warnings and errors; `warn` leaves the requests out, as does
    /// `info,hydro::request=off`; `debug` says more).
    log_format: LogFormat = LogFormat::Text;
    /// File the log is appended to; unset: standard error.
    log_file: Option<String> = None;
    /// Seconds a client may take to send its request headers.
    header_timeout_secs: u64 = 10;
    /// Seconds in-flight responses get to finish on shutdown.
    shutdown_grace_secs: u64 = 20;
    /// Requests per second and client address (0: no rate limit).
    rate_limit_per_second: f64 = 0.0;
    /// Requests a client may make in a burst above the rate limit.
    rate_burst: u32 = 50;
    /// Load balancers (addresses, or ranges like `10.0.0.0/8`) whose `X-Forwarded-For` names
    /// the client that rate limits count: the rightmost address in it that is not one of them.
    /// Unset: the connection's address counts and the header is ignored (anyone can write it).
    trusted_proxies: Vec<String> = Vec::new();
    /// `public`, or `restricted`: credentials required except for /v1/health.
    access: Access = Access::Public;
    /// API keys (`X-API-Key`) as `sha256:<hex>` of the key (`hydro hash-key` makes one).
    api_key_hashes: Vec<String> = Vec::new();
    /// Basic users as `name:<argon2 PHC string>` (`echo pw | hydro hash-password` makes one).
    basic_users: Vec<String> = Vec::new(), SpaceList;
    /// HS256 secret for bearer tokens (JWT).
    jwt_secret: Option<String> = None;
    /// RS256 or ES256 public key (PEM) for bearer tokens.
    jwt_public_key_pem: Option<String> = None;
    /// Required `iss` of bearer tokens.
    jwt_issuer: Option<String> = None;
    /// Required `aud` of bearer tokens.
    jwt_audience: Option<String> = None;
    /// A token must carry this value in its `scope` claim to be let in (403 otherwise).
    jwt_required_scope: Option<String> = None;
    /// Origins allowed by CORS when restricted (echoed back; never `*`).
    cors_origins: Vec<String> = Vec::new();
    /// A tile server for the station map of the HTML pages, as a URL template
    /// (`https://tile.openstreetmap.org/{z}/{x}/{y}.png`; mind its usage policy). None: the map
    /// has no base layer and the pages make no requests beyond this server.
    map_tile_url: Option<String> = None;
    /// Bytes of finished value answers kept on disk and sent again (0: none kept).
    answer_store_bytes: u64 = 1 << 30;
    /// Where the answer store makes its private directory (unset: `/var/tmp`, on disk,
    /// where `/tmp` may be memory).
    answer_store_dir: Option<String> = None;
    /// Bytes of value files kept in memory once read, so that answers made again from them do
    /// not read them again (0: none kept).
    value_cache_bytes: u64 = 64 << 20;
    /// Bytes of stations' month file lists kept decoded from the files table once a request
    /// needed them (a station of 20 years of two series takes ~60 KB); shared by every
    /// version open.
    files_cache_bytes: u64 = 128 << 20;
    /// Seconds between checks for a newer published version of the dataset, which is then
    /// served without a restart (0: never; the version served at start stays).
    follow_seconds: u64 = 5;
    /// Earlier versions (`asOf`) kept open at once, the ones used last; each holds its catalog
    /// and files table in memory as the current one does (`/metrics` reports them).
    past_versions_open: usize = 2;
    /// S3 endpoint of an S3-compatible store, for `--data s3://BUCKET/PREFIX` (unset:
    /// `AWS_ENDPOINT_URL`, else AWS itself). Every `AWS_*` variable object_store knows applies;
    /// these settings win over them.
    s3_endpoint: Option<String> = None;
    /// S3 region (unset: `AWS_REGION`, else us-east-1).
    s3_region: Option<String> = None;
    /// S3 access key id (unset: `AWS_ACCESS_KEY_ID`). Without keys (and without
    /// `AWS_SKIP_SIGNATURE=true`) a bucket is not opened: the instance-metadata endpoint is
    /// never asked.
    s3_access_key_id: Option<String> = None;
    /// S3 secret access key (unset: `AWS_SECRET_ACCESS_KEY`).
    s3_secret_access_key: Option<String> = None;
    /// Whether an `http://` endpoint may be used (unset: `AWS_ALLOW_HTTP`, else no).
    s3_allow_http: Option<bool> = None;
    /// Seconds a request to the store may take, retries included; then the answer is 503.
    store_timeout_secs: u64 = 30;
    /// Seconds to connect to the store.
    store_connect_timeout_secs: u64 = 5;
    /// Retries of a failed store request (server errors, timeouts, lost connections).
    store_retries: usize = 3;
}

impl Config {
    /// Reads the file (if any), then applies `HYDRO_*` variables.
    pub fn load(file: Option<&std::path::Path>) -> Result<Self, String> {
        Self::load_with(file, std::env::vars())
    }

    /// [`Config::load`] over `base`, settings in TOML that the file and the variables may
    /// change (the demo's metadata).
    pub fn load_over(base: &str, file: Option<&std::path::Path>) -> Result<Self, String> {
        Self::layered(base, file, std::env::vars())
    }

    /// [`Config::load`] with the environment given.
    pub fn load_with(
        file: Option<&std::path::Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, String> {
        Self::layered("", file, env)
    }

    fn layered(
        base: &str,
        file: Option<&std::path::Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, String> {
        let text = match file {
            Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
            None => String::new(),
        };
        let mut table: toml::Table = base.parse().map_err(|e| format!("config: {e}"))?;
        let own: toml::Table = text.parse().map_err(|e| format!("config: {e}"))?;
        table.extend(own);
        for (key, value) in env {
            let Some(name) = key.strip_prefix("HYDRO_") else {
                continue;
            };
            let name = name.to_ascii_lowercase();
            let Some(setting) = SETTINGS.iter().find(|s| s.name == name) else {
                continue;
            };
            let what = format!("{key} (setting {name})");
            table.insert(name, env_value(&what, setting.kind, value)?);
        }
        let config: Config = table.try_into().map_err(|e| format!("config: {e}"))?;
        config.zone()?;
        Ok(config)
    }

    /// The `meta` settings that are not set (publisher, licence): what a service of one's own
    /// data should say, and has no default for (the demo's live in `data/demo.toml`).
    pub fn missing_metadata(&self) -> Vec<&'static str> {
        [
            ("publisher_name", &self.publisher_name),
            ("publisher_email", &self.publisher_email),
            ("license_name", &self.license_name),
            ("license_url", &self.license_url),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.is_none().then_some(name))
        .collect()
    }

    /// How to reach a bucket, from the `s3_*` and `store_*` settings.
    pub fn s3(&self) -> S3Settings {
        S3Settings {
            endpoint: self.s3_endpoint.clone(),
            region: self.s3_region.clone(),
            access_key_id: self.s3_access_key_id.clone(),
            secret_access_key: self.s3_secret_access_key.clone(),
            allow_http: self.s3_allow_http,
            request_timeout: Duration::from_secs(self.store_timeout_secs),
            connect_timeout: Duration::from_secs(self.store_connect_timeout_secs),
            retries: self.store_retries,
        }
    }

    /// The output zone (`output_offset`).
    pub fn zone(&self) -> Result<Zone, String> {
        let s = self.output_offset.as_str();
        if s.eq_ignore_ascii_case("utc") {
            return Ok(Zone::UTC);
        }
        Zone::parse(s).map_err(|e| format!("output_offset '{s}': {e}"))
    }
}

/// An environment variable's text as the TOML value of its setting's kind.
fn env_value(what: &str, kind: Kind, value: String) -> Result<toml::Value, String> {
    Ok(match kind {
        Kind::Text | Kind::Choice(_) => toml::Value::String(value),
        Kind::WholeNumber => toml::Value::Integer(
            value
                .trim()
                .parse()
                .map_err(|_| format!("{what}: '{value}' is not a whole number"))?,
        ),
        Kind::Number => toml::Value::Float(
            value
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .ok_or_else(|| format!("{what}: '{value}' is not a number"))?,
        ),
        Kind::Boolean => match value.trim().to_ascii_lowercase().as_str() {
            "true" => toml::Value::Boolean(true),
            "false" => toml::Value::Boolean(false),
            _ => return Err(format!("{what}: '{value}' is not true or false")),
        },
        Kind::List { commas } => toml::Value::Array(
            value
                .split(|c: char| c.is_whitespace() || (commas && c == ','))
                .filter(|x| !x.is_empty())
                .map(|x| toml::Value::String(x.to_owned()))
                .collect(),
        ),
    })
}

/// The settings part of `hydro serve --help`: every setting, its variable, type and default.
pub fn help() -> String {
    let mut out = String::from("Settings (TOML key / environment variable, default):\n");
    // Both lists come from the one `settings!` list, in its order.
    for (s, default) in SETTINGS.iter().zip(Config::defaults_shown()) {
        let kind = match s.kind {
            Kind::Text => "text".to_owned(),
            Kind::WholeNumber => "whole number".to_owned(),
            Kind::Number => "number".to_owned(),
            Kind::List { commas: true } => "list, separated by spaces or commas".to_owned(),
            Kind::List { commas: false } => "list, separated by spaces".to_owned(),
            Kind::Choice(words) => words.join(" | "),
            Kind::Boolean => "true | false".to_owned(),
        };
        out.push_str(&format!(
            "\n  {} / HYDRO_{} ({kind}; default {default})\n      {}\n",
            s.name,
            s.name.to_ascii_uppercase(),
            s.help.trim().replace("\n", "\n      ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn environment_values_take_their_settings_types() {
        let c = Config::load_with(
            None,
            env(&[
                ("HYDRO_JWT_AUDIENCE", "12345"),
                ("HYDRO_VERSION", "1.0"),
                ("HYDRO_MAX_HEAVY_QUERIES", "8"),
                ("HYDRO_RATE_LIMIT_PER_SECOND", "2"),
                ("HYDRO_CORS_ORIGINS", "https://a.example, https://b.example"),
                ("HYDRO_BASIC_USERS", "a:x,y b:z"),
                ("HYDRO_VARIANT", "basic"),
                ("HYDRO_UNRELATED", "1"),
            ]),
        )
        .unwrap();
        assert_eq!(c.jwt_audience.as_deref(), Some("12345"));
        assert_eq!(c.version, "1.0");
        assert_eq!(c.max_heavy_queries, 8);
        assert_eq!(c.rate_limit_per_second, 2.0);
        assert_eq!(c.cors_origins, ["https://a.example", "https://b.example"]);
        assert_eq!(c.basic_users, ["a:x,y", "b:z"]);
        assert_eq!(c.variant, Variant::Basic);
        for (var, bad) in [
            ("HYDRO_MAX_HEAVY_QUERIES", "1.5"),
            ("HYDRO_VALUE_CACHE_BYTES", "-1"),
            ("HYDRO_RATE_LIMIT_PER_SECOND", "lots"),
            ("HYDRO_VARIANT", "huge"),
        ] {
            assert!(
                Config::load_with(None, env(&[(var, bad)])).is_err(),
                "{var}={bad}"
            );
        }
    }

    #[test]
    fn help_lists_every_setting_with_its_default() {
        let text = help();
        for s in SETTINGS {
            assert!(text.contains(&format!("HYDRO_{}", s.name.to_ascii_uppercase())));
        }
        assert!(text.contains("HYDRO_VALUE_CACHE_BYTES (whole number; default 67108864)"));
        assert!(text.contains("HYDRO_JWT_SECRET"));
    }
}
