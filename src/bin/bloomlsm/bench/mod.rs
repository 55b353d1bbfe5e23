//! `bloomlsm bench`: the filter / disk-I/O study.
//!
//! For each filter configuration the study builds a store with the same keys,
//! the same seed and the same level shape (compaction runs on the caller
//! thread via [`Db::maintain`], so the tree is a function of the writes alone),
//! with the block cache off so that every data-block read is a real `pread`.
//! It then runs missing-key gets (the "absent" key family, which never
//! collides with inserted keys) and existing-key gets (uniform, or Zipf-skewed
//! with `--zipf`), and reports what the store's own counters saw: filter
//! probes, false positives, data-block reads per missing get next to the
//! model's prediction, and latencies.
//!
//! `--io direct` reads the tables with direct I/O ([`ReadMode::Direct`]), so
//! every data-block read reaches the device; each phase reports its latency
//! percentiles and the bytes the kernel read from the device
//! (`/proc/self/io`) next to the store's count ([`phase`]).
//!
//! `--plot` adds a filter-only sweep (measured vs modelled FPR across bits per
//! key for both filter kinds) and draws it with the per-configuration read
//! costs as an SVG chart ([`plot`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bloomlsm::filter::{self, FilterKind, FilterPolicy};
use bloomlsm::fs::{FileSystem, RealFs, direct};
use bloomlsm::{Db, FilterOptions, Options, ReadMode, Stats, WriteBatch};
use clap::{Args, ValueEnum};

use serde_json::{Value, json};

use crate::db_cmd::{level_total, shape_json, shape_line};
use crate::design::{CompressionArgs, describe_compression};
use crate::phase::{PERCENTILES, Phase, Recorder};
use crate::report::{self, TextTable, bytes, count, csv_line, percent, sig3};
use crate::sweep::{SweepPoint, fpr_sweep, sweep_table};
use crate::workload::{SplitMix64, ValueSource, absent_key, present_key};
use crate::{CliError, CliResult, budget, filter_cost, interrupt, plot, progress, write_json};

/// The most keys (and sweep keys and probes) `bench` takes, 268,435,456:
/// their hashes or Zipf table are held in memory, 8 bytes each.
pub const MAX_KEYS: u64 = 1 << 28;

/// The configurations `bench` runs when `--configs` is not given.
pub const DEFAULT_CONFIGS: &str =
    "none,bloom10,blocked6,blocked10,blocked16,ribbon10,ribbon7,hybrid10,monkey10";

/// Arguments of `bench`.
#[derive(Clone, Debug, Args)]
pub struct BenchArgs {
    /// Keys to insert into each store (16-byte random keys; at most 2^28).
    #[arg(long, default_value_t = 1_000_000, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=MAX_KEYS))]
    pub keys: u64,
    /// Bytes of each value (at most 1 MiB).
    #[arg(long, default_value_t = 100, value_name = "BYTES",
          value_parser = clap::value_parser!(u32).range(0..=1 << 20))]
    pub value_size: u32,
    /// Make values compress to about this fraction of their size (db_bench's
    /// --compression_ratio): 1 = random bytes, 0.5 about 2x.
    #[arg(long, default_value_t = 0.5, value_name = "R", value_parser = parse_ratio)]
    pub value_ratio: f64,
    #[command(flatten)]
    pub compression: CompressionArgs,
    /// Gets per phase (missing keys, then existing keys).
    #[arg(long, default_value_t = 200_000, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub lookups: u64,
    /// Filter configurations, comma-separated: `none`, `bloomB`, `blockedB`,
    /// `ribbonB` (the space-optimal Ribbon filter), `hybridB` (blocked512 at B
    /// bits/key on L0 and L1, Ribbon at B bits/key below: the same memory,
    /// fast builds for short-lived files),
    /// `monkeyB` (blocked512 with the Monkey allocation at B bits/key on
    /// average), `monkey-bloomB`, `monkey-ribbonB`, `monkey-hybridB` (the
    /// hybrid's two families under one Monkey budget); B may be fractional, e.g.
    /// `blocked12.5`. The default includes ribbon10 (blocked10's memory) and
    /// ribbon7 (blocked10's FPR).
    #[arg(long, default_value = DEFAULT_CONFIGS, value_delimiter = ',', value_parser = parse_config)]
    pub configs: Vec<BenchConfig>,
    /// Choose existing keys from a Zipf distribution with this exponent
    /// (e.g. 0.99) instead of uniformly.
    #[arg(long, value_name = "S")]
    pub zipf: Option<f64>,
    /// Keep the stores under this directory (one sub-directory per
    /// configuration) instead of a temporary directory that is removed. A
    /// directory that already holds stores is refused unless --reuse-dir.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Let --dir hold stores of an earlier run: each configuration's old store
    /// is deleted and rebuilt.
    #[arg(long, requires = "dir")]
    pub reuse_dir: bool,
    /// How the stores read their tables: `buffered` (through the page cache)
    /// or `direct` (O_DIRECT: every data-block read reaches the device; the
    /// stores' directory must be on a file system that takes it, see --dir).
    #[arg(long, value_enum, default_value_t = IoMode::Buffered, value_name = "MODE")]
    pub io: IoMode,
    /// Seed of keys, values and lookups.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Print one JSON object per configuration per line instead of the table
    /// (with --plot, the sweep as a last line; fields below).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV (a header line, then one line per configuration).
    #[arg(long)]
    pub csv: bool,
    /// Also run the filter-only FPR sweep and write an SVG chart of it and of
    /// the data-block reads per missing get of each configuration (the name
    /// must end in .svg).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Keys per filter in the `--plot` sweep.
    #[arg(long, default_value_t = 200_000, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=MAX_KEYS))]
    pub sweep_keys: u64,
    /// Absent-key probes per filter in the `--plot` sweep.
    #[arg(long, default_value_t = 1_000_000, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=MAX_KEYS))]
    pub sweep_probes: u64,
    /// After each filtered configuration's study, reopen its store under
    /// filter memory budgets — fractions of its filter bytes, e.g.
    /// `0,0.1,0.5,1`; without a value `0,0.02,0.05,0.1,0.2,0.4,0.7,1` — and
    /// look the missing keys up again: the filters that do not fit are read
    /// on demand, one partition per probe. Prints I/O per missing get
    /// against filter memory (and `--plot` draws it).
    #[arg(long, value_name = "F,F,...", num_args = 0..=1, require_equals = false,
          default_missing_value = budget::DEFAULT_FRACTIONS,
          value_delimiter = ',', value_parser = budget::parse_fraction)]
    pub filter_budget: Option<Vec<f64>>,
    /// Filter partition size of the stores built (0: whole filter blocks).
    /// Default 4096 with --filter-budget, otherwise 0.
    #[arg(long, value_name = "BYTES",
          value_parser = clap::value_parser!(u64).range(0..=1 << 24))]
    pub filter_partition_bytes: Option<u64>,
    /// No progress bars, and nothing on stderr but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

