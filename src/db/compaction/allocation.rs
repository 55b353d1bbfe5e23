//! The workload-aware filter allocation
//! ([`crate::FilterOptions::workload_aware`]): each file a flush or a
//! compaction writes gets the bits per key that minimise the store's
//! expected wasted reads under the lookup rates observed on the key range it
//! covers, with the store's filter bits held at the stated average.
//!
//! **What is observed.** A file's *rate* is the number of its probes by keys
//! it does not hold (filter negatives and false positives; every probe of a
//! file without a usable filter) per lookup of the store: the weight
//! `math::monkey_allocation_weighted` takes. Probes by keys the file holds
//! read its data whatever its filter, so they do not count. The window is
//! the file's life: the store's lookup count is noted when the file is
//! written, and `Db::reset_stats` folds the counts it zeroes into
//! the file's `LookupHistory` (`version/history.rs`) first. What came
//! before the file's last [`sample`] weighs one half per [`half_life`]
//! lookups since, so a rate follows a hot range that moves.
//!
//! **What a new file inherits.** A compaction's output is one file of its
//! level: a missing key probes one file per level (Monkey's assumption),
//! so the output's rate is its share of the level's keys (what Monkey
//! gives it) times its key range's *skew*: how much more, per key, the
//! range was looked up than its level on average. The skew comes from the
//! inputs of the levels below L0 (L0 files span the key space and carry no
//! range's history): per level, the inputs overlapping the output give a
//! rate per key over its range (their rates and entries counted in
//! proportion to the part of their range inside the output's, by 8-byte
//! key prefixes), divided by that level's rate per key over all its files
//! with history; the levels' skews are averaged by evidence (store lookups
//! observed). So the split of the bits between levels is Monkey's, exactly,
//! and the history moves bits only between key ranges. A flush's file is
//! one more run like the L0 files in place: it gets their mean rate. The
//! output keeps its rate as a prior worth half its evidence, so a key
//! range's history halves in weight each time it is rewritten, and what the
//! new file sees itself takes over after as many lookups as the prior is
//! worth. Without history (fewer than [`MIN_EVIDENCE`] lookups), an L0 file
//! has rate 1, a deeper file its share of its level's entries.
//!
//! **Under the budget.** The files kept hold what they were written with;
//! the new files get what is left of the store's budget (the average times
//! the keys of the store as it will be, the files kept and the outputs
//! stood in for by the pieces of the compaction's range with their
//! entries), shared among them by one multiplier (`math::rate_multiplier`).
//! Each output then takes `math::rate_bits` at its own rate, so the store
//! is back at its average after every flush and compaction. What is left
//! is held within [`CLAMP`] (a quarter) of the new files' share of a fresh
//! solve over the whole store (the multiplier `μ*` at which all of it,
//! allocated afresh, spends the average): the remainder pulls each write's
//! files toward the store's average, and the clamp leaves the allocation
//! room to give a hot range more than that and a cold one less
//! (docs/design.md, "Workload-aware filters": with a factor of 2 the L1
//! files got 7.5 bits per key where Monkey gives them 15.8; with none the
//! store spent 10.28 bits per key for 10). Bits move across levels
//! (a flush's file of 1% of the keys may get 20 bits per key).
//!
//! **Rebalanced when idle.** The pull toward the average keeps a hot
//! range's files near it. Once writes pause (and in `Db::rebuild_filters`)
//! the store is solved afresh at its budget, every file at its observed
//! rate, and the files furthest from that solve are rewritten to it
//! (`refilter::by_rates`): the bits then follow the rates. An idle store
//! is judged again each half-life of lookups, so they follow a hot range
//! that moves while the store only reads.

use std::sync::atomic::Ordering::Relaxed;

use crate::db::version::history::{Rate, Sampled, absent_probes};
use crate::db::version::{FileHandle, Version, covered_part};
use crate::filter::math::{self, RatedRun};
use crate::filter::{FilterKind, FilterPolicy, MIN_BITS_PER_KEY};

/// Store lookups a file's rate must rest on to count as history.
pub(crate) const MIN_EVIDENCE: f64 = 100.0;

/// The weight an output's inherited rate keeps, as a share of the evidence
/// it was estimated from.
const PRIOR_WEIGHT: f64 = 0.5;

/// Store lookups per file below L0 over which a file's older lookups halve
/// in weight ([`half_life`]).
const HALF_LIFE_PER_FILE: f64 = 100.0;

