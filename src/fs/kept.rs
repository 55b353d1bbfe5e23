//! Checkpoints a file system keeps beside the store it holds, instead of in
//! a directory of their own ([`super::FileSystem::put_checkpoint`]): a store wholly
//! in a bucket keeps each as one object that names the store's tables
//! rather than copying them (`bucket::BucketFs`, docs/format.md §17).

use std::io;

use bytes::Bytes;

/// What a kept checkpoint holds: the small files the store opens with, as
/// of the checkpoint's moment, and the names of the tables they name,
/// which the store then keeps as long as the checkpoint is kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeptCheckpoint {
    /// `CURRENT`, the MANIFEST, `OPTIONS` and any write-ahead log the
    /// checkpoint replays, by path relative to the store's directory (a
    /// keyspace's under its `keyspace-NNNNNN/` folder).
    pub files: Vec<(String, Bytes)>,
    /// The tables the MANIFESTs name, by path relative to the store's
    /// directory.
    pub tables: Vec<String>,
    /// The checkpoint holds exactly the writes with sequence numbers up to
    /// this one.
    pub sequence: u64,
    /// When it was made: milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
}

/// One kept checkpoint, as a listing shows it ([`crate::Db::bucket_checkpoints`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointInfo {
    /// Its name.
    pub name: String,
    /// It holds exactly the writes up to this sequence number.
    pub sequence: u64,
    /// Tables it keeps.
    pub tables: usize,
    /// When it was made: milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
}

/// Longest checkpoint name.
pub const MAX_NAME: usize = 100;

/// Checks a kept checkpoint's name: 1 to [`MAX_NAME`] ASCII letters,
/// digits, `.`, `_` and `-`, not starting with `.`; the error says so.
pub fn check_name(name: &str) -> io::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "checkpoint name {name:?}: use 1 to {MAX_NAME} ASCII letters, digits, '.', '_' \
                 and '-', not starting with '.'"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_words() {
        for good in ["nightly", "2026-11-29.1", "a_b", &"x".repeat(MAX_NAME)] {
            check_name(good).unwrap();
        }
        for bad in ["", ".hidden", "a/b", "a b", "é", &"x".repeat(MAX_NAME + 1)] {
            let e = check_name(bad).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }
}
