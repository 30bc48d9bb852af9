//! One values row, checked and made a [`Rec`]: which series (station and parameter), when, what
//! value, what quality, and where it came from (for reports). A CSV row is read as its block's
//! layout says ([`super::layout`]), its time as the dialect writes them ([`super::dialect`]);
//! what looks wrong in the values is noted as they pass ([`Suspicions`]).

use super::QUALITY_FLAGS;
use super::dialect::NOT_UTF8;
use super::dialect::{CsvDialect, TimeReader};
use super::layout::{Layout, Part, TimeParts};
use super::mapping::ValuesMapping;
use super::source::{Block, CsvBlock, TableBlock, TimeColumn, line_of};
use super::time::{Offset, timestamp_of};
use crate::model::Micros;
use crate::model::gap::GAP;
use crate::model::ids::{ParameterId, StationId};
use datafusion::arrow::array::Array;
use std::collections::HashMap;

/// A values row as the import keeps it between reading and writing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Rec {
    /// Index into [`SeriesIndex::series`].
    pub(super) series: u32,
    pub(super) ts: Micros,
    pub(super) value: f64,
    /// Index into [`QUALITY_FLAGS`].
    pub(super) quality: u8,
    /// Index of the input file, and the line (CSV) or row (Parquet) in it.
    pub(super) file: u32,
    pub(super) line: u64,
    /// The offset the timestamp was written in, so reports echo it as the file has it.
    pub(super) offset: Offset,
    /// A local time of the hour a DST change repeats, read as its earlier instant: the second
    /// row of its series at that time is the later one ([`super::station_months`]).
    pub(super) repeated: bool,
}

/// Bytes of a [`Rec`] in a spill file: the offset shares the line's eight bytes (a line
/// number needs 48 bits at most), so spill files are no larger for it.
pub(super) const REC_BYTES: usize = 4 + 8 + 8 + 1 + 4 + 8;

/// Bits of the spilled line field that hold the line number; the offset takes the rest.
const LINE_BITS: u32 = 48;
const LINE_MASK: u64 = (1 << LINE_BITS) - 1;

impl Rec {
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.series.to_le_bytes());
        out.extend_from_slice(&self.ts.to_le_bytes());
        out.extend_from_slice(&self.value.to_le_bytes());
        // The quality's index is below 128: the top bit carries `repeated`.
        out.push(self.quality | u8::from(self.repeated) << 7);
        out.extend_from_slice(&self.file.to_le_bytes());
        let offset = u64::from(self.offset.0 as u16) << LINE_BITS;
        out.extend_from_slice(&((self.line & LINE_MASK) | offset).to_le_bytes());
    }

    /// Reads one record from the first [`REC_BYTES`] of `b`.
    pub(super) fn decode(b: &[u8; REC_BYTES]) -> Self {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(x)
        };
        Self {
            series: u32_at(0),
            ts: u64_at(4) as i64,
            value: f64::from_bits(u64_at(12)),
            quality: b[20] & 0x7f,
            repeated: b[20] & 0x80 != 0,
            file: u32_at(21),
            line: u64_at(25) & LINE_MASK,
            offset: Offset((u64_at(25) >> LINE_BITS) as u16 as i16),
        }
    }
}

/// The series an import knows (from its parameters file), numbered in (station, parameter)
/// order, so that one station's series have neighbouring numbers.
pub(super) struct SeriesIndex {
    pub(super) series: Vec<(StationId, ParameterId)>,
    /// Station number (in order) of each series.
    pub(super) station_of: Vec<u32>,
    /// What each series' values are checked against ([`Suspicions`]).
    traits: Vec<SeriesTraits>,
    lookup: HashMap<Box<[u8]>, SeriesOfStation>,
}

/// What a series' values should look like: never negative (discharge, precipitation), and on
/// the grid of its interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct SeriesTraits {
    pub(super) nonnegative: bool,
    /// The grid its times lie on, in microseconds: its interval up to an hour; 15 minutes for
    /// longer ones (a daily value stamped at a local midnight of any zone); None for an
    /// interval of months or none.
    pub(super) grid: Option<i64>,
}

