//! The `bench` command's arguments ([`BenchArgs`]), `--io` ([`IoMode`]) and
//! the limits and parsers clap checks them with.

use std::path::{Path, PathBuf};

use bloomlsm::ReadMode;
use clap::{Args, ValueEnum};

use crate::design::CompressionArgs;
use crate::open_files::OpenFilesArg;
use crate::{CliError, CliResult, plot};

use super::benchmarks::{Benchmark, Distribution, parse_benchmark};
use super::configs::{BenchConfig, DEFAULT_CONFIGS, parse_config};

/// The most keys (and sweep keys and probes) `bench` takes, 268,435,456:
/// their hashes or Zipf table are held in memory, 8 bytes each.
pub const MAX_KEYS: u64 = 1 << 28;

/// Arguments of `bench`.
#[derive(Clone, Debug, Args)]
pub struct BenchArgs {
    /// Keys to insert into each store (16-byte random keys; at most 2^28).
    /// `--num` is db_bench's name for it.
    #[arg(long, visible_alias = "num", default_value_t = 1_000_000, value_name = "N",
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
    /// Run db_bench's workloads, in the order given, on one store (the first
    /// --configs configuration, default blocked10) and print db_bench's
    /// lines instead of the study: fillseq, fillrandom, overwrite (--keys
    /// puts each), readrandom, readmissing, seekrandom, readwhilewriting
    /// (--lookups reads each); flush and waitforcompaction (one step each:
    /// nothing else waits between workloads); and YCSB's core workloads
    /// ycsb-a to ycsb-f (--lookups operations each, on the --keys records a
    /// fill loaded).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_benchmark,
          conflicts_with_all = ["filter_budget", "csv", "zipf"])]
    pub benchmarks: Option<Vec<Benchmark>>,
    /// After each db_bench read workload (readrandom, readmissing,
    /// readwhilewriting), print the store's counters over it as db_bench's
    /// --statistics prints tickers (`rocksdb.bloom.filter.useful COUNT :
    /// N` lines, RocksDB's names; docs/benchmarks.md, "RocksDB's ticker
    /// names"); with --json, a `tickers` object in each read's line.
    #[arg(long, requires = "benchmarks")]
    pub statistics: bool,
    /// The fraction (0 to 1) of the YCSB workloads' reads that ask for keys
    /// the store never held (YCSB's reads always find their key).
    #[arg(long, value_name = "F", value_parser = parse_fraction, requires = "benchmarks")]
    pub miss_fraction: Option<f64>,
    /// Replace each YCSB workload's request distribution (zipfian for all
    /// but ycsb-d's latest). `hotspot`: 80% of the requests for the records
    /// whose keys are the lowest 20% of the key space (a range of the keys'
    /// order, not of record numbers, which the keys hash), absent reads
    /// beside them. `sliding`: the same split over a window of 20% of the
    /// key space that moves up the key order by a tenth of it per --lookups
    /// requests, across the run's workloads, wrapping at the top. With
    /// --workload range or prefix (uniform, hotspot or sliding): where the
    /// scans start, or which prefixes they ask for, the window moving per
    /// --lookups scans across a store's phases.
    #[arg(long, value_enum, value_name = "DIST")]
    pub request_distribution: Option<Distribution>,
    /// Write readwhilewriting's time series (one sample every
    /// --stats-interval-ms: reads/s, P50 / P99, FPR, data blocks per get, L0
    /// files, writer puts/s) to this file, CSV or JSON by its ending.
    #[arg(long, value_name = "FILE.csv|FILE.json", requires = "benchmarks")]
    pub timeseries: Option<PathBuf>,
    /// Make each read request of the --benchmarks store wait this long first,
    /// as on remote storage (an object store's first-byte latency, e.g. 20000
    /// for S3); with --read-latency-p99-us, the median of a log-normal wait.
    #[arg(long, value_name = "US", requires = "benchmarks",
          value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub read_latency_us: Option<u64>,
    /// Draw each request's wait from a log-normal with --read-latency-us as
    /// its median and this as its 99th percentile (at least the median).
    #[arg(long, value_name = "US", requires = "read_latency_us",
          value_parser = clap::value_parser!(u64).range(0..=100_000_000))]
    pub read_latency_p99_us: Option<u64>,
    /// USD per million read requests, for the cost per million operations
    /// of the --benchmarks reads and of the --store gets (default: S3 Standard's GET price, 0.0004
    /// USD per 1,000 requests in us-east-1).
    #[arg(long, default_value_t = 0.40, value_name = "USD", value_parser = parse_price)]
    pub price_per_million_gets: f64,
    /// The interval of readwhilewriting's samples (--timeseries, --plot).
    #[arg(long, default_value_t = 1000, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub stats_interval_ms: u64,
    /// --benchmarks: one `delete_range` after every N puts of fillseq,
    /// fillrandom and overwrite (db_bench's --writes_per_range_tombstone),
    /// from a random present key over about --range-tombstone-width keys.
    /// The reads then report the range-tombstone lists each lookup searched
    /// and the lookups a range tombstone answered.
    #[arg(long, value_name = "N", requires = "benchmarks",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub writes_per_range_tombstone: Option<u64>,
    /// The keys one such range delete spans, on average (db_bench's
    /// --range_tombstone_width; default 100).
    #[arg(long, value_name = "N", requires = "writes_per_range_tombstone",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub range_tombstone_width: Option<u64>,
    /// Filter configurations, comma-separated: `none`, `bloomB`, `blockedB`,
    /// `ribbonB` (the space-optimal Ribbon filter), `hybridB` (blocked512 at B
    /// bits/key on L0 and L1, Ribbon at B bits/key below: the same memory,
    /// fast builds for short-lived files),
    /// `monkeyB` (blocked512 with the Monkey allocation at B bits/key on
    /// average), `monkey-bloomB`, `monkey-ribbonB`, `monkey-hybridB` (the
    /// hybrid's two families under one Monkey budget), `workloadB` (blocked512
    /// with the workload-aware allocation at B bits/key on average: each
    /// written file sized by the lookups its key range saw), `fuse8`,
    /// `fuse16` (binary fuse filters with 8- and 16-bit fingerprints, whose
    /// size is their own); or a filter spec `FAMILY:BITS` (also
    /// `FAMILY:BITS:PROBES`, `FAMILY:fpr:F`), every level alike, with FAMILY
    /// one of blocked512, bloom, ribbon, fuse8, fuse16, e.g. `ribbon:7.5`.
    /// B may be fractional, e.g. `blocked12.5`. The default includes
    /// ribbon10 (blocked10's memory) and ribbon7 (blocked10's FPR).
    #[arg(long, default_value = DEFAULT_CONFIGS, value_delimiter = ',', value_parser = parse_config)]
    pub configs: Vec<BenchConfig>,
    /// Choose existing keys from a Zipf distribution with this exponent
    /// (e.g. 0.99) instead of uniformly.
    #[arg(long, value_name = "S")]
    pub zipf: Option<f64>,
    /// Keep the stores under this directory (one sub-directory per
    /// configuration) instead of a temporary directory that is removed. A
    /// directory that already holds stores is refused unless --reuse-dir.
    /// Each kept store takes about the loaded store's size (8 GB at 10^8
    /// keys): after the load, a run without room for all of them stops.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Put the stores' tables in an S3 bucket (build with `--features
    /// object-store`). With --benchmarks, the store is made in the bucket
    /// (its tables under PREFIX, cached in --bucket-cache-bytes of local
    /// disk), and each workload also reports the requests the bucket saw.
    /// In the point study, each configuration's store built on the local
    /// disk is also uploaded under PREFIX/CONFIGURATION/ and read with no
    /// disk cache (cold: each data-block read is one GET) and with every
    /// table in the disk cache (warm), --bucket-lookups gets per phase. The
    /// objects are deleted at the end, but for a --benchmarks store kept
    /// with --dir. Endpoint, region and credentials come from AWS_ENDPOINT,
    /// AWS_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
    #[arg(long, value_name = "s3://BUCKET/PREFIX", value_parser = parse_store,
          conflicts_with_all = ["filter_budget"])]
    pub store: Option<StoreUrl>,
    /// With --store: gets per phase against the bucket (missing and existing
    /// keys, cold and warm), the first of --lookups' keys.
    #[arg(long, default_value_t = 10_000, value_name = "N", requires = "store",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub bucket_lookups: u64,
    /// With --store --benchmarks: the most bytes of table data the local disk
    /// cache holds (0: none, every read a GET).
    #[arg(long, default_value_t = 1 << 30, value_name = "BYTES", requires = "store",
          value_parser = crate::parse_size)]
    pub bucket_cache_bytes: u64,
    /// With --store: the disk cache's unit, the least a GET that fills it
    /// asks for (a power of two, 4 KiB to 64 MiB; the library's default).
    #[arg(long, default_value_t = 1 << 20, value_name = "BYTES", requires = "store",
          value_parser = parse_chunk)]
    pub bucket_chunk_bytes: u64,
    /// Let --dir hold stores of an earlier run: each configuration's old store
    /// is deleted and rebuilt.
    #[arg(long, requires = "dir")]
    pub reuse_dir: bool,
    /// With --benchmarks: run them on the store an earlier run left in
    /// --dir (db_bench's --use_existing_db), with the design it records,
    /// instead of a new one; list no fill to read what it holds.
    #[arg(long, requires_all = ["dir", "benchmarks"], conflicts_with_all = ["reuse_dir", "store"])]
    pub use_existing_db: bool,
    /// How the stores read their tables: `buffered` (through the page cache,
    /// each store's files read into it once before its timed gets) or
    /// `direct` (O_DIRECT: every data-block read reaches the device; the
    /// stores' directory must be on a file system that takes it, see --dir).
    #[arg(long, value_enum, default_value_t = IoMode::Buffered, value_name = "MODE")]
    pub io: IoMode,
    /// Run the study inside a memory cgroup of its own limited to this many
    /// bytes (e.g. 512M, 2G; Linux), page cache included, so that buffered
    /// reads find in memory only what fits beside the process: a machine
    /// whose data is many times its memory. Needs the right to make a
    /// cgroup (root or a delegated subtree); refused, before anything is
    /// written, below what the run needs for its filters, indexes, block
    /// cache and memtables.
    #[arg(long, value_name = "BYTES", value_parser = crate::parse_size)]
    pub memory_ceiling: Option<u64>,
    #[command(flatten)]
    pub files: OpenFilesArg,
    /// What the study measures: `point` (gets of missing and existing keys
    /// under each --configs configuration), `prefix` (prefix scans of
    /// absent and present prefixes on one store with prefix filters: keys of
    /// 16 per 8-byte prefix, the first configuration's point filters;
    /// --lookups scans per phase) or `range` (scans bounded at both ends, of
    /// each --range-len, on one store per --range-bits with range filters:
    /// --lookups scans per length, --empty-fraction of them empty; --plot
    /// FILE.svg draws the FPR of empty ranges against their length beside
    /// the bound L/2^(B-2), and their data blocks). Both also measure a
    /// store without the filter, loaded alike, and what each filter saved
    /// against it; text, --json or --csv.
    #[arg(long, value_enum, default_value_t = Workload::Point, value_name = "W",
          conflicts_with_all = ["benchmarks", "filter_budget", "zipf"])]
    pub workload: Workload,
    /// `--workload range`: the lengths of the scanned ranges, in points (a
    /// key's point is its first 8 bytes), comma-separated (default
    /// 1,16,256,4096,65536).
    #[arg(long, value_name = "N,N,...", value_delimiter = ',',
          value_parser = clap::value_parser!(u64).range(1..=1 << 62))]
    pub range_len: Option<Vec<u64>>,
    /// `--workload range`: range filter bits per key, one store each,
    /// comma-separated, each in 2..=64 (default 16).
    #[arg(long, value_name = "B,B,...", value_delimiter = ',', value_parser = parse_range_bits)]
    pub range_bits: Option<Vec<f64>>,
    /// `--workload range`: the fraction (0 to 1) of the scans whose range
    /// holds no key (default 0.5); the others hold a present key's point.
    #[arg(long, value_name = "F", value_parser = parse_fraction)]
    pub empty_fraction: Option<f64>,
    /// `--workload range`: empty ranges start one point past a present
    /// key's (a scan resuming where data ends) instead of at random points.
    #[arg(long)]
    pub correlated: bool,
    /// Seed of keys, values and lookups.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Print one JSON object per configuration per line instead of the table
    /// (with --plot, the sweep as a last line; fields below).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV (a header line, then one line per configuration; with
    /// --workload prefix or range, one per store and phase).
    #[arg(long)]
    pub csv: bool,
    /// Also run the filter-only FPR sweep and write an SVG chart of it and of
    /// the data-block reads per missing get of each configuration (the name
    /// must end in .svg). With --benchmarks: a chart of readwhilewriting's
    /// time series instead.
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
    /// metadata memory budgets — fractions of its filter and index bytes,
    /// e.g. `0,0.1,0.5,1`; without a value `0,0.02,0.05,0.1,0.2,0.4,0.7,1`
    /// — and look the missing keys, then present keys, up again: the
    /// filters and index partitions that do not fit are read on demand, one
    /// partition per probe. Prints I/O per get (filter, index and data
    /// blocks) against the metadata held (and `--plot` draws it).
    #[arg(long, value_name = "F,F,...", num_args = 0..=1, require_equals = false,
          default_missing_value = DEFAULT_BUDGETS,
          value_delimiter = ',', value_parser = parse_budget)]
    pub filter_budget: Option<Vec<f64>>,
    /// Filter partition size of the stores built (0: whole filter blocks).
    /// Default 4096 with --filter-budget, otherwise 0.
    #[arg(long, value_name = "BYTES",
          value_parser = clap::value_parser!(u64).range(0..=1 << 24))]
    pub filter_partition_bytes: Option<u64>,
    /// Index partition size of the stores built (0: one index block per
    /// table). Default 4096 with --filter-budget, otherwise 0.
    #[arg(long, value_name = "BYTES",
          value_parser = clap::value_parser!(u64).range(0..=1 << 24))]
    pub index_partition_bytes: Option<u64>,
    /// Load the keys once per configuration, each store with its own filters
    /// from the start, instead of once for the whole study (each
    /// configuration's store then made from that load by rebuilding its
    /// filters): per-configuration load times and write amplification.
    #[arg(long)]
    pub reload: bool,
    /// Write the load's last N keys step by step, every flush and compaction
    /// on the caller's thread, and the keys before them with the store's
    /// background compaction thread (faster on more than one core; the tree
    /// then differs a little from run to run). A load of at most N keys
    /// builds the same tree every run. At least the last 32 memtables of
    /// keys go step by step whatever N is.
    #[arg(long, default_value_t = 1_000_000, value_name = "N")]
    pub stepwise_keys: u64,
    /// No progress bars, and nothing on stderr but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

