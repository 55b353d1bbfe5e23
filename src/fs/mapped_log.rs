//! An append-only log file written through a shared memory mapping: an
//! append is a copy into the page cache, with no system call (Linux).
//!
//! A buffered `write()` of a 150-byte WAL record costs about 1.1 µs on the
//! study's VM, half of a single-key put's CPU; the copy into a mapping costs
//! about 0.2 µs, page faults included (docs/design.md, "What a single put
//! costs"). The bytes land in the same page cache pages a `write()` fills,
//! so an append survives the death of the process as it did; `sync_data`
//! is the same `fdatasync`, which writes back the pages dirtied through the
//! mapping.
//!
//! Every byte is allocated before it is written (`fallocate`, [`CHUNK`] at
//! a time): a full disk is an error of the append that needs the space,
//! never a `SIGBUS` on a store into a page the file system cannot back. The
//! file's length runs ahead of the bytes appended, and the space after them
//! reads as zeros; a reader takes a log that ends in zeros from a record
//! boundary on as ending there (docs/format.md, §11). On drop the file is
//! cut back to the bytes appended.
//!
//! A file system that cannot preallocate or map the file
//! (`FileSystem::create_new_log`) leaves it an ordinary one.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use super::WritableFile;

/// Bytes allocated ahead at a time.
pub const CHUNK: u64 = 1 << 20;

/// Appends of at least this many bytes go in with one `pwrite` instead of
/// a copy into the mapping. A store into a page of the mapping not yet
/// written faults, and the file system's handling of that fault (ext4
/// marks the page's preallocated block written) costs about 5 µs a page:
/// less than a `write()` per small record, more than the copy a `write()`
/// makes of a large one: groups of 1,000 puts (130 KB each) through the
/// mapping took the writer 35–60% more CPU than with a `write()` each
/// (docs/design.md, "What a single put costs").
const WRITE_FROM: usize = 4096;

/// Address space mapped at first; doubled (`mremap`) as the log grows.
const FIRST_MAP: usize = 16 << 20;

/// A log file appended through a shared mapping (module docs).
pub struct MappedLog {
    file: File,
    /// The mapping's first byte; `map_len` bytes of address space, of
    /// which the first `allocated` are backed by the file.
    map: *mut u8,
    map_len: usize,
    allocated: u64,
    written: u64,
    /// Bytes whose write-back was started (or synced).
    started: u64,
}

// SAFETY: the mapping is owned by this value alone (no copy of the pointer
// escapes) and is only written through `&mut self`.
unsafe impl Send for MappedLog {}
// SAFETY: no `&self` method touches the mapping.
unsafe impl Sync for MappedLog {}

impl fmt::Debug for MappedLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MappedLog")
            .field("file", &self.file)
            .field("written", &self.written)
            .field("allocated", &self.allocated)
            .finish()
    }
}

impl MappedLog {
    /// Maps `file`, empty and opened for reading and writing, allocating
    /// its first [`CHUNK`]. Gives the file back when the file system
    /// cannot preallocate or map it.
    pub fn new(file: File) -> Result<Self, File> {
        let fd = file.as_raw_fd();
        // SAFETY: a system call on a descriptor `file` owns.
        if unsafe { libc::fallocate(fd, 0, 0, CHUNK as i64) } != 0 {
            return Err(file);
        }
        // SAFETY: a new shared mapping of a descriptor `file` owns; the
        // kernel picks the address, and nothing else refers to it.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                FIRST_MAP,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            // Empty again for the ordinary writes that follow, which start
            // at offset 0 in any case (a failed cut leaves zeros after
            // them: the log's end, to a reader).
            let _ = file.set_len(0);
            return Err(file);
        }
        Ok(MappedLog {
            file,
            map: map.cast(),
            map_len: FIRST_MAP,
            allocated: CHUNK,
            written: 0,
            started: 0,
        })
    }

    /// Makes the first `need` bytes of the file allocated and mapped.
    fn reserve(&mut self, need: u64) -> io::Result<()> {
        if need > self.allocated {
            let target = need.div_ceil(CHUNK) * CHUNK;
            let len = i64::try_from(target - self.allocated)
                .map_err(|_| io::Error::other("log over the file size limit"))?;
            let at = i64::try_from(self.allocated)
                .map_err(|_| io::Error::other("log over the file size limit"))?;
            // SAFETY: a system call on a descriptor `file` owns.
            if unsafe { libc::fallocate(self.file.as_raw_fd(), 0, at, len) } != 0 {
                return Err(io::Error::last_os_error());
            }
            self.allocated = target;
            self.start_writeback();
        }
        let need =
            usize::try_from(need).map_err(|_| io::Error::other("log over the address space"))?;
        if need > self.map_len {
            let mut len = self.map_len;
            while len < need {
                len = len
                    .checked_mul(2)
                    .ok_or_else(|| io::Error::other("log over the address space"))?;
            }
            // SAFETY: `map` is this value's live mapping of `map_len` bytes;
            // it may move, and no pointer into it is kept across calls.
            let moved =
                unsafe { libc::mremap(self.map.cast(), self.map_len, len, libc::MREMAP_MAYMOVE) };
            if moved == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            self.map = moved.cast();
            self.map_len = len;
        }
        Ok(())
    }
}

