//! The properties block: named facts about a table (counts, sizes, key range,
//! filter parameters, key order), like RocksDB's table properties.
//!
//! It is an ordinary sorted block (restart interval 1) whose keys are ASCII
//! property names in bytewise order. Numbers are varint64, names and keys raw
//! bytes, `filter.bits_per_key` the 8 little-endian bytes of an IEEE-754 `f64`.
//! Readers ignore names they do not know, so later versions can add properties.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::block::{Block, BlockBuilder, BlockError};
use super::compression::Compression;
use super::format::{FORMAT_VERSION_UNCOMPRESSED, KeyFormat, get_varint64, put_varint64};

/// Everything the properties block records about a table.
#[derive(Clone, Debug, PartialEq)]
pub struct TableProperties {
    /// Number of entries (`entries`).
    pub entries: u64,
    /// Number of data blocks (`data.blocks`).
    pub data_blocks: u64,
    /// Smallest stored key (`key.smallest`); empty for an empty table.
    pub smallest_key: Vec<u8>,
    /// Largest stored key (`key.largest`).
    pub largest_key: Vec<u8>,
    /// User key of the smallest key (`user_key.smallest`).
    pub smallest_user_key: Vec<u8>,
    /// User key of the largest key (`user_key.largest`).
    pub largest_user_key: Vec<u8>,
    /// Sum of key lengths as added (`raw.key.bytes`).
    pub raw_key_bytes: u64,
    /// Sum of value lengths (`raw.value.bytes`).
    pub raw_value_bytes: u64,
    /// Bytes of all data blocks as stored, trailers included (`data.size`).
    pub data_size: u64,
    /// Bytes of all data blocks before compression, trailers included
    /// (`data.raw_size`; equal to `data_size` in a table without compression).
    /// `data_raw_size / data_size` is the table's compression ratio.
    pub data_raw_size: u64,
    /// The largest data block before compression, trailer excluded
    /// (`data.raw_max`): the bound a reader puts on a compressed block's
    /// declared length. 0 in a format version 1 table (nothing to bound).
    pub data_raw_max: u64,
    /// How the data blocks were compressed (`compression`; a format version 1
    /// table has no such property and no compressed block:
    /// [`Compression::None`]). A block that did not shrink enough is stored
    /// raw even so; its type byte says which.
    pub compression: Compression,
    /// Bytes of the index block including its trailer (`index.size`); for
    /// a partitioned index, every partition and the top-level index block,
    /// trailers included.
    pub index_size: u64,
    /// Partitions of a two-level index (`index.partitions`, format version
    /// 4 only); 0 for an index of one block.
    pub index_partitions: u64,
    /// Bytes of the filter block including its trailer (`filter.size`, 0 if none).
    pub filter_size: u64,
    /// Partitions of the filter (`filter.partitions`, format version 3
    /// only); 0 for a whole filter block or none.
    pub filter_partitions: u64,
    /// Filter policy name (`filter.policy`); `None` if the table has no filter.
    pub filter_policy: Option<String>,
    /// Bits per key the policy was asked for (`filter.bits_per_key`).
    pub filter_bits_per_key: f64,
    /// Probes per key (`filter.probes`).
    pub filter_probes: u32,
    /// Distinct user-key hashes the filter was built from (`filter.keys`).
    pub filter_keys: u64,
    /// Key order (`key.format`).
    pub key_format: KeyFormat,
    /// Table format version (`format.version`).
    pub format_version: u32,
    /// Unix time in seconds when the table was written (`creation.time`).
    pub creation_time: u64,
    /// Deletion entries (kind byte 0), only for [`KeyFormat::Internal`]
    /// (`deletions`).
    pub deletions: Option<u64>,
    /// The largest sequence number of any entry, only for
    /// [`KeyFormat::Internal`] tables that record it (`seq.max`; optional).
    /// Recovery checks that the manifest's last sequence is not below it
    /// (without it, not below the sequences of the smallest and largest keys).
    pub max_sequence: Option<u64>,
    /// Range tombstones in the table's range-tombstone block
    /// (`range_tombstones`), only in a table that has one (and optional even
    /// there: a table with the block but not the property is read). The open
    /// refuses a table whose metaindex names no such block, or a block of
    /// another count: a lost metaindex entry would bring deleted keys back.
    pub range_tombstones: Option<u64>,
}

