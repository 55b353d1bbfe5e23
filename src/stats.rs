//! Read-path accounting: what every lookup cost, per level and per file.
//!
//! About 11% of this file is its unit tests (the `tests` module at the end) and
//! 22% the `Display` impls that print the reports; it is one file because it is
//! one set of counters, from the cells a lookup adds to the plain data
//! `Db::stats` returns.
//!
//! Counters are always on, kept per file: a lookup adds its costs once to
//! each file it touched, plus the store's lookup counts. The counts every
//! lookup makes — a file's key-range skips and filter negatives, the
//! store's lookup counters — go to cells of the thread's own, without a
//! locked instruction (`src/tally.rs`); the rest are relaxed atomics.
//! Level totals are sums over the level's files at [`crate::Db::stats`]
//! time, plus the counts of files that compactions removed from the level.
//!
//! [`Stats`], [`LevelStats`], [`FileStats`] and [`IoCounters`] are plain data:
//! `Display` prints a readable summary, and with the `serde` feature they
//! implement `Serialize` and `Deserialize`.

use crate::tally::{self, Tally};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

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
    /// with [`crate::ReadMode::Direct`], the whole 4 KiB sectors read.
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
    };

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
    }
}

/// [`IoCounters`] as shared atomics, one set per file. Only independent
/// counts are stored (`files_considered` and `filter_checks` are sums of
/// others), so a probe that a filter rules out costs one add, to a cell
/// of the thread's own.
#[derive(Debug, Default)]
pub(crate) struct AtomicIo {
    /// `key_range_skips` and `filter_negatives`: the counts a lookup adds
    /// for every file it rules out, kept per thread ([`crate::tally`]).
    ruled_out: Tally<2, { tally::lines(2, false) }>,
    filter_positives: AtomicU64,
    false_positives: AtomicU64,
    unusable_filter_reads: AtomicU64,
    unfiltered_reads: AtomicU64,
    block_reads: AtomicU64,
    cache_hits: AtomicU64,
    bytes_read: AtomicU64,
    filter_block_reads: AtomicU64,
    filter_cache_hits: AtomicU64,
    filter_bytes_read: AtomicU64,
    index_block_reads: AtomicU64,
    index_cache_hits: AtomicU64,
    index_bytes_read: AtomicU64,
    prefix_checks: AtomicU64,
    prefix_negatives: AtomicU64,
    prefix_false_positives: AtomicU64,
    prefix_unusable_reads: AtomicU64,
    prefix_scan_blocks: AtomicU64,
    range_checks: AtomicU64,
    range_negatives: AtomicU64,
    range_false_positives: AtomicU64,
    range_unusable_reads: AtomicU64,
    range_scan_blocks: AtomicU64,
}

const KEY_RANGE_SKIPS: usize = 0;
const FILTER_NEGATIVES: usize = 1;

impl AtomicIo {
    /// Inlined, so that a constant `o` (e.g. a filter negative) compiles
    /// to its nonzero fields' adds alone.
    #[inline]
    pub(crate) fn add(&self, o: &IoCounters) {
        if o.key_range_skips != 0 {
            self.ruled_out.add(KEY_RANGE_SKIPS, o.key_range_skips);
        }
        if o.filter_negatives != 0 {
            self.ruled_out.add(FILTER_NEGATIVES, o.filter_negatives);
        }
        for (a, v) in [
            (&self.filter_positives, o.filter_positives),
            (&self.false_positives, o.false_positives),
            (&self.unusable_filter_reads, o.unusable_filter_reads),
            (&self.unfiltered_reads, o.unfiltered_reads),
            (&self.block_reads, o.block_reads),
            (&self.cache_hits, o.cache_hits),
            (&self.bytes_read, o.bytes_read),
            (&self.filter_block_reads, o.filter_block_reads),
            (&self.filter_cache_hits, o.filter_cache_hits),
            (&self.filter_bytes_read, o.filter_bytes_read),
            (&self.index_block_reads, o.index_block_reads),
            (&self.index_cache_hits, o.index_cache_hits),
            (&self.index_bytes_read, o.index_bytes_read),
            (&self.prefix_checks, o.prefix_checks),
            (&self.prefix_negatives, o.prefix_negatives),
            (&self.prefix_false_positives, o.prefix_false_positives),
            (&self.prefix_unusable_reads, o.prefix_unusable_reads),
            (&self.prefix_scan_blocks, o.prefix_scan_blocks),
            (&self.range_checks, o.range_checks),
            (&self.range_negatives, o.range_negatives),
            (&self.range_false_positives, o.range_false_positives),
            (&self.range_unusable_reads, o.range_unusable_reads),
            (&self.range_scan_blocks, o.range_scan_blocks),
        ] {
            if v != 0 {
                a.fetch_add(v, Relaxed);
            }
        }
    }

