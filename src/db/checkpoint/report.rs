//! What a checkpoint leaves: the report of what [`Db::checkpoint`](crate::Db::checkpoint) made,
//! and the names by which an unfinished checkpoint's directory is known
//! (its temporary name, its marker file), which an open refuses.

use std::path::{Path, PathBuf};

/// What [`Db::checkpoint`](crate::Db::checkpoint) made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointReport {
    /// Tables in the checkpoint.
    pub tables: usize,
    /// Tables given a hard link (sharing their bytes with the store's).
    pub linked: usize,
    /// Tables copied: hard links were refused (the checkpoint is on another
    /// file system, or this one makes none).
    pub copied: usize,
    /// Bytes of the copied tables.
    pub bytes_copied: u64,
    /// Bytes of all the checkpoint's tables.
    pub bytes: u64,
    /// Write-ahead logs in the checkpoint: none for a store without other
    /// keyspaces; otherwise the store's logs still needed, each given a
    /// hard link, but the active one copied up to its length at the
    /// checkpoint's moment.
    pub logs: usize,
    /// The checkpoint holds exactly the writes with sequence numbers up to
    /// this one, in every keyspace: every write acknowledged before the
    /// call, and perhaps some made during it (each writer's writes in order,
    /// none without the writes before it; a batch spanning keyspaces whole
    /// or not at all).
    pub sequence: u64,
}

/// What ends the name of a checkpoint's temporary directory: the copy into
/// `backup` is made in `backup.checkpoint-tmp`.
pub const TEMP_SUFFIX: &str = ".checkpoint-tmp";

/// The file that marks a directory as an unfinished checkpoint: written
/// first, removed last; [`Db::open`](crate::Db::open) refuses a directory holding it
/// without a `CURRENT`.
pub const INCOMPLETE: &str = "CHECKPOINT-INCOMPLETE";

/// The temporary directory a checkpoint into `target` is made in: its
/// sibling named with [`TEMP_SUFFIX`]. `None` when `target` has no final
/// name (`/`, `..`).
pub fn temp_dir(target: &Path) -> Option<PathBuf> {
    let name = target.file_name()?;
    let mut tmp = name.to_os_string();
    tmp.push(TEMP_SUFFIX);
    Some(target.with_file_name(tmp))
}

/// Where `path`, inside a checkpoint's temporary directory, will be once
/// that directory is renamed to its target (`path` itself if it is not
/// inside one): what a checkpoint's `OPTIONS` names as its tables' place.
pub(super) fn home_of(path: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    for dir in path.ancestors() {
        let Some(name) = dir.file_name() else {
            continue;
        };
        if let Some(stem) = name.as_bytes().strip_suffix(TEMP_SUFFIX.as_bytes()) {
            let rest = path.strip_prefix(dir).unwrap_or(Path::new(""));
            let home = dir.with_file_name(std::ffi::OsStr::from_bytes(stem));
            return home.join(rest);
        }
    }
    path.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_in_the_temporary_directory_is_at_home_in_the_target() {
        let tmp = temp_dir(Path::new("/s/cp")).unwrap();
        assert_eq!(home_of(&tmp), Path::new("/s/cp"));
        assert_eq!(
            home_of(&tmp.join("keyspace-000001")),
            Path::new("/s/cp/keyspace-000001")
        );
        assert_eq!(home_of(Path::new("/s/cp/x")), Path::new("/s/cp/x"));
    }
}
