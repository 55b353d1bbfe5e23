//! Internal keys: how the store versions user keys inside memtables and SSTables.
//!
//! An internal key is the user key followed by an 8-byte trailer, the
//! little-endian `u64` `(sequence << 8) | kind` (LevelDB's layout). Internal keys
//! sort by user key ascending (bytewise), then by trailer *descending*, so the
//! newest version of a key comes first and a lookup for "`key` as of sequence
//! `s`" is a seek to `key ++ trailer(s, Value)`.
//!
//! Filters are always built over the user-key part only.

use std::cmp::Ordering;

/// Length of the trailer appended to a user key.
pub const TRAILER_LEN: usize = 8;
/// Largest sequence number (56 bits).
pub const MAX_SEQUENCE: u64 = (1 << 56) - 1;

/// What an internal-key entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ValueKind {
    /// A tombstone: the key was deleted at this sequence.
    Deletion = 0,
    /// A value.
    Value = 1,
}

impl ValueKind {
    /// Decodes a kind byte.
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(ValueKind::Deletion),
            1 => Some(ValueKind::Value),
            _ => None,
        }
    }
}

/// Packs sequence and kind into the trailer value.
#[inline]
pub fn pack_trailer(seq: u64, kind: ValueKind) -> u64 {
    debug_assert!(seq <= MAX_SEQUENCE);
    (seq << 8) | kind as u64
}

/// Builds `user_key ++ trailer(seq, kind)`.
pub fn make_internal_key(user_key: &[u8], seq: u64, kind: ValueKind) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    k.extend_from_slice(user_key);
    k.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
    k
}

/// The user-key part of an internal key (the whole slice if shorter than a
/// trailer, so that malformed input never panics).
#[inline]
pub fn user_key(internal: &[u8]) -> &[u8] {
    &internal[..internal.len().saturating_sub(TRAILER_LEN)]
}

/// The trailer value of an internal key (0 if too short).
#[inline]
pub fn trailer(internal: &[u8]) -> u64 {
    match internal.len().checked_sub(TRAILER_LEN) {
        Some(at) => u64::from_le_bytes(internal[at..].try_into().expect("8 bytes")),
        None => 0,
    }
}

/// A decoded internal key: the key of every entry in the store's memtables,
/// logs and tables ([`KeyFormat::Internal`](crate::sst::KeyFormat::Internal)),
/// encoded as the user key followed by the 8-byte little-endian trailer
/// `(seq << 8) | kind`.
///
/// ```
/// use bloomlsm::sst::{InternalKey, ValueKind};
///
/// let k = InternalKey { user_key: b"apple", seq: 42, kind: ValueKind::Value };
/// let bytes = k.encode();
/// assert_eq!(bytes.len(), 5 + 8);
/// assert_eq!(InternalKey::parse(&bytes), Some(k));
/// assert_eq!(InternalKey::parse(b"short"), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InternalKey<'a> {
    /// The user key.
    pub user_key: &'a [u8],
    /// Sequence number of the write.
    pub seq: u64,
    /// Value or tombstone.
    pub kind: ValueKind,
}

impl<'a> InternalKey<'a> {
    /// Largest sequence number (56 bits).
    pub const MAX_SEQUENCE: u64 = MAX_SEQUENCE;

    /// Decodes an encoded internal key; `None` if it is shorter than the
    /// 8-byte trailer or has an unknown kind byte.
    pub fn parse(encoded: &'a [u8]) -> Option<Self> {
        parse(encoded)
    }

    /// The encoding, `user_key ++ trailer(seq, kind)`. Internal keys sort by
    /// user key ascending, then newest (highest `seq`) first.
    ///
    /// # Panics
    ///
    /// If `seq` is above [`MAX_SEQUENCE`](Self::MAX_SEQUENCE).
    pub fn encode(&self) -> Vec<u8> {
        assert!(self.seq <= MAX_SEQUENCE, "sequence number over 56 bits");
        make_internal_key(self.user_key, self.seq, self.kind)
    }
}

/// Decodes an internal key; `None` if it is shorter than a trailer or has an
/// unknown kind byte.
pub fn parse(internal: &[u8]) -> Option<InternalKey<'_>> {
    if internal.len() < TRAILER_LEN {
        return None;
    }
    let t = trailer(internal);
    Some(InternalKey {
        user_key: user_key(internal),
        seq: t >> 8,
        kind: ValueKind::from_byte((t & 0xff) as u8)?,
    })
}

/// The internal-key order: user key ascending, then trailer descending.
#[inline]
pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    compare_user_keys(user_key(a), user_key(b)).then_with(|| trailer(b).cmp(&trailer(a)))
}

/// Byte order of two user keys, deciding on the first 8 bytes in registers
/// when both have them (most keys differ there; `memcmp` is a call plus a
/// length dispatch, the hottest instruction of a block seek).
#[inline]
pub(crate) fn compare_user_keys(a: &[u8], b: &[u8]) -> Ordering {
    if let (Some(x), Some(y)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        let (x, y) = (u64::from_be_bytes(*x), u64::from_be_bytes(*y));
        if x != y {
            return x.cmp(&y);
        }
    }
    a.cmp(b)
}

/// The first 8 bytes of `key`, big-endian, zero-padded: `prefix(a) <
/// prefix(b)` implies `a < b` (and `>` implies `>`), so only keys with equal
/// prefixes need a full comparison.
#[inline]
pub(crate) fn prefix(key: &[u8]) -> u64 {
    if let Some(head) = key.first_chunk::<8>() {
        return u64::from_be_bytes(*head);
    }
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_user_key_then_newest_first() {
        let a5 = make_internal_key(b"a", 5, ValueKind::Value);
        let a3 = make_internal_key(b"a", 3, ValueKind::Value);
        let a3d = make_internal_key(b"a", 3, ValueKind::Deletion);
        let ab1 = make_internal_key(b"ab", 1, ValueKind::Value);
        let mut v = vec![ab1.clone(), a3d.clone(), a3.clone(), a5.clone()];
        v.sort_by(|x, y| compare_internal(x, y));
        assert_eq!(v, vec![a5, a3, a3d, ab1]);
    }

    #[test]
    fn parse_roundtrip_and_malformed() {
        let k = make_internal_key(b"user", 42, ValueKind::Deletion);
        let p = parse(&k).unwrap();
        assert_eq!(
            (p.user_key, p.seq, p.kind),
            (&b"user"[..], 42, ValueKind::Deletion)
        );
        assert!(parse(b"short").is_none());
        let mut bad = k.clone();
        let n = bad.len();
        bad[n - 8] = 7;
        assert!(parse(&bad).is_none());
        assert_eq!(user_key(b"abc"), b"");
    }

    proptest::proptest! {
        #[test]
        fn user_key_order_is_byte_order(
            a in proptest::collection::vec(proptest::prop_oneof![proptest::strategy::Just(0u8), proptest::strategy::Just(1), proptest::strategy::Just(0xff)], 0..20),
            b in proptest::collection::vec(proptest::prop_oneof![proptest::strategy::Just(0u8), proptest::strategy::Just(1), proptest::strategy::Just(0xff)], 0..20),
        ) {
            proptest::prop_assert_eq!(compare_user_keys(&a, &b), a.cmp(&b));
        }
    }
}
