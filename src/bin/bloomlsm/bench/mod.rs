//! `bloomlsm bench`: the filter / disk-I/O study.
//!
//! For each filter configuration the study builds a store with the same keys,
//! the same seed and the same level shape (compaction runs on the caller
//! thread via [`Db::maintain`](bloomlsm::Db::maintain), so the tree is a
//! function of the writes alone). The keys are loaded once, without filters,
//! and each configuration's store is made from that load with its own
//! filters, several stores from one read of it ([`stores::load_base`],
//! [`stores::refilter_stores`], [`stores::refilter_store`]); `--reload`
//! loads each configuration's store itself. The block cache is off so that every
//! data-block read is a real `pread`. It then runs missing-key gets (the
//! "absent" key family, which never collides with inserted keys) and
//! existing-key gets (uniform, or Zipf-skewed with `--zipf`), and reports what
//! the store's own counters saw: filter probes, false positives, data-block
//! reads per missing get next to the model's prediction, and latencies.
//!
//! In the default buffered mode each store's files are read once before its
//! timed phases ([`stores::read_into_page_cache`]), so every configuration
//! meets the same warm page cache whatever wrote its tables.
//! `--io direct` reads the tables with direct I/O
//! ([`ReadMode::Direct`](bloomlsm::ReadMode::Direct)), so every data-block
//! read reaches the device; each phase reports its latency percentiles and
//! the bytes the kernel read from the device (`/proc/self/io`) next to the
//! store's count ([`phase`](crate::phase)). `--memory-ceiling` runs the
//! study in a memory cgroup whose limit counts the page cache too, so that
//! buffered reads meet a machine with that much memory.
//!
//! `--plot` adds a filter-only sweep (measured vs modelled FPR across bits per
//! key for both filter kinds) and draws it with the per-configuration read
//! costs as an SVG chart ([`plot`](crate::plot)).
//!
//! One file per part of the command, from the arguments down to the
//! output; each imports only from the files listed above it:
//!
//! - `configs.rs`: the filter configurations ([`BenchConfig`]) and the store
//!   options they share.
//! - `benchmarks.rs`: the workloads `--benchmarks` names, db_bench's and
//!   YCSB's, and YCSB's request distributions.
//! - `args.rs`: the command line ([`BenchArgs`], [`IoMode`](args::IoMode)),
//!   and the `--plot` path's check.
//! - `row.rs`: [`BenchRow`], what a configuration measured (its bucket
//!   phases and filter budgets among it), and the figures derived from it.
//! - `ceiling.rs`: `--memory-ceiling`, the memory cgroup the run enters.
//! - `stores.rs`: where the stores live, the checks on `--dir` and
//!   `--io direct` made before anything runs, loading a store, and making
//!   each configuration's store from the single load.
//! - `measure.rs`: the timed read phases of a store.
//! - `budget.rs`: `--filter-budget`, a store reopened under metadata
//!   memory budgets and read again.
//! - `bucket.rs`: `--store`, a store read with its tables in a bucket.
//! - `remote.rs`: the `--benchmarks` store's reads behind a latency,
//!   counted as requests and priced.
//! - `timeseries.rs`: readwhilewriting sampled over time, written as CSV or
//!   JSON.
//! - `ycsb.rs`: YCSB's core workloads A to F.
//! - `text.rs`, `json.rs`, `csv.rs`: the point study's three output formats.
//! - `chart.rs`: `--plot`, the sweep and the SVG chart.
//! - `series_chart.rs`: readwhilewriting's time series as an SVG chart.
//! - `range_chart.rs`: `--workload range --plot`, FPR against range length
//!   beside the bound, and data blocks per empty scan beside the store
//!   without range filters.
//! - `scans.rs`: a phase of the prefix or range study, its per-level table,
//!   what it saved against the same phase on the store without the filter,
//!   and both studies' CSV lines.
//! - `db_bench.rs`: `--benchmarks`, db_bench's workloads (and YCSB's) on
//!   one store, measured and printed.
//! - `prefix.rs`: `--workload prefix`, the prefix-filter study, beside a
//!   store without prefix filters.
//! - `range.rs`: `--workload range`, the range-filter study, beside a store
//!   without range filters.
//!
//! This file holds [`run`], the command's entry, and the point study's
//! steps that tie the parts together: each configuration's store made,
//! measured, read from the bucket and under the budgets ([`run_config`]).