/// The store lookups over which a file's older lookups halve in weight on
/// `v`: [`HALF_LIFE_PER_FILE`] per file below L0, at least ten times
/// [`MIN_EVIDENCE`]. A file of a level of F files is probed by about one
/// missing lookup in F, so each file's rate rests on about 200 probes of
/// its own (twice the half-life's lookups), a spread of about 7%: a tenth
/// of the step a rebalance rewrites for.
pub(crate) fn half_life(v: &Version) -> f64 {
    let files: usize = v.levels.iter().skip(1).map(Vec::len).sum();
    (HALF_LIFE_PER_FILE * files as f64).max(10.0 * MIN_EVIDENCE)
}

/// `f`'s counts as of `lookups` store lookups: `(probes, lookups)` before
/// its last sample (decayed there) and since, and its raw probe count now.
fn counts(f: &FileHandle, s: Option<Sampled>, lookups: u64) -> ((f64, f64), (f64, f64), u64) {
    let h = &f.history;
    let now = h.carried.load(Relaxed) + absent_probes(&f.io.load());
    match s {
        Some(s) => (
            (s.probes, s.lookups),
            (
                now.saturating_sub(s.probes_at) as f64,
                lookups.saturating_sub(s.lookups_at) as f64,
            ),
            now,
        ),
        None => {
            let prior = h
                .prior
                .get()
                .map_or((0.0, 0.0), |p| (p.per_lookup * p.evidence, p.evidence));
            let seen = lookups.saturating_sub(h.born.load(Relaxed)) as f64;
            (prior, (now as f64, seen), now)
        }
    }
}

/// `f`'s rate as of `lookups` store lookups: its prior and its own probes
/// since it was written, what came before its last sample ([`sample`])
/// weighing less; `None` without [`MIN_EVIDENCE`].
pub(crate) fn observed(f: &FileHandle, lookups: u64) -> Option<Rate> {
    let s = *f.history.sampled.lock().unwrap_or_else(|p| p.into_inner());
    let ((p0, l0), (p1, l1), _) = counts(f, s, lookups);
    let evidence = l0 + l1;
    (evidence >= MIN_EVIDENCE).then(|| Rate {
        per_lookup: ((p0 + p1) / evidence).clamp(0.0, 1.0),
        evidence,
    })
}

/// Samples every file of `v` at `lookups` store lookups: what each counted
/// before the sample is weighed by one half per [`half_life`] lookups
/// since, so a file's rate follows where the lookups go now (a hot range
/// that moves) within a few half-lives, while a store that serves the same
/// lookups keeps its rates. Sampled by the compaction thread each time it
/// judges an idle store ([`crate::db::Inner::refilter_pick`]).
pub(crate) fn sample(v: &Version, lookups: u64) {
    let half = half_life(v);
    for f in v.levels.iter().flatten() {
        let mut s = f.history.sampled.lock().unwrap_or_else(|p| p.into_inner());
        let ((p0, l0), (p1, l1), now) = counts(f, *s, lookups);
        let d = 0.5f64.powf(l1 / half);
        *s = Some(Sampled {
            probes: p0 * d + p1,
            lookups: l0 * d + l1,
            probes_at: now,
            lookups_at: lookups,
        });
    }
}

/// An input with history: where it lies, its entries and its rate.
#[derive(Debug)]
struct Source {
    /// Its run: the level, or for an L0 file `usize::MAX - i`.
    run: usize,
    lo: Vec<u8>,
    hi: Vec<u8>,
    entries: u64,
    rate: Rate,
}

/// How an output inherits its sources' rates.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Inherit {
    /// A flush: the new L0 file is a run like each L0 file in place, and is
    /// probed as they are; its rate is their mean.
    Run,
    /// A compaction: the output is one file of its level, whose rate is
    /// its share of the level's keys (Monkey's) times how much more (or
    /// less) its key range is looked up than the level's average.
    Merge,
}

/// A flush's output rate: the mean of the L0 files' rates in `sources`
/// (each L0 file a run, probed by every lookup), weighted by their
/// evidence; `None` when none has history.
fn flush_rate(sources: &[Source]) -> Option<Rate> {
    let (mut weighted, mut evidence) = (0.0, 0.0);
    for s in sources {
        weighted += s.rate.evidence * s.rate.per_lookup;
        evidence += s.rate.evidence;
    }
    (evidence > 0.0).then(|| Rate {
        per_lookup: (weighted / evidence).clamp(0.0, 1.0),
        evidence: evidence / sources.len() as f64,
    })
}

