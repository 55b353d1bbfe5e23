//! `Db::checkpoint`: copies of a store taken while writer threads run, each
//! compared with a model of every writer's operations — it holds every
//! write acknowledged before the call and, of each writer, a prefix of its
//! operations — and left untouched by the source's later compactions (its
//! tables are hard links). Bad targets fail with an error and leave nothing
//! at the target. The crash test SIGKILLs a child process that takes
//! checkpoints beside its writers: the source reopens with every
//! acknowledged write, and each checkpoint directory either opens whole or
//! does not exist (its temporary directory is refused by `Db::open` and
//! removed by the next checkpoint). Each runs on a store of one keyspace
//! and on one of three keyspaces, whose batches span them: a checkpoint
//! holds every keyspace as of one moment (each writer's prefix is a prefix
//! across the keyspaces).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bloomlsm::db::checkpoint::{INCOMPLETE, temp_dir};
use bloomlsm::workload::SplitMix64;
use bloomlsm::{Db, Error, Options, WriteBatch};

mod common;
use common::child::Child;
use common::model::Model;
use common::scratch_dir;

/// Keys per writer.
const KEYS: u64 = 150;

/// Operation `i` of writer `w` (seeded by `seed`): one to three keys of the
/// writer's own, each set to a value naming writer, op and key, or deleted.
fn gen_op(rng: &mut SplitMix64, w: u64, i: u64) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let n = 1 + rng.below(3);
    (0..n)
        .map(|j| {
            let k = format!("w{w}k{:04}", rng.below(KEYS)).into_bytes();
            if rng.below(6) == 0 {
                (k, None)
            } else {
                let pad = rng.below(120) as usize;
                let mut v = format!("w{w}|op{i}|{j}|").into_bytes();
                v.resize(v.len() + pad, b'a' + (i % 26) as u8);
                (k, Some(v))
            }
        })
        .collect()
}

fn op_rng(seed: u64, w: u64) -> SplitMix64 {
    SplitMix64::new(seed.wrapping_mul(0x9E37_79B9).wrapping_add(w))
}

/// The keyspaces of a store with several: a key's number picks its
/// keyspace, so a writer's operation of two or three keys often spans them.
const SPACES: [&str; 3] = ["default", "ks1", "ks2"];

/// The keyspace key `k` is written to when the store has several.
fn space_of(k: &[u8]) -> &'static str {
    let s = std::str::from_utf8(k).unwrap();
    let n: usize = s[s.find('k').unwrap() + 1..].parse().unwrap();
    SPACES[n % SPACES.len()]
}

/// Opens the store in `dir`, creating the keyspaces of [`SPACES`] when
/// `spaced` and missing.
fn open_store(dir: &Path, spaced: bool) -> Db {
    let db = Db::open(dir, options()).unwrap_or_else(|e| panic!("open {}: {e}", dir.display()));
    if spaced {
        for name in &SPACES[1..] {
            if db.keyspace(name).is_err() {
                db.create_keyspace(name, options()).unwrap();
            }
        }
    }
    db
}

/// Writes `op` as one batch: to the default keyspace, or when `spaced` to
/// each key's keyspace ([`space_of`]).
fn write_op(db: &Db, op: &[(Vec<u8>, Option<Vec<u8>>)], spaced: bool) -> bloomlsm::Result<()> {
    let mut b = WriteBatch::new();
    for (k, v) in op {
        if spaced {
            let ks = db.keyspace(space_of(k))?;
            match v {
                Some(v) => b.put_in(&ks, k, v),
                None => b.delete_in(&ks, k),
            }
            continue;
        }
        match v {
            Some(v) => b.put(k, v),
            None => b.delete(k),
        }
    }
    db.write(b)
}

/// The writer a key belongs to.
fn writer_of(k: &[u8]) -> u64 {
    let s = std::str::from_utf8(k).unwrap();
    s[1..s.find('k').unwrap()].parse().unwrap()
}

