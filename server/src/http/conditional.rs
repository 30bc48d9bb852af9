//! Conditional GET and HEAD (RFC 9110 §13): whether the client's copy is current, so that the
//! answer is `304 Not Modified`.
//!
//! `If-None-Match` takes a list of entity tags or `*` and compares weakly (`W/"x"` matches
//! `"x"`: a 304 only says the client's copy is still good). When it is present,
//! `If-Modified-Since` is not looked at (§13.2.2). An `If-Modified-Since` that is not a valid
//! HTTP date is ignored, as the RFC says.

use chrono::{DateTime, Utc};
use http::{HeaderMap, header};

/// What the request's preconditions need to be decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// None that could give a 304.
    Unconditional,
    /// `If-None-Match` lists the current tag: 304 without further ado.
    TagMatches,
    /// `If-None-Match: *`, or an `If-Modified-Since` the representation is not newer than:
    /// 304 once the request is known to have a current representation (a 200).
    NotModifiedIfFound,
    /// `If-None-Match` does not match: answer in full.
    TagDiffers,
}

/// The request's preconditions, for a representation tagged `etag` and last changed at
/// `last_modified`.
pub fn evaluate(
    headers: &HeaderMap,
    etag: Option<&str>,
    last_modified: Option<DateTime<Utc>>,
) -> Condition {
    let inm: Vec<&str> = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    if !inm.is_empty() {
        if inm.contains(&"*") {
            return Condition::NotModifiedIfFound;
        }
        let Some(ours) = etag else {
            return Condition::TagDiffers;
        };
        let ours = opaque(ours);
        return if inm.iter().any(|t| opaque(t) == ours) {
            Condition::TagMatches
        } else {
            Condition::TagDiffers
        };
    }
    let since = headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(http_date);
    match (since, last_modified) {
        // Last-Modified is sent in whole seconds: compare in whole seconds.
        (Some(since), Some(modified)) if modified.timestamp() <= since.timestamp() => {
            Condition::NotModifiedIfFound
        }
        _ => Condition::Unconditional,
    }
}

/// An entity tag without its weakness indicator: weak comparison.
fn opaque(tag: &str) -> &str {
    tag.strip_prefix("W/").unwrap_or(tag)
}

/// An HTTP date: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), or the obsolete RFC 850 and
/// asctime forms recipients must accept (RFC 9110 §5.6.7).
pub fn http_date(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc2822(s) {
        return Some(t.with_timezone(&Utc));
    }
    let naive = chrono::NaiveDateTime::parse_from_str(s, "%A, %d-%b-%y %H:%M:%S GMT")
        .or_else(|_| chrono::NaiveDateTime::parse_from_str(s, "%a %b %e %H:%M:%S %Y"))
        .ok()?;
    Some(naive.and_utc())
}

/// `Last-Modified` text of an instant.
pub fn format_http_date(t: DateTime<Utc>) -> String {
    t.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn with(name: header::HeaderName, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn if_none_match_lists_star_and_weak_tags() {
        let tag = Some("\"abc\"");
        let inm = |v: &str| evaluate(&with(header::IF_NONE_MATCH, v), tag, None);
        assert_eq!(inm("\"abc\""), Condition::TagMatches);
        assert_eq!(inm("\"x\", \"abc\""), Condition::TagMatches);
        assert_eq!(inm("W/\"abc\""), Condition::TagMatches);
        assert_eq!(inm("\"x\",W/\"y\""), Condition::TagDiffers);
        assert_eq!(inm("*"), Condition::NotModifiedIfFound);
        assert_eq!(
            evaluate(&HeaderMap::new(), tag, None),
            Condition::Unconditional
        );
    }

    #[test]
    fn if_modified_since_compares_whole_seconds_and_yields_to_if_none_match() {
        let modified = http_date("Tue, 24 Nov 2026 10:00:00 GMT");
        assert!(modified.is_some());
        let ims = |v: &str| evaluate(&with(header::IF_MODIFIED_SINCE, v), None, modified);
        assert_eq!(
            ims("Tue, 24 Nov 2026 10:00:00 GMT"),
            Condition::NotModifiedIfFound
        );
        assert_eq!(
            ims("Wednesday, 25-Nov-26 10:00:00 GMT"),
            Condition::NotModifiedIfFound
        );
        assert_eq!(
            ims("Tue Nov 24 10:00:00 2026"),
            Condition::NotModifiedIfFound
        );
        assert_eq!(
            ims("Tue, 24 Nov 2026 09:59:59 GMT"),
            Condition::Unconditional
        );
        assert_eq!(ims("yesterday"), Condition::Unconditional);
        let mut both = with(header::IF_MODIFIED_SINCE, "Tue, 24 Nov 2026 10:00:00 GMT");
        both.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"other\""));
        assert_eq!(
            evaluate(&both, Some("\"abc\""), modified),
            Condition::TagDiffers
        );
    }
}