    /// Counts one lookup that the file's key range ruled out.
    #[inline]
    pub(crate) fn count_key_range_skip(&self) {
        self.ruled_out.add(KEY_RANGE_SKIPS, 1);
    }

    /// Counts one lookup that the file's filter ruled out.
    #[inline]
    pub(crate) fn count_filter_negative(&self) {
        self.ruled_out.add(FILTER_NEGATIVES, 1);
    }

    /// Starts loading the line a filter negative on this thread adds to.
    #[inline]
    pub(crate) fn prefetch(&self) {
        self.ruled_out.prefetch(FILTER_NEGATIVES);
    }

    pub(crate) fn load(&self) -> IoCounters {
        let c = IoCounters {
            key_range_skips: self.ruled_out.get(KEY_RANGE_SKIPS),
            filter_negatives: self.ruled_out.get(FILTER_NEGATIVES),
            filter_positives: self.filter_positives.load(Relaxed),
            false_positives: self.false_positives.load(Relaxed),
            unusable_filter_reads: self.unusable_filter_reads.load(Relaxed),
            unfiltered_reads: self.unfiltered_reads.load(Relaxed),
            block_reads: self.block_reads.load(Relaxed),
            cache_hits: self.cache_hits.load(Relaxed),
            bytes_read: self.bytes_read.load(Relaxed),
            filter_block_reads: self.filter_block_reads.load(Relaxed),
            filter_cache_hits: self.filter_cache_hits.load(Relaxed),
            filter_bytes_read: self.filter_bytes_read.load(Relaxed),
            index_block_reads: self.index_block_reads.load(Relaxed),
            index_cache_hits: self.index_cache_hits.load(Relaxed),
            index_bytes_read: self.index_bytes_read.load(Relaxed),
            prefix_checks: self.prefix_checks.load(Relaxed),
            prefix_negatives: self.prefix_negatives.load(Relaxed),
            prefix_false_positives: self.prefix_false_positives.load(Relaxed),
            prefix_unusable_reads: self.prefix_unusable_reads.load(Relaxed),
            prefix_scan_blocks: self.prefix_scan_blocks.load(Relaxed),
            range_checks: self.range_checks.load(Relaxed),
            range_negatives: self.range_negatives.load(Relaxed),
            range_false_positives: self.range_false_positives.load(Relaxed),
            range_unusable_reads: self.range_unusable_reads.load(Relaxed),
            range_scan_blocks: self.range_scan_blocks.load(Relaxed),
            ..IoCounters::default()
        };
        IoCounters {
            filter_checks: c.filter_negatives + c.filter_positives,
            files_considered: c.key_range_skips
                + c.filter_negatives
                + c.filter_positives
                + c.unusable_filter_reads
                + c.unfiltered_reads,
            ..c
        }
    }

    pub(crate) fn reset(&self) {
        self.ruled_out.reset();
        for a in [
            &self.filter_positives,
            &self.false_positives,
            &self.unusable_filter_reads,
            &self.unfiltered_reads,
            &self.block_reads,
            &self.cache_hits,
            &self.bytes_read,
            &self.filter_block_reads,
            &self.filter_cache_hits,
            &self.filter_bytes_read,
            &self.index_block_reads,
            &self.index_cache_hits,
            &self.index_bytes_read,
            &self.prefix_checks,
            &self.prefix_negatives,
            &self.prefix_false_positives,
            &self.prefix_unusable_reads,
            &self.prefix_scan_blocks,
            &self.range_checks,
            &self.range_negatives,
            &self.range_false_positives,
            &self.range_unusable_reads,
            &self.range_scan_blocks,
        ] {
            a.store(0, Relaxed);
        }
    }
}

/// Global lookup counters, indexed by [`Get`].
#[derive(Debug)]
pub(crate) struct GetCounters(Tally<GET_COUNTERS, { tally::lines(GET_COUNTERS, true) }>);

