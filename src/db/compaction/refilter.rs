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
//! stop on a tree that does not change. An explicit rebuild then also
//! evens out each level: a design that moves bits between levels at the
//! same memory ([`crate::Db::advise`]'s) leaves the total right and every
//! level off, and is applied only so ([`pick_batch`]). L0 files are left as written:
//! their order is their file number, which a rewrite would change, and
//! they are short-lived. A file whose prefix filter is not the one the
//! store writes now (built with another extractor, or absent, or present
//! without an extractor) is rewritten too, right after those of another
//! family, so that prefix scans skip by every file again; and so is a file
//! whose range filter is not the one the store writes now (built at other
//! bits per key, absent, undecodable, or present where the store writes
//! none).
//!
//! Under the workload-aware allocation the targets are not a level's but
//! each file's: one fresh solve of the whole store at its budget, each
//! file at its observed lookup rate ([`by_rates`]). The files furthest
//! from it are rewritten to it, with files nearer their targets that move
//! the store's spend the other way, so that the store stays at its
//! average.
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
    level_spends(v, &targets(v, opts))
        .into_iter()
        .fold((0.0, 0.0), |(s, a), (ls, la)| (s + ls, a + la))
}

/// [`spend`] level by level, under the filters `targets` gives each level.
fn level_spends(v: &Version, targets: &[Option<FilterPolicy>]) -> Vec<(f64, f64)> {
    v.levels
        .iter()
        .zip(targets)
        .map(|(files, &target)| {
            let want = bits(target);
            files.iter().fold((0.0, 0.0), |(spent, allocated), f| {
                let n = f.meta.entries as f64;
                (
                    spent + n * recorded(f).map_or(0.0, bits),
                    allocated + n * want,
                )
            })
        })
        .collect()
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
/// bits, none included, are chosen for it when it is written and by the
/// rates ([`by_rates`]), never for the store's shape: here only a filter
/// of another family is rewritten.
fn other_family(c: &Candidate<'_>, targets: &[Option<FilterPolicy>], opts: &Options) -> bool {
    let (l, _, p) = *c;
    let workload = opts.filters.workload_avg_bits_per_key.is_some();
    let kind = |p: Option<FilterPolicy>| p.map(|p| p.kind());
    kind(p) != kind(targets[l]) && !(workload && p.is_none() && targets[l].is_some())
}

/// The next file to rewrite with the filter its level gets now, if any
/// (module docs); under the workload-aware allocation, with the bits the
/// store's lookup rates give it ([`by_rates`]) as of `lookups` store
/// lookups.
pub(crate) fn pick(v: &Version, opts: &Options, lookups: u64) -> Option<Refilter> {
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
        None => by_drift(v, opts, &targets, 1)
            .pop()
            .or_else(|| by_rates(v, opts, lookups, 1).pop()),
    }
}

/// Up to `max` files to rewrite at once, each with the filter its level
/// gets now: the files whose filter family, prefix filter or range filter
/// is not their level's (as [`pick`] finds them one by one). Each of those
/// is rewritten whatever the others get, so one batch takes them all.
/// Otherwise the files chosen by the store's total spend: the ones [`pick`]
/// would choose one after another, found at once ([`drift_order`]).
pub(crate) fn pick_batch(v: &Version, opts: &Options, lookups: u64, max: usize) -> Vec<Refilter> {
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
    if !batch.is_empty() {
        return batch;
    }
    let batch = by_drift(v, opts, &targets, max);
    if !batch.is_empty() {
        return batch;
    }
    let batch = by_level_drift(v, opts, &targets, max);
    if batch.is_empty() {
        by_rates(v, opts, lookups, max)
    } else {
        batch
    }
}

/// How far, in bits per key, a file's filter may be from what the lookup
/// rates give it before a rebalance rewrites it: the larger of this and
/// [`REBALANCE_SHARE`] of its target. Rates move with every lookup; a
/// smaller step would rewrite files for noise.
pub(crate) const REBALANCE_BITS: f64 = 1.0;

/// The share of its target a file's bits may be off by before a rebalance
/// rewrites it ([`REBALANCE_BITS`]).
pub(crate) const REBALANCE_SHARE: f64 = 0.15;