impl BenchArgs {
    /// The filter partition size of the studied stores.
    pub fn partition_bytes(&self) -> usize {
        match self.filter_partition_bytes {
            Some(b) => b as usize,
            None if self.filter_budget.is_some() => budget::DEFAULT_PARTITION_BYTES,
            None => 0,
        }
    }
}

/// `--io`: how the stores read their tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IoMode {
    /// Through the operating system's page cache.
    Buffered,
    /// Direct I/O (O_DIRECT): around the page cache, to the device.
    Direct,
}

impl IoMode {
    /// The store's read mode.
    pub fn read_mode(self) -> ReadMode {
        match self {
            IoMode::Buffered => ReadMode::Buffered,
            IoMode::Direct => ReadMode::Direct,
        }
    }
}

fn parse_ratio(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|r| *r > 0.0 && *r <= 1.0)
        .ok_or_else(|| format!("{s:?}: the value ratio must be a number in (0, 1]"))
}

/// One filter configuration of the study.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchConfig {
    /// The name given on the command line, e.g. `blocked10`.
    pub name: String,
    /// The store's filter options.
    pub filters: FilterOptions,
    /// For `monkeyB` / `monkey-bloomB`: the kind and average bits per key
    /// ([`FilterOptions::monkey`]: the store re-solves the allocation for
    /// every file it writes).
    pub monkey: Option<(FilterKind, f64)>,
}

impl BenchConfig {
    /// A description of the policy, e.g. `blocked512(10 b/k, k=6)`,
    /// `monkey blocked512 (10 b/k average)` or `none`.
    pub fn policy(&self) -> String {
        let f = &self.filters;
        if let Some((kind, avg)) = self.monkey {
            return match f.per_level.as_slice() {
                [(0, Some(top)), .., (last, _)] => format!(
                    "monkey {} on L0-L{last}, {} below ({avg} b/k average)",
                    top.name(),
                    kind.name()
                ),
                _ => format!("monkey {} ({avg} b/k average)", kind.name()),
            };
        }
        let show = |p: Option<FilterPolicy>| match p {
            None => "none".to_string(),
            Some(p) => format!(
                "{}({} b/k, k={})",
                p.name(),
                p.bits_per_key(),
                p.num_probes()
            ),
        };
        match f.per_level.as_slice() {
            [] => show(f.policy),
            [(0, top), .., (last, _)] => {
                format!("{} on L0-L{last}, {} below", show(*top), show(f.policy))
            }
            _ => format!("{} with per-level overrides", show(f.policy)),
        }
    }

    /// Whether a store that spends `bits_per_key` spends what the
    /// configuration's name says, to within 2%.
    pub fn spends_nominal(&self, bits_per_key: f64) -> bool {
        let nominal = self.nominal_bits_per_key();
        (bits_per_key - nominal).abs() <= 0.02 * nominal
    }

    /// The nominal bits per key (0 without filters).
    pub fn nominal_bits_per_key(&self) -> f64 {
        self.monkey
            .map(|(_, avg)| avg)
            .or(self.filters.policy.map(|p| p.bits_per_key()))
            .unwrap_or(0.0)
    }
}

/// Parses a configuration name: `none`, `bloomB`, `blockedB`, `monkeyB`
/// (blocked512 with the Monkey allocation) or `monkey-bloomB`, where `B` is
/// bits per key (fractional allowed, e.g. `blocked12.5`).
pub fn parse_config(name: &str) -> Result<BenchConfig, String> {
    let name = name.trim();
    let bits = |s: &str| -> Result<f64, String> {
        let b: f64 = s
            .parse()
            .map_err(|_| format!("bad bits per key {s:?} in configuration {name:?}"))?;
        if !(filter::MIN_BITS_PER_KEY..=filter::MAX_BITS_PER_KEY).contains(&b) {
            return Err(format!(
                "bits per key in {name:?} must be in {}..={}",
                filter::MIN_BITS_PER_KEY,
                filter::MAX_BITS_PER_KEY
            ));
        }
        Ok(b)
    };
    let mut monkey = None;
    let filters = if name == "none" {
        FilterOptions::none()
    } else if let Some(b) = name.strip_prefix("monkey-bloom") {
        monkey = Some((FilterKind::Bloom, bits(b)?));
        FilterOptions::monkey(FilterKind::Bloom, bits(b)?)
    } else if let Some(b) = name.strip_prefix("monkey-hybrid") {
        monkey = Some((FilterKind::Ribbon, bits(b)?));
        FilterOptions::hybrid_monkey(FilterKind::Blocked512, FilterKind::Ribbon, 2, bits(b)?)
    } else if let Some(b) = name.strip_prefix("monkey-ribbon") {
        monkey = Some((FilterKind::Ribbon, bits(b)?));
        FilterOptions::monkey(FilterKind::Ribbon, bits(b)?)
    } else if let Some(b) = name.strip_prefix("ribbon") {
        FilterOptions::uniform(Some(FilterPolicy::ribbon(bits(b)?)))
    } else if let Some(b) = name.strip_prefix("hybrid") {
        // Both families at B bits/key: the name says what it spends.
        let b = bits(b)?;
        FilterOptions::hybrid(FilterPolicy::blocked512(b), FilterPolicy::ribbon(b), 2)
    } else if let Some(b) = name.strip_prefix("monkey") {
        monkey = Some((FilterKind::Blocked512, bits(b)?));
        FilterOptions::monkey(FilterKind::Blocked512, bits(b)?)
    } else if let Some(b) = name.strip_prefix("blocked") {
        FilterOptions::uniform(Some(FilterPolicy::blocked512(bits(b)?)))
    } else if let Some(b) = name.strip_prefix("bloom") {
        FilterOptions::uniform(Some(FilterPolicy::bloom(bits(b)?)))
    } else {
        return Err(format!(
            "unknown configuration {name:?} (expected none, bloomB, blockedB, ribbonB, hybridB, monkeyB, monkey-bloomB, monkey-ribbonB or monkey-hybridB, e.g. blocked10)"
        ));
    };
    Ok(BenchConfig {
        name: name.to_string(),
        filters,
        monkey,
    })
}

/// The store options of the study: small buffers and levels so that 1M keys
/// make a tree of at least four levels, compaction on the caller thread (same
/// shape for every configuration), block cache off (every data-block read is
/// a real `pread`), tables read in `io` mode.
pub fn bench_options(filters: FilterOptions, io: IoMode) -> Options {
    Options {
        read_mode: io.read_mode(),
        write_buffer_size: 2 << 20,
        target_file_size: 2 << 20,
        level1_max_bytes: 4 << 20,
        level_size_multiplier: 10,
        block_cache_capacity: 0,
        background_compaction: false,
        sync_writes: false,
        filters,
        ..Options::default()
    }
}

