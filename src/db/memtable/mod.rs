//! The memtable: recent writes, ordered by internal key, in a lock-free skip
//! list whose nodes live in an arena ([`SkipList`]), so any number of threads
//! insert and read at once and readers never wait for a lock.
//!
//! About 42% of this file is its unit tests (the `tests` module at the end);
//! the rest is one type, `MemTable`, with its iterator.
//!
//! Entries are internal keys (user key ++ `(seq << 8) | kind`, see
//! [`InternalKey`](crate::sst::InternalKey)) mapped to values; a tombstone
//! maps to an empty value. Since every write gets a fresh sequence number,
//! entries are never overwritten: readers choose the version they see by
//! sequence number (a snapshot).
//!
//! Range deletions are kept apart, in a list of `(start, end, seq)` beside
//! the skip list ([`MemTable::range_tombstones`]), cut into
//! [`Fragments`] when a reader first asks after a change: point entries stay
//! one skip list search, and a memtable without range deletions costs a
//! reader one atomic load.

mod arena;
mod skiplist;

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::db::batch::{BatchOp, WriteBatch};
use crate::filter::key_hash;
use crate::key::{self, MAX_SEQUENCE, ValueKind};
use crate::range_tombstone::Fragments;
use skiplist::{Node, SkipList, Splice};

/// What a memtable knows about a key at a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LookupResult {
    /// The newest visible version is this value.
    Value(Bytes),
    /// The newest visible version is a tombstone: the key is deleted (do not
    /// look in older tables).
    Deleted,
}

/// Bytes of memtable the key filter is sized for per entry: 10 filter bits
/// per 64 bytes of write buffer, 2% of it (an entry costs its key, its
/// 8-byte trailer, its value and ~22 bytes of skip-list node; smaller entries
/// than this only raise the filter's false-positive rate).
const KEY_FILTER_BYTES_PER_ENTRY: usize = 64;

/// A Bloom filter over the user keys written to a memtable (RocksDB's
/// memtable whole-key filtering), so that a lookup of a key the memtable does
/// not hold — most lookups once the data is in tables — skips the skip-list
/// search (~310 ns per lookup in a memtable of 8,000 entries, against ~75 ns
/// for the rest of a missing get on an otherwise empty store). One 512-bit
/// line per key, [`KEY_FILTER_PROBES`] bits in it; set with atomic ORs, so
/// writers need no lock. A writer sets a key's bits before inserting the key,
/// and the store publishes a write's sequence number after inserting it, so a
/// reader whose snapshot includes a write sees that write's bits.
struct KeyFilter {
    lines: Box<[[AtomicU64; 8]]>,
}

/// Bits set per key in its line: for 10 bits per entry at a full memtable,
/// about 1% false positives.
const KEY_FILTER_PROBES: u32 = 6;
/// Filter bits per entry the memtable can hold at most.
const KEY_FILTER_BITS_PER_ENTRY: usize = 10;

impl KeyFilter {
    fn with_lines(n: usize) -> Self {
        KeyFilter {
            lines: (0..n.max(1)).map(|_| Default::default()).collect(),
        }
    }

    /// The line of `hash` and the `(word, mask)` of each of its bits.
    #[inline]
    fn bits(&self, hash: u64) -> (&[AtomicU64; 8], impl Iterator<Item = (usize, u64)>) {
        let line = ((u64::from(hash as u32) * self.lines.len() as u64) >> 32) as usize;
        let mut h = (hash >> 32) as u32;
        let bits = (0..KEY_FILTER_PROBES).map(move |_| {
            // Each probe takes 9 bits of a fresh multiplicative remix.
            h = h.wrapping_mul(0x9E37_79B9);
            let bit = (h >> 23) as usize;
            (bit >> 6, 1u64 << (bit & 63))
        });
        (&self.lines[line], bits)
    }

