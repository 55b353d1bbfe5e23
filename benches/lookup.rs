//! Point lookups on a store of the `bench` command's shape (16-byte keys,
//! 100-byte values, 2 MiB files, L1 4 MiB ×10, blocked512 at 10 bits/key,
//! block cache off): missing gets one at a time, the same missing keys by
//! `multi_get` (1,024 a call), and existing gets, each timed per key.
//!
//! For comparing builds and key counts (lookups that scale, docs/design.md
//! "Read path"): `BLOOMLSM_STORE=DIR` measures an existing store opened
//! read-only — e.g. DIR/blocked10 kept by `bloomlsm bench --keys 10000000
//! --configs blocked10 --dir DIR` (keys of seed 42, `bench`'s default) — so
//! two builds can be run alternately on the same files; without it a store of
//! `BLOOMLSM_BENCH_KEYS` keys (default 10^6) is built first.
//!
//! `BLOOMLSM_LOOKUP_THREADS=N` instead measures how gets scale with
//! threads: N rounds, each timing the same gets from one thread and then
//! split over two (and the other way round in alternate rounds), for
//! missing and existing keys, printing each round's gets/s and the median
//! ratios of two threads to one.
//!
//! Before the timings it prints the latency of a random 64-byte load in a
//! buffer the size of the store's filters (and in one a tenth of that): what
//! a filter probe's cache miss costs at this store's size.
//!
//! `cargo bench --bench lookup`.

use std::hint::black_box;
use std::path::Path;

use bloomlsm::workload::{SplitMix64, absent_key, present_key};
use bloomlsm::{Db, FilterOptions, FilterPolicy, Options, WriteBatch};
use criterion::Criterion;

/// `bloomlsm bench`'s default seed: its stores' keys.
const SEED: u64 = 42;
/// Distinct keys per phase, cycled through.
const LOOKUPS: u64 = 200_000;
const MULTI_GET_BATCH: usize = 1024;

fn options() -> Options {
    Options::default()
        .write_buffer_size(2 << 20)
        .target_file_size(2 << 20)
        .level1_max_bytes(4 << 20)
        .dynamic_level_bytes(false)
        .level_size_multiplier(10)
        .block_cache_capacity(0)
        .background_compaction(false)
        .sync_writes(false)
        .filters(FilterOptions::uniform(Some(FilterPolicy::blocked512(10.0))))
}

/// Writes keys `0..n` of `SEED`'s present family, flushing and compacting on
/// this thread before the memtable would fill.
fn fill(dir: &Path, n: u64) -> Db {
    let opts = options();
    let wbs = opts.write_buffer_size as u64;
    let db = Db::open(dir, opts).unwrap();
    let mut value = vec![0u8; 100];
    let mut rng = SplitMix64::new(SEED);
    let mut i = 0;
    while i < n {
        let mut batch = WriteBatch::new();
        for j in i..(i + 1000).min(n) {
            rng.fill(&mut value);
            batch.put(present_key(SEED, j), &value);
        }
        // A 1,000-entry batch of this workload takes well under 256 KiB.
        if db.stats().memtable_bytes + (256 << 10) >= wbs {
            db.maintain().unwrap();
        }
        db.write(batch).unwrap();
        i = (i + 1000).min(n);
    }
    db.maintain().unwrap();
    db
}

/// Nanoseconds per dependent load of a random 64-byte line in a buffer of
/// `bytes` (a pointer chase through a random cycle of its lines, warmed
/// first): the latency of the level of the memory hierarchy that holds it.
fn line_load_ns(bytes: usize) -> f64 {
    let lines = (bytes / 64).max(2);
    // Sattolo's shuffle: one cycle through every line.
    let mut next: Vec<usize> = (0..lines).collect();
    let mut rng = SplitMix64::new(SEED);
    for i in (1..lines).rev() {
        next.swap(i, rng.below(i as u64) as usize);
    }
    let mut buf = vec![0usize; lines * 8];
    for (i, &n) in next.iter().enumerate() {
        buf[i * 8] = n;
    }
    let mut p = 0;
    for _ in 0..2 * lines {
        p = buf[p * 8];
    }
    const LOADS: u32 = 2_000_000;
    let t = std::time::Instant::now();
    for _ in 0..LOADS {
        p = buf[p * 8];
    }
    black_box(p);
    t.elapsed().as_nanos() as f64 / f64::from(LOADS)
}

