//! The filter memory budget and partitioned filters, end to end: a model test
//! against a `BTreeMap` under budgets none, 0, small and huge (reopening with
//! another budget), the budget's allocation as `Stats` and `FileStats` show
//! it, the filter-block reads of filters not held in memory, and the
//! partition size kept in the store's `OPTIONS`.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

mod common;
use bloomlsm::db::filename::table_file;
use bloomlsm::sst::{Table, TableOpenOptions};
use bloomlsm::workload::SplitMix64;
use bloomlsm::{CompressionOptions, Db, FileStats, Options, Stats, WriteBatch};
use common::keys::key;
use common::levels::full_levels;
use common::model::{Model, check_scan};
use common::scratch_dir;

const KEY_SPACE: u64 = 6000;

/// Present keys are `key` + 6 digits ([`key`]); `absent` keys sort between
/// them, so lookups of them fall inside files' key ranges and reach their
/// filters.
fn absent(i: u64) -> Vec<u8> {
    format!("key{i:06}~").into_bytes()
}

fn value(rng: &mut SplitMix64, i: u64, op: usize) -> Vec<u8> {
    let mut v = format!("{i}@{op}").into_bytes();
    v.resize(v.len() + rng.below(12) as usize, b'.');
    v
}

/// Small memtables, files and level targets, so a few thousand keys make
/// several levels of files with filters of 2 or more 256-byte partitions.
fn options(budget: Option<u64>, cache: usize) -> Options {
    common::options::manual()
        .write_buffer_size(16 << 10)
        .target_file_size(8 << 10)
        .level1_max_bytes(24 << 10)
        .dynamic_level_bytes(false)
        .level_size_multiplier(3)
        .l0_compaction_trigger(4)
        .block_size(512)
        .block_cache_capacity(cache)
        .compression(CompressionOptions::none())
        .filter_partition_bytes(256)
        .metadata_memory_budget(budget)
}

/// Levels (L0 first) of the files with a usable filter, pinned and not.
fn pinned_levels(files: &[FileStats]) -> (Vec<usize>, Vec<usize>) {
    let usable = files.iter().filter(|f| f.filter_usable);
    let (pinned, unpinned): (Vec<&FileStats>, Vec<&FileStats>) =
        usable.partition(|f| f.filter_pinned);
    (
        pinned.iter().map(|f| f.level).collect(),
        unpinned.iter().map(|f| f.level).collect(),
    )
}

/// Bytes of the file's filter bits when held in memory, read from the table
/// itself (once: a table file never changes).
fn filter_memory_bytes(dir: &Path, number: u64) -> u64 {
    static SIZES: Mutex<BTreeMap<PathBuf, u64>> = Mutex::new(BTreeMap::new());
    let path = table_file(dir, number);
    if let Some(&b) = SIZES.lock().unwrap().get(&path) {
        return b;
    }
    let t = Table::open(&path, TableOpenOptions::default()).unwrap();
    let b = t.filter_info().map_or(0, |i| i.memory_bytes as u64);
    SIZES.lock().unwrap().insert(path, b);
    b
}

