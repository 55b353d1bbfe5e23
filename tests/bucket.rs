//! A store whose table files are in an S3 bucket (`bloomlsm::fs::bucket`),
//! against a real S3 server (`common::bucket`: `BLOOMLSM_S3_ENDPOINT`, which
//! `.ci/moto.sh start` prints). Without the endpoint every test fails: none
//! is skipped.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use bloomlsm::fs::bucket::{BucketFs, STORE_OBJECT};
use bloomlsm::{Db, Error, Options, WriteBatch};

mod common;
use common::bucket::{Bucket, bucket, config, endpoint, prefix, table_names};

/// Small tables, so that 50,000 keys make dozens of them over three levels;
/// no block cache, so every data-block read reaches the file system.
fn options(fs: Arc<dyn bloomlsm::fs::FileSystem>) -> Options {
    Options::default()
        .block_cache_capacity(0)
        .write_buffer_size(256 << 10)
        .target_file_size(64 << 10)
        .level1_max_bytes(512 << 10)
        .fs(fs)
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// A value made from the key's number by a fixed mix: 40 to 140 bytes.
fn value(i: u64) -> Vec<u8> {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D;
    let len = 40 + (x % 101) as usize;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b'a' + (x % 26) as u8
        })
        .collect()
}

/// Loads keys `0..n` in batches of 1,000 (every third key of a batch
/// written once more, so compactions drop versions), flushes and compacts.
fn load(db: &Db, n: u64) {
    for start in (0..n).step_by(1000) {
        let mut b = WriteBatch::new();
        for i in start..(start + 1000).min(n) {
            b.put(key(i), value(i));
        }
        db.write(b).unwrap();
        let mut b = WriteBatch::new();
        for i in (start..(start + 1000).min(n)).step_by(3) {
            b.put(key(i), value(i));
        }
        db.write(b).unwrap();
    }
    db.flush().unwrap();
    db.compact().unwrap();
}

