//! Every file operation of the store goes through one small trait,
//! [`FileSystem`], so tests can fail any of them. [`RealFs`] — plain `std::fs`
//! calls, one virtual call each — is the default ([`Options::fs`]); the
//! fault-injecting implementation, `fault::FaultFs`, is compiled for this
//! crate's tests and with the `fault-injection` feature.
//!
//! Table files can also be read with direct I/O ([`ReadMode::Direct`],
//! [`FileSystem::open_read_direct`], module [`direct`]): each read then
//! reaches the device instead of the page cache. The tables a filter
//! rebuild of several stores writes from one read are written past the
//! page cache ([`FileSystem::create_new_direct`]).
//!
//! A table file read through the page cache is advised random access
//! ([`ReadAdvice`], [`ReadableFile::advise`]): point reads then bring in no
//! readahead, and a forward scan asks for the stretch ahead itself.
//!
//! [`latency::LatencyFs`] wraps a file system so that each read request
//! waits a fixed or sampled latency and is counted: a store studied as if
//! its files were on remote storage.
//!
//! `bucket::BucketFs` (feature `object-store`) keeps the table files in
//! an S3-compatible bucket and the other files on the local disk.
//!
//! [`Options::fs`]: crate::Options::fs

#[cfg(feature = "object-store")]
pub mod bucket;
pub mod direct;
mod direct_write;
#[cfg(any(test, feature = "fault-injection"))]
pub mod fault;
mod io_pool;
pub mod kept;
pub mod latency;
mod location;
mod lock;
#[cfg(target_os = "linux")]
mod mapped_log;
pub(crate) mod read_ahead;

pub(crate) use io_pool::io_pool;
pub use location::TableLocation;

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
    /// The bytes a read of `len` bytes at `offset` asks the file system
    /// for: `len` through the page cache (which may read ahead, or nothing);
    /// whole sectors around the range for a direct file.
    fn transfer_len(&self, _offset: u64, len: usize) -> u64 {
        len as u64
    }
    /// Tells the page cache how the file will be read ([`ReadAdvice`]).
    /// Advice only: it changes no byte read, and a file that cannot take it
    /// (a direct one, another system than Linux) ignores it.
    fn advise(&self, advice: ReadAdvice) {
        let _ = advice;
    }
    /// What tells this file from another, and from itself changed since
    /// ([`FileIdentity`]); `None` where the file system cannot say.
    fn identity(&self) -> Option<FileIdentity> {
        None
    }
}

/// A file's device, inode, length and modification time, as `fstat` gives
/// them: two equal identities are the same file, not written in between
/// (as far as the file system's clock can tell).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileIdentity {
    dev: u64,
    ino: u64,
    len: u64,
    modified: (i64, i64),
}

impl FileIdentity {
    /// The identity `meta` (of an open file) describes.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        FileIdentity {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
        }
    }

    /// The file's length in bytes.
    pub fn size(&self) -> u64 {
        self.len
    }
}

/// How a file read through the page cache will be read: advice for the
/// kernel's readahead (`posix_fadvise`, Linux).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadAdvice {
    /// Reads at scattered offsets (`POSIX_FADV_RANDOM`): each read brings in
    /// its own pages and no readahead around them. A table's descriptor
    /// takes it at open: a point read's 4 KiB block otherwise brings its
    /// neighbours from the device too, into a page cache that may have no
    /// room for them (docs/design.md, "Table files advise random access").
    Random,
    /// `len` bytes from `offset` will be read soon (`POSIX_FADV_WILLNEED`):
    /// the kernel starts reading them now, whatever the descriptor's
    /// advice. A forward scan gives it for the stretch of the file ahead.
    WillNeed {
        /// First byte.
        offset: u64,
        /// Bytes.
        len: u64,
    },
}

/// How table files are read: through the operating system's page cache, or
/// around it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReadMode {
    /// Ordinary reads, served by the page cache when it holds the bytes.
    #[default]
    Buffered,
    /// Direct I/O (`O_DIRECT`, Linux): every read of a table file goes to the
    /// device, in whole sectors (512 bytes or 4 KiB: the file system's
    /// direct-I/O alignment, [`direct::DIRECT_ALIGN`] where it does not
    /// say); the block
    /// cache, if enabled, still serves repeated data blocks. A file system
    /// that refuses direct I/O makes [`crate::Db::open`] fail with an error
    /// saying so.
    Direct,
    /// [`ReadMode::Direct`] where the store's file system takes it,
    /// otherwise [`ReadMode::Buffered`]; [`crate::Db::read_mode`] tells
    /// which one the store uses.
    DirectOrBuffered,
}