use std::io::Write;
use std::path::Path;

use bloomlsm::FilterOptions;

use crate::report::shape_line;
use crate::{CliError, CliResult, filter_cost, interrupt, write_json};

mod args;
mod benchmarks;
mod bucket;
mod budget;
mod ceiling;
mod chart;
mod configs;
mod csv;
mod db_bench;
mod json;
mod measure;
mod prefix;
mod range;
mod range_chart;
mod remote;
mod row;
mod scans;
mod series_chart;
mod sliding;
mod stores;
mod text;
mod timeseries;
mod ycsb;

pub use args::BenchArgs;
pub use configs::BenchConfig;
pub use row::BenchRow;

use args::IoMode;
use configs::bench_options;
use measure::{Measured, Zipf, measure};
#[cfg(doc)]
use stores::refilter_stores;
use stores::{
    Base, Removal, StoresHome, load_store, read_into_page_cache, refilter_store, store_dir,
};

/// Runs the study and writes the report (table, JSON lines or CSV) to `out`.
pub fn run(args: &BenchArgs, out: &mut dyn Write) -> CliResult<Vec<BenchRow>> {
    // First, before the store and rayon start threads that would otherwise
    // take the signals and end the process with the stores left behind.
    interrupt::install()
        .map_err(|e| CliError::new(format!("install the SIGINT / SIGTERM handler: {e}")))?;
    let zipf = check_args(args)?;
    // Bad compression flags are usage errors, found before anything is written.
    let mut o = bench_options(FilterOptions::none(), args.io.read_mode());
    args.compression.apply(&mut o.compression, o.max_levels)?;
    // The cgroup is left, and removed, when this is dropped at the end.
    let ceiling = ceiling::Ceiling::enter(
        args,
        o.block_cache_capacity as u64,
        o.write_buffer_size as u64,
    )?;
    if let Some(c) = &ceiling
        && !args.quiet
    {
        eprintln!(
            "memory ceiling {} bytes: cgroup {}",
            c.limit,
            c.path().display()
        );
    }
    if let Some(benchmarks) = &args.benchmarks {
        return db_bench::run(args, benchmarks, out).map(|()| Vec::new());
    }
    if args.workload == args::Workload::Prefix {
        return prefix::run(args, out).map(|()| Vec::new());
    }
    if args.workload == args::Workload::Range {
        return range::run(args, out).map(|()| Vec::new());
    }
    // Output paths are checked before the (long) run starts.
    if let Some(path) = &args.plot {
        args::check_plot_path(path)?;
    }
    // Removes a temporary home when dropped, at the end of the run.
    let home = StoresHome::prepare(args)?;
    let text = !args.json && !args.csv;
    if text {
        text::write_header(out, args, &o, &home.path)?;
        if let Some(c) = &ceiling {
            writeln!(
                out,
                "memory ceiling: {} (cgroup, page cache included)",
                crate::report::bytes(c.limit)
            )?;
        }
    }
    let rows = run_configs(args, out, &home, zipf.as_ref(), text)?;
    let none = rows
        .iter()
        .find(|r| r.config.filters.policy.is_none())
        .cloned();
    if args.csv {
        csv::write(out, &rows, none.as_ref())?;
    } else if text {
        text::write_report(out, args, &rows, none.as_ref())?;
        if let Some(url) = &args.store {
            text::write_bucket(out, args, url, &rows, none.as_ref())?;
        }
    }
    if let Some(path) = &args.plot {
        chart::write(args, out, path, &rows, text)?;
    }
    if text && let Some(peak) = ceiling.as_ref().and_then(|c| c.peak()) {
        writeln!(
            out,
            "memory peak under the ceiling: {}",
            crate::report::bytes(peak)
        )?;
    }
    Ok(rows)
}