/// What one configuration measured.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchRow {
    /// The configuration.
    pub config: BenchConfig,
    /// Keys in the store.
    pub keys: u64,
    /// Seconds to write the keys and run every flush and compaction.
    pub load_secs: f64,
    /// `L0 .. | L1 ..` shape after loading.
    pub shape: String,
    /// Per-level `(files, entries)` (for checking that shapes agree).
    pub shape_key: Vec<(usize, u64)>,
    /// Bytes of filter bits in memory.
    pub filter_bytes: u64,
    /// Filter bits per filtered key.
    pub bits_per_key: f64,
    /// Counters of the missing-key phase.
    pub missing: Stats,
    /// Counters of the existing-key phase.
    pub existing: Stats,
    /// Mean ns per missing-key get.
    pub missing_get_ns: f64,
    /// Mean ns per missing key looked up by `multi_get`
    /// ([`MULTI_GET_BATCH`] keys per call).
    pub multi_get_missing_ns: f64,
    /// Mean ns per existing-key get.
    pub existing_get_ns: f64,
    /// CPU to build the store's filters, ns per key, and per absent-key
    /// filter probe, ns ([`filter_cost::store_cost`]); `None` without filters.
    pub filter_cost: Option<(f64, Option<f64>)>,
    /// Latencies and bytes of each phase, in [`PHASES`] order.
    pub phases: [Phase; 3],
    /// How the store read its tables.
    pub io: IoMode,
    /// `--filter-budget`: the store under each filter memory budget.
    pub budget: Vec<budget::BudgetPoint>,
}

impl BenchRow {
    /// The model's FPR of a filter probe in the missing phase: the levels'
    /// modelled FPRs weighted by how many absent-key probes each level got.
    /// `None` if no filter was probed.
    pub fn predicted_fpr(&self) -> Option<f64> {
        let (mut w, mut n) = (0.0, 0u64);
        for l in &self.missing.levels {
            let probes = l.io.filter_negatives + l.io.false_positives;
            w += l.predicted_fpr * probes as f64;
            n += probes;
        }
        (n > 0).then(|| w / n as f64)
    }

    /// False positives over absent-key filter probes in the missing phase.
    pub fn measured_fpr(&self) -> Option<f64> {
        self.missing.total.observed_fpr()
    }

    /// Data-block reads per missing get, measured.
    pub fn reads_per_missing_get(&self) -> f64 {
        self.missing.block_reads_per_missing_get()
    }

    /// Data-block reads per missing get, predicted by the filter models.
    pub fn predicted_reads_per_missing_get(&self) -> f64 {
        self.missing.predicted_block_reads_per_missing_get()
    }

    /// Filter bits per key of each non-empty level, e.g. `L0 17.8, L1 16.1`
    /// (`none` for a level without filters).
    pub fn level_bits(&self) -> String {
        self.missing
            .levels
            .iter()
            .filter(|l| l.files > 0)
            .map(|l| {
                if l.filtered_keys == 0 {
                    format!("L{} none", l.level)
                } else {
                    format!("L{} {:.1}", l.level, l.filter_bits_per_key())
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Bytes of the store's files on disk after loading.
    pub fn disk_bytes(&self) -> u64 {
        level_total(&self.missing).file_bytes
    }

    /// Data-block bytes before compression over bytes stored.
    pub fn compression_ratio(&self) -> Option<f64> {
        let t = level_total(&self.missing);
        (t.data_bytes > 0).then(|| t.data_raw_bytes as f64 / t.data_bytes as f64)
    }

    /// The load's write amplification: bytes flushed and compacted over
    /// the keys and values written ([`Stats::write_amplification`]; the
    /// counters count since open, and the lookup phases write nothing).
    pub fn write_amplification(&self) -> Option<f64> {
        self.missing.write_amplification()
    }

    /// Data-block reads per existing get.
    pub fn reads_per_existing_get(&self) -> f64 {
        let g = self.existing.gets.max(1);
        self.existing.total.block_reads as f64 / g as f64
    }

    /// Data-block reads per missing get without filters: every probed file
    /// whose key range holds the key (what the filters could save).
    pub fn unfiltered_reads_per_missing_get(&self) -> f64 {
        let t = &self.missing.total;
        let candidates = t.filter_checks + t.unfiltered_reads + t.unusable_filter_reads;
        candidates as f64 / self.missing.gets_missing().max(1) as f64
    }
}

/// Fraction of the unfiltered data-block reads of missing gets that `row`
/// avoided, against the `none` row when there is one (same tree, same keys)
/// and otherwise against the row's own count of in-range candidate files.
pub fn io_saved(row: &BenchRow, none: Option<&BenchRow>) -> f64 {
    let base = none.map_or_else(
        || row.unfiltered_reads_per_missing_get(),
        BenchRow::reads_per_missing_get,
    );
    if base <= 0.0 {
        0.0
    } else {
        1.0 - row.reads_per_missing_get() / base
    }
}

/// A Zipf(s) sampler over `0..n` by inverse CDF (rank 0 is the hottest).
#[derive(Clone, Debug)]
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    /// The distribution `P(i) ∝ 1 / (i + 1)^s` over `0..n` (`n ≥ 1`, `s ≥ 0`).
    pub fn new(n: u64, s: f64) -> Self {
        let mut cdf = Vec::with_capacity(n as usize);
        let mut acc = 0.0;
        for i in 0..n {
            acc += ((i + 1) as f64).powf(-s);
            cdf.push(acc);
        }
        for c in &mut cdf {
            *c /= acc;
        }
        Zipf { cdf }
    }

    /// One draw.
    pub fn sample(&self, rng: &mut SplitMix64) -> u64 {
        let u = rng.unit();
        (self.cdf.partition_point(|&c| c <= u) as u64).min(self.cdf.len() as u64 - 1)
    }
}

/// Removes a directory tree on drop (the temporary home of the stores).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Creates the temporary home of the stores (under `$TMPDIR`, else `/tmp`),
/// removed on drop and if the process is interrupted.
fn make_temp_dir() -> CliResult<TempDir> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let p = std::env::temp_dir().join(format!("bloomlsm-bench-{}-{nanos:08x}", std::process::id()));
    interrupt::guard(|| {
        std::fs::create_dir_all(&p)
            .map_err(|e| CliError::new(format!("create {}: {e}", p.display())))?;
        interrupt::remove_on_interrupt(p.clone());
        Ok(TempDir(p))
    })
}

/// Checks, before anything runs, that `--dir` can take one store per
/// configuration: it is not itself a store, and a configuration's
/// sub-directory is missing, empty, or (with `--reuse-dir`) an earlier
/// run's store. Usage errors; nothing is written.
fn check_dir(dir: &Path, configs: &[BenchConfig], reuse: bool) -> CliResult {
    if dir.exists() && !dir.is_dir() {
        return Err(CliError::usage(format!(
            "--dir {} is not a directory",
            dir.display()
        )));
    }
    if dir.join("CURRENT").exists() {
        return Err(CliError::usage(format!(
            "--dir {} is a bloomlsm store; give a directory to hold one store per configuration",
            dir.display()
        )));
    }
    for c in configs {
        let d = dir.join(&c.name);
        if !d.exists() {
            continue;
        }
        let empty = std::fs::read_dir(&d).is_ok_and(|mut r| r.next().is_none());
        if empty {
            continue;
        }
        if !d.join("CURRENT").exists() {
            return Err(CliError::usage(format!(
                "{} exists and is not a bloomlsm store; choose another --dir",
                d.display()
            )));
        }
        if !reuse {
            return Err(CliError::usage(format!(
                "--dir {} already holds a store ({}); pass --reuse-dir to replace it, or choose another directory",
                dir.display(),
                d.display()
            )));
        }
    }
    Ok(())
}

/// Checks, before anything runs, that the chart can be written at `path`:
/// a name ending in `.svg`, not a directory, in an existing directory where
/// a file can be created (the chart is written to `FILE.svg.tmp` there and
/// renamed into place).
fn check_plot_path(path: &Path) -> CliResult {
    let bad = |why: String| CliError::usage(format!("--plot {}: {why}", path.display()));
    if path.is_dir() || path.file_name().is_none() {
        return Err(bad("is a directory".into()));
    }
    // The chart is SVG whatever the name says: a name that says otherwise
    // (a PNG expected) is refused rather than silently written as SVG.
    if !path
        .extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("svg"))
    {
        return Err(bad(
            "the chart is SVG: give a file name ending in .svg".into()
        ));
    }
    let tmp = plot::temp_path(path);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| bad(format!("cannot create a file there ({e})")))?;
    let _ = std::fs::remove_file(&tmp);
    Ok(())
}

