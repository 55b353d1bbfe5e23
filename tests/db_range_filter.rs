//! Range filters in a store: scans bounded at both ends over a store spread
//! across the memtable, L0 and deeper levels equal the model for random
//! short ranges, empty and not, starting anywhere or just past a key, each
//! way of including their ends, forward and backward; the range filters
//! skip files (counted per level, false positives under the bound); scans
//! open at an end never consult them; a range deletion in a file the
//! filters skip still hides the keys below it; a store reopened with range
//! filters off or at other bits never answers wrong, and `rebuild_filters`
//! brings its files to the new design; a damaged range filter block behind
//! a valid checksum never hides a key that `verify` does not report; bits
//! out of range are refused.

mod common;

use std::ops::Bound;

use bloomlsm::db::filename::FileKind;
use bloomlsm::sst::{Table, TableOpenOptions};
use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, Error, IoCounters, Options};
use common::damage::{Seen, resealed_filter_damage};
use common::files::files_of;
use common::model::{Model, apply_range, check_scan, check_scan_rev, range_of};

/// Keys are the 8-byte big-endian `slot · STRIDE` (their own points), some
/// also with a suffix byte (the same point): `SLOTS` slots, about half of
/// them used.
const SLOTS: u64 = 3000;
const STRIDE: u64 = 1 << 16;
/// The store's range filter bits: an empty range of `L` points passes a
/// file with probability at most `L / 2^10`.
const BITS: f64 = 12.0;

fn key(slot: u64, suffix: bool) -> Vec<u8> {
    let mut k = (slot * STRIDE).to_be_bytes().to_vec();
    if suffix {
        k.push(b's');
    }
    k
}

fn point_key(x: u64) -> Vec<u8> {
    x.to_be_bytes().to_vec()
}

fn options(bits: Option<f64>) -> Options {
    common::options::small().range_filter_bits_per_key(bits)
}

/// Writes keys of the even slots in a seeded random order with overwrites,
/// deletes and a few range deletions, running due compactions as it goes
/// and leaving the last writes in L0 and the memtable.
fn load(db: &Db, model: &mut Model) {
    let mut rng = SplitMix64::new(0x5eed_0043);
    for round in 0..6u64 {
        for _ in 0..800 {
            let slot = 2 * rng.below(SLOTS / 2);
            let k = key(slot, slot.is_multiple_of(7) && rng.below(2) == 0);
            if rng.below(10) == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("{slot}-{round}").into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        if round % 2 == 1 {
            let a = rng.below(SLOTS - 20);
            let (s, e) = (key(a, false), key(a + 1 + rng.below(12), false));
            db.delete_range(&s, &e).unwrap();
            apply_range(model, &s, &e);
        }
        if round < 5 {
            db.maintain().unwrap();
        } else {
            db.flush().unwrap();
        }
    }
    for slot in [2, 1000, 2998] {
        db.put(key(slot, false), b"mem").unwrap();
        model.insert(key(slot, false), b"mem".to_vec());
    }
    let s = db.stats();
    let deep = s.levels.iter().skip(1).filter(|l| l.files > 0).count();
    assert!(
        deep >= 2,
        "levels: {:?}",
        s.levels.iter().map(|l| l.files).collect::<Vec<_>>()
    );
    assert!(s.levels[0].files > 0);
}

/// The points `lo..=hi` as a scan's bounds, the ends included or not as
/// `how` says (0..4).
fn bounds(lo: u64, hi: u64, how: u64) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let (a, b) = (point_key(lo), point_key(hi));
    match how {
        0 => (Bound::Included(a), Bound::Included(b)),
        1 => (Bound::Included(a), Bound::Excluded(b)),
        2 => (Bound::Excluded(a), Bound::Included(b)),
        _ => (Bound::Excluded(a), Bound::Excluded(b)),
    }
}

