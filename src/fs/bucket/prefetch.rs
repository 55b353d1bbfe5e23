//! [`BucketFs::prefetch`]: every table of a store read into the disk cache
//! ahead of its reads, in large ranged GETs.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::BucketFs;
use crate::db::filename::{self, FileKind};
use crate::error::{Error, Result};
use crate::fs::FileSystem;

/// Tables fetched at once.
const FETCHES_IN_FLIGHT: usize = 4;

/// The least bytes one GET of a prefetch asks for.
const PIECE: u64 = 8 << 20;

impl BucketFs {
    /// Reads every table of the store in `dir` (its keyspaces' too) into
    /// the disk cache, in GETs of at least 8 MiB, so that the reads that
    /// follow cost no request while the cache holds them. Returns the
    /// bytes of the tables read. A table the cache holds already costs no
    /// request; a cache smaller than the store keeps the tables read last.
    /// Refused without a disk cache ([`super::BucketConfig::cache_bytes`]
    /// 0).
    pub fn prefetch(&self, dir: &Path) -> Result<u64> {
        if !self.shared.cache.enabled() {
            return Err(Error::invalid(format!(
                "prefetch {}: the bucket file system has no disk cache",
                dir.display()
            )));
        }
        let mut tables = Vec::new();
        self.tables_under(dir, &mut tables)?;
        let piece = PIECE.div_ceil(self.shared.config.chunk_bytes) * self.shared.config.chunk_bytes;
        let next = Mutex::new(tables.iter());
        let results: Vec<Result<u64>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..FETCHES_IN_FLIGHT)
                .map(|_| {
                    s.spawn(|| -> Result<u64> {
                        let mut bytes = 0;
                        let mut buf = Vec::new();
                        loop {
                            let Some(path) = next.lock().unwrap_or_else(|p| p.into_inner()).next()
                            else {
                                return Ok(bytes);
                            };
                            let ctx = || format!("prefetch {}", path.display());
                            let f = self.open_read(path).map_err(|e| Error::io(ctx(), e))?;
                            let len = f.len().map_err(|e| Error::io(ctx(), e))?;
                            let mut at = 0;
                            while at < len {
                                let n = piece.min(len - at) as usize;
                                buf.resize(n, 0);
                                f.read_exact_at(&mut buf, at)
                                    .map_err(|e| Error::io(ctx(), e))?;
                                at += n as u64;
                            }
                            bytes += len;
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| {
                    w.join()
                        .unwrap_or_else(|_| Err(Error::invalid("a prefetch thread panicked")))
                })
                .collect()
        });
        results.into_iter().sum()
    }

    /// The tables of `dir` and of the directories below it.
    fn tables_under(&self, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
        let names = self
            .list_dir(dir)
            .map_err(|e| Error::io(format!("list {}", dir.display()), e))?;
        for name in names {
            let path = dir.join(&name);
            match name.to_str().and_then(filename::parse_file_name) {
                Some((FileKind::Table, _)) => out.push(path),
                _ if path.is_dir() => self.tables_under(&path, out)?,
                _ => {}
            }
        }
        Ok(())
    }
}
