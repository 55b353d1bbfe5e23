//! The memtable's index: a concurrent, insert-only skip list of
//! `(internal key, value)` entries ordered by [`compare_internal`], whose
//! nodes live in an [`Arena`] (RocksDB's `InlineSkipList`).
//!
//! A node is one arena allocation: its tower of next pointers, then an 8-byte
//! header (key length, value length), then the key and the value bytes. The
//! node's address is that of its header; level `i`'s pointer sits `8·(i+1)`
//! bytes below it, so a node of height 1 costs 16 bytes beyond its key and
//! value (a heap skip list costs ~100: node allocation, two buffer handles,
//! allocator header), and a memtable holds ~1.6× the entries of 100-byte
//! values in the same memory.
//!
//! Inserts link a node level by level from the bottom with a compare-and-swap
//! (so any number of threads may insert at once); readers never lock and
//! never wait. Nothing is ever removed: a node stays valid as long as the list
//! does, so readers hold plain pointers.

use std::cmp::Ordering;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};

use super::arena::Arena;
use crate::key::compare_internal;

/// Levels at most: with branching 4, enough for 4^12 = 16M entries.
const MAX_HEIGHT: usize = 12;
/// Bytes of a node's header (key length u32, value length u32).
const HEADER: usize = 8;
/// Bytes of one level's next pointer.
const LINK: usize = std::mem::size_of::<AtomicPtr<u8>>();

/// A node of the list (its header's address). `Copy`: it is a pointer into
/// the list's arena, valid while the list is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Node(NonNull<u8>);

/// Where the last insert went, kept for the next one (RocksDB's `Splice`):
/// each level's predecessor of the last key inserted. An insert of a larger
/// key starts each level from there when that is ahead of the usual descent,
/// so a run of inserts in key order walks only the gaps between its keys
/// instead of each search's full path of cache misses. Valid for the list
/// that made it ([`SkipList::splice`]) and only for it.
pub(crate) struct Splice {
    prev: [Node; MAX_HEIGHT],
    /// Levels of `prev` that are set.
    levels: usize,
    /// The head of the list it belongs to.
    owner: Node,
}

/// See the module documentation. `Send + Sync`.
pub(crate) struct SkipList {
    arena: Arena,
    /// A node of height [`MAX_HEIGHT`] with an empty key, before every entry
    /// (never compared, never yielded).
    head: Node,
    /// Levels in use (a hint: a search above it finds only null pointers).
    height: AtomicUsize,
    len: AtomicUsize,
    /// State of the tower-height generator.
    rng: AtomicU64,
}

// SAFETY: nodes are written only before they are published (by a release
// compare-and-swap) and are never freed before the list; afterwards only
// their atomic tower pointers change. The arena synchronises allocation.
unsafe impl Send for SkipList {}
// SAFETY: as above.
unsafe impl Sync for SkipList {}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

impl SkipList {
    /// An empty list.
    pub(crate) fn new() -> Self {
        let arena = Arena::new();
        let head = Self::alloc_node(&arena, MAX_HEIGHT, &[], &[]);
        SkipList {
            arena,
            head,
            height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            rng: AtomicU64::new(0x2545_F491_4F6C_DD1D),
        }
    }

    /// A node of `height` holding `key_parts` concatenated and `value`, its
    /// tower null.
    fn alloc_node(arena: &Arena, height: usize, key_parts: &[&[u8]], value: &[u8]) -> Node {
        let klen: usize = key_parts.iter().map(|p| p.len()).sum();
        let size = height * LINK + HEADER + klen + value.len();
        let base = arena.alloc(size).as_ptr();
        let lens = (
            u32::try_from(klen).expect("memtable key over 4 GiB"),
            u32::try_from(value.len()).expect("memtable value over 4 GiB"),
        );
        // SAFETY: `base` holds `size` bytes, aligned for the pointers; every
        // write below stays inside them.
        unsafe {
            for i in 0..height {
                ptr::write(
                    base.add(i * LINK) as *mut AtomicPtr<u8>,
                    AtomicPtr::new(ptr::null_mut()),
                );
            }
            let node = base.add(height * LINK);
            ptr::write(node as *mut u32, lens.0);
            ptr::write(node.add(4) as *mut u32, lens.1);
            let mut at = node.add(HEADER);
            for p in key_parts.iter().chain([&value]) {
                ptr::copy_nonoverlapping(p.as_ptr(), at, p.len());
                at = at.add(p.len());
            }
            Node(NonNull::new_unchecked(node))
        }
    }

