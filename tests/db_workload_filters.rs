//! The workload-aware filter allocation (`FilterOptions::workload_aware`):
//! after a skewed read workload, the files a compaction writes over the hot
//! key range carry more bits per key than the cold ones, and the store
//! spends the stated average over its keys.

use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, FilterKind, FilterOptions, Options};

mod common;
use common::keys::key;
use common::scratch_dir;

/// Present keys `key(2i)`, absent keys `key(2i + 1)`, `i < KEYS`.
const KEYS: u64 = 100_000;
/// Lookups go for `i < HOT` (the lowest 10% of the key range) nine times
/// in ten.
const HOT: u64 = 10_000;

fn options() -> Options {
    common::options::leveldb_l0(common::options::manual())
        .write_buffer_size(256 << 10)
        .target_file_size(512 << 10)
        .level1_max_bytes(2 << 20)
        .level_size_multiplier(4)
        .dynamic_level_bytes(false)
        .block_cache_capacity(0)
        .compression(bloomlsm::CompressionOptions::none())
        .filters(FilterOptions::workload_aware(FilterKind::Blocked512, 10.0))
}

/// Writes `n` present keys in a scattered order (a multiplicative
/// permutation of `0..KEYS`), running due work every 10,000.
fn write(db: &Db, from: u64, n: u64) {
    for j in from..from + n {
        let i = j.wrapping_mul(7_919) % KEYS;
        db.put(key(2 * i), [7u8; 64]).unwrap();
        if j % 10_000 == 9_999 {
            db.maintain().unwrap();
        }
    }
    db.maintain().unwrap();
}

/// A store of the `KEYS` present keys, fully compacted, and its directory.
fn compacted() -> (tempfile::TempDir, Db) {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    write(&db, 0, KEYS);
    db.compact().unwrap();
    (dir, db)
}

/// The deepest level holding files.
fn last_level(db: &Db) -> usize {
    db.stats().levels.iter().rposition(|l| l.files > 0).unwrap()
}

/// `n` lookups of absent keys, nine in ten below `HOT`.
fn read_skewed(db: &Db, rng: &mut SplitMix64, n: u64) {
    for _ in 0..n {
        let i = if rng.below(10) < 9 {
            rng.below(HOT)
        } else {
            HOT + rng.below(KEYS - HOT)
        };
        assert!(db.get(key(2 * i + 1)).unwrap().is_none());
    }
}

/// The store's filter bits per key, from its stats: filter bytes over every
/// entry (a file the allocation leaves without a filter counts its keys).
fn bits_per_key(db: &Db) -> f64 {
    let s = db.stats();
    let entries: u64 = s.levels.iter().map(|l| l.entries).sum();
    s.filter_bytes as f64 * 8.0 / entries as f64
}

/// Mean bits per key, by entries, of the files of `level` that `inside`
/// takes, and how many they are.
fn mean_bits(db: &Db, level: usize, inside: impl Fn(&bloomlsm::FileStats) -> bool) -> (f64, usize) {
    let (mut bits, mut entries, mut files) = (0.0, 0u64, 0);
    for f in db
        .file_stats()
        .iter()
        .filter(|f| f.level == level && inside(f))
    {
        bits += f.bits_per_key * f.entries as f64;
        entries += f.entries;
        files += 1;
    }
    (bits / entries.max(1) as f64, files)
}

/// Mean bits per key, by entries, of the files of `level` wholly below the
/// hot range's end and of those wholly above it.
fn hot_and_cold(db: &Db, level: usize) -> (f64, f64, usize, usize) {
    let edge = key(2 * HOT);
    let (hot, nh) = mean_bits(db, level, |f| f.largest < edge);
    let (cold, nc) = mean_bits(db, level, |f| f.smallest >= edge);
    (hot, cold, nh, nc)
}

/// The store holds its stated average to within 1% whether a full
/// compaction rewrote it or flushes and compactions go on: after each of
/// them the new files get what the files kept leave of the budget, up to
/// the allocation's 1/16-bit grid, blocked512's rounding of each filter up
/// to whole 512-bit lines (half a line per file, 0.04 bits per key for the
/// files of about 6,000 keys written here) and the versions a compaction
/// drops (it plans for every entry of its inputs).
const TOLERANCE: f64 = 0.01;

