//! Store options: memory, files, levels, durability, and the filter and
//! compression of each level.
//!
//! About 17% of this file is its unit tests (the `tests` module at the end) and
//! 34% doc comments: the options a store opens with are one file so that every
//! knob and its default read in one place.

use std::sync::Arc;

use crate::filter::range::{MAX_RANGE_BITS_PER_KEY, MIN_RANGE_BITS_PER_KEY};
use crate::filter::{FilterKind, FilterPolicy, PrefixExtractor, math};
use crate::fs::{FileSystem, RealFs};

pub use crate::fs::ReadMode;

/// Chained setters for an options struct: `value.field(x)` sets `field` and
/// returns the struct, so callers name only the fields they change and new
/// fields never break them (the structs are `#[non_exhaustive]`).
macro_rules! setters {
    ($ty:ident { $($field:ident : $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("Sets [`", stringify!($ty), "::", stringify!($field), "`].")]
                #[must_use]
                pub fn $field(mut self, value: $t) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}
pub(crate) use setters;

/// Checksum algorithm of new SSTable blocks (each file names its own).
pub use crate::sst::ChecksumType;
/// A codec for data blocks (each block's type byte names its own).
pub use crate::sst::Compression;

/// What opening a store does with a write-ahead log that does not replay to
/// its last byte ([`Options::wal_recovery`]); RocksDB's `WALRecoveryMode`.
///
/// Replay cannot tell the tail a crash tore off an append from a last record
/// damaged after it was acknowledged: both end the newest log with bytes that
/// hold no complete valid record. The modes differ in what they accept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WalRecovery {
    /// Refuse to drop anything: a log that ends in bytes holding no complete
    /// valid record (a torn tail, a damaged last record, or zeros) fails the
    /// open with [`crate::Error::Corruption`] naming the log and the offset
    /// of those bytes, before anything is written or deleted. Damage
    /// followed by valid records fails it too. For stores whose every write
    /// must survive (with [`Options::sync_writes`]) and that are closed
    /// cleanly: after a crash, or beside a writer in mid-append (a read-only
    /// open), the newest log may end in a torn write, and only
    /// [`WalRecovery::TolerateTornTail`] opens it. RocksDB's
    /// `kAbsoluteConsistency`.
    AbsoluteConsistency,
    /// Drop such a tail of a log, count its bytes in
    /// [`crate::Stats::wal_tail_bytes_dropped`], and (unless it is all
    /// zeros, or the open is read-only) first copy the log whole to `lost/`
    /// in the store's directory. Damage followed by valid records fails the
    /// open with [`crate::Error::Corruption`]. The default; RocksDB's
    /// `kTolerateCorruptedTailRecords`.
    #[default]
    TolerateTornTail,
    /// As [`WalRecovery::TolerateTornTail`], and also skip damaged records
    /// with valid records after them (and records whose write batch does not
    /// decode), counting them in [`crate::Stats::wal_records_salvaged`]:
    /// their writes are lost, and the sequence numbers of the logs are not
    /// checked for gaps. RocksDB's `kSkipAnyCorruptedRecords`.
    SkipDamagedRecords,
}

/// Which compression each level's new files get for their data blocks.
///
/// Files keep the compression they were built with (each block records its
/// own): changing these options affects only files written afterwards.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompressionOptions {
    /// The compression of every level unless overridden.
    pub default: Compression,
    /// Per-level overrides `(level, compression)`; a later entry for the
    /// same level wins.
    pub per_level: Vec<(usize, Compression)>,
}

impl Default for CompressionOptions {
    /// LZ4 on every level but L0, which stays uncompressed (as fjall's
    /// lsm-tree does by default): L0 files are short-lived and written on the
    /// flush path, deeper levels hold the bulk of the data.
    /// docs/design.md ("Compression") has the measurements behind it.
    fn default() -> Self {
        CompressionOptions {
            default: Compression::Lz4,
            per_level: vec![(0, Compression::None)],
        }
    }
}

impl CompressionOptions {
    /// The same compression on every level.
    pub fn uniform(c: Compression) -> Self {
        CompressionOptions {
            default: c,
            per_level: Vec::new(),
        }
    }

    /// No compression anywhere (every file format version 1).
    pub fn none() -> Self {
        Self::uniform(Compression::None)
    }

    /// The compression of a new file at `level`.
    ///
    /// ```
    /// use bloomlsm::options::{Compression, CompressionOptions};
    /// let c = CompressionOptions::default();
    /// assert_eq!(c.for_level(0), Compression::None);
    /// assert_eq!(c.for_level(3), Compression::Lz4);
    /// ```
    pub fn for_level(&self, level: usize) -> Compression {
        self.per_level
            .iter()
            .rev()
            .find(|(l, _)| *l == level)
            .map_or(self.default, |(_, c)| *c)
    }

