//! The CORS headers of the standard, on every response.

use http::{HeaderMap, HeaderValue, header};

/// Adds the CORS headers. `allowed`: None when the service is public (any origin, `*`);
/// Some(origins) when it is restricted: the request's origin is echoed only when it is one of
/// them, with credentials allowed, and never `*`. `methods`: those the path takes.
pub fn add(allowed: Option<&[String]>, methods: &'static str, req: &HeaderMap, h: &mut HeaderMap) {
    if let Some(allowed) = allowed {
        h.append(header::VARY, HeaderValue::from_static("Origin"));
        let origin = req.get(header::ORIGIN).and_then(|o| o.to_str().ok());
        match origin.filter(|o| allowed.iter().any(|a| a == o)) {
            Some(o) => {
                if let Ok(v) = HeaderValue::from_str(o) {
                    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
                }
                h.insert(
                    header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                    HeaderValue::from_static("true"),
                );
            }
            None => return,
        }
    } else {
        h.insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
    }
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(methods),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(
            "Content-Type, Authorization, X-API-Key, Accept, Accept-Encoding, If-None-Match, If-Modified-Since, Range, If-Range, Cache-Control",
        ),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("ETag, Cache-Control, Last-Modified, Link, X-Total-Count, Content-Disposition, Content-Range, Accept-Ranges, Retry-After"),
    );
}
