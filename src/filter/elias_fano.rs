//! Elias–Fano coding of a sorted sequence of integers, with successor
//! queries: the container of the [Grafite](super::range) range filter.
//!
//! `n` values below `universe` are split into `low_bits` low bits each,
//! packed in one bit array, and a high part `v >> low_bits`, written in unary
//! into the *upper* bit array: value `i` sets bit `high(v_i) + i`. With
//! `low_bits = ⌊log2(universe / n)⌋` the whole costs at most
//! `n · (2 + low_bits)` bits, within 2 bits per value of the information
//! bound. A successor query jumps to the bucket of its high part through a
//! sample of every 256th bucket start (rebuilt when the bytes are
//! opened, never stored) and scans forward.

/// Every this many buckets, the position in the upper bits where the bucket
/// starts is sampled, so a query scans at most this many zeros (and the ones
/// between them) to reach its bucket.
const SAMPLE: u64 = 256;

/// A sorted sequence of `u64` values below a universe, Elias–Fano coded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EliasFano {
    len: u64,
    universe: u64,
    low_bits: u32,
    low: Vec<u64>,
    upper: Vec<u64>,
    /// `samples[j]`: the position in `upper` where bucket `j * SAMPLE` starts.
    samples: Vec<u64>,
}

/// Why bytes do not decode as an [`EliasFano`] sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// `⌊log2(universe / len)⌋`, and for an empty sequence `⌊log2(universe)⌋`,
/// so that its upper bits are two, not one per point of the universe.
fn low_bits_for(len: u64, universe: u64) -> u32 {
    let len = len.max(1);
    if universe <= len {
        0
    } else {
        (universe / len).ilog2()
    }
}

fn words(bits: u64) -> usize {
    bits.div_ceil(64) as usize
}

impl EliasFano {
    /// Codes `values`, which must be sorted (non-decreasing) and each below
    /// `universe`. `None` when they are not.
    pub fn new(values: &[u64], universe: u64) -> Option<EliasFano> {
        if values.windows(2).any(|w| w[0] > w[1]) || values.last().is_some_and(|&v| v >= universe) {
            return None;
        }
        let len = values.len() as u64;
        let low_bits = low_bits_for(len, universe);
        let upper_bits = len + (universe >> low_bits) + 1;
        let mut low = vec![0u64; words(len * u64::from(low_bits))];
        let mut upper = vec![0u64; words(upper_bits)];
        for (i, &v) in values.iter().enumerate() {
            let i = i as u64;
            if low_bits > 0 {
                set_bits(&mut low, i * u64::from(low_bits), low_bits, v);
            }
            let pos = (v >> low_bits) + i;
            upper[(pos / 64) as usize] |= 1 << (pos % 64);
        }
        let mut ef = EliasFano {
            len,
            universe,
            low_bits,
            low,
            upper,
            samples: Vec::new(),
        };
        ef.samples = ef
            .build_samples()
            .expect("a sequence just coded is well formed");
        Some(ef)
    }

    /// How many values.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bound every value is below.
    pub fn universe(&self) -> u64 {
        self.universe
    }

    /// Bytes of the coded bits (what [`Self::encode`] writes past its header).
    pub fn coded_bytes(&self) -> usize {
        8 * (self.low.len() + self.upper.len())
    }

    /// Bytes held in memory, samples included.
    pub fn memory_bytes(&self) -> usize {
        self.coded_bytes() + 8 * self.samples.len()
    }

    /// The smallest value ≥ `x`, if any.
    pub fn successor(&self, x: u64) -> Option<u64> {
        if self.len == 0 || x >= self.universe {
            return None;
        }
        let bucket = x >> self.low_bits;
        let sample = (bucket / SAMPLE) as usize;
        let mut pos = self.samples[sample];
        let mut zeros = sample as u64 * SAMPLE;
        // Walk to the start of `bucket`: past `bucket - zeros` more zeros.
        while zeros < bucket {
            let (w, b) = ((pos / 64) as usize, pos % 64);
            let word = !self.upper[w] >> b;
            let free = 64 - b;
            let zeros_here = u64::from(word.count_ones()).min(free);
            if zeros + zeros_here < bucket || zeros_here == 0 {
                zeros += zeros_here;
                pos += free;
                continue;
            }
            // The (bucket - zeros)-th zero of this word, counted from bit b.
            let nth = bucket - zeros - 1;
            pos += select_in_word(word, nth) + 1;
            zeros = bucket;
        }
        // Ones from `pos` on are the values from index `pos - bucket`, in order.
        let mut index = pos - bucket;
        let mut high = bucket;
        while index < self.len {
            let (w, b) = ((pos / 64) as usize, pos % 64);
            let word = self.upper[w] >> b;
            if word & 1 == 1 {
                let v = (high << self.low_bits) | self.low_value(index);
                if v >= x {
                    return Some(v);
                }
                index += 1;
                pos += 1;
            } else if word == 0 {
                // No ones left in this word: skip its zeros, one bucket each.
                high += 64 - b;
                pos += 64 - b;
            } else {
                let z = u64::from(word.trailing_zeros());
                high += z;
                pos += z;
            }
        }
        None
    }

