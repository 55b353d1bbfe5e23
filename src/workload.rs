//! The filter study's deterministic workload: a small seeded generator
//! ([`SplitMix64`]), 16-byte keys drawn from two disjoint families,
//! "present" ([`present_key`], to insert) and "absent" ([`absent_key`],
//! never inserted), and values of a chosen compressibility
//! ([`ValueSource`]); and YCSB's key choosers ([`Zipfian`],
//! [`ScrambledZipfian`], [`SkewedLatest`]).
//!
//! `bloomlsm bench`, the benchmarks, the examples and the integration tests
//! draw their keys here, so a program that measures a store the way the
//! study does can use the same keys. Every sequence is a pure function of
//! its seed and stays the same from release to release: the study's results
//! depend on it.
//!
//! ```
//! use bloomlsm::workload::{SplitMix64, absent_key, present_key};
//!
//! let mut rng = SplitMix64::new(7);
//! let i = rng.below(1000);
//! assert_ne!(present_key(7, i), absent_key(7, i));
//! ```

mod zipfian;

pub use zipfian::{ScrambledZipfian, SkewedLatest, YCSB_THETA, Zipfian, fnv_hash64, zeta};

/// SplitMix64: a fast, well-mixed 64-bit generator (Steele, Lea, Flood 2014).
/// Deterministic for a seed; not for cryptography.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64-bit value.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.state)
    }

    /// A value uniform in `0..n` (`n > 0`), by fastrange.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A float uniform in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// The SplitMix64 finaliser: a bijection on `u64` with full avalanche.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The `i`-th key of the "present" family for `seed`: 16 pseudo-random bytes.
/// Present and absent families never collide (they differ in the generator
/// input's low bit, and the map from input to key is a bijection).
pub fn present_key(seed: u64, i: u64) -> [u8; 16] {
    key16(seed, i << 1)
}

/// The `i`-th key of the "absent" family for `seed` (never equal to a present
/// key of the same seed).
pub fn absent_key(seed: u64, i: u64) -> [u8; 16] {
    key16(seed, (i << 1) | 1)
}

/// Length of the prefix of [`prefixed_key`]: the bytes a prefix study's
/// extractor takes (`PrefixExtractor::Fixed(PREFIX_LEN)`).
pub const PREFIX_LEN: usize = 8;

/// Mixed into the seed of the prefixes, so that they differ from the
/// present keys' first bytes.
const PREFIX_SALT: u64 = 0x7072_6566_6978;

/// The prefix of group `g` of the present family: [`PREFIX_LEN`] pseudo-random
/// bytes. Present and absent prefixes never collide (the first 8 bytes of a
/// family key are a bijection of its generator input).
pub fn present_prefix(seed: u64, g: u64) -> [u8; PREFIX_LEN] {
    key16(seed ^ PREFIX_SALT, g << 1)[..PREFIX_LEN]
        .try_into()
        .expect("8 bytes")
}

/// The prefix of group `g` of the absent family: never a [`present_prefix`].
pub fn absent_prefix(seed: u64, g: u64) -> [u8; PREFIX_LEN] {
    key16(seed ^ PREFIX_SALT, (g << 1) | 1)[..PREFIX_LEN]
        .try_into()
        .expect("8 bytes")
}

/// The `i`-th key of a store with a prefix structure: the
/// [`present_prefix`] of group `i / group`, then the last 8 bytes of
/// [`present_key`]`(seed, i)` (distinct for distinct `i`). Written in order
/// of `i`, each group's keys are written together, as a user's or a
/// tenant's often are.
pub fn prefixed_key(seed: u64, i: u64, group: u64) -> [u8; 16] {
    let mut k = present_key(seed, i);
    k[..PREFIX_LEN].copy_from_slice(&present_prefix(seed, i / group.max(1)));
    k
}

fn key16(seed: u64, x: u64) -> [u8; 16] {
    // Two rounds of a bijective mix on (x, seed) keep distinct x distinct.
    let hi = mix64(x ^ mix64(seed));
    let lo = mix64(hi ^ 0x5851_f42d_4c95_7f2d);
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&hi.to_be_bytes());
    k[8..].copy_from_slice(&lo.to_be_bytes());
    k
}

