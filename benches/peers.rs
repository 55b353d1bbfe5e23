//! The same point-lookup workload on bloomlsm, fjall and (with
//! `--features rocksdb-peer`) RocksDB, measured in one process so the engines
//! can be compared by ratio on a shared, noisy machine (DESIGN.md §7).
//!
//! Workload: fill N random 16-byte keys (`present_key`) with 100-byte values
//! in batches of 1000, let each engine flush its memtable and settle its
//! compactions, then time gets of existing keys (random present keys) and of
//! missing keys (`absent_key`). Every engine gets an 8 MiB block cache, no
//! compression, 10 bits/key Bloom filters on every level with the filter and
//! index blocks held in memory outside the cache, and a level shape mirrored
//! from benches/db.rs (2 MiB write buffer, 512 KiB files, ×8 level fan-out).
//! Files stay in the OS page cache (they were just written).
//!
//! Timing: after one warm-up round, `ROUNDS` rounds; in each round every
//! engine does `GETS` existing-key gets then `GETS` missing-key gets (engines
//! interleaved, so machine noise hits all of them alike). Reported: the median
//! (and min–max) of the per-round ns/op, the ratio to bloomlsm's median, each
//! engine's load time, and the engines' own I/O counters over one extra pass
//! of missing-key gets.
//!
//! `cargo bench --bench peers [--features rocksdb-peer]`;
//! `BLOOMLSM_PEERS_KEYS=N` changes the key count (default 1M),
//! `BLOOMLSM_PEERS_GETS=N` the gets per round (default 100k),
//! `BLOOMLSM_PEERS_ROUNDS=N` the rounds (default 7).

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloomlsm::{Db, FilterOptions, FilterPolicy, Options, WriteBatch};
use fjall::AbstractTree;

// The `bench` command's key generator (not part of the library's API).
#[allow(dead_code)]
#[path = "../src/bin/bloomlsm/workload.rs"]
mod workload;
use workload::{SplitMix64, absent_key, present_key};

const SEED: u64 = 7;
const VALUE_LEN: usize = 100;
const BATCH: usize = 1000;
const CACHE_BYTES: usize = 8 << 20;
const BITS_PER_KEY: f64 = 10.0;
// Level shape (as benches/db.rs).
const WRITE_BUFFER: usize = 2 << 20;
const TARGET_FILE: u64 = 512 << 10;
const LEVEL1_BYTES: u64 = 512 << 10;
const FANOUT: u64 = 8;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The fill's key/value stream: `(key, value)` for `i in 0..n`, values random.
fn for_each_record(n: u64, mut f: impl FnMut(u64, &[u8; 16], &[u8])) {
    let mut value = vec![0u8; VALUE_LEN];
    let mut rng = SplitMix64::new(SEED);
    for i in 0..n {
        rng.fill(&mut value);
        f(i, &present_key(SEED, i), &value);
    }
}

/// One engine under test.
trait Engine {
    fn name(&self) -> &'static str;
    /// `true` if the key was found.
    fn get(&self, key: &[u8; 16]) -> bool;
    /// Level shape after the fill, for the report.
    fn shape(&self) -> String;
    /// Starts counting I/O for [`Engine::counters`].
    fn reset_counters(&self);
    /// The engine's own counters since [`Engine::reset_counters`], after
    /// `missing` missing-key gets.
    fn counters(&self, missing: u64) -> String;
}

// ---------------------------------------------------------------- bloomlsm

struct Bloomlsm {
    db: Db,
}

