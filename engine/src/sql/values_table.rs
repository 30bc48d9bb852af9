//! `values(parameter, timestamp, value, quality, station)`: every value of the dataset version
//! as one SQL table, read as DuckDB reads the files with Hive partitioning (`station` from
//! the path, after the file's columns).
//!
//! A scan reads only the station-months its filters can match, chosen from the files table
//! (the stations' parts of it, or the whole table once in order) before any file is opened:
//! `station` equal to or in a list of texts picks the stations (a filter on `station` of any
//! other form, such as a number compared with it, is evaluated over the stations' ids to pick
//! those it lets through), `parameter` equal to or in a list of texts the series, and bounds
//! on `timestamp` the months whose series' time ranges reach into them.
//! A one-station query
//! never scans the archive. The filters on the files' own columns go to the Parquet scan as
//! its predicate, which prunes row groups and pages by their statistics and filters rows;
//! DataFusion applies every filter but those on `station` again above the scan (they are
//! `Inexact`), so a filter this does not understand is only not used for pruning. A query of
//! one series (one station, one parameter) reads it as the values endpoint does
//! ([`super::series_scan`]), in exactly the time bounds its filters give, which are then
//! `Exact` too: the measured 10-year series had gone through a filter, a round-robin
//! repartition and a merge of sorted partitions above the scan, 51 against 25 ms for the
//! values endpoint's Arrow answer of the same rows (with other work on the machine); the scan
//! alone, 21.5 against 19.9 ms.

use super::series_scan::SeriesScan;
use crate::dataset::Dataset;
use crate::dataset::layout::{
    COL_PARAMETER, COL_STATION, COL_TIMESTAMP, values_schema, values_schema_with_gaps,
};
use crate::dataset::manifest::ValueFile;
use crate::model::Micros;
use crate::model::ids::{ParameterId, StationId};
use crate::query::sorted::scanned;
use async_trait::async_trait;
use datafusion::arrow::array::{Array, AsArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::Session;
use datafusion::common::{DFSchema, DataFusionError, ScalarValue};
use datafusion::datasource::TableType;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::Result;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, LazyLock};

/// The table over one dataset version.
pub(crate) struct ValuesTable {
    dataset: Arc<Dataset>,
    /// Whether filters choose what is read (always, but for the tests' oracle: every file
    /// read, every filter applied by DataFusion above the scan).
    prune: bool,
}

impl ValuesTable {
    pub(crate) fn new(dataset: Arc<Dataset>) -> Self {
        Self {
            dataset,
            prune: true,
        }
    }

    /// The table read whole, every filter left to DataFusion: what a query answers without
    /// this table's pruning, which the tests compare with.
    #[cfg(test)]
    pub(crate) fn unpruned(dataset: Arc<Dataset>) -> Self {
        Self {
            dataset,
            prune: false,
        }
    }
}

impl std::fmt::Debug for ValuesTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ValuesTable({})", self.dataset.manifest.version)
    }
}

/// An engine error as DataFusion carries it.
fn external(e: crate::error::EngineError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

fn station_field() -> Field {
    Field::new(COL_STATION, DataType::Utf8, false)
}

/// The files' columns, then `station`; `value` nullable in a version with recorded gaps
/// (`gaps`), where it is null in their rows.
fn table_schema(gaps: bool) -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| with_station(&values_schema()));
    static WITH_GAPS: LazyLock<SchemaRef> =
        LazyLock::new(|| with_station(&values_schema_with_gaps()));
    Arc::clone(if gaps { &WITH_GAPS } else { &SCHEMA })
}

/// `file_schema`'s columns, then `station` (as a Hive-partitioned read has them).
pub(super) fn with_station(file_schema: &Schema) -> SchemaRef {
    let mut fields: Vec<Field> = file_schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(station_field());
    Arc::new(Schema::new(fields))
}