impl SeriesTraits {
    pub(super) fn of(p: &crate::model::Parameter) -> Self {
        const HOUR: i64 = 3_600_000_000;
        let step = p
            .interval
            .parse::<crate::model::duration::IsoDuration>()
            .ok()
            .filter(|d| d.months == 0 && d.micros > 0)
            .map(|d| d.micros);
        Self {
            nonnegative: crate::model::property::property(&p.observed_property)
                .is_some_and(|q| q.nonnegative),
            grid: step.map(|s| if s <= HOUR { s } else { HOUR / 4 }),
        }
    }
}

/// What looks wrong in the values of a series, counted as rows are read: one warning a series
/// and kind, with its first place (`--strict` makes them errors).
#[derive(Debug, Default)]
pub(super) struct Suspicions {
    found: HashMap<(u32, Suspicion), Suspect>,
}

/// A kind of value that looks wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Suspicion {
    /// A number agencies write for a missing value (its bits).
    Sentinel(u64),
    Negative,
    OffGrid,
}

/// Values a series has of one suspicion: how many, and the first (by file and line).
#[derive(Debug, Clone, Copy)]
pub(super) struct Suspect {
    pub(super) count: u64,
    pub(super) file: u32,
    pub(super) line: u64,
    pub(super) value: f64,
    pub(super) ts: Micros,
    pub(super) offset: Offset,
}

/// Numbers agencies write for a missing value.
pub(super) const SENTINELS: [f64; 4] = [-999.0, -9999.0, -777.0, 9999.0];

impl Suspicions {
    /// Notes what looks wrong about `rec` (a value, not a recorded gap).
    fn check(&mut self, rec: &Rec, traits: SeriesTraits) {
        let mut note = |kind: Suspicion| {
            let first = Suspect {
                count: 0,
                file: rec.file,
                line: rec.line,
                value: rec.value,
                ts: rec.ts,
                offset: rec.offset,
            };
            let s = self.found.entry((rec.series, kind)).or_insert(first);
            s.count += 1;
            if (rec.file, rec.line) < (s.file, s.line) {
                *s = Suspect {
                    count: s.count,
                    ..first
                };
            }
        };
        if SENTINELS.contains(&rec.value) {
            note(Suspicion::Sentinel(rec.value.to_bits()));
        } else if traits.nonnegative && rec.value < 0.0 {
            note(Suspicion::Negative);
        }
        if traits.grid.is_some_and(|g| rec.ts.rem_euclid(g) != 0) {
            note(Suspicion::OffGrid);
        }
    }

    /// Both workers' findings as one.
    pub(super) fn merge(&mut self, other: Suspicions) {
        for (key, theirs) in other.found {
            match self.found.get_mut(&key) {
                Some(mine) => {
                    let count = mine.count + theirs.count;
                    if (theirs.file, theirs.line) < (mine.file, mine.line) {
                        *mine = theirs;
                    }
                    mine.count = count;
                }
                None => {
                    self.found.insert(key, theirs);
                }
            }
        }
    }

    /// Each finding: the first place, and what to say of it.
    pub(super) fn findings(&self, index: &SeriesIndex) -> Vec<(u32, u64, String)> {
        let mut out: Vec<(u32, u64, String)> = self
            .found
            .iter()
            .map(|(&(series, kind), s)| {
                let (station, parameter) = &index.series[series as usize];
                let n = s.count;
                let (values, look) = if n == 1 {
                    ("value", "looks")
                } else {
                    ("values", "look")
                };
                let what = match kind {
                    Suspicion::Sentinel(_) => format!(
                        "{n} {values} of {} {look} like a missing-value sentinel: --missing {} \
                         imports them as recorded gaps",
                        s.value, s.value
                    ),
                    Suspicion::Negative => format!(
                        "{n} negative {values} (first {}) of a quantity that is never below zero",
                        s.value
                    ),
                    Suspicion::OffGrid => format!(
                        "{n} {values} off the grid of the series' interval (first at {})",
                        s.offset.show(s.ts)
                    ),
                };
                (s.file, s.line, format!("{station}/{parameter}: {what}"))
            })
            .collect();
        out.sort();
        out
    }
}

/// A station's series numbers by parameter id.
type SeriesOfStation = HashMap<Box<[u8]>, u32>;

