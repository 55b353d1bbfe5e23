//! Choosing the next compaction: the level sizing in force ([`shape`]), each
//! level's score, and the files to merge or move.

use std::sync::Arc;

use super::*;

/// The level sizing in force for a version: where L0 compacts to, and each
/// level's target bytes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shape {
    /// The level L0 compacts into (1 with fixed sizes).
    pub base: usize,
    /// Target data bytes of each level (unused for L0; 0 above `base`).
    pub targets: Vec<u64>,
    /// The base level the last level's size calls for (= `base` unless
    /// levels above it hold data, which is then compacted down regardless of
    /// its size, until they are empty).
    pub settled_base: usize,
}

/// The level sizing of `v`: fixed targets, or with `dynamic_level_bytes`
/// [`Options::dynamic_level_targets`] of the last level's data bytes. The base
/// level is never below the first level ≥ 1 that holds data: L0 output must
/// not pass a level that may hold older versions of its keys (such data is
/// left over when the last level shrank, e.g. by deletes, or from a store
/// built with fixed sizes); such levels are drained downward whatever their
/// size (their targets continue the chain from the bottom, below
/// `level1_max_bytes`).
pub(crate) fn shape(v: &Version, opts: &Options) -> Shape {
    let n = v.levels.len();
    if !opts.dynamic_level_bytes {
        let targets = (0..n)
            .map(|l| if l == 0 { 0 } else { opts.level_max_bytes(l) })
            .collect();
        return Shape {
            base: 1,
            targets,
            settled_base: 1,
        };
    }
    let bottom = n - 1;
    let (dynamic_base, mut targets) = opts.dynamic_level_targets(v.level_bytes(bottom));
    targets.resize(n, 0);
    let first = (1..bottom)
        .find(|&l| !v.levels[l].is_empty())
        .unwrap_or(bottom);
    let base = dynamic_base.min(first);
    for l in (base..dynamic_base).rev() {
        targets[l] = targets[l + 1] / opts.level_size_multiplier;
    }
    Shape {
        base,
        targets,
        settled_base: dynamic_base,
    }
}

/// Size score of each level: L0 by file count or by bytes over the base
/// level's target, whichever is higher; deeper levels by bytes over
/// target (0 for the empty levels above the base level; at least 1 for a level
/// holding data above the base the last level calls for). The last level never
/// compacts further. A level's bytes include what its range tombstones
/// cover below ([`Compensation`]).
pub(crate) fn scores(v: &Version, opts: &Options) -> Vec<f64> {
    scores_of(v, opts, &shape(v, opts), &Compensation::of(v))
}

pub(super) fn scores_of(
    v: &Version,
    opts: &Options,
    shape: &Shape,
    comp: &Compensation,
) -> Vec<f64> {
    let last = v.levels.len() - 1;
    (0..last)
        .map(|l| {
            let bytes = v.level_bytes(l).saturating_add(comp.level_bytes[l]);
            if l == 0 {
                // By files, and by bytes against the base level's target
                // (RocksDB's rule): L0 then competes with the base level by
                // size, so the base level is not drained to its target
                // before every L0 merge; it holds a larger run, and each of
                // its drains covers more of the key space per byte of the
                // level below (1M random keys, background compaction:
                // write amplification 7.6 → 5.9, docs/design.md).
                // (Dynamic sizes: never below `level1_max_bytes`, which the
                // base target of a small store is.)
                let files = v.levels[0].len() as f64 / opts.l0_compaction_trigger as f64;
                let base_target = shape.targets[shape.base].max(opts.level1_max_bytes);
                files.max(bytes as f64 / base_target as f64)
            } else if l < shape.base {
                0.0
            } else {
                let score = bytes as f64 / shape.targets[l].max(1) as f64;
                if l < shape.settled_base && !v.levels[l].is_empty() {
                    score.max(1.0)
                } else {
                    score
                }
            }
        })
        .collect()
}

/// Most fragments of one file's range tombstones weighed one by one; past
/// this, the file's tombstones weigh as one range from their first start to
/// their last end (an overestimate, bounded in cost).
const MAX_WEIGHED_FRAGMENTS: usize = 256;

