//! The store: [`Db`] ties together the write-ahead log, memtables, SSTables,
//! the manifest and background compaction. See `docs/design.md` for the read,
//! write and compaction paths and the durability promises.

mod arena;
#[cfg(test)]
mod background_tests;
pub mod batch;
pub(crate) mod compaction;
#[cfg(test)]
mod fault_tests;
pub mod filename;
mod ingest;
mod inject;
mod io_pool;
pub(crate) mod iter;
pub mod log;
pub mod manifest;
pub(crate) mod memtable;
pub(crate) mod merge;
pub mod options_file;
mod recovery;
mod refilter;
mod skiplist;
mod snapshot;
mod table_files;
pub(crate) mod version;
pub(crate) mod version_set;
pub mod wal;

pub use batch::{BatchOp, WriteBatch};
pub use filename::FileKind;
pub use ingest::IngestReport;
pub use iter::DbIter;
pub use log::{LogReader, LogWriter, Skipped, TailDropped};
pub use manifest::{FileMeta, FilterMeta, Manifest, RecoverReport, RecoveredState, VersionEdit};
pub use snapshot::Snapshot;
pub use wal::{ReplayReport, Wal};

use memtable::{LookupResult, MemTable};

use std::collections::{HashMap, VecDeque};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::filter::key_hash;
use crate::fs::{FileLock, FileSystem};
use crate::key::{self, ValueKind};
use crate::options::{Options, ReadMode};
use crate::sst::BlockCache;
use crate::stats::{AtomicIo, FileStats, GetCounters, IoCounters, LevelStats, LevelWrites, Stats};
use compaction::{Compaction, FileNumbers, OutputSize, Retention};
use iter::View;
use snapshot::SnapshotList;
use table_files::{NewTable, TableFiles, create_table};
use version::{FileHandle, Run, Slot, Version};
use version_set::VersionSet;

/// Largest accepted key, in bytes (64 KiB).
pub const MAX_KEY_LEN: usize = 64 << 10;
/// Largest accepted value, in bytes (32 MiB).
pub const MAX_VALUE_LEN: usize = 32 << 20;
/// Frozen memtables allowed to wait for a flush before writes stall.
const MAX_IMMUTABLE: usize = 2;

/// An open store. `Send + Sync`: share it between threads with `Arc` (or
/// scoped threads); reads never wait for flushes or compactions.
pub struct Db {
    inner: Arc<Inner>,
    /// The flush thread and, with `background_compaction`, the compaction
    /// thread (none when open read-only).
    bg: Mutex<Vec<JoinHandle<()>>>,
    /// The directory lock (`None` when open read-only), released by
    /// [`Db::close`]: snapshots and iterators may keep `inner` alive longer.
    lock: Mutex<Option<Box<dyn FileLock>>>,
}

/// The work of a background thread.
#[derive(Clone, Copy)]
enum Job {
    /// Flushes frozen memtables, oldest first.
    Flush,
    /// Runs due compactions (only with `background_compaction`).
    Compaction,
}

/// What readers see: the memtables and the file set, swapped atomically.
struct SuperVersion {
    mem: Arc<MemTable>,
    /// Frozen memtables, newest first.
    imm: Vec<Arc<MemTable>>,
    version: Arc<Version>,
}

struct Inner {
    dir: PathBuf,
    opts: Options,
    cache: Option<Arc<BlockCache>>,
    /// Writers waiting for their group to be written (group commit).
    write_queue: Mutex<WriteQueue>,
    /// Signalled when a group is written: its writers' results are ready
    /// and the next writer may lead.
    write_done: Condvar,
    /// Serializes writers; holds the WAL.
    writer: Mutex<Writer>,
    state: Mutex<State>,
    /// Signalled when background work may be due, or done.
    cv: Condvar,
    sv: RwLock<Arc<SuperVersion>>,
    last_seq: AtomicU64,
    /// Held by whoever runs a flush. Flushes and compactions run at once
    /// (RocksDB's flush and compaction pools): a flush only adds an L0 file
    /// newer than any compaction input, and a compaction only removes its
    /// own inputs, so each edit applies to whatever version is current.
    flush_work: Mutex<()>,
    /// Held by whoever runs a compaction (one at a time: they pick from the
    /// current version and do not track each other's inputs).
    compact_work: Mutex<()>,
    gets: GetCounters,
    /// Counts of files that compactions removed, per level they left.
    retired_io: Vec<AtomicIo>,
    /// What flushes and compactions wrote into each level since open
    /// (added to once per job: a lock is simpler than a set of atomics).
    level_writes: Mutex<Vec<LevelWrites>>,
    flushes: AtomicU64,
    compactions: AtomicU64,
    /// Files rewritten with the filter their level gets now (`refilter`).
    filter_rebuilds: AtomicU64,
    /// Keys + values of the ops acknowledged by `Db::write` since open.
    user_bytes_written: AtomicU64,
    /// Table bytes written by flushes since open (not by recovery).
    bytes_flushed: AtomicU64,
    /// Table bytes written by compactions since open.
    bytes_compacted: AtomicU64,
    slowdowns: AtomicU64,
    stalls: AtomicU64,
    wal_tail_dropped: u64,
    wal_salvaged: u64,
    /// Set by `close`; iterators and snapshots hold it too.
    closed: Arc<AtomicBool>,
    /// Live snapshots: the versions flushes and compactions keep.
    snapshots: SnapshotList,
    /// Table files created ahead for compactions, and their clean-up run
    /// behind them, on the files thread (with `background_compaction`).
    table_files: Arc<TableFiles>,
}

struct Writer {
    /// `None` when open read-only.
    wal: Option<Wal>,
    mem: Arc<MemTable>,
}

/// The writer queue: batches in arrival order, each under a ticket, and the
/// results of the groups written, by ticket, until their writers take them.
#[derive(Default)]
struct WriteQueue {
    next_ticket: u64,
    /// `None` once a leader has taken the batch into its group.
    waiting: VecDeque<(u64, Option<WriteBatch>)>,
    done: HashMap<u64, Result<()>>,
}

/// A group's leader takes followers' batches until the group would pass this
/// many bytes past a small first batch, or `GROUP_MAX_BYTES` in all
/// (LevelDB's 128 KiB and 1 MiB): a small write is not delayed by a large
/// group.
const GROUP_SMALL_BATCH: usize = 128 << 10;
const GROUP_MAX_BYTES: usize = 1 << 20;

struct State {
    /// Frozen memtables awaiting flush, oldest first, with their WAL numbers.
    imm: Vec<(Arc<MemTable>, u64)>,
    /// The file set, the MANIFEST and the file numbers.
    vs: VersionSet,
    /// WAL of the active memtable.
    wal_number: u64,
    /// The first fatal error (an [`Error::Poisoned`]): writes, flushes and
    /// compactions fail with it afterwards.
    bg_error: Option<Error>,
    shutting_down: bool,
}

impl FileNumbers for Inner {
    fn next_file_number(&self) -> Result<u64> {
        let seq = self.last_seq.load(Ordering::Acquire);
        self.state().vs.new_file_number(seq)
    }

    fn new_table(&self, dir: &Path, fs: &dyn FileSystem) -> Result<NewTable> {
        match self.table_files.take() {
            Some(t) => Ok(t),
            None => create_table(fs, dir, self.next_file_number()?),
        }
    }
}

impl Db {
    /// Opens (or creates) the store in `path`: takes the directory lock,
    /// replays the manifest and the write-ahead logs, flushes what the logs
    /// held into L0 files, and deletes files no manifest needs.
    ///
    /// ```
    /// use bloomlsm::{Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put("apple", "red")?;
    /// db.close()?;
    /// // Reopening recovers what was written.
    /// let db = Db::open(dir.path(), Options::default())?;
    /// assert_eq!(db.get("apple")?, Some(bloomlsm::Bytes::from("red")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>, mut opts: Options) -> Result<Db> {
        check_options(&opts)?;
        let dir = path.as_ref().to_path_buf();
        let fs = opts.fs.clone();
        if fs.list_dir(&dir).is_err() {
            if !opts.create_if_missing {
                return Err(Error::invalid(format!("{} does not exist", dir.display())));
            }
            fs.create_dir_all(&dir)
                .map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
        }
        let lock_path = filename::lock_file(&dir);
        let lock = match fs.lock(&lock_path) {
            Ok(Some(lock)) => lock,
            Ok(None) => return Err(Error::Locked(dir)),
            Err(e) => return Err(Error::io(format!("lock {}", lock_path.display()), e)),
        };
        let design = options_file::settle(fs.as_ref(), &dir, &mut opts)?;
        check_options(&opts)?;
        opts.read_mode = settle_read_mode(&dir, &opts)?;
        let new_store = fs.file_len(&filename::current_file(&dir)).is_err();
        let cache = (opts.block_cache_capacity > 0)
            .then(|| Arc::new(BlockCache::new(opts.block_cache_capacity)));

