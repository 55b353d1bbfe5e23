//! The default filter: a cache-line blocked Bloom filter with 512-bit lines.
//!
//! Every key sets and tests `k` bits inside a single 64-byte line, so a probe
//! costs one cache miss instead of `k`. The hashing is RocksDB's FastLocalBloom
//! (`util/bloom_impl.h`): the low 32 bits of the key's XXH3-64 pick the line by
//! fastrange (`(h32 * lines) >> 32`, no modulo), the high 32 bits drive the probes:
//! the top 9 bits select one of 512 bits, then the value is multiplied by the
//! 32-bit golden ratio `0x9e3779b9` for the next probe.
//!
//! Blocking costs some accuracy: keys are Poisson-distributed over lines, and
//! crowded lines are over-full. At 10 bits/key the exact model
//! ([`super::math::blocked512_fpr`]) gives 0.9665% with k = 6, against 0.819% for a
//! classic Bloom filter with k = 7; and the best k is lower (6, not 7; 9, not 11 at
//! 16 bits/key) because extra probes crowd the line further.
//!
//! The probe is branch-free: it ANDs the `k` probed bits together instead of
//! returning at the first clear bit. For absent keys an early-exit loop would
//! mispredict about half its branches, and the line is already in cache after
//! the first probe, so the remaining probes cost only a few ALU operations.

use super::{FILTER_VERSION, FilterDecodeError, FilterKind, FilterTrailer, HASH_XXH3_64};

/// Multiplier that advances the probe hash (32-bit golden ratio).
const GOLDEN32: u32 = 0x9e37_79b9;

/// `GOLDEN32^i`: probe `i` uses `h2 · GOLDEN32^i`, the same value as `i` steps
/// of the multiply chain, but the `k` products are independent of each other,
/// so they issue in parallel instead of as a chain of `k` multiplications.
const GOLDEN_POW: [u32; super::MAX_PROBES as usize] = {
    let mut p = [1u32; super::MAX_PROBES as usize];
    let mut i = 1;
    while i < p.len() {
        p[i] = p[i - 1].wrapping_mul(GOLDEN32);
        i += 1;
    }
    p
};

