//! Filters rebuilt where the store's filter allocation has moved since a
//! file was written.
//!
//! A filter configuration that depends on the shape of the tree chooses a
//! new file's filter for the tree as it is when the file is written: the
//! Monkey allocation gives each run bits by its size, and `skip_last_level`
//! depends on which level is last. The tree then changes around the file.
//! A level that was small when its first files were written, and got many
//! bits per key, grows into the store's bulk; a level that was last, and got
//! no filter, gets a level below it. Left alone, the store spends what no
//! allocation chose: a load of 10^6 keys under Monkey at 10 bits/key on
//! average ended at 14.05 bits/key, with the largest level at 16.8.
//!
//! So [`crate::Db::rebuild_filters`], and the compaction thread once writes
//! have paused for a second (rebuilding while the tree still grows would
//! rewrite files for every allocation it passes through: a 10^6-key load
//! that rebuilt whenever no compaction was due wrote 10.75 bytes per byte
//! loaded instead of 4.25), rewrite files with the filter their level gets
//! now ([`pick`] one at a time for the compaction thread, [`pick_batch`]
//! up to 64 at once for `rebuild_filters`): first any file of a level ≥ 1 whose filter
//! family or presence is not the one its level gets; then, while the store's
//! filter bits differ from what the allocation spends on the current tree
//! by more than [`TOLERANCE`], the file whose bits differ the most (in
//! bits × entries) in that direction, as long as its own differ by more
//! than [`FILE_TOLERANCE`]. Each rewrite sets one file to its target, so the
//! sum of all files' differences shrinks with every step and the rewrites
//! stop on a tree that does not change. L0 files are left as written:
//! their order is their file number, which a rewrite would change, and
//! they are short-lived. A file whose prefix filter is not the one the
//! store writes now (built with another extractor, or absent, or present
//! without an extractor) is rewritten too, right after those of another
//! family, so that prefix scans skip by every file again; and so is a file
//! whose range filter is not the one the store writes now (built at other
//! bits per key, absent, undecodable, or present where the store writes
//! none).
//!
//! A rewrite copies the file's data blocks as stored when that writes the
//! file a merge of it alone would ([`super::filter_only`]), and merges it
//! otherwise.

use std::sync::Arc;

use crate::db::version::{FileHandle, Version};
use crate::filter::FilterPolicy;
use crate::options::Options;

/// How far the store's filter bits may drift from the allocation's before
/// files are rewritten: 0.5%, a quarter of the 2% the study flags, which
/// leaves room for filters rounded up to whole cache lines.
pub(crate) const TOLERANCE: f64 = 0.005;

/// How far one file's bits per key may be from its level's target and still
/// be left alone: rewriting a 2 MiB file to change its filter by less than
/// this would cost more writes than the memory it evens out.
pub(crate) const FILE_TOLERANCE: f64 = 0.01;

/// A file to rewrite with another filter, in its own level.
pub(crate) struct Refilter {
    pub level: usize,
    pub file: Arc<FileHandle>,
    /// The filter its level gets now (`None`: none).
    pub policy: Option<FilterPolicy>,
}

/// The filter policy recorded in `f`; `Err` for a filter this build does
/// not know (left alone: it is read unfiltered, and counted as such).
fn recorded(f: &FileHandle) -> Result<Option<FilterPolicy>, ()> {
    match &f.meta.filter {
        None => Ok(None),
        Some(m) => m.policy().map(Some).ok_or(()),
    }
}

/// Whether `f`'s prefix filter is the one the store writes now: one built
/// with its extractor, or none without one.
fn prefix_filter_current(f: &FileHandle, opts: &Options) -> bool {
    match opts.prefix_extractor {
        None => f.table.prefix_filter().is_none(),
        e => crate::db::iter::usable_prefix_filter(&f.table, e).is_some(),
    }
}

/// Whether `f`'s range filter is the one the store writes now: one built at
/// [`Options::range_filter_bits_per_key`], or none without them.
fn range_filter_current(f: &FileHandle, opts: &Options) -> bool {
    match (opts.range_filter_bits_per_key, f.table.range_filter()) {
        (None, r) => r.is_none(),
        (Some(b), Some(Ok(rf))) => rf.built_at(b),
        (Some(_), _) => false,
    }
}

fn bits(p: Option<FilterPolicy>) -> f64 {
    p.map_or(0.0, |p| p.bits_per_key())
}

/// The store's filter spend: `(spent, allocated)`, in bits, over every file:
/// what the files' filters were built with, and what the filters their
/// levels get now would be.
pub(crate) fn spend(v: &Version, opts: &Options) -> (f64, f64) {
    let runs = v.runs();
    let last = v.last_nonempty_level();
    let mut spent = 0.0;
    let mut allocated = 0.0;
    for (level, files) in v.levels.iter().enumerate() {
        let target = bits(opts.filters.policy_for(level, &runs, last));
        for f in files {
            let n = f.meta.entries as f64;
            spent += n * recorded(f).map_or(0.0, bits);
            allocated += n * target;
        }
    }
    (spent, allocated)
}

