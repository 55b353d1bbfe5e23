//! Table: an opened, verified SSTable answering point lookups and scans.
//!
//! [`Table::open`] reads and verifies the footer, metaindex, properties, filter
//! and index blocks and keeps the index and the filter in memory for the
//! table's whole life (unless opened to read them on demand). A lookup then
//! costs at most one data-block read, and a lookup the filter rejects costs
//! none. All reads are positional
//! (`read_exact_at`), so a `&Table` is shared by many threads without a lock.
//!
//! This file holds the [`Table`] type, its in-memory index, its accessors and
//! [`TableOpenOptions`]; the rest is one file per job:
//!
//! - `open.rs`: [`Table::open`] and the checks it makes on the footer,
//!   metaindex, properties, filter and index.
//! - `file.rs`: the table's file descriptor, which the store's
//!   [`TableCache`] may close and a later read reopens.
//! - `read.rs`: reading one block: bounds, checksum, decompression, the block
//!   cache and the sequential pass's readahead; [`ReadStats`].
//! - `filter.rs`: reading the table's filter, whole or one partition on demand.
//! - `index.rs`: the index, one block or partitions under a top level, and
//!   finding a key's data block through it.
//! - `get.rs`: point lookups ([`Table::get`], [`TableGet`]).
//! - `verify.rs`: [`Table::verify_all`], every block read back and checked.
//! - `stored.rs`: [`Table::stored_blocks`], the data blocks as stored, for a
//!   filter-only rewrite's copy.
//! - `iter.rs`: [`TableIter`], the forward scan.
//! - `rev_iter.rs`: `TableRevIter`, the backward scan.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::filter::{Filter, PrefixFilter, RangeFilter};
use crate::fs::{FileSystem, ReadMode};

use super::block::{BlockError, BlockIter};
use super::cache::BlockCache;
use super::compression::Compression;
use super::filter_block::FilterInfo;
use super::format::{BlockHandle, ChecksumType, FORMAT_VERSION_UNCOMPRESSED, Footer, KeyFormat};
use super::properties::TableProperties;
use super::table_cache::TableCache;

mod adjacent;
mod file;
mod filter;
mod get;
mod index;
mod iter;
mod open;
mod read;
mod rev_iter;
mod stored;
#[cfg(test)]
mod test_tables;
mod verify;

pub(crate) use adjacent::{Preloaded, adjacent_runs};
pub use get::TableGet;
pub(crate) use index::IndexCursor;
pub use iter::TableIter;
pub use read::{READAHEAD_BYTES, ReadStats};
pub(crate) use rev_iter::TableRevIter;
pub use stored::{StoredBlock, StoredBlocks};

/// The `what` of data blocks: the only blocks that may be stored compressed.
const DATA: &str = "data";

/// How to open a table.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct TableOpenOptions {
    /// The store-wide number of this file: the block cache key's first half.
    /// Must be unique among files sharing a cache.
    pub file_id: u64,
    /// The shared block cache for data blocks; `None` reads every block from disk.
    pub cache: Option<Arc<BlockCache>>,
    /// The file system to read through; `None`: the operating system's.
    pub fs: Option<Arc<dyn FileSystem>>,
    /// Read every block of the file through the page cache or around it
    /// (then `bytes_read` counts whole sectors).
    pub read_mode: ReadMode,
    /// Do not keep the filter in memory: it is read and checked at open,
    /// then dropped, and each lookup reads the filter block it needs (one
    /// partition of a partitioned filter) through the block cache. The
    /// store's filter memory budget opens its tables this way and pins the
    /// filters it chooses itself ([`Table::load_filter`]).
    pub filter_on_demand: bool,
    /// Do not keep a partitioned index's partitions in memory: they are
    /// read and checked at open, then dropped, and each lookup reads the
    /// partition it needs through the block cache. The store's metadata
    /// memory budget opens its tables this way and pins the indexes it
    /// chooses itself ([`Table::pin_index`]). An index of one block is
    /// always held.
    pub index_on_demand: bool,
    /// The bound on the table files held open at once: past it, the file
    /// of a table not read lately is closed, and reopened (checked to be
    /// the same file) by the next read that needs it. The index, the
    /// properties and a pinned filter stay in memory either way. `None`:
    /// the file stays open for the table's life.
    pub table_cache: Option<Arc<TableCache>>,
}

crate::options::setters!(TableOpenOptions {
    file_id: u64,
    cache: Option<Arc<BlockCache>>,
    fs: Option<Arc<dyn FileSystem>>,
    read_mode: ReadMode,
    filter_on_demand: bool,
    index_on_demand: bool,
    table_cache: Option<Arc<TableCache>>,
});

