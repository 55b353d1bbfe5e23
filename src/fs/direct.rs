//! Direct reads: a file opened with `O_DIRECT`, so that its reads bypass the
//! operating system's page cache and reach the device (Linux only).
//!
//! `O_DIRECT` wants the file offset, the length and the buffer address of
//! every read aligned to the device's logical block size. A
//! [`DirectFile`] read rounds the requested range out to whole sectors of
//! the file's direct-I/O alignment (what `statx` reports, Linux 6.1 and
//! later: 512 bytes on a device with 512-byte logical sectors; otherwise
//! [`DIRECT_ALIGN`]), reads them into a buffer aligned to [`DIRECT_ALIGN`]
//! and copies the requested bytes out, so callers read any range, as from
//! a buffered file. Each read therefore transfers whole sectors
//! ([`ReadableFile::transfer_len`]): a 4 KiB block at an arbitrary offset
//! costs about 4.5 KB at 512-byte alignment, 8 KiB at 4 KiB
//! (docs/benchmarks.md, "10^8 keys beside RocksDB").
//!
//! A file system that cannot do direct I/O (on this kernel: those without a
//! `direct_IO` path, e.g. procfs; tmpfs gained one in Linux 6.6) refuses at
//! `open` or at the first read with `EINVAL`; both come back as
//! [`io::ErrorKind::Unsupported`] errors saying so (see [`refused`]).

use std::fs::File;
use std::io;
use std::path::Path;

use super::ReadableFile;

/// The alignment of direct reads' buffers, and of their offsets and lengths
/// where the file system does not tell its own: 4096, the page size and at
/// least the logical block size of the devices in use (512 or 4096).
pub const DIRECT_ALIGN: u64 = 4096;

/// The message of every refusal of direct I/O.
pub const REFUSED: &str = "direct I/O (O_DIRECT) not supported by this file system";

/// Whether `e` is a file system's refusal of direct I/O (as returned by
/// [`open`] and [`DirectFile`] reads).
pub fn refused(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Unsupported && e.to_string().starts_with(REFUSED)
}

fn refusal(source: &io::Error) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, format!("{REFUSED} ({source})"))
}

/// `EINVAL` from an `O_DIRECT` open or read: the file system refuses (reads
/// are aligned, so that is the only cause left).
fn is_einval(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc_einval())
}

#[cfg(target_os = "linux")]
fn libc_einval() -> i32 {
    libc::EINVAL
}

#[cfg(not(target_os = "linux"))]
fn libc_einval() -> i32 {
    22
}

/// A file opened for direct reads.
#[derive(Debug)]
pub struct DirectFile {
    file: File,
    /// The alignment of each read's offset and length: a power of two from
    /// 512 to [`DIRECT_ALIGN`].
    align: u64,
}

/// The offset alignment `statx` reports for direct I/O on `file`
/// (`STATX_DIOALIGN`), if it reports one from 512 to [`DIRECT_ALIGN`] and
/// a buffer alignment [`DIRECT_ALIGN`] satisfies.
#[cfg(target_os = "linux")]
fn reported_align(file: &File) -> Option<u64> {
    use std::os::fd::AsRawFd;
    let mut stx = std::mem::MaybeUninit::<libc::statx>::zeroed();
    // SAFETY: statx writes a whole `statx` into the pointer it gets; the
    // empty path with AT_EMPTY_PATH names the descriptor `file` owns.
    let r = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            stx.as_mut_ptr(),
        )
    };
    if r != 0 {
        return None;
    }
    // SAFETY: initialised (zeroed, then filled by the successful call).
    let stx = unsafe { stx.assume_init() };
    let offset = u64::from(stx.stx_dio_offset_align);
    let mem = u64::from(stx.stx_dio_mem_align);
    let told = stx.stx_mask & libc::STATX_DIOALIGN != 0;
    (told
        && offset.is_power_of_two()
        && (512..=DIRECT_ALIGN).contains(&offset)
        && mem <= DIRECT_ALIGN)
        .then_some(offset)
}

/// Opens `path` for direct reads; a file system that refuses `O_DIRECT`
/// gives an [`io::ErrorKind::Unsupported`] error ([`refused`]).
#[cfg(target_os = "linux")]
pub fn open(path: &Path) -> io::Result<DirectFile> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| if is_einval(&e) { refusal(&e) } else { e })?;
    let align = reported_align(&file).unwrap_or(DIRECT_ALIGN);
    Ok(DirectFile { file, align })
}

/// Direct reads are implemented on Linux only: elsewhere every open is a
/// refusal.
#[cfg(not(target_os = "linux"))]
pub fn open(_path: &Path) -> io::Result<DirectFile> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{REFUSED} (direct reads are implemented on Linux only)"),
    ))
}

/// The range `[start, end)` aligned to `align` covering `len` bytes at
/// `offset`.
fn aligned_span(offset: u64, len: usize, align: u64) -> (u64, u64) {
    let start = offset / align * align;
    let end = (offset + len as u64).div_ceil(align) * align;
    (start, end)
}

impl DirectFile {
    /// The alignment of each read's offset and length.
    pub fn alignment(&self) -> u64 {
        self.align
    }
}