    /// Level `level`'s next pointer of `node` (`level` below its height).
    #[inline]
    fn link(&self, node: Node, level: usize) -> &AtomicPtr<u8> {
        // SAFETY: every node this list hands around has a tower of at least
        // `level + 1` pointers below its header (callers only follow levels
        // the node was linked at), initialised before it was published.
        unsafe { &*(node.0.as_ptr().sub((level + 1) * LINK) as *const AtomicPtr<u8>) }
    }

    #[inline]
    fn next(&self, node: Node, level: usize) -> Option<Node> {
        NonNull::new(self.link(node, level).load(Acquire)).map(Node)
    }

    #[inline]
    fn lens(&self, node: Node) -> (usize, usize) {
        // SAFETY: the header was written before the node was published.
        unsafe {
            let p = node.0.as_ptr();
            (
                ptr::read(p as *const u32) as usize,
                ptr::read(p.add(4) as *const u32) as usize,
            )
        }
    }

    /// The internal key of `node`.
    #[inline]
    pub(crate) fn key(&self, node: Node) -> &[u8] {
        let (klen, _) = self.lens(node);
        // SAFETY: `klen` bytes of key follow the header, written before the
        // node was published and never changed; they live as long as `self`.
        unsafe { std::slice::from_raw_parts(node.0.as_ptr().add(HEADER), klen) }
    }

    /// The value of `node`.
    #[inline]
    pub(crate) fn value(&self, node: Node) -> &[u8] {
        let (klen, vlen) = self.lens(node);
        // SAFETY: as for `key`; the value follows the key.
        unsafe { std::slice::from_raw_parts(node.0.as_ptr().add(HEADER + klen), vlen) }
    }

    /// Entries inserted.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    /// Bytes of the arena in use by entries (nodes, keys, values; not the
    /// head, so an empty list uses 0).
    pub(crate) fn memory_usage(&self) -> usize {
        self.arena.memory_usage() - (MAX_HEIGHT * LINK + HEADER)
    }

    /// A tower height: 1 with probability 3/4, each further level 1/4 as
    /// likely as the one below.
    fn random_height(&self) -> usize {
        // SplitMix64 over a shared counter: no lock, fine under contention.
        let mut z = self.rng.fetch_add(0x9E37_79B9_7F4A_7C15, Relaxed);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (1 + z.trailing_zeros() as usize / 2).min(MAX_HEIGHT)
    }

    /// Starting at `from` on `level` (a node before `key`, or the head), the
    /// last node there whose key is before `key` and the node after it.
    #[inline]
    fn splice_at(&self, key: &[u8], mut from: Node, level: usize) -> (Node, Option<Node>) {
        loop {
            match self.next(from, level) {
                Some(n) if compare_internal(self.key(n), key) == Ordering::Less => from = n,
                next => return (from, next),
            }
        }
    }

    /// A splice for [`Self::insert_hinted`] that knows nothing yet.
    pub(crate) fn splice(&self) -> Splice {
        Splice {
            prev: [self.head; MAX_HEIGHT],
            levels: 0,
            owner: self.head,
        }
    }

    /// Inserts `key_parts` concatenated (an internal key) with `value`.
    /// Returns false, inserting nothing, if an equal key is present (its
    /// value stays).
    #[cfg(test)]
    pub(crate) fn insert(&self, key_parts: &[&[u8]], value: &[u8]) -> bool {
        self.insert_hinted(key_parts, value, &mut self.splice())
    }

