//! `Db::open_read_only`: no lock, no file created, written, renamed or
//! deleted; the logs' writes visible from memory; every write refused; and it
//! opens beside a running writer, however often the writer flushes and
//! compacts.

use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bloomlsm::fs::{FileLock, FileSystem, ReadableFile, RealFs, WritableFile};
use bloomlsm::{Db, Error, Options};

mod common;
use common::files::tree;
use common::keys::key;
use common::scratch_dir;

/// Reads through the real file system; every other operation fails, as on a
/// directory the process may not write (the tests run as root, which file
/// modes would not stop).
#[derive(Debug)]
struct NoWrites;

fn refused() -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        "read-only test file system",
    )
}

impl FileSystem for NoWrites {
    fn create_new(&self, _: &Path) -> io::Result<Box<dyn WritableFile>> {
        Err(refused())
    }
    fn create_truncate(&self, _: &Path) -> io::Result<Box<dyn WritableFile>> {
        Err(refused())
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        RealFs.open_read(path)
    }
    fn rename(&self, _: &Path, _: &Path) -> io::Result<()> {
        Err(refused())
    }
    fn remove_file(&self, _: &Path) -> io::Result<()> {
        Err(refused())
    }
    fn sync_dir(&self, _: &Path) -> io::Result<()> {
        Err(refused())
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        RealFs.list_dir(dir)
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        RealFs.file_len(path)
    }
    fn create_dir_all(&self, _: &Path) -> io::Result<()> {
        Err(refused())
    }
    fn lock(&self, _: &Path) -> io::Result<Option<Box<dyn FileLock>>> {
        Err(refused())
    }
}

fn options() -> Options {
    Options::default()
        .write_buffer_size(8 << 10)
        .target_file_size(4096)
        .level1_max_bytes(16 << 10)
        .dynamic_level_bytes(false)
        .level_size_multiplier(2)
        .block_size(1024)
}

#[test]
fn reads_everything_and_changes_nothing() {
    let dir = scratch_dir();
    {
        let db = Db::open(dir.path(), options()).unwrap();
        for i in 0..3000 {
            db.put(key(i), format!("value{i}")).unwrap();
        }
        db.compact().unwrap();
        for i in 0..40 {
            db.delete(key(i * 7)).unwrap(); // these stay in the WAL
        }
        db.put("wal-only", "yes").unwrap();
        db.close().unwrap();
    }
    let before = tree(dir.path());
    let opts = options().fs(Arc::new(NoWrites));
    let db = Db::open_read_only(dir.path(), opts).unwrap();
    assert_eq!(db.get("wal-only").unwrap().as_deref(), Some(&b"yes"[..]));
    assert_eq!(db.get(key(7)).unwrap(), None);
    assert_eq!(db.get(key(8)).unwrap().as_deref(), Some(&b"value8"[..]));
    assert_eq!(db.scan(..).count(), 3000 - 40 + 1);
    db.verify().unwrap();
    assert!(db.stats().levels.iter().any(|l| l.files > 0));
    for r in [
        db.put("k", "v"),
        db.delete("k"),
        db.flush(),
        db.compact(),
        db.maintain(),
    ] {
        assert!(matches!(r, Err(Error::ReadOnly)), "{r:?}");
    }
    db.close().unwrap();
    assert!(tree(dir.path()) == before, "the directory changed");
}

#[test]
fn refuses_a_directory_without_a_store() {
    let dir = scratch_dir();
    let e = Db::open_read_only(dir.path(), options()).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let e = Db::open_read_only(dir.path().join("missing"), options()).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(tree(dir.path()).is_empty(), "nothing created");
}