/// A short range of points: starting anywhere, just past a slot (where a
/// scan resuming past data starts), or around a slot (most hold a key).
fn random_range(rng: &mut SplitMix64) -> (u64, u64) {
    let len = [1u64, 2, 16, 256, 4096, 70_000][rng.below(6) as usize];
    let lo = match rng.below(3) {
        0 => rng.below(SLOTS * STRIDE),
        1 => rng.below(SLOTS) * STRIDE + 1,
        _ => (rng.below(SLOTS) * STRIDE).saturating_sub(rng.below(len)),
    };
    (lo, lo + len - 1)
}

/// `n` random short ranges, each way of bounding them, forward and
/// backward, against the model.
fn check_ranges(db: &Db, model: &Model, n: usize, seed: u64, ctx: &str) {
    let mut rng = SplitMix64::new(seed);
    for i in 0..n {
        let (lo, hi) = random_range(&mut rng);
        let (s, e) = bounds(lo, hi, rng.below(4));
        check_scan(db, model, &s, &e, &format!("{ctx} #{i}"));
        if i % 4 == 0 {
            check_scan_rev(db, model, &s, &e, &format!("{ctx} #{i}"));
        }
    }
}

fn totals(db: &Db) -> IoCounters {
    db.stats().total
}

#[test]
fn bounded_scans_skip_files_and_equal_the_model() {
    let dir = common::scratch_dir();
    let mut model = Model::new();
    let db = Db::open(dir.path(), options(Some(BITS))).unwrap();
    load(&db, &mut model);
    db.reset_stats();
    check_ranges(&db, &model, 1500, 1, "random");
    let t = totals(&db);
    assert!(t.range_checks > 0 && t.range_negatives > 0, "{t:?}");
    assert_eq!(t.range_unusable_reads, 0);
    let s = db.stats();
    for l in &s.levels {
        if l.files > 0 {
            assert_eq!(l.range_filtered_files, l.files, "L{}", l.level);
            // 2^-(BITS-2), within rounding of the cell count.
            let want = (2.0 - BITS).exp2();
            assert!(
                (l.range_fpr_per_point - want).abs() < want * 0.01,
                "L{}: {}",
                l.level,
                l.range_fpr_per_point
            );
        }
    }

    // Ranges of 1 to 16 points no write ever touched, inside an odd slot's
    // gap (uncorrelated) or just past an even slot's key (correlated): no
    // data block read but on a false positive, and few of those (the
    // bound is 16/1024 per file).
    db.reset_stats();
    let mut rng = SplitMix64::new(2);
    for _ in 0..600 {
        let len = 1 + rng.below(16);
        let slot = 2 * rng.below(SLOTS / 2);
        let lo = if rng.below(2) == 0 {
            (slot + 1) * STRIDE + rng.below(STRIDE - 16)
        } else {
            slot * STRIDE + 1
        };
        let (s, e) = bounds(lo, lo + len - 1, rng.below(4));
        assert!(range_of(&model, &s, &e).is_empty());
        check_scan(&db, &model, &s, &e, "empty");
    }
    let t = totals(&db);
    assert!(t.range_negatives > 0, "{t:?}");
    assert_eq!(t.range_checks, t.range_negatives + t.range_false_positives);
    assert!(t.range_false_positives * 10 < t.range_negatives, "{t:?}");
    // Each false positive costs the data block its seek reads (and at most
    // the next one, which the merge reads ahead).
    assert!(t.range_false_positives <= t.range_scan_blocks);
    assert!(t.range_scan_blocks <= 2 * t.range_false_positives);
    // Every file has a range filter, so every block a scan read is one a
    // filter let through; no write ever touched these ranges, so none of
    // those blocks held an entry of the scan.
    assert_eq!(t.scan_blocks, t.range_scan_blocks, "{t:?}");
    assert_eq!(t.scan_useful_blocks, 0, "{t:?}");
    assert!(t.scan_block_reads <= t.scan_blocks, "{t:?}");

    // A scan open at either end consults no range filter, and its blocks
    // are counted all the same, each one that held an entry of the scan
    // as useful.
    db.reset_stats();
    let _ = common::model::scan_all(&db);
    let whole = totals(&db);
    // Every entry of every block lies inside a scan of everything.
    assert!(whole.scan_blocks > 0, "{whole:?}");
    assert_eq!(whole.scan_useful_blocks, whole.scan_blocks, "{whole:?}");
    let _ = db.scan(point_key(STRIDE)..).count();
    let _ = db.scan(..point_key(2 * STRIDE)).count();
    let t = totals(&db);
    assert_eq!(t.range_checks + t.range_unusable_reads, 0, "{t:?}");
    assert_eq!(t.range_scan_blocks, 0, "{t:?}");
    assert!(t.scan_blocks > whole.scan_blocks, "{t:?}");
    // A prefix scan without a prefix extractor is a bounded scan.
    for slot in (1..SLOTS).step_by(2 * 97) {
        assert_eq!(db.scan_prefix(key(slot, false)).count(), 0);
    }
    assert!(totals(&db).range_negatives > 0);
    drop(db);

    // Reopened with the same design: the same answers.
    let db = Db::open(dir.path(), options(Some(BITS))).unwrap();
    check_ranges(&db, &model, 300, 3, "reopened");
    db.verify().unwrap();
}

