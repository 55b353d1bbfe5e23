//! `bench --benchmarks ...,readwhilewriting --plot FILE.svg`: the time
//! series of [`super::timeseries`] as an SVG chart, six panels against
//! seconds into the reads (read rate, read latency P50 / P99, filter FPR
//! observed and modelled, data blocks per get, L0 files, the writer's put
//! rate), drawn with plotters' SVG backend as [`crate::plot`]'s chart is.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::plot::{BLUE_, GREEN_, GREY_, ORANGE_, temp_path};
use crate::{CliError, CliResult};

use super::timeseries::Sample;

/// One line of a panel: its label, colour and points.
type Line = (&'static str, RGBColor, Vec<(f64, f64)>);

/// Writes the chart of `samples` (one every `interval_ms`) to `path`.
pub fn write(path: &Path, samples: &[Sample], interval_ms: u64, config: &str) -> CliResult {
    let tmp = temp_path(path);
    let err = |e: String| CliError::new(format!("plot {}: {e}", path.display()));
    {
        let root = SVGBackend::new(&tmp, (1400, 1200)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let root = root
            .titled(
                &format!("readwhilewriting over time ({config}; one point per {interval_ms} ms)"),
                ("sans-serif", 22),
            )
            .map_err(|e| err(e.to_string()))?;
        let cells = root.split_evenly((3, 2));
        let pts = |f: &dyn Fn(&Sample) -> Option<f64>| -> Vec<(f64, f64)> {
            samples
                .iter()
                .filter_map(|s| f(s).map(|v| (s.t_secs, v)))
                .collect()
        };
        let panels: [(&str, &str, Vec<Line>); 6] = [
            (
                "Reads per second",
                "reads/s",
                vec![("reads/s", BLUE_, pts(&|s| Some(s.reads_per_sec)))],
            ),
            (
                "Read latency",
                "µs",
                vec![
                    ("P50", BLUE_, pts(&|s| Some(s.p50_us))),
                    ("P99", ORANGE_, pts(&|s| Some(s.p99_us))),
                ],
            ),
            (
                "Filter false-positive rate",
                "%",
                vec![
                    (
                        "observed",
                        BLUE_,
                        pts(&|s| s.measured_fpr.map(|f| f * 100.0)),
                    ),
                    ("model", GREY_, pts(&|s| s.predicted_fpr.map(|f| f * 100.0))),
                ],
            ),
            (
                "Data blocks read per get",
                "blocks/get",
                vec![("blocks/get", GREEN_, pts(&|s| Some(s.blocks_per_get)))],
            ),
            (
                "L0 files",
                "files",
                vec![("L0 files", ORANGE_, pts(&|s| Some(s.l0_files as f64)))],
            ),
            (
                "Writer puts per second",
                "puts/s",
                vec![("puts/s", GREY_, pts(&|s| Some(s.puts_per_sec)))],
            ),
        ];
        for (cell, (title, y, lines)) in cells.iter().zip(panels) {
            panel(cell, title, y, &lines).map_err(|e| err(e.to_string()))?;
        }
        root.present().map_err(|e| err(e.to_string()))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| err(e.to_string()))?;
    Ok(())
}

/// One panel: `lines` against seconds, the y axis from 0.
fn panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    y_desc: &str,
    lines: &[Line],
) -> Result<(), Box<dyn std::error::Error>> {
    let all = lines.iter().flat_map(|(_, _, p)| p.iter());
    let (mut xmax, mut ymax) = (0.0f64, 0.0f64);
    for &(x, y) in all {
        xmax = xmax.max(x);
        ymax = ymax.max(y);
    }
    let xmax = if xmax > 0.0 { xmax * 1.02 } else { 1.0 };
    let ymax = if ymax > 0.0 { ymax * 1.15 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..xmax, 0.0..ymax)?;
    // Whole numbers where the axis spans tens or more (reads/s, µs),
    // one decimal below that (FPR in %, blocks per get, L0 files).
    let y_label = move |v: &f64| {
        if ymax >= 20.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    chart
        .configure_mesh()
        .x_desc("seconds")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_desc(y_desc)
        .y_label_formatter(&y_label)
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for (label, color, points) in lines {
        let c = *color;
        chart
            .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))?
            .label(*label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart.draw_series(
            points
                .iter()
                .map(|&(x, y)| Circle::new((x, y), 3, c.filled())),
        )?;
    }
    if lines.len() > 1 {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", 14))
            .draw()?;
    }
    Ok(())
}
