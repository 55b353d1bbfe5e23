//! [`BucketFs`]: a [`FileSystem`] that keeps a store's table files
//! (`*.sst`) in an S3-compatible bucket and every other file — the WAL,
//! MANIFEST, CURRENT, OPTIONS, LOCK — on the local disk (feature
//! `object-store`; docs/design.md, "Object storage").
//!
//! A table at `DIR/REL` (`DIR` the store's directory, [`BucketConfig::dir`];
//! `REL` such as `000012.sst` or `keyspace-000001/000012.sst`) is the object
//! `PREFIX` + `REL`. Its filter and index stay pinned in memory as for a
//! local table, so a lookup that the filters rule out makes no request.
//! Reads go through a local disk cache of aligned chunks
//! ([`BucketConfig::chunk_bytes`]); each read the cache lacks is one ranged
//! GET.
//!
//! | operation on a table | requests |
//! |---|---|
//! | `create_new`, `write_all` | none (a local staging file) |
//! | `sync_data` | one PUT, or a multipart upload above [`BucketConfig::multipart_above`] |
//! | `open_read`, `file_len` | none if an upload or a listing told the size, else one HEAD |
//! | `read_exact_at` | none on a cache hit, else one GET of the chunks missing |
//! | `remove_file` | one DELETE |
//! | `list_dir` | one LIST per 1,000 tables, besides the local listing |
//! | `hard_link` | one server-side copy (both names in the bucket) |
//!
//! ```no_run
//! use bloomlsm::fs::bucket::{BucketConfig, BucketFs};
//! use bloomlsm::{Db, Options};
//!
//! let dir = "/var/lib/app/db";
//! let fs = BucketFs::open(
//!     BucketConfig::new(dir, "my-bucket", "/var/cache/app/db").endpoint("http://127.0.0.1:9000"),
//! )?;
//! let fs = std::sync::Arc::new(fs);
//! let db = Db::open(dir, Options::default().fs(fs.clone()))?;
//! db.put("k", "v")?;
//! println!("GETs so far: {}", fs.counters().gets);
//! # Ok::<(), bloomlsm::Error>(())
//! ```

mod cache;
#[cfg(test)]
mod checkpoint_tests;
mod checkpoints;
mod client;
mod clone;
#[cfg(test)]
mod fault;
#[cfg(test)]
mod fault_tests;
mod journal;
mod journal_files;
#[cfg(test)]
mod journal_tests;
mod marker;
mod objects;
mod prefetch;
mod reader;
mod upload;
mod writer;

pub use checkpoints::CHECKPOINT_DIR;
pub use client::{BucketConfig, BucketCounters, BucketCredentials};
pub use journal::JOURNAL_DIR;
pub use marker::STORE_OBJECT;
pub use upload::{Uploaded, upload_store};

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
#[cfg(test)]
use object_store::ObjectStore;
use object_store::path::Path as ObjectPath;
use xxhash_rust::xxh3::xxh3_128;

use self::cache::DiskCache;
use self::client::Client;
use self::journal::Journal;
use self::journal_files::{Flusher, MemReadable, Tail};
use self::reader::BucketReadable;
use self::writer::BucketWritable;
use super::kept::{CheckpointInfo, KeptCheckpoint};
use super::{FileLock, FileSystem, ReadableFile, RealFs, TableLocation, WritableFile, direct};
use crate::db::filename::{self, FileKind};
use crate::error::{Error, Result};

/// The name, under the prefix, of the object written at construction to
/// check that the bucket takes writes.
pub const PROBE_OBJECT: &str = "bloomlsm-probe";

/// What is known of an object without asking the bucket.
#[derive(Clone, Debug)]
struct Known {
    size: u64,
    e_tag: Option<String>,
}