/// The least share of the store's predicted wasted reads a rebalance must
/// save to rewrite files for the rates: below it only the store's spend
/// is kept at its budget.
pub(crate) const REBALANCE_GAIN: f64 = 0.1;

/// Under the workload-aware allocation: the files whose bits are furthest
/// from what one fresh solve over the whole store gives them at its budget
/// (the average over every key, less what L0 holds): each file below L0 a
/// run at its observed rate ([`allocation::observed`]; without history,
/// its share of its level's keys, as Monkey weights it), each taking
/// [`math::rate_bits`] at the one multiplier that spends the budget. A
/// file's writer sizes it for the rates of the moment and pulls it toward
/// the store's average (docs/design.md, "Workload-aware filters"); this
/// lets the bits follow the rates, at the cost of a file rewrite each.
/// Up to `max`, the most bits × keys off first, each off by more than
/// [`REBALANCE_BITS`] and [`REBALANCE_SHARE`] of its target, when the
/// solve is predicted to read at least [`REBALANCE_GAIN`] less than the
/// bits held now; otherwise only files that bring the store's spend back
/// within [`TOLERANCE`] of its budget.
fn by_rates(v: &Version, opts: &Options, lookups: u64, max: usize) -> Vec<Refilter> {
    use super::allocation;
    use crate::filter::math::{self, RatedRun};
    let Some(avg) = opts.filters.workload_avg_bits_per_key else {
        return Vec::new();
    };
    let (runs, last) = (v.runs(), v.last_nonempty_level());
    let level_entries: Vec<u64> = v
        .levels
        .iter()
        .map(|files| files.iter().map(|f| f.meta.entries).sum())
        .collect();
    let files: Vec<(Candidate<'_>, RatedRun)> = candidates(v)
        .filter_map(|c @ (l, f, p)| {
            let kind = p.or(opts.filters.policy_for(l, &runs, last))?.kind();
            let rate = allocation::observed(f, lookups).map_or_else(
                || allocation::fallback(l, f.meta.entries, level_entries[l]),
                |r| r.per_lookup,
            );
            Some((
                c,
                RatedRun {
                    kind,
                    keys: f.meta.entries,
                    rate,
                },
            ))
        })
        .collect();
    let l0_bits: f64 = v.levels[0]
        .iter()
        .map(|f| f.meta.entries as f64 * recorded(f).map_or(0.0, bits))
        .sum();
    let keys: f64 = v
        .levels
        .iter()
        .flatten()
        .map(|f| f.meta.entries as f64)
        .sum();
    let budget = avg * keys - l0_bits;
    let rated: Vec<RatedRun> = files.iter().map(|(_, r)| *r).collect();
    let Some(mu) = math::rate_multiplier(&rated, budget) else {
        return Vec::new();
    };
    // Each file's target, and how far its bits are from it (bits × keys).
    let plan: Vec<(f64, Option<FilterPolicy>)> = files
        .iter()
        .map(|((_, f, p), run)| {
            let want = math::rate_bits(run, mu);
            let want = (want >= crate::filter::MIN_BITS_PER_KEY).then_some(want);
            let policy = want.map(|b| FilterPolicy::new(run.kind, b));
            (
                (want.unwrap_or(0.0) - bits(*p)) * f.meta.entries as f64,
                policy,
            )
        })
        .collect();
    // Worth rewriting for only if the solve reads at least REBALANCE_GAIN
    // less than the bits held now, by the family's model: under lookups
    // the writes already sized well (uniform ones), files differ from the
    // solve without the reads differing.
    let wasted = |policy: &dyn Fn(usize) -> Option<FilterPolicy>| -> f64 {
        files
            .iter()
            .enumerate()
            .map(|(i, (_, run))| {
                run.rate * policy(i).map_or(1.0, |p| math::best_fpr(p.kind(), p.bits_per_key()))
            })
            .sum()
    };
    let worth = wasted(&|i| plan[i].1) < (1.0 - REBALANCE_GAIN) * wasted(&|i| files[i].0.2);
    let far = |i: usize| {
        let ((_, f, p), _) = &files[i];
        let want = bits(plan[i].1);
        worth
            && f.meta.entries > 0
            && (want - bits(*p)).abs() > f64::max(REBALANCE_BITS, REBALANCE_SHARE * want)
    };
    let mut order: Vec<usize> = (0..files.len()).filter(|&i| far(i)).collect();
    order.sort_by(|&a, &b| plan[b].0.abs().total_cmp(&plan[a].0.abs()));
    // What the store would spend over its budget once those are rewritten;
    // files nearer their targets, moving the other way, most first, bring
    // it back within [`TOLERANCE`]: every file at its target spends the
    // budget, so they can. A file rewritten lands on its target, so no
    // file is chosen twice while the rates stand, and rebuilds stop.
    let spent: f64 = files
        .iter()
        .map(|((_, f, p), _)| f.meta.entries as f64 * bits(*p))
        .sum();
    let mut drift = spent - budget + order.iter().map(|&i| plan[i].0).sum::<f64>();
    let mut near: Vec<usize> = (0..files.len())
        .filter(|&i| !far(i) && plan[i].0.abs() > FILE_TOLERANCE * files[i].1.keys as f64)
        .collect();
    near.sort_by(|&a, &b| plan[b].0.abs().total_cmp(&plan[a].0.abs()));
    for i in near {
        if drift.abs() <= TOLERANCE * budget {
            break;
        }
        if plan[i].0 * drift < 0.0 {
            drift += plan[i].0;
            order.push(i);
        }
    }
    // Rewritten one at a time, in an order that keeps the store's spend
    // near its budget all along: the largest move toward the budget next,
    // so that a rebalance stopped half way (by writes, or a process that
    // ends) leaves no more over or under than one file's move.
    let mut over = spent - budget;
    let mut rest = order;
    let mut order = Vec::with_capacity(rest.len().min(max));
    while !rest.is_empty() && order.len() < max {
        let toward = rest
            .iter()
            .position(|&i| plan[i].0 * over < 0.0)
            .unwrap_or(0);
        let i = rest.remove(toward);
        over += plan[i].0;
        order.push(i);
    }
    order
        .into_iter()
        .map(|i| {
            let (level, f, _) = files[i].0;
            Refilter {
                level,
                file: f.clone(),
                policy: plan[i].1,
            }
        })
        .collect()
}

/// For an explicit rebuild, once the store's total spend is right: the
/// files of each level whose spend is off its allocation by more than
/// [`TOLERANCE`], each file off its target by more than [`FILE_TOLERANCE`],
/// most off first. A design that moves bits between levels at the same
/// memory (the advisor's) is applied so; the compaction thread's
/// one-at-a-time [`pick`] leaves it to the files' natural rewrites.
fn by_level_drift(
    v: &Version,
    opts: &Options,
    targets: &[Option<FilterPolicy>],
    max: usize,
) -> Vec<Refilter> {
    if opts.filters.workload_avg_bits_per_key.is_some() {
        return Vec::new();
    }
    let off_levels: Vec<usize> = level_spends(v, targets)
        .into_iter()
        .enumerate()
        .skip(1)
        .filter(|&(_, (spent, allocated))| {
            (spent - allocated).abs() > TOLERANCE * f64::max(allocated, 1.0)
        })
        .map(|(level, _)| level)
        .collect();
    let mut files: Vec<(Candidate<'_>, f64)> = candidates(v)
        .filter(|(l, _, _)| off_levels.contains(l))
        .filter_map(|c @ (l, f, p)| {
            let (have, want) = (bits(p), bits(targets[l]));
            let off = (have - want).abs();
            (off > FILE_TOLERANCE * want.max(1.0)).then_some((c, off * f.meta.entries as f64))
        })
        .collect();
    files.sort_by(|a, b| b.1.total_cmp(&a.1));
    files
        .into_iter()
        .take(max)
        .map(|(c, _)| refilter(c, targets))
        .collect()
}

/// [`pick`]'s last rule, `max` times over: while the store's spend is off
/// by more than [`TOLERANCE`], the file whose bits differ the most from its
/// level's in that direction.
fn by_drift(
    v: &Version,
    opts: &Options,
    targets: &[Option<FilterPolicy>],
    max: usize,
) -> Vec<Refilter> {
    if opts.filters.workload_avg_bits_per_key.is_some() {
        return Vec::new();
    }
    let (spent, allocated) = spend(v, opts);
    if (spent - allocated).abs() <= TOLERANCE * allocated {
        return Vec::new();
    }
    let files: Vec<(Candidate<'_>, f64, f64)> = candidates(v)
        .filter_map(|c @ (l, f, p)| {
            let (have, want) = (bits(p), bits(targets[l]));
            let off = have - want;
            (off.abs() > FILE_TOLERANCE * want).then_some((c, off, f.meta.entries as f64))
        })
        .collect();
    let weights: Vec<f64> = files.iter().map(|(_, off, n)| off * n).collect();
    drift_order(spent - allocated, TOLERANCE * allocated, &weights, max)
        .into_iter()
        .map(|i| refilter(files[i].0, targets))
        .collect()
}

/// The files, by index into `weights` (each file's bits over its target
/// times its keys), that one-at-a-time rewrites choose, up to `max`: while
/// `|drift| > tolerance`, the file of the largest weight whose sign is the
/// drift's, after which the drift is less by its weight (a rewritten file
/// spends its target). The targets depend only on the tree's shape, which
/// a rewrite keeps, so the choices can be made at once: [`pick`]'s one at
/// a time, a batch's all together, alike. Of equal weights the last in
/// order is taken first, as [`Iterator::max_by`] takes it.
fn drift_order(mut drift: f64, tolerance: f64, weights: &[f64], max: usize) -> Vec<usize> {
    // Each sign's files, largest weight first.
    let sorted = |positive: bool| {
        let mut v: Vec<usize> = (0..weights.len())
            .rev()
            .filter(|&i| (weights[i] > 0.0) == positive && weights[i] != 0.0)
            .collect();
        v.sort_by(|&a, &b| weights[b].abs().total_cmp(&weights[a].abs()));
        v.into_iter()
    };
    let (mut above, mut below) = (sorted(true), sorted(false));
    let mut out = Vec::new();
    while out.len() < max && drift.abs() > tolerance {
        let next = if drift > 0.0 {
            above.next()
        } else {
            below.next()
        };
        let Some(i) = next else { break };
        drift -= weights[i];
        out.push(i);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::xorshift;

    /// [`pick`]'s rule applied one file at a time, as first written: the
    /// reference [`drift_order`] is checked against.
    fn one_at_a_time(mut drift: f64, tolerance: f64, weights: &[f64], max: usize) -> Vec<usize> {
        let mut done = vec![false; weights.len()];
        let mut out = Vec::new();
        while out.len() < max && drift.abs() > tolerance {
            let Some((i, _)) = weights
                .iter()
                .enumerate()
                .filter(|&(i, w)| !done[i] && w.signum() == drift.signum() && *w != 0.0)
                .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
            else {
                break;
            };
            done[i] = true;
            drift -= weights[i];
            out.push(i);
        }
        out
    }

    /// The batch makes the one-at-a-time choices, in order, whatever the
    /// weights (ties and signs mixed, drifts that overshoot and turn).
    #[test]
    fn a_batch_chooses_what_one_at_a_time_would() {
        let mut next = xorshift(29);
        let mut below = |n: u64| next() % n;
        for case in 0..2000 {
            let n = below(40) as usize;
            let weights: Vec<f64> = (0..n)
                .map(|_| (below(21) as f64 - 10.0) * [1.0, 0.5, 3.0][below(3) as usize])
                .collect();
            let total: f64 = weights.iter().sum();
            let drift = total + (below(11) as f64 - 5.0);
            let tolerance = below(4) as f64;
            let max = 1 + below(50) as usize;
            assert_eq!(
                drift_order(drift, tolerance, &weights, max),
                one_at_a_time(drift, tolerance, &weights, max),
                "case {case}: drift {drift}, tolerance {tolerance}, weights {weights:?}"
            );
        }
    }

    /// Nothing is chosen within the tolerance, or without a file on the
    /// drift's side.
    #[test]
    fn no_choice_within_tolerance_or_without_a_file() {
        assert!(drift_order(0.4, 0.5, &[3.0, -2.0], 10).is_empty());
        assert!(drift_order(5.0, 0.5, &[-3.0, -2.0], 10).is_empty());
        assert_eq!(drift_order(5.0, 0.5, &[3.0, -2.0, 4.0], 10), vec![2, 0, 1]);
    }
}