/// The numbers of writer `w`'s operations, `p`, in `lo..=hi` after which
/// its keys hold exactly what `got` holds of them.
fn prefixes(got: &Model, seed: u64, w: u64, lo: u64, hi: u64) -> Vec<u64> {
    let mine: Model = got
        .iter()
        .filter(|(k, _)| writer_of(k) == w)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut model = Model::new();
    // Keys where the model and `mine` differ.
    let mut differ: std::collections::BTreeSet<Vec<u8>> = mine.keys().cloned().collect();
    let mut rng = op_rng(seed, w);
    let mut found = Vec::new();
    for p in 0..=hi {
        if p >= lo && differ.is_empty() {
            found.push(p);
        }
        for (k, v) in gen_op(&mut rng, w, p) {
            match v {
                Some(v) => model.insert(k.clone(), v),
                None => model.remove(&k),
            };
            if model.get(&k) == mine.get(&k) {
                differ.remove(&k);
            } else {
                differ.insert(k);
            }
        }
    }
    found
}

/// The whole store at `dir`, read through a read-only open, after a check
/// of every block.
fn read_store(dir: &Path) -> Model {
    let db = Db::open_read_only(dir, Options::default())
        .unwrap_or_else(|e| panic!("open {}: {e}", dir.display()));
    db.verify().unwrap();
    read_all(&db)
}

/// Every keyspace of `db`, in one model (their keys never meet).
fn read_all(db: &Db) -> Model {
    let mut all = Model::new();
    for name in db.keyspace_names() {
        for e in db.keyspace(&name).unwrap().scan(..) {
            let (k, v) = e.unwrap();
            assert!(name == "default" || space_of(&k) == name, "{name}: {k:?}");
            all.insert(k.to_vec(), v.to_vec());
        }
    }
    all
}

fn options() -> Options {
    Options::default()
        .write_buffer_size(8 << 10)
        .target_file_size(4096)
        .level1_max_bytes(16 << 10)
        .dynamic_level_bytes(false)
        .level_size_multiplier(2)
        .l0_compaction_trigger(2)
        .block_size(1024)
}

/// Four writers run while checkpoints are taken. Each checkpoint holds,
/// of each writer, the state after some number of its operations at least
/// the number acknowledged before the call and at most one more than
/// those acknowledged after it; opened on its own (read-only, then
/// writable) it reads the same. After the writers stop the source is
/// compacted: every checkpoint still reads as it did, and the source holds
/// every write.
#[test]
fn checkpoints_under_writers_hold_acknowledged_prefixes() {
    under_writers(0xC4EC_0001, false, false);
}

/// As above, with batches spanning three keyspaces: each checkpoint holds
/// them all as of one moment.
#[test]
fn checkpoints_of_keyspaces_under_writers_hold_acknowledged_prefixes() {
    under_writers(0xC4EC_0002, true, false);
}

/// As above, each checkpoint taken through a read-only handle, from the
/// store's files beside its writer: tables linked, the logs the store
/// still replays copied to their last whole record.
#[test]
fn checkpoints_from_a_read_only_handle_under_writers_hold_acknowledged_prefixes() {
    under_writers(0xC4EC_0003, false, true);
    under_writers(0xC4EC_0004, true, true);
}

/// A keyspace dropped while checkpoints are taken: its files stay until
/// the checkpoint that took its version has linked them.
#[test]
fn checkpoints_beside_keyspaces_created_and_dropped() {
    let root = scratch_dir();
    let db = Db::open(root.path().join("db"), Options::default()).unwrap();
    db.put("a", "1").unwrap();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let ks = db.create_keyspace("scratch", Options::default()).unwrap();
                for i in 0..50 {
                    ks.put(format!("k{i}"), "v").unwrap();
                }
                ks.flush().unwrap();
                db.drop_keyspace("scratch").unwrap();
            }
        });
        for n in 0..1500 {
            let target = root.path().join(format!("cp{n}"));
            let r = db.checkpoint(&target);
            if r.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            r.unwrap_or_else(|e| panic!("checkpoint {n}: {e}"));
            let copy = Db::open_read_only(&target, Options::default()).unwrap();
            assert_eq!(copy.get("a").unwrap().as_deref(), Some(&b"1"[..]));
            drop(copy);
            std::fs::remove_dir_all(&target).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
}

