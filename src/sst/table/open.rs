//! [`Table::open`]: reads the footer, metaindex, properties, filter and index
//! blocks and refuses a table whose parts disagree with each other, so that
//! every later read can trust the in-memory index and properties.

use std::path::Path;

use crate::error::{Error, Result};
use crate::filter::{PrefixFilter, RangeFilter};
use crate::fs::{RealFs, open_read_in};

use crate::range_tombstone::Fragments;

use super::file::TableFile;

use crate::sst::compression::Compression;
use crate::sst::filter_block::{self, FilterInfo};
use crate::sst::format::{
    BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN, Footer, KeyFormat, META_FILTER_PARTITIONS_PREFIX,
    META_FILTER_PREFIX, META_PREFIX_FILTER, META_PROPERTIES, META_RANGE_FILTER,
    META_RANGE_TOMBSTONES,
};
use crate::sst::properties::TableProperties;

use super::read::read_at;
use super::{Table, TableOpenOptions};

/// The blocks the metaindex names.
struct MetaBlocks {
    properties: BlockHandle,
    filter: Option<MetaFilter>,
    prefix: Option<BlockHandle>,
    range: Option<BlockHandle>,
    tombstones: Option<BlockHandle>,
}

/// The filter block the metaindex names.
struct MetaFilter {
    /// The policy name after the metaindex name's prefix.
    policy: String,
    /// The filter block, or a partitioned filter's partition index block.
    handle: BlockHandle,
    /// Named as a partitioned filter.
    partitioned: bool,
}

impl Table {
    /// Opens and verifies the table at `path`: footer, metaindex, properties,
    /// filter and index blocks (checksums and structure). Data blocks are
    /// verified when read; [`verify_all`](Self::verify_all) checks them all.
    pub fn open(path: impl AsRef<Path>, opts: TableOpenOptions) -> Result<Table> {
        let path = path.as_ref().to_path_buf();
        let fs = opts.fs.clone().unwrap_or_else(RealFs::shared);
        let file = open_read_in(fs.as_ref(), &path, opts.read_mode)
            .map_err(|e| Error::io(format!("open {}", path.display()), e))?;
        let identity = file.identity();
        let file_size = match identity {
            Some(id) => id.size(),
            None => file
                .len()
                .map_err(|e| Error::io(format!("stat {}", path.display()), e))?,
        };
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
        let mut file = TableFile::new(file, path.clone(), fs, opts.read_mode, opts.table_cache);
        file.expect(file_size, raw, identity);

        // Fields filled in step by step; `table` lets the block helpers run.
        let mut table = Table {
            path,
            file,
            file_id: opts.file_id,
            file_size,
            cache: opts.cache,
            footer,
            props: placeholder_properties(),
            index: Default::default(),
            partitions: None,
            data_end: 0,
            filter: None,
            filter_name: None,
            filter_handle: None,
            filter_partitions: Vec::new(),
            filter_info: None,
            prefix_filter: None,
            prefix_filter_handle: None,
            range_filter: None,
            range_filter_handle: None,
            properties_handle: BlockHandle::default(),
            range_tombstones: Fragments::default(),
        };
        let MetaBlocks {
            properties: props_handle,
            filter,
            prefix,
            range,
            tombstones,
        } = table.read_metaindex()?;
        table.read_properties(props_handle)?;
        table.check_properties(filter.as_ref())?;
        match (tombstones, table.props.range_tombstones) {
            (Some(h), _) => table.read_range_tombstones(h)?,
            (None, Some(n)) => {
                return Err(table.corruption(
                    props_handle.offset,
                    format!(
                        "the properties count {n} range tombstones, the metaindex names no \
                         range-tombstone block"
                    ),
                ));
            }
            (None, None) => {}
        }
        if let Some(filter) = filter {
            table.read_filter(filter, opts.filter_on_demand)?;
        }
        table.read_index(opts.index_on_demand)?;
        if let Some(h) = prefix {
            table.prefix_filter = Some(table.read_prefix_filter(h)?);
            table.prefix_filter_handle = Some(h);
        }
        if let Some(h) = range {
            table.range_filter = Some(
                table
                    .read_skip_block(h, "range filter")?
                    .and_then(|b| RangeFilter::decode(&b).map_err(|e| e.0)),
            );
            table.range_filter_handle = Some(h);
        }
        // Counted once whole: a table that fails to open closes its file.
        table.file.admit();
        Ok(table)
    }

