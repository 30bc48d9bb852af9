//! One values row, checked and made a [`Rec`]: which series (station and parameter), when, what
//! value, what quality, and where it came from (for reports).
//!
//! Timestamps are read by a parser of the common RFC 3339 form
//! (`YYYY-MM-DDTHH:MM:SS[.ffffff](Z|±HH:MM)`), and by [`crate::model::instant`] for
//! everything else (the other forms the API's `from` and `to` take: a space or `t`, no
//! seconds, more fractional digits, `±HHMM` and `±HH` offsets). Measured
//! on 2 M timestamps (a scratch benchmark, three rounds on this busy 2-core machine): 23-39 ns
//! a timestamp against chrono's 47-108 ns, about 3 s of CPU time on a 56 M-row import. Both
//! agree wherever the short path answers (tested below), and chrono stays the path for the rest.

use super::source::{Block, CsvBlock, NOT_UTF8, TableBlock, TimeColumn, line_of};
use super::{QUALITY_FLAGS, catalog::parse_time};
use crate::model::Micros;
use crate::model::gap::GAP;
use crate::model::ids::{ParameterId, StationId};
use crate::model::month::days_from_civil;
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
}

/// Bytes of a [`Rec`] in a spill file: the offset shares the line's eight bytes (a line
/// number needs 48 bits at most), so spill files are no larger for it.
pub(super) const REC_BYTES: usize = 4 + 8 + 8 + 1 + 4 + 8;

/// Bits of the spilled line field that hold the line number; the offset takes the rest.
const LINE_BITS: u32 = 48;
const LINE_MASK: u64 = (1 << LINE_BITS) - 1;

/// The UTC offset a timestamp was written with, in minutes east, or `Z`: what an import
/// report needs to show a time the way the user's file wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Offset(i16);

impl Offset {
    /// Written as `Z` (and for timestamps typed as such in a Parquet input).
    pub(super) const Z: Offset = Offset(i16::MIN);

    fn of_seconds(seconds: i32) -> Self {
        Offset((seconds / 60) as i16)
    }

    /// `micros` (UTC) in RFC 3339 form, in this offset.
    pub(super) fn show(self, micros: Micros) -> String {
        use chrono::{DateTime, FixedOffset, SecondsFormat};
        let Some(utc) = DateTime::from_timestamp_micros(micros) else {
            return format!("{micros} µs after 1970");
        };
        let zone = if self == Self::Z {
            None
        } else {
            FixedOffset::east_opt(i32::from(self.0) * 60)
        };
        match zone {
            Some(zone) => utc
                .with_timezone(&zone)
                .to_rfc3339_opts(SecondsFormat::AutoSi, false),
            None => utc.to_rfc3339_opts(SecondsFormat::AutoSi, true),
        }
    }
}

impl Rec {
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.series.to_le_bytes());
        out.extend_from_slice(&self.ts.to_le_bytes());
        out.extend_from_slice(&self.value.to_le_bytes());
        out.push(self.quality);
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
            quality: b[20],
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
    lookup: HashMap<Box<[u8]>, SeriesOfStation>,
}

/// A station's series numbers by parameter id.
type SeriesOfStation = HashMap<Box<[u8]>, u32>;