impl ReadableFile for DirectFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        if buf.is_empty() {
            return Ok(());
        }
        let (start, end) = aligned_span(offset, buf.len(), self.align);
        let span = (end - start) as usize;
        // An aligned window into an over-allocated buffer (no unsafe code).
        let mut raw = vec![0u8; span + DIRECT_ALIGN as usize];
        let skip = raw.as_ptr().align_offset(DIRECT_ALIGN as usize);
        let aligned = &mut raw[skip..skip + span];
        let need = (offset - start) as usize + buf.len();
        let mut got = 0usize;
        while got < need {
            match self.file.read_at(&mut aligned[got..], start + got as u64) {
                Ok(0) => break,
                Ok(n) => {
                    got += n;
                    // A read that stops off a sector boundary stopped at the
                    // end of the file: the next offset could not be aligned.
                    if !got.is_multiple_of(self.align as usize) {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_einval(&e) => return Err(refusal(&e)),
                Err(e) => return Err(e),
            }
        }
        if got < need {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "failed to fill whole buffer",
            ));
        }
        let from = (offset - start) as usize;
        buf.copy_from_slice(&aligned[from..from + buf.len()]);
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn identity(&self) -> Option<super::FileIdentity> {
        self.file
            .metadata()
            .ok()
            .map(|m| super::FileIdentity::of(&m))
    }

    fn transfer_len(&self, offset: u64, len: usize) -> u64 {
        if len == 0 {
            return 0;
        }
        let (start, end) = aligned_span(offset, len, self.align);
        end - start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{FileSystem, RealFs};

    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A scratch directory under the target directory: on the same disk as
    /// the build, which takes `O_DIRECT` (the system's temporary directory
    /// may be a file system that does not).
    fn scratch() -> tempfile::TempDir {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join("direct-io-tests");
        let base = std::env::var_os("CARGO_TARGET_DIR").map_or(base, |t| {
            std::path::PathBuf::from(t).join("direct-io-tests")
        });
        std::fs::create_dir_all(&base).unwrap();
        tempfile::tempdir_in(base).unwrap()
    }

    #[test]
    fn aligned_spans() {
        assert_eq!(aligned_span(0, 1, 4096), (0, 4096));
        assert_eq!(aligned_span(4095, 2, 4096), (0, 8192));
        assert_eq!(aligned_span(4096, 4096, 4096), (4096, 8192));
        assert_eq!(aligned_span(5000, 4101, 4096), (4096, 12288));
        assert_eq!(aligned_span(5000, 4101, 512), (4608, 9216));
        assert_eq!(aligned_span(4096, 4096, 512), (4096, 8192));
    }

    #[test]
    fn direct_reads_return_what_buffered_reads_do() {
        let dir = scratch();
        let path = dir.path().join("data");
        // Not a multiple of the alignment: the last sector is short.
        let mut seed = 7u64;
        let bytes: Vec<u8> = (0..100_003).map(|_| splitmix(&mut seed) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let reported = match open(&path) {
            Ok(f) => f,
            Err(e) if refused(&e) => {
                eprintln!("skipped: {} refuses direct I/O: {e}", dir.path().display());
                return;
            }
            Err(e) => panic!("{e}"),
        };
        // The alignment the file system reports, and the page size.
        let page = DirectFile {
            file: reported.file.try_clone().unwrap(),
            align: DIRECT_ALIGN,
        };
        for direct in [reported, page] {
            same_bytes(&direct, &path, &bytes, seed);
        }
    }

    /// Reads of `direct` (the file at `path`, holding `bytes`) return what
    /// buffered reads do, and transfer whole aligned sectors.
    fn same_bytes(direct: &DirectFile, path: &Path, bytes: &[u8], mut seed: u64) {
        let buffered = RealFs.open_read(path).unwrap();
        assert_eq!(direct.len().unwrap(), bytes.len() as u64);
        let n = bytes.len() as u64;
        let mut cases: Vec<(u64, usize)> = vec![
            (0, 0),
            (0, 1),
            (0, bytes.len()),
            (4095, 2),
            (4096, 4096),
            (n - 1, 1),
            (n - 5000, 5000),
        ];
        for _ in 0..500 {
            let off = splitmix(&mut seed) % n;
            let len = (splitmix(&mut seed) % 20_000).min(n - off) as usize;
            cases.push((off, len));
        }
        for (off, len) in cases {
            let mut a = vec![0u8; len];
            let mut b = vec![0u8; len];
            direct.read_exact_at(&mut a, off).unwrap();
            buffered.read_exact_at(&mut b, off).unwrap();
            assert_eq!(a, b, "offset {off} length {len}");
            assert_eq!(&a[..], &bytes[off as usize..off as usize + len]);
            let t = direct.transfer_len(off, len);
            assert!(t >= len as u64 && t % direct.alignment() == 0, "{t}");
        }
        // Past the end: UnexpectedEof, as a buffered read.
        for (off, len) in [(n - 1, 2), (n, 1), (n + 10_000, 10)] {
            let mut a = vec![0u8; len];
            let e = direct.read_exact_at(&mut a, off).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{off} {len}");
        }
    }

    #[test]
    fn refusal_is_one_clear_error() {
        // procfs has no direct I/O path on any kernel: its refusal is EINVAL
        // at open, as tmpfs's was before Linux 6.6.
        let path = Path::new("/proc/self/status");
        if !path.exists() {
            eprintln!("skipped: no {}", path.display());
            return;
        }
        let e = open(path).unwrap_err();
        assert!(refused(&e), "{e:?}");
        let msg = e.to_string();
        assert!(msg.starts_with(REFUSED) && !msg.contains('\n'), "{msg}");
    }
}
