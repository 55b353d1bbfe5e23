//! Snapshots under every kind of write, in several keyspaces, checked
//! against a `BTreeMap` per keyspace and per live snapshot: puts, deletes
//! and range deletes, alone and in batches across keyspaces; up to six live
//! snapshots read by get, multi_get and scans both ways; flushes,
//! compactions and maintenance of the store and of one keyspace; a keyspace
//! dropped and made anew; reopens. Values of up to a few KiB against tables
//! of 4–6 KiB cut the outputs between almost every pair of keys, so a
//! version a snapshot keeps under a range tombstone lands at a table's edge
//! often. Fixed seeds; `BLOOMLSM_LONG=1` runs more of them, longer.

use std::ops::Bound;
use std::path::Path;

use bloomlsm::workload::SplitMix64;
use bloomlsm::{
    Bytes, CompressionOptions, Db, DbIter, FilterOptions, FilterPolicy, Keyspace, Options,
    PrefixExtractor, Snapshot, WriteBatch,
};

mod common;
use common::keys::{op_value, random_varlen_key, show};
use common::model::{Entries, Model, apply, apply_range, as_slice, range_of};
use common::{long_mode, scratch_dir};

/// Distinct keys per keyspace: few, so versions of a key pile up under
/// snapshots and range deletes cover them.
const KEY_SPACE: u64 = 240;

/// The keyspaces: the default one and two named ones; the last is dropped
/// and made anew now and then.
const NAMES: [&str; 3] = ["default", "logs", "tmp"];

/// Most live snapshots at once.
const MAX_SNAPSHOTS: usize = 6;

fn random_key(rng: &mut SplitMix64) -> Vec<u8> {
    random_varlen_key(rng, 30, KEY_SPACE, &[0, b'~'])
}

fn random_bound(rng: &mut SplitMix64) -> Bound<Vec<u8>> {
    common::model::random_bound(rng, random_key)
}

/// A range of one to a few dozen keys, or (one in eight) a wide one; crossed
/// or empty now and then, which the store refuses.
fn random_range(rng: &mut SplitMix64) -> (Vec<u8>, Vec<u8>) {
    let a = random_key(rng);
    let b = if rng.below(8) == 0 {
        random_key(rng)
    } else {
        let mut b = a.clone();
        let last = b.len() - 1;
        b[last] = b[last].saturating_add(1 + rng.below(3) as u8);
        b
    };
    (a, b)
}

/// Values mostly large against the tables' target size, so outputs are cut
/// often; some empty.
fn value(rng: &mut SplitMix64, k: &[u8], op: usize) -> Vec<u8> {
    let len = match rng.below(8) {
        0 => 0,
        1 | 2 => rng.below(100) as usize,
        3..=5 => 500 + rng.below(1500) as usize,
        _ => 2500 + rng.below(4000) as usize,
    };
    op_value(k, op, len)
}

fn options(rng: &mut SplitMix64, background: bool) -> Options {
    Options::default()
        .write_buffer_size([4096, 8192, 32768][rng.below(3) as usize])
        .target_file_size([4096, 6144][rng.below(2) as usize])
        .level1_max_bytes(16 << 10)
        .dynamic_level_bytes(rng.below(2) == 0)
        .level_size_multiplier(2 + rng.below(3))
        .l0_compaction_trigger(2 + rng.below(3) as usize)
        .block_size([256, 1024][rng.below(2) as usize])
        .block_cache_capacity([0, 64 << 10][rng.below(2) as usize])
        .background_compaction(background)
        .filters(match rng.below(3) {
            0 => FilterOptions::none(),
            1 => FilterOptions::uniform(Some(FilterPolicy::bloom(6.0))),
            _ => FilterOptions::default(),
        })
        .prefix_extractor([None, Some(PrefixExtractor::Fixed(3))][rng.below(2) as usize])
        .range_filter_bits_per_key([None, Some(8.0)][rng.below(2) as usize])
        .compression(if rng.below(2) == 0 {
            CompressionOptions::none()
        } else {
            CompressionOptions::default()
        })
}

