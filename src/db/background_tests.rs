//! The background threads: flushes do not wait for compactions, and a
//! thread that fails or panics stops the store with an error that every
//! waiting and later writer gets, never a hang.

use std::sync::{Arc, mpsc};
use std::time::Duration;

use crate::{Db, Options};

#[test]
fn a_flush_finishes_while_a_compaction_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("apple", "red").unwrap();
    // Held as a long compaction holds it.
    let compaction = db.inner.compact_work.lock().unwrap();
    let (done, flushed) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| done.send(db.flush()).unwrap());
        let r = flushed.recv_timeout(Duration::from_secs(60));
        drop(compaction);
        r.expect("the flush waited for the compaction")
            .expect("the flush succeeded");
    });
    assert_eq!(db.stats().flushes, 1);
    assert_eq!(db.get("apple").unwrap().as_deref(), Some(&b"red"[..]));
    db.close().unwrap();
}

/// A value at the documented limit, then small writes and a full
/// compaction, then many writes: the file rewritten in place of a move
/// (one file whatever its size) once overflowed the sharding arithmetic in
/// a build with overflow checks, killing the compaction thread while every
/// writer waited for it. Every write is answered, and all of them are read
/// back.
#[test]
fn a_value_at_the_limit_then_a_long_load_completes() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options {
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts()).unwrap();
    db.put(b"big", vec![0u8; crate::db::MAX_VALUE_LEN]).unwrap();
    db.flush().unwrap();
    for i in 0..2000 {
        db.put(format!("k{i:06}"), b"x").unwrap();
    }
    db.flush().unwrap();
    db.compact().unwrap();
    for i in 0..100_000 {
        db.put(format!("m{i:08}"), [7u8; 100]).unwrap();
    }
    db.close().unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    assert_eq!(
        db.get(b"big").unwrap().map(|v| v.len()),
        Some(crate::db::MAX_VALUE_LEN)
    );
    assert_eq!(db.get("k001999").unwrap().as_deref(), Some(&b"x"[..]));
    assert_eq!(
        db.get("m00099999").unwrap().as_deref(),
        Some(&[7u8; 100][..])
    );
    db.verify().unwrap();
}

use super::inject::{self, Failure, Point};
use crate::Error;

/// Small memtables and L0 triggers, so that writers stall within a few
/// hundred writes once flushes or compactions stop.
fn stalling() -> Options {
    Options {
        write_buffer_size: 8 << 10,
        target_file_size: 8 << 10,
        l0_compaction_trigger: 2,
        l0_slowdown_trigger: 3,
        l0_stop_trigger: 4,
        ..Options::default()
    }
}

/// What one writer thread did: the keys acknowledged, and the error that
/// stopped it (`None`: it wrote all its keys).
type Writer = (Vec<String>, Option<Error>);

/// Starts `n` writers of up to 200,000 keys each; each reports on the
/// returned channel.
fn writers(db: &Arc<Db>, n: usize) -> mpsc::Receiver<Writer> {
    let (tx, rx) = mpsc::channel();
    for t in 0..n {
        let (db, tx) = (db.clone(), tx.clone());
        std::thread::spawn(move || {
            let mut acked = Vec::new();
            let mut failed = None;
            for i in 0..200_000 {
                let k = format!("w{t}-{i:07}");
                if let Err(e) = db.put(&k, [b'v'; 100]) {
                    failed = Some(e);
                    break;
                }
                acked.push(k);
            }
            // Let go of the store before reporting: the test then owns it.
            drop(db);
            let _ = tx.send((acked, failed));
        });
    }
    rx
}

/// Waits until some writer is stalled (`write_stalls` grows), at most a
/// minute: the stall is the state the failure must find.
fn wait_for_stall(db: &Db) {
    for _ in 0..6000 {
        if db.stats().write_stalls > 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the writers never stalled");
}

/// Every writer must come back with the store's error, whose cause is the
/// injected failure; `close` returns it too; a reopen holds every
/// acknowledged write.
fn expect_poisoned(
    dir: &std::path::Path,
    db: Arc<Db>,
    rx: mpsc::Receiver<Writer>,
    n: usize,
    failure: Failure,
) {
    let mut acked = Vec::new();
    for _ in 0..n {
        let (keys, err) = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("a writer still waits two minutes after the failure");
        let err = err.expect("a writer wrote all its keys past a failed background thread");
        check_cause(&err, failure);
        acked.extend(keys);
    }
    check_cause(&db.put("after", "x").unwrap_err(), failure);
    let db = Arc::try_unwrap(db).expect("the writers have let go of the store");
    check_cause(&db.close().unwrap_err(), failure);
    let db = Db::open(dir, stalling()).unwrap();
    for k in &acked {
        assert!(db.get(k).unwrap().is_some(), "acknowledged {k} lost");
    }
    db.put("after-reopen", "x").unwrap();
    db.close().unwrap();
}

fn check_cause(e: &Error, failure: Failure) {
    let Error::Poisoned { cause, .. } = e else {
        panic!("not a poisoned-store error: {e}");
    };
    match failure {
        Failure::Panic => assert!(
            matches!(cause.as_ref(), Error::Panicked(m) if m.contains("injected panic")),
            "{e}"
        ),
        Failure::Error => assert_eq!(e.io_kind(), Some(std::io::ErrorKind::StorageFull), "{e}"),
    }
}

/// The flush thread fails (an error, then a panic) while writers wait for
/// room: every writer gets the error, none waits forever.
#[test]
fn a_failed_flush_thread_stops_every_stalled_writer() {
    for failure in [Failure::Error, Failure::Panic] {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(dir.path(), stalling()).unwrap());
        let held = db.inner.flush_work.lock().unwrap();
        let rx = writers(&db, 3);
        wait_for_stall(&db);
        inject::arm(dir.path(), Point::Flush, failure);
        drop(held);
        expect_poisoned(dir.path(), db, rx, 3, failure);
    }
}

