//! The operations on the store as a whole: flush, compact, maintain and
//! rebuild_filters of a keyspace or the store; checkpoints, checked
//! against the keys locked while they are taken; and reopen, with every
//! other thread paused.

use std::path::Path;
use std::sync::atomic::Ordering;

use bloomlsm::{Bytes, Db};

use super::codec::{key, value};
use super::failure::{Checked, Failure, engine};
use super::ops::Op;
use super::scratch;
use super::store::{SCRATCH, Store, keyspace_name};
use super::verify::{check, check_entries, present, verify_all};
use super::worker::{Shared, Worker, lock};

/// A flush, full compaction, `maintain` or filter rebuild of one keyspace
/// (through `Db` for the default keyspace, half the time). A `--whitebox`
/// child may die right after it returns.
pub fn background_work(w: &mut Worker, store: &Store, op: Op) -> Checked {
    let ks = w.keyspace();
    let h = &store.ks[ks as usize];
    let db = (ks == 0 && w.one_in(2)).then_some(&store.db);
    let r = match (op, db) {
        (Op::Flush, Some(db)) => db.flush(),
        (Op::Flush, None) => h.flush(),
        (Op::Compact, Some(db)) => db.compact(),
        (Op::Compact, None) => h.compact(),
        (Op::Maintain, Some(db)) => db.maintain(),
        (Op::Maintain, None) => h.maintain(),
        (_, Some(db)) => db.rebuild_filters().map(drop),
        (_, None) => h.rebuild_filters().map(drop),
    };
    engine(op.name(), r)?;
    w.crash_point();
    Ok(())
}

/// A checkpoint, through the store's handle or (one in four) a read-only
/// one, taken with up to 32 adjacent keys of one keyspace locked:
/// opened read-only or as a store, it must hold those keys as the expected
/// state has them; opened as a store, a write to it must leave the source
/// unchanged. A `--whitebox` child may die right after it is made.
pub fn checkpoint(w: &mut Worker, store: &Store) -> Checked {
    let sh = w.sh;
    let keys = sh.expected.keys();
    let ks = w.keyspace();
    let lo = w.key();
    let hi = (lo + 1 + w.below(32) as u32).min(keys);
    let _held = sh.locks.lock_range(ks, lo, hi);
    let n = sh.checkpoints.fetch_add(1, Ordering::Relaxed);
    let target = sh
        .checkpoint_dir
        .join(format!("cp-{}-{}-{n}", sh.args.round, w.thread));
    // One in four through a read-only handle: from the store's files, as a
    // process beside the writer takes it.
    let made = if w.one_in(4) {
        Db::open_read_only(store.db.path(), sh.opts.store.clone())
            .and_then(|ro| ro.checkpoint(&target))
    } else {
        store.db.checkpoint(&target)
    };
    engine("checkpoint", made)?;
    w.crash_point();
    let writable = w.one_in(2);
    let cp = if writable {
        Db::open(&target, sh.opts.store.clone())
    } else {
        Db::open_read_only(&target, sh.opts.store.clone())
    };
    let cp = engine("open the checkpoint", cp)?;
    let name = keyspace_name(ks);
    let cpk = engine("open a keyspace of the checkpoint", cp.keyspace(&name))?;
    let op = "checkpoint";
    for k in lo..hi {
        let got = engine(op, cpk.get(key(k)))?;
        check(op, ks, k, got.as_deref(), sh.expected.state((ks, k)))?;
    }
    let got: Vec<(Bytes, Bytes)> = engine(op, cpk.scan(key(lo)..key(hi)).collect())?;
    check_entries(
        "checkpoint (scan)",
        ks,
        &got,
        &present(&sh.expected, ks, lo, hi),
        false,
    )?;
    if writable {
        // The checkpoint's tables share the source's files: a write to it,
        // flushed and compacted, must not reach the source.
        let s = sh.expected.state((ks, lo));
        engine(op, cpk.put(key(lo), value(ks, lo, s.put().version())))?;
        engine(op, cpk.compact())?;
        let got = engine(op, store.ks[ks as usize].get(key(lo)))?;
        check(
            "checkpoint (source after a write to it)",
            ks,
            lo,
            got.as_deref(),
            s,
        )?;
    }
    drop(cpk);
    engine("close the checkpoint", cp.close())?;
    // Renamed first: a kill during the removal leaves a directory that
    // [`clean_checkpoints`] knows for a part of one.
    let doomed = target.with_extension(REMOVING);
    std::fs::rename(&target, &doomed)
        .and_then(|()| std::fs::remove_dir_all(&doomed))
        .map_err(|e| Failure::error(format!("remove {}", target.display()), e))
}

/// The extension of a checkpoint's directory being removed.
const REMOVING: &str = "removing";

/// Closes the store and opens it again, every other worker paused, then
/// checks every key of every keyspace and the scratch keyspace.
pub fn reopen(sh: &Shared) -> Checked {
    let mut g = sh.store.write().unwrap_or_else(|p| p.into_inner());
    let mut sc = lock(&sh.scratch);
    let had_scratch = sc.handle.take().is_some();
    let Some(old) = g.take() else {
        return Err(Failure::Error("the store is closed".into()));
    };
    old.close()?;
    let store = Store::open(&sh.db_dir, &sh.opts)?;
    let found = store.db.keyspace(SCRATCH).ok();
    match (had_scratch, found) {
        (true, Some(h)) => {
            scratch::check_all(&h, &sc.states)?;
            sc.handle = Some(h);
        }
        (false, None) => {}
        (had, _) => {
            return Err(Failure::mismatch(
                "reopen",
                SCRATCH,
                b"",
                if had { "the keyspace" } else { "no keyspace" },
                if had { "none" } else { "the keyspace" },
            ));
        }
    }
    verify_all(&store, &sh.expected, false)?;
    sh.verified_keys.fetch_add(
        u64::from(sh.expected.keys()) * u64::from(sh.expected.keyspaces()),
        Ordering::Relaxed,
    );
    *g = Some(store);
    Ok(())
}

/// What checkpoints a killed run left in `dir`: each finished one must open
/// and pass `Db::verify`; unfinished ones, and parts of removed ones, are
/// removed. Returns how many finished ones were checked.
pub fn clean_checkpoints(dir: &Path, opts: &bloomlsm::Options) -> Checked<u64> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Failure::error(format!("list {}", dir.display()), e)),
    };
    let mut checked = 0;
    for e in entries {
        let path = e
            .map_err(|e| Failure::error(format!("list {}", dir.display()), e))?
            .path();
        let unfinished = path.file_name().is_some_and(|n| {
            let n = n.to_string_lossy();
            n.ends_with(".checkpoint-tmp") || n.ends_with(&format!(".{REMOVING}"))
        });
        if !unfinished {
            let what = format!("open the checkpoint {}", path.display());
            let cp = engine(&what, Db::open_read_only(&path, opts.clone()))?;
            engine(
                &format!("verify the checkpoint {}", path.display()),
                cp.verify(),
            )?;
            checked += 1;
        }
        std::fs::remove_dir_all(&path)
            .map_err(|e| Failure::error(format!("remove {}", path.display()), e))?;
    }
    Ok(checked)
}
