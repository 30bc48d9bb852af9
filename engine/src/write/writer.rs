//! Writing a dataset: value files station-month by station-month, then the catalog, then
//! the manifest. The manifest is written last with one atomic PUT (the local store writes a
//! temporary file and renames it), so until then readers keep seeing the previous version;
//! an import that crashes leaves only unreferenced files behind, which the next publish
//! removes.

use crate::dataset::catalog_file;
use crate::dataset::layout::{
    self, COL_PARAMETER, COL_QUALITY, COL_TIMESTAMP, COL_VALUE, MANIFEST, UTC,
};
use crate::dataset::manifest::{CatalogFiles, Counts, FORMAT, Manifest, SeriesStats, ValueFile};
use crate::error::{EngineError, Result};
use crate::model::ids::{ParameterId, StationId};
use crate::model::{Characteristic, Micros, Parameter, Period, Station};
use bytes::Bytes;
use chrono::{SecondsFormat, Utc};
use datafusion::arrow::array::{
    ArrayRef, Float64Array, RecordBatch, StringDictionaryBuilder, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::Int32Type;
use datafusion::object_store::path::Path;
use datafusion::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use datafusion::parquet::arrow::ArrowWriter;
use futures::TryStreamExt;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

/// One parameter's values in one month, ascending by timestamp.
#[derive(Debug, Clone)]
pub struct SeriesChunk {
    pub parameter: ParameterId,
    pub timestamps: Vec<Micros>,
    pub values: Vec<f64>,
    pub quality: Vec<&'static str>,
}

/// `YYYY-MM` of a UTC timestamp.
pub fn month_of(ts: Micros) -> String {
    chrono::DateTime::<Utc>::from_timestamp_micros(ts)
        .map(|t| t.format("%Y-%m").to_string())
        .unwrap_or_else(|| "0000-00".into())
}

/// Encodes one station-month (chunks sorted by parameter, one row group each) as Parquet.
pub fn encode_month(chunks: &mut [SeriesChunk]) -> Result<(Bytes, Vec<SeriesStats>)> {
    chunks.sort_by(|a, b| a.parameter.cmp(&b.parameter));
    let schema = layout::values_schema();
    let mut buf = Vec::with_capacity(64 * 1024);
    let repeating = layout::values_repeat(chunks.iter().flat_map(|c| c.values.iter().copied()));
    let mut writer = ArrowWriter::try_new(
        &mut buf,
        Arc::clone(&schema),
        Some(layout::value_file_properties(repeating)),
    )?;
    let mut stats = Vec::new();
    for chunk in chunks.iter() {
        let n = chunk.timestamps.len();
        if n == 0 {
            continue;
        }
        if chunk.timestamps.windows(2).any(|w| w[0] >= w[1]) {
            return Err(EngineError::Internal(format!(
                "series {} is not strictly ascending in time",
                chunk.parameter
            )));
        }
        let mut params = StringDictionaryBuilder::<Int32Type>::new();
        params.append_values(chunk.parameter.as_str(), n);
        let mut quality = StringDictionaryBuilder::<Int32Type>::new();
        for q in &chunk.quality {
            quality.append_value(q);
        }
        let columns: Vec<(&str, ArrayRef)> = vec![
            (COL_PARAMETER, Arc::new(params.finish())),
            (
                COL_TIMESTAMP,
                Arc::new(
                    TimestampMicrosecondArray::from(chunk.timestamps.clone()).with_timezone(UTC),
                ),
            ),
            (
                COL_VALUE,
                Arc::new(Float64Array::from(chunk.values.clone())),
            ),
            (COL_QUALITY, Arc::new(quality.finish())),
        ];
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            columns.into_iter().map(|(_, c)| c).collect(),
        )?;
        writer.write(&batch)?;
        writer.flush()?;
        stats.push(SeriesStats {
            parameter: chunk.parameter.to_string(),
            rows: n as u64,
            min: chunk.timestamps[0],
            max: chunk.timestamps[n - 1],
        });
    }
    writer.close()?;
    Ok((Bytes::from(buf), stats))
}

