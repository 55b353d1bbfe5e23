//! Block compression: the codecs a data block may be stored with, their
//! block type bytes, and the text form (`none`, `lz4`, `zstd:LEVEL`) that the
//! options, the `OPTIONS` file and the command line use.
//!
//! A compressed block's stored payload is (docs/format.md §3):
//!
//! ```text
//! varint32 raw_len    length of the block once decompressed
//! codec bytes         one LZ4 block (type 1) or one zstd frame (type 2)
//! ```
//!
//! The writer keeps a block compressed only if that saves at least an eighth
//! of it (RocksDB's rule); otherwise it stores the raw bytes with type 0.
//! Before allocating, the reader checks `raw_len` against the table's largest
//! raw data block (the `data.raw_max` property) and against the most the
//! stored bytes can decode to with the block's codec (`max_expansion`); it
//! then reserves the buffer fallibly (a failed allocation is an error, not an
//! abort), decompresses into exactly `raw_len` bytes, and requires the codec
//! to fill them. A damaged or crafted block can neither make it allocate far
//! beyond the bytes it read nor pass as a shorter or longer one.

use std::fmt;

use crate::coding::{get_varint32, put_varint32};

/// Block type byte of a block stored as is.
pub const BLOCK_TYPE_NONE: u8 = 0;
/// Block type byte of an LZ4-compressed block.
pub const BLOCK_TYPE_LZ4: u8 = 1;
/// Block type byte of a zstd-compressed block.
pub const BLOCK_TYPE_ZSTD: u8 = 2;

/// The zstd level of a plain `zstd` spec (zstd's own default).
pub const ZSTD_DEFAULT_LEVEL: i32 = 3;
/// The zstd levels a spec may name.
pub const ZSTD_LEVELS: std::ops::RangeInclusive<i32> = 1..=22;

/// How a table's data blocks are compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Stored as is.
    #[default]
    None,
    /// LZ4 block format (`lz4_flex`, pure Rust): fast to compress and
    /// decompress, a moderate ratio.
    Lz4,
    /// Zstandard at this level (1..=22): slower, a better ratio. Needs the
    /// crate's `zstd` feature (on by default).
    Zstd(i32),
}

impl Compression {
    /// Every codec name a spec may start with.
    pub const NAMES: [&'static str; 3] = ["none", "lz4", "zstd"];

    /// The codec's name: `none`, `lz4` or `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd(_) => "zstd",
        }
    }

    /// The block type byte of blocks this codec compressed.
    pub fn block_type(self) -> u8 {
        match self {
            Compression::None => BLOCK_TYPE_NONE,
            Compression::Lz4 => BLOCK_TYPE_LZ4,
            Compression::Zstd(_) => BLOCK_TYPE_ZSTD,
        }
    }

    /// Whether this build can write (and read) it: zstd needs the `zstd`
    /// feature.
    pub fn is_available(self) -> bool {
        !matches!(self, Compression::Zstd(_)) || cfg!(feature = "zstd")
    }

    /// Parses a spec: `none`, `lz4`, `zstd` (level 3) or `zstd:LEVEL`
    /// (1..=22). Surrounding spaces are ignored; anything else is an error
    /// naming what is wrong.
    ///
    /// ```
    /// use bloomlsm::sst::Compression;
    /// assert_eq!(Compression::parse("zstd:9"), Ok(Compression::Zstd(9)));
    /// assert_eq!(Compression::parse("lz4").unwrap().to_string(), "lz4");
    /// assert!(Compression::parse("zstd:0").is_err());
    /// ```
    pub fn parse(spec: &str) -> Result<Compression, String> {
        let spec = spec.trim();
        match spec.split_once(':') {
            None => match spec {
                "none" => Ok(Compression::None),
                "lz4" => Ok(Compression::Lz4),
                "zstd" => Ok(Compression::Zstd(ZSTD_DEFAULT_LEVEL)),
                _ => Err(format!(
                    "unknown compression {spec:?} (expected none, lz4, zstd or zstd:LEVEL)"
                )),
            },
            Some(("zstd", level)) => match level.parse::<i32>() {
                Ok(l) if ZSTD_LEVELS.contains(&l) => Ok(Compression::Zstd(l)),
                _ => Err(format!(
                    "the zstd level in {spec:?} must be a whole number in {}..={}",
                    ZSTD_LEVELS.start(),
                    ZSTD_LEVELS.end()
                )),
            },
            Some(_) => Err(format!(
                "unknown compression {spec:?} (only zstd takes a level: zstd:LEVEL)"
            )),
        }
    }
}

