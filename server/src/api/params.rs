//! Query strings: raw pairs first, then typed values per parameter. Every parser rejects the
//! empty value; unknown and repeated parameters are errors, so a typo never silently widens
//! an answer.

use crate::http::error::ApiError;
pub use crate::http::error::shorten;
pub use crate::render::resources::SortSpec;
use hydro_engine::IsoDuration;
use hydro_engine::{BBox, Near};
use hydro_engine::{INSTANT_FORMS, Micros, normalize_state, parse_instant};
use percent_encoding::percent_decode_str;

/// The decoded pairs of a query string, in order. `+` stays `+` (an unencoded `+` in an
/// offset is common); only percent-escapes are decoded.
#[derive(Debug, Default, Clone)]
pub struct RawQuery {
    pub pairs: Vec<(String, String)>,
}

/// Longest list a comma parameter may have.
const MAX_LIST: usize = 1000;

impl RawQuery {
    pub fn parse(raw: Option<&str>) -> Result<Self, ApiError> {
        Self::decoded(raw.unwrap_or(""), "the query string", false)
    }

    /// A query string read as a form: `+` is a space. For `/v1/sql`, whose statement every
    /// HTTP library's query encoding (Python's `urlencode`, `requests`, `URLSearchParams`)
    /// writes with `+` for spaces and `%2B` for a plus; the `+` kept elsewhere is that of an
    /// unencoded time offset, which a statement does not have.
    pub fn parse_form(raw: Option<&str>) -> Result<Self, ApiError> {
        Self::decoded(raw.unwrap_or(""), "the query string", true)
    }

