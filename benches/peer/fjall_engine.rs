//! fjall in the peers bench (benches/peers.rs): its options in each
//! setting, its fill (with the compaction steps its loads need) and the
//! figures it reports.

use super::*;

/// L0 runs from which fjall 3.1 slows writes down (`write_delay.rs`).
const FJALL_L0_STALL: usize = 20;

/// fjall's leveled compaction: at the shared shape, or its defaults (64 MiB
/// tables, ratio 10, L0 threshold 4).
fn leveled(setting: Setting) -> fjall::compaction::Leveled {
    match setting {
        Setting::Shared => fjall::compaction::Leveled::default()
            .with_table_target_size(TARGET_FILE)
            .with_level_ratio_policy(vec![FANOUT as f32]),
        Setting::Defaults => fjall::compaction::Leveled::default(),
    }
}

/// The table size of fjall's leveled default (lsm-tree 3.1's
/// `Strategy::default`), for its full compaction.
const FJALL_DEFAULT_TABLE: u64 = 64 << 20;

/// Tables per level, L0 first.
fn fjall_levels(ks: &fjall::Keyspace) -> Vec<usize> {
    (0..7)
        .map(|l| ks.tree.level_table_count(l).unwrap_or(0))
        .collect()
}

pub(super) struct Fjall {
    db: fjall::Database,
    ks: fjall::Keyspace,
    base: std::cell::Cell<[usize; 4]>,
    setting: Setting,
}

impl Fjall {
    pub(super) fn fill(dir: &Path, n: u64, load: bool, setting: Setting) -> (Self, Duration) {
        use fjall::config::{
            BlockSizePolicy, BloomConstructionPolicy, CompressionPolicy, FilterPolicy,
            FilterPolicyEntry, PartitioningPolicy, PinningPolicy,
        };
        let builder = fjall::Database::builder(dir).cache_size(CACHE_BYTES as u64);
        let db = match setting {
            // 512 KiB tables: about 2,300 at 10^7 keys.
            Setting::Shared => builder.max_cached_files(Some(4096)),
            Setting::Defaults => builder,
        }
        .open()
        .unwrap();
        let ks = db
            .keyspace("peers", || {
                let o = fjall::KeyspaceCreateOptions::default()
                    .compaction_strategy(Arc::new(leveled(setting)))
                    // Full (unpartitioned) filter and index blocks, pinned in
                    // memory on every level (default: pinned on L0/L1 only,
                    // partitioned from L3).
                    .filter_block_pinning_policy(PinningPolicy::all(true))
                    .index_block_pinning_policy(PinningPolicy::all(true))
                    .filter_block_partitioning_policy(PartitioningPolicy::all(false))
                    .index_block_partitioning_policy(PartitioningPolicy::all(false))
                    .data_block_compression_policy(CompressionPolicy::all(
                        fjall::CompressionType::None,
                    ));
                match setting {
                    Setting::Shared => o
                        .max_memtable_size(WRITE_BUFFER as u64)
                        // fjall's default is 1e-4 FPR on L0 and 10 bits/key below.
                        .filter_policy(FilterPolicy::all(FilterPolicyEntry::Bloom(
                            BloomConstructionPolicy::BitsPerKey(BITS_PER_KEY as f32),
                        )))
                        .data_block_size_policy(BlockSizePolicy::all(BLOCK_SIZE as u32)),
                    Setting::Defaults => o.max_memtable_size(DEFAULTS_WRITE_BUFFER as u64),
                }
            })
            .unwrap();
        let t = Instant::now();
        if !load {
            let base = std::cell::Cell::new([0; 4]);
            return (
                Fjall {
                    db,
                    ks,
                    base,
                    setting,
                },
                Duration::ZERO,
            );
        }
        let strategy = Arc::new(leveled(setting));
        let batch_len = batch_size();
        let mut batch = db.batch();
        for_each_record(n, |i, k, v| {
            if batch_len == 1 {
                ks.insert(&k[..], v).unwrap();
            } else {
                batch.insert(&ks, &k[..], v);
            }
            // Every 1000 keys when each is its own write.
            let written = if batch_len == 1 {
                i % 1000 == 999
            } else {
                batch.len() == batch_len
            };
            if written {
                if batch_len > 1 {
                    std::mem::replace(&mut batch, db.batch()).commit().unwrap();
                }
                // fjall's workers compact once per flush message (one step
                // each); its writers slow down from 20 L0 runs and halt at 30
                // until L0 shrinks. Once halted, no flush sends a message, so
                // if the queued steps went to deeper levels nothing compacts
                // L0 again and the load never ends (seen at 10^7 keys:
                // writer asleep, workers idle). Step it here from 20 instead,
                // in the writer thread, as bloomlsm compacts in its own.
                while ks.tree.l0_run_count() >= FJALL_L0_STALL {
                    ks.tree.compact(strategy.clone(), 0).unwrap();
                }
            }
        });
        batch.commit().unwrap();
        // Flush the memtable, then settle compactions. fjall only schedules
        // compaction steps after flushes, so once writes stop an L0 backlog
        // stays (17 L0 tables after 1M keys in a trial run): run leveled
        // compaction steps ourselves (`tree.compact`, doc-hidden API of fjall
        // 3.1) until three steps in a row, 200 ms apart, change nothing.
        ks.rotate_memtable_and_wait().unwrap();
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
                setting,
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
    fn setting(&self) -> Setting {
        self.setting
    }
    fn describe(&self) -> String {
        let shape = match self.setting {
            Setting::Shared => format!(
                "Bloom {BITS_PER_KEY} b/k on every level, {BLOCK_SIZE} B blocks, memtable {} KiB, \
                 leveled: tables {} KiB, ratio {FANOUT}",
                WRITE_BUFFER >> 10,
                TARGET_FILE >> 10
            ),
            Setting::Defaults => format!(
                "default Bloom filters (1e-4 FPR on L0, 10 b/k below), default 4 KiB blocks, \
                 memtable {} KiB, default leveled: tables {} MiB, ratio 10, L0 threshold 4",
                DEFAULTS_WRITE_BUFFER >> 10,
                FJALL_DEFAULT_TABLE >> 20
            ),
        };
        format!(
            "fjall {} (lsm-tree {}), {}: {shape}, full filter+index blocks pinned on every level, \
             {} MiB cache, no compression",
            locked_version("fjall"),
            locked_version("lsm-tree"),
            self.setting.label(),
            CACHE_BYTES >> 20,
        )
    }
    fn compact(&self) {
        // `Keyspace::major_compact` uses 64 MB tables; the tree's own takes
        // the target size. No snapshots or overwrites: seqno threshold 0.
        self.ks.rotate_memtable_and_wait().unwrap();
        let table = match self.setting {
            Setting::Shared => TARGET_FILE,
            Setting::Defaults => FJALL_DEFAULT_TABLE,
        };
        self.ks.tree.major_compact(table, 0).unwrap();
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