impl fmt::Display for Compression {
    /// The spec [`Compression::parse`] reads back: `none`, `lz4`, `zstd:3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compression::Zstd(l) => write!(f, "zstd:{l}"),
            c => f.write_str(c.name()),
        }
    }
}

/// The codec name of a block type byte, `None` if unknown.
pub fn block_type_name(block_type: u8) -> Option<&'static str> {
    match block_type {
        BLOCK_TYPE_NONE => Some("none"),
        BLOCK_TYPE_LZ4 => Some("lz4"),
        BLOCK_TYPE_ZSTD => Some("zstd"),
        _ => None,
    }
}

/// Compresses blocks with one codec, reusing its buffers (and zstd's
/// context) from block to block. One per table builder.
pub struct Compressor {
    compression: Compression,
    out: Vec<u8>,
    #[cfg(feature = "zstd")]
    zstd: Option<(zstd::bulk::Compressor<'static>, Vec<u8>)>,
}

impl fmt::Debug for Compressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compressor")
            .field("compression", &self.compression)
            .finish()
    }
}

impl Compressor {
    /// A compressor for `compression`; an error if this build lacks the
    /// codec (zstd without the `zstd` feature) or zstd refuses the level.
    pub fn new(compression: Compression) -> Result<Compressor, String> {
        if !compression.is_available() {
            return Err(format!(
                "{compression} compression needs bloomlsm's `zstd` feature, which this build lacks"
            ));
        }
        #[cfg(feature = "zstd")]
        let zstd = match compression {
            Compression::Zstd(level) => Some((
                zstd::bulk::Compressor::new(level)
                    .map_err(|e| format!("zstd level {level}: {e}"))?,
                Vec::new(),
            )),
            _ => None,
        };
        Ok(Compressor {
            compression,
            out: Vec::new(),
            #[cfg(feature = "zstd")]
            zstd,
        })
    }

    /// The codec.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The bytes to store for the block `raw` and their block type: the
    /// compressed form (`varint32 raw_len` + codec bytes) if it is at least
    /// an eighth smaller than `raw`, else `raw` itself with type 0.
    pub fn compress<'a>(&'a mut self, raw: &'a [u8]) -> (&'a [u8], u8) {
        let Ok(raw_len) = u32::try_from(raw.len()) else {
            return (raw, BLOCK_TYPE_NONE);
        };
        self.out.clear();
        put_varint32(&mut self.out, raw_len);
        let prefix = self.out.len();
        let ok = match self.compression {
            Compression::None => false,
            Compression::Lz4 => {
                let bound = lz4_flex::block::get_maximum_output_size(raw.len());
                self.out.resize(prefix + bound, 0);
                match lz4_flex::block::compress_into(raw, &mut self.out[prefix..]) {
                    Ok(n) => {
                        self.out.truncate(prefix + n);
                        true
                    }
                    Err(_) => false,
                }
            }
            #[cfg(feature = "zstd")]
            Compression::Zstd(_) => {
                let (cx, buf) = self.zstd.as_mut().expect("zstd context made in new");
                buf.clear();
                buf.reserve(zstd::zstd_safe::compress_bound(raw.len()));
                match cx.compress_to_buffer(raw, buf) {
                    Ok(_) => {
                        self.out.extend_from_slice(buf);
                        true
                    }
                    Err(_) => false,
                }
            }
            #[cfg(not(feature = "zstd"))]
            Compression::Zstd(_) => false,
        };
        if ok && self.out.len() < raw.len() - raw.len() / 8 {
            (&self.out, self.compression.block_type())
        } else {
            (raw, BLOCK_TYPE_NONE)
        }
    }
}

