//! `bench --workload range`: the range-filter study. One store without
//! range filters (the baseline), then one per `--range-bits` value with
//! range filters at those bits per key (each with the first `--configs`
//! configuration's point filters), is loaded with the same `--keys` random
//! 16-byte keys, whose points (first 8 bytes) spread over the whole 64-bit
//! space, written the same way (so with the same tree, which is checked:
//! a rebuild cannot add or drop the range filters of L0 files, so the
//! baseline is a load of its own); then, for each `--range-len` length `L`, scans
//! of `L` points bounded at both ends: a `--empty-fraction` share of
//! `--lookups` over empty ranges (from a random point, or with
//! `--correlated` one point past a present key's, where a scan resuming
//! past data starts) and the rest around a present key's point. Each phase
//! reports the range-filter checks, negatives and false positives per
//! level, the measured FPR against the levels' modelled `L / 2^(B−2)`,
//! data blocks read per scan (and of those, the ones that held entries of
//! the scan), requests and bytes, and latencies; each filtered store's
//! phases, what they saved against the baseline's.

use std::io::Write;
use std::ops::Bound;

use bloomlsm::workload::{SplitMix64, present_key};
use bloomlsm::{Bytes, Db};
use serde_json::json;

use crate::phase::Recorder;
use crate::report::csv_line;
use crate::{CliError, CliResult, interrupt, progress, write_json};

use super::args::{BenchArgs, check_plot_path};
use super::range_chart::{self, Curve};
use super::scans::{
    CSV_HEADER, CsvStore, ScanFilter, ScanPhase, Tree, csv_row, fpr_text, shape, signed_bytes, tree,
};
use super::sliding::{self, ScanChooser};
use super::stores::{KeyWriter, StoresHome, store_dir, store_options};

/// The phases of one range length.
struct LengthRun {
    len: u64,
    phases: Vec<ScanPhase>,
}

impl LengthRun {
    fn phase(&self, name: &str) -> Option<&ScanPhase> {
        self.phases.iter().find(|p| p.name == name)
    }
}

/// The runs of one store.
struct StoreRun {
    /// Range filter bits per key; `None` for the store without range
    /// filters.
    bits: Option<f64>,
    shape: String,
    tree: Tree,
    load_secs: f64,
    lengths: Vec<LengthRun>,
}

impl StoreRun {
    /// `16 b/k`, or `none`.
    fn label(&self) -> String {
        self.bits.map_or("none".to_string(), |b| format!("{b} b/k"))
    }

    /// The same phase of the same length in `base`.
    fn base_phase<'a>(base: &'a StoreRun, len: u64, name: &str) -> Option<&'a ScanPhase> {
        base.lengths.iter().find(|l| l.len == len)?.phase(name)
    }
}

/// Runs the range study and writes its report (text, one JSON line per
/// store, or CSV): the store without range filters first, then one per
/// `--range-bits` value, each against it.
pub fn run(args: &BenchArgs, out: &mut dyn Write) -> CliResult {
    let config = &args.configs[0];
    // The chart's path is checked before the (long) run starts.
    if let Some(path) = &args.plot {
        check_plot_path(path)?;
    }
    // The distribution is checked before the stores are loaded.
    ScanChooser::new(args.request_distribution, 0, 1, sliding::place).map_err(CliError::usage)?;
    let home = StoresHome::prepare(args)?;
    let text = !args.json && !args.csv;
    if text {
        write_header(out, args, &config.name)?;
    }
    if args.csv {
        writeln!(out, "{}", csv_line(CSV_HEADER))?;
    }
    let base = measure_store(args, &home, None)?;
    write_store(out, args, &config.name, &base, None)?;
    let mut runs = Vec::new();
    for bits in args.range_bits_list() {
        let run = measure_store(args, &home, Some(bits))?;
        write_store(out, args, &config.name, &run, Some(&base))?;
        runs.push(run);
    }
    if text {
        write_summary(out, &base, &runs)?;
    }
    if let Some(path) = &args.plot {
        let empty_blocks = |r: &StoreRun| -> Vec<(u64, f64)> {
            r.lengths
                .iter()
                .filter_map(|l| Some((l.len, l.phase("empty")?.blocks_per_scan())))
                .collect()
        };
        let curves: Vec<Curve> = runs
            .iter()
            .map(|r| Curve {
                bits: r.bits.unwrap_or_default(),
                points: r
                    .lengths
                    .iter()
                    .filter_map(|l| {
                        let fpr = l.phase("empty")?.total.observed_range_fpr()?;
                        (fpr > 0.0).then_some((l.len, fpr))
                    })
                    .collect(),
                blocks: empty_blocks(r),
            })
            .collect();
        let empty_scans = (args.lookups as f64 * args.empty_fraction()).round() as u64;
        range_chart::write(
            path,
            &curves,
            &empty_blocks(&base),
            &args.range_lens(),
            empty_scans,
        )?;
        if text {
            writeln!(out, "wrote {}", path.display())?;
        }
    }
    Ok(())
}

