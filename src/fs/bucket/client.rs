//! The bucket client: the configuration, the S3 client built from it, the
//! small tokio runtime its requests run on, and the request counters.
//!
//! Every request is a future spawned on the client's own runtime and waited
//! for on the calling thread through a channel, so the store's synchronous
//! API can be called from any thread, an async task of the embedder's own
//! runtime included (it then blocks that task's thread, as any file read
//! does, but never panics for a runtime started within a runtime).

use std::future::Future;
use std::io;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{
    ClientOptions, GetOptions, GetRange, ListResult, ObjectMeta, ObjectStore, ObjectStoreExt,
    PutMode, PutOptions, PutPayload, RetryConfig,
};

use crate::error::{Error, Result};

/// Where a store's table files go: an S3-compatible bucket, and the local
/// disk cache of their bytes. Credentials and anything left unset here come
/// from the standard `AWS_*` environment variables (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`,
/// `AWS_ENDPOINT`, …), as the AWS tools read them.
///
/// ```
/// use bloomlsm::fs::bucket::BucketConfig;
///
/// let config = BucketConfig::new("/var/lib/app/db", "my-bucket", "/var/cache/app/db")
///     .endpoint("http://127.0.0.1:9000")
///     .prefix("stores/app/")
///     .cache_bytes(1 << 30);
/// assert_eq!(config.chunk_bytes, 1 << 20);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BucketConfig {
    /// The store's directory on the local disk (the path given to
    /// [`crate::Db::open`]): table files under it are objects named by
    /// their path relative to it; every other file stays on the local disk.
    pub dir: PathBuf,
    /// The bucket's name.
    pub bucket: String,
    /// The S3 endpoint (`http://host:port`); `None`: `AWS_ENDPOINT`, or
    /// AWS's own for the region.
    pub endpoint: Option<String>,
    /// Prepended to every object key (`"stores/a/"`; empty: the bucket's
    /// root). Two stores in one bucket need different prefixes.
    pub prefix: String,
    /// The region; `None`: `AWS_REGION`, else `us-east-1`.
    pub region: Option<String>,
    /// The credentials; `None`: from the environment.
    pub credentials: Option<BucketCredentials>,
    /// The local directory of the disk cache and of tables being written.
    /// Its contents are kept across reopens.
    pub cache_dir: PathBuf,
    /// The most bytes of table data the disk cache keeps (least recently
    /// used chunks are evicted past it). 0: no cache; each read is a GET
    /// of exactly the bytes asked for.
    pub cache_bytes: u64,
    /// The unit of the disk cache: a read that misses fetches the aligned
    /// chunks of this many bytes around it, in one GET.
    pub chunk_bytes: u64,
    /// Tables larger than this are uploaded in parts (multipart upload);
    /// smaller ones in one PUT.
    pub multipart_above: u64,
    /// The size of each part of a multipart upload (S3's minimum is 5 MiB).
    pub part_bytes: u64,
    /// Retries of a failed request, with exponential backoff.
    pub max_retries: usize,
    /// How long a request, with its retries, may take before it fails.
    pub request_timeout: Duration,
    /// Make a new store under a prefix that holds objects this store did
    /// not write: another store's (its `bloomlsm-store` object names
    /// another directory) or anything else. Default false: such a prefix
    /// is refused at [`super::BucketFs::open`], so a mistyped prefix never
    /// gets a store among someone else's objects (and never has their
    /// table-named objects taken for its own). With it, the prefix's
    /// `bloomlsm-store` object is written for this store's directory;
    /// objects that are not tables are left alone and never read; a
    /// table-named object of no store still makes the new store's first
    /// [`crate::Db::open`] refuse, as a local table without `CURRENT` does.
    pub create_among_other_objects: bool,
    /// Keep the whole store in the bucket, not only its tables: its
    /// write-ahead logs, MANIFESTs, `CURRENT` and `OPTIONS` become the
    /// store's journal, `PREFIX` + `journal/` (docs/design.md, "A whole
    /// store in a bucket"). The local directory ([`BucketConfig::dir`])
    /// then holds only the store's lock: deleting it loses nothing, and
    /// the store opens from any machine that reaches the bucket. One
    /// writer at a time: [`crate::Db::open`] fences every older writer
    /// out ([`crate::Error::Fenced`]). Default false.
    pub whole_store: bool,
    /// A whole store's unsynced log writes are gathered and written to
    /// the bucket at least this often (a synced write is written at once,
    /// with any gathered before it). Default 100 ms.
    pub log_flush_interval: Duration,
    /// ... and as soon as this many bytes have gathered. Default 1 MiB.
    pub log_flush_bytes: u64,
    /// A whole store's writer deletes a table it no longer needs this
    /// long after the store has let it go, so that a reader elsewhere
    /// still on an older state ([`crate::Db::refresh`]) can read it.
    /// Tables still waiting when the writer closes are deleted by a later
    /// open. Default 60 s; zero deletes at once.
    pub delete_grace: Duration,
}

