//! The records of one bucket (or part of one), sorted and cut into station-months: what a value
//! file holds. Timestamps repeated within a series are found here, once the rows are sorted.

use super::QUALITY_FLAGS;
use super::rows::{Offset, Rec, SeriesIndex};
use crate::model::ids::StationId;
use crate::model::month::Month;
use crate::write::writer::SeriesChunk;

/// A timestamp that two rows of one series share.
pub(super) struct Repeated {
    pub(super) first: Place,
    pub(super) again: Place,
    pub(super) series: u32,
    pub(super) ts: i64,
}

/// Where a row came from: input file index, line (or row), and the offset its time was
/// written in.
pub(super) struct Place {
    pub(super) file: u32,
    pub(super) line: u64,
    pub(super) offset: Offset,
}

impl From<&Rec> for Place {
    fn from(r: &Rec) -> Self {
        Place {
            file: r.file,
            line: r.line,
            offset: r.offset,
        }
    }
}

/// Sorts `records` by (series, time) and returns the repeated timestamps.
pub(super) fn sort_and_check(records: &mut [Rec]) -> Vec<Repeated> {
    records.sort_unstable_by_key(|r| (r.series, r.ts, r.file, r.line));
    records
        .windows(2)
        .filter(|w| w[0].series == w[1].series && w[0].ts == w[1].ts)
        .map(|w| Repeated {
            first: Place::from(&w[0]),
            again: Place::from(&w[1]),
            series: w[0].series,
            ts: w[0].ts,
        })
        .collect()
}

/// One station-month: the station, `YYYY-MM`, and one chunk per series with rows in it.
pub(super) struct StationMonth<'a> {
    pub(super) station: &'a StationId,
    pub(super) month: Month,
    pub(super) chunks: Vec<SeriesChunk>,
}

/// Hands every station-month of `records` (sorted by [`sort_and_check`], without repeats) to
/// `emit`, in (station, month) order.
pub(super) fn each_station_month<E>(
    records: &[Rec],
    index: &SeriesIndex,
    emit: &mut dyn FnMut(StationMonth<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let mut start = 0;
    while start < records.len() {
        let station = index.station_of[records[start].series as usize];
        let end = start
            + records[start..]
                .iter()
                .position(|r| index.station_of[r.series as usize] != station)
                .unwrap_or(records.len() - start);
        // (month, series, rows) runs of this station, each series' rows cut at month ends.
        let mut runs: Vec<(Month, u32, std::ops::Range<usize>)> = Vec::new();
        let mut i = start;
        while i < end {
            let (series, month) = (records[i].series, Month::of(records[i].ts));
            let mut j = i + 1;
            while j < end && records[j].series == series && Month::of(records[j].ts) == month {
                j += 1;
            }
            runs.push((month, series, i..j));
            i = j;
        }
        runs.sort_by_key(|r| (r.0, r.1));
        let mut k = 0;
        while k < runs.len() {
            let month = runs[k].0;
            let mut chunks = Vec::new();
            while k < runs.len() && runs[k].0 == month {
                let (_, series, range) = &runs[k];
                let rows = &records[range.clone()];
                chunks.push(SeriesChunk {
                    parameter: index.series[*series as usize].1.clone(),
                    timestamps: rows.iter().map(|r| r.ts).collect(),
                    values: rows.iter().map(|r| r.value).collect(),
                    quality: rows
                        .iter()
                        .map(|r| QUALITY_FLAGS[usize::from(r.quality)])
                        .collect(),
                });
                k += 1;
            }
            let station = &index.series[records[start].series as usize].0;
            emit(StationMonth {
                station,
                month,
                chunks,
            })?;
        }
        start = end;
    }
    Ok(())
}
