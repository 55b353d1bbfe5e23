//! Snapshots and iterators against a model: every version ever written, with
//! its sequence number, kept in a `BTreeMap`. Random puts, deletes and
//! batches; snapshots taken and released at random across flushes,
//! compactions and reopens; gets, multi-gets and scans (forward, reverse,
//! mixed from both ends, with seeks, by prefix) at snapshots, at the latest
//! state, and through iterators held while the store changes under them.
//! Snapshots and iterators kept across a close must fail with
//! `Error::Closed`. Fixed seeds; `BLOOMLSM_LONG=1` runs more of them.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

mod common;
use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, DbIter, Error, FilterOptions, Options, Snapshot, WriteBatch};
use common::keys::{op_value, random_varlen_key, show, varlen_key};
use common::model::{Entries, Model as View, as_slice, range_of};
use common::{long_mode, scratch_dir};

const KEY_SPACE: u64 = 600;

/// Every version of every key: sequence number → value (`None`: deleted).
#[derive(Default)]
struct History {
    versions: BTreeMap<Vec<u8>, BTreeMap<u64, Option<Vec<u8>>>>,
    /// The sequence number of the last write.
    seq: u64,
}

impl History {
    fn write(&mut self, k: &[u8], v: Option<Vec<u8>>) {
        self.seq += 1;
        self.versions
            .entry(k.to_vec())
            .or_default()
            .insert(self.seq, v);
    }

    fn get(&self, k: &[u8], seq: u64) -> Option<&[u8]> {
        self.versions
            .get(k)?
            .range(..=seq)
            .next_back()
            .and_then(|(_, v)| v.as_deref())
    }

    /// The live keys and values as of `seq`.
    fn view(&self, seq: u64) -> View {
        self.versions
            .iter()
            .filter_map(|(k, vs)| {
                let v = vs.range(..=seq).next_back()?.1.as_ref()?;
                Some((k.clone(), v.clone()))
            })
            .collect()
    }
}

/// Keys of the space, and 4 in 25 outside it: before, after, between.
fn random_key(rng: &mut SplitMix64) -> Vec<u8> {
    random_varlen_key(rng, 25, KEY_SPACE, &[0, 0xff])
}

/// A prefix: of a key in the space (often), empty, or matching nothing.
fn random_prefix(rng: &mut SplitMix64) -> Vec<u8> {
    match rng.below(10) {
        0 => Vec::new(),
        1 => b"x".to_vec(),
        2 => vec![b'k', 0xff],
        _ => {
            let k = varlen_key(rng.below(KEY_SPACE));
            let n = 1 + rng.below(k.len() as u64) as usize;
            k[..n].to_vec()
        }
    }
}

fn value(rng: &mut SplitMix64, k: &[u8], op: usize) -> Vec<u8> {
    let len = match rng.below(10) {
        0 => 0,
        1..=7 => rng.below(40) as usize,
        _ => 200 + rng.below(600) as usize,
    };
    op_value(k, op, len)
}

fn random_bound(rng: &mut SplitMix64) -> Bound<Vec<u8>> {
    common::model::random_bound(rng, random_key)
}

fn options(rng: &mut SplitMix64, background: bool) -> Options {
    Options::default()
        .write_buffer_size([4096, 8192][rng.below(2) as usize])
        .target_file_size(4096)
        .level1_max_bytes(16 << 10)
        .level_size_multiplier(2 + rng.below(3))
        .l0_compaction_trigger(2 + rng.below(3) as usize)
        .block_size([128, 512, 4096][rng.below(3) as usize])
        .block_cache_capacity([0, 1 << 20][rng.below(2) as usize])
        .dynamic_level_bytes(rng.below(2) == 0)
        .background_compaction(background)
        .filters(if rng.below(3) == 0 {
            FilterOptions::none()
        } else {
            FilterOptions::default()
        })
}

type Item = Option<(Vec<u8>, Vec<u8>)>;

fn item(r: Option<bloomlsm::Result<(bloomlsm::Bytes, bloomlsm::Bytes)>>, ctx: &str) -> Item {
    r.map(|e| {
        let (k, v) = e.unwrap_or_else(|e| panic!("{ctx}: iterator error {e}"));
        (k.to_vec(), v.to_vec())
    })
}

