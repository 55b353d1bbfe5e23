//! Read-path accounting: what every lookup cost, per level and per file,
//! as the plain data `Db::stats` returns.
//!
//! Counters are always on, kept per file: a lookup adds its costs once to
//! each file it touched, plus the store's lookup counts. Those live
//! counters are in `src/tally/` (`lookups.rs`): the counts every lookup
//! makes — a file's key-range skips and filter negatives, the store's
//! lookup counters — go to cells of the thread's own, without a locked
//! instruction; the rest are relaxed atomics. Level totals are sums over
//! the level's files at [`crate::Db::stats`] time, plus the counts of files
//! that compactions removed from the level.
//!
//! [`Stats`], [`LevelStats`], [`FileStats`] and [`IoCounters`] are plain data:
//! `Display` prints a readable summary (`display.rs`), [`Stats::tickers`]
//! names the counters as RocksDB's statistics do (`tickers.rs`), and with
//! the `serde` feature they implement `Serialize` and `Deserialize`.

mod display;
mod history;
mod tickers;

pub use history::LookupHistory;
pub use tickers::TickerValue;

/// Costs and filter outcomes of lookups, as plain numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct IoCounters {
    /// Files whose level or position made them candidates for a lookup.
    pub files_considered: u64,
    /// Candidates skipped because the key is outside the file's key range (no I/O).
    pub key_range_skips: u64,
    /// Filter probes (candidates inside the key range with a usable filter).
    pub filter_checks: u64,
    /// Probes that answered "absent": each is a data-block read saved.
    pub filter_negatives: u64,
    /// Probes that answered "may contain".
    pub filter_positives: u64,
    /// Positives for keys the file did not hold: wasted data-block reads.
    pub false_positives: u64,
    /// Candidates read without a filter because their filter is unusable
    /// (unknown policy, kind or version).
    pub unusable_filter_reads: u64,
    /// Candidates read without a filter because their file has none.
    pub unfiltered_reads: u64,
    /// Data blocks read from disk.
    pub block_reads: u64,
    /// Data blocks found in the block cache.
    pub cache_hits: u64,
    /// Bytes read from disk for data blocks: each block with its trailer;
    /// with [`crate::ReadMode::Direct`], the whole sectors read (of the
    /// file system's direct-I/O alignment: 512 bytes or 4 KiB).
    pub bytes_read: u64,
    /// Filter blocks (whole filters, or partitions) read from disk for
    /// filters not held in memory ([`crate::Options::metadata_memory_budget`]).
    pub filter_block_reads: u64,
    /// Filter blocks of such filters found in the block cache.
    pub filter_cache_hits: u64,
    /// Bytes read from disk for those filter blocks (trailers included).
    pub filter_bytes_read: u64,
    /// Index partitions read from disk for partitioned indexes not held in
    /// memory ([`crate::Options::metadata_memory_budget`]): at most one per
    /// lookup that reaches a file's data.
    pub index_block_reads: u64,
    /// Index partitions of such indexes found in the block cache.
    pub index_cache_hits: u64,
    /// Bytes read from disk for those index partitions (trailers included).
    pub index_bytes_read: u64,
    /// Prefix-filter probes: files inside a prefix scan's range whose prefix
    /// filter was built with the store's prefix extractor
    /// ([`crate::Options::prefix_extractor`]).
    pub prefix_checks: u64,
    /// Probes that answered "no key with the prefix": files the scan skipped.
    pub prefix_negatives: u64,
    /// Probes that answered "maybe" for a file the scan then found no key
    /// with the prefix in (from where the scan started in the file).
    pub prefix_false_positives: u64,
    /// Files inside a prefix scan's range read without prefix skipping
    /// because their prefix filter block does not decode, or was built with
    /// another extractor than the store's.
    pub prefix_unusable_reads: u64,
    /// Data blocks (from disk or the block cache) that prefix scans read
    /// from files their prefix filter let through: with every file's prefix
    /// filter usable, every data block a prefix scan reads.
    pub prefix_scan_blocks: u64,
    /// Range-filter probes: files inside the range of a scan bounded at both
    /// ends ([`crate::Db::scan`]) whose range filter decoded.
    pub range_checks: u64,
    /// Probes that answered "no key's point in the range": files the scan
    /// skipped.
    pub range_negatives: u64,
    /// Probes that answered "maybe" for a file the scan then found no key of
    /// the range in (from where the scan started in the file).
    pub range_false_positives: u64,
    /// Files inside such a scan's range read without range skipping because
    /// their range filter block does not decode.
    pub range_unusable_reads: u64,
    /// Data blocks (from disk or the block cache) that such scans read from
    /// files their range filter let through: with every file's range filter
    /// usable, every data block a bounded scan reads from files.
    pub range_scan_blocks: u64,
    /// Data blocks (from disk or the block cache) that scans
    /// ([`crate::Db::scan`], [`crate::Db::scan_prefix`], their seeks) read
    /// from files, whether or not a filter was checked: what a scan filter
    /// can save is the part of these that held none of the scan's entries.
    pub scan_blocks: u64,
    /// Of `scan_blocks`, the ones from which the scan read an entry (a
    /// version of a key) inside its bounds: the blocks a filter cannot
    /// save. The rest were touched for nothing: a seek that found its
    /// file's next key past the scan's end (RocksDB's
    /// `seek.data` against `seek.data.useful`, counted per block).
    pub scan_useful_blocks: u64,
    /// Of `scan_blocks`, the ones read from disk (one request each from a
    /// store whose tables are remote).
    pub scan_block_reads: u64,
    /// Bytes read from disk for them, as [`IoCounters::bytes_read`] counts.
    pub scan_bytes_read: u64,
}

