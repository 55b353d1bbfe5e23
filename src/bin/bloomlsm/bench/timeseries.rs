//! `readwhilewriting`'s time series: every `--stats-interval-ms` the reader
//! takes a [`Sample`] of the interval just ended (read rate, the writer's
//! rate, p50 / p99 read latency, the filters' observed and modelled FPR,
//! data blocks per get, L0 files), written with `--timeseries FILE` as CSV
//! or JSON (by the name's ending) and drawn with `--plot FILE.svg`
//! (`series_chart.rs`).

use std::path::Path;
use std::time::{Duration, Instant};

use bloomlsm::{Db, Stats};
use hdrhistogram::Histogram;
use serde_json::json;

use crate::{CliError, CliResult, plot};

/// What one interval measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Seconds from the start of the reads to the end of the interval.
    pub t_secs: f64,
    /// Reads in the interval.
    pub reads: u64,
    /// Reads per second.
    pub reads_per_sec: f64,
    /// The writer's puts per second.
    pub puts_per_sec: f64,
    /// Read latency at P50, µs.
    pub p50_us: f64,
    /// Read latency at P99, µs.
    pub p99_us: f64,
    /// False positives over absent-key filter probes in the interval.
    pub measured_fpr: Option<f64>,
    /// The levels' modelled FPRs weighted by the interval's absent-key
    /// probes of each.
    pub predicted_fpr: Option<f64>,
    /// Data blocks read per get.
    pub blocks_per_get: f64,
    /// Files in L0 at the end of the interval.
    pub l0_files: usize,
}

/// The store's cumulative counters at one instant, as the sampler needs them.
#[derive(Clone, Debug, Default)]
struct Counts {
    gets: u64,
    blocks: u64,
    false_positives: u64,
    /// Absent-key filter probes (negatives + false positives).
    absent: u64,
    /// Per level: absent-key filter probes (negatives + false positives).
    probes: Vec<u64>,
}

impl Counts {
    fn of(s: &Stats) -> Counts {
        Counts {
            gets: s.gets,
            blocks: s.total.block_reads,
            false_positives: s.total.false_positives,
            absent: s.total.filter_negatives + s.total.false_positives,
            probes: s
                .levels
                .iter()
                .map(|l| l.io.filter_negatives + l.io.false_positives)
                .collect(),
        }
    }
}

/// Takes the samples of one read phase.
pub struct Sampler {
    interval: Duration,
    start: Instant,
    last: Instant,
    last_reads: u64,
    last_puts: u64,
    counts: Counts,
    hist: Histogram<u64>,
    samples: Vec<Sample>,
}

impl Sampler {
    /// Starts sampling every `interval`, from the store's counters now.
    pub fn start(interval: Duration, db: &Db) -> Self {
        let now = Instant::now();
        Sampler {
            interval,
            start: now,
            last: now,
            last_reads: 0,
            last_puts: 0,
            counts: Counts::of(&db.stats()),
            hist: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("constant histogram bounds are valid"),
            samples: Vec::new(),
        }
    }

    /// Records one read's latency.
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
    }

    /// Whether an interval has ended.
    pub fn due(&self) -> bool {
        self.last.elapsed() >= self.interval
    }

    /// Ends the interval: `reads` and `puts` so far in the phase.
    pub fn sample(&mut self, db: &Db, reads: u64, puts: u64) {
        let now = Instant::now();
        let secs = now.duration_since(self.last).as_secs_f64().max(1e-9);
        let stats = db.stats();
        let c = Counts::of(&stats);
        let d_reads = reads - self.last_reads;
        let d_gets = c.gets.saturating_sub(self.counts.gets);
        let d_fp = c
            .false_positives
            .saturating_sub(self.counts.false_positives);
        let d_absent = c.absent.saturating_sub(self.counts.absent);
        let (mut w, mut probes) = (0.0, 0u64);
        for (i, l) in stats.levels.iter().enumerate() {
            // A level a compaction emptied has no model left: its probes
            // of the interval are left out of the weighting (not weighted 0).
            if l.files == 0 {
                continue;
            }
            let before = self.counts.probes.get(i).copied().unwrap_or(0);
            let d = c.probes[i].saturating_sub(before);
            w += l.predicted_fpr * d as f64;
            probes += d;
        }
        self.samples.push(Sample {
            t_secs: now.duration_since(self.start).as_secs_f64(),
            reads: d_reads,
            reads_per_sec: d_reads as f64 / secs,
            puts_per_sec: puts.saturating_sub(self.last_puts) as f64 / secs,
            p50_us: self.hist.value_at_percentile(50.0) as f64 / 1e3,
            p99_us: self.hist.value_at_percentile(99.0) as f64 / 1e3,
            measured_fpr: (d_absent > 0).then(|| d_fp as f64 / d_absent as f64),
            predicted_fpr: (probes > 0).then(|| w / probes as f64),
            blocks_per_get: c.blocks.saturating_sub(self.counts.blocks) as f64
                / d_gets.max(1) as f64,
            l0_files: stats
                .levels
                .iter()
                .find(|l| l.level == 0)
                .map_or(0, |l| l.files),
        });
        self.hist.reset();
        self.last = now;
        self.last_reads = reads;
        self.last_puts = puts;
        self.counts = c;
    }

    /// The samples, with a last one for a partial interval.
    pub fn finish(mut self, db: &Db, reads: u64, puts: u64) -> Vec<Sample> {
        if reads > self.last_reads || self.samples.is_empty() {
            self.sample(db, reads, puts);
        }
        self.samples
    }
}

