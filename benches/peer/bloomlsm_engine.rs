//! bloomlsm in the peers bench (benches/peers.rs): its options in each
//! setting, its fill and the figures it reports.

use super::*;
/// `opts` with bloomlsm's level sizing, target file size, L1 (with
/// dynamic sizing: base level) target and L0 triggers of `spec`
/// (`fixed|dynamic[:FILE_MIB[:L1_MIB[:TRIGGER/SLOWDOWN/STOP]]]`).
fn shape_override(opts: Options, spec: &str) -> Options {
    let fail = || -> ! {
        eprintln!(
            "error: BLOOMLSM_PEERS_SHAPE: {spec:?} is not fixed|dynamic[:FILE_MIB[:L1_MIB[:TRIGGER/SLOWDOWN/STOP]]]"
        );
        std::process::exit(2);
    };
    let mut parts = spec.split(':');
    let opts = match parts.next() {
        Some("fixed") => opts.dynamic_level_bytes(false),
        Some("dynamic") => opts.dynamic_level_bytes(true),
        _ => fail(),
    };
    let mib =
        |p: Option<&str>| p.map(|v| v.parse::<u64>().map(|m| m << 20).unwrap_or_else(|_| fail()));
    let opts = match mib(parts.next()) {
        Some(b) => opts.target_file_size(b),
        None => opts,
    };
    let opts = match mib(parts.next()) {
        Some(b) => opts.level1_max_bytes(b),
        None => opts,
    };
    match parts.next() {
        Some(l0) => {
            let t: Vec<usize> = l0
                .split('/')
                .map(|v| v.parse().unwrap_or_else(|_| fail()))
                .collect();
            let [trigger, slowdown, stop] = t[..] else {
                fail()
            };
            opts.l0_compaction_trigger(trigger)
                .l0_slowdown_trigger(slowdown)
                .l0_stop_trigger(stop)
        }
        None => opts,
    }
}
pub(super) struct Bloomlsm {
    db: Db,
    setting: Setting,
    /// The `BLOOMLSM_PEERS_SHAPE` entry it runs with, if any.
    shape: Option<String>,
}

impl Bloomlsm {
    pub(super) fn fill(
        dir: &Path,
        n: u64,
        load: bool,
        setting: Setting,
        shape: Option<String>,
    ) -> (Self, Duration) {
        let every = maintain_every();
        let opts = match setting {
            Setting::Shared => Options::default()
                .write_buffer_size(WRITE_BUFFER)
                .target_file_size(TARGET_FILE)
                .level1_max_bytes(LEVEL1_BYTES)
                .level_size_multiplier(FANOUT)
                .dynamic_level_bytes(false)
                .block_cache_capacity(CACHE_BYTES)
                .block_size(BLOCK_SIZE)
                // RocksDB's defaults (its L0 trigger is 4, as ours).
                .l0_slowdown_trigger(L0_SLOWDOWN)
                .l0_stop_trigger(L0_STOP)
                .filters(FilterOptions::uniform(Some(FilterPolicy::blocked512(
                    BITS_PER_KEY,
                )))),
            // Its defaults hold 8 MiB of cache, a 4 MiB write buffer and
            // every filter and index in memory already.
            Setting::Defaults => match &shape {
                Some(spec) => shape_override(Options::default(), spec),
                None => Options::default(),
            },
        }
        .background_compaction(every == 0)
        // The default is LZ4 below L0; every engine here stores blocks
        // uncompressed (fjall is built without lz4).
        .compression(bloomlsm::CompressionOptions::none());
        let mut opts = opts;
        if direct_io() {
            opts.read_mode = bloomlsm::ReadMode::Direct;
        }
        let db = Db::open(dir, opts).unwrap();
        let t = Instant::now();
        if !load {
            return (Bloomlsm { db, setting, shape }, Duration::ZERO);
        }
        let batch_len = batch_size();
        let mut batch = WriteBatch::new();
        for_each_record(n, |i, k, v| {
            if batch_len == 1 {
                db.put(k, v).unwrap();
            } else {
                batch.put(k, v);
                if batch.len() == batch_len {
                    db.write(std::mem::take(&mut batch)).unwrap();
                }
            }
            if every > 0 && i % every == every - 1 {
                db.maintain().unwrap();
            }
        });
        db.write(batch).unwrap();
        db.maintain().unwrap();
        let load = t.elapsed();
        (Bloomlsm { db, setting, shape }, load)
    }
}

/// Files and compactions per level of a bloomlsm store, to tell when its
/// background work has stopped.
fn bloomlsm_levels(db: &Db) -> (u64, Vec<usize>) {
    let s = db.stats();
    (s.compactions, s.levels.iter().map(|l| l.files).collect())
}

