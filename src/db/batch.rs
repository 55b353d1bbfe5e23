//! `WriteBatch`: a group of puts and deletes applied atomically, and its
//! encoding, which is exactly the payload of one WAL record:
//!
//! ```text
//! batch := seq: u64 LE | count: u32 LE | count × op
//! op    := kind: u8 (1 = Value, 0 = Deletion, 2 = RangeDeletion)
//!          | varint key_len | key
//!          [ | varint value_len | value ]            -- kind 1: the value
//!          [ | varint end_len | end ]                -- kind 2: the range's end
//! ```
//!
//! A range deletion's key is the start of the half-open range `[key, end)`.
//! An operation on a keyspace other than the default one has bit `0x80` set
//! in its kind byte, and the keyspace's id (a varint, never 0) follows the
//! kind byte; a batch on the default keyspace alone is encoded as it always
//! was.
//!
//! The batch's operations get the consecutive sequence numbers
//! `seq, seq + 1, …, seq + count - 1`, in order. The batch keeps its encoded
//! form as its only representation, so appending it to the WAL copies nothing.

use std::path::Path;

use crate::coding::{Decoder, put_length_prefixed};
use crate::error::{Error, Result};
use crate::key::{MAX_SEQUENCE, ValueKind};

/// Bytes of the `seq | count` header.
pub const BATCH_HEADER_LEN: usize = 12;

/// The op kind byte of a range deletion (after `Deletion` 0 and `Value` 1).
const RANGE_DELETION: u8 = 2;

/// Set in the kind byte of an operation on a keyspace other than the
/// default one: its id follows the kind byte.
const IN_KEYSPACE: u8 = 0x80;

/// One operation of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Set `key` to `value`.
    Put {
        /// The user key.
        key: &'a [u8],
        /// The value.
        value: &'a [u8],
    },
    /// Delete `key`.
    Delete {
        /// The user key.
        key: &'a [u8],
    },
    /// Delete every key in `[start, end)`.
    DeleteRange {
        /// The first key deleted.
        start: &'a [u8],
        /// The first key after the range (not deleted).
        end: &'a [u8],
    },
}

impl<'a> BatchOp<'a> {
    /// The user key (a range deletion's start).
    pub fn key(&self) -> &'a [u8] {
        match *self {
            BatchOp::Put { key, .. }
            | BatchOp::Delete { key }
            | BatchOp::DeleteRange { start: key, .. } => key,
        }
    }

    /// The value kind a point operation writes; `None` for a range deletion,
    /// which the store keeps apart from point entries.
    pub fn kind(&self) -> Option<ValueKind> {
        match self {
            BatchOp::Put { .. } => Some(ValueKind::Value),
            BatchOp::Delete { .. } => Some(ValueKind::Deletion),
            BatchOp::DeleteRange { .. } => None,
        }
    }

    /// The value (empty for a delete; a range deletion's end).
    pub fn value(&self) -> &'a [u8] {
        match *self {
            BatchOp::Put { value, .. } => value,
            BatchOp::Delete { .. } => &[],
            BatchOp::DeleteRange { end, .. } => end,
        }
    }
}

/// An ordered group of puts and deletes, applied atomically (one WAL record).
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    /// The encoding: header (seq, count) followed by the operations.
    rep: Vec<u8>,
    /// Whether an operation is on a keyspace other than the default one: a
    /// write of the default keyspace alone then looks up no keyspace.
    in_keyspaces: bool,
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("sequence", &self.sequence())
            .field("count", &self.len())
            .field("bytes", &self.rep.len())
            .finish()
    }
}