#[test]
fn a_store_in_the_bucket_loads_compacts_reopens_and_reads_every_key() {
    const N: u64 = 50_000;
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let prefix = prefix("load");
    let fs = Arc::new(BucketFs::open(config(dir.path(), cache.path(), &prefix)).unwrap());
    let db = Db::open(dir.path(), options(fs.clone())).unwrap();
    let t = Instant::now();
    load(&db, N);
    let bucket_load = t.elapsed();
    let live = table_names(&db);
    let uploads = fs.counters().puts;
    db.close().unwrap();

    // Every table in the bucket, none on the local disk; the compactions'
    // inputs deleted from the bucket.
    let bucket = Bucket::new();
    let objects = bucket.list(&prefix);
    let mut expected = live.clone();
    expected.insert("bloomlsm-probe".to_string());
    expected.insert(STORE_OBJECT.to_string());
    assert_eq!(objects, expected, "the bucket holds the live tables alone");
    assert!(
        uploads > live.len() as u64 + 1,
        "{uploads} PUTs for {} live tables: compactions replaced tables",
        live.len()
    );
    assert!(live.len() >= 10, "{} tables", live.len());
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let name = e.unwrap().file_name();
        assert!(
            !name.to_string_lossy().ends_with(".sst"),
            "{name:?} is local"
        );
    }

    // The same load into a local store with the same options, for the
    // record.
    let local = tempfile::tempdir().unwrap();
    let ldb = Db::open(local.path(), options(bloomlsm::fs::RealFs::shared())).unwrap();
    let t = Instant::now();
    load(&ldb, N);
    let local_load = t.elapsed();
    ldb.close().unwrap();
    eprintln!(
        "load of {N} keys: bucket {:.2} s ({} tables live, {uploads} PUTs), local {:.2} s",
        bucket_load.as_secs_f64(),
        live.len(),
        local_load.as_secs_f64()
    );
    drop(fs);

    // Reopened with the cache the uploads filled: reads make no GET.
    let fs = Arc::new(BucketFs::open(config(dir.path(), cache.path(), &prefix)).unwrap());
    let db = Db::open(dir.path(), options(fs.clone())).unwrap();
    for i in (0..N).step_by(13) {
        assert_eq!(
            db.get(key(i)).unwrap().as_deref(),
            Some(&value(i)[..]),
            "key {i}"
        );
    }
    let c = fs.counters();
    assert_eq!(c.gets, 0, "{c:?}");
    assert!(c.cache_hits > 0);
    db.close().unwrap();
    drop(fs);

    // Reopened with an empty cache: opening loads each table's filter and
    // index; then every key reads right.
    let cache2 = tempfile::tempdir().unwrap();
    let fs = Arc::new(BucketFs::open(config(dir.path(), cache2.path(), &prefix)).unwrap());
    let db = Db::open(dir.path(), options(fs.clone())).unwrap();
    assert_eq!(table_names(&db), live);
    let opened = fs.counters();
    assert_eq!(opened.heads, 0, "the listing told every table's size");
    eprintln!(
        "open: {} LIST, {} GETs ({} bytes) for {} tables",
        opened.lists,
        opened.gets,
        opened.get_bytes,
        live.len()
    );

    // Missing keys: a lookup that read no data block made no request.
    let mut missing_gets = 0;
    let mut misses_without_reads = 0;
    for i in 0..2_000u64 {
        let k = format!("key{:08}x", i * 25);
        let (before, reads_before) = (fs.counters().gets, db.stats().missing_get_block_reads);
        assert_eq!(db.get(k.as_bytes()).unwrap(), None);
        let gets = fs.counters().gets - before;
        let reads = db.stats().missing_get_block_reads - reads_before;
        if reads == 0 {
            assert_eq!(gets, 0, "{k}: the filters said absent, yet {gets} GETs");
            misses_without_reads += 1;
        }
        missing_gets += gets;
    }
    assert!(misses_without_reads > 1_900, "{misses_without_reads}");
    eprintln!(
        "missing gets: {missing_gets} GETs for 2000 lookups ({misses_without_reads} read no block)"
    );

    // Every key, twice: the second pass is served by the disk cache.
    let before = fs.counters();
    for i in 0..N {
        assert_eq!(
            db.get(key(i)).unwrap().as_deref(),
            Some(&value(i)[..]),
            "key {i}"
        );
    }
    let first = fs.counters();
    for i in (0..N).step_by(7) {
        assert_eq!(
            db.get(key(i)).unwrap().as_deref(),
            Some(&value(i)[..]),
            "key {i}"
        );
    }
    let second = fs.counters();
    eprintln!(
        "existing gets, empty cache: {} GETs for {N} lookups; again: {} GETs, {} cache hits",
        first.gets - before.gets,
        second.gets - first.gets,
        second.cache_hits - first.cache_hits
    );
    assert!(
        first.gets > before.gets,
        "the first pass fetched data blocks"
    );
    assert_eq!(second.gets, first.gets, "the second pass made no GET");
    assert!(second.cache_hits > first.cache_hits);
    db.close().unwrap();
    drop(fs);

    // The cache is kept across reopen: reads after it make no GET.
    let fs = Arc::new(BucketFs::open(config(dir.path(), cache2.path(), &prefix)).unwrap());
    let db = Db::open(dir.path(), options(fs.clone())).unwrap();
    for i in (0..N).step_by(11) {
        assert_eq!(
            db.get(key(i)).unwrap().as_deref(),
            Some(&value(i)[..]),
            "key {i}"
        );
    }
    let c = fs.counters();
    assert_eq!(c.gets, 0, "{c:?}");
    assert!(c.cache_hits > 0);
    db.close().unwrap();
}

/// Loads `n` keys into a store under a fresh prefix and closes it.
fn made_store(test: &str, n: u64) -> (tempfile::TempDir, String, BTreeSet<String>) {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let prefix = prefix(test);
    let fs = BucketFs::shared(config(dir.path(), cache.path(), &prefix)).unwrap();
    let db = Db::open(dir.path(), options(fs)).unwrap();
    load(&db, n);
    let live = table_names(&db);
    db.close().unwrap();
    (dir, prefix, live)
}

