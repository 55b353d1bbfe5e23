//! `bench --workload prefix`: the prefix-filter study. One store (the first
//! `--configs` configuration's point filters, and a fixed
//! [`PREFIX_LEN`]-byte prefix extractor) is loaded with `--keys` keys of
//! [`GROUP`] keys per prefix ([`prefixed_key`](bloomlsm::workload::prefixed_key)); then `--lookups` prefix
//! scans of absent prefixes (empty scans) and as many of present ones, each
//! phase reporting what the store's counters saw: prefix-filter checks,
//! negatives and false positives per level, the measured FPR against the
//! levels' modelled one, data blocks read per scan, and latencies.

use std::io::Write;

use bloomlsm::workload::{PREFIX_LEN, SplitMix64, absent_prefix, present_prefix};
use bloomlsm::{Db, PrefixExtractor};
use serde_json::json;

use crate::phase::Recorder;
use crate::{CliError, CliResult, interrupt, progress, write_json};

use super::args::BenchArgs;
use super::scans::{ScanFilter, ScanPhase, fpr_text, shape};
use super::stores::{KeyWriter, StoresHome, store_dir, store_options};

/// Keys per prefix.
pub const GROUP: u64 = 16;

/// Runs the prefix study and writes its report (text, or one JSON line).
pub fn run(args: &BenchArgs, out: &mut dyn Write) -> CliResult {
    let config = &args.configs[0];
    let home = StoresHome::prepare(args)?;
    let mut opts = store_options(args, config)?;
    opts.prefix_extractor = Some(PrefixExtractor::Fixed(PREFIX_LEN));
    let dir = store_dir(&home.path, &format!("prefix-{}", config.name))?;
    let db = interrupt::guard(|| Db::open(&dir, opts))?;
    let start = std::time::Instant::now();
    KeyWriter::prefixed(args, &db, GROUP).write(
        args,
        &db,
        0..args.keys,
        &config.name,
        |_, _| Ok(()),
    )?;
    db.rebuild_filters()?;
    let load_secs = start.elapsed().as_secs_f64();
    let groups = args.keys.div_ceil(GROUP);
    let shape = shape(&db.stats());
    let empty = scan_phase(args, &db, "empty", groups, absent_prefix)?;
    let found = scan_phase(args, &db, "non-empty", groups, present_prefix)?;
    if empty.keys != 0 {
        return Err(CliError::new(format!(
            "scans of absent prefixes returned {} keys",
            empty.keys
        )));
    }
    if args.json {
        write_json(
            out,
            &json_report(args, &config.name, &shape, load_secs, &[&empty, &found]),
        )?;
    } else {
        write_text(
            out,
            args,
            &config.name,
            &shape,
            load_secs,
            &[&empty, &found],
        )?;
    }
    Ok(())
}

/// `--lookups` prefix scans of `prefix(seed, g)` for uniform groups `g`.
fn scan_phase(
    args: &BenchArgs,
    db: &Db,
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
        let p = prefix(args.seed, rng.below(groups));
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
    let phase = rec.finish(args.lookups, s.total.bytes_read);
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

fn write_text(
    out: &mut dyn Write,
    args: &BenchArgs,
    config: &str,
    shape: &str,
    load_secs: f64,
    phases: &[&ScanPhase],
) -> CliResult {
    writeln!(
        out,
        "prefix study: {} keys, {GROUP} per {PREFIX_LEN}-byte prefix (extractor fixed:{PREFIX_LEN}, \
         prefix filters blocked512 10 bits/prefix), point filters {config}, {} scans per phase, \
         block cache off, {} I/O",
        args.keys,
        args.lookups,
        args.io_name()
    )?;
    writeln!(out, "loaded in {load_secs:.1} s; shape {shape}")?;
    for p in phases {
        let c = p.counts();
        writeln!(out)?;
        writeln!(
            out,
            "{} prefix scans: {:.2} keys/scan, {:.3} data blocks read/scan; \
             prefix filter checks {}, negatives {}, false positives {}, unusable {}; \
             FPR measured {} vs predicted {}",
            p.name,
            p.per_scan(p.keys),
            p.per_scan(c.blocks),
            c.checks,
            c.negatives,
            c.false_positives,
            c.unusable_reads,
            fpr_text(p.observed_fpr()),
            fpr_text(p.predicted_fpr()),
        )?;
        writeln!(out, "{}", p.phase.latency_text())?;
        p.write_levels(out)?;
    }
    Ok(())
}

fn json_report(
    args: &BenchArgs,
    config: &str,
    shape: &str,
    load_secs: f64,
    phases: &[&ScanPhase],
) -> serde_json::Value {
    json!({
        "workload": "prefix",
        "keys": args.keys,
        "keys_per_prefix": GROUP,
        "prefix_len": PREFIX_LEN,
        "config": config,
        "io": args.io_name(),
        "shape": shape,
        "load_secs": load_secs,
        "empty": phases[0].json(),
        "non_empty": phases[1].json(),
    })
}
