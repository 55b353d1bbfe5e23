//! [`Db::checkpoint`]: a copy of the store as of one moment, in a new
//! directory, that opens as a store of its own (RocksDB's `Checkpoint`).
//!
//! The copy is made in a temporary sibling of the target,
//! `<target>.checkpoint-tmp` ([`temp_dir`]), and renamed to the target only
//! when whole, so that a crash leaves either the whole checkpoint or the
//! temporary directory, never part of a copy at the target:
//!
//! 1. Set up the temporary directory: a leftover of an interrupted
//!    checkpoint is removed first; its `LOCK` is held until the end (a
//!    second checkpoint into the same target fails instead of sharing it),
//!    and the [`INCOMPLETE`] marker is written and synced first of all, so
//!    that [`Db::open`] refuses the directory until `CURRENT` exists.
//! 2. Freeze every keyspace's memtable (writers wait for a WAL switch, no
//!    longer) and wait for the flush of each and of every memtable frozen
//!    before it: every write acknowledged before the call is then in a
//!    table.
//! 3. Take the moment (`Inner::take_moment`): with the writer lock and
//!    every keyspace's state held, each keyspace's current version and the
//!    sequence its tables hold exactly. A store without other keyspaces is
//!    copied as of that sequence, with no log. With other keyspaces, which
//!    flush apart, the moment is the store's last sequence: the logs the
//!    store still needs hold each keyspace's writes above its tables'; each
//!    gets a hard link (or is opened, where links are refused), the active
//!    one is opened to be copied up to its length at the moment. Then,
//!    with no lock held, each table gets a hard link in the temporary
//!    directory (`keyspace-NNNNNN/` for another keyspace's); a table that
//!    cannot be linked ([`link_refused`]: another file system) is opened
//!    for reading instead. The versions taken keep their tables' files
//!    until each has its link or descriptor: a table deletes its file when
//!    its last holder drops it, so compactions go on meanwhile.
//! 4. Per keyspace, the store's last: copy the opened tables (each
//!    fsynced), copy `OPTIONS`, write a MANIFEST describing exactly that
//!    version (and for the store, the logs and the keyspaces) and point
//!    `CURRENT` at it.
//! 5. Remove the marker, sync the directory, rename it to the target and
//!    sync the parent directory.
//!
//! Any failure removes the temporary directory and returns the error.

use std::path::{Path, PathBuf};

mod capture;
mod from_files;
mod in_bucket;
mod into;
mod report;

#[cfg(feature = "object-store")]
pub(crate) use into::write_store_files;
pub use report::{CheckpointReport, INCOMPLETE, TEMP_SUFFIX, temp_dir};

use super::*;
use crate::db::manifest::RecoveredState;
use crate::fs::{ReadableFile, link_refused};

/// Bytes read and written at a time by a table copy.
const COPY_CHUNK: usize = 1 << 20;