const GET_COUNTERS: usize = 9;

/// The lookup counters of [`GetCounters`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Get {
    Gets,
    Found,
    MemtableAnswers,
    /// Data blocks read (disk or cache) by lookups that found nothing.
    MissingBlockReads,
    /// Of those, the ones that went to disk.
    MissingDiskReads,
    /// Σ over missing lookups of Σ over the files they probed of the file's
    /// modelled FPR, in units of 1e-9 reads.
    MissingPredictedNano,
    /// Range-tombstone lists (of a memtable or a file) a lookup searched.
    RangeTombstoneChecks,
    /// Of those, files'.
    RangeTombstoneFiles,
    /// Lookups a range tombstone answered (the key deleted).
    RangeDeleted,
}

impl Default for GetCounters {
    fn default() -> Self {
        // Padded: every lookup adds to these, whatever it probes.
        GetCounters(Tally::padded())
    }
}

impl GetCounters {
    #[inline]
    pub(crate) fn add(&self, c: Get, v: u64) {
        self.0.add(c as usize, v);
    }

    /// Counts `n` lookups made on this thread, which from then on counts
    /// in a stripe of its own ([`crate::tally`]).
    #[inline]
    pub(crate) fn count_gets(&self, n: u64) {
        self.0.add_claiming(Get::Gets as usize, n);
    }

    pub(crate) fn get(&self, c: Get) -> u64 {
        self.0.get(c as usize)
    }

    pub(crate) fn reset(&self) {
        self.0.reset();
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

// ---------------------------------------------------------------- Display

/// Bytes as a short figure: `512 B`, `3.4 KiB`, `12.0 MiB`.
struct Size(u64);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
        if self.0 < 1024 {
            return write!(f, "{} B", self.0);
        }
        let (mut v, mut unit) = (self.0 as f64 / 1024.0, 0);
        while v >= 1024.0 && unit + 1 < UNITS.len() {
            v /= 1024.0;
            unit += 1;
        }
        write!(f, "{v:.1} {}", UNITS[unit])
    }
}

/// A key, printable ASCII kept and other bytes escaped, cut after 32 bytes.
struct Key<'a>(&'a [u8]);

impl fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cut = &self.0[..self.0.len().min(32)];
        write!(f, "\"{}\"", cut.escape_ascii())?;
        if cut.len() < self.0.len() {
            write!(f, "...({} bytes)", self.0.len())?;
        }
        Ok(())
    }
}

/// One line, e.g. `5 files considered: 1 out of key range, 4 filter checks
/// (3 negative, 1 false positives), 0 without a filter; 1 data blocks read
/// from disk (4.0 KiB), 0 cache hits`.
impl fmt::Display for IoCounters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} files considered: {} out of key range, {} filter checks ({} negative, {} false positives), \
             {} without a filter; {} data blocks read from disk ({}), {} cache hits",
            self.files_considered,
            self.key_range_skips,
            self.filter_checks,
            self.filter_negatives,
            self.false_positives,
            self.unusable_filter_reads + self.unfiltered_reads,
            self.block_reads,
            Size(self.bytes_read),
            self.cache_hits,
        )?;
        if self.filter_block_reads + self.filter_cache_hits > 0 {
            write!(
                f,
                "; {} filter blocks read from disk ({}), {} from the cache",
                self.filter_block_reads,
                Size(self.filter_bytes_read),
                self.filter_cache_hits
            )?;
        }
        if self.index_block_reads + self.index_cache_hits > 0 {
            write!(
                f,
                "; {} index partitions read from disk ({}), {} from the cache",
                self.index_block_reads,
                Size(self.index_bytes_read),
                self.index_cache_hits
            )?;
        }
        if self.prefix_checks + self.prefix_unusable_reads > 0 {
            write!(
                f,
                "; {} prefix filter checks ({} negative, {} false positives), {} unusable",
                self.prefix_checks,
                self.prefix_negatives,
                self.prefix_false_positives,
                self.prefix_unusable_reads
            )?;
        }
        if self.range_checks + self.range_unusable_reads > 0 {
            write!(
                f,
                "; {} range filter checks ({} negative, {} false positives), {} unusable",
                self.range_checks,
                self.range_negatives,
                self.range_false_positives,
                self.range_unusable_reads
            )?;
        }
        Ok(())
    }
}

