//! Charts of a series' values (`format=svg`, `format=png`): the window's values reduced to what
//! the chart's width can show ([`downsample`]), drawn with `plotters`' SVG or bitmap backend.
//! Text is laid out (and, in a PNG, drawn) with DejaVu Sans, compiled in
//! (`server/assets/fonts/`, with its licence): a server has no fonts to rely on.
//!
//! What a reader of a water level needs from a chart: the axes with the quantity's unit and
//! the answer's local time (the output offset), the line broken where values are missing,
//! values whose quality is not `good` shown without hiding the line (a strip along the plot's
//! foot under their stretches, crosses on the line only where they are few: recent values are
//! mostly `unchecked`, and a cross on each buried the line), the legend in the corner the
//! values leave free, precipitation as bars, and the station's characteristic values for the parameter (mean high water, a
//! flood mark) as dashed levels where they are near the values. The SVG carries a `<title>` and `<desc>` for screen readers.

pub mod answer;
pub mod curve;
pub mod downsample;
mod ticks;

use downsample::Bucket;
use hydro_engine::Zone;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::sync::OnceLock;

/// The data lines' colours, one a series, of lightnesses far enough apart to tell in grey
/// (dark blue, orange, black, teal, purple, olive); the first is the only one of a
/// single-series chart, whose test finds its polylines by it.
pub const LINE_COLOURS: [RGBColor; 6] = [
    RGBColor(0, 60, 140),
    RGBColor(230, 120, 0),
    RGBColor(0, 0, 0),
    RGBColor(0, 150, 140),
    RGBColor(120, 40, 140),
    RGBColor(150, 150, 40),
];

/// Series one chart draws at most: beyond a few, lines cannot be told apart.
pub const MOST_LINES: usize = 12;

/// How series `i` is drawn: its colour, and whether its line is dashed (and its bars hollow):
/// the seventh series on repeat the six colours.
pub fn line_look(i: usize) -> (RGBColor, bool) {
    (
        LINE_COLOURS[i % LINE_COLOURS.len()],
        i >= LINE_COLOURS.len(),
    )
}

/// A legend's key of a series drawn as `dashed` lines or `bars`, `(x, y)` its left middle.
fn legend_key<DB: DrawingBackend>(
    (x, y): (i32, i32),
    colour: RGBColor,
    dashed: bool,
    bars: bool,
) -> DynElement<'static, DB, (i32, i32)> {
    match (bars, dashed) {
        (true, false) => Rectangle::new([(x, y - 4), (x + 16, y + 4)], colour.filled()).into_dyn(),
        (true, true) => {
            Rectangle::new([(x, y - 4), (x + 16, y + 4)], colour.stroke_width(1)).into_dyn()
        }
        (false, false) => {
            PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2)).into_dyn()
        }
        (false, true) => {
            DashedPathElement::new(vec![(x, y), (x + 16, y)], 4, 2, colour.stroke_width(2))
                .into_dyn()
        }
    }
}

/// One series of a chart: its buckets and, when a chart has several, its legend text.
pub struct Line {
    pub label: String,
    pub buckets: Vec<Bucket>,
    /// Drawn as bars from zero (precipitation: amounts per interval, not a level in time).
    pub bars: bool,
}
const LEVEL_COLOUR: RGBColor = RGBColor(110, 110, 110);

/// Sizes a chart may have (pixels), and the one it has when none is asked for.
pub const WIDTHS: std::ops::RangeInclusive<u32> = 200..=4000;
pub const HEIGHTS: std::ops::RangeInclusive<u32> = 150..=3000;
pub const DEFAULT_SIZE: (u32, u32) = (900, 400);

/// Columns of the plot (the chart's width less the axis area): what the values are reduced to.
pub fn plot_columns(width: u32) -> usize {
    width.saturating_sub(Y_AXIS + 2 * MARGIN).max(10) as usize
}