impl Bloomlsm {
    fn fill(dir: &Path, n: u64) -> (Self, Duration) {
        let opts = Options {
            write_buffer_size: WRITE_BUFFER,
            target_file_size: TARGET_FILE,
            level1_max_bytes: LEVEL1_BYTES,
            level_size_multiplier: FANOUT,
            block_cache_capacity: CACHE_BYTES,
            background_compaction: false,
            filters: FilterOptions::uniform(Some(FilterPolicy::blocked512(BITS_PER_KEY))),
            // fjall is built without lz4: both store values uncompressed.
            compression: bloomlsm::CompressionOptions::none(),
            ..Options::default()
        };
        let db = Db::open(dir, opts).unwrap();
        let t = Instant::now();
        let mut batch = WriteBatch::new();
        for_each_record(n, |i, k, v| {
            batch.put(k, v);
            if batch.len() == BATCH {
                db.write(std::mem::take(&mut batch)).unwrap();
            }
            if i % 100_000 == 99_999 {
                db.maintain().unwrap();
            }
        });
        db.write(batch).unwrap();
        db.maintain().unwrap();
        (Bloomlsm { db }, t.elapsed())
    }
}

impl Engine for Bloomlsm {
    fn name(&self) -> &'static str {
        "bloomlsm"
    }
    fn get(&self, key: &[u8; 16]) -> bool {
        self.db.get(key).unwrap().is_some()
    }
    fn shape(&self) -> String {
        let s = self.db.stats();
        let levels: Vec<String> = s
            .levels
            .iter()
            .filter(|l| l.files > 0)
            .map(|l| format!("L{}:{}", l.level, l.files))
            .collect();
        format!(
            "files {} (filters {:.2} MiB in memory, memtable {} B)",
            levels.join(" "),
            s.filter_bytes as f64 / (1u64 << 20) as f64,
            s.memtable_bytes
        )
    }
    fn reset_counters(&self) {
        self.db.reset_stats();
    }
    fn counters(&self, missing: u64) -> String {
        let s = self.db.stats();
        assert_eq!(s.gets_missing(), missing);
        format!(
            "data-block reads/missing get {:.4} (predicted {:.4}, disk {:.4}), observed FPR {:.3}%",
            s.block_reads_per_missing_get(),
            s.predicted_block_reads_per_missing_get(),
            s.missing_get_disk_reads as f64 / missing as f64,
            s.total.observed_fpr().unwrap_or(0.0) * 100.0
        )
    }
}

// ---------------------------------------------------------------- fjall

fn leveled() -> fjall::compaction::Leveled {
    fjall::compaction::Leveled::default()
        .with_table_target_size(TARGET_FILE)
        .with_level_ratio_policy(vec![FANOUT as f32])
}

/// Tables per level, L0 first.
fn fjall_levels(ks: &fjall::Keyspace) -> Vec<usize> {
    (0..7)
        .map(|l| ks.tree.level_table_count(l).unwrap_or(0))
        .collect()
}

struct Fjall {
    db: fjall::Database,
    ks: fjall::Keyspace,
    base: std::cell::Cell<[usize; 4]>,
}