    /// [`Self::insert`], starting the search from `splice` (where this
    /// thread's previous insert went) and leaving it at this insert. Any key
    /// order is correct; ascending order is fast.
    pub(crate) fn insert_hinted(
        &self,
        key_parts: &[&[u8]],
        value: &[u8],
        splice: &mut Splice,
    ) -> bool {
        assert!(splice.owner == self.head, "a splice of another skip list");
        let height = self.random_height();
        let node = Self::alloc_node(&self.arena, height, key_parts, value);
        let key = self.key(node);
        let mut top = self.height.load(Relaxed);
        while height > top {
            match self
                .height
                .compare_exchange_weak(top, height, Relaxed, Relaxed)
            {
                Ok(_) => top = height,
                Err(now) => top = now,
            }
        }
        let mut prev = [self.head; MAX_HEIGHT];
        let mut next: [Option<Node>; MAX_HEIGHT] = [None; MAX_HEIGHT];
        let mut x = self.head;
        for level in (0..top).rev() {
            // The splice's node at this level, if it is before the key and
            // ahead of where the descent got (both are linked at this level).
            let p = splice.prev[level];
            if level < splice.levels
                && p != self.head
                && compare_internal(self.key(p), key).is_lt()
                && (x == self.head || compare_internal(self.key(x), self.key(p)).is_lt())
            {
                x = p;
            }
            (x, next[level]) = self.splice_at(key, x, level);
            prev[level] = x;
        }
        splice.prev = prev;
        splice.levels = top;
        for level in 0..height {
            loop {
                if level == 0 && next[0].is_some_and(|n| compare_internal(self.key(n), key).is_eq())
                {
                    return false; // the node stays unreachable in the arena
                }
                let succ = next[level].map_or(ptr::null_mut(), |n| n.0.as_ptr());
                self.link(node, level).store(succ, Relaxed);
                // Release: a reader that loads the pointer to `node` sees its
                // header, key, value and lower links.
                match self.link(prev[level], level).compare_exchange(
                    succ,
                    node.0.as_ptr(),
                    Release,
                    Relaxed,
                ) {
                    Ok(_) => break,
                    // Another insert linked a node here: search on from the
                    // same predecessor (nodes are never removed).
                    Err(_) => (prev[level], next[level]) = self.splice_at(key, prev[level], level),
                }
            }
            // The next larger key goes after this node on its levels.
            splice.prev[level] = node;
        }
        self.len.fetch_add(1, Relaxed);
        true
    }

    /// The first node, if any.
    pub(crate) fn first(&self) -> Option<Node> {
        self.next(self.head, 0)
    }

    /// The node after `node`.
    #[inline]
    pub(crate) fn successor(&self, node: Node) -> Option<Node> {
        self.next(node, 0)
    }

    /// The first node whose key is at or after `key` (`inclusive`) or after
    /// it (not `inclusive`).
    pub(crate) fn seek(&self, key: &[u8], inclusive: bool) -> Option<Node> {
        let before = |n: Node| match compare_internal(self.key(n), key) {
            Ordering::Less => true,
            Ordering::Equal => !inclusive,
            Ordering::Greater => false,
        };
        let mut x = self.head;
        let mut after = None;
        for level in (0..self.height.load(Relaxed)).rev() {
            loop {
                // One load per step: the answer is the node this search saw
                // after `x`, not a later reload (which could be a node
                // inserted meanwhile before the target).
                after = self.next(x, level);
                match after {
                    Some(n) if before(n) => x = n,
                    _ => break,
                }
            }
        }
        after
    }

    /// The last node whose key is before `key` (`inclusive`: at or before),
    /// or the last node of all for `None`.
    pub(crate) fn seek_back(&self, key: Option<&[u8]>, inclusive: bool) -> Option<Node> {
        let mut x = self.head;
        for level in (0..self.height.load(Relaxed)).rev() {
            while let Some(n) = self.next(x, level) {
                let before = match key {
                    None => true,
                    Some(k) => match compare_internal(self.key(n), k) {
                        Ordering::Less => true,
                        Ordering::Equal => inclusive,
                        Ordering::Greater => false,
                    },
                };
                if !before {
                    break;
                }
                x = n;
            }
        }
        (x != self.head).then_some(x)
    }

