//! Damage that passes every checksum: manifests, `CURRENT` files and WALs
//! rewritten with valid records that say what the store never writes. Open
//! must refuse each as `Corruption` without panicking or changing a file,
//! and the store must open as before once the damage is undone.
//!
//! A bit flip or a cut is caught by a checksum (`tests/db_corruption.rs`);
//! these cases model a buggy or hostile writer, or damage that happened to
//! reseal a checksum, and reach the checks behind the checksums.

mod common;

use std::path::Path;

use bloomlsm::db::filename::{log_file, manifest_file};
use bloomlsm::db::manifest::read_current;
use bloomlsm::db::{LogReader, LogWriter, Manifest, VersionEdit, WriteBatch};
use bloomlsm::fs::RealFs;
use bloomlsm::sst::{InternalKey, ValueKind};
use bloomlsm::{Db, Error, Options};
use common::files::{restore, snapshot};
use common::keys::key;
use common::model::{Model, entries, scan_all};
use common::scratch_dir;

fn options() -> Options {
    common::options::tiny().write_buffer_size(16 << 10)
}

/// A closed store with tables on two levels and writes left in its WAL.
fn build(dir: &Path) -> Model {
    let db = Db::open(dir, options()).unwrap();
    let mut model = Model::new();
    for i in 0..3000 {
        let (k, v) = (key(i * 7 % 3000), format!("value{i}").into_bytes());
        db.put(&k, &v).unwrap();
        model.insert(k, v);
        if i == 1500 {
            db.compact().unwrap();
        }
    }
    db.close().unwrap();
    model
}

/// Opens `dir`, expecting `Corruption` whose text holds `want`, and checks
/// that the failed open changed no file.
fn refused(dir: &Path, want: &str, ctx: &str) -> Error {
    let before = snapshot(dir);
    let e = match Db::open(dir, options()) {
        Ok(_) => panic!("{ctx}: the store opened"),
        Err(e) => e,
    };
    assert!(e.is_corruption(), "{ctx}: {e}");
    assert!(e.to_string().contains(want), "{ctx}: {e}");
    assert!(
        snapshot(dir) == before,
        "{ctx}: a refused open changed the files"
    );
    e
}

fn reopens_intact(dir: &Path, model: &Model, ctx: &str) {
    let db = Db::open(dir, options()).unwrap_or_else(|e| panic!("{ctx}: undone: {e}"));
    assert!(scan_all(&db) == entries(model), "{ctx}: the store changed");
    db.close().unwrap();
}

/// Rewrites the live manifest as one snapshot edit changed by `change`,
/// every record checksummed as the store writes them.
fn rewrite_manifest(dir: &Path, change: impl FnOnce(&mut VersionEdit)) {
    let (state, _) = Manifest::recover(&RealFs, dir).unwrap();
    let mut edit = state.snapshot_edit();
    change(&mut edit);
    let path = manifest_file(dir, read_current(&RealFs, dir).unwrap());
    std::fs::remove_file(&path).unwrap();
    let mut w = LogWriter::create(&path).unwrap();
    w.add_record(&edit.encode()).unwrap();
    w.sync().unwrap();
}

#[test]
fn manifest_entries_that_disagree_with_their_tables() {
    let dir = scratch_dir();
    let model = build(dir.path());
    let pristine = snapshot(dir.path());
    // A check that the rewrite itself changes nothing.
    rewrite_manifest(dir.path(), |_| {});
    reopens_intact(dir.path(), &model, "unchanged rewrite");
    restore(dir.path(), &pristine);

    type Change = Box<dyn Fn(&mut VersionEdit)>;
    type Case = (&'static str, &'static str, Change);
    let cases: Vec<Case> = vec![
        (
            "a narrower key range hides the file's first keys",
            "smallest key",
            Box::new(|e| {
                // Just above the first user key: still below the second.
                let f = &mut e.new_files.last_mut().unwrap().1;
                let mut user = f.smallest[..f.smallest.len() - 8].to_vec();
                user.push(0);
                f.smallest = InternalKey {
                    user_key: &user,
                    seq: 1,
                    kind: ValueKind::Value,
                }
                .encode();
            }),
        ),
        (
            "a wider key range",
            "largest key",
            Box::new(|e| {
                // The file ending last: wider, it overlaps no neighbour.
                let f = e
                    .new_files
                    .iter_mut()
                    .max_by(|a, b| a.1.largest.cmp(&b.1.largest));
                f.unwrap().1.largest = InternalKey {
                    user_key: b"\xff\xff",
                    seq: 1,
                    kind: ValueKind::Value,
                }
                .encode();
            }),
        ),
        (
            "an entry count near the top of u64, summed by the statistics",
            "entry count",
            Box::new(|e| e.new_files[0].1.entries = u64::MAX),
        ),
        (
            "a last sequence below the tables' (new writes would hide under old)",
            "above the manifest's last sequence",
            Box::new(|e| e.last_sequence = Some(1)),
        ),
        (
            "a next-file number that would wrap",
            "the largest a store uses",
            Box::new(|e| e.next_file_number = Some(u64::MAX)),
        ),
        (
            "a next-file number under the limit, with no room left after an open",
            "the largest a store recovers",
            Box::new(|e| e.next_file_number = Some((1 << 62) - 1)),
        ),
        (
            "a file number at the top of u64",
            "the largest a store uses",
            Box::new(|e| e.new_logs.push(u64::MAX)),
        ),
    ];
    assert!(model.len() > 1000);
    for (ctx, want, change) in cases {
        rewrite_manifest(dir.path(), change);
        refused(dir.path(), want, ctx);
        restore(dir.path(), &pristine);
        reopens_intact(dir.path(), &model, ctx);
        restore(dir.path(), &pristine);
    }
}

