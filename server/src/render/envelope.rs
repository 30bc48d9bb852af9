//! `meta`, `links` and pagination: the parts of every response that are not data.

use crate::config::Config;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value, json};

/// Characters left unescaped in query values of links we build.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b',')
    .remove(b':');

/// The `meta` block of every response, its unchanging members made once from the settings.
pub struct Meta {
    base_url: String,
    /// The members that are the same in every response, in the standard's order.
    fixed: Map<String, Value>,
    /// `fixed` as JSON text without its closing brace: built and serialized for each request,
    /// `meta` took about a tenth of the handler's time of a small value answer (`recent=96`),
    /// and the answer's first byte waits for the handler.
    fixed_json: String,
}

impl Meta {
    pub fn new(c: &Config, base_url: &str) -> Self {
        let mut fixed = Map::new();
        fixed.insert("title".into(), json!(c.title));
        fixed.insert("version".into(), json!(c.version));
        fixed.insert("description".into(), json!(c.description));
        fixed.insert("descriptionUrl".into(), json!(c.description_url));
        fixed.insert("baseUrl".into(), json!(base_url));
        // Left out where not set: no service claims a publisher or licence by default.
        for (name, value) in [
            ("publisherName", &c.publisher_name),
            ("publisherEmail", &c.publisher_email),
            ("licenseName", &c.license_name),
            ("licenseUrl", &c.license_url),
        ] {
            if let Some(v) = value {
                fixed.insert(name.into(), json!(v));
            }
        }
        let mut fixed_json = Value::Object(fixed.clone()).to_string();
        fixed_json.pop();
        Self {
            base_url: base_url.to_owned(),
            fixed,
            fixed_json,
        }
    }

    /// `meta` of a response of schema `schema` read from the dataset version
    /// `dataset_version` (`datasetVersion`, the id `/v1/versions` lists; `version` is the
    /// API's).
    pub fn value(
        &self,
        schema: &str,
        dataset_version: &str,
        pagination: Option<&Pagination>,
    ) -> Value {
        let mut m = self.fixed.clone();
        m.insert("datasetVersion".into(), json!(dataset_version));
        m.insert("schemaUrl".into(), json!(self.schema_url(schema)));
        if let Some(p) = pagination {
            m.insert("pagination".into(), p.json());
        }
        Value::Object(m)
    }

    /// [`Meta::value`] as JSON text, the same as `value(..).to_string()`.
    pub fn json(
        &self,
        schema: &str,
        dataset_version: &str,
        pagination: Option<&Pagination>,
    ) -> String {
        let mut out = String::with_capacity(self.fixed_json.len() + 256);
        out.push_str(&self.fixed_json);
        out.push_str(",\"datasetVersion\":");
        out.push_str(&Value::from(dataset_version).to_string());
        out.push_str(",\"schemaUrl\":");
        out.push_str(&Value::from(self.schema_url(schema)).to_string());
        if let Some(p) = pagination {
            out.push_str(",\"pagination\":");
            out.push_str(&p.json().to_string());
        }
        out.push('}');
        out
    }

    fn schema_url(&self, schema: &str) -> String {
        format!("{}/schemas/{schema}.json", self.base_url)
    }
}

/// A link of `links`. A URI template (`/stations/{stationId}`) says so (`templated`, as in
/// HAL), so that a client does not follow it as it is.
pub fn link(rel: &str, href: String) -> Value {
    if href.contains('{') {
        json!({"rel": rel, "href": href, "templated": true})
    } else {
        json!({"rel": rel, "href": href})
    }
}

/// Paging of a collection: the arithmetic of DESIGN.md "Lists".
#[derive(Debug, Clone, Copy)]
pub struct Pagination {
    pub total: u64,
    pub count: u64,
    /// The `limit` asked for, or None when only `offset` was given.
    pub limit: Option<u64>,
    pub offset: u64,
}

impl Pagination {
    pub fn new(total: u64, limit: Option<u64>, offset: u64) -> Self {
        let rest = total.saturating_sub(offset);
        let count = limit.map_or(rest, |l| l.min(rest));
        Self {
            total,
            count,
            limit,
            offset,
        }
    }

    /// The page size in effect: `limit`, or with `offset` alone, `count`.
    fn size(&self) -> u64 {
        self.limit.unwrap_or(self.count)
    }

    fn page(&self) -> u64 {
        match self.size() {
            0 => 1,
            l => self.offset / l + 1,
        }
    }

    fn total_pages(&self) -> u64 {
        match self.size() {
            0 => 0,
            l => self.total.div_ceil(l),
        }
    }

    fn has_next(&self) -> bool {
        self.size() > 0 && self.offset + self.count < self.total
    }

    fn has_previous(&self) -> bool {
        self.offset > 0
    }

    pub fn json(&self) -> Value {
        json!({
            "total": self.total,
            "count": self.count,
            "limit": self.size(),
            "offset": self.offset,
            "page": self.page(),
            "totalPages": self.total_pages(),
            "hasNextPage": self.has_next(),
            "hasPreviousPage": self.has_previous(),
        })
    }

    /// first/prev/next/last as (rel, href), built on `url_without_paging`. Links lead to pages
    /// with rows whenever there are rows: an `offset` alone beyond the end (a page of no rows,
    /// whose size in effect is 0) links pages of the whole collection, not count-only pages.
    pub fn links(&self, url: &PagingUrl) -> Vec<(&'static str, String)> {
        let size = match self.size() {
            0 if self.limit.is_none() => self.total,
            size => size,
        };
        let last = match size {
            0 => 0,
            size => self.total.div_ceil(size).saturating_sub(1) * size,
        };
        let mut out = vec![("first", url.with(size, 0))];
        if self.has_previous() {
            // Beyond the end, the page before is the last one with rows.
            let prev = self.offset.saturating_sub(size).min(last);
            let prev_size = if self.limit.is_none() {
                self.offset.min(self.total)
            } else {
                size
            };
            out.push(("prev", url.with(prev_size, prev)));
        }
        if self.has_next() {
            out.push(("next", url.with(size, self.offset.saturating_add(size))));
        }
        if size > 0 {
            out.push(("last", url.with(size, last)));
        }
        out
    }
}

