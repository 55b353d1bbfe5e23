//! Named keyspaces of one store (RocksDB's column families): each with its
//! own options and filter design, its memtables and its tree of tables in a
//! directory of its own (`keyspace-NNNNNN/`: tables, MANIFEST, OPTIONS), all
//! sharing the store's one WAL, sequence numbers, writer queue and caches.
//! A [`WriteBatch`] may span keyspaces and is applied atomically across
//! them: it is one WAL record.
//!
//! A keyspace's engine is an [`Inner`] without a WAL: the store's writer
//! logs each batch, then inserts each keyspace's operations into that
//! keyspace's memtable. Every freeze freezes every non-empty memtable of
//! every keyspace and starts a new log (`write.rs`), so a log is deleted once
//! each keyspace has flushed what was frozen from it ([`Inner::retire_logs`]).
//! Each keyspace's MANIFEST records the sequence its tables hold up to;
//! replay skips the logged writes at or below it. The store's MANIFEST names
//! the keyspaces: creating and dropping one is an edit there, durable before
//! the call returns; a dropped keyspace's directory is deleted after its
//! edit (or at the next open). See docs/design.md, "Keyspaces".
//!
//! It is one file because it is one feature, from the public [`Keyspace`]
//! handle (its reads and writes, a third of the file) to the store's
//! creating and dropping keyspaces and retiring their logs; about 27% of it
//! is doc comments.

use super::*;
use crate::db::recovery::{KeyspaceRecovery, remove_keyspace_dir};

/// The name of the store's default keyspace (the store itself, id 0).
pub(crate) const DEFAULT_NAME: &str = "default";

/// A keyspace the store holds open: its engine, with its threads.
pub(crate) struct Child {
    pub(crate) id: u32,
    pub(crate) name: Arc<str>,
    db: Db,
    /// Set when the keyspace is dropped: every handle's call then fails.
    dropped: Arc<AtomicBool>,
}

impl Child {
    /// Starts the engine of a recovered keyspace; `last_sequence` is the
    /// store's.
    pub(crate) fn start(k: KeyspaceRecovery, last_sequence: u64) -> Result<Child> {
        let (id, name) = (k.id, k.name);
        let db = Db::start(k.dir, k.opts, k.caches, None, k.rec, id)?;
        db.inner.last_seq.fetch_max(last_sequence, Ordering::AcqRel);
        Ok(Child {
            id,
            name: name.into(),
            db,
            dropped: Arc::new(AtomicBool::new(false)),
        })
    }

    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.db.inner
    }

    /// Stops the engine's threads (its store is closing, or it is dropped).
    pub(crate) fn shutdown(&self) -> Result<()> {
        self.db.shutdown()
    }
}

/// Recovers keyspace `id` of the store in `dir` from its directory, with the
/// design, memtable size and L0 triggers its OPTIONS file records and the
/// store's other options.
pub(crate) fn recover_keyspace(
    dir: &Path,
    opts: &Options,
    caches: &Caches,
    id: u32,
    name: &str,
    read_only: bool,
) -> Result<KeyspaceRecovery> {
    let kdir = filename::keyspace_dir(dir, id);
    let fs = opts.fs.clone();
    if fs.file_len(&filename::current_file(&kdir)).is_err() {
        return Err(Error::corruption(
            &kdir,
            0,
            format!(
                "the store's MANIFEST names keyspace {name:?} (id {id}); its directory holds no \
                 CURRENT"
            ),
        ));
    }
    let mut kopts = opts.clone();
    kopts.use_stored_design = true;
    kopts.create_if_missing = false;
    let design = options_file::settle(fs.as_ref(), &kdir, &mut kopts)?;
    let replaced = opts.keyspace_filters.iter().rev().find(|(n, _)| n == name);
    if let Some((_, filters)) = replaced {
        kopts.filters = filters.clone();
    }
    open::check_options(&kopts)?;
    let kcaches = caches.for_keyspace(id);
    let none = |_: u32, _: &str| -> Result<KeyspaceRecovery> {
        Err(Error::invalid("a keyspace holds no keyspaces"))
    };
    let rec = if read_only {
        recovery::recover_read_only(&kdir, &kopts, kcaches.clone(), &none)?
    } else {
        recovery::recover(&kdir, &kopts, kcaches.clone(), false, &none)?
    };
    if replaced.is_some() && !read_only {
        design.record(fs.as_ref(), &kdir, &kopts, false)?;
    }
    Ok(KeyspaceRecovery {
        id,
        name: name.to_string(),
        dir: kdir,
        opts: kopts,
        caches: kcaches,
        rec,
    })
}

