//! False-positive models, the best number of probes, sizing for a target FPR,
//! and the per-level (Monkey) allocation of filter memory.
//!
//! All rates are probabilities in `0.0..=1.0`. The numbers quoted in the docs
//! below are asserted by the unit tests at the end of this file.
//!
//! | model | 6 b/k | 10 b/k | 16 b/k |
//! |---|---|---|---|
//! | classic `(1-e^(-k/b))^k`, best k (4, 7, 11) | 5.61% | 0.819% | 0.0458% |
//! | blocked-512 exact, best k (4, 6, 9) | 5.774% | 0.9665% | 0.0844% |
//! | blocked-512 Putze approximation, same k | 5.753% | 0.9576% | 0.0826% |
//! | information-theoretic bound `2^-b` | 1.56% | 0.098% | 0.0015% |
//!
//! The models ([`classic_fpr`], [`blocked512_fpr`], [`blocked512_putze_fpr`])
//! take any input and return in bounded time: zero or negative bits per key,
//! or k = 0, give 1.0 (no filter); NaN bits per key give NaN; k above
//! [`MAX_PROBES`] is evaluated as [`MAX_PROBES`] (no filter has more probes,
//! and the exact blocked model's cost grows with k³); and the blocked models
//! give 1.0 at or below [`full_line_bits_per_key`], where every bit is set to
//! double precision (their sums grow with the keys per line).

use super::{FilterKind, MAX_BITS_PER_KEY, MAX_PROBES, MIN_BITS_PER_KEY};

/// Bits in one blocked-filter line.
pub const LINE_BITS: f64 = 512.0;

/// The bits per key at or below which the blocked models answer 1.0 for `k`
/// probes without summing: `8·(1 - (1 - 1/512)^k)`, 1/64 for k = 1, 0.093
/// for k = 6, 0.455 for k = 30 (always below [`MIN_BITS_PER_KEY`]).
///
/// With `λ = 512 / b` keys per line on average, a given bit of a line is
/// clear with probability `exp(-λ·(1 - (1 - 1/512)^k))` (Poisson keys, `k`
/// uniform bits each), at most `e^-64` here; by the union bound a query's at
/// most 30 bits are then all set with probability above `1 - 30·e^-64`, which
/// is 1.0 in `f64` (Putze's approximation is bounded the same way). The sums
/// that the models would otherwise evaluate grow with λ.
pub fn full_line_bits_per_key(k: u32) -> f64 {
    let k = k.min(MAX_PROBES);
    LINE_BITS / 64.0 * (1.0 - (1.0 - 1.0 / LINE_BITS).powi(k as i32))
}

/// The classic Bloom-filter FPR, `(1 - e^(-k/b))^k`, for `b` bits per key and
/// `k` probes (0.819% at b = 10, k = 7). Out-of-range inputs as in the
/// [module docs](self).
pub fn classic_fpr(bits_per_key: f64, k: u32) -> f64 {
    if bits_per_key <= 0.0 || k == 0 {
        return 1.0;
    }
    let k = k.min(MAX_PROBES);
    (1.0 - (-f64::from(k) / bits_per_key).exp()).powi(k as i32)
}

/// The k that minimises [`classic_fpr`] (≈ 0.69 · bits per key).
pub fn classic_best_k(bits_per_key: f64) -> u32 {
    best_k(|k| classic_fpr(bits_per_key, k))
}

/// Distribution of the number of distinct positions among `k` uniform draws
/// from `m`: `p[d]` = P(D = d).
fn distinct_draws(k: u32, m: f64) -> Vec<f64> {
    let k = k as usize;
    let mut p = vec![0.0; k + 1];
    p[0] = 1.0;
    for j in 0..k {
        for d in (0..=j).rev() {
            let v = p[d];
            p[d] = v * d as f64 / m;
            p[d + 1] += v * (m - d as f64) / m;
        }
    }
    p
}

