//! `bench --benchmarks LIST`: RocksDB db_bench's basic workloads under its
//! names, run in order on one store, each reported in db_bench's line format
//! (`micros/op`, `ops/sec`, `MB/s`, and its `--histogram` percentiles) so
//! that results sit beside db_bench's, plus what db_bench does not show: the
//! filters' observed false-positive rate next to the model's, and data
//! blocks and bytes read per lookup, and the storage requests behind them
//! ([`remote`]). YCSB's core workloads run among them ([`ycsb`]), and
//! readwhilewriting can be sampled over time ([`timeseries`]).
//!
//! The store runs as an application's would: compactions on their
//! background thread (the study's stores run them on the caller thread so
//! that their shape depends on the writes alone).

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bloomlsm::fs::latency::LatencyFs;
use bloomlsm::{Db, Stats};
use serde_json::json;

use crate::phase::{Phase, Recorder};
use crate::report::{shape_line, tickers_json, tickers_text};
use crate::workload::{SplitMix64, ValueSource, absent_key, present_key};
use crate::{CliError, CliResult, interrupt, progress, write_json};

use super::args::{BenchArgs, check_plot_path};
use super::benchmarks::Benchmark;
use super::bucket::{self, BucketCount};
use super::configs::{BenchConfig, DEFAULT_CONFIGS, parse_config};
use super::remote::{self, Requests, Snapshot};
use super::row::predicted_fpr;
use super::series_chart;
use super::stores::{StoresHome, existing_store_dir, store_dir, store_options};
use super::timeseries::{self, Sample, Sampler};
use super::ycsb;

/// The configuration the workloads run with: the first of `--configs`,
/// or blocked10 when `--configs` was left at the study's default list.
fn chosen_config(args: &BenchArgs) -> CliResult<BenchConfig> {
    let names: Vec<&str> = args.configs.iter().map(|c| c.name.as_str()).collect();
    if names.join(",") == DEFAULT_CONFIGS {
        return parse_config("blocked10").map_err(CliError::new);
    }
    args.configs
        .first()
        .cloned()
        .ok_or_else(|| CliError::usage("--configs is empty"))
}

/// What one workload measured.
struct Outcome {
    bench: Benchmark,
    phase: Phase,
    /// Latency at P50, P75, P99, P99.9 and P99.99, ns.
    percentiles_ns: [u64; 5],
    /// Key and value bytes written, or read by the lookups that found one.
    bytes: u64,
    /// Reads: lookups that found an entry.
    found: Option<u64>,
    /// Gets: the store's counters over the workload.
    stats: Option<Stats>,
    /// readwhilewriting: the writer's puts meanwhile.
    writer_puts: Option<u64>,
    /// readwhilewriting: its samples over time.
    series: Vec<Sample>,
    /// Reads: the storage requests they made.
    requests: Option<Requests>,
    /// Writes with --writes-per-range-tombstone: the range deletes made.
    range_deletes: Option<u64>,
    /// Writes with --store: the bucket's uploads meanwhile (flushes and
    /// compactions).
    uploads: Option<BucketCount>,
}

/// db_bench's --range_tombstone_width default.
const DEFAULT_RANGE_TOMBSTONE_WIDTH: u64 = 100;

/// The range `[start, end)` of a range delete from `start`, a present key,
/// over about `width` of the `n` present keys: their first eight bytes are
/// uniform over the 64-bit integers, so `end` is `start`'s first eight bytes
/// plus `width` times the mean gap between keys.
fn tombstone_range(start: [u8; 16], width: u64, n: u64) -> ([u8; 16], [u8; 8]) {
    let point = u64::from_be_bytes(start[..8].try_into().expect("eight bytes"));
    let gap = u64::MAX / n.max(1);
    (
        start,
        point
            .saturating_add(width.saturating_mul(gap))
            .to_be_bytes(),
    )
}

/// db_bench's `--histogram` percentiles.
const DB_BENCH_PERCENTILES: [f64; 5] = [50.0, 75.0, 99.0, 99.9, 99.99];

/// Operations between two updates of a progress bar.
const STEP: u64 = 4096;

