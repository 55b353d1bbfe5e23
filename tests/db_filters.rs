//! Filters in the store: options changed across reopens (files of several
//! policies coexist and stay correct), a file whose filter this build cannot
//! read, per-level overrides, `skip_last_level`, and the Monkey allocation.

use std::path::Path;

use bloomlsm::db::filename;
use bloomlsm::sst::{Table, TableOpenOptions, format};
use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, FileStats, FilterKind, FilterOptions, FilterPolicy, Options};

mod common;
use common::keys::key;
use common::model::{self, Model, entries, scan_all};
use common::scratch_dir;

fn options(filters: FilterOptions) -> Options {
    common::options::small()
        .block_cache_capacity(0)
        .filters(filters)
        // Raw tables: the level shapes these tests need come from raw sizes.
        .compression(bloomlsm::CompressionOptions::none())
}

fn write_some(db: &Db, model: &mut Model, rng: &mut SplitMix64, n: usize, tag: &str) {
    model::churn(db, model, n, || {
        let k = key(rng.below(3000));
        let v = (rng.below(8) != 0).then(|| {
            let mut v = format!("{}:{tag}:", String::from_utf8_lossy(&k)).into_bytes();
            v.resize(v.len() + rng.below(80) as usize, b'x');
            v
        });
        (k, v)
    });
}

fn check_model(db: &Db, model: &Model) {
    for i in 0..3100 {
        let k = key(i);
        assert_eq!(
            db.get(&k).unwrap().as_deref(),
            model.get(&k).map(Vec::as_slice),
            "key {i}"
        );
    }
    assert!(
        scan_all(db) == entries(model),
        "scan differs from the model"
    );
}

/// Whether a file's effective bits per key match the configured `want`:
/// filters round up to whole 512-bit lines (blocked) or 64-bit words (bloom),
/// which adds up to 512 bits per file.
fn bits_close(f: &FileStats, want: f64) -> bool {
    f.bits_per_key >= want - 0.5 && f.bits_per_key <= want + 0.5 + 512.0 / f.entries as f64
}

fn policies(files: &[FileStats]) -> Vec<String> {
    let mut p: Vec<String> = files.iter().map(|f| f.filter.clone()).collect();
    p.sort();
    p.dedup();
    p
}

#[test]
fn filter_options_changed_across_reopen() {
    let dir = scratch_dir();
    let mut rng = SplitMix64::new(0xF11);
    let mut model = Model::new();
    let blocked = FilterOptions::uniform(Some(FilterPolicy::blocked512(10.0)));
    let bloom = FilterOptions::uniform(Some(FilterPolicy::bloom(6.0)));
    {
        let db = Db::open(dir.path(), options(blocked)).unwrap();
        write_some(&db, &mut model, &mut rng, 3000, "a");
        db.maintain().unwrap();
        db.close().unwrap();
    }
    {
        // The store recorded blocked512; these options replace that design.
        let opts = options(bloom).use_stored_design(false);
        let db = Db::open(dir.path(), opts).unwrap();
        check_model(&db, &model);
        write_some(&db, &mut model, &mut rng, 600, "b");
        db.flush().unwrap();
        let fs = db.file_stats();
        // Old files keep (and report) their own policy next to the new ones.
        assert_eq!(policies(&fs), ["blocked512", "bloom"], "{fs:#?}");
        for f in &fs {
            assert!(f.filter_usable);
            let want = if f.filter == "bloom" { 6.0 } else { 10.0 };
            assert!(bits_close(f, want), "{f:?}");
        }
        let s = db.stats();
        assert!(
            s.levels[0].policies.contains("bloom") && !s.levels[1].policies.contains("bloom"),
            "{:?}",
            s.levels.iter().map(|l| &l.policies).collect::<Vec<_>>()
        );
        check_model(&db, &model);
        db.close().unwrap();
    }
    {
        let opts = options(FilterOptions::none()).use_stored_design(false);
        let db = Db::open(dir.path(), opts).unwrap();
        write_some(&db, &mut model, &mut rng, 600, "c");
        db.flush().unwrap();
        assert_eq!(
            policies(&db.file_stats()),
            ["blocked512", "bloom", "none"],
            "{:#?}",
            db.file_stats()
        );
        check_model(&db, &model);
        // Partial compaction: some files are rewritten (without a filter),
        // others keep theirs.
        db.maintain().unwrap();
        check_model(&db, &model);
        let fs = db.file_stats();
        assert!(fs.iter().any(|f| f.filter == "none"), "{fs:#?}");
        // Unfiltered files are read without a filter, and counted.
        db.reset_stats();
        check_model(&db, &model);
        assert!(db.stats().total.unfiltered_reads > 0);
        db.compact().unwrap();
        check_model(&db, &model);
        assert_eq!(policies(&db.file_stats()), ["none"]);
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), options(FilterOptions::default())).unwrap();
    check_model(&db, &model);
    db.verify().unwrap();
}

