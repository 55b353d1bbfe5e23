//! Table: an opened, verified SSTable answering point lookups and scans.
//!
//! [`Table::open`] reads and verifies the footer, metaindex, properties, filter
//! and index blocks and keeps the index and the filter in memory for the
//! table's whole life. A lookup then costs at most one data-block read, and a
//! lookup the filter rejects costs none. All reads are positional
//! (`read_exact_at`), so a `&Table` is shared by many threads without a lock.

use std::cmp::Ordering;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::error::{Error, Result};
use crate::filter::{Filter, FilterKind, PartitionedFilter, key_hash, partitioned};
use crate::fs::{FileSystem, ReadMode, ReadableFile, RealFs, open_read_in};
use crate::key;

use super::block::{Block, BlockError, BlockIter};
use super::cache::BlockCache;
use super::compression::{self, BLOCK_TYPE_NONE, Compression};
use super::filter_block::{self, FilterInfo};
use super::format::{
    BLOCK_TRAILER_LEN, BlockHandle, ChecksumType, FOOTER_LEN, FORMAT_VERSION_UNCOMPRESSED, Footer,
    KeyFormat, META_FILTER_PARTITIONS_PREFIX, META_FILTER_PREFIX, META_PROPERTIES, show_key,
    verify_block,
};

/// The `what` of data blocks: the only blocks that may be stored compressed.
const DATA: &str = "data";
use super::properties::TableProperties;

/// How to open a table.
#[derive(Clone, Debug, Default)]
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
}

/// Data-block I/O done by one lookup or one iterator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Data blocks read from the file (cache misses or no cache).
    pub blocks_read: u64,
    /// Data blocks served by the block cache.
    pub cache_hits: u64,
    /// Bytes read from the file as stored (compressed, if the block is),
    /// trailers included: the I/O, not the decompressed size; with direct
    /// reads, the whole sectors read ([`ReadableFile::transfer_len`]).
    pub bytes_read: u64,
}

/// The outcome of [`Table::get`], with what it cost, for the engine's accounting.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableGet {
    /// The first entry whose key is `>=` the lookup key, if it has the lookup's
    /// user key.
    pub entry: Option<(Bytes, Bytes)>,
    /// The user key lies outside the table's key range: nothing was read.
    pub key_range_skipped: bool,
    /// A usable filter was probed.
    pub filter_checked: bool,
    /// The filter ruled the key out: no data block was read (an I/O saved).
    pub filter_negative: bool,
    /// The table has a filter this build cannot read (unknown policy); the
    /// lookup went to the data block as if there were no filter.
    pub filter_unusable: bool,
    /// The table holds some entry with the lookup's user key (possibly only
    /// versions newer than the one asked for). Known without extra I/O.
    pub user_key_found: bool,
    /// Data blocks read from disk (0 or 1).
    pub blocks_read: u64,
    /// Data blocks served by the cache (0 or 1).
    pub cache_hits: u64,
    /// Bytes read from disk (as stored, trailer included).
    pub bytes_read: u64,
    /// Filter blocks (whole filters or partitions) read from disk for a
    /// filter not held in memory (0 or 1).
    pub filter_blocks_read: u64,
    /// Bytes of those filter blocks (trailer included; whole sectors with
    /// direct reads).
    pub filter_bytes_read: u64,
    /// Filter blocks served by the block cache (0 or 1).
    pub filter_cache_hits: u64,
}

impl TableGet {
    /// True if an entry was returned.
    pub fn found(&self) -> bool {
        self.entry.is_some()
    }

    /// The filter said "maybe" but the file does not hold the user key: a data
    /// block was read for nothing.
    pub fn false_positive(&self) -> bool {
        self.filter_checked && !self.filter_negative && !self.user_key_found
    }

    /// The filter said "maybe" and the user key is in the file.
    pub fn true_positive(&self) -> bool {
        self.filter_checked && !self.filter_negative && self.user_key_found
    }

    fn add_io(&mut self, io: &ReadStats) {
        self.blocks_read += io.blocks_read;
        self.cache_hits += io.cache_hits;
        self.bytes_read += io.bytes_read;
    }
}

/// One in-memory index entry: the last key of a data block and its handle.
#[derive(Clone, Copy, Debug)]
struct IndexEntry {
    /// End of the key in `Table::index_keys` (the start is the previous end).
    key_end: usize,
    handle: BlockHandle,
}

/// An open SSTable.
pub struct Table {
    path: PathBuf,
    file: Arc<dyn ReadableFile>,
    file_id: u64,
    file_size: u64,
    cache: Option<Arc<BlockCache>>,
    footer: Footer,
    props: TableProperties,
    /// All index keys back to back (one allocation instead of one per block).
    index_keys: Vec<u8>,
    index: Vec<IndexEntry>,
    /// [`key::prefix`] of each index key's user key: `find_block` searches
    /// these (a dense array, a few cache lines for the whole search) and
    /// compares whole keys only among prefix ties.
    index_prefix: Vec<u64>,
    /// The filter, when held in memory.
    filter: Option<Filter>,
    filter_name: Option<String>,
    /// The filter block, or a partitioned filter's partition index block.
    filter_handle: Option<BlockHandle>,
    /// A partitioned filter's partitions (empty for a whole filter block).
    filter_partitions: Vec<BlockHandle>,
    filter_info: Option<FilterInfo>,
    properties_handle: BlockHandle,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("file_id", &self.file_id)
            .field("file_size", &self.file_size)
            .field("entries", &self.props.entries)
            .field("data_blocks", &self.index.len())
            .field("filter", &self.filter)
            .finish()
    }
}