impl ReadMode {
    /// `buffered`, `direct` or `direct-or-buffered`.
    pub fn name(self) -> &'static str {
        match self {
            ReadMode::Buffered => "buffered",
            ReadMode::Direct => "direct",
            ReadMode::DirectOrBuffered => "direct-or-buffered",
        }
    }
}

impl fmt::Display for ReadMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A held directory lock; dropping it releases the lock.
pub trait FileLock: Send + Sync + fmt::Debug {}

/// The file operations the store uses. Errors are plain `io::Error`s; the
/// store adds the path and the operation.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Creates `path`, which must not exist, for writing.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// [`FileSystem::create_new`], the writes bypassing the page cache
    /// where the file system allows (`O_DIRECT`); otherwise, as this
    /// default, an ordinary file.
    fn create_new_direct(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.create_new(path)
    }
    /// [`FileSystem::create_new`] for an append-only log that each append
    /// must reach the operating system whole (the WAL): where the file
    /// system allows, a file allocated ahead and written through a shared
    /// memory mapping, so that an append is a copy rather than a system
    /// call (its length runs ahead of the bytes appended, in zeros, until
    /// it is dropped; docs/format.md, §11); otherwise, as this default, an
    /// ordinary file.
    fn create_new_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.create_new(path)
    }
    /// Creates or truncates `path` for writing.
    fn create_truncate(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Opens `path` for positional reads.
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>>;
    /// Opens `path` for positional reads that bypass the page cache
    /// ([`ReadMode::Direct`]). A file system that cannot returns an
    /// [`io::ErrorKind::Unsupported`] error that [`direct::refused`]
    /// recognises; so does this default.
    fn open_read_direct(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        let _ = path;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            direct::REFUSED.to_string(),
        ))
    }
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
    /// Makes `to`, which must not exist, a second name of the file `from`
    /// (a hard link; durable once `to`'s directory is synced). A file system
    /// without hard links returns an error [`link_refused`] recognises;
    /// so does this default ([`crate::Db::checkpoint`] then copies).
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let _ = (from, to);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this file system makes no hard links",
        ))
    }
    /// Removes the empty directory `dir`. This default refuses: a file
    /// system without it leaves a failed checkpoint's temporary directory
    /// (empty) behind.
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let _ = dir;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this file system removes no directories",
        ))
    }
    /// Whether a read of a table waits on a network round trip (an object
    /// store): the store then makes a `multi_get`'s independent data-block
    /// reads of one level in parallel, as it does for direct reads.
    fn remote_reads(&self) -> bool {
        false
    }
    /// Where the table files of the store in `dir` are kept, if not in
    /// `dir` beside its other files (a bucket: `bucket::BucketFs`). The
    /// store records it in its `OPTIONS` file and refuses a later open
    /// whose file system keeps them elsewhere.
    fn table_location(&self, dir: &Path) -> Option<TableLocation> {
        let _ = dir;
        None
    }
    /// Makes this handle the one writer of the store in `dir` where other
    /// machines share the store's files (a whole store in a bucket,
    /// `bucket::BucketConfig::whole_store`): from then on every write of
    /// an older writer to the store's journal fails as fenced
    /// ([`crate::Error::Fenced`]). [`crate::Db::open`] calls it after
    /// taking the directory lock and before reading the store. This
    /// default does nothing: the directory lock alone keeps a store on a
    /// local disk to one writer.
    fn take_writer(&self, dir: &Path) -> io::Result<()> {
        let _ = dir;
        Ok(())
    }
    /// Whether the store in `dir` may keep a file of advice of its own in
    /// the local directory (its lookup history, `LOOKUPS`). False for a
    /// whole store in a bucket, whose local directory holds only its lock:
    /// its lookup history then lives in the process.
    fn keeps_local_files(&self, dir: &Path) -> bool {
        let _ = dir;
        true
    }
    /// Forgets what this handle knows of files that others write, so the
    /// next reads see them as they are now ([`crate::Db::refresh`]): a
    /// whole store's journal as a reader listed it. This default knows
    /// nothing to forget.
    fn refresh(&self) {}
    /// Keeps `checkpoint` under `name` beside the store in `dir`, with its
    /// tables ([`crate::Db::checkpoint_in_bucket`]); a name taken already
    /// is refused (`AlreadyExists`). This default keeps none
    /// (`Unsupported`): a store on a local disk makes its checkpoints in
    /// directories ([`crate::Db::checkpoint`]).
    fn put_checkpoint(
        &self,
        dir: &Path,
        name: &str,
        checkpoint: &kept::KeptCheckpoint,
    ) -> io::Result<()> {
        let _ = (dir, name, checkpoint);
        Err(no_kept_checkpoints())
    }
    /// The checkpoints kept beside the store in `dir`, by name.
    fn list_checkpoints(&self, dir: &Path) -> io::Result<Vec<kept::CheckpointInfo>> {
        let _ = dir;
        Err(no_kept_checkpoints())
    }
    /// Deletes the kept checkpoint `name` of the store in `dir` (`NotFound`
    /// if there is none); the tables only it kept are deleted by the
    /// store's writer.
    fn delete_checkpoint(&self, dir: &Path, name: &str) -> io::Result<()> {
        let _ = (dir, name);
        Err(no_kept_checkpoints())
    }
    /// Whether this file system is the operating system's with nothing of
    /// its own to say about where tables are ([`RealFs`]): a store whose
    /// `OPTIONS` file records a [`TableLocation`] then opens on a file
    /// system made from that record instead (feature `object-store`), so
    /// that `Db::open(dir, Options::default())` finds a store whose tables
    /// are in a bucket. Any other file system is used as given.
    fn defers_to_recorded_location(&self) -> bool {
        false
    }
}