impl SeriesIndex {
    pub(super) fn new(mut known: Vec<(StationId, ParameterId, SeriesTraits)>) -> Self {
        known.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        let traits = known.iter().map(|k| k.2).collect();
        let series: Vec<(StationId, ParameterId)> =
            known.into_iter().map(|(s, p, _)| (s, p)).collect();
        let mut lookup: HashMap<Box<[u8]>, SeriesOfStation> = HashMap::new();
        let mut station_of = Vec::with_capacity(series.len());
        let mut station = 0u32;
        for (i, (s, p)) in series.iter().enumerate() {
            if i > 0 && series[i - 1].0 != *s {
                station += 1;
            }
            station_of.push(station);
            lookup
                .entry(s.as_str().as_bytes().into())
                .or_default()
                .insert(p.as_str().as_bytes().into(), i as u32);
        }
        Self {
            series,
            station_of,
            traits,
            lookup,
        }
    }

    fn find(&self, station: &[u8], parameter: &[u8]) -> Option<u32> {
        self.lookup.get(station)?.get(parameter).copied()
    }

    /// Why a row's series is not one the catalog has, naming the column at fault and, for a
    /// known station, the parameters it has (a typo is then plain to see).
    fn not_found(&self, station: &[u8], parameter: &[u8]) -> String {
        let (station, parameter_text) = (
            String::from_utf8_lossy(station),
            String::from_utf8_lossy(parameter),
        );
        let Some(known) = self.lookup.get(station.as_bytes()) else {
            return format!("stationId: '{station}' is not a station of the catalog");
        };
        let mut names: Vec<String> = known
            .keys()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        names.sort();
        const LISTED: usize = 8;
        let more = names.len().saturating_sub(LISTED);
        names.truncate(LISTED);
        let tail = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        format!(
            "parameterId: '{parameter_text}' is not a parameter of station '{station}' (it has {}{tail})",
            names.join(", ")
        )
    }
}

/// What rows are read with beside their layout: the dialect's times, missing values and
/// quality, and the mapping's renames of ids and quality codes.
pub(super) struct Reading {
    times: TimeReader,
    missing_numbers: Vec<f64>,
    missing_texts: Vec<Box<[u8]>>,
    /// The quality of rows without a quality column (`--quality`).
    quality: Option<u8>,
    station_ids: HashMap<Box<[u8]>, Box<[u8]>>,
    parameter_ids: HashMap<Box<[u8]>, Box<[u8]>>,
    qualities: HashMap<Box<[u8]>, u8>,
}

/// The index of quality `missing` in [`QUALITY_FLAGS`].
const MISSING: u8 = 4;

/// Whether rows of quality `q` have a value (all but recorded gaps).
fn quality_has_value(q: u8) -> bool {
    q != MISSING
}

impl Reading {
    pub(super) fn new(dialect: &CsvDialect, mapping: &ValuesMapping) -> Self {
        let bytes = |s: &String| -> Box<[u8]> { s.as_bytes().into() };
        let renames = |m: &std::collections::BTreeMap<String, String>| {
            m.iter().map(|(k, v)| (bytes(k), bytes(v))).collect()
        };
        let flag = |q: &str| QUALITY_FLAGS.iter().position(|f| *f == q).map(|i| i as u8);
        Self {
            times: TimeReader::new(dialect),
            missing_numbers: dialect
                .missing
                .iter()
                .filter_map(|m| m.parse().ok())
                .collect(),
            missing_texts: dialect.missing.iter().map(bytes).collect(),
            quality: dialect.quality.as_deref().and_then(flag),
            station_ids: renames(&mapping.ids.station_id),
            parameter_ids: renames(&mapping.ids.parameter_id),
            qualities: mapping
                .ids
                .quality
                .iter()
                .filter_map(|(k, v)| Some((bytes(k), flag(v)?)))
                .collect(),
        }
    }

    /// Whether a value as written (or read, `number`) is one that stands for a missing one.
    fn is_missing(&self, written: &[u8], number: Option<f64>, layout_invalid: Option<f64>) -> bool {
        self.missing_texts.iter().any(|m| **m == *written)
            || number
                .is_some_and(|v| self.missing_numbers.contains(&v) || layout_invalid == Some(v))
    }

