//! [`BenchRow`]: what one configuration measured, and the figures the
//! reports derive from it (FPRs, reads per get, I/O and device bytes saved
//! against the `none` configuration).

use bloomlsm::Stats;

use crate::budget;
use crate::phase::Phase;
use crate::report::level_total;

use super::args::IoMode;
use super::configs::BenchConfig;

/// What one configuration measured.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchRow {
    /// The configuration.
    pub config: BenchConfig,
    /// Keys in the store.
    pub keys: u64,
    /// Seconds to write the keys and run every flush and compaction: the
    /// single load without filters that every configuration's store is made
    /// from, unless `--reload`.
    pub load_secs: f64,
    /// Seconds to make this configuration's store from the single load
    /// (checkpoint, filter rebuild, the keys after the checkpoint written
    /// again); `None` with `--reload`.
    pub refilter_secs: Option<f64>,
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
    /// ([`MULTI_GET_BATCH`](super::measure::MULTI_GET_BATCH) keys per call).
    pub multi_get_missing_ns: f64,
    /// Mean ns per existing-key get.
    pub existing_get_ns: f64,
    /// CPU to build the store's filters, ns per key, and per absent-key
    /// filter probe, ns
    /// ([`filter_cost::store_cost`](crate::filter_cost::store_cost)); `None`
    /// without filters.
    pub filter_cost: Option<(f64, Option<f64>)>,
    /// Latencies and bytes of each phase, in
    /// [`PHASES`](super::measure::PHASES) order.
    pub phases: [Phase; 3],
    /// How the store read its tables.
    pub io: IoMode,
    /// `--filter-budget`: the store under each filter memory budget.
    pub budget: Vec<budget::BudgetPoint>,
    /// `--store`: the store read with its tables in a bucket.
    pub bucket: Option<super::bucket::BucketRow>,
}

impl BenchRow {
    /// The model's FPR of a filter probe in the missing phase: the levels'
    /// modelled FPRs weighted by how many absent-key probes each level got.
    /// `None` if no filter was probed.
    pub fn predicted_fpr(&self) -> Option<f64> {
        predicted_fpr(&self.missing)
    }

    /// False positives over absent-key filter probes in the missing phase.
    pub fn measured_fpr(&self) -> Option<f64> {
        self.missing.total.observed_fpr()
    }

    /// Table files the store reopened, from its open to the end of the
    /// last phase: 0 unless it held more tables than `--max-open-files`
    /// lets it keep open.
    pub fn table_reopens(&self) -> u64 {
        self.existing.table_reopens.max(self.missing.table_reopens)
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

/// The model's FPR of a filter probe of an absent key over the counters
/// `s`: the levels' modelled FPRs weighted by how many such probes each
/// level got. `None` if no filter was probed for an absent key.
pub fn predicted_fpr(s: &Stats) -> Option<f64> {
    let (mut w, mut n) = (0.0, 0u64);
    for l in &s.levels {
        // A level a compaction emptied while the lookups ran has no model
        // left: its probes are left out of the weighting, not weighted 0.
        if l.files == 0 {
            continue;
        }
        let probes = l.io.filter_negatives + l.io.false_positives;
        w += l.predicted_fpr * probes as f64;
        n += probes;
    }
    (n > 0).then(|| w / n as f64)
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

/// Device bytes per key of phase `i` below the `none` row's (missing-key
/// phases only).
pub fn device_saved(r: &BenchRow, none: Option<&BenchRow>, i: usize) -> Option<f64> {
    if i >= 2 {
        return None;
    }
    Some(none?.phases[i].device_bytes_per_op()? - r.phases[i].device_bytes_per_op()?)
}

#[cfg(test)]
mod predicted_tests {
    use super::*;
    use bloomlsm::LevelStats;

    fn level(files: usize, fpr: f64, negatives: u64, false_positives: u64) -> LevelStats {
        let mut l = LevelStats::default();
        l.files = files;
        l.predicted_fpr = fpr;
        l.io.filter_negatives = negatives;
        l.io.false_positives = false_positives;
        l
    }

    #[test]
    fn an_emptied_level_leaves_the_prediction_alone() {
        let mut s = Stats::default();
        s.levels = vec![level(2, 0.01, 990, 10), level(3, 0.02, 980, 20)];
        let both = predicted_fpr(&s).unwrap();
        assert!((both - 0.015).abs() < 1e-12, "{both}");
        // L0 emptied by a compaction after its probes: no model, not 0.
        s.levels[0] = level(0, 0.0, 990, 10);
        assert!((predicted_fpr(&s).unwrap() - 0.02).abs() < 1e-12);
        s.levels[1].files = 0;
        assert_eq!(predicted_fpr(&s), None);
    }
}
