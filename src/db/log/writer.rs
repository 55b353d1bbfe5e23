//! Appending logical records to a log, each handed to the OS whole.

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::*;
use crate::error::{Error, Result};
use crate::fs::{FileSystem, RealFs, WritableFile};

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
    /// The first I/O error: every later write refuses ([`Error::Poisoned`]).
    pub(super) poisoned: Option<Error>,
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
        Ok(Self::over(file, path))
    }

    /// [`LogWriter::create_in`] for a log written at every append, the
    /// WAL: through `fs`'s [`FileSystem::create_new_log`], which may
    /// allocate the file ahead in zeros and write it through a memory
    /// mapping.
    pub fn create_log_in(fs: &dyn FileSystem, path: &Path) -> Result<Self> {
        let file = fs
            .create_new_log(path)
            .map_err(|e| Error::io(format!("create {}", path.display()), e))?;
        Ok(Self::over(file, path))
    }

    fn over(file: Box<dyn WritableFile>, path: &Path) -> Self {
        LogWriter {
            file,
            path: path.to_path_buf(),
            block_offset: 0,
            len: 0,
            buf: Vec::new(),
            poisoned: None,
        }
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
