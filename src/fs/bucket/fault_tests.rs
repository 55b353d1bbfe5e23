//! Fault sweeps of a store whose tables are in a bucket: one script of
//! writes, reads, flushes, compactions and a reopen, run on a [`BucketFs`]
//! over [`FaultStore`] (over `InMemory`), each run under another fault
//! schedule, all from fixed seeds.
//!
//! Properties, in every run:
//! - a write, flush, compaction or open returns an error or succeeds (no
//!   panic), and a read returns an error or the right answer, never a wrong
//!   one;
//! - whenever a flush, compaction or open succeeds, every table its
//!   MANIFEST names is an object in the bucket;
//! - once the faults stop, a reopen (the store may be poisoned) holds every
//!   acknowledged write (the failed batch whole or not at all), the bucket
//!   holds exactly the tables the MANIFEST names (what a failed or
//!   half-answered request left is deleted), and the store takes writes,
//!   flushes, compacts and reads them back.
//!
//! Sweeps: each request kind (PUT, GET, LIST, DELETE) failing at spread
//! points of a clean run's requests, as an error, a 503 SlowDown, a timeout
//! or (PUT) a stored-then-failed upload; and each fault kind striking at
//! random (fixed seeds), with the disk cache on or off (off: every block
//! read is a GET).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use object_store::ObjectStore;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;