/// The directory for one configuration's store under `parent` (checked by
/// [`check_dir`]); an earlier run's store there is removed.
fn store_dir(parent: &Path, name: &str) -> CliResult<PathBuf> {
    let d = parent.join(name);
    if d.join("CURRENT").exists() {
        std::fs::remove_dir_all(&d)
            .map_err(|e| CliError::new(format!("remove old store {}: {e}", d.display())))?;
    }
    Ok(d)
}

/// The options of `config`'s store: [`bench_options`] with the run's
/// compression and filter partition size.
pub fn store_options(args: &BenchArgs, config: &BenchConfig) -> CliResult<Options> {
    let mut opts = bench_options(config.filters.clone(), args.io);
    args.compression
        .apply(&mut opts.compression, opts.max_levels)?;
    opts.filter_partition_bytes = args.partition_bytes();
    Ok(opts)
}

/// Loads `args.keys` keys into a store at `dir` with `config`'s filters,
/// running every due flush and compaction on this thread so that the shape
/// depends on the writes alone. Returns the open store and the load time.
pub fn load_store(args: &BenchArgs, config: &BenchConfig, dir: &Path) -> CliResult<(Db, f64)> {
    let opts = store_options(args, config)?;
    let wbs = opts.write_buffer_size as u64;
    // Creates the store's directory: not after an interruption removed it.
    let db = interrupt::guard(|| Db::open(dir, opts))?;
    let pb = progress(
        Some(args.keys),
        args.quiet,
        format!("{}: load", config.name),
    );
    let values = ValueSource::new(
        args.seed ^ 0x7661_6c75,
        args.value_ratio,
        args.value_size as usize,
    );
    let mut value = Vec::with_capacity(args.value_size as usize);
    // Per-entry memtable cost, estimated from the first batch; used to flush
    // before the memtable would fill up on its own (a freeze would hand the
    // flush to the flush thread, and we want every step on this one).
    let batch_keys = 1000u64;
    let mut per_batch: Option<u64> = None;
    let start = Instant::now();
    let mut i = 0u64;
    while i < args.keys {
        let end = (i + batch_keys).min(args.keys);
        let mut batch = WriteBatch::new();
        for j in i..end {
            values.value(j, &mut value);
            batch.put(present_key(args.seed, j), &value);
        }
        let before = db.stats().memtable_bytes;
        if let Some(b) = per_batch
            && before + b >= wbs
        {
            db.maintain()?;
        }
        let base = db.stats().memtable_bytes;
        db.write(batch)?;
        if per_batch.is_none() {
            per_batch = Some((db.stats().memtable_bytes - base).max(1));
        }
        pb.inc(end - i);
        i = end;
    }
    db.maintain()?;
    let secs = start.elapsed().as_secs_f64();
    pb.finish_and_clear();
    Ok((db, secs))
}

/// The study's read phases: (label, JSON / CSV name).
pub const PHASES: [(&str, &str); 3] = [
    ("missing get", "missing_get"),
    ("multi_get missing", "multi_get_missing"),
    ("existing get", "existing_get"),
];

/// Runs the missing-key, multi_get and existing-key phases on a loaded
/// store, each from zeroed counters.
pub fn measure(
    args: &BenchArgs,
    config: &BenchConfig,
    db: &Db,
    zipf: Option<&Zipf>,
) -> CliResult<Measured> {
    const STEP: u64 = 4096;
    let n = args.lookups;
    let absent = || CliError::new("an absent-family key was found in the store");

    db.reset_stats();
    let pb = progress(
        Some(n),
        args.quiet,
        format!("{}: missing gets", config.name),
    );
    let mut rec = Recorder::start();
    let mut i = 0;
    while i < n {
        let end = (i + STEP).min(n);
        for j in i..end {
            let key = absent_key(args.seed, j);
            if rec.time(1, || db.get(key))?.is_some() {
                return Err(absent());
            }
        }
        pb.inc(end - i);
        i = end;
    }
    let missing = db.stats();
    let missing_phase = rec.finish(n, missing.total.bytes_read);
    pb.finish_and_clear();

    // The same missing keys again, MULTI_GET_BATCH at a time.
    db.reset_stats();
    let pb = progress(
        Some(n),
        args.quiet,
        format!("{}: missing keys by multi_get", config.name),
    );
    let mut batch: Vec<[u8; 16]> = Vec::with_capacity(MULTI_GET_BATCH as usize);
    let mut rec = Recorder::start();
    let mut i = 0;
    while i < n {
        let end = (i + MULTI_GET_BATCH).min(n);
        batch.clear();
        batch.extend((i..end).map(|j| absent_key(args.seed, j)));
        if rec
            .time(end - i, || db.multi_get(&batch))?
            .iter()
            .any(Option::is_some)
        {
            return Err(absent());
        }
        pb.inc(end - i);
        i = end;
    }
    let multi_phase = rec.finish(n, db.stats().total.bytes_read);
    pb.finish_and_clear();

    db.reset_stats();
    let pb = progress(
        Some(n),
        args.quiet,
        format!("{}: existing gets", config.name),
    );
    let mut rng = SplitMix64::new(args.seed ^ 0x6765_7473);
    let keys = args.keys.max(1);
    let mut rec = Recorder::start();
    let mut i = 0;
    while i < n {
        let end = (i + STEP).min(n);
        for _ in i..end {
            let idx = match zipf {
                Some(z) => z.sample(&mut rng),
                None => rng.below(keys),
            };
            let key = present_key(args.seed, idx);
            if rec.time(1, || db.get(key))?.is_none() {
                return Err(CliError::new(format!("inserted key #{idx} was not found")));
            }
        }
        pb.inc(end - i);
        i = end;
    }
    let existing = db.stats();
    let existing_phase = rec.finish(n, existing.total.bytes_read);
    pb.finish_and_clear();
    Ok(Measured {
        missing,
        existing,
        phases: [missing_phase, multi_phase, existing_phase],
    })
}

