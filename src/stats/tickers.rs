//! The store's counters under the names RocksDB users know: its
//! statistics tickers (`rocksdb.bloom.filter.useful`, ...), its per-level
//! perf context (`bloom_filter_useful@level1`, ...), and, under
//! `bloomlsm.` names, what RocksDB does not count (predicted beside
//! measured FPR per level, data-block reads saved).
//!
//! [`Stats::tickers`] is the one mapping; reports only render it. A ticker
//! whose number the store does not count is left out, not estimated
//! (docs/benchmarks.md, "RocksDB's ticker names", lists both).

use std::fmt;

use super::{IoCounters, LevelStats, Stats};

/// A ticker's value: a count, or a real number (a rate or a model's
/// expected count).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TickerValue {
    /// A number of events.
    Count(u64),
    /// A rate, or a modelled figure that is not a whole count.
    Real(f64),
}

impl fmt::Display for TickerValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TickerValue::Count(n) => write!(f, "{n}"),
            TickerValue::Real(x) => write!(f, "{x}"),
        }
    }
}

/// The scan-filter counts of RocksDB's `*.level.seek.*` tickers over one
/// set of levels: (seeks a prefix or range filter ruled out, seeks it let
/// through).
fn seek_counts(io: &IoCounters) -> (u64, u64) {
    let filtered = io.prefix_negatives + io.range_negatives;
    let checked = io.prefix_checks + io.range_checks;
    (filtered, checked.saturating_sub(filtered))
}

/// Whether a level has anything to report: files, or counts of files
/// compacted away from it.
fn reported(l: &LevelStats) -> bool {
    l.files > 0 || l.io != IoCounters::ZERO
}

