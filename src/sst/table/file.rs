//! A table's file descriptor: held open, or closed by the store's
//! [`TableCache`] and reopened on the next read that needs it.
//!
//! A reopened file must be the table that was opened: the same path (the
//! store never reuses a file number), and either the same device, inode,
//! length and modification time ([`FileIdentity`]: one `fstat`, no read),
//! or, where those differ or the file system cannot give them (a file
//! restored from a copy, say), the same size and footer bytes. Anything
//! else is [`Error::Corruption`] naming the file, and a failed open an
//! [`Error::Io`]. Either leaves the descriptor closed, so a later read
//! tries again. Reading the footer on every reopen would cost a direct
//! store one device round trip per reopen: at 10^8 keys under 1,024 open
//! files, most existing-key gets (docs/design.md, "Table cache").
//!
//! So that a reopen finds the file, a table the store no longer names
//! deletes its file itself when the last holder drops it
//! ([`TableFile::remove_on_drop`]): an old version, iterator or snapshot
//! may still read it, with its descriptor closed.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::fs::{FileIdentity, FileSystem, ReadMode, ReadableFile, open_read_in};
use crate::sst::format::FOOTER_LEN;
use crate::sst::table_cache::{Slot, TableCache};

use super::read::read_at;

/// The descriptor of one table and what it takes to reopen it.
#[derive(Debug)]
pub(super) struct TableFile {
    slot: Arc<Slot>,
    path: PathBuf,
    fs: Arc<dyn FileSystem>,
    read_mode: ReadMode,
    /// The size and footer bytes found at open.
    size: u64,
    footer: [u8; FOOTER_LEN],
    /// The file's identity at open, if its file system gives one.
    identity: Option<FileIdentity>,
    /// Delete the file when the table is dropped.
    remove_on_drop: AtomicBool,
}

impl TableFile {
    /// Wraps `file`, just opened at `path` (not yet counted by `cache`:
    /// [`admit`](Self::admit) once the table is open).
    pub(super) fn new(
        file: Arc<dyn ReadableFile>,
        path: PathBuf,
        fs: Arc<dyn FileSystem>,
        read_mode: ReadMode,
        cache: Option<Arc<TableCache>>,
    ) -> Self {
        TableFile {
            slot: Arc::new(Slot::new(file, cache)),
            path,
            fs,
            read_mode,
            size: 0,
            footer: [0; FOOTER_LEN],
            identity: None,
            remove_on_drop: AtomicBool::new(false),
        }
    }

    /// Records what a reopen must find again: the file's size and footer,
    /// and its identity (`identity`: taken from the descriptor just opened).
    pub(super) fn expect(
        &mut self,
        size: u64,
        footer: [u8; FOOTER_LEN],
        identity: Option<FileIdentity>,
    ) {
        self.size = size;
        self.footer = footer;
        self.identity = identity;
    }

    /// Counts the open table in its cache (which may close others').
    pub(super) fn admit(&self) {
        if let Some(c) = self.slot.cache() {
            c.admit(&self.slot);
        }
    }

    /// The descriptor, reopened if the cache closed it. The caller reads
    /// through its own reference: a close meanwhile takes effect after.
    pub(super) fn get(&self) -> Result<Arc<dyn ReadableFile>> {
        self.slot.touch();
        let mut file = self.slot.lock();
        if let Some(f) = file.as_ref() {
            return Ok(f.clone());
        }
        let f = self.reopen()?;
        *file = Some(f.clone());
        drop(file);
        if let Some(c) = self.slot.cache() {
            c.count_reopen();
            c.admit(&self.slot);
        }
        Ok(f)
    }

    /// Deletes the file when this table is dropped (after its descriptor
    /// closes), whichever holder drops it last.
    pub(super) fn remove_on_drop(&self) {
        self.remove_on_drop.store(true, Ordering::Release);
    }

    /// Whether the descriptor is open now.
    pub(super) fn is_open(&self) -> bool {
        self.slot.lock().is_some()
    }

