//! The scan of `values` when its filters name one series (one `station`, one `parameter`):
//! the series read as the values endpoint reads it (the months chosen from the files table,
//! pages decoded straight into Arrow, months read ahead in groups), in ascending time, which
//! the plan is told, so that `ORDER BY timestamp` sorts nothing.
//!
//! Measured (`benches/sql.py`, 10 years of one 15-minute series, ~350 000 rows): DataFusion's
//! Parquet scan of the 120 month files and the sort after it took 0.15 s through Flight SQL,
//! about ten times the values endpoint's Arrow answer of the same rows. DataFusion's scan
//! stays the path of every other `values` query (and is this one's fallback: a query that
//! names no single series).

use crate::dataset::Dataset;
use crate::dataset::layout::{COL_PARAMETER, COL_STATION, COL_TIMESTAMP};
use crate::model::Micros;
use crate::model::ids::{ParameterId, StationId};
use crate::query::spec::{ReadAhead, ValuesQuery, Window};
use datafusion::arrow::array::{ArrayRef, DictionaryArray, Int32Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{Int32Type, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::expressions::col;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning,
    PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
};
use futures::{StreamExt, TryStreamExt};
use std::sync::Arc;

/// One series of `values`, its rows in the table's columns (`projected`).
pub(crate) struct SeriesScan {
    dataset: Arc<Dataset>,
    station: StationId,
    parameter: ParameterId,
    from: Option<Micros>,
    to: Option<Micros>,
    /// The table's columns this scan answers, in its order.
    projected: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl SeriesScan {
    pub(crate) fn new(
        dataset: Arc<Dataset>,
        (station, parameter): (StationId, ParameterId),
        (from, to): (Option<Micros>, Option<Micros>),
        projected: SchemaRef,
    ) -> Self {
        let ordering = col(COL_TIMESTAMP, &projected)
            .ok()
            .map(|t| vec![PhysicalSortExpr::new_default(t)]);
        let equivalences =
            EquivalenceProperties::new_with_orderings(Arc::clone(&projected), ordering);
        let properties = PlanProperties::new(
            equivalences,
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Self {
            dataset,
            station,
            parameter,
            from,
            to,
            projected,
            properties: Arc::new(properties),
        }
    }

    fn query(&self) -> ValuesQuery {
        ValuesQuery::of_series(
            self.station.clone(),
            self.parameter.clone(),
            Window::Between {
                from: self.from,
                to: self.to,
            },
        )
    }
}

/// `batch` (the series' timestamp, value and quality) as the columns of `projected`.
fn in_table_columns(
    batch: &RecordBatch,
    projected: &SchemaRef,
    station: &str,
    parameter: &str,
) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let columns = projected
        .fields()
        .iter()
        .map(|field| -> Result<ArrayRef> {
            Ok(match field.name().as_str() {
                COL_STATION => Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                    station, rows,
                ))),
                COL_PARAMETER => Arc::new(DictionaryArray::<Int32Type>::try_new(
                    Int32Array::from(vec![0; rows]),
                    Arc::new(StringArray::from(vec![parameter])),
                )?),
                name => Arc::clone(batch.column_by_name(name).ok_or_else(|| {
                    DataFusionError::Internal(format!("series scan: no column {name}"))
                })?),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(projected),
        columns,
        &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}

impl std::fmt::Debug for SeriesScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.fmt_as(DisplayFormatType::Default, f)
    }
}

impl DisplayAs for SeriesScan {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "SeriesScan: station={}, parameter={}, from={:?}, to={:?}",
            self.station, self.parameter, self.from, self.to
        )
    }
}

impl ExecutionPlan for SeriesScan {
    fn name(&self) -> &'static str {
        "SeriesScan"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        _: Vec<Arc<dyn ExecutionPlan>>,
        _: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn execute(
        &self,
        _partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let dataset = Arc::clone(&self.dataset);
        let query = self.query();
        let projected = Arc::clone(&self.projected);
        let (station, parameter) = (
            self.station.as_str().to_owned(),
            self.parameter.as_str().to_owned(),
        );
        let rows = futures::stream::once(async move {
            let plan = dataset
                .plan_values(&query, ReadAhead::Grouped)
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            Ok::<_, DataFusionError>(plan.stream)
        })
        .try_flatten()
        .map(move |batch| in_table_columns(&batch?, &projected, &station, &parameter));
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.projected),
            rows,
        )))
    }
}
