//! The comparison baseline: a classic whole-array Bloom filter.
//!
//! `k` bit positions spread over the whole array by 64-bit double hashing,
//! `g_i = a + i·b` with `a` the key's XXH3-64 and `b` an odd remix of it,
//! each mapped to `0..m` by 64-bit fastrange (`(g · m) >> 64`). With
//! `k ≈ 0.69 · bits/key` its FPR follows the textbook `(1 - e^(-k/b))^k`
//! (0.819% at 10 bits/key): lower than the blocked filter's 0.966%, at the
//! price of up to `k` cache misses per probe. The probe exits at the first
//! clear bit, as classic implementations do.

use std::sync::Arc;

use super::{FILTER_VERSION, FilterDecodeError, FilterKind, FilterTrailer, HASH_XXH3_64};

/// 64-bit golden ratio, used to derive the second hash.
const GOLDEN64: u64 = 0x9e37_79b9_7f4a_7c15;

/// An opened (or freshly built) classic Bloom filter.
#[derive(Clone, Debug)]
pub struct BloomFilter {
    /// Shared by every clone.
    words: Arc<[u64]>,
    num_bits: u64,
    key_count: u64,
    /// In `1..=MAX_PROBES`: checked by [`BloomFilter::from_hashes`] and, for
    /// a stored filter, by [`super::Filter::open`].
    num_probes: u32,
}

#[inline(always)]
fn fastrange64(x: u64, m: u64) -> u64 {
    ((u128::from(x) * u128::from(m)) >> 64) as u64
}

#[inline(always)]
fn second_hash(h: u64) -> u64 {
    h.rotate_left(32).wrapping_mul(GOLDEN64) | 1
}

/// Number of bits for `keys` keys at `bits_per_key` (at least 64 when there is
/// a key). `bits_per_key` is clamped as
/// [`FilterPolicy::new`](super::FilterPolicy::new) clamps it (NaN counts as
/// [`MIN_BITS_PER_KEY`](super::MIN_BITS_PER_KEY)).
pub fn bits_for(keys: usize, bits_per_key: f64) -> u64 {
    if keys == 0 {
        return 0;
    }
    let bits_per_key = super::clamp_bits(bits_per_key);
    ((keys as f64 * bits_per_key).ceil() as u64).max(64)
}

impl BloomFilter {
    /// Builds the filter in memory from key hashes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) unless
    /// `num_probes` is in 1..=[`MAX_PROBES`](super::MAX_PROBES) and
    /// `bits_per_key` in
    /// [`MIN_BITS_PER_KEY`](super::MIN_BITS_PER_KEY)..=[`MAX_BITS_PER_KEY`](super::MAX_BITS_PER_KEY).
    /// ([`FilterPolicy`](super::FilterPolicy) clamps both instead.)
    pub fn from_hashes(hashes: &[u64], bits_per_key: f64, num_probes: u32) -> crate::Result<Self> {
        super::check_params(FilterKind::Bloom, bits_per_key, num_probes)?;
        let num_bits = bits_for(hashes.len(), bits_per_key);
        let mut words = vec![0u64; num_bits.div_ceil(64) as usize].into_boxed_slice();
        if num_bits > 0 {
            for &h in hashes {
                let b = second_hash(h);
                let mut g = h;
                for _ in 0..num_probes {
                    let pos = fastrange64(g, num_bits);
                    words[(pos >> 6) as usize] |= 1u64 << (pos & 63);
                    g = g.wrapping_add(b);
                }
            }
        }
        Ok(BloomFilter {
            words: words.into(),
            num_bits,
            key_count: hashes.len() as u64,
            num_probes,
        })
    }

