//! How a table stores its filter: one block, or (format version 3)
//! partitions picked by key hash plus a partition index block, and what the
//! table knows of its filter without keeping the bits in memory.

use super::format::{BlockHandle, get_varint32};
use crate::filter::{Filter, FilterKind};

/// Most partitions one filter may have: a bound on what a damaged partition
/// index can make a reader allocate (2^20 partitions of 4 KiB are a 4 GiB
/// filter).
pub const MAX_FILTER_PARTITIONS: u32 = 1 << 20;

/// The partition index block's payload: `varint32 n`, then the `n`
/// partitions' block handles in partition order.
pub(crate) fn encode_partition_index(handles: &[BlockHandle]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + handles.len() * 6);
    super::format::put_varint32(&mut out, handles.len() as u32);
    for h in handles {
        out.extend_from_slice(&h.encode());
    }
    out
}

/// Decodes a partition index payload; an error names what is wrong and at
/// which byte of the payload.
pub(crate) fn decode_partition_index(bytes: &[u8]) -> Result<Vec<BlockHandle>, (usize, String)> {
    let (n, used) =
        get_varint32(bytes).ok_or((0, "partition count is not a varint32".to_string()))?;
    let mut rest = &bytes[used..];
    if !(2..=MAX_FILTER_PARTITIONS).contains(&n) {
        return Err((
            0,
            format!("{n} filter partitions (2..={MAX_FILTER_PARTITIONS})"),
        ));
    }
    // Each handle takes at least 2 bytes: a count the payload cannot hold
    // is caught before allocating for it.
    if rest.len() < 2 * n as usize {
        return Err((
            bytes.len() - rest.len(),
            format!("{n} partitions in {} bytes", rest.len()),
        ));
    }
    let mut handles = Vec::with_capacity(n as usize);
    for i in 0..n {
        let at = bytes.len() - rest.len();
        let (h, used) =
            BlockHandle::decode(rest).ok_or((at, format!("partition {i}: not a block handle")))?;
        rest = &rest[used..];
        handles.push(h);
    }
    if !rest.is_empty() {
        return Err((
            bytes.len() - rest.len(),
            format!("{} bytes after the last partition handle", rest.len()),
        ));
    }
    Ok(handles)
}

/// What a table knows of its filter, whether or not the bits stay in
/// memory: read once at open, from the filter itself.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterInfo {
    /// The family, if this build can read the filter.
    pub kind: Option<FilterKind>,
    /// Keys the filter was built from.
    pub key_count: u64,
    /// Bytes of filter bits when held in memory.
    pub memory_bytes: usize,
    /// Probes per key.
    pub num_probes: u32,
    /// The modelled FPR of its real size (1.0 if unusable).
    pub predicted_fpr: f64,
    /// Partitions (0: one whole block).
    pub partitions: usize,
}

impl FilterInfo {
    /// The summary of an opened filter.
    pub fn of(f: &Filter) -> Self {
        FilterInfo {
            kind: f.kind(),
            key_count: f.key_count(),
            memory_bytes: f.memory_bytes(),
            num_probes: f.num_probes(),
            predicted_fpr: f.predicted_fpr(),
            partitions: match f {
                Filter::Partitioned(p) => p.partitions().len(),
                _ => 0,
            },
        }
    }

    /// Whether this build can probe the filter.
    pub fn is_usable(&self) -> bool {
        self.kind.is_some()
    }

    /// Filter bits per key (0 for an empty or unusable filter).
    pub fn bits_per_key(&self) -> f64 {
        if self.key_count == 0 {
            0.0
        } else {
            self.memory_bytes as f64 * 8.0 / self.key_count as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_index_roundtrip_and_damage() {
        let hs: Vec<BlockHandle> = (0..5)
            .map(|i| BlockHandle::new(i * 4101, 4096 + i))
            .collect();
        let enc = encode_partition_index(&hs);
        assert_eq!(decode_partition_index(&enc).unwrap(), hs);
        // Every truncation and every extra byte is an error, never a panic.
        for cut in 0..enc.len() {
            assert!(decode_partition_index(&enc[..cut]).is_err(), "cut {cut}");
        }
        let mut long = enc.clone();
        long.push(0);
        assert!(decode_partition_index(&long).is_err());
        // One partition, or a count far beyond the payload.
        assert!(decode_partition_index(&encode_partition_index(&hs[..1])).is_err());
        let mut huge = Vec::new();
        super::super::format::put_varint32(&mut huge, MAX_FILTER_PARTITIONS);
        assert!(decode_partition_index(&huge).is_err());
        for i in 0..enc.len() {
            for bit in 0..8 {
                let mut bad = enc.clone();
                bad[i] ^= 1 << bit;
                let _ = decode_partition_index(&bad);
            }
        }
    }
}
