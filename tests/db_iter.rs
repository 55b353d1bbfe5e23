//! Iterators against a `BTreeMap` (property tests): on random stores spread
//! over the memtable, L0 files and deeper levels, scans over random ranges
//! and prefixes, driven by random sequences of `next`, `next_back` and
//! `seek`, yield exactly what the map's range does, at the latest state and
//! at a snapshot taken part way, every table with a range filter that
//! bounded scans may skip it by, and with two-level indexes read on demand
//! in half the cases. Plus a directed test of what compaction
//! keeps for snapshots.

use std::ops::Bound;

use bloomlsm::{Db, DbIter, Options};
use proptest::prelude::*;

mod common;
use common::model::Model;
use common::scratch_dir;

/// With `two_level`, tables write their indexes in 64-byte partitions and
/// a metadata budget of 0 leaves every partition (and filter) to be read on
/// demand, so scans and seeks step through index partitions read from disk.
fn options(two_level: bool) -> Options {
    common::options::tiny()
        .index_partition_bytes(if two_level { 64 } else { 0 })
        .metadata_memory_budget(two_level.then_some(0))
        .level1_max_bytes(8 << 10)
        .dynamic_level_bytes(false)
        .level_size_multiplier(2)
        .block_size(64)
        .block_cache_capacity(0)
        // Bounded scans skip files by their range filters (keys of up to 4
        // bytes: every key has a point of its own).
        .range_filter_bits_per_key(Some(6.0))
}

/// Short keys over a small alphabet with `0xff`: prefixes share a lot, and
/// prefix ranges end at an incremented byte or run to the end.
fn user_key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'c', 0xff]), 1..5)
}

#[derive(Clone, Debug)]
enum Op {
    Put(Vec<u8>, u8),
    Delete(Vec<u8>),
    Flush,
    Maintain,
    Compact,
    Snapshot,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (user_key(), any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)),
        4 => user_key().prop_map(Op::Delete),
        1 => Just(Op::Flush),
        1 => Just(Op::Maintain),
        1 => Just(Op::Compact),
        1 => Just(Op::Snapshot),
    ]
}

#[derive(Clone, Debug)]
enum Step {
    Next,
    Back,
    Seek(Vec<u8>),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => Just(Step::Next),
        4 => Just(Step::Back),
        1 => user_key().prop_map(Step::Seek),
    ]
}

#[derive(Clone, Debug)]
enum Scope {
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>),
    Prefix(Vec<u8>),
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        Just(Bound::Unbounded),
        user_key().prop_map(Bound::Included),
        user_key().prop_map(Bound::Excluded),
    ]
}

fn scope() -> impl Strategy<Value = Scope> {
    prop_oneof![
        (bound(), bound()).prop_map(|(lo, hi)| Scope::Range(lo, hi)),
        prop::collection::vec(prop::sample::select(vec![b'a', b'b', 0xff]), 0..3)
            .prop_map(Scope::Prefix),
    ]
}