impl BenchArgs {
    /// The filter partition size of the studied stores.
    pub fn partition_bytes(&self) -> usize {
        match self.filter_partition_bytes {
            Some(b) => b as usize,
            None if self.filter_budget.is_some() => DEFAULT_PARTITION_BYTES,
            None => 0,
        }
    }

    /// The index partition size of the studied stores.
    pub fn index_partition_bytes(&self) -> usize {
        match self.index_partition_bytes {
            Some(b) => b as usize,
            None if self.filter_budget.is_some() => DEFAULT_PARTITION_BYTES,
            None => 0,
        }
    }

    /// `--range-len`, or its default.
    pub fn range_lens(&self) -> Vec<u64> {
        self.range_len
            .clone()
            .unwrap_or_else(|| vec![1, 16, 256, 4096, 65536])
    }

    /// `--range-bits`, or its default.
    pub fn range_bits_list(&self) -> Vec<f64> {
        self.range_bits.clone().unwrap_or_else(|| vec![16.0])
    }

    /// `--empty-fraction`, or its default.
    pub fn empty_fraction(&self) -> f64 {
        self.empty_fraction.unwrap_or(0.5)
    }

    /// Whether a `--workload range` flag is given.
    pub fn has_range_flags(&self) -> bool {
        self.range_len.is_some()
            || self.range_bits.is_some()
            || self.empty_fraction.is_some()
            || self.correlated
    }