impl SeriesIndex {
    pub(super) fn new(mut series: Vec<(StationId, ParameterId)>) -> Self {
        series.sort();
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

/// Reads rows into [`Rec`]s, remembering the last series it looked up: rows of one series
/// mostly come together.
pub(super) struct RowParser<'a> {
    index: &'a SeriesIndex,
    last: Option<(Vec<u8>, Vec<u8>, u32)>,
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

fn value_of(v: &[u8]) -> Result<f64, String> {
    let v = required("value", v)?;
    std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or_else(|| {
            let text = String::from_utf8_lossy(v);
            let hint = if text.contains(',') && text.replace(',', ".").parse::<f64>().is_ok() {
                format!(" (a decimal comma? write {})", text.replace(',', "."))
            } else {
                String::new()
            };
            format!("value: '{text}' is not a number{hint}")
        })
        .and_then(finite)
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

/// A timestamp with an offset, as UTC microseconds and the offset it was written in.
pub(super) fn timestamp_of(t: &[u8]) -> Result<(Micros, Offset), String> {
    let t = required("timestamp", t)?;
    if let Some(parsed) = rfc3339_common(t) {
        return Ok(parsed);
    }
    let text = String::from_utf8_lossy(t);
    let (micros, offset) = parse_time(&text).map_err(|e| format!("timestamp: {e}"))?;
    Ok((micros, offset.map_or(Offset::Z, Offset::of_seconds)))
}

impl<'a> RowParser<'a> {
    pub(super) fn new(index: &'a SeriesIndex) -> Self {
        Self { index, last: None }
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
        let i = self
            .index
            .find(station, parameter)
            .ok_or_else(|| self.index.not_found(station, parameter))?;
        self.last = Some((station.to_vec(), parameter.to_vec(), i));
        Ok(i)
    }

    /// Every row of a CSV block: good ones to `good`, bad ones to `bad`.
    pub(super) fn csv_block(
        &mut self,
        block: &CsvBlock,
        good: &mut dyn FnMut(Rec),
        bad: &mut dyn FnMut(BadRow),
    ) {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(block.bytes.as_slice());
        let mut record = csv::ByteRecord::new();
        let [s, p, t, v, q] = block.columns.at;
        loop {
            let line_in_block =
                |r: &csv::ByteRecord| r.position().map_or(1, |p| line_of(p, &block.bytes));
            match reader.read_byte_record(&mut record) {
                Ok(false) => return,
                Ok(true) => {
                    let line = block.first_line + line_in_block(&record) - 1;
                    if record.len() != block.columns.fields {
                        // One field more, with a number split in two: a decimal comma.
                        let hint = if record.len() == block.columns.fields + 1
                            && record
                                .get(v + 1)
                                .is_some_and(|f| !f.is_empty() && f.iter().all(u8::is_ascii_digit))
                        {
                            " (a decimal comma in the value? write 12.5, not 12,5)"
                        } else {
                            ""
                        };
                        bad((
                            line,
                            format!(
                                "{} fields where the header has {}{hint}",
                                record.len(),
                                block.columns.fields
                            ),
                        ));
                        continue;
                    }
                    let field = |i: usize| record.get(i).unwrap_or_default();
                    let parsed = (|| {
                        let series = self.series(field(s), field(p))?;
                        let (ts, offset) = timestamp_of(field(t))?;
                        let quality = quality_of(field(q))?;
                        let written = Some(field(v)).filter(|v| !v.is_empty());
                        let shown = written.map(String::from_utf8_lossy);
                        let value = match is_recorded_gap(quality, shown.as_deref())? {
                            true => GAP,
                            false => value_of(field(v))?,
                        };
                        Ok::<_, String>(Rec {
                            series,
                            ts,
                            value,
                            quality,
                            file: block.file,
                            line,
                            offset,
                        })
                    })();
                    match parsed {
                        Ok(rec) => good(rec),
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
                let quality = quality_of(text(&block.quality, i))?;
                let written = block.value.is_valid(i).then(|| block.value.value(i));
                let shown = written.map(|v| v.to_string());
                let value = match is_recorded_gap(quality, shown.as_deref())? {
                    true => GAP,
                    false => finite(written.unwrap_or(f64::NAN))?,
                };
                Ok::<_, String>(Rec {
                    series: self.series(text(&block.station, i), text(&block.parameter, i))?,
                    ts,
                    value,
                    quality,
                    file: block.file,
                    line: row,
                    offset,
                })
            })();
            match parsed {
                Ok(rec) => good(rec),
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

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.f{1,6}](Z|±HH:MM)`, or None for anything else (which chrono reads).
fn rfc3339_common(b: &[u8]) -> Option<(Micros, Offset)> {
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let mut n = 0i64;
        for &c in b.get(r)? {
            if !c.is_ascii_digit() {
                return None;
            }
            n = n * 10 + i64::from(c - b'0');
        }
        Some(n)
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    if !(at(4, b'-') && at(7, b'-') && at(10, b'T') && at(13, b':') && at(16, b':')) {
        return None;
    }
    let (y, mo, d) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (h, mi, s) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let mut i = 19;
    let mut micros = 0i64;
    if at(i, b'.') {
        let start = i + 1;
        let mut end = start;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        let n = end - start;
        if n == 0 || n > 6 {
            return None;
        }
        micros = digits(start..end)? * 10i64.pow(6 - n as u32);
        i = end;
    }
    let offset = match b.get(i..)? {
        b"Z" | b"z" => None,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (oh, om) = (digits(i + 1..i + 3)?, digits(i + 4..i + 6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            Some(if *sign == b'-' { -o } else { o })
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset.unwrap_or(0);
    let written = offset.map_or(Offset::Z, |o| Offset::of_seconds(o as i32));
    Some((secs * 1_000_000 + micros, written))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    fn chrono_micros(s: &str) -> Option<(Micros, Offset)> {
        chrono::DateTime::parse_from_rfc3339(s).ok().map(|t| {
            let offset = if s.ends_with(['Z', 'z']) {
                Offset::Z
            } else {
                Offset::of_seconds(t.offset().local_minus_utc())
            };
            (t.timestamp_micros(), offset)
        })
    }

    /// Wherever the short path answers, chrono answers the same; the whole parser reads what
    /// chrono's RFC 3339 reads alike, and more only where the API's `from` does too.
    #[test]
    fn the_short_timestamp_path_agrees_with_chrono() {
        let mut rng = StdRng::seed_from_u64(7);
        let fixed = [
            "2024-02-29T23:59:59Z",
            "2023-02-29T00:00:00Z",
            "1969-12-31T23:59:59.999999Z",
            "0001-01-01T00:00:00+00:00",
            "9999-12-31T23:59:59-23:59",
            "2024-01-31T00:00:00+01:00",
            "2024-01-31T00:00:00.5+05:30",
            "2024-01-31t00:00:00z",
            "2024-01-31 00:00:00Z",
            "2024-01-31T24:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-01-31T00:00:60Z",
            "2024-01-31T00:00:00.1234567Z",
            "2024-01-31T00:00:00",
            "2024-01-31T00:00:00+0100",
            "2024-01-31T00:00:00.Z",
        ];
        let random = (0..20_000).map(|_| {
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}{}",
                rng.random_range(1900..2100),
                rng.random_range(1..13),
                rng.random_range(1..32),
                rng.random_range(0..25),
                rng.random_range(0..60),
                rng.random_range(0..61),
                match rng.random_range(0..3) {
                    0 => String::new(),
                    1 => format!(".{}", rng.random_range(0..1000)),
                    _ => format!(".{:06}", rng.random_range(0..1_000_000)),
                },
                match rng.random_range(0..3) {
                    0 => "Z".to_owned(),
                    1 => format!(
                        "+{:02}:{:02}",
                        rng.random_range(0..24),
                        rng.random_range(0..60)
                    ),
                    _ => format!("-{:02}:30", rng.random_range(0..24)),
                }
            )
        });
        let mut answered = 0;
        for s in fixed.iter().map(|s| s.to_string()).chain(random) {
            let short = rfc3339_common(s.as_bytes());
            if let Some(m) = short {
                answered += 1;
                assert_eq!(Some(m), chrono_micros(&s), "{s}");
            }
            let parsed = timestamp_of(s.as_bytes()).ok();
            match chrono_micros(&s) {
                Some(read) => assert_eq!(parsed, Some(read), "{s}"),
                // Of what chrono refuses, only the forms the API's `from` also takes are read.
                None => assert_eq!(parsed.is_some(), s.ends_with("+0100"), "{s}"),
            }
            // A report shows the time back in the offset it was written in.
            if let Some((micros, offset)) = parsed {
                assert_eq!(
                    timestamp_of(offset.show(micros).as_bytes()),
                    Ok((micros, offset))
                );
            }
        }
        assert!(answered > 10_000, "the short path answered only {answered}");
    }

    #[test]
    fn reports_echo_times_as_written() {
        for written in [
            "2024-01-31T00:00:00+01:00",
            "2024-07-31T23:45:00-03:30",
            "2024-01-31T00:00:00Z",
            "2024-01-31T00:00:00.250+00:00",
        ] {
            let (micros, offset) = timestamp_of(written.as_bytes()).unwrap();
            assert_eq!(offset.show(micros), written);
        }
    }

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
        };
        for rec in [
            rec,
            Rec {
                offset: Offset::Z,
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
