//! `ReadMode::Direct`: a store read with direct I/O answers exactly what the
//! same store read through the page cache answers (gets, multi_gets, scans,
//! and after flushes and compactions done in direct mode), counts whole
//! sectors, and a file system without direct I/O is refused in one line or,
//! when asked, falls back to buffered reads.

use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::sync::Arc;

use bloomlsm::fs::{FileLock, FileSystem, ReadableFile, RealFs, WritableFile, direct};
use bloomlsm::{Db, Options, ReadMode};

mod common;
use common::keys::scattered_key;
use common::model::{Model, entries, scan_all};

/// A directory on the disk that holds the build (`CARGO_TARGET_TMPDIR`):
/// `common::scratch_dir` prefers `/dev/shm`, and these tests are about the
/// device path.
fn disk_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn options(mode: ReadMode) -> Options {
    common::options::manual()
        .write_buffer_size(16 << 10)
        .target_file_size(16 << 10)
        .level1_max_bytes(64 << 10)
        .dynamic_level_bytes(false)
        .level_size_multiplier(4)
        .block_cache_capacity(0)
        .read_mode(mode)
}

/// Keys drawn from this many.
const SPACE: u64 = 1_000_000;

fn value(i: u64, round: u64) -> Vec<u8> {
    format!("value-{i}-{round}-{}", "x".repeat((i % 97) as usize)).into_bytes()
}

/// Whether the directory's file system takes direct reads (it should, on
/// the build's disk); `false` prints why the caller skips.
fn direct_supported(dir: &Path) -> bool {
    let probe = dir.join("probe");
    std::fs::write(&probe, [7u8; 100]).unwrap();
    let ok = match RealFs.open_read_direct(&probe) {
        Ok(f) => f.read_exact_at(&mut [0u8; 100], 0).is_ok(),
        Err(e) if direct::refused(&e) => false,
        Err(e) => panic!("{e}"),
    };
    std::fs::remove_file(&probe).unwrap();
    if !ok {
        eprintln!(
            "skipped: {} refuses direct I/O (set CARGO_TARGET_DIR to a disk that takes it)",
            dir.display()
        );
    }
    ok
}

/// Checks every key of `model`, some absent keys, and a full scan.
fn check(db: &Db, model: &Model, what: &str) {
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(&v[..]), "{what}: {k:?}");
    }
    for i in 0..500u64 {
        let k = format!("absent{i:06}").into_bytes();
        assert_eq!(db.get(&k).unwrap(), None, "{what}");
    }
    let keys: Vec<&Vec<u8>> = model.keys().step_by(13).collect();
    let got = db.multi_get(&keys).unwrap();
    for (k, g) in keys.iter().zip(got) {
        assert_eq!(g.as_deref(), model.get(*k).map(|v| &v[..]), "{what}");
    }
    assert!(scan_all(db) == entries(model), "{what}: scan differs");
}

#[test]
fn direct_reads_answer_as_buffered_reads() {
    let dir = disk_dir();
    if !direct_supported(dir.path()) {
        return;
    }
    let mut model = Model::new();
    {
        let db = Db::open(dir.path(), options(ReadMode::Buffered)).unwrap();
        for i in 0..6000u64 {
            db.put(scattered_key(i, SPACE), value(i, 0)).unwrap();
            model.insert(scattered_key(i, SPACE), value(i, 0));
            if i % 5 == 0 {
                db.delete(scattered_key(i / 2, SPACE)).unwrap();
                model.remove(&scattered_key(i / 2, SPACE));
            }
        }
        db.maintain().unwrap();
        // More in L0, above what compactions moved down.
        for i in 6000..6500u64 {
            db.put(scattered_key(i, SPACE), value(i, 0)).unwrap();
            model.insert(scattered_key(i, SPACE), value(i, 0));
        }
        db.flush().unwrap();
        assert!(db.stats().levels.iter().filter(|l| l.files > 0).count() >= 2);
        check(&db, &model, "buffered");
        db.close().unwrap();
    }

    let db = Db::open(dir.path(), options(ReadMode::Direct)).unwrap();
    assert_eq!(db.read_mode(), ReadMode::Direct);
    db.reset_stats();
    check(&db, &model, "direct");
    let t = db.stats().total;
    assert!(t.block_reads > 0);
    // Whole sectors (512 bytes or 4 KiB, as the file system aligns direct
    // reads): each data block (up to about 4 KiB, at any offset) takes at
    // least one sector and at most three of 4 KiB.
    assert_eq!(t.bytes_read % 512, 0, "{t:?}");
    assert!(t.bytes_read >= t.block_reads * 512, "{t:?}");
    assert!(
        t.bytes_read <= t.block_reads * 3 * direct::DIRECT_ALIGN,
        "{t:?}"
    );

    // Flushes and compactions in direct mode read their inputs directly.
    for i in 3000..9000u64 {
        db.put(scattered_key(i, SPACE), value(i, 1)).unwrap();
        model.insert(scattered_key(i, SPACE), value(i, 1));
    }
    db.maintain().unwrap();
    db.compact().unwrap();
    check(&db, &model, "direct after compaction");
    db.close().unwrap();

    let db = Db::open(dir.path(), options(ReadMode::Buffered)).unwrap();
    check(&db, &model, "buffered after direct writes");
}