/// The usage checks clap does not make: at least one configuration, none
/// listed twice, a Zipf exponent `>= 0`. Returns `--zipf`'s sampler.
fn check_args(args: &BenchArgs) -> CliResult<Option<Zipf>> {
    if args.configs.is_empty() {
        return Err(CliError::usage("--configs is empty"));
    }
    if args.workload == args::Workload::Prefix && args.plot.is_some() {
        return Err(CliError::usage(
            "--plot draws the point study or --workload range; --workload prefix has no chart",
        ));
    }
    if args.store.is_some() && !cfg!(feature = "object-store") {
        return Err(CliError::usage(
            "--store needs the object-store feature: cargo run --release --features object-store -- bench --store s3://BUCKET/PREFIX",
        ));
    }
    if args.store.is_some() && args.workload != args::Workload::Point {
        return Err(CliError::usage(
            "--store reads the point study's stores in the bucket, not --workload prefix or range",
        ));
    }
    // clap's `requires = "benchmarks"` is not checked once --workload is
    // given (it conflicts with --benchmarks): the same rule here.
    if args.benchmarks.is_none() {
        let given = [
            ("--statistics", args.statistics),
            ("--miss-fraction", args.miss_fraction.is_some()),
            ("--timeseries", args.timeseries.is_some()),
            ("--read-latency-us", args.read_latency_us.is_some()),
            (
                "--writes-per-range-tombstone",
                args.writes_per_range_tombstone.is_some(),
            ),
            ("--use-existing-db", args.use_existing_db),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, on)| *on) {
            return Err(CliError::usage(format!("{flag} needs --benchmarks")));
        }
        if args.request_distribution.is_some() && args.workload == args::Workload::Point {
            return Err(CliError::usage(
                "--request-distribution needs --benchmarks, --workload range or --workload prefix",
            ));
        }
    }
    if args.workload != args::Workload::Range && args.has_range_flags() {
        return Err(CliError::usage(
            "--range-len, --range-bits, --empty-fraction and --correlated need --workload range",
        ));
    }
    for (i, c) in args.configs.iter().enumerate() {
        if args.configs[..i].iter().any(|d| d.name == c.name) {
            return Err(CliError::usage(format!(
                "configuration {} is listed twice",
                c.name
            )));
        }
    }
    match args.zipf {
        Some(s) if !(s.is_finite() && s >= 0.0) => {
            Err(CliError::usage("--zipf must be a number >= 0"))
        }
        Some(s) => Ok(Some(Zipf::new(args.keys, s))),
        None => Ok(None),
    }
}

