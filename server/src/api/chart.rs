//! `format=svg` and `format=png` on the values endpoints: the query of a chart, planned here
//! and drawn by `render::chart::answer`. A chart shows the answer's rows (the window, or the
//! page of it asked for) in time order whatever `sort` says (its time axis orders them), with
//! every column (quality marks the line).

use crate::api::Ctx;
use crate::api::context::fault;
use crate::http::error::ApiError;
use crate::http::negotiate::Format;
use crate::render::chart::{self, ChartSpec, Level, answer};
use crate::render::reply::Reply;
use hydro_engine::model::ids::Series;
use hydro_engine::model::{Parameter, Station};
use hydro_engine::query::aggregate::{AggregatePlan, AggregateQuery};
use hydro_engine::query::{ManyQuery, ReadAhead, ValueColumn, ValuesQuery, Window};

pub async fn values_chart(
    ctx: &Ctx<'_>,
    station: &Station,
    parameter: &Parameter,
    mut query: ValuesQuery,
    size: (u32, u32),
    format: Format,
) -> Result<Reply, ApiError> {
    query.sort.clear();
    query.columns = ValueColumn::ALL.to_vec();
    let _permit = ctx.heavy_permit()?;
    let plan = ctx
        .version
        .dataset
        .plan_values(&query, ReadAhead::Grouped)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let (from, to) = bounds(query.window);
    let catalog = &ctx.version.dataset.catalog;
    let levels = catalog
        .characteristics(&station.id)
        .iter()
        .filter(|c| c.parameter == parameter.id)
        .map(|c| Level {
            label: format!("{} {} {}", c.name, c.value, c.unit),
            value: c.value,
        })
        .collect();
    let spec = ChartSpec {
        title: format!("{}: {}", station.name, parameter.name),
        quantity: format!("{} ({})", parameter.name, parameter.unit),
        size,
        offset: ctx.state.offset,
        from,
        to,
        levels,
    };
    answer::series(plan, parameter, &spec, format)
        .await
        .map_err(|e| fault(ctx.state, e))
}

/// `format=svg` and `format=png` of an aggregate of one series (`aggregate=mean,min,max`): a
/// line a numeric statistic over the buckets, in time order whatever `sort` said.
pub async fn aggregate_chart(
    ctx: &Ctx<'_>,
    (station, parameter): (&Station, &Parameter),
    query: &AggregateQuery,
    plan: AggregatePlan,
    size: (u32, u32),
    format: Format,
) -> Result<Reply, ApiError> {
    let batch = if query.sort.is_empty() {
        plan.batch
    } else {
        let mut unsorted = query.clone();
        unsorted.sort.clear();
        ctx.version
            .dataset
            .aggregate(&unsorted)
            .await
            .map_err(|e| fault(ctx.state, e))?
            .batch
    };
    let (from, to) = bounds(query.window);
    let every = query
        .spec
        .interval
        .map(|i| i.to_string())
        .unwrap_or_default();
    let spec = ChartSpec {
        title: format!("{}: {} {every}", station.name, parameter.name),
        quantity: format!("{} ({})", parameter.name, parameter.unit),
        size,
        offset: ctx.state.offset,
        from,
        to,
        levels: Vec::new(),
    };
    let columns: Vec<String> = query.columns.iter().map(|c| c.name()).collect();
    let length = query.spec.interval.map(|i| i.shortest());
    answer::buckets(&batch, &columns, length, &spec, format).map_err(|e| fault(ctx.state, e))
}

/// `format=svg` and `format=png` on `/v1/values`: a line a series (at most
/// [`chart::MOST_LINES`]).
pub async fn many_chart(
    ctx: &Ctx<'_>,
    series: Vec<Series>,
    window: Window,
    size: (u32, u32),
    format: Format,
) -> Result<Reply, ApiError> {
    if series.len() > chart::MOST_LINES {
        return Err(ApiError::param(
            "parameters",
            format!(
                "a chart draws at most {} series and this request selects {}; narrow it with \
                 station filters or fewer parameters",
                chart::MOST_LINES,
                series.len()
            ),
        ));
    }
    let catalog = &ctx.version.dataset.catalog;
    let mut lines = Vec::with_capacity(series.len());
    for (sid, pid) in &series {
        let (Some(s), Some(p)) = (catalog.station(sid), catalog.parameter(sid, pid)) else {
            return Err(ApiError::Internal("a selected series vanished".into()));
        };
        let label = format!("{}: {}", s.name, p.name);
        lines.push(((sid.clone(), pid.clone()), label, p));
    }
    let query = ManyQuery {
        series,
        window,
        columns: ValueColumn::ALL.to_vec(),
        offset: 0,
        limit: None,
        need_total: false,
        stored: false,
    };
    let _permit = ctx.heavy_permit()?;
    let plan = ctx
        .version
        .dataset
        .plan_many(query, ReadAhead::Grouped)
        .await
        .map_err(|e| fault(ctx.state, e))?;
    let (from, to) = bounds(window);
    let parameters: Vec<&Parameter> = lines.iter().map(|(_, _, p)| *p).collect();
    let same = |f: fn(&Parameter) -> &str| parameters.windows(2).all(|w| f(w[0]) == f(w[1]));
    let first = parameters.first();
    let unit = first
        .filter(|_| same(|p| &p.unit))
        .map_or("mixed units".to_owned(), |p| p.unit.to_string());
    let name = first
        .filter(|_| same(|p| &p.name))
        .map_or("value".to_owned(), |p| p.name.to_string());
    let spec = ChartSpec {
        title: format!("{name}: {} series", lines.len()),
        quantity: format!("{name} ({unit})"),
        size,
        offset: ctx.state.offset,
        from,
        to,
        levels: Vec::new(),
    };
    answer::many(plan, &lines, &spec, format)
        .await
        .map_err(|e| fault(ctx.state, e))
}

/// The window's ends where the request gave them: the chart's time axis spans them even where
/// there are no values.
fn bounds(window: Window) -> (Option<i64>, Option<i64>) {
    match window {
        Window::Between { from, to } => (from, to),
        _ => (None, None),
    }
}