    /// Every compression named (the default and the overrides).
    pub fn all(&self) -> impl Iterator<Item = Compression> + '_ {
        std::iter::once(self.default).chain(self.per_level.iter().map(|(_, c)| *c))
    }
}

/// Which filter each level's new files get.
///
/// Lookups probe every L0 file and one file per deeper level, so each L0 file
/// and each level is one "run" for the allocation below. Files keep the policy
/// they were built with: changing these options affects only files written
/// afterwards, and older files keep using (and reporting) their own filters.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct FilterOptions {
    /// The policy of every level unless overridden; `None`: no filters at all.
    pub policy: Option<FilterPolicy>,
    /// Per-level overrides `(level, policy)`; `None` removes the filter there.
    /// Under Monkey (`monkey_avg_bits_per_key`), `Some(policy)` names the
    /// level's filter family and the allocation chooses its bits on that
    /// family's model.
    pub per_level: Vec<(usize, Option<FilterPolicy>)>,
    /// No filter on the last (largest) level, as RocksDB's
    /// `optimize_filters_for_hits`: saves most of the memory when lookups are
    /// mostly for keys that exist, which the last level answers anyway.
    pub skip_last_level: bool,
    /// Monkey allocation (Dayan et al., SIGMOD 2017): spend this many bits per
    /// key *on average* over the whole store, giving each run the FPR that
    /// minimises the expected wasted reads of a missing-key lookup (smaller
    /// runs get more bits per key). Uses `policy`'s kind (blocked512 if none)
    /// on every level that `per_level` gives no family of its own; each run's
    /// bits are chosen on its family's model (`math::monkey_allocation_mixed`).
    /// Overrides the bits per key of `policy` and `per_level`.
    pub monkey_avg_bits_per_key: Option<f64>,
    /// Workload-aware allocation (ElasticBF's idea, applied when files are
    /// written): spend this many bits per key *on average* over the whole
    /// store, giving each file a flush or compaction writes the bits that
    /// minimise the expected wasted reads under the lookup rates observed
    /// on its key range, inherited from the files it replaces; once the
    /// store is idle (and in [`crate::Db::rebuild_filters`]) the files
    /// furthest from what the rates give them now are rewritten to it
    /// (docs/filters.md, "Workload-aware allocation"). Without history it
    /// allocates as Monkey does, by each run's probe chance. Uses the
    /// family of each level's policy as Monkey does; in `0.5..=40`; not
    /// with `monkey_avg_bits_per_key`.
    pub workload_avg_bits_per_key: Option<f64>,
}

impl Default for FilterOptions {
    /// blocked512 at 10 bits/key on every level.
    fn default() -> Self {
        FilterOptions::uniform(Some(FilterPolicy::default()))
    }
}

impl FilterOptions {
    /// The same policy (or none) on every level.
    pub fn uniform(policy: Option<FilterPolicy>) -> Self {
        FilterOptions {
            policy,
            per_level: Vec::new(),
            skip_last_level: false,
            monkey_avg_bits_per_key: None,
            workload_avg_bits_per_key: None,
        }
    }

    /// No filters anywhere.
    pub fn none() -> Self {
        Self::uniform(None)
    }

    /// The Monkey allocation of `kind` at `avg_bits_per_key` on average.
    pub fn monkey(kind: FilterKind, avg_bits_per_key: f64) -> Self {
        FilterOptions {
            policy: Some(FilterPolicy::new(kind, avg_bits_per_key)),
            per_level: Vec::new(),
            skip_last_level: false,
            monkey_avg_bits_per_key: Some(avg_bits_per_key),
            workload_avg_bits_per_key: None,
        }
    }

    /// The workload-aware allocation of `kind` at `avg_bits_per_key` on
    /// average over the store: each new file's bits follow the lookups
    /// observed on its key range ([`FilterOptions::workload_avg_bits_per_key`]).
    ///
    /// ```
    /// use bloomlsm::{FilterKind, FilterOptions};
    /// let f = FilterOptions::workload_aware(FilterKind::Blocked512, 10.0);
    /// assert_eq!(f.workload_avg_bits_per_key, Some(10.0));
    /// assert_eq!(f.monkey_avg_bits_per_key, None);
    /// ```
    pub fn workload_aware(kind: FilterKind, avg_bits_per_key: f64) -> Self {
        FilterOptions {
            policy: Some(FilterPolicy::new(kind, avg_bits_per_key)),
            per_level: Vec::new(),
            skip_last_level: false,
            monkey_avg_bits_per_key: None,
            workload_avg_bits_per_key: Some(avg_bits_per_key),
        }
    }

    /// The average bits per key of a Monkey or workload-aware allocation.
    fn allocated_average(&self) -> Option<f64> {
        self.monkey_avg_bits_per_key
            .or(self.workload_avg_bits_per_key)
    }

