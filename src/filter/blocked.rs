//! The default filter: a cache-line blocked Bloom filter with 512-bit lines.
//!
//! About 38% of this file is its unit tests (the `tests` module at the end);
//! the rest is one filter: its build and its scalar and AVX2 probes.
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

use std::sync::Arc;

use super::{
    BATCH_GROUP, FILTER_VERSION, FilterDecodeError, FilterKind, FilterTrailer, HASH_XXH3_64,
};

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

    // Every k a filter can have, rounded up to whole groups of 8 lanes, stays
    // inside `POW`: the bound that `check_line`'s callers rely on.
    const _: () = assert!(crate::filter::MAX_PROBES.div_ceil(8) * 8 <= POW.len() as u32);

    /// # Safety
    /// The CPU must support AVX2, and `k <= 32` (`POW`'s length): every
    /// [`super::Blocked512Filter`] has k <= [`crate::filter::MAX_PROBES`].
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn check_line(line: &super::Line, h2: u32, k: u32) -> bool {
        let ptr = line.0.as_ptr().cast::<__m256i>();
        // SAFETY: `Line` is 64-byte aligned and 64 bytes long.
        let (lo, hi) = unsafe { (_mm256_load_si256(ptr), _mm256_load_si256(ptr.add(1))) };
        let h = _mm256_set1_epi32(h2 as i32);
        // Bits the probes want but the line lacks, ORed over the steps and
        // tested once at the end: a test per step compiled to a branch on the
        // loaded line (7% slower in a probe loop, docs/filters.md). The first
        // eight probes need no loop (k <= 8 up to 11 bits/key).
        // SAFETY (both calls): `done` is 0, 8, 16 or 24 (it stays below
        // k <= 32), so `done + 8 <= 32`.
        let mut missing = unsafe { missing_bits(lo, hi, h, 0, k) };
        let mut done = 8;
        while done < k {
            missing = _mm256_or_si256(missing, unsafe { missing_bits(lo, hi, h, done, k) });
            done += 8;
        }
        _mm256_testz_si256(missing, missing) != 0
    }

    /// Probes `done..min(done + 8, k)` of probe hash `h` (broadcast) against the
    /// line `lo:hi`: the bits they want that are clear, one probe per lane.
    ///
    /// # Safety
    /// The CPU must support AVX2, and `done + 8 <= 32` (`POW`'s length).
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn missing_bits(lo: __m256i, hi: __m256i, h: __m256i, done: u32, k: u32) -> __m256i {
        debug_assert!(done <= 24, "k <= MAX_PROBES (30) keeps done + 8 <= 32");
        // SAFETY: done + 8 <= 32 = POW.len(), by the caller's contract.
        let pow = unsafe { _mm256_loadu_si256(POW.as_ptr().add(done as usize).cast()) };
        let bit = _mm256_srli_epi32::<23>(_mm256_mullo_epi32(h, pow));
        let word = _mm256_srli_epi32::<5>(bit);
        let w = fetch_words(lo, hi, word);
        // A 1 in each live lane (probe < k), 0 in the others, so that the
        // shift leaves dead lanes empty: the same for every key of a filter,
        // so a loop of probes computes it once (one instruction less per
        // probe than masking the shifted bits).
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let live = _mm256_cmpgt_epi32(_mm256_set1_epi32(k as i32 - done as i32), lanes);
        let one = _mm256_and_si256(_mm256_set1_epi32(1), live);
        let mask = _mm256_sllv_epi32(one, _mm256_and_si256(bit, _mm256_set1_epi32(31)));
        _mm256_andnot_si256(w, mask)
    }

    /// Word `word[i]` (0..16) of the line `lo:hi`, in lane `i`: with
    /// AVX-512 one two-source permute (`vpermt2d`), otherwise a permute of
    /// each half and a blend (three instructions and a shift; on a CPU with
    /// AVX-512 the probe's compute drops by a quarter, docs/filters.md).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn fetch_words(lo: __m256i, hi: __m256i, word: __m256i) -> __m256i {
        #[cfg(all(target_feature = "avx512f", target_feature = "avx512vl"))]
        // SAFETY: compiled only for a target with AVX-512F and VL.
        unsafe {
            _mm256_permutex2var_epi32(lo, word, hi)
        }
        #[cfg(not(all(target_feature = "avx512f", target_feature = "avx512vl")))]
        {
            let from_lo = _mm256_permutevar8x32_epi32(lo, word);
            let from_hi = _mm256_permutevar8x32_epi32(hi, word);
            // Word index bit 3 chooses the upper half; blendv reads the sign bit.
            let upper = _mm256_slli_epi32::<28>(word);
            _mm256_castps_si256(_mm256_blendv_ps(
                _mm256_castsi256_ps(from_lo),
                _mm256_castsi256_ps(from_hi),
                _mm256_castsi256_ps(upper),
            ))
        }
    }

    /// [`super::set_bits_scalar`] with AVX2, setting the same bits: each key's
    /// probe bits are first ORed into a 512-bit mask held in two registers
    /// (a probe's bit `b` lands in 64-bit lane `q` of a half by shifting 1
    /// left by `b - 64q`, which is zero unless `b` is in that lane), then the
    /// mask is ORed into the line with two 256-bit read-modify-writes. The
    /// scalar loop writes the line word by word instead, and at 6 probes into
    /// 8 words two of a key's probes share a word 92% of the time, so its
    /// loads wait on its own stores.
    ///
    /// # Safety
    /// The CPU must support AVX2; `k <= MAX_PROBES`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn set_bits(lines: &mut [super::Line], hashes: &[u64], k: u32) {
        match k {
            4 => set_bits_pows(lines, hashes, &super::GOLDEN_POW[..4]),
            5 => set_bits_pows(lines, hashes, &super::GOLDEN_POW[..5]),
            6 => set_bits_pows(lines, hashes, &super::GOLDEN_POW[..6]),
            7 => set_bits_pows(lines, hashes, &super::GOLDEN_POW[..7]),
            8 => set_bits_pows(lines, hashes, &super::GOLDEN_POW[..8]),
            9 => set_bits_pows(lines, hashes, &super::GOLDEN_POW[..9]),
            _ => set_bits_pows(lines, hashes, &super::GOLDEN_POW[..k as usize]),
        }
    }

    /// [`set_bits`] for the multipliers `pows` (`GOLDEN32^i`, i < k); a
    /// constant-length slice unrolls the per-key loop.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn set_bits_pows(lines: &mut [super::Line], hashes: &[u64], pows: &[u32]) {
        let n = lines.len();
        if n == 0 {
            return;
        }
        for (i, &h) in hashes.iter().enumerate() {
            if let Some(&next) = hashes.get(i + super::BUILD_AHEAD) {
                super::prefetch(&lines[super::fastrange32(next as u32, n)]);
            }
            or_key_bits(
                &mut lines[super::fastrange32(h as u32, n)],
                (h >> 32) as u32,
                pows,
            );
        }
    }

    /// ORs the probe bits of `h2` (one per multiplier in `pows`) into `line`:
    /// with AVX-512 the 512-bit mask is made in one register (half the shifts
    /// and ORs) and ORed in with one read-modify-write, otherwise in two
    /// 256-bit halves.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn or_key_bits(line: &mut super::Line, h2: u32, pows: &[u32]) {
        #[cfg(target_feature = "avx512f")]
        // SAFETY: compiled only for a target with AVX-512F; `Line` is 64-byte
        // aligned and 64 bytes long.
        unsafe {
            let offs = _mm512_set_epi64(448, 384, 320, 256, 192, 128, 64, 0);
            let ones = _mm512_set1_epi64(1);
            let mut mask = _mm512_setzero_si512();
            for &pow in pows {
                let bit = _mm512_set1_epi64(i64::from(h2.wrapping_mul(pow) >> (32 - 9)));
                mask = _mm512_or_si512(mask, _mm512_sllv_epi64(ones, _mm512_sub_epi64(bit, offs)));
            }
            let ptr = line.0.as_mut_ptr().cast::<__m512i>();
            _mm512_store_si512(ptr, _mm512_or_si512(_mm512_load_si512(ptr), mask));
        }
        #[cfg(not(target_feature = "avx512f"))]
        {
            let offs_lo = _mm256_setr_epi64x(0, 64, 128, 192);
            let offs_hi = _mm256_setr_epi64x(256, 320, 384, 448);
            let ones = _mm256_set1_epi64x(1);
            let mut lo = _mm256_setzero_si256();
            let mut hi = _mm256_setzero_si256();
            for &pow in pows {
                let bit = _mm256_set1_epi64x(i64::from(h2.wrapping_mul(pow) >> (32 - 9)));
                lo = _mm256_or_si256(lo, _mm256_sllv_epi64(ones, _mm256_sub_epi64(bit, offs_lo)));
                hi = _mm256_or_si256(hi, _mm256_sllv_epi64(ones, _mm256_sub_epi64(bit, offs_hi)));
            }
            let ptr = line.0.as_mut_ptr().cast::<__m256i>();
            // SAFETY: `Line` is 64-byte aligned and 64 bytes long.
            unsafe {
                _mm256_store_si256(ptr, _mm256_or_si256(_mm256_load_si256(ptr), lo));
                let ptr = ptr.add(1);
                _mm256_store_si256(ptr, _mm256_or_si256(_mm256_load_si256(ptr), hi));
            }
        }
    }

    /// [`super::Blocked512Filter::may_contain`]: line choice and test in one
    /// AVX2 function, so a generic build pays one call per probe.
    ///
    /// # Safety
    /// The CPU must support AVX2; `lines` must not be empty; `k <= 32`.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn may_contain(lines: &[super::Line], k: u32, hash: u64) -> bool {
        // SAFETY: the caller guarantees AVX2, a line and k <= 32.
        unsafe { check_line(super::line_for(lines, hash), (hash >> 32) as u32, k) }
    }

    /// A probe of `(lines, k, hash)`; see [`probe_for`]. Calling it has
    /// [`may_contain`]'s safety contract.
    pub type Probe = unsafe fn(&[super::Line], u32, u64) -> bool;

    /// [`may_contain`] for a constant probe count (its `k` argument is
    /// ignored): the lane mask and the loop fold away. Fewer instructions per
    /// probe let a loop of probes keep more cache misses in flight
    /// (docs/filters.md, "What limits a probe").
    ///
    /// # Safety
    /// The CPU must support AVX2; `lines` must not be empty.
    #[target_feature(enable = "avx2")]
    unsafe fn may_contain_k<const K: u32>(lines: &[super::Line], _k: u32, hash: u64) -> bool {
        // SAFETY: the caller guarantees AVX2 and a line; K <= 9.
        unsafe { may_contain(lines, K, hash) }
    }

    /// The AVX2 probe for filters of `k` probes, or `None` if this CPU lacks
    /// AVX2. Its `lines` must not be empty, and the `k` passed to it must be
    /// this `k`, at most 32.
    pub fn probe_for(k: u32) -> Option<Probe> {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return None;
        }
        Some(match k {
            4 => may_contain_k::<4>,
            5 => may_contain_k::<5>,
            6 => may_contain_k::<6>,
            7 => may_contain_k::<7>,
            8 => may_contain_k::<8>,
            9 => may_contain_k::<9>,
            _ => may_contain,
        })
    }

    /// Tests `hashes` whose lines the caller has prefetched, with the test
    /// inlined into one AVX2 loop (no call per key).
    ///
    /// # Safety
    /// The CPU must support AVX2; `lines` must not be empty; `k <= 32`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn check_group(lines: &[super::Line], k: u32, hashes: &[u64], out: &mut [bool]) {
        for (&h, o) in hashes.iter().zip(out.iter_mut()) {
            // SAFETY: the caller guarantees AVX2, a line and k <= 32.
            *o = unsafe { may_contain(lines, k, h) };
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
    /// The filter's lines; a filter of no keys (no lines on disk) holds one
    /// zero line, which answers "absent" to every probe, so a probe needs no
    /// emptiness test.
    /// Shared by every clone.
    lines: Arc<[Line]>,
    /// Lines on disk: `lines.len()`, or 0 for the filter of no keys.
    num_lines: usize,
    key_count: u64,
    /// In `1..=MAX_PROBES`, checked in [`Self::new`]: the AVX2 probe reads
    /// its table of multipliers unchecked up to k rounded up to 8, and the
    /// portable probe slices `GOLDEN_POW[..k]`.
    num_probes: u32,
    /// The AVX2 probe for this filter's k, if the CPU has AVX2 (looked up
    /// once when the filter is made).
    #[cfg(target_arch = "x86_64")]
    avx2: Option<avx2::Probe>,
}