    fn insert(&self, hash: u64) {
        let (line, bits) = self.bits(hash);
        for (w, m) in bits {
            if line[w].load(AtomicOrdering::Relaxed) & m == 0 {
                line[w].fetch_or(m, AtomicOrdering::Relaxed);
            }
        }
    }

    #[inline]
    fn may_contain(&self, hash: u64) -> bool {
        let (line, mut bits) = self.bits(hash);
        bits.all(|(w, m)| line[w].load(AtomicOrdering::Relaxed) & m != 0)
    }
}

/// The in-memory write buffer. `Send + Sync`; share it with `Arc`.
pub struct MemTable {
    list: SkipList,
    filter: KeyFilter,
    /// Set once a range deletion is inserted (before its sequence number is
    /// published, like a point entry).
    has_range_tombstones: AtomicBool,
    range_tombstones: Mutex<RangeTombstones>,
}

/// The memtable's range deletions as written, and their fragments as last
/// cut (`None` after a change).
#[derive(Default)]
struct RangeTombstones {
    written: Vec<(Vec<u8>, Vec<u8>, u64)>,
    fragments: Option<Arc<Fragments>>,
}

impl Default for MemTable {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("entries", &self.len())
            .field("approximate_memory_bytes", &self.approximate_memory_bytes())
            .finish()
    }
}

impl MemTable {
    /// An empty memtable with a small key filter (4 KiB: fine for a few
    /// thousand keys; more only raise its false-positive rate).
    pub fn new() -> Self {
        Self::with_filter_lines(64)
    }

    /// An empty memtable whose key filter is sized for a memtable that is
    /// flushed at `write_buffer_size` bytes: 10 bits per
    /// [`KEY_FILTER_BYTES_PER_ENTRY`] bytes, 2% of the buffer's size.
    pub fn for_write_buffer(write_buffer_size: usize) -> Self {
        let entries = write_buffer_size / KEY_FILTER_BYTES_PER_ENTRY;
        Self::with_filter_lines((entries * KEY_FILTER_BITS_PER_ENTRY).div_ceil(512))
    }

    fn with_filter_lines(lines: usize) -> Self {
        MemTable {
            list: SkipList::new(),
            filter: KeyFilter::with_lines(lines),
            has_range_tombstones: AtomicBool::new(false),
            range_tombstones: Mutex::new(RangeTombstones::default()),
        }
    }

    /// Adds the range deletion `[start, end)` at `seq`.
    pub fn insert_range_tombstone(&self, start: &[u8], end: &[u8], seq: u64) {
        debug_assert!(seq <= MAX_SEQUENCE && start < end);
        let mut r = self
            .range_tombstones
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        r.written.push((start.to_vec(), end.to_vec(), seq));
        r.fragments = None;
        self.has_range_tombstones
            .store(true, AtomicOrdering::Release);
    }

    /// The range deletions inserted so far, fragmented (of every sequence
    /// number: readers pick theirs with [`Fragments::max_cover`]); `None`
    /// if there is none.
    pub fn range_tombstones(&self) -> Option<Arc<Fragments>> {
        if !self.has_range_tombstones.load(AtomicOrdering::Acquire) {
            return None;
        }
        let mut r = self
            .range_tombstones
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let r = &mut *r;
        let f = r.fragments.get_or_insert_with(|| {
            Arc::new(Fragments::new(
                r.written.iter().map(|(a, b, s)| (&a[..], &b[..], *s)),
            ))
        });
        Some(f.clone())
    }

    /// Inserts one version. Safe to call from many threads at once; a reader
    /// sees the entry as soon as this returns. `(user_key, seq)` pairs are
    /// expected to be unique (the store hands out each sequence once);
    /// inserting the same `(user_key, seq, kind)` again keeps the first value.
    #[cfg(test)]
    pub fn insert(&self, user_key: &[u8], seq: u64, kind: ValueKind, value: &[u8]) {
        self.insert_with(user_key, seq, kind, value, &mut self.list.splice());
    }