use super::fault::{FaultStore, Kind, Plan, Request, When};
use super::{BucketConfig, BucketFs};
use crate::workload::SplitMix64;
use crate::{Db, Error, Options, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// Puts (value `Some`) and deletes (`None`), written as one batch.
type Batch = Vec<(Vec<u8>, Option<Vec<u8>>)>;

const PREFIX: &str = "s/";

#[derive(Clone, Debug)]
enum Step {
    Write(Batch),
    Flush,
    Compact,
    Reopen,
}

fn script() -> Vec<Step> {
    let mut rng = SplitMix64::new(0xB0C4_E7F1);
    let mut steps = Vec::new();
    for i in 0..120u64 {
        let ops = if i % 5 == 2 { 1 + rng.below(4) } else { 1 };
        let batch = (0..ops)
            .map(|_| {
                let k = format!("key{:04}", rng.below(100)).into_bytes();
                if rng.below(6) == 0 {
                    (k, None)
                } else {
                    let mut v = format!("v{i}-").into_bytes();
                    v.resize(150 + rng.below(200) as usize, b'a' + (i % 26) as u8);
                    (k, Some(v))
                }
            })
            .collect();
        steps.push(Step::Write(batch));
        match i {
            25 | 70 | 100 => steps.push(Step::Flush),
            50 | 110 => steps.push(Step::Compact),
            80 => steps.push(Step::Reopen),
            _ => {}
        }
    }
    steps
}

fn apply(m: &mut Model, batch: &Batch) {
    for (k, v) in batch {
        match v {
            Some(v) => m.insert(k.clone(), v.clone()),
            None => m.remove(k),
        };
    }
}

/// A store's directory, cache directory and bucket.
struct Rig {
    dir: tempfile::TempDir,
    cache: tempfile::TempDir,
    bucket: Arc<InMemory>,
    faults: Arc<FaultStore>,
    cache_bytes: u64,
    rt: tokio::runtime::Runtime,
}

impl Rig {
    fn new(cache_bytes: u64) -> Rig {
        let bucket = Arc::new(InMemory::new());
        Rig {
            dir: tempfile::tempdir().unwrap(),
            cache: tempfile::tempdir().unwrap(),
            faults: Arc::new(FaultStore::new(bucket.clone())),
            bucket,
            cache_bytes,
            rt: tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap(),
        }
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A file system over the faulty bucket (made while no fault is armed).
    fn fs(&self) -> Arc<BucketFs> {
        let config = BucketConfig::new(self.dir(), "b", self.cache.path().join("c"))
            .prefix(PREFIX)
            .chunk_bytes(1024)
            .cache_bytes(self.cache_bytes);
        Arc::new(BucketFs::with_store(config, self.faults.clone()).unwrap())
    }

    /// The table objects in the bucket, asked of the bucket itself.
    fn tables_in_bucket(&self) -> Vec<String> {
        let bucket = self.bucket.clone();
        let listing = self
            .rt
            .block_on(async move {
                bucket
                    .list_with_delimiter(Some(&ObjectPath::from(PREFIX)))
                    .await
            })
            .unwrap();
        let mut names: Vec<String> = listing
            .objects
            .iter()
            .filter_map(|m| m.location.filename())
            .filter(|n| n.ends_with(".sst"))
            .map(str::to_string)
            .collect();
        names.sort();
        names
    }
}

fn options(fs: Arc<BucketFs>) -> Options {
    Options {
        write_buffer_size: 4096,
        target_file_size: 4096,
        level1_max_bytes: 8 << 10,
        level_size_multiplier: 2,
        l0_compaction_trigger: 2,
        block_size: 1024,
        block_cache_capacity: 0,
        background_compaction: false,
        sync_writes: true,
        fs,
        ..Options::default()
    }
}

/// The tables the store's current version (its MANIFEST) names.
fn named(db: &Db) -> Vec<String> {
    let mut v: Vec<String> = db
        .file_stats()
        .iter()
        .map(|f| format!("{:06}.sst", f.number))
        .collect();
    v.sort();
    v
}

/// Every table `db`'s MANIFEST names is in the bucket.
fn check_named_in_bucket(rig: &Rig, db: &Db, what: &str) {
    let named = named(db);
    let there = rig.tables_in_bucket();
    let missing: Vec<&String> = named.iter().filter(|n| !there.contains(n)).collect();
    assert!(
        missing.is_empty(),
        "{what}: the MANIFEST names {missing:?}, which the bucket lacks"
    );
}

/// What the runs found, summed.
#[derive(Debug, Default)]
struct Tally {
    trials: u64,
    skipped: u64,
    injected: u64,
    /// Writes, flushes, compactions and opens that failed.
    failed_calls: u64,
    /// Reads that failed (never a wrong answer: that is a test failure).
    failed_reads: u64,
    reads: u64,
    /// Runs whose store was poisoned before the reopen.
    poisoned: u64,
}

/// Reads `k` and checks the answer against the acknowledged writes; a key
/// of the failed batch may read as before or after it.
fn check_read(db: &Db, k: &[u8], acked: &Model, failed: &Option<Batch>, t: &mut Tally, what: &str) {
    t.reads += 1;
    let got = match db.get(k) {
        Ok(v) => v.map(|v| v.to_vec()),
        Err(_) => {
            t.failed_reads += 1;
            return;
        }
    };
    let want = acked.get(k);
    if got.as_ref() == want {
        return;
    }
    if let Some(b) = failed
        && let Some((_, v)) = b.iter().rev().find(|(fk, _)| fk == k)
        && got == *v
    {
        return;
    }
    panic!(
        "{what}: key {} read {:?}, acknowledged {:?}",
        String::from_utf8_lossy(k),
        got.map(|v| v.len()),
        want.map(Vec::len)
    );
}

/// Runs the script under `plan` (none: a clean run), then checks the
/// store after the faults stop; see the module docs. Returns the requests
/// the script made, by kind, and the faults injected.
fn trial(
    plan: Option<Plan>,
    cache_bytes: u64,
    t: &mut Tally,
    what: &str,
) -> (Vec<(Request, u64)>, u64) {
    let rig = Rig::new(cache_bytes);
    let fs = rig.fs();
    let mut db = Some(Db::open(rig.dir(), options(fs.clone())).unwrap());
    let injected_before = rig.faults.injected();
    let seen = |r| rig.faults.seen(r);
    let seen_before: Vec<u64> = REQUESTS.iter().map(|&r| seen(r)).collect();
    if let Some(p) = plan.clone() {
        rig.faults.arm(p);
    }
    let mut acked = Model::new();
    let mut failed: Option<Batch> = None;
    let mut errored = false;
    let mut reads = SplitMix64::new(0x5EAD);
    for (n, step) in script().into_iter().enumerate() {
        let what = format!("{what}, step {n} {step:?}");
        let Some(h) = db.as_ref() else { break };
        let r = match &step {
            Step::Write(batch) => {
                let mut b = WriteBatch::new();
                for (k, v) in batch {
                    match v {
                        Some(v) => b.put(k, v),
                        None => b.delete(k),
                    }
                }
                let r = h.write(b);
                match r {
                    Ok(()) => apply(&mut acked, batch),
                    Err(_) => failed = Some(batch.clone()),
                }
                r
            }
            Step::Flush => h.flush(),
            Step::Compact => h.compact(),
            Step::Reopen => {
                let _ = db.take().unwrap().close();
                Db::open(rig.dir(), options(fs.clone())).map(|d| db = Some(d))
            }
        };
        match r {
            Ok(()) if !matches!(step, Step::Write(_)) => {
                check_named_in_bucket(&rig, db.as_ref().unwrap(), &what)
            }
            Ok(()) => {}
            Err(e) => {
                assert!(
                    !matches!(step, Step::Write(_)) || matches!(e, Error::Poisoned { .. }),
                    "{what}: a write failed with {e}, not as poisoned"
                );
                errored = true;
                t.failed_calls += 1;
            }
        }
        let Some(h) = db.as_ref() else { break };
        if errored {
            // Every acknowledged key, read under the faults.
            for k in acked.keys() {
                check_read(h, k, &acked, &failed, t, &what);
            }
            break;
        }
        for _ in 0..3 {
            let k = format!("key{:04}", reads.below(100)).into_bytes();
            check_read(h, &k, &acked, &failed, t, &what);
        }
    }
    if let Some(h) = db.as_ref() {
        check_named_in_bucket(&rig, h, &format!("{what}, at the end"));
        if h.put(b"probe", b"write").is_err() {
            t.poisoned += 1;
        } else {
            acked.insert(b"probe".to_vec(), b"write".to_vec());
        }
    }
    let injected = rig.faults.injected() - injected_before;
    let requests: Vec<(Request, u64)> = REQUESTS
        .iter()
        .zip(seen_before)
        .map(|(&r, before)| (r, seen(r) - before))
        .collect();
    rig.faults.disarm();
    if let Some(db) = db.take() {
        let _ = db.close();
    }
    drop(fs);

    // Faults stopped: reopen and check.
    let fs = rig.fs();
    let db = Db::open(rig.dir(), options(fs.clone()))
        .unwrap_or_else(|e| panic!("{what}: reopen without faults: {e}"));
    let got: Model = db
        .scan(..)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<crate::Result<_>>()
        .unwrap_or_else(|e| panic!("{what}: scan without faults: {e}"));
    let with_failed = failed.as_ref().map(|b| {
        let mut m = acked.clone();
        apply(&mut m, b);
        m
    });
    assert!(
        got == acked || Some(&got) == with_failed.as_ref(),
        "{what}: after the reopen, not the acknowledged writes ({} keys, {} acknowledged)",
        got.len(),
        acked.len()
    );
    assert_eq!(
        rig.tables_in_bucket(),
        named(&db),
        "{what}: after the reopen the bucket holds other tables than the MANIFEST names"
    );
    // It works again.
    let mut model = got;
    for i in 0..300u32 {
        let (k, v) = (
            format!("key{:04}", i % 150),
            format!("after-{i}-{}", "y".repeat(90)),
        );
        db.put(&k, &v)
            .unwrap_or_else(|e| panic!("{what}: write after: {e}"));
        model.insert(k.into_bytes(), v.into_bytes());
    }
    db.flush().unwrap();
    db.compact()
        .unwrap_or_else(|e| panic!("{what}: compaction after: {e}"));
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(&v[..]), "{what}: after");
    }
    assert_eq!(rig.tables_in_bucket(), named(&db), "{what}: after");
    db.close().unwrap();

    t.trials += 1;
    t.injected += injected;
    (requests, injected)
}

