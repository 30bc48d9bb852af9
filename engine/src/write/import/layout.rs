//! Where a row's parts are in the lines of a values file: made by the reader from the file's
//! header (or a ZRXP block's `LAYOUT`), the mapping and the `#` lines of the block the rows are
//! in, and handed to the parsers with every block of lines.
//!
//! A values file is one of three kinds, told by its content and the mapping:
//! - **plain CSV**: `#` lines and `--skip-lines` lines before the header are skipped; the
//!   header names the columns;
//! - **CSV in blocks** (the mapping has `[values.blocks]`): `#key;value` lines open a block,
//!   whose station (and parameter) the keys the mapping names give; a header line may repeat
//!   after them;
//! - **ZRXP** (KISTERS' exchange format, the first line a `#` line of `|*|`-separated keys):
//!   blocks whose `SANR` is the station, `CNR` the parameter (unless the mapping names other
//!   keys), `RINVAL` the value of a recorded gap, `TZ` the zone of the times
//!   (`yyyyMMddHHmmss`) and `LAYOUT` the columns of the space-separated rows.

use super::dialect::{CsvDialect, NOT_UTF8, NumberReader, parse_zone};
use super::mapping::ValuesMapping;
use crate::model::zone::Zone;

/// What the reader knows of a values file: the kind of its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TextKind {
    Plain,
    Blocks,
    Zrxp,
}

/// Where a station or parameter id comes from.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Part {
    Field(usize),
    Fixed(Box<[u8]>),
}

/// Where a row's time is: one field, or a date and a time field (joined by a space).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum TimeParts {
    Field(usize),
    DateAndTime(usize, usize),
}

/// A series' station and parameter ids as a file writes them.
pub(super) type SeriesIds = (Box<[u8]>, Box<[u8]>);

/// A field of values: of the row's series, or of its own (a wide sheet's column).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ValuePart {
    pub(super) field: usize,
    pub(super) series: Option<SeriesIds>,
}

/// Where the parts of a row are, and how this block writes them.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    pub(super) delimiter: u8,
    /// Fields in a row (the header's), or None where rows may have more (ZRXP's remarks).
    pub(super) fields: Option<usize>,
    pub(super) station: Part,
    pub(super) parameter: Part,
    pub(super) time: TimeParts,
    pub(super) values: Vec<ValuePart>,
    pub(super) quality: Option<usize>,
    /// This block's zone of times without an offset (ZRXP's `TZ`), over the dialect's.
    pub(super) zone: Option<Zone>,
    /// This block's value of a recorded gap (ZRXP's `RINVAL`), beside the dialect's.
    pub(super) invalid: Option<f64>,
    pub(super) numbers: NumberReader,
    /// Rows without a value are no rows (the empty cells of a wide sheet).
    pub(super) skip_empty: bool,
}

/// The keys of a block's `#` lines, in order.
#[derive(Debug, Clone, Default)]
pub(super) struct BlockKeys {
    keys: Vec<(String, String)>,
}

/// ZRXP's header keys, longest first where one begins another (`CNAME`, `CNR`).
const ZRXP_KEYS: [&str; 44] = [
    "ZRXPVERSION",
    "ZRXPCREATOR",
    "TASKSERIALID",
    "SOURCESYSTEM",
    "DEFQUALITY",
    "CDASANAME",
    "CCHANNELNO",
    "XTRUNCATE",
    "REXCHANGE",
    "METNUMBER",
    "RTIMELVL",
    "TASKNAME",
    "SOURCEID",
    "CCHANNEL",
    "METCODE",
    "MANDANT",
    "CTAGKEY",
    "TSPATH",
    "SWATER",
    "RINVAL",
    "RSTATE",
    "TASKID",
    "LAYOUT",
    "CUNIT",
    "CNAME",
    "CDASA",
    "SNAME",
    "RTYPE",
    "XVLID",
    "ZDATE",
    "RORPR",
    "ODATE",
    "SANR",
    "EDIS",
    "CTAG",
    "TZ",
    "CNR",
    "CMW",
    "RNR",
    "RID",
    "RNAME",
    "RDAY",
    "RSEC",
    "CTYPE",
];

