//! The record log shared by the write-ahead log and the MANIFEST, modelled on
//! LevelDB's `doc/log_format.md` (byte layout in `docs/format.md (§11–14)`).
//!
//! About 28% of this file is its unit tests (the `tests` module at the end);
//! the rest is the one record format's writer and reader (`LogWriter`,
//! `LogReader`).
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
//! - found at `q` → mid-file corruption: [`Error::Corruption`] naming `x`, or in
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

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::{FileSystem, ReadableFile, RealFs, WritableFile};

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
fn skip_trailer(p: u64) -> u64 {
    let left = BLOCK_SIZE as u64 - p % BLOCK_SIZE as u64;
    if left < HEADER_SIZE as u64 {
        p + left
    } else {
        p
    }
}

// ---------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------

/// Appends logical records to a log file.
///
/// Each [`LogWriter::add_record`] encodes the whole record (all fragments and
/// any block padding) into one buffer and hands it to the OS with a single
/// `write_all` before returning: no bytes are held in user space between
/// calls, so a returned record survives the death of the process. Only
/// [`LogWriter::sync`] (fdatasync) makes it survive power loss or an OS crash.
///
/// After any I/O error the writer refuses further writes ([`Error::Poisoned`]):
/// the file may end in a partial record and, after a failed fsync, the kernel
/// may have dropped dirty pages, so neither retrying nor appending is safe.
#[derive(Debug)]
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    /// Offset within the current block where the next header goes.
    block_offset: usize,
    /// Bytes in the file (everything written so far).
    len: u64,
    /// Scratch buffer reused across records.
    buf: Vec<u8>,
    poisoned: Option<Error>,
}

impl LogWriter {
    /// Creates a new, empty log at `path`; fails if the file already exists
    /// (a log is never silently overwritten). The caller syncs the directory
    /// if the file's existence must be durable.
    pub fn create(path: &Path) -> Result<Self> {
        Self::create_in(&RealFs, path)
    }

    /// [`LogWriter::create`] through `fs`.
    pub fn create_in(fs: &dyn FileSystem, path: &Path) -> Result<Self> {
        let file = fs
            .create_new(path)
            .map_err(|e| Error::io(format!("create {}", path.display()), e))?;
        Ok(LogWriter {
            file,
            path: path.to_path_buf(),
            block_offset: 0,
            len: 0,
            buf: Vec::new(),
            poisoned: None,
        })
    }

