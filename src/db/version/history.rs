//! What a file's lookups have been, kept with the file for the
//! workload-aware filter allocation (`compaction/allocation.rs`): the
//! store's lookup count when it was written, the probes by absent keys that
//! `Db::reset_stats` zeroed, the rate it inherited, and its rate as last
//! sampled, older lookups weighing less.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

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
    /// The rate as of the last sample (`None`: never sampled; then the
    /// prior and everything since the file was written count in full).
    pub(crate) sampled: Mutex<Option<Sampled>>,
}

/// A file's decayed counts at a sample (`allocation::sample`): its absent
/// probes and the store's lookups, each older lookup weighing less, and the
/// raw counts they were taken at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Sampled {
    /// Absent-key probes, decayed.
    pub probes: f64,
    /// Store lookups, decayed in step.
    pub lookups: f64,
    /// The file's absent-key probes (carried included) at the sample.
    pub probes_at: u64,
    /// The store's lookup count at the sample.
    pub lookups_at: u64,
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
