//! RocksDB in the peers bench (benches/peers.rs, `--features
//! rocksdb-peer`): its options in each setting, its fill and the figures
//! it reports, some read from its LOG and statistics.

use super::*;

pub(super) struct Rocks {
    db: rocksdb::DB,
    opts: rocksdb::Options,
    base: std::cell::Cell<[u64; 4]>,
    setting: Setting,
}

impl Rocks {
    pub(super) fn fill(dir: &Path, n: u64, load: bool, setting: Setting) -> (Self, Duration) {
        use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, WriteBatch};
        let mut bb = BlockBasedOptions::default();
        // Full (not block-based) filter: FastLocalBloom at format_version ≥ 5.
        // RocksDB's default has no filter at all.
        bb.set_bloom_filter(BITS_PER_KEY, false);
        // Its default is a 32 MiB LRU cache.
        bb.set_block_cache(&Cache::new_lru_cache(CACHE_BYTES));
        // Index and filter blocks held by each open table, outside the
        // cache (also the default).
        bb.set_cache_index_and_filter_blocks(false);
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.set_compression_type(DBCompressionType::None);
        opts.set_bottommost_compression_type(DBCompressionType::None);
        match setting {
            Setting::Shared => {
                bb.set_block_size(BLOCK_SIZE);
                opts.set_write_buffer_size(WRITE_BUFFER);
                opts.set_target_file_size_base(TARGET_FILE);
                opts.set_max_bytes_for_level_base(LEVEL1_BYTES);
                opts.set_max_bytes_for_level_multiplier(FANOUT as f64);
                opts.set_level_compaction_dynamic_level_bytes(false);
            }
            Setting::Defaults => opts.set_write_buffer_size(DEFAULTS_WRITE_BUFFER),
        }
        opts.set_block_based_table_factory(&bb);
        if direct_io() {
            // User and compaction reads with O_DIRECT; writes stay buffered,
            // as bloomlsm's do.
            opts.set_use_direct_reads(true);
        }
        opts.enable_statistics();
        opts.set_statistics_level(rocksdb::statistics::StatsLevel::DisableAll);
        let db = rocksdb::DB::open(&opts, dir).unwrap();
        let t = Instant::now();
        if !load {
            let base = std::cell::Cell::new([0; 4]);
            return (
                Rocks {
                    db,
                    opts,
                    base,
                    setting,
                },
                Duration::ZERO,
            );
        }
        let batch_len = batch_size();
        let mut batch = WriteBatch::default();
        for_each_record(n, |_, k, v| {
            if batch_len == 1 {
                db.put(k, v).unwrap();
            } else {
                batch.put(k, v);
                if batch.len() == batch_len {
                    db.write(std::mem::take(&mut batch)).unwrap();
                }
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
                setting,
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

impl Engine for Rocks {
    fn name(&self) -> &'static str {
        "rocksdb"
    }
    fn setting(&self) -> Setting {
        self.setting
    }
    fn describe(&self) -> String {
        // The linked library's own account: its OPTIONS file.
        let opts = std::fs::read_dir(self.db.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("OPTIONS-"))
            .max_by_key(|e| e.file_name())
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .unwrap_or_default();
        let field = |name: &str| {
            opts.lines()
                .map(str::trim)
                .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
                .unwrap_or("?")
                .to_string()
        };
        format!(
            "RocksDB {} (crate rocksdb {}), {}: filter_policy={} ({BITS_PER_KEY} b/k, full filters; \
             FastLocalBloom at format_version ≥ 5) format_version={} block_size={} \
             cache_index_and_filter_blocks={} block cache LRU {} MiB, compression={} \
             bottommost={} write_buffer_size={} target_file_size_base={} \
             max_bytes_for_level_base={} multiplier={} dynamic_level_bytes={} \
             level0_file_num_compaction_trigger={} level0_slowdown_writes_trigger={} \
             level0_stop_writes_trigger={} use_direct_reads={} max_open_files={}",
            field("rocksdb_version"),
            locked_version("rocksdb"),
            self.setting.label(),
            field("filter_policy"),
            field("format_version"),
            field("block_size"),
            field("cache_index_and_filter_blocks"),
            CACHE_BYTES >> 20,
            field("compression"),
            field("bottommost_compression"),
            field("write_buffer_size"),
            field("target_file_size_base"),
            field("max_bytes_for_level_base"),
            field("max_bytes_for_level_multiplier"),
            field("level_compaction_dynamic_level_bytes"),
            field("level0_file_num_compaction_trigger"),
            field("level0_slowdown_writes_trigger"),
            field("level0_stop_writes_trigger"),
            field("use_direct_reads"),
            field("max_open_files"),
        )
    }
    fn compact(&self) {
        self.db.flush().unwrap();
        self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
        let mut wait = rocksdb::WaitForCompactOptions::default();
        wait.set_flush(true);
        self.db.wait_for_compact(&wait).unwrap();
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
        // Its own estimate of the memory its open tables hold (indexes and
        // filters, as `cache_index_and_filter_blocks = false` keeps them).
        let readers = self
            .db
            .property_int_value("rocksdb.estimate-table-readers-mem")
            .ok()
            .flatten()
            .map_or_else(
                || "?".to_string(),
                |b| format!("{:.2}", b as f64 / (1u64 << 20) as f64),
            );
        format!(
            "files {} (in memory: table readers, indexes and filters, {readers} MiB)",
            levels.join(" ")
        )
    }
    fn write_amplification(&self, user_bytes: u64) -> Option<f64> {
        // Every table a flush or compaction writes is a `table_file_creation`
        // event in the info LOG, with its size (the LOG of this open: an
        // earlier one was renamed LOG.old.*).
        let log = std::fs::read_to_string(self.db.path().join("LOG")).ok()?;
        let written: u64 = log
            .lines()
            .filter(|l| l.contains("\"event\": \"table_file_creation\""))
            .filter_map(|l| {
                let rest = l.split_once("\"file_size\": ")?.1;
                let end = rest.find(|c: char| !c.is_ascii_digit())?;
                rest[..end].parse::<u64>().ok()
            })
            .sum();
        (user_bytes > 0 && written > 0).then(|| written as f64 / user_bytes as f64)
    }
    fn load_notes(&self) -> Option<String> {
        // The level rows of RocksDB's own compaction stats (`rocksdb.stats`).
        let stats = self.db.property_value("rocksdb.stats").ok()??;
        let mut rows = Vec::new();
        for line in stats.lines() {
            let t = line.trim_start();
            if t.starts_with("Level")
                || (t.starts_with('L') && t[1..].starts_with(|c: char| c.is_ascii_digit()))
                || t.starts_with("Sum")
            {
                rows.push(format!("\n    {}", line.trim_end()));
            }
            if t.starts_with("Sum") {
                break;
            }
        }
        Some(format!("compaction stats (GB):{}", rows.concat()))
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
