//! `bench --workload prefix`: the prefix-filter study. Two stores (the
//! first `--configs` configuration's point filters; one without a prefix
//! extractor, the baseline, then one with a fixed [`PREFIX_LEN`]-byte
//! extractor and its prefix filters) are loaded with the same `--keys`
//! keys of [`GROUP`] keys per prefix
//! ([`prefixed_key`](bloomlsm::workload::prefixed_key)), written the same
//! way (so with the same tree, which is checked); then on each, `--lookups`
//! prefix scans of absent prefixes (empty scans) and as many of present
//! ones, each phase reporting what the store's counters saw: prefix-filter
//! checks, negatives and false positives per level, the measured FPR
//! against the levels' modelled one, data blocks read per scan (and of
//! those, the ones that held entries of the scan), requests and bytes,
//! latencies, and for the filtered store what it saved against the
//! baseline.

use std::io::Write;

use bloomlsm::workload::{PREFIX_LEN, SplitMix64, absent_prefix, present_prefix};
use bloomlsm::{Db, PrefixExtractor};
use serde_json::json;

use crate::phase::Recorder;
use crate::report::csv_line;
use crate::{CliError, CliResult, interrupt, progress, write_json};

use super::args::BenchArgs;
use super::scans::{
    CSV_HEADER, CsvStore, ScanFilter, ScanPhase, Tree, csv_row, fpr_text, shape, tree,
};
use super::sliding::{self, ScanChooser};
use super::stores::{KeyWriter, StoresHome, store_dir, store_options};

/// Keys per prefix.
pub const GROUP: u64 = 16;

/// What one store measured: its empty and non-empty phases.
struct StoreRun {
    /// Whether the store has the prefix extractor (and its filters).
    filtered: bool,
    shape: String,
    tree: Tree,
    load_secs: f64,
    empty: ScanPhase,
    found: ScanPhase,
}

impl StoreRun {
    fn phases(&self) -> [&ScanPhase; 2] {
        [&self.empty, &self.found]
    }
}

/// Runs the prefix study and writes its report (text, one JSON line per
/// store, or CSV): the store without prefix filters first, then the one
/// with them, against it.
pub fn run(args: &BenchArgs, out: &mut dyn Write) -> CliResult {
    let config = &args.configs[0];
    // The distribution is checked before the stores are loaded.
    ScanChooser::new(args.request_distribution, 0, 1, present_place).map_err(CliError::usage)?;
    let home = StoresHome::prepare(args)?;
    let text = !args.json && !args.csv;
    if text {
        write_header(out, args, &config.name)?;
    }
    if args.csv {
        writeln!(out, "{}", csv_line(CSV_HEADER))?;
    }
    let base = measure_store(args, &home, false)?;
    write_store(out, args, &config.name, &base, None)?;
    let run = measure_store(args, &home, true)?;
    write_store(out, args, &config.name, &run, Some(&base))?;
    Ok(())
}

/// Loads one store, with the prefix extractor or without, and runs its
/// phases.
fn measure_store(args: &BenchArgs, home: &StoresHome, filtered: bool) -> CliResult<StoreRun> {
    let config = &args.configs[0];
    let mut opts = store_options(args, config)?;
    if filtered {
        opts.prefix_extractor = Some(PrefixExtractor::Fixed(PREFIX_LEN));
    }
    let name = if filtered { "prefix" } else { "prefix-none" };
    let dir = store_dir(&home.path, &format!("{name}-{}", config.name))?;
    let db = interrupt::guard(|| Db::open(&dir, opts))?;
    let start = std::time::Instant::now();
    KeyWriter::prefixed(args, &db, GROUP).write(
        args,
        &db,
        0..args.keys,
        &format!("{name} {}", config.name),
        |_, _| Ok(()),
    )?;
    db.rebuild_filters()?;
    let load_secs = start.elapsed().as_secs_f64();
    let groups = args.keys.div_ceil(GROUP);
    let shape = shape(&db.stats());
    let tree = tree(&db);
    // One window for both phases, in order, placing each phase's prefixes
    // in the key order.
    let mut chooser = ScanChooser::new(
        args.request_distribution,
        args.seed,
        args.lookups,
        absent_place,
    )
    .map_err(CliError::usage)?;
    let empty = scan_phase(args, &db, &mut chooser, "empty", groups, absent_prefix)?;
    let mut chooser = chooser.replace(args.seed, present_place);
    let found = scan_phase(args, &db, &mut chooser, "non-empty", groups, present_prefix)?;
    if empty.keys != 0 {
        return Err(CliError::new(format!(
            "scans of absent prefixes returned {} keys",
            empty.keys
        )));
    }
    Ok(StoreRun {
        filtered,
        shape,
        tree,
        load_secs,
        empty,
        found,
    })
}

/// Writes one store's report in the run's format, against `base` (the
/// store without prefix filters; `None` for that store itself).
fn write_store(
    out: &mut dyn Write,
    args: &BenchArgs,
    config: &str,
    run: &StoreRun,
    base: Option<&StoreRun>,
) -> CliResult {
    let same_tree = base.is_none_or(|b| b.tree == run.tree);
    let bases = base.map(|b| b.phases());
    if args.json {
        write_json(out, &json_report(args, config, run, bases, same_tree))?;
    } else if args.csv {
        let store = CsvStore {
            workload: "prefix",
            filter: if run.filtered { "prefix" } else { "none" },
            range_bits: None,
            range_len: None,
            same_tree,
        };
        for (i, p) in run.phases().into_iter().enumerate() {
            writeln!(
                out,
                "{}",
                csv_line(&csv_row(&store, p, bases.map(|b| b[i])))
            )?;
        }
    } else {
        write_text(out, run, bases, same_tree)?;
    }
    out.flush()?;
    Ok(())
}