const MARGIN: u32 = 12;
const Y_AXIS: u32 = 70;
const X_AXIS: u32 = 50;
/// Pixels of plot a time-axis tick needs: room for a `2024-03-01` label and space around it.
const X_TICK_PIXELS: usize = 100;
/// Most time-axis ticks, however wide the chart: more labels than this are not read.
const MOST_X_TICKS: usize = 10;

/// A band drawn under the lines: a range per time (e.g. the 10th to 90th percentile of the
/// normals of each day), a polygon from its lows forward and its highs back.
pub struct Band {
    pub label: String,
    /// (time, low, high), in time order.
    pub points: Vec<(i64, f64, f64)>,
}

const BAND_COLOUR: RGBColor = RGBColor(200, 215, 235);

/// Stretches of values whose quality is not `good`: a strip along the plot's foot, so that
/// a line of recent values (mostly `unchecked`) stays a line. Dark enough to print in grey.
const FLAG_COLOUR: RGBColor = RGBColor(90, 90, 90);

/// Flagged buckets a chart marks with a cross as well, at most: a few suspect values are found
/// by their marks, a stretch of them by the strip.
const MOST_MARKS: usize = 24;

/// Pixels of the strip's height.
const FLAG_STRIP: f64 = 5.0;

/// Pixels a level's label needs between its line and the next label's: its text's height.
const LEVEL_LABEL_PIXELS: f64 = 13.0;

/// Pixels from a time-axis tick to the plot's right edge its label needs (half its width):
/// a tick closer than this loses its label rather than have it cut.
const X_LABEL_HALF: i64 = 36;

/// A level drawn across the chart: a characteristic value of the parameter.
pub struct Level {
    pub label: String,
    pub value: f64,
}

/// What a chart shows besides the values.
pub struct ChartSpec {
    /// Above the plot, and the SVG's `<title>`: the station and the parameter.
    pub title: String,
    /// The y axis: the quantity and its unit.
    pub quantity: String,
    pub size: (u32, u32),
    /// The zone of the time axis and its labels: the request's `timeZone`, else the output
    /// zone.
    pub zone: Zone,
    /// The window's bounds where the request gave them (UTC microseconds); else the values'.
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub levels: Vec<Level>,
    pub band: Option<Band>,
}

#[derive(Debug, thiserror::Error)]
#[error("chart: {0}")]
pub struct ChartError(String);

fn failed(e: impl std::fmt::Display) -> ChartError {
    ChartError(e.to_string())
}

const FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// The chart font registered as plotters' `sans-serif`, once.
fn fonts() -> Result<(), ChartError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(ChartError("the chart font cannot be read".into()))
    }
}

/// The chart as an SVG document.
pub fn svg(spec: &ChartSpec, lines: &[Line]) -> Result<String, ChartError> {
    fonts()?;
    let mut out = String::new();
    draw(spec, lines, SVGBackend::with_string(&mut out, spec.size))?;
    Ok(accessible(out, spec, lines))
}

/// The chart as a PNG image (8-bit RGB).
pub fn png(spec: &ChartSpec, lines: &[Line]) -> Result<Vec<u8>, ChartError> {
    fonts()?;
    encoded_png(spec.size, |backend| draw(spec, lines, backend))
}

