//! What a file's lookups have been, kept with the file for the
//! workload-aware filter allocation (`compaction/allocation.rs`): the
//! store's lookup count when it was written, the probes by absent keys that
//! `Db::reset_stats` zeroed, and the rate it inherited.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::stats::IoCounters;

/// The lookups a file has seen, for the workload-aware allocation's plans.
#[derive(Debug, Default)]
pub(crate) struct LookupHistory {
    /// The store's lookup count when the file was written; 0 for a file
    /// found at open.
    pub(crate) born: AtomicU64,
    /// Probes by absent keys counted before `Db::reset_stats` zeroed the
    /// file's counters.
    pub(crate) carried: AtomicU64,
    /// The rate inherited from the files it replaced.
    pub(crate) prior: OnceLock<Rate>,
}

impl LookupHistory {
    /// Keeps the absent-key probes of `io` (about to be zeroed).
    pub(crate) fn carry(&self, io: &IoCounters) {
        self.carried.fetch_add(absent_probes(io), Relaxed);
    }
}

/// A rate of absent-key probes and the lookups it rests on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rate {
    /// Probes per store lookup by keys the file does not hold.
    pub per_lookup: f64,
    /// Store lookups observed.
    pub evidence: f64,
}

/// Probes by keys the file does not hold: those its filter answered for
/// (negatives, false positives) and every probe without a usable filter.
pub(crate) fn absent_probes(io: &IoCounters) -> u64 {
    io.filter_negatives + io.false_positives + io.unfiltered_reads + io.unusable_filter_reads
}
