//! Corruption test: damage the files of a closed store — byte flips and
//! truncations in SSTables, the WAL, the MANIFEST and CURRENT — then open,
//! get and scan. Each must either fail with an error or return correct data:
//! never a wrong value, never a silently missing one, never a panic.
//!
//! The one legitimate loss is the WAL's torn-tail rule: damage in the *last*
//! WAL record makes it indistinguishable from a write torn by a crash, so that
//! record (and only that one) may vanish.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use bloomlsm::db::{FileKind, LogReader, filename};
use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, Options, WalRecovery};

mod common;
use common::files::{copy_store, files_of};
use common::keys::{key5, tagged_value};
use common::levels::full_levels;
use common::model::{self, Model};
use common::scratch_dir;

/// Panics of the store's own threads (panics on test threads are caught by
/// `catch_unwind` in [`trial`]).
static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let name = std::thread::current().name().unwrap_or("").to_string();
            if name.starts_with("bloomlsm") {
                PANICS.lock().unwrap().push(format!("{name}: {info}"));
            }
            default(info);
        }));
    });
}

fn options(salvage: bool) -> Options {
    common::options::uncached().wal_recovery(if salvage {
        WalRecovery::SkipDamagedRecords
    } else {
        WalRecovery::TolerateTornTail
    })
}

fn val(rng: &mut SplitMix64, k: &[u8], tag: &str) -> Vec<u8> {
    tagged_value(rng, k, tag, 120)
}

/// A closed store with several levels of tables, a manifest with a snapshot
/// and later edits, and a WAL of `wal_keys.len()` single-put records (one per
/// key, keys found nowhere else), in log order.
struct Pristine {
    dir: tempfile::TempDir,
    model: Model,
    wal_keys: Vec<Vec<u8>>,
}

