//! Table files prepared ahead of the compactions that fill them, and the
//! files compactions make obsolete deleted behind them, on a helper thread
//! of their own.
//!
//! Creating a file and closing the last descriptor of an unlinked one are a
//! compaction's costliest system calls after its reads and writes: the
//! file system allocates, or frees, an inode and its blocks. Profiled at
//! 10^7 keys on ext4 they took 15% of the compaction thread's CPU, the
//! creates growing with the files deleted in the minute before (ext4 skips
//! recently freed inodes one by one). The compaction thread is what a long
//! load waits for, while the other core idles half the time, so the
//! helper takes that work off it: it keeps [`READY`] empty table files
//! prepared, each under a number reserved like any other, and retires the
//! files each compaction made obsolete ([`TableFiles::retire`]).
//!
//! Reusing a retired file instead of deleting it (renamed to its new
//! number and truncated, an inode kept instead of one freed and one
//! allocated, as RocksDB reuses logs) cut the 10^7 load by a further 11%,
//! but it is unsafe here: a store opened read-only beside the writer, in
//! this process or another, may hold a retired file open, and would read
//! the new table's blocks, checksums intact, at the old one's offsets
//! (`tests/db_read_only.rs` caught it). A deleted file keeps its contents
//! for whoever still has it open.
//!
//! A prepared file is a table file that no version names: a crash
//! leaves it for recovery to delete with the other unreferenced tables, and
//! [`TableFiles::stop`] deletes those still unused.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::db::version::{FileHandle, Version};
use crate::db::{filename, inject};
use crate::error::{Error, Result};
use crate::fs::{FileSystem, WritableFile};

/// Table files kept created ahead: enough for a compaction's main thread
/// and its shards to each start a file while the helper makes more.
const READY: usize = 4;

/// A new, empty table file.
pub(crate) struct NewTable {
    /// Its path (the number is reserved in the MANIFEST).
    pub path: PathBuf,
    /// The file, open for writing.
    pub file: Box<dyn WritableFile>,
}

