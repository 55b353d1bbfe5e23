//! SlateDB as a peer of benches/slatedb_peer.rs: the store on the same S3
//! server, and a counting wrapper around the `ObjectStore` it is given so
//! that its requests can be set beside `BucketFs::counters`.
//!
//! Only the wrapper sees SlateDB's requests: each counted call is one HTTP
//! request (object_store 0.14 routes `get`, `get_range` and `head` through
//! `get_opts`, and the wrapper leaves `get_ranges` to the trait's default,
//! which coalesces the ranges and calls `get_range` per request, as the S3
//! client's own `get_ranges` does).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{
    ClientOptions, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, UploadPart,
};
use slatedb::config::{FlushOptions, FlushType, Settings};
use slatedb::db_cache::SplitCache;
use slatedb::db_cache::moka::{MokaCache, MokaCacheOptions};
use slatedb::{BloomFilterPolicy, Db, WriteBatch};

use super::{Requests, S3};

/// Bytes of SlateDB's cache of filters, indexes and SST stats (its
/// `DEFAULT_META_CACHE_CAPACITY`): far more than the store's metadata, so
/// nothing is evicted from it.
const META_CACHE_BYTES: u64 = 128 << 20;

/// Requests by kind. SST data and metadata (`compacted/`) are counted apart
/// from the rest — WAL, manifest, compactor state — which SlateDB also keeps
/// in the bucket.
#[derive(Debug, Default)]
pub struct Counts {
    table_gets: AtomicU64,
    table_get_bytes: AtomicU64,
    table_heads: AtomicU64,
    other_gets: AtomicU64,
    other_heads: AtomicU64,
    puts: AtomicU64,
    put_bytes: AtomicU64,
    lists: AtomicU64,
    deletes: AtomicU64,
    copies: AtomicU64,
}

impl Counts {
    pub fn snapshot(&self) -> Requests {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Requests {
            table_gets: l(&self.table_gets),
            table_get_bytes: l(&self.table_get_bytes),
            table_heads: l(&self.table_heads),
            other_gets: l(&self.other_gets),
            other_heads: l(&self.other_heads),
            puts: l(&self.puts),
            put_bytes: l(&self.put_bytes),
            lists: l(&self.lists),
            deletes: l(&self.deletes),
            copies: l(&self.copies),
        }
    }
}

fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// An SST of the tree (as opposed to a WAL SST, the manifest, ...).
fn is_table(location: &Path) -> bool {
    location.as_ref().split('/').any(|p| p == "compacted")
}

/// An `ObjectStore` that counts the requests it passes on.
#[derive(Debug)]
pub struct CountingStore {
    inner: Arc<dyn ObjectStore>,
    counts: Arc<Counts>,
}

impl fmt::Display for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for CountingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        add(&self.counts.puts, 1);
        add(&self.counts.put_bytes, payload.content_length() as u64);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(CountingUpload {
            inner,
            counts: self.counts.clone(),
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let table = is_table(location);
        let head = options.head;
        let result = self.inner.get_opts(location, options).await?;
        let c = &self.counts;
        match (table, head) {
            (true, true) => add(&c.table_heads, 1),
            (true, false) => {
                add(&c.table_gets, 1);
                add(&c.table_get_bytes, result.range.end - result.range.start);
            }
            (false, true) => add(&c.other_heads, 1),
            (false, false) => add(&c.other_gets, 1),
        }
        Ok(result)
    }

    // `get_ranges`: the trait's default, which coalesces the ranges and
    // reads each through `get_opts` above (as the S3 client's own does).

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let counts = self.counts.clone();
        self.inner
            .delete_stream(locations)
            .inspect(move |_| add(&counts.deletes, 1))
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        add(&self.counts.lists, 1);
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        add(&self.counts.lists, 1);
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        add(&self.counts.copies, 1);
        self.inner.copy_opts(from, to, options).await
    }
}

/// A multipart upload whose parts count as PUTs.
#[derive(Debug)]
struct CountingUpload {
    inner: Box<dyn MultipartUpload>,
    counts: Arc<Counts>,
}

#[async_trait]
impl MultipartUpload for CountingUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        add(&self.counts.puts, 1);
        add(&self.counts.put_bytes, data.content_length() as u64);
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        self.inner.complete().await
    }

    async fn abort(&mut self) -> Result<()> {
        self.inner.abort().await
    }
}

/// The S3 client SlateDB gets: the same server, bucket and credentials as
/// bloomlsm's `BucketFs`, wrapped to count.
fn counting_store(s3: &S3, counts: Arc<Counts>) -> Arc<dyn ObjectStore> {
    let inner = AmazonS3Builder::new()
        .with_endpoint(&s3.endpoint)
        .with_bucket_name(&s3.bucket)
        .with_region("us-east-1")
        .with_access_key_id("test")
        .with_secret_access_key("test")
        .with_client_options(ClientOptions::new().with_allow_http(true))
        .build()
        .expect("S3 client for SlateDB");
    Arc::new(CountingStore {
        inner: Arc::new(inner),
        counts,
    })
}