    /// Reopens an existing log to append after its last valid record.
    /// `valid_len` is [`LogReader::valid_end`] from a read of the whole file:
    /// anything after it (a torn tail) is truncated away and the truncation is
    /// synced first, so new records never follow garbage (which a later read
    /// would rightly call mid-file corruption).
    pub fn reopen(path: &Path, valid_len: u64) -> Result<Self> {
        let ctx = |what: &str| format!("{what} {}", path.display());
        let mut file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io(ctx("reopen"), e))?;
        let cur = file
            .metadata()
            .map_err(|e| Error::io(ctx("stat"), e))?
            .len();
        if valid_len > cur {
            return Err(Error::invalid(format!(
                "reopen {}: valid length {valid_len} exceeds file length {cur}",
                path.display()
            )));
        }
        if valid_len < cur {
            file.set_len(valid_len)
                .map_err(|e| Error::io(ctx("truncate"), e))?;
            file.sync_data().map_err(|e| Error::io(ctx("fsync"), e))?;
        }
        file.seek(SeekFrom::Start(valid_len))
            .map_err(|e| Error::io(ctx("seek"), e))?;
        Ok(LogWriter {
            file: crate::fs::real_writable(file, valid_len),
            path: path.to_path_buf(),
            block_offset: (valid_len % BLOCK_SIZE as u64) as usize,
            len: valid_len,
            buf: Vec::new(),
            poisoned: None,
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes written to the file so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True if nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check_poisoned(&self) -> Result<()> {
        match &self.poisoned {
            Some(why) => Err(Error::poisoned("an earlier log write", why.duplicate())),
            None => Ok(()),
        }
    }

    fn poison(&mut self, what: &str, e: std::io::Error) -> Error {
        let err = Error::io(format!("{what} {}", self.path.display()), e);
        self.poisoned = Some(err.duplicate());
        err
    }

    /// Appends one logical record (any length, including zero) and writes it to
    /// the OS before returning. Not durable against power loss until
    /// [`LogWriter::sync`].
    pub fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        self.check_poisoned()?;
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let mut block_offset = self.block_offset;
        let mut left = payload;
        let mut begin = true;
        loop {
            let leftover = BLOCK_SIZE - block_offset;
            if leftover < HEADER_SIZE {
                // Too small for a header: zero-fill and move to the next block.
                buf.resize(buf.len() + leftover, 0);
                block_offset = 0;
            }
            let avail = BLOCK_SIZE - block_offset - HEADER_SIZE;
            let n = left.len().min(avail);
            let end = n == left.len();
            let kind = match (begin, end) {
                (true, true) => TYPE_FULL,
                (true, false) => TYPE_FIRST,
                (false, false) => TYPE_MIDDLE,
                (false, true) => TYPE_LAST,
            };
            let frag = &left[..n];
            buf.extend_from_slice(&record_crc(kind, frag).to_le_bytes());
            buf.extend_from_slice(&(n as u16).to_le_bytes());
            buf.push(kind);
            buf.extend_from_slice(frag);
            block_offset += HEADER_SIZE + n;
            left = &left[n..];
            begin = false;
            if end {
                break;
            }
        }
        let res = self.file.write_all(&buf);
        let written = buf.len() as u64;
        self.buf = buf;
        if let Err(e) = res {
            return Err(self.poison("append to", e));
        }
        self.block_offset = block_offset;
        self.len += written;
        Ok(())
    }

    /// Nothing is buffered in user space, so this only checks that the writer
    /// is still usable; it exists so callers need not know that.
    pub fn flush(&mut self) -> Result<()> {
        self.check_poisoned()
    }

    /// fdatasync: every record appended so far survives power loss (as far as
    /// the device honours flushes).
    pub fn sync(&mut self) -> Result<()> {
        self.check_poisoned()?;
        if let Err(e) = self.file.sync_data() {
            return Err(self.poison("fdatasync", e));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------

/// A torn tail: the bytes from `offset` to the end of the file held no complete
/// valid record and nothing valid followed them. The normal result of a crash
/// during an append; the read ends there without an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TailDropped {
    /// Start of the incomplete logical record (or garbage).
    pub offset: u64,
    /// Bytes from `offset` to the end of the file.
    pub bytes: u64,
}

/// A damaged region skipped in salvage mode (valid records followed it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Start of the first logical record lost.
    pub offset: u64,
    /// Bytes skipped (from `offset` to the next valid record).
    pub bytes: u64,
    /// What was wrong at `offset`.
    pub reason: String,
}

/// Bytes of one block (a view into a shared buffer).
#[derive(Clone)]
struct BlockRef {
    data: Arc<Vec<u8>>,
    start: usize,
    end: usize,
}

impl Deref for BlockRef {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }
}

enum Source {
    File(Arc<dyn ReadableFile>),
    Mem(Arc<Vec<u8>>),
}

/// Result of examining one physical record.
enum Phys {
    Ok {
        kind: u8,
        block: BlockRef,
        /// Payload range within `block`.
        payload: (usize, usize),
        /// File offset just past the record.
        end: u64,
    },
    Bad {
        why: &'static str,
        /// Where the record ends if its length field is believable.
        framed_end: Option<u64>,
    },
}

/// Number of blocks a file-backed reader keeps.
const CACHE_BLOCKS: usize = 4;

/// Reads logical records back from a log, telling a torn tail from mid-file
/// corruption (see the module docs). Never panics on any input.
pub struct LogReader {
    source: Source,
    path: PathBuf,
    file_len: u64,
    salvage: bool,
    cache: Vec<(u64, BlockRef)>,
    /// Offset of the next physical record (possibly inside a block trailer).
    pos: u64,
    done: bool,
    valid_end: u64,
    last_record_offset: u64,
    tail: Option<TailDropped>,
    skipped: Vec<Skipped>,
}

impl LogReader {
    /// Opens the log at `path`. With `salvage`, mid-file corruption is skipped
    /// and reported ([`LogReader::skipped`]) instead of failing the read.
    pub fn open(path: &Path, salvage: bool) -> Result<Self> {
        Self::open_in(&RealFs, path, salvage)
    }