fn expected(model: &Model, scope: &Scope) -> Vec<(Vec<u8>, Vec<u8>)> {
    let inside = |k: &[u8]| match scope {
        Scope::Prefix(p) => k.starts_with(p),
        Scope::Range(lo, hi) => {
            (match lo {
                Bound::Included(b) => k >= b.as_slice(),
                Bound::Excluded(b) => k > b.as_slice(),
                Bound::Unbounded => true,
            }) && (match hi {
                Bound::Included(b) => k <= b.as_slice(),
                Bound::Excluded(b) => k < b.as_slice(),
                Bound::Unbounded => true,
            })
        }
    };
    model
        .iter()
        .filter(|(k, _)| inside(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Runs `steps` on `it`, then drains it from the front, checking each answer
/// against the deque `want[f..b]` (a seek moves `f` to the first entry `>=`
/// its key, never past `b`).
fn run_steps(
    mut it: DbIter,
    want: &[(Vec<u8>, Vec<u8>)],
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let (mut f, mut b) = (0usize, want.len());
    let get = |r: Option<bloomlsm::Result<(bloomlsm::Bytes, bloomlsm::Bytes)>>| {
        r.map(|e| {
            let (k, v) = e.unwrap();
            (k.to_vec(), v.to_vec())
        })
    };
    for (i, s) in steps.iter().enumerate() {
        match s {
            Step::Next => {
                let expect = (f < b).then(|| {
                    f += 1;
                    want[f - 1].clone()
                });
                prop_assert_eq!(get(it.next()), expect, "step {} of {:?}", i, steps);
            }
            Step::Back => {
                let expect = (f < b).then(|| {
                    b -= 1;
                    want[b].clone()
                });
                prop_assert_eq!(get(it.next_back()), expect, "step {} of {:?}", i, steps);
            }
            Step::Seek(k) => {
                it.seek(k);
                f = want.partition_point(|(x, _)| x < k).min(b);
            }
        }
    }
    let rest: Vec<_> = it
        .map(|e| e.unwrap())
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    prop_assert_eq!(&rest[..], &want[f..b]);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn iterators_match_btreemap(
        ops in prop::collection::vec(op(), 20..400),
        scopes in prop::collection::vec((scope(), prop::collection::vec(step(), 0..40)), 1..8),
        two_level in any::<bool>(),
    ) {
        let dir = scratch_dir();
        let db = Db::open(dir.path(), options(two_level)).unwrap();
        let mut model = Model::new();
        let mut snap: Option<(bloomlsm::Snapshot, Model)> = None;
        for (i, op) in ops.iter().enumerate() {
            match op {
                Op::Put(k, v) => {
                    let v = vec![*v; 1 + i % 7];
                    db.put(k, &v).unwrap();
                    model.insert(k.clone(), v);
                }
                Op::Delete(k) => {
                    db.delete(k).unwrap();
                    model.remove(k);
                }
                Op::Flush => db.flush().unwrap(),
                Op::Maintain => db.maintain().unwrap(),
                Op::Compact => db.compact().unwrap(),
                Op::Snapshot => snap = Some((db.snapshot(), model.clone())),
            }
        }
        for (scope, steps) in &scopes {
            let latest = |s: &Scope| match s {
                Scope::Range(lo, hi) => db.scan((lo.as_ref().map(Vec::as_slice), hi.as_ref().map(Vec::as_slice))),
                Scope::Prefix(p) => db.scan_prefix(p),
            };
            run_steps(latest(scope), &expected(&model, scope), steps)?;
            // Pure reverse.
            let rev: Vec<_> = latest(scope).rev().map(|e| e.unwrap()).map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
            let mut want = expected(&model, scope);
            want.reverse();
            prop_assert_eq!(rev, want);
            if let Some((s, m)) = &snap {
                let at = |sc: &Scope| match sc {
                    Scope::Range(lo, hi) => s.scan((lo.as_ref().map(Vec::as_slice), hi.as_ref().map(Vec::as_slice))),
                    Scope::Prefix(p) => s.scan_prefix(p),
                };
                run_steps(at(scope), &expected(m, scope), steps)?;
            }
        }
    }
}

fn entries(db: &Db) -> u64 {
    db.stats().levels.iter().map(|l| l.entries).sum()
}

/// A full compaction keeps, of each key, the newest version each live
/// snapshot sees and the newest of all, and nothing else; a released
/// snapshot's versions go at the next compaction; a tombstone stays while a
/// snapshot sees the value under it.
#[test]
fn compaction_keeps_what_snapshots_see_and_drops_the_rest() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options(false)).unwrap();
    db.put("a", "1").unwrap();
    db.put("a", "2").unwrap();
    let s2 = db.snapshot(); // sees a=2 (written at exactly its sequence number)
    db.put("a", "3").unwrap();
    db.put("a", "4").unwrap();
    let s4 = db.snapshot(); // sees a=4
    db.put("a", "5").unwrap();
    db.compact().unwrap();
    assert_eq!(entries(&db), 3, "a=5, a=4, a=2");
    assert_eq!(s2.get("a").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(s4.get("a").unwrap().as_deref(), Some(&b"4"[..]));
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"5"[..]));

    // A compaction only rewrites the files its inputs overlap: each L0 file
    // below spans "a".
    drop(s4);
    db.put("0", "1").unwrap();
    db.put("b", "1").unwrap();
    db.compact().unwrap();
    assert_eq!(entries(&db), 4, "0=1, a=5, a=2, b=1");
    assert_eq!(s2.get("a").unwrap().as_deref(), Some(&b"2"[..]));

    let s = db.snapshot();
    db.delete("a").unwrap();
    drop(s2);
    db.compact().unwrap();
    assert_eq!(entries(&db), 4, "0=1, a deleted, a=5 for the snapshot, b=1");
    assert_eq!(s.get("a").unwrap().as_deref(), Some(&b"5"[..]));
    assert_eq!(db.get("a").unwrap(), None);
    let keys: Vec<_> = s.scan(..).rev().map(|e| e.unwrap().0).collect();
    assert_eq!(keys, ["b", "a", "0"]);

    drop(s);
    db.put("0", "2").unwrap();
    db.put("c", "1").unwrap();
    db.compact().unwrap();
    assert_eq!(
        entries(&db),
        3,
        "0=2, b=1, c=1: the tombstone and a=5 are gone"
    );
    assert_eq!(db.get("a").unwrap(), None);
}