/// Why `name` cannot name a new keyspace, if it cannot, in the words
/// [`Db::create_keyspace`] fails with: empty, over
/// [`MAX_KEYSPACE_NAME`](manifest::MAX_KEYSPACE_NAME) bytes, `default`, or
/// holding a control character. (Whether the store already has a keyspace
/// of that name is the store's to say.)
///
/// ```
/// use bloomlsm::db::keyspace_name_error;
/// assert_eq!(keyspace_name_error("users"), None);
/// assert_eq!(keyspace_name_error("").as_deref(), Some("an empty keyspace name"));
/// assert!(keyspace_name_error("default").is_some());
/// ```
pub fn keyspace_name_error(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("an empty keyspace name".into())
    } else if name.len() > manifest::MAX_KEYSPACE_NAME {
        Some(format!(
            "a keyspace name of {} bytes is over the {}-byte limit",
            name.len(),
            manifest::MAX_KEYSPACE_NAME
        ))
    } else if name == DEFAULT_NAME {
        Some(format!("the keyspace {DEFAULT_NAME:?} always exists"))
    } else {
        name.chars()
            .any(char::is_control)
            .then(|| format!("keyspace name {name:?} holds a control character"))
    }
}

/// A handle on one keyspace of a store ([`Db::create_keyspace`],
/// [`Db::keyspace`]): cheap to clone, `Send + Sync`. Writes through it (and
/// through [`WriteBatch::put_in`]) share the store's WAL and writer queue;
/// reads see its own memtables and tables. Once the keyspace is dropped
/// every call fails with [`Error::InvalidArgument`] naming it.
///
/// ```
/// use bloomlsm::{Db, FilterOptions, FilterPolicy, Options};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default())?;
/// let design = Options::default().filters(FilterOptions::uniform(Some(FilterPolicy::bloom(14.0))));
/// let users = db.create_keyspace("users", design)?;
/// users.put("u1", "ann")?;
/// db.put("u1", "not a user")?; // the default keyspace: another key space
/// assert_eq!(users.get("u1")?.as_deref(), Some(&b"ann"[..]));
/// db.close()?;
///
/// let db = Db::open(dir.path(), Options::default())?;
/// let users = db.keyspace("users")?; // its design came back with it
/// assert_eq!(users.options().filters.policy, Some(FilterPolicy::bloom(14.0)));
/// assert_eq!(db.keyspace_names(), ["default", "users"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Keyspace {
    id: u32,
    name: Arc<str>,
    /// The store: the WAL and the writer queue.
    store: Arc<Inner>,
    /// The keyspace's engine (the store's own for the default keyspace).
    pub(super) inner: Arc<Inner>,
    dropped: Arc<AtomicBool>,
}

