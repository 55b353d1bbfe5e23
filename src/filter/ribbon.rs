//! A space-optimal static filter: a Standard Ribbon filter with 128-bit
//! coefficient rows (Dillinger & Walzer, "Ribbon filter: practically smaller
//! than Bloom and Xor", 2021; RocksDB's `Standard128Ribbon`), written from the
//! paper's description.
//!
//! About 24% of this file is its unit tests (the `tests` module at the end);
//! the rest is one filter: its banding, its back-substitution and its probes.
//!
//! Each key, through its 64-bit [`key_hash`](super::key_hash) and the
//! filter's seed, defines one linear equation over GF(2): a *start* slot `s`,
//! a 128-bit *coefficient row* `c` (bit 0 always set) and an `r`-bit
//! *result* `y`. The filter stores a solution `S` (one `r`-bit value per
//! slot) with `XOR_{k: c_k = 1} S[s + k] = y` for every key. A query
//! recomputes the equation of its key and answers "may contain" only if the
//! stored solution satisfies it, which an absent key does with probability
//! `2^-r`.
//!
//! * **Construction** (on-the-fly banding, then back-substitution): the keys
//!   are bucketed by start, in groups of 8 blocks (one counting-sort pass,
//!   so the banding walks the rows in memory order), and each equation is reduced against the pivot
//!   rows already stored until it finds an empty pivot slot (stored), becomes
//!   `0 = 0` (a duplicate key: skipped) or `0 = y ≠ 0` (failure). After a
//!   failure the whole build is retried with the next seed, and every
//!   [`RETRIES_PER_SIZE`] failures the slot count grows by 1/64; the seed
//!   that worked is stored in the filter. Filters of more than
//!   64 blocks band the keys from the last block down into
//!   a window of band rows that stays in cache, solving each block as soon
//!   as no later key can reach it (`band_windowed`); the solution is the
//!   one the whole band gives.
//! * **Layout**: slots come in blocks of 128; block `b` stores its columns
//!   as `u128` words, column-major within the block ("interleaved"), bit `i`
//!   of word `j` = bit `j` of `S[128·b + i]`. Blocks `0..upper_start` have
//!   `lower` columns, the others `lower + 1`: that is how a fractional
//!   number of result bits per key is spent. A query that starts in block
//!   `b` reads `b`'s columns from `b` and `b + 1` (which has at least as
//!   many).
//! * **FPR** (exact for uniform hashes): a query starting in a block with
//!   `r` columns is a false positive with probability `2^-r`, so the FPR is
//!   the mix of `2^-lower` and `2^-(lower+1)` weighted by the share of start
//!   positions in each kind of block ([`super::math::ribbon_fpr`]).
//!
//! An empty filter (0 keys) has no blocks and answers "absent" to every key;
//! a filter of 1 key is one block.

use std::sync::Arc;

use super::{FILTER_VERSION, FilterDecodeError, FilterKind, FilterTrailer, HASH_XXH3_64};

/// Slots per block, and the width of a coefficient row.
pub const RIBBON_WIDTH: usize = 128;
/// Most result columns (bits per slot) of any block: the FPR floor is
/// `2^-64`. The lower column count is at most `MAX_RIBBON_COLUMNS - 1`.
pub const MAX_RIBBON_COLUMNS: u32 = 64;
/// Length of the Ribbon header that ends the payload, before the trailer.
pub const RIBBON_HEADER_LEN: usize = 16;
/// Failed constructions with one slot count before the count grows.
pub const RETRIES_PER_SIZE: u32 = 4;

/// Multiplier of the seeded remix `a = (h ^ seed·G) · M0`.
const M0: u64 = 0xff51_afd7_ed55_8ccd;
/// Seed spreader.
const SEED_MUL: u64 = 0x9e37_79b9_7f4a_7c15;
/// Coefficient multipliers (low and high 64 bits of the row).
const M1: u64 = 0xc4ce_b9fe_1a85_ec53;
const M2: u64 = 0xd6e8_feb8_6659_fd93;
/// Result multiplier.
const M3: u64 = 0xa076_1d64_78bd_642f;

/// The seeded remix of a key hash; its high bits pick the start slot.
#[inline(always)]
fn remix(hash: u64, seed_xor: u64) -> u64 {
    (hash ^ seed_xor).wrapping_mul(M0)
}

#[inline(always)]
fn seed_xor(seed: u32) -> u64 {
    u64::from(seed).wrapping_mul(SEED_MUL)
}

/// Start slot in `0..num_starts` from the high bits of `a` (fastrange).
#[inline(always)]
fn start_of(a: u64, num_starts: u64) -> usize {
    ((u128::from(a) * u128::from(num_starts)) >> 64) as usize
}

/// The coefficient row (bit 0 set) and the result bits of remixed hash `a`.
/// The start uses `a`'s high bits; the row and result are products of `x`,
/// whose low bits mix all of `a`'s, so keys with nearby starts still get
/// unrelated rows. The result takes the (well-mixed) high bytes of its
/// product first.
#[inline(always)]
fn row_of(a: u64) -> (u128, u64) {
    let x = a ^ (a >> 32);
    let lo = x.wrapping_mul(M1) | 1;
    let hi = x.wrapping_mul(M2);
    let y = x.wrapping_mul(M3).swap_bytes();
    ((u128::from(hi) << 64) | u128::from(lo), y)
}

/// The space overhead ε: a filter of `n` keys starts with `n · (1 + ε) + 32`
/// slots (rounded up to whole blocks), and the FPR model assumes
/// `slots = keys · (1 + ε)`. Measured with seed 0 (docs/filters.md): at 10^6
/// keys 3% failed 14 of 20 key sets and 5% none; at 10^4 keys 2% failed 12
/// of 200 and 5% none. The 32 extra slots keep tiny filters (up to a few
/// hundred keys in one or two blocks) from failing. A real filter's bits
/// per key are [`Filter::bits_per_key`](super::Filter::bits_per_key).
pub const RIBBON_NOMINAL_OVERHEAD: f64 = 0.05;

/// Blocks of 128 slots a first construction attempt uses for `keys` keys:
/// `keys · (1 + ε) + 32` slots ([`RIBBON_NOMINAL_OVERHEAD`]), rounded up to
/// whole blocks; 0 for no keys.
pub fn blocks_for(keys: usize) -> usize {
    if keys == 0 {
        return 0;
    }
    let slots = keys as f64 * (1.0 + RIBBON_NOMINAL_OVERHEAD) + 32.0;
    ((slots / RIBBON_WIDTH as f64).ceil() as usize).max(1)
}

