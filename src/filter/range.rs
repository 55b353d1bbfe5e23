//! The Grafite range filter (Costa, Ferragina, Vinciguerra, SIGMOD 2024):
//! answers "may a key lie in `lo..=hi`?" for one file, with a false positive
//! rate at most `L / 2^(B−2)` for a range of `L` points at `B` bits per key,
//! whatever the keys and whatever the queries.
//!
//! Keys are points of a 64-bit space ([`key_point`]: a key's first eight
//! bytes, big-endian, so the order of points follows the order of keys).
//! Each point `x` is hashed into a reduced universe of `r = n · 2^(B−2)`
//! cells by `h(x) = (q(⌊x / r⌋) + x) mod r`, where `q` is a random affine
//! map modulo the prime 2^61 − 1: inside one block of `r` consecutive points
//! the hash is a rotation, so a range of points maps onto a range of cells
//! (wrapping at most once), and two points of different blocks collide with
//! probability `1/r`. The sorted hashes are stored Elias–Fano coded
//! ([`super::elias_fano`]), `log2(r/n) + 2 = B` bits per key; a query is one
//! or two successor searches. A range of `L` cells holds none of the `n`
//! hashes of other blocks but with probability at most `L · n / r`, which is
//! the bound above: unlike a trie (SuRF) or a prefix-Bloom stack (Rosetta),
//! it holds for ranges just past existing keys too, the correlated queries
//! of a scan that resumes where data ends.

use super::FilterDecodeError;
use super::elias_fano::EliasFano;

/// The prime modulus of Grafite's block hash.
const PRIME: u64 = (1 << 61) - 1;

/// The version byte that begins an encoded [`RangeFilter`].
pub const RANGE_FILTER_VERSION: u8 = 1;

/// The fewest bits per key a range filter takes: at 2, the reduced universe
/// has one cell per key and every range may hold a key.
pub const MIN_RANGE_BITS_PER_KEY: f64 = 2.0;
/// The most bits per key a range filter takes: past this the reduced
/// universe would pass 2^63 cells for a single key.
pub const MAX_RANGE_BITS_PER_KEY: f64 = 64.0;

/// Bytes of an encoded filter before its Elias–Fano sequence: the version
/// byte, then the point count, the reduced universe and the hash's two
/// coefficients.
const HEADER_LEN: usize = 1 + 8 * 4;

/// The point of `key` in the 64-bit space a range filter covers: its first
/// eight bytes, big-endian, zero-padded. Keys in order have points in
/// order, so every key of a key range `start..=end` has its point in
/// `key_point(start)..=key_point(end)`.
pub fn key_point(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

/// One file's Grafite range filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeFilter {
    /// Points the filter was built from (duplicates included).
    points: u64,
    /// `r`: cells of the reduced universe.
    reduced: u64,
    /// The block hash `q(i) = (a·i + b) mod PRIME`.
    a: u64,
    b: u64,
    hashes: EliasFano,
}

impl RangeFilter {
    /// Builds the filter of `points` (in any order) at `bits_per_key`
    /// (clamped to [`MIN_RANGE_BITS_PER_KEY`]..=[`MAX_RANGE_BITS_PER_KEY`]),
    /// its hash drawn from `seed`.
    pub fn build(points: &[u64], bits_per_key: f64, seed: u64) -> RangeFilter {
        let n = points.len() as u64;
        let reduced = reduced_universe_for(n, bits_per_key);
        let a = 1 + crate::workload::mix64(seed) % (PRIME - 1);
        let b = crate::workload::mix64(seed ^ 0x9e37_79b9_7f4a_7c15) % PRIME;
        let mut h: Vec<u64> = points
            .iter()
            .map(|&x| block_hash(a, b, reduced, x))
            .collect();
        h.sort_unstable();
        RangeFilter {
            points: n,
            reduced,
            a,
            b,
            hashes: EliasFano::new(&h, reduced).expect("hashes are below the reduced universe"),
        }
    }