/// Group `g`'s present prefix as a number: its place in the key order.
fn present_place(seed: u64, g: u64) -> u64 {
    u64::from_be_bytes(present_prefix(seed, g))
}

/// Group `g`'s absent prefix as a number.
fn absent_place(seed: u64, g: u64) -> u64 {
    u64::from_be_bytes(absent_prefix(seed, g))
}

/// `--lookups` prefix scans of `prefix(seed, g)` for groups `g` drawn by
/// `chooser`.
fn scan_phase(
    args: &BenchArgs,
    db: &Db,
    chooser: &mut ScanChooser,
    name: &'static str,
    groups: u64,
    prefix: impl Fn(u64, u64) -> [u8; PREFIX_LEN],
) -> CliResult<ScanPhase> {
    let mut rng = SplitMix64::new(args.seed ^ 0x7363_616e ^ name.len() as u64);
    let pb = progress(
        Some(args.lookups),
        args.quiet,
        format!("{name} prefix scans"),
    );
    db.reset_stats();
    let mut rec = Recorder::start();
    let mut keys = 0u64;
    for i in 0..args.lookups {
        let p = prefix(args.seed, chooser.record(groups, &mut rng));
        let n = rec.time(1, || {
            db.scan_prefix(p).try_fold(0u64, |n, e| e.map(|_| n + 1))
        })?;
        keys += n;
        if i % 1024 == 0 {
            pb.set_position(i);
        }
    }
    pb.finish_and_clear();
    let s = db.stats();
    let phase = rec.finish(args.lookups, s.total.scan_bytes_read);
    Ok(ScanPhase {
        name,
        filter: ScanFilter::Prefix,
        phase,
        keys,
        levels: s
            .levels
            .iter()
            .filter(|l| l.files > 0)
            .map(|l| (l.level, l.io, l.prefix_predicted_fpr))
            .collect(),
        total: s.total,
    })
}

fn write_header(out: &mut dyn Write, args: &BenchArgs, config: &str) -> CliResult {
    writeln!(
        out,
        "prefix study: {} keys, {GROUP} per {PREFIX_LEN}-byte prefix, point filters {config}, \
         {} scans per phase, requests {}, block cache off, {} I/O; stores: no prefix \
         extractor (the baseline), then extractor fixed:{PREFIX_LEN} with prefix filters \
         blocked512 10 bits/prefix",
        args.keys,
        args.lookups,
        sliding::scan_distribution_name(args.request_distribution),
        args.io_name()
    )?;
    Ok(())
}

fn write_text(
    out: &mut dyn Write,
    run: &StoreRun,
    base: Option<[&ScanPhase; 2]>,
    same_tree: bool,
) -> CliResult {
    writeln!(out)?;
    if run.filtered {
        writeln!(
            out,
            "prefix filters (fixed:{PREFIX_LEN}): loaded in {:.1} s; shape {}; tree {}",
            run.load_secs,
            run.shape,
            if same_tree {
                "the same as the store without prefix filters' (files, key ranges, data bytes)"
            } else {
                "NOT the same as the store without prefix filters': the savings compare different trees"
            }
        )?;
    } else {
        writeln!(
            out,
            "no prefix filters (the baseline): loaded in {:.1} s; shape {}",
            run.load_secs, run.shape
        )?;
    }
    for (i, p) in run.phases().into_iter().enumerate() {
        let c = p.counts();
        writeln!(out)?;
        writeln!(
            out,
            "{} prefix scans: {:.2} keys/scan, {}; prefix filter checks {}, negatives {}, \
             false positives {}, unusable {}; FPR measured {} vs predicted {}",
            p.name,
            p.per_scan(p.keys),
            p.io_text(),
            c.checks,
            c.negatives,
            c.false_positives,
            c.unusable_reads,
            fpr_text(p.observed_fpr()),
            fpr_text(p.predicted_fpr()),
        )?;
        if let Some(b) = base {
            writeln!(out, "  {}", p.saved(b[i]).text())?;
        }
        writeln!(out, "{}", p.phase.latency_text())?;
        p.write_levels(out)?;
    }
    Ok(())
}

fn json_report(
    args: &BenchArgs,
    config: &str,
    run: &StoreRun,
    base: Option<[&ScanPhase; 2]>,
    same_tree: bool,
) -> serde_json::Value {
    json!({
        "workload": "prefix",
        "keys": args.keys,
        "keys_per_prefix": GROUP,
        "prefix_len": PREFIX_LEN,
        "prefix_filters": run.filtered,
        "baseline": !run.filtered,
        "same_tree_as_baseline": same_tree,
        "config": config,
        "distribution": sliding::scan_distribution_name(args.request_distribution),
        "io": args.io_name(),
        "shape": run.shape,
        "load_secs": run.load_secs,
        "empty": run.empty.json(base.map(|b| b[0])),
        "non_empty": run.found.json(base.map(|b| b[1])),
    })
}
