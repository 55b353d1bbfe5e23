//! Opening and closing a store: recovery, the handle around its result and
//! the background threads; at close, the threads stopped and the log and
//! MANIFEST synced.

use super::*;

impl Db {
    /// Opens (or creates) the store in `path`: takes the directory lock,
    /// replays the manifest and the write-ahead logs, flushes what the logs
    /// held into L0 files, and deletes files no manifest needs.
    ///
    /// A new store is made only in a missing or empty directory (or one that
    /// holds what an interrupted first open left): a directory holding any
    /// other file is refused with [`Error::InvalidArgument`] naming it, so a
    /// store never settles among files it did not write, unless
    /// [`Options::create_among_other_files`] asks for it.
    /// An existing store opens with the design it recorded (filters, prefix
    /// extractor, compression, sizes: [`Options::use_stored_design`]), not
    /// with `opts`' fields for it; [`Db::options`] shows the design in force.
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
        if let Err(e) = fs.list_dir(&dir) {
            use std::io::ErrorKind::{NotADirectory, NotFound};
            if !matches!(e.kind(), NotFound | NotADirectory) {
                // A directory that cannot be read, or a store whose files
                // are damaged (a whole store's journal), is not missing.
                return Err(Error::io(format!("list {}", dir.display()), e));
            }
            if fs.file_len(&dir).is_ok() {
                return Err(Error::invalid(format!(
                    "{} is a file, not a store's directory",
                    dir.display()
                )));
            }
            if !opts.create_if_missing {
                return Err(Error::invalid(format!("{} does not exist", dir.display())));
            }
            fs.create_dir_all(&dir)
                .map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
        }
        if !opts.create_among_other_files && fs.file_len(&filename::current_file(&dir)).is_err() {
            // Before the lock file is made: a refused directory is left as
            // it was.
            recovery::refuse_foreign_files(fs.as_ref(), &dir)?;
        }
        let lock_path = filename::lock_file(&dir);
        let lock = match fs.lock(&lock_path) {
            Ok(Some(lock)) => lock,
            Ok(None) => return Err(Error::Locked(dir)),
            Err(e) => return Err(Error::io(format!("lock {}", lock_path.display()), e)),
        };
        let fs = recorded_tables_fs(&dir, &mut opts, false)?;
        // Before anything is read: an older writer elsewhere can add
        // nothing the store then misses.
        fs.take_writer(&dir)
            .map_err(|e| Error::io(format!("take the writer's place in {}", dir.display()), e))?;
        let design = options_file::settle(fs.as_ref(), &dir, &mut opts)?;
        check_options(&opts)?;
        let new_store = fs.file_len(&filename::current_file(&dir)).is_err();
        opts.read_mode = settle_read_mode(&dir, &opts, new_store)?;
        let caches = Caches::new(&opts);