/// Decompresses the stored payload of a block whose type byte is
/// `block_type` (1 = LZ4, 2 = zstd), refusing a declared length above
/// `max_raw_len` before allocating anything. Errors say what is wrong (the
/// caller names the file and offset).
pub fn decompress(block_type: u8, stored: &[u8], max_raw_len: u64) -> Result<Vec<u8>, String> {
    let name = block_type_name(block_type).filter(|_| block_type != BLOCK_TYPE_NONE);
    let Some(name) = name else {
        return Err(format!("unknown block type {block_type}"));
    };
    let (raw_len, n) = get_varint32(stored)
        .ok_or_else(|| format!("{name} block: bad uncompressed-length varint"))?;
    if u64::from(raw_len) > max_raw_len {
        return Err(format!(
            "{name} block declares {raw_len} uncompressed bytes, more than the table's largest block ({max_raw_len})"
        ));
    }
    let src = &stored[n..];
    let ceiling = max_expansion(block_type, src.len());
    if u64::from(raw_len) > ceiling {
        return Err(format!(
            "{name} block declares {raw_len} uncompressed bytes, more than its {} stored bytes can decode to ({ceiling})",
            src.len()
        ));
    }
    let raw_len = raw_len as usize;
    let mut out = Vec::new();
    out.try_reserve_exact(raw_len)
        .map_err(|e| format!("{name} block of {raw_len} bytes: {e}"))?;
    let got = match block_type {
        BLOCK_TYPE_LZ4 => {
            out.resize(raw_len, 0);
            lz4_flex::block::decompress_into(src, &mut out)
                .map_err(|e| format!("lz4 block does not decompress: {e}"))?
        }
        _ => zstd_decompress(src, &mut out)?,
    };
    if got != raw_len {
        return Err(format!(
            "{name} block decompresses to {got} bytes, its header says {raw_len}"
        ));
    }
    Ok(out)
}

/// The most bytes `stored_len` bytes of one block of codec `block_type` can
/// decode to (1 = LZ4, 2 = zstd). In the LZ4 block format a sequence's bytes
/// give at most 255 output bytes each (a match length grows by 255 per
/// extension byte). A zstd frame regenerates at most 128 KiB per block
/// (`Block_Maximum_Size`), and a block takes at least 4 bytes (a 3-byte
/// header and one RLE byte), so at most 32,768 output bytes per input byte.
fn max_expansion(block_type: u8, stored_len: usize) -> u64 {
    let per_byte = if block_type == BLOCK_TYPE_LZ4 {
        255
    } else {
        32 << 10
    };
    (stored_len as u64).saturating_mul(per_byte)
}

#[cfg(feature = "zstd")]
fn zstd_decompress(src: &[u8], out: &mut Vec<u8>) -> Result<usize, String> {
    use std::cell::RefCell;
    thread_local! {
        // A decompression context per thread: creating one per block would
        // cost more than decompressing a 4 KiB block.
        static DCTX: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
            const { RefCell::new(None) };
    }
    DCTX.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = Some(
                zstd::bulk::Decompressor::new()
                    .map_err(|e| format!("zstd decompression context: {e}"))?,
            );
        }
        let d = d.as_mut().expect("set above");
        // The empty Vec's capacity, reserved and checked by the caller,
        // bounds the output.
        d.decompress_to_buffer(src, out)
            .map_err(|e| format!("zstd block does not decompress: {e}"))
    })
}

