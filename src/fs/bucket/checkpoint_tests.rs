//! Checkpoints kept beside a store wholly in a bucket
//! ([`crate::Db::checkpoint_in_bucket`]), on an in-memory object store:
//! one object, no table copied, opened as of its moment while the writer
//! goes on, its tables kept until it is deleted.

use object_store::memory::InMemory;
use std::time::Duration;

use super::journal_tests::{Site, key, objects_under, opts, put, site, whole_fs_with};
use super::*;
use crate::{Db, Options};

/// The table objects under the store's prefix.
fn tables(store: &Arc<InMemory>) -> usize {
    objects_under(store, "stores/one")
        .iter()
        .filter(|k| k.as_ref().ends_with(".sst"))
        .count()
}

/// A read-only handle on the kept checkpoint `name`.
fn open_checkpoint(site: &Site, store: &Arc<InMemory>, name: &str) -> crate::Result<Db> {
    let fs = whole_fs_with(site, store, Duration::ZERO);
    fs.fix_to_checkpoint(name)?;
    Db::open_read_only(site.dir.path(), opts(&fs))
}

#[test]
fn a_kept_checkpoint_opens_as_of_its_moment_and_keeps_its_tables() {
    let store = Arc::new(InMemory::new());
    let w_site = site();
    // No grace: a table the writer no longer needs is deleted at once,
    // unless a checkpoint names it.
    let w_fs = whole_fs_with(&w_site, &store, Duration::ZERO);
    let w = Db::open(w_site.dir.path(), opts(&w_fs)).unwrap();
    let ks = w.create_keyspace("ks", opts(&w_fs)).unwrap();
    for i in 0..2000 {
        put(&w, key(i), "a").unwrap();
    }
    w.flush().unwrap();
    for i in 0..100 {
        put(&w, key(2000 + i), "a").unwrap();
        ks.put(key(i), "ks-a").unwrap();
    }
    let report = w.checkpoint_in_bucket("c1").unwrap();
    assert!(report.tables >= 2, "{report:?}");
    assert_eq!((report.linked, report.copied), (report.tables, 0));
    let e = w.checkpoint_in_bucket("c1").unwrap_err();
    assert_eq!(e.io_kind(), Some(std::io::ErrorKind::AlreadyExists), "{e}");
    let e = w.checkpoint_in_bucket("a/b").unwrap_err();
    assert!(e.to_string().contains("checkpoint name"), "{e}");

    // The writer moves on: every table the checkpoint names is replaced.
    for i in 0..2100 {
        put(&w, key(i), "b").unwrap();
    }
    ks.put(key(0), "ks-b").unwrap();
    w.compact().unwrap();
    ks.compact().unwrap();
    let live = w.file_stats().len() + ks.file_stats().len();
    assert!(tables(&store) > live, "the checkpoint's tables are kept");

    let r_site = site();
    let r = open_checkpoint(&r_site, &store, "c1").unwrap();
    r.verify().unwrap();
    assert_eq!(r.scan(..).count(), 2100);
    for i in (0..2100).step_by(13) {
        assert_eq!(r.get(key(i)).unwrap().as_deref(), Some(&b"a"[..]), "{i}");
    }
    let rks = r.keyspace("ks").unwrap();
    assert_eq!(rks.get(key(0)).unwrap().as_deref(), Some(&b"ks-a"[..]));
    assert_eq!(rks.scan(..).count(), 100);
    assert!(!r.refresh().unwrap(), "a checkpoint stays as it was");
    assert!(r.put("k", "v").is_err());

    let list = w.bucket_checkpoints().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].name, "c1");
    assert_eq!(list[0].sequence, report.sequence);
    assert_eq!(list[0].tables, report.tables);
    drop(r);

    w.delete_bucket_checkpoint("c1").unwrap();
    let e = w.delete_bucket_checkpoint("c1").unwrap_err();
    assert_eq!(e.io_kind(), Some(std::io::ErrorKind::NotFound), "{e}");
    assert!(w.bucket_checkpoints().unwrap().is_empty());
    let e = open_checkpoint(&site(), &store, "c1").unwrap_err();
    assert_eq!(e.io_kind(), Some(std::io::ErrorKind::NotFound), "{e}");
    drop(ks);
    w.close().unwrap();
    drop(w_fs);
    // The next writer deletes what only the checkpoint kept.
    let w_fs = whole_fs_with(&w_site, &store, Duration::ZERO);
    let w = Db::open(w_site.dir.path(), opts(&w_fs)).unwrap();
    let ks = w.keyspace("ks").unwrap();
    assert_eq!(tables(&store), w.file_stats().len() + ks.file_stats().len());
    assert_eq!(w.get(key(7)).unwrap().as_deref(), Some(&b"b"[..]));
}

#[test]
fn a_reader_keeps_a_checkpoint_of_what_it_read() {
    let store = Arc::new(InMemory::new());
    let (w_site, r_site) = (site(), site());
    let w_fs = whole_fs_with(&w_site, &store, Duration::from_secs(3600));
    let w = Db::open(w_site.dir.path(), opts(&w_fs)).unwrap();
    for i in 0..500 {
        put(&w, key(i), "a").unwrap();
    }
    w.flush().unwrap();
    // Synced, in the log only.
    put(&w, key(500), "logged").unwrap();
    let r_fs = whole_fs_with(&r_site, &store, Duration::ZERO);
    let r = Db::open_read_only(r_site.dir.path(), opts(&r_fs)).unwrap();
    for i in 0..501 {
        put(&w, key(i), "b").unwrap();
    }
    let report = r.checkpoint_in_bucket("by-reader").unwrap();
    assert_eq!(report.copied, 0, "{report:?}");
    let c = open_checkpoint(&site(), &store, "by-reader").unwrap();
    assert_eq!(c.get(key(3)).unwrap().as_deref(), Some(&b"a"[..]));
    assert_eq!(c.get(key(500)).unwrap().as_deref(), Some(&b"logged"[..]));
    assert_eq!(c.scan(..).count(), 501);
    w.close().unwrap();
}

