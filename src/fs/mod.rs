//! Every file operation of the store goes through one small trait,
//! [`FileSystem`], so tests can fail any of them. [`RealFs`] — plain `std::fs`
//! calls, one virtual call each — is the default ([`Options::fs`]); the
//! fault-injecting implementation, `fault::FaultFs`, is compiled for this
//! crate's tests and with the `fault-injection` feature.
//!
//! [`Options::fs`]: crate::Options::fs

#[cfg(any(test, feature = "fault-injection"))]
pub mod fault;

use std::ffi::OsString;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// A file being written: appends, then syncs.
pub trait WritableFile: Send + Sync + fmt::Debug {
    /// Appends all of `buf` (at the end of what was written before).
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()>;
    /// `fdatasync`: what was written survives power loss.
    fn sync_data(&mut self) -> io::Result<()>;
}

/// A file being read at arbitrary offsets, shared between threads.
pub trait ReadableFile: Send + Sync + fmt::Debug {
    /// Fills `buf` from `offset`; a file too short is `UnexpectedEof`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// The file's length now.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file is empty now.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// A held directory lock; dropping it releases the lock.
pub trait FileLock: Send + Sync + fmt::Debug {}

/// The file operations the store uses. Errors are plain `io::Error`s; the
/// store adds the path and the operation.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Creates `path`, which must not exist, for writing.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Creates or truncates `path` for writing.
    fn create_truncate(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Opens `path` for positional reads.
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>>;
    /// Atomically replaces `to` by `from` (durable once the directory is
    /// synced).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes `path`.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Makes the creations, renames and removals in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// The names in `dir`.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>>;
    /// The length of `path` (`NotFound` if it does not exist).
    fn file_len(&self, path: &Path) -> io::Result<u64>;
    /// Creates `dir` and its parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Takes the exclusive lock file `path` (created if missing); `None` if
    /// another holder has it.
    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn FileLock>>>;
}

/// The operating system's file system: each call is the `std::fs` call it
/// names.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

impl RealFs {
    /// A shared handle, for [`Options::fs`](crate::Options::fs).
    pub fn shared() -> Arc<dyn FileSystem> {
        Arc::new(RealFs)
    }
}

#[derive(Debug)]
struct RealWritable(File);

impl WritableFile for RealWritable {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
}

#[derive(Debug)]
struct RealReadable(File);

impl ReadableFile for RealReadable {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(&self.0, buf, offset)
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
}

#[derive(Debug)]
struct RealLock(#[allow(dead_code)] File);

impl FileLock for RealLock {}

impl FileSystem for RealFs {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let f = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(Box::new(RealWritable(f)))
    }
    fn create_truncate(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        Ok(Box::new(RealWritable(File::create(path)?)))
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        Ok(Arc::new(RealReadable(File::open(path)?)))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        std::fs::read_dir(dir)?
            .map(|e| e.map(|e| e.file_name()))
            .collect()
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn FileLock>>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        match f.try_lock() {
            Ok(()) => Ok(Some(Box::new(RealLock(f)))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

/// A real file as a [`WritableFile`] (for code that opened it itself).
pub(crate) fn real_writable(f: File) -> Box<dyn WritableFile> {
    Box::new(RealWritable(f))
}

/// Reads the whole file at `path`.
pub fn read_all(fs: &dyn FileSystem, path: &Path) -> io::Result<Vec<u8>> {
    let f = fs.open_read(path)?;
    let mut buf = vec![0u8; f.len()? as usize];
    f.read_exact_at(&mut buf, 0)?;
    Ok(buf)
}

/// A [`WritableFile`] as [`std::io::Write`] (for `BufWriter`).
pub(crate) struct WriteAdapter(pub Box<dyn WritableFile>);

impl Write for WriteAdapter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write_all(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