#[async_trait]
impl datafusion::catalog::TableProvider for ValuesTable {
    fn schema(&self) -> SchemaRef {
        table_schema(self.dataset.has_gaps())
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// The filters that pick stations are exact: a scan answers only those stations' rows
    /// (the files it reads are theirs), so no filter above it compares a station column
    /// (which a one-series scan would otherwise make for every row). When the filters name one
    /// series, those on `parameter` and the plain bounds on `timestamp` are exact too: the
    /// series scan reads that series in exactly those bounds, and the plan is the scan alone
    /// (no filter, no repartition, no merge of sorted partitions above it). The rest are
    /// inexact.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        if !self.prune {
            return Ok(vec![
                TableProviderFilterPushDown::Unsupported;
                filters.len()
            ]);
        }
        let one_series = Pick::of(filters.iter().copied(), &|| self.station_ids())
            .one_series(&self.dataset)
            .is_some();
        Ok(filters
            .iter()
            .map(|f| {
                let exact = texts_of(f, COL_STATION).is_some()
                    || one_series
                        && (texts_of(f, COL_PARAMETER).is_some() || time_bounds(f).is_some());
                match exact {
                    true => TableProviderFilterPushDown::Exact,
                    false => TableProviderFilterPushDown::Inexact,
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let pick = match self.prune {
            true => Pick::of(filters, &|| self.station_ids()),
            false => Pick::default(),
        };
        if let Some(series) = pick.one_series(&self.dataset) {
            let schema = table_schema(self.dataset.has_gaps());
            let projected = match projection {
                Some(p) => Arc::new(schema.project(p)?),
                None => schema,
            };
            // Bounds that allow no time (`>= Feb AND < Jan`): no rows, not a window backwards
            // (which the series reader refuses).
            if pick.from.zip(pick.to).is_some_and(|(from, to)| from > to) {
                return Ok(Arc::new(EmptyExec::new(projected)));
            }
            return Ok(Arc::new(SeriesScan::new(
                Arc::clone(&self.dataset),
                series,
                (pick.from, pick.to),
                projected,
            )));
        }
        let files = self.files(&pick).await?;
        parquet_scan(
            &self.dataset,
            state,
            match self.dataset.has_gaps() {
                true => values_schema_with_gaps(),
                false => values_schema(),
            },
            files,
            (projection, filters, limit),
        )
    }
}

/// A scan's projection, filters and limit, as DataFusion hands them to a table.
pub(super) type Asked<'a> = (Option<&'a Vec<usize>>, &'a [Expr], Option<usize>);

/// The Parquet scan of `files` (each station's, `station` set on each) whose columns are
/// `file_schema` then `station`: the filters on the files' own columns as its predicate
/// (row groups and pages pruned by their statistics), the stations dealt over the cores.
pub(super) fn parquet_scan(
    dataset: &Dataset,
    state: &dyn Session,
    file_schema: SchemaRef,
    files: Vec<Vec<PartitionedFile>>,
    (projection, filters, limit): Asked<'_>,
) -> Result<Arc<dyn ExecutionPlan>> {
    if files.is_empty() {
        let schema = with_station(&file_schema);
        let projected = match projection {
            Some(p) => Arc::new(schema.project(p)?),
            None => schema,
        };
        return Ok(Arc::new(EmptyExec::new(projected)));
    }
    let table = TableSchema::builder(Arc::clone(&file_schema))
        .with_table_partition_cols(vec![Arc::new(station_field())])
        .build();
    let mut source = ParquetSource::new(table)
        .with_pushdown_filters(true)
        .with_reorder_filters(true)
        .with_enable_page_index(true)
        .with_parquet_file_reader_factory(dataset.scan_source.reader_factory.clone());
    let own: Vec<Expr> = filters
        .iter()
        .filter(|f| {
            f.column_refs()
                .iter()
                .all(|c| file_schema.field_with_name(&c.name).is_ok())
        })
        .cloned()
        .collect();
    if let Some(predicate) = conjunction(own) {
        let df_schema = DFSchema::try_from(Arc::clone(&file_schema))?;
        source = source.with_predicate(state.create_physical_expr(predicate, &df_schema)?);
    }
    let groups = file_groups(files, state.config().target_partitions().max(1));
    let config =
        FileScanConfigBuilder::new(dataset.scan_source.store_url.clone(), Arc::new(source))
            .with_file_groups(groups)
            .with_projection_indices(projection.cloned())?
            .with_limit(limit)
            .build();
    Ok(DataSourceExec::from_data_source(config))
}

impl ValuesTable {
    /// Every station's id.
    fn station_ids(&self) -> Vec<&str> {
        let stations = self.dataset.catalog.stations().iter();
        stations.map(|s| s.id.as_str()).collect()
    }

    /// The station-months `pick` can match, as the scan reads them: each station's files in
    /// month order (a station-year file's months as that file), `station` set on each. The
    /// row groups of the stations it names that are not decoded yet are read together, a span
    /// at a time; without a pick of stations, the files table is read once in order, a span
    /// of row groups at a time (a read of each station's row groups would be a request a
    /// station).
    async fn files(&self, pick: &Pick) -> Result<Vec<Vec<PartitionedFile>>> {
        let dataset = &self.dataset;
        let mut by_station: BTreeMap<StationId, Vec<ValueFile>> = BTreeMap::new();
        match &pick.stations {
            Some(ids) => {
                let ids: Vec<StationId> = ids.iter().filter_map(|id| id.parse().ok()).collect();
                dataset.read_stations(&ids.iter().collect::<Vec<_>>()).await;
                for id in ids {
                    let months = dataset.station_files(&id).await.map_err(external)?;
                    let matching = months.iter().map(|m| &m.file).filter(|f| pick.matches(f));
                    by_station.insert(id, matching.cloned().collect());
                }
            }
            None => {
                dataset
                    .each_value_file(|files| {
                        for file in files.into_iter().filter(|f| pick.matches(f)) {
                            by_station
                                .entry(file.station.clone())
                                .or_default()
                                .push(file);
                        }
                    })
                    .await
                    .map_err(external)?;
            }
        }
        let mut groups = Vec::new();
        for (id, mut files) in by_station {
            if files.is_empty() {
                continue;
            }
            files.sort_by_key(|f| f.month);
            let matching: Vec<&ValueFile> = files.iter().collect();
            let station = ScalarValue::Utf8(Some(id.as_str().to_owned()));
            let files = scanned(&matching)
                .into_iter()
                .map(|mut f| {
                    f.partition_values = vec![station.clone()];
                    f
                })
                .collect();
            groups.push(files);
        }
        Ok(groups)
    }
}

/// Stations' files dealt into `n` groups of about as many files, each station's files in one
/// group (in month order), so that the scan runs on `n` cores.
fn file_groups(stations: Vec<Vec<PartitionedFile>>, n: usize) -> Vec<FileGroup> {
    let total: usize = stations.iter().map(Vec::len).sum();
    let per_group = total.div_ceil(n).max(1);
    let mut groups: Vec<Vec<PartitionedFile>> = vec![Vec::new()];
    for files in stations {
        if groups.last().is_some_and(|g| g.len() >= per_group) {
            groups.push(Vec::new());
        }
        if let Some(g) = groups.last_mut() {
            g.extend(files);
        }
    }
    groups.into_iter().map(FileGroup::new).collect()
}

/// What a scan's filters say of the station-months it can match: None where they say nothing.
#[derive(Debug, Default, PartialEq)]
struct Pick {
    stations: Option<HashSet<String>>,
    parameters: Option<HashSet<String>>,
    /// Inclusive bounds on `timestamp`, UTC microseconds.
    from: Option<Micros>,
    to: Option<Micros>,
}

impl Pick {
    /// What `filters` say, their filters on `station` read as the texts they allow or else
    /// evaluated over the ids `stations` gives ([`stations_passing`]).
    fn of<'a, 's>(
        filters: impl IntoIterator<Item = &'a Expr>,
        stations: &dyn Fn() -> Vec<&'s str>,
    ) -> Self {
        let mut pick = Self::default();
        for f in filters {
            if let Some(ids) =
                texts_of(f, COL_STATION).or_else(|| stations_passing(f, stations().into_iter()))
            {
                pick.stations = Some(intersect(pick.stations.take(), ids));
            }
            if let Some(ids) = texts_of(f, COL_PARAMETER) {
                pick.parameters = Some(intersect(pick.parameters.take(), ids));
            }
            if let Some((from, to)) = time_bounds(f) {
                pick.from = max_of(pick.from, from);
                pick.to = min_of(pick.to, to);
            }
        }
        pick
    }

    /// The one series the filters name (one station, one parameter), if the catalog lists
    /// it (whose files a scan then finds, none for a series without values).
    fn one_series(&self, dataset: &Dataset) -> Option<(StationId, ParameterId)> {
        let only = |set: &Option<HashSet<String>>| match set {
            Some(s) if s.len() == 1 => s.iter().next().cloned(),
            _ => None,
        };
        let (Some(station), Some(parameter)) = (only(&self.stations), only(&self.parameters))
        else {
            return None;
        };
        let id = station.parse::<StationId>().ok()?;
        let parameter = dataset
            .catalog
            .parameters(&id)
            .iter()
            .find(|p| p.id.as_str() == parameter)
            .map(|p| p.id.clone())?;
        Some((id, parameter))
    }

    /// Whether the month holds a series `self` can match.
    fn matches(&self, file: &ValueFile) -> bool {
        file.series.iter().any(|s| {
            self.parameters
                .as_ref()
                .is_none_or(|p| p.contains(s.parameter.as_str()))
                && self.from.is_none_or(|from| s.max >= from)
                && self.to.is_none_or(|to| s.min <= to)
        })
    }
}

pub(super) fn intersect(a: Option<HashSet<String>>, b: HashSet<String>) -> HashSet<String> {
    match a {
        Some(a) => a.intersection(&b).cloned().collect(),
        None => b,
    }
}

fn max_of(a: Option<Micros>, b: Option<Micros>) -> Option<Micros> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn min_of(a: Option<Micros>, b: Option<Micros>) -> Option<Micros> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Whether `t` holds text.
fn is_text(t: &DataType) -> bool {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, v) => is_text(v),
        _ => false,
    }
}

/// The text column `e` names, seen through casts to other text types (which keep every
/// value as it is). A cast to anything else compares otherwise (`CAST(station AS BIGINT) =
/// 25820100` lets `'025820100'` through too): no column whose texts this can pick.
fn column_of(e: &Expr) -> Option<&str> {
    match e {
        Expr::Column(c) => Some(&c.name),
        Expr::Cast(c) if is_text(c.field.data_type()) => column_of(&c.expr),
        Expr::TryCast(c) if is_text(c.field.data_type()) => column_of(&c.expr),
        _ => None,
    }
}

/// The literal `e` is, seen through casts between text types.
fn literal_of(e: &Expr) -> Option<&ScalarValue> {
    match e {
        Expr::Literal(v, _) => Some(v),
        Expr::Cast(c) if is_text(c.field.data_type()) => literal_of(&c.expr),
        Expr::TryCast(c) if is_text(c.field.data_type()) => literal_of(&c.expr),
        _ => None,
    }
}

fn text_of(v: &ScalarValue) -> Option<String> {
    match v {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(s.clone()),
        ScalarValue::Dictionary(_, inner) => text_of(inner),
        _ => None,
    }
}

/// The texts `filter` allows column `column` to be, if it allows only some: `column = 'x'`,
/// `column IN ('x', 'y')`, or such filters joined by OR, each a text column compared with a
/// text. Anything else (a number, a cast to one, a NULL) is None: it says nothing this reads.
pub(super) fn texts_of(filter: &Expr, column: &str) -> Option<HashSet<String>> {
    match filter {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::Eq => {
                let (c, v) = match (column_of(left), column_of(right)) {
                    (Some(c), None) => (c, literal_of(right)?),
                    (None, Some(c)) => (c, literal_of(left)?),
                    _ => return None,
                };
                if c != column {
                    return None;
                }
                Some(HashSet::from([text_of(v)?]))
            }
            Operator::Or => {
                let mut a = texts_of(left, column)?;
                a.extend(texts_of(right, column)?);
                Some(a)
            }
            _ => None,
        },
        Expr::InList(l) if !l.negated && column_of(&l.expr) == Some(column) => l
            .list
            .iter()
            .map(|e| literal_of(e).and_then(text_of))
            .collect(),
        _ => None,
    }
}

