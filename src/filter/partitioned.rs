//! A filter in partitions chosen by key hash, so that a large file's filter
//! can be read one small block at a time instead of whole.
//!
//! RocksDB partitions a file's filter by key range, next to its partitioned
//! index, and finds a key's partition through a top-level index of keys. Our
//! filters answer point lookups only, so the partition is picked from the
//! key's hash instead: no key comparisons on the probe, a top-level index of
//! block handles only, and partitions of equal expected size. Each partition
//! is an ordinary filter of the table's policy over the hashes that select
//! it, so every family partitions the same way.

use std::sync::Arc;

use super::{Filter, FilterDecodeError, FilterKind, FilterPolicy};

/// XORed into a hash before it is remixed to pick a partition.
const PARTITION_SALT: u64 = 0x7061_7274_6974_696f; // "partitio"

/// Which of `n` (≥ 1) partitions the key whose [`super::key_hash`] is `hash`
/// belongs to: MurmurHash3's 64-bit finalizer of `hash ^ 0x7061727469746966`,
/// times `n`, high 64 bits of the 128-bit product.
///
/// The filter inside a partition reads the hash's own bits; picking the
/// partition from a remix leaves those bits uniform within every partition
/// (picking it from the hash's high bits would leave a blocked filter's line
/// choice, which reads those bits too, a fraction of its lines).
#[inline]
pub fn partition_of(hash: u64, n: usize) -> usize {
    let mut h = hash ^ PARTITION_SALT;
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    ((u128::from(h) * n as u128) >> 64) as usize
}

/// How many partitions of about `partition_bytes` a filter of `policy` over
/// `keys` keys takes: its expected size over the partition size, rounded up,
/// at least 1. `partition_bytes` 0 means one partition.
pub fn partition_count(policy: &FilterPolicy, keys: usize, partition_bytes: usize) -> usize {
    if partition_bytes == 0 {
        return 1;
    }
    let bytes = (keys as f64 * policy.bits_per_key() / 8.0).ceil();
    ((bytes / partition_bytes as f64).ceil() as usize).max(1)
}

/// Builds the partitions of a filter of `policy` over `hashes`, each the
/// bytes [`FilterPolicy::build`] makes of the hashes that select it
/// ([`partition_of`]); `n` ≥ 1 partitions.
///
/// # Errors
///
/// As [`FilterPolicy::build`] (only a registered family fails).
pub fn build_partitions(
    policy: &FilterPolicy,
    hashes: &[u64],
    n: usize,
) -> crate::Result<Vec<Vec<u8>>> {
    assert!(n >= 1, "a partitioned filter has at least one partition");
    let mut buckets: Vec<Vec<u64>> = (0..n)
        .map(|_| Vec::with_capacity(hashes.len() / n + 16))
        .collect();
    for &h in hashes {
        buckets[partition_of(h, n)].push(h);
    }
    buckets.iter().map(|b| policy.build(b)).collect()
}

/// The partitions of one filter, all in memory.
#[derive(Clone)]
pub struct PartitionedFilter {
    parts: Arc<[Filter]>,
}

impl PartitionedFilter {
    /// From opened partitions, in order. Errors unless there is at least one
    /// and all are usable filters of one kind (a partition this build
    /// cannot read, or one of another kind, is a damaged filter: the table
    /// reader reports it as corruption).
    pub fn new(parts: Vec<Filter>) -> Result<Self, FilterDecodeError> {
        let kind = match parts.first() {
            None => return Err(FilterDecodeError("no filter partitions".into())),
            Some(p) => p.kind(),
        };
        for (i, p) in parts.iter().enumerate() {
            if matches!(p, Filter::Partitioned(_)) {
                return Err(FilterDecodeError(format!("partition {i} is partitioned")));
            }
            if !p.is_usable() || p.kind() != kind {
                return Err(FilterDecodeError(format!(
                    "partition {i} is {:?}, partition 0 {:?}",
                    p.kind(),
                    kind
                )));
            }
        }
        Ok(PartitionedFilter {
            parts: parts.into(),
        })
    }

    /// The partitions, in order.
    pub fn partitions(&self) -> &[Filter] {
        &self.parts
    }

    #[inline]
    fn part(&self, hash: u64) -> &Filter {
        &self.parts[partition_of(hash, self.parts.len())]
    }