/// The request kinds the sweeps fail in turn.
const REQUESTS: [Request; 4] = [Request::Put, Request::Get, Request::List, Request::Delete];

/// `n` points spread over `0..total`.
fn points(total: u64, n: u64) -> Vec<u64> {
    if total <= n {
        return (0..total).collect();
    }
    let mut v: Vec<u64> = (0..n).map(|i| i * total / n).collect();
    v.push(total - 1);
    v.dedup();
    v
}

#[test]
fn each_request_failing_in_turn_loses_no_acknowledged_write() {
    let mut t = Tally::default();
    let mut census_all = Vec::new();
    for cache_bytes in [0, 1 << 20] {
        let mut clean = Tally::default();
        let (census, injected) = trial(None, cache_bytes, &mut clean, "clean run");
        assert_eq!(
            (injected, clean.failed_calls, clean.failed_reads),
            (0, 0, 0),
            "a clean run failed: {clean:?}"
        );
        for &(r, total) in &census {
            // With the disk cache every read is a hit: no GET to fail.
            let cached_gets = r == Request::Get && cache_bytes > 0;
            assert!(
                total > 0 || cached_gets,
                "no {r:?} in a clean run: {census:?}"
            );
            for (i, nth) in points(total, 6).into_iter().enumerate() {
                let kind = match (r, i % 3) {
                    (Request::Put, 2) => Kind::StoredThenFail,
                    (_, 0) => Kind::Error,
                    (_, 1) => Kind::SlowDown,
                    _ => Kind::Timeout,
                };
                let what = format!("{kind:?} at {r:?} #{nth} of {total}, cache {cache_bytes}");
                let plan = Plan {
                    kind,
                    requests: vec![r],
                    when: When::Nth(nth),
                    delay: Duration::from_millis(20),
                };
                let (_, injected) = trial(Some(plan), cache_bytes, &mut t, &what);
                // A run may make a few requests fewer than the census (a
                // flush the background thread merged): then none fired.
                if injected == 0 {
                    t.skipped += 1;
                }
            }
        }
        census_all.push((cache_bytes, census));
    }
    assert!(
        t.trials >= 40 && t.skipped * 10 <= t.trials,
        "{t:?} over {census_all:?}"
    );
    assert!(t.failed_calls > 0 && t.failed_reads > 0, "{t:?}");
    eprintln!("one request failing in turn: {t:?}; requests per clean run {census_all:?}");
}

