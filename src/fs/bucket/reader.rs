//! A table in the bucket, read at arbitrary offsets through the disk cache,
//! reading ahead for a sequential pass.

use std::io;
use std::sync::{Arc, Mutex};

use object_store::path::Path as ObjectPath;

use super::Shared;
use super::cache::ChunkId;
use super::client::add;
use crate::fs::ReadableFile;

/// An object opened for reads: its key, size and cache identity, learned
/// when it was opened (from an upload, a listing or a HEAD), so a read
/// costs no request beyond the GET of the chunks the cache lacks.
#[derive(Debug)]
pub(super) struct BucketReadable {
    pub shared: Arc<Shared>,
    pub key: ObjectPath,
    pub object: u128,
    pub size: u64,
    pub sequence: Mutex<Sequence>,
}

/// The most a sequential pass reads ahead in one GET.
pub(super) const READ_AHEAD_MAX: u64 = 8 << 20;

/// What a pass that a forward scan announced
/// ([`ReadAdvice::WillNeed`](crate::fs::ReadAdvice::WillNeed)) reads ahead
/// from its first read on: a scan's GETs are large from the start.
pub(super) const SCAN_READ_AHEAD: u64 = 1 << 20;

/// Where the reads of a file have been going: a read that starts where the
/// last one ended continues a sequential pass (a scan, a compaction's
/// input), whose GETs then reach ahead of it as far as it has read, up to
/// [`READ_AHEAD_MAX`] — growing as Linux's read-ahead does — so a long pass
/// costs few large requests rather than one per chunk.
#[derive(Debug, Default)]
pub(super) struct Sequence {
    /// Where the last read ended.
    next: u64,
    /// Bytes read back to back up to `next`.
    run: u64,
}

impl Sequence {
    /// A forward scan announced that it reads on: the pass reads ahead at
    /// least [`SCAN_READ_AHEAD`].
    fn scan(&mut self) {
        self.run = self.run.max(SCAN_READ_AHEAD);
    }

    /// Records a read of `offset..end`; the bytes to read ahead past `end`
    /// (0 unless the read continues a pass).
    fn read(&mut self, offset: u64, end: u64) -> u64 {
        let ahead = if offset == self.next && self.run > 0 {
            self.run.min(READ_AHEAD_MAX)
        } else {
            self.run = 0;
            0
        };
        self.run += end - offset;
        self.next = end;
        ahead
    }
}