#[test]
fn the_store_records_its_bucket_and_refuses_another_place() {
    let (dir, at, _) = made_store("recorded", 2_000);
    let text = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    for line in [
        format!("tables.bucket = {}\n", bucket()),
        format!("tables.prefix = {at}\n"),
        format!("tables.endpoint = {}\n", endpoint()),
    ] {
        assert!(text.contains(&line), "{line} in {text}");
    }
    let here = format!("are in s3://{}/{at} at {}", bucket(), endpoint());

    // The same directory with its tables looked for under another prefix.
    let cache = tempfile::tempdir().unwrap();
    let other = prefix("recorded-other");
    let fs = BucketFs::shared(config(dir.path(), cache.path(), &other)).unwrap();
    let e = Db::open(dir.path(), options(fs)).err().unwrap().to_string();
    let there = format!("keeps them in s3://{}/{other}", bucket());
    assert!(e.contains(&here) && e.contains(&there), "{e}");

    // A file system that keeps tables beside the store (not the default one,
    // which would follow the record).
    let local = Arc::new(bloomlsm::fs::latency::LatencyFs::new(
        bloomlsm::fs::RealFs::shared(),
        bloomlsm::fs::latency::Latency::Fixed(std::time::Duration::ZERO),
    ));
    let e = Db::open_read_only(dir.path(), options(local))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains(&here) && e.contains("beside the store's other files"),
        "{e}"
    );

    // Neither refusal changed the store.
    let cache = tempfile::tempdir().unwrap();
    let fs = BucketFs::shared(config(dir.path(), cache.path(), &at)).unwrap();
    let db = Db::open(dir.path(), options(fs)).unwrap();
    for i in (0..2_000).step_by(97) {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&value(i)[..]));
    }
    db.close().unwrap();
}

#[test]
fn a_multi_get_reads_adjacent_blocks_of_a_table_in_one_get() {
    const N: u64 = 10_000;
    let (dir, at, _) = made_store("adjacent", N);
    let cache = tempfile::tempdir().unwrap();
    // No disk cache: every block read is a GET of just its bytes.
    let fs =
        Arc::new(BucketFs::open(config(dir.path(), cache.path(), &at).cache_bytes(0)).unwrap());
    let db = Db::open(dir.path(), options(fs.clone())).unwrap();
    let keys: Vec<Vec<u8>> = (2_000..3_000).map(key).collect();
    let gets = fs.counters().gets;
    let values = db.multi_get(&keys).unwrap();
    let gets = fs.counters().gets - gets;
    for (i, v) in (2_000..3_000).zip(&values) {
        assert_eq!(v.as_deref(), Some(&value(i)[..]), "key {i}");
    }
    let blocks: u64 = db.stats().levels.iter().map(|l| l.io.block_reads).sum();
    let tables = db
        .file_stats()
        .iter()
        .filter(|f| f.io.block_reads > 0)
        .count() as u64;
    assert!(blocks >= 20, "{blocks} blocks");
    // One GET per table touched (its blocks of these keys lie side by side,
    // well under the 1 MiB a GET may span), against one per block.
    assert!(
        gets <= tables,
        "{gets} GETs for {blocks} blocks in {tables} tables"
    );
    db.close().unwrap();
}

#[test]
fn an_object_altered_behind_the_store_reads_as_corruption_naming_it() {
    const N: u64 = 10_000;
    let (dir, prefix, live) = made_store("altered", N);
    let bucket = Bucket::new();
    // A byte in the data blocks (the first third of each table) of every
    // table flipped.
    for name in &live {
        let k = format!("{prefix}{name}");
        let mut data = bucket.get(&k);
        let at = data.len() / 3;
        data[at] ^= 0x20;
        bucket.put(&k, data);
    }
    let cache = tempfile::tempdir().unwrap();
    let fs = BucketFs::shared(config(dir.path(), cache.path(), &prefix)).unwrap();
    let db = Db::open(dir.path(), options(fs)).unwrap();
    let mut corrupt = 0;
    for i in 0..N {
        match db.get(key(i)) {
            Ok(v) => assert_eq!(v.as_deref(), Some(&value(i)[..]), "key {i}: a wrong value"),
            Err(Error::Corruption { file, .. }) => {
                let name = file.file_name().unwrap().to_string_lossy().to_string();
                assert!(live.contains(&name), "{name} names no table object");
                corrupt += 1;
            }
            Err(e) => panic!("key {i}: {e}"),
        }
    }
    assert!(corrupt > 0, "no read met the altered bytes");
}

