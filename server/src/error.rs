//! Errors of the HTTP layer and the one place that turns them into RFC 9457 problems.
//! Nothing internal reaches a body: 5xx details are generic, the cause goes to the log.

use crate::body::{Body, full};
use http::{HeaderValue, Response, StatusCode, header};
use hydro_engine::EngineError;
use serde_json::json;

#[derive(Debug)]
pub enum ApiError {
    /// Bad or unknown query parameters: (name, reason) each.
    BadParams(Vec<(String, String)>),
    BadRequest(String),
    NotFound(String),
    MethodNotAllowed,
    NotAcceptable(String),
    UriTooLong,
    HeadersTooLarge,
    Unauthorized {
        challenge: String,
        detail: String,
    },
    Forbidden(String),
    TooManyRequests {
        retry_after: u64,
    },
    Unavailable {
        retry_after: u64,
        detail: String,
    },
    /// A byte range that starts beyond an answer of `len` bytes.
    RangeNotSatisfiable {
        len: u64,
    },
    /// Logged, never shown.
    Internal(String),
}

impl ApiError {
    pub fn param(name: &str, reason: impl Into<String>) -> Self {
        Self::BadParams(vec![(name.to_owned(), reason.into())])
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadParams(_) | Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            Self::UriTooLong => StatusCode::URI_TOO_LONG,
            Self::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::RangeNotSatisfiable { .. } => StatusCode::RANGE_NOT_SATISFIABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn detail(&self) -> String {
        match self {
            Self::BadParams(p) => p
                .iter()
                .map(|(n, r)| format!("{n}: {r}"))
                .collect::<Vec<_>>()
                .join("; "),
            Self::BadRequest(d)
            | Self::NotFound(d)
            | Self::NotAcceptable(d)
            | Self::Forbidden(d) => d.clone(),
            Self::Unauthorized { detail, .. } | Self::Unavailable { detail, .. } => detail.clone(),
            Self::MethodNotAllowed => "only GET, HEAD and OPTIONS are supported".into(),
            Self::UriTooLong => "the request URI is longer than 8 KiB".into(),
            Self::HeadersTooLarge => "the request headers are larger than 64 KiB".into(),
            Self::TooManyRequests { retry_after } => {
                format!("rate limit exceeded; retry in {retry_after} s")
            }
            Self::RangeNotSatisfiable { len } => {
                format!("the answer has {len} bytes; the range asked for starts beyond them")
            }
            Self::Internal(_) => "the server could not answer this request".into(),
        }
    }

    /// The problem response; `instance` is the request path.
    pub fn into_response(self, instance: &str) -> Response<Body> {
        let status = self.status();
        if let Self::Internal(cause) = &self {
            tracing::error!(%instance, "internal error: {cause}");
        }
        let mut body = json!({
            "type": format!("https://hydro-api.dev/problems/{}", slug(status)),
            "title": status.canonical_reason().unwrap_or("Error"),
            "status": status.as_u16(),
            "detail": self.detail(),
            "instance": instance,
        });
        if let Self::BadParams(p) = &self {
            body["invalidParams"] = p
                .iter()
                .map(|(n, r)| json!({"name": n, "reason": r}))
                .collect();
        }
        let mut resp = Response::new(full(body.to_string()));
        *resp.status_mut() = status;
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        match &self {
            Self::MethodNotAllowed => {
                h.insert(
                    header::ALLOW,
                    HeaderValue::from_static("GET, HEAD, OPTIONS"),
                );
            }
            Self::Unauthorized { challenge, .. } => {
                if let Ok(v) = HeaderValue::from_str(challenge) {
                    h.insert(header::WWW_AUTHENTICATE, v);
                }
            }
            Self::TooManyRequests { retry_after } | Self::Unavailable { retry_after, .. } => {
                h.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
            }
            Self::RangeNotSatisfiable { len } => {
                if let Ok(v) = HeaderValue::from_str(&format!("bytes */{len}")) {
                    h.insert(header::CONTENT_RANGE, v);
                }
            }
            _ => {}
        }
        resp
    }
}

fn slug(status: StatusCode) -> String {
    status
        .canonical_reason()
        .unwrap_or("error")
        .to_ascii_lowercase()
        .replace([' ', '\''], "-")
}

/// Engine errors by cause: the request's fault is 4xx, storage trouble 503, the rest 500.
impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::NotFound(d) => Self::NotFound(d),
            EngineError::InvalidQuery(d) => Self::BadRequest(d),
            EngineError::Storage(d) => {
                tracing::error!("storage: {d}");
                Self::Unavailable {
                    retry_after: 30,
                    detail: "the data store is not available".into(),
                }
            }
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<datafusion::error::DataFusionError> for ApiError {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        EngineError::from(e).into()
    }
}