impl Db {
    /// Makes in `dir`, a directory that must not exist, a copy of the store
    /// as of one moment, which opens as a store of its own ([`Db::open`],
    /// [`Db::open_read_only`]) with the same keyspaces: it holds every
    /// write acknowledged before the call, and of the writes made during it
    /// a prefix in sequence order, the same in every keyspace. A store with
    /// other keyspaces is copied with the part of its WAL that holds the
    /// writes its keyspaces have not flushed at that moment
    /// ([`CheckpointReport::logs`]). Tables get hard links where the file system allows them
    /// (their bytes are shared, and the store's later compactions do not
    /// touch them), copies otherwise: [`CheckpointReport`] says which.
    /// Writers wait only while the memtable is switched for a flush; reads,
    /// writes and flushes go on while the files are linked or copied.
    ///
    /// The copy is made in `<dir>.checkpoint-tmp` and renamed to `dir` when
    /// whole: after a crash, `dir` is either the whole checkpoint or absent,
    /// and a leftover `<dir>.checkpoint-tmp` (which [`Db::open`] refuses)
    /// is removed by the next checkpoint into `dir`, or by hand.
    ///
    /// Through a handle of [`Db::open_read_only`], beside a writer in
    /// another process, the checkpoint is made from the store's files as
    /// they are on disk (it cannot flush): the tables, and the write-ahead
    /// logs the store still replays, each cut at its last whole record; a
    /// copy during which the writer replaced a file is made again. It holds
    /// every write the writer acknowledged before the call and a prefix of
    /// those made during it (docs/design.md, "Checkpoints").
    ///
    /// Fails, leaving no `dir`, when `dir` exists (even empty) or its parent
    /// does not, when the store has failed ([`Error::Poisoned`]), and on any
    /// I/O error.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path().join("db"), bloomlsm::Options::default())?;
    /// db.put("apple", "red")?;
    /// let backup = dir.path().join("backup");
    /// let report = db.checkpoint(&backup)?;
    /// assert_eq!(report.tables, 1);
    /// db.put("apple", "green")?; // not in the checkpoint
    /// let copy = bloomlsm::Db::open_read_only(&backup, bloomlsm::Options::default())?;
    /// assert_eq!(copy.get("apple")?.as_deref(), Some(&b"red"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<CheckpointReport> {
        self.inner.checkpoint(dir.as_ref(), self.inner.fs())
    }
}

/// An error of file operation `what` on `path`.
fn io_err(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let context = format!("{what} {}", path.display());
    move |e| Error::io(context, e)
}

/// A table to be copied: its number, size, and the source opened while
/// compactions were held off.
struct ToCopy {
    number: u64,
    size: u64,
    from: Arc<dyn ReadableFile>,
}

