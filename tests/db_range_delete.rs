//! Range deletions (`Db::delete_range`, `WriteBatch::delete_range`): a model
//! test of puts, deletes, range deletes, batches, gets, multi_gets, scans
//! both ways, snapshots, flushes, compactions and reopens against a
//! `BTreeMap`, fixed seeds; and the cases a random walk may miss: bad
//! ranges, tombstone-only files, snapshots under compaction, what
//! compaction reclaims, and the counters.

use std::ops::Bound;
use std::path::Path;

use bloomlsm::workload::SplitMix64;
use bloomlsm::{
    CompressionOptions, Db, Error, FilterOptions, FilterPolicy, Options, PrefixExtractor, Snapshot,
    WriteBatch,
};

mod common;
use common::keys::{key, op_value, random_varlen_key, show, varlen_key};
use common::model::{Model, apply, apply_range, check_scan, check_scan_rev, range_of};
use common::scratch_dir;

/// Distinct keys in the key space: small, so ranges overlap keys and one
/// another.
const KEY_SPACE: u64 = 2000;

fn random_key(rng: &mut SplitMix64) -> Vec<u8> {
    random_varlen_key(rng, 20, KEY_SPACE, &[0])
}

fn random_bound(rng: &mut SplitMix64) -> Bound<Vec<u8>> {
    common::model::random_bound(rng, random_key)
}

/// A range of a few to a few dozen keys of the space (ends drawn apart so
/// most ranges are short, as range deletions of a prefix or a time window
/// are); about one in 30 is empty or inverted.
fn random_range(rng: &mut SplitMix64) -> (Vec<u8>, Vec<u8>) {
    let a = rng.below(KEY_SPACE);
    let b = if rng.below(30) == 0 {
        a.saturating_sub(rng.below(3))
    } else {
        let span = if rng.below(5) == 0 { 120 } else { 12 };
        a + 1 + rng.below(span)
    };
    (varlen_key(a), varlen_key(b))
}

fn options(rng: &mut SplitMix64, background: bool) -> Options {
    Options::default()
        .write_buffer_size([4096, 8192][rng.below(2) as usize])
        .target_file_size(4096)
        .level1_max_bytes(8 << 10)
        .dynamic_level_bytes(false)
        .level_size_multiplier(2 + rng.below(2))
        .l0_compaction_trigger(2 + rng.below(3) as usize)
        .block_size([256, 1024][rng.below(2) as usize])
        .background_compaction(background)
        .filters(match rng.below(3) {
            0 => FilterOptions::none(),
            1 => FilterOptions::uniform(Some(FilterPolicy::bloom(6.0))),
            _ => FilterOptions::default(),
        })
        // Prefix filters may skip a file's entries in `scan_prefix`, never
        // its range tombstones.
        .prefix_extractor(match rng.below(3) {
            0 => None,
            1 => Some(PrefixExtractor::Fixed(2)),
            _ => Some(PrefixExtractor::Fixed(3)),
        })
        // Range filters may skip a file's entries in a bounded scan, never
        // its range tombstones.
        .range_filter_bits_per_key([None, Some(4.0), Some(12.0)][rng.below(3) as usize])
}