/// A request URL to which paging parameters are appended.
#[derive(Clone)]
pub struct PagingUrl {
    pub base: String,
    pub pairs: Vec<(String, String)>,
}

impl PagingUrl {
    pub fn with(&self, limit: u64, offset: u64) -> String {
        let mut q: Vec<String> = self
            .pairs
            .iter()
            .filter(|(k, _)| k != "limit" && k != "offset")
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    utf8_percent_encode(k, QUERY_VALUE),
                    utf8_percent_encode(v, QUERY_VALUE)
                )
            })
            .collect();
        q.push(format!("limit={limit}"));
        q.push(format!("offset={offset}"));
        format!("{}?{}", self.base, q.join("&"))
    }

    /// The request with the parameters named in `drop` left out and `add` appended: the same
    /// resource in another format, say.
    pub fn rewritten(&self, drop: &[&str], add: &[(&str, &str)]) -> String {
        let pairs: Vec<(String, String)> = self
            .pairs
            .iter()
            .filter(|(k, _)| !drop.contains(&k.as_str()))
            .cloned()
            .chain(add.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())))
            .collect();
        PagingUrl {
            base: self.base.clone(),
            pairs,
        }
        .this()
    }

    /// The request itself (normalised encoding).
    pub fn this(&self) -> String {
        if self.pairs.is_empty() {
            return self.base.clone();
        }
        let q: Vec<String> = self
            .pairs
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    utf8_percent_encode(k, QUERY_VALUE),
                    utf8_percent_encode(v, QUERY_VALUE)
                )
            })
            .collect();
        format!("{}?{}", self.base, q.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_text_is_the_meta_value_serialized() {
        let config = Config {
            title: "Pegel \"Süd\" \\ \u{1}".into(),
            publisher_email: Some("a@b".into()),
            ..Config::default()
        };
        let base = "https://example.org/hydro/v1";
        let meta = Meta::new(&config, base);
        for page in [
            None,
            Some(Pagination::new(23, Some(5), 10)),
            Some(Pagination::new(0, None, 0)),
        ] {
            for schema in ["values", "station"] {
                assert_eq!(
                    meta.json(schema, "1-x", page.as_ref()),
                    meta.value(schema, "1-x", page.as_ref()).to_string()
                );
            }
        }
    }

    #[test]
    fn arithmetic() {
        let p = Pagination::new(23, Some(5), 10);
        let j = p.json();
        assert_eq!(
            (
                j["count"].as_u64(),
                j["page"].as_u64(),
                j["totalPages"].as_u64()
            ),
            (Some(5), Some(3), Some(5))
        );
        assert!(p.has_next() && p.has_previous());
        let p = Pagination::new(23, Some(0), 0);
        let j = p.json();
        assert_eq!(
            (
                j["count"].as_u64(),
                j["page"].as_u64(),
                j["totalPages"].as_u64()
            ),
            (Some(0), Some(1), Some(0))
        );
        assert!(!p.has_next());
        let p = Pagination::new(23, None, 20);
        let j = p.json();
        assert_eq!(
            (j["count"].as_u64(), j["limit"].as_u64()),
            (Some(3), Some(3))
        );
        assert!(!p.has_next());
        let p = Pagination::new(23, Some(5), 100);
        assert_eq!(p.json()["count"].as_u64(), Some(0));
    }

    #[test]
    fn an_offset_beyond_the_end_links_pages_with_rows() {
        let url = PagingUrl {
            base: "http://x/v1/stations".into(),
            pairs: vec![],
        };
        let links = Pagination::new(24, None, 30).links(&url);
        let href = |rel: &str| links.iter().find(|l| l.0 == rel).map(|l| l.1.clone());
        assert_eq!(
            href("first").unwrap(),
            "http://x/v1/stations?limit=24&offset=0"
        );
        assert_eq!(
            href("prev").unwrap(),
            "http://x/v1/stations?limit=24&offset=0"
        );
        assert_eq!(
            href("last").unwrap(),
            "http://x/v1/stations?limit=24&offset=0"
        );
        assert_eq!(href("next"), None);
        let links = Pagination::new(24, Some(5), 100).links(&url);
        let prev = links.iter().find(|l| l.0 == "prev").unwrap();
        assert_eq!(prev.1, "http://x/v1/stations?limit=5&offset=20");
        // No rows at all: a count-only page is all there is.
        let empty = Pagination::new(0, None, 5).links(&url);
        assert_eq!(empty[0].1, "http://x/v1/stations?limit=0&offset=0");
    }

    #[test]
    fn walking_next_visits_each_item_once() {
        let url = PagingUrl {
            base: "http://x/v1/stations".into(),
            pairs: vec![],
        };
        for total in [0u64, 1, 7, 10, 23] {
            for limit in [1u64, 3, 5, 10, 50] {
                let mut offset = 0;
                let mut seen = 0;
                loop {
                    let p = Pagination::new(total, Some(limit), offset);
                    seen += p.count;
                    match p.links(&url).into_iter().find(|l| l.0 == "next") {
                        Some((_, href)) => {
                            offset = href.rsplit("offset=").next().unwrap().parse().unwrap()
                        }
                        None => break,
                    }
                }
                assert_eq!(seen, total, "total {total} limit {limit}");
            }
        }
    }
}