/// An access key pair (and session token) for [`BucketConfig::credentials`].
#[derive(Clone)]
pub struct BucketCredentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: String,
    /// `AWS_SESSION_TOKEN`, for temporary credentials.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for BucketCredentials {
    /// The key id only: a printed config never shows the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketCredentials")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

impl BucketConfig {
    /// The tables of the store in `dir` in `bucket`, cached in `cache_dir`
    /// (1 GiB in 1 MiB chunks); everything else from the environment.
    pub fn new(
        dir: impl Into<PathBuf>,
        bucket: impl Into<String>,
        cache_dir: impl Into<PathBuf>,
    ) -> Self {
        BucketConfig {
            dir: dir.into(),
            bucket: bucket.into(),
            endpoint: None,
            prefix: String::new(),
            region: None,
            credentials: None,
            cache_dir: cache_dir.into(),
            cache_bytes: 1 << 30,
            chunk_bytes: 1 << 20,
            multipart_above: 16 << 20,
            part_bytes: 8 << 20,
            max_retries: 3,
            request_timeout: Duration::from_secs(30),
            create_among_other_objects: false,
            whole_store: false,
            log_flush_interval: Duration::from_millis(100),
            log_flush_bytes: 1 << 20,
            delete_grace: Duration::from_secs(60),
        }
    }

    /// Sets [`BucketConfig::dir`].
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = dir.into();
        self
    }

    /// Sets [`BucketConfig::bucket`].
    pub fn bucket(mut self, bucket: impl Into<String>) -> Self {
        self.bucket = bucket.into();
        self
    }

    /// Sets [`BucketConfig::cache_dir`].
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = dir.into();
        self
    }

    /// Sets [`BucketConfig::endpoint`].
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// Sets [`BucketConfig::prefix`].
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sets [`BucketConfig::region`].
    pub fn region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// Sets [`BucketConfig::credentials`] to a key pair.
    pub fn credentials(
        mut self,
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
    ) -> Self {
        self.credentials = Some(BucketCredentials {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token: None,
        });
        self
    }

    /// Sets [`BucketConfig::cache_bytes`].
    pub fn cache_bytes(mut self, bytes: u64) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// Sets [`BucketConfig::chunk_bytes`] (at least 1).
    pub fn chunk_bytes(mut self, bytes: u64) -> Self {
        self.chunk_bytes = bytes.max(1);
        self
    }

    /// Sets [`BucketConfig::multipart_above`].
    pub fn multipart_above(mut self, bytes: u64) -> Self {
        self.multipart_above = bytes;
        self
    }

    /// Sets [`BucketConfig::part_bytes`].
    pub fn part_bytes(mut self, bytes: u64) -> Self {
        self.part_bytes = bytes;
        self
    }

    /// Sets [`BucketConfig::max_retries`].
    pub fn max_retries(mut self, retries: usize) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sets [`BucketConfig::request_timeout`].
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets [`BucketConfig::create_among_other_objects`].
    pub fn create_among_other_objects(mut self, create: bool) -> Self {
        self.create_among_other_objects = create;
        self
    }

    /// Sets [`BucketConfig::whole_store`].
    pub fn whole_store(mut self, whole: bool) -> Self {
        self.whole_store = whole;
        self
    }

    /// Sets [`BucketConfig::log_flush_interval`] (at least 1 ms).
    pub fn log_flush_interval(mut self, every: Duration) -> Self {
        self.log_flush_interval = every.max(Duration::from_millis(1));
        self
    }

    /// Sets [`BucketConfig::log_flush_bytes`].
    pub fn log_flush_bytes(mut self, bytes: u64) -> Self {
        self.log_flush_bytes = bytes;
        self
    }

    /// Sets [`BucketConfig::delete_grace`].
    pub fn delete_grace(mut self, grace: Duration) -> Self {
        self.delete_grace = grace;
        self
    }

    /// `endpoint` as errors name it.
    pub(super) fn endpoint_name(&self) -> String {
        self.endpoint
            .clone()
            .or_else(|| std::env::var("AWS_ENDPOINT").ok())
            .unwrap_or_else(|| "AWS S3".to_string())
    }

    /// The S3 client this configuration describes.
    fn build_store(&self) -> Result<Arc<dyn ObjectStore>> {
        let mut b = AmazonS3Builder::from_env().with_bucket_name(&self.bucket);
        if let Some(e) = &self.endpoint {
            b = b.with_endpoint(e);
        }
        if let Some(r) = &self.region {
            b = b.with_region(r);
        }
        if let Some(c) = &self.credentials {
            b = b
                .with_access_key_id(&c.access_key_id)
                .with_secret_access_key(&c.secret_access_key);
            if let Some(t) = &c.session_token {
                b = b.with_token(t);
            }
        }
        let client = ClientOptions::new()
            .with_allow_http(true)
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(self.request_timeout);
        let retry = RetryConfig {
            max_retries: self.max_retries,
            retry_timeout: self.request_timeout,
            ..RetryConfig::default()
        };
        let store = b
            .with_client_options(client)
            .with_retry(retry)
            .build()
            .map_err(|e| {
                Error::invalid(format!(
                    "bucket {} at {}: {}",
                    self.bucket,
                    self.endpoint_name(),
                    one_line(&e.to_string())
                ))
            })?;
        Ok(Arc::new(store))
    }
}

