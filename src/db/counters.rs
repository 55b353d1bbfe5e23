//! What the store counts (lookups, flushes and compactions, bytes written,
//! stalls) and the [`Stats`] it assembles from them and from the current
//! version.

use super::*;

/// The counters behind [`Stats`], kept since the store was opened (the
/// lookup counters since the last [`Db::reset_stats`]).
pub(super) struct Counters {
    pub(super) gets: GetCounters,
    /// Lookups counted before `Db::reset_stats` zeroed `gets`: with them,
    /// the store's lookups since open ([`Inner::lookups`]).
    pub(super) carried_gets: AtomicU64,
    /// Counts of files that compactions removed, per level they left.
    pub(super) retired_io: Vec<AtomicIo>,
    /// What flushes and compactions wrote into each level since open
    /// (added to once per job: a lock is simpler than a set of atomics).
    pub(super) level_writes: Mutex<Vec<LevelWrites>>,
    pub(super) flushes: AtomicU64,
    pub(super) compactions: AtomicU64,
    /// Files rewritten with the filter their level gets now (`refilter`).
    pub(super) filter_rebuilds: AtomicU64,
    /// Of those, the ones whose data blocks were copied as stored.
    pub(super) filter_rebuilds_copied: AtomicU64,
    /// Keys + values of the ops acknowledged by `Db::write` since open.
    pub(super) user_bytes_written: AtomicU64,
    /// Table bytes written by flushes since open (not by recovery).
    pub(super) bytes_flushed: AtomicU64,
    /// Table bytes written by compactions since open.
    pub(super) bytes_compacted: AtomicU64,
    pub(super) slowdowns: AtomicU64,
    pub(super) stalls: AtomicU64,
    pub(super) wal_tail_dropped: u64,
    pub(super) wal_salvaged: u64,
    /// The store's lookup history as the handle found it, and what resets
    /// folded into it (`lookups.rs`).
    pub(super) history: Mutex<lookups::HistoryBase>,
}

impl Counters {
    /// Counters for a store of `levels` levels whose open dropped
    /// `wal_tail_dropped` bytes of WAL and skipped `wal_salvaged` records,
    /// whose lookup history was `history` at open.
    pub(super) fn new(
        levels: usize,
        wal_tail_dropped: u64,
        wal_salvaged: u64,
        history: lookups::HistoryBase,
    ) -> Self {
        Counters {
            gets: GetCounters::default(),
            carried_gets: AtomicU64::new(0),
            retired_io: (0..levels).map(|_| AtomicIo::default()).collect(),
            level_writes: Mutex::new(vec![LevelWrites::default(); levels]),
            flushes: AtomicU64::new(0),
            compactions: AtomicU64::new(0),
            filter_rebuilds: AtomicU64::new(0),
            filter_rebuilds_copied: AtomicU64::new(0),
            user_bytes_written: AtomicU64::new(0),
            bytes_flushed: AtomicU64::new(0),
            bytes_compacted: AtomicU64::new(0),
            slowdowns: AtomicU64::new(0),
            stalls: AtomicU64::new(0),
            wal_tail_dropped,
            wal_salvaged,
            history: Mutex::new(history),
        }
    }
}

