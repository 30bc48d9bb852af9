//! HTML pages for people with a browser ([`pages`], the API reference
//! [`reference`](mod@reference)) and the frame of every page (a request that prefers
//! `text/html`, or `format=html`): the document head, a trail of links up to the landing page, the links to the same resource in
//! every machine format, and a small style sheet. Built with `maud`, which escapes every text
//! it is given.
//!
//! Pages work without JavaScript; only the station map needs it (Leaflet, served by us from
//! `/v1/assets/`). Colours are chosen to print in grey: text is black, the chart line dark
//! blue, levels mid grey and dashed, flagged values crossed.

pub mod pages;
pub mod reference;

use maud::{DOCTYPE, Markup, PreEscaped, html};

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:72rem;padding:0 1rem 3rem;color:#111;line-height:1.45}
nav.trail{margin:1rem 0;font-size:.95rem}nav.trail a{color:#123f7a}
h1{font-size:1.6rem;margin:.5rem 0 1rem}h2{font-size:1.2rem;margin:2rem 0 .6rem}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums;margin:.5rem 0}
th,td{border:1px solid #bbb;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#eee}td.num{text-align:right}
a{color:#123f7a}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}
.formats{font-size:.9rem;margin:.5rem 0}.formats a{margin-right:.6rem}
figure{margin:1rem 0}figure img{max-width:100%;height:auto;border:1px solid #ccc}
figcaption{font-size:.9rem;color:#333}
#map{height:26rem;border:1px solid #bbb;margin:.5rem 0;background:#f4f6f8}
form.inline{display:inline-flex;gap:.5rem;align-items:center;margin:.3rem 0}
.pager a{margin-right:1rem}
";

/// A link: its text and where it goes.
pub type Link = (String, String);

/// What a page is made of besides its content.
pub struct Frame<'a> {
    /// The document's title and the page's heading.
    pub title: &'a str,
    /// The service's name, at the start of the trail and in the document title.
    pub service: &'a str,
    /// Links from the landing page down to this page's parent.
    pub trail: Vec<Link>,
    /// The same resource in machine formats: (format name, URL).
    pub formats: Vec<Link>,
    /// Style sheets and scripts this page needs besides the frame's own style.
    pub head: Markup,
}

/// The page: `frame` around `content`.
pub fn page(frame: Frame<'_>, content: Markup) -> String {
    let doc = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (frame.title) " – " (frame.service) }
                style { (PreEscaped(STYLE)) }
                (frame.head)
            }
            body {
                @if !frame.trail.is_empty() {
                    nav.trail aria-label="Trail" {
                        @for (i, (text, href)) in frame.trail.iter().enumerate() {
                            @if i > 0 { " › " }
                            a href=(href) { (text) }
                        }
                    }
                }
                main {
                    h1 { (frame.title) }
                    @if !frame.formats.is_empty() {
                        p.formats {
                            "This page as data: "
                            @for (name, href) in &frame.formats {
                                a href=(href) { (name) }
                            }
                        }
                    }
                    (content)
                }
            }
        }
    };
    doc.into_string()
}

/// Links to pages before and after this one, as the API pages: `first`, `prev`, `next`,
/// `last` of the paging links given.
pub fn pager(links: &[(&str, String)]) -> Markup {
    let label = |rel: &str| match rel {
        "first" => Some("« first"),
        "prev" => Some("‹ previous"),
        "next" => Some("next ›"),
        "last" => Some("last »"),
        _ => None,
    };
    html! {
        @if links.iter().any(|(rel, _)| label(rel).is_some()) {
            nav.pager aria-label="Pages" {
                @for (rel, href) in links {
                    @if let Some(text) = label(rel) {
                        a href=(href) rel=(rel) { (text) }
                    }
                }
            }
        }
    }
}