/// What the range tombstones of each level may delete below it (RocksDB's
/// compensated file size for range deletions): for each file holding
/// tombstones, the data bytes of the deeper levels' files its fragments
/// overlap, each such file counted once. A level's score adds this to its
/// own bytes, so a file that deletes much and holds little — a
/// `delete_range` over most of the store, flushed alone — still makes its
/// level due, and the deleted data leaves the disk; and a level ≥ 1 due
/// compacts its most compensated file first. The estimate is positive
/// exactly while a deeper file overlaps a fragment, which is when
/// compaction keeps the fragment (output.rs); each such compaction moves
/// the fragment one level down, so the compactions it causes end.
#[derive(Debug, Default)]
pub(crate) struct Compensation {
    /// Per level, the sum over its files.
    pub level_bytes: Vec<u64>,
    /// Per level, the file with the largest compensation, if any: its
    /// position in the level.
    pub largest: Vec<Option<usize>>,
}

impl Compensation {
    /// The compensation of every level of `v`, from the levels' indexes and
    /// the tombstones of the files that hold any.
    pub(crate) fn of(v: &Version) -> Compensation {
        let n = v.levels.len();
        let mut c = Compensation {
            level_bytes: vec![0; n],
            largest: vec![None; n],
        };
        for level in 0..n {
            let mut best = 0u64;
            for i in v.files_with_tombstones(level) {
                let b = covered_below(v, level, i);
                c.level_bytes[level] = c.level_bytes[level].saturating_add(b);
                if b > best {
                    best = b;
                    c.largest[level] = Some(i);
                }
            }
        }
        c
    }
}

/// The data bytes of the files below `level` that the range tombstones of
/// file `i` of `level` overlap, each file counted once.
fn covered_below(v: &Version, level: usize, i: usize) -> u64 {
    let tombstones = v.levels[level][i].table.range_tombstones();
    let frags = tombstones.fragments();
    let ranges: Vec<(&[u8], &[u8])> = if frags.len() <= MAX_WEIGHED_FRAGMENTS {
        frags.iter().map(|f| (&f.start[..], &f.end[..])).collect()
    } else {
        tombstones.bounds().into_iter().collect()
    };
    let mut sum = 0u64;
    for deeper in level + 1..v.levels.len() {
        let sizes = v.data_bytes_of(deeper);
        // Fragments come in key order, and so do the files of a level ≥ 1:
        // the files already counted are those before `done`.
        let mut done = 0;
        for &(start, end) in &ranges {
            let (first, past) = v.span(deeper, Some(start), Some(end));
            let from = first.max(done);
            if from < past {
                sum = sum.saturating_add(sizes[from..past].iter().sum::<u64>());
            }
            done = done.max(past);
        }
    }
    sum
}

/// Picks the most urgent compaction, if any level's score is ≥ 1.
/// `pointers[l]` is the largest user key last compacted out of level l.
pub(crate) fn pick(v: &Version, opts: &Options, pointers: &[Vec<u8>]) -> Option<Compaction> {
    let shape = shape(v, opts);
    let comp = Compensation::of(v);
    let scores = scores_of(v, opts, &shape, &comp);
    let (level, score) = scores
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(l, s)| (l, *s))?;
    if score < 1.0 {
        return None;
    }
    let output = if level == 0 { shape.base } else { level + 1 };
    // LevelDB's and RocksDB's bound on a compaction grown by expansion.
    let expand_limit = opts.target_file_size.saturating_mul(25);
    if level > 0
        && let Some(i) = comp.largest[level]
    {
        let inputs = vec![v.levels[level][i].clone()];
        return Some(of_inputs(v, level, output, inputs, false, expand_limit));
    }
    Some(whole_or_next(
        v,
        level,
        output,
        pointers,
        false,
        expand_limit,
    ))
}

