//! `daily(station, parameter, day, count, sum, mean, min, min_time, max, max_time, first,
//! first_time, last, last_time)`: the rollups (`dataset::rollups`), a row per series and UTC
//! day with values, as one SQL table. An archive-wide question by day, month or year (annual
//! maxima, monthly means, values per day) reads a few percent of the bytes the raw values are,
//! a few files a station (its rollup parts).
//!
//! The files' columns are renamed to snake case (`minTime` is `min_time`) by a view over a
//! scan of the rollup files; DataFusion inlines the view, so the filters reach the scan:
//! a filter on `station` picks the stations' files before any is opened (equal to or in a list
//! of texts as they are, any other form evaluated over the stations' ids),
//! and filters on `parameter` and `day` prune the files' row groups (one a parameter, a page
//! a column). A version written before rollups has an empty `daily`.

use super::values_table::{intersect, parquet_scan, stations_passing, texts_of, with_station};
use crate::dataset::Dataset;
use crate::dataset::layout::COL_STATION;
use crate::dataset::rollups::rollup_schema;
use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{Column, ScalarValue};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::{TableType, ViewTable, provider_as_source};
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, LogicalPlanBuilder, TableProviderFilterPushDown, cast};
use datafusion::physical_plan::ExecutionPlan;
use std::collections::HashSet;
use std::sync::Arc;

/// The `daily` view over `dataset`'s rollup files; `prune`: whether filters choose the files
/// read (always, but for the tests' oracle, which reads every file). Rollups of a zone's days
/// other than UTC's have two rows of the day a UTC month's end cuts (one from each month's
/// file): the view adds them up into the day's one row.
pub(crate) fn daily(dataset: Arc<Dataset>, prune: bool) -> Result<Arc<dyn TableProvider>> {
    let utc_days = dataset.manifest.rollup_zone() == crate::model::zone::Zone::UTC;
    let files = provider_as_source(Arc::new(RollupFiles { dataset, prune }));
    let column = |name: &str| Expr::Column(Column::new_unqualified(name));
    let renamed = |file: &str, name: &str| column(file).alias(name);
    let mut plan = LogicalPlanBuilder::scan("rollups", files, None)?;
    if !utc_days {
        plan = plan.aggregate(
            vec![column(COL_STATION), column("parameter"), column("day")],
            day_of_parts(),
        )?;
    }
    let plan = plan
        .project(vec![
            column(COL_STATION),
            column("parameter"),
            column("day"),
            column("count"),
            column("sum"),
            (column("sum") / cast(column("count"), DataType::Float64)).alias("mean"),
            column("min"),
            renamed("minTime", "min_time"),
            column("max"),
            renamed("maxTime", "max_time"),
            column("first"),
            renamed("firstTime", "first_time"),
            column("last"),
            renamed("lastTime", "last_time"),
        ])?
        .build()?;
    Ok(Arc::new(ViewTable::new(plan, None)))
}

/// A day's rows (one a month file) as one: counts and sums added, the extremes with their
/// times, the first and last values by time; named as the files name them.
fn day_of_parts() -> Vec<Expr> {
    use datafusion::functions_aggregate::expr_fn::{first_value, last_value, max, min, sum};
    let column = |name: &str| Expr::Column(Column::new_unqualified(name));
    let by = |name: &str, ascending: bool| column(name).sort(ascending, false);
    vec![
        sum(column("count")).alias("count"),
        sum(column("sum")).alias("sum"),
        min(column("min")).alias("min"),
        first_value(
            column("minTime"),
            vec![by("min", true), by("minTime", true)],
        )
        .alias("minTime"),
        max(column("max")).alias("max"),
        first_value(
            column("maxTime"),
            vec![by("max", false), by("maxTime", true)],
        )
        .alias("maxTime"),
        first_value(column("first"), vec![by("firstTime", true)]).alias("first"),
        min(column("firstTime")).alias("firstTime"),
        last_value(column("last"), vec![by("lastTime", true)]).alias("last"),
        max(column("lastTime")).alias("lastTime"),
    ]
}

/// The rollup files as they are: their columns, then `station`.
struct RollupFiles {
    dataset: Arc<Dataset>,
    prune: bool,
}

impl std::fmt::Debug for RollupFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RollupFiles({})", self.dataset.manifest.version)
    }
}

#[async_trait]
impl TableProvider for RollupFiles {
    fn schema(&self) -> SchemaRef {
        with_station(&rollup_schema())
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        let pushed = match self.prune {
            true => TableProviderFilterPushDown::Inexact,
            false => TableProviderFilterPushDown::Unsupported,
        };
        Ok(vec![pushed; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let files = self.files(filters);
        parquet_scan(
            &self.dataset,
            state,
            rollup_schema(),
            files,
            (projection, filters, limit),
        )
    }
}

impl RollupFiles {
    /// The rollup parts of each station the filters can match, in station order, a station's
    /// parts in a group in the order of their days.
    fn files(&self, filters: &[Expr]) -> Vec<Vec<PartitionedFile>> {
        let mut stations: Option<HashSet<String>> = None;
        let ids = || self.dataset.rollups.keys().map(|s| s.as_str());
        for f in filters {
            if let Some(picked) = texts_of(f, COL_STATION).or_else(|| stations_passing(f, ids())) {
                stations = Some(intersect(stations.take(), picked));
            }
        }
        let mut parts: Vec<_> = self
            .dataset
            .rollups
            .iter()
            .filter(|(station, _)| {
                stations
                    .as_ref()
                    .is_none_or(|s| s.contains(station.as_str()))
            })
            .collect();
        parts.sort_by(|a, b| a.0.cmp(b.0));
        parts
            .into_iter()
            .map(|(station, parts)| {
                parts
                    .iter()
                    .map(|r| {
                        let mut file = PartitionedFile::new(r.path(), r.size);
                        file.partition_values =
                            vec![ScalarValue::Utf8(Some(station.as_str().to_owned()))];
                        file
                    })
                    .collect()
            })
            .collect()
    }
}