fn binomial(n: usize, r: usize) -> f64 {
    (0..r).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The exact FPR of a 512-bit blocked Bloom filter with `b` bits per key and `k`
/// probes per key, when probe positions are uniform and independent.
///
/// Keys per line are Poisson with mean `λ = 512 / b`. A query's `k` probes hit
/// `D` distinct bits (`D` has the occupancy distribution of `k` draws from 512);
/// it is a false positive if all `D` are set. Given `N = n` keys in the line, the
/// `n·k` set-probes cover `D` given bits with probability
/// `Σ_i (-1)^i C(D,i) (1 - i/512)^(n·k)` (inclusion–exclusion), and averaging
/// over Poisson `N` turns `(1 - i/512)^(n·k)` into `exp(-λ (1 - (1 - i/512)^k))`.
///
/// 0.9665% at 10 b/k with k = 6; 0.0844% at 16 b/k with k = 9. The simpler
/// Putze et al. form ([`blocked512_putze_fpr`]) reads about 1–2% lower because it
/// replaces the occupancy of a line by its mean (Jensen's inequality).
///
/// The alternating sum loses precision for large k, so for `k > 20` the same
/// quantity is computed by a (slower, cancellation-free) Markov chain.
/// Out-of-range inputs as in the [module docs](self).
pub fn blocked512_fpr(bits_per_key: f64, k: u32) -> f64 {
    if k == 0 || bits_per_key <= full_line_bits_per_key(k) {
        return 1.0;
    }
    let k = k.min(MAX_PROBES);
    let lambda = LINE_BITS / bits_per_key;
    let pd = distinct_draws(k, LINE_BITS);
    if k > 20 {
        return blocked512_fpr_chain(lambda, k, &pd);
    }
    let k = k as usize;
    let mut fpr = 0.0;
    for i in 0..=k {
        let c: f64 = (i..=k).map(|d| pd[d] * binomial(d, i)).sum();
        let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
        let cover = 1.0 - (1.0 - i as f64 / LINE_BITS).powi(k as i32);
        fpr += sign * c * (-lambda * cover).exp();
    }
    fpr.clamp(0.0, 1.0)
}

/// [`blocked512_fpr`] by direct summation: for each number `d` of distinct
/// query bits, a Markov chain over how many of them are covered as keys
/// arrive, mixed over Poisson keys per line.
///
/// One key's `k` set-probes move the chain by `U = T^k`, where `T` is one
/// probe's step (`c → c + 1` with probability `(d − c) / 512`). `U` is
/// computed once per `d`, so each key costs an upper-triangular
/// matrix-vector product of independent multiply-adds, not `k` dependent
/// steps with divisions: the same sums (to 1e-9), 3.4 to 7.4 times faster
/// for k from 21 to 30 (7.6–8 ms rather than 58 at k = 30 on a nearly
/// full line, 0.15–0.26 ms rather than 0.58–0.91 at k = 21 and 40 bits per
/// key; two runs, each alternating the two in one process). It runs
/// once per filter, or filter partition, a table opens.
fn blocked512_fpr_chain(lambda: f64, k: u32, pd: &[f64]) -> f64 {
    mix_over_distinct_bits(lambda, pd, |d, weights| {
        let n = d + 1;
        // ut[to * n + from]: P(from → to) over one key's k probes (U transposed,
        // so that each new state is a contiguous dot product).
        let mut ut = vec![0.0; n * n];
        let mut row = vec![0.0; n];
        for from in 0..n {
            row.iter_mut().for_each(|x| *x = 0.0);
            row[from] = 1.0;
            for _ in 0..k {
                probe(&mut row[from..], d - from);
            }
            for to in from..n {
                ut[to * n + from] = row[to];
            }
        }
        let mut covered = vec![0.0; n];
        let mut next = vec![0.0; n];
        covered[0] = 1.0;
        let mut all = 0.0;
        for &w in weights {
            all += w * covered[d];
            for to in 0..n {
                next[to] = ut[to * n..to * n + to + 1]
                    .iter()
                    .zip(&covered[..=to])
                    .map(|(u, v)| u * v)
                    .sum();
            }
            std::mem::swap(&mut covered, &mut next);
        }
        all
    })
}

/// `Σ_d P(D = d) · all_covered(d, weights)` over the numbers `d ≥ 1` of
/// distinct query bits, where `all_covered` gives the chance that all `d`
/// are set, averaged with `weights` (Poisson keys per line, mean `lambda`).
fn mix_over_distinct_bits(
    lambda: f64,
    pd: &[f64],
    mut all_covered: impl FnMut(usize, &[f64]) -> f64,
) -> f64 {
    let n_max = (lambda + 12.0 * lambda.sqrt() + 30.0) as usize;
    let weights = poisson_weights(lambda, n_max);
    let fpr: f64 = pd
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, p_d)| **p_d != 0.0)
        .map(|(d, p_d)| p_d * all_covered(d, &weights))
        .sum();
    fpr.clamp(0.0, 1.0)
}

/// One set-probe's step of the chain over how many of `covered.len() - 1`
/// query bits are set: from `c` set (of `d`) to `c + 1` with probability
/// `(d − c) / 512`.
fn probe(covered: &mut [f64], d: usize) {
    for c in (0..d).rev() {
        let hit = covered[c] * (d - c) as f64 / LINE_BITS;
        covered[c] -= hit;
        covered[c + 1] += hit;
    }
}

/// The chain as first written, a probe at a time: the reference the faster
/// [`blocked512_fpr_chain`] is checked against.
#[cfg(test)]
fn blocked512_fpr_chain_by_probe(lambda: f64, k: u32, pd: &[f64]) -> f64 {
    mix_over_distinct_bits(lambda, pd, |d, weights| {
        let mut covered = vec![0.0; d + 1];
        covered[0] = 1.0;
        let mut all = 0.0;
        for &w in weights {
            all += w * covered[d];
            for _ in 0..k {
                probe(&mut covered, d);
            }
        }
        all
    })
}

