//! SQL over a dataset version: one read-only statement, planned and run by DataFusion over
//! the tables of [`SqlTables`], within guardrails ([`SqlLimits`]).
//!
//! Only `SELECT`, `WITH` and `EXPLAIN` are run: anything else (DDL, DML, `COPY`, `SET`,
//! external tables, several statements) is refused by name before it is planned, and the plan
//! is checked again (DataFusion's `SQLOptions` with DDL, DML and statements off). The session
//! has no file or URL tables (`enable_url_table` stays off), so a statement reads only these
//! tables. Each query gets a runtime of its own: a memory pool of `memory_bytes` (sorts,
//! joins and aggregates spill beyond it) and a disk manager that refuses to spill more than
//! `spill_bytes`; a query that needs more fails with [`Guardrail::Memory`]. Its answer stops
//! with [`Guardrail::Rows`] past `rows` rows. The time limit is the caller's (it owns the
//! clock of the request). Failures are told by their cause: the statement's own (a typo, a
//! type error, a division by zero) is [`EngineError::Sql`], a 400; a store or file that fails
//! is what it is for any answer.

mod catalog_tables;
mod daily_table;
#[cfg(test)]
mod pruning_tests;
mod series_scan;
mod values_table;

use crate::dataset::Dataset;
pub use crate::error::Guardrail;
use crate::error::{EngineError, Result};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{MemTable, TableProvider};
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::execution::disk_manager::DiskManagerBuilder;
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::{DFParser, Statement};
use datafusion::sql::sqlparser::ast;
use futures::StreamExt;
use futures::stream::BoxStream;
use std::sync::Arc;

/// The catalog and schema the tables are in (`hydro.public.values`), as Flight SQL clients
/// list them; a statement names the tables without them.
pub const CATALOG: &str = "hydro";
pub const SCHEMA: &str = "public";

/// What one query may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqlLimits {
    /// Bytes of memory its operators may hold.
    pub memory_bytes: usize,
    /// Bytes it may spill to disk beyond that.
    pub spill_bytes: u64,
    /// Rows it may answer.
    pub rows: u64,
}

/// The tables of one dataset version, made once and shared by its queries: `values` (the
/// files, pruned by the files table), `daily` (the rollups), `stations`, `parameters` and
/// `characteristics` (from the catalog in memory).
pub struct SqlTables {
    dataset: Arc<Dataset>,
    tables: Vec<(&'static str, Arc<dyn TableProvider>)>,
}

impl SqlTables {
    pub fn of(dataset: &Arc<Dataset>) -> Result<Self> {
        let values = values_table::ValuesTable::new(Arc::clone(dataset));
        Self::with(dataset, Arc::new(values), true)
    }

    /// The tables read whole, every filter applied by DataFusion: the tests' oracle of what
    /// a query answers without the pruning of `values` and `daily`.
    #[cfg(test)]
    fn unpruned(dataset: &Arc<Dataset>) -> Result<Self> {
        let values = values_table::ValuesTable::unpruned(Arc::clone(dataset));
        Self::with(dataset, Arc::new(values), false)
    }

    fn with(dataset: &Arc<Dataset>, values: Arc<dyn TableProvider>, prune: bool) -> Result<Self> {
        let catalog = &dataset.catalog;
        let tables: Vec<(&'static str, Arc<dyn TableProvider>)> = vec![
            ("values", values),
            ("daily", daily_table::daily(Arc::clone(dataset), prune)?),
            ("stations", memory(catalog_tables::stations(catalog)?)),
            ("parameters", memory(catalog_tables::parameters(catalog)?)),
            (
                "characteristics",
                memory(catalog_tables::characteristics(catalog)?),
            ),
        ];
        Ok(Self {
            dataset: Arc::clone(dataset),
            tables,
        })
    }

