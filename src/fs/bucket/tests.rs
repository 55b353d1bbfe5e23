use object_store::ObjectStoreExt;
use object_store::memory::InMemory;

use super::*;

struct Setup {
    fs: BucketFs,
    store: Arc<InMemory>,
    dir: tempfile::TempDir,
    cache: tempfile::TempDir,
}

fn setup(chunk: u64, cache_bytes: u64) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let store = Arc::new(InMemory::new());
    let fs = open(&dir, &cache, &store, chunk, cache_bytes);
    Setup {
        fs,
        store,
        dir,
        cache,
    }
}

fn open(
    dir: &tempfile::TempDir,
    cache: &tempfile::TempDir,
    store: &Arc<InMemory>,
    chunk: u64,
    cache_bytes: u64,
) -> BucketFs {
    let config = BucketConfig::new(dir.path(), "b", cache.path().join("c"))
        .prefix("p/q/")
        .chunk_bytes(chunk)
        .cache_bytes(cache_bytes);
    BucketFs::with_store(config, store.clone()).unwrap()
}

fn object(s: &Setup, key: &str) -> Option<Vec<u8>> {
    let store = s.store.clone();
    let k = ObjectPath::from(key);
    s.fs.shared
        .client
        .run(async move { store.get(&k).await.ok()?.bytes().await.ok() })
        .unwrap()
        .map(|b| b.to_vec())
}