    fn insert_with(
        &self,
        user_key: &[u8],
        seq: u64,
        kind: ValueKind,
        value: &[u8],
        splice: &mut Splice,
    ) {
        debug_assert!(seq <= MAX_SEQUENCE);
        let trailer = key::pack_trailer(seq, kind).to_le_bytes();
        // Before the key is reachable: see `KeyFilter`.
        self.filter.insert(key_hash(user_key));
        self.list
            .insert_hinted(&[user_key, &trailer], value, splice);
    }

    /// Inserts every operation of `batch` with sequence numbers
    /// `batch.sequence()`, `+1`, … (how WAL replay and the write path apply a
    /// batch). The operations go in in key order, each search starting where
    /// the previous one ended (a [`Splice`]): a batch of 1,000 random keys
    /// into a memtable of ~15,000 then walks the short gaps between its keys
    /// instead of paying a whole search's cache misses per key. Readers see
    /// none of the batch before the store publishes its sequence numbers, so
    /// the order is invisible to them.
    pub fn insert_batch(&self, batch: &WriteBatch) {
        self.insert_batch_in(batch, 0, 0);
    }

    /// [`Self::insert_batch`] for the operations of keyspace `id` (0: the
    /// default keyspace) with sequence numbers above `after` (replay skips
    /// what the keyspace's tables hold); the other operations keep their
    /// sequence numbers and are left out. Returns how many it inserted.
    pub fn insert_batch_in(&self, batch: &WriteBatch, id: u32, after: u64) -> usize {
        let mut splice = self.list.splice();
        if batch.len() == 1 && after < batch.sequence() {
            // A lone put (most `Db::put`s): nothing to order, nothing to
            // allocate.
            let mut n = 0;
            for (_, op) in batch.iter_keyspaces().filter(|(k, _)| *k == id) {
                match op.kind() {
                    Some(kind) => {
                        self.insert_with(op.key(), batch.sequence(), kind, op.value(), &mut splice)
                    }
                    None => self.insert_range_tombstone(op.key(), op.value(), batch.sequence()),
                }
                n += 1;
            }
            return n;
        }
        // Each operation with its sequence number (its place in the batch);
        // `None` for another keyspace's, or one the keyspace's tables hold.
        let ops: Vec<Option<BatchOp<'_>>> = batch
            .iter_keyspaces()
            .enumerate()
            .map(|(i, (k, op))| (k == id && batch.sequence() + i as u64 > after).then_some(op))
            .collect();
        let mut n = 0;
        for (i, op) in ops.iter().enumerate() {
            match op {
                Some(BatchOp::DeleteRange { start, end }) => {
                    self.insert_range_tombstone(start, end, batch.sequence() + i as u64);
                    n += 1;
                }
                Some(_) => n += 1,
                None => {}
            }
        }
        let ops: Vec<BatchOp<'_>> = ops
            .into_iter()
            .map(|op| {
                op.unwrap_or(BatchOp::DeleteRange {
                    start: &[],
                    end: &[],
                })
            })
            .collect();
        // Internal-key order: user key up, then newest (last in the batch)
        // first; sorted on each key's first 8 bytes, then the rest.
        let mut order: Vec<(u64, u32)> = ops
            .iter()
            .enumerate()
            .filter(|(_, op)| op.kind().is_some())
            .map(|(i, op)| (key::prefix(op.key()), i as u32))
            .collect();
        order.sort_unstable_by(|&(pa, ia), &(pb, ib)| {
            pa.cmp(&pb)
                .then_with(|| {
                    key::compare_user_keys(ops[ia as usize].key(), ops[ib as usize].key())
                })
                .then_with(|| ib.cmp(&ia))
        });
        for (_, i) in order {
            let op = &ops[i as usize];
            let seq = batch.sequence() + u64::from(i);
            if let Some(kind) = op.kind() {
                self.insert_with(op.key(), seq, kind, op.value(), &mut splice);
            }
        }
        n
    }