/// A file below L0 whose recorded filter this build knows: its level, the
/// file, and that filter.
type Candidate<'a> = (usize, &'a Arc<FileHandle>, Option<FilterPolicy>);

/// The files a rebuild may rewrite, level by level.
fn candidates(v: &Version) -> impl Iterator<Item = Candidate<'_>> {
    v.levels
        .iter()
        .enumerate()
        .skip(1)
        .flat_map(|(l, files)| files.iter().map(move |f| (l, f)))
        .filter_map(|(l, f)| recorded(f).ok().map(|p| (l, f, p)))
}

/// The filter each level gets now.
fn targets(v: &Version, opts: &Options) -> Vec<Option<FilterPolicy>> {
    let runs = v.runs();
    let last = v.last_nonempty_level();
    (0..v.levels.len())
        .map(|l| opts.filters.policy_for(l, &runs, last))
        .collect()
}

fn refilter((level, f, _): Candidate<'_>, targets: &[Option<FilterPolicy>]) -> Refilter {
    Refilter {
        level,
        file: f.clone(),
        policy: targets[level],
    }
}

/// Whether `c`'s filter is of another family than its level's, or a filter
/// where the level gets none (or none where it gets one): rewritten
/// whatever the totals say. Under the workload-aware allocation a file's
/// bits, none included, are chosen for it when it is written, and never
/// rebuilt for the store's shape: only a filter of another family is.
fn other_family(c: &Candidate<'_>, targets: &[Option<FilterPolicy>], opts: &Options) -> bool {
    let (l, _, p) = *c;
    let workload = opts.filters.workload_avg_bits_per_key.is_some();
    let kind = |p: Option<FilterPolicy>| p.map(|p| p.kind());
    kind(p) != kind(targets[l]) && !(workload && p.is_none() && targets[l].is_some())
}

/// The next file to rewrite with the filter its level gets now, if any
/// (module docs).
pub(crate) fn pick(v: &Version, opts: &Options) -> Option<Refilter> {
    let targets = targets(v, opts);
    let found = candidates(v)
        .find(|c| other_family(c, &targets, opts))
        // A prefix filter the store cannot skip by (another extractor,
        // none, or one that does not decode), or one where the store has
        // no extractor.
        .or_else(|| candidates(v).find(|(_, f, _)| !prefix_filter_current(f, opts)))
        // A range filter at other bits, absent, undecodable, or unwanted.
        .or_else(|| candidates(v).find(|(_, f, _)| !range_filter_current(f, opts)));
    match found {
        Some(c) => Some(refilter(c, &targets)),
        None => by_drift(v, opts, &targets),
    }
}

/// Up to `max` files to rewrite at once, each with the filter its level
/// gets now: the files whose filter family, prefix filter or range filter
/// is not their level's (as [`pick`] finds them one by one). Each of those
/// is rewritten whatever the others get, so one batch takes them all; a
/// rewrite chosen by the store's total spend changes the spend the next
/// choice depends on, so those come one at a time, as [`pick`] gives them.
pub(crate) fn pick_batch(v: &Version, opts: &Options, max: usize) -> Vec<Refilter> {
    let targets = targets(v, opts);
    let batch: Vec<Refilter> = candidates(v)
        .filter(|c| {
            other_family(c, &targets, opts)
                || !prefix_filter_current(c.1, opts)
                || !range_filter_current(c.1, opts)
        })
        .take(max)
        .map(|c| refilter(c, &targets))
        .collect();
    if batch.is_empty() {
        by_drift(v, opts, &targets).into_iter().collect()
    } else {
        batch
    }
}

/// [`pick`]'s last rule: the file whose bits differ the most from its
/// level's, while the store's spend is off by more than [`TOLERANCE`].
fn by_drift(v: &Version, opts: &Options, targets: &[Option<FilterPolicy>]) -> Option<Refilter> {
    if opts.filters.workload_avg_bits_per_key.is_some() {
        return None;
    }
    let (spent, allocated) = spend(v, opts);
    let drift = spent - allocated;
    if drift.abs() <= TOLERANCE * allocated {
        return None;
    }
    candidates(v)
        .filter_map(|c @ (l, f, p)| {
            let (have, want) = (bits(p), bits(targets[l]));
            let off = have - want;
            (off.signum() == drift.signum() && off.abs() > FILE_TOLERANCE * want)
                .then(|| (off.abs() * f.meta.entries as f64, c))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| refilter(c, targets))
}
