//! The S3 server going away and coming back under a store whose tables are
//! in it: the store talks to moto through a TCP proxy (`common::proxy`)
//! that the test stops — listener closed, live connections cut — and
//! restarts on the same port, so the server keeps its objects.
//!
//! Properties: a write, flush, compaction or open returns an error or
//! succeeds; a read returns an error or the right answer; while the server
//! is away a flush fails and poisons the store, and reads that need a GET
//! fail; once it is back a reopen holds every acknowledged write, every
//! table its MANIFEST names is in the bucket, and the bucket holds no table
//! the MANIFEST does not name. Fixed seeds; the outages of the second test
//! fall where a thread's seeded sleeps put them. A store kept wholly in the
//! bucket, with a reader elsewhere: a synced write with the server away
//! fails and stops its writer, the reader's refresh fails and its reads
//! fail or answer right, and once the server is back the reader catches up
//! and a new writer holds every acknowledged write.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bloomlsm::fs::bucket::BucketFs;
use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, Error, Options, WriteBatch, WriteOptions};

mod common;
use common::bucket::{Bucket, check_named_in_bucket, config_at, endpoint, prefix, table_names};
use common::proxy::Proxy;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: u64 = 3_000;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Key `i`'s value as written in batch `b`: a stale or foreign value is
/// recognisable.
fn value(i: u64, b: u64) -> Vec<u8> {
    let mut v = format!("key{i:06}-batch{b}-").into_bytes();
    v.resize(
        60 + ((i * 31 + b * 7) % 100) as usize,
        b'a' + (b % 26) as u8,
    );
    v
}

/// Small tables and no block cache; compactions only when the test asks,
/// so that the bucket's listing and the MANIFEST can be compared at rest.
fn options(fs: Arc<BucketFs>) -> Options {
    Options::default()
        .block_cache_capacity(0)
        .write_buffer_size(64 << 10)
        .target_file_size(32 << 10)
        .level1_max_bytes(256 << 10)
        .background_compaction(false)
        .fs(fs)
}

/// A store in a fresh directory and prefix, reached through `proxy`; no
/// disk cache, so every data-block read is a GET.
struct Rig {
    dir: tempfile::TempDir,
    _cache: tempfile::TempDir,
    prefix: String,
    fs: Arc<BucketFs>,
    bucket: Bucket,
}