        let open_keyspace =
            |id: u32, name: &str| keyspace::recover_keyspace(&dir, &opts, &caches, id, name, false);
        let rec = recovery::recover(&dir, &opts, caches.clone(), true, &open_keyspace)?;
        check_keyspace_filters(&opts, &rec)?;
        design.record(fs.as_ref(), &dir, &opts, new_store)?;
        Db::start(dir, opts, caches, Some(lock), rec, 0)
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
        let fs = recorded_tables_fs(&dir, &mut opts, true)?;
        options_file::settle(fs.as_ref(), &dir, &mut opts)?;
        check_options(&opts)?;
        opts.read_mode = settle_read_mode(&dir, &opts, false)?;
        let caches = Caches::new(&opts);
        let open_keyspace =
            |id: u32, name: &str| keyspace::recover_keyspace(&dir, &opts, &caches, id, name, true);
        let rec = recovery::recover_read_only(&dir, &opts, caches.clone(), &open_keyspace)?;
        check_keyspace_filters(&opts, &rec)?;
        let every = opts.refresh_interval;
        let db = Db::start(dir, opts, caches, None, rec, 0)?;
        if let Some(every) = every {
            let t = super::refresh::refresh_thread(db.inner.clone(), every)?;
            db.bg.lock().unwrap_or_else(|p| p.into_inner()).push(t);
        }
        Ok(db)
    }

    /// Builds the handle around a recovered store, or keyspace `ks_id`'s
    /// engine; a writable one also gets the flush thread and, with
    /// `background_compaction`, the compaction thread. The store's keyspaces
    /// are started with it.
    pub(super) fn start(
        dir: PathBuf,
        opts: Options,
        caches: Caches,
        lock: Option<Box<dyn FileLock>>,
        mut o: recovery::Recovered,
        ks_id: u32,
    ) -> Result<Db> {
        let writable = o.writable;
        let mut children = BTreeMap::new();
        for k in std::mem::take(&mut o.keyspaces) {
            let child = keyspace::Child::start(k, o.last_sequence)?;
            children.insert(child.id, Arc::new(child));
        }
        let mem = Arc::new(o.mem);
        let version = o.vs.current().clone();
        let levels = opts.max_levels;
        let wal_number = o.wal.as_ref().map_or(0, Wal::number);
        let table_files = Arc::new(TableFiles::new(&dir, opts.fs.clone()));
        let history = lookups::HistoryBase::load(opts.fs.as_ref(), &dir, levels);
        let inner = Arc::new(Inner {
            dir,
            caches,
            write_queue: Mutex::new(WriteQueue::default()),
            write_done: Condvar::new(),
            writer: Mutex::new(Writer {
                wal: o.wal,
                mem: mem.clone(),
            }),
            state: Mutex::new(State {
                imm: Vec::new(),
                // Recovery flushed what the logs held (a read-only store
                // keeps it in memory, and makes no checkpoint).
                flushed_seq: o.last_sequence,
                vs: o.vs,
                wal_number,
                bg_error: None,
                shutting_down: false,
            }),
            cv: Condvar::new(),
            sv: current::Current::new(SuperVersion {
                mem,
                imm: Vec::new(),
                version,
            }),
            refilter_clear: Mutex::new((Weak::new(), 0)),
            last_seq: AtomicU64::new(o.last_sequence),
            flush_work: Mutex::new(()),
            compact_work: Mutex::new(()),
            counters: Counters::new(levels, o.wal_tail_dropped, o.wal_salvaged, history),
            opened_at: std::time::Instant::now(),
            last_write_ms: AtomicU64::new(0),
            closed: Arc::new(AtomicBool::new(false)),
            snapshots: SnapshotList::default(),
            table_files,
            opts,
            ks_id,
            parent: OnceLock::new(),
            children: RwLock::new(children),
            checkpoint_files: RwLock::new(()),
        });
        for c in inner.children().values() {
            let _ = c.inner().parent.set(Arc::downgrade(&inner));
        }
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

    pub(super) fn shutdown(&self) -> Result<()> {
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
        // The keyspaces' threads stop before the log and MANIFEST syncs:
        // a flush of theirs ends with a MANIFEST edit of the store's.
        let mut children_closed = Ok(());
        for c in inner.children().values() {
            let r = c.shutdown();
            if children_closed.is_ok() {
                children_closed = r;
            }
        }
        // Advice, not state: a failure to keep the lookups is not the
        // store's.
        let _ = inner.save_lookup_history();
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
        sync.and(children_closed)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// The file system the store in `dir` opens on: `opts.fs`, unless that is
/// the operating system's ([`crate::fs::FileSystem::defers_to_recorded_location`])
/// and the store's `OPTIONS` file records that its tables are in a bucket:
/// then one made from that record (feature `object-store`; credentials
/// from the environment), put in `opts.fs`. Without the feature the store's
/// `settle` refuses, naming the bucket.
fn recorded_tables_fs(
    dir: &Path,
    opts: &mut Options,
    read_only: bool,
) -> Result<Arc<dyn crate::fs::FileSystem>> {
    if opts.fs.defers_to_recorded_location() {
        #[cfg(feature = "object-store")]
        if let Some(loc) = options_file::read(opts.fs.as_ref(), dir)?.and_then(|f| f.tables) {
            opts.fs = crate::fs::bucket::BucketFs::for_location(dir, &loc, read_only)?;
        }
    }
    let _ = (dir, read_only);
    Ok(opts.fs.clone())
}

/// The read mode the store in `dir` uses: `Direct` is probed on its
/// `CURRENT` file, so that a file system that refuses direct I/O fails the
/// open at once; `DirectOrBuffered` settles on one of the two. A writer
/// creating a store (`new_store`) probes an empty `DIRECT-PROBE` it creates
/// and removes; `LOCK` is never probed, since closing any descriptor of it
/// releases this process's lock on it (`fs::lock`).
pub(super) fn settle_read_mode(dir: &Path, opts: &Options, new_store: bool) -> Result<ReadMode> {
    let fs = opts.fs.as_ref();
    let current = filename::current_file(dir);
    let probe = filename::direct_probe_file(dir);
    let err = |e| Error::io(format!("direct reads in {}", dir.display()), e);
    let scratch = new_store && opts.read_mode != ReadMode::Buffered;
    if scratch {
        fs.create_truncate(&probe)
            .map_err(|e| Error::io(format!("create {}", probe.display()), e))?;
    }
    let mode = crate::fs::resolve_read_mode(fs, &[&current, &probe], opts.read_mode);
    if scratch {
        let _ = fs.remove_file(&probe);
    }
    mode.map_err(err)
}

pub(super) fn check_options(opts: &Options) -> Result<()> {
    opts.validate()?;
    if opts.max_levels > manifest::NUM_LEVELS {
        return Err(Error::invalid(format!(
            "max_levels must be at most {}",
            manifest::NUM_LEVELS
        )));
    }
    Ok(())
}

/// [`Options::keyspace_filters`] names only keyspaces the store has.
fn check_keyspace_filters(opts: &Options, rec: &recovery::Recovered) -> Result<()> {
    for (name, _) in &opts.keyspace_filters {
        if !rec.keyspaces.iter().any(|k| &k.name == name) {
            return Err(Error::invalid(format!(
                "Options::keyspace_filters names the keyspace {name:?}, which the store does not have"
            )));
        }
    }
    Ok(())
}