impl BlockKeys {
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.keys
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Reads a `#` line: ZRXP's `#KEYvalue|*|KEYvalue|*|` pairs, or `#key;value` (the file's
    /// separator, `:` or `=` after the key).
    pub(super) fn read_line(&mut self, line: &str, delimiter: u8) {
        let body = line.trim_start_matches('#').trim_end();
        if is_zrxp_line(line) {
            for pair in body.split("|*|").flat_map(|p| p.split(";*;")) {
                let pair = pair.trim();
                if let Some(key) = ZRXP_KEYS.iter().find(|k| pair.starts_with(**k)) {
                    self.keys
                        .push(((*key).to_owned(), pair[key.len()..].trim().to_owned()));
                }
            }
            return;
        }
        let separator = |c: char| c == char::from(delimiter) || c == ':' || c == '=';
        if let Some((key, rest)) = body.split_once(separator) {
            let value = rest.split(char::from(delimiter)).next().unwrap_or("");
            self.keys.push((
                key.trim().to_owned(),
                value.trim().trim_matches('"').to_owned(),
            ));
        }
    }
}

/// Whether a `#` line is one of ZRXP's.
pub(super) fn is_zrxp_line(line: &str) -> bool {
    line.starts_with('#') && (line.contains("|*|") || line.contains(";*;"))
}

/// What layouts are made with: the dialect and the mapping of the import.
pub(super) struct LayoutRules<'a> {
    pub(super) dialect: &'a CsvDialect,
    pub(super) mapping: &'a ValuesMapping,
}

fn text(s: &str) -> Box<[u8]> {
    s.as_bytes().into()
}