/// Rewrites the version byte of the filter trailer of the table at `path`
/// (and the block's checksum), making the filter unreadable to this build
/// while the file stays valid: what a file from a later version looks like.
fn make_filter_unusable(path: &Path) {
    let t = Table::open(path, TableOpenOptions::default()).unwrap();
    let h = t.filter_handle().expect("table has a filter");
    let checksum = t.checksum_type();
    drop(t);
    let mut bytes = std::fs::read(path).unwrap();
    let (start, end) = (h.offset as usize, (h.offset + h.size) as usize);
    let version_at = end - bloomlsm::filter::FILTER_TRAILER_LEN + 18;
    assert_eq!(bytes[version_at], bloomlsm::filter::FILTER_VERSION);
    bytes[version_at] = 99;
    let block_type = bytes[end];
    let trailer = format::block_trailer(checksum, &bytes[start..end], block_type, h.offset);
    bytes[end..end + format::BLOCK_TRAILER_LEN].copy_from_slice(&trailer);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn unusable_filter_reads_correctly_and_is_counted() {
    let dir = scratch_dir();
    let mut rng = SplitMix64::new(0xF12);
    let mut model = Model::new();
    let files = {
        let db = Db::open(dir.path(), options(FilterOptions::default())).unwrap();
        write_some(&db, &mut model, &mut rng, 3000, "a");
        db.maintain().unwrap();
        let files = db.file_stats();
        db.close().unwrap();
        files
    };
    // Damage-free but unreadable filters in every other table of each level,
    // so that some sit above the deepest level (which a full compaction
    // rewrites).
    let deepest = files.iter().map(|f| f.level).max().unwrap();
    let mut patched = Vec::new();
    for level in 0..=deepest {
        let mut numbers: Vec<u64> = files
            .iter()
            .filter(|f| f.level == level)
            .map(|f| f.number)
            .collect();
        numbers.sort();
        patched.extend(numbers.into_iter().step_by(2));
    }
    assert!(
        files
            .iter()
            .any(|f| f.level < deepest && patched.contains(&f.number)),
        "a patched file above the deepest level: {files:#?}"
    );
    for n in &patched {
        make_filter_unusable(&filename::table_file(dir.path(), *n));
    }
    let db = Db::open(dir.path(), options(FilterOptions::default())).unwrap();
    db.verify().unwrap();
    for f in db.file_stats() {
        let unusable = patched.contains(&f.number);
        assert_eq!(f.filter_usable, !unusable, "{f:?}");
        assert_eq!(f.filter, "blocked512");
        if unusable {
            assert_eq!(f.predicted_fpr, 1.0);
            assert_eq!(f.bits_per_key, 0.0);
        }
    }
    let s = db.stats();
    assert_eq!(
        s.levels.iter().map(|l| l.unfiltered_files).sum::<usize>(),
        patched.len()
    );
    check_model(&db, &model);
    let s = db.stats();
    assert!(s.total.unusable_filter_reads > 0, "{:?}", s.total);
    let fs = db.file_stats();
    for f in &fs {
        if patched.contains(&f.number) {
            // Never filtered: every in-range probe reads a block.
            assert_eq!(f.io.filter_checks, 0, "{f:?}");
            assert_eq!(
                f.io.unusable_filter_reads,
                f.io.files_considered - f.io.key_range_skips,
                "{f:?}"
            );
        } else {
            assert_eq!(f.io.unusable_filter_reads, 0, "{f:?}");
        }
    }
    // Compaction rewrites those it merges (the deepest level's stay as
    // they are: a full compaction ends there), with a usable filter.
    let unusable = |db: &Db| db.file_stats().iter().filter(|f| !f.filter_usable).count();
    let before = unusable(&db);
    db.compact().unwrap();
    assert!(unusable(&db) < before, "{:#?}", db.file_stats());
    check_model(&db, &model);
}

fn level_policy(fs: &[FileStats], level: usize) -> Vec<String> {
    policies(
        &fs.iter()
            .filter(|f| f.level == level)
            .cloned()
            .collect::<Vec<_>>(),
    )
}

#[test]
fn per_level_overrides() {
    let dir = scratch_dir();
    let mut rng = SplitMix64::new(0xF13);
    let mut model = Model::new();
    let filters = FilterOptions::default()
        .policy(Some(FilterPolicy::blocked512(8.0)))
        .per_level(vec![(0, Some(FilterPolicy::bloom(5.0))), (1, None)])
        .skip_last_level(false)
        .monkey_avg_bits_per_key(None);
    let db = Db::open(dir.path(), options(filters)).unwrap();
    // (Five rounds: early ones move whole levels down at once.)
    for round in 0..5 {
        write_some(&db, &mut model, &mut rng, 2000, &format!("r{round}"));
        db.maintain().unwrap();
    }
    write_some(&db, &mut model, &mut rng, 200, "last");
    db.flush().unwrap();
    let fs = db.file_stats();
    let deepest = fs.iter().map(|f| f.level).max().unwrap();
    assert!(deepest >= 3, "{fs:#?}");
    assert_eq!(level_policy(&fs, 0), ["bloom"]);
    assert_eq!(level_policy(&fs, 1), ["none"]);
    for l in 2..=deepest {
        assert_eq!(level_policy(&fs, l), ["blocked512"], "level {l}");
    }
    for f in &fs {
        match f.level {
            0 => assert!(bits_close(f, 5.0), "{f:?}"),
            1 => assert_eq!(f.bits_per_key, 0.0),
            _ => assert!(bits_close(f, 8.0), "{f:?}"),
        }
    }
    check_model(&db, &model);
}

#[test]
fn skip_last_level() {
    let dir = scratch_dir();
    let mut rng = SplitMix64::new(0xF14);
    let mut model = Model::new();
    let filters = FilterOptions::default().skip_last_level(true);
    let db = Db::open(dir.path(), options(filters)).unwrap();
    for round in 0..4 {
        write_some(&db, &mut model, &mut rng, 2000, &format!("r{round}"));
        db.maintain().unwrap();
    }
    let fs = db.file_stats();
    let deepest = fs.iter().map(|f| f.level).max().unwrap();
    assert!(deepest >= 2, "{fs:#?}");
    assert_eq!(level_policy(&fs, deepest), ["none"], "{fs:#?}");
    check_model(&db, &model);
    db.compact().unwrap();
    assert_eq!(policies(&db.file_stats()), ["none"]);
    // New L0 files are not on the last level: they get the filter.
    write_some(&db, &mut model, &mut rng, 200, "late");
    db.flush().unwrap();
    let fs = db.file_stats();
    assert_eq!(level_policy(&fs, 0), ["blocked512"], "{fs:#?}");
    check_model(&db, &model);
}

#[test]
fn monkey_gives_smaller_levels_more_bits() {
    let dir = scratch_dir();
    let mut rng = SplitMix64::new(0xF15);
    // Files of ~1000 keys, so that rounding filters up to whole 512-bit lines
    // does not blur the allocation.
    let db = Db::open(
        dir.path(),
        common::options::manual()
            .write_buffer_size(64 << 10)
            .target_file_size(32 << 10)
            .level1_max_bytes(32 << 10)
            .dynamic_level_bytes(false)
            .level_size_multiplier(4)
            .block_cache_capacity(0)
            .filters(FilterOptions::monkey(FilterKind::Blocked512, 10.0)),
    )
    .unwrap();
    let mut model = Model::new();
    for _ in 0..5 {
        for _ in 0..5000 {
            let k = key(rng.below(1_000_000));
            let v = rng.next_u64().to_le_bytes().to_vec();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        db.maintain().unwrap();
    }
    db.rebuild_filters().unwrap();
    let s = db.stats();
    let levels: Vec<(usize, u64, f64)> = s
        .levels
        .iter()
        .filter(|l| l.level > 0 && l.files > 0)
        .map(|l| (l.level, l.entries, l.filter_bits_per_key()))
        .collect();
    assert!(levels.len() >= 2, "{levels:?}");
    let (first, last) = (levels[0], levels[levels.len() - 1]);
    assert!(first.1 < last.1, "{levels:?}");
    // Each level fewer bits/key than the smaller one above it (a uniform
    // policy gives ~10 everywhere).
    assert!(
        levels.windows(2).all(|w| w[0].2 > w[1].2) && first.2 > last.2 + 0.75,
        "smaller level gets more bits/key: {levels:?}"
    );
    // The average is the budget (files of ~1000 keys round their filters up
    // to whole 512-bit lines: up to half a bit per key more), and the
    // largest level is below it.
    let keys: u64 = s.levels.iter().map(|l| l.filtered_keys).sum();
    let avg = s.filter_bytes as f64 * 8.0 / keys as f64;
    assert!(
        (9.8..10.6).contains(&avg),
        "average {avg} bits/key: {levels:?}"
    );
    assert!(last.2 < avg, "average {avg} bits/key: {levels:?}");
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()));
    }
}