/// Keys per `multi_get` call in the study's multi_get phase.
pub const MULTI_GET_BATCH: u64 = 1024;

/// What [`measure`] measured.
pub struct Measured {
    /// Counters of the missing-key phase.
    pub missing: Stats,
    /// Counters of the existing-key phase.
    pub existing: Stats,
    /// Latencies and bytes of each phase, in [`PHASES`] order.
    pub phases: [Phase; 3],
}

/// Builds, loads and measures one configuration's store under `parent`,
/// removing it afterwards unless `keep`.
pub fn run_config(
    args: &BenchArgs,
    config: &BenchConfig,
    parent: &Path,
    keep: bool,
    zipf: Option<&Zipf>,
) -> CliResult<BenchRow> {
    let dir = store_dir(parent, &config.name)?;
    let (db, load_secs) = load_store(args, config, &dir)?;
    let Measured {
        missing,
        existing,
        phases,
    } = measure(args, config, &db, zipf)?;
    let s = &missing;
    let filter_cost = filter_cost::store_cost(&db.file_stats(), s);
    let filtered: u64 = s.levels.iter().map(|l| l.filtered_keys).sum();
    let row = BenchRow {
        config: config.clone(),
        keys: args.keys,
        load_secs,
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
    };
    db.close()?;
    let mut row = row;
    if row.filter_bytes > 0 {
        row.budget = budget::sweep(args, config, &dir, row.filter_bytes)?;
    }
    if !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(row)
}

/// Runs the study and writes the report (table, JSON lines or CSV) to `out`.
pub fn run(args: &BenchArgs, out: &mut dyn Write) -> CliResult<Vec<BenchRow>> {
    // First, before the store and rayon start threads that would otherwise
    // take the signals and end the process with the stores left behind.
    interrupt::install()
        .map_err(|e| CliError::new(format!("install the SIGINT / SIGTERM handler: {e}")))?;
    if args.configs.is_empty() {
        return Err(CliError::usage("--configs is empty"));
    }
    for (i, c) in args.configs.iter().enumerate() {
        if args.configs[..i].iter().any(|d| d.name == c.name) {
            return Err(CliError::usage(format!(
                "configuration {} is listed twice",
                c.name
            )));
        }
    }
    let zipf = match args.zipf {
        Some(s) if !(s.is_finite() && s >= 0.0) => {
            return Err(CliError::usage("--zipf must be a number >= 0"));
        }
        Some(s) => Some(Zipf::new(args.keys, s)),
        None => None,
    };
    // Bad compression flags are usage errors, found before anything is written.
    let mut o = bench_options(FilterOptions::none(), args.io);
    args.compression.apply(&mut o.compression, o.max_levels)?;
    // Output paths are checked before the (long) run starts.
    if let Some(path) = &args.plot {
        check_plot_path(path)?;
    }
    if let Some(d) = &args.dir {
        check_dir(d, &args.configs, args.reuse_dir)?;
        if args.io == IoMode::Direct {
            check_direct(d)?;
        }
    }
    let temp;
    let (parent, keep) = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(|e| CliError::usage(format!("--dir {}: {e}", d.display())))?;
            (d.clone(), true)
        }
        None => {
            temp = make_temp_dir()?;
            if args.io == IoMode::Direct {
                check_direct(&temp.0)?;
            }
            (temp.0.clone(), false)
        }
    };
    let text = !args.json && !args.csv;
    let dist = match args.zipf {
        Some(s) => format!("Zipf {s}"),
        None => "uniform".to_string(),
    };
    if text {
        writeln!(
            out,
            "bloomlsm bench: {} keys (16 B) with {} B values (made to compress to {}); {} missing + {} existing ({dist}) gets per configuration; seed {}",
            count(args.keys),
            args.value_size,
            args.value_ratio,
            count(args.lookups),
            count(args.lookups),
            args.seed
        )?;
        writeln!(
            out,
            "store: write buffer {}, target file {}, L1 {} x{} per level, {} blocks, {}, block cache off, compaction on the caller thread",
            bytes(o.write_buffer_size as u64),
            bytes(o.target_file_size),
            bytes(o.level1_max_bytes),
            o.level_size_multiplier,
            bytes(o.block_size as u64),
            describe_compression(&o.compression)
        )?;
        writeln!(
            out,
            "reads: {}; stores in {}",
            io_line(args.io),
            parent.display()
        )?;
        out.flush()?;
    }

    let mut rows: Vec<BenchRow> = Vec::new();
    for c in &args.configs {
        let row = run_config(args, c, &parent, keep, zipf.as_ref())?;
        if rows.is_empty() && text {
            writeln!(out, "shape: {}", row.shape)?;
            writeln!(out)?;
            out.flush()?;
        }
        if !args.quiet && !text {
            eprintln!(
                "{}: loaded in {:.1} s; shape {}",
                c.name, row.load_secs, row.shape
            );
        }
        if args.json {
            let none = rows.iter().find(|r| r.config.filters.policy.is_none());
            write_json(out, &json_row(&row, none))?;
            out.flush()?;
        }
        rows.push(row);
    }

    let none = rows
        .iter()
        .find(|r| r.config.filters.policy.is_none())
        .cloned();
    if args.csv {
        writeln!(out, "{}", csv_line(&csv_header()))?;
        for r in &rows {
            writeln!(out, "{}", csv_line(&csv_row(r, none.as_ref())))?;
        }
    } else if text {
        out.write_all(results_table(&rows, none.as_ref()).render().as_bytes())?;
        let first = &rows[0];
        for r in &rows[1..] {
            if r.shape_key != first.shape_key {
                writeln!(
                    out,
                    "note: {} got a different shape than {}: {}",
                    r.config.name, first.config.name, r.shape
                )?;
            }
        }
        for r in rows.iter().filter(|r| r.config.monkey.is_some()) {
            writeln!(
                out,
                "{}: bits/key per level {}",
                r.config.name,
                r.level_bits()
            )?;
        }
        for r in rows
            .iter()
            .filter(|r| !r.config.spends_nominal(r.bits_per_key))
        {
            writeln!(
                out,
                "(!) {} spends {:.2} bits/key, more than 2% away from its nominal {:.2}: it is not at the memory its name says",
                r.config.name,
                r.bits_per_key,
                r.config.nominal_bits_per_key()
            )?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "FPR: false positives / absent-key filter probes (store counters); predicted: the filter model at each file's real bits/key, weighted by probes per level."
        )?;
        writeln!(
            out,
            "build/key, probe: CPU of the store's filters, each level's policy timed on a 65,536-key filter; build weighted by keys, probe (absent key) by filter checks."
        )?;
        writeln!(
            out,
            "w-amp: the load's write amplification, bytes flushed and compacted over the keys and values written."
        )?;
        writeln!(
            out,
            "reads/missing get: data blocks read per missing-key get; predicted = sum of the modelled FPRs of the files each get probed. Saved: vs {}.",
            if none.is_some() {
                "the none configuration"
            } else {
                "the files each get would have read without filters"
            }
        )?;
        writeln!(out)?;
        writeln!(
            out,
            "Latency and bytes read per key, by phase ({}):",
            args.io_name()
        )?;
        out.write_all(phase_table(&rows, none.as_ref()).render().as_bytes())?;
        writeln!(
            out,
            "latency: per get from an HDR histogram (3 significant digits); multi_get: each call's time over its {MULTI_GET_BATCH} keys. store B: the store's count of data-block bytes read{}; device B: read_bytes of /proc/self/io over the phase (n/a off Linux){}.",
            if args.io == IoMode::Direct {
                " (whole 4 KiB sectors)"
            } else {
                " (block + trailer)"
            },
            if none.is_some() {
                "; saved: device bytes per get below the none configuration's"
            } else {
                ""
            }
        )?;
        for line in device_check(&rows, args.io) {
            writeln!(out, "{line}")?;
        }
        if args.filter_budget.is_some() {
            writeln!(out)?;
            writeln!(
                out,
                "Under a filter memory budget ({}, block cache off, filter partitions of {}): missing gets again",
                args.io_name(),
                bytes(args.partition_bytes() as u64)
            )?;
            let sweeps = rows
                .iter()
                .filter(|r| !r.budget.is_empty())
                .map(|r| (r.config.name.as_str(), &r.budget[..]));
            out.write_all(budget::table(sweeps).render().as_bytes())?;
            writeln!(
                out,
                "budget: fraction of the store's filter bytes allowed in memory; in memory: filter bytes the store kept there (files by probe chance per byte: L0 and the small levels first). filter reads: filter blocks read per missing get (one partition per probe of a filter not in memory); pred: the store's probe chance of each such file (the share of all its keys that lie in the file's range), summed. data reads: as in the first table. I/O per miss: filter + data reads. device B: bytes that reached the device per get."
            )?;
        }
    }

    if let Some(path) = &args.plot {
        let pb = progress(None, args.quiet, "filter-only FPR sweep");
        let bits: Vec<f64> = (2..=20).map(f64::from).collect();
        let sweep = fpr_sweep(
            &FilterKind::ALL,
            &bits,
            args.sweep_keys.max(1),
            args.sweep_probes.max(1),
            args.seed,
        );
        pb.finish_and_clear();
        let chart = plot::Chart {
            sweep: &sweep,
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
                        .map(|p| (p.pinned_bytes as f64, p.io(), p.predicted_io()))
                        .collect(),
                })
                .collect(),
        };
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
    }
    Ok(rows)
}