    /// The metaindex: the properties block's handle, the filter block's,
    /// the prefix and range filter blocks' and the range-tombstone block's,
    /// if any.
    /// Names it does not know (written by a later version) are ignored.
    fn read_metaindex(&self) -> Result<MetaBlocks> {
        let footer = self.footer;
        let mi = self.read_block(footer.metaindex, "metaindex")?;
        let mut it = mi.iter(KeyFormat::Plain);
        let mut props_handle = None;
        let mut filter: Option<MetaFilter> = None;
        let mut tombstones = None;
        let mut prefix = None;
        let mut range = None;
        loop {
            let at = footer.metaindex.offset + it.next_offset() as u64;
            if !self.block_step(&mut it, footer.metaindex, "metaindex")? {
                break;
            }
            let h = BlockHandle::decode_exact(it.value_slice()).ok_or_else(|| {
                self.corruption(at, "metaindex entry value is not a block handle")
            })?;
            let name = it.key();
            if name == META_PROPERTIES.as_bytes() {
                if props_handle.replace(h).is_some() {
                    return Err(self.corruption(at, "two properties blocks"));
                }
                continue;
            }
            if name == META_RANGE_TOMBSTONES.as_bytes() {
                if tombstones.replace(h).is_some() {
                    return Err(self.corruption(at, "two range-tombstone blocks"));
                }
                continue;
            }
            if name == META_PREFIX_FILTER.as_bytes() {
                if prefix.replace(h).is_some() {
                    return Err(self.corruption(at, "two prefix filter blocks"));
                }
                continue;
            }
            if name == META_RANGE_FILTER.as_bytes() {
                if range.replace(h).is_some() {
                    return Err(self.corruption(at, "two range filter blocks"));
                }
                continue;
            }
            let (policy, partitioned) = if let Some(policy) =
                name.strip_prefix(META_FILTER_PREFIX.as_bytes())
            {
                (policy, false)
            } else if let Some(policy) = name.strip_prefix(META_FILTER_PARTITIONS_PREFIX.as_bytes())
            {
                (policy, true)
            } else {
                continue;
            };
            let named = MetaFilter {
                policy: String::from_utf8_lossy(policy).into_owned(),
                handle: h,
                partitioned,
            };
            if filter.replace(named).is_some() {
                return Err(self.corruption(at, "more than one filter block"));
            }
        }
        let props_handle = props_handle.ok_or_else(|| {
            self.corruption(footer.metaindex.offset, "metaindex has no properties block")
        })?;
        Ok(MetaBlocks {
            properties: props_handle,
            filter,
            prefix,
            range,
            tombstones,
        })
    }

    /// Reads, checks and keeps the range-tombstone block at `h`: a table of
    /// the store's internal keys, tombstones no newer than the table's
    /// largest sequence number.
    fn read_range_tombstones(&mut self, h: BlockHandle) -> Result<()> {
        const WHAT: &str = "range tombstones";
        if self.props.key_format != KeyFormat::Internal {
            return Err(self.corruption(h.offset, "range tombstones in a table of plain keys"));
        }
        let raw = self.read_raw(h, WHAT)?;
        let f = Fragments::decode(&raw)
            .map_err(|(at, what)| self.corruption(h.offset + at as u64, what))?;
        if let Some(n) = self.props.range_tombstones
            && n != f.count() as u64
        {
            return Err(self.corruption(
                h.offset,
                format!("{} range tombstones, the properties count {n}", f.count()),
            ));
        }
        let max = f.tombstones().map(|t| t.2).max().unwrap_or(0);
        if self.props.max_sequence.is_some_and(|m| max > m) {
            return Err(self.corruption(
                h.offset,
                format!("range tombstone at sequence {max}, above the table's largest"),
            ));
        }
        self.range_tombstones = f;
        Ok(())
    }

    /// The prefix filter block at `h`, decoded and kept in memory. Bytes
    /// that fail their checksum or do not decode leave the table readable
    /// without prefix skipping (the reason kept, and counted by the store):
    /// the block only ever lets reads be skipped, so doing without it never
    /// changes an answer. A read error of the file is still an error.
    fn read_prefix_filter(
        &self,
        h: BlockHandle,
    ) -> Result<std::result::Result<PrefixFilter, String>> {
        Ok(self
            .read_skip_block(h, "prefix filter")?
            .and_then(|b| PrefixFilter::decode(&b)))
    }

    /// The bytes of a block that only lets reads be skipped (a prefix or
    /// range filter) at `h`, or why they are not to be used: a handle past
    /// the blocks before the index, or a checksum or structure error. A read
    /// error of the file is still an error.
    fn read_skip_block(
        &self,
        h: BlockHandle,
        what: &str,
    ) -> Result<std::result::Result<bytes::Bytes, String>> {
        if h.end_with_trailer()
            .is_none_or(|e| e > self.footer.index.offset)
        {
            return Ok(Err(format!(
                "{what} block at offset {} size {} runs into the index",
                h.offset, h.size
            )));
        }
        match self.read_raw(h, what) {
            Ok(bytes) => Ok(Ok(bytes)),
            Err(Error::Corruption { what, .. }) => Ok(Err(what)),
            Err(e) => Err(e),
        }
    }