/// An image of `size` painted by `paint` on a bitmap, as a PNG (8-bit RGB).
fn encoded_png(
    (width, height): (u32, u32),
    paint: impl FnOnce(BitMapBackend<'_>) -> Result<(), ChartError>,
) -> Result<Vec<u8>, ChartError> {
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    paint(BitMapBackend::with_buffer(&mut pixels, (width, height)))?;
    let mut out = Vec::with_capacity(pixels.len() / 8);
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(&pixels).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(out)
}

/// Every bucket of every line.
fn all(lines: &[Line]) -> impl Iterator<Item = &Bucket> {
    lines.iter().flat_map(|l| l.buckets.iter())
}

fn draw<DB: DrawingBackend>(
    spec: &ChartSpec,
    lines: &[Line],
    backend: DB,
) -> Result<(), ChartError> {
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(failed)?;
    let (x0, x1) = time_range(spec, lines);
    let (y0, y1) = value_range(spec, lines);
    let zone = spec.zone;
    let most_ticks = (plot_columns(spec.size.0) / X_TICK_PIXELS).clamp(2, MOST_X_TICKS);
    let (mut ticks, format) = ticks::calendar_ticks(x0, x1, zone, most_ticks);
    // A legend of more than a few series goes beside the plot, where it covers no line.
    let beside = legend_beside(lines, spec.size.0);
    let plot_width = (plot_columns(spec.size.0) as i64 - i64::from(beside)).max(10);
    let plot_height = spec.size.1.saturating_sub(X_AXIS + 2 * MARGIN + 30).max(10) as f64;
    let pixel = |t: i64| (t - x0) as f64 / (x1 - x0).max(1) as f64 * plot_width as f64;
    ticks.retain(|&t| pixel(t) <= (plot_width - X_LABEL_HALF) as f64);
    let mut chart = ChartBuilder::on(&root)
        .margin(MARGIN)
        .margin_right(MARGIN + beside)
        .x_label_area_size(X_AXIS)
        .y_label_area_size(Y_AXIS)
        .caption(&spec.title, ("sans-serif", 16))
        .build_cartesian_2d((x0..x1).with_key_points(ticks), y0..y1)
        .map_err(failed)?;
    let span = x1 - x0;
    let label = move |t: &i64| time_label(*t, zone, format);
    chart
        .configure_mesh()
        .y_labels(6)
        .x_label_formatter(&label)
        .x_desc(format!("time ({})", zone_name(zone)))
        .y_desc(&spec.quantity)
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(failed)?;
    if let Some(band) = spec.band.as_ref().filter(|b| !b.points.is_empty()) {
        let outline: Vec<(i64, f64)> = band
            .points
            .iter()
            .map(|p| (p.0, p.1))
            .chain(band.points.iter().rev().map(|p| (p.0, p.2)))
            .collect();
        chart
            .draw_series(std::iter::once(Polygon::new(outline, BAND_COLOUR.filled())))
            .map_err(failed)?
            .label(band.label.clone())
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], BAND_COLOUR.filled()));
    }
    // A level's label where it does not cover the one below: at the left, else at the right,
    // else left out (its dashed line stays; the SVG's description lists none of them anyway).
    let label_gap = (y1 - y0) * LEVEL_LABEL_PIXELS / plot_height;
    let mut placed: [Option<f64>; 2] = [None, None];
    let mut levels: Vec<&Level> = visible_levels(spec, (y0, y1)).collect();
    levels.sort_by(|a, b| a.value.total_cmp(&b.value));
    for level in levels {
        let side = (0..2).find(|&k| placed[k].is_none_or(|v| (level.value - v).abs() >= label_gap));
        if let Some(k) = side {
            placed[k] = Some(level.value);
        }
        let style = LEVEL_COLOUR.stroke_width(1);
        chart
            .draw_series(std::iter::once(DashedPathElement::new(
                vec![(x0, level.value), (x1, level.value)],
                6,
                4,
                style,
            )))
            .map_err(failed)?;
        let (anchor, at) = match side {
            Some(0) => (HPos::Left, x0 + span / 100),
            Some(_) => (HPos::Right, x1 - span / 100),
            None => continue,
        };
        let font = ("sans-serif", 11)
            .into_font()
            .color(&LEVEL_COLOUR)
            .pos(Pos::new(anchor, VPos::Bottom));
        chart
            .draw_series(std::iter::once(Text::new(
                level.label.clone(),
                (at, level.value),
                font,
            )))
            .map_err(failed)?;
    }
    for (i, line) in lines.iter().enumerate() {
        let (colour, dashed) = line_look(i);
        let keyed = lines.len() > 1 || has_band(spec);
        if line.bars {
            // A bar a bucket, from zero to its largest amount.
            let base = 0f64.clamp(y0, y1);
            let style = if dashed {
                colour.stroke_width(1)
            } else {
                colour.filled()
            };
            let bars = line.buckets.iter().map(|b| {
                Rectangle::new([(b.first, base), (b.last.max(b.first + 1), b.max.v)], style)
            });
            let drawn = chart.draw_series(bars).map_err(failed)?;
            if keyed {
                drawn
                    .label(line.label.clone())
                    .legend(move |at| legend_key(at, colour, dashed, true));
            }
            continue;
        }
        for (r, run) in runs(&line.buckets).enumerate() {
            let points: Vec<(i64, f64)> = run
                .iter()
                .flat_map(Bucket::points)
                .map(|p| (p.t, p.v))
                .collect();
            let style = colour.stroke_width(1);
            let drawn = if dashed {
                chart.draw_series(std::iter::once(DashedPathElement::new(points, 6, 3, style)))
            } else {
                chart.draw_series(std::iter::once(PathElement::new(points, style)))
            }
            .map_err(failed)?;
            if keyed && r == 0 {
                drawn
                    .label(line.label.clone())
                    .legend(move |at| legend_key(at, colour, dashed, false));
            }
        }
    }
    // Quality: the stretches of flagged buckets as a strip at the plot's foot; a few flagged
    // buckets marked on the line too.
    let flagged: Vec<&Bucket> = all(lines).filter(|b| b.flagged).collect();
    if !flagged.is_empty() {
        let top = y0 + (y1 - y0) * FLAG_STRIP / plot_height;
        // A pixel more on each side, so that neighbouring buckets make one stretch.
        let pixel = (x1 - x0) / plot_width.max(1);
        let strip = flagged.iter().map(|b| {
            let (start, end) = (b.first - pixel, b.last.max(b.first) + pixel);
            Rectangle::new(
                [(start.max(x0), y0), (end.min(x1), top)],
                FLAG_COLOUR.filled(),
            )
        });
        chart
            .draw_series(strip)
            .map_err(failed)?
            .label("quality not good")
            .legend(|(x, y)| Rectangle::new([(x, y - 2), (x + 16, y + 2)], FLAG_COLOUR.filled()));
        if flagged.len() <= MOST_MARKS {
            let marks = flagged
                .iter()
                .flat_map(|b| b.points())
                .map(|p| Cross::new((p.t, p.v), 4, BLACK.stroke_width(1)));
            chart.draw_series(marks).map_err(failed)?;
        }
    }
    if beside > 0 {
        let left = spec.size.0.saturating_sub(MARGIN + beside) as i32 + 10;
        legend_beside_plot(&root, lines, !flagged.is_empty(), (left, LEGEND_TOP))?;
    } else if lines.len() > 1 || has_band(spec) || !flagged.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 11))
            .position(emptiest_corner(lines, (x0, x1), (y0, y1)))
            .draw()
            .map_err(failed)?;
    }
    if all(lines).next().is_none() {
        let font = ("sans-serif", 14)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Center));
        chart
            .draw_series(std::iter::once(Text::new(
                "no values in this window",
                (x0 + span / 2, (y0 + y1) / 2.0),
                font,
            )))
            .map_err(failed)?;
    }
    root.present().map_err(failed)?;
    Ok(())
}