impl BenchArgs {
    /// `buffered` or `direct`.
    pub fn io_name(&self) -> &'static str {
        self.io.read_mode().name()
    }
}

/// The header's description of the read mode.
fn io_line(io: IoMode) -> &'static str {
    match io {
        IoMode::Buffered => "buffered (page cache)",
        IoMode::Direct => {
            "direct I/O (O_DIRECT, whole 4 KiB sectors: every data-block read reaches the device)"
        }
    }
}

/// Checks, before anything runs, that `dir` (or, if it does not exist yet,
/// its nearest existing ancestor) takes direct reads: a probe file is
/// written, read back with O_DIRECT and removed. A refusal, or a directory
/// where no file can be written, is a usage error in one line.
fn check_direct(dir: &Path) -> CliResult {
    let at = dir.ancestors().find(|a| a.is_dir()).unwrap_or(dir);
    let probe = at.join(format!(".bloomlsm-direct-probe-{}", std::process::id()));
    std::fs::write(&probe, [0u8; 4096]).map_err(|e| {
        CliError::usage(format!(
            "--io direct: cannot write a probe file in {} ({e})",
            at.display()
        ))
    })?;
    let read = RealFs.open_read_direct(&probe).and_then(|f| {
        let mut buf = [0u8; 4096];
        f.read_exact_at(&mut buf, 0)
    });
    let _ = std::fs::remove_file(&probe);
    match read {
        Ok(()) => Ok(()),
        Err(e) if direct::refused(&e) => Err(CliError::usage(format!(
            "--io direct: {}: {}; choose --dir on a disk that takes it, or --io buffered",
            at.display(),
            direct::REFUSED
        ))),
        Err(e) => Err(CliError::new(format!(
            "--io direct: read {}: {e}",
            probe.display()
        ))),
    }
}

/// Per-phase latency percentiles and bytes read per key.
pub fn phase_table(rows: &[BenchRow], none: Option<&BenchRow>) -> TextTable {
    let mut head = vec!["config", "phase", "mean"];
    head.extend(PERCENTILES.iter().map(|p| p.1));
    head.extend(["max", "store B", "device B", "dev/store", "saved"]);
    let mut t = TextTable::new(&head);
    let b = |v: f64| {
        if v.abs() < 10.0 {
            format!("{v:.2} B")
        } else if v < 0.0 {
            format!("-{}", bytes(-v.round() as u64))
        } else {
            bytes(v.round() as u64)
        }
    };
    for r in rows {
        for (i, (label, _)) in PHASES.iter().enumerate() {
            let p = &r.phases[i];
            let mut cells = vec![
                if i == 0 {
                    r.config.name.clone()
                } else {
                    String::new()
                },
                label.to_string(),
                report::duration_ns(p.mean_ns),
            ];
            cells.extend(
                p.percentiles_ns
                    .iter()
                    .map(|&v| report::duration_ns(v as f64)),
            );
            cells.push(report::duration_ns(p.max_ns as f64));
            cells.push(b(p.store_bytes_per_op()));
            cells.push(p.device_bytes_per_op().map_or("n/a".into(), b));
            cells.push(p.device_ratio().map_or("-".into(), |x| format!("{x:.3}")));
            cells.push(device_saved(r, none, i).map_or("-".into(), b));
            t.row(cells);
        }
    }
    t
}

