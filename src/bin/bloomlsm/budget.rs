//! `bench --filter-budget`: what a missing-key get costs when only part of a
//! store's filters may stay in memory (`Options::filter_memory_budget`).
//!
//! After a configuration's study, its store is reopened once per budget (a
//! fraction of the store's filter bytes) and the same missing keys are
//! looked up again. The filters the budget leaves out are read on demand,
//! one partition per probe, with the block cache off: each such probe is a
//! filter-block read. Reported per budget: filter-block reads and data-block
//! reads per missing get, measured and predicted, their sum (the I/O), the
//! latency, and the bytes that reached the device.

use std::path::Path;

use bloomlsm::workload::absent_key;
use bloomlsm::{Db, FileStats};
use serde_json::{Value, json};

use crate::bench::{BenchArgs, BenchConfig, store_options};
use crate::phase::{PERCENTILES, Phase, Recorder};
use crate::report::{self, TextTable, bytes};
use crate::{CliError, CliResult, progress};

/// The budgets of `--filter-budget` without values: fractions of the
/// store's filter bytes.
pub const DEFAULT_FRACTIONS: &str = "0,0.02,0.05,0.1,0.2,0.4,0.7,1";

/// Filter partition size of the studied stores with `--filter-budget`
/// unless `--filter-partition-bytes` says otherwise (RocksDB's default
/// metadata block size).
pub const DEFAULT_PARTITION_BYTES: usize = 4096;

/// Parses one `--filter-budget` fraction.
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!(
            "{s:?} is not a fraction of the store's filter memory (0..=1)"
        )),
    }
}

/// One budget's measurements.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetPoint {
    /// The budget as a fraction of the store's filter bytes.
    pub fraction: f64,
    /// The budget in bytes.
    pub budget_bytes: u64,
    /// Filter bytes the store held in memory under it.
    pub pinned_bytes: u64,
    /// Filter bytes of the whole store.
    pub filter_bytes: u64,
    /// Filter-block reads per missing get (store counters).
    pub filter_reads: f64,
    /// Data-block reads per missing get (store counters).
    pub data_reads: f64,
    /// The allocation's model of filter-block reads per missing get: the
    /// sum, over files whose filter is read on demand, of the chance a
    /// missing get probes the file (`FileStats::probe_chance`).
    pub predicted_filter_reads: f64,
    /// Data-block reads predicted: the sum of the modelled FPRs of the
    /// files each get probed (as in the main table).
    pub predicted_data_reads: f64,
    /// Filter-block bytes read from the file per missing get.
    pub filter_bytes_read: f64,
    /// Latency and device bytes of the phase (store bytes: data and filter
    /// blocks).
    pub phase: Phase,
}

impl BudgetPoint {
    /// Blocks read per missing get: filter and data.
    pub fn io(&self) -> f64 {
        self.filter_reads + self.data_reads
    }

    /// Predicted blocks read per missing get.
    pub fn predicted_io(&self) -> f64 {
        self.predicted_filter_reads + self.predicted_data_reads
    }
}

/// The allocation's model: filter-block reads per missing get, the
/// store's probe chances of the files whose filters are read on demand.
fn model_filter_reads(files: &[FileStats]) -> f64 {
    files
        .iter()
        .filter(|f| f.filter_usable && !f.filter_pinned)
        .map(|f| f.probe_chance)
        .sum::<f64>()
        .max(0.0) // an empty sum is -0.0
}

/// Reopens the store at `dir` (built by the study for `config`, holding
/// `filter_bytes` bytes of filters) under each budget of `args` and looks
/// the study's missing keys up again.
pub fn sweep(
    args: &BenchArgs,
    config: &BenchConfig,
    dir: &Path,
    filter_bytes: u64,
) -> CliResult<Vec<BudgetPoint>> {
    let Some(fractions) = &args.filter_budget else {
        return Ok(Vec::new());
    };
    let mut points = Vec::new();
    for &fraction in fractions {
        let budget = (fraction * filter_bytes as f64).floor() as u64;
        let mut opts = store_options(args, config)?;
        opts.metadata_memory_budget = Some(budget);
        // The study's store: never made anew (an interrupted run has
        // removed it, and must not find it recreated).
        opts.create_if_missing = false;
        let db = Db::open(dir, opts)?;
        let pb = progress(
            Some(args.lookups),
            args.quiet,
            format!("{}: missing gets, filter budget {fraction}", config.name),
        );
        let mut rec = Recorder::start();
        for j in 0..args.lookups {
            let key = absent_key(args.seed, j);
            if rec.time(1, || db.get(key))?.is_some() {
                return Err(CliError::new("an absent-family key was found in the store"));
            }
            if j % 4096 == 4095 {
                pb.inc(4096);
            }
        }
        let s = db.stats();
        let files = db.file_stats();
        pb.finish_and_clear();
        let gets = s.gets_missing().max(1) as f64;
        let t = &s.total;
        let phase = rec.finish(args.lookups, t.bytes_read + t.filter_bytes_read);
        points.push(BudgetPoint {
            fraction,
            budget_bytes: budget,
            pinned_bytes: s.filter_pinned_bytes,
            filter_bytes: s.filter_bytes,
            filter_reads: t.filter_block_reads as f64 / gets,
            data_reads: s.missing_get_disk_reads as f64 / gets,
            predicted_filter_reads: model_filter_reads(&files),
            predicted_data_reads: s.predicted_block_reads_per_missing_get(),
            filter_bytes_read: t.filter_bytes_read as f64 / gets,
            phase,
        });
        db.close()?;
    }
    Ok(points)
}

