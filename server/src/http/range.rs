//! Byte ranges of value answers (RFC 9110 §14): a long download cut off part way resumes where
//! it stopped (`curl -C -`, `wget -c`) instead of starting over.
//!
//! A range needs the answer's length, so ranges are cut from the answer store; an answer not
//! stored yet is made whole first (`AnswerStore::make`). One range a request: a request for
//! several, or a `Range` that does not parse, gets the whole answer (200), as RFC 9110 allows.

use http::{HeaderMap, header};
use http_range_header::{ParsedRanges, RangeUnsatisfiableError};
use std::ops::Range;

/// The byte ranges a request asks for, when they are of this answer: a `Range` header of
/// byte ranges and, if the request has `If-Range`, this answer's strong ETag in it. A date or
/// another tag there means the client holds other bytes, so it gets the whole answer.
pub fn requested(headers: &HeaderMap, etag: &str) -> Option<ParsedRanges> {
    let mut values = headers.get_all(header::RANGE).iter();
    let range = values.next()?;
    if values.next().is_some() {
        return None;
    }
    if let Some(condition) = headers.get(header::IF_RANGE)
        && condition.as_bytes() != etag.as_bytes()
    {
        return None;
    }
    http_range_header::parse_range_header(range.to_str().ok()?).ok()
}

/// What the ranges select of an answer of `len` bytes.
#[derive(Debug, PartialEq)]
pub enum Part {
    Bytes(Range<u64>),
    /// Several ranges, or overlapping ones: the whole answer is sent instead.
    Whole,
    /// Every range starts beyond the answer: 416.
    Unsatisfiable,
}

pub fn select(ranges: &ParsedRanges, len: u64) -> Part {
    match ranges.validate(len).as_deref() {
        Ok([one]) => Part::Bytes(*one.start()..one.end().saturating_add(1)),
        Err(RangeUnsatisfiableError::Unsatisfiable) => Part::Unsatisfiable,
        _ => Part::Whole,
    }
}

/// `Content-Range` of a part of an answer of `len` bytes.
pub fn content_range(part: &Range<u64>, len: u64) -> String {
    format!("bytes {}-{}/{len}", part.start, part.end.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn part(range: &str, len: u64) -> Option<Part> {
        let h = headers(&[(header::RANGE, range)]);
        requested(&h, "\"t\"").map(|r| select(&r, len))
    }

    #[test]
    fn ranges_select_their_bytes() {
        assert_eq!(part("bytes=0-99", 1000), Some(Part::Bytes(0..100)));
        assert_eq!(part("bytes=900-", 1000), Some(Part::Bytes(900..1000)));
        assert_eq!(part("bytes=-10", 1000), Some(Part::Bytes(990..1000)));
        assert_eq!(part("bytes=990-5000", 1000), Some(Part::Bytes(990..1000)));
        assert_eq!(part("bytes=-5000", 1000), Some(Part::Bytes(0..1000)));
        assert_eq!(part("bytes=1000-", 1000), Some(Part::Unsatisfiable));
        assert_eq!(part("bytes=0-1,5-9", 1000), Some(Part::Whole));
        assert_eq!(content_range(&(990..1000), 1000), "bytes 990-999/1000");
    }

    /// Malformed ranges, other units and two `Range` headers are ignored: the whole answer.
    #[test]
    fn what_does_not_parse_is_ignored() {
        for bad in [
            "bytes=",
            "bytes=9-1",
            "bytes=a-",
            "items=0-9",
            "bytes=-",
            "0-9",
            "",
        ] {
            assert_eq!(part(bad, 1000), None, "{bad}");
        }
        let two = headers(&[(header::RANGE, "bytes=0-1"), (header::RANGE, "bytes=2-3")]);
        assert!(requested(&two, "\"t\"").is_none());
    }

    #[test]
    fn if_range_must_name_this_answer() {
        let with = |v: &str| headers(&[(header::RANGE, "bytes=5-"), (header::IF_RANGE, v)]);
        assert!(requested(&with("\"t\""), "\"t\"").is_some());
        assert!(requested(&with("\"other\""), "\"t\"").is_none());
        assert!(requested(&with("W/\"t\""), "\"t\"").is_none());
        assert!(requested(&with("Sun, 22 Nov 2026 10:00:00 GMT"), "\"t\"").is_none());
    }
}