        let rec = recovery::recover(&dir, &opts, cache.clone())?;
        design.record(fs.as_ref(), &dir, &opts, new_store)?;
        Db::start(dir, opts, cache, Some(lock), rec)
    }

    /// Opens the store in `path` for reading only: without the lock (a
    /// writer may have the store open, and the directory may be read-only)
    /// and without creating, writing, renaming or deleting any file. The
    /// write-ahead logs are replayed into memory. Writes, flushes and
    /// compactions fail with [`Error::ReadOnly`]; the view is the store as it
    /// was when opened.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put("k", "v")?;
    /// // Beside the open writer:
    /// let reader = bloomlsm::Db::open_read_only(dir.path(), bloomlsm::Options::default())?;
    /// assert_eq!(reader.get("k")?.as_deref(), Some(&b"v"[..]));
    /// assert!(matches!(reader.put("k", "w"), Err(bloomlsm::Error::ReadOnly)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_read_only(path: impl AsRef<Path>, mut opts: Options) -> Result<Db> {
        let dir = path.as_ref().to_path_buf();
        options_file::settle(opts.fs.clone().as_ref(), &dir, &mut opts)?;
        check_options(&opts)?;
        opts.read_mode = settle_read_mode(&dir, &opts)?;
        let cache = (opts.block_cache_capacity > 0)
            .then(|| Arc::new(BlockCache::new(opts.block_cache_capacity)));
        let rec = recovery::recover_read_only(&dir, &opts, cache.clone())?;
        Db::start(dir, opts, cache, None, rec)
    }

    /// Builds the handle around a recovered store; a writable one (with a
    /// WAL) also gets the flush thread and, with `background_compaction`, the
    /// compaction thread.
    fn start(
        dir: PathBuf,
        opts: Options,
        cache: Option<Arc<BlockCache>>,
        lock: Option<Box<dyn FileLock>>,
        o: recovery::Recovered,
    ) -> Result<Db> {
        let writable = o.wal.is_some();
        let mem = Arc::new(o.mem);
        let version = o.vs.current().clone();
        let levels = opts.max_levels;
        let wal_number = o.wal.as_ref().map_or(0, Wal::number);
        let table_files = Arc::new(TableFiles::new(&dir, opts.fs.clone()));
        let inner = Arc::new(Inner {
            dir,
            cache,
            write_queue: Mutex::new(WriteQueue::default()),
            write_done: Condvar::new(),
            writer: Mutex::new(Writer {
                wal: o.wal,
                mem: mem.clone(),
            }),
            state: Mutex::new(State {
                imm: Vec::new(),
                vs: o.vs,
                wal_number,
                bg_error: None,
                shutting_down: false,
            }),
            cv: Condvar::new(),
            sv: RwLock::new(Arc::new(SuperVersion {
                mem,
                imm: Vec::new(),
                version,
            })),
            last_seq: AtomicU64::new(o.last_sequence),
            flush_work: Mutex::new(()),
            compact_work: Mutex::new(()),
            gets: GetCounters::default(),
            retired_io: (0..levels).map(|_| AtomicIo::default()).collect(),
            level_writes: Mutex::new(vec![LevelWrites::default(); levels]),
            flushes: AtomicU64::new(0),
            compactions: AtomicU64::new(0),
            filter_rebuilds: AtomicU64::new(0),
            user_bytes_written: AtomicU64::new(0),
            bytes_flushed: AtomicU64::new(0),
            bytes_compacted: AtomicU64::new(0),
            slowdowns: AtomicU64::new(0),
            stalls: AtomicU64::new(0),
            wal_tail_dropped: o.wal_tail_dropped,
            wal_salvaged: o.wal_salvaged,
            closed: Arc::new(AtomicBool::new(false)),
            snapshots: SnapshotList::default(),
            table_files,
            opts,
        });
        let mut bg = Vec::new();
        if writable {
            // A panic that escapes a thread's work (each flush and
            // compaction also catches its own, in `Inner::guarded`) poisons
            // the store instead of ending the thread silently.
            let spawn = |name: &'static str, work: fn(&Inner)| {
                let bg_inner = inner.clone();
                std::thread::Builder::new()
                    .name(name.into())
                    .spawn(move || {
                        let run = std::panic::AssertUnwindSafe(|| work(&bg_inner));
                        if let Err(p) = std::panic::catch_unwind(run) {
                            bg_inner.poison(
                                &format!("the {name} thread"),
                                &Error::from_panic(p.as_ref()),
                            );
                        }
                    })
                    .map_err(|e| Error::io(format!("spawn the {name} thread"), e))
            };
            bg.push(spawn("bloomlsm-flush", |i| i.background_loop(Job::Flush))?);
            if inner.opts.background_compaction {
                let files = spawn("bloomlsm-files", |i| {
                    i.table_files.run(&|| i.next_file_number());
                });
                match files.and_then(|f| {
                    bg.push(f);
                    spawn("bloomlsm-compact", |i| i.background_loop(Job::Compaction))
                }) {
                    Ok(h) => bg.push(h),
                    Err(e) => {
                        inner.table_files.stop();
                        inner.state().shutting_down = true;
                        inner.cv.notify_all();
                        for h in bg {
                            let _ = h.join();
                        }
                        return Err(e);
                    }
                }
            }
        }
        let db = Db {
            inner,
            bg: Mutex::new(bg),
            lock: Mutex::new(lock),
        };
        // Work may already be due (e.g. many L0 files at open).
        db.inner.cv.notify_all();
        Ok(db)
    }

    /// Stores `value` under `key`: anything `AsRef<[u8]>` (`&[u8]`, byte
    /// arrays, `Vec<u8>`, `&str`, `String`, `Bytes`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put(b"apple", b"red")?;
    /// db.put("banana", String::from("yellow"))?;
    /// db.put("apple", "green")?; // the newest write wins
    /// assert_eq!(db.get("apple")?.as_deref(), Some(&b"green"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key.as_ref(), value.as_ref());
        self.write(b)
    }

    /// Removes `key` (a no-op if absent).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put("apple", "red")?;
    /// db.delete("apple")?;
    /// db.delete("never-written")?; // not an error
    /// assert_eq!(db.get("apple")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key.as_ref());
        self.write(b)
    }

    /// Applies `batch` atomically: after a crash, all of it or none of it is
    /// there. With `sync_writes`, it is on disk before this returns.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// use bloomlsm::WriteBatch;
    ///
    /// let mut batch = WriteBatch::new();
    /// batch.put("from", "0");
    /// batch.put("to", "100");
    /// batch.delete("pending");
    /// db.write(batch)?; // all three, or none after a crash
    /// assert_eq!(db.get("to")?.as_deref(), Some(&b"100"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        let mut user_bytes = 0;
        for op in batch.iter() {
            user_bytes += (op.key().len() + op.value().len()) as u64;
            if let Some(what) = outside_write_limits(op.key(), op.value()) {
                return Err(Error::invalid(what));
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        self.inner.write_queued(batch)?;
        // Counted once acknowledged: the denominator of write amplification.
        self.inner
            .user_bytes_written
            .fetch_add(user_bytes, Ordering::Relaxed);
        Ok(())
    }

    /// The value of `key`, or `None`. Hashes the key once and reuses the hash
    /// for the filter of every candidate file.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put("apple", "red")?;
    /// assert_eq!(db.get("apple")?, Some(bloomlsm::Bytes::from("red")));
    /// assert_eq!(db.get(b"pear")?, None); // most likely answered by a filter
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let key = key.as_ref();
        check_key(key)?;
        self.inner.get(key, None)
    }

    /// The values of `keys`, in order (`None` for an absent key): the answers
    /// `get` would give one key at a time, at one point in time, faster —
    /// keys are hashed once, the file set is pinned once, and the filter
    /// lines of many keys are prefetched before any is tested, so their
    /// cache misses overlap (RocksDB's `MultiGet`). Counters are charged as
    /// for one `get` per key.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put("a", "1")?;
    /// db.put("c", "3")?;
    /// let got = db.multi_get(&["a", "b", "c"])?;
    /// assert_eq!(got[0].as_deref(), Some(&b"1"[..]));
    /// assert_eq!(got[1], None);
    /// assert_eq!(got[2].as_deref(), Some(&b"3"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Bytes>>> {
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_ref()).collect();
        for k in &keys {
            check_key(k)?;
        }
        self.inner.multi_get(&keys, None)
    }

    /// The live entries with user keys in `range`, in key order, as of now:
    /// `db.scan(..)` for everything, `db.scan("a".."m")`, `db.scan(k..)`,
    /// with keys of any `AsRef<[u8]>` type (see [`ScanRange`](iter::ScanRange)).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// for k in ["a", "b", "c", "d"] {
    ///     db.put(k, k.to_uppercase())?;
    /// }
    /// let keys = |it: bloomlsm::DbIter| -> bloomlsm::Result<Vec<bloomlsm::Bytes>> {
    ///     it.map(|e| e.map(|(k, _v)| k)).collect()
    /// };
    /// assert_eq!(keys(db.scan(..))?, ["a", "b", "c", "d"]);
    /// assert_eq!(keys(db.scan("b".."d"))?, ["b", "c"]);
    /// assert_eq!(keys(db.scan(b"b".as_slice()..=b"d".as_slice()))?, ["b", "c", "d"]);
    /// assert_eq!(keys(db.scan(b"c".to_vec()..))?, ["c", "d"]);
    /// for entry in db.scan(..="b") {
    ///     let (key, value) = entry?;
    ///     println!("{key:?} = {value:?}");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan(&self, range: impl iter::ScanRange) -> DbIter {
        let (start, end) = range.into_bounds();
        self.inner.scan(start, end, None)
    }

    /// The live entries whose keys start with `prefix`, in key order, as of
    /// now: a [`scan`](Self::scan) of the range from `prefix` to the first key
    /// past every key with that prefix (an empty prefix scans everything).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// for k in ["user:1", "user:2", "users", "video:1"] {
    ///     db.put(k, "x")?;
    /// }
    /// fn keys(it: impl Iterator<Item = bloomlsm::Result<(bloomlsm::Bytes, bloomlsm::Bytes)>>)
    ///     -> bloomlsm::Result<Vec<bloomlsm::Bytes>> {
    ///     it.map(|e| e.map(|(k, _v)| k)).collect()
    /// }
    /// assert_eq!(keys(db.scan_prefix("user:"))?, ["user:1", "user:2"]);
    /// assert_eq!(keys(db.scan_prefix("user"))?, ["user:1", "user:2", "users"]);
    /// assert_eq!(keys(db.scan_prefix("user:").rev())?, ["user:2", "user:1"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan_prefix(&self, prefix: impl AsRef<[u8]>) -> DbIter {
        let (start, end) = iter::prefix_range(prefix.as_ref());
        self.inner.scan(start, end, None)
    }

    /// A [`Snapshot`] of the store as of now: reads and scans through it see
    /// exactly the writes made before this call. Until it is dropped,
    /// flushes and compactions keep the versions it sees. It ends with the
    /// store (later reads through it return [`Error::Closed`]) and is not
    /// persisted across a reopen.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put("balance", "100")?;
    /// let snap = db.snapshot();
    /// db.put("balance", "50")?;
    /// db.flush()?;
    /// assert_eq!(snap.get("balance")?.as_deref(), Some(&b"100"[..]));
    /// assert_eq!(db.get("balance")?.as_deref(), Some(&b"50"[..]));
    /// db.close()?;
    /// assert!(matches!(snap.get("balance"), Err(bloomlsm::Error::Closed)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.inner.clone())
    }

    /// Writes the memtable (if not empty) to an L0 file and waits until every
    /// frozen memtable is on disk.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put("apple", "red")?;
    /// db.flush()?;
    /// assert_eq!(db.stats().levels[0].files, 1); // one new L0 file
    /// assert_eq!(db.stats().memtable_bytes, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Full manual compaction: flushes, then merges each non-empty level into
    /// the next non-empty one below it until all data sits in the deepest
    /// level that holds any (when only L0 does: L1, or with
    /// [`Options::dynamic_level_bytes`] the base level), dropping shadowed
    /// versions and tombstones (except the versions live
    /// [`Snapshot`]s see).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// for round in 0..3 {
    ///     db.put("apple", format!("v{round}"))?;
    ///     db.flush()?;
    /// }
    /// db.compact()?;
    /// let s = db.stats();
    /// assert_eq!(s.levels[0].files, 0);
    /// assert_eq!(s.levels[1].entries, 1); // older versions dropped
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact(&self) -> Result<()> {
        self.inner.flush()?;
        self.inner.compact_all()
    }

    /// Runs, on the calling thread, every flush and compaction that is due,
    /// until none is. With `background_compaction` off this makes the shape of
    /// the store a function of the writes alone (the `bench` command uses it so
    /// that every filter configuration gets the same levels).
    ///
    /// ```
    /// use bloomlsm::{Db, Options};
    ///
    /// let opts = Options {
    ///     background_compaction: false,
    ///     ..Options::default()
    /// };
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), opts)?;
    /// db.put("apple", "red")?;
    /// db.maintain()?; // flushes the memtable, then runs any due compaction
    /// assert_eq!(db.stats().flushes, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn maintain(&self) -> Result<()> {
        self.inner.flush()?;
        while self.inner.compact_once()? {}
        Ok(())
    }

    /// Counters and the shape of the store. `Display` prints a summary.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put("apple", "red")?;
    /// db.flush()?;
    /// db.get("apple")?;
    /// db.get("pear")?;
    /// let stats = db.stats();
    /// assert_eq!((stats.gets, stats.gets_found), (2, 1));
    /// println!("{stats}"); // lookups, memory, then one line per level
    /// println!("{:.4}", stats.block_reads_per_missing_get());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// Per-file shape and counters, L0 first.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put("apple", "red")?;
    /// db.flush()?;
    /// let files = db.file_stats();
    /// assert_eq!(files.len(), 1);
    /// assert_eq!(files[0].smallest, b"apple");
    /// println!("{}", files[0]); // e.g. 000005.sst L0: 1 entries, ...
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn file_stats(&self) -> Vec<FileStats> {
        let sv = self.inner.super_version();
        let mut out = Vec::new();
        let chances = sv.version.probe_chances();
        for (level, files) in sv.version.levels.iter().enumerate() {
            for (f, &probe_chance) in files.iter().zip(&chances[level]) {
                let info = f.table.filter_info();
                let usable = info.filter(|x| x.is_usable());
                out.push(FileStats {
                    level,
                    number: f.number(),
                    file_bytes: f.meta.file_size,
                    data_bytes: f.data_bytes(),
                    data_raw_bytes: f.table.properties().data_raw_size,
                    compression: f.table.compression().to_string(),
                    entries: f.meta.entries,
                    smallest: f.smallest_user_key().to_vec(),
                    largest: f.largest_user_key().to_vec(),
                    filter: f.table.filter_policy_name().unwrap_or("none").to_string(),
                    bits_per_key: usable.map_or(0.0, |x| x.bits_per_key()),
                    filter_usable: usable.is_some(),
                    filter_pinned: f.filter_pinned(),
                    filter_partitions: info.map_or(0, |x| x.partitions),
                    probe_chance,
                    predicted_fpr: f.predicted_fpr(),
                    io: f.io.load(),
                });
            }
        }
        out
    }

    /// Zeroes the lookup counters (global, per level and per file). The
    /// background and write counters (flushes, compactions, bytes written,
    /// write amplification) count since open and are not reset.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.get("apple")?;
    /// assert_eq!(db.stats().gets, 1);
    /// db.reset_stats();
    /// assert_eq!(db.stats().gets, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset_stats(&self) {
        let inner = &self.inner;
        inner.gets.reset();
        for l in &inner.retired_io {
            l.reset();
        }
        for f in inner.super_version().version.levels.iter().flatten() {
            f.io.reset();
        }
    }

    /// Checks every block of every live file.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put("apple", "red")?;
    /// db.flush()?;
    /// db.verify()?; // an Err names the damaged file and offset
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn verify(&self) -> Result<()> {
        for f in self.inner.super_version().version.levels.iter().flatten() {
            f.table.verify_all()?;
        }
        Ok(())
    }

    /// The options in force: those given to [`Db::open`], with the design the
    /// store records in place of theirs unless
    /// [`Options::use_stored_design`] was false.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use bloomlsm::{Db, FilterOptions, FilterPolicy, Options};
    /// let bloom = Options {
    ///     filters: FilterOptions::uniform(Some(FilterPolicy::bloom(12.0))),
    ///     ..Options::default()
    /// };
    /// Db::open(dir.path(), bloom)?.close()?;
    /// // Reopened with the defaults, the store keeps the design it recorded.
    /// let db = Db::open(dir.path(), Options::default())?;
    /// assert_eq!(db.options().filters.policy, Some(FilterPolicy::bloom(12.0)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// How the store reads its tables: [`ReadMode::Buffered`] or
    /// [`ReadMode::Direct`] (a requested [`ReadMode::DirectOrBuffered`]
    /// settled at open).
    pub fn read_mode(&self) -> ReadMode {
        self.inner.opts.read_mode
    }

    /// The store's directory.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// assert_eq!(db.path(), dir.path());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Stops background work, syncs the log and the MANIFEST (whose trivial
    /// moves, files moved between levels, are appended without a sync) and
    /// releases the lock, reporting any error (a background error, or a
    /// failed sync). Dropping a `Db` does the same but cannot report.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.put("apple", "red")?;
    /// db.close()?; // the directory lock is released: the store can be opened again
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&self) -> Result<()> {
        let inner = &self.inner;
        if inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        inner.state().shutting_down = true;
        inner.cv.notify_all();
        inner.table_files.stop();
        let threads = self.bg.lock().map(|mut g| std::mem::take(&mut *g));
        for h in threads.unwrap_or_default() {
            let _ = h.join();
        }
        let sync = inner
            .writer
            .lock()
            .map_err(|_| Error::lock_poisoned("writer lock"))
            .and_then(|mut w| w.wal.as_mut().map_or(Ok(()), Wal::sync))
            .and_then(|()| inner.state().vs.sync_manifest());
        // Snapshots and iterators may outlive the handle; the lock may not.
        drop(self.lock.lock().ok().and_then(|mut g| g.take()));
        if let Some(e) = &inner.state().bg_error {
            return Err(e.duplicate());
        }
        sync
    }
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("path", &self.inner.dir)
            .finish_non_exhaustive()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// The read mode the store in `dir` uses: `Direct` is probed on its