/// Loads one store (range filters at `bits` per key, or none) and runs
/// each length's phases on it.
fn measure_store(args: &BenchArgs, home: &StoresHome, bits: Option<f64>) -> CliResult<StoreRun> {
    let config = &args.configs[0];
    let opts = store_options(args, config)?.range_filter_bits_per_key(bits);
    let name = bits.map_or("none".to_string(), |b| b.to_string());
    let dir = store_dir(&home.path, &format!("range-{name}-{}", config.name))?;
    let db = interrupt::guard(|| Db::open(&dir, opts))?;
    let start = std::time::Instant::now();
    let label = bits.map_or("range none".to_string(), |b| format!("range {b} b/k"));
    KeyWriter::new(args, &db).write(args, &db, 0..args.keys, &label, |_, _| Ok(()))?;
    db.rebuild_filters()?;
    let load_secs = start.elapsed().as_secs_f64();
    let s = db.stats();
    let mut run = StoreRun {
        bits,
        shape: shape(&s),
        tree: tree(&db),
        load_secs,
        lengths: Vec::new(),
    };
    let empty_scans = (args.lookups as f64 * args.empty_fraction()).round() as u64;
    // One window for the store's phases, in order: every store sees the
    // same windows.
    let mut chooser = ScanChooser::new(
        args.request_distribution,
        args.seed,
        args.lookups,
        sliding::place,
    )
    .map_err(CliError::usage)?;
    for len in args.range_lens() {
        let mut phases = Vec::new();
        if empty_scans > 0 {
            let p = scan_phase(args, &db, &mut chooser, "empty", len, empty_scans)?;
            if p.keys != 0 {
                return Err(CliError::new(format!(
                    "scans of empty ranges of {len} points returned {} keys",
                    p.keys
                )));
            }
            phases.push(p);
        }
        if empty_scans < args.lookups {
            phases.push(scan_phase(
                args,
                &db,
                &mut chooser,
                "non-empty",
                len,
                args.lookups - empty_scans,
            )?);
        }
        run.lengths.push(LengthRun { len, phases });
    }
    drop(db);
    Ok(run)
}

/// Writes one store's report in the run's format, against `base` (the
/// store without range filters; `None` for that store itself).
fn write_store(
    out: &mut dyn Write,
    args: &BenchArgs,
    config: &str,
    run: &StoreRun,
    base: Option<&StoreRun>,
) -> CliResult {
    let same_tree = base.is_none_or(|b| b.tree == run.tree);
    if args.json {
        write_json(out, &json_report(args, config, run, base, same_tree))?;
    } else if args.csv {
        for l in &run.lengths {
            let store = CsvStore {
                workload: "range",
                filter: if run.bits.is_some() { "range" } else { "none" },
                range_bits: run.bits,
                range_len: Some(l.len),
                same_tree,
            };
            for p in &l.phases {
                let b = base.and_then(|b| StoreRun::base_phase(b, l.len, p.name));
                writeln!(out, "{}", csv_line(&csv_row(&store, p, b)))?;
            }
        }
    } else {
        write_text(out, run, base, same_tree)?;
    }
    out.flush()?;
    Ok(())
}

