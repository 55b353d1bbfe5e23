//! Model test: random sequences of puts, deletes, batches, gets, scans,
//! flushes, compactions, maintenance and reopens, checked step by step
//! against a `BTreeMap`. Tiny memtables, files and level targets make several
//! levels appear; fixed seeds make every failure reproducible. Some stores
//! write two-level indexes and read them (and their filters) on demand
//! under a metadata memory budget.

use std::ops::Bound;
use std::path::Path;

use bloomlsm::workload::SplitMix64;
use bloomlsm::{
    Compression, CompressionOptions, Db, FilterOptions, FilterPolicy, Options, WriteBatch,
};

mod common;
use common::keys::{op_value, random_varlen_key, show, varlen_key};
use common::levels::full_levels;
use common::model::{Model, check_scan};
use common::scratch_dir;

/// Distinct keys in the key space: small, so overwrites and deletes collide.
const KEY_SPACE: u64 = 900;

/// Keys of the space, and one in 20 outside it: before, after, between.
fn random_key(rng: &mut SplitMix64) -> Vec<u8> {
    random_varlen_key(rng, 20, KEY_SPACE, &[0])
}

fn random_bound(rng: &mut SplitMix64) -> Bound<Vec<u8>> {
    common::model::random_bound(rng, random_key)
}

/// A value naming its key and the op that wrote it (so a stale or misplaced
/// value is recognisable), of varied length, sometimes empty.
fn value(rng: &mut SplitMix64, k: &[u8], op: usize) -> Vec<u8> {
    let len = match rng.below(10) {
        0 => 0,
        1..=6 => rng.below(64) as usize,
        7 | 8 => 64 + rng.below(300) as usize,
        _ => 400 + rng.below(1600) as usize,
    };
    op_value(k, op, len)
}

fn options(rng: &mut SplitMix64, background: bool) -> Options {
    let filters = match rng.below(4) {
        0 => FilterOptions::none(),
        1 => FilterOptions::uniform(Some(FilterPolicy::bloom(6.0))),
        _ => FilterOptions::default(),
    };
    Options::default()
        .write_buffer_size([4096, 8192, 16384][rng.below(3) as usize])
        .target_file_size(4096)
        .level1_max_bytes(16 << 10)
        .level_size_multiplier(2 + rng.below(3))
        .l0_compaction_trigger(2 + rng.below(3) as usize)
        .block_size([256, 1024, 4096][rng.below(3) as usize])
        .block_cache_capacity([0, 16 << 10, 1 << 20][rng.below(3) as usize])
        .background_compaction(background)
        .filters(filters)
        // Two-level indexes, held or each partition read on demand.
        .index_partition_bytes([0, 128, 128][rng.below(3) as usize])
        .metadata_memory_budget([None, Some(0), Some(16 << 10)][rng.below(3) as usize])
        .compression(match rng.below(4) {
            0 => CompressionOptions::default(),
            1 if cfg!(feature = "zstd") => CompressionOptions::uniform(Compression::Zstd(1)),
            1 => CompressionOptions::uniform(Compression::Lz4),
            _ => CompressionOptions::none(),
        })
}

fn check_all(db: &Db, model: &Model, ctx: &str) {
    check_scan(db, model, &Bound::Unbounded, &Bound::Unbounded, ctx);
    for (k, v) in model {
        let got = db.get(k).unwrap_or_else(|e| panic!("{ctx}: get error {e}"));
        assert_eq!(got.as_deref(), Some(v.as_slice()), "{ctx}: key {}", show(k));
    }
}

fn levels_with_files(db: &Db) -> (usize, usize) {
    let full = full_levels(&db.stats());
    (full.len(), full.last().copied().unwrap_or(0))
}

/// With dynamic level sizes: L0 compacts into the base level, the levels
/// between L1 and the base are empty, and the base is no deeper than the one
/// the bottom level's size calls for (`settled`, after maintenance: exactly
/// that one).
fn check_dynamic_shape(db: &Db, opts: &Options, settled: bool, ctx: &str) -> usize {
    let s = db.stats();
    let bottom = opts.max_levels - 1;
    let base = s.base_level;
    assert!((1..=bottom).contains(&base), "{ctx}: base {base}");
    for l in 1..base {
        assert_eq!(
            s.levels[l].files, 0,
            "{ctx}: level {l} above base {base} has files"
        );
    }
    let (want, _) = opts.dynamic_level_targets(s.levels[bottom].data_bytes);
    assert!(base <= want, "{ctx}: base {base}, bottom calls for {want}");
    if settled {
        assert_eq!(base, want, "{ctx}: levels above the base hold data");
    }
    base
}