/// `CURRENT` (or, for a new store, `LOCK`) file, so that a file system that
/// refuses direct I/O fails the open at once; `DirectOrBuffered` settles on
/// one of the two.
fn settle_read_mode(dir: &Path, opts: &Options) -> Result<ReadMode> {
    let (current, lock) = (filename::current_file(dir), filename::lock_file(dir));
    crate::fs::resolve_read_mode(opts.fs.as_ref(), &[&current, &lock], opts.read_mode)
        .map_err(|e| Error::io(format!("direct reads in {}", dir.display()), e))
}

fn check_options(opts: &Options) -> Result<()> {
    opts.validate()?;
    if opts.max_levels > manifest::NUM_LEVELS {
        return Err(Error::invalid(format!(
            "max_levels must be at most {}",
            manifest::NUM_LEVELS
        )));
    }
    Ok(())
}

fn check_key(key: &[u8]) -> Result<()> {
    match key_outside_limits(key) {
        Some(what) => Err(Error::invalid(what)),
        None => Ok(()),
    }
}

fn key_outside_limits(key: &[u8]) -> Option<String> {
    if key.is_empty() {
        Some("empty key".into())
    } else if key.len() > MAX_KEY_LEN {
        Some(format!(
            "key of {} bytes is over the {MAX_KEY_LEN}-byte limit",
            key.len()
        ))
    } else {
        None
    }
}