    /// The pairs of `text` (`k=v&k=v`), percent-escapes decoded, and `+` read as a space when
    /// `plus_is_space` (a form body; a query string keeps it).
    fn decoded(text: &str, what: &str, plus_is_space: bool) -> Result<Self, ApiError> {
        let mut out = Self::default();
        for part in text.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            let decode = |s: &str| {
                let spaced;
                let s = if plus_is_space && s.contains('+') {
                    spaced = s.replace('+', " ");
                    spaced.as_str()
                } else {
                    s
                };
                percent_decode_str(s)
                    .decode_utf8()
                    .map(|c| c.into_owned())
                    .map_err(|_| ApiError::BadRequest(format!("{what} is not valid UTF-8")))
            };
            out.push(decode(k)?, decode(v)?)?;
        }
        Ok(out)
    }

    fn push(&mut self, name: String, value: String) -> Result<(), ApiError> {
        if self.pairs.iter().any(|(seen, _)| *seen == name) {
            return Err(ApiError::param(&shorten(&name), "given more than once"));
        }
        self.pairs.push((name, value));
        Ok(())
    }

    /// The parameters of a request body (`POST /v1/values` and `/v1/statistics`, for
    /// selections too long for a URL), by its media type: a form (`application/x-www-form-urlencoded`, lists
    /// comma-separated as in a query string) or a JSON object (lists as arrays of strings or
    /// numbers, any other value as a string or number). The pairs are those of the equivalent
    /// query string, so that the answer and its ETag are the GET's.
    ///
    /// `form_of` tells how JSON writes a parameter (`query_parameters::json_form`).
    pub fn from_body(
        content_type: Option<&str>,
        body: &[u8],
        form_of: fn(&str) -> JsonForm,
    ) -> Result<Self, ApiError> {
        let media = content_type
            .and_then(|t| t.split(';').next())
            .map(|t| t.trim().to_ascii_lowercase());
        match media.as_deref() {
            Some("application/x-www-form-urlencoded") => {
                let text = std::str::from_utf8(body).map_err(|_| {
                    ApiError::BadRequest("the request body is not valid UTF-8".into())
                })?;
                Self::decoded(text, "the request body", true)
            }
            Some("application/json") => Self::from_json(body, form_of),
            _ => Err(ApiError::UnsupportedMediaType(format!(
                "send the parameters as application/x-www-form-urlencoded or application/json, \
                 not {}",
                content_type.map_or("a body without Content-Type".into(), shorten)
            ))),
        }
    }

    /// The parameters of a `/v1/sql` body: the statement itself (`application/sql`,
    /// `text/plain`) as `q`, or a form or JSON object as [`RawQuery::from_body`] reads them.
    pub fn from_sql_body(
        content_type: Option<&str>,
        body: &[u8],
        form_of: fn(&str) -> JsonForm,
    ) -> Result<Self, ApiError> {
        let media = content_type
            .and_then(|t| t.split(';').next())
            .map(|t| t.trim().to_ascii_lowercase());
        match media.as_deref() {
            Some("application/sql" | "text/plain") => {
                let text = std::str::from_utf8(body).map_err(|_| {
                    ApiError::BadRequest("the request body is not valid UTF-8".into())
                })?;
                let mut out = Self::default();
                out.push("q".into(), text.to_owned())?;
                Ok(out)
            }
            Some("application/x-www-form-urlencoded" | "application/json") => {
                Self::from_body(content_type, body, form_of)
            }
            _ => Err(ApiError::UnsupportedMediaType(format!(
                "send the statement as application/sql or text/plain, or as q in \
                 application/json or application/x-www-form-urlencoded, not {}",
                content_type.map_or("a body without Content-Type".into(), shorten)
            ))),
        }
    }

    fn from_json(body: &[u8], form_of: fn(&str) -> JsonForm) -> Result<Self, ApiError> {
        let object: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(body)
            .map_err(|e| {
                ApiError::BadRequest(format!("the request body is not a JSON object: {e}"))
            })?;
        let mut out = Self::default();
        for (name, value) in object {
            let form = form_of(&name);
            let text = form.text(&value).ok_or_else(|| {
                ApiError::param(&shorten(&name), format!("must be {}", form.expected()))
            })?;
            out.push(name, text)?;
        }
        Ok(out)
    }

    /// This query with the parameters of a request body added; one given in both is a 400,
    /// as one given twice in a query is.
    pub fn with_body(mut self, body: RawQuery) -> Result<Self, ApiError> {
        for (name, value) in body.pairs {
            if self.pairs.iter().any(|(k, _)| *k == name) {
                return Err(ApiError::param(
                    &shorten(&name),
                    "given in both the query string and the request body",
                ));
            }
            self.pairs.push((name, value));
        }
        Ok(self)
    }

    /// Fails on the first parameter not in `allowed`.
    pub fn only(&self, allowed: &[&str], basic_hint: bool) -> Result<(), ApiError> {
        let unknown: Vec<(String, String)> = self
            .pairs
            .iter()
            .filter(|(k, _)| !allowed.contains(&k.as_str()))
            .map(|(k, _)| {
                let reason = if basic_hint {
                    "not available in the basic variant of this API".to_owned()
                } else {
                    let near = nearest_name(k, allowed)
                        .map(|n| format!(" (did you mean {n}?)"))
                        .unwrap_or_default();
                    format!(
                        "unknown parameter{near}; allowed here: {}",
                        allowed.join(", ")
                    )
                };
                (shorten(k), reason)
            })
            .collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(ApiError::BadParams(unknown))
        }
    }

    /// The value of `name`, rejecting an empty one.
    pub fn get(&self, name: &str) -> Result<Option<&str>, ApiError> {
        match self.pairs.iter().find(|(k, _)| k == name) {
            None => Ok(None),
            Some((_, v)) if v.is_empty() => Err(ApiError::param(name, "must not be empty")),
            Some((_, v)) => Ok(Some(v.as_str())),
        }
    }
}

/// The allowed name `typed` most likely meant: one a typo or two away (`form` for `format`,
/// `timezone` for `timeZone`), or one it is the start of.
fn nearest_name<'a>(typed: &str, allowed: &[&'a str]) -> Option<&'a str> {
    use hydro_engine::{edits_within, typo_reach};
    let reach = typo_reach(typed).min(2);
    allowed
        .iter()
        .filter_map(|name| {
            let edits = edits_within(typed, name, reach).or_else(|| {
                let prefix =
                    typed.len() >= 3 && name.to_lowercase().starts_with(&typed.to_lowercase());
                prefix.then_some(reach + 1)
            })?;
            Some((edits, *name))
        })
        .min()
        .map(|(_, name)| name)
}

/// How a parameter is written in a JSON request body: as its query-string text, or where that
/// text is a list or a number, as the JSON list or number (so that a body is what the OpenAPI
/// document's JSON schema of it says, no more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonForm {
    /// A string.
    Text,
    /// A comma list: a string, or an array of strings.
    List,
    /// A whole number.
    Count,
    /// Numbers (`bbox`, `near`): an array of numbers.
    Numbers,
    /// A number (`minCoverage`).
    Number,
}