/// SlateDB's settings here: its defaults (no compression, no object store
/// disk cache, WAL on and flushed every 100 ms, 64 MiB L0 SSTs) with the
/// filter policy given explicitly (10 bits/key, also its default).
fn settings() -> Settings {
    let s = Settings::default();
    assert!(s.compression_codec.is_none());
    assert!(s.object_store_cache_options.root_folder.is_none());
    s
}

/// SlateDB's in-memory cache: a meta cache for filters, indexes and SST
/// stats, and no block cache, so every data block read is a GET.
fn db_cache() -> Arc<SplitCache> {
    let meta = MokaCache::new_with_opts(MokaCacheOptions {
        max_capacity: META_CACHE_BYTES,
        time_to_live: None,
        time_to_idle: None,
    });
    Arc::new(
        SplitCache::new()
            .with_meta_cache(Some(Arc::new(meta)))
            .build(),
    )
}

/// The settings as the report prints them.
pub fn describe() -> String {
    let s = settings();
    format!(
        "slatedb {} (crates.io), its Settings defaults: Bloom filters {} bits/key (min_filter_keys {}), \
         {} B blocks, no compression, WAL on in the bucket (flush_interval {:?}), \
         l0_sst_size_bytes {} MiB, object store disk cache off; DbCache = SplitCache of a \
         {} MiB moka meta cache (filters, indexes, SST stats) and no block cache",
        super::locked_version("slatedb"),
        super::BITS_PER_KEY,
        s.min_filter_keys,
        4096,
        s.flush_interval.unwrap_or_default(),
        s.l0_sst_size_bytes >> 20,
        META_CACHE_BYTES >> 20,
    )
}

/// A SlateDB store at `path` in the bucket, on a runtime of its own.
pub struct Slate {
    rt: tokio::runtime::Runtime,
    db: Option<Db>,
    s3: S3,
    path: String,
    counts: Arc<Counts>,
}

impl Slate {
    pub fn new(s3: &S3, path: String) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        Slate {
            rt,
            db: None,
            s3: s3.clone(),
            path,
            counts: Arc::new(Counts::default()),
        }
    }

    pub fn requests(&self) -> Requests {
        self.counts.snapshot()
    }

    /// Opens the store (a new one, or the one left by [`Slate::close`]),
    /// with a new, empty cache.
    pub fn open(&mut self) {
        let store = counting_store(&self.s3, self.counts.clone());
        let db = self.rt.block_on(async {
            Db::builder(self.path.as_str(), store)
                .with_settings(settings())
                .with_filter_policies(vec![Arc::new(BloomFilterPolicy::new(
                    super::BITS_PER_KEY as u32,
                ))])
                .with_db_cache(db_cache(), 0)
                .build()
                .await
                .expect("open SlateDB")
        });
        self.db = Some(db);
    }

    fn db(&self) -> &Db {
        self.db.as_ref().expect("open")
    }

    /// Puts `records` in batches of [`super::BATCH`], each write awaited
    /// but not its durability (`WriteHandle::await_durable` is not called:
    /// a write returns once in the memtable and the WAL buffer, which
    /// SlateDB flushes to the bucket every `flush_interval`), then flushes
    /// the memtable to an L0 SST (`FlushType::MemTable`, which also makes
    /// the WAL durable). Returns the time taken.
    pub fn load(&self, records: &[super::Record]) -> Duration {
        let db = self.db();
        let t = Instant::now();
        self.rt.block_on(async {
            for chunk in records.chunks(super::BATCH) {
                let mut batch = WriteBatch::new();
                for (k, v) in chunk {
                    batch.put(k, v);
                }
                db.write(batch).await.expect("write");
            }
            db.flush_with_options(FlushOptions {
                flush_type: FlushType::MemTable,
            })
            .await
            .expect("flush");
        });
        t.elapsed()
    }

    pub fn close(&mut self) {
        if let Some(db) = self.db.take() {
            self.rt.block_on(db.close()).expect("close SlateDB");
        }
    }

    /// `true` if `key` was found.
    pub fn get(&self, key: &[u8]) -> bool {
        self.rt.block_on(self.db().get(key)).expect("get").is_some()
    }

    /// The SSTs of the tree after the flush, for the report.
    pub fn shape(&self) -> String {
        let m = self.db().manifest();
        format!(
            "{} L0 SSTs, {} sorted runs",
            m.l0().len(),
            m.compacted().len()
        )
    }
}
