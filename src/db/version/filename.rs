//! The names of the files in a store directory, and parsing them back.
//!
//! ```text
//! NNNNNN.sst        an SSTable            (table_file)
//! NNNNNN.log        a write-ahead log     (log_file)
//! MANIFEST-NNNNNN   a manifest            (manifest_file)
//! CURRENT           names the live manifest, one line (current_file)
//! CURRENT.tmp       CURRENT being replaced; a leftover after a crash (current_tmp_file)
//! LOCK              held while a process has the store open (lock_file)
//! OPTIONS           the design new files follow (options_file)
//! OPTIONS.tmp       OPTIONS being replaced; a leftover after a crash
//! LOOKUPS           the lookups the store has served (lookups_file)
//! LOOKUPS.tmp       LOOKUPS being replaced; a leftover after a crash
//! DIRECT-PROBE      empty; direct reads tried on it when a store is created
//! ```
//!
//! `NNNNNN` is the file number in decimal, zero-padded to at least six digits.
//! All numbers (tables, logs, manifests) come from the one `next_file_number`
//! counter, so a number names at most one file. The parser accepts only the
//! canonical spelling so that foreign files (`12.log`, `000012.log.bak`) are never
//! mistaken for ours and deleted.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fs::{FileSystem, RealFs};

/// What a file in the store directory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// `NNNNNN.sst`.
    Table,
    /// `NNNNNN.log`.
    Log,
    /// `MANIFEST-NNNNNN`.
    Manifest,
    /// `CURRENT` (number 0).
    Current,
    /// `CURRENT.tmp` (number 0).
    CurrentTmp,
    /// `LOCK` (number 0).
    Lock,
    /// `OPTIONS`: the design of the store's files (number 0).
    Options,
    /// `OPTIONS.tmp`: `OPTIONS` being replaced; a leftover after a crash.
    OptionsTmp,
    /// `LOOKUPS`: the lookups the store has served, across opens (number 0).
    Lookups,
    /// `LOOKUPS.tmp`: `LOOKUPS` being replaced; a leftover after a crash.
    LookupsTmp,
    /// `DIRECT-PROBE`: the empty file a new store's direct reads are tried
    /// on (not `LOCK`, which only its lock opens); a leftover after a crash.
    DirectProbe,
}

/// `dir/NNNNNN.sst`.
pub fn table_file(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.sst"))
}

/// `dir/NNNNNN.log`.
pub fn log_file(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.log"))
}

/// `dir/MANIFEST-NNNNNN`.
pub fn manifest_file(dir: &Path, number: u64) -> PathBuf {
    dir.join(manifest_name(number))
}

/// The bare name `MANIFEST-NNNNNN`, as written into `CURRENT`.
pub fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// `dir/CURRENT`.
pub fn current_file(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}

/// `dir/CURRENT.tmp`.
pub fn current_tmp_file(dir: &Path) -> PathBuf {
    dir.join("CURRENT.tmp")
}

/// `dir/OPTIONS`.
pub fn options_file(dir: &Path) -> PathBuf {
    dir.join("OPTIONS")
}

/// `dir/OPTIONS.tmp`.
pub fn options_tmp_file(dir: &Path) -> PathBuf {
    dir.join("OPTIONS.tmp")
}

/// `dir/LOOKUPS`.
pub fn lookups_file(dir: &Path) -> PathBuf {
    dir.join("LOOKUPS")
}

/// `dir/LOOKUPS.tmp`.
pub fn lookups_tmp_file(dir: &Path) -> PathBuf {
    dir.join("LOOKUPS.tmp")
}

/// `dir/DIRECT-PROBE`.
pub fn direct_probe_file(dir: &Path) -> PathBuf {
    dir.join("DIRECT-PROBE")
}

/// `dir/LOCK`.
pub fn lock_file(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}

/// `dir/keyspace-NNNNNN`: the directory of keyspace `id` (its tables,
/// MANIFEST and OPTIONS; the store's WAL serves it).
pub fn keyspace_dir(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("keyspace-{id:06}"))
}

/// The keyspace id a directory entry named `keyspace-NNNNNN` belongs to.
pub fn parse_keyspace_dir(name: &str) -> Option<u32> {
    let n = parse_number(name.strip_prefix("keyspace-")?)?;
    u32::try_from(n).ok().filter(|&id| id > 0)
}

/// Parses a canonical `NNNNNN` number (at least six digits, no superfluous
/// leading zeros beyond the padding).
fn parse_number(digits: &str) -> Option<u64> {
    if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    (format!("{n:06}") == digits).then_some(n)
}

