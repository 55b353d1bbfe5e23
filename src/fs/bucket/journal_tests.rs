//! A store kept wholly in a bucket ([`BucketConfig::whole_store`]), on an
//! in-memory object store: the local directory holds nothing the store
//! needs, one writer holds the store, an older one is fenced out.

use object_store::memory::InMemory;

use super::*;
use crate::{Db, Options, WriteBatch, WriteOptions};

pub(super) struct Site {
    pub(super) dir: tempfile::TempDir,
    pub(super) cache: tempfile::TempDir,
}

pub(super) fn site() -> Site {
    Site {
        dir: tempfile::tempdir().unwrap(),
        cache: tempfile::tempdir().unwrap(),
    }
}

fn whole_fs(site: &Site, store: &Arc<InMemory>) -> Arc<BucketFs> {
    let config = BucketConfig::new(site.dir.path(), "b", site.cache.path().join("c"))
        .prefix("stores/one/")
        .whole_store(true)
        .log_flush_interval(std::time::Duration::from_millis(5));
    Arc::new(BucketFs::with_store(config, store.clone()).unwrap())
}

pub(super) fn opts(fs: &Arc<BucketFs>) -> Options {
    Options::default()
        .fs(fs.clone())
        .write_buffer_size(64 << 10)
}

pub(super) fn key(i: u32) -> String {
    format!("key{i:06}")
}

