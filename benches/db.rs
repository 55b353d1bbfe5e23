//! The store's read path on a multi-level store: fill 1M random 16-byte keys
//! with 100-byte values, then time gets of existing and of missing keys with
//! the block cache off (data blocks come from the OS page cache), next to the
//! store's own counters: data-block reads per missing get, measured and
//! predicted (Σ of the probed files' modelled FPRs).
//!
//! Each filter configuration runs with fixed level sizes and again with
//! `dynamic_level_bytes` (names ending in `_dyn`), which fills the levels from
//! the bottom up. The counters are taken twice per store: as the fill leaves
//! it, and after three more flushes (`+3L0`: three L0 runs, as a store taking
//! writes holds between compactions). Each line also shows the share of
//! missing gets that probe each level and the *bound*: the fewest wasted reads
//! per missing get any per-run allocation of 10 bits/key on average can give
//! at those probe rates (`math::monkey_allocation_weighted`).
//!
//! `cargo bench --bench db`; `BLOOMLSM_BENCH_KEYS=N` changes the key count;
//! `cargo bench --bench db -- nomatch` skips the timings and prints only the
//! counters.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bloomlsm::filter::math;
use bloomlsm::workload::{SplitMix64, absent_key, present_key};
use bloomlsm::{Db, FilterKind, FilterOptions, FilterPolicy, Options};
use criterion::Criterion;

#[path = "support/fill.rs"]
mod fill;

const SEED: u64 = 7;

fn keys() -> u64 {
    std::env::var("BLOOMLSM_BENCH_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

/// Level shape: small L1 and a ×8 fan-out, so that 1M keys fill four levels
/// below L0 (about 4k, 32k, 256k and the rest). `dynamic`: level sizes from
/// the bottom up instead.
fn options(filters: FilterOptions, dynamic: bool) -> Options {
    Options::default()
        .dynamic_level_bytes(dynamic)
        .write_buffer_size(2 << 20)
        .target_file_size(512 << 10)
        .level1_max_bytes(512 << 10)
        .level_size_multiplier(8)
        .block_cache_capacity(0)
        .background_compaction(false)
        .filters(filters)
        // Raw tables, as the README's recorded numbers were measured.
        .compression(bloomlsm::CompressionOptions::none())
}

fn fill(dir: &std::path::Path, filters: FilterOptions, dynamic: bool, n: u64) -> (Db, Duration) {
    let db = Db::open(dir, options(filters, dynamic)).unwrap();
    let t = Instant::now();
    fill::fill(&db, SEED, n, 100_000);
    (db, t.elapsed())
}

fn main() {
    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let n = keys();
    let configs: [(&str, FilterOptions); 3] = [
        ("none", FilterOptions::none()),
        (
            "blocked512_10",
            FilterOptions::uniform(Some(FilterPolicy::blocked512(10.0))),
        ),
        (
            "monkey_blocked512_10",
            FilterOptions::monkey(FilterKind::Blocked512, 10.0),
        ),
    ];
    let mut summary = Vec::new();
    let runs = [false, true].into_iter().flat_map(|dynamic| {
        configs.iter().map(move |(name, filters)| {
            let name = if dynamic {
                format!("{name}_dyn")
            } else {
                name.to_string()
            };
            (name, filters.clone(), dynamic)
        })
    });
    for (name, filters, dynamic) in runs {
        let dir = tempfile::tempdir().unwrap();
        let (db, load) = fill(dir.path(), filters, dynamic, n);
        let mut g = c.benchmark_group(format!("db_get/{name}"));
        let mut rng = SplitMix64::new(99);
        let present: Vec<[u8; 16]> = (0..4096).map(|_| present_key(SEED, rng.below(n))).collect();
        let absent: Vec<[u8; 16]> = (0..4096).map(|i| absent_key(SEED, i)).collect();
        g.bench_function("existing", |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % present.len();
                black_box(db.get(present[i]).unwrap().is_some())
            })
        });
        g.bench_function("missing", |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % absent.len();
                black_box(db.get(absent[i]).unwrap().is_none())
            })
        });
        g.finish();
        // Counters over a fixed set of missing keys: on the store as the fill
        // left it, then with three more flushes in L0 (a store taking writes:
        // L0 holds up to `l0_compaction_trigger - 1` files between compactions).
        summary.push(missing_gets(&db, &name, Some(load)));
        // A quarter of a write buffer per flush: one L0 file each.
        let per_flush = (options(FilterOptions::none(), dynamic).write_buffer_size / 400) as u64;
        let mut value = vec![0u8; 100];
        for f in 0..3u64 {
            for i in 0..per_flush {
                value[..8].copy_from_slice(&i.to_le_bytes());
                db.put(present_key(SEED, n + f * per_flush + i), &value)
                    .unwrap();
            }
            db.flush().unwrap();
        }
        summary.push(missing_gets(&db, &format!("{name}+3L0"), None));
    }
    c.final_summary();
    println!("\nStore counters ({n} keys, {MISSING} missing gets each):");
    for line in summary {
        println!("{line}");
    }
    println!(
        "(bound: the fewest wasted reads per missing get any per-run allocation of the same \
         memory (10 b/k on average) can give, at the probe rates measured on that store; \
         rates: the share of missing gets that probe each level's filter, L0 counted per file)"
    );
}

