//! The DataFusion path of answers sorted by value or quality: one Parquet scan with a
//! predicate over the window's month files, as DataFusion plans it: the files in the order
//! given, one partition, the predicate pushed into row-group, page and row filtering, footers
//! and page indexes from DataFusion's own metadata cache. The plan's sort is added by `plan`.
//! Answers in time order do not come here (see the `query` module).

use crate::dataset::ScanSource;
use crate::dataset::layout::values_schema;
use crate::dataset::manifest::ValueFile;
use crate::error::Result;
use crate::query::spec::{ValueColumn, column_indices};
use crate::storage::pack_view::month_in_pack;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::ExecutionPlan;
use std::sync::Arc;

/// The name a scan reads `file` by: its own, or for a file in a pack its name in the pack
/// view (see `storage::pack_view`).
fn scanned_name(file: &ValueFile) -> String {
    match file.pack {
        Some(_) => month_in_pack(&file.object(), file.offset(), file.size),
        None => file.path(),
    }
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

    pub(crate) fn scan(
        &self,
        files: &[&ValueFile],
        predicate: Arc<dyn PhysicalExpr>,
        columns: &[ValueColumn],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = values_schema();
        let source = ParquetSource::new(Arc::clone(&schema))
            .with_predicate(predicate)
            .with_pushdown_filters(true)
            .with_reorder_filters(true)
            .with_enable_page_index(true)
            .with_parquet_file_reader_factory(self.reader_factory.clone());
        let group: FileGroup = files
            .iter()
            .map(|f| PartitionedFile::new(scanned_name(f), f.size))
            .collect();
        self.build(source, group, columns, limit)
    }
}
