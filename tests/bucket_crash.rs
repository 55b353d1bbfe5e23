//! SIGKILL of a writer whose tables are in a bucket (a real S3 server,
//! `common::bucket`): the test binary runs itself again as a child that
//! opens a `BucketFs` and a store, writes puts and batches (one in three
//! synced) while flushes and background compactions upload and delete
//! tables, and prints each acknowledged operation; the parent kills it at a
//! seeded moment, reopens the store with a `BucketFs` on the same prefix
//! and cache directory, and checks:
//!
//! - the open succeeds: no MANIFEST entry names an object the bucket
//!   lacks (the store refuses to open otherwise), and every table the
//!   MANIFEST names is in the bucket's listing;
//! - no acknowledged write is lost, synced or not (a process kill keeps
//!   what reached the OS), the one operation in flight is there whole or
//!   not at all, and every read — a scan and a get of every key — is right;
//! - tables the child uploaded that no MANIFEST edit named (a flush or a
//!   compaction cut short), and inputs a compaction had not yet deleted,
//!   are removed at the open: the bucket then holds exactly the MANIFEST's
//!   tables.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloomlsm::fs::bucket::BucketFs;
use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, Options, WriteBatch, WriteOptions};

mod common;
use common::bucket::{Bucket, check_named_in_bucket, config, prefix, table_names};
use common::child::Child;
use common::model::{self, Model};

const ENV: &str = "BLOOMLSM_BUCKET_CRASH_CHILD";
const KEY_SPACE: u64 = 400;
/// The child stops on its own after this many operations.
const CHILD_MAX_OPS: u64 = 5_000;

/// One operation: its writes (`None`: a delete) as one batch, and whether
/// it is synced.
struct Op {
    writes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    sync: bool,
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Operation `i` of round `round`; a value names its key, round and
/// operation.
fn gen_op(rng: &mut SplitMix64, round: u64, i: u64) -> Op {
    let n = if rng.below(3) == 0 {
        2 + rng.below(5)
    } else {
        1
    };
    let writes = (0..n)
        .map(|j| {
            let k = key(rng.below(KEY_SPACE));
            if rng.below(8) == 0 {
                return (k, None);
            }
            let mut v = format!("{}|r{round}|op{i}|{j}|", String::from_utf8_lossy(&k)).into_bytes();
            v.resize(v.len() + rng.below(250) as usize, b'a' + (i % 26) as u8);
            (k, Some(v))
        })
        .collect();
    Op {
        writes,
        sync: rng.below(3) == 0,
    }
}

fn op_rng(seed: u64, round: u64) -> SplitMix64 {
    SplitMix64::new(seed.wrapping_mul(1_000_003).wrapping_add(round))
}

fn apply(m: &mut Model, op: &Op) {
    for (k, v) in &op.writes {
        model::apply(m, k, v.as_deref());
    }
}

/// Small buffers and tables, so that a few hundred operations flush and
/// compact several times.
fn options(fs: Arc<BucketFs>, background_compaction: bool) -> Options {
    Options::default()
        .write_buffer_size(16 << 10)
        .target_file_size(8 << 10)
        .level1_max_bytes(48 << 10)
        .level_size_multiplier(3)
        .l0_compaction_trigger(2)
        .block_size(1024)
        .background_compaction(background_compaction)
        .fs(fs)
}

/// The writer: runs only when the parent sets `ENV`
/// ("dir|cache|prefix|seed|round").
#[test]
#[ignore = "run by the bucket crash test as a child process"]
fn bucket_child_writer() {
    let Ok(spec) = std::env::var(ENV) else {
        return;
    };
    let p: Vec<&str> = spec.split('|').collect();
    let (dir, cache, prefix) = (Path::new(p[0]), Path::new(p[1]), p[2]);
    let (seed, round) = (p[3].parse().unwrap(), p[4].parse().unwrap());
    let fs = Arc::new(BucketFs::open(config(dir, cache, prefix)).unwrap());
    let db = Db::open(dir, options(fs, true)).unwrap();
    println!("OPEN");
    let mut rng = op_rng(seed, round);
    for i in 0..CHILD_MAX_OPS {
        let op = gen_op(&mut rng, round, i);
        let mut b = WriteBatch::new();
        for (k, v) in &op.writes {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            }
        }
        db.write_with(b, WriteOptions::default().sync(op.sync))
            .unwrap();
        println!("ACK {i}");
        if i % 97 == 96 {
            db.flush().unwrap();
        }
    }
    db.close().unwrap();
}

/// What the kills found, summed.
#[derive(Debug, Default)]
struct Tally {
    kills: u64,
    acked: u64,
    synced_acked: u64,
    keys_checked: u64,
    leftovers_removed: u64,
}