/// Property names, in the bytewise order they are stored in.
pub mod names {
    /// `compression`: `none`, `lz4` or `zstd:LEVEL` (format version 2 only).
    pub const COMPRESSION: &str = "compression";
    /// `creation.time`: varint64 unix seconds.
    pub const CREATION_TIME: &str = "creation.time";
    /// `data.blocks`: varint64.
    pub const DATA_BLOCKS: &str = "data.blocks";
    /// `data.raw_max`: varint64 bytes (format version 2 only).
    pub const DATA_RAW_MAX: &str = "data.raw_max";
    /// `data.raw_size`: varint64 bytes (format version 2 only).
    pub const DATA_RAW_SIZE: &str = "data.raw_size";
    /// `data.size`: varint64 bytes.
    pub const DATA_SIZE: &str = "data.size";
    /// `deletions`: varint64 (internal-key tables only).
    pub const DELETIONS: &str = "deletions";
    /// `entries`: varint64.
    pub const ENTRIES: &str = "entries";
    /// `filter.bits_per_key`: f64 as 8 LE bytes.
    pub const FILTER_BITS_PER_KEY: &str = "filter.bits_per_key";
    /// `filter.keys`: varint64.
    pub const FILTER_KEYS: &str = "filter.keys";
    /// `filter.partitions`: varint64 (format version 3 only).
    pub const FILTER_PARTITIONS: &str = "filter.partitions";
    /// `filter.policy`: name bytes.
    pub const FILTER_POLICY: &str = "filter.policy";
    /// `filter.probes`: varint64.
    pub const FILTER_PROBES: &str = "filter.probes";
    /// `filter.size`: varint64 bytes.
    pub const FILTER_SIZE: &str = "filter.size";
    /// `format.version`: varint64.
    pub const FORMAT_VERSION: &str = "format.version";
    /// `index.partitions`: varint64 (format version 4 only).
    pub const INDEX_PARTITIONS: &str = "index.partitions";
    /// `index.size`: varint64 bytes.
    pub const INDEX_SIZE: &str = "index.size";
    /// `key.format`: `plain` or `internal`.
    pub const KEY_FORMAT: &str = "key.format";
    /// `key.largest`: raw key bytes.
    pub const KEY_LARGEST: &str = "key.largest";
    /// `key.smallest`: raw key bytes.
    pub const KEY_SMALLEST: &str = "key.smallest";
    /// `range_tombstones`: varint64 (tables with range tombstones only).
    pub const RANGE_TOMBSTONES: &str = "range_tombstones";
    /// `raw.key.bytes`: varint64.
    pub const RAW_KEY_BYTES: &str = "raw.key.bytes";
    /// `raw.value.bytes`: varint64.
    pub const RAW_VALUE_BYTES: &str = "raw.value.bytes";
    /// `seq.max`: varint64 (internal-key tables only).
    pub const SEQ_MAX: &str = "seq.max";
    /// `user_key.largest`: raw bytes.
    pub const USER_KEY_LARGEST: &str = "user_key.largest";
    /// `user_key.smallest`: raw bytes.
    pub const USER_KEY_SMALLEST: &str = "user_key.smallest";
}

fn varint(v: u64) -> Vec<u8> {
    let mut b = Vec::new();
    put_varint64(&mut b, v);
    b
}