/// Puts `key` = `value`, synced.
pub(super) fn put(db: &Db, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> crate::Result<()> {
    let mut b = WriteBatch::new();
    b.put(key, value);
    db.write_with(b, WriteOptions::default().sync(true))
}

#[test]
fn a_whole_store_reopens_from_the_bucket_alone() {
    let store = Arc::new(InMemory::new());
    let first = site();
    {
        let fs = whole_fs(&first, &store);
        let db = Db::open(first.dir.path(), opts(&fs)).unwrap();
        for i in 0..3000 {
            put(&db, key(i), format!("v{i}")).unwrap();
        }
        db.flush().unwrap();
        for i in 3000..3100 {
            put(&db, key(i), format!("w{i}")).unwrap();
        }
        // Killed without a close: what the synced writes put in the
        // bucket is all there is.
        std::mem::forget(db);
    }
    let local: Vec<_> = std::fs::read_dir(first.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(local, ["LOCK"], "the local directory holds only the lock");

    // Another machine: another directory, another cache.
    let second = site();
    let fs = whole_fs(&second, &store);
    let db = Db::open(second.dir.path(), opts(&fs)).unwrap();
    for i in (0..3100).step_by(7) {
        let want = if i < 3000 {
            format!("v{i}")
        } else {
            format!("w{i}")
        };
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(want.as_bytes()));
    }
    assert!(fs.writer_epoch().unwrap() > 1);
    db.close().unwrap();
}

#[test]
fn a_newer_writer_fences_the_older_out_and_keeps_what_it_acknowledged() {
    let store = Arc::new(InMemory::new());
    let (a_site, b_site) = (site(), site());
    let a_fs = whole_fs(&a_site, &store);
    let a = Db::open(a_site.dir.path(), opts(&a_fs)).unwrap();
    for i in 0..500 {
        put(&a, key(i), "a").unwrap();
    }
    a.flush().unwrap();
    for i in 500..600 {
        put(&a, key(i), "a").unwrap();
    }

    let b_fs = whole_fs(&b_site, &store);
    let b = Db::open(b_site.dir.path(), opts(&b_fs)).unwrap();
    assert!(b_fs.writer_epoch() > a_fs.writer_epoch());

    let e = put(&a, key(1), "late").unwrap_err();
    assert!(e.is_fenced(), "{e}");
    let e = put(&a, key(2), "later").unwrap_err();
    assert!(e.is_fenced(), "{e}");
    assert!(a.flush().is_err());

    for i in 0..600 {
        assert_eq!(b.get(key(i)).unwrap().as_deref(), Some(&b"a"[..]), "{i}");
    }
    for i in 0..2000 {
        b.put(key(i), "b").unwrap();
    }
    b.flush().unwrap();
    b.compact().unwrap();
    // The fenced writer's close deletes nothing of the newer one's.
    drop(a);
    b.close().unwrap();

    let c_site = site();
    let c_fs = whole_fs(&c_site, &store);
    let c = Db::open(c_site.dir.path(), opts(&c_fs)).unwrap();
    for i in 0..2000 {
        assert_eq!(c.get(key(i)).unwrap().as_deref(), Some(&b"b"[..]), "{i}");
    }
    c.verify().unwrap();
}

#[test]
fn a_reader_elsewhere_reads_the_store_as_its_writer_left_it() {
    let store = Arc::new(InMemory::new());
    let (w_site, r_site) = (site(), site());
    let w_fs = whole_fs(&w_site, &store);
    let w = Db::open(w_site.dir.path(), opts(&w_fs)).unwrap();
    for i in 0..1000 {
        put(&w, key(i), format!("v{i}")).unwrap();
    }
    let r_fs = whole_fs(&r_site, &store);
    let r = Db::open_read_only(r_site.dir.path(), opts(&r_fs)).unwrap();
    for i in (0..1000).step_by(13) {
        assert_eq!(
            r.get(key(i)).unwrap().as_deref(),
            Some(format!("v{i}").as_bytes())
        );
    }
    assert!(matches!(r.put("x", "y"), Err(crate::Error::ReadOnly)));
    // The reader took nothing: the writer goes on.
    put(&w, key(5000), "after").unwrap();
    w.close().unwrap();
}

pub(super) fn whole_fs_with(
    site: &Site,
    store: &Arc<InMemory>,
    grace: std::time::Duration,
) -> Arc<BucketFs> {
    let config = BucketConfig::new(site.dir.path(), "b", site.cache.path().join("c"))
        .prefix("stores/one/")
        .whole_store(true)
        .cache_bytes(0)
        .delete_grace(grace)
        .log_flush_interval(std::time::Duration::from_millis(5));
    Arc::new(BucketFs::with_store(config, store.clone()).unwrap())
}

#[test]
fn a_reader_refreshes_to_the_newest_state_and_keeps_an_older_one_it_holds() {
    let store = Arc::new(InMemory::new());
    let (w_site, r_site) = (site(), site());
    let w_fs = whole_fs_with(&w_site, &store, std::time::Duration::from_secs(3600));
    let w = Db::open(w_site.dir.path(), opts(&w_fs)).unwrap();
    for i in 0..1000 {
        put(&w, key(i), "old").unwrap();
    }
    w.flush().unwrap();
    let r_fs = whole_fs_with(&r_site, &store, std::time::Duration::ZERO);
    let r = Db::open_read_only(r_site.dir.path(), opts(&r_fs)).unwrap();
    let before = r.scan(..);

    for i in 0..1000 {
        put(&w, key(i), "new").unwrap();
    }
    w.flush().unwrap();
    w.compact().unwrap();
    for i in 1000..1100 {
        put(&w, key(i), "new").unwrap();
    }
    assert_eq!(r.get(key(5)).unwrap().as_deref(), Some(&b"old"[..]));
    let snap = r.snapshot();
    assert!(r.refresh().unwrap_err().to_string().contains("snapshot"));
    drop(snap);
    assert!(r.refresh().unwrap(), "the writer moved on");
    for i in (0..1100).step_by(11) {
        assert_eq!(r.get(key(i)).unwrap().as_deref(), Some(&b"new"[..]), "{i}");
    }
    // The iterator made before keeps its state: the tables the
    // compaction replaced wait out the writer's grace.
    let mut n = 0;
    for e in before {
        let (_, v) = e.unwrap();
        assert_eq!(&v[..], b"old");
        n += 1;
    }
    assert_eq!(n, 1000);
    assert!(!r.refresh().unwrap(), "nothing new");
    w.close().unwrap();
}

#[test]
fn a_reader_behind_a_writer_without_grace_gets_an_error_never_a_wrong_value() {
    let store = Arc::new(InMemory::new());
    let (w_site, r_site) = (site(), site());
    let w_fs = whole_fs_with(&w_site, &store, std::time::Duration::ZERO);
    let w = Db::open(w_site.dir.path(), opts(&w_fs)).unwrap();
    for i in 0..2000 {
        put(&w, key(i), format!("a{i}")).unwrap();
    }
    w.flush().unwrap();
    let r_fs = whole_fs_with(&r_site, &store, std::time::Duration::ZERO);
    let r = Db::open_read_only(r_site.dir.path(), opts(&r_fs)).unwrap();
    for i in 0..2000 {
        put(&w, key(i), format!("b{i}")).unwrap();
    }
    w.flush().unwrap();
    w.compact().unwrap();
    let mut errors = 0;
    for i in 0..2000 {
        match r.get(key(i)) {
            Ok(v) => assert_eq!(v.as_deref(), Some(format!("a{i}").as_bytes())),
            Err(e) => {
                assert_eq!(e.io_kind(), Some(std::io::ErrorKind::NotFound), "{e}");
                errors += 1;
            }
        }
    }
    assert!(
        errors > 0,
        "the compaction deleted the tables the reader held"
    );
    r.refresh().unwrap();
    for i in 0..2000 {
        assert_eq!(
            r.get(key(i)).unwrap().as_deref(),
            Some(format!("b{i}").as_bytes())
        );
    }
    w.close().unwrap();
}

/// The journal's entries in the in-memory bucket, by key.
fn entries(store: &Arc<InMemory>) -> Vec<ObjectPath> {
    objects_under(store, "stores/one/journal")
}

/// The keys of the objects under `prefix`, sorted.
pub(super) fn objects_under(store: &Arc<InMemory>, prefix: &str) -> Vec<ObjectPath> {
    use futures_util::TryStreamExt;
    let s = store.clone();
    let p = ObjectPath::from(prefix);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut keys: Vec<ObjectPath> = rt
        .block_on(async move {
            s.list(Some(&p))
                .map_ok(|m| m.location)
                .try_collect::<Vec<_>>()
                .await
        })
        .unwrap();
    keys.sort();
    keys
}

fn rewrite(store: &Arc<InMemory>, key: &ObjectPath, f: impl FnOnce(Vec<u8>) -> Option<Vec<u8>>) {
    use object_store::ObjectStoreExt;
    let s = store.clone();
    let k = key.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async move {
        let old = s.get(&k).await.unwrap().bytes().await.unwrap().to_vec();
        match f(old) {
            Some(new) => {
                s.put(&k, object_store::PutPayload::from(new))
                    .await
                    .unwrap();
            }
            None => s.delete(&k).await.unwrap(),
        }
    });
}

