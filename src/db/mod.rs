//! The store: [`Db`] ties together the write-ahead log, memtables, SSTables,
//! the manifest and background compaction. See `docs/design.md` for the read,
//! write and compaction paths and the durability promises.
//!
//! This file holds the [`Db`] handle's methods and the state they share.
//! It is one file so that the public API reads in one place: about 57% of
//! it is the doc comments of those methods, with their examples.
//! The paths through it each have a file: `open.rs` (open, recover, start
//! the threads, close), `write.rs` (the writer queue, group commit, making
//! room), `get.rs` (get, multi_get, the probe of one file), `flush.rs`
//! (a frozen memtable written as a table), `background.rs` (the flush and
//! compaction threads), `install.rs` (the one path by which a flush, a
//! compaction, a filter rebuild or a load changes the tree), `ingest.rs`
//! (atomic bulk loads) and `counters.rs` (what is counted, and [`Stats`]),
//! `checkpoint/` (a copy of the store as of one moment), `keyspace.rs`
//! (named keyspaces: each an engine of its own sharing the store's WAL).
//! The parts they use are folders: `memtable/` (memtable, skip list,
//! arena), `version/` (versions, the version set and its MANIFEST,
//! recovery, file names, the OPTIONS file) and `compaction/` (picking,
//! running and writing compactions, table files, filter rebuilds); beside
//! them the WAL (`log/`, `wal.rs`), write batches,
//! iterators, merging and snapshots.

mod advise;
mod background;
#[cfg(test)]
mod background_tests;
pub mod batch;
pub(crate) mod caches;
pub mod checkpoint;
pub(crate) mod compaction;
mod counters;
mod current;
#[cfg(test)]
mod fault_tests;
mod flush;
mod get;
mod ingest;
mod inject;
mod install;
pub(crate) mod iter;
mod keyspace;
#[doc(hidden)]
pub mod log;
mod lookups;
pub(crate) mod memtable;
pub(crate) mod merge;
mod open;
mod refresh;
mod shared_budget;
mod snapshot;
pub(crate) mod version;
#[doc(hidden)]
pub mod wal;
mod write;

// The files of the version set keep their paths; like `log` and `wal` they
// are public for the project's tools and tests, outside the documented API.
#[doc(hidden)]
pub use version::{filename, manifest, options_file};
use version::{recovery, version_set};

use background::Job;
use counters::Counters;
use write::check_key;
pub(crate) use write::outside_write_limits;

pub use advise::{Advice, DesignCost};
pub use batch::{BatchOp, WriteBatch};
pub use checkpoint::CheckpointReport;
pub use filename::FileKind;
pub use ingest::IngestReport;
pub use iter::DbIter;
pub use keyspace::{Keyspace, keyspace_name_error};
#[doc(hidden)]
pub use log::{LogReader, LogWriter, Skipped, TailDropped};
#[doc(hidden)]
pub use manifest::{FileMeta, FilterMeta, Manifest, RecoverReport, RecoveredState, VersionEdit};
pub use shared_budget::{KeyspaceShare, KeyspacesAdvice};
pub use snapshot::Snapshot;
#[doc(hidden)]
pub use wal::{ReplayReport, Wal};
pub use write::WriteOptions;

use memtable::{LookupResult, MemTable};

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, RwLock, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::filter::key_hash;
use crate::fs::{FileLock, FileSystem};
use crate::key::{self, ValueKind};
use crate::options::{Options, ReadMode};
use crate::stats::{FileStats, IoCounters, LevelStats, LevelWrites, Stats};
use crate::tally::{AtomicIo, Get, GetCounters};
use caches::Caches;
use compaction::table_files::{NewTable, TableFiles, create_table};
use compaction::{Compaction, FileNumbers, OutputSize, Retention};
use iter::View;
use snapshot::SnapshotList;
use version::{FileHandle, Run, Slot, Version};
use version_set::VersionSet;