impl WriteBatch {
    /// An empty batch (sequence 0).
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; BATCH_HEADER_LEN],
            in_keyspaces: false,
        }
    }

    /// An empty batch with room for one operation of `bytes` bytes of keys
    /// and values: a single-key write makes one allocation, not one per
    /// doubling of its encoding.
    pub(crate) fn for_one(bytes: usize) -> Self {
        // Kind byte, keyspace id and two lengths, as varints.
        let mut rep = Vec::with_capacity(bytes.saturating_add(BATCH_HEADER_LEN + 16));
        rep.resize(BATCH_HEADER_LEN, 0);
        WriteBatch {
            rep,
            in_keyspaces: false,
        }
    }

    fn set_count(&mut self, n: u32) {
        self.rep[8..12].copy_from_slice(&n.to_le_bytes());
    }

    fn bump_count(&mut self) {
        let n = self.len();
        // More than 4 billion operations would not fit a WAL record anyway;
        // refuse loudly rather than wrap.
        let n = u32::try_from(n + 1).expect("write batch holds at most u32::MAX operations");
        self.set_count(n);
    }

    /// Adds "set `key` to `value`". Takes what [`Db::put`](crate::Db::put)
    /// takes: byte slices, arrays, `Vec<u8>`, `&str`, `String`, `Bytes`.
    ///
    /// ```
    /// let mut batch = bloomlsm::WriteBatch::new();
    /// batch.put(b"apple", b"red");
    /// batch.put("banana", String::from("yellow"));
    /// batch.put(vec![0u8, 1], [2u8; 4]);
    /// assert_eq!(batch.len(), 3);
    /// ```
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.put_to(0, key.as_ref(), value.as_ref());
    }

    /// Adds "set `key` to `value` in `keyspace`": one batch may span
    /// keyspaces, and is applied atomically across them (RocksDB's
    /// `Put(column_family, …)`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default())?;
    /// let users = db.create_keyspace("users", bloomlsm::Options::default())?;
    /// let mut batch = bloomlsm::WriteBatch::new();
    /// batch.put_in(&users, "u1", "ann");
    /// batch.put("count", "1"); // the default keyspace
    /// db.write(batch)?; // both, or neither after a crash
    /// assert_eq!(users.get("u1")?.as_deref(), Some(&b"ann"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_in(
        &mut self,
        keyspace: &crate::Keyspace,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) {
        self.put_to(keyspace.id(), key.as_ref(), value.as_ref());
    }

    /// Adds "delete `key` in `keyspace`" ([`WriteBatch::put_in`]).
    pub fn delete_in(&mut self, keyspace: &crate::Keyspace, key: impl AsRef<[u8]>) {
        self.delete_to(keyspace.id(), key.as_ref());
    }

    /// Adds "delete every key in `[start, end)` of `keyspace`"
    /// ([`WriteBatch::put_in`], [`WriteBatch::delete_range`]).
    pub fn delete_range_in(
        &mut self,
        keyspace: &crate::Keyspace,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) {
        self.delete_range_to(keyspace.id(), start.as_ref(), end.as_ref());
    }

    /// The kind byte of an operation on keyspace `id`, and the id after it.
    fn op_header(&mut self, kind: u8, id: u32) {
        if id == 0 {
            self.rep.push(kind);
        } else {
            self.rep.push(kind | IN_KEYSPACE);
            crate::coding::put_varint64(&mut self.rep, u64::from(id));
            self.in_keyspaces = true;
        }
    }

    pub(crate) fn put_to(&mut self, id: u32, key: &[u8], value: &[u8]) {
        self.op_header(ValueKind::Value as u8, id);
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, value);
        self.bump_count();
    }

    /// Adds "delete `key`" (like [`Db::delete`](crate::Db::delete)).
    ///
    /// ```
    /// let mut batch = bloomlsm::WriteBatch::new();
    /// batch.put("apple", "red");
    /// batch.delete("apple");
    /// assert_eq!(batch.len(), 2); // applied in order: apple ends up absent
    /// ```
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        self.delete_to(0, key.as_ref());
    }

    pub(crate) fn delete_to(&mut self, id: u32, key: &[u8]) {
        self.op_header(ValueKind::Deletion as u8, id);
        put_length_prefixed(&mut self.rep, key);
        self.bump_count();
    }

    /// Adds "delete every key in `[start, end)`" (like
    /// [`Db::delete_range`](crate::Db::delete_range)): every version of such a
    /// key written before this operation is hidden from readers that see it.
    /// A range with `start >= end` makes [`Db::write`](crate::Db::write) fail
    /// with [`Error::InvalidArgument`] and write nothing.
    ///
    /// ```
    /// let mut batch = bloomlsm::WriteBatch::new();
    /// batch.put("k1", "v");
    /// batch.delete_range("k0", "k9"); // deletes k1 too: it comes first
    /// batch.put("k2", "v"); // survives: written after the range delete
    /// assert_eq!(batch.len(), 3);
    /// ```
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) {
        self.delete_range_to(0, start.as_ref(), end.as_ref());
    }

    pub(crate) fn delete_range_to(&mut self, id: u32, start: &[u8], end: &[u8]) {
        self.op_header(RANGE_DELETION, id);
        put_length_prefixed(&mut self.rep, start);
        put_length_prefixed(&mut self.rep, end);
        self.bump_count();
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        u32::from_le_bytes(self.rep[8..12].try_into().expect("4 bytes")) as usize
    }

    /// True if the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every operation (keeps the allocation; sequence reset to 0).
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(BATCH_HEADER_LEN, 0);
        self.in_keyspaces = false;
    }

    /// Size of the encoding in bytes (what the WAL record will carry).
    pub fn approximate_size(&self) -> usize {
        self.rep.len()
    }

    /// Sequence number of the first operation.
    pub fn sequence(&self) -> u64 {
        u64::from_le_bytes(self.rep[0..8].try_into().expect("8 bytes"))
    }

    /// Sets the sequence number of the first operation (the store does this
    /// just before logging the batch). For tools and tests that write logs
    /// by hand; not part of the documented API.
    #[doc(hidden)]
    pub fn set_sequence(&mut self, seq: u64) {
        self.rep[0..8].copy_from_slice(&seq.to_le_bytes());
    }

    /// Sequence number of the last operation (`None` if empty).
    pub fn last_sequence(&self) -> Option<u64> {
        let n = self.len() as u64;
        (n > 0).then(|| self.sequence() + n - 1)
    }

    /// Appends all operations of `other` (its sequence is ignored).
    pub fn append(&mut self, other: &WriteBatch) {
        let n = self.len() + other.len();
        self.rep.extend_from_slice(&other.rep[BATCH_HEADER_LEN..]);
        self.in_keyspaces |= other.in_keyspaces;
        self.set_count(u32::try_from(n).expect("write batch holds at most u32::MAX operations"));
    }

    /// The encoding, i.e. the WAL record payload.
    pub fn encoded(&self) -> &[u8] {
        &self.rep
    }

    /// The operations in the order they were added, each with the id of
    /// its keyspace (0: the default keyspace).
    pub fn iter_keyspaces(&self) -> KeyspaceOps<'_> {
        KeyspaceOps(self.iter())
    }

    /// The ids of the keyspaces other than the default one that the batch
    /// writes to, ascending, each once.
    pub(crate) fn keyspace_ids(&self) -> Vec<u32> {
        if !self.in_keyspaces {
            return Vec::new();
        }
        let mut ids: Vec<u32> = self
            .iter_keyspaces()
            .map(|(id, _)| id)
            .filter(|&id| id != 0)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// The operations in the order they were added (of every keyspace).
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            d: Decoder::new(&self.rep[BATCH_HEADER_LEN..]),
            left: self.len(),
        }
    }

    /// Decodes and fully validates an encoding. Every failure is an
    /// [`Error::Corruption`] whose file is `"<write batch>"` and whose offset is
    /// within `data`; [`WriteBatch::decode_in`] names a real file instead.
    pub fn decode(data: &[u8]) -> Result<WriteBatch> {
        Self::decode_in(data, Path::new("<write batch>"), 0)
    }

    /// Like [`WriteBatch::decode`], reporting corruption in `file` at
    /// `base_offset + offset within data`.
    pub fn decode_in(data: &[u8], file: &Path, base_offset: u64) -> Result<WriteBatch> {
        let bad = |at: usize, what: &str| Error::corruption(file, base_offset + at as u64, what);
        let mut d = Decoder::new(data);
        let seq = d.fixed64().map_err(|w| bad(0, w))?;
        let count = d.fixed32().map_err(|w| bad(8, w))?;
        if count > 0
            && seq
                .checked_add(count as u64 - 1)
                .is_none_or(|l| l > MAX_SEQUENCE)
        {
            return Err(bad(0, "batch sequence numbers exceed the 56-bit maximum"));
        }
        let mut in_keyspaces = false;
        for _ in 0..count {
            let at = d.pos();
            let mut kind = d.u8().map_err(|w| bad(at, w))?;
            if kind & IN_KEYSPACE != 0 {
                kind &= !IN_KEYSPACE;
                in_keyspaces = true;
                match d.varint64().map_err(|w| bad(d.pos(), w))? {
                    1..=0xffff_ffff => {}
                    _ => return Err(bad(at, "operation's keyspace id out of range")),
                }
            }
            if kind == RANGE_DELETION {
                let start = d.length_prefixed().map_err(|w| bad(d.pos(), w))?;
                let end = d.length_prefixed().map_err(|w| bad(d.pos(), w))?;
                if start >= end {
                    return Err(bad(at, "range deletion whose start is not below its end"));
                }
                continue;
            }
            let kind =
                ValueKind::from_byte(kind).ok_or_else(|| bad(at, "unknown operation kind"))?;
            d.length_prefixed().map_err(|w| bad(d.pos(), w))?;
            if kind == ValueKind::Value {
                d.length_prefixed().map_err(|w| bad(d.pos(), w))?;
            }
        }
        if !d.is_empty() {
            return Err(bad(d.pos(), "bytes after the last operation of the batch"));
        }
        Ok(WriteBatch {
            rep: data.to_vec(),
            in_keyspaces,
        })
    }
}