#[test]
fn a_journal_damaged_or_cut_behind_the_store_is_corruption_naming_it() {
    for damage in ["flip", "delete"] {
        let store = Arc::new(InMemory::new());
        let w_site = site();
        let fs = whole_fs(&w_site, &store);
        let db = Db::open(w_site.dir.path(), opts(&fs)).unwrap();
        for i in 0..50 {
            put(&db, key(i), "v").unwrap();
        }
        drop(db);
        drop(fs);
        // An entry in the middle of the log: its data, or the whole entry.
        let all = entries(&store);
        let victim = &all[all.len() - 10];
        rewrite(&store, victim, |mut b| match damage {
            "flip" => {
                let n = b.len();
                b[n / 2] ^= 1;
                Some(b)
            }
            _ => None,
        });
        let before = entries(&store);
        let r_site = site();
        let fs = whole_fs(&r_site, &store);
        let e = Db::open(r_site.dir.path(), opts(&fs)).unwrap_err();
        assert!(e.is_corruption(), "{damage}: {e}");
        let text = e.to_string();
        assert!(
            text.contains("journal") || text.contains(".log") || text.contains("MANIFEST"),
            "{damage}: {text}"
        );
        // The refused open wrote only its fence: nothing overwritten or
        // deleted.
        let after = entries(&store);
        assert!(before.iter().all(|k| after.contains(k)), "{damage}");
    }
}