impl IoCounters {
    /// Every counter zero (the same as `Default`, usable in constants).
    pub const ZERO: IoCounters = IoCounters {
        files_considered: 0,
        key_range_skips: 0,
        filter_checks: 0,
        filter_negatives: 0,
        filter_positives: 0,
        false_positives: 0,
        unusable_filter_reads: 0,
        unfiltered_reads: 0,
        block_reads: 0,
        cache_hits: 0,
        bytes_read: 0,
        filter_block_reads: 0,
        filter_cache_hits: 0,
        filter_bytes_read: 0,
        index_block_reads: 0,
        index_cache_hits: 0,
        index_bytes_read: 0,
        prefix_checks: 0,
        prefix_negatives: 0,
        prefix_false_positives: 0,
        prefix_unusable_reads: 0,
        prefix_scan_blocks: 0,
        range_checks: 0,
        range_negatives: 0,
        range_false_positives: 0,
        range_unusable_reads: 0,
        range_scan_blocks: 0,
        scan_blocks: 0,
        scan_useful_blocks: 0,
        scan_block_reads: 0,
        scan_bytes_read: 0,
    };

    /// The counters' names, in the order of [`IoCounters::to_array`]: the
    /// names the store's `LOOKUPS` file writes them under.
    pub(crate) const NAMES: [&'static str; 31] = [
        "files_considered",
        "key_range_skips",
        "filter_checks",
        "filter_negatives",
        "filter_positives",
        "false_positives",
        "unusable_filter_reads",
        "unfiltered_reads",
        "block_reads",
        "cache_hits",
        "bytes_read",
        "filter_block_reads",
        "filter_cache_hits",
        "filter_bytes_read",
        "index_block_reads",
        "index_cache_hits",
        "index_bytes_read",
        "prefix_checks",
        "prefix_negatives",
        "prefix_false_positives",
        "prefix_unusable_reads",
        "prefix_scan_blocks",
        "range_checks",
        "range_negatives",
        "range_false_positives",
        "range_unusable_reads",
        "range_scan_blocks",
        "scan_blocks",
        "scan_useful_blocks",
        "scan_block_reads",
        "scan_bytes_read",
    ];

    /// The counters in the order of [`IoCounters::NAMES`].
    pub(crate) fn to_array(self) -> [u64; 31] {
        [
            self.files_considered,
            self.key_range_skips,
            self.filter_checks,
            self.filter_negatives,
            self.filter_positives,
            self.false_positives,
            self.unusable_filter_reads,
            self.unfiltered_reads,
            self.block_reads,
            self.cache_hits,
            self.bytes_read,
            self.filter_block_reads,
            self.filter_cache_hits,
            self.filter_bytes_read,
            self.index_block_reads,
            self.index_cache_hits,
            self.index_bytes_read,
            self.prefix_checks,
            self.prefix_negatives,
            self.prefix_false_positives,
            self.prefix_unusable_reads,
            self.prefix_scan_blocks,
            self.range_checks,
            self.range_negatives,
            self.range_false_positives,
            self.range_unusable_reads,
            self.range_scan_blocks,
            self.scan_blocks,
            self.scan_useful_blocks,
            self.scan_block_reads,
            self.scan_bytes_read,
        ]
    }