/// One line, e.g. `L1: 3 files, 30000 entries, 1.2 MiB; blocked512(10 b/k,
/// k=6) x3, 10.02 bits/key, 36.6 KiB in memory, predicted FPR 0.955%;
/// lookups: ...` (the [`IoCounters`] line).
impl fmt::Display for LevelStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "L{}: {} files, {} entries, {}; ",
            self.level,
            self.files,
            self.entries,
            Size(self.file_bytes)
        )?;
        if self.filtered_keys == 0 {
            f.write_str("no filters")?;
        } else {
            write!(
                f,
                "{}, {:.2} bits/key, {} in memory, predicted FPR {:.3}%",
                self.policies,
                self.filter_bits_per_key(),
                Size(self.filter_bytes),
                self.predicted_fpr * 100.0
            )?;
        }
        write!(f, "; lookups: {}", self.io)?;
        let w = &self.writes;
        if w.jobs > 0 || w.files_moved > 0 {
            write!(
                f,
                "; written: {} in {} jobs (read {} from above, {} here), {} moved in ({} files in {} moves)",
                Size(w.bytes_written),
                w.jobs,
                Size(w.bytes_read_above),
                Size(w.bytes_read_here),
                Size(w.bytes_moved),
                w.files_moved,
                w.moves
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "gets: {} ({} found, {} answered by memtables); {:.4} data-block reads per missing get (predicted {:.4})",
            self.gets,
            self.gets_found,
            self.memtable_answers,
            self.block_reads_per_missing_get(),
            self.predicted_block_reads_per_missing_get()
        )?;
        writeln!(
            f,
            "memory: filters {} (of {}), indexes {} (of {}), block cache {}, memtables {}",
            Size(self.filter_pinned_bytes),
            Size(self.filter_bytes),
            Size(self.index_pinned_bytes),
            Size(self.index_bytes),
            Size(self.block_cache_bytes),
            Size(self.memtable_bytes)
        )?;
        writeln!(
            f,
            "background: {} flushes ({}), {} compactions ({}), {} filter rebuilds ({} copying data blocks); {} write slowdowns, {} stalls",
            self.flushes,
            Size(self.bytes_flushed),
            self.compactions,
            Size(self.bytes_compacted),
            self.filter_rebuilds,
            self.filter_rebuilds_copied,
            self.write_slowdowns,
            self.write_stalls
        )?;
        if let Some(w) = self.write_amplification() {
            writeln!(
                f,
                "writes: {} from the user; write amplification {w:.2}",
                Size(self.user_bytes_written)
            )?;
        }
        if self.table_reopens > 0 {
            writeln!(
                f,
                "table files: {} open, {} reopened",
                self.table_files_open, self.table_reopens
            )?;
        }
        if self.wal_tail_bytes_dropped > 0 || self.wal_records_salvaged > 0 {
            writeln!(
                f,
                "last open: {} bytes dropped from a torn WAL tail, {} corrupt WAL records skipped",
                self.wal_tail_bytes_dropped, self.wal_records_salvaged
            )?;
        }
        let active = |l: &&LevelStats| {
            l.files > 0 || l.io != IoCounters::default() || l.writes != LevelWrites::default()
        };
        for l in self.levels.iter().filter(active) {
            writeln!(f, "{l}")?;
        }
        write!(f, "all levels: {}", self.total)
    }
}

