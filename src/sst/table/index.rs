//! The table's index: one block held in memory, or (format version 4) a
//! two-level index whose top level is held in memory and whose partitions
//! are held too, or read on demand through the block cache (RocksDB's
//! `kTwoLevelIndexSearch`).
//!
//! About 34% of this file is its unit tests (the `tests` module at the end);
//! the rest is one structure, the index: its block search and its partitions'
//! reads.
//!
//! Data blocks are numbered `0..data_blocks` across partitions. Readers
//! carry an [`IndexCursor`], the partition last used, so that a scan reads
//! each partition once, not once per data block.

use std::cmp::Ordering;
use std::sync::{Arc, RwLock};

use bytes::Bytes;

use crate::error::Result;
use crate::key;
use crate::sst::block::Block;
use crate::sst::format::{BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN, KeyFormat};

use super::{ReadStats, Table};

/// One entry of a decoded index block: where its key ends in
/// [`IndexBlock::keys`] (the start is the previous end) and its handle.
#[derive(Clone, Copy, Debug)]
struct IndexEntry {
    key_end: usize,
    handle: BlockHandle,
}

/// A decoded index block: each entry's key (the last key of the block it
/// points at) and handle, in key order.
#[derive(Debug, Default)]
pub(super) struct IndexBlock {
    /// All keys back to back (one allocation instead of one per entry).
    keys: Vec<u8>,
    entries: Vec<IndexEntry>,
    /// [`key::prefix`] of each key's user key: [`IndexBlock::find`]
    /// searches these (a dense array) and compares whole keys only among
    /// prefix ties.
    prefix: Vec<u64>,
    /// The largest prefix of each group of [`GROUP`] entries
    /// ([`first_at_least`]).
    group_max: Vec<u64>,
}

/// Entries of [`IndexBlock::prefix`] per group of
/// [`IndexBlock::group_max`]: 128 bytes, two cache lines.
const GROUP: usize = 16;

/// The first index of `p` (sorted) whose value is `>= kp`, given the
/// largest value of each [`GROUP`] of `p` (`group_max`). The group is found
/// among the groups' maxima, a sixteenth of `p` (at 10^7 keys about 1 KiB
/// per index block, which stays in the CPU's caches), and the entry by
/// counting its group's sixteen values, both cache lines loaded at once. A
/// binary search over all of `p` waits on memory at each of its steps: at
/// 10^7 keys it was most of [`IndexBlock::find`]'s time and an eighth of an
/// existing get's (docs/design.md, "Where a get's time goes at 10^7 keys").
fn first_at_least(p: &[u64], group_max: &[u64], kp: u64) -> usize {
    let start = group_max.partition_point(|&x| x < kp) * GROUP;
    match p.get(start..) {
        Some(rest) if !rest.is_empty() => {
            let group = &rest[..GROUP.min(rest.len())];
            start + group.iter().filter(|&&x| x < kp).count()
        }
        _ => p.len(),
    }
}

impl IndexBlock {
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entry `i`'s key.
    pub(super) fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 {
            0
        } else {
            self.entries[i - 1].key_end
        };
        &self.keys[start..self.entries[i].key_end]
    }

    /// Entry `i`'s handle.
    pub(super) fn handle(&self, i: usize) -> BlockHandle {
        self.entries[i].handle
    }

    /// The last entry's key (empty for an empty block).
    fn last_key(&self) -> &[u8] {
        match self.entries.len() {
            0 => &[],
            n => self.key(n - 1),
        }
    }

    /// The first entry whose key is `>= key` in `fmt`'s order (`len()` if
    /// none).
    pub(super) fn find(&self, fmt: KeyFormat, key: &[u8]) -> usize {
        // Entries whose key's prefix is below the key's end before the key;
        // above it, after: compare whole keys only within the tie.
        let kp = key::prefix(fmt.user_key(key));
        let p = &self.prefix;
        let mut lo = first_at_least(p, &self.group_max, kp);
        let mut hi = lo + tie_len(&p[lo..], kp);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if fmt.compare(self.key(mid), key) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Bytes of memory the decoded block holds.
    pub(super) fn memory_bytes(&self) -> usize {
        self.keys.capacity()
            + self.entries.capacity() * std::mem::size_of::<IndexEntry>()
            + (self.prefix.capacity() + self.group_max.capacity()) * std::mem::size_of::<u64>()
    }
}

