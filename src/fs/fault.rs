//! A file system that fails on command and loses power on command, for tests
//! (RocksDB's `FaultInjectionTestFS`, LevelDB's `fault_injection_test`).
//!
//! [`FaultFs`] works on real files (give it a temporary directory) and counts
//! every operation by [`Op`]. A [`Fault`] makes the `nth` operation of a kind
//! fail with `EIO` or `ENOSPC` — a failing write first writes half its bytes,
//! as a full disk can — and, if `sticky`, every operation after it too (the
//! process is as good as dead). It tracks what is durable: bytes written to a
//! file after its last sync, files created or renamed since their directory's
//! last sync. [`FaultFs::power_loss`] drops all of that, as a power cut would:
//! unsynced bytes are cut off, unsynced new files vanish, unsynced renames are
//! undone (the replaced file comes back). Removals are taken as durable at
//! once (a simplification: a resurrected file is one a store must already
//! ignore after a crash). [`FaultFs::refuse_direct`] makes it a file system
//! without direct I/O.
//!
//! The store's `LOOKUPS` and `LOOKUPS.tmp` (its lookup history, advice that
//! no read or write depends on) pass straight through, neither counted nor
//! failed: a fault there must not reach the caller, which the sweeps would
//! take for a lost error. `src/db/lookups.rs` tests a failing history write
//! on its own.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{FileLock, FileSystem, ReadableFile, RealFs, WritableFile};

/// The kinds of operation counted and failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Creating a file (`create_new`, `create_truncate`).
    Create,
    /// One `write_all` reaching the file system.
    Write,
    /// A file's `sync_data`.
    Sync,
    /// A rename.
    Rename,
    /// A removal.
    Remove,
    /// A directory sync.
    SyncDir,
    /// Opening a file for reading.
    OpenRead,
    /// One positional read.
    Read,
    /// Taking the lock.
    Lock,
    /// Making a hard link.
    Link,
}

/// The error a fault returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultError {
    /// `EIO`.
    Io,
    /// `ENOSPC`.
    NoSpace,
}

/// Which operation fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The kind that fails; `None`: any kind.
    pub op: Option<Op>,
    /// Fails the operation numbered `nth` (from 0) among those counted.
    pub nth: u64,
    /// The error returned.
    pub error: FaultError,
    /// Every later operation fails too.
    pub sticky: bool,
}

#[derive(Clone, Copy, Debug)]
struct Durability {
    len: u64,
    synced: u64,
    /// The directory entry survives power loss.
    entry_durable: bool,
}

#[derive(Debug)]
struct PendingRename {
    from: PathBuf,
    to: PathBuf,
    /// What `to` held before, if anything (it comes back on power loss).
    replaced: Option<Vec<u8>>,
}

#[derive(Debug, Default)]
struct State {
    counts: HashMap<Op, u64>,
    total: u64,
    fault: Option<Fault>,
    tripped: bool,
    files: HashMap<PathBuf, Durability>,
    renames: Vec<PendingRename>,
    refuse_direct: bool,
    refuse_links: bool,
}

impl State {
    /// Counts `op` and decides whether it fails.
    fn check(&mut self, op: Op) -> io::Result<()> {
        let n = self.counts.entry(op).or_insert(0);
        let nth_of_kind = *n;
        *n += 1;
        let nth_any = self.total;
        self.total += 1;
        let Some(f) = self.fault else { return Ok(()) };
        let hit = match f.op {
            Some(k) => k == op && nth_of_kind == f.nth,
            None => nth_any == f.nth,
        };
        if hit || (f.sticky && self.tripped) {
            self.tripped = true;
            return Err(match f.error {
                FaultError::Io => io::Error::other("injected I/O error"),
                FaultError::NoSpace => io::Error::from_raw_os_error(28), // ENOSPC
            });
        }
        Ok(())
    }
}

/// The fault-injecting file system (module docs). Cheap to clone: clones
/// share their state.
#[derive(Clone, Debug, Default)]
pub struct FaultFs {
    state: Arc<Mutex<State>>,
}

impl FaultFs {
    /// A file system with no fault armed.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Arms `fault` (replacing any armed one) and zeroes the counters.
    pub fn arm(&self, fault: Fault) {
        let mut s = self.state();
        s.fault = Some(fault);
        s.tripped = false;
        s.counts.clear();
        s.total = 0;
    }

    /// Disarms any fault; counting goes on.
    pub fn disarm(&self) {
        let mut s = self.state();
        s.fault = None;
        s.tripped = false;
    }