impl Rig {
    /// `retries`: of each failed request (with backoff), before the
    /// failure reaches the store.
    fn new(test: &str, proxy: &Proxy, retries: usize) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let prefix = prefix(test);
        let config = config_at(&proxy.endpoint(), dir.path(), cache.path(), &prefix)
            .cache_bytes(0)
            .max_retries(retries)
            .request_timeout(Duration::from_secs(5));
        let fs = Arc::new(BucketFs::open(config).unwrap());
        Rig {
            dir,
            _cache: cache,
            prefix,
            fs,
            bucket: Bucket::new(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn open(&self) -> bloomlsm::Result<Db> {
        Db::open(self.path(), options(self.fs.clone()))
    }

    /// After a successful open, flush or compaction: every table the
    /// MANIFEST names is in the bucket (asked of the server itself).
    fn check_named(&self, db: &Db, what: &str) {
        check_named_in_bucket(&self.bucket, &self.prefix, db, what);
    }

    /// At rest: the bucket holds exactly the tables the MANIFEST names.
    fn check_exact(&self, db: &Db, what: &str) {
        assert_eq!(
            self.bucket.tables(&self.prefix),
            table_names(db),
            "{what}: the bucket's tables are not the MANIFEST's"
        );
    }
}

/// Writes batch `b` (200 keys drawn by `rng`), synced one batch in two.
fn write_batch(db: &Db, rng: &mut SplitMix64, b: u64) -> (bloomlsm::Result<()>, Model) {
    let mut batch = WriteBatch::new();
    let mut m = Model::new();
    for _ in 0..200 {
        let i = rng.below(KEYS);
        batch.put(key(i), value(i, b));
        m.insert(key(i), value(i, b));
    }
    let r = db.write_with(batch, WriteOptions::default().sync(b.is_multiple_of(2)));
    (r, m)
}

/// Reads `k`: an error, or the acknowledged value (or, for a key of the
/// batch whose write failed, its value there). Returns whether it failed.
fn check_read(db: &Db, k: &[u8], model: &Model, failed: &Model, what: &str) -> bool {
    match db.get(k) {
        Err(_) => true,
        Ok(v) => {
            let v = v.map(|v| v.to_vec());
            assert!(
                v.as_ref() == model.get(k) || (v.is_some() && v.as_ref() == failed.get(k)),
                "{what}: {} read a wrong value",
                String::from_utf8_lossy(k)
            );
            false
        }
    }
}

/// Every `stride`th acknowledged key reads right.
fn check_all(db: &Db, model: &Model, stride: usize, what: &str) {
    for (k, v) in model.iter().step_by(stride) {
        let got = db
            .get(k)
            .unwrap_or_else(|e| panic!("{what}: {}: {e}", String::from_utf8_lossy(k)));
        assert_eq!(got.as_deref(), Some(&v[..]), "{what}");
    }
}

#[test]
fn a_flush_and_reads_while_the_server_is_away_fail_and_a_reopen_recovers() {
    let proxy = Proxy::start(&endpoint());
    let rig = Rig::new("away", &proxy, 2);
    let mut db = rig.open().unwrap();
    let mut rng = SplitMix64::new(0xA3A7);
    let mut model = Model::new();
    let (mut outages, mut failed_reads, mut reads) = (0, 0, 0);
    for b in 0..10u64 {
        let what = format!("batch {b}");
        let (r, m) = write_batch(&db, &mut rng, b);
        r.unwrap_or_else(|e| panic!("{what}: {e}"));
        if b % 4 == 1 {
            // The server goes away before the flush.
            proxy.stop();
            outages += 1;
            let e = db
                .flush()
                .expect_err("a flush with the server away succeeded");
            eprintln!("{what}: flush with the server away: {e}");
            model.extend(m);
            // Reads that need a GET fail; none answers wrong.
            for k in model.keys().step_by(model.len() / 8) {
                reads += 1;
                if check_read(&db, k, &model, &Model::new(), &what) {
                    failed_reads += 1;
                }
            }
            assert!(
                matches!(db.put("p", "q"), Err(Error::Poisoned { .. })),
                "{what}: writes after a failed flush"
            );
            proxy.restart();
            let _ = db.close();
            db = rig.open().unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            rig.check_named(&db, &what);
            rig.check_exact(&db, &what);
            check_all(&db, &model, 7, &what);
        } else {
            db.flush().unwrap();
            model.extend(m);
            rig.check_named(&db, &what);
        }
        if b % 3 == 2 {
            db.compact().unwrap();
            rig.check_named(&db, &what);
        }
    }
    db.close().unwrap();
    let db = rig.open().unwrap();
    check_all(&db, &model, 1, "at the end");
    rig.check_exact(&db, "at the end");
    assert!(failed_reads > 0, "no read needed the server");
    eprintln!(
        "{outages} outages, {failed_reads} of {reads} reads failed while away, {} tables, \
         {} connections through the proxy",
        table_names(&db).len(),
        proxy.accepted()
    );
}

#[test]
fn the_server_stopped_and_restarted_at_random_during_loads_and_reads_loses_nothing() {
    let proxy = Arc::new(Proxy::start(&endpoint()));
    // No retries: each cut reaches the store.
    let rig = Rig::new("flapping", &proxy, 0);
    let done = Arc::new(AtomicBool::new(false));
    // The outages: 16, each after 100 to 400 ms up, 50 to 250 ms long.
    let flapper = {
        let (proxy, done) = (proxy.clone(), done.clone());
        std::thread::spawn(move || {
            let mut rng = SplitMix64::new(0xF1A9);
            for _ in 0..16 {
                std::thread::sleep(Duration::from_millis(100 + rng.below(300)));
                proxy.stop();
                std::thread::sleep(Duration::from_millis(50 + rng.below(200)));
                proxy.restart();
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let mut rng = SplitMix64::new(0x5EED);
    let mut model = Model::new();
    let mut db = Some(rig.open().unwrap());
    let (mut batches, mut reopens, mut failed_calls, mut failed_reads, mut reads) = (0, 0, 0, 0, 0);
    let mut b = 0u64;
    while !done.load(Ordering::SeqCst) {
        b += 1;
        let what = format!("batch {b}");
        let h = db.as_ref().unwrap();
        let (w, m) = write_batch(h, &mut rng, b);
        let mut failed = Model::new();
        let mut r = match w {
            Ok(()) => {
                model.extend(m);
                batches += 1;
                Ok(())
            }
            Err(e) => {
                assert!(matches!(e, Error::Poisoned { .. }), "{what}: write: {e}");
                failed = m;
                Err(e)
            }
        };
        if r.is_ok() && b.is_multiple_of(3) {
            r = h.flush();
        }
        if r.is_ok() && b.is_multiple_of(7) {
            r = h.compact();
        }
        match &r {
            Ok(()) => rig.check_named(h, &what),
            Err(_) => failed_calls += 1,
        }
        for _ in 0..10 {
            reads += 1;
            if check_read(h, &key(rng.below(KEYS)), &model, &failed, &what) {
                failed_reads += 1;
            }
        }
        if r.is_err() {
            // Poisoned, or about to be: reopen, again and again while the
            // server is away.
            let _ = db.take().unwrap().close();
            let mut tries = 0;
            db = loop {
                match rig.open() {
                    Ok(d) => break Some(d),
                    Err(e) => {
                        tries += 1;
                        failed_calls += 1;
                        assert!(tries < 400, "{what}: no reopen succeeds: {e}");
                        std::thread::sleep(Duration::from_millis(25));
                    }
                }
            };
            reopens += 1;
            let h = db.as_ref().unwrap();
            rig.check_named(h, &what);
            // Keys of the failed batch: applied whole or not at all.
            let applied = failed.iter().filter(|(k, v)| {
                h.get(k).ok().flatten().as_deref() == Some(&v[..]) && model.get(*k) != Some(*v)
            });
            assert_eq!(applied.count(), 0, "{what}: a refused write was applied");
        }
    }
    flapper.join().unwrap();
    proxy.restart();
    if let Some(db) = db.take() {
        let _ = db.close();
    }
    let db = rig.open().unwrap();
    check_all(&db, &model, 1, "at the end");
    rig.check_exact(&db, "at the end");
    // It takes writes, flushes and compacts again.
    let (w, m) = write_batch(&db, &mut rng, b + 1);
    w.unwrap();
    model.extend(m);
    db.flush().unwrap();
    db.compact().unwrap();
    check_all(&db, &model, 1, "after");
    rig.check_exact(&db, "after");
    assert!(batches > 0);
    eprintln!(
        "16 outages: {batches} batches acknowledged ({} keys), {reopens} reopens, {failed_calls} \
         failed calls, {failed_reads} of {reads} reads failed, {} tables",
        model.len(),
        table_names(&db).len()
    );
}

/// A store kept wholly in the bucket, its writer and a reader elsewhere
/// both through the proxy: while the server is away a synced write fails
/// and stops the writer, a reader's refresh fails and its reads fail or
/// answer right; once it is back the reader refreshes to the newest
/// state, a new writer (another directory) holds every acknowledged write
/// and the failed batch whole or not at all, and fences the old one out.
#[test]
fn a_whole_store_in_the_bucket_survives_the_server_going_away() {
    let proxy = Proxy::start(&endpoint());
    let prefix = prefix("away-whole");
    let root = tempfile::tempdir().unwrap();
    let fs_at = |name: &str| {
        let d = root.path().join(name);
        let config = config_at(&proxy.endpoint(), &d.join("db"), &d.join("cache"), &prefix)
            .whole_store(true)
            .cache_bytes(0)
            .max_retries(1)
            .request_timeout(Duration::from_secs(5))
            .log_flush_interval(Duration::from_millis(10));
        (Arc::new(BucketFs::open(config).unwrap()), d.join("db"))
    };
    let (w_fs, w_dir) = fs_at("writer");
    let w = Db::open(&w_dir, options(w_fs)).unwrap();
    let (r_fs, r_dir) = fs_at("reader");
    let mut rng = SplitMix64::new(0x3A7E);
    let mut model = Model::new();
    for b in 0..6u64 {
        let (r, m) = write_batch(&w, &mut rng, 2 * b);
        r.unwrap();
        model.extend(m);
        if b % 2 == 1 {
            w.flush().unwrap();
        }
    }
    let r = Db::open_read_only(&r_dir, options(r_fs)).unwrap();
    check_all(&r, &model, 5, "the reader before");

    proxy.stop();
    let (lost, failed) = write_batch(&w, &mut rng, 100);
    let e = lost.expect_err("a synced write with the server away succeeded");
    eprintln!("a synced write with the server away: {e}");
    assert!(r.refresh().is_err(), "a refresh with the server away");
    let mut failed_reads = 0;
    for k in model.keys().step_by(model.len() / 16) {
        if check_read(&r, k, &model, &Model::new(), "the reader, server away") {
            failed_reads += 1;
        }
    }
    assert!(failed_reads > 0, "no read needed the server");
    assert!(
        w.put("p", "q").is_err(),
        "the writer goes on after a failed write"
    );
    proxy.restart();

    // The reader catches up on its own handle.
    r.refresh().unwrap();
    check_all(&r, &model, 5, "the reader after");
    // A new writer elsewhere: every acknowledged write, the failed batch
    // whole or not at all.
    let (n_fs, n_dir) = fs_at("next");
    let n = Db::open(&n_dir, options(n_fs)).unwrap();
    check_all(&n, &model, 1, "the next writer");
    let (k0, v0) = failed.iter().next().unwrap();
    let landed = n.get(k0).unwrap().as_deref() == Some(&v0[..]);
    for (k, v) in &failed {
        let got = n.get(k).unwrap();
        if landed {
            assert_eq!(got.as_deref(), Some(&v[..]), "half the failed batch");
        } else {
            assert_eq!(
                got.map(|g| g.to_vec()),
                model.get(k).cloned(),
                "half the failed batch"
            );
        }
    }
    n.put("after", "outage").unwrap();
    let e = w.put("p", "q").unwrap_err();
    eprintln!("the old writer after the new one took the store: {e}");
    n.close().unwrap();
    eprintln!(
        "failed batch {}; {failed_reads} reads failed while away; {} connections",
        if landed { "landed" } else { "lost" },
        proxy.accepted()
    );
}