/// Why `Db::write` refuses an operation with this key and value (an empty
/// key, a key over [`MAX_KEY_LEN`], a value over [`MAX_VALUE_LEN`]), if it
/// does. WAL replay holds logged batches to the same rule: the store never
/// logs such an operation.
pub(crate) fn outside_write_limits(key: &[u8], value: &[u8]) -> Option<String> {
    key_outside_limits(key).or_else(|| {
        (value.len() > MAX_VALUE_LEN).then(|| {
            format!(
                "value of {} bytes is over the {MAX_VALUE_LEN}-byte limit",
                value.len()
            )
        })
    })
}

/// Writes `mem` as a table numbered `number`, keeping of each key the
/// versions `retention` keeps (tombstones stay: older values may live in
/// deeper levels).
fn flush_memtable(
    dir: &Path,
    opts: &Options,
    mem: &MemTable,
    number: u64,
    v: &Version,
    retention: &Retention,
    cache: Option<Arc<BlockCache>>,
) -> Result<Option<Arc<FileHandle>>> {
    /// A flush writes exactly one file ([`OutputSize::Whole`]).
    struct Fixed(u64);
    impl FileNumbers for Fixed {
        fn next_file_number(&self) -> Result<u64> {
            Ok(self.0)
        }
    }
    let mut runs = v.runs();
    runs.push((0, mem.len() as u64));
    let policy = opts
        .filters
        .policy_for(0, &runs, v.last_nonempty_level().max(1));
    let out = compaction::write_outputs(
        dir,
        opts,
        OutputSize::Whole,
        mem.iter().map(Ok),
        policy,
        opts.compression.for_level(0),
        &Fixed(number),
        retention,
        &|_| false,
        &[],
        cache,
    )?;
    Ok(out.files.into_iter().next())
}

impl Inner {
    /// Records the first fatal error: writes, flushes and compactions fail
    /// with it (as [`Error::Poisoned`]) until the store is reopened, and
    /// writers waiting for room are woken to see it.
    fn poison(&self, during: &str, e: &Error) {
        if !matches!(e, Error::Closed) {
            self.state()
                .bg_error
                .get_or_insert_with(|| Error::poisoned(during, e.duplicate()));
            self.cv.notify_all();
        }
    }

    /// Runs one flush or compaction, `work`, on whichever thread calls it
    /// (a background thread or the caller of `flush`, `compact`,
    /// `maintain`). A failure poisons the store before the work lock the
    /// caller holds is released, so that no other flush or compaction runs
    /// on a half-failed state; a panic is caught here and counts as a
    /// failure ([`Error::Panicked`]), so that it never ends a background
    /// thread silently while writers wait for it.
    fn guarded<T>(&self, during: &str, work: impl FnOnce() -> Result<T>) -> Result<T> {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
            .unwrap_or_else(|p| Err(Error::from_panic(p.as_ref())));
        r.inspect_err(|e| self.poison(during, e))
    }

    fn fs(&self) -> &dyn FileSystem {
        self.opts.fs.as_ref()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What a flush or compaction starting now keeps: the versions the live
    /// snapshots see. A snapshot taken later sees the newest version of every
    /// key already written, which is kept anyway.
    fn retention(&self) -> Retention {
        Retention::new(self.snapshots.sequences())
    }

    fn super_version(&self) -> Arc<SuperVersion> {
        self.sv.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn install(&self, st: &State, mem: Arc<MemTable>) {
        let sv = SuperVersion {
            mem,
            imm: st.imm.iter().rev().map(|(m, _)| m.clone()).collect(),
            version: st.vs.current().clone(),
        };
        *self.sv.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(sv);
    }

    /// Makes sure the active memtable has room, freezing it if full; applies
    /// the L0 slowdown and stop rules.
    fn make_room(&self, w: &mut Writer) -> Result<()> {
        let mut delayed = false;
        loop {
            let mut st = self.state();
            if let Some(e) = &st.bg_error {
                return Err(e.duplicate());
            }
            let l0 = st.vs.current().levels[0].len();
            let compacting = self.opts.background_compaction;
            if compacting && !delayed && l0 >= self.opts.l0_slowdown_trigger {
                // Give compaction some CPU, once per write, before stopping.
                drop(st);
                self.slowdowns.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
                delayed = true;
                continue;
            }
            if w.mem.approximate_memory_bytes() < self.opts.write_buffer_size {
                return Ok(());
            }
            if st.imm.len() >= MAX_IMMUTABLE || (compacting && l0 >= self.opts.l0_stop_trigger) {
                self.stalls.fetch_add(1, Ordering::Relaxed);
                self.cv.notify_all();
                let (g, _) = self
                    .cv
                    .wait_timeout(st, Duration::from_millis(100))
                    .unwrap_or_else(|p| p.into_inner());
                drop(g);
                continue;
            }
            self.freeze_memtable(w, &mut st)?;
            self.cv.notify_all();
            return Ok(());
        }
    }

    /// Freezes the active memtable (it joins the flush queue) and starts a
    /// new one with a new log. The old log is synced first, so a frozen
    /// memtable's writes are on disk whatever the sync mode.
    /// Any failure poisons the store: the log switch may be half done.
    fn freeze_memtable(&self, w: &mut Writer, st: &mut State) -> Result<()> {
        let r = self.switch_memtable(w, st);
        if let Err(e) = &r {
            st.bg_error
                .get_or_insert_with(|| Error::poisoned("switching to a new WAL", e.duplicate()));
            self.cv.notify_all();
        }
        r
    }

    fn switch_memtable(&self, w: &mut Writer, st: &mut State) -> Result<()> {
        if w.wal.is_none() {
            return Err(Error::ReadOnly);
        }
        let seq = self.last_seq.load(Ordering::Acquire);
        let number = st.vs.new_file_number(seq)?;
        let wal = Wal::create_in(self.fs(), &self.dir, number)?;
        if let Some(old) = w.wal.as_mut() {
            old.sync()?;
        }
        // Tracked once it exists: recovery refuses a store missing it.
        let edit = VersionEdit {
            new_logs: vec![number],
            ..VersionEdit::default()
        };
        st.vs.log_and_apply(edit, &[], seq)?;
        w.wal = Some(wal);
        let frozen = std::mem::replace(
            &mut w.mem,
            Arc::new(MemTable::for_write_buffer(self.opts.write_buffer_size)),
        );
        st.imm.push((frozen, st.wal_number));
        st.wal_number = number;
        self.install(st, w.mem.clone());
        Ok(())
    }

    /// [`Db::write`] through the writer queue (LevelDB's group commit):
    /// the writer at the front of the queue leads, taking the batches queued
    /// behind it into one WAL record — one write, one fsync in sync mode —
    /// and one memtable insert; every writer of the group returns only after
    /// that, with the group's result. A lone writer is a group of one.
    fn write_queued(&self, batch: WriteBatch) -> Result<()> {
        let mut q = self.queue()?;
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.waiting.push_back((ticket, Some(batch)));
        loop {
            if let Some(r) = q.done.remove(&ticket) {
                return r;
            }
            if q.waiting.front().map(|w| w.0) == Some(ticket) {
                break;
            }
            q = self
                .write_done
                .wait(q)
                .map_err(|_| Error::lock_poisoned("write queue lock"))?;
        }
        // Lead: this batch and those queued behind it, up to the group limit
        // (a small first batch is not held back by much more than itself).
        let mut group = q.waiting[0].1.take().expect("the leader's batch is queued");
        let first = group.approximate_size();
        let limit = if first <= GROUP_SMALL_BATCH {
            first + GROUP_SMALL_BATCH
        } else {
            GROUP_MAX_BYTES
        };
        let mut members = 1;
        for (_, b) in q.waiting.iter_mut().skip(1) {
            let Some(b) = b.as_ref() else { break };
            if group.approximate_size() + b.approximate_size() > limit {
                break;
            }
            group.append(b);
            members += 1;
        }
        for (_, b) in q.waiting.iter_mut().skip(1).take(members - 1) {
            *b = None;
        }
        drop(q);
        let result = self.write_group(group);
        // Hand the result to the group, whatever happens to the lock.
        let mut q = self.write_queue.lock().unwrap_or_else(|e| e.into_inner());
        for _ in 0..members {
            if let Some((t, _)) = q.waiting.pop_front()
                && t != ticket
            {
                let r = match &result {
                    Ok(()) => Ok(()),
                    Err(e) => Err(e.duplicate()),
                };
                q.done.insert(t, r);
            }
        }
        drop(q);
        self.write_done.notify_all();
        result
    }

    fn queue(&self) -> Result<MutexGuard<'_, WriteQueue>> {
        self.write_queue
            .lock()
            .map_err(|_| Error::lock_poisoned("write queue lock"))
    }

    /// Logs and applies one batch (a group's): the writer lock, room in the
    /// memtable, the WAL record, the memtable insert, the new last sequence.
    fn write_group(&self, mut batch: WriteBatch) -> Result<()> {
        let mut w = self
            .writer
            .lock()
            .map_err(|_| Error::lock_poisoned("writer lock"))?;
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if w.wal.is_none() {
            return Err(Error::ReadOnly);
        }
        if let Err(e) = self.make_room(&mut w) {
            self.poison("making room for a write", &e);
            return Err(e);
        }
        let first = self.last_seq.load(Ordering::Acquire) + 1;
        // Sequence numbers are 56 bits in every key; one past the end would
        // be shifted out of the key and read back as another write. A store
        // never gets there by writing (2^56 operations), only by a damaged
        // counter: refuse, with nothing logged.
        if first.saturating_add((batch.len() as u64).saturating_sub(1)) > key::MAX_SEQUENCE {
            return Err(Error::invalid(format!(
                "the store's sequence numbers are used up: the last is {}, a batch of {} needs more (the most is {})",
                first - 1,
                batch.len(),
                key::MAX_SEQUENCE
            )));
        }
        batch.set_sequence(first);
        let Some(wal) = w.wal.as_mut() else {
            return Err(Error::ReadOnly);
        };
        if let Err(e) = wal.append_batch(&batch, self.opts.sync_writes) {
            // The log may now hold a partial record; refuse further writes
            // rather than acknowledge anything after it.
            self.poison("a WAL write", &e);
            return Err(e);
        }
        w.mem.insert_batch(&batch);
        let last = first + batch.len() as u64 - 1;
        self.last_seq.store(last, Ordering::Release);
        Ok(())
    }

    /// `at`: a snapshot's sequence number (`None`: the latest).
    fn get(&self, user_key: &[u8], at: Option<u64>) -> Result<Option<Bytes>> {
        let sv = self.super_version();
        let snapshot = at.unwrap_or_else(|| self.last_seq.load(Ordering::Acquire));
        self.gets.gets.fetch_add(1, Ordering::Relaxed);
        let hash = key_hash(user_key);
        for mem in std::iter::once(&sv.mem).chain(&sv.imm) {
            if let Some(r) = mem.get_hashed(user_key, hash, snapshot) {
                self.gets.memtable_answers.fetch_add(1, Ordering::Relaxed);
                return Ok(match r {
                    LookupResult::Value(v) => {
                        self.gets.found.fetch_add(1, Ordering::Relaxed);
                        Some(v)
                    }
                    LookupResult::Deleted => None,
                });
            }
        }
        let v = &sv.version;
        // First pick the file of every level and start loading the filter
        // memory of each file the key will be probed in: the cache misses
        // of all levels then overlap instead of following one another.
        let mut slots = [Slot::None; MAX_LEVELS];
        for (i, f) in v.levels[0].iter().enumerate() {
            if v.l0_covers(i, user_key) {
                prefetch_probe(v, 0, i, f, hash);
            }
        }
        for (level, slot) in slots.iter_mut().enumerate().take(v.levels.len()).skip(1) {
            *slot = v.slot(level, user_key);
            if let Slot::In(i) = *slot {
                prefetch_probe(v, level, i, &v.levels[level][i], hash);
            }
        }
        // Built on the first filter positive: most missing gets need none.
        let mut lookup = Lookup::new(user_key, snapshot);
        let mut cost = GetCost::default();
        let mut answer = None;
        'levels: for (level, files) in v.levels.iter().enumerate() {
            if level == 0 {
                for (i, f) in files.iter().enumerate() {
                    if !v.l0_covers(i, user_key) {
                        f.io.add(&KEY_RANGE_SKIP);
                    } else if let Some(found) =
                        self.probe_at(v, level, i, &mut lookup, hash, &mut cost)?
                    {
                        answer = Some(found);
                        break 'levels;
                    }
                }
                continue;
            }
            let slot = match slots.get(level) {
                Some(&s) => s,
                None => v.slot(level, user_key),
            };
            match slot {
                Slot::None => {}
                Slot::Below(i) => files[i].io.add(&KEY_RANGE_SKIP),
                Slot::In(i) => {
                    if let Some(found) = self.probe_at(v, level, i, &mut lookup, hash, &mut cost)? {
                        answer = Some(found);
                        break 'levels;
                    }
                }
            }
        }
        match answer {
            Some(Some(value)) => {
                self.gets.found.fetch_add(1, Ordering::Relaxed);
                Ok(Some(value))
            }
            Some(None) => Ok(None),
            None => {
                self.charge_missing([&cost]);
                Ok(None)
            }
        }
    }

