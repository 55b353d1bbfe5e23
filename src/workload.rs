//! The `bench` command's deterministic workload: a tiny seeded PRNG and
//! 16-byte keys drawn from two disjoint families, "present" (to insert) and
//! "absent" (never inserted).
//!
//! Not part of the library: the integration tests, benchmarks and examples
//! that want the same keys include this file with `#[path]`. Its tests are in
//! `bench.rs`, so that they run once.

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