    /// `buffered` or `direct`.
    pub fn io_name(&self) -> &'static str {
        self.io.read_mode().name()
    }
}

/// `--workload`: what the study measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// Point lookups of missing and existing keys.
    Point,
    /// Prefix scans of absent and present prefixes.
    Prefix,
    /// Scans bounded at both ends, empty and not.
    Range,
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

/// Parses `--value-ratio`: a number in (0, 1].
fn parse_ratio(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|r| *r > 0.0 && *r <= 1.0)
        .ok_or_else(|| format!("{s:?}: the value ratio must be a number in (0, 1]"))
}

/// Parses one `--range-bits` value: bits per key in 2..=64.
fn parse_range_bits(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|b| (2.0..=64.0).contains(b))
        .ok_or_else(|| format!("{s:?}: range filter bits per key must be a number in 2..=64"))
}

/// Parses `--miss-fraction` and `--empty-fraction`: a number in [0, 1].
fn parse_fraction(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|f| (0.0..=1.0).contains(f))
        .ok_or_else(|| format!("{s:?}: the fraction must be a number in [0, 1]"))
}

/// Where `--store` puts the tables: `s3://BUCKET/PREFIX`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreUrl {
    /// The bucket.
    pub bucket: String,
    /// The key prefix, ending in `/` unless empty.
    pub prefix: String,
}