/// The result bits per key (average columns) of a Ribbon filter at
/// `bits_per_key` under the nominal overhead, at most
/// `MAX_RIBBON_COLUMNS - 1`.
pub fn result_bits_for(bits_per_key: f64) -> f64 {
    let bits = super::clamp_bits(bits_per_key);
    (bits / (1.0 + RIBBON_NOMINAL_OVERHEAD)).min(f64::from(MAX_RIBBON_COLUMNS - 1))
}

/// The result columns per slot of a filter of `blocks` blocks that holds
/// `budget_bits` of solution: the budget over the slots, at most `rho_max`
/// and at least one column fewer (at most twice the FPR). The floor binds
/// only for filters of a few hundred keys, whose extra 32 slots are a
/// large share of the slots; they spend more than the budget, a few
/// hundred bytes at most, rather than answer "maybe" to most keys.
fn rho_within(rho_max: f64, budget_bits: f64, blocks: usize) -> f64 {
    let slots = (blocks * RIBBON_WIDTH).max(1) as f64;
    let floor = (rho_max - 1.0).max(rho_max.min(1.0));
    (budget_bits / slots).clamp(floor, rho_max)
}

/// Number of start positions of a filter of `blocks` blocks: the last start
/// is the first slot of the last block, so every window of 128 slots lies
/// inside the filter.
#[inline]
fn starts_of(blocks: usize) -> u64 {
    if blocks == 0 {
        0
    } else {
        ((blocks - 1) * RIBBON_WIDTH + 1) as u64
    }
}

/// The shape of a filter: blocks, columns, where the wider blocks start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shape {
    blocks: usize,
    lower: u32,
    upper_start: usize,
}

impl Shape {
    /// Lower columns `r` and upper start so that the share of starts in
    /// upper blocks is as close as possible to the fraction of `rho`.
    fn new(blocks: usize, rho: f64) -> Shape {
        if blocks == 0 {
            return Shape {
                blocks: 0,
                lower: 0,
                upper_start: 0,
            };
        }
        let lower = rho.floor() as u32;
        let frac = rho - f64::from(lower);
        let starts = starts_of(blocks) as f64;
        // Starts in blocks >= u: (blocks - 1 - u) · 128 + 1 (u < blocks).
        let mut best = (blocks, f64::INFINITY);
        for u in [0.0, 1.0]
            .into_iter()
            .map(|d| ((starts * (1.0 - frac) / RIBBON_WIDTH as f64).floor() + d) as usize)
        {
            let u = u.min(blocks);
            let upper_starts = if u >= blocks {
                0.0
            } else {
                ((blocks - 1 - u) * RIBBON_WIDTH + 1) as f64
            };
            let err = (upper_starts / starts.max(1.0) - frac).abs();
            if err < best.1 {
                best = (u, err);
            }
        }
        Shape {
            blocks,
            lower,
            upper_start: best.0,
        }
    }

    fn words(&self) -> Option<usize> {
        let upper = self.blocks.checked_sub(self.upper_start)?;
        self.upper_start
            .checked_mul(self.lower as usize)?
            .checked_add(upper.checked_mul(self.lower as usize + 1)?)
    }

    /// First word and column count of block `b`.
    #[inline(always)]
    fn block(&self, b: usize) -> (usize, usize) {
        let lower = self.lower as usize;
        let extra = b.saturating_sub(self.upper_start);
        (
            b * lower + extra,
            lower + usize::from(b >= self.upper_start),
        )
    }

    /// The exact FPR: `2^-lower` or `2^-(lower+1)` by the share of starts.
    fn fpr(&self) -> f64 {
        if self.blocks == 0 {
            return 0.0;
        }
        let starts = starts_of(self.blocks) as f64;
        let upper_starts = if self.upper_start >= self.blocks {
            0.0
        } else {
            ((self.blocks - 1 - self.upper_start) * RIBBON_WIDTH + 1) as f64
        };
        let f = upper_starts / starts;
        let lo = 0.5f64.powi(self.lower as i32);
        lo * (1.0 - f) + lo * 0.5 * f
    }
}

/// An opened (or freshly built) Ribbon filter.
#[derive(Clone, Debug)]
pub struct RibbonFilter {
    /// The solution, block after block, then `lower + 1` zero words of
    /// padding (when there is a block) so that a query in the last block
    /// can read "the next block" without a bounds branch.
    words: Arc<[u128]>,
    shape: Shape,
    num_starts: u64,
    seed: u32,
    seed_xor: u64,
    key_count: u64,
}

/// Why one construction attempt failed.
struct BandingFailed;

/// Why banding stopped.
enum Stop {
    /// An equation reduced to `0 = y != 0`: the system has no solution.
    Failed,
    /// A pivot fell past the window of band rows in memory
    /// ([`band_windowed`]).
    Overflow,
}

/// Blocks of band rows the windowed construction keeps in memory (a power
/// of two, at least twice [`GROUP_BLOCKS`]): 64 blocks of 128 slots at 24
/// bytes a slot are 192 KiB, which stay in the L2 cache, where the whole
/// band of 10^6 keys is 25 MB.
const WINDOW_BLOCKS: usize = 64;
/// Blocks whose keys the windowed construction bands in one go.
const GROUP_BLOCKS: usize = 8;

/// Bands and solves the equations of `hashes` for `shape` and `seed`;
/// returns the solution words (unpadded).
///
/// Filters of more than [`WINDOW_BLOCKS`] blocks are built windowed
/// ([`band_windowed`]), and with the whole band only if a pivot falls
/// outside the window; the solution is the same either way (see
/// [`band_windowed`]).
fn try_build(hashes: &[u64], shape: &Shape, seed: u32) -> Result<Vec<u128>, BandingFailed> {
    try_build_in(hashes, shape, seed, Some(WINDOW_BLOCKS))
}

