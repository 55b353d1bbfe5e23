//! What the prefix and range studies share: a phase of scans
//! ([`ScanPhase`]) with the counts of the filter kind it studies
//! ([`ScanFilter`]) per level, what a filtered store's phase saved against
//! the same phase on the store without the filter ([`Saved`]), the store's
//! shape and tree ([`shape`], [`tree`]), and the phase's per-level table
//! and JSON.

use std::io::Write;

use bloomlsm::{Db, IoCounters, Stats};
use serde_json::{Map, Value, json};

use crate::CliResult;
use crate::phase::Phase;
use crate::report::bytes;

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
            },
            ScanFilter::Range => FilterCounts {
                checks: io.range_checks,
                negatives: io.range_negatives,
                false_positives: io.range_false_positives,
                unusable_reads: io.range_unusable_reads,
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

    /// Data blocks read per scan (from disk or the block cache), from
    /// every file the scans read, filtered or not.
    pub fn blocks_per_scan(&self) -> f64 {
        self.per_scan(self.total.scan_blocks)
    }

    /// Of those, the blocks per scan that held an entry inside the scan's
    /// bounds.
    pub fn useful_blocks_per_scan(&self) -> f64 {
        self.per_scan(self.total.scan_useful_blocks)
    }

    /// Requests per scan, modelled as one per data block read from disk
    /// (the studies' indexes and filters are held in memory).
    pub fn requests_per_scan(&self) -> f64 {
        self.per_scan(self.total.scan_block_reads)
    }

    /// Bytes read from disk per scan for data blocks.
    pub fn bytes_per_scan(&self) -> f64 {
        self.per_scan(self.total.scan_bytes_read)
    }

    /// What this phase saved against `base`, the same phase on the store
    /// without the filter.
    pub fn saved(&self, base: &ScanPhase) -> Saved {
        let blocks = base.blocks_per_scan() - self.blocks_per_scan();
        Saved {
            blocks,
            fraction: (base.blocks_per_scan() > 0.0).then(|| blocks / base.blocks_per_scan()),
            requests: base.requests_per_scan() - self.requests_per_scan(),
            bytes: base.bytes_per_scan() - self.bytes_per_scan(),
            device_bytes: base
                .phase
                .device_bytes_per_op()
                .zip(self.phase.device_bytes_per_op())
                .map(|(b, m)| b - m),
        }
    }

    /// The phase's per-scan I/O: blocks touched and useful, requests and
    /// bytes.
    pub fn io_text(&self) -> String {
        format!(
            "{:.3} data blocks/scan ({:.3} holding entries of the scan), {:.3} requests/scan, {}/scan",
            self.blocks_per_scan(),
            self.useful_blocks_per_scan(),
            self.requests_per_scan(),
            bytes(self.bytes_per_scan().round() as u64),
        )
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
            "  {:>5} {:>9} {:>9} {:>7} {:>9} {:>9} {:>10} {:>11}",
            "level", "checks", "negative", "fp", "blocks", "useful", "fpr", "predicted"
        )?;
        for (level, io, fpr) in &self.levels {
            let c = self.filter.counts(io);
            // A level without filters of the kind models an FPR of 0: none.
            let predicted = (*fpr > 0.0).then_some(*fpr);
            writeln!(
                out,
                "  {:>5} {:>9} {:>9} {:>7} {:>9} {:>9} {:>10} {:>11}",
                format!("L{level}"),
                c.checks,
                c.negatives,
                c.false_positives,
                io.scan_blocks,
                io.scan_useful_blocks,
                fpr_text(self.filter.observed_fpr(io)),
                fpr_text(predicted),
            )?;
        }
        Ok(())
    }

    /// The phase's JSON: its totals, latency and levels, and with `base`
    /// (the same phase on the store without the filter) what it saved.
    pub fn json(&self, base: Option<&ScanPhase>) -> Value {
        let kind = self.filter.name();
        let c = self.counts();
        let mut v = Map::new();
        v.insert("scans".into(), json!(self.phase.ops));
        v.insert("keys_per_scan".into(), json!(self.per_scan(self.keys)));
        v.insert("data_blocks_per_scan".into(), json!(self.blocks_per_scan()));
        v.insert(
            "useful_data_blocks_per_scan".into(),
            json!(self.useful_blocks_per_scan()),
        );
        v.insert("requests_per_scan".into(), json!(self.requests_per_scan()));
        v.insert("bytes_per_scan".into(), json!(self.bytes_per_scan()));
        v.insert(
            "device_bytes_per_scan".into(),
            json!(self.phase.device_bytes_per_op()),
        );
        v.insert(
            "saved".into(),
            base.map_or(Value::Null, |b| self.saved(b).json()),
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
            l.insert("data_blocks".into(), json!(io.scan_blocks));
            l.insert("useful_data_blocks".into(), json!(io.scan_useful_blocks));
            l.insert("measured_fpr".into(), json!(self.filter.observed_fpr(io)));
            l.insert("predicted_fpr".into(), json!((*fpr > 0.0).then_some(*fpr)));
            Value::Object(l)
        });
        v.insert("levels".into(), Value::Array(levels.collect()));
        Value::Object(v)
    }
}