    /// False only if the key of `hash` was certainly not in the set.
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        self.part(hash).may_contain(hash)
    }

    /// Starts loading the memory a probe of `hash` reads.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        self.part(hash).prefetch(hash)
    }

    /// The family of the partitions.
    pub fn kind(&self) -> Option<FilterKind> {
        self.parts[0].kind()
    }

    /// Keys over all partitions.
    pub fn key_count(&self) -> u64 {
        // Saturating: each count comes from a partition's trailer.
        self.parts
            .iter()
            .fold(0u64, |n, p| n.saturating_add(p.key_count()))
    }

    /// Probes per key of the partitions' policy.
    pub fn num_probes(&self) -> u32 {
        self.parts[0].num_probes()
    }

    /// Bytes of filter bits over all partitions.
    pub fn memory_bytes(&self) -> usize {
        self.parts.iter().map(Filter::memory_bytes).sum()
    }

    /// The modelled FPR of an absent key: it lands in each partition with
    /// probability 1/n, so the mean of the partitions' modelled FPRs.
    pub fn predicted_fpr(&self) -> f64 {
        self.parts.iter().map(Filter::predicted_fpr).sum::<f64>() / self.parts.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_vectors::fixed_hashes;

    #[test]
    fn partitions_are_balanced_and_in_range() {
        let hs = fixed_hashes(7, 100_000);
        for n in [1usize, 2, 3, 10, 64] {
            let mut counts = vec![0usize; n];
            for &h in &hs {
                counts[partition_of(h, n)] += 1;
            }
            let mean = hs.len() / n;
            for (i, &c) in counts.iter().enumerate() {
                // 5 standard deviations of a binomial count.
                let sd = (mean as f64).sqrt();
                assert!(
                    (c as f64 - mean as f64).abs() < 5.0 * sd + 1.0,
                    "n {n}: partition {i} has {c} of {}",
                    hs.len()
                );
            }
        }
    }

    #[test]
    fn partition_count_rounds_up() {
        let p = FilterPolicy::blocked512(10.0);
        assert_eq!(partition_count(&p, 0, 4096), 1);
        assert_eq!(partition_count(&p, 1000, 0), 1);
        // 3,277 keys at 10 bits are 4,097 bytes: two partitions.
        assert_eq!(partition_count(&p, 3276, 4096), 1);
        assert_eq!(partition_count(&p, 3277, 4096), 2);
        assert_eq!(partition_count(&p, 100_000, 4096), 31);
    }

    /// No false negatives, and about the whole filter's FPR, for every family.
    #[test]
    fn no_false_negatives_and_fpr_near_the_model() {
        let keys = fixed_hashes(11, 40_000);
        let absent = fixed_hashes(12, 200_000);
        for policy in [
            FilterPolicy::blocked512(10.0),
            FilterPolicy::bloom(10.0),
            FilterPolicy::ribbon(7.0),
        ] {
            let n = partition_count(&policy, keys.len(), 4096);
            assert!(n >= 8, "{n}");
            let parts = build_partitions(&policy, &keys, n)
                .unwrap()
                .iter()
                .map(|b| Filter::open(b).unwrap())
                .collect();
            let f = Filter::Partitioned(PartitionedFilter::new(parts).unwrap());
            assert_eq!(f.key_count(), keys.len() as u64);
            for &h in &keys {
                assert!(f.may_contain(h), "{policy:?}: false negative");
            }
            let fp = absent.iter().filter(|&&h| f.may_contain(h)).count();
            let measured = fp as f64 / absent.len() as f64;
            let model = f.predicted_fpr();
            // ≥ 1,400 expected false positives: 4 standard deviations ≈ 11%.
            assert!(
                (measured / model - 1.0).abs() < 0.15,
                "{policy:?}: measured {measured}, model {model}"
            );
            let mut out = vec![false; absent.len()];
            f.may_contain_batch(&absent, &mut out);
            assert_eq!(out.iter().filter(|&&b| b).count(), fp);
        }
    }

    #[test]
    fn mixed_or_unusable_partitions_are_rejected() {
        let hs = fixed_hashes(3, 100);
        let a = Filter::open(&FilterPolicy::blocked512(10.0).build(&hs).unwrap()).unwrap();
        let b = Filter::open(&FilterPolicy::bloom(10.0).build(&hs).unwrap()).unwrap();
        let u = Filter::Unusable {
            reason: "test".into(),
        };
        assert!(PartitionedFilter::new(vec![]).is_err());
        assert!(PartitionedFilter::new(vec![a.clone(), b]).is_err());
        assert!(PartitionedFilter::new(vec![a.clone(), u]).is_err());
        assert!(PartitionedFilter::new(vec![a.clone(), a]).is_ok());
    }
}