    /// Opens the file again and checks it is the same table.
    fn reopen(&self) -> Result<Arc<dyn ReadableFile>> {
        let path = &self.path;
        let f = open_read_in(self.fs.as_ref(), path, self.read_mode)
            .map_err(|e| Error::io(format!("reopen {}", path.display()), e))?;
        if self.identity.is_some() && f.identity() == self.identity {
            return Ok(f);
        }
        let size = f
            .len()
            .map_err(|e| Error::io(format!("stat {}", path.display()), e))?;
        if size != self.size {
            return Err(Error::corruption(
                path,
                0,
                format!(
                    "reopened table file is {size} bytes, was {} when opened",
                    self.size
                ),
            ));
        }
        let at = size.saturating_sub(FOOTER_LEN as u64);
        let mut footer = [0u8; FOOTER_LEN];
        read_at(f.as_ref(), path, &mut footer, at)?;
        if footer != self.footer {
            return Err(Error::corruption(
                path,
                at,
                "reopened table file has another footer than when opened",
            ));
        }
        Ok(f)
    }
}

impl Drop for TableFile {
    fn drop(&mut self) {
        if self.remove_on_drop.load(Ordering::Acquire) {
            self.slot.lock().take();
            // A failure leaves a file no version names: the next open
            // deletes it.
            let _ = self.fs.remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::test_tables::build;
    use super::super::{Table, TableOpenOptions};
    use super::*;
    use crate::sst::TableBuilderOptions;

    const N: usize = 500;

    fn small_blocks() -> TableBuilderOptions {
        TableBuilderOptions {
            block_size: 256,
            ..Default::default()
        }
    }

    /// Three tables of the same keys in `root`'s sub-directories, sharing
    /// a cache of one open file.
    fn three(root: &Path, cache: &Arc<TableCache>) -> Vec<Table> {
        (0..3)
            .map(|i| {
                let d = root.join(i.to_string());
                std::fs::create_dir(&d).unwrap();
                let path = build(&d, N, small_blocks());
                let opts = TableOpenOptions {
                    file_id: i,
                    table_cache: Some(cache.clone()),
                    ..TableOpenOptions::default()
                };
                Table::open(&path, opts).unwrap()
            })
            .collect()
    }

    fn value(t: &Table, i: usize) -> Result<Option<Vec<u8>>> {
        let r = t.get_unhashed(format!("k{i:06}").as_bytes())?;
        Ok(r.entry.map(|(_, v)| v.to_vec()))
    }

    #[test]
    fn tables_past_the_capacity_reopen_their_files_on_demand() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(TableCache::new(1));
        let tables = three(dir.path(), &cache);
        assert_eq!(cache.open_files(), 1);
        assert_eq!(tables.iter().filter(|t| t.file_is_open()).count(), 1);
        for round in 0..4 {
            for t in &tables {
                let i = (round * 37) % N;
                assert_eq!(value(t, i).unwrap(), Some(format!("v{i}").into_bytes()));
                assert!(t.file_is_open());
                assert_eq!(cache.open_files(), 1);
            }
        }
        // With one open file among three tables read in turn, every get
        // meets its table's file closed.
        assert_eq!(cache.reopens(), 12);
        // A scan reads on across reopens: the tables take turns.
        let mut iters: Vec<_> = tables.iter().map(|t| t.iter()).collect();
        for _ in 0..N {
            for it in &mut iters {
                it.next().unwrap().unwrap();
            }
        }
        assert!(iters.iter_mut().all(|it| it.next().is_none()));
        assert!(cache.reopens() > 12);
        for t in &tables {
            t.verify_all().unwrap();
        }
    }

    #[test]
    fn a_reopen_finds_the_same_file_or_says_why_not() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(TableCache::new(1));
        let tables = three(dir.path(), &cache);
        let path = tables[0].path().to_path_buf();
        let saved = std::fs::read(&path).unwrap();
        assert!(!tables[0].file_is_open());

        // Missing: an I/O error naming the file; the next read tries again.
        std::fs::remove_file(&path).unwrap();
        let e = value(&tables[0], 3).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
        assert!(e.to_string().contains(&*path.to_string_lossy()), "{e}");
        std::fs::write(&path, &saved).unwrap();
        assert_eq!(value(&tables[0], 3).unwrap(), Some(b"v3".to_vec()));

        // Another table under the same name: corruption, not its values.
        value(&tables[1], 0).unwrap();
        assert!(!tables[0].file_is_open());
        let other = build(dir.path(), N + 1, small_blocks());
        std::fs::rename(&other, &path).unwrap();
        let e = value(&tables[0], 3).unwrap_err();
        assert!(matches!(e, Error::Corruption { .. }), "{e}");
        // Same size, another footer.
        let mut forged = saved.clone();
        let last = forged.len() - 20;
        forged[last] ^= 1;
        std::fs::write(&path, &forged).unwrap();
        let e = value(&tables[0], 3).unwrap_err();
        assert!(e.to_string().contains("another footer"), "{e}");
        std::fs::write(&path, &saved).unwrap();
        assert_eq!(value(&tables[0], 3).unwrap(), Some(b"v3".to_vec()));
    }