impl Fjall {
    fn fill(dir: &Path, n: u64) -> (Self, Duration) {
        use fjall::config::{
            BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
            PartitioningPolicy, PinningPolicy,
        };
        let db = fjall::Database::builder(dir)
            .cache_size(CACHE_BYTES as u64)
            .max_cached_files(Some(4096))
            .open()
            .unwrap();
        let ks = db
            .keyspace("peers", || {
                fjall::KeyspaceCreateOptions::default()
                    .max_memtable_size(WRITE_BUFFER as u64)
                    .compaction_strategy(Arc::new(leveled()))
                    // fjall's default is 1e-4 FPR on L0 and 10 bits/key below.
                    .filter_policy(FilterPolicy::all(FilterPolicyEntry::Bloom(
                        BloomConstructionPolicy::BitsPerKey(BITS_PER_KEY as f32),
                    )))
                    // Full (unpartitioned) filter and index blocks, pinned in
                    // memory on every level (default: pinned on L0/L1 only).
                    .filter_block_pinning_policy(PinningPolicy::all(true))
                    .index_block_pinning_policy(PinningPolicy::all(true))
                    .filter_block_partitioning_policy(PartitioningPolicy::all(false))
                    .index_block_partitioning_policy(PartitioningPolicy::all(false))
                    .data_block_compression_policy(CompressionPolicy::all(
                        fjall::CompressionType::None,
                    ))
            })
            .unwrap();
        let t = Instant::now();
        let mut batch = db.batch();
        for_each_record(n, |_, k, v| {
            batch.insert(&ks, &k[..], v);
            if batch.len() == BATCH {
                std::mem::replace(&mut batch, db.batch()).commit().unwrap();
            }
        });
        batch.commit().unwrap();
        // Flush the memtable, then settle compactions. fjall only schedules
        // compaction steps after flushes, so once writes stop an L0 backlog
        // stays (17 L0 tables after 1M keys in a trial run): run leveled
        // compaction steps ourselves (`tree.compact`, doc-hidden API of fjall
        // 3.1) until three steps in a row, 200 ms apart, change nothing.
        ks.rotate_memtable_and_wait().unwrap();
        let strategy = Arc::new(leveled());
        let mut shape = fjall_levels(&ks);
        let mut idle_steps = 0;
        while idle_steps < 3 {
            ks.tree.compact(strategy.clone(), 0).unwrap();
            let now = fjall_levels(&ks);
            if now == shape && db.active_compactions() == 0 {
                idle_steps += 1;
                std::thread::sleep(Duration::from_millis(200));
            } else {
                idle_steps = 0;
            }
            shape = now;
        }
        let load = t.elapsed();
        (
            Fjall {
                db,
                ks,
                base: std::cell::Cell::new([0; 4]),
            },
            load,
        )
    }

    fn metrics(&self) -> [usize; 4] {
        let m = self.ks.metrics();
        [
            m.data_block_load_count(),
            m.data_block_load_count() - m.data_block_load_cached_count(),
            m.filter_queries(),
            m.io_skipped_by_filter(),
        ]
    }
}

impl Engine for Fjall {
    fn name(&self) -> &'static str {
        "fjall"
    }
    fn get(&self, key: &[u8; 16]) -> bool {
        self.ks.get(key).unwrap().is_some()
    }
    fn shape(&self) -> String {
        let levels: Vec<String> = fjall_levels(&self.ks)
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(l, n)| format!("L{l}:{n}"))
            .collect();
        format!(
            "tables {} (background compactions {})",
            levels.join(" "),
            self.db.compactions_completed()
        )
    }
    fn reset_counters(&self) {
        self.base.set(self.metrics());
    }
    fn counters(&self, missing: u64) -> String {
        let (now, base) = (self.metrics(), self.base.get());
        let d: Vec<f64> = (0..4).map(|i| (now[i] - base[i]) as f64).collect();
        format!(
            "data-block reads/missing get {:.4} (from OS {:.4}), filter queries/get {:.2}, filter negatives {:.3}%",
            d[0] / missing as f64,
            d[1] / missing as f64,
            d[2] / missing as f64,
            100.0 * d[3] / d[2].max(1.0)
        )
    }
}

// ---------------------------------------------------------------- RocksDB

#[cfg(feature = "rocksdb-peer")]
struct Rocks {
    db: rocksdb::DB,
    opts: rocksdb::Options,
    base: std::cell::Cell<[u64; 4]>,
}