    /// `true`: every direct open is refused, as by a file system without
    /// direct I/O (the error [`super::direct::refused`] recognises).
    pub fn refuse_direct(&self, refuse: bool) {
        self.state().refuse_direct = refuse;
    }

    /// `true`: every hard link is refused with `EXDEV`, as between two file
    /// systems (the error [`super::link_refused`] recognises).
    pub fn refuse_links(&self, refuse: bool) {
        self.state().refuse_links = refuse;
    }

    /// Whether the armed fault has fired.
    pub fn tripped(&self) -> bool {
        self.state().tripped
    }

    /// Operations counted since the last [`arm`](Self::arm) or
    /// [`reset_counts`](Self::reset_counts): of one kind, or all.
    pub fn count(&self, op: Option<Op>) -> u64 {
        let s = self.state();
        match op {
            Some(op) => s.counts.get(&op).copied().unwrap_or(0),
            None => s.total,
        }
    }

    /// Zeroes the counters.
    pub fn reset_counts(&self) {
        let mut s = self.state();
        s.counts.clear();
        s.total = 0;
    }

    /// Loses power: drops every byte, file and rename not yet made durable
    /// (module docs), then disarms the fault. Call it with the store dropped
    /// (or as good as dead: a sticky fault fired), as a real power cut leaves
    /// nothing running.
    pub fn power_loss(&self) -> io::Result<()> {
        let mut s = self.state();
        for r in std::mem::take(&mut s.renames).into_iter().rev() {
            std::fs::rename(&r.to, &r.from)?;
            if let Some(d) = s.files.remove(&r.to) {
                s.files.insert(r.from.clone(), d);
            }
            if let Some(bytes) = r.replaced {
                std::fs::write(&r.to, bytes)?;
            }
        }
        for (path, d) in std::mem::take(&mut s.files) {
            if !d.entry_durable {
                match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            } else if d.synced < d.len {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)?
                    .set_len(d.synced)?;
            }
        }
        s.fault = None;
        s.tripped = false;
        Ok(())
    }

    fn created(&self, path: &Path, file: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        self.state().files.insert(
            path.to_path_buf(),
            Durability {
                len: 0,
                synced: 0,
                entry_durable: false,
            },
        );
        Box::new(FaultWritable {
            fs: self.clone(),
            path: path.to_path_buf(),
            inner: file,
        })
    }
}

#[derive(Debug)]
struct FaultWritable {
    fs: FaultFs,
    path: PathBuf,
    inner: Box<dyn WritableFile>,
}

impl WritableFile for FaultWritable {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut s = self.fs.state();
        if let Err(e) = s.check(Op::Write) {
            // A failing write may still have written part of its bytes.
            let half = &buf[..buf.len() / 2];
            if !half.is_empty()
                && self.inner.write_all(half).is_ok()
                && let Some(d) = s.files.get_mut(&self.path)
            {
                d.len += half.len() as u64;
            }
            return Err(e);
        }
        self.inner.write_all(buf)?;
        if let Some(d) = s.files.get_mut(&self.path) {
            d.len += buf.len() as u64;
        }
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let mut s = self.fs.state();
        s.check(Op::Sync)?;
        self.inner.sync_data()?;
        if let Some(d) = s.files.get_mut(&self.path) {
            d.synced = d.len;
        }
        Ok(())
    }
}

#[derive(Debug)]
struct FaultReadable {
    fs: FaultFs,
    inner: Arc<dyn ReadableFile>,
}

impl ReadableFile for FaultReadable {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.fs.state().check(Op::Read)?;
        self.inner.read_exact_at(buf, offset)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn transfer_len(&self, offset: u64, len: usize) -> u64 {
        self.inner.transfer_len(offset, len)
    }
    fn advise(&self, advice: super::ReadAdvice) {
        self.inner.advise(advice);
    }
    fn identity(&self) -> Option<super::FileIdentity> {
        self.inner.identity()
    }
}

/// `LOOKUPS` or `LOOKUPS.tmp`: passed through uncounted (module docs).
fn spared(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n == "LOOKUPS" || n == "LOOKUPS.tmp")
}

