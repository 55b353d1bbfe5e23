//! The read path's live counters: a file's lookup costs ([`AtomicIo`])
//! and the store's lookup counts ([`GetCounters`]), kept in [`Tally`]
//! cells where every lookup adds to them, loaded as the plain
//! [`IoCounters`] and figures of [`crate::Stats`].

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::{Tally, lines};
use crate::stats::IoCounters;

/// [`IoCounters`] as shared atomics, one set per file. Only independent
/// counts are stored (`files_considered` and `filter_checks` are sums of
/// others), so a probe that a filter rules out costs one add, to a cell
/// of the thread's own.
#[derive(Debug, Default)]
pub(crate) struct AtomicIo {
    /// `key_range_skips` and `filter_negatives`: the counts a lookup adds
    /// for every file it rules out, kept per thread ([`super`]).
    ruled_out: Tally<2, { lines(2, false) }>,
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
    scan_blocks: AtomicU64,
    scan_useful_blocks: AtomicU64,
    scan_block_reads: AtomicU64,
    scan_bytes_read: AtomicU64,
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
            (&self.scan_blocks, o.scan_blocks),
            (&self.scan_useful_blocks, o.scan_useful_blocks),
            (&self.scan_block_reads, o.scan_block_reads),
            (&self.scan_bytes_read, o.scan_bytes_read),
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
            scan_blocks: self.scan_blocks.load(Relaxed),
            scan_useful_blocks: self.scan_useful_blocks.load(Relaxed),
            scan_block_reads: self.scan_block_reads.load(Relaxed),
            scan_bytes_read: self.scan_bytes_read.load(Relaxed),
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
            &self.scan_blocks,
            &self.scan_useful_blocks,
            &self.scan_block_reads,
            &self.scan_bytes_read,
        ] {
            a.store(0, Relaxed);
        }
    }
}

/// Global lookup counters, indexed by [`Get`].
#[derive(Debug)]
pub(crate) struct GetCounters(Tally<GET_COUNTERS, { lines(GET_COUNTERS, true) }>);

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
    /// in a stripe of its own ([`super`]).
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
