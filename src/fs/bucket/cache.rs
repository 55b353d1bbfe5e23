//! The local disk cache of table data: aligned chunks of objects, one file
//! each, the least recently used evicted past a size limit, kept across
//! reopens.
//!
//! A chunk file is named `{object:032x}-{index}`, where `object` is a
//! 128-bit hash of the endpoint, bucket, object key and the object's ETag
//! (or size, where the server gives no ETag): an object written again under
//! the same key (a store deleted and made anew with the same prefix) is
//! another object to the cache, so a chunk of the old one is never read as
//! the new one's. A chunk is written to a temporary name and renamed into
//! place, so a crash leaves a whole chunk or none; a chunk whose file is
//! missing or of the wrong length counts as a miss. Its bytes are checked
//! where every table block is, by the block's checksum.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::client::{Counters, add};

/// A chunk: object hash and chunk index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct ChunkId {
    pub object: u128,
    pub index: u64,
}

impl ChunkId {
    fn file_name(&self) -> String {
        format!("{:032x}-{}", self.object, self.index)
    }

    fn parse(name: &str) -> Option<ChunkId> {
        let (o, i) = name.split_once('-')?;
        if o.len() != 32 {
            return None;
        }
        let id = ChunkId {
            object: u128::from_str_radix(o, 16).ok()?,
            index: i.parse().ok()?,
        };
        // Canonical spelling only: nothing else in the directory is ours.
        (id.file_name() == name).then_some(id)
    }
}

#[derive(Debug)]
struct Entry {
    len: u64,
    tick: u64,
}

#[derive(Debug, Default)]
struct Index {
    entries: HashMap<ChunkId, Entry>,
    /// Recency: the oldest tick first.
    lru: BTreeMap<u64, ChunkId>,
    tick: u64,
    bytes: u64,
}

impl Index {
    fn touch(&mut self, id: ChunkId) {
        self.tick += 1;
        let tick = self.tick;
        if let Some(e) = self.entries.get_mut(&id) {
            self.lru.remove(&e.tick);
            e.tick = tick;
            self.lru.insert(tick, id);
        }
    }

    fn insert(&mut self, id: ChunkId, len: u64) {
        self.remove(id);
        self.tick += 1;
        self.entries.insert(
            id,
            Entry {
                len,
                tick: self.tick,
            },
        );
        self.lru.insert(self.tick, id);
        self.bytes += len;
    }

    fn remove(&mut self, id: ChunkId) -> bool {
        match self.entries.remove(&id) {
            Some(e) => {
                self.lru.remove(&e.tick);
                self.bytes -= e.len;
                true
            }
            None => false,
        }
    }
}

/// The disk cache.
#[derive(Debug)]
pub(super) struct DiskCache {
    dir: PathBuf,
    limit: u64,
    index: Mutex<Index>,
    /// Distinguishes temporary files written at once.
    tmp_seq: AtomicU64,
}

impl DiskCache {
    /// The cache in `dir` (created if missing), holding at most `limit`
    /// bytes: the chunks already there are kept, the most recently
    /// written counting as the most recently used.
    pub(super) fn open(dir: &Path, limit: u64) -> io::Result<DiskCache> {
        fs::create_dir_all(dir)?;
        let mut found = Vec::new();
        for e in fs::read_dir(dir)? {
            let e = e?;
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            match ChunkId::parse(name) {
                Some(id) => {
                    let m = e.metadata()?;
                    found.push((m.modified().ok(), id, m.len()));
                }
                // A chunk being written when a process stopped.
                None if name.contains(".tmp") => {
                    let _ = fs::remove_file(e.path());
                }
                None => {}
            }
        }
        found.sort();
        let mut index = Index::default();
        for (_, id, len) in found {
            index.insert(id, len);
        }
        let cache = DiskCache {
            dir: dir.to_path_buf(),
            limit,
            index: Mutex::new(index),
            tmp_seq: AtomicU64::new(0),
        };
        cache.evict(None);
        Ok(cache)
    }

    fn index(&self) -> MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes held now.
    pub(super) fn bytes(&self) -> u64 {
        self.index().bytes
    }

    /// Whether the cache keeps anything.
    pub(super) fn enabled(&self) -> bool {
        self.limit > 0
    }

    /// Whether chunk `id` is held (its file is not checked).
    pub(super) fn holds(&self, id: ChunkId) -> bool {
        self.index().entries.contains_key(&id)
    }