/// The store spends the Monkey budget it is given, in the tree a load
/// leaves and after a full compaction, however the tree grew: files whose
/// level's allocation moved since they were written get their filters
/// rebuilt. Each level gets no more bits per key than any smaller one.
#[test]
fn monkey_spends_its_average_in_the_tree_a_load_leaves() {
    let dir = scratch_dir();
    let mut rng = SplitMix64::new(0x30_0000);
    let db = Db::open(
        dir.path(),
        common::options::manual()
            .write_buffer_size(512 << 10)
            .target_file_size(256 << 10)
            .level1_max_bytes(1 << 20)
            .dynamic_level_bytes(false)
            .block_cache_capacity(0)
            .compression(bloomlsm::CompressionOptions::none())
            .filters(FilterOptions::monkey(FilterKind::Blocked512, 10.0)),
    )
    .unwrap();
    let spent = |db: &Db| {
        let s = db.stats();
        let keys: u64 = s.levels.iter().map(|l| l.filtered_keys).sum();
        let levels: Vec<(usize, u64, f64)> = s
            .levels
            .iter()
            .filter(|l| l.files > 0)
            .map(|l| (l.level, l.entries, l.filter_bits_per_key()))
            .collect();
        (
            s.filter_bytes as f64 * 8.0 / keys as f64,
            levels,
            s.filter_rebuilds,
        )
    };
    for _ in 0..30 {
        for _ in 0..10_000 {
            db.put(key(rng.below(1 << 40)), [7u8; 64]).unwrap();
        }
        db.maintain().unwrap();
    }
    // Compactions alone leave each file the allocation of its moment.
    let (before, _, _) = spent(&db);
    assert!(before > 10.5, "{before} bits/key before the rebuild");
    let rebuilt = db.rebuild_filters().unwrap();
    let (avg, levels, rebuilds) = spent(&db);
    assert_eq!(rebuilds, rebuilt);
    assert!(levels.iter().filter(|l| l.0 > 0).count() >= 3, "{levels:?}");
    assert!((9.8..=10.2).contains(&avg), "{avg} bits/key: {levels:?}");
    assert!(rebuilds > 0, "{levels:?}");
    // Smaller runs get more bits: by entries, the levels ≥ 1 in order of
    // size have non-increasing bits per key (to within line rounding).
    let mut by_size: Vec<_> = levels.iter().filter(|l| l.0 > 0).collect();
    by_size.sort_by_key(|l| l.1);
    assert!(
        by_size.windows(2).all(|w| w[0].2 + 0.05 >= w[1].2),
        "{by_size:?}"
    );
    db.compact().unwrap();
    db.rebuild_filters().unwrap();
    let (avg, levels, _) = spent(&db);
    assert!(
        (9.8..=10.2).contains(&avg),
        "after compact: {avg} bits/key: {levels:?}"
    );
}