/// An open SSTable.
pub struct Table {
    path: PathBuf,
    file: file::TableFile,
    file_id: u64,
    file_size: u64,
    cache: Option<Arc<BlockCache>>,
    footer: Footer,
    props: TableProperties,
    /// The index block, or a partitioned index's top level (one entry per
    /// partition: its last key and its handle).
    index: index::IndexBlock,
    /// A partitioned index's partitions (`None` for an index of one block).
    partitions: Option<index::Partitions>,
    /// Where the last data block's trailer ends.
    data_end: u64,
    /// The filter, when held in memory.
    filter: Option<Filter>,
    filter_name: Option<String>,
    /// The filter block, or a partitioned filter's partition index block.
    filter_handle: Option<BlockHandle>,
    /// A partitioned filter's partitions (empty for a whole filter block).
    filter_partitions: Vec<BlockHandle>,
    filter_info: Option<FilterInfo>,
    /// The prefix filter block, decoded, or why it did not decode.
    prefix_filter: Option<std::result::Result<PrefixFilter, String>>,
    prefix_filter_handle: Option<BlockHandle>,
    /// The range filter block, decoded, or why it did not decode.
    range_filter: Option<std::result::Result<RangeFilter, String>>,
    range_filter_handle: Option<BlockHandle>,
    properties_handle: BlockHandle,
    /// The range-tombstone block, kept like the index (empty without one).
    range_tombstones: crate::range_tombstone::Fragments,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("file_id", &self.file_id)
            .field("file_size", &self.file_size)
            .field("entries", &self.props.entries)
            .field("data_blocks", &self.props.data_blocks)
            .field("filter", &self.filter)
            .finish()
    }
}

impl Table {
    // ------------------------------------------------------------ errors

    fn corruption(&self, offset: u64, what: impl Into<String>) -> Error {
        Error::corruption(&self.path, offset, what)
    }

    /// Data blocks of a format version 2 table may be stored compressed.
    fn compressed_table(&self) -> bool {
        self.footer.format_version > FORMAT_VERSION_UNCOMPRESSED
    }

    fn block_error(&self, h: BlockHandle, what: &str, e: BlockError) -> Error {
        if what == DATA && self.compressed_table() {
            // The offset is within the decoded block, not the file.
            return self.corruption(
                h.offset,
                format!(
                    "{what} block: at byte {} of its uncompressed contents: {}",
                    e.offset, e.what
                ),
            );
        }
        self.corruption(
            h.offset.saturating_add(e.offset as u64),
            format!("{what} block: {}", e.what),
        )
    }

    /// Advances a block iterator, mapping errors to corruption at file offsets.
    fn block_step(&self, it: &mut BlockIter, h: BlockHandle, what: &str) -> Result<bool> {
        it.advance().map_err(|e| self.block_error(h, what, e))
    }

    // ------------------------------------------------------------ accessors

    /// The table's range tombstones, fragmented (empty without any).
    pub(crate) fn range_tombstones(&self) -> &crate::range_tombstone::Fragments {
        &self.range_tombstones
    }

    /// Number of range tombstones (fragment and sequence pairs) the table
    /// holds.
    pub fn range_tombstone_count(&self) -> usize {
        self.range_tombstones.count()
    }

    /// The table's properties.
    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// Smallest stored key (empty for an empty table).
    pub fn smallest_key(&self) -> &[u8] {
        &self.props.smallest_key
    }

    /// Largest stored key.
    pub fn largest_key(&self) -> &[u8] {
        &self.props.largest_key
    }

    /// User key of the smallest key.
    pub fn smallest_user_key(&self) -> &[u8] {
        &self.props.smallest_user_key
    }

    /// User key of the largest key.
    pub fn largest_user_key(&self) -> &[u8] {
        &self.props.largest_user_key
    }

    /// Number of entries.
    pub fn entries(&self) -> u64 {
        self.props.entries
    }

    /// Number of data blocks (as many as the index has entries: checked at
    /// open).
    pub fn data_blocks(&self) -> usize {
        self.props.data_blocks as usize
    }

    /// The file's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The table's key order.
    pub fn key_format(&self) -> KeyFormat {
        self.props.key_format
    }

    /// How the table's data blocks were compressed (its `compression`
    /// property; [`Compression::None`] for a format version 1 table).
    pub fn compression(&self) -> Compression {
        self.props.compression
    }
    /// The file's checksum algorithm.
    pub fn checksum_type(&self) -> ChecksumType {
        self.footer.checksum
    }

    /// The decoded footer.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// The filter held in memory (`None` if the table has no filter block,
    /// or reads it on demand; possibly [`Filter::Unusable`] if written by an
    /// unknown policy).
    pub fn filter(&self) -> Option<&Filter> {
        self.filter.as_ref()
    }

    /// The filter policy name from the metaindex (`filter.<name>`).
    pub fn filter_policy_name(&self) -> Option<&str> {
        self.filter_name.as_deref()
    }

    /// Handle of the filter block (of the partition index block, for a
    /// partitioned filter), if any.
    pub fn filter_handle(&self) -> Option<BlockHandle> {
        self.filter_handle
    }

    /// Handles of a partitioned filter's partitions (empty for a whole
    /// filter block or none).
    pub fn filter_partitions(&self) -> &[BlockHandle] {
        &self.filter_partitions
    }

