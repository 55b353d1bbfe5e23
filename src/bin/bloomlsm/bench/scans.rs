//! What the prefix and range studies share: a phase of scans
//! ([`ScanPhase`]) with the counts of the filter kind it studies
//! ([`ScanFilter`]) per level, the store's shape, and the phase's per-level
//! table and JSON.

use std::io::Write;

use bloomlsm::{IoCounters, Stats};
use serde_json::{Map, Value, json};

use crate::CliResult;
use crate::phase::Phase;

/// The filter kind a scan study measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanFilter {
    /// Prefix filters, checked by `scan_prefix`.
    Prefix,
    /// Range filters, checked by bounded `scan`s.
    Range,
}

/// The counts of one kind of scan filter.
pub struct FilterCounts {
    /// Files whose filter a scan checked.
    pub checks: u64,
    /// Checks that ruled the file out.
    pub negatives: u64,
    /// Checks that let the file through though it held no key of the scan.
    pub false_positives: u64,
    /// Files read because their filter could not be used.
    pub unusable_reads: u64,
    /// Data blocks the scans read.
    pub blocks: u64,
}

impl ScanFilter {
    /// The name its JSON fields begin with.
    fn name(self) -> &'static str {
        match self {
            ScanFilter::Prefix => "prefix",
            ScanFilter::Range => "range",
        }
    }

    /// This kind's counts in `io`.
    pub fn counts(self, io: &IoCounters) -> FilterCounts {
        match self {
            ScanFilter::Prefix => FilterCounts {
                checks: io.prefix_checks,
                negatives: io.prefix_negatives,
                false_positives: io.prefix_false_positives,
                unusable_reads: io.prefix_unusable_reads,
                blocks: io.prefix_scan_blocks,
            },
            ScanFilter::Range => FilterCounts {
                checks: io.range_checks,
                negatives: io.range_negatives,
                false_positives: io.range_false_positives,
                unusable_reads: io.range_unusable_reads,
                blocks: io.range_scan_blocks,
            },
        }
    }

    /// The FPR measured in `io`: false positives among the checks of files
    /// without a key of the scan.
    pub fn observed_fpr(self, io: &IoCounters) -> Option<f64> {
        match self {
            ScanFilter::Prefix => io.observed_prefix_fpr(),
            ScanFilter::Range => io.observed_range_fpr(),
        }
    }
}

/// What one phase of scans measured.
pub struct ScanPhase {
    pub name: &'static str,
    pub filter: ScanFilter,
    pub phase: Phase,
    /// Keys the scans returned.
    pub keys: u64,
    /// Per non-empty level: (level, lookup counters, the filter's modelled
    /// FPR for the phase's scans).
    pub levels: Vec<(usize, IoCounters, f64)>,
    pub total: IoCounters,
}

impl ScanPhase {
    /// `n` per scan.
    pub fn per_scan(&self, n: u64) -> f64 {
        n as f64 / self.phase.ops.max(1) as f64
    }

    /// The counts of the phase's filter kind over every level.
    pub fn counts(&self) -> FilterCounts {
        self.filter.counts(&self.total)
    }

    /// The FPR measured over every level.
    pub fn observed_fpr(&self) -> Option<f64> {
        self.filter.observed_fpr(&self.total)
    }

    /// The modelled FPR of the checks made: each level's modelled FPR
    /// weighted by its checks of files without a key of the scan.
    pub fn predicted_fpr(&self) -> Option<f64> {
        let (mut w, mut n) = (0.0, 0u64);
        for (_, io, fpr) in &self.levels {
            let c = self.filter.counts(io);
            let absent = c.negatives + c.false_positives;
            w += absent as f64 * fpr;
            n += absent;
        }
        (n > 0).then(|| w / n as f64)
    }

    /// The table of the phase's counts, one line per level.
    pub fn write_levels(&self, out: &mut dyn Write) -> CliResult {
        writeln!(
            out,
            "  {:>5} {:>9} {:>9} {:>7} {:>9} {:>10} {:>11}",
            "level", "checks", "negative", "fp", "blocks", "fpr", "predicted"
        )?;
        for (level, io, fpr) in &self.levels {
            let c = self.filter.counts(io);
            let predicted = match self.filter {
                // A level without prefix filters models an FPR of 0: none.
                ScanFilter::Prefix => (*fpr > 0.0).then_some(*fpr),
                ScanFilter::Range => Some(*fpr),
            };
            writeln!(
                out,
                "  {:>5} {:>9} {:>9} {:>7} {:>9} {:>10} {:>11}",
                format!("L{level}"),
                c.checks,
                c.negatives,
                c.false_positives,
                c.blocks,
                fpr_text(self.filter.observed_fpr(io)),
                fpr_text(predicted),
            )?;
        }
        Ok(())
    }

    /// The phase's JSON: its totals, latency and levels.
    pub fn json(&self) -> Value {
        let kind = self.filter.name();
        let c = self.counts();
        let mut v = Map::new();
        v.insert("scans".into(), json!(self.phase.ops));
        v.insert("keys_per_scan".into(), json!(self.per_scan(self.keys)));
        v.insert(
            "data_blocks_per_scan".into(),
            json!(self.per_scan(c.blocks)),
        );
        v.insert(format!("{kind}_checks"), json!(c.checks));
        v.insert(format!("{kind}_negatives"), json!(c.negatives));
        v.insert(format!("{kind}_false_positives"), json!(c.false_positives));
        v.insert(format!("{kind}_unusable_reads"), json!(c.unusable_reads));
        v.insert("measured_fpr".into(), json!(self.observed_fpr()));
        v.insert("predicted_fpr".into(), json!(self.predicted_fpr()));
        v.insert("latency".into(), self.phase.latency_json());
        let levels = self.levels.iter().map(|(level, io, fpr)| {
            let c = self.filter.counts(io);
            let mut l = Map::new();
            l.insert("level".into(), json!(level));
            l.insert(format!("{kind}_checks"), json!(c.checks));
            l.insert(format!("{kind}_negatives"), json!(c.negatives));
            l.insert(format!("{kind}_false_positives"), json!(c.false_positives));
            l.insert("data_blocks".into(), json!(c.blocks));
            l.insert("measured_fpr".into(), json!(self.filter.observed_fpr(io)));
            l.insert("predicted_fpr".into(), json!(fpr));
            Value::Object(l)
        });
        v.insert("levels".into(), Value::Array(levels.collect()));
        Value::Object(v)
    }
}

/// Files per level, `L0:2 L1:4 ...` (non-empty levels).
pub fn shape(s: &Stats) -> String {
    s.levels
        .iter()
        .filter(|l| l.files > 0)
        .map(|l| format!("L{}:{}", l.level, l.files))
        .collect::<Vec<_>>()
        .join(" ")
}

/// An FPR as a percentage, or `-` without one.
pub fn fpr_text(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |f| format!("{:.3}%", f * 100.0))
}