/// Requests made and bytes moved, and the disk cache's work, since the
/// bucket file system was made ([`super::BucketFs::counters`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BucketCounters {
    /// GET requests of table data (ranged reads); the read of the
    /// prefix's `bloomlsm-store` object at construction is not counted.
    pub gets: u64,
    /// Bytes the GETs returned.
    pub get_bytes: u64,
    /// HEAD requests (a table's size, when no listing or upload told it).
    pub heads: u64,
    /// PUT requests: whole uploads, multipart parts and the check made at
    /// construction.
    pub puts: u64,
    /// Bytes uploaded.
    pub put_bytes: u64,
    /// Multipart uploads completed.
    pub multipart_uploads: u64,
    /// DELETE requests.
    pub deletes: u64,
    /// Listings of a directory's tables (one LIST request per 1,000
    /// objects), the check of the prefix at construction included.
    pub lists: u64,
    /// Server-side copies.
    pub copies: u64,
    /// Chunk reads the disk cache served.
    pub cache_hits: u64,
    /// Chunk reads the disk cache did not hold (fetched with a GET).
    pub cache_misses: u64,
    /// Chunks the disk cache evicted to stay within its size.
    pub cache_evictions: u64,
    /// Chunks written into the disk cache from a table's upload.
    pub cache_fills: u64,
    /// Bytes the disk cache holds now.
    pub cache_bytes: u64,
}

/// The live counters behind [`BucketCounters`].
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub gets: AtomicU64,
    pub get_bytes: AtomicU64,
    pub heads: AtomicU64,
    pub puts: AtomicU64,
    pub put_bytes: AtomicU64,
    pub multipart_uploads: AtomicU64,
    pub deletes: AtomicU64,
    pub lists: AtomicU64,
    pub copies: AtomicU64,
    pub cache_hits: AtomicU64,
    pub cache_misses: AtomicU64,
    pub cache_evictions: AtomicU64,
    pub cache_fills: AtomicU64,
}

