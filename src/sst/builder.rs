//! TableBuilder: writes one immutable SSTable from keys added in order.
//!
//! About 19% of this file is its unit tests (the `tests` module at the end);
//! the rest is `TableBuilder`, which writes every part of the layout below.
//!
//! File layout (see `docs/format.md`):
//!
//! ```text
//! data block 0 | ... | data block n-1 | filter | [prefix filter] | [range filter]
//!     | [range tombstones] | index | properties | metaindex | footer
//! ```
//!
//! The index is one block, or with `index_partition_bytes` index
//! partitions followed by a top-level index over them (format version 4).
//!
//! Each block is followed by its 5-byte trailer. The filter is built at
//! [`finish`](TableBuilder::finish) from the collected user-key hashes, so
//! the builder holds 8 bytes per distinct user key in memory (and, for a
//! range filter, 8 more per distinct key point).
//!
//! Data blocks come from entries ([`add`](TableBuilder::add)) or, for a
//! table rewritten with other filters, from another table's blocks as
//! stored ([`add_stored_block`](TableBuilder::add_stored_block)): copied
//! byte for byte, their keys decoded only for the filters and properties,
//! and accepted only when they are the blocks `add` would have written from
//! the same entries. The index, filters, properties, metaindex and footer
//! are written by the same code either way.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::filter::prefix::PrefixCollector;
use crate::filter::{FilterPolicy, PrefixExtractor, RangeFilter, key_hash, key_point, partitioned};
use crate::fs::{WritableFile, WriteAdapter};
use crate::key;

use super::block::BlockBuilder;
use super::compression::{Compression, Compressor};
use super::format::{
    BLOCK_TRAILER_LEN, BLOCK_TYPE_UNCOMPRESSED, BlockHandle, ChecksumType, FORMAT_VERSION,
    FORMAT_VERSION_COMPRESSED, FORMAT_VERSION_PARTITIONED_FILTER, FORMAT_VERSION_UNCOMPRESSED,
    Footer, KeyFormat, META_FILTER_PARTITIONS_PREFIX, META_FILTER_PREFIX, META_PREFIX_FILTER,
    META_PROPERTIES, META_RANGE_FILTER, META_RANGE_TOMBSTONES, RANGE_FILTER_SEED, block_trailer,
    show_key,
};
use super::properties::TableProperties;
use super::table::StoredBlock;

/// How a table is built.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TableBuilderOptions {
    /// Target size of a data block's contents before its trailer (default 4096).
    /// A block is cut as soon as it reaches this size, so blocks are slightly larger.
    pub block_size: usize,
    /// Keys between restart points in data blocks (default 16).
    pub restart_interval: usize,
    /// The file's checksum algorithm (default CRC32).
    pub checksum: ChecksumType,
    /// The filter policy; `None` writes no filter block.
    pub filter: Option<FilterPolicy>,
    /// The order keys are added in.
    pub key_format: KeyFormat,
    /// The `creation.time` property; `None` = now. Set it for reproducible files.
    pub creation_time: Option<u64>,
    /// How data blocks are compressed (default none). Anything but
    /// [`Compression::None`] writes a format version 2 table; the index,
    /// filter, properties and metaindex blocks are never compressed.
    pub compression: Compression,
    /// Target bytes of one filter partition; 0 (the default) writes the
    /// filter as one block. A filter larger than this is written as about
    /// `filter bytes / filter_partition_bytes` partitions picked by key hash
    /// (a format version 3 table), so that a reader that does not keep the
    /// filter in memory reads one small partition per probe.
    pub filter_partition_bytes: usize,
    /// Target bytes of one index partition; 0 (the default) writes the
    /// index as one block. An index larger than this is written as
    /// partitions of about this size plus a top-level index over them (a
    /// format version 4 table), so that a reader that does not keep the
    /// index in memory reads one small partition per lookup (RocksDB's
    /// two-level index, `kTwoLevelIndexSearch`).
    pub index_partition_bytes: usize,
    /// The prefix extractor; `Some` writes a prefix filter block over the
    /// distinct prefixes of the user keys (default `None`).
    pub prefix_extractor: Option<PrefixExtractor>,
    /// Bits per key of a range filter; `Some` writes a range filter block
    /// over the distinct [`key_point`]s of the user keys (default `None`).
    pub range_filter_bits_per_key: Option<f64>,
}

crate::options::setters!(TableBuilderOptions {
    block_size: usize,
    restart_interval: usize,
    checksum: ChecksumType,
    filter: Option<FilterPolicy>,
    key_format: KeyFormat,
    creation_time: Option<u64>,
    compression: Compression,
    filter_partition_bytes: usize,
    index_partition_bytes: usize,
    prefix_extractor: Option<PrefixExtractor>,
    range_filter_bits_per_key: Option<f64>,
});