/// Series a legend inside the plot takes at most; beyond, it goes beside the plot.
const LEGEND_INSIDE: usize = 4;

/// Pixels the chart keeps right of the plot for a legend of many series (none for a few, or
/// when the chart is too narrow to give up a third of its width): the longest label's width
/// at ~6.5 pixels a character, its key and padding.
fn legend_beside(lines: &[Line], width: u32) -> u32 {
    if lines.len() <= LEGEND_INSIDE {
        return 0;
    }
    let longest = lines
        .iter()
        .map(|l| l.label.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let wanted = longest * 13 / 2 + 50;
    if wanted * 3 > width { 0 } else { wanted }
}

/// Pixels from the chart's top to a legend beside the plot: below the caption.
const LEGEND_TOP: i32 = 44;

/// The legend of many series beside the plot, from `(x, y)` (pixels of the chart) down: a key
/// in each line's colour (a bar for bars) and its label, then the quality strip's.
fn legend_beside_plot<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    lines: &[Line],
    flagged: bool,
    (x, y): (i32, i32),
) -> Result<(), ChartError> {
    let font = ("sans-serif", 11).into_font().color(&BLACK);
    let row = |i: usize| y + 15 * i as i32;
    for (i, line) in lines.iter().enumerate() {
        let (colour, dashed) = line_look(i);
        let key: DynElement<'static, DB, (i32, i32)> =
            legend_key((x, row(i)), colour, dashed, line.bars);
        root.draw(&key).map_err(failed)?;
        let text = font.clone().pos(Pos::new(HPos::Left, VPos::Center));
        root.draw(&Text::new(line.label.clone(), (x + 22, row(i)), text))
            .map_err(failed)?;
    }
    if flagged {
        let at = row(lines.len());
        root.draw(&Rectangle::new(
            [(x, at - 2), (x + 16, at + 2)],
            FLAG_COLOUR.filled(),
        ))
        .map_err(failed)?;
        let text = font.pos(Pos::new(HPos::Left, VPos::Center));
        root.draw(&Text::new("quality not good", (x + 22, at), text))
            .map_err(failed)?;
    }
    Ok(())
}