fn no_kept_checkpoints() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "this file system keeps no checkpoints beside the store (a store wholly in a bucket \
         does; elsewhere make one in a directory with Db::checkpoint)",
    )
}

/// Whether a failed [`FileSystem::hard_link`] means that no link can be
/// made there, so the file is to be copied instead: the two names on
/// different file systems (`EXDEV`), a file system without hard links
/// (`EPERM` from Linux `link(2)`, or `Unsupported`), or a file with as many
/// links as it may have (`EMLINK`). Any other error is a failure.
pub fn link_refused(e: &io::Error) -> bool {
    use io::ErrorKind::*;
    matches!(
        e.kind(),
        CrossesDevices | Unsupported | PermissionDenied | TooManyLinks
    )
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

/// Bytes a file may gather unsynced before [`RealWritable`] asks the kernel
/// to start writing them back (RocksDB's `bytes_per_sync`).
const WRITEBACK_EVERY: u64 = 1 << 20;

/// A file written through `std::fs`. Every [`WRITEBACK_EVERY`] bytes it
/// starts the write-back of what it wrote so far (Linux
/// `sync_file_range(SYNC_FILE_RANGE_WRITE)`, which does not wait), so the
/// device writes while the writer goes on computing, and the `fdatasync` at
/// the end waits only for the last stretch: without it a compaction thread
/// spent about as long blocked in `fdatasync` (each one writing its whole
/// table back) as building tables. Only a hint: a failed write-back is
/// reported by the `fdatasync` that follows, which alone makes data durable.
#[derive(Debug)]
struct RealWritable {
    file: File,
    /// Bytes written so far.
    written: u64,
    /// Bytes whose write-back was started (or synced).
    started: u64,
}

impl RealWritable {
    fn new(file: File) -> Self {
        RealWritable {
            file,
            written: 0,
            started: 0,
        }
    }

    fn start_writeback(&mut self) {
        self.started = start_writeback(&self.file, self.started, self.written);
    }
}

/// Starts the write-back of `file`'s whole pages from `started` to
/// `written` without waiting (Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`;
/// elsewhere nothing); returns where the next one starts. Only a hint: its
/// result is ignored, and a failed write-back is reported by the
/// `fdatasync` that follows.
fn start_writeback(file: &File, started: u64, written: u64) -> u64 {
    // Whole pages only: a partial last page would be written again.
    let end = written & !4095;
    if end <= started {
        return started;
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain system call on a descriptor the caller owns; it
        // reads no memory of ours.
        unsafe {
            libc::sync_file_range(
                file.as_raw_fd(),
                started as libc::off64_t,
                (end - started) as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
    end
}

impl WritableFile for RealWritable {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file.write_all(buf)?;
        self.written += buf.len() as u64;
        if self.written - self.started >= WRITEBACK_EVERY {
            self.start_writeback();
        }
        Ok(())
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.file.sync_data()?;
        self.started = self.written;
        Ok(())
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
    fn identity(&self) -> Option<FileIdentity> {
        self.0.metadata().ok().map(|m| FileIdentity::of(&m))
    }
    #[cfg(target_os = "linux")]
    fn advise(&self, advice: ReadAdvice) {
        use std::os::fd::AsRawFd;
        let (offset, len, flag) = match advice {
            ReadAdvice::Random => (0, 0, libc::POSIX_FADV_RANDOM),
            ReadAdvice::WillNeed { offset, len } => (offset, len, libc::POSIX_FADV_WILLNEED),
        };
        let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len))
        else {
            return;
        };
        // SAFETY: a plain system call on a descriptor this struct owns; it
        // reads no memory of ours. Advice only: its result is ignored.
        unsafe {
            libc::posix_fadvise(self.0.as_raw_fd(), offset, len, flag);
        }
    }
}

/// Opens `path` for reading without access-time updates where the system
/// allows it (Linux `O_NOATIME`, refused with `EPERM` on files the process
/// does not own): otherwise every read of a table would update, or check
/// whether to update, the file's atime — a measurable part of a get served
/// by the page cache.
fn open_noatime(path: &Path) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOATIME)
            .open(path)
        {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {}
            r => return r,
        }
    }
    File::open(path)
}