    /// Appends the serialized form (words little-endian, then the trailer).
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.words.len() * 8 + super::FILTER_TRAILER_LEN);
        for w in self.words.iter() {
            out.extend_from_slice(&w.to_le_bytes());
        }
        FilterTrailer {
            units: self.num_bits,
            key_count: self.key_count,
            num_probes: u8::try_from(self.num_probes).expect("k <= MAX_PROBES"),
            hash: HASH_XXH3_64,
            version: FILTER_VERSION,
            kind: FilterKind::Bloom.byte(),
        }
        .encode_to(out);
    }

    /// Rebuilds the in-memory filter from a payload and its decoded trailer.
    /// The caller ([`super::Filter::open`]) has checked that the stored k is
    /// in 1..=[`MAX_PROBES`](super::MAX_PROBES).
    pub(crate) fn from_parts(payload: &[u8], t: &FilterTrailer) -> Result<Self, FilterDecodeError> {
        if t.units.div_ceil(64).checked_mul(8) != Some(payload.len() as u64) {
            return Err(FilterDecodeError(format!(
                "bloom filter claims {} bits but has {} payload bytes",
                t.units,
                payload.len()
            )));
        }
        if t.units == 0 && t.key_count != 0 {
            return Err(FilterDecodeError(format!(
                "bloom filter has no bits for {} keys",
                t.key_count
            )));
        }
        let words = payload
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8-byte chunk")))
            .collect();
        Ok(BloomFilter {
            words,
            num_bits: t.units,
            key_count: t.key_count,
            num_probes: u32::from(t.num_probes),
        })
    }

    /// False only if `hash` was certainly not added.
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        let m = self.num_bits;
        if m == 0 {
            return false;
        }
        let b = second_hash(hash);
        let mut g = hash;
        for _ in 0..self.num_probes {
            let pos = fastrange64(g, m);
            if self.words[(pos >> 6) as usize] & (1u64 << (pos & 63)) == 0 {
                return false;
            }
            g = g.wrapping_add(b);
        }
        true
    }

    /// Starts loading the words of the first two probes of `hash` (an absent
    /// key stops at one of them three times in four).
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let m = self.num_bits;
        if m > 0 {
            let first = fastrange64(hash, m);
            let second = fastrange64(hash.wrapping_add(second_hash(hash)), m);
            super::prefetch_read(&self.words[(first >> 6) as usize]);
            super::prefetch_read(&self.words[(second >> 6) as usize]);
        }
    }

    /// Probes many hashes; `out[i]` receives `may_contain(hashes[i])`. The
    /// words of the first two probes of the key 8 positions ahead are
    /// prefetched (an absent key stops at one of them three times in four),
    /// so the baseline gets batching too when it is compared with
    /// [`super::Blocked512Filter::may_contain_batch`]. (Prefetching groups of
    /// keys, as the blocked filter does, measured slower for this filter: it
    /// has twice the lines in flight per key.)
    ///
    /// # Panics
    /// If `hashes` and `out` differ in length.
    pub fn may_contain_batch(&self, hashes: &[u64], out: &mut [bool]) {
        assert_eq!(hashes.len(), out.len(), "one output per hash");
        const AHEAD: usize = 8;
        let m = self.num_bits;
        for (i, (&h, o)) in hashes.iter().zip(out.iter_mut()).enumerate() {
            if m > 0
                && let Some(&next) = hashes.get(i + AHEAD)
            {
                let first = fastrange64(next, m);
                let second = fastrange64(next.wrapping_add(second_hash(next)), m);
                super::prefetch_read(&self.words[(first >> 6) as usize]);
                super::prefetch_read(&self.words[(second >> 6) as usize]);
            }
            *o = self.may_contain(h);
        }
    }

    /// Number of bits.
    pub fn num_bits(&self) -> u64 {
        self.num_bits
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
        self.words.len() * 8
    }
}