/// Iterator over the operations of a [`WriteBatch`].
pub struct BatchIter<'a> {
    d: Decoder<'a>,
    left: usize,
}

impl<'a> BatchIter<'a> {
    /// The next operation and the id of its keyspace.
    fn next_op(&mut self) -> Option<(u32, BatchOp<'a>)> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // The encoding was built by put/delete or validated by decode, so a
        // failure here is a bug; stop rather than panic in release builds.
        let op = (|| {
            let mut kind = self.d.u8()?;
            let mut id = 0;
            if kind & IN_KEYSPACE != 0 {
                kind &= !IN_KEYSPACE;
                id = u32::try_from(self.d.varint64()?).map_err(|_| "keyspace id")?;
            }
            let key = self.d.length_prefixed()?;
            Ok::<_, &str>((
                id,
                if kind == ValueKind::Value as u8 {
                    BatchOp::Put {
                        key,
                        value: self.d.length_prefixed()?,
                    }
                } else if kind == RANGE_DELETION {
                    BatchOp::DeleteRange {
                        start: key,
                        end: self.d.length_prefixed()?,
                    }
                } else {
                    BatchOp::Delete { key }
                },
            ))
        })();
        debug_assert!(op.is_ok(), "write batch encoding is validated");
        match op {
            Ok(op) => Some(op),
            Err(_) => {
                self.left = 0;
                None
            }
        }
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = BatchOp<'a>;

    fn next(&mut self) -> Option<BatchOp<'a>> {
        self.next_op().map(|(_, op)| op)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left))
    }
}