impl TableProperties {
    /// Encodes the properties as a sorted block.
    pub fn encode(&self) -> Vec<u8> {
        use names::*;
        let mut m: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
        m.insert(CREATION_TIME, varint(self.creation_time));
        m.insert(DATA_BLOCKS, varint(self.data_blocks));
        m.insert(DATA_SIZE, varint(self.data_size));
        if self.format_version > FORMAT_VERSION_UNCOMPRESSED {
            m.insert(COMPRESSION, self.compression.to_string().into_bytes());
            m.insert(DATA_RAW_MAX, varint(self.data_raw_max));
            m.insert(DATA_RAW_SIZE, varint(self.data_raw_size));
        }
        if let Some(d) = self.deletions {
            m.insert(DELETIONS, varint(d));
        }
        if let Some(s) = self.max_sequence {
            m.insert(SEQ_MAX, varint(s));
        }
        if let Some(n) = self.range_tombstones {
            m.insert(RANGE_TOMBSTONES, varint(n));
        }
        m.insert(ENTRIES, varint(self.entries));
        if let Some(p) = &self.filter_policy {
            m.insert(
                FILTER_BITS_PER_KEY,
                self.filter_bits_per_key.to_le_bytes().to_vec(),
            );
            m.insert(FILTER_KEYS, varint(self.filter_keys));
            if self.filter_partitions > 0 {
                m.insert(FILTER_PARTITIONS, varint(self.filter_partitions));
            }
            m.insert(FILTER_POLICY, p.as_bytes().to_vec());
            m.insert(FILTER_PROBES, varint(u64::from(self.filter_probes)));
            m.insert(FILTER_SIZE, varint(self.filter_size));
        }
        m.insert(FORMAT_VERSION, varint(u64::from(self.format_version)));
        if self.index_partitions > 0 {
            m.insert(INDEX_PARTITIONS, varint(self.index_partitions));
        }
        m.insert(INDEX_SIZE, varint(self.index_size));
        m.insert(KEY_FORMAT, self.key_format.name().as_bytes().to_vec());
        m.insert(KEY_LARGEST, self.largest_key.clone());
        m.insert(KEY_SMALLEST, self.smallest_key.clone());
        m.insert(RAW_KEY_BYTES, varint(self.raw_key_bytes));
        m.insert(RAW_VALUE_BYTES, varint(self.raw_value_bytes));
        m.insert(USER_KEY_LARGEST, self.largest_user_key.clone());
        m.insert(USER_KEY_SMALLEST, self.smallest_user_key.clone());
        let mut b = BlockBuilder::new(1);
        for (k, v) in &m {
            b.add(k.as_bytes(), v);
        }
        b.finish().to_vec()
    }