    /// The node before `node`, if any (a search from the top: O(log n)).
    pub(crate) fn predecessor(&self, node: Node) -> Option<Node> {
        self.seek_back(Some(self.key(node)), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key};
    use std::collections::BTreeSet;
    use std::sync::Arc;

    fn ik(k: u32, seq: u64) -> Vec<u8> {
        make_internal_key(&k.to_be_bytes(), seq, ValueKind::Value)
    }

    fn keys_forward(l: &SkipList) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut n = l.first();
        while let Some(x) = n {
            out.push(l.key(x).to_vec());
            n = l.successor(x);
        }
        out
    }

    /// Sorted order, seeks in both directions and duplicate refusal, against
    /// a sorted set, over keys inserted in a scrambled order.
    #[test]
    fn ordered_and_seekable_like_a_sorted_set() {
        let l = SkipList::new();
        let mut model = BTreeSet::new();
        // Miri interprets every access: fewer keys there, the same checks.
        for i in 0..if cfg!(miri) { 300u32 } else { 5_000 } {
            let k = ik(i.wrapping_mul(2_654_435_761) % 3_000, u64::from(i % 3));
            let fresh = model.insert(k.clone());
            assert_eq!(l.insert(&[&k], &i.to_le_bytes()), fresh);
        }
        assert_eq!(l.len(), model.len());
        let sorted: Vec<Vec<u8>> = {
            let mut v: Vec<_> = model.iter().cloned().collect();
            v.sort_by(|a, b| compare_internal(a, b));
            v
        };
        assert_eq!(keys_forward(&l), sorted);
        // Backwards through predecessor.
        let mut back = Vec::new();
        let mut n = l.seek_back(None, false);
        while let Some(x) = n {
            back.push(l.key(x).to_vec());
            n = l.predecessor(x);
        }
        back.reverse();
        assert_eq!(back, sorted);
        // Seeks at keys present and absent.
        for probe in (0..3_100u32).step_by(7).flat_map(|k| [ik(k, 1), ik(k, 5)]) {
            let pos = sorted.partition_point(|k| compare_internal(k, &probe).is_lt());
            let ge = sorted.get(pos);
            let present = ge.is_some_and(|k| *k == probe);
            let gt = sorted.get(pos + usize::from(present));
            assert_eq!(l.seek(&probe, true).map(|n| l.key(n).to_vec()).as_ref(), ge);
            assert_eq!(
                l.seek(&probe, false).map(|n| l.key(n).to_vec()).as_ref(),
                gt
            );
            let lt = pos.checked_sub(1).map(|i| &sorted[i]);
            let le = if present { ge } else { lt };
            assert_eq!(
                l.seek_back(Some(&probe), false)
                    .map(|n| l.key(n).to_vec())
                    .as_ref(),
                lt
            );
            assert_eq!(
                l.seek_back(Some(&probe), true)
                    .map(|n| l.key(n).to_vec())
                    .as_ref(),
                le
            );
        }
        // A refused duplicate kept the first value.
        let k = ik(0, 0);
        let n = l.seek(&k, true).unwrap();
        assert_eq!(l.key(n), &k[..]);
        assert_eq!(l.value(n), &0u32.to_le_bytes());
    }

    /// One splice carried across inserts in any order — ascending runs,
    /// descending runs, scrambled — gives the same list as fresh searches,
    /// and refuses duplicates the same way.
    #[test]
    fn a_splice_carried_across_inserts_in_any_order() {
        let l = SkipList::new();
        let mut model = BTreeSet::new();
        let mut splice = l.splice();
        let mut keys: Vec<u32> = (0..2_000).collect();
        keys.extend((0..2_000).rev().step_by(3));
        keys.extend((0..3_000u32).map(|i| i.wrapping_mul(2_654_435_761) % 4_000));
        for (i, k) in keys.into_iter().enumerate() {
            let k = ik(k, 1);
            let fresh = model.insert(k.clone());
            assert_eq!(
                l.insert_hinted(&[&k], &(i as u32).to_le_bytes(), &mut splice),
                fresh
            );
        }
        let mut sorted: Vec<Vec<u8>> = model.into_iter().collect();
        sorted.sort_by(|a, b| compare_internal(a, b));
        assert_eq!(keys_forward(&l), sorted);
        assert_eq!(l.len(), sorted.len());
    }