/// How much more (above 1) or less the key range `lo..=hi` is looked up,
/// per key, than its level on average, by the histories of the deeper
/// levels' inputs in `sources`: per level, the inputs' rate per key over
/// the range (their rates and entries counted in proportion to the part
/// of their range inside it, by 8-byte key prefixes) over that level's
/// rate per key, `means[level]`; averaged over the levels by evidence.
/// L0 files span the key space and carry no range's history: they are
/// left out. `None` when no input with history overlaps the range.
fn skew_of(sources: &[Source], means: &[Option<f64>], lo: &[u8], hi: &[u8]) -> Option<Rate> {
    // Per level: Σ rate·part, Σ entries·part, Σ evidence·part, Σ part.
    let mut runs: Vec<(usize, [f64; 4])> = Vec::new();
    for s in sources.iter().filter(|s| s.run < means.len()) {
        let part = covered_part(&s.lo, &s.hi, lo, hi);
        let at = match runs.iter().position(|(r, _)| *r == s.run) {
            Some(i) => i,
            None => {
                runs.push((s.run, [0.0; 4]));
                runs.len() - 1
            }
        };
        let g = &mut runs[at].1;
        g[0] += s.rate.per_lookup * part;
        g[1] += s.entries as f64 * part;
        g[2] += s.rate.evidence * part;
        g[3] += part;
    }
    let (mut weighted, mut evidence, mut n) = (0.0, 0.0, 0);
    for (level, [rate, keys, ev, part]) in &runs {
        let Some(mean) = means[*level].filter(|&m| m > 0.0) else {
            continue;
        };
        if *part == 0.0 || *keys == 0.0 {
            continue;
        }
        let ev = ev / part;
        weighted += ev * (rate / keys / mean);
        evidence += ev;
        n += 1;
    }
    (evidence > 0.0).then(|| Rate {
        per_lookup: weighted / evidence,
        evidence: evidence / n as f64,
    })
}

/// A piece of what a flush or compaction will write: a key range and its
/// expected entries.
pub(crate) struct Piece<'a> {
    pub lo: &'a [u8],
    pub hi: &'a [u8],
    pub entries: u64,
}

/// The allocation of one flush or compaction's outputs.
pub(crate) struct Plan {
    sources: Vec<Source>,
    how: Inherit,
    /// Each level's rate per key over its files with history (`None`
    /// without any): what [`skew_of`] compares a key range's with.
    means: Vec<Option<f64>>,
    /// The level the outputs go to.
    out_level: usize,
    /// Entries of the output level once the outputs are in: the rate of an
    /// output without history is its share of them (1 for an L0 file).
    level_entries: u64,
    /// The multiplier each output's bits are chosen at.
    mu: Option<f64>,
    /// The store's lookup count when planned.
    lookups: u64,
}

/// The rate of a file without history: a lookup probes each run once
/// (Monkey's assumption), each L0 file a run, and a deeper level's files
/// in proportion to their entries.
pub(crate) fn fallback(level: usize, entries: u64, level_entries: u64) -> f64 {
    if level == 0 {
        1.0
    } else {
        entries as f64 / level_entries.max(entries).max(1) as f64
    }
}