    /// Checks the allocation's average: a number in `0.5..=40`, and at most
    /// one of Monkey and the workload-aware allocation.
    pub fn validate(&self) -> crate::Result<()> {
        if self.monkey_avg_bits_per_key.is_some() && self.workload_avg_bits_per_key.is_some() {
            return Err(crate::Error::invalid(
                "filters: monkey_avg_bits_per_key and workload_avg_bits_per_key are exclusive",
            ));
        }
        for (name, avg) in [
            ("monkey_avg_bits_per_key", self.monkey_avg_bits_per_key),
            ("workload_avg_bits_per_key", self.workload_avg_bits_per_key),
        ] {
            if let Some(b) = avg
                && !(crate::filter::MIN_BITS_PER_KEY..=math::MONKEY_MAX_BITS).contains(&b)
            {
                return Err(crate::Error::invalid(format!(
                    "filters: {name} must be in {}..={}; got {b}",
                    crate::filter::MIN_BITS_PER_KEY,
                    math::MONKEY_MAX_BITS
                )));
            }
        }
        Ok(())
    }

    /// A hybrid design (RocksDB's `bloom_before_level`): `top` on the levels
    /// above `first_bottom_level` (L0 and the first levels: short-lived files
    /// whose filters must build fast), `bottom` from that level down (the
    /// long-lived bulk of the data, where a space-optimal filter such as
    /// Ribbon saves the most memory).
    ///
    /// ```
    /// use bloomlsm::{FilterOptions, FilterPolicy};
    /// let f = FilterOptions::hybrid(FilterPolicy::blocked512(10.0), FilterPolicy::ribbon(7.0), 2);
    /// let runs = [(0, 10), (1, 100), (2, 1000), (3, 10_000)];
    /// assert_eq!(f.policy_for(1, &runs, 3), Some(FilterPolicy::blocked512(10.0)));
    /// assert_eq!(f.policy_for(3, &runs, 3), Some(FilterPolicy::ribbon(7.0)));
    /// ```
    pub fn hybrid(top: FilterPolicy, bottom: FilterPolicy, first_bottom_level: usize) -> Self {
        FilterOptions {
            policy: Some(bottom),
            per_level: (0..first_bottom_level).map(|l| (l, Some(top))).collect(),
            skip_last_level: false,
            monkey_avg_bits_per_key: None,
            workload_avg_bits_per_key: None,
        }
    }

    /// [`FilterOptions::hybrid`] with the Monkey allocation of
    /// `avg_bits_per_key` on average over both families.
    pub fn hybrid_monkey(
        top: FilterKind,
        bottom: FilterKind,
        first_bottom_level: usize,
        avg_bits_per_key: f64,
    ) -> Self {
        FilterOptions {
            monkey_avg_bits_per_key: Some(avg_bits_per_key),
            ..Self::hybrid(
                FilterPolicy::new(top, avg_bits_per_key),
                FilterPolicy::new(bottom, avg_bits_per_key),
                first_bottom_level,
            )
        }
    }

    /// The policy for a new file at `level`.
    ///
    /// `runs` describes the store as it will be once the file is in place: the
    /// entries of each run (each L0 file, then each level ≥ 1) as
    /// `(level, entries)`; `last_level` is the deepest level holding data.
    pub fn policy_for(
        &self,
        level: usize,
        runs: &[(usize, u64)],
        last_level: usize,
    ) -> Option<FilterPolicy> {
        let override_at = |l: usize| self.per_level.iter().rev().find(|(x, _)| *x == l);
        if let Some((_, p)) = override_at(level)
            && (self.allocated_average().is_none() || p.is_none())
        {
            return *p;
        }
        if self.skip_last_level && level >= last_level && level > 0 {
            return None;
        }
        let base = self.policy.unwrap_or_default();
        // The workload-aware allocation sizes each file when it is written
        // (`db::compaction::allocation`); per level (an ingest, the family of
        // a level) it allocates as Monkey does.
        let Some(avg) = self.allocated_average() else {
            return self.policy;
        };
        // Under Monkey an override names its level's family; the allocation
        // chooses the bits, on each family's own model.
        let kind_at = |l: usize| match override_at(l) {
            Some((_, Some(p))) => p.kind(),
            _ => base.kind(),
        };
        let sizes: Vec<u64> = runs.iter().map(|&(_, n)| n.max(1)).collect();
        let kinds: Vec<FilterKind> = runs.iter().map(|&(l, _)| kind_at(l)).collect();
        let bits = math::monkey_allocation_mixed(&kinds, &sizes, &vec![1.0; sizes.len()], avg);
        // The run for `level`: the largest run at that level (for L0, the file
        // being written is one of several similar runs).
        let at = runs
            .iter()
            .enumerate()
            .filter(|(_, (l, _))| *l == level)
            .max_by_key(|(_, (_, n))| *n)
            .map(|(i, _)| i)?;
        let b = bits[at];
        if b < crate::filter::MIN_BITS_PER_KEY {
            None
        } else {
            Some(FilterPolicy::new(kind_at(level), b))
        }
    }
}

