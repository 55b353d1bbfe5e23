//! Dynamic level sizes (`Options::dynamic_level_bytes`): a new store fills
//! its levels from the bottom up, and a store built with fixed sizes, reopened
//! with dynamic sizes, drains its upper levels down.

mod common;
use bloomlsm::{Db, Options, WriteBatch};
use common::keys::scattered_key;
use common::scratch_dir;

/// Keys drawn from this many.
const SPACE: u64 = 1_000_003;

fn options(dynamic: bool) -> Options {
    common::options::manual()
        .write_buffer_size(16 << 10)
        .target_file_size(16 << 10)
        .level1_max_bytes(16 << 10)
        .level_size_multiplier(4)
        .dynamic_level_bytes(dynamic)
}

fn fill(db: &Db, range: std::ops::Range<u64>) {
    let mut b = WriteBatch::new();
    for i in range {
        b.put(scattered_key(i, SPACE), [b'v'; 100]);
        if b.len() == 100 {
            db.write(std::mem::take(&mut b)).unwrap();
            db.maintain().unwrap();
        }
    }
    db.write(b).unwrap();
    db.maintain().unwrap();
}

/// Levels ≥ 1 holding files.
fn full_levels(db: &Db) -> Vec<usize> {
    let full = common::levels::full_levels(&db.stats());
    full.into_iter().filter(|&l| l > 0).collect()
}

/// After maintenance: the base level is the one the last level's size calls
/// for, and no level above it holds files.
fn assert_settled(db: &Db, opts: &Options) -> usize {
    let s = db.stats();
    let bottom = opts.max_levels - 1;
    let (want, _) = opts.dynamic_level_targets(s.levels[bottom].data_bytes);
    assert_eq!(s.base_level, want);
    let full = full_levels(db);
    assert!(
        full.iter().all(|&l| l >= want),
        "base {want}, levels {full:?}"
    );
    want
}

#[test]
fn fills_from_the_bottom() {
    let dir = scratch_dir();
    let opts = options(true);
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    // Small: everything L0 compacts goes straight to the last level.
    fill(&db, 0..500);
    assert_eq!(full_levels(&db), vec![6]);
    assert_eq!(db.stats().base_level, 6);
    // Larger: the base level moves up, and stays below L1.
    fill(&db, 500..6000);
    let base = assert_settled(&db, &opts);
    assert!((2..6).contains(&base), "base {base}");
    assert_eq!(*full_levels(&db).last().unwrap(), 6);
    for i in (0..6000).step_by(7) {
        assert!(db.get(scattered_key(i, SPACE)).unwrap().is_some());
    }
    // A full compaction ends in the last level.
    db.compact().unwrap();
    assert_eq!(full_levels(&db), vec![6]);
    assert_eq!(db.stats().levels[0].files, 0);
}

#[test]
fn fixed_store_reopened_with_dynamic_sizes_drains_down() {
    let dir = scratch_dir();
    {
        let db = Db::open(dir.path(), options(false)).unwrap();
        fill(&db, 0..6000);
        let full = full_levels(&db);
        assert_eq!(full[0], 1, "{full:?}");
        assert!(full.len() >= 2, "{full:?}");
        db.close().unwrap();
    }
    // The store recorded fixed sizes; these options replace that design.
    let opts = options(true).use_stored_design(false);
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    // Data above the base the last level calls for makes L0 compact into the
    // first level holding data, never past it.
    assert_eq!(db.stats().base_level, 1);
    db.maintain().unwrap();
    assert_settled(&db, &opts);
    fill(&db, 6000..7000);
    assert_settled(&db, &opts);
    for i in (0..7000).step_by(5) {
        assert!(
            db.get(scattered_key(i, SPACE)).unwrap().is_some(),
            "key {i}"
        );
    }
    db.verify().unwrap();
}