/// How many of `p`'s first entries equal `kp`, given that the rest are
/// greater (`p` sorted, starting at the search's result). Searched from
/// the front, doubling the step: ties are rare (the prefix is the user
/// key's first 8 bytes), so this is usually one compare on the cache line
/// the search ended on, where a binary search over all of `p` would walk
/// the index's cold lines a second time.
fn tie_len(p: &[u64], kp: u64) -> usize {
    let mut step = 1;
    let mut equal = 0; // p[..equal] == kp
    while equal < p.len() && p[equal] == kp {
        let next = (equal + step).min(p.len());
        if p[next - 1] != kp {
            return equal + 1 + p[equal + 1..next].partition_point(|&x| x == kp);
        }
        equal = next;
        step *= 2;
    }
    equal
}

/// The partitions of a two-level index.
#[derive(Debug)]
pub(super) struct Partitions {
    /// The number of each partition's first data block, then the number of
    /// data blocks.
    first: Vec<usize>,
    /// The file offset of each partition's first data block, then where the
    /// last data block's trailer ends.
    starts: Vec<u64>,
    /// The partitions, when held in memory.
    pinned: RwLock<Option<Arc<[Arc<IndexBlock>]>>>,
    /// Bytes the partitions take in memory when held (measured at open).
    memory_bytes: usize,
}

impl Partitions {
    /// The partition holding data block `i` (`i` below the data blocks).
    fn of_block(&self, i: usize) -> usize {
        self.first.partition_point(|&f| f <= i) - 1
    }

    /// Where partition `p`'s data blocks start and end in the file.
    fn bounds(&self, p: usize) -> (u64, Option<u64>) {
        (self.starts[p], Some(self.starts[p + 1]))
    }

