//! The store's `LOCK`: one holder per file, across processes and within
//! one.
//!
//! On Linux the lock is a POSIX record lock (`fcntl(F_SETLK)`), as LevelDB,
//! RocksDB and Pebble take theirs, and not `flock`: an `flock` belongs to the
//! open file description, which a child process copies when its parent forks,
//! so a store closed while another thread spawns a process stays locked until
//! that child has exec'd (or for good, if it never execs), and reopening it
//! fails with [`Error::Locked`](crate::Error::Locked). A record lock belongs
//! to the process and is never inherited.
//!
//! Record locks have two other properties this module answers:
//! - they do not exclude the process itself, so a registry of the paths this
//!   process holds refuses a second holder in the same process;
//! - closing *any* descriptor of the file releases them, so the file is
//!   opened only here, once per holder, and nothing else in the store opens
//!   `LOCK` (the direct-read probe of a new store uses a file of its own).
//!
//! Elsewhere the lock is `flock` through `File::try_lock`.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

use super::FileLock;

/// Takes the lock on `path`, creating the file: `None` if a process (this
/// one included) holds it.
pub(super) fn lock(path: &Path) -> io::Result<Option<Box<dyn FileLock>>> {
    imp::lock(path)
}

fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::BTreeSet;
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    use super::super::FileLock;

    /// The lock files this process holds, by canonical path.
    static HELD: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

    fn held() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
        HELD.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A held lock: the open file (whose close releases the record lock) and
    /// the registry's key.
    #[derive(Debug)]
    struct Held {
        file: Option<File>,
        key: PathBuf,
    }

    impl FileLock for Held {}

    impl Drop for Held {
        fn drop(&mut self) {
            // Closed before the key leaves the registry: a new holder in this
            // process must not take the file while this close can still
            // release the process's record lock under it.
            drop(self.file.take());
            held().remove(&self.key);
        }
    }

    /// `path` with its directory's symbolic links resolved, so that two
    /// spellings of one file share a registry entry.
    fn key(path: &Path) -> io::Result<PathBuf> {
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "lock path has no name"))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Ok(std::fs::canonicalize(dir)?.join(name))
    }

    pub(super) fn lock(path: &Path) -> io::Result<Option<Box<dyn FileLock>>> {
        let key = key(path)?;
        let mut held = held();
        if held.contains(&key) {
            return Ok(None);
        }
        let file = super::open(path)?;
        // SAFETY: an all-zero `flock` is a valid value of this plain C
        // struct; the fields that matter are set below.
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = libc::F_WRLCK as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        fl.l_start = 0;
        fl.l_len = 0; // the whole file
        // SAFETY: `file` is an open descriptor and `fl` a valid `flock`.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &fl) } == -1 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EAGAIN) => Ok(None),
                _ => Err(e),
            };
        }
        held.insert(key.clone());
        Ok(Some(Box::new(Held {
            file: Some(file),
            key,
        })))
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::fs::File;
    use std::io;
    use std::path::Path;

    use super::super::FileLock;

    #[derive(Debug)]
    struct Held(#[allow(dead_code)] File);

    impl FileLock for Held {}

    pub(super) fn lock(path: &Path) -> io::Result<Option<Box<dyn FileLock>>> {
        let f = super::open(path)?;
        match f.try_lock() {
            Ok(()) => Ok(Some(Box::new(Held(f)))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    /// A lock released while a forked child (which has not exec'd) holds a
    /// copy of the parent's descriptors can be taken again at once.
    #[test]
    fn a_forked_child_does_not_keep_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let first = lock(&path).unwrap().expect("free");
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the child calls only async-signal-safe functions (read,
        // _exit) before it ends.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
        if pid == 0 {
            // The child: keeps every descriptor the parent had until the
            // parent closes the pipe's write end.
            let mut b = 0u8;
            unsafe {
                libc::close(fds[1]);
                libc::read(fds[0], (&mut b as *mut u8).cast(), 1);
                libc::_exit(0);
            }
        }
        unsafe { libc::close(fds[0]) };
        drop(first);
        let again = lock(&path).unwrap();
        let mut status = 0;
        unsafe {
            libc::close(fds[1]);
            libc::waitpid(pid, &mut status, 0);
        }
        assert!(again.is_some(), "the child's copy kept the lock");
    }

    /// The process itself is a second holder like any other: refused until
    /// the first lock is dropped, under any spelling of the path.
    #[test]
    fn one_holder_per_process() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let first = lock(&path).unwrap().expect("free");
        assert!(lock(&path).unwrap().is_none());
        let dotted = dir.path().join(".").join("LOCK");
        assert!(lock(&dotted).unwrap().is_none());
        drop(first);
        assert!(lock(&dotted).unwrap().is_some());
    }

    /// Another process's record lock is seen: a child that takes the lock
    /// and waits makes this process's attempt fail.
    #[test]
    fn another_process_holding_it_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let mut fds = [0; 2];
        let mut ready = [0; 2];
        unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            assert_eq!(libc::pipe(ready.as_mut_ptr()), 0);
        }
        let file = open(&path).unwrap();
        let fd = file.as_raw_fd();
        // SAFETY: as above; the child uses fcntl, write, read and _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            unsafe {
                let mut fl: libc::flock = std::mem::zeroed();
                fl.l_type = libc::F_WRLCK as libc::c_short;
                fl.l_whence = libc::SEEK_SET as libc::c_short;
                let ok: u8 = u8::from(libc::fcntl(fd, libc::F_SETLK, &fl) == 0);
                libc::write(ready[1], (&ok as *const u8).cast(), 1);
                let mut b = 0u8;
                libc::close(fds[1]);
                libc::read(fds[0], (&mut b as *mut u8).cast(), 1);
                libc::_exit(0);
            }
        }
        let mut ok = 0u8;
        unsafe {
            libc::close(fds[0]);
            libc::read(ready[0], (&mut ok as *mut u8).cast(), 1);
        }
        assert_eq!(ok, 1, "the child took the lock");
        let tried = lock(&path).unwrap();
        unsafe {
            libc::close(fds[1]);
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
        }
        assert!(tried.is_none(), "another process's lock was not seen");
        drop(file);
        assert!(lock(&path).unwrap().is_some());
    }
}