    #[test]
    #[should_panic(expected = "a splice of another skip list")]
    fn a_splice_of_another_list_is_refused() {
        let (a, b) = (SkipList::new(), SkipList::new());
        let mut splice = a.splice();
        b.insert_hinted(&[&ik(1, 1)], b"", &mut splice);
    }

    #[test]
    fn empty_and_single() {
        let l = SkipList::new();
        assert_eq!(l.first(), None);
        assert_eq!(l.seek(&ik(1, 1), true), None);
        assert_eq!(l.seek_back(None, false), None);
        assert!(l.insert(&[b"", b"12345678"], b""));
        let n = l.first().unwrap();
        assert_eq!(l.key(n), b"12345678");
        assert_eq!(l.value(n), b"");
        assert_eq!(l.successor(n), None);
        assert_eq!(l.predecessor(n), None);
        assert_eq!(l.seek_back(None, false), Some(n));
    }

    /// Threads insert interleaved keys at once (some of them the same keys)
    /// while a reader walks the list: the reader always sees a sorted list,
    /// and afterwards every key is there exactly once.
    #[test]
    fn concurrent_inserts_and_walks() {
        let l = Arc::new(SkipList::new());
        const THREADS: u32 = 4;
        const PER: u32 = if cfg!(miri) { 100 } else { 20_000 };
        let writers: Vec<_> = (0..THREADS)
            .map(|t| {
                let l = l.clone();
                std::thread::spawn(move || {
                    let mut fresh = 0;
                    // Threads 0 and 2 carry a splice from insert to insert.
                    let mut splice = l.splice();
                    for i in 0..PER {
                        // Threads 0/1 and 2/3 write the same keys.
                        let k = ik((i * THREADS / 2 + t / 2).wrapping_mul(40_503), 1);
                        fresh += usize::from(if t % 2 == 0 {
                            l.insert_hinted(&[&k], &k, &mut splice)
                        } else {
                            l.insert(&[&k], &k)
                        });
                    }
                    fresh
                })
            })
            .collect();
        let reader = {
            let l = l.clone();
            std::thread::spawn(move || {
                for _ in 0..if cfg!(miri) { 2 } else { 20 } {
                    let keys = keys_forward(&l);
                    assert!(
                        keys.windows(2)
                            .all(|w| compare_internal(&w[0], &w[1]).is_lt())
                    );
                }
            })
        };
        let fresh: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
        reader.join().unwrap();
        let want = (PER * THREADS / 2) as usize;
        assert_eq!(fresh, want);
        assert_eq!(l.len(), want);
        let keys = keys_forward(&l);
        assert_eq!(keys.len(), want);
        for k in &keys {
            let n = l.seek(k, true).unwrap();
            assert_eq!(l.value(n), &k[..]);
        }
    }

    /// Each of two threads seeks every key right after inserting it, while
    /// the other inserts its neighbours: the seek finds exactly that key.
    /// (Caught a seek that reloaded its answer and could return a node
    /// inserted meanwhile before the target.)
    #[test]
    fn a_seek_finds_its_own_insert_among_concurrent_ones() {
        for _ in 0..if cfg!(miri) { 2 } else { 20 } {
            let l = Arc::new(SkipList::new());
            let threads: Vec<_> = (0..2u64)
                .map(|w| {
                    let l = l.clone();
                    std::thread::spawn(move || {
                        for i in 0..if cfg!(miri) { 200u64 } else { 5_000 } {
                            let seq = 1 + i * 2 + w;
                            let k = ik((i * 2 + w) as u32 % 2_000, seq);
                            assert!(l.insert(&[&k], &seq.to_le_bytes()));
                            let n = l.seek(&k, true).unwrap();
                            assert_eq!(l.key(n), &k[..]);
                            assert_eq!(l.value(n), &seq.to_le_bytes());
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
        }
    }
}