    /// A reopen of the unchanged file reads nothing (one `fstat` tells it
    /// is the same file): each get below meets its table's file closed and
    /// makes one read request, its data block. A file written in place
    /// since (a later modification time) has its footer read and compared.
    #[test]
    fn a_reopen_of_the_unchanged_file_reads_only_what_the_get_needs() {
        use crate::fs::RealFs;
        use crate::fs::latency::{Latency, LatencyFs};
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(TableCache::new(1));
        let fs = Arc::new(LatencyFs::new(
            RealFs::shared(),
            Latency::Fixed(std::time::Duration::ZERO),
        ));
        let tables: Vec<Table> = (0..3)
            .map(|i| {
                let d = dir.path().join(i.to_string());
                std::fs::create_dir(&d).unwrap();
                let path = build(&d, N, small_blocks());
                let opts = TableOpenOptions {
                    file_id: i,
                    table_cache: Some(cache.clone()),
                    fs: Some(fs.clone() as Arc<dyn FileSystem>),
                    ..TableOpenOptions::default()
                };
                Table::open(&path, opts).unwrap()
            })
            .collect();
        let before = fs.reads().requests;
        for round in 0..4 {
            for t in &tables {
                let i = (round * 37) % N;
                assert_eq!(value(t, i).unwrap(), Some(format!("v{i}").into_bytes()));
            }
        }
        assert_eq!(cache.reopens(), 12);
        assert_eq!(fs.reads().requests - before, 12);

        // Written in place, same inode and size, another footer.
        value(&tables[1], 0).unwrap();
        assert!(!tables[0].file_is_open());
        let path = tables[0].path().to_path_buf();
        let mut forged = std::fs::read(&path).unwrap();
        let last = forged.len() - 20;
        forged[last] ^= 1;
        std::fs::write(&path, &forged).unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let e = value(&tables[0], 3).unwrap_err();
        assert!(e.to_string().contains("another footer"), "{e}");
    }

    #[test]
    fn a_table_marked_for_removal_reads_its_file_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(TableCache::new(1));
        let mut tables = three(dir.path(), &cache);
        let t = tables.remove(0);
        let path = t.path().to_path_buf();
        t.remove_file_on_drop();
        // Still there: the table reopens it as often as it needs.
        for i in 0..10 {
            value(&tables[i % 2], i).unwrap();
            assert!(!t.file_is_open());
            assert_eq!(value(&t, i).unwrap(), Some(format!("v{i}").into_bytes()));
        }
        assert!(path.exists());
        drop(t);
        assert!(!path.exists());
        // The others are not removed.
        drop(tables);
        assert!(dir.path().join("1/t.sst").exists());
    }
}