/// AVX2 probe: all (up to 8) probes of a key at once, as RocksDB's AVX2 path
/// does. Lane `i` computes `h2 · GOLDEN32^i`, its top 9 bits pick the bit; the
/// line is held as two 256-bit registers of eight 32-bit words and each lane
/// fetches its word with a permute, so the whole test is ~12 instructions for
/// k ≤ 8 instead of ~6 per probe.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::*;

    /// `GOLDEN32^i`, padded to a multiple of 8 lanes.
    static POW: [u32; 32] = {
        let mut p = [1u32; 32];
        let mut i = 1;
        while i < p.len() {
            p[i] = p[i - 1].wrapping_mul(super::GOLDEN32);
            i += 1;
        }
        p
    };

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn check_line(line: &super::Line, h2: u32, k: u32) -> bool {
        let ptr = line.0.as_ptr().cast::<__m256i>();
        // SAFETY: `Line` is 64-byte aligned and 64 bytes long.
        let (lo, hi) = unsafe { (_mm256_load_si256(ptr), _mm256_load_si256(ptr.add(1))) };
        let h = _mm256_set1_epi32(h2 as i32);
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mut done = 0u32;
        let mut all = 1i32;
        while done < k {
            // SAFETY: done + 8 <= 32 because k <= MAX_PROBES (30) rounds up to 32.
            let pow = unsafe { _mm256_loadu_si256(POW.as_ptr().add(done as usize).cast()) };
            let bit = _mm256_srli_epi32::<23>(_mm256_mullo_epi32(h, pow));
            let word = _mm256_srli_epi32::<5>(bit);
            let from_lo = _mm256_permutevar8x32_epi32(lo, word);
            let from_hi = _mm256_permutevar8x32_epi32(hi, word);
            // Word index bit 3 chooses the upper half; blendv reads the sign bit.
            let upper = _mm256_slli_epi32::<28>(word);
            let w = _mm256_castps_si256(_mm256_blendv_ps(
                _mm256_castsi256_ps(from_lo),
                _mm256_castsi256_ps(from_hi),
                _mm256_castsi256_ps(upper),
            ));
            let one = _mm256_set1_epi32(1);
            let mask = _mm256_sllv_epi32(one, _mm256_and_si256(bit, _mm256_set1_epi32(31)));
            let live = _mm256_cmpgt_epi32(_mm256_set1_epi32((k - done) as i32), lanes);
            let mask = _mm256_and_si256(mask, live);
            // testc: 1 iff every bit of `mask` is set in `w`. ANDed, not
            // branched on, so a probe has no data-dependent branch.
            all &= _mm256_testc_si256(w, mask);
            done += 8;
        }
        all != 0
    }

    /// [`super::Blocked512Filter::may_contain_batch`] with the check inlined
    /// into one AVX2 loop: no call per key, so many keys' cache misses are in
    /// flight at once.
    ///
    /// # Safety
    /// The CPU must support AVX2; `lines` must not be empty.
    #[target_feature(enable = "avx2")]
    pub unsafe fn batch(lines: &[super::Line], k: u32, hashes: &[u64], out: &mut [bool]) {
        let n = lines.len();
        for (i, (&h, o)) in hashes.iter().zip(out.iter_mut()).enumerate() {
            if let Some(&next) = hashes.get(i + super::BATCH_AHEAD) {
                super::prefetch(&lines[super::fastrange32(next as u32, n)]);
            }
            let line = &lines[super::fastrange32(h as u32, n)];
            // SAFETY: the caller guarantees AVX2.
            *o = unsafe { check_line(line, (h >> 32) as u32, k) };
        }
    }
}

/// Tests the `K` probe bits of `h2` in `line`, unrolled for a constant `K`.
#[inline(always)]
fn check_line<const K: usize>(line: &[u64; 8], h2: u32) -> bool {
    let mut all = 1u64;
    for pow in &GOLDEN_POW[..K] {
        let bit = h2.wrapping_mul(*pow) >> (32 - 9);
        all &= line[(bit >> 6) as usize] >> (bit & 63);
    }
    all & 1 != 0
}

/// [`check_line`] for a run-time `k`.
#[inline(always)]
fn check_line_dyn(line: &[u64; 8], h2: u32, k: u32) -> bool {
    let mut all = 1u64;
    for pow in &GOLDEN_POW[..k as usize] {
        let bit = h2.wrapping_mul(*pow) >> (32 - 9);
        all &= line[(bit >> 6) as usize] >> (bit & 63);
    }
    all & 1 != 0
}

/// One cache line of filter bits. The alignment makes a probe touch exactly one
/// line of the CPU cache.
#[repr(C, align(64))]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Line(pub [u64; 8]);

/// An opened (or freshly built) 512-bit blocked Bloom filter.
#[derive(Clone, Debug)]
pub struct Blocked512Filter {
    lines: Box<[Line]>,
    key_count: u64,
    num_probes: u32,
    /// Whether this CPU has AVX2, looked up once when the filter is made.
    avx2: bool,
}

fn cpu_has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[inline(always)]
fn fastrange32(h: u32, n: usize) -> usize {
    ((u64::from(h) * n as u64) >> 32) as usize
}

/// The 512-bit mask of the `k` bits a key with probe hash `h2` sets (tests).
#[cfg(test)]
fn probe_mask(mut h2: u32, k: u32) -> [u64; 8] {
    let mut mask = [0u64; 8];
    for _ in 0..k {
        let bit = h2 >> (32 - 9);
        mask[(bit >> 6) as usize] |= 1u64 << (bit & 63);
        h2 = h2.wrapping_mul(GOLDEN32);
    }
    mask
}

