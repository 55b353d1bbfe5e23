//! [`TableIter`]: a table's entries in table order, from its first key or
//! a seek target, read block by block through the block cache, or for a
//! sequential pass ([`TableIter::sequential`]) in readahead chunks past it.

use std::ops::Deref;

use bytes::Bytes;

use crate::error::Result;
use crate::sst::block::BlockIter;
use crate::sst::format::BlockHandle;

use super::read::{Readahead, SCAN_READAHEAD_START};
use super::{DATA, IndexCursor, READAHEAD_BYTES, ReadStats, Table};

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
    /// Without `readahead`: the file offset up to which the page cache was
    /// advised to read ahead ([`Table::advise_ahead`]), 0 if never, and the
    /// length of the last stretch advised.
    advised_to: u64,
    advised_len: u64,
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
            advised_to: 0,
            advised_len: 0,
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
        // A scan moving on to the next block, not a seek's first block.
        let onward = self.started && i == self.next_block && i > 0;
        let h = t.block_handle(i, &mut self.cursor, &mut self.io)?;
        let block = match &mut self.readahead {
            Some(ra) => t.data_block_ahead(h, ra, &mut self.io)?,
            None => {
                // The file is advised random access (point reads take one
                // block each), so a scan that reads on asks for the stretch
                // ahead itself: 16 KiB, then twice as much each time, up to
                // READAHEAD_BYTES.
                if onward && h.offset.saturating_add(h.size) > self.advised_to {
                    self.advised_len =
                        (self.advised_len * 2).clamp(SCAN_READAHEAD_START, READAHEAD_BYTES as u64);
                    self.advised_to = t.advise_ahead(h.offset, self.advised_len)?;
                }
                t.data_block(h, &mut self.io)?
            }
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

    use std::path::Path;

    use super::super::TableOpenOptions;
    use super::super::test_tables::{build, open_cached};
    use super::*;
    use crate::error::Error;
    use crate::fs::{FileLock, FileSystem, ReadAdvice, ReadableFile, RealFs, WritableFile};
    use crate::sst::{BlockCache, TableBuilderOptions};

    /// A file system over [`RealFs`](crate::fs::RealFs) that records the
    /// advice its files get.
    #[derive(Debug, Default)]
    struct Advised(Arc<std::sync::Mutex<Vec<ReadAdvice>>>);

    #[derive(Debug)]
    struct AdvisedFile(
        Arc<dyn ReadableFile>,
        Arc<std::sync::Mutex<Vec<ReadAdvice>>>,
    );

    impl ReadableFile for AdvisedFile {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.0.read_exact_at(buf, offset)
        }
        fn len(&self) -> std::io::Result<u64> {
            self.0.len()
        }
        fn advise(&self, advice: ReadAdvice) {
            self.1.lock().unwrap().push(advice);
        }
    }

    impl FileSystem for Advised {
        fn create_new(&self, p: &Path) -> std::io::Result<Box<dyn WritableFile>> {
            RealFs.create_new(p)
        }
        fn create_truncate(&self, p: &Path) -> std::io::Result<Box<dyn WritableFile>> {
            RealFs.create_truncate(p)
        }
        fn open_read(&self, p: &Path) -> std::io::Result<Arc<dyn ReadableFile>> {
            Ok(Arc::new(AdvisedFile(RealFs.open_read(p)?, self.0.clone())))
        }
        fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
            RealFs.rename(from, to)
        }
        fn remove_file(&self, p: &Path) -> std::io::Result<()> {
            RealFs.remove_file(p)
        }
        fn sync_dir(&self, p: &Path) -> std::io::Result<()> {
            RealFs.sync_dir(p)
        }
        fn list_dir(&self, p: &Path) -> std::io::Result<Vec<std::ffi::OsString>> {
            RealFs.list_dir(p)
        }
        fn file_len(&self, p: &Path) -> std::io::Result<u64> {
            RealFs.file_len(p)
        }
        fn create_dir_all(&self, p: &Path) -> std::io::Result<()> {
            RealFs.create_dir_all(p)
        }
        fn lock(&self, p: &Path) -> std::io::Result<Option<Box<dyn FileLock>>> {
            RealFs.lock(p)
        }
    }

    /// A buffered table's descriptor is advised random access at open, so
    /// a get reads only its block; a forward scan that reads on advises the
    /// stretch ahead (16 KiB, then doubling up to READAHEAD_BYTES, never
    /// for a seek's first block); a sequential pass reads its own chunks.
    #[test]
    fn point_reads_advise_random_access_and_scans_advise_the_stretch_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let opts = TableBuilderOptions {
            block_size: 1024,
            ..Default::default()
        };
        let path = build(dir.path(), 80_000, opts);
        let fs = Advised::default();
        let log = fs.0.clone();
        let open_opts = TableOpenOptions {
            fs: Some(Arc::new(fs)),
            ..TableOpenOptions::default()
        };
        let t = Table::open(&path, open_opts).unwrap();
        let take = || std::mem::take(&mut *log.lock().unwrap());
        assert_eq!(take(), vec![ReadAdvice::Random]);
        for i in [0, 40_000, 79_999] {
            let k = format!("k{i:06}");
            assert!(t.get_unhashed(k.as_bytes()).unwrap().found());
        }
        // A seek that stays in its block, and a sequential pass.
        assert_eq!(t.iter_from(b"k040000").take(1).count(), 1);
        assert_eq!(TableIter::sequential(&t, None).count(), 80_000);
        assert_eq!(take(), vec![]);
        assert_eq!(t.iter().count(), 80_000);
        let advice = take();
        let stretches: Vec<(u64, u64)> = advice
            .iter()
            .map(|a| match *a {
                ReadAdvice::WillNeed { offset, len } => (offset, len),
                ReadAdvice::Random => panic!("{advice:?}"),
            })
            .collect();
        assert!(stretches.len() > 3, "{stretches:?}");
        assert!(stretches[0].0 > 0 && stretches[0].1 == SCAN_READAHEAD_START);
        for w in stretches.windows(2) {
            // Each stretch starts at the block that runs past the last
            // one's end (blocks of about 1 KiB).
            let end = w[0].0 + w[0].1;
            assert!(w[1].0 <= end && end < w[1].0 + 1100, "{stretches:?}");
            let want = (w[0].1 * 2).min(READAHEAD_BYTES as u64);
            assert!(
                w[1].1 == want || w[1].0 + w[1].1 == t.data_end,
                "{stretches:?}"
            );
        }
    }

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
