//! Low-level pieces of the SSTable format: varints, block handles, the 5-byte
//! block trailer and its offset-mixed checksum, the fixed-size footer, the
//! key order a table is sorted by, and the metaindex names of the meta blocks.
//! `docs/format.md` describes every byte.

use std::cmp::Ordering;

use crate::key;

/// Magic number at the very end of every table: the bytes `b"bloomSST"`.
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"bloomSST");
/// The newest table format version this build writes and reads: 4, the
/// version of a table whose index is partitioned (two-level); its filter may
/// be whole or partitioned, and its data blocks compressed, as in version 2.
pub const FORMAT_VERSION: u32 = 4;
/// The format version of a table whose filter is partitioned and whose
/// index is one block (its data blocks may be compressed, as in version 2).
pub const FORMAT_VERSION_PARTITIONED_FILTER: u32 = 3;
/// The format version of a table built with compression and a whole filter
/// block (its data blocks may be stored compressed, and its properties
/// record how).
pub const FORMAT_VERSION_COMPRESSED: u32 = 2;
/// The format version of a table without compressed blocks (every block
/// type 0), which builds from before compression read too. This build writes
/// it for tables built with [`Compression::None`](super::Compression::None).
pub const FORMAT_VERSION_UNCOMPRESSED: u32 = 1;
/// Size of the block trailer: 1 type byte + 4 checksum bytes.
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Block type byte of an uncompressed block (see [`super::compression`] for
/// the others).
pub const BLOCK_TYPE_UNCOMPRESSED: u8 = 0;
/// Size of the fixed footer at the end of every table.
pub const FOOTER_LEN: usize = 52;
/// Longest varint encoding of a [`BlockHandle`] (two varint64s).
pub const MAX_HANDLE_LEN: usize = 20;

// ---------------------------------------------------------------- metaindex

/// Metaindex key of the properties block.
pub const META_PROPERTIES: &str = "properties";
/// Metaindex key of the range-tombstone block (store tables with range
/// deletions only; `docs/format.md` §4.5).
pub const META_RANGE_TOMBSTONES: &str = "range_tombstones";
/// Prefix of the metaindex key of the filter block (`filter.<policy name>`).
pub const META_FILTER_PREFIX: &str = "filter.";
/// Prefix of the metaindex key of a partitioned filter's partition index
/// block (`filter_partitions.<policy name>`, format version 3).
pub const META_FILTER_PARTITIONS_PREFIX: &str = "filter_partitions.";
/// Metaindex key of the prefix filter block (a table built with a prefix
/// extractor).
pub const META_PREFIX_FILTER: &str = "prefix_filter";
/// Metaindex key of the range filter block (a table built with range filter
/// bits per key; `docs/format.md` §7b).
pub const META_RANGE_FILTER: &str = "range_filter";
/// The seed of every table's range filter hash: fixed, so that a table's
/// bytes follow from its keys and options alone. The hash's coefficients are
/// stored in the block, so a reader never needs the seed.
pub const RANGE_FILTER_SEED: u64 = 0x6772_6166_6974_6531;

// ---------------------------------------------------------------- varints

pub(crate) use crate::coding::{get_varint32, get_varint64, put_varint32, put_varint64};

// ---------------------------------------------------------------- handles

/// Where a block lives: its offset in the file and the size of its payload
/// (the 5-byte trailer that follows is not counted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockHandle {
    /// File offset of the first payload byte.
    pub offset: u64,
    /// Payload length in bytes, excluding the trailer.
    pub size: u64,
}

impl BlockHandle {
    /// A handle for `size` payload bytes at `offset`.
    pub fn new(offset: u64, size: u64) -> Self {
        BlockHandle { offset, size }
    }

    /// Appends the encoding: `varint64(offset) varint64(size)`.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        put_varint64(out, self.offset);
        put_varint64(out, self.size);
    }

    /// The encoding as a fresh vector.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(MAX_HANDLE_LEN);
        self.encode_to(&mut v);
        v
    }

    /// Decodes a handle at the start of `buf`: `(handle, bytes used)`.
    pub fn decode(buf: &[u8]) -> Option<(BlockHandle, usize)> {
        let (offset, a) = get_varint64(buf)?;
        let (size, b) = get_varint64(&buf[a..])?;
        Some((BlockHandle { offset, size }, a + b))
    }

    /// Decodes a handle that must fill `buf` exactly (an index or metaindex value).
    pub fn decode_exact(buf: &[u8]) -> Option<BlockHandle> {
        match Self::decode(buf)? {
            (h, n) if n == buf.len() => Some(h),
            _ => None,
        }
    }

    /// Offset one past the block's trailer, `None` on overflow.
    pub fn end_with_trailer(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

// ---------------------------------------------------------------- checksums

/// The checksum algorithm of a file, named by one byte in the footer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ChecksumType {
    /// CRC-32 (IEEE polynomial, as computed by `crc32fast`). The default.
    #[default]
    Crc32 = 1,
    /// The low 32 bits of XXH3-64 (seed 0).
    Xxh3 = 2,
}

