//! Partitioned indexes in a store, end to end: every key read right (get,
//! multi_get, forward and backward scans, bounded scans that seek) with
//! every index held, none, and part of them under a small metadata memory
//! budget; the index-partition reads of indexes not held counted; the
//! budget's ceiling on the metadata held; the partition size kept in the
//! store's `OPTIONS`.

use std::ops::Bound;
use std::path::Path;

mod common;
use bloomlsm::db::filename::table_file;
use bloomlsm::sst::{Table, TableOpenOptions};
use bloomlsm::workload::SplitMix64;
use bloomlsm::{CompressionOptions, Db, IoCounters, Options};
use common::keys::key;
use common::levels::full_levels;
use common::model::{Model, check_scan, check_scan_rev};
use common::scratch_dir;

const KEY_SPACE: u64 = 5000;

/// Small files of small blocks, whose indexes take several 128-byte
/// partitions, and filters of 256-byte partitions.
fn options(budget: Option<u64>, cache: usize) -> Options {
    common::options::manual()
        .write_buffer_size(32 << 10)
        .target_file_size(16 << 10)
        .level1_max_bytes(48 << 10)
        .level_size_multiplier(4)
        .dynamic_level_bytes(false)
        .block_size(256)
        .block_cache_capacity(cache)
        .compression(CompressionOptions::none())
        .filter_partition_bytes(256)
        .index_partition_bytes(128)
        .metadata_memory_budget(budget)
}