/// Every key the model may hold and a few it cannot, by get and multi_get,
/// and the whole range both ways.
fn check_all(db: &Db, model: &Model, ctx: &str) {
    check_scan(db, model, &Bound::Unbounded, &Bound::Unbounded, ctx);
    check_scan_rev(db, model, &Bound::Unbounded, &Bound::Unbounded, ctx);
    for p in ["k0", "k00", "k01", "k10", "k123", "k2", "k3", "k6", "k9"] {
        let got: Vec<(Vec<u8>, Vec<u8>)> = db
            .scan_prefix(p)
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = model
            .iter()
            .filter(|(k, _)| k.starts_with(p.as_bytes()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert!(
            got == want,
            "{ctx}: scan_prefix {p}: {} keys, model {}",
            got.len(),
            want.len()
        );
    }
    let keys: Vec<Vec<u8>> = (0..KEY_SPACE).step_by(3).map(varlen_key).collect();
    let got = db.multi_get(&keys).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    for (k, g) in keys.iter().zip(&got) {
        assert_eq!(
            g.as_deref(),
            model.get(k).map(Vec::as_slice),
            "{ctx}: multi_get {}",
            show(k)
        );
        let one = db.get(k).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        assert_eq!(one, *g, "{ctx}: get {}", show(k));
    }
}

/// A snapshot and the model as of it.
struct Pinned {
    snap: Snapshot,
    model: Model,
}

fn check_pinned(p: &Pinned, rng: &mut SplitMix64, ctx: &str) {
    for _ in 0..4 {
        let k = random_key(rng);
        let got = p.snap.get(&k).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        assert_eq!(
            got.as_deref(),
            p.model.get(&k).map(Vec::as_slice),
            "{ctx}: snapshot {} get {}",
            p.snap.sequence(),
            show(&k)
        );
    }
    let (lo, hi) = (random_bound(rng), random_bound(rng));
    let got: Vec<(Vec<u8>, Vec<u8>)> = p
        .snap
        .scan((
            lo.as_ref().map(Vec::as_slice),
            hi.as_ref().map(Vec::as_slice),
        ))
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect();
    assert!(
        got == range_of(&p.model, &lo, &hi),
        "{ctx}: snapshot {} scan {lo:?}..{hi:?}",
        p.snap.sequence()
    );
}

/// One operation of a batch, for the model: `(key, value, None)` a put or
/// (value `None`) a delete; `(start, None, Some(end))` a range delete.
type Step = (Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>);

/// One seed of the model walk; returns the most levels holding files.
fn run(seed: u64, ops: usize, background: bool, dir: &Path) -> usize {
    let mut rng = SplitMix64::new(seed);
    let opts = options(&mut rng, background);
    let mut db = Db::open(dir, opts.clone()).unwrap();
    let mut model = Model::new();
    let mut pinned: Vec<Pinned> = Vec::new();
    let mut recent: Vec<String> = Vec::new();
    let mut levels = 0;
    for op in 0..ops {
        let ctx = || format!("seed {seed} bg {background} op {op} recent {recent:?}");
        let desc: String;
        match rng.below(1000) {
            0..=379 => {
                let k = random_key(&mut rng);
                let v = op_value(&k, op, rng.below(800) as usize);
                desc = format!("put {}", show(&k));
                db.put(&k, &v).unwrap_or_else(|e| panic!("{}: {e}", ctx()));
                model.insert(k, v);
            }
            380..=439 => {
                let k = random_key(&mut rng);
                desc = format!("delete {}", show(&k));
                db.delete(&k).unwrap_or_else(|e| panic!("{}: {e}", ctx()));
                model.remove(&k);
            }
            440..=489 => {
                let (a, b) = random_range(&mut rng);
                desc = format!("delete_range {}..{}", show(&a), show(&b));
                match db.delete_range(&a, &b) {
                    Ok(()) => apply_range(&mut model, &a, &b),
                    Err(Error::InvalidArgument(_)) if a >= b => {}
                    Err(e) => panic!("{}: {e}", ctx()),
                }
            }
            490..=539 => {
                // A batch mixing puts, deletes and range deletes, applied in
                // order: a put after a range delete over it survives.
                let mut b = WriteBatch::new();
                let mut steps: Vec<Step> = Vec::new();
                for _ in 0..1 + rng.below(6) {
                    match rng.below(4) {
                        0 => {
                            let (s, e) = random_range(&mut rng);
                            if s < e {
                                b.delete_range(&s, &e);
                                steps.push((s, None, Some(e)));
                            }
                        }
                        1 => {
                            let k = random_key(&mut rng);
                            b.delete(&k);
                            steps.push((k, None, None));
                        }
                        _ => {
                            let k = random_key(&mut rng);
                            let v = op_value(&k, op, rng.below(100) as usize);
                            b.put(&k, &v);
                            steps.push((k, Some(v), None));
                        }
                    }
                }
                desc = format!("batch of {}", steps.len());
                db.write(b).unwrap_or_else(|e| panic!("{}: {e}", ctx()));
                for (k, v, end) in steps {
                    match end {
                        Some(end) => apply_range(&mut model, &k, &end),
                        None => apply(&mut model, &k, v.as_deref()),
                    }
                }
            }
            540..=719 => {
                let k = random_key(&mut rng);
                desc = format!("get {}", show(&k));
                let got = db.get(&k).unwrap_or_else(|e| panic!("{}: {e}", ctx()));
                assert_eq!(
                    got.as_deref(),
                    model.get(&k).map(Vec::as_slice),
                    "{}: get {}",
                    ctx(),
                    show(&k)
                );
            }
            720..=759 => {
                let keys: Vec<Vec<u8>> = (0..1 + rng.below(30))
                    .map(|_| random_key(&mut rng))
                    .collect();
                desc = format!("multi_get of {}", keys.len());
                let got = db
                    .multi_get(&keys)
                    .unwrap_or_else(|e| panic!("{}: {e}", ctx()));
                for (k, g) in keys.iter().zip(&got) {
                    assert_eq!(
                        g.as_deref(),
                        model.get(k).map(Vec::as_slice),
                        "{}: multi_get {}",
                        ctx(),
                        show(k)
                    );
                }
            }
            760..=839 => {
                let (lo, hi) = (random_bound(&mut rng), random_bound(&mut rng));
                desc = format!("scan {lo:?}..{hi:?}");
                if rng.below(2) == 0 {
                    check_scan(&db, &model, &lo, &hi, &ctx());
                } else {
                    check_scan_rev(&db, &model, &lo, &hi, &ctx());
                }
            }
            840..=859 => {
                // A seek from a random key, then a few keys forward.
                let k = random_key(&mut rng);
                desc = format!("seek {}", show(&k));
                let mut it = db.scan(..);
                it.seek(&k);
                let got: Vec<Vec<u8>> = it.take(5).map(|r| r.unwrap().0.to_vec()).collect();
                let want: Vec<Vec<u8>> = model
                    .range::<[u8], _>((Bound::Included(&k[..]), Bound::Unbounded))
                    .take(5)
                    .map(|(k, _)| k.clone())
                    .collect();
                assert_eq!(got, want, "{}: seek {}", ctx(), show(&k));
            }
            860..=889 => {
                desc = "snapshot".into();
                if pinned.len() >= 3 {
                    pinned.remove(rng.below(3) as usize);
                }
                pinned.push(Pinned {
                    snap: db.snapshot(),
                    model: model.clone(),
                });
            }
            890..=919 => {
                desc = "check snapshots".into();
                for p in &pinned {
                    check_pinned(p, &mut rng, &ctx());
                }
            }
            920..=954 => {
                desc = "flush".into();
                db.flush().unwrap_or_else(|e| panic!("{}: {e}", ctx()));
            }
            955..=964 => {
                desc = "compact".into();
                db.compact().unwrap_or_else(|e| panic!("{}: {e}", ctx()));
            }
            965..=991 => {
                desc = "maintain".into();
                db.maintain().unwrap_or_else(|e| panic!("{}: {e}", ctx()));
            }
            _ => {
                desc = "reopen".into();
                pinned.clear();
                db.close()
                    .unwrap_or_else(|e| panic!("{}: close: {e}", ctx()));
                db = Db::open(dir, opts.clone()).unwrap_or_else(|e| panic!("{}: open: {e}", ctx()));
                db.verify()
                    .unwrap_or_else(|e| panic!("{}: verify: {e}", ctx()));
                check_all(&db, &model, &ctx());
            }
        }
        recent.push(desc);
        if recent.len() > 12 {
            recent.remove(0);
        }
        if op % 50 == 0 {
            let s = db.stats();
            levels = levels.max(s.levels.iter().filter(|l| l.files > 0).count());
        }
    }
    let ctx = format!("seed {seed} bg {background} end");
    check_all(&db, &model, &ctx);
    for p in &pinned {
        check_pinned(p, &mut rng, &ctx);
    }
    drop(pinned);
    db.compact().unwrap();
    check_all(&db, &model, &format!("{ctx} after compact"));
    db.close().unwrap();
    let db = Db::open(dir, opts).unwrap();
    db.verify().unwrap();
    check_all(&db, &model, &format!("{ctx} after reopen"));
    levels
}

fn run_seeds(background: bool) {
    let mut shapes = Vec::new();
    for i in 0..8 {
        let dir = scratch_dir();
        shapes.push(run(0x7a6e_0000 + i, 3000, background, dir.path()));
    }
    eprintln!("bg {background}: levels with files {shapes:?}");
    // The walk reaches several levels, so tombstones cross file and level
    // boundaries.
    assert!(shapes.iter().any(|&n| n >= 3), "{shapes:?}");
}

#[test]
fn model_background_compaction_off() {
    run_seeds(false);
}

#[test]
fn model_background_compaction_on() {
    run_seeds(true);
}

fn tiny() -> Options {
    common::options::tiny().background_compaction(false)
}

#[test]
fn bad_ranges_are_refused_and_write_nothing() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), tiny()).unwrap();
    db.put("b", "1").unwrap();
    let seq = db.snapshot().sequence();
    let long = vec![b'x'; 70 << 10];
    for (s, e) in [
        (&b"b"[..], &b"b"[..]),
        (b"c", b"a"),
        (b"", b"c"),
        (b"a", b""),
        (b"a", &long[..]),
    ] {
        let err = db.delete_range(s, e).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        let mut b = WriteBatch::new();
        b.put("z", "2");
        b.delete_range(s, e);
        assert!(matches!(db.write(b), Err(Error::InvalidArgument(_))));
    }
    assert_eq!(db.snapshot().sequence(), seq, "nothing was logged");
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get("z").unwrap(), None);
}