#[inline(always)]
fn fastrange32(h: u32, n: usize) -> usize {
    ((u64::from(h) * n as u64) >> 32) as usize
}

/// The line that `hash` picks.
///
/// # Safety
/// `lines` must not be empty (a [`Blocked512Filter`] always holds a line).
#[inline(always)]
unsafe fn line_for(lines: &[Line], hash: u64) -> &Line {
    debug_assert!(!lines.is_empty());
    // SAFETY: fastrange32(h, n) = (h * n) >> 32 < n for h < 2^32 and n >= 1.
    // Unchecked, and `lines` never empty, so that a probe inlined into a loop
    // carries no branch but the loop's: 2.79-2.90 against 3.11-3.19 ns per
    // pre-hashed probe at 10^6 keys, bench binaries alternated
    // (docs/filters.md, "What limits a probe").
    unsafe { lines.get_unchecked(fastrange32(hash as u32, lines.len())) }
}

/// How far ahead the builders prefetch: large filters do not fit in cache,
/// so the line of the key 32 positions on is prefetched and the misses
/// overlap (as RocksDB's builder does, 8 ahead there). Measured
/// (docs/filters.md): 32 ahead doubles the rate at 10^7 keys against 8 ahead
/// (100 vs 50 M keys/s) and costs nothing at 10^4 or 10^6; prefetching a
/// group of keys and then writing it, as the batch probe does, was no better.
const BUILD_AHEAD: usize = 32;

