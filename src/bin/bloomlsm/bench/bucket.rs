//! `bench --store s3://BUCKET/PREFIX`: each configuration's store read
//! with its tables in an S3 bucket. The store the study built on the local
//! disk is uploaded ([`bloomlsm::fs::bucket::upload_store`]), opened
//! read-only on a [`BucketFs`] and looked up twice:
//!
//! - cold: no disk cache, so every data-block read is one ranged GET of
//!   that block — what [`LatencyFs`](bloomlsm::fs::latency::LatencyFs)
//!   models as one request, which the store's own count of block reads
//!   gives beside each measured figure;
//! - warm: every table read into the disk cache first
//!   ([`BucketFs::prefetch`]), so a lookup costs no request.
//!
//! Filters and indexes are held in memory in both, read once when the
//! store opens (the "open" GETs). The requests, bytes and latencies are
//! the bucket file system's counts over each phase; the objects are
//! deleted afterwards.

use serde_json::{Value, json};

use crate::phase::Phase;
use crate::report::{TextTable, bytes, count, sig3};

use super::args::{BenchArgs, StoreUrl};
use super::row::BenchRow;

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
fn saved(r: &BenchRow, none: Option<&BenchRow>, i: usize) -> Option<f64> {
    let none = none?.bucket.as_ref()?;
    let me = r.bucket.as_ref()?;
    Some(none.phases[i].per_get() - me.phases[i].per_get())
}

/// A latency: µs below a millisecond, else ms.
fn latency(ns: u64) -> String {
    if ns < 1_000_000 {
        format!("{} µs", sig3(ns as f64 / 1e3))
    } else {
        format!("{} ms", sig3(ns as f64 / 1e6))
    }
}

/// The text report of the bucket phases, after the main table.
pub fn write_text(
    out: &mut dyn std::io::Write,
    args: &BenchArgs,
    url: &StoreUrl,
    rows: &[BenchRow],
    none: Option<&BenchRow>,
) -> crate::CliResult {
    let mut t = TextTable::new(&[
        "config",
        "phase",
        "GETs/get",
        "model",
        "FPR model",
        "bytes/get",
        "p50",
        "p99",
        "GETs saved",
        "USD/M gets",
    ]);
    for r in rows {
        let Some(b) = &r.bucket else { continue };
        for (i, (label, _)) in BUCKET_PHASES.iter().enumerate() {
            let p = &b.phases[i];
            t.row(vec![
                if i == 0 {
                    r.config.name.clone()
                } else {
                    String::new()
                },
                label.to_string(),
                sig3(p.per_get()),
                sig3(p.model_per_get()),
                p.fpr_model_per_get().map_or("-".into(), sig3),
                bytes(p.bytes_per_get().round() as u64),
                latency(p.phase.percentiles_ns[0]),
                latency(p.phase.percentiles_ns[2]),
                saved(r, none, i).map_or("-".into(), sig3),
                format!("{:.4}", p.per_get() * args.price_per_million_gets),
            ]);
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "tables in {url} ({}): {} gets per phase",
        endpoint(),
        count(args.bucket_lookups.min(args.lookups))
    )?;
    out.write_all(t.render().as_bytes())?;
    for r in rows {
        let Some(b) = &r.bucket else { continue };
        writeln!(
            out,
            "{}: {} tables ({}) uploaded in {:.1} s; opened with {} GETs ({}); warmed with {} GETs ({}) in {:.1} s",
            r.config.name,
            count(b.tables),
            bytes(b.table_bytes),
            b.upload_secs,
            count(b.open_requests),
            bytes(b.open_request_bytes),
            count(b.prefetch_requests),
            bytes(b.prefetch_bytes),
            b.prefetch_secs
        )?;
    }
    writeln!(
        out,
        "cold: no disk cache, each block read one ranged GET; multi_get: 1,024 keys a call, each level's reads in parallel (16 at a time), latency per key; warm: every table in the disk cache ({} chunks) first. GETs/get: measured at the bucket client; model: the store's block reads, one request each (what the latency model counts); FPR model: the sum of the modelled FPRs of the files each missing get probed. GETs saved: none's GETs/get less the row's. USD at {:.2} per million GETs.",
        bytes(args.bucket_chunk_bytes),
        args.price_per_million_gets
    )?;
    Ok(())
}

/// The endpoint as the environment names it.
pub fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT")
        .or_else(|_| std::env::var("AWS_ENDPOINT_URL"))
        .unwrap_or_else(|_| "AWS S3".to_string())
}