#[cfg(not(feature = "zstd"))]
fn zstd_decompress(_src: &[u8], _out: &mut Vec<u8>) -> Result<usize, String> {
    Err("zstd block: this build of bloomlsm lacks the `zstd` feature and cannot read it".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block-like text: repeated structure with varying numbers.
    fn sample(n: usize) -> Vec<u8> {
        let mut v = Vec::new();
        let mut i = 0u64;
        while v.len() < n {
            v.extend_from_slice(format!("user{i:08}=value-{}-", i * 7919 % 1000).as_bytes());
            i += 1;
        }
        v.truncate(n);
        v
    }

    fn all() -> Vec<Compression> {
        let mut v = vec![Compression::Lz4];
        if cfg!(feature = "zstd") {
            v.extend([
                Compression::Zstd(1),
                Compression::Zstd(3),
                Compression::Zstd(19),
            ]);
        }
        v
    }

    /// The codecs' best case, long runs of one byte, stays within
    /// [`max_expansion`]: an honest block is never refused by it.
    #[test]
    fn runs_of_one_byte_decode_within_the_expansion_bound() {
        for c in all() {
            let mut cx = Compressor::new(c).unwrap();
            for n in [4096usize, 1 << 20, 8 << 20] {
                let raw = vec![0u8; n];
                let (stored, t) = cx.compress(&raw);
                assert_eq!(t, c.block_type(), "{c} {n}");
                let stored = stored.to_vec();
                let (_, len) = get_varint32(&stored).unwrap();
                let ratio = n as f64 / (stored.len() - len) as f64;
                assert!(
                    (n as u64) <= max_expansion(t, stored.len() - len),
                    "{c} {n}: ratio {ratio}"
                );
                assert_eq!(decompress(t, &stored, n as u64).unwrap(), raw, "{c} {n}");
            }
        }
    }

    #[test]
    fn round_trip_per_codec() {
        for c in all() {
            let mut cx = Compressor::new(c).unwrap();
            for n in [0usize, 1, 15, 100, 4096, 70_000] {
                let raw = sample(n);
                let (stored, t) = cx.compress(&raw);
                let stored = stored.to_vec();
                if n >= 100 {
                    assert_eq!(t, c.block_type(), "{c} {n} should compress");
                    assert!(stored.len() < raw.len() * 7 / 8, "{c} {n}");
                }
                if t == BLOCK_TYPE_NONE {
                    assert_eq!(stored, raw);
                } else {
                    let back = decompress(t, &stored, n as u64).unwrap();
                    assert_eq!(back, raw, "{c} {n}");
                    // A tighter bound than the declared length is refused.
                    if n > 0 {
                        assert!(decompress(t, &stored, n as u64 - 1).is_err());
                    }
                }
            }
        }
    }

    #[test]
    fn incompressible_blocks_are_stored_raw() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let raw: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for c in all() {
            let mut cx = Compressor::new(c).unwrap();
            let (stored, t) = cx.compress(&raw);
            assert_eq!((stored, t), (&raw[..], BLOCK_TYPE_NONE), "{c}");
        }
    }

    #[test]
    fn damaged_payloads_are_errors() {
        for c in all() {
            let raw = sample(4096);
            let mut cx = Compressor::new(c).unwrap();
            let (stored, t) = cx.compress(&raw);
            let stored = stored.to_vec();
            for i in 0..stored.len() {
                for bit in [0x01u8, 0x80] {
                    let mut bad = stored.clone();
                    bad[i] ^= bit;
                    // Never a panic; either an error or exactly 4096 bytes
                    // (a flip in literal bytes changes content, which only
                    // the block checksum can catch).
                    if let Ok(v) = decompress(t, &bad, 4096) {
                        assert_eq!(v.len(), 4096);
                    }
                }
            }
            for cut in 0..stored.len() {
                let r = decompress(t, &stored[..cut], 4096);
                assert!(r.is_err(), "{c}: cut at {cut} decompressed");
            }
            // A length prefix over the bound is refused before allocating.
            let mut huge = Vec::new();
            put_varint32(&mut huge, u32::MAX);
            huge.extend_from_slice(&stored[2..]);
            let e = decompress(t, &huge, 1 << 20).unwrap_err();
            assert!(e.contains("more than the table's largest block"), "{e}");
            // Within the table's bound, but more than the stored bytes can
            // decode to with this codec: refused before allocating too.
            let e = decompress(t, &huge, u64::MAX).unwrap_err();
            assert!(e.contains("stored bytes can decode to"), "{e}");
            let mut tight = Vec::new();
            let ceiling = max_expansion(t, stored.len() - 2);
            put_varint32(&mut tight, u32::try_from(ceiling + 1).unwrap());
            tight.extend_from_slice(&stored[2..]);
            let e = decompress(t, &tight, u64::MAX).unwrap_err();
            assert!(e.contains("stored bytes can decode to"), "{e}");
        }
        assert!(
            decompress(9, b"\x01x", 10)
                .unwrap_err()
                .contains("unknown block type 9")
        );
        assert!(decompress(BLOCK_TYPE_NONE, b"\x01x", 10).is_err());
    }

    #[test]
    fn specs_parse_and_print() {
        for (s, c) in [
            ("none", Compression::None),
            ("lz4", Compression::Lz4),
            ("zstd", Compression::Zstd(3)),
            (" zstd:19 ", Compression::Zstd(19)),
            ("zstd:1", Compression::Zstd(1)),
        ] {
            assert_eq!(Compression::parse(s), Ok(c), "{s}");
            assert_eq!(Compression::parse(&c.to_string()), Ok(c));
        }
        for bad in [
            "", "LZ4", "lz4:1", "zstd:", "zstd:0", "zstd:23", "zstd:x", "gzip",
        ] {
            assert!(Compression::parse(bad).is_err(), "{bad:?}");
        }
    }
}