/// One line, e.g. `000012.sst L1: 10000 entries, 1.2 MiB, keys "a".."m";
/// blocked512, 10.02 bits/key, predicted FPR 0.955%; lookups: ...`.
impl fmt::Display for FileStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:06}.sst L{}: {} entries, {}, keys {}..{}; ",
            self.number,
            self.level,
            self.entries,
            Size(self.file_bytes),
            Key(&self.smallest),
            Key(&self.largest)
        )?;
        if self.compression != "none" {
            write!(
                f,
                "{} (data {:.2}x), ",
                self.compression,
                self.data_raw_bytes as f64 / self.data_bytes.max(1) as f64
            )?;
        }
        if self.filter_usable {
            write!(
                f,
                "{}, {:.2} bits/key, predicted FPR {:.3}%",
                self.filter,
                self.bits_per_key,
                self.predicted_fpr * 100.0
            )?;
            if self.filter_partitions > 0 {
                write!(f, ", {} partitions", self.filter_partitions)?;
            }
            if !self.filter_pinned {
                f.write_str(", read on demand")?;
            }
        } else if self.filter == "none" {
            f.write_str("no filter")?;
        } else {
            write!(f, "{} (unusable by this build)", self.filter)?;
        }
        write!(f, "; lookups: {}", self.io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_keys_print_short() {
        assert_eq!(Size(512).to_string(), "512 B");
        assert_eq!(Size(3 << 10).to_string(), "3.0 KiB");
        assert_eq!(Size(12 << 20).to_string(), "12.0 MiB");
        assert_eq!(Size(5 << 40).to_string(), "5.0 TiB");
        assert_eq!(Key(b"a\x00").to_string(), "\"a\\x00\"");
        assert_eq!(
            Key(&[b'k'; 40]).to_string(),
            format!("\"{}\"...(40 bytes)", "k".repeat(32))
        );
    }

    #[test]
    fn display_summarises_stats() {
        let io = IoCounters {
            files_considered: 5,
            key_range_skips: 1,
            filter_checks: 4,
            filter_negatives: 3,
            filter_positives: 1,
            false_positives: 1,
            block_reads: 1,
            bytes_read: 4096,
            ..IoCounters::default()
        };
        assert_eq!(
            io.to_string(),
            "5 files considered: 1 out of key range, 4 filter checks (3 negative, 1 false positives), \
             0 without a filter; 1 data blocks read from disk (4.0 KiB), 0 cache hits"
        );
        let level = LevelStats {
            level: 1,
            files: 3,
            entries: 30_000,
            file_bytes: 3 << 20,
            filter_bytes: 37_500,
            filtered_keys: 30_000,
            policies: "blocked512(10 b/k, k=6) x3".into(),
            predicted_fpr: 0.00955,
            io,
            ..LevelStats::default()
        };
        assert_eq!(
            level.to_string(),
            format!(
                "L1: 3 files, 30000 entries, 3.0 MiB; blocked512(10 b/k, k=6) x3, 10.00 bits/key, \
                 36.6 KiB in memory, predicted FPR 0.955%; lookups: {io}"
            )
        );
        let stats = Stats {
            gets: 10,
            levels: vec![LevelStats::default(), level.clone(), LevelStats::default()],
            total: io,
            ..Stats::default()
        };
        let text = stats.to_string();
        assert!(
            text.starts_with("gets: 10 (0 found, 0 answered by memtables)"),
            "{text}"
        );
        assert!(text.contains(&format!("\n{level}\n")), "{text}");
        assert!(!text.contains("L0:") && !text.contains("L2:"), "{text}");
        assert!(!text.contains("last open"), "{text}");
        assert!(text.ends_with(&format!("all levels: {io}")), "{text}");
        let file = FileStats {
            level: 1,
            number: 12,
            file_bytes: 1000,
            data_bytes: 900,
            data_raw_bytes: 900,
            compression: "none".into(),
            entries: 10,
            smallest: b"a".to_vec(),
            largest: b"m".to_vec(),
            filter: "none".into(),
            bits_per_key: 0.0,
            filter_usable: false,
            filter_pinned: false,
            filter_partitions: 0,
            index_partitions: 0,
            index_pinned: true,
            probe_chance: 1.0,
            predicted_fpr: 1.0,
            io: IoCounters::default(),
        };
        assert!(
            file.to_string().starts_with(
                "000012.sst L1: 10 entries, 1000 B, keys \"a\"..\"m\"; no filter; lookups: 0 files"
            ),
            "{file}"
        );
    }

    #[test]
    fn write_amplification_is_table_bytes_over_user_bytes() {
        let mut s = Stats::default();
        assert_eq!(s.write_amplification(), None);
        assert!(!s.to_string().contains("write amplification"));
        s.user_bytes_written = 1000;
        s.bytes_flushed = 1100;
        s.bytes_compacted = 2400;
        assert_eq!(s.write_amplification(), Some(3.5));
        assert!(
            s.to_string()
                .contains("writes: 1000 B from the user; write amplification 3.50"),
            "{s}"
        );
    }

    #[cfg(feature = "serde")]
    #[test]
    fn stats_types_serialize() {
        fn both<T: serde::Serialize + serde::de::DeserializeOwned>() {}
        both::<Stats>();
        both::<LevelStats>();
        both::<FileStats>();
        both::<IoCounters>();
    }
}
