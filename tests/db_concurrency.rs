//! Readers (gets and scans) running against writers while background flushes
//! and compactions reshape the store: published writes are always visible,
//! deletes stay deleted, scans are sorted and never show half a batch.
//!
//! The run ends on events, not after a time: it lasts [`ROUNDS`] rounds, and a
//! round ends once the store has completed [`ROUND_FLUSHES`] more flushes and
//! [`ROUND_COMPACTIONS`] more compactions and every reader has made
//! [`ROUND_CHECKS`] more checks, so reads keep interleaving with the
//! reshaping to the end. A slow machine runs longer; it cannot fail for it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, Options, WriteBatch};

mod common;
use common::scratch_dir;

const WRITERS: usize = 2;
const READERS: usize = 3;
const PAIRS: u64 = 16;
/// Rounds of the run (see the module docs).
const ROUNDS: usize = 10;
/// Flushes the store completes per round.
const ROUND_FLUSHES: u64 = 10;
/// Compactions the store completes per round.
const ROUND_COMPACTIONS: u64 = 10;
/// Checks each reader makes per round.
const ROUND_CHECKS: u64 = 100;

#[allow(dead_code)]
fn assert_send_sync<T: Send + Sync>() {}
const _: fn() = assert_send_sync::<Db>;

fn options() -> Options {
    Options::default()
        .write_buffer_size(16 << 10)
        .target_file_size(4096)
        .level1_max_bytes(32 << 10)
        .dynamic_level_bytes(false)
        .level_size_multiplier(3)
        .block_size(1024)
        .block_cache_capacity(64 << 10)
        .background_compaction(true)
}

fn wkey(w: usize, i: u64) -> Vec<u8> {
    format!("w{w}-{i:08}").into_bytes()
}

fn wval(w: usize, i: u64) -> Vec<u8> {
    let mut v = format!("val{w}-{i}|").into_bytes();
    v.resize(v.len() + (i % 97) as usize, b'x');
    v
}

fn pair_key(p: u64, side: u8) -> Vec<u8> {
    format!("pair{p:03}-{}", side as char).into_bytes()
}

fn parse_version(v: &[u8]) -> u64 {
    std::str::from_utf8(v).unwrap().parse().unwrap()
}

struct Shared {
    db: Db,
    stop: AtomicBool,
    /// Per writer: keys `0..published` are written and never change.
    published: Vec<AtomicU64>,
    /// Keys `del-0..deleted` were written and then deleted.
    deleted: AtomicU64,
    /// Highest pair version written so far.
    pair_version: AtomicU64,
    /// Per reader: checks made so far.
    checks: Vec<AtomicU64>,
}

fn writer(s: &Shared, w: usize) {
    let mut rng = SplitMix64::new(0xC0C0 + w as u64);
    let mut i = 0u64;
    while !s.stop.load(Ordering::Relaxed) {
        s.db.put(wkey(w, i), wval(w, i)).unwrap();
        i += 1;
        s.published[w].store(i, Ordering::Release);
        if w == 0 {
            // Both sides of a pair in one batch, with one version.
            let v = s.pair_version.fetch_add(1, Ordering::Relaxed) + 1;
            let p = rng.below(PAIRS);
            let mut b = WriteBatch::new();
            b.put(pair_key(p, b'a'), v.to_string().as_bytes());
            b.put(pair_key(p, b'b'), v.to_string().as_bytes());
            s.db.write(b).unwrap();
        } else if i.is_multiple_of(4) {
            let d = s.deleted.load(Ordering::Relaxed);
            let k = format!("del-{d:08}");
            s.db.put(&k, b"doomed").unwrap();
            s.db.delete(&k).unwrap();
            s.deleted.store(d + 1, Ordering::Release);
        }
    }
}

