//! A duration curve (`type=duration&format=svg`, `png`): each series' values against the share
//! of the time they are exceeded, from 0 to 100 %, a line a series. Its axes are numbers, not
//! times, so it has a drawing of its own beside the time charts of [`super`].

use super::{
    ChartError, MARGIN, X_AXIS, Y_AXIS, encoded_png, failed, fonts, legend_key, line_look, titled,
};
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// One series' curve: (exceedance probability 0..=1, value), by probability.
pub struct Curve {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// What a curve chart shows besides the curves.
pub struct CurveSpec {
    pub title: String,
    /// The y axis: the quantity and its unit.
    pub quantity: String,
    pub size: (u32, u32),
}

/// The chart as an SVG document.
pub fn svg(spec: &CurveSpec, curves: &[Curve]) -> Result<String, ChartError> {
    fonts()?;
    let mut out = String::new();
    draw(spec, curves, SVGBackend::with_string(&mut out, spec.size))?;
    let Some(end) = out.find('>') else {
        return Ok(out);
    };
    let labels: Vec<&str> = curves.iter().map(|c| c.label.as_str()).collect();
    let desc = format!(
        "{} exceeded the share of the time on the x axis. Series: {}.",
        spec.quantity,
        labels.join("; ")
    );
    Ok(titled(&out[..end], &out[end + 1..], &spec.title, &desc))
}

/// The chart as a PNG image (8-bit RGB).
pub fn png(spec: &CurveSpec, curves: &[Curve]) -> Result<Vec<u8>, ChartError> {
    fonts()?;
    encoded_png(spec.size, |backend| draw(spec, curves, backend))
}

fn draw<DB: DrawingBackend>(
    spec: &CurveSpec,
    curves: &[Curve],
    backend: DB,
) -> Result<(), ChartError> {
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(failed)?;
    let (lo, hi) = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.1))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let pad = ((hi - lo) * 0.05).max(hi.abs() * 1e-3).max(1e-6);
    let mut chart = ChartBuilder::on(&root)
        .margin(MARGIN)
        .x_label_area_size(X_AXIS)
        .y_label_area_size(Y_AXIS)
        .caption(&spec.title, ("sans-serif", 16))
        .build_cartesian_2d(0.0..100.0, (lo - pad)..(hi + pad))
        .map_err(failed)?;
    chart
        .configure_mesh()
        .y_labels(6)
        .x_labels(11)
        .x_label_formatter(&|x| format!("{x:.0} %"))
        .x_desc("share of the time the value is exceeded")
        .y_desc(&spec.quantity)
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(failed)?;
    for (i, curve) in curves.iter().enumerate() {
        let (colour, dashed) = line_look(i);
        let points: Vec<(f64, f64)> = curve.points.iter().map(|p| (p.0 * 100.0, p.1)).collect();
        let dots = points
            .iter()
            .map(|p| Circle::new(*p, 2, colour.filled()))
            .collect::<Vec<_>>();
        let style = colour.stroke_width(1);
        let drawn = if dashed {
            chart.draw_series(std::iter::once(DashedPathElement::new(points, 6, 3, style)))
        } else {
            chart.draw_series(std::iter::once(PathElement::new(points, style)))
        }
        .map_err(failed)?;
        if curves.len() > 1 {
            drawn
                .label(curve.label.clone())
                .legend(move |at| legend_key(at, colour, dashed, false));
        }
        chart.draw_series(dots).map_err(failed)?;
    }
    if curves.len() > 1 {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 11))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(failed)?;
    }
    root.present().map_err(failed)?;
    Ok(())
}