/// `read_only`: each checkpoint taken through a new read-only handle on
/// the store's directory (from its files, beside the writers), as a process
/// other than the writer's would.
fn under_writers(seed: u64, spaced: bool, read_only: bool) {
    const WRITERS: u64 = 4;
    const OPS: u64 = 3000;
    let root = scratch_dir();
    let db = open_store(&root.path().join("db"), spaced);
    let acked: Vec<AtomicU64> = (0..WRITERS).map(|_| AtomicU64::new(0)).collect();
    let stop = AtomicBool::new(false);
    let mut taken: Vec<(PathBuf, Model)> = Vec::new();
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let (db, acked, stop) = (&db, &acked[w as usize], &stop);
            s.spawn(move || {
                let mut rng = op_rng(seed, w);
                for i in 0..OPS {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    write_op(db, &gen_op(&mut rng, w, i), spaced).unwrap();
                    acked.store(i + 1, Ordering::Release);
                }
            });
        }
        for c in 0..4u64 {
            // Let the writers get ahead (bounded by polls, not time).
            let goal = (c + 1) * OPS / 6;
            for _ in 0..200_000 {
                if acked.iter().all(|a| a.load(Ordering::Acquire) >= goal) {
                    break;
                }
                std::thread::yield_now();
            }
            let reader = read_only
                .then(|| Db::open_read_only(root.path().join("db"), Options::default()).unwrap());
            let before: Vec<u64> = acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
            let dir = root.path().join(format!("ckpt{c}"));
            let report = reader.as_ref().unwrap_or(&db).checkpoint(&dir).unwrap();
            drop(reader);
            let after: Vec<u64> = acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
            assert!(report.tables > 0, "{report:?}");
            assert_eq!(report.linked, report.tables, "tmpfs makes hard links");
            assert_eq!((report.copied, report.bytes_copied), (0, 0));
            // The active log, copied up to the moment's length, at least;
            // from the files, every log the store still replays.
            assert_eq!(report.logs > 0, spaced || read_only, "{report:?}");
            assert!(!temp_dir(&dir).unwrap().exists());
            let got = read_store(&dir);
            for w in 0..WRITERS {
                let hi = (after[w as usize] + 1).min(OPS);
                let p = prefixes(&got, seed, w, before[w as usize], hi);
                assert!(
                    !p.is_empty(),
                    "checkpoint {c}: writer {w} is no prefix of {}..={hi} ops ({report:?})",
                    before[w as usize]
                );
            }
            taken.push((dir, got));
        }
        stop.store(true, Ordering::Relaxed);
    });
    // The source goes on: every write is there, and a full compaction
    // deletes the tables the checkpoints link to.
    for name in db.keyspace_names() {
        db.keyspace(&name).unwrap().compact().unwrap();
    }
    let source = read_all(&db);
    for w in 0..WRITERS {
        let n = acked[w as usize].load(Ordering::Acquire);
        assert_eq!(prefixes(&source, seed, w, n, n), [n], "source, writer {w}");
    }
    db.close().unwrap();
    for (dir, want) in &taken {
        assert_eq!(&read_store(dir), want, "{} after compaction", dir.display());
        // A checkpoint is a store: writable on its own.
        let copy = Db::open(dir, Options::default()).unwrap();
        assert_eq!(&read_all(&copy), want);
        let names = if spaced { &SPACES[..] } else { &SPACES[..1] };
        assert_eq!(copy.keyspace_names(), names);
        copy.put("w0k9999", "new").unwrap();
        copy.compact().unwrap();
        copy.close().unwrap();
    }
}

/// A checkpoint of an empty store, and one of a store whose writes are all
/// in its memtable: both open, the second with those writes.
#[test]
fn checkpoints_of_an_empty_store_and_of_a_memtable() {
    let root = scratch_dir();
    let db = Db::open(root.path().join("db"), Options::default()).unwrap();
    let empty = root.path().join("empty");
    let r = db.checkpoint(&empty).unwrap();
    assert_eq!((r.tables, r.sequence), (0, 0));
    assert!(read_store(&empty).is_empty());
    db.put("a", "1").unwrap();
    db.delete("a").unwrap();
    db.put("b", "2").unwrap();
    let one = root.path().join("one");
    let r = db.checkpoint(&one).unwrap();
    assert_eq!((r.tables, r.sequence), (1, 3), "{r:?}");
    let got = read_store(&one);
    assert_eq!(
        got.into_iter().collect::<Vec<_>>(),
        [(b"b".to_vec(), b"2".to_vec())]
    );
    // The checkpoint's files: no log, no marker, nothing else.
    let mut names: Vec<String> = std::fs::read_dir(&one)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let shape: Vec<&str> = names
        .iter()
        .map(|n| match n.as_str() {
            n if n.ends_with(".sst") => "table",
            n if n.starts_with("MANIFEST-") => "manifest",
            n => n,
        })
        .collect();
    assert_eq!(
        shape,
        ["table", "CURRENT", "LOCK", "manifest", "OPTIONS"],
        "{names:?}"
    );
    db.close().unwrap();
}