/// The state the file system, its readers and its writers share.
#[derive(Debug)]
struct Shared {
    config: BucketConfig,
    endpoint: String,
    client: Client,
    cache: DiskCache,
    /// `config.dir`, absolute.
    root: PathBuf,
    /// The key prefix's segments.
    prefix: Vec<String>,
    /// Where tables being written are staged.
    staging: PathBuf,
    staging_seq: AtomicU64,
    /// Sizes and ETags of objects, by key, learned from uploads, listings
    /// and HEADs. Tables are immutable, so an entry stays true until the
    /// store deletes the table.
    known: Mutex<HashMap<String, Known>>,
    /// Tables created here and not uploaded: removing one needs no
    /// request.
    staged: Mutex<HashSet<String>>,
    /// A whole store's journal ([`BucketConfig::whole_store`]).
    journal: Option<Journal>,
    /// A whole store's kept checkpoints.
    checkpoints: Option<checkpoints::Checkpoints>,
    /// A whole store's logs and MANIFESTs open for appending.
    tails: Mutex<Vec<std::sync::Weak<Tail>>>,
    /// A whole store's `CURRENT.tmp` and `OPTIONS.tmp`, by path, until
    /// renamed into place.
    staged_whole: Mutex<HashMap<String, Bytes>>,
    /// Tables this handle uploaded (a whole store's writer deletes any
    /// other only after checking that it still holds the store).
    made: Mutex<HashSet<String>>,
    /// A whole store's tables to delete, each once its time comes
    /// ([`BucketConfig::delete_grace`]).
    doomed: Mutex<std::collections::VecDeque<(ObjectPath, std::time::Instant)>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// The disk cache's name for `key` as `known` describes it (see the
    /// `cache` module: a rewritten object is another object).
    fn object_id(&self, key: &ObjectPath, known: &Known) -> u128 {
        let tag = known
            .e_tag
            .as_deref()
            .map(|t| t.trim_start_matches("W/").trim_matches('"').to_string())
            .unwrap_or_else(|| format!("size {}", known.size));
        let id = format!(
            "{}\0{}\0{}\0{}",
            self.endpoint, self.config.bucket, key, tag
        );
        xxh3_128(id.as_bytes())
    }

    /// `key` is being uploaded: from now on removing it takes a DELETE,
    /// even if the upload fails (a PUT the client gave up on may still
    /// have been stored).
    fn uploading(&self, key: &ObjectPath) {
        lock(&self.staged).remove(key.as_ref());
        if self.journal.is_some() {
            lock(&self.made).insert(key.to_string());
        }
    }

    /// Drops what is known and cached of `key`.
    fn forget(&self, key: &ObjectPath) {
        if let Some(k) = lock(&self.known).remove(key.as_ref()) {
            self.cache.forget(self.object_id(key, &k));
        }
    }

    /// Deletes the doomed tables whose time has come (all of them with
    /// `all`), but those a kept checkpoint names (one LIST of the
    /// checkpoints first; when it fails, they wait for the next round). A
    /// failed DELETE leaves the object for the next open, which finds it
    /// named by no MANIFEST.
    fn delete_doomed(&self, all: bool) {
        let now = std::time::Instant::now();
        let due: Vec<ObjectPath> = {
            let mut d = lock(&self.doomed);
            let n = d.iter().take_while(|(_, due)| all || *due <= now).count();
            d.drain(..n).map(|(k, _)| k).collect()
        };
        if due.is_empty() {
            return;
        }
        let pinned = match self.pinned() {
            Ok(p) => p,
            Err(_) => {
                let mut d = lock(&self.doomed);
                for k in due.into_iter().rev() {
                    d.push_front((k, now));
                }
                return;
            }
        };
        for key in due {
            self.forget(&key);
            if !pinned.contains(key.as_ref()) {
                let _ = self.client.delete(&key);
            }
        }
    }

    /// The object keys of the tables kept checkpoints name (none for a
    /// store with no checkpoints beside it).
    fn pinned(&self) -> io::Result<HashSet<String>> {
        match &self.checkpoints {
            Some(c) => c.pinned(&self.client),
            None => Ok(HashSet::new()),
        }
    }

    /// The journal of a whole store; only called where one is.
    fn journal(&self) -> &Journal {
        self.journal
            .as_ref()
            .expect("a journal file of a store kept wholly in the bucket")
    }