#[test]
fn a_prefix_holds_one_kind_of_store_and_a_reader_writes_nothing() {
    let store = Arc::new(InMemory::new());
    let w_site = site();
    let fs = whole_fs(&w_site, &store);
    let db = Db::open(w_site.dir.path(), opts(&fs)).unwrap();
    put(&db, "k", "v").unwrap();
    db.close().unwrap();
    // A store whose log and MANIFEST are local, given the same prefix.
    let other = site();
    let config = BucketConfig::new(other.dir.path(), "b", other.cache.path().join("c"))
        .prefix("stores/one/");
    let e = BucketFs::with_store(config, store.clone()).unwrap_err();
    assert!(e.to_string().contains("whole_store"), "{e}");

    let r_site = site();
    let config = BucketConfig::new(r_site.dir.path(), "b", r_site.cache.path().join("c"))
        .prefix("stores/one/")
        .whole_store(true);
    let r_fs = Arc::new(BucketFs::with_store(config, store.clone()).unwrap());
    let r = Db::open_read_only(r_site.dir.path(), opts(&r_fs)).unwrap();
    assert_eq!(r.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(r);
    assert_eq!(r_fs.counters().puts, 0, "a reader makes no PUT");
    assert_eq!(r_fs.counters().deletes, 0);
}

/// Credentials that allow reads but not writes: the writer refuses at
/// open, in one line and before changing anything; readers read, and keep
/// no checkpoint.
#[test]
fn read_only_credentials_refuse_the_writer_at_open_and_serve_readers() {
    use super::fault::{FaultStore, Kind, Plan, Request, When};
    let store = Arc::new(InMemory::new());
    let first = site();
    {
        let fs = whole_fs(&first, &store);
        let db = Db::open(first.dir.path(), opts(&fs)).unwrap();
        for i in 0..500 {
            put(&db, key(i), "v").unwrap();
        }
        db.close().unwrap();
    }
    let before = objects_under(&store, "stores/one");
    let read_only = Arc::new(FaultStore::new(store.clone()));
    read_only.arm(Plan {
        kind: Kind::Forbidden,
        requests: vec![
            Request::Put,
            Request::Delete,
            Request::Copy,
            Request::Multipart,
        ],
        when: When::Chance {
            per_1024: 1024,
            seed: 1,
        },
        delay: std::time::Duration::ZERO,
    });
    let on = |site: &Site| {
        let config = BucketConfig::new(site.dir.path(), "b", site.cache.path().join("c"))
            .prefix("stores/one/")
            .whole_store(true);
        Arc::new(BucketFs::with_store(config, read_only.clone()).unwrap())
    };
    let w_site = site();
    let e = Db::open(w_site.dir.path(), opts(&on(&w_site))).unwrap_err();
    let text = e.to_string();
    assert!(!text.contains('\n'), "{text}");
    assert!(text.contains("403 AccessDenied"), "{text}");
    assert_eq!(
        e.io_kind(),
        Some(std::io::ErrorKind::PermissionDenied),
        "{text}"
    );
    assert_eq!(
        objects_under(&store, "stores/one"),
        before,
        "the refused writer wrote"
    );

    let r_site = site();
    let r = Db::open_read_only(r_site.dir.path(), opts(&on(&r_site))).unwrap();
    assert_eq!(r.scan(..).count(), 500);
    r.refresh().unwrap();
    let e = r.checkpoint_in_bucket("c").unwrap_err();
    assert_eq!(
        e.io_kind(),
        Some(std::io::ErrorKind::PermissionDenied),
        "{e}"
    );
    assert!(r.bucket_checkpoints().unwrap().is_empty());
}