    /// The newest version of `user_key` with sequence ≤ `snapshot_seq`, or
    /// `None` if the memtable holds no such version.
    #[cfg(test)]
    pub fn get(&self, user_key: &[u8], snapshot_seq: u64) -> Option<LookupResult> {
        self.get_versioned(user_key, key_hash(user_key), snapshot_seq)
            .map(|(_, r)| r)
    }

    /// [`Self::get`] with the key's hash ([`key_hash`]) already computed,
    /// and the sequence number of the version found.
    pub fn get_versioned(
        &self,
        user_key: &[u8],
        hash: u64,
        snapshot_seq: u64,
    ) -> Option<(u64, LookupResult)> {
        // An empty memtable (a store between bursts of writes) answers
        // without its filter's cache miss.
        if self.list.len() == 0 || !self.filter.may_contain(hash) {
            return None;
        }
        // `Value` is the largest kind, so (key, snapshot, Value) sorts before
        // every version of `key` visible at the snapshot and after the rest.
        let trailer = key::pack_trailer(snapshot_seq.min(MAX_SEQUENCE), ValueKind::Value);
        let len = user_key.len() + key::TRAILER_LEN;
        // Short keys (most) are built on the stack: no allocation per lookup.
        let mut stack = [0u8; 64];
        let mut heap = Vec::new();
        let probe: &mut [u8] = if len <= stack.len() {
            &mut stack[..len]
        } else {
            heap.resize(len, 0);
            &mut heap
        };
        probe[..user_key.len()].copy_from_slice(user_key);
        probe[user_key.len()..].copy_from_slice(&trailer.to_le_bytes());
        let e = self.list.seek(probe, true)?;
        let parsed = key::parse(self.list.key(e))?;
        if parsed.user_key != user_key {
            return None;
        }
        Some((
            parsed.seq,
            match parsed.kind {
                ValueKind::Value => LookupResult::Value(Bytes::copy_from_slice(self.list.value(e))),
                ValueKind::Deletion => LookupResult::Deleted,
            },
        ))
    }

    /// Iterates every entry in internal-key order, including entries inserted
    /// while iterating.
    pub fn iter(&self) -> MemTableIter<'_> {
        self.iter_range(Bound::Unbounded, Bound::Unbounded, MAX_SEQUENCE)
    }

    /// Entries with internal keys between `lo` and `hi` (full internal keys:
    /// `make_internal_key(k, MAX_SEQUENCE, Value)` sorts before every version
    /// of user key `k`) whose sequence is ≤ `snapshot_seq`, in internal-key
    /// order, borrowed from the memtable; double-ended (`.rev()` walks down
    /// from `hi`). Writes may continue meanwhile; entries newer than the
    /// snapshot are skipped, so the iteration is a consistent view as long as
    /// the store publishes sequence numbers only after their batch is fully
    /// inserted.
    pub fn iter_range(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        snapshot_seq: u64,
    ) -> MemTableIter<'_> {
        let list = &self.list;
        let front = match lo {
            Bound::Unbounded => list.first(),
            Bound::Included(k) => list.seek(k, true),
            Bound::Excluded(k) => list.seek(k, false),
        };
        let back = match hi {
            Bound::Unbounded => list.seek_back(None, false),
            Bound::Included(k) => list.seek_back(Some(k), true),
            Bound::Excluded(k) => list.seek_back(Some(k), false),
        };
        let ends = match (front, back) {
            (Some(f), Some(b)) if key::compare_internal(list.key(f), list.key(b)).is_le() => {
                Some((f, b))
            }
            _ => None,
        };
        MemTableIter {
            list,
            ends,
            snapshot_seq,
        }
    }

    /// Approximate bytes used: the arena holding the skip list's nodes, keys
    /// and values. Grows monotonically; the store flushes the memtable when
    /// it passes the write buffer size.
    pub fn approximate_memory_bytes(&self) -> usize {
        self.list.memory_usage()
    }

    /// Number of entries (versions, tombstones included).
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True if no entry and no range deletion was inserted.
    pub fn is_empty(&self) -> bool {
        self.list.len() == 0 && !self.has_range_tombstones.load(AtomicOrdering::Acquire)
    }
}