    fn quality_of(&self, q: &[u8]) -> Result<u8, String> {
        match self.qualities.get(q) {
            Some(flag) => Ok(*flag),
            None if !self.qualities.is_empty() && !q.is_empty() => {
                let known = QUALITY_FLAGS.iter().position(|f| f.as_bytes() == q);
                known.map(|i| i as u8).ok_or_else(|| {
                    format!(
                        "quality: '{}' is neither a code of [values.ids.quality] nor one of {}",
                        String::from_utf8_lossy(q),
                        QUALITY_FLAGS.join(", ")
                    )
                })
            }
            None => quality_of(q),
        }
    }
}

/// Reads rows into [`Rec`]s, remembering the last series it looked up: rows of one series
/// mostly come together.
pub(super) struct RowParser<'a> {
    index: &'a SeriesIndex,
    reading: &'a Reading,
    /// What looked wrong in the rows so far.
    pub(super) suspicions: Suspicions,
    last: Option<(Vec<u8>, Vec<u8>, u32)>,
    /// A date and a time joined, for the time reader.
    joined: Vec<u8>,
}

/// Where a bad row is: line (or row) number, and why.
pub(super) type BadRow = (u64, String);

fn required<'b>(name: &str, field: &'b [u8]) -> Result<&'b [u8], String> {
    if field.is_empty() {
        Err(format!("{name} is required"))
    } else {
        Ok(field)
    }
}

fn quality_of(q: &[u8]) -> Result<u8, String> {
    let q = required("quality", q)?;
    QUALITY_FLAGS
        .iter()
        .position(|f| f.as_bytes() == q)
        .map(|i| i as u8)
        .ok_or_else(|| {
            format!(
                "quality: '{}' is not one of {}",
                String::from_utf8_lossy(q),
                QUALITY_FLAGS.join(", ")
            )
        })
}

fn finite(v: f64) -> Result<f64, String> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("value: '{v}' is not a finite number"))
    }
}

/// Why `v` is not a number, with a hint where it looks like one with a decimal comma.
fn not_a_number(v: &[u8], delimiter: u8) -> String {
    let text = String::from_utf8_lossy(v);
    let hint = if text.contains(',') && text.replace(',', ".").parse::<f64>().is_ok() {
        match delimiter {
            b',' => format!(
                " (a decimal comma? write {}); --decimal ',' reads it where it is quoted",
                text.replace(',', ".")
            ),
            _ => " (a decimal comma and a point? give --decimal ',' and no thousands separator)"
                .to_owned(),
        }
    } else {
        String::new()
    };
    format!("value: '{text}' is not a number{hint}")
}

/// Why a row has not the header's number of fields, with a hint where a decimal comma split
/// its value in two.
fn wrong_fields(record: &csv::ByteRecord, layout: &Layout, fields: usize) -> String {
    let v = layout.values.first().map_or(0, |p| p.field);
    let hint = if layout.delimiter == b','
        && record.len() == fields + 1
        && record
            .get(v + 1)
            .is_some_and(|f| !f.is_empty() && f.iter().all(u8::is_ascii_digit))
    {
        " (a decimal comma in the value? write 12.5, not 12,5)"
    } else {
        ""
    };
    format!(
        "{} fields where the header has {fields}{hint}",
        record.len()
    )
}

/// Whether a row of quality `q` is a recorded gap, checked against its value (`written`, as
/// written, or `None` where it has none): a gap is a row of quality `missing` without a value
/// (an empty cell, a Parquet null), kept as the engine holds gaps (`model::gap`). A row
/// without a value of another quality, and a value of quality `missing`, are errors that say
/// what to write instead; a sentinel number (-999) is a value like any other.
fn is_recorded_gap(q: u8, written: Option<&str>) -> Result<bool, String> {
    let name = QUALITY_FLAGS
        .get(usize::from(q))
        .copied()
        .unwrap_or_default();
    match (written, name == "missing") {
        (None, true) => Ok(true),
        (None, false) => Err(format!(
            "value is required (a gap is an empty value with quality missing, not {name})"
        )),
        (Some(v), true) => Err(format!(
            "value: '{v}' has quality missing, which has no value: leave the value empty, or \
             give the quality it has"
        )),
        (Some(_), false) => Ok(false),
    }
}

impl<'a> RowParser<'a> {
    pub(super) fn new(index: &'a SeriesIndex, reading: &'a Reading) -> Self {
        Self {
            index,
            reading,
            suspicions: Suspicions::default(),
            last: None,
            joined: Vec::new(),
        }
    }

