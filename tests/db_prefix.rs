//! Prefix filters in a store: `scan_prefix` over a store spread across the
//! memtable, L0 and deeper levels equals the model for present, absent,
//! longer and out-of-domain prefixes, forward, backward and after a seek;
//! the prefix filters skip files (counted); a store reopened with another
//! extractor (its stored design overridden) reads every old file without
//! skipping and never answers wrong, and `rebuild_filters` brings the files
//! to the new extractor; a damaged prefix filter block behind a valid
//! checksum never hides a key that `verify` does not report.

mod common;

use bloomlsm::db::filename::FileKind;
use bloomlsm::sst::{Table, TableOpenOptions};
use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, Error, IoCounters, Options, PrefixExtractor};
use common::damage::{Seen, resealed_filter_damage};
use common::files::files_of;
use common::model::Model;

/// Prefixes `p000`..`p119`; the even ones hold keys, the odd ones none.
const PREFIXES: u64 = 120;

fn prefix(i: u64) -> Vec<u8> {
    format!("p{i:03}").into_bytes()
}

fn options(extractor: Option<PrefixExtractor>) -> Options {
    common::options::small().prefix_extractor(extractor)
}

/// Writes keys `p<even>:<n>` in a seeded random order with overwrites and
/// deletes, plus keys outside a 4-byte extractor's domain (`q`, `p1`),
/// running due compactions as it goes and leaving the last writes in L0 and
/// the memtable.
fn load(db: &Db, model: &mut Model) {
    let mut rng = SplitMix64::new(0x5eed_0042);
    for round in 0..6u64 {
        for _ in 0..900 {
            let p = 2 * rng.below(PREFIXES / 2);
            let k = [prefix(p), format!(":{:04}", rng.below(60)).into_bytes()].concat();
            if rng.below(10) == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("{}-{round}", String::from_utf8_lossy(&k)).into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        for short in [&b"q"[..], b"p1", b"p00"] {
            db.put(short, b"short").unwrap();
            model.insert(short.to_vec(), b"short".to_vec());
        }
        if round < 5 {
            db.maintain().unwrap();
        } else {
            db.flush().unwrap();
        }
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

fn with_prefix(model: &Model, p: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    model
        .iter()
        .filter(|(k, _)| k.starts_with(p))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn collect(
    it: impl Iterator<Item = bloomlsm::Result<(bloomlsm::Bytes, bloomlsm::Bytes)>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<bloomlsm::Result<_>>()
        .unwrap()
}

/// Every prefix to check: each `pNNN`, longer ones, shorter ones (outside
/// a 4-byte domain), and the empty prefix.
fn probes() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = (0..PREFIXES + 2).map(prefix).collect();
    for i in [0, 4, 7, 50] {
        v.push([prefix(i), b":00".to_vec()].concat());
        v.push([prefix(i), b":0059".to_vec()].concat());
    }
    for p in [&b""[..], b"p", b"p0", b"p1", b"q", b"p00", b"p1:"] {
        v.push(p.to_vec());
    }
    v
}

/// `scan_prefix` of every probe, forward, backward and after a seek inside
/// the prefix, against the model.
fn check_scans(db: &Db, model: &Model, ctx: &str) {
    for p in probes() {
        let want = with_prefix(model, &p);
        let show = String::from_utf8_lossy(&p).into_owned();
        assert_eq!(
            collect(db.scan_prefix(&p)),
            want,
            "{ctx}: scan_prefix({show})"
        );
        let mut back = collect(db.scan_prefix(&p).rev());
        back.reverse();
        assert_eq!(back, want, "{ctx}: scan_prefix({show}).rev()");
        let mid = [p.clone(), b":0030".to_vec()].concat();
        let mut it = db.scan_prefix(&p);
        it.seek(&mid);
        let after: Vec<_> = want
            .iter()
            .filter(|(k, _)| k[..] >= mid[..])
            .cloned()
            .collect();
        assert_eq!(collect(it), after, "{ctx}: scan_prefix({show}) seek");
    }
}

fn totals(db: &Db) -> IoCounters {
    db.stats().total
}

#[test]
fn scan_prefix_skips_files_and_equals_the_model() {
    let dir = common::scratch_dir();
    let mut model = Model::new();
    let db = Db::open(dir.path(), options(Some(PrefixExtractor::Fixed(4)))).unwrap();
    load(&db, &mut model);
    db.reset_stats();
    check_scans(&db, &model, "fixed:4");
    let t = totals(&db);
    assert!(t.prefix_checks > 0 && t.prefix_negatives > 0, "{t:?}");
    assert!(t.prefix_negatives <= t.prefix_checks);
    assert_eq!(t.prefix_unusable_reads, 0);
    // A 1% filter over a few hundred probes of absent prefixes: far fewer
    // false positives than negatives.
    assert!(t.prefix_false_positives * 10 < t.prefix_negatives, "{t:?}");
    let s = db.stats();
    for l in &s.levels {
        if l.files > 0 {
            assert_eq!(l.prefix_filtered_files, l.files, "L{}", l.level);
            assert!(l.prefix_predicted_fpr > 0.0 && l.prefix_predicted_fpr < 0.05);
        }
    }

    // Scans of absent prefixes read no data block: every file is skipped
    // by its key range or its prefix filter (the memtable holds none).
    db.reset_stats();
    for i in (1..PREFIXES).step_by(2) {
        assert!(collect(db.scan_prefix(prefix(i))).is_empty());
    }
    let t = totals(&db);
    assert!(t.prefix_negatives > 0);
    assert_eq!(
        t.prefix_checks,
        t.prefix_negatives + t.prefix_false_positives
    );
    // Each false positive costs the data block its seek reads (and at most
    // the next one, which the merge reads ahead).
    assert!(t.prefix_false_positives <= t.prefix_scan_blocks);
    assert!(t.prefix_scan_blocks <= 2 * t.prefix_false_positives);

    // A plain scan never consults prefix filters, nor does a scan of a
    // prefix outside the extractor's domain.
    db.reset_stats();
    let _ = collect(db.scan(prefix(3)..prefix(4)));
    let _ = collect(db.scan_prefix("p00"));
    assert_eq!(totals(&db).prefix_checks, 0);
    // A longer prefix skips by its first four bytes.
    db.reset_stats();
    assert!(collect(db.scan_prefix("p003:0001")).is_empty());
    assert!(totals(&db).prefix_negatives > 0);
    drop(db);

    // Reopened with the same design: the same answers.
    let db = Db::open(dir.path(), options(Some(PrefixExtractor::Fixed(4)))).unwrap();
    check_scans(&db, &model, "reopened");
    db.verify().unwrap();
}

#[test]
fn another_extractor_never_answers_wrong() {
    let dir = common::scratch_dir();
    let mut model = Model::new();
    let db = Db::open(dir.path(), options(Some(PrefixExtractor::Fixed(4)))).unwrap();
    load(&db, &mut model);
    drop(db);

    // The stored design wins by default.
    let db = Db::open(dir.path(), options(Some(PrefixExtractor::Fixed(2)))).unwrap();
    db.reset_stats();
    check_scans(&db, &model, "stored design");
    assert!(totals(&db).prefix_negatives > 0);
    assert_eq!(totals(&db).prefix_unusable_reads, 0);
    drop(db);

    // `skips`: the extractor's prefixes are as fine as the scanned ones, so
    // files inside a scan's key range lack them (fixed:2 gives `p0` and
    // `p1`, which nearly every such file holds).
    for (extractor, name, skips) in [
        (Some(PrefixExtractor::Fixed(2)), "fixed:2", false),
        (
            Some(PrefixExtractor::UpToDelimiter(b':')),
            "delimiter",
            true,
        ),
        (Some(PrefixExtractor::Fixed(5)), "fixed:5", true),
        (None, "none", false),
    ] {
        let opts = options(extractor).use_stored_design(false);
        let db = Db::open(dir.path(), opts).unwrap();
        db.reset_stats();
        check_scans(&db, &model, name);
        let t = totals(&db);
        if extractor.is_some() {
            // Old files' filters were built with fixed:4 (or, after a
            // previous round's rebuild, another extractor): not used.
            assert!(t.prefix_unusable_reads > 0, "{name}: {t:?}");
        }
        // A full compaction leaves no L0 file, and rebuilding brings every
        // file below L0 to this extractor.
        db.compact().unwrap();
        db.rebuild_filters().unwrap();
        db.reset_stats();
        check_scans(&db, &model, &format!("{name}, rebuilt"));
        let t = totals(&db);
        assert_eq!(t.prefix_unusable_reads, 0, "{name}: {t:?}");
        if skips {
            assert!(t.prefix_negatives > 0, "{name}: {t:?}");
        }
        if extractor.is_none() {
            assert_eq!(t.prefix_checks, 0, "{name}: {t:?}");
        }
        db.verify().unwrap();
        drop(db);
    }
}

#[test]
fn a_zero_length_fixed_prefix_is_refused() {
    let dir = common::scratch_dir();
    let e = Db::open(dir.path(), options(Some(PrefixExtractor::Fixed(0)))).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
}

/// Resealed damage to one table's prefix filter block: the store opens, a
/// block that no longer decodes is read without skipping (counted), and a
/// scan that differs from the model is one `verify` reports.
#[test]
fn a_damaged_prefix_filter_never_hides_an_unreported_key() {
    let dir = common::scratch_dir();
    let mut model = Model::new();
    let db = Db::open(dir.path(), options(Some(PrefixExtractor::Fixed(4)))).unwrap();
    load(&db, &mut model);
    db.compact().unwrap();
    drop(db);
    let tables = files_of(dir.path(), FileKind::Table);
    let path = tables[tables.len() / 2].clone();
    let t = Table::open(&path, TableOpenOptions::default()).unwrap();
    let h = t.prefix_filter_handle().expect("a prefix filter block");
    let ck = t.checksum_type();
    drop(t);
    let mut rng = SplitMix64::new(7);
    let damage = |trial: usize, payload: &mut [u8]| {
        let len = payload.len();
        match trial % 3 {
            // The extractor's length or text.
            0 => payload[rng.below(4) as usize] ^= 1 << rng.below(8),
            // The filter's bits.
            1 => {
                for _ in 0..=rng.below(8) {
                    payload[rng.below(len as u64) as usize] = rng.next_u64() as u8;
                }
            }
            // The filter's trailer.
            _ => payload[len - 1 - rng.below(20) as usize] ^= 1 << rng.below(8),
        }
    };
    resealed_filter_damage(&path, h, ck, 60, damage, |_| {
        let db = Db::open(dir.path(), options(Some(PrefixExtractor::Fixed(4)))).unwrap();
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        let decodes = t.prefix_filter().is_some_and(|r| r.is_ok());
        db.reset_stats();
        let mut wrong = None;
        for p in probes() {
            let got = collect(db.scan_prefix(&p));
            if got != with_prefix(&model, &p) {
                wrong = Some(String::from_utf8_lossy(&p).into_owned());
            }
        }
        Seen {
            decodes,
            unusable_reads: totals(&db).prefix_unusable_reads,
            wrong,
            reported: db.verify().is_err(),
        }
    });
}