impl Table {
    /// Opens and verifies the table at `path`: footer, metaindex, properties,
    /// filter and index blocks (checksums and structure). Data blocks are
    /// verified when read; [`verify_all`](Self::verify_all) checks them all.
    pub fn open(path: impl AsRef<Path>, opts: TableOpenOptions) -> Result<Table> {
        let path = path.as_ref().to_path_buf();
        let file = match &opts.fs {
            Some(fs) => open_read_in(fs.as_ref(), &path, opts.read_mode),
            None => open_read_in(&RealFs, &path, opts.read_mode),
        }
        .map_err(|e| Error::io(format!("open {}", path.display()), e))?;
        let file_size = file
            .len()
            .map_err(|e| Error::io(format!("stat {}", path.display()), e))?;
        let footer_offset = file_size.checked_sub(FOOTER_LEN as u64).ok_or_else(|| {
            Error::corruption(
                &path,
                0,
                format!("file of {file_size} bytes is shorter than the {FOOTER_LEN}-byte footer"),
            )
        })?;
        let mut raw = [0u8; FOOTER_LEN];
        read_at(file.as_ref(), &path, &mut raw, footer_offset)?;
        let footer = Footer::decode(&raw, footer_offset)
            .map_err(|(off, what)| Error::corruption(&path, footer_offset + off, what))?;

        // Fields filled in step by step; `table` lets the block helpers run.
        let mut table = Table {
            path,
            file,
            file_id: opts.file_id,
            file_size,
            cache: opts.cache,
            footer,
            props: placeholder_properties(),
            index_keys: Vec::new(),
            index: Vec::new(),
            index_prefix: Vec::new(),
            filter: None,
            filter_name: None,
            filter_handle: None,
            filter_partitions: Vec::new(),
            filter_info: None,
            properties_handle: BlockHandle::default(),
        };

        // Metaindex: names -> handles.
        let mi = table.read_block(footer.metaindex, "metaindex")?;
        let mut it = mi.iter(KeyFormat::Plain);
        let mut props_handle = None;
        // (policy name, handle, partitioned)
        let mut filter: Option<(String, BlockHandle, bool)> = None;
        loop {
            let at = footer.metaindex.offset + it.next_offset() as u64;
            if !table.block_step(&mut it, footer.metaindex, "metaindex")? {
                break;
            }
            let h = BlockHandle::decode_exact(it.value_slice()).ok_or_else(|| {
                table.corruption(at, "metaindex entry value is not a block handle")
            })?;
            let name = it.key();
            if name == META_PROPERTIES.as_bytes() {
                if props_handle.replace(h).is_some() {
                    return Err(table.corruption(at, "two properties blocks"));
                }
            } else if let Some(policy) = name.strip_prefix(META_FILTER_PREFIX.as_bytes()) {
                let policy = String::from_utf8_lossy(policy).into_owned();
                if filter.replace((policy, h, false)).is_some() {
                    return Err(table.corruption(at, "more than one filter block"));
                }
            } else if let Some(policy) = name.strip_prefix(META_FILTER_PARTITIONS_PREFIX.as_bytes())
            {
                let policy = String::from_utf8_lossy(policy).into_owned();
                if filter.replace((policy, h, true)).is_some() {
                    return Err(table.corruption(at, "more than one filter block"));
                }
            }
            // Other names: written by a later version; ignored.
        }
        let props_handle = props_handle.ok_or_else(|| {
            table.corruption(footer.metaindex.offset, "metaindex has no properties block")
        })?;

        // Properties.
        let pb = table.read_block(props_handle, "properties")?;
        table.props = TableProperties::decode(&pb)
            .map_err(|e| table.block_error(props_handle, "properties", e))?;
        table.properties_handle = props_handle;
        let p = &table.props;
        if p.format_version != footer.format_version {
            return Err(table.corruption(
                props_handle.offset,
                format!(
                    "properties say format version {}, footer {}",
                    p.format_version, footer.format_version
                ),
            ));
        }
        // Lookups skip a table by the user-key range, `verify_all` checks
        // the full keys: the two must be one range.
        if p.smallest_user_key != p.key_format.user_key(&p.smallest_key)
            || p.largest_user_key != p.key_format.user_key(&p.largest_key)
        {
            return Err(table.corruption(
                props_handle.offset,
                "the user-key range differs from the key range",
            ));
        }
        if (p.entries == 0) != (p.data_blocks == 0) {
            return Err(table.corruption(
                props_handle.offset,
                format!("{} entries in {} data blocks", p.entries, p.data_blocks),
            ));
        }
        if let Some(what) = size_bounds_broken(p, table.file_size()) {
            return Err(table.corruption(props_handle.offset, what));
        }
        if p.data_blocks > 0
            && p.data_raw_max.saturating_add(BLOCK_TRAILER_LEN as u64) > p.data_raw_size
            && table.compressed_table()
        {
            return Err(table.corruption(
                props_handle.offset,
                format!(
                    "largest raw data block {} is more than all data blocks' {}",
                    p.data_raw_max, p.data_raw_size
                ),
            ));
        }
        if filter.as_ref().is_some_and(|f| f.2) != (p.filter_partitions > 0) {
            return Err(table.corruption(
                footer.metaindex.offset,
                format!(
                    "metaindex has a {} filter, properties say {} partitions",
                    if filter.as_ref().is_some_and(|f| f.2) {
                        "partitioned"
                    } else {
                        "whole or no"
                    },
                    p.filter_partitions
                ),
            ));
        }
        if filter.as_ref().map(|f| &f.0) != p.filter_policy.as_ref() {
            return Err(table.corruption(
                footer.metaindex.offset,
                format!(
                    "metaindex filter {:?} disagrees with properties filter {:?}",
                    filter.as_ref().map(|f| &f.0),
                    p.filter_policy
                ),
            ));
        }

        // Filter: read and checked whole, then kept in memory (aligned
        // copy) for the table's life, or dropped when read on demand.
        if let Some((name, h, partitioned)) = filter {
            if partitioned {
                let bytes = table.read_raw(h, "filter partition index")?;
                let parts = filter_block::decode_partition_index(&bytes).map_err(|(at, e)| {
                    table.corruption(h.offset + at as u64, format!("filter partition index: {e}"))
                })?;
                if parts.len() as u64 != table.props.filter_partitions {
                    return Err(table.corruption(
                        h.offset,
                        format!(
                            "filter partition index has {} partitions, properties say {}",
                            parts.len(),
                            table.props.filter_partitions
                        ),
                    ));
                }
                // Written back to back just before the index block: any
                // other layout (say, two handles swapped behind a re-sealed
                // checksum, which would send keys to the wrong partition)
                // is damage.
                let mut next = parts[0].offset;
                for (i, ph) in parts.iter().enumerate() {
                    if ph.offset != next || ph.end_with_trailer().is_none_or(|e| e > h.offset) {
                        return Err(table.corruption(
                            h.offset,
                            format!(
                                "filter partition {i} at offset {} size {} is not where \
                                 partition {} ends ({next}), or runs into the index",
                                ph.offset,
                                ph.size,
                                i.saturating_sub(1)
                            ),
                        ));
                    }
                    next = ph.offset + ph.size + BLOCK_TRAILER_LEN as u64;
                }
                if next != h.offset {
                    return Err(table.corruption(
                        h.offset,
                        format!("filter partitions end at {next}, not at their index"),
                    ));
                }
                table.filter_partitions = parts;
            }
            table.filter_name = Some(name);
            table.filter_handle = Some(h);
            let f = table.load_filter()?.expect("the table has a filter");
            table.filter_info = Some(FilterInfo::of(&f));
            // An unusable filter is a few bytes: kept, so readers see why.
            if !opts.filter_on_demand || !f.is_usable() {
                table.filter = Some(f);
            }
        }

        // Index: decoded into memory once.
        let ib = table.read_block(footer.index, "index")?;
        let fmt = table.props.key_format;
        let mut it = ib.iter(fmt);
        let mut keys = Vec::new();
        let mut index = Vec::new();
        let mut prev_end = 0usize;
        loop {
            let at = footer.index.offset + it.next_offset() as u64;
            if !table.block_step(&mut it, footer.index, "index")? {
                break;
            }
            let h = BlockHandle::decode_exact(it.value_slice())
                .ok_or_else(|| table.corruption(at, "index entry value is not a block handle"))?;
            if h.end_with_trailer().is_none_or(|e| e > footer_offset) {
                return Err(table.corruption(
                    at,
                    format!(
                        "index entry points past the end of the data: offset {} size {}",
                        h.offset, h.size
                    ),
                ));
            }
            if !index.is_empty() && fmt.compare(&keys[prev_end..], it.key()) != Ordering::Less {
                return Err(table.corruption(at, "index keys out of order"));
            }
            prev_end = keys.len();
            keys.extend_from_slice(it.key());
            index.push(IndexEntry {
                key_end: keys.len(),
                handle: h,
            });
        }
        let p = &table.props;
        if index.len() as u64 != p.data_blocks {
            return Err(table.corruption(
                footer.index.offset,
                format!(
                    "index has {} entries, properties say {} data blocks",
                    index.len(),
                    p.data_blocks
                ),
            ));
        }
        if !index.is_empty() && keys[prev_end..] != p.largest_key[..] {
            return Err(table.corruption(
                footer.index.offset,
                "last index key differs from the largest key in the properties",
            ));
        }
        keys.shrink_to_fit();
        index.shrink_to_fit();
        table.index_prefix = (0..index.len())
            .map(|i| {
                let start = if i == 0 { 0 } else { index[i - 1].key_end };
                key::prefix(fmt.user_key(&keys[start..index[i].key_end]))
            })
            .collect();
        table.index_keys = keys;
        table.index = index;
        Ok(table)
    }

