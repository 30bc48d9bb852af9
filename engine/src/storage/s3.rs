//! A dataset in an S3-compatible bucket, through object_store's own S3 client.
//!
//! Configured as AWS tools are: `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ALLOW_HTTP` (and the other
//! `AWS_*` keys object_store knows), each of which a setting of ours ([`S3Settings`]) may
//! override. Two choices differ from the client's defaults:
//! - No silent fall back to the instance-metadata endpoint: without keys, a session token's
//!   role, a container's or a web identity's credentials, or `AWS_SKIP_SIGNATURE=true` (a
//!   public bucket), opening fails and says what to set. A server that guesses credentials
//!   from a link-local address it happens to reach is a server that reads with whatever role
//!   the machine has.
//! - Requests are bounded: a connect timeout, a request timeout and a few retries within a
//!   time limit (the client's defaults retry for up to three minutes, far longer than a client
//!   of ours waits); a store that does not answer becomes a 503 with `Retry-After`.

use crate::error::{EngineError, Result};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::prefix::PrefixStore;
use object_store::{BackoffConfig, ClientConfigKey, ObjectStore, RetryConfig};
use std::sync::Arc;
use std::time::Duration;

/// What may be set for S3 besides the `AWS_*` variables; a value given here wins over them.
#[derive(Clone)]
pub struct S3Settings {
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub allow_http: Option<bool>,
    /// How long one request may take, body included.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// Retries of a failed request (5xx, timeouts, connection errors), all within
    /// `request_timeout` from the first try.
    pub retries: usize,
}

/// Without the secret, so that it is never logged.
impl std::fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Settings")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("allow_http", &self.allow_http)
            .field("request_timeout", &self.request_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

impl Default for S3Settings {
    fn default() -> Self {
        Self {
            endpoint: None,
            region: None,
            access_key_id: None,
            secret_access_key: None,
            allow_http: None,
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            retries: 3,
        }
    }
}

/// `bucket` under `prefix` ("" for the whole bucket) as an object store rooted at the prefix.
pub(crate) fn open(
    bucket: &str,
    prefix: &str,
    settings: &S3Settings,
) -> Result<Arc<dyn ObjectStore>> {
    let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
    let overrides = [
        (AmazonS3ConfigKey::Endpoint, settings.endpoint.clone()),
        (AmazonS3ConfigKey::Region, settings.region.clone()),
        (
            AmazonS3ConfigKey::AccessKeyId,
            settings.access_key_id.clone(),
        ),
        (
            AmazonS3ConfigKey::SecretAccessKey,
            settings.secret_access_key.clone(),
        ),
    ];
    for (key, value) in overrides {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            builder = builder.with_config(key, v);
        }
    }
    if !has_credentials(&builder) {
        return Err(EngineError::Unsupported(format!(
            "s3://{bucket}: no credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or \
             the s3_access_key_id and s3_secret_access_key settings), or AWS_SKIP_SIGNATURE=true \
             for a public bucket (the instance-metadata endpoint is never asked)"
        )));
    }
    if let Some(allow) = settings.allow_http {
        builder = builder.with_allow_http(allow);
    }
    // Through the builder's keys rather than `with_client_options`, which would drop what the
    // `AWS_*` variables set (allow-http, proxies).
    let client = |key: ClientConfigKey, value: Duration| {
        (
            AmazonS3ConfigKey::Client(key),
            format!("{}ms", value.as_millis()),
        )
    };
    for (key, value) in [
        client(ClientConfigKey::Timeout, settings.request_timeout),
        client(ClientConfigKey::ConnectTimeout, settings.connect_timeout),
    ] {
        builder = builder.with_config(key, value);
    }
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: settings.retries,
        retry_timeout: settings.request_timeout,
    };
    let s3 = builder.with_retry(retry).build()?;
    let prefix = prefix.trim_matches('/');
    Ok(if prefix.is_empty() {
        Arc::new(s3)
    } else {
        Arc::new(PrefixStore::new(s3, prefix))
    })
}

/// Whether the builder has a way to sign requests other than asking the instance-metadata
/// endpoint.
fn has_credentials(builder: &AmazonS3Builder) -> bool {
    let set = |key: AmazonS3ConfigKey| {
        builder
            .get_config_value(&key)
            .is_some_and(|v| !v.is_empty())
    };
    let skip = builder
        .get_config_value(&AmazonS3ConfigKey::SkipSignature)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    skip || (set(AmazonS3ConfigKey::AccessKeyId) && set(AmazonS3ConfigKey::SecretAccessKey))
        || set(AmazonS3ConfigKey::ContainerCredentialsRelativeUri)
        || set(AmazonS3ConfigKey::ContainerCredentialsFullUri)
        || set(AmazonS3ConfigKey::WebIdentityTokenFile)
}