/// [`try_build`] with a window of `window` blocks ([`band_windowed`]), or
/// with the whole band if `None` (the tests compare the two).
fn try_build_in(
    hashes: &[u64],
    shape: &Shape,
    seed: u32,
    window: Option<usize>,
) -> Result<Vec<u128>, BandingFailed> {
    let blocks = shape.blocks;
    let num_starts = starts_of(blocks);
    let sx = seed_xor(seed);
    // Bucket the remixed hashes by group of GROUP_BLOCKS start blocks (a
    // counting sort), the unit the banding takes them in, so that it walks
    // memory in order. (By single block, the sort scatters into 8 times as
    // many write streams, and the build measured ~10% slower at 10^6
    // keys.) Afterwards `ends[g]` is the end of group g's keys in `sorted`.
    let group_of = |a: u64| start_of(a, num_starts) / (RIBBON_WIDTH * GROUP_BLOCKS);
    let mut ends = vec![0u32; blocks.div_ceil(GROUP_BLOCKS) + 1];
    for &h in hashes {
        ends[group_of(remix(h, sx)) + 1] += 1;
    }
    for b in 1..ends.len() {
        ends[b] += ends[b - 1];
    }
    let mut sorted = vec![0u64; hashes.len()];
    for &h in hashes {
        let a = remix(h, sx);
        let slot = &mut ends[group_of(a)];
        sorted[*slot as usize] = a;
        *slot += 1;
    }

    if let Some(window) = window.filter(|&w| blocks > w) {
        let mut solver = Solver::new(shape, seed);
        match band_windowed(&sorted, &ends, num_starts, window, &mut solver) {
            Ok(()) => return Ok(solver.words),
            Err(Stop::Failed) => return Err(BandingFailed),
            Err(Stop::Overflow) => {}
        }
    }
    drop(ends);
    // The whole band: one equation per slot, coefficients and results in
    // separate arrays (24 bytes a slot instead of a 32-byte padded pair).
    // Coefficients 0 = free slot.
    let slots = blocks * RIBBON_WIDTH;
    let mut coeffs = vec![0u128; slots];
    let mut results = vec![0u64; slots];
    if band::<false>(
        &mut coeffs,
        &mut results,
        0,
        usize::MAX,
        num_starts,
        &sorted,
    )
    .is_err()
    {
        return Err(BandingFailed);
    }
    drop(sorted);
    let mut solver = Solver::new(shape, seed);
    for b in (0..blocks).rev() {
        let range = b * RIBBON_WIDTH..(b + 1) * RIBBON_WIDTH;
        solver.solve_block(b, &coeffs[range.clone()], &results[range]);
    }
    Ok(solver.words)
}

/// Bands the keys of `sorted` (bucketed by group of [`GROUP_BLOCKS`] start
/// blocks, group `g` ending at `ends[g]`) a group at a time, from the last
/// group to the first, into a window of `window` blocks of band rows
/// (a power of two, at least `2 · GROUP_BLOCKS`; block `b` in window block
/// `b % window`); after each
/// group, the blocks that the next group's window no longer holds are
/// solved (`solver`, from the last block down, as the whole-band build
/// does) and their rows cleared for reuse. A pivot only moves up from its
/// key's start, so while the keys of blocks `lo..` are banded, the window
/// holds blocks `lo..lo + window` and every block above is final. A pivot
/// past the window stops it ([`Stop::Overflow`]): measured at 10^6 and
/// 10^7 keys, the farthest pivot was 33–42 blocks above its key's start
/// (this order bands each key into a band already filled above it),
/// against 56 blocks of room in a window of [`WINDOW_BLOCKS`].
///
/// Same solution as the whole band: the set of pivot slots of a banded
/// system does not depend on the order the equations are added in (it is
/// the set of leading positions of the system's row space), and neither
/// does the solution with given bits in the free slots; the free slots get
/// their bits in the same order (last block first).
fn band_windowed(
    sorted: &[u64],
    ends: &[u32],
    num_starts: u64,
    window: usize,
    solver: &mut Solver,
) -> Result<(), Stop> {
    debug_assert!(window.is_power_of_two() && window >= 2 * GROUP_BLOCKS);
    let blocks = solver.shape.blocks;
    let slots = window * RIBBON_WIDTH;
    let mut coeffs = vec![0u128; slots];
    let mut results = vec![0u64; slots];
    // Blocks >= `solved` are solved.
    let mut solved = blocks;
    for g in (0..blocks.div_ceil(GROUP_BLOCKS)).rev() {
        let lo = g * GROUP_BLOCKS;
        let begin = if g == 0 { 0 } else { ends[g - 1] as usize };
        let keys = &sorted[begin..ends[g] as usize];
        let limit = (lo + window) * RIBBON_WIDTH;
        band::<true>(
            &mut coeffs,
            &mut results,
            slots - 1,
            limit,
            num_starts,
            keys,
        )?;
        // The next group's window starts GROUP_BLOCKS lower.
        let keep = if lo == 0 {
            0
        } else {
            lo - GROUP_BLOCKS + window
        };
        while solved > keep {
            solved -= 1;
            let at = (solved % window) * RIBBON_WIDTH;
            let range = at..at + RIBBON_WIDTH;
            solver.solve_block(solved, &coeffs[range.clone()], &results[range.clone()]);
            // Free rows (coefficients 0) are the ones banding fills and
            // solving ignores the results of, so results need no clearing.
            coeffs[range].fill(0);
        }
    }
    Ok(())
}

