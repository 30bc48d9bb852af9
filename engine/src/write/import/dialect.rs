//! How an agency's CSV files are written, for every file an import reads (values and
//! catalog): the field separator, the decimal mark, the text encoding, how times are written
//! and in which zone, which numbers stand for a missing value, the quality of files without a
//! quality column, and lines to skip before the header. What is unambiguous is told from the
//! file itself: the separator from the header line, a decimal comma in a file not separated
//! by commas, German (`31.12.2024 23:45`), ISO (`2024-12-31 23:45`) and ZRXP
//! (`20241231234500`) times without an offset.

use super::QUALITY_FLAGS;
use super::time::{Offset, parse_time, rfc3339_common};
use crate::model::Micros;
use crate::model::zone::Zone;
use chrono::{DateTime, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, TimeZone};
use std::fmt;
use std::io::{self, Read};
use std::str::FromStr;

/// The text encoding of the input files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Encoding {
    #[default]
    Utf8,
    /// ISO 8859-1, read as Windows-1252 (its superset for printable text, as browsers and
    /// encoding_rs read it): the bytes 0x80-0x9F are control codes in Latin-1 that no
    /// export writes, and Excel's `€`, `„` and `–` there in Windows-1252.
    Latin1,
    Windows1252,
}

impl FromStr for Encoding {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "utf-8" | "utf8" => Ok(Self::Utf8),
            "latin1" | "latin-1" | "iso-8859-1" | "iso8859-1" => Ok(Self::Latin1),
            "windows-1252" | "cp1252" | "win1252" => Ok(Self::Windows1252),
            _ => Err(format!(
                "'{s}' is not an encoding this reads: utf-8, latin1 or windows-1252"
            )),
        }
    }
}

/// How the CSV files of an import are written (`hydro import --delimiter …`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CsvDialect {
    /// The field separator; None: told from each file's header line (`,`, `;`, tab or `|`,
    /// whichever it holds most of; `,` when it holds none).
    pub delimiter: Option<u8>,
    /// The decimal mark of numbers; None: a point, and a comma in a file whose fields are not
    /// separated by commas (`1,5` can then be nothing else).
    pub decimal: Option<u8>,
    pub encoding: Encoding,
    /// How `timestamp` (or a date and a time column, joined by a space) is written, in
    /// chrono's strftime form (`%d.%m.%Y %H:%M`); None: RFC 3339, or one of the forms
    /// without an offset this tells by itself (`NAIVE_FORMS`).
    pub date_format: Option<String>,
    /// The zone of times written without an offset; None: such times are refused.
    pub time_zone: Option<Zone>,
    /// Values that stand for a missing one (`-999`): recorded gaps. Compared as numbers, and
    /// as text where they are not numbers (`---`).
    pub missing: Vec<String>,
    /// The quality of the values of a file without a quality column; None: `unchecked`,
    /// with a warning.
    pub quality: Option<String>,
    /// Lines to skip at the start of every file, before its `#` lines and its header.
    pub skip_lines: usize,
}

/// What to do about a file whose text is not UTF-8.
pub(super) const NOT_UTF8: &str = "the text is not UTF-8 (Latin-1 or Windows-1252, as Excel may \
                                   save CSV): save the file as UTF-8, or import it with \
                                   --encoding latin1";

/// What `--time-zone` (and ZRXP's `TZ`) take, as a 400-style reason.
pub(crate) const TIME_ZONES: &str = "an IANA zone with DST such as Europe/Berlin, or a fixed offset: \
                              +01:00, UTC+1, MEZ (= +01:00 all year), MESZ (= +02:00), UTC";