impl ChecksumType {
    /// The footer byte for an algorithm.
    pub fn to_byte(self) -> u8 {
        self as u8
    }

    /// The algorithm for a footer byte; `None` if unknown.
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            1 => Some(ChecksumType::Crc32),
            2 => Some(ChecksumType::Xxh3),
            _ => None,
        }
    }

    /// A stable display name (`crc32` or `xxh3`).
    pub fn name(self) -> &'static str {
        match self {
            ChecksumType::Crc32 => "crc32",
            ChecksumType::Xxh3 => "xxh3",
        }
    }

    /// The raw checksum of `parts` concatenated (no offset mixing).
    pub fn checksum(self, parts: &[&[u8]]) -> u32 {
        match self {
            ChecksumType::Crc32 => {
                let mut h = crc32fast::Hasher::new();
                for p in parts {
                    h.update(p);
                }
                h.finalize()
            }
            ChecksumType::Xxh3 => {
                let mut h = xxhash_rust::xxh3::Xxh3::new();
                for p in parts {
                    h.update(p);
                }
                h.digest() as u32
            }
        }
    }

    /// The value stored in a block trailer for `payload` and `block_type`
    /// placed at file offset `offset`: `checksum(payload ++ [type]) ^ mix(offset)`.
    pub fn block_checksum(self, payload: &[u8], block_type: u8, offset: u64) -> u32 {
        self.checksum(&[payload, &[block_type]]) ^ offset_mix(offset)
    }
}

/// The per-offset value XOR-ed into every stored checksum (the "context
/// checksum" idea of RocksDB format 6): a block that is intact but sits at the
/// wrong offset fails verification.
///
/// `mix(o) = (lo32(o) + hi32(o)) * 0x9E3779B9 (mod 2^32)`. Multiplying by an
/// odd constant is a bijection on `u32`, so any two distinct offsets below
/// 4 GiB get distinct mixes; `mix(0) = 0`.
#[inline]
pub fn offset_mix(offset: u64) -> u32 {
    (offset as u32)
        .wrapping_add((offset >> 32) as u32)
        .wrapping_mul(0x9E37_79B9)
}

/// Builds the 5-byte trailer of a block written at `offset`.
pub fn block_trailer(
    checksum: ChecksumType,
    payload: &[u8],
    block_type: u8,
    offset: u64,
) -> [u8; BLOCK_TRAILER_LEN] {
    let c = checksum.block_checksum(payload, block_type, offset);
    let mut t = [0u8; BLOCK_TRAILER_LEN];
    t[0] = block_type;
    t[1..].copy_from_slice(&c.to_le_bytes());
    t
}

/// Checks a block read from `offset` (`raw` = payload ++ trailer). Returns
/// the payload length and the block type, or what is wrong with it. Type 0
/// is always accepted; the compressed types (1 = LZ4, 2 = zstd) only if
/// `compressed_ok` (a format version 2 table); any other type is an error.
pub fn verify_block(
    checksum: ChecksumType,
    raw: &[u8],
    offset: u64,
    compressed_ok: bool,
) -> std::result::Result<(usize, u8), String> {
    let n = raw
        .len()
        .checked_sub(BLOCK_TRAILER_LEN)
        .ok_or_else(|| format!("block of {} bytes is shorter than its trailer", raw.len()))?;
    let (payload, trailer) = raw.split_at(n);
    let block_type = trailer[0];
    let stored = u32::from_le_bytes(trailer[1..5].try_into().expect("4 bytes"));
    let actual = checksum.block_checksum(payload, block_type, offset);
    if stored != actual {
        return Err(format!(
            "block checksum mismatch ({}): stored {stored:#010x}, computed {actual:#010x}",
            checksum.name()
        ));
    }
    // Checked after the checksum so that a flipped type byte reads as a checksum
    // error, and a genuinely unknown type (from a future writer) as this.
    let known = block_type == BLOCK_TYPE_UNCOMPRESSED
        || (compressed_ok && super::compression::block_type_name(block_type).is_some());
    if !known {
        return Err(format!("unknown block type {block_type}"));
    }
    Ok((n, block_type))
}

// ---------------------------------------------------------------- footer