impl Inner {
    /// Makes the checkpoint into `target` through `fs`: the store's own
    /// file system, or one that keeps the checkpoint's files elsewhere
    /// (`bucket.rs`) and reads the store's through the store's.
    pub(super) fn checkpoint(
        &self,
        target: &Path,
        fs: &dyn FileSystem,
    ) -> Result<CheckpointReport> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let read_only = self.writer.lock().map(|w| w.wal.is_none()).unwrap_or(false);
        if let Some(e) = &self.state().bg_error {
            return Err(e.duplicate());
        }
        let tmp = temp_dir(target).ok_or_else(|| {
            Error::invalid(format!(
                "checkpoint into {}: the path names no directory",
                target.display()
            ))
        })?;
        if fs.file_len(target).is_ok() {
            return Err(Error::invalid(format!(
                "checkpoint into {}: it exists; a checkpoint makes a new directory",
                target.display()
            )));
        }
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if fs.list_dir(&parent).is_err() {
            return Err(Error::invalid(format!(
                "checkpoint into {}: its parent directory {} does not exist",
                target.display(),
                parent.display()
            )));
        }
        remove_leftover(fs, &tmp)?;
        fs.create_dir_all(&tmp)
            .map_err(io_err("create directory", &tmp))?;
        let lock = match fs.lock(&filename::lock_file(&tmp)) {
            Ok(Some(lock)) => lock,
            Ok(None) => {
                return Err(Error::invalid(format!(
                    "checkpoint into {}: another checkpoint into it is being made",
                    target.display()
                )));
            }
            Err(e) => {
                let e = io_err("lock", &filename::lock_file(&tmp))(e);
                let _ = remove_temp(fs, &tmp);
                return Err(e);
            }
        };
        let files = self
            .checkpoint_files
            .read()
            .unwrap_or_else(|p| p.into_inner());
        let filled = if read_only {
            mark_incomplete(fs, &tmp)
                .and_then(|()| from_files::fill_from_files(fs, &self.dir, &tmp))
        } else {
            self.fill_checkpoint(fs, &tmp)
        };
        drop(files);
        let made = filled.and_then(|report| {
            fs.rename(&tmp, target).map_err(|e| {
                Error::io(
                    format!("rename {} to {}", tmp.display(), target.display()),
                    e,
                )
            })?;
            filename::sync_dir_in(fs, &parent)?;
            Ok(report)
        });
        if made.is_err() {
            let _ = remove_temp(fs, &tmp);
        }
        drop(lock);
        made
    }

    /// Steps 1 (the marker) to 5 (before the rename) of the module docs, in
    /// the temporary directory `tmp`.
    fn fill_checkpoint(&self, fs: &dyn FileSystem, tmp: &Path) -> Result<CheckpointReport> {
        let marker = tmp.join(INCOMPLETE);
        mark_incomplete(fs, tmp)?;

        self.flush_for_checkpoint()?;
        let moment = self.take_moment(fs, tmp)?;
        let mut report = CheckpointReport {
            sequence: moment.sequence,
            logs: moment.logs_linked + moment.log_copies.len(),
            ..CheckpointReport::default()
        };
        // Each keyspace's directory is whole before the store's CURRENT
        // names it.
        for part in moment.parts.iter().skip(1) {
            let kdir = filename::keyspace_dir(tmp, part.id);
            fs.create_dir_all(&kdir)
                .map_err(io_err("create directory", &kdir))?;
            self.fill_engine(fs, part, &kdir, &moment, &mut report)?;
            filename::sync_dir_in(fs, &kdir)?;
        }
        for c in &moment.log_copies {
            let to = filename::log_file(tmp, c.number);
            copy_file(fs, &*c.from, c.size, &to, &format!("log {}", c.number))?;
        }
        self.fill_engine(fs, &moment.parts[0], tmp, &moment, &mut report)?;
        fs.remove_file(&marker).map_err(io_err("remove", &marker))?;
        filename::sync_dir_in(fs, tmp)?;
        Ok(report)
    }

    /// Fills `to` with the tables, OPTIONS and MANIFEST (`CURRENT` last) of
    /// the keyspace `part` as of `moment`.
    fn fill_engine(
        &self,
        fs: &dyn FileSystem,
        part: &Part,
        to: &Path,
        moment: &Moment,
        report: &mut CheckpointReport,
    ) -> Result<()> {
        let (mut state, copies) = link_tables(fs, part, to, report)?;
        for c in &copies {
            let path = filename::table_file(to, c.number);
            copy_file(fs, &*c.from, c.size, &path, &format!("table {}", c.number))?;
            report.bytes_copied += c.size;
        }
        drop(copies);
        let mut options = match options_file::read(fs, &part.dir)? {
            Some(f) => f,
            None => options_file::OptionsFile {
                design: options_file::Design::of(&part.opts),
                tuning: options_file::Tuning::default(),
                tables: None,
                history: Vec::new(),
                unknown_families: Vec::new(),
            },
        };
        options.tables = fs.table_location(&report::home_of(to));
        options_file::write(fs, to, &options)?;
        state.last_sequence = moment.sequence;
        if part.id == 0 {
            state.log_number = moment.log_number;
            state.logs = moment.logs.clone();
            state.keyspaces = moment.keyspaces.clone();
            state.next_keyspace = moment.next_keyspace;
            if !moment.logs.is_empty() {
                state.flushed_sequence = part.flushed;
                // Above every log's number, too.
                let logs_max = moment.logs.iter().copied().max().unwrap_or(0);
                state.next_file_number = state.next_file_number.max(logs_max + 2);
            }
        } else {
            state.flushed_sequence = part.flushed;
        }
        // CURRENT last: until it exists the directory is no store.
        Manifest::create(fs, to, state.next_file_number - 1, &state.snapshot_edit())?;
        Ok(())
    }

    /// Step 2 of the module docs: every write acknowledged before the call
    /// reaches a table, in every keyspace.
    fn flush_for_checkpoint(&self) -> Result<()> {
        let children = self.children();
        let last = {
            let mut w = self.open_writer()?;
            if w.wal.is_none() {
                return Err(Error::ReadOnly);
            }
            let any = !w.mem.is_empty()
                || children.values().any(|c| {
                    let kw = c.inner().writer.lock().unwrap_or_else(|p| p.into_inner());
                    !kw.mem.is_empty()
                });
            let mut st = self.state();
            if let Some(e) = &st.bg_error {
                return Err(e.duplicate());
            }
            if any {
                // Freezes every keyspace's non-empty memtable with it.
                self.freeze_memtable(&mut w, &mut st)?;
            }
            let mut last = vec![(None, st.imm.last().map(|f| f.mem.clone()))];
            drop(st);
            for c in children.values() {
                let mem = c.inner().state().imm.last().map(|f| f.mem.clone());
                last.push((Some(c.clone()), mem));
            }
            last
        };
        // Memtables are flushed oldest first: once `last` is gone, so are
        // the ones frozen before it. Others frozen since need not wait.
        for (child, mem) in last {
            let Some(mem) = mem else { continue };
            let gone = |st: &State| !st.imm.iter().any(|f| Arc::ptr_eq(&f.mem, &mem));
            match child {
                None => self.wait_for_state(gone)?,
                Some(c) => c.inner().wait_for_state(gone)?,
            }
        }
        Ok(())
    }

    /// Step 3 of the module docs: the moment the checkpoint holds. With the
    /// writer lock and the state of every keyspace held: each keyspace's
    /// version and the sequence its tables hold; with other keyspaces also
    /// the store's last sequence, and the logs that hold the writes between
    /// (given a hard link in `tmp` here, before a flush may delete them; the
    /// active log is opened, to be copied up to its present length).
    fn take_moment(&self, fs: &dyn FileSystem, tmp: &Path) -> Result<Moment> {
        let w = self.open_writer()?;
        let st = self.state();
        if let Some(e) = &st.bg_error {
            return Err(e.duplicate());
        }
        // Under the writer lock the children are those the MANIFEST names.
        let children = self.children();
        let states: Vec<_> = children.values().map(|c| (c, c.inner().state())).collect();
        let part = |id: u32, inner: &Inner, st: &State| Part {
            id,
            dir: inner.dir.clone(),
            opts: inner.opts.clone(),
            version: st.vs.current().clone(),
            flushed: st.flushed_seq,
        };
        let mut parts = vec![part(0, self, &st)];
        for (c, kst) in &states {
            if let Some(e) = &kst.bg_error {
                return Err(e.duplicate());
            }
            parts.push(part(c.id, c.inner(), kst));
        }
        let mut moment = Moment {
            sequence: st.flushed_seq,
            parts,
            log_number: 0,
            logs: Vec::new(),
            logs_linked: 0,
            log_copies: Vec::new(),
            keyspaces: st.vs.keyspaces().clone(),
            next_keyspace: st.vs.next_keyspace(),
        };
        if children.is_empty() {
            // One keyspace: its tables hold exactly the writes up to its
            // flushed sequence, and the checkpoint needs no log.
            moment.keyspaces.clear();
            return Ok(moment);
        }
        // Keyspaces flush apart: each one's tables hold its writes up to
        // its own flushed sequence, and the logs hold the rest up to the
        // store's last sequence, which no write passes while the writer
        // lock is held.
        moment.sequence = self.last_seq.load(Ordering::Acquire);
        moment.log_number = st.vs.log_number();
        moment.logs = st.vs.logs().collect();
        let active = w.wal.as_ref().map(|wal| (wal.number(), wal.size()));
        for &n in &moment.logs {
            let from = filename::log_file(&self.dir, n);
            let open = |size: u64| -> Result<ToCopy> {
                Ok(ToCopy {
                    number: n,
                    size,
                    from: fs.open_read(&from).map_err(io_err("open", &from))?,
                })
            };
            if let Some((number, size)) = active
                && number == n
            {
                // Still being written: copied up to its length now.
                moment.log_copies.push(open(size)?);
                continue;
            }
            let to = filename::log_file(tmp, n);
            match fs.hard_link(&from, &to) {
                Ok(()) => moment.logs_linked += 1,
                Err(e) if link_refused(&e) => {
                    let size = fs.file_len(&from).map_err(io_err("size", &from))?;
                    moment.log_copies.push(open(size)?);
                }
                Err(e) => {
                    return Err(Error::io(
                        format!("link {} to {}", from.display(), to.display()),
                        e,
                    ));
                }
            }
        }
        drop(states);
        drop(st);
        drop(w);
        Ok(moment)
    }
}

