//! `bench --plot`: after the run, the filter-only FPR sweep and the SVG chart of the sweep and of every
//! configuration's reads, latencies and filter budgets ([`plot`]).

use std::io::Write;
use std::path::Path;

use bloomlsm::filter::FilterKind;
use serde_json::json;

use crate::sweep::{SweepPoint, fpr_sweep, sweep_table};
use crate::{CliResult, interrupt, plot, progress, write_json};

use super::args::BenchArgs;
use super::json::sweep_json;
use super::row::{BenchRow, PHASES};

/// Runs the sweep and writes the chart at `path`; then the sweep as a JSON
/// line (`--json`) or as a table (text), and where the chart is.
pub fn write(
    args: &BenchArgs,
    out: &mut dyn Write,
    path: &Path,
    rows: &[BenchRow],
    text: bool,
) -> CliResult {
    let pb = progress(None, args.quiet, "filter-only FPR sweep");
    let bits: Vec<f64> = (2..=20).map(f64::from).collect();
    let sweep = fpr_sweep(
        &FilterKind::SIZED_BY_BITS,
        &bits,
        args.sweep_keys.max(1),
        args.sweep_probes.max(1),
        args.seed,
    );
    pb.finish_and_clear();
    let chart = chart(args, &sweep, rows);
    // Its temporary file goes if the run is interrupted while it is written.
    interrupt::remove_on_interrupt(plot::temp_path(path));
    interrupt::guard(|| plot::write_chart(path, &chart))?;
    if args.json {
        write_json(
            out,
            &json!({
                "sweep": sweep.iter().map(sweep_json).collect::<Vec<_>>(),
                "sweep_keys": args.sweep_keys,
                "plot": path.display().to_string(),
            }),
        )?;
    }
    if text {
        writeln!(out)?;
        out.write_all(sweep_table(&sweep).render().as_bytes())?;
        writeln!(out, "wrote {}", path.display())?;
    } else if !args.quiet {
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// The chart of the `sweep` and of every row: reads per missing get, latency
/// distributions per phase, and I/O under each filter memory budget.
fn chart<'a>(args: &BenchArgs, sweep: &'a [SweepPoint], rows: &[BenchRow]) -> plot::Chart<'a> {
    plot::Chart {
        sweep,
        sweep_keys: args.sweep_keys,
        bars: rows
            .iter()
            .map(|r| plot::ReadsBar {
                name: r.config.name.clone(),
                measured: r.reads_per_missing_get(),
                predicted: r.predicted_reads_per_missing_get(),
                bits_per_key: r.bits_per_key,
                fpr: r.measured_fpr(),
                cost: r.filter_cost,
            })
            .collect(),
        keys: args.keys,
        lookups: args.lookups,
        latency: rows
            .iter()
            .map(|r| plot::LatencyCdf {
                name: r.config.name.clone(),
                phases: r
                    .phases
                    .iter()
                    .zip(PHASES)
                    .map(|(p, (label, _))| plot::PhaseCdf {
                        label: label.to_string(),
                        samples: p.samples,
                        points: p.cdf.clone(),
                    })
                    .collect(),
            })
            .collect(),
        io: args.io_name(),
        budget: rows
            .iter()
            .filter(|r| !r.budget.is_empty())
            .map(|r| plot::BudgetCurve {
                name: r.config.name.clone(),
                points: r
                    .budget
                    .iter()
                    .map(|p| {
                        (
                            p.metadata_bytes() as f64,
                            p.io(),
                            p.predicted_io(),
                            p.present.io(),
                        )
                    })
                    .collect(),
            })
            .collect(),
    }
}
