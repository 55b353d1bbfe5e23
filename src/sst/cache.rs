//! The block cache: a sharded LRU of verified data-block contents, keyed by
//! `(file id, block offset)` and bounded in bytes.
//!
//! Only data blocks go through the cache. Index and filter blocks are held by
//! each open [`Table`](super::Table) for its whole life, so a large filter can
//! never be evicted by (or fail to fit beside) data blocks — the failure mode
//! RocksDB shows when its filter blocks live in a too-small sharded cache.
//!
//! Each shard is a `Mutex` around a hash map plus an intrusive doubly linked
//! list in a slab (`Vec`), so a hit is one lock, one map probe and a few index
//! updates. Values are [`Bytes`]: a hit hands out a reference-counted clone.
//!
//! An evicted block nobody else holds keeps its memory in its shard (a few
//! per shard) for the next block read into that shard
//! ([`BlockCache::recycled`]): a miss then reads into memory already
//! allocated and written, instead of allocating, zeroing and later freeing a
//! fresh buffer — on a working set larger than the cache, that is most gets.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Bytes, BytesMut};

/// Bytes charged per cached block on top of its contents (map slot, list
/// node, `Bytes` header), so that many tiny blocks cannot overrun the budget.
pub const ENTRY_OVERHEAD: usize = 64;
const MAX_SHARDS: usize = 16;
/// Shards are split no smaller than this, so ordinary blocks always fit.
const MIN_SHARD_BYTES: usize = 256 * 1024;
const NIL: usize = usize::MAX;
/// Evicted buffers a shard keeps for reuse (enough for the reads in flight
/// on a few threads; the rest are freed).
const SPARE_BUFFERS: usize = 4;

type Key = (u64, u64);

/// A cheap hasher for the `(file id, offset)` key (both already well spread
/// after one multiply); SipHash would cost more than the rest of a hit.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(29) ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

struct Node {
    key: Key,
    value: Bytes,
    charge: usize,
    prev: usize,
    next: usize,
}

struct Shard {
    map: HashMap<Key, usize, BuildHasherDefault<KeyHasher>>,
    nodes: Vec<Node>,
    free: Vec<usize>,
    /// Most recently used.
    head: usize,
    /// Least recently used (evicted first).
    tail: usize,
    usage: usize,
    capacity: usize,
    /// Memory of evicted blocks, for [`BlockCache::recycled`].
    spare: Vec<BytesMut>,
}

impl Shard {
    fn new(capacity: usize) -> Self {
        Shard {
            map: HashMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            usage: 0,
            capacity,
            spare: Vec::new(),
        }
    }

    fn unlink(&mut self, i: usize) {
        let (prev, next) = (self.nodes[i].prev, self.nodes[i].next);
        if prev == NIL {
            self.head = next;
        } else {
            self.nodes[prev].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.nodes[next].prev = prev;
        }
    }

