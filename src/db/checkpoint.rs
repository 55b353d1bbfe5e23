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
//! 2. Freeze the memtable (writers wait for a WAL switch, no longer) and
//!    wait for the flush of it and of every memtable frozen before it: every
//!    write acknowledged before the call is then in a table.
//! 3. With compactions held off (the compaction lock, not the writer lock),
//!    take the current version and the sequence it holds exactly, then give
//!    each of its tables a hard link in the temporary directory; a table
//!    that cannot be linked ([`link_refused`]: another file system) is
//!    opened for reading instead. Links and open descriptors both keep the
//!    files' bytes after a compaction deletes their names, so compactions
//!    resume before any copying.
//! 4. Copy the opened tables (each fsynced), copy `OPTIONS`, write a MANIFEST
//!    describing exactly that version (no write-ahead log: the checkpoint's
//!    writes are all in its tables) and point `CURRENT` at it.
//! 5. Remove the marker, sync the directory, rename it to the target and
//!    sync the parent directory.
//!
//! Any failure removes the temporary directory and returns the error.

use std::path::{Path, PathBuf};

use super::*;
use crate::db::manifest::RecoveredState;
use crate::fs::{ReadableFile, link_refused};

/// What [`Db::checkpoint`] made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointReport {
    /// Tables in the checkpoint.
    pub tables: usize,
    /// Tables given a hard link (sharing their bytes with the store's).
    pub linked: usize,
    /// Tables copied: hard links were refused (the checkpoint is on another
    /// file system, or this one makes none).
    pub copied: usize,
    /// Bytes of the copied tables.
    pub bytes_copied: u64,
    /// Bytes of all the checkpoint's tables.
    pub bytes: u64,
    /// The checkpoint holds exactly the writes with sequence numbers up to
    /// this one: every write acknowledged before the call, and perhaps some
    /// made during it (each writer's writes in order, none without the
    /// writes before it).
    pub sequence: u64,
}

/// What ends the name of a checkpoint's temporary directory: the copy into
/// `backup` is made in `backup.checkpoint-tmp`.
pub const TEMP_SUFFIX: &str = ".checkpoint-tmp";

/// The file that marks a directory as an unfinished checkpoint: written
/// first, removed last; [`Db::open`] refuses a directory holding it
/// without a `CURRENT`.
pub const INCOMPLETE: &str = "CHECKPOINT-INCOMPLETE";

/// Bytes read and written at a time by a table copy.
const COPY_CHUNK: usize = 1 << 20;

/// The temporary directory a checkpoint into `target` is made in: its
/// sibling named with [`TEMP_SUFFIX`]. `None` when `target` has no final
/// name (`/`, `..`).
pub fn temp_dir(target: &Path) -> Option<PathBuf> {
    let name = target.file_name()?;
    let mut tmp = name.to_os_string();
    tmp.push(TEMP_SUFFIX);
    Some(target.with_file_name(tmp))
}