/// In direct mode every data-block read is a device read: the kernel's
/// count must agree with the store's within 5% (phases that read at least
/// 1 MiB). In buffered mode, how much of what the store read reached the
/// device.
pub fn device_check(rows: &[BenchRow], io: IoMode) -> Vec<String> {
    let phases = || {
        rows.iter().flat_map(|r| {
            r.phases
                .iter()
                .zip(PHASES)
                .map(move |(p, (label, _))| (r, label, p))
        })
    };
    if phases().all(|(_, _, p)| p.device_bytes.is_none()) {
        return vec!["device bytes: n/a (no /proc/self/io on this system)".into()];
    }
    let (store, device) = phases().fold((0u64, 0u64), |(s, d), (_, _, p)| {
        (s + p.store_bytes, d + p.device_bytes.unwrap_or(0))
    });
    match io {
        IoMode::Buffered => vec![format!(
            "device check (buffered): {} of the {} the store read reached the device ({}); the page cache served the rest",
            bytes(device),
            bytes(store),
            percent((store > 0).then(|| device as f64 / store as f64))
        )],
        IoMode::Direct => {
            let checked: Vec<_> = phases()
                .filter(|(_, _, p)| p.store_bytes >= 1 << 20)
                .collect();
            let off: Vec<String> = checked
                .iter()
                .filter(|(_, _, p)| p.device_ratio().is_none_or(|x| (x - 1.0).abs() > 0.05))
                .map(|(r, label, p)| {
                    format!(
                        "{} {label}: device {} vs store {}",
                        r.config.name,
                        bytes(p.device_bytes.unwrap_or(0)),
                        bytes(p.store_bytes)
                    )
                })
                .collect();
            let mut lines = vec![format!(
                "device check (direct): {} of {} phases (those reading at least 1 MiB) agree with the store's count within 5%; overall device/store {:.3}",
                checked.len() - off.len(),
                checked.len(),
                device as f64 / store.max(1) as f64
            )];
            lines.extend(
                off.into_iter()
                    .map(|l| format!("  OFF BY MORE THAN 5%: {l}")),
            );
            if store > 0 && device == 0 {
                lines.push(
                    "  no byte reached a device: the stores' file system serves direct reads from memory (tmpfs does); choose --dir on a disk".into(),
                );
            }
            lines
        }
    }
}

/// A filter's CPU cost: one decimal below 100 ns.
fn small_ns(ns: f64) -> String {
    if ns < 100.0 {
        format!("{ns:.1} ns")
    } else {
        report::duration_ns(ns)
    }
}

/// The study's main table.
pub fn results_table(rows: &[BenchRow], none: Option<&BenchRow>) -> TextTable {
    let mut t = TextTable::new(&[
        "config",
        "filter mem",
        "bits/key",
        "nominal",
        "pred FPR",
        "meas FPR",
        "reads/miss",
        "pred reads",
        "I/O saved",
        "miss get",
        "multi miss",
        "hit get",
        "build/key",
        "probe",
        "load",
        "w-amp",
        "disk",
        "ratio",
    ]);
    for r in rows {
        let (build, probe) = r.filter_cost.unzip();
        t.row(vec![
            r.config.name.clone(),
            format!("{:.2} MiB", r.filter_bytes as f64 / (1024.0 * 1024.0)),
            format!(
                "{:.2}{}",
                r.bits_per_key,
                if r.config.spends_nominal(r.bits_per_key) {
                    ""
                } else {
                    " (!)"
                }
            ),
            format!("{:.2}", r.config.nominal_bits_per_key()),
            percent(r.predicted_fpr()),
            percent(r.measured_fpr()),
            sig3(r.reads_per_missing_get()),
            sig3(r.predicted_reads_per_missing_get()),
            format!("{:.1}%", io_saved(r, none) * 100.0),
            report::duration_ns(r.missing_get_ns),
            report::duration_ns(r.multi_get_missing_ns),
            report::duration_ns(r.existing_get_ns),
            build.map_or("-".into(), small_ns),
            probe.flatten().map_or("-".into(), small_ns),
            format!("{:.1} s", r.load_secs),
            r.write_amplification()
                .map_or("-".into(), |x| format!("{x:.2}")),
            report::bytes(r.disk_bytes()),
            r.compression_ratio()
                .map_or("-".into(), |x| format!("{x:.2}x")),
        ]);
    }
    t
}

/// The JSON object of one configuration (fields in [`help`](crate::help)).
pub fn json_row(r: &BenchRow, none: Option<&BenchRow>) -> Value {
    let m = &r.missing;
    json!({
        "config": r.config.name,
        "policy": r.config.policy(),
        "keys": r.keys,
        "nominal_bits_per_key": r.config.nominal_bits_per_key(),
        "bits_per_key": r.bits_per_key,
        "spends_nominal": r.config.spends_nominal(r.bits_per_key),
        "filter_bytes": r.filter_bytes,
        "predicted_fpr": r.predicted_fpr(),
        "measured_fpr": r.measured_fpr(),
        "block_reads_per_missing_get": r.reads_per_missing_get(),
        "predicted_block_reads_per_missing_get": r.predicted_reads_per_missing_get(),
        "unfiltered_block_reads_per_missing_get": r.unfiltered_reads_per_missing_get(),
        "io_saved": io_saved(r, none),
        "missing_gets": m.gets_missing(),
        "filter_checks": m.total.filter_checks,
        "filter_negatives": m.total.filter_negatives,
        "false_positives": m.total.false_positives,
        "missing_get_ns": r.missing_get_ns,
        "multi_get_missing_ns": r.multi_get_missing_ns,
        "filter_build_ns_per_key": r.filter_cost.map(|c| c.0),
        "filter_probe_ns": r.filter_cost.and_then(|c| c.1),
        "existing_gets": r.existing.gets,
        "block_reads_per_existing_get": r.reads_per_existing_get(),
        "existing_get_ns": r.existing_get_ns,
        "load_seconds": r.load_secs,
        "write_amplification": r.write_amplification(),
        "user_bytes_written": m.user_bytes_written,
        "bytes_flushed": m.bytes_flushed,
        "bytes_compacted": m.bytes_compacted,
        "disk_bytes": r.disk_bytes(),
        "data_bytes": level_total(m).data_bytes,
        "data_raw_bytes": level_total(m).data_raw_bytes,
        "compression_ratio": r.compression_ratio(),
        "shape": shape_json(m),
        "io": r.io.read_mode().name(),
        "phases": r.phases.iter().zip(PHASES).enumerate().map(|(i, (p, (_, name)))| {
            let mut o = json!({
                "phase": name,
                "keys": p.ops,
                "mean_ns": p.mean_ns,
            });
            for ((_, _, key), v) in PERCENTILES.iter().zip(p.percentiles_ns) {
                o[format!("{key}_ns")] = json!(v);
            }
            o["max_ns"] = json!(p.max_ns);
            o["store_bytes"] = json!(p.store_bytes);
            o["device_bytes"] = json!(p.device_bytes);
            o["store_bytes_per_key"] = json!(p.store_bytes_per_op());
            o["device_bytes_per_key"] = json!(p.device_bytes_per_op());
            o["device_bytes_saved_per_key"] = json!(device_saved(r, none, i));
            o
        }).collect::<Vec<_>>(),
        "filter_budget": budget::json(&r.budget),
    })
}

/// Device bytes per key of phase `i` below the `none` row's (missing-key
/// phases only).
fn device_saved(r: &BenchRow, none: Option<&BenchRow>, i: usize) -> Option<f64> {
    if i >= 2 {
        return None;
    }
    Some(none?.phases[i].device_bytes_per_op()? - r.phases[i].device_bytes_per_op()?)
}

/// One point of the `--plot` sweep as JSON.
pub fn sweep_json(p: &SweepPoint) -> Value {
    json!({
        "filter": p.kind.name(),
        "requested_bits_per_key": p.requested_bits_per_key,
        "bits_per_key": p.bits_per_key,
        "probes_per_key": p.probes_per_key,
        "predicted_fpr": p.predicted_fpr,
        "measured_fpr": p.measured_fpr(),
        "probes": p.probes,
        "false_positives": p.false_positives,
    })
}