#[test]
fn a_store_on_a_local_disk_keeps_no_checkpoint_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("k", "v").unwrap();
    let e = db.checkpoint_in_bucket("c").unwrap_err();
    assert_eq!(e.io_kind(), Some(std::io::ErrorKind::Unsupported), "{e}");
    assert!(e.to_string().contains("Db::checkpoint"), "{e}");
    let e = db.bucket_checkpoints().unwrap_err();
    assert_eq!(e.io_kind(), Some(std::io::ErrorKind::Unsupported), "{e}");
}

#[test]
fn a_local_store_goes_into_the_bucket_whole_and_comes_back() {
    let local = tempfile::tempdir().unwrap();
    let db = Db::open(local.path(), Options::default().write_buffer_size(64 << 10)).unwrap();
    let ks = db.create_keyspace("ks", Options::default()).unwrap();
    for i in 0..3000 {
        db.put(key(i), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    db.put(key(9999), "in the log").unwrap();
    ks.put("k", "ks-value").unwrap();

    let store = Arc::new(InMemory::new());
    let up = site();
    let fs = whole_fs_with(&up, &store, Duration::ZERO);
    let r = db.checkpoint_into(fs.clone(), up.dir.path()).unwrap();
    assert_eq!((r.linked, r.copied), (0, r.tables), "{r:?}");
    assert!(r.tables >= 2, "{r:?}");
    // Into a store again: refused, before the writer's place is taken.
    let again = site();
    let fs2 = whole_fs_with(&again, &store, Duration::ZERO);
    let e = db
        .checkpoint_into(fs2.clone(), again.dir.path())
        .unwrap_err();
    assert!(e.to_string().contains("holds a store already"), "{e}");
    drop(fs2);
    drop(fs);

    // The bucket's store opens for writing elsewhere, whole.
    let w_site = site();
    let w_fs = whole_fs_with(&w_site, &store, Duration::ZERO);
    let w = Db::open(w_site.dir.path(), opts(&w_fs)).unwrap();
    assert_eq!(w.get(key(1234)).unwrap().as_deref(), Some(&b"v1234"[..]));
    assert_eq!(
        w.get(key(9999)).unwrap().as_deref(),
        Some(&b"in the log"[..])
    );
    let wks = w.keyspace("ks").unwrap();
    assert_eq!(wks.get("k").unwrap().as_deref(), Some(&b"ks-value"[..]));
    put(&w, key(5), "changed in the bucket").unwrap();
    w.verify().unwrap();

    // And back onto a local disk, a local store of its own.
    let back = tempfile::tempdir().unwrap();
    let home = back.path().join("db");
    let r = w
        .checkpoint_into(crate::fs::RealFs::shared(), &home)
        .unwrap();
    assert_eq!(r.copied, r.tables);
    drop(wks);
    w.close().unwrap();
    let l = Db::open(&home, Options::default()).unwrap();
    assert_eq!(
        l.get(key(5)).unwrap().as_deref(),
        Some(&b"changed in the bucket"[..])
    );
    assert_eq!(l.scan(..).count(), 3001);
    assert_eq!(l.keyspace("ks").unwrap().scan(..).count(), 1);
    l.verify().unwrap();
    assert!(l.stats().levels.iter().any(|lv| lv.files > 0));
}

#[test]
fn a_checkpoint_under_unsynced_writes_holds_the_log_bytes_not_yet_in_the_journal() {
    let store = Arc::new(InMemory::new());
    let w_site = site();
    // Gathered log bytes are written only at a sync, at 1 MiB or at close.
    let config = BucketConfig::new(w_site.dir.path(), "b", w_site.cache.path().join("c"))
        .prefix("stores/one/")
        .whole_store(true)
        .log_flush_interval(Duration::from_secs(3600));
    let w_fs = Arc::new(BucketFs::with_store(config, store.clone()).unwrap());
    let w = Db::open(w_site.dir.path(), opts(&w_fs)).unwrap();
    let ks = w.create_keyspace("ks", opts(&w_fs)).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // Unsynced: gathered in the active log's tail.
                ks.put(key(i % 5000), format!("ks-{i}")).unwrap();
                w.put(key(i % 5000), format!("d-{i}")).unwrap();
                i += 1;
            }
        });
        let checked = (0..5).try_for_each(|n| -> crate::Result<()> {
            std::thread::sleep(Duration::from_millis(20));
            let name = format!("c{n}");
            let r = w.checkpoint_in_bucket(&name)?;
            let c = open_checkpoint(&site(), &store, &name)?;
            c.verify()?;
            let held = c.scan(..).count() + c.keyspace("ks")?.scan(..).count();
            assert!(held > 0 || r.sequence == 0, "{name}: {r:?}");
            Ok(())
        });
        // The writer stops whatever the checkpoints did.
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        checked.unwrap();
    });
}