    /// Adds missing gets' costs to the counters, one add per counter for
    /// all of them (each get's predicted reads rounded to billionths on its
    /// own, so a multi_get charges what its keys' gets would).
    fn charge_missing<'c>(&self, costs: impl IntoIterator<Item = &'c GetCost>) {
        let (mut blocks, mut disk_blocks, mut predicted_nano) = (0u64, 0u64, 0u64);
        for c in costs {
            blocks += c.blocks;
            disk_blocks += c.disk_blocks;
            predicted_nano += (c.predicted * 1e9).round() as u64;
        }
        let g = &self.gets;
        if blocks > 0 {
            g.missing_block_reads.fetch_add(blocks, Ordering::Relaxed);
            g.missing_disk_reads
                .fetch_add(disk_blocks, Ordering::Relaxed);
        }
        if predicted_nano > 0 {
            g.missing_predicted_nano
                .fetch_add(predicted_nano, Ordering::Relaxed);
        }
    }

    /// [`Db::multi_get`]: the same probes, in the same order per key, as one
    /// `get` per key, but each file's filter is probed for all the keys that
    /// reach it at once ([`crate::Filter::may_contain_batch`]: prefetched
    /// lines), and the keys are hashed and the version pinned once.
    fn multi_get(&self, keys: &[&[u8]], at: Option<u64>) -> Result<Vec<Option<Bytes>>> {
        let sv = self.super_version();
        let snapshot = at.unwrap_or_else(|| self.last_seq.load(Ordering::Acquire));
        let g = &self.gets;
        g.gets.fetch_add(keys.len() as u64, Ordering::Relaxed);
        let mut out: Vec<Option<Bytes>> = vec![None; keys.len()];
        // Keys still looked for, as indexes into `keys`.
        let mut pending: Vec<usize> = Vec::with_capacity(keys.len());
        // Hashed once: for the memtables' key filters and the tables'.
        let hashes: Vec<u64> = keys.iter().map(|k| key_hash(k)).collect();
        'keys: for (i, k) in keys.iter().enumerate() {
            for mem in std::iter::once(&sv.mem).chain(&sv.imm) {
                if let Some(r) = mem.get_hashed(k, hashes[i], snapshot) {
                    g.memtable_answers.fetch_add(1, Ordering::Relaxed);
                    if let LookupResult::Value(v) = r {
                        g.found.fetch_add(1, Ordering::Relaxed);
                        out[i] = Some(v);
                    }
                    continue 'keys;
                }
            }
            pending.push(i);
        }
        let mut prefixes = vec![0u64; keys.len()];
        for &i in &pending {
            prefixes[i] = key::prefix(keys[i]);
        }
        sort_by_user_key(&mut pending, keys, &prefixes);
        let mut costs: Vec<GetCost> = (0..keys.len()).map(|_| GetCost::default()).collect();
        let mut done = vec![false; keys.len()];
        let v = &sv.version;
        let mut batch_hashes: Vec<u64> = Vec::new();
        let mut answers: Vec<bool> = Vec::new();
        let mut group: Vec<usize> = Vec::new();
        // Keys a filter let through (or with no filter), with their file and
        // the filter's answer: their data blocks are read together, a whole
        // level's at once (`read_batch`).
        let mut reads: Vec<(usize, &FileHandle, Option<bool>)> = Vec::new();
        // L0: every file may hold any key, newest first, so each file is
        // probed for all the keys still pending, its filter in one batch.
        for (fi, f) in v.levels[0].iter().enumerate() {
            if pending.is_empty() {
                break;
            }
            // Keys outside the file's range and keys its filter rules out
            // cost no read: counted here, on the file's counters once.
            let mut local = IoCounters::default();
            group.clear();
            for &i in &pending {
                if v.l0_covers(fi, keys[i]) {
                    group.push(i);
                } else {
                    local.files_considered += 1;
                    local.key_range_skips += 1;
                }
            }
            let filter = v.filter(0, fi);
            if let Some(filter) = filter {
                batch_hashes.clear();
                batch_hashes.extend(group.iter().map(|&i| hashes[i]));
                answers.clear();
                answers.resize(group.len(), true);
                filter.may_contain_batch(&batch_hashes, &mut answers);
            }
            reads.clear();
            for (j, &i) in group.iter().enumerate() {
                let says = filter.map(|_| answers[j]);
                if says == Some(false) {
                    local.files_considered += 1;
                    local.filter_checks += 1;
                    local.filter_negatives += 1;
                    costs[i].predicted += f.predicted_fpr();
                } else {
                    reads.push((i, f, says));
                }
            }
            if local != IoCounters::default() {
                f.io.add(&local);
            }
            let mut resolved = false;
            for (i, found) in self.read_batch(&reads, keys, snapshot, &hashes, &mut costs)? {
                settle(g, &mut out, &mut done, i, found);
                resolved = true;
            }
            if resolved {
                pending.retain(|&i| !done[i]);
            }
        }
        // Deeper levels: at most one file per key. The pending keys, sorted,
        // are placed on a level's files by one walk along it (no search per
        // key), which hands each file its keys as one run: the run's filter
        // probes go in one batch (prefetched lines) and its counters are
        // added once.
        let mut runs: Vec<Run> = Vec::new();
        for (level, files) in v.levels.iter().enumerate().skip(1) {
            if pending.is_empty() {
                break;
            }
            v.runs_sorted(level, keys, &prefixes, &pending, &mut runs);
            reads.clear();
            // Deep levels hold many files, so a run is often a key or two:
            // too short for its batch probe to overlap cache misses. Start
            // loading every key's filter line of the level first (1,024
            // lines are 64 KiB: they wait in L2), then test.
            for run in &runs {
                if let Some(filter) = v.filter(level, run.file) {
                    for &i in &pending[run.below..run.end] {
                        filter.prefetch(hashes[i]);
                    }
                }
            }
            for run in &runs {
                let f = &files[run.file];
                let skips = (run.below - run.start) as u64;
                if skips > 0 {
                    f.io.add(&IoCounters {
                        files_considered: skips,
                        key_range_skips: skips,
                        ..IoCounters::ZERO
                    });
                }
                let inside = &pending[run.below..run.end];
                if inside.is_empty() {
                    continue;
                }
                let Some(filter) = v.filter(level, run.file) else {
                    reads.extend(inside.iter().map(|&i| (i, &**f, None)));
                    continue;
                };
                batch_hashes.clear();
                batch_hashes.extend(inside.iter().map(|&i| hashes[i]));
                answers.clear();
                answers.resize(inside.len(), true);
                filter.may_contain_batch(&batch_hashes, &mut answers);
                let mut negatives = 0u64;
                for (&i, &says) in inside.iter().zip(&answers) {
                    if says {
                        reads.push((i, f, Some(true)));
                    } else {
                        negatives += 1;
                        costs[i].predicted += f.predicted_fpr();
                    }
                }
                if negatives > 0 {
                    f.io.add(&IoCounters {
                        files_considered: negatives,
                        filter_checks: negatives,
                        filter_negatives: negatives,
                        ..IoCounters::ZERO
                    });
                }
            }
            // The level's data-block reads, together (a key is in at most
            // one file of the level, so they are independent; with direct
            // reads they are made in parallel).
            let mut resolved = false;
            for (i, found) in self.read_batch(&reads, keys, snapshot, &hashes, &mut costs)? {
                settle(g, &mut out, &mut done, i, found);
                resolved = true;
            }
            if resolved {
                pending.retain(|&i| !done[i]);
            }
        }
        self.charge_missing(pending.iter().map(|&i| &costs[i]));
        Ok(out)
    }

    /// Looks up `reads` — (key index, file, the file filter's answer) — in
    /// their files, charging each key's cost, and returns the keys a file
    /// answered (a value or a tombstone) in `reads`' order. With direct
    /// reads they are made in parallel on the I/O threads
    /// ([`io_pool::io_pool`]), so that up to 16 device reads are in flight
    /// (RocksDB's MultiGet overlaps them with asynchronous I/O). Buffered reads stay on this thread: served by
    /// the page cache in a few µs, they lost more to the hand-offs than they
    /// gained (multi_get at 10^6 keys, quiet machine: 352–397 ns per missing
    /// key in parallel against 247–361 ns on one thread).
    fn read_batch(
        &self,
        reads: &[(usize, &FileHandle, Option<bool>)],
        keys: &[&[u8]],
        snapshot: u64,
        hashes: &[u64],
        costs: &mut [GetCost],
    ) -> Result<Vec<(usize, Option<Bytes>)>> {
        use rayon::prelude::*;
        let one = |&(i, f, says): &(usize, &FileHandle, Option<bool>)| {
            let mut cost = GetCost::default();
            let r = self.probe_key(f, keys[i], snapshot, hashes[i], &mut cost, says);
            (i, cost, r)
        };
        let pool = match self.opts.read_mode {
            // A device read takes ~100 µs: two already overlap usefully.
            ReadMode::Direct if reads.len() >= 2 => io_pool::io_pool(),
            _ => None,
        };
        let results: Vec<(usize, GetCost, Result<Probed>)> = match pool {
            // One task per read, so every read has its own thread. A panic
            // on one of them, resumed here by rayon, is caught: it poisons
            // the store like a background thread's.
            Some(pool) => {
                let on_pool = |r: &(usize, &FileHandle, Option<bool>)| {
                    let (i, cost, probed) = one(r);
                    let probed = inject::hit(&self.dir, inject::Point::Io).and(probed);
                    (i, cost, probed)
                };
                let all = std::panic::AssertUnwindSafe(|| {
                    pool.install(|| reads.par_iter().with_max_len(1).map(on_pool).collect())
                });
                std::panic::catch_unwind(all).map_err(|p| {
                    let e = Error::from_panic(p.as_ref());
                    self.poison("a read on the I/O threads", &e);
                    e
                })?
            }
            None => reads.iter().map(one).collect(),
        };
        let mut found = Vec::new();
        for (i, cost, r) in results {
            costs[i].add(&cost);
            if let Some(x) = r? {
                found.push((i, x));
            }
        }
        Ok(found)
    }

    /// [`Self::probe`] of file `i` of `level`, its filter probed from the
    /// version's index: a negative touches neither the table nor its index.
    fn probe_at(
        &self,
        v: &Version,
        level: usize,
        i: usize,
        lookup: &mut Lookup,
        hash: u64,
        cost: &mut GetCost,
    ) -> Result<Option<Option<Bytes>>> {
        let f = &v.levels[level][i];
        let says = v.filter(level, i).map(|x| x.may_contain(hash));
        if says == Some(false) {
            f.io.add(&FILTER_NEGATIVE);
            cost.predicted += f.predicted_fpr();
            return Ok(None);
        }
        self.probe(f, lookup.key(), hash, cost, says)
    }

    /// [`Self::probe`] for a user key, as of `snapshot`.
    fn probe_key(
        &self,
        f: &FileHandle,
        user_key: &[u8],
        snapshot: u64,
        hash: u64,
        cost: &mut GetCost,
        filter_says: Option<bool>,
    ) -> Result<Option<Option<Bytes>>> {
        let lookup = key::make_internal_key(user_key, snapshot, ValueKind::Value);
        self.probe(f, &lookup, hash, cost, filter_says)
    }

    /// Looks `lookup` up in one file, charging the costs. `Some(Some(v))`: a
    /// value; `Some(None)`: a tombstone; `None`: not in this file.
    fn probe(
        &self,
        f: &FileHandle,
        lookup: &[u8],
        hash: u64,
        cost: &mut GetCost,
        filter_says: Option<bool>,
    ) -> Result<Option<Option<Bytes>>> {
        let r = f.table.get_in_range(lookup, hash, filter_says)?;
        let has_filter = f.table.filter_info().is_some();
        let c = IoCounters {
            files_considered: 1,
            key_range_skips: u64::from(r.key_range_skipped),
            filter_checks: u64::from(r.filter_checked),
            filter_negatives: u64::from(r.filter_negative),
            filter_positives: u64::from(r.filter_checked && !r.filter_negative),
            false_positives: u64::from(r.filter_checked && r.false_positive()),
            unusable_filter_reads: u64::from(r.filter_unusable && !r.key_range_skipped),
            unfiltered_reads: u64::from(!has_filter && !r.key_range_skipped),
            block_reads: r.blocks_read,
            cache_hits: r.cache_hits,
            bytes_read: r.bytes_read,
            filter_block_reads: r.filter_blocks_read,
            filter_cache_hits: r.filter_cache_hits,
            filter_bytes_read: r.filter_bytes_read,
        };
        f.io.add(&c);
        if !r.key_range_skipped {
            cost.predicted += f.predicted_fpr();
        }
        cost.blocks += r.blocks_read + r.cache_hits;
        cost.disk_blocks += r.blocks_read;
        let Some((ikey, value)) = r.entry else {
            return Ok(None);
        };
        match key::parse(&ikey).map(|p| p.kind) {
            Some(ValueKind::Value) => Ok(Some(Some(value))),
            Some(ValueKind::Deletion) => Ok(Some(None)),
            None => Err(Error::corruption(
                f.table.path(),
                0,
                format!("malformed internal key of {} bytes", ikey.len()),
            )),
        }
    }

    /// `at`: a snapshot's sequence number (`None`: the latest).
    fn scan(&self, start: Bound<Bytes>, end: Bound<Bytes>, at: Option<u64>) -> DbIter {
        let sv = self.super_version();
        let seq = at.unwrap_or_else(|| self.last_seq.load(Ordering::Acquire));
        let view = View {
            mems: std::iter::once(&sv.mem).chain(&sv.imm).cloned().collect(),
            version: sv.version.clone(),
            seq,
            closed: self.closed.clone(),
        };
        DbIter::new(view, start, end)
    }

    fn flush(&self) -> Result<()> {
        let mut w = self
            .writer
            .lock()
            .map_err(|_| Error::lock_poisoned("writer lock"))?;
        self.freeze_for_flush(&mut w)?;
        drop(w);
        self.wait_for_flushes()
    }

    /// Freezes the active memtable, if it holds anything, for the flush
    /// thread. The caller holds the writer lock.
    fn freeze_for_flush(&self, w: &mut Writer) -> Result<()> {
        if w.wal.is_none() {
            return Err(Error::ReadOnly);
        }
        if !w.mem.is_empty() {
            let mut st = self.state();
            if let Some(e) = &st.bg_error {
                return Err(e.duplicate());
            }
            self.freeze_memtable(w, &mut st)?;
        }
        Ok(())
    }

    /// Waits until no frozen memtable awaits its flush.
    fn wait_for_flushes(&self) -> Result<()> {
        self.cv.notify_all();
        let mut st = self.state();
        loop {
            if let Some(e) = &st.bg_error {
                return Err(e.duplicate());
            }
            if st.imm.is_empty() {
                return Ok(());
            }
            if st.shutting_down {
                return Err(Error::Closed);
            }
            st = self
                .cv
                .wait_timeout(st, Duration::from_millis(50))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// A background thread: runs `job` whenever it has work, until shutdown.
    /// After an error (which poisons the store) it only waits for shutdown.
    fn background_loop(&self, job: Job) {
        loop {
            {
                let mut st = self.state();
                loop {
                    if st.shutting_down {
                        return;
                    }
                    if st.bg_error.is_none() && self.has_work(&st, job) {
                        break;
                    }
                    st = self
                        .cv
                        .wait_timeout(st, Duration::from_millis(200))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
            // A failure (an error or a panic) has poisoned the store in
            // `guarded`; this thread then only waits for shutdown.
            let _ = match job {
                Job::Flush => self.flush_one(),
                Job::Compaction => self.compact_once(),
            };
            // Writers may wait for room; the other thread may have work now.
            self.cv.notify_all();
        }
    }

    fn has_work(&self, st: &State, job: Job) -> bool {
        match job {
            Job::Flush => !st.imm.is_empty(),
            Job::Compaction => self.compaction_due(st),
        }
    }

    fn compaction_due(&self, st: &State) -> bool {
        self.opts.background_compaction
            && (compaction::scores(st.vs.current(), &self.opts)
                .iter()
                .any(|&s| s >= 1.0)
                || refilter::pick(st.vs.current(), &self.opts).is_some())
    }

    /// Flushes the oldest frozen memtable, if any. Returns whether it did.
    fn flush_one(&self) -> Result<bool> {
        let _work = self.flush_work.lock().unwrap_or_else(|p| p.into_inner());
        self.guarded("flush", || self.flush_one_locked())
    }

    fn flush_one_locked(&self) -> Result<bool> {
        let (mem, version) = {
            let st = self.state();
            match st.imm.first() {
                Some((m, _)) => (m.clone(), st.vs.current().clone()),
                None => return Ok(false),
            }
        };
        inject::hit(&self.dir, inject::Point::Flush)?;
        let number = self.next_file_number()?;
        let fh = flush_memtable(
            &self.dir,
            &self.opts,
            &mem,
            number,
            &version,
            &self.retention(),
            self.cache.clone(),
        )?;
        filename::sync_dir_in(self.fs(), &self.dir)?;
        let mut st = self.state();
        let flushed_wal = st.imm[0].1;
        // The next frozen memtable's log, or the active one's.
        let log_number = st.imm.get(1).map_or(st.wal_number, |(_, n)| *n);
        let mut edit = VersionEdit::new();
        edit.log_number = Some(log_number);
        let opened: Vec<Arc<FileHandle>> = fh.into_iter().collect();
        for fh in &opened {
            edit.new_files.push((0, fh.meta.clone()));
        }
        st.vs
            .log_and_apply(edit, &opened, self.last_seq.load(Ordering::Acquire))?;
        st.imm.remove(0);
        for fh in &opened {
            self.bytes_flushed
                .fetch_add(fh.meta.file_size, Ordering::Relaxed);
            self.add_level_writes(
                0,
                &LevelWrites {
                    jobs: 1,
                    bytes_written: fh.meta.file_size,
                    ..LevelWrites::default()
                },
            );
        }
        let mem_now = self.super_version().mem.clone();
        self.install(&st, mem_now);
        drop(st);
        self.flushes.fetch_add(1, Ordering::Relaxed);
        let _ = self
            .fs()
            .remove_file(&filename::log_file(&self.dir, flushed_wal));
        Ok(true)
    }

    /// Runs one picked compaction, if any is due. Returns whether it did.
    fn compact_once(&self) -> Result<bool> {
        let _work = self.compact_work.lock().unwrap_or_else(|p| p.into_inner());
        self.guarded("compaction", || self.compact_once_locked())
    }

    /// Runs the most urgent compaction, or when none is due, one filter
    /// rebuild ([`refilter`]).
    fn compact_once_locked(&self) -> Result<bool> {
        let (c, v) = {
            let st = self.state();
            let v = st.vs.current();
            match compaction::pick(v, &self.opts, &st.vs.pointers) {
                Some(c) => (Ok(c), v.clone()),
                None => match refilter::pick(v, &self.opts) {
                    Some(r) => (Err(r), v.clone()),
                    None => return Ok(false),
                },
            }
        };
        inject::hit(&self.dir, inject::Point::Compaction)?;
        let obsolete = match c {
            Ok(c) => self.run_compaction(c, &v)?,
            Err(r) => self.run_refilter(r, &v)?,
        };
        self.table_files.retire(obsolete, v);
        Ok(true)
    }

    /// Rewrites one file, in its level, with the filter its level gets now,
    /// and installs it in the file's place. Returns the replaced file, for
    /// [`TableFiles::retire`].
    fn run_refilter(
        &self,
        r: refilter::Refilter,
        v: &Arc<Version>,
    ) -> Result<Vec<Arc<FileHandle>>> {
        let one = Compaction {
            level: r.level,
            inputs: vec![r.file.clone()],
            next_inputs: Vec::new(),
            output_level: r.level,
            move_only: false,
        };
        let out = compaction::run(
            &self.dir,
            &self.opts,
            OutputSize::Whole,
            v,
            &one,
            r.policy,
            self,
            &self.retention(),
            self.cache.clone(),
        )?;
        filename::sync_dir_in(self.fs(), &self.dir)?;
        self.bytes_compacted
            .fetch_add(out.bytes_written, Ordering::Relaxed);
        let mut edit = VersionEdit::new();
        edit.deleted_files.push((r.level, r.file.number()));
        for f in &out.files {
            edit.new_files.push((r.level, f.meta.clone()));
        }
        let mut st = self.state();
        let seq = self.last_seq.load(Ordering::Acquire);
        st.vs.log_and_apply(edit, &out.files, seq)?;
        self.retired_io[r.level].add(&r.file.io.load());
        let mem_now = self.super_version().mem.clone();
        self.install(&st, mem_now);
        drop(st);
        self.filter_rebuilds.fetch_add(1, Ordering::Relaxed);
        self.add_level_writes(
            r.level,
            &LevelWrites {
                jobs: 1,
                bytes_written: out.bytes_written,
                bytes_read_here: r.file.meta.file_size,
                ..LevelWrites::default()
            },
        );
        Ok(vec![r.file])
    }

    /// Merges every level into one: each non-empty level in turn, top down,
    /// into the next non-empty level below it (empty levels in between are
    /// skipped, not rewritten), ending in the deepest level holding data. With
    /// fixed level sizes that is at least L1; with dynamic sizes, when only L0
    /// holds data, the base level (the last level while the store is small).
    fn compact_all(&self) -> Result<()> {
        let _work = self.compact_work.lock().unwrap_or_else(|p| p.into_inner());
        self.guarded("compaction", || self.compact_all_locked())
    }

    fn compact_all_locked(&self) -> Result<()> {
        inject::hit(&self.dir, inject::Point::Compaction)?;
        let target = {
            let st = self.state();
            let last = st.vs.current().last_nonempty_level();
            if last > 0 {
                last
            } else if self.opts.dynamic_level_bytes {
                compaction::shape(st.vs.current(), &self.opts).base
            } else {
                1
            }
        };
        for level in 0..target {
            let (c, v) = {
                let st = self.state();
                let v = st.vs.current();
                let output = (level + 1..target)
                    .find(|&l| !v.levels[l].is_empty())
                    .unwrap_or(target);
                (
                    compaction::whole_or_next(v, level, output, &st.vs.pointers, true, 0),
                    v.clone(),
                )
            };
            let obsolete = if c.inputs.is_empty() {
                Vec::new()
            } else {
                self.run_compaction(c, &v)?
            };
            self.table_files.retire(obsolete, v);
        }
        Ok(())
    }

    /// Runs compaction `c` picked from `v` and installs its result. Returns
    /// the files it made obsolete, for [`TableFiles::retire`].
    fn run_compaction(&self, mut c: Compaction, v: &Arc<Version>) -> Result<Vec<Arc<FileHandle>>> {
        let out_level = c.output_level();
        let mut runs: Vec<(usize, u64)> = v.runs();
        let moved: u64 = c.all_inputs().map(|f| f.meta.entries).sum();
        // The output level as it will be: its untouched files plus the inputs.
        for r in runs.iter_mut().filter(|r| r.0 == out_level) {
            r.1 += c.inputs.iter().map(|f| f.meta.entries).sum::<u64>();
        }
        if !runs.iter().any(|r| r.0 == out_level) {
            runs.push((out_level, moved));
        }
        runs.retain(|r| !(r.0 == c.level && c.level == 0));
        let last_level = v.last_nonempty_level().max(out_level);
        let policy = self.opts.filters.policy_for(out_level, &runs, last_level);

        // A move (`Compaction::move_only`): a file of a level >= 1 that meets
        // nothing below goes down with the files after it that meet nothing
        // either (`extend_trivial_move`); picked L0 files that meet nothing
        // go down together. The run is chosen without looking at filters, so every filter
        // configuration gets the same tree; each file in it is then moved
        // as it is, or rewritten alone where the output level wants another
        // filter policy or compression.
        // (A full compaction, which takes a level's files together, merges
        // them as before.)
        let moving = c.move_only;
        if moving && c.level > 0 {
            compaction::extend_trivial_move(
                v,
                &mut c,
                self.opts.target_file_size.saturating_mul(25),
            );
        }
        let out_compression = self.opts.compression.for_level(out_level);
        let (moved, rewritten): (Vec<Arc<FileHandle>>, Vec<Arc<FileHandle>>) =
            c.inputs.iter().cloned().partition(|f| {
                moving
                    && f.meta.filter.as_ref().and_then(|m| m.policy()) == policy
                    && f.table.compression() == out_compression
            });
        let wrote = !rewritten.is_empty() || !c.next_inputs.is_empty();
        let mut written: Vec<Arc<FileHandle>> = Vec::new();
        if wrote {
            let retention = self.retention();
            let run = |c: &Compaction, size: OutputSize| {
                compaction::run(
                    &self.dir,
                    &self.opts,
                    size,
                    v,
                    c,
                    policy,
                    self,
                    &retention,
                    self.cache.clone(),
                )
            };
            let mut bytes_written = 0;
            if moving {
                // A file rewritten in place of a move stays one file, as moved.
                for f in &rewritten {
                    let one = Compaction {
                        level: c.level,
                        inputs: vec![f.clone()],
                        next_inputs: Vec::new(),
                        output_level: out_level,
                        move_only: false,
                    };
                    let out = run(&one, OutputSize::Whole)?;
                    bytes_written += out.bytes_written;
                    written.extend(out.files);
                }
            } else {
                let out = run(&c, OutputSize::Target(self.opts.target_file_size))?;
                bytes_written = out.bytes_written;
                written = out.files;
            }
            filename::sync_dir_in(self.fs(), &self.dir)?;
            self.bytes_compacted
                .fetch_add(bytes_written, Ordering::Relaxed);
        }
        let mut edit = VersionEdit::new();
        for f in &c.inputs {
            edit.deleted_files.push((c.level, f.number()));
        }
        for f in &c.next_inputs {
            edit.deleted_files.push((out_level, f.number()));
        }
        for f in moved.iter().chain(&written) {
            edit.new_files.push((out_level, f.meta.clone()));
        }
        let mut st = self.state();
        let seq = self.last_seq.load(Ordering::Acquire);
        if wrote {
            st.vs.log_and_apply(edit, &written, seq)?;
        } else {
            // Lost in a power failure, the move leaves the files where they were.
            st.vs.log_and_apply_unsynced(edit, seq)?;
        }
        if let Some(last) = c.inputs.iter().map(|f| f.largest_user_key()).max() {
            st.vs.pointers[c.level] = last.to_vec();
        }
        let mem_now = self.super_version().mem.clone();
        // The files merged leave the version: keep their lookup counts in
        // their levels' totals (a moved file keeps its own).
        for f in &rewritten {
            self.retired_io[c.level].add(&f.io.load());
        }
        for f in &c.next_inputs {
            self.retired_io[out_level].add(&f.io.load());
        }
        self.install(&st, mem_now);
        drop(st);
        self.compactions.fetch_add(1, Ordering::Relaxed);
        let bytes = |files: &[Arc<FileHandle>]| files.iter().map(|f| f.meta.file_size).sum::<u64>();
        self.add_level_writes(
            out_level,
            &LevelWrites {
                jobs: u64::from(wrote),
                bytes_written: bytes(&written),
                bytes_read_above: bytes(&rewritten),
                bytes_read_here: bytes(&c.next_inputs),
                moves: u64::from(!wrote),
                files_moved: moved.len() as u64,
                bytes_moved: bytes(&moved),
            },
        );
        // Deleted behind this thread (`TableFiles::retire`); readers
        // holding an older version keep their open descriptors.
        Ok(rewritten.into_iter().chain(c.next_inputs).collect())
    }

    fn add_level_writes(&self, level: usize, w: &LevelWrites) {
        self.level_writes.lock().unwrap_or_else(|p| p.into_inner())[level].add(w);
    }

    fn stats(&self) -> Stats {
        let sv = self.super_version();
        let g = &self.gets;
        let mut s = Stats {
            gets: g.gets.load(Ordering::Relaxed),
            gets_found: g.found.load(Ordering::Relaxed),
            memtable_answers: g.memtable_answers.load(Ordering::Relaxed),
            missing_get_block_reads: g.missing_block_reads.load(Ordering::Relaxed),
            missing_get_disk_reads: g.missing_disk_reads.load(Ordering::Relaxed),
            missing_get_predicted_reads: g.missing_predicted_nano.load(Ordering::Relaxed) as f64
                / 1e9,
            flushes: self.flushes.load(Ordering::Relaxed),
            compactions: self.compactions.load(Ordering::Relaxed),
            filter_rebuilds: self.filter_rebuilds.load(Ordering::Relaxed),
            user_bytes_written: self.user_bytes_written.load(Ordering::Relaxed),
            bytes_flushed: self.bytes_flushed.load(Ordering::Relaxed),
            bytes_compacted: self.bytes_compacted.load(Ordering::Relaxed),
            write_slowdowns: self.slowdowns.load(Ordering::Relaxed),
            write_stalls: self.stalls.load(Ordering::Relaxed),
            wal_tail_bytes_dropped: self.wal_tail_dropped,
            wal_records_salvaged: self.wal_salvaged,
            block_cache_bytes: self.cache.as_ref().map_or(0, |c| c.stats().usage as u64),
            memtable_bytes: std::iter::once(&sv.mem)
                .chain(&sv.imm)
                .map(|m| m.approximate_memory_bytes() as u64)
                .sum(),
            ..Stats::default()
        };
        s.base_level = compaction::shape(&sv.version, &self.opts).base;
        let writes = self
            .level_writes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for (level, files) in sv.version.levels.iter().enumerate() {
            let mut l = LevelStats {
                level,
                files: files.len(),
                io: self.retired_io[level].load(),
                writes: writes[level],
                ..LevelStats::default()
            };
            let mut weighted = 0.0;
            let mut policies: Vec<(String, usize)> = Vec::new();
            for f in files {
                l.io.add(&f.io.load());
                l.entries += f.meta.entries;
                l.file_bytes += f.meta.file_size;
                l.data_bytes += f.data_bytes();
                l.data_raw_bytes += f.table.properties().data_raw_size;
                let info = f.table.filter_info();
                let usable = info.filter(|x| x.is_usable());
                let bytes = usable.map_or(0, |x| x.memory_bytes as u64);
                l.filter_bytes += bytes;
                if f.filter_pinned() {
                    l.filter_pinned_bytes += bytes;
                }
                s.index_bytes += f.table.index_memory_bytes() as u64;
                match usable {
                    Some(x) => l.filtered_keys += x.key_count,
                    None => l.unfiltered_files += 1,
                }
                weighted += f.predicted_fpr() * f.meta.entries as f64;
                let name = match (info, &f.meta.filter) {
                    (Some(x), Some(m)) if x.is_usable() => {
                        format!("{}({} b/k, k={})", m.name, m.bits_per_key, x.num_probes)
                    }
                    (Some(_), Some(m)) => format!("{}(unusable)", m.name),
                    _ => "none".to_string(),
                };
                match policies.iter_mut().find(|(n, _)| *n == name) {
                    Some(p) => p.1 += 1,
                    None => policies.push((name, 1)),
                }
            }
            l.predicted_fpr = if l.entries > 0 {
                weighted / l.entries as f64
            } else {
                0.0
            };
            l.policies = policies
                .iter()
                .map(|(n, c)| format!("{n} x{c}"))
                .collect::<Vec<_>>()
                .join(", ");
            s.filter_bytes += l.filter_bytes;
            s.filter_pinned_bytes += l.filter_pinned_bytes;
            s.total.add(&l.io);
            s.levels.push(l);
        }
        s
    }
}

/// The counters of one lookup that a file's key range ruled out.
const KEY_RANGE_SKIP: IoCounters = IoCounters {
    files_considered: 1,
    key_range_skips: 1,
    ..IoCounters::ZERO
};

/// The counters of one lookup that a file's filter ruled out.
const FILTER_NEGATIVE: IoCounters = IoCounters {
    files_considered: 1,
    filter_checks: 1,
    filter_negatives: 1,
    ..IoCounters::ZERO
};

/// Upper bound of `Options::max_levels` (checked by `Options::validate`).
const MAX_LEVELS: usize = 32;

/// Sorts `order` (indexes into `keys`) into ascending key order: by the
/// keys' 8-byte prefixes `prefixes` (numbers, one pass of an integer sort),
/// then the rare runs of equal prefixes by whole key.
fn sort_by_user_key(order: &mut [usize], keys: &[&[u8]], prefixes: &[u64]) {
    let mut packed: Vec<(u64, usize)> = order.iter().map(|&i| (prefixes[i], i)).collect();
    packed.sort_unstable();
    for (o, &(_, i)) in order.iter_mut().zip(&packed) {
        *o = i;
    }
    let mut start = 0;
    while start < order.len() {
        let p = prefixes[order[start]];
        let end = start
            + order[start..]
                .iter()
                .take_while(|&&i| prefixes[i] == p)
                .count();
        if end - start > 1 {
            order[start..end].sort_unstable_by(|&a, &b| keys[a].cmp(keys[b]));
        }
        start = end;
    }
}

/// Records multi_get key `i`'s answer from a file: a value, or a tombstone
/// (`None`); either way the key is done.
fn settle(
    g: &GetCounters,
    out: &mut [Option<Bytes>],
    done: &mut [bool],
    i: usize,
    found: Option<Bytes>,
) {
    if let Some(v) = found {
        g.found.fetch_add(1, Ordering::Relaxed);
        out[i] = Some(v);
    }
    done[i] = true;
}

/// Starts loading what a probe of `hash` in file `i` of `level` (`f`) will
/// read: the filter's memory, and the file's counters.
#[inline]
fn prefetch_probe(v: &Version, level: usize, i: usize, f: &FileHandle, hash: u64) {
    if let Some(filter) = v.filter(level, i) {
        filter.prefetch(hash);
    }
    crate::filter::prefetch_read(&f.io);
}

/// A point lookup's internal key (the user key at the read's sequence
/// number), made when a table is first searched.
struct Lookup<'a> {
    user_key: &'a [u8],
    seq: u64,
    key: Option<Vec<u8>>,
}

impl<'a> Lookup<'a> {
    fn new(user_key: &'a [u8], seq: u64) -> Self {
        Lookup {
            user_key,
            seq,
            key: None,
        }
    }

    fn key(&mut self) -> &[u8] {
        self.key.get_or_insert_with(|| {
            key::make_internal_key(self.user_key, self.seq, ValueKind::Value)
        })
    }
}

/// What a probe of one file found: `Some(Some(v))` a value, `Some(None)` a
/// tombstone, `None` nothing.
type Probed = Option<Option<Bytes>>;

#[derive(Default)]
struct GetCost {
    blocks: u64,
    disk_blocks: u64,
    predicted: f64,
}

impl GetCost {
    fn add(&mut self, o: &GetCost) {
        self.blocks += o.blocks;
        self.disk_blocks += o.disk_blocks;
        self.predicted += o.predicted;
    }
}
