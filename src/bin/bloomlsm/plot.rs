//! The SVG chart of `bench --plot`, drawn with plotters' SVG backend (no font
//! files needed: text is left to the SVG viewer).
//!
//! Left panel: false-positive rate against bits per key, the model curve of
//! each filter kind with the measured points of the filter-only sweep on top
//! (log scale), and the information-theoretic bound `2^-b`. Right panel:
//! data-block reads per missing get of each store configuration, measured
//! next to predicted (log scale). Bottom panel: the cost frontier — each
//! configuration's measured FPR against its filter memory, labelled with what
//! its filters cost in CPU to build (ns per key) and to probe (ns); with
//! `--filter-budget`, beside it, the blocks read per missing and per present
//! get against the filter and index memory held (the budget curve, measured
//! and, for missing gets, predicted). Below,
//! one latency CDF panel per configuration: each read phase's latency (log
//! scale) against the fraction of operations at most that slow, on a
//! "nines" axis (90%, 99%, 99.9%, ...) so that the tail is as wide as the
//! body.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use bloomlsm::filter::FilterKind;

use crate::report::{count, sig3};
use crate::sweep::{SweepPoint, model_curve};
use crate::{CliError, CliResult};

pub const BLUE_: RGBColor = RGBColor(31, 119, 180);
pub const ORANGE_: RGBColor = RGBColor(255, 127, 14);
pub const GREY_: RGBColor = RGBColor(140, 140, 140);
pub const GREEN_: RGBColor = RGBColor(44, 160, 44);

fn kind_color(kind: FilterKind) -> RGBColor {
    match kind {
        FilterKind::Blocked512 => BLUE_,
        FilterKind::Bloom => ORANGE_,
        FilterKind::Ribbon => GREEN_,
        _ => GREY_,
    }
}

/// What the chart shows.
#[derive(Clone, Debug)]
pub struct Chart<'a> {
    /// The filter-only sweep (left panel).
    pub sweep: &'a [SweepPoint],
    /// Keys per filter in the sweep.
    pub sweep_keys: u64,
    /// One bar pair per store configuration (right panel).
    pub bars: Vec<ReadsBar>,
    /// Keys in each store.
    pub keys: u64,
    /// Missing-key gets per store.
    pub lookups: u64,
    /// One latency CDF panel per configuration.
    pub latency: Vec<LatencyCdf>,
    /// The read mode of the stores, for the panels' titles.
    pub io: &'static str,
    /// `--filter-budget`: each filtered configuration's curve.
    pub budget: Vec<BudgetCurve>,
}

/// One configuration under filter memory budgets.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetCurve {
    /// The configuration's name.
    pub name: String,
    /// `(filter and index bytes in memory, measured blocks read per missing
    /// get, predicted, measured blocks read per present get)`, by budget.
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// A configuration's latency distributions, one per read phase.
#[derive(Clone, Debug, PartialEq)]
pub struct LatencyCdf {
    /// The configuration's name.
    pub name: String,
    /// One curve per read phase.
    pub phases: Vec<PhaseCdf>,
}

/// One read phase's latency distribution.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseCdf {
    /// The phase, e.g. `missing get`.
    pub label: String,
    /// Latencies recorded (the resolution of the tail).
    pub samples: u64,
    /// `(ns, fraction of operations at most ns)`, ascending.
    pub points: Vec<(f64, f64)>,
}

/// A store configuration's data-block reads per missing get.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadsBar {
    /// The configuration's name.
    pub name: String,
    /// Measured by the store's counters.
    pub measured: f64,
    /// Predicted: the sum of the modelled FPRs of the files each get probed.
    pub predicted: f64,
    /// Filter bits per filtered key of the store (0 without filters).
    pub bits_per_key: f64,
    /// Measured FPR of the missing-key phase.
    pub fpr: Option<f64>,
    /// Filter build CPU, ns per key, and absent-probe CPU, ns.
    pub cost: Option<(f64, Option<f64>)>,
}

/// The file the chart for `path` is drawn into before it is renamed to `path`.
pub fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Checks, before a run, that the chart for `path` can be written: creates
/// its [`temp_path`] and removes it again. The error says why not, for
/// "cannot create a file there (...)".
pub fn check_writable(path: &Path) -> std::io::Result<()> {
    let tmp = temp_path(path);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    let _ = std::fs::remove_file(&tmp);
    Ok(())
}

