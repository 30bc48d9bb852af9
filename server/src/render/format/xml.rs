//! XML (`application/xml`): `<response>` with `<meta>`, `<links>` and `<data>`, an element per
//! row (`<measurement>`) or resource (`<station>`, `<parameter>`, …), an element per field;
//! lists of a resource are elements of their item's name (`<availability><period>`). Missing
//! cells are empty elements.

use super::{Answer::*, Encoder, Format, Schema, Spec};
use crate::render::encode::{Cells, Head, ListShape, Rows, TextFormat, number};
use serde_json::Value;

pub const XML: Format = Format::of(&Spec {
    short: "xml",
    media_type: "application/xml",
    aliases: &["text/xml"],
    text: true,
    compressible: true,
    attachment: None,
    offered: &[
        Stations,
        Catalog,
        Values,
        Statistics,
        ManyStatistics,
        PostedStatistics,
    ],
    encoder: Encoder::Text(&Xml),
    schema: Schema::Text,
});

pub struct Xml;

/// The element of a row of values.
const ROW: &str = "measurement";

impl TextFormat for Xml {
    fn document(&self, head: &Head<'_>) -> (Vec<u8>, Vec<u8>) {
        let mut out = b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><response>".to_vec();
        element("meta", &head.envelope.meta(), &mut out);
        if let Some(links) = head.envelope.links() {
            element("links", &links, &mut out);
        }
        out.extend_from_slice(b"<data>");
        (out, b"</data></response>".to_vec())
    }

    fn escape(&self, text: &str, out: &mut Vec<u8>) {
        xml_text(text, out);
    }

    fn rows(&self) -> Option<&dyn Rows> {
        Some(self)
    }

    fn item(&self, item: &Value, list: &ListShape<'_>, _first: bool, out: &mut Vec<u8>) {
        element(list.item_name, item, out);
    }
}

impl Rows for Xml {
    fn cell_before(&self, k: usize, column: &str, out: &mut Vec<u8>) {
        if k == 0 {
            out.extend_from_slice(format!("<{ROW}>").as_bytes());
        }
        out.extend_from_slice(format!("<{column}>").as_bytes());
    }

    fn cell_after(&self, column: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(format!("</{column}>").as_bytes());
    }

    fn row_end(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(format!("</{ROW}>").as_bytes());
    }

    fn cells(&self) -> Cells {
        Cells {
            missing: b"",
            missing_text: b"",
            quoted_times: false,
        }
    }
}

/// Escapes text for XML character data and attributes.
pub fn xml_text(s: &str, out: &mut Vec<u8>) {
    for c in s.chars() {
        match c {
            '&' => out.extend_from_slice(b"&amp;"),
            '<' => out.extend_from_slice(b"&lt;"),
            '>' => out.extend_from_slice(b"&gt;"),
            '"' => out.extend_from_slice(b"&quot;"),
            '\'' => out.extend_from_slice(b"&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => {}
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

/// `v` as the element `name`: an object's members as elements, a list's items as elements
/// of the list's item name.
fn element(name: &str, v: &Value, out: &mut Vec<u8>) {
    out.push(b'<');
    out.extend_from_slice(name.as_bytes());
    out.push(b'>');
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                element(k, v, out);
            }
        }
        Value::Array(items) => {
            let item_name = match name {
                "availability" => "period",
                "parameters" => "parameter",
                "characteristics" => "characteristic",
                "links" => "link",
                _ => "item",
            };
            for v in items {
                element(item_name, v, out);
            }
        }
        Value::String(s) => xml_text(s, out),
        Value::Number(n) => number(n.as_f64().unwrap_or(0.0), out),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Null => {}
    }
    out.extend_from_slice(b"</");
    out.extend_from_slice(name.as_bytes());
    out.push(b'>');
}