#[cfg(feature = "rocksdb-peer")]
impl Rocks {
    fn fill(dir: &Path, n: u64) -> (Self, Duration) {
        use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, WriteBatch};
        let mut bb = BlockBasedOptions::default();
        bb.set_bloom_filter(BITS_PER_KEY, false);
        bb.set_block_cache(&Cache::new_lru_cache(CACHE_BYTES));
        bb.set_cache_index_and_filter_blocks(false);
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.set_block_based_table_factory(&bb);
        opts.set_compression_type(DBCompressionType::None);
        opts.set_bottommost_compression_type(DBCompressionType::None);
        opts.set_write_buffer_size(WRITE_BUFFER);
        opts.set_target_file_size_base(TARGET_FILE);
        opts.set_max_bytes_for_level_base(LEVEL1_BYTES);
        opts.set_max_bytes_for_level_multiplier(FANOUT as f64);
        opts.set_level_compaction_dynamic_level_bytes(false);
        opts.enable_statistics();
        opts.set_statistics_level(rocksdb::statistics::StatsLevel::DisableAll);
        let db = rocksdb::DB::open(&opts, dir).unwrap();
        let t = Instant::now();
        let mut batch = WriteBatch::default();
        for_each_record(n, |_, k, v| {
            batch.put(k, v);
            if batch.len() == BATCH {
                db.write(std::mem::take(&mut batch)).unwrap();
            }
        });
        db.write(batch).unwrap();
        let mut wait = rocksdb::WaitForCompactOptions::default();
        wait.set_flush(true);
        db.wait_for_compact(&wait).unwrap();
        let load = t.elapsed();
        (
            Rocks {
                db,
                opts,
                base: std::cell::Cell::new([0; 4]),
            },
            load,
        )
    }

    fn tickers(&self) -> [u64; 4] {
        use rocksdb::statistics::Ticker;
        [
            self.opts.get_ticker_count(Ticker::BlockCacheDataHit)
                + self.opts.get_ticker_count(Ticker::BlockCacheDataMiss),
            self.opts.get_ticker_count(Ticker::BlockCacheDataMiss),
            self.opts.get_ticker_count(Ticker::BloomFilterUseful),
            self.opts.get_ticker_count(Ticker::BloomFilterFullPositive),
        ]
    }
}

#[cfg(feature = "rocksdb-peer")]
impl Engine for Rocks {
    fn name(&self) -> &'static str {
        "rocksdb"
    }
    fn get(&self, key: &[u8; 16]) -> bool {
        self.db.get_pinned(key).unwrap().is_some()
    }
    fn shape(&self) -> String {
        let levels: Vec<String> = (0..7)
            .filter_map(|l| {
                let files = self
                    .db
                    .property_int_value(format!("rocksdb.num-files-at-level{l}").as_str())
                    .ok()??;
                (files > 0).then(|| format!("L{l}:{files}"))
            })
            .collect();
        format!("files {}", levels.join(" "))
    }
    fn reset_counters(&self) {
        // Tickers are off while timing; on for the counter pass only.
        self.opts
            .set_statistics_level(rocksdb::statistics::StatsLevel::ExceptTimers);
        self.base.set(self.tickers());
    }
    fn counters(&self, missing: u64) -> String {
        let (now, base) = (self.tickers(), self.base.get());
        self.opts
            .set_statistics_level(rocksdb::statistics::StatsLevel::DisableAll);
        let d: Vec<f64> = (0..4).map(|i| (now[i] - base[i]) as f64).collect();
        format!(
            "data-block reads/missing get {:.4} (cache misses {:.4}), bloom.filter.useful/get {:.3}, full.positive/get {:.4}",
            d[0] / missing as f64,
            d[1] / missing as f64,
            d[2] / missing as f64,
            d[3] / missing as f64
        )
    }
}

