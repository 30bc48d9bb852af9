//! A handler's answer before the common headers are added ([`Reply`]), and the helpers that
//! make one of a body built whole.

use crate::http::body::{Body, full};
use crate::render::format::Format;
use http::{HeaderMap, HeaderValue, header};
use serde_json::Value;

/// A successful answer before the common headers are added.
pub struct Reply {
    pub status: http::StatusCode,
    pub body: Body,
    /// Known length (built bodies), None when streamed.
    pub len: Option<usize>,
    pub content_type: String,
    pub headers: HeaderMap,
    pub cacheable: bool,
    /// Whether a content coding may shrink it: Parquet pages are compressed already (LZ4), and
    /// gzip on top saved a tenth of the bytes for five times the time.
    pub compressible: bool,
    /// Whether the finished answer may be kept and sent again (the answer store): value answers,
    /// which cost the most to make.
    pub storable: bool,
}

impl Reply {
    /// A values answer (one series or many) as it streams: cacheable, kept by the answer
    /// store, compressed by `Accept-Encoding` unless it is Parquet.
    pub fn values(format: Format, body: Body, headers: HeaderMap) -> Self {
        Self {
            status: http::StatusCode::OK,
            body,
            len: None,
            content_type: format.content_type(),
            headers,
            cacheable: true,
            compressible: format.compressible(),
            storable: true,
        }
    }
}

/// A body made whole, in `format`.
pub fn built(bytes: Vec<u8>, format: Format, headers: HeaderMap) -> Reply {
    Reply {
        compressible: format.compressible(),
        ..built_as(bytes, &format.content_type(), headers)
    }
}

/// A body made whole, of any media type (assets).
pub fn built_as(bytes: Vec<u8>, content_type: &str, headers: HeaderMap) -> Reply {
    Reply {
        status: http::StatusCode::OK,
        len: Some(bytes.len()),
        body: full(bytes),
        content_type: content_type.to_owned(),
        headers,
        cacheable: true,
        compressible: true,
        storable: false,
    }
}

pub fn json_reply(v: Value) -> Reply {
    built(v.to_string().into_bytes(), Format::JSON, HeaderMap::new())
}

/// `Content-Disposition: attachment` with a file name made of `stem` (letters, digits, `-`,
/// `_`) for the formats offered as files.
pub fn attachment(h: &mut HeaderMap, format: Format, stem: &str) {
    if let Some(ext) = format.attachment_extension() {
        let name: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}.{ext}\"")) {
            h.insert(header::CONTENT_DISPOSITION, v);
        }
    }
}