/// Bad targets: an existing directory (even empty), a file, a missing or
/// unwritable parent, a path with no final name; a read-only store. Each is
/// an error, and nothing is left at the target or beside it.
#[test]
fn bad_targets_are_errors_and_a_read_only_handle_checkpoints() {
    let root = scratch_dir();
    let r = root.path();
    let db = Db::open(r.join("db"), Options::default()).unwrap();
    db.put("k", "v").unwrap();
    std::fs::create_dir(r.join("empty")).unwrap();
    std::fs::write(r.join("file"), "x").unwrap();
    let invalid = |target: PathBuf, words: &str| {
        let e = db.checkpoint(&target).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        assert!(e.to_string().contains(words), "{target:?}: {e}");
        if let Some(tmp) = temp_dir(&target) {
            assert!(!tmp.exists(), "{tmp:?} left behind");
        }
    };
    invalid(r.join("empty"), "it exists");
    invalid(r.join("db"), "it exists");
    invalid(r.join("file"), "it exists");
    invalid(r.join("missing/ckpt"), "does not exist");
    invalid(PathBuf::from("/"), "names no directory");
    assert_eq!(std::fs::read_dir(r.join("empty")).unwrap().count(), 0);

    // An unwritable parent: a directory without write permission, or (for
    // root, whom permissions do not stop) /sys.
    let locked = r.join("locked");
    std::fs::create_dir(&locked).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let parent = if std::fs::create_dir(locked.join("probe")).is_err() {
        locked.clone()
    } else {
        PathBuf::from("/sys")
    };
    if parent.is_dir() {
        let target = parent.join("bloomlsm-ckpt");
        let e = db.checkpoint(&target).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
        assert!(!target.exists() && !temp_dir(&target).unwrap().exists());
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();

    // Through a read-only handle: from the files, the write in the log.
    let ro = Db::open_read_only(r.join("db"), Options::default()).unwrap();
    let report = ro.checkpoint(r.join("from-ro")).unwrap();
    assert_eq!((report.tables, report.logs), (0, 1), "{report:?}");
    let copy = Db::open_read_only(r.join("from-ro"), Options::default()).unwrap();
    assert_eq!(copy.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
}

/// The temporary directory of an interrupted checkpoint: `Db::open` and
/// `Db::open_read_only` refuse it (and change nothing in it), the next
/// checkpoint into the same target removes it, and one holding a file no
/// checkpoint writes is left alone, with an error.
#[test]
fn an_interrupted_checkpoints_directory_is_refused_and_cleaned() {
    let root = scratch_dir();
    let r = root.path();
    let db = Db::open(r.join("db"), Options::default()).unwrap();
    db.put("k", "v").unwrap();
    db.flush().unwrap();
    let target = r.join("ckpt");
    let tmp = temp_dir(&target).unwrap();
    assert_eq!(tmp, r.join("ckpt.checkpoint-tmp"));
    // What a kill after the marker and one table leaves.
    std::fs::create_dir(&tmp).unwrap();
    std::fs::write(tmp.join(INCOMPLETE), "").unwrap();
    let table = std::fs::read_dir(r.join("db"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .unwrap();
    std::fs::hard_link(&table, tmp.join(table.file_name().unwrap())).unwrap();
    let before = common::files::tree(&tmp);
    for e in [
        Db::open(&tmp, Options::default()).unwrap_err(),
        Db::open_read_only(&tmp, Options::default()).unwrap_err(),
    ] {
        assert!(e.to_string().contains("unfinished checkpoint"), "{e}");
    }
    // An empty temporary directory (a kill right after it was made), and
    // the marker alone under another name: refused all the same.
    let bare = r.join("bare.checkpoint-tmp");
    std::fs::create_dir(&bare).unwrap();
    let renamed = r.join("renamed");
    std::fs::create_dir(&renamed).unwrap();
    std::fs::write(renamed.join(INCOMPLETE), "").unwrap();
    for d in [&bare, &renamed] {
        let e = Db::open(d, Options::default()).unwrap_err();
        assert!(e.to_string().contains("unfinished checkpoint"), "{e}");
        assert!(!d.join("CURRENT").exists());
    }
    let after: Vec<_> = common::files::tree(&tmp)
        .into_iter()
        .filter(|(p, _)| !p.ends_with("LOCK"))
        .collect();
    assert_eq!(after, before, "the open changed the directory");

    db.checkpoint(&target).unwrap();
    assert!(!tmp.exists());
    assert_eq!(read_store(&target).len(), 1);

    // A file of someone else's: the directory stays, the checkpoint fails.
    let other = r.join("other");
    let other_tmp = temp_dir(&other).unwrap();
    std::fs::create_dir(&other_tmp).unwrap();
    std::fs::write(other_tmp.join("notes.txt"), "mine").unwrap();
    let e = db.checkpoint(&other).unwrap_err();
    assert!(e.to_string().contains("notes.txt"), "{e}");
    assert!(other_tmp.join("notes.txt").exists() && !other.exists());
    db.close().unwrap();
}

const ENV: &str = "BLOOMLSM_CHECKPOINT_CHILD";
const CHILD_WRITERS: u64 = 3;

/// The child: writers as in the other tests, and checkpoints into
/// `ckpt0`, `ckpt1`, ... one after another. Prints `ACK w i` per
/// acknowledged operation, `BEGIN c` with each writer's acknowledged count
/// before checkpoint `c`, and `CKPT c` once it returned. Only runs when the
/// parent sets `ENV` ("root|seed|spaced" or "root|seed|single").
#[test]
#[ignore = "run by the crash test as a child process"]
fn child_checkpointer() {
    let Ok(spec) = std::env::var(ENV) else {
        return;
    };
    let mut f = spec.split('|');
    let (root, seed, spaced) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
    let (root, seed) = (PathBuf::from(root), seed.parse::<u64>().unwrap());
    let spaced = spaced == "spaced";
    let db = open_store(&root.join("db"), spaced);
    // The harness's "test child_checkpointer ... " has no newline: the
    // first line printed here ends it.
    println!("OPEN");
    let acked: Vec<AtomicU64> = (0..CHILD_WRITERS).map(|_| AtomicU64::new(0)).collect();
    let first = (0..)
        .find(|c| !root.join(format!("ckpt{c}")).exists())
        .unwrap();
    std::thread::scope(|s| {
        for w in 0..CHILD_WRITERS {
            let (db, acked) = (&db, &acked[w as usize]);
            s.spawn(move || {
                let mut rng = op_rng(seed, w);
                for i in 0..1_000_000 {
                    write_op(db, &gen_op(&mut rng, w, i), spaced).unwrap();
                    acked.store(i + 1, Ordering::Release);
                    println!("ACK {w} {i}");
                }
            });
        }
        for c in first.. {
            let before: Vec<String> = acked
                .iter()
                .map(|a| a.load(Ordering::Acquire).to_string())
                .collect();
            println!("BEGIN {c} {}", before.join(" "));
            db.checkpoint(root.join(format!("ckpt{c}"))).unwrap();
            println!("CKPT {c}");
        }
    });
}

/// What the parent read of the child's lines.
struct Seen {
    /// Operations acknowledged, per writer.
    acked: Vec<u64>,
    /// Per checkpoint begun, each writer's acknowledged count before it.
    begun: Vec<Vec<u64>>,
    /// Checkpoints reported done.
    done: usize,
}

impl Seen {
    fn record(&mut self, line: &str) {
        let mut f = line.split(' ');
        match f.next() {
            Some("ACK") => {
                let w: usize = f.next().unwrap().parse().unwrap();
                self.acked[w] = f.next().unwrap().parse::<u64>().unwrap() + 1;
            }
            Some("BEGIN") => {
                let c: usize = f.next().unwrap().parse().unwrap();
                assert_eq!(c, self.begun.len(), "{line}");
                self.begun.push(f.map(|n| n.parse().unwrap()).collect());
            }
            Some("CKPT") => self.done += 1,
            // The test harness's own lines, and "OPEN" after its
            // "test child_checkpointer ... ".
            _ => {}
        }
    }
}

/// SIGKILLs the child at random moments among its writes and checkpoints
/// (fixed seeds), several times per store. Then: the source reopens with
/// every acknowledged operation of each writer; each checkpoint the child
/// began either exists and opens whole, with of each writer a prefix at
/// least as long as acknowledged when it began, or does not exist (it must
/// exist if the child reported it done); a leftover temporary directory is
/// refused by `Db::open` and removed by a checkpoint taken from the
/// reopened source into the same target.
#[test]
fn crash_during_checkpoints() {
    crash_rounds(0xC4EC_1000, false);
}

/// As above, on a store of three keyspaces written by batches spanning
/// them: a checkpoint that opens holds all of them as of one moment.
#[test]
fn crash_during_checkpoints_of_keyspaces() {
    crash_rounds(0xC4EC_2000, true);
}

fn crash_rounds(first_seed: u64, spaced: bool) {
    let rounds = if common::long_mode() { 200 } else { 20 };
    // Kills during a checkpoint; of those, the ones that left its
    // temporary directory, and the ones after its rename.
    let (mut mid, mut left_temp, mut whole) = (0, 0, 0);
    for round in 0..rounds {
        let seed = first_seed + round;
        let root = scratch_dir();
        let r = root.path();
        let mut rng = SplitMix64::new(seed);
        let mode = if spaced { "spaced" } else { "single" };
        let spec = format!("{}|{seed}|{mode}", r.display());
        let mut child = Child::spawn("child_checkpointer", &[(ENV, spec)]);
        let mut seen = Seen {
            acked: vec![0; CHILD_WRITERS as usize],
            begun: Vec::new(),
            done: 0,
        };
        // Kill after some checkpoints and a random number of lines more.
        let goal_checkpoints = 1 + rng.below(3) as usize;
        let extra = rng.below(400);
        let mut extra_seen = 0;
        while let Some(line) = child.next_line() {
            seen.record(&line);
            if seen.begun.len() > goal_checkpoints {
                extra_seen += 1;
                if extra_seen >= extra {
                    break;
                }
            }
        }
        let killed = child.kill();
        for line in &killed.rest {
            seen.record(line);
        }
        assert!(
            killed.status.code().is_none() && !killed.stderr.contains("panicked"),
            "seed {seed:#x}: child ended by itself: {}",
            killed.stderr
        );
        let Seen { acked, begun, done } = seen;
        let ctx = format!("seed {seed:#x}");
        if done < begun.len() {
            mid += 1;
        }

        // The source: every acknowledged operation (and perhaps the one in
        // flight).
        let db = Db::open(r.join("db"), options()).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        db.verify().unwrap();
        let source = read_all(&db);
        for w in 0..CHILD_WRITERS {
            let n = acked[w as usize];
            let p = prefixes(&source, seed, w, n, n + 1);
            assert!(
                !p.is_empty(),
                "{ctx}: source lost writer {w}'s writes (acked {n})"
            );
        }
        for (c, before) in begun.iter().enumerate() {
            let dir = r.join(format!("ckpt{c}"));
            let tmp = temp_dir(&dir).unwrap();
            if c >= done && dir.exists() {
                whole += 1;
            }
            if !dir.exists() {
                assert!(c >= done, "{ctx}: checkpoint {c} reported done is missing");
                left_temp += u64::from(tmp.exists());
                if tmp.exists() && !tmp.join("CURRENT").exists() {
                    let e = Db::open(&tmp, Options::default()).unwrap_err();
                    assert!(e.to_string().contains("unfinished"), "{ctx}: {e}");
                }
                db.checkpoint(&dir)
                    .unwrap_or_else(|e| panic!("{ctx}: retake {c}: {e}"));
                assert!(!tmp.exists(), "{ctx}: {tmp:?} not cleaned");
                read_store(&dir);
                continue;
            }
            assert!(
                !tmp.exists(),
                "{ctx}: both {dir:?} and its temporary directory"
            );
            let got = read_store(&dir);
            for w in 0..CHILD_WRITERS {
                let lo = before[w as usize];
                let hi = acked[w as usize] + 1;
                assert!(
                    !prefixes(&got, seed, w, lo, hi).is_empty(),
                    "{ctx}: checkpoint {c}, writer {w}: no prefix in {lo}..={hi}"
                );
            }
        }
        db.close().unwrap();
    }
    eprintln!(
        "{rounds} kills, {mid} during a checkpoint: {left_temp} left its temporary \
         directory, {whole} came after its rename"
    );
}
