//! Argument and option errors, and the directory lock. (Operations after
//! `close` cannot be written: `close` consumes the handle.)

use bloomlsm::db::{MAX_KEY_LEN, MAX_VALUE_LEN};
use bloomlsm::{Db, Error, Options, WriteBatch};

mod common;
use common::scratch_dir;

fn invalid<T>(r: bloomlsm::Result<T>) -> bool {
    matches!(r, Err(Error::InvalidArgument(_)))
}

#[test]
fn bad_keys_and_values_are_invalid_arguments() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let long_key = vec![b'k'; MAX_KEY_LEN + 1];
    assert_eq!(long_key.len(), 65537);
    let max_key = vec![b'k'; MAX_KEY_LEN];
    let huge_value = vec![0u8; MAX_VALUE_LEN + 1];

    assert!(invalid(db.put(b"", b"v")));
    assert!(invalid(db.put(&long_key, b"v")));
    assert!(invalid(db.put(b"k", &huge_value)));
    assert!(invalid(db.delete(b"")));
    assert!(invalid(db.delete(&long_key)));
    assert!(invalid(db.get(b"")));
    assert!(invalid(db.get(&long_key)));
    // One bad op fails the whole batch, and nothing of it is applied.
    let mut b = WriteBatch::new();
    b.put(b"good", b"1");
    b.put(b"", b"2");
    assert!(invalid(db.write(b)));
    let mut b = WriteBatch::new();
    b.put(b"good", b"1");
    b.put(b"big", &huge_value);
    assert!(invalid(db.write(b)));
    assert_eq!(db.get(b"good").unwrap(), None);

    // The limits themselves are accepted, and survive a flush and reopen.
    db.put(&max_key, b"max key").unwrap();
    db.put(b"empty", b"").unwrap();
    db.write(WriteBatch::new()).unwrap(); // an empty batch is a no-op
    db.flush().unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get(&max_key).unwrap().as_deref(), Some(&b"max key"[..]));
    assert_eq!(db.get(b"empty").unwrap().as_deref(), Some(&b""[..]));
}

#[test]
fn value_at_the_limit_is_accepted() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let v = vec![7u8; MAX_VALUE_LEN];
    db.put(b"big", &v).unwrap();
    assert_eq!(
        db.get(b"big").unwrap().map(|b| b.len()),
        Some(MAX_VALUE_LEN)
    );
    db.flush().unwrap();
    assert_eq!(db.get(b"big").unwrap().as_deref(), Some(v.as_slice()));
}

#[test]
fn a_locked_store_cannot_be_opened_twice() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    match Db::open(dir.path(), Options::default()) {
        Err(Error::Locked(p)) => assert_eq!(p, dir.path()),
        other => panic!("expected Locked, got {:?}", other.err()),
    }
    db.close().unwrap();
    // Released by close.
    Db::open(dir.path(), Options::default()).unwrap();
}

#[test]
fn option_validation() {
    let ok = Options::default();
    ok.validate().unwrap();
    let bad: Vec<(&str, Options)> = vec![
        (
            "write_buffer_size",
            Options::default().write_buffer_size(4095),
        ),
        (
            "target_file_size",
            Options::default().target_file_size(4095),
        ),
        (
            "level_size_multiplier",
            Options::default().level_size_multiplier(1),
        ),
        ("block_size", Options::default().block_size(63)),
        ("max_levels", Options::default().max_levels(1)),
        (
            "l0_compaction_trigger",
            Options::default().l0_compaction_trigger(0),
        ),
        (
            "l0 triggers",
            Options::default()
                .l0_compaction_trigger(8)
                .l0_slowdown_trigger(4),
        ),
        (
            "l0 triggers",
            Options::default().l0_slowdown_trigger(8).l0_stop_trigger(7),
        ),
    ];
    let dir = scratch_dir();
    for (what, o) in bad {
        assert!(invalid(o.validate()), "{what}: {o:?}");
        // Open refuses them too, before touching the directory.
        let sub = dir.path().join(what.replace(' ', "_"));
        assert!(invalid(Db::open(&sub, o)), "{what}");
        assert!(!sub.exists(), "{what}");
    }
    // The smallest accepted sizes work.
    let tiny = Options::default()
        .write_buffer_size(4096)
        .target_file_size(4096)
        .level_size_multiplier(2);
    tiny.validate().unwrap();
    let db = Db::open(dir.path().join("tiny"), tiny).unwrap();
    for i in 0..2000u32 {
        db.put(i.to_be_bytes(), [1u8; 20]).unwrap();
    }
    db.compact().unwrap();
    assert_eq!(db.scan(..).count(), 2000);
}

#[test]
fn missing_directory_without_create_if_missing() {
    let dir = scratch_dir();
    let o = Options::default().create_if_missing(false);
    assert!(invalid(Db::open(dir.path().join("nope"), o)));
    assert!(!dir.path().join("nope").exists());
}

#[test]
fn lost_current_with_data_is_corruption_not_a_new_store() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default()).unwrap();
        db.put(b"k", b"v").unwrap();
        db.flush().unwrap();
        db.close().unwrap();
    }
    std::fs::remove_file(dir.path().join("CURRENT")).unwrap();
    let err = bloomlsm::Db::open(dir.path(), bloomlsm::Options::default()).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    // The table is still there for a human to recover.
    assert!(
        std::fs::read_dir(dir.path()).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".sst"))
    );
}

#[test]
fn create_if_missing_false_refuses_an_empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    let opts = bloomlsm::Options::default().create_if_missing(false);
    assert!(matches!(
        bloomlsm::Db::open(dir.path(), opts),
        Err(bloomlsm::Error::InvalidArgument(_))
    ));
}

/// A regular file in place of the directory is named as such, not reported
/// as a failed `mkdir`.
#[test]
fn a_file_in_place_of_the_directory_is_refused_by_name() {
    let dir = scratch_dir();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "mine").unwrap();
    match Db::open(&file, Options::default()) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("is a file"), "{m}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"mine");
}

/// A directory holding files no store makes gets no store: nothing is
/// written there, and each foreign file stays as it was. One that holds only
/// what an interrupted first open leaves is taken.
#[test]
fn a_directory_of_other_files_gets_no_new_store() {
    let dir = scratch_dir();
    std::fs::write(dir.path().join("report.txt"), "mine").unwrap();
    std::fs::create_dir(dir.path().join("photos")).unwrap();
    match Db::open(dir.path(), Options::default()) {
        Err(Error::InvalidArgument(m)) => {
            assert!(m.contains("photos") && m.contains("1 more"), "{m}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    let mut left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["photos", "report.txt"]);

    // Asked for, the store is made beside them.
    let opts = Options::default().create_among_other_files(true);
    Db::open(dir.path(), opts).unwrap().put("k", "v").unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("report.txt")).unwrap(),
        b"mine"
    );

    let fresh = scratch_dir();
    std::fs::write(fresh.path().join("LOCK"), "").unwrap();
    std::fs::write(fresh.path().join("000003.log"), "").unwrap();
    let db = Db::open(fresh.path(), Options::default()).unwrap();
    db.put("k", "v").unwrap();
}