impl JsonForm {
    /// The value as the query string would give it, if it has this form.
    fn text(&self, value: &serde_json::Value) -> Option<String> {
        use serde_json::Value;
        let joined = |items: &Vec<Value>, item: fn(&Value) -> Option<String>| {
            let items = items.iter().map(item).collect::<Option<Vec<String>>>()?;
            (!items.is_empty()).then(|| items.join(","))
        };
        match (self, value) {
            (Self::Text | Self::List, Value::String(s)) => Some(s.clone()),
            (Self::List, Value::Array(items)) => joined(items, |v| v.as_str().map(str::to_owned)),
            // JSON Schema's integers include 480.0.
            (Self::Count, Value::Number(n)) => n
                .as_u64()
                .or_else(|| {
                    let f = n.as_f64()?;
                    (f >= 0.0 && f.fract() == 0.0).then_some(f as u64)
                })
                .map(|n| n.to_string()),
            (Self::Number, Value::Number(n)) => Some(n.to_string()),
            (Self::Numbers, Value::Array(items)) => {
                joined(items, |v| v.as_number().map(ToString::to_string))
            }
            _ => None,
        }
    }

    fn expected(&self) -> &'static str {
        match self {
            Self::Text => "a string",
            Self::List => "a comma-separated string or an array of strings",
            Self::Count => "a whole number",
            Self::Numbers => "an array of numbers",
            Self::Number => "a number",
        }
    }
}

/// A comma list. Each item is trimmed of white space and of `+`, which is a space in a query
/// string that a client form-encoded (the query keeps `+` as sent, for the offsets of times);
/// `sort=+name` still sorts by name ascending.
pub fn list<'a>(name: &str, v: &'a str) -> Result<Vec<&'a str>, ApiError> {
    let items: Vec<&str> = v
        .split(',')
        .map(|i| i.trim_matches(|c: char| c.is_whitespace() || c == '+'))
        .collect();
    if items.iter().any(|i| i.is_empty()) {
        return Err(ApiError::param(name, "has an empty item"));
    }
    if items.len() > MAX_LIST {
        return Err(ApiError::param(
            name,
            format!("has more than {MAX_LIST} items"),
        ));
    }
    Ok(items)
}

/// A whole number from 0 to 2^63 − 1 (the range the OpenAPI document gives every count).
pub fn uint(name: &str, v: &str) -> Result<u64, ApiError> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::param(
            name,
            format!("'{}' is not a whole number ≥ 0", shorten(v)),
        ));
    }
    v.parse::<u64>()
        .ok()
        .filter(|&n| n <= i64::MAX as u64)
        .ok_or_else(|| ApiError::param(name, format!("is larger than {}", i64::MAX)))
}

/// A time with an offset in the forms [`parse_instant`] reads. A space where the `+` of the offset
/// belongs (an unencoded `+`) is read as `+`.
pub fn timestamp(name: &str, v: &str) -> Result<Micros, ApiError> {
    parse_instant(&v.replace(' ', "+"))
        .map(|(t, _)| t)
        .ok_or_else(|| {
            ApiError::param(
                name,
                format!(
                    "'{}' is not a time with an offset; use ISO 8601 such as {} \
                     (a time without an offset is ambiguous: give timeZone to read it there)",
                    shorten(v),
                    INSTANT_FORMS
                ),
            )
        })
}

pub fn duration(name: &str, v: &str) -> Result<IsoDuration, ApiError> {
    v.parse()
        .map_err(|e: hydro_engine::DurationError| ApiError::param(name, e.to_string()))
}

fn floats<const N: usize>(name: &str, v: &str, form: &str) -> Result<[f64; N], ApiError> {
    let bad = || ApiError::param(name, format!("expected {form}"));
    let parts: Vec<f64> = v
        .split(',')
        .map(|p| p.trim().parse::<f64>().ok().filter(|x| x.is_finite()))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(bad)?;
    parts.try_into().map_err(|_| bad())
}

fn check_lon_lat(name: &str, lon: f64, lat: f64) -> Result<(), ApiError> {
    if !(-180.0..=180.0).contains(&lon) {
        return Err(ApiError::param(name, "longitude must be within -180..180"));
    }
    if !(-90.0..=90.0).contains(&lat) {
        return Err(ApiError::param(name, "latitude must be within -90..90"));
    }
    Ok(())
}

/// `minLon,minLat,maxLon,maxLat`; minLon > maxLon crosses the antimeridian. Latitudes do not
/// wrap, so the two bound the box in either order (a client need not know which is which).
pub fn bbox(v: &str) -> Result<BBox, ApiError> {
    let [min_lon, lat_a, max_lon, lat_b] =
        floats::<4>("bbox", v, "minLon,minLat,maxLon,maxLat in WGS 84 degrees")?;
    check_lon_lat("bbox", min_lon, lat_a)?;
    check_lon_lat("bbox", max_lon, lat_b)?;
    Ok(BBox {
        min_lon,
        min_lat: lat_a.min(lat_b),
        max_lon,
        max_lat: lat_a.max(lat_b),
    })
}