#[test]
fn current_naming_the_last_manifest_number() {
    let dir = scratch_dir();
    let model = build(dir.path());
    let pristine = snapshot(dir.path());
    let live = manifest_file(dir.path(), read_current(&RealFs, dir.path()).unwrap());
    std::fs::copy(&live, manifest_file(dir.path(), u64::MAX)).unwrap();
    std::fs::write(
        dir.path().join("CURRENT"),
        format!("MANIFEST-{}\n", u64::MAX),
    )
    .unwrap();
    refused(
        dir.path(),
        "the largest a store uses",
        "CURRENT at u64::MAX",
    );
    restore(dir.path(), &pristine);
    reopens_intact(dir.path(), &model, "CURRENT restored");
}

#[test]
fn wal_batches_the_write_path_refuses() {
    let dir = scratch_dir();
    let model = build(dir.path());
    let pristine = snapshot(dir.path());
    let (state, _) = Manifest::recover(&RealFs, dir.path()).unwrap();
    let log = log_file(dir.path(), state.log_number);
    // The live log's records, and the sequence the next batch would take.
    let mut records = Vec::new();
    let mut next_seq = state.last_sequence + 1;
    let mut r = LogReader::open(&log, false).unwrap();
    while let Some(rec) = r.next_record().unwrap() {
        let b = WriteBatch::decode(&rec).unwrap();
        next_seq = next_seq.max(b.last_sequence().unwrap() + 1);
        records.push(rec);
    }
    assert!(!records.is_empty(), "build leaves writes in the WAL");
    // What the case is, the key, and the value (none: a delete).
    type Case<'a> = (&'a str, &'a [u8], Option<Vec<u8>>);
    let cases: [Case; 4] = [
        ("an empty key", b"", Some(b"v".to_vec())),
        ("an empty key deleted", b"", None),
        ("a key over the limit", &[b'k'; 70_000], None),
        ("a value over the limit", b"k", Some(vec![0; 33 << 20])),
    ];
    for (ctx, k, v) in cases {
        let mut b = WriteBatch::new();
        b.put(b"fine", b"yes");
        match &v {
            Some(v) => b.put(k, v),
            None => b.delete(k),
        }
        b.set_sequence(next_seq);
        std::fs::remove_file(&log).unwrap();
        let mut w = LogWriter::create(&log).unwrap();
        for rec in &records {
            w.add_record(rec).unwrap();
        }
        w.add_record(b.encoded()).unwrap();
        w.sync().unwrap();
        drop(w);
        refused(dir.path(), "operation 1", ctx);
        restore(dir.path(), &pristine);
        reopens_intact(dir.path(), &model, ctx);
        restore(dir.path(), &pristine);
    }
}

/// A manifest whose last sequence is the largest a key holds: the store
/// opens and reads, refuses writes it could not number (before, the put was
/// acknowledged with a sequence shifted out of its key, and a scan read the
/// old value where a get read the new), and reopens.
#[test]
fn sequence_numbers_used_up() {
    let dir = scratch_dir();
    let model = build(dir.path());
    let max = InternalKey::MAX_SEQUENCE;
    rewrite_manifest(dir.path(), |e| e.last_sequence = Some(max));
    let k = key(7);
    {
        let db = Db::open(dir.path(), options()).unwrap();
        let e = db.put(&k, "new").unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        assert!(
            e.to_string().contains("sequence numbers are used up"),
            "{e}"
        );
        let mut b = WriteBatch::new();
        b.delete(key(8));
        assert!(db.write(b).is_err());
        assert_eq!(db.get(&k).unwrap().as_deref(), Some(model[&k].as_slice()));
        db.close().unwrap();
    }
    reopens_intact(dir.path(), &model, "after refused writes");
    // One short of the end: a single put fits, a batch of two does not.
    let dir = scratch_dir();
    let model = build(dir.path());
    rewrite_manifest(dir.path(), |e| e.last_sequence = Some(max - 1));
    let db = Db::open(dir.path(), options()).unwrap();
    let mut two = WriteBatch::new();
    two.put(key(1), "a");
    two.put(key(2), "b");
    assert!(db.write(two).is_err());
    db.put(&k, "last").unwrap();
    assert!(db.put(&k, "more").is_err());
    assert_eq!(db.get(&k).unwrap().as_deref(), Some(&b"last"[..]));
    let scanned = db.scan(k.as_slice()..).next().unwrap().unwrap();
    assert_eq!(&scanned.1[..], b"last");
    db.close().unwrap();
    let mut model = model;
    model.insert(k.clone(), b"last".to_vec());
    reopens_intact(dir.path(), &model, "after the last sequence");
}

/// A manifest whose last sequence is below the sequences in its tables, in a
/// store whose WAL is empty (so no batch's sequence gives it away). Opened,
/// the store would number new writes below older versions, and reads would
/// return the older ones.
#[test]
fn a_last_sequence_below_the_tables() {
    let dir = scratch_dir();
    let model = build(dir.path());
    let db = Db::open(dir.path(), options()).unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let pristine = snapshot(dir.path());
    let (state, _) = Manifest::recover(&RealFs, dir.path()).unwrap();
    for lowered in [1, state.last_sequence / 2, state.last_sequence - 1] {
        rewrite_manifest(dir.path(), |e| e.last_sequence = Some(lowered));
        let ctx = format!("last sequence {lowered} of {}", state.last_sequence);
        refused(dir.path(), "above the manifest's last sequence", &ctx);
        restore(dir.path(), &pristine);
    }
    reopens_intact(dir.path(), &model, "restored");
}