/// Drives `it` the way `mode` says and checks every answer against `want`,
/// the entries it should cover in key order: an iterator is a deque from
/// `want[f]` to `want[b - 1]`; `seek(k)` moves `f` to the first entry `>= k`
/// (never past `b`).
fn check_iter(
    mut it: DbIter,
    want: &[(Vec<u8>, Vec<u8>)],
    rng: &mut SplitMix64,
    mode: u64,
    ctx: &str,
) {
    let (mut f, mut b) = (0usize, want.len());
    let mut trace: Vec<String> = Vec::new();
    let check = |got: Item, expect: Option<&(Vec<u8>, Vec<u8>)>, trace: &[String]| {
        if got.as_ref() != expect {
            panic!(
                "{ctx}: after {:?}: got {:?}, want {:?}",
                &trace[trace.len().saturating_sub(12)..],
                got.map(|(k, _)| show(&k)),
                expect.map(|(k, _)| show(k)),
            );
        }
    };
    match mode {
        // Forward to the end.
        0 => {
            for e in want {
                check(item(it.next(), ctx), Some(e), &trace);
            }
        }
        // Backward to the start.
        1 => {
            for e in want.iter().rev() {
                check(item(it.next_back(), ctx), Some(e), &trace);
            }
        }
        // Mixed: next, next_back and seek at random, then drained by one end.
        _ => {
            for _ in 0..(10 + rng.below(40)) {
                match rng.below(10) {
                    0..=3 => {
                        trace.push("next".into());
                        let expect = (f < b).then(|| {
                            f += 1;
                            &want[f - 1]
                        });
                        check(item(it.next(), ctx), expect, &trace);
                    }
                    4..=7 => {
                        trace.push("next_back".into());
                        let expect = (f < b).then(|| {
                            b -= 1;
                            &want[b]
                        });
                        check(item(it.next_back(), ctx), expect, &trace);
                    }
                    _ => {
                        let k = random_key(rng);
                        trace.push(format!("seek {}", show(&k)));
                        it.seek(&k);
                        f = want.partition_point(|(x, _)| x < &k).min(b);
                    }
                }
            }
            if rng.below(2) == 0 {
                trace.push("drain forward".into());
                while f < b {
                    f += 1;
                    check(item(it.next(), ctx), Some(&want[f - 1]), &trace);
                }
            } else {
                trace.push("drain backward".into());
                while f < b {
                    b -= 1;
                    check(item(it.next_back(), ctx), Some(&want[b]), &trace);
                }
            }
        }
    }
    // Both ends are exhausted now.
    check(item(it.next(), ctx), None, &trace);
    check(item(it.next_back(), ctx), None, &trace);
}