/// The merge of every L0 file into the base level that an idle store runs
/// ([`Options::idle_l0_compaction`]): due when L0 holds at least two files
/// (one L0 file costs a missing key one filter probe, and merging it alone
/// into the base level would rewrite the files it overlaps for that one).
pub(crate) fn idle_l0(v: &Version, opts: &Options, pointers: &[Vec<u8>]) -> Option<Compaction> {
    if !opts.idle_l0_compaction || v.levels[0].len() < 2 || v.levels.len() < 2 {
        return None;
    }
    let shape = shape(v, opts);
    let expand_limit = opts.target_file_size.saturating_mul(25);
    Some(whole_or_next(
        v,
        0,
        shape.base,
        pointers,
        false,
        expand_limit,
    ))
}

/// A compaction of `level` into `output` (> `level`): every file (L0, or
/// `all`) or the file of least overlap below ([`least_overlap`], ties by the
/// level's round-robin pointer; grown by [`expand_inputs`] up to
/// `expand_limit` bytes), with the files of `output` they overlap. The levels
/// between the two must be empty.
pub(crate) fn whole_or_next(
    v: &Version,
    level: usize,
    output: usize,
    pointers: &[Vec<u8>],
    all: bool,
    expand_limit: u64,
) -> Compaction {
    debug_assert!(output > level && output < v.levels.len());
    debug_assert!((level + 1..output).all(|l| v.levels[l].is_empty()));
    let inputs: Vec<Arc<FileHandle>> = if level == 0 || all {
        v.levels[level].clone()
    } else {
        least_overlap(v, level, output, &pointers[level])
            .into_iter()
            .collect()
    };
    of_inputs(v, level, output, inputs, all, expand_limit)
}

/// The compaction of `inputs` of `level` (every file of it when `all`, or
/// level 0) into `output`, with the files of `output` they overlap; inputs
/// of a level ≥ 1 grown by [`expand_inputs`] up to `expand_limit` bytes.
fn of_inputs(
    v: &Version,
    level: usize,
    output: usize,
    inputs: Vec<Arc<FileHandle>>,
    all: bool,
    expand_limit: u64,
) -> Compaction {
    let lo = inputs.iter().map(|f| f.smallest_user_key()).min();
    let hi = inputs.iter().map(|f| f.largest_user_key()).max();
    let next_inputs = match (lo, hi) {
        (Some(lo), Some(hi)) => v.overlapping(output, Some(lo), Some(hi)),
        _ => Vec::new(),
    };
    let inputs = if level > 0 && !all {
        expand_inputs(v, level, output, inputs, &next_inputs, expand_limit)
    } else {
        inputs
    };
    let move_only = next_inputs.is_empty()
        && if level == 0 {
            !all && disjoint(&inputs)
        } else {
            inputs.len() == 1
        };
    Compaction {
        level,
        inputs,
        next_inputs,
        output_level: output,
        move_only,
    }
}

/// Whether no two of `files` share a user key.
pub(super) fn disjoint(files: &[Arc<FileHandle>]) -> bool {
    let mut ranges: Vec<(&[u8], &[u8])> = files
        .iter()
        .map(|f| (f.smallest_user_key(), f.largest_user_key()))
        .collect();
    ranges.sort_unstable();
    ranges.windows(2).all(|w| w[0].1 < w[1].0)
}

/// RocksDB's `kMinOverlappingRatio`: the file of `level` whose key range
/// meets the fewest data bytes of `output` per data byte of its own (a file
/// that meets none is a trivial move). Ties go to the first file after the
/// round-robin `pointer`, so equal candidates still take turns. One pass with
/// prefix sums of the output level: O(n log m) for n files over m.
pub(super) fn least_overlap(
    v: &Version,
    level: usize,
    output: usize,
    pointer: &[u8],
) -> Option<Arc<FileHandle>> {
    // From the levels' indexes alone (keys and sizes in flat arrays): a
    // pick at 10^7 keys weighs thousands of files, and reading each one's
    // handle and table cost cache misses per file on every pick.
    let files = &v.levels[level];
    let sizes = v.data_bytes_of(level);
    let mut prefix = Vec::with_capacity(v.levels[output].len() + 1);
    let mut sum = 0u64;
    prefix.push(sum);
    for &b in v.data_bytes_of(output) {
        sum += b;
        prefix.push(sum);
    }
    let start = if pointer.is_empty() {
        0
    } else {
        v.span(level, None, Some(pointer)).1
    };
    // (overlap bytes, own bytes, index) of the best so far.
    let mut best: Option<(u64, u64, usize)> = None;
    for k in 0..files.len() {
        let i = (start + k) % files.len();
        let (lo, hi) = v.range_of(level, i);
        let (a, b) = v.span(output, Some(lo), Some(hi));
        let overlap = prefix[b] - prefix[a];
        let size = sizes[i].max(1);
        // overlap / size < best overlap / best size, without division.
        if best.is_none_or(|(bo, bs, _)| {
            u128::from(overlap) * u128::from(bs) < u128::from(bo) * u128::from(size)
        }) {
            best = Some((overlap, size, i));
        }
    }
    best.map(|(_, _, i)| files[i].clone())
}

