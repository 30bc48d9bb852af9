//! Where each station's rows lie in the table: the index built from its `station` and `month`
//! columns when a version is opened, and the row groups a station's rows are in.

use super::{
    BATCH_ROWS, FilesByStation, FilesCache, Located, RUN_GAP_ROWS, Source, YearRows, damaged,
    month_bit,
};
use crate::dataset::catalog_file::Interner;
use crate::dataset::table_bytes::TableBytes;
use crate::error::{EngineError, Result};
use crate::model::ids::StationId;
use crate::model::month::Month;
use datafusion::arrow::array::{Array, AsArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, FieldRef, Int32Type, Schema};
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::PageIndexPolicy;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

pub(super) struct Indexer {
    name: String,
    /// The footer with `station` and `month` read as dictionaries (see [`places_as_keys`]).
    keyed: ArrowReaderMetadata,
    located_by: ProjectionMask,
    /// The first row of each row group, and the rows of all of them at the end.
    group_starts: Vec<u64>,
    texts: Interner,
    /// Each station's runs, in the order of its first row; looked up by id once per
    /// dictionary value of a batch (a row group's stations), a row compared with the one
    /// before by its key.
    runs: Vec<(StationId, Vec<YearRows>)>,
    index: HashMap<StationId, usize>,
    /// The station (in `runs`), year and run of the row before.
    last: Option<(usize, i32, usize)>,
    /// The next row's number.
    row: u64,
}

impl Indexer {
    pub(super) fn new(metadata: &ArrowReaderMetadata, name: &str) -> Result<Self> {
        let mut group_starts = vec![0u64];
        for g in metadata.metadata().row_groups() {
            let rows = u64::try_from(g.num_rows()).unwrap_or(0);
            group_starts.push(group_starts[group_starts.len() - 1] + rows);
        }
        Ok(Self {
            name: name.to_owned(),
            keyed: places_as_keys(metadata).map_err(damaged(name))?,
            located_by: ProjectionMask::columns(metadata.parquet_schema(), ["station", "month"]),
            group_starts,
            texts: Interner::default(),
            runs: Vec::new(),
            index: HashMap::new(),
            last: None,
            row: 0,
        })
    }

    /// Indexes the rows of row groups `groups` (the next ones, ascending), whose bytes `bytes`
    /// holds.
    pub(super) fn add(&mut self, bytes: &TableBytes, groups: &[usize]) -> Result<()> {
        let name = self.name.clone();
        // A reader a row group: a batch that spans two row groups (two dictionaries) is built
        // again value by value into one dictionary, which cost more than reading texts.
        for &g in groups {
            let batches = ParquetRecordBatchReaderBuilder::new_with_metadata(
                bytes.clone(),
                self.keyed.clone(),
            )
            .with_projection(self.located_by.clone())
            .with_row_groups(vec![g])
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(damaged(&name))?;
            for batch in batches {
                self.add_batch(&batch.map_err(damaged(&name))?)?;
            }
        }
        Ok(())
    }

    fn add_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let name = &self.name;
        let (station_keys, station_ids) = keyed(batch, "station", name)?;
        let (month_keys, month_texts) = keyed(batch, "month", name)?;
        // Each dictionary value's station (in `runs`) and year with its month's bit, once a
        // row used it.
        let mut stations: Vec<Option<usize>> = vec![None; station_ids.len()];
        let mut years: Vec<Option<(i32, u16)>> = vec![None; month_texts.len()];
        let runs = &mut self.runs;
        let row = &mut self.row;
        for (&station_key, &month_key) in station_keys.iter().zip(month_keys) {
            let (year, bit) = match years.get(month_key as usize) {
                Some(Some(year)) => *year,
                _ => {
                    let text = dictionary_value(month_texts, month_key, name)?;
                    let month: Month = text
                        .parse()
                        .map_err(|e: String| EngineError::corrupt(format!("{name}: {e}")))?;
                    let year = (month.year(), month_bit(month));
                    years[month_key as usize] = Some(year);
                    year
                }
            };
            let s = match stations.get(station_key as usize) {
                Some(Some(s)) => *s,
                _ => {
                    let text = dictionary_value(station_ids, station_key, name)?;
                    let id = self.texts.id(text, "files table")?;
                    let s = match self.index.get(&id) {
                        Some(&s) => s,
                        None => {
                            self.index.insert(id.clone(), runs.len());
                            runs.push((id, Vec::new()));
                            runs.len() - 1
                        }
                    };
                    stations[station_key as usize] = Some(s);
                    s
                }
            };
            if let Some((ls, y, run)) = self.last
                && ls == s
                && y == year
            {
                let run = &mut runs[s].1[run];
                run.rows.end = *row + 1;
                run.months |= bit;
                *row += 1;
                continue;
            }
            let years = &mut runs[s].1;
            let run = match years.iter().rposition(|r| r.year == year) {
                Some(j) if *row - years[j].rows.end <= RUN_GAP_ROWS => {
                    years[j].rows.end = *row + 1;
                    years[j].months |= bit;
                    j
                }
                _ => {
                    years.push(YearRows {
                        year,
                        rows: *row..*row + 1,
                        months: bit,
                    });
                    years.len() - 1
                }
            };
            self.last = Some((s, year, run));
            *row += 1;
        }
        Ok(())
    }

    pub(super) fn finish(
        self,
        path: String,
        source: Source,
        metadata: ArrowReaderMetadata,
        cache: Arc<FilesCache>,
    ) -> FilesByStation {
        let order: Vec<StationId> = self.runs.iter().map(|(id, _)| id.clone()).collect();
        let stations = self
            .runs
            .into_iter()
            .map(|(id, mut years)| {
                years.sort_by_key(|y| (y.year, y.rows.start));
                let located = Located {
                    years: years.into_boxed_slice(),
                    files: Arc::default(),
                    newest: OnceLock::new(),
                };
                (id, located)
            })
            .collect();
        FilesByStation {
            path,
            source,
            metadata,
            group_starts: self.group_starts,
            stations,
            order,
            cache,
        }
    }
}

