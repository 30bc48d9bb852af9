//! The newest value of each series, for "the latest value of every gauge".
//!
//! Each version keeps every series' newest value in memory (a timestamp, a value and a
//! quality: tens of bytes a series), so that a whole network's latest values cost a lookup
//! per series rather than a month read each. A version is immutable, so what is kept is never
//! stale. The publish that wrote the version found them as it wrote the months, and its
//! parameters table gives them (`Parameter::latest`), so a version opened knows them without
//! reading a value file: at 200 000 station-years, finding them in the values took 13 s and
//! ~30 000 month reads (GETs, from a bucket) in every replica at every start.
//!
//! A series the table gives none for (tables written before it, or a publish that carried a
//! month whose newest value it did not know) is found in the values: by
//! [`Dataset::warm_latest`] in the background when a version is opened, and by a request that
//! comes before it is done (the newest row of the series' last month file, several at once).
//! A version that follows another takes over those its predecessor found, of the series whose
//! newest month file it shares ([`Dataset::carry_latest`]).

pub(crate) use crate::dataset::latest_values::Latest;
use crate::dataset::station_files::SeriesNewest;
use crate::dataset::{Dataset, StationFiles};
use crate::error::{EngineError, Result};
use crate::model::gap::is_gap;
use crate::model::ids::Series;
use crate::model::ids::StationId;
use crate::query::plan::into_batch;
use crate::query::spec::{ReadAhead, ValuesQuery, Window};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int32Type, TimestampMicrosecondType};
use futures::{StreamExt, TryStreamExt};
use std::sync::Arc;

/// Series read at once while finding newest values.
const READS_AT_ONCE: usize = 8;

impl Dataset {
    /// The newest value of each of `series`, in their order.
    pub async fn latest(&self, series: &[Series]) -> Result<Vec<Option<Latest>>> {
        let known: Vec<Option<Option<Latest>>> =
            series.iter().map(|s| self.latest.get(s)).collect();
        let missing: Vec<Series> = series
            .iter()
            .zip(&known)
            .filter(|(_, k)| k.is_none())
            .map(|(s, _)| s.clone())
            .collect();
        let found: Vec<Option<Latest>> = futures::stream::iter(missing.clone())
            .map(|s| async move {
                let months = self.station_files(&s.0).await?;
                self.newest(&months, &s).await
            })
            .buffered(READS_AT_ONCE)
            .try_collect()
            .await?;
        for (s, latest) in missing.into_iter().zip(&found) {
            self.latest.put(s, latest.clone());
        }
        let mut found = found.into_iter();
        Ok(known
            .into_iter()
            .map(|k| k.unwrap_or_else(|| found.next().flatten()))
            .collect())
    }

    /// Keeps the newest values `previous` has found for the series this version does not
    /// know and whose newest month file is the same file (station, month and generation) in
    /// both versions: files are never rewritten in place, so such a series' newest value is
    /// the same. Returns how many. The newest months are those both versions know without
    /// reading (`Dataset::series_newest`: listed by the version, or its station decoded
    /// whole, as [`Dataset::carry_months`] does for the stations `previous` had decoded); the
    /// other series are left to [`Self::warm_latest`] and the requests for them.
    pub fn carry_latest(&self, previous: &Dataset) -> usize {
        let file = |n: &SeriesNewest| (n.month.file.month, n.month.file.generation);
        let mut carried = 0;
        for ((station, parameter), latest) in previous.latest.snapshot() {
            let series = (station, parameter);
            if self.latest.get(&series).is_some() {
                continue;
            }
            let there = previous.series_newest(&series.0, &series.1).map(file);
            let here = self.series_newest(&series.0, &series.1).map(file);
            if here.is_some() && here == there {
                self.latest.put(series, latest);
                carried += 1;
            }
        }
        carried
    }

    /// Finds the newest value of every series the parameters table gives none for, so that
    /// requests find them kept. It decodes those stations' files as a pass (see
    /// `Dataset::station_files_in_pass`), several stations at once. A series that cannot be
    /// read is left to the request that asks for it (which then fails as a read does).
    pub async fn warm_latest(self: Arc<Self>) {
        let started = std::time::Instant::now();
        let this = &self;
        futures::stream::iter(self.stations_with_files())
            .for_each_concurrent(READS_AT_ONCE, |station| async move {
                if let Err(e) = this.warm_station(station).await {
                    tracing::warn!("finding the newest values of station {station}: {e}");
                }
            })
            .await;
        tracing::info!(
            version = %self.manifest.version,
            series = self.latest.len(),
            seconds = started.elapsed().as_secs_f64(),
            "found the newest value of every series"
        );
    }

    /// Series whose newest value this version has found (every series once
    /// [`Self::warm_latest`] is done).
    pub fn newest_values_known(&self) -> usize {
        self.latest.len()
    }

    /// Finds the newest values of `station`'s series not known yet; a station whose series
    /// are all known is not decoded.
    async fn warm_station(&self, station: &StationId) -> Result<()> {
        let unknown: Vec<Series> = self
            .catalog
            .parameters(station)
            .iter()
            .map(|p| (station.clone(), p.id.clone()))
            .filter(|series| self.latest.get(series).is_none())
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let months = self.station_files_in_pass(station).await?;
        for series in unknown {
            let latest = self.newest(&months, &series).await?;
            self.latest.put(series, latest);
        }
        Ok(())
    }

    /// The newest row of `series` with a value: `recent=1`, or where the newest rows are
    /// recorded gaps (a station that went silent), the rows before them, read sixteen times
    /// as many at a time.
    async fn newest(
        &self,
        months: &StationFiles,
        (station, parameter): &Series,
    ) -> Result<Option<Latest>> {
        let mut rows = 1u64;
        loop {
            let window = Window::Recent(rows);
            let query = ValuesQuery::of_series(station.clone(), parameter.clone(), window);
            let batches: Vec<RecordBatch> = self
                .plan_all_in(months, &query, false, ReadAhead::Monthly)
                .await?
                .parts
                .map(into_batch)
                .try_collect()
                .await?;
            for batch in batches.iter().rev() {
                if let Some(latest) = newest_with_value(batch)? {
                    return Ok(Some(latest));
                }
            }
            let read: usize = batches.iter().map(RecordBatch::num_rows).sum();
            if (read as u64) < rows {
                return Ok(None);
            }
            rows = rows.saturating_mul(16);
        }
    }
}

/// The newest row of `batch` (time, value, quality) whose value is not a recorded gap.
fn newest_with_value(batch: &RecordBatch) -> Result<Option<Latest>> {
    let bad = || EngineError::corrupt("a values batch without its columns");
    if batch.num_columns() < 3 {
        return Err(bad());
    }
    let times = batch
        .column(0)
        .as_primitive_opt::<TimestampMicrosecondType>()
        .ok_or_else(bad)?;
    let values = batch
        .column(1)
        .as_primitive_opt::<Float64Type>()
        .ok_or_else(bad)?;
    let quality = batch
        .column(2)
        .as_dictionary_opt::<Int32Type>()
        .ok_or_else(bad)?;
    let Some(last) = (0..batch.num_rows())
        .rev()
        .find(|&i| values.is_valid(i) && !is_gap(values.value(i)))
    else {
        return Ok(None);
    };
    let texts = quality.values().as_string_opt::<i32>().ok_or_else(bad)?;
    let key = usize::try_from(quality.keys().value(last)).map_err(|_| bad())?;
    Ok(Some(Latest {
        timestamp: times.value(last),
        value: values.value(last),
        quality: Arc::from(texts.value(key)),
    }))
}