#[test]
fn a_range_deletion_in_a_skipped_file_still_hides_keys_below_it() {
    let dir = common::scratch_dir();
    // 2 points at 16 bits: 2^15 cells, so ranges of up to 64 points pass
    // the file of the deletion with probability at most 1/256.
    let db = Db::open(dir.path(), options(Some(16.0))).unwrap();
    let mut model = Model::new();
    // Slots 100..200 in the deepest files.
    for slot in 100..200 {
        db.put(key(slot, false), b"old").unwrap();
        model.insert(key(slot, false), b"old".to_vec());
    }
    db.compact().unwrap();
    // A file of far keys around a range deletion of slots 120..140: its
    // range filter holds none of that range's points, its key range covers
    // it.
    db.put(key(10, false), b"far").unwrap();
    db.put(key(2000, false), b"far").unwrap();
    model.insert(key(10, false), b"far".to_vec());
    model.insert(key(2000, false), b"far".to_vec());
    db.delete_range(key(120, false), key(140, false)).unwrap();
    apply_range(&mut model, &key(120, false), &key(140, false));
    db.flush().unwrap();
    assert_eq!(db.stats().levels[0].files, 1);
    db.reset_stats();
    let mut rng = SplitMix64::new(10);
    for slot in 115..145 {
        let x = slot * STRIDE;
        let (lo, hi) = (x - rng.below(32), x + rng.below(32));
        let (s, e) = bounds(lo, hi, rng.below(4));
        check_scan(&db, &model, &s, &e, "over the deletion");
        check_scan_rev(&db, &model, &s, &e, "over the deletion");
    }
    let l0 = db.stats().levels[0].io;
    assert!(l0.range_negatives > 20, "{l0:?}");
}