fn build() -> Pristine {
    let dir = scratch_dir();
    let mut rng = SplitMix64::new(0xC0_44_07);
    let mut model = Model::new();
    {
        let db = Db::open(dir.path(), options(false)).unwrap();
        for round in 0..3 {
            let tag = format!("s1r{round}");
            model::churn(&db, &mut model, 700, || {
                let k = key5(rng.below(1200));
                let v = (rng.below(6) != 0).then(|| val(&mut rng, &k, &tag));
                (k, v)
            });
            db.maintain().unwrap();
        }
        db.close().unwrap();
    }
    // A second open: its manifest starts with a snapshot, then flush and
    // compaction edits follow; the last writes stay in the WAL.
    let db = Db::open(dir.path(), options(false)).unwrap();
    for _ in 0..300 {
        let k = key5(rng.below(1200));
        let v = val(&mut rng, &k, "s2");
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.maintain().unwrap();
    let mut wal_keys = Vec::new();
    for i in 0..40 {
        let k = format!("wal{i:03}").into_bytes();
        let v = val(&mut rng, &k, "wal");
        db.put(&k, &v).unwrap();
        model.insert(k.clone(), v);
        wal_keys.push(k);
    }
    let s = db.stats();
    assert!(full_levels(&s).len() >= 2, "{s:?}");
    db.close().unwrap();
    let p = Pristine {
        dir,
        model,
        wal_keys,
    };
    assert_eq!(files_of(p.dir.path(), FileKind::Log).len(), 1);
    assert_eq!(files_of(p.dir.path(), FileKind::Manifest).len(), 1);
    p
}

/// What a damaged store may legitimately have lost.
#[derive(Clone, Copy, Debug)]
enum MayLose {
    Nothing,
    /// The last WAL record's write (damage inside the last record).
    LastWalRecord,
    /// Every WAL record starting at or after this position in log order
    /// (a truncated WAL: its torn tail).
    WalFrom(usize),
}

#[derive(Debug, Default)]
struct Tally {
    open_errors: usize,
    read_errors: usize,
    clean: usize,
    lost_tail: usize,
}

/// Opens the damaged store and reads everything. `Ok(outcome)` if every
/// answer was an error or correct; `Err(description)` otherwise.
fn check(
    dir: &Path,
    p: &Pristine,
    may_lose: MayLose,
    salvage: bool,
    tally: &mut Tally,
) -> Result<(), String> {
    let db = match Db::open(dir, options(salvage)) {
        Ok(db) => db,
        Err(_) => {
            tally.open_errors += 1;
            return Ok(());
        }
    };
    let lost: Vec<&Vec<u8>> = match may_lose {
        MayLose::Nothing => Vec::new(),
        MayLose::LastWalRecord => p.wal_keys.last().into_iter().collect(),
        MayLose::WalFrom(i) => p.wal_keys[i.min(p.wal_keys.len())..].iter().collect(),
    };
    // All the may-be-lost writes vanish together, or none does.
    let present: Vec<bool> = lost
        .iter()
        .map(|k| db.get(k).map(|v| v.is_some()).unwrap_or(true))
        .collect();
    let dropped_tail = present.iter().any(|x| !x);
    if dropped_tail {
        tally.lost_tail += 1;
    }
    let mut model = p.model.clone();
    if dropped_tail {
        for k in &lost {
            model.remove(*k);
        }
    }
    let mut errors = 0;
    let absent = [b"a".to_vec(), b"key99999".to_vec(), b"wal999".to_vec()];
    for k in model.keys().chain(absent.iter()) {
        match db.get(k) {
            Err(_) => errors += 1,
            Ok(got) => {
                if got.as_deref() != model.get(k).map(Vec::as_slice) {
                    return Err(format!(
                        "get {}: got {:?}, want {:?}",
                        String::from_utf8_lossy(k),
                        got.map(|v| String::from_utf8_lossy(&v).into_owned()),
                        model
                            .get(k)
                            .map(|v| String::from_utf8_lossy(v).into_owned())
                    ));
                }
            }
        }
    }
    let mut want = model.iter();
    let mut scan_error = false;
    for item in db.scan(..) {
        match item {
            Err(_) => {
                scan_error = true;
                break;
            }
            Ok((k, v)) => match want.next() {
                Some((wk, wv)) if wk[..] == k[..] && wv[..] == v[..] => {}
                other => {
                    return Err(format!(
                        "scan: got key {}, want {:?}",
                        String::from_utf8_lossy(&k),
                        other.map(|(k, _)| String::from_utf8_lossy(k).into_owned())
                    ));
                }
            },
        }
    }
    if !scan_error && let Some((k, _)) = want.next() {
        return Err(format!(
            "scan ended without error before key {}",
            String::from_utf8_lossy(k)
        ));
    }
    if errors > 0 || scan_error || db.verify().is_err() {
        tally.read_errors += 1;
    } else {
        tally.clean += 1;
    }
    drop(db);
    Ok(())
}

/// Copies the pristine store, applies `damage` to `file` (a name in the
/// store), and checks it, turning panics into failures.
#[allow(clippy::too_many_arguments)]
fn trial(
    p: &Pristine,
    file: &Path,
    damage: &dyn Fn(&mut Vec<u8>),
    what: &str,
    may_lose: MayLose,
    salvage: bool,
    tally: &mut Tally,
    failures: &mut Vec<String>,
) {
    let work = scratch_dir();
    copy_store(p.dir.path(), work.path());
    let target = work.path().join(file.file_name().unwrap());
    let mut bytes = std::fs::read(&target).unwrap();
    damage(&mut bytes);
    std::fs::write(&target, &bytes).unwrap();
    let r = catch_unwind(AssertUnwindSafe(|| {
        check(work.path(), p, may_lose, salvage, tally)
    }));
    match r {
        Ok(Ok(())) => {}
        Ok(Err(msg)) => failures.push(format!("{what}: {msg}")),
        Err(e) => {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!("{what}: PANIC {msg}"));
        }
    }
}

/// Bytes of a file, changed in place.
type Edit = Box<dyn Fn(&mut Vec<u8>)>;
/// One way to damage a file: given the trial's RNG and the file's length,
/// the damage to apply, a description, and the offset it starts at.
type Damage<'a> = dyn Fn(&mut SplitMix64, u64) -> (Edit, String, usize) + 'a;

/// `n` trials, each damaging one of `files` (round-robin) as `damage` says.
fn damage_trials(
    p: &Pristine,
    files: &[PathBuf],
    n: usize,
    seed: u64,
    may_lose: &dyn Fn(&Path, usize) -> MayLose,
    damage: &Damage<'_>,
) -> (Tally, Vec<String>) {
    install_panic_hook();
    let mut rng = SplitMix64::new(seed);
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for t in 0..n {
        let file = &files[t % files.len()];
        let len = std::fs::metadata(file).unwrap().len();
        let (apply, what, at) = damage(&mut rng, len);
        let what = format!("{what} of {}", file.file_name().unwrap().to_string_lossy());
        trial(
            p,
            file,
            &*apply,
            &what,
            may_lose(file, at),
            false,
            &mut tally,
            &mut failures,
        );
    }
    (tally, failures)
}