    // ------------------------------------------------------------ helpers

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

    /// Reads and verifies the block at `h`; returns its contents: the
    /// payload, decompressed if it is a compressed data block.
    fn read_raw(&self, h: BlockHandle, what: &str) -> Result<Bytes> {
        self.read_raw_into(h, what, BytesMut::new())
    }

    /// [`read_raw`](Self::read_raw) into `buf`'s memory (its length and
    /// contents do not matter: every byte is overwritten by the read).
    fn read_raw_into(&self, h: BlockHandle, what: &str, mut buf: BytesMut) -> Result<Bytes> {
        let data_end = self.file_size - FOOTER_LEN as u64;
        let end = h.end_with_trailer();
        if end.is_none_or(|e| e > data_end) {
            return Err(self.corruption(
                h.offset,
                format!(
                    "{what} block (offset {}, size {}) runs past the end of the data at {data_end}",
                    h.offset, h.size
                ),
            ));
        }
        // Bounded by the file size above, so a corrupt length cannot make us
        // allocate more than the file holds. A recycled buffer of about the
        // same size needs no zeroing: only a longer tail is written here.
        let need = h.size as usize + BLOCK_TRAILER_LEN;
        if buf.capacity() < need {
            // Room for the table's largest data block (at most twice this
            // one), so that recycled, this buffer takes any other block
            // without growing.
            let largest = (self.props.data_raw_max as usize).saturating_add(BLOCK_TRAILER_LEN);
            buf = BytesMut::with_capacity(largest.clamp(need, need * 2));
        }
        buf.resize(need, 0);
        read_at(self.file.as_ref(), &self.path, &mut buf, h.offset)?;
        let (n, block_type) = self.check_block(h, what, &buf)?;
        buf.truncate(n);
        if block_type == BLOCK_TYPE_NONE {
            return Ok(buf.freeze());
        }
        self.decompress_block(h, what, block_type, &buf)
    }

    /// Verifies block `h` as stored (`raw`: its bytes and trailer): its
    /// length, stored with its checksum and its type byte.
    fn check_block(&self, h: BlockHandle, what: &str, raw: &[u8]) -> Result<(usize, u8)> {
        let compressed_ok = what == DATA && self.compressed_table();
        verify_block(self.footer.checksum, raw, h.offset, compressed_ok)
            .map_err(|e| self.corruption(h.offset, format!("{what} block: {e}")))
    }

    /// The contents of block `h`, stored compressed as `block_type`. Called
    /// after [`check_block`](Self::check_block): only intact stored bytes
    /// reach the decoder, and the table's largest block bounds what it may
    /// allocate.
    fn decompress_block(
        &self,
        h: BlockHandle,
        what: &str,
        block_type: u8,
        stored: &[u8],
    ) -> Result<Bytes> {
        compression::decompress(block_type, stored, self.props.data_raw_max)
            .map(Bytes::from)
            .map_err(|e| self.corruption(h.offset, format!("{what} block: {e}")))
    }

    fn read_block(&self, h: BlockHandle, what: &str) -> Result<Block> {
        let data = self.read_raw(h, what)?;
        Block::new(data).map_err(|e| self.block_error(h, what, e))
    }

    /// Data block `i`, from the cache or the file (verified, then cached).
    fn data_block(&self, i: usize, io: &mut ReadStats) -> Result<Block> {
        let h = self.index[i].handle;
        let cache = self.cache.as_deref().filter(|c| c.is_enabled());
        if let Some(c) = cache
            && let Some(data) = c.get(self.file_id, h.offset)
        {
            io.cache_hits += 1;
            return Block::new(data).map_err(|e| self.block_error(h, DATA, e));
        }
        // The I/O is the stored bytes; the cache holds the decompressed block.
        io.blocks_read += 1;
        io.bytes_read += self
            .file
            .transfer_len(h.offset, h.size as usize + BLOCK_TRAILER_LEN);
        let buf = cache.map_or_else(BytesMut::new, |c| c.recycled(self.file_id, h.offset));
        let data = self.read_raw_into(h, DATA, buf)?;
        let block = Block::new(data).map_err(|e| self.block_error(h, DATA, e))?;
        if let Some(c) = cache {
            c.insert(self.file_id, h.offset, block.data().clone());
        }
        Ok(block)
    }