#[test]
fn hot_ranges_get_more_bits_and_the_store_keeps_its_average() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    write(&db, 0, KEYS);
    let levels = db.stats().levels.iter().filter(|l| l.files > 0).count();
    assert!(levels >= 2, "{}", db.stats());
    let mut rng = SplitMix64::new(0xe1a5);
    read_skewed(&db, &mut rng, 40_000);
    // Compaction sees the workload: the rewritten files take their bits
    // from the lookups their inputs saw.
    db.compact().unwrap();
    let last = last_level(&db);
    let (hot, cold, nh, nc) = hot_and_cold(&db, last);
    assert!(nh >= 1 && nc >= 4, "{nh} hot files, {nc} cold");
    assert!(hot > cold + 3.0, "hot {hot} vs cold {cold} bits/key");
    let avg = bits_per_key(&db);
    assert!((avg - 10.0).abs() <= 10.0 * TOLERANCE, "{avg} bits/key");

    // Writes go on under the same reads: compactions rewrite parts of the
    // tree, each output sized from its inputs' history, and the store stays
    // at its average.
    for round in 0..4 {
        write(&db, KEYS + round * 10_000, 10_000);
        read_skewed(&db, &mut rng, 10_000);
    }
    let avg = bits_per_key(&db);
    assert!((avg - 10.0).abs() <= 10.0 * TOLERANCE, "{avg} bits/key");
    assert_eq!(db.stats().filter_rebuilds, 0);
}

/// `rebuild_filters` lets the bits follow the rates: files are sized when
/// written, pulled toward the store's average; a rebuild solves the whole
/// store afresh at its budget and rewrites the files furthest from it.
/// The hot range's files gain bits, the cold ones lose them, the average
/// holds, and the same lookups read fewer data blocks.
#[test]
fn a_rebuild_moves_the_bits_to_the_hot_range() {
    let (_dir, db) = compacted();
    let last = last_level(&db);
    let before = hot_and_cold(&db, last);
    db.reset_stats();
    read_skewed(&db, &mut SplitMix64::new(0x5eed), 40_000);
    let wasted_before = db.stats().total.false_positives;
    let rebuilt = db.rebuild_filters().unwrap();
    assert!(rebuilt >= 2, "{rebuilt} files rebuilt");
    let (hot, cold, nh, nc) = hot_and_cold(&db, last);
    assert!(nh >= 1 && nc >= 4, "{nh} hot files, {nc} cold");
    assert!(
        hot > before.0 + 2.0 && cold < before.1,
        "hot {} -> {hot}, cold {} -> {cold} bits/key",
        before.0,
        before.1
    );
    let avg = bits_per_key(&db);
    assert!((avg - 10.0).abs() <= 10.0 * TOLERANCE, "{avg} bits/key");
    // The same lookups again.
    db.reset_stats();
    read_skewed(&db, &mut SplitMix64::new(0x5eed), 40_000);
    let wasted_after = db.stats().total.false_positives;
    assert!(
        wasted_after * 10 < wasted_before * 7,
        "{wasted_before} -> {wasted_after} wasted reads"
    );
    // Rates that do not move leave nothing more to do.
    assert_eq!(db.rebuild_filters().unwrap(), 0);
}

/// `n` lookups of absent keys, nine in ten in `i` of `from..from + HOT`.
fn read_range(db: &Db, rng: &mut SplitMix64, from: u64, n: u64) {
    for _ in 0..n {
        let i = if rng.below(10) < 9 {
            from + rng.below(HOT)
        } else {
            rng.below(KEYS)
        };
        assert!(db.get(key(2 * i + 1)).unwrap().is_none());
    }
}

/// Mean bits per key, by entries, of the files of `level` wholly inside
/// `i` of `from..from + HOT`.
fn bits_within(db: &Db, level: usize, from: u64) -> (f64, usize) {
    let (lo, hi) = (key(2 * from), key(2 * (from + HOT)));
    mean_bits(db, level, |f| f.smallest >= lo && f.largest < hi)
}