/// RocksDB's `TryExtendNonL0TrivialMove`: a compaction that moves one file
/// of a level ≥ 1 down (it overlaps nothing in the output level) takes along
/// the files after it in its level, as long as none of them overlaps the
/// output level either and the whole stays under `limit` data bytes. One edit
/// then moves what took one edit per file, and each edit rebuilds its two
/// levels' indexes. Filters and compression play no part, so every filter
/// configuration moves the same files (the caller rewrites, file by file,
/// those the output level wants built otherwise).
pub(crate) fn extend_trivial_move(v: &Version, c: &mut Compaction, limit: u64) {
    debug_assert!(c.level > 0 && c.inputs.len() == 1 && c.next_inputs.is_empty());
    let files = &v.levels[c.level];
    let first = c.inputs[0].clone();
    let Some(at) = files.iter().position(|f| Arc::ptr_eq(f, &first)) else {
        return;
    };
    // The first output file past the moved one: nothing may reach it.
    let out = &v.levels[c.output_level];
    let (next, _) = v.span(
        c.output_level,
        Some(first.smallest_user_key()),
        Some(first.largest_user_key()),
    );
    let bound = out.get(next).map(|g| g.smallest_user_key());
    let mut bytes = first.data_bytes();
    for f in &files[at + 1..] {
        if bound.is_some_and(|b| f.largest_user_key() >= b)
            || bytes.saturating_add(f.data_bytes()) > limit
        {
            break;
        }
        bytes += f.data_bytes();
        c.inputs.push(f.clone());
    }
}

/// LevelDB's input expansion: the files of `level` that lie inside the key
/// range of `inputs` and `next_inputs` (the output level's files they
/// overlap) join the compaction when that brings in no further file of the
/// output level and keeps the whole under `limit` bytes. Where `level` is
/// denser than the level below — after an L0 merge has filled L1 far past its
/// target — one output file's range holds several of its files, and merging
/// them together rewrites that output file once instead of once per file.
pub(super) fn expand_inputs(
    v: &Version,
    level: usize,
    output: usize,
    inputs: Vec<Arc<FileHandle>>,
    next_inputs: &[Arc<FileHandle>],
    limit: u64,
) -> Vec<Arc<FileHandle>> {
    if next_inputs.is_empty() {
        return inputs;
    }
    let all = inputs.iter().chain(next_inputs);
    let lo = all.clone().map(|f| f.smallest_user_key()).min();
    let hi = all.map(|f| f.largest_user_key()).max();
    let expanded = v.overlapping(level, lo, hi);
    if expanded.len() <= inputs.len() {
        return inputs;
    }
    // Data bytes, as level targets: the same files join whatever the filters.
    let bytes = |files: &[Arc<FileHandle>]| files.iter().map(|f| f.data_bytes()).sum::<u64>();
    if bytes(&expanded) + bytes(next_inputs) > limit {
        return inputs;
    }
    let elo = expanded.iter().map(|f| f.smallest_user_key()).min();
    let ehi = expanded.iter().map(|f| f.largest_user_key()).max();
    let (first, end) = v.span(output, elo, ehi);
    if end - first != next_inputs.len() {
        return inputs;
    }
    expanded
}