    fn pinned(&self) -> Option<Arc<[Arc<IndexBlock>]>> {
        self.pinned
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// The index partition a reader used last (none for an index of one block).
#[derive(Debug, Default)]
pub(crate) struct IndexCursor {
    part: usize,
    block: Option<Arc<IndexBlock>>,
}

impl Table {
    /// Decodes the index block (or partition) `h`, read as `block`: every
    /// entry a block handle before the footer, keys strictly increasing.
    fn decode_index_block(&self, h: BlockHandle, what: &str, block: &Block) -> Result<IndexBlock> {
        let footer_offset = self.file_size - FOOTER_LEN as u64;
        let fmt = self.props.key_format;
        let mut it = block.iter(fmt);
        let mut out = IndexBlock::default();
        loop {
            let at = h.offset + it.next_offset() as u64;
            if !self.block_step(&mut it, h, what)? {
                break;
            }
            let bh = BlockHandle::decode_exact(it.value_slice()).ok_or_else(|| {
                self.corruption(at, format!("{what} entry is not a block handle"))
            })?;
            if bh.end_with_trailer().is_none_or(|e| e > footer_offset) {
                return Err(self.corruption(
                    at,
                    format!(
                        "{what} entry points past the end of the data: offset {} size {}",
                        bh.offset, bh.size
                    ),
                ));
            }
            if !out.is_empty() && fmt.compare(out.last_key(), it.key()) != Ordering::Less {
                return Err(self.corruption(at, format!("{what} keys out of order")));
            }
            out.keys.extend_from_slice(it.key());
            out.entries.push(IndexEntry {
                key_end: out.keys.len(),
                handle: bh,
            });
        }
        out.keys.shrink_to_fit();
        out.entries.shrink_to_fit();
        out.prefix = (0..out.len())
            .map(|i| key::prefix(fmt.user_key(out.key(i))))
            .collect();
        out.group_max = out.prefix.chunks(GROUP).map(|g| g[g.len() - 1]).collect();
        Ok(out)
    }

    /// Reads the index at open: the block the footer names, and for a
    /// partitioned index (the `index.partitions` property) every partition,
    /// checked against the top level and each other. The partitions are
    /// kept in memory unless `on_demand`.
    pub(super) fn read_index(&mut self, on_demand: bool) -> Result<()> {
        let h = self.footer.index;
        let parts = self.props.index_partitions;
        let what = if parts == 0 {
            "index"
        } else {
            "top-level index"
        };
        let block = self.read_block(h, what)?;
        let index = self.decode_index_block(h, what, &block)?;
        let (blocks, data_end) = if parts == 0 {
            let end = match index.len() {
                0 => 0,
                n => index.handle(n - 1).end_with_trailer().unwrap_or(0),
            };
            (index.len(), end)
        } else {
            if index.len() as u64 != parts {
                return Err(self.corruption(
                    h.offset,
                    format!(
                        "top-level index has {} partitions, properties say {parts}",
                        index.len()
                    ),
                ));
            }
            self.check_partition_layout(&index)?;
            self.read_partitions(&index, on_demand)?
        };
        let p = &self.props;
        if blocks as u64 != p.data_blocks {
            return Err(self.corruption(
                h.offset,
                format!(
                    "index has {blocks} entries, properties say {} data blocks",
                    p.data_blocks
                ),
            ));
        }
        if blocks > 0 && index.last_key() != &p.largest_key[..] {
            return Err(self.corruption(
                h.offset,
                "last index key differs from the largest key in the properties",
            ));
        }
        self.index = index;
        self.data_end = data_end;
        Ok(())
    }

    /// The partitions of the top-level index `top` lie back to back, the
    /// last ending where the top-level index starts: any other layout (two
    /// handles swapped behind a resealed checksum, say) is damage.
    fn check_partition_layout(&self, top: &IndexBlock) -> Result<()> {
        let at = self.footer.index.offset;
        let mut next = top.handle(0).offset;
        for i in 0..top.len() {
            let ph = top.handle(i);
            if ph.offset != next || ph.end_with_trailer().is_none_or(|e| e > at) {
                return Err(self.corruption(
                    at,
                    format!(
                        "index partition {i} at offset {} size {} is not where partition {} \
                         ends ({next}), or runs into the top-level index",
                        ph.offset,
                        ph.size,
                        i.saturating_sub(1)
                    ),
                ));
            }
            next = ph.offset + ph.size + BLOCK_TRAILER_LEN as u64;
        }
        if next != at {
            return Err(self.corruption(
                at,
                format!("index partitions end at {next}, not at the top-level index"),
            ));
        }
        Ok(())
    }

    /// Reads every partition of `top` past the block cache and checks each
    /// ([`Table::decode_partition`]); keeps them unless `on_demand`.
    /// Returns the number of data blocks they index and where the last
    /// one's trailer ends.
    fn read_partitions(&mut self, top: &IndexBlock, on_demand: bool) -> Result<(usize, u64)> {
        let mut first = Vec::with_capacity(top.len() + 1);
        let mut starts = Vec::with_capacity(top.len() + 1);
        let mut parts = Vec::with_capacity(top.len());
        let mut blocks = 0usize;
        let mut memory_bytes = 0;
        let mut data_end = 0;
        for p in 0..top.len() {
            let what = format!("index partition {p}");
            let block = self.read_block(top.handle(p), &what)?;
            let part = self.decode_partition(top, p, block, (data_end, None))?;
            starts.push(data_end);
            data_end = part.handle(part.len() - 1).end_with_trailer().unwrap_or(0);
            first.push(blocks);
            blocks += part.len();
            memory_bytes += part.memory_bytes();
            if !on_demand {
                parts.push(Arc::new(part));
            }
        }
        first.push(blocks);
        starts.push(data_end);
        self.partitions = Some(Partitions {
            first,
            starts,
            pinned: RwLock::new((!on_demand).then(|| parts.into())),
            memory_bytes,
        });
        Ok((blocks, data_end))
    }

    /// Decodes partition `p` of the top-level index `top`, read as `block`:
    /// not empty, its last key the top level's key for it, its first key
    /// after the previous partition's last, and its data blocks back to
    /// back from file offset `start` (to `end`, when known). Data blocks
    /// tile the file from offset 0, so a handle changed behind a resealed
    /// checksum is found here rather than read as another block.
    fn decode_partition(
        &self,
        top: &IndexBlock,
        p: usize,
        block: Block,
        (start, end): (u64, Option<u64>),
    ) -> Result<IndexBlock> {
        let h = top.handle(p);
        let what = format!("index partition {p}");
        let part = self.decode_index_block(h, &what, &block)?;
        let mut next = start;
        for j in 0..part.len() {
            let bh = part.handle(j);
            if bh.offset != next {
                return Err(self.corruption(
                    h.offset,
                    format!(
                        "{what}: data block {j} at offset {}, where the one before ends at {next}",
                        bh.offset
                    ),
                ));
            }
            next = bh.end_with_trailer().unwrap_or(u64::MAX);
        }
        if end.is_some_and(|e| e != next) {
            return Err(self.corruption(
                h.offset,
                format!("{what}: its data blocks end at {next}, not where the next one's start"),
            ));
        }
        let fmt = self.props.key_format;
        if part.is_empty() || part.last_key() != top.key(p) {
            return Err(self.corruption(
                h.offset,
                format!("{what}: its last key differs from the top-level index's"),
            ));
        }
        if p > 0 && fmt.compare(top.key(p - 1), part.key(0)) != Ordering::Less {
            return Err(self.corruption(
                h.offset,
                format!(
                    "{what}: its first key is not after partition {}'s last",
                    p - 1
                ),
            ));
        }
        Ok(part)
    }

    /// Partition `p` of a partitioned index: held in memory, or read
    /// through the block cache (counted in `io`) and checked against what
    /// open found.
    fn load_partition(
        &self,
        parts: &Partitions,
        p: usize,
        io: &mut ReadStats,
    ) -> Result<Arc<IndexBlock>> {
        if let Some(pinned) = parts.pinned() {
            return Ok(pinned[p].clone());
        }
        let h = self.index.handle(p);
        let what = format!("index partition {p}");
        let cache = self.cache.as_deref().filter(|c| c.is_enabled());
        let bytes: Bytes = match cache.and_then(|c| c.get(self.file_id, h.offset)) {
            Some(b) => {
                io.index_cache_hits += 1;
                b
            }
            None => {
                let file = self.file.get()?;
                io.index_blocks_read += 1;
                io.index_bytes_read +=
                    file.transfer_len(h.offset, h.size as usize + BLOCK_TRAILER_LEN);
                let b = self.read_raw_from(file.as_ref(), h, &what)?;
                if let Some(c) = cache {
                    c.insert(self.file_id, h.offset, b.clone());
                }
                b
            }
        };
        let block = Block::new(bytes).map_err(|e| self.block_error(h, &what, e))?;
        let part = self.decode_partition(&self.index, p, block, parts.bounds(p))?;
        let want = parts.first[p + 1] - parts.first[p];
        if part.len() != want {
            return Err(self.corruption(
                h.offset,
                format!("{what} has {} entries, {want} at open", part.len()),
            ));
        }
        Ok(Arc::new(part))
    }

    /// Makes `cur` hold partition `p`, reading it if it holds another.
    fn cursor_at<'c>(
        &self,
        parts: &Partitions,
        p: usize,
        cur: &'c mut IndexCursor,
        io: &mut ReadStats,
    ) -> Result<&'c IndexBlock> {
        if cur.part != p || cur.block.is_none() {
            cur.block = None;
            cur.block = Some(self.load_partition(parts, p, io)?);
            cur.part = p;
        }
        Ok(cur.block.as_deref().expect("just set"))
    }

