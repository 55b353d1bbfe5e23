//! Exact accounting: the read-path counters of `stats()` and `file_stats()`
//! must equal what the lookups did, computed independently from the files'
//! key ranges; the write counters must equal the bytes the user wrote and
//! the sizes of the files flushes and compactions made. Counters, not
//! timings; the block cache is off so every data block read is a disk read.

use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, FileStats, FilterOptions, FilterPolicy, IoCounters, Options, WriteBatch};

mod common;
use common::keys::key;
use common::scratch_dir;

fn options(filters: FilterOptions) -> Options {
    common::options::small()
        .level_size_multiplier(3)
        .block_size(512)
        .block_cache_capacity(0)
        .filters(filters)
}

/// A store with several levels and some L0 files, everything flushed. Keys
/// written more than once live in several files (all versions equal here,
/// since only the newest is ever read). Returns the present key numbers.
fn build(db: &Db) -> Vec<u64> {
    let mut rng = SplitMix64::new(0xACC);
    let mut present = Vec::new();
    for round in 0..4 {
        for _ in 0..1500 {
            let i = 2 * rng.below(4000);
            db.put(key(i), format!("v{i}")).unwrap();
            present.push(i);
        }
        if round < 3 {
            db.maintain().unwrap();
        } else {
            db.flush().unwrap();
        }
    }
    present.sort_unstable();
    present.dedup();
    let s = db.stats();
    assert!(s.levels[0].files >= 2, "{:?}", s.levels);
    assert!(
        s.levels.iter().skip(1).filter(|l| l.files > 0).count() >= 2,
        "{:?}",
        s.levels
    );
    present
}

/// For a lookup of `k` that finds nothing: (files considered, files whose
/// range covers `k`), from the files' key ranges and the engine's rule
/// (every L0 file; on deeper levels the first file whose largest key ≥ k).
fn candidates(files: &[FileStats], k: &[u8]) -> (u64, Vec<u64>) {
    let mut considered = 0;
    let mut covering = Vec::new();
    let deepest = files.iter().map(|f| f.level).max().unwrap_or(0);
    for level in 0..=deepest {
        let mut on_level: Vec<&FileStats> = files.iter().filter(|f| f.level == level).collect();
        if level > 0 {
            on_level.sort_by(|a, b| a.smallest.cmp(&b.smallest));
            on_level = on_level
                .into_iter()
                .filter(|f| f.largest.as_slice() >= k)
                .take(1)
                .collect();
        }
        for f in on_level {
            considered += 1;
            if f.smallest.as_slice() <= k && k <= f.largest.as_slice() {
                covering.push(f.number);
            }
        }
    }
    (considered, covering)
}

/// Keys of odd numbers ([`build`] writes even ones), and keys outside
/// every file's range.
fn missing_keys() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = (0..2000).map(|i| key(4 * i + 1)).collect();
    // Outside every file's range: before, after.
    v.push(b"a".to_vec());
    v.push(b"key".to_vec());
    v.push(b"zzz".to_vec());
    v
}

#[test]
fn without_filters_a_missing_key_reads_one_block_per_covering_file() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options(FilterOptions::none())).unwrap();
    build(&db);
    let files = db.file_stats();
    db.reset_stats();
    let (mut considered, mut covering_total) = (0, 0);
    let mut per_file: std::collections::HashMap<u64, u64> = Default::default();
    let keys = missing_keys();
    for k in &keys {
        assert_eq!(db.get(k).unwrap(), None);
        let (c, cov) = candidates(&files, k);
        considered += c;
        covering_total += cov.len() as u64;
        for n in cov {
            *per_file.entry(n).or_default() += 1;
        }
    }
    let s = db.stats();
    assert_eq!(s.gets, keys.len() as u64);
    assert_eq!(s.gets_found, 0);
    assert_eq!(s.memtable_answers, 0);
    assert!(
        covering_total > keys.len() as u64,
        "several candidates per key"
    );
    assert_eq!(s.missing_get_block_reads, covering_total);
    assert_eq!(s.missing_get_disk_reads, covering_total);
    assert_eq!(s.total.block_reads, covering_total);
    assert_eq!(s.total.cache_hits, 0);
    assert_eq!(s.total.files_considered, considered);
    assert_eq!(s.total.key_range_skips, considered - covering_total);
    assert_eq!(s.total.unfiltered_reads, covering_total);
    assert_eq!(s.total.filter_checks, 0);
    // Without filters the model predicts one read per covering file.
    assert!((s.missing_get_predicted_reads - covering_total as f64).abs() < 1e-6);
    for f in db.file_stats() {
        let want = per_file.get(&f.number).copied().unwrap_or(0);
        assert_eq!(f.io.block_reads, want, "{f:?}");
        assert_eq!(f.io.unfiltered_reads, want, "{f:?}");
        assert!(f.io.bytes_read >= want * 16, "{f:?}");
    }
    // Levels add up to the total.
    let mut sum = IoCounters::default();
    for l in &s.levels {
        sum.add(&l.io);
    }
    assert_eq!(sum, s.total);
}