/// `P(N = n)` for `n` in `0..=n_max`, N ~ Poisson(λ), accumulated in log space
/// so that large λ does not underflow.
fn poisson_weights(lambda: f64, n_max: usize) -> Vec<f64> {
    let mut ln_p = -lambda;
    (0..=n_max)
        .map(|n| {
            if n > 0 {
                ln_p += (lambda / n as f64).ln();
            }
            ln_p.exp()
        })
        .collect()
}

/// The Putze–Sanders–Singler approximation of a blocked filter: classic FPR of a
/// 512-bit filter, averaged over Poisson keys per line,
/// `Σ_n Pois(n; 512/b) · (1 - (1 - 1/512)^(n·k))^k`. Kept for comparison.
/// Out-of-range inputs as in the [module docs](self).
pub fn blocked512_putze_fpr(bits_per_key: f64, k: u32) -> f64 {
    if k == 0 || bits_per_key <= full_line_bits_per_key(k) {
        return 1.0;
    }
    let k = k.min(MAX_PROBES);
    let lambda = LINE_BITS / bits_per_key;
    let n_max = (lambda + 12.0 * lambda.sqrt() + 30.0) as usize;
    let keep = 1.0 - 1.0 / LINE_BITS;
    let mut fpr = 0.0;
    for (n, w) in poisson_weights(lambda, n_max).into_iter().enumerate() {
        let set = 1.0 - keep.powf((n as u64 * u64::from(k)) as f64);
        fpr += w * set.powi(k as i32);
    }
    fpr.clamp(0.0, 1.0)
}

/// The k that minimises [`blocked512_fpr`]: 6 at 10 b/k, 9 at 16 b/k (about
/// half the bits per key at high budgets, not 0.69 · b).
pub fn blocked512_best_k(bits_per_key: f64) -> u32 {
    best_k(|k| blocked512_fpr(bits_per_key, k))
}

fn best_k(fpr: impl Fn(u32) -> f64) -> u32 {
    let mut best = (1, fpr(1));
    for k in 2..=MAX_PROBES {
        let f = fpr(k);
        if f < best.1 {
            best = (k, f);
        } else if k > best.0 + 3 {
            break; // well past the (unimodal) minimum
        }
    }
    best.0
}

/// The exact FPR model of a Ribbon filter at `bits_per_key` (see
/// [`super::ribbon`]): the bits per key buy `ρ = bits / (1 + ε)` result
/// bits per key, `ε` = [`RIBBON_NOMINAL_OVERHEAD`](super::ribbon::RIBBON_NOMINAL_OVERHEAD)
/// (5%) being the slots beyond one per key. With `r = ⌊ρ⌋` and `f = ρ - r`,
/// a share `f` of the start positions lies in blocks with `r + 1` columns
/// and the rest in blocks with `r`, and a query is a false positive with
/// probability `2^-columns` of its block: `FPR = 2^-r · (1 - f/2)`.
///
/// 0.78% at 7.35 b/k (ρ = 7), 1.0% at 7.057 b/k, 0.1% at 10.475 b/k.
/// `ρ` is at most 63 (FPR ≥ 2^-63). Out-of-range inputs as in the
/// [module docs](self): zero or negative bits give 1.0, NaN gives NaN.
pub fn ribbon_fpr(bits_per_key: f64) -> f64 {
    if bits_per_key.is_nan() {
        return f64::NAN;
    }
    if bits_per_key <= 0.0 {
        return 1.0;
    }
    let rho = bits_per_key / (1.0 + super::ribbon::RIBBON_NOMINAL_OVERHEAD);
    let rho = rho.min(f64::from(super::ribbon::MAX_RIBBON_COLUMNS - 1));
    ribbon_fpr_of_columns(rho)
}

/// `2^-r · (1 - f/2)` for `ρ = r + f` result bits per key (average columns).
pub fn ribbon_fpr_of_columns(rho: f64) -> f64 {
    let r = rho.floor();
    let f = rho - r;
    (0.5f64).powi(r as i32) * (1.0 - 0.5 * f)
}

/// The modelled FPR of `kind` at `bits_per_key` with its best k.
pub fn best_fpr(kind: FilterKind, bits_per_key: f64) -> f64 {
    if bits_per_key < MIN_BITS_PER_KEY {
        return 1.0;
    }
    kind.model_fpr(bits_per_key, kind.best_probes(bits_per_key))
}