    fn series(&mut self, station: &[u8], parameter: &[u8]) -> Result<u32, String> {
        if let Some((s, p, i)) = &self.last
            && s == station
            && p == parameter
        {
            return Ok(*i);
        }
        let station = required("stationId", station)?;
        let parameter = required("parameterId", parameter)?;
        let (written_station, written_parameter) = (station, parameter);
        let station = self.reading.station_ids.get(station).map_or(station, |s| s);
        let parameter = self
            .reading
            .parameter_ids
            .get(parameter)
            .map_or(parameter, |p| p);
        let i = self
            .index
            .find(station, parameter)
            .ok_or_else(|| self.index.not_found(station, parameter))?;
        self.last = Some((written_station.to_vec(), written_parameter.to_vec(), i));
        Ok(i)
    }

    /// Every row of a CSV block: good ones to `good`, bad ones to `bad`.
    pub(super) fn csv_block(
        &mut self,
        block: &CsvBlock,
        good: &mut dyn FnMut(Rec),
        bad: &mut dyn FnMut(BadRow),
    ) {
        let layout = &*block.layout;
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .delimiter(layout.delimiter)
            .trim(csv::Trim::All)
            .from_reader(block.bytes.as_slice());
        let mut record = csv::ByteRecord::new();
        loop {
            let line_in_block =
                |r: &csv::ByteRecord| r.position().map_or(1, |p| line_of(p, &block.bytes));
            match reader.read_byte_record(&mut record) {
                Ok(false) => return,
                Ok(true) => {
                    let line = block.first_line + line_in_block(&record) - 1;
                    if record.len() == 1 && record[0].is_empty() {
                        continue;
                    }
                    if let Some(fields) = layout.fields
                        && record.len() != fields
                    {
                        bad((line, wrong_fields(&record, layout, fields)));
                        continue;
                    }
                    let parsed = self.csv_row(layout, &record, block.file, line, good);
                    match parsed {
                        Ok(()) => {}
                        // Text that is not UTF-8 shows as `�` in the reason: say why.
                        Err(reason) if record.iter().any(|f| std::str::from_utf8(f).is_err()) => {
                            bad((line, format!("{reason} ({NOT_UTF8})")))
                        }
                        Err(reason) => bad((line, reason)),
                    }
                }
                Err(e) => {
                    let line = e.position().map_or(block.first_line, |p| {
                        block.first_line + line_of(p, &block.bytes).saturating_sub(1)
                    });
                    bad((line, format!("malformed CSV: {e}")));
                    // The reader cannot go on past a broken quote: the rest is one field.
                    if !matches!(e.kind(), csv::ErrorKind::UnequalLengths { .. }) {
                        return;
                    }
                }
            }
        }
    }

    /// The values of one CSV row (one, or a wide sheet's several) to `good`.
    fn csv_row(
        &mut self,
        layout: &Layout,
        record: &csv::ByteRecord,
        file: u32,
        line: u64,
        good: &mut dyn FnMut(Rec),
    ) -> Result<(), String> {
        let field = |i: usize| record.get(i).unwrap_or_default();
        fn part<'r>(p: &'r Part, record: &'r csv::ByteRecord) -> &'r [u8] {
            match p {
                Part::Field(i) => record.get(*i).unwrap_or_default(),
                Part::Fixed(text) => text,
            }
        }
        let time = match layout.time {
            TimeParts::Field(t) => self.reading.times.read(field(t), layout.zone)?,
            TimeParts::DateAndTime(d, t) => {
                self.joined.clear();
                self.joined.extend_from_slice(field(d));
                self.joined.push(b' ');
                self.joined.extend_from_slice(field(t));
                self.reading.times.read(&self.joined, layout.zone)?
            }
        };
        let quality = match (layout.quality, self.reading.quality) {
            (Some(q), _) => self.reading.quality_of(field(q))?,
            (None, Some(q)) => q,
            (None, None) => return Err("quality is required".into()),
        };
        for value in &layout.values {
            let written = field(value.field);
            if written.is_empty() && layout.skip_empty {
                continue;
            }
            let series = match &value.series {
                Some((station, parameter)) => self.series(station, parameter)?,
                None => self.series(
                    part(&layout.station, record),
                    part(&layout.parameter, record),
                )?,
            };
            let (value, quality) = self.value(written, quality, layout)?;
            self.good(
                Rec {
                    series,
                    ts: time.micros,
                    value,
                    quality,
                    file,
                    line,
                    offset: time.offset,
                    repeated: time.repeated,
                },
                good,
            );
        }
        Ok(())
    }