/// A zone as agencies write it: [`Zone::parse`]'s forms, `UTC+1`, `UTC+01:00`, `GMT-3`, and
/// the German `MEZ` (+01:00) and `MESZ` (+02:00), which mean standard and summer time all
/// year, not the zone that switches between them (that is `Europe/Berlin`).
pub fn parse_zone(s: &str) -> Result<Zone, String> {
    let s = s.trim();
    let fixed = |secs: i32| {
        FixedOffset::east_opt(secs)
            .map(Zone::Fixed)
            .ok_or_else(|| format!("'{s}' is not a zone: {TIME_ZONES}"))
    };
    match s {
        "MEZ" => return fixed(3600),
        "MESZ" => return fixed(7200),
        _ => {}
    }
    let upper = s.to_ascii_uppercase();
    if let Some(rest) = ["UTC", "GMT"].iter().find_map(|p| upper.strip_prefix(p))
        && let Some(sign) = rest.chars().next().filter(|c| *c == '+' || *c == '-')
    {
        let (h, m) = rest[1..].split_once(':').unwrap_or((&rest[1..], "0"));
        let (h, m) = (h.parse::<i32>(), m.parse::<i32>());
        if let (Ok(h), Ok(m)) = (h, m)
            && (0..=14).contains(&h)
            && (0..60).contains(&m)
        {
            let secs = (h * 3600 + m * 60) * if sign == '-' { -1 } else { 1 };
            return fixed(secs);
        }
    }
    Zone::parse(s).map_err(|_| format!("'{s}' is not a zone: {TIME_ZONES}"))
}

/// The quality flag `--quality` names.
pub fn parse_quality(s: &str) -> Result<String, String> {
    QUALITY_FLAGS
        .iter()
        .find(|f| **f == s)
        .map(|f| (*f).to_owned())
        .ok_or_else(|| format!("'{s}' is not one of {}", QUALITY_FLAGS.join(", ")))
}

/// Forms of times without an offset read without `--date-format`: each is unambiguous (a
/// day before a month only with dots, as German writes it; no slashes, whose order differs).
pub(super) const NAIVE_FORMS: [&str; 12] = [
    "%Y-%m-%dT%H:%M:%S%.f",
    "%Y-%m-%d %H:%M:%S%.f",
    "%Y-%m-%dT%H:%M",
    "%Y-%m-%d %H:%M",
    "%d.%m.%Y %H:%M:%S",
    "%d.%m.%Y %H:%M",
    "%d.%m.%Y, %H:%M",
    "%Y%m%d%H%M%S",
    "%Y%m%d%H%M",
    "%d.%m.%Y",
    "%Y-%m-%d",
    "%Y%m%d",
];

/// A time read: UTC microseconds, the offset it was written in (or taken in), and whether
/// the local time was one of a repeated hour (the earlier instant is taken; the import takes
/// the later one for the second row of a series at that time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ReadTime {
    pub(super) micros: Micros,
    pub(super) offset: Offset,
    pub(super) repeated: bool,
}

/// Reads times as a dialect writes them.
#[derive(Debug, Clone)]
pub(super) struct TimeReader {
    format: Option<(String, bool)>,
    zone: Option<Zone>,
}

impl TimeReader {
    pub(super) fn new(dialect: &CsvDialect) -> Self {
        let format = dialect.date_format.as_ref().map(|f| {
            let offset = f.contains("%z") || f.contains("%:z") || f.contains("%#z");
            (f.clone(), offset)
        });
        Self {
            format,
            zone: dialect.time_zone,
        }
    }