/// The formats of `--timeseries`, by the file name's ending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Csv,
    Json,
}

/// `--timeseries`'s format, and that the file can be created there
/// (checked before the run).
pub fn check_path(path: &Path) -> CliResult<Format> {
    let bad = |why: String| CliError::usage(format!("--timeseries {}: {why}", path.display()));
    let ext = path
        .extension()
        .map(|x| x.to_string_lossy().to_ascii_lowercase());
    let format = match ext.as_deref() {
        Some("csv") => Format::Csv,
        Some("json") => Format::Json,
        _ => return Err(bad("give a file name ending in .csv or .json".into())),
    };
    if path.is_dir() {
        return Err(bad("is a directory".into()));
    }
    plot::check_writable(path).map_err(|e| bad(format!("cannot create a file there ({e})")))?;
    Ok(format)
}

/// The CSV header of [`csv_line`].
pub const CSV_HEADER: &str = "t_s,reads,reads_per_sec,writer_puts_per_sec,p50_us,p99_us,measured_fpr,predicted_fpr,data_blocks_per_get,l0_files";

/// One sample as a CSV line (an empty field where there is no value).
pub fn csv_line(s: &Sample) -> String {
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.6}"));
    format!(
        "{:.3},{},{:.1},{:.1},{:.2},{:.2},{},{},{:.4},{}",
        s.t_secs,
        s.reads,
        s.reads_per_sec,
        s.puts_per_sec,
        s.p50_us,
        s.p99_us,
        opt(s.measured_fpr),
        opt(s.predicted_fpr),
        s.blocks_per_get,
        s.l0_files
    )
}

/// The series as one JSON object.
pub fn to_json(interval_ms: u64, samples: &[Sample]) -> serde_json::Value {
    json!({
        "benchmark": "readwhilewriting",
        "interval_ms": interval_ms,
        "samples": samples.iter().map(|s| json!({
            "t_s": s.t_secs,
            "reads": s.reads,
            "reads_per_sec": s.reads_per_sec,
            "writer_puts_per_sec": s.puts_per_sec,
            "p50_us": s.p50_us,
            "p99_us": s.p99_us,
            "measured_fpr": s.measured_fpr,
            "predicted_fpr": s.predicted_fpr,
            "data_blocks_per_get": s.blocks_per_get,
            "l0_files": s.l0_files,
        })).collect::<Vec<_>>(),
    })
}

/// Writes the series to `path` in `format` (via a temporary file renamed
/// into place).
pub fn write(path: &Path, format: Format, interval_ms: u64, samples: &[Sample]) -> CliResult {
    let text = match format {
        Format::Csv => {
            let mut t = format!("{CSV_HEADER}\n");
            for s in samples {
                t.push_str(&csv_line(s));
                t.push('\n');
            }
            t
        }
        Format::Json => format!("{}\n", to_json(interval_ms, samples)),
    };
    let tmp = plot::temp_path(path);
    let err = |e: std::io::Error| CliError::new(format!("--timeseries {}: {e}", path.display()));
    std::fs::write(&tmp, text).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_line_matches_header() {
        let s = Sample {
            t_secs: 1.0,
            reads: 10,
            reads_per_sec: 10.0,
            puts_per_sec: 5.0,
            p50_us: 1.5,
            p99_us: 9.0,
            measured_fpr: None,
            predicted_fpr: Some(0.01),
            blocks_per_get: 0.5,
            l0_files: 3,
        };
        let line = csv_line(&s);
        assert_eq!(line.split(',').count(), CSV_HEADER.split(',').count());
        assert_eq!(line, "1.000,10,10.0,5.0,1.50,9.00,,0.010000,0.5000,3");
        let j = to_json(250, &[s]);
        assert_eq!(j["samples"][0]["l0_files"], 3);
        assert!(j["samples"][0]["measured_fpr"].is_null());
    }

    #[test]
    fn path_needs_csv_or_json() {
        let dir = std::env::temp_dir();
        assert!(check_path(&dir.join("x.txt")).is_err());
        assert!(check_path(&dir).is_err());
        assert_eq!(
            check_path(&dir.join("bloomlsm-series-check.CSV")).unwrap(),
            Format::Csv
        );
    }
}