impl Inner {
    pub(super) fn stats(&self) -> Stats {
        let sv = self.super_version();
        let g = &self.counters.gets;
        let mut s = Stats {
            gets: g.get(Get::Gets),
            gets_found: g.get(Get::Found),
            memtable_answers: g.get(Get::MemtableAnswers),
            missing_get_block_reads: g.get(Get::MissingBlockReads),
            missing_get_disk_reads: g.get(Get::MissingDiskReads),
            missing_get_predicted_reads: g.get(Get::MissingPredictedNano) as f64 / 1e9,
            range_tombstone_checks: g.get(Get::RangeTombstoneChecks),
            range_tombstone_files: g.get(Get::RangeTombstoneFiles),
            gets_range_deleted: g.get(Get::RangeDeleted),
            flushes: self.counters.flushes.load(Ordering::Relaxed),
            compactions: self.counters.compactions.load(Ordering::Relaxed),
            filter_rebuilds: self.counters.filter_rebuilds.load(Ordering::Relaxed),
            filter_rebuilds_copied: self.counters.filter_rebuilds_copied.load(Ordering::Relaxed),
            user_bytes_written: self.counters.user_bytes_written.load(Ordering::Relaxed),
            bytes_flushed: self.counters.bytes_flushed.load(Ordering::Relaxed),
            bytes_compacted: self.counters.bytes_compacted.load(Ordering::Relaxed),
            write_slowdowns: self.counters.slowdowns.load(Ordering::Relaxed),
            write_stalls: self.counters.stalls.load(Ordering::Relaxed),
            wal_tail_bytes_dropped: self.counters.wal_tail_dropped,
            wal_records_salvaged: self.counters.wal_salvaged,
            table_files_open: self.caches.tables.open_files() as u64,
            table_reopens: self.caches.tables.reopens(),
            block_cache_bytes: self
                .caches
                .blocks
                .as_ref()
                .map_or(0, |c| c.stats().usage as u64),
            memtable_bytes: std::iter::once(&sv.mem)
                .chain(&sv.imm)
                .map(|m| m.approximate_memory_bytes() as u64)
                .sum(),
            ..Stats::default()
        };
        s.base_level = compaction::shape(&sv.version, &self.opts).base;
        let writes = self
            .counters
            .level_writes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for (level, files) in sv.version.levels.iter().enumerate() {
            let mut l = LevelStats {
                level,
                files: files.len(),
                io: self.counters.retired_io[level].load(),
                writes: writes[level],
                ..LevelStats::default()
            };
            let mut weighted = 0.0;
            let mut prefix_fpr_sum = 0.0;
            let mut range_fpr_sum = 0.0;
            let mut policies: Vec<(String, usize)> = Vec::new();
            for f in files {
                l.io.add(&f.io.load());
                l.entries += f.meta.entries;
                l.file_bytes += f.meta.file_size;
                l.data_bytes += f.data_bytes();
                l.data_raw_bytes += f.table.properties().data_raw_size;
                let info = f.table.filter_info();
                let usable = info.filter(|x| x.is_usable());
                let bytes = usable.map_or(0, |x| x.memory_bytes as u64);
                l.filter_bytes += bytes;
                if f.filter_pinned() {
                    l.filter_pinned_bytes += bytes;
                }
                s.index_bytes += f.table.index_full_memory_bytes() as u64;
                s.index_pinned_bytes += f.table.index_memory_bytes() as u64;
                match usable {
                    Some(x) => l.filtered_keys += x.key_count,
                    None => l.unfiltered_files += 1,
                }
                weighted += f.predicted_fpr() * f.meta.entries as f64;
                if let Some(pf) = iter::usable_prefix_filter(&f.table, self.opts.prefix_extractor) {
                    l.prefix_filtered_files += 1;
                    prefix_fpr_sum += pf.filter.predicted_fpr();
                }
                if let Some(Ok(rf)) = f.table.range_filter() {
                    l.range_filtered_files += 1;
                    range_fpr_sum += rf.points() as f64 / rf.reduced_universe() as f64;
                }
                let name = match (info, &f.meta.filter) {
                    (Some(x), Some(m)) if x.is_usable() => {
                        format!("{}({} b/k, k={})", m.name, m.bits_per_key, x.num_probes)
                    }
                    (Some(_), Some(m)) => format!("{}(unusable)", m.name),
                    _ => "none".to_string(),
                };
                match policies.iter_mut().find(|(n, _)| *n == name) {
                    Some(p) => p.1 += 1,
                    None => policies.push((name, 1)),
                }
            }
            l.predicted_fpr = if l.entries > 0 {
                weighted / l.entries as f64
            } else {
                0.0
            };
            if l.prefix_filtered_files > 0 {
                l.prefix_predicted_fpr = prefix_fpr_sum / l.prefix_filtered_files as f64;
            }
            if l.range_filtered_files > 0 {
                l.range_fpr_per_point = range_fpr_sum / l.range_filtered_files as f64;
            }
            l.policies = policies
                .iter()
                .map(|(n, c)| format!("{n} x{c}"))
                .collect::<Vec<_>>()
                .join(", ");
            s.filter_bytes += l.filter_bytes;
            s.filter_pinned_bytes += l.filter_pinned_bytes;
            s.total.add(&l.io);
            s.levels.push(l);
        }
        s.metadata_memory_bytes = s.filter_pinned_bytes + s.index_pinned_bytes;
        s
    }

    /// [`Db::file_stats`].
    pub(super) fn file_stats(&self) -> Vec<FileStats> {
        let sv = self.super_version();
        let mut out = Vec::new();
        let chances = sv.version.probe_chances();
        for (level, files) in sv.version.levels.iter().enumerate() {
            for (f, &probe_chance) in files.iter().zip(&chances[level]) {
                let info = f.table.filter_info();
                let usable = info.filter(|x| x.is_usable());
                out.push(FileStats {
                    level,
                    number: f.number(),
                    file_bytes: f.meta.file_size,
                    data_bytes: f.data_bytes(),
                    data_raw_bytes: f.table.properties().data_raw_size,
                    compression: f.table.compression().to_string(),
                    entries: f.meta.entries,
                    smallest: f.smallest_user_key().to_vec(),
                    largest: f.largest_user_key().to_vec(),
                    filter: f.table.filter_policy_name().unwrap_or("none").to_string(),
                    bits_per_key: usable.map_or(0.0, |x| x.bits_per_key()),
                    filter_usable: usable.is_some(),
                    filter_pinned: f.filter_pinned(),
                    filter_partitions: info.map_or(0, |x| x.partitions),
                    index_partitions: f.table.index_partitions(),
                    index_pinned: f.table.index_pinned(),
                    probe_chance,
                    predicted_fpr: f.predicted_fpr(),
                    io: f.io.load(),
                });
            }
        }
        out
    }

    /// [`Db::reset_stats`].
    pub(super) fn reset_stats(&self) {
        // The workload-aware allocation's history outlives the reset, and
        // so does the store's lookup history.
        self.fold_lookup_history();
        self.counters
            .carried_gets
            .fetch_add(self.counters.gets.get(Get::Gets), Ordering::Relaxed);
        self.counters.gets.reset();
        for l in &self.counters.retired_io {
            l.reset();
        }
        for f in self.super_version().version.levels.iter().flatten() {
            f.history.carry(&f.io.load());
            f.io.reset();
        }
    }

    /// The store's lookups since open, `reset_stats` or not: the clock of
    /// the workload-aware allocation's rates.
    pub(super) fn lookups(&self) -> u64 {
        self.counters.carried_gets.load(Ordering::Relaxed) + self.counters.gets.get(Get::Gets)
    }

    /// Adds one job's writes `w` to `level`'s totals.
    pub(super) fn add_level_writes(&self, level: usize, w: &LevelWrites) {
        self.counters
            .level_writes
            .lock()
            .unwrap_or_else(|p| p.into_inner())[level]
            .add(w);
    }
}