/// The compaction thread fails while writers wait on the L0 stop trigger.
#[test]
fn a_failed_compaction_thread_stops_every_stalled_writer() {
    for failure in [Failure::Error, Failure::Panic] {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(dir.path(), stalling()).unwrap());
        let held = db.inner.compact_work.lock().unwrap();
        let rx = writers(&db, 3);
        wait_for_stall(&db);
        inject::arm(dir.path(), Point::Compaction, failure);
        drop(held);
        expect_poisoned(dir.path(), db, rx, 3, failure);
    }
}

/// The files thread panics while writers wait on the L0 stop trigger: the
/// store is poisoned as for the other threads.
#[test]
fn a_panicking_files_thread_stops_every_stalled_writer() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), stalling()).unwrap());
    let held = db.inner.compact_work.lock().unwrap();
    let rx = writers(&db, 3);
    wait_for_stall(&db);
    inject::arm(dir.path(), Point::Files, Failure::Panic);
    drop(held);
    expect_poisoned(dir.path(), db, rx, 3, Failure::Panic);
}

/// The files thread fails to prepare a table file: not fatal, since a
/// compaction that finds no prepared file creates its own (and meets the
/// error itself if the cause persists). The writers finish; the store
/// stays whole.
#[test]
fn a_failed_file_preparation_is_left_to_the_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), stalling()).unwrap());
    inject::arm(dir.path(), Point::Files, Failure::Error);
    let rx = {
        let (tx, rx) = mpsc::channel();
        let db = db.clone();
        std::thread::spawn(move || {
            let r: crate::Result<()> =
                (0..20_000).try_for_each(|i| db.put(format!("k{i:06}"), [b'v'; 100]));
            drop(db);
            let _ = tx.send(r);
        });
        rx
    };
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the writer still waits two minutes on")
        .expect("a failed preparation failed a write");
    assert!(db.stats().compactions > 0);
    let db = Arc::try_unwrap(db).expect("the writer has let go of the store");
    db.verify().unwrap();
    db.close().unwrap();
}

