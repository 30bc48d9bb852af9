//! Errors of the HTTP layer and the one place that turns them into RFC 9457 problems.
//! Nothing internal reaches a body: 5xx details are generic, the cause goes to the log.

use crate::http::body::{Body, full};
use http::{HeaderValue, Response, StatusCode, header};
use hydro_engine::EngineError;
use hydro_engine::ErrorKind;
use serde_json::json;

#[derive(Debug)]
pub enum ApiError {
    /// Bad or unknown query parameters: (name, reason) each.
    BadParams(Vec<(String, String)>),
    BadRequest(String),
    NotFound(String),
    /// What was there once and is no more (a version vacuum removed).
    Gone(String),
    /// A method the path does not take; `allow` lists those it does.
    MethodNotAllowed {
        allow: &'static str,
    },
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
    /// `If-None-Match` matched on a request other than GET or HEAD (RFC 9110 13.1.2).
    PreconditionFailed,
    /// A request body larger than `limit` bytes.
    PayloadTooLarge {
        limit: usize,
    },
    /// A request body of a media type not taken.
    UnsupportedMediaType(String),
    /// A byte range that starts beyond an answer of `len` bytes.
    RangeNotSatisfiable {
        len: u64,
    },
    /// A limit a SQL query ran into (413 rows, 422 memory, 504 time), or no SQL slot free
    /// (429, with `retry_after`).
    Limit {
        status: StatusCode,
        detail: String,
        retry_after: Option<u64>,
    },
    /// A failure of the engine, told by what caused it (see [`ErrorKind`]).
    Engine(EngineError),
    /// Logged, never shown.
    Internal(String),
}

/// Seconds a client is asked to wait before trying again when the store did not answer.
const STORE_RETRY_AFTER: u64 = 10;

impl ApiError {
    pub fn param(name: &str, reason: impl Into<String>) -> Self {
        Self::BadParams(vec![(name.to_owned(), reason.into())])
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadParams(_) | Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Gone(_) => StatusCode::GONE,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::PreconditionFailed => StatusCode::PRECONDITION_FAILED,
            Self::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            Self::UriTooLong => StatusCode::URI_TOO_LONG,
            Self::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::RangeNotSatisfiable { .. } => StatusCode::RANGE_NOT_SATISFIABLE,
            Self::Limit { status, .. } => *status,
            Self::Engine(e) => match e.kind() {
                ErrorKind::BadRequest => StatusCode::BAD_REQUEST,
                ErrorKind::NotFound => StatusCode::NOT_FOUND,
                ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
                ErrorKind::Corrupt | ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            },
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Whether the error is the server's fault: logged with its causes where the response is
    /// made, never shown to the client.
    fn is_fault(&self) -> bool {
        match self {
            Self::Engine(e) => e.kind().is_fault(),
            Self::Internal(_) => true,
            _ => false,
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
            | Self::Gone(d)
            | Self::NotAcceptable(d)
            | Self::UnsupportedMediaType(d)
            | Self::Forbidden(d) => d.clone(),
            Self::Unauthorized { detail, .. }
            | Self::Unavailable { detail, .. }
            | Self::Limit { detail, .. } => detail.clone(),
            Self::MethodNotAllowed { allow } => format!("this resource takes {allow}"),
            Self::PreconditionFailed => "If-None-Match matches the current representation".into(),
            Self::PayloadTooLarge { limit } => {
                format!("the request body is larger than {} KiB", limit / 1024)
            }
            Self::UriTooLong => "the request URI is longer than 8 KiB".into(),
            Self::HeadersTooLarge => "the request headers are larger than 64 KiB".into(),
            Self::TooManyRequests { retry_after } => {
                format!("rate limit exceeded; retry in {retry_after} s")
            }
            Self::RangeNotSatisfiable { len } => {
                format!("the answer has {len} bytes; the range asked for starts beyond them")
            }
            Self::Engine(e) => match e.kind() {
                ErrorKind::BadRequest | ErrorKind::NotFound => e.to_string(),
                ErrorKind::Unavailable => "the data store is not available; retry shortly".into(),
                ErrorKind::Corrupt | ErrorKind::Internal => {
                    "the server could not answer this request".into()
                }
            },
            Self::Internal(_) => "the server could not answer this request".into(),
        }
    }

    /// What a client is told (the status and detail of the problem), the cause logged when
    /// it is the server's fault: for a door that speaks another protocol (Flight SQL).
    pub fn told(&self, instance: &str) -> (StatusCode, String) {
        self.log_fault(instance);
        (self.status(), self.detail())
    }

    fn log_fault(&self, instance: &str) {
        if self.is_fault() {
            tracing::error!(%instance, "{}", Causes(self));
        }
    }

    /// The problem response; `instance` is the request path.
    pub fn into_response(self, instance: &str) -> Response<Body> {
        let status = self.status();
        self.log_fault(instance);
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
            Self::MethodNotAllowed { allow } => {
                h.insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            Self::Unauthorized { challenge, .. } => {
                if let Ok(v) = HeaderValue::from_str(challenge) {
                    h.insert(header::WWW_AUTHENTICATE, v);
                }
            }
            Self::TooManyRequests { retry_after }
            | Self::Unavailable { retry_after, .. }
            | Self::Limit {
                retry_after: Some(retry_after),
                ..
            } => {
                h.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
            }
            Self::Engine(e) if e.kind() == ErrorKind::Unavailable => {
                h.insert(header::RETRY_AFTER, HeaderValue::from(STORE_RETRY_AFTER));
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

/// At most 40 characters of user input in a message.
pub fn shorten(s: &str) -> String {
    let t: String = s.chars().filter(|c| !c.is_control()).take(40).collect();
    if t.len() < s.len() {
        format!("{t}…")
    } else {
        t
    }
}

fn slug(status: StatusCode) -> String {
    status
        .canonical_reason()
        .unwrap_or("error")
        .to_ascii_lowercase()
        .replace([' ', '\''], "-")
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        Self::Engine(e)
    }
}

impl From<datafusion::error::DataFusionError> for ApiError {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        Self::Engine(e.into())
    }
}

/// An error with every cause down its chain, for the log.
struct Causes<'a>(&'a ApiError);

impl std::fmt::Display for Causes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            ApiError::Engine(e) => {
                write!(f, "{e}")?;
                let mut cause = std::error::Error::source(e);
                while let Some(c) = cause {
                    write!(f, ": {c}")?;
                    cause = c.source();
                }
                Ok(())
            }
            ApiError::Internal(cause) => write!(f, "internal error: {cause}"),
            other => write!(f, "{}", other.detail()),
        }
    }
}