    /// What the table knows of its filter (read at open), whether or not
    /// the bits are held in memory; `None` without a filter block.
    pub fn filter_info(&self) -> Option<&FilterInfo> {
        self.filter_info.as_ref()
    }

    /// The prefix filter: `None` without a prefix filter block,
    /// `Some(Err(why))` for one that fails its checksum or does not decode
    /// (the table is then read without prefix skipping).
    pub fn prefix_filter(&self) -> Option<std::result::Result<&PrefixFilter, &str>> {
        self.prefix_filter
            .as_ref()
            .map(|r| r.as_ref().map_err(String::as_str))
    }

    /// Handle of the prefix filter block, if any.
    pub fn prefix_filter_handle(&self) -> Option<BlockHandle> {
        self.prefix_filter_handle
    }

    /// The range filter: `None` without a range filter block,
    /// `Some(Err(why))` for one that fails its checksum or does not decode
    /// (the table is then read without range skipping).
    pub fn range_filter(&self) -> Option<std::result::Result<&RangeFilter, &str>> {
        self.range_filter
            .as_ref()
            .map(|r| r.as_ref().map_err(String::as_str))
    }

    /// Handle of the range filter block, if any.
    pub fn range_filter_handle(&self) -> Option<BlockHandle> {
        self.range_filter_handle
    }

    /// Bytes of memory held by the filter (0 without one).
    pub fn filter_memory_bytes(&self) -> usize {
        self.filter.as_ref().map_or(0, Filter::memory_bytes)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The id given at open (block cache key).
    pub fn file_id(&self) -> u64 {
        self.file_id
    }

    /// Whether the table's file descriptor is open now (a
    /// [`TableCache`] may have closed it; the next read reopens it).
    pub fn file_is_open(&self) -> bool {
        self.file.is_open()
    }

    /// Deletes the table's file when the table is dropped: the store no
    /// longer names it, but readers holding the table may still reopen the
    /// file until then.
    pub(crate) fn remove_file_on_drop(&self) {
        self.file.remove_on_drop();
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use super::test_tables::build;
    use super::*;
    use crate::sst::{TableBuilder, TableBuilderOptions};

    fn _assert_send_sync() {
        fn is<T: Send + Sync>() {}
        is::<Table>();
        is::<TableIter<Arc<Table>>>();
        is::<TableIter<&Table>>();
    }

    #[test]
    fn find_block_agrees_with_a_scan_when_prefixes_tie() {
        // Keys over {0, 1, 0xff} of lengths 0..12: 8-byte prefixes tie
        // across many blocks, keys are prefixes of each other, and the zero
        // padding of short keys meets real zero bytes.
        let mut keys = std::collections::BTreeSet::new();
        let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut random_key = || {
            let len = (next() % 12) as usize;
            (0..len)
                .map(|_| [0u8, 1, 0xff][(next() % 3) as usize])
                .collect::<Vec<u8>>()
        };
        for _ in 0..3000 {
            keys.insert(random_key());
        }
        let probes: Vec<Vec<u8>> = (0..3000).map(|_| random_key()).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sst");
        // One index block, and partitions of a few entries each, held or
        // read on demand.
        for (index_partition_bytes, on_demand) in [(0, false), (200, false), (200, true)] {
            let opts = TableBuilderOptions {
                block_size: 64,
                index_partition_bytes,
                ..Default::default()
            };
            let mut b = TableBuilder::new(File::create(&path).unwrap(), &path, opts);
            for k in &keys {
                b.add(k, b"v").unwrap();
            }
            b.finish().unwrap();
            let open = TableOpenOptions::default().index_on_demand(on_demand);
            let t = Table::open(&path, open).unwrap();
            assert!(t.data_blocks() > 100);
            assert_eq!(t.index_partitions() > 10, index_partition_bytes > 0);
            assert_eq!(t.index_pinned(), !on_demand);
            let entries = t.index_entries().unwrap();
            assert_eq!(entries.len(), t.data_blocks());
            let scan = |k: &[u8]| entries.iter().position(|e| &e.0[..] >= k);
            let mut cur = IndexCursor::default();
            let mut io = ReadStats::default();
            for k in keys.iter().chain(&probes) {
                let i = t.find_block(k, &mut cur, &mut io).unwrap();
                assert_eq!(Some(i).filter(|&i| i < t.data_blocks()), scan(k));
            }
            for k in &keys {
                assert_eq!(t.get_unhashed(k).unwrap().entry.unwrap().0, &k[..]);
            }
            t.verify_all().unwrap();
        }
    }

    #[test]
    fn empty_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = build(dir.path(), 0, TableBuilderOptions::default());
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        assert_eq!(t.entries(), 0);
        assert!(t.get_unhashed(b"a").unwrap().key_range_skipped);
        assert_eq!(t.iter().count(), 0);
        assert_eq!(t.iter_from(b"a").count(), 0);
        t.verify_all().unwrap();
    }
}