/// Writes the two-panel chart to `path` (via [`temp_path`], renamed into place).
pub fn write_chart(path: &Path, chart: &Chart<'_>) -> CliResult {
    let tmp = temp_path(path);
    let err = |e: String| CliError::new(format!("plot {}: {e}", path.display()));
    {
        let rows = chart.latency.len().div_ceil(CDF_COLUMNS) as u32;
        let height = 1150 + rows * CDF_HEIGHT;
        let root = SVGBackend::new(&tmp, (1500, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let (top, rest) = root.split_vertically(600);
        let (bottom, cdfs) = rest.split_vertically(550);
        let (left, right) = top.split_horizontally(720);
        fpr_panel(&left, chart.sweep, chart.sweep_keys).map_err(|e| err(e.to_string()))?;
        reads_panel(&right, chart).map_err(|e| err(e.to_string()))?;
        if chart.budget.is_empty() {
            frontier_panel(&bottom, chart).map_err(|e| err(e.to_string()))?;
        } else {
            let (left, right) = bottom.split_horizontally(750);
            frontier_panel(&left, chart).map_err(|e| err(e.to_string()))?;
            budget_panel(&right, chart).map_err(|e| err(e.to_string()))?;
        }
        if rows > 0 {
            let cells = cdfs.split_evenly((rows as usize, CDF_COLUMNS));
            let range = cdf_range(&chart.latency);
            for (cell, cdf) in cells.iter().zip(&chart.latency) {
                cdf_panel(cell, cdf, range, chart.io).map_err(|e| err(e.to_string()))?;
            }
        }
        root.present().map_err(|e| err(e.to_string()))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| err(e.to_string()))?;
    Ok(())
}

/// Tick labels of a log axis of rates: `1%`, `0.01%`, ...
/// A rate as a percentage with three significant digits.
pub fn rate_label(v: &f64) -> String {
    format!("{}%", sig3(v * 100.0))
}

/// `sig3` without trailing zeros (bar labels are narrow).
fn short(v: f64) -> String {
    let s = sig3(v);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn decade_floor(x: f64) -> f64 {
    10f64.powf(x.log10().floor())
}

fn fpr_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    sweep: &[SweepPoint],
    keys: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let kinds = FilterKind::SIZED_BY_BITS;
    let (bmin, bmax) = (1.5f64, 20.5f64);
    let mut lowest = kinds
        .iter()
        .map(|&k| model_curve(k, bmax))
        .fold(1.0, f64::min);
    for p in sweep.iter().filter(|p| p.false_positives > 0) {
        lowest = lowest.min(p.measured_fpr());
    }
    let ymin = decade_floor(lowest.max(1e-9));
    let probes = sweep.first().map_or(0, |p| p.probes);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "Filter FPR vs memory ({} keys per filter, {} absent probes per point)",
                count(keys),
                count(probes)
            ),
            ("sans-serif", 18),
        )
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(bmin..bmax, (ymin..1.0f64).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("bits per key")
        .y_desc("false-positive rate")
        .x_labels(10)
        .y_label_formatter(&rate_label)
        .light_line_style(WHITE.mix(0.0))
        .draw()?;

    let grid = |kind: FilterKind| {
        (0..=((bmax - bmin) * 10.0) as usize)
            .map(move |t| bmin + t as f64 / 10.0)
            .map(move |b| (b, model_curve(kind, b)))
            .filter(move |&(_, f)| f >= ymin)
    };
    for kind in kinds {
        let c = kind_color(kind);
        chart
            .draw_series(LineSeries::new(grid(kind), c.stroke_width(2)))?
            .label(format!("{} model", kind.name()))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(
                sweep
                    .iter()
                    .filter(|p| p.kind == kind && p.false_positives > 0)
                    .map(|p| Circle::new((p.bits_per_key, p.measured_fpr()), 4, c.filled())),
            )?
            .label(format!("{} measured", kind.name()))
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, c.filled()));
    }
    chart
        .draw_series(LineSeries::new(
            (0..=((bmax - bmin) * 10.0) as usize)
                .map(|t| bmin + t as f64 / 10.0)
                .map(|b| (b, 0.5f64.powf(b)))
                .filter(|&(_, f)| f >= ymin),
            GREY_.stroke_width(1),
        ))?
        .label("bound 2^-b")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], GREY_.stroke_width(1)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}