/// The text table of every configuration's sweep.
pub fn table<'a>(rows: impl Iterator<Item = (&'a str, &'a [BudgetPoint])>) -> TextTable {
    let mut head = vec![
        "config",
        "budget",
        "in memory",
        "filter reads",
        "pred",
        "data reads",
        "pred",
        "I/O per miss",
        "mean",
    ];
    head.extend(PERCENTILES.iter().filter(|p| p.1 != "p90").map(|p| p.1));
    head.push("device B");
    let mut t = TextTable::new(&head);
    for (name, points) in rows {
        for (i, p) in points.iter().enumerate() {
            let mut cells = vec![
                if i == 0 {
                    name.to_string()
                } else {
                    String::new()
                },
                format!("{}%", report::sig3(p.fraction * 100.0)),
                format!("{} of {}", bytes(p.pinned_bytes), bytes(p.filter_bytes)),
                format!("{:.4}", p.filter_reads),
                format!("{:.4}", p.predicted_filter_reads),
                format!("{:.4}", p.data_reads),
                format!("{:.4}", p.predicted_data_reads),
                format!("{:.4}", p.io()),
                report::duration_ns(p.phase.mean_ns),
            ];
            cells.extend(
                PERCENTILES
                    .iter()
                    .zip(p.phase.percentiles_ns)
                    .filter(|(q, _)| q.1 != "p90")
                    .map(|(_, v)| report::duration_ns(v as f64)),
            );
            cells.push(
                p.phase
                    .device_bytes_per_op()
                    .map_or("n/a".into(), |b| format!("{b:.1} B")),
            );
            t.row(cells);
        }
    }
    t
}

/// The JSON of one configuration's sweep.
pub fn json(points: &[BudgetPoint]) -> Value {
    Value::Array(
        points
            .iter()
            .map(|p| {
                json!({
                    "fraction": p.fraction,
                    "budget_bytes": p.budget_bytes,
                    "pinned_filter_bytes": p.pinned_bytes,
                    "filter_bytes": p.filter_bytes,
                    "filter_block_reads_per_missing_get": p.filter_reads,
                    "predicted_filter_block_reads_per_missing_get": p.predicted_filter_reads,
                    "data_block_reads_per_missing_get": p.data_reads,
                    "predicted_data_block_reads_per_missing_get": p.predicted_data_reads,
                    "filter_bytes_read_per_missing_get": p.filter_bytes_read,
                    "missing_get_ns": p.phase.mean_ns,
                    "missing_get_p50_ns": p.phase.percentiles_ns[0],
                    "missing_get_p99_ns": p.phase.percentiles_ns[2],
                    "device_bytes_per_missing_get": p.phase.device_bytes_per_op(),
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_are_checked() {
        assert_eq!(parse_fraction("0.25"), Ok(0.25));
        assert_eq!(parse_fraction("1"), Ok(1.0));
        for bad in ["-0.1", "1.5", "x", "", "NaN"] {
            assert!(parse_fraction(bad).is_err(), "{bad}");
        }
    }

    fn file(level: usize, probe_chance: f64, pinned: bool) -> FileStats {
        let mut f = FileStats::default();
        f.level = level;
        f.number = 1;
        f.entries = 10;
        f.filter = "blocked512".into();
        f.bits_per_key = 10.0;
        f.filter_usable = true;
        f.filter_pinned = pinned;
        f.filter_partitions = 2;
        f.probe_chance = probe_chance;
        f.predicted_fpr = 0.01;
        f
    }

    #[test]
    fn the_model_counts_each_unpinned_files_probe_chance() {
        let files = [
            file(0, 1.0, false),
            file(1, 0.5, true),
            file(2, 0.75, false),
            file(2, 0.25, true),
        ];
        assert!((model_filter_reads(&files) - 1.75).abs() < 1e-12);
        assert_eq!(model_filter_reads(&[]), 0.0);
    }
}