/// Adds the equations of the remixed hashes `sorted` to the band: each is
/// reduced against the stored pivot rows until it finds a free pivot slot
/// (stored), becomes `0 = 0` (a duplicate hash: skipped) or `0 = y != 0`
/// ([`Stop::Failed`]). `WINDOWED`: slot `s` is row `s & mask` of the
/// arrays, and a pivot at `limit` or above stops the banding
/// ([`Stop::Overflow`]); else slot `s` is row `s`.
///
/// Not inlined: inlined into the construction (the bucketing loops around
/// it), the compiler kept a lane's slot and row words on the stack, a
/// store and a reload in every step's dependent chain; on its own, the two
/// lanes' state stays in registers (the build ~5–8% faster at 10^6 keys,
/// docs/filters.md).
#[inline(never)]
fn band<const WINDOWED: bool>(
    coeffs: &mut [u128],
    results: &mut [u64],
    mask: usize,
    limit: usize,
    num_starts: u64,
    sorted: &[u64],
) -> Result<(), Stop> {
    // Windowed, every row index `s & mask` is below `mask + 1`: cut the
    // arrays to that length, so that the compiler drops the bounds checks.
    let (coeffs, results) = if WINDOWED {
        (&mut coeffs[..=mask], &mut results[..=mask])
    } else {
        (coeffs, results)
    };
    // Two lanes, the first and the second half of the keys, banded in
    // turns: a reduction step is a chain of dependent operations (load the
    // stored row, xor, trailing zeros, next slot), and two independent
    // chains keep the CPU busier. Any interleaving of the steps is a valid
    // elimination order (each step sees the band as the other lane left
    // it), and the solution does not depend on the order.
    //
    // One step of an equation (slot, low and high coefficient words,
    // result): true once it is stored (or was a duplicate).
    macro_rules! step {
        ($s:ident, $lo:ident, $hi:ident, $y:ident) => {{
            if WINDOWED && $s >= limit {
                return Err(Stop::Overflow);
            }
            let at = if WINDOWED { $s & mask } else { $s };
            let existing = coeffs[at];
            // A stored row has bit 0 set: a zero low word is a free slot.
            if existing as u64 == 0 {
                coeffs[at] = (u128::from($hi) << 64) | u128::from($lo);
                results[at] = $y;
                true
            } else {
                // Both rows have bit 0 set, so the sum has it clear: shift
                // by the trailing zeros of the low word (almost always
                // nonzero; then 1 <= tz <= 63) with 64-bit operations.
                $lo ^= existing as u64;
                $hi ^= (existing >> 64) as u64;
                $y ^= results[at];
                if $lo != 0 {
                    let tz = $lo.trailing_zeros();
                    $lo = ($lo >> tz) | ($hi << (64 - tz));
                    $hi >>= tz;
                    $s += tz as usize;
                    false
                } else if $hi != 0 {
                    let tz = $hi.trailing_zeros();
                    $lo = $hi >> tz;
                    $hi = 0;
                    $s += 64 + tz as usize;
                    false
                } else if $y == 0 {
                    true // the same equation again (a duplicate hash)
                } else {
                    return Err(Stop::Failed);
                }
            }
        }};
    }
    let eq = |a: u64| {
        let (c, y) = row_of(a);
        (start_of(a, num_starts), c as u64, (c >> 64) as u64, y)
    };
    let n = sorted.len();
    let mid = n / 2;
    let (mut ia, mut ib) = (0, mid);
    let (mut sa, mut la, mut ha, mut ya) = eq(sorted.first().copied().unwrap_or(0));
    let (mut sb, mut lb, mut hb, mut yb) = eq(sorted.get(mid).copied().unwrap_or(0));
    if mid > 0 {
        loop {
            if step!(sa, la, ha, ya) {
                ia += 1;
                if ia == mid {
                    break;
                }
                (sa, la, ha, ya) = eq(sorted[ia]);
            }
            if step!(sb, lb, hb, yb) {
                ib += 1;
                if ib == n {
                    break;
                }
                (sb, lb, hb, yb) = eq(sorted[ib]);
            }
        }
    }
    // The lane that is not finished (or the one key of a 1-key filter).
    while ia < mid {
        if step!(sa, la, ha, ya) {
            ia += 1;
            if ia < mid {
                (sa, la, ha, ya) = eq(sorted[ia]);
            }
        }
    }
    while ib < n {
        if step!(sb, lb, hb, yb) {
            ib += 1;
            if ib < n {
                (sb, lb, hb, yb) = eq(sorted[ib]);
            }
        }
    }
    Ok(())
}

/// Back-substitution, block by block from the last, slot by slot from the
/// block's top, with a sliding window per column: bit k of `state[j]` is
/// column j of slot i + k. After a block's 128 slots the window is that
/// block's column. The columns are independent, so they are done in groups
/// ([`subst_groups`]); the results of a block's slots (free slots (no
/// pivot) get pseudo-random bits) are gathered once per block.
struct Solver<'a> {
    shape: &'a Shape,
    state: [(u64, u64); MAX_RIBBON_COLUMNS as usize],
    /// The solution (unpadded).
    words: Vec<u128>,
    filler: u64,
    ys: [u64; RIBBON_WIDTH],
}

impl<'a> Solver<'a> {
    fn new(shape: &'a Shape, seed: u32) -> Self {
        Solver {
            shape,
            state: [(0, 0); MAX_RIBBON_COLUMNS as usize],
            words: vec![0u128; shape.words().expect("shape fits in memory")],
            filler: u64::from(seed) ^ 0x5851_f42d_4c95_7f2d,
            ys: [0; RIBBON_WIDTH],
        }
    }

    /// Solves block `b` from its band rows (coefficients `cs`, results
    /// `rs`); blocks come from the last down.
    fn solve_block(&mut self, b: usize, cs: &[u128], rs: &[u64]) {
        let upper = self.shape.lower as usize + 1;
        for ((y, &c), &r) in self.ys.iter_mut().zip(cs).zip(rs).rev() {
            *y = r;
            if c == 0 {
                self.filler = self.filler.wrapping_mul(M0).wrapping_add(SEED_MUL);
                *y = self.filler ^ (self.filler >> 29);
            }
        }
        // Groups of 8 columns for up to 8, else of 16 (measured at 10^6
        // keys: 7 columns 7.2 ns/key in groups of 8 against 11.3 in groups
        // of 4; 11 columns 9.6 in groups of 16 against 13.0 and 16.2).
        if upper <= 8 {
            subst_groups::<8>(cs, &self.ys, &mut self.state[..8]);
        } else {
            subst_groups::<16>(cs, &self.ys, &mut self.state[..upper.next_multiple_of(16)]);
        }
        let (first, cols) = self.shape.block(b);
        for (w, &(lo, hi)) in self.words[first..first + cols]
            .iter_mut()
            .zip(self.state.iter())
        {
            *w = (u128::from(hi) << 64) | u128::from(lo);
        }
    }
}