/// Half the Earth's circumference, rounded up (km): a circle this wide covers the globe.
const WHOLE_EARTH_KM: f64 = 20_100.0;

/// `lon,lat,radius` with the radius in km, or `lon,lat` for no limit. A radius beyond half the
/// Earth's circumference covers the whole globe and is taken as that: every station, nearest
/// first.
pub fn near(v: &str) -> Result<Near, ApiError> {
    let form = "lon,lat or lon,lat,radius (WGS 84 degrees, radius in km)";
    let (lon, lat, radius_km) = match v.split(',').count() {
        2 => {
            let [lon, lat] = floats::<2>("near", v, form)?;
            (lon, lat, WHOLE_EARTH_KM)
        }
        _ => {
            let [lon, lat, radius_km] = floats::<3>("near", v, form)?;
            (lon, lat, radius_km)
        }
    };
    check_lon_lat("near", lon, lat)?;
    if radius_km <= 0.0 {
        return Err(ApiError::param("near", "radius must be greater than 0 km"));
    }
    Ok(Near {
        lon,
        lat,
        radius_km: radius_km.min(WHOLE_EARTH_KM),
    })
}

pub fn states(v: &str) -> Result<Vec<String>, ApiError> {
    list("states", v)?
        .into_iter()
        .map(|s| {
            normalize_state(s).ok_or_else(|| {
                ApiError::param(
                    "states",
                    format!("'{}' is not a state code like DE-BY or BY", shorten(s)),
                )
            })
        })
        .collect()
}

/// `sort=a,-b`: every field must be in `allowed` (aliases resolved by `canon`); a field named
/// again is left out, as it cannot change the order.
pub fn sort(
    v: &str,
    allowed: &[&str],
    canon: impl Fn(&str) -> String,
) -> Result<Vec<SortSpec>, ApiError> {
    let mut out: Vec<SortSpec> = Vec::new();
    for item in list("sort", v)? {
        let (descending, field) = match item.strip_prefix('-') {
            Some(f) => (true, f),
            None => (false, item.strip_prefix('+').unwrap_or(item)),
        };
        let path = canon(field);
        if !allowed.contains(&path.as_str()) {
            return Err(ApiError::param(
                "sort",
                format!(
                    "cannot sort by '{}'; sortable fields: {}",
                    shorten(field),
                    allowed.join(", ")
                ),
            ));
        }
        // A later key on a field already sorted on cannot change the order: left out.
        if out.iter().any(|s| s.path == path) {
            continue;
        }
        out.push(SortSpec { path, descending });
    }
    Ok(out)
}