/// Step 1's marker, written and synced in `tmp`.
fn mark_incomplete(fs: &dyn FileSystem, tmp: &Path) -> Result<()> {
    let marker = tmp.join(INCOMPLETE);
    let mut f = fs.create_new(&marker).map_err(io_err("create", &marker))?;
    f.sync_data().map_err(io_err("fsync", &marker))?;
    drop(f);
    filename::sync_dir_in(fs, tmp)
}

/// The moment a checkpoint holds ([`Inner::take_moment`]).
struct Moment {
    /// The checkpoint holds exactly the writes up to this sequence.
    sequence: u64,
    /// Each keyspace, the default one first.
    parts: Vec<Part>,
    /// The store's log number and tracked logs (none without keyspaces).
    log_number: u64,
    logs: Vec<u64>,
    /// Logs given a hard link in the temporary directory.
    logs_linked: usize,
    /// Logs to copy: the active one up to its length then, and those hard
    /// links were refused for.
    log_copies: Vec<ToCopy>,
    keyspaces: BTreeMap<u32, String>,
    next_keyspace: u32,
}

/// One keyspace of a checkpoint's moment.
struct Part {
    id: u32,
    /// Its directory in the store.
    dir: PathBuf,
    opts: Options,
    /// Holding it keeps its tables' files, even once a compaction has
    /// replaced them (a table deletes its file when its last holder drops
    /// it).
    version: Arc<Version>,
    /// Its tables hold exactly its writes up to this sequence.
    flushed: u64,
}