/// Back-substitutes one block (coefficients `cs`, results `ys`) into the
/// column windows `state`, `G` columns at a time: a fixed-size group the
/// compiler keeps in registers and vectorizes, with the low and high 64
/// bits apart (no 128-bit shifts). Columns past the filter's are computed
/// and ignored.
#[inline(always)]
fn subst_groups<const G: usize>(cs: &[u128], ys: &[u64; RIBBON_WIDTH], state: &mut [(u64, u64)]) {
    for (q, group) in state.chunks_exact_mut(G).enumerate() {
        let mut st: [(u64, u64); G] = group.try_into().expect("G columns");
        let shift = (G * q) as u32;
        for (&c, &y) in cs.iter().zip(ys).rev() {
            let (clo, chi) = (c as u64, (c >> 64) as u64);
            let y = y >> shift;
            for (j, (lo, hi)) in st.iter_mut().enumerate() {
                let nhi = (*hi << 1) | (*lo >> 63);
                let nlo = *lo << 1;
                let bit = ((nlo & clo) ^ (nhi & chi)).count_ones() as u64 ^ (y >> j);
                *lo = nlo | (bit & 1);
                *hi = nhi;
            }
        }
        group.copy_from_slice(&st);
    }
}

impl RibbonFilter {
    /// Builds the filter in memory from key hashes at `bits_per_key`
    /// (clamped as [`FilterPolicy::new`](super::FilterPolicy::new) clamps
    /// it). Duplicate hashes are harmless. Never fails: a seed whose banding
    /// fails is replaced by the next one, and the slot count grows after
    /// every [`RETRIES_PER_SIZE`] failures.
    ///
    /// The solution holds `bits_per_key · keys` bits (within one block's
    /// rounding), whatever the slot count: the result columns are that
    /// budget spread over the slots, at most [`result_bits_for`] and at
    /// least one column fewer. So a filter of a few thousand keys, whose slot
    /// count the block rounding and the 32 extra slots raise by a few per
    /// cent, answers at a slightly higher FPR instead of spending more
    /// than its name says (a store of many such filters, e.g. 4 KiB
    /// partitions, would otherwise spend 2% over it).
    pub fn from_hashes(hashes: &[u64], bits_per_key: f64) -> Self {
        let budget = super::clamp_bits(bits_per_key) * hashes.len() as f64;
        Self::build_from(
            hashes,
            result_bits_for(bits_per_key),
            budget,
            blocks_for(hashes.len()),
        )
    }

    /// [`Self::from_hashes`] starting at `blocks` blocks, with `rho_max`
    /// result columns per slot at most and `budget_bits` of solution.
    fn build_from(hashes: &[u64], rho_max: f64, budget_bits: f64, mut blocks: usize) -> Self {
        let mut seed = 0u32;
        loop {
            let shape = Shape::new(blocks, rho_within(rho_max, budget_bits, blocks));
            if let Ok(words) = try_build(hashes, &shape, seed) {
                return Self::new(words, shape, seed, hashes.len() as u64);
            }
            seed = seed.wrapping_add(1);
            if seed.is_multiple_of(RETRIES_PER_SIZE) {
                blocks += blocks.div_ceil(64);
            }
        }
    }

    fn new(mut words: Vec<u128>, shape: Shape, seed: u32, key_count: u64) -> Self {
        if shape.blocks > 0 {
            words.resize(words.len() + shape.lower as usize + 1, 0);
        }
        RibbonFilter {
            words: words.into(),
            shape,
            num_starts: starts_of(shape.blocks),
            seed,
            seed_xor: seed_xor(seed),
            key_count,
        }
    }