impl Default for TableBuilderOptions {
    fn default() -> Self {
        TableBuilderOptions {
            block_size: 4096,
            restart_interval: 16,
            checksum: ChecksumType::Crc32,
            filter: Some(FilterPolicy::default()),
            key_format: KeyFormat::Plain,
            creation_time: None,
            compression: Compression::None,
            filter_partition_bytes: 0,
            index_partition_bytes: 0,
            prefix_extractor: None,
            range_filter_bits_per_key: None,
        }
    }
}

/// What [`TableBuilder::finish`] wrote.
#[derive(Clone, Debug)]
pub struct TableSummary {
    /// The file's path.
    pub path: PathBuf,
    /// Total bytes written.
    pub file_size: u64,
    /// Number of entries.
    pub entries: u64,
    /// Smallest key (empty if no entries).
    pub smallest_key: Vec<u8>,
    /// Largest key (empty if no entries).
    pub largest_key: Vec<u8>,
    /// Bytes of the filter block including its trailer (0 without filter).
    pub filter_bytes: u64,
    /// Bytes of the index block including its trailer.
    pub index_bytes: u64,
    /// Everything written to the properties block.
    pub properties: TableProperties,
}

/// Builds one SSTable. Keys must be added in strictly increasing order of the
/// configured [`KeyFormat`].
pub struct TableBuilder {
    out: BufWriter<WriteAdapter>,
    path: PathBuf,
    opts: TableBuilderOptions,
    offset: u64,
    data: BlockBuilder,
    /// The index, or with `index_partition_bytes` its partition being filled.
    index: BlockBuilder,
    /// The index partitions cut so far: each one's payload and last key.
    index_parts: Vec<(Vec<u8>, Vec<u8>)>,
    last_key: Vec<u8>,
    smallest_key: Vec<u8>,
    hashes: Vec<u64>,
    prefixes: Option<PrefixCollector>,
    /// The distinct key points, in order, for a range filter.
    points: Option<Vec<u64>>,
    entries: u64,
    data_blocks: u64,
    raw_key_bytes: u64,
    raw_value_bytes: u64,
    data_size: u64,
    data_raw_size: u64,
    data_raw_max: u64,
    deletions: u64,
    max_sequence: u64,
    /// Range deletions `(start, end, seq)`, written as one meta block.
    range_tombstones: Vec<(Vec<u8>, Vec<u8>, u64)>,
    /// `None` while a block is being written, or if `compression` is unavailable.
    compressor: Option<Compressor>,
    /// Why the builder cannot write (the compression is unavailable).
    unusable: Option<String>,
    /// Set after a write error: the file is unusable.
    failed: bool,
    /// The last data block is a stored block under the block size: `add`
    /// would have ended the table with it, so nothing may follow.
    short_block: bool,
}

impl std::fmt::Debug for TableBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableBuilder")
            .field("path", &self.path)
            .field("entries", &self.entries)
            .field("offset", &self.offset)
            .finish()
    }
}

impl TableBuilder {
    /// A builder writing to `file` (an empty file opened for writing), which
    /// lives at `path` (used in error messages and the summary).
    pub fn new(file: File, path: impl Into<PathBuf>, opts: TableBuilderOptions) -> Self {
        Self::with_file(crate::fs::real_writable(file, 0), path, opts)
    }

