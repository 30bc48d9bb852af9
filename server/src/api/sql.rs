//! `/v1/sql`: one read-only SQL statement over the version answered from
//! (`hydro_engine::sql`: the tables, what is refused, the memory and row limits), its rows in
//! CSV, NDJSON, JSON, Arrow IPC or Parquet as they are made.
//!
//! A query takes one of `sql_queries_at_once` slots (none free: 429 with `Retry-After`) and
//! holds it until its answer's last byte. Its first rows are made before the status line, so
//! that a statement that fails, or trips a guardrail before any row is ready (a sort or an
//! aggregate over more than its memory, a run past its time), is a problem response: 400 for
//! the statement's own errors, 422 memory, 413 rows, 504 time. After the first byte, a
//! guardrail tripped or a failure cuts the answer, as for any streamed answer. SQL answers are
//! neither cached nor kept in the answer store: a statement may ask for `now()` or `random()`.

use crate::api::Ctx;
use crate::api::context::fault;
use crate::api::request::SqlRequest;
use crate::config::Config;
use crate::http::error::ApiError;
use crate::render::encode::Given;
use crate::render::reply::{Reply, attachment};
use crate::render::stream::{self, DownloadGuard, Parts};
use crate::state::AppState;
use crate::versions::Version;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use http::{HeaderMap, StatusCode};
use hydro_engine::AnswerPart;
use hydro_engine::EngineError;
use hydro_engine::{Guardrail, SqlLimits, run_sql, sql_schema_of};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

pub(crate) async fn sql(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    if !ctx.state.config.sql {
        return Err(ApiError::NotFound(
            "SQL (/v1/sql) is turned off on this server".into(),
        ));
    }
    let SqlRequest { statement, format } = ctx.request()?;
    let Begun {
        schema,
        rows,
        permit,
    } = begin(ctx.state, ctx.version, &statement).await?;
    let meta = ctx.meta("sql", None);
    let envelope = Given {
        meta: &meta,
        links: None,
    };
    let encoder = format.sql_rows(schema, &envelope, ctx.time())?;
    let held = DownloadGuard {
        watch: Arc::clone(ctx.state) as _,
        permit,
    };
    let parts: Parts = rows.map_ok(AnswerPart::Rows).boxed();
    let body = stream::sequential(parts, encoder, held);
    let mut headers = HeaderMap::new();
    attachment(&mut headers, format, "query");
    // Not cached, so not named by the caching headers: the version it was read from.
    if let Some(link) = ctx.version.link(&ctx.state.base_url) {
        headers.append(http::header::LINK, link);
    }
    Ok(Reply {
        status: StatusCode::OK,
        body,
        len: None,
        content_type: format.content_type(),
        headers,
        cacheable: false,
        compressible: format.compressible(),
        storable: false,
    })
}

/// A query begun within its guardrails, as both doors (`/v1/sql`, Flight SQL) answer it.
pub struct Begun {
    pub schema: SchemaRef,
    /// Its rows, the first already made; a guardrail tripped or a failed read ends them with
    /// an error, and its time runs out at the deadline.
    pub rows: BoxStream<'static, Result<RecordBatch, EngineError>>,
    /// Its SQL slot, to be held until the last row is sent.
    pub permit: OwnedSemaphorePermit,
}

/// Takes a SQL slot (none free: 429) and runs `statement` on `version` until its first rows
/// are made, so that a statement that fails or trips a guardrail before them is a problem.
pub async fn begin(
    state: &Arc<AppState>,
    version: &Version,
    statement: &str,
) -> Result<Begun, ApiError> {
    let config = &state.config;
    let permit = Arc::clone(&state.sql_slots)
        .try_acquire_owned()
        .map_err(|_| ApiError::Limit {
            status: StatusCode::TOO_MANY_REQUESTS,
            detail: format!(
                "{} SQL queries are running, as many as this server runs at once; retry shortly",
                config.sql_queries_at_once
            ),
            retry_after: Some(1),
        })?;
    let tables = version.sql_tables().map_err(|e| fault(state, e))?;
    let time = Duration::from_secs(config.sql_timeout_secs);
    let deadline = Instant::now() + time;
    let started = tokio::time::timeout_at(deadline, async {
        let answer = run_sql(&tables, statement, limits(config)).await?;
        Ok::<_, EngineError>((answer.schema, stream::first_checked(answer.rows).await?))
    })
    .await;
    match started {
        Err(_) => Err(limit_error(Guardrail::Time(time))),
        Ok(Err(e)) => Err(failure(state, e)),
        Ok(Ok((schema, rows))) => Ok(Begun {
            schema,
            rows: until(rows, deadline, time),
            permit,
        }),
    }
}

/// The columns `statement` would answer on `version`, from its plan: a 400 for a statement
/// that would not run.
pub async fn columns(
    state: &Arc<AppState>,
    version: &Version,
    statement: &str,
) -> Result<SchemaRef, ApiError> {
    let tables = version.sql_tables().map_err(|e| fault(state, e))?;
    let time = Duration::from_secs(state.config.sql_timeout_secs);
    match tokio::time::timeout(
        time,
        sql_schema_of(&tables, statement, limits(&state.config)),
    )
    .await
    {
        Err(_) => Err(limit_error(Guardrail::Time(time))),
        Ok(planned) => planned.map_err(|e| failure(state, e)),
    }
}

fn limits(config: &Config) -> SqlLimits {
    SqlLimits {
        memory_bytes: usize::try_from(config.sql_memory_bytes).unwrap_or(usize::MAX),
        spill_bytes: config.sql_spill_bytes,
        rows: config.sql_max_rows,
    }
}

/// The problem for a query that failed: a guardrail by its limit, else as any failure.
pub fn failure(state: &AppState, e: EngineError) -> ApiError {
    match e {
        EngineError::Guardrail(g) => limit_error(g),
        e => fault(state, e),
    }
}

fn limit_error(g: Guardrail) -> ApiError {
    let status = match g {
        Guardrail::Memory { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        Guardrail::Rows(_) => StatusCode::PAYLOAD_TOO_LARGE,
        Guardrail::Time(_) => StatusCode::GATEWAY_TIMEOUT,
    };
    ApiError::Limit {
        status,
        detail: g.to_string(),
        retry_after: None,
    }
}

/// `parts` until `deadline`, then the time guardrail (which cuts the answer) and nothing more.
fn until<T: Send + 'static>(
    parts: BoxStream<'static, Result<T, EngineError>>,
    deadline: Instant,
    time: Duration,
) -> BoxStream<'static, Result<T, EngineError>> {
    futures::stream::unfold(Some(parts), move |parts| async move {
        let mut parts = parts?;
        match tokio::time::timeout_at(deadline, parts.next()).await {
            Ok(Some(item)) => Some((item, Some(parts))),
            Ok(None) => None,
            Err(_) => Some((Err(EngineError::Guardrail(Guardrail::Time(time))), None)),
        }
    })
    .boxed()
}