impl Plan {
    /// Plans the outputs at `out_level` that replace the files numbered
    /// `replaced` in `v` by files holding `pieces`, inheriting the rates of
    /// `inputs` (with their levels), for an average of `avg` bits per key
    /// of family `kind` over the store, `lookups` store lookups so far.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        v: &Version,
        out_level: usize,
        inputs: &[(usize, &FileHandle)],
        replaced: &[u64],
        pieces: &[Piece<'_>],
        kind: FilterKind,
        avg: f64,
        lookups: u64,
    ) -> Self {
        let sources: Vec<Source> = inputs
            .iter()
            .enumerate()
            .filter_map(|(i, &(level, f))| {
                observed(f, lookups).map(|rate| Source {
                    run: if level == 0 { usize::MAX - i } else { level },
                    lo: f.smallest_user_key().to_vec(),
                    hi: f.largest_user_key().to_vec(),
                    entries: f.meta.entries,
                    rate,
                })
            })
            .collect();
        let how = if out_level == 0 {
            Inherit::Run
        } else {
            Inherit::Merge
        };
        let means = v
            .levels
            .iter()
            .map(|files| {
                let (mut rate, mut keys) = (0.0, 0u64);
                for f in files {
                    if let Some(r) = observed(f, lookups) {
                        rate += r.per_lookup;
                        keys += f.meta.entries;
                    }
                }
                (keys > 0).then(|| rate / keys as f64)
            })
            .collect();
        let replaced = |f: &FileHandle| replaced.contains(&f.number());
        let kept_in = |level: usize| -> u64 {
            v.levels[level]
                .iter()
                .filter(|f| !replaced(f))
                .map(|f| f.meta.entries)
                .sum()
        };
        let new_entries: u64 = pieces.iter().map(|p| p.entries).sum();
        let level_entries = kept_in(out_level) + new_entries;
        // The files kept: (run, bits they hold).
        let mut kept: Vec<(RatedRun, f64)> = Vec::new();
        for (level, files) in v.levels.iter().enumerate() {
            let here = if level == out_level {
                level_entries
            } else {
                kept_in(level)
            };
            for f in files.iter().filter(|f| !replaced(f)) {
                let rate = observed(f, lookups)
                    .map_or_else(|| fallback(level, f.meta.entries, here), |r| r.per_lookup);
                let info = f.table.filter_info().filter(|x| x.is_usable());
                let run = RatedRun {
                    kind: info.and_then(|x| x.kind).unwrap_or(kind),
                    keys: f.meta.entries,
                    rate,
                };
                kept.push((run, info.map_or(0.0, |x| x.memory_bytes as f64 * 8.0)));
            }
        }
        let mut plan = Plan {
            sources,
            how,
            means,
            out_level,
            level_entries,
            mu: None,
            lookups,
        };
        let new: Vec<RatedRun> = pieces
            .iter()
            .map(|p| RatedRun {
                kind,
                keys: p.entries,
                rate: plan.rate(out_level, p.lo, p.hi, p.entries),
            })
            .collect();
        plan.mu = budget_multiplier(&kept, &new, avg);
        plan
    }

    /// The rate of an output at `level` over `lo..=hi` with `entries`,
    /// and the evidence it rests on (`None`: no history, Monkey's rate).
    fn inherited(&self, level: usize, lo: &[u8], hi: &[u8], entries: u64) -> Option<Rate> {
        match self.how {
            Inherit::Run => flush_rate(&self.sources),
            Inherit::Merge => skew_of(&self.sources, &self.means, lo, hi).map(|s| Rate {
                per_lookup: (fallback(level, entries, self.level_entries) * s.per_lookup)
                    .clamp(0.0, 1.0),
                evidence: s.evidence,
            }),
        }
    }

    /// The rate of an output at `level` over `lo..=hi` with `entries`.
    fn rate(&self, level: usize, lo: &[u8], hi: &[u8], entries: u64) -> f64 {
        self.inherited(level, lo, hi, entries).map_or_else(
            || fallback(level, entries, self.level_entries),
            |r| r.per_lookup,
        )
    }

    /// The filter of an output of `kind` at `level` holding `entries`
    /// entries over `lo..=hi`; `None` where the allocation gives it less
    /// than [`MIN_BITS_PER_KEY`].
    pub(crate) fn policy(
        &self,
        kind: FilterKind,
        level: usize,
        lo: &[u8],
        hi: &[u8],
        entries: u64,
    ) -> Option<FilterPolicy> {
        let mu = self.mu?;
        let run = RatedRun {
            kind,
            keys: entries,
            rate: self.rate(level, lo, hi, entries),
        };
        let bits = math::rate_bits(&run, mu);
        (bits >= MIN_BITS_PER_KEY).then(|| FilterPolicy::new(kind, bits))
    }

    /// Records in each of `outputs`, just written, the lookup count and the
    /// rate it inherits.
    pub(crate) fn record(&self, outputs: &[std::sync::Arc<FileHandle>]) {
        for f in outputs {
            f.history.born.store(self.lookups, Relaxed);
            let (lo, hi) = (f.smallest_user_key(), f.largest_user_key());
            if let Some(r) = self.inherited(self.out_level, lo, hi, f.meta.entries) {
                let _ = f.history.prior.set(Rate {
                    per_lookup: r.per_lookup,
                    evidence: r.evidence * PRIOR_WEIGHT,
                });
            }
        }
    }
}

/// Notes in each of `files`, just written outside a plan, the store's
/// lookup count: its rate is counted from then.
pub(crate) fn note_written(files: &[std::sync::Arc<FileHandle>], lookups: u64) {
    for f in files {
        f.history.born.store(lookups, Relaxed);
    }
}