impl ReadableFile for BucketReadable {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.size)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "object {} is {} bytes: no {} bytes at {offset}",
                        self.key,
                        self.size,
                        buf.len()
                    ),
                )
            })?;
        if buf.is_empty() {
            return Ok(());
        }
        let sh = &self.shared;
        if !sh.cache.enabled() {
            let data = sh.client.get_range(&self.key, offset..end)?;
            buf.copy_from_slice(&data);
            return Ok(());
        }
        let cs = sh.config.chunk_bytes;
        let (first, last) = (offset / cs, (end - 1) / cs);
        // The bytes of chunk `c` that the read wants, as (start in the
        // chunk, range in `buf`).
        let part = |c: u64| {
            let start = c * cs;
            let lo = offset.max(start);
            let hi = end.min(start + cs);
            (
                (lo - start) as usize,
                (lo - offset) as usize..(hi - offset) as usize,
            )
        };
        let chunk_len = |c: u64| (self.size - c * cs).min(cs);
        let mut missing = Vec::new();
        for c in first..=last {
            let (at, r) = part(c);
            let id = ChunkId {
                object: self.object,
                index: c,
            };
            if sh.cache.read(id, chunk_len(c), &mut buf[r], at as u64) {
                add(&sh.client.counters.cache_hits, 1);
            } else {
                add(&sh.client.counters.cache_misses, 1);
                missing.push(c);
            }
        }
        let ahead = self
            .sequence
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .read(offset, end);
        let (Some(&a), Some(&b)) = (missing.first(), missing.last()) else {
            return Ok(());
        };
        // One GET from the first chunk missing to the last, and on through
        // the chunks a pass is about to read that the cache lacks.
        let mut to = b;
        let ahead_to = (end + ahead).min(self.size).div_ceil(cs);
        while to + 1 < ahead_to
            && !sh.cache.holds(ChunkId {
                object: self.object,
                index: to + 1,
            })
        {
            to += 1;
        }
        let from = a * cs;
        let data = sh
            .client
            .get_range(&self.key, from..(to * cs + chunk_len(to)))?;
        let ahead_chunks = (b + 1..=to).map(|c| (c, false));
        for (c, wanted) in missing.into_iter().map(|c| (c, true)).chain(ahead_chunks) {
            let s = (c * cs - from) as usize;
            let chunk = &data[s..s + chunk_len(c) as usize];
            if wanted {
                let (at, r) = part(c);
                let n = r.len();
                buf[r].copy_from_slice(&chunk[at..at + n]);
            }
            sh.cache.insert(
                ChunkId {
                    object: self.object,
                    index: c,
                },
                chunk,
                &sh.client.counters,
            );
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.size)
    }

    fn advise(&self, advice: crate::fs::ReadAdvice) {
        if let crate::fs::ReadAdvice::WillNeed { .. } = advice {
            self.sequence
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .scan();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use object_store::memory::InMemory;

    use super::*;
    use crate::fs::FileSystem;
    use crate::fs::bucket::{BucketConfig, BucketFs};

    #[test]
    fn a_full_scan_of_a_store_in_the_bucket_makes_large_gets() {
        use crate::{Db, Options};
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("db");
        let store = Arc::new(InMemory::new());
        let opts = |fs: &Arc<BucketFs>| {
            Options::default()
                .block_cache_capacity(0)
                .write_buffer_size(8 << 20)
                .target_file_size(8 << 20)
                .fs(fs.clone() as Arc<dyn FileSystem>)
        };
        // Values that do not compress: tables of their full size.
        let value = |i: u32| {
            let mut x = u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            (0..100)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect::<Vec<u8>>()
        };
        {
            let w = Arc::new(fs(&dir, &root.path().join("w"), &store, 1 << 20));
            let db = Db::open(&dir, opts(&w)).unwrap();
            for i in 0..200_000u32 {
                db.put(
                    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000_007),
                    value(i),
                )
                .unwrap();
            }
            db.flush().unwrap();
            db.maintain().unwrap();
            db.close().unwrap();
        }
        // Another cache: every table read from the bucket.
        let r = Arc::new(fs(&dir, &root.path().join("r"), &store, 1 << 20));
        let db = Db::open(&dir, opts(&r)).unwrap();
        let opened = r.counters();
        let mut n = 0;
        for e in db.scan(..) {
            e.unwrap();
            n += 1;
        }
        assert_eq!(n, 200_000);
        let c = r.counters();
        let (gets, bytes) = (c.gets - opened.gets, c.get_bytes - opened.get_bytes);
        eprintln!(
            "full scan: {gets} GETs, {bytes} bytes, {} tables",
            db.stats().levels.iter().map(|l| l.files).sum::<usize>()
        );
        // 1 MiB chunks: a GET of one chunk each without read-ahead; with
        // it, an 8 MiB table's GETs grow 1, 1, 2, 4 MiB.
        assert!(
            bytes / gets.max(1) >= 3 << 19,
            "{gets} GETs of {bytes} bytes"
        );
    }

    fn fs(dir: &Path, cache: &Path, store: &Arc<InMemory>, chunk: u64) -> BucketFs {
        let config = BucketConfig::new(dir, "b", cache)
            .chunk_bytes(chunk)
            .cache_bytes(1 << 30);
        BucketFs::with_store(config, store.clone()).unwrap()
    }

    fn write(fs: &BucketFs, path: &Path, data: &[u8]) {
        let mut w = fs.create_new(path).unwrap();
        w.write_all(data).unwrap();
        w.sync_data().unwrap();
    }

    #[test]
    fn a_sequential_pass_reads_ahead_in_growing_gets_and_a_point_read_does_not() {
        let root = tempfile::tempdir().unwrap();
        let store = Arc::new(InMemory::new());
        let data: Vec<u8> = (0..40u32 << 20)
            .map(|i| (i * 31 + i / 4093) as u8)
            .collect();
        let table = root.path().join("000001.sst");
        // Written by one file system (which caches it), read by another.
        write(
            &fs(root.path(), &root.path().join("w"), &store, 64 << 10),
            &table,
            &data,
        );
        let fs = fs(root.path(), &root.path().join("r"), &store, 64 << 10);
        let f = fs.open_read(&table).unwrap();

        // Point reads far apart: one chunk each.
        let mut block = vec![0u8; 4096];
        for at in [5u64 << 20, 1 << 20, 30 << 20] {
            f.read_exact_at(&mut block, at).unwrap();
            assert_eq!(block, data[at as usize..at as usize + 4096]);
        }
        let c = fs.counters();
        assert_eq!((c.gets, c.get_bytes), (3, 3 * (64 << 10)));

        // A pass in 4 KiB blocks from 8 MiB: the GETs grow to 8 MiB.
        let (gets, bytes) = (c.gets, c.get_bytes);
        let mut at = 8u64 << 20;
        while at < data.len() as u64 {
            f.read_exact_at(&mut block, at).unwrap();
            assert_eq!(block, data[at as usize..at as usize + 4096], "{at}");
            at += 4096;
        }
        let c = fs.counters();
        let (n, b) = (c.gets - gets, c.get_bytes - bytes);
        eprintln!("pass: {n} GETs, {b} bytes");
        // Every byte of the pass fetched once, but the chunk at 30 MiB that
        // a point read cached.
        assert_eq!(b, (32 << 20) - (64 << 10));
        // 64 KiB, then as much as read so far: 64 KiB, 128, 256 KiB, …,
        // 8 MiB, up to the cached chunk, and on.
        assert!(n <= 13, "{n} GETs");
        assert!(b / n >= 2 << 20, "{} bytes per GET", b / n);
    }
}