    /// The path, relative to the store's directory, of `path` if it is a
    /// file a whole store keeps in its journal: a log, MANIFEST, `CURRENT`,
    /// `OPTIONS` or their `.tmp`, in the store's directory or a keyspace's.
    fn journal_path(&self, path: &Path) -> Option<(String, FileKind)> {
        self.journal.as_ref()?;
        let name = path.file_name()?.to_str()?;
        let (kind, _) = filename::parse_file_name(name)?;
        use FileKind::*;
        if !matches!(
            kind,
            Log | Manifest | Current | CurrentTmp | Options | OptionsTmp
        ) {
            return None;
        }
        let dir = self.journal_dir(path.parent()?)?;
        Some((
            if dir.is_empty() {
                name.to_string()
            } else {
                format!("{dir}/{name}")
            },
            kind,
        ))
    }

    /// `""` for the store's directory, `keyspace-NNNNNN` for a keyspace's,
    /// of a whole store; `None` for any other directory.
    fn journal_dir(&self, dir: &Path) -> Option<String> {
        self.journal.as_ref()?;
        let abs = std::path::absolute(dir).ok()?;
        let rel = abs.strip_prefix(&self.root).ok()?;
        let mut parts = rel.components().filter(|c| !matches!(c, Component::CurDir));
        match (parts.next(), parts.next()) {
            (None, _) => Some(String::new()),
            (Some(Component::Normal(d)), None) => {
                let d = d.to_str()?;
                filename::parse_keyspace_dir(d).map(|_| d.to_string())
            }
            _ => None,
        }
    }

    fn uploaded(&self, key: &ObjectPath, known: Known) {
        lock(&self.known).insert(key.to_string(), known);
    }

    /// The object key of directory `dir`'s entries, if `dir` is the store's
    /// directory or below it.
    fn dir_key(&self, dir: &Path) -> Option<ObjectPath> {
        let abs = std::path::absolute(dir).ok()?;
        let rel = abs.strip_prefix(&self.root).ok()?;
        let mut parts = self.prefix.clone();
        for c in rel.components() {
            match c {
                Component::Normal(s) => parts.push(s.to_str()?.to_string()),
                Component::CurDir => {}
                _ => return None,
            }
        }
        Some(ObjectPath::from_iter(parts))
    }

    /// The object key of `path` if it is a table file in the store's
    /// directory or below it; `None` for every file that stays local.
    fn table_key(&self, path: &Path) -> Option<ObjectPath> {
        let name = path.file_name()?.to_str()?;
        if !matches!(filename::parse_file_name(name), Some((FileKind::Table, _))) {
            return None;
        }
        let dir = self.dir_key(path.parent()?)?;
        Some(dir.clone().join(name))
    }

    /// Size and ETag of `key`: known, or one HEAD.
    fn known(&self, key: &ObjectPath) -> io::Result<Known> {
        if let Some(k) = lock(&self.known).get(key.as_ref()) {
            return Ok(k.clone());
        }
        let meta = self.client.head(key)?;
        let k = Known {
            size: meta.size,
            e_tag: meta.e_tag,
        };
        lock(&self.known).insert(key.to_string(), k.clone());
        Ok(k)
    }
}

/// Table files in a bucket, everything else on the local disk; see the
/// module docs. Give it to the store as [`crate::Options::fs`].
#[derive(Debug)]
pub struct BucketFs {
    shared: Arc<Shared>,
    /// Held while this file system is alive: one process at a time uses a
    /// cache directory.
    _cache_lock: Box<dyn FileLock>,
    /// A cache directory of this handle's own, removed when it is dropped
    /// (a reader beside a writer that holds the recorded one).
    scratch: Option<PathBuf>,
    /// A whole store's thread writing its logs' gathered bytes.
    _flusher: Option<Flusher>,
}