/// Runs `benchmarks` in order on one store and writes db_bench's lines (or,
/// with `--json`, one object per workload) to `out`.
pub fn run(args: &BenchArgs, benchmarks: &[Benchmark], out: &mut dyn Write) -> CliResult {
    let config = chosen_config(args)?;
    // The series' outputs are checked before the run.
    let series_format = args
        .timeseries
        .as_deref()
        .map(timeseries::check_path)
        .transpose()?;
    if let Some(path) = &args.plot {
        check_plot_path(path)?;
    }
    if (args.timeseries.is_some() || args.plot.is_some())
        && !benchmarks.contains(&Benchmark::ReadWhileWriting)
    {
        return Err(CliError::usage(
            "--timeseries and --plot with --benchmarks draw readwhilewriting's time series: list readwhilewriting",
        ));
    }
    let mut series: Option<Vec<Sample>> = None;
    let args = BenchArgs {
        configs: vec![config.clone()],
        ..args.clone()
    };
    let args = &args;
    let mut opts = store_options(args, &config)?;
    opts.background_compaction = true;
    // Removes a temporary home when dropped, at the end of the run.
    let home = StoresHome::prepare(args)?;
    let dir = if args.use_existing_db {
        existing_store_dir(&home.path, &config.name)?
    } else {
        store_dir(&home.path, &config.name)?
    };
    let inner = match &args.store {
        Some(url) => bucket::for_benchmarks(args, url, &dir, &home.path)?,
        None => opts.fs.clone(),
    };
    let fs = remote::wrap(args, inner)?;
    opts.fs = fs.clone();
    let db = interrupt::guard(|| Db::open(&dir, opts))?;
    if !args.json {
        writeln!(
            out,
            "bloomlsm db_bench-style workloads: {} ({}), io {}",
            config.name,
            config.policy(),
            args.io_name()
        )?;
        writeln!(out, "Keys:       16 bytes each")?;
        writeln!(out, "Values:     {} bytes each", args.value_size)?;
        writeln!(
            out,
            "Entries:    {} (puts per write benchmark); {} lookups per read benchmark",
            args.keys, args.lookups
        )?;
        writeln!(
            out,
            "Storage:    read latency {}",
            remote::describe(fs.latency())
        )?;
        if let Some(url) = &args.store {
            writeln!(
                out,
                "Bucket:     tables in {url} ({}), disk cache {} in {} chunks",
                bucket::endpoint(),
                crate::report::bytes(args.bucket_cache_bytes),
                crate::report::bytes(args.bucket_chunk_bytes)
            )?;
        }
        if benchmarks.iter().any(|b| matches!(b, Benchmark::Ycsb(_))) {
            writeln!(
                out,
                "YCSB:       {} operations per workload on the --keys records; {} of reads ask for absent keys",
                args.lookups,
                args.miss_fraction.unwrap_or(0.0)
            )?;
        }
        writeln!(out, "------------------------------------------------")?;
        out.flush()?;
    }
    let values = ValueSource::new(
        args.seed ^ 0x7661_6c75,
        args.value_ratio,
        args.value_size as usize,
    );
    // Records of the YCSB workloads: the loaded keys, then their inserts.
    let mut records = args.keys;
    let drawn = std::cell::Cell::new(0u64);
    for (i, &b) in benchmarks.iter().enumerate() {
        // Each workload draws its own keys: the same whatever ran before.
        let seed = args.seed ^ (0x6462_6265_6e63_6800 + i as u64);
        if let Benchmark::Ycsb(w) = b {
            let ctx = ycsb::Ctx {
                args,
                db: &db,
                fs: &fs,
                values: &values,
                drawn: &drawn,
            };
            ycsb::run(&ctx, w, b.name(), seed, &mut records, out)?;
            out.flush()?;
            continue;
        }
        let o = if b.is_step() {
            run_step(&db, b)?
        } else if b.writes() {
            write_keys(args, &db, &fs, &values, b, seed)?
        } else {
            read_keys(args, &db, &fs, &values, b, seed)?
        };
        if args.json {
            let mut v = json_outcome(&config, &o);
            if args.statistics
                && let Some(s) = &o.stats
            {
                v["tickers"] = tickers_json(s);
            }
            write_json(out, &v)?;
        } else {
            write_text(out, &o)?;
            if args.statistics
                && let Some(s) = &o.stats
            {
                write!(out, "STATISTICS:\n{}", tickers_text(s))?;
            }
        }
        out.flush()?;
        if b == Benchmark::ReadWhileWriting && series.is_none() {
            series = Some(o.series);
        }
    }
    if let Some(samples) = &series {
        write_series(args, &config, samples, series_format, out)?;
    }
    if !args.json {
        let stats = db.stats();
        // The filter memory the configuration spends, to compare designs at
        // equal memory.
        let entries: u64 = stats.levels.iter().map(|l| l.entries).sum();
        writeln!(
            out,
            "filters: {} bytes, {:.2} bits/key over {entries} entries",
            stats.filter_bytes,
            stats.filter_bytes as f64 * 8.0 / entries.max(1) as f64
        )?;
        writeln!(out, "shape: {}", shape_line(&stats))?;
    }
    db.close()?;
    if !home.keep {
        bucket::remove_benchmarks_store()?;
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}

/// flush, waitforcompaction: the one call, timed, so that the reads after
/// it see the fill in files rather than wherever a background flush left it.
fn run_step(db: &Db, b: Benchmark) -> CliResult<Outcome> {
    let mut rec = Recorder::start();
    rec.time(1, || match b {
        Benchmark::Flush => db.flush(),
        _ => db.wait_for_compaction(),
    })?;
    let percentiles_ns = DB_BENCH_PERCENTILES.map(|p| rec.value_at_percentile(p));
    Ok(Outcome {
        bench: b,
        phase: rec.finish(1, 0),
        percentiles_ns,
        bytes: 0,
        found: None,
        stats: None,
        writer_puts: None,
        series: Vec::new(),
        requests: None,
        range_deletes: None,
        uploads: None,
    })
}

/// fillseq, fillrandom, overwrite: `--keys` puts, each timed.
fn write_keys(
    args: &BenchArgs,
    db: &Db,
    fs: &LatencyFs,
    values: &ValueSource,
    b: Benchmark,
    seed: u64,
) -> CliResult<Outcome> {
    let n = args.keys;
    let order: Vec<u64> = match b {
        Benchmark::FillSeq => {
            let mut idx: Vec<u64> = (0..n).collect();
            idx.sort_unstable_by_key(|&i| present_key(args.seed, i));
            idx
        }
        // The study's keys are pseudo-random: index order is random key order.
        Benchmark::FillRandom => (0..n).collect(),
        _ => {
            let mut rng = SplitMix64::new(seed);
            (0..n).map(|_| rng.below(n)).collect()
        }
    };
    let pb = progress(Some(n), args.quiet, b.name());
    let mut value = Vec::with_capacity(args.value_size as usize);
    let mut tombstones = SplitMix64::new(seed ^ 0x7261_6e67_6564_656c);
    let width = args
        .range_tombstone_width
        .unwrap_or(DEFAULT_RANGE_TOMBSTONE_WIDTH);
    let mut range_deletes = 0u64;
    let before = Snapshot::take(fs);
    let mut rec = Recorder::start();
    for (j, &idx) in order.iter().enumerate() {
        if let Some(every) = args.writes_per_range_tombstone
            && j as u64 % every == every - 1
        {
            let start = present_key(args.seed, tombstones.below(n));
            let (start, end) = tombstone_range(start, width, n);
            db.delete_range(start, end)?;
            range_deletes += 1;
        }
        // Overwrites write values the fill did not.
        let vi = if b == Benchmark::Overwrite {
            idx + n
        } else {
            idx
        };
        values.value(vi, &mut value);
        rec.time(1, || db.put(present_key(args.seed, idx), &value))?;
        if j as u64 % STEP == STEP - 1 {
            pb.inc(STEP);
        }
    }
    pb.finish_and_clear();
    let percentiles_ns = DB_BENCH_PERCENTILES.map(|p| rec.value_at_percentile(p));
    let phase = rec.finish(n, 0);
    Ok(Outcome {
        bench: b,
        phase,
        percentiles_ns,
        bytes: n * (16 + args.value_size as u64),
        found: None,
        stats: None,
        writer_puts: None,
        series: Vec::new(),
        requests: None,
        range_deletes: args.writes_per_range_tombstone.map(|_| range_deletes),
        uploads: Snapshot::take(fs).bucket_since(&before),
    })
}

/// Writes the first readwhilewriting's series to `--timeseries` and its
/// chart to `--plot`, and says where.
fn write_series(
    args: &BenchArgs,
    config: &BenchConfig,
    samples: &[Sample],
    format: Option<timeseries::Format>,
    out: &mut dyn Write,
) -> CliResult {
    let mut wrote = Vec::new();
    if let (Some(path), Some(format)) = (&args.timeseries, format) {
        interrupt::remove_on_interrupt(crate::plot::temp_path(path));
        timeseries::write(path, format, args.stats_interval_ms, samples)?;
        wrote.push(path);
    }
    if let Some(path) = &args.plot {
        interrupt::remove_on_interrupt(crate::plot::temp_path(path));
        series_chart::write(path, samples, args.stats_interval_ms, &config.name)?;
        wrote.push(path);
    }
    for path in wrote {
        if args.json {
            if !args.quiet {
                eprintln!("wrote {}", path.display());
            }
        } else {
            writeln!(
                out,
                "wrote {} ({} samples of readwhilewriting)",
                path.display(),
                samples.len()
            )?;
        }
    }
    Ok(())
}

/// readrandom, readmissing, seekrandom, readwhilewriting: `--lookups`
/// reads, each timed, from zeroed store counters.
fn read_keys(
    args: &BenchArgs,
    db: &Db,
    fs: &LatencyFs,
    values: &ValueSource,
    b: Benchmark,
    seed: u64,
) -> CliResult<Outcome> {
    let n = args.lookups;
    let stop = AtomicBool::new(false);
    let puts = AtomicU64::new(0);
    let (outcome, writer) = std::thread::scope(|s| {
        let writer = (b == Benchmark::ReadWhileWriting).then(|| {
            s.spawn(|| -> CliResult {
                let mut rng = SplitMix64::new(seed ^ 0x7772_6974_6572);
                let mut value = Vec::with_capacity(args.value_size as usize);
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let idx = rng.below(args.keys);
                    values.value(idx + 2 * args.keys + i, &mut value);
                    db.put(present_key(args.seed, idx), &value)?;
                    i += 1;
                    puts.store(i, Ordering::Relaxed);
                }
                Ok(())
            })
        });
        let outcome = read_phase(args, db, fs, b, seed, n, &puts);
        stop.store(true, Ordering::Relaxed);
        let writer = writer.map(|w| {
            w.join()
                .unwrap_or_else(|_| Err(CliError::new("the writer thread panicked")))
        });
        (outcome, writer)
    });
    if let Some(w) = writer {
        w?;
    }
    let mut o = outcome?;
    if b == Benchmark::ReadWhileWriting {
        o.writer_puts = Some(puts.load(Ordering::Relaxed));
    }
    Ok(o)
}

