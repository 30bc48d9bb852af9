//! What a newer version takes over from the one served before it: the stations' decoded
//! years whose files did not change, and each series' newest month.

use super::{Decoded, FilesByStation, SeriesNewest, month_files};
use crate::dataset::StationFiles;
use crate::dataset::manifest::ValueFile;
use crate::model::ids::StationId;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Each series' [`SeriesNewest`] in `months` (a station's files, ascending by month).
pub(super) fn newest_of(months: &StationFiles) -> Box<[SeriesNewest]> {
    let mut newest: Vec<SeriesNewest> = Vec::new();
    for month in months {
        for stats in month.file.series.iter().filter(|s| s.rows > 0) {
            match newest.iter_mut().find(|n| n.parameter == stats.parameter) {
                Some(n) => n.month = Arc::clone(month),
                None => newest.push(SeriesNewest {
                    parameter: stats.parameter.clone(),
                    month: Arc::clone(month),
                }),
            }
        }
    }
    newest.into_boxed_slice()
}

/// Puts in `months` each month of `carried` (both ascending by month) that is the same file.
pub(super) fn take_over(months: &mut StationFiles, carried: &StationFiles) {
    for m in months.iter_mut() {
        if let Ok(i) = carried.binary_search_by_key(&m.file.month, |c| c.file.month)
            && carried[i].file == m.file
        {
            *m = Arc::clone(&carried[i]);
        }
    }
}

impl FilesByStation {
    /// Keeps each series' newest month as `newest` lists them (the files of a version's
    /// newest-months table, `files_table::NEWEST`), for every station at once, so that
    /// `recent=N` within them plans without decoding the station's rows first, as it does once
    /// a station was decoded whole. Files of stations the table does not list are left out.
    pub(crate) fn know_newest(&mut self, newest: Vec<ValueFile>) {
        let mut by_station: HashMap<StationId, Vec<ValueFile>> = HashMap::new();
        for mut file in newest {
            let Some((id, _)) = self.stations.get_key_value(&file.station) else {
                continue;
            };
            // The table's id, so that its text is held once.
            file.station = id.clone();
            by_station.entry(id.clone()).or_default().push(file);
        }
        for (station, files) in by_station {
            if let Some(located) = self.stations.get_mut(&station) {
                located.newest = OnceLock::from(newest_of(&month_files(files)));
            }
        }
    }

    /// Decodes here the years of every station that `previous` (the version served before
    /// this one) holds decoded, taking over its month files where this table lists the same
    /// file: what their slots hold (footer, bytes, open handle) is then found again by this
    /// version's requests, and is held once for both versions. Both tables must keep their
    /// stations' files in one cache (`keep_in`), since a month's slots are counted in the
    /// caches that filled them. Bounded by that cache's budget: only what it holds now is
    /// decoded; the row groups that hold them are read a span at a time
    /// ([`table_bytes::SPAN_BYTES`]), in the order of the table. Each series' newest month
    /// both versions know as the same file is taken over too, whether or not its station was
    /// decoded. Returns how many stations were decoded; one whose rows cannot be read or
    /// decoded here is left to the requests for it (which then fail, naming the rows).
    pub(crate) async fn carry(&mut self, previous: &FilesByStation) -> usize {
        // Newest months both versions know, first: the stations' months decoded below are
        // then these.
        for (station, here) in &mut self.stations {
            let (Some(newest), Some(there)) = (
                here.newest.get_mut(),
                previous.stations.get(station).and_then(|l| l.newest.get()),
            ) else {
                continue;
            };
            for n in newest.iter_mut() {
                if let Some(same) = there.iter().find(|t| t.month.file == n.month.file) {
                    n.month = Arc::clone(&same.month);
                }
            }
        }
        let kept: Vec<(&StationId, Arc<Decoded>)> = self
            .order
            .iter()
            .filter_map(|station| {
                let there = previous.stations.get(station)?;
                Some((station, previous.cache.get(&there.files)?))
            })
            .collect();
        let wanted = kept.iter().filter_map(|(station, kept)| {
            let (&first, &last) = (kept.years.first()?, kept.years.last()?);
            Some((*station, first..=last, Some(&*kept.months)))
        });
        self.read_many(wanted).await
    }
}