/// The corner of the plot where the legend covers the fewest values: a quarter of the plot's
/// width and a third of its height there, counted over every bucket's points.
fn emptiest_corner(
    lines: &[Line],
    (x0, x1): (i64, i64),
    (y0, y1): (f64, f64),
) -> SeriesLabelPosition {
    let (w, h) = ((x1 - x0) as f64, y1 - y0);
    let corners = [
        (SeriesLabelPosition::UpperLeft, false, true),
        (SeriesLabelPosition::UpperRight, true, true),
        (SeriesLabelPosition::LowerLeft, false, false),
        (SeriesLabelPosition::LowerRight, true, false),
    ];
    let covered = |right: bool, upper: bool| {
        all(lines)
            .flat_map(Bucket::points)
            .filter(|p| {
                let x = (p.t - x0) as f64 / w;
                let y = (p.v - y0) / h;
                (if right { x >= 0.75 } else { x <= 0.25 })
                    && (if upper {
                        y >= 2.0 / 3.0
                    } else {
                        y <= 1.0 / 3.0
                    })
            })
            .count()
    };
    corners
        .into_iter()
        .min_by_key(|&(_, right, upper)| covered(right, upper))
        .map_or(SeriesLabelPosition::UpperLeft, |c| c.0)
}

/// Whether the chart draws a band (one with points).
fn has_band(spec: &ChartSpec) -> bool {
    spec.band.as_ref().is_some_and(|b| !b.points.is_empty())
}

/// The buckets in runs the line joins: a run ends before a bucket the line breaks at.
fn runs(buckets: &[Bucket]) -> impl Iterator<Item = &[Bucket]> {
    buckets.chunk_by(|_, next| !next.break_before)
}

fn time_range(spec: &ChartSpec, lines: &[Line]) -> (i64, i64) {
    let first = all(lines).map(|b| b.first).min();
    let last = all(lines).map(|b| b.last).max();
    let now = chrono::Utc::now().timestamp_micros();
    let x0 = spec.from.or(first).unwrap_or(now - 86_400_000_000);
    let x1 = spec.to.or(last).unwrap_or(now).max(x0);
    if x1 - x0 < 60_000_000 {
        // One value, or none: an hour around it.
        return (x0 - 1_800_000_000, x1 + 1_800_000_000);
    }
    (x0, x1)
}