/// The point of present key `i`.
fn present_point(args: &BenchArgs, i: u64) -> u64 {
    bloomlsm::filter::key_point(&present_key(args.seed, i))
}

/// The bounds of the keys whose points lie in `lo..=hi`: from the 8-byte
/// key of `lo` to one past every 16-byte key with point `hi`.
fn bounds(lo: u64, hi: u64) -> (Bound<Bytes>, Bound<Bytes>) {
    let mut end = hi.to_be_bytes().to_vec();
    end.extend_from_slice(&[0xff; 9]);
    (
        Bound::Included(Bytes::copy_from_slice(&lo.to_be_bytes())),
        Bound::Included(Bytes::from(end)),
    )
}

/// `n` scans of `len` points: empty ones (from a random point, or one past
/// a present key's with `--correlated`), or ones holding a present key's
/// point at a random place; points and keys drawn by `chooser`.
fn scan_phase(
    args: &BenchArgs,
    db: &Db,
    chooser: &mut ScanChooser,
    name: &'static str,
    len: u64,
    n: u64,
) -> CliResult<ScanPhase> {
    let mut rng = SplitMix64::new(args.seed ^ 0x7261_6e67 ^ len ^ ((name.len() as u64) << 40));
    let pb = progress(Some(n), args.quiet, format!("{name} range scans of {len}"));
    db.reset_stats();
    let mut rec = Recorder::start();
    let mut keys = 0u64;
    for i in 0..n {
        let lo = if name == "empty" {
            if args.correlated {
                present_point(args, chooser.record(args.keys, &mut rng)).saturating_add(1)
            } else {
                chooser.point_below(&mut rng, u64::MAX - (len - 1))
            }
        } else {
            present_point(args, chooser.record(args.keys, &mut rng)).saturating_sub(rng.below(len))
        };
        let hi = lo.saturating_add(len - 1);
        let range = bounds(lo, hi);
        let got = rec.time(1, || {
            db.scan(range.clone())
                .try_fold(0u64, |n, e| e.map(|_| n + 1))
        })?;
        keys += got;
        if i % 1024 == 0 {
            pb.set_position(i);
        }
    }
    pb.finish_and_clear();
    let s = db.stats();
    let phase = rec.finish(n, s.total.scan_bytes_read);
    Ok(ScanPhase {
        name,
        filter: ScanFilter::Range,
        phase,
        keys,
        levels: s
            .levels
            .iter()
            .filter(|l| l.files > 0)
            .map(|l| (l.level, l.io, l.range_predicted_fpr(len)))
            .collect(),
        total: s.total,
    })
}