/// Files per level and keys per level after a load, for `filters`, with the
/// default per-level compression (raw L0, compressed below) and sharded
/// compactions.
fn load_shape(filters: FilterOptions) -> Vec<(usize, usize, u64)> {
    let dir = scratch_dir();
    let opts = options(filters)
        .compression(bloomlsm::CompressionOptions::default())
        .max_subcompactions(2);
    let db = Db::open(dir.path(), opts).unwrap();
    let mut rng = SplitMix64::new(0x5A9E);
    for i in 0..6000u64 {
        let k = format!("{:016x}", rng.next_u64()).into_bytes();
        let mut v = format!("value-{i}-").into_bytes();
        v.resize(100, b'v');
        db.put(&k, &v).unwrap();
        db.maintain().unwrap();
    }
    let mut shape = vec![(0usize, 0usize, 0u64); 8];
    for f in db.file_stats() {
        shape[f.level].0 = f.level;
        shape[f.level].1 += 1;
        shape[f.level].2 += f.entries;
    }
    db.close().unwrap();
    shape.retain(|s| s.1 > 0);
    shape
}

/// The tree's shape is a function of the data, not of the filters: filter
/// blocks are part of a file's size, so anything sized by whole files
/// (level targets, sub-compaction splits) would give each filter
/// configuration its own tree, and the study would compare different trees.
#[test]
fn shape_does_not_depend_on_filters() {
    let none = load_shape(FilterOptions::uniform(None));
    assert!(none.len() >= 3, "the load should reach L2: {none:?}");
    for policy in [FilterPolicy::blocked512(10.0), FilterPolicy::bloom(16.0)] {
        let got = load_shape(FilterOptions::uniform(Some(policy)));
        assert_eq!(got, none, "{policy:?} vs no filters");
    }
}