/// What the budget must have chosen, from `Stats` and `FileStats` (and each
/// file's filter size, from the file): without a budget every filter; with
/// one, at most the budget, and what `Options::metadata_memory_budget` and
/// `Version::pin_metadata` promise — the indexes (one block each here,
/// always held) counted first, then files taken by probe chance per byte of
/// filter (1 for an L0 file, its share of the level's entries below), while
/// they fit. So an unpinned file did not fit beside the pinned files it
/// comes after (which also means nothing left out would fit in what the
/// budget has left).
fn check_allocation(
    db: &Db,
    dir: &Path,
    budget: Option<u64>,
    ctx: &str,
) -> (Stats, Vec<FileStats>) {
    let s = db.stats();
    let files = db.file_stats();
    let level_pinned: u64 = s.levels.iter().map(|l| l.filter_pinned_bytes).sum();
    assert_eq!(level_pinned, s.filter_pinned_bytes, "{ctx}: level sums");
    let bytes: Vec<u64> = files
        .iter()
        .map(|f| filter_memory_bytes(dir, f.number))
        .collect();
    for l in &s.levels {
        let of_level = files.iter().zip(&bytes).filter(|(f, _)| f.level == l.level);
        let (all, pinned) = of_level.fold((0, 0), |(a, p), (f, &b)| {
            (a + b, p + if f.filter_pinned { b } else { 0 })
        });
        assert_eq!(l.filter_bytes, all, "{ctx}: level {} filter bytes", l.level);
        assert_eq!(
            l.filter_pinned_bytes, pinned,
            "{ctx}: level {} pinned",
            l.level
        );
    }
    for f in &files {
        assert!(f.filter_usable, "{ctx}: file {} filter unusable", f.number);
        // A file of a few keys keeps a whole filter; a larger one is split.
        if f.entries >= 400 {
            assert!(f.filter_partitions >= 2, "{ctx}: {f:?}");
        }
        assert!(f.filter_partitions != 1, "{ctx}: one partition: {f:?}");
    }
    let Some(b) = budget else {
        assert_eq!(s.filter_pinned_bytes, s.filter_bytes, "{ctx}");
        assert!(
            files.iter().all(|f| f.filter_pinned),
            "{ctx}: not all pinned"
        );
        return (s, files);
    };
    let resident = s.index_pinned_bytes;
    assert_eq!(resident, s.index_bytes, "{ctx}: one-block indexes are held");
    assert_eq!(s.metadata_memory_bytes, s.filter_pinned_bytes + resident);
    assert!(
        s.metadata_memory_bytes <= b.max(resident),
        "{ctx}: {} > {b}",
        s.metadata_memory_bytes
    );
    if b == 0 {
        assert_eq!(s.filter_pinned_bytes, 0, "{ctx}");
    }
    // The store's own ranking: each file's probe chance per byte of filter.
    let chance_per_byte = |i: usize| files[i].probe_chance / bytes[i].max(1) as f64;
    for (i, f) in files.iter().enumerate() {
        if f.filter_pinned {
            continue;
        }
        let before: u64 = (0..files.len())
            .filter(|&j| files[j].filter_pinned && chance_per_byte(j) >= chance_per_byte(i))
            .map(|j| bytes[j])
            .sum();
        assert!(
            resident + before + bytes[i] > b,
            "{ctx}: L{} file {} ({} B) left out of budget {b} after {before} B: {:?}",
            f.level,
            f.number,
            bytes[i],
            pinned_levels(&files)
        );
    }
    (s, files)
}

/// Every key of the space, present or not, by `multi_get`, and every
/// `get_step`-th one by `get` too.
fn check_all(db: &Db, model: &Model, get_step: usize, ctx: &str) {
    check_scan(db, model, &Bound::Unbounded, &Bound::Unbounded, ctx);
    let keys: Vec<Vec<u8>> = (0..KEY_SPACE).flat_map(|i| [key(i), absent(i)]).collect();
    let got = db
        .multi_get(&keys)
        .unwrap_or_else(|e| panic!("{ctx}: multi_get {e}"));
    for (i, (k, g)) in keys.iter().zip(got).enumerate() {
        let want = model.get(k).map(Vec::as_slice);
        assert_eq!(g.as_deref(), want, "{ctx}: multi_get {k:?}");
        if i % get_step == 0 {
            let g = db.get(k).unwrap_or_else(|e| panic!("{ctx}: get {e}"));
            assert_eq!(g.as_deref(), want, "{ctx}: get {k:?}");
        }
    }
}

