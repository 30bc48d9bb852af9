//! What a handler works with: the request's context ([`Ctx`]: the state, the version it
//! answers from, its query and headers), and what every handler asks of it (its typed request,
//! ids resolved in the catalog, URLs, links and paging headers, a heavy-query slot).

use crate::api::params::{RawQuery, SortSpec, shorten};
use crate::api::request::{Paging, Query, Request};
use crate::http::error::ApiError;
use crate::render::encode::catalog::{Data, Document};
use crate::render::envelope::{Pagination, PagingUrl, link};
use crate::render::format::Format;
use crate::render::html::pages::Site;
use crate::render::reply::{Reply, attachment, built};
use crate::render::resources::{project, sort_items};
use crate::render::timefmt::TimeFormatter;
use crate::state::AppState;
use crate::versions::Version;
use http::{HeaderMap, HeaderName, HeaderValue, header};
use hydro_engine::ErrorKind;
use hydro_engine::Station;
use hydro_engine::Zone;
use hydro_engine::{ParameterId, StationId};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::OwnedSemaphorePermit;

pub struct Ctx<'a> {
    pub state: &'a Arc<AppState>,
    /// The version this request answers from (taken once, when it began).
    pub version: &'a Arc<Version>,
    pub query: &'a RawQuery,
    pub headers: &'a HeaderMap,
    /// The request path (for links).
    pub path: &'a str,
    /// Whether the parameters came (also) in a POST body (`/v1/values`).
    pub posted: bool,
}

impl Ctx<'_> {
    pub(crate) fn basic(&self) -> bool {
        self.state.basic()
    }

    /// The request's query as `R` reads it (its pairs, `Accept`, the variant, the endpoint).
    fn typed_query<R: Request>(&self) -> Query<'_> {
        Query {
            raw: self.query,
            accept: self
                .headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok()),
            basic: self.basic(),
            endpoint: R::endpoint(self.posted),
            zone: self.state.zone,
            dataset_zone: self.version.dataset.zone(),
        }
    }

    /// The endpoint's request: its parameters checked, then parsed.
    pub(crate) fn request<R: Request>(&self) -> Result<R, ApiError> {
        let query = self.typed_query::<R>();
        query.admit()?;
        R::parse(&query)
    }

    /// Checks that only the endpoint's parameters are present (before path ids are resolved).
    pub(crate) fn admit<R: Request>(&self) -> Result<(), ApiError> {
        self.typed_query::<R>().admit()
    }

    /// The endpoint's request, parsed after [`Self::admit`] (and the path's ids resolved).
    pub(crate) fn parse<R: Request>(&self) -> Result<R, ApiError> {
        R::parse(&self.typed_query::<R>())
    }

    /// A slot among the heavy queries running at once (value downloads, long or sorted station
    /// lists), held until the answer's last byte is produced; none free: 503.
    pub(crate) fn heavy_permit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        Arc::clone(&self.state.heavy)
            .try_acquire_owned()
            .map_err(|_| ApiError::Unavailable {
                retry_after: 1,
                detail: "too many downloads at once; retry shortly".into(),
            })
    }

    /// The `meta` block of an answer of schema `schema` from this request's version.
    pub(crate) fn meta(&self, schema: &str, page: Option<&Pagination>) -> Value {
        self.state
            .meta
            .value(schema, &self.version.dataset.manifest.version, page)
    }

    pub(crate) fn url(&self, rest: &str) -> String {
        format!("{}{rest}", self.state.base_url)
    }

    pub(crate) fn paging_url(&self) -> PagingUrl {
        let rest = self.path.strip_prefix("/v1").unwrap_or(self.path);
        PagingUrl {
            base: self.url(rest),
            pairs: self.query.pairs.clone(),
        }
    }

    /// What a page for people needs of the service and of this request.
    pub(crate) fn site(&self) -> Site<'_> {
        self.site_in(self.state.zone)
    }

    /// [`Self::site`] with times in `zone` (the request's `timeZone`).
    pub(crate) fn site_in(&self, zone: Zone) -> Site<'_> {
        Site {
            base_url: &self.state.base_url,
            config: &self.state.config,
            zone,
            here: self.paging_url(),
        }
    }

    pub(crate) fn time(&self) -> TimeFormatter {
        TimeFormatter::zoned(self.state.zone)
    }

    pub(crate) fn station(&self, id: &str) -> Result<&Station, ApiError> {
        // A mistyped id gets the nearest ids; ids are not names: a name typed as an id is
        // pointed to the search (which finds ids too).
        let not_found = || {
            let typed = shorten(id);
            let search: String =
                percent_encoding::utf8_percent_encode(id, percent_encoding::NON_ALPHANUMERIC)
                    .to_string();
            let near = self.version.dataset.catalog.ids_near(id, 3);
            let near = match near.as_slice() {
                [] => String::new(),
                ids => {
                    let ids: Vec<String> = ids.iter().map(|i| format!("'{i}'")).collect();
                    format!(" (did you mean {}?)", ids.join(" or "))
                }
            };
            ApiError::NotFound(format!(
                "no station '{typed}'{near}; to find stations by name or id: {}",
                self.url(&format!("/stations?q={search}"))
            ))
        };
        let id: StationId = id.parse().map_err(|_| not_found())?;
        self.version
            .dataset
            .catalog
            .station(&id)
            .ok_or_else(not_found)
    }

    pub(crate) fn parameter_id(
        &self,
        station: &Station,
        id: &str,
    ) -> Result<ParameterId, ApiError> {
        let catalog = &self.version.dataset.catalog;
        let not_found = || {
            let has: Vec<&str> = catalog
                .parameters(&station.id)
                .iter()
                .map(|p| p.id.as_str())
                .collect();
            let has = match has.is_empty() {
                true => "none".to_owned(),
                false => has.join(", "),
            };
            ApiError::NotFound(format!(
                "station '{}' has no parameter '{}'; it has {has}",
                station.id,
                shorten(id)
            ))
        };
        let pid: ParameterId = id.parse().map_err(|_| not_found())?;
        catalog
            .parameter(&station.id, &pid)
            .map(|p| p.id.clone())
            .ok_or_else(not_found)
    }

    pub(crate) fn links(
        &self,
        items: Vec<(&str, String)>,
        page: Option<&Pagination>,
    ) -> Option<Value> {
        if self.basic() {
            return None;
        }
        let mut out: Vec<Value> = items.into_iter().map(|(r, h)| link(r, h)).collect();
        if let Some(p) = page {
            out.extend(
                p.links(&self.paging_url())
                    .into_iter()
                    .map(|(r, h)| link(r, h)),
            );
        }
        Some(Value::Array(out))
    }

    /// Link and X-Total-Count headers for a paged answer.
    pub(crate) fn paging_headers(&self, page: Option<&Pagination>) -> HeaderMap {
        let mut h = HeaderMap::new();
        let Some(p) = page else { return h };
        if !self.basic() {
            let value: Vec<String> = p
                .links(&self.paging_url())
                .into_iter()
                .map(|(rel, href)| format!("<{href}>; rel=\"{rel}\""))
                .collect();
            if let Ok(v) = HeaderValue::from_str(&value.join(", ")) {
                h.insert(header::LINK, v);
            }
        }
        h.insert(
            HeaderName::from_static("x-total-count"),
            HeaderValue::from(p.total),
        );
        h
    }
}