/// Gives each table of `part`'s version a hard link in `to`, or opens it to
/// be copied where links are refused. Returns the state its MANIFEST
/// records (levels and file numbers) and the tables still to copy.
fn link_tables(
    fs: &dyn FileSystem,
    part: &Part,
    to: &Path,
    report: &mut CheckpointReport,
) -> Result<(RecoveredState, Vec<ToCopy>)> {
    let mut state = RecoveredState::empty();
    let mut copies = Vec::new();
    for (level, files) in part.version.levels.iter().enumerate() {
        for f in files {
            let meta = &f.meta;
            state.levels[level].push(meta.clone());
            report.tables += 1;
            report.bytes += meta.file_size;
            let from = filename::table_file(&part.dir, meta.number);
            let dest = filename::table_file(to, meta.number);
            match fs.hard_link(&from, &dest) {
                Ok(()) => report.linked += 1,
                Err(e) if link_refused(&e) => {
                    copies.push(ToCopy {
                        number: meta.number,
                        size: meta.file_size,
                        from: fs.open_read(&from).map_err(io_err("open", &from))?,
                    });
                    report.copied += 1;
                }
                Err(e) => {
                    return Err(Error::io(
                        format!("link {} to {}", from.display(), dest.display()),
                        e,
                    ));
                }
            }
        }
    }
    // L0 is listed newest first; the MANIFEST lists it oldest first.
    state.levels[0].reverse();
    // The manifest takes the number after the tables'.
    let next = part.version.file_numbers().max().unwrap_or(0) + 1;
    state.next_file_number = next + 1;
    Ok((state, copies))
}