/// Number of 512-bit lines for `keys` keys at `bits_per_key` (at least one line
/// when there is a key; the trailer stores the count as 64-bit but fastrange
/// needs it below 2^32).
pub fn lines_for(keys: usize, bits_per_key: f64) -> usize {
    if keys == 0 {
        return 0;
    }
    let lines = (keys as f64 * bits_per_key / 512.0).ceil();
    lines.clamp(1.0, u32::MAX as f64) as usize
}

/// How many keys ahead the batch probe prefetches.
const BATCH_AHEAD: usize = 8;

#[inline(always)]
fn prefetch(line: &Line) {
    super::prefetch_read(line);
}

impl Blocked512Filter {
    /// Builds the filter in memory from key hashes.
    pub fn from_hashes(hashes: &[u64], bits_per_key: f64, num_probes: u32) -> Self {
        let n = lines_for(hashes.len(), bits_per_key);
        let mut lines = vec![Line::default(); n].into_boxed_slice();
        // Large filters do not fit in cache: prefetch the line of a key a few
        // positions ahead so the misses overlap (as RocksDB's builder does).
        const AHEAD: usize = 8;
        if n > 0 {
            for (i, &h) in hashes.iter().enumerate() {
                if let Some(&next) = hashes.get(i + AHEAD) {
                    prefetch(&lines[fastrange32(next as u32, n)]);
                }
                let line = &mut lines[fastrange32(h as u32, n)].0;
                let mut h2 = (h >> 32) as u32;
                for _ in 0..num_probes {
                    let bit = h2 >> (32 - 9);
                    line[(bit >> 6) as usize] |= 1u64 << (bit & 63);
                    h2 = h2.wrapping_mul(GOLDEN32);
                }
            }
        }
        Blocked512Filter {
            lines,
            key_count: hashes.len() as u64,
            num_probes,
            avx2: cpu_has_avx2(),
        }
    }

