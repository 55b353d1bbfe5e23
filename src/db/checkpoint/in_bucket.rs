//! Checkpoints kept beside the store by its file system
//! ([`Db::checkpoint_in_bucket`]): a store wholly in a bucket keeps each as
//! one object naming the store's tables, so a checkpoint copies no table.

use super::capture::CaptureFs;
use super::*;
use crate::fs::kept::{self, CheckpointInfo};

impl Db {
    /// Makes a checkpoint of the store as of one moment, as
    /// [`Db::checkpoint`] does, but kept beside the store under `name`
    /// instead of in a directory: for a store wholly in a bucket
    /// (`BucketConfig::whole_store`), one object under the prefix's
    /// `checkpoints/` holding the store's small files as of that moment
    /// and the names of its tables. No table is copied; the store's writer
    /// keeps every table a checkpoint names until the checkpoint is
    /// deleted ([`Db::delete_bucket_checkpoint`]). It opens read-only with
    /// `BucketFs::checkpoint_reader`.
    ///
    /// Through the writer's handle it holds every write acknowledged
    /// before the call; through a read-only handle, what that handle has
    /// read of the store (after a [`Db::refresh`], every write the writer
    /// had synced by then), made from the store's files. A reader's
    /// checkpoint is safe from the writer's deletions when it is made
    /// within the writer's `BucketConfig::delete_grace` of the reader's
    /// last refresh.
    ///
    /// Fails when `name` is not 1 to 100 ASCII letters, digits, `.`, `_`
    /// and `-` (not starting with `.`), when a checkpoint of that name
    /// exists, when the store's file system keeps no checkpoints (a store
    /// on a local disk: use [`Db::checkpoint`]), when the writer has been
    /// fenced ([`Error::Fenced`]; nothing is kept), and on any I/O error.
    pub fn checkpoint_in_bucket(&self, name: &str) -> Result<CheckpointReport> {
        let inner = &self.inner;
        kept::check_name(name).map_err(|e| Error::invalid(e.to_string()))?;
        let capture = CaptureFs::new(inner.fs(), &inner.dir);
        let report = inner.checkpoint(capture.target(), &capture)?;
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let checkpoint = capture.kept(report.sequence, created);
        inner
            .fs()
            .put_checkpoint(&inner.dir, name, &checkpoint)
            .map_err(|e| Error::io(format!("keep checkpoint {name:?}"), e))?;
        Ok(report)
    }

    /// The checkpoints kept beside the store
    /// ([`Db::checkpoint_in_bucket`]), by name.
    pub fn bucket_checkpoints(&self) -> Result<Vec<CheckpointInfo>> {
        self.inner
            .fs()
            .list_checkpoints(&self.inner.dir)
            .map_err(|e| Error::io("list the store's checkpoints", e))
    }

    /// Deletes the kept checkpoint `name`. The tables only it kept are
    /// deleted by the store's writer when it next opens; a checkpoint
    /// reader open on it fails its next read of such a table (never a wrong
    /// value).
    pub fn delete_bucket_checkpoint(&self, name: &str) -> Result<()> {
        kept::check_name(name).map_err(|e| Error::invalid(e.to_string()))?;
        self.inner
            .fs()
            .delete_checkpoint(&self.inner.dir, name)
            .map_err(|e| Error::io(format!("delete checkpoint {name:?}"), e))
    }
}