/// Parses a directory entry's file name into its kind and number (0 for the
/// unnumbered files). `None` for anything the store did not name.
pub fn parse_file_name(name: &str) -> Option<(FileKind, u64)> {
    match name {
        "CURRENT" => return Some((FileKind::Current, 0)),
        "CURRENT.tmp" => return Some((FileKind::CurrentTmp, 0)),
        "LOCK" => return Some((FileKind::Lock, 0)),
        "OPTIONS" => return Some((FileKind::Options, 0)),
        "OPTIONS.tmp" => return Some((FileKind::OptionsTmp, 0)),
        "LOOKUPS" => return Some((FileKind::Lookups, 0)),
        "LOOKUPS.tmp" => return Some((FileKind::LookupsTmp, 0)),
        "DIRECT-PROBE" => return Some((FileKind::DirectProbe, 0)),
        _ => {}
    }
    if let Some(d) = name.strip_prefix("MANIFEST-") {
        return parse_number(d).map(|n| (FileKind::Manifest, n));
    }
    if let Some(d) = name.strip_suffix(".sst") {
        return parse_number(d).map(|n| (FileKind::Table, n));
    }
    if let Some(d) = name.strip_suffix(".log") {
        return parse_number(d).map(|n| (FileKind::Log, n));
    }
    None
}

/// Every store file in `dir` as `(kind, number, path)`, sorted by kind then
/// number; entries that are not ours are left out. Used after a crash to find
/// leftovers (tables and logs no manifest refers to, stale manifests,
/// `CURRENT.tmp`) to delete.
pub fn list_store_files(dir: &Path) -> Result<Vec<(FileKind, u64, PathBuf)>> {
    list_store_files_in(&RealFs, dir)
}

/// [`list_store_files`] through `fs`.
pub fn list_store_files_in(
    fs: &dyn FileSystem,
    dir: &Path,
) -> Result<Vec<(FileKind, u64, PathBuf)>> {
    let names = fs
        .list_dir(dir)
        .map_err(|e| Error::io(format!("list {}", dir.display()), e))?;
    let mut out: Vec<(FileKind, u64, PathBuf)> = names
        .iter()
        .filter_map(|name| {
            let (kind, n) = name.to_str().and_then(parse_file_name)?;
            Some((kind, n, dir.join(name)))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// fsyncs a directory so that creations, renames and deletions of its entries
/// are durable (a file's own fsync does not cover its directory entry).
pub fn sync_dir(dir: &Path) -> Result<()> {
    sync_dir_in(&RealFs, dir)
}

/// [`sync_dir`] through `fs`.
pub fn sync_dir_in(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    fs.sync_dir(dir)
        .map_err(|e| Error::io(format!("fsync directory {}", dir.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip() {
        let d = Path::new("/db");
        for n in [0u64, 1, 42, 999_999, 1_000_000, u64::MAX] {
            for (p, kind) in [
                (table_file(d, n), FileKind::Table),
                (log_file(d, n), FileKind::Log),
                (manifest_file(d, n), FileKind::Manifest),
            ] {
                let name = p.file_name().unwrap().to_str().unwrap();
                assert_eq!(parse_file_name(name), Some((kind, n)), "{name}");
            }
        }
        assert_eq!(table_file(d, 7), Path::new("/db/000007.sst"));
        assert_eq!(manifest_name(12), "MANIFEST-000012");
        assert_eq!(parse_file_name("CURRENT"), Some((FileKind::Current, 0)));
        assert_eq!(
            parse_file_name("CURRENT.tmp"),
            Some((FileKind::CurrentTmp, 0))
        );
        assert_eq!(parse_file_name("LOCK"), Some((FileKind::Lock, 0)));
    }

    #[test]
    fn foreign_names_rejected() {
        for bad in [
            "12.log",
            "0000012.log",
            "000012.log.bak",
            "MANIFEST-",
            "MANIFEST-12",
            "abcdef.sst",
            "+00012.sst",
            "000012.SST",
            "current",
            "LOCK2",
            "",
            "99999999999999999999999.log",
        ] {
            assert_eq!(parse_file_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn lists_only_store_files() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "000003.log",
            "000002.sst",
            "MANIFEST-000001",
            "CURRENT",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        let got: Vec<_> = list_store_files(dir.path())
            .unwrap()
            .into_iter()
            .map(|(k, n, _)| (k, n))
            .collect();
        assert_eq!(
            got,
            vec![
                (FileKind::Table, 2),
                (FileKind::Log, 3),
                (FileKind::Manifest, 1),
                (FileKind::Current, 0)
            ]
        );
        sync_dir(dir.path()).unwrap();
    }
}
