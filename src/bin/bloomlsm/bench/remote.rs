//! The `--benchmarks` store as if on remote storage: its file system is a
//! [`LatencyFs`] (`--read-latency-us`, `--read-latency-p99-us`), and each
//! read workload reports the read requests it made, the requests its
//! filters saved, and what the requests cost at `--price-per-million-gets`.
//!
//! With `--store`, the store's tables are in a bucket behind that model,
//! and each line also gives the GETs the bucket client made: the model's
//! requests beside the measured ones.
//!
//! A filter that answers "absent" for a file saves that file's data-block
//! read: one request, the index and filter being held in memory. So the
//! requests saved per get are the filters' negatives per get.

use std::sync::Arc;
use std::time::Duration;

use bloomlsm::Stats;
use bloomlsm::fs::FileSystem;
use bloomlsm::fs::latency::{Latency, LatencyFs, ReadCount};

use serde_json::{Value, json};

use crate::{CliError, CliResult};

use super::args::BenchArgs;
use super::bucket::{self, BucketCount};

/// `--read-latency-us` and `--read-latency-p99-us` as a [`Latency`]
/// (zero when not given: requests are then only counted).
pub fn latency(args: &BenchArgs) -> CliResult<Latency> {
    let us = Duration::from_micros;
    match (args.read_latency_us, args.read_latency_p99_us) {
        (None, _) => Ok(Latency::Fixed(Duration::ZERO)),
        (Some(m), None) => Ok(Latency::Fixed(us(m))),
        (Some(m), Some(p)) if p >= m => Ok(Latency::LogNormal {
            median: us(m),
            p99: us(p),
        }),
        (Some(m), Some(p)) => Err(CliError::usage(format!(
            "--read-latency-p99-us {p} is below --read-latency-us {m}"
        ))),
    }
}

/// The store's file system: `inner` behind a [`LatencyFs`].
pub fn wrap(args: &BenchArgs, inner: Arc<dyn FileSystem>) -> CliResult<Arc<LatencyFs>> {
    Ok(Arc::new(LatencyFs::new(inner, latency(args)?)))
}

/// The latency in words, for the header.
pub fn describe(l: Latency) -> String {
    match l {
        Latency::Fixed(d) if d.is_zero() => "none (requests counted)".into(),
        Latency::Fixed(d) => format!("{} µs per read request", d.as_micros()),
        Latency::LogNormal { median, p99 } => format!(
            "log-normal per read request, median {} µs, P99 {} µs",
            median.as_micros(),
            p99.as_micros()
        ),
    }
}

/// The storage's counts at one moment: the model's reads, and with
/// `--store` the bucket client's requests.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    reads: ReadCount,
    bucket: Option<BucketCount>,
}

impl Snapshot {
    /// The counts of `fs` (and of the bucket under it) now.
    pub fn take(fs: &LatencyFs) -> Snapshot {
        Snapshot {
            reads: fs.reads(),
            bucket: bucket::requests(),
        }
    }

    /// The bucket's requests since `before` (`None` without `--store`).
    pub fn bucket_since(&self, before: &Snapshot) -> Option<BucketCount> {
        Some(self.bucket?.since(&before.bucket?))
    }
}

/// What one workload asked of the storage.
#[derive(Clone, Copy, Debug)]
pub struct Requests {
    /// Read requests and bytes during the workload (the model's).
    pub reads: ReadCount,
    /// The bucket's requests meanwhile, with `--store`.
    pub measured: Option<BucketCount>,
    /// The workload's operations.
    pub ops: u64,
    /// Its gets, and the filters' negatives among their probes.
    pub gets: u64,
    pub filter_negatives: u64,
    /// USD per million requests.
    pub price: f64,
}

impl Requests {
    /// From the file system's counts before and after, and the store's
    /// counters over the workload.
    pub fn new(before: Snapshot, after: Snapshot, ops: u64, stats: &Stats, price: f64) -> Self {
        let measured = after.bucket_since(&before);
        let (before, after) = (before.reads, after.reads);
        Requests {
            measured,
            reads: ReadCount {
                requests: after.requests - before.requests,
                bytes: after.bytes - before.bytes,
                latency: after.latency.saturating_sub(before.latency),
            },
            ops,
            gets: stats.gets,
            filter_negatives: stats.total.filter_negatives,
            price,
        }
    }

    pub fn per_op(&self) -> f64 {
        self.reads.requests as f64 / self.ops.max(1) as f64
    }

    pub fn bytes_per_op(&self) -> f64 {
        self.reads.bytes as f64 / self.ops.max(1) as f64
    }

    /// Requests the filters saved per get.
    pub fn saved_per_get(&self) -> Option<f64> {
        (self.gets > 0).then(|| self.filter_negatives as f64 / self.gets as f64)
    }

    /// USD per million operations.
    pub fn usd_per_million_ops(&self) -> f64 {
        self.per_op() * self.price
    }

    /// The text line. `writes`: the workload's compactions read too.
    pub fn line(&self, writes: bool) -> String {
        let mut l = format!(
            "Storage: {:.3} read requests/op, {:.1} bytes/op",
            self.per_op(),
            self.bytes_per_op()
        );
        if writes {
            l.push_str(" (compactions' reads included)");
        }
        if let Some(m) = &self.measured {
            let per = |n: u64| n as f64 / self.ops.max(1) as f64;
            l.push_str(&format!(
                "; measured at the bucket: {:.3} GETs/op, {:.1} bytes/op",
                per(m.gets),
                per(m.get_bytes)
            ));
        }
        if let Some(s) = self.saved_per_get() {
            l.push_str(&format!(
                "; filters saved {s:.3} requests/get (USD {:.4} per million gets)",
                s * self.price
            ));
        }
        l.push_str(&format!(
            "; USD {:.4} per million ops at USD {:.2} per million requests",
            self.usd_per_million_ops(),
            self.price
        ));
        l
    }

    /// The JSON fields.
    pub fn json(&self) -> Value {
        json!({
            "read_requests": self.reads.requests,
            "read_requests_per_op": self.per_op(),
            "read_request_bytes_per_op": self.bytes_per_op(),
            "requests_saved_per_get": self.saved_per_get(),
            "usd_per_million_ops": self.usd_per_million_ops(),
            "price_per_million_gets": self.price,
            "read_latency_ms_total": self.reads.latency.as_secs_f64() * 1e3,
            "bucket_get_requests_per_op": self.measured.map(|m| m.gets as f64 / self.ops.max(1) as f64),
            "bucket_get_bytes_per_op": self.measured.map(|m| m.get_bytes as f64 / self.ops.max(1) as f64),
        })
    }
}