/// Collects what an import or generator writes and publishes it as one new version.
pub struct DatasetWriter {
    store: Arc<dyn ObjectStore>,
    generation: u64,
    files: Mutex<Vec<ValueFile>>,
}

impl DatasetWriter {
    /// Starts the next generation after the one currently published (if any).
    pub async fn begin(store: Arc<dyn ObjectStore>) -> Result<Self> {
        let previous = crate::dataset::read_manifest(store.as_ref()).await?;
        let generation = previous.map_or(1, |m| m.generation + 1);
        Ok(Self {
            store,
            generation,
            files: Mutex::new(Vec::new()),
        })
    }

    async fn put(&self, path: &str, bytes: Bytes) -> Result<()> {
        self.store
            .put(&Path::from(path), PutPayload::from_bytes(bytes))
            .await?;
        Ok(())
    }

    /// Writes one encoded station-month.
    pub async fn write_month(
        &self,
        station: &StationId,
        month: &str,
        bytes: Bytes,
        series: Vec<SeriesStats>,
    ) -> Result<()> {
        let path = layout::values_path(station, month, self.generation);
        let size = bytes.len() as u64;
        self.put(&path, bytes).await?;
        let file = ValueFile {
            path,
            station: station.to_string(),
            month: month.to_owned(),
            size,
            series,
        };
        self.files
            .lock()
            .map_err(|_| EngineError::Internal("writer state poisoned".into()))?
            .push(file);
        Ok(())
    }

    /// Deletes the value files written so far: what an import that failed after it began
    /// writing leaves behind. Best effort, like the cleanup after a publish.
    pub async fn abandon(&self) {
        let files = match self.files.lock() {
            Ok(mut f) => std::mem::take(&mut *f),
            Err(_) => return,
        };
        for f in files {
            if let Err(e) = self.store.delete(&Path::from(f.path.as_str())).await {
                tracing::warn!("cleanup: cannot delete {}: {e}", f.path);
            }
        }
    }

    /// Writes the catalog and the manifest. Parameters' availability is derived from the
    /// value files written, so it is always true to the data.
    pub async fn publish(
        self,
        stations: &[Station],
        mut parameters: Vec<Parameter>,
        characteristics: &[Characteristic],
    ) -> Result<Manifest> {
        let mut files = self
            .files
            .into_inner()
            .map_err(|_| EngineError::Internal("writer state poisoned".into()))?;
        files.sort_by(|a, b| (&a.station, &a.month).cmp(&(&b.station, &b.month)));
        let mut ranges: BTreeMap<(String, String), Period> = BTreeMap::new();
        for f in &files {
            for s in &f.series {
                ranges
                    .entry((f.station.clone(), s.parameter.clone()))
                    .and_modify(|p| {
                        p.start = p.start.min(s.min);
                        p.end = p.end.max(s.max);
                    })
                    .or_insert(Period {
                        start: s.min,
                        end: s.max,
                    });
            }
        }
        for p in &mut parameters {
            p.availability = ranges
                .get(&(p.station.to_string(), p.id.to_string()))
                .map(|r| vec![*r])
                .unwrap_or_default();
        }
        let g = self.generation;
        let catalog = CatalogFiles {
            stations: layout::catalog_path("stations", g),
            parameters: layout::catalog_path("parameters", g),
            characteristics: layout::catalog_path("characteristics", g),
        };
        let store = Arc::clone(&self.store);
        let put = |path: String, bytes: Bytes| {
            let store = Arc::clone(&store);
            async move {
                store
                    .put(&Path::from(path), PutPayload::from_bytes(bytes))
                    .await?;
                Ok::<_, EngineError>(())
            }
        };
        put(
            catalog.stations.clone(),
            catalog_file::encode_stations(stations)?,
        )
        .await?;
        put(
            catalog.parameters.clone(),
            catalog_file::encode_parameters(&parameters)?,
        )
        .await?;
        put(
            catalog.characteristics.clone(),
            catalog_file::encode_characteristics(characteristics)?,
        )
        .await?;
        let created = Utc::now();
        let manifest = Manifest {
            format: FORMAT,
            version: format!("{g}-{}", created.format("%Y%m%dT%H%M%S%.3fZ")),
            generation: g,
            created: created.to_rfc3339_opts(SecondsFormat::Secs, false),
            counts: Counts {
                stations: stations.len() as u64,
                parameters: parameters.len() as u64,
                characteristics: characteristics.len() as u64,
                values: files.iter().flat_map(|f| &f.series).map(|s| s.rows).sum(),
                files: files.len() as u64,
            },
            catalog,
            files,
        };
        let json = serde_json::to_vec(&manifest)
            .map_err(|e| EngineError::Internal(format!("manifest: {e}")))?;
        put(MANIFEST.to_owned(), Bytes::from(json)).await?;
        remove_unreferenced(store.as_ref(), &manifest).await;
        Ok(manifest)
    }
}