/// The rows of `years`, as ascending runs that do not overlap (a year's run may hold rows of
/// another, see [`Located::years`]).
pub(super) fn selected_runs(years: &[&YearRows]) -> Vec<Range<u64>> {
    let mut rows: Vec<Range<u64>> = years.iter().map(|y| y.rows.clone()).collect();
    rows.sort_by_key(|r| r.start);
    let mut runs: Vec<Range<u64>> = Vec::with_capacity(rows.len());
    for r in rows {
        match runs.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => runs.push(r),
        }
    }
    runs
}

/// `metadata` with the `station` and `month` columns read as dictionaries (Int32 keys, the
/// texts of their row group's dictionary page): indexing the table then compares a row's
/// keys with the row before's and looks up and parses each text once per batch. Read as text,
/// every row's two strings were copied out of the dictionary and compared (the two index
/// passes of a one-value append at 2.4 M files were 39 % of its CPU, `perf`).
fn places_as_keys(
    metadata: &ArrowReaderMetadata,
) -> std::result::Result<ArrowReaderMetadata, ParquetError> {
    let keyed = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let fields: Vec<FieldRef> = metadata
        .schema()
        .fields()
        .iter()
        .map(|f| match f.name().as_str() {
            "station" | "month" => Arc::new(f.as_ref().clone().with_data_type(keyed.clone())),
            _ => Arc::clone(f),
        })
        .collect();
    let schema = Schema::new_with_metadata(fields, metadata.schema().metadata().clone());
    let options = ArrowReaderOptions::new()
        .with_schema(Arc::new(schema))
        .with_column_index_policy(PageIndexPolicy::Skip)
        .with_offset_index_policy(PageIndexPolicy::Optional);
    ArrowReaderMetadata::try_new(Arc::clone(metadata.metadata()), options)
}

/// The keys of the dictionary column `column` of `batch` (of `table`) and its texts.
fn keyed<'a>(
    batch: &'a RecordBatch,
    column: &str,
    table: &str,
) -> Result<(&'a [i32], &'a StringArray)> {
    let keys = batch
        .column_by_name(column)
        .and_then(|c| c.as_dictionary_opt::<Int32Type>())
        .ok_or_else(|| EngineError::corrupt(format!("{table}: no column {column} of texts")))?;
    let texts = keys
        .values()
        .as_string_opt::<i32>()
        .ok_or_else(|| EngineError::corrupt(format!("{table}: column {column} is not text")))?;
    Ok((keys.keys().values(), texts))
}

/// The text of dictionary key `key` of `texts`.
fn dictionary_value<'a>(texts: &'a StringArray, key: i32, table: &str) -> Result<&'a str> {
    usize::try_from(key)
        .ok()
        .filter(|&k| k < texts.len())
        .map(|k| texts.value(k))
        .ok_or_else(|| EngineError::corrupt(format!("{table}: dictionary key {key} out of range")))
}

impl FilesByStation {
    /// For each row group, whether it holds rows of one of `stations`, or may: a station's
    /// runs take in the few rows of others between its own, so a group at a run's edge may be
    /// said to hold the station without doing so.
    pub(crate) fn groups_holding<'a>(
        &self,
        stations: impl IntoIterator<Item = &'a StationId>,
    ) -> Vec<bool> {
        let mut holding = vec![false; self.row_groups()];
        for located in stations.into_iter().filter_map(|s| self.stations.get(s)) {
            for run in located.years.iter().map(|y| &y.rows) {
                // The group that holds the run's first row, and those after it that it
                // reaches into.
                let mut g = self
                    .group_starts
                    .partition_point(|&start| start <= run.start)
                    .saturating_sub(1);
                while g < holding.len() && self.group_starts[g] < run.end {
                    holding[g] = true;
                    g += 1;
                }
            }
        }
        holding
    }

    /// The row groups that hold rows of `runs`.
    pub(super) fn groups_of(&self, runs: &[Range<u64>]) -> Vec<usize> {
        (0..self.group_starts.len() - 1)
            .filter(|&g| {
                let rows = self.group_starts[g]..self.group_starts[g + 1];
                runs.iter()
                    .any(|r| r.start < rows.end && rows.start < r.end)
            })
            .collect()
    }
}