/// A tree of several levels and a few L0 files; returns its contents.
fn fill(dir: &Path) -> Model {
    let db = Db::open(dir, options(None, 0)).unwrap();
    let mut rng = SplitMix64::new(11);
    let mut model = Model::new();
    for round in 0..3u64 {
        for i in (0..KEY_SPACE).filter(|i| i % 2 == 0 || i % 7 == round) {
            let v = format!("{i}@{round}{}", ".".repeat(rng.below(16) as usize)).into_bytes();
            db.put(key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        db.flush().unwrap();
        db.maintain().unwrap();
    }
    for i in (0..KEY_SPACE).step_by(50) {
        db.delete(key(i)).unwrap();
        model.remove(&key(i));
        if i % 1000 == 0 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    let full = full_levels(&db.stats());
    assert!(full.len() >= 3 && full[0] == 0, "levels: {full:?}");
    db.close().unwrap();
    model
}

/// Every key of the space by `get` and `multi_get`, whole scans both ways,
/// and bounded scans from boundaries spread over the space.
fn check_all(db: &Db, model: &Model, ctx: &str) {
    let keys: Vec<Vec<u8>> = (0..KEY_SPACE).map(key).collect();
    for k in &keys {
        let got = db.get(k).unwrap_or_else(|e| panic!("{ctx}: get {e}"));
        assert_eq!(got.as_deref(), model.get(k).map(Vec::as_slice), "{ctx}");
    }
    let got = db.multi_get(&keys).unwrap();
    for (k, g) in keys.iter().zip(got) {
        assert_eq!(g.as_deref(), model.get(k).map(Vec::as_slice), "{ctx}");
    }
    let all = (Bound::Unbounded, Bound::Unbounded);
    check_scan(db, model, &all.0, &all.1, ctx);
    check_scan_rev(db, model, &all.0, &all.1, ctx);
    for i in (0..KEY_SPACE).step_by(313) {
        let lo = Bound::Included(key(i));
        let hi = Bound::Excluded(key(i + 400));
        check_scan(db, model, &lo, &hi, ctx);
        check_scan_rev(db, model, &lo, &hi, ctx);
    }
}

/// Present-key gets of every key; the counters they add.
fn present_gets(db: &Db, model: &Model) -> IoCounters {
    db.reset_stats();
    for (k, v) in model {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()));
    }
    db.stats().total
}

#[test]
fn partitioned_indexes_read_right_under_any_budget_and_are_counted() {
    let dir = scratch_dir();
    let model = fill(dir.path());

    // Every table but the smallest has a partitioned index (format
    // version 4); a small one keeps its index of one block.
    let db = Db::open(dir.path(), options(None, 0)).unwrap();
    let files = db.file_stats();
    assert!(files.iter().filter(|f| f.index_partitions >= 2).count() > 5);
    for f in &files {
        let t = Table::open(
            table_file(dir.path(), f.number),
            TableOpenOptions::default(),
        )
        .unwrap();
        assert_eq!(f.index_partitions, t.index_partitions());
        assert_eq!(t.properties().format_version == 4, f.index_partitions >= 2);
        assert!(f.index_partitions >= 2 || f.entries < 200, "{f:?}");
        assert!(f.index_partitions != 1 && f.index_pinned);
    }
    let s = db.stats();
    assert_eq!(s.index_pinned_bytes, s.index_bytes);
    assert_eq!(s.filter_pinned_bytes, s.filter_bytes);
    assert_eq!(s.metadata_memory_bytes, s.index_bytes + s.filter_bytes);
    let all_metadata = s.metadata_memory_bytes;
    check_all(&db, &model, "no budget");
    let held = present_gets(&db, &model);
    assert_eq!(held.index_block_reads + held.index_cache_hits, 0);
    assert!(held.block_reads >= model.len() as u64);
    db.close().unwrap();

    // Budget 0: only the top levels stay; each get that reaches a file's
    // data reads one index partition for it, and one data block.
    let db = Db::open(dir.path(), options(Some(0), 0)).unwrap();
    let s = db.stats();
    assert_eq!(s.filter_pinned_bytes, 0);
    assert!(
        s.index_pinned_bytes > 0 && s.index_pinned_bytes * 4 < s.index_bytes,
        "{s:?}"
    );
    assert!(
        db.file_stats()
            .iter()
            .all(|f| f.index_pinned == (f.index_partitions == 0))
    );
    check_all(&db, &model, "budget 0");
    let got = present_gets(&db, &model);
    assert_eq!(got.index_block_reads, got.block_reads, "{got:?}");
    assert_eq!(got.block_reads, held.block_reads, "the same data blocks");
    assert!(got.index_bytes_read > 0 && got.index_bytes_read < got.index_block_reads * 300);
    db.close().unwrap();

    // With a block cache the partitions read once are hits after.
    let db = Db::open(dir.path(), options(Some(0), 4 << 20)).unwrap();
    let first = present_gets(&db, &model);
    assert!(
        first.index_block_reads > 0 && first.index_cache_hits > 0,
        "{first:?}"
    );
    let second = present_gets(&db, &model);
    assert_eq!(second.index_block_reads, 0, "{second:?}");
    db.close().unwrap();

    // A budget for part of the metadata: never above it, and the files
    // whose index is held read no partition.
    for budget in [all_metadata / 3, all_metadata * 2 / 3] {
        let db = Db::open(dir.path(), options(Some(budget), 0)).unwrap();
        let s = db.stats();
        assert!(s.metadata_memory_bytes <= budget, "{budget}: {s:?}");
        assert!(s.metadata_memory_bytes > budget / 2, "{budget}: {s:?}");
        check_all(&db, &model, &format!("budget {budget}"));
        present_gets(&db, &model);
        for f in db.file_stats() {
            if f.index_pinned {
                assert_eq!(f.io.index_block_reads, 0, "{f:?}");
            } else {
                assert_eq!(f.io.index_block_reads, f.io.block_reads, "{f:?}");
            }
        }
        db.close().unwrap();
    }

    // Everything fits: no partition is read.
    let db = Db::open(dir.path(), options(Some(all_metadata), 0)).unwrap();
    let got = present_gets(&db, &model);
    assert_eq!(got.index_block_reads + got.filter_block_reads, 0, "{got:?}");
    db.close().unwrap();
}

/// `index.partition_bytes` is part of the design kept in `OPTIONS`: a store
/// created with it writes partitioned indexes after a reopen with default
/// options.
#[test]
fn index_partition_bytes_is_kept_in_options() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options(None, 0)).unwrap();
    db.close().unwrap();
    let text = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(text.contains("\nindex.partition_bytes = 128\n"), "{text}");
    let db = Db::open(dir.path(), common::options::manual().block_size(256)).unwrap();
    for i in 0..3000 {
        db.put(key(i), b"value").unwrap();
    }
    db.flush().unwrap();
    let f = &db.file_stats()[0];
    assert!(f.index_partitions >= 2, "{f:?}");
    db.close().unwrap();
    // Options that refuse a partition size out of range.
    let bad = Db::open(
        scratch_dir().path(),
        Options::default().index_partition_bytes(10),
    );
    assert!(bad.is_err());
}