/// The default [`Options::max_open_files`] under a soft open-file limit of
/// 1,024 to 2,000 descriptors: LevelDB's default, under the common limit of
/// 1,024 with [`PROCESS_RESERVED_FILES`] left to the rest of the process.
pub const DEFAULT_MAX_OPEN_FILES: usize = 1000;

/// The descriptors [`default_max_open_files`] leaves to the rest of the
/// process under a small open-file limit: standard input, output and error,
/// the embedder's own files and sockets. (The store's own WAL, MANIFEST,
/// lock and directories are inside [`Options::max_open_files`]:
/// [`Options::reserved_files`].)
pub const PROCESS_RESERVED_FILES: usize = 24;

/// The default [`Options::max_open_files`]: [`max_open_files_under`] the
/// process's soft `RLIMIT_NOFILE` when the options are made
/// ([`DEFAULT_MAX_OPEN_FILES`] where the limit cannot be read).
pub fn default_max_open_files() -> usize {
    #[cfg(target_os = "linux")]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only writes the struct it is given.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            // `rlim_t` is narrower than u64 on some 32-bit targets.
            #[allow(clippy::useless_conversion)]
            return max_open_files_under(u64::from(limit.rlim_cur));
        }
    }
    DEFAULT_MAX_OPEN_FILES
}

/// The descriptors a store may hold by default under a soft open-file limit
/// of `soft_limit` (counted up to 2^20): half the limit, the other half left
/// to the embedder, or where the limit is small, as many as leave
/// [`PROCESS_RESERVED_FILES`] to the rest of the process, up to
/// [`DEFAULT_MAX_OPEN_FILES`]. Always below the limit:
///
/// | soft limit | 32 | 64 | 256 | 1,024 | 4,096 | 20,000 |
/// |---|---|---|---|---|---|---|
/// | default | 16 | 40 | 232 | 1,000 | 2,048 | 10,000 |
///
/// Under 20,000, a store of a few thousand tables never reopens one
/// (RocksDB's default keeps every table open, whatever the limit).
/// [`Options::default`] raises a result below
/// [`Options::min_max_open_files`] to that minimum, which a store needs to
/// run at all.
pub fn max_open_files_under(soft_limit: u64) -> usize {
    let soft = usize::try_from(soft_limit.min(1 << 20)).unwrap_or(1 << 20);
    (soft / 2).max(
        soft.saturating_sub(PROCESS_RESERVED_FILES)
            .min(DEFAULT_MAX_OPEN_FILES),
    )
}

/// The fewest table files [`Options::max_open_files`] must leave open at
/// once: twelve L0 files (LevelDB's stop trigger) and a run of the level
/// below, merged without reopening a file. A compaction with more inputs
/// than the table cache holds (L0 may reach the default
/// [`Options::l0_stop_trigger`] of 36 files) still runs, reopening its
/// inputs chunk by chunk.
pub const MIN_TABLE_FILES: usize = 16;

