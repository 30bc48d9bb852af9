//! The DataFusion path of answers sorted by value or quality: one Parquet scan with a
//! predicate over the window's month files, as DataFusion plans it: the files in the order
//! given, one partition, the predicate pushed into row-group, page and row filtering, footers
//! and page indexes from DataFusion's own metadata cache. The plan's sort is added by `plan`.
//! Answers in time order do not come here (see the `query` module).
//!
//! A month of a station-year file is that file with only the month's row groups scanned (a
//! `ParquetAccessPlan`): the year's months the window needs are one file of the scan, so its
//! footer is read once.

use crate::dataset::ScanSource;
use crate::dataset::layout::{values_schema, values_schema_with_gaps};
use crate::dataset::manifest::{Stored, ValueFile};
use crate::error::Result;
use crate::query::spec::{ValueColumn, column_indices};
use crate::storage::pack_view::month_in_pack;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetAccessPlan;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::ExecutionPlan;
use std::sync::Arc;

/// The files a scan of `files` (in that order) reads: each by its own name, a month file in
/// a pack by its name in the pack view (see `storage::pack_view`), the months of a
/// station-year file that follow each other as that file with their row groups selected.
pub(crate) fn scanned(files: &[&ValueFile]) -> Vec<PartitionedFile> {
    // (name, size, for a station-year file the row groups scanned)
    let mut out: Vec<(String, u64, Option<ParquetAccessPlan>)> = Vec::with_capacity(files.len());
    for f in files {
        let name = match f.stored {
            Stored::Pack { .. } => month_in_pack(&f.object(), f.offset(), f.size),
            _ => f.object(),
        };
        let Stored::Year(y) = f.stored else {
            out.push((name, f.size, None));
            continue;
        };
        let plan = match out.last_mut() {
            Some((last, _, Some(plan))) if *last == name => plan,
            _ => {
                let none = ParquetAccessPlan::new_none(y.row_groups as usize);
                out.push((name, f.size, Some(none)));
                match out.last_mut() {
                    Some((_, _, Some(plan))) => plan,
                    _ => continue,
                }
            }
        };
        // The files table's rows lie within the file (`files_table::decode_files`).
        (0..f.series.len())
            .map(|i| f.row_group(i))
            .filter(|&g| g < y.row_groups as usize)
            .for_each(|g| plan.scan(g));
    }
    out.into_iter()
        .map(|(name, size, plan)| {
            let file = PartitionedFile::new(name, size);
            match plan {
                Some(plan) => file.with_extension(plan),
                None => file,
            }
        })
        .collect()
}

impl ScanSource {
    fn build(
        &self,
        source: ParquetSource,
        group: FileGroup,
        columns: &[ValueColumn],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let indices = column_indices(columns)?;
        let config = FileScanConfigBuilder::new(self.store_url.clone(), Arc::new(source))
            .with_file_group(group)
            .with_projection_indices(Some(indices))?
            .with_limit(limit)
            .with_preserve_order(true)
            .build();
        Ok(DataSourceExec::from_data_source(config))
    }

    /// A scan of `files`; `gaps`: the version holds recorded gaps, and the table's `value`
    /// is nullable as the months that hold them have it.
    pub(crate) fn scan(
        &self,
        files: &[&ValueFile],
        predicate: Arc<dyn PhysicalExpr>,
        columns: &[ValueColumn],
        limit: Option<usize>,
        gaps: bool,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = match gaps {
            true => values_schema_with_gaps(),
            false => values_schema(),
        };
        let source = ParquetSource::new(Arc::clone(&schema))
            .with_predicate(predicate)
            .with_pushdown_filters(true)
            .with_reorder_filters(true)
            .with_enable_page_index(true)
            .with_parquet_file_reader_factory(self.reader_factory.clone());
        let group: FileGroup = scanned(files).into_iter().collect();
        self.build(source, group, columns, limit)
    }
}