    /// A builder writing to `file`, a new file of a [`crate::fs::FileSystem`].
    pub fn with_file(
        file: Box<dyn WritableFile>,
        path: impl Into<PathBuf>,
        opts: TableBuilderOptions,
    ) -> Self {
        let mut opts = opts;
        opts.block_size = opts.block_size.max(1);
        opts.restart_interval = opts.restart_interval.max(1);
        let (compressor, unusable) = match Compressor::new(opts.compression) {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(e)),
        };
        let prefixes = opts.prefix_extractor.map(PrefixCollector::new);
        let points = opts.range_filter_bits_per_key.map(|_| Vec::new());
        TableBuilder {
            out: BufWriter::with_capacity(64 * 1024, WriteAdapter(file)),
            path: path.into(),
            data: BlockBuilder::new(opts.restart_interval),
            // Index keys are binary-searched one by one: no prefix compression.
            index: BlockBuilder::new(1),
            index_parts: Vec::new(),
            opts,
            offset: 0,
            last_key: Vec::new(),
            smallest_key: Vec::new(),
            hashes: Vec::new(),
            prefixes,
            points,
            entries: 0,
            data_blocks: 0,
            raw_key_bytes: 0,
            raw_value_bytes: 0,
            data_size: 0,
            data_raw_size: 0,
            data_raw_max: 0,
            deletions: 0,
            max_sequence: 0,
            range_tombstones: Vec::new(),
            compressor,
            unusable,
            failed: false,
            short_block: false,
        }
    }

    /// The path given at construction.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Replaces the filter policy before [`finish`](Self::finish): the
    /// filter is built from the keys' hashes at the end, so its size can be
    /// chosen once the table's key range and entries are known (the store's
    /// workload-aware allocation does). A builder made without a filter
    /// collected no hashes: giving it one is an [`Error::InvalidArgument`].
    pub fn set_filter_policy(&mut self, policy: Option<FilterPolicy>) -> Result<()> {
        if policy.is_some() && self.opts.filter.is_none() {
            return Err(Error::invalid(
                "a table builder made without a filter cannot be given one",
            ));
        }
        self.opts.filter = policy;
        Ok(())
    }

    /// Bytes written so far plus the pending data block (excluding the filter,
    /// index and metadata still to come).
    pub fn estimated_file_size(&self) -> u64 {
        self.offset + self.data.size_estimate() as u64
    }

    /// Adds an entry. Errors with [`Error::InvalidArgument`] if `key` does not
    /// sort strictly after the previous key, is shorter than an internal-key
    /// trailer under [`KeyFormat::Internal`], or key/value exceed 4 GiB.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_usable()?;
        self.check_not_ended()?;
        self.note_entry(key, value.len())?;
        self.data.add(key, value);
        if self.data.size_estimate() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Appends `block`, a data block of another table as stored, byte for
    /// byte: its entries count in this table's filters and properties as if
    /// each had been [`add`](Self::add)ed, and the index gets its entry as
    /// for any block. Errors with [`Error::InvalidArgument`] if the block
    /// is not the one `add` would write from the same entries (other key
    /// order or compression, restart points or block size; a block under
    /// the block size other than the table's last; added after entries of
    /// a block not yet written), or its keys do not follow the previous
    /// ones; with the source's [`Error::Corruption`] if an entry does not
    /// decode. After an error the builder is unusable.
    pub fn add_stored_block(&mut self, block: &StoredBlock<'_>) -> Result<()> {
        self.add_stored_block_if(block, &mut |_| true).map(|_| ())
    }

    /// [`Self::add_stored_block`], asking `keep` of each entry's key as it
    /// is decoded (one pass over the block, not two): at the first `false`
    /// it stops, returns `false`, and the builder is unusable, as after an
    /// error.
    pub(crate) fn add_stored_block_if(
        &mut self,
        block: &StoredBlock<'_>,
        keep: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<bool> {
        self.check_usable()?;
        self.check_not_ended()?;
        let r = self.copy_block(block, keep);
        if !matches!(r, Ok(true)) {
            self.failed = true;
        }
        r
    }

    fn copy_block(
        &mut self,
        b: &StoredBlock<'_>,
        keep: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<bool> {
        let fmt = self.opts.key_format;
        let source = b.table();
        let not_ours = |why: String| {
            Error::invalid(format!(
                "data block at {} of {}: {why}",
                b.handle().offset,
                source.path().display()
            ))
        };
        if !self.data.is_empty() {
            return Err(not_ours(
                "stored block after entries of a block not yet written".into(),
            ));
        }
        if source.key_format() != fmt {
            return Err(not_ours(format!(
                "keys in {} order",
                source.key_format().name()
            )));
        }
        let codec = self.opts.compression;
        if source.compression() != codec
            || (b.block_type() != BLOCK_TYPE_UNCOMPRESSED && b.block_type() != codec.block_type())
        {
            return Err(not_ours(format!(
                "compressed as {} (block type {}), this table as {codec}",
                source.compression(),
                b.block_type()
            )));
        }
        // `add` ends a block with the first entry that brings its size to
        // the block size: the block without its last entry is below it, and
        // the block is at least that (the table's last may be shorter).
        let raw = b.block();
        let before_last = raw
            .size_before_last(self.opts.restart_interval)
            .map_err(|e| b.corruption(e))?
            .ok_or_else(|| {
                not_ours(format!(
                    "restart points not every {} entries",
                    self.opts.restart_interval
                ))
            })?;
        if before_last >= self.opts.block_size {
            return Err(not_ours(format!(
                "{} bytes before its last entry, more than the block size {}",
                before_last, self.opts.block_size
            )));
        }
        let mut it = raw.iter(fmt);
        while it.advance().map_err(|e| b.corruption(e))? {
            if !keep(it.key()) {
                return Ok(false);
            }
            self.note_entry(it.key(), it.value_slice().len())?;
        }
        self.data_raw_size += (raw.len() + BLOCK_TRAILER_LEN) as u64;
        self.data_raw_max = self.data_raw_max.max(raw.len() as u64);
        // At its old offset, under the same checksum type, the verified
        // trailer is the one this table would compute: it is kept.
        let trailer = (b.handle().offset == self.offset
            && source.checksum_type() == self.opts.checksum)
            .then(|| b.trailer());
        let handle = self.write_block_with(true, b.stored(), b.block_type(), trailer)?;
        self.add_index_entry(handle);
        self.short_block = raw.len() < self.opts.block_size;
        Ok(true)
    }

    /// Errors if a stored block under the block size ended the data.
    fn check_not_ended(&self) -> Result<()> {
        if self.short_block {
            return Err(Error::invalid(format!(
                "entries after a data block under the block size in {}: it must be the last",
                self.path.display()
            )));
        }
        Ok(())
    }

    /// Counts an entry of key `key` and a value of `value_len` bytes in the
    /// filters and properties, after checking the key's order and size.
    fn note_entry(&mut self, key: &[u8], value_len: usize) -> Result<()> {
        let fmt = self.opts.key_format;
        if fmt == KeyFormat::Internal && key.len() < key::TRAILER_LEN {
            return Err(Error::invalid(format!(
                "internal key of {} bytes is shorter than its {}-byte trailer",
                key.len(),
                key::TRAILER_LEN
            )));
        }
        if u32::try_from(key.len()).is_err() || u32::try_from(value_len).is_err() {
            return Err(Error::invalid("key or value of 4 GiB or more"));
        }
        let new_user_key = if self.entries > 0 {
            match fmt.compare(key, &self.last_key) {
                std::cmp::Ordering::Greater => {}
                std::cmp::Ordering::Equal => {
                    return Err(Error::invalid(format!(
                        "duplicate key {:?} added to {}",
                        show_key(key),
                        self.path.display()
                    )));
                }
                std::cmp::Ordering::Less => {
                    return Err(Error::invalid(format!(
                        "key {:?} added after {:?} to {}: keys must be added in order",
                        show_key(key),
                        show_key(&self.last_key),
                        self.path.display()
                    )));
                }
            }
            fmt.user_key(key) != fmt.user_key(&self.last_key)
        } else {
            self.smallest_key = key.to_vec();
            true
        };
        // The filter is over user keys: several versions of one key add one hash.
        if new_user_key && self.opts.filter.is_some() {
            self.hashes.push(key_hash(fmt.user_key(key)));
        }
        if let Some(p) = &mut self.prefixes {
            p.add(fmt.user_key(key));
        }
        // Keys come in order, so their points do: a point equal to the last
        // is a duplicate.
        if let Some(points) = &mut self.points {
            let x = key_point(fmt.user_key(key));
            if points.last() != Some(&x) {
                points.push(x);
            }
        }
        if fmt == KeyFormat::Internal {
            let trailer = key::trailer(key);
            if trailer & 0xff == key::ValueKind::Deletion as u64 {
                self.deletions += 1;
            }
            self.max_sequence = self.max_sequence.max(trailer >> 8);
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.entries += 1;
        self.raw_key_bytes += key.len() as u64;
        self.raw_value_bytes += value_len as u64;
        Ok(())
    }

    /// Adds the range deletion `[start, end)` at sequence `seq` (tables of
    /// [`KeyFormat::Internal`] only; any order, overlaps allowed). The
    /// table's key range in its properties stays that of its entries; a
    /// store widens a file's range in its MANIFEST entry by the tombstones'.
    pub(crate) fn add_range_tombstone(&mut self, start: &[u8], end: &[u8], seq: u64) -> Result<()> {
        self.check_usable()?;
        if self.opts.key_format != KeyFormat::Internal
            || start >= end
            || seq == 0
            || seq > key::MAX_SEQUENCE
        {
            return Err(Error::invalid(format!(
                "range tombstone [{:?}, {:?}) at sequence {seq} does not fit {}",
                show_key(start),
                show_key(end),
                self.path.display()
            )));
        }
        self.max_sequence = self.max_sequence.max(seq);
        self.range_tombstones
            .push((start.to_vec(), end.to_vec(), seq));
        Ok(())
    }

    fn check_usable(&self) -> Result<()> {
        if let Some(why) = &self.unusable {
            return Err(Error::invalid(why.clone()));
        }
        if self.failed {
            return Err(Error::invalid("table builder failed earlier"));
        }
        Ok(())
    }

    /// Writes `payload` (stored bytes of type `block_type`) plus its trailer
    /// at the current offset.
    fn write_block(
        &mut self,
        payload_is_data: bool,
        payload: &[u8],
        block_type: u8,
    ) -> Result<BlockHandle> {
        self.write_block_with(payload_is_data, payload, block_type, None)
    }

    /// [`Self::write_block`] with its trailer given, or computed if `None`.
    fn write_block_with(
        &mut self,
        payload_is_data: bool,
        payload: &[u8],
        block_type: u8,
        trailer: Option<[u8; BLOCK_TRAILER_LEN]>,
    ) -> Result<BlockHandle> {
        let handle = BlockHandle::new(self.offset, payload.len() as u64);
        let trailer = trailer
            .unwrap_or_else(|| block_trailer(self.opts.checksum, payload, block_type, self.offset));
        let r = self
            .out
            .write_all(payload)
            .and_then(|()| self.out.write_all(&trailer));
        if let Err(e) = r {
            self.failed = true;
            return Err(Error::io(format!("write {}", self.path.display()), e));
        }
        let n = (payload.len() + BLOCK_TRAILER_LEN) as u64;
        self.offset += n;
        if payload_is_data {
            self.data_size += n;
        }
        Ok(handle)
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        let mut data = std::mem::replace(&mut self.data, BlockBuilder::new(1));
        let mut cx = self.compressor.take().expect("checked by add");
        let raw = data.finish();
        self.data_raw_size += (raw.len() + BLOCK_TRAILER_LEN) as u64;
        self.data_raw_max = self.data_raw_max.max(raw.len() as u64);
        let (stored, block_type) = cx.compress(raw);
        let r = self.write_block(true, stored, block_type);
        self.compressor = Some(cx);
        data.reset();
        self.data = data;
        let handle = r?;
        self.add_index_entry(handle);
        Ok(())
    }

    /// Indexes the data block just written at `handle`, whose last key is
    /// the last key added.
    fn add_index_entry(&mut self, handle: BlockHandle) {
        // The index key is the block's last key: a lookup for k reads the first
        // block whose last key is >= k, and only that block.
        self.index.add(&self.last_key, &handle.encode());
        self.data_blocks += 1;
        let part = self.opts.index_partition_bytes;
        if part > 0 && self.index.size_estimate() >= part {
            let payload = self.index.finish().to_vec();
            self.index.reset();
            self.index_parts.push((payload, self.last_key.clone()));
        }
    }

    /// Writes the last data block, the filter, index, properties and metaindex
    /// blocks and the footer, then fsyncs the file.
    pub fn finish(self) -> Result<TableSummary> {
        self.finish_unsynced()?.sync()
    }

    /// [`finish`](Self::finish) without the fsync: every byte is written,
    /// none is known durable until [`UnsyncedTable::sync`]. Lets a caller
    /// go on with other work (the next table) while another thread syncs.
    pub fn finish_unsynced(mut self) -> Result<UnsyncedTable> {
        self.check_usable()?;
        self.flush_data_block()?;

        let mut meta: Vec<(String, BlockHandle)> = Vec::new();
        let mut filter_size = 0;
        let mut filter_partitions = 0u64;
        if let Some(policy) = self.opts.filter {
            let n = partitioned::partition_count(
                &policy,
                self.hashes.len(),
                self.opts.filter_partition_bytes,
            );
            if n == 1 {
                let bytes = policy.build(&self.hashes)?;
                let h = self.write_block(false, &bytes, BLOCK_TYPE_UNCOMPRESSED)?;
                filter_size = h.size + BLOCK_TRAILER_LEN as u64;
                meta.push((format!("{META_FILTER_PREFIX}{}", policy.name()), h));
            } else {
                let mut handles = Vec::with_capacity(n);
                for part in partitioned::build_partitions(&policy, &self.hashes, n)? {
                    let h = self.write_block(false, &part, BLOCK_TYPE_UNCOMPRESSED)?;
                    filter_size += h.size + BLOCK_TRAILER_LEN as u64;
                    handles.push(h);
                }
                let index = super::filter_block::encode_partition_index(&handles);
                let h = self.write_block(false, &index, BLOCK_TYPE_UNCOMPRESSED)?;
                filter_size += h.size + BLOCK_TRAILER_LEN as u64;
                filter_partitions = n as u64;
                meta.push((
                    format!("{META_FILTER_PARTITIONS_PREFIX}{}", policy.name()),
                    h,
                ));
            }
        }

        if let Some(p) = &self.prefixes {
            let bytes = p.finish()?;
            let h = self.write_block(false, &bytes, BLOCK_TYPE_UNCOMPRESSED)?;
            meta.push((META_PREFIX_FILTER.to_string(), h));
        }

        if let (Some(points), Some(bits)) = (&self.points, self.opts.range_filter_bits_per_key) {
            let bytes = RangeFilter::build(points, bits, RANGE_FILTER_SEED).encode();
            let h = self.write_block(false, &bytes, BLOCK_TYPE_UNCOMPRESSED)?;
            meta.push((META_RANGE_FILTER.to_string(), h));
        }

        let mut range_tombstones = None;
        if !self.range_tombstones.is_empty() {
            let frags = crate::range_tombstone::Fragments::new(
                self.range_tombstones
                    .iter()
                    .map(|(a, b, s)| (&a[..], &b[..], *s)),
            );
            range_tombstones = Some(frags.count() as u64);
            let block = frags.encode();
            let h = self.write_block(false, &block, BLOCK_TYPE_UNCOMPRESSED)?;
            meta.push((META_RANGE_TOMBSTONES.to_string(), h));
        }

        let (index_handle, index_size, index_partitions) = self.write_index()?;

        let fmt = self.opts.key_format;
        let creation_time = self.opts.creation_time.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        });
        let largest_key = if self.entries > 0 {
            self.last_key.clone()
        } else {
            Vec::new()
        };
        let compression = self.opts.compression;
        let format_version = if index_partitions > 0 {
            FORMAT_VERSION
        } else if filter_partitions > 0 {
            FORMAT_VERSION_PARTITIONED_FILTER
        } else if compression == Compression::None {
            FORMAT_VERSION_UNCOMPRESSED
        } else {
            FORMAT_VERSION_COMPRESSED
        };
        let props = TableProperties {
            entries: self.entries,
            data_blocks: self.data_blocks,
            smallest_user_key: fmt.user_key(&self.smallest_key).to_vec(),
            largest_user_key: fmt.user_key(&largest_key).to_vec(),
            smallest_key: self.smallest_key.clone(),
            largest_key: largest_key.clone(),
            raw_key_bytes: self.raw_key_bytes,
            raw_value_bytes: self.raw_value_bytes,
            data_size: self.data_size,
            data_raw_size: self.data_raw_size,
            data_raw_max: self.data_raw_max,
            compression,
            index_size,
            index_partitions,
            filter_size,
            filter_partitions,
            filter_policy: self.opts.filter.map(|p| p.name().to_string()),
            filter_bits_per_key: self.opts.filter.map_or(0.0, |p| p.bits_per_key()),
            filter_probes: self.opts.filter.map_or(0, |p| p.num_probes()),
            filter_keys: self.hashes.len() as u64,
            key_format: fmt,
            format_version,
            creation_time,
            deletions: (fmt == KeyFormat::Internal).then_some(self.deletions),
            max_sequence: (fmt == KeyFormat::Internal).then_some(self.max_sequence),
            range_tombstones,
        };
        let props_handle = self.write_block(false, &props.encode(), BLOCK_TYPE_UNCOMPRESSED)?;
        meta.push((META_PROPERTIES.to_string(), props_handle));

        // Metaindex keys are sorted bytewise ("filter.*" < "prefix_filter" <
        // "properties" < "range_filter" < "range_tombstones").
        meta.sort_by(|a, b| a.0.cmp(&b.0));
        let mut mi = BlockBuilder::new(1);
        for (name, h) in &meta {
            mi.add(name.as_bytes(), &h.encode());
        }
        let metaindex_handle = self.write_block(false, mi.finish(), BLOCK_TYPE_UNCOMPRESSED)?;

        let footer = Footer {
            metaindex: metaindex_handle,
            index: index_handle,
            checksum: self.opts.checksum,
            format_version,
        };
        let ctx = || format!("write {}", self.path.display());
        self.out
            .write_all(&footer.encode(self.offset))
            .map_err(|e| Error::io(ctx(), e))?;
        self.offset += super::format::FOOTER_LEN as u64;
        let file = self
            .out
            .into_inner()
            .map_err(|e| Error::io(format!("write {}", self.path.display()), e.into_error()))?;

        let summary = TableSummary {
            path: self.path,
            file_size: self.offset,
            entries: self.entries,
            smallest_key: self.smallest_key,
            largest_key,
            filter_bytes: filter_size,
            index_bytes: props.index_size,
            properties: props,
        };
        Ok(UnsyncedTable {
            file: file.0,
            summary,
        })
    }
}