    /// The counters from [`IoCounters::to_array`]'s order.
    pub(crate) fn from_array(a: [u64; 31]) -> IoCounters {
        IoCounters {
            files_considered: a[0],
            key_range_skips: a[1],
            filter_checks: a[2],
            filter_negatives: a[3],
            filter_positives: a[4],
            false_positives: a[5],
            unusable_filter_reads: a[6],
            unfiltered_reads: a[7],
            block_reads: a[8],
            cache_hits: a[9],
            bytes_read: a[10],
            filter_block_reads: a[11],
            filter_cache_hits: a[12],
            filter_bytes_read: a[13],
            index_block_reads: a[14],
            index_cache_hits: a[15],
            index_bytes_read: a[16],
            prefix_checks: a[17],
            prefix_negatives: a[18],
            prefix_false_positives: a[19],
            prefix_unusable_reads: a[20],
            prefix_scan_blocks: a[21],
            range_checks: a[22],
            range_negatives: a[23],
            range_false_positives: a[24],
            range_unusable_reads: a[25],
            range_scan_blocks: a[26],
            scan_blocks: a[27],
            scan_useful_blocks: a[28],
            scan_block_reads: a[29],
            scan_bytes_read: a[30],
        }
    }

    /// `self` less `other`, each counter at least 0.
    pub(crate) fn saturating_sub(self, other: &IoCounters) -> IoCounters {
        let (a, b) = (self.to_array(), other.to_array());
        IoCounters::from_array(std::array::from_fn(|i| a[i].saturating_sub(b[i])))
    }

    /// Observed false-positive rate: false positives over probes of keys the
    /// file did not hold (negatives + false positives). `None` before any.
    pub fn observed_fpr(&self) -> Option<f64> {
        let absent = self.filter_negatives + self.false_positives;
        (absent > 0).then(|| self.false_positives as f64 / absent as f64)
    }

    /// Observed false-positive rate of prefix filters: false positives over
    /// probes of prefixes the file did not hold. `None` before any.
    pub fn observed_prefix_fpr(&self) -> Option<f64> {
        let absent = self.prefix_negatives + self.prefix_false_positives;
        (absent > 0).then(|| self.prefix_false_positives as f64 / absent as f64)
    }

    /// Observed false-positive rate of range filters: false positives over
    /// probes of ranges the file held no key of. `None` before any.
    pub fn observed_range_fpr(&self) -> Option<f64> {
        let absent = self.range_negatives + self.range_false_positives;
        (absent > 0).then(|| self.range_false_positives as f64 / absent as f64)
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &IoCounters) {
        self.files_considered += other.files_considered;
        self.key_range_skips += other.key_range_skips;
        self.filter_checks += other.filter_checks;
        self.filter_negatives += other.filter_negatives;
        self.filter_positives += other.filter_positives;
        self.false_positives += other.false_positives;
        self.unusable_filter_reads += other.unusable_filter_reads;
        self.unfiltered_reads += other.unfiltered_reads;
        self.block_reads += other.block_reads;
        self.cache_hits += other.cache_hits;
        self.bytes_read += other.bytes_read;
        self.filter_block_reads += other.filter_block_reads;
        self.filter_cache_hits += other.filter_cache_hits;
        self.filter_bytes_read += other.filter_bytes_read;
        self.index_block_reads += other.index_block_reads;
        self.index_cache_hits += other.index_cache_hits;
        self.index_bytes_read += other.index_bytes_read;
        self.prefix_checks += other.prefix_checks;
        self.prefix_negatives += other.prefix_negatives;
        self.prefix_false_positives += other.prefix_false_positives;
        self.prefix_unusable_reads += other.prefix_unusable_reads;
        self.prefix_scan_blocks += other.prefix_scan_blocks;
        self.range_checks += other.range_checks;
        self.range_negatives += other.range_negatives;
        self.range_false_positives += other.range_false_positives;
        self.range_unusable_reads += other.range_unusable_reads;
        self.range_scan_blocks += other.range_scan_blocks;
        self.scan_blocks += other.scan_blocks;
        self.scan_useful_blocks += other.scan_useful_blocks;
        self.scan_block_reads += other.scan_block_reads;
        self.scan_bytes_read += other.scan_bytes_read;
    }
}