#[test]
fn an_object_deleted_behind_the_store_reads_as_an_error() {
    const N: u64 = 10_000;
    let (dir, prefix, live) = made_store("deleted", N);
    let cache = tempfile::tempdir().unwrap();
    let fs = BucketFs::shared(config(dir.path(), cache.path(), &prefix)).unwrap();
    let db = Db::open(dir.path(), options(fs.clone())).unwrap();
    let victim = live.iter().next().unwrap().clone();
    Bucket::new().delete(&format!("{prefix}{victim}"));
    let mut failed = 0;
    for i in 0..N {
        match db.get(key(i)) {
            Ok(v) => assert_eq!(v.as_deref(), Some(&value(i)[..]), "key {i}: a wrong value"),
            Err(e) => {
                assert!(e.to_string().contains(&victim), "{e}");
                failed += 1;
            }
        }
    }
    assert!(failed > 0, "no read reached the deleted table");
    db.close().unwrap();
    drop(fs);
    // Reopening finds the table missing and refuses, naming it.
    let Err(e) = Db::open(
        dir.path(),
        options(BucketFs::shared(config(dir.path(), cache.path(), &prefix)).unwrap()),
    ) else {
        panic!("a store missing a table opens");
    };
    assert!(e.is_corruption() && e.to_string().contains(&victim), "{e}");
}

#[test]
fn a_bucket_that_cannot_be_written_fails_the_construction_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    // No server listens on port 1.
    let unreachable = config(dir.path(), &cache, "x/")
        .endpoint("http://127.0.0.1:1")
        .max_retries(1);
    let missing = config(dir.path(), &cache, "x/").bucket("bloomlsm-no-such-bucket");
    for (config, endpoint, bucket) in [
        (unreachable, "http://127.0.0.1:1".to_string(), bucket()),
        (missing, endpoint(), "bloomlsm-no-such-bucket".to_string()),
    ] {
        let Err(e) = BucketFs::open(config) else {
            panic!("a bucket that cannot be written opens");
        };
        let e = e.to_string();
        assert!(!e.contains('\n'), "{e}");
        assert!(e.contains(&endpoint) && e.contains(&bucket), "{e}");
        assert!(!cache.exists(), "the cache directory was made");
        assert!(!dir.path().join("CURRENT").exists() && entries(dir.path()).is_empty());
        eprintln!("{e}");
    }
}

#[test]
fn checkpoints_copy_to_the_local_disk_or_within_the_bucket() {
    const N: u64 = 5_000;
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let prefix = prefix("checkpoint");
    let fs = Arc::new(BucketFs::open(config(dir.path(), cache.path(), &prefix)).unwrap());
    let db = Db::open(dir.path(), options(fs.clone())).unwrap();
    load(&db, N);
    let live = table_names(&db);

    // Outside the store's directory: a store on the local disk.
    let out = tempfile::tempdir().unwrap();
    let local = out.path().join("copy");
    let report = db.checkpoint(&local).unwrap();
    assert!(report.bytes_copied > 0, "{report:?}");
    let names: BTreeSet<String> = std::fs::read_dir(&local)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".sst"))
        .collect();
    assert_eq!(names, live, "every table copied to the local disk");

    // Inside it: server-side copies, one per table into the temporary
    // directory's key, one per table as that directory takes its name.
    let copies = fs.counters().copies;
    let inner = dir.path().join("inner");
    db.checkpoint(&inner).unwrap();
    assert_eq!(fs.counters().copies - copies, 2 * live.len() as u64);
    db.close().unwrap();
    let inner_prefix = format!("{prefix}inner/");
    assert_eq!(Bucket::new().list(&inner_prefix), live);

    let local_db = Db::open(&local, options(bloomlsm::fs::RealFs::shared())).unwrap();
    let cache2 = tempfile::tempdir().unwrap();
    let inner_fs = BucketFs::shared(config(&inner, cache2.path(), &inner_prefix)).unwrap();
    let inner_db = Db::open(&inner, options(inner_fs)).unwrap();
    for i in 0..N {
        let v = Some(value(i));
        assert_eq!(
            local_db.get(key(i)).unwrap().map(|b| b.to_vec()),
            v,
            "key {i}"
        );
        assert_eq!(
            inner_db.get(key(i)).unwrap().map(|b| b.to_vec()),
            v,
            "key {i}"
        );
    }
}

