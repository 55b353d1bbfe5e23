//! [`BenchRow`]: what one configuration measured — its read phases
//! ([`PHASES`]), its store read from a bucket ([`BucketRow`]) and under
//! filter memory budgets ([`BudgetPoint`]) — and the figures the reports
//! derive from it (FPRs, reads per get, I/O, device bytes and requests
//! saved against the `none` configuration).

use bloomlsm::Stats;

use crate::phase::Phase;
use crate::report::level_total;

use super::args::IoMode;
use super::configs::BenchConfig;

/// The study's read phases: (label, JSON / CSV name).
pub const PHASES: [(&str, &str); 3] = [
    ("missing get", "missing_get"),
    ("multi_get missing", "multi_get_missing"),
    ("existing get", "existing_get"),
];

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
    /// (1,024 keys per call).
    pub multi_get_missing_ns: f64,
    /// Mean ns per existing-key get.
    pub existing_get_ns: f64,
    /// CPU to build the store's filters, ns per key, and per absent-key
    /// filter probe, ns
    /// ([`filter_cost::store_cost`](crate::filter_cost::store_cost)); `None`
    /// without filters.
    pub filter_cost: Option<(f64, Option<f64>)>,
    /// Latencies and bytes of each phase, in [`PHASES`] order.
    pub phases: [Phase; 3],
    /// How the store read its tables.
    pub io: IoMode,
    /// `--filter-budget`: the store under each filter memory budget.
    pub budget: Vec<BudgetPoint>,
    /// `--store`: the store read with its tables in a bucket.
    pub bucket: Option<BucketRow>,
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

/// The phases against the bucket: (label, JSON name).
pub const BUCKET_PHASES: [(&str, &str); 5] = [
    ("missing get, cold", "missing_cold"),
    ("existing get, cold", "existing_cold"),
    ("existing multi_get, cold", "existing_multi_get_cold"),
    ("missing get, warm", "missing_warm"),
    ("existing get, warm", "existing_warm"),
];

/// One phase against the bucket.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketPhase {
    /// Gets made.
    pub gets: u64,
    /// GET requests the bucket file system made, and the bytes they
    /// returned.
    pub requests: u64,
    pub request_bytes: u64,
    /// The model's requests: the store's reads of table blocks (data
    /// blocks, and filter or index partitions not held in memory), one
    /// request each, and their bytes.
    pub model_requests: u64,
    pub model_bytes: u64,
    /// Missing gets: the filters' model of their data-block reads, the sum
    /// over the files each get probed of the file's modelled FPR.
    pub fpr_model_requests: Option<f64>,
    /// Latencies.
    pub phase: Phase,
}

impl BucketPhase {
    /// Measured GETs per get.
    pub fn per_get(&self) -> f64 {
        self.requests as f64 / self.gets.max(1) as f64
    }

    /// The model's requests per get.
    pub fn model_per_get(&self) -> f64 {
        self.model_requests as f64 / self.gets.max(1) as f64
    }

    /// The filters' model of a missing get's requests.
    pub fn fpr_model_per_get(&self) -> Option<f64> {
        self.fpr_model_requests.map(|m| m / self.gets.max(1) as f64)
    }

    /// Bytes the GETs returned, per get.
    pub fn bytes_per_get(&self) -> f64 {
        self.request_bytes as f64 / self.gets.max(1) as f64
    }
}

/// What one configuration's store did in the bucket.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketRow {
    /// Where its objects were.
    pub url: String,
    /// Tables uploaded, their bytes, and the seconds the upload took.
    pub tables: u64,
    pub table_bytes: u64,
    pub upload_secs: f64,
    /// GETs, and their bytes, that opening the store cold made (footers,
    /// filters, indexes).
    pub open_requests: u64,
    pub open_request_bytes: u64,
    /// GETs, bytes and seconds of the prefetch that warmed the cache.
    pub prefetch_requests: u64,
    pub prefetch_bytes: u64,
    pub prefetch_secs: f64,
    /// Each of [`BUCKET_PHASES`].
    pub phases: [BucketPhase; 5],
}

/// The GETs per get `none` made in phase `i`, less this row's: the
/// requests its filters saved.
pub fn bucket_saved(r: &BenchRow, none: Option<&BenchRow>, i: usize) -> Option<f64> {
    let none = none?.bucket.as_ref()?;
    let me = r.bucket.as_ref()?;
    Some(none.phases[i].per_get() - me.phases[i].per_get())
}

/// Block reads per present-key get, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PresentReads {
    /// Filter blocks (of files above the key's, read on demand).
    pub filter: f64,
    /// Index partitions.
    pub index: f64,
    /// Data blocks.
    pub data: f64,
}

impl PresentReads {
    /// Blocks read per present get.
    pub fn io(&self) -> f64 {
        self.filter + self.index + self.data
    }
}

/// One budget's measurements.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetPoint {
    /// The budget as a fraction of the store's metadata bytes.
    pub fraction: f64,
    /// The budget in bytes.
    pub budget_bytes: u64,
    /// Filter bytes the store held in memory under it.
    pub pinned_bytes: u64,
    /// Filter bytes of the whole store.
    pub filter_bytes: u64,
    /// Index bytes the store held in memory under it (top levels and
    /// one-block indexes always).
    pub pinned_index_bytes: u64,
    /// Index bytes of the whole store, every partition held.
    pub index_bytes: u64,
    /// Index-partition reads per missing get.
    pub index_reads: f64,
    /// Reads per present-key get.
    pub present: PresentReads,
    /// Filter-block reads per missing get (store counters).
    pub filter_reads: f64,
    /// Data-block reads per missing get (store counters).
    pub data_reads: f64,
    /// The allocation's model of filter-block reads per missing get: the
    /// sum, over files whose filter is read on demand, of the chance a
    /// missing get probes the file (`FileStats::probe_chance`).
    pub predicted_filter_reads: f64,
    /// Data-block reads predicted: the sum of the modelled FPRs of the
    /// files each get probed (as in the main table).
    pub predicted_data_reads: f64,
    /// Filter-block bytes read from the file per missing get.
    pub filter_bytes_read: f64,
    /// Latency and device bytes of the missing gets (store bytes: data,
    /// filter and index blocks).
    pub phase: Phase,
    /// The same of the present gets.
    pub present_phase: Phase,
}

impl BudgetPoint {
    /// Blocks read per missing get: filter, index and data.
    pub fn io(&self) -> f64 {
        self.filter_reads + self.index_reads + self.data_reads
    }

    /// Metadata held in memory: filters and indexes.
    pub fn metadata_bytes(&self) -> u64 {
        self.pinned_bytes + self.pinned_index_bytes
    }

    /// Blocks read per lookup, half of them missing and half present.
    pub fn io_per_lookup(&self) -> f64 {
        (self.io() + self.present.io()) / 2.0
    }

    /// Predicted blocks read per missing get.
    pub fn predicted_io(&self) -> f64 {
        self.predicted_filter_reads + self.predicted_data_reads
    }
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