/// Copies the first `size` bytes of `from` (`what`, for errors) to `to`,
/// fsynced.
fn copy_file(
    fs: &dyn FileSystem,
    from: &dyn ReadableFile,
    size: u64,
    to: &Path,
    what: &str,
) -> Result<()> {
    let mut out = fs.create_new(to).map_err(io_err("create", to))?;
    let mut buf = vec![0u8; COPY_CHUNK.min(size as usize)];
    let mut at = 0u64;
    while at < size {
        let n = (size - at).min(COPY_CHUNK as u64) as usize;
        from.read_exact_at(&mut buf[..n], at)
            .map_err(|e| Error::io(format!("read {what} at {at}"), e))?;
        out.write_all(&buf[..n]).map_err(io_err("write", to))?;
        at += n as u64;
    }
    out.sync_data().map_err(io_err("fsync", to))
}

/// Whether `name` is one a checkpoint writes in its temporary directory.
fn checkpoint_file(name: &str) -> bool {
    name == INCOMPLETE || filename::parse_file_name(name).is_some()
}

/// Removes the temporary directory `tmp` of an interrupted checkpoint, if
/// there is one and no checkpoint is filling it now. Only the files a
/// checkpoint writes are removed: a directory holding anything else is
/// left as it is, and the checkpoint fails saying so.
fn remove_leftover(fs: &dyn FileSystem, tmp: &Path) -> Result<()> {
    if fs.list_dir(tmp).is_err() {
        if fs.file_len(tmp).is_ok() {
            return Err(Error::invalid(format!(
                "{} exists and is not a checkpoint's temporary directory",
                tmp.display()
            )));
        }
        return Ok(());
    }
    let lock = match fs.lock(&filename::lock_file(tmp)) {
        Ok(Some(lock)) => lock,
        Ok(None) => {
            return Err(Error::invalid(format!(
                "another checkpoint is being made in {}",
                tmp.display()
            )));
        }
        Err(e) => return Err(io_err("lock", &filename::lock_file(tmp))(e)),
    };
    let r = remove_temp(fs, tmp);
    drop(lock);
    r
}