/// Options of [`crate::Db::open`]. The defaults suit a laptop.
///
/// Start from the defaults and change what you need with the setters,
/// which are named as the fields:
///
/// ```
/// use bloomlsm::{FilterOptions, FilterPolicy, Options};
/// let opts = Options::default()
///     .write_buffer_size(8 << 20)
///     .filters(FilterOptions::uniform(Some(FilterPolicy::ribbon(7.0))));
/// assert_eq!(opts.write_buffer_size, 8 << 20);
/// ```
///
/// The struct is `#[non_exhaustive]`: it gains fields without breaking
/// callers, so it is built this way rather than as a struct literal.
///
/// ```compile_fail
/// // A struct literal does not compile outside the crate, even with `..`.
/// let opts = bloomlsm::Options { sync_writes: true, ..bloomlsm::Options::default() };
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// Create the directory (and an empty store) if missing. Default true.
    pub create_if_missing: bool,
    /// Make a new store in a directory that holds files or directories no
    /// store makes. Default false: such a directory is refused
    /// ([`crate::Db::open`]), so a mistyped path never gets a store among
    /// someone else's files. Not part of the store's design.
    pub create_among_other_files: bool,
    /// A store opened read-only ([`crate::Db::open_read_only`]) refreshes
    /// itself this often ([`crate::Db::refresh`]) on a thread of its own,
    /// following its writer; a refresh that fails, or that a live
    /// snapshot holds back, leaves the view where it was until the next.
    /// Default `None`: the view moves only when `refresh` is called. Not
    /// part of the store's design; a writable store ignores it.
    pub refresh_interval: Option<std::time::Duration>,
    /// Bytes of writes buffered in the memtable before it is frozen and
    /// flushed to an L0 file. Default 4 MiB.
    pub write_buffer_size: usize,
    /// Uncompressed size of a data block. Default 4 KiB.
    pub block_size: usize,
    /// Checksum of new files' blocks. Default CRC32.
    pub checksum: ChecksumType,
    /// `true`: every write (or batch) is fsynced (`fdatasync`) before it is
    /// acknowledged: it survives a process kill and power loss. `false`
    /// (default): it is handed to the OS before it is acknowledged: it survives
    /// a process kill, not an OS crash or power loss.
    pub sync_writes: bool,
    /// Size at which compaction starts a new output file. Default 8 MiB.
    /// An output with files of the next level below its range may grow up
    /// to twice this size to end at a boundary of those files, as RocksDB's
    /// do; one with nothing below is cut at this size. (A flush writes one
    /// L0 file, whatever its size.)
    pub target_file_size: u64,
    /// Target bytes of level 1; level n+1 targets `level_size_multiplier` times
    /// level n. With [`Options::dynamic_level_bytes`] (the default), the
    /// least target of the base level instead. Default 32 MiB.
    pub level1_max_bytes: u64,
    /// Growth factor between levels. Default 10.
    pub level_size_multiplier: u64,
    /// Number of L0 files that triggers an L0 → L1 (or base level)
    /// compaction. Default 6: each such merge rewrites the files of the
    /// level below it overlaps, so waiting for six files rather than four
    /// rewrites it a third less often (docs/design.md, "The L0 triggers").
    pub l0_compaction_trigger: usize,
    /// Number of L0 files at which each write is delayed by 1 ms. Default 20
    /// (RocksDB's).
    pub l0_slowdown_trigger: usize,
    /// Number of L0 files at which writes wait for compaction. Default 36
    /// (RocksDB's).
    pub l0_stop_trigger: usize,
    /// Number of levels (L0 .. L{max_levels-1}). Default 7.
    pub max_levels: usize,
    /// Edits a MANIFEST takes before the store starts a new one holding the
    /// whole state as one edit (and points `CURRENT` at it). An open replays
    /// at most this many edits; a store wholly in a bucket
    /// (`BucketConfig::whole_store`) keeps each edit as an object a cold
    /// open GETs. Default 128; at least 1.
    pub max_manifest_edits: u64,
    /// Bytes of data blocks kept in the block cache; 0 disables it. Index and
    /// filter blocks of every open file stay in memory regardless (accounted in
    /// [`crate::Stats`]), unless [`Options::metadata_memory_budget`] leaves
    /// some out: those are read through this cache. Default 8 MiB.
    pub block_cache_capacity: usize,
    /// Filters per level. Default blocked512 at 10 bits/key everywhere.
    pub filters: FilterOptions,
    /// Target bytes of one filter partition in new tables; 0 writes each
    /// filter as one block. A file's filter larger than this is split into
    /// partitions picked by key hash, so that a filter not held in memory
    /// ([`Options::metadata_memory_budget`]) costs one small block read per
    /// probe instead of its whole size (RocksDB's partitioned filters, with
    /// 4 KiB partitions by default there). Part of the store's design.
    /// Default 0.
    pub filter_partition_bytes: usize,
    /// Target bytes of one index partition in new tables; 0 writes each
    /// table's index as one block. A file's index larger than this is
    /// written as partitions of about that size plus a small top-level
    /// index over them (RocksDB's two-level index, `kTwoLevelIndexSearch`),
    /// so that an index not held in memory
    /// ([`Options::metadata_memory_budget`]) costs one small block read per
    /// lookup that reaches the file instead of its whole size. The top level
    /// always stays in memory. Part of the store's design. Default 0.
    pub index_partition_bytes: usize,
    /// How a key's prefix is taken, for prefix filters: each new table gets
    /// a filter over its keys' distinct prefixes, and
    /// [`crate::Db::scan_prefix`] skips the tables whose prefix filter rules
    /// the prefix out (RocksDB's prefix extractor; docs/filters.md). Keys
    /// outside the extractor's domain are stored and read as any other; a
    /// scan of a prefix outside it reads every table. Part of the store's
    /// design: a table records the extractor it was built with, and is not
    /// skipped under another. Reopening a store with another extractor
    /// keeps the recorded one unless [`Options::use_stored_design`] is
    /// false (then the new one applies to new tables, and the change is
    /// logged in `OPTIONS`); `Db::options()` shows the one in force.
    /// Default `None`: no prefix filters.
    pub prefix_extractor: Option<PrefixExtractor>,
    /// Bits per key of the range filters of new tables: `Some(b)` gives each
    /// table a Grafite range filter over the points of its keys
    /// ([`crate::filter::RangeFilter`], a key's point is its first eight
    /// bytes), and a [`crate::Db::scan`] bounded at both ends skips the
    /// tables whose range filter holds no point between its ends' points. An
    /// empty range of `L` points passes a table's filter with probability at
    /// most `L / 2^(b−2)` (docs/filters.md). In `2.0..=64.0`. Part of the
    /// store's design; a table's range filter answers rightly whatever the
    /// store's bits, so scans use every range filter that decodes. Default
    /// `None`: no range filters.
    pub range_filter_bits_per_key: Option<f64>,
    /// Bytes of table metadata — filter bits and index blocks — the store
    /// may hold in memory; `None` (the default) holds every file's filter
    /// and index. With a budget, what saves the most I/O per byte stays in
    /// memory (docs/design.md, "Metadata under a memory budget"): the
    /// filters of L0 and of the smallest levels first, since a lookup probes
    /// one file per level whatever the level's size (Monkey's observation,
    /// applied to memory rather than to bits), and the partitions of a
    /// file's index by the lookups that reach its data; the others are read
    /// on demand, through the block cache, one partition per probe (a whole
    /// filter, for an unpartitioned one). An index of one block, and the top
    /// level of a partitioned one, always stay in memory and count against
    /// the budget first. Filter-block and index-block reads are counted apart
    /// from data-block reads ([`crate::IoCounters::filter_block_reads`],
    /// [`crate::IoCounters::index_block_reads`]). Not part of the store's
    /// design: each open chooses.
    pub metadata_memory_budget: Option<u64>,
    /// Data-block compression per level. Default LZ4 below L0
    /// ([`CompressionOptions::default`]).
    pub compression: CompressionOptions,
    /// What [`crate::Db::open`] and [`crate::Db::open_read_only`] do with a
    /// write-ahead log they cannot replay whole: refuse it, drop its torn
    /// tail (the default), or also skip damaged records inside it. See
    /// [`WalRecovery`].
    pub wal_recovery: WalRecovery,
    /// Most key-range shards one compaction is split into, merged in
    /// parallel on rayon's thread pool (only compactions of at least four
    /// output files are split). Default: the number of CPUs, at most 4.
    pub max_subcompactions: usize,
    /// Run compactions on their background thread (flushes always have one
    /// of their own). When false, they only run in [`crate::Db::compact`]
    /// and [`crate::Db::maintain`] (tests and experiments). Default true.
    pub background_compaction: bool,
    /// Once no write has been acknowledged for a second, the background
    /// compaction thread merges L0 into the base level if it holds at least
    /// two files, below [`Options::l0_compaction_trigger`]: a store written
    /// in bursts and then read meets one file per level, not up to three
    /// more L0 files per missing key. It costs one merge per idle spell that
    /// finds two or more L0 files (docs/design.md, "Idle L0 merges").
    /// Needs `background_compaction`. Default true.
    pub idle_l0_compaction: bool,
    /// Size levels from the bottom up (RocksDB's
    /// `level_compaction_dynamic_level_bytes`): the last level
    /// (`max_levels - 1`) targets its actual data bytes, each level above it
    /// `level_size_multiplier` times less, up to the *base level*, the highest
    /// level whose target is still at least `level1_max_bytes` (the last level
    /// itself while it is smaller). L0 compacts into the base level; the
    /// levels between L1 and the base stay empty, so the data sits in the
    /// fewest, deepest levels and a lookup probes fewer files. See
    /// [`Options::dynamic_level_targets`]. Default true (RocksDB's default
    /// too); false: fixed targets `level1_max_bytes · multiplier^(n-1)` and L0
    /// compacts into L1.
    pub dynamic_level_bytes: bool,
    /// Every file operation of the store goes through this. Default: the
    /// operating system's ([`crate::fs::RealFs`]); tests put a fault-injecting
    /// one here.
    pub fs: Arc<dyn FileSystem>,
    /// How table files are read: through the page cache (default
    /// [`ReadMode::Buffered`]) or with direct I/O ([`ReadMode::Direct`]:
    /// lookups' and compactions' data-block reads reach the device; a file
    /// system that refuses direct I/O makes [`crate::Db::open`] fail, unless
    /// [`ReadMode::DirectOrBuffered`] asks to fall back). Not part of the
    /// store's design: each open chooses.
    pub read_mode: ReadMode,
    /// The file descriptors the store may hold open at once (RocksDB's and
    /// LevelDB's name; LevelDB's default). [`Options::reserved_files`] of
    /// them are set aside for the store's other files (WAL, MANIFEST, lock,
    /// directory, flush and compaction outputs, tables created ahead); the
    /// rest bound the table files held open ([`crate::sst::TableCache`]).
    /// Past that bound the file of a table not read lately is closed and
    /// reopened by the next read that needs it, counted in
    /// [`crate::Stats::table_reopens`]; its index and pinned filter stay in
    /// memory. At least [`Options::min_max_open_files`]; `usize::MAX`
    /// never closes a table's file. Not part of the store's design: each
    /// open chooses. Default [`default_max_open_files`]: below the process's
    /// soft open-file limit (half of it from 2,048 descriptors; 40 under 64),
    /// and at least [`Options::min_max_open_files`].
    pub max_open_files: usize,
    /// When the store records a design (its `OPTIONS` file: the filters,
    /// prefix extractor, range filter bits, compression, block size, checksum, file and level
    /// sizes above), open it with that design instead of these fields'. `false`: these fields replace the
    /// stored design, and the change is logged in `OPTIONS`. A new store
    /// records these fields either way. Default true.
    pub use_stored_design: bool,
    /// Filter designs for named keyspaces, each in place of the design the
    /// keyspace's OPTIONS file records (which a writable open then records
    /// instead): how a keyspace's design changes after its creation, as
    /// `use_stored_design` off changes the default keyspace's. Its files
    /// follow it as they are rewritten, or at once with
    /// [`crate::Keyspace::rebuild_filters`]. [`crate::Db::advise_keyspaces`]
    /// gives one per keyspace that shares a filter memory budget. A name
    /// the store has no keyspace for fails the open. Default: none.
    pub keyspace_filters: Vec<(String, FilterOptions)>,
}