impl Drop for BucketFs {
    fn drop(&mut self) {
        if let Some(d) = &self.scratch {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

impl BucketFs {
    /// Connects to the bucket `config` names and checks, with one PUT of
    /// the small object [`PROBE_OBJECT`] under the prefix, that it is
    /// reachable and takes writes with these credentials. Fails with one
    /// line naming the endpoint and the bucket (unreachable endpoint,
    /// wrong credentials, missing bucket), before anything local is
    /// created. Before that PUT, one GET of the prefix's [`STORE_OBJECT`]
    /// checks that it is this store's (a prefix without one is listed, in
    /// one LIST): empty, holding the [`STORE_OBJECT`] that names
    /// [`BucketConfig::dir`], or holding only the tables of the store in
    /// that directory; a prefix holding another store's objects or any
    /// other object is refused, writing nothing, unless
    /// [`BucketConfig::create_among_other_objects`] asks for it. A prefix
    /// taken anew gets its [`STORE_OBJECT`]. Then opens the disk cache in
    /// [`BucketConfig::cache_dir`], keeping the chunks a previous process
    /// left there.
    pub fn open(config: BucketConfig) -> Result<BucketFs> {
        let client = Client::new(&config)?;
        Self::with_client(config, client)
    }

    /// [`BucketFs::open`] as a shared handle, for [`crate::Options::fs`].
    pub fn shared(config: BucketConfig) -> Result<Arc<dyn FileSystem>> {
        Ok(Arc::new(Self::open(config)?))
    }

    /// The file system of the store in `dir` whose `OPTIONS` file records
    /// that its tables are at `loc` (what [`crate::Db::open`] makes when
    /// given the default file system): [`BucketFs::open`] of that bucket,
    /// prefix, endpoint, region and cache, credentials and anything
    /// unrecorded from the environment. For a reader (`read_only`) whose
    /// recorded cache another process holds (the store's writer), a cache
    /// of its own in the temporary directory, of no size (each read one
    /// GET), removed when the file system is dropped.
    pub fn for_location(
        dir: &Path,
        loc: &TableLocation,
        read_only: bool,
    ) -> Result<Arc<dyn FileSystem>> {
        let mut config = BucketConfig::new(dir, loc.bucket.clone(), loc.cache_dir.clone())
            .prefix(loc.prefix.clone())
            .cache_bytes(loc.cache_bytes)
            .chunk_bytes(loc.chunk_bytes);
        config.endpoint = loc.endpoint.clone();
        config.region = loc.region.clone();
        let held = || matches!(RealFs.lock(&loc.cache_dir.join("LOCK")), Ok(None));
        if !(read_only && held()) {
            return Self::shared(config);
        }
        static SCRATCH: AtomicU64 = AtomicU64::new(0);
        let scratch = std::env::temp_dir().join(format!(
            "bloomlsm-reader-cache-{}-{}",
            std::process::id(),
            SCRATCH.fetch_add(1, Ordering::Relaxed)
        ));
        config.cache_dir = scratch.clone();
        config.cache_bytes = 0;
        let mut fs = Self::open(config).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&scratch);
        })?;
        fs.scratch = Some(scratch);
        Ok(Arc::new(fs))
    }