    fn push_front(&mut self, i: usize) {
        self.nodes[i].prev = NIL;
        self.nodes[i].next = self.head;
        if self.head != NIL {
            self.nodes[self.head].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    fn get(&mut self, key: Key) -> Option<Bytes> {
        let i = *self.map.get(&key)?;
        if self.head != i {
            self.unlink(i);
            self.push_front(i);
        }
        Some(self.nodes[i].value.clone())
    }

    /// Inserts; returns how many entries were evicted, or `None` if the block
    /// is larger than the whole shard and was not cached.
    fn insert(&mut self, key: Key, value: Bytes) -> Option<u64> {
        let charge = value.len() + ENTRY_OVERHEAD;
        if charge > self.capacity {
            return None;
        }
        if let Some(&i) = self.map.get(&key) {
            self.usage = self.usage - self.nodes[i].charge + charge;
            self.nodes[i].value = value;
            self.nodes[i].charge = charge;
            self.unlink(i);
            self.push_front(i);
        } else {
            let node = Node {
                key,
                value,
                charge,
                prev: NIL,
                next: NIL,
            };
            let i = match self.free.pop() {
                Some(i) => {
                    self.nodes[i] = node;
                    i
                }
                None => {
                    self.nodes.push(node);
                    self.nodes.len() - 1
                }
            };
            self.map.insert(key, i);
            self.push_front(i);
            self.usage += charge;
        }
        let mut evicted = 0;
        while self.usage > self.capacity && self.tail != NIL {
            let t = self.tail;
            self.unlink(t);
            self.map.remove(&self.nodes[t].key);
            self.usage -= self.nodes[t].charge;
            let value = std::mem::take(&mut self.nodes[t].value);
            // Unique: no reader holds a clone or a value sliced from it, so
            // the allocation comes back as is (no copy, contents kept).
            if self.spare.len() < SPARE_BUFFERS
                && let Ok(buf) = value.try_into_mut()
            {
                self.spare.push(buf);
            }
            self.free.push(t);
            evicted += 1;
        }
        Some(evicted)
    }
}

/// A snapshot of the cache's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Configured capacity in bytes.
    pub capacity: usize,
    /// Bytes currently charged (contents + [`ENTRY_OVERHEAD`] per entry).
    pub usage: usize,
    /// Blocks currently cached.
    pub entries: usize,
    /// Lookups that found their block.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Blocks inserted.
    pub inserts: u64,
    /// Blocks evicted to make room.
    pub evictions: u64,
}

/// A sharded LRU cache of data blocks, shared by all tables of a store.
pub struct BlockCache {
    shards: Box<[Mutex<Shard>]>,
    capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    inserts: AtomicU64,
    evictions: AtomicU64,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("shards", &self.shards.len())
            .field("stats", &self.stats())
            .finish()
    }
}