    /// [`LogReader::open`] through `fs`.
    pub fn open_in(fs: &dyn FileSystem, path: &Path, salvage: bool) -> Result<Self> {
        let file = fs
            .open_read(path)
            .map_err(|e| Error::io(format!("open {}", path.display()), e))?;
        let file_len = file
            .len()
            .map_err(|e| Error::io(format!("stat {}", path.display()), e))?;
        Ok(Self::with_source(
            Source::File(file),
            path,
            file_len,
            salvage,
        ))
    }

    /// Reads a log image held in memory; `name` is used in error reports.
    pub fn from_bytes(name: impl AsRef<Path>, data: Vec<u8>, salvage: bool) -> Self {
        let len = data.len() as u64;
        Self::with_source(Source::Mem(Arc::new(data)), name.as_ref(), len, salvage)
    }

    fn with_source(source: Source, path: &Path, file_len: u64, salvage: bool) -> Self {
        LogReader {
            source,
            path: path.to_path_buf(),
            file_len,
            salvage,
            cache: Vec::with_capacity(CACHE_BLOCKS),
            pos: 0,
            done: false,
            valid_end: 0,
            last_record_offset: 0,
            tail: None,
            skipped: Vec::new(),
        }
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Length of the file when it was opened.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Offset just past the last record returned: where a
    /// [`LogWriter::reopen`] should continue after a torn tail.
    pub fn valid_end(&self) -> u64 {
        self.valid_end
    }

    /// Offset of the first physical record of the last record returned.
    pub fn last_record_offset(&self) -> u64 {
        self.last_record_offset
    }

    /// The torn tail dropped at the end, once the read has ended.
    pub fn tail_dropped(&self) -> Option<TailDropped> {
        self.tail
    }

    /// Regions skipped in salvage mode.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    fn block(&mut self, idx: u64) -> Result<BlockRef> {
        let start = idx * BLOCK_SIZE as u64;
        let len = (self.file_len.saturating_sub(start)).min(BLOCK_SIZE as u64) as usize;
        match &self.source {
            Source::Mem(data) => Ok(BlockRef {
                data: data.clone(),
                start: start as usize,
                end: start as usize + len,
            }),
            Source::File(file) => {
                if let Some((_, b)) = self.cache.iter().find(|(i, _)| *i == idx) {
                    return Ok(b.clone());
                }
                let mut buf = vec![0u8; len];
                file.read_exact_at(&mut buf, start).map_err(|e| {
                    Error::io(format!("read {} at {start}", self.path.display()), e)
                })?;
                let b = BlockRef {
                    data: Arc::new(buf),
                    start: 0,
                    end: len,
                };
                if self.cache.len() == CACHE_BLOCKS {
                    self.cache.remove(0);
                }
                self.cache.push((idx, b.clone()));
                Ok(b)
            }
        }
    }

    /// Examines the physical record at `p` (`p < file_len`, not in a trailer).
    fn phys_at(&mut self, p: u64) -> Result<Phys> {
        let block = self.block(p / BLOCK_SIZE as u64)?;
        let i = (p % BLOCK_SIZE as u64) as usize;
        let bad = |why, framed_end| Ok(Phys::Bad { why, framed_end });
        if i + HEADER_SIZE > block.len() {
            return bad("truncated record header", None);
        }
        let h = &block[i..i + HEADER_SIZE];
        let crc = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let len = u16::from_le_bytes([h[4], h[5]]) as usize;
        let kind = h[6];
        if !(TYPE_FULL..=TYPE_LAST).contains(&kind) {
            return bad("unknown record type", None);
        }
        let (ps, pe) = (i + HEADER_SIZE, i + HEADER_SIZE + len);
        if pe > BLOCK_SIZE {
            return bad("record length crosses the block boundary", None);
        }
        if pe > block.len() {
            return bad("record runs past the end of the file", None);
        }
        let end = p + (HEADER_SIZE + len) as u64;
        if record_crc(kind, &block[ps..pe]) != crc {
            return bad("record checksum mismatch", Some(end));
        }
        Ok(Phys::Ok {
            kind,
            block,
            payload: (ps, pe),
            end,
        })
    }