/// A range delete hides older versions in every level from readers that
/// see it, and not newer ones; a snapshot from before still sees them, also
/// after compaction, which keeps what the snapshot needs.
#[test]
fn snapshots_see_what_was_there_through_flush_and_compaction() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), tiny()).unwrap();
    for i in 0..400 {
        db.put(key(i), "old").unwrap();
    }
    db.compact().unwrap();
    let before = db.snapshot();
    db.delete_range(key(100), key(300)).unwrap();
    db.put(key(150), "new").unwrap();
    let after = db.snapshot();
    let live = |r: &dyn Fn(&[u8]) -> Option<bloomlsm::Bytes>| {
        (0..400).filter(|&i| r(&key(i)).is_some()).count()
    };
    for stage in ["memtable", "flushed", "compacted"] {
        match stage {
            "flushed" => db.flush().unwrap(),
            "compacted" => db.compact().unwrap(),
            _ => {}
        }
        assert_eq!(live(&|k| db.get(k).unwrap()), 201, "{stage}");
        assert_eq!(live(&|k| before.get(k).unwrap()), 400, "{stage}");
        assert_eq!(live(&|k| after.get(k).unwrap()), 201, "{stage}");
        assert_eq!(db.get(key(150)).unwrap().as_deref(), Some(&b"new"[..]));
        assert_eq!(before.get(key(150)).unwrap().as_deref(), Some(&b"old"[..]));
        assert_eq!(db.scan(..).count(), 201, "{stage}");
        assert_eq!(db.scan(..).rev().count(), 201, "{stage}");
        assert_eq!(before.scan(..).count(), 400, "{stage}");
        let keys: Vec<Vec<u8>> = (0..400).map(key).collect();
        let got = db.multi_get(&keys).unwrap();
        assert_eq!(got.iter().filter(|v| v.is_some()).count(), 201, "{stage}");
    }
}