impl std::fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.prefix)
    }
}

/// Parses `--store`: `s3://BUCKET` or `s3://BUCKET/PREFIX`.
fn parse_store(s: &str) -> Result<StoreUrl, String> {
    let rest = s
        .strip_prefix("s3://")
        .ok_or_else(|| format!("{s:?}: give the bucket as s3://BUCKET/PREFIX"))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let ok_bucket = (3..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    if !ok_bucket {
        return Err(format!(
            "{s:?}: {bucket:?} is not a bucket name (3 to 63 lowercase letters, digits, '-' and '.')"
        ));
    }
    let parts: Vec<&str> = prefix.split('/').filter(|p| !p.is_empty()).collect();
    if parts.iter().any(|p| *p == "." || *p == "..") {
        return Err(format!("{s:?}: the prefix has a . or .. segment"));
    }
    let prefix = if parts.is_empty() {
        String::new()
    } else {
        format!("{}/", parts.join("/"))
    };
    Ok(StoreUrl {
        bucket: bucket.to_string(),
        prefix,
    })
}

/// Parses `--bucket-chunk-bytes`: a power of two from 4 KiB to 64 MiB.
fn parse_chunk(s: &str) -> Result<u64, String> {
    let n = crate::parse_size(s)?;
    if n.is_power_of_two() && (4 << 10..=64 << 20).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{s:?}: give a power of two from 4K to 64M"))
    }
}

