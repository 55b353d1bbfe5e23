//! Range scans forward and backward: a store of 200k random 16-byte keys with
//! 100-byte values spread over several levels (plus a memtable and L0 files),
//! block cache off (blocks come from the OS page cache). Times a full scan
//! each way and 1,000-entry scans from a random key each way (forward: a
//! `seek` then `next`; backward: `scan(..=k).rev()`), at the latest state.
//! The reverse path decodes each data block forward into a buffer and yields
//! it from the end (docs/design.md, "Iterators").
//!
//! `cargo bench --bench scan`; `BLOOMLSM_BENCH_KEYS=N` changes the key count.

use std::hint::black_box;
use std::time::Duration;

use bloomlsm::workload::present_key;
use bloomlsm::{Db, FilterOptions, Options};
use criterion::Criterion;

#[path = "support/fill.rs"]
mod fill;

const SEED: u64 = 7;

fn main() {
    let n: u64 = std::env::var("BLOOMLSM_BENCH_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default()
        .write_buffer_size(1 << 20)
        .target_file_size(256 << 10)
        .level1_max_bytes(256 << 10)
        .level_size_multiplier(8)
        .dynamic_level_bytes(false)
        .block_cache_capacity(0)
        .background_compaction(false)
        .filters(FilterOptions::default());
    let db = Db::open(dir.path(), opts).unwrap();
    let mut rng = fill::fill(&db, SEED, n, 50_000);
    let mut value = vec![0u8; 100];
    // Newer versions of some keys in two L0 files and in the memtable.
    for round in 0..3 {
        for _ in 0..2000 {
            rng.fill(&mut value);
            db.put(present_key(SEED, rng.below(n)), &value).unwrap();
        }
        if round < 2 {
            db.flush().unwrap();
        }
    }
    let s = db.stats();
    let shape: Vec<usize> = s.levels.iter().map(|l| l.files).collect();
    println!(
        "{n} keys; files per level {shape:?}; memtable {} bytes",
        s.memtable_bytes
    );
    let starts: Vec<[u8; 16]> = (0..256).map(|_| present_key(SEED, rng.below(n))).collect();

    let mut g = c.benchmark_group("db_scan");
    g.bench_function("full_forward", |b| {
        b.iter(|| black_box(db.scan(..).count()))
    });
    g.bench_function("full_reverse", |b| {
        b.iter(|| black_box(db.scan(..).rev().count()))
    });
    g.bench_function("1000_forward", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % starts.len();
            let mut it = db.scan(..);
            it.seek(starts[i]);
            black_box(it.take(1000).count())
        })
    });
    g.bench_function("1000_reverse", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % starts.len();
            black_box(db.scan(..=&starts[i][..]).rev().take(1000).count())
        })
    });
    g.finish();
    c.final_summary();
}