/// The `bucket` field of a row's JSON.
pub fn json(r: &BenchRow, none: Option<&BenchRow>, price: f64) -> Value {
    let Some(b) = &r.bucket else {
        return Value::Null;
    };
    let mut phases = serde_json::Map::new();
    for (i, (_, name)) in BUCKET_PHASES.iter().enumerate() {
        let p = &b.phases[i];
        phases.insert(
            name.to_string(),
            json!({
                "gets": p.gets,
                "get_requests": p.requests,
                "get_requests_per_get": p.per_get(),
                "model_requests_per_get": p.model_per_get(),
                "fpr_model_requests_per_get": p.fpr_model_per_get(),
                "request_bytes_per_get": p.bytes_per_get(),
                "model_bytes_per_get": p.model_bytes as f64 / p.gets.max(1) as f64,
                "p50_ns": p.phase.percentiles_ns[0],
                "p99_ns": p.phase.percentiles_ns[2],
                "mean_ns": p.phase.mean_ns,
                "requests_saved_per_get": saved(r, none, i),
                "usd_per_million_gets": p.per_get() * price,
            }),
        );
    }
    json!({
        "url": b.url,
        "tables": b.tables,
        "table_bytes": b.table_bytes,
        "upload_seconds": b.upload_secs,
        "open_get_requests": b.open_requests,
        "open_request_bytes": b.open_request_bytes,
        "prefetch_get_requests": b.prefetch_requests,
        "prefetch_bytes": b.prefetch_bytes,
        "prefetch_seconds": b.prefetch_secs,
        "phases": phases,
    })
}

#[cfg(feature = "object-store")]
pub use self::run::{for_benchmarks, measure, remove_benchmarks_store, requests};

/// The bucket's requests so far (`None`: built without `object-store`).
#[cfg(not(feature = "object-store"))]
pub fn requests() -> Option<super::remote::BucketCount> {
    None
}

/// `--benchmarks --store` needs the feature, which `check_args` asks for.
#[cfg(not(feature = "object-store"))]
pub fn for_benchmarks(
    _: &BenchArgs,
    _: &StoreUrl,
    _: &std::path::Path,
    _: &std::path::Path,
) -> crate::CliResult<std::sync::Arc<dyn bloomlsm::fs::FileSystem>> {
    Err(crate::CliError::usage(
        "--store needs the object-store feature",
    ))
}

/// Nothing is in a bucket without the feature.
#[cfg(not(feature = "object-store"))]
pub fn remove_benchmarks_store() -> crate::CliResult {
    Ok(())
}

#[cfg(feature = "object-store")]
mod run {
    use std::path::Path;
    use std::sync::{Arc, OnceLock};
    use std::time::Instant;

    use bloomlsm::fs::FileSystem;
    use bloomlsm::fs::bucket::{BucketConfig, BucketFs, upload_store};
    use bloomlsm::{Db, ReadMode, Stats};

    use super::super::args::{BenchArgs, StoreUrl};
    use super::super::configs::BenchConfig;
    use super::super::measure::{Zipf, existing_gets, existing_multi_gets, missing_gets};
    use super::super::remote::BucketCount;
    use super::super::stores::store_options;
    use super::{BucketPhase, BucketRow};
    use crate::phase::Phase;
    use crate::{CliError, CliResult};

    /// Uploads the closed store in `local` under the prefix
    /// `url`/CONFIGURATION/, measures [`super::BUCKET_PHASES`] on it, and
    /// deletes its objects. `work` is a local directory for the store's
    /// copy and the caches, removed afterwards.
    pub fn measure(
        args: &BenchArgs,
        url: &StoreUrl,
        config: &BenchConfig,
        local: &Path,
        zipf: Option<&Zipf>,
        work: &Path,
    ) -> CliResult<BucketRow> {
        let _ = std::fs::remove_dir_all(work);
        let result = measure_in(args, url, config, local, zipf, work);
        let _ = std::fs::remove_dir_all(work);
        result
    }

    fn measure_in(
        args: &BenchArgs,
        url: &StoreUrl,
        config: &BenchConfig,
        local: &Path,
        zipf: Option<&Zipf>,
        work: &Path,
    ) -> CliResult<BucketRow> {
        let dir = work.join("store");
        let prefix = format!("{}{}/", url.prefix, config.name);
        let bucket_config = |cache: &str, cache_bytes: u64| {
            BucketConfig::new(&dir, &url.bucket, work.join(cache))
                .prefix(&prefix)
                .chunk_bytes(args.bucket_chunk_bytes)
                .cache_bytes(cache_bytes)
        };
        let n = args.bucket_lookups.min(args.lookups);
        let name = format!("{} in the bucket", config.name);

        let fs = BucketFs::open(bucket_config("upload-cache", 0))?;
        let start = Instant::now();
        let up = upload_store(&fs, local)?;
        let upload_secs = start.elapsed().as_secs_f64();
        drop(fs);
        let result = (|| {
            let mut opts = store_options(args, config)?;
            // No direct I/O on a bucket; reads are ranged GETs.
            opts.read_mode = ReadMode::Buffered;

            let cold = Arc::new(BucketFs::open(bucket_config("cold-cache", 0))?);
            let unopened = cold.counters();
            let db = Db::open_read_only(&dir, opts.clone().fs(cold.clone()))?;
            let opened = cold.counters();
            let c = phases(args, &name, &db, &cold, zipf, n, "cold")?;
            let before = cold.counters();
            let (stats, phase) = existing_multi_gets(args, &format!("{name}, cold"), &db, zipf, n)?;
            let m = bucket_phase(n, &stats, phase, before, cold.counters());
            db.close()?;
            drop(cold);

            // Room for every chunk of every table, each rounded up.
            let chunks = up.table_bytes.div_ceil(args.bucket_chunk_bytes) + up.tables;
            let warm = Arc::new(BucketFs::open(bucket_config(
                "warm-cache",
                chunks * args.bucket_chunk_bytes,
            ))?);
            let start = Instant::now();
            let fetched = warm.prefetch(&dir)?;
            let prefetch_secs = start.elapsed().as_secs_f64();
            let prefetched = warm.counters();
            let db = Db::open_read_only(&dir, opts.fs(warm.clone()))?;
            let w = phases(args, &name, &db, &warm, zipf, n, "warm")?;
            db.close()?;
            remove_store(&warm)?;
            let [c0, c1] = c;
            let [w0, w1] = w;
            Ok(BucketRow {
                url: format!("s3://{}/{prefix}", url.bucket),
                tables: up.tables,
                table_bytes: up.table_bytes,
                upload_secs,
                open_requests: opened.gets - unopened.gets,
                open_request_bytes: opened.get_bytes - unopened.get_bytes,
                prefetch_requests: prefetched.gets,
                prefetch_bytes: fetched,
                prefetch_secs,
                phases: [c0, c1, m, w0, w1],
            })
        })();
        if result.is_err() {
            // The objects, whatever failed after the upload.
            if let Ok(fs) = BucketFs::open(bucket_config("upload-cache", 0)) {
                let _ = remove_store(&fs);
            }
        }
        result
    }