    /// Data block `i` for a sequential pass (a compaction's input): cut out of
    /// `ra`, a chunk of [`READAHEAD_BYTES`] read at once, so a table costs
    /// one read per chunk instead of one per block. The block cache is
    /// neither consulted nor filled (RocksDB's compactions read with
    /// `fill_cache = false`): the inputs are deleted when the compaction
    /// ends, and their blocks would push out the ones readers use.
    fn data_block_ahead(&self, i: usize, ra: &mut Readahead, io: &mut ReadStats) -> Result<Block> {
        let h = self.index[i].handle;
        let data_end = self.file_size - FOOTER_LEN as u64;
        let end = match h.end_with_trailer() {
            Some(e) if e <= data_end => e,
            _ => return self.data_block(i, io), // reports the corruption
        };
        let need = (end - h.offset) as usize;
        if !(ra.offset <= h.offset && end <= ra.offset + ra.buf.len() as u64) {
            // From this block to the end of the data blocks (the last
            // block's end is known: the index is in memory), at most a chunk.
            let blocks_end = self.index[self.index.len() - 1]
                .handle
                .end_with_trailer()
                .unwrap_or(end)
                .clamp(end, data_end);
            let len = (blocks_end - h.offset)
                .min(READAHEAD_BYTES as u64)
                .max(need as u64) as usize;
            // The previous chunk's memory, if no block or value still uses it.
            let mut buf = std::mem::take(&mut ra.buf)
                .try_into_mut()
                .unwrap_or_else(|_| BytesMut::new());
            buf.clear();
            buf.resize(len, 0);
            read_at(self.file.as_ref(), &self.path, &mut buf, h.offset)?;
            *ra = Readahead {
                offset: h.offset,
                buf: buf.freeze(),
            };
        }
        io.blocks_read += 1;
        io.bytes_read += need as u64;
        let at = (h.offset - ra.offset) as usize;
        let raw = ra.buf.slice(at..at + need);
        let (n, block_type) = self.check_block(h, DATA, &raw)?;
        let data = if block_type == BLOCK_TYPE_NONE {
            raw.slice(..n)
        } else {
            self.decompress_block(h, DATA, block_type, &raw[..n])?
        };
        Block::new(data).map_err(|e| self.block_error(h, DATA, e))
    }

    /// Opens the filter block at `h` (a whole filter or one partition),
    /// checking it is of the metaindex's family.
    fn open_filter_block(&self, h: BlockHandle, what: &str, bytes: &[u8]) -> Result<Filter> {
        let name = self.filter_name.as_deref().unwrap_or_default();
        let f =
            Filter::open(bytes).map_err(|e| self.corruption(h.offset, format!("{what}: {e}")))?;
        match (FilterKind::from_name(name), f.kind()) {
            (Some(want), Some(got)) if want != got => Err(self.corruption(
                h.offset,
                format!("{what} is {got:?}, metaindex says {name}"),
            )),
            _ => Ok(f),
        }
    }

    /// Reads the whole filter from the file (every partition of a
    /// partitioned one), bypassing the block cache: what the store pins
    /// when a table opened with [`TableOpenOptions::filter_on_demand`] gets
    /// a place in its filter memory budget. `None` if the table has no
    /// filter; [`Filter::Unusable`] for a family this build does not know.
    pub fn load_filter(&self) -> Result<Option<Filter>> {
        let (Some(name), Some(h)) = (&self.filter_name, self.filter_handle) else {
            return Ok(None);
        };
        if FilterKind::from_name(name).is_none() {
            return Ok(Some(Filter::Unusable {
                reason: format!("unknown filter policy {name:?}"),
            }));
        }
        if self.filter_partitions.is_empty() {
            let bytes = self.read_raw(h, "filter")?;
            return self.open_filter_block(h, "filter block", &bytes).map(Some);
        }
        let mut parts = Vec::with_capacity(self.filter_partitions.len());
        for (i, &ph) in self.filter_partitions.iter().enumerate() {
            let what = format!("filter partition {i}");
            let bytes = self.read_raw(ph, &what)?;
            parts.push(self.open_filter_block(ph, &what, &bytes)?);
        }
        PartitionedFilter::new(parts)
            .map(|p| Some(Filter::Partitioned(p)))
            .map_err(|e| self.corruption(h.offset, format!("partitioned filter: {e}")))
    }

    /// Probes the filter from the file for a table whose filter is not held
    /// in memory: reads the block `hash` needs (its partition, or the whole
    /// filter) through the block cache, counting the read in `r`.
    fn probe_on_demand(&self, hash: u64, r: &mut TableGet) -> Result<bool> {
        let Some(whole) = self.filter_handle else {
            return Ok(true);
        };
        let (h, what) = if self.filter_partitions.is_empty() {
            (whole, "filter block".to_string())
        } else {
            let i = partitioned::partition_of(hash, self.filter_partitions.len());
            (self.filter_partitions[i], format!("filter partition {i}"))
        };
        let cache = self.cache.as_deref().filter(|c| c.is_enabled());
        let bytes = match cache.and_then(|c| c.get(self.file_id, h.offset)) {
            Some(b) => {
                r.filter_cache_hits += 1;
                b
            }
            None => {
                r.filter_blocks_read += 1;
                r.filter_bytes_read += self
                    .file
                    .transfer_len(h.offset, h.size as usize + BLOCK_TRAILER_LEN);
                let b = self.read_raw(h, &what)?;
                if let Some(c) = cache {
                    c.insert(self.file_id, h.offset, b.clone());
                }
                b
            }
        };
        let f = self.open_filter_block(h, &what, &bytes)?;
        Ok(f.may_contain(hash))
    }