/// `fields=a,b.c`: every path must be in `allowed`.
pub fn fields(
    v: &str,
    allowed: &[&str],
    canon: impl Fn(&str) -> String,
) -> Result<Vec<String>, ApiError> {
    let mut out: Vec<String> = Vec::new();
    for item in list("fields", v)? {
        let path = canon(item);
        if !allowed.contains(&path.as_str()) {
            return Err(ApiError::param(
                "fields",
                format!(
                    "unknown field '{}'; fields: {}",
                    shorten(item),
                    allowed.join(", ")
                ),
            ));
        }
        if !out.contains(&path) {
            out.push(path);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(q: &RawQuery) -> Vec<(&str, &str)> {
        q.pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    /// How JSON writes the parameters these tests send (the server asks
    /// `query_parameters::json_form`).
    fn form_of(name: &str) -> JsonForm {
        match name {
            "stations" | "states" => JsonForm::List,
            "limit" => JsonForm::Count,
            "near" => JsonForm::Numbers,
            _ => JsonForm::Text,
        }
    }

    /// A body's parameters are the pairs of the equivalent query string: a form as forms are
    /// written (`+` a space), JSON lists and numbers as their text; a JSON value of another
    /// kind than its parameter's is refused, as is a parameter in both query and body.
    #[test]
    fn bodies_become_query_pairs() {
        let form = Some("application/x-www-form-urlencoded; charset=utf-8");
        let q =
            RawQuery::from_body(form, b"q=a+b&from=2024-01-01T00:00:00%2B01:00", form_of).unwrap();
        assert_eq!(
            pairs(&q),
            [("q", "a b"), ("from", "2024-01-01T00:00:00+01:00")]
        );
        let json = Some("application/json");
        let body = br#"{"stations": ["a", "b"], "states": "NW,BY", "limit": 480.0, "near": [7, 50.5, 10]}"#;
        let q = RawQuery::from_body(json, body, form_of).unwrap();
        assert_eq!(
            pairs(&q),
            [
                ("stations", "a,b"),
                ("states", "NW,BY"),
                ("limit", "480"),
                ("near", "7,50.5,10")
            ]
        );
        for bad in [
            r#"{"limit": 1.5}"#,
            r#"{"limit": -1}"#,
            r#"{"limit": "5"}"#,
            r#"{"stations": []}"#,
            r#"{"stations": [1]}"#,
            r#"{"near": "7,50"}"#,
            r#"{"from": 5}"#,
            r#"{"q": null}"#,
        ] {
            assert!(
                RawQuery::from_body(json, bad.as_bytes(), form_of).is_err(),
                "{bad}"
            );
        }
        assert!(RawQuery::from_body(Some("text/plain"), b"q=x", form_of).is_err());
        assert!(RawQuery::from_body(None, b"q=x", form_of).is_err());
        let query = RawQuery::parse(Some("format=csv")).unwrap();
        let both = RawQuery::from_body(form, b"format=json", form_of).unwrap();
        assert!(query.clone().with_body(both).is_err());
        let other = RawQuery::from_body(form, b"limit=5", form_of).unwrap();
        assert_eq!(
            pairs(&query.with_body(other).unwrap()),
            [("format", "csv"), ("limit", "5")]
        );
    }

    #[test]
    fn raw_query_keeps_plus_and_rejects_repeats() {
        let q = RawQuery::parse(Some("from=2024-01-01T00:00:00+01:00&x=%2Fa")).unwrap();
        assert_eq!(q.get("from").unwrap(), Some("2024-01-01T00:00:00+01:00"));
        assert_eq!(q.get("x").unwrap(), Some("/a"));
        assert!(RawQuery::parse(Some("limit=1&limit=2")).is_err());
        assert!(RawQuery::parse(Some("a=%FF")).is_err());
        assert!(
            RawQuery::parse(Some("limit="))
                .unwrap()
                .get("limit")
                .is_err()
        );
    }

    #[test]
    fn numbers_times_and_places() {
        assert_eq!(uint("limit", "10").unwrap(), 10);
        assert_eq!(
            uint("limit", "9223372036854775807").unwrap(),
            i64::MAX as u64
        );
        for bad in [
            "-1",
            "+1",
            "1.5",
            "1e3",
            "abc",
            "9223372036854775808",
            "99999999999999999999",
        ] {
            assert!(uint("limit", bad).is_err(), "{bad}");
        }
        // The forms are `instant`'s (tested there); a space stands for an unencoded `+`.
        assert_eq!(
            timestamp("from", "2024-03-01T00:00:00 01:00").unwrap(),
            timestamp("from", "2024-02-29T23:00:00Z").unwrap()
        );
        let refused = timestamp("from", "2024-01-01T00:00:00").unwrap_err();
        assert!(
            format!("{refused:?}").contains("2024-03-01T00:00+0100"),
            "{refused:?}"
        );
        assert!(bbox("5,47,15,55").is_ok());
        assert!(bbox("170,-10,-170,10").is_ok());
        assert_eq!(bbox("5,55,15,47").unwrap().min_lat, 47.0);
        for bad in [
            "5,47,15",
            "5,47,15,95",
            "a,b,c,d",
            "5,47,15,55,1",
            "NaN,1,2,3",
        ] {
            assert!(bbox(bad).is_err(), "{bad}");
        }
        assert!(near("7,50,10").is_ok());
        assert_eq!(near("7,50,1e9").unwrap().radius_km, WHOLE_EARTH_KM);
        assert_eq!(near("7,50").unwrap().radius_km, WHOLE_EARTH_KM);
        for bad in [
            "7",
            "7,50,0",
            "7,50,-1",
            "200,50,10",
            "7,50,inf",
            "7,50,1,2",
        ] {
            assert!(near(bad).is_err(), "{bad}");
        }
        assert_eq!(states("by,DE-nw").unwrap(), vec!["DE-BY", "DE-NW"]);
        assert_eq!(
            states("+by++,\u{b} DE-nw\t").unwrap(),
            vec!["DE-BY", "DE-NW"]
        );
        assert!(states("BY,,NW").is_err());
        assert!(states("Bayern").is_err());
    }
}