/// A read on the I/O threads of a direct-I/O `multi_get` panics: the
/// caller gets the panic as an error, and the store is poisoned, waking a
/// writer stalled at that moment.
#[test]
fn a_panicking_io_thread_fails_the_read_and_stops_stalled_writers() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options {
        read_mode: crate::ReadMode::DirectOrBuffered,
        ..stalling()
    };
    let db = Arc::new(Db::open(dir.path(), opts()).unwrap());
    if db.read_mode() != crate::ReadMode::Direct {
        eprintln!("skipped: {} refuses direct I/O", dir.path().display());
        return;
    }
    for i in 0..2000 {
        db.put(format!("k{i:06}"), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    let held = db.inner.compact_work.lock().unwrap();
    let rx = writers(&db, 2);
    wait_for_stall(&db);
    inject::arm(dir.path(), Point::Io, Failure::Panic);
    let keys: Vec<String> = (0..64).map(|i| format!("k{:06}", i * 31)).collect();
    let e = db.multi_get(&keys).unwrap_err();
    assert!(
        matches!(&e, Error::Panicked(m) if m.contains("injected panic")),
        "{e}"
    );
    drop(held);
    expect_poisoned(dir.path(), db, rx, 2, Failure::Panic);
}

/// Once writes pause, the compaction thread rebuilds the filters whose
/// level's Monkey allocation moved while the tree grew, until the store
/// spends its budget.
#[test]
fn the_compaction_thread_rebuilds_filters_when_writes_pause() {
    use crate::{FilterKind, FilterOptions};
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            write_buffer_size: 256 << 10,
            target_file_size: 128 << 10,
            level1_max_bytes: 512 << 10,
            compression: crate::CompressionOptions::none(),
            filters: FilterOptions::monkey(FilterKind::Blocked512, 10.0),
            ..Options::default()
        },
    )
    .unwrap();
    let mut rng = crate::test_rng::xorshift(0xF17E);
    for _ in 0..150_000 {
        db.put(format!("{:016x}", rng()), [7u8; 64]).unwrap();
    }
    let spent = |db: &Db| {
        let s = db.stats();
        let keys: u64 = s.levels.iter().map(|l| l.filtered_keys).sum();
        (
            s.filter_bytes as f64 * 8.0 / keys.max(1) as f64,
            s.filter_rebuilds,
        )
    };
    // At most two minutes: a bound against hanging, not a timing.
    for _ in 0..1200 {
        let (bits, rebuilds) = spent(&db);
        // Files of ~1,700 keys round their filters up to whole 512-bit
        // lines: up to 0.3 bits per key above the allocation.
        if rebuilds > 0 && (9.8..=10.4).contains(&bits) && db.inner.refilter_due().is_none() {
            db.close().unwrap();
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no rebuild to the budget: {:?}, {}", spent(&db), db.stats());
}

/// One file's rewrite of a batched filter rebuild fails or panics on one
/// of the rebuild's worker threads: `rebuild_filters` returns the failure (a panic
/// as `Panicked`, not unwound into the caller), the store is poisoned for
/// the calls after it, and a reopen holds every key and finishes the
/// rebuild.
#[test]
fn a_failed_filter_rebuild_worker_poisons_the_store_and_loses_nothing() {
    use crate::{FilterOptions, FilterPolicy};
    for failure in [Failure::Error, Failure::Panic] {
        let dir = tempfile::tempdir().unwrap();
        let opts = |filters: FilterOptions| {
            Options {
                background_compaction: false,
                write_buffer_size: 64 << 10,
                target_file_size: 64 << 10,
                ..Options::default()
            }
            .filters(filters)
            .use_stored_design(false)
        };
        let db = Db::open(dir.path(), opts(FilterOptions::none())).unwrap();
        for i in 0..5000 {
            db.put(format!("k{i:06}"), [b'v'; 100]).unwrap();
        }
        db.compact().unwrap();
        assert!(db.stats().levels.iter().map(|l| l.files).sum::<usize>() > 1);
        db.close().unwrap();

        let blocked = || FilterOptions::uniform(Some(FilterPolicy::blocked512(10.0)));
        let db = Db::open(dir.path(), opts(blocked())).unwrap();
        inject::arm(dir.path(), Point::Refilter, failure);
        // The caller gets the failure itself; later calls the poisoned store.
        let e = db.rebuild_filters().unwrap_err();
        match failure {
            Failure::Panic => {
                assert!(
                    matches!(&e, Error::Panicked(m) if m.contains("injected panic")),
                    "{e}"
                )
            }
            Failure::Error => assert_eq!(e.io_kind(), Some(std::io::ErrorKind::StorageFull), "{e}"),
        }
        check_cause(&db.put("after", "x").unwrap_err(), failure);
        check_cause(&db.close().unwrap_err(), failure);

        let db = Db::open(dir.path(), opts(blocked())).unwrap();
        for i in (0..5000).step_by(7) {
            assert!(
                db.get(format!("k{i:06}")).unwrap().is_some(),
                "k{i:06} lost"
            );
        }
        assert!(db.rebuild_filters().unwrap() > 0);
        assert!(
            db.file_stats()
                .iter()
                .all(|f| f.filter.starts_with("blocked512"))
        );
        db.verify().unwrap();
        db.close().unwrap();
    }
}

/// An idle store's compaction thread examines a version for filter
/// rebuilds once: the version on which none was due is remembered, and
/// the next version is examined afresh.
#[test]
fn a_version_with_no_filter_rebuild_due_is_examined_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default().background_compaction(false)).unwrap();
    db.put("apple", "red").unwrap();
    db.flush().unwrap();
    let inner = &db.inner;
    let remembered = || inner.refilter_clear.lock().unwrap().0.as_ptr();
    let v = inner.state().vs.current().clone();
    assert!(remembered().is_null() || !std::ptr::eq(remembered(), Arc::as_ptr(&v)));
    assert!(inner.refilter_pick(&v).is_none());
    assert!(std::ptr::eq(remembered(), Arc::as_ptr(&v)));
    db.put("banana", "yellow").unwrap();
    db.flush().unwrap();
    let next = inner.state().vs.current().clone();
    assert!(!Arc::ptr_eq(&v, &next));
    assert!(inner.refilter_pick(&next).is_none());
    assert!(std::ptr::eq(remembered(), Arc::as_ptr(&next)));
    db.close().unwrap();
}