impl Default for Options {
    fn default() -> Self {
        let mut o = Options {
            create_if_missing: true,
            create_among_other_files: false,
            refresh_interval: None,
            write_buffer_size: 4 << 20,
            block_size: 4096,
            checksum: ChecksumType::default(),
            sync_writes: false,
            target_file_size: 8 << 20,
            level1_max_bytes: 32 << 20,
            level_size_multiplier: 10,
            l0_compaction_trigger: 6,
            l0_slowdown_trigger: 20,
            l0_stop_trigger: 36,
            max_levels: 7,
            max_manifest_edits: 128,
            block_cache_capacity: 8 << 20,
            filters: FilterOptions::default(),
            filter_partition_bytes: 0,
            index_partition_bytes: 0,
            prefix_extractor: None,
            range_filter_bits_per_key: None,
            metadata_memory_budget: None,
            compression: CompressionOptions::default(),
            wal_recovery: WalRecovery::default(),
            max_subcompactions: std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
            background_compaction: true,
            idle_l0_compaction: true,
            dynamic_level_bytes: true,
            fs: RealFs::shared(),
            read_mode: ReadMode::Buffered,
            max_open_files: default_max_open_files(),
            use_stored_design: true,
            keyspace_filters: Vec::new(),
        };
        // The defaults are always valid: under a limit too small for the
        // minimum, the store fails only if it opens more files than the
        // limit allows.
        o.max_open_files = o.max_open_files.max(o.min_max_open_files());
        o
    }
}