impl FileSystem for FaultFs {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.state().check(Op::Create)?;
        let f = RealFs.create_new(path)?;
        Ok(self.created(path, f))
    }

    fn create_new_direct(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.state().check(Op::Create)?;
        let f = RealFs.create_new_direct(path)?;
        Ok(self.created(path, f))
    }

    fn create_truncate(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        if spared(path) {
            return RealFs.create_truncate(path);
        }
        self.state().check(Op::Create)?;
        let f = RealFs.create_truncate(path)?;
        Ok(self.created(path, f))
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        if spared(path) {
            return RealFs.open_read(path);
        }
        self.state().check(Op::OpenRead)?;
        let inner = RealFs.open_read(path)?;
        Ok(Arc::new(FaultReadable {
            fs: self.clone(),
            inner,
        }))
    }

    fn open_read_direct(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        let refuse = {
            let mut s = self.state();
            s.check(Op::OpenRead)?;
            s.refuse_direct
        };
        if refuse {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{} (refused by FaultFs)", super::direct::REFUSED),
            ));
        }
        let inner = RealFs.open_read_direct(path)?;
        Ok(Arc::new(FaultReadable {
            fs: self.clone(),
            inner,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if spared(from) {
            return RealFs.rename(from, to);
        }
        let mut s = self.state();
        s.check(Op::Rename)?;
        let replaced = match std::fs::read(to) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        std::fs::rename(from, to)?;
        if let Some(d) = s.files.remove(from) {
            s.files.insert(to.to_path_buf(), d);
        }
        s.renames.push(PendingRename {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            replaced,
        });
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut s = self.state();
        s.check(Op::Remove)?;
        std::fs::remove_file(path)?;
        s.files.remove(path);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.state();
        s.check(Op::SyncDir)?;
        RealFs.sync_dir(dir)?;
        for (path, d) in s.files.iter_mut() {
            if path.parent() == Some(dir) {
                d.entry_durable = true;
            }
        }
        s.renames.retain(|r| r.to.parent() != Some(dir));
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        RealFs.list_dir(dir)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        RealFs.file_len(path)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        RealFs.create_dir_all(dir)
    }

    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn FileLock>>> {
        self.state().check(Op::Lock)?;
        RealFs.lock(path)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.state();
        s.check(Op::Link)?;
        if s.refuse_links {
            return Err(io::Error::new(
                io::ErrorKind::CrossesDevices,
                "hard link refused by FaultFs",
            ));
        }
        RealFs.hard_link(from, to)?;
        // A new name of bytes already there: durable with its directory.
        let len = RealFs.file_len(to)?;
        s.files.insert(
            to.to_path_buf(),
            Durability {
                len,
                synced: len,
                entry_durable: false,
            },
        );
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.state().check(Op::Remove)?;
        RealFs.remove_dir(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_loss_keeps_only_what_was_synced() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let fs = FaultFs::new();
        // Durable: written, synced, directory synced.
        let mut a = fs.create_new(&d.join("a")).unwrap();
        a.write_all(b"hello").unwrap();
        a.sync_data().unwrap();
        fs.sync_dir(d).unwrap();
        a.write_all(b" world").unwrap(); // not synced
        // Synced but its directory entry never was.
        let mut b = fs.create_new(&d.join("b")).unwrap();
        b.write_all(b"b").unwrap();
        b.sync_data().unwrap();
        // A rename over an existing file, directory not synced.
        std::fs::write(d.join("cur"), b"old").unwrap();
        let mut t = fs.create_truncate(&d.join("cur.tmp")).unwrap();
        t.write_all(b"new").unwrap();
        t.sync_data().unwrap();
        fs.rename(&d.join("cur.tmp"), &d.join("cur")).unwrap();
        assert_eq!(std::fs::read(d.join("cur")).unwrap(), b"new");
        fs.power_loss().unwrap();
        assert_eq!(std::fs::read(d.join("a")).unwrap(), b"hello");
        assert!(!d.join("b").exists());
        assert_eq!(std::fs::read(d.join("cur")).unwrap(), b"old");
        assert!(!d.join("cur.tmp").exists(), "never durably created");
    }

    #[test]
    fn the_nth_operation_fails_and_sticky_faults_stay() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let fs = FaultFs::new();
        fs.arm(Fault {
            op: Some(Op::Write),
            nth: 1,
            error: FaultError::NoSpace,
            sticky: false,
        });
        let mut a = fs.create_new(&d.join("a")).unwrap();
        a.write_all(b"0123").unwrap();
        let e = a.write_all(b"4567").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(28));
        assert!(fs.tripped());
        a.write_all(b"89").unwrap();
        assert_eq!(
            std::fs::read(d.join("a")).unwrap(),
            b"01234589",
            "half written"
        );
        assert_eq!(fs.count(Some(Op::Write)), 3);

        fs.arm(Fault {
            op: None,
            nth: 0,
            error: FaultError::Io,
            sticky: true,
        });
        assert!(a.sync_data().is_err());
        assert!(fs.remove_file(&d.join("a")).is_err());
        fs.disarm();
        fs.remove_file(&d.join("a")).unwrap();
    }
}
