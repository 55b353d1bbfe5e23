//! One read phase of `bench`: its per-operation latencies (an HDR histogram,
//! so the tail is kept at 3 significant digits without storing every
//! sample) and the bytes it read, as the store counted them and as the
//! kernel saw them reach the device (`/proc/self/io`, Linux).

use std::time::Instant;

use hdrhistogram::Histogram;

/// The percentiles every report shows, with their labels and JSON / CSV names.
pub const PERCENTILES: [(f64, &str, &str); 4] = [
    (50.0, "p50", "p50"),
    (90.0, "p90", "p90"),
    (99.0, "p99", "p99"),
    (99.9, "p99.9", "p999"),
];

/// Bytes the process has had read from the storage layer so far: the
/// `read_bytes` line of `/proc/self/io` (Linux). Counts whole pages read
/// into the page cache and direct reads, for every thread of the process;
/// not reads served by the page cache. `None` where there is no such file.
pub fn device_read_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("read_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The calling thread's `read_bytes` (`/proc/thread-self/io`, Linux): what
/// the device read for this thread alone, so the reads of one operation
/// can be told from those of the store's background threads. The file is
/// opened once and read again from its start for each count.
pub struct ThreadDeviceBytes(std::fs::File);

impl ThreadDeviceBytes {
    /// Opens the calling thread's counters; `None` where there are none.
    pub fn open() -> Option<Self> {
        std::fs::File::open("/proc/thread-self/io").ok().map(Self)
    }

    /// Bytes the device has read for the thread that opened this so far.
    pub fn read(&self) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 512];
        let n = self.0.read_at(&mut buf, 0).ok()?;
        std::str::from_utf8(&buf[..n])
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("read_bytes:"))
            .and_then(|v| v.trim().parse().ok())
    }
}

/// Records one phase: call [`Recorder::time`] per operation, then
/// [`Recorder::finish`].
pub struct Recorder {
    hist: Histogram<u64>,
    device_start: Option<u64>,
    start: Instant,
    /// The latency [`Recorder::time`] recorded last, ns.
    last_ns: u64,
}

impl Recorder {
    /// Starts a phase (reads `/proc/self/io` first).
    pub fn start() -> Self {
        Recorder {
            // 1 ns to an hour, 3 significant digits.
            hist: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("constant histogram bounds are valid"),
            device_start: device_read_bytes(),
            start: Instant::now(),
            last_ns: 0,
        }
    }

    /// Runs `op`, recording its latency divided by `per` (the keys one call
    /// answers: 1 for a get, the batch for a multi_get).
    pub fn time<T>(&mut self, per: u64, op: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let r = op();
        let ns = t.elapsed().as_nanos() as u64 / per.max(1);
        self.hist.saturating_record(ns.max(1));
        self.last_ns = ns;
        r
    }

    /// The latency of the last operation [`Recorder::time`] timed, ns.
    pub fn last_ns(&self) -> u64 {
        self.last_ns
    }

    /// The latency at percentile `p` (0..=100) of the operations so far, ns.
    pub fn value_at_percentile(&self, p: f64) -> u64 {
        self.hist.value_at_percentile(p)
    }

    /// Ends the phase: `ops` keys answered, `store_bytes` the store's count
    /// of data-block bytes read in it.
    pub fn finish(self, ops: u64, store_bytes: u64) -> Phase {
        let elapsed = self.start.elapsed().as_nanos() as f64;
        let device_bytes = self
            .device_start
            .zip(device_read_bytes())
            .map(|(a, b)| b.saturating_sub(a));
        let h = &self.hist;
        let mut cdf = Vec::new();
        // Quantiles spaced evenly in log(1 - q) down to 1e-6, so the tail
        // has points too.
        for i in 0..=180 {
            let q = 1.0 - 10f64.powf(-(i as f64) / 30.0);
            cdf.push((h.value_at_quantile(q) as f64, q));
        }
        cdf.push((h.max() as f64, 1.0));
        cdf.dedup();
        Phase {
            ops,
            samples: h.len(),
            mean_ns: elapsed / ops.max(1) as f64,
            percentiles_ns: PERCENTILES.map(|(p, _, _)| h.value_at_percentile(p)),
            max_ns: h.max(),
            cdf,
            store_bytes,
            device_bytes,
        }
    }
}

/// What one phase measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// Keys looked up.
    pub ops: u64,
    /// Latencies recorded (operations: keys, or multi_get calls).
    pub samples: u64,
    /// Wall time of the phase per key, ns (timer overhead included).
    pub mean_ns: f64,
    /// Latency at each of [`PERCENTILES`], ns.
    pub percentiles_ns: [u64; 4],
    /// The slowest operation, ns.
    pub max_ns: u64,
    /// The latency distribution: `(ns, fraction of operations at most that)`.
    pub cdf: Vec<(f64, f64)>,
    /// Data-block bytes the store read (its counters).
    pub store_bytes: u64,
    /// Bytes read from the device meanwhile (`/proc/self/io`); `None` off Linux.
    pub device_bytes: Option<u64>,
}

impl Phase {
    /// The latency line of a scan study: `  latency p50 1.7 µs ... , mean 2.0 µs`.
    pub fn latency_text(&self) -> String {
        let mut s = String::from("  latency");
        for ((_, label, _), ns) in PERCENTILES.iter().zip(self.percentiles_ns) {
            s.push_str(&format!(" {label} {:.1} µs", ns as f64 / 1e3));
        }
        s.push_str(&format!(", mean {:.1} µs", self.mean_ns / 1e3));
        s
    }

    /// The latency object of a scan study's JSON: `{p50_ns, ..., mean_ns}`.
    pub fn latency_json(&self) -> serde_json::Value {
        let mut latency = serde_json::Map::new();
        for ((_, _, key), ns) in PERCENTILES.iter().zip(self.percentiles_ns) {
            latency.insert(format!("{key}_ns"), serde_json::json!(ns));
        }
        latency.insert("mean_ns".into(), serde_json::json!(self.mean_ns));
        serde_json::Value::Object(latency)
    }

    /// Store bytes per key.
    pub fn store_bytes_per_op(&self) -> f64 {
        self.store_bytes as f64 / self.ops.max(1) as f64
    }

    /// Device bytes per key.
    pub fn device_bytes_per_op(&self) -> Option<f64> {
        self.device_bytes.map(|b| b as f64 / self.ops.max(1) as f64)
    }

    /// Device bytes over store bytes (`None` without either).
    pub fn device_ratio(&self) -> Option<f64> {
        let d = self.device_bytes?;
        (self.store_bytes > 0).then(|| d as f64 / self.store_bytes as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_cdf_follow_the_samples() {
        let mut r = Recorder::start();
        for i in 1..=1000u64 {
            // 1..=1000 µs as ns, without sleeping: record directly.
            r.hist.record(i * 1000).unwrap();
        }
        let p = r.finish(1000, 4096);
        let near = |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 * 0.002;
        assert!(near(p.percentiles_ns[0], 500_000), "{p:?}");
        assert!(near(p.percentiles_ns[2], 990_000), "{p:?}");
        assert!(near(p.percentiles_ns[3], 999_000), "{p:?}");
        assert!(near(p.max_ns, 1_000_000));
        assert!(
            p.cdf
                .windows(2)
                .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1)
        );
        assert_eq!(p.cdf.last().unwrap().1, 1.0);
        assert_eq!(p.store_bytes_per_op(), 4.096);
    }

    #[test]
    fn proc_io_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(device_read_bytes().is_some());
        }
    }
}
