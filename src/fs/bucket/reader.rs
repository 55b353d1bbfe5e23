//! A table in the bucket, read at arbitrary offsets through the disk cache.

use std::io;
use std::sync::Arc;

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
        let (Some(&a), Some(&b)) = (missing.first(), missing.last()) else {
            return Ok(());
        };
        // One GET from the first chunk missing to the last.
        let from = a * cs;
        let data = sh
            .client
            .get_range(&self.key, from..(b * cs + chunk_len(b)))?;
        for c in missing {
            let s = (c * cs - from) as usize;
            let chunk = &data[s..s + chunk_len(c) as usize];
            let (at, r) = part(c);
            let n = r.len();
            buf[r].copy_from_slice(&chunk[at..at + n]);
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
}