#[test]
fn with_filters_missing_key_reads_equal_false_positives() {
    let dir = scratch_dir();
    // Few bits per key: plenty of false positives to count.
    let filters = FilterOptions::uniform(Some(FilterPolicy::blocked512(3.0)));
    let db = Db::open(dir.path(), options(filters)).unwrap();
    build(&db);
    let files = db.file_stats();
    db.reset_stats();
    let keys = missing_keys();
    let (mut considered, mut covering_total) = (0, 0);
    for k in &keys {
        assert_eq!(db.get(k).unwrap(), None);
        let (c, cov) = candidates(&files, k);
        considered += c;
        covering_total += cov.len() as u64;
    }
    let s = db.stats();
    let t = s.total;
    assert!(t.false_positives > 0 && t.filter_negatives > 0, "{t:?}");
    assert_eq!(s.missing_get_block_reads, t.false_positives, "{t:?}");
    assert_eq!(t.block_reads, t.false_positives, "{t:?}");
    assert_eq!(t.filter_checks, covering_total, "{t:?}");
    assert_eq!(t.filter_negatives + t.false_positives, t.filter_checks);
    assert_eq!(t.filter_positives, t.false_positives);
    assert_eq!(t.files_considered, considered);
    assert_eq!(t.key_range_skips, considered - covering_total);
    assert_eq!(t.unfiltered_reads + t.unusable_filter_reads, 0);
    for f in db.file_stats() {
        let io = f.io;
        assert_eq!(io.block_reads, io.false_positives, "{f:?}");
        assert_eq!(io.filter_negatives + io.false_positives, io.filter_checks);
        assert_eq!(io.observed_fpr().is_some(), io.filter_checks > 0);
    }
    // The prediction is the sum of the covering files' modelled FPRs.
    let fpr: std::collections::HashMap<u64, f64> =
        files.iter().map(|f| (f.number, f.predicted_fpr)).collect();
    let predicted: f64 = keys
        .iter()
        .flat_map(|k| candidates(&files, k).1)
        .map(|n| fpr[&n])
        .sum();
    assert!(
        (s.missing_get_predicted_reads - predicted).abs() < 1e-6 * keys.len() as f64,
        "{} vs {predicted}",
        s.missing_get_predicted_reads
    );
}

#[test]
fn existing_keys_read_one_block_in_the_file_that_holds_them() {
    let dir = scratch_dir();
    let filters = FilterOptions::uniform(Some(FilterPolicy::blocked512(10.0)));
    let db = Db::open(dir.path(), options(filters)).unwrap();
    let present = build(&db);
    db.reset_stats();
    for &i in &present {
        let before = db.file_stats();
        let v = db.get(key(i)).unwrap();
        assert_eq!(v.as_deref(), Some(format!("v{i}").as_bytes()));
        let after = db.file_stats();
        // Exactly one file found it (a true positive) with one block read;
        // every other block read was a false positive of a file above it.
        let mut true_pos = 0;
        for (b, a) in before.iter().zip(&after) {
            assert_eq!(a.number, b.number);
            let d = |f: fn(&IoCounters) -> u64| f(&a.io) - f(&b.io);
            let tp = d(|c| c.filter_positives) - d(|c| c.false_positives);
            if tp == 1 {
                true_pos += 1;
                assert_eq!(d(|c| c.block_reads), 1, "{a:?}");
                assert!(a.smallest <= key(i) && key(i) <= a.largest);
            } else {
                assert_eq!(d(|c| c.block_reads), d(|c| c.false_positives), "{a:?}");
            }
        }
        assert_eq!(true_pos, 1, "key {i}");
    }
    let s = db.stats();
    let n = present.len() as u64;
    assert_eq!(s.gets_found, n);
    assert_eq!(s.total.block_reads, n + s.total.false_positives);
    assert_eq!(s.total.filter_positives - s.total.false_positives, n);
    assert_eq!(s.missing_get_block_reads, 0);
}