impl MappedLog {
    /// Starts the write-back of the whole pages appended so far, without
    /// waiting, once per chunk (as ordinary files do every MiB,
    /// `super::WRITEBACK_EVERY`): the `fdatasync` that follows waits for
    /// the last stretch only. A hint; its result is ignored.
    fn start_writeback(&mut self) {
        self.started = super::start_writeback(&self.file, self.started, self.written);
    }
}

impl WritableFile for MappedLog {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let end = self
            .written
            .checked_add(buf.len() as u64)
            .ok_or_else(|| io::Error::other("log over the file size limit"))?;
        self.reserve(end)?;
        if buf.len() >= WRITE_FROM {
            // Into the same page cache pages the mapping shows.
            use std::os::unix::fs::FileExt;
            self.file.write_all_at(buf, self.written)?;
        } else {
            // SAFETY: `reserve` made `[0, end)` mapped and backed by
            // allocated blocks of the file; `written..end` lies in it, and
            // `buf` is not in the mapping (no reference into it is ever
            // handed out).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    buf.as_ptr(),
                    self.map.add(self.written as usize),
                    buf.len(),
                );
            }
        }
        self.written = end;
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.file.sync_data()?;
        self.started = self.written;
        Ok(())
    }
}

impl Drop for MappedLog {
    fn drop(&mut self) {
        // SAFETY: this value's live mapping, unmapped once.
        unsafe {
            libc::munmap(self.map.cast(), self.map_len);
        }
        // The zeros allocated ahead go; a failure leaves them, which a
        // reader takes for the log's end.
        let _ = self.file.set_len(self.written);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        (dir, path)
    }

    fn open(path: &std::path::Path) -> File {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .unwrap()
    }

    /// What was appended is the file's content, across chunks and remaps;
    /// the file is cut back to it on drop.
    #[test]
    fn appends_read_back_and_the_file_is_cut_to_them() {
        let (_dir, path) = scratch();
        // The file systems tests run on (ext4, xfs, tmpfs) all map.
        let mut log = MappedLog::new(open(&path)).expect("the scratch file maps");
        let mut want = Vec::new();
        let mut state = 7u64;
        // Past the first mapping (16 MiB) and many chunks.
        while want.len() < (FIRST_MAP + 3 * CHUNK as usize) {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
            let n = (state >> 33) as usize % 70_000;
            let rec: Vec<u8> = (0..n).map(|i| (i as u64 ^ state) as u8).collect();
            log.write_all(&rec).unwrap();
            want.extend_from_slice(&rec);
        }
        // Ahead of the bytes appended, zeros.
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len >= want.len() as u64 && len % CHUNK == 0);
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(&on_disk[..want.len()], &want[..]);
        assert!(on_disk[want.len()..].iter().all(|&b| b == 0));
        log.sync_data().unwrap();
        drop(log);
        assert_eq!(std::fs::read(&path).unwrap(), want);
    }

    /// An empty log leaves an empty file.
    #[test]
    fn an_empty_log_leaves_an_empty_file() {
        let (_dir, path) = scratch();
        drop(MappedLog::new(open(&path)).expect("the scratch file maps"));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }
}
