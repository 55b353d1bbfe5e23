//! Flushes and compactions: the background threads' loop, running each job
//! and installing its result with one MANIFEST edit.

use super::*;
use compaction::allocation;

/// How long the store must go without a write before the compaction thread
/// rebuilds filters ([`Inner::idle`]).
pub(super) const REFILTER_IDLE: Duration = Duration::from_secs(1);

/// The work of a background thread.
#[derive(Clone, Copy)]
pub(super) enum Job {
    /// Flushes frozen memtables, oldest first.
    Flush,
    /// Runs due compactions (only with `background_compaction`).
    Compaction,
}

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
    let plan = workload_plan(opts, 0, policy, || {
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

/// The workload-aware allocation's plan for a flush or compaction into
/// `level`, whose level gets `policy`, when the store uses it
/// ([`crate::FilterOptions::workload_aware`]) and the level has a filter:
/// the family and the plan made from what `what` gives (the version, the
/// files whose rates the outputs inherit, the files replaced, the pieces
/// written, the store's lookups).
#[allow(clippy::type_complexity)]
fn workload_plan<'a>(
    opts: &Options,
    level: usize,
    policy: Option<crate::filter::FilterPolicy>,
    what: impl FnOnce() -> (
        &'a Version,
        Vec<(usize, &'a FileHandle)>,
        Vec<u64>,
        Vec<allocation::Piece<'a>>,
        u64,
    ),
) -> Option<(crate::filter::FilterKind, allocation::Plan)> {
    let avg = opts.filters.workload_avg_bits_per_key?;
    let kind = policy?.kind();
    let (v, sources, replaced, pieces, lookups) = what();
    Some((
        kind,
        allocation::Plan::new(v, level, &sources, &replaced, &pieces, kind, avg, lookups),
    ))
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

    /// Wakes the background threads and waits until `done` holds of the
    /// state; the store's first fatal error, or its closing, ends the wait
    /// with that error.
    pub(super) fn wait_for_state(&self, done: impl Fn(&State) -> bool) -> Result<()> {
        self.cv.notify_all();
        let mut st = self.state();
        loop {
            if let Some(e) = &st.bg_error {
                return Err(e.duplicate());
            }
            if done(&st) {
                return Ok(());
            }
            if st.shutting_down {
                return Err(Error::Closed);
            }
            st = self
                .cv
                .wait_timeout(st, Duration::from_millis(50))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// A background thread: runs `job` whenever it has work, until shutdown.
    /// After an error (which poisons the store) it only waits for shutdown.
    pub(super) fn background_loop(&self, job: Job) {
        loop {
            {
                let mut st = self.state();
                loop {
                    if st.shutting_down {
                        return;
                    }
                    if st.bg_error.is_none() && self.has_work(&st, job) {
                        break;
                    }
                    st = self
                        .cv
                        .wait_timeout(st, Duration::from_millis(200))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
            // A failure (an error or a panic) has poisoned the store in
            // `guarded`; this thread then only waits for shutdown.
            let _ = match job {
                Job::Flush => self.flush_one(),
                Job::Compaction => self.compact_once(self.idle()),
            };
            // Writers may wait for room; the other thread may have work now.
            self.cv.notify_all();
        }
    }

    pub(super) fn has_work(&self, st: &State, job: Job) -> bool {
        match job {
            Job::Flush => !st.imm.is_empty(),
            Job::Compaction => self.compaction_due(st),
        }
    }

    pub(super) fn compaction_due(&self, st: &State) -> bool {
        self.opts.background_compaction
            && (compaction::scores(st.vs.current(), &self.opts)
                .iter()
                .any(|&s| s >= 1.0)
                || (self.idle()
                    && (compaction::idle_l0(st.vs.current(), &self.opts, &st.vs.pointers)
                        .is_some()
                        || self.refilter_pick(st.vs.current()).is_some())))
    }

    /// The next filter rebuild due on `v` ([`compaction::refilter::pick`]),
    /// remembering the version on which none is: the answer depends on the
    /// version and the options alone, and examining every file every time
    /// an idle store's compaction thread wakes (each 200 ms) cost it 10%
    /// of a core on a store of 2,400 files.
    pub(super) fn refilter_pick(&self, v: &Arc<Version>) -> Option<compaction::refilter::Refilter> {
        let mut clear = self
            .refilter_clear
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // The Weak keeps the version's allocation, so no other version
        // can have its address.
        if std::ptr::eq(clear.as_ptr(), Arc::as_ptr(v)) {
            return None;
        }
        let r = compaction::refilter::pick(v, &self.opts);
        if r.is_none() {
            *clear = Arc::downgrade(v);
        }
        r
    }

    /// Whether no write has been acknowledged for [`REFILTER_IDLE`]: the
    /// compaction thread rebuilds filters and merges L0 below its trigger
    /// ([`compaction::idle_l0`]) only then, so that a tree still growing is
    /// not rewritten for every allocation it passes through, nor its L0
    /// merged more often than its trigger says.
    pub(super) fn idle(&self) -> bool {
        let last = self.last_write_ms.load(Ordering::Relaxed);
        self.opened_at.elapsed().as_millis() as u64
            >= last.saturating_add(REFILTER_IDLE.as_millis() as u64)
    }

    /// The next filter rebuild due on the current version, if any.
    #[cfg(test)]
    pub(super) fn refilter_due(&self) -> Option<compaction::refilter::Refilter> {
        compaction::refilter::pick(self.state().vs.current(), &self.opts)
    }

    /// Flushes the oldest frozen memtable, if any. Returns whether it did.
    pub(super) fn flush_one(&self) -> Result<bool> {
        let _work = self.flush_work.lock().unwrap_or_else(|p| p.into_inner());
        self.guarded("flush", || self.flush_one_locked())
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
        let mut st = self.state();
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
        st.vs
            .log_and_apply(edit, &opened, self.last_seq.load(Ordering::Acquire))?;
        st.flushed_seq = st.imm.remove(0).last_seq;
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
        let mem_now = self.super_version().mem.clone();
        self.install(&st, mem_now);
        drop(st);
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        if self.ks_id == 0 {
            self.delete_logs(old_log_number, log_number);
        } else {
            // The store's logs this keyspace held back may go now.
            self.retire_logs()?;
        }
        Ok(true)
    }

    /// Runs one picked compaction, if any is due. Returns whether it did.
    pub(super) fn compact_once(&self, idle: bool) -> Result<bool> {
        let _work = self.compact_work.lock().unwrap_or_else(|p| p.into_inner());
        self.guarded("compaction", || self.compact_once_locked(idle))
    }

    /// Runs the most urgent compaction, or when none is due and the store
    /// is `idle`, the merge of its L0 files ([`compaction::idle_l0`]) or
    /// else one filter rebuild ([`compaction::refilter`]).
    pub(super) fn compact_once_locked(&self, idle: bool) -> Result<bool> {
        let (c, v) = {
            let st = self.state();
            let v = st.vs.current();
            let idle_merge = || {
                if idle && self.opts.background_compaction {
                    compaction::idle_l0(v, &self.opts, &st.vs.pointers)
                } else {
                    None
                }
            };
            match compaction::pick(v, &self.opts, &st.vs.pointers).or_else(idle_merge) {
                Some(c) => (Ok(c), v.clone()),
                None => match idle.then(|| self.refilter_pick(v)).flatten() {
                    Some(r) => (Err(r), v.clone()),
                    None => return Ok(false),
                },
            }
        };
        inject::hit(&self.dir, inject::Point::Compaction)?;
        let obsolete = match c {
            Ok(c) => self.run_compaction(c, &v)?,
            Err(r) => self.run_refilters(vec![r], &v)?,
        };
        self.table_files.retire(obsolete, v);
        Ok(true)
    }

    /// Merges every level into one: each non-empty level in turn, top down,
    /// into the next non-empty level below it (empty levels in between are
    /// skipped, not rewritten), ending in the deepest level holding data. With
    /// fixed level sizes that is at least L1; with dynamic sizes, when only L0
    /// holds data, the base level (the last level while the store is small).
    pub(super) fn compact_all(&self) -> Result<()> {
        let _work = self.compact_work.lock().unwrap_or_else(|p| p.into_inner());
        self.guarded("compaction", || self.compact_all_locked())
    }

    pub(super) fn compact_all_locked(&self) -> Result<()> {
        inject::hit(&self.dir, inject::Point::Compaction)?;
        let target = {
            let st = self.state();
            let last = st.vs.current().last_nonempty_level();
            if last > 0 {
                last
            } else if self.opts.dynamic_level_bytes {
                compaction::shape(st.vs.current(), &self.opts).base
            } else {
                1
            }
        };
        for level in 0..target {
            let (c, v) = {
                let st = self.state();
                let v = st.vs.current();
                let output = (level + 1..target)
                    .find(|&l| !v.levels[l].is_empty())
                    .unwrap_or(target);
                (
                    compaction::whole_or_next(v, level, output, &st.vs.pointers, true, 0),
                    v.clone(),
                )
            };
            let obsolete = if c.inputs.is_empty() {
                Vec::new()
            } else {
                self.run_compaction(c, &v)?
            };
            self.table_files.retire(obsolete, v);
        }
        Ok(())
    }

    /// Runs compaction `c` picked from `v` and installs its result. Returns
    /// the files it made obsolete, for [`TableFiles::retire`].
    pub(super) fn run_compaction(
        &self,
        mut c: Compaction,
        v: &Arc<Version>,
    ) -> Result<Vec<Arc<FileHandle>>> {
        let out_level = c.output_level();
        let mut runs: Vec<(usize, u64)> = v.runs();
        let moved: u64 = c.all_inputs().map(|f| f.meta.entries).sum();
        // The output level as it will be: its untouched files plus the inputs.
        for r in runs.iter_mut().filter(|r| r.0 == out_level) {
            r.1 += c.inputs.iter().map(|f| f.meta.entries).sum::<u64>();
        }
        if !runs.iter().any(|r| r.0 == out_level) {
            runs.push((out_level, moved));
        }
        runs.retain(|r| !(r.0 == c.level && c.level == 0));
        let last_level = v.last_nonempty_level().max(out_level);
        let policy = self.opts.filters.policy_for(out_level, &runs, last_level);
        let lookups = self.lookups();
        // The outputs inherit the rates of the files they replace; they are
        // stood in for by the ranges of the output level's inputs (or the
        // whole range), each with the entries of the inputs it covers.
        let (lo, hi) = c.range();
        let plan = workload_plan(&self.opts, out_level, policy, || {
            let inputs: Vec<(usize, &FileHandle)> = c
                .inputs
                .iter()
                .map(|f| (c.level, &**f))
                .chain(c.next_inputs.iter().map(|f| (out_level, &**f)))
                .collect();
            let replaced = inputs.iter().map(|(_, f)| f.number()).collect();
            let pieces = compaction_pieces(&c, &lo, &hi);
            (&**v, inputs, replaced, pieces, lookups)
        });
        let choose = plan.as_ref().map(|(kind, plan)| {
            move |lo: &[u8], hi: &[u8], n: u64| plan.policy(*kind, out_level, lo, hi, n)
        });
        let choose = choose.as_ref().map(|c| c as &compaction::ChooseFilter<'_>);
        // Under the workload-aware allocation a file keeps its bits when it
        // moves: only a file of another family is rewritten.
        let same_filter = |f: &FileHandle| {
            let have = f.meta.filter.as_ref().and_then(|m| m.policy());
            if plan.is_some() {
                have.map(|p| p.kind()) == policy.map(|p| p.kind())
            } else {
                have == policy
            }
        };

        // A move (`Compaction::move_only`): a file of a level >= 1 that meets
        // nothing below goes down with the files after it that meet nothing
        // either (`extend_trivial_move`); picked L0 files that meet nothing
        // go down together. The run is chosen without looking at filters, so every filter
        // configuration gets the same tree; each file in it is then moved
        // as it is, or rewritten alone where the output level wants another
        // filter policy or compression.
        // (A full compaction, which takes a level's files together, merges
        // them as before.)
        let moving = c.move_only;
        if moving && c.level > 0 {
            compaction::extend_trivial_move(
                v,
                &mut c,
                self.opts.target_file_size.saturating_mul(25),
            );
        }
        let out_compression = self.opts.compression.for_level(out_level);
        let (moved, rewritten): (Vec<Arc<FileHandle>>, Vec<Arc<FileHandle>>) =
            c.inputs.iter().cloned().partition(|f| {
                moving && same_filter(f) && f.table.compression() == out_compression
            });
        let wrote = !rewritten.is_empty() || !c.next_inputs.is_empty();
        let mut written: Vec<Arc<FileHandle>> = Vec::new();
        if wrote {
            let retention = self.retention();
            let run = |c: &Compaction, size: OutputSize| {
                compaction::run(
                    &self.dir,
                    &self.opts,
                    size,
                    v,
                    c,
                    policy,
                    choose,
                    self,
                    &retention,
                    self.caches.clone(),
                )
            };
            let mut bytes_written = 0;
            if moving {
                // A file rewritten in place of a move stays one file, as moved.
                for f in &rewritten {
                    let one = Compaction {
                        level: c.level,
                        inputs: vec![f.clone()],
                        next_inputs: Vec::new(),
                        output_level: out_level,
                        move_only: false,
                    };
                    let out = run(&one, OutputSize::Whole)?;
                    bytes_written += out.bytes_written;
                    written.extend(out.files);
                }
            } else {
                let out = run(&c, OutputSize::Target(self.opts.target_file_size))?;
                bytes_written = out.bytes_written;
                written = out.files;
            }
            filename::sync_dir_in(self.fs(), &self.dir)?;
            match &plan {
                Some((_, plan)) => plan.record(&written),
                None => allocation::note_written(&written, lookups),
            }
            self.counters
                .bytes_compacted
                .fetch_add(bytes_written, Ordering::Relaxed);
        }
        let mut edit = VersionEdit::new();
        for f in &c.inputs {
            edit.deleted_files.push((c.level, f.number()));
        }
        for f in &c.next_inputs {
            edit.deleted_files.push((out_level, f.number()));
        }
        for f in moved.iter().chain(&written) {
            edit.new_files.push((out_level, f.meta.clone()));
        }
        let mut st = self.state();
        let seq = self.last_seq.load(Ordering::Acquire);
        if wrote {
            st.vs.log_and_apply(edit, &written, seq)?;
        } else {
            // Lost in a power failure, the move leaves the files where they were.
            st.vs.log_and_apply_unsynced(edit, seq)?;
        }
        if let Some(last) = c.inputs.iter().map(|f| f.largest_user_key()).max() {
            st.vs.pointers[c.level] = last.to_vec();
        }
        let mem_now = self.super_version().mem.clone();
        // The files merged leave the version: keep their lookup counts in
        // their levels' totals (a moved file keeps its own).
        for f in &rewritten {
            self.counters.retired_io[c.level].add(&f.io.load());
        }
        for f in &c.next_inputs {
            self.counters.retired_io[out_level].add(&f.io.load());
        }
        self.install(&st, mem_now);
        drop(st);
        self.counters.compactions.fetch_add(1, Ordering::Relaxed);
        let bytes = |files: &[Arc<FileHandle>]| files.iter().map(|f| f.meta.file_size).sum::<u64>();
        self.add_level_writes(
            out_level,
            &LevelWrites {
                jobs: u64::from(wrote),
                bytes_written: bytes(&written),
                bytes_read_above: bytes(&rewritten),
                bytes_read_here: bytes(&c.next_inputs),
                moves: u64::from(!wrote),
                files_moved: moved.len() as u64,
                bytes_moved: bytes(&moved),
            },
        );
        // Deleted behind this thread (`TableFiles::retire`); readers
        // holding an older version keep their open descriptors.
        Ok(rewritten.into_iter().chain(c.next_inputs).collect())
    }

    pub(super) fn add_level_writes(&self, level: usize, w: &LevelWrites) {
        self.counters
            .level_writes
            .lock()
            .unwrap_or_else(|p| p.into_inner())[level]
            .add(w);
    }
}

/// Stand-ins for what compaction `c` over `lo..=hi` writes: the ranges of
/// the output level's inputs (or the whole range without any), each with
/// its entries and its part of the upper inputs', scaled so that they hold
/// every input entry.
fn compaction_pieces<'c>(
    c: &'c Compaction,
    lo: &'c [u8],
    hi: &'c [u8],
) -> Vec<allocation::Piece<'c>> {
    let total: u64 = c.all_inputs().map(|f| f.meta.entries).sum();
    if c.next_inputs.is_empty() {
        return vec![allocation::Piece {
            lo,
            hi,
            entries: total,
        }];
    }
    let mut pieces: Vec<(allocation::Piece<'c>, f64)> = c
        .next_inputs
        .iter()
        .map(|n| {
            let (a, b) = (n.smallest_user_key(), n.largest_user_key());
            let above: f64 = c
                .inputs
                .iter()
                .map(|u| {
                    u.meta.entries as f64
                        * crate::db::version::covered_part(
                            u.smallest_user_key(),
                            u.largest_user_key(),
                            a,
                            b,
                        )
                })
                .sum();
            let piece = allocation::Piece {
                lo: a,
                hi: b,
                entries: 0,
            };
            (piece, n.meta.entries as f64 + above)
        })
        .collect();
    let sum: f64 = pieces.iter().map(|(_, e)| e).sum();
    for (p, e) in &mut pieces {
        p.entries = (*e * total as f64 / sum.max(1.0)).round() as u64;
    }
    pieces.into_iter().map(|(p, _)| p).collect()
}