    /// Number of the first data block whose last key is `>= key`
    /// ([`Table::data_blocks`] if none).
    pub(super) fn find_block(
        &self,
        key: &[u8],
        cur: &mut IndexCursor,
        io: &mut ReadStats,
    ) -> Result<usize> {
        let fmt = self.props.key_format;
        let i = self.index.find(fmt, key);
        let Some(parts) = &self.partitions else {
            return Ok(i);
        };
        if i == self.index.len() {
            return Ok(self.data_blocks());
        }
        // The partition's last key is >= key (it is the top level's key).
        let part = self.cursor_at(parts, i, cur, io)?;
        Ok(parts.first[i] + part.find(fmt, key))
    }

    /// The handle of data block `i` (below [`Table::data_blocks`]).
    pub(super) fn block_handle(
        &self,
        i: usize,
        cur: &mut IndexCursor,
        io: &mut ReadStats,
    ) -> Result<BlockHandle> {
        let Some(parts) = &self.partitions else {
            return Ok(self.index.handle(i));
        };
        let p = parts.of_block(i);
        let part = self.cursor_at(parts, p, cur, io)?;
        Ok(part.handle(i - parts.first[p]))
    }

    /// Whether the user key of data block `i`'s last key is `uk`. The last
    /// block of a partition needs no partition: its key is the top level's.
    pub(super) fn block_user_key_is(
        &self,
        i: usize,
        uk: &[u8],
        cur: &mut IndexCursor,
        io: &mut ReadStats,
    ) -> Result<bool> {
        let fmt = self.props.key_format;
        let Some(parts) = &self.partitions else {
            return Ok(fmt.user_key(self.index.key(i)) == uk);
        };
        let p = parts.of_block(i);
        if i + 1 == parts.first[p + 1] {
            return Ok(fmt.user_key(self.index.key(p)) == uk);
        }
        let part = self.cursor_at(parts, p, cur, io)?;
        Ok(fmt.user_key(part.key(i - parts.first[p])) == uk)
    }