fn flip_trials(
    p: &Pristine,
    files: &[PathBuf],
    n: usize,
    seed: u64,
    may_lose: &dyn Fn(&Path, usize) -> MayLose,
) -> (Tally, Vec<String>) {
    damage_trials(p, files, n, seed, may_lose, &|rng, len| {
        let off = rng.below(len) as usize;
        let x = 1 + rng.below(255) as u8;
        let apply: Edit = Box::new(move |b| b[off] ^= x);
        (apply, format!("flip {x:#04x} at {off}"), off)
    })
}

fn truncate_trials(
    p: &Pristine,
    files: &[PathBuf],
    n: usize,
    seed: u64,
    may_lose: &dyn Fn(&Path, usize) -> MayLose,
) -> (Tally, Vec<String>) {
    damage_trials(p, files, n, seed, may_lose, &|rng, len| {
        let cut = rng.below(len) as usize;
        let apply: Edit = Box::new(move |b| b.truncate(cut));
        (apply, format!("truncate to {cut}"), cut)
    })
}

fn report(kind: &str, tally: &Tally, failures: &[String]) {
    eprintln!("{kind}: {tally:?}");
    let panics = PANICS.lock().unwrap().clone();
    assert!(
        failures.is_empty() && panics.is_empty(),
        "{kind}: {} bad outcomes:\n{}\npanics: {panics:#?}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Start offsets of the WAL's records, in log order.
fn wal_record_offsets(wal: &Path) -> Vec<u64> {
    let mut r = LogReader::open(wal, false).unwrap();
    let mut v = Vec::new();
    while r.next_record().unwrap().is_some() {
        v.push(r.last_record_offset());
    }
    v
}

#[test]
fn sst_flips_and_truncations() {
    let p = build();
    let files = files_of(p.dir.path(), FileKind::Table);
    assert!(files.len() >= 4, "{files:?}");
    let (mut t, mut f) = flip_trials(&p, &files, 200, 1, &|_, _| MayLose::Nothing);
    report("sst flips", &t, &f);
    assert!(t.open_errors + t.read_errors >= 150, "{t:?}");
    (t, f) = truncate_trials(&p, &files, 40, 2, &|_, _| MayLose::Nothing);
    report("sst truncations", &t, &f);
}

#[test]
fn manifest_and_current_flips_and_truncations() {
    let p = build();
    let manifest = files_of(p.dir.path(), FileKind::Manifest);
    let (t, f) = flip_trials(&p, &manifest, 200, 3, &|_, _| MayLose::Nothing);
    report("manifest flips", &t, &f);
    let (t, f) = truncate_trials(&p, &manifest, 40, 4, &|_, _| MayLose::Nothing);
    report("manifest truncations", &t, &f);

    // CURRENT is a few bytes: flip every bit of it, and cut it everywhere.
    install_panic_hook();
    let current = filename::current_file(p.dir.path());
    let len = std::fs::metadata(&current).unwrap().len() as usize;
    let (mut tally, mut failures) = (Tally::default(), Vec::new());
    for off in 0..len {
        for bit in 0..8 {
            trial(
                &p,
                &current,
                &|b: &mut Vec<u8>| b[off] ^= 1 << bit,
                &format!("CURRENT flip bit {bit} at {off}"),
                MayLose::Nothing,
                false,
                &mut tally,
                &mut failures,
            );
        }
        trial(
            &p,
            &current,
            &|b: &mut Vec<u8>| b.truncate(off),
            &format!("CURRENT truncated to {off}"),
            MayLose::Nothing,
            false,
            &mut tally,
            &mut failures,
        );
    }
    report("CURRENT", &tally, &failures);
}

#[test]
fn wal_flips_and_truncations() {
    let p = build();
    let wal = files_of(p.dir.path(), FileKind::Log);
    let offsets = wal_record_offsets(&wal[0]);
    assert_eq!(offsets.len(), p.wal_keys.len());
    let last = *offsets.last().unwrap() as usize;
    // Damage inside the last record may drop it (a torn tail); anywhere else
    // it must be detected.
    let (t, f) = flip_trials(&p, &wal, 200, 5, &|_, off| {
        if off >= last {
            MayLose::LastWalRecord
        } else {
            MayLose::Nothing
        }
    });
    report("wal flips", &t, &f);
    assert!(t.open_errors > 100, "{t:?}");
    // A cut drops every record not wholly before it.
    let (t, f) = truncate_trials(&p, &wal, 60, 6, &|_, cut| {
        let whole = offsets
            .iter()
            .skip(1)
            .chain(std::iter::once(&u64::MAX))
            .take_while(|&&end| end as usize <= cut)
            .count();
        MayLose::WalFrom(whole)
    });
    report("wal truncations", &t, &f);
    assert!(t.lost_tail > 30, "{t:?}");
}

#[test]
fn wal_salvage_skips_mid_file_damage() {
    install_panic_hook();
    let p = build();
    let wal = files_of(p.dir.path(), FileKind::Log).remove(0);
    let offsets = wal_record_offsets(&wal);
    for victim in [0usize, 7, 20, 38] {
        // A flip in the record's payload (past its 7-byte header).
        let off = offsets[victim] as usize + 7 + 3;
        for salvage in [false, true] {
            let work = scratch_dir();
            copy_store(p.dir.path(), work.path());
            let target = work.path().join(wal.file_name().unwrap());
            let mut bytes = std::fs::read(&target).unwrap();
            bytes[off] ^= 0x40;
            std::fs::write(&target, &bytes).unwrap();
            let r = Db::open(work.path(), options(salvage));
            if !salvage {
                let e = r.expect_err("mid-file WAL damage must fail the open");
                assert!(e.is_corruption(), "{e}");
                continue;
            }
            let db = r.unwrap();
            assert_eq!(db.stats().wal_records_salvaged, 1, "victim {victim}");
            for (k, v) in &p.model {
                let got = db.get(k).unwrap();
                if *k == p.wal_keys[victim] {
                    assert_eq!(got, None, "the damaged record's write is gone");
                } else {
                    assert_eq!(got.as_deref(), Some(v.as_slice()), "victim {victim}");
                }
            }
            // The salvaged store is consistent from now on.
            db.close().unwrap();
            let db = Db::open(work.path(), options(false)).unwrap();
            assert!(db.get(&p.wal_keys[victim + 1]).unwrap().is_some());
            db.verify().unwrap();
        }
    }
    assert!(PANICS.lock().unwrap().is_empty());
}

/// A manifest whose last edit records a flush: the flushed WAL is already
/// deleted, so if damage to that edit were taken for a torn tail and dropped,
/// the flushed writes would silently vanish. Every flip in it must instead
/// fail the open (or be harmless).
#[test]
fn manifest_last_edit_is_a_flush() {
    install_panic_hook();
    let dir = scratch_dir();
    let mut rng = SplitMix64::new(0xF1_05);
    let mut model = Model::new();
    {
        let db = Db::open(dir.path(), options(false)).unwrap();
        for i in 0..200 {
            let k = key5(i);
            let v = val(&mut rng, &k, "base");
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), options(false)).unwrap();
    for i in 200..260 {
        let k = key5(i);
        let v = val(&mut rng, &k, "flushed");
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    db.close().unwrap();
    let p = Pristine {
        dir,
        model,
        wal_keys: Vec::new(),
    };
    let manifest = files_of(p.dir.path(), FileKind::Manifest).remove(0);
    let mut r = LogReader::open(&manifest, false).unwrap();
    let mut last = 0;
    while r.next_record().unwrap().is_some() {
        last = r.last_record_offset();
    }
    assert!(last > 0, "the manifest has a snapshot and a flush edit");
    let len = std::fs::metadata(&manifest).unwrap().len();
    let (mut tally, mut failures) = (Tally::default(), Vec::new());
    let mut rng = SplitMix64::new(7);
    for _ in 0..60 {
        let off = (last + rng.below(len - last)) as usize;
        let x = 1 + rng.below(255) as u8;
        trial(
            &p,
            &manifest,
            &|b: &mut Vec<u8>| b[off] ^= x,
            &format!("flip {x:#04x} at {off} of the last manifest edit"),
            MayLose::Nothing,
            false,
            &mut tally,
            &mut failures,
        );
    }
    for cut in [last + 1, last + 7, (last + len) / 2, len - 1] {
        trial(
            &p,
            &manifest,
            &|b: &mut Vec<u8>| b.truncate(cut as usize),
            &format!("manifest cut to {cut}, inside its last edit"),
            MayLose::Nothing,
            false,
            &mut tally,
            &mut failures,
        );
    }
    report("manifest with a flush edit last", &tally, &failures);
}