/// Largest accepted key, in bytes (64 KiB).
pub const MAX_KEY_LEN: usize = 64 << 10;
/// Largest accepted value, in bytes (32 MiB).
pub const MAX_VALUE_LEN: usize = 32 << 20;

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
    /// The block cache and the table cache the store's tables share.
    caches: Caches,
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
    sv: current::Current<SuperVersion>,
    /// The last version on which no filter rebuild was due, and the
    /// store's lookup count then ([`Inner::refilter_pick`]).
    refilter_clear: Mutex<(Weak<Version>, u64)>,
    last_seq: AtomicU64,
    /// Held by whoever runs a flush. Flushes and compactions run at once
    /// (RocksDB's flush and compaction pools): a flush only adds an L0 file
    /// newer than any compaction input, and a compaction only removes its
    /// own inputs, so each edit applies to whatever version is current.
    flush_work: Mutex<()>,
    /// Held by whoever runs a compaction (one at a time: they pick from the
    /// current version and do not track each other's inputs).
    compact_work: Mutex<()>,
    /// What the store counts, for [`Stats`].
    counters: Counters,
    /// When the store was opened, and the last write acknowledged since
    /// (milliseconds after it): filters are rebuilt when writes pause.
    opened_at: std::time::Instant,
    last_write_ms: AtomicU64,
    /// Set by `close`; iterators and snapshots hold it too.
    closed: Arc<AtomicBool>,
    /// Live snapshots: the versions flushes and compactions keep.
    snapshots: SnapshotList,
    /// Table files created ahead for compactions, and their clean-up run
    /// behind them, on the files thread (with `background_compaction`).
    table_files: Arc<TableFiles>,
    /// The keyspace this engine holds: 0 for the store itself (its default
    /// keyspace, and the owner of the WAL), another id for a keyspace's
    /// engine in its own directory.
    ks_id: u32,
    /// A keyspace's store, told when a flush may free logs (unset for the
    /// store itself).
    parent: OnceLock<Weak<Inner>>,
    /// The store's other keyspaces by id (empty in a keyspace's engine).
    /// Locked after the store's writer and state, never before them.
    children: RwLock<BTreeMap<u32, Arc<keyspace::Child>>>,
    /// Held shared by a checkpoint while it links or copies files, and
    /// exclusively by a dropped keyspace's removal of its directory: a
    /// keyspace's files outlive every checkpoint that took its version.
    checkpoint_files: RwLock<()>,
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
    /// `None` once a leader has taken the batch into its group; the flag
    /// asks for the group to be synced.
    waiting: VecDeque<(u64, Option<WriteBatch>, bool)>,
    done: HashMap<u64, Result<()>>,
}

/// A group's leader takes followers' batches until the group would pass this
/// many bytes past a small first batch, or `GROUP_MAX_BYTES` in all
/// (LevelDB's 128 KiB and 1 MiB): a small write is not delayed by a large
/// group.
const GROUP_SMALL_BATCH: usize = 128 << 10;
const GROUP_MAX_BYTES: usize = 1 << 20;

/// A frozen memtable awaiting its flush.
struct Frozen {
    mem: Arc<MemTable>,
    /// The number of its WAL.
    wal: u64,
    /// The store's last sequence when it was frozen: the largest it holds,
    /// and every write at or below it is in it or in an older one.
    last_seq: u64,
}