    fn index_key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.index[i - 1].key_end };
        &self.index_keys[start..self.index[i].key_end]
    }

    /// Index of the first data block whose last key is `>= key`.
    fn find_block(&self, key: &[u8]) -> usize {
        let fmt = self.props.key_format;
        // Blocks whose last key's prefix is below the key's end before the
        // key; above it, after: compare whole keys only within the tie.
        let kp = key::prefix(fmt.user_key(key));
        let p = &self.index_prefix;
        let mut lo = p.partition_point(|&x| x < kp);
        let mut hi = lo + p[lo..].partition_point(|&x| x == kp);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if fmt.compare(self.index_key(mid), key) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    // ------------------------------------------------------------ reads

    /// Point lookup: the first entry whose key is `>= key` in the table's
    /// order, returned only if its user key equals `key`'s user key. `hash`
    /// must be [`key_hash`] of that user key (the engine hashes once per
    /// lookup). Reads at most one data block; none if the key is outside the
    /// table's range or the filter rules it out.
    pub fn get(&self, key: &[u8], hash: u64) -> Result<TableGet> {
        self.get_filtered(key, hash, None)
    }

    /// [`get`](Self::get) with the filter's answer for `hash` already known
    /// (`filter_says`, from a batch probe of a usable filter); `None` probes
    /// the filter here.
    pub(crate) fn get_filtered(
        &self,
        key: &[u8],
        hash: u64,
        filter_says: Option<bool>,
    ) -> Result<TableGet> {
        let uk = self.props.key_format.user_key(key);
        if self.index.is_empty()
            || uk < &self.props.smallest_user_key[..]
            || uk > &self.props.largest_user_key[..]
        {
            return Ok(TableGet {
                key_range_skipped: true,
                ..TableGet::default()
            });
        }
        self.get_in_range(key, hash, filter_says)
    }

    /// [`get_filtered`](Self::get_filtered) for a key the caller has found
    /// inside the table's key range (the engine's level index holds every
    /// file's range, so it checks without touching the table).
    pub(crate) fn get_in_range(
        &self,
        key: &[u8],
        hash: u64,
        filter_says: Option<bool>,
    ) -> Result<TableGet> {
        let fmt = self.props.key_format;
        let mut r = TableGet::default();
        let uk = fmt.user_key(key);
        if self.index.is_empty() {
            r.key_range_skipped = true;
            return Ok(r);
        }
        let says = match (&self.filter, &self.filter_info) {
            (_, None) => None,
            (_, Some(info)) if !info.is_usable() => {
                r.filter_unusable = true;
                None
            }
            (Some(f), _) => Some(filter_says.unwrap_or_else(|| f.may_contain(hash))),
            (None, _) => match filter_says {
                Some(s) => Some(s),
                None => Some(self.probe_on_demand(hash, &mut r)?),
            },
        };
        if let Some(says) = says {
            r.filter_checked = true;
            if !says {
                r.filter_negative = true;
                return Ok(r);
            }
        }
        let i = self.find_block(key);
        if i == self.index.len() {
            // Past the largest key, e.g. an older sequence of the last user key.
            r.user_key_found = fmt.user_key(self.index_key(i - 1)) == uk;
            return Ok(r);
        }
        let mut io = ReadStats::default();
        let block = self.data_block(i, &mut io);
        r.add_io(&io);
        let block = block?;
        let h = self.index[i].handle;
        let mut it = block.iter(fmt);
        let found = it.seek(key).map_err(|e| self.block_error(h, DATA, e))?;
        if !found {
            return Err(
                self.corruption(h.offset, "data block has no key at or after its index key")
            );
        }
        let prev_match = match it.prev_user_key_match() {
            Some(m) => m,
            None => i > 0 && fmt.user_key(self.index_key(i - 1)) == uk,
        };
        if fmt.user_key(it.key()) == uk {
            r.user_key_found = true;
            r.entry = Some((Bytes::copy_from_slice(it.key()), it.value()));
        } else {
            r.user_key_found = prev_match;
        }
        Ok(r)
    }

    /// Convenience for tests and tools: [`get`](Self::get) with the hash
    /// computed here.
    pub fn get_unhashed(&self, key: &[u8]) -> Result<TableGet> {
        self.get(key, key_hash(self.props.key_format.user_key(key)))
    }

    /// All entries in table order.
    pub fn iter(&self) -> TableIter<&Table> {
        TableIter::new(self, None)
    }

    /// Entries from the first key `>= key`, in table order.
    pub fn iter_from(&self, key: &[u8]) -> TableIter<&Table> {
        TableIter::new(self, Some(key))
    }

    /// Reads every block from disk (bypassing the cache) and checks checksums,
    /// structure, key order, index/data agreement, entry count and that the
    /// filter as stored (every partition of a partitioned one; whether or
    /// not the table holds it in memory) answers "maybe" for every user key.
    /// Reports the first bad block.
    pub fn verify_all(&self) -> Result<()> {
        let f = &self.footer;
        for (h, what) in [
            (f.metaindex, "metaindex"),
            (self.properties_handle, "properties"),
            (f.index, "index"),
        ] {
            self.read_block(h, what)?
                .check_restarts()
                .map_err(|e| self.block_error(h, what, e))?;
        }
        // The filter as stored, read back from disk (every partition, and a
        // partitioned filter's index) whether or not it is held in memory:
        // a table that reads its filter on demand is checked the same way.
        if let Some(h) = self.filter_handle
            && !self.filter_partitions.is_empty()
        {
            self.read_raw(h, "filter partition index")?;
        }
        let filter = self.load_filter()?;
        let fmt = self.props.key_format;
        let mut entries = 0u64;
        let mut prev_key: Option<Vec<u8>> = None;
        let mut expect_offset = 0u64;
        for i in 0..self.index.len() {
            let h = self.index[i].handle;
            if h.offset != expect_offset {
                return Err(self.corruption(
                    h.offset,
                    format!(
                        "data block {i} starts at {}, expected {expect_offset}",
                        h.offset
                    ),
                ));
            }
            expect_offset = h.end_with_trailer().unwrap_or(u64::MAX);
            let block = self.read_block(h, DATA)?;
            block
                .check_restarts()
                .map_err(|e| self.block_error(h, DATA, e))?;
            let mut it = block.iter(fmt);
            let mut n = 0;
            loop {
                let at = h.offset + it.next_offset() as u64;
                if !self.block_step(&mut it, h, DATA)? {
                    break;
                }
                let key = it.key();
                match &prev_key {
                    None if key != &self.props.smallest_key[..] => {
                        return Err(self.corruption(at, "first key differs from properties"));
                    }
                    Some(p) if fmt.compare(p, key) != Ordering::Less => {
                        return Err(self.corruption(at, "keys out of order"));
                    }
                    _ => {}
                }
                if let Some(filter) = &filter {
                    let fresh = prev_key
                        .as_ref()
                        .is_none_or(|p| fmt.user_key(p) != fmt.user_key(key));
                    let hash = key_hash(fmt.user_key(key));
                    if fresh && !filter.may_contain(hash) {
                        // The block at fault: the key's partition, or the
                        // whole filter.
                        let off = match self.filter_partitions.len() {
                            0 => self.filter_handle.map_or(0, |h| h.offset),
                            n => self.filter_partitions[partitioned::partition_of(hash, n)].offset,
                        };
                        return Err(self.corruption(
                            off,
                            format!("filter rejects stored key {}", show_key(key)),
                        ));
                    }
                }
                prev_key = Some(key.to_vec());
                n += 1;
            }
            if n == 0 || prev_key.as_deref() != Some(self.index_key(i)) {
                return Err(
                    self.corruption(h.offset, "data block's last key differs from its index key")
                );
            }
            entries += n;
        }
        if prev_key.as_deref().unwrap_or_default() != &self.props.largest_key[..] {
            return Err(self.corruption(
                self.properties_handle.offset,
                "last key differs from properties",
            ));
        }
        if entries != self.props.entries {
            return Err(self.corruption(
                self.properties_handle.offset,
                format!(
                    "{entries} entries found, properties say {}",
                    self.props.entries
                ),
            ));
        }
        Ok(())
    }

    // ------------------------------------------------------------ accessors

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

    /// Number of data blocks.
    pub fn data_blocks(&self) -> usize {
        self.index.len()
    }

    /// The last key and handle of each data block, in order (for `sst dump`).
    pub fn index_entries(&self) -> impl Iterator<Item = (&[u8], BlockHandle)> + '_ {
        (0..self.index.len()).map(|i| (self.index_key(i), self.index[i].handle))
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

    /// How data block `i` is stored: its type byte (0 = raw, 1 = LZ4,
    /// 2 = zstd) and its size before compression (trailer excluded), read
    /// from its trailer and its length prefix without checking the block
    /// (for `sst dump`; [`verify_all`](Self::verify_all) checks). A prefix
    /// that is not a varint32 is corruption.
    pub fn data_block_codec(&self, i: usize) -> Result<(u8, u64)> {
        let h = self
            .index
            .get(i)
            .ok_or_else(|| Error::invalid(format!("no data block {i}")))?
            .handle;
        let mut t = [0u8; 1];
        read_at(
            self.file.as_ref(),
            &self.path,
            &mut t,
            h.offset.saturating_add(h.size),
        )?;
        if t[0] == BLOCK_TYPE_NONE {
            return Ok((t[0], h.size));
        }
        let mut prefix = [0u8; 5];
        let n = (h.size as usize).min(prefix.len());
        read_at(self.file.as_ref(), &self.path, &mut prefix[..n], h.offset)?;
        let (raw, _) = super::format::get_varint32(&prefix[..n]).ok_or_else(|| {
            self.corruption(h.offset, "data block: bad uncompressed-length varint")
        })?;
        Ok((t[0], u64::from(raw)))
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

    /// Bytes of memory held by the in-memory index.
    pub fn index_memory_bytes(&self) -> usize {
        self.index_keys.capacity()
            + self.index.capacity() * std::mem::size_of::<IndexEntry>()
            + self.index_prefix.capacity() * std::mem::size_of::<u64>()
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
}

fn read_at(file: &dyn ReadableFile, path: &Path, buf: &mut [u8], offset: u64) -> Result<()> {
    file.read_exact_at(buf, offset).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            // The file is shorter than its own structure says: truncated
            // (or shrunk after open).
            Error::corruption(
                path,
                offset,
                format!("truncated: cannot read {} bytes", buf.len()),
            )
        } else {
            Error::io(format!("read {} at {offset}", path.display()), e)
        }
    })
}