    /// The missing-key and existing-key phases on `db`, counted at `fs`.
    fn phases(
        args: &BenchArgs,
        name: &str,
        db: &Db,
        fs: &BucketFs,
        zipf: Option<&Zipf>,
        n: u64,
        temperature: &str,
    ) -> CliResult<[BucketPhase; 2]> {
        let one = |missing: bool| -> CliResult<BucketPhase> {
            let before = fs.counters();
            let label = format!("{name}, {temperature}");
            let (stats, phase) = if missing {
                missing_gets(args, &label, db, n)?
            } else {
                existing_gets(args, &label, db, zipf, n)?
            };
            let after = fs.counters();
            let mut p = bucket_phase(n, &stats, phase, before, after);
            if missing {
                p.fpr_model_requests = Some(stats.missing_get_predicted_reads);
            }
            Ok(p)
        };
        Ok([one(true)?, one(false)?])
    }

    fn bucket_phase(
        n: u64,
        s: &Stats,
        phase: Phase,
        before: bloomlsm::fs::bucket::BucketCounters,
        after: bloomlsm::fs::bucket::BucketCounters,
    ) -> BucketPhase {
        let t = &s.total;
        BucketPhase {
            gets: n,
            requests: after.gets - before.gets,
            request_bytes: after.get_bytes - before.get_bytes,
            model_requests: t.block_reads + t.filter_block_reads + t.index_block_reads,
            model_bytes: t.bytes_read + t.filter_bytes_read + t.index_bytes_read,
            fpr_model_requests: None,
            phase,
        }
    }

    /// The bucket file system of a `--benchmarks --store` run.
    static BENCHMARKS_FS: OnceLock<Arc<BucketFs>> = OnceLock::new();

    /// The requests of the `--benchmarks` store's bucket so far; `None`
    /// without one.
    pub fn requests() -> Option<BucketCount> {
        let c = BENCHMARKS_FS.get()?.counters();
        Some(BucketCount {
            gets: c.gets,
            get_bytes: c.get_bytes,
            puts: c.puts,
            put_bytes: c.put_bytes,
        })
    }

    /// The file system of the `--benchmarks` store in `dir`: its tables
    /// under `url`'s prefix, cached in `home`'s `.bucket-cache`.
    pub fn for_benchmarks(
        args: &BenchArgs,
        url: &StoreUrl,
        dir: &Path,
        home: &Path,
    ) -> CliResult<Arc<dyn FileSystem>> {
        let cache = home.join(".bucket-cache");
        let _ = std::fs::remove_dir_all(&cache);
        let fs = Arc::new(BucketFs::open(
            BucketConfig::new(dir, &url.bucket, cache)
                .prefix(&url.prefix)
                .chunk_bytes(args.bucket_chunk_bytes)
                .cache_bytes(args.bucket_cache_bytes),
        )?);
        BENCHMARKS_FS
            .set(fs.clone())
            .map_err(|_| CliError::new("the --benchmarks bucket was opened twice"))?;
        Ok(fs)
    }

    /// Deletes the `--benchmarks` store's objects, if it is in a bucket.
    pub fn remove_benchmarks_store() -> CliResult {
        match BENCHMARKS_FS.get() {
            Some(fs) => remove_store(fs),
            None => Ok(()),
        }
    }

    /// Deletes the store's objects and the prefix's marker.
    fn remove_store(fs: &BucketFs) -> CliResult {
        fs.remove_store()
            .map(|_| ())
            .map_err(|e| CliError::new(format!("delete the store's objects: {e}")))
    }
}