fn bytes(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn tables_go_to_the_bucket_and_other_files_stay_local() {
    let s = setup(100, 10_000);
    let table = s.dir.path().join("000012.sst");
    let data = bytes(1000);
    let mut w = s.fs.create_new(&table).unwrap();
    w.write_all(&data[..300]).unwrap();
    w.write_all(&data[300..]).unwrap();
    assert_eq!(
        object(&s, "p/q/000012.sst"),
        None,
        "nothing uploaded before sync"
    );
    w.sync_data().unwrap();
    drop(w);
    assert_eq!(object(&s, "p/q/000012.sst").as_deref(), Some(&data[..]));
    assert!(!table.exists(), "no local table file");
    assert_eq!(
        std::fs::read_dir(s.cache.path().join("c/staging"))
            .unwrap()
            .count(),
        0,
        "the staging file is gone"
    );

    let log = s.dir.path().join("000013.log");
    let mut w = s.fs.create_new(&log).unwrap();
    w.write_all(b"wal").unwrap();
    w.sync_data().unwrap();
    assert_eq!(std::fs::read(&log).unwrap(), b"wal");
    assert_eq!(object(&s, "p/q/000013.log"), None);

    // A keyspace's tables live under its directory's key.
    let kdir = s.dir.path().join("keyspace-000001");
    s.fs.create_dir_all(&kdir).unwrap();
    let mut w = s.fs.create_new(&kdir.join("000014.sst")).unwrap();
    w.write_all(b"k").unwrap();
    w.sync_data().unwrap();
    assert_eq!(
        object(&s, "p/q/keyspace-000001/000014.sst").as_deref(),
        Some(&b"k"[..])
    );
    assert_eq!(
        s.fs.object_key(&kdir.join("000014.sst")).as_deref(),
        Some("p/q/keyspace-000001/000014.sst")
    );
    assert_eq!(s.fs.object_key(&log), None);

    let mut names = s.fs.list_dir(s.dir.path()).unwrap();
    names.sort();
    assert_eq!(names, ["000012.sst", "000013.log", "keyspace-000001"]);
    assert_eq!(s.fs.file_len(&table).unwrap(), 1000);
    // Sizes came from the upload and the listing: no HEAD.
    assert_eq!(s.fs.counters().heads, 0);
    assert!(
        crate::fs::direct::refused(&s.fs.open_read_direct(&table).unwrap_err()),
        "no direct I/O on a bucket"
    );
}

#[test]
fn reads_fetch_aligned_chunks_once_and_then_hit_the_cache() {
    let s = setup(100, 10_000);
    let table = s.dir.path().join("000001.sst");
    let data = bytes(1050);
    // Written behind the file system's back: nothing cached, size unknown.
    let store = s.store.clone();
    let d = Bytes::from(data.clone());
    s.fs.shared
        .client
        .run(async move {
            store
                .put(&ObjectPath::from("p/q/000001.sst"), d.into())
                .await
        })
        .unwrap()
        .unwrap();
    let f = s.fs.open_read(&table).unwrap();
    assert_eq!(f.len().unwrap(), 1050);
    assert_eq!(s.fs.counters().heads, 1);
    let mut buf = vec![0u8; 250];
    f.read_exact_at(&mut buf, 180).unwrap();
    assert_eq!(buf, data[180..430]);
    let c = s.fs.counters();
    assert_eq!((c.gets, c.get_bytes), (1, 400), "chunks 1..=4 in one GET");
    assert_eq!((c.cache_misses, c.cache_hits), (4, 0));
    f.read_exact_at(&mut buf, 150).unwrap();
    assert_eq!(buf, data[150..400]);
    assert_eq!(s.fs.counters().gets, 1);
    assert_eq!(s.fs.counters().cache_hits, 3);
    // The short last chunk, and a read past the end.
    let mut tail = vec![0u8; 60];
    f.read_exact_at(&mut tail, 990).unwrap();
    assert_eq!(tail, data[990..]);
    assert_eq!(s.fs.counters().get_bytes, 400 + 150);
    let e = f.read_exact_at(&mut tail, 991).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    drop(f);

    // The cache outlives the file system.
    let Setup {
        fs,
        store,
        dir,
        cache,
    } = s;
    drop(fs);
    let fs = open(&dir, &cache, &store, 100, 10_000);
    let f = fs.open_read(&table).unwrap();
    f.read_exact_at(&mut buf, 200).unwrap();
    assert_eq!(buf, data[200..450]);
    let c = fs.counters();
    assert_eq!((c.gets, c.cache_hits, c.cache_misses), (0, 3, 0));
    assert_eq!(c.cache_bytes, 400 + 150);
}

#[test]
fn a_table_written_here_reads_from_the_cache_and_removal_deletes_it() {
    let s = setup(64, 10_000);
    let table = s.dir.path().join("000002.sst");
    let data = bytes(500);
    let mut w = s.fs.create_new(&table).unwrap();
    w.write_all(&data).unwrap();
    w.sync_data().unwrap();
    drop(w);
    assert_eq!(s.fs.counters().cache_fills, 8);
    let f = s.fs.open_read(&table).unwrap();
    let mut buf = vec![0u8; 500];
    f.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(buf, data);
    assert_eq!(s.fs.counters().gets, 0);
    drop(f);

    s.fs.remove_file(&table).unwrap();
    assert_eq!(object(&s, "p/q/000002.sst"), None);
    assert_eq!(s.fs.counters().cache_bytes, 0);
    assert_eq!(
        s.fs.file_len(&table).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );

    // A table created and dropped unsynced costs no request to remove.
    let other = s.dir.path().join("000003.sst");
    drop(s.fs.create_new(&other).unwrap());
    let deletes = s.fs.counters().deletes;
    s.fs.remove_file(&other).unwrap();
    assert_eq!(s.fs.counters().deletes, deletes);
}

#[test]
fn large_tables_upload_in_parts() {
    let s = setup(1 << 20, 64 << 20);
    let config = s.fs.shared.config.clone().multipart_above(6 << 20);
    let Setup {
        fs,
        store,
        dir,
        cache,
    } = s;
    drop(fs);
    let fs = BucketFs::with_store(config, store.clone()).unwrap();
    let s = Setup {
        fs,
        store,
        dir,
        cache,
    };
    let table = s.dir.path().join("000004.sst");
    let data = bytes(12 << 20);
    let mut w = s.fs.create_new(&table).unwrap();
    w.write_all(&data).unwrap();
    w.sync_data().unwrap();
    let c = s.fs.counters();
    // The probe, then two parts of 8 MiB and 4 MiB (the prefix's
    // marker was written by the first construction).
    assert_eq!((c.multipart_uploads, c.puts), (1, 3));
    assert_eq!(object(&s, "p/q/000004.sst").as_deref(), Some(&data[..]));
}

#[test]
fn checkpoints_copy_in_the_bucket_or_to_the_local_disk() {
    let s = setup(100, 10_000);
    let table = s.dir.path().join("000005.sst");
    let mut w = s.fs.create_new(&table).unwrap();
    w.write_all(b"abc").unwrap();
    w.sync_data().unwrap();
    // Out of the store's directory: refused as a link, so copied.
    let out = tempfile::tempdir().unwrap();
    let e =
        s.fs.hard_link(&table, &out.path().join("000005.sst"))
            .unwrap_err();
    assert!(crate::fs::link_refused(&e), "{e}");
    // Within it: a server-side copy, and a directory renamed with its
    // tables.
    let tmp = s.dir.path().join("cp.tmp");
    s.fs.create_dir_all(&tmp).unwrap();
    s.fs.hard_link(&table, &tmp.join("000005.sst")).unwrap();
    assert_eq!(s.fs.counters().copies, 1);
    let target = s.dir.path().join("cp");
    s.fs.rename(&tmp, &target).unwrap();
    assert_eq!(
        object(&s, "p/q/cp/000005.sst").as_deref(),
        Some(&b"abc"[..])
    );
    assert_eq!(object(&s, "p/q/cp.tmp/000005.sst"), None);
    assert!(target.is_dir());
    assert_eq!(s.fs.list_dir(&target).unwrap(), ["000005.sst"]);
}

#[test]
fn a_prefix_of_another_store_or_of_foreign_objects_is_refused_unless_asked() {
    let store = Arc::new(InMemory::new());
    let root = tempfile::tempdir().unwrap();
    let config = |dir: &str| {
        BucketConfig::new(
            root.path().join(dir),
            "b",
            root.path().join(format!("{dir}.cache")),
        )
        .prefix("p/")
    };
    let put = |key: &str| {
        let (store, k) = (store.clone(), ObjectPath::from(key));
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(async move { store.put(&k, Bytes::from_static(b"x").into()).await })
            .unwrap();
    };
    // The first store takes the empty prefix and writes its marker.
    let fs = BucketFs::with_store(config("a"), store.clone()).unwrap();
    let marker = object_bytes(&store, "p/bloomlsm-store").unwrap();
    assert!(marker.starts_with(b"bloomlsm store\ndir = /"), "{marker:?}");
    assert_eq!(fs_lists(&fs), 1, "an empty prefix is listed");
    drop(fs);
    // It opens again by its marker alone, without listing the prefix;
    // another directory on the same prefix is refused, with nothing
    // made locally.
    let fs = BucketFs::with_store(config("a"), store.clone()).unwrap();
    assert_eq!(fs_lists(&fs), 0, "a reopen reads the marker only");
    let e = BucketFs::with_store(config("b"), store.clone()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(
        msg.contains("holds the store of directory") && !msg.contains('\n'),
        "{msg}"
    );
    assert!(!root.path().join("b.cache").exists());
    // A prefix of foreign objects, or of tables no marker claims for a
    // new store, is refused too.
    put("q/notes.txt");
    put("r/000007.sst");
    for (prefix, first) in [("q/", "notes.txt"), ("r/", "000007.sst")] {
        let e = BucketFs::with_store(config("c").prefix(prefix), store.clone()).unwrap_err();
        assert!(e.to_string().contains(first), "{e}");
        assert!(!root.path().join("c.cache").exists());
    }
    assert_eq!(
        object_bytes(&store, "q/bloomlsm-probe"),
        None,
        "nothing written"
    );
    // Asked for, the store takes the prefix and its marker.
    let config_c = config("c").prefix("q/").create_among_other_objects(true);
    BucketFs::with_store(config_c, store.clone()).unwrap();
    BucketFs::with_store(config("c").prefix("q/"), store.clone()).unwrap();
    // A marker of other bytes names no store: refused.
    put("t/bloomlsm-store");
    let e = BucketFs::with_store(config("d").prefix("t/"), store.clone()).unwrap_err();
    assert!(e.to_string().contains("not one bloomlsm writes"), "{e}");
}

fn fs_lists(fs: &BucketFs) -> u64 {
    fs.counters().lists
}

fn object_bytes(store: &Arc<InMemory>, key: &str) -> Option<Vec<u8>> {
    let (store, k) = (store.clone(), ObjectPath::from(key));
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(async move { store.get(&k).await.ok()?.bytes().await.ok() })
        .map(|b| b.to_vec())
}