impl std::fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyspace")
            .field("name", &self.name)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Keyspace {
    /// The keyspace's id in the store (0 for the default keyspace), as its
    /// operations carry it in the WAL.
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// The keyspace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `Ok` while the keyspace exists and its store is open.
    pub(super) fn check(&self) -> Result<()> {
        if self.dropped.load(Ordering::Acquire) {
            return Err(Error::invalid(format!(
                "keyspace {:?} was dropped",
                &*self.name
            )));
        }
        if self.store.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// One operation of `bytes` bytes of keys and values, written by `f`.
    fn write_one(&self, bytes: usize, f: impl FnOnce(&mut WriteBatch)) -> Result<()> {
        self.check()?;
        let mut b = WriteBatch::for_one(bytes);
        f(&mut b);
        Db::write_to(&self.store, b, WriteOptions::default())
    }

    /// Stores `value` under `key` in this keyspace ([`Db::put`]).
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.write_one(key.len() + value.len(), |b| b.put_to(self.id, key, value))
    }

    /// Removes `key` from this keyspace ([`Db::delete`]).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let key = key.as_ref();
        self.write_one(key.len(), |b| b.delete_to(self.id, key))
    }

    /// Removes every key in `[start, end)` of this keyspace
    /// ([`Db::delete_range`]).
    pub fn delete_range(&self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let (start, end) = (start.as_ref(), end.as_ref());
        self.write_one(start.len() + end.len(), |b| {
            b.delete_range_to(self.id, start, end)
        })
    }

    /// The value of `key` in this keyspace, or `None` ([`Db::get`]).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        self.check()?;
        self.inner.checked_get(key.as_ref(), None)
    }

    /// The values of `keys` in this keyspace ([`Db::multi_get`]).
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Bytes>>> {
        self.check()?;
        self.inner.checked_multi_get(keys, None)
    }

    /// The live entries of this keyspace with keys in `range`, in key order
    /// ([`Db::scan`]). On a dropped keyspace the iterator yields one error.
    pub fn scan(&self, range: impl iter::ScanRange) -> DbIter {
        self.checked_iter(self.inner.scan_range(range, None), None)
    }

    /// The live entries of this keyspace whose keys start with `prefix`
    /// ([`Db::scan_prefix`]).
    pub fn scan_prefix(&self, prefix: impl AsRef<[u8]>) -> DbIter {
        self.checked_iter(self.inner.scan_prefix(prefix.as_ref(), None), None)
    }

    /// `it`, or, on a dropped keyspace or with a snapshot of another store,
    /// an iterator that yields that one error.
    fn checked_iter(&self, it: DbIter, snapshot: Option<&Snapshot>) -> DbIter {
        let checked = self
            .check()
            .and_then(|()| snapshot.map_or(Ok(()), |s| self.check_snapshot(s)));
        match checked {
            Ok(()) => it,
            Err(e) => it.failing(e),
        }
    }

    /// A snapshot of the store ([`Db::snapshot`]): it reads this keyspace
    /// and every other one at the same moment ([`Keyspace::get_at`],
    /// [`Keyspace::scan_at`]), and each keyspace's flushes and compactions
    /// keep what it sees.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// let users = db.create_keyspace("users", bloomlsm::Options::default())?;
    /// let logs = db.create_keyspace("logs", bloomlsm::Options::default())?;
    /// let mut b = bloomlsm::WriteBatch::new();
    /// b.put_in(&users, "u1", "ann");
    /// b.put_in(&logs, "1", "u1 created");
    /// db.write(b)?;
    /// let snap = users.snapshot()?;
    /// users.delete("u1")?;
    /// logs.put("2", "u1 deleted")?;
    /// users.compact()?; // keeps "ann" for the snapshot
    /// assert_eq!(users.get_at(&snap, "u1")?.as_deref(), Some(&b"ann"[..]));
    /// assert_eq!(logs.scan_at(&snap, ..).count(), 1);
    /// assert_eq!(db.snapshot().sequence(), snap.sequence() + 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self) -> Result<Snapshot> {
        self.check()?;
        Ok(Snapshot::new(self.store.clone()))
    }

    /// `Ok` when `snapshot` is of this keyspace's store.
    fn check_snapshot(&self, snapshot: &Snapshot) -> Result<()> {
        if snapshot.is_of(&self.store) {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "the snapshot is of another store than keyspace {:?}",
                &*self.name
            )))
        }
    }

    /// The value of `key` in this keyspace as of `snapshot` (taken by
    /// [`Db::snapshot`] or [`Keyspace::snapshot`] of any keyspace of the
    /// store), or `None`: [`Snapshot::get`] for this keyspace. A snapshot
    /// of another store is [`Error::InvalidArgument`]; a keyspace created
    /// after the snapshot reads empty at it.
    pub fn get_at(&self, snapshot: &Snapshot, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        self.check()?;
        self.check_snapshot(snapshot)?;
        self.inner
            .checked_get(key.as_ref(), Some(snapshot.sequence()))
    }

    /// The values of `keys` in this keyspace as of `snapshot`
    /// ([`Keyspace::get_at`], [`Snapshot::multi_get`]).
    pub fn multi_get_at<K: AsRef<[u8]>>(
        &self,
        snapshot: &Snapshot,
        keys: &[K],
    ) -> Result<Vec<Option<Bytes>>> {
        self.check()?;
        self.check_snapshot(snapshot)?;
        self.inner
            .checked_multi_get(keys, Some(snapshot.sequence()))
    }

    /// The live entries of this keyspace in `range` as of `snapshot`, in
    /// key order ([`Keyspace::get_at`], [`Snapshot::scan`]). On a dropped
    /// keyspace, or with a snapshot of another store, the iterator yields
    /// one error.
    pub fn scan_at(&self, snapshot: &Snapshot, range: impl iter::ScanRange) -> DbIter {
        let it = self.inner.scan_range(range, Some(snapshot.sequence()));
        self.checked_iter(it, Some(snapshot))
    }

    /// Writes this keyspace's memtable to an L0 file and waits until it is
    /// on disk ([`Db::flush`]). Every other keyspace's non-empty memtable is
    /// frozen with it (they share the log that is retired).
    pub fn flush(&self) -> Result<()> {
        self.check()?;
        self.store.flush_keyspace(&self.inner)
    }

    /// Flushes, then merges this keyspace's levels ([`Db::compact`]).
    pub fn compact(&self) -> Result<()> {
        self.check()?;
        self.store.compact_keyspace(&self.inner)
    }

    /// Flushes this keyspace's memtable, then runs, on the calling thread,
    /// every compaction of this keyspace that is due, until none is
    /// ([`Db::maintain`]).
    pub fn maintain(&self) -> Result<()> {
        self.check()?;
        self.store.maintain_keyspace(&self.inner, false)
    }

    /// Brings this keyspace to where the background threads would leave it
    /// once writes stop ([`Db::wait_for_compaction`]).
    pub fn wait_for_compaction(&self) -> Result<()> {
        self.check()?;
        self.store.maintain_keyspace(&self.inner, true)
    }

    /// Rebuilds, before it returns, the filters of this keyspace's
    /// files whose level's filter allocation moved since they were written,
    /// with this keyspace's own filter design; returns how many files it
    /// rewrote ([`Db::rebuild_filters`]).
    pub fn rebuild_filters(&self) -> Result<u64> {
        self.check()?;
        self.inner.rebuild_filters()
    }

    /// Writes `records` (key, value) into this keyspace as one atomic load
    /// ([`Db::ingest`]): all of them or, after an error or a crash, none.
    /// Its sequence numbers are taken under the store's writer lock, after
    /// every keyspace's memtable is flushed: the load is ordered with the
    /// writes to every keyspace, and a snapshot taken before it does not
    /// see it.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// let users = db.create_keyspace("users", bloomlsm::Options::default())?;
    /// let before = db.snapshot();
    /// let records = (0..1000).map(|i| Ok((format!("u{i:04}"), format!("user {i}"))));
    /// assert_eq!(users.ingest(records)?.records, 1000);
    /// assert_eq!(users.get("u0999")?.as_deref(), Some(&b"user 999"[..]));
    /// assert_eq!(users.get_at(&before, "u0999")?, None);
    /// assert_eq!(db.get("u0999")?, None); // the default keyspace
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ingest<K, V>(
        &self,
        records: impl IntoIterator<Item = Result<(K, V)>>,
    ) -> Result<IngestReport>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        self.check()?;
        self.store
            .ingest(&self.inner, &|| self.check(), &mut records.into_iter())
    }

    /// Counters and the shape of this keyspace ([`Db::stats`]); once it is
    /// dropped, as it was when dropped.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// Zeroes this keyspace's lookup counters ([`Db::reset_stats`]).
    pub fn reset_stats(&self) {
        self.inner.reset_stats();
    }

    /// Per-file shape and counters of this keyspace ([`Db::file_stats`]).
    pub fn file_stats(&self) -> Vec<FileStats> {
        self.inner.file_stats()
    }

    /// The options in force for this keyspace: its own design (the one
    /// given to [`Db::create_keyspace`], kept in its directory's OPTIONS
    /// file) and the store's other options.
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }
}