    fn hash(&self, x: u64) -> u64 {
        block_hash(self.a, self.b, self.reduced, x)
    }

    /// Whether some key's point may lie in `lo..=hi` (`false` is certain;
    /// an empty range, `lo > hi`, is `false`).
    pub fn may_contain_range(&self, lo: u64, hi: u64) -> bool {
        if self.points == 0 || lo > hi {
            return false;
        }
        if hi - lo >= self.reduced - 1 {
            return true;
        }
        let r = self.reduced;
        if lo / r == hi / r {
            return self.cyclic(self.hash(lo), self.hash(hi));
        }
        // Shorter than a block, the range spans the end of one and the start
        // of the next: each part is a rotation of its own.
        let boundary = (lo / r + 1) * r; // ≤ hi, so no overflow
        self.cyclic(self.hash(lo), self.hash(boundary - 1))
            || self.cyclic(self.hash(boundary), self.hash(hi))
    }

    /// Whether some key's point may be `x`.
    pub fn may_contain_point(&self, x: u64) -> bool {
        self.may_contain_range(x, x)
    }

    /// Whether a hash lies in the cells from `from` to `to`, wrapping past
    /// the last cell when `from > to`.
    fn cyclic(&self, from: u64, to: u64) -> bool {
        if from <= to {
            self.hashes.any_in(from, to)
        } else {
            self.hashes.any_in(from, self.reduced - 1) || self.hashes.any_in(0, to)
        }
    }

    /// The points the filter was built from.
    pub fn points(&self) -> u64 {
        self.points
    }

    /// Cells of the reduced universe.
    pub fn reduced_universe(&self) -> u64 {
        self.reduced
    }

    /// Whether the filter is the one [`Self::build`] makes of its points at
    /// `bits_per_key`: its reduced universe is the one those bits give.
    pub fn built_at(&self, bits_per_key: f64) -> bool {
        self.reduced == reduced_universe_for(self.points, bits_per_key)
    }

    /// Bits per key of the encoded filter.
    pub fn bits_per_key(&self) -> f64 {
        (HEADER_LEN + self.hashes.coded_bytes() + 16) as f64 * 8.0 / self.points.max(1) as f64
    }

    /// Bytes held in memory.
    pub fn memory_bytes(&self) -> usize {
        HEADER_LEN + self.hashes.memory_bytes()
    }

    /// The model's false positive rate for an empty range of `len` points:
    /// `len · n / r` (the probability bound of the paper's Theorem), at
    /// most 1.
    pub fn predicted_fpr(&self, len: u64) -> f64 {
        predicted_range_fpr(len, self.points, self.reduced)
    }

    /// The encoded filter: the version byte, then the point count, the
    /// reduced universe and the coefficients `a` and `b` as u64 little-endian,
    /// then the Elias–Fano sequence of the sorted hashes ([`EliasFano::encode`]).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + 16 + self.hashes.coded_bytes());
        out.push(RANGE_FILTER_VERSION);
        for v in [self.points, self.reduced, self.a, self.b] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        self.hashes.encode(&mut out);
        out
    }

    /// Decodes what [`Self::encode`] wrote; every field is checked, so
    /// damaged bytes are an error, never a filter that answers wrongly
    /// about the keys it claims.
    pub fn decode(bytes: &[u8]) -> Result<RangeFilter, FilterDecodeError> {
        let err = |what: &str| FilterDecodeError(format!("range filter: {what}"));
        if bytes.len() < HEADER_LEN {
            return Err(err("shorter than its header"));
        }
        if bytes[0] != RANGE_FILTER_VERSION {
            return Err(err(&format!("unknown version {}", bytes[0])));
        }
        let word =
            |i: usize| u64::from_le_bytes(bytes[1 + 8 * i..9 + 8 * i].try_into().expect("8 bytes"));
        let (points, reduced, a, b) = (word(0), word(1), word(2), word(3));
        if reduced == 0 || reduced > 1 << 63 {
            return Err(err("reduced universe out of range"));
        }
        if a == 0 || a >= PRIME || b >= PRIME {
            return Err(err("hash coefficients out of range"));
        }
        let hashes = EliasFano::decode(&bytes[HEADER_LEN..]).map_err(|m| err(m.0))?;
        if hashes.len() != points || hashes.universe() != reduced {
            return Err(err("its hashes do not match its header"));
        }
        Ok(RangeFilter {
            points,
            reduced,
            a,
            b,
            hashes,
        })
    }
}