/// Adds `n` to `c` (relaxed: counters order nothing).
pub(super) fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    pub(super) fn snapshot(&self, cache_bytes: u64) -> BucketCounters {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        BucketCounters {
            gets: l(&self.gets),
            get_bytes: l(&self.get_bytes),
            heads: l(&self.heads),
            puts: l(&self.puts),
            put_bytes: l(&self.put_bytes),
            multipart_uploads: l(&self.multipart_uploads),
            deletes: l(&self.deletes),
            lists: l(&self.lists),
            copies: l(&self.copies),
            cache_hits: l(&self.cache_hits),
            cache_misses: l(&self.cache_misses),
            cache_evictions: l(&self.cache_evictions),
            cache_fills: l(&self.cache_fills),
            cache_bytes,
        }
    }
}

/// `s` with its line breaks folded: errors of the bucket are one line.
pub(super) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An object store error as an `io::Error` (`NotFound` kept), the object
/// key in its message.
pub(super) fn io_error(op: &str, key: &ObjectPath, e: object_store::Error) -> io::Error {
    let kind = match e {
        object_store::Error::NotFound { .. } => io::ErrorKind::NotFound,
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => io::ErrorKind::PermissionDenied,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(
        kind,
        format!("{op} of object {key}: {}", one_line(&e.to_string())),
    )
}

/// The S3 client and the runtime its requests run on.
#[derive(Debug)]
pub(super) struct Client {
    pub store: Arc<dyn ObjectStore>,
    /// `None` only while dropping.
    runtime: Option<tokio::runtime::Runtime>,
    pub counters: Counters,
}

impl Drop for Client {
    fn drop(&mut self) {
        // Without waiting: dropping a runtime that waits for its threads
        // panics inside an async context, where an embedder may drop the
        // store.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// A spawned request, waited for by [`Pending::wait`].
pub(super) struct Pending<T>(mpsc::Receiver<T>);

impl<T> Pending<T> {
    /// The request's result; an error if its task died.
    pub(super) fn wait(self) -> io::Result<T> {
        self.0
            .recv()
            .map_err(|_| io::Error::other("bucket request task ended without an answer"))
    }
}

impl Client {
    /// A client of `config`'s bucket (no request made).
    pub(super) fn new(config: &BucketConfig) -> Result<Client> {
        Self::with_store(config.build_store()?)
    }

    /// A client of `store` (tests give an in-memory one).
    pub(super) fn with_store(store: Arc<dyn ObjectStore>) -> Result<Client> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("bloomlsm-bucket")
            .enable_all()
            .build()
            .map_err(|e| Error::io("start the bucket client's runtime", e))?;
        Ok(Client {
            store,
            runtime: Some(runtime),
            counters: Counters::default(),
        })
    }

    /// Runs `fut` on the client's runtime without waiting for it.
    pub(super) fn spawn<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> Pending<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        if let Some(rt) = &self.runtime {
            rt.spawn(async move {
                let _ = tx.send(fut.await);
            });
        }
        Pending(rx)
    }

    /// Runs `fut` on the client's runtime and waits for its result.
    pub(super) fn run<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> io::Result<T> {
        self.spawn(fut).wait()
    }

    /// GET of `range` of `key`; exactly `range.len()` bytes or an error
    /// (`UnexpectedEof` for an object shorter than that).
    pub(super) fn get_range(&self, key: &ObjectPath, range: Range<u64>) -> io::Result<Bytes> {
        let store = self.store.clone();
        let k = key.clone();
        let want = range.end - range.start;
        let opts = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            ..GetOptions::default()
        };
        add(&self.counters.gets, 1);
        let got = self
            .run(async move {
                let r = store.get_opts(&k, opts).await?;
                r.bytes().await
            })?
            .map_err(|e| io_error("GET", key, e))?;
        add(&self.counters.get_bytes, got.len() as u64);
        if got.len() as u64 != want {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "GET of object {key} bytes {}..{}: {} bytes came back",
                    range.start,
                    range.end,
                    got.len()
                ),
            ));
        }
        Ok(got)
    }

    /// HEAD of `key`.
    pub(super) fn head(&self, key: &ObjectPath) -> io::Result<ObjectMeta> {
        let store = self.store.clone();
        let k = key.clone();
        add(&self.counters.heads, 1);
        self.run(async move { store.head(&k).await })?
            .map_err(|e| io_error("HEAD", key, e))
    }

    /// PUT of `data` as `key`; the object's ETag, if the server gives one.
    pub(super) fn put(&self, key: &ObjectPath, data: Bytes) -> io::Result<Option<String>> {
        let store = self.store.clone();
        let k = key.clone();
        let n = data.len() as u64;
        add(&self.counters.puts, 1);
        let r = self
            .run(async move { store.put(&k, PutPayload::from(data)).await })?
            .map_err(|e| io_error("PUT", key, e))?;
        add(&self.counters.put_bytes, n);
        Ok(r.e_tag)
    }

    /// PUT of `data` as `key` only if no object has that key (S3's
    /// `If-None-Match: *`): `Ok(false)` when one had it, and nothing was
    /// written.
    pub(super) fn put_create(&self, key: &ObjectPath, data: Bytes) -> io::Result<bool> {
        let store = self.store.clone();
        let k = key.clone();
        let n = data.len() as u64;
        add(&self.counters.puts, 1);
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let r = self.run(async move { store.put_opts(&k, PutPayload::from(data), opts).await })?;
        match r {
            Ok(_) => {
                add(&self.counters.put_bytes, n);
                Ok(true)
            }
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(io_error("conditional PUT", key, e)),
        }
    }

    /// GET of the whole object `key`.
    pub(super) fn get(&self, key: &ObjectPath) -> io::Result<Bytes> {
        let store = self.store.clone();
        let k = key.clone();
        add(&self.counters.gets, 1);
        let got = self
            .run(async move { store.get(&k).await?.bytes().await })?
            .map_err(|e| io_error("GET", key, e))?;
        add(&self.counters.get_bytes, got.len() as u64);
        Ok(got)
    }

    /// The keys of every object under `prefix` at any depth, in the
    /// bucket's order (byte order of the keys), after `offset` if given.
    pub(super) fn list_keys(
        &self,
        prefix: &ObjectPath,
        offset: Option<&ObjectPath>,
    ) -> io::Result<Vec<ObjectPath>> {
        use futures_util::TryStreamExt;
        let store = self.store.clone();
        let (p, o) = (prefix.clone(), offset.cloned());
        add(&self.counters.lists, 1);
        let mut keys = self
            .run(async move {
                let s = match &o {
                    Some(o) => store.list_with_offset(Some(&p), o),
                    None => store.list(Some(&p)),
                };
                s.map_ok(|m| m.location).try_collect::<Vec<_>>().await
            })?
            .map_err(|e| io_error("LIST", prefix, e))?;
        keys.sort();
        Ok(keys)
    }

    /// DELETE of `key` (no error for a missing object: S3 has none).
    pub(super) fn delete(&self, key: &ObjectPath) -> io::Result<()> {
        let store = self.store.clone();
        let k = key.clone();
        add(&self.counters.deletes, 1);
        self.run(async move { store.delete(&k).await })?
            .or_else(|e| match e {
                object_store::Error::NotFound { .. } => Ok(()),
                e => Err(e),
            })
            .map_err(|e| io_error("DELETE", key, e))
    }

    /// Server-side copy of `from` to `to`.
    pub(super) fn copy(&self, from: &ObjectPath, to: &ObjectPath) -> io::Result<()> {
        let store = self.store.clone();
        let (f, t) = (from.clone(), to.clone());
        add(&self.counters.copies, 1);
        self.run(async move { store.copy(&f, &t).await })?
            .map_err(|e| io_error(&format!("copy to {to}"), from, e))
    }

    /// The objects directly under `prefix` (the bucket's root if empty).
    pub(super) fn list(&self, prefix: &ObjectPath) -> io::Result<Vec<ObjectMeta>> {
        Ok(self.list_entries(prefix)?.objects)
    }

    /// The objects and the common prefixes ("directories") directly under
    /// `prefix`.
    pub(super) fn list_entries(&self, prefix: &ObjectPath) -> io::Result<ListResult> {
        let store = self.store.clone();
        let p = prefix.clone();
        add(&self.counters.lists, 1);
        let r = self
            .run(async move {
                let p = (p.parts().count() > 0).then_some(p);
                store.list_with_delimiter(p.as_ref()).await
            })?
            .map_err(|e| io_error("LIST", prefix, e))?;
        Ok(r)
    }
}
