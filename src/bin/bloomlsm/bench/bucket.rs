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
//! deleted afterwards. With `--benchmarks`, the store is made in the
//! bucket ([`for_benchmarks`]) and its requests counted ([`requests`]).

#[cfg(not(feature = "object-store"))]
use super::args::{BenchArgs, StoreUrl};

/// The endpoint as the environment names it.
pub fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT")
        .or_else(|_| std::env::var("AWS_ENDPOINT_URL"))
        .unwrap_or_else(|_| "AWS S3".to_string())
}

/// Requests the bucket client made, and their bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct BucketCount {
    pub gets: u64,
    pub get_bytes: u64,
    pub puts: u64,
    pub put_bytes: u64,
}

impl BucketCount {
    /// `self - before`.
    pub fn since(&self, before: &BucketCount) -> BucketCount {
        BucketCount {
            gets: self.gets - before.gets,
            get_bytes: self.get_bytes - before.get_bytes,
            puts: self.puts - before.puts,
            put_bytes: self.put_bytes - before.put_bytes,
        }
    }
}

#[cfg(feature = "object-store")]
pub use self::run::{for_benchmarks, measure, remove_benchmarks_store, requests};

/// The bucket's requests so far (`None`: built without `object-store`).
#[cfg(not(feature = "object-store"))]
pub fn requests() -> Option<BucketCount> {
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
    use super::super::row::{BucketPhase, BucketRow};
    use super::super::stores::store_options;
    use super::BucketCount;
    use crate::phase::Phase;
    use crate::{CliError, CliResult};

    /// Uploads the closed store in `local` under the prefix
    /// `url`/CONFIGURATION/, measures the bucket's phases
    /// ([`BUCKET_PHASES`](super::super::row::BUCKET_PHASES)) on it, and
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
