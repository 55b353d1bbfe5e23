//! Direct writes: a table file whose bytes go from the writer's own buffer
//! to the device, not through the page cache (`O_DIRECT`, Linux).
//!
//! Writing through the page cache costs a copy of every byte, and once the
//! dirty pages pass the kernel's limits the writer waits for their
//! write-back, which on the study's VM drains about 0.7 GB/s where direct
//! writes reach 1.4 GB/s: the bound of a filter rebuild that writes several
//! stores' tables from one read ([`crate::Db::rebuild_filters_together`];
//! docs/design.md, "Filters per level"). A [`DirectWriter`] gathers appends
//! in an aligned buffer of [`BUFFER`] bytes and writes it whole when full.
//! At [`DirectWriter::flush`] (and `sync_data`, and drop) it writes the
//! last, partial sector padded with zeros and cuts the file back to the
//! bytes appended (`ftruncate`), so the file holds exactly what was
//! appended; the partial sector stays in the buffer and is written again,
//! completed, by the next write.
//!
//! A file system that refuses `O_DIRECT` on the file, or a write, leaves the
//! file an ordinary one ([`super::FileSystem::create_new_direct`]): the same
//! writes then go through the page cache.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::WritableFile;
use super::direct::DIRECT_ALIGN;

/// Bytes gathered before one write: the device sees few, long requests.
pub const BUFFER: usize = 1 << 20;

const ALIGN: usize = DIRECT_ALIGN as usize;

/// A file written with `O_DIRECT` (module docs).
pub struct DirectWriter {
    file: File,
    /// Over-allocated by one sector; the aligned window starts at `skip`.
    raw: Vec<u8>,
    skip: usize,
    /// Bytes of the window in use, to be written at file offset `at` (a
    /// multiple of [`DIRECT_ALIGN`]).
    len: usize,
    at: u64,
    /// Whether every appended byte is in the file.
    flushed: bool,
    /// Whether the file is still `O_DIRECT`: a refused write turns it into
    /// an ordinary one.
    direct: bool,
}

impl fmt::Debug for DirectWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirectWriter")
            .field("file", &self.file)
            .field("at", &self.at)
            .field("len", &self.len)
            .field("direct", &self.direct)
            .finish()
    }
}

/// Sets or clears `O_DIRECT` on `file`.
#[cfg(target_os = "linux")]
fn set_direct(file: &File, on: bool) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: plain system calls on a descriptor `file` owns; no memory of
    // ours is passed.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        let flags = if on {
            flags | libc::O_DIRECT
        } else {
            flags & !libc::O_DIRECT
        };
        if libc::fcntl(fd, libc::F_SETFL, flags) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn set_direct(_file: &File, _on: bool) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "direct writes are implemented on Linux only",
    ))
}

impl DirectWriter {
    /// `file`, new and empty, switched to `O_DIRECT`; given back as the
    /// error if the file system refuses.
    pub fn new(file: File) -> Result<DirectWriter, File> {
        if set_direct(&file, true).is_err() {
            return Err(file);
        }
        let raw = vec![0u8; BUFFER + ALIGN];
        let skip = raw.as_ptr().align_offset(ALIGN);
        Ok(DirectWriter {
            file,
            raw,
            skip,
            len: 0,
            at: 0,
            flushed: true,
            direct: true,
        })
    }

    /// Writes the window's first `n` bytes (whole sectors) at `at`. A
    /// direct write the file system refuses (`EINVAL`) is made again
    /// through the page cache, and so is every later one.
    fn write_out(&mut self, n: usize) -> io::Result<()> {
        let bytes = &self.raw[self.skip..self.skip + n];
        match self.file.write_all_at(bytes, self.at) {
            Err(e) if self.direct && e.raw_os_error() == Some(einval()) => {
                set_direct(&self.file, false)?;
                self.direct = false;
                self.file.write_all_at(bytes, self.at)
            }
            r => r,
        }
    }
}

#[cfg(target_os = "linux")]
fn einval() -> i32 {
    libc::EINVAL
}

#[cfg(not(target_os = "linux"))]
fn einval() -> i32 {
    22
}

impl DirectWriter {
    /// Writes every byte appended so far to the file (module docs).
    pub fn flush(&mut self) -> io::Result<()> {
        if self.flushed {
            return Ok(());
        }
        let padded = self.len.next_multiple_of(ALIGN);
        let end = self.skip + self.len;
        self.raw[end..self.skip + padded].fill(0);
        self.write_out(padded)?;
        self.file.set_len(self.at + self.len as u64)?;
        // Whole sectors stay written; the partial one moves to the front.
        let whole = self.len / ALIGN * ALIGN;
        self.raw.copy_within(self.skip + whole..end, self.skip);
        self.at += whole as u64;
        self.len -= whole;
        self.flushed = true;
        Ok(())
    }
}

impl WritableFile for DirectWriter {
    fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let n = (BUFFER - self.len).min(buf.len());
            let from = self.skip + self.len;
            self.raw[from..from + n].copy_from_slice(&buf[..n]);
            self.len += n;
            self.flushed = false;
            buf = &buf[n..];
            if self.len == BUFFER {
                self.write_out(BUFFER)?;
                self.at += BUFFER as u64;
                self.len = 0;
            }
        }
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.flush()?;
        self.file.sync_data()
    }
}

impl Drop for DirectWriter {
    /// What was appended reaches the file, as an ordinary file's writes do
    /// without a sync (a failure here is the next reader's short file).
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends of every size, flushed and synced at random points, leave
    /// the file holding exactly the bytes appended: at each flush, and at
    /// the end.
    #[test]
    fn the_file_holds_what_was_appended() {
        let dir = tempfile::tempdir().unwrap();
        let mut next = crate::test_rng::xorshift(7);
        for round in 0..4 {
            let path = dir.path().join(format!("{round}.sst"));
            let file = std::fs::File::create_new(&path).unwrap();
            let Ok(mut w) = DirectWriter::new(file) else {
                eprintln!("this file system refuses O_DIRECT: nothing to test");
                return;
            };
            let mut want = Vec::new();
            for _ in 0..200 {
                let n = match next() % 4 {
                    0 => (next() % 10) as usize,
                    1 => (next() % 5000) as usize,
                    2 => (next() % 70_000) as usize,
                    _ => BUFFER - 1 + (next() % 3) as usize,
                };
                let bytes: Vec<u8> = (0..n).map(|_| next() as u8).collect();
                w.write_all(&bytes).unwrap();
                want.extend_from_slice(&bytes);
                match next() % 8 {
                    0 => w.flush().unwrap(),
                    1 => w.sync_data().unwrap(),
                    _ => continue,
                }
                assert!(std::fs::read(&path).unwrap() == want, "round {round}");
            }
            if round % 2 == 0 {
                w.sync_data().unwrap();
            }
            drop(w);
            let got = std::fs::read(&path).unwrap();
            assert_eq!(got.len(), want.len(), "round {round}");
            assert!(got == want, "round {round}");
        }
    }
}