    /// Appends the serialized form (lines as little-endian words, then the
    /// trailer) to `out`.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.lines.len() * 64 + super::FILTER_TRAILER_LEN);
        for line in self.lines.iter() {
            for w in line.0 {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        FilterTrailer {
            units: self.lines.len() as u64,
            key_count: self.key_count,
            num_probes: self.num_probes as u8,
            hash: HASH_XXH3_64,
            version: FILTER_VERSION,
            kind: FilterKind::Blocked512 as u8,
        }
        .encode_to(out);
    }

    /// Rebuilds the in-memory filter from a payload and its decoded trailer,
    /// copying into aligned memory.
    pub(crate) fn from_parts(payload: &[u8], t: &FilterTrailer) -> Result<Self, FilterDecodeError> {
        if t.units > u64::from(u32::MAX) || t.units.checked_mul(64) != Some(payload.len() as u64) {
            return Err(FilterDecodeError(format!(
                "blocked512 filter claims {} lines but has {} payload bytes",
                t.units,
                payload.len()
            )));
        }
        if t.units == 0 && t.key_count != 0 {
            return Err(FilterDecodeError(format!(
                "blocked512 filter has no lines for {} keys",
                t.key_count
            )));
        }
        let lines: Box<[Line]> = payload
            .chunks_exact(64)
            .map(|c| {
                let mut l = Line::default();
                for (w, b) in l.0.iter_mut().zip(c.chunks_exact(8)) {
                    *w = u64::from_le_bytes(b.try_into().expect("8-byte chunk"));
                }
                l
            })
            .collect();
        Ok(Blocked512Filter {
            lines,
            key_count: t.key_count,
            num_probes: u32::from(t.num_probes),
            avx2: cpu_has_avx2(),
        })
    }

    /// False only if `hash` was certainly not added. Uses AVX2 where the CPU
    /// has it, else [`Self::may_contain_portable`]; both give identical answers.
    ///
    /// A build for a CPU with AVX2 (`-C target-cpu=native` or
    /// `-C target-feature=+avx2`) inlines the AVX2 test into the caller; a
    /// generic x86-64 build detects AVX2 at run time and calls it, which cost
    /// 1.6 ns more per probe in a loop at 10^6 keys (docs/filters.md). [`Self::may_contain_batch`] gets the
    /// inlined loop either way.
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        let n = self.lines.len();
        if n == 0 {
            return false;
        }
        #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
        {
            let line = &self.lines[fastrange32(hash as u32, n)];
            // SAFETY: this build targets CPUs with AVX2.
            unsafe { avx2::check_line(line, (hash >> 32) as u32, self.num_probes) }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
        {
            #[cfg(target_arch = "x86_64")]
            if self.avx2 {
                let line = &self.lines[fastrange32(hash as u32, n)];
                // SAFETY: `avx2` is true only if the CPU reported AVX2.
                return unsafe { avx2::check_line(line, (hash >> 32) as u32, self.num_probes) };
            }
            self.may_contain_portable(hash)
        }
    }

    /// The portable (scalar) probe; public so benchmarks can compare paths.
    #[inline]
    pub fn may_contain_portable(&self, hash: u64) -> bool {
        let n = self.lines.len();
        if n == 0 {
            return false;
        }
        let line = &self.lines[fastrange32(hash as u32, n)].0;
        let h2 = (hash >> 32) as u32;
        // AND together the probed bits, shifted down to bit 0: no branch per
        // probe, and the line's words are only loaded, never stored. The
        // common probe counts get an unrolled copy.
        match self.num_probes {
            4 => check_line::<4>(line, h2),
            5 => check_line::<5>(line, h2),
            6 => check_line::<6>(line, h2),
            7 => check_line::<7>(line, h2),
            8 => check_line::<8>(line, h2),
            9 => check_line::<9>(line, h2),
            k => check_line_dyn(line, h2, k),
        }
    }

    /// Probes many hashes, prefetching lines ahead so cache misses overlap;
    /// `out[i]` receives `may_contain(hashes[i])`. With AVX2 the whole loop is
    /// one function with the test inlined (no call per key).
    pub fn may_contain_batch(&self, hashes: &[u64], out: &mut [bool]) {
        let n = self.lines.len();
        assert_eq!(hashes.len(), out.len(), "one output per hash");
        if n == 0 {
            out.fill(false);
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: `avx2` is true only if the CPU reported AVX2; n > 0.
            unsafe { avx2::batch(&self.lines, self.num_probes, hashes, out) };
            return;
        }
        for (i, (&h, o)) in hashes.iter().zip(out.iter_mut()).enumerate() {
            if let Some(&next) = hashes.get(i + BATCH_AHEAD) {
                prefetch(&self.lines[fastrange32(next as u32, n)]);
            }
            *o = self.may_contain_portable(h);
        }
    }

    /// Number of 512-bit lines.
    pub fn num_lines(&self) -> usize {
        self.lines.len()
    }

    /// Keys (hashes) the filter was built from.
    pub fn key_count(&self) -> u64 {
        self.key_count
    }

    /// Probes per key.
    pub fn num_probes(&self) -> u32 {
        self.num_probes
    }

    /// Bytes of filter bits in memory.
    pub fn memory_bytes(&self) -> usize {
        self.lines.len() * 64
    }

    /// Fraction of bits set (diagnostic; about one half at the optimum).
    pub fn fill_ratio(&self) -> f64 {
        if self.lines.is_empty() {
            return 0.0;
        }
        let ones: u64 = self
            .lines
            .iter()
            .flat_map(|l| l.0)
            .map(|w| u64::from(w.count_ones()))
            .sum();
        ones as f64 / (self.lines.len() as f64 * 512.0)
    }
}

/// Builds the serialized filter over `hashes`.
pub fn build(hashes: &[u64], bits_per_key: f64, num_probes: u32) -> Vec<u8> {
    let mut out = Vec::new();
    Blocked512Filter::from_hashes(hashes, bits_per_key, num_probes).encode_to(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{Filter, FilterPolicy, key_hash};

    #[test]
    fn probe_bits_match_rocksdb_scheme() {
        // Bit positions are the top 9 bits of h2, h2*golden, h2*golden^2, ...
        let h2: u32 = 0xdead_beef;
        let mask = probe_mask(h2, 3);
        let mut expect = [0u64; 8];
        let mut h = h2;
        for _ in 0..3 {
            let bit = (h >> 23) as usize;
            expect[bit / 64] |= 1 << (bit % 64);
            h = h.wrapping_mul(0x9e37_79b9);
        }
        assert_eq!(mask, expect);
        assert!(mask.iter().map(|w| w.count_ones()).sum::<u32>() <= 3);
    }

    #[test]
    fn lines_are_cache_aligned() {
        let f = Blocked512Filter::from_hashes(&[1, 2, 3], 10.0, 6);
        assert_eq!(std::mem::align_of::<Line>(), 64);
        assert_eq!((f.lines.as_ptr() as usize) % 64, 0);
        let bytes = {
            let mut v = Vec::new();
            f.encode_to(&mut v);
            v
        };
        let Filter::Blocked512(g) = Filter::open(&bytes).unwrap() else {
            panic!("not blocked")
        };
        assert_eq!((g.lines.as_ptr() as usize) % 64, 0);
        assert_eq!(g.lines, f.lines);
    }

    #[test]
    fn empty_filter_contains_nothing() {
        let bytes = FilterPolicy::blocked512(10.0).build(&[]);
        let f = Filter::open(&bytes).unwrap();
        assert!(f.is_usable());
        assert!(!f.may_contain(key_hash(b"x")));
        assert_eq!(f.memory_bytes(), 0);
    }

    #[test]
    fn one_key() {
        let h = key_hash(b"only");
        let f = Filter::open(&FilterPolicy::blocked512(10.0).build(&[h])).unwrap();
        assert!(f.may_contain(h));
        assert_eq!(f.memory_bytes(), 64);
    }

    #[test]
    fn fractional_bits_per_key_sizes_lines() {
        assert_eq!(lines_for(1000, 9.5), 19); // 9500 / 512 = 18.55
        assert_eq!(lines_for(1000, 10.0), 20);
        assert_eq!(lines_for(1, 0.5), 1);
    }

    #[test]
    fn simd_and_portable_paths_agree() {
        let keys: Vec<u64> = (0..20_000u64).map(|i| key_hash(&i.to_le_bytes())).collect();
        for k in 1..=crate::filter::MAX_PROBES {
            let f = Blocked512Filter::from_hashes(&keys[..5000], 6.0, k);
            for &h in &keys {
                assert_eq!(f.may_contain(h), f.may_contain_portable(h), "k={k}");
            }
            assert!(keys[..5000].iter().all(|&h| f.may_contain(h)));
        }
    }

    #[test]
    fn batch_agrees_with_single() {
        let keys: Vec<u64> = (0..5000u64).map(|i| key_hash(&i.to_le_bytes())).collect();
        let f = Blocked512Filter::from_hashes(&keys[..2500], 8.0, 5);
        let mut out = vec![false; keys.len()];
        f.may_contain_batch(&keys, &mut out);
        for (h, o) in keys.iter().zip(&out) {
            assert_eq!(*o, f.may_contain(*h));
        }
        assert!(out[..2500].iter().all(|&b| b));
    }

    #[test]
    fn wrong_payload_length_is_an_error() {
        let mut bytes = FilterPolicy::blocked512(10.0).build(&[1, 2, 3]);
        bytes.remove(0);
        assert!(Filter::open(&bytes).is_err());
    }
}