impl Options {
    /// Target bytes of `level` (≥ 1).
    pub fn level_max_bytes(&self, level: usize) -> u64 {
        let mut b = self.level1_max_bytes;
        for _ in 1..level {
            b = b.saturating_mul(self.level_size_multiplier);
        }
        b
    }

    /// The level targets of [`Options::dynamic_level_bytes`] when the last
    /// level holds `bottom_bytes` of data: `(base, targets)`, where `base` is
    /// the level L0 compacts into and `targets[l]` is level l's target in
    /// bytes: `bottom_bytes` for the last level, the target of the level below
    /// divided by `level_size_multiplier` for the levels from `base` up, and 0
    /// for L0 and the (empty) levels above `base`. Walking up from the last
    /// level, `base` is the highest level whose target is still at least
    /// `level1_max_bytes`; the last level while it is smaller than that.
    pub fn dynamic_level_targets(&self, bottom_bytes: u64) -> (usize, Vec<u64>) {
        let bottom = self.max_levels - 1;
        let mut targets = vec![0u64; self.max_levels];
        targets[bottom] = bottom_bytes;
        let mut base = bottom;
        for l in (1..bottom).rev() {
            let t = targets[l + 1] / self.level_size_multiplier;
            if t < self.level1_max_bytes {
                break;
            }
            targets[l] = t;
            base = l;
        }
        (base, targets)
    }

    /// Descriptors of [`Options::max_open_files`] set aside for the store's
    /// files other than the tables it reads: the LOCK, two WALs and two
    /// MANIFESTs (each while the next replaces it), a directory or small
    /// file (`CURRENT`, `OPTIONS`) being written, the flush's output, the
    /// four tables the files thread creates ahead, and per compaction shard
    /// (`max_subcompactions`, counted up to 16) the table being written and
    /// one being synced.
    pub fn reserved_files(&self) -> usize {
        12 + 2 * self.max_subcompactions.clamp(1, 16)
    }

    /// The smallest accepted [`Options::max_open_files`]: the
    /// [reserved](Options::reserved_files) descriptors and
    /// [`MIN_TABLE_FILES`] tables (from 30 to 60 with these options'
    /// `max_subcompactions`).
    pub fn min_max_open_files(&self) -> usize {
        self.reserved_files() + MIN_TABLE_FILES
    }

