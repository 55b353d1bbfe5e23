//! Data blocks of one table read together: the blocks a batch of lookups
//! (a `multi_get`'s keys in one file) will read, where they lie side by
//! side, fetched with one read of their span instead of one read each — one
//! GET from a bucket, one device request with direct reads — and each block
//! still verified by its own checksum.

use bytes::Bytes;

use crate::error::Result;
use crate::sst::block::Block;
use crate::sst::format::{BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN};

use super::read::read_at;
use super::{DATA, IndexCursor, ReadStats, Table};

/// The most bytes one span read covers: past it a span is split, so a
/// batch of keys spread over a whole table never holds the table in memory.
pub const MAX_SPAN_BYTES: u64 = 1 << 20;

/// Data blocks read ahead of the lookups that use them. A lookup whose block
/// is here takes it instead of reading it, and reports it as read (once:
/// the next lookup of the same block reports a cache hit), so the
/// per-lookup counters stay what separate reads would have made.
#[derive(Debug, Default)]
pub struct Preloaded {
    /// Sorted by offset: the handle, the block, the bytes a read of it
    /// alone would have transferred (whole sectors with direct reads, as
    /// [`crate::fs::ReadableFile::transfer_len`] counts), whether a lookup
    /// took it.
    blocks: Vec<(BlockHandle, Block, u64, bool)>,
}

impl Preloaded {
    /// The block at `h`, counted into `io` as a read the first time and a
    /// cache hit after.
    pub(super) fn take(&mut self, h: BlockHandle, io: &mut ReadStats) -> Option<Block> {
        let i = self
            .blocks
            .binary_search_by_key(&h.offset, |(b, ..)| b.offset)
            .ok()?;
        let (stored, block, bytes, used) = &mut self.blocks[i];
        if stored.size != h.size {
            return None;
        }
        if *used {
            io.cache_hits += 1;
        } else {
            *used = true;
            io.blocks_read += 1;
            io.bytes_read += *bytes;
        }
        Some(block.clone())
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

impl Table {
    /// The handle of the data block a lookup of `key` (an internal key)
    /// reads, if the index is in memory (`None` when finding it would read
    /// an index partition, or the key is past the last block).
    pub(crate) fn resident_block_for(&self, key: &[u8]) -> Option<BlockHandle> {
        if !self.index_pinned() {
            return None;
        }
        let mut cur = IndexCursor::default();
        let mut io = ReadStats::default();
        let i = self.find_block(key, &mut cur, &mut io).ok()?;
        if i >= self.data_blocks() {
            return None;
        }
        self.block_handle(i, &mut cur, &mut io).ok()
    }

    /// Whether data block `h` is in the block cache (a lookup of it would
    /// read nothing).
    pub(crate) fn data_block_cached(&self, h: BlockHandle) -> bool {
        self.cache
            .as_deref()
            .is_some_and(|c| c.contains(self.file_id, h.offset))
    }

    /// Reads the data blocks `handles` — sorted by offset, each starting
    /// where the one before ends — with one read of their span, checks and
    /// decodes each as a lookup would, and puts them into the block cache
    /// (when it is on) as a lookup's read would.
    pub(crate) fn read_adjacent(
        &self,
        handles: &[BlockHandle],
        into: &mut Preloaded,
    ) -> Result<()> {
        let (Some(first), Some(last)) = (handles.first(), handles.last()) else {
            return Ok(());
        };
        let data_end = self.file_size - FOOTER_LEN as u64;
        let end = last.end_with_trailer().filter(|&e| e <= data_end);
        let Some(end) = end else {
            return Err(self.corruption(
                last.offset,
                format!(
                    "{DATA} block (offset {}, size {}) runs past the end of the data at {data_end}",
                    last.offset, last.size
                ),
            ));
        };
        let mut buf = vec![0u8; (end - first.offset) as usize];
        let file = self.file.get()?;
        read_at(file.as_ref(), &self.path, &mut buf, first.offset)?;
        let span = Bytes::from(buf);
        let cache = self.cache.as_deref().filter(|c| c.is_enabled());
        for &h in handles {
            let at = (h.offset - first.offset) as usize;
            let raw = span.slice(at..at + h.size as usize + BLOCK_TRAILER_LEN);
            let data = self.decode_raw(h, DATA, &raw)?;
            let block = Block::new(data).map_err(|e| self.block_error(h, DATA, e))?;
            if let Some(c) = cache {
                c.insert(self.file_id, h.offset, block.data().clone());
            }
            let bytes = file.transfer_len(h.offset, h.size as usize + BLOCK_TRAILER_LEN);
            into.blocks.push((h, block, bytes, false));
        }
        into.blocks.sort_by_key(|(h, ..)| h.offset);
        Ok(())
    }
}

/// `handles` (sorted by offset, duplicates removed) cut into runs that one
/// read each covers: blocks side by side, at most [`MAX_SPAN_BYTES`] a run.
pub fn adjacent_runs(handles: &[BlockHandle]) -> Vec<&[BlockHandle]> {
    let mut runs = Vec::new();
    let mut start = 0;
    for i in 1..=handles.len() {
        let split = i == handles.len() || {
            let (prev, next) = (handles[i - 1], handles[i]);
            prev.end_with_trailer() != Some(next.offset)
                || next
                    .end_with_trailer()
                    .is_none_or(|e| e - handles[start].offset > MAX_SPAN_BYTES)
        };
        if split {
            runs.push(&handles[start..i]);
            start = i;
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(offset: u64, size: u64) -> BlockHandle {
        BlockHandle { offset, size }
    }

    #[test]
    fn runs_are_blocks_side_by_side_up_to_the_span_limit() {
        let t = BLOCK_TRAILER_LEN as u64;
        let a = h(0, 100);
        let b = h(100 + t, 50);
        let c = h(150 + 2 * t, 10);
        let far = h(10_000, 10);
        let hs = [a, b, c, far];
        let runs = adjacent_runs(&hs);
        assert_eq!(runs, vec![&hs[..3], &hs[3..]]);
        assert!(adjacent_runs(&[]).is_empty());
        // A run stops before it would pass the limit.
        let big = MAX_SPAN_BYTES / 2;
        let x = h(0, big);
        let y = h(big + t, big);
        let z = h(2 * (big + t), 1);
        let hs = [x, y, z];
        assert_eq!(adjacent_runs(&hs).len(), 2);
    }
}