/// Missing gets per measurement.
const MISSING: u64 = 200_000;

/// Resets the counters, runs [`MISSING`] gets of absent keys and returns a
/// summary line: reads per missing get, measured and predicted, the shape, the
/// probe rate of each run, and the bound for this shape.
fn missing_gets(db: &Db, name: &str, load: Option<Duration>) -> String {
    db.reset_stats();
    for i in 0..MISSING {
        assert!(db.get(absent_key(SEED, i)).unwrap().is_none());
    }
    let s = db.stats();
    let probed = |io: &bloomlsm::IoCounters| {
        (io.files_considered - io.key_range_skips) as f64 / MISSING as f64
    };
    // Runs: each L0 file, then each deeper level.
    let files = db.file_stats();
    let mut keys: Vec<u64> = Vec::new();
    let mut rates: Vec<f64> = Vec::new();
    for f in files.iter().filter(|f| f.level == 0) {
        keys.push(f.entries);
        rates.push(probed(&f.io));
    }
    let mut shape = Vec::new();
    let l0 = files.iter().filter(|f| f.level == 0).count();
    if l0 > 0 {
        shape.push(format!("L0:{l0}f"));
    }
    for l in s.levels.iter().filter(|l| l.files > 0 && l.level > 0) {
        keys.push(l.entries);
        rates.push(probed(&l.io));
        shape.push(format!(
            "L{}:{}f/{}k/{:.1}b/k/fpr{:.3}%/probed{:.2}",
            l.level,
            l.files,
            l.entries / 1000,
            l.filter_bits_per_key(),
            l.predicted_fpr * 100.0,
            probed(&l.io)
        ));
    }
    let kind = FilterKind::Blocked512;
    let bits = math::monkey_allocation_weighted(kind, &keys, &rates, 10.0);
    let bound: f64 = bits
        .iter()
        .zip(&rates)
        .map(|(&b, &r)| r * math::best_fpr(kind, b))
        .sum();
    let uniform: f64 = rates.iter().map(|r| r * math::best_fpr(kind, 10.0)).sum();
    format!(
        "{name:<28} {}filter {:>5.2} MiB {:>5.2} b/k  reads/missing get {:.4} (predicted {:.4})  files probed {:.2}  \
         bound {:.4} ({:.2}x of uniform 10 b/k {:.4})  base L{}  shape {}",
        load.map_or(" ".repeat(13), |d| format!(
            "load {:>5.1}s  ",
            d.as_secs_f64()
        )),
        s.filter_bytes as f64 / (1u64 << 20) as f64,
        s.filter_bytes as f64 * 8.0 / keys.iter().sum::<u64>() as f64,
        s.block_reads_per_missing_get(),
        s.predicted_block_reads_per_missing_get(),
        rates.iter().sum::<f64>(),
        bound,
        bound / uniform,
        uniform,
        s.base_level,
        shape.join(" ")
    )
}
