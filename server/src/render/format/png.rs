//! PNG (`image/png`): charts of values and statistics as 8-bit RGB images, for documents and
//! clients that do not show SVG. Compressed already, so never compressed again.

use super::{Answer::*, Encoder, Format, Schema, Spec};
use crate::render::chart::answer::ChartFormat;
use crate::render::chart::curve::{self, Curve, CurveSpec};
use crate::render::chart::{self, ChartError, ChartSpec, Line};

pub const PNG: Format = Format::of(&Spec {
    short: "png",
    media_type: "image/png",
    aliases: &[],
    text: false,
    compressible: false,
    attachment: None,
    offered: &[Values, ManyValues, Statistics, ManyStatistics],
    encoder: Encoder::Chart(&Png),
    schema: Schema::Binary,
});

pub struct Png;

impl ChartFormat for Png {
    fn lines(&self, spec: &ChartSpec, lines: &[Line]) -> Result<Vec<u8>, ChartError> {
        chart::png(spec, lines)
    }

    fn curves(&self, spec: &CurveSpec, curves: &[Curve]) -> Result<Vec<u8>, ChartError> {
        curve::png(spec, curves)
    }
}
