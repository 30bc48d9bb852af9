//! SVG (`image/svg+xml`): charts of values and statistics as vector images, with a title and
//! a description for screen readers; what the HTML pages show.

use super::{Answer::*, Encoder, Format, Schema, Spec};
use crate::render::chart::answer::ChartFormat;
use crate::render::chart::curve::{self, Curve, CurveSpec};
use crate::render::chart::{self, ChartError, ChartSpec, Line};

pub const SVG: Format = Format::of(&Spec {
    short: "svg",
    media_type: "image/svg+xml",
    aliases: &[],
    text: true,
    compressible: true,
    attachment: None,
    offered: &[Values, ManyValues, Statistics, ManyStatistics],
    encoder: Encoder::Chart(&Svg),
    schema: Schema::Text,
});

pub struct Svg;

impl ChartFormat for Svg {
    fn lines(&self, spec: &ChartSpec, lines: &[Line]) -> Result<Vec<u8>, ChartError> {
        chart::svg(spec, lines).map(String::into_bytes)
    }

    fn curves(&self, spec: &CurveSpec, curves: &[Curve]) -> Result<Vec<u8>, ChartError> {
        curve::svg(spec, curves).map(String::into_bytes)
    }
}
