//! The options of a stress run, drawn from its seed: the store's (sync
//! mode, caches, background work, read mode) and each keyspace's design
//! (filter family, bits and allocation, prefix and range filters,
//! compression, small buffers and tables so that levels fill quickly).
//!
//! The same seed draws the same options, so the kill loop's parent and
//! children open the store identically without passing them around.

use bloomlsm::filter::FilterKind;
use bloomlsm::options::ChecksumType;
use bloomlsm::workload::{SplitMix64, mix64};
use bloomlsm::{
    Compression, CompressionOptions, FilterOptions, FilterPolicy, Options, PrefixExtractor,
    ReadMode,
};

use crate::design::{describe as describe_filters, describe_compression};
use crate::report::bytes;

/// The options of a run: the store's (its default keyspace's design
/// included), then the design of `ks1`, `ks2`, ...
pub struct RunOptions {
    /// The store and its default keyspace.
    pub store: Options,
    /// `ks1`, `ks2`, ...: each keyspace's design, memtable size and L0
    /// triggers (the rest follows the store).
    pub keyspaces: Vec<Options>,
}

/// Picks one of `items`.
fn pick<T: Copy>(rng: &mut SplitMix64, items: &[T]) -> T {
    items[rng.below(items.len() as u64) as usize]
}

/// One chance in `n`.
fn one_in(rng: &mut SplitMix64, n: u64) -> bool {
    rng.below(n) == 0
}

/// The options of a run of seed `seed` with `keyspaces` keyspaces.
pub fn draw(seed: u64, keyspaces: u32) -> RunOptions {
    let mut rng = SplitMix64::new(mix64(seed ^ 0x5354_5245_5353));
    let mut store = design(&mut rng);
    store.sync_writes = one_in(&mut rng, 5);
    store.block_cache_capacity = pick(&mut rng, &[0, 64 << 10, 1 << 20, 8 << 20]);
    store.background_compaction = !one_in(&mut rng, 5);
    store.idle_l0_compaction = rng.below(2) == 0;
    store.dynamic_level_bytes = rng.below(2) == 0;
    store.max_subcompactions = 1 + rng.below(4) as usize;
    if one_in(&mut rng, 4) {
        // The least the store accepts: tables are closed and reopened.
        store.max_open_files = store.min_max_open_files();
    }
    if one_in(&mut rng, 5) {
        store.read_mode = ReadMode::DirectOrBuffered;
    }
    if one_in(&mut rng, 4) {
        store.metadata_memory_budget = Some(pick(&mut rng, &[4 << 10, 32 << 10, 256 << 10]));
    }
    let keyspaces = (1..keyspaces).map(|_| design(&mut rng)).collect();
    RunOptions { store, keyspaces }
}

/// A random design: what a keyspace records in its OPTIONS file, with its
/// memtable size and L0 triggers.
pub fn design(rng: &mut SplitMix64) -> Options {
    let mut o = Options::default()
        .filters(filters(rng))
        .write_buffer_size(pick(
            rng,
            &[16 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20],
        ))
        .target_file_size(pick(rng, &[8 << 10, 16 << 10, 64 << 10, 256 << 10]))
        .level1_max_bytes(pick(rng, &[32 << 10, 128 << 10, 512 << 10]))
        .level_size_multiplier(pick(rng, &[2, 4, 10]))
        .max_levels(pick(rng, &[4, 5, 7]))
        .block_size(pick(rng, &[128, 512, 1024, 4096]))
        .checksum(pick(rng, &[ChecksumType::Crc32, ChecksumType::Xxh3]));
    o.l0_compaction_trigger = 2 + rng.below(5) as usize;
    o.l0_slowdown_trigger = o.l0_compaction_trigger + 2 + rng.below(8) as usize;
    o.l0_stop_trigger = o.l0_slowdown_trigger + 4 + rng.below(12) as usize;
    o.compression = match rng.below(4) {
        0 => CompressionOptions::none(),
        1 => CompressionOptions::uniform(Compression::Lz4),
        2 if cfg!(feature = "zstd") => {
            CompressionOptions::uniform(Compression::Zstd(1 + rng.below(3) as i32))
        }
        _ => CompressionOptions::default(),
    };
    if !one_in(rng, 3) {
        o.prefix_extractor = Some(pick(
            rng,
            &[
                PrefixExtractor::Fixed(5),
                PrefixExtractor::Fixed(6),
                PrefixExtractor::Fixed(8),
                PrefixExtractor::UpToDelimiter(b':'),
            ],
        ));
    }
    if rng.below(2) == 0 {
        o.range_filter_bits_per_key = Some(4.0 + rng.below(21) as f64);
    }
    if one_in(rng, 4) {
        o.filter_partition_bytes = pick(rng, &[256, 1024]);
    }
    if one_in(rng, 4) {
        o.index_partition_bytes = pick(rng, &[256, 1024]);
    }
    o
}