    /// `text`, in `zone` (a block's own, e.g. ZRXP's `TZ`) or the dialect's where it has no
    /// offset.
    pub(super) fn read(&self, written: &[u8], zone: Option<Zone>) -> Result<ReadTime, String> {
        let zone = zone.or(self.zone);
        if self.format.is_none()
            && let Some((micros, offset)) = rfc3339_common(written)
        {
            return Ok(ReadTime {
                micros,
                offset,
                repeated: false,
            });
        }
        if written.is_empty() {
            return Err("timestamp is required".into());
        }
        // The forms agencies write without an offset, read without chrono where the zone is a
        // fixed offset (see [`naive_common`]).
        if self.format.is_none()
            && let Some(Zone::Fixed(offset)) = zone
            && let Some(local) = naive_common(written)
        {
            let seconds = offset.local_minus_utc();
            return Ok(ReadTime {
                micros: local - i64::from(seconds) * 1_000_000,
                offset: Offset::of_seconds(seconds),
                repeated: false,
            });
        }
        let text = std::str::from_utf8(written).map_err(|_| {
            format!(
                "timestamp: '{}' is not UTF-8",
                String::from_utf8_lossy(written)
            )
        })?;
        if let Some((format, with_offset)) = &self.format {
            if *with_offset {
                let t = DateTime::parse_from_str(text, format)
                    .map_err(|e| format!("timestamp: '{text}' is not in the form {format}: {e}"))?;
                return Ok(ReadTime {
                    micros: t.timestamp_micros(),
                    offset: Offset::of_seconds(t.offset().local_minus_utc()),
                    repeated: false,
                });
            }
            let local = naive(text, format)
                .ok_or_else(|| format!("timestamp: '{text}' is not in the form {format}"))?;
            return in_zone(local, zone, text);
        }
        let refused = match parse_time(text) {
            Ok((micros, offset)) => {
                return Ok(ReadTime {
                    micros,
                    offset: offset.map_or(Offset::Z, Offset::of_seconds),
                    repeated: false,
                });
            }
            Err(e) => e,
        };
        match NAIVE_FORMS.iter().find_map(|f| naive(text, f)) {
            Some(local) if zone.is_some() => in_zone(local, zone, text),
            Some(_) => Err(format!(
                "timestamp: {refused}, or give --time-zone: the zone the file's times are in \
                 (MEZ for +01:00 all year, Europe/Berlin with DST)"
            )),
            None => Err(format!(
                "timestamp: {refused}; other forms: --date-format (e.g. '%d/%m/%Y %H:%M')"
            )),
        }
    }
}

/// The common forms of [`NAIVE_FORMS`] (`31.12.2024 23:45[:00]`, `2024-12-31[T ]23:45[:00]`,
/// `20241231234500`, and a date alone) as microseconds of local time since 1970, or None for
/// anything else (which chrono reads). Measured on 4 M rows of an export (`benches/
/// import_dialects.py`): chrono trying the forms in turn was most of the time an export's
/// import took beyond our own CSV's; both agree wherever this answers (tested below).
fn naive_common(b: &[u8]) -> Option<Micros> {
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
    // The date and where the time starts.
    let (y, mo, d, rest) = if at(2, b'.') && at(5, b'.') {
        (digits(6..10)?, digits(3..5)?, digits(0..2)?, 10)
    } else if at(4, b'-') && at(7, b'-') {
        (digits(0..4)?, digits(5..7)?, digits(8..10)?, 10)
    } else if b.len() == 14 || b.len() == 12 || b.len() == 8 {
        let (y, mo, d) = (digits(0..4)?, digits(4..6)?, digits(6..8)?);
        let (h, mi, s) = match b.len() {
            8 => (0, 0, 0),
            12 => (digits(8..10)?, digits(10..12)?, 0),
            _ => (digits(8..10)?, digits(10..12)?, digits(12..14)?),
        };
        return civil(y, mo, d, h, mi, s);
    } else {
        return None;
    };
    let (h, mi, s) = match &b[rest..] {
        [] => (0, 0, 0),
        [b' ' | b'T', _, _, b':', _, _] => {
            (digits(rest + 1..rest + 3)?, digits(rest + 4..rest + 6)?, 0)
        }
        [b' ' | b'T', _, _, b':', _, _, b':', _, _] => (
            digits(rest + 1..rest + 3)?,
            digits(rest + 4..rest + 6)?,
            digits(rest + 7..rest + 9)?,
        ),
        _ => return None,
    };
    civil(y, mo, d, h, mi, s)
}

/// Microseconds since 1970 of a valid calendar date and time of day, or None.
fn civil(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64) -> Option<Micros> {
    let date = NaiveDate::from_ymd_opt(
        i32::try_from(y).ok()?,
        u32::try_from(mo).ok()?,
        u32::try_from(d).ok()?,
    )?;
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let days = i64::from(chrono::Datelike::num_days_from_ce(&date)) - 719_163;
    Some((days * 86_400 + h * 3600 + mi * 60 + s) * 1_000_000)
}

/// `text` as a local time of `format`; a format of dates alone gives their midnights.
fn naive(text: &str, format: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(text, format)
        .ok()
        .or_else(|| {
            NaiveDate::parse_from_str(text, format)
                .ok()
                .map(|d| d.and_time(chrono::NaiveTime::MIN))
        })
}

