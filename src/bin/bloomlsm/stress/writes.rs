//! The writing operations: put, delete, range delete, write batches across
//! keyspaces, and ingest. Each locks the keys it writes, records their
//! pending states, writes, then records the new states.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use bloomlsm::{WriteBatch, WriteOptions};

use super::codec::{key, value};
use super::expected::{Change, Slot};
use super::failure::{Checked, Failure, engine};
use super::store::Store;
use super::verify::check;
use super::worker::{Shared, Worker};

/// Records `changes` as pending, runs `write`, then records them as made.
pub fn apply(
    sh: &Shared,
    changes: &[Change],
    what: &str,
    write: impl FnOnce() -> bloomlsm::Result<()>,
) -> Checked {
    sh.expected.begin(changes).map_err(Failure::Error)?;
    engine(what, write())?;
    sh.expected.commit(changes).map_err(Failure::Error)
}

/// A put (`put`) or a delete of one key: through the keyspace's handle,
/// through `Db` (the default keyspace), or as a batch of one, sometimes
/// synced.
pub fn put_or_delete(w: &mut Worker, store: &Store, put: bool) -> Checked {
    let sh = w.sh;
    let (ks, k) = (w.keyspace(), w.key());
    let _held = sh.locks.lock([(ks, k)]);
    let old = sh.expected.state((ks, k));
    let new = if put { old.put() } else { old.deleted() };
    let handle = &store.ks[ks as usize];
    let kb = key(k);
    // `--inject-fault`: the store gets a version the expected state never
    // records, and the read below must catch it.
    let fault = put && sh.args.inject_fault && !sh.fault_written.swap(true, Ordering::SeqCst);
    let v = value(ks, k, new.version() + u32::from(fault));
    let (how, sync) = (w.below(3), w.one_in(8));
    let what = if put { "put" } else { "delete" };
    apply(sh, &[((ks, k), new)], what, || match (put, how) {
        (true, 0) => handle.put(&kb, &v),
        (true, 1) if ks == 0 => store.db.put(&kb, &v),
        (false, 0) => handle.delete(&kb),
        (false, 1) if ks == 0 => store.db.delete(&kb),
        _ => {
            let mut b = WriteBatch::new();
            if put {
                b.put_in(handle, &kb, &v);
            } else {
                b.delete_in(handle, &kb);
            }
            store.db.write_with(b, WriteOptions::default().sync(sync))
        }
    })?;
    if fault {
        let got = engine("get (after the injected fault)", handle.get(&kb))?;
        check("put (read back)", ks, k, got.as_deref(), new)?;
    }
    Ok(())
}

/// A range delete of up to 32 adjacent keys; its end is the key after the
/// last, or a key between the last and the next.
pub fn delete_range(w: &mut Worker, store: &Store) -> Checked {
    let sh = w.sh;
    let keys = sh.expected.keys();
    let ks = w.keyspace();
    let lo = w.key();
    let hi = (lo + 1 + w.below(32) as u32).min(keys);
    let _held = sh.locks.lock_range(ks, lo, hi);
    let changes: Vec<Change> = (lo..hi)
        .map(|k| ((ks, k), sh.expected.state((ks, k)).deleted()))
        .collect();
    let end = if w.one_in(4) {
        let mut e = key(hi - 1);
        e.push(0);
        e
    } else {
        key(hi)
    };
    let handle = &store.ks[ks as usize];
    let via_batch = w.one_in(2);
    apply(sh, &changes, "delete_range", || {
        if via_batch {
            let mut b = WriteBatch::new();
            b.delete_range_in(handle, key(lo), &end);
            store.db.write(b)
        } else {
            handle.delete_range(key(lo), &end)
        }
    })
}

/// One operation of a batch.
enum BatchOp {
    Put(u32, u32),
    Delete(u32, u32),
    /// Keys `lo..hi`.
    Range(u32, u32, u32),
}

