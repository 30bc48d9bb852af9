//! Choosing the representation: `format` (short name or media type) wins over `Accept`;
//! `Accept` q-values are honoured; nothing or `*/*` means JSON. What the server knows of each
//! format (names, media types, where it is offered) is one table, [`FORMATS`].

use crate::http::error::ApiError;
use Answer::{
    Catalog, Landing, Latest, ManyStatistics, ManyValues, PostedStatistics, PostedValues, Sql,
    Stations, Statistics, Values,
};

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

/// The kinds of answer, by what a format must be able to show: which formats each offers is
/// the formats table's `offered` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The landing page and the OpenAPI document: JSON, or a page for people.
    Landing,
    /// Stations, a list or one (GeoJSON: points).
    Stations,
    /// Parameters and characteristic values: lists and single items.
    Catalog,
    /// A series' values.
    Values,
    /// Many series' values in one answer (`/v1/values`).
    ManyValues,
    /// The same, its selection sent in a POST body (too long for a URL): the data formats, not
    /// the charts, which are images a page links to with a URL.
    PostedValues,
    /// The newest value of each series (`/v1/latest`, with coordinates).
    Latest,
    /// Statistics of a series (`…/statistics`): tables of numbers, charts, a page.
    Statistics,
    /// Many series' statistics (`/v1/statistics`): a page shows one series' alone.
    ManyStatistics,
    /// Many series' statistics, the selection sent in a POST body: the data formats.
    PostedStatistics,
    /// The rows of a SQL query (`/v1/sql`): tables of any columns.
    Sql,
}

/// A row of the formats table: everything the server knows of a format but its encoder.
struct Spec {
    format: Format,
    /// Its name in `format=`.
    short: &'static str,
    media_type: &'static str,
    /// Other media types clients send for it (in `Accept` or `format`).
    aliases: &'static [&'static str],
    /// Whether it is text (`charset=utf-8`).
    text: bool,
    /// Whether a content coding may shrink it (not so for formats compressed already: Parquet
    /// pages are LZ4, and gzip on top saved a tenth of the bytes for five times the time).
    compressible: bool,
    /// The file extension it is offered under as a download, if it is offered as a file.
    attachment: Option<&'static str>,
    /// The answers it can show, in the order of this table (the first format an answer
    /// offers is its default).
    offered: &'static [Answer],
}

/// Every format, one row each: a new format is a row here and its encoder.
const FORMATS: [Spec; 10] = [
    Spec {
        format: Format::Json,
        short: "json",
        media_type: "application/json",
        aliases: &[],
        text: true,
        compressible: true,
        attachment: None,
        offered: &[
            Landing,
            Stations,
            Catalog,
            Values,
            ManyValues,
            PostedValues,
            Statistics,
            ManyStatistics,
            PostedStatistics,
            Latest,
            Sql,
        ],
    },
    Spec {
        format: Format::Csv,
        short: "csv",
        media_type: "text/csv",
        aliases: &[],
        text: true,
        compressible: true,
        attachment: Some("csv"),
        offered: &[
            Stations,
            Catalog,
            Values,
            ManyValues,
            PostedValues,
            Statistics,
            ManyStatistics,
            PostedStatistics,
            Latest,
            Sql,
        ],
    },
    Spec {
        format: Format::GeoJson,
        short: "geojson",
        media_type: "application/geo+json",
        aliases: &[],
        text: true,
        compressible: true,
        attachment: None,
        offered: &[Stations, Latest],
    },
    Spec {
        format: Format::Xml,
        short: "xml",
        media_type: "application/xml",
        aliases: &["text/xml"],
        text: true,
        compressible: true,
        attachment: None,
        offered: &[
            Stations,
            Catalog,
            Values,
            Statistics,
            ManyStatistics,
            PostedStatistics,
        ],
    },
    Spec {
        format: Format::NdJson,
        short: "ndjson",
        media_type: "application/x-ndjson",
        aliases: &["application/ndjson", "application/jsonl"],
        text: true,
        compressible: true,
        attachment: None,
        offered: &[
            Stations,
            Catalog,
            Values,
            ManyValues,
            PostedValues,
            Statistics,
            ManyStatistics,
            PostedStatistics,
            Latest,
            Sql,
        ],
    },
    Spec {
        format: Format::Arrow,
        short: "arrow",
        media_type: "application/vnd.apache.arrow.stream",
        aliases: &[],
        text: false,
        compressible: true,
        attachment: Some("arrows"),
        offered: &[
            Stations,
            Catalog,
            Values,
            ManyValues,
            PostedValues,
            Statistics,
            ManyStatistics,
            PostedStatistics,
            Latest,
            Sql,
        ],
    },
    Spec {
        format: Format::Parquet,
        short: "parquet",
        media_type: "application/vnd.apache.parquet",
        aliases: &["application/x-parquet"],
        text: false,
        compressible: false,
        attachment: Some("parquet"),
        offered: &[
            Stations,
            Catalog,
            Values,
            ManyValues,
            PostedValues,
            Statistics,
            ManyStatistics,
            PostedStatistics,
            Latest,
            Sql,
        ],
    },
    Spec {
        format: Format::Svg,
        short: "svg",
        media_type: "image/svg+xml",
        aliases: &[],
        text: true,
        compressible: true,
        attachment: None,
        offered: &[Values, ManyValues, Statistics, ManyStatistics],
    },
    Spec {
        format: Format::Png,
        short: "png",
        media_type: "image/png",
        aliases: &[],
        text: false,
        compressible: false,
        attachment: None,
        offered: &[Values, ManyValues, Statistics, ManyStatistics],
    },
    Spec {
        format: Format::Html,
        short: "html",
        media_type: "text/html",
        aliases: &[],
        text: true,
        compressible: true,
        attachment: None,
        offered: &[Landing, Stations, Values, Statistics],
    },
];