/// The values' range, widened by the levels near it (within one span of it): a level far from
/// the window's values (a flood mark over a week of low water) would flatten the line to
/// nothing, so it is left out of the chart ([`visible_levels`]).
fn value_range(spec: &ChartSpec, lines: &[Line]) -> (f64, f64) {
    let band = spec
        .band
        .iter()
        .flat_map(|b| &b.points)
        .flat_map(|p| [p.1, p.2]);
    let bars_from_zero = lines.iter().any(|l| l.bars).then_some(0.0);
    let (lo, hi) = all(lines)
        .flat_map(|b| [b.min.v, b.max.v])
        .chain(band)
        .chain(bars_from_zero)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    let (lo, hi) = if lo.is_finite() && hi.is_finite() {
        let reach = (hi - lo).max(hi.abs() * 0.05).max(1e-6);
        spec.levels
            .iter()
            .map(|l| l.value)
            .filter(|v| (lo - reach..=hi + reach).contains(v))
            .fold((lo, hi), |(lo, hi), v| (lo.min(v), hi.max(v)))
    } else {
        match spec.levels.iter().map(|l| l.value).reduce(f64::min) {
            Some(v) => (v, v),
            None => return (0.0, 1.0),
        }
    };
    let pad = ((hi - lo) * 0.05).max(hi.abs() * 1e-3).max(1e-6);
    (lo - pad, hi + pad)
}

/// The levels within the chart's value range.
fn visible_levels(spec: &ChartSpec, (y0, y1): (f64, f64)) -> impl Iterator<Item = &Level> {
    spec.levels
        .iter()
        .filter(move |l| (y0..=y1).contains(&l.value))
}

/// A tick's label on the zone's wall clock.
fn time_label(t: i64, zone: Zone, format: &str) -> String {
    zone.local(t).format(format).to_string()
}

/// How a chart names its zone: `UTC+01:00`, or an IANA name.
fn zone_name(zone: Zone) -> String {
    match zone {
        Zone::Fixed(_) => format!("UTC{zone}"),
        Zone::Named(_) => zone.to_string(),
    }
}

/// The SVG with a role, a title and a description for screen readers (a chart in an `<img>`
/// has its page's alt text; one opened by itself has these).
fn accessible(svg: String, spec: &ChartSpec, lines: &[Line]) -> String {
    let Some(end) = svg.find('>') else {
        return svg;
    };
    let values =
        all(lines)
            .flat_map(|b| [b.min.v, b.max.v])
            .fold(None, |acc: Option<(f64, f64)>, v| match acc {
                None => Some((v, v)),
                Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
            });
    let series = match lines {
        [_] => String::new(),
        _ => {
            let labels: Vec<&str> = lines.iter().map(|l| l.label.as_str()).collect();
            format!(" Series: {}.", labels.join("; "))
        }
    };
    let desc = match values {
        None => format!("{}: no values in this window.{series}", spec.quantity),
        Some((lo, hi)) => format!(
            "{} from {lo} to {hi} over the window; time in {}.{series}",
            spec.quantity,
            zone_name(spec.zone)
        ),
    };
    titled(&svg[..end], &svg[end + 1..], &spec.title, &desc)
}

