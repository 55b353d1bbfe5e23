//! `bench --filter-budget`: what a lookup costs when only part of a store's
//! metadata — filters and index partitions — may stay in memory
//! (`Options::metadata_memory_budget`).
//!
//! After a configuration's study, its store is reopened once per budget (a
//! fraction of the store's metadata bytes, every filter and index held
//! whole) and the same missing keys, then as many present keys, are looked
//! up again. The filters and index partitions the budget leaves out are
//! read on demand, one partition per probe, with the block cache off: each
//! such probe is a block read. Reported per budget: the metadata held, and
//! per get of each kind the filter-block, index-block and data-block reads
//! (measured, and for missing gets predicted), their sum (the I/O), the
//! latency, and the bytes that reached the device.

use std::path::Path;

use bloomlsm::workload::{SplitMix64, absent_key, present_key};
use bloomlsm::{Db, FileStats};
use serde_json::{Value, json};

use crate::bench::{BenchArgs, BenchConfig, store_options};
use crate::phase::{PERCENTILES, Phase, Recorder};
use crate::report::{self, TextTable, bytes};
use crate::{CliError, CliResult, progress};

/// The budgets of `--filter-budget` without values: fractions of the
/// store's metadata bytes (filters and indexes).
pub const DEFAULT_FRACTIONS: &str = "0,0.02,0.05,0.1,0.2,0.4,0.7,1";

/// Filter and index partition size of the studied stores with
/// `--filter-budget` unless `--filter-partition-bytes` or
/// `--index-partition-bytes` says otherwise (RocksDB's default metadata
/// block size).
pub const DEFAULT_PARTITION_BYTES: usize = 4096;

/// Parses one `--filter-budget` fraction.
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!(
            "{s:?} is not a fraction of the store's metadata memory (0..=1)"
        )),
    }
}

/// Block reads per present-key get, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PresentReads {
    /// Filter blocks (of files above the key's, read on demand).
    pub filter: f64,
    /// Index partitions.
    pub index: f64,
    /// Data blocks.
    pub data: f64,
}

impl PresentReads {
    /// Blocks read per present get.
    pub fn io(&self) -> f64 {
        self.filter + self.index + self.data
    }
}

/// One budget's measurements.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetPoint {
    /// The budget as a fraction of the store's metadata bytes.
    pub fraction: f64,
    /// The budget in bytes.
    pub budget_bytes: u64,
    /// Filter bytes the store held in memory under it.
    pub pinned_bytes: u64,
    /// Filter bytes of the whole store.
    pub filter_bytes: u64,
    /// Index bytes the store held in memory under it (top levels and
    /// one-block indexes always).
    pub pinned_index_bytes: u64,
    /// Index bytes of the whole store, every partition held.
    pub index_bytes: u64,
    /// Index-partition reads per missing get.
    pub index_reads: f64,
    /// Reads per present-key get.
    pub present: PresentReads,
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
    /// Latency and device bytes of the missing gets (store bytes: data,
    /// filter and index blocks).
    pub phase: Phase,
    /// The same of the present gets.
    pub present_phase: Phase,
}

impl BudgetPoint {
    /// Blocks read per missing get: filter, index and data.
    pub fn io(&self) -> f64 {
        self.filter_reads + self.index_reads + self.data_reads
    }

    /// Metadata held in memory: filters and indexes.
    pub fn metadata_bytes(&self) -> u64 {
        self.pinned_bytes + self.pinned_index_bytes
    }