struct State {
    /// Frozen memtables awaiting flush, oldest first.
    imm: Vec<Frozen>,
    /// Every write at or below this sequence is in the current version's
    /// tables, and no write above it is (memtables are flushed oldest first,
    /// a load installs its tables with the memtables empty): the sequence a
    /// checkpoint of the current version holds.
    flushed_seq: u64,
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
    /// Stores `value` under `key`: anything `AsRef<[u8]>` (`&[u8]`, byte
    /// arrays, `Vec<u8>`, `&str`, `String`, `Bytes`). A key is 1 to
    /// [`MAX_KEY_LEN`] bytes and a value at most
    /// [`MAX_VALUE_LEN`]: an empty key, or a key
    /// or value over its limit, is [`Error::InvalidArgument`] and nothing is
    /// written. The same limits hold for every write and read of a key.
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
        let (key, value) = (key.as_ref(), value.as_ref());
        let mut b = WriteBatch::for_one(key.len() + value.len());
        b.put(key, value);
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
        let key = key.as_ref();
        let mut b = WriteBatch::for_one(key.len());
        b.delete(key);
        self.write(b)
    }

    /// Removes every key in `[start, end)` (RocksDB's `DeleteRange`): one
    /// range tombstone, whatever the number of keys. Readers at a sequence
    /// number (or snapshot) from before it still see the keys; compaction
    /// drops what it hides once no snapshot needs it. An empty or inverted
    /// range (`start >= end`) is [`Error::InvalidArgument`], and nothing is
    /// written; `start` and `end` obey the limits of keys.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// for k in ["a", "b", "c", "d"] {
    ///     db.put(k, "v")?;
    /// }
    /// db.delete_range("b", "d")?; // b and c; d is the end, not deleted
    /// let keys: Vec<_> = db.scan(..).map(|e| e.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, ["a", "d"]);
    /// assert!(db.delete_range("d", "b").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_range(&self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(start.as_ref(), end.as_ref());
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
        self.write_with(batch, WriteOptions::default())
    }

    /// [`Db::write`] with options for this write alone: with
    /// [`WriteOptions::sync`] the batch is on disk (fdatasync'd) before this
    /// returns, whatever the store's [`Options::sync_writes`] (LevelDB's and
    /// RocksDB's per-write `sync`). Writers committed in one group share one
    /// fdatasync, made when any of them asks for it.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// use bloomlsm::{WriteBatch, WriteOptions};
    ///
    /// let mut batch = WriteBatch::new();
    /// batch.put("order-17", "paid");
    /// db.write_with(batch, WriteOptions::default().sync(true))?; // durable now
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_with(&self, batch: WriteBatch, options: WriteOptions) -> Result<()> {
        Db::write_to(&self.inner, batch, options)
    }

    /// [`Db::write_with`] on the store `inner`.
    fn write_to(inner: &Arc<Inner>, batch: WriteBatch, options: WriteOptions) -> Result<()> {
        let mut user_bytes = 0;
        for op in batch.iter() {
            user_bytes += (op.key().len() + op.value().len()) as u64;
            if let Some(what) = write::op_outside_limits(&op) {
                return Err(Error::invalid(what));
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        if let Some(e) = inner.unknown_keyspace(&batch) {
            return Err(e);
        }
        inner.write_queued(batch, options.sync)?;
        // Counted once acknowledged: the denominator of write amplification.
        inner
            .counters
            .user_bytes_written
            .fetch_add(user_bytes, Ordering::Relaxed);
        let now = inner.opened_at.elapsed().as_millis() as u64;
        inner.last_write_ms.fetch_max(now, Ordering::Relaxed);
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
        self.inner.checked_get(key.as_ref(), None)
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
        self.inner.checked_multi_get(keys, None)
    }

    /// The live entries with user keys in `range`, in key order, as of now:
    /// `db.scan(..)` for everything, `db.scan("a".."m")`, `db.scan(k..)`,
    /// with keys of any `AsRef<[u8]>` type (see [`ScanRange`](iter::ScanRange)).
    /// A range bounded at both ends skips the files whose range filter
    /// ([`Options::range_filter_bits_per_key`](crate::Options::range_filter_bits_per_key))
    /// holds no key point between its ends' points (counted in
    /// [`IoCounters::range_checks`](crate::IoCounters::range_checks) and the
    /// counters after it); so does [`scan_prefix`](Self::scan_prefix) when
    /// no prefix filter applies.
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
        self.inner.scan_range(range, None)
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
        self.inner.scan_prefix(prefix.as_ref(), None)
    }

    /// A [`Snapshot`] of the store as of now: reads and scans through it see
    /// exactly the writes made before this call. Until it is dropped,
    /// flushes and compactions keep the versions it sees. It ends with the
    /// store (later reads through it return [`Error::Closed`]) and is not
    /// persisted across a reopen.
    ///
    /// A snapshot is of the whole store, every keyspace at one sequence
    /// number: its own methods read the default keyspace, and
    /// [`Keyspace::get_at`], [`Keyspace::multi_get_at`] and
    /// [`Keyspace::scan_at`] read any other keyspace at it. This call cannot
    /// fail; [`Keyspace::snapshot`], the same snapshot taken through a
    /// keyspace handle, returns a `Result` because that keyspace may have
    /// been dropped.
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
    /// let entries: u64 = s.levels.iter().map(|l| l.entries).sum();
    /// assert_eq!(entries, 1); // older versions dropped
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact(&self) -> Result<()> {
        self.inner.compact_keyspace(&self.inner)
    }

    /// Runs, on the calling thread, every flush and compaction that is due,
    /// until none is. With `background_compaction` off this makes the shape of
    /// the store a function of the writes alone (the `bench` command uses it so
    /// that every filter configuration gets the same levels).
    ///
    /// ```
    /// use bloomlsm::{Db, Options};
    ///
    /// let opts = Options::default().background_compaction(false);
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), opts)?;
    /// db.put("apple", "red")?;
    /// db.maintain()?; // flushes the memtable, then runs any due compaction
    /// assert_eq!(db.stats().flushes, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn maintain(&self) -> Result<()> {
        self.inner.maintain_keyspace(&self.inner, false)
    }

    /// Brings the store to where its background threads would leave it
    /// once writes stop, on the calling thread, before it returns: flushes
    /// the memtable, runs every due compaction, then the work the
    /// compaction thread keeps for an idle store: the merge of L0 files
    /// below its trigger (with `background_compaction` and
    /// `idle_l0_compaction`) and filter rebuilds. The call stands for the
    /// end of the writes, so it does not wait the second without a write
    /// that the background thread waits. RocksDB's `WaitForCompact`, and
    /// db_bench's `waitforcompaction`.
    ///
    /// ```
    /// use bloomlsm::{Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// for round in 0..3 {
    ///     db.put(format!("key{round}"), "value")?;
    ///     db.flush()?;
    /// }
    /// db.wait_for_compaction()?;
    /// assert_eq!(db.stats().levels[0].files, 0); // L0 merged down
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_compaction(&self) -> Result<()> {
        self.inner.maintain_keyspace(&self.inner, true)
    }

    /// Rebuilds, before it returns, the filters of the files whose
    /// level's filter allocation moved since they were written, until the
    /// store spends what its [`crate::FilterOptions`] say, to within 0.5%
    /// (before filters are rounded up to whole cache lines). Files are
    /// rewritten up to eight at a time, on threads of their own: a rewrite
    /// mostly waits on the device. Returns how many files it rewrote. Only
    /// filter configurations that depend on the tree's shape ever need it
    /// (the Monkey allocation, `skip_last_level`), the workload-aware
    /// allocation (whose files it rewrites to the bits the store's lookup
    /// rates give them now), and a store reopened with another filter
    /// design; the compaction thread does the same by itself once the store
    /// has gone a second without a write. After a bulk load,
    /// call it to have the store at its budget now (`bench` does).
    ///
    /// ```
    /// use bloomlsm::{Db, FilterKind, FilterOptions, Options};
    ///
    /// let opts = Options::default().filters(FilterOptions::monkey(FilterKind::Blocked512, 10.0));
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), opts)?;
    /// db.put("apple", "red")?;
    /// db.rebuild_filters()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rebuild_filters(&self) -> Result<u64> {
        self.inner.rebuild_filters()
    }

    /// [`Db::rebuild_filters`] of several stores at once, each with its
    /// own filter design: a file that several of them hold (the same file
    /// under hard links, as [`Db::checkpoint`]s of one store hold its
    /// tables) is read and checked once, and its new tables, one per store
    /// that needs one, are written from that read. Made for studies of
    /// many filter designs over one data set: checkpoint a loaded store
    /// once per design, open each with its design, and rebuild them
    /// together; the device then reads the data once, not once per design.
    /// Returns each store's count, in order.
    ///
    /// A store named twice is [`Error::InvalidArgument`]. A file that
    /// cannot be shared (another file under the same number, or a platform
    /// where it cannot be told) is read for its store alone. After a
    /// failure no rewrite starts; a store whose batch lacks a file installs
    /// none of it and is poisoned, as by [`Db::rebuild_filters`], the
    /// others install theirs, and the first error is returned.
    ///
    /// ```
    /// use bloomlsm::{Db, FilterOptions, FilterPolicy, Options};
    ///
    /// let plain = Options::default().filters(FilterOptions::none());
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path().join("base"), plain)?;
    /// db.put("apple", "red")?;
    /// db.compact()?;
    /// let mut stores = Vec::new();
    /// for (name, bits) in [("six", 6.0), ("ten", 10.0)] {
    ///     db.checkpoint(dir.path().join(name))?;
    ///     let design = FilterOptions::uniform(Some(FilterPolicy::blocked512(bits)));
    ///     let mut opts = Options::default().filters(design);
    ///     opts.use_stored_design = false;
    ///     stores.push(Db::open(dir.path().join(name), opts)?);
    /// }
    /// let rebuilt = Db::rebuild_filters_together(&[&stores[0], &stores[1]])?;
    /// assert_eq!(rebuilt, [1, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rebuild_filters_together(stores: &[&Db]) -> Result<Vec<u64>> {
        let inners: Vec<&Inner> = stores.iter().map(|d| &*d.inner).collect();
        Inner::rebuild_filters_together(&inners)
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
        self.inner.file_stats()
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
        self.inner.reset_stats();
    }

    /// Checks every block of every live file, of every keyspace.
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
        let children = self.inner.children();
        let engines = std::iter::once(&self.inner).chain(children.values().map(|c| c.inner()));
        for inner in engines {
            for f in inner.super_version().version.levels.iter().flatten() {
                f.table.verify_all()?;
            }
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
    /// let bloom = Options::default().filters(FilterOptions::uniform(Some(FilterPolicy::bloom(12.0))));
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
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("path", &self.inner.dir)
            .finish_non_exhaustive()
    }
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
    /// The versions flushes and compactions keep: those the live snapshots
    /// see. A keyspace's engine keeps those of its store's snapshots, which
    /// read every keyspace at their sequence.
    fn retention(&self) -> Retention {
        let mut seqs = self.snapshots.sequences();
        if self.ks_id != 0
            && let Some(store) = self.parent.get().and_then(Weak::upgrade)
        {
            seqs.extend(store.snapshots.sequences());
            seqs.sort_unstable();
            seqs.dedup();
        }
        Retention::new(seqs)
    }

    fn super_version(&self) -> Arc<SuperVersion> {
        self.sv.load()
    }
}