fn write_header(out: &mut dyn Write, args: &BenchArgs, config: &str) -> CliResult {
    writeln!(
        out,
        "range study: {} keys (16 random bytes, points = first 8), point filters {config}, \
         {} scans per length ({:.0}% empty, {}), requests {}, block cache off, {} I/O; \
         stores: no range filters (the baseline), then range filters at {} bits/key",
        args.keys,
        args.lookups,
        args.empty_fraction() * 100.0,
        if args.correlated {
            "empty ones starting one point past a key"
        } else {
            "empty ones starting at random points"
        },
        sliding::scan_distribution_name(args.request_distribution),
        args.io_name(),
        args.range_bits_list()
            .iter()
            .map(f64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    Ok(())
}

fn write_text(
    out: &mut dyn Write,
    run: &StoreRun,
    base: Option<&StoreRun>,
    same_tree: bool,
) -> CliResult {
    writeln!(out)?;
    match run.bits {
        Some(bits) => writeln!(
            out,
            "range filters {bits} bits/key: loaded in {:.1} s; shape {}; tree {}",
            run.load_secs,
            run.shape,
            if same_tree {
                "the same as the store without range filters' (files, key ranges, data bytes)"
            } else {
                "NOT the same as the store without range filters': the savings compare different trees"
            }
        )?,
        None => writeln!(
            out,
            "no range filters (the baseline): loaded in {:.1} s; shape {}",
            run.load_secs, run.shape
        )?,
    }
    for l in &run.lengths {
        for p in &l.phases {
            let c = p.counts();
            writeln!(out)?;
            writeln!(
                out,
                "L={} {} scans: {:.2} keys/scan, {}; {:.2} files checked/scan; negatives {}, \
                 false positives {}, unusable {}; FPR measured {} vs predicted {}",
                l.len,
                p.name,
                p.per_scan(p.keys),
                p.io_text(),
                p.per_scan(c.checks),
                c.negatives,
                c.false_positives,
                c.unusable_reads,
                fpr_text(p.observed_fpr()),
                fpr_text(p.predicted_fpr()),
            )?;
            if let Some(b) = base.and_then(|b| StoreRun::base_phase(b, l.len, p.name)) {
                writeln!(out, "  {}", p.saved(b).text())?;
            }
            writeln!(out, "{}", p.phase.latency_text())?;
            p.write_levels(out)?;
        }
    }
    Ok(())
}

/// The table of every store's phases per scan: data blocks touched and
/// useful, requests and bytes, and what each filtered store saved against
/// the store without range filters.
fn write_summary(out: &mut dyn Write, base: &StoreRun, runs: &[StoreRun]) -> CliResult {
    writeln!(out)?;
    writeln!(
        out,
        "per scan, each store against the one without range filters (the same keys and tree):"
    )?;
    writeln!(
        out,
        "  {:>6} {:<9} {:>8} {:>8} {:>8} {:>9} {:>10} {:>15} {:>11} {:>9}",
        "L",
        "phase",
        "filters",
        "blocks",
        "useful",
        "requests",
        "bytes",
        "blocks saved",
        "bytes saved",
        "req saved"
    )?;
    for l in &base.lengths {
        for p in &l.phases {
            for r in std::iter::once(base).chain(runs) {
                let Some(q) = r
                    .lengths
                    .iter()
                    .find(|m| m.len == l.len)
                    .and_then(|m| m.phase(p.name))
                else {
                    continue;
                };
                let (blocks, bytes, requests) = if r.bits.is_some() {
                    let s = q.saved(p);
                    (
                        format!("{:.3} ({})", s.blocks, s.fraction_text()),
                        signed_bytes(s.bytes),
                        format!("{:.3}", s.requests),
                    )
                } else {
                    ("-".into(), "-".into(), "-".into())
                };
                writeln!(
                    out,
                    "  {:>6} {:<9} {:>8} {:>8.3} {:>8.3} {:>9.3} {:>10} {:>15} {:>11} {:>9}",
                    l.len,
                    p.name,
                    r.label(),
                    q.blocks_per_scan(),
                    q.useful_blocks_per_scan(),
                    q.requests_per_scan(),
                    signed_bytes(q.bytes_per_scan()),
                    blocks,
                    bytes,
                    requests,
                )?;
            }
        }
    }
    Ok(())
}

fn json_report(
    args: &BenchArgs,
    config: &str,
    run: &StoreRun,
    base: Option<&StoreRun>,
    same_tree: bool,
) -> serde_json::Value {
    let find = |l: &LengthRun, name: &str| {
        l.phase(name).map_or(serde_json::Value::Null, |p| {
            p.json(base.and_then(|b| StoreRun::base_phase(b, l.len, name)))
        })
    };
    json!({
        "workload": "range",
        "keys": args.keys,
        "range_bits": run.bits,
        "baseline": run.bits.is_none(),
        "same_tree_as_baseline": same_tree,
        "config": config,
        "io": args.io_name(),
        "empty_fraction": args.empty_fraction(),
        "correlated": args.correlated,
        "distribution": sliding::scan_distribution_name(args.request_distribution),
        "shape": run.shape,
        "load_secs": run.load_secs,
        "lengths": run.lengths.iter().map(|l| json!({
            "range_len": l.len,
            "empty": find(l, "empty"),
            "non_empty": find(l, "non-empty"),
        })).collect::<Vec<_>>(),
    })
}