/// Sets every key's probe bits: with AVX2 ([`avx2::set_bits`]) where this
/// build targets it or the CPU has it, else [`set_bits_scalar`]; both set the
/// same bits.
fn set_bits(lines: &mut [Line], hashes: &[u64], num_probes: u32) {
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    // SAFETY: this build targets CPUs with AVX2; k <= MAX_PROBES (checked by
    // `from_hashes`).
    unsafe {
        avx2::set_bits(lines, hashes, num_probes)
    }
    #[cfg(all(target_arch = "x86_64", not(target_feature = "avx2")))]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU reported AVX2; k <= MAX_PROBES.
        unsafe { avx2::set_bits(lines, hashes, num_probes) }
    } else {
        set_bits_scalar(lines, hashes, num_probes)
    }
    #[cfg(not(target_arch = "x86_64"))]
    set_bits_scalar(lines, hashes, num_probes)
}

/// The scalar builder: each probe ORs its bit into the line's word. (Unused
/// outside the tests in a build for AVX2.)
#[cfg_attr(all(target_arch = "x86_64", target_feature = "avx2"), allow(dead_code))]
fn set_bits_scalar(lines: &mut [Line], hashes: &[u64], num_probes: u32) {
    const AHEAD: usize = BUILD_AHEAD;
    let n = lines.len();
    if n == 0 {
        return;
    }
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

/// Number of 512-bit lines for `keys` keys at `bits_per_key` (at least one line
/// when there is a key; the trailer stores the count as 64-bit but fastrange
/// needs it below 2^32, so it is clamped to `u32::MAX`). `bits_per_key` is
/// clamped as [`FilterPolicy::new`](super::FilterPolicy::new) clamps it
/// (NaN counts as [`MIN_BITS_PER_KEY`](super::MIN_BITS_PER_KEY)).
pub fn lines_for(keys: usize, bits_per_key: f64) -> usize {
    if keys == 0 {
        return 0;
    }
    let bits_per_key = super::clamp_bits(bits_per_key);
    let lines = (keys as f64 * bits_per_key / 512.0).ceil();
    lines.clamp(1.0, u32::MAX as f64) as usize
}

#[inline(always)]
fn prefetch(line: &Line) {
    super::prefetch_read(line);
}

impl Blocked512Filter {
    /// Builds the filter in memory from key hashes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) unless
    /// `num_probes` is in 1..=[`MAX_PROBES`](super::MAX_PROBES) and
    /// `bits_per_key` in
    /// [`MIN_BITS_PER_KEY`](super::MIN_BITS_PER_KEY)..=[`MAX_BITS_PER_KEY`](super::MAX_BITS_PER_KEY).
    /// ([`FilterPolicy`](super::FilterPolicy) clamps both instead.)
    pub fn from_hashes(hashes: &[u64], bits_per_key: f64, num_probes: u32) -> crate::Result<Self> {
        super::check_params(FilterKind::Blocked512, bits_per_key, num_probes)?;
        let n = lines_for(hashes.len(), bits_per_key);
        let mut lines = vec![Line::default(); n].into_boxed_slice();
        set_bits(&mut lines, hashes, num_probes);
        Ok(Self::new(lines, hashes.len() as u64, num_probes))
    }

    /// `lines` may be empty (no keys): it is replaced by one zero line, which
    /// answers "absent" (k >= 1).
    ///
    /// # Panics
    /// If `num_probes` is outside 1..=[`MAX_PROBES`](super::MAX_PROBES); both
    /// callers check it first ([`Self::from_hashes`] returns an error,
    /// [`super::Filter::open`] rejects the stored k).
    fn new(lines: Box<[Line]>, key_count: u64, num_probes: u32) -> Self {
        // The invariant the probes' unchecked accesses rely on (see the
        // `num_probes` field), enforced where every filter is made.
        assert!(
            (1..=super::MAX_PROBES).contains(&num_probes),
            "blocked512 filter with {num_probes} probes"
        );
        let num_lines = lines.len();
        let lines: Arc<[Line]> = if num_lines == 0 {
            Arc::new([Line::default()])
        } else {
            lines.into()
        };
        Blocked512Filter {
            lines,
            num_lines,
            key_count,
            num_probes,
            #[cfg(target_arch = "x86_64")]
            avx2: avx2::probe_for(num_probes),
        }
    }

    /// Appends the serialized form (lines as little-endian words, then the
    /// trailer) to `out`.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.num_lines * 64 + super::FILTER_TRAILER_LEN);
        for line in &self.lines[..self.num_lines] {
            for w in line.0 {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        FilterTrailer {
            units: self.num_lines as u64,
            key_count: self.key_count,
            num_probes: u8::try_from(self.num_probes).expect("k <= MAX_PROBES"),
            hash: HASH_XXH3_64,
            version: FILTER_VERSION,
            kind: FilterKind::Blocked512.byte(),
        }
        .encode_to(out);
    }

    /// Rebuilds the in-memory filter from a payload and its decoded trailer,
    /// copying into aligned memory. The caller ([`super::Filter::open`]) has
    /// checked that the stored k is in 1..=[`MAX_PROBES`](super::MAX_PROBES).
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
        Ok(Self::new(lines, t.key_count, u32::from(t.num_probes)))
    }

    /// False only if `hash` was certainly not added. Uses AVX2 where the CPU
    /// has it, else [`Self::may_contain_portable`]; both give identical answers.
    ///
    /// A build for a CPU with AVX2 (`-C target-cpu=native`, the default
    /// inside this repository, or `-C target-feature=+avx2`) inlines the AVX2
    /// test into the caller; a generic x86-64 build calls an AVX2 function
    /// chosen once per filter for its k. To probe many keys whose lines may
    /// be out of cache, [`Self::may_contain_batch`] and
    /// [`Self::may_contain_keys`] keep the misses in flight together
    /// (docs/filters.md, "Probe and build cost").
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
        {
            // SAFETY: this build targets CPUs with AVX2; `lines` is never
            // empty and k <= MAX_PROBES (30) < 32, both from `Self::new`.
            unsafe { avx2::may_contain(&self.lines, self.num_probes, hash) }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
        {
            #[cfg(target_arch = "x86_64")]
            {
                // SAFETY: `avx2` is set only if the CPU reported AVX2, by
                // `probe_for(self.num_probes)`; `lines` is never empty and
                // k <= MAX_PROBES (30) < 32, both from `Self::new`.
                match self.avx2 {
                    Some(probe) => unsafe { probe(&self.lines, self.num_probes, hash) },
                    None => self.may_contain_scalar_call(hash),
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            self.may_contain_portable(hash)
        }
    }

    /// The scalar probe, kept out of line on x86-64 so that `may_contain`
    /// stays small enough to inline into its callers' loops.
    #[cfg(all(target_arch = "x86_64", not(target_feature = "avx2")))]
    #[inline(never)]
    fn may_contain_scalar_call(&self, hash: u64) -> bool {
        self.may_contain_portable(hash)
    }

    /// Starts loading the line a probe of `hash` tests.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        // SAFETY: `lines` is never empty.
        prefetch(unsafe { line_for(&self.lines, hash) });
    }

    /// The portable (scalar) probe; public so benchmarks can compare paths.
    #[inline]
    pub fn may_contain_portable(&self, hash: u64) -> bool {
        // SAFETY: `lines` is never empty.
        let line = unsafe { &line_for(&self.lines, hash).0 };
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

    /// Probes many hashes; `out[i]` receives `may_contain(hashes[i])`.
    ///
    /// # Panics
    /// If `hashes` and `out` differ in length.
    ///
    /// Keys go in groups of [`BATCH_GROUP`]: first every line of the group is
    /// prefetched, then each is tested, so the group's cache misses are in
    /// flight together instead of one per loop iteration. At 10^7 keys with
    /// the filter in L3 this measured 2.9–3.9 ns per key against 7.4–18 ns
    /// for prefetching 8 keys ahead; with the filter cold the two were alike
    /// (docs/filters.md).
    pub fn may_contain_batch(&self, hashes: &[u64], out: &mut [bool]) {
        assert_eq!(hashes.len(), out.len(), "one output per hash");
        for (hs, os) in hashes.chunks(BATCH_GROUP).zip(out.chunks_mut(BATCH_GROUP)) {
            for &h in hs {
                // SAFETY: `lines` is never empty.
                prefetch(unsafe { line_for(&self.lines, h) });
            }
            self.check_group(hs, os);
        }
    }

    /// [`Self::may_contain_batch`] for keys: hashes each group's keys with
    /// [`super::key_hash`] and prefetches their lines, then tests them.
    ///
    /// # Panics
    /// If `keys` and `out` differ in length.
    pub fn may_contain_keys<K: AsRef<[u8]>>(&self, keys: &[K], out: &mut [bool]) {
        assert_eq!(keys.len(), out.len(), "one output per key");
        let mut group = [0u64; BATCH_GROUP];
        for (ks, os) in keys.chunks(BATCH_GROUP).zip(out.chunks_mut(BATCH_GROUP)) {
            let hs = &mut group[..ks.len()];
            for (h, k) in hs.iter_mut().zip(ks) {
                *h = super::key_hash(k.as_ref());
                // SAFETY: `lines` is never empty.
                prefetch(unsafe { line_for(&self.lines, *h) });
            }
            self.check_group(hs, os);
        }
    }

    /// Tests a group of hashes whose lines were prefetched.
    #[inline]
    fn check_group(&self, hashes: &[u64], out: &mut [bool]) {
        #[cfg(target_arch = "x86_64")]
        if self.avx2.is_some() {
            // SAFETY: `avx2` is set only if the CPU reported AVX2; `lines` is
            // never empty and k <= MAX_PROBES (30) < 32, both from `Self::new`.
            unsafe { avx2::check_group(&self.lines, self.num_probes, hashes, out) };
            return;
        }
        for (&h, o) in hashes.iter().zip(out.iter_mut()) {
            *o = self.may_contain_portable(h);
        }
    }

    /// Number of 512-bit lines (as stored; 0 for a filter of no keys).
    pub fn num_lines(&self) -> usize {
        self.num_lines
    }

    /// Keys (hashes) the filter was built from.
    pub fn key_count(&self) -> u64 {
        self.key_count
    }

    /// Probes per key.
    pub fn num_probes(&self) -> u32 {
        self.num_probes
    }

    /// Bytes of filter bits in memory (64 for the filter of no keys: its one
    /// zero line).
    pub fn memory_bytes(&self) -> usize {
        self.lines.len() * 64
    }

    /// Fraction of bits set (diagnostic; about one half at the optimum).
    pub fn fill_ratio(&self) -> f64 {
        if self.num_lines == 0 {
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
///
/// # Errors
/// As [`Blocked512Filter::from_hashes`]: `num_probes` outside
/// 1..=[`MAX_PROBES`](super::MAX_PROBES) or `bits_per_key` outside the
/// accepted range.
pub fn build(hashes: &[u64], bits_per_key: f64, num_probes: u32) -> crate::Result<Vec<u8>> {
    let mut out = Vec::new();
    Blocked512Filter::from_hashes(hashes, bits_per_key, num_probes)?.encode_to(&mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_vectors::fixed_hashes;
    use crate::filter::{Filter, FilterPolicy, key_hash};
    use xxhash_rust::xxh3::xxh3_64;

    /// `f`'s answers for `probes` on every probe path this machine can run,
    /// which must all agree: the portable probe; `may_contain` (the AVX2 probe
    /// inlined in a build for an AVX2 CPU, else the AVX2 function chosen for
    /// this k at run time); the scalar dispatch of a CPU without AVX2
    /// (`avx2 = None`; in a build for AVX2 `may_contain` ignores it); the
    /// batch probe with and without AVX2; and the AVX2 functions called
    /// directly, general and chosen for k.
    fn answers_on_every_path(f: &Blocked512Filter, probes: &[u64]) -> Vec<bool> {
        let k = f.num_probes;
        let want: Vec<bool> = probes.iter().map(|&h| f.may_contain_portable(h)).collect();
        let check = |path: &str, got: &[bool]| assert_eq!(got, &want[..], "k={k}: {path}");
        check(
            "may_contain",
            &probes.iter().map(|&h| f.may_contain(h)).collect::<Vec<_>>(),
        );
        let mut out = vec![false; probes.len()];
        f.may_contain_batch(probes, &mut out);
        check("may_contain_batch", &out);
        #[cfg(target_arch = "x86_64")]
        {
            let mut scalar = f.clone();
            scalar.avx2 = None;
            let got: Vec<bool> = probes.iter().map(|&h| scalar.may_contain(h)).collect();
            check("may_contain without AVX2", &got);
            scalar.may_contain_batch(probes, &mut out);
            check("may_contain_batch without AVX2", &out);
            if std::arch::is_x86_feature_detected!("avx2") {
                let probe = avx2::probe_for(k).expect("AVX2 detected");
                // SAFETY: the CPU has AVX2, `lines` is never empty, k <= 30.
                let got: Vec<bool> = probes
                    .iter()
                    .map(|&h| unsafe { avx2::may_contain(&f.lines, k, h) })
                    .collect();
                check("avx2::may_contain", &got);
                // SAFETY: as above; `probe` was chosen for this k.
                let got: Vec<bool> = probes
                    .iter()
                    .map(|&h| unsafe { probe(&f.lines, k, h) })
                    .collect();
                check("avx2::probe_for", &got);
            } else {
                eprintln!("this CPU has no AVX2: only the portable paths ran");
            }
        }
        want
    }

    /// Two-line filters written out word by word, with the production probe's
    /// answers for 256 fixed absent hashes as a bit mask: values copied from
    /// this code's output when the vectors were added, not recomputed. The
    /// test opens the filter from these bytes, so the probe is pinned on its
    /// own; that the builder (from `keys` hashes of seed `0x7a3_0000 + k`)
    /// still writes them is checked too.
    struct RawVector {
        k: u32,
        keys: usize,
        bits_per_key: f64,
        words: [u64; 16],
        absent_mask: [u64; 4],
    }

    #[rustfmt::skip]
    const RAW_VECTORS: [RawVector; 3] = [
        RawVector {
            k: 1,
            keys: 512,
            bits_per_key: 2.0,
            words: [
                0x6622d0d0e8013f32, 0x00eea18a58111d20, 0x4ae962480c843280, 0x3e4d0500f82e2306,
                0x4592501c2f1397cf, 0x7d88e928805c2210, 0xa33927369b596543, 0x9a0582d013e0534c,
                0x04088806c8641e60, 0xac714e01a760c172, 0x12446dc5ee2b557d, 0x3a0d67b842dd200d,
                0x729500c160a82e18, 0xc6a201c9c087ea31, 0xfc207c153421340e, 0x0d62023716981206,
            ],
            absent_mask: [
                0x331826c273bd7124, 0x62342817d45056a1, 0x2fa185cf3c89ab57, 0x5160c019c5091321,
            ],
        },
        RawVector {
            k: 6,
            keys: 150,
            bits_per_key: 6.8,
            words: [
                0xece7bbdf7f751e81, 0xfc712b6c4b5ffaf7, 0xdd1637b9df6dd3cb, 0x2f85fa27f62ff2bf,
                0xe9e55f461bf69ef6, 0x8debd19829f8b76e, 0xa3aceedef8f227c3, 0x2a989daa194ef7ee,
                0xaef8e709199dff5f, 0xc41fdf875f0e7560, 0xee39db884ddae3f7, 0xf799f5f1ec21c589,
                0xde659fd1251af8dd, 0x485ed6b6b373955f, 0xf8be17efeae49cd0, 0x3497720aaff65ad9,
            ],
            absent_mask: [
                0x8008100060000000, 0x0000080008880080, 0x002012200100040c, 0x0400000000800000,
            ],
        },
        RawVector {
            k: 30,
            keys: 96,
            bits_per_key: 10.6,
            words: [
                0xffeffffffffffff7, 0xfff7fffffffffdff, 0xff7fffffffcfefff, 0x9f9fffbfffffffff,
                0xffebffffffffffff, 0xfbffbffffffefff7, 0xfffbfeffffefffff, 0xffffdfffffffff7f,
                0xdeffffffffffffde, 0xfbeffff6ffff7fff, 0xfffffdbfbfbffeff, 0xfbbbfffffffdffef,
                0xfffffffff7ffffd7, 0xdffbfffffdbfffff, 0xfffff6bff5ffffef, 0xfffffffffff5ffff,
            ],
            absent_mask: [
                0x041001400c060208, 0x240ca80800110210, 0x91880800a4001150, 0x0050248b02088943,
            ],
        },
    ];

    #[test]
    fn pinned_raw_lines_probe_alike_on_every_path() {
        let absent = fixed_hashes(0x00ab_5e17, 256);
        for v in &RAW_VECTORS {
            let mut bytes: Vec<u8> = v.words.iter().flat_map(|w| w.to_le_bytes()).collect();
            // units 2, key count, k, hash 1 (XXH3-64), version 1, kind 1.
            bytes.extend_from_slice(&2u64.to_le_bytes());
            bytes.extend_from_slice(&(v.keys as u64).to_le_bytes());
            bytes.extend_from_slice(&[v.k as u8, 1, 1, 1]);
            let Filter::Blocked512(f) = Filter::open(&bytes).unwrap() else {
                panic!("k={}: not a blocked512 filter", v.k)
            };
            let keys = fixed_hashes(0x7a3_0000 + u64::from(v.k), v.keys);
            let found = answers_on_every_path(&f, &keys);
            assert!(found.iter().all(|&a| a), "k={}: a key is missing", v.k);
            let mut mask = [0u64; 4];
            for (i, _) in answers_on_every_path(&f, &absent)
                .iter()
                .enumerate()
                .filter(|(_, a)| **a)
            {
                mask[i / 64] |= 1 << (i % 64);
            }
            assert_eq!(mask, v.absent_mask, "k={}", v.k);
            assert_eq!(
                build(&keys, v.bits_per_key, v.k).unwrap(),
                bytes,
                "k={}: the builder no longer writes the pinned bytes",
                v.k
            );
        }
    }

    /// Filters of 1000 fixed hashes, pinned by their encoding (length, XXH3-64
    /// of the bytes, three raw words: the first, the middle one, the last) and
    /// by the production probe's answers for 4096 fixed absent hashes (how
    /// many pass, the first three that do, XXH3-64 of the answers as 0/1
    /// bytes). Copied from this code's output when the vectors were added.
    struct DigestVector {
        bits_per_key: f64,
        k: u32,
        len: usize,
        xxh3: u64,
        words: [(usize, u64); 3],
        hits: usize,
        first_hits: [usize; 3],
        answers_xxh3: u64,
    }

    const DIGEST_VECTORS: [DigestVector; 5] = [
        DigestVector {
            bits_per_key: 2.0,
            k: 1,
            len: 276,
            xxh3: 0xe0d476405fec8073,
            words: [
                (0, 0x04347d8855471c6a),
                (16, 0x3011040820322d3e),
                (31, 0xcd0b04918a03cd24),
            ],
            hits: 1590,
            first_hits: [1, 3, 7],
            answers_xxh3: 0x4cd1f8789b8e7a10,
        },
        DigestVector {
            bits_per_key: 10.0,
            k: 6,
            len: 1300,
            xxh3: 0x7f3226bba16e0dec,
            words: [
                (0, 0xeb2e6b884fd71d2f),
                (80, 0x6110090ab80680b4),
                (159, 0xdf7bac37a945cc5d),
            ],
            hits: 34,
            first_hits: [222, 416, 464],
            answers_xxh3: 0x7b99e82512dcbe42,
        },
        DigestVector {
            bits_per_key: 8.0,
            k: 9,
            len: 1044,
            xxh3: 0x1a29e01442ca0b9c,
            words: [
                (0, 0xffee6b8acfd71d3f),
                (64, 0x6b10191bb93690b4),
                (127, 0xff7baf7fe9e5fcff),
            ],
            hits: 123,
            first_hits: [15, 61, 84],
            answers_xxh3: 0x8261f22055530311,
        },
        DigestVector {
            bits_per_key: 12.0,
            k: 17,
            len: 1556,
            xxh3: 0xba4768c8941bf37f,
            words: [
                (0, 0xffea7fae5bff9d2f),
                (96, 0x6318bdf3bfb78bf4),
                (191, 0xfff77fefbff7de77),
            ],
            hits: 47,
            first_hits: [15, 106, 246],
            answers_xxh3: 0xc097cd2b35cf8a59,
        },
        DigestVector {
            bits_per_key: 8.0,
            k: 30,
            len: 1044,
            xxh3: 0x5a16e653896f3555,
            words: [
                (0, 0xffffffffffffffff),
                (64, 0xfffffffbffb7bbf7),
                (127, 0xffffffffffffffff),
            ],
            hits: 1981,
            first_hits: [1, 5, 6],
            answers_xxh3: 0xb7824511f6c5abe8,
        },
    ];

    #[test]
    fn pinned_filters_encode_and_probe_alike_on_every_path() {
        let keys = fixed_hashes(0x0b10_0f11_7e25, 1000);
        let absent = fixed_hashes(0x00ab_5e17, 4096);
        for v in &DIGEST_VECTORS {
            let k = v.k;
            let built = Blocked512Filter::from_hashes(&keys, v.bits_per_key, k).unwrap();
            let mut bytes = Vec::new();
            built.encode_to(&mut bytes);
            assert_eq!(bytes.len(), v.len, "k={k}");
            assert_eq!(xxh3_64(&bytes), v.xxh3, "k={k}");
            for (i, w) in v.words {
                let at = &bytes[i * 8..i * 8 + 8];
                assert_eq!(
                    u64::from_le_bytes(at.try_into().unwrap()),
                    w,
                    "k={k} word {i}"
                );
            }
            let Filter::Blocked512(opened) = Filter::open(&bytes).unwrap() else {
                panic!("k={k}: not a blocked512 filter")
            };
            for f in [&built, &opened] {
                let found = answers_on_every_path(f, &keys);
                assert!(found.iter().all(|&a| a), "k={k}: a key is missing");
                let answers = answers_on_every_path(f, &absent);
                let hits: Vec<usize> = (0..answers.len()).filter(|&i| answers[i]).collect();
                assert_eq!(hits.len(), v.hits, "k={k}");
                assert_eq!(hits[..3], v.first_hits, "k={k}");
                let bytes: Vec<u8> = answers.iter().map(|&a| u8::from(a)).collect();
                assert_eq!(xxh3_64(&bytes), v.answers_xxh3, "k={k}");
            }
        }
    }

    /// The AVX2 builder and the scalar one, each run explicitly, set the same
    /// bits for many key counts, bits/key and k (every k the format allows).
    #[test]
    fn avx2_and_scalar_builders_write_identical_lines() {
        let keys = fixed_hashes(0x00b1_d5e7, 20_000);
        let mut cases = 0;
        for k in 1..=crate::filter::MAX_PROBES {
            for (n, bits) in [
                (1, 10.0),
                (7, 2.0),
                (100, 6.0),
                (1000, 10.0),
                (4999, 16.0),
                (20_000, 9.5),
            ] {
                let lines = lines_for(n, bits);
                let mut scalar = vec![Line::default(); lines];
                set_bits_scalar(&mut scalar, &keys[..n], k);
                let mut via = vec![Line::default(); lines];
                set_bits(&mut via, &keys[..n], k);
                assert_eq!(via, scalar, "n={n} bits={bits} k={k}: set_bits");
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    let mut simd = vec![Line::default(); lines];
                    // SAFETY: the CPU has AVX2; k <= MAX_PROBES.
                    unsafe { avx2::set_bits(&mut simd, &keys[..n], k) };
                    assert_eq!(simd, scalar, "n={n} bits={bits} k={k}: avx2::set_bits");
                    cases += 1;
                }
            }
        }
        if cases == 0 {
            eprintln!("this CPU has no AVX2: only the scalar builder ran");
        }
    }

    #[test]
    fn lines_are_cache_aligned() {
        let f = Blocked512Filter::from_hashes(&[1, 2, 3], 10.0, 6).unwrap();
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
        let bytes = FilterPolicy::blocked512(10.0).build(&[]).unwrap();
        let f = Filter::open(&bytes).unwrap();
        assert!(f.is_usable());
        assert!(!f.may_contain(key_hash(b"x")));
        assert_eq!(f.memory_bytes(), 64, "one zero line");
        let Filter::Blocked512(b) = &f else {
            panic!("not blocked512")
        };
        assert_eq!(b.num_lines(), 0);
        assert_eq!(b.fill_ratio(), 0.0);
        let mut again = Vec::new();
        b.encode_to(&mut again);
        assert_eq!(again, bytes, "re-encodes with no lines");
        for i in 0..1000u64 {
            let h = key_hash(&i.to_le_bytes());
            assert!(!b.may_contain(h));
            assert!(!b.may_contain_portable(h));
        }
        let hs: Vec<u64> = (0..200u64).map(|i| key_hash(&i.to_le_bytes())).collect();
        let mut out = vec![true; hs.len()];
        b.may_contain_batch(&hs, &mut out);
        assert!(out.iter().all(|&x| !x));
    }

    #[test]
    fn one_key() {
        let h = key_hash(b"only");
        let f = Filter::open(&FilterPolicy::blocked512(10.0).build(&[h]).unwrap()).unwrap();
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
            let f = Blocked512Filter::from_hashes(&keys[..5000], 6.0, k).unwrap();
            for &h in &keys {
                assert_eq!(f.may_contain(h), f.may_contain_portable(h), "k={k}");
            }
            assert!(keys[..5000].iter().all(|&h| f.may_contain(h)));
        }
    }

    #[test]
    fn batch_agrees_with_single() {
        // 5000 keys: 78 full groups and a partial one.
        let raw: Vec<[u8; 8]> = (0..5000u64).map(|i| i.to_le_bytes()).collect();
        let keys: Vec<u64> = raw.iter().map(|k| key_hash(k)).collect();
        for k in [1, 5, 6, 9, 12, 30] {
            let f = Blocked512Filter::from_hashes(&keys[..2500], 8.0, k).unwrap();
            let mut out = vec![false; keys.len()];
            f.may_contain_batch(&keys, &mut out);
            let mut by_key = vec![false; keys.len()];
            f.may_contain_keys(&raw, &mut by_key);
            for (i, h) in keys.iter().enumerate() {
                assert_eq!(out[i], f.may_contain(*h), "k={k} key {i}");
                assert_eq!(by_key[i], out[i], "k={k} key {i}");
            }
            assert!(out[..2500].iter().all(|&b| b), "k={k}");
            assert!(out[2500..].iter().any(|&b| !b), "k={k}");
            // The scalar dispatch (a CPU without AVX2) answers alike.
            #[cfg(target_arch = "x86_64")]
            {
                let mut scalar = f.clone();
                scalar.avx2 = None;
                let mut s_out = vec![false; keys.len()];
                scalar.may_contain_batch(&keys, &mut s_out);
                assert_eq!(s_out, out, "k={k}");
                scalar.may_contain_keys(&raw, &mut s_out);
                assert_eq!(s_out, out, "k={k}");
                assert!(
                    keys.iter()
                        .zip(&out)
                        .all(|(&h, &o)| scalar.may_contain(h) == o)
                );
            }
        }
        let empty = Blocked512Filter::from_hashes(&[], 10.0, 6).unwrap();
        let mut one = [true];
        empty.may_contain_keys(&[b"x"], &mut one);
        assert!(!one[0]);
    }

    #[test]
    fn wrong_payload_length_is_an_error() {
        let mut bytes = FilterPolicy::blocked512(10.0).build(&[1, 2, 3]).unwrap();
        bytes.remove(0);
        assert!(Filter::open(&bytes).is_err());
    }
}
