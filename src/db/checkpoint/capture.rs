//! The file system a checkpoint kept beside the store is made through
//! ([`Db::checkpoint_in_bucket`]): the checkpoint machinery of this module
//! runs unchanged, into a directory that exists only in memory. Paths
//! under that directory (and its temporary sibling) are memory; every
//! other path is the store's own file system. A table's hard link into it
//! records the table by name instead of copying it; a log's link is
//! refused, so the log is copied, as it stands at the checkpoint's moment.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

use super::report::temp_dir;
use crate::db::filename::{self, FileKind};
use crate::fs::kept::KeptCheckpoint;
use crate::fs::{FileLock, FileSystem, ReadableFile, TableLocation, WritableFile};

/// What the checkpoint wrote into memory.
#[derive(Debug, Default)]
struct Held {
    files: BTreeMap<PathBuf, Vec<u8>>,
    dirs: BTreeSet<PathBuf>,
    /// Tables linked in: the link's path, and the store's table it names.
    links: BTreeMap<PathBuf, PathBuf>,
}

/// See the module docs.
#[derive(Debug)]
pub(super) struct CaptureFs<'a> {
    store_fs: &'a dyn FileSystem,
    /// The store's directory.
    store: PathBuf,
    /// The directory in memory the checkpoint is made into.
    target: PathBuf,
    tmp: PathBuf,
    held: Arc<Mutex<Held>>,
    /// Where the checkpoint will live, if not beside the store: the file
    /// system and directory whose table location its `OPTIONS` records.
    home: Option<(&'a dyn FileSystem, PathBuf)>,
}

fn lock(m: &Mutex<Held>) -> MutexGuard<'_, Held> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn not_found(p: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, p.display().to_string())
}

impl<'a> CaptureFs<'a> {
    /// A capture beside the store in `store` on `store_fs`.
    pub(super) fn new(store_fs: &'a dyn FileSystem, store: &Path) -> Self {
        let target = store.join(".checkpoint-in-memory");
        let tmp = temp_dir(&target).expect("a named directory");
        CaptureFs {
            store_fs,
            store: store.to_path_buf(),
            target,
            tmp,
            held: Arc::default(),
            home: None,
        }
    }

    /// The checkpoint will be written into `dir` on `fs`: its `OPTIONS`
    /// record where that file system keeps tables.
    pub(super) fn homed(mut self, fs: &'a dyn FileSystem, dir: &Path) -> Self {
        self.home = Some((fs, dir.to_path_buf()));
        self
    }

    /// The directory in memory to make the checkpoint into.
    pub(super) fn target(&self) -> &Path {
        &self.target
    }

    fn mine(&self, p: &Path) -> bool {
        p.starts_with(&self.target) || p.starts_with(&self.tmp)
    }

    /// What the checkpoint made, once made into [`Self::target`].
    pub(super) fn kept(&self, sequence: u64, created_unix_ms: u64) -> KeptCheckpoint {
        let held = lock(&self.held);
        let rel = |p: &Path, base: &Path| -> Option<String> {
            Some(p.strip_prefix(base).ok()?.to_str()?.to_string())
        };
        let files = held
            .files
            .iter()
            .filter_map(|(p, data)| {
                let r = rel(p, &self.target)?;
                Some((r, Bytes::from(data.clone())))
            })
            .collect();
        let tables = held
            .links
            .iter()
            .filter(|(to, _)| to.starts_with(&self.target))
            .filter_map(|(_, from)| rel(from, &self.store))
            .collect();
        KeptCheckpoint {
            files,
            tables,
            sequence,
            created_unix_ms,
        }
    }
}

/// A file being written into memory: its bytes land when it is dropped
/// or synced.
#[derive(Debug)]
struct MemWritable {
    held: Arc<Mutex<Held>>,
    path: PathBuf,
    data: Vec<u8>,
}

impl WritableFile for MemWritable {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.data.extend_from_slice(buf);
        lock(&self.held)
            .files
            .insert(self.path.clone(), self.data.clone());
        Ok(())
    }
    fn sync_data(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[derive(Debug)]
struct MemReadable(Bytes);

impl ReadableFile for MemReadable {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = start.checked_add(buf.len()).filter(|&e| e <= self.0.len());
        match end {
            Some(end) => {
                buf.copy_from_slice(&self.0[start..end]);
                Ok(())
            }
            None => Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
        }
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.len() as u64)
    }
}

#[derive(Debug)]
struct MemLock;

impl FileLock for MemLock {}