/// Values that compress to about a chosen fraction of their size, in the
/// spirit of db_bench's `--compression_ratio`: value `i` is `ratio · len`
/// pseudo-random bytes (seeded by `i`) repeated to fill `len` bytes, so each
/// value compresses on its own and the keys' order in a block does not
/// matter. Ratio 1 is incompressible random bytes; 0.5 compresses about 2x
/// with LZ4 or zstd.
#[derive(Clone, Debug)]
pub struct ValueSource {
    seed: u64,
    len: usize,
    raw: usize,
}

impl ValueSource {
    /// Values of `len` bytes compressing to about `ratio` (in `0..=1`).
    pub fn new(seed: u64, ratio: f64, len: usize) -> Self {
        let raw = ((len as f64 * ratio).round() as usize).clamp(1.min(len), len);
        ValueSource { seed, len, raw }
    }

    /// Writes the value of key `i` into `out` (replacing its contents).
    pub fn value(&self, i: u64, out: &mut Vec<u8>) {
        out.clear();
        out.resize(self.raw, 0);
        SplitMix64::new(mix64(self.seed ^ mix64(i))).fill(out);
        while out.len() < self.len {
            let n = (self.len - out.len()).min(self.raw);
            out.extend_from_within(..n);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::{SplitMix64, ValueSource, absent_key, mix64, present_key};
    use crate::Compression;
    use crate::sst::compression::Compressor;

    /// `ValueSource`'s promise: values of `len` bytes that compress to about
    /// `ratio` of their size.
    #[test]
    fn values_compress_about_as_stated() {
        for ratio in [1.0, 0.5, 0.25] {
            let src = ValueSource::new(7, ratio, 100);
            let (mut block, mut v) = (Vec::new(), Vec::new());
            for i in 0..40 {
                src.value(i, &mut v);
                assert_eq!(v.len(), 100);
                block.extend_from_slice(&v);
            }
            let mut cx = Compressor::new(Compression::Lz4).unwrap();
            let (stored, _) = cx.compress(&block);
            let got = stored.len() as f64 / block.len() as f64;
            eprintln!("ratio {ratio}: lz4 {got:.3}");
            assert!((got - ratio).abs() < 0.15, "ratio {ratio}: lz4 {got:.3}");
        }
    }

    /// The absent family never collides with the present one, and a key is
    /// a function of its seed and index alone.
    #[test]
    fn families_are_disjoint_and_deterministic() {
        let p: HashSet<[u8; 16]> = (0..10_000).map(|i| present_key(7, i)).collect();
        assert_eq!(p.len(), 10_000);
        assert!((0..10_000).all(|i| !p.contains(&absent_key(7, i))));
        assert_eq!(present_key(7, 3), present_key(7, 3));
        assert_ne!(present_key(7, 3), present_key(8, 3));
    }

    /// `below(n)` stays in `0..n`, `unit()` in `[0, 1)`.
    #[test]
    fn below_is_in_range() {
        let mut r = SplitMix64::new(1);
        assert!((0..1000).all(|_| r.below(10) < 10));
        let u = r.unit();
        assert!((0.0..1.0).contains(&u));
    }

    /// The sequences the study's published results were measured with: a
    /// change to any generator changes these values.
    #[test]
    fn sequences_are_stable() {
        let mut r = SplitMix64::new(42);
        let first: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        assert_eq!(
            first,
            [
                0xbdd7_3226_2feb_6e95,
                0x28ef_e333_b266_f103,
                0x4752_6757_130f_9f52
            ]
        );
        assert_eq!(mix64(1), 0x5692_161d_100b_05e5);
        assert_eq!(
            present_key(7, 3),
            [
                234, 164, 99, 103, 1, 193, 85, 33, 36, 81, 168, 66, 14, 94, 34, 177
            ]
        );
        assert_eq!(
            absent_key(7, 3),
            [
                231, 196, 42, 11, 136, 249, 126, 79, 166, 235, 243, 253, 75, 234, 182, 223
            ]
        );
        let mut v = Vec::new();
        ValueSource::new(7, 0.5, 12).value(9, &mut v);
        assert_eq!(v, [81, 213, 12, 44, 26, 146, 81, 213, 12, 44, 26, 146]);
    }
}