/// Builds, loads and measures each configuration's store under `home` in
/// turn. Text shows the first store's shape; `--json` writes each row as
/// soon as it is measured.
fn run_configs(
    args: &BenchArgs,
    out: &mut dyn Write,
    home: &StoresHome,
    zipf: Option<&Zipf>,
    text: bool,
) -> CliResult<Vec<BenchRow>> {
    let mut rows: Vec<BenchRow> = Vec::new();
    // One load for every configuration, unless `--reload` (or a single one).
    let base = if args.reload || args.configs.len() < 2 {
        None
    } else {
        let b = stores::load_base(args, &home.path)?;
        stores::check_room(home, &b, args.configs.len())?;
        if !args.quiet && !text {
            eprintln!("loaded once in {:.1} s", b.load.secs);
        }
        Some(b)
    };
    // Declared after `base`, so dropped (waited for) first.
    let mut removal = stores::Removal::default();
    // Each configuration's share of the pass that made its store.
    let mut made: Vec<Option<f64>> = vec![None; args.configs.len()];
    for (i, c) in args.configs.iter().enumerate() {
        if let Some(b) = &base
            && made[i].is_none()
        {
            // The stores of the next configurations, as many as fit beside
            // the ones kept and within the open-file bound, made in one
            // pass, in passes of even sizes.
            removal.wait();
            let left = args.configs.len() - i;
            let most = stores::stores_that_fit(home, b)
                .min(stores::stores_within_open_files(args, &args.configs[i..])?)
                .clamp(1, stores::PASS_STORES);
            let pass = left.div_ceil(left.div_ceil(most));
            let configs: Vec<&BenchConfig> = args.configs[i..i + pass].iter().collect();
            let dirs = configs
                .iter()
                .map(|c| stores::store_dir(&home.path, &c.name))
                .collect::<CliResult<Vec<_>>>()?;
            let secs = stores::refilter_stores(args, &configs, b, &dirs)?;
            if !args.quiet && !text {
                let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
                eprintln!(
                    "filters of {} rebuilt together in {secs:.1} s",
                    names.join(", ")
                );
            }
            for m in &mut made[i..i + pass] {
                *m = Some(secs / pass as f64);
            }
        }
        let row = run_config(
            args,
            c,
            &home.path,
            home.keep,
            zipf,
            base.as_ref().zip(made[i]),
            &mut removal,
        )?;
        if rows.is_empty() && text {
            writeln!(out, "shape: {}", row.shape)?;
            writeln!(out)?;
            out.flush()?;
        }
        if !args.quiet && !text {
            match row.refilter_secs {
                Some(r) => eprintln!(
                    "{}: filters rebuilt in {r:.1} s; shape {}",
                    c.name, row.shape
                ),
                None => eprintln!(
                    "{}: loaded in {:.1} s; shape {}",
                    c.name, row.load_secs, row.shape
                ),
            }
        }
        if args.json {
            let none = rows.iter().find(|r| r.config.filters.policy.is_none());
            let mut v = json::json_row(&row, none);
            v["memory_ceiling"] = serde_json::json!(args.memory_ceiling);
            if args.store.is_some() {
                let none = rows.iter().find(|r| r.config.filters.policy.is_none());
                v["bucket"] = json::bucket_json(&row, none, args.price_per_million_gets);
            }
            write_json(out, &v)?;
            out.flush()?;
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Builds and measures one configuration's store under `parent`: with
/// `base` (the single load, and the seconds this store's share of the
/// [`refilter_stores`] pass that made it took), the store that pass made;
/// without one, by loading it. Unless `keep`, the store is removed
/// afterwards on a thread of its own (`removal`), while the next
/// configuration's store is made; the previous one's removal is waited
/// for before anything is timed.
pub fn run_config(
    args: &BenchArgs,
    config: &BenchConfig,
    parent: &Path,
    keep: bool,
    zipf: Option<&Zipf>,
    base: Option<(&Base, f64)>,
    removal: &mut Removal,
) -> CliResult<BenchRow> {
    let (db, dir, load, refilter_secs) = match base {
        Some((b, pass_secs)) => {
            let dir = parent.join(&config.name);
            let (db, secs) = refilter_store(args, config, b, &dir)?;
            (db, dir, b.load, Some(pass_secs + secs))
        }
        None => {
            let dir = store_dir(parent, &config.name)?;
            let (db, load) = load_store(args, config, &dir)?;
            (db, dir, load, None)
        }
    };
    removal.wait();
    if args.io == IoMode::Buffered {
        read_into_page_cache(&dir);
    }
    let Measured {
        mut missing,
        existing,
        phases,
    } = measure(args, config, &db, zipf)?;
    // The write counters (and write amplification) are the load's: with a
    // single load, not those of the filter rebuild.
    load.set_writes(&mut missing);
    let s = &missing;
    // Every filter and index held whole (the study opens without a budget).
    let metadata_bytes = s.filter_bytes + s.index_bytes;
    let filter_cost = filter_cost::store_cost(&db.file_stats(), s);
    let filtered: u64 = s.levels.iter().map(|l| l.filtered_keys).sum();
    let row = BenchRow {
        config: config.clone(),
        keys: args.keys,
        load_secs: load.secs,
        refilter_secs,
        shape: shape_line(s),
        shape_key: s.levels.iter().map(|l| (l.files, l.entries)).collect(),
        filter_bytes: s.filter_bytes,
        bits_per_key: if filtered == 0 {
            0.0
        } else {
            s.filter_bytes as f64 * 8.0 / filtered as f64
        },
        missing,
        existing,
        missing_get_ns: phases[0].mean_ns,
        multi_get_missing_ns: phases[1].mean_ns,
        existing_get_ns: phases[2].mean_ns,
        filter_cost,
        phases,
        io: args.io,
        budget: Vec::new(),
        bucket: None,
    };
    db.close()?;
    let mut row = row;
    #[cfg(feature = "object-store")]
    if let Some(url) = &args.store {
        let work = parent.join(format!(".{}.bucket", config.name));
        row.bucket = Some(bucket::measure(args, url, config, &dir, zipf, &work)?);
    }
    if row.filter_bytes > 0 {
        row.budget = budget::sweep(args, config, &dir, metadata_bytes)?;
    }
    if !keep {
        *removal = Removal::start(dir);
    }
    Ok(row)
}