    /// Every index entry (each data block's last key and handle), read
    /// past the block cache: a partitioned index's partitions are read from
    /// the file when not held.
    pub fn index_entries(&self) -> Result<Vec<(Vec<u8>, BlockHandle)>> {
        Ok(self
            .index_blocks()?
            .iter()
            .flat_map(|b| (0..b.len()).map(|i| (b.key(i).to_vec(), b.handle(i))))
            .collect())
    }

    /// The index blocks that point at data blocks, in order: the one block,
    /// or every partition (read from the file when not held).
    pub(super) fn index_blocks(&self) -> Result<Vec<Arc<IndexBlock>>> {
        let Some(parts) = &self.partitions else {
            let h = self.footer.index;
            let block = self.read_block(h, "index")?;
            return Ok(vec![Arc::new(self.decode_index_block(h, "index", &block)?)]);
        };
        if let Some(pinned) = parts.pinned() {
            return Ok(pinned.to_vec());
        }
        (0..self.index.len())
            .map(|p| {
                let what = format!("index partition {p}");
                let block = self.read_block(self.index.handle(p), &what)?;
                self.decode_partition(&self.index, p, block, parts.bounds(p))
                    .map(Arc::new)
            })
            .collect()
    }

    /// Keys that sample the table's data evenly, already in memory: every
    /// index key of a one-block index, the top level's of a partitioned one.
    pub(crate) fn index_sample_keys(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.index.len()).map(|i| self.index.key(i))
    }

    /// Partitions of the index (0: one block).
    pub fn index_partitions(&self) -> usize {
        self.partitions.as_ref().map_or(0, |_| self.index.len())
    }

    /// Whether the index is all in memory: one block, or partitions held.
    pub fn index_pinned(&self) -> bool {
        self.partitions
            .as_ref()
            .is_none_or(|p| p.pinned().is_some())
    }

    /// Bytes of memory a partitioned index's partitions take when held (0
    /// for an index of one block, which is always held).
    pub fn index_partitions_memory_bytes(&self) -> usize {
        self.partitions.as_ref().map_or(0, |p| p.memory_bytes)
    }

    /// Holds a partitioned index's partitions in memory (read from the
    /// file, past the block cache, if not yet) or drops them, so that each
    /// lookup reads the partition it needs. No-op for an index of one
    /// block.
    pub fn pin_index(&self, pin: bool) -> Result<()> {
        let Some(parts) = &self.partitions else {
            return Ok(());
        };
        if pin == parts.pinned().is_some() {
            return Ok(());
        }
        let held: Option<Arc<[Arc<IndexBlock>]>> = if pin {
            Some(self.index_blocks()?.into())
        } else {
            None
        };
        *parts.pinned.write().unwrap_or_else(|p| p.into_inner()) = held;
        Ok(())
    }

    /// Bytes of memory the index takes held whole: the one block, or the
    /// top level and every partition.
    pub fn index_full_memory_bytes(&self) -> usize {
        self.index.memory_bytes() + self.index_partitions_memory_bytes()
    }

    /// Bytes of memory the index always holds: the one block, or a
    /// partitioned index's top level.
    pub fn index_resident_bytes(&self) -> usize {
        self.index.memory_bytes()
    }

    /// Bytes of memory held by the index: the one block, or the top level
    /// and the partitions held.
    pub fn index_memory_bytes(&self) -> usize {
        let held = self
            .partitions
            .as_ref()
            .filter(|p| p.pinned().is_some())
            .map_or(0, |p| p.memory_bytes);
        self.index.memory_bytes() + held
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::test_tables::build;
    use super::super::{TableIter, TableRevIter};
    use super::*;
    use crate::error::Error;
    use crate::sst::format::{BLOCK_TYPE_UNCOMPRESSED, block_trailer};
    use crate::sst::{BlockCache, TableBuilderOptions, TableOpenOptions};

    const N: usize = 3000;

    /// The grouped search finds what a binary search over all the values
    /// finds, for arrays of every length around the group size, with runs
    /// of equal values, for every value in and around them.
    #[test]
    fn first_at_least_is_the_partition_point() {
        let mut next = crate::test_rng::xorshift(11);
        for n in (0..70).chain([255, 256, 257, 1000]) {
            for _ in 0..20 {
                let mut p: Vec<u64> = (0..n).map(|_| next() % 40).collect();
                p.sort_unstable();
                let group_max: Vec<u64> = p.chunks(GROUP).map(|g| g[g.len() - 1]).collect();
                for kp in 0..42 {
                    assert_eq!(
                        first_at_least(&p, &group_max, kp),
                        p.partition_point(|&x| x < kp),
                        "n {n} kp {kp} {p:?}"
                    );
                }
            }
        }
    }

    /// The ties counted from the front are the ties there are, for runs
    /// of every length at every place, and past the end.
    #[test]
    fn tie_len_counts_the_equal_run() {
        for run in 0..70usize {
            for before in [0usize, 1, 5] {
                for after in [0usize, 1, 9] {
                    let p: Vec<u64> = std::iter::repeat_n(3, before)
                        .chain(std::iter::repeat_n(7, run))
                        .chain(std::iter::repeat_n(9, after))
                        .collect();
                    let lo = p.partition_point(|&x| x < 7);
                    assert_eq!(tie_len(&p[lo..], 7), run, "{before} {run} {after}");
                }
            }
        }
        assert_eq!(tie_len(&[], 7), 0);
    }

    /// A table of `N` keys in blocks of a few entries, its index in
    /// partitions of a few entries each.
    fn partitioned(dir: &std::path::Path) -> std::path::PathBuf {
        let opts = TableBuilderOptions {
            block_size: 128,
            index_partition_bytes: 256,
            ..Default::default()
        };
        build(dir, N, opts)
    }

    fn open(path: &std::path::Path, on_demand: bool, cache: Option<&Arc<BlockCache>>) -> Table {
        let opts = TableOpenOptions::default()
            .file_id(3)
            .index_on_demand(on_demand)
            .cache(cache.cloned());
        Table::open(path, opts).unwrap()
    }

    fn key(i: usize) -> Vec<u8> {
        format!("k{i:06}").into_bytes()
    }

    #[test]
    fn a_partitioned_index_reads_like_one_block() {
        let dir = tempfile::tempdir().unwrap();
        let whole = build(
            dir.path(),
            N,
            TableBuilderOptions {
                block_size: 128,
                ..Default::default()
            },
        );
        let whole_bytes = std::fs::read(&whole).unwrap();
        let one = Table::open(&whole, TableOpenOptions::default()).unwrap();
        let want: Vec<_> = one.iter().map(|r| r.unwrap()).collect();
        let want_entries = one.index_entries().unwrap();
        drop(one);
        let dir2 = tempfile::tempdir().unwrap();
        let path = partitioned(dir2.path());
        let bytes = std::fs::read(&path).unwrap();
        // The data blocks are the same bytes; only the index differs.
        let data = want_entries.last().unwrap().1.end_with_trailer().unwrap() as usize;
        assert_eq!(bytes[..data], whole_bytes[..data]);
        for on_demand in [false, true] {
            let t = open(&path, on_demand, None);
            let p = t.properties();
            assert_eq!(
                (p.format_version, p.index_partitions as usize),
                (4, t.index_partitions())
            );
            assert!(t.index_partitions() > 10, "{}", t.index_partitions());
            assert_eq!(t.index_entries().unwrap(), want_entries);
            assert_eq!(t.index_pinned(), !on_demand);
            assert!(t.index_resident_bytes() < t.index_full_memory_bytes() / 10);
            let got: Vec<_> = t.iter().map(|r| r.unwrap()).collect();
            assert_eq!(got, want);
            for i in (0..N).step_by(7) {
                let r = t.get_unhashed(&key(i)).unwrap();
                assert_eq!(r.entry.unwrap().1, format!("v{i}").as_bytes());
                // No cache: each lookup reads its partition.
                assert_eq!(r.index_blocks_read, u64::from(on_demand));
            }
            t.verify_all().unwrap();
        }
    }

    /// Seeks and reverse scans from every index key, the keys around it
    /// and past both ends, against the entries in order.
    #[test]
    fn seeks_and_reverse_scans_at_partition_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = partitioned(dir.path());
        let cache = Arc::new(BlockCache::new(1 << 20));
        for on_demand in [false, true] {
            let t = open(&path, on_demand, Some(&cache));
            let all: Vec<_> = t.iter().map(|r| r.unwrap()).collect();
            let mut targets: Vec<Vec<u8>> = vec![b"a".to_vec(), b"k".to_vec(), b"zz".to_vec()];
            for (k, _) in t.index_entries().unwrap() {
                let mut after = k.clone();
                after.push(0);
                let mut before = k.clone();
                *before.last_mut().unwrap() -= 1;
                before.extend_from_slice(b"~");
                targets.extend([k, after, before]);
            }
            for target in &targets {
                let from = all.partition_point(|(k, _)| k.as_ref() < target.as_slice());
                let got: Vec<_> = TableIter::new(&t, Some(target))
                    .take(3)
                    .map(|r| r.unwrap())
                    .collect();
                assert_eq!(got, all[from..(from + 3).min(N)], "seek {target:?}");
                let upto = all.partition_point(|(k, _)| k.as_ref() <= target.as_slice());
                let got: Vec<_> = TableRevIter::new(&t, Some(target))
                    .take(3)
                    .map(|r| r.unwrap())
                    .collect();
                let want: Vec<_> = all[upto.saturating_sub(3)..upto]
                    .iter()
                    .rev()
                    .cloned()
                    .collect();
                assert_eq!(got, want, "reverse from {target:?}");
            }
            let rev: Vec<_> = TableRevIter::new(&t, None).map(|r| r.unwrap()).collect();
            assert_eq!(rev, all.iter().rev().cloned().collect::<Vec<_>>());
            // A scan reads each partition once, not once per data block.
            let mut it = TableIter::new(&t, None);
            assert_eq!((&mut it).count(), N);
            let io = it.read_stats();
            let parts = if on_demand {
                t.index_partitions() as u64
            } else {
                0
            };
            assert_eq!(io.index_blocks_read + io.index_cache_hits, parts);
        }
    }

    #[test]
    fn partitions_pinned_and_dropped_read_through_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = partitioned(dir.path());
        let cache = Arc::new(BlockCache::new(1 << 20));
        let t = open(&path, true, Some(&cache));
        let resident = t.index_memory_bytes();
        let r = t.get_unhashed(&key(10)).unwrap();
        assert_eq!((r.index_blocks_read, r.index_cache_hits), (1, 0));
        assert!(r.index_bytes_read > 0 && r.index_bytes_read < 512, "{r:?}");
        let r = t.get_unhashed(&key(11)).unwrap();
        assert_eq!((r.index_blocks_read, r.index_cache_hits), (0, 1));
        // A filter negative reads no partition.
        let r = t.get_unhashed(b"k000010x").unwrap();
        assert!(r.filter_negative || r.index_blocks_read + r.index_cache_hits == 1);
        t.pin_index(true).unwrap();
        assert!(t.index_pinned());
        assert_eq!(
            t.index_memory_bytes(),
            resident + t.index_partitions_memory_bytes()
        );
        let r = t.get_unhashed(&key(2000)).unwrap();
        assert_eq!((r.index_blocks_read, r.index_cache_hits), (0, 0));
        assert!(r.found());
        t.pin_index(false).unwrap();
        assert_eq!(t.index_memory_bytes(), resident);
        let r = t.get_unhashed(&key(2000)).unwrap();
        assert_eq!(r.index_blocks_read, 1);
    }

    /// Every byte of one partition flipped (its checksum resealed, so the
    /// structure checks meet it) and not resealed: the table either fails
    /// to open, or a lookup and a scan answer right or report
    /// `Corruption` naming the file and an offset in the partition; never
    /// a panic or a wrong value.
    #[test]
    fn a_damaged_partition_is_corruption_at_its_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = partitioned(dir.path());
        let good = std::fs::read(&path).unwrap();
        let t = open(&path, false, None);
        let p = t.index_partitions() / 2;
        let h = t.index.handle(p);
        let probe: Vec<usize> = {
            let entries = t.index_entries().unwrap();
            let first = entries
                .iter()
                .position(|(k, _)| k.as_slice() > t.index.key(p - 1))
                .unwrap();
            let last = entries
                .iter()
                .position(|(k, _)| k.as_slice() == t.index.key(p))
                .unwrap();
            let lo = std::str::from_utf8(&entries[first - 1].0[1..])
                .unwrap()
                .parse::<usize>()
                .unwrap();
            let hi = std::str::from_utf8(&entries[last].0[1..])
                .unwrap()
                .parse::<usize>()
                .unwrap();
            (lo..=hi).collect()
        };
        drop(t);
        let (start, len) = (h.offset as usize, h.size as usize);
        let (mut refused, mut answered) = (0, 0);
        for reseal in [true, false] {
            // Behind a valid checksum the damage may also send a read to
            // another data block, which reports itself.
            let in_part =
                |offset: u64| reseal || (h.offset..=h.offset + h.size + 5).contains(&offset);
            for i in 0..len {
                for bit in [0, 6] {
                    let mut bad = good.clone();
                    bad[start + i] ^= 1 << bit;
                    if reseal {
                        let tr = block_trailer(
                            Default::default(),
                            &bad[start..start + len],
                            BLOCK_TYPE_UNCOMPRESSED,
                            h.offset,
                        );
                        bad[start + len..start + len + 5].copy_from_slice(&tr);
                    }
                    // Opened whole, it is found at open; opened on demand
                    // with a good copy at open, the damage is met by reads.
                    match Table::open(path_with(&path, &bad), TableOpenOptions::default()) {
                        Err(Error::Corruption { file, offset, .. }) => {
                            assert_eq!(file, path);
                            assert!(in_part(offset) || offset == h.offset, "{offset}");
                            refused += 1;
                        }
                        Err(e) => panic!("{e}"),
                        Ok(t) => {
                            // Damage the structure checks accept: the
                            // answers are still right or an error.
                            check_reads(&t, &probe, &in_part);
                            answered += 1;
                        }
                    }
                    std::fs::write(&path, &good).unwrap();
                    let t = open(&path, true, None);
                    std::fs::write(&path, &bad).unwrap();
                    check_reads(&t, &probe, &in_part);
                }
            }
        }
        assert!(refused > 0 && answered < refused, "{refused} {answered}");
        std::fs::write(&path, &good).unwrap();
    }

    /// Writes `bytes` to `path` and returns it.
    fn path_with(path: &std::path::Path, bytes: &[u8]) -> std::path::PathBuf {
        std::fs::write(path, bytes).unwrap();
        path.to_path_buf()
    }

    /// Each of `keys` reads its value or fails with `Corruption` at an
    /// offset `in_part` accepts; so does a scan. A lost key is allowed
    /// only if `verify_all` reports the table (the standard of
    /// tests/resealed_fuzz.rs for damage behind a valid checksum).
    fn check_reads(t: &Table, keys: &[usize], in_part: &dyn Fn(u64) -> bool) {
        for &i in keys {
            match t.get_unhashed(&key(i)) {
                Ok(r) if r.entry.is_none() => {
                    assert!(t.verify_all().unwrap_err().is_corruption(), "k{i} lost")
                }
                Ok(r) => assert_eq!(r.entry.unwrap().1, format!("v{i}").as_bytes()),
                Err(Error::Corruption { file, offset, .. }) => {
                    assert_eq!(file, t.path());
                    assert!(in_part(offset), "{offset}");
                }
                Err(e) => panic!("{e}"),
            }
        }
        // A scan through the partition's blocks, from a seek before them.
        let mut n = keys[0];
        for r in t.iter_from(&key(n)).take(keys.len() + 1) {
            match r {
                Ok((k, _)) if k.as_ref() != key(n).as_slice() => {
                    assert!(t.verify_all().unwrap_err().is_corruption(), "k{n} lost");
                    break;
                }
                Ok((k, v)) => {
                    assert_eq!(k.as_ref(), key(n).as_slice());
                    assert_eq!(v.as_ref(), format!("v{n}").as_bytes());
                    n += 1;
                }
                Err(Error::Corruption { offset, .. }) => assert!(in_part(offset), "{offset}"),
                Err(e) => panic!("{e}"),
            }
        }
    }
}