#[test]
fn memtable_answers_cost_no_io_and_reset_zeroes_everything() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options(FilterOptions::default())).unwrap();
    build(&db);
    db.put(b"fresh", b"1").unwrap();
    db.delete(key(0)).unwrap();
    db.reset_stats();
    assert_eq!(db.get(b"fresh").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(key(0)).unwrap(), None);
    let s = db.stats();
    assert_eq!((s.gets, s.gets_found, s.memtable_answers), (2, 1, 2));
    assert_eq!(s.total, IoCounters::default());
    // Lots of traffic, then a reset: every counter is zero again.
    for k in missing_keys().iter().take(300) {
        db.get(k).unwrap();
    }
    for i in 0..300 {
        db.get(key(2 * i)).unwrap();
    }
    assert_ne!(db.stats().total, IoCounters::default());
    db.reset_stats();
    let s = db.stats();
    assert_eq!(
        (
            s.gets,
            s.gets_found,
            s.memtable_answers,
            s.missing_get_block_reads,
            s.missing_get_disk_reads
        ),
        (0, 0, 0, 0, 0)
    );
    assert_eq!(s.missing_get_predicted_reads, 0.0);
    assert_eq!(s.total, IoCounters::default());
    assert!(s.levels.iter().all(|l| l.io == IoCounters::default()));
    assert!(
        db.file_stats()
            .iter()
            .all(|f| f.io == IoCounters::default())
    );
}

fn level_bytes(db: &Db, level: usize) -> u64 {
    db.file_stats()
        .iter()
        .filter(|f| f.level == level)
        .map(|f| f.file_bytes)
        .sum()
}

#[test]
fn write_counters_equal_user_bytes_and_the_files_written() {
    let dir = scratch_dir();
    // Well under the write buffer: nothing is flushed until asked.
    let opts = options(FilterOptions::default()).write_buffer_size(1 << 20);
    let db = Db::open(dir.path(), opts).unwrap();
    let mut user = 0u64;
    for round in 0..2u64 {
        for i in 0..300u64 {
            let (k, v) = (key(i), format!("value-{round}-{i}"));
            user += (k.len() + v.len()) as u64;
            db.put(k, v).unwrap();
        }
        let mut b = WriteBatch::new();
        b.put("batch-key", "batch-value");
        b.delete(key(round));
        user += (9 + 11 + key(round).len()) as u64;
        db.write(b).unwrap();
        assert!(db.put("", "rejected").is_err());
        assert_eq!(db.stats().user_bytes_written, user);
        assert_eq!(db.stats().bytes_flushed, level_bytes(&db, 0));
        db.flush().unwrap();
    }
    let s = db.stats();
    assert_eq!(s.user_bytes_written, user);
    assert_eq!((s.flushes, s.levels[0].files), (2, 2));
    assert_eq!(s.bytes_flushed, level_bytes(&db, 0));
    assert_eq!(s.bytes_compacted, 0);
    // Both L0 files merge into fresh L1 files, written once each.
    db.compact().unwrap();
    let s = db.stats();
    assert_eq!(s.levels[0].files, 0);
    assert!(s.compactions >= 1);
    assert!(s.bytes_flushed > 0);
    assert_eq!(s.bytes_compacted, level_bytes(&db, 1));
    let wa = s.write_amplification().unwrap();
    assert_eq!(
        wa,
        (s.bytes_flushed + s.bytes_compacted) as f64 / s.user_bytes_written as f64
    );
    assert!(wa >= 1.0, "{wa}");
    // Write counters count since open: a reset of the lookup counters keeps them.
    db.reset_stats();
    assert_eq!(db.stats().write_amplification(), Some(wa));
}

