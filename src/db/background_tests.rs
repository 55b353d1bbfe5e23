//! The background threads: flushes do not wait for compactions.

use std::sync::mpsc;
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