impl TableBuilder {
    /// Writes the index: one block, or (two partitions or more cut by
    /// `index_partition_bytes`) the partitions back to back and then the
    /// top-level index, one entry per partition: its last key and its
    /// handle. Returns the handle the footer names, the index's bytes with
    /// trailers, and its partitions (0 for one block).
    fn write_index(&mut self) -> Result<(BlockHandle, u64, u64)> {
        let mut index = std::mem::replace(&mut self.index, BlockBuilder::new(1));
        let mut parts = std::mem::take(&mut self.index_parts);
        if !index.is_empty() {
            parts.push((index.finish().to_vec(), self.last_key.clone()));
        }
        // One partition holds the whole index: its bytes are the one block's.
        if parts.len() <= 1 {
            let payload = parts.pop().map_or_else(|| index.finish().to_vec(), |p| p.0);
            let h = self.write_block(false, &payload, BLOCK_TYPE_UNCOMPRESSED)?;
            return Ok((h, h.size + BLOCK_TRAILER_LEN as u64, 0));
        }
        let mut size = 0;
        let mut top = BlockBuilder::new(1);
        for (payload, last_key) in &parts {
            let h = self.write_block(false, payload, BLOCK_TYPE_UNCOMPRESSED)?;
            size += h.size + BLOCK_TRAILER_LEN as u64;
            top.add(last_key, &h.encode());
        }
        let h = self.write_block(false, top.finish(), BLOCK_TYPE_UNCOMPRESSED)?;
        size += h.size + BLOCK_TRAILER_LEN as u64;
        Ok((h, size, parts.len() as u64))
    }
}