/// The fixed 52-byte footer that ends every table.
///
/// ```text
///  0  u64 LE  metaindex handle offset
///  8  u64 LE  metaindex handle size
/// 16  u64 LE  index handle offset
/// 24  u64 LE  index handle size
/// 32  u8      checksum type (1 = crc32, 2 = xxh3)
/// 33  [u8;3]  reserved, zero
/// 36  u32 LE  format version
/// 40  u32 LE  checksum(bytes 0..40) ^ mix(footer offset)
/// 44  u64 LE  magic "bloomSST"
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    /// Handle of the metaindex block.
    pub metaindex: BlockHandle,
    /// Handle of the index block.
    pub index: BlockHandle,
    /// The file's checksum algorithm.
    pub checksum: ChecksumType,
    /// Table format version.
    pub format_version: u32,
}

impl Footer {
    /// Encodes the footer that will be written at file offset `offset`.
    pub fn encode(&self, offset: u64) -> [u8; FOOTER_LEN] {
        let mut f = [0u8; FOOTER_LEN];
        f[0..8].copy_from_slice(&self.metaindex.offset.to_le_bytes());
        f[8..16].copy_from_slice(&self.metaindex.size.to_le_bytes());
        f[16..24].copy_from_slice(&self.index.offset.to_le_bytes());
        f[24..32].copy_from_slice(&self.index.size.to_le_bytes());
        f[32] = self.checksum.to_byte();
        f[36..40].copy_from_slice(&self.format_version.to_le_bytes());
        let c = self.checksum.checksum(&[&f[..40]]) ^ offset_mix(offset);
        f[40..44].copy_from_slice(&c.to_le_bytes());
        f[44..52].copy_from_slice(&TABLE_MAGIC.to_le_bytes());
        f
    }

    /// Decodes and verifies a footer read from file offset `offset`. On error
    /// returns `(offset within the footer, what)`.
    pub fn decode(f: &[u8; FOOTER_LEN], offset: u64) -> std::result::Result<Footer, (u64, String)> {
        let u64_at = |i: usize| u64::from_le_bytes(f[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(f[i..i + 4].try_into().expect("4 bytes"));
        let magic = u64_at(44);
        if magic != TABLE_MAGIC {
            return Err((44, format!("bad magic number {magic:#018x}")));
        }
        let format_version = u32_at(36);
        if !(FORMAT_VERSION_UNCOMPRESSED..=FORMAT_VERSION).contains(&format_version) {
            return Err((36, format!("unknown table format version {format_version}")));
        }
        let checksum = ChecksumType::from_byte(f[32])
            .ok_or_else(|| (32, format!("unknown checksum type {}", f[32])))?;
        let stored = u32_at(40);
        let actual = checksum.checksum(&[&f[..40]]) ^ offset_mix(offset);
        if stored != actual {
            return Err((40, "footer checksum mismatch".to_string()));
        }
        if f[33..36] != [0, 0, 0] {
            return Err((33, "reserved footer bytes are not zero".to_string()));
        }
        Ok(Footer {
            metaindex: BlockHandle::new(u64_at(0), u64_at(8)),
            index: BlockHandle::new(u64_at(16), u64_at(24)),
            checksum,
            format_version,
        })
    }
}

// ---------------------------------------------------------------- key order

/// The order a table's keys are sorted in, recorded in its properties (like
/// LevelDB's comparator name).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KeyFormat {
    /// Bytewise order; the user key is the whole key.
    #[default]
    Plain,
    /// Internal keys ([`InternalKey`](super::InternalKey)): user key ascending, then the 8-byte
    /// trailer descending; the user key is all but the last 8 bytes.
    Internal,
}

impl KeyFormat {
    /// The name stored in the `key.format` property.
    pub fn name(self) -> &'static str {
        match self {
            KeyFormat::Plain => "plain",
            KeyFormat::Internal => "internal",
        }
    }

    /// Parses a stored name.
    pub fn from_name(name: &[u8]) -> Option<Self> {
        match name {
            b"plain" => Some(KeyFormat::Plain),
            b"internal" => Some(KeyFormat::Internal),
            _ => None,
        }
    }

    /// Compares two keys in this order.
    #[inline]
    pub fn compare(self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            KeyFormat::Plain => a.cmp(b),
            KeyFormat::Internal => key::compare_internal(a, b),
        }
    }

    /// The user-key part of a key (what the filter is built over).
    #[inline]
    pub fn user_key(self, k: &[u8]) -> &[u8] {
        match self {
            KeyFormat::Plain => k,
            KeyFormat::Internal => key::user_key(k),
        }
    }
}