    /// The table files the store holds open at most:
    /// [`Options::max_open_files`] less the
    /// [reserved](Options::reserved_files) descriptors.
    pub fn table_cache_capacity(&self) -> usize {
        self.max_open_files.saturating_sub(self.reserved_files())
    }

    /// Checks that the options make sense.
    pub fn validate(&self) -> crate::Result<()> {
        let bad = |what: &str| Err(crate::Error::invalid(what));
        self.filters.validate()?;
        if self.write_buffer_size < 4096 {
            return bad("write_buffer_size must be at least 4096");
        }
        if self.block_size < 64 || self.block_size > (1 << 24) {
            return bad("block_size must be in 64..=16 MiB");
        }
        if !(2..=32).contains(&self.max_levels) {
            return bad("max_levels must be in 2..=32");
        }
        if self.max_manifest_edits == 0 {
            return bad("max_manifest_edits must be at least 1");
        }
        if self.level_size_multiplier < 2 {
            return bad("level_size_multiplier must be at least 2");
        }
        if self.l0_compaction_trigger == 0
            || self.l0_slowdown_trigger < self.l0_compaction_trigger
            || self.l0_stop_trigger < self.l0_slowdown_trigger
        {
            return bad("need 0 < l0_compaction_trigger <= l0_slowdown_trigger <= l0_stop_trigger");
        }
        if self.target_file_size < 4096 {
            return bad("target_file_size must be at least 4096");
        }
        if self.filter_partition_bytes != 0
            && !(64..=1 << 24).contains(&self.filter_partition_bytes)
        {
            return bad("filter_partition_bytes must be 0 or in 64..=16 MiB");
        }
        if self.index_partition_bytes != 0 && !(64..=1 << 24).contains(&self.index_partition_bytes)
        {
            return bad("index_partition_bytes must be 0 or in 64..=16 MiB");
        }
        if let Some(e) = &self.prefix_extractor {
            e.validate()?;
        }
        if let Some(b) = self.range_filter_bits_per_key
            && !(MIN_RANGE_BITS_PER_KEY..=MAX_RANGE_BITS_PER_KEY).contains(&b)
        {
            return Err(crate::Error::invalid(format!(
                "range_filter_bits_per_key must be in {MIN_RANGE_BITS_PER_KEY}..={MAX_RANGE_BITS_PER_KEY}; got {b}"
            )));
        }
        if self.max_open_files < self.min_max_open_files() {
            return Err(crate::Error::invalid(format!(
                "max_open_files must be at least {} ({} for the store's other files \
                 with max_subcompactions {}, {MIN_TABLE_FILES} for tables); got {}",
                self.min_max_open_files(),
                self.reserved_files(),
                self.max_subcompactions,
                self.max_open_files
            )));
        }
        if let Some(c) = self.compression.all().find(|c| !c.is_available()) {
            return Err(crate::Error::invalid(format!(
                "{c} compression needs bloomlsm's `zstd` feature, which this build lacks"
            )));
        }
        if let Some((l, _)) = self.compression.per_level.iter().find(|(l, _)| *l >= 64) {
            return Err(crate::Error::invalid(format!(
                "compression set for level {l}; levels are below 64"
            )));
        }
        Ok(())
    }
}

// `default` has no setter: it would shadow `CompressionOptions::default()`;
// `CompressionOptions::uniform(c)` sets it.
setters!(CompressionOptions {
    per_level: Vec<(usize, Compression)>,
});

setters!(FilterOptions {
    policy: Option<FilterPolicy>,
    per_level: Vec<(usize, Option<FilterPolicy>)>,
    skip_last_level: bool,
    monkey_avg_bits_per_key: Option<f64>,
    workload_avg_bits_per_key: Option<f64>,
});

setters!(Options {
    create_if_missing: bool,
    create_among_other_files: bool,
    refresh_interval: Option<std::time::Duration>,
    write_buffer_size: usize,
    block_size: usize,
    checksum: ChecksumType,
    sync_writes: bool,
    target_file_size: u64,
    level1_max_bytes: u64,
    level_size_multiplier: u64,
    l0_compaction_trigger: usize,
    l0_slowdown_trigger: usize,
    l0_stop_trigger: usize,
    max_levels: usize,
    max_manifest_edits: u64,
    block_cache_capacity: usize,
    filters: FilterOptions,
    filter_partition_bytes: usize,
    index_partition_bytes: usize,
    prefix_extractor: Option<PrefixExtractor>,
    range_filter_bits_per_key: Option<f64>,
    metadata_memory_budget: Option<u64>,
    compression: CompressionOptions,
    wal_recovery: WalRecovery,
    max_subcompactions: usize,
    background_compaction: bool,
    idle_l0_compaction: bool,
    dynamic_level_bytes: bool,
    fs: Arc<dyn FileSystem>,
    read_mode: ReadMode,
    max_open_files: usize,
    use_stored_design: bool,
    keyspace_filters: Vec<(String, FilterOptions)>,
});

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