fn prefix_of(view: &View, p: &[u8]) -> Entries {
    view.iter()
        .filter(|(k, _)| k.starts_with(p))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Where a read goes: the latest state or one of the live snapshots.
enum At<'a> {
    Latest(&'a Db),
    Snap(&'a Snapshot),
}

impl At<'_> {
    fn get(&self, k: &[u8]) -> bloomlsm::Result<Option<bloomlsm::Bytes>> {
        match self {
            At::Latest(db) => db.get(k),
            At::Snap(s) => s.get(k),
        }
    }
    fn multi_get(&self, ks: &[Vec<u8>]) -> bloomlsm::Result<Vec<Option<bloomlsm::Bytes>>> {
        match self {
            At::Latest(db) => db.multi_get(ks),
            At::Snap(s) => s.multi_get(ks),
        }
    }
    fn scan(&self, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> DbIter {
        let r = (as_slice(lo), as_slice(hi));
        match self {
            At::Latest(db) => db.scan(r),
            At::Snap(s) => s.scan(r),
        }
    }
    fn scan_prefix(&self, p: &[u8]) -> DbIter {
        match self {
            At::Latest(db) => db.scan_prefix(p),
            At::Snap(s) => s.scan_prefix(p),
        }
    }
}

/// One random read at `at` (sequence `seq`), checked against the history.
fn random_read(at: &At, seq: u64, h: &History, rng: &mut SplitMix64, ctx: &str) -> String {
    match rng.below(10) {
        0..=2 => {
            let k = random_key(rng);
            let got = at.get(&k).unwrap_or_else(|e| panic!("{ctx}: get {e}"));
            assert_eq!(got.as_deref(), h.get(&k, seq), "{ctx}: get {}", show(&k));
            format!("get {}", show(&k))
        }
        3 => {
            let ks: Vec<Vec<u8>> = (0..1 + rng.below(8)).map(|_| random_key(rng)).collect();
            let got = at
                .multi_get(&ks)
                .unwrap_or_else(|e| panic!("{ctx}: multi_get {e}"));
            for (k, g) in ks.iter().zip(got) {
                assert_eq!(g.as_deref(), h.get(k, seq), "{ctx}: multi_get {}", show(k));
            }
            format!("multi_get {}", ks.len())
        }
        4..=7 => {
            let (lo, hi) = (random_bound(rng), random_bound(rng));
            let mode = rng.below(3);
            let ctx = format!("{ctx}: scan {lo:?}..{hi:?} mode {mode}");
            check_iter(
                at.scan(&lo, &hi),
                &range_of(&h.view(seq), &lo, &hi),
                rng,
                mode,
                &ctx,
            );
            format!("scan mode {mode}")
        }
        _ => {
            let p = random_prefix(rng);
            let mode = rng.below(3);
            let ctx = format!("{ctx}: prefix {} mode {mode}", show(&p));
            check_iter(
                at.scan_prefix(&p),
                &prefix_of(&h.view(seq), &p),
                rng,
                mode,
                &ctx,
            );
            format!("prefix {} mode {mode}", show(&p))
        }
    }
}

/// Counts of what a run did, to check that the runs exercise what they claim.
#[derive(Debug, Default)]
struct Counts {
    snapshot_reads: usize,
    snapshot_reads_after_compaction: usize,
    held_iterators: usize,
    closed_checks: usize,
    max_live: usize,
}

fn run(seed: u64, ops: usize, background: bool, dir: &Path) -> Counts {
    let mut rng = SplitMix64::new(seed);
    let opts = options(&mut rng, background);
    let mut db = Db::open(dir, opts.clone()).unwrap();
    let mut h = History::default();
    // Live snapshots with the sequence number the model expects, and whether
    // a compaction ran since each was taken.
    let mut snaps: Vec<(Snapshot, u64, bool)> = Vec::new();
    // Iterators held while the store changes: the entries each must yield.
    let mut held: Vec<(DbIter, Entries, u64)> = Vec::new();
    let mut recent: Vec<String> = Vec::new();
    let mut counts = Counts::default();
    let mut last_key: Option<Vec<u8>> = None;
    for op in 0..ops {
        let ctx = format!("seed {seed} bg {background} op {op} recent {recent:?}");
        let desc: String = match rng.below(1000) {
            0..=299 => {
                // Often the key of the last write: the version a snapshot
                // taken just then sees is at exactly its sequence number.
                let k = match &last_key {
                    Some(k) if rng.below(4) == 0 => k.clone(),
                    _ => random_key(&mut rng),
                };
                last_key = Some(k.clone());
                let v = value(&mut rng, &k, op);
                db.put(&k, &v).unwrap();
                h.write(&k, Some(v));
                format!("put {}", show(&k))
            }
            300..=399 => {
                let k = random_key(&mut rng);
                db.delete(&k).unwrap();
                h.write(&k, None);
                format!("delete {}", show(&k))
            }
            400..=449 => {
                let mut b = WriteBatch::new();
                let n = 1 + rng.below(10);
                for _ in 0..n {
                    let k = random_key(&mut rng);
                    if rng.below(4) == 0 {
                        b.delete(&k);
                        h.write(&k, None);
                    } else {
                        let v = value(&mut rng, &k, op);
                        b.put(&k, &v);
                        h.write(&k, Some(v));
                    }
                }
                db.write(b).unwrap();
                format!("batch {n}")
            }
            450..=509 => {
                let s = db.snapshot();
                assert_eq!(s.sequence(), h.seq, "{ctx}: snapshot sequence");
                snaps.push((s, h.seq, false));
                counts.max_live = counts.max_live.max(snaps.len());
                format!("snapshot @{}", h.seq)
            }
            510..=549 if !snaps.is_empty() => {
                let i = rng.below(snaps.len() as u64) as usize;
                let (_, seq, _) = snaps.swap_remove(i);
                format!("release @{seq}")
            }
            550..=739 => {
                let which = rng.below(snaps.len() as u64 + 1) as usize;
                match snaps.get(which) {
                    Some((s, seq, compacted)) => {
                        let ctx = format!("{ctx}: at snapshot @{seq}");
                        counts.snapshot_reads += 1;
                        counts.snapshot_reads_after_compaction += usize::from(*compacted);
                        let d = random_read(&At::Snap(s), *seq, &h, &mut rng, &ctx);
                        format!("{d} @{seq}")
                    }
                    None => random_read(&At::Latest(&db), h.seq, &h, &mut rng, &ctx),
                }
            }
            740..=769 => {
                // An iterator kept while the store changes; drained later.
                let (lo, hi) = (random_bound(&mut rng), random_bound(&mut rng));
                let (it, seq) = match snaps.first() {
                    Some((s, seq, _)) if rng.below(2) == 0 => {
                        (s.scan((as_slice(&lo), as_slice(&hi))), *seq)
                    }
                    _ => (db.scan((as_slice(&lo), as_slice(&hi))), h.seq),
                };
                held.push((it, range_of(&h.view(seq), &lo, &hi), seq));
                format!("hold scan {lo:?}..{hi:?} @{seq}")
            }
            770..=799 if !held.is_empty() => {
                let (it, want, seq) = held.remove(0);
                let mode = rng.below(3);
                counts.held_iterators += 1;
                let ctx = format!("{ctx}: held iterator @{seq} mode {mode}");
                check_iter(it, &want, &mut rng, mode, &ctx);
                format!("drain held @{seq}")
            }
            800..=869 => {
                db.flush().unwrap();
                "flush".into()
            }
            870..=909 => {
                db.compact().unwrap();
                for s in &mut snaps {
                    s.2 = true;
                }
                "compact".into()
            }
            910..=984 => {
                db.maintain().unwrap();
                for s in &mut snaps {
                    s.2 = true;
                }
                "maintain".into()
            }
            985..=999 => {
                // Snapshots and iterators do not survive the store: kept
                // across the close, they fail with Closed, and the store can
                // be reopened meanwhile.
                let old_snaps = std::mem::take(&mut snaps);
                let old_held = std::mem::take(&mut held);
                let latest_iter = db.scan(..);
                db.close().unwrap();
                db = Db::open(dir, opts.clone()).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
                for (s, seq, _) in &old_snaps {
                    assert!(
                        matches!(s.get(b"k000"), Err(Error::Closed)),
                        "{ctx}: @{seq}"
                    );
                    assert!(matches!(s.multi_get(&[b"k000"]), Err(Error::Closed)));
                    let mut it = s.scan(..);
                    assert!(matches!(it.next(), Some(Err(Error::Closed))), "{ctx}");
                    assert!(it.next().is_none() && it.next_back().is_none());
                    counts.closed_checks += 1;
                }
                for (mut it, _, _) in old_held.into_iter().chain([(latest_iter, Vec::new(), 0)]) {
                    assert!(matches!(it.next_back(), Some(Err(Error::Closed))), "{ctx}");
                    assert!(it.next().is_none());
                    counts.closed_checks += 1;
                }
                drop(old_snaps);
                // The store continues the sequence numbers.
                assert_eq!(db.snapshot().sequence(), h.seq, "{ctx}: after reopen");
                "reopen".into()
            }
            _ => continue,
        };
        recent.push(desc);
        if recent.len() > 10 {
            recent.remove(0);
        }
    }
    let ctx = format!("seed {seed} bg {background} end");
    for (s, seq, _) in &snaps {
        let view = h.view(*seq);
        check_iter(
            s.scan(..),
            &range_of(&view, &Bound::Unbounded, &Bound::Unbounded),
            &mut rng,
            0,
            &ctx,
        );
        check_iter(
            s.scan(..),
            &range_of(&view, &Bound::Unbounded, &Bound::Unbounded),
            &mut rng,
            1,
            &ctx,
        );
    }
    for (it, want, _) in held {
        check_iter(it, &want, &mut rng, 0, &ctx);
    }
    db.verify().unwrap();
    counts
}

fn run_seeds(background: bool, seeds: u64, ops: usize) {
    let mut all = Vec::new();
    for i in 0..seeds {
        let dir = scratch_dir();
        all.push(run(
            0x5a95_0000 + i + u64::from(background) * 1000,
            ops,
            background,
            dir.path(),
        ));
    }
    eprintln!("bg {background}: {all:?}");
    // The runs read at snapshots that compactions ran past, hold iterators,
    // and check snapshots and iterators across closes.
    assert!(
        all.iter()
            .map(|c| c.snapshot_reads_after_compaction)
            .sum::<usize>()
            > 100
    );
    assert!(all.iter().map(|c| c.held_iterators).sum::<usize>() > 20);
    assert!(all.iter().map(|c| c.closed_checks).sum::<usize>() > 5);
    assert!(all.iter().any(|c| c.max_live >= 5));
}

#[test]
fn model_background_compaction_off() {
    let (seeds, ops) = if long_mode() { (40, 6000) } else { (6, 2500) };
    run_seeds(false, seeds, ops);
}

#[test]
fn model_background_compaction_on() {
    let (seeds, ops) = if long_mode() { (20, 6000) } else { (3, 2500) };
    run_seeds(true, seeds, ops);
}