/// Notes in `files`, rewritten from `old` alone (the same keys), the
/// store's lookup count and `old`'s rate, with all its evidence.
pub(crate) fn inherit(old: &FileHandle, files: &[std::sync::Arc<FileHandle>], lookups: u64) {
    let rate = observed(old, lookups);
    for f in files {
        f.history.born.store(lookups, Relaxed);
        if let Some(r) = rate {
            let _ = f.history.prior.set(r);
        }
    }
}

/// The multiplier of the new runs `new` when the store also holds `kept`
/// (each with the bits it holds), for `avg` bits per key over the store
/// (module docs): the new runs share what the store's budget leaves once
/// the kept runs' bits are counted, held within [`CLAMP`] of their share of
/// a fresh solve over the whole store; `None` for no keys or no budget.
pub(crate) fn budget_multiplier(
    kept: &[(RatedRun, f64)],
    new: &[RatedRun],
    avg: f64,
) -> Option<f64> {
    let all: Vec<RatedRun> = kept
        .iter()
        .map(|(r, _)| *r)
        .chain(new.iter().copied())
        .collect();
    let total: f64 = all.iter().map(|r| r.keys as f64).sum();
    let fresh = math::rate_multiplier(&all, avg * total)?;
    let held: f64 = kept.iter().map(|(_, held)| held).sum();
    let target: f64 = new
        .iter()
        .map(|r| r.keys as f64 * math::rate_bits(r, fresh))
        .sum();
    let budget = (avg * total - held).clamp(target / CLAMP, target * CLAMP);
    math::rate_multiplier(new, budget).or(Some(fresh))
}

/// The most a write's files take away from, or add to, their share of a
/// fresh solve to bring the store back to its average: their bits stay
/// within a quarter of it, so the correction moves the store back to its
/// average over many writes without undoing any one write's allocation.
const CLAMP: f64 = 1.25;