/// A batch of 1 to 8 puts, deletes and range deletes over every keyspace,
/// applied in order (a put after a range delete over it survives),
/// sometimes synced. A `--whitebox` child may die between the batch's
/// pending states and its write.
pub fn batch(w: &mut Worker, store: &Store) -> Checked {
    let sh = w.sh;
    let keys = sh.expected.keys();
    let ops: Vec<BatchOp> = (0..1 + w.below(8))
        .map(|_| {
            let (ks, k) = (w.keyspace(), w.key());
            match w.below(20) {
                0..=11 => BatchOp::Put(ks, k),
                12..=16 => BatchOp::Delete(ks, k),
                _ => BatchOp::Range(ks, k, (k + 1 + w.below(8) as u32).min(keys)),
            }
        })
        .collect();
    let slots: Vec<Slot> = ops
        .iter()
        .flat_map(|op| {
            let (ks, lo, hi) = match *op {
                BatchOp::Put(ks, k) | BatchOp::Delete(ks, k) => (ks, k, k + 1),
                BatchOp::Range(ks, lo, hi) => (ks, lo, hi),
            };
            (lo..hi).map(move |k| (ks, k))
        })
        .collect();
    let _held = sh.locks.lock(slots.iter().copied());
    let mut after: BTreeMap<Slot, _> = slots.iter().map(|&s| (s, sh.expected.state(s))).collect();
    let mut b = WriteBatch::new();
    for op in &ops {
        match *op {
            BatchOp::Put(ks, k) => {
                let s = after[&(ks, k)].put();
                after.insert((ks, k), s);
                let v = value(ks, k, s.version());
                if ks == 0 && w.one_in(2) {
                    b.put(key(k), v);
                } else {
                    b.put_in(&store.ks[ks as usize], key(k), v);
                }
            }
            BatchOp::Delete(ks, k) => {
                let s = after[&(ks, k)].deleted();
                after.insert((ks, k), s);
                b.delete_in(&store.ks[ks as usize], key(k));
            }
            BatchOp::Range(ks, lo, hi) => {
                for k in lo..hi {
                    let s = after[&(ks, k)].deleted();
                    after.insert((ks, k), s);
                }
                b.delete_range_in(&store.ks[ks as usize], key(lo), key(hi));
            }
        }
    }
    let changes: Vec<Change> = after.into_iter().collect();
    let sync = w.one_in(8);
    sh.expected.begin(&changes).map_err(Failure::Error)?;
    w.crash_point();
    engine(
        "batch",
        store.db.write_with(b, WriteOptions::default().sync(sync)),
    )?;
    sh.expected.commit(&changes).map_err(Failure::Error)
}

/// An atomic ingest of some of 4 to 64 adjacent keys, sometimes unsorted
/// and with a key given twice (the later value must win). A `--whitebox`
/// child may die right after it returns.
pub fn ingest(w: &mut Worker, store: &Store) -> Checked {
    let sh = w.sh;
    let keys = sh.expected.keys();
    let ks = w.keyspace();
    let lo = w.key();
    let hi = (lo + 4 + w.below(60) as u32).min(keys);
    let _held = sh.locks.lock_range(ks, lo, hi);
    let mut chosen: Vec<u32> = (lo..hi).filter(|_| w.one_in(2)).collect();
    if chosen.is_empty() {
        chosen.push(lo);
    }
    let changes: Vec<Change> = chosen
        .iter()
        .map(|&k| ((ks, k), sh.expected.state((ks, k)).put()))
        .collect();
    let mut records: Vec<(Vec<u8>, Vec<u8>)> = changes
        .iter()
        .map(|&((ks, k), s)| (key(k), value(ks, k, s.version())))
        .collect();
    if w.one_in(4) {
        // A value the later record of the same key replaces.
        let &((_, k), s) = &changes[w.below(changes.len() as u64) as usize];
        records.insert(0, (key(k), value(ks, k, s.version() + 7)));
        for i in (1..records.len()).rev() {
            let j = 1 + w.below(i as u64) as usize;
            records.swap(i, j);
        }
    }
    let handle = &store.ks[ks as usize];
    let whole_store = ks == 0 && w.one_in(2);
    sh.expected.begin(&changes).map_err(Failure::Error)?;
    let recs = records.into_iter().map(Ok);
    if whole_store {
        engine("ingest", store.db.ingest(recs))?;
    } else {
        engine("ingest", handle.ingest(recs))?;
    }
    w.crash_point();
    sh.expected.commit(&changes).map_err(Failure::Error)
}
