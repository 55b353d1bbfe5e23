//! Reading logical records back, a torn tail told from corruption (see
//! the module above).

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::error::{Error, Result};
use crate::fs::{FileSystem, ReadableFile, RealFs};

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
    /// Where a damaged stretch followed by a valid record was last read
    /// again ([`LogReader::broken`]).
    reread_from: Option<u64>,
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
            reread_from: None,
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
                let ctx = |e| Error::io(format!("read {} at {start}", self.path.display()), e);
                match file.read_exact_at(&mut buf, start) {
                    Ok(()) => {}
                    // A log allocated ahead is cut back to its records when
                    // its writer closes it (`create_new_log`): the bytes cut
                    // were zeros after them. Read on as if opened now.
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                        let now = file.len().map_err(ctx)?;
                        if now >= self.file_len {
                            return Err(ctx(e));
                        }
                        self.file_len = now;
                        self.cache.clear();
                        buf.truncate(now.saturating_sub(start).min(BLOCK_SIZE as u64) as usize);
                        file.read_exact_at(&mut buf, start).map_err(ctx)?;
                    }
                    Err(e) => return Err(ctx(e)),
                }
                let len = buf.len();
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

    /// True if every byte from `from` to the end of the file is zero.
    fn zeros_from(&mut self, from: u64) -> Result<bool> {
        let mut q = from;
        while q < self.file_len {
            let bidx = q / BLOCK_SIZE as u64;
            let base = bidx * BLOCK_SIZE as u64;
            let block = self.block(bidx)?;
            if block[(q - base) as usize..].iter().any(|&b| b != 0) {
                return Ok(false);
            }
            q = base + BLOCK_SIZE as u64;
        }
        Ok(true)
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
            // Zeros from a record boundary to the end: the space a log
            // allocated ahead has not reached yet (`create_new_log`). It
            // ends there, cleanly: nothing was written after the last record.
            None if self.zeros_from(lost)? => {
                self.done = true;
                Ok(false)
            }
            None => {
                self.tail = Some(TailDropped {
                    offset: lost,
                    bytes: self.file_len.saturating_sub(lost),
                });
                self.done = true;
                Ok(false)
            }
            // A live log written through a mapping (`create_new_log`)
            // shows a reader its bytes as they land, in order: one read can
            // catch a record before it landed and a later one after. Its
            // bytes only ever change from zeros to records, so the stretch
            // is read again, once, before it is called damaged.
            Some(_) if self.reread_from != Some(lost) => {
                self.reread_from = Some(lost);
                self.cache.clear();
                self.pos = lost;
                Ok(true)
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