/// One level's shape and read costs.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct LevelStats {
    /// Level number.
    pub level: usize,
    /// Live files.
    pub files: usize,
    /// Entries in those files.
    pub entries: u64,
    /// Bytes of those files on disk.
    pub file_bytes: u64,
    /// Bytes of their data blocks as stored, compressed or not (what level
    /// targets count).
    pub data_bytes: u64,
    /// Bytes of their data blocks before compression (`data_raw_bytes /
    /// data_bytes` is the level's compression ratio).
    pub data_raw_bytes: u64,
    /// Bytes of their filters' bits (held in memory, or read on demand
    /// under a filter memory budget).
    pub filter_bytes: u64,
    /// Of those, the bytes held in memory (all of them without a budget).
    pub filter_pinned_bytes: u64,
    /// Keys covered by usable filters.
    pub filtered_keys: u64,
    /// Files without a usable filter (none, or unknown policy).
    pub unfiltered_files: usize,
    /// The policies of the level's files, e.g. `"blocked512(10 b/k, k=6) x3"`.
    pub policies: String,
    /// Expected FPR of a probe of this level: the key-weighted mean of its
    /// files' modelled FPRs (1.0 for files without a usable filter).
    pub predicted_fpr: f64,
    /// Files with a prefix filter the store uses (built with its prefix
    /// extractor, and decoded).
    pub prefix_filtered_files: usize,
    /// Expected FPR of a prefix-filter probe of this level: the mean over
    /// those files of their prefix filters' modelled FPRs (0 without any).
    pub prefix_predicted_fpr: f64,
    /// Files with a range filter that decoded.
    pub range_filtered_files: usize,
    /// The mean over those files of `points / cells` of their range
    /// filters: the modelled FPR of an empty range one point long, and per
    /// point of a longer one ([`LevelStats::range_predicted_fpr`]); 0
    /// without any.
    pub range_fpr_per_point: f64,
    /// Lookup costs on this level since the last reset: those of its current
    /// files (a file moved down by a compaction takes its counts along) and
    /// of the files compacted away from it.
    pub io: IoCounters,
    /// The flushes and compactions that wrote into this level since open.
    pub writes: LevelWrites,
}

/// What flushes and compactions did to one level since the store opened
/// (RocksDB's per-level compaction stats: `Rn`, `Rnp1`, `Write`, `Moved`):
/// where the write amplification of a workload comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct LevelWrites {
    /// Flushes (into L0) and compactions that wrote tables into this level.
    pub jobs: u64,
    /// Table bytes those jobs wrote.
    pub bytes_written: u64,
    /// Bytes of the input tables brought down from above: the level above,
    /// or a higher one when a full compaction skips empty levels (for a
    /// flush, none: its input is a memtable).
    pub bytes_read_above: u64,
    /// Bytes of this level's own tables merged with them and replaced.
    pub bytes_read_here: u64,
    /// Compactions that moved files into this level from above, nothing
    /// rewritten (each moves one file, or a run of neighbours that all go
    /// unchanged).
    pub moves: u64,
    /// Files that came into this level unchanged: by those moves, or beside
    /// files of the same run that had to be rewritten (for another filter
    /// policy or compression), a compaction counted as a job.
    pub files_moved: u64,
    /// Their bytes.
    pub bytes_moved: u64,
}

impl LevelWrites {
    /// Bytes written per byte brought down from above (RocksDB's per-level
    /// `W-Amp`, `Write / Rn`); `None` before any.
    pub fn amplification(&self) -> Option<f64> {
        (self.bytes_read_above > 0)
            .then(|| self.bytes_written as f64 / self.bytes_read_above as f64)
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &LevelWrites) {
        self.jobs += other.jobs;
        self.bytes_written += other.bytes_written;
        self.bytes_read_above += other.bytes_read_above;
        self.bytes_read_here += other.bytes_read_here;
        self.moves += other.moves;
        self.files_moved += other.files_moved;
        self.bytes_moved += other.bytes_moved;
    }
}

impl LevelStats {
    /// Filter bits per filtered key.
    pub fn filter_bits_per_key(&self) -> f64 {
        if self.filtered_keys == 0 {
            0.0
        } else {
            self.filter_bytes as f64 * 8.0 / self.filtered_keys as f64
        }
    }