fn reader(s: &Shared, r: usize) {
    let mut rng = SplitMix64::new(0x4EAD + r as u64);
    let mut last_seen = vec![0u64; PAIRS as usize];
    while !s.stop.load(Ordering::Relaxed) {
        match rng.below(10) {
            0..=5 => {
                let w = rng.below(WRITERS as u64) as usize;
                let n = s.published[w].load(Ordering::Acquire);
                if n > 0 {
                    let i = rng.below(n);
                    let got = s.db.get(wkey(w, i)).unwrap();
                    assert_eq!(got.as_deref(), Some(wval(w, i).as_slice()), "w{w} i{i}");
                }
                let d = s.deleted.load(Ordering::Acquire);
                if d > 0 {
                    let k = format!("del-{:08}", rng.below(d));
                    assert_eq!(s.db.get(&k).unwrap(), None, "{k}");
                }
            }
            6..=7 => {
                // All pairs in one scan: sides equal, versions never go back.
                let items: Vec<(Vec<u8>, Vec<u8>)> =
                    s.db.scan(b"pair".as_slice()..b"pais".as_slice())
                        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
                        .collect();
                assert!(items.len().is_multiple_of(2), "half a pair: {items:?}");
                for c in items.chunks(2) {
                    let (a, b) = (&c[0], &c[1]);
                    assert_eq!(a.0[..a.0.len() - 1], b.0[..b.0.len() - 1], "{items:?}");
                    assert_eq!(a.1, b.1, "torn batch: {a:?} {b:?}");
                    let p: usize = std::str::from_utf8(&a.0[4..7]).unwrap().parse().unwrap();
                    let v = parse_version(&a.1);
                    assert!(v >= last_seen[p], "pair {p} went back");
                    last_seen[p] = v;
                }
            }
            _ => {
                // A writer's keys: sorted, and every key published before
                // the scan started is in it, with its value.
                let w = rng.below(WRITERS as u64) as usize;
                let n = s.published[w].load(Ordering::Acquire);
                let from = rng.below(n.max(1));
                let lo = wkey(w, from);
                let hi = wkey(w, u64::MAX / 2);
                let mut expect = from;
                let mut prev: Option<Vec<u8>> = None;
                for item in s.db.scan(lo.as_slice()..hi.as_slice()).take(500) {
                    let (k, v) = item.unwrap();
                    if let Some(p) = &prev {
                        assert!(p.as_slice() < &k[..], "scan not sorted");
                    }
                    if expect < n {
                        assert_eq!(&k[..], wkey(w, expect).as_slice(), "key skipped");
                        assert_eq!(&v[..], wval(w, expect).as_slice());
                    }
                    expect += 1;
                    prev = Some(k.to_vec());
                }
                assert!(expect >= n.min(from + 500), "scan ended early");
            }
        }
        s.checks[r].fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn readers_writers_and_background_compaction() {
    let dir = scratch_dir();
    let s = Shared {
        db: Db::open(dir.path(), options()).unwrap(),
        stop: AtomicBool::new(false),
        published: (0..WRITERS).map(|_| AtomicU64::new(0)).collect(),
        deleted: AtomicU64::new(0),
        pair_version: AtomicU64::new(0),
        checks: (0..READERS).map(|_| AtomicU64::new(0)).collect(),
    };
    // Flushes, compactions and each reader's checks so far.
    let progress = || -> Vec<u64> {
        let st = s.db.stats();
        [st.flushes, st.compactions]
            .into_iter()
            .chain(s.checks.iter().map(|c| c.load(Ordering::Relaxed)))
            .collect()
    };
    // How much of each a round must add.
    let wanted: Vec<u64> = [ROUND_FLUSHES, ROUND_COMPACTIONS]
        .into_iter()
        .chain([ROUND_CHECKS; READERS])
        .collect();
    let grew = |from: &[u64], to: &[u64]| {
        to.iter()
            .zip(from)
            .zip(&wanted)
            .all(|((t, f), w)| t - f >= *w)
    };
    let mut rounds = Vec::new();
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for w in 0..WRITERS {
            let s = &s;
            handles.push(scope.spawn(move || writer(s, w)));
        }
        for r in 0..READERS {
            let s = &s;
            handles.push(scope.spawn(move || reader(s, r)));
        }
        // Until `stop`, a thread ends only by panicking: then stop at once
        // (the join below reports it).
        let failed = || handles.iter().any(|h| h.is_finished());
        rounds.push(progress());
        while rounds.len() <= ROUNDS && !failed() {
            let now = progress();
            if grew(rounds.last().unwrap(), &now) {
                rounds.push(now);
            } else {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        s.stop.store(true, Ordering::Relaxed);
        for h in handles {
            h.join().unwrap();
        }
    });
    // No thread failed, so every round reached its goals before `stop`.
    assert_eq!(rounds.len(), ROUNDS + 1, "{rounds:?}");
    s.db.verify().unwrap();
    let published: Vec<u64> = s
        .published
        .iter()
        .map(|p| p.load(Ordering::Relaxed))
        .collect();
    s.db.close().unwrap();
    // Everything is still there after a reopen.
    let db = Db::open(dir.path(), options()).unwrap();
    for (w, &n) in published.iter().enumerate() {
        let count = db
            .scan(wkey(w, 0).as_slice()..wkey(w, u64::MAX / 2).as_slice())
            .count() as u64;
        assert_eq!(count, n);
        for i in (0..n).step_by(13) {
            assert_eq!(
                db.get(wkey(w, i)).unwrap().as_deref(),
                Some(wval(w, i).as_slice())
            );
        }
    }
    assert_eq!(db.scan(b"del-".as_slice()..b"del.".as_slice()).count(), 0);
}