    /// Appends the serialized form to `out`: the solution words (16 bytes
    /// each, little-endian), the 16-byte Ribbon header (upper start block,
    /// seed, lower columns, three zero bytes), then the trailer (`units` =
    /// blocks, `k` = 1). See docs/format.md §7.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        let n = self.solution_words();
        out.reserve(n * 16 + RIBBON_HEADER_LEN + super::FILTER_TRAILER_LEN);
        for w in &self.words[..n] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&(self.shape.upper_start as u64).to_le_bytes());
        out.extend_from_slice(&self.seed.to_le_bytes());
        out.extend_from_slice(&[self.shape.lower as u8, 0, 0, 0]);
        FilterTrailer {
            units: self.shape.blocks as u64,
            key_count: self.key_count,
            num_probes: 1,
            hash: HASH_XXH3_64,
            version: FILTER_VERSION,
            kind: FilterKind::Ribbon.byte(),
        }
        .encode_to(out);
    }

    /// Rebuilds the in-memory filter from a payload and its decoded trailer.
    /// Checks every field: `k` = 1, the header's reserved bytes zero, lower
    /// columns below [`MAX_RIBBON_COLUMNS`], the upper start within the
    /// blocks, an empty filter all zero (no keys, columns or seed), and the
    /// payload length exactly the solution's words plus the header. (The key
    /// count may exceed the slots: duplicate hashes count.)
    pub(crate) fn from_parts(payload: &[u8], t: &FilterTrailer) -> Result<Self, FilterDecodeError> {
        let err = |what: String| Err(FilterDecodeError(format!("ribbon filter: {what}")));
        if t.num_probes != 1 {
            return err(format!("stores k = {}, must be 1", t.num_probes));
        }
        let Some(body_len) = payload.len().checked_sub(RIBBON_HEADER_LEN) else {
            return err(format!(
                "payload of {} bytes is shorter than its {RIBBON_HEADER_LEN}-byte header",
                payload.len()
            ));
        };
        let (body, header) = payload.split_at(body_len);
        let upper_start = u64::from_le_bytes(header[0..8].try_into().expect("8 bytes"));
        let seed = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
        let lower = header[12];
        if header[13..16] != [0, 0, 0] {
            return err(format!(
                "reserved header bytes {:?} are not zero",
                &header[13..16]
            ));
        }
        if u32::from(lower) >= MAX_RIBBON_COLUMNS {
            return err(format!(
                "{lower} lower columns (at most {})",
                MAX_RIBBON_COLUMNS - 1
            ));
        }
        // Blocks beyond what this address space could hold are corrupt.
        let max_blocks = (isize::MAX as u64) / (RIBBON_WIDTH as u64 * 16);
        if t.units > max_blocks || upper_start > t.units {
            return err(format!(
                "{} blocks with upper columns from block {upper_start}",
                t.units
            ));
        }
        let shape = Shape {
            blocks: t.units as usize,
            lower: u32::from(lower),
            upper_start: upper_start as usize,
        };
        if t.units == 0 && (t.key_count != 0 || upper_start != 0 || lower != 0 || seed != 0) {
            return err(format!(
                "empty filter with {} keys, upper start {upper_start}, {lower} columns, seed {seed}",
                t.key_count
            ));
        }
        let words = shape.words();
        if words.and_then(|w| w.checked_mul(16)) != Some(body.len()) {
            return err(format!(
                "{} blocks of {lower}/{} columns (upper from block {upper_start}) \
                 need {} bytes, payload has {}",
                t.units,
                lower + 1,
                words.map_or("too many".to_string(), |w| (w * 16).to_string()),
                body.len()
            ));
        }
        let words: Vec<u128> = body
            .chunks_exact(16)
            .map(|b| u128::from_le_bytes(b.try_into().expect("16-byte chunk")))
            .collect();
        Ok(Self::new(words, shape, seed, t.key_count))
    }

    /// False only if `hash` was certainly not added.
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        if self.num_starts == 0 {
            return false;
        }
        let a = remix(hash, self.seed_xor);
        let start = start_of(a, self.num_starts);
        self.check(a, start)
    }

    /// Starts loading the first word of `hash`'s window and the same column
    /// of the next block.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        if self.num_starts == 0 {
            return;
        }
        let s = start_of(remix(hash, self.seed_xor), self.num_starts);
        let (first, cols) = self.shape.block(s / RIBBON_WIDTH);
        super::prefetch_read(&self.words[first]);
        super::prefetch_read(&self.words[first + cols]);
    }

    #[inline(always)]
    fn check(&self, a: u64, start: usize) -> bool {
        let (first, cols) = self.shape.block(start / RIBBON_WIDTH);
        let o = (start % RIBBON_WIDTH) as u32;
        let (c, y) = row_of(a);
        // The row's part in this block, and in the next one (none if o = 0).
        let here = c << o;
        let next = (c >> 1) >> (127 - o);
        let (cur, nxt) = self.words[first..first + 2 * cols].split_at(cols);
        // The first two columns without a branch between them, then column
        // by column, stopping at the first that disagrees. (Branch-free
        // prefixes of 1, 2, 3, 4, 6 and 8 columns measured 26.6, 21.4,
        // 22.4, 22.5, 24.2 and 26.1 ns at 1%, 10^6 keys: one branch after
        // two columns (an absent key passes them with probability 1/4)
        // beats a branch per column and more work for every key.)
        let (hl, hh) = (here as u64, (here >> 64) as u64);
        let (nl, nh) = (next as u64, (next >> 64) as u64);
        // Scalar and-xor-popcount on 64-bit halves.
        let par = |w: u128, v: u128| {
            let x = (w as u64 & hl) ^ ((w >> 64) as u64 & hh) ^ (v as u64 & nl);
            u64::from((x ^ ((v >> 64) as u64 & nh)).count_ones())
        };
        let mut k = 0;
        if cols >= 2 {
            let miss = (par(cur[0], nxt[0]) ^ y) | (par(cur[1], nxt[1]) ^ (y >> 1));
            if miss & 1 != 0 {
                return false;
            }
            k = 2;
        }
        // An index loop: `enumerate().skip(k)` compiled to an out-of-line
        // `nth` call on this path.
        for j in k..cols {
            if (par(cur[j], nxt[j]) ^ (y >> j)) & 1 != 0 {
                return false;
            }
        }
        true
    }

    /// Probes many hashes; `out[i]` receives `may_contain(hashes[i])`. In
    /// groups of [`BATCH_GROUP`](super::BATCH_GROUP): the first word of each
    /// key's window (and the same column of the next block) is prefetched
    /// for the whole group before any key is tested.
    ///
    /// # Panics
    /// If `hashes` and `out` differ in length.
    pub fn may_contain_batch(&self, hashes: &[u64], out: &mut [bool]) {
        assert_eq!(hashes.len(), out.len(), "one output per hash");
        if self.num_starts == 0 {
            out.fill(false);
            return;
        }
        const G: usize = super::BATCH_GROUP;
        let mut starts = [0usize; G];
        let mut remixed = [0u64; G];
        for (hs, os) in hashes.chunks(G).zip(out.chunks_mut(G)) {
            for ((&h, a), s) in hs.iter().zip(&mut remixed).zip(&mut starts) {
                *a = remix(h, self.seed_xor);
                *s = start_of(*a, self.num_starts);
                let (first, cols) = self.shape.block(*s / RIBBON_WIDTH);
                super::prefetch_read(&self.words[first]);
                super::prefetch_read(&self.words[first + cols]);
            }
            for ((o, &a), &s) in os.iter_mut().zip(&remixed).zip(&starts) {
                *o = self.check(a, s);
            }
        }
    }

    /// Number of 128-slot blocks.
    pub fn num_blocks(&self) -> usize {
        self.shape.blocks
    }

    /// Columns of the narrower blocks (the wider ones have one more).
    pub fn lower_columns(&self) -> u32 {
        self.shape.lower
    }

    /// First block with `lower_columns() + 1` columns (`num_blocks()` if none).
    pub fn upper_start_block(&self) -> usize {
        self.shape.upper_start
    }

    /// The seed the construction succeeded with (0 unless banding failed).
    pub fn seed(&self) -> u32 {
        self.seed
    }

    /// Keys (hashes) the filter was built from.
    pub fn key_count(&self) -> u64 {
        self.key_count
    }

    fn solution_words(&self) -> usize {
        self.shape.words().expect("checked when made")
    }

    /// Bytes of solution in memory (without the padding).
    pub fn memory_bytes(&self) -> usize {
        self.solution_words() * 16
    }

    /// The exact FPR of this filter's shape: `2^-lower` and `2^-(lower+1)`
    /// weighted by the share of start positions in each kind of block; 0.0
    /// when empty.
    pub fn predicted_fpr(&self) -> f64 {
        self.shape.fpr()
    }
}

