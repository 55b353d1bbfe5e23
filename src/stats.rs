//! Read-path accounting: what every lookup cost, per level and per file.
//!
//! Counters are relaxed atomics, always on, kept per file: a lookup adds its
//! costs once to each file it touched (one atomic add for a file whose filter
//! rules the key out), plus two global adds. Level totals are sums over the
//! level's files at [`crate::Db::stats`] time, plus the counts of files that
//! compactions removed from the level.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Costs and filter outcomes of lookups, as plain numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
    /// Bytes read from disk for data blocks.
    pub bytes_read: u64,
}

impl IoCounters {
    /// Observed false-positive rate: false positives over probes of keys the
    /// file did not hold (negatives + false positives). `None` before any.
    pub fn observed_fpr(&self) -> Option<f64> {
        let absent = self.filter_negatives + self.false_positives;
        (absent > 0).then(|| self.false_positives as f64 / absent as f64)
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
    }
}

/// [`IoCounters`] as shared atomics, one set per file. Only independent
/// counts are stored (`files_considered` and `filter_checks` are sums of
/// others), so a probe that a filter rules out costs one atomic add.
#[derive(Debug, Default)]
pub(crate) struct AtomicIo {
    key_range_skips: AtomicU64,
    filter_negatives: AtomicU64,
    filter_positives: AtomicU64,
    false_positives: AtomicU64,
    unusable_filter_reads: AtomicU64,
    unfiltered_reads: AtomicU64,
    block_reads: AtomicU64,
    cache_hits: AtomicU64,
    bytes_read: AtomicU64,
}

impl AtomicIo {
    pub(crate) fn add(&self, o: &IoCounters) {
        for (a, v) in [
            (&self.key_range_skips, o.key_range_skips),
            (&self.filter_negatives, o.filter_negatives),
            (&self.filter_positives, o.filter_positives),
            (&self.false_positives, o.false_positives),
            (&self.unusable_filter_reads, o.unusable_filter_reads),
            (&self.unfiltered_reads, o.unfiltered_reads),
            (&self.block_reads, o.block_reads),
            (&self.cache_hits, o.cache_hits),
            (&self.bytes_read, o.bytes_read),
        ] {
            if v != 0 {
                a.fetch_add(v, Relaxed);
            }
        }
    }

    pub(crate) fn load(&self) -> IoCounters {
        let c = IoCounters {
            key_range_skips: self.key_range_skips.load(Relaxed),
            filter_negatives: self.filter_negatives.load(Relaxed),
            filter_positives: self.filter_positives.load(Relaxed),
            false_positives: self.false_positives.load(Relaxed),
            unusable_filter_reads: self.unusable_filter_reads.load(Relaxed),
            unfiltered_reads: self.unfiltered_reads.load(Relaxed),
            block_reads: self.block_reads.load(Relaxed),
            cache_hits: self.cache_hits.load(Relaxed),
            bytes_read: self.bytes_read.load(Relaxed),
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
        for a in [
            &self.key_range_skips,
            &self.filter_negatives,
            &self.filter_positives,
            &self.false_positives,
            &self.unusable_filter_reads,
            &self.unfiltered_reads,
            &self.block_reads,
            &self.cache_hits,
            &self.bytes_read,
        ] {
            a.store(0, Relaxed);
        }
    }
}

/// Global lookup counters.
#[derive(Debug, Default)]
pub(crate) struct GetCounters {
    pub gets: AtomicU64,
    pub found: AtomicU64,
    pub memtable_answers: AtomicU64,
    /// Data blocks read (disk or cache) by lookups that found nothing.
    pub missing_block_reads: AtomicU64,
    /// Of those, the ones that went to disk.
    pub missing_disk_reads: AtomicU64,
    /// Σ over missing lookups of Σ over the files they probed of the file's
    /// modelled FPR, in units of 1e-9 reads.
    pub missing_predicted_nano: AtomicU64,
}

impl GetCounters {
    pub(crate) fn reset(&self) {
        for a in [
            &self.gets,
            &self.found,
            &self.memtable_answers,
            &self.missing_block_reads,
            &self.missing_disk_reads,
            &self.missing_predicted_nano,
        ] {
            a.store(0, Relaxed);
        }
    }
}

/// One level's shape and read costs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LevelStats {
    /// Level number.
    pub level: usize,
    /// Live files.
    pub files: usize,
    /// Entries in those files.
    pub entries: u64,
    /// Bytes of those files on disk.
    pub file_bytes: u64,
    /// Bytes of their data blocks (what level targets count).
    pub data_bytes: u64,
    /// Bytes of filter bits held in memory for them.
    pub filter_bytes: u64,
    /// Keys covered by usable filters.
    pub filtered_keys: u64,
    /// Files without a usable filter (none, or unknown policy).
    pub unfiltered_files: usize,
    /// The policies of the level's files, e.g. `"blocked512(10 b/k, k=6) x3"`.
    pub policies: String,
    /// Expected FPR of a probe of this level: the key-weighted mean of its
    /// files' modelled FPRs (1.0 for files without a usable filter).
    pub predicted_fpr: f64,
    /// Lookup costs on this level since the last reset: those of its current
    /// files (a file moved down by a compaction takes its counts along) and
    /// of the files compacted away from it.
    pub io: IoCounters,
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
}

/// A snapshot of the store's counters and shape ([`crate::Db::stats`]).
#[derive(Clone, Debug, Default, PartialEq)]
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
    /// Per level, L0 first.
    pub levels: Vec<LevelStats>,
    /// The level L0 compacts into: 1, or with
    /// [`crate::Options::dynamic_level_bytes`] the base level.
    pub base_level: usize,
    /// Sum of the per-level lookup costs.
    pub total: IoCounters,
    /// Bytes of filter bits in memory, all levels.
    pub filter_bytes: u64,
    /// Bytes of index blocks in memory, all levels.
    pub index_bytes: u64,
    /// Bytes currently held by the block cache.
    pub block_cache_bytes: u64,
    /// Bytes in the active and frozen memtables.
    pub memtable_bytes: u64,
    /// Flushes and compactions completed since open.
    pub flushes: u64,
    /// See [`Stats::flushes`].
    pub compactions: u64,
    /// Bytes written by flushes and compactions since open.
    pub bytes_compacted: u64,
    /// Times a write was delayed (L0 slowdown) or stalled (L0 stop or full memtables).
    pub write_slowdowns: u64,
    /// See [`Stats::write_slowdowns`].
    pub write_stalls: u64,
    /// Records dropped from a torn WAL tail at the last open.
    pub wal_tail_bytes_dropped: u64,
    /// Corrupt WAL records skipped at the last open (salvage mode only).
    pub wal_records_salvaged: u64,
}

impl Stats {
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
#[derive(Clone, Debug, PartialEq)]
pub struct FileStats {
    /// Level the file lives on.
    pub level: usize,
    /// File number (`NNNNNN.sst`).
    pub number: u64,
    /// Bytes on disk.
    pub file_bytes: u64,
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
    /// Modelled FPR of the file's filter (1.0 without a usable filter).
    pub predicted_fpr: f64,
    /// Lookup costs on this file since the last reset.
    pub io: IoCounters,
}