impl Db {
    /// Creates the keyspace `name` with the design of `options` (filters,
    /// compression, file and level sizes, prefix extractor, range filter:
    /// what the store's OPTIONS file records) and its memtable size and L0
    /// triggers, all kept in the keyspace's OPTIONS file across reopens;
    /// its other options follow the store's. Durable when this returns.
    /// Refused: an existing name, `"default"`, an empty name or one over 255
    /// bytes or holding a control character, and a store open read-only.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// let logs = db.create_keyspace("logs", bloomlsm::Options::default())?;
    /// logs.put("2024-01-01", "started")?;
    /// assert!(db.create_keyspace("logs", bloomlsm::Options::default()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_keyspace(&self, name: &str, options: Options) -> Result<Keyspace> {
        if let Some(why) = keyspace_name_error(name) {
            return Err(Error::invalid(why));
        }
        let inner = &self.inner;
        let w = inner.open_writer()?;
        if w.wal.is_none() {
            return Err(Error::ReadOnly);
        }
        let id = {
            let st = inner.state();
            if let Some(e) = &st.bg_error {
                return Err(e.duplicate());
            }
            if st.vs.keyspaces().values().any(|n| n == name) {
                return Err(Error::invalid(format!("keyspace {name:?} already exists")));
            }
            st.vs.next_keyspace()
        };
        let fs = inner.opts.fs.clone();
        let kdir = filename::keyspace_dir(&inner.dir, id);
        // A directory left by a creation that failed before its edit.
        remove_keyspace_dir(fs.as_ref(), &kdir);
        fs.create_dir_all(&kdir)
            .map_err(|e| Error::io(format!("create {}", kdir.display()), e))?;
        let mut kopts = options;
        kopts.fs = fs.clone();
        kopts.read_mode = inner.opts.read_mode;
        kopts.create_if_missing = true;
        kopts.use_stored_design = true;
        open::check_options(&kopts)?;
        let design = options_file::settle(fs.as_ref(), &kdir, &mut kopts)?;
        let kcaches = inner.caches.for_keyspace(id);
        let none = |_: u32, _: &str| -> Result<KeyspaceRecovery> {
            Err(Error::invalid("a keyspace holds no keyspaces"))
        };
        let rec = recovery::recover(&kdir, &kopts, kcaches.clone(), false, &none)?;
        design.record(fs.as_ref(), &kdir, &kopts, true)?;
        // Its memtable size and L0 triggers too: they apply at every open.
        let mut file = options_file::read(fs.as_ref(), &kdir)?
            .ok_or_else(|| Error::corruption(&kdir, 0, "a new keyspace's OPTIONS is missing"))?;
        file.tuning = options_file::Tuning::of(&kopts);
        options_file::write(fs.as_ref(), &kdir, &file)?;
        filename::sync_dir_in(fs.as_ref(), &inner.dir)?;
        let seq = inner.last_seq.load(Ordering::Acquire);
        let child = Child::start(
            KeyspaceRecovery {
                id,
                name: name.to_string(),
                dir: kdir,
                opts: kopts,
                caches: kcaches,
                rec,
            },
            seq,
        )?;
        let _ = child.inner().parent.set(Arc::downgrade(inner));
        // The keyspace exists once this edit is durable. It records the
        // default keyspace's flushed sequence too: from now on logs may
        // outlive the default keyspace's flushes.
        let st = inner.state();
        let edit = VersionEdit {
            new_keyspaces: vec![(id, name.to_string())],
            next_keyspace: Some(id.saturating_add(1)),
            flushed_sequence: Some(st.flushed_seq),
            ..VersionEdit::default()
        };
        inner
            .log_edit_or_poison(st, edit, seq, "creating a keyspace")
            .inspect_err(|_| {
                let _ = child.shutdown();
            })?;
        let child = Arc::new(child);
        inner
            .children
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, child.clone());
        drop(w);
        Ok(Keyspace::of_child(inner, &child))
    }

    /// A handle on the keyspace `name` (`"default"` is the store's own).
    /// An unknown name is [`Error::InvalidArgument`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// db.create_keyspace("users", bloomlsm::Options::default())?;
    /// let users = db.keyspace("users")?;
    /// let default = db.keyspace("default")?;
    /// default.put("k", "v")?;
    /// assert_eq!(db.get("k")?.as_deref(), Some(&b"v"[..]));
    /// assert!(db.keyspace("nope").is_err());
    /// # drop(users);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keyspace(&self, name: &str) -> Result<Keyspace> {
        let inner = &self.inner;
        if name == DEFAULT_NAME {
            return Ok(Keyspace {
                id: 0,
                name: DEFAULT_NAME.into(),
                store: inner.clone(),
                inner: inner.clone(),
                dropped: Arc::new(AtomicBool::new(false)),
            });
        }
        let children = inner.children();
        match children.values().find(|c| &*c.name == name) {
            Some(c) => Ok(Keyspace::of_child(inner, c)),
            None => Err(Error::invalid(format!("no keyspace named {name:?}"))),
        }
    }

    /// Drops the keyspace `name`: durable when this returns (an edit of the
    /// store's MANIFEST), then its files are deleted. Handles on it fail
    /// from then on. The default keyspace cannot be dropped; an unknown name
    /// is [`Error::InvalidArgument`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// let tmp = db.create_keyspace("tmp", bloomlsm::Options::default())?;
    /// tmp.put("k", "v")?;
    /// db.drop_keyspace("tmp")?;
    /// assert!(tmp.get("k").is_err()); // "keyspace \"tmp\" was dropped"
    /// assert!(db.drop_keyspace("default").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        if name == DEFAULT_NAME {
            return Err(Error::invalid(format!(
                "the {DEFAULT_NAME:?} keyspace cannot be dropped"
            )));
        }
        let inner = &self.inner;
        let w = inner.open_writer()?;
        if w.wal.is_none() {
            return Err(Error::ReadOnly);
        }
        let Some(child) = inner
            .children()
            .values()
            .find(|c| &*c.name == name)
            .cloned()
        else {
            return Err(Error::invalid(format!("no keyspace named {name:?}")));
        };
        {
            let st = inner.state();
            if let Some(e) = &st.bg_error {
                return Err(e.duplicate());
            }
            let edit = VersionEdit {
                dropped_keyspaces: vec![child.id],
                ..VersionEdit::default()
            };
            let seq = inner.last_seq.load(Ordering::Acquire);
            inner.log_edit_or_poison(st, edit, seq, "dropping a keyspace")?;
        }
        child.dropped.store(true, Ordering::Release);
        inner
            .children
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&child.id);
        drop(w);
        // Its engine stops; its frozen memtables no longer hold logs back.
        let _ = child.shutdown();
        let dir = child.inner().dir.clone();
        {
            // A checkpoint that took this keyspace's version links its
            // tables first.
            let _files = inner
                .checkpoint_files
                .write()
                .unwrap_or_else(|p| p.into_inner());
            remove_keyspace_dir(inner.fs(), &dir);
        }
        let _ = filename::sync_dir_in(inner.fs(), &inner.dir);
        inner.retire_logs()
    }

    /// The names of the store's keyspaces: `"default"` first, then the
    /// others in the order they were created.
    pub fn keyspace_names(&self) -> Vec<String> {
        std::iter::once(DEFAULT_NAME.to_string())
            .chain(self.inner.children().values().map(|c| c.name.to_string()))
            .collect()
    }
}

