//! SSTable benchmarks: build throughput and point lookups (present keys,
//! absent keys with and without a filter), block cache off, file in the page
//! cache, keys pre-hashed as the engine does; and the cost of block
//! compression: compressing and decoding one data block per codec, and
//! present-key lookups in tables built with each codec.

use std::fs::File;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use bloomlsm::filter::FilterPolicy;
use bloomlsm::key_hash;
use bloomlsm::sst::block::{Block, BlockBuilder};
use bloomlsm::sst::compression::{self, Compressor};
use bloomlsm::sst::{
    Compression, KeyFormat, Table, TableBuilder, TableBuilderOptions, TableOpenOptions,
};
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

/// 100-byte values compressing to about half: 50 random bytes twice (the
/// `bench` command's default `--value-ratio 0.5`).
fn half_compressible(i: u64) -> Vec<u8> {
    let raw: Vec<u8> = (0..7).flat_map(|j| mix(i * 8 + j).to_le_bytes()).collect();
    let mut v = raw[..50].to_vec();
    v.extend_from_slice(&raw[..50]);
    v
}

fn build(path: &Path, entries: &[(Vec<u8>, Vec<u8>)], filter: Option<FilterPolicy>) {
    build_with(path, entries, filter, Compression::None)
}

fn build_with(
    path: &Path,
    entries: &[(Vec<u8>, Vec<u8>)],
    filter: Option<FilterPolicy>,
    compression: Compression,
) {
    let opts = TableBuilderOptions::default()
        .filter(filter)
        .compression(compression);
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

fn codecs() -> Vec<Compression> {
    let mut v = vec![Compression::Lz4];
    if cfg!(feature = "zstd") {
        v.extend([Compression::Zstd(1), Compression::Zstd(3)]);
    }
    v
}

/// One 4 KiB data block of sorted keys and half-compressible values:
/// compress it, and decode it as a read does (decompress + parse).
fn block_codecs(c: &mut Criterion) {
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> =
        (0..40).map(|i| (key(i), half_compressible(i))).collect();
    entries.sort();
    let mut b = BlockBuilder::new(16);
    for (k, v) in &entries {
        b.add(k, v);
    }
    let raw = b.finish().to_vec();
    let mut g = c.benchmark_group("sst_block_codec");
    g.sample_size(30)
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Bytes(raw.len() as u64));
    g.bench_function("parse_raw", |b| {
        b.iter(|| Block::new(black_box(raw.clone()).into()).unwrap())
    });
    for codec in codecs() {
        let mut cx = Compressor::new(codec).unwrap();
        let (stored, ty) = cx.compress(&raw);
        let stored = stored.to_vec();
        println!(
            "{codec}: {} -> {} bytes ({:.2}x)",
            raw.len(),
            stored.len(),
            raw.len() as f64 / stored.len() as f64
        );
        g.bench_function(format!("compress_{codec}"), |b| {
            b.iter(|| cx.compress(black_box(&raw)).0.len())
        });
        g.bench_function(format!("decode_{codec}"), |b| {
            b.iter(|| {
                let out = compression::decompress(ty, black_box(&stored), 1 << 16).unwrap();
                let block = Block::new(out.into()).unwrap();
                black_box(block.iter(KeyFormat::Plain).advance().unwrap())
            })
        });
    }
    g.finish();
}

/// Present-key lookups (block cache off: each one reads and decodes a
/// block) in tables of half-compressible values, per codec.
fn compressed_gets(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut entries: Vec<_> = (0..N).map(|i| (key(i), half_compressible(i))).collect();
    entries.sort();
    let present: Vec<(Vec<u8>, u64)> = (0..N)
        .map(|i| {
            let k = key(i);
            let h = key_hash(&k);
            (k, h)
        })
        .collect();
    let mut g = c.benchmark_group("sst_get_compressed");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(1));
    for codec in [Compression::None].into_iter().chain(codecs()) {
        let path = dir.path().join(format!("{}.sst", codec.name()));
        build_with(&path, &entries, Some(FilterPolicy::default()), codec);
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        println!(
            "{codec}: file {} bytes, data {} stored / {} raw",
            t.file_size(),
            t.properties().data_size,
            t.properties().data_raw_size
        );
        let mut i = 0usize;
        g.bench_function(format!("present_cache_off_{codec}"), |b| {
            b.iter(|| {
                let (k, h) = &present[i % present.len()];
                i += 1;
                black_box(t.get(black_box(k), *h).unwrap())
            })
        });
    }
    g.finish();
}

criterion_group!(sst, benches, block_codecs, compressed_gets);
criterion_main!(sst);