/// Creates table file `number` in `dir`.
pub(crate) fn create_table(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<NewTable> {
    let path = filename::table_file(dir, number);
    let file = fs
        .create_new(&path)
        .map_err(|e| Error::io(format!("create {}", path.display()), e))?;
    Ok(NewTable { path, file })
}

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Pending {
    ready: VecDeque<NewTable>,
    jobs: Vec<Job>,
    /// The helper's last create failed: it waits for a file to be taken
    /// before trying again (the taker, creating its own, meets the error).
    failed: bool,
    /// A file has been asked for: preparing starts with the first
    /// compaction, so a store that never compacts gets no files.
    wanted: bool,
    /// Whether a helper thread runs [`TableFiles::run`].
    running: bool,
    stop: bool,
}

/// The prepared files and the clean-up queue, shared by the compactions and
/// the helper thread.
pub(crate) struct TableFiles {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    pending: Mutex<Pending>,
    cv: Condvar,
}

impl TableFiles {
    /// Table files for the store in `dir`; nothing is prepared until a
    /// helper thread calls [`TableFiles::run`].
    pub(crate) fn new(dir: &Path, fs: Arc<dyn FileSystem>) -> Self {
        TableFiles {
            dir: dir.to_path_buf(),
            fs,
            pending: Mutex::new(Pending::default()),
            cv: Condvar::new(),
        }
    }

    fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A prepared table file, if one is ready.
    pub(crate) fn take(&self) -> Option<NewTable> {
        let mut p = self.pending();
        let t = p.ready.pop_front();
        p.failed = false;
        p.wanted = true;
        drop(p);
        self.cv.notify_one();
        t
    }

    /// Runs `job` on the helper thread, after the jobs handed over before
    /// it; here and now if no helper runs (or it has stopped).
    fn later(&self, job: impl FnOnce() + Send + 'static) {
        let mut p = self.pending();
        if !p.running || p.stop {
            drop(p);
            job();
            return;
        }
        p.jobs.push(Box::new(job));
        drop(p);
        self.cv.notify_one();
    }

    /// Retires `obsolete`, the tables a compaction removed from the store,
    /// and `version`, the version it was picked from, behind the caller:
    /// drops both, and with them the tables, which delete their files as
    /// they go. A table still held elsewhere (by an older version that an
    /// iterator, snapshot or read still uses) deletes its file when that
    /// last holder drops it: until then the table may have to reopen the
    /// file, whose descriptor the table cache may have closed.
    pub(crate) fn retire(&self, obsolete: Vec<Arc<FileHandle>>, version: Arc<Version>) {
        for f in &obsolete {
            f.table.remove_file_on_drop();
        }
        self.later(move || {
            drop(version);
            drop(obsolete);
        });
    }

    /// The helper thread's loop: runs the jobs handed over and, from the
    /// first [`TableFiles::take`] on, keeps [`READY`] files prepared,
    /// drawing their numbers from `next_number`, until [`TableFiles::stop`].
    pub(crate) fn run(&self, next_number: &dyn Fn() -> Result<u64>) {
        /// Marks the helper gone however `run` ends, a panic included, so
        /// that later jobs run on their caller's thread instead of waiting
        /// for a thread that is no more.
        struct Running<'a>(&'a TableFiles);
        impl Drop for Running<'_> {
            fn drop(&mut self) {
                self.0.pending().running = false;
            }
        }
        self.pending().running = true;
        // Declared before the lock guard below, so dropped after it.
        let _running = Running(self);
        let mut p = self.pending();
        loop {
            if p.stop {
                return;
            }
            if !p.jobs.is_empty() {
                let jobs = std::mem::take(&mut p.jobs);
                drop(p);
                jobs.into_iter().for_each(|job| job());
                p = self.pending();
                continue;
            }
            if p.wanted && p.ready.len() < READY && !p.failed {
                drop(p);
                let made = inject::hit(&self.dir, inject::Point::Files)
                    .and_then(|()| next_number())
                    .and_then(|n| create_table(&*self.fs, &self.dir, n));
                p = self.pending();
                match made {
                    Ok(t) if p.stop => self.discard(t),
                    Ok(t) => p.ready.push_back(t),
                    Err(_) => p.failed = true,
                }
                continue;
            }
            p = self.cv.wait(p).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Stops the helper (its thread returns from [`TableFiles::run`]), then
    /// runs the jobs still queued and deletes the prepared files no one
    /// took. Jobs handed over afterwards run at once.
    pub(crate) fn stop(&self) {
        let mut p = self.pending();
        p.stop = true;
        let jobs = std::mem::take(&mut p.jobs);
        drop(p);
        self.cv.notify_all();
        jobs.into_iter().for_each(|job| job());
        let mut p = self.pending();
        let ready = std::mem::take(&mut p.ready);
        drop(p);
        ready.into_iter().for_each(|t| self.discard(t));
    }

    /// Closes and deletes a prepared file no compaction will fill.
    fn discard(&self, t: NewTable) {
        drop(t.file);
        let _ = self.fs.remove_file(&t.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::RealFs;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn prepares_files_runs_jobs_in_order_and_stop_deletes_the_unused() {
        let dir = tempfile::tempdir().unwrap();
        let files = Arc::new(TableFiles::new(dir.path(), Arc::new(RealFs)));
        // No helper yet: a job runs at once, nothing is prepared.
        let ran = Arc::new(Mutex::new(Vec::new()));
        let r = ran.clone();
        files.later(move || r.lock().unwrap().push(0));
        assert_eq!(*ran.lock().unwrap(), [0]);
        assert!(files.take().is_none());

        // The take above asked for files; a helper starting now must not
        // see that request, or it prepares files before the one below.
        files.pending().wanted = false;
        let counter = Arc::new(AtomicU64::new(10));
        let helper = {
            let (files, counter) = (files.clone(), counter.clone());
            std::thread::spawn(move || files.run(&|| Ok(counter.fetch_add(1, Ordering::SeqCst))))
        };
        while !files.pending().running {
            std::thread::yield_now();
        }
        // Nothing is prepared before a file is asked for; then the helper
        // prepares READY files, numbered in order.
        assert!(files.pending().ready.is_empty());
        assert!(files.take().is_none());
        while files.pending().ready.len() < READY {
            std::thread::yield_now();
        }
        let t = files.take().unwrap();
        assert_eq!(t.path, dir.path().join("000010.sst"));
        assert!(t.path.exists());
        for i in 1..=3 {
            let r = ran.clone();
            files.later(move || r.lock().unwrap().push(i));
        }
        while ran.lock().unwrap().len() < 4 {
            std::thread::yield_now();
        }
        assert_eq!(*ran.lock().unwrap(), [0, 1, 2, 3]);
        files.stop();
        helper.join().unwrap();
        // The taken file stays; the prepared, untaken ones are gone.
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["000010.sst"]);
        // After stop, jobs run at once.
        let r = ran.clone();
        files.later(move || r.lock().unwrap().push(4));
        assert_eq!(ran.lock().unwrap().len(), 5);
    }

    /// Retiring deletes the files after dropping the version; a file a
    /// reader still holds stays until the reader lets go of it, so the
    /// table can reopen it meanwhile.
    #[test]
    fn retired_files_are_deleted_when_their_last_holder_goes() {
        use crate::db::compaction::test_table;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let files = Arc::new(TableFiles::new(d, Arc::new(RealFs)));
        let helper = {
            let files = files.clone();
            std::thread::spawn(move || files.run(&|| Ok(100)))
        };
        let free = test_table(d, 1, "a", "b");
        let held = test_table(d, 2, "c", "d");
        let reader = held.clone();
        let mut v = Version::empty(2);
        v.levels[1] = vec![free.clone(), held.clone()];
        v.sort();
        files.retire(vec![free, held], Arc::new(v));
        files.stop();
        helper.join().unwrap();
        assert!(!d.join("000001.sst").exists());
        assert!(d.join("000002.sst").exists());
        assert_eq!(reader.table.iter().count(), 2);
        drop(reader);
        assert!(!d.join("000002.sst").exists());
    }

    #[test]
    fn a_failed_create_waits_for_a_take_before_trying_again() {
        let dir = tempfile::tempdir().unwrap();
        let files = Arc::new(TableFiles::new(dir.path(), Arc::new(RealFs)));
        let calls = Arc::new(AtomicU64::new(0));
        let helper = {
            let (files, calls) = (files.clone(), calls.clone());
            std::thread::spawn(move || {
                files.run(&|| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    Err(Error::invalid("no numbers"))
                })
            })
        };
        assert!(files.take().is_none());
        while calls.load(Ordering::SeqCst) < 1 {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(calls.load(Ordering::SeqCst), 1, "retried without a take");
        assert!(files.take().is_none());
        while calls.load(Ordering::SeqCst) < 2 {
            std::thread::yield_now();
        }
        files.stop();
        helper.join().unwrap();
    }
}
