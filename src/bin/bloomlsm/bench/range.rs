//! `bench --workload range`: the range-filter study. For each
//! `--range-bits` value, one store (the first `--configs` configuration's
//! point filters, and range filters at those bits per key) is loaded with
//! `--keys` random 16-byte keys, whose points (first 8 bytes) spread over
//! the whole 64-bit space; then, for each `--range-len` length `L`, scans
//! of `L` points bounded at both ends: a `--empty-fraction` share of
//! `--lookups` over empty ranges (from a random point, or with
//! `--correlated` one point past a present key's, where a scan resuming
//! past data starts) and the rest around a present key's point. Each phase
//! reports the range-filter checks, negatives and false positives per
//! level, the measured FPR against the levels' modelled `L / 2^(B−2)`,
//! data blocks read per scan, and latencies.

use std::io::Write;
use std::ops::Bound;

use bloomlsm::workload::{SplitMix64, present_key};
use bloomlsm::{Bytes, Db};
use serde_json::json;

use crate::phase::Recorder;
use crate::{CliError, CliResult, interrupt, progress, write_json};

use super::args::{BenchArgs, check_plot_path};
use super::range_chart::{self, Curve};
use super::scans::{ScanFilter, ScanPhase, fpr_text, shape};
use super::stores::{KeyWriter, StoresHome, store_dir, store_options};

/// The phases of one range length.
struct LengthRun {
    len: u64,
    phases: Vec<ScanPhase>,
}

/// The runs of one store.
struct BitsRun {
    bits: f64,
    shape: String,
    load_secs: f64,
    lengths: Vec<LengthRun>,
}

/// Runs the range study and writes its report (text, or one JSON line per
/// `--range-bits` value).
pub fn run(args: &BenchArgs, out: &mut dyn Write) -> CliResult {
    let config = &args.configs[0];
    // The chart's path is checked before the (long) run starts.
    if let Some(path) = &args.plot {
        check_plot_path(path)?;
    }
    let home = StoresHome::prepare(args)?;
    let mut curves = Vec::new();
    if !args.json {
        write_header(out, args, &config.name)?;
    }
    for bits in args.range_bits_list() {
        let mut opts = store_options(args, config)?;
        opts = opts.range_filter_bits_per_key(Some(bits));
        let dir = store_dir(&home.path, &format!("range-{bits}-{}", config.name))?;
        let db = interrupt::guard(|| Db::open(&dir, opts))?;
        let start = std::time::Instant::now();
        KeyWriter::new(args, &db).write(
            args,
            &db,
            0..args.keys,
            &format!("range {bits} b/k"),
            |_, _| Ok(()),
        )?;
        db.rebuild_filters()?;
        let load_secs = start.elapsed().as_secs_f64();
        let mut run = BitsRun {
            bits,
            shape: shape(&db.stats()),
            load_secs,
            lengths: Vec::new(),
        };
        let empty_scans = (args.lookups as f64 * args.empty_fraction()).round() as u64;
        for len in args.range_lens() {
            let mut phases = Vec::new();
            if empty_scans > 0 {
                let p = scan_phase(args, &db, "empty", len, empty_scans)?;
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
                    "non-empty",
                    len,
                    args.lookups - empty_scans,
                )?);
            }
            run.lengths.push(LengthRun { len, phases });
        }
        drop(db);
        if args.json {
            write_json(out, &json_report(args, &config.name, &run))?;
        } else {
            write_text(out, &run)?;
        }
        curves.push(Curve {
            bits,
            points: run
                .lengths
                .iter()
                .filter_map(|l| {
                    let empty = l.phases.iter().find(|p| p.name == "empty")?;
                    let fpr = empty.total.observed_range_fpr()?;
                    (fpr > 0.0).then_some((l.len, fpr))
                })
                .collect(),
        });
    }
    if let Some(path) = &args.plot {
        let empty_scans = (args.lookups as f64 * args.empty_fraction()).round() as u64;
        range_chart::write(path, &curves, &args.range_lens(), empty_scans)?;
        if !args.json {
            writeln!(out, "wrote {}", path.display())?;
        }
    }
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
/// point at a random place.
fn scan_phase(
    args: &BenchArgs,
    db: &Db,
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
                present_point(args, rng.below(args.keys)).saturating_add(1)
            } else {
                rng.below(u64::MAX - (len - 1))
            }
        } else {
            present_point(args, rng.below(args.keys)).saturating_sub(rng.below(len))
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
    let phase = rec.finish(n, s.total.bytes_read);
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
         {} scans per length ({:.0}% empty, {}), block cache off, {} I/O",
        args.keys,
        args.lookups,
        args.empty_fraction() * 100.0,
        if args.correlated {
            "empty ones starting one point past a key"
        } else {
            "empty ones starting at random points"
        },
        args.io_name()
    )?;
    Ok(())
}

fn write_text(out: &mut dyn Write, run: &BitsRun) -> CliResult {
    writeln!(out)?;
    writeln!(
        out,
        "range filters {} bits/key: loaded in {:.1} s; shape {}",
        run.bits, run.load_secs, run.shape
    )?;
    for l in &run.lengths {
        for p in &l.phases {
            let c = p.counts();
            writeln!(out)?;
            writeln!(
                out,
                "L={} {} scans: {:.2} keys/scan, {:.3} data blocks read/scan, {:.2} files \
                 checked/scan; negatives {}, false positives {}, unusable {}; FPR measured {} \
                 vs predicted {}",
                l.len,
                p.name,
                p.per_scan(p.keys),
                p.per_scan(c.blocks),
                p.per_scan(c.checks),
                c.negatives,
                c.false_positives,
                c.unusable_reads,
                fpr_text(p.observed_fpr()),
                fpr_text(p.predicted_fpr()),
            )?;
            writeln!(out, "{}", p.phase.latency_text())?;
            p.write_levels(out)?;
        }
    }
    Ok(())
}

fn json_report(args: &BenchArgs, config: &str, run: &BitsRun) -> serde_json::Value {
    let find = |l: &LengthRun, name: &str| {
        l.phases
            .iter()
            .find(|p| p.name == name)
            .map_or(serde_json::Value::Null, ScanPhase::json)
    };
    json!({
        "workload": "range",
        "keys": args.keys,
        "range_bits": run.bits,
        "config": config,
        "io": args.io_name(),
        "empty_fraction": args.empty_fraction(),
        "correlated": args.correlated,
        "shape": run.shape,
        "load_secs": run.load_secs,
        "lengths": run.lengths.iter().map(|l| json!({
            "range_len": l.len,
            "empty": find(l, "empty"),
            "non_empty": find(l, "non-empty"),
        })).collect::<Vec<_>>(),
    })
}