/// Random writes, reads, flushes, maintenance, full compactions and reopens
/// (each with the next budget of `budgets`), checked against the model
/// throughout.
/// Returns, every 500 ops, the files pinned, the files not, and the deepest
/// level with files.
fn run(seed: u64, ops: usize, budgets: &[Option<u64>], dir: &Path) -> Vec<(usize, usize, usize)> {
    let mut rng = SplitMix64::new(seed);
    let mut turn = 0;
    let mut budget = budgets[0];
    let cache = [0, 64 << 10][seed as usize % 2];
    let mut db = Db::open(dir, options(budget, cache)).unwrap();
    let mut model = Model::new();
    let mut shapes = Vec::new();
    for op in 0..ops {
        let ctx = format!("seed {seed} op {op} budget {budget:?}");
        match rng.below(1000) {
            0..=449 => {
                let i = rng.below(KEY_SPACE);
                let v = value(&mut rng, i, op);
                db.put(key(i), &v).unwrap();
                model.insert(key(i), v);
            }
            450..=519 => {
                let i = rng.below(KEY_SPACE);
                db.delete(key(i)).unwrap();
                model.remove(&key(i));
            }
            520..=559 => {
                let mut b = WriteBatch::new();
                for _ in 0..1 + rng.below(50) {
                    let i = rng.below(KEY_SPACE);
                    let v = value(&mut rng, i, op);
                    b.put(key(i), &v);
                    model.insert(key(i), v);
                }
                db.write(b).unwrap();
            }
            560..=799 => {
                let i = rng.below(KEY_SPACE);
                let k = if rng.below(2) == 0 { key(i) } else { absent(i) };
                let got = db.get(&k).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                assert_eq!(got.as_deref(), model.get(&k).map(Vec::as_slice), "{ctx}");
            }
            800..=869 => {
                let keys: Vec<Vec<u8>> = (0..1 + rng.below(64))
                    .map(|_| {
                        let i = rng.below(KEY_SPACE);
                        if rng.below(2) == 0 { key(i) } else { absent(i) }
                    })
                    .collect();
                let got = db.multi_get(&keys).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                for (k, g) in keys.iter().zip(got) {
                    assert_eq!(g.as_deref(), model.get(k).map(Vec::as_slice), "{ctx}");
                }
            }
            870..=899 => {
                let a = key(rng.below(KEY_SPACE));
                let b = absent(rng.below(KEY_SPACE));
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                check_scan(
                    &db,
                    &model,
                    &Bound::Included(lo),
                    &Bound::Excluded(hi),
                    &ctx,
                );
            }
            900..=969 => {
                db.flush().unwrap();
                check_allocation(&db, dir, budget, &ctx);
            }
            970..=992 => {
                db.maintain().unwrap();
                check_allocation(&db, dir, budget, &ctx);
            }
            993..=994 => {
                db.compact().unwrap();
                check_allocation(&db, dir, budget, &ctx);
            }
            _ => {
                db.close().unwrap();
                turn += 1;
                budget = budgets[turn % budgets.len()];
                let ctx = format!("{ctx}, reopened with budget {budget:?}");
                db = Db::open(dir, options(budget, cache)).unwrap();
                db.verify().unwrap();
                check_allocation(&db, dir, budget, &ctx);
                check_all(&db, &model, 5, &ctx);
            }
        }
        if op % 500 == 499 {
            let files = db.file_stats();
            let (pinned, unpinned) = pinned_levels(&files);
            let deepest = files.iter().map(|f| f.level).max().unwrap_or(0);
            shapes.push((pinned.len(), unpinned.len(), deepest));
        }
    }
    let ctx = format!("seed {seed} end");
    db.maintain().unwrap();
    check_allocation(&db, dir, budget, &ctx);
    check_all(&db, &model, 1, &ctx);
    db.verify().unwrap();
    shapes
}

/// The budgets each run reopens with, in turn: each seed starts with another.
fn budget_cycle(start: usize) -> Vec<Option<u64>> {
    let all = [None, Some(0), Some(3 << 10), Some(1 << 40)];
    (0..all.len())
        .map(|i| all[(start + i) % all.len()])
        .collect()
}

#[test]
fn model_under_filter_budgets() {
    let seeds = if common::long_mode() { 16 } else { 4 };
    let (mut partial, mut deepest) = (0, 0);
    for s in 0..seeds {
        let dir = scratch_dir();
        let shapes = run(0xb0d6_0000 + s, 4000, &budget_cycle(s as usize), dir.path());
        eprintln!("seed {s}: (pinned, unpinned, deepest level) {shapes:?}");
        // The small budget pinned some files and left others on demand.
        partial += shapes.iter().filter(|&&(p, u, _)| p > 0 && u > 0).count();
        deepest = shapes.iter().map(|x| x.2).max().unwrap_or(0).max(deepest);
    }
    assert!(partial > 0, "no partial allocation was seen");
    assert!(
        deepest >= 3,
        "the tree stayed shallow: deepest level {deepest}"
    );
}

