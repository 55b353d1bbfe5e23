//! Fault sweeps, so that no single failed file operation and no power cut
//! loses an acknowledged write: one script of writes, batches, WAL rotations,
//! flushes, compactions and a reopen, run again and again on
//! [`FaultFs`], each run failing a different operation.
//!
//! - **One fault** (`EIO` or `ENOSPC`, each operation of each kind in turn):
//!   the failing call returns the error; every later write fails with
//!   `Poisoned`; reads of acknowledged keys keep working; after the store is
//!   dropped, a reopen without faults succeeds and holds every acknowledged
//!   write, and the failed write's batch either whole or not at all.
//! - **Power loss** at each operation in turn (a sticky fault: nothing reaches
//!   the disk after it, then every unsynced byte, file and rename is
//!   dropped): with `sync_writes` every acknowledged write survives; without,
//!   the store comes back as the state after some prefix of the acknowledged
//!   writes — the promise SIGKILL cannot test, since it keeps the page cache.
//!
//! The default run visits a spread of points; `BLOOMLSM_LONG=1` visits every
//! operation of the script (docs/design.md, "Testing").

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::fs::fault::{Fault, FaultError, FaultFs, Op};
use crate::{Db, Error, Options, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// Puts (value `Some`) and deletes (`None`), written as one batch.
type Batch = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// One step of the script.
#[derive(Clone, Debug)]
enum Step {
    Write(Batch),
    Flush,
    Maintain,
    Compact,
    Reopen,
}

fn script() -> Vec<Step> {
    let mut rng = 0x000F_A017_u64;
    let mut next = move |n: u64| {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (rng >> 33) % n
    };
    let mut steps = Vec::new();
    for i in 0..140u64 {
        let ops = if i % 7 == 3 { 1 + next(4) } else { 1 };
        let batch = (0..ops)
            .map(|_| {
                let k = format!("key{:04}", next(120)).into_bytes();
                if next(5) == 0 {
                    (k, None)
                } else {
                    let len = 150 + next(200) as usize;
                    let mut v = format!("v{i}-").into_bytes();
                    v.resize(len, b'a' + (i % 26) as u8);
                    (k, Some(v))
                }
            })
            .collect();
        steps.push(Step::Write(batch));
        match i {
            30 | 100 => steps.push(Step::Flush),
            60 => steps.push(Step::Maintain),
            75 => steps.push(Step::Reopen),
            120 => steps.push(Step::Compact),
            _ => {}
        }
    }
    steps
}

fn options(fs: &FaultFs, sync: bool) -> Options {
    Options {
        write_buffer_size: 4096,
        target_file_size: 4096,
        level1_max_bytes: 8 << 10,
        level_size_multiplier: 2,
        l0_compaction_trigger: 2,
        block_size: 1024,
        block_cache_capacity: 0,
        background_compaction: false,
        sync_writes: sync,
        // The MANIFEST rolls over every few edits: faults land inside
        // rollovers too.
        max_manifest_edits: 3,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn apply(model: &mut Model, batch: &Batch) {
    for (k, v) in batch {
        match v {
            Some(v) => model.insert(k.clone(), v.clone()),
            None => model.remove(k),
        };
    }
}

fn contents(db: &Db) -> Result<Model, Error> {
    db.scan(..)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect()
}

/// What one run of the script did.
struct Run {
    /// The state after each prefix of the acknowledged writes (`states[0]`
    /// is empty).
    states: Vec<Model>,
    /// The batch whose write returned an error, if any.
    failed: Option<Batch>,
    /// Whether some call failed (a write, a flush, a compaction, an open).
    errored: bool,
}

/// Runs the script until the first error. With `check_after_error`, checks
/// what the store must do right after it: later writes fail with `Poisoned`
/// and reads of acknowledged keys still answer correctly.
fn run(dir: &std::path::Path, fs: &FaultFs, sync: bool, check_after_error: bool) -> Run {
    let mut step_no = 0;
    let mut states = vec![Model::new()];
    let mut failed = None;
    let mut errored = false;
    let mut db = match Db::open(dir, options(fs, sync)) {
        Ok(db) => Some(db),
        Err(_) => {
            return Run {
                states,
                failed,
                errored: true,
            };
        }
    };
    for step in script() {
        step_no += 1;
        let h = db.as_ref().expect("open");
        let r = match &step {
            Step::Write(batch) => {
                let mut b = WriteBatch::new();
                for (k, v) in batch {
                    match v {
                        Some(v) => b.put(k, v),
                        None => b.delete(k),
                    }
                }
                let r = h.write(b);
                match &r {
                    Ok(()) => {
                        let mut m = states.last().unwrap().clone();
                        apply(&mut m, batch);
                        states.push(m);
                    }
                    Err(_) => failed = Some(batch.clone()),
                }
                r
            }
            Step::Flush => h.flush(),
            Step::Maintain => h.maintain(),
            Step::Compact => h.compact(),
            Step::Reopen => db
                .take()
                .expect("open")
                .close()
                .and_then(|()| Db::open(dir, options(fs, sync)))
                .map(|d| db = Some(d)),
        };
        if let Err(e) = r {
            errored = true;
            if check_after_error && let Some(h) = &db {
                let later = h.put(b"later", b"write");
                assert!(
                    matches!(later, Err(Error::Poisoned { .. })),
                    "after {e} in step {step_no} ({step:?}): a later write gave {later:?}"
                );
                let want = states.last().unwrap();
                for (k, v) in want {
                    if failed
                        .as_ref()
                        .is_some_and(|b| b.iter().any(|(fk, _)| fk == k))
                    {
                        continue;
                    }
                    let got = h.get(k).unwrap_or_else(|e2| panic!("read after {e}: {e2}"));
                    assert_eq!(got.as_deref(), Some(v.as_slice()), "read after {e}");
                }
            }
            break;
        }
    }
    if let Some(db) = db
        && db.close().is_err()
    {
        errored = true;
    }
    Run {
        states,
        failed,
        errored,
    }
}

/// Reopens without faults and returns the store's contents.
fn reopen(dir: &std::path::Path, fs: &FaultFs, what: &str) -> Model {
    fs.disarm();
    let db = Db::open(dir, options(fs, false)).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
    let m = contents(&db).unwrap_or_else(|e| panic!("{what}: read: {e}"));
    db.close().unwrap_or_else(|e| panic!("{what}: close: {e}"));
    m
}

/// The operations of one clean run of the script, by kind.
fn census(sync: bool) -> Vec<(Op, u64)> {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultFs::new();
    let r = run(dir.path(), &fs, sync, false);
    assert!(!r.errored);
    let counts: Vec<(Op, u64)> = [
        Op::Create,
        Op::Write,
        Op::Sync,
        Op::Rename,
        Op::Remove,
        Op::SyncDir,
        Op::OpenRead,
        Op::Read,
        Op::Lock,
    ]
    .into_iter()
    .map(|op| (op, fs.count(Some(op))))
    .collect();
    let full = reopen(dir.path(), &fs, "clean run");
    assert_eq!(&full, r.states.last().unwrap());
    counts
}

fn long() -> bool {
    std::env::var_os("BLOOMLSM_LONG").is_some_and(|v| v != "0")
}

/// `n` points spread over `0..total` (all of them in long mode).
fn points(total: u64, n: u64) -> Vec<u64> {
    if long() || total <= n {
        return (0..total).collect();
    }
    let mut v: Vec<u64> = (0..n).map(|i| i * total / n).collect();
    v.push(total - 1);
    v.dedup();
    v
}

/// One trial per fault: each operation kind of `census` failing at
/// `per_kind` spread points, alone and as a power loss, each on a fresh
/// directory and file system. `run` makes the store, arms the fault, runs
/// the operation, and gives its result, or `None` when the fault did not
/// trip (parallel work may run fewer operations of a kind than the census
/// counted). A tripped fault must fail the operation; then the file system
/// loses what was not synced (for a power loss) and is disarmed, and
/// `check` inspects the store. Returns the trials run.
fn fault_trials<T>(
    census: &[(Op, u64)],
    per_kind: u64,
    mut run: impl FnMut(&std::path::Path, &FaultFs, Fault) -> Option<crate::Result<T>>,
    mut check: impl FnMut(&str, &std::path::Path, &FaultFs),
) -> usize {
    let mut trials = 0;
    for &(op, total) in census {
        for nth in points(total, per_kind) {
            for power_loss in [false, true] {
                let what = format!("{op:?} #{nth} of {total} fails, power loss {power_loss}");
                let dir = tempfile::tempdir().unwrap();
                let fs = FaultFs::new();
                let fault = Fault {
                    op: Some(op),
                    nth,
                    error: FaultError::Io,
                    sticky: power_loss,
                };
                let Some(r) = run(dir.path(), &fs, fault) else {
                    continue;
                };
                assert!(r.is_err(), "{what}: no error");
                if power_loss {
                    fs.power_loss().unwrap();
                }
                fs.disarm();
                check(&what, dir.path(), &fs);
                trials += 1;
            }
        }
    }
    trials
}

#[test]
fn one_fault_anywhere_loses_no_acknowledged_write() {
    let census = census(true);
    let (mut trials, mut skipped) = (0, 0);
    for &(op, total) in &census {
        assert!(
            total > 0 || op == Op::Remove,
            "{op:?} never happens: {census:?}"
        );
        for nth in points(total, 12) {
            let what = format!("{op:?} #{nth} of {total} fails");
            let dir = tempfile::tempdir().unwrap();
            let fs = FaultFs::new();
            fs.arm(Fault {
                op: Some(op),
                nth,
                error: if nth % 2 == 0 {
                    FaultError::Io
                } else {
                    FaultError::NoSpace
                },
                sticky: false,
            });
            let r = run(dir.path(), &fs, true, true);
            if !fs.tripped() {
                // Whether a close finds frozen memtables still unflushed
                // (their logs are then replayed at the reopen) depends on the
                // background thread's timing, so a run may read a little
                // less than the census did: then there was no such operation.
                assert!(
                    !r.errored && fs.count(Some(op)) <= nth,
                    "{what}: the fault never fired"
                );
                skipped += 1;
                continue;
            }
            // A removal that fails is only a leftover file; every other
            // fault reaches the caller.
            assert!(r.errored || matches!(op, Op::Remove), "{what}: no error");
            let got = reopen(dir.path(), &fs, &what);
            let acked = r.states.last().unwrap();
            match &r.failed {
                None => assert!(got == *acked, "{what}: acknowledged writes lost"),
                Some(batch) => {
                    let mut with = acked.clone();
                    apply(&mut with, batch);
                    assert!(
                        got == *acked || got == with,
                        "{what}: not the acknowledged state, with or without the failed batch"
                    );
                }
            }
            trials += 1;
        }
    }
    assert!(
        trials >= 60 && skipped * 20 <= trials,
        "{trials} trials, {skipped} skipped"
    );
    eprintln!(
        "one fault: {trials} trials ({skipped} past the end of their run) over the script's \
         operations {census:?}"
    );
}

#[test]
fn power_loss_anywhere_keeps_synced_writes() {
    for sync in [true, false] {
        let total: u64 = census(sync).iter().map(|(_, n)| n).sum();
        let mut prefixes = Vec::new();
        for nth in points(total, 40) {
            let what = format!("power lost at operation {nth} of {total} (sync_writes {sync})");
            let dir = tempfile::tempdir().unwrap();
            let fs = FaultFs::new();
            fs.arm(Fault {
                op: None,
                nth,
                error: FaultError::Io,
                sticky: true,
            });
            let r = run(dir.path(), &fs, sync, false);
            fs.power_loss().unwrap();
            let got = reopen(dir.path(), &fs, &what);
            let j = r.states.iter().rposition(|s| *s == got).unwrap_or_else(|| {
                panic!("{what}: not the state after any prefix of the acknowledged writes")
            });
            if sync {
                assert_eq!(j, r.states.len() - 1, "{what}: acknowledged writes lost");
            }
            prefixes.push((j, r.states.len() - 1));
        }
        let lost = prefixes.iter().filter(|(j, n)| j < n).count();
        eprintln!(
            "power loss (sync_writes {sync}): {} trials over {total} operations, {lost} lost unsynced writes",
            prefixes.len()
        );
        if !sync {
            // Without fsync per write, power loss does cost writes somewhere.
            assert!(prefixes.iter().any(|(j, n)| j < n), "{prefixes:?}");
        }
    }
}

/// A trivial move is appended to the MANIFEST without a sync; `close` syncs
/// it, so a power cut after a clean close leaves the store in the shape it
/// was closed in (before, the file came back at its old level).
#[test]
fn close_makes_trivial_moves_durable() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultFs::new();
    let opts = Options {
        level1_max_bytes: 1024,
        compression: crate::CompressionOptions::none(),
        ..options(&fs, true)
    };
    let levels = |db: &Db| -> Vec<usize> { db.file_stats().iter().map(|f| f.level).collect() };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    for i in 0..200u32 {
        db.put(format!("k{i:04}"), [7u8; 100]).unwrap();
    }
    // Flush, merge L0 into L1, then move the L1 files down, one trivial
    // move at a time, until every level is under its target.
    db.maintain().unwrap();
    let closed_as = levels(&db);
    assert!(closed_as.iter().all(|&l| l > 1), "{closed_as:?}");
    db.close().unwrap();
    fs.power_loss().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(levels(&db), closed_as);
    for i in 0..200u32 {
        assert!(db.get(format!("k{i:04}")).unwrap().is_some());
    }
}

/// A store of more tables than it may hold open, on [`FaultFs`]: a table
/// whose file must be reopened for a read, and whose reopen fails, makes
/// that read fail with the I/O error — no panic, no wrong or missing value,
/// no poisoned store — and the next read reopens it.
#[test]
fn a_failed_reopen_fails_the_read_and_the_next_read_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultFs::new();
    let opts = Options {
        max_subcompactions: 1,
        ..options(&fs, false)
    };
    let opts = Options {
        max_open_files: opts.min_max_open_files(),
        ..opts
    };
    let capacity = opts.table_cache_capacity();
    let db = Db::open(dir.path(), opts).unwrap();
    let mut model = Model::new();
    let key = |i: u64| format!("key{i:05}").into_bytes();
    for i in 0..3000u64 {
        let v = format!("value {i} {}", "x".repeat(80)).into_bytes();
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
        if i % 200 == 199 {
            db.maintain().unwrap();
        }
    }
    db.maintain().unwrap();
    let tables = db.file_stats().len();
    assert!(tables > 3 * capacity, "{tables} tables, {capacity} open");
    let fault = |sticky| Fault {
        op: Some(Op::OpenRead),
        nth: 0,
        error: FaultError::Io,
        sticky,
    };
    let reopen_error = |e: &Error| match e {
        Error::Io { context, .. } => context.starts_with("reopen "),
        _ => false,
    };

    // Gets: every answer until the failed reopen is right; the failed one
    // is an error; the same get then answers.
    fs.arm(fault(false));
    let mut failed = None;
    for i in (0..3000u64).step_by(7) {
        match db.get(key(i)) {
            Ok(v) => assert_eq!(v.as_deref(), model.get(&key(i)).map(|v| &v[..])),
            Err(e) => {
                assert!(reopen_error(&e), "{e}");
                failed = Some(i);
                break;
            }
        }
    }
    let i = failed.expect("some get reopened a table");
    assert!(fs.tripped());
    assert_eq!(
        db.get(key(i)).unwrap().as_deref(),
        model.get(&key(i)).map(|v| &v[..])
    );

    // A multi_get and a scan while every reopen fails: errors, never a
    // wrong answer; a scan yields a prefix of the store, then the error.
    fs.arm(fault(true));
    let keys: Vec<Vec<u8>> = (0..3000u64).map(key).collect();
    match db.multi_get(&keys) {
        Err(e) => assert!(reopen_error(&e), "{e}"),
        Ok(_) => panic!("a multi_get of every key reopened nothing"),
    }
    let mut seen = 0;
    let mut scan_failed = false;
    for (r, (k, v)) in db.scan(..).zip(&model) {
        match r {
            Ok((gk, gv)) => {
                assert_eq!((&gk[..], &gv[..]), (&k[..], &v[..]));
                seen += 1;
            }
            Err(e) => {
                assert!(reopen_error(&e), "{e}");
                scan_failed = true;
                break;
            }
        }
    }
    assert!(scan_failed && seen < model.len(), "{seen} entries");

    // Without the fault, everything reads again, and writes were never
    // refused: a failed read poisons nothing.
    fs.disarm();
    let got = db.multi_get(&keys).unwrap();
    for (k, v) in keys.iter().zip(got) {
        assert_eq!(v.as_deref(), model.get(k).map(|v| &v[..]));
    }
    assert_eq!(contents(&db).unwrap(), model);
    db.put(b"after", b"faults").unwrap();
    let s = db.stats();
    assert!(s.table_reopens > 0);
    assert!(s.table_files_open as usize <= capacity);
    db.close().unwrap();
}

/// Writes 1,500 keys of 60-byte values and merges them below L0 (several
/// files at [`options`]' sizes); returns what the store holds.
fn fill_and_compact(db: &Db) -> Model {
    let mut m = Model::new();
    for i in 0..1500u32 {
        let (k, v) = (format!("key{i:05}"), format!("value{i}-{}", "x".repeat(60)));
        db.put(&k, &v).unwrap();
        m.insert(k.into_bytes(), v.into_bytes());
    }
    db.compact().unwrap();
    m
}

/// A filter rebuild rewrites its files in parallel and installs a batch of
/// them in one MANIFEST edit. A fault at an operation of it (each kind, at
/// spread points), alone or as a power loss, leaves a store that reopens
/// with every key, each file with its old filter or its new one, and a
/// rebuild after it finishes the job.
#[test]
fn a_fault_in_a_batched_filter_rebuild_keeps_every_key() {
    use crate::{FilterOptions, FilterPolicy};
    let unfiltered = |fs: &FaultFs| options(fs, false).filters(FilterOptions::none());
    let filtered = |fs: &FaultFs| {
        options(fs, false)
            .filters(FilterOptions::uniform(Some(FilterPolicy::blocked512(10.0))))
            .use_stored_design(false)
    };
    // A store of unfiltered files below L0, and what it holds.
    let base = |dir: &std::path::Path, fs: &FaultFs| -> Model {
        let db = Db::open(dir, unfiltered(fs)).unwrap();
        let m = fill_and_compact(&db);
        db.close().unwrap();
        m
    };
    let rebuild = |dir: &std::path::Path, fs: &FaultFs| -> crate::Result<u64> {
        let db = Db::open(dir, filtered(fs))?;
        let n = db.rebuild_filters();
        drop(db);
        n
    };
    let kinds =
        |db: &Db| -> Vec<String> { db.file_stats().iter().map(|f| f.filter.clone()).collect() };
    // A clean rebuild, counted.
    let clean = tempfile::tempdir().unwrap();
    let fs = FaultFs::new();
    let model = base(clean.path(), &fs);
    fs.arm(Fault {
        op: Some(Op::Lock),
        nth: u64::MAX,
        error: FaultError::Io,
        sticky: false,
    });
    let files = rebuild(clean.path(), &fs).unwrap();
    assert!(files >= 8, "{files} files rebuilt");
    let blocked = {
        fs.disarm();
        let db = Db::open(clean.path(), filtered(&fs)).unwrap();
        let k = kinds(&db);
        assert!(k.iter().all(|n| *n == k[0] && n != "none"), "{k:?}");
        k[0].clone()
    };
    let census: Vec<(Op, u64)> = [Op::Create, Op::Write, Op::Sync, Op::SyncDir, Op::Rename]
        .into_iter()
        .map(|op| (op, fs.count(Some(op))))
        .collect();
    let trials = fault_trials(
        &census,
        4,
        |dir, fs, fault| {
            base(dir, fs);
            fs.arm(fault);
            let r = rebuild(dir, fs);
            fs.tripped().then_some(r)
        },
        |what, dir, fs| {
            let db = Db::open(dir, filtered(fs)).unwrap();
            assert!(contents(&db).unwrap() == model, "{what}: keys lost");
            assert!(
                kinds(&db).iter().all(|k| k == "none" || *k == blocked),
                "{what}: {:?}",
                kinds(&db)
            );
            db.rebuild_filters().unwrap();
            assert!(kinds(&db).iter().all(|k| *k == blocked), "{what}");
            assert!(contents(&db).unwrap() == model, "{what}: keys lost");
            db.close().unwrap();
        },
    );
    assert!(trials >= 20, "{trials} trials over {census:?}");
    eprintln!("filter rebuild faults: {trials} trials over {census:?}");
}

/// Two checkpoints of one store rebuilt together share each file's read.
/// A fault at an operation of it (reads included: one read serves both),
/// alone or as a power loss, leaves both stores reopening with every key,
/// each file with its old filter or its new one, and a rebuild of each
/// after it finishes the job.
#[test]
fn a_fault_in_filter_rebuilds_together_keeps_every_key_of_each_store() {
    use crate::{FilterOptions, FilterPolicy};
    let designs = [FilterPolicy::blocked512(10.0), FilterPolicy::ribbon(8.0)];
    let design = |fs: &FaultFs, i: usize| {
        options(fs, false)
            .filters(FilterOptions::uniform(Some(designs[i])))
            .use_stored_design(false)
    };
    let stores = |root: &std::path::Path, fs: &FaultFs| -> Model {
        let from = root.join("base");
        let db = Db::open(&from, options(fs, false).filters(FilterOptions::none())).unwrap();
        let m = fill_and_compact(&db);
        for i in 0..2 {
            db.checkpoint(root.join(format!("s{i}"))).unwrap();
        }
        db.close().unwrap();
        m
    };
    // The stores are opened, then the counts reset and `fault` armed: the
    // operations counted and failed are the rebuild's (and the drops').
    let rebuild = |root: &std::path::Path, fs: &FaultFs, fault: Option<Fault>| {
        let a = Db::open(root.join("s0"), design(fs, 0)).unwrap();
        let b = Db::open(root.join("s1"), design(fs, 1)).unwrap();
        fs.reset_counts();
        if let Some(f) = fault {
            fs.arm(f);
        }
        let r = Db::rebuild_filters_together(&[&a, &b]);
        let counts: Vec<(Op, u64)> = [Op::Read, Op::Create, Op::Write, Op::Sync, Op::SyncDir]
            .into_iter()
            .map(|op| (op, fs.count(Some(op))))
            .collect();
        // The stores are dropped with the fault still armed, as a process
        // that crashed would leave them.
        (r, counts, fs.tripped())
    };
    let kinds =
        |db: &Db| -> Vec<String> { db.file_stats().iter().map(|f| f.filter.clone()).collect() };
    // A clean run, counted.
    let clean = tempfile::tempdir().unwrap();
    let fs = FaultFs::new();
    let model = stores(clean.path(), &fs);
    let (files, census, _) = rebuild(clean.path(), &fs, None);
    let files = files.unwrap();
    assert!(files[0] >= 8 && files[0] == files[1], "{files:?}");
    let new_kinds: Vec<String> = (0..2)
        .map(|i| {
            let db = Db::open(clean.path().join(format!("s{i}")), design(&fs, i)).unwrap();
            let k = kinds(&db);
            assert!(k.iter().all(|n| *n == k[0] && n != "none"), "{k:?}");
            k[0].clone()
        })
        .collect();
    let trials = fault_trials(
        &census,
        3,
        |root, fs, fault| {
            stores(root, fs);
            let (r, _, tripped) = rebuild(root, fs, Some(fault));
            tripped.then_some(r)
        },
        |what, root, fs| {
            for (i, new) in new_kinds.iter().enumerate() {
                let db = Db::open(root.join(format!("s{i}")), design(fs, i)).unwrap();
                assert!(
                    contents(&db).unwrap() == model,
                    "{what}: store {i} lost keys"
                );
                let k = kinds(&db);
                assert!(
                    k.iter().all(|k| k == "none" || k == new),
                    "{what}: store {i}: {k:?}"
                );
                db.rebuild_filters().unwrap();
                assert!(kinds(&db).iter().all(|k| k == new), "{what}: store {i}");
                assert!(
                    contents(&db).unwrap() == model,
                    "{what}: store {i} lost keys"
                );
                db.close().unwrap();
            }
        },
    );
    assert!(trials >= 20, "{trials} trials over {census:?}");
    eprintln!("filter rebuilds together, faults: {trials} trials over {census:?}");
}