impl FileSystem for RealFs {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let f = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(Box::new(RealWritable::new(f)))
    }
    fn create_new_direct(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let f = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(match direct_write::DirectWriter::new(f) {
            Ok(w) => Box::new(w),
            Err(f) => Box::new(RealWritable::new(f)),
        })
    }
    #[cfg(target_os = "linux")]
    fn create_new_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        Ok(match mapped_log::MappedLog::new(f) {
            Ok(w) => Box::new(w),
            Err(f) => Box::new(RealWritable::new(f)),
        })
    }
    fn create_truncate(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        Ok(Box::new(RealWritable::new(File::create(path)?)))
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        Ok(Arc::new(RealReadable(open_noatime(path)?)))
    }
    fn open_read_direct(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        Ok(Arc::new(direct::open(path)?))
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
        lock::lock(path)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::remove_dir(dir)
    }
    fn defers_to_recorded_location(&self) -> bool {
        true
    }
}

/// A real file as a [`WritableFile`] (for code that opened it itself), whose
/// writes continue at `pos`, the file's current position (its end).
pub(crate) fn real_writable(f: File, pos: u64) -> Box<dyn WritableFile> {
    let mut w = RealWritable::new(f);
    w.written = pos;
    w.started = pos;
    Box::new(w)
}

/// Opens `path` for reads in `mode` (`DirectOrBuffered` is direct: the store
/// settles it when it opens, [`resolve_read_mode`]).
pub fn open_read_in(
    fs: &dyn FileSystem,
    path: &Path,
    mode: ReadMode,
) -> io::Result<Arc<dyn ReadableFile>> {
    match mode {
        ReadMode::Buffered => {
            let f = fs.open_read(path)?;
            // Point reads take one block each: no readahead around them.
            f.advise(ReadAdvice::Random);
            Ok(f)
        }
        ReadMode::Direct | ReadMode::DirectOrBuffered => fs.open_read_direct(path),
    }
}

/// The read mode a store in `dir` can use: `Buffered` stays; `Direct` is
/// probed by opening (and reading) the first of `probes` that exists for
/// direct reads, and a refusal is an error; `DirectOrBuffered` becomes
/// `Direct` if the probe passes, else `Buffered`. With no probe file, the
/// mode is taken as given (the first table opened will tell).
pub fn resolve_read_mode(
    fs: &dyn FileSystem,
    probes: &[&Path],
    mode: ReadMode,
) -> io::Result<ReadMode> {
    if mode == ReadMode::Buffered {
        return Ok(mode);
    }
    let Some(path) = probes.iter().find(|p| fs.file_len(p).is_ok()) else {
        return Ok(if mode == ReadMode::DirectOrBuffered {
            ReadMode::Direct
        } else {
            mode
        });
    };
    let probe = || -> io::Result<()> {
        let f = fs.open_read_direct(path)?;
        let n = f.len()?.min(direct::DIRECT_ALIGN) as usize;
        f.read_exact_at(&mut vec![0u8; n], 0)
    };
    match probe() {
        Ok(()) => Ok(ReadMode::Direct),
        Err(e) if mode == ReadMode::DirectOrBuffered && direct::refused(&e) => {
            Ok(ReadMode::Buffered)
        }
        Err(e) => Err(e),
    }
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