    /// True if the FIRST fragment ending at `after` is followed by a valid
    /// MIDDLE* LAST chain.
    fn first_completes(&mut self, mut after: u64) -> Result<bool> {
        loop {
            let p = skip_trailer(after);
            if p >= self.file_len {
                return Ok(false);
            }
            match self.phys_at(p)? {
                Phys::Ok {
                    kind: TYPE_MIDDLE,
                    end,
                    ..
                } => after = end,
                Phys::Ok {
                    kind: TYPE_LAST, ..
                } => return Ok(true),
                _ => return Ok(false),
            }
        }
    }

    /// True if a complete valid logical record starts at `p`.
    fn complete_record_at(&mut self, p: u64) -> Result<bool> {
        if p >= self.file_len {
            return Ok(false);
        }
        match self.phys_at(p)? {
            Phys::Ok {
                kind: TYPE_FULL, ..
            } => Ok(true),
            Phys::Ok {
                kind: TYPE_FIRST,
                end,
                ..
            } => self.first_completes(end),
            _ => Ok(false),
        }
    }

    /// The first offset ≥ `from` at which a complete valid logical record
    /// starts, trying `framed` (the damaged record's own end) first.
    fn find_next_record(&mut self, from: u64, framed: Option<u64>) -> Result<Option<u64>> {
        if let Some(f) = framed {
            let f = skip_trailer(f);
            if self.complete_record_at(f)? {
                return Ok(Some(f));
            }
        }
        let mut q = from;
        while q < self.file_len {
            let bidx = q / BLOCK_SIZE as u64;
            let base = bidx * BLOCK_SIZE as u64;
            let block = self.block(bidx)?;
            let mut i = (q - base) as usize;
            while i + HEADER_SIZE <= block.len() {
                // Cheap filter first: only FULL and FIRST can start a record.
                let kind = block[i + 6];
                if kind == TYPE_FULL || kind == TYPE_FIRST {
                    let len = u16::from_le_bytes([block[i + 4], block[i + 5]]) as usize;
                    let pe = i + HEADER_SIZE + len;
                    if pe <= block.len() {
                        let crc = u32::from_le_bytes([
                            block[i],
                            block[i + 1],
                            block[i + 2],
                            block[i + 3],
                        ]);
                        if record_crc(kind, &block[i + HEADER_SIZE..pe]) == crc
                            && (kind == TYPE_FULL || self.first_completes(base + pe as u64)?)
                        {
                            return Ok(Some(base + i as u64));
                        }
                    }
                }
                i += 1;
            }
            q = base + BLOCK_SIZE as u64;
        }
        Ok(None)
    }

    /// Handles a broken logical record starting at `lost`, detected at `at`.
    /// Returns `Ok(true)` to keep reading (salvage), `Ok(false)` at a torn tail.
    fn broken(
        &mut self,
        lost: u64,
        at: u64,
        inclusive: bool,
        framed: Option<u64>,
        why: &str,
    ) -> Result<bool> {
        let from = if inclusive { at } else { at + 1 };
        match self.find_next_record(from, framed)? {
            None => {
                self.tail = Some(TailDropped {
                    offset: lost,
                    bytes: self.file_len - lost,
                });
                self.done = true;
                Ok(false)
            }
            Some(q) if self.salvage => {
                self.skipped.push(Skipped {
                    offset: lost,
                    bytes: q - lost,
                    reason: format!("{why} at offset {at}"),
                });
                self.pos = q;
                Ok(true)
            }
            Some(q) => {
                self.done = true;
                Err(Error::corruption(
                    &self.path,
                    lost,
                    format!(
                        "log {why} at offset {at}, and a valid record follows at offset {q}, \
                         so this is not a torn tail"
                    ),
                ))
            }
        }
    }