/// The open store and a handle on each keyspace of [`NAMES`].
struct Store {
    db: Db,
    spaces: Vec<Keyspace>,
}

impl Store {
    fn open(dir: &Path, opts: &Options, ks_opts: &[Options]) -> Store {
        let db = Db::open(dir, opts.clone()).unwrap();
        let spaces = NAMES
            .iter()
            .zip(std::iter::once(opts).chain(ks_opts))
            .map(|(name, o)| {
                db.keyspace(name)
                    .or_else(|_| db.create_keyspace(name, o.clone()))
                    .unwrap()
            })
            .collect();
        Store { db, spaces }
    }

    /// Reads keyspace `i`, at `snap` or the latest state. The default
    /// keyspace goes through `Db` and `Snapshot`'s own methods half the time.
    fn get(&self, i: usize, snap: Option<&Snapshot>, k: &[u8], direct: bool) -> Option<Bytes> {
        let r = match (i == 0 && direct, snap) {
            (true, None) => self.db.get(k),
            (true, Some(s)) => s.get(k),
            (false, None) => self.spaces[i].get(k),
            (false, Some(s)) => self.spaces[i].get_at(s, k),
        };
        r.unwrap_or_else(|e| panic!("get {}: {e}", show(k)))
    }

    fn multi_get(
        &self,
        i: usize,
        snap: Option<&Snapshot>,
        keys: &[Vec<u8>],
        direct: bool,
    ) -> Vec<Option<Bytes>> {
        let r = match (i == 0 && direct, snap) {
            (true, None) => self.db.multi_get(keys),
            (true, Some(s)) => s.multi_get(keys),
            (false, None) => self.spaces[i].multi_get(keys),
            (false, Some(s)) => self.spaces[i].multi_get_at(s, keys),
        };
        r.unwrap_or_else(|e| panic!("multi_get: {e}"))
    }

    fn scan(
        &self,
        i: usize,
        snap: Option<&Snapshot>,
        lo: &Bound<Vec<u8>>,
        hi: &Bound<Vec<u8>>,
        direct: bool,
    ) -> DbIter {
        let r = (as_slice(lo), as_slice(hi));
        match (i == 0 && direct, snap) {
            (true, None) => self.db.scan(r),
            (true, Some(s)) => s.scan(r),
            (false, None) => self.spaces[i].scan(r),
            (false, Some(s)) => self.spaces[i].scan_at(s, r),
        }
    }
}

/// A snapshot and every keyspace's model as of it.
struct Pinned {
    snap: Snapshot,
    models: Vec<Model>,
}

fn collect(it: impl Iterator<Item = bloomlsm::Result<(Bytes, Bytes)>>, ctx: &str) -> Entries {
    it.map(|r| {
        let (k, v) = r.unwrap_or_else(|e| panic!("{ctx}: scan error {e}"));
        (k.to_vec(), v.to_vec())
    })
    .collect()
}

/// A scan of keyspace `i` over `lo..hi` (backward when `rev`) returns the
/// model's entries there.
#[allow(clippy::too_many_arguments)]
fn check_scan(
    s: &Store,
    i: usize,
    snap: Option<&Snapshot>,
    model: &Model,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    rev: bool,
    direct: bool,
    ctx: &str,
) {
    let it = s.scan(i, snap, lo, hi, direct);
    let got = if rev {
        let mut g = collect(it.rev(), ctx);
        g.reverse();
        g
    } else {
        collect(it, ctx)
    };
    let want = range_of(model, lo, hi);
    if got != want {
        let keys =
            |es: &Entries| -> Vec<String> { es.iter().take(30).map(|(k, _)| show(k)).collect() };
        let first = got.iter().zip(&want).position(|(a, b)| a != b);
        panic!(
            "{ctx}: {} scan of {} at {:?} over {lo:?}..{hi:?}: got {} entries, want {}; first difference at {first:?}\n got {:?}\nwant {:?}",
            if rev { "backward" } else { "forward" },
            NAMES[i],
            snap.map(Snapshot::sequence),
            got.len(),
            want.len(),
            keys(&got),
            keys(&want)
        );
    }
}