/// Bits per key from 1 to 16, in halves.
fn bits(rng: &mut SplitMix64) -> f64 {
    1.0 + rng.below(31) as f64 / 2.0
}

/// A filter design: none, one family everywhere, a hybrid, Monkey, the
/// workload-aware allocation, or per-level overrides.
fn filters(rng: &mut SplitMix64) -> FilterOptions {
    let kind = pick(rng, &FilterKind::ALL);
    match rng.below(12) {
        0 => FilterOptions::none(),
        1..=5 => FilterOptions::uniform(Some(FilterPolicy::new(kind, bits(rng)))),
        6 | 7 => FilterOptions::hybrid(
            FilterPolicy::new(kind, bits(rng)),
            FilterPolicy::new(pick(rng, &FilterKind::ALL), bits(rng)),
            1 + rng.below(3) as usize,
        ),
        8 | 9 => FilterOptions::monkey(kind, bits(rng)),
        10 => FilterOptions::workload_aware(kind, bits(rng)),
        _ => {
            let mut f = FilterOptions::uniform(Some(FilterPolicy::new(kind, bits(rng))));
            f.per_level = vec![
                (
                    0,
                    Some(FilterPolicy::new(pick(rng, &FilterKind::ALL), bits(rng))),
                ),
                (1 + rng.below(3) as usize, None),
            ];
            f.skip_last_level = rng.below(2) == 0;
            f
        }
    }
}

/// The design of `o`, one line.
pub fn describe_design(o: &Options) -> String {
    let mut s = describe_filters(&o.filters);
    if let Some(b) = o.filters.workload_avg_bits_per_key {
        s.push_str(&format!(", workload-aware at {b} bits/key on average"));
    }
    if o.filter_partition_bytes > 0 {
        s.push_str(&format!(
            " in {} partitions",
            bytes(o.filter_partition_bytes as u64)
        ));
    }
    match o.prefix_extractor {
        Some(p) => s.push_str(&format!("; prefix {p}")),
        None => s.push_str("; no prefix extractor"),
    }
    match o.range_filter_bits_per_key {
        Some(b) => s.push_str(&format!("; range filter {b} bits/key")),
        None => s.push_str("; no range filter"),
    }
    s.push_str(&format!(
        "; {}; write buffer {}, tables {}, L1 {} x{}, {} levels, blocks {}, index partitions {}, \
         L0 triggers {}/{}/{}, checksum {:?}",
        describe_compression(&o.compression),
        bytes(o.write_buffer_size as u64),
        bytes(o.target_file_size),
        bytes(o.level1_max_bytes),
        o.level_size_multiplier,
        o.max_levels,
        bytes(o.block_size as u64),
        match o.index_partition_bytes {
            0 => "none".to_string(),
            b => bytes(b as u64),
        },
        o.l0_compaction_trigger,
        o.l0_slowdown_trigger,
        o.l0_stop_trigger,
        o.checksum,
    ));
    s
}

/// The store-wide options of `o`, one line.
pub fn describe_store(o: &Options) -> String {
    format!(
        "sync writes {}, block cache {}, background compaction {}, idle L0 merges {}, \
         dynamic level bytes {}, subcompactions {}, max open files {}, read mode {}, \
         metadata budget {}",
        on_off(o.sync_writes),
        bytes(o.block_cache_capacity as u64),
        on_off(o.background_compaction),
        on_off(o.idle_l0_compaction),
        on_off(o.dynamic_level_bytes),
        o.max_subcompactions,
        o.max_open_files,
        o.read_mode.name(),
        o.metadata_memory_budget.map_or("none".to_string(), bytes),
    )
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_draws_valid_options_and_the_same_ones_again() {
        for seed in 0..200 {
            let a = draw(seed, 4);
            a.store.validate().unwrap();
            for k in &a.keyspaces {
                k.validate().unwrap();
            }
            let b = draw(seed, 4);
            assert_eq!(describe_store(&a.store), describe_store(&b.store));
            assert_eq!(describe_design(&a.store), describe_design(&b.store));
            assert_eq!(
                describe_design(&a.keyspaces[2]),
                describe_design(&b.keyspaces[2])
            );
        }
    }
}