    /// The modelled FPR of the level's range filters for an empty range of
    /// `len` points: `len ·` [`LevelStats::range_fpr_per_point`], at most 1
    /// (Grafite's bound; docs/filters.md).
    pub fn range_predicted_fpr(&self, len: u64) -> f64 {
        (len as f64 * self.range_fpr_per_point).min(1.0)
    }
}

/// A snapshot of the store's counters and shape ([`crate::Db::stats`]).
///
/// `Display` prints a summary: lookups, memory, background work, then one
/// line per level that has files or counts.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Stats {
    /// Lookups since the last reset.
    pub gets: u64,
    /// Of which found a value.
    pub gets_found: u64,
    /// Of which were answered by a memtable (value or tombstone).
    pub memtable_answers: u64,
    /// Data blocks read (from disk or cache) by lookups that found nothing.
    pub missing_get_block_reads: u64,
    /// Of those, reads that went to disk.
    pub missing_get_disk_reads: u64,
    /// The model's data-block reads for those lookups: the sum, over every file
    /// each missing lookup probed (key inside the file's range), of that file's
    /// modelled FPR (1 for a file without a usable filter).
    pub missing_get_predicted_reads: f64,
    /// Range-tombstone lists lookups searched: one per memtable or file
    /// holding range deletions whose key range the lookup's key is in,
    /// whatever the file's filter says (one binary search each).
    pub range_tombstone_checks: u64,
    /// Of those, files' (the rest are memtables').
    pub range_tombstone_files: u64,
    /// Lookups that found their key deleted by a range tombstone.
    pub gets_range_deleted: u64,
    /// Per level, L0 first.
    pub levels: Vec<LevelStats>,
    /// The level L0 compacts into: 1, or with
    /// [`crate::Options::dynamic_level_bytes`] the base level.
    pub base_level: usize,
    /// Sum of the per-level lookup costs.
    pub total: IoCounters,
    /// Bytes of filter bits, all levels (in memory, or read on demand under
    /// a filter memory budget).
    pub filter_bytes: u64,
    /// Of those, the bytes held in memory.
    pub filter_pinned_bytes: u64,
    /// Bytes of every file's index held whole in memory, all levels: one
    /// index block, or a partitioned index's top level and partitions
    /// (in memory, or read on demand under a metadata memory budget).
    pub index_bytes: u64,
    /// Of those, the bytes held in memory: every one-block index and top
    /// level, and the partitions the budget holds.
    pub index_pinned_bytes: u64,
    /// The table metadata held in memory: `filter_pinned_bytes +
    /// index_pinned_bytes`, what [`crate::Options::metadata_memory_budget`]
    /// bounds.
    pub metadata_memory_bytes: u64,
    /// Bytes currently held by the block cache.
    pub block_cache_bytes: u64,
    /// Bytes in the active and frozen memtables.
    pub memtable_bytes: u64,
    /// Flushes and compactions completed since open.
    pub flushes: u64,
    /// See [`Stats::flushes`].
    pub compactions: u64,
    /// Files rewritten in their level with the filter the level gets now,
    /// because the tree changed since they were written (a filter
    /// allocation that depends on the tree's shape, such as Monkey's); their
    /// bytes count in [`Stats::bytes_compacted`].
    pub filter_rebuilds: u64,
    /// Of [`Stats::filter_rebuilds`], the files whose data blocks were
    /// copied as stored around their new filters, since a merge of the
    /// file alone would have written the same blocks (the rest were merged
    /// as a compaction of the file alone).
    pub filter_rebuilds_copied: u64,
    /// Bytes of keys and values of the operations [`crate::Db::write`]
    /// (and `put`, `delete`) acknowledged since open: a delete counts its
    /// key. WAL framing, sequence numbers and the WAL itself are not counted.
    /// The denominator of [`Stats::write_amplification`].
    pub user_bytes_written: u64,
    /// Table bytes (whole files) written by memtable flushes since open; the
    /// flush of a replayed WAL at open is not counted.
    pub bytes_flushed: u64,
    /// Table bytes (whole files) written by compactions since open; a
    /// trivial move (a file relinked to the next level) writes none.
    pub bytes_compacted: u64,
    /// Times a write was delayed (L0 slowdown) or stalled (L0 stop or full memtables).
    pub write_slowdowns: u64,
    /// See [`Stats::write_slowdowns`].
    pub write_stalls: u64,
    /// Bytes dropped from a torn WAL tail at the last open. Unless they were
    /// all zeros, the log was first copied whole to `lost/` in the store's
    /// directory (docs/format.md §14).
    pub wal_tail_bytes_dropped: u64,
    /// Corrupt WAL records skipped at the last open
    /// ([`crate::WalRecovery::SkipDamagedRecords`] only).
    pub wal_records_salvaged: u64,
    /// Table files held open now under [`crate::Options::max_open_files`]
    /// (tables kept open while deleted aside).
    pub table_files_open: u64,
    /// Table files reopened since open, by reads (lookups, scans,
    /// compactions) of tables whose file the table cache had closed: I/O
    /// of their own, an open and a footer read each. Not reset.
    pub table_reopens: u64,
}