/// A compaction whose output is cut after a key whose newest version a
/// range delete hides, while a snapshot keeps an older one, writes tables
/// whose ranges do not overlap: the kept older version is the first table's
/// last key, and the tombstone's share in the next table starts above it.
/// The store then goes on taking writes and reads every version right.
#[test]
fn a_snapshot_version_under_a_range_delete_stays_in_one_output_table() {
    let dir = scratch_dir();
    let opts = Options::default()
        .target_file_size(4096) // one 5000-byte value fills an output table
        .compression(CompressionOptions::none())
        .background_compaction(false);
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let big = vec![b'x'; 5000];
    let newer = vec![b'y'; 5000];
    for k in ["k1", "k2", "k3"] {
        db.put(k, &big).unwrap();
    }
    db.compact().unwrap();
    let snap = db.snapshot(); // keeps the first k2
    db.put("k2", &newer).unwrap(); // a newer k2, in an L0 table of its own
    db.flush().unwrap();
    db.delete_range("k2", "k3").unwrap(); // hides the newer k2, not the snapshot's
    db.compact().unwrap();
    db.put("k4", "v").unwrap();
    let mut last: Option<Vec<u8>> = None;
    for f in db.file_stats().iter().filter(|f| f.level > 0) {
        if let Some(prev) = &last {
            assert!(prev < &f.smallest, "L{}: tables overlap", f.level);
        }
        last = Some(f.largest.clone());
    }
    assert_eq!(db.get("k2").unwrap(), None);
    assert_eq!(snap.get("k2").unwrap().as_deref(), Some(&big[..]));
    assert_eq!(snap.scan(..).count(), 3);
    assert_eq!(db.scan(..).count(), 3, "k1, k3, k4");
    drop(snap);
    db.compact().unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    db.verify().unwrap();
    assert_eq!(db.get("k2").unwrap(), None);
    assert_eq!(db.get("k4").unwrap().as_deref(), Some(&b"v"[..]));
}