#[test]
fn other_range_bits_or_none_never_answer_wrong() {
    let dir = common::scratch_dir();
    let mut model = Model::new();
    let db = Db::open(dir.path(), options(Some(BITS))).unwrap();
    load(&db, &mut model);
    drop(db);

    // The stored design wins by default.
    let db = Db::open(dir.path(), options(None)).unwrap();
    db.reset_stats();
    check_ranges(&db, &model, 300, 4, "stored design");
    assert!(totals(&db).range_negatives > 0);
    drop(db);

    for bits in [None, Some(6.0), Some(20.0), None] {
        let db = Db::open(dir.path(), options(bits).use_stored_design(false)).unwrap();
        db.reset_stats();
        // The files' filters, whatever bits they were built at, answer
        // rightly: they are used.
        check_ranges(&db, &model, 300, 5, &format!("{bits:?}"));
        // A full compaction leaves no L0 file, and rebuilding brings every
        // file below L0 to these bits, or to none.
        db.compact().unwrap();
        db.rebuild_filters().unwrap();
        db.reset_stats();
        check_ranges(&db, &model, 300, 6, &format!("{bits:?}, rebuilt"));
        let t = totals(&db);
        assert_eq!(t.range_unusable_reads, 0, "{bits:?}: {t:?}");
        let s = db.stats();
        match bits {
            None => {
                assert_eq!(t.range_checks, 0, "{bits:?}: {t:?}");
                assert!(s.levels.iter().all(|l| l.range_filtered_files == 0));
            }
            Some(b) => {
                assert!(t.range_negatives > 0, "{bits:?}: {t:?}");
                let want = (2.0 - b).exp2();
                for l in s.levels.iter().filter(|l| l.files > 0) {
                    assert_eq!(l.range_filtered_files, l.files);
                    assert!((l.range_fpr_per_point - want).abs() < want * 0.01);
                }
            }
        }
        // Nothing left to rebuild.
        assert_eq!(db.rebuild_filters().unwrap(), 0);
        db.verify().unwrap();
        drop(db);
    }
}

#[test]
fn range_bits_out_of_range_are_refused() {
    for bits in [1.9, 64.5, f64::NAN, -3.0] {
        let dir = common::scratch_dir();
        let e = Db::open(dir.path(), options(Some(bits))).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{bits}: {e:?}");
    }
    let dir = common::scratch_dir();
    for bits in [2.0, 64.0] {
        Db::open(dir.path(), options(Some(bits)).use_stored_design(false)).unwrap();
    }
}

/// Resealed damage to one table's range filter block: the store opens, a
/// block that no longer decodes is read without skipping (counted), and a
/// scan that differs from the model is one `verify` reports.
#[test]
fn a_damaged_range_filter_never_hides_an_unreported_key() {
    let dir = common::scratch_dir();
    let mut model = Model::new();
    let db = Db::open(dir.path(), options(Some(BITS))).unwrap();
    load(&db, &mut model);
    db.compact().unwrap();
    drop(db);
    let tables = files_of(dir.path(), FileKind::Table);
    let path = tables[tables.len() / 2].clone();
    let t = Table::open(&path, TableOpenOptions::default()).unwrap();
    let h = t.range_filter_handle().expect("a range filter block");
    let ck = t.checksum_type();
    drop(t);
    let mut rng = SplitMix64::new(8);
    let damage = |trial: usize, payload: &mut [u8]| {
        let len = payload.len();
        match trial % 3 {
            // The header: version, counts, coefficients.
            0 => payload[rng.below(49) as usize] ^= 1 << rng.below(8),
            // The hashes' bits.
            1 => {
                for _ in 0..=rng.below(8) {
                    payload[49 + rng.below(len as u64 - 49) as usize] = rng.next_u64() as u8;
                }
            }
            // A whole word of the sequence set.
            _ => {
                let at = 49 + 8 * rng.below((len as u64 - 49) / 8) as usize;
                payload[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
            }
        }
    };
    resealed_filter_damage(&path, h, ck, 45, damage, |_| {
        let db = Db::open(dir.path(), options(Some(BITS))).unwrap();
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        let decodes = t.range_filter().is_some_and(|r| r.is_ok());
        db.reset_stats();
        let mut rng2 = SplitMix64::new(9);
        let mut wrong = None;
        for _ in 0..400 {
            let (lo, hi) = random_range(&mut rng2);
            let (s, e) = bounds(lo, hi, 0);
            let got: Vec<(Vec<u8>, Vec<u8>)> = db
                .scan((common::model::as_slice(&s), common::model::as_slice(&e)))
                .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
                .collect();
            if got != range_of(&model, &s, &e) {
                wrong = Some(format!("{:?}", (lo, hi)));
            }
        }
        Seen {
            decodes,
            unusable_reads: totals(&db).range_unusable_reads,
            wrong,
            reported: db.verify().is_err(),
        }
    });
}