impl Stats {
    /// Write amplification: table bytes written by flushes and compactions
    /// over the user's bytes, `(bytes_flushed + bytes_compacted) /
    /// user_bytes_written`; `None` before any write. WAL bytes are not
    /// counted, as in RocksDB's compaction stats. RocksDB's `Sum` row
    /// `W-Amp` divides the same numerator by the flushed bytes instead
    /// (`1 + bytes_compacted / bytes_flushed`), so it ignores how much a
    /// flush shrinks or grows the data (compression, overwrites, per-entry
    /// overhead); the two agree when a flush writes what the user wrote.
    pub fn write_amplification(&self) -> Option<f64> {
        (self.user_bytes_written > 0).then(|| {
            (self.bytes_flushed + self.bytes_compacted) as f64 / self.user_bytes_written as f64
        })
    }

    /// Lookups that found nothing.
    pub fn gets_missing(&self) -> u64 {
        self.gets - self.gets_found
    }

    /// Data-block reads per missing-key lookup (disk or cache).
    pub fn block_reads_per_missing_get(&self) -> f64 {
        if self.gets_missing() == 0 {
            0.0
        } else {
            self.missing_get_block_reads as f64 / self.gets_missing() as f64
        }
    }

    /// The model's data-block reads per missing-key lookup,
    /// Σ(modelled FPR of each probed candidate file) averaged over lookups.
    pub fn predicted_block_reads_per_missing_get(&self) -> f64 {
        if self.gets_missing() == 0 {
            0.0
        } else {
            self.missing_get_predicted_reads / self.gets_missing() as f64
        }
    }
}

/// One file's shape and read costs ([`crate::Db::file_stats`]).
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct FileStats {
    /// Level the file lives on.
    pub level: usize,
    /// File number (`NNNNNN.sst`).
    pub number: u64,
    /// Bytes on disk.
    pub file_bytes: u64,
    /// Bytes of its data blocks as stored.
    pub data_bytes: u64,
    /// Bytes of its data blocks before compression.
    pub data_raw_bytes: u64,
    /// How its data blocks were compressed: `none`, `lz4` or `zstd:LEVEL`.
    pub compression: String,
    /// Entries.
    pub entries: u64,
    /// Smallest user key in the file.
    pub smallest: Vec<u8>,
    /// Largest user key in the file.
    pub largest: Vec<u8>,
    /// Filter policy name (`"none"` if the file has no filter).
    pub filter: String,
    /// Filter bits per key (0 without a usable filter).
    pub bits_per_key: f64,
    /// Whether the filter can be used.
    pub filter_usable: bool,
    /// Whether the filter's bits are held in memory (false: read on demand,
    /// under a filter memory budget, or no usable filter).
    pub filter_pinned: bool,
    /// Partitions of the filter (0: one whole block).
    pub filter_partitions: usize,
    /// Partitions of the index (0: one block, always held in memory).
    pub index_partitions: usize,
    /// Whether the index is all held in memory (false: its partitions are
    /// read on demand, under a metadata memory budget).
    pub index_pinned: bool,
    /// The store's estimate of the chance that a lookup probes this file
    /// (its key falls in the file's range), which ranks filters for the
    /// filter memory budget (`Version::probe_chances`).
    pub probe_chance: f64,
    /// Modelled FPR of the file's filter (1.0 without a usable filter).
    pub predicted_fpr: f64,
    /// Lookup costs on this file since the last reset.
    pub io: IoCounters,
}

#[cfg(all(test, feature = "serde"))]
mod tests {
    use super::*;

    #[test]
    fn stats_types_serialize() {
        fn both<T: serde::Serialize + serde::de::DeserializeOwned>() {}
        both::<Stats>();
        both::<LevelStats>();
        both::<FileStats>();
        both::<IoCounters>();
    }
}
