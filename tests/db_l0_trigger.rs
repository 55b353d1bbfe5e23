//! When L0 compacts: at `l0_compaction_trigger` files, or earlier when its
//! data outweighs the base level's target (RocksDB's rule, which lets the
//! base level take L0's writes in large batches), or, from two files, once
//! the store goes idle (`Options::idle_l0_compaction`). Shapes after
//! `maintain`, which runs exactly the compactions that are due.

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

/// Waits, up to a minute, for `done`; false if it never held.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..600 {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}

fn all_found(db: &Db, keys: std::ops::Range<u64>) {
    for i in keys {
        let k = format!("key{i:08}");
        assert_eq!(
            db.get(k.as_bytes()).unwrap().as_deref(),
            Some(&[b'v'; 100][..]),
            "{k}"
        );
    }
}

#[test]
fn an_idle_store_merges_l0_below_the_trigger() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options(1 << 20).background_compaction(true)).unwrap();
    for f in 0..3 {
        one_flush(&db, f * 300, 300);
    }
    // Three L0 files, one under the trigger: merged once writes stop.
    assert!(
        eventually(|| files(&db, 0) == 0),
        "L0 never merged: {}",
        db.stats()
    );
    assert!(db.stats().compactions >= 1);
    all_found(&db, 0..900);
    drop(db);
    let db = Db::open(dir.path(), options(1 << 20)).unwrap();
    assert_eq!(files(&db, 0), 0);
    all_found(&db, 0..900);
}

#[test]
fn one_l0_file_or_the_option_off_leaves_l0_alone() {
    for (flushes, idle_merge) in [(1, true), (3, false)] {
        let dir = scratch_dir();
        let opts = options(1 << 20)
            .background_compaction(true)
            .idle_l0_compaction(idle_merge);
        let db = Db::open(dir.path(), opts).unwrap();
        for f in 0..flushes {
            one_flush(&db, f * 300, 300);
        }
        // Idle for over twice the second that makes the store idle.
        std::thread::sleep(std::time::Duration::from_millis(2500));
        assert_eq!(files(&db, 0), flushes as usize, "{}", db.stats());
        assert_eq!(db.stats().compactions, 0);
        all_found(&db, 0..flushes * 300);
    }
}

/// Writes and flushes that arrive while an idle merge runs stay in L0 above
/// its output, and every key keeps its newest value, whatever the
/// interleaving the pauses happen to give.
#[test]
fn writes_during_an_idle_merge_keep_every_key() {
    let dir = scratch_dir();
    let db = Db::open(dir.path(), options(1 << 20).background_compaction(true)).unwrap();
    for round in 0..6u64 {
        one_flush(&db, round * 300, 300);
        one_flush(&db, round * 300 + 150, 300);
        // About the second after which the store is idle, so the next
        // writes land before, during or after the merge.
        std::thread::sleep(std::time::Duration::from_millis(900 + 100 * round));
    }
    all_found(&db, 0..6 * 300 + 150);
    assert!(
        eventually(|| files(&db, 0) == 0),
        "L0 never merged: {}",
        db.stats()
    );
    all_found(&db, 0..6 * 300 + 150);
    drop(db);
    let db = Db::open(dir.path(), options(1 << 20)).unwrap();
    all_found(&db, 0..6 * 300 + 150);
}

/// `wait_for_compaction` finishes, before it returns, the merge an idle
/// store's compaction thread would run a second later; it leaves L0 alone
/// where that thread would (the option off, background compaction off),
/// and does the same for a keyspace.
#[test]
fn wait_for_compaction_runs_the_idle_merge_now() {
    for (background, idle_merge, merged) in [
        (true, true, true),
        (true, false, false),
        (false, true, false),
    ] {
        let dir = scratch_dir();
        let opts = options(1 << 20)
            .background_compaction(background)
            .idle_l0_compaction(idle_merge);
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let ks = db.create_keyspace("other", opts).unwrap();
        for f in 0..3 {
            one_flush(&db, f * 300, 300);
            ks.put(format!("ks{f}"), "v").unwrap();
            ks.flush().unwrap();
        }
        db.wait_for_compaction().unwrap();
        ks.wait_for_compaction().unwrap();
        let want = if merged { 0 } else { 3 };
        assert_eq!(files(&db, 0), want, "{}", db.stats());
        assert_eq!(ks.stats().levels[0].files, want, "{}", ks.stats());
        all_found(&db, 0..900);
        for f in 0..3 {
            assert_eq!(
                ks.get(format!("ks{f}")).unwrap().as_deref(),
                Some(&b"v"[..])
            );
        }
    }
}