/// Builds the serialized Ribbon filter over `hashes` at `bits_per_key`.
pub fn build(hashes: &[u64], bits_per_key: f64) -> Vec<u8> {
    let mut out = Vec::new();
    RibbonFilter::from_hashes(hashes, bits_per_key).encode_to(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_vectors::fixed_hashes;
    use crate::filter::{Filter, FilterPolicy};

    fn open(bytes: &[u8]) -> RibbonFilter {
        match Filter::open(bytes).unwrap() {
            Filter::Ribbon(f) => f,
            other => panic!("not a ribbon filter: {other:?}"),
        }
    }

    #[test]
    fn roundtrip_members_and_batch() {
        let keys = fixed_hashes(1, 20_000);
        let absent = fixed_hashes(2, 50_000);
        for bits in [0.5, 1.0, 3.3, 7.056, 10.0, 10.475, 20.0, 66.2, 100.0] {
            let bytes = FilterPolicy::ribbon(bits).build(&keys).unwrap();
            let f = open(&bytes);
            assert_eq!(f.key_count(), 20_000);
            assert!(keys.iter().all(|&h| f.may_contain(h)), "{bits}");
            let mut out = vec![false; absent.len()];
            f.may_contain_batch(&absent, &mut out);
            let single: Vec<bool> = absent.iter().map(|&h| f.may_contain(h)).collect();
            assert_eq!(out, single, "{bits}");
            // Re-encoding gives the same bytes.
            let mut again = Vec::new();
            f.encode_to(&mut again);
            assert_eq!(again, bytes);
            // Bits per key within the block rounding and overhead.
            let bpk = f.memory_bytes() as f64 * 8.0 / 20_000.0;
            let want = result_bits_for(bits) * (1.0 + RIBBON_NOMINAL_OVERHEAD);
            assert!((bpk - want).abs() / want < 0.03, "{bits}: {bpk} vs {want}");
            let fp = single.iter().filter(|&&b| b).count() as f64 / absent.len() as f64;
            let model = f.predicted_fpr();
            assert!(
                fp <= model * 1.3 + 3e-4 && fp >= model * 0.7 - 3e-4,
                "{bits}: {fp} {model}"
            );
        }
    }

    /// A filter spends its name's bits per key whatever its key count: the
    /// block rounding and the extra slots lower the result columns, not
    /// raise the memory.
    #[test]
    fn memory_is_the_named_bits_per_key() {
        for n in [4_000usize, 4_681, 9_000, 20_000, 100_000] {
            let keys = fixed_hashes(21, n);
            for bits in [7.0, 10.0, 16.0] {
                let f = open(&FilterPolicy::ribbon(bits).build(&keys).unwrap());
                let bpk = f.memory_bytes() as f64 * 8.0 / n as f64;
                // Within half a block's columns (64 slots) of the budget.
                let slack = 64.0 * (bits + 1.0) / n as f64;
                assert!((bpk - bits).abs() <= slack, "{n} keys at {bits}: {bpk}");
                assert!(keys.iter().all(|&h| f.may_contain(h)));
            }
        }
    }

    #[test]
    fn empty_one_and_duplicates() {
        let empty = Filter::open(&FilterPolicy::ribbon(7.0).build(&[]).unwrap()).unwrap();
        assert!(empty.is_usable());
        assert_eq!(empty.memory_bytes(), 0);
        assert_eq!(empty.predicted_fpr(), 0.0);
        assert!(fixed_hashes(3, 1000).iter().all(|&h| !empty.may_contain(h)));
        let mut out = [true; 3];
        empty.may_contain_batch(&[1, 2, 3], &mut out);
        assert_eq!(out, [false; 3]);
        // 16 bytes of header, 20 of trailer.
        assert_eq!(FilterPolicy::ribbon(7.0).build(&[]).unwrap().len(), 36);

        let one = open(&FilterPolicy::ribbon(7.0).build(&[42]).unwrap());
        assert!(one.may_contain(42));
        assert_eq!(one.num_blocks(), 1);
        let fp = fixed_hashes(4, 100_000)
            .iter()
            .filter(|&&h| one.may_contain(h))
            .count();
        assert!(fp < 2_000, "{fp}");

        let dup: Vec<u64> = fixed_hashes(5, 500)
            .into_iter()
            .cycle()
            .take(5_000)
            .collect();
        let f = open(&FilterPolicy::ribbon(7.0).build(&dup).unwrap());
        assert_eq!(f.key_count(), 5_000);
        assert!(dup.iter().all(|&h| f.may_contain(h)));
    }

    #[test]
    fn failed_banding_retries_with_new_seeds_and_grows() {
        // 250 equations cannot fit 128 slots: one block fails every time.
        let keys = fixed_hashes(6, 250);
        assert!(try_build(&keys, &Shape::new(1, 7.0), 0).is_err());
        let f = RibbonFilter::build_from(&keys, 7.0, f64::INFINITY, 1);
        assert!(f.seed() >= RETRIES_PER_SIZE, "seed {}", f.seed());
        assert!(f.num_blocks() >= 2);
        assert!(keys.iter().all(|&h| f.may_contain(h)));
        let mut bytes = Vec::new();
        f.encode_to(&mut bytes);
        let g = open(&bytes);
        assert_eq!(g.seed(), f.seed());
        assert!(keys.iter().all(|&h| g.may_contain(h)));
        // A different seed answers differently (the seed is used).
        let mut other = bytes.clone();
        let at = bytes.len() - crate::filter::FILTER_TRAILER_LEN - 8;
        other[at] ^= 1;
        let h = open(&other);
        assert!(keys.iter().any(|&k| !h.may_contain(k)));
    }

    #[test]
    fn every_byte_flip_and_cut_is_safe() {
        let keys = fixed_hashes(7, 300);
        let good = FilterPolicy::ribbon(7.5).build(&keys).unwrap();
        let probes = fixed_hashes(8, 64);
        let body = good.len() - RIBBON_HEADER_LEN - crate::filter::FILTER_TRAILER_LEN;
        for at in 0..good.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[at] ^= x;
                let opened = Filter::open(&bad);
                if at >= body {
                    // Header and trailer bytes: every flip is caught, except
                    // the seed's (a valid seed) and key count's.
                    let seed_or_count = (body + 8..body + 12).contains(&at)
                        || (good.len() - 12..good.len() - 4).contains(&at);
                    if !seed_or_count {
                        assert!(
                            !matches!(opened, Ok(Filter::Ribbon(_))),
                            "flip {x:#x} at {at} opened"
                        );
                    }
                }
                if let Ok(f) = opened {
                    let mut out = vec![false; probes.len()];
                    f.may_contain_batch(&probes, &mut out);
                    for (&h, &o) in probes.iter().zip(&out) {
                        assert_eq!(f.may_contain(h), o);
                    }
                    let _ = f.predicted_fpr();
                }
            }
        }
        for len in 0..good.len() {
            if let Ok(f) = Filter::open(&good[..len]) {
                assert!(!matches!(f, Filter::Ribbon(_)), "cut at {len} opened");
            }
        }
    }

    #[test]
    fn header_fields_are_validated() {
        let keys = fixed_hashes(9, 1000);
        let good = FilterPolicy::ribbon(7.5).build(&keys).unwrap();
        let n = good.len();
        let t = n - crate::filter::FILTER_TRAILER_LEN;
        let h = t - RIBBON_HEADER_LEN;
        let set = |at: usize, v: u8| {
            let mut b = good.clone();
            b[at] = v;
            Filter::open(&b)
        };
        assert!(set(n - 4, 2).is_err(), "k = 2");
        assert!(set(h + 12, 64).is_err(), "64 lower columns");
        assert!(set(h + 12, 200).is_err());
        assert!(set(h + 13, 1).is_err(), "reserved byte");
        assert!(set(h + 7, 1).is_err(), "upper start past the blocks");
        assert!(set(t + 7, 1).is_err(), "huge block count");
        assert!(set(t, good[t] ^ 1).is_err(), "block count");
        // An empty filter must say so everywhere.
        let empty = FilterPolicy::ribbon(7.5).build(&[]).unwrap();
        let mut e = empty.clone();
        e[8] = 1; // seed
        assert!(Filter::open(&e).is_err());
        let mut e = empty.clone();
        e[16 + 8] = 1; // key count
        assert!(Filter::open(&e).is_err());
    }

    /// The encoding is pinned: a digest (XXH3-64 of the bytes) of filters
    /// built from fixed hashes, including one whose banding had to retry.
    /// A change here is a format change: bump the Ribbon trailer version.
    /// The windowed construction gives the whole band's solution: filters
    /// of 6 to 45 windows, a duplicate-heavy set, and a window so small
    /// that pivots overflow it (then the build falls back to the whole
    /// band).
    #[test]
    fn windowed_build_matches_whole_band() {
        let mut dups = fixed_hashes(21, 30_000);
        dups.extend_from_within(..10_000);
        let cases = [
            (fixed_hashes(17, 50_000), 7.057),
            (fixed_hashes(18, 60_000), 10.475),
            (fixed_hashes(19, 350_000), 4.0),
            (fixed_hashes(20, 40_000), 20.0),
            (dups, 7.0),
        ];
        for (keys, bits) in &cases {
            let shape = Shape::new(blocks_for(keys.len()), result_bits_for(*bits));
            assert!(shape.blocks > 4 * WINDOW_BLOCKS);
            let whole = try_build_in(keys, &shape, 0, None)
                .ok()
                .expect("seed 0 works");
            let windowed = try_build_in(keys, &shape, 0, Some(WINDOW_BLOCKS)).ok();
            assert!(
                windowed == Some(whole.clone()),
                "{} keys, {bits} bits/key",
                keys.len()
            );
            let tiny = try_build_in(keys, &shape, 0, Some(2 * GROUP_BLOCKS)).ok();
            assert!(tiny == Some(whole), "{} keys, tiny window", keys.len());
        }
        // The tiny window does overflow on these keys, so the fallback ran.
        let (keys, bits) = &cases[0];
        let shape = Shape::new(blocks_for(keys.len()), result_bits_for(*bits));
        let num_starts = starts_of(shape.blocks);
        let sx = seed_xor(0);
        let mut sorted: Vec<u64> = keys.iter().map(|&h| remix(h, sx)).collect();
        let group_of = |a: u64| start_of(a, num_starts) / (RIBBON_WIDTH * GROUP_BLOCKS);
        sorted.sort_unstable_by_key(|&a| group_of(a));
        let mut ends = vec![0u32; shape.blocks.div_ceil(GROUP_BLOCKS)];
        for &a in &sorted {
            ends[group_of(a)] += 1;
        }
        for b in 1..ends.len() {
            ends[b] += ends[b - 1];
        }
        let mut solver = Solver::new(&shape, 0);
        let got = band_windowed(&sorted, &ends, num_starts, 2 * GROUP_BLOCKS, &mut solver);
        assert!(matches!(got, Err(Stop::Overflow)));
        let mut solver = Solver::new(&shape, 0);
        let got = band_windowed(&sorted, &ends, num_starts, WINDOW_BLOCKS, &mut solver);
        assert!(got.is_ok());
    }

    #[test]
    fn encoding_is_pinned() {
        let digest = |keys: &[u64], bits: f64| {
            let bytes = FilterPolicy::ribbon(bits).build(keys).unwrap();
            (bytes.len(), crate::filter::key_hash(&bytes))
        };
        let got = [
            digest(&fixed_hashes(11, 1), 7.0),
            digest(&fixed_hashes(11, 1000), 7.057),
            digest(&fixed_hashes(12, 3000), 10.475),
            digest(&fixed_hashes(13, 5000), 20.0),
            // Built windowed (more than WINDOW_BLOCKS blocks).
            digest(&fixed_hashes(14, 20_000), 7.057),
            digest(&fixed_hashes(15, 200_000), 10.475),
        ];
        let mut retried = Vec::new();
        RibbonFilter::build_from(&fixed_hashes(6, 250), 7.0, f64::INFINITY, 1)
            .encode_to(&mut retried);
        let retried = (retried.len(), crate::filter::key_hash(&retried));
        assert_eq!(
            got,
            [
                (0x84, 0xd63a_3d27_ec9e_5b5b),
                (0x3a4, 0x9081_a307_5c5d_b943),
                (0xf84, 0x0b74_ea32_cee1_ea72),
                (0x3104, 0xbc6b_ef1e_e8d5_1bbd),
                (0x4514, 0x2b5f_03f2_b94f_bedb),
                (0x3ff14, 0x9ae4_c1c2_503d_a90f),
            ]
        );
        assert_eq!(retried, (0x104, 0x6e9d_d74e_2e5f_298a));
    }

    #[test]
    fn shape_mixes_columns_by_starts() {
        for (blocks, rho) in [(1, 6.5), (2, 6.5), (100, 6.0), (100, 6.25), (8204, 9.9)] {
            let s = Shape::new(blocks, rho);
            let want = crate::filter::math::ribbon_fpr_of_columns(rho);
            let rel = (s.fpr() - want).abs() / want;
            let tol = if blocks < 10 { 0.35 } else { 0.01 };
            assert!(rel <= tol, "{blocks} {rho}: {} vs {want}", s.fpr());
            assert!(s.upper_start <= blocks);
        }
    }
}
