//! Content coding by `Accept-Encoding` (q-values honoured): zstd, br or gzip, streamed.
//! Levels favour speed: bulk downloads are limited by the encoder, not the wire, beyond a
//! few MB/s.

use crate::body::{Body, BoxError};
use async_compression::Level;
use async_compression::tokio::bufread::{BrotliEncoder, GzipEncoder, ZstdEncoder};
use bytes::Bytes;
use futures::{Stream, TryStreamExt};
use http_body_util::BodyExt;
use tokio_util::io::{ReaderStream, StreamReader};

/// Bodies smaller than this are sent as they are.
pub const MIN_SIZE: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    Zstd,
    Brotli,
    Gzip,
}

impl Coding {
    pub fn token(self) -> &'static str {
        match self {
            Self::Zstd => "zstd",
            Self::Brotli => "br",
            Self::Gzip => "gzip",
        }
    }
}

/// The best coding the client accepts; ties go to zstd, then br, then gzip.
pub fn choose(accept_encoding: Option<&str>) -> Option<Coding> {
    let header = accept_encoding?;
    let mut best: Option<(f32, usize, Coding)> = None;
    let mut star = None;
    let mut named = Vec::new();
    for item in header.split(',') {
        let mut parts = item.split(';');
        let token = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .map(|v| v.trim().parse::<f32>().unwrap_or(0.0))
            })
            .next()
            .unwrap_or(1.0);
        let coding = match token.as_str() {
            "zstd" => Coding::Zstd,
            "br" => Coding::Brotli,
            "gzip" | "x-gzip" => Coding::Gzip,
            "*" => {
                star = Some(q);
                continue;
            }
            _ => continue,
        };
        named.push(coding);
        let rank = [Coding::Zstd, Coding::Brotli, Coding::Gzip]
            .iter()
            .position(|c| *c == coding)
            .unwrap_or(3);
        if q > 0.0 && best.is_none_or(|(bq, br, _)| q > bq || (q == bq && rank < br)) {
            best = Some((q, rank, coding));
        }
    }
    if best.is_none()
        && let Some(q) = star.filter(|q| *q > 0.0)
    {
        let _ = q;
        return [Coding::Zstd, Coding::Brotli, Coding::Gzip]
            .into_iter()
            .find(|c| !named.contains(c));
    }
    best.map(|b| b.2)
}

/// Compressed output is sent in frames of up to this size (the reader's default, 4 KB, made a
/// write per 4 KB).
const FRAME_BYTES: usize = 64 * 1024;

/// Wraps a body in the encoder, streaming.
pub fn compress(body: Body, coding: Coding) -> Body {
    let chunks = body.into_data_stream().map_err(std::io::Error::other);
    let reader = StreamReader::new(chunks);
    let out: std::pin::Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>> =
        match coding {
            Coding::Zstd => Box::pin(ReaderStream::with_capacity(
                ZstdEncoder::with_quality(reader, Level::Precise(1)),
                FRAME_BYTES,
            )),
            Coding::Brotli => Box::pin(ReaderStream::with_capacity(
                BrotliEncoder::with_quality(reader, Level::Precise(3)),
                FRAME_BYTES,
            )),
            Coding::Gzip => Box::pin(ReaderStream::with_capacity(
                GzipEncoder::with_quality(reader, Level::Precise(1)),
                FRAME_BYTES,
            )),
        };
    crate::body::stream(out.map_err(|e| Box::new(e) as BoxError))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_values_and_preferences() {
        assert_eq!(choose(None), None);
        assert_eq!(choose(Some("gzip")), Some(Coding::Gzip));
        assert_eq!(choose(Some("gzip, br, zstd")), Some(Coding::Zstd));
        assert_eq!(choose(Some("gzip;q=1, br;q=0.5")), Some(Coding::Gzip));
        assert_eq!(choose(Some("gzip;q=0")), None);
        assert_eq!(choose(Some("identity")), None);
        assert_eq!(choose(Some("*")), Some(Coding::Zstd));
    }
}