/// The instant of the local time `local` in `zone`: the earlier one of a repeated hour
/// (marked as such), an error for one DST skips.
fn in_zone(local: NaiveDateTime, zone: Option<Zone>, text: &str) -> Result<ReadTime, String> {
    let Some(zone) = zone else {
        return Err(format!(
            "timestamp: '{text}' is not a time with an offset: give --time-zone (the zone the \
             file's times are in: MEZ for +01:00 all year, Europe/Berlin with DST)"
        ));
    };
    let at = |t: DateTime<FixedOffset>, repeated: bool| ReadTime {
        micros: t.timestamp_micros(),
        offset: Offset::of_seconds(t.offset().local_minus_utc()),
        repeated,
    };
    match zone {
        Zone::Fixed(o) => match o.from_local_datetime(&local) {
            LocalResult::Single(t) => Ok(at(t, false)),
            _ => Err(format!("timestamp: '{text}' is out of range")),
        },
        Zone::Named(tz) => match tz.from_local_datetime(&local) {
            LocalResult::Single(t) => Ok(at(t.fixed_offset(), false)),
            LocalResult::Ambiguous(earlier, _) => Ok(at(earlier.fixed_offset(), true)),
            LocalResult::None => Err(format!(
                "timestamp: '{text}' does not exist in {} (the hour skipped when daylight \
                 saving time begins): a wall-clock series has no value then",
                tz.name()
            )),
        },
    }
}

/// The later instant of the repeated local time whose earlier instant is `micros` (written
/// with `offset`), in `zone`.
pub(super) fn later_of_repeated(micros: Micros, offset: Offset, zone: Zone) -> Option<Micros> {
    let Zone::Named(tz) = zone else {
        return None;
    };
    let local = DateTime::from_timestamp_micros(micros + i64::from(offset.seconds()) * 1_000_000)?
        .naive_utc();
    match tz.from_local_datetime(&local) {
        LocalResult::Ambiguous(_, later) => Some(later.timestamp_micros()),
        _ => None,
    }
}

/// The separator of a file whose header line is `line`: `,`, `;`, tab or `|`, whichever it
/// holds most of (`,` when it holds none).
pub(super) fn sniff_delimiter(line: &[u8]) -> u8 {
    let mut best = (b',', 0);
    for d in [b',', b';', b'\t', b'|'] {
        let n = line.iter().filter(|&&c| c == d).count();
        if n > best.1 {
            best = (d, n);
        }
    }
    best.0
}

/// Numbers as a dialect writes them.
#[derive(Debug, Clone, Copy)]
pub(super) struct NumberReader {
    /// The decimal mark given, or None.
    decimal: Option<u8>,
    /// Whether a comma may be the decimal mark where none was given.
    comma_allowed: bool,
}

impl NumberReader {
    pub(super) fn new(decimal: Option<u8>, delimiter: u8) -> Self {
        Self {
            decimal,
            comma_allowed: delimiter != b',',
        }
    }

    /// `text` as a number, or None. A decimal comma is read in place of a point in a copy on
    /// the stack, not a `String` a value.
    pub(super) fn read(&self, text: &str) -> Option<f64> {
        let comma = match self.decimal {
            Some(b',') => true,
            Some(_) => false,
            None => self.comma_allowed,
        };
        let Some(at) = comma.then(|| text.find(',')).flatten() else {
            return text.parse().ok();
        };
        if text.contains('.') || text[at + 1..].contains(',') || text.len() > 64 {
            return None;
        }
        let mut copy = [0u8; 64];
        copy[..text.len()].copy_from_slice(text.as_bytes());
        copy[at] = b'.';
        std::str::from_utf8(&copy[..text.len()]).ok()?.parse().ok()
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Utf8 => "utf-8",
            Self::Latin1 => "latin1",
            Self::Windows1252 => "windows-1252",
        })
    }
}