/// The real file system without [`FileSystem::open_read_direct`]: the
/// trait's default refuses, as a file system without direct I/O does.
#[derive(Debug)]
struct NoDirect;

impl FileSystem for NoDirect {
    fn create_new(&self, p: &Path) -> io::Result<Box<dyn WritableFile>> {
        RealFs.create_new(p)
    }
    fn create_truncate(&self, p: &Path) -> io::Result<Box<dyn WritableFile>> {
        RealFs.create_truncate(p)
    }
    fn open_read(&self, p: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        RealFs.open_read(p)
    }
    fn rename(&self, a: &Path, b: &Path) -> io::Result<()> {
        RealFs.rename(a, b)
    }
    fn remove_file(&self, p: &Path) -> io::Result<()> {
        RealFs.remove_file(p)
    }
    fn sync_dir(&self, d: &Path) -> io::Result<()> {
        RealFs.sync_dir(d)
    }
    fn list_dir(&self, d: &Path) -> io::Result<Vec<OsString>> {
        RealFs.list_dir(d)
    }
    fn file_len(&self, p: &Path) -> io::Result<u64> {
        RealFs.file_len(p)
    }
    fn create_dir_all(&self, d: &Path) -> io::Result<()> {
        RealFs.create_dir_all(d)
    }
    fn lock(&self, p: &Path) -> io::Result<Option<Box<dyn FileLock>>> {
        RealFs.lock(p)
    }
}

#[test]
fn refusal_is_one_line_and_fallback_only_when_asked() {
    let dir = disk_dir();
    let no_direct = |mode| options(mode).fs(Arc::new(NoDirect));
    {
        let db = Db::open(dir.path(), no_direct(ReadMode::Buffered)).unwrap();
        for i in 0..2000u64 {
            db.put(scattered_key(i, SPACE), value(i, 0)).unwrap();
        }
        db.maintain().unwrap();
        db.close().unwrap();
    }
    for new_store in [false, true] {
        let d = if new_store {
            dir.path().join("new")
        } else {
            dir.path().to_path_buf()
        };
        let e = Db::open(&d, no_direct(ReadMode::Direct)).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(direct::REFUSED), "{msg}");
        assert!(msg.contains(&d.display().to_string()), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
        let e = Db::open_read_only(dir.path(), no_direct(ReadMode::Direct)).unwrap_err();
        assert!(e.to_string().contains(direct::REFUSED), "{e}");
    }

    let db = Db::open(dir.path(), no_direct(ReadMode::DirectOrBuffered)).unwrap();
    assert_eq!(db.read_mode(), ReadMode::Buffered);
    assert_eq!(
        db.get(scattered_key(5, SPACE)).unwrap(),
        Some(value(5, 0).into())
    );
    db.close().unwrap();
    if direct_supported(dir.path()) {
        let db = Db::open(dir.path(), options(ReadMode::DirectOrBuffered)).unwrap();
        assert_eq!(db.read_mode(), ReadMode::Direct);
        assert_eq!(
            db.get(scattered_key(5, SPACE)).unwrap(),
            Some(value(5, 0).into())
        );
    }
}