impl LayoutRules<'_> {
    /// The keys that name a block's station and parameter.
    fn block_keys(&self, kind: TextKind) -> (Option<&str>, Option<&str>) {
        let keys = &self.mapping.blocks;
        let zrxp = kind == TextKind::Zrxp;
        (
            keys.station_id.as_deref().or(zrxp.then_some("SANR")),
            keys.parameter_id.as_deref().or(zrxp.then_some("CNR")),
        )
    }

    /// A station or parameter: the column, else the block's key, else the constant.
    fn part(
        &self,
        named: impl Fn(&str) -> Option<usize>,
        (ours, column): (&str, &Option<String>),
        (key, block): (Option<&str>, &BlockKeys),
        constant: &Option<String>,
        wide: bool,
    ) -> Result<Part, String> {
        if let Some(i) = named(column.as_deref().unwrap_or(ours)) {
            return Ok(Part::Field(i));
        }
        if let Some(value) = key.and_then(|k| block.get(k)) {
            return Ok(Part::Fixed(text(value)));
        }
        if let Some(value) = constant {
            return Ok(Part::Fixed(text(value)));
        }
        if wide {
            // Each wide column names its own; this is never read.
            return Ok(Part::Fixed(Box::default()));
        }
        Err(match (column, key) {
            (Some(c), _) => format!("missing column '{c}' ([values.columns] {ours})"),
            (None, Some(k)) => format!(
                "no {ours}: the block has no #{k} line, and the file no {ours} column \
                 ([values.constants] {ours} gives one for every row)"
            ),
            (None, None) => format!(
                "missing column(s) [\"{ours}\"] (name the file's column in [values.columns], \
                 or give [values.constants] {ours} of the mapping file)"
            ),
        })
    }

    /// The layout of a CSV block whose header line is `header`, in a block of `block`'s keys.
    pub(super) fn csv(
        &self,
        header: &[u8],
        kind: TextKind,
        block: &BlockKeys,
    ) -> Result<Layout, String> {
        let header = header.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(header);
        let delimiter = self
            .dialect
            .delimiter
            .unwrap_or_else(|| super::dialect::sniff_delimiter(header));
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .delimiter(delimiter)
            .trim(csv::Trim::All)
            .from_reader(header);
        let mut record = csv::StringRecord::new();
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => return Err("empty file: no header row".into()),
            Err(e) if matches!(e.kind(), csv::ErrorKind::Utf8 { .. }) => {
                return Err(format!("the header: {NOT_UTF8}"));
            }
            Err(e) => return Err(format!("bad header: {e}")),
        }
        let names: Vec<&str> = record.iter().collect();
        let named = |name: &str| names.iter().position(|n| *n == name);
        let m = self.mapping;
        let c = &m.columns;
        let (station_key, parameter_key) = self.block_keys(kind);
        let wide = !m.wide.is_empty();
        let mut problems = Vec::new();
        let station = self.part(
            named,
            ("stationId", &c.station_id),
            (station_key, block),
            &m.constants.station_id,
            wide,
        );
        let parameter = self.part(
            named,
            ("parameterId", &c.parameter_id),
            (parameter_key, block),
            &m.constants.parameter_id,
            wide,
        );
        let column = |ours: &str, theirs: &Option<String>| {
            let name = theirs.as_deref().unwrap_or(ours);
            named(name).ok_or_else(|| match theirs {
                Some(_) => format!("missing column '{name}' ([values.columns] {ours})"),
                None => format!("missing column(s) [\"{ours}\"]"),
            })
        };
        let time = match (&c.date, &c.time) {
            (Some(_), time) => column("date", &c.date).and_then(|d| match time {
                Some(_) => column("time", time).map(|t| TimeParts::DateAndTime(d, t)),
                None => Ok(TimeParts::Field(d)),
            }),
            (None, _) => column("timestamp", &c.timestamp).map(TimeParts::Field),
        };
        let values = match wide {
            true => m
                .wide
                .iter()
                .map(|w| {
                    named(&w.column)
                        .map(|field| ValuePart {
                            field,
                            series: Some((text(&w.station_id), text(&w.parameter_id))),
                        })
                        .ok_or_else(|| format!("missing column '{}' ([[values.wide]])", w.column))
                })
                .collect::<Result<Vec<_>, _>>(),
            false => column("value", &c.value).map(|field| {
                vec![ValuePart {
                    field,
                    series: None,
                }]
            }),
        };
        let quality = named(c.quality.as_deref().unwrap_or("quality"));
        if quality.is_none() && c.quality.is_some() {
            problems.push(format!(
                "missing column '{}' ([values.columns] quality)",
                c.quality.as_deref().unwrap_or_default()
            ));
        }
        if quality.is_none() && self.dialect.quality.is_none() {
            problems.push(
                "missing column(s) [\"quality\"] (give --quality good (or suspect, estimated, \
                 unchecked) for a file without one)"
                    .to_owned(),
            );
        }
        let (station, parameter, time, values) = match (station, parameter, time, values) {
            (Ok(s), Ok(p), Ok(t), Ok(v)) if problems.is_empty() => (s, p, t, v),
            (s, p, t, v) => {
                problems.extend(s.err());
                problems.extend(p.err());
                problems.extend(t.err());
                problems.extend(v.err());
                let mut problem = problems.join("; ");
                let line = String::from_utf8_lossy(header);
                if delimiter == b',' && line.contains(';') {
                    problem
                        .push_str("; the header is separated by semicolons: give --delimiter ';'");
                }
                return Err(problem);
            }
        };
        Ok(Layout {
            delimiter,
            fields: Some(names.len()),
            station,
            parameter,
            time,
            values,
            quality,
            zone: None,
            invalid: None,
            numbers: NumberReader::new(self.dialect.decimal, delimiter),
            skip_empty: wide,
        })
    }

    /// The layout of a ZRXP block of `block`'s keys: space-separated rows as its `LAYOUT`
    /// says (`timestamp` and `value` first where it says nothing).
    pub(super) fn zrxp(&self, block: &BlockKeys) -> Result<Layout, String> {
        let columns: Vec<String> = match block.get("LAYOUT") {
            Some(l) => l
                .trim_start_matches('(')
                .trim_end_matches(')')
                .split(',')
                .map(|c| c.trim().to_owned())
                .collect(),
            None => vec!["timestamp".into(), "value".into()],
        };
        let at = |name: &str| columns.iter().position(|c| c == name);
        let (time, value) = match (at("timestamp"), at("value")) {
            (Some(t), Some(v)) => (t, v),
            _ => {
                return Err(format!(
                    "LAYOUT{}: a ZRXP block needs timestamp and value columns",
                    block.get("LAYOUT").unwrap_or_default()
                ));
            }
        };
        let (station_key, parameter_key) = self.block_keys(TextKind::Zrxp);
        let never = |_: &str| None;
        let m = self.mapping;
        let station = self.part(
            never,
            ("stationId", &None),
            (station_key, block),
            &m.constants.station_id,
            false,
        )?;
        let parameter = self.part(
            never,
            ("parameterId", &None),
            (parameter_key, block),
            &m.constants.parameter_id,
            false,
        )?;
        // Status codes are qualities only where the mapping says which.
        let quality = at("status").filter(|_| !m.ids.quality.is_empty());
        if quality.is_none() && self.dialect.quality.is_none() {
            return Err(
                "a ZRXP block has no quality: give --quality (good, suspect, estimated, \
                 unchecked), or map its status codes in [values.ids.quality]"
                    .into(),
            );
        }
        let zone = block.get("TZ").map(parse_zone).transpose()?;
        let invalid = match block.get("RINVAL") {
            Some(v) => Some(
                v.parse::<f64>()
                    .map_err(|_| format!("RINVAL{v}: not a number"))?,
            ),
            None => Some(-777.0),
        };
        Ok(Layout {
            delimiter: b' ',
            fields: None,
            station,
            parameter,
            time: TimeParts::Field(time),
            values: vec![ValuePart {
                field: value,
                series: None,
            }],
            quality,
            zone,
            invalid,
            numbers: NumberReader::new(Some(b'.'), b' '),
            skip_empty: false,
        })
    }
}