/// The stations of `candidates` that `filter`, a filter on `station` alone, lets through:
/// the filter evaluated over their ids as DataFusion evaluates it over the rows, so that any
/// form (a number compared with the text, `IN` of numbers, `NOT`, `LIKE`, `BETWEEN`) picks
/// exactly the stations whose rows it can let through. The filter is still applied to the
/// rows (it is `Inexact`), so this only spares reading other stations. None where the filter
/// reads other columns, is volatile (`random()`), or fails to evaluate (a text that is no
/// number under a cast to one): the scan then reads every station and the filter decides,
/// with whatever error it gives there.
pub(super) fn stations_passing<'a>(
    filter: &Expr,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<HashSet<String>> {
    let columns = filter.column_refs();
    if columns.len() != 1 || columns.iter().any(|c| c.name != COL_STATION) || filter.is_volatile() {
        return None;
    }
    let schema = Arc::new(Schema::new(vec![station_field()]));
    let df_schema = DFSchema::try_from(Arc::clone(&schema)).ok()?;
    let props = datafusion::execution::context::ExecutionProps::new();
    let planning =
        datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext::default();
    let predicate =
        datafusion::physical_expr::create_physical_expr(filter, &df_schema, &props, &planning)
            .ok()?;
    let ids: Vec<&str> = candidates.collect();
    let batch =
        RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(ids.clone()))]).ok()?;
    let passed = predicate
        .evaluate(&batch)
        .ok()?
        .into_array(batch.num_rows())
        .ok()?;
    let passed = passed.as_boolean_opt()?;
    Some(
        ids.iter()
            .enumerate()
            .filter(|&(i, _)| passed.is_valid(i) && passed.value(i))
            .map(|(_, id)| (*id).to_owned())
            .collect(),
    )
}

