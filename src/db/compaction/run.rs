//! Running a compaction: the one [`pick`]ed, the merge of a whole level
//! into the next ([`Db::compact`](crate::Db::compact)), or a filter rebuild
//! when the store is idle; its inputs merged into new tables at the output
//! level ([`merge_inputs`]), or moved down as they are, and the result
//! installed with one MANIFEST edit ([`Inner::install_change`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{
    ChooseFilter, Compaction, OutputSize, allocation, extend_trivial_move, idle_l0, merge_inputs,
    pick, shape, whole_or_next,
};
use crate::db::install::Change;
use crate::db::manifest::VersionEdit;
use crate::db::version::{FileHandle, Version};
use crate::db::{Inner, filename, inject};
use crate::error::Result;
use crate::stats::LevelWrites;

impl Inner {
    /// Runs one picked compaction, if any is due. Returns whether it did.
    pub(in crate::db) fn compact_once(&self, idle: bool) -> Result<bool> {
        let _work = self.compact_work.lock().unwrap_or_else(|p| p.into_inner());
        self.guarded("compaction", || self.compact_once_locked(idle))
    }

    /// Runs the most urgent compaction, or when none is due and the store
    /// is `idle`, the merge of its L0 files ([`idle_l0`]) or
    /// else one filter rebuild ([`super::refilter`]).
    pub(in crate::db) fn compact_once_locked(&self, idle: bool) -> Result<bool> {
        let (c, v) = {
            let st = self.state();
            let v = st.vs.current();
            let idle_merge = || {
                if idle && self.opts.background_compaction {
                    idle_l0(v, &self.opts, &st.vs.pointers)
                } else {
                    None
                }
            };
            match pick(v, &self.opts, &st.vs.pointers).or_else(idle_merge) {
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
            Err(r) => self.run_refilters(vec![r], &v, "compaction")?,
        };
        self.retire_replaced(obsolete, v);
        Ok(true)
    }

    /// Merges every level into one: each non-empty level in turn, top down,
    /// into the next non-empty level below it (empty levels in between are
    /// skipped, not rewritten), ending in the deepest level holding data. With
    /// fixed level sizes that is at least L1; with dynamic sizes, when only L0
    /// holds data, the base level (the last level while the store is small).
    pub(in crate::db) fn compact_all(&self) -> Result<()> {
        let _work = self.compact_work.lock().unwrap_or_else(|p| p.into_inner());
        self.guarded("compaction", || self.compact_all_locked())
    }

    pub(in crate::db) fn compact_all_locked(&self) -> Result<()> {
        inject::hit(&self.dir, inject::Point::Compaction)?;
        let target = {
            let st = self.state();
            let last = st.vs.current().last_nonempty_level();
            if last > 0 {
                last
            } else if self.opts.dynamic_level_bytes {
                shape(st.vs.current(), &self.opts).base
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
                    whole_or_next(v, level, output, &st.vs.pointers, true, 0),
                    v.clone(),
                )
            };
            let obsolete = if c.inputs.is_empty() {
                Vec::new()
            } else {
                self.run_compaction(c, &v)?
            };
            self.retire_replaced(obsolete, v);
        }
        Ok(())
    }

    /// Runs compaction `c` picked from `v` and installs its result. Returns
    /// the files it made obsolete, for [`Inner::retire_replaced`].
    pub(in crate::db) fn run_compaction(
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
        let plan = allocation::workload_plan(&self.opts, out_level, policy, || {
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
        let choose = choose.as_ref().map(|c| c as &ChooseFilter<'_>);
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
            extend_trivial_move(v, &mut c, self.opts.target_file_size.saturating_mul(25));
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
            let merge = |c: &Compaction, size: OutputSize| {
                merge_inputs(
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
                    let out = merge(&one, OutputSize::Whole)?;
                    bytes_written += out.bytes_written;
                    written.extend(out.files);
                }
            } else {
                let out = merge(&c, OutputSize::Target(self.opts.target_file_size))?;
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
        let replaced = rewritten
            .iter()
            .map(|f| (c.level, f.clone()))
            .chain(c.next_inputs.iter().map(|f| (out_level, f.clone())))
            .collect();
        let st = self.state();
        let change = Change {
            edit,
            written: &written,
            replaced,
            synced: wrote,
            seq: self.last_seq.load(Ordering::Acquire),
            during: "compaction",
        };
        let pointer = c.inputs.iter().map(|f| f.largest_user_key()).max();
        let (st, replaced) = self.install_change(st, change, |st| {
            if let Some(last) = pointer {
                st.vs.pointers[c.level] = last.to_vec();
            }
        })?;
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
        // Deleted behind this thread ([`Inner::retire_replaced`]); readers
        // holding an older version keep their open descriptors.
        Ok(replaced)
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
