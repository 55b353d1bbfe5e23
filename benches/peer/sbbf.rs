//! Parquet's split block Bloom filter (SBBF), as a benchmark peer of
//! blocked512 only: not part of the library, never written to disk.
//!
//! Layout and hashing as the Parquet format specifies it (BloomFilter.md) and
//! as its reference implementations do it (Impala/Kudu
//! `block_bloom_filter_avx2.cc`, Arrow's `bloom_filter_avx2.cc`): 256-bit
//! blocks of eight 32-bit words; the block is `((hash >> 32) * num_blocks) >>
//! 32`; word `i` gets one bit, `(lower32(hash) * SALT[i]) >> 27`. So k = 8
//! always, one bit per word. AVX2: one `vpmulld` by the salt vector, a shift
//! by 27, `vpsllvd` of ones, then an OR into the block (insert) or a
//! `vptest` (probe). Insert is a plain loop as in the reference (no
//! prefetch); the batch probe prefetches groups of 64 blocks as blocked512's
//! does, so the batched rows compare the filters and not the batching.

#![allow(dead_code)]

/// Parquet's eight salt constants.
pub const SALT: [u32; 8] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
];

/// One 256-bit block, aligned as the reference's `_mm256_load_si256` needs.
#[repr(C, align(32))]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Block(pub [u32; 8]);

#[derive(Clone)]
pub struct Sbbf {
    blocks: Vec<Block>,
    /// The CPU has AVX2 (detected when the filter is made).
    avx2: bool,
}

/// Blocks for `keys` keys at `bits_per_key`: `ceil(n·b/256)`, at least one.
pub fn num_blocks(keys: usize, bits_per_key: f64) -> usize {
    ((keys as f64 * bits_per_key / 256.0).ceil() as usize).max(1)
}

#[inline(always)]
fn block_index(hash: u64, n: usize) -> usize {
    (((hash >> 32) * n as u64) >> 32) as usize
}

#[inline(always)]
fn has_avx2() -> bool {
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    return true;
    #[cfg(all(target_arch = "x86_64", not(target_feature = "avx2")))]
    return std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::*;

    /// The reference's `MakeMask`: one bit per 32-bit word.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub fn make_mask(key: u32) -> __m256i {
        let salt = _mm256_setr_epi32(
            super::SALT[0] as i32,
            super::SALT[1] as i32,
            super::SALT[2] as i32,
            super::SALT[3] as i32,
            super::SALT[4] as i32,
            super::SALT[5] as i32,
            super::SALT[6] as i32,
            super::SALT[7] as i32,
        );
        let h = _mm256_mullo_epi32(salt, _mm256_set1_epi32(key as i32));
        _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_srli_epi32::<27>(h))
    }

    /// # Safety
    /// The CPU must support AVX2; `blocks` must not be empty.
    #[target_feature(enable = "avx2")]
    pub unsafe fn insert_all(blocks: &mut [super::Block], hashes: &[u64]) {
        let n = blocks.len();
        for &h in hashes {
            let i = super::block_index(h, n);
            // SAFETY: block_index < n; a Block is 32-byte aligned and 32 bytes.
            unsafe {
                let p = blocks.as_mut_ptr().add(i).cast::<__m256i>();
                _mm256_store_si256(
                    p,
                    _mm256_or_si256(_mm256_load_si256(p), make_mask(h as u32)),
                );
            }
        }
    }

    /// # Safety
    /// The CPU must support AVX2; `blocks` must not be empty.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn find(blocks: &[super::Block], h: u64) -> bool {
        let i = super::block_index(h, blocks.len());
        // SAFETY: block_index < n; a Block is 32-byte aligned and 32 bytes.
        let b = unsafe { _mm256_load_si256(blocks.as_ptr().add(i).cast()) };
        _mm256_testc_si256(b, make_mask(h as u32)) != 0
    }

    /// # Safety
    /// As [`find`].
    #[target_feature(enable = "avx2")]
    pub unsafe fn find_group(blocks: &[super::Block], hashes: &[u64], out: &mut [bool]) {
        for (&h, o) in hashes.iter().zip(out.iter_mut()) {
            // SAFETY: the caller's contract.
            *o = unsafe { find(blocks, h) };
        }
    }
}

impl Sbbf {
    /// Builds the filter over pre-hashed keys (AVX2 where the CPU has it).
    pub fn from_hashes(hashes: &[u64], bits_per_key: f64) -> Self {
        let mut f = Self::empty(hashes.len(), bits_per_key);
        #[cfg(target_arch = "x86_64")]
        if f.avx2 {
            // SAFETY: AVX2 detected; at least one block.
            unsafe { avx2::insert_all(&mut f.blocks, hashes) };
            return f;
        }
        f.insert_scalar(hashes);
        f
    }

    /// The same filter built by the scalar loop.
    pub fn from_hashes_scalar(hashes: &[u64], bits_per_key: f64) -> Self {
        let mut f = Self::empty(hashes.len(), bits_per_key);
        f.insert_scalar(hashes);
        f
    }

    fn empty(keys: usize, bits_per_key: f64) -> Self {
        Sbbf {
            blocks: vec![Block::default(); num_blocks(keys, bits_per_key)],
            avx2: has_avx2(),
        }
    }

    fn insert_scalar(&mut self, hashes: &[u64]) {
        let n = self.blocks.len();
        for &h in hashes {
            let b = &mut self.blocks[block_index(h, n)].0;
            let key = h as u32;
            for (w, s) in b.iter_mut().zip(SALT) {
                *w |= 1 << (key.wrapping_mul(s) >> 27);
            }
        }
    }

    #[inline]
    pub fn may_contain(&self, h: u64) -> bool {
        #[cfg(target_arch = "x86_64")]
        if has_avx2() && self.avx2 {
            // SAFETY: AVX2 detected; at least one block.
            return unsafe { avx2::find(&self.blocks, h) };
        }
        self.may_contain_scalar(h)
    }

    /// Branch-free scalar probe.
    #[inline]
    pub fn may_contain_scalar(&self, h: u64) -> bool {
        let b = &self.blocks[block_index(h, self.blocks.len())].0;
        let key = h as u32;
        let mut all = 1u32;
        for (w, s) in b.iter().zip(SALT) {
            all &= w >> (key.wrapping_mul(s) >> 27);
        }
        all & 1 != 0
    }

    /// `out[i] = may_contain(hashes[i])`, in groups of 64 whose blocks are
    /// prefetched before any is tested (as blocked512's batch probe).
    pub fn may_contain_batch(&self, hashes: &[u64], out: &mut [bool]) {
        assert_eq!(hashes.len(), out.len());
        let n = self.blocks.len();
        for (hs, os) in hashes.chunks(64).zip(out.chunks_mut(64)) {
            for &h in hs {
                prefetch(&self.blocks[block_index(h, n)]);
            }
            #[cfg(target_arch = "x86_64")]
            if self.avx2 {
                // SAFETY: AVX2 detected; at least one block.
                unsafe { avx2::find_group(&self.blocks, hs, os) };
                continue;
            }
            for (&h, o) in hs.iter().zip(os.iter_mut()) {
                *o = self.may_contain_scalar(h);
            }
        }
    }

    pub fn memory_bytes(&self) -> usize {
        self.blocks.len() * 32
    }

    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }
}

#[inline(always)]
fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint and never faults.
    unsafe {
        core::arch::x86_64::_mm_prefetch(
            (x as *const T).cast::<i8>(),
            core::arch::x86_64::_MM_HINT_T0,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