    /// Decodes a properties block. Errors carry the offset within the block.
    pub fn decode(block: &Block) -> Result<TableProperties, BlockError> {
        use names::*;
        let mut m: BTreeMap<Vec<u8>, Bytes> = BTreeMap::new();
        let mut it = block.iter(KeyFormat::Plain);
        loop {
            let at = it.next_offset();
            if !it.advance()? {
                break;
            }
            if m.insert(it.key().to_vec(), it.value()).is_some() {
                return Err(BlockError {
                    offset: at,
                    what: format!("duplicate property {:?}", String::from_utf8_lossy(it.key())),
                });
            }
        }
        let err = |what: String| BlockError { offset: 0, what };
        let raw = |name: &str| -> Result<&Bytes, BlockError> {
            m.get(name.as_bytes())
                .ok_or_else(|| err(format!("missing property {name}")))
        };
        let num = |name: &str| -> Result<u64, BlockError> {
            let v = raw(name)?;
            match get_varint64(v) {
                Some((n, len)) if len == v.len() => Ok(n),
                _ => Err(err(format!("property {name} is not a varint"))),
            }
        };
        let small = |name: &str| -> Result<u32, BlockError> {
            u32::try_from(num(name)?).map_err(|_| err(format!("property {name} is too large")))
        };
        let key_format = KeyFormat::from_name(raw(KEY_FORMAT)?).ok_or_else(|| {
            err(format!(
                "unknown key format {:?}",
                String::from_utf8_lossy(&m[KEY_FORMAT.as_bytes()])
            ))
        })?;
        let filter_policy = match m.get(FILTER_POLICY.as_bytes()) {
            None => None,
            Some(p) => Some(
                String::from_utf8(p.to_vec())
                    .map_err(|_| err("filter policy name is not UTF-8".into()))?,
            ),
        };
        let (filter_bits_per_key, filter_probes, filter_keys, filter_size) =
            if filter_policy.is_some() {
                let b = raw(FILTER_BITS_PER_KEY)?;
                let b: [u8; 8] = b[..]
                    .try_into()
                    .map_err(|_| err("filter.bits_per_key is not 8 bytes".into()))?;
                (
                    f64::from_le_bytes(b),
                    small(FILTER_PROBES)?,
                    num(FILTER_KEYS)?,
                    num(FILTER_SIZE)?,
                )
            } else {
                (0.0, 0, 0, 0)
            };
        // Version 3 is the version of a partitioned filter, version 4 of a
        // partitioned index (whose filter may be either): each goes with
        // its property, of 2 or more partitions.
        let filter_partitions = match m.get(FILTER_PARTITIONS.as_bytes()) {
            None => 0,
            Some(_) => num(FILTER_PARTITIONS)?,
        };
        let index_partitions = match m.get(INDEX_PARTITIONS.as_bytes()) {
            None => 0,
            Some(_) => num(INDEX_PARTITIONS)?,
        };
        let version = small(FORMAT_VERSION)?;
        let filter_parted = filter_policy.is_some() && filter_partitions >= 2;
        let filter_ok = if version >= 4 {
            filter_partitions == 0 || filter_parted
        } else {
            (version == 3) == filter_parted
        };
        if !filter_ok {
            return Err(err(format!(
                "format version {version} with {filter_partitions} filter partitions \
                 (version 3 is a table with a partitioned filter, of 2 or more)"
            )));
        }
        if (version >= 4) != (index_partitions >= 2) {
            return Err(err(format!(
                "format version {version} with {index_partitions} index partitions \
                 (version 4 is a table with a partitioned index, of 2 or more)"
            )));
        }
        let deletions = match m.get(DELETIONS.as_bytes()) {
            None => None,
            Some(_) => Some(num(DELETIONS)?),
        };
        let max_sequence = match m.get(SEQ_MAX.as_bytes()) {
            None => None,
            Some(_) => Some(num(SEQ_MAX)?),
        };
        let range_tombstones = match m.get(RANGE_TOMBSTONES.as_bytes()) {
            None => None,
            Some(_) => Some(num(RANGE_TOMBSTONES)?),
        };
        let format_version = small(FORMAT_VERSION)?;
        let data_size = num(DATA_SIZE)?;
        let (compression, data_raw_size, data_raw_max) =
            if format_version > FORMAT_VERSION_UNCOMPRESSED {
                let name = raw(COMPRESSION)?;
                let c = std::str::from_utf8(name)
                    .ok()
                    .and_then(|n| Compression::parse(n).ok())
                    .ok_or_else(|| {
                        err(format!(
                            "unknown compression {:?}",
                            String::from_utf8_lossy(name)
                        ))
                    })?;
                (c, num(DATA_RAW_SIZE)?, num(DATA_RAW_MAX)?)
            } else {
                (Compression::None, data_size, 0)
            };
        Ok(TableProperties {
            entries: num(ENTRIES)?,
            data_blocks: num(DATA_BLOCKS)?,
            smallest_key: raw(KEY_SMALLEST)?.to_vec(),
            largest_key: raw(KEY_LARGEST)?.to_vec(),
            smallest_user_key: raw(USER_KEY_SMALLEST)?.to_vec(),
            largest_user_key: raw(USER_KEY_LARGEST)?.to_vec(),
            raw_key_bytes: num(RAW_KEY_BYTES)?,
            raw_value_bytes: num(RAW_VALUE_BYTES)?,
            data_size,
            data_raw_size,
            data_raw_max,
            compression,
            index_size: num(INDEX_SIZE)?,
            index_partitions,
            filter_size,
            filter_partitions,
            filter_policy,
            filter_bits_per_key,
            filter_probes,
            filter_keys,
            key_format,
            format_version,
            creation_time: num(CREATION_TIME)?,
            deletions,
            max_sequence,
            range_tombstones,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TableProperties {
        TableProperties {
            entries: 3,
            data_blocks: 1,
            smallest_key: b"a".to_vec(),
            largest_key: b"c\x00\xff".to_vec(),
            smallest_user_key: b"a".to_vec(),
            largest_user_key: b"c\x00\xff".to_vec(),
            raw_key_bytes: 5,
            raw_value_bytes: 300,
            data_size: 400,
            data_raw_size: 400,
            data_raw_max: 0,
            compression: Compression::None,
            index_size: 30,
            index_partitions: 0,
            filter_size: 89,
            filter_partitions: 0,
            filter_policy: Some("blocked512".into()),
            filter_bits_per_key: 9.5,
            filter_probes: 6,
            filter_keys: 3,
            key_format: KeyFormat::Plain,
            format_version: 1,
            creation_time: 1_700_000_000,
            deletions: None,
            max_sequence: None,
            range_tombstones: None,
        }
    }

    fn roundtrip(p: &TableProperties) -> TableProperties {
        let block = Block::new(Bytes::from(p.encode())).unwrap();
        TableProperties::decode(&block).unwrap()
    }

    #[test]
    fn roundtrip_with_and_without_filter() {
        let p = sample();
        assert_eq!(roundtrip(&p), p);
        let mut q = sample();
        q.filter_policy = None;
        q.filter_bits_per_key = 0.0;
        q.filter_probes = 0;
        q.filter_keys = 0;
        q.filter_size = 0;
        q.key_format = KeyFormat::Internal;
        q.deletions = Some(2);
        assert_eq!(roundtrip(&q), q);
        q.range_tombstones = Some(4);
        assert_eq!(roundtrip(&q), q);
        // Version 2: the compression properties are written and read back.
        let mut r = sample();
        r.format_version = 2;
        r.compression = Compression::Zstd(7);
        r.data_raw_size = 1234;
        r.data_raw_max = 600;
        assert_eq!(roundtrip(&r), r);
        // Version 4: a partitioned index, with a whole or partitioned filter.
        for filter_partitions in [0, 3] {
            let mut v = r.clone();
            v.format_version = 4;
            v.index_partitions = 5;
            v.filter_partitions = filter_partitions;
            assert_eq!(roundtrip(&v), v);
            // Its partitions go with its version, both ways.
            for (version, parts) in [(4, 0), (4, 1), (3, 5), (2, 5)] {
                let mut w = v.clone();
                w.format_version = version;
                w.index_partitions = parts;
                let block = Block::new(Bytes::from(w.encode())).unwrap();
                assert!(
                    TableProperties::decode(&block).is_err(),
                    "{version} {parts}"
                );
            }
        }
        // ... and required.
        let block = Block::new(Bytes::from(r.encode())).unwrap();
        let mut b = BlockBuilder::new(1);
        let mut it = block.iter(KeyFormat::Plain);
        while it.advance().unwrap() {
            if it.key() != names::DATA_RAW_MAX.as_bytes() {
                b.add(it.key(), it.value_slice());
            }
        }
        let block = Block::new(Bytes::from(b.finish().to_vec())).unwrap();
        let e = TableProperties::decode(&block).unwrap_err();
        assert!(
            e.what.contains("missing property data.raw_max"),
            "{}",
            e.what
        );
    }

    #[test]
    fn names_are_sorted() {
        use names::*;
        let all = [
            COMPRESSION,
            CREATION_TIME,
            DATA_BLOCKS,
            DATA_RAW_MAX,
            DATA_RAW_SIZE,
            DATA_SIZE,
            DELETIONS,
            ENTRIES,
            FILTER_BITS_PER_KEY,
            FILTER_KEYS,
            FILTER_PARTITIONS,
            FILTER_POLICY,
            FILTER_PROBES,
            FILTER_SIZE,
            FORMAT_VERSION,
            INDEX_PARTITIONS,
            INDEX_SIZE,
            KEY_FORMAT,
            KEY_LARGEST,
            KEY_SMALLEST,
            RAW_KEY_BYTES,
            RAW_VALUE_BYTES,
            SEQ_MAX,
            USER_KEY_LARGEST,
            USER_KEY_SMALLEST,
        ];
        assert!(all.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn missing_or_malformed_properties_are_errors() {
        let mut b = BlockBuilder::new(1);
        b.add(b"entries", &[0x80]); // truncated varint
        let block = Block::new(Bytes::from(b.finish().to_vec())).unwrap();
        assert!(TableProperties::decode(&block).is_err());
        let mut b = BlockBuilder::new(1);
        b.add(b"zzz.unknown", b"ignored");
        let block = Block::new(Bytes::from(b.finish().to_vec())).unwrap();
        let e = TableProperties::decode(&block).unwrap_err();
        assert!(e.what.contains("missing property"), "{}", e.what);
    }
}