impl Db {
    /// Makes in `dir`, a directory that must not exist, a copy of the store
    /// as of one moment, which opens as a store of its own ([`Db::open`],
    /// [`Db::open_read_only`]): it holds every write acknowledged before
    /// the call, and of the writes made during it a prefix in sequence
    /// order. Tables get hard links where the file system allows them
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
    /// Fails, leaving no `dir`, when `dir` exists (even empty) or its parent
    /// does not, when the store is read-only ([`Error::ReadOnly`]) or has
    /// failed ([`Error::Poisoned`]), and on any I/O error.
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
        self.inner.checkpoint(dir.as_ref())
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
    fn checkpoint(&self, target: &Path) -> Result<CheckpointReport> {
        let fs = self.fs();
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if self.writer.lock().map(|w| w.wal.is_none()).unwrap_or(false) {
            return Err(Error::ReadOnly);
        }
        if let Some(e) = &self.state().bg_error {
            return Err(e.duplicate());
        }
        if !self.children().is_empty() {
            return Err(Error::invalid(
                "a checkpoint copies the default keyspace alone: this store has other keyspaces \
                 (drop them first)",
            ));
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
        let made = self.fill_checkpoint(&tmp).and_then(|report| {
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
    fn fill_checkpoint(&self, tmp: &Path) -> Result<CheckpointReport> {
        let fs = self.fs();
        let marker = tmp.join(INCOMPLETE);
        let mut f = fs.create_new(&marker).map_err(io_err("create", &marker))?;
        f.sync_data().map_err(io_err("fsync", &marker))?;
        drop(f);
        filename::sync_dir_in(fs, tmp)?;

        self.flush_for_checkpoint()?;
        let (state, copies, mut report) = self.link_tables(tmp)?;
        for c in &copies {
            copy_table(fs, c, &filename::table_file(tmp, c.number))?;
            report.bytes_copied += c.size;
        }
        drop(copies);
        let options = match options_file::read(fs, &self.dir)? {
            Some(f) => f,
            None => options_file::OptionsFile {
                design: options_file::Design::of(&self.opts),
                history: Vec::new(),
                unknown_families: Vec::new(),
            },
        };
        options_file::write(fs, tmp, &options)?;
        // CURRENT last: until it exists the directory is no store.
        Manifest::create(fs, tmp, state.next_file_number - 1, &state.snapshot_edit())?;
        fs.remove_file(&marker).map_err(io_err("remove", &marker))?;
        filename::sync_dir_in(fs, tmp)?;
        Ok(report)
    }

    /// Step 2 of the module docs: every write acknowledged before the call
    /// reaches a table.
    fn flush_for_checkpoint(&self) -> Result<()> {
        let last = {
            let mut w = self.open_writer()?;
            self.freeze_for_flush(&mut w)?;
            let st = self.state();
            if let Some(e) = &st.bg_error {
                return Err(e.duplicate());
            }
            st.imm.last().map(|f| f.mem.clone())
        };
        let Some(last) = last else { return Ok(()) };
        // Memtables are flushed oldest first: once `last` is gone, so are
        // the ones frozen before it. Others frozen since need not wait.
        self.wait_for_state(|st| !st.imm.iter().any(|f| Arc::ptr_eq(&f.mem, &last)))
    }

    /// Step 3 of the module docs: the state the checkpoint's MANIFEST
    /// records, the tables still to copy, and the report so far.
    fn link_tables(&self, tmp: &Path) -> Result<(RecoveredState, Vec<ToCopy>, CheckpointReport)> {
        let fs = self.fs();
        // No compaction or filter rebuild runs, so none deletes a file of
        // the version taken here until each has a link or an open
        // descriptor.
        let _work = self.compact_work.lock().unwrap_or_else(|p| p.into_inner());
        let (version, sequence, next_file) = {
            let st = self.state();
            if let Some(e) = &st.bg_error {
                return Err(e.duplicate());
            }
            let v = st.vs.current().clone();
            let next = v.file_numbers().max().unwrap_or(0) + 1;
            (v, st.flushed_seq, next)
        };
        let mut state = RecoveredState::empty();
        let mut report = CheckpointReport {
            sequence,
            ..CheckpointReport::default()
        };
        let mut copies = Vec::new();
        for (level, files) in version.levels.iter().enumerate() {
            for f in files {
                let meta = &f.meta;
                state.levels[level].push(meta.clone());
                report.tables += 1;
                report.bytes += meta.file_size;
                let from = filename::table_file(&self.dir, meta.number);
                let to = filename::table_file(tmp, meta.number);
                match fs.hard_link(&from, &to) {
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
                            format!("link {} to {}", from.display(), to.display()),
                            e,
                        ));
                    }
                }
            }
        }
        // L0 is listed newest first; the MANIFEST lists it oldest first.
        state.levels[0].reverse();
        // No write-ahead log: every write the checkpoint holds is in a
        // table. The manifest takes the number after the tables'.
        state.log_number = 0;
        state.last_sequence = sequence;
        state.next_file_number = next_file + 1;
        Ok((state, copies, report))
    }
}

/// Copies the table `c` to `to`, fsynced, checking its length.
fn copy_table(fs: &dyn FileSystem, c: &ToCopy, to: &Path) -> Result<()> {
    let mut out = fs.create_new(to).map_err(io_err("create", to))?;
    let mut buf = vec![0u8; COPY_CHUNK.min(c.size as usize)];
    let mut at = 0u64;
    while at < c.size {
        let n = (c.size - at).min(COPY_CHUNK as u64) as usize;
        c.from
            .read_exact_at(&mut buf[..n], at)
            .map_err(|e| Error::io(format!("read table {} at {at}", c.number), e))?;
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

    fn store(fs: &FaultFs, dir: &Path) -> Db {
        let db = Db::open(dir, options(fs)).unwrap();
        for i in 0..400u32 {
            db.put(format!("key{i:05}"), format!("value{i}-{}", "x".repeat(40)))
                .unwrap();
        }
        db.maintain().unwrap();
        db
    }

    fn keys(dir: &Path) -> usize {
        let db = Db::open_read_only(dir, Options::default()).unwrap();
        db.verify().unwrap();
        db.scan(..).count()
    }

    /// Where hard links are refused (another file system), every table is
    /// copied, and the report says so.
    #[test]
    fn tables_are_copied_where_links_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let fs = FaultFs::new();
        let db = store(&fs, &root.path().join("db"));
        fs.refuse_links(true);
        let target = root.path().join("copy");
        let r = db.checkpoint(&target).unwrap();
        assert!(r.tables > 1, "{r:?}");
        assert_eq!((r.linked, r.copied), (0, r.tables));
        assert_eq!(r.bytes_copied, r.bytes);
        assert_eq!(keys(&target), 400);
        fs.refuse_links(false);
        let linked = root.path().join("linked");
        let r = db.checkpoint(&linked).unwrap();
        assert_eq!((r.linked, r.copied, r.bytes_copied), (r.tables, 0, 0));
        db.close().unwrap();
    }

    /// A failure at any file operation of a checkpoint (after the target
    /// was checked) is an error that leaves neither the target nor the
    /// temporary directory, and the store keeps working.
    #[test]
    fn a_failed_operation_leaves_no_directory() {
        let root = tempfile::tempdir().unwrap();
        let fs = FaultFs::new();
        let dir = root.path().join("db");
        drop(store(&fs, &dir));
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
                    assert_eq!(keys(&target), 401);
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
        let db = store(&fs, &root.path().join("db"));
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