#[test]
fn faults_at_random_lose_no_acknowledged_write() {
    let plans = [
        (Kind::Error, 48, Duration::ZERO),
        (Kind::SlowDown, 48, Duration::ZERO),
        (Kind::Timeout, 24, Duration::from_millis(15)),
        (Kind::Latency, 256, Duration::from_millis(1)),
        (Kind::StoredThenFail, 128, Duration::ZERO),
    ];
    let mut total = Tally::default();
    for (kind, per_1024, delay) in plans {
        let mut t = Tally::default();
        for seed in 0..4u64 {
            let cache_bytes = if seed % 2 == 0 { 0 } else { 1 << 20 };
            let plan = Plan {
                kind,
                // A stored-then-failed answer is a PUT's.
                requests: if kind == Kind::StoredThenFail {
                    vec![Request::Put]
                } else {
                    Vec::new()
                },
                when: When::Chance {
                    per_1024,
                    seed: 0xFA17_0000 + seed,
                },
                delay,
            };
            let what = format!("{kind:?} at {per_1024}/1024, seed {seed}, cache {cache_bytes}");
            trial(Some(plan), cache_bytes, &mut t, &what);
        }
        eprintln!("{kind:?}: {t:?}");
        assert!(t.injected > 0, "{kind:?}: no fault injected");
        if kind == Kind::Latency {
            // Slow answers are still answers.
            assert_eq!((t.failed_calls, t.failed_reads), (0, 0), "{kind:?}: {t:?}");
        } else {
            assert!(
                t.failed_calls + t.failed_reads > 0,
                "{kind:?}: nothing failed: {t:?}"
            );
        }
        total.trials += t.trials;
        total.injected += t.injected;
        total.failed_calls += t.failed_calls;
        total.failed_reads += t.failed_reads;
        total.reads += t.reads;
    }
    eprintln!("faults at random: {total:?}");
}