// ---------------------------------------------------------------- driver

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// ns per get over `keys`; checks every answer is `expect`.
fn time_gets(e: &dyn Engine, keys: &[[u8; 16]], expect: bool) -> f64 {
    let t = Instant::now();
    let mut hits = 0usize;
    for k in keys {
        hits += usize::from(black_box(e.get(black_box(k))));
    }
    let ns = t.elapsed().as_nanos() as f64 / keys.len() as f64;
    assert_eq!(hits, if expect { keys.len() } else { 0 }, "{}", e.name());
    ns
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let n = env_u64("BLOOMLSM_PEERS_KEYS", 1_000_000);
    let gets = env_u64("BLOOMLSM_PEERS_GETS", 100_000) as usize;
    let rounds = env_u64("BLOOMLSM_PEERS_ROUNDS", 7) as usize;

    let root = tempfile::tempdir().unwrap();
    let mut engines: Vec<(Box<dyn Engine>, Duration)> = Vec::new();
    {
        let (e, load) = Bloomlsm::fill(&root.path().join("bloomlsm"), n);
        eprintln!("bloomlsm loaded in {:.1}s", load.as_secs_f64());
        engines.push((Box::new(e), load));
    }
    {
        let (e, load) = Fjall::fill(&root.path().join("fjall"), n);
        eprintln!("fjall loaded in {:.1}s", load.as_secs_f64());
        engines.push((Box::new(e), load));
    }
    #[cfg(feature = "rocksdb-peer")]
    {
        let (e, load) = Rocks::fill(&root.path().join("rocksdb"), n);
        eprintln!("rocksdb loaded in {:.1}s", load.as_secs_f64());
        engines.push((Box::new(e), load));
    }

    // Round 0 is a warm-up (page cache, block caches, branch predictors).
    let mut rng = SplitMix64::new(99);
    let mut existing = vec![Vec::new(); engines.len()];
    let mut missing = vec![Vec::new(); engines.len()];
    let mut next_absent = 0u64;
    for round in 0..=rounds {
        let present: Vec<[u8; 16]> = (0..gets).map(|_| present_key(SEED, rng.below(n))).collect();
        let absent: Vec<[u8; 16]> = (0..gets as u64)
            .map(|i| absent_key(SEED, next_absent + i))
            .collect();
        next_absent += gets as u64;
        for (i, (e, _)) in engines.iter().enumerate() {
            let hit = time_gets(e.as_ref(), &present, true);
            let miss = time_gets(e.as_ref(), &absent, false);
            if round > 0 {
                existing[i].push(hit);
                missing[i].push(miss);
            }
        }
    }

    // Counters over one more pass of missing keys.
    let probes = 200_000u64;
    let mut counters = Vec::new();
    for (e, _) in &engines {
        e.reset_counters();
        for i in 0..probes {
            assert!(!e.get(&absent_key(SEED, (1 << 40) + i)));
        }
        counters.push(e.counters(probes));
    }

    println!(
        "\nPeers: {n} keys x {VALUE_LEN} B values, {rounds} rounds x {gets} gets per kind \
         (+1 warm-up), 8 MiB block cache, no compression, 10 bits/key Bloom\n"
    );
    println!(
        "| engine | existing get ns/op (min–max) | missing get ns/op (min–max) | existing vs bloomlsm | missing vs bloomlsm | load |"
    );
    println!("|---|---|---|---|---|---|");
    let mut meds = Vec::new();
    for i in 0..engines.len() {
        let (lo_e, hi_e) = (
            existing[i].iter().copied().fold(f64::INFINITY, f64::min),
            existing[i].iter().copied().fold(0.0, f64::max),
        );
        let (lo_m, hi_m) = (
            missing[i].iter().copied().fold(f64::INFINITY, f64::min),
            missing[i].iter().copied().fold(0.0, f64::max),
        );
        meds.push((median(&mut existing[i]), median(&mut missing[i])));
        let (me, mm) = meds[i];
        let (be, bm) = meds[0];
        println!(
            "| {} | {me:.0} ({lo_e:.0}–{hi_e:.0}) | {mm:.0} ({lo_m:.0}–{hi_m:.0}) | {:.2}× | {:.2}× | {:.1} s |",
            engines[i].0.name(),
            me / be,
            mm / bm,
            engines[i].1.as_secs_f64()
        );
    }
    println!("\n(ratio = engine's median / bloomlsm's median; > 1 means bloomlsm is faster)\n");
    println!("Shapes after the fill, and counters over {probes} further missing-key gets:");
    for ((e, _), c) in engines.iter().zip(&counters) {
        println!("  {:<9} {}", e.name(), e.shape());
        println!("  {:<9} {c}", "");
    }
}