/// A memtable holding only a range delete flushes to a file of tombstones
/// alone; its range covers the tombstone, reads through it hide the older
/// keys below, and it survives reopen.
#[test]
fn tombstone_only_file() {
    let dir = scratch_dir();
    let opts = tiny();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    for i in 0..200 {
        db.put(key(i), "v").unwrap();
    }
    db.compact().unwrap();
    db.delete_range(key(50), key(150)).unwrap();
    db.flush().unwrap();
    let l0: Vec<_> = db
        .file_stats()
        .into_iter()
        .filter(|f| f.level == 0)
        .collect();
    assert_eq!(l0.len(), 1);
    assert_eq!(l0[0].entries, 0);
    assert_eq!(l0[0].smallest, key(50));
    assert_eq!(l0[0].largest, key(150));
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    db.verify().unwrap();
    assert_eq!(db.scan(..).count(), 100);
    assert_eq!(db.get(key(50)).unwrap(), None);
    assert_eq!(db.get(key(149)).unwrap(), None);
    assert!(db.get(key(150)).unwrap().is_some());
}

/// With no snapshot, a full compaction drops the keys a range delete hides
/// and, at the bottom with nothing beneath, the tombstone itself.
#[test]
fn compaction_reclaims_what_a_range_delete_hides() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), tiny()).unwrap();
    for i in 0..1000 {
        db.put(key(i), [7u8; 100]).unwrap();
    }
    db.compact().unwrap();
    let entries = |db: &Db| db.file_stats().iter().map(|f| f.entries).sum::<u64>();
    assert_eq!(entries(&db), 1000);
    db.delete_range(key(0), key(900)).unwrap();
    db.compact().unwrap();
    assert_eq!(entries(&db), 100);
    assert_eq!(db.scan(..).count(), 100);
    db.delete_range(key(0), key(1000)).unwrap();
    db.compact().unwrap();
    assert!(db.file_stats().is_empty(), "{:?}", db.file_stats());
    assert_eq!(db.scan(..).count(), 0);
}

/// A range delete over most of the store, flushed alone, holds no data of
/// its own, yet what it deletes below makes its level due: the compactions
/// that run by themselves (no `compact`) carry it down and leave the deleted
/// data off the disk.
#[test]
fn a_range_delete_makes_its_level_due() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), common::options::small()).unwrap();
    // In a scattered order, maintained as it goes, so that the keys spread
    // over three levels.
    for n in 0..6000u64 {
        db.put(key(n * 7919 % 6000), [7u8; 40]).unwrap();
        if n % 250 == 249 {
            db.maintain().unwrap();
        }
    }
    db.maintain().unwrap();
    let deepest = |db: &Db| db.file_stats().iter().map(|f| f.level).max();
    assert!(deepest(&db) >= Some(2), "{}", db.stats());
    let bytes = |db: &Db| db.file_stats().iter().map(|f| f.file_bytes).sum::<u64>();
    let before = bytes(&db);
    let compactions = db.stats().compactions;
    db.delete_range(key(100), key(5900)).unwrap();
    db.maintain().unwrap();
    assert!(db.stats().compactions > compactions, "{}", db.stats());
    let entries: u64 = db.file_stats().iter().map(|f| f.entries).sum();
    assert_eq!(entries, 200, "{:?}", db.file_stats());
    assert!(
        bytes(&db) < before / 10,
        "{} of {before} bytes left",
        bytes(&db)
    );
    assert_eq!(db.scan(..).count(), 200);
    // Settled: nothing more is due, and another pass compacts nothing.
    let compactions = db.stats().compactions;
    db.maintain().unwrap();
    assert_eq!(db.stats().compactions, compactions);
}

/// Gets count the range-tombstone lists they search, a file's whatever its
/// filter says, and the keys a range tombstone deleted.
#[test]
fn counters_count_tombstone_checks() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), tiny()).unwrap();
    for i in 0..100 {
        db.put(key(i), "v").unwrap();
    }
    db.compact().unwrap();
    db.delete_range(key(10), key(20)).unwrap();
    db.reset_stats();
    // In the memtable: one list searched, the key deleted.
    assert_eq!(db.get(key(15)).unwrap(), None);
    let s = db.stats();
    assert_eq!(
        (
            s.range_tombstone_checks,
            s.range_tombstone_files,
            s.gets_range_deleted
        ),
        (1, 0, 1)
    );
    db.flush().unwrap();
    db.reset_stats();
    // In an L0 file: its list searched before the deeper file's value.
    assert_eq!(db.get(key(15)).unwrap(), None);
    // Outside the file's range: its tombstones are not searched.
    assert!(db.get(key(50)).unwrap().is_some());
    let s = db.stats();
    assert_eq!(
        (
            s.range_tombstone_checks,
            s.range_tombstone_files,
            s.gets_range_deleted
        ),
        (1, 1, 1)
    );
}
