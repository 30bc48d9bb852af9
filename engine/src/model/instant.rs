//! Times with an offset in the forms people type, read alike wherever a time comes in (the
//! API's `from` and `to`, the import's value rows and catalog periods): ISO 8601 / RFC 3339
//! with `T`, `t` or a space between date and time, seconds optional, a fraction of a second
//! optional, the offset as `Z`, `±HH:MM`, `±HHMM` or `±HH`. A time without an offset is
//! refused: it is ambiguous.

use super::Micros;
use chrono::{FixedOffset, NaiveDateTime};

/// Examples of the forms [`parse`] reads, for messages that say what to write.
pub const FORMS: &str = "2024-03-01T00:00:00+01:00, 2024-03-01T00:00+0100, \
                         2024-03-01T00:00:00.5+01 or 2024-02-29T23:00:00Z";

/// `v` as UTC microseconds and the offset it was written with, in seconds (None for `Z`).
pub fn parse(v: &str) -> Option<(Micros, Option<i32>)> {
    let (local, offset) = split_offset(v)?;
    let local = local.replacen(['t', ' '], "T", 1);
    let local = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(&local, f).ok())?;
    let zone = FixedOffset::east_opt(offset.unwrap_or(0))?;
    let at = local.and_local_timezone(zone).single()?;
    Some((at.timestamp_micros(), offset))
}

/// `v` without an offset (the forms of [`parse`] with the offset left out: `2024-03-01T00:00`,
/// `2024-03-01 00:00:00`), as the wall-clock time it names; None for anything else.
pub fn parse_local(v: &str) -> Option<NaiveDateTime> {
    let local = v.replacen(['t', ' '], "T", 1);
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(&local, f).ok())
}

/// The local part of a time and its offset in seconds (None for `Z`): `Z`, `±HH:MM`, `±HHMM`
/// or `±HH` at its end (after the date's own `-`s).
fn split_offset(v: &str) -> Option<(&str, Option<i32>)> {
    if let Some(local) = v.strip_suffix(['Z', 'z']) {
        return Some((local, None));
    }
    // The time starts after the date (10 characters); an offset's sign comes after that.
    let time_starts = v.get(10..)?.find(['T', 't', ' '])? + 10;
    let at = time_starts + v[time_starts..].rfind(['+', '-'])?;
    let (local, offset) = v.split_at(at);
    let sign = if offset.starts_with('-') { -1 } else { 1 };
    let body = &offset[1..];
    // ASCII only from here on, so that the byte positions below are character boundaries.
    if !body.bytes().all(|b| b.is_ascii_digit() || b == b':') {
        return None;
    }
    let (h, m) = match body.len() {
        2 => (body, "00"),
        4 => body.split_at(2),
        5 if body.as_bytes()[2] == b':' => (&body[..2], &body[3..]),
        _ => return None,
    };
    if !h.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
    (h <= 23 && m <= 59).then_some((local, Some(sign * (h * 3600 + m * 60))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_reads_the_same_instant() {
        let t = |v: &str| parse(v).unwrap_or_else(|| panic!("{v}")).0;
        let want = t("2024-03-01T00:00:00+01:00");
        for same in [
            "2024-03-01T00:00+01:00",
            "2024-03-01T00:00:00.000+01:00",
            "2024-03-01T00:00:00.000000000+01:00",
            "2024-03-01T00:00:00+0100",
            "2024-03-01T00:00+01",
            "2024-03-01 00:00:00+01:00",
            "2024-02-29T23:00:00Z",
            "2024-02-29t23:00:00z",
            "2024-02-29T22:00:00-01:00",
        ] {
            assert_eq!(t(same), want, "{same}");
        }
        assert_eq!(t("2024-03-01T00:00:00.5+01:00"), want + 500_000);
        assert_eq!(parse("2024-03-01T00:00:00Z").unwrap().1, None);
        assert_eq!(parse("2024-03-01T00:00:00+00:00").unwrap().1, Some(0));
        assert_eq!(parse("2024-03-01T00:00:00-0530").unwrap().1, Some(-19_800));
    }

    #[test]
    fn times_without_an_offset_or_out_of_range_are_refused() {
        for bad in [
            "",
            "2024-01-01",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00",
            "2024-13-01T00:00:00Z",
            "2024-02-30T00:00:00Z",
            "2024-01-01T00:00:00+1:00",
            "2024-01-01T00:00:00+01:0",
            "2024-01-01T00:00:00+24:00",
            "2024-01-01T00:00:00+01:00:00",
            "2024-01-01T00:00:00+0a00",
            "2024-01-01T00:00:00+1ü2",
            "2024-01-01T00:00:00+ü",
            "2024-01-01T25:00:00Z",
            "ü2024-01-01T00:00:00Z",
            "now",
        ] {
            assert!(parse(bad).is_none(), "{bad}");
        }
    }
}
