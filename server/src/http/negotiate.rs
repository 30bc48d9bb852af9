//! Choosing the representation: `format` (short name or media type) wins over `Accept`;
//! `Accept` q-values are honoured; nothing or `*/*` means the default (the first offered). What
//! the representations are is the caller's: here they are anything that has names.

use crate::http::error::ApiError;

/// A representation an answer may be given in, as negotiation sees it: its names.
pub trait Representation: Copy + PartialEq {
    /// Its name in `format=`.
    fn short(self) -> &'static str;
    fn media_type(self) -> &'static str;
    /// Other media types clients send for it (in `Accept` or `format`).
    fn aliases(self) -> &'static [&'static str];
    /// Whether `Accept: text/*` may choose it.
    fn is_text(self) -> bool;
}

/// The representation among `known` a `format` value or an `Accept` media range names.
fn from_token<R: Representation>(s: &str, known: &[R]) -> Option<R> {
    let s = s.trim().to_ascii_lowercase();
    let media = s.split(';').next().unwrap_or("").trim();
    known
        .iter()
        .copied()
        .find(|f| f.short() == s || f.media_type() == media || f.aliases().contains(&media))
}

/// Picks the representation of a response among `offered` (the first is the default) of all
/// those `known`.
pub fn choose<R: Representation>(
    format_param: Option<&str>,
    accept: Option<&str>,
    offered: &[R],
    known: &[R],
) -> Result<R, ApiError> {
    let Some(&default) = offered.first() else {
        return Err(ApiError::NotAcceptable(
            "this resource has no representation".into(),
        ));
    };
    if let Some(v) = format_param {
        let f = from_token(v, known).ok_or_else(|| {
            ApiError::param(
                "format",
                format!(
                    "unknown format '{}'; formats: {}",
                    crate::http::error::shorten(v),
                    known
                        .iter()
                        .map(|f| f.short())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        if !offered.contains(&f) {
            return Err(ApiError::param(
                "format",
                format!(
                    "{} is not available for this resource; formats here: {}",
                    f.short(),
                    offered
                        .iter()
                        .map(|f| f.short())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        return Ok(f);
    }
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(default);
    };
    let mut best: Option<(f32, usize, R)> = None;
    for (order, item) in accept.split(',').enumerate() {
        let mut parts = item.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let mut q = 1.0f32;
        for p in parts {
            if let Some(v) = p
                .trim()
                .strip_prefix("q=")
                .or_else(|| p.trim().strip_prefix("Q="))
            {
                q = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|q: &f32| (0.0..=1.0).contains(q))
                    .unwrap_or(0.0);
            }
        }
        if q <= 0.0 {
            continue;
        }
        let candidate = match media.as_str() {
            "*/*" | "application/*" => Some(default),
            "text/*" => offered.iter().copied().find(|f| f.is_text()),
            m => from_token(m, known).filter(|f| offered.contains(f)),
        };
        if let Some(f) = candidate
            && best.is_none_or(|(bq, bo, _)| q > bq || (q == bq && order < bo))
        {
            best = Some((q, order, f));
        }
    }
    best.map(|(_, _, f)| f).ok_or_else(|| {
        ApiError::NotAcceptable(format!(
            "none of the accepted media types is available; available: {}",
            offered
                .iter()
                .map(|f| f.media_type())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Representations of a test: a name, a media type, an alias.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Named(&'static str, &'static str, &'static [&'static str]);

    impl Representation for Named {
        fn short(self) -> &'static str {
            self.0
        }
        fn media_type(self) -> &'static str {
            self.1
        }
        fn aliases(self) -> &'static [&'static str] {
            self.2
        }
        fn is_text(self) -> bool {
            self.1.starts_with("text/")
        }
    }

    const JSON: Named = Named("json", "application/json", &[]);
    const CSV: Named = Named("csv", "text/csv", &[]);
    const GEOJSON: Named = Named("geojson", "application/geo+json", &[]);
    const NDJSON: Named = Named("ndjson", "application/x-ndjson", &["application/jsonl"]);
    const PARQUET: Named = Named("parquet", "application/vnd.apache.parquet", &[]);
    const ALL: &[Named] = &[JSON, CSV, GEOJSON, NDJSON];
    const KNOWN: &[Named] = &[JSON, CSV, GEOJSON, NDJSON, PARQUET];

    fn pick(format: Option<&str>, accept: Option<&str>) -> Result<Named, ApiError> {
        choose(format, accept, ALL, KNOWN)
    }

    #[test]
    fn format_wins_and_accept_q_values_count() {
        assert_eq!(pick(Some("csv"), Some("application/json")).unwrap(), CSV);
        assert_eq!(pick(Some("text/csv"), None).unwrap(), CSV);
        assert_eq!(pick(Some("application/jsonl"), None).unwrap(), NDJSON);
        assert_eq!(pick(None, None).unwrap(), JSON);
        assert_eq!(pick(None, Some("*/*")).unwrap(), JSON);
        assert_eq!(pick(None, Some("text/*")).unwrap(), CSV);
        assert_eq!(
            pick(None, Some("text/csv;q=0.5, application/geo+json")).unwrap(),
            GEOJSON
        );
        assert_eq!(
            pick(None, Some("text/csv;q=0.9, application/json;q=0.1")).unwrap(),
            CSV
        );
        assert!(matches!(
            pick(None, Some("image/png")),
            Err(ApiError::NotAcceptable(_))
        ));
        assert!(matches!(
            pick(None, Some("text/csv;q=0")),
            Err(ApiError::NotAcceptable(_))
        ));
        assert!(matches!(
            pick(Some("pdf"), None),
            Err(ApiError::BadParams(_))
        ));
        assert!(matches!(
            pick(Some("parquet"), None),
            Err(ApiError::BadParams(_))
        ));
    }
}
