//! When L0 compacts: at `l0_compaction_trigger` files, or earlier when its
//! data outweighs the base level's target (RocksDB's rule, which lets the
//! base level take L0's writes in large batches). Shapes after `maintain`,
//! which runs exactly the compactions that are due.

use bloomlsm::{Db, Options, WriteBatch};

mod common;
use common::scratch_dir;

fn options(level1_max_bytes: u64) -> Options {
    common::options::manual()
        .write_buffer_size(64 << 10)
        .target_file_size(16 << 10)
        .level1_max_bytes(level1_max_bytes)
        .dynamic_level_bytes(false)
        .l0_compaction_trigger(4)
}

/// Writes `n` keys starting at `first` (100-byte values), flushes them into
/// one L0 file and runs the due compactions.
fn one_flush(db: &Db, first: u64, n: u64) {
    let mut b = WriteBatch::new();
    for i in first..first + n {
        b.put(format!("key{i:08}").as_bytes(), [b'v'; 100]);
    }
    db.write(b).unwrap();
    db.maintain().unwrap();
}

fn files(db: &Db, level: usize) -> usize {
    db.stats().levels[level].files
}

#[test]
fn l0_larger_than_the_base_target_compacts_before_the_file_trigger() {
    let dir = scratch_dir();
    // ~40 KiB of data in one L0 file, L1 target 16 KiB: due by bytes.
    let db = Db::open(dir.path(), options(16 << 10)).unwrap();
    one_flush(&db, 0, 300);
    assert_eq!(files(&db, 0), 0, "{}", db.stats());
    assert!(db.stats().levels[1].files + db.stats().levels[2].files > 0);
    for i in (0..300).step_by(37) {
        let k = format!("key{i:08}");
        assert_eq!(
            db.get(k.as_bytes()).unwrap().as_deref(),
            Some(&[b'v'; 100][..])
        );
    }
}

#[test]
fn small_l0_waits_for_the_file_trigger() {
    let dir = scratch_dir();
    // Same data, L1 target 1 MiB: only the file count makes L0 due.
    let db = Db::open(dir.path(), options(1 << 20)).unwrap();
    for f in 0..3 {
        one_flush(&db, f * 300, 300);
        assert_eq!(files(&db, 0), f as usize + 1, "{}", db.stats());
    }
    one_flush(&db, 900, 300);
    assert_eq!(files(&db, 0), 0, "{}", db.stats());
}