/// Best effort: deletes files of earlier or crashed imports. A failure here leaves garbage,
/// never a broken dataset.
async fn remove_unreferenced(store: &dyn ObjectStore, manifest: &Manifest) {
    let keep: HashSet<&str> = manifest
        .files
        .iter()
        .map(|f| f.path.as_str())
        .chain([
            manifest.catalog.stations.as_str(),
            manifest.catalog.parameters.as_str(),
            manifest.catalog.characteristics.as_str(),
            MANIFEST,
        ])
        .collect();
    for prefix in ["values", "catalog"] {
        let listed: Vec<_> = match store.list(Some(&Path::from(prefix))).try_collect().await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("cleanup: cannot list {prefix}: {e}");
                continue;
            }
        };
        for meta in listed {
            if !keep.contains(meta.location.as_ref())
                && let Err(e) = store.delete(&meta.location).await
            {
                tracing::warn!("cleanup: cannot delete {}: {e}", meta.location);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};

    fn month(values: Vec<f64>) -> SeriesChunk {
        let start = 1_420_070_400_000_000;
        SeriesChunk {
            parameter: "discharge-15min".parse().unwrap(),
            timestamps: (0..values.len() as i64)
                .map(|i| start + i * 900_000_000)
                .collect(),
            quality: vec!["good"; values.len()],
            values,
        }
    }

    /// Whether the value column of an encoded month has a dictionary page, after checking that
    /// its values read back as written.
    fn value_dictionary(values: Vec<f64>) -> bool {
        let (bytes, _) = encode_month(&mut [month(values.clone())]).unwrap();
        let batches: Vec<RecordBatch> = ParquetRecordBatchReaderBuilder::try_new(bytes.clone())
            .unwrap()
            .build()
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        let read: Vec<f64> = batches
            .iter()
            .flat_map(|b| {
                let c = b.column_by_name(COL_VALUE).unwrap();
                let c = c.as_any().downcast_ref::<Float64Array>().unwrap();
                c.values().to_vec()
            })
            .collect();
        assert_eq!(read, values);
        let file = SerializedFileReader::new(bytes).unwrap();
        let group = file.metadata().row_group(0);
        let value = group
            .columns()
            .iter()
            .find(|c| c.column_path().string() == COL_VALUE);
        value.unwrap().dictionary_page_offset().is_some()
    }

    /// Values that repeat (whole centimetres) keep a dictionary; values that are nearly all
    /// distinct are written plain.
    #[test]
    fn a_dictionary_only_for_repeating_values() {
        let levels = (0..2976).map(|i| f64::from(300 + (i / 40) % 50)).collect();
        assert!(value_dictionary(levels));
        let discharges = (0..2976).map(|i| 466.16 + f64::from(i) * 0.37).collect();
        assert!(!value_dictionary(discharges));
    }
}