/// Runs one seed; returns the most levels holding files at once and the
/// deepest level reached.
fn run(seed: u64, ops: usize, background: bool, dir: &Path) -> (usize, usize) {
    run_with(seed, ops, background, false, dir).0
}

/// [`run`], optionally with dynamic level sizes; then also returns the
/// shallowest base level seen and the levels ≥ 1 holding files at the end.
fn run_with(
    seed: u64,
    ops: usize,
    background: bool,
    dynamic: bool,
    dir: &Path,
) -> ((usize, usize), usize, Vec<usize>) {
    let mut rng = SplitMix64::new(seed);
    let mut opts = options(&mut rng, background);
    opts.dynamic_level_bytes = dynamic;
    let mut min_base = usize::MAX;
    let mut db = Db::open(dir, opts.clone()).unwrap();
    let mut model = Model::new();
    let mut recent: Vec<String> = Vec::new();
    let (mut max_levels, mut deepest) = (0, 0);
    for op in 0..ops {
        let ctx =
            || format!("seed {seed} bg {background} op {op} (opts {opts:?}) recent {recent:?}");
        let dice = rng.below(1000);
        let desc: String;
        match dice {
            0..=349 => {
                let k = random_key(&mut rng);
                let v = value(&mut rng, &k, op);
                desc = format!("put {} ({} B)", String::from_utf8_lossy(&k), v.len());
                db.put(&k, &v).unwrap_or_else(|e| panic!("{}: {e}", ctx()));
                model.insert(k, v);
            }
            350..=479 => {
                let k = random_key(&mut rng);
                desc = format!("delete {}", String::from_utf8_lossy(&k));
                db.delete(&k).unwrap_or_else(|e| panic!("{}: {e}", ctx()));
                model.remove(&k);
            }
            480..=559 => {
                let n = 1 + rng.below(12);
                let mut b = WriteBatch::new();
                let mut applied = Vec::new();
                for _ in 0..n {
                    let k = random_key(&mut rng);
                    if rng.below(4) == 0 {
                        b.delete(&k);
                        applied.push((k, None));
                    } else {
                        let v = value(&mut rng, &k, op);
                        b.put(&k, &v);
                        applied.push((k, Some(v)));
                    }
                }
                desc = format!("batch of {n}");
                db.write(b).unwrap_or_else(|e| panic!("{}: {e}", ctx()));
                // Later ops of a batch win over earlier ones on the same key.
                for (k, v) in applied {
                    match v {
                        Some(v) => model.insert(k, v),
                        None => model.remove(&k),
                    };
                }
            }
            560..=819 => {
                let k = random_key(&mut rng);
                desc = format!("get {}", String::from_utf8_lossy(&k));
                let got = db.get(&k).unwrap_or_else(|e| panic!("{}: {e}", ctx()));
                assert_eq!(
                    got.as_deref(),
                    model.get(&k).map(Vec::as_slice),
                    "{}: get {}",
                    ctx(),
                    String::from_utf8_lossy(&k)
                );
            }
            820..=919 => {
                let lo = random_bound(&mut rng);
                let hi = random_bound(&mut rng);
                desc = format!("scan {lo:?}..{hi:?}");
                check_scan(&db, &model, &lo, &hi, &ctx());
            }
            920..=954 => {
                desc = "flush".into();
                db.flush().unwrap_or_else(|e| panic!("{}: {e}", ctx()));
            }
            955..=961 => {
                desc = "compact".into();
                db.compact().unwrap_or_else(|e| panic!("{}: {e}", ctx()));
                if dynamic && !background {
                    // Everything is in one level (none if all was deleted).
                    let full = full_levels(&db.stats());
                    assert!(full.len() <= 1, "{}: after compact {full:?}", ctx());
                }
            }
            962..=991 => {
                desc = "maintain".into();
                db.maintain().unwrap_or_else(|e| panic!("{}: {e}", ctx()));
                if dynamic && !background {
                    check_dynamic_shape(&db, &opts, true, &ctx());
                }
            }
            _ => {
                desc = "reopen".into();
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
            let (n, d) = levels_with_files(&db);
            max_levels = max_levels.max(n);
            deepest = deepest.max(d);
            if dynamic && !background {
                let ctx = format!("seed {seed} op {op} (opts {opts:?}) recent {recent:?}");
                min_base = min_base.min(check_dynamic_shape(&db, &opts, false, &ctx));
            }
        }
    }
    let ctx = format!("seed {seed} bg {background} dyn {dynamic} end");
    check_all(&db, &model, &ctx);
    db.verify().unwrap();
    if dynamic {
        db.maintain().unwrap();
        min_base = min_base.min(check_dynamic_shape(&db, &opts, true, &ctx));
    }
    let end_levels: Vec<usize> = full_levels(&db.stats())
        .into_iter()
        .filter(|&l| l > 0)
        .collect();
    db.close().unwrap();
    let db = Db::open(dir, opts).unwrap();
    db.verify().unwrap();
    check_all(&db, &model, &format!("{ctx} after reopen"));
    ((max_levels, deepest), min_base, end_levels)
}

fn run_seeds(background: bool) {
    let seeds: Vec<u64> = (0..16).map(|i| 0x5eed_0000 + i).collect();
    let mut shapes = Vec::new();
    for &seed in &seeds {
        let dir = scratch_dir();
        shapes.push(run(seed, 3000, background, dir.path()));
    }
    eprintln!("bg {background}: shapes {shapes:?}");
    // The sizes are small enough that the tree grows several levels deep.
    let deep = shapes.iter().filter(|(n, _)| *n >= 3).count();
    assert!(
        deep >= seeds.len() / 2 && shapes.iter().any(|(_, d)| *d >= 3),
        "only {deep} of {} seeds reached 3 levels with files: {shapes:?}",
        seeds.len()
    );
}

/// The model test with dynamic level sizes: the data fills the tree from the
/// bottom level up, the levels above the base stay empty.
fn run_seeds_dynamic(background: bool, n: u64) {
    let mut shapes = Vec::new();
    for i in 0..n {
        let dir = scratch_dir();
        shapes.push(run_with(0xd1a_0000 + i, 3000, background, true, dir.path()));
    }
    eprintln!("dynamic bg {background}: (shape, min base, end levels) {shapes:?}");
    let bottom = Options::default().max_levels - 1;
    for ((_, deepest), min_base, end) in &shapes {
        // Data reaches the last level, and never a level above the base.
        assert_eq!(*deepest, bottom, "{shapes:?}");
        if !background {
            assert!(end.iter().all(|&l| l >= *min_base), "{shapes:?}");
        }
    }
    // The tree grows past one level below L0 and the base moves up from the
    // bottom, yet stays below L1.
    assert!(
        shapes
            .iter()
            .any(|(_, b, end)| *b < bottom && end.len() >= 2),
        "{shapes:?}"
    );
    assert!(shapes.iter().all(|(_, b, _)| *b > 1), "{shapes:?}");
}

#[test]
fn model_dynamic_levels_background_off() {
    run_seeds_dynamic(false, 6);
}

#[test]
fn model_dynamic_levels_background_on() {
    run_seeds_dynamic(true, 3);
}

#[test]
fn model_background_compaction_off() {
    run_seeds(false);
}

#[test]
fn model_background_compaction_on() {
    run_seeds(true);
}

/// Scan edge cases a random walk may miss: empty and inverted ranges, bounds
/// equal to existing keys, prefixes of keys.
#[test]
fn scan_edge_bounds() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), common::options::tiny()).unwrap();
    let mut model = Model::new();
    for i in 0..300u64 {
        let k = varlen_key(i);
        let v = format!("v{i}").into_bytes();
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    for i in (0..300u64).step_by(4) {
        db.delete(varlen_key(i)).unwrap();
        model.remove(&varlen_key(i));
    }
    let probes = [
        varlen_key(0),
        varlen_key(1),
        varlen_key(2),
        varlen_key(150),
        varlen_key(299),
        b"k".to_vec(),
    ];
    for mem_or_disk in 0..2 {
        if mem_or_disk == 1 {
            db.compact().unwrap();
        }
        for a in &probes {
            for b in &probes {
                for lo in [
                    Bound::Included(a.clone()),
                    Bound::Excluded(a.clone()),
                    Bound::Unbounded,
                ] {
                    for hi in [
                        Bound::Included(b.clone()),
                        Bound::Excluded(b.clone()),
                        Bound::Unbounded,
                    ] {
                        check_scan(&db, &model, &lo, &hi, "edge");
                    }
                }
            }
        }
    }
}