    /// Each table's name and columns, in the order above.
    pub fn tables(&self) -> impl Iterator<Item = (&'static str, SchemaRef)> + '_ {
        self.tables
            .iter()
            .map(|(name, table)| (*name, table.schema()))
    }

    /// A session of its own for one query: its memory pool and disk budget, these tables.
    fn session(&self, limits: SqlLimits) -> Result<SessionContext> {
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_pool(Arc::new(FairSpillPool::new(limits.memory_bytes)))
            .with_disk_manager_builder(
                DiskManagerBuilder::default().with_max_temp_directory_size(limits.spill_bytes),
            )
            .build_arc()?;
        let url = &self.dataset.scan_source.store_url;
        let store = self.dataset.ctx.runtime_env().object_store(url)?;
        runtime.register_object_store(url.as_ref(), store);
        let config = SessionConfig::new()
            .with_information_schema(true)
            .with_default_catalog_and_schema(CATALOG, SCHEMA);
        let ctx = SessionContext::new_with_config_rt(config, runtime);
        for (name, table) in &self.tables {
            ctx.register_table(*name, Arc::clone(table))?;
        }
        Ok(ctx)
    }
}

fn memory(table: MemTable) -> Arc<dyn TableProvider> {
    Arc::new(table)
}

/// A query's answer: its columns, and its rows as they are made.
pub struct SqlAnswer {
    pub schema: SchemaRef,
    pub rows: BoxStream<'static, Result<datafusion::arrow::array::RecordBatch>>,
}

/// The columns `statement` would answer, from its physical plan (nothing is read): what a
/// Flight SQL client is told before it asks for the rows, which must come in exactly these
/// types (the logical plan's may differ: a dictionary column the scan reads as text).
pub async fn schema_of(
    tables: &SqlTables,
    statement: &str,
    limits: SqlLimits,
) -> Result<SchemaRef> {
    let (ctx, plan) = planned(tables, statement, limits).await?;
    let physical = ctx
        .state()
        .create_physical_plan(&plan)
        .await
        .map_err(|e| classified(e, limits))?;
    Ok(physical.schema())
}

/// Plans `statement` (one `SELECT`, `WITH` or `EXPLAIN`) over `tables` and starts it.
pub async fn run(tables: &SqlTables, statement: &str, limits: SqlLimits) -> Result<SqlAnswer> {
    let (ctx, plan) = planned(tables, statement, limits).await?;
    let frame = ctx
        .execute_logical_plan(plan)
        .await
        .map_err(|e| classified(e, limits))?;
    let stream: SendableRecordBatchStream = frame
        .execute_stream()
        .await
        .map_err(|e| classified(e, limits))?;
    let schema = stream.schema();
    let mut sent = 0u64;
    let rows = stream
        .map(move |batch| {
            let batch = batch.map_err(|e| classified(e, limits))?;
            sent += batch.num_rows() as u64;
            if sent > limits.rows {
                return Err(EngineError::Guardrail(Guardrail::Rows(limits.rows)));
            }
            Ok(batch)
        })
        .boxed();
    Ok(SqlAnswer { schema, rows })
}

/// The session for `statement` and its plan, checked to only read.
async fn planned(
    tables: &SqlTables,
    statement: &str,
    limits: SqlLimits,
) -> Result<(SessionContext, LogicalPlan)> {
    let statement = one_query(statement)?;
    let ctx = tables.session(limits)?;
    let plan = ctx
        .state()
        .statement_to_plan(statement)
        .await
        .map_err(|e| classified(e, limits))?;
    datafusion::execution::context::SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
        .verify_plan(&plan)
        .map_err(|e| EngineError::Sql(e.to_string()))?;
    Ok((ctx, plan))
}

/// The one statement of `text`, if it is one DataFusion reads and one that only reads.
fn one_query(text: &str) -> Result<Statement> {
    let mut statements =
        DFParser::parse_sql(text).map_err(|e| EngineError::Sql(format!("SQL: {e}")))?;
    let statement = match (statements.pop_front(), statements.len()) {
        (Some(s), 0) => s,
        (None, _) => return Err(EngineError::Sql("no SQL statement given".into())),
        (Some(_), more) => {
            return Err(EngineError::Sql(format!(
                "one statement at a time: this has {}",
                more + 1
            )));
        }
    };
    let reads = match &statement {
        Statement::Statement(s) => {
            matches!(
                **s,
                ast::Statement::Query(_) | ast::Statement::Explain { .. }
            )
        }
        Statement::Explain(_) => true,
        _ => false,
    };
    if !reads {
        return Err(EngineError::Sql(format!(
            "only SELECT, WITH and EXPLAIN are answered, not {}",
            first_word(text)
        )));
    }
    Ok(statement)
}

/// The statement's first keyword, to name what was refused.
fn first_word(text: &str) -> String {
    let word: String = text
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .take(20)
        .collect();
    if word.is_empty() {
        "this statement".into()
    } else {
        word.to_ascii_uppercase()
    }
}

/// A failure told by its cause: a guardrail, the store or its files (as for any answer), a
/// fault of DataFusion's own, or else the statement's.
fn classified(e: DataFusionError, limits: SqlLimits) -> EngineError {
    if matches!(e.find_root(), DataFusionError::ResourcesExhausted(_)) {
        return EngineError::Guardrail(Guardrail::Memory {
            memory: limits.memory_bytes,
            spill: limits.spill_bytes,
        });
    }
    let internal = matches!(e.find_root(), DataFusionError::Internal(_));
    let engine = EngineError::DataFusion(e);
    if internal || reads_failed(&engine) {
        return engine;
    }
    EngineError::Sql(engine.to_string())
}

/// Whether a read of the store or a file is among the causes of `e`. A Parquet reader that
/// failed evaluating the statement's filter as it read (a text cast to a number, with
/// `station IN (25820100, …)` over ids that are no numbers) did not fail to read: the
/// statement did, as it would above the scan.
fn reads_failed(e: &(dyn std::error::Error + 'static)) -> bool {
    use datafusion::parquet::errors::ParquetError;
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(ParquetError::External(inner)) = c.downcast_ref::<ParquetError>() {
            cause = Some(inner.as_ref());
            continue;
        }
        if c.is::<datafusion::object_store::Error>()
            || c.is::<ParquetError>()
            || c.is::<std::io::Error>()
        {
            return true;
        }
        if let Some(EngineError::DataFusion(inner)) = c.downcast_ref::<EngineError>() {
            cause = Some(inner);
            continue;
        }
        if let Some(df) = c.downcast_ref::<DataFusionError>() {
            match df {
                DataFusionError::ObjectStore(_) | DataFusionError::IoError(_) => return true,
                DataFusionError::ParquetError(inner) => {
                    cause = Some(inner.as_ref());
                    continue;
                }
                DataFusionError::ArrowError(inner, _) => {
                    cause = Some(inner.as_ref());
                    continue;
                }
                _ => {}
            }
        }
        cause = c.source();
    }
    false
}