#[test]
fn per_level_writes_add_up_to_the_totals_and_to_each_levels_bytes() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options(FilterOptions::default())).unwrap();
    let mut rng = SplitMix64::new(7);
    for _ in 0..6 {
        for _ in 0..1500 {
            let i = rng.next_u64() % 20_000;
            db.put(key(i), format!("value-{i:08}")).unwrap();
        }
        db.flush().unwrap();
        db.maintain().unwrap();
    }
    let s = db.stats();
    let w: Vec<_> = s.levels.iter().map(|l| l.writes).collect();
    assert!(s.levels.len() >= 4 && s.levels[3].files > 0, "{s}");
    // L0 is written by flushes only; the levels below by compactions.
    assert_eq!(
        (w[0].jobs, w[0].bytes_written),
        (s.flushes, s.bytes_flushed)
    );
    assert_eq!(w[0].bytes_read_above + w[0].files_moved + w[0].moves, 0);
    let compacted: u64 = w[1..].iter().map(|x| x.bytes_written).sum();
    assert_eq!(compacted, s.bytes_compacted);
    let jobs: u64 = w[1..].iter().map(|x| x.jobs + x.moves).sum();
    assert_eq!(jobs, s.compactions);
    assert!(
        w.iter().any(|x| x.files_moved > 0),
        "some file was moved: {s}"
    );
    assert!(w.iter().all(|x| x.moves <= x.files_moved), "{s}");
    // Each level holds what came in (written or moved) less what was merged
    // away here or taken down to the next level (maintain compacts each
    // level into the one below it).
    for l in 0..s.levels.len() {
        let below = w.get(l + 1).copied().unwrap_or_default();
        let held = w[l].bytes_written + w[l].bytes_moved
            - w[l].bytes_read_here
            - below.bytes_read_above
            - below.bytes_moved;
        assert_eq!(held, level_bytes(&db, l), "L{l}: {s}");
    }
    assert_eq!(
        w[1].amplification(),
        Some(w[1].bytes_written as f64 / w[1].bytes_read_above as f64)
    );
    assert_eq!(w[0].amplification(), None, "a flush reads no table");
    // Since open, like the totals: a reset of the lookup counters keeps them.
    db.reset_stats();
    assert_eq!(db.stats().levels[1].writes, w[1]);
    assert!(s.to_string().contains("moved in"), "{s}");
}

#[test]
fn l0_files_that_overlap_nothing_move_down_unwritten() {
    let dir = scratch_dir();
    let opts = options(FilterOptions::default())
        .target_file_size(64 << 10)
        .compression(bloomlsm::CompressionOptions::none());
    let db = Db::open(dir.path(), opts).unwrap();
    // Ascending keys through 8 KiB memtables: several L0 files, each over
    // keys after the last one's, and together over L1's 16 KiB target. Their
    // compaction meets nothing in L1 and they meet nothing of each other,
    // so they go down as they are, in one move.
    for i in 0..1000 {
        db.put(key(2 * i), format!("value-{i:08}")).unwrap();
    }
    db.flush().unwrap();
    let numbers = |db: &Db| {
        let mut v: Vec<u64> = db.file_stats().iter().map(|f| f.number).collect();
        v.sort_unstable();
        v
    };
    let flushed = numbers(&db);
    assert!(flushed.len() >= 4, "{flushed:?}");
    assert!(db.file_stats().iter().all(|f| f.level == 0));
    db.maintain().unwrap();
    let s = db.stats();
    assert_eq!(numbers(&db), flushed, "the same files, not copies: {s}");
    assert!(db.file_stats().iter().all(|f| f.level >= 1), "{s}");
    assert_eq!(s.bytes_compacted, 0, "{s}");
    let l1 = s.levels[1].writes;
    assert_eq!(
        (l1.jobs, l1.moves, l1.files_moved),
        (0, 1, flushed.len() as u64)
    );
    assert_eq!(
        db.get(key(1998)).unwrap().as_deref(),
        Some(&b"value-00000999"[..])
    );
    // Files over the same keys meet those below them: merges.
    for i in 0..1000 {
        db.put(key(2 * i + 1), format!("value-{i:08}")).unwrap();
    }
    db.flush().unwrap();
    db.maintain().unwrap();
    assert!(db.stats().bytes_compacted > 0);
    assert_eq!(
        db.get(key(1999)).unwrap().as_deref(),
        Some(&b"value-00000999"[..])
    );
}
