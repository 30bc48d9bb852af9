//! HTML (`text/html`): pages for people with a browser, for the landing page, stations, a
//! series' values and its statistics. The pages are laid out by `render::html`; this is their
//! row of the formats table.

use super::{Answer::*, Encoder, Format, Schema, Spec};

pub const HTML: Format = Format::of(&Spec {
    short: "html",
    media_type: "text/html",
    aliases: &[],
    text: true,
    compressible: true,
    attachment: None,
    offered: &[Landing, Stations, Values, Statistics],
    encoder: Encoder::Page,
    schema: Schema::Text,
});