impl BlockCache {
    /// A cache holding up to `capacity` bytes; 0 turns caching off (every
    /// lookup misses without being counted, nothing is stored).
    pub fn new(capacity: usize) -> Self {
        let mut n = 1;
        while n < MAX_SHARDS && capacity / (n * 2) >= MIN_SHARD_BYTES {
            n *= 2;
        }
        let per_shard = capacity / n;
        BlockCache {
            shards: (0..n).map(|_| Mutex::new(Shard::new(per_shard))).collect(),
            capacity,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            inserts: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    /// False when the capacity is 0.
    pub fn is_enabled(&self) -> bool {
        self.capacity > 0
    }

    /// Configured capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of shards.
    pub fn num_shards(&self) -> usize {
        self.shards.len()
    }

    fn shard(&self, key: Key) -> std::sync::MutexGuard<'_, Shard> {
        let h = (key.0.rotate_left(32) ^ key.1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let i = (h >> 40) as usize & (self.shards.len() - 1);
        // A panic while holding the lock cannot leave the list half-linked
        // (no operation panics mid-update), so a poisoned shard is still usable.
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the block at `offset` in file `file_id` is cached, without
    /// counting a hit or a miss or moving it in the eviction order.
    pub fn contains(&self, file_id: u64, offset: u64) -> bool {
        self.is_enabled()
            && self
                .shard((file_id, offset))
                .map
                .contains_key(&(file_id, offset))
    }

    /// The cached contents of the block at `offset` in file `file_id`.
    pub fn get(&self, file_id: u64, offset: u64) -> Option<Bytes> {
        if !self.is_enabled() {
            return None;
        }
        let r = self.shard((file_id, offset)).get((file_id, offset));
        let counter = if r.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        r
    }

    /// Memory to read the block at `offset` of `file_id` into before
    /// [`insert`](Self::insert)ing it: an evicted block's buffer (length and
    /// contents arbitrary) if its shard kept one, else an empty buffer.
    pub fn recycled(&self, file_id: u64, offset: u64) -> BytesMut {
        if !self.is_enabled() {
            return BytesMut::new();
        }
        self.shard((file_id, offset))
            .spare
            .pop()
            .unwrap_or_default()
    }

    /// Caches `block` (verified contents, no trailer), evicting least recently
    /// used blocks as needed. Blocks larger than a shard are not cached.
    pub fn insert(&self, file_id: u64, offset: u64, block: Bytes) {
        if !self.is_enabled() {
            return;
        }
        let r = self
            .shard((file_id, offset))
            .insert((file_id, offset), block);
        if let Some(evicted) = r {
            self.inserts.fetch_add(1, Ordering::Relaxed);
            self.evictions.fetch_add(evicted, Ordering::Relaxed);
        }
    }

    /// Current counters and usage.
    pub fn stats(&self) -> CacheStats {
        let (mut usage, mut entries) = (0, 0);
        for s in self.shards.iter() {
            let s = s.lock().unwrap_or_else(|e| e.into_inner());
            usage += s.usage;
            entries += s.map.len();
        }
        CacheStats {
            capacity: self.capacity,
            usage,
            entries,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            inserts: self.inserts.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(n: usize, fill: u8) -> Bytes {
        Bytes::from(vec![fill; n])
    }

    #[test]
    fn hit_miss_and_lru_eviction() {
        // One shard of 3 * (100 + overhead) bytes.
        let c = BlockCache::new(3 * (100 + ENTRY_OVERHEAD));
        assert_eq!(c.num_shards(), 1);
        assert_eq!(c.get(1, 0), None);
        c.insert(1, 0, block(100, 0));
        c.insert(1, 100, block(100, 1));
        c.insert(2, 0, block(100, 2));
        assert_eq!(c.get(1, 0).unwrap()[0], 0); // 1/0 is now most recent
        c.insert(3, 0, block(100, 3)); // evicts 1/100, the LRU
        assert_eq!(c.get(1, 100), None);
        assert_eq!(c.get(2, 0).unwrap()[0], 2);
        assert_eq!(c.get(3, 0).unwrap()[0], 3);
        assert_eq!(c.get(1, 0).unwrap()[0], 0);
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.inserts, s.evictions), (4, 2, 4, 1));
        assert_eq!(s.entries, 3);
        assert_eq!(s.usage, 3 * (100 + ENTRY_OVERHEAD));
    }

    #[test]
    fn replace_and_oversized() {
        let c = BlockCache::new(1000);
        c.insert(1, 0, block(10, 1));
        c.insert(1, 0, block(20, 2));
        assert_eq!(c.get(1, 0).unwrap().len(), 20);
        assert_eq!(c.stats().usage, 20 + ENTRY_OVERHEAD);
        c.insert(1, 1, block(5000, 0));
        assert_eq!(c.get(1, 1), None);
        assert_eq!(c.stats().entries, 1);
    }

    #[test]
    fn evicted_blocks_memory_is_recycled_unless_still_held() {
        let c = BlockCache::new(2 * (100 + ENTRY_OVERHEAD));
        assert_eq!(c.num_shards(), 1);
        assert!(c.recycled(9, 0).capacity() == 0);
        c.insert(1, 0, block(100, 1));
        let held = c.get(1, 0).unwrap();
        c.insert(1, 100, block(100, 2));
        c.insert(1, 200, block(100, 3)); // evicts 1/0, still held by a reader
        assert_eq!(c.recycled(9, 0).capacity(), 0);
        assert_eq!(held[0], 1);
        c.insert(1, 300, block(100, 4)); // evicts 1/100, held by nobody
        let buf = c.recycled(9, 0);
        assert_eq!((buf.len(), buf.capacity(), buf[0]), (100, 100, 2));
        assert_eq!(c.recycled(9, 0).capacity(), 0, "handed out once");
        assert_eq!(BlockCache::new(0).recycled(1, 0).capacity(), 0);
    }

    #[test]
    fn disabled_cache_stores_nothing() {
        let c = BlockCache::new(0);
        assert!(!c.is_enabled());
        c.insert(1, 0, block(10, 1));
        assert_eq!(c.get(1, 0), None);
        assert_eq!(c.stats(), CacheStats::default());
    }

    #[test]
    fn sharded_cache_respects_capacity_under_churn() {
        let cap = 8 << 20;
        let c = BlockCache::new(cap);
        assert_eq!(c.num_shards(), 16);
        for i in 0..5000u64 {
            c.insert(i % 7, i * 4096, block(4096, i as u8));
            if i % 3 == 0 {
                let _ = c.get(i % 7, (i / 2) * 4096);
            }
        }
        let s = c.stats();
        assert!(s.usage <= cap);
        assert!(s.evictions > 0);
        assert_eq!(s.inserts, 5000);
    }
}