fn main() {
    let _tmp;
    let db = match std::env::var_os("BLOOMLSM_STORE") {
        Some(dir) => Db::open_read_only(&dir, options()).unwrap(),
        None => {
            let n = std::env::var("BLOOMLSM_BENCH_KEYS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1_000_000);
            _tmp = tempfile::tempdir().unwrap();
            fill(_tmp.path(), n)
        }
    };
    let s = db.stats();
    let keys: u64 = s.levels.iter().map(|l| l.entries).sum();
    let shape: Vec<String> = s
        .levels
        .iter()
        .filter(|l| l.files > 0)
        .map(|l| format!("L{}:{}f", l.level, l.files))
        .collect();
    println!("lookup: {keys} keys, {}", shape.join(" "));
    assert!(keys > 0, "the store is empty");
    // What one filter probe's cache miss costs at this store's size: a
    // missing get probes a random line of each level's filters, so once
    // they outgrow the caches every get waits for memory at least once.
    let fb = s.filter_bytes as usize;
    println!(
        "dependent random 64-byte loads: {:.1} ns in a buffer the size of the store's filters ({:.2} MiB), {:.1} ns in one a tenth of it",
        line_load_ns(fb),
        fb as f64 / f64::from(1 << 20),
        line_load_ns(fb / 10)
    );

    let missing: Vec<[u8; 16]> = (0..LOOKUPS).map(|i| absent_key(SEED, i)).collect();
    let mut rng = SplitMix64::new(SEED ^ 0x6765_7473);
    let existing: Vec<[u8; 16]> = (0..LOOKUPS)
        .map(|_| present_key(SEED, rng.below(keys)))
        .collect();
    assert!(
        db.get(existing[0]).unwrap().is_some(),
        "not a store of seed {SEED}'s keys"
    );

    if let Some(rounds) = std::env::var("BLOOMLSM_LOOKUP_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        two_threads(&db, &missing, &existing, rounds);
        return;
    }
    if let Some(rounds) = std::env::var("BLOOMLSM_LOOKUP_ROUNDS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        alternate(&db, &missing, rounds);
        return;
    }

    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group(format!("lookup_{keys}"));
    g.bench_function("missing_get", |b| {
        let mut k = missing.iter().cycle();
        b.iter(|| black_box(db.get(k.next().unwrap()).unwrap()))
    });
    g.bench_function("multi_get_missing_per_key", |b| {
        b.iter_custom(|iters| {
            let mut left = iters as usize;
            let mut chunks = missing.chunks(MULTI_GET_BATCH).cycle();
            let t = std::time::Instant::now();
            while left > 0 {
                let c = chunks.next().unwrap();
                let c = &c[..c.len().min(left)];
                black_box(db.multi_get(c).unwrap());
                left -= c.len();
            }
            t.elapsed()
        })
    });
    g.bench_function("existing_get", |b| {
        let mut k = existing.iter().cycle();
        b.iter(|| black_box(db.get(k.next().unwrap()).unwrap()))
    });
    g.finish();
    c.final_summary();
}

/// `BLOOMLSM_LOOKUP_ROUNDS=N`: the missing keys one get at a time, then by
/// `multi_get`, alternately N times in this process (the machine's speed
/// drifts, so each round's ratio compares neighbours); prints each round and
/// the median ratios. Times are the thread's CPU time (on Linux) beside wall
/// time: on a shared 2-core machine the wall clock also counts the time the
/// thread waited for a core.
fn alternate(db: &Db, missing: &[[u8; 16]], rounds: usize) {
    let per_key = |d: std::time::Duration| d.as_nanos() as f64 / missing.len() as f64;
    let timed = |f: &dyn Fn()| {
        let (w, c) = (std::time::Instant::now(), thread_cpu());
        f();
        (per_key(w.elapsed()), per_key(thread_cpu() - c))
    };
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let single = timed(&|| {
            for k in missing {
                black_box(db.get(k).unwrap());
            }
        });
        let multi = timed(&|| {
            for c in missing.chunks(MULTI_GET_BATCH) {
                black_box(db.multi_get(c).unwrap());
            }
        });
        wall.push(single.0 / multi.0);
        cpu.push(single.1 / multi.1);
        println!(
            "round {round}: get {:.0} ns/key wall, {:.0} cpu; multi_get {:.0} wall, {:.0} cpu; {:.2}x wall, {:.2}x cpu",
            single.0,
            single.1,
            multi.0,
            multi.1,
            single.0 / multi.0,
            single.1 / multi.1
        );
    }
    for v in [&mut wall, &mut cpu] {
        v.sort_by(f64::total_cmp);
    }
    println!(
        "median multi_get speed-up: {:.2}x wall, {:.2}x cpu",
        wall[wall.len() / 2],
        cpu[cpu.len() / 2]
    );
}

/// Gets/s of `keys` looked up by `threads` threads, each a contiguous
/// share of them.
fn gets_per_sec(db: &Db, keys: &[[u8; 16]], threads: usize) -> f64 {
    let t = std::time::Instant::now();
    std::thread::scope(|s| {
        for part in keys.chunks(keys.len().div_ceil(threads)) {
            s.spawn(move || {
                for k in part {
                    black_box(db.get(k).unwrap());
                }
            });
        }
    });
    keys.len() as f64 / t.elapsed().as_secs_f64()
}

/// `BLOOMLSM_LOOKUP_THREADS=N`: missing and existing gets from one thread
/// and from two, alternated N times (one first in odd rounds, two in even
/// ones); prints each round and the median ratios of two threads to one.
fn two_threads(db: &Db, missing: &[[u8; 16]], existing: &[[u8; 16]], rounds: usize) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("two threads against one, {cores} cores available");
    for (name, keys) in [("missing", missing), ("existing", existing)] {
        // Warm: the first pass brings the files into the page cache.
        gets_per_sec(db, keys, 2);
        let mut ratios = Vec::new();
        for round in 1..=rounds {
            let (one, two) = if round % 2 == 1 {
                let one = gets_per_sec(db, keys, 1);
                (one, gets_per_sec(db, keys, 2))
            } else {
                let two = gets_per_sec(db, keys, 2);
                (gets_per_sec(db, keys, 1), two)
            };
            ratios.push(two / one);
            println!(
                "{name} round {round}: 1 thread {one:.0} gets/s, 2 threads {two:.0} gets/s, {:.2}x",
                two / one
            );
        }
        ratios.sort_by(f64::total_cmp);
        println!(
            "{name}: median two threads / one {:.2}x (range {:.2}x to {:.2}x)",
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1]
        );
    }
}

/// CPU time of the calling thread (wall time off Linux).
fn thread_cpu() -> std::time::Duration {
    #[cfg(target_os = "linux")]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid timespec for the call to fill.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32);
        }
    }
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed()
}
