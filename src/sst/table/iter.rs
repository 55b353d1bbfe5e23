//! [`TableIter`]: a table's entries in table order, from its first key or
//! a seek target, read block by block through the block cache, or for a
//! sequential pass ([`TableIter::sequential`]) in readahead chunks past it.

use std::ops::Deref;

use bytes::Bytes;

use crate::error::Result;
use crate::sst::block::BlockIter;
use crate::sst::format::BlockHandle;

use super::read::Readahead;
use super::{DATA, IndexCursor, ReadStats, Table};

impl Table {
    /// All entries in table order.
    pub fn iter(&self) -> TableIter<&Table> {
        TableIter::new(self, None)
    }

    /// Entries from the first key `>= key`, in table order.
    pub fn iter_from(&self, key: &[u8]) -> TableIter<&Table> {
        TableIter::new(self, Some(key))
    }
}

/// An iterator over a table's entries in table order, generic over how the
/// table is held (`&Table`, or `Arc<Table>` for iterators that outlive a
/// borrow). After an error it yields that error once, then ends.
pub struct TableIter<T: Deref<Target = Table>> {
    table: T,
    /// Seek target not yet applied (positioning is lazy so errors surface
    /// through `next`).
    start: Option<Vec<u8>>,
    started: bool,
    next_block: usize,
    block: Option<(BlockIter, BlockHandle)>,
    /// The block iterator is at an entry not yet yielded (after a seek).
    ready: bool,
    done: bool,
    io: ReadStats,
    /// Set for a sequential pass ([`TableIter::sequential`]).
    readahead: Option<Readahead>,
    /// The index partition in use (a partitioned index).
    cursor: IndexCursor,
}

impl<T: Deref<Target = Table>> TableIter<T> {
    /// An iterator over `table` from the first key `>= start` (or the first key).
    pub fn new(table: T, start: Option<&[u8]>) -> Self {
        TableIter {
            table,
            start: start.map(<[u8]>::to_vec),
            started: false,
            next_block: 0,
            block: None,
            ready: false,
            done: false,
            io: ReadStats::default(),
            readahead: None,
            cursor: IndexCursor::default(),
        }
    }

    /// [`TableIter::new`] for one pass over much of the table (a
    /// compaction's input): data blocks are read
    /// [`READAHEAD_BYTES`](super::READAHEAD_BYTES) at a time, past the block
    /// cache, which they neither use nor fill.
    pub fn sequential(table: T, start: Option<&[u8]>) -> Self {
        TableIter {
            readahead: Some(Readahead::default()),
            ..TableIter::new(table, start)
        }
    }

    /// Data-block (and index-partition) I/O so far.
    pub fn read_stats(&self) -> ReadStats {
        self.io
    }

    fn load(&mut self, i: usize) -> Result<()> {
        let t = &*self.table;
        // Dropped first: its chunk may then be reused for the next one.
        self.block = None;
        let h = t.block_handle(i, &mut self.cursor, &mut self.io)?;
        let block = match &mut self.readahead {
            Some(ra) => t.data_block_ahead(h, ra, &mut self.io)?,
            None => t.data_block(h, &mut self.io)?,
        };
        self.block = Some((block.iter(t.props.key_format), h));
        self.next_block = i + 1;
        Ok(())
    }

    fn step(&mut self) -> Result<Option<(Bytes, Bytes)>> {
        if !self.started {
            self.started = true;
            if let Some(target) = self.start.take() {
                let i = self
                    .table
                    .find_block(&target, &mut self.cursor, &mut self.io)?;
                if i == self.table.data_blocks() {
                    return Ok(None);
                }
                self.load(i)?;
                let (it, h) = self.block.as_mut().expect("just loaded");
                self.ready = it
                    .seek(&target)
                    .map_err(|e| self.table.block_error(*h, DATA, e))?;
            }
        }
        loop {
            if let Some((it, h)) = &mut self.block {
                let have = if self.ready {
                    self.ready = false;
                    true
                } else {
                    it.advance()
                        .map_err(|e| self.table.block_error(*h, DATA, e))?
                };
                if have {
                    return Ok(Some((Bytes::copy_from_slice(it.key()), it.value())));
                }
                self.block = None;
            }
            if self.next_block >= self.table.data_blocks() {
                return Ok(None);
            }
            self.load(self.next_block)?;
        }
    }
}

/// An iterator's next item from its `step`: the end and an error both end it.
pub(super) fn fuse(
    step: Result<Option<(Bytes, Bytes)>>,
    done: &mut bool,
) -> Option<Result<(Bytes, Bytes)>> {
    let item = step.transpose();
    *done = !matches!(item, Some(Ok(_)));
    item
}

impl<T: Deref<Target = Table>> Iterator for TableIter<T> {
    type Item = Result<(Bytes, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        fuse(self.step(), &mut self.done)
    }
}

impl<T: Deref<Target = Table>> std::fmt::Debug for TableIter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableIter")
            .field("table", &self.table.path)
            .field("next_block", &self.next_block)
            .field("done", &self.done)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::READAHEAD_BYTES;
    use super::super::test_tables::{build, open_cached};
    use super::*;
    use crate::error::Error;
    use crate::sst::{BlockCache, TableBuilderOptions};

    #[test]
    fn a_sequential_pass_reads_in_chunks_past_the_cache_and_checks_every_block() {
        let dir = tempfile::tempdir().unwrap();
        let opts = TableBuilderOptions {
            block_size: 1024,
            ..Default::default()
        };
        let path = build(dir.path(), 80_000, opts);
        let open = |cache: &Arc<BlockCache>| open_cached(&path, cache);
        let plain: Vec<(Bytes, Bytes)> = open(&Arc::new(BlockCache::new(1 << 20)))
            .iter()
            .collect::<Result<_>>()
            .unwrap();
        let cache = Arc::new(BlockCache::new(1 << 20));
        let t = open(&cache);
        assert!(t.file_size() > 3 * READAHEAD_BYTES as u64, "several chunks");
        let mut it = TableIter::sequential(&t, None);
        let seq: Vec<(Bytes, Bytes)> = (&mut it).collect::<Result<_>>().unwrap();
        assert_eq!(seq, plain);
        let io = it.read_stats();
        assert_eq!((io.blocks_read, io.cache_hits), (t.data_blocks() as u64, 0));
        let c = cache.stats();
        assert_eq!(
            (c.inserts, c.hits, c.misses),
            (0, 0, 0),
            "the cache is not used"
        );
        // From a key in the middle.
        let from: Vec<(Bytes, Bytes)> = TableIter::sequential(&t, Some(b"k050000"))
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(from, plain[50_000..]);

        // A flipped byte in a block of a later chunk: Corruption at that block.
        let h = t
            .index_entries()
            .unwrap()
            .into_iter()
            .map(|(_, h)| h)
            .find(|h| h.offset > 2 * READAHEAD_BYTES as u64)
            .unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[h.offset as usize + 10] ^= 0x40;
        std::fs::write(&path, bytes).unwrap();
        let t = open(&cache);
        let err = TableIter::sequential(&t, None)
            .find_map(|r| r.err())
            .expect("the damage is found");
        assert!(
            matches!(&err, Error::Corruption { offset, .. } if *offset == h.offset),
            "{err}"
        );
    }
}
