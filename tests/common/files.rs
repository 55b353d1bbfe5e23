//! A store's files: those of one kind, its only log, copies, and snapshots
//! of a directory to restore it from or to compare it with after an open
//! that must change nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bloomlsm::Db;
use bloomlsm::db::filename::{FileKind, list_store_files};

/// The store's files of `kind`, sorted by path.
pub fn files_of(dir: &Path, kind: FileKind) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = list_store_files(dir)
        .unwrap()
        .into_iter()
        .filter(|(k, _, _)| *k == kind)
        .map(|(_, _, p)| p)
        .collect();
    v.sort();
    v
}

/// The store's only write-ahead log (a second one fails the test).
pub fn only_log(dir: &Path) -> PathBuf {
    let logs = files_of(dir, FileKind::Log);
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs.into_iter().next().unwrap()
}

/// A closed store whose only log holds `n` puts of `key0000` = `value0`,
/// `key0001` = `value1`, …, each synced, and that log.
pub fn store_with_log(dir: &Path, n: u64) -> PathBuf {
    let db = Db::open(dir, super::options::synced()).unwrap();
    for i in 0..n {
        db.put(format!("key{i:04}"), format!("value{i}")).unwrap();
    }
    db.close().unwrap();
    only_log(dir)
}

/// Copies every entry of `from` into `to` (a store directory holds files
/// only).
pub fn copy_store(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// File name -> contents.
pub type Snapshot = BTreeMap<String, Vec<u8>>;

/// Every file of `dir` by name, `LOCK` aside (an open takes it, a close
/// leaves it).
pub fn snapshot(dir: &Path) -> Snapshot {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "LOCK")
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(dir.join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

/// Makes `dir` hold the files of `s`: files `s` lacks are deleted (`LOCK`
/// aside), the others written.
pub fn restore(dir: &Path, s: &Snapshot) {
    for name in snapshot(dir).keys() {
        if !s.contains_key(name) {
            std::fs::remove_file(dir.join(name)).unwrap();
        }
    }
    for (name, bytes) in s {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// Every entry under `dir`, recursively, `LOCK` included, with its bytes
/// (`None` for a directory), sorted.
pub fn tree(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.push((p.clone(), None));
            out.extend(tree(&p));
        } else {
            let bytes = std::fs::read(&p).unwrap();
            out.push((p, Some(bytes)));
        }
    }
    out.sort();
    out
}