    /// A reader of the store kept wholly in `config`'s bucket and prefix
    /// ([`BucketConfig::whole_store`], set here), from any machine: its
    /// local directory and a disk cache of no size (each block read one
    /// GET) in a fresh temporary directory, removed when the file system
    /// is dropped. Returns the file system and the directory to give
    /// [`crate::Db::open_read_only`] with it. Makes no write to the bucket.
    ///
    /// ```no_run
    /// use bloomlsm::fs::bucket::{BucketConfig, BucketFs};
    /// use bloomlsm::{Db, Options};
    ///
    /// let config = BucketConfig::new("", "my-bucket", "").prefix("stores/app/");
    /// let (fs, dir) = BucketFs::whole_store_reader(config)?;
    /// let db = Db::open_read_only(&dir, Options::default().fs(fs))?;
    /// println!("{:?}", db.get("k")?);
    /// # Ok::<(), bloomlsm::Error>(())
    /// ```
    pub fn whole_store_reader(mut config: BucketConfig) -> Result<(Arc<BucketFs>, PathBuf)> {
        static SCRATCH: AtomicU64 = AtomicU64::new(0);
        let scratch = std::env::temp_dir().join(format!(
            "bloomlsm-bucket-reader-{}-{}",
            std::process::id(),
            SCRATCH.fetch_add(1, Ordering::Relaxed)
        ));
        let dir = scratch.join("store");
        config.dir = dir.clone();
        config.cache_dir = scratch.join("cache");
        config.cache_bytes = 0;
        config.whole_store = true;
        let mut fs = Self::open(config).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&scratch);
        })?;
        fs.scratch = Some(scratch);
        Ok((Arc::new(fs), dir))
    }

    /// [`BucketFs::open`] with `store` as the bucket (tests give
    /// `object_store::memory::InMemory`).
    #[cfg(test)]
    fn with_store(config: BucketConfig, store: Arc<dyn ObjectStore>) -> Result<BucketFs> {
        Self::with_client(config, Client::with_store(store)?)
    }

    fn with_client(mut config: BucketConfig, client: Client) -> Result<BucketFs> {
        config.cache_dir = std::path::absolute(&config.cache_dir)
            .map_err(|e| Error::io(format!("resolve {}", config.cache_dir.display()), e))?;
        check_recordable(&config)?;
        let endpoint = config.endpoint_name();
        let prefix: Vec<String> = config
            .prefix
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let root = std::path::absolute(&config.dir)
            .map_err(|e| Error::io(format!("resolve {}", config.dir.display()), e))?;
        let dir_key = ObjectPath::from_iter(prefix.iter().map(String::as_str));
        let take_prefix = marker::check(&client, &config, &endpoint, &dir_key, &root)?;
        let at_open = |e| {
            Error::io(
                format!(
                    "bucket {} at {endpoint}: the check made at open",
                    config.bucket
                ),
                e,
            )
        };
        // A whole store writes nothing until its writer takes it
        // (`take_writer`, whose fence is the check that the bucket takes
        // writes): a reader needs only read access.
        if !config.whole_store {
            client
                .put(
                    &dir_key.clone().join(PROBE_OBJECT),
                    Bytes::from_static(b"bloomlsm"),
                )
                .map_err(at_open)?;
        }
        if take_prefix && !config.whole_store {
            client
                .put(
                    &dir_key.clone().join(STORE_OBJECT),
                    marker::contents_for(&config, &root),
                )
                .map_err(at_open)?;
        }
        let local = |what: &str, p: &Path, e| Error::io(format!("{what} {}", p.display()), e);
        std::fs::create_dir_all(&config.cache_dir)
            .map_err(|e| local("create", &config.cache_dir, e))?;
        let lock_path = config.cache_dir.join("LOCK");
        let cache_lock = match RealFs.lock(&lock_path) {
            Ok(Some(l)) => l,
            Ok(None) => {
                return Err(Error::invalid(format!(
                    "the bucket cache {} is in use by another store",
                    config.cache_dir.display()
                )));
            }
            Err(e) => return Err(local("lock", &lock_path, e)),
        };
        let staging = config.cache_dir.join("staging");
        // Tables a stopped process was writing: none was synced, or its
        // object is in the bucket.
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging).map_err(|e| local("create", &staging, e))?;
        let chunks = config.cache_dir.join("chunks");
        let cache = DiskCache::open(&chunks, config.cache_bytes)
            .map_err(|e| local("open the bucket cache", &chunks, e))?;
        let journal = config
            .whole_store
            .then(|| Journal::new(&dir_key, root.clone(), take_prefix));
        let checkpoints = config
            .whole_store
            .then(|| checkpoints::Checkpoints::new(&dir_key));
        let shared = Arc::new(Shared {
            endpoint,
            client,
            cache,
            root,
            prefix,
            staging,
            staging_seq: AtomicU64::new(0),
            known: Mutex::new(HashMap::new()),
            staged: Mutex::new(HashSet::new()),
            journal,
            checkpoints,
            tails: Mutex::default(),
            staged_whole: Mutex::default(),
            made: Mutex::default(),
            doomed: Mutex::default(),
            config,
        });
        let flusher = match shared.journal {
            Some(_) => Some(
                Flusher::start(&shared, shared.config.log_flush_interval)
                    .map_err(|e| Error::io("start the journal's flush thread", e))?,
            ),
            None => None,
        };
        Ok(BucketFs {
            shared,
            _cache_lock: cache_lock,
            scratch: None,
            _flusher: flusher,
        })
    }

    /// For a store kept wholly in the bucket, the number of the fence
    /// this handle wrote when it took the store ([`FileSystem::take_writer`]):
    /// its writer epoch, above every older writer's.
    pub fn writer_epoch(&self) -> Option<u64> {
        self.shared.journal.as_ref().and_then(Journal::epoch)
    }

    /// The requests made and the disk cache's work so far.
    pub fn counters(&self) -> BucketCounters {
        self.shared
            .client
            .counters
            .snapshot(self.shared.cache.bytes())
    }

    /// The configuration it was opened with.
    pub fn config(&self) -> &BucketConfig {
        &self.shared.config
    }

    /// The object key of the file at `path`, if it is a table kept in the
    /// bucket; `None` for a file kept on the local disk.
    pub fn object_key(&self, path: &Path) -> Option<String> {
        self.shared.table_key(path).map(|k| k.to_string())
    }

    fn create_table(&self, key: ObjectPath, truncate: bool) -> io::Result<Box<dyn WritableFile>> {
        let sh = &self.shared;
        let n = sh.staging_seq.fetch_add(1, Ordering::Relaxed);
        let staging = sh.staging.join(format!("{n}.sst"));
        let file = OpenOptions::new()
            .write(true)
            .read(true)
            .create(true)
            .truncate(truncate)
            .open(&staging)?;
        lock(&sh.staged).insert(key.to_string());
        Ok(Box::new(BucketWritable {
            shared: sh.clone(),
            key,
            staging,
            file,
            written: 0,
        }))
    }

    /// Drops what is known and cached of `key`.
    fn forget(&self, key: &ObjectPath) {
        self.shared.forget(key);
    }
}

