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

use crate::phase::{Phase, Recorder};
use crate::{CliError, CliResult, progress};
use bloomlsm::workload::{SplitMix64, absent_key, present_key};
use bloomlsm::{Db, FileStats};

use super::args::BenchArgs;
use super::configs::BenchConfig;
use super::row::{BudgetPoint, PresentReads};
use super::stores::store_options;

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

#[cfg(test)]
mod tests {
    use super::*;

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