impl Engine for Bloomlsm {
    fn name(&self) -> &'static str {
        "bloomlsm"
    }
    fn row(&self) -> String {
        match &self.shape {
            Some(s) => format!("bloomlsm {s}"),
            None => "bloomlsm".to_string(),
        }
    }
    fn setting(&self) -> Setting {
        self.setting
    }
    /// After a second without writes the compaction thread merges an L0 of
    /// two or more files (`Options::idle_l0_compaction`) and rebuilds
    /// filters whose allocation moved: waits until the level shape holds
    /// for three polls 200 ms apart. Its bytes count in the write
    /// amplification; its time and CPU are not the load's.
    fn settle(&self) {
        if maintain_every() > 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(1200));
        let mut levels = bloomlsm_levels(&self.db);
        let mut still = 0;
        while still < 3 {
            std::thread::sleep(Duration::from_millis(200));
            let now = bloomlsm_levels(&self.db);
            still = if now == levels { still + 1 } else { 0 };
            levels = now;
        }
    }
    fn describe(&self) -> String {
        // The options in force, as the store reports them.
        let o = self.db.options();
        format!(
            "bloomlsm {} (this tree), {}: filters {}, filters+index in memory, {} B blocks, \
             {} MiB block cache, no compression, write buffer {} KiB, files {} KiB, \
             {} {} KiB x{}, L0 trigger/slowdown/stop {}/{}/{}, {}, {:?} reads",
            env!("CARGO_PKG_VERSION"),
            self.setting.label(),
            bloomlsm::filter::filter_spec(o.filters.policy.as_ref()),
            o.block_size,
            o.block_cache_capacity >> 20,
            o.write_buffer_size >> 10,
            o.target_file_size >> 10,
            if o.dynamic_level_bytes {
                "dynamic level sizing, base level at least"
            } else {
                "fixed level sizing, L1"
            },
            o.level1_max_bytes >> 10,
            o.level_size_multiplier,
            o.l0_compaction_trigger,
            o.l0_slowdown_trigger,
            o.l0_stop_trigger,
            match maintain_every() {
                0 => "compaction in the background".to_string(),
                n => format!("compaction in the writer thread every {n} keys"),
            },
            self.db.read_mode()
        )
    }
    fn compact(&self) {
        self.db.compact().unwrap();
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
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        format!(
            "files {} (in memory: filters {:.2} MiB, indexes {:.2} MiB, block cache {:.2} MiB, memtable {} B)",
            levels.join(" "),
            mib(s.filter_pinned_bytes),
            mib(s.index_pinned_bytes),
            mib(s.block_cache_bytes),
            s.memtable_bytes
        )
    }
    fn write_amplification(&self, _user_bytes: u64) -> Option<f64> {
        self.db.stats().write_amplification()
    }
    fn load_notes(&self) -> Option<String> {
        let s = self.db.stats();
        let mb = |b: u64| b as f64 / 1e6;
        let levels: Vec<String> = s
            .levels
            .iter()
            .filter(|l| l.writes != bloomlsm::LevelWrites::default())
            .map(|l| {
                let w = &l.writes;
                format!(
                    "\n    L{}: {} jobs wrote {:.0} MB (read {:.0} MB from above, {:.0} MB here), {} files moved in by {} moves ({:.0} MB)",
                    l.level,
                    w.jobs,
                    mb(w.bytes_written),
                    mb(w.bytes_read_above),
                    mb(w.bytes_read_here),
                    w.files_moved,
                    w.moves,
                    mb(w.bytes_moved)
                )
            })
            .collect();
        Some(format!(
            "{} flushes, {} compactions, {} write slowdowns, {} write stalls; per level:{}",
            s.flushes,
            s.compactions,
            s.write_slowdowns,
            s.write_stalls,
            levels.concat()
        ))
    }
    fn reset_counters(&self) {
        self.db.reset_stats();
    }
    fn counters(&self, missing: u64) -> String {
        let s = self.db.stats();
        assert_eq!(s.gets_missing(), missing);
        let per_level: Vec<String> = s
            .levels
            .iter()
            .filter(|l| l.io.filter_checks > 0)
            .map(|l| {
                format!(
                    "L{} {:.2}",
                    l.level,
                    l.io.filter_checks as f64 / missing as f64
                )
            })
            .collect();
        format!(
            "filter probes/missing get {:.2} ({}), data-block reads/missing get {:.4} (predicted {:.4}, disk {:.4}), observed FPR {:.3}%",
            s.total.filter_checks as f64 / missing as f64,
            per_level.join(", "),
            s.block_reads_per_missing_get(),
            s.predicted_block_reads_per_missing_get(),
            s.missing_get_disk_reads as f64 / missing as f64,
            s.total.observed_fpr().unwrap_or(0.0) * 100.0
        )
    }
}