/// The reads of [`read_keys`] on the calling thread.
fn read_phase(
    args: &BenchArgs,
    db: &Db,
    fs: &LatencyFs,
    b: Benchmark,
    seed: u64,
    n: u64,
    puts: &AtomicU64,
) -> CliResult<Outcome> {
    let pb = progress(Some(n), args.quiet, b.name());
    let mut rng = SplitMix64::new(seed);
    let (mut found, mut bytes) = (0u64, 0u64);
    db.reset_stats();
    let mut sampler = (b == Benchmark::ReadWhileWriting)
        .then(|| Sampler::start(Duration::from_millis(args.stats_interval_ms), db));
    let before = Snapshot::take(fs);
    let mut rec = Recorder::start();
    for j in 0..n {
        let hit = match b {
            Benchmark::ReadMissing => rec.time(1, || db.get(absent_key(args.seed, j)))?,
            Benchmark::SeekRandom => {
                let key = present_key(args.seed, rng.below(args.keys));
                rec.time(1, || {
                    let mut it = db.scan(..);
                    it.seek(key);
                    it.next().transpose()
                })?
                .map(|(k, v)| {
                    bytes += k.len() as u64;
                    v
                })
            }
            _ => rec.time(1, || db.get(present_key(args.seed, rng.below(args.keys))))?,
        };
        if let Some(v) = hit {
            found += 1;
            if b != Benchmark::SeekRandom {
                bytes += 16;
            }
            bytes += v.len() as u64;
        }
        if let Some(s) = &mut sampler {
            s.record(rec.last_ns());
            // The clock is read every 64 reads, not every one.
            if j % 64 == 63 && s.due() {
                s.sample(db, j + 1, puts.load(Ordering::Relaxed));
            }
        }
        if j % STEP == STEP - 1 {
            pb.inc(STEP);
        }
    }
    let series = sampler.map_or_else(Vec::new, |s| s.finish(db, n, puts.load(Ordering::Relaxed)));
    let stats = db.stats();
    let requests = Requests::new(
        before,
        Snapshot::take(fs),
        n,
        &stats,
        args.price_per_million_gets,
    );
    let percentiles_ns = DB_BENCH_PERCENTILES.map(|p| rec.value_at_percentile(p));
    let phase = rec.finish(n, stats.total.bytes_read);
    pb.finish_and_clear();
    Ok(Outcome {
        bench: b,
        phase,
        percentiles_ns,
        bytes,
        found: Some(found),
        // Seeks consult no filter, and the store's counters count gets only.
        stats: (b != Benchmark::SeekRandom).then_some(stats),
        writer_puts: None,
        series,
        requests: Some(requests),
        range_deletes: None,
        uploads: None,
    })
}