    /// Reads `buf.len()` bytes at `offset` within chunk `id`, whose length
    /// is `len`; `false` on a miss (the chunk is not held, or its file is
    /// gone or of another length).
    pub(super) fn read(&self, id: ChunkId, len: u64, buf: &mut [u8], offset: u64) -> bool {
        {
            let mut ix = self.index();
            match ix.entries.get(&id) {
                Some(e) if e.len == len => ix.touch(id),
                Some(_) => {
                    ix.remove(id);
                    drop(ix);
                    let _ = fs::remove_file(self.dir.join(id.file_name()));
                    return false;
                }
                None => return false,
            }
        }
        let path = self.dir.join(id.file_name());
        let ok = File::open(&path).and_then(|f| {
            if f.metadata()?.len() != len {
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
            f.read_exact_at(buf, offset)
        });
        if ok.is_err() {
            if self.index().remove(id) {
                let _ = fs::remove_file(&path);
            }
            return false;
        }
        true
    }

    /// Stores `data` as chunk `id`, evicting the least recently used
    /// chunks past the limit. A chunk larger than the limit is not kept; a
    /// failed write leaves the chunk out (the cache only saves requests).
    pub(super) fn insert(&self, id: ChunkId, data: &[u8], counters: &Counters) {
        let len = data.len() as u64;
        if len > self.limit {
            return;
        }
        let path = self.dir.join(id.file_name());
        let tmp = self.dir.join(format!(
            "{}.tmp{}",
            id.file_name(),
            self.tmp_seq.fetch_add(1, Ordering::Relaxed)
        ));
        let written = File::create(&tmp)
            .and_then(|mut f| f.write_all(data))
            .and_then(|()| fs::rename(&tmp, &path));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
            return;
        }
        self.index().insert(id, len);
        add(&counters.cache_evictions, self.evict(Some(id)));
    }

    /// Evicts the least recently used chunks (never `keep`) until the cache
    /// is within its limit; the number evicted.
    fn evict(&self, keep: Option<ChunkId>) -> u64 {
        let mut victims = Vec::new();
        {
            let mut ix = self.index();
            while ix.bytes > self.limit {
                let Some((_, &id)) = ix.lru.iter().find(|(_, id)| Some(**id) != keep) else {
                    break;
                };
                ix.remove(id);
                victims.push(id);
            }
        }
        for id in &victims {
            let _ = fs::remove_file(self.dir.join(id.file_name()));
        }
        victims.len() as u64
    }

    /// Drops every chunk of `object` (its object was deleted).
    pub(super) fn forget(&self, object: u128) {
        let gone: Vec<ChunkId> = {
            let mut ix = self.index();
            let ids: Vec<ChunkId> = ix
                .entries
                .keys()
                .filter(|id| id.object == object)
                .copied()
                .collect();
            for &id in &ids {
                ix.remove(id);
            }
            ids
        };
        for id in gone {
            let _ = fs::remove_file(self.dir.join(id.file_name()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(object: u128, index: u64) -> ChunkId {
        ChunkId { object, index }
    }

    #[test]
    fn names_roundtrip_and_foreign_names_are_not_chunks() {
        let c = id(0xabc, 7);
        assert_eq!(ChunkId::parse(&c.file_name()), Some(c));
        for name in ["x-1", "0abc-7", &format!("{:032x}-07", 0xabc), "LOCK"] {
            assert_eq!(ChunkId::parse(name), None, "{name}");
        }
    }

    #[test]
    fn evicts_least_recently_used_and_keeps_chunks_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let counters = Counters::default();
        let cache = DiskCache::open(dir.path(), 300).unwrap();
        for i in 0..3 {
            cache.insert(id(1, i), &[i as u8; 100], &counters);
        }
        let mut buf = [0u8; 10];
        // Chunk 0 used last: chunk 1 is the oldest now.
        assert!(cache.read(id(1, 0), 100, &mut buf, 5));
        assert_eq!(buf, [0u8; 10]);
        cache.insert(id(2, 0), &[9u8; 100], &counters);
        assert!(!cache.read(id(1, 1), 100, &mut buf, 0));
        assert!(cache.read(id(1, 2), 100, &mut buf, 90));
        assert_eq!(buf, [2u8; 10]);
        assert_eq!(counters.cache_evictions.load(Ordering::Relaxed), 1);
        assert_eq!(cache.bytes(), 300);
        // A length other than the one asked for is a miss.
        assert!(!cache.read(id(2, 0), 99, &mut buf, 0));
        drop(cache);

        let cache = DiskCache::open(dir.path(), 300).unwrap();
        assert_eq!(cache.bytes(), 200);
        assert!(cache.read(id(1, 0), 100, &mut buf, 0));
        cache.forget(1);
        assert!(!cache.read(id(1, 2), 100, &mut buf, 0));
        assert_eq!(cache.bytes(), 0);
        // A limit below what is held evicts at open.
        for i in 0..3 {
            cache.insert(id(3, i), &[1; 100], &counters);
        }
        drop(cache);
        let cache = DiskCache::open(dir.path(), 150).unwrap();
        assert_eq!(cache.bytes(), 100);
        assert!(cache.read(id(3, 2), 100, &mut buf, 0) || cache.read(id(3, 1), 100, &mut buf, 0));
    }
}