/// The budgets of `--filter-budget` without values: fractions of the
/// store's metadata bytes (filters and indexes).
const DEFAULT_BUDGETS: &str = "0,0.02,0.05,0.1,0.2,0.4,0.7,1";

/// Filter and index partition size of the studied stores with
/// `--filter-budget` unless `--filter-partition-bytes` or
/// `--index-partition-bytes` says otherwise (RocksDB's default metadata
/// block size).
const DEFAULT_PARTITION_BYTES: usize = 4096;

/// Parses one `--filter-budget` fraction.
fn parse_budget(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!(
            "{s:?} is not a fraction of the store's metadata memory (0..=1)"
        )),
    }
}

/// Parses `--price-per-million-gets`: a finite number >= 0.
fn parse_price(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p >= 0.0)
        .ok_or_else(|| format!("{s:?}: the price must be a number >= 0"))
}

/// Checks, before anything runs, that the chart can be written at `path`:
/// a name ending in `.svg`, not a directory, in an existing directory where
/// a file can be created (the chart is written to `FILE.svg.tmp` there and
/// renamed into place).
pub fn check_plot_path(path: &Path) -> CliResult {
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
    plot::check_writable(path).map_err(|e| bad(format!("cannot create a file there ({e})")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_checked() {
        assert_eq!(parse_budget("0.25"), Ok(0.25));
        assert_eq!(parse_budget("1"), Ok(1.0));
        for bad in ["-0.1", "1.5", "x", "", "NaN"] {
            assert!(parse_budget(bad).is_err(), "{bad}");
        }
    }
}