    /// Reads and decodes the properties block at `h` into the table.
    fn read_properties(&mut self, h: BlockHandle) -> Result<()> {
        let pb = self.read_block(h, "properties")?;
        self.props =
            TableProperties::decode(&pb).map_err(|e| self.block_error(h, "properties", e))?;
        self.properties_handle = h;
        Ok(())
    }

    /// Checks the properties against the footer, against themselves (key
    /// ranges, counts, sizes) and against the metaindex's `filter`.
    fn check_properties(&self, filter: Option<&MetaFilter>) -> Result<()> {
        let footer = &self.footer;
        let at = self.properties_handle.offset;
        let p = &self.props;
        if p.format_version != footer.format_version {
            return Err(self.corruption(
                at,
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
            return Err(self.corruption(at, "the user-key range differs from the key range"));
        }
        if (p.entries == 0) != (p.data_blocks == 0) {
            return Err(self.corruption(
                at,
                format!("{} entries in {} data blocks", p.entries, p.data_blocks),
            ));
        }
        if let Some(what) = size_bounds_broken(p, self.file_size()) {
            return Err(self.corruption(at, what));
        }
        if p.data_blocks > 0
            && p.data_raw_max.saturating_add(BLOCK_TRAILER_LEN as u64) > p.data_raw_size
            && self.compressed_table()
        {
            return Err(self.corruption(
                at,
                format!(
                    "largest raw data block {} is more than all data blocks' {}",
                    p.data_raw_max, p.data_raw_size
                ),
            ));
        }
        let partitioned = filter.is_some_and(|f| f.partitioned);
        if partitioned != (p.filter_partitions > 0) {
            return Err(self.corruption(
                footer.metaindex.offset,
                format!(
                    "metaindex has a {} filter, properties say {} partitions",
                    if partitioned {
                        "partitioned"
                    } else {
                        "whole or no"
                    },
                    p.filter_partitions
                ),
            ));
        }
        let policy = filter.map(|f| &f.policy);
        if policy != p.filter_policy.as_ref() {
            return Err(self.corruption(
                footer.metaindex.offset,
                format!(
                    "metaindex filter {policy:?} disagrees with properties filter {:?}",
                    p.filter_policy
                ),
            ));
        }
        Ok(())
    }

    /// The filter: read and checked whole, then kept in memory (aligned
    /// copy) for the table's life, or dropped when read on demand.
    fn read_filter(&mut self, filter: MetaFilter, on_demand: bool) -> Result<()> {
        if filter.partitioned {
            self.filter_partitions = self.read_partition_index(filter.handle)?;
        }
        self.filter_name = Some(filter.policy);
        self.filter_handle = Some(filter.handle);
        let f = self.load_filter()?.expect("the table has a filter");
        self.filter_info = Some(FilterInfo::of(&f));
        // An unusable filter is a few bytes: kept, so readers see why.
        if !on_demand || !f.is_usable() {
            self.filter = Some(f);
        }
        Ok(())
    }

    /// A partitioned filter's partition index at `h`: as many partitions as
    /// the properties say, laid out back to back just before `h`.
    fn read_partition_index(&self, h: BlockHandle) -> Result<Vec<BlockHandle>> {
        let bytes = self.read_raw(h, "filter partition index")?;
        let parts = filter_block::decode_partition_index(&bytes).map_err(|(at, e)| {
            self.corruption(h.offset + at as u64, format!("filter partition index: {e}"))
        })?;
        if parts.len() as u64 != self.props.filter_partitions {
            return Err(self.corruption(
                h.offset,
                format!(
                    "filter partition index has {} partitions, properties say {}",
                    parts.len(),
                    self.props.filter_partitions
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
                return Err(self.corruption(
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
            return Err(self.corruption(
                h.offset,
                format!("filter partitions end at {next}, not at their index"),
            ));
        }
        Ok(parts)
    }
}

/// Properties that stand in until the properties block is read.
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
        index_partitions: 0,
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
        range_tombstones: None,
    }
}

/// What is wrong, if a table's sizes and entry count break bounds every real
/// table keeps: stored data within the file, raw data at most 32,768 times
/// the stored (no codec expands a block more, `compression`), and at most
/// one entry per raw byte (an entry takes at least its three length
/// varints). Statistics sum these over every table of a store; inside the
/// bounds the sums stay far from u64's end.
pub(super) fn size_bounds_broken(p: &TableProperties, file_size: u64) -> Option<String> {
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
    use crate::key::{ValueKind, make_internal_key};
    use crate::sst::format::{BLOCK_TYPE_UNCOMPRESSED, ChecksumType, block_trailer};
    use crate::sst::{TableBuilder, TableBuilderOptions};

    /// A table of internal keys with three range tombstones, its bytes, and
    /// where its range-tombstone block's payload lies.
    fn table_with_tombstones(dir: &Path) -> (std::path::PathBuf, Vec<u8>, usize, usize) {
        let path = dir.join("t.sst");
        let file = std::fs::File::create(&path).unwrap();
        let mut b = TableBuilder::new(
            file,
            &path,
            TableBuilderOptions {
                key_format: KeyFormat::Internal,
                ..TableBuilderOptions::default()
            },
        );
        for i in 0..20u64 {
            let k = make_internal_key(format!("k{i:03}").as_bytes(), 10 + i, ValueKind::Value);
            b.add(&k, b"v").unwrap();
        }
        let ts: [(&[u8], &[u8], u64); 3] = [
            (b"k002", b"k009", 40),
            (b"k005", b"k015", 41),
            (b"k017", b"k019", 5),
        ];
        for (s, e, q) in ts {
            b.add_range_tombstone(s, e, q).unwrap();
        }
        assert!(b.add_range_tombstone(b"b", b"a", 3).is_err());
        b.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let payload = Fragments::new(ts).encode();
        let at = bytes
            .windows(payload.len())
            .position(|w| w == payload)
            .unwrap();
        (path, bytes, at, payload.len())
    }

    /// The block opens into the fragments written; every bit flipped in it,
    /// its checksum resealed, opens as `Corruption` naming the file and an
    /// offset inside the block, or as a valid list, never a panic.
    #[test]
    fn range_tombstone_block_round_trips_and_damage_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let (path, bytes, at, len) = table_with_tombstones(dir.path());
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        assert_eq!(t.range_tombstone_count(), 5);
        assert_eq!(t.range_tombstones().max_cover(b"k006", 100), 41);
        assert_eq!(t.range_tombstones().max_cover(b"k006", 40), 40);
        assert_eq!(t.range_tombstones().max_cover(b"k016", 100), 0);
        assert_eq!(t.properties().max_sequence, Some(41));
        let (mut errors, mut valid) = (0, 0);
        for i in 0..len {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[at + i] ^= 1 << bit;
                let trailer = block_trailer(
                    ChecksumType::Crc32,
                    &bad[at..at + len],
                    BLOCK_TYPE_UNCOMPRESSED,
                    at as u64,
                );
                bad[at + len..at + len + trailer.len()].copy_from_slice(&trailer);
                std::fs::write(&path, &bad).unwrap();
                match Table::open(&path, TableOpenOptions::default()) {
                    Err(Error::Corruption { file, offset, .. }) => {
                        assert_eq!(file, path);
                        assert!(
                            (at as u64..=(at + len) as u64).contains(&offset),
                            "{offset}"
                        );
                        errors += 1;
                    }
                    Err(e) => panic!("byte {i} bit {bit}: {e}"),
                    Ok(t) => {
                        let f = t.range_tombstones();
                        assert_eq!(Fragments::decode(&f.encode()).as_ref(), Ok(f));
                        valid += 1;
                    }
                }
            }
        }
        assert!(errors > 0 && valid > 0, "{errors} errors, {valid} valid");
        // Flipped without resealing: the checksum catches it.
        let mut bad = bytes.clone();
        bad[at] ^= 1;
        std::fs::write(&path, &bad).unwrap();
        assert!(
            Table::open(&path, TableOpenOptions::default())
                .unwrap_err()
                .is_corruption()
        );
    }

    /// A metaindex that no longer names the range-tombstone block (its
    /// checksum resealed) would bring the deleted keys back: the
    /// `range_tombstones` property makes the open refuse it.
    #[test]
    fn a_lost_range_tombstone_block_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut bytes, _, _) = table_with_tombstones(dir.path());
        let t = Table::open(&path, TableOpenOptions::default()).unwrap();
        assert_eq!(t.properties().range_tombstones, Some(5));
        let mi = t.footer().metaindex;
        drop(t);
        let (s, e) = (mi.offset as usize, (mi.offset + mi.size) as usize);
        let name = META_RANGE_TOMBSTONES.as_bytes();
        let at = s + bytes[s..e]
            .windows(name.len())
            .position(|w| w == name)
            .unwrap();
        // Still the last name in order, now one the reader does not know.
        bytes[at + name.len() - 1] = b'z';
        let trailer = block_trailer(
            ChecksumType::Crc32,
            &bytes[s..e],
            BLOCK_TYPE_UNCOMPRESSED,
            mi.offset,
        );
        bytes[e..e + trailer.len()].copy_from_slice(&trailer);
        std::fs::write(&path, &bytes).unwrap();
        let err = Table::open(&path, TableOpenOptions::default()).unwrap_err();
        assert!(err.is_corruption(), "{err}");
        assert!(
            err.to_string().contains("no range-tombstone block"),
            "{err}"
        );
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
}