/// Text in `encoding`, read as UTF-8 (a stream: the decoder keeps the bytes of a character
/// cut at a buffer's end).
pub(super) fn decoded(inner: Box<dyn Read + Send>, encoding: Encoding) -> Box<dyn Read + Send> {
    match encoding {
        Encoding::Utf8 => inner,
        Encoding::Latin1 | Encoding::Windows1252 => Box::new(Decoded {
            inner,
            decoder: encoding_rs::WINDOWS_1252.new_decoder_without_bom_handling(),
            input: vec![0; 64 * 1024],
            // A byte of Windows-1252 is at most three of UTF-8.
            output: vec![0; 3 * 64 * 1024 + 16],
            at: 0,
            end: 0,
            done: false,
        }),
    }
}

/// A reader of Windows-1252 text as UTF-8: a block read and decoded at a time, handed out
/// as asked.
struct Decoded {
    inner: Box<dyn Read + Send>,
    decoder: encoding_rs::Decoder,
    input: Vec<u8>,
    output: Vec<u8>,
    /// The decoded bytes not handed out yet: `output[at..end]`.
    at: usize,
    end: usize,
    done: bool,
}

impl Read for Decoded {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.end && !self.done {
            let n = self.inner.read(&mut self.input)?;
            self.done = n == 0;
            let (_, read, written, _) =
                self.decoder
                    .decode_to_utf8(&self.input[..n], &mut self.output, self.done);
            debug_assert_eq!(read, n, "the output holds a block's decoding");
            (self.at, self.end) = (0, written);
        }
        let n = out.len().min(self.end - self.at);
        out[..n].copy_from_slice(&self.output[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_as_agencies_write_them() {
        let offset = |s: &str| parse_zone(s).map(|z| z.offset_secs(0));
        assert_eq!(offset("MEZ"), Ok(3600));
        assert_eq!(offset("MESZ"), Ok(7200));
        assert_eq!(offset("UTC+1"), Ok(3600));
        assert_eq!(offset("UTC+01:00"), Ok(3600));
        assert_eq!(offset("GMT-3"), Ok(-10800));
        assert_eq!(offset("+01:00"), Ok(3600));
        assert_eq!(offset("UTC"), Ok(0));
        assert_eq!(
            parse_zone("Europe/Berlin").map(|z| z.offset_secs(1_719_792_000_000_000)),
            Ok(7200)
        );
        for bad in ["CEST+", "UTC+25", "Mars/Olympus", ""] {
            assert!(parse_zone(bad).is_err(), "{bad}");
        }
    }

    fn read(dialect: &CsvDialect, text: &str) -> Result<ReadTime, String> {
        TimeReader::new(dialect).read(text.as_bytes(), None)
    }

    #[test]
    fn times_without_an_offset_need_a_zone_and_dst_is_told() {
        let berlin = CsvDialect {
            time_zone: Some(parse_zone("Europe/Berlin").unwrap()),
            ..CsvDialect::default()
        };
        let utc = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().timestamp_micros();
        let t = read(&berlin, "31.01.2024 00:15").unwrap();
        assert_eq!(t.micros, utc("2024-01-30T23:15:00Z"));
        assert_eq!(
            read(&berlin, "2024-07-01 12:00").unwrap().micros,
            utc("2024-07-01T10:00:00Z")
        );
        assert_eq!(
            read(&berlin, "20240701120000").unwrap().micros,
            utc("2024-07-01T10:00:00Z")
        );
        // With an offset the zone is not asked.
        assert_eq!(
            read(&berlin, "2024-07-01T12:00:00+00:00").unwrap().micros,
            utc("2024-07-01T12:00:00Z")
        );
        // The repeated hour: the earlier instant, marked; the later one found from it.
        let fold = read(&berlin, "27.10.2024 02:30").unwrap();
        assert!(fold.repeated);
        assert_eq!(fold.micros, utc("2024-10-27T00:30:00Z"));
        assert_eq!(
            later_of_repeated(fold.micros, fold.offset, berlin.time_zone.unwrap()),
            Some(utc("2024-10-27T01:30:00Z"))
        );
        // The skipped hour is an error that names DST.
        let skipped = read(&berlin, "31.03.2024 02:30").unwrap_err();
        assert!(skipped.contains("daylight saving"), "{skipped}");
        // No zone: an error that says how to give one.
        let none = read(&CsvDialect::default(), "31.01.2024 00:15").unwrap_err();
        assert!(none.contains("--time-zone"), "{none}");
        // A format of its own.
        let us = CsvDialect {
            date_format: Some("%m/%d/%Y %I:%M %p".into()),
            time_zone: Some(Zone::UTC),
            ..CsvDialect::default()
        };
        assert_eq!(
            read(&us, "07/01/2024 01:30 PM").unwrap().micros,
            utc("2024-07-01T13:30:00Z")
        );
        assert!(
            read(&us, "2024-07-01T13:30:00Z")
                .unwrap_err()
                .contains("%m/%d/%Y")
        );
    }

    /// Wherever the fast path reads a time, chrono reads the same from the forms it tries.
    #[test]
    fn the_fast_path_of_times_without_an_offset_agrees_with_chrono() {
        use rand::rngs::StdRng;
        use rand::{RngExt, SeedableRng};
        let mut rng = StdRng::seed_from_u64(11);
        let chrono_micros = |s: &str| {
            NAIVE_FORMS
                .iter()
                .find_map(|f| naive(s, f))
                .map(|t| t.and_utc().timestamp_micros())
        };
        let mut answered = 0;
        for _ in 0..20_000 {
            let (y, mo, d) = (
                rng.random_range(1900..2100),
                rng.random_range(0..14),
                rng.random_range(0..33),
            );
            let (h, mi, s) = (
                rng.random_range(0..25),
                rng.random_range(0..61),
                rng.random_range(0..61),
            );
            let text = match rng.random_range(0..7) {
                0 => format!("{d:02}.{mo:02}.{y:04} {h:02}:{mi:02}"),
                1 => format!("{d:02}.{mo:02}.{y:04} {h:02}:{mi:02}:{s:02}"),
                2 => format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}"),
                3 => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}"),
                4 => format!("{y:04}{mo:02}{d:02}{h:02}{mi:02}{s:02}"),
                5 => format!("{d:02}.{mo:02}.{y:04}"),
                _ => format!("{y:04}{mo:02}{d:02}{h:02}{mi:02}"),
            };
            let fast = naive_common(text.as_bytes());
            if fast.is_some() {
                answered += 1;
                assert_eq!(fast, chrono_micros(&text), "{text}");
            }
        }
        assert!(answered > 5_000, "the fast path answered {answered}");
        for other in [
            "31.12.2024 23:45:00.5",
            "2024-12-31 23:45:00.250",
            "1.1.2024 0:00",
        ] {
            assert_eq!(naive_common(other.as_bytes()), None, "{other}");
        }
    }

