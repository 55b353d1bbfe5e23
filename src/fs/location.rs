//! [`TableLocation`]: where a store's table files are kept when they are
//! not beside its other files — a bucket and a prefix, with the local disk
//! cache in front of it — as a file system reports it and the store's
//! `OPTIONS` file records it (docs/format.md §15), so that a reopen finds
//! them without being told.

use std::fmt;
use std::path::PathBuf;

/// A bucket and a key prefix holding the table files of one store
/// directory, and the local disk cache in front of them. Credentials are
/// never part of it: they come from the environment (or the code) at each
/// open.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableLocation {
    /// The bucket's name.
    pub bucket: String,
    /// The key prefix of the directory's tables: segments each followed by
    /// `/` (`"stores/a/"`), or empty for the bucket's root.
    pub prefix: String,
    /// The S3 endpoint given in code; `None`: `AWS_ENDPOINT` or AWS's own
    /// at each open.
    pub endpoint: Option<String>,
    /// The region given in code; `None`: `AWS_REGION` at each open.
    pub region: Option<String>,
    /// The local directory of the disk cache.
    pub cache_dir: PathBuf,
    /// The disk cache's size limit in bytes.
    pub cache_bytes: u64,
    /// The disk cache's unit in bytes.
    pub chunk_bytes: u64,
}

impl TableLocation {
    /// `prefix` of `bucket`, cached in `cache_dir` (1 GiB in 1 MiB chunks),
    /// endpoint and region from the environment.
    pub fn new(
        bucket: impl Into<String>,
        prefix: impl Into<String>,
        cache_dir: impl Into<PathBuf>,
    ) -> Self {
        TableLocation {
            bucket: bucket.into(),
            prefix: prefix.into(),
            endpoint: None,
            region: None,
            cache_dir: cache_dir.into(),
            cache_bytes: 1 << 30,
            chunk_bytes: 1 << 20,
        }
    }

    /// Whether `other` names the same objects: the same bucket and prefix
    /// (the endpoint, region and cache may differ between hosts).
    pub fn same_objects(&self, other: &TableLocation) -> bool {
        self.bucket == other.bucket && self.prefix == other.prefix
    }
}

impl fmt::Display for TableLocation {
    /// `s3://BUCKET/PREFIX`, and ` at ENDPOINT` when one is recorded.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.prefix)?;
        if let Some(e) = &self.endpoint {
            write!(f, " at {e}")?;
        }
        Ok(())
    }
}