/// An SVG (its opening tag without `>`, and the rest) with a role, `title` and `desc`.
fn titled(open: &str, rest: &str, title: &str, desc: &str) -> String {
    let mut out = String::with_capacity(open.len() + rest.len() + 256);
    out.push_str(open);
    out.push_str(r#" role="img" aria-labelledby="chart-title chart-desc">"#);
    out.push_str(&format!(
        r#"<title id="chart-title">{}</title><desc id="chart-desc">{}</desc>"#,
        escape(title),
        escape(desc)
    ));
    out.push_str(rest);
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::downsample::Downsampler;
    use super::*;
    use chrono::FixedOffset;

    /// The SVG draws every value of a short window as a point of the data line, broken where
    /// a value is missing; characteristic levels and flagged values are drawn; text is escaped.
    #[test]
    fn short_windows_draw_every_value() {
        let mut d = Downsampler::new(plot_columns(900), 3 * 900_000_000);
        for i in 0..96i64 {
            let v = (i != 40).then_some(100.0 + (i as f64).sin() * 10.0);
            d.push(i * 900_000_000, v, i == 7);
        }
        let lines = [Line {
            label: "Köln".into(),
            buckets: d.finish(),
            bars: false,
        }];
        let spec = ChartSpec {
            title: "Köln <Rhein> – water level".into(),
            quantity: "water level (cm)".into(),
            size: DEFAULT_SIZE,
            zone: Zone::Fixed(FixedOffset::east_opt(3600).unwrap()),
            from: None,
            to: None,
            levels: vec![Level {
                label: "MHW 125 cm".into(),
                value: 125.0,
            }],
            band: None,
        };
        let svg = svg(&spec, &lines).unwrap();
        assert!(svg.contains("<title id=\"chart-title\">Köln &lt;Rhein&gt; – water level</title>"));
        let stroke = format!(
            "stroke=\"#{:02X}{:02X}{:02X}\"",
            LINE_COLOURS[0].0, LINE_COLOURS[0].1, LINE_COLOURS[0].2
        );
        let drawn: Vec<usize> = svg
            .split("<polyline")
            .skip(1)
            .filter(|p| p.split("/>").next().unwrap_or("").contains(&stroke))
            .map(|p| {
                let points = p.split("points=\"").nth(1).unwrap();
                points.split('"').next().unwrap().split_whitespace().count()
            })
            .collect();
        assert_eq!(drawn, [40, 55], "{svg:.400}");
        assert!(svg.contains("MHW 125 cm"));
        assert!(svg.contains("UTC+01:00"));

        // The same chart as a PNG of the size asked for, with ink in it.
        let png = png(&spec, &lines).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let decoder = ::png::Decoder::new(std::io::Cursor::new(png));
        let mut reader = decoder.read_info().unwrap();
        assert_eq!((reader.info().width, reader.info().height), DEFAULT_SIZE);
        let mut pixels = vec![0; reader.output_buffer_size()];
        reader.next_frame(&mut pixels).unwrap();
        let dark = pixels
            .chunks(3)
            .filter(|p| p.iter().all(|c| *c < 100))
            .count();
        assert!(dark > 1_000, "{dark} dark pixels");
    }

    fn spec() -> ChartSpec {
        ChartSpec {
            title: "Köln – water level".into(),
            quantity: "water level (cm)".into(),
            size: DEFAULT_SIZE,
            zone: Zone::UTC,
            from: None,
            to: None,
            levels: Vec::new(),
            band: None,
        }
    }

    /// A day of 15-minute values, those at `flagged` positions not `good`.
    fn day(flagged: impl Fn(i64) -> bool, bars: bool) -> Line {
        let mut d = Downsampler::new(plot_columns(900), 3 * 900_000_000);
        for i in 0..96i64 {
            d.push(i * 900_000_000, Some(100.0 + (i % 7) as f64), flagged(i));
        }
        Line {
            label: "Köln".into(),
            buckets: d.finish(),
            bars,
        }
    }

    /// Series beyond the six colours repeat them dashed: a seventh line in the first colour is
    /// many short strokes (its legend key too), where the first line is one stroke a run.
    #[test]
    fn series_beyond_six_colours_are_dashed() {
        assert_eq!(line_look(0), (LINE_COLOURS[0], false));
        assert_eq!(line_look(6), (LINE_COLOURS[0], true));
        let lines = |n: usize| -> Vec<Line> {
            (0..n)
                .map(|k| Line {
                    label: format!("series {k}"),
                    ..day(|_| false, false)
                })
                .collect()
        };
        let stroke = format!(
            "stroke=\"#{:02X}{:02X}{:02X}\"",
            LINE_COLOURS[0].0, LINE_COLOURS[0].1, LINE_COLOURS[0].2
        );
        let six = svg(&spec(), &lines(6)).unwrap();
        let seven = svg(&spec(), &lines(7)).unwrap();
        assert!(
            seven.matches(&stroke).count() > six.matches(&stroke).count() + 10,
            "{seven:.400}"
        );
    }

    /// Black strokes of `svg`: its crosses (the axes and mesh are grey or drawn as paths).
    fn black_lines(svg: &str) -> usize {
        svg.split("<line")
            .skip(1)
            .filter(|l| l.contains("stroke=\"#000000\""))
            .count()
    }

    /// Recent values are mostly `unchecked`: their stretch is a strip at the plot's foot and the
    /// legend says so; the line keeps every point, and only a few flagged values get crosses.
    #[test]
    fn flagged_stretches_are_a_strip_and_few_get_marks() {
        let none = svg(&spec(), &[day(|_| false, false)]).unwrap();
        let few = svg(&spec(), &[day(|i| i == 7 || i == 50, false)]).unwrap();
        let all = svg(&spec(), &[day(|_| true, false)]).unwrap();
        assert!(!none.contains("quality not good"));
        assert!(few.contains("quality not good") && all.contains("quality not good"));
        assert!(black_lines(&few) > black_lines(&none), "crosses where few");
        assert_eq!(
            black_lines(&all),
            black_lines(&none),
            "no crosses over a stretch"
        );
        let strip = format!(
            "fill=\"#{:02X}{:02X}{:02X}\"",
            FLAG_COLOUR.0, FLAG_COLOUR.1, FLAG_COLOUR.2
        );
        assert!(all.matches(&strip).count() > 10, "{all:.400}");
        let stroke = format!(
            "stroke=\"#{:02X}{:02X}{:02X}\"",
            LINE_COLOURS[0].0, LINE_COLOURS[0].1, LINE_COLOURS[0].2
        );
        assert!(all.contains(&stroke), "the line is drawn");
    }

    /// A legend of many series goes beside the plot, each label and its key drawn whole; a
    /// few series keep theirs inside, in the corner their values leave free.
    #[test]
    fn many_series_have_their_legend_beside_the_plot() {
        let lines: Vec<Line> = (0..6)
            .map(|k| Line {
                label: format!("gauge {k}: water level"),
                ..day(|i| i == 3, false)
            })
            .collect();
        let beside = legend_beside(&lines, 900);
        assert!(beside > 100, "{beside}");
        let drawn = svg(&spec(), &lines).unwrap();
        let left = 900 - MARGIN - beside;
        for k in 0..6 {
            let at = drawn.rfind(&format!("gauge {k}: water level")).unwrap();
            let x: f64 = drawn[..at]
                .rsplit("<text x=\"")
                .next()
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse::<f64>()
                .unwrap();
            assert!(
                x > f64::from(left),
                "label {k} at {x}, the plot ends at {left}"
            );
        }
        assert_eq!(legend_beside(&lines[..2], 900), 0);
        assert_eq!(
            legend_beside(&lines, 300),
            0,
            "too narrow to give up the room"
        );
    }

    /// Precipitation is drawn as bars from zero; levels whose labels would overlap take the
    /// other side; a tick too near the right edge has no label to cut.
    #[test]
    fn bars_levels_and_edges() {
        let mut with_levels = spec();
        with_levels.levels = vec![
            Level {
                label: "MHW 104".into(),
                value: 104.0,
            },
            Level {
                label: "flood mark 104.2".into(),
                value: 104.2,
            },
            Level {
                label: "third 104.1".into(),
                value: 104.1,
            },
        ];
        let drawn = svg(&with_levels, &[day(|_| false, true)]).unwrap();
        let fill = format!(
            "fill=\"#{:02X}{:02X}{:02X}\"",
            LINE_COLOURS[0].0, LINE_COLOURS[0].1, LINE_COLOURS[0].2
        );
        assert!(drawn.matches(&fill).count() > 20, "bars: {drawn:.400}");
        assert!(drawn.contains("MHW 104") && drawn.contains("third 104.1"));
        assert!(
            !drawn.contains("flood mark 104.2"),
            "a third label on the same height"
        );
        assert!(drawn.contains("text-anchor=\"end\""), "one on the right");
        // The value axis of bars starts at zero.
        let labels: Vec<&str> = drawn
            .split("</text>")
            .filter_map(|t| t.rsplit('>').next())
            .map(str::trim)
            .collect();
        assert!(labels.contains(&"0.0"), "{labels:?}");
    }
}