    /// Hands a good row on, noting what looks wrong about its value.
    fn good(&mut self, rec: Rec, good: &mut dyn FnMut(Rec)) {
        if quality_has_value(rec.quality) {
            self.suspicions
                .check(&rec, self.index.traits[rec.series as usize]);
        }
        good(rec);
    }

    /// A value as written, with the row's quality: a recorded gap where it is empty (quality
    /// missing) or one of the values that stand for a missing one.
    fn value(&self, written: &[u8], quality: u8, layout: &Layout) -> Result<(f64, u8), String> {
        let text = std::str::from_utf8(written).unwrap_or_default();
        let number = layout.numbers.read(text);
        if !written.is_empty() && self.reading.is_missing(written, number, layout.invalid) {
            return Ok((GAP, MISSING));
        }
        let shown = Some(written)
            .filter(|v| !v.is_empty())
            .map(String::from_utf8_lossy);
        if is_recorded_gap(quality, shown.as_deref())? {
            return Ok((GAP, quality));
        }
        let value = number.ok_or_else(|| not_a_number(written, layout.delimiter))?;
        Ok((finite(value)?, quality))
    }

    /// Every row of a Parquet block: good ones to `good`, bad ones to `bad`.
    pub(super) fn table_block(
        &mut self,
        block: &TableBlock,
        good: &mut dyn FnMut(Rec),
        bad: &mut dyn FnMut(BadRow),
    ) {
        fn text(a: &datafusion::arrow::array::StringArray, i: usize) -> &[u8] {
            if a.is_null(i) {
                b""
            } else {
                a.value(i).as_bytes()
            }
        }
        for i in 0..block.station.len() {
            let row = block.first_row + i as u64;
            let parsed = (|| {
                let (ts, offset) = match &block.timestamp {
                    TimeColumn::Micros(m) if m.is_null(i) => Err("timestamp is required".into()),
                    TimeColumn::Micros(m) => Ok((m.value(i), Offset::Z)),
                    TimeColumn::Text(t) => timestamp_of(text(t, i)),
                }?;
                let quality = self.reading.quality_of(text(&block.quality, i))?;
                let written = block.value.is_valid(i).then(|| block.value.value(i));
                let (value, quality) = match written {
                    Some(v) if self.reading.is_missing(b"", Some(v), None) => (GAP, MISSING),
                    _ => {
                        let shown = written.map(|v| v.to_string());
                        match is_recorded_gap(quality, shown.as_deref())? {
                            true => (GAP, quality),
                            false => (finite(written.unwrap_or(f64::NAN))?, quality),
                        }
                    }
                };
                Ok::<_, String>(Rec {
                    series: self.series(text(&block.station, i), text(&block.parameter, i))?,
                    ts,
                    value,
                    quality,
                    file: block.file,
                    line: row,
                    offset,
                    repeated: false,
                })
            })();
            match parsed {
                Ok(rec) => self.good(rec, good),
                Err(reason) => bad((row, reason)),
            }
        }
    }

    pub(super) fn block(
        &mut self,
        block: &Block,
        good: &mut dyn FnMut(Rec),
        bad: &mut dyn FnMut(BadRow),
    ) {
        match block {
            Block::Csv(b) => self.csv_block(b, good, bad),
            Block::Table(t) => self.table_block(t, good, bad),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_their_spill_form() {
        let rec = Rec {
            series: 7,
            ts: -1_234_567,
            value: -0.25,
            quality: 3,
            file: 2,
            line: (1 << LINE_BITS) - 1,
            offset: Offset(-210),
            repeated: true,
        };
        for rec in [
            rec,
            Rec {
                offset: Offset::Z,
                repeated: false,
                ..rec
            },
            Rec {
                offset: Offset(840),
                line: 1,
                ..rec
            },
        ] {
            let mut bytes = Vec::new();
            rec.encode(&mut bytes);
            assert_eq!(bytes.len(), REC_BYTES);
            assert_eq!(Rec::decode(bytes.as_slice().try_into().unwrap()), rec);
        }
    }
}
