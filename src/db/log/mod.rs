//! The record log shared by the write-ahead log and the MANIFEST, modelled on
//! LevelDB's `doc/log_format.md` (byte layout in `docs/format.md (§11–14)`).
//!
//! This file holds the format's constants and checksums; the writer is
//! `writer.rs` ([`LogWriter`]), the reader `reader.rs` ([`LogReader`]).
//!
//! A log is a sequence of 32 KiB blocks. A *logical* record (one WAL batch, one
//! version edit) is stored as one or more *physical* records, none of which
//! crosses a block boundary:
//!
//! ```text
//! physical record := checksum: u32 LE | length: u16 LE | type: u8 | payload[length]
//! checksum        := mask(crc32(type ++ payload))          (CRC-32/ISO-HDLC, crc32fast)
//! type            := 1 FULL | 2 FIRST | 3 MIDDLE | 4 LAST
//! ```
//!
//! When fewer than 7 bytes (one header) remain in a block they are zero-filled
//! and the next record starts in the next block, so every block that exists in
//! the file starts with a header. That is what lets a reader resynchronise.
//!
//! # Torn tail versus corruption
//!
//! A crash mid-append leaves an incomplete or garbled record at the very end of
//! the file: a *torn tail*. Damage anywhere else is *corruption* and may hide
//! acknowledged data. The reader tells them apart by looking ahead: when it meets
//! a bad physical record (short header, unknown type, length past the block or
//! file end, checksum mismatch, orphan MIDDLE/LAST fragment, or a fragmented
//! record cut off by a new one) at offset `x`, it searches the rest of the file
//! for the start of a *complete, valid logical record* (a FULL record, or a FIRST
//! whose MIDDLE/LAST chain all checks out):
//!
//! - nothing found → everything from the start of the broken logical record to
//!   the end of the file is a torn tail: reported as [`TailDropped`], the read
//!   ends normally;
//! - found at `q` → mid-file corruption: [`crate::Error::Corruption`] naming `x`, or in
//!   salvage mode the bytes `x..q` are skipped, reported as [`Skipped`], and
//!   reading resumes at `q`.
//!
//! The search first trusts the damaged record's own framing (if its length is
//! plausible, a payload bit flip leaves the next record right after it), then
//! scans byte by byte, because a flipped length field hides where the next record
//! starts. Only positions whose type byte says FULL or FIRST are checksummed, so
//! the scan costs little more than reading the bytes.
//!
//! Known limit (shared with LevelDB): a payload that itself contains the byte
//! image of a valid log record can, if the record carrying it is torn, be taken
//! for a later valid record. Then a torn tail is reported as corruption — a
//! false alarm that stops recovery, never silent loss; salvage mode would then
//! hand that embedded image back as a record, which its consumer must validate
//! (WAL batches and version edits are fully validated when decoded).

mod reader;
#[cfg(test)]
mod tests;
mod writer;

pub use reader::{LogReader, Skipped, TailDropped};
pub use writer::LogWriter;

/// Size of a log block.
pub const BLOCK_SIZE: usize = 32 * 1024;
/// Size of a physical record header: checksum (4) + length (2) + type (1).
pub const HEADER_SIZE: usize = 7;

/// Physical record type: a whole logical record.
pub const TYPE_FULL: u8 = 1;
/// Physical record type: first fragment of a logical record.
pub const TYPE_FIRST: u8 = 2;
/// Physical record type: interior fragment.
pub const TYPE_MIDDLE: u8 = 3;
/// Physical record type: last fragment.
pub const TYPE_LAST: u8 = 4;

const MASK_DELTA: u32 = 0xa282_ead8;

/// Masks a CRC as LevelDB does, so that a CRC computed over bytes that embed
/// CRCs does not degenerate: rotate right by 15 bits, add a constant.
#[inline]
pub fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask_crc`].
#[inline]
pub fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// The stored checksum of a physical record: masked CRC-32 over type ++ payload.
#[inline]
pub fn record_crc(kind: u8, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&[kind]);
    h.update(payload);
    mask_crc(h.finalize())
}

/// Offset `p` moved past a block trailer (the < 7 zero bytes at a block's end).
#[inline]
pub(super) fn skip_trailer(p: u64) -> u64 {
    let left = BLOCK_SIZE as u64 - p % BLOCK_SIZE as u64;
    if left < HEADER_SIZE as u64 {
        p + left
    } else {
        p
    }
}