    /// The next logical record, or `None` at the end (clean, or after a torn
    /// tail — see [`LogReader::tail_dropped`]). Mid-file corruption is an
    /// [`Error::Corruption`] unless reading in salvage mode.
    pub fn next_record(&mut self) -> Result<Option<Vec<u8>>> {
        if self.done {
            return Ok(None);
        }
        // A fragmented record being assembled: (offset of FIRST, bytes so far).
        let mut frag: Option<(u64, Vec<u8>)> = None;
        loop {
            let p = skip_trailer(self.pos);
            if p >= self.file_len {
                if frag.is_none() && self.pos == self.file_len {
                    self.done = true;
                    return Ok(None);
                }
                // A partial fragmented record, or only block padding, at the end.
                let lost = frag.as_ref().map_or(self.pos, |f| f.0);
                self.broken(lost, self.file_len, true, None, "incomplete record")?;
                return Ok(None);
            }
            let lost = frag.as_ref().map_or(p, |f| f.0);
            match self.phys_at(p)? {
                Phys::Bad { why, framed_end } => {
                    frag = None;
                    if !self.broken(lost, p, false, framed_end, why)? {
                        return Ok(None);
                    }
                }
                Phys::Ok {
                    kind,
                    block,
                    payload: (ps, pe),
                    end,
                } => {
                    let data = &block[ps..pe];
                    match (kind, frag.as_mut()) {
                        (TYPE_FULL | TYPE_FIRST, Some(_)) => {
                            // A new record began before the previous one ended.
                            frag = None;
                            if !self.broken(lost, p, true, None, "fragmented record cut short")? {
                                return Ok(None);
                            }
                        }
                        (TYPE_FULL, None) => {
                            self.pos = end;
                            self.valid_end = end;
                            self.last_record_offset = p;
                            return Ok(Some(data.to_vec()));
                        }
                        (TYPE_FIRST, None) => {
                            frag = Some((p, data.to_vec()));
                            self.pos = end;
                        }
                        (TYPE_MIDDLE, Some((_, buf))) => {
                            buf.extend_from_slice(data);
                            self.pos = end;
                        }
                        (TYPE_LAST, Some(_)) => {
                            let (start, mut buf) = frag.take().expect("fragment present");
                            buf.extend_from_slice(data);
                            self.pos = end;
                            self.valid_end = end;
                            self.last_record_offset = start;
                            return Ok(Some(buf));
                        }
                        _ => {
                            // MIDDLE or LAST without a FIRST.
                            if !self.broken(lost, p, false, Some(end), "orphan record fragment")? {
                                return Ok(None);
                            }
                        }
                    }
                }
            }
        }
    }
}

impl Iterator for LogReader {
    type Item = Result<Vec<u8>>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random bytes (xorshift64*), fixed seed per call.
    fn payload(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..len)
            .map(|_| {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
            })
            .collect()
    }

    fn write_log(path: &Path, records: &[Vec<u8>]) -> Vec<u64> {
        let mut w = LogWriter::create(path).unwrap();
        let mut ends = Vec::new();
        for r in records {
            w.add_record(r).unwrap();
            ends.push(w.len());
        }
        w.sync().unwrap();
        ends
    }