/// A table whose bytes are all written but not yet synced
/// ([`TableBuilder::finish_unsynced`]).
#[derive(Debug)]
pub struct UnsyncedTable {
    file: Box<dyn WritableFile>,
    summary: TableSummary,
}

impl UnsyncedTable {
    /// Bytes written.
    pub fn file_size(&self) -> u64 {
        self.summary.file_size
    }

    /// Fsyncs the file; the table is then complete on disk.
    pub fn sync(mut self) -> Result<TableSummary> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(format!("fsync {}", self.summary.path.display()), e))?;
        Ok(self.summary)
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::filter::key_hash;
    use crate::sst::{Table, TableOpenOptions};

    const N: usize = 3000;

    fn entry(i: usize) -> (Vec<u8>, Vec<u8>) {
        let v = format!("value {i} ").repeat(1 + i % 5);
        (format!("k{i:06}").into_bytes(), v.into_bytes())
    }

    fn opts(compression: Compression) -> TableBuilderOptions {
        TableBuilderOptions::default()
            .block_size(512)
            .compression(compression)
            .creation_time(Some(1_700_000_000))
    }

    /// `N` entries added one by one to `dir/name`.
    fn build(dir: &Path, name: &str, o: TableBuilderOptions) -> PathBuf {
        let path = dir.join(name);
        let mut b = TableBuilder::new(File::create(&path).unwrap(), &path, o);
        for i in 0..N {
            let (k, v) = entry(i);
            b.add(&k, &v).unwrap();
        }
        b.finish().unwrap();
        path
    }

    /// The data blocks of `from`, copied into `dir/name` built with `o`.
    fn copy(from: &Path, dir: &Path, name: &str, o: TableBuilderOptions) -> Result<PathBuf> {
        let t = Table::open(from, TableOpenOptions::default())?;
        let path = dir.join(name);
        let mut b = TableBuilder::new(File::create(&path).unwrap(), &path, o);
        for block in t.stored_blocks() {
            b.add_stored_block(&block?)?;
        }
        b.finish()?;
        Ok(path)
    }

    fn codecs() -> Vec<Compression> {
        let mut c = vec![Compression::None, Compression::Lz4];
        if cfg!(feature = "zstd") {
            c.push(Compression::Zstd(3));
        }
        c
    }

    /// With the same options, a table of copied blocks is the table `add`
    /// writes, byte for byte.
    #[test]
    fn copied_blocks_make_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        for c in codecs() {
            let a = build(dir.path(), "a.sst", opts(c));
            let b = copy(&a, dir.path(), "b.sst", opts(c)).unwrap();
            let (a, b) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
            assert!(a == b, "{c}: {} and {} bytes", a.len(), b.len());
        }
    }

    /// Copied into a table of the other checksum type, each block gets the
    /// trailer that type computes (the source's, verified, is kept only
    /// under the same type at the same offset): the copy verifies, and is
    /// the table `add` writes with that type.
    #[test]
    fn copied_blocks_take_the_new_tables_checksum() {
        let dir = tempfile::tempdir().unwrap();
        for c in codecs() {
            let a = build(dir.path(), "a.sst", opts(c));
            let xxh3 = opts(c).checksum(ChecksumType::Xxh3);
            let b = copy(&a, dir.path(), "b.sst", xxh3.clone()).unwrap();
            let fresh = build(dir.path(), "c.sst", xxh3);
            let t = Table::open(&b, TableOpenOptions::default()).unwrap();
            assert_eq!(t.checksum_type(), ChecksumType::Xxh3);
            t.verify_all().unwrap();
            let (b, fresh) = (std::fs::read(b).unwrap(), std::fs::read(fresh).unwrap());
            assert!(b == fresh, "{c}: {} and {} bytes", b.len(), fresh.len());
        }
    }

    /// Copied with other filters, the data blocks keep their bytes, every
    /// entry reads the same, the properties are those of the entries, and
    /// the new filters answer for the keys.
    #[test]
    fn copied_blocks_get_new_filters() {
        let dir = tempfile::tempdir().unwrap();
        for c in codecs() {
            let a = build(dir.path(), "a.sst", opts(c).filter(None));
            let other = opts(c)
                .filter(Some(FilterPolicy::ribbon(7.0)))
                .prefix_extractor(Some(PrefixExtractor::Fixed(4)))
                .range_filter_bits_per_key(Some(16.0))
                .checksum(ChecksumType::Xxh3);
            let b = copy(&a, dir.path(), "b.sst", other.clone()).unwrap();
            let want = build(dir.path(), "want.sst", other);
            let open = |p: &Path| Table::open(p, TableOpenOptions::default()).unwrap();
            let (ta, tb, tw) = (open(&a), open(&b), open(&want));
            let data = ta.properties().data_size as usize;
            let (fa, fb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
            // Each block's payload and type byte are the same; the checksums
            // are xxh3 now.
            for ((_, ha), (_, hb)) in ta
                .index_entries()
                .unwrap()
                .into_iter()
                .zip(tb.index_entries().unwrap())
            {
                assert_eq!(ha, hb, "{c}");
                let r = ha.offset as usize..(ha.offset + ha.size + 1) as usize;
                assert!(fa[r.clone()] == fb[r], "{c}: block at {}", ha.offset);
            }
            assert_eq!(tb.properties().data_size as usize, data);
            // The file `add` writes with these options, byte for byte.
            assert!(fb == std::fs::read(&want).unwrap(), "{c}");
            assert_eq!(tb.properties(), tw.properties(), "{c}");
            let entries: Vec<_> = ta.iter().map(Result::unwrap).collect();
            let copied: Vec<_> = tb.iter().map(Result::unwrap).collect();
            assert!(entries == copied, "{c}");
            assert_eq!(entries.len(), N);
            let f = tb.filter().expect("a filter");
            assert!((0..N).all(|i| f.may_contain(key_hash(&entry(i).0))), "{c}");
            let passed = (0..10_000)
                .filter(|i| f.may_contain(key_hash(format!("x{i}").as_bytes())))
                .count();
            assert!(passed < 400, "{c}: {passed} of 10,000 absent keys pass");
            let pf = tb.prefix_filter().unwrap().unwrap();
            assert!(pf.may_contain(key_hash(b"k000")), "{c}");
            assert!(tb.range_filter().unwrap().is_ok(), "{c}");
            tb.verify_all().unwrap();
        }
    }

    /// A block `add` would not have written with the builder's options is
    /// refused: another block size, codec or key order.
    #[test]
    fn blocks_of_another_format_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = build(dir.path(), "a.sst", opts(Compression::None));
        let refused = |o: TableBuilderOptions| {
            let e = copy(&a, dir.path(), "b.sst", o).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        };
        refused(opts(Compression::None).block_size(1024));
        refused(opts(Compression::None).block_size(256));
        refused(opts(Compression::None).restart_interval(8));
        refused(opts(Compression::Lz4));
        refused(opts(Compression::None).key_format(KeyFormat::Internal));
        // Only the last block may be short.
        let t = Table::open(&a, TableOpenOptions::default()).unwrap();
        let path = dir.path().join("c.sst");
        let mut b = TableBuilder::new(File::create(&path).unwrap(), &path, opts(Compression::None));
        let mut blocks = t.stored_blocks();
        b.add(b"a", b"1").unwrap();
        let e = b
            .add_stored_block(&blocks.next().unwrap().unwrap())
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }

    /// A damaged data block is corruption of its file at the block's
    /// offset, found before any of its bytes reach the copy.
    #[test]
    fn a_damaged_block_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        for c in codecs() {
            let a = build(dir.path(), "a.sst", opts(c));
            let third = Table::open(&a, TableOpenOptions::default())
                .unwrap()
                .index_entries()
                .unwrap()
                .into_iter()
                .nth(2)
                .unwrap()
                .1;
            let mut bytes = std::fs::read(&a).unwrap();
            bytes[third.offset as usize + 7] ^= 0x10;
            std::fs::write(&a, bytes).unwrap();
            match copy(&a, dir.path(), "b.sst", opts(c)) {
                Err(Error::Corruption { file, offset, .. }) => {
                    assert_eq!((file, offset), (a.clone(), third.offset), "{c}");
                }
                other => panic!("{c}: {other:?}"),
            }
        }
    }
}