    /// Whether some value lies in `lo..=hi`.
    pub fn any_in(&self, lo: u64, hi: u64) -> bool {
        lo <= hi && self.successor(lo).is_some_and(|v| v <= hi)
    }

    fn low_value(&self, index: u64) -> u64 {
        if self.low_bits == 0 {
            0
        } else {
            get_bits(&self.low, index * u64::from(self.low_bits), self.low_bits)
        }
    }

    /// The bucket-start samples, after checking that the upper bits hold
    /// exactly `len` ones and enough zeros for every bucket of the universe.
    fn build_samples(&self) -> Result<Vec<u64>, Malformed> {
        let buckets = (self.universe >> self.low_bits) + 1;
        let mut samples = Vec::with_capacity((buckets / SAMPLE + 1) as usize);
        samples.push(0);
        let (mut ones, mut zeros) = (0u64, 0u64);
        for (w, &word) in self.upper.iter().enumerate() {
            let pos0 = w as u64 * 64;
            ones += u64::from(word.count_ones());
            let mut z = !word;
            while z != 0 {
                let b = u64::from(z.trailing_zeros());
                z &= z - 1;
                zeros += 1;
                if zeros % SAMPLE == 0 && zeros < buckets {
                    samples.push(pos0 + b + 1);
                }
            }
        }
        if ones != self.len {
            return Err(Malformed("the upper bits hold another number of values"));
        }
        if zeros < buckets {
            return Err(Malformed(
                "the upper bits end before the universe's last bucket",
            ));
        }
        Ok(samples)
    }

    /// Appends the coded sequence: `len` u64, `universe` u64, then the low
    /// and upper bit arrays as u64 words, little-endian.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.universe.to_le_bytes());
        for w in self.low.iter().chain(&self.upper) {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    /// Decodes what [`Self::encode`] wrote, which must be all of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<EliasFano, Malformed> {
        let word = |i: usize| -> u64 {
            u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes"))
        };
        if bytes.len() < 16 || !bytes.len().is_multiple_of(8) {
            return Err(Malformed("not a whole number of words"));
        }
        let (len, universe) = (word(0), word(1));
        let low_bits = low_bits_for(len, universe);
        let low_words = len
            .checked_mul(u64::from(low_bits))
            .map(|b| b.div_ceil(64))
            .ok_or(Malformed("value count out of range"))?;
        let upper_words = len
            .checked_add(universe >> low_bits)
            .and_then(|b| b.checked_add(1))
            .map(|b| b.div_ceil(64))
            .ok_or(Malformed("value count out of range"))?;
        let have = (bytes.len() / 8 - 2) as u64;
        if low_words.checked_add(upper_words) != Some(have) {
            return Err(Malformed("its length does not match its value count"));
        }
        let all: Vec<u64> = (2..bytes.len() / 8).map(word).collect();
        let (low, upper) = all.split_at(low_words as usize);
        let mut ef = EliasFano {
            len,
            universe,
            low_bits,
            low: low.to_vec(),
            upper: upper.to_vec(),
            samples: Vec::new(),
        };
        ef.samples = ef.build_samples()?;
        // Bits past the last value are never read; the last value itself
        // must be below the universe for the queries' arithmetic.
        if let Some(last) = ef.last()
            && last >= universe
        {
            return Err(Malformed("a value past the universe"));
        }
        Ok(ef)
    }

    /// The largest value.
    fn last(&self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let (w, word) = self
            .upper
            .iter()
            .enumerate()
            .rev()
            .find(|(_, w)| **w != 0)?;
        let pos = w as u64 * 64 + 63 - u64::from(word.leading_zeros());
        let high = pos - (self.len - 1);
        Some((high << self.low_bits) | self.low_value(self.len - 1))
    }
}

/// The position of the `n`-th (0-based) set bit of `word`; `n` is below its
/// number of ones.
fn select_in_word(mut word: u64, n: u64) -> u64 {
    for _ in 0..n {
        word &= word - 1;
    }
    u64::from(word.trailing_zeros())
}