/// Column names of `--csv`: [`CSV_HEADER`], then [`CSV_PHASE_FIELDS`] for
/// each phase, prefixed by its name (e.g. `missing_get_p99_ns`).
pub fn csv_header() -> Vec<String> {
    let mut h: Vec<String> = CSV_HEADER.iter().map(|s| s.to_string()).collect();
    h.push("io".into());
    for (_, phase) in PHASES {
        h.extend(CSV_PHASE_FIELDS.iter().map(|f| format!("{phase}_{f}")));
    }
    h
}

/// Per-phase `--csv` fields.
pub const CSV_PHASE_FIELDS: &[&str] = &[
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
    "store_bytes",
    "device_bytes",
];

/// The fixed (phase-independent) `--csv` columns.
pub const CSV_HEADER: &[&str] = &[
    "config",
    "policy",
    "keys",
    "bits_per_key",
    "filter_bytes",
    "predicted_fpr",
    "measured_fpr",
    "block_reads_per_missing_get",
    "predicted_block_reads_per_missing_get",
    "io_saved",
    "missing_get_ns",
    "multi_get_missing_ns",
    "existing_get_ns",
    "filter_build_ns_per_key",
    "filter_probe_ns",
    "block_reads_per_existing_get",
    "load_seconds",
    "disk_bytes",
    "compression_ratio",
    "write_amplification",
    "user_bytes_written",
    "bytes_flushed",
    "bytes_compacted",
];

/// One `--csv` line's fields.
pub fn csv_row(r: &BenchRow, none: Option<&BenchRow>) -> Vec<String> {
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
    vec![
        r.config.name.clone(),
        r.config.policy(),
        r.keys.to_string(),
        r.bits_per_key.to_string(),
        r.filter_bytes.to_string(),
        opt(r.predicted_fpr()),
        opt(r.measured_fpr()),
        r.reads_per_missing_get().to_string(),
        r.predicted_reads_per_missing_get().to_string(),
        io_saved(r, none).to_string(),
        format!("{:.1}", r.missing_get_ns),
        format!("{:.1}", r.multi_get_missing_ns),
        format!("{:.1}", r.existing_get_ns),
        opt(r.filter_cost.map(|c| c.0)),
        opt(r.filter_cost.and_then(|c| c.1)),
        r.reads_per_existing_get().to_string(),
        format!("{:.3}", r.load_secs),
        r.disk_bytes().to_string(),
        opt(r.compression_ratio()),
        opt(r.write_amplification()),
        r.missing.user_bytes_written.to_string(),
        r.missing.bytes_flushed.to_string(),
        r.missing.bytes_compacted.to_string(),
    ]
    .into_iter()
    .chain(std::iter::once(r.io.read_mode().name().to_string()))
    .chain(r.phases.iter().flat_map(|p| {
        p.percentiles_ns
            .iter()
            .chain([&p.max_ns, &p.store_bytes])
            .map(u64::to_string)
            .chain(std::iter::once(
                p.device_bytes.map_or(String::new(), |b| b.to_string()),
            ))
            .collect::<Vec<_>>()
    }))
    .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn values_compress_about_as_stated() {
        use bloomlsm::sst::compression::Compressor;
        for ratio in [1.0, 0.5, 0.25] {
            let src = ValueSource::new(7, ratio, 100);
            let (mut block, mut v) = (Vec::new(), Vec::new());
            for i in 0..40 {
                src.value(i, &mut v);
                assert_eq!(v.len(), 100);
                block.extend_from_slice(&v);
            }
            let mut cx = Compressor::new(bloomlsm::Compression::Lz4).unwrap();
            let (stored, _) = cx.compress(&block);
            let got = stored.len() as f64 / block.len() as f64;
            eprintln!("ratio {ratio}: lz4 {got:.3}");
            assert!((got - ratio).abs() < 0.15, "ratio {ratio}: lz4 {got:.3}");
        }
    }

    #[test]
    fn parses_configs() {
        assert_eq!(parse_config("none").unwrap().filters, FilterOptions::none());
        let b = parse_config("blocked12.5").unwrap();
        assert_eq!(b.filters.policy, Some(FilterPolicy::blocked512(12.5)));
        assert_eq!(
            parse_config("bloom8").unwrap().filters.policy,
            Some(FilterPolicy::bloom(8.0))
        );
        let m = parse_config("monkey8").unwrap();
        assert_eq!(m.filters.monkey_avg_bits_per_key, Some(8.0));
        assert_eq!(m.policy(), "monkey blocked512 (8 b/k average)");
        assert_eq!(
            parse_config("monkey-bloom10")
                .unwrap()
                .filters
                .policy
                .unwrap()
                .kind(),
            FilterKind::Bloom
        );
        let h = parse_config("hybrid10").unwrap();
        assert_eq!(h.policy().split(" on L0-L1, ").count(), 2, "{}", h.policy());
        assert!(
            h.policy().starts_with("blocked512(10 b/k"),
            "{}",
            h.policy()
        );
        assert_eq!(
            parse_config("ribbon7").unwrap().filters.policy,
            Some(FilterPolicy::ribbon(7.0))
        );
        assert_eq!(
            parse_config("monkey-ribbon8").unwrap().monkey,
            Some((FilterKind::Ribbon, 8.0))
        );
        assert_eq!(
            parse_config("monkey-hybrid8").unwrap().policy(),
            "monkey blocked512 on L0-L1, ribbon below (8 b/k average)"
        );
        for bad in [
            "blocked",
            "bloomx",
            "foo10",
            "blocked0",
            "blocked1000",
            "",
            "ribbon",
            "hybridx",
        ] {
            assert!(parse_config(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn zipf_prefers_low_ranks() {
        let z = Zipf::new(1000, 1.0);
        let mut rng = SplitMix64::new(3);
        let draws: Vec<u64> = (0..10_000).map(|_| z.sample(&mut rng)).collect();
        assert!(draws.iter().all(|&d| d < 1000));
        let zeros = draws.iter().filter(|&&d| d == 0).count();
        // P(0) = 1 / H(1000) ≈ 0.134.
        assert!((1100..1600).contains(&zeros), "{zeros}");
    }

    #[test]
    fn families_are_disjoint_and_deterministic() {
        let p: HashSet<[u8; 16]> = (0..10_000).map(|i| present_key(7, i)).collect();
        assert_eq!(p.len(), 10_000);
        assert!((0..10_000).all(|i| !p.contains(&absent_key(7, i))));
        assert_eq!(present_key(7, 3), present_key(7, 3));
        assert_ne!(present_key(7, 3), present_key(8, 3));
    }

    #[test]
    fn below_is_in_range() {
        let mut r = SplitMix64::new(1);
        assert!((0..1000).all(|_| r.below(10) < 10));
        let u = r.unit();
        assert!((0.0..1.0).contains(&u));
    }
}
