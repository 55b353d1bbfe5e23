//! A log whose tail recovery drops is kept, whole, in `lost/`: replay cannot
//! tell a tail torn by a crash from a last record damaged after it was
//! acknowledged, and the log is deleted once the recovered state is durable.
//! A tail of zeros carries nothing and is not kept; a clean log never is.

mod common;

use std::path::{Path, PathBuf};

use bloomlsm::Db;
use bloomlsm::db::filename::list_store_files;
use bloomlsm::db::wal;
use common::files::store_with_log;
use common::options::synced;
use common::scratch_dir;

fn lost(dir: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(dir.join("lost")) {
        Ok(rd) => rd.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

/// Opens the store and returns how many of the `n` puts it holds (a
/// prefix: anything else fails) and the bytes it reports dropped.
fn reopen(dir: &Path, n: u64) -> (u64, u64) {
    let db = Db::open(dir, synced()).unwrap();
    let mut held = 0;
    for i in 0..n {
        if let Some(v) = db.get(format!("key{i:04}")).unwrap() {
            assert_eq!(held, i, "key{i:04} after a missing key");
            assert_eq!(v, format!("value{i}").as_bytes());
            held += 1;
        }
    }
    let dropped = db.stats().wal_tail_bytes_dropped;
    db.close().unwrap();
    (held, dropped)
}

#[test]
fn a_damaged_last_record_is_dropped_and_its_log_kept() {
    let dir = scratch_dir();
    let log = store_with_log(dir.path(), 50);
    let mut bytes = std::fs::read(&log).unwrap();
    let last = bytes.len() - 3; // inside the last record's value
    bytes[last] ^= 0x10;
    std::fs::write(&log, &bytes).unwrap();

    let (held, dropped) = reopen(dir.path(), 50);
    assert_eq!(held, 49, "the damaged last put is dropped");
    assert!(dropped > 0);
    let kept = lost(dir.path());
    assert_eq!(
        kept,
        vec![dir.path().join("lost").join(log.file_name().unwrap())]
    );
    assert_eq!(
        std::fs::read(&kept[0]).unwrap(),
        bytes,
        "kept byte for byte"
    );
    assert!(!log.exists(), "the log itself is deleted as before");
    // The copy is a record log: its 49 good batches replay.
    let (batches, report) = wal::replay_all(&kept[0], true).unwrap();
    assert_eq!(batches.len(), 49);
    assert!(report.tail_dropped.is_some());

    // Later opens neither drop nor keep anything more.
    assert_eq!(reopen(dir.path(), 50), (49, 0));
    assert_eq!(lost(dir.path()).len(), 1);
}

#[test]
fn a_cut_last_record_is_kept_and_a_zero_tail_is_not() {
    let dir = scratch_dir();
    let log = store_with_log(dir.path(), 20);
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..bytes.len() - 4]).unwrap();
    assert_eq!(reopen(dir.path(), 20).0, 19);
    assert_eq!(lost(dir.path()).len(), 1);

    let dir = scratch_dir();
    let log = store_with_log(dir.path(), 20);
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.resize(bytes.len() + 5000, 0);
    std::fs::write(&log, &bytes).unwrap();
    let (held, dropped) = reopen(dir.path(), 20);
    assert_eq!(
        (held, dropped),
        (20, 0),
        "zeros after the last record are its end"
    );
    assert!(lost(dir.path()).is_empty(), "zeros carry nothing");

    let dir = scratch_dir();
    store_with_log(dir.path(), 20);
    assert_eq!(reopen(dir.path(), 20), (20, 0));
    assert!(!dir.path().join("lost").exists(), "a clean log is not kept");
}

#[test]
fn a_failed_copy_fails_the_open_and_changes_nothing() {
    let dir = scratch_dir();
    let log = store_with_log(dir.path(), 10);
    let mut bytes = std::fs::read(&log).unwrap();
    let last = bytes.len() - 2;
    bytes[last] ^= 1;
    std::fs::write(&log, &bytes).unwrap();
    // A file where the directory must go.
    std::fs::write(dir.path().join("lost"), b"in the way").unwrap();
    let before: Vec<_> = list_store_files(dir.path()).unwrap();
    let e = Db::open(dir.path(), synced()).unwrap_err();
    assert!(e.to_string().contains("lost"), "{e}");
    assert_eq!(list_store_files(dir.path()).unwrap(), before);
    assert_eq!(std::fs::read(&log).unwrap(), bytes);
    std::fs::remove_file(dir.path().join("lost")).unwrap();
    assert_eq!(reopen(dir.path(), 10).0, 9);
    assert_eq!(lost(dir.path()).len(), 1);
}