impl Format {
    pub const ALL: [Format; FORMATS.len()] = {
        let mut all = [Format::Json; FORMATS.len()];
        let mut i = 0;
        while i < FORMATS.len() {
            all[i] = FORMATS[i].format;
            i += 1;
        }
        all
    };

    fn spec(self) -> &'static Spec {
        // The table lists the formats in the enum's order (checked by a test).
        &FORMATS[self as usize]
    }

    pub fn short(self) -> &'static str {
        self.spec().short
    }

    pub fn media_type(self) -> &'static str {
        self.spec().media_type
    }

    /// The `Content-Type` header: text types carry `charset=utf-8`.
    pub fn content_type(self) -> String {
        let spec = self.spec();
        if spec.text {
            format!("{}; charset=utf-8", spec.media_type)
        } else {
            spec.media_type.to_owned()
        }
    }

    /// Whether a content coding (gzip, br, zstd) may shrink an answer in this format.
    pub fn compressible(self) -> bool {
        self.spec().compressible
    }

    /// The file extension of a download offered as a file (binary tables and CSV).
    pub fn attachment_extension(self) -> Option<&'static str> {
        self.spec().attachment
    }

    /// The formats `answer` is offered in, its default first.
    pub fn offered(answer: Answer) -> Vec<Format> {
        FORMATS
            .iter()
            .filter(|s| s.offered.contains(&answer))
            .map(|s| s.format)
            .collect()
    }

    fn from_token(s: &str) -> Option<Self> {
        let s = s.trim().to_ascii_lowercase();
        let media = s.split(';').next().unwrap_or("").trim();
        FORMATS
            .iter()
            .find(|f| f.short == s || f.media_type == media || f.aliases.contains(&media))
            .map(|f| f.format)
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
    fn the_table_is_in_the_enums_order() {
        for (i, spec) in FORMATS.iter().enumerate() {
            assert_eq!(spec.format as usize, i, "{}", spec.short);
        }
        assert_eq!(Format::offered(Answer::Landing), [Json, Html]);
        assert_eq!(
            Format::offered(Answer::Values),
            [Json, Csv, Xml, NdJson, Arrow, Parquet, Svg, Png, Html]
        );
        assert_eq!(choose(Some("text/xml"), None, &[Xml]).unwrap(), Xml);
        assert_eq!(
            choose(Some("application/jsonl"), None, &[NdJson]).unwrap(),
            NdJson
        );
    }

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