    #[test]
    fn decimal_commas_where_they_are_unambiguous() {
        let semicolons = NumberReader::new(None, b';');
        assert_eq!(semicolons.read("1,5"), Some(1.5));
        assert_eq!(semicolons.read("-999"), Some(-999.0));
        assert_eq!(semicolons.read("1.5"), Some(1.5));
        assert_eq!(semicolons.read("1,234,5"), None);
        let commas = NumberReader::new(None, b',');
        assert_eq!(commas.read("1,5"), None);
        let given = NumberReader::new(Some(b','), b'\t');
        assert_eq!(given.read("1,5"), Some(1.5));
        assert_eq!(given.read("1.234,5"), None);
        assert_eq!(sniff_delimiter(b"Datum;Uhrzeit;Wert"), b';');
        assert_eq!(sniff_delimiter(b"a,b;c,d"), b',');
        assert_eq!(sniff_delimiter(b"a\tb"), b'\t');
        assert_eq!(sniff_delimiter(b"value"), b',');
    }

    #[test]
    fn latin1_reads_as_utf8() {
        let latin1: &[u8] = b"K\xf6ln;Stra\xdfe;\x80\n";
        let mut out = String::new();
        decoded(Box::new(latin1), Encoding::Latin1)
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "Köln;Straße;€\n");
        // Read a byte at a time, the characters are whole.
        let mut one = decoded(Box::new(latin1), Encoding::Latin1);
        let mut bytes = Vec::new();
        let mut b = [0u8; 1];
        while one.read(&mut b).unwrap() == 1 {
            bytes.push(b[0]);
        }
        assert_eq!(String::from_utf8(bytes).unwrap(), "Köln;Straße;€\n");
    }
}