/// Builds the serialized filter over `hashes`.
///
/// # Errors
/// As [`BloomFilter::from_hashes`]: `num_probes` outside
/// 1..=[`MAX_PROBES`](super::MAX_PROBES) or `bits_per_key` outside the
/// accepted range.
pub fn build(hashes: &[u64], bits_per_key: f64, num_probes: u32) -> crate::Result<Vec<u8>> {
    let mut out = Vec::new();
    BloomFilter::from_hashes(hashes, bits_per_key, num_probes)?.encode_to(&mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_vectors::fixed_hashes;
    use crate::filter::{Filter, FilterPolicy, key_hash};
    use xxhash_rust::xxh3::xxh3_64;

    /// Filters of 1000 fixed hashes at `(bits per key, k)`, pinned by their
    /// encoding's length and XXH3-64 and by the answers for 4096 fixed absent
    /// hashes (how many pass, the first three that do, XXH3-64 of the answers
    /// as 0/1 bytes), copied from this code's output when they were added.
    #[allow(clippy::type_complexity)]
    const PINNED: [((f64, u32), usize, u64, usize, [usize; 3], u64); 3] = [
        (
            (2.0, 1),
            276,
            0xbae34433a75e4b7a,
            1630,
            [2, 7, 9],
            0xe3c2ec8fd27a6fc9,
        ),
        (
            (10.0, 6),
            1276,
            0xa1df26e4b0dcdbf8,
            24,
            [92, 113, 364],
            0x5b40e5b1a6761288,
        ),
        (
            (8.0, 30),
            1020,
            0x5bea19bad2fd18bb,
            1983,
            [0, 4, 5],
            0xd4393d611295c770,
        ),
    ];

    #[test]
    fn pinned_filters_encode_and_probe() {
        let keys = fixed_hashes(0x0b10_0f11_7e25, 1000);
        let absent = fixed_hashes(0x00ab_5e17, 4096);
        for ((bits, k), len, digest, hits, first_hits, answers_digest) in PINNED {
            let bytes = build(&keys, bits, k).unwrap();
            assert_eq!(bytes.len(), len, "k={k}");
            assert_eq!(xxh3_64(&bytes), digest, "k={k}");
            let Filter::Bloom(f) = Filter::open(&bytes).unwrap() else {
                panic!("k={k}: not a bloom filter")
            };
            assert!(keys.iter().all(|&h| f.may_contain(h)), "k={k}");
            let answers: Vec<bool> = absent.iter().map(|&h| f.may_contain(h)).collect();
            let mut batch = vec![false; absent.len()];
            f.may_contain_batch(&absent, &mut batch);
            assert_eq!(batch, answers, "k={k}");
            let got: Vec<usize> = (0..answers.len()).filter(|&i| answers[i]).collect();
            assert_eq!(got.len(), hits, "k={k}");
            assert_eq!(got[..3], first_hits, "k={k}");
            let as_bytes: Vec<u8> = answers.iter().map(|&a| u8::from(a)).collect();
            assert_eq!(xxh3_64(&as_bytes), answers_digest, "k={k}");
        }
    }

    #[test]
    fn batch_agrees_with_single() {
        let keys: Vec<u64> = (0..5000u64).map(|i| key_hash(&i.to_le_bytes())).collect();
        let f = BloomFilter::from_hashes(&keys[..2500], 6.0, 4).unwrap();
        let mut out = vec![false; keys.len()];
        f.may_contain_batch(&keys, &mut out);
        for (h, o) in keys.iter().zip(&out) {
            assert_eq!(*o, f.may_contain(*h));
        }
        assert!(out[..2500].iter().all(|&b| b));
        assert!(out[2500..].iter().any(|&b| !b));
        let empty = BloomFilter::from_hashes(&[], 10.0, 7).unwrap();
        let mut one = [true];
        empty.may_contain_batch(&[1], &mut one);
        assert!(!one[0]);
    }

    #[test]
    fn roundtrip_and_members() {
        let keys: Vec<u64> = (0..1000u32).map(|i| key_hash(&i.to_be_bytes())).collect();
        let bytes = FilterPolicy::bloom(10.0).build(&keys).unwrap();
        let f = Filter::open(&bytes).unwrap();
        assert_eq!(f.kind(), Some(FilterKind::Bloom));
        assert_eq!(f.num_probes(), 7);
        assert!(keys.iter().all(|&h| f.may_contain(h)));
        assert_eq!(f.key_count(), 1000);
    }

    #[test]
    fn empty_and_one() {
        let f = Filter::open(&FilterPolicy::bloom(10.0).build(&[]).unwrap()).unwrap();
        assert!(!f.may_contain(42));
        let f = Filter::open(&FilterPolicy::bloom(10.0).build(&[42]).unwrap()).unwrap();
        assert!(f.may_contain(42));
        assert_eq!(f.memory_bytes(), 8);
    }

    #[test]
    fn bad_length_is_error() {
        let mut bytes = FilterPolicy::bloom(10.0).build(&[1, 2, 3]).unwrap();
        bytes.insert(0, 0);
        assert!(Filter::open(&bytes).is_err());
    }
}