    fn read_all(r: &mut LogReader) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        while let Some(rec) = r.next_record()? {
            out.push(rec);
        }
        Ok(out)
    }

    /// The worked example of `docs/format.md (§11–14)`, byte for byte (CRC computed
    /// independently with Python's zlib).
    #[test]
    fn documented_example_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let mut b = crate::db::WriteBatch::new();
        b.put(b"k", b"v");
        b.set_sequence(7);
        write_log(&path, &[b.encoded().to_vec()]);
        let hex: Vec<String> = std::fs::read(&path)
            .unwrap()
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect();
        assert_eq!(
            hex.join(" "),
            "df a7 74 e0 11 00 01 07 00 00 00 00 00 00 00 01 00 00 00 01 01 6b 01 76"
        );
    }

    #[test]
    fn crc_mask_roundtrip() {
        for c in [0u32, 1, 0xdead_beef, u32::MAX] {
            assert_eq!(unmask_crc(mask_crc(c)), c);
            assert_ne!(mask_crc(c), c);
        }
    }

    #[test]
    fn roundtrip_sizes_across_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let b = BLOCK_SIZE;
        let h = HEADER_SIZE;
        let sizes = [
            0,
            1,
            b - h,     // exactly fills a block
            b - h - 1, // leaves 1 byte: trailer padding
            b - 2 * h, // leaves exactly one header's room
            b - 2 * h + 1,
            b,
            b + 1,
            2 * (b - h),
            100 * 1024,
            0,
            3,
        ];
        let recs: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| payload(n, i as u64))
            .collect();
        write_log(&path, &recs);
        let mut r = LogReader::open(&path, false).unwrap();
        let got = read_all(&mut r).unwrap();
        assert_eq!(got.len(), recs.len());
        for (g, w) in got.iter().zip(&recs) {
            assert_eq!(g, w);
        }
        assert_eq!(r.tail_dropped(), None);
        assert_eq!(r.valid_end(), r.file_len());
        assert!(r.next_record().unwrap().is_none());
    }

    #[test]
    fn reopen_appends_after_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let recs: Vec<Vec<u8>> = (0..5).map(|i| payload(9000, i)).collect();
        write_log(&path, &recs);
        // Tear the last record.
        let len = std::fs::metadata(&path).unwrap().len();
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len - 100)
            .unwrap();
        let mut r = LogReader::open(&path, false).unwrap();
        assert_eq!(read_all(&mut r).unwrap().len(), 4);
        assert!(r.tail_dropped().is_some());
        let mut w = LogWriter::reopen(&path, r.valid_end()).unwrap();
        let extra = payload(40_000, 99);
        w.add_record(&extra).unwrap();
        w.add_record(b"tail").unwrap();
        w.sync().unwrap();
        let mut r = LogReader::open(&path, false).unwrap();
        let got = read_all(&mut r).unwrap();
        assert_eq!(got.len(), 6);
        assert_eq!(got[4], extra);
        assert_eq!(got[5], b"tail");
        assert_eq!(r.tail_dropped(), None);
        assert!(LogWriter::reopen(&path, u64::MAX).is_err());
    }

    /// A multi-record log crossing a block boundary, cut at every length:
    /// the records wholly before the cut come back, the rest is a torn tail.
    #[test]
    fn torn_tail_at_every_truncation_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let sizes = [0usize, 1, 100, 3000, 24_000, 9000, 5, 300];
        let recs: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| payload(n, 7 + i as u64))
            .collect();
        let ends = write_log(&path, &recs);
        let full = std::fs::read(&path).unwrap();
        assert!(full.len() > BLOCK_SIZE);
        for cut in 0..=full.len() {
            let mut r = LogReader::from_bytes(&path, full[..cut].to_vec(), false);
            let got = read_all(&mut r).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            let whole = ends.iter().filter(|&&e| e as usize <= cut).count();
            assert_eq!(got.len(), whole, "cut {cut}");
            assert_eq!(&got[..], &recs[..whole], "cut {cut}");
            let valid = if whole == 0 { 0 } else { ends[whole - 1] };
            assert_eq!(r.valid_end(), valid);
            match r.tail_dropped() {
                None => assert_eq!(cut as u64, valid, "cut {cut}: tail not reported"),
                Some(t) => {
                    assert_eq!(t.offset, valid, "cut {cut}");
                    assert_eq!(t.offset + t.bytes, cut as u64);
                    assert!(t.bytes > 0);
                }
            }
        }
    }

    /// Flipping any byte of a middle record, with valid records after it, is
    /// corruption; salvage skips exactly that record and keeps the others.
    #[test]
    fn flip_in_middle_is_corruption_or_salvaged() {
        let sizes = [50usize, 700, 40_000, 120, 33, 2000];
        let recs: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| payload(n, 100 + i as u64))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let ends = write_log(&path, &recs);
        let full = std::fs::read(&path).unwrap();
        // Every byte of record 1 (small, in block 0) and a sample of the
        // multi-block record 2, including its fragment headers.
        let r1 = ends[0] as usize..ends[1] as usize;
        let r2 = (ends[1] as usize..ends[2] as usize).step_by(97);
        let hdr2 = [BLOCK_SIZE, BLOCK_SIZE + 3, BLOCK_SIZE + 6];
        for (victim, at) in r1
            .map(|a| (1, a))
            .chain(r2.map(|a| (2, a)))
            .chain(hdr2.iter().map(|&a| (2, a)))
        {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut bad = full.clone();
                bad[at] ^= mask;
                let mut r = LogReader::from_bytes(&path, bad.clone(), false);
                let err = read_all(&mut r).expect_err(&format!("flip at {at}"));
                match err {
                    Error::Corruption { offset, .. } => {
                        assert_eq!(offset, ends[victim - 1], "flip at {at}")
                    }
                    e => panic!("{e}"),
                }
                let mut s = LogReader::from_bytes(&path, bad, true);
                let got = read_all(&mut s).unwrap();
                let mut want = recs.clone();
                want.remove(victim);
                assert_eq!(got, want, "salvage, flip at {at} mask {mask:#x}");
                assert_eq!(s.skipped().len(), 1);
                assert_eq!(s.skipped()[0].offset, ends[victim - 1]);
                assert_eq!(s.tail_dropped(), None);
            }
        }
    }

    #[test]
    fn flip_in_last_record_is_torn_tail() {
        let recs: Vec<Vec<u8>> = (0..4).map(|i| payload(500, i)).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let ends = write_log(&path, &recs);
        let full = std::fs::read(&path).unwrap();
        for at in ends[2] as usize..full.len() {
            let mut bad = full.clone();
            bad[at] ^= 0x10;
            let mut r = LogReader::from_bytes(&path, bad, false);
            assert_eq!(read_all(&mut r).unwrap(), &recs[..3]);
            let t = r.tail_dropped().unwrap();
            assert_eq!((t.offset, t.offset + t.bytes), (ends[2], ends[3]));
        }
    }

    #[test]
    fn zero_filled_tail_is_dropped() {
        let recs: Vec<Vec<u8>> = (0..3).map(|i| payload(100, i)).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let ends = write_log(&path, &recs);
        let mut img = std::fs::read(&path).unwrap();
        img.resize(img.len() + 40_000, 0);
        let mut r = LogReader::from_bytes(&path, img, false);
        assert_eq!(read_all(&mut r).unwrap(), recs);
        assert_eq!(r.tail_dropped().unwrap().offset, ends[2]);
    }

    /// Arbitrary bytes never panic, in either mode.
    #[test]
    fn garbage_never_panics() {
        for seed in 0..200u64 {
            let len = (seed as usize * 977) % (2 * BLOCK_SIZE + 50);
            let mut img = payload(len, seed);
            // Sprinkle plausible headers so deeper paths are exercised.
            let mut i = 0;
            while i + HEADER_SIZE < img.len() {
                img[i + 6] = (seed % 5) as u8;
                img[i + 5] = 0;
                i += 331;
            }
            for salvage in [false, true] {
                let mut r = LogReader::from_bytes("garbage", img.clone(), salvage);
                for _ in 0..10_000 {
                    match r.next_record() {
                        Ok(Some(_)) => {}
                        Ok(None) | Err(_) => break,
                    }
                }
            }
        }
    }

    #[test]
    fn poisoned_writer_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let mut w = LogWriter::create(&path).unwrap();
        assert!(LogWriter::create(&path).is_err(), "create must not clobber");
        w.poisoned = Some(Error::io("test", std::io::ErrorKind::StorageFull.into()));
        assert!(matches!(w.add_record(b"x"), Err(Error::Poisoned { .. })));
        let e = w.sync().unwrap_err();
        assert_eq!(e.io_kind(), Some(std::io::ErrorKind::StorageFull), "{e}");
    }
}
