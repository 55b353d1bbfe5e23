//! SSTable benchmarks: build throughput and point lookups (present keys,
//! absent keys with and without a filter), block cache off, file in the page
//! cache, keys pre-hashed as the engine does.

use std::fs::File;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use bloomlsm::filter::FilterPolicy;
use bloomlsm::key_hash;
use bloomlsm::sst::{Table, TableBuilder, TableBuilderOptions, TableOpenOptions};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const N: u64 = 100_000;

/// SplitMix64: a bijection, so distinct inputs give distinct keys.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 16-byte keys (hex of a mixed counter); present keys use 0..N, absent N..2N.
fn key(i: u64) -> Vec<u8> {
    format!("{:016x}", mix(i)).into_bytes()
}

fn sorted_entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut e: Vec<_> = (0..N).map(|i| (key(i), vec![i as u8; 100])).collect();
    e.sort();
    e
}

fn build(path: &Path, entries: &[(Vec<u8>, Vec<u8>)], filter: Option<FilterPolicy>) {
    let opts = TableBuilderOptions {
        filter,
        ..Default::default()
    };
    let mut b = TableBuilder::new(File::create(path).unwrap(), path, opts);
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap();
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let entries = sorted_entries();

    let mut g = c.benchmark_group("sst_build");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(N));
    let path = dir.path().join("build.sst");
    // Includes the final fsync (sync_all), as every real flush does.
    g.bench_function("100k_16B_keys_100B_values_blocked512_10", |b| {
        b.iter(|| build(&path, &entries, Some(FilterPolicy::default())))
    });
    g.finish();

    let with = dir.path().join("filter.sst");
    let without = dir.path().join("nofilter.sst");
    build(&with, &entries, Some(FilterPolicy::default()));
    build(&without, &entries, None);
    let t = Table::open(&with, TableOpenOptions::default()).unwrap();
    let t_nofilter = Table::open(&without, TableOpenOptions::default()).unwrap();
    // Lookup order is random (keys are hashed counters), pre-hashed.
    let present: Vec<(Vec<u8>, u64)> = (0..N)
        .map(|i| {
            let k = key(i);
            let h = key_hash(&k);
            (k, h)
        })
        .collect();
    let absent: Vec<(Vec<u8>, u64)> = (N..2 * N)
        .map(|i| {
            let k = key(i);
            let h = key_hash(&k);
            (k, h)
        })
        .collect();

    let mut g = c.benchmark_group("sst_get");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(1));
    let mut i = 0usize;
    g.bench_function("present_cache_off", |b| {
        b.iter(|| {
            let (k, h) = &present[i % present.len()];
            i += 1;
            let r = t.get(black_box(k), *h).unwrap();
            debug_assert!(r.found());
            black_box(r)
        })
    });
    let mut i = 0usize;
    g.bench_function("absent_blocked512_10", |b| {
        b.iter(|| {
            let (k, h) = &absent[i % absent.len()];
            i += 1;
            black_box(t.get(black_box(k), *h).unwrap())
        })
    });
    let mut i = 0usize;
    g.bench_function("absent_no_filter", |b| {
        b.iter(|| {
            let (k, h) = &absent[i % absent.len()];
            i += 1;
            black_box(t_nofilter.get(black_box(k), *h).unwrap())
        })
    });
    g.finish();

    // How often the filter let an absent key through (reported, not timed).
    let fp = absent
        .iter()
        .filter(|(k, h)| t.get(k, *h).unwrap().false_positive())
        .count();
    println!(
        "absent-key false positives: {fp} / {N} ({:.3}%), filter {} bytes, index {} bytes, {} data blocks",
        100.0 * fp as f64 / N as f64,
        t.filter_memory_bytes(),
        t.index_memory_bytes(),
        t.data_blocks()
    );
}

criterion_group!(sst, benches);
criterion_main!(sst);