impl Keyspace {
    fn of_child(store: &Arc<Inner>, c: &Arc<Child>) -> Keyspace {
        Keyspace {
            id: c.id,
            name: c.name.clone(),
            store: store.clone(),
            inner: c.inner().clone(),
            dropped: c.dropped.clone(),
        }
    }
}

impl Inner {
    /// The store's other keyspaces, by id (a copy: the lock is not held).
    pub(crate) fn children(&self) -> BTreeMap<u32, Arc<Child>> {
        self.children
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Why `batch` cannot be written, if it names a keyspace the store does
    /// not hold (dropped, or another store's).
    pub(crate) fn unknown_keyspace(&self, batch: &WriteBatch) -> Option<Error> {
        let ids = batch.keyspace_ids();
        if ids.is_empty() {
            return None;
        }
        let children = self.children.read().unwrap_or_else(|p| p.into_inner());
        ids.iter().find(|id| !children.contains_key(id)).map(|id| {
            Error::invalid(format!(
                "the batch writes to keyspace {id}, which was dropped (or is another store's)"
            ))
        })
    }

    /// Freezes every keyspace's non-empty memtable (the store's log is
    /// being switched: `wal` is the log they were written to). The caller
    /// holds the store's writer lock and its state.
    pub(crate) fn freeze_children(&self, wal: u64, seq: u64) {
        for c in self.children().values() {
            let k = c.inner();
            let mut kw = k.writer.lock().unwrap_or_else(|p| p.into_inner());
            if kw.mem.is_empty() {
                continue;
            }
            let mut kst = k.state();
            let frozen = std::mem::replace(
                &mut kw.mem,
                Arc::new(MemTable::for_write_buffer(k.opts.write_buffer_size)),
            );
            kst.imm.push(Frozen {
                mem: frozen,
                wal,
                last_seq: seq,
            });
            k.install_super_version(&kst, kw.mem.clone());
            drop(kst);
            k.cv.notify_all();
        }
    }

    /// The oldest log any keyspace still needs: its oldest frozen
    /// memtable's, or the active log (`default_need` for the default
    /// keyspace). The caller holds the store's state.
    pub(crate) fn log_need(&self, default_need: u64) -> u64 {
        self.children()
            .values()
            .filter_map(|c| c.inner().state().imm.first().map(|f| f.wal))
            .fold(default_need, u64::min)
    }

    /// Advances the store's log number to the oldest log a keyspace still
    /// needs, and deletes the logs below it (after a keyspace's flush, or a
    /// drop). On a keyspace's engine, asks its store.
    pub(crate) fn retire_logs(&self) -> Result<()> {
        if self.ks_id != 0 {
            return match self.parent.get().and_then(Weak::upgrade) {
                Some(p) => p.retire_logs(),
                None => Ok(()),
            };
        }
        let st = self.state();
        if st.vs.is_read_only() {
            return Ok(());
        }
        let default_need = st.imm.first().map_or(st.wal_number, |f| f.wal);
        let need = self.log_need(default_need);
        let old = st.vs.log_number();
        if need <= old {
            return Ok(());
        }
        let edit = VersionEdit {
            log_number: Some(need),
            ..VersionEdit::default()
        };
        let seq = self.last_seq.load(Ordering::Acquire);
        self.log_edit_or_poison(st, edit, seq, "retiring logs")?;
        self.delete_logs(old, need);
        Ok(())
    }

    /// Deletes the logs numbered in `[from, to)` (those that exist).
    pub(crate) fn delete_logs(&self, from: u64, to: u64) {
        if to.saturating_sub(from) > 1024 {
            // Far apart: list the directory rather than try each number.
            if let Ok(files) = filename::list_store_files_in(self.fs(), &self.dir) {
                for (kind, n, path) in files {
                    if kind == FileKind::Log && (from..to).contains(&n) {
                        let _ = self.fs().remove_file(&path);
                    }
                }
            }
            return;
        }
        for n in from..to {
            let _ = self.fs().remove_file(&filename::log_file(&self.dir, n));
        }
    }

    /// Flushes keyspace `k` (this store for the default keyspace), then
    /// merges its levels ([`Db::compact`], [`Keyspace::compact`]).
    pub(crate) fn compact_keyspace(&self, k: &Arc<Inner>) -> Result<()> {
        self.flush_keyspace(k)?;
        k.compact_all()
    }

    /// Flushes keyspace `k`, then runs its due compactions on the calling
    /// thread until none is ([`Db::maintain`], [`Keyspace::maintain`]).
    ///
    /// With `finish`, it also runs the work the compaction thread keeps for
    /// an idle store (the L0 merge below its trigger and filter rebuilds)
    /// without waiting for the store to go quiet: the call says the writes
    /// are over ([`Db::wait_for_compaction`]).
    pub(crate) fn maintain_keyspace(&self, k: &Arc<Inner>, finish: bool) -> Result<()> {
        self.flush_keyspace(k)?;
        while k.compact_once(finish)? {}
        Ok(())
    }

    /// Freezes keyspace `k`'s memtable (with every other keyspace's) if it
    /// holds anything, and waits until `k` has flushed it.
    pub(crate) fn flush_keyspace(&self, k: &Arc<Inner>) -> Result<()> {
        if k.ks_id == 0 {
            return self.flush();
        }
        let mut w = self.open_writer()?;
        if w.wal.is_none() {
            return Err(Error::ReadOnly);
        }
        let empty = k
            .writer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .mem
            .is_empty();
        if !empty {
            let mut st = self.state();
            if let Some(e) = &st.bg_error {
                return Err(e.duplicate());
            }
            self.freeze_memtable(&mut w, &mut st)?;
        }
        drop(w);
        k.wait_for_flushes()
    }
}