    /// Blocks read per lookup, half of them missing and half present.
    pub fn io_per_lookup(&self) -> f64 {
        (self.io() + self.present.io()) / 2.0
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
/// `metadata_bytes` bytes of filters and indexes) under each budget of
/// `args` and looks the study's missing keys, then present keys, up again.
pub fn sweep(
    args: &BenchArgs,
    config: &BenchConfig,
    dir: &Path,
    metadata_bytes: u64,
) -> CliResult<Vec<BudgetPoint>> {
    let Some(fractions) = &args.filter_budget else {
        return Ok(Vec::new());
    };
    let mut points = Vec::new();
    for &fraction in fractions {
        let budget = (fraction * metadata_bytes as f64).floor() as u64;
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
        let phase = rec.finish(
            args.lookups,
            t.bytes_read + t.filter_bytes_read + t.index_bytes_read,
        );
        let (present, present_phase) = present_gets(args, config, &db)?;
        points.push(BudgetPoint {
            fraction,
            budget_bytes: budget,
            pinned_bytes: s.filter_pinned_bytes,
            filter_bytes: s.filter_bytes,
            pinned_index_bytes: s.index_pinned_bytes,
            index_bytes: s.index_bytes,
            index_reads: t.index_block_reads as f64 / gets,
            present,
            present_phase,
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

/// Gets of `args.lookups` present keys, drawn uniformly as the study's
/// existing gets are: the reads per get by kind, and the phase.
fn present_gets(
    args: &BenchArgs,
    config: &BenchConfig,
    db: &Db,
) -> CliResult<(PresentReads, Phase)> {
    db.reset_stats();
    let pb = progress(
        Some(args.lookups),
        args.quiet,
        format!("{}: present gets", config.name),
    );
    let mut rng = SplitMix64::new(args.seed ^ 0x6765_7473);
    let mut rec = Recorder::start();
    for j in 0..args.lookups {
        let key = present_key(args.seed, rng.below(args.keys.max(1)));
        if rec.time(1, || db.get(key))?.is_none() {
            return Err(CliError::new("an inserted key was not found"));
        }
        if j % 4096 == 4095 {
            pb.inc(4096);
        }
    }
    pb.finish_and_clear();
    let t = db.stats().total;
    let gets = args.lookups.max(1) as f64;
    let reads = PresentReads {
        filter: t.filter_block_reads as f64 / gets,
        index: t.index_block_reads as f64 / gets,
        data: t.block_reads as f64 / gets,
    };
    let phase = rec.finish(
        args.lookups,
        t.bytes_read + t.filter_bytes_read + t.index_bytes_read,
    );
    Ok((reads, phase))
}

/// The text table of every configuration's sweep.
pub fn table<'a>(rows: impl Iterator<Item = (&'a str, &'a [BudgetPoint])>) -> TextTable {
    let mut head = vec![
        "config",
        "budget",
        "in memory",
        "filters",
        "indexes",
        "filter reads",
        "pred",
        "index reads",
        "data reads",
        "pred",
        "I/O per miss",
        "I/O per hit",
        "I/O per get",
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
                format!(
                    "{} of {}",
                    bytes(p.metadata_bytes()),
                    bytes(p.filter_bytes + p.index_bytes)
                ),
                bytes(p.pinned_bytes),
                bytes(p.pinned_index_bytes),
                format!("{:.4}", p.filter_reads),
                format!("{:.4}", p.predicted_filter_reads),
                format!("{:.4}", p.index_reads),
                format!("{:.4}", p.data_reads),
                format!("{:.4}", p.predicted_data_reads),
                format!("{:.4}", p.io()),
                format!("{:.4}", p.present.io()),
                format!("{:.4}", p.io_per_lookup()),
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
                    "pinned_index_bytes": p.pinned_index_bytes,
                    "index_bytes": p.index_bytes,
                    "metadata_memory_bytes": p.metadata_bytes(),
                    "index_block_reads_per_missing_get": p.index_reads,
                    "io_per_missing_get": p.io(),
                    "filter_block_reads_per_present_get": p.present.filter,
                    "index_block_reads_per_present_get": p.present.index,
                    "data_block_reads_per_present_get": p.present.data,
                    "io_per_present_get": p.present.io(),
                    "io_per_lookup": p.io_per_lookup(),
                    "present_get_ns": p.present_phase.mean_ns,
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