/// One kill: runs the child, kills it, reopens and checks; returns the
/// state the store holds.
#[allow(clippy::too_many_arguments)]
fn round(
    dir: &Path,
    cache: &Path,
    prefix: &str,
    seed: u64,
    round: u64,
    model: &Model,
    rng: &mut SplitMix64,
    t: &mut Tally,
) -> Model {
    let ctx = format!("seed {seed:#x} round {round}");
    let spec = format!(
        "{}|{}|{prefix}|{seed}|{round}",
        dir.display(),
        cache.display()
    );
    let mut child = Child::spawn("bucket_child_writer", &[(ENV, spec)]);
    let mut last: Option<u64> = None;
    let record = |line: &str, last: &mut Option<u64>| {
        if let Some(i) = line.strip_prefix("ACK ") {
            let i: u64 = i.parse().unwrap();
            assert!(last.is_none_or(|l| l + 1 == i), "{ctx}: acks out of order");
            *last = Some(i);
        }
    };
    // One kill in eight after a short delay (it may fall in the open),
    // the others after a seeded number of acknowledgements.
    match rng.below(8) {
        0 => std::thread::sleep(Duration::from_millis(rng.below(400))),
        _ => {
            let n = rng.below(700);
            while let Some(line) = child.next_line() {
                record(&line, &mut last);
                if last.is_some_and(|l| l >= n) {
                    break;
                }
            }
        }
    }
    let killed = child.kill();
    for line in &killed.rest {
        record(line, &mut last);
    }
    assert!(
        !killed.status.success() && killed.status.code().is_none(),
        "{ctx}: the child ended by itself ({}): {}",
        killed.status,
        killed.stderr
    );
    assert!(
        !killed.stderr.contains("panicked"),
        "{ctx}: {}",
        killed.stderr
    );
    t.kills += 1;

    // The acknowledged operations, and the one maybe in flight.
    let mut ops = op_rng(seed, round);
    let acked = last.map_or(0, |l| l + 1);
    let mut want = model.clone();
    for i in 0..acked {
        let op = gen_op(&mut ops, round, i);
        t.synced_acked += u64::from(op.sync);
        apply(&mut want, &op);
    }
    t.acked += acked;
    let mut with_flight = want.clone();
    apply(&mut with_flight, &gen_op(&mut ops, round, acked));

    let bucket = Bucket::new();
    let before = bucket.tables(prefix);
    let fs = Arc::new(
        BucketFs::open(config(dir, cache, prefix))
            .unwrap_or_else(|e| panic!("{ctx}: BucketFs::open after the kill: {e}")),
    );
    let db = Db::open(dir, options(fs, false))
        .unwrap_or_else(|e| panic!("{ctx}: reopen after the kill: {e}"));
    check_named_in_bucket(&bucket, prefix, &db, &ctx);
    let got = model::scan_all(&db);
    let got: Model = got.into_iter().collect();
    assert!(
        got == want || got == with_flight,
        "{ctx}: after {acked} acknowledged operations the store holds {} keys, not the \
         acknowledged {} (or {} with the one in flight)",
        got.len(),
        want.len(),
        with_flight.len()
    );
    for i in 0..KEY_SPACE {
        let k = key(i);
        let g = db
            .get(&k)
            .unwrap_or_else(|e| panic!("{ctx}: get: {e}"))
            .map(|v| v.to_vec());
        assert_eq!(g.as_ref(), got.get(&k), "{ctx}: get and scan disagree");
        t.keys_checked += 1;
    }
    let live = table_names(&db);
    assert_eq!(
        bucket.tables(prefix),
        live,
        "{ctx}: the bucket holds tables the MANIFEST does not name"
    );
    t.leftovers_removed += before.difference(&live).count() as u64;
    db.close().unwrap();
    got
}

#[test]
fn killed_writers_with_tables_in_the_bucket_lose_no_acknowledged_write() {
    let start = Instant::now();
    let (stores, rounds) = if common::long_mode() {
        (10, 20)
    } else {
        (3, 10)
    };
    let mut t = Tally::default();
    for s in 0..stores {
        let seed = 0xB0C3_7000 + s;
        let root = common::scratch_dir();
        let (dir, cache) = (root.path().join("db"), root.path().join("cache"));
        let prefix = prefix("crash");
        let mut rng = SplitMix64::new(seed);
        let mut model = Model::new();
        for r in 0..rounds {
            model = round(&dir, &cache, &prefix, seed, r, &model, &mut rng, &mut t);
        }
    }
    assert!(t.acked > 0 && t.synced_acked > 0, "{t:?}");
    eprintln!("bucket crash: {t:?} in {:?}", start.elapsed());
}