/// What a filtered store's phase of scans saved per scan against the same
/// phase on the store without the filter (the same keys, the same tree):
/// the point study's "I/O saved" for scans. Negative where the filtered
/// store read more.
pub struct Saved {
    /// Data blocks (from disk or the block cache).
    pub blocks: f64,
    /// `blocks` over the unfiltered store's; `None` if that read none.
    pub fraction: Option<f64>,
    /// Modelled requests: data blocks read from disk.
    pub requests: f64,
    /// Bytes the store read from disk.
    pub bytes: f64,
    /// Bytes the device read (`/proc/self/io`), where counted.
    pub device_bytes: Option<f64>,
}

impl Saved {
    /// `saved: 2.981 data blocks/scan (99.4%), 2.981 requests, 12.3 KiB`.
    pub fn text(&self) -> String {
        format!(
            "saved against the store without the filter: {:.3} data blocks/scan ({}), \
             {:.3} requests/scan, {}/scan",
            self.blocks,
            self.fraction_text(),
            self.requests,
            signed_bytes(self.bytes),
        )
    }

    /// The fraction of blocks saved as a percentage, or `-`.
    pub fn fraction_text(&self) -> String {
        self.fraction
            .map_or("-".to_string(), |f| format!("{:.1}%", f * 100.0))
    }

    /// The JSON object of a phase's `saved` field.
    pub fn json(&self) -> Value {
        json!({
            "data_blocks_per_scan": self.blocks,
            "fraction_of_data_blocks": self.fraction,
            "requests_per_scan": self.requests,
            "bytes_per_scan": self.bytes,
            "device_bytes_per_scan": self.device_bytes,
        })
    }
}

/// A byte count that may be negative, e.g. `-4.0 KiB`.
pub fn signed_bytes(b: f64) -> String {
    if b < 0.0 {
        format!("-{}", bytes((-b).round() as u64))
    } else {
        bytes(b.round() as u64)
    }
}

/// Each file of the store: (level, entries, smallest key, largest key,
/// data bytes). Two stores with the same tree have the same list.
pub type Tree = Vec<(usize, u64, Vec<u8>, Vec<u8>, u64)>;

/// `db`'s [`Tree`].
pub fn tree(db: &Db) -> Tree {
    let mut t: Tree = db
        .file_stats()
        .into_iter()
        .map(|f| (f.level, f.entries, f.smallest, f.largest, f.data_bytes))
        .collect();
    t.sort();
    t
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

/// The `--csv` columns of the prefix and range studies: one line per
/// store, range length and phase.
pub const CSV_HEADER: &[&str] = &[
    "workload",
    "filter",
    "range_bits",
    "range_len",
    "phase",
    "scans",
    "keys_per_scan",
    "data_blocks_per_scan",
    "useful_data_blocks_per_scan",
    "requests_per_scan",
    "bytes_per_scan",
    "device_bytes_per_scan",
    "filter_checks",
    "filter_negatives",
    "false_positives",
    "unusable_reads",
    "measured_fpr",
    "predicted_fpr",
    "data_blocks_saved_per_scan",
    "fraction_of_data_blocks_saved",
    "requests_saved_per_scan",
    "bytes_saved_per_scan",
    "p50_ns",
    "p99_ns",
    "mean_ns",
    "same_tree_as_baseline",
];

/// Which store a CSV line is of: the study's workload, the store's filter
/// (`none` for the store without one), its range bits and the length of
/// the phase's ranges (range study), and whether its tree is the
/// unfiltered store's.
pub struct CsvStore<'a> {
    pub workload: &'a str,
    pub filter: &'a str,
    pub range_bits: Option<f64>,
    pub range_len: Option<u64>,
    pub same_tree: bool,
}

/// One `--csv` line of `p`, a phase of `store`, against `base` (the same
/// phase on the store without the filter; `None` for that store itself).
pub fn csv_row(store: &CsvStore, p: &ScanPhase, base: Option<&ScanPhase>) -> Vec<String> {
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
    let c = p.counts();
    let saved = base.map(|b| p.saved(b));
    vec![
        store.workload.to_string(),
        store.filter.to_string(),
        opt(store.range_bits),
        store.range_len.map_or(String::new(), |l| l.to_string()),
        p.name.to_string(),
        p.phase.ops.to_string(),
        p.per_scan(p.keys).to_string(),
        p.blocks_per_scan().to_string(),
        p.useful_blocks_per_scan().to_string(),
        p.requests_per_scan().to_string(),
        p.bytes_per_scan().to_string(),
        opt(p.phase.device_bytes_per_op()),
        c.checks.to_string(),
        c.negatives.to_string(),
        c.false_positives.to_string(),
        c.unusable_reads.to_string(),
        opt(p.observed_fpr()),
        opt(p.predicted_fpr()),
        opt(saved.as_ref().map(|s| s.blocks)),
        opt(saved.as_ref().and_then(|s| s.fraction)),
        opt(saved.as_ref().map(|s| s.requests)),
        opt(saved.as_ref().map(|s| s.bytes)),
        p.phase.percentiles_ns[0].to_string(),
        p.phase.percentiles_ns[2].to_string(),
        format!("{:.1}", p.phase.mean_ns),
        store.same_tree.to_string(),
    ]
}