/// Iterator over the operations of a [`WriteBatch`] with their keyspaces'
/// ids ([`WriteBatch::iter_keyspaces`]).
pub struct KeyspaceOps<'a>(BatchIter<'a>);

impl<'a> Iterator for KeyspaceOps<'a> {
    type Item = (u32, BatchOp<'a>);

    fn next(&mut self) -> Option<(u32, BatchOp<'a>)> {
        self.0.next_op()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<'a> IntoIterator for &'a WriteBatch {
    type Item = BatchOp<'a>;
    type IntoIter = BatchIter<'a>;
    fn into_iter(self) -> BatchIter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put(b"alpha", b"1");
        b.delete(b"beta");
        b.put(b"", b"");
        b.put([0xff; 200], [7; 300]);
        b.delete(b"z");
        b.delete_range(b"k1", b"k5");
        b.set_sequence(1234);
        b
    }

    #[test]
    fn build_iterate_and_decode() {
        let b = sample();
        assert_eq!(b.len(), 6);
        assert_eq!(b.sequence(), 1234);
        assert_eq!(b.last_sequence(), Some(1239));
        let ops: Vec<_> = b.iter().collect();
        assert_eq!(
            ops[0],
            BatchOp::Put {
                key: b"alpha",
                value: b"1"
            }
        );
        assert_eq!(ops[1], BatchOp::Delete { key: b"beta" });
        assert_eq!(ops[3].value(), &[7; 300]);
        assert_eq!(ops[4].kind(), Some(ValueKind::Deletion));
        assert_eq!(
            ops[5],
            BatchOp::DeleteRange {
                start: b"k1",
                end: b"k5"
            }
        );
        assert_eq!(ops[5].kind(), None);
        let d = WriteBatch::decode(b.encoded()).unwrap();
        assert_eq!(d, b);
        assert_eq!(d.iter().collect::<Vec<_>>(), ops);
        assert_eq!(b.approximate_size(), b.encoded().len());

        let mut c = WriteBatch::new();
        assert!(c.is_empty());
        assert_eq!(c.last_sequence(), None);
        c.put(b"k", b"v");
        c.append(&b);
        assert_eq!(c.len(), 7);
        assert_eq!(c.iter().nth(2), Some(BatchOp::Delete { key: b"beta" }));
        c.clear();
        assert!(c.is_empty());
        assert_eq!(c.encoded().len(), BATCH_HEADER_LEN);
        assert_eq!(c.iter().count(), 0);
    }

    #[test]
    fn every_truncation_and_flip_is_safe() {
        let enc = sample().encoded().to_vec();
        for cut in 0..enc.len() {
            assert!(
                WriteBatch::decode(&enc[..cut]).unwrap_err().is_corruption(),
                "cut {cut}"
            );
        }
        let mut longer = enc.clone();
        longer.push(0);
        assert!(WriteBatch::decode(&longer).is_err());
        for at in 0..enc.len() {
            for bit in 0..8 {
                let mut bad = enc.clone();
                bad[at] ^= 1 << bit;
                // Must not panic; if it decodes, iterating must not panic either.
                if let Ok(b) = WriteBatch::decode(&bad) {
                    assert_eq!(b.iter().count(), b.len());
                }
            }
        }
    }

    #[test]
    fn keyspace_operations_round_trip_and_default_ones_keep_their_bytes() {
        let mut plain = WriteBatch::new();
        plain.put(b"k", b"v");
        let mut zero = WriteBatch::new();
        zero.put_to(0, b"k", b"v");
        assert_eq!(
            plain.encoded(),
            zero.encoded(),
            "keyspace 0 is the old encoding"
        );

        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        b.put_to(7, b"b", b"2");
        b.delete_to(300, b"c");
        b.delete_range_to(u32::MAX, b"d", b"e");
        b.set_sequence(50);
        let d = WriteBatch::decode(b.encoded()).unwrap();
        let ops: Vec<_> = d.iter_keyspaces().collect();
        assert_eq!(
            ops[0],
            (
                0,
                BatchOp::Put {
                    key: b"a",
                    value: b"1"
                }
            )
        );
        assert_eq!(
            ops[1],
            (
                7,
                BatchOp::Put {
                    key: b"b",
                    value: b"2"
                }
            )
        );
        assert_eq!(ops[2], (300, BatchOp::Delete { key: b"c" }));
        assert_eq!(
            ops[3],
            (
                u32::MAX,
                BatchOp::DeleteRange {
                    start: b"d",
                    end: b"e"
                }
            )
        );
        assert_eq!(d.keyspace_ids(), vec![7, 300, u32::MAX]);
        assert_eq!(b.keyspace_ids(), vec![7, 300, u32::MAX]);
        assert_eq!(d.iter().count(), 4);
        // Keyspaces reach a group's batch through `append`, and leave with
        // `clear`.
        let mut group = plain.clone();
        assert!(group.keyspace_ids().is_empty());
        group.append(&b);
        assert_eq!(group.keyspace_ids(), vec![7, 300, u32::MAX]);
        group.clear();
        group.put(b"k", b"v");
        assert!(group.keyspace_ids().is_empty());
        assert_eq!(group, plain);

        // A keyspace id of 0 written with the flag, or past 32 bits, is damage.
        for id in [0u64, 1 << 32] {
            let mut rep = vec![0u8; BATCH_HEADER_LEN];
            rep[8] = 1;
            rep.push(ValueKind::Deletion as u8 | IN_KEYSPACE);
            crate::coding::put_varint64(&mut rep, id);
            put_length_prefixed(&mut rep, b"k");
            assert!(
                WriteBatch::decode(&rep).unwrap_err().is_corruption(),
                "id {id}"
            );
        }
    }

    #[test]
    fn empty_or_inverted_range_is_corruption() {
        for (start, end) in [(&b"b"[..], &b"b"[..]), (b"c", b"b")] {
            let mut b = WriteBatch::new();
            b.delete_range(start, end);
            assert!(WriteBatch::decode(b.encoded()).unwrap_err().is_corruption());
        }
    }

    #[test]
    fn sequence_overflow_rejected() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"b");
        b.put(b"c", b"d");
        b.set_sequence(MAX_SEQUENCE);
        assert!(WriteBatch::decode(b.encoded()).is_err());
        b.set_sequence(MAX_SEQUENCE - 1);
        assert!(WriteBatch::decode(b.encoded()).is_ok());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        #[test]
        fn roundtrip(
            seq in 0u64..1 << 40,
            ops in prop::collection::vec(
                (any::<bool>(), prop::collection::vec(any::<u8>(), 0..20),
                 prop::collection::vec(any::<u8>(), 0..200)), 0..20)
        ) {
            let mut b = WriteBatch::new();
            for (put, k, v) in &ops {
                if *put { b.put(k, v) } else { b.delete(k) }
            }
            b.set_sequence(seq);
            let d = WriteBatch::decode(b.encoded()).unwrap();
            prop_assert_eq!(d.sequence(), seq);
            let got: Vec<_> = d.iter().collect();
            prop_assert_eq!(got.len(), ops.len());
            for (g, (put, k, v)) in got.iter().zip(&ops) {
                prop_assert_eq!(g.key(), &k[..]);
                if *put {
                    prop_assert_eq!(*g, BatchOp::Put { key: k, value: v });
                } else {
                    prop_assert_eq!(*g, BatchOp::Delete { key: k });
                }
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(b) = WriteBatch::decode(&data) {
                prop_assert_eq!(b.iter().count(), b.len());
            }
        }
    }
}