impl Stats {
    /// The counters as `(name, value)` pairs: RocksDB's ticker names first,
    /// then its per-level perf-context names (`NAME@levelN`, as RocksDB's
    /// `PerfContext::ToString` prints them), then `bloomlsm.` names for
    /// what RocksDB does not count. Tickers RocksDB has and the store does
    /// not count are absent.
    ///
    /// ```
    /// use bloomlsm::{Stats, TickerValue};
    ///
    /// let mut s = Stats::default();
    /// s.total.filter_negatives = 7;
    /// let t = s.tickers();
    /// let useful = t.iter().find(|(n, _)| n == "rocksdb.bloom.filter.useful");
    /// assert_eq!(useful.map(|(_, v)| *v), Some(TickerValue::Count(7)));
    /// ```
    pub fn tickers(&self) -> Vec<(String, TickerValue)> {
        use TickerValue::{Count, Real};
        let t = &self.total;
        // RocksDB's "last level" is the bottommost level holding files.
        let last = self.levels.iter().rposition(|l| l.files > 0);
        let (mut last_io, mut upper_io) = (IoCounters::ZERO, IoCounters::ZERO);
        for l in &self.levels {
            if Some(l.level) == last {
                last_io.add(&l.io);
            } else {
                upper_io.add(&l.io);
            }
        }
        let (last_filtered, last_match) = seek_counts(&last_io);
        let (upper_filtered, upper_match) = seek_counts(&upper_io);
        let mut v: Vec<(String, TickerValue)> = [
            ("rocksdb.bloom.filter.useful", t.filter_negatives),
            ("rocksdb.bloom.filter.full.positive", t.filter_positives),
            (
                "rocksdb.bloom.filter.full.true.positive",
                t.filter_positives.saturating_sub(t.false_positives),
            ),
            ("rocksdb.bloom.filter.prefix.checked", t.prefix_checks),
            ("rocksdb.bloom.filter.prefix.useful", t.prefix_negatives),
            ("rocksdb.last.level.seek.filtered", last_filtered),
            ("rocksdb.last.level.seek.filter.match", last_match),
            ("rocksdb.non.last.level.seek.filtered", upper_filtered),
            ("rocksdb.non.last.level.seek.filter.match", upper_match),
            ("rocksdb.block.cache.data.hit", t.cache_hits),
            ("rocksdb.block.cache.data.miss", t.block_reads),
            ("rocksdb.block.cache.filter.hit", t.filter_cache_hits),
            ("rocksdb.block.cache.filter.miss", t.filter_block_reads),
            ("rocksdb.block.cache.index.hit", t.index_cache_hits),
            ("rocksdb.block.cache.index.miss", t.index_block_reads),
            ("rocksdb.memtable.hit", self.memtable_answers),
            (
                "rocksdb.memtable.miss",
                self.gets.saturating_sub(self.memtable_answers),
            ),
            ("rocksdb.number.keys.read", self.gets),
            ("rocksdb.flush.write.bytes", self.bytes_flushed),
            ("rocksdb.compact.write.bytes", self.bytes_compacted),
        ]
        .into_iter()
        .map(|(n, c)| (n.to_string(), Count(c)))
        .collect();
        for l in self.levels.iter().filter(|l| reported(l)) {
            let io = &l.io;
            for (name, c) in [
                ("bloom_filter_useful", io.filter_negatives),
                ("bloom_filter_full_positive", io.filter_positives),
                (
                    "bloom_filter_full_true_positive",
                    io.filter_positives.saturating_sub(io.false_positives),
                ),
                ("block_cache_hit_count", io.cache_hits),
                ("block_cache_miss_count", io.block_reads),
            ] {
                v.push((format!("{name}@level{}", l.level), Count(c)));
            }
        }
        v.extend([
            (
                "bloomlsm.filter.checked".to_string(),
                Count(t.filter_checks),
            ),
            (
                "bloomlsm.filter.false.positive".to_string(),
                Count(t.false_positives),
            ),
            (
                "bloomlsm.data.block.reads.saved".to_string(),
                Count(t.filter_negatives),
            ),
            (
                "bloomlsm.missing.get.data.block.reads".to_string(),
                Count(self.missing_get_block_reads),
            ),
            (
                "bloomlsm.missing.get.data.block.reads.predicted".to_string(),
                Real(self.missing_get_predicted_reads),
            ),
        ]);
        for l in self.levels.iter().filter(|l| reported(l)) {
            // A level a compaction emptied has no model left to predict with.
            if l.files > 0 {
                v.push((
                    format!("bloomlsm.filter.fpr.predicted@level{}", l.level),
                    Real(l.predicted_fpr),
                ));
            }
            if let Some(fpr) = l.io.observed_fpr() {
                v.push((
                    format!("bloomlsm.filter.fpr.measured@level{}", l.level),
                    Real(fpr),
                ));
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::TickerValue::{Count, Real};
    use super::*;

    fn level(level: usize, files: usize, io: IoCounters, predicted_fpr: f64) -> LevelStats {
        LevelStats {
            level,
            files,
            io,
            predicted_fpr,
            ..LevelStats::default()
        }
    }

    fn get<'a>(t: &'a [(String, TickerValue)], name: &str) -> Option<&'a TickerValue> {
        t.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    #[test]
    fn known_counters_give_rocksdb_tickers() {
        let l1 = IoCounters {
            filter_checks: 100,
            filter_negatives: 90,
            filter_positives: 10,
            false_positives: 4,
            block_reads: 8,
            cache_hits: 2,
            prefix_checks: 5,
            prefix_negatives: 3,
            ..IoCounters::ZERO
        };
        let l2 = IoCounters {
            filter_checks: 50,
            filter_negatives: 20,
            filter_positives: 30,
            false_positives: 1,
            block_reads: 25,
            cache_hits: 5,
            prefix_checks: 7,
            prefix_negatives: 6,
            range_checks: 4,
            range_negatives: 1,
            filter_block_reads: 3,
            filter_cache_hits: 9,
            index_block_reads: 2,
            index_cache_hits: 11,
            ..IoCounters::ZERO
        };
        let mut total = l1;
        total.add(&l2);
        let s = Stats {
            gets: 200,
            gets_found: 30,
            memtable_answers: 12,
            missing_get_block_reads: 33,
            missing_get_predicted_reads: 31.5,
            bytes_flushed: 1000,
            bytes_compacted: 3000,
            // L0 empty and never counted; L3 empty below the last level.
            levels: vec![
                level(0, 0, IoCounters::ZERO, 0.0),
                level(1, 2, l1, 0.01),
                level(2, 3, l2, 0.02),
                level(3, 0, IoCounters::ZERO, 0.0),
            ],
            total,
            ..Stats::default()
        };
        let t = s.tickers();
        for (name, want) in [
            ("rocksdb.bloom.filter.useful", 110),
            ("rocksdb.bloom.filter.full.positive", 40),
            ("rocksdb.bloom.filter.full.true.positive", 35),
            ("rocksdb.bloom.filter.prefix.checked", 12),
            ("rocksdb.bloom.filter.prefix.useful", 9),
            ("rocksdb.last.level.seek.filtered", 7),
            ("rocksdb.last.level.seek.filter.match", 4),
            ("rocksdb.non.last.level.seek.filtered", 3),
            ("rocksdb.non.last.level.seek.filter.match", 2),
            ("rocksdb.block.cache.data.hit", 7),
            ("rocksdb.block.cache.data.miss", 33),
            ("rocksdb.block.cache.filter.hit", 9),
            ("rocksdb.block.cache.filter.miss", 3),
            ("rocksdb.block.cache.index.hit", 11),
            ("rocksdb.block.cache.index.miss", 2),
            ("rocksdb.memtable.hit", 12),
            ("rocksdb.memtable.miss", 188),
            ("rocksdb.number.keys.read", 200),
            ("rocksdb.flush.write.bytes", 1000),
            ("rocksdb.compact.write.bytes", 3000),
            ("bloom_filter_useful@level1", 90),
            ("bloom_filter_full_positive@level1", 10),
            ("bloom_filter_full_true_positive@level1", 6),
            ("block_cache_hit_count@level1", 2),
            ("block_cache_miss_count@level1", 8),
            ("bloom_filter_useful@level2", 20),
            ("bloom_filter_full_true_positive@level2", 29),
            ("bloomlsm.filter.checked", 150),
            ("bloomlsm.filter.false.positive", 5),
            ("bloomlsm.data.block.reads.saved", 110),
            ("bloomlsm.missing.get.data.block.reads", 33),
        ] {
            assert_eq!(get(&t, name), Some(&Count(want)), "{name}");
        }
        assert_eq!(
            get(&t, "bloomlsm.missing.get.data.block.reads.predicted"),
            Some(&Real(31.5))
        );
        assert_eq!(
            get(&t, "bloomlsm.filter.fpr.predicted@level1"),
            Some(&Real(0.01))
        );
        assert_eq!(
            get(&t, "bloomlsm.filter.fpr.measured@level1"),
            Some(&Real(4.0 / 94.0))
        );
        assert_eq!(
            get(&t, "bloomlsm.filter.fpr.measured@level2"),
            Some(&Real(1.0 / 21.0))
        );
        // Levels without files or counts report nothing.
        assert!(
            t.iter()
                .all(|(n, _)| !n.contains("@level0") && !n.contains("@level3"))
        );
        // Each name once.
        let mut names: Vec<&str> = t.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), t.len());
    }

    #[test]
    fn no_lookups_no_measured_fpr() {
        let s = Stats {
            levels: vec![level(0, 1, IoCounters::ZERO, 0.03)],
            ..Stats::default()
        };
        let t = s.tickers();
        assert_eq!(get(&t, "rocksdb.bloom.filter.useful"), Some(&Count(0)));
        assert_eq!(
            get(&t, "bloomlsm.filter.fpr.predicted@level0"),
            Some(&Real(0.03))
        );
        assert_eq!(get(&t, "bloomlsm.filter.fpr.measured@level0"), None);
    }
}