/// The bytes of the data blocks of each file below L0, in key order.
fn data_blocks(dir: &Path, db: &Db) -> Vec<Vec<u8>> {
    let mut files: Vec<FileStats> = db
        .file_stats()
        .into_iter()
        .filter(|f| f.level > 0)
        .collect();
    files.sort_by(|a, b| a.smallest.cmp(&b.smallest));
    files
        .iter()
        .map(|f| {
            let path = filename::table_file(dir, f.number);
            let t = Table::open(&path, TableOpenOptions::default()).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            t.index_entries()
                .unwrap()
                .into_iter()
                .flat_map(|(_, h)| bytes[h.offset as usize..(h.offset + h.size) as usize].to_vec())
                .collect()
        })
        .collect()
}

/// A store reopened with other filters gets them from `rebuild_filters`
/// copying each file's data blocks as stored: the blocks keep their bytes,
/// the store reads the same, and each file has the new filter. A file a
/// merge would change (versions a released snapshot kept) is merged
/// instead, and reads the same too.
#[test]
fn rebuilt_filters_copy_the_data_blocks() {
    let dir = scratch_dir();
    let mut rng = SplitMix64::new(0xc0_9e5);
    let mut model = Model::new();
    // LZ4 below L0, as a new store's default.
    let opts = |f: FilterOptions| options(f).compression(bloomlsm::CompressionOptions::default());
    let db = Db::open(dir.path(), opts(FilterOptions::none())).unwrap();
    write_some(&db, &mut model, &mut rng, 8000, "a");
    db.compact().unwrap();
    let before = data_blocks(dir.path(), &db);
    assert!(before.len() >= 4, "{} files", before.len());
    db.close().unwrap();

    let reopen = |f: FilterOptions| Db::open(dir.path(), opts(f).use_stored_design(false)).unwrap();
    let db = reopen(FilterOptions::default());
    let rebuilt = db.rebuild_filters().unwrap();
    let s = db.stats();
    assert_eq!(
        (rebuilt, s.filter_rebuilds, s.filter_rebuilds_copied),
        (before.len() as u64, rebuilt, rebuilt)
    );
    assert!(
        data_blocks(dir.path(), &db) == before,
        "data blocks changed"
    );
    let files = db.file_stats();
    assert!(
        files.iter().all(|f| f.level > 0 && bits_close(f, 10.0)),
        "{:?}",
        policies(&files)
    );
    check_model(&db, &model);

    // Versions a snapshot kept, which a merge without it drops.
    let snap = db.snapshot();
    write_some(&db, &mut model, &mut rng, 4000, "b");
    db.compact().unwrap();
    drop(snap);
    db.close().unwrap();
    let db = reopen(FilterOptions::uniform(Some(FilterPolicy::ribbon(8.0))));
    let rebuilt = db.rebuild_filters().unwrap();
    let s = db.stats();
    assert!(rebuilt > 0 && s.filter_rebuilds_copied < rebuilt, "{s}");
    let files = db.file_stats();
    assert_eq!(policies(&files), ["ribbon"]);
    check_model(&db, &model);
    db.close().unwrap();
    let db = reopen(FilterOptions::uniform(Some(FilterPolicy::ribbon(8.0))));
    check_model(&db, &model);
}