impl Outcome {
    fn secs(&self) -> f64 {
        self.phase.mean_ns * self.phase.ops as f64 / 1e9
    }

    fn ops_per_sec(&self) -> f64 {
        self.phase.ops as f64 / self.secs().max(1e-9)
    }

    /// MB/s (10^6 bytes, as db_bench's) of the key and value bytes; `None`
    /// when the workload moved none (no key found).
    fn mb_per_sec(&self) -> Option<f64> {
        (self.bytes > 0).then(|| self.bytes as f64 / 1e6 / self.secs().max(1e-9))
    }

    /// Data blocks read per lookup.
    fn blocks_per_op(&self) -> Option<f64> {
        let s = self.stats.as_ref()?;
        Some(s.total.block_reads as f64 / self.phase.ops.max(1) as f64)
    }

    /// Device bytes per lookup: not for readwhilewriting, whose writer's
    /// compactions read in the same process.
    fn device_bytes_per_op(&self) -> Option<f64> {
        if self.bench == Benchmark::ReadWhileWriting || self.bench.writes() || self.bench.is_step()
        {
            return None;
        }
        self.phase.device_bytes_per_op()
    }
}

/// db_bench's lines for one workload, then the filter line of a read.
fn write_text(out: &mut dyn Write, o: &Outcome) -> CliResult {
    // db_bench: "%-12s : %11.3f micros/op %ld ops/sec;%s%s", the rate
    // " %6.1f MB/s" and the message "(found of total found)".
    let mut extra = String::new();
    if let Some(mb) = o.mb_per_sec() {
        extra.push_str(&format!(" {mb:6.1} MB/s"));
    }
    if let Some(found) = o.found {
        extra.push_str(&format!(" ({found} of {} found)", o.phase.ops));
    }
    if let Some(r) = o.range_deletes {
        extra.push_str(&format!(" ({r} range deletes)"));
    }
    writeln!(
        out,
        "{:<12} : {:11.3} micros/op {} ops/sec;{extra}",
        o.bench.name(),
        o.phase.mean_ns / 1e3,
        o.ops_per_sec().round() as u64
    )?;
    let p = o.percentiles_ns.map(|ns| ns as f64 / 1e3);
    writeln!(
        out,
        "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
        p[0], p[1], p[2], p[3], p[4]
    )?;
    if o.bench == Benchmark::SeekRandom {
        let d = o.device_bytes_per_op();
        let d = d.map_or(String::new(), |d| format!("; {d:.1} device bytes/lookup"));
        writeln!(out, "Filters: not consulted by seeks{d}")?;
    } else if let Some(s) = &o.stats {
        let t = &s.total;
        let pct = |f: Option<f64>| f.map_or("n/a".to_string(), |f| format!("{:.3}%", f * 100.0));
        let mut line = format!(
            "Filters: {} checks, {} false positives, FPR {} (predicted {}); {:.3} data blocks/lookup, {:.1} store bytes/lookup",
            t.filter_checks,
            t.false_positives,
            pct(t.observed_fpr()),
            pct(predicted_fpr(s)),
            o.blocks_per_op().unwrap_or(0.0),
            o.phase.store_bytes_per_op()
        );
        if let Some(d) = o.device_bytes_per_op() {
            line.push_str(&format!(", {d:.1} device bytes/lookup"));
        }
        if let Some(w) = o.writer_puts {
            line.push_str(&format!("; writer: {w} puts"));
        }
        writeln!(out, "{line}")?;
        if s.range_tombstone_checks > 0 {
            let per = |n: u64| n as f64 / o.phase.ops.max(1) as f64;
            writeln!(
                out,
                "Range tombstones: {:.3} lists searched/lookup ({:.3} of files), {} lookups answered by one",
                per(s.range_tombstone_checks),
                per(s.range_tombstone_files),
                s.gets_range_deleted
            )?;
        }
    }
    if let Some(r) = &o.requests {
        writeln!(out, "{}", r.line(o.bench == Benchmark::ReadWhileWriting))?;
    }
    if let Some(u) = &o.uploads {
        writeln!(
            out,
            "Bucket:     {} PUTs, {} uploaded by the flushes and compactions the puts made (so far)",
            u.puts,
            crate::report::bytes(u.put_bytes)
        )?;
    }
    Ok(())
}