impl FileSystem for CaptureFs<'_> {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        if !self.mine(path) {
            return self.store_fs.create_new(path);
        }
        let mut h = lock(&self.held);
        if h.files.contains_key(path) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                path.display().to_string(),
            ));
        }
        h.files.insert(path.to_path_buf(), Vec::new());
        Ok(Box::new(MemWritable {
            held: self.held.clone(),
            path: path.to_path_buf(),
            data: Vec::new(),
        }))
    }

    fn create_truncate(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        if !self.mine(path) {
            return self.store_fs.create_truncate(path);
        }
        lock(&self.held)
            .files
            .insert(path.to_path_buf(), Vec::new());
        Ok(Box::new(MemWritable {
            held: self.held.clone(),
            path: path.to_path_buf(),
            data: Vec::new(),
        }))
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        if !self.mine(path) {
            return self.store_fs.open_read(path);
        }
        let h = lock(&self.held);
        let data = h.files.get(path).ok_or_else(|| not_found(path))?;
        Ok(Arc::new(MemReadable(Bytes::from(data.clone()))))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        match (self.mine(from), self.mine(to)) {
            (false, false) => return self.store_fs.rename(from, to),
            (true, true) => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "a rename between memory and the store",
                ));
            }
        }
        let mut h = lock(&self.held);
        if let Some(data) = h.files.remove(from) {
            h.files.insert(to.to_path_buf(), data);
            return Ok(());
        }
        if !h.dirs.contains(from) {
            return Err(not_found(from));
        }
        // A directory: everything under it moves.
        let moved =
            |p: &Path| -> Option<PathBuf> { p.strip_prefix(from).ok().map(|rest| to.join(rest)) };
        let files = std::mem::take(&mut h.files);
        h.files = files
            .into_iter()
            .map(|(p, d)| (moved(&p).unwrap_or(p), d))
            .collect();
        let links = std::mem::take(&mut h.links);
        h.links = links
            .into_iter()
            .map(|(p, f)| (moved(&p).unwrap_or(p), f))
            .collect();
        let dirs = std::mem::take(&mut h.dirs);
        h.dirs = dirs.into_iter().map(|p| moved(&p).unwrap_or(p)).collect();
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        if !self.mine(path) {
            return self.store_fs.remove_file(path);
        }
        let mut h = lock(&self.held);
        let file = h.files.remove(path).is_some();
        let link = h.links.remove(path).is_some();
        if file || link {
            Ok(())
        } else {
            Err(not_found(path))
        }
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.mine(dir) {
            return Ok(());
        }
        self.store_fs.sync_dir(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        if !self.mine(dir) {
            return self.store_fs.list_dir(dir);
        }
        let h = lock(&self.held);
        if !h.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let mut names = BTreeSet::new();
        let paths = h.files.keys().chain(h.links.keys()).chain(h.dirs.iter());
        for p in paths {
            if p.parent() == Some(dir)
                && let Some(n) = p.file_name()
            {
                names.insert(n.to_os_string());
            }
        }
        Ok(names.into_iter().collect())
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        if !self.mine(path) {
            return self.store_fs.file_len(path);
        }
        let h = lock(&self.held);
        if let Some(d) = h.files.get(path) {
            return Ok(d.len() as u64);
        }
        if let Some(from) = h.links.get(path) {
            return self.store_fs.file_len(from);
        }
        if h.dirs.contains(path) {
            return Ok(0);
        }
        Err(not_found(path))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        if !self.mine(dir) {
            return self.store_fs.create_dir_all(dir);
        }
        let mut h = lock(&self.held);
        for d in dir.ancestors().filter(|d| self.mine(d)) {
            h.dirs.insert(d.to_path_buf());
        }
        Ok(())
    }

    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn FileLock>>> {
        if self.mine(path) {
            return Ok(Some(Box::new(MemLock)));
        }
        self.store_fs.lock(path)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        if !self.mine(to) {
            return self.store_fs.hard_link(from, to);
        }
        let table = from
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(filename::parse_file_name)
            .is_some_and(|(k, _)| k == FileKind::Table);
        if !table || self.mine(from) {
            // A log changes after the moment: copied as it stands.
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "only tables are kept by name",
            ));
        }
        // The table must be there: its link names it from now on.
        self.store_fs.file_len(from)?;
        lock(&self.held)
            .links
            .insert(to.to_path_buf(), from.to_path_buf());
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        if !self.mine(dir) {
            return self.store_fs.remove_dir(dir);
        }
        let mut h = lock(&self.held);
        if h.dirs.remove(dir) {
            Ok(())
        } else {
            Err(not_found(dir))
        }
    }

    fn remote_reads(&self) -> bool {
        self.store_fs.remote_reads()
    }

    fn table_location(&self, dir: &Path) -> Option<TableLocation> {
        match (dir.strip_prefix(&self.target), &self.home) {
            (Ok(rest), Some((fs, home))) => fs.table_location(&home.join(rest)),
            // The checkpoint's tables are the store's.
            (Ok(rest), None) => self.store_fs.table_location(&self.store.join(rest)),
            (Err(_), _) => self.store_fs.table_location(dir),
        }
    }
}