/// Every keyspace read whole, both ways, and key by key, at `snap` or the
/// latest state.
fn check_whole(s: &Store, snap: Option<&Snapshot>, models: &[Model], ctx: &str) {
    for (i, model) in models.iter().enumerate() {
        let all = Bound::Unbounded;
        check_scan(s, i, snap, model, &all, &all, false, true, ctx);
        check_scan(s, i, snap, model, &all, &all, true, false, ctx);
        let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
        let got = s.multi_get(i, snap, &keys, i == 0);
        for (k, g) in keys.iter().zip(&got) {
            assert_eq!(
                g.as_deref(),
                model.get(k).map(Vec::as_slice),
                "{ctx}: {} multi_get {}",
                NAMES[i],
                show(k)
            );
        }
    }
}

/// One write of a batch, for the models: keyspace, key, and a value (put),
/// nothing (delete) or an end (range delete).
enum Step {
    Put(usize, Vec<u8>, Vec<u8>),
    Delete(usize, Vec<u8>),
    Range(usize, Vec<u8>, Vec<u8>),
}

#[derive(Debug, Default)]
struct Counts {
    ops: usize,
    range_deletes: usize,
    snapshot_reads: usize,
    compactions: usize,
    reopens: usize,
    most_levels: usize,
}

/// One seed: `ops` random operations; returns what it did.
fn run(seed: u64, ops: usize, background: bool, dir: &Path) -> Counts {
    let mut rng = SplitMix64::new(seed);
    let opts = options(&mut rng, background);
    let ks_opts: Vec<Options> = (1..NAMES.len())
        .map(|_| options(&mut rng, background))
        .collect();
    let mut s = Store::open(dir, &opts, &ks_opts);
    let mut models: Vec<Model> = vec![Model::new(); NAMES.len()];
    let mut pinned: Vec<Pinned> = Vec::new();
    let mut recent: Vec<String> = Vec::new();
    let mut n = Counts::default();
    for op in 0..ops {
        let ctx = format!("seed {seed:#x} bg {background} op {op} recent {recent:?}");
        let fail = |what: &str, e: bloomlsm::Error| -> ! { panic!("{ctx}: {what}: {e}") };
        let i = rng.below(NAMES.len() as u64) as usize;
        let desc: String;
        match rng.below(1000) {
            0..=299 => {
                let k = random_key(&mut rng);
                let v = value(&mut rng, &k, op);
                desc = format!("put {} {} ({} B)", NAMES[i], show(&k), v.len());
                s.spaces[i].put(&k, &v).unwrap_or_else(|e| fail("put", e));
                models[i].insert(k, v);
            }
            300..=359 => {
                let k = random_key(&mut rng);
                desc = format!("delete {} {}", NAMES[i], show(&k));
                s.spaces[i].delete(&k).unwrap_or_else(|e| fail("delete", e));
                models[i].remove(&k);
            }
            360..=439 => {
                let (a, b) = random_range(&mut rng);
                desc = format!("delete_range {} {}..{}", NAMES[i], show(&a), show(&b));
                let r = if i == 0 && rng.below(2) == 0 {
                    s.db.delete_range(&a, &b)
                } else {
                    s.spaces[i].delete_range(&a, &b)
                };
                match r {
                    Ok(()) => {
                        apply_range(&mut models[i], &a, &b);
                        n.range_deletes += 1;
                    }
                    Err(bloomlsm::Error::InvalidArgument(_)) if a >= b => {}
                    Err(e) => fail("delete_range", e),
                }
            }
            440..=499 => {
                // Puts, deletes and range deletes across keyspaces, applied
                // in order: a put after a range delete over it survives.
                let mut b = WriteBatch::new();
                let mut steps = Vec::new();
                for _ in 0..1 + rng.below(8) {
                    let j = rng.below(NAMES.len() as u64) as usize;
                    let ks = &s.spaces[j];
                    match rng.below(5) {
                        0 | 1 => {
                            let (a, e) = random_range(&mut rng);
                            if a < e {
                                b.delete_range_in(ks, &a, &e);
                                steps.push(Step::Range(j, a, e));
                            }
                        }
                        2 => {
                            let k = random_key(&mut rng);
                            b.delete_in(ks, &k);
                            steps.push(Step::Delete(j, k));
                        }
                        _ => {
                            let k = random_key(&mut rng);
                            let v = value(&mut rng, &k, op);
                            b.put_in(ks, &k, &v);
                            steps.push(Step::Put(j, k, v));
                        }
                    }
                }
                desc = format!("batch of {}", steps.len());
                s.db.write(b).unwrap_or_else(|e| fail("write", e));
                for st in steps {
                    match st {
                        Step::Put(j, k, v) => apply(&mut models[j], &k, Some(&v)),
                        Step::Delete(j, k) => apply(&mut models[j], &k, None),
                        Step::Range(j, a, e) => {
                            apply_range(&mut models[j], &a, &e);
                            n.range_deletes += 1;
                        }
                    }
                }
            }
            500..=619 => {
                // A get, at the latest state or at a live snapshot.
                let at = rng.below(pinned.len() as u64 + 1) as usize;
                let (snap, model) = match pinned.get(at) {
                    Some(p) => (Some(&p.snap), &p.models[i]),
                    None => (None, &models[i]),
                };
                let k = random_key(&mut rng);
                desc = format!(
                    "get {} {} at {:?}",
                    NAMES[i],
                    show(&k),
                    snap.map(Snapshot::sequence)
                );
                let direct = rng.below(2) == 0;
                let got = s.get(i, snap, &k, direct);
                assert_eq!(
                    got.as_deref(),
                    model.get(&k).map(Vec::as_slice),
                    "{ctx}: {desc}"
                );
                n.snapshot_reads += usize::from(snap.is_some());
            }
            620..=659 => {
                let at = rng.below(pinned.len() as u64 + 1) as usize;
                let (snap, model) = match pinned.get(at) {
                    Some(p) => (Some(&p.snap), &p.models[i]),
                    None => (None, &models[i]),
                };
                let keys: Vec<Vec<u8>> = (0..1 + rng.below(24))
                    .map(|_| random_key(&mut rng))
                    .collect();
                desc = format!(
                    "multi_get {} of {} at {:?}",
                    NAMES[i],
                    keys.len(),
                    snap.map(Snapshot::sequence)
                );
                let direct = rng.below(2) == 0;
                let got = s.multi_get(i, snap, &keys, direct);
                for (k, g) in keys.iter().zip(&got) {
                    assert_eq!(
                        g.as_deref(),
                        model.get(k).map(Vec::as_slice),
                        "{ctx}: {desc}: {}",
                        show(k)
                    );
                }
                n.snapshot_reads += usize::from(snap.is_some());
            }
            660..=739 => {
                let at = rng.below(pinned.len() as u64 + 1) as usize;
                let (snap, model) = match pinned.get(at) {
                    Some(p) => (Some(&p.snap), &p.models[i]),
                    None => (None, &models[i]),
                };
                let (lo, hi) = (random_bound(&mut rng), random_bound(&mut rng));
                let (rev, direct) = (rng.below(2) == 0, rng.below(2) == 0);
                desc = format!("scan {} at {:?}", NAMES[i], snap.map(Snapshot::sequence));
                check_scan(&s, i, snap, model, &lo, &hi, rev, direct, &ctx);
                n.snapshot_reads += usize::from(snap.is_some());
            }
            740..=799 => {
                desc = "snapshot".into();
                if pinned.len() >= MAX_SNAPSHOTS {
                    pinned.remove(rng.below(pinned.len() as u64) as usize);
                }
                let snap = if rng.below(2) == 0 {
                    s.db.snapshot()
                } else {
                    s.spaces[i]
                        .snapshot()
                        .unwrap_or_else(|e| fail("snapshot", e))
                };
                pinned.push(Pinned {
                    snap,
                    models: models.clone(),
                });
            }
            800..=819 => {
                desc = "release a snapshot".into();
                if !pinned.is_empty() {
                    pinned.remove(rng.below(pinned.len() as u64) as usize);
                }
            }
            820..=874 => {
                desc = format!("flush {}", NAMES[i]);
                if rng.below(2) == 0 {
                    s.db.flush()
                } else {
                    s.spaces[i].flush()
                }
                .unwrap_or_else(|e| fail("flush", e));
            }
            875..=904 => {
                desc = format!("compact {}", NAMES[i]);
                if rng.below(3) == 0 {
                    s.db.compact()
                } else {
                    s.spaces[i].compact()
                }
                .unwrap_or_else(|e| fail("compact", e));
                n.compactions += 1;
            }
            905..=954 => {
                desc = format!("maintain {}", NAMES[i]);
                s.spaces[i]
                    .maintain()
                    .unwrap_or_else(|e| fail("maintain", e));
            }
            955..=969 => {
                desc = "check every snapshot".into();
                for p in &pinned {
                    check_whole(&s, Some(&p.snap), &p.models, &ctx);
                    n.snapshot_reads += 1;
                }
            }
            970..=979 => {
                // The last keyspace dropped and made anew: empty now, and
                // empty at every snapshot taken before (it did not exist).
                let last = NAMES.len() - 1;
                desc = format!("drop and create {}", NAMES[last]);
                s.db.drop_keyspace(NAMES[last])
                    .unwrap_or_else(|e| fail("drop_keyspace", e));
                s.spaces[last] =
                    s.db.create_keyspace(NAMES[last], ks_opts[last - 1].clone())
                        .unwrap_or_else(|e| fail("create_keyspace", e));
                models[last].clear();
                for p in &mut pinned {
                    p.models[last].clear();
                }
            }
            _ => {
                desc = "reopen".into();
                pinned.clear();
                let Store { db, spaces } = s;
                drop(spaces);
                db.close().unwrap_or_else(|e| fail("close", e));
                s = Store::open(dir, &opts, &ks_opts);
                s.db.verify().unwrap_or_else(|e| fail("verify", e));
                check_whole(&s, None, &models, &ctx);
                n.reopens += 1;
            }
        }
        recent.push(desc);
        if recent.len() > 10 {
            recent.remove(0);
        }
        if op % 64 == 0 {
            for ks in &s.spaces {
                let st = ks.stats();
                n.most_levels = n
                    .most_levels
                    .max(st.levels.iter().filter(|l| l.files > 0).count());
            }
        }
        n.ops += 1;
    }
    let ctx = format!("seed {seed:#x} bg {background} end");
    check_whole(&s, None, &models, &ctx);
    for p in &pinned {
        check_whole(&s, Some(&p.snap), &p.models, &ctx);
    }
    drop(pinned);
    s.db.compact()
        .unwrap_or_else(|e| panic!("{ctx}: compact: {e}"));
    check_whole(&s, None, &models, &format!("{ctx} after compact"));
    let Store { db, spaces } = s;
    drop(spaces);
    db.close().unwrap();
    let s = Store::open(dir, &opts, &ks_opts);
    s.db.verify().unwrap();
    check_whole(&s, None, &models, &format!("{ctx} after reopen"));
    n
}

fn run_seeds(background: bool, first: u64) {
    let (seeds, ops) = if long_mode() {
        (64, 12_000)
    } else {
        (6, 3_000)
    };
    let mut counts = Vec::new();
    for seed in first..first + seeds {
        let dir = scratch_dir();
        counts.push(run(seed, ops, background, dir.path()));
    }
    eprintln!("bg {background}: {counts:?}");
    // The walk reaches several levels, so tables are cut and tombstones cross
    // file and level boundaries under snapshots.
    assert!(counts.iter().any(|c| c.most_levels >= 3), "{counts:?}");
    assert!(
        counts
            .iter()
            .all(|c| c.range_deletes > 100 && c.snapshot_reads > 100),
        "{counts:?}"
    );
}

#[test]
fn model_background_compaction_off() {
    run_seeds(false, 0x5a9_0000);
}

#[test]
fn model_background_compaction_on() {
    run_seeds(true, 0x5a9_1000);
}
