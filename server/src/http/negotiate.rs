//! Choosing the representation: `format` (short name or media type) wins over `Accept`;
//! `Accept` q-values are honoured; nothing or `*/*` means JSON.

use crate::http::error::ApiError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Json,
    Csv,
    GeoJson,
    Xml,
    NdJson,
    Arrow,
    Parquet,
    /// A chart of values.
    Svg,
    Png,
    /// A page for people with a browser.
    Html,
}

impl Format {
    pub const ALL: [Format; 10] = [
        Self::Json,
        Self::Csv,
        Self::GeoJson,
        Self::Xml,
        Self::NdJson,
        Self::Arrow,
        Self::Parquet,
        Self::Svg,
        Self::Png,
        Self::Html,
    ];

    pub fn short(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Csv => "csv",
            Self::GeoJson => "geojson",
            Self::Xml => "xml",
            Self::NdJson => "ndjson",
            Self::Arrow => "arrow",
            Self::Parquet => "parquet",
            Self::Svg => "svg",
            Self::Png => "png",
            Self::Html => "html",
        }
    }

    pub fn media_type(self) -> &'static str {
        match self {
            Self::Json => "application/json",
            Self::Csv => "text/csv",
            Self::GeoJson => "application/geo+json",
            Self::Xml => "application/xml",
            Self::NdJson => "application/x-ndjson",
            Self::Arrow => "application/vnd.apache.arrow.stream",
            Self::Parquet => "application/vnd.apache.parquet",
            Self::Svg => "image/svg+xml",
            Self::Png => "image/png",
            Self::Html => "text/html",
        }
    }

    /// The `Content-Type` header: text types carry `charset=utf-8`.
    pub fn content_type(self) -> String {
        match self {
            Self::Arrow | Self::Parquet | Self::Png => self.media_type().to_owned(),
            _ => format!("{}; charset=utf-8", self.media_type()),
        }
    }

    /// Binary downloads and CSV are offered as files.
    pub fn attachment_extension(self) -> Option<&'static str> {
        match self {
            Self::Csv => Some("csv"),
            Self::Arrow => Some("arrows"),
            Self::Parquet => Some("parquet"),
            _ => None,
        }
    }

    fn from_token(s: &str) -> Option<Self> {
        let s = s.trim().to_ascii_lowercase();
        let media = s.split(';').next().unwrap_or("").trim();
        Self::ALL
            .into_iter()
            .find(|f| f.short() == s || f.media_type() == media)
            .or(match media {
                // Common aliases of our media types.
                "text/xml" => Some(Self::Xml),
                "application/ndjson" | "application/jsonl" => Some(Self::NdJson),
                "application/x-parquet" => Some(Self::Parquet),
                _ => None,
            })
    }
}

/// Picks the format of a response among `offered` (the first is the default).
pub fn choose(
    format_param: Option<&str>,
    accept: Option<&str>,
    offered: &[Format],
) -> Result<Format, ApiError> {
    let default = offered.first().copied().unwrap_or(Format::Json);
    if let Some(v) = format_param {
        let f = Format::from_token(v).ok_or_else(|| {
            ApiError::param(
                "format",
                format!(
                    "unknown format '{}'; formats: {}",
                    crate::http::error::shorten(v),
                    Format::ALL
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
    let mut best: Option<(f32, usize, Format)> = None;
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
            "text/*" => offered
                .iter()
                .copied()
                .find(|f| matches!(f, Format::Csv | Format::Xml)),
            m => Format::from_token(m).filter(|f| offered.contains(f)),
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
    use Format::*;
    const ALL: &[Format] = &[Json, Csv, GeoJson, Xml, NdJson];

    #[test]
    fn format_wins_and_accept_q_values_count() {
        assert_eq!(
            choose(Some("csv"), Some("application/json"), ALL).unwrap(),
            Csv
        );
        assert_eq!(choose(Some("text/csv"), None, ALL).unwrap(), Csv);
        assert_eq!(choose(None, None, ALL).unwrap(), Json);
        assert_eq!(choose(None, Some("*/*"), ALL).unwrap(), Json);
        assert_eq!(
            choose(None, Some("text/csv;q=0.5, application/geo+json"), ALL).unwrap(),
            GeoJson
        );
        assert_eq!(
            choose(None, Some("text/csv;q=0.9, application/json;q=0.1"), ALL).unwrap(),
            Csv
        );
        assert!(matches!(
            choose(None, Some("image/png"), ALL),
            Err(ApiError::NotAcceptable(_))
        ));
        assert!(matches!(
            choose(None, Some("text/csv;q=0"), ALL),
            Err(ApiError::NotAcceptable(_))
        ));
        assert!(matches!(
            choose(Some("pdf"), None, ALL),
            Err(ApiError::BadParams(_))
        ));
        assert!(matches!(
            choose(Some("parquet"), None, ALL),
            Err(ApiError::BadParams(_))
        ));
    }
}
