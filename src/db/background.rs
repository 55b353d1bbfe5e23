//! The background threads: the flush thread and the compaction thread each
//! run their job ([`Job`]) whenever it has work, until shutdown; callers
//! wait on them through [`Inner::wait_for_state`].

use super::*;

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

impl Inner {
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
    /// version and the options, and examining every file every time an idle
    /// store's compaction thread wakes (each 200 ms) cost it 10% of a core
    /// on a store of 2,400 files. Under the workload-aware allocation it
    /// depends on the lookup rates too: a version found clear is judged
    /// again once the store has served a half-life of lookups since
    /// ([`compaction::allocation::half_life`]), each judgement sampling the
    /// files' rates first, so that the bits follow a hot range that moves
    /// while the store only reads; a store whose lookups stay where they
    /// were finds nothing to rewrite.
    pub(super) fn refilter_pick(&self, v: &Arc<Version>) -> Option<compaction::refilter::Refilter> {
        let mut clear = self
            .refilter_clear
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let lookups = self.lookups();
        let by_rates = self.opts.filters.workload_avg_bits_per_key.is_some();
        // The Weak keeps the version's allocation, so no other version
        // can have its address.
        if std::ptr::eq(clear.0.as_ptr(), Arc::as_ptr(v))
            && (!by_rates
                || (lookups.saturating_sub(clear.1) as f64) < compaction::allocation::half_life(v))
        {
            return None;
        }
        if by_rates {
            compaction::allocation::sample(v, lookups);
        }
        let r = compaction::refilter::pick(v, &self.opts, lookups);
        if r.is_none() {
            *clear = (Arc::downgrade(v), lookups);
        }
        r
    }

    /// Whether no write has been acknowledged for [`REFILTER_IDLE`]: the
    /// compaction thread rebuilds filters and merges L0 below its trigger
    /// ([`compaction::idle_l0`]) only then, so that a tree still growing is
    /// not rewritten for every allocation it passes through, nor its L0
    /// merged more often than its trigger says. Measured from the last
    /// write's own clock reading: a store watched only now and then (by
    /// `Db::maintain`, say) is idle a second after its writes stopped, not
    /// a second after it was first seen still.
    pub(super) fn idle(&self) -> bool {
        let last = self.last_write_ms.load(Ordering::Relaxed);
        self.opened_at.elapsed().as_millis() as u64
            >= last.saturating_add(REFILTER_IDLE.as_millis() as u64)
    }

    /// The next filter rebuild due on the current version, if any.
    #[cfg(test)]
    pub(super) fn refilter_due(&self) -> Option<compaction::refilter::Refilter> {
        compaction::refilter::pick(self.state().vs.current(), &self.opts, self.lookups())
    }
}
