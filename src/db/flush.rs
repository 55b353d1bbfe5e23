//! Flushes: a frozen memtable written as one L0 table and installed
//! ([`Inner::install_change`]), oldest first, on the flush thread or the
//! caller of [`Db::flush`].

use super::*;
use compaction::allocation;
use install::Change;

/// Writes `mem` as a table numbered `number`, keeping of each key the
/// versions `retention` keeps (tombstones stay: older values may live in
/// deeper levels). `lookups`: the store's lookups so far ([`Inner::lookups`]),
/// for the workload-aware allocation.
#[allow(clippy::too_many_arguments)]
pub(crate) fn flush_memtable(
    dir: &Path,
    opts: &Options,
    mem: &MemTable,
    number: u64,
    v: &Version,
    retention: &Retention,
    caches: Caches,
    lookups: u64,
) -> Result<Option<Arc<FileHandle>>> {
    /// A flush writes exactly one file ([`OutputSize::Whole`]).
    struct Fixed(u64);
    impl FileNumbers for Fixed {
        fn next_file_number(&self) -> Result<u64> {
            Ok(self.0)
        }
    }
    let mut runs = v.runs();
    runs.push((0, mem.len() as u64));
    let policy = opts
        .filters
        .policy_for(0, &runs, v.last_nonempty_level().max(1));
    // The new L0 file inherits the rate of the L0 files in place, each of
    // which spans about the whole key space as it will.
    let plan = allocation::workload_plan(opts, 0, policy, || {
        let l0: Vec<(usize, &FileHandle)> = v.levels[0].iter().map(|f| (0, &**f)).collect();
        let whole = allocation::Piece {
            lo: b"",
            hi: &[0xff; 8],
            entries: mem.len() as u64,
        };
        (v, l0, Vec::new(), vec![whole], lookups)
    });
    let choose = plan
        .as_ref()
        .map(|(kind, plan)| move |lo: &[u8], hi: &[u8], n: u64| plan.policy(*kind, 0, lo, hi, n));
    let tombstones = mem.range_tombstones().unwrap_or_default();
    let out = compaction::write_outputs(
        dir,
        opts,
        OutputSize::Whole,
        mem.iter().map(Ok),
        policy,
        opts.compression.for_level(0),
        &Fixed(number),
        retention,
        &|_| false,
        &tombstones,
        &|_, _| false,
        &[],
        choose.as_ref().map(|c| c as &compaction::ChooseFilter<'_>),
        caches,
    )?;
    if let Some((_, plan)) = &plan {
        plan.record(&out.files);
    } else {
        allocation::note_written(&out.files, lookups);
    }
    Ok(out.files.into_iter().next())
}

impl Inner {
    pub(super) fn flush(&self) -> Result<()> {
        let mut w = self
            .writer
            .lock()
            .map_err(|_| Error::lock_poisoned("writer lock"))?;
        self.freeze_for_flush(&mut w)?;
        drop(w);
        self.wait_for_flushes()
    }

    /// Freezes the active memtable, if it holds anything, for the flush
    /// thread. The caller holds the writer lock.
    pub(super) fn freeze_for_flush(&self, w: &mut Writer) -> Result<()> {
        if w.wal.is_none() {
            return Err(Error::ReadOnly);
        }
        if !w.mem.is_empty() {
            let mut st = self.state();
            if let Some(e) = &st.bg_error {
                return Err(e.duplicate());
            }
            self.freeze_memtable(w, &mut st)?;
        }
        Ok(())
    }

    /// Waits until no frozen memtable awaits its flush.
    pub(super) fn wait_for_flushes(&self) -> Result<()> {
        self.wait_for_state(|st| st.imm.is_empty())
    }

    /// Flushes the oldest frozen memtable, if any. Returns whether it did.
    pub(super) fn flush_one(&self) -> Result<bool> {
        let flushed = {
            let _work = self.flush_work.lock().unwrap_or_else(|p| p.into_inner());
            self.guarded("flush", || self.flush_one_locked())
        };
        if let Ok(true) = flushed {
            // Advice, not state: a failure to keep the lookups is not the
            // flush's.
            let _ = self.save_lookup_history();
        }
        flushed
    }

    pub(super) fn flush_one_locked(&self) -> Result<bool> {
        let (mem, version) = {
            let st = self.state();
            match st.imm.first() {
                Some(f) => (f.mem.clone(), st.vs.current().clone()),
                None => return Ok(false),
            }
        };
        inject::hit(&self.dir, inject::Point::Flush)?;
        let number = self.next_file_number()?;
        let fh = flush_memtable(
            &self.dir,
            &self.opts,
            &mem,
            number,
            &version,
            &self.retention(),
            self.caches.clone(),
            self.lookups(),
        )?;
        filename::sync_dir_in(self.fs(), &self.dir)?;
        let st = self.state();
        let mut edit = VersionEdit::new();
        let old_log_number = st.vs.log_number();
        let mut log_number = old_log_number;
        if self.ks_id == 0 {
            // The next frozen memtable's log, or the active one's, unless
            // another keyspace still needs an older one.
            log_number = self.log_need(st.imm.get(1).map_or(st.wal_number, |f| f.wal));
            edit.log_number = Some(log_number);
        }
        if self.ks_id != 0 || !st.vs.keyspaces().is_empty() {
            // Logs may outlive this flush: replay skips what it wrote.
            edit.flushed_sequence = Some(st.imm[0].last_seq);
        }
        let opened: Vec<Arc<FileHandle>> = fh.into_iter().collect();
        for fh in &opened {
            edit.new_files.push((0, fh.meta.clone()));
        }
        let change = Change {
            edit,
            written: &opened,
            replaced: Vec::new(),
            synced: true,
            seq: self.last_seq.load(Ordering::Acquire),
            during: "flush",
        };
        // The flushed memtable leaves with the version that holds its table.
        let (st, _) = self.install_change(st, change, |st| {
            st.flushed_seq = st.imm.remove(0).last_seq;
        })?;
        for fh in &opened {
            self.counters
                .bytes_flushed
                .fetch_add(fh.meta.file_size, Ordering::Relaxed);
            self.add_level_writes(
                0,
                &LevelWrites {
                    jobs: 1,
                    bytes_written: fh.meta.file_size,
                    ..LevelWrites::default()
                },
            );
        }
        // Counted before the state lock is released: a caller waiting for
        // the flush ([`Db::flush`]) sees it done and counted at once.
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        drop(st);
        if self.ks_id == 0 {
            self.delete_logs(old_log_number, log_number);
        } else {
            // The store's logs this keyspace held back may go now.
            self.retire_logs()?;
        }
        Ok(true)
    }
}
