//! `Options::wal_recovery`: what an open does with a write-ahead log that
//! does not replay to its last byte. `AbsoluteConsistency` refuses it, naming
//! the log and the offset, before anything is written or deleted;
//! `TolerateTornTail` (the default) drops the end and says so in `Stats`.

mod common;

use std::path::Path;

use bloomlsm::{Db, Error, Options, WalRecovery};
use common::files::{store_with_log, tree};
use common::scratch_dir;

fn options(mode: WalRecovery) -> Options {
    common::options::synced().wal_recovery(mode)
}

/// Refused by both opens with `Corruption` naming `log` and `offset`, and
/// the directory left byte for byte as it was.
fn assert_refused(dir: &Path, log: &Path, offset: u64) {
    let before = tree(dir);
    for read_only in [false, true] {
        let opts = options(WalRecovery::AbsoluteConsistency);
        let r = if read_only {
            Db::open_read_only(dir, opts)
        } else {
            Db::open(dir, opts)
        };
        match r {
            Err(Error::Corruption {
                file,
                offset: at,
                what,
            }) => {
                assert_eq!(file, log, "read_only {read_only}: {what}");
                assert_eq!(at, offset, "read_only {read_only}: {what}");
                assert!(what.contains("AbsoluteConsistency"), "{what}");
            }
            Err(e) => panic!("read_only {read_only}: not corruption: {e}"),
            Ok(_) => panic!("read_only {read_only}: the open dropped the log's end"),
        }
        assert_eq!(
            tree(dir),
            before,
            "read_only {read_only}: the refused open wrote"
        );
    }
}

#[test]
fn a_damaged_only_record_is_refused_or_dropped_and_counted() {
    let dir = scratch_dir();
    let log = store_with_log(dir.path(), 1);
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[7 + 3] ^= 0x40; // inside the payload, past the 7-byte header
    std::fs::write(&log, &bytes).unwrap();

    assert_refused(dir.path(), &log, 0);

    // The default drops the record and says how many bytes it dropped.
    let db = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get("key0000").unwrap(), None);
    assert_eq!(db.stats().wal_tail_bytes_dropped, bytes.len() as u64);
    assert_eq!(db.stats().wal_records_salvaged, 0);
    drop(db);
    let db = Db::open(dir.path(), options(WalRecovery::TolerateTornTail)).unwrap();
    assert_eq!(db.stats().wal_tail_bytes_dropped, bytes.len() as u64);
    db.close().unwrap();
    // Dropped for good: the strict mode now opens the store (without it).
    let db = Db::open(dir.path(), options(WalRecovery::AbsoluteConsistency)).unwrap();
    assert_eq!(db.get("key0000").unwrap(), None);
    assert_eq!(db.stats().wal_tail_bytes_dropped, 0);
    db.close().unwrap();
}

#[test]
fn a_cut_last_record_is_refused_at_its_offset_and_a_zero_tail_is_the_end() {
    let dir = scratch_dir();
    let log = store_with_log(dir.path(), 20);
    let full = std::fs::read(&log).unwrap();
    // Where the last record starts: the length of the log of 19 puts.
    let dir19 = scratch_dir();
    let end19 = std::fs::metadata(store_with_log(dir19.path(), 19))
        .unwrap()
        .len();
    std::fs::write(&log, &full[..full.len() - 4]).unwrap();
    assert_refused(dir.path(), &log, end19);

    // Zeros after the last record are space a log allocated ahead: the
    // strict mode opens the store, with every put.
    let mut zeros = full.clone();
    zeros.resize(full.len() + 5000, 0);
    std::fs::write(&log, &zeros).unwrap();
    let db = Db::open(dir.path(), options(WalRecovery::AbsoluteConsistency)).unwrap();
    for i in 0..20 {
        assert!(db.get(format!("key{i:04}")).unwrap().is_some(), "key{i:04}");
    }
    assert_eq!(db.stats().wal_tail_bytes_dropped, 0);
    db.close().unwrap();
}

#[test]
fn a_clean_store_opens_under_absolute_consistency() {
    let dir = scratch_dir();
    store_with_log(dir.path(), 50);
    for _ in 0..2 {
        let db = Db::open(dir.path(), options(WalRecovery::AbsoluteConsistency)).unwrap();
        for i in 0..50 {
            assert_eq!(
                db.get(format!("key{i:04}")).unwrap().as_deref(),
                Some(format!("value{i}").as_bytes())
            );
        }
        db.put("more", "1").unwrap();
        db.close().unwrap();
    }
    let db = Db::open_read_only(dir.path(), options(WalRecovery::AbsoluteConsistency)).unwrap();
    assert!(db.get("more").unwrap().is_some());
    assert_eq!(WalRecovery::default(), WalRecovery::TolerateTornTail);
    assert_eq!(
        Options::default().wal_recovery,
        WalRecovery::TolerateTornTail
    );
}