/// A writer puts, flushes and compacts while readers open the store
/// read-only again and again: each open succeeds and sees every write
/// acknowledged before it began.
///
/// The count of opens must not hang on thread timing: before each block of
/// 1,000 puts after the first, the writer waits until the reader has finished
/// one open per block written so far. The reader never waits, so its opens
/// still run during the writer's puts, flushes and compactions.
#[test]
fn opens_beside_a_busy_writer() {
    const WRITES: u64 = 30_000;
    const BLOCK: u64 = 1000;
    let dir = scratch_dir();
    let writer = Db::open(dir.path(), options()).unwrap();
    let acked = AtomicU64::new(0);
    let opens = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..WRITES {
                if i > 0 && i % BLOCK == 0 {
                    while opens.load(Ordering::Acquire) < i / BLOCK {
                        if failed.load(Ordering::Acquire) {
                            return;
                        }
                        std::thread::yield_now();
                    }
                }
                if failed.load(Ordering::Acquire) {
                    return;
                }
                writer.put(key(i), format!("value{i}")).unwrap();
                acked.store(i + 1, Ordering::Release);
                if i % BLOCK == BLOCK - 1 {
                    writer.compact().unwrap();
                }
            }
        });
        loop {
            let seen = acked.load(Ordering::Acquire);
            if seen == WRITES {
                break;
            }
            let n = opens.load(Ordering::Relaxed);
            let r = Db::open_read_only(dir.path(), options()).unwrap_or_else(|e| {
                failed.store(true, Ordering::Release);
                panic!("read-only open {n} beside the writer: {e}")
            });
            for i in (0..seen).step_by(97).chain(seen.checked_sub(1)) {
                let v = r.get(key(i)).unwrap();
                if v.as_deref() != Some(format!("value{i}").as_bytes()) {
                    failed.store(true, Ordering::Release);
                    panic!("open {n}: key {i} of {seen} acknowledged: {v:?}");
                }
            }
            opens.fetch_add(1, Ordering::Release);
        }
    });
    let compactions = writer.stats().compactions;
    writer.close().unwrap();
    let opens = opens.into_inner();
    assert!(opens >= WRITES / BLOCK - 1, "{opens} opens");
    assert!(compactions >= 20, "{compactions} compactions");
}

/// Read-only opens in a loop beside a writer whose store holds thousands of
/// small tables, so that every open takes long enough for the writer to
/// flush, compact, delete logs and tables and rewrite the MANIFEST under it
/// many times: no open may fail (a log or table the writer deleted since
/// the reader's MANIFEST read is the writer moving on, never corruption),
/// and each sees every write acknowledged before it began.
#[test]
fn opens_beside_a_writer_with_thousands_of_tables() {
    const OPENS: u64 = 40;
    let dir = scratch_dir();
    let opts = || {
        Options::default()
            .write_buffer_size(16 << 10)
            .target_file_size(4096)
            .level1_max_bytes(64 << 10)
            .dynamic_level_bytes(false)
            .block_size(1024)
            .compression(bloomlsm::CompressionOptions::none())
    };
    let value = |i: u64| format!("value{i}-{}", "v".repeat(64));
    // Every table stays open, in the writer and in each reader: as many
    // descriptors as the process may have.
    #[cfg(target_os = "linux")]
    raise_open_file_limit();
    let writer = Db::open(dir.path(), opts()).unwrap();
    // Thousands of tables before the first open.
    for i in 0..100_000 {
        writer.put(key(i), value(i)).unwrap();
    }
    // However far the compaction thread got: the data in 4 KiB tables.
    writer.compact().unwrap();
    let tables: usize = writer.stats().levels.iter().map(|l| l.files).sum();
    assert!(tables >= 1500, "{tables} tables");
    let acked = AtomicU64::new(100_000);
    let done = AtomicBool::new(false);
    let opened = AtomicU64::new(0);
    let mut failures = Vec::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            // Up to 1,500 writes (about ten flushes and the compactions they
            // bring) per open begun: the store changes under every open,
            // and grows no faster than the opens go.
            let first = acked.load(Ordering::Acquire);
            let mut i = first;
            while !done.load(Ordering::Acquire) {
                if i - first >= 1500 * (opened.load(Ordering::Acquire) + 1) {
                    std::thread::yield_now();
                    continue;
                }
                writer.put(key(i), value(i)).unwrap();
                i += 1;
                acked.store(i, Ordering::Release);
            }
        });
        for n in 0..OPENS {
            opened.store(n, Ordering::Release);
            let seen = acked.load(Ordering::Acquire);
            match Db::open_read_only(dir.path(), opts()) {
                Ok(r) => {
                    for i in (0..seen).step_by(997).chain(seen.checked_sub(1)) {
                        let v = r.get(key(i)).unwrap();
                        assert_eq!(
                            v.as_deref(),
                            Some(value(i).as_bytes()),
                            "open {n}: key {i} of {seen} acknowledged"
                        );
                    }
                }
                Err(e) => failures.push(format!("open {n}: {e}")),
            }
        }
        done.store(true, Ordering::Release);
    });
    let s = writer.stats();
    writer.close().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {OPENS} opens failed: {failures:?}",
        failures.len()
    );
    assert!(s.flushes >= OPENS && s.compactions >= OPENS, "{s}");
}

/// Raises this process's soft limit of open files to its hard limit.
#[cfg(target_os = "linux")]
fn raise_open_file_limit() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit with a valid rlimit for this process.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}