/// Refuses a configuration the store's `OPTIONS` file could not record
/// (its lines are UTF-8 text, one setting each).
fn check_recordable(config: &BucketConfig) -> Result<()> {
    let cache_dir = config.cache_dir.to_str();
    for (what, v) in [
        ("bucket", Some(config.bucket.as_str())),
        ("prefix", Some(config.prefix.as_str())),
        ("endpoint", config.endpoint.as_deref().or(Some(""))),
        ("region", config.region.as_deref().or(Some(""))),
        ("cache_dir", cache_dir),
    ] {
        if v.is_none_or(|v| v.contains(['\n', '\r'])) {
            return Err(Error::invalid(format!(
                "BucketConfig::{what} {:?} must be UTF-8 without line breaks: the store's \
                 OPTIONS file records it",
                v.map_or_else(|| config.cache_dir.display().to_string(), str::to_string)
            )));
        }
    }
    if config.bucket.is_empty() {
        return Err(Error::invalid("BucketConfig::bucket is empty".to_string()));
    }
    Ok(())
}

fn unsupported(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, what)
}

impl FileSystem for BucketFs {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        if let Some((rel, kind)) = self.shared.journal_path(path) {
            return self.create_journal_file(rel, kind, false);
        }
        match self.shared.table_key(path) {
            Some(key) => self.create_table(key, false),
            None => RealFs.create_new(path),
        }
    }

    fn create_new_direct(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        if let Some((rel, kind)) = self.shared.journal_path(path) {
            return self.create_journal_file(rel, kind, false);
        }
        match self.shared.table_key(path) {
            Some(key) => self.create_table(key, false),
            None => RealFs.create_new_direct(path),
        }
    }

    fn create_truncate(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        if let Some((rel, kind)) = self.shared.journal_path(path) {
            return self.create_journal_file(rel, kind, true);
        }
        match self.shared.table_key(path) {
            Some(key) => self.create_table(key, true),
            None => RealFs.create_truncate(path),
        }
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        if let Some((rel, _)) = self.shared.journal_path(path) {
            return Ok(Arc::new(MemReadable(self.read_journal_file(&rel)?)));
        }
        let Some(key) = self.shared.table_key(path) else {
            return RealFs.open_read(path);
        };
        // A clone reads a linked table under its source's prefix.
        let key = self.shared.linked(&key)?.unwrap_or(key);
        let known = self.shared.known(&key)?;
        Ok(Arc::new(BucketReadable {
            object: self.shared.object_id(&key, &known),
            size: known.size,
            shared: self.shared.clone(),
            key,
            sequence: Default::default(),
        }))
    }

    fn open_read_direct(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        if self.shared.journal_path(path).is_some() {
            return Err(unsupported(format!(
                "{} (a file in the store's journal)",
                direct::REFUSED
            )));
        }
        if self.shared.table_key(path).is_some() {
            return Err(unsupported(format!(
                "{} (a table in a bucket)",
                direct::REFUSED
            )));
        }
        RealFs.open_read_direct(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let sh = &self.shared;
        match (sh.journal_path(from), sh.journal_path(to)) {
            (None, None) => {}
            (Some((f, FileKind::CurrentTmp | FileKind::OptionsTmp)), Some((t, _))) => {
                let data = lock(&sh.staged_whole).remove(&f).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::NotFound, format!("{f} was not written"))
                })?;
                return sh.journal().replace(&sh.client, &t, data);
            }
            _ => {
                return Err(unsupported(format!(
                    "rename {} to {}: a file in the store's journal is renamed only from its \
                     .tmp",
                    from.display(),
                    to.display()
                )));
            }
        }
        match (sh.table_key(from), sh.table_key(to)) {
            (Some(f), Some(t)) => {
                let known = sh.known(&f)?;
                sh.client.copy(&f, &t)?;
                lock(&sh.known).insert(t.to_string(), known);
                self.forget(&f);
                sh.client.delete(&f)
            }
            (None, None) => match sh.dir_key(from) {
                Some(old) if std::fs::metadata(from).is_ok_and(|m| m.is_dir()) => {
                    self.rename_dir(from, to, old)
                }
                _ => RealFs.rename(from, to),
            },
            _ => Err(unsupported(format!(
                "rename {} to {}: one is a table in the bucket, the other a local file",
                from.display(),
                to.display()
            ))),
        }
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let sh = &self.shared;
        if let Some((rel, kind)) = sh.journal_path(path) {
            if matches!(kind, FileKind::CurrentTmp | FileKind::OptionsTmp) {
                return match lock(&sh.staged_whole).remove(&rel) {
                    Some(_) => Ok(()),
                    None => Err(io::Error::new(io::ErrorKind::NotFound, rel)),
                };
            }
            return sh.journal().remove(&sh.client, &rel);
        }
        let Some(key) = self.shared.table_key(path) else {
            return RealFs.remove_file(path);
        };
        if lock(&self.shared.staged).remove(key.as_ref()) {
            // Created here and never uploaded: nothing in the bucket.
            return Ok(());
        }
        if let Some(source) = sh.linked(&key)? {
            // A clone never deletes its source's objects.
            self.forget(&source);
            return Ok(());
        }
        if sh.journal.is_some() {
            if !lock(&sh.made).contains(key.as_ref()) {
                // A table this handle did not write may have been listed
                // before a newer writer took the store and wrote it.
                sh.journal().confirm(&sh.client)?;
            }
            if !sh.config.delete_grace.is_zero() {
                // Readers elsewhere may still read it.
                let due = std::time::Instant::now() + sh.config.delete_grace;
                lock(&sh.doomed).push_back((key, due));
                return Ok(());
            }
            if sh.pinned()?.contains(key.as_ref()) {
                // A kept checkpoint still names it.
                self.forget(&key);
                return Ok(());
            }
        }
        self.forget(&key);
        self.shared.client.delete(&key)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        // Bucket operations are durable when they return; a whole store's
        // local directory holds nothing durable.
        match RealFs.sync_dir(dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && self.shared.journal.is_some() => {
                Ok(())
            }
            r => r,
        }
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        let sh = &self.shared;
        let journal_dir = sh.journal_dir(dir);
        if journal_dir.is_some() {
            // A whole store's local directories hold only locks and
            // caches: made again wherever the store is opened.
            RealFs.create_dir_all(dir)?;
        }
        let mut names = RealFs.list_dir(dir)?;
        if let Some(jd) = &journal_dir {
            let linked = sh.linked_in(jd)?;
            for n in sh
                .journal()
                .names_in(&sh.client, jd)?
                .into_iter()
                .chain(linked)
            {
                let n = OsString::from(n);
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        let Some(key) = self.shared.dir_key(dir) else {
            return Ok(names);
        };
        let objects = self.shared.client.list(&key)?;
        let mut known = lock(&self.shared.known);
        for m in objects {
            let Some(name) = m.location.filename() else {
                continue;
            };
            if !matches!(filename::parse_file_name(name), Some((FileKind::Table, _))) {
                continue;
            }
            let name = OsString::from(name);
            if !names.contains(&name) {
                names.push(name);
            }
            known.insert(
                m.location.to_string(),
                Known {
                    size: m.size,
                    e_tag: m.e_tag,
                },
            );
        }
        Ok(names)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        if let Some((rel, _)) = self.shared.journal_path(path) {
            if let Some(b) = lock(&self.shared.staged_whole).get(&rel) {
                return Ok(b.len() as u64);
            }
            self.shared.flush_tail(&rel)?;
            return self.shared.journal().len(&self.shared.client, &rel);
        }
        match self.shared.table_key(path) {
            Some(key) => {
                let key = self.shared.linked(&key)?.unwrap_or(key);
                Ok(self.shared.known(&key)?.size)
            }
            None => RealFs.file_len(path),
        }
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        RealFs.create_dir_all(dir)
    }

    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn FileLock>>> {
        RealFs.lock(path)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let sh = &self.shared;
        match (sh.table_key(from), sh.table_key(to)) {
            (Some(f), Some(t)) => sh.client.copy(&f, &t),
            (None, None) => RealFs.hard_link(from, to),
            // The checkpoint of a store in a bucket into a directory
            // outside it copies the bytes: a store on the local disk.
            _ => Err(unsupported(format!(
                "no link from {} to {}: one is a table in the bucket, the other a local file",
                from.display(),
                to.display()
            ))),
        }
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        match RealFs.remove_dir(dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && self.shared.journal.is_some() => {
                Ok(())
            }
            r => r,
        }
    }

    fn refresh(&self) {
        if let Some(j) = &self.shared.journal {
            j.forget();
        }
    }

    fn take_writer(&self, dir: &Path) -> io::Result<()> {
        let sh = &self.shared;
        match (&sh.journal, sh.journal_dir(dir)) {
            (Some(j), Some(d)) if d.is_empty() => {
                let marker = marker::contents_for(&sh.config, &sh.root);
                j.take_writer(&sh.client, marker)
            }
            _ => Ok(()),
        }
    }

    fn remote_reads(&self) -> bool {
        true
    }

    fn keeps_local_files(&self, dir: &Path) -> bool {
        self.shared.journal_dir(dir).is_none()
    }

    fn put_checkpoint(
        &self,
        dir: &Path,
        name: &str,
        checkpoint: &KeptCheckpoint,
    ) -> io::Result<()> {
        let sh = &self.shared;
        let cps = self.checkpoints_of(dir)?;
        crate::fs::kept::check_name(name)?;
        let mut checkpoint = checkpoint.clone();
        match sh.journal().read(&sh.client, journal::LINKS_FILE) {
            // A clone's checkpoint reads its linked tables where it does.
            Ok(links) => checkpoint
                .files
                .push((journal::LINKS_FILE.to_string(), links)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        cps.put(&sh.client, name, &checkpoint)?;
        if sh.journal().epoch().is_some()
            && let Err(e) = sh.journal().confirm(&sh.client)
        {
            // Fenced: a newer writer may not have seen the checkpoint
            // before it deleted a table it names.
            let _ = cps.delete(&sh.client, name);
            return Err(e);
        }
        Ok(())
    }

    fn list_checkpoints(&self, dir: &Path) -> io::Result<Vec<CheckpointInfo>> {
        self.checkpoints_of(dir)?.infos(&self.shared.client)
    }

    fn delete_checkpoint(&self, dir: &Path, name: &str) -> io::Result<()> {
        crate::fs::kept::check_name(name)?;
        self.checkpoints_of(dir)?.delete(&self.shared.client, name)
    }

    fn table_location(&self, dir: &Path) -> Option<TableLocation> {
        let key = self.shared.dir_key(dir)?;
        let c = &self.shared.config;
        Some(TableLocation {
            bucket: c.bucket.clone(),
            prefix: key.parts().map(|p| format!("{}/", p.as_ref())).collect(),
            endpoint: c.endpoint.clone(),
            region: c.region.clone(),
            cache_dir: c.cache_dir.clone(),
            cache_bytes: c.cache_bytes,
            chunk_bytes: c.chunk_bytes,
        })
    }
}

#[cfg(test)]
mod tests;