/// The fewest bits per key (to 0.001) for which `kind`, with its best k, has a
/// modelled FPR at most `fpr`; clamped to the accepted range. At 1% this is
/// 9.59 for the classic model, 10.0 for blocked-512 (≈ 9.9) and 7.057 for
/// Ribbon ([`ribbon_fpr`]; 10.475 at 0.1%).
pub fn bits_per_key_for_fpr(kind: FilterKind, fpr: f64) -> f64 {
    if fpr.is_nan() || fpr <= 0.0 {
        return MAX_BITS_PER_KEY;
    }
    if best_fpr(kind, MIN_BITS_PER_KEY) <= fpr {
        return MIN_BITS_PER_KEY;
    }
    if best_fpr(kind, MAX_BITS_PER_KEY) > fpr {
        return MAX_BITS_PER_KEY;
    }
    let (mut lo, mut hi) = (MIN_BITS_PER_KEY, MAX_BITS_PER_KEY);
    while hi - lo > 0.0005 {
        let mid = 0.5 * (lo + hi);
        if best_fpr(kind, mid) <= fpr {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    (hi * 1000.0).ceil() / 1000.0
}

/// Grid of the Monkey allocation, in bits per key.
const MONKEY_STEP: f64 = 0.0625;
/// Most bits per key the Monkey allocation gives a run (FPR ≈ 1e-5 for
/// blocked-512): beyond it the sum of FPRs no longer changes measurably, and the
/// model stays in its fast closed form (k ≤ 20).
pub const MONKEY_MAX_BITS: f64 = 40.0;

/// A family's FPR at every grid step of the allocation, and the steps on
/// the lower convex hull of the points `(s, fpr[s])`.
struct FprTable {
    /// `best_fpr(kind, s · MONKEY_STEP)` for every step `s`.
    fpr: Vec<f64>,
    /// The hull's steps, increasing: a cost `w · fpr[s] + c · s` with `w`
    /// and `c` positive is least at one of them (a linear objective over a
    /// set of points is least at a vertex of its hull, on the side the
    /// objective decreases toward), and along them it falls, then rises.
    hull: Vec<usize>,
}

/// The lower convex hull of `(s, fpr[s])` (monotone chain): collinear and
/// higher points dropped, the leftmost of equal ones kept.
fn lower_hull(fpr: &[f64]) -> Vec<usize> {
    let mut hull: Vec<usize> = Vec::new();
    for s in 0..fpr.len() {
        while let [.., a, b] = hull[..] {
            // Drop b unless it lies strictly below the line from a to s.
            let cross = (b - a) as f64 * (fpr[s] - fpr[a]) - (fpr[b] - fpr[a]) * (s - a) as f64;
            if cross <= 0.0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(s);
    }
    hull
}

/// `kind`'s [`FprTable`], computed once per kind.
fn monkey_table(kind: FilterKind) -> &'static FprTable {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    // One table per family, made on first use and kept for the process (a
    // registered family lives as long).
    static TABLES: OnceLock<Mutex<HashMap<FilterKind, &'static FprTable>>> = OnceLock::new();
    let tables = TABLES.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(t) = tables.lock().unwrap_or_else(|e| e.into_inner()).get(&kind) {
        return t;
    }
    let steps = (MONKEY_MAX_BITS / MONKEY_STEP) as usize;
    let fpr: Vec<f64> = (0..=steps)
        .map(|s| best_fpr(kind, s as f64 * MONKEY_STEP))
        .collect();
    let hull = lower_hull(&fpr);
    let mut tables = tables.lock().unwrap_or_else(|e| e.into_inner());
    tables
        .entry(kind)
        .or_insert_with(|| Box::leak(Box::new(FprTable { fpr, hull })))
}

/// Monkey's allocation (Dayan, Athanassoulis, Idreos, SIGMOD 2017): split a
/// memory budget of `avg_bits_per_key` over all keys between levels holding
/// `level_keys[i]` keys so that the sum of the levels' FPRs — the expected
/// number of wasted data-block reads of a missing-key lookup that probes one
/// file per level — is smallest. [`monkey_allocation_weighted`] with every
/// weight 1.
pub fn monkey_allocation(kind: FilterKind, level_keys: &[u64], avg_bits_per_key: f64) -> Vec<f64> {
    monkey_allocation_weighted(
        kind,
        level_keys,
        &vec![1.0; level_keys.len()],
        avg_bits_per_key,
    )
}

/// The allocation that minimises `Σ weights[i] · fpr(bits[i])` for a budget of
/// `avg_bits_per_key` over all keys: with `weights[i]` the probability that a
/// missing-key lookup probes run `i`, the expected wasted reads per missing
/// get. All weights 1 is Monkey; measured probe rates give the best any
/// per-run allocation can do on a given store (the benchmarks use it as a
/// bound).
///
/// For the classic model the optimum gives each run an FPR proportional to
/// `keys / weight`. Here it is solved on `kind`'s own model by a Lagrange
/// multiplier `μ`: each run independently takes the bits/key `b` (on a
/// 1/16-bit grid) that minimises `w · fpr(b) + μ · n · b`, and `μ` is bisected
/// until the memory fits the budget. A run may get 0 bits (no filter at all),
/// and none gets more than [`MONKEY_MAX_BITS`]. Returns bits per key per run.
///
/// # Panics
/// If `weights` and `level_keys` differ in length.
pub fn monkey_allocation_weighted(
    kind: FilterKind,
    level_keys: &[u64],
    weights: &[f64],
    avg_bits_per_key: f64,
) -> Vec<f64> {
    monkey_allocation_mixed(
        &vec![kind; level_keys.len()],
        level_keys,
        weights,
        avg_bits_per_key,
    )
}

/// The grid step of `table` (a [`monkey_table`]) that minimises
/// `weight · fpr + mu · keys · bits`: one run's share of the Lagrangian.
/// The first such step: found among the hull's steps by bisection (the
/// cost falls along them, then rises), or by a scan of every step when the
/// cost is not positive in both terms. A solve evaluates it for every run
/// at each of some 46 multipliers, and a workload-aware store solves over
/// every file for each flush and compaction.
fn best_step(table: &FprTable, keys: f64, weight: f64, mu: f64) -> usize {
    let cost = |s: usize| step_cost(&table.fpr, keys, weight, mu, s);
    let c = mu * keys;
    if !(weight > 0.0 && c > 0.0 && weight.is_finite() && c.is_finite()) {
        return scan_step(&table.fpr, cost);
    }
    // The first hull step whose next one costs no less.
    let h = &table.hull;
    let (mut lo, mut hi) = (0, h.len() - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if cost(h[mid + 1]) >= cost(h[mid]) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    h[lo]
}

/// One run's share of the Lagrangian at step `s`: `weight · fpr + mu · keys
/// · bits`.
fn step_cost(fpr: &[f64], keys: f64, weight: f64, mu: f64, s: usize) -> f64 {
    weight * fpr[s] + mu * keys * s as f64 * MONKEY_STEP
}

/// The first step of `fpr` at which `cost` is least, by a scan of them all.
fn scan_step(fpr: &[f64], cost: impl Fn(usize) -> f64) -> usize {
    (0..fpr.len())
        .min_by(|&a, &b| cost(a).total_cmp(&cost(b)))
        .unwrap_or(0)
}

/// The smallest multiplier `μ` (to a relative 1e-12) whose allocation's
/// memory, `memory(μ)` (non-increasing in `μ`), fits in `budget` bits.
fn fitting_multiplier(memory: impl Fn(f64) -> f64, budget: f64) -> f64 {
    // Larger μ makes memory dearer; find the smallest μ that fits.
    let (mut lo, mut hi) = (1e-30f64, 1.0f64);
    for _ in 0..200 {
        let mid = (lo * hi).sqrt();
        if memory(mid) <= budget {
            hi = mid;
        } else {
            lo = mid;
        }
        if hi / lo < 1.0 + 1e-12 {
            break;
        }
    }
    hi
}

/// One run of a rate-weighted allocation ([`rate_multiplier`],
/// [`rate_bits`]): its family, its keys and the rate at which lookups of
/// keys it does not hold probe it (probes per lookup).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatedRun {
    /// The run's filter family.
    pub kind: FilterKind,
    /// Keys in the run.
    pub keys: u64,
    /// Probes per lookup by keys the run does not hold.
    pub rate: f64,
}

/// The multiplier `μ` of the allocation that minimises `Σ rate · fpr(bits)`
/// over `runs` for `budget_bits` bits in all (each run on its own family's
/// model; [`monkey_allocation_weighted`] solves the same problem and also
/// spends the grid's remainder). Each run then takes [`rate_bits`]`(run, μ)`:
/// so does a run written later, which is how one solve over the store sizes
/// the files of a flush or compaction one at a time. `None` for no keys or a
/// budget that is not a positive number.
pub fn rate_multiplier(runs: &[RatedRun], budget_bits: f64) -> Option<f64> {
    let keys: f64 = runs.iter().map(|r| r.keys as f64).sum();
    if keys == 0.0 || budget_bits.is_nan() || budget_bits <= 0.0 {
        return None;
    }
    let budget = budget_bits.min(MONKEY_MAX_BITS * keys);
    let tables: Vec<&FprTable> = runs.iter().map(|r| monkey_table(r.kind)).collect();
    let memory = |mu: f64| -> f64 {
        runs.iter()
            .zip(&tables)
            .map(|(r, t)| {
                let n = r.keys as f64;
                n * best_step(t, n, r.rate.max(0.0), mu) as f64 * MONKEY_STEP
            })
            .sum()
    };
    Some(fitting_multiplier(memory, budget))
}

/// The bits per key (on the allocation's 1/16-bit grid, at most
/// [`MONKEY_MAX_BITS`]) that `run` takes at multiplier `mu`: the minimum of
/// `rate · fpr(b) + mu · keys · b`. Depends on the run only through its
/// rate per key, so a file gets the bits of any run with its rate per key.
pub fn rate_bits(run: &RatedRun, mu: f64) -> f64 {
    let n = run.keys.max(1) as f64;
    best_step(monkey_table(run.kind), n, run.rate.max(0.0), mu) as f64 * MONKEY_STEP
}

/// [`monkey_allocation_weighted`] over runs of different families: run `i`'s
/// bits are chosen on `kinds[i]`'s own model, all under one memory budget
/// (e.g. blocked512 on the top levels and Ribbon below, the hybrid design).
///
/// # Panics
/// If `kinds`, `weights` and `level_keys` differ in length.
pub fn monkey_allocation_mixed(
    kinds: &[FilterKind],
    level_keys: &[u64],
    weights: &[f64],
    avg_bits_per_key: f64,
) -> Vec<f64> {
    assert_eq!(level_keys.len(), weights.len(), "one weight per run");
    assert_eq!(level_keys.len(), kinds.len(), "one kind per run");
    let total_keys: f64 = level_keys.iter().map(|&n| n as f64).sum();
    if total_keys == 0.0 || avg_bits_per_key.is_nan() || avg_bits_per_key <= 0.0 {
        return vec![0.0; level_keys.len()];
    }
    let budget = avg_bits_per_key.min(MONKEY_MAX_BITS) * total_keys;
    let tables: Vec<&FprTable> = kinds.iter().map(|&k| monkey_table(k)).collect();
    let steps = tables.first().map_or(0, |t| t.fpr.len() - 1);
    let choose = |mu: f64| -> Vec<usize> {
        level_keys
            .iter()
            .zip(weights)
            .zip(&tables)
            .map(|((&n, &w), fpr_at)| best_step(fpr_at, n as f64, w, mu))
            .collect()
    };
    let memory = |alloc: &[usize]| -> f64 {
        alloc
            .iter()
            .zip(level_keys)
            .map(|(&s, &n)| n as f64 * s as f64 * MONKEY_STEP)
            .sum()
    };
    let mut alloc = choose(fitting_multiplier(|mu| memory(&choose(mu)), budget));
    // Spend what the grid left over, one step at a time, where it helps most.
    let mut left = budget - memory(&alloc);
    loop {
        let best = level_keys
            .iter()
            .enumerate()
            .filter(|&(i, &n)| n > 0 && alloc[i] < steps && n as f64 * MONKEY_STEP <= left)
            .map(|(i, &n)| {
                let gain = weights[i] * (tables[i].fpr[alloc[i]] - tables[i].fpr[alloc[i] + 1]);
                (i, gain / n as f64)
            })
            .filter(|&(_, gain)| gain > 0.0)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((i, _)) = best else { break };
        left -= level_keys[i] as f64 * MONKEY_STEP;
        alloc[i] += 1;
    }
    alloc.iter().map(|&s| s as f64 * MONKEY_STEP).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hull's bisection finds the step a scan of every step finds, for
    /// every built-in family, over weights, key counts and multipliers
    /// spanning the allocations' range (and the degenerate ones the scan
    /// serves).
    #[test]
    fn best_step_on_the_hull_is_the_scans() {
        let mut next = crate::test_rng::xorshift(0x4011);
        let mut unit = || (next() >> 11) as f64 / (1u64 << 53) as f64;
        for kind in FilterKind::ALL {
            let t = monkey_table(kind);
            assert_eq!(t.hull.first(), Some(&0));
            assert_eq!(t.hull.last(), Some(&(t.fpr.len() - 1)));
            for _ in 0..20_000 {
                let keys = (10f64.powf(unit() * 9.0)).floor();
                let weight = match unit() {
                    u if u < 0.05 => 0.0,
                    _ => 10f64.powf(unit() * 8.0 - 6.0),
                };
                let mu = match unit() {
                    u if u < 0.05 => 0.0,
                    _ => 10f64.powf(unit() * 30.0 - 30.0),
                };
                let cost = |s: usize| step_cost(&t.fpr, keys, weight, mu, s);
                let (fast, slow) = (best_step(t, keys, weight, mu), scan_step(&t.fpr, cost));
                assert!(
                    fast == slow || cost(fast) <= cost(slow) * (1.0 + 1e-12),
                    "{kind:?} keys {keys} weight {weight} mu {mu}: hull {fast} ({}), scan {slow} ({})",
                    cost(fast),
                    cost(slow)
                );
            }
        }
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        ((a - b) / b).abs() <= rel
    }

    #[test]
    fn documented_numbers() {
        assert!(close(classic_fpr(10.0, 7), 0.00819, 0.002));
        assert!(close(blocked512_fpr(10.0, 6), 0.009665, 0.0005));
        assert!(close(blocked512_fpr(16.0, 9), 0.000844, 0.001));
        assert!(close(blocked512_fpr(6.0, 4), 0.05774, 0.001));
        assert!(close(blocked512_putze_fpr(10.0, 6), 0.009576, 0.001));
        assert!(close(classic_fpr(6.0, 4), 0.0561, 0.002));
        assert!(close(classic_fpr(16.0, 11), 0.000458, 0.005));
    }

    #[test]
    fn best_k_for_blocking_is_lower() {
        assert_eq!(blocked512_best_k(10.0), 6);
        assert_eq!(blocked512_best_k(16.0), 9);
        assert_eq!(blocked512_best_k(6.0), 4);
        assert_eq!(classic_best_k(10.0), 7);
        assert_eq!(classic_best_k(16.0), 11);
        assert_eq!(classic_best_k(6.0), 4);
    }

    #[test]
    fn exact_model_is_above_putze() {
        for b in [4.0, 8.0, 10.0, 12.0, 20.0] {
            let k = blocked512_best_k(b);
            assert!(blocked512_fpr(b, k) > blocked512_putze_fpr(b, k));
        }
    }

    /// The matrix form of the chain gives the probe-by-probe sums, at every
    /// k it serves and across loads from a nearly full line to a sparse one.
    #[test]
    fn chain_by_key_equals_chain_by_probe() {
        for k in [6, 21, 25, 30] {
            let lo = full_line_bits_per_key(k);
            for b in [lo * 1.01, lo * 1.5, 5.0, 10.0, 40.0, 80.0] {
                let lambda = LINE_BITS / b;
                let pd = distinct_draws(k, LINE_BITS);
                let fast = blocked512_fpr_chain(lambda, k, &pd);
                let slow = blocked512_fpr_chain_by_probe(lambda, k, &pd);
                assert!(close(fast, slow, 1e-9), "b={b} k={k}: {fast} vs {slow}");
            }
        }
    }

    #[test]
    fn chain_agrees_with_closed_form() {
        for (b, k) in [(10.0, 6), (16.0, 9), (30.0, 14), (24.0, 20)] {
            let lambda = LINE_BITS / b;
            let pd = distinct_draws(k, LINE_BITS);
            let chain = blocked512_fpr_chain(lambda, k, &pd);
            assert!(close(chain, blocked512_fpr(b, k), 1e-6), "b={b} k={k}");
        }
        // Large k stays monotone and sane.
        let high = blocked512_fpr(60.0, blocked512_best_k(60.0));
        assert!(high > 0.0 && high < blocked512_fpr(40.0, blocked512_best_k(40.0)));
    }

    #[test]
    fn sizing_for_target_fpr() {
        let b = bits_per_key_for_fpr(FilterKind::Blocked512, 0.01);
        assert!(best_fpr(FilterKind::Blocked512, b) <= 0.01);
        assert!(best_fpr(FilterKind::Blocked512, b - 0.01) > 0.01);
        let c = bits_per_key_for_fpr(FilterKind::Bloom, 0.01);
        assert!((c - 9.585).abs() < 0.01, "{c}");
        assert!(b > c, "blocking needs more bits for the same FPR");
        assert_eq!(
            bits_per_key_for_fpr(FilterKind::Bloom, 0.9),
            MIN_BITS_PER_KEY
        );
    }

    #[test]
    fn ribbon_model() {
        // Whole result bits: 2^-r; halfway: 0.75 · 2^-r.
        assert!(close(ribbon_fpr(7.0 * 1.05), 0.5f64.powi(7), 1e-12));
        assert!(close(ribbon_fpr_of_columns(6.5), 0.75 / 64.0, 1e-12));
        let one = bits_per_key_for_fpr(FilterKind::Ribbon, 0.01);
        assert!((one - 7.057).abs() < 0.002, "{one}");
        assert!(ribbon_fpr(one) <= 0.01 && ribbon_fpr(one - 0.002) > 0.01);
        let tenth = bits_per_key_for_fpr(FilterKind::Ribbon, 0.001);
        assert!((tenth - 10.475).abs() < 0.002, "{tenth}");
        // Monotone, continuous at whole columns, and clamped.
        let mut last = 1.0;
        for i in 1..=1000 {
            let f = ribbon_fpr(i as f64 * 0.1);
            assert!(f <= last, "{i}");
            last = f;
        }
        assert!(close(
            ribbon_fpr_of_columns(6.999_999),
            ribbon_fpr_of_columns(7.0),
            1e-5
        ));
        assert_eq!(ribbon_fpr(0.0), 1.0);
        assert!(ribbon_fpr(f64::NAN).is_nan());
        assert_eq!(ribbon_fpr(100.0), 0.5f64.powi(63));
        // About 1.05 × log2(1/FPR) bits per key, far below blocked512's.
        for fpr in [0.01, 0.001] {
            let b = bits_per_key_for_fpr(FilterKind::Ribbon, fpr);
            let ratio = b / (1.0 / fpr).log2();
            assert!(ratio < 1.07, "{fpr}: {ratio}");
        }
    }

    #[test]
    fn weighted_allocation_follows_probe_rates() {
        let kind = FilterKind::Blocked512;
        let levels = [30_000u64, 260_000, 700_000];
        let cost = |bits: &[f64], w: &[f64]| -> f64 {
            bits.iter()
                .zip(w)
                .map(|(&b, &w)| w * best_fpr(kind, b))
                .sum()
        };
        let memory =
            |bits: &[f64]| -> f64 { levels.iter().zip(bits).map(|(&n, &b)| n as f64 * b).sum() };
        // Weight 1 everywhere is plain Monkey.
        let ones = [1.0; 3];
        assert_eq!(
            monkey_allocation_weighted(kind, &levels, &ones, 10.0),
            monkey_allocation(kind, &levels, 10.0)
        );
        // A run nobody probes gets no bits; the others share the budget.
        let w = [0.0, 1.0, 1.0];
        let bits = monkey_allocation_weighted(kind, &levels, &w, 10.0);
        assert_eq!(bits[0], 0.0);
        assert!(memory(&bits) <= 10.0 * 990_000.0 + 1e-6);
        // Rarely probed runs get fewer bits than under Monkey, and the expected
        // wasted reads under the true rates are lower than Monkey's and
        // uniform's at the same memory. (Plain Monkey, which assumes every run
        // is probed, is no better than uniform at these rates: 0.01747 vs
        // 0.01740.)
        let rates = [0.1, 0.7, 1.0];
        let weighted = monkey_allocation_weighted(kind, &levels, &rates, 10.0);
        let plain = monkey_allocation(kind, &levels, 10.0);
        assert!(weighted[0] < plain[0], "{weighted:?} vs {plain:?}");
        assert!(memory(&weighted) <= memory(&[10.0; 3]) + 1e-6);
        let (cw, cp, cu) = (
            cost(&weighted, &rates),
            cost(&plain, &rates),
            cost(&[10.0; 3], &rates),
        );
        assert!(cw < cp && cw < cu * 0.96, "{cw} {cp} {cu}");
    }

    #[test]
    fn rate_allocation_keeps_the_budget_and_follows_the_rates() {
        let kind = FilterKind::Blocked512;
        let run = |keys, rate| RatedRun { kind, keys, rate };
        let spent = |runs: &[RatedRun], mu: f64| -> f64 {
            runs.iter().map(|r| r.keys as f64 * rate_bits(r, mu)).sum()
        };
        // Without history every run is probed once per lookup: Monkey's
        // allocation, but for the remainder of the grid that Monkey spends
        // on the smallest runs (up to 1.2 bits/key on the 10k-key run), at
        // an expected cost within 1% of Monkey's.
        let levels = [10_000u64, 100_000, 1_000_000, 10_000_000];
        let runs: Vec<RatedRun> = levels.iter().map(|&n| run(n, 1.0)).collect();
        let keys: f64 = levels.iter().map(|&n| n as f64).sum();
        let mu = rate_multiplier(&runs, 10.0 * keys).unwrap();
        let monkey = monkey_allocation(kind, &levels, 10.0);
        for (r, m) in runs.iter().zip(&monkey) {
            let b = rate_bits(r, mu);
            assert!(b <= *m && b > m - 1.25, "{r:?}: {b} vs {m}");
        }
        let avg = spent(&runs, mu) / keys;
        assert!(avg <= 10.0 && avg > 10.0 - MONKEY_STEP, "{avg}");
        let fprs = |b: &mut dyn Iterator<Item = f64>| b.map(|b| best_fpr(kind, b)).sum::<f64>();
        let (rated, plain) = (
            fprs(&mut runs.iter().map(|r| rate_bits(r, mu))),
            fprs(&mut monkey.iter().copied()),
        );
        assert!(rated < plain * 1.01, "{rated} vs {plain}");
        // Eight equal files, two of them probed ten times as often: the hot
        // ones get more bits, the budget holds, and the expected wasted
        // reads under those rates are below uniform's.
        let rates = [1.0, 1.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1];
        let runs: Vec<RatedRun> = rates.iter().map(|&r| run(100_000, r)).collect();
        let mu = rate_multiplier(&runs, 10.0 * 800_000.0).unwrap();
        let bits: Vec<f64> = runs.iter().map(|r| rate_bits(r, mu)).collect();
        assert!(bits[0] > 10.0 && bits[2] < 10.0, "{bits:?}");
        assert!(spent(&runs, mu) <= 10.0 * 800_000.0 + 1e-6);
        let cost = |b: &[f64]| -> f64 {
            b.iter()
                .zip(rates)
                .map(|(&b, r)| r * best_fpr(kind, b))
                .sum()
        };
        let (aware, uniform) = (cost(&bits), cost(&[10.0; 8]));
        assert!(aware < 0.8 * uniform, "{aware} vs {uniform}");
        // A run nobody probes gets nothing; bad budgets plan nothing.
        assert_eq!(rate_bits(&run(100_000, 0.0), mu), 0.0);
        assert_eq!(rate_multiplier(&runs, 0.0), None);
        assert_eq!(rate_multiplier(&runs, f64::NAN), None);
        assert_eq!(rate_multiplier(&[run(0, 1.0)], 10.0), None);
    }

    #[test]
    fn monkey_spends_the_budget_and_beats_uniform() {
        let levels = [10_000u64, 100_000, 1_000_000, 10_000_000];
        for kind in [FilterKind::Blocked512, FilterKind::Bloom] {
            let bits = monkey_allocation(kind, &levels, 10.0);
            let total: f64 = levels.iter().zip(&bits).map(|(&n, &b)| n as f64 * b).sum();
            let budget = 10.0 * levels.iter().sum::<u64>() as f64;
            assert!(total <= budget + 1e-6 && total > budget * 0.99, "{bits:?}");
            // Smaller levels get more bits per key.
            assert!(bits.windows(2).all(|w| w[0] >= w[1]), "{bits:?}");
            let monkey: f64 = bits.iter().map(|&b| best_fpr(kind, b)).sum();
            let uniform = 4.0 * best_fpr(kind, 10.0);
            assert!(monkey < uniform * 0.75, "{kind}: {monkey} vs {uniform}");
        }
    }
}