fn set_bits(words: &mut [u64], at: u64, bits: u32, value: u64) {
    let v = value & ((1u64 << bits) - 1);
    let (w, b) = ((at / 64) as usize, (at % 64) as u32);
    words[w] |= v << b;
    if b + bits > 64 {
        words[w + 1] |= v >> (64 - b);
    }
}

fn get_bits(words: &[u64], at: u64, bits: u32) -> u64 {
    let (w, b) = ((at / 64) as usize, (at % 64) as u32);
    let mut v = words[w] >> b;
    if b + bits > 64 {
        v |= words[w + 1] << (64 - b);
    }
    v & ((1u64 << bits) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::SplitMix64;

    fn sorted(n: usize, universe: u64, seed: u64) -> Vec<u64> {
        let mut rng = SplitMix64::new(seed);
        let mut v: Vec<u64> = (0..n).map(|_| rng.next_u64() % universe).collect();
        v.sort_unstable();
        v
    }

    fn check_successors(values: &[u64], universe: u64, probes: &[u64]) {
        let ef = EliasFano::new(values, universe).unwrap();
        let back = EliasFano::decode(&{
            let mut b = Vec::new();
            ef.encode(&mut b);
            b
        })
        .unwrap();
        assert_eq!(back, ef);
        for &x in probes {
            let want = values.iter().copied().find(|&v| v >= x);
            assert_eq!(
                ef.successor(x),
                want,
                "successor({x}) of {} values",
                values.len()
            );
        }
    }

    #[test]
    fn successors_match_a_linear_search() {
        for (n, universe, seed) in [
            (0, 100, 1),
            (1, 1, 2),
            (1, 1000, 3),
            (5, 5, 4),
            (100, 100, 5),
            (1000, 1 << 20, 6),
            (3000, 3000 * 256, 7),
            (2000, 1 << 62, 8),
            (700, 64, 9),
        ] {
            let values = sorted(n, universe, seed);
            let mut probes: Vec<u64> = values
                .iter()
                .flat_map(|&v| [v, v + 1, v.saturating_sub(1)])
                .collect();
            let mut rng = SplitMix64::new(seed + 100);
            probes.extend((0..500).map(|_| rng.next_u64() % universe));
            probes.extend([0, universe - 1, universe, u64::MAX]);
            check_successors(&values, universe, &probes);
        }
    }

    #[test]
    fn an_empty_sequence_is_small_whatever_its_universe() {
        let ef = EliasFano::new(&[], 1 << 62).unwrap();
        assert!(ef.memory_bytes() <= 64, "{}", ef.memory_bytes());
        assert_eq!(ef.successor(0), None);
    }

    #[test]
    fn duplicates_and_runs_are_kept() {
        let values = [3, 3, 3, 9, 9, 200, 200, 201];
        check_successors(&values, 256, &(0..260).collect::<Vec<_>>());
    }

    #[test]
    fn unsorted_or_out_of_universe_values_are_refused() {
        assert!(EliasFano::new(&[2, 1], 10).is_none());
        assert!(EliasFano::new(&[10], 10).is_none());
    }

    #[test]
    fn space_is_within_two_bits_of_the_bound() {
        let n = 100_000u64;
        let universe = n << 8;
        let ef = EliasFano::new(&sorted(n as usize, universe, 11), universe).unwrap();
        let bits = ef.coded_bytes() as f64 * 8.0 / n as f64;
        assert!((9.9..10.1).contains(&bits), "{bits} bits per value");
    }

    #[test]
    fn damaged_bytes_are_refused_not_trusted() {
        let values = sorted(500, 1 << 16, 12);
        let ef = EliasFano::new(&values, 1 << 16).unwrap();
        let mut bytes = Vec::new();
        ef.encode(&mut bytes);
        assert!(EliasFano::decode(&bytes[..bytes.len() - 8]).is_err());
        assert!(EliasFano::decode(&bytes[..7]).is_err());
        let mut more = bytes.clone();
        more[0] ^= 1; // another value count
        assert!(EliasFano::decode(&more).is_err());
        // Every single-bit flip either is refused or decodes to a sequence
        // whose queries run without panicking.
        for bit in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            if let Ok(d) = EliasFano::decode(&b) {
                for x in [0, 1, 100, 1 << 15, (1 << 16) - 1, 1 << 16, u64::MAX] {
                    let _ = d.successor(x);
                }
            }
        }
    }
}