fn reads_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    chart_data: &Chart<'_>,
) -> Result<(), Box<dyn std::error::Error>> {
    let rows = &chart_data.bars;
    let n = rows.len().max(1);
    let values: Vec<f64> = rows
        .iter()
        .flat_map(|r| [r.measured, r.predicted])
        .filter(|v| *v > 0.0)
        .collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let (ymin, ymax) = if values.is_empty() {
        (1e-4, 10.0)
    } else {
        (decade_floor(lo) / 2.0, hi * 4.0)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "Data-block reads per missing get ({} keys, {} gets)",
                count(chart_data.keys),
                count(chart_data.lookups)
            ),
            ("sans-serif", 18),
        )
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..n as f64, (ymin..ymax).log_scale())?;
    let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
    let label = move |x: &f64| {
        // Labels sit at segment centres (i + 0.5); other ticks stay blank.
        let i = x.floor();
        if (x - i - 0.5).abs() < 1e-6 {
            names.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(2 * n + 1)
        .x_label_formatter(&label)
        .y_desc("data-block reads per missing get")
        .y_label_formatter(&|v| sig3(*v))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    let bar = |i: usize, side: usize, v: f64, c: RGBColor| {
        let x0 = i as f64 + 0.12 + side as f64 * 0.38;
        Rectangle::new([(x0, ymin), (x0 + 0.36, v.max(ymin))], c.filled())
    };
    chart
        .draw_series(
            rows.iter()
                .enumerate()
                .map(|(i, r)| bar(i, 0, r.measured, BLUE_)),
        )?
        .label("measured")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], BLUE_.filled()));
    chart
        .draw_series(
            rows.iter()
                .enumerate()
                .map(|(i, r)| bar(i, 1, r.predicted, ORANGE_)),
        )?
        .label("predicted (sum of modelled FPRs)")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], ORANGE_.filled()));
    let value_style =
        TextStyle::from(("sans-serif", 11).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    // A pair's two labels are wider than their bars: when they would sit
    // within a line of each other, the predicted one goes a line above.
    let at =
        |i: usize, side: usize, v: f64| (i as f64 + 0.3 + side as f64 * 0.38, v.max(ymin) * 1.15);
    for (i, r) in rows.iter().enumerate() {
        let (y0, y1) = (
            chart.backend_coord(&at(i, 0, r.measured)).1,
            chart.backend_coord(&at(i, 1, r.predicted)).1,
        );
        let lift = if (y0 - y1).abs() < 12 {
            y1 - (y0.min(y1) - 12)
        } else {
            0
        };
        for (side, v, dy) in [(0, r.measured, 0), (1, r.predicted, -lift)] {
            chart.draw_series(std::iter::once(
                EmptyElement::at(at(i, side, v))
                    + Text::new(short(v), (0, dy), value_style.clone()),
            ))?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}

/// The cost frontier: measured FPR (log) against bits per key, one labelled
/// point per filtered configuration; the colour shows the build cost.
fn frontier_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    chart_data: &Chart<'_>,
) -> Result<(), Box<dyn std::error::Error>> {
    let pts: Vec<(&ReadsBar, f64, f64, Option<f64>)> = chart_data
        .bars
        .iter()
        .filter_map(|b| {
            let fpr = b.fpr.filter(|f| *f > 0.0)?;
            let (build, probe) = b.cost?;
            Some((b, fpr, build, probe))
        })
        .collect();
    if pts.is_empty() {
        return Ok(());
    }
    let xmax = pts.iter().map(|p| p.0.bits_per_key).fold(0.0, f64::max) * 1.3 + 2.0;
    let ylo = pts.iter().map(|p| p.1).fold(1.0, f64::min);
    let yhi = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    let (ymin, ymax) = (decade_floor(ylo) / 2.0, (yhi * 5.0).min(1.0));
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Cost frontier: FPR vs filter memory, labelled with the filters' CPU (build ns/key, probe ns)",
            ("sans-serif", 18),
        )
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..xmax, (ymin..ymax).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("filter bits per key (store)")
        .y_desc("measured false-positive rate")
        .y_label_formatter(&rate_label)
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    // Cheap builds blue, dear ones green: log scale between the cheapest
    // and the dearest configuration.
    let (bmin, bmax) = pts.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), p| {
        (lo.min(p.2), hi.max(p.2))
    });
    let colour = |build: f64| {
        let t = if bmax > bmin {
            ((build / bmin).ln() / (bmax / bmin).ln()).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let mix = |a: u8, b: u8| (f64::from(a) + t * (f64::from(b) - f64::from(a))) as u8;
        RGBColor(
            mix(BLUE_.0, GREEN_.0),
            mix(BLUE_.1, GREEN_.1),
            mix(BLUE_.2, GREEN_.2),
        )
    };
    // Each label goes to the first slot beside its point, 16 px steps up
    // or down, whose box meets no other label and no point (a label is about
    // 7 px per character at this font size).
    let dots: Vec<(i32, i32)> = pts
        .iter()
        .map(|(b, fpr, _, _)| chart.backend_coord(&(b.bits_per_key, *fpr)))
        .collect();
    let mut taken: Vec<Rect> = dots
        .iter()
        .map(|&(x, y)| Rect::new(x - 7, y - 7, x + 7, y + 7))
        .collect();
    for ((b, fpr, build, probe), &(px, py)) in pts.iter().zip(&dots) {
        let label = format!(
            "{}: {} ns/key, {} ns",
            b.name,
            short(*build),
            probe.map_or("-".to_string(), short)
        );
        let width = 7 * label.chars().count() as i32;
        let slot = |dy: i32| Rect::new(px + 12, py + dy - 8, px + 12 + width, py + dy + 8);
        let dy = [0, -1, 1, -2, 2, -3, 3, -4, 4, -5, 5]
            .into_iter()
            .map(|k| 16 * k)
            .find(|&dy| taken.iter().all(|r| !r.meets(&slot(dy))))
            .unwrap_or(0);
        taken.push(slot(dy));
        let font = ("sans-serif", 13)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        chart.draw_series(std::iter::once(
            EmptyElement::at((b.bits_per_key, *fpr))
                + Circle::new((0, 0), 6, colour(*build).filled())
                + PathElement::new(vec![(0, 0), (10, dy)], BLACK.mix(0.3))
                + Text::new(label, (12, dy), font),
        ))?;
    }
    Ok(())
}