/// Removes the files a checkpoint writes from `tmp`, then `tmp` itself.
fn remove_temp(fs: &dyn FileSystem, tmp: &Path) -> Result<()> {
    let names = fs.list_dir(tmp).map_err(io_err("list", tmp))?;
    let mut foreign = Vec::new();
    for name in names {
        match name.to_str() {
            Some(n) if checkpoint_file(n) => {
                let path = tmp.join(n);
                fs.remove_file(&path).map_err(io_err("remove", &path))?;
            }
            // A keyspace's directory: its files are a checkpoint's too.
            Some(n) if filename::parse_keyspace_dir(n).is_some() => {
                remove_temp(fs, &tmp.join(n))?;
            }
            _ => foreign.push(name),
        }
    }
    if let Some(name) = foreign.first() {
        return Err(Error::invalid(format!(
            "{} holds {}, which no checkpoint writes: remove the directory by hand",
            tmp.display(),
            name.to_string_lossy()
        )));
    }
    fs.remove_dir(tmp).map_err(io_err("remove directory", tmp))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::fs::fault::{Fault, FaultError, FaultFs, Op};

    fn options(fs: &FaultFs) -> Options {
        Options {
            fs: Arc::new(fs.clone()),
            write_buffer_size: 4096,
            target_file_size: 4096,
            background_compaction: false,
            ..Options::default()
        }
    }

    /// A store of 400 keys; when `spaced`, every other one in the
    /// keyspace "ks".
    fn store(fs: &FaultFs, dir: &Path, spaced: bool) -> Db {
        let db = Db::open(dir, options(fs)).unwrap();
        let ks = match db.keyspace("ks") {
            Ok(ks) => Some(ks),
            Err(_) if spaced => Some(db.create_keyspace("ks", options(fs)).unwrap()),
            Err(_) => None,
        };
        for i in 0..400u32 {
            let (k, v) = (format!("key{i:05}"), format!("value{i}-{}", "x".repeat(40)));
            match &ks {
                Some(ks) if i % 2 == 1 => ks.put(k, v).unwrap(),
                _ => db.put(k, v).unwrap(),
            }
        }
        db.maintain().unwrap();
        db
    }

    /// The keys of every keyspace of the store in `dir`.
    fn keys(dir: &Path) -> usize {
        let db = Db::open_read_only(dir, Options::default()).unwrap();
        db.verify().unwrap();
        db.keyspace_names()
            .iter()
            .map(|n| db.keyspace(n).unwrap().scan(..).count())
            .sum()
    }

    /// Where hard links are refused (another file system), every table is
    /// copied, and the report says so.
    #[test]
    fn tables_are_copied_where_links_are_refused() {
        for spaced in [false, true] {
            let root = tempfile::tempdir().unwrap();
            let fs = FaultFs::new();
            let db = store(&fs, &root.path().join("db"), spaced);
            fs.refuse_links(true);
            let target = root.path().join("copy");
            let r = db.checkpoint(&target).unwrap();
            assert!(r.tables > 1, "{r:?}");
            assert_eq!((r.linked, r.copied), (0, r.tables));
            assert_eq!(r.bytes_copied, r.bytes);
            assert_eq!(r.logs > 0, spaced, "{r:?}");
            assert_eq!(keys(&target), 400);
            fs.refuse_links(false);
            let linked = root.path().join("linked");
            let r = db.checkpoint(&linked).unwrap();
            assert_eq!((r.linked, r.copied, r.bytes_copied), (r.tables, 0, 0));
            assert_eq!(keys(&linked), 400);
            db.close().unwrap();
        }
    }

    /// A failure at any file operation of a checkpoint (after the target
    /// was checked) is an error that leaves neither the target nor the
    /// temporary directory, and the store keeps working.
    #[test]
    fn a_failed_operation_leaves_no_directory() {
        for spaced in [false, true] {
            failed_operations(spaced);
        }
    }

    fn failed_operations(spaced: bool) {
        let root = tempfile::tempdir().unwrap();
        let fs = FaultFs::new();
        let dir = root.path().join("db");
        drop(store(&fs, &dir, spaced));
        let kinds = [
            Op::Create,
            Op::Sync,
            Op::SyncDir,
            Op::Link,
            Op::Rename,
            Op::Remove,
        ];
        for (i, op) in kinds.into_iter().enumerate() {
            // Each kind in turn at its first and at a later operation.
            for nth in [0, 2] {
                let target = root.path().join(format!("ckpt-{i}-{nth}"));
                // Reopened each time: a failed flush poisons the store.
                let db = Db::open(&dir, options(&fs)).unwrap();
                db.put("more", format!("{i}-{nth}")).unwrap();
                if spaced {
                    let ks = db.keyspace("ks").unwrap();
                    ks.put("more", format!("{i}-{nth}")).unwrap();
                }
                fs.arm(Fault {
                    op: Some(op),
                    nth,
                    error: FaultError::Io,
                    sticky: false,
                });
                let r = db.checkpoint(&target);
                fs.disarm();
                // Succeeded (the failed operation was the store's own,
                // and not fatal to it: a log's deletion): whole.
                let Err(e) = r else {
                    assert_eq!(keys(&target), 401 + usize::from(spaced));
                    continue;
                };
                assert!(!target.exists(), "{op:?} {nth}: {e}");
                assert!(!temp_dir(&target).unwrap().exists(), "{op:?} {nth}: {e}");
                drop(db);
            }
        }
    }

    /// A poisoned store makes no checkpoint.
    #[test]
    fn a_poisoned_store_refuses() {
        let root = tempfile::tempdir().unwrap();
        let fs = FaultFs::new();
        let db = store(&fs, &root.path().join("db"), false);
        fs.arm(Fault {
            op: Some(Op::Write),
            nth: 0,
            error: FaultError::Io,
            sticky: false,
        });
        assert!(db.put("k", "v").is_err());
        fs.disarm();
        let target = root.path().join("ckpt");
        let e = db.checkpoint(&target).unwrap_err();
        assert!(matches!(e, Error::Poisoned { .. }), "{e:?}");
        assert!(!target.exists() && !temp_dir(&target).unwrap().exists());
    }
}