/// The local directory's entries.
fn entries(dir: &std::path::Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_prefix_holding_another_store_or_foreign_objects_is_refused_at_open() {
    const N: u64 = 2_000;
    let (owner_dir, owned, live) = made_store("owned", N);
    let store = Bucket::new();
    let owned_objects = store.list(&owned);
    assert!(owned_objects.contains(STORE_OBJECT), "{owned_objects:?}");

    // A new store given the owner's prefix is refused in one line naming
    // the endpoint, the bucket, the prefix and the owner's directory; no
    // local file is made, no object written.
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("db");
    let cache = root.path().join("cache");
    let Err(e) = BucketFs::open(config(&dir, &cache, &owned)) else {
        panic!("a prefix of another store opens");
    };
    let msg = e.to_string();
    eprintln!("{msg}");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(!msg.contains('\n'), "{msg}");
    for part in [
        endpoint(),
        bucket(),
        owned.clone(),
        owner_dir.path().display().to_string(),
    ] {
        assert!(msg.contains(&part), "{msg} does not name {part}");
    }
    assert_eq!(entries(root.path()), BTreeSet::new(), "made locally");
    assert_eq!(store.list(&owned), owned_objects, "written in the bucket");

    // A prefix of foreign objects, a table-named one among them, is
    // refused the same way.
    let foreign = prefix("foreign");
    store.put(&format!("{foreign}report.csv"), b"a,b\n".to_vec());
    store.put(&format!("{foreign}000003.sst"), b"no table".to_vec());
    let Err(e) = BucketFs::open(config(&dir, &cache, &foreign)) else {
        panic!("a prefix of foreign objects opens");
    };
    let msg = e.to_string();
    eprintln!("{msg}");
    assert!(
        msg.contains("000003.sst") && msg.contains("1 more"),
        "{msg}"
    );
    assert_eq!(entries(root.path()), BTreeSet::new(), "made locally");
    assert_eq!(
        store.list(&foreign),
        BTreeSet::from(["000003.sst".to_string(), "report.csv".to_string()])
    );

    // The owner still opens and reads every key.
    let cache_owner = tempfile::tempdir().unwrap();
    let fs = BucketFs::shared(config(owner_dir.path(), cache_owner.path(), &owned)).unwrap();
    let db = Db::open(owner_dir.path(), options(fs)).unwrap();
    assert_eq!(table_names(&db), live);
    for i in 0..N {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&value(i)[..]));
    }
    db.close().unwrap();

    // Asked for, a new store takes the foreign prefix; the table-named
    // object still stops the store's first open (a directory holding a
    // table but no CURRENT), until its owner removes it. The other object
    // stays, never read.
    let fs =
        BucketFs::shared(config(&dir, &cache, &foreign).create_among_other_objects(true)).unwrap();
    let Err(e) = Db::open(&dir, options(fs.clone())) else {
        panic!("a store opens among a table of no store");
    };
    assert!(
        e.is_corruption() && e.to_string().contains("000003.sst"),
        "{e}"
    );
    store.delete(&format!("{foreign}000003.sst"));
    let db = Db::open(&dir, options(fs)).unwrap();
    load(&db, 1_000);
    let mine = table_names(&db);
    db.close().unwrap();
    let mut want = mine.clone();
    want.extend(["report.csv", "bloomlsm-probe", STORE_OBJECT].map(String::from));
    assert_eq!(store.list(&foreign), want);
    // Taken, it reopens without being asked again.
    let fs = BucketFs::shared(config(&dir, &cache, &foreign)).unwrap();
    let db = Db::open(&dir, options(fs)).unwrap();
    assert_eq!(db.get(key(999)).unwrap().as_deref(), Some(&value(999)[..]));
    db.close().unwrap();
}