/// A box in pixels, for placing labels where they meet nothing.
struct Rect {
    x0: i32,
    y0: i32,
    x1: i32,
    y1: i32,
}

impl Rect {
    fn new(x0: i32, y0: i32, x1: i32, y1: i32) -> Self {
        Rect { x0, y0, x1, y1 }
    }

    fn meets(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
}

/// The colour of the `i`-th curve of a chart.
pub fn curve_color(i: usize) -> RGBColor {
    const C: [RGBColor; 6] = [
        BLUE_,
        GREEN_,
        ORANGE_,
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
    ];
    C[i % C.len()]
}

/// The budget curves: blocks read per missing get (filter + index + data,
/// log) against the filter and index memory held (MiB), measured (solid,
/// dots) and as the allocation's model predicts (dashed), and per present
/// get, measured (thin, crosses). The legend stands beside the plot, where
/// it covers no curve.
fn budget_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    chart_data: &Chart<'_>,
) -> Result<(), Box<dyn std::error::Error>> {
    let curves = &chart_data.budget;
    let (width, _) = area.dim_in_pixel();
    let (area, legend) = area.split_horizontally(width.saturating_sub(200));
    let mib = |b: f64| b / (1 << 20) as f64;
    let xmax = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| mib(p.0)))
        .fold(0.0, f64::max)
        .max(1e-3)
        * 1.05;
    let ys: Vec<f64> = curves
        .iter()
        .flat_map(|c| c.points.iter().flat_map(|p| [p.1, p.2, p.3]))
        .filter(|v| *v > 0.0)
        .collect();
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ys.iter().copied().fold(0.0, f64::max);
    let (ymin, ymax) = if ys.is_empty() {
        (1e-3, 10.0)
    } else {
        (decade_floor(lo) / 2.0, hi * 3.0)
    };
    let mut chart = ChartBuilder::on(&area)
        .caption(
            format!(
                "Blocks read per get under a metadata memory budget ({})",
                chart_data.io
            ),
            ("sans-serif", 18),
        )
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..xmax, (ymin..ymax).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("filter + index memory held (MiB)")
        .y_desc("filter + index + data blocks read per get")
        .y_label_formatter(&|v| sig3(*v))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    let font = ("sans-serif", 13).into_font();
    let mut y = 60;
    for (i, c) in curves.iter().enumerate() {
        let color = curve_color(i);
        let measured: Vec<(f64, f64)> =
            c.points.iter().map(|p| (mib(p.0), p.1.max(ymin))).collect();
        chart.draw_series(LineSeries::new(measured.clone(), color.stroke_width(2)))?;
        chart.draw_series(measured.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        let predicted: Vec<(f64, f64)> =
            c.points.iter().map(|p| (mib(p.0), p.2.max(ymin))).collect();
        chart.draw_series(DashedLineSeries::new(
            predicted,
            6,
            4,
            color.stroke_width(1),
        ))?;
        let present: Vec<(f64, f64)> = c.points.iter().map(|p| (mib(p.0), p.3.max(ymin))).collect();
        chart.draw_series(LineSeries::new(present.clone(), color.stroke_width(1)))?;
        chart.draw_series(
            present
                .iter()
                .map(|&p| Cross::new(p, 4, color.stroke_width(2))),
        )?;
        // The legend: the configuration, then a sample of each line.
        legend.draw(&Text::new(c.name.clone(), (8, y), font.clone()))?;
        y += 18;
        for (what, dashed, width, mark) in [
            ("missing, measured", false, 2, true),
            ("missing, predicted", true, 1, false),
            ("present, measured", false, 1, false),
        ] {
            let (x0, ym) = (12, y + 6);
            if dashed {
                legend.draw(&PathElement::new(
                    vec![(x0, ym), (x0 + 7, ym)],
                    color.stroke_width(1),
                ))?;
                legend.draw(&PathElement::new(
                    vec![(x0 + 12, ym), (x0 + 19, ym)],
                    color.stroke_width(1),
                ))?;
            } else {
                legend.draw(&PathElement::new(
                    vec![(x0, ym), (x0 + 20, ym)],
                    color.stroke_width(width),
                ))?;
            }
            if mark {
                legend.draw(&Circle::new((x0 + 10, ym), 4, color.filled()))?;
            } else if !dashed {
                legend.draw(&Cross::new((x0 + 10, ym), 4, color.stroke_width(2)))?;
            }
            legend.draw(&Text::new(what, (x0 + 28, y), font.clone()))?;
            y += 17;
        }
        y += 8;
    }
    Ok(())
}

