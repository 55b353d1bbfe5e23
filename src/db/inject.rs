//! Failures injected at named points of the store's threads, so that tests
//! can make each background thread panic or fail on command. Compiled into
//! the crate's own tests only; elsewhere [`hit`] is an empty inline function.

#[cfg(test)]
#[allow(unused_imports)] // `arm` and `Failure` are for the tests
pub(crate) use armed::{Failure, arm, hit};

/// Does nothing outside the crate's tests.
#[cfg(not(test))]
#[inline(always)]
pub(crate) fn hit(_dir: &std::path::Path, _point: Point) -> crate::Result<()> {
    Ok(())
}

/// Where a failure can be injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Point {
    /// The start of a flush (the flush thread, or a caller's `flush`).
    Flush,
    /// The start of a compaction (the compaction thread, `compact`, `maintain`).
    Compaction,
    /// A job of the files thread (deleting the tables a compaction retired).
    Files,
    /// A read on the I/O threads of a direct-I/O `multi_get`.
    Io,
    /// One file's rewrite of a filter rebuild, on one of its worker threads.
    Refilter,
}

#[cfg(test)]
mod armed {
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    use super::Point;
    use crate::error::{Error, Result};

    /// What an armed point does when reached.
    #[derive(Clone, Copy, Debug)]
    pub(crate) enum Failure {
        Panic,
        /// An I/O error of kind `StorageFull`.
        Error,
    }

    /// Armed points, each for one store directory (tests run in parallel in
    /// one process), each firing once.
    static ARMED: Mutex<Vec<(PathBuf, Point, Failure)>> = Mutex::new(Vec::new());

    /// Makes the next visit of `point` by the store in `dir` fail.
    pub(crate) fn arm(dir: &Path, point: Point, failure: Failure) {
        let mut a = ARMED.lock().unwrap_or_else(|p| p.into_inner());
        a.push((dir.to_path_buf(), point, failure));
    }

    /// Fails (or panics) if `point` is armed for `dir`.
    pub(crate) fn hit(dir: &Path, point: Point) -> Result<()> {
        let failure = {
            let mut a = ARMED.lock().unwrap_or_else(|p| p.into_inner());
            match a.iter().position(|(d, p, _)| d == dir && *p == point) {
                Some(i) => a.remove(i).2,
                None => return Ok(()),
            }
        };
        match failure {
            Failure::Panic => panic!("injected panic at {point:?}"),
            Failure::Error => Err(Error::io(
                format!("injected failure at {point:?}"),
                std::io::ErrorKind::StorageFull.into(),
            )),
        }
    }
}