/// A hot range that moves while the store only reads takes the bits with
/// it: the idle store's compaction thread judges its files again once it
/// has served a half-life of lookups, on rates in which the older lookups
/// weigh less. With each file's rate over its whole life, the range read
/// first (twice as often in all) would keep the bits; with the store judged
/// once per version, nothing would move at all.
#[test]
fn a_hot_range_that_moves_takes_the_bits_with_it() {
    let (_dir, db) = compacted();
    let last = last_level(&db);
    let (first, then) = (0, KEYS / 2);
    let mut rng = SplitMix64::new(0x51de);
    read_range(&db, &mut rng, first, 40_000);
    db.wait_for_compaction().unwrap();
    let (a, na) = bits_within(&db, last, first);
    let (b, nb) = bits_within(&db, last, then);
    assert!(na >= 1 && nb >= 1, "{na} and {nb} files inside the ranges");
    assert!(a > b + 2.0, "first range {a}, second {b} bits/key");
    // The hot range moves: half as many lookups, all at the second range.
    db.reset_stats();
    read_range(&db, &mut SplitMix64::new(0xb0b), then, 20_000);
    let wasted_before = db.stats().total.false_positives;
    db.wait_for_compaction().unwrap();
    let (a2, _) = bits_within(&db, last, first);
    let (b2, _) = bits_within(&db, last, then);
    assert!(
        b2 > a2 + 2.0,
        "first range {a} -> {a2}, second {b} -> {b2} bits/key"
    );
    let avg = bits_per_key(&db);
    assert!((avg - 10.0).abs() <= 10.0 * TOLERANCE, "{avg} bits/key");
    db.reset_stats();
    read_range(&db, &mut SplitMix64::new(0xb0b), then, 20_000);
    let wasted_after = db.stats().total.false_positives;
    assert!(
        wasted_after * 10 < wasted_before * 7,
        "{wasted_before} -> {wasted_after} wasted reads"
    );
    // Lookups that stay where they are leave the files alone.
    let bits = |db: &Db| -> Vec<(usize, Vec<u8>, f64)> {
        db.file_stats()
            .into_iter()
            .map(|f| (f.level, f.smallest.clone(), f.bits_per_key))
            .collect()
    };
    let before = bits(&db);
    read_range(&db, &mut SplitMix64::new(0xc0c), then, 20_000);
    db.wait_for_compaction().unwrap();
    assert_eq!(before, bits(&db));
}

/// Under lookups spread evenly the writes already sized the files about as
/// the rates would: a rebuild predicts less than the 10% a rebalance must
/// save, and moves no file's bits for the rates (it may still even out
/// the store's spend with a file or two, each by less than a rebalance's
/// step).
#[test]
fn uniform_lookups_leave_the_files_as_written() {
    let (_dir, db) = compacted();
    let mut rng = SplitMix64::new(0x0dd);
    for _ in 0..40_000 {
        let i = rng.below(KEYS);
        assert!(db.get(key(2 * i + 1)).unwrap().is_none());
    }
    let bits = |db: &Db| -> std::collections::BTreeMap<(usize, Vec<u8>), f64> {
        db.file_stats()
            .into_iter()
            .map(|f| ((f.level, f.smallest.clone()), f.bits_per_key))
            .collect()
    };
    let before = bits(&db);
    assert!(db.rebuild_filters().unwrap() <= 2);
    let after = bits(&db);
    assert_eq!(before.len(), after.len());
    for (file, b) in &before {
        let a = after[file];
        assert!((a - b).abs() <= 1.0 + 0.15 * a, "{file:?}: {b} -> {a}");
    }
    let avg = bits_per_key(&db);
    assert!((avg - 10.0).abs() <= 10.0 * TOLERANCE, "{avg} bits/key");
}

/// Without lookups the allocation follows each file's probe chance, as
/// Monkey does, and spends the average too.
#[test]
fn without_history_the_store_still_spends_its_average() {
    let (_dir, db) = compacted();
    let avg = bits_per_key(&db);
    assert!((avg - 10.0).abs() <= 10.0 * TOLERANCE, "{avg} bits/key");
    let last = last_level(&db);
    let (hot, cold, _, _) = hot_and_cold(&db, last);
    assert!(
        (hot - cold).abs() < 1.0,
        "hot {hot} vs cold {cold} bits/key"
    );
}

/// A design with an average that is not bits per key is refused.
#[test]
fn bad_averages_are_refused() {
    let dir = scratch_dir();
    for bad in [0.0, -3.0, f64::NAN, 1e6] {
        let opts = options().filters(FilterOptions::workload_aware(FilterKind::Blocked512, bad));
        let Err(e) = Db::open(dir.path(), opts) else {
            panic!("{bad} bits/key accepted");
        };
        assert!(
            matches!(e, bloomlsm::Error::InvalidArgument(_)),
            "{bad}: {e}"
        );
    }
}