/// Latency CDF panels per row, and each row's height in pixels.
const CDF_COLUMNS: usize = 3;
const CDF_HEIGHT: u32 = 360;

/// Fraction `q` on the "nines" axis: `-log10(1 - q)` (90% → 1, 99% → 2),
/// at most the resolution of `samples` (the slowest operation sits at
/// `1 - 1/samples`).
fn nines(q: f64, samples: u64) -> f64 {
    let floor = 1.0 / samples.max(2) as f64;
    -(1.0 - q).max(floor).log10()
}

/// The x range (ns, whole decades) and y range (nines) shared by every panel.
fn cdf_range(cdfs: &[LatencyCdf]) -> ((f64, f64), f64) {
    let mut lo = f64::INFINITY;
    let mut hi = 0.0f64;
    let mut top = 1.0f64;
    for c in cdfs {
        for p in &c.phases {
            for &(ns, q) in &p.points {
                lo = lo.min(ns);
                hi = hi.max(ns);
                top = top.max(nines(q, p.samples));
            }
        }
    }
    if !lo.is_finite() {
        return ((10.0, 1e6), 3.0);
    }
    let lo = decade_floor(lo.max(1.0));
    let hi = decade_floor(hi.max(lo)) * 10.0;
    (
        (lo, if hi > lo { hi } else { lo * 10.0 }),
        top.ceil().max(1.0),
    )
}

/// Labels of the nines axis: `0%`, `90%`, `99%`, `99.9%`, ...
fn nines_label(y: &f64) -> String {
    if y.fract().abs() > 1e-9 {
        return String::new();
    }
    let n = *y as i32;
    if n == 0 {
        "0%".into()
    } else {
        let digits = (n - 2).max(0) as usize;
        format!("{:.*}%", digits, 100.0 - 100.0 * 10f64.powi(-n))
    }
}

/// A latency label: `300 ns`, `10 µs`, `1 ms`.
fn ns_label(v: &f64) -> String {
    let v = *v;
    if v < 1e3 {
        format!("{} ns", short(v))
    } else if v < 1e6 {
        format!("{} µs", short(v / 1e3))
    } else if v < 1e9 {
        format!("{} ms", short(v / 1e6))
    } else {
        format!("{} s", short(v / 1e9))
    }
}

fn phase_color(i: usize) -> RGBColor {
    [BLUE_, ORANGE_, GREEN_, GREY_][i % 4]
}

/// One configuration's latency CDFs, one line per phase.
fn cdf_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    cdf: &LatencyCdf,
    ((xlo, xhi), ytop): ((f64, f64), f64),
    io: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{}: latency CDF ({io} reads)", cdf.name),
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(72)
        .build_cartesian_2d((xlo..xhi).log_scale(), 0.0..ytop)?;
    chart
        .configure_mesh()
        .x_desc("latency per key (log)")
        .y_desc("operations at most this slow")
        .x_label_formatter(&ns_label)
        .y_labels(ytop as usize * 4 + 1)
        .y_label_formatter(&nines_label)
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .draw()?;
    for (i, p) in cdf.phases.iter().enumerate() {
        let c = phase_color(i);
        let line: Vec<(f64, f64)> = p
            .points
            .iter()
            .map(|&(ns, q)| (ns.clamp(xlo, xhi), nines(q, p.samples)))
            .collect();
        chart
            .draw_series(LineSeries::new(line, c.stroke_width(2)))?
            .label(p.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 13))
        .draw()?;
    Ok(())
}