/// A literal time as UTC microseconds, rounded down and up (equal unless it has nanoseconds).
fn micros_of(v: &ScalarValue) -> Option<(Micros, Micros)> {
    let whole = |t: Option<Micros>| t.map(|t| (t, t));
    match v {
        ScalarValue::TimestampSecond(Some(t), _) => whole(t.checked_mul(1_000_000)),
        ScalarValue::TimestampMillisecond(Some(t), _) => whole(t.checked_mul(1_000)),
        ScalarValue::TimestampMicrosecond(Some(t), _) => whole(Some(*t)),
        ScalarValue::TimestampNanosecond(Some(t), _) => {
            let floor = t.div_euclid(1_000);
            Some((floor, floor + Micros::from(t.rem_euclid(1_000) != 0)))
        }
        _ => None,
    }
}

/// Whether `e` is `timestamp` with its every value kept apart: the column itself or cast to
/// a timestamp of micro- or nanoseconds (in any time zone: the instants are the same). A cast
/// to coarser units or another type is no bound this can read.
fn names_timestamp(e: &Expr) -> bool {
    match e {
        Expr::Column(c) => c.name == COL_TIMESTAMP,
        Expr::Cast(c) => {
            matches!(
                c.field.data_type(),
                DataType::Timestamp(TimeUnit::Microsecond | TimeUnit::Nanosecond, _)
            ) && names_timestamp(&c.expr)
        }
        _ => false,
    }
}