/// The workload-aware allocation's plan for a flush or compaction into
/// `level`, whose level gets `policy`, when the store uses it
/// ([`crate::FilterOptions::workload_aware`]) and the level has a filter:
/// the family and the plan made from what `what` gives (the version, the
/// files whose rates the outputs inherit, the files replaced, the pieces
/// written, the store's lookups).
#[allow(clippy::type_complexity)]
pub(crate) fn workload_plan<'a>(
    opts: &crate::options::Options,
    level: usize,
    policy: Option<FilterPolicy>,
    what: impl FnOnce() -> (
        &'a Version,
        Vec<(usize, &'a FileHandle)>,
        Vec<u64>,
        Vec<Piece<'a>>,
        u64,
    ),
) -> Option<(FilterKind, Plan)> {
    let avg = opts.filters.workload_avg_bits_per_key?;
    let kind = policy?.kind();
    let (v, sources, replaced, pieces, lookups) = what();
    Some((
        kind,
        Plan::new(v, level, &sources, &replaced, &pieces, kind, avg, lookups),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(keys: u64, rate: f64) -> RatedRun {
        RatedRun {
            kind: FilterKind::Blocked512,
            keys,
            rate,
        }
    }

    /// Bits the new runs spend at `mu`.
    fn spent(runs: &[RatedRun], mu: f64) -> f64 {
        runs.iter()
            .map(|r| r.keys as f64 * math::rate_bits(r, mu))
            .sum()
    }

    #[test]
    fn a_store_written_afresh_spends_its_average() {
        // Five files of one level; two hot ones probed ten times as often.
        let new: Vec<RatedRun> = [0.4, 0.4, 0.04, 0.04, 0.04]
            .iter()
            .map(|&r| run(200_000, r))
            .collect();
        let mu = budget_multiplier(&[], &new, 10.0).unwrap();
        let avg = spent(&new, mu) / 1e6;
        // Within the 1/16-bit grid of the allocation.
        assert!((avg - 10.0).abs() <= 0.0625, "{avg}");
        let bits: Vec<f64> = new.iter().map(|r| math::rate_bits(r, mu)).collect();
        assert!(bits[0] > bits[2] + 2.0, "{bits:?}");
    }

    #[test]
    fn the_new_files_take_what_the_kept_ones_leave() {
        let new = vec![run(500_000, 0.5)];
        // The new half's bits per key, when the kept half of the store
        // holds `held` bits per key (both at the same rate: a fresh solve
        // gives each 10).
        let bits = |held: f64| {
            let kept = vec![(run(500_000, 0.5), held * 500_000.0)];
            math::rate_bits(&new[0], budget_multiplier(&kept, &new, 10.0).unwrap())
        };
        // To the 1/16-bit grid, of the fresh share and of the bits.
        let near = |b: f64, want: f64| b <= want && b >= want - 0.125;
        // An excess or a shortfall within a quarter of the fresh share: the
        // new half brings the store back to 10.
        assert!(near(bits(11.0), 9.0), "{}", bits(11.0));
        assert!(near(bits(9.0), 11.0), "{}", bits(9.0));
        // Beyond it, the new half moves a quarter and no further: an old
        // excess does not starve a write, a shortfall does not make it take
        // the whole difference.
        for held in [14.0, 40.0] {
            assert!(near(bits(held), 8.0), "{held}: {}", bits(held));
        }
        for held in [6.0, 0.0] {
            assert!(near(bits(held), 12.5), "{held}: {}", bits(held));
        }
    }

    #[test]
    fn no_budget_or_no_keys_plans_nothing() {
        assert_eq!(budget_multiplier(&[], &[run(0, 1.0)], 10.0), None);
        assert_eq!(budget_multiplier(&[], &[run(10, 1.0)], 0.0), None);
        assert_eq!(budget_multiplier(&[], &[run(10, 1.0)], f64::NAN), None);
    }

    #[test]
    fn outputs_take_their_levels_share_times_their_ranges_skew() {
        let key = |b: u8| vec![b, 0, 0, 0, 0, 0, 0, 0];
        let src = |run, lo: u8, hi: u8, entries, per_lookup| Source {
            run,
            lo: key(lo),
            hi: key(hi),
            entries,
            rate: Rate {
                per_lookup,
                evidence: 1000.0,
            },
        };
        // Level 2: a hot file over [0, 64), a cold one over [128, 192),
        // 1,000 keys each: 0.55 probes per lookup over 2,000 keys.
        let level = vec![src(2, 0, 63, 1000, 0.5), src(2, 128, 191, 1000, 0.05)];
        let means = vec![None, None, Some(0.55 / 2000.0)];
        // Per key, the hot range is looked up 0.5/1000 against the level's
        // 0.55/2000: 1.82 times its average; the cold one 0.18 times.
        let hot = skew_of(&level, &means, &key(0), &key(31)).unwrap();
        let cold = skew_of(&level, &means, &key(128), &key(159)).unwrap();
        assert!((hot.per_lookup - 1.0 / 0.55).abs() < 1e-9, "{hot:?}");
        assert!((cold.per_lookup - 0.1 / 0.55).abs() < 1e-9, "{cold:?}");
        assert_eq!(skew_of(&level, &means, &key(70), &key(100)), None);
        // An L0 file spans the key space and tells nothing of a range: it
        // is left out, and alone it gives no skew.
        let mut both = vec![src(usize::MAX, 0, 255, 1000, 1.0)];
        both.extend(
            level
                .iter()
                .map(|s| src(s.run, s.lo[0], s.hi[0], 1000, s.rate.per_lookup)),
        );
        assert_eq!(skew_of(&both, &means, &key(0), &key(31)), Some(hot));
        assert_eq!(skew_of(&both[..1], &means, &key(0), &key(31)), None);
        // An output into level 3 (4,000 keys once in): its share of the
        // level's keys, as Monkey weights it, times its range's skew.
        let plan = Plan {
            sources: level,
            how: Inherit::Merge,
            means: vec![None, None, Some(0.55 / 2000.0), None],
            out_level: 3,
            level_entries: 4000,
            mu: None,
            lookups: 0,
        };
        let r = plan.rate(3, &key(0), &key(31), 1000);
        assert!((r - 0.25 / 0.55).abs() < 1e-9, "{r}");
        assert!((plan.rate(3, &key(70), &key(100), 1000) - 0.25).abs() < 1e-9);
        // A flush: the mean of the L0 files' rates.
        let l0 = [
            src(usize::MAX, 0, 255, 1000, 0.9),
            src(usize::MAX - 1, 0, 255, 3000, 0.7),
        ];
        let r = flush_rate(&l0).unwrap();
        assert!((r.per_lookup - 0.8).abs() < 1e-9, "{r:?}");
        // Without history, a run of each level is probed once.
        assert_eq!(fallback(0, 10, 100), 1.0);
        assert_eq!(fallback(3, 25, 100), 0.25);
    }
}
