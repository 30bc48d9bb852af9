//! `changedSince` on the values endpoints: the rows new or changed since an earlier version,
//! for a mirror to upsert (the engine's `query::changes`). The answer is read from the
//! request's version (the current one, or `asOf`), so `asOf` with `changedSince` gives the
//! changes between two versions.

use crate::api::Ctx;
use crate::api::context::fault;
use crate::api::rows::{Planned, send_rows};
use crate::http::error::ApiError;
use crate::render::format::Format;
use crate::render::reply::Reply;
use crate::versions::AsOf;
use futures::StreamExt;
use hydro_engine::ChangesQuery;
use hydro_engine::Zone;
use hydro_engine::{AnswerPart, ValueColumn, Window};
use hydro_engine::{Series, StationId};

/// What a changes answer is asked for.
pub(crate) struct Changes<'a> {
    /// The version changed since.
    pub base: &'a AsOf,
    /// In answer order; for one series, its station's links are given.
    pub series: Vec<Series>,
    pub window: Window,
    pub columns: Vec<ValueColumn>,
    pub format: Format,
    pub zone: Zone,
    /// One series' answer (no id columns), or many series'.
    pub station: Option<&'a StationId>,
    pub file_name: String,
}

pub(crate) async fn changes(ctx: &Ctx<'_>, asked: Changes<'_>) -> Result<Reply, ApiError> {
    if asked.format.is_chart() || asked.format.is_page() {
        return Err(ApiError::param(
            "format",
            "changes (changedSince) are data to apply: ask for json, csv, ndjson, arrow or parquet",
        ));
    }
    let target = ctx.version;
    let generation = match asked.base {
        AsOf::Id { generation, .. } | AsOf::Generation(generation) => *generation,
        AsOf::Time(_) => return Err(ApiError::Internal("changedSince of a time".into())),
    };
    if generation > target.dataset.manifest.generation {
        return Err(ApiError::param(
            "changedSince",
            format!(
                "version {generation} is newer than the one answered from ({}); give an \
                 earlier one",
                target.dataset.manifest.version
            ),
        ));
    }
    let base = ctx
        .state
        .versions
        .resolve(&ctx.state.version(), asked.base)
        .await?;
    let (from, to) = match asked.window {
        Window::Between { from, to } => (from, to),
        _ => (None, None),
    };
    let many = asked.station.is_none();
    let series = if many {
        target
            .dataset
            .changed_series(&base.dataset, &asked.series, from, to)
            .await?
    } else {
        asked.series
    };
    let mut columns: Vec<String> = Vec::new();
    if many {
        columns.extend(["stationId".to_owned(), "parameterId".to_owned()]);
    }
    columns.extend(asked.columns.iter().map(|c| c.name().to_owned()));
    let query = ChangesQuery {
        series,
        from,
        to,
        columns: asked.columns,
    };
    let permit = ctx.heavy_permit()?;
    let plan = target
        .dataset
        .plan_changes(&base.dataset, &query, many)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let parts = plan.stream.map(|b| b.map(AnswerPart::Rows)).boxed();
    let planned = Planned {
        format: asked.format,
        schema: plan.schema,
        columns,
        meta_schema: if many { "seriesValues" } else { "values" },
        zone: asked.zone,
        page: None,
        file_name: asked.file_name,
        station: asked.station,
        alternate: None,
    };
    send_rows(ctx, permit, planned, parts).await
}