/// Ordered iterator over a memtable's entries, yielding
/// `(internal key, value)` borrowed from it; see [`MemTable::iter_range`].
pub struct MemTableIter<'a> {
    list: &'a SkipList,
    /// The next entries to yield from the front and from the back (the
    /// front's key never after the back's), or `None` once they have met.
    ends: Option<(Node, Node)>,
    snapshot_seq: u64,
}

impl<'a> MemTableIter<'a> {
    fn visible(&self, n: Node) -> bool {
        key::trailer(self.list.key(n)) >> 8 <= self.snapshot_seq
    }

    fn entry(&self, n: Node) -> (&'a [u8], &'a [u8]) {
        (self.list.key(n), self.list.value(n))
    }
}

impl<'a> Iterator for MemTableIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        while let Some((front, back)) = self.ends {
            // The front walks the bottom level, which reaches every node up
            // to the back (nodes are never removed).
            self.ends = match self.list.successor(front) {
                Some(n) if front != back => Some((n, back)),
                _ => None,
            };
            if self.visible(front) {
                return Some(self.entry(front));
            }
        }
        None
    }
}

impl DoubleEndedIterator for MemTableIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        while let Some((front, back)) = self.ends {
            self.ends = match self.list.predecessor(back) {
                Some(n) if front != back => Some((front, n)),
                _ => None,
            };
            if self.visible(back) {
                return Some(self.entry(back));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{compare_internal, make_internal_key};
    use proptest::prelude::*;
    use std::cmp::Ordering;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    /// The key filter never hides a key, even far past the entries it was
    /// sized for, and rules out most absent keys at its design load.
    #[test]
    fn key_filter_no_false_negatives_and_its_rate() {
        let m = MemTable::for_write_buffer(64 << 10);
        let design = (64 << 10) / KEY_FILTER_BYTES_PER_ENTRY;
        for i in 0..design as u32 {
            m.insert(&i.to_be_bytes(), 1, ValueKind::Value, b"v");
        }
        let absent = 100_000u32;
        let fps = (0..absent)
            .filter(|i| m.filter.may_contain(key_hash(&(i | 1 << 31).to_be_bytes())))
            .count();
        let fpr = fps as f64 / absent as f64;
        assert!(fpr < 0.02, "key filter FPR {fpr} at its design load");
        // Overfilled 8 times: still exact answers.
        for i in design as u32..8 * design as u32 {
            m.insert(&i.to_be_bytes(), 1, ValueKind::Value, b"v");
        }
        for i in 0..8 * design as u32 {
            assert!(m.get(&i.to_be_bytes(), 5).is_some(), "key {i}");
        }
        assert_eq!(m.get(&(1u32 << 31).to_be_bytes(), 5), None);
    }
    #[test]
    fn versions_and_snapshots() {
        let m = MemTable::new();
        m.insert(b"a", 1, ValueKind::Value, b"a1");
        m.insert(b"a", 3, ValueKind::Deletion, b"");
        m.insert(b"a", 5, ValueKind::Value, b"a5");
        m.insert(b"ab", 2, ValueKind::Value, b"ab2");
        m.insert(b"", 6, ValueKind::Value, b"empty");
        assert_eq!(m.get(b"", 5), None);
        assert_eq!(
            m.get(b"", 6),
            Some(LookupResult::Value(Bytes::from("empty")))
        );
        let all = |snap| m.iter_range(Bound::Unbounded, Bound::Unbounded, snap);
        assert_eq!(all(5).count(), 4);
        assert_eq!(all(6).next().unwrap().1, b"empty");
        assert_eq!(all(6).next_back().unwrap().1, b"ab2");
        assert_eq!(m.get(b"a", 0), None);
        assert_eq!(m.get(b"a", 1), Some(LookupResult::Value(Bytes::from("a1"))));
        assert_eq!(m.get(b"a", 2), Some(LookupResult::Value(Bytes::from("a1"))));
        assert_eq!(m.get(b"a", 3), Some(LookupResult::Deleted));
        assert_eq!(m.get(b"a", 4), Some(LookupResult::Deleted));
        assert_eq!(
            m.get(b"a", u64::MAX),
            Some(LookupResult::Value(Bytes::from("a5")))
        );
        assert_eq!(m.get(b"ab", 1), None);
        assert_eq!(m.get(b"b", 10), None);
        let keys: Vec<_> = m
            .iter()
            .skip(1)
            .map(|(k, _)| {
                let p = key::parse(k).unwrap();
                (p.user_key.to_vec(), p.seq)
            })
            .collect();
        assert_eq!(
            keys,
            vec![
                (b"a".to_vec(), 5),
                (b"a".to_vec(), 3),
                (b"a".to_vec(), 1),
                (b"ab".to_vec(), 2)
            ]
        );
        let seek = make_internal_key(b"a", 4, ValueKind::Value);
        let from: Vec<_> = m
            .iter_range(Bound::Included(&seek), Bound::Unbounded, 2)
            .map(|(_, v)| v)
            .collect();
        assert_eq!(from, vec![&b"a1"[..], b"ab2"]);
        let down: Vec<_> = m
            .iter_range(Bound::Unbounded, Bound::Excluded(&seek), 9)
            .rev()
            .map(|(_, v)| v)
            .collect();
        assert_eq!(down, vec![&b"a5"[..], b"empty"]);
        assert_eq!(m.len(), 5);
        // Each entry: its bytes, an 8-byte header and at least one link.
        assert!(m.approximate_memory_bytes() >= 5 * (9 + 16));
    }

    #[test]
    fn arena_entries_fill_chunks_and_big_ones_stand_alone() {
        let m = MemTable::new();
        // Sizes from 0 to ~12 KB: many entries per chunk, entries that do
        // not fit a chunk's rest, and entries over the arena's limit.
        let value = |i: usize| vec![(i % 251) as u8; (i * 37) % 12_000];
        let n = 3_000;
        for i in 0..n {
            m.insert(
                format!("k{i:05}").as_bytes(),
                i as u64 + 1,
                ValueKind::Value,
                &value(i),
            );
        }
        for i in 0..n {
            let got = m.get(format!("k{i:05}").as_bytes(), u64::MAX >> 8);
            assert_eq!(
                got,
                Some(LookupResult::Value(Bytes::from(value(i)))),
                "key {i}"
            );
        }
        // A value outlives its memtable (it holds its chunk).
        let held = m.get(b"k00007", 100).unwrap();
        drop(m);
        assert_eq!(held, LookupResult::Value(Bytes::from(value(7))));
    }

    /// A batch's range deletions go to the tombstone list with their own
    /// sequence numbers, its points to the skip list; a memtable holding
    /// only a range deletion is not empty (it must be flushed).
    #[test]
    fn range_deletions_are_kept_apart_with_their_sequences() {
        let m = MemTable::new();
        assert!(m.range_tombstones().is_none());
        let mut b = WriteBatch::new();
        b.delete_range(b"a", b"m");
        assert_eq!(b.len(), 1);
        b.set_sequence(7);
        m.insert_batch(&b);
        assert!(!m.is_empty());
        assert_eq!(m.len(), 0);
        let mut b = WriteBatch::new();
        b.put(b"c", b"1");
        b.delete_range(b"b", b"e");
        b.put(b"d", b"2");
        b.set_sequence(10);
        m.insert_batch(&b);
        let t = m.range_tombstones().unwrap();
        assert_eq!(t.max_cover(b"c", 100), 11);
        assert_eq!(t.max_cover(b"c", 10), 7);
        assert_eq!(t.max_cover(b"f", 100), 7);
        assert_eq!(t.max_cover(b"m", 100), 0);
        let hash = |k: &[u8]| key_hash(k);
        assert_eq!(
            m.get_versioned(b"c", hash(b"c"), 100).map(|r| r.0),
            Some(10)
        );
        assert_eq!(
            m.get_versioned(b"d", hash(b"d"), 100).map(|r| r.0),
            Some(12)
        );
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn insert_batch_assigns_sequences() {
        let m = MemTable::new();
        let mut b = WriteBatch::new();
        b.put(b"x", b"1");
        b.delete(b"x");
        b.put(b"y", b"2");
        b.set_sequence(10);
        m.insert_batch(&b);
        assert_eq!(m.get(b"x", 10), Some(LookupResult::Value(Bytes::from("1"))));
        assert_eq!(m.get(b"x", 11), Some(LookupResult::Deleted));
        assert_eq!(m.get(b"y", 11), None);
        assert_eq!(m.get(b"y", 12), Some(LookupResult::Value(Bytes::from("2"))));
    }

    /// Model: user key -> (seq -> Some(value) | None for a tombstone).
    type Model = BTreeMap<Vec<u8>, BTreeMap<u64, Option<Vec<u8>>>>;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn matches_btreemap_model(
            ops in prop::collection::vec(
                (0u8..12, any::<bool>(), prop::collection::vec(any::<u8>(), 0..8)), 1..120),
            snapshots in prop::collection::vec(0u64..140, 1..6),
        ) {
            let m = MemTable::new();
            let mut model = Model::new();
            // Every third op alone, the rest in write batches of up to 8
            // (inserted in key order), sequences in op order throughout.
            let mut batch = WriteBatch::new();
            for (i, (k, put, v)) in ops.iter().enumerate() {
                let seq = i as u64 + 1;
                let key = if *k == 0 { Vec::new() } else { vec![b'k', *k % 4, *k] };
                if i % 3 == 0 {
                    if !batch.is_empty() {
                        m.insert_batch(&batch);
                        batch = WriteBatch::new();
                    }
                    if *put {
                        m.insert(&key, seq, ValueKind::Value, v);
                    } else {
                        m.insert(&key, seq, ValueKind::Deletion, b"");
                    }
                } else {
                    if batch.is_empty() {
                        batch.set_sequence(seq);
                    }
                    if *put {
                        batch.put(&key, v);
                    } else {
                        batch.delete(&key);
                    }
                    if batch.len() == 8 {
                        m.insert_batch(&batch);
                        batch = WriteBatch::new();
                    }
                }
                model.entry(key).or_default().insert(seq, put.then(|| v.clone()));
            }
            if !batch.is_empty() {
                m.insert_batch(&batch);
            }
            for &snap in &snapshots {
                for k in 0u8..12 {
                    let key = if k == 0 { Vec::new() } else { vec![b'k', k % 4, k] };
                    let want = model.get(&key).and_then(|vs| vs.range(..=snap).next_back())
                        .map(|(_, v)| match v {
                            Some(v) => LookupResult::Value(Bytes::from(v.clone())),
                            None => LookupResult::Deleted,
                        });
                    prop_assert_eq!(m.get(&key, snap), want);
                }
                // Full ordered iteration at the snapshot.
                let want: Vec<(Vec<u8>, u64, Vec<u8>)> = model.iter()
                    .flat_map(|(k, vs)| vs.range(..=snap).rev()
                        .map(move |(s, v)| (k.clone(), *s, v.clone().unwrap_or_default())))
                    .collect();
                let got: Vec<(Vec<u8>, u64, Vec<u8>)> = m
                    .iter_range(Bound::Unbounded, Bound::Unbounded, snap)
                    .map(|(ik, v)| {
                        let p = key::parse(ik).unwrap();
                        (p.user_key.to_vec(), p.seq, v.to_vec())
                    })
                    .collect();
                prop_assert_eq!(&got, &want);
                // Seek into the middle.
                let seek = make_internal_key(&[b'k', 1], snap, ValueKind::Value);
                let from: Vec<_> = m.iter_range(Bound::Included(&seek), Bound::Unbounded, snap)
                    .map(|(ik, _)| ik.to_vec())
                    .collect();
                let want_all: Vec<_> = want.iter()
                    .map(|(k, s, _)| {
                        let kind = if model[k][s].is_some() { ValueKind::Value } else { ValueKind::Deletion };
                        make_internal_key(k, *s, kind)
                    })
                    .collect();
                let want_from: Vec<_> = want_all.iter()
                    .filter(|ik| compare_internal(ik, &seek) != Ordering::Less)
                    .cloned()
                    .collect();
                prop_assert_eq!(from, want_from);
                // And backward from it.
                let down: Vec<_> = m.iter_range(Bound::Unbounded, Bound::Excluded(&seek), snap)
                    .rev()
                    .map(|(ik, _)| ik.to_vec())
                    .collect();
                let want_down: Vec<_> = want_all.iter()
                    .filter(|ik| compare_internal(ik, &seek) == Ordering::Less)
                    .rev()
                    .cloned()
                    .collect();
                prop_assert_eq!(down, want_down);
            }
            prop_assert_eq!(m.len(), ops.len());
        }
    }

    /// Writers insert while readers look up and iterate; every value a reader
    /// sees is one that was written, and each writer's own keys are visible
    /// once inserted.
    #[test]
    fn concurrent_insert_and_read() {
        let m = Arc::new(MemTable::new());
        const WRITERS: u64 = 2;
        const PER: u64 = 5_000;
        let mut handles = Vec::new();
        for w in 0..WRITERS {
            let m = m.clone();
            handles.push(std::thread::spawn(move || {
                for i in 0..PER {
                    let seq = 1 + i * WRITERS + w;
                    let key = format!("key{:05}", i % 1000);
                    m.insert(key.as_bytes(), seq, ValueKind::Value, &seq.to_le_bytes());
                    // Read-your-write at the write's own sequence.
                    match m.get(key.as_bytes(), seq) {
                        Some(LookupResult::Value(v)) => assert_eq!(&v[..], &seq.to_le_bytes()),
                        other => panic!("lost own write: {other:?}"),
                    }
                }
            }));
        }
        let reader = {
            let m = m.clone();
            std::thread::spawn(move || {
                let mut scans = 0;
                while scans < 20 {
                    let mut prev: Option<&[u8]> = None;
                    for (k, v) in m.iter() {
                        let p = key::parse(k).unwrap();
                        assert_eq!(v, &p.seq.to_le_bytes());
                        if let Some(prev) = &prev {
                            assert_eq!(compare_internal(prev, k), Ordering::Less);
                        }
                        prev = Some(k);
                    }
                    scans += 1;
                }
            })
        };
        for h in handles {
            h.join().unwrap();
        }
        reader.join().unwrap();
        assert_eq!(m.len() as u64, WRITERS * PER);
        for i in 0..1000u64 {
            let key = format!("key{i:05}");
            // Newest version of key i: the largest seq among its writes.
            let newest = (0..PER)
                .filter(|j| j % 1000 == i)
                .flat_map(|j| (0..WRITERS).map(move |w| 1 + j * WRITERS + w))
                .max()
                .unwrap();
            assert_eq!(
                m.get(key.as_bytes(), MAX_SEQUENCE),
                Some(LookupResult::Value(Bytes::copy_from_slice(
                    &newest.to_le_bytes()
                )))
            );
        }
    }
}