/// A key for error messages: printable ASCII kept, other bytes escaped, long
/// keys cut.
pub(crate) fn show_key(k: &[u8]) -> String {
    let cut = &k[..k.len().min(64)];
    let mut s = cut.escape_ascii().to_string();
    if k.len() > cut.len() {
        s.push_str(&format!("...({} bytes)", k.len()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_roundtrip() {
        let h = BlockHandle::new(123_456_789, 4096);
        let e = h.encode();
        assert_eq!(BlockHandle::decode(&e), Some((h, e.len())));
        assert_eq!(BlockHandle::decode_exact(&e), Some(h));
        let mut longer = e.clone();
        longer.push(0);
        assert_eq!(BlockHandle::decode_exact(&longer), None);
        assert_eq!(BlockHandle::decode(&e[..e.len() - 1]), None);
        let max = BlockHandle::new(u64::MAX, u64::MAX).encode();
        assert_eq!(max.len(), MAX_HANDLE_LEN);
        assert_eq!(BlockHandle::new(u64::MAX, 1).end_with_trailer(), None);
    }

    #[test]
    fn checksum_detects_flips_and_moves() {
        for ct in [ChecksumType::Crc32, ChecksumType::Xxh3] {
            let payload = b"some block payload".to_vec();
            let mut raw = payload.clone();
            raw.extend_from_slice(&block_trailer(ct, &payload, 0, 4096));
            assert_eq!(
                verify_block(ct, &raw, 4096, false),
                Ok((payload.len(), BLOCK_TYPE_UNCOMPRESSED))
            );
            // The same bytes copied to another offset fail.
            for other in [0u64, 4095, 4097, 8192, 1 << 32] {
                assert!(
                    verify_block(ct, &raw, other, true).is_err(),
                    "{ct:?} at {other}"
                );
            }
            for i in 0..raw.len() {
                let mut bad = raw.clone();
                bad[i] ^= 0x01;
                assert!(
                    verify_block(ct, &bad, 4096, true).is_err(),
                    "{ct:?} flip {i}"
                );
            }
            assert!(verify_block(ct, &raw[..4], 4096, true).is_err());
        }
        // Distinct offsets below 4 GiB have distinct mixes (spot check).
        assert_ne!(offset_mix(1), offset_mix(2));
        assert_eq!(offset_mix(0), 0);
    }

    #[test]
    fn unknown_block_type_with_valid_checksum_is_reported() {
        let ct = ChecksumType::Crc32;
        let mut raw = b"abc".to_vec();
        raw.extend_from_slice(&block_trailer(ct, b"abc", 7, 10));
        let e = verify_block(ct, &raw, 10, true).unwrap_err();
        assert!(e.contains("unknown block type 7"), "{e}");
        // The compressed types are known only in a version 2 table.
        let mut raw = b"abc".to_vec();
        raw.extend_from_slice(&block_trailer(ct, b"abc", 1, 10));
        assert_eq!(verify_block(ct, &raw, 10, true), Ok((3, 1)));
        let e = verify_block(ct, &raw, 10, false).unwrap_err();
        assert!(e.contains("unknown block type 1"), "{e}");
    }

    #[test]
    fn footer_roundtrip_and_corruption() {
        let f = Footer {
            metaindex: BlockHandle::new(1000, 40),
            index: BlockHandle::new(900, 95),
            checksum: ChecksumType::Xxh3,
            format_version: FORMAT_VERSION,
        };
        let bytes = f.encode(2000);
        assert_eq!(Footer::decode(&bytes, 2000), Ok(f));
        assert!(Footer::decode(&bytes, 2001).is_err(), "moved footer");
        for i in 0..FOOTER_LEN {
            let mut bad = bytes;
            bad[i] ^= 0x01;
            assert!(Footer::decode(&bad, 2000).is_err(), "flip at {i}");
        }
        let mut bad = bytes;
        bad[36] = 9;
        assert_eq!(Footer::decode(&bad, 2000).unwrap_err().0, 36);
        let mut bad = bytes;
        bad[32] = 9;
        assert_eq!(Footer::decode(&bad, 2000).unwrap_err().0, 32);
        assert_eq!(&bytes[44..], b"bloomSST");
    }

    #[test]
    fn key_formats_order() {
        use crate::key::{ValueKind, make_internal_key};
        let a5 = make_internal_key(b"a", 5, ValueKind::Value);
        let a3 = make_internal_key(b"a", 3, ValueKind::Value);
        assert_eq!(KeyFormat::Internal.compare(&a5, &a3), Ordering::Less);
        assert_eq!(KeyFormat::Plain.compare(&a5, &a3), Ordering::Greater);
        assert_eq!(KeyFormat::Internal.user_key(&a5), b"a");
        assert_eq!(KeyFormat::Plain.user_key(&a5), &a5[..]);
        for kf in [KeyFormat::Plain, KeyFormat::Internal] {
            assert_eq!(KeyFormat::from_name(kf.name().as_bytes()), Some(kf));
        }
    }
}