/// Fills a store with keys 0, 2, 4, … (so odd keys are absent inside every
/// file's range) over several levels, and closes it.
fn fill(dir: &Path) {
    let db = Db::open(dir, options(None, 0)).unwrap();
    let mut rng = SplitMix64::new(7);
    for round in 0..3 {
        for i in (0..KEY_SPACE).step_by(2) {
            let v = value(&mut rng, i, round);
            db.put(key(i), v).unwrap();
        }
        db.flush().unwrap();
        db.maintain().unwrap();
    }
    // A few files left in L0, above the levels.
    for i in (0..KEY_SPACE).step_by(40) {
        db.put(key(i), b"fresh").unwrap();
        if i % 1000 == 0 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    let full = full_levels(&db.stats());
    assert!(
        full.len() >= 3 && full[0] == 0,
        "levels with files: {full:?}"
    );
    db.close().unwrap();
}

/// Missing-key lookups (single and batched) on a reopened store; returns the
/// summed counters.
fn missing_lookups(db: &Db) -> bloomlsm::IoCounters {
    db.reset_stats();
    let keys: Vec<Vec<u8>> = (0..KEY_SPACE / 2).map(|i| key(2 * i + 1)).collect();
    for k in &keys {
        assert_eq!(db.get(k).unwrap(), None);
    }
    for r in db.multi_get(&keys).unwrap() {
        assert_eq!(r, None);
    }
    db.stats().total
}

/// The same tree read with every filter in memory, none, part of them, and
/// none with a block cache: the filters give the same answers (same checks,
/// negatives, false positives, data-block reads); the filters not held in
/// memory cost one filter-block read per probe, from disk or the cache; the
/// files held in memory cost none.
#[test]
fn filters_read_on_demand_answer_as_in_memory_and_are_counted() {
    let dir = scratch_dir();
    fill(dir.path());

    let db = Db::open(dir.path(), options(None, 0)).unwrap();
    let (s, _) = check_allocation(&db, dir.path(), None, "none");
    let all = s.filter_bytes;
    // The indexes (one block each) are held whatever the budget, and
    // count against it first.
    let indexes = s.index_bytes;
    let want = missing_lookups(&db);
    assert!(
        want.filter_checks > 0 && want.filter_negatives > 0,
        "{want:?}"
    );
    assert_eq!(
        want.filter_block_reads + want.filter_cache_hits,
        0,
        "{want:?}"
    );
    assert_eq!(want.filter_bytes_read, 0);
    db.close().unwrap();

    let same_answers = |got: &bloomlsm::IoCounters, ctx: &str| {
        assert_eq!(got.filter_checks, want.filter_checks, "{ctx}");
        assert_eq!(got.filter_negatives, want.filter_negatives, "{ctx}");
        assert_eq!(got.false_positives, want.false_positives, "{ctx}");
        // Data blocks: from disk or, with a cache, from there.
        assert_eq!(
            got.block_reads + got.cache_hits,
            want.block_reads + want.cache_hits,
            "{ctx}"
        );
    };

    // Budget 0, no block cache: every probe reads its partition from disk.
    let db = Db::open(dir.path(), options(Some(0), 0)).unwrap();
    let (s, _) = check_allocation(&db, dir.path(), Some(0), "budget 0");
    assert_eq!(s.filter_bytes, all, "the same filters");
    let got = missing_lookups(&db);
    same_answers(&got, "budget 0");
    assert_eq!(got.filter_block_reads, got.filter_checks, "{got:?}");
    assert_eq!(got.filter_cache_hits, 0);
    // A partition, not the whole filter: at most a partition's worth (256
    // bytes, rounded up to whole filter lines, plus trailers) per read.
    assert!(got.filter_bytes_read > 0, "{got:?}");
    assert!(
        got.filter_bytes_read < got.filter_block_reads * 512,
        "{} bytes in {} reads",
        got.filter_bytes_read,
        got.filter_block_reads
    );
    db.close().unwrap();

    // Budget 0 with a block cache: the second round finds every partition
    // in the cache.
    let db = Db::open(dir.path(), options(Some(0), 1 << 20)).unwrap();
    let first = missing_lookups(&db);
    same_answers(&first, "cached, first round");
    assert!(first.filter_block_reads > 0, "{first:?}");
    assert!(first.filter_cache_hits > 0, "{first:?}");
    assert_eq!(
        first.filter_block_reads + first.filter_cache_hits,
        first.filter_checks
    );
    let second = missing_lookups(&db);
    same_answers(&second, "cached, second round");
    assert_eq!(second.filter_block_reads, 0, "{second:?}");
    assert_eq!(second.filter_cache_hits, second.filter_checks, "{second:?}");
    db.close().unwrap();

    // A budget for part of the filters: the pinned files are never read for
    // their filters, the others are.
    let budget = indexes + all / 3;
    let db = Db::open(dir.path(), options(Some(budget), 0)).unwrap();
    let (s, _) = check_allocation(&db, dir.path(), Some(budget), "partial");
    assert!(
        s.filter_pinned_bytes > 0 && s.filter_pinned_bytes < all,
        "{s:?}"
    );
    let got = missing_lookups(&db);
    same_answers(&got, "partial");
    let files = db.file_stats();
    let (mut pinned_checks, mut demand_checks) = (0, 0);
    for f in &files {
        if f.filter_pinned {
            assert_eq!(f.io.filter_block_reads, 0, "pinned {f:?}");
            pinned_checks += f.io.filter_checks;
        } else {
            assert_eq!(
                f.io.filter_block_reads, f.io.filter_checks,
                "on demand {f:?}"
            );
            demand_checks += f.io.filter_checks;
        }
    }
    assert!(
        pinned_checks > 0 && demand_checks > 0,
        "{pinned_checks} {demand_checks}"
    );
    assert_eq!(got.filter_block_reads, demand_checks);
    assert!(
        files.iter().any(|f| f.level == 0 && f.filter_pinned),
        "L0 first"
    );
    db.close().unwrap();

    // Everything fits: nothing read on demand.
    let db = Db::open(dir.path(), options(Some(indexes + all), 0)).unwrap();
    check_allocation(&db, dir.path(), Some(indexes + all), "all fit");
    let got = missing_lookups(&db);
    same_answers(&got, "all fit");
    assert_eq!(got.filter_block_reads, 0);
}

/// `filter.partition_bytes` is part of the design kept in `OPTIONS`: a store
/// created with it writes partitioned filters after a reopen with default
/// options, and one created without it does not.
#[test]
fn partition_size_is_kept_in_options() {
    for created_with in [256usize, 0] {
        let dir = scratch_dir();
        let opts = options(None, 0).filter_partition_bytes(created_with);
        let db = Db::open(dir.path(), opts).unwrap();
        db.put(b"a", b"b").unwrap();
        db.close().unwrap();
        let text = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
        assert_eq!(
            text.contains("filter.partition_bytes = 256"),
            created_with == 256,
            "{text}"
        );

        let reopened = options(None, 0)
            .filter_partition_bytes(0)
            .use_stored_design(true);
        let db = Db::open(dir.path(), reopened).unwrap();
        for i in 0..3000 {
            db.put(key(i), b"value").unwrap();
        }
        db.compact().unwrap();
        let files = db.file_stats();
        let big: Vec<&FileStats> = files.iter().filter(|f| f.entries >= 400).collect();
        assert!(!big.is_empty(), "{files:?}");
        for f in big {
            if created_with == 256 {
                assert!(f.filter_partitions >= 2, "created with 256: {f:?}");
            } else {
                assert_eq!(f.filter_partitions, 0, "created with 0: {f:?}");
            }
        }
    }
}