/// Sorting, paging and projecting a small list of catalog items, then encoding it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn catalog_list(
    ctx: &Ctx<'_>,
    mut items: Vec<Value>,
    sort: &[SortSpec],
    fields: Option<Vec<String>>,
    Paging {
        limit,
        offset,
        given: paging,
    }: Paging,
    format: Format,
    schema: &str,
    item_name: &str,
    links: Vec<(&str, String)>,
    stem: &str,
) -> Result<Reply, ApiError> {
    sort_items(&mut items, sort);
    let page = Pagination::new(items.len() as u64, limit, offset);
    let a = offset.min(items.len() as u64) as usize;
    let b = (a as u64 + page.count) as usize;
    let mut items: Vec<Value> = items.drain(a..b).collect();
    if let Some(f) = &fields {
        items = items.iter().map(|v| project(v, f)).collect();
    }
    let page = paging.then_some(page);
    let doc = Document {
        meta: ctx.meta(schema, page.as_ref()),
        links: ctx.links(links, page.as_ref()),
        data: Data::List(&items),
        item_name,
        csv_columns: None,
    };
    let mut headers = ctx.paging_headers(page.as_ref());
    attachment(&mut headers, format, stem);
    Ok(built(format.document(&doc)?, format, headers))
}

/// A failed data read: remembered for health when data is damaged or the server failed (the
/// response made of it logs it), then the problem to answer. A store that does not answer is
/// not remembered: health's storage check says so while it lasts, and says `ok` as soon as the
/// store is back, so that a balancer sends requests again at once.
pub(crate) fn fault(state: &AppState, e: hydro_engine::EngineError) -> ApiError {
    if matches!(e.kind(), ErrorKind::Corrupt | ErrorKind::Internal) {
        state.record_fault(&e.to_string());
    }
    e.into()
}