/// A literal as it is (the planner has folded casts of literals by now; one left over could
/// round the time).
fn time_literal(e: &Expr) -> Option<&ScalarValue> {
    match e {
        Expr::Literal(v, _) => Some(v),
        _ => None,
    }
}

/// The inclusive range of microseconds `filter` allows `timestamp`, if it is a comparison of
/// the column with a literal time (or a `BETWEEN` of two). Exact: the filter allows every row
/// in the range and no other, so that a scan reading exactly the range answers it.
fn time_bounds(filter: &Expr) -> Option<(Option<Micros>, Option<Micros>)> {
    Some(match filter {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (op, v) = match (names_timestamp(left), names_timestamp(right)) {
                (true, false) => (*op, time_literal(right)?),
                (false, true) => (op.swap()?, time_literal(left)?),
                _ => return None,
            };
            let (floor, ceil) = micros_of(v)?;
            match op {
                Operator::Eq => (Some(ceil), Some(floor)),
                Operator::Gt => (Some(floor.checked_add(1)?), None),
                Operator::GtEq => (Some(ceil), None),
                Operator::Lt => (None, Some(ceil.checked_sub(1)?)),
                Operator::LtEq => (None, Some(floor)),
                _ => return None,
            }
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) if names_timestamp(expr) => {
            let (_, low) = micros_of(time_literal(low)?)?;
            let (high, _) = micros_of(time_literal(high)?)?;
            (Some(low), Some(high))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{cast, col, lit};

    fn ts(s: &str) -> Expr {
        let t = chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .timestamp_micros();
        lit(ScalarValue::TimestampMicrosecond(
            Some(t),
            Some("UTC".into()),
        ))
    }

    fn set(v: &[&str]) -> Option<HashSet<String>> {
        Some(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn filters_pick_stations_series_and_months() {
        let filters = [
            col("station").eq(lit("a")).or(col("station").eq(lit("b"))),
            col("parameter").in_list(vec![lit("q"), lit("w")], false),
            col("timestamp").gt_eq(ts("2020-01-01T00:00:00Z")),
            ts("2021-01-01T00:00:00Z").gt(col("timestamp")),
            col("value").gt(lit(3.0)),
        ];
        let pick = Pick::of(&filters, &Vec::new);
        assert_eq!(pick.stations, set(&["a", "b"]));
        assert_eq!(pick.parameters, set(&["q", "w"]));
        assert_eq!(pick.from, Some(1_577_836_800_000_000));
        assert_eq!(pick.to, Some(1_609_459_199_999_999));
        // Two filters on one column: what both allow.
        let both = Pick::of(
            &[
                col("station").in_list(vec![lit("a"), lit("b")], false),
                col("station").eq(lit("b")),
            ],
            &Vec::new,
        );
        assert_eq!(both.stations, set(&["b"]));
        // What it cannot read picks nothing out.
        let none = Pick::of(
            &[
                col("station").eq(lit("a")).or(col("value").gt(lit(1.0))),
                col("station").eq(col("parameter")),
            ],
            &Vec::new,
        );
        assert_eq!(none, Pick::default());
    }

    /// Filters on `station` in other forms pick the stations they let through, evaluated
    /// over the ids as DataFusion evaluates them over the rows.
    #[test]
    fn other_station_filters_pick_what_they_let_through() {
        let ids = || vec!["a", "b", "25820100", "025820100", "25810300"];
        let pick = |f: Expr| Pick::of(&[f], &ids).stations;
        assert_eq!(
            pick(col("station").not_eq(lit("a"))),
            set(&["b", "25820100", "025820100", "25810300"])
        );
        assert_eq!(
            pick(col("station").in_list(vec![lit("a")], true)),
            set(&["b", "25820100", "025820100", "25810300"])
        );
        assert_eq!(pick(col("station").like(lit("2581%"))), set(&["25810300"]));
        // A number compared with the text: the ids that are that number, whatever their
        // leading zeros.
        let number = |f: Expr| Pick::of(&[f], &|| vec!["25820100", "025820100", "25810300"]);
        let as_number = cast(col("station"), DataType::Int64);
        assert_eq!(
            number(as_number.clone().eq(lit(25_820_100_i64))).stations,
            set(&["25820100", "025820100"])
        );
        assert_eq!(
            number(as_number.in_list(vec![lit(25_820_100_i64), lit(25_810_300_i64)], false))
                .stations,
            set(&["25820100", "025820100", "25810300"])
        );
        // Ids that are no number fail the cast: nothing is picked, every station is read.
        assert_eq!(
            pick(cast(col("station"), DataType::Int64).eq(lit(1_i64))),
            None
        );
    }

    #[test]
    fn time_bounds_are_the_exact_inclusive_range() {
        let t = 1_577_836_800_000_000;
        let at = ts("2020-01-01T00:00:00Z");
        let bound = |f: Expr| time_bounds(&f);
        assert_eq!(
            bound(col("timestamp").eq(at.clone())),
            Some((Some(t), Some(t)))
        );
        assert_eq!(
            bound(col("timestamp").gt(at.clone())),
            Some((Some(t + 1), None))
        );
        assert_eq!(
            bound(col("timestamp").gt_eq(at.clone())),
            Some((Some(t), None))
        );
        assert_eq!(
            bound(col("timestamp").lt(at.clone())),
            Some((None, Some(t - 1)))
        );
        assert_eq!(
            bound(col("timestamp").lt_eq(at.clone())),
            Some((None, Some(t)))
        );
        assert_eq!(
            bound(at.clone().lt(col("timestamp"))),
            Some((Some(t + 1), None))
        );
        assert_eq!(
            bound(col("timestamp").between(at.clone(), ts("2020-01-02T00:00:00Z"))),
            Some((Some(t), Some(t + 86_400_000_000)))
        );
        // Nanoseconds: rounded inwards, as the comparison in nanoseconds would have it.
        let ns = |n: i64| lit(ScalarValue::TimestampNanosecond(Some(n), None));
        let fine = cast(
            col("timestamp"),
            DataType::Timestamp(TimeUnit::Nanosecond, None),
        );
        assert_eq!(bound(fine.clone().gt(ns(1_500))), Some((Some(2), None)));
        assert_eq!(bound(fine.clone().gt_eq(ns(1_500))), Some((Some(2), None)));
        assert_eq!(bound(fine.clone().lt(ns(1_500))), Some((None, Some(1))));
        assert_eq!(
            bound(fine.clone().lt_eq(ns(-1_500))),
            Some((None, Some(-2)))
        );
        assert_eq!(bound(fine.eq(ns(1_500))), Some((Some(2), Some(1))));
        // A cast that merges instants (to seconds, to a date) bounds nothing.
        let coarse = cast(
            col("timestamp"),
            DataType::Timestamp(TimeUnit::Second, None),
        );
        let s = lit(ScalarValue::TimestampSecond(Some(10), None));
        assert_eq!(bound(coarse.lt_eq(s)), None);
        assert_eq!(
            bound(cast(col("timestamp"), DataType::Date32).eq(lit(ScalarValue::Date32(Some(1))))),
            None
        );
        assert_eq!(bound(col("value").gt(at)), None);
    }
}
