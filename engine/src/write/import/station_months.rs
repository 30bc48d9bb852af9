//! The records of one bucket (or part of one), sorted and cut into station-months: what a value
//! file holds. Timestamps repeated within a series are found here, once the rows are sorted.

use super::QUALITY_FLAGS;
use super::dialect::later_of_repeated;
use super::rows::{Rec, SeriesIndex};
use super::time::Offset;
use crate::model::ids::StationId;
use crate::model::month::Month;
use crate::model::zone::Zone;
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

/// Sorts `records` by (series, time) and returns the repeated timestamps. Local times of the
/// hour a DST change in `zone` repeats were read as their earlier instants; which are the later
/// ones is told by the order of a series' rows ([`second_pass`]).
pub(super) fn sort_and_check(records: &mut [Rec], zone: Option<Zone>) -> Vec<Repeated> {
    let key = |r: &Rec| (r.series, r.ts, r.file, r.line);
    if let Some(zone) = zone
        && records.iter().any(|r| r.repeated)
    {
        for i in second_pass(records) {
            let r = &mut records[i];
            if let Some(later) = later_of_repeated(r.ts, r.offset, zone) {
                let shift = i32::try_from((later - r.ts) / 1_000_000).unwrap_or(0);
                r.offset = Offset::of_seconds(r.offset.seconds() - shift);
                r.ts = later;
            }
            r.repeated = false;
        }
    }
    records.sort_unstable_by_key(key);
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

/// The rows of `records` (read as the earlier instants of a repeated hour) that are of the
/// hour's second pass: a series' such rows of one day in the order of its files and lines,
/// from the first whose local time is not after one before it (the clocks went back: the
/// sheet's 02:00 after its 02:45). So a series without a row at the hour's first 02:30 still
/// puts its 02:30 where its neighbours say.
fn second_pass(records: &[Rec]) -> Vec<usize> {
    const DAY: i64 = 86_400_000_000;
    let mut folded: Vec<usize> = (0..records.len())
        .filter(|&i| records[i].repeated)
        .collect();
    let key = |r: &Rec| (r.series, r.ts.div_euclid(DAY), r.file, r.line);
    folded.sort_unstable_by_key(|&i| key(&records[i]));
    let mut later = Vec::new();
    let mut run: Option<(u32, i64)> = None;
    let (mut newest, mut second) = (i64::MIN, false);
    for i in folded {
        let r = &records[i];
        let day = (r.series, r.ts.div_euclid(DAY));
        if run != Some(day) {
            (run, newest, second) = (Some(day), i64::MIN, false);
        }
        second |= r.ts <= newest;
        newest = newest.max(r.ts);
        if second {
            later.push(i);
        }
    }
    later
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A sheet's column of the night clocks go back, its first 02:30 left empty: the rows
    /// after the clock went back are the second pass, its 02:30 among them.
    #[test]
    fn the_second_pass_starts_where_the_clock_goes_back() {
        let minute = 60_000_000;
        let at = |m: i64, line: u64| Rec {
            series: 0,
            ts: 1_729_987_200_000_000 + m * minute,
            value: 1.0,
            quality: 0,
            file: 0,
            line,
            offset: Offset::of_seconds(7200),
            repeated: true,
        };
        let rows = [
            at(0, 2),
            at(15, 3),
            at(45, 4),
            at(0, 5),
            at(15, 6),
            at(30, 7),
            at(45, 8),
        ];
        let mut later = second_pass(&rows);
        later.sort_unstable();
        assert_eq!(later, [3, 4, 5, 6]);
        let berlin = Zone::parse("Europe/Berlin").unwrap();
        let mut records = rows.to_vec();
        assert!(sort_and_check(&mut records, Some(berlin)).is_empty());
        let times: Vec<i64> = records
            .iter()
            .map(|r| (r.ts - rows[0].ts) / minute)
            .collect();
        assert_eq!(times, [0, 15, 45, 60, 75, 90, 105]);
        assert_eq!(records[3].offset, Offset::of_seconds(3600));
    }
}