/// The JSON object of one workload.
fn json_outcome(config: &BenchConfig, o: &Outcome) -> serde_json::Value {
    let us = o.percentiles_ns.map(|ns| ns as f64 / 1e3);
    let s = o.stats.as_ref();
    let mut v = json!({
        "benchmark": o.bench.name(),
        "config": config.name,
        "ops": o.phase.ops,
        "micros_per_op": o.phase.mean_ns / 1e3,
        "ops_per_sec": o.ops_per_sec(),
        "mb_per_sec": o.mb_per_sec(),
        "bytes": o.bytes,
        "found": o.found,
        "p50_us": us[0],
        "p75_us": us[1],
        "p99_us": us[2],
        "p999_us": us[3],
        "p9999_us": us[4],
        "filter_checks": s.map(|s| s.total.filter_checks),
        "false_positives": s.map(|s| s.total.false_positives),
        "measured_fpr": s.and_then(|s| s.total.observed_fpr()),
        "predicted_fpr": s.and_then(predicted_fpr),
        "block_reads_per_op": o.blocks_per_op(),
        "store_bytes_per_op": s.map(|_| o.phase.store_bytes_per_op()),
        "device_bytes_per_op": o.device_bytes_per_op(),
        "writer_puts": o.writer_puts,
        "range_deletes": o.range_deletes,
        "range_tombstone_checks": s.map(|s| s.range_tombstone_checks),
        "range_tombstone_files": s.map(|s| s.range_tombstone_files),
        "gets_range_deleted": s.map(|s| s.gets_range_deleted),
        "bucket_put_requests": o.uploads.map(|u| u.puts),
        "bucket_put_bytes": o.uploads.map(|u| u.put_bytes),
    });
    if let (Some(r), Some(map)) = (&o.requests, v.as_object_mut())
        && let Some(extra) = r.json().as_object()
    {
        map.extend(extra.clone());
    }
    v
}