/// `r = ⌈n · 2^(B−2)⌉` cells (at least one, at most 2^63) for `n` points
/// at `B` bits per key (clamped to [`MIN_RANGE_BITS_PER_KEY`]..=
/// [`MAX_RANGE_BITS_PER_KEY`]; NaN reads as the least).
fn reduced_universe_for(n: u64, bits_per_key: f64) -> u64 {
    let bits = if bits_per_key.is_nan() {
        MIN_RANGE_BITS_PER_KEY
    } else {
        bits_per_key.clamp(MIN_RANGE_BITS_PER_KEY, MAX_RANGE_BITS_PER_KEY)
    };
    let cells = (n.max(1) as f64 * (bits - 2.0).exp2()).ceil();
    if cells >= (1u64 << 63) as f64 {
        1 << 63
    } else {
        (cells as u64).max(1)
    }
}

/// `h(x) = (q(⌊x/r⌋) + x) mod r` with `q(i) = (a·i + b) mod PRIME`.
fn block_hash(a: u64, b: u64, reduced: u64, x: u64) -> u64 {
    let q = (u128::from(a) * u128::from(x / reduced) + u128::from(b)) % u128::from(PRIME);
    ((q + u128::from(x)) % u128::from(reduced)) as u64
}

/// Grafite's bound on the false positive rate of an empty range of `len`
/// points, for `points` keys in `reduced` cells: `len · points / reduced`,
/// at most 1. At `B` bits per key (`reduced = points · 2^(B−2)`) it is
/// `len / 2^(B−2)`.
pub fn predicted_range_fpr(len: u64, points: u64, reduced: u64) -> f64 {
    (len as f64 * points as f64 / reduced.max(1) as f64).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::SplitMix64;

    fn random_points(n: usize, space: u64, seed: u64) -> Vec<u64> {
        let mut rng = SplitMix64::new(seed);
        (0..n).map(|_| rng.next_u64() % space).collect()
    }

    #[test]
    fn key_points_follow_key_order() {
        assert_eq!(key_point(b""), 0);
        assert_eq!(key_point(b"\x01"), 1 << 56);
        assert_eq!(
            key_point(b"abcdefgh-and-more"),
            u64::from_be_bytes(*b"abcdefgh")
        );
        let mut keys: Vec<&[u8]> = vec![b"a", b"ab", b"abcdefghij", b"b", b"\xff\xff", b""];
        keys.sort();
        assert!(keys.windows(2).all(|w| key_point(w[0]) <= key_point(w[1])));
    }

    #[test]
    fn no_false_negatives_including_across_block_edges() {
        // Few keys at few bits: blocks are short, so ranges often cross one.
        for (n, bits, space, seed) in [
            (1, 4.0, 1000, 1),
            (50, 3.0, 5000, 2),
            (2000, 8.0, 1 << 40, 3),
            (500, 20.0, u64::MAX, 4),
        ] {
            let pts = random_points(n, space, seed);
            let f = RangeFilter::build(&pts, bits, seed);
            let mut rng = SplitMix64::new(seed + 10);
            for &x in &pts {
                assert!(f.may_contain_point(x));
                for _ in 0..4 {
                    let (e1, e2) = (rng.below(20), rng.below(20));
                    let below = rng.below(1 << e1);
                    let above = rng.below(1 << e2);
                    let (lo, hi) = (x.saturating_sub(below), x.saturating_add(above));
                    assert!(
                        f.may_contain_range(lo, hi),
                        "{lo}..={hi} holds {x} (n={n}, r={})",
                        f.reduced
                    );
                }
            }
            assert!(!f.may_contain_range(5, 4));
        }
        let empty = RangeFilter::build(&[], 10.0, 1);
        assert!(!empty.may_contain_range(0, u64::MAX));
    }

    /// The measured rate of empty ranges the filter passes, over `queries`
    /// ranges of `len` points drawn by `start`.
    fn measured_fpr(
        f: &RangeFilter,
        sorted: &[u64],
        len: u64,
        queries: usize,
        mut start: impl FnMut(usize) -> u64,
    ) -> f64 {
        let (mut empty, mut passed) = (0u64, 0u64);
        for i in 0..queries {
            let lo = start(i);
            let hi = lo.saturating_add(len - 1);
            let first = sorted.partition_point(|&k| k < lo);
            if first < sorted.len() && sorted[first] <= hi {
                continue;
            }
            empty += 1;
            passed += u64::from(f.may_contain_range(lo, hi));
        }
        passed as f64 / empty.max(1) as f64
    }

    #[test]
    fn fpr_stays_under_the_bound_for_random_and_correlated_ranges() {
        let n = 20_000;
        let mut pts = random_points(n, u64::MAX, 5);
        pts.sort_unstable();
        for bits in [8.0, 12.0, 16.0] {
            let f = RangeFilter::build(&pts, bits, 7);
            for len in [1u64, 16, 256] {
                let bound = f.predicted_fpr(len);
                let mut rng = SplitMix64::new(len);
                let uncorrelated = measured_fpr(&f, &pts, len, 40_000, |_| rng.next_u64());
                // Just past an existing key: where tries and prefix Blooms fail.
                let correlated = measured_fpr(&f, &pts, len, 40_000, |i| pts[i % n] + 1);
                for (what, fpr) in [("uncorrelated", uncorrelated), ("correlated", correlated)] {
                    // The bound is an expectation; 40,000 trials leave a few
                    // standard deviations of room above it.
                    let slack = 4.0 * (bound / 40_000.0).sqrt() + 1e-4;
                    assert!(
                        fpr <= bound + slack,
                        "{what} {bits} b/k len {len}: {fpr} > {bound}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_documented_example_has_its_documented_length() {
        // docs/format.md §7b: three distinct points at 10 bits per key.
        let f = RangeFilter::build(&[5, 1 << 40, u64::MAX], 10.0, 0x6772_6166_6974_6531);
        assert_eq!(f.reduced_universe(), 768);
        assert!(f.built_at(10.0) && !f.built_at(12.0));
        assert_eq!(f.encode().len(), 65);
    }

    #[test]
    fn it_spends_its_bits_per_key() {
        let pts = random_points(100_000, u64::MAX, 9);
        for bits in [8.0, 10.0, 16.0] {
            let f = RangeFilter::build(&pts, bits, 1);
            let spent = f.bits_per_key();
            assert!(
                (bits - 0.05..bits + 0.1).contains(&spent),
                "{bits}: {spent}"
            );
        }
    }

    #[test]
    fn encoding_round_trips_and_damage_is_refused_or_harmless() {
        let pts = random_points(300, 1 << 30, 11);
        let f = RangeFilter::build(&pts, 10.0, 3);
        let bytes = f.encode();
        assert_eq!(RangeFilter::decode(&bytes).unwrap(), f);
        assert!(RangeFilter::decode(&bytes[..HEADER_LEN - 1]).is_err());
        assert!(RangeFilter::decode(&bytes[..bytes.len() - 8]).is_err());
        for bit in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            if let Ok(d) = RangeFilter::decode(&b) {
                for (lo, hi) in [
                    (0, 0),
                    (0, u64::MAX),
                    (1 << 29, (1 << 29) + 1000),
                    (u64::MAX - 5, u64::MAX),
                ] {
                    let _ = d.may_contain_range(lo, hi);
                }
            }
        }
    }
}