fn placeholder_properties() -> TableProperties {
    TableProperties {
        entries: 0,
        data_blocks: 0,
        smallest_key: Vec::new(),
        largest_key: Vec::new(),
        smallest_user_key: Vec::new(),
        largest_user_key: Vec::new(),
        raw_key_bytes: 0,
        raw_value_bytes: 0,
        data_size: 0,
        data_raw_size: 0,
        data_raw_max: 0,
        compression: Compression::None,
        index_size: 0,
        filter_size: 0,
        filter_partitions: 0,
        filter_policy: None,
        filter_bits_per_key: 0.0,
        filter_probes: 0,
        filter_keys: 0,
        key_format: KeyFormat::Plain,
        format_version: 0,
        creation_time: 0,
        deletions: None,
        max_sequence: None,
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
}

/// Bytes a sequential pass reads at once (RocksDB's compactions read ahead
/// 2 MiB; a merge of 20 L0 files on two shards holds 40 chunks).
pub const READAHEAD_BYTES: usize = 256 << 10;

/// A chunk of a table's data blocks read at once, from file offset `offset`.
#[derive(Default)]
struct Readahead {
    offset: u64,
    buf: Bytes,
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
        }
    }

    /// [`TableIter::new`] for one pass over much of the table (a
    /// compaction's input): data blocks are read [`READAHEAD_BYTES`] at a
    /// time, past the block cache, which they neither use nor fill.
    pub fn sequential(table: T, start: Option<&[u8]>) -> Self {
        TableIter {
            readahead: Some(Readahead::default()),
            ..TableIter::new(table, start)
        }
    }

    /// Data-block I/O so far.
    pub fn read_stats(&self) -> ReadStats {
        self.io
    }

    fn load(&mut self, i: usize) -> Result<()> {
        let t = &*self.table;
        // Dropped first: its chunk may then be reused for the next one.
        self.block = None;
        let block = match &mut self.readahead {
            Some(ra) => t.data_block_ahead(i, ra, &mut self.io)?,
            None => t.data_block(i, &mut self.io)?,
        };
        self.block = Some((block.iter(t.props.key_format), t.index[i].handle));
        self.next_block = i + 1;
        Ok(())
    }

    fn step(&mut self) -> Result<Option<(Bytes, Bytes)>> {
        if !self.started {
            self.started = true;
            if let Some(target) = self.start.take() {
                let i = self.table.find_block(&target);
                if i == self.table.index.len() {
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
            if self.next_block >= self.table.index.len() {
                return Ok(None);
            }
            self.load(self.next_block)?;
        }
    }
}

/// An iterator's next item from its `step`: the end and an error both end it.
fn fuse(step: Result<Option<(Bytes, Bytes)>>, done: &mut bool) -> Option<Result<(Bytes, Bytes)>> {
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

/// A table's entries in *descending* table order, from the last key `<= upper`
/// (or the table's last key). Restart points let a block be read forward only,
/// so each data block is decoded forward once into a buffer and yielded from
/// its end: the same block reads as a forward scan, plus one block's entries
/// held in memory. After an error it yields that error once, then ends.
pub(crate) struct TableRevIter<T: Deref<Target = Table>> {
    table: T,
    /// Upper bound not yet applied (positioning is lazy, as in [`TableIter`]).
    upper: Option<Vec<u8>>,
    started: bool,
    /// Blocks `0..remaining` are still to be read, last first.
    remaining: usize,
    /// The current block's entries not yet yielded, in table order.
    buf: Vec<(Bytes, Bytes)>,
    done: bool,
    io: ReadStats,
}

impl<T: Deref<Target = Table>> TableRevIter<T> {
    /// An iterator over `table` backward from the last key `<= upper` (or the
    /// last key).
    pub(crate) fn new(table: T, upper: Option<&[u8]>) -> Self {
        TableRevIter {
            table,
            upper: upper.map(<[u8]>::to_vec),
            started: false,
            remaining: 0,
            buf: Vec::new(),
            done: false,
            io: ReadStats::default(),
        }
    }

    /// Decodes data block `i` into `buf`, keeping the keys `<= upper`.
    fn load(&mut self, i: usize, upper: Option<&[u8]>) -> Result<()> {
        let t = &*self.table;
        let fmt = t.props.key_format;
        let block = t.data_block(i, &mut self.io)?;
        let h = t.index[i].handle;
        let mut it = block.iter(fmt);
        self.buf.clear();
        while t.block_step(&mut it, h, "data")? {
            if upper.is_some_and(|u| fmt.compare(it.key(), u) == Ordering::Greater) {
                break;
            }
            self.buf
                .push((Bytes::copy_from_slice(it.key()), it.value()));
        }
        self.remaining = i;
        Ok(())
    }

    fn step(&mut self) -> Result<Option<(Bytes, Bytes)>> {
        if !self.started {
            self.started = true;
            let n = self.table.index.len();
            if n == 0 {
                return Ok(None);
            }
            let upper = self.upper.take();
            // The first block whose last key is >= upper holds the last key
            // <= upper, or the block before it does; past every block: the last.
            let i = upper
                .as_deref()
                .map_or(n - 1, |u| self.table.find_block(u).min(n - 1));
            self.load(i, upper.as_deref())?;
        }
        loop {
            if let Some(e) = self.buf.pop() {
                return Ok(Some(e));
            }
            if self.remaining == 0 {
                return Ok(None);
            }
            self.load(self.remaining - 1, None)?;
        }
    }
}

impl<T: Deref<Target = Table>> Iterator for TableRevIter<T> {
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

/// What is wrong, if a table's sizes and entry count break bounds every real
/// table keeps: stored data within the file, raw data at most 32,768 times
/// the stored (no codec expands a block more, `compression`), and at most
/// one entry per raw byte (an entry takes at least its three length
/// varints). Statistics sum these over every table of a store; inside the
/// bounds the sums stay far from u64's end.
fn size_bounds_broken(p: &TableProperties, file_size: u64) -> Option<String> {
    let broken = p.data_size > file_size
        || p.data_raw_size > p.data_size.saturating_mul(32 << 10)
        || p.entries > p.data_raw_size;
    broken.then(|| {
        format!(
            "{} entries in {} raw data bytes, {} stored, in a file of {file_size}",
            p.entries, p.data_raw_size, p.data_size
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::{TableBuilder, TableBuilderOptions};
    use std::fs::File;

    fn _assert_send_sync() {
        fn is<T: Send + Sync>() {}
        is::<Table>();
        is::<TableIter<Arc<Table>>>();
        is::<TableIter<&Table>>();
    }

    fn build(dir: &Path, n: usize, opts: TableBuilderOptions) -> PathBuf {
        let path = dir.join("t.sst");
        let file = File::create(&path).unwrap();
        let mut b = TableBuilder::new(file, &path, opts);
        for i in 0..n {
            b.add(format!("k{i:06}").as_bytes(), format!("v{i}").as_bytes())
                .unwrap();
        }
        b.finish().unwrap();
        path
    }

    /// The table at `path`, reading through `cache`.
    fn open_cached(path: &Path, cache: &Arc<BlockCache>) -> Table {
        Table::open(
            path,
            TableOpenOptions {
                file_id: 7,
                cache: Some(cache.clone()),
                ..TableOpenOptions::default()
            },
        )
        .unwrap()
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
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sst");
        let opts = TableBuilderOptions {
            block_size: 64,
            ..Default::default()
        };
        let mut b = TableBuilder::new(File::create(&path).unwrap(), &path, opts);
        for k in &keys {
            b.add(k, b"v").unwrap();
        }
        b.finish().unwrap();
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        assert!(t.data_blocks() > 100);
        let scan = |k: &[u8]| (0..t.index.len()).find(|&i| t.index_key(i) >= k);
        for k in keys.iter().cloned().chain((0..3000).map(|_| random_key())) {
            assert_eq!(
                Some(t.find_block(&k)).filter(|&i| i < t.index.len()),
                scan(&k)
            );
        }
        for k in &keys {
            assert_eq!(t.get_unhashed(k).unwrap().entry.unwrap().0, &k[..]);
        }
    }

    #[test]
    fn get_reads_one_block_and_uses_cache() {
        let dir = tempfile::tempdir().unwrap();
        let opts = TableBuilderOptions {
            block_size: 256,
            ..Default::default()
        };
        let path = build(dir.path(), 500, opts);
        let cache = Arc::new(BlockCache::new(1 << 20));
        let t = open_cached(&path, &cache);
        assert!(t.data_blocks() > 10);
        let r = t.get_unhashed(b"k000123").unwrap();
        assert_eq!(r.entry.as_ref().unwrap().1, &b"v123"[..]);
        assert_eq!((r.blocks_read, r.cache_hits), (1, 0));
        assert!(r.true_positive() && !r.false_positive());
        let r = t.get_unhashed(b"k000123").unwrap();
        assert_eq!((r.blocks_read, r.cache_hits, r.bytes_read), (0, 1, 0));
        let r = t.get_unhashed(b"zzz").unwrap();
        assert!(r.key_range_skipped && r.entry.is_none() && r.blocks_read == 0);
        // Absent keys inside the range: filter negative or a false positive.
        let mut negatives = 0;
        for i in 0..499 {
            let r = t.get_unhashed(format!("k{i:06}x").as_bytes()).unwrap();
            assert!(r.entry.is_none() && r.filter_checked);
            if r.filter_negative {
                negatives += 1;
                assert_eq!(r.blocks_read + r.cache_hits, 0);
            } else {
                assert!(r.false_positive());
            }
        }
        assert!(negatives > 450, "{negatives}");
        assert!(cache.stats().hits >= 1);
        assert!(t.filter_memory_bytes() > 0 && t.index_memory_bytes() > 0);
        t.verify_all().unwrap();
    }

    #[test]
    fn internal_keys_and_versions() {
        use crate::key::{ValueKind, make_internal_key};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.sst");
        let mut b = TableBuilder::new(
            File::create(&path).unwrap(),
            &path,
            TableBuilderOptions {
                key_format: KeyFormat::Internal,
                block_size: 64,
                ..Default::default()
            },
        );
        // user key "a": seqs 9 (value), 5 (deletion), 2 (value); "b": 7.
        let entries = [
            (make_internal_key(b"a", 9, ValueKind::Value), b"a9".to_vec()),
            (make_internal_key(b"a", 5, ValueKind::Deletion), vec![]),
            (make_internal_key(b"a", 2, ValueKind::Value), b"a2".to_vec()),
            (make_internal_key(b"b", 7, ValueKind::Value), b"b7".to_vec()),
        ];
        for (k, v) in &entries {
            b.add(k, v).unwrap();
        }
        // Same full key again, and an older "b" after... "a" version out of order.
        assert!(matches!(
            b.add(&entries[3].0, b"x"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            b.add(&make_internal_key(b"b", 8, ValueKind::Value), b"x"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            b.add(b"short", b""),
            Err(Error::InvalidArgument(_))
        ));
        let s = b.finish().unwrap();
        assert_eq!(s.properties.filter_keys, 2, "one hash per user key");
        assert_eq!(s.properties.deletions, Some(1));
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        let get = |seq| {
            t.get_unhashed(&make_internal_key(b"a", seq, ValueKind::Value))
                .unwrap()
        };
        assert_eq!(get(100).entry.unwrap().1, &b"a9"[..]);
        assert_eq!(get(6).entry.unwrap().0, &entries[1].0[..]);
        assert_eq!(get(2).entry.unwrap().1, &b"a2"[..]);
        let r = get(1);
        assert!(r.entry.is_none() && r.user_key_found && !r.false_positive());
        let r = t
            .get_unhashed(&make_internal_key(b"b", 3, ValueKind::Value))
            .unwrap();
        assert!(r.entry.is_none() && r.user_key_found);
        t.verify_all().unwrap();
        let all: Vec<_> = t.iter().map(|r| r.unwrap()).collect();
        assert_eq!(all.len(), 4);
    }

    #[test]
    fn reverse_iteration_matches_forward_at_every_bound() {
        let dir = tempfile::tempdir().unwrap();
        let opts = TableBuilderOptions {
            block_size: 128,
            ..Default::default()
        };
        let path = build(dir.path(), 300, opts);
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        assert!(t.data_blocks() > 10);
        let forward: Vec<_> = t.iter().map(|r| r.unwrap()).collect();
        let all: Vec<_> = TableRevIter::new(&t, None).map(|r| r.unwrap()).collect();
        assert_eq!(all, forward.iter().rev().cloned().collect::<Vec<_>>());
        // Bounds on keys, between keys, before the first and after the last.
        let mut bounds: Vec<Vec<u8>> = vec![b"a".to_vec(), b"zzz".to_vec()];
        for i in 0..300 {
            bounds.push(format!("k{i:06}").into_bytes());
            bounds.push(format!("k{i:06}x").into_bytes());
        }
        for b in &bounds {
            let want: Vec<_> = forward
                .iter()
                .filter(|(k, _)| k.as_ref() <= b.as_slice())
                .rev()
                .cloned()
                .collect();
            let got: Vec<_> = TableRevIter::new(&t, Some(b)).map(|r| r.unwrap()).collect();
            assert_eq!(got, want, "bound {}", String::from_utf8_lossy(b));
        }
        let dir2 = tempfile::tempdir().unwrap();
        let empty = build(dir2.path(), 0, TableBuilderOptions::default());
        let e = Table::open(&empty, TableOpenOptions::default()).unwrap();
        assert_eq!(TableRevIter::new(&e, None).count(), 0);
    }

    #[test]
    fn compressed_tables_read_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let mut codecs = vec![Compression::None, Compression::Lz4];
        if cfg!(feature = "zstd") {
            codecs.push(Compression::Zstd(3));
        }
        for c in codecs {
            let opts = TableBuilderOptions {
                block_size: 512,
                compression: c,
                ..Default::default()
            };
            let path = build(dir.path(), 2000, opts);
            let cache = Arc::new(BlockCache::new(1 << 20));
            let t = Table::open(
                &path,
                TableOpenOptions {
                    cache: Some(cache.clone()),
                    ..TableOpenOptions::default()
                },
            )
            .unwrap();
            let p = t.properties();
            assert_eq!(t.compression(), c);
            assert_eq!(p.format_version, if c == Compression::None { 1 } else { 2 });
            let want_type = c.block_type();
            assert_eq!(t.data_block_codec(0).unwrap().0, want_type, "{c}");
            if c == Compression::None {
                assert_eq!(p.data_raw_size, p.data_size);
            } else {
                assert!(p.data_raw_size > p.data_size * 3 / 2, "{c}: {p:?}");
                assert!(p.data_raw_max >= 512 && p.data_raw_max < 1024, "{p:?}");
            }
            for i in (0..2000).step_by(7) {
                let r = t.get_unhashed(format!("k{i:06}").as_bytes()).unwrap();
                assert_eq!(r.entry.unwrap().1, format!("v{i}").as_bytes());
                // The I/O counted is the stored block, not its decoded size.
                assert!(r.bytes_read == 0 || r.bytes_read < 1024 + 5);
            }
            // Cached blocks are decoded ones: hits read the same.
            let r = t.get_unhashed(b"k000007").unwrap();
            assert_eq!((r.cache_hits, r.entry.unwrap().1), (1, Bytes::from("v7")));
            assert_eq!(t.iter().count(), 2000);
            assert_eq!(t.iter_from(b"k001500").count(), 500);
            t.verify_all().unwrap();
            assert_eq!(size_bounds_broken(p, t.file_size()), None, "{c}");
        }
    }

    #[test]
    fn sizes_and_counts_past_their_bounds_are_refused() {
        let good = TableProperties {
            entries: 100,
            data_size: 1000,
            data_raw_size: 4000,
            ..placeholder_properties()
        };
        assert_eq!(size_bounds_broken(&good, 1000), None);
        let at_limits = TableProperties {
            entries: 1000 << 15,
            data_raw_size: 1000 << 15,
            ..good.clone()
        };
        assert_eq!(size_bounds_broken(&at_limits, 1000), None);
        for (what, p, file) in [
            ("stored data past the file", good.clone(), 999),
            (
                "raw data past any codec's expansion",
                TableProperties {
                    data_raw_size: (1000 << 15) + 1,
                    ..good.clone()
                },
                1000,
            ),
            (
                "more entries than raw bytes",
                TableProperties {
                    entries: 4001,
                    ..good.clone()
                },
                1000,
            ),
            (
                "an entry count near u64's end",
                TableProperties {
                    entries: u64::MAX,
                    ..good.clone()
                },
                1000,
            ),
        ] {
            assert!(size_bounds_broken(&p, file).is_some(), "{what}");
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

    #[test]
    fn unknown_filter_policy_reads_without_filter() {
        let dir = tempfile::tempdir().unwrap();
        let path = build(dir.path(), 50, TableBuilderOptions::default());
        // Rename "filter.blocked512" to "filter.blocked51X" in the metaindex and
        // properties, re-checksumming both blocks, as a future writer would.
        let mut bytes = std::fs::read(&path).unwrap();
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        let footer = *t.footer();
        let ph = t.properties_handle;
        drop(t);
        for h in [footer.metaindex, ph] {
            let start = h.offset as usize;
            let end = start + h.size as usize;
            let payload = &mut bytes[start..end];
            let pos = payload
                .windows(10)
                .position(|w| w == b"blocked512")
                .unwrap();
            payload[pos + 9] = b'X';
            let tr =
                crate::sst::format::block_trailer(footer.checksum, &bytes[start..end], 0, h.offset);
            bytes[end..end + 5].copy_from_slice(&tr);
        }
        std::fs::write(&path, &bytes).unwrap();
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        assert!(!t.filter().unwrap().is_usable());
        assert_eq!(t.filter_policy_name(), Some("blocked51X"));
        let r = t.get_unhashed(b"k000010").unwrap();
        assert!(r.filter_unusable && !r.filter_checked && r.found());
        let r = t.get_unhashed(b"k000010x").unwrap();
        assert!(r.filter_unusable && !r.found() && r.blocks_read == 1);
        t.verify_all().unwrap();
    }
}
