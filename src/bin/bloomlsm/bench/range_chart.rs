//! `bench --workload range --plot FILE.svg`: above, the measured FPR of
//! empty range scans against the range length, one curve per
//! `--range-bits` value, beside Grafite's bound `L / 2^(B−2)` (dashed) for
//! the same bits; below, the data blocks an empty scan read, the same
//! curves beside the store without range filters (grey).

use std::path::Path;

use plotters::prelude::*;

use crate::plot::{curve_color, rate_label, temp_path};
use crate::{CliError, CliResult};

/// One store's curves: the bits per key, its `(length, measured FPR)`
/// points (lengths whose scans met no false positive are left out: a log
/// axis has no 0), and its `(length, data blocks per empty scan)` points.
pub struct Curve {
    pub bits: f64,
    pub points: Vec<(u64, f64)>,
    pub blocks: Vec<(u64, f64)>,
}

/// Grafite's bound at `bits` for `len` points, at most 1.
fn bound(bits: f64, len: u64) -> f64 {
    (len as f64 / (bits - 2.0).exp2()).min(1.0)
}

/// Writes the chart of `curves` and `base` (the data blocks per empty scan
/// of the store without range filters) over `lengths` to `path` (via its
/// temporary name, renamed into place).
pub fn write(
    path: &Path,
    curves: &[Curve],
    base: &[(u64, f64)],
    lengths: &[u64],
    scans: u64,
) -> CliResult {
    let err = |e: String| CliError::new(format!("plot {}: {e}", path.display()));
    let tmp = temp_path(path);
    draw(&tmp, curves, base, lengths, scans).map_err(|e| err(e.to_string()))?;
    std::fs::rename(&tmp, path).map_err(|e| err(e.to_string()))?;
    Ok(())
}

fn draw(
    file: &Path,
    curves: &[Curve],
    base: &[(u64, f64)],
    lengths: &[u64],
    scans: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let xmin = lengths.iter().copied().min().unwrap_or(1).max(1) as f64;
    let xmax = (lengths.iter().copied().max().unwrap_or(1) as f64).max(xmin * 2.0);
    let mut lowest = 1.0f64;
    for c in curves {
        for &(len, fpr) in &c.points {
            lowest = lowest.min(fpr).min(bound(c.bits, len));
        }
        lowest = lowest.min(bound(c.bits, xmin as u64));
    }
    let ymin = 10f64.powf(lowest.max(1e-9).log10().floor());
    let root = SVGBackend::new(file, (1000, 1100)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(680);
    let mut chart = ChartBuilder::on(&top)
        .caption(
            format!("Range filter FPR vs range length ({scans} empty scans per point; dashed: bound L/2^(B-2))"),
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(76)
        .build_cartesian_2d((xmin / 1.5..xmax * 1.5).log_scale(), (ymin..1.5f64).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("range length (points)")
        .y_desc("false-positive rate of empty ranges")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&rate_label)
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for (i, c) in curves.iter().enumerate() {
        let color = curve_color(i);
        let bound_line: Vec<(f64, f64)> = lengths
            .iter()
            .map(|&l| (l as f64, bound(c.bits, l)))
            .collect();
        chart.draw_series(DashedLineSeries::new(
            bound_line,
            6,
            4,
            color.stroke_width(1),
        ))?;
        let pts: Vec<(f64, f64)> = c.points.iter().map(|&(l, f)| (l as f64, f)).collect();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?
            .label(format!("{} bits/key, measured", c.bits))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 14))
        .draw()?;
    draw_blocks(&bottom, curves, base, xmin, xmax)?;
    root.present()?;
    Ok(())
}

/// The lower panel: data blocks per empty scan against the range length,
/// the store without range filters beside each filtered one.
fn draw_blocks(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    curves: &[Curve],
    base: &[(u64, f64)],
    xmin: f64,
    xmax: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let ymax = base
        .iter()
        .chain(curves.iter().flat_map(|c| &c.blocks))
        .map(|&(_, b)| b)
        .fold(0.0f64, f64::max)
        .max(0.1);
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Data blocks read per empty scan (grey: no range filters)",
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(76)
        .build_cartesian_2d((xmin / 1.5..xmax * 1.5).log_scale(), 0.0..ymax * 1.15)?;
    chart
        .configure_mesh()
        .x_desc("range length (points)")
        .y_desc("data blocks per empty scan")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.2}"))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    let grey = RGBColor(120, 120, 120);
    let pts =
        |p: &[(u64, f64)]| -> Vec<(f64, f64)> { p.iter().map(|&(l, b)| (l as f64, b)).collect() };
    let b = pts(base);
    chart
        .draw_series(LineSeries::new(b.iter().copied(), grey.stroke_width(2)))?
        .label("no range filters")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(2)));
    chart.draw_series(b.iter().map(|&p| Circle::new(p, 4, grey.filled())))?;
    for (i, c) in curves.iter().enumerate() {
        let color = curve_color(i);
        let p = pts(&c.blocks);
        chart
            .draw_series(LineSeries::new(p.iter().copied(), color.stroke_width(2)))?
            .label(format!("{} bits/key", c.bits))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart.draw_series(p.iter().map(|&q| Circle::new(q, 4, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::MiddleLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}
