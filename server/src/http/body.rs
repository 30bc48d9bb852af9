//! Body plumbing in one place: the response body type and helpers to build one.

use bytes::Bytes;
use futures::Stream;
use http_body_util::{BodyExt, Empty, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::Frame;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

pub fn empty() -> Body {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// A body that pulls the next chunk only when the connection takes more (backpressure);
/// dropping it (client gone) drops the stream and with it the query.
pub fn stream<S>(chunks: S) -> Body
where
    S: Stream<Item = Result<Bytes, BoxError>> + Send + 'static,
{
    use futures::StreamExt;
    StreamBody::new(chunks.map(|c| c.map(Frame::data))).boxed_unsync()
}