/// A flush keeps the versions live snapshots see, too.
#[test]
fn flush_keeps_what_snapshots_see() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options(false)).unwrap();
    db.put("k", "old").unwrap();
    let s = db.snapshot();
    db.put("k", "new").unwrap();
    db.put("k", "newer").unwrap();
    db.flush().unwrap();
    assert_eq!(entries(&db), 2, "k=newer, k=old");
    assert_eq!(s.get("k").unwrap().as_deref(), Some(&b"old"[..]));
    drop(s);
    db.put("k", "newest").unwrap();
    db.flush().unwrap();
    assert_eq!(
        entries(&db),
        3,
        "the new file: k=newest; the old one unchanged"
    );
}

/// A snapshot or an iterator kept past `close` (or past dropping the `Db`)
/// fails with `Error::Closed`, never a value or a panic, and does not keep
/// the store locked.
#[test]
fn snapshots_and_iterators_end_with_their_store() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options(false)).unwrap();
    db.put("a", "1").unwrap();
    db.put("b", "2").unwrap();
    let snap = db.snapshot();
    let clone = snap.clone();
    let mut it = db.scan(..);
    assert_eq!(it.next().unwrap().unwrap().0, "a");
    let mut snap_it = snap.scan(..);
    db.close().unwrap();
    assert!(matches!(snap.get("a"), Err(bloomlsm::Error::Closed)));
    assert!(matches!(
        clone.multi_get(&["a"]),
        Err(bloomlsm::Error::Closed)
    ));
    assert!(matches!(it.next(), Some(Err(bloomlsm::Error::Closed))));
    assert!(it.next().is_none() && it.next_back().is_none());
    assert!(matches!(
        snap_it.next_back(),
        Some(Err(bloomlsm::Error::Closed))
    ));
    assert!(matches!(
        snap.scan_prefix("a").next(),
        Some(Err(bloomlsm::Error::Closed))
    ));
    // Reopened while they live; dropping them afterwards touches nothing.
    let db = Db::open(dir.path(), options(false)).unwrap();
    drop((snap, clone, it, snap_it));
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"2"[..]));
    // Dropping the handle closes the store too.
    let snap = db.snapshot();
    drop(db);
    assert!(matches!(snap.get("b"), Err(bloomlsm::Error::Closed)));
}
