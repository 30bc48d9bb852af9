//! The fourth stage: which version answers. The one served now, or the one `asOf` names on the
//! paths that take it (every data path and the landing page, in the extended variant; on the
//! others the endpoint refuses it as any parameter it does not take). The request holds it to
//! its end, though the service may switch to a newer one meanwhile (see
//! [`crate::versions::Version`]).

use super::request::Asked;
use crate::http::error::ApiError;
use crate::state::AppState;
use crate::versions::{AsOf, Version};
use std::sync::Arc;

pub(super) async fn answered(
    state: &Arc<AppState>,
    asked: &Asked<'_>,
) -> Result<Arc<Version>, ApiError> {
    let current = state.version();
    let versioned = !state.basic()
        && !matches!(
            asked.segments.first().map(String::as_str),
            Some("versions" | "health" | "openapi.json" | "schemas" | "assets")
        );
    let Some(given) = asked.query.get("asOf")?.filter(|_| versioned) else {
        return Ok(current);
    };
    let as_of = AsOf::parse(given)?;
    let version = state.versions.resolve(&current, &as_of).await?;
    Ok(if as_of.pins(&current.dataset.manifest) {
        version.pinned()
    } else {
        version
    })
}
